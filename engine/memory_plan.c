/* The memory a run needs on its backend (memory_plan.h). The counts follow
 * the allocations of fem.c, pcg.c, multigrid.c and optimizer.c; they are
 * kept together here so that a change there is a change here. */
#include <math.h>

#include "homogenize.h"
#include "memory_plan.h"
#include "multigrid.h"

size_t vox_memory_needed(const vox_backend *be, const vox_grid *grid, int dpn, int n_cases,
                         int prescribed, const vox_solver_options *solver, int optimizing) {
  const double D = sizeof(double);
  const double elements = (double)vox_grid_elements(grid);
  const double dofs = (double)vox_grid_nodes(grid) * dpn;
  /* fem.c: e_solid and moduli per element; inv_diag, the forces, the 4 CG
   * vectors, the fixed flags per dof (and per node, on the GPU), and lift,
   * rhs and correction for prescribed displacements. A periodic cell
   * (homogenize.c) has one force vector that each unit strain overwrites,
   * its n_cases fields (counted below as the optimizer's displacements, or
   * here when not optimizing) and a vector of ones per element. */
  const int periodic = grid->periodic;
  const int forces = periodic ? 1 : n_cases;
  double bytes = 2 * D * elements + (5 + forces + (prescribed ? 3 : 0)) * D * dofs + dofs +
                 dofs / dpn;
  if (periodic) bytes += D * elements + (optimizing ? 0 : n_cases * D * dofs);
  if (solver->preconditioner == VOX_PC_MULTIGRID) {
    const int levels = vox_mg_levels_for(grid, dpn, solver->mg_levels);
    const int mixed = solver->precision == VOX_PRECISION_MIXED;
    const double value = mixed ? sizeof(float) : D;
    /* an FP16-packed level keeps the float buffer and adds its scales */
    const double per_dof = mixed ? be->ops->stencil_mixed_dof_bytes : 0;
    vox_grid g = *grid;
    for (int l = 0; l < levels; l++) {
      const double n = (double)vox_grid_nodes(&g) * dpn;
      if (l > 0) /* the stencil, inv_diag, b, x */
        bytes += be->ops->stencil_blocks * dpn * n * value + per_dof * n + 3 * D * n;
      if (l < levels - 1) bytes += (l > 0 ? 2 : 1) * D * n;   /* r (level 0: CG's q), d */
      if (l == levels - 1 && n <= (double)be->ops->dense_coarse_dofs)
        bytes += 2 * D * n * n; /* L and L^-1 */
      g = vox_grid_coarsen(&g);
    }
  }
  /* 9 vectors per element, a displacement per load case (a cell's fields
   * in half precision with one double vector to solve in, in mixed
   * precision: homogenize.h), the filter. A cell's n_cases are the strains
   * its objective solves in the loop; its final evaluation solves all six
   * after freeing the filter and 6 of the 9 per-element vectors
   * (optimizer.c, final_room): the larger of the two phases counts. */
  const int half = periodic && vox_homog_half_fields(solver);
  const double field = half ? 2.0 * dofs : D * dofs, work = half ? D * dofs : 0;
  const double loop = 9 * D * elements + n_cases * field + work + (2 * D + 1) * elements;
  const double final = 3 * D * elements + VOX_STRAINS * field + work;
  if (optimizing) bytes += periodic && final > loop ? final : loop;
  /* objective.c: the states' earlier solutions (a mechanism keeps them for
   * its one state only; the optimizer passes it 3 cases: an upper bound) */
  if (optimizing && !periodic && !prescribed)
    bytes += (double)solver->start_history * n_cases * D * dofs;
  return (size_t)(bytes * VOX_MEMORY_MARGIN) + VOX_MEMORY_MARGIN_BYTES;
}

vox_status vox_memory_check(vox_backend *be, const vox_grid *grid, int dpn, int n_cases,
                            int prescribed, const vox_solver_options *solver, int optimizing) {
  if (!be->ops->device_memory) return VOX_OK;
  size_t free_bytes, total;
  TRY(be->ops->memory(be, &free_bytes, &total));
  const size_t need = vox_memory_needed(be, grid, dpn, n_cases, prescribed, solver, optimizing);
  if (need <= free_bytes) return VOX_OK;
  /* the largest grid of these proportions that fits, by bisection on a scale */
  double lo = 0, hi = 1;
  vox_grid fit = *grid;
  for (int it = 0; it < 40; it++) {
    const double s = 0.5 * (lo + hi);
    vox_grid g = *grid;
    g.nx = (int64_t)floor((double)grid->nx * s), g.ny = (int64_t)floor((double)grid->ny * s),
    g.nz = (int64_t)floor((double)grid->nz * s);
    if (g.nx < 1 || g.ny < 1 || g.nz < 1 ||
        vox_memory_needed(be, &g, dpn, n_cases, prescribed, solver, optimizing) > free_bytes) {
      hi = s;
    } else {
      lo = s;
      fit = g;
    }
  }
  if (lo == 0)
    return vox_error(be->ctx, VOX_ERR_NO_MEMORY,
                     "%s: %zu bytes of device memory needed, %zu of %zu free: no grid fits",
                     be->ops->name, need, free_bytes, total);
  return vox_error(be->ctx, VOX_ERR_NO_MEMORY,
                   "%s: the %lldx%lldx%lld grid needs %.2f GB of device memory, %.2f GB of "
                   "%.2f GB are free; the largest grid of these proportions that fits is "
                   "%lldx%lldx%lld",
                   be->ops->name, (long long)grid->nx, (long long)grid->ny, (long long)grid->nz,
                   (double)need / 1e9, (double)free_bytes / 1e9, (double)total / 1e9,
                   (long long)fit.nx, (long long)fit.ny, (long long)fit.nz);
}
