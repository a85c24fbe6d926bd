/* SPDX-License-Identifier: BSD-3-Clause */
/* The memory a run needs on its backend (memory_plan.h): the fem, CG, the
 * multigrid and the objective by the layouts their allocations are made
 * from (layout.h); the cell solver by the floats both backends allocate
 * (vox_cell_solver_bytes); the optimizer's per-element vectors, the
 * filter and a cell's fields, and how a cell's phases take turns, here. */
#include <math.h>
#include <string.h>

#include "cell_solver.h"
#include "homogenize.h"
#include "memory_plan.h"
#include "fem.h"
#include "multigrid.h"
#include "objective.h"

/* Adds an item (skipping empty ones); items of one name are summed. */
static void add(vox_memory_plan *plan, const char *what, double bytes) {
  if (bytes <= 0) return;
  plan->total += bytes;
  for (int i = 0; i < plan->n; i++)
    if (strcmp(plan->item[i].what, what) == 0) {
      plan->item[i].bytes += bytes;
      return;
    }
  if (plan->n < VOX_MEMORY_ITEMS) {
    plan->item[plan->n++] = (vox_memory_item){.what = what, .bytes = bytes};
  } else { /* cannot happen with the layouts below; the total stays right */
    plan->item[VOX_MEMORY_ITEMS - 1].what = "other";
    plan->item[VOX_MEMORY_ITEMS - 1].bytes += bytes;
  }
}

/* A layout's entries as items. */
static void add_layout(vox_memory_plan *plan, const vox_layout *l) {
  for (int i = 0; i < l->n; i++) add(plan, l->entry[i].what, l->entry[i].bytes);
}

/* The objective's vectors (objective.c): a mechanism's adjoint and work
 * vector are two more cases of the caller's (an upper bound of their
 * histories: the adjoint keeps none). */
static void add_objective(vox_memory_plan *plan, int n_cases, double dofs, double elements,
                          int prescribed, const vox_solver_options *solver) {
  const vox_objective_shape shape = {.kind = VOX_OBJECTIVE_COMPLIANCE,
                                     .n_cases = n_cases,
                                     .unit_weights = 1,
                                     .n_dofs = (size_t)dofs,
                                     .n_elements = (size_t)elements,
                                     .start_history = prescribed ? 0 : solver->start_history};
  vox_layout l;
  vox_layout_init(&l);
  vox_objective_layout(&shape, NULL, &l);
  add_layout(plan, &l);
}

void vox_memory_plan_items(const vox_backend *be, const vox_grid *grid, int dpn, int n_cases,
                           int prescribed, const vox_solver_options *solver, int optimizing,
                           vox_memory_plan *plan) {
  const double D = sizeof(double);
  const double elements = (double)vox_grid_elements(grid);
  const double dofs = (double)vox_grid_nodes(grid) * dpn;
  plan->n = 0;
  plan->total = 0;
  /* A periodic cell (homogenize.c) has one force vector that each unit
   * strain overwrites and its n_cases fields (counted below as the
   * optimizer's displacements, or here when not optimizing). */
  const int periodic = grid->periodic;
  /* an optimized cell in mixed precision: the single-precision cell solver
   * (cell_solver.h) in place of CG, its force, diagonal and multigrid */
  const int fields = periodic && optimizing ? vox_homog_fields_for(solver) : VOX_HOMOG_DOUBLE;
  const double cell_solver = fields >= VOX_HOMOG_CELL_SOLVER ? vox_cell_solver_bytes(be, grid) : 0;
  /* phased (VOX_CELL_SOLVER_PHASED): the cell solver takes turns with the
   * optimizer's per-element vectors, the fem's moduli and solid E and the
   * filter, counted below */
  const int phased = cell_solver > 0 && fields == VOX_HOMOG_CELL_SOLVER_PHASED;
  /* by turns (vox_solver_options.by_turns): the solver's part and the
   * optimizer's, the larger counted below */
  const int turns = optimizing && !periodic && solver->by_turns == VOX_BY_TURNS_ON;
  vox_layout l;
  if (!phased) { /* the fem (fem.c), lean beside the cell solver */
    const vox_fem_shape shape = {.grid = grid,
                                 .dofs_per_node = dpn,
                                 .n_cases = periodic ? 1 : n_cases,
                                 .lean = cell_solver > 0,
                                 .prescribed = prescribed,
                                 .without_solver = turns};
    vox_layout_init(&l);
    vox_fem_layout(&shape, NULL, &l);
    add_layout(plan, &l);
  }
  add(plan, "cell solver: CG and V-cycle vectors, stencils (float)", phased ? 0 : cell_solver);
  /* vox_homogenize's fields and its vector of ones (the optimizer keeps
   * none: the energy form of C^H does not sum the moduli) */
  if (periodic && !optimizing) add(plan, "cell fields (double)", n_cases * D * dofs);
  if (periodic && !optimizing) add(plan, "ones per element", D * elements);
  if (solver->preconditioner == VOX_PC_MULTIGRID && !cell_solver && !turns) { /* multigrid.c */
    vox_layout_init(&l);
    vox_mg_layout(be, grid, dpn, solver, NULL, &l);
    add_layout(plan, &l);
  }
  /* `optimizing` vectors per element (optimizer.c, opt_state), a displacement per load case (a
   * cell's fields in half precision with one double vector to solve in, in mixed precision:
   * homogenize.h), the filter. A cell's n_cases are the strains its objective solves in the loop;
   * its final evaluation solves all six after freeing the filter and all per-element vectors but 3
   * (optimizer.c, final_room): the larger of the two phases counts. (zz's start from the bulk
   * objective's hydrostatic field takes that field's place: still six, homogenize.h.) */
  const int half = periodic && vox_homog_half_fields(solver);
  const double field = half ? 2.0 * dofs : D * dofs, work = half && !cell_solver ? D * dofs : 0;
  const double state = optimizing * D * elements, filter = (2 * D + 1) * elements;
  if (phased) {
    /* by turns (optimizer.c, cell_evaluate): the solves hold the cell
     * solver and one field (the fem's moduli gone once the solver has its
     * float copy, which it keeps while released: `kept`); the moduli's
     * making the vectors less the spent two, the solid E and the moduli;
     * C^H the density, the solid E, the moduli and one field (two, parked);
     * the gradient the vectors (the solid E in the mask's place) and every
     * field; the update the vectors and the filter, the fields parked. So
     * the vectors with every field or with the filter bound all but the
     * solves. The final evaluation's six so, after final_room: x_phys, dc,
     * the design mask, the solid E and the moduli, no filter. */
    const double E = D * elements, solves = cell_solver + field;
    const double kept = vox_cell_solver_kept_bytes(be, grid);
    const double loop = fmax(solves, kept + state + fmax(n_cases * field, filter));
    const double final = fmax(solves, kept + fmax(4 * E, 3 * E + 2 * field));
    add(plan,
        "by turns: the cell solver, the optimizer's vectors per element and filter, the fem's "
        "moduli and solid E, the fields (half) they need",
        fmax(loop, final));
  } else {
    const double loop = state + n_cases * field + work + filter;
    const double final = 3 * D * elements + VOX_STRAINS * field + work;
    if (optimizing && periodic && final > loop) {
      add(plan, "final evaluation: x_phys, design, dc per element", 3 * D * elements);
      add(plan,
          half ? "final evaluation: the six fields (half)" : "final evaluation: the six fields",
          VOX_STRAINS * field);
      add(plan, "work vector of the half fields (double)", work);
    } else if (turns) {
      /* the solve: the fem's solver part, the multigrid and the element
       * energies it makes; the update: the optimizer's vectors, the solid E
       * and the filter (optimizer.c, turn_to_solve) */
      const vox_fem_shape shape = {.grid = grid, .dofs_per_node = dpn};
      vox_layout_init(&l);
      vox_fem_solver_layout(&shape, NULL, &l);
      if (solver->preconditioner == VOX_PC_MULTIGRID) vox_mg_layout(be, grid, dpn, solver, NULL, &l);
      const double solve = vox_layout_bytes(&l) + D * elements;
      const double update = state + D * elements + filter;
      add(plan,
          solve >= update ? "by turns, the solve: inverse diagonal, CG vectors, multigrid, "
                            "element energies"
                          : "by turns, the update: the optimizer's vectors, the solid E, the "
                            "filter",
          fmax(solve, update));
      add_objective(plan, n_cases, dofs, elements, prescribed, solver);
    } else if (optimizing) {
      add(plan, "optimizer: vectors per element (double)", state);
      if (periodic) {
        add(plan,
            half ? "cell fields of the solved strains (half)"
                 : "cell fields of the solved strains (double)",
            n_cases * field);
      } else {
        add_objective(plan, n_cases, dofs, elements, prescribed, solver);
      }
      add(plan, "work vector of the half fields (double)", work);
      add(plan, "filter", filter);
    }
  }
  add(plan, "margin (2 % and 160 MiB)",
      plan->total * (VOX_MEMORY_MARGIN - 1) + (double)VOX_MEMORY_MARGIN_BYTES);
}

size_t vox_memory_needed(const vox_backend *be, const vox_grid *grid, int dpn, int n_cases,
                         int prescribed, const vox_solver_options *solver, int optimizing) {
  vox_memory_plan plan;
  vox_memory_plan_items(be, grid, dpn, n_cases, prescribed, solver, optimizing, &plan);
  return (size_t)plan.total;
}

vox_cell_solver_use vox_cell_solver_choice(const vox_backend *be, const vox_grid *grid, int n_cases,
                                           const vox_solver_options *solver, int optimizing,
                                           size_t free_bytes) {
  vox_solver_options use = *solver;
  use.cell_solver = VOX_CELL_SOLVER_ON;
  if (!grid->periodic || vox_homog_fields_for(&use) != VOX_HOMOG_CELL_SOLVER ||
      vox_cell_solver_bytes(be, grid) <= 0)
    return VOX_CELL_SOLVER_OFF;
  /* the first that fits; phased, the smallest, where none does (its
   * memory check then says what would) */
  const vox_cell_solver_use order[2] = {VOX_CELL_SOLVER_OFF, VOX_CELL_SOLVER_ON};
  for (int i = 0; i < 2; i++) {
    use.cell_solver = order[i];
    if (vox_memory_needed(be, grid, 3, n_cases, 0, &use, optimizing) <= free_bytes) return order[i];
  }
  return VOX_CELL_SOLVER_PHASED;
}

vox_cell_solver_use vox_cell_solver_resolve(vox_backend *be, const vox_grid *grid, int n_cases,
                                            const vox_solver_options *solver, int optimizing) {
  size_t free_bytes, total;
  if (solver->cell_solver != VOX_CELL_SOLVER_AUTO) return solver->cell_solver;
  if (!be->ops->device_memory || be->ops->memory(be, &free_bytes, &total) != VOX_OK)
    return VOX_CELL_SOLVER_OFF;
  return vox_cell_solver_choice(be, grid, n_cases, solver, optimizing, free_bytes);
}

/* The part of `grid` this process holds (an MPI rank's slab, else all of
 * it), and whether it lives in a device's fixed memory. */
static int device_part(const vox_backend *be, const vox_grid *grid, vox_grid *part) {
  *part = *grid;
  return be->ops->memory_part ? be->ops->memory_part(be, grid, part) : be->ops->device_memory;
}

vox_by_turns vox_by_turns_resolve(vox_backend *be, const vox_grid *grid, int dpn, int n_cases,
                                  const vox_solver_options *solver, int optimizing,
                                  int can_take_turns) {
  if (solver->by_turns != VOX_BY_TURNS_AUTO) return solver->by_turns;
  vox_grid part;
  const int device = device_part(be, grid, &part);
  size_t free_bytes = 0, total;
  int short_of_memory = 0;
  if (device && can_take_turns && be->ops->memory(be, &free_bytes, &total) == VOX_OK) {
    vox_solver_options kept = *solver;
    kept.by_turns = VOX_BY_TURNS_OFF;
    short_of_memory = vox_memory_needed(be, &part, dpn, n_cases, 0, &kept, optimizing) > free_bytes;
  }
  /* alike on every process (MPI ranks), as the turns' steps are */
  if (be->ops->agree_max) short_of_memory = be->ops->agree_max(be, short_of_memory);
  return short_of_memory ? VOX_BY_TURNS_ON : VOX_BY_TURNS_OFF;
}

/* How many element layers of a rank's slab fit in free_bytes (x and y as
 * they are), by bisection: 0 where not one does. */
static int64_t layers_that_fit(const vox_backend *be, const vox_grid *slab, int dpn, int n_cases,
                               int prescribed, const vox_solver_options *solver, int optimizing,
                               size_t free_bytes) {
  int64_t lo = 0, hi = slab->nz; /* lo fits (0 trivially), hi does not */
  while (hi - lo > 1) {
    vox_grid g = *slab;
    g.nz = lo + (hi - lo) / 2;
    if (vox_memory_needed(be, &g, dpn, n_cases, prescribed, solver, optimizing) <= free_bytes)
      lo = g.nz;
    else
      hi = g.nz;
  }
  return lo;
}

/* What the run could give up to fit, in the check's message: its start
 * history (earlier solutions, 8 bytes a dof each; by turns is taken where
 * it helps already: vox_by_turns_resolve); "" where that does not help. */
static const char *history_hint(const vox_backend *be, const vox_grid *part, int dpn, int n_cases,
                              int prescribed, const vox_solver_options *solver, int optimizing,
                              size_t free_bytes) {
  vox_solver_options o = *solver;
  if (!optimizing || o.start_history == 0) return "";
  o.start_history = 0;
  return vox_memory_needed(be, part, dpn, n_cases, prescribed, &o, optimizing) <= free_bytes
             ? " (without a start history it would fit: start-history 0)"
             : "";
}

vox_status vox_memory_check(vox_backend *be, const vox_grid *grid, int dpn, int n_cases,
                            int prescribed, const vox_solver_options *solver, int optimizing) {
  vox_grid part;
  const int device = device_part(be, grid, &part);
  if (!device) return VOX_OK;
  size_t free_bytes, total;
  TRY(be->ops->memory(be, &free_bytes, &total));
  const size_t need = vox_memory_needed(be, &part, dpn, n_cases, prescribed, solver, optimizing);
  if (need <= free_bytes) return VOX_OK;
  const char *hint = history_hint(be, &part, dpn, n_cases, prescribed, solver, optimizing, free_bytes);
  if (part.nz != grid->nz) { /* a rank's slab: how many ranks would hold the grid */
    const int64_t fit =
        layers_that_fit(be, &part, dpn, n_cases, prescribed, solver, optimizing, free_bytes);
    if (fit == 0)
      return vox_error(be->ctx, VOX_ERR_NO_MEMORY,
                       "%s: a rank's slab of the %lldx%lldx%lld grid needs %.2f GB of device "
                       "memory, %.2f GB of %.2f GB are free, and not one element layer of it "
                       "fits%s",
                       be->ops->name, (long long)grid->nx, (long long)grid->ny,
                       (long long)grid->nz, (double)need / 1e9, (double)free_bytes / 1e9,
                       (double)total / 1e9, hint);
    return vox_error(be->ctx, VOX_ERR_NO_MEMORY,
                     "%s: a rank's slab of the %lldx%lldx%lld grid, %lld element layers, needs "
                     "%.2f GB of device memory, %.2f GB of %.2f GB are free: %lld layers fit, "
                     "so about %lld ranks would hold the grid%s",
                     be->ops->name, (long long)grid->nx, (long long)grid->ny,
                     (long long)grid->nz, (long long)part.nz, (double)need / 1e9,
                     (double)free_bytes / 1e9, (double)total / 1e9, (long long)fit,
                     (long long)((grid->nz + fit - 1) / fit), hint);
  }
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
                     "%s: %zu bytes of device memory needed, %zu of %zu free: no grid fits%s",
                     be->ops->name, need, free_bytes, total, hint);
  return vox_error(be->ctx, VOX_ERR_NO_MEMORY,
                   "%s: the %lldx%lldx%lld grid needs %.2f GB of device memory, %.2f GB of "
                   "%.2f GB are free; the largest grid of these proportions that fits is "
                   "%lldx%lldx%lld%s",
                   be->ops->name, (long long)grid->nx, (long long)grid->ny, (long long)grid->nz,
                   (double)need / 1e9, (double)free_bytes / 1e9, (double)total / 1e9,
                   (long long)fit.nx, (long long)fit.ny, (long long)fit.nz, hint);
}
