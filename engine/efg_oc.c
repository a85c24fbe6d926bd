/* SPDX-License-Identifier: BSD-3-Clause */
/* The EFG path's optimality-criteria update on host arrays (efg_oc.h). */
#include "efg_oc.h"

#include "sparse_bsr.h"
#include "voxfe/model.h"

/* The loops run on OpenMP's threads from this many nodes: the threads
 * sleep while a GPU solves, and waking them for a pass over fewer nodes
 * costs more than the pass (the cantilever's 16,605 nodes on the H200's
 * host: 4.5 ms a design iteration in the update with threads, against a
 * few tenths serially). */
enum { PARALLEL_NODES = 1 << 17 };

/* Sums in chunks of a fixed size, summed in order: the same bits on any
 * number of threads. */
enum { MAX_CHUNKS = 4096, LEAST_CHUNK = 4096 };

static size_t chunk_size(size_t n) {
  const size_t chunk = (n + MAX_CHUNKS - 1) / MAX_CHUNKS;
  return chunk < LEAST_CHUNK ? LEAST_CHUNK : chunk;
}

/* sum_i dv_i x_i for the candidates x for s. */
static double volume(const vox_efg_oc_options *o, size_t n, const double *dv, const double *base,
                     const double *lo, const double *hi, double s) {
  const size_t chunk = chunk_size(n);
  const ptrdiff_t chunks = (ptrdiff_t)((n + chunk - 1) / chunk);
  double part[MAX_CHUNKS], v = 0;
#pragma omp parallel for schedule(static) if (n >= PARALLEL_NODES)
  for (ptrdiff_t c = 0; c < chunks; c++) {
    const size_t i0 = (size_t)c * chunk, i1 = i0 + chunk < n ? i0 + chunk : n;
    double sum = 0;
    for (size_t i = i0; i < i1; i++)
      sum += dv[i] * vox_efg_oc_density(base[i], lo[i], hi[i], s, o->q, o->rmin);
    part[c] = sum;
  }
  for (ptrdiff_t c = 0; c < chunks; c++) v += part[c];
  return v;
}

void vox_efg_oc_update(const vox_efg_oc_options *o, size_t n, const double *rho, const double *dc,
                       const double *dv, const uint8_t *design, double *work, double *rho_new,
                       vox_efg_oc_result *res) {
  double *base = work, *lo = work + n, *hi = work + 2 * n, b_max = 0;
#pragma omp parallel for schedule(static) reduction(max : b_max) if (n >= PARALLEL_NODES)
  for (ptrdiff_t i = 0; i < (ptrdiff_t)n; i++)
    b_max = fmax(b_max,
                 vox_efg_oc_node(o, rho[i], dc[i], dv[i], design[i], base + i, lo + i, hi + i));
  vox_efg_oc_search s;
  vox_efg_oc_search_begin(&s, o, b_max);
  double t;
  res->passes = 0;
  while (vox_efg_oc_search_next(&s, &t)) {
    vox_efg_oc_search_take(&s, volume(o, n, dv, base, lo, hi, exp(-o->eta * t)) - o->target);
    res->passes++;
  }
  res->log_lambda = s.hi;
  res->volume = vox_dot_fixed(dv, rho, n);
  const double sc = exp(-o->eta * s.hi);
  double change = 0;
#pragma omp parallel for schedule(static) reduction(max : change) if (n >= PARALLEL_NODES)
  for (ptrdiff_t i = 0; i < (ptrdiff_t)n; i++) {
    rho_new[i] = vox_efg_oc_density(base[i], lo[i], hi[i], sc, o->q, o->rmin);
    change = fmax(change, fabs(rho_new[i] - rho[i]));
  }
  res->change = change;
}

double vox_efg_non_discreteness_sum(size_t n_cells, const uint8_t *cell_role,
                                    const double *rho_gauss) {
  double sum = 0;
  for (size_t c = 0; c < n_cells; c++) {
    if (cell_role[c] != VOX_ROLE_DESIGN) continue;
    double d = 0;
    for (int q = 0; q < 8; q++) d += rho_gauss[8 * c + q];
    d /= 8;
    sum += d * (1 - d);
  }
  return sum;
}
