/* SPDX-License-Identifier: BSD-3-Clause */
/* Symmetry enforcement on the CPU: the orbit means of symmetry_group.h, one
 * element per iteration, in place (each orbit is written by its lowest
 * element only). */
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
