/* SPDX-License-Identifier: BSD-3-Clause */
/* Geometric multigrid for the EFG stiffness (efg_mg.h). */
#include "efg_mg.h"

#include <math.h>
#include <string.h>

#include "backend_ops.h"

_Static_assert(VOX_EFG_MG_MAX_LANCZOS_STEPS <= VOX_LANCZOS_MAX_STEPS,
               "the backends' Lanczos steps hold the most steps");

static const double CHEBYSHEV_UPPER = 1.1;

extern void dstev_(const char *jobz, const int *n, double *d, double *e, double *z,
                   const int *ldz, double *work, int *info);

void vox_efg_mg_free(vox_efg_mg *mg) {
  if (mg->be) {
    const vox_vector_ops *v = mg->be->ops->vec;
    for (int l = 0; l < mg->n_levels; l++) {
      vox_vec *vs[] = {&mg->x[l], &mg->b[l], &mg->r[l], &mg->z[l], &mg->d[l], &mg->w[l]};
      for (size_t i = 0; i < sizeof vs / sizeof vs[0]; i++)
        if (vs[i]->raw) v->destroy(mg->be, vs[i]);
    }
  }
  memset(mg, 0, sizeof *mg);
}

vox_status vox_efg_mg_init(vox_efg_mg *mg, vox_backend *be, const vox_efg_ops *ops,
                           vox_efg_device *device, const vox_efg_levels *lv, int degree,
                           int lanczos_steps) {
  memset(mg, 0, sizeof *mg);
  if (lanczos_steps < 1 || lanczos_steps > VOX_EFG_MG_MAX_LANCZOS_STEPS)
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT,
                     "element-free Galerkin: %d Lanczos steps (1 to %d)", lanczos_steps,
                     VOX_EFG_MG_MAX_LANCZOS_STEPS);
  mg->be = be, mg->ops = ops, mg->device = device, mg->degree = degree;
  mg->lanczos_steps = lanczos_steps;
  mg->lower = 0.1;
  mg->n_levels = lv->n_levels;
  const vox_vector_ops *v = be->ops->vec;
  for (int l = 0; l < lv->n_levels; l++) {
    const size_t n = 3 * lv->n_nodes[l];
    vox_vec *vs[] = {&mg->x[l], &mg->b[l], &mg->r[l], &mg->z[l], &mg->d[l], &mg->w[l]};
    for (size_t i = 0; i < sizeof vs / sizeof vs[0]; i++) {
      if (l == 0 && i < 2) continue; /* the caller's z and r */
      vox_status s = v->create(be, n, VOX_DOUBLE, vs[i]);
      if (s != VOX_OK) {
        vox_efg_mg_free(mg);
        return s;
      }
    }
  }
  return VOX_OK;
}

static vox_vec *level_x(vox_efg_mg *mg, int l) { return l == 0 ? mg->x0 : &mg->x[l]; }
static const vox_vec *level_b(vox_efg_mg *mg, int l) { return l == 0 ? mg->b0 : &mg->b[l]; }

static vox_status level_apply(vox_efg_mg *mg, int l, const vox_vec *x, vox_vec *y) {
  if (l == 0) return mg->ops->apply(mg->be, mg->device, x, y);
  return mg->ops->mg_apply(mg->be, mg->device, l, x, y);
}

/* z = M_l r: the patches on level 0, the inverted diagonal blocks below. */
static vox_status level_smoother(vox_efg_mg *mg, int l, const vox_vec *r, vox_vec *z) {
  if (l == 0) return mg->ops->patches_apply(mg->be, mg->device, r, z);
  return mg->ops->mg_jacobi(mg->be, mg->device, l, r, z);
}

/* CG's alpha_k and beta_k of the sound steps (pq > 0, rz > 0) from the
 * same start on every backend: kept on the backend and read back once
 * where it can (a step's work on a coarse level is a few small kernels,
 * which two waits for the host a step outlasted), else on the host. */
static vox_status lanczos_steps(vox_efg_mg *mg, int l, double *alpha, double *beta, int *done) {
  const vox_vector_ops *v = mg->be->ops->vec;
  vox_vec *r = &mg->r[l], *z = &mg->z[l], *p = &mg->d[l], *q = &mg->w[l];
  *done = 0;
  TRY(v->random(mg->be, r, 0x5eed + (uint64_t)l, 0));
  TRY(level_smoother(mg, l, r, z));
  if (v->lanczos_begin) {
    TRY(v->lanczos_begin(mg->be, r, z, p));
    for (int k = 0; k < mg->lanczos_steps; k++) {
      TRY(level_apply(mg, l, p, q));
      TRY(v->lanczos_step(mg->be, k, p, q, r));
      TRY(level_smoother(mg, l, r, z));
      TRY(v->lanczos_direction(mg->be, k, r, z, p));
    }
    return v->lanczos_read(mg->be, mg->lanczos_steps, alpha, beta, done);
  }
  double rz, rz_new, pq;
  TRY(v->dot(mg->be, r, z, &rz));
  TRY(v->copy(mg->be, p, z));
  for (int k = 0; k < mg->lanczos_steps; k++) {
    TRY(level_apply(mg, l, p, q));
    TRY(v->dot(mg->be, p, q, &pq));
    if (!(pq > 0) || !(rz > 0)) break;
    alpha[k] = rz / pq;
    TRY(v->axpy(mg->be, r, -alpha[k], q));
    TRY(level_smoother(mg, l, r, z));
    TRY(v->dot(mg->be, r, z, &rz_new));
    beta[k] = rz_new / rz;
    TRY(v->xpay(mg->be, p, beta[k], z)); /* p = z + beta p */
    rz = rz_new;
    *done = k + 1;
  }
  return VOX_OK;
}

/* lambda_max(M_l A_l) by Lanczos' method: mg->lanczos_steps steps of
 * conjugate gradients on A_l preconditioned by M_l from the same
 * pseudo-random right-hand side on every backend, whose coefficients make
 * the tridiagonal Lanczos matrix T (Saad, Iterative Methods, section
 * 6.7.3). Its largest eigenvalue theta (LAPACK dstev) lies below
 * lambda_max and approaches it from there; theta plus the residual of its
 * Ritz pair, |beta_k+1 s_k| with s the eigenvector of T and beta_k+1 the
 * off-diagonal that the next step would add, is Zhou and Li 2011's upper
 * estimate: on the unit test's beam within 2.4 % above and 0.4 % below
 * lambda_max after 5 to 20 steps, where theta alone fell 8 % short after
 * 5 (the table 1 examples of Lu et al. 2021 took theta after 6 steps
 * beyond the Chebyshev interval's 10 % margin: the V-cycle indefinite). */
static vox_status bound(vox_efg_mg *mg, int l) {
  double alpha[VOX_EFG_MG_MAX_LANCZOS_STEPS], beta[VOX_EFG_MG_MAX_LANCZOS_STEPS];
  double diag[VOX_EFG_MG_MAX_LANCZOS_STEPS], off[VOX_EFG_MG_MAX_LANCZOS_STEPS];
  int n = 0;
  TRY(lanczos_steps(mg, l, alpha, beta, &n));
  for (int k = 0; k < n; k++) {
    diag[k] = 1 / alpha[k] + (k > 0 ? beta[k - 1] / alpha[k - 1] : 0);
    if (k > 0) off[k - 1] = sqrt(beta[k - 1]) / alpha[k - 1];
  }
  const double alpha_old = n > 0 ? alpha[n - 1] : 0, beta_old = n > 0 ? beta[n - 1] : 0;
  if (n == 0)
    return vox_error(mg->be->ctx, VOX_ERR_INVALID_ARGUMENT,
                     "element-free Galerkin: the multigrid's level %d is not positive definite",
                     l);
  /* the off-diagonal after the last step: 0 where it ended the space */
  const double next = alpha_old > 0 && beta_old > 0 ? sqrt(beta_old) / alpha_old : 0;
  int info = 0;
  double s[VOX_EFG_MG_MAX_LANCZOS_STEPS * VOX_EFG_MG_MAX_LANCZOS_STEPS];
  double work[2 * VOX_EFG_MG_MAX_LANCZOS_STEPS];
  dstev_("V", &n, diag, off, s, &n, work, &info);
  if (info != 0)
    return vox_error(mg->be->ctx, VOX_ERR_INVALID_ARGUMENT,
                     "element-free Galerkin: the multigrid's smoother bound (LAPACK dstev: %d)",
                     info);
  /* ascending: the last eigenvalue and the last entry of its vector */
  mg->lambda[l] = diag[n - 1] + next * fabs(s[(size_t)(n - 1) * (size_t)n + (size_t)(n - 1)]);
  return VOX_OK;
}

vox_status vox_efg_mg_setup_levels(vox_efg_mg *mg, int factor, double drift, int *made) {
  return mg->ops->mg_setup(mg->be, mg->device, factor, drift, made);
}

vox_status vox_efg_mg_setup_bounds(vox_efg_mg *mg, int estimate) {
  if (estimate || !mg->bounded)
    for (int l = 0; l + 1 < mg->n_levels; l++) TRY(bound(mg, l));
  mg->bounded = 1;
  return mg->ops->mg_setup_wait ? mg->ops->mg_setup_wait(mg->be, mg->device) : VOX_OK;
}

/* mg->degree steps of Chebyshev iteration on M A (Saad, Iterative Methods,
 * algorithm 12.1): d = alpha M (b - A x) + beta d, x += d; from x = 0
 * unless warm. Each step is the backend's two fused passes (the residual,
 * then M and the update), a handful of kernels where the V-cycle's small
 * levels are bound by their launches. */
static vox_status smooth(vox_efg_mg *mg, int l, int warm) {
  vox_vec *x = level_x(mg, l), *r = &mg->r[l], *d = &mg->d[l];
  const vox_vec *b = level_b(mg, l);
  const double upper = CHEBYSHEV_UPPER * mg->lambda[l], lower = mg->lower * mg->lambda[l];
  const double theta = 0.5 * (upper + lower), delta = 0.5 * (upper - lower);
  const double sigma = theta / delta;
  double rho = 1 / sigma, alpha = 1 / theta, beta = 0;
  for (int step = 0; step < mg->degree; step++) {
    const int first = step == 0 && !warm; /* x = 0: the residual is b */
    if (!first) TRY(mg->ops->mg_residual(mg->be, mg->device, l, b, x, r));
    TRY(mg->ops->mg_smooth_step(mg->be, mg->device, l, first ? b : r, alpha,
                                step == 0 ? 0 : beta, first, d, x));
    const double rho_new = 1 / (2 * sigma - rho);
    alpha = 2 * rho_new / delta;
    beta = rho_new * rho;
    rho = rho_new;
  }
  return VOX_OK;
}

static vox_status cycle(vox_efg_mg *mg, int l) {
  if (l == mg->n_levels - 1)
    return mg->ops->mg_coarse_solve(mg->be, mg->device, level_b(mg, l), level_x(mg, l));
  TRY(smooth(mg, l, 0));
  TRY(mg->ops->mg_residual(mg->be, mg->device, l, level_b(mg, l), level_x(mg, l), &mg->r[l]));
  TRY(mg->ops->mg_restrict(mg->be, mg->device, l, &mg->r[l], &mg->b[l + 1]));
  TRY(cycle(mg, l + 1));
  TRY(mg->ops->mg_prolong_add(mg->be, mg->device, l, &mg->x[l + 1], level_x(mg, l)));
  return smooth(mg, l, 1);
}

vox_status vox_efg_mg_apply(vox_efg_mg *mg, const vox_vec *r, vox_vec *z) {
  mg->b0 = r;
  mg->x0 = z;
  return cycle(mg, 0);
}
