/* SPDX-License-Identifier: BSD-3-Clause */
/* Symmetry enforcement on the CPU: the orbit means of symmetry_group.h, one
 * element per iteration, in place (each orbit is written by its lowest
 * element only); node fields turned about the cell's diagonal. */
#include <omp.h>

#include "../symmetry_group.h"
#include "cpu.h"

void vox_cpu_symmetrize_field(const vox_symmetry_group *g, const vox_grid *grid, double *field,
                              int threads) {
  const int64_t nx = grid->nx, ny = grid->ny, nz = grid->nz;
  if (g->n <= 1) return; /* the identity alone */
#pragma omp parallel for collapse(2) num_threads(threads > 0 ? threads : omp_get_max_threads()) \
    schedule(static)
  for (int64_t k = 0; k < nz; k++)
    for (int64_t j = 0; j < ny; j++)
      for (int64_t i = 0; i < nx; i++) vox_symmetry_average_orbit(g, nx, ny, nz, i, j, k, field);
}

vox_status vox_cpu_symmetrize(vox_backend *be, const vox_grid *grid, vox_symmetry symmetry,
                              vox_vec *v) {
  TRY(vox_symmetry_check(be->ctx, grid, symmetry));
  if (v->n != (size_t)vox_grid_elements(grid))
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT,
                     "symmetrize: a vector of %zu values for %lld elements", v->n,
                     (long long)vox_grid_elements(grid));
  vox_symmetry_group g;
  vox_symmetry_group_make(symmetry, &g);
  vox_cpu_symmetrize_field(&g, grid, v->data, vox_cpu_threads(be));
  return VOX_OK;
}

#define TURN_NODES(T)                                                                           \
  do {                                                                                          \
    const T *s = src->raw;                                                                      \
    T *d = dst->raw;                                                                            \
    _Pragma("omp parallel for collapse(2) num_threads(threads) schedule(static)")               \
    for (int64_t k = 0; k < n; k++)                                                             \
      for (int64_t j = 0; j < n; j++)                                                           \
        for (int64_t i = 0; i < n; i++) {                                                       \
          const int64_t q = (k * n + j) * n + i, p = vox_turn_source(turns, n, i, j, k);        \
          for (int c = 0; c < 3; c++) d[3 * q + (c + turns) % 3] = s[3 * p + c];                \
        }                                                                                       \
  } while (0)

vox_status vox_cpu_turn_field(vox_backend *be, const vox_grid *grid, int turns, const vox_vec *src,
                              vox_vec *dst) {
  TRY(vox_turn_field_check(be, grid, turns, src, dst));
  const int64_t n = grid->nx + 1;
  const int threads = vox_cpu_threads(be) > 0 ? vox_cpu_threads(be) : omp_get_max_threads();
  if (src->scalar == VOX_DOUBLE)
    TURN_NODES(double);
  else
    TURN_NODES(uint16_t);
  return VOX_OK;
}
