/* SPDX-License-Identifier: BSD-3-Clause */
/* The memory plan: its count matches what the FE system, CG, the multigrid
 * and the optimizer allocate (a counting backend: the CPU backend whose
 * vector and stencil allocations are added up, its stencils' values float
 * in mixed precision and double otherwise), it scales with the grid,
 * and a device backend that cannot fit a run says so before allocating. */
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "backend_ops.h"
#include "cell_ops.h"
#include "cpu/cpu.h"
#include "homogenize.h"
#include "memory_plan.h"
#include "mma_ops.h"
#include "objective.h"
#include "voxfe/voxfe.h"

/* The CPU backend's table with vec->create and stencil_create counting the
 * bytes they allocate, and the vectors' destroy the bytes they free:
 * `counted` is the peak of what is allocated at once (the optimizer frees
 * some vectors before a cell's final evaluation allocates more fields). */
static size_t counted, live;
static vox_backend_ops counting_ops;
static vox_vector_ops counting_vec_ops;
static vox_multigrid_ops counting_mg_ops;
static vox_design_ops counting_design_ops;
static vox_status (*cpu_vec_create)(vox_backend *, size_t, vox_scalar, vox_vec *);
static void (*cpu_vec_destroy)(vox_backend *, vox_vec *);
static vox_status (*cpu_stencil_create)(vox_backend *, const vox_grid *, int, vox_precision,
                                        vox_stencil **);

static void count(size_t bytes) {
  live += bytes;
  if (live > counted) counted = live;
}

static void start_count(void) { counted = live = 0; }

static vox_status counting_vec_create(vox_backend *be, size_t n, vox_scalar scalar, vox_vec *v) {
  count(vox_vec_bytes(n, scalar));
  return cpu_vec_create(be, n, scalar, v);
}

static void counting_vec_destroy(vox_backend *be, vox_vec *v) {
  live -= vox_vec_bytes(v->n, v->scalar);
  cpu_vec_destroy(be, v);
}

/* the values the CPU backend holds: float in mixed precision, as a device
 * stores them */
static size_t stencil_bytes(const vox_stencil *st) {
  return st->n_nodes * 27 * (size_t)(st->dpn * st->dpn) *
         (st->value32 ? sizeof *st->value32 : sizeof *st->value);
}

static vox_status counting_stencil_create(vox_backend *be, const vox_grid *g, int dpn,
                                          vox_precision p, vox_stencil **st) {
  TRY(cpu_stencil_create(be, g, dpn, p, st));
  count(stencil_bytes(*st));
  return VOX_OK;
}

static void (*cpu_stencil_destroy)(vox_backend *, vox_stencil *);
static void counting_stencil_destroy(vox_backend *be, vox_stencil *st) {
  live -= stencil_bytes(st);
  cpu_stencil_destroy(be, st);
}

/* The cell solver's hierarchy: the floats vox_cell_floats says both
 * backends allocate, all but vox_cell_kept_floats of them freed while it
 * is released (one cell solver at a time). */
static vox_cell_ops counting_cell_ops;
static size_t cell_bytes, cell_kept_bytes;
static int cell_held;

static vox_status counting_cell_create(vox_backend *be, const vox_cell_desc *desc, vox_cell **c) {
  cell_bytes = (size_t)(4 * vox_cell_floats(desc));
  cell_kept_bytes = (size_t)(4 * vox_cell_kept_floats(desc));
  cell_held = 1;
  count(cell_bytes);
  return vox_cpu_cell_ops.create(be, desc, c);
}

static void counting_cell_release(vox_backend *be, vox_cell *c) {
  if (cell_held) live -= cell_bytes - cell_kept_bytes;
  cell_held = 0;
  vox_cpu_cell_ops.release(be, c);
}

static vox_status counting_cell_hold(vox_backend *be, vox_cell *c) {
  if (!cell_held) count(cell_bytes - cell_kept_bytes);
  cell_held = 1;
  return vox_cpu_cell_ops.hold(be, c);
}

static void counting_cell_destroy(vox_backend *be, vox_cell *c) {
  live -= cell_held ? cell_bytes : cell_kept_bytes;
  vox_cpu_cell_ops.destroy(be, c);
}

/* The filter as the CUDA backend allocates it (cuda_filter.cu: 1/Hs and a
 * scratch vector in double, a byte of activity per element; the CPU
 * backend's own arrays are not backend vectors). */
static vox_status (*cpu_filter_create_periodic)(vox_backend *, const vox_grid *, double,
                                                const uint8_t *, vox_filter **);

static void (*cpu_filter_destroy)(vox_backend *, vox_filter *);
static size_t filter_bytes; /* of the one filter a run has */

static vox_status counting_filter_create_periodic(vox_backend *be, const vox_grid *g, double r,
                                                  const uint8_t *active, vox_filter **f) {
  filter_bytes = (size_t)vox_grid_elements(g) * (2 * sizeof(double) + 1);
  count(filter_bytes);
  return cpu_filter_create_periodic(be, g, r, active, f);
}

static vox_status (*cpu_filter_create)(vox_backend *, const vox_grid *, double, const uint8_t *,
                                       vox_filter **);
static vox_status counting_filter_create(vox_backend *be, const vox_grid *g, double r,
                                         const uint8_t *active, vox_filter **f) {
  filter_bytes = (size_t)vox_grid_elements(g) * (2 * sizeof(double) + 1);
  count(filter_bytes);
  return cpu_filter_create(be, g, r, active, f);
}

static void counting_filter_destroy(vox_backend *be, vox_filter *f) {
  live -= filter_bytes, filter_bytes = 0;
  cpu_filter_destroy(be, f);
}

/* MMA's design elements' indices as the CUDA backend allocates them (8
 * bytes each, cuda_mma.cu; the CPU backend's are host memory). */
static vox_mma_ops counting_mma_ops;
static size_t map_bytes; /* of the one map a run has */

static vox_status counting_map_create(vox_backend *be, const vox_vec *mask, vox_index_map **out,
                                      size_t *n) {
  const vox_status s = vox_cpu_mma_ops.map_create(be, mask, out, n);
  if (s == VOX_OK) map_bytes = *n * sizeof(int64_t), count(map_bytes);
  return s;
}

static void counting_map_destroy(vox_backend *be, vox_index_map *map) {
  live -= map_bytes, map_bytes = 0;
  vox_cpu_mma_ops.map_destroy(be, map);
}

static size_t model_grid_plan(const vox_backend *be, const vox_grid *g, vox_precision p) {
  vox_solver_options so;
  vox_solver_options_default(&so);
  so.precision = p;
  return vox_memory_needed(be, g, 3, 1, 0, &so, 7);
}

/* The CPU backend with its vector and stencil allocations counted. */
static vox_backend *counting_backend(vox_context *ctx) {
  vox_backend *be = NULL;
  CHECK_OK(ctx, vox_backend_create(ctx, VOX_DEVICE_CPU, &be));
  counting_ops = *be->ops;
  counting_vec_ops = *be->ops->vec;
  counting_mg_ops = *be->ops->mg;
  counting_design_ops = *be->ops->design;
  counting_ops.vec = &counting_vec_ops;
  counting_ops.mg = &counting_mg_ops;
  counting_ops.design = &counting_design_ops;
  cpu_vec_create = counting_ops.vec->create;
  cpu_stencil_create = counting_ops.mg->stencil_create;
  counting_vec_ops.create = counting_vec_create;
  counting_mg_ops.stencil_create = counting_stencil_create;
  cpu_stencil_destroy = counting_ops.mg->stencil_destroy;
  counting_mg_ops.stencil_destroy = counting_stencil_destroy;
  cpu_filter_create = counting_ops.design->filter_create;
  counting_design_ops.filter_create = counting_filter_create;
  cpu_vec_destroy = counting_ops.vec->destroy;
  counting_vec_ops.destroy = counting_vec_destroy;
  cpu_filter_create_periodic = counting_ops.design->filter_create_periodic;
  counting_design_ops.filter_create_periodic = counting_filter_create_periodic;
  cpu_filter_destroy = counting_ops.design->filter_destroy;
  counting_design_ops.filter_destroy = counting_filter_destroy;
  counting_cell_ops = vox_cpu_cell_ops;
  counting_cell_ops.create = counting_cell_create;
  counting_cell_ops.destroy = counting_cell_destroy;
  counting_cell_ops.release = counting_cell_release;
  counting_cell_ops.hold = counting_cell_hold;
  counting_ops.cell = &counting_cell_ops;
  counting_mma_ops = vox_cpu_mma_ops;
  counting_mma_ops.map_create = counting_map_create;
  counting_mma_ops.map_destroy = counting_map_destroy;
  counting_ops.mma = &counting_mma_ops;
  be->ops = &counting_ops;
  return be;
}

/* The plan adds a margin for what is not counted (context, taps, libraries):
 * without it, plan and count agree to a few percent. */
static void check_plan(const char *what, double plan) {
  const double plan_without_margin = (plan - (double)VOX_MEMORY_MARGIN_BYTES) / VOX_MEMORY_MARGIN;
  printf("%sallocated %zu bytes, planned %.0f (without the margin)\n", what, counted,
         plan_without_margin);
  CHECK(plan_without_margin >= 0.97 * (double)counted);
  CHECK(plan_without_margin <= 1.10 * (double)counted);
}

/* Bytes of a layout's vectors, and with its other objects (stencils). */
static double layout_vector_bytes(const vox_layout *l) {
  double b = 0;
  for (int i = 0; i < l->n; i++)
    if (l->entry[i].n) b += l->entry[i].bytes;
  return b;
}

/* Each part makes exactly what its layout describes, the memory plan's
 * input (layout.h): the fem (its vectors; the operator's flags are the
 * backend's), the multigrid (vectors and stencils, double and mixed, a
 * W-cycle's too), a mechanism's objective (state, adjoint, energies) and
 * a start history. A create that allocated a vector its layout does not
 * list, or the reverse, fails here. */
static void test_layouts_are_allocations(vox_context *ctx) {
  vox_backend *be = counting_backend(ctx);
  vox_model m;
  vox_grid g = {.nx = 20, .ny = 10, .nz = 6, .voxel_size = {1, 1, 1}};
  CHECK_OK(ctx, vox_model_init(ctx, &m, &g));
  memset(m.label, 1, (size_t)vox_grid_elements(&g));
  vox_material mat = {.label = 1, .youngs_modulus = 1, .poisson_ratio = 0.3};
  CHECK_OK(ctx, vox_model_add_material(ctx, &m, &mat));
  for (int64_t n = 0; n < vox_grid_nodes(&g); n += g.nx + 1)
    for (int c = 0; c < 3; c++) CHECK_OK(ctx, vox_model_add_constraint(ctx, &m, n, c, 0));
  CHECK_OK(ctx, vox_model_add_constraint(ctx, &m, g.nx, 0, 0.01)); /* prescribed: lift */
  CHECK_OK(ctx, vox_model_set_load_cases(ctx, &m, 1));
  CHECK_OK(ctx, vox_model_add_load(ctx, &m, g.nx, 2, 0, -1));
  CHECK_OK(ctx, vox_model_add_output(ctx, &m, g.nx + 1, 0, 1));
  m.objective = VOX_OBJECTIVE_OUTPUT_DISPLACEMENT;

  start_count();
  vox_fem *fem = NULL;
  CHECK_OK(ctx, vox_fem_create(ctx, be, &m, &fem));
  const vox_fem_shape shape = {
      .grid = &g, .dofs_per_node = 3, .n_cases = 1, .prescribed = 1, .output = 1};
  vox_layout l;
  vox_layout_init(&l);
  vox_fem_layout(&shape, NULL, &l);
  printf("fem: allocated %zu bytes, layout %.0f\n", counted, layout_vector_bytes(&l));
  CHECK(fem && (double)counted == layout_vector_bytes(&l));

  for (int mixed = 0; mixed < 2 && fem; mixed++) {
    vox_solver_options so;
    vox_solver_options_default(&so);
    so.precision = mixed ? VOX_PRECISION_MIXED : VOX_PRECISION_DOUBLE;
    so.mg_cycle = mixed ? VOX_MG_CYCLE_W : VOX_MG_CYCLE_V;
    start_count();
    vox_multigrid *mg = NULL;
    CHECK_OK(ctx, vox_mg_create(be, fem->op, &g, 3, 0, &so, &mg));
    vox_layout_init(&l);
    vox_mg_layout(be, &g, 3, &so, NULL, &l);
    printf("multigrid (%s): allocated %zu bytes, layout %.0f\n", mixed ? "mixed" : "double",
           counted, vox_layout_bytes(&l));
    CHECK(mg && (double)counted == vox_layout_bytes(&l));
    vox_mg_destroy(mg);
    /* one Chebyshev step on the fine level (the optimizer's elasticity):
     * no fine smoothing direction, one fine vector less */
    const double two_steps = vox_layout_bytes(&l);
    so.fine_smoothing_steps = 1;
    start_count();
    mg = NULL;
    CHECK_OK(ctx, vox_mg_create(be, fem->op, &g, 3, 0, &so, &mg));
    vox_layout_init(&l);
    vox_mg_layout(be, &g, 3, &so, NULL, &l);
    CHECK(mg && (double)counted == vox_layout_bytes(&l));
    CHECK(vox_layout_bytes(&l) == two_steps - (double)(fem->n_dofs * sizeof(double)));
    vox_mg_destroy(mg);
  }

  start_count();
  vox_objective_state *obj = NULL;
  CHECK_OK(ctx, vox_objective_create(ctx, fem, &m, &obj));
  vox_objective_shape os = {.kind = VOX_OBJECTIVE_OUTPUT_DISPLACEMENT,
                            .n_cases = 1,
                            .unit_weights = 1,
                            .n_dofs = fem->n_dofs,
                            .n_elements = fem->n_elements};
  vox_layout_init(&l);
  vox_objective_layout(&os, NULL, &l);
  printf("objective: allocated %zu bytes, layout %.0f\n", counted, vox_layout_bytes(&l));
  CHECK(obj && (double)counted == vox_layout_bytes(&l));
  vox_objective_destroy(obj);

  start_count();
  vox_ksp_history h;
  CHECK_OK(ctx, vox_ksp_history_create(be, fem->n_dofs, 2, &h));
  vox_layout_init(&l);
  vox_ksp_history_layout(fem->n_dofs, 2, NULL, &l);
  CHECK((double)counted == vox_layout_bytes(&l) && l.n == 2);
  vox_ksp_history_destroy(be, &h);

  vox_fem_destroy(fem);
  vox_model_free(&m);
  be->ops = &counting_ops;
  vox_backend_destroy(be);
}

/* An optimization of a cantilever on the counting backend: what it
 * allocated against the plan, with the solves' start history of
 * `start_history` earlier solutions (at 2, two fine vectors, 8% of the
 * count: a plan that left them out would fail its 3% tolerance), by OC or
 * by MMA (whose vectors and indices are a third of the count here). */
static void test_plan_matches_allocations(vox_context *ctx, int start_history,
                                          vox_design_update update) {
  vox_backend *be = counting_backend(ctx);

  vox_model m;
  vox_grid g = {.nx = 24, .ny = 12, .nz = 12, .voxel_size = {1, 1, 1}};
  CHECK_OK(ctx, vox_model_init(ctx, &m, &g));
  memset(m.label, 1, (size_t)vox_grid_elements(&g));
  vox_material mat = {.label = 1, .youngs_modulus = 1, .poisson_ratio = 0.3};
  CHECK_OK(ctx, vox_model_add_material(ctx, &m, &mat));
  for (int64_t n = 0; n < vox_grid_nodes(&g); n += g.nx + 1)
    for (int c = 0; c < 3; c++) CHECK_OK(ctx, vox_model_add_constraint(ctx, &m, n, c, 0));
  CHECK_OK(ctx, vox_model_set_load_cases(ctx, &m, 1));
  CHECK_OK(ctx, vox_model_add_load(ctx, &m, g.nx, 2, 0, -1));
  vox_optimizer_options opt;
  vox_optimizer_options_default(&opt);
  opt.max_iterations = 1;
  opt.solver.precision = VOX_PRECISION_DOUBLE;
  opt.solver.start_history = start_history;
  opt.update = update;
  vox_optimize_result r;
  start_count();
  CHECK_OK(ctx, vox_optimize(ctx, be, &m, &opt, &r));
  vox_solver_options planned;
  vox_memory_optimizer_solver(&m, &opt, &planned);
  CHECK(planned.fine_smoothing_steps == 1); /* elasticity on a bounded grid */
  check_plan(update == VOX_UPDATE_MMA ? "MMA: " : start_history ? "start history: " : "",
             (double)vox_memory_needed(be, &g, 3, 1, 0, &planned,
                                       vox_memory_optimizer_vectors(&m, &opt)));
  vox_model_free(&m);
  be->ops = &counting_ops; /* destroy through the same table */
  vox_backend_destroy(be);
}

/* By turns (vox_solver_options.by_turns): the same design, CG counts and
 * compliance as with everything on the device, to the last bit; a peak
 * that the plan's larger turn describes, below the plan and the peak
 * without turns; with either filter and in either precision. MMA is
 * refused, and auto on a backend without device memory of its own keeps
 * everything resident. */
static void cantilever(vox_context *ctx, const vox_grid *g, vox_model *m) {
  CHECK_OK(ctx, vox_model_init(ctx, m, g));
  memset(m->label, 1, (size_t)vox_grid_elements(g));
  vox_material mat = {.label = 1, .youngs_modulus = 1, .poisson_ratio = 0.3};
  CHECK_OK(ctx, vox_model_add_material(ctx, m, &mat));
  for (int64_t n = 0; n < vox_grid_nodes(g); n += g->nx + 1)
    for (int c = 0; c < 3; c++) CHECK_OK(ctx, vox_model_add_constraint(ctx, m, n, c, 0));
  CHECK_OK(ctx, vox_model_set_load_cases(ctx, m, 1));
  CHECK_OK(ctx, vox_model_add_load(ctx, m, g->nx, 2, 0, -1));
}

static void test_turns(vox_context *ctx, vox_filter_type filter, vox_precision precision) {
  vox_backend *be = counting_backend(ctx);
  vox_model m;
  vox_grid g = {.nx = 24, .ny = 12, .nz = 12, .voxel_size = {1, 1, 1}};
  vox_optimizer_options opt;
  vox_optimizer_options_default(&opt);
  opt.max_iterations = 3;
  opt.filter = filter;
  opt.solver.precision = precision;
  const size_t ne = (size_t)vox_grid_elements(&g);
  double *density[2];
  vox_optimize_result r[2];
  size_t peak[2];
  double plan[2];
  for (int on = 0; on < 2; on++) {
    opt.solver.by_turns = on ? VOX_BY_TURNS_ON : VOX_BY_TURNS_AUTO;
    cantilever(ctx, &g, &m); /* from the same start */
    start_count();
    CHECK_OK(ctx, vox_optimize(ctx, be, &m, &opt, &r[on]));
    peak[on] = counted;
    CHECK(r[on].by_turns == on); /* auto: the CPU's memory is the host's */
    density[on] = malloc(ne * sizeof *density[on]);
    memcpy(density[on], m.density, ne * sizeof *density[on]);
    vox_solver_options planned;
    vox_memory_optimizer_solver(&m, &opt, &planned);
    planned.by_turns = on ? VOX_BY_TURNS_ON : VOX_BY_TURNS_OFF;
    plan[on] = (double)vox_memory_needed(be, &g, 3, 1, 0, &planned,
                                         vox_memory_optimizer_vectors(&m, &opt));
    check_plan(on ? "by turns: " : "resident: ", plan[on]);
    if (!on) vox_model_free(&m);
  }
  printf("by turns, %s filter, %s: peak %zu against %zu bytes, plan %.0f against %.0f\n",
         vox_filter_name(filter), vox_precision_name(precision), peak[1], peak[0], plan[1],
         plan[0]);
  CHECK(peak[1] < peak[0] && plan[1] < plan[0]);
  CHECK(r[1].objective == r[0].objective);
  CHECK(r[1].total_cg_iterations == r[0].total_cg_iterations);
  CHECK(memcmp(density[0], density[1], ne * sizeof *density[0]) == 0);
  free(density[0]), free(density[1]);
  opt.update = VOX_UPDATE_MMA;
  opt.solver.by_turns = VOX_BY_TURNS_ON;
  vox_optimize_result rm;
  CHECK(vox_optimize(ctx, be, &m, &opt, &rm) == VOX_ERR_UNSUPPORTED);
  vox_context_clear_error(ctx);
  vox_model_free(&m);
  be->ops = &counting_ops;
  vox_backend_destroy(be);
}

/* A device whose free memory the test sets. */
static size_t fake_free;
static vox_status fake_memory(vox_backend *be, size_t *free_bytes, size_t *total) {
  (void)be;
  *free_bytes = fake_free, *total = 2 * fake_free;
  return VOX_OK;
}

/* A run that does not fit is told whether it would without its start
 * history, and not where it would not. */
static void test_check_hint(vox_context *ctx) {
  vox_backend *be = counting_backend(ctx);
  vox_backend_ops device = counting_ops;
  device.device_memory = 1;
  device.memory = fake_memory;
  be->ops = &device;
  const vox_grid g = {.nx = 64, .ny = 32, .nz = 32, .voxel_size = {1, 1, 1}};
  vox_solver_options o;
  vox_solver_options_default(&o);
  o.start_history = 1;
  vox_solver_options none = o;
  none.start_history = 0;
  const size_t with = vox_memory_needed(be, &g, 3, 1, 0, &o, 6);
  const size_t without = vox_memory_needed(be, &g, 3, 1, 0, &none, 6);
  CHECK(without < with);
  fake_free = without;
  CHECK(vox_memory_check(be, &g, 3, 1, 0, &o, 6) == VOX_ERR_NO_MEMORY);
  printf("memory check: %s\n", vox_context_message(ctx));
  CHECK(strstr(vox_context_message(ctx), "start-history 0") != NULL);
  fake_free = without - 1;
  CHECK(vox_memory_check(be, &g, 3, 1, 0, &o, 6) == VOX_ERR_NO_MEMORY);
  CHECK(strstr(vox_context_message(ctx), "start-history") == NULL);
  vox_context_clear_error(ctx);
  be->ops = &counting_ops;
  vox_backend_destroy(be);
}

/* The same for a periodic cell's optimization: one force vector, a field
 * for each strain the objective solves (in half precision with a double
 * work vector, in mixed precision), the multigrid of the periodic grid; the
 * final evaluation's six fields where some vectors of the loop were freed.
 * The bulk modulus solves one case (hydrostatic), a formula of C11 and C44 two. With
 * `use` on, in mixed precision the cell solver (cell_solver.h) replaces
 * CG, its vectors and the multigrid; phased, it takes turns with the
 * optimizer's per-element vectors and filter (the larger turn counts), its
 * fields wait in host memory where there are several (the two strains of
 * the formula, the final six), and the run is the same as with it on, to
 * the last bit. */
/* A one-material cell of grid g with densities of a few levels. */
static void cell_model(vox_context *ctx, const vox_grid *g, vox_model *m) {
  CHECK_OK(ctx, vox_model_init(ctx, m, g));
  const size_t ne = (size_t)vox_grid_elements(g);
  memset(m->label, 1, ne);
  vox_material mat = {
      .label = 1, .youngs_modulus = 1, .poisson_ratio = 0.3, .role = VOX_ROLE_DESIGN};
  CHECK_OK(ctx, vox_model_add_material(ctx, m, &mat));
  m->density = malloc(ne * sizeof *m->density);
  for (size_t e = 0; e < ne; e++) m->density[e] = 0.2 + 0.2 * (double)(e % 7) / 7;
}

static void test_cell_plan_matches_allocations(vox_context *ctx, vox_precision precision,
                                               const char *formula, vox_cell_solver_use use,
                                               vox_filter_type filter, vox_design_update update) {
  vox_backend *be = counting_backend(ctx);

  vox_model m, start;
  /* with the density filter 32^3, where the update's turn outweighs the cell
   * solver's (whose coarsest inverse is most of it on smaller grids) */
  const int n = filter == VOX_FILTER_DENSITY ? 32 : 16;
  const vox_grid g = {.nx = n, .ny = n, .nz = 32, .voxel_size = {1, 1, 1}};
  const size_t ne = (size_t)vox_grid_elements(&g);
  cell_model(ctx, &g, &m);
  cell_model(ctx, &g, &start);
  vox_optimizer_options opt;
  vox_optimizer_options_default(&opt);
  opt.solver.cell_solver = use;
  opt.cell_objective = VOX_CELL_BULK;
  opt.filter = filter;
  vox_expression *e = NULL;
  if (formula) {
    CHECK_OK(ctx, vox_expression_parse(ctx, formula, &e));
    opt.cell_objective = VOX_CELL_CUSTOM, opt.expression = e;
  }
  opt.max_iterations = use == VOX_CELL_SOLVER_PHASED ? 3 : 1;
  opt.solver.precision = precision;
  opt.update = update;
  /* phased: first the same run with the solver kept, off the count */
  vox_optimize_result r, rk;
  vox_optimizer_options kept = opt;
  kept.solver.cell_solver = VOX_CELL_SOLVER_ON;
  if (use == VOX_CELL_SOLVER_PHASED) CHECK_OK(ctx, vox_optimize(ctx, be, &start, &kept, &rk));
  start_count();
  CHECK_OK(ctx, vox_optimize(ctx, be, &m, &opt, &r));
  if (use == VOX_CELL_SOLVER_PHASED) {
    CHECK(r.cell_solver && rk.cell_solver);
    CHECK(r.objective == rk.objective && r.total_cg_iterations == rk.total_cg_iterations);
    CHECK(memcmp(m.density, start.density, ne * sizeof *m.density) == 0);
  }
  vox_model_free(&start);
  vox_grid cell = g;
  cell.periodic = 1;
  const unsigned strains = vox_cell_objective_strains(&opt);
  CHECK(strains == (formula ? 0x09u : 0x40u));
  const int n_strains = vox_homog_strain_count(strains);
  printf("%s%s%s%s%s", precision == VOX_PRECISION_MIXED ? "cell, mixed" : "cell, double",
         update == VOX_UPDATE_MMA ? ", MMA" : "",
         use == VOX_CELL_SOLVER_PHASED ? ", cell solver, phased"
         : use == VOX_CELL_SOLVER_ON   ? ", cell solver"
                                       : "",
         filter == VOX_FILTER_DENSITY ? ", density filter" : "",
         formula ? ", two strains: " : ": ");
  /* the optimizer plans with its resolved tolerance (a cell's 1e-2: the
   * cell solver in mixed precision) */
  opt.solver.rtol = vox_optimizer_rtol(&opt);
  check_plan("", (double)vox_memory_needed(be, &cell, 3, n_strains, 0, &opt.solver,
                                           vox_memory_optimizer_vectors(&m, &opt)));
  vox_expression_free(e);
  vox_model_free(&m);
  be->ops = &counting_ops;
  vox_backend_destroy(be);
}

static void test_scaling(const vox_backend *be) {
  vox_grid g = {.nx = 100, .ny = 50, .nz = 50, .voxel_size = {1, 1, 1}};
  vox_grid g2 = {.nx = 200, .ny = 100, .nz = 100, .voxel_size = {1, 1, 1}};
  const double a = (double)model_grid_plan(be, &g, VOX_PRECISION_DOUBLE) - (double)VOX_MEMORY_MARGIN_BYTES;
  const double b = (double)model_grid_plan(be, &g2, VOX_PRECISION_DOUBLE) - (double)VOX_MEMORY_MARGIN_BYTES;
  CHECK(b / a > 7.5 && b / a < 8.5);
  CHECK(model_grid_plan(be, &g2, VOX_PRECISION_MIXED) < model_grid_plan(be, &g2, VOX_PRECISION_DOUBLE));
}

/* --cell-solver auto: the cell solver exactly where the double solver's
 * plan does not fit the free memory and its own does, phased where neither
 * does; never where it does not apply (double precision, a tolerance below
 * its floor, a bounded grid). */
static void test_cell_solver_choice(vox_backend *be) {
  const vox_grid g = {.nx = 64, .ny = 64, .nz = 64, .voxel_size = {1, 1, 1}, .periodic = 1};
  vox_solver_options o, on, off;
  vox_solver_options_default(&o);
  o.rtol = 1e-2;
  on = off = o;
  on.cell_solver = VOX_CELL_SOLVER_ON, off.cell_solver = VOX_CELL_SOLVER_OFF;
  const size_t need = vox_memory_needed(be, &g, 3, 1, 0, &off, 5);
  const size_t need_cell = vox_memory_needed(be, &g, 3, 1, 0, &on, 5);
  printf("cell solver choice at 64^3: double solver %.1f MB, cell solver %.1f MB\n", need / 1e6,
         need_cell / 1e6);
  CHECK(need_cell < need);
  CHECK(vox_cell_solver_choice(be, &g, 1, &o, 5, need) == VOX_CELL_SOLVER_OFF);
  CHECK(vox_cell_solver_choice(be, &g, 1, &o, 5, need - 1) == VOX_CELL_SOLVER_ON);
  CHECK(vox_cell_solver_choice(be, &g, 1, &o, 5, need_cell) == VOX_CELL_SOLVER_ON);
  vox_solver_options phased = o;
  phased.cell_solver = VOX_CELL_SOLVER_PHASED;
  const size_t need_phased = vox_memory_needed(be, &g, 3, 1, 0, &phased, 5);
  printf("  phased %.1f MB\n", need_phased / 1e6);
  CHECK(need_phased < need_cell);
  CHECK(vox_cell_solver_choice(be, &g, 1, &o, 5, need_cell - 1) == VOX_CELL_SOLVER_PHASED);
  CHECK(vox_cell_solver_choice(be, &g, 1, &o, 5, 0) == VOX_CELL_SOLVER_PHASED);
  vox_solver_options tight = o, dbl = o;
  tight.rtol = 1e-6, dbl.precision = VOX_PRECISION_DOUBLE;
  CHECK(vox_cell_solver_choice(be, &g, 1, &tight, 5, need_cell) == VOX_CELL_SOLVER_OFF);
  CHECK(vox_cell_solver_choice(be, &g, 1, &dbl, 5, need_cell) == VOX_CELL_SOLVER_OFF);
  vox_grid bounded = g;
  bounded.periodic = 0;
  CHECK(vox_cell_solver_choice(be, &bounded, 1, &o, 5, need_cell) == VOX_CELL_SOLVER_OFF);
}

int main(void) {
  vox_context *ctx;
  if (vox_context_create(&ctx) != VOX_OK) return 1;
  test_layouts_are_allocations(ctx);
  test_plan_matches_allocations(ctx, 2, VOX_UPDATE_OC);
  test_plan_matches_allocations(ctx, 2, VOX_UPDATE_MMA);
  test_turns(ctx, VOX_FILTER_SENSITIVITY, VOX_PRECISION_MIXED);
  test_turns(ctx, VOX_FILTER_DENSITY, VOX_PRECISION_DOUBLE);
  test_check_hint(ctx);
  const vox_filter_type sens = VOX_FILTER_SENSITIVITY;
  test_cell_plan_matches_allocations(ctx, VOX_PRECISION_DOUBLE, NULL, VOX_CELL_SOLVER_OFF, sens,
                                     VOX_UPDATE_OC);
  test_cell_plan_matches_allocations(ctx, VOX_PRECISION_MIXED, NULL, VOX_CELL_SOLVER_OFF, sens,
                                     VOX_UPDATE_OC);
  test_cell_plan_matches_allocations(ctx, VOX_PRECISION_MIXED, "-C11 - C44", VOX_CELL_SOLVER_OFF,
                                     sens, VOX_UPDATE_OC);
  test_cell_plan_matches_allocations(ctx, VOX_PRECISION_MIXED, NULL, VOX_CELL_SOLVER_ON, sens,
                                     VOX_UPDATE_OC);
  test_cell_plan_matches_allocations(ctx, VOX_PRECISION_MIXED, NULL, VOX_CELL_SOLVER_PHASED, sens,
                                     VOX_UPDATE_OC);
  test_cell_plan_matches_allocations(ctx, VOX_PRECISION_MIXED, "-C11 - C44", VOX_CELL_SOLVER_PHASED,
                                     sens, VOX_UPDATE_OC);
  /* six vectors per element: the update's turn the larger (the setup's too) */
  test_cell_plan_matches_allocations(ctx, VOX_PRECISION_MIXED, NULL, VOX_CELL_SOLVER_PHASED,
                                     VOX_FILTER_DENSITY, VOX_UPDATE_OC);
  /* MMA's vectors in the loop, freed before the final evaluation's six
   * fields (the larger phase of a cell in double) */
  test_cell_plan_matches_allocations(ctx, VOX_PRECISION_DOUBLE, NULL, VOX_CELL_SOLVER_OFF, sens,
                                     VOX_UPDATE_MMA);
  vox_backend *be;
  CHECK_OK(ctx, vox_backend_create(ctx, VOX_DEVICE_CPU, &be));
  test_scaling(be);
  test_cell_solver_choice(be);
  vox_backend_destroy(be);
  vox_context_destroy(ctx);
  return check_failures ? 1 : 0;
}
