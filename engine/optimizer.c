/* SPDX-License-Identifier: BSD-3-Clause */
/* Topology optimization (Martínez-Frutos et al. 2017, section 3): modified SIMP, sensitivity
 * or density filter, optimality-criteria update with a bisection for the
 * volume multiplier, continuation on p and q. The objective is the model's
 * own (objective.c: compliance, or a mechanism's output displacement) or a
 * function of a periodic cell's homogenized tensor (homogenize.c; Zhang et al. 2023);
 * the loop only needs its value and gradient (objective_ops below). The loop
 * is host code that calls backend operations; only scalars come back. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "design_constraints.h"
#include "design_start.h"
#include "efg_optimize.h"
#include "fem.h"
#include "homogenize.h"
#include "host_memory.h"
#include "memory_plan.h"
#include "mma_design.h"
#include "name_table.h"
#include "objective.h"
#include "optimizer_checkpoint.h"
#include "symmetry_group.h"
#include "voxfe/optimizer.h"

void vox_optimizer_options_default(vox_optimizer_options *o) {
  memset(o, 0, sizeof *o);
  o->volume_fraction = 0.3;
  o->penalty = 3;
  o->emin_ratio = 1e-9;
  o->filter = VOX_FILTER_SENSITIVITY;
  o->filter_radius = 1.5;
  o->move_limit = 0.2;
  o->damping = 0.5;
  o->q_max = 1;
  o->continuation = 1;
  o->continuation_start_p = 20;
  o->continuation_growth_p = 1.02;
  o->continuation_start_q = 15;
  o->continuation_growth_q = 1.01;
  o->poisson_beta = 0.8;
  o->poisson_eta = 0.6;
  o->poisson_gamma = 0.5;
  o->max_iterations = 100;
  o->change_tolerance = 0.01;
  o->objective_tolerance = 1e-3;
  o->constraint_tolerance = 1e-3;
  o->settle_iterations = 1;
  vox_solver_options_default(&o->solver);
  /* design iterations need less than an analysis: the design changes
   * anyway; a cell's less still (vox_optimizer_rtol) */
  o->solver.rtol = VOX_RTOL_AUTO;
  /* each solve starts from the best combination of the last two states:
   * fewer CG iterations for one product more (docs/benchmarks.md) */
  o->solver.start_history = 1;
  /* the coarse smoother bounds of a setup serve the next three design
   * iterations too (a solve that breaks down with them is redone with
   * fresh ones: fem.c): docs/engine.md */
  o->solver.mg_bound_refresh = 4;
  /* one Chebyshev step on the fine level, two on the coarse ones, where
   * that pays (vox_optimize resolves it): half the fine products of a
   * cycle for a few more CG iterations (docs/benchmarks.md) */
  o->solver.fine_smoothing_steps = VOX_FINE_SMOOTHING_AUTO;
  o->adjoint_gpu = VOX_ADJOINT_GPU_AUTO;
  o->density_min = VOX_DENSITY_MIN_AUTO;
  o->sensitivity_floor = VOX_SENSITIVITY_FLOOR_AUTO;
  vox_efg_options efg;
  vox_efg_options_default(&efg);
  o->efg_support_scale = efg.support_scale;
  o->efg_penalty_scale = efg.penalty_scale;
  o->update = VOX_UPDATE_OC;
  vox_mma_options_default(&o->mma);
  /* The design update's MMA has a = 0 and d = 1, which the dual method
   * needs: its Newton steps take one pass over the densities against the
   * primal-dual method's dozen, and it solves the subproblem exactly, as
   * TopOpt_in_PETSc's MMA does (docs/benchmarks.md) */
  o->mma.subproblem = VOX_MMA_DUAL;
  /* the geometric multigrid: fewer CG iterations and shorter runs than
   * the paper's block Jacobi in every case measured (docs/benchmarks.md) */
  o->efg_preconditioner = VOX_EFG_PC_MG;
  o->efg_sa_degree = 2;
  o->efg_sa_smoother = VOX_EFG_PC_SCHWARZ;
  o->efg_mg_coarse_dofs = 0; /* the backend's choice */
  o->efg_mg_lanczos_steps = 10;
  o->efg_mg_refactor = 1;
  /* 0.3: table 1 of Lu et al. 2021's solves 4-14 % shorter on the H200
   * with the same compliances and CG counts within 2 % (docs/benchmarks.md) */
  o->efg_mg_refactor_drift = 0.3;
  o->efg_record = 1;
  o->efg_penalty_patches = 1;
  o->efg_penalty_patch_weight = 1;
  o->efg_patch_size = 1;
  o->efg_mg_chebyshev_lower = 0.1;
  o->efg_penalty_relative = 1;
  o->cell_turned_fields = 1;
  o->cell_zz_from_hydrostatic = 1;
  o->efg_sa_aggregate = 3;
  o->efg_sa_strength = 0.2;
}

double vox_optimizer_rtol(const vox_optimizer_options *o) {
  if (o->solver.rtol != VOX_RTOL_AUTO) return o->solver.rtol;
  return o->cell_objective != VOX_CELL_NONE ? VOX_CELL_RTOL : 1e-6;
}

double vox_optimizer_sensitivity_floor(const vox_optimizer_options *o) {
  if (o->sensitivity_floor != VOX_SENSITIVITY_FLOOR_AUTO) return o->sensitivity_floor;
  return o->update == VOX_UPDATE_MMA ? VOX_MMA_SENSITIVITY_FLOOR : 1e-3;
}

static const char *const filter_names[] = {"none", "sensitivity", "density"};
static const char *const update_names[] = {"oc", "mma"};

const char *vox_design_update_name(vox_design_update update) {
  return (unsigned)update < 2 ? update_names[update] : "unknown";
}

int vox_design_update_parse(const char *text, vox_design_update *update) {
  const int i = vox_name_index(text, update_names, 2);
  if (i >= 0) *update = (vox_design_update)i;
  return i >= 0 ? 0 : -1;
}
static const char *const cell_objective_names[] = {"compliance", "bulk",        "shear",
                                                   "poisson",    "poisson-log", "custom"};

const char *vox_cell_objective_name(vox_cell_objective objective) {
  return (unsigned)objective < 6 ? cell_objective_names[objective] : "unknown";
}

int vox_cell_objective_parse(const char *text, vox_cell_objective *objective) {
  for (int i = 0; i < 6; i++)
    if (strcmp(text, cell_objective_names[i]) == 0) {
      *objective = (vox_cell_objective)i;
      return 0;
    }
  return -1;
}

unsigned vox_cell_objective_strains(const vox_optimizer_options *o) {
  switch (o->cell_objective) {
  case VOX_CELL_NONE: return 0;
  /* the bulk modulus: one solve, e_h' C^H e_h = 9 B */
  case VOX_CELL_BULK:
    return 0x40;
  case VOX_CELL_POISSON:
  case VOX_CELL_POISSON_LOG: return 0x07;
  case VOX_CELL_SHEAR: return 0x38;
  default: break;
  }
  if (o->custom || !o->expression) return 0x3f; /* a function does not say what it reads */
  unsigned strains = 0;
  for (int i = 0; i < 6; i++)
    for (int j = 0; j < 6; j++)
      if (vox_expression_uses(o->expression, i + 1, j + 1)) strains |= 1u << i | 1u << j;
  return strains;
}

const char *vox_strains_text(unsigned strains, char *buf, size_t size) {
  static const char *const names[] = {"xx", "yy", "zz", "xy", "yz", "zx", "hydrostatic"};
  size_t n = 0;
  if (size) buf[0] = 0;
  for (int s = 0; s < 7; s++)
    if ((strains >> s) & 1 && n + strlen(names[s]) + 1 < size)
      n += (size_t)snprintf(buf + n, size - n, "%s%s", n ? " " : "", names[s]);
  return buf;
}

static const char *const discretization_names[] = {"fe", "efg"};

const char *vox_discretization_name(vox_discretization discretization) {
  return (unsigned)discretization < 2 ? discretization_names[discretization] : "unknown";
}

int vox_discretization_parse(const char *text, vox_discretization *discretization) {
  const int i = vox_name_index(text, discretization_names, 2);
  if (i >= 0) *discretization = (vox_discretization)i;
  return i >= 0 ? 0 : -1;
}

const char *vox_filter_name(vox_filter_type filter) {
  return (unsigned)filter < 3 ? filter_names[filter] : "unknown";
}

int vox_filter_parse(const char *text, vox_filter_type *filter) {
  for (int i = 0; i < 3; i++)
    if (strcmp(text, filter_names[i]) == 0) {
      *filter = (vox_filter_type)i;
      return 0;
    }
  return -1;
}

const char *vox_stop_reason_string(vox_stop_reason reason) {
  switch (reason) {
  case VOX_STOP_CONVERGED: return "converged";
  case VOX_STOP_MAX_ITERATIONS: return "iteration limit reached";
  case VOX_STOP_EVALUATED: return "evaluated the given design";
  case VOX_STOP_CONTINUATION_UNFINISHED:
    return "iteration limit reached with continuation unfinished";
  case VOX_STOP_INTERRUPTED: return "interrupted";
  case VOX_STOP_SOLVER_FAILED: return "the state solve did not converge";
  }
  return "unknown";
}

static const struct {
  vox_stop_reason reason;
  const char *name;
} stop_names[] = {{VOX_STOP_CONVERGED, "converged"},
                  {VOX_STOP_MAX_ITERATIONS, "iteration_limit"},
                  {VOX_STOP_CONTINUATION_UNFINISHED, "continuation_unfinished"},
                  {VOX_STOP_INTERRUPTED, "interrupted"},
                  {VOX_STOP_EVALUATED, "evaluated"},
                  {VOX_STOP_SOLVER_FAILED, "solver_failed"}};

const char *vox_stop_reason_name(vox_stop_reason reason) {
  for (size_t i = 0; i < sizeof stop_names / sizeof stop_names[0]; i++)
    if (stop_names[i].reason == reason) return stop_names[i].name;
  return "unknown";
}

int vox_stop_reason_parse(const char *text, vox_stop_reason *reason) {
  for (size_t i = 0; i < sizeof stop_names / sizeof stop_names[0]; i++)
    if (strcmp(text, stop_names[i].name) == 0) {
      *reason = stop_names[i].reason;
      return 0;
    }
  return -1;
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static vox_status check_options(vox_context *ctx, const vox_optimizer_options *o) {
#define REQUIRE(cond, ...)                                                        \
  if (!(cond)) return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, __VA_ARGS__)
  REQUIRE(o->volume_fraction > 0 && o->volume_fraction <= 1, "volume fraction %g not in (0, 1]",
          o->volume_fraction);
  REQUIRE(o->penalty >= 1 && o->penalty <= VOX_PENALTY_MAX, "penalty %g not in [1, %g]",
          o->penalty, VOX_PENALTY_MAX);
  REQUIRE(o->emin_ratio > 0 && o->emin_ratio < 1, "Emin/E %g not in (0, 1)", o->emin_ratio);
  REQUIRE(o->filter == VOX_FILTER_NONE || o->filter_radius > 0, "filter radius %g must be > 0",
          o->filter_radius);
  REQUIRE(o->move_limit > 0 && o->move_limit <= 1, "move limit %g not in (0, 1]", o->move_limit);
  REQUIRE(o->damping > 0 && o->damping <= 1, "damping %g not in (0, 1]", o->damping);
  REQUIRE(o->q_max >= 1, "q %g must be >= 1", o->q_max);
  REQUIRE(o->max_iterations >= 0, "max iterations %d: at least 0 (0: evaluate the design)",
          o->max_iterations);
  REQUIRE(o->settle_iterations >= 1, "settle iterations %d: at least 1", o->settle_iterations);
  REQUIRE(o->solver.by_turns != VOX_BY_TURNS_ON || o->cell_objective == VOX_CELL_NONE,
          "by turns is for problems on a bounded grid: a periodic cell takes turns through "
          "its cell solver (phased)");
  REQUIRE(o->constraint_tolerance >= 0, "constraint tolerance %g: at least 0",
          o->constraint_tolerance);
  REQUIRE((unsigned)o->discretization <= VOX_DISCRETIZATION_EFG, "unknown discretization %d",
          (int)o->discretization);
  REQUIRE((unsigned)o->cell_objective <= VOX_CELL_CUSTOM, "unknown objective %d", (int)o->cell_objective);
  REQUIRE(o->cell_objective != VOX_CELL_POISSON || (o->poisson_beta > 0 && o->poisson_beta < 1),
          "Poisson objective: beta %g not in (0, 1)", o->poisson_beta);
  REQUIRE(o->cell_objective != VOX_CELL_POISSON_LOG || o->poisson_gamma > 0,
          "Poisson objective: gamma %g must be > 0", o->poisson_gamma);
  REQUIRE(o->cell_objective != VOX_CELL_CUSTOM || o->custom || o->expression,
          "custom objective without a function or an expression");
  REQUIRE((unsigned)o->symmetry <= VOX_SYMMETRY_ROTATE3, "unknown symmetry %d", (int)o->symmetry);
  REQUIRE(o->cell_turned_fields == 0 || o->cell_turned_fields == 1,
          "cell_turned_fields %d is not 0 or 1", o->cell_turned_fields);
  REQUIRE(o->cell_zz_from_hydrostatic == 0 || o->cell_zz_from_hydrostatic == 1,
          "cell_zz_from_hydrostatic %d is not 0 or 1", o->cell_zz_from_hydrostatic);
  REQUIRE(!o->continuation || (o->continuation_growth_p > 1 && o->continuation_growth_q > 1),
          "continuation growth factors must be > 1");
  REQUIRE(o->adjoint_gpu >= VOX_ADJOINT_GPU_NONE, "adjoint GPU %d is not a device index",
          o->adjoint_gpu);
  REQUIRE(o->checkpoint_every >= 0, "checkpoint every %d iterations: at least 0",
          o->checkpoint_every);
  REQUIRE(o->density_min == VOX_DENSITY_MIN_AUTO ||
              (o->density_min >= 0 && o->density_min < o->volume_fraction),
          "density minimum %g not in [0, volume fraction)", o->density_min);
  REQUIRE(o->sensitivity_floor == VOX_SENSITIVITY_FLOOR_AUTO ||
              (o->sensitivity_floor > 0 && o->sensitivity_floor <= 1),
          "sensitivity filter floor %g not in (0, 1]", o->sensitivity_floor);
  REQUIRE((unsigned)o->update <= VOX_UPDATE_MMA, "unknown design update %d", (int)o->update);
  REQUIRE(o->update != VOX_UPDATE_MMA || o->q_max == 1,
          "q %g: the intermediate-density exponent is part of the optimality-criteria update, "
          "not of MMA (use q 1)", o->q_max);
#undef REQUIRE
  if (o->update == VOX_UPDATE_MMA) TRY(vox_mma_options_check(ctx, &o->mma));
  return vox_solver_options_check(ctx, &o->solver);
}

/* Everything the loop keeps on the backend. */
enum { VOX_PARKED = 8 };
typedef struct opt_state {
  vox_fem *fem;        /* the cell's own (homog->fem) for cell objectives */
  vox_objective_state *objective; /* the model's objective (none for a cell) */
  vox_homog *homog;    /* cell objectives: the cell problems of the strains they read */
  double tensor[36], gradient[36]; /* C^H and d f / d C^H of the last evaluation */
  double gradient_hydrostatic;     /* d f / d (e_h' C^H e_h): the bulk objective's */
  double e_material;   /* cell objectives: E of the material (eq. 22's tau) */
  vox_filter *filter;
  /* per element: design variables, physical density, sensitivities, the
   * objective's element energies (also the loop's temporary once the
   * gradient has been made of them: the filter's output and the OC
   * update's new design), the design mask; dV/dx and the passive values
   * are vectors of their own only where they differ from the design mask
   * (dv: the density filter's transpose of it; passive: some element is
   * not design, the only ones whose passive value is read), else point to
   * it (vox_memory_optimizer_vectors counts them so) */
  vox_vec x, own_x_phys, dc, energy, design, own_dv, own_passive;
  /* the physical density is the design variables themselves without the
   * density filter (OC and the start give non-design elements their
   * passive values) */
  vox_vec *x_phys;
  const vox_vec *dv, *passive;
  int all_design;
  /* a phased cell solve (VOX_CELL_SOLVER_PHASED): the per-element vectors
   * wait in host memory while it runs (one buffer each, kept; valid: it
   * holds the vector's values), and the filter is made again after it */
  double *parked[VOX_PARKED];
  int parked_valid[VOX_PARKED];
  int parked_uniform[VOX_PARKED]; /* a constant one of one value (parked[i][0]): set, not sent */
  int filter_parked;
  int n_cases;
  double n_design;
  int adjoint_gpu; /* the device of the adjoint worker, -1: none */
  int turns;       /* by turns (vox_solver_options.by_turns, resolved) */
  double rho_min;  /* lower bound of the design densities (options.density_min resolved) */
  vox_mma_design *mma; /* the MMA update's state (VOX_UPDATE_MMA) */
  int mma_freed;        /* ... freed before a cell's final evaluation, */
  double mma_kkt;       /* ... whose last KKT residual is kept here */
  vox_constraint_set *constraints; /* the design constraints (design_constraints.h) */
  double *constraint_value;        /* the model's constraints' values at the last evaluation */
} opt_state;

static void state_free(vox_backend *be, opt_state *s) {
  vox_vec *v[] = {&s->x,      &s->own_x_phys, &s->dc,         &s->own_dv,
                  &s->energy, &s->design,     &s->own_passive};
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
    if (v[i]->data) be->ops->vec->destroy(be, v[i]);
  for (int i = 0; i < VOX_PARKED; i++) be->ops->host_free(be, s->parked[i]);
  vox_objective_destroy(s->objective);
  vox_mma_design_destroy(s->mma);
  vox_constraints_destroy(s->constraints);
  free(s->constraint_value);
  if (s->filter) be->ops->design->filter_destroy(be, s->filter);
  if (s->homog) vox_homog_destroy(s->homog); /* owns s->fem */
  else vox_fem_destroy(s->fem);
}

/* A second GPU for the adjoint when the options and the machine allow. */
static vox_status adjoint_device(vox_context *ctx, vox_backend *be, const vox_model *model,
                                 const vox_optimizer_options *opt, opt_state *s) {
  s->adjoint_gpu = -1;
  if (!vox_objective_has_adjoint(s->objective) || opt->adjoint_gpu == VOX_ADJOINT_GPU_NONE)
    return VOX_OK;
  const int cuda = vox_backend_device(be) == VOX_DEVICE_CUDA;
  const int count = vox_device_count(VOX_DEVICE_CUDA), own = cuda ? vox_backend_device_index(be) : -1;
  int index = opt->adjoint_gpu;
  if (index == VOX_ADJOINT_GPU_AUTO) {
    if (!cuda || count < 2) return VOX_OK; /* one device: after the state */
    index = (own + 1) % count;
  } else if (index >= count) {
    return vox_error(ctx, VOX_ERR_DEVICE, "adjoint GPU %d: %d CUDA device(s) present", index,
                     count);
  }
  vox_adjoint_worker *worker;
  TRY(vox_adjoint_worker_create(ctx, be, model, VOX_DEVICE_CUDA, index, &worker));
  s->adjoint_gpu = index;
  return vox_objective_use_adjoint_worker(s->objective, worker);
}

/* The filter on the fem's grid: periodic for a cell, whose filter wraps
 * around its faces as if the cell were tiled (Zhang et al. 2023, section 6.5). */
static vox_status make_filter(vox_backend *be, const vox_optimizer_options *opt, opt_state *s) {
  const vox_backend_ops *o = be->ops;
  return (s->fem->grid.periodic ? o->design->filter_create_periodic : o->design->filter_create)(
      be, &s->fem->grid, opt->filter_radius, s->fem->element_active, &s->filter);
}

/* The per-element vectors a phased cell solve parks (the optimizer's and
 * the fem's solid E), in a fixed order, and what their values are to it:
 * the design variables and the physical density change each iteration
 * (downloaded each time); the design mask, dV/dx, the passive values and
 * the solid E never do (downloaded once); the sensitivities and the element
 * energies are spent (the gradient makes them again after the solves):
 * freed without a copy. */
enum { PARK_LIVE, PARK_CONSTANT, PARK_SPENT };
enum {
  PARKED_X,
  PARKED_X_PHYS,
  PARKED_DC,
  PARKED_DV,
  PARKED_ENERGY,
  PARKED_DESIGN,
  PARKED_PASSIVE,
  PARKED_E_SOLID
};
static const int park_kind[VOX_PARKED] = {
    [PARKED_X] = PARK_LIVE,        [PARKED_X_PHYS] = PARK_LIVE,
    [PARKED_DC] = PARK_SPENT,      [PARKED_DV] = PARK_CONSTANT,
    [PARKED_ENERGY] = PARK_SPENT,  [PARKED_DESIGN] = PARK_CONSTANT,
    [PARKED_PASSIVE] = PARK_CONSTANT, [PARKED_E_SOLID] = PARK_CONSTANT};

static vox_vec *parked_vector(opt_state *s, int i) {
  vox_vec *all[VOX_PARKED] = {[PARKED_X] = &s->x,           [PARKED_X_PHYS] = &s->own_x_phys,
                              [PARKED_DC] = &s->dc,         [PARKED_DV] = &s->own_dv,
                              [PARKED_ENERGY] = &s->energy, [PARKED_DESIGN] = &s->design,
                              [PARKED_PASSIVE] = &s->own_passive,
                              [PARKED_E_SOLID] = &s->fem->e_solid};
  return all[i];
}

/* Whether h's n entries are one value, bit for bit. */
static int one_value(const double *h, size_t n) {
  size_t k = 1;
  while (k < n && !memcmp(&h[k], &h[0], sizeof *h)) k++;
  return n > 0 && k == n;
}

/* Vector i (where it exists) into host memory as its kind says, and off the
 * backend. */
static vox_status park_one(vox_backend *be, opt_state *s, int i) {
  vox_vec *v = parked_vector(s, i);
  if (!v->data) return VOX_OK;
  const size_t n = v->n;
  if (park_kind[i] != PARK_SPENT && !(park_kind[i] == PARK_CONSTANT && s->parked_valid[i])) {
    /* the part this process holds (an MPI rank's), where the backend tells it */
    const size_t held = vox_vec_held_n(be, v);
    if (!s->parked[i])
      TRY(be->ops->host_alloc(be, (held ? held : 1) * sizeof *s->parked[i],
                              (void **)&s->parked[i]));
    TRY(vox_vec_held_download(be, v, s->parked[i]));
    s->parked_valid[i] = 1;
    /* a constant of one value (an all-design mask, one material's solid E)
     * comes back by a set: one upload fewer each time, a double kept */
    if (park_kind[i] == PARK_CONSTANT && one_value(s->parked[i], held)) {
      const double value = s->parked[i][0];
      be->ops->host_free(be, s->parked[i]);
      s->parked[i] = NULL;
      TRY(be->ops->host_alloc(be, sizeof *s->parked[i], (void **)&s->parked[i]));
      s->parked[i][0] = value;
      s->parked_uniform[i] = 1;
    }
  }
  be->ops->vec->destroy(be, v);
  v->n = n; /* remembered: the sign of a parked vector (data NULL, n > 0) */
  return VOX_OK;
}

/* Vector i back on the backend where it is parked (a spent one with
 * whatever its new memory holds). */
static vox_status unpark_one(vox_backend *be, opt_state *s, int i) {
  vox_vec *v = parked_vector(s, i);
  if (v->data || !v->n) return VOX_OK;
  const vox_vector_ops *o = be->ops->vec;
  TRY(o->create(be, v->n, VOX_DOUBLE, v));
  if (park_kind[i] == PARK_SPENT) return VOX_OK;
  if (s->parked_uniform[i]) return o->set(be, v, s->parked[i][0]);
  return vox_vec_held_upload(be, v, s->parked[i]);
}

/* Every per-element vector off the backend, for the solves. */
static vox_status park(vox_backend *be, opt_state *s) {
  for (int i = 0; i < VOX_PARKED; i++) TRY(park_one(be, s, i));
  return VOX_OK;
}

/* The filter off the backend (made again by unpark_rest). */
static void filter_park(vox_backend *be, opt_state *s) {
  if (!s->filter) return;
  be->ops->design->filter_destroy(be, s->filter);
  s->filter = NULL;
  s->filter_parked = 1;
}

/* Around the solves, in the order the steps need them: the density and
 * the solid E (the moduli, C^H), then the spent ones (the gradient); the
 * rest and the filter once the gradient is made, the solid E and the
 * fields parked again (the filter and the update read neither; the next
 * solve holds the fields again). */
static vox_status unpark_some(vox_backend *be, opt_state *s, const int *which, int n) {
  for (int i = 0; i < n; i++) TRY(unpark_one(be, s, which[i]));
  return VOX_OK;
}

/* Every parked vector back but the solid E (only the moduli read it). */
static vox_status unpark_but_solid(vox_backend *be, opt_state *s) {
  for (int i = 0; i < VOX_PARKED; i++)
    if (i != PARKED_E_SOLID) TRY(unpark_one(be, s, i));
  return VOX_OK;
}

static vox_status unpark_rest(vox_backend *be, const vox_optimizer_options *opt, opt_state *s) {
  TRY(park_one(be, s, PARKED_E_SOLID));
  TRY(vox_homog_park_fields(s->homog));
  TRY(unpark_but_solid(be, s));
  if (s->filter_parked) TRY(make_filter(be, opt, s));
  s->filter_parked = 0;
  return VOX_OK;
}

/* By turns (vox_solver_options.by_turns), around an evaluation of the
 * model's objective, whose moduli are made: every per-element vector (the
 * solid E too) and the filter off the backend, the element energies back
 * (spent) where the evaluation makes them, then the solver's memory; after
 * it the other way round. The constant vectors go to host memory once, the
 * design and its physical density each time; the filter is made again.
 * (The loads wait in host memory from the start: vox_fem_park_forces.) */
static vox_status turn_to_solve(vox_backend *be, opt_state *s, int sensitivity) {
  filter_park(be, s);
  TRY(park(be, s));
  if (sensitivity) TRY(unpark_one(be, s, PARKED_ENERGY));
  return vox_fem_acquire_solver(s->fem);
}

static vox_status turn_to_update(vox_backend *be, const vox_optimizer_options *opt,
                                 opt_state *s) {
  TRY(vox_fem_release_solver(s->fem));
  for (int i = 0; i < VOX_PARKED; i++) TRY(unpark_one(be, s, i));
  if (s->filter_parked) TRY(make_filter(be, opt, s));
  s->filter_parked = 0;
  return VOX_OK;
}

/* The fem's moduli off the backend while a phased cell solve runs (the cell
 * solver has its own copy, and they are the density's: remade after). */
static void moduli_drop(vox_backend *be, vox_fem *fem) {
  const size_t n = fem->moduli.n;
  be->ops->vec->destroy(be, &fem->moduli);
  fem->moduli.n = n;
}

/* The fem's moduli of the physical density at penalty p (made again where
 * dropped: the operator reads them through its own pointer). */
static vox_status moduli_make(vox_backend *be, const vox_optimizer_options *opt, opt_state *s,
                              double p) {
  vox_fem *fem = s->fem;
  if (!fem->moduli.data) {
    TRY(be->ops->vec->create(be, fem->moduli.n, VOX_DOUBLE, &fem->moduli));
    TRY(be->ops->op->set_moduli(be, fem->op, &fem->moduli));
  }
  TRY(be->ops->design->simp_moduli(be, s->x_phys, &fem->e_solid, p, opt->emin_ratio, &fem->moduli));
  return vox_fem_update(fem);
}

/* The role of each label (void where no material has it). */
static void material_roles(const vox_model *model, vox_material_role role[256]) {
  for (int l = 0; l < 256; l++) role[l] = VOX_ROLE_VOID;
  for (int i = 0; i < model->n_materials; i++)
    role[model->materials[i].label] = model->materials[i].role;
}

/* Every element of the model is a design element: one pass over the
 * labels on the context's threads (a 512^3 cell's 134 M labels took 0.1 s on
 * one), which vox_optimize makes once. */
static int all_design(const vox_model *model) {
  vox_material_role role[256];
  material_roles(model, role);
  unsigned char other[256]; /* 1: a label that is not a design material's */
  for (int l = 0; l < 256; l++) other[l] = l == 0 || role[l] != VOX_ROLE_DESIGN;
  const int64_t ne = vox_grid_elements(&model->grid);
  const unsigned char *label = model->label;
  int64_t others = 0;
#pragma omp parallel for schedule(static) reduction(+ : others)
  for (int64_t e = 0; e < ne; e++) others += other[label[e]];
  return others == 0;
}

/* The optimizer's vectors per element (layout.h): the design variables,
 * the sensitivities, the objective's element energies and the design mask;
 * the physical density and dV/dx with the density filter; the passive
 * values where some element is not design. s NULL: counted only. */
static void state_layout(size_t ne, vox_filter_type filter, int every_design, opt_state *s,
                         vox_layout *l) {
  vox_layout_vec(l, "optimizer: design variables", ne, VOX_DOUBLE, s ? &s->x : NULL);
  vox_layout_vec(l, "optimizer: sensitivities", ne, VOX_DOUBLE, s ? &s->dc : NULL);
  vox_layout_vec(l, "optimizer: element energies", ne, VOX_DOUBLE, s ? &s->energy : NULL);
  vox_layout_vec(l, "optimizer: design mask", ne, VOX_DOUBLE, s ? &s->design : NULL);
  if (filter == VOX_FILTER_DENSITY) {
    vox_layout_vec(l, "optimizer: physical density", ne, VOX_DOUBLE, s ? &s->own_x_phys : NULL);
    vox_layout_vec(l, "optimizer: dV/dx", ne, VOX_DOUBLE, s ? &s->own_dv : NULL);
  }
  if (!every_design)
    vox_layout_vec(l, "optimizer: passive values", ne, VOX_DOUBLE, s ? &s->own_passive : NULL);
}

void vox_memory_optimizer_solver(const vox_model *model, const vox_optimizer_options *opt,
                                 vox_solver_options *out) {
  *out = opt->solver;
  /* One smoothing step on the fine level pays for elasticity on a bounded
   * grid, where the fine products are most of a cycle; not for a periodic
   * cell, whose solves stop after a few CG iterations at a loose tolerance,
   * nor for heat conduction, whose products are a third as costly: the
   * extra CG iterations cost more there (docs/benchmarks.md). */
  if (out->fine_smoothing_steps == VOX_FINE_SMOOTHING_AUTO)
    out->fine_smoothing_steps = opt->cell_objective == VOX_CELL_NONE &&
                                        model->physics == VOX_PHYSICS_ELASTICITY
                                    ? 1
                                    : 0;
  out->rtol = vox_optimizer_rtol(opt);
}

/* vox_memory_optimizer_vectors with all_design's answer given. */
static int optimizer_vectors(const vox_model *model, const vox_optimizer_options *opt,
                             int every_design) {
  vox_layout l;
  vox_layout_init(&l);
  state_layout(1, opt->filter, every_design, NULL, &l);
  vox_constraints_layout(model->design_constraints, model->n_design_constraints, opt->filter,
                         opt->update == VOX_UPDATE_MMA, 1, NULL, &l);
  int count = l.n;
  if (opt->update == VOX_UPDATE_MMA) {
    /* the method's own vectors and the design elements' indices, as many
     * as if every element were a design element: its rows are the
     * constraints, an equality two (design_constraints.h), or the one
     * volume */
    int rows = model->n_design_constraints > 0 ? 0 : 1;
    for (int i = 0; i < model->n_design_constraints; i++) {
      const vox_design_constraint *c = &model->design_constraints[i];
      rows += c->kind == VOX_CONSTRAINT_VOLUME && c->equal ? 2 : 1;
    }
    vox_layout mma;
    vox_layout_init(&mma);
    vox_mma_design_layout(1, rows, &mma);
    count += (int)ceil(vox_layout_bytes(&mma) / sizeof(double));
  }
  return count;
}

int vox_memory_optimizer_vectors(const vox_model *model, const vox_optimizer_options *opt) {
  return optimizer_vectors(model, opt, all_design(model));
}

/* Whether the turn about the cell's diagonal (x -> y -> z) leaves the
 * moduli unchanged at every design iteration: the symmetries reflect6 and
 * rotate3 include it, and keep the design and passive voxels on whole
 * orbits (design_start.c refuses a model without); the materials must then
 * all be equally stiff, or their labels could break it. */
static int turn_keeps_cell(const vox_model *model, const vox_optimizer_options *opt) {
  if (opt->symmetry != VOX_SYMMETRY_REFLECT6 && opt->symmetry != VOX_SYMMETRY_ROTATE3) return 0;
  for (int m = 1; m < model->n_materials; m++)
    if (model->materials[m].youngs_modulus != model->materials[0].youngs_modulus) return 0;
  return 1;
}

/* The system, the optimizer's vectors and the objective on the backend. */
static vox_status state_device(vox_context *ctx, vox_backend *be, const vox_model *model,
                               const vox_optimizer_options *opt, int every_design,
                               opt_state *s) {
  const int cell = opt->cell_objective != VOX_CELL_NONE;
  if (cell) {
    /* only the strains the objective reads: their fields and solves */
    TRY(vox_homog_create_fields(ctx, be, model, vox_homog_fields_for(&opt->solver),
                                vox_cell_objective_strains(opt), &s->homog));
    s->fem = s->homog->fem;
    s->e_material = s->homog->e_solid;
    vox_homog_turn_fields(s->homog, opt->cell_turned_fields && turn_keeps_cell(model, opt));
    /* phased: the fem's moduli, its solid E and the fields wait for the
     * first evaluation, which makes the moduli from the density (on the
     * device with the vectors and the filter below, they would top its
     * turns) */
    if (s->homog->phased && s->homog->cell) {
      moduli_drop(be, s->fem);
      TRY(park_one(be, s, PARKED_E_SOLID));
      TRY(vox_homog_park_fields(s->homog));
    }
  } else {
    TRY(vox_fem_create(ctx, be, model, &s->fem));
    /* by turns: the solver's memory goes before the design's comes */
    s->turns = opt->solver.by_turns == VOX_BY_TURNS_ON;
    if (s->turns) TRY(vox_fem_release_solver(s->fem));
    if (s->turns) TRY(vox_fem_park_forces(s->fem));
  }
  const size_t ne = s->fem->n_elements;
  /* a cell's fields live in s->homog */
  s->n_cases = cell ? 0 : s->fem->n_cases;
  vox_layout layout;
  vox_layout_init(&layout);
  state_layout(ne, opt->filter, every_design, s, &layout);
  TRY(vox_layout_create(be, &layout));
  s->x_phys = opt->filter == VOX_FILTER_DENSITY ? &s->own_x_phys : &s->x;
  s->adjoint_gpu = -1;
  if (!cell) {
    TRY(vox_objective_create(ctx, s->fem, model, &s->objective));
    TRY(adjoint_device(ctx, be, model, opt, s));
  }
  s->rho_min = opt->density_min != VOX_DENSITY_MIN_AUTO                ? opt->density_min
               : s->objective && vox_objective_has_adjoint(s->objective) ? 1e-3
                                                                        : 0;
  return VOX_OK;
}

/* Design mask, passive densities and the starting design, from the labels. */
static vox_status state_init(vox_context *ctx, vox_backend *be, const vox_model *model,
                             const vox_optimizer_options *opt, int every_design, opt_state *s) {
  const vox_backend_ops *o = be->ops;
  const int cell = opt->cell_objective != VOX_CELL_NONE;
  /* A cell's start (no adjoint: its least density is known now) is made
   * on the host while its system is set up on the device; other problems'
   * least density waits for their objective. */
  vox_design_start start = {0};
  if (cell)
    TRY(vox_design_start_begin(ctx, model, opt,
                               opt->density_min != VOX_DENSITY_MIN_AUTO ? opt->density_min : 0, 1,
                               &start));
  vox_status st = state_device(ctx, be, model, opt, every_design, s);
  if (st == VOX_OK && !cell)
    st = vox_design_start_begin(ctx, model, opt, s->rho_min, 0, &start);
  if (st == VOX_OK) st = vox_design_start_end(ctx, &start);
  if (st == VOX_OK) {
    s->n_design = (double)start.n_design;
    s->all_design = s->n_design == (double)s->fem->n_elements;
    s->passive = &s->design; /* read only where the mask is 0 */
    st = o->vec->upload(be, &s->design, start.design);
  }
  if (st == VOX_OK && !s->all_design) {
    st = o->vec->upload(be, &s->own_passive, start.passive);
    s->passive = &s->own_passive;
  }
  if (st == VOX_OK) st = o->vec->upload(be, &s->x, start.x);
  vox_design_start_free(&start);
  TRY(st);

  if (opt->filter != VOX_FILTER_NONE) TRY(make_filter(be, opt, s));
  /* dV/dx: 1 on design elements, through the filter's transpose for the
   * density filter (the volume is measured on the physical density). */
  s->dv = &s->design;
  if (opt->filter == VOX_FILTER_DENSITY) {
    TRY(o->design->filter_transpose(be, s->filter, &s->design, &s->own_dv));
    s->dv = &s->own_dv;
  }
  TRY(vox_constraints_create(be, model, opt, s->filter, &s->design, s->dv, s->n_design,
                             opt->update == VOX_UPDATE_MMA, &s->constraints));
  if (model->n_design_constraints > 0 &&
      !(s->constraint_value =
            calloc((size_t)model->n_design_constraints, sizeof *s->constraint_value)))
    return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
  if (opt->update == VOX_UPDATE_MMA)
    TRY(vox_mma_design_create(be, &s->design, s->rho_min, opt,
                              vox_constraints_rows(s->constraints), &s->mma));
  return VOX_OK;
}

/* x_phys from design variables x: the density filter, then passive values. */
static vox_status physical_density(vox_backend *be, const vox_optimizer_options *opt,
                                   opt_state *s, const vox_vec *x, vox_vec *x_phys) {
  const vox_backend_ops *o = be->ops;
  if (opt->filter != VOX_FILTER_DENSITY) return x_phys == x ? VOX_OK : o->vec->copy(be, x_phys, x);
  TRY(o->design->filter_apply(be, s->filter, x, x_phys));
  if (s->all_design) return VOX_OK;
  TRY(o->vec->mult(be, x_phys, x_phys, &s->design)); /* passive elements keep */
  return o->vec->axpy(be, x_phys, 1, s->passive);    /* their fixed density */
}

static vox_status volume_fraction(vox_backend *be, opt_state *s, const vox_vec *x_phys,
                                  double *out) {
  double v;
  TRY(be->ops->vec->dot(be, x_phys, &s->design, &v));
  *out = v / s->n_design;
  return VOX_OK;
}

/* M_nd = 100% * 4 sum rho (1 - rho) / N over design elements (eq. 13);
 * temp: a vector per element that is free to overwrite. */
static vox_status non_discreteness(vox_backend *be, opt_state *s, vox_vec *temp, double *out) {
  double sum, sum_sq;
  TRY(be->ops->vec->dot(be, s->x_phys, &s->design, &sum));
  TRY(be->ops->vec->mult(be, temp, s->x_phys, &s->design));
  TRY(be->ops->vec->dot(be, temp, s->x_phys, &sum_sq));
  *out = 100 * 4 * (sum - sum_sq) / s->n_design;
  return VOX_OK;
}

/* ---- objectives -------------------------------------------------------------
 * An objective evaluates itself at the physical density (state solves
 * included; with `sensitivity`, also what its gradient needs) and then gives
 * its gradient with respect to the physical density in s->dc. The OC update
 * takes any signs there: it moves an element up where -dc > 0 and down
 * where it is not. Two kinds: the model's own objective (objective.c:
 * compliance or a mechanism's output displacement) and a function of a
 * periodic cell's homogenized tensor (homogenize.c). */
typedef struct objective_ops {
  vox_status (*evaluate)(vox_backend *be, const vox_optimizer_options *opt, opt_state *s,
                         int iteration, double p, int sensitivity, double *value,
                         int *cg_iterations, vox_solve_result *failed);
  vox_status (*gradient)(vox_backend *be, const vox_optimizer_options *opt, opt_state *s,
                         double p);
} objective_ops;

/* The model's objective: solves its problems at the current moduli and
 * returns its value; with `sensitivity`, s->energy holds the element
 * energies whose SIMP derivative is its sensitivity (objective.h). */
static vox_status analyse(vox_backend *be, const vox_optimizer_options *opt, opt_state *s,
                          double p, int sensitivity, double *objective, int *cg_iterations,
                          vox_solve_result *failed) {
  const vox_backend_ops *o = be->ops;
  TRY(o->design->simp_moduli(be, s->x_phys, &s->fem->e_solid, p, opt->emin_ratio, &s->fem->moduli));
  if (s->turns) TRY(turn_to_solve(be, s, sensitivity));
  else TRY(vox_fem_update(s->fem));
  TRY(vox_objective_evaluate(s->objective, &opt->solver, sensitivity ? &s->energy : NULL,
                             objective, cg_iterations, failed));
  return s->turns ? turn_to_update(be, opt, s) : VOX_OK;
}

static vox_status problem_evaluate(vox_backend *be, const vox_optimizer_options *opt,
                                   opt_state *s, int iteration, double p, int sensitivity,
                                   double *value, int *cg_iterations, vox_solve_result *failed) {
  (void)iteration;
  return analyse(be, opt, s, p, sensitivity, value, cg_iterations, failed);
}

/* eq. 7 of Martínez-Frutos et al. 2017, from the energies of the state and adjoint */
static vox_status problem_gradient(vox_backend *be, const vox_optimizer_options *opt,
                                   opt_state *s, double p) {
  return be->ops->design->simp_sensitivity(be, s->x_phys, &s->fem->e_solid, &s->energy, p,
                                           opt->emin_ratio, &s->dc);
}

/* The built-in functions of C^H (Zhang et al. 2023, eq. 19-22), value and gradient:
 * g on the entries of C^H, g_hydrostatic on e_h' C^H e_h (`hydrostatic`,
 * vox_homog.hydrostatic). */
static int cell_function(const vox_optimizer_options *opt, double e_material, const double *c,
                         double hydrostatic, int k, double *f, double *g, double *g_hydrostatic) {
  memset(g, 0, 36 * sizeof *g);
  *g_hydrostatic = 0;
  const double trace = c[0] + c[7] + c[14], off = c[1] + c[2] + c[8];
  switch (opt->cell_objective) {
  case VOX_CELL_BULK: /* -B = -e_h' C^H e_h / 9: one solve in the loop (homogenize.h) */
    *f = -hydrostatic / 9;
    *g_hydrostatic = -1.0 / 9;
    return 0;
  case VOX_CELL_SHEAR:
    *f = -(c[21] + c[28] + c[35]) / 3;
    for (int i = 3; i < 6; i++) g[i * 7] = -1.0 / 3;
    return 0;
  case VOX_CELL_POISSON: {
    const double beta_k = pow(opt->poisson_beta, k);
    *f = off - beta_k * trace;
    for (int i = 0; i < 3; i++)
      for (int j = 0; j < 3; j++) g[i * 6 + j] = i == j ? -beta_k : 0.5;
    return 0;
  }
  case VOX_CELL_POISSON_LOG: {
    const double eta = opt->poisson_eta, gamma = opt->poisson_gamma;
    const double tau = opt->poisson_tau != 0 ? opt->poisson_tau : -1 / pow(e_material, gamma);
    const double ratio = off / trace, arg = 1 + eta * ratio;
    if (!(trace > 0) || !(arg > 0)) return -1;
    *f = log(arg) + tau * pow(trace, gamma);
    /* d/d off and d/d trace */
    const double d_off = eta / (arg * trace);
    const double d_trace = -eta * off / (arg * trace * trace) + tau * gamma * pow(trace, gamma - 1);
    for (int i = 0; i < 3; i++)
      for (int j = 0; j < 3; j++) g[i * 6 + j] = i == j ? d_trace : 0.5 * d_off;
    return 0;
  }
  default:
    return opt->custom(opt->custom_self, c, k, f, g);
  }
}

static vox_status cell_evaluate(vox_backend *be, const vox_optimizer_options *opt, opt_state *s,
                                int iteration, double p, int sensitivity, double *value,
                                int *cg_iterations, vox_solve_result *failed) {
  vox_homog *h = s->homog;
  /* C^H in the energy form, which needs no vector of ones */
  if (!h->phased || !h->cell) {
    TRY(moduli_make(be, opt, s, p));
    TRY(vox_homog_solve(h, &opt->solver, NULL, s->tensor, cg_iterations, failed));
  } else {
    /* A phased solve has the device to itself: the filter goes, the moduli
     * are made (the solid E back for them), every per-element vector is
     * parked, and the moduli go too once the cell solver has its copy.
     * Then back what C^H and the gradient need (with the moduli again), or
     * everything where no gradient follows. */
    static const int density[] = {PARKED_X, PARKED_X_PHYS, PARKED_E_SOLID},
                     spent[] = {PARKED_DC, PARKED_ENERGY};
    filter_park(be, s);
    TRY(park_one(be, s, PARKED_DC));
    TRY(park_one(be, s, PARKED_ENERGY));
    TRY(unpark_one(be, s, PARKED_E_SOLID));
    TRY(moduli_make(be, opt, s, p));
    TRY(park(be, s));
    TRY(vox_homog_prepare(h));
    moduli_drop(be, s->fem);
    TRY(vox_homog_solve(h, &opt->solver, NULL, NULL, cg_iterations, failed));
    TRY(unpark_some(be, s, density, 3));
    TRY(moduli_make(be, opt, s, p));
    TRY(vox_homog_energy_tensor(h, s->tensor));
    moduli_drop(be, s->fem);
    TRY(unpark_some(be, s, spent, 2));
    if (!sensitivity) TRY(unpark_rest(be, opt, s));
  }
  s->gradient_hydrostatic = 0;
  if (opt->cell_objective == VOX_CELL_CUSTOM && !opt->custom) {
    if (vox_expression_evaluate(be->ctx, opt->expression, s->tensor, iteration, value,
                                s->gradient) == VOX_OK)
      return VOX_OK;
    char message[512]; /* the expression's own words, naming its character */
    snprintf(message, sizeof message, "%s", vox_context_message(be->ctx));
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT,
                     "the custom objective at the homogenized tensor of design iteration %d: %s",
                     iteration, message);
  }
  if (cell_function(opt, s->e_material, s->tensor, s->homog->hydrostatic, iteration, value,
                    s->gradient, &s->gradient_hydrostatic) != 0 ||
      !isfinite(*value))
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT,
                     "the %s objective is not defined at the homogenized tensor of iteration %d",
                     vox_cell_objective_name(opt->cell_objective), iteration);
  return VOX_OK;
}

static vox_status cell_gradient(vox_backend *be, const vox_optimizer_options *opt, opt_state *s,
                                double p) {
  TRY(vox_homog_gradient(s->homog, s->gradient, s->gradient_hydrostatic, s->x_phys, p,
                         opt->emin_ratio, &s->energy, &s->dc));
  return s->homog->phased && s->homog->cell ? unpark_rest(be, opt, s) : VOX_OK;
}

/* The volume fraction of the design domain (minimum weight under the
 * design constraints): the states are solved for the compliance
 * constraints, its gradient with respect to the physical density is
 * 1 / N on the design elements (the loop takes it through the density
 * filter's transpose; the sensitivity filter, a heuristic for the
 * compliance's gradient, does not apply to it). */
static vox_status volume_evaluate(vox_backend *be, const vox_optimizer_options *opt, opt_state *s,
                                  int iteration, double p, int sensitivity, double *value,
                                  int *cg_iterations, vox_solve_result *failed) {
  (void)iteration, (void)sensitivity;
  double compliance;
  TRY(analyse(be, opt, s, p, 0, &compliance, cg_iterations, failed));
  return volume_fraction(be, s, s->x_phys, value);
}

static vox_status volume_gradient(vox_backend *be, const vox_optimizer_options *opt, opt_state *s,
                                  double p) {
  (void)opt, (void)p;
  TRY(be->ops->vec->set(be, &s->dc, 0));
  return be->ops->vec->axpy(be, &s->dc, 1 / s->n_design, &s->design);
}

static const objective_ops problem_objective = {problem_evaluate, problem_gradient};
static const objective_ops volume_objective_ops = {volume_evaluate, volume_gradient};
static const objective_ops cell_objective = {cell_evaluate, cell_gradient};

/* OC update (eq. 9, 10): sensitivities of either sign (a mechanism's
 * output displacement grows with material in some places and shrinks with
 * it in others): B_e = max(0, -dc_e) / (lambda dv_e), so an element whose
 * material works against the objective (dc_e > 0) gets B_e = 0 and loses
 * material at the move limit, as Sigmund's mechanism OC clips B at a small
 * positive number. Bisection on the volume multiplier so that the
 * physical volume fraction meets the target; ends on the feasible side.
 * The volume is linear in the new design variables, with the weights dv
 * (design, or its transpose through the density filter), so the backend
 * evaluates it for VOX_OC_LAMBDAS multipliers, spaced evenly in log(lambda)
 * over the bracket, in one pass (Martínez-Frutos et al. 2017, algorithm 8): each round shrinks
 * the bracket VOX_OC_LAMBDAS + 1 times, and only the volumes cross to the
 * host. */
static vox_status oc_update(vox_backend *be, const vox_optimizer_options *opt, opt_state *s,
                            double q, vox_vec *x_new) {
  const vox_backend_ops *o = be->ops;
  double dc_max;
  TRY(o->vec->set(be, x_new, 0)); /* max |dc| as the distance from 0 */
  TRY(o->vec->max_abs_diff(be, &s->dc, x_new, &dc_max));
  double hi = 1e9 * (dc_max > 0 ? dc_max : 1);
  const double lambda_min = 1e-40 * hi, target = opt->volume_fraction * s->n_design;
  double lo = lambda_min;
  while ((hi - lo) > 1e-9 * (hi + lo) && hi > lambda_min) {
    double lambda[VOX_OC_LAMBDAS], volume[VOX_OC_LAMBDAS];
    const double log_lo = log(lo), step = (log(hi) - log_lo) / (VOX_OC_LAMBDAS + 1);
    for (int j = 0; j < VOX_OC_LAMBDAS; j++) lambda[j] = exp(log_lo + (j + 1) * step);
    TRY(o->design->oc_volumes(be, &s->x, &s->dc, s->dv, &s->design, s->passive, lambda,
                              VOX_OC_LAMBDAS, opt->move_limit, opt->damping, q, s->rho_min,
                              volume));
    /* the volume falls as lambda grows: the first multiplier at or under
     * the target closes the bracket from above */
    int j = 0;
    while (j < VOX_OC_LAMBDAS && volume[j] > target) j++;
    const double new_lo = j > 0 ? lambda[j - 1] : lo, new_hi = j < VOX_OC_LAMBDAS ? lambda[j] : hi;
    if (new_lo == lo && new_hi == hi) break; /* the bracket no longer shrinks in doubles */
    lo = new_lo, hi = new_hi;
  }
  return o->design->oc_update(be, &s->x, &s->dc, s->dv, &s->design, s->passive, hi, opt->move_limit,
                              opt->damping, q, s->rho_min, x_new);
}

/* Penalties of eq. 11 and 12 for 1-based iteration k. */
static void continuation(const vox_optimizer_options *o, int k, double *p, double *q) {
  if (!o->continuation) {
    *p = o->penalty;
    *q = o->q_max;
    return;
  }
  *p = k <= o->continuation_start_p ? 1 : fmin(o->penalty, *p * o->continuation_growth_p);
  *q = k <= o->continuation_start_q ? 1 : fmin(o->q_max, *q * o->continuation_growth_q);
}

/* Appends the row, and the model's design constraints' values at it (rows
 * of a model's earlier history without them get NaN). */
static vox_status append_history(vox_context *ctx, vox_model *model, const vox_history_row *row,
                                 const double *constraint_value) {
  const size_t nc = (size_t)model->n_design_constraints, n = model->n_history;
  if (nc > 0) {
    double *c = realloc(model->history_constraint, (n + 1) * nc * sizeof *c);
    if (!c) return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
    if (!model->history_constraint)
      for (size_t i = 0; i < n * nc; i++) c[i] = NAN;
    model->history_constraint = c;
    memcpy(c + n * nc, constraint_value, nc * sizeof *c);
  }
  vox_history_row *h = realloc(model->history, (n + 1) * sizeof *h);
  if (!h) return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
  model->history = h;
  model->history[model->n_history++] = *row;
  return VOX_OK;
}

/* Keeps the physical density of this iteration in the model. */
static vox_status take_snapshot(vox_context *ctx, vox_backend *be, opt_state *s, vox_model *model,
                                int32_t iteration) {
  double *density = vox_host_malloc(s->fem->n_elements * sizeof *density);
  if (!density) return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
  vox_status st = be->ops->vec->download(be, s->x_phys, density);
  if (st == VOX_OK) st = vox_model_add_snapshot(ctx, model, iteration, density);
  vox_host_free(density);
  return st;
}

/* Brings the final state back into the model. */
static vox_status store_results(vox_context *ctx, vox_backend *be, opt_state *s, vox_model *model) {
  const size_t ne = s->fem->n_elements, nd = s->fem->n_dofs;
  double *density = realloc(model->density, ne * sizeof *density);
  if (!density) return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
  model->density = density;
  double *u = NULL;
  if (!s->homog) {
    u = realloc(model->displacement, (size_t)s->n_cases * nd * sizeof *u);
    if (!u) return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
    model->displacement = u;
  }
  TRY(be->ops->vec->download(be, s->x_phys, density));
  model->stage = VOX_STAGE_DESIGN;
  /* an element-free Galerkin design's nodal densities are not this design's */
  free(model->nodal_density);
  model->nodal_density = NULL;
  if (s->homog) { /* a cell keeps no state fields: C^H is its result */
    free(model->displacement);
    model->displacement = NULL;
    if (!model->cell_tensor && !(model->cell_tensor = malloc(sizeof s->tensor)))
      return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
    memcpy(model->cell_tensor, s->tensor, sizeof s->tensor);
    return VOX_OK;
  }
  for (int c = 0; c < s->n_cases; c++)
    TRY(be->ops->vec->download(be, vox_objective_state_vector(s->objective, c), u + c * nd));
  if (model->n_load_cases < 1) TRY(vox_model_set_load_cases(ctx, model, 1));
  return VOX_OK;
}

/* Frees what the loop needs and the end does not (the final evaluation,
 * volume, M_nd and the results need x_phys, design and dc, M_nd's
 * temporary): the room in which a cell's final evaluation allocates the
 * fields of the strains its objective did not solve (memory_plan.c counts
 * the larger of the two phases). */
static void final_room(vox_backend *be, opt_state *s) {
  /* (the design variables stay where they are the physical density) */
  vox_vec *v[] = {s->x_phys == &s->x ? NULL : &s->x, &s->own_dv, &s->energy, &s->own_passive};
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
    if (v[i] && v[i]->data) be->ops->vec->destroy(be, v[i]);
  if (s->filter) be->ops->design->filter_destroy(be, s->filter);
  s->filter = NULL;
  /* MMA's vectors (on the device with the GPU), of which the result reads
   * the KKT residual only */
  if (s->mma) {
    s->mma_kkt = vox_mma_design_kkt(s->mma);
    s->mma_freed = 1;
    vox_mma_design_destroy(s->mma);
    s->mma = NULL;
  }
}

/* Hands the state after the loop's iteration to options.checkpoint, with
 * the model as a design file of that moment: the density of the design
 * variables then, no state fields (the checkpoint holds them), the history
 * and snapshots so far. (The loop has read the model's density and
 * displacement, its start, before the first iteration.) */
static vox_status checkpoint(vox_context *ctx, vox_backend *be, vox_model *model,
                             const vox_optimizer_options *opt, opt_state *s,
                             const vox_loop_state *loop) {
  vox_checkpoint state;
  TRY(vox_loop_save(be, model, opt, loop, &s->x, s->fem, s->objective, s->homog, &state));
  if (s->mma) {
    vox_status saved = vox_mma_design_save(s->mma, &state);
    if (saved != VOX_OK) {
      vox_checkpoint_free(&state);
      return saved;
    }
  }
  double *density = realloc(model->density, s->fem->n_elements * sizeof *density);
  vox_status st = density ? VOX_OK : vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
  if (density) model->density = density;
  if (st == VOX_OK) st = be->ops->vec->download(be, s->x_phys, density);
  if (st == VOX_OK) {
    free(model->displacement);
    model->displacement = NULL;
    free(model->nodal_density); /* an element-free Galerkin start's, not this design's */
    model->nodal_density = NULL;
    model->stage = VOX_STAGE_DESIGN;
    model->optimization_end = (vox_optimization_end){0};
    st = opt->checkpoint(opt->checkpoint_self, model, &state);
  }
  vox_checkpoint_free(&state);
  return st;
}

/* What the model's design constraints ask of the options, before anything
 * is set up: the optimality-criteria update meets one volume of the whole
 * design domain by its bisection and nothing else; the element-free
 * Galerkin loop and the periodic cells take none. */
static vox_status check_design_constraints(vox_context *ctx, const vox_model *model,
                                           const vox_optimizer_options *opt) {
  const int n = model->n_design_constraints;
  const int volume_objective = model->objective == VOX_OBJECTIVE_VOLUME;
  if (n == 0 && !volume_objective) return VOX_OK;
  if (opt->cell_objective != VOX_CELL_NONE)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "the %s objective of a periodic cell takes no design constraints (the "
                     "model has %d)", vox_cell_objective_name(opt->cell_objective), n);
  if (opt->discretization == VOX_DISCRETIZATION_EFG)
    return vox_error(ctx, VOX_ERR_UNSUPPORTED,
                     "the element-free Galerkin discretization takes the volume fraction as its "
                     "one constraint, not the model's design constraints or the volume "
                     "objective (use --discretization fe)");
  if (opt->update != VOX_UPDATE_OC) return VOX_OK;
  const vox_design_constraint *c = n > 0 ? &model->design_constraints[0] : NULL;
  if (volume_objective || n > 1 || c->kind != VOX_CONSTRAINT_VOLUME || c->label != 0) {
    char why[160];
    if (volume_objective)
      snprintf(why, sizeof why, "the volume objective");
    else if (n > 1)
      snprintf(why, sizeof why, "%d design constraints", n);
    else if (c->kind == VOX_CONSTRAINT_COMPLIANCE)
      snprintf(why, sizeof why, "the compliance constraint '%s'", c->name);
    else
      snprintf(why, sizeof why, "the volume constraint '%s' of label %d", c->name, c->label);
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "the optimality-criteria update (optimizer oc) meets one volume constraint "
                     "of the whole design domain, not %s: use the method of moving asymptotes "
                     "(optimizer mma)", why);
  }
  return VOX_OK;
}

static vox_status check_problem(vox_context *ctx, const vox_model *model) {
  const vox_grid *g = &model->grid;
  for (size_t i = 0; i < model->n_constraints; i++) {
    const vox_constraint *c = &model->constraints[i];
    if (c->value != 0)
      return vox_error(ctx, VOX_ERR_UNSUPPORTED,
                       "constraint %zu prescribes %g %s at node x %lld, y %lld, z %lld: the "
                       "optimizer takes supports held at 0 and forces, not prescribed non-zero "
                       "%s",
                       i, c->value, model->physics == VOX_PHYSICS_HEAT ? "K" : "mm",
                       (long long)(c->node % (g->nx + 1)),
                       (long long)(c->node / (g->nx + 1) % (g->ny + 1)),
                       (long long)(c->node / ((g->nx + 1) * (g->ny + 1))),
                       model->physics == VOX_PHYSICS_HEAT ? "temperatures" : "displacements");
  }
  if (model->n_loads == 0)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "the model has no loads: nothing to optimize");
  TRY(vox_model_check_cases_loaded(ctx, model));
  uint8_t carries[256] = {0}; /* a passive void is Emin for good: it carries nothing */
  for (int i = 0; i < model->n_materials; i++)
    carries[model->materials[i].label] = model->materials[i].role != VOX_ROLE_VOID;
  return vox_model_check_loads_carried(ctx, model, carries,
                                       "a material that is not a passive void");
}

vox_status vox_optimize(vox_context *ctx, vox_backend *be, vox_model *model,
                        const vox_optimizer_options *options, vox_optimize_result *result) {
  memset(result, 0, sizeof *result);
  const int cell = options->cell_objective != VOX_CELL_NONE;
  vox_optimizer_options resolved = *options;
  vox_memory_optimizer_solver(model, options, &resolved.solver);
  /* a cell without a design of its own: Zhang et al. 2023's trigonometric family
   * (a uniform density is a stationary point of every cell objective) */
  vox_initial_design cell_start;
  if (cell && !resolved.initial && !model->density) {
    vox_initial_design_defaults(&cell_start);
    cell_start.kind = VOX_INITIAL_TRIGONOMETRIC;
    resolved.initial = &cell_start;
  }
  const vox_optimizer_options *opt = &resolved;
  TRY(check_design_constraints(ctx, model, opt));
  /* the optimality-criteria update's one volume constraint: the model's
   * where it gives one */
  if (model->n_design_constraints == 1 && opt->update == VOX_UPDATE_OC)
    resolved.volume_fraction = model->design_constraints[0].limit;
  TRY(check_options(ctx, opt));
  /* the element-free Galerkin method: its own loop (efg_optimize.h) */
  if (opt->discretization == VOX_DISCRETIZATION_EFG) {
    TRY(vox_efg_optimize_check(ctx, be, model, opt));
    TRY(check_problem(ctx, model));
    return vox_efg_optimize(ctx, be, model, opt, result);
  }
  TRY(vox_symmetry_check(ctx, &model->grid, opt->symmetry));
  if (cell && model->objective != VOX_OBJECTIVE_COMPLIANCE)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "the %s objective is for a periodic cell, not a model whose objective is %s",
                     vox_cell_objective_name(opt->cell_objective),
                     vox_objective_name(model->objective));
  if (!cell) TRY(check_problem(ctx, model));
  if (opt->resume) TRY(vox_loop_check_resume(ctx, model, opt));
  if (opt->resume) TRY(vox_mma_design_check_resume(ctx, opt->resume, opt->update));
  const unsigned strains = vox_cell_objective_strains(opt);
  if (cell && strains == 0)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "the custom objective names no entry of C^H: it does not depend on the "
                     "design");
  /* (check_problem refused prescribed non-zero displacements) A cell has
   * a field of its own for each strain it solves and one force vector,
   * which the memory plan counts as that many load cases (and the final
   * evaluation's six: memory_plan.c); a mechanism's adjoint and its
   * polarisation vector count as two more cases. */
  const int mechanism = model->objective == VOX_OBJECTIVE_OUTPUT_DISPLACEMENT;
  vox_grid planned = model->grid;
  planned.periodic = cell; /* the grid the cell's solver works on */
  const int every_design = all_design(model);
  const int vectors = optimizer_vectors(model, opt, every_design); /* per element */
  /* the single-precision cell solver where the double one does not fit
   * (memory_plan.h) */
  if (cell)
    resolved.solver.cell_solver =
        vox_cell_solver_resolve(be, &planned, vox_homog_strain_count(strains), &resolved.solver,
                                vectors);
  const int dpn = vox_physics_dofs_per_node(model->physics);
  const int n_cases = cell ? vox_homog_strain_count(strains)
                           : (model->n_load_cases > 0 ? model->n_load_cases : 1) + 2 * mechanism;
  /* by turns where the run does not fit otherwise: on a bounded grid, with
   * a solve to take turns with, and only the vectors turn_to_solve parks
   * (MMA's and the design constraints' stay on the device) */
  vox_layout parked;
  vox_layout_init(&parked);
  state_layout(1, opt->filter, every_design, NULL, &parked);
  int compliance_limit = 0; /* its value reads a load, which by turns is off the device */
  for (int i = 0; i < model->n_design_constraints; i++)
    compliance_limit |= model->design_constraints[i].kind == VOX_CONSTRAINT_COMPLIANCE;
  const int can_take_turns = !cell && model->objective != VOX_OBJECTIVE_VOLUME &&
                             !compliance_limit &&
                             vectors == parked.n;
  if (opt->solver.by_turns == VOX_BY_TURNS_ON && !can_take_turns)
    return vox_error(ctx, VOX_ERR_UNSUPPORTED,
                     "by turns takes the OC update of a problem on a bounded grid without "
                     "design constraints (MMA's and the constraints' vectors stay on the "
                     "device)");
  if (!cell)
    resolved.solver.by_turns =
        vox_by_turns_resolve(be, &planned, dpn, n_cases, &resolved.solver,
                             vectors, can_take_turns);
  TRY(vox_memory_check(be, &planned, dpn, n_cases, 0, &opt->solver,
                       vectors));
  const int volume_objective = !cell && model->objective == VOX_OBJECTIVE_VOLUME;
  const objective_ops *objective = cell               ? &cell_objective
                                   : volume_objective ? &volume_objective_ops
                                                      : &problem_objective;
  opt_state s = {0};
  vox_status st = state_init(ctx, be, model, opt, every_design, &s);
  const vox_backend_ops *o = be->ops;
  double p = 1, q = 1, previous = 0, compliance = 0;
  int settled = 0; /* design iterations in a row that met the stop tolerances */
  int first_row = model->n_history ? model->history[model->n_history - 1].iteration : 0;
  int k_done = 0; /* design iterations before this call's first: a resumed run's */
  if (st == VOX_OK && opt->resume) {
    vox_loop_state loop = {0};
    st = vox_loop_restore(be, opt, &loop, &s.x, s.fem, s.objective, s.homog);
    if (st == VOX_OK && s.mma) st = vox_mma_design_restore(s.mma, opt->resume);
    k_done = result->iterations = loop.iterations;
    first_row = loop.first_row;
    p = loop.p, q = loop.q, previous = loop.previous, settled = loop.settled;
    result->total_cg_iterations = loop.total_cg_iterations;
    result->seconds_solve = loop.seconds[0], result->seconds_sensitivity = loop.seconds[1];
    result->seconds_filter = loop.seconds[2], result->seconds_update = loop.seconds[3];
  }
  /* No iterations: the given design is evaluated as it is, at the final
   * penalty, its density not filtered (a design file's density is the
   * physical density already; filtering it would blur it again). */
  const int evaluate_only = opt->max_iterations == 0;
  if (st == VOX_OK)
    st = evaluate_only ? (s.x_phys == &s.x ? VOX_OK : o->vec->copy(be, s.x_phys, &s.x))
                       : physical_density(be, opt, &s, &s.x, s.x_phys);
  result->reason = evaluate_only ? VOX_STOP_EVALUATED : VOX_STOP_MAX_ITERATIONS;
  if (evaluate_only) {
    p = opt->penalty;
    q = opt->q_max;
  }
  /* what a design iteration solves, for its progress report */
  const int solves = cell ? (s.homog ? vox_homog_solved_count(s.homog) : 0)
                          : mechanism ? 2 : (s.fem ? s.fem->n_cases : 0);

  for (int k = k_done + 1; st == VOX_OK && k <= opt->max_iterations; k++) {
    vox_history_row row = {.iteration = first_row + k};
    double t0 = now(), t1, t2, t3, t4;
    continuation(opt, k, &p, &q);

    /* 1. state solves and objective */
    vox_solve_result failed;
    st = objective->evaluate(be, opt, &s, k, p, 1, &compliance, &row.cg_iterations, &failed);
    if (st != VOX_OK) break;
    t1 = now();
    if (failed.reason < 0) {
      result->reason = VOX_STOP_SOLVER_FAILED;
      result->last_solve = failed;
      break;
    }
    /* 2. sensitivities */
    st = objective->gradient(be, opt, &s, p);
    /* device work is asynchronous: wait for it before reading the clock */
    if (st == VOX_OK) st = o->synchronize(be);
    t2 = now();
    /* 3. filter (into the element energies, spent now that dc is made of
     * them) */
    if (st == VOX_OK && opt->filter == VOX_FILTER_SENSITIVITY && !volume_objective) {
      st = o->design->filter_sensitivity(be, s.filter, &s.x, &s.dc,
                                         vox_optimizer_sensitivity_floor(opt), &s.energy);
      if (st == VOX_OK) st = o->vec->copy(be, &s.dc, &s.energy);
    } else if (st == VOX_OK && opt->filter == VOX_FILTER_DENSITY) {
      st = o->design->filter_transpose(be, s.filter, &s.dc, &s.energy);
      if (st == VOX_OK) st = o->vec->copy(be, &s.dc, &s.energy);
    }
    /* the gradient on symmetric designs: its orbit means (Zhang et al. 2023, section 5.2) */
    if (st == VOX_OK && opt->symmetry != VOX_SYMMETRY_NONE)
      st = o->design->symmetrize(be, &s.fem->grid, opt->symmetry, &s.dc);
    if (st == VOX_OK) st = o->synchronize(be);
    t3 = now();
    /* 4. OC or MMA update (and the design made symmetric again, against rounding),
     * change, new physical density. The new design goes into the spent
     * energies, M_nd's temporary is dc (spent after the update): no vector
     * per element of their own (each a gigabyte at 512^3). */
    vox_vec *x_new = &s.energy;
    if (st == VOX_OK && (s.mma || s.constraint_value))
      st = vox_constraints_values(s.constraints, s.x_phys, s.objective, s.fem, s.constraint_value);
    if (st == VOX_OK && s.mma) {
      double g[2 * VOX_MAX_DESIGN_CONSTRAINTS], dg_scale[2 * VOX_MAX_DESIGN_CONSTRAINTS];
      const vox_vec *dg[2 * VOX_MAX_DESIGN_CONSTRAINTS];
      st = vox_constraints_rows_at(s.constraints, &s.x, s.x_phys, s.objective, s.fem, p, g, dg,
                                   dg_scale);
      if (st == VOX_OK)
        st = vox_mma_design_update(be, s.mma, &s.x, &s.dc, compliance, g, dg, dg_scale, x_new);
    } else if (st == VOX_OK) {
      st = oc_update(be, opt, &s, q, x_new);
    }
    if (st == VOX_OK && opt->symmetry != VOX_SYMMETRY_NONE)
      st = o->design->symmetrize(be, &s.fem->grid, opt->symmetry, x_new);
    if (st == VOX_OK) st = o->vec->max_abs_diff(be, x_new, &s.x, &row.change);
    if (st == VOX_OK) st = non_discreteness(be, &s, &s.dc, &row.non_discreteness);
    if (st == VOX_OK) st = volume_fraction(be, &s, s.x_phys, &row.volume_fraction);
    if (st == VOX_OK) st = o->vec->copy(be, &s.x, x_new);
    if (st == VOX_OK) st = physical_density(be, opt, &s, &s.x, s.x_phys);
    if (st != VOX_OK) break;
    t4 = now();

    row.objective = compliance;
    row.penalty = p;
    row.q = q;
    row.seconds = t4 - t0;
    result->seconds_solve += t1 - t0;
    result->seconds_sensitivity += t2 - t1;
    result->seconds_filter += t3 - t2;
    result->seconds_update += t4 - t3;
    result->total_cg_iterations += row.cg_iterations;
    result->iterations = k;
    st = append_history(ctx, model, &row, s.constraint_value);
    if (st == VOX_OK && opt->snapshot_every > 0 && row.iteration % opt->snapshot_every == 0)
      st = take_snapshot(ctx, be, &s, model, row.iteration);
    if (st == VOX_OK) {
      vox_progress progress = {.stage = "optimize",
                               .iteration = row.iteration,
                               .max_iterations = first_row + opt->max_iterations,
                               .objective = row.objective,
                               .volume_fraction = row.volume_fraction,
                               .change = row.change,
                               .non_discreteness = row.non_discreteness,
                               .penalty = p,
                               .q = q,
                               .cg_iterations = row.cg_iterations,
                               .solves = solves,
                               .seconds = row.seconds};
      st = vox_report_progress(ctx, &progress);
    }
    /* 5. stop when the penalties are final and the design has settled,
     * settle_iterations times in a row */
    /* (with MMA, the design constraints met to their tolerance: MMA's
     * iterates may lie outside the feasible set) */
    const int penalties_final = p >= opt->penalty && q >= opt->q_max;
    const int feasible =
        !s.mma || vox_constraints_violation(s.constraints) <= opt->constraint_tolerance;
    settled = k > 1 && penalties_final && feasible && row.change <= opt->change_tolerance &&
                      fabs(compliance - previous) <= opt->objective_tolerance * fabs(compliance)
                  ? settled + 1
                  : 0;
    if (st == VOX_OK && settled >= opt->settle_iterations) {
      result->reason = VOX_STOP_CONVERGED;
      break;
    }
    previous = compliance;
    /* 6. a stop asked for, and the state to go on from */
    const int interrupted = opt->interrupted && opt->interrupted(opt->interrupted_self);
    if (interrupted) result->reason = VOX_STOP_INTERRUPTED;
    if (st == VOX_OK && opt->checkpoint &&
        (interrupted || (opt->checkpoint_every > 0 && k % opt->checkpoint_every == 0))) {
      const vox_loop_state loop = {k, first_row, p, q, previous, settled,
                                   result->total_cg_iterations,
                                   {result->seconds_solve, result->seconds_sensitivity,
                                    result->seconds_filter, result->seconds_update}};
      st = checkpoint(ctx, be, model, opt, &s, &loop);
    }
    if (interrupted) break;
  }
  /* the limit reached before the penalties were final */
  if (result->reason == VOX_STOP_MAX_ITERATIONS && (p < opt->penalty || q < opt->q_max))
    result->reason = VOX_STOP_CONTINUATION_UNFINISHED;
  result->final_penalty = p;
  result->final_q = q;
  /* a phased loop stopped by a failed solve has some vectors parked */
  if (st == VOX_OK) st = unpark_but_solid(be, &s);

  /* The final design's own state, so that density, displacement and
   * objective in the file belong together. A cell reports the whole C^H:
   * the strains its objective did not need are solved now (from rest, but
   * zz from the hydrostatic field where the loop solved one and
   * cell_zz_from_hydrostatic asks: vox_homog_add_strains_zz), in the room
   * of the loop's vectors that are done with (final_room). */
  const double final_start = now();
  if (st == VOX_OK && result->reason != VOX_STOP_SOLVER_FAILED && cell) {
    final_room(be, &s);
    st = vox_homog_add_strains_zz(s.homog, VOX_ALL_STRAINS, opt->cell_zz_from_hydrostatic);
  }
  if (st == VOX_OK && result->reason != VOX_STOP_SOLVER_FAILED) {
    int cg;
    vox_solve_result failed;
    st = objective->evaluate(be, opt, &s, result->iterations + 1, p, 0, &compliance, &cg, &failed);
    result->total_cg_iterations += cg;
    result->final_cg_iterations = cg;
    if (st == VOX_OK && failed.reason < 0) {
      result->reason = VOX_STOP_SOLVER_FAILED;
      result->last_solve = failed;
    }
  }
  result->seconds_final = now() - final_start;
  if (st == VOX_OK && cell && result->reason != VOX_STOP_SOLVER_FAILED) {
    result->has_tensor = 1;
    memcpy(result->tensor, s.tensor, sizeof s.tensor);
    vox_cell_moduli_of(s.tensor, &result->moduli);
  }
  if (st == VOX_OK) {
    result->objective = compliance;
    st = volume_fraction(be, &s, s.x_phys, &result->volume_fraction);
  }
  /* the final design's values of the design constraints */
  if (st == VOX_OK && s.constraint_value && result->reason != VOX_STOP_SOLVER_FAILED) {
    st = vox_constraints_values(s.constraints, s.x_phys, s.objective, s.fem, s.constraint_value);
    const size_t bytes = (size_t)model->n_design_constraints * sizeof *s.constraint_value;
    double *final = st == VOX_OK ? realloc(model->final_constraint, bytes) : NULL;
    if (st == VOX_OK && !final) st = vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
    if (st == VOX_OK) model->final_constraint = memcpy(final, s.constraint_value, bytes);
  }
  if (st == VOX_OK) st = non_discreteness(be, &s, &s.dc, &result->non_discreteness);
  if (st == VOX_OK) st = store_results(ctx, be, &s, model);
  /* for the plots: the volume the run held the design domain to, where it
   * had one (a problem of design constraints may not) */
  if (st == VOX_OK) {
    model->target_volume_fraction = model->n_design_constraints == 0 ? opt->volume_fraction : 0;
    for (int i = 0; i < model->n_design_constraints; i++)
      if (model->design_constraints[i].kind == VOX_CONSTRAINT_VOLUME &&
          model->design_constraints[i].label == 0)
        model->target_volume_fraction = model->design_constraints[i].limit;
  }
  if (st == VOX_OK)
    model->optimization_end = (vox_optimization_end){result->reason, result->objective,
                                                     result->volume_fraction,
                                                     result->non_discreteness,
                                                     result->final_cg_iterations};
  result->adjoint_gpu = s.adjoint_gpu;
  result->kkt_residual = s.mma ? vox_mma_design_kkt(s.mma) : s.mma_freed ? s.mma_kkt : -1;
  result->cell_solver = s.homog && s.homog->cell;
  result->cell_turned = s.homog && s.homog->turned;
  result->cell_zz_derived = s.homog && s.homog->zz_derived;
  result->by_turns = s.turns;
  state_free(be, &s);
  return st;
}
