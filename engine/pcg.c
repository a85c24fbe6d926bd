/* Preconditioned conjugate gradients against the backend interface: it calls
 * only the operator, the Jacobi scaling, axpy-type updates (those of x and r
 * fused with r.r: cg_update) and dot products, so it runs unchanged on every
 * backend; a backend that keeps CG's scalars itself (cg_begin, cg_step,
 * cg_direction) does the same arithmetic with one wait for the host per
 * iteration. A solve that fails to converge returns VOX_OK with a reason;
 * only backend failures are errors. */
#include <math.h>
#include <string.h>

#include "pcg.h"

vox_status vox_pcg_work_create(vox_backend *be, size_t n, vox_pcg_work *w) {
  memset(w, 0, sizeof *w);
  vox_vec *v[] = {&w->r, &w->z, &w->p, &w->q};
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
    vox_status s = be->ops->vec_create(be, n, v[i]);
    if (s != VOX_OK) {
      vox_pcg_work_destroy(be, w);
      return s;
    }
  }
  return VOX_OK;
}

void vox_pcg_work_destroy(vox_backend *be, vox_pcg_work *w) {
  vox_vec *v[] = {&w->r, &w->z, &w->p, &w->q};
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
    if (v[i]->data) be->ops->vec_destroy(be, v[i]);
}

vox_status vox_jacobi_apply(void *self, const vox_vec *r, vox_vec *z) {
  const vox_jacobi *j = self;
  return j->be->ops->vec_mult(j->be, z, j->inv_diag, r);
}

vox_status vox_pcg_history_create(vox_backend *be, size_t n, int capacity, vox_pcg_history *h) {
  memset(h, 0, sizeof *h);
  if (capacity < 0 || capacity > VOX_PCG_HISTORY_MAX)
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT, "solution history of %d vectors: 0 to %d",
                     capacity, (int)VOX_PCG_HISTORY_MAX);
  for (int i = 0; i < capacity; i++) {
    vox_status s = be->ops->vec_create(be, n, &h->v[i]);
    if (s != VOX_OK) {
      vox_pcg_history_destroy(be, h);
      return s;
    }
    h->capacity = i + 1;
  }
  return VOX_OK;
}

void vox_pcg_history_destroy(vox_backend *be, vox_pcg_history *h) {
  for (int i = 0; i < h->capacity; i++)
    if (h->v[i].data) be->ops->vec_destroy(be, &h->v[i]);
  memset(h, 0, sizeof *h);
}

/* The conjugate gradient iterations from x with r = b - A x already formed
 * and rr = r.r; target = rtol |b|. */
static vox_status iterate(vox_backend *be, vox_operator *op, const vox_pcg_preconditioner *pc,
                          vox_vec *x, const vox_solver_options *options, vox_pcg_work *w,
                          double rr, double target, vox_solve_result *result) {
  const vox_backend_ops *o = be->ops;
  double rz, rz_old, pq;
  TRY(pc->apply(pc->self, &w->r, &w->z));         /* z <- M^-1 r */
  /* the backend's scalars on the device, where it has them: the same
   * iterates, one wait for the host per iteration instead of three */
  const int device_scalars = o->cg_begin && o->cg_step && o->cg_direction;
  if (device_scalars) {
    TRY(o->cg_begin(be, &w->r, &w->z, &w->p, &rz)); /* p <- z, rz kept there */
  } else {
    TRY(o->vec_copy(be, &w->p, &w->z));           /* p <- z */
    TRY(o->vec_dot(be, &w->r, &w->z, &rz));
  }

  int k = 0;
  while (sqrt(rr) > target && k < options->max_iterations) {
    if (!isfinite(rr) || !isfinite(rz)) {
      result->reason = VOX_DIVERGED_NAN;
      break;
    }
    TRY(o->op_apply(be, op, &w->p, &w->q, 0));    /* q <- A p */
    if (device_scalars) /* the step below, which leaves x and r where it stops */
      TRY(o->cg_step(be, x, &w->r, &w->p, &w->q, &pq, &rz, &rr));
    else
      TRY(o->vec_dot(be, &w->p, &w->q, &pq));
    if (!(pq > 0) || !(rz > 0)) {
      result->reason = isfinite(pq) && isfinite(rz) ? VOX_DIVERGED_INDEFINITE : VOX_DIVERGED_NAN;
      break;
    }
    if (!device_scalars) {
      const double alpha = rz / pq;
      TRY(o->cg_update(be, x, &w->r, alpha, &w->p, &w->q, &rr)); /* x += alpha p, r -= alpha q */
    }
    if (sqrt(rr) <= target) { /* converged: no preconditioner for a next step */
      k++;
      break;
    }
    TRY(pc->apply(pc->self, &w->r, &w->z));       /* z <- M^-1 r */
    if (device_scalars) {
      TRY(o->cg_direction(be, &w->r, &w->z, &w->p)); /* p <- z + beta p */
    } else {
      rz_old = rz;
      TRY(o->vec_dot(be, &w->r, &w->z, &rz));
      TRY(o->vec_xpay(be, &w->p, rz / rz_old, &w->z)); /* p <- z + beta p */
    }
    k++;
  }
  result->iterations = k;
  result->residual_norm = sqrt(rr);
  if (result->reason == 0)
    result->reason = sqrt(rr) <= target ? VOX_CONVERGED_RTOL
                     : isfinite(rr)     ? VOX_DIVERGED_MAX_ITERATIONS
                                        : VOX_DIVERGED_NAN;
  return VOX_OK;
}

/* |b|, and x = 0 with VOX_CONVERGED_ZERO_RHS when b = 0 (*done set). */
static vox_status rhs_norm(vox_backend *be, const vox_vec *b, vox_vec *x,
                           vox_solve_result *result, int *done) {
  double bb;
  memset(result, 0, sizeof *result);
  TRY(be->ops->vec_dot(be, b, b, &bb));
  result->rhs_norm = sqrt(bb);
  *done = bb == 0;
  if (*done) {                                    /* x = 0 is exact */
    TRY(be->ops->vec_set(be, x, 0));
    result->reason = VOX_CONVERGED_ZERO_RHS;
  }
  return VOX_OK;
}

vox_status vox_pcg_solve(vox_backend *be, vox_operator *op, const vox_pcg_preconditioner *pc,
                         const vox_vec *b, vox_vec *x, const vox_solver_options *options,
                         vox_pcg_work *w, vox_solve_result *result) {
  const vox_backend_ops *o = be->ops;
  int done;
  double rr;
  TRY(rhs_norm(be, b, x, result, &done));
  if (done) return VOX_OK;
  TRY(o->op_apply(be, op, x, &w->r, 0));          /* r <- b - A x */
  TRY(o->vec_xpay(be, &w->r, -1, b));
  TRY(o->vec_dot(be, &w->r, &w->r, &rr));
  return iterate(be, op, pc, x, options, w, rr, options->rtol * result->rhs_norm, result);
}

/* Solves G c = g for the symmetric positive semi-definite n x n Gram matrix
 * G (row-major) of the energy inner product, leaving out (c_j = 0) every
 * vector whose energy lies within a relative 1e-10 of the span of the ones
 * before it (a pivot of the Cholesky factorisation that small), so that a
 * history of (nearly) equal solutions cannot make the start blow up. */
static void gram_solve(double *G, const double *g, int n, double *c) {
  enum { N = VOX_PCG_HISTORY_MAX + 1 };
  double L[N][N] = {{0}}, y[N] = {0};
  int keep[N] = {0};
  for (int j = 0; j < n; j++) {
    double d = G[j * n + j];
    for (int k = 0; k < j; k++) d -= L[j][k] * L[j][k];
    keep[j] = G[j * n + j] > 0 && d > 1e-10 * G[j * n + j];
    if (!keep[j]) continue;
    L[j][j] = sqrt(d);
    for (int i = j + 1; i < n; i++) {
      double e = G[i * n + j];
      for (int k = 0; k < j; k++) e -= L[i][k] * L[j][k];
      L[i][j] = e / L[j][j];
    }
  }
  for (int i = 0; i < n; i++) { /* L y = g over the kept vectors (dropped columns are 0) */
    if (!keep[i]) continue;
    double e = g[i];
    for (int k = 0; k < i; k++) e -= L[i][k] * y[k];
    y[i] = e / L[i][i];
  }
  for (int i = n - 1; i >= 0; i--) { /* L' c = y */
    c[i] = 0;
    if (!keep[i]) continue;
    double e = y[i];
    for (int k = i + 1; k < n; k++) e -= L[k][i] * c[k];
    c[i] = e / L[i][i];
  }
}

vox_status vox_pcg_solve_with_history(vox_backend *be, vox_operator *op,
                                      const vox_pcg_preconditioner *pc, const vox_vec *b,
                                      vox_vec *x, vox_pcg_history *h,
                                      const vox_solver_options *options, vox_pcg_work *w,
                                      vox_solve_result *result) {
  if (!h || h->capacity == 0) return vox_pcg_solve(be, op, pc, b, x, options, w, result);
  const vox_backend_ops *o = be->ops;
  int done;
  TRY(rhs_norm(be, b, x, result, &done));
  if (done) return VOX_OK;
  /* the basis: x, then the history from the newest; their products in r,
   * q and z (all free before the iterations) */
  enum { N = VOX_PCG_HISTORY_MAX + 1 };
  const int n = 1 + h->count;
  const vox_vec *v[N] = {x};
  vox_vec *av[N] = {&w->r, &w->q, &w->z};
  for (int i = 1; i < n; i++) v[i] = &h->v[(h->newest + i - 1) % h->capacity];
  double G[N * N], g[N], c[N];
  for (int j = 0; j < n; j++) {
    TRY(o->op_apply(be, op, v[j], av[j], 0));
    TRY(o->vec_dot(be, b, v[j], &g[j]));
    for (int i = 0; i <= j; i++) {
      TRY(o->vec_dot(be, v[i], av[j], &G[i * n + j]));
      G[j * n + i] = G[i * n + j];
    }
  }
  gram_solve(G, g, n, c);
  /* p <- sum c_i v_i and r <- b - sum c_i A v_i */
  TRY(o->vec_copy(be, &w->p, x));
  TRY(o->vec_axpby(be, &w->p, n > 1 ? c[1] : 0, v[n > 1], c[0]));
  TRY(o->vec_axpby(be, &w->r, n > 1 ? c[1] : 0, av[n > 1], c[0]));
  for (int i = 2; i < n; i++) {
    TRY(o->vec_axpy(be, &w->p, c[i], v[i]));
    TRY(o->vec_axpy(be, &w->r, c[i], av[i]));
  }
  TRY(o->vec_xpay(be, &w->r, -1, b));
  /* the guess becomes the newest solution of the history, in the slot of
   * the oldest once it is full; then x <- the start */
  const int slot = (h->newest + h->capacity - 1) % h->capacity; /* free, or the oldest */
  TRY(o->vec_copy(be, &h->v[slot], x));
  h->newest = slot;
  if (h->count < h->capacity) h->count++;
  TRY(o->vec_copy(be, x, &w->p));
  double rr;
  TRY(o->vec_dot(be, &w->r, &w->r, &rr));
  return iterate(be, op, pc, x, options, w, rr, options->rtol * result->rhs_norm, result);
}
