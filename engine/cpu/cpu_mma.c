/* SPDX-License-Identifier: BSD-3-Clause */
/* The method of moving asymptotes' per-variable work on the CPU
 * (mma_ops.h): OpenMP threads over 64 fixed blocks of consecutive
 * variables, each block's sums accumulated in variable order and the
 * blocks' sums added in block order, so that the thread count does not
 * change a bit. */
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>

#include "../mma_ops.h"
#include "cpu.h"

enum { BLOCKS = 64 };
#define BLOCK_LO(n, b) ((size_t)(b) * (n) / BLOCKS)

struct vox_mma_work {
  int m;
  double *partial; /* BLOCKS rows of the widest sum's accumulators */
};

struct vox_index_map {
  size_t n;
  size_t *index; /* the element of each variable */
};

static vox_status work_create(vox_backend *be, size_t n, int m, vox_mma_work **out) {
  (void)n;
  *out = NULL;
  vox_mma_work *w = calloc(1, sizeof *w);
  const size_t k = 2 + 3 * (size_t)m + (size_t)m * m; /* newton's: 2m + m^2, kkt's: 2 */
  if (!w || !(w->partial = malloc(BLOCKS * k * sizeof(double)))) {
    free(w);
    return vox_error(be->ctx, VOX_ERR_NO_MEMORY, "out of memory");
  }
  w->m = m;
  *out = w;
  return VOX_OK;
}

static void work_destroy(vox_backend *be, vox_mma_work *w) {
  (void)be;
  if (w) free(w->partial);
  free(w);
}

static vox_status approximate(vox_backend *be, vox_mma_work *w, const vox_mma_vectors *v,
                              const vox_mma_options *o, int first, double *bvec, int *bad_out) {
  const size_t n = v->n;
  const int m = v->m;
  const double *xval = v->xval.data, *xmin = v->xmin.data, *xmax = v->xmax.data;
  const double *df0dx = v->df0dx.data, *dfdx = v->dfdx.data, *xold1 = v->xold1.data,
               *xold2 = v->xold2.data;
  double *lowv = v->low.data, *uppv = v->upp.data, *alfa = v->alfa.data, *beta = v->beta.data,
         *p0v = v->p0.data, *q0v = v->q0.data, *P = v->P.data, *Q = v->Q.data;
  int bad = 0;
#pragma omp parallel for num_threads(vox_cpu_threads(be)) schedule(static) reduction(| : bad)
  for (size_t j = 0; j < n; j++) {
    const double x = xval[j], range = xmax[j] - xmin[j];
    int b = !isfinite(x) || !isfinite(df0dx[j]) || !(range >= 0) || x < xmin[j] || x > xmax[j];
    for (int i = 0; i < m; i++) b |= !isfinite(dfdx[(size_t)i * n + j]);
    bad |= b;
    if (b) continue;
    /* the bounds whose width the asymptotes take: xmin, xmax or the
     * move-limit box in them */
    const double lo = o->bounds == VOX_MMA_BOUNDS_MOVE ? fmax(xmin[j], x - o->move * range) : xmin[j];
    const double hi = o->bounds == VOX_MMA_BOUNDS_MOVE ? fmin(xmax[j], x + o->move * range) : xmax[j];
    const double width = hi - lo;
    /* the asymptotes */
    const double xmami = fmax(width, 1e-5);
    double low, upp;
    if (first) {
      low = x - o->asymptote_init * width;
      upp = x + o->asymptote_init * width;
    } else {
      const double trend = (x - xold1[j]) * (xold1[j] - xold2[j]);
      const double f = trend > 0 ? o->asymptote_increase
                       : trend < 0 ? o->asymptote_decrease
                                   : 1;
      low = x - f * (xold1[j] - lowv[j]);
      upp = x + f * (uppv[j] - xold1[j]);
      low = fmin(fmax(low, x - 10 * xmami), x - 0.01 * xmami);
      upp = fmax(fmin(upp, x + 10 * xmami), x + 0.01 * xmami);
    }
    lowv[j] = low, uppv[j] = upp;
    /* the move limits (x - move range is lo's or below it with the box) */
    alfa[j] = fmax(fmax(low + o->albefa * (x - low), x - o->move * range), lo);
    beta[j] = fmin(fmin(upp - o->albefa * (upp - x), x + o->move * range), hi);
    /* the approximations: p, q of the objective and the constraints */
    const double ux1 = upp - x, xl1 = x - low, ux2 = ux1 * ux1, xl2 = xl1 * xl1;
    const int aage = o->convexity == VOX_MMA_CONVEXITY_AAGE;
    const double curv = aage ? 0.5 * o->raa0 / (upp - low) : o->raa0 / xmami;
    const double g0 = df0dx[j], p0 = fmax(g0, 0), q0 = fmax(-g0, 0), pq0 = 0.001 * (p0 + q0) + curv;
    p0v[j] = (p0 + pq0) * ux2;
    q0v[j] = (q0 + pq0) * xl2;
    for (int i = 0; i < m; i++) {
      const double g = dfdx[(size_t)i * n + j], p = fmax(g, 0), q = fmax(-g, 0),
                   pq = aage ? 0 : 0.001 * (p + q) + curv;
      P[(size_t)i * n + j] = (p + pq) * ux2;
      Q[(size_t)i * n + j] = (q + pq) * xl2;
    }
  }
  *bad_out = bad;
  if (bad) return VOX_OK;
  /* b_i = sum_j P_ij / (U - x) + Q_ij / (x - L) */
  double *partial = w->partial;
  const int k = m;
#pragma omp parallel for num_threads(vox_cpu_threads(be)) schedule(static)
  for (int blk = 0; blk < BLOCKS; blk++) {
    double *acc = partial + (size_t)blk * k;
    for (int i = 0; i < m; i++) acc[i] = 0;
    for (size_t j = BLOCK_LO(n, blk); j < BLOCK_LO(n, blk + 1); j++)
      for (int i = 0; i < m; i++)
        acc[i] += P[(size_t)i * n + j] / (uppv[j] - xval[j]) +
                  Q[(size_t)i * n + j] / (xval[j] - lowv[j]);
  }
  for (int i = 0; i < m; i++) {
    double sum = 0;
    for (int blk = 0; blk < BLOCKS; blk++) sum += partial[(size_t)blk * k + i];
    bvec[i] = sum;
  }
  return VOX_OK;
}

static vox_status start(vox_backend *be, const vox_mma_vectors *v) {
  const size_t n = v->n;
  const double *alfa = v->alfa.data, *beta = v->beta.data;
  double *x = v->x.data, *xsi = v->xsi.data, *eta = v->eta.data;
#pragma omp parallel for num_threads(vox_cpu_threads(be)) schedule(static)
  for (size_t j = 0; j < n; j++) {
    x[j] = 0.5 * (alfa[j] + beta[j]);
    xsi[j] = fmax(1, 1 / (x[j] - alfa[j]));
    eta[j] = fmax(1, 1 / (beta[j] - x[j]));
  }
  return VOX_OK;
}

static vox_status residual(vox_backend *be, vox_mma_work *w, const vox_mma_vectors *v,
                           const double *lam, double epsi, int move, double step, double *sum_out,
                           double *max_out, double *gvec) {
  const size_t n = v->n;
  const int m = v->m, k = 2 + m; /* sum of squares, max, gvec */
  double *xv = v->x.data, *xsi = v->xsi.data, *eta = v->eta.data;
  const double *upp = v->upp.data, *low = v->low.data, *p0 = v->p0.data, *q0 = v->q0.data,
               *P = v->P.data, *Q = v->Q.data, *alfa = v->alfa.data, *beta = v->beta.data;
  if (move) { /* every variable of the point moved by `step` times the direction */
    const double *xo = v->xo.data, *xsio = v->xsio.data, *etao = v->etao.data, *dx = v->dx.data,
                 *dxsi = v->dxsi.data, *deta = v->deta.data;
#pragma omp parallel for num_threads(vox_cpu_threads(be)) schedule(static)
    for (size_t j = 0; j < n; j++) {
      xv[j] = xo[j] + step * dx[j];
      xsi[j] = xsio[j] + step * dxsi[j];
      eta[j] = etao[j] + step * deta[j];
    }
  }
  double *partial = w->partial;
#pragma omp parallel for num_threads(vox_cpu_threads(be)) schedule(static)
  for (int blk = 0; blk < BLOCKS; blk++) {
    double *acc = partial + (size_t)blk * k;
    for (int i = 0; i < k; i++) acc[i] = 0;
    for (size_t j = BLOCK_LO(n, blk); j < BLOCK_LO(n, blk + 1); j++) {
      const double x = xv[j], ux1 = upp[j] - x, xl1 = x - low[j];
      double plam = p0[j], qlam = q0[j];
      for (int i = 0; i < m; i++) {
        const double pij = P[(size_t)i * n + j], qij = Q[(size_t)i * n + j];
        plam += pij * lam[i], qlam += qij * lam[i];
        acc[2 + i] += pij / ux1 + qij / xl1;
      }
      const double rex = plam / (ux1 * ux1) - qlam / (xl1 * xl1) - xsi[j] + eta[j];
      const double rexsi = xsi[j] * (x - alfa[j]) - epsi;
      const double reeta = eta[j] * (beta[j] - x) - epsi;
      acc[0] += rex * rex + rexsi * rexsi + reeta * reeta;
      acc[1] = fmax(acc[1], fmax(fabs(rex), fmax(fabs(rexsi), fabs(reeta))));
    }
  }
  double sum = 0, big = 0;
  for (int i = 0; i < m; i++) gvec[i] = 0;
  for (int blk = 0; blk < BLOCKS; blk++) {
    const double *acc = partial + (size_t)blk * k;
    sum += acc[0];
    big = fmax(big, acc[1]);
    for (int i = 0; i < m; i++) gvec[i] += acc[2 + i];
  }
  *sum_out = sum;
  *max_out = big;
  return VOX_OK;
}

static vox_status newton(vox_backend *be, vox_mma_work *w, const vox_mma_vectors *v,
                         const double *lam, double epsi, double *gvec, double *gdelx,
                         double *ggt) {
  const size_t n = v->n;
  const int m = v->m, k = 2 * m + m * m; /* gvec, GG (delx / diagx), GG D^-1 GG' */
  const double *xv = v->x.data, *xsi = v->xsi.data, *eta = v->eta.data, *upp = v->upp.data,
               *low = v->low.data, *p0 = v->p0.data, *q0 = v->q0.data, *P = v->P.data,
               *Q = v->Q.data, *alfa = v->alfa.data, *beta = v->beta.data;
  double *delxv = v->delx.data, *diagxv = v->diagx.data, *partial = w->partial;
#pragma omp parallel for num_threads(vox_cpu_threads(be)) schedule(static)
  for (int blk = 0; blk < BLOCKS; blk++) {
    double *acc = partial + (size_t)blk * k;
    for (int i = 0; i < k; i++) acc[i] = 0;
    for (size_t j = BLOCK_LO(n, blk); j < BLOCK_LO(n, blk + 1); j++) {
      const double x = xv[j], ux1 = upp[j] - x, xl1 = x - low[j];
      const double ux2 = ux1 * ux1, xl2 = xl1 * xl1;
      double plam = p0[j], qlam = q0[j];
      for (int i = 0; i < m; i++)
        plam += P[(size_t)i * n + j] * lam[i], qlam += Q[(size_t)i * n + j] * lam[i];
      const double xa = x - alfa[j], bx = beta[j] - x;
      const double delx = plam / ux2 - qlam / xl2 - epsi / xa + epsi / bx;
      const double diagx =
          2 * (plam / (ux2 * ux1) + qlam / (xl2 * xl1)) + xsi[j] / xa + eta[j] / bx;
      delxv[j] = delx, diagxv[j] = diagx;
      for (int i = 0; i < m; i++) {
        const double pij = P[(size_t)i * n + j], qij = Q[(size_t)i * n + j];
        const double gi = pij / ux2 - qij / xl2;
        acc[i] += pij / ux1 + qij / xl1;
        acc[m + i] += gi * delx / diagx;
        for (int l = 0; l <= i; l++) {
          const double gl = P[(size_t)l * n + j] / ux2 - Q[(size_t)l * n + j] / xl2;
          acc[2 * m + i * m + l] += gi * gl / diagx;
        }
      }
    }
  }
  /* the block sums, in block order, into block 0's row */
  for (int blk = 1; blk < BLOCKS; blk++)
    for (int i = 0; i < k; i++) partial[i] += partial[(size_t)blk * k + i];
  for (int i = 0; i < m; i++) {
    gvec[i] = partial[i], gdelx[i] = partial[m + i];
    for (int l = 0; l <= i; l++) ggt[i * m + l] = partial[2 * m + i * m + l];
  }
  return VOX_OK;
}

static vox_status direction(vox_backend *be, vox_mma_work *w, const vox_mma_vectors *v,
                            const double *lam, const double *dlam, double epsi,
                            double *most_out) {
  (void)lam; /* delx and diagx are newton's */
  const size_t n = v->n;
  const int m = v->m;
  const double *xv = v->x.data, *xsi = v->xsi.data, *eta = v->eta.data, *upp = v->upp.data,
               *low = v->low.data, *P = v->P.data, *Q = v->Q.data, *alfa = v->alfa.data,
               *beta = v->beta.data, *delx = v->delx.data, *diagx = v->diagx.data;
  double *dxv = v->dx.data, *dxsiv = v->dxsi.data, *detav = v->deta.data;
  double *stmax = w->partial;
#pragma omp parallel for num_threads(vox_cpu_threads(be)) schedule(static)
  for (int blk = 0; blk < BLOCKS; blk++) {
    double most = 0;
    for (size_t j = BLOCK_LO(n, blk); j < BLOCK_LO(n, blk + 1); j++) {
      const double x = xv[j], ux2 = (upp[j] - x) * (upp[j] - x),
                   xl2 = (x - low[j]) * (x - low[j]);
      double gd = 0;
      for (int i = 0; i < m; i++)
        gd += (P[(size_t)i * n + j] / ux2 - Q[(size_t)i * n + j] / xl2) * dlam[i];
      const double dx = -(delx[j] + gd) / diagx[j];
      const double xa = x - alfa[j], bx = beta[j] - x;
      const double dxsi = -xsi[j] + epsi / xa - xsi[j] * dx / xa;
      const double deta = -eta[j] + epsi / bx + eta[j] * dx / bx;
      dxv[j] = dx, dxsiv[j] = dxsi, detav[j] = deta;
      most = fmax(most, fmax(-1.01 * dxsi / xsi[j], -1.01 * deta / eta[j]));
      most = fmax(most, fmax(-1.01 * dx / xa, 1.01 * dx / bx));
    }
    stmax[blk] = most;
  }
  double most = 0;
  for (int blk = 0; blk < BLOCKS; blk++) most = fmax(most, stmax[blk]);
  *most_out = most;
  return VOX_OK;
}

static vox_status kkt(vox_backend *be, vox_mma_work *w, const vox_mma_vectors *v,
                      const double *lam, double *sum_out, double *max_out) {
  const size_t n = v->n;
  const int m = v->m;
  const double *x = v->xval.data, *xmin = v->xmin.data, *xmax = v->xmax.data,
               *df0dx = v->df0dx.data, *dfdx = v->dfdx.data, *xsi = v->xsi.data,
               *eta = v->eta.data;
  double *acc = w->partial; /* per block: sum of squares and largest entry */
#pragma omp parallel for num_threads(vox_cpu_threads(be)) schedule(static)
  for (int blk = 0; blk < BLOCKS; blk++) {
    double sum = 0, big = 0;
    for (size_t j = BLOCK_LO(n, blk); j < BLOCK_LO(n, blk + 1); j++) {
      double rex = df0dx[j] - xsi[j] + eta[j];
      for (int i = 0; i < m; i++) rex += dfdx[(size_t)i * n + j] * lam[i];
      const double rexsi = xsi[j] * (x[j] - xmin[j]), reeta = eta[j] * (xmax[j] - x[j]);
      sum += rex * rex + rexsi * rexsi + reeta * reeta;
      big = fmax(big, fmax(fabs(rex), fmax(fabs(rexsi), fabs(reeta))));
    }
    acc[2 * blk] = sum, acc[2 * blk + 1] = big;
  }
  double sum = 0, big = 0;
  for (int blk = 0; blk < BLOCKS; blk++) sum += acc[2 * blk], big = fmax(big, acc[2 * blk + 1]);
  *sum_out = sum;
  *max_out = big;
  return VOX_OK;
}

/* ---- the design elements ---------------------------------------------------- */

static vox_status map_create(vox_backend *be, const vox_vec *mask, vox_index_map **out,
                             size_t *n_out) {
  *out = NULL;
  size_t n = 0;
  for (size_t e = 0; e < mask->n; e++) n += mask->data[e] != 0;
  vox_index_map *map = calloc(1, sizeof *map);
  if (!map || !(map->index = malloc((n ? n : 1) * sizeof *map->index))) {
    free(map);
    return vox_error(be->ctx, VOX_ERR_NO_MEMORY, "out of memory");
  }
  for (size_t e = 0; e < mask->n; e++)
    if (mask->data[e] != 0) map->index[map->n++] = e;
  *out = map;
  *n_out = n;
  return VOX_OK;
}

static void map_destroy(vox_backend *be, vox_index_map *map) {
  (void)be;
  if (map) free(map->index);
  free(map);
}

static vox_status gather(vox_backend *be, const vox_index_map *map, const vox_vec *in, double scale,
                         const vox_vec *lo, const vox_vec *hi, vox_vec *out) {
  const size_t *index = map->index;
  const double *a = in->data;
  double *b = out->data;
#pragma omp parallel for num_threads(vox_cpu_threads(be)) schedule(static)
  for (size_t j = 0; j < map->n; j++) b[j] = scale * a[index[j]];
  if (lo) {
    const double *l = lo->data, *h = hi->data;
#pragma omp parallel for num_threads(vox_cpu_threads(be)) schedule(static)
    for (size_t j = 0; j < map->n; j++) b[j] = fmin(fmax(b[j], l[j]), h[j]);
  }
  return VOX_OK;
}

static vox_status scatter(vox_backend *be, const vox_index_map *map, const vox_vec *in,
                          vox_vec *out) {
  const size_t *index = map->index;
  const double *a = in->data;
  double *b = out->data;
#pragma omp parallel for num_threads(vox_cpu_threads(be)) schedule(static)
  for (size_t j = 0; j < map->n; j++) b[index[j]] = a[j];
  return VOX_OK;
}

const vox_mma_ops vox_cpu_mma_ops = {
    .work_create = work_create,
    .work_destroy = work_destroy,
    .approximate = approximate,
    .start = start,
    .residual = residual,
    .newton = newton,
    .direction = direction,
    .kkt = kkt,
    .dual_sums = vox_cpu_mma_dual_sums,
    .dual_solution = vox_cpu_mma_dual_solution,
    .map_create = map_create,
    .map_destroy = map_destroy,
    .gather = gather,
    .scatter = scatter,
};
