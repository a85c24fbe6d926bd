/* SPDX-License-Identifier: BSD-3-Clause */
/* One linear-elastic solve of a model, every load case: the public entry for
 * analyses and tests; the optimizer uses the same FE system. */
#include <stdlib.h>
#include <string.h>

#include "fem.h"
#include "memory_plan.h"
#include "name_table.h"
#include "sparse_solve.h"

void vox_solver_options_default(vox_solver_options *options) {
  options->rtol = 1e-8;
  options->max_iterations = 10000;
  options->energy_tol = 0; /* the residual alone */
  options->reaction_tol = 0;
  options->cg_window = 8;
  options->preconditioner = VOX_PC_MULTIGRID;
  options->mg_levels = 0;
  options->mg_coarse_dofs = 0;
  options->smoother = VOX_SMOOTHER_CHEBYSHEV;
  options->smoothing_steps = 2; /* cheaper than 3 overall: docs/benchmarks.md */
  options->fine_smoothing_steps = 0;
  options->jacobi_damping = 0.6;
  options->precision = VOX_PRECISION_MIXED; /* CG stays in double; see solver.h */
  options->storage = VOX_STORAGE_AUTO;
  options->mg_cycle = VOX_MG_CYCLE_AUTO; /* solver.h */
  options->mg_record = 1;
  options->start_history = 0;          /* one solve: no history (the optimizer sets it) */
  options->zero_start = 0;
  options->mg_bound_refresh = 1;
  options->cell_solver = VOX_CELL_SOLVER_AUTO;
  options->by_turns = VOX_BY_TURNS_AUTO;
  /* the sparse preconditioner: the fastest on the H100 (docs/engine.md) */
  memset(&options->sparse, 0, sizeof options->sparse);
  options->sparse.coarse = VOX_SPARSE_COARSE_SPLIT;
  options->sparse.block_levels = VOX_SPARSE_ALL_LEVELS;
  options->sparse.record = 1;
  options->sparse.rigid_modes = 0;
  options->sparse.sa_fine_transfer = VOX_SA_FINE_IMPLICIT;
  options->monitor = NULL;
  options->monitor_data = NULL;
}

static const char *const pc_names[] = {"jacobi", "multigrid"};
static const char *const smoother_names[] = {"jacobi", "chebyshev"};
static const char *const precision_names[] = {"double", "mixed"};
static const char *const storage_names[] = {"auto", "full", "sparse"};
static const char *const mg_cycle_names[] = {"v", "w", "auto"};
static const char *const cell_solver_names[] = {"auto", "off", "on", "phased"};
static const char *const sparse_coarse_names[] = {"split", "box", "sa"};
static const char *const sa_fine_transfer_names[] = {"implicit", "explicit"};

const char *vox_preconditioner_name(vox_preconditioner pc) {
  return (unsigned)pc < 2 ? pc_names[pc] : "unknown";
}

int vox_preconditioner_parse(const char *text, vox_preconditioner *pc) {
  int i = vox_name_index(text, pc_names, 2);
  if (i >= 0) *pc = (vox_preconditioner)i;
  return i >= 0 ? 0 : -1;
}

const char *vox_smoother_name(vox_smoother smoother) {
  return (unsigned)smoother < 2 ? smoother_names[smoother] : "unknown";
}

int vox_smoother_parse(const char *text, vox_smoother *smoother) {
  int i = vox_name_index(text, smoother_names, 2);
  if (i >= 0) *smoother = (vox_smoother)i;
  return i >= 0 ? 0 : -1;
}

const char *vox_precision_name(vox_precision precision) {
  return (unsigned)precision < 2 ? precision_names[precision] : "unknown";
}

int vox_precision_parse(const char *text, vox_precision *precision) {
  int i = vox_name_index(text, precision_names, 2);
  if (i >= 0) *precision = (vox_precision)i;
  return i >= 0 ? 0 : -1;
}

const char *vox_cell_solver_use_name(vox_cell_solver_use use) {
  return (unsigned)use < 4 ? cell_solver_names[use] : "unknown";
}

static const char *const by_turns_names[] = {"auto", "off", "on"};

const char *vox_by_turns_name(vox_by_turns turns) {
  return (unsigned)turns < 3 ? by_turns_names[turns] : "unknown";
}

int vox_by_turns_parse(const char *text, vox_by_turns *turns) {
  const int i = vox_name_index(text, by_turns_names, 3);
  if (i >= 0) *turns = (vox_by_turns)i;
  return i >= 0 ? 0 : -1;
}

int vox_cell_solver_use_parse(const char *text, vox_cell_solver_use *use) {
  int i = vox_name_index(text, cell_solver_names, 4);
  if (i >= 0) *use = (vox_cell_solver_use)i;
  return i >= 0 ? 0 : -1;
}

const char *vox_storage_name(vox_storage storage) {
  return (unsigned)storage < 3 ? storage_names[storage] : "unknown";
}

int vox_storage_parse(const char *text, vox_storage *storage) {
  int i = vox_name_index(text, storage_names, 3);
  if (i >= 0) *storage = (vox_storage)i;
  return i >= 0 ? 0 : -1;
}

const char *vox_convergence_string(vox_convergence reason) {
  switch (reason) {
  case VOX_CONVERGED_RTOL: return "converged (relative residual)";
  case VOX_CONVERGED_ZERO_RHS: return "converged (zero right-hand side)";
  case VOX_CONVERGED_ENERGY: return "converged (estimated energy error)";
  case VOX_CONVERGED_REACTION: return "converged (reactions' work)";
  case VOX_DIVERGED_MAX_ITERATIONS: return "not converged (iteration limit)";
  case VOX_DIVERGED_INDEFINITE: return "not converged (operator not positive definite)";
  case VOX_DIVERGED_NAN: return "not converged (NaN or infinity)";
  }
  return "unknown";
}

const char *vox_mg_cycle_name(vox_mg_cycle cycle) {
  return (unsigned)cycle < 3 ? mg_cycle_names[cycle] : "unknown";
}

int vox_mg_cycle_parse(const char *text, vox_mg_cycle *cycle) {
  int i = vox_name_index(text, mg_cycle_names, 3);
  if (i >= 0) *cycle = (vox_mg_cycle)i;
  return i >= 0 ? 0 : -1;
}

const char *vox_sparse_coarse_name(vox_sparse_coarse coarse) {
  return (unsigned)coarse < 3 ? sparse_coarse_names[coarse] : "unknown";
}

int vox_sparse_coarse_parse(const char *text, vox_sparse_coarse *coarse) {
  int i = strcmp(text, "geometric") == 0 ? VOX_SPARSE_COARSE_SPLIT
                                         : vox_name_index(text, sparse_coarse_names, 3);
  if (i >= 0) *coarse = (vox_sparse_coarse)i;
  return i >= 0 ? 0 : -1;
}

const char *vox_sa_fine_transfer_name(vox_sa_fine_transfer transfer) {
  return (unsigned)transfer < 2 ? sa_fine_transfer_names[transfer] : "unknown";
}

int vox_sa_fine_transfer_parse(const char *text, vox_sa_fine_transfer *transfer) {
  int i = vox_name_index(text, sa_fine_transfer_names, 2);
  if (i >= 0) *transfer = (vox_sa_fine_transfer)i;
  return i >= 0 ? 0 : -1;
}

vox_status vox_solver_options_check(vox_context *ctx, const vox_solver_options *o) {
#define REQUIRE(cond, ...)                                                        \
  if (!(cond)) return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, __VA_ARGS__)
  REQUIRE(o->rtol > 0 && o->rtol < 1, "solver tolerance %g not in (0, 1)", o->rtol);
  REQUIRE(o->max_iterations >= 1, "the solver needs at least one iteration");
  REQUIRE(o->energy_tol >= 0 && o->energy_tol < 1,
          "energy tolerance %g not in [0, 1) (0: the residual alone)", o->energy_tol);
  REQUIRE(o->cg_window >= 1 && o->cg_window <= VOX_CG_WINDOW_MAX,
          "CG tests' window %d not in 1 to %d", o->cg_window, (int)VOX_CG_WINDOW_MAX);
  REQUIRE(o->reaction_tol >= 0 && o->reaction_tol < 1,
          "reaction tolerance %g not in [0, 1) (0: off)", o->reaction_tol);
  REQUIRE((unsigned)o->preconditioner <= VOX_PC_MULTIGRID, "unknown preconditioner %d",
          (int)o->preconditioner);
  REQUIRE((unsigned)o->smoother <= VOX_SMOOTHER_CHEBYSHEV, "unknown smoother %d", (int)o->smoother);
  REQUIRE(o->smoothing_steps >= 1, "at least one smoothing step is needed");
  REQUIRE((unsigned)o->by_turns <= VOX_BY_TURNS_ON, "unknown by-turns choice %d",
          (int)o->by_turns);
  REQUIRE(o->fine_smoothing_steps >= VOX_FINE_SMOOTHING_AUTO,
          "fine smoothing steps %d must be >= -1 (0: as the others, -1: automatic)",
          o->fine_smoothing_steps);
  REQUIRE(o->mg_levels >= 0, "multigrid levels %d must be >= 0 (0: automatic)", o->mg_levels);
  REQUIRE(o->mg_coarse_dofs >= 0, "the coarsest level's unknowns %d must be >= 0 (0: automatic)",
          o->mg_coarse_dofs);
  REQUIRE((unsigned)o->precision <= VOX_PRECISION_MIXED, "unknown precision %d",
          (int)o->precision);
  REQUIRE((unsigned)o->storage <= VOX_STORAGE_SPARSE, "unknown storage %d", (int)o->storage);
  REQUIRE((unsigned)o->mg_cycle <= VOX_MG_CYCLE_AUTO, "unknown multigrid cycle %d",
          (int)o->mg_cycle);
  REQUIRE(o->jacobi_damping > 0 && o->jacobi_damping < 2, "Jacobi damping %g not in (0, 2)",
          o->jacobi_damping);
  REQUIRE(o->start_history >= 0 && o->start_history <= VOX_KSP_HISTORY_MAX,
          "start history of %d solutions not in [0, %d]", o->start_history,
          (int)VOX_KSP_HISTORY_MAX);
  REQUIRE(o->mg_bound_refresh >= 0, "multigrid bound refresh %d must be >= 0",
          o->mg_bound_refresh);
  const vox_sparse_pc_options *sp = &o->sparse;
  REQUIRE((unsigned)sp->coarse <= VOX_SPARSE_COARSE_SA, "unknown sparse coarse levels %d",
          (int)sp->coarse);
  REQUIRE(sp->block_levels >= VOX_SPARSE_ALL_LEVELS,
          "sparse block-smoothed levels %d must be >= -1 (-1: all)", sp->block_levels);
  for (int l = 0; l < VOX_SPARSE_MAX_DEGREES; l++)
    REQUIRE(sp->degree[l] >= 0 && sp->degree[l] < 64, "sparse Chebyshev degree %d not in [0, 63]",
            sp->degree[l]);
  REQUIRE((unsigned)sp->sa_fine_transfer <= VOX_SA_FINE_EXPLICIT, "unknown SA fine transfer %d",
          (int)sp->sa_fine_transfer);
#undef REQUIRE
  return VOX_OK;
}

/* Whether a solve takes the sparse (bone-only) storage: asked for, or AUTO
 * on a porous elasticity model with the multigrid preconditioner and no
 * densities (the sparse levels take E from a label's material or from
 * per-element moduli, not from a SIMP law) and a backend with a sparse
 * solver; `backend` NULL: one with a sparse solver. */
static int use_sparse(const vox_backend *backend, const vox_model *model, int densities,
                      const vox_solver_options *options) {
  if (options->storage == VOX_STORAGE_SPARSE) return 1;
  if (options->storage != VOX_STORAGE_AUTO || densities || (backend && !backend->ops->sparse) ||
      model->physics != VOX_PHYSICS_ELASTICITY || options->preconditioner != VOX_PC_MULTIGRID ||
      options->smoother != VOX_SMOOTHER_CHEBYSHEV)
    return 0;
  const int64_t ne = vox_grid_elements(&model->grid);
  int64_t solid = 0;
#pragma omp parallel for schedule(static) reduction(+ : solid)
  for (int64_t e = 0; e < ne; e++) solid += model->label[e] != 0;
  return (double)solid < VOX_SPARSE_AUTO_FRACTION * (double)ne;
}

/* The caller's element moduli: positive and finite on every non-empty
 * voxel (the first that is not is named). */
static vox_status check_moduli(vox_context *ctx, const vox_model *model, const double *moduli) {
  const int64_t ne = vox_grid_elements(&model->grid);
  int64_t bad = ne;
#pragma omp parallel for schedule(static) reduction(min : bad)
  for (int64_t i = 0; i < ne; i++)
    if (model->label[i] && !(moduli[i] > 0 && moduli[i] < 1e300) && i < bad) bad = i;
  if (bad < ne)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "element %lld: modulus %g is not a positive number", (long long)bad,
                     moduli[bad]);
  return VOX_OK;
}

/* The element moduli of the caller in place of the materials' (0 for empty
 * voxels whatever the caller says: they are not in the system). */
static vox_status set_moduli(vox_context *ctx, const vox_model *model, vox_fem *fem,
                             const double *moduli) {
  const size_t ne = fem->n_elements;
  double *e = malloc(ne * sizeof *e);
  if (!e) return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
  for (size_t i = 0; i < ne; i++) e[i] = model->label[i] ? moduli[i] : 0;
  const vox_backend_ops *o = fem->be->ops;
  vox_status s = o->vec->upload(fem->be, &fem->e_solid, e);
  if (s == VOX_OK) s = o->vec->upload(fem->be, &fem->moduli, e);
  free(e);
  return s == VOX_OK ? vox_fem_update(fem) : s;
}

struct vox_solve_plan {
  vox_sparse_hierarchy hierarchy; /* n_levels 0: none */
};

vox_status vox_solve_plan_create(vox_context *ctx, const vox_model *model, const double *moduli,
                                 const vox_solver_options *options, vox_solve_plan **out) {
  *out = NULL;
  if (moduli) TRY(check_moduli(ctx, model, moduli));
  vox_solve_plan *plan = calloc(1, sizeof *plan);
  if (!plan) return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
  /* the sparse storage of a backend that has it (both have) */
  vox_status s = VOX_OK;
  if (use_sparse(NULL, model, 0, options))
    s = vox_sparse_hierarchy_for(ctx, model, moduli, options, &plan->hierarchy);
  if (s != VOX_OK) {
    vox_solve_plan_free(plan);
    return s;
  }
  *out = plan;
  return VOX_OK;
}

vox_storage vox_solve_plan_storage(const vox_solve_plan *plan) {
  return plan && plan->hierarchy.n_levels > 0 ? VOX_STORAGE_SPARSE : VOX_STORAGE_FULL_BOX;
}

vox_storage vox_solve_storage_choice(const vox_model *model, const vox_solver_options *options) {
  return use_sparse(NULL, model, 0, options) ? VOX_STORAGE_SPARSE : VOX_STORAGE_FULL_BOX;
}

void vox_solve_plan_free(vox_solve_plan *plan) {
  if (!plan) return;
  vox_sparse_hierarchy_free(&plan->hierarchy);
  free(plan);
}

static vox_status solve(vox_context *ctx, vox_backend *backend, const vox_model *model,
                        const double *moduli, int use_density, double penalty, double emin_ratio,
                        vox_solve_plan *plan, const vox_solver_options *options,
                        double *displacement, vox_solve_result *results) {
  TRY(vox_solver_options_check(ctx, options));
  if (moduli && model->physics != VOX_PHYSICS_ELASTICITY)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "element moduli are for elasticity");
  if (moduli) TRY(check_moduli(ctx, model, moduli));
  /* densities keep the full box (AUTO) */
  if (use_sparse(backend, model, use_density, options)) {
    if (use_density)
      return vox_error(ctx, VOX_ERR_UNSUPPORTED, "the sparse storage takes no densities");
    vox_sparse_hierarchy *prepared =
        plan && plan->hierarchy.n_levels > 0 ? &plan->hierarchy : NULL;
    return vox_sparse_solve_elasticity_with(ctx, backend, model, moduli, options, prepared,
                                            displacement, results, NULL);
  }
  if (use_density && !model->density)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "the model has no density");
  TRY(vox_memory_check(backend, &model->grid, vox_physics_dofs_per_node(model->physics),
                       model->n_load_cases > 0 ? model->n_load_cases : 1,
                       vox_model_prescribes_motion(model), options, 0));
  vox_fem *fem;
  TRY(vox_fem_create(ctx, backend, model, &fem));
  const vox_backend_ops *o = backend->ops;
  vox_vec rho = {0}, u = {0};
  vox_status s = moduli ? set_moduli(ctx, model, fem, moduli) : VOX_OK;
  if (s == VOX_OK && use_density) {
    s = o->vec->create(backend, fem->n_elements, VOX_DOUBLE, &rho);
    if (s == VOX_OK) s = o->vec->upload(backend, &rho, model->density);
    if (s == VOX_OK)
      s = o->design->simp_moduli(backend, &rho, &fem->e_solid, penalty, emin_ratio, &fem->moduli);
    if (s == VOX_OK) s = vox_fem_update(fem);
  }
  if (s == VOX_OK) s = o->vec->create(backend, fem->n_dofs, VOX_DOUBLE, &u);
  /* the caller's start read where every process has one, the answer
   * written where it arrives (vox_results_place) */
  const vox_results_place place = vox_results(backend);
  if (s == VOX_OK && place != VOX_RESULTS_ELSEWHERE && !displacement)
    s = vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "no array for the displacements");
  for (int c = 0; c < fem->n_cases && s == VOX_OK; c++) {
    double *uc = displacement ? displacement + (size_t)c * fem->n_dofs : NULL;
    s = place == VOX_RESULTS_EVERY_PROCESS && !options->zero_start
            ? o->vec->upload(backend, &u, uc)
            : o->vec->set(backend, &u, 0);
    if (s == VOX_OK) s = vox_fem_solve(fem, c, &u, options, &results[c]);
    results[c].storage = VOX_STORAGE_FULL_BOX;
    results[c].levels = 0;
    results[c].setup_seconds = 0;
    if (s == VOX_OK) s = vox_vec_download_result(backend, &u, uc);
  }
  if (rho.data) o->vec->destroy(backend, &rho);
  if (u.data) o->vec->destroy(backend, &u);
  vox_fem_destroy(fem);
  return s;
}

vox_status vox_solve_elasticity(vox_context *ctx, vox_backend *backend, const vox_model *model,
                                int use_density, double penalty, double emin_ratio,
                                const vox_solver_options *options, double *displacement,
                                vox_solve_result *results) {
  return solve(ctx, backend, model, NULL, use_density, penalty, emin_ratio, NULL, options,
               displacement, results);
}

vox_status vox_solve_elasticity_moduli(vox_context *ctx, vox_backend *backend,
                                       const vox_model *model, const double *moduli,
                                       const vox_solver_options *options, double *displacement,
                                       vox_solve_result *results) {
  if (!moduli) return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "no element moduli");
  return solve(ctx, backend, model, moduli, 0, 1, 0, NULL, options, displacement, results);
}

vox_status vox_solve_elasticity_planned(vox_context *ctx, vox_backend *backend,
                                        const vox_model *model, const double *moduli,
                                        vox_solve_plan *plan, const vox_solver_options *options,
                                        double *displacement, vox_solve_result *results) {
  return solve(ctx, backend, model, moduli, 0, 1, 0, plan, options, displacement, results);
}
