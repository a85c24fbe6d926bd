/* SPDX-License-Identifier: BSD-3-Clause */
/* The method of moving asymptotes (voxfe/mma.h): Svanberg's `mmasub`
 * (asymptotes, move limits, the approximations) and `subsolv` (the
 * subproblem by a primal-dual interior-point method with the barrier
 * parameter epsilon going down by tens), and `kktcheck`, after the MATLAB
 * codes of Svanberg's 2007 notes. Sums over the n variables run in fixed
 * blocks, added in block order, so that the thread count does not change
 * the result. */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_ops.h"
#include "voxfe/mma.h"

void vox_mma_options_default(vox_mma_options *o) {
  o->asymptote_init = 0.5;
  o->asymptote_increase = 1.2;
  o->asymptote_decrease = 0.7;
  o->move = 0.5;
  o->albefa = 0.1;
  o->raa0 = 1e-5;
  o->a0 = 1;
  o->a = 0;
  o->c = 1000;
  o->d = 1;
  o->epsilon_min = 1e-7;
  o->objective_scale = 1;
}

vox_status vox_mma_options_check(vox_context *ctx, const vox_mma_options *o) {
#define REQUIRE(cond, ...)                                                        \
  if (!(cond)) return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, __VA_ARGS__)
  REQUIRE(o->asymptote_init > 0 && o->asymptote_init <= 10, "MMA asymptote init %g not in (0, 10]",
          o->asymptote_init);
  REQUIRE(o->asymptote_increase >= 1, "MMA asymptote increase %g must be >= 1",
          o->asymptote_increase);
  REQUIRE(o->asymptote_decrease > 0 && o->asymptote_decrease <= 1,
          "MMA asymptote decrease %g not in (0, 1]", o->asymptote_decrease);
  REQUIRE(o->move > 0 && o->move <= 1, "MMA move limit %g not in (0, 1]", o->move);
  REQUIRE(o->albefa > 0 && o->albefa < 1, "MMA albefa %g not in (0, 1)", o->albefa);
  REQUIRE(o->raa0 > 0, "MMA raa0 %g must be > 0", o->raa0);
  REQUIRE(o->a0 > 0, "MMA a0 %g must be > 0", o->a0);
  REQUIRE(o->a >= 0, "MMA a %g must be >= 0", o->a);
  REQUIRE(o->c >= 0, "MMA c %g must be >= 0", o->c);
  REQUIRE(o->d >= 0 && o->c + o->d > 0, "MMA d %g must be >= 0 (and c + d > 0)", o->d);
  REQUIRE(o->objective_scale > 0 && isfinite(o->objective_scale),
          "MMA objective scale %g must be > 0", o->objective_scale);
  REQUIRE(o->epsilon_min > 0 && o->epsilon_min < 1, "MMA epsilon min %g not in (0, 1)",
          o->epsilon_min);
#undef REQUIRE
  return VOX_OK;
}

/* Fixed blocks of the variables for the sums. */
enum { BLOCKS = 64 };
#define BLOCK_LO(n, b) ((size_t)(b) * (n) / BLOCKS)

struct vox_mma {
  vox_context *ctx;
  size_t n;
  int m;
  vox_mma_options o;
  int iteration;
  int threads; /* 0: OpenMP's default */
  double *xold1, *xold2, *low, *upp;
  /* the subproblem: move limits, approximations (P, Q: m rows of n), b */
  double *alfa, *beta, *p0, *q0, *P, *Q, *b;
  /* the interior point: x and the bound multipliers, their values before the
   * step, the step, and Newton's delx and diagx */
  double *x, *xsi, *eta, *xo, *xsio, *etao, *dx, *dxsi, *deta, *delx, *diagx;
  /* y, lam, mu, s (m each) and old values and steps; z, zet */
  double *y, *lam, *mu, *s, *yo, *lamo, *muo, *so, *dy, *dlam, *dmu, *ds;
  double z, zet, dz_step, dzet_step;
  double *gvec;    /* m: the residual's sums of the approximations */
  double *partial; /* BLOCKS rows of the sums' accumulators */
  double *matrix;  /* (m + 1)^2 + (m + 1): the dual Newton system */
};

vox_status vox_mma_create(vox_context *ctx, size_t n, int m, const vox_mma_options *options,
                          vox_mma **out) {
  *out = NULL;
  if (n == 0 || m < 1 || m > 1000)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "MMA: %zu variables and %d constraints", n, m);
  TRY(vox_mma_options_check(ctx, options));
  vox_mma *a = calloc(1, sizeof *a);
  if (!a) return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
  a->ctx = ctx, a->n = n, a->m = m, a->o = *options;
  double **vn[] = {&a->xold1, &a->xold2, &a->low,  &a->upp,  &a->alfa, &a->beta,
                   &a->p0,    &a->q0,    &a->x,    &a->xsi,  &a->eta,  &a->xo,
                   &a->xsio,  &a->etao,  &a->dx,   &a->dxsi, &a->deta, &a->delx, &a->diagx};
  double **vm[] = {&a->b, &a->gvec, &a->y,   &a->lam, &a->mu, &a->s,    &a->yo, &a->lamo,
                   &a->muo, &a->so, &a->dy,  &a->dlam, &a->dmu, &a->ds};
  int ok = 1;
  for (size_t i = 0; i < sizeof vn / sizeof vn[0]; i++) ok &= !!(*vn[i] = calloc(n, sizeof(double)));
  for (size_t i = 0; i < sizeof vm / sizeof vm[0]; i++)
    ok &= !!(*vm[i] = calloc((size_t)m, sizeof(double)));
  const size_t k = 2 + 3 * (size_t)m + (size_t)m * m; /* the widest sum */
  ok = ok && (size_t)m <= SIZE_MAX / sizeof(double) / n && (a->P = malloc((size_t)m * n * sizeof(double))) &&
       (a->Q = malloc((size_t)m * n * sizeof(double))) &&
       (a->partial = malloc(BLOCKS * k * sizeof(double))) &&
       (a->matrix = malloc(((size_t)(m + 1) * (m + 1) + (size_t)(m + 1)) * sizeof(double)));
  if (!ok) {
    vox_mma_destroy(a);
    return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
  }
  *out = a;
  return VOX_OK;
}

void vox_mma_destroy(vox_mma *a) {
  if (!a) return;
  double *all[] = {a->xold1, a->xold2, a->low, a->upp, a->alfa, a->beta, a->p0, a->q0,
                   a->x, a->xsi, a->eta, a->xo, a->xsio, a->etao, a->dx, a->dxsi, a->deta,
                   a->delx, a->diagx, a->b, a->gvec, a->y, a->lam, a->mu, a->s, a->yo, a->lamo,
                   a->muo, a->so, a->dy, a->dlam, a->dmu, a->ds, a->P, a->Q, a->partial,
                   a->matrix};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) free(all[i]);
  free(a);
}

int vox_mma_iterations(const vox_mma *a) { return a->iteration; }
void vox_mma_set_threads(vox_mma *a, int threads) { a->threads = threads > 0 ? threads : 0; }
static int team(const vox_mma *a) { return a->threads > 0 ? a->threads : omp_get_max_threads(); }
const double *vox_mma_lower(const vox_mma *a) { return a->low; }
const double *vox_mma_upper(const vox_mma *a) { return a->upp; }
const double *vox_mma_lambda(const vox_mma *a) { return a->lam; }

/* ---- the subproblem ------------------------------------------------------ */

/* The residual of the relaxed KKT conditions of the subproblem at the
 * current point for barrier epsi: its norm and largest entry. */
static void residual(vox_mma *a, double epsi, double *norm, double *max) {
  const size_t n = a->n;
  const int m = a->m, k = 2 + m; /* sum of squares, max, gvec */
#pragma omp parallel for num_threads(team(a)) schedule(static)
  for (int blk = 0; blk < BLOCKS; blk++) {
    double *acc = a->partial + (size_t)blk * k;
    for (int i = 0; i < k; i++) acc[i] = 0;
    for (size_t j = BLOCK_LO(n, blk); j < BLOCK_LO(n, blk + 1); j++) {
      const double x = a->x[j], ux1 = a->upp[j] - x, xl1 = x - a->low[j];
      double plam = a->p0[j], qlam = a->q0[j];
      for (int i = 0; i < m; i++) {
        const double pij = a->P[(size_t)i * n + j], qij = a->Q[(size_t)i * n + j];
        plam += pij * a->lam[i], qlam += qij * a->lam[i];
        acc[2 + i] += pij / ux1 + qij / xl1;
      }
      const double rex = plam / (ux1 * ux1) - qlam / (xl1 * xl1) - a->xsi[j] + a->eta[j];
      const double rexsi = a->xsi[j] * (x - a->alfa[j]) - epsi;
      const double reeta = a->eta[j] * (a->beta[j] - x) - epsi;
      acc[0] += rex * rex + rexsi * rexsi + reeta * reeta;
      acc[1] = fmax(acc[1], fmax(fabs(rex), fmax(fabs(rexsi), fabs(reeta))));
    }
  }
  double sum = 0, big = 0;
  for (int i = 0; i < m; i++) a->gvec[i] = 0;
  for (int blk = 0; blk < BLOCKS; blk++) {
    const double *acc = a->partial + (size_t)blk * k;
    sum += acc[0];
    big = fmax(big, acc[1]);
    for (int i = 0; i < m; i++) a->gvec[i] += acc[2 + i];
  }
  const vox_mma_options *o = &a->o;
  double rez = o->a0 - a->zet, rezet = a->zet * a->z - epsi;
  for (int i = 0; i < m; i++) {
    rez -= o->a * a->lam[i];
    const double rey = o->c + o->d * a->y[i] - a->mu[i] - a->lam[i];
    const double relam = a->gvec[i] - o->a * a->z - a->y[i] + a->s[i] - a->b[i];
    const double remu = a->mu[i] * a->y[i] - epsi, res = a->lam[i] * a->s[i] - epsi;
    const double r[] = {rey, relam, remu, res};
    for (int t = 0; t < 4; t++) sum += r[t] * r[t], big = fmax(big, fabs(r[t]));
  }
  sum += rez * rez + rezet * rezet;
  big = fmax(big, fmax(fabs(rez), fabs(rezet)));
  *norm = sqrt(sum);
  *max = big;
}

/* Solves the dense system A x = r of order k (row-major, overwritten) by
 * Gaussian elimination with partial pivoting; -1 when it is singular. */
static int solve_dense(int k, double *A, double *r) {
  for (int c = 0; c < k; c++) {
    int piv = c;
    for (int i = c + 1; i < k; i++)
      if (fabs(A[i * k + c]) > fabs(A[piv * k + c])) piv = i;
    if (!(fabs(A[piv * k + c]) > 0)) return -1;
    if (piv != c) {
      for (int j = 0; j < k; j++) {
        const double t = A[c * k + j];
        A[c * k + j] = A[piv * k + j], A[piv * k + j] = t;
      }
      const double t = r[c];
      r[c] = r[piv], r[piv] = t;
    }
    for (int i = c + 1; i < k; i++) {
      const double f = A[i * k + c] / A[c * k + c];
      for (int j = c; j < k; j++) A[i * k + j] -= f * A[c * k + j];
      r[i] -= f * r[c];
    }
  }
  for (int i = k - 1; i >= 0; i--) {
    double t = r[i];
    for (int j = i + 1; j < k; j++) t -= A[i * k + j] * r[j];
    r[i] = t / A[i * k + i];
  }
  return 0;
}

/* One Newton direction of the relaxed KKT conditions for barrier epsi
 * (subsolv's m < n branch: the dual system of order m + 1), and the
 * largest step that keeps the point interior (1.01 of the way, at most 1). */
static vox_status newton_step(vox_mma *a, double epsi, double *step) {
  const size_t n = a->n;
  const int m = a->m, k = 2 * m + m * m; /* gvec, GG (delx / diagx), GG D^-1 GG' */
  const vox_mma_options *o = &a->o;
#pragma omp parallel for num_threads(team(a)) schedule(static)
  for (int blk = 0; blk < BLOCKS; blk++) {
    double *acc = a->partial + (size_t)blk * k;
    for (int i = 0; i < k; i++) acc[i] = 0;
    for (size_t j = BLOCK_LO(n, blk); j < BLOCK_LO(n, blk + 1); j++) {
      const double x = a->x[j], ux1 = a->upp[j] - x, xl1 = x - a->low[j];
      const double ux2 = ux1 * ux1, xl2 = xl1 * xl1;
      double plam = a->p0[j], qlam = a->q0[j];
      for (int i = 0; i < m; i++)
        plam += a->P[(size_t)i * n + j] * a->lam[i], qlam += a->Q[(size_t)i * n + j] * a->lam[i];
      const double xa = x - a->alfa[j], bx = a->beta[j] - x;
      const double delx = plam / ux2 - qlam / xl2 - epsi / xa + epsi / bx;
      const double diagx =
          2 * (plam / (ux2 * ux1) + qlam / (xl2 * xl1)) + a->xsi[j] / xa + a->eta[j] / bx;
      a->delx[j] = delx, a->diagx[j] = diagx;
      for (int i = 0; i < m; i++) {
        const double pij = a->P[(size_t)i * n + j], qij = a->Q[(size_t)i * n + j];
        const double gi = pij / ux2 - qij / xl2;
        acc[i] += pij / ux1 + qij / xl1;
        acc[m + i] += gi * delx / diagx;
        for (int l = 0; l <= i; l++) {
          const double gl = a->P[(size_t)l * n + j] / ux2 - a->Q[(size_t)l * n + j] / xl2;
          acc[2 * m + i * m + l] += gi * gl / diagx;
        }
      }
    }
  }
  /* the block sums, in block order, into block 0's row */
  for (int blk = 1; blk < BLOCKS; blk++)
    for (int i = 0; i < k; i++) a->partial[i] += a->partial[(size_t)blk * k + i];
  const double *gvec = a->partial, *gdelx = a->partial + m, *ggt = a->partial + 2 * m;
  /* the system [Alam a; a' -zet/z] [dlam; dz] = [blam; delz] */
  const int order = m + 1;
  double *A = a->matrix, *r = a->matrix + order * order;
  double delz = o->a0 - epsi / a->z;
  for (int i = 0; i < m; i++) {
    const double y = a->y[i], lam = a->lam[i];
    delz -= o->a * lam;
    const double dely = o->c + o->d * y - lam - epsi / y;
    const double dellam = gvec[i] - o->a * a->z - y - a->b[i] + epsi / lam;
    const double diagy = o->d + a->mu[i] / y;
    r[i] = dellam + dely / diagy - gdelx[i];
    for (int l = 0; l < m; l++)
      A[i * order + l] = i >= l ? ggt[i * m + l] : ggt[l * m + i];
    A[i * order + i] += a->s[i] / lam + 1 / diagy;
    A[i * order + m] = o->a;
    A[m * order + i] = o->a;
    a->dy[i] = dely / diagy; /* for now: dy = -dely / diagy + dlam / diagy below */
  }
  A[m * order + m] = -a->zet / a->z;
  r[m] = delz;
  if (solve_dense(order, A, r) != 0)
    return vox_error(a->ctx, VOX_ERR_INVALID_ARGUMENT,
                     "MMA: the subproblem's Newton system is singular");
  const double dz = r[m];
  for (int i = 0; i < m; i++) {
    const double diagy = o->d + a->mu[i] / a->y[i];
    a->dlam[i] = r[i];
    a->dy[i] = -a->dy[i] + r[i] / diagy;
  }
  /* dx and the bound multipliers' steps, and the largest step length */
  double *stmax = a->partial; /* gvec etc. are spent */
#pragma omp parallel for num_threads(team(a)) schedule(static)
  for (int blk = 0; blk < BLOCKS; blk++) {
    double most = 0;
    for (size_t j = BLOCK_LO(n, blk); j < BLOCK_LO(n, blk + 1); j++) {
      const double x = a->x[j], ux2 = (a->upp[j] - x) * (a->upp[j] - x),
                   xl2 = (x - a->low[j]) * (x - a->low[j]);
      double gd = 0;
      for (int i = 0; i < m; i++)
        gd += (a->P[(size_t)i * n + j] / ux2 - a->Q[(size_t)i * n + j] / xl2) * a->dlam[i];
      const double dx = -(a->delx[j] + gd) / a->diagx[j];
      const double xa = x - a->alfa[j], bx = a->beta[j] - x;
      const double dxsi = -a->xsi[j] + epsi / xa - a->xsi[j] * dx / xa;
      const double deta = -a->eta[j] + epsi / bx + a->eta[j] * dx / bx;
      a->dx[j] = dx, a->dxsi[j] = dxsi, a->deta[j] = deta;
      most = fmax(most, fmax(-1.01 * dxsi / a->xsi[j], -1.01 * deta / a->eta[j]));
      most = fmax(most, fmax(-1.01 * dx / xa, 1.01 * dx / bx));
    }
    stmax[blk * 2] = most; /* (rows of k >= 2 entries: block blk's own) */
  }
  double most = 1;
  for (int blk = 0; blk < BLOCKS; blk++) most = fmax(most, stmax[blk * 2]);
  for (int i = 0; i < m; i++) {
    a->dmu[i] = -a->mu[i] + epsi / a->y[i] - a->mu[i] * a->dy[i] / a->y[i];
    a->ds[i] = -a->s[i] + epsi / a->lam[i] - a->s[i] * a->dlam[i] / a->lam[i];
    const double v[] = {a->y[i], a->lam[i], a->mu[i], a->s[i]},
                 d[] = {a->dy[i], a->dlam[i], a->dmu[i], a->ds[i]};
    for (int t = 0; t < 4; t++) most = fmax(most, -1.01 * d[t] / v[t]);
  }
  a->dz_step = dz;
  a->dzet_step = -a->zet + epsi / a->z - a->zet * dz / a->z;
  most = fmax(most, fmax(-1.01 * dz / a->z, -1.01 * a->dzet_step / a->zet));
  *step = 1 / most;
  return VOX_OK;
}

/* Every variable of the point moved by `step` times the direction from
 * the old values. */
static void move_point(vox_mma *a, double step) {
  const size_t n = a->n;
#pragma omp parallel for num_threads(team(a)) schedule(static)
  for (size_t j = 0; j < n; j++) {
    a->x[j] = a->xo[j] + step * a->dx[j];
    a->xsi[j] = a->xsio[j] + step * a->dxsi[j];
    a->eta[j] = a->etao[j] + step * a->deta[j];
  }
  for (int i = 0; i < a->m; i++) {
    a->y[i] = a->yo[i] + step * a->dy[i];
    a->lam[i] = a->lamo[i] + step * a->dlam[i];
    a->mu[i] = a->muo[i] + step * a->dmu[i];
    a->s[i] = a->so[i] + step * a->ds[i];
  }
}

/* subsolv: the subproblem's solution into a->x and its multipliers. */
static vox_status subsolve(vox_mma *a) {
  const size_t n = a->n;
  const int m = a->m;
  double epsi = 1;
#pragma omp parallel for num_threads(team(a)) schedule(static)
  for (size_t j = 0; j < n; j++) {
    a->x[j] = 0.5 * (a->alfa[j] + a->beta[j]);
    a->xsi[j] = fmax(1, 1 / (a->x[j] - a->alfa[j]));
    a->eta[j] = fmax(1, 1 / (a->beta[j] - a->x[j]));
  }
  for (int i = 0; i < m; i++)
    a->y[i] = 1, a->lam[i] = 1, a->mu[i] = fmax(1, 0.5 * a->o.c), a->s[i] = 1;
  a->z = 1, a->zet = 1;
  while (epsi > a->o.epsilon_min) {
    double norm, max;
    residual(a, epsi, &norm, &max);
    for (int inner = 0; max > 0.9 * epsi && inner < 200; inner++) {
      double step = 1;
      TRY(newton_step(a, epsi, &step));
      memcpy(a->xo, a->x, n * sizeof *a->x);
      memcpy(a->xsio, a->xsi, n * sizeof *a->x);
      memcpy(a->etao, a->eta, n * sizeof *a->x);
      const size_t mb = (size_t)m * sizeof *a->y;
      memcpy(a->yo, a->y, mb), memcpy(a->lamo, a->lam, mb);
      memcpy(a->muo, a->mu, mb), memcpy(a->so, a->s, mb);
      const double zo = a->z, zeto = a->zet;
      /* halve the step until the residual decreases */
      double newnorm = 2 * norm;
      for (int tries = 0; newnorm > norm && tries < 50; tries++) {
        move_point(a, step);
        a->z = zo + step * a->dz_step;
        a->zet = zeto + step * a->dzet_step;
        residual(a, epsi, &newnorm, &max);
        step /= 2;
      }
      norm = newnorm;
    }
    epsi *= 0.1;
  }
  return VOX_OK;
}

vox_status vox_mma_update(vox_mma *a, const double *xval, const double *xmin, const double *xmax,
                          const double *df0dx, const double *fval, const double *dfdx,
                          double *xnew) {
  const size_t n = a->n;
  const int m = a->m;
  const vox_mma_options *o = &a->o;
  const int first = a->iteration < 2; /* Svanberg's outeriter < 2.5, 1-based */
  int bad = 0;
  for (int i = 0; i < m; i++) bad |= !isfinite(fval[i]);
#pragma omp parallel for num_threads(team(a)) schedule(static) reduction(| : bad)
  for (size_t j = 0; j < n; j++) {
    const double x = xval[j], range = xmax[j] - xmin[j];
    int b = !isfinite(x) || !isfinite(df0dx[j]) || !(range >= 0) || x < xmin[j] || x > xmax[j];
    for (int i = 0; i < m; i++) b |= !isfinite(dfdx[(size_t)i * n + j]);
    bad |= b;
    if (b) continue;
    /* the asymptotes */
    const double xmami = fmax(range, 1e-5);
    double low, upp;
    if (first) {
      low = x - o->asymptote_init * range;
      upp = x + o->asymptote_init * range;
    } else {
      const double trend = (x - a->xold1[j]) * (a->xold1[j] - a->xold2[j]);
      const double f = trend > 0 ? o->asymptote_increase
                       : trend < 0 ? o->asymptote_decrease
                                   : 1;
      low = x - f * (a->xold1[j] - a->low[j]);
      upp = x + f * (a->upp[j] - a->xold1[j]);
      low = fmin(fmax(low, x - 10 * xmami), x - 0.01 * xmami);
      upp = fmax(fmin(upp, x + 10 * xmami), x + 0.01 * xmami);
    }
    a->low[j] = low, a->upp[j] = upp;
    /* the move limits */
    a->alfa[j] = fmax(fmax(low + o->albefa * (x - low), x - o->move * range), xmin[j]);
    a->beta[j] = fmin(fmin(upp - o->albefa * (upp - x), x + o->move * range), xmax[j]);
    /* the approximations: p, q of the objective and the constraints */
    const double ux1 = upp - x, xl1 = x - low, ux2 = ux1 * ux1, xl2 = xl1 * xl1;
    const double curv = o->raa0 / xmami;
    const double g0 = df0dx[j], p0 = fmax(g0, 0), q0 = fmax(-g0, 0), pq0 = 0.001 * (p0 + q0) + curv;
    a->p0[j] = (p0 + pq0) * ux2;
    a->q0[j] = (q0 + pq0) * xl2;
    for (int i = 0; i < m; i++) {
      const double g = dfdx[(size_t)i * n + j], p = fmax(g, 0), q = fmax(-g, 0),
                   pq = 0.001 * (p + q) + curv;
      a->P[(size_t)i * n + j] = (p + pq) * ux2;
      a->Q[(size_t)i * n + j] = (q + pq) * xl2;
    }
  }
  if (bad)
    return vox_error(a->ctx, VOX_ERR_INVALID_ARGUMENT,
                     "MMA: a value or gradient is not finite, or x is outside its bounds");
  /* b_i = sum_j P_ij / (U - x) + Q_ij / (x - L) - f_i */
  const int k = m;
#pragma omp parallel for num_threads(team(a)) schedule(static)
  for (int blk = 0; blk < BLOCKS; blk++) {
    double *acc = a->partial + (size_t)blk * k;
    for (int i = 0; i < m; i++) acc[i] = 0;
    for (size_t j = BLOCK_LO(n, blk); j < BLOCK_LO(n, blk + 1); j++)
      for (int i = 0; i < m; i++)
        acc[i] += a->P[(size_t)i * n + j] / (a->upp[j] - xval[j]) +
                  a->Q[(size_t)i * n + j] / (xval[j] - a->low[j]);
  }
  for (int i = 0; i < m; i++) {
    double sum = 0;
    for (int blk = 0; blk < BLOCKS; blk++) sum += a->partial[(size_t)blk * k + i];
    a->b[i] = sum - fval[i];
  }
  TRY(subsolve(a));
  memcpy(a->xold2, a->xold1, n * sizeof *a->xold1);
  memcpy(a->xold1, xval, n * sizeof *a->xold1);
  memcpy(xnew, a->x, n * sizeof *xnew);
  a->iteration++;
  return VOX_OK;
}

vox_status vox_mma_kkt(const vox_mma *a, const double *x, const double *xmin, const double *xmax,
                       const double *df0dx, const double *fval, const double *dfdx, double *norm,
                       double *max) {
  const size_t n = a->n;
  const int m = a->m;
  const vox_mma_options *o = &a->o;
  /* per block: sum of squares and largest entry of the x rows */
  double *acc = malloc(2 * BLOCKS * sizeof *acc);
  if (!acc) return vox_error(a->ctx, VOX_ERR_NO_MEMORY, "out of memory");
#pragma omp parallel for num_threads(team(a)) schedule(static)
  for (int blk = 0; blk < BLOCKS; blk++) {
    double sum = 0, big = 0;
    for (size_t j = BLOCK_LO(n, blk); j < BLOCK_LO(n, blk + 1); j++) {
      double rex = df0dx[j] - a->xsi[j] + a->eta[j];
      for (int i = 0; i < m; i++) rex += dfdx[(size_t)i * n + j] * a->lam[i];
      const double rexsi = a->xsi[j] * (x[j] - xmin[j]), reeta = a->eta[j] * (xmax[j] - x[j]);
      sum += rex * rex + rexsi * rexsi + reeta * reeta;
      big = fmax(big, fmax(fabs(rex), fmax(fabs(rexsi), fabs(reeta))));
    }
    acc[2 * blk] = sum, acc[2 * blk + 1] = big;
  }
  double sum = 0, big = 0;
  for (int blk = 0; blk < BLOCKS; blk++) sum += acc[2 * blk], big = fmax(big, acc[2 * blk + 1]);
  free(acc);
  double rez = o->a0 - a->zet;
  for (int i = 0; i < m; i++) {
    rez -= o->a * a->lam[i];
    const double r[] = {o->c + o->d * a->y[i] - a->mu[i] - a->lam[i],
                        fval[i] - o->a * a->z - a->y[i] + a->s[i], a->mu[i] * a->y[i],
                        a->lam[i] * a->s[i]};
    for (int t = 0; t < 4; t++) sum += r[t] * r[t], big = fmax(big, fabs(r[t]));
  }
  const double rezet = a->zet * a->z;
  sum += rez * rez + rezet * rezet;
  big = fmax(big, fmax(fabs(rez), fabs(rezet)));
  *norm = sqrt(sum);
  *max = big;
  return VOX_OK;
}

/* ---- checkpoints ---------------------------------------------------------- */

static void option_list(const vox_mma_options *o, double v[12]) {
  const double all[12] = {o->objective_scale, o->asymptote_init, o->asymptote_increase, o->asymptote_decrease,
                          o->move, o->albefa, o->raa0, o->a0, o->a, o->c, o->d, o->epsilon_min};
  memcpy(v, all, sizeof all);
}

/* The arrays of the state: n-long, then m-long. */
static void state_arrays(const vox_mma *a, double *n_arrays[6], double *m_arrays[4]) {
  double *nn[6] = {a->xold1, a->xold2, a->low, a->upp, a->xsi, a->eta};
  double *mm[4] = {a->y, a->lam, a->mu, a->s};
  memcpy(n_arrays, nn, sizeof nn);
  memcpy(m_arrays, mm, sizeof mm);
}
static const char *const n_names[6] = {"x_old1", "x_old2", "lower", "upper", "xsi", "eta"};
static const char *const m_names[4] = {"y", "lambda", "mu", "s"};

vox_status vox_mma_save(const vox_mma *a, const char *prefix, vox_checkpoint *out) {
  char name[VOX_NAME_MAX];
  double options[12];
  option_list(&a->o, options);
  const double scalars[] = {(double)a->n, a->m, a->iteration, a->z, a->zet};
  snprintf(name, sizeof name, "%s_options", prefix);
  TRY(vox_checkpoint_add(a->ctx, out, name, 12, options));
  snprintf(name, sizeof name, "%s_scalars", prefix);
  TRY(vox_checkpoint_add(a->ctx, out, name, 5, scalars));
  double *nv[6], *mv[4];
  state_arrays(a, nv, mv);
  for (int i = 0; i < 6; i++) {
    snprintf(name, sizeof name, "%s_%s", prefix, n_names[i]);
    TRY(vox_checkpoint_add(a->ctx, out, name, a->n, nv[i]));
  }
  for (int i = 0; i < 4; i++) {
    snprintf(name, sizeof name, "%s_%s", prefix, m_names[i]);
    TRY(vox_checkpoint_add(a->ctx, out, name, (size_t)a->m, mv[i]));
  }
  return VOX_OK;
}

static const vox_checkpoint_array *find(vox_mma *a, const vox_checkpoint *c, const char *prefix,
                                        const char *what, size_t length, vox_status *st) {
  char name[VOX_NAME_MAX];
  snprintf(name, sizeof name, "%s_%s", prefix, what);
  const vox_checkpoint_array *array = vox_checkpoint_find(c, name);
  if (*st != VOX_OK) return NULL;
  if (!array || array->length != length)
    *st = vox_error(a->ctx, VOX_ERR_INVALID_ARGUMENT,
                    "the checkpoint has no '%s' of %zu values (its run did not use MMA?)", name,
                    length);
  return *st == VOX_OK ? array : NULL;
}

vox_status vox_mma_restore(vox_mma *a, const char *prefix, const vox_checkpoint *c) {
  vox_status st = VOX_OK;
  const vox_checkpoint_array *options = find(a, c, prefix, "options", 12, &st);
  const vox_checkpoint_array *scalars = find(a, c, prefix, "scalars", 5, &st);
  TRY(st);
  double mine[12];
  option_list(&a->o, mine);
  if (memcmp(mine, options->values, sizeof mine) != 0)
    return vox_error(a->ctx, VOX_ERR_INVALID_ARGUMENT,
                     "the checkpoint's run had other MMA parameters: a resumed run needs the "
                     "options of the run that made the checkpoint");
  const double *v = scalars->values;
  if (v[0] != (double)a->n || v[1] != a->m || !(v[2] >= 0 && v[2] <= 2e9 && v[2] == floor(v[2])))
    return vox_error(a->ctx, VOX_ERR_INVALID_ARGUMENT,
                     "the checkpoint's MMA state is of %g variables and %g constraints where this "
                     "run has %zu and %d",
                     v[0], v[1], a->n, a->m);
  double *nv[6], *mv[4];
  state_arrays(a, nv, mv);
  const vox_checkpoint_array *na[6], *ma[4];
  for (int i = 0; i < 6; i++) na[i] = find(a, c, prefix, n_names[i], a->n, &st);
  for (int i = 0; i < 4; i++) ma[i] = find(a, c, prefix, m_names[i], (size_t)a->m, &st);
  TRY(st);
  for (int i = 0; i < 6; i++) memcpy(nv[i], na[i]->values, a->n * sizeof(double));
  for (int i = 0; i < 4; i++) memcpy(mv[i], ma[i]->values, (size_t)a->m * sizeof(double));
  a->iteration = (int)v[2];
  a->z = v[3], a->zet = v[4];
  return VOX_OK;
}
