/* SPDX-License-Identifier: BSD-3-Clause */
/* The dual method's passes over the variables on the CPU (mma_ops.h,
 * dual_sums and dual_solution): as cpu_mma.c's sums, OpenMP threads over
 * 64 fixed blocks of consecutive variables, each block's sums accumulated
 * in variable order and the blocks' added in block order, so that the
 * thread count does not change a bit. cuda/cuda_mma.cu does each
 * variable's arithmetic in the same operations and order. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>

#include "cpu.h"

enum { BLOCKS = 64 };
#define BLOCK_LO(n, b) ((size_t)(b) * (n) / BLOCKS)

/* x_j at lam (m) and what its sums need: p, q at lam, the reciprocals of
 * the distances to the asymptotes (divisions are the pass's dearest
 * operations: 4 of them a variable), and whether x_j lies strictly inside
 * its move limits. */
typedef struct dual_point {
  double x, plam, qlam, iu, il;
  int inside;
} dual_point;

static inline dual_point point_at(const vox_mma_vectors *v, size_t j, const double *lam) {
  const size_t n = v->n;
  const double *P = v->P.data, *Q = v->Q.data;
  dual_point d;
  double plam = v->p0.data[j], qlam = v->q0.data[j];
  for (int i = 0; i < v->m; i++)
    plam += P[(size_t)i * n + j] * lam[i], qlam += Q[(size_t)i * n + j] * lam[i];
  const double low = v->low.data[j], upp = v->upp.data[j], alfa = v->alfa.data[j],
               beta = v->beta.data[j];
  const double sp = sqrt(plam), sq = sqrt(qlam);
  const double t = (sp * low + sq * upp) / (sp + sq);
  d.inside = t > alfa && t < beta;
  d.x = d.inside ? t : t <= alfa ? alfa : beta;
  d.plam = plam, d.qlam = qlam;
  d.iu = 1 / (upp - d.x), d.il = 1 / (d.x - low);
  return d;
}

vox_status vox_cpu_mma_dual_sums(vox_backend *be, vox_mma_work *w, const vox_mma_vectors *v,
                                 int points, const double *lam, double *sums) {
  (void)w;
  const size_t n = v->n;
  const int m = v->m, S = m + m * (m + 1) / 2, k = points * S;
  const double *P = v->P.data, *Q = v->Q.data;
  double *partial = malloc((size_t)BLOCKS * (size_t)k * sizeof *partial);
  if (!partial) return vox_error(be->ctx, VOX_ERR_NO_MEMORY, "out of memory");
#pragma omp parallel for num_threads(vox_cpu_threads(be)) schedule(static)
  for (int blk = 0; blk < BLOCKS; blk++) {
    double *acc = partial + (size_t)blk * k;
    for (int t = 0; t < k; t++) acc[t] = 0;
    for (size_t j = BLOCK_LO(n, blk); j < BLOCK_LO(n, blk + 1); j++)
      for (int pt = 0; pt < points; pt++) {
        const dual_point d = point_at(v, j, lam + (size_t)pt * m);
        double *a = acc + (size_t)pt * S;
        for (int i = 0; i < m; i++)
          a[i] += P[(size_t)i * n + j] * d.iu + Q[(size_t)i * n + j] * d.il;
        if (!d.inside) continue;
        const double iu2 = d.iu * d.iu, il2 = d.il * d.il;
        const double ih = 1 / (2 * (d.plam * iu2 * d.iu + d.qlam * il2 * d.il));
        for (int i = 0, t = m; i < m; i++) {
          const double gi = P[(size_t)i * n + j] * iu2 - Q[(size_t)i * n + j] * il2;
          for (int l = 0; l <= i; l++, t++) {
            const double gl = P[(size_t)l * n + j] * iu2 - Q[(size_t)l * n + j] * il2;
            a[t] += gi * gl * ih;
          }
        }
      }
  }
  for (int t = 0; t < k; t++) {
    double sum = 0;
    for (int blk = 0; blk < BLOCKS; blk++) sum += partial[(size_t)blk * k + t];
    sums[t] = sum;
  }
  free(partial);
  return VOX_OK;
}

vox_status vox_cpu_mma_dual_solution(vox_backend *be, vox_mma_work *w, const vox_mma_vectors *v,
                                     const double *lam) {
  (void)w;
  const size_t n = v->n;
  double *x = v->x.data, *xsi = v->xsi.data, *eta = v->eta.data;
#pragma omp parallel for num_threads(vox_cpu_threads(be)) schedule(static)
  for (size_t j = 0; j < n; j++) {
    const dual_point d = point_at(v, j, lam);
    const double r = d.plam * (d.iu * d.iu) - d.qlam * (d.il * d.il);
    x[j] = d.x;
    xsi[j] = d.inside ? 0 : fmax(r, 0);
    eta[j] = d.inside ? 0 : fmax(-r, 0);
  }
  return VOX_OK;
}
