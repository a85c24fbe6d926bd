/* SPDX-License-Identifier: BSD-3-Clause */
/* The optimizer's parts: compliance sensitivities against central finite
 * differences (plain and through the density filter), the filter's
 * normalisation and transpose, and the volume constraint after every OC
 * update of a short optimization, and the same iterates whether the solves
 * start from earlier solutions and keep earlier smoother bounds or not;
 * and MMA's sensitivity filter floor: no density jumps from 0 and the
 * dual method's CG iterations those of the primal-dual one; and a stored
 * displacement's values on the supports left out of the state's start. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "fem.h"
#include "voxfe/voxfe.h"

static int64_t node(const vox_grid *g, int64_t i, int64_t j, int64_t k) {
  return (k * (g->ny + 1) + j) * (g->nx + 1) + i;
}

/* A small 2:1:1 cantilever: clamped at x-, a downward load at the bottom of
 * the free end, one passive-solid element. */
static void make_cantilever(vox_context *ctx, vox_model *m, int nx) {
  vox_grid g = {.nx = nx, .ny = nx / 2, .nz = nx / 2, .voxel_size = {1, 1, 1}};
  CHECK_OK(ctx, vox_model_init(ctx, m, &g));
  memset(m->label, 1, (size_t)vox_grid_elements(&g));
  m->label[nx - 1] = 2;
  vox_material design = {.label = 1, .youngs_modulus = 1, .poisson_ratio = 0.3, .name = "design"};
  vox_material solid = design;
  solid.label = 2;
  solid.role = VOX_ROLE_SOLID;
  CHECK_OK(ctx, vox_model_add_material(ctx, m, &design));
  CHECK_OK(ctx, vox_model_add_material(ctx, m, &solid));
  for (int64_t k = 0; k <= g.nz; k++)
    for (int64_t j = 0; j <= g.ny; j++)
      for (int c = 0; c < 3; c++) CHECK_OK(ctx, vox_model_add_constraint(ctx, m, node(&g, 0, j, k), c, 0));
  CHECK_OK(ctx, vox_model_set_load_cases(ctx, m, 2));
  for (int64_t j = 0; j <= g.ny; j++)
    CHECK_OK(ctx, vox_model_add_load(ctx, m, node(&g, g.nx, j, 0), 2, 0, -1.0 / (g.ny + 1)));
  CHECK_OK(ctx, vox_model_add_load(ctx, m, node(&g, g.nx, g.ny, g.nz), 1, 1, 0.5));
}

typedef struct fixture {
  vox_backend *be;
  vox_fem *fem;
  vox_vec rho, u, energy;
  vox_solver_options opt;
} fixture;

/* Summed compliance over both load cases at densities rho (host). */
static double compliance(fixture *f, const double *rho, double p, double *dc_host) {
  const vox_backend_ops *o = f->be->ops;
  o->vec->upload(f->be, &f->rho, rho);
  o->design->simp_moduli(f->be, &f->rho, &f->fem->e_solid, p, 1e-9, &f->fem->moduli);
  vox_fem_update(f->fem);
  for (int c = 0; c < f->fem->n_cases; c++) {
    vox_solve_result r;
    o->vec->set(f->be, &f->u, 0);
    vox_fem_solve(f->fem, c, &f->u, &f->opt, &r);
    CHECK(r.reason == VOX_CONVERGED_RTOL);
    o->op->element_energy(f->be, f->fem->op, &f->u, &f->energy, c > 0);
  }
  double c;
  o->vec->dot(f->be, &f->fem->moduli, &f->energy, &c);
  if (dc_host) {
    vox_vec dc;
    o->vec->create(f->be, f->rho.n, VOX_DOUBLE, &dc);
    o->design->simp_sensitivity(f->be, &f->rho, &f->fem->e_solid, &f->energy, p, 1e-9, &dc);
    o->vec->download(f->be, &dc, dc_host);
    o->vec->destroy(f->be, &dc);
  }
  return c;
}

static void test_sensitivities(vox_context *ctx, vox_backend *be) {
  vox_model m;
  make_cantilever(ctx, &m, 6);
  fixture f = {.be = be};
  CHECK_OK(ctx, vox_fem_create(ctx, be, &m, &f.fem));
  const size_t ne = f.fem->n_elements;
  be->ops->vec->create(be, ne, VOX_DOUBLE, &f.rho);
  be->ops->vec->create(be, f.fem->n_dofs, VOX_DOUBLE, &f.u);
  be->ops->vec->create(be, ne, VOX_DOUBLE, &f.energy);
  vox_solver_options_default(&f.opt);
  f.opt.rtol = 1e-13;
  double *rho = malloc(ne * sizeof *rho), *dc = malloc(ne * sizeof *dc);
  srand(7);
  for (size_t e = 0; e < ne; e++) rho[e] = 0.2 + 0.8 * rand() / (double)RAND_MAX;
  const double p = 3;
  compliance(&f, rho, p, dc);
  const size_t probe[] = {0, 7, ne / 2, ne - 2};
  for (size_t i = 0; i < sizeof probe / sizeof probe[0]; i++) {
    const size_t e = probe[i];
    const double h = 1e-5, saved = rho[e];
    rho[e] = saved + h;
    const double cp = compliance(&f, rho, p, NULL);
    rho[e] = saved - h;
    const double cm = compliance(&f, rho, p, NULL);
    rho[e] = saved;
    CHECK_CLOSE(dc[e], (cp - cm) / (2 * h), 1e-6 * fabs(dc[e]) / fmax(1, fabs(dc[e])) + 1e-9);
  }

  /* Through the density filter: d c(H x)/dx = H^T dc. */
  vox_filter *filter;
  CHECK_OK(ctx, be->ops->design->filter_create(be, &m.grid, 1.8, f.fem->element_active, &filter));
  vox_vec x, xf, g, gt;
  be->ops->vec->create(be, ne, VOX_DOUBLE, &x), be->ops->vec->create(be, ne, VOX_DOUBLE, &xf);
  be->ops->vec->create(be, ne, VOX_DOUBLE, &g), be->ops->vec->create(be, ne, VOX_DOUBLE, &gt);
  double *xh = malloc(ne * sizeof *xh), *xfh = malloc(ne * sizeof *xfh), *gth = malloc(ne * sizeof *gth);
  for (size_t e = 0; e < ne; e++) xh[e] = rho[e];
  be->ops->vec->upload(be, &x, xh);
  be->ops->design->filter_apply(be, filter, &x, &xf);
  be->ops->vec->download(be, &xf, xfh);
  compliance(&f, xfh, p, dc);
  be->ops->vec->upload(be, &g, dc);
  be->ops->design->filter_transpose(be, filter, &g, &gt);
  be->ops->vec->download(be, &gt, gth);
  for (size_t i = 0; i < sizeof probe / sizeof probe[0]; i++) {
    const size_t e = probe[i];
    const double h = 1e-5, saved = xh[e];
    double c2[2];
    for (int s = 0; s < 2; s++) {
      xh[e] = saved + (s ? -h : h);
      be->ops->vec->upload(be, &x, xh);
      be->ops->design->filter_apply(be, filter, &x, &xf);
      be->ops->vec->download(be, &xf, xfh);
      c2[s] = compliance(&f, xfh, p, NULL);
    }
    xh[e] = saved;
    CHECK_CLOSE(gth[e], (c2[0] - c2[1]) / (2 * h), 1e-6 * fabs(gth[e]) / fmax(1, fabs(gth[e])) + 1e-9);
  }

  /* The filter keeps constants and H^T is the adjoint of H. */
  be->ops->vec->set(be, &x, 0.37);
  be->ops->design->filter_apply(be, filter, &x, &xf);
  be->ops->vec->download(be, &xf, xfh);
  for (size_t e = 0; e < ne; e++) CHECK_CLOSE(xfh[e], 0.37, 1e-14);
  double a_ht_b, ha_b;
  be->ops->vec->upload(be, &x, rho);
  be->ops->vec->upload(be, &g, dc);
  be->ops->design->filter_apply(be, filter, &x, &xf);
  be->ops->vec->dot(be, &xf, &g, &ha_b);
  be->ops->design->filter_transpose(be, filter, &g, &gt);
  be->ops->vec->dot(be, &x, &gt, &a_ht_b);
  CHECK_CLOSE(a_ht_b, ha_b, 1e-13);

  be->ops->design->filter_destroy(be, filter);
  vox_vec *v[] = {&x, &xf, &g, &gt, &f.rho, &f.u, &f.energy};
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) be->ops->vec->destroy(be, v[i]);
  free(xh), free(xfh), free(gth), free(rho), free(dc);
  vox_fem_destroy(f.fem);
  vox_model_free(&m);
}

typedef struct watch {
  int calls;
  double target;
  int violations;
} watch;

static int on_progress(const vox_progress *p, void *user) {
  watch *w = user;
  /* Each row's volume is that of the design the previous OC update made. */
  if (w->calls++ > 0 && p->volume_fraction > w->target * (1 + 1e-6)) w->violations++;
  return 0;
}

static void test_optimization(vox_context *ctx, vox_backend *be, vox_filter_type filter) {
  vox_model m;
  make_cantilever(ctx, &m, 12);
  vox_optimizer_options opt;
  vox_optimizer_options_default(&opt);
  opt.volume_fraction = 0.25;
  opt.max_iterations = 25;
  opt.filter = filter;
  opt.continuation_start_p = 3;
  opt.continuation_growth_p = 1.2;
  watch w = {.target = opt.volume_fraction};
  vox_context_set_progress(ctx, on_progress, &w);
  vox_optimize_result r;
  CHECK_OK(ctx, vox_optimize(ctx, be, &m, &opt, &r));
  vox_context_set_progress(ctx, NULL, NULL);
  CHECK(w.calls == r.iterations && w.calls > 5);
  CHECK(w.violations == 0);
  CHECK(r.volume_fraction <= opt.volume_fraction * (1 + 1e-6));
  CHECK(r.volume_fraction >= opt.volume_fraction * 0.98); /* the constraint is active */
  CHECK(m.stage == VOX_STAGE_DESIGN && m.density && m.displacement);
  CHECK(m.n_history == (size_t)r.iterations);
  /* At equal p, compliance falls as the design improves: compare the last
   * iterations of constant penalty with the first ones at p = 1. */
  CHECK(m.history[0].penalty == 1);
  if (filter != VOX_FILTER_DENSITY) /* uniform start (the density filter smears the passive one) */
    CHECK_CLOSE(m.history[0].non_discreteness, 100 * 4 * 0.25 * 0.75, 1e-9);
  CHECK(m.history[m.n_history - 1].non_discreteness < m.history[0].non_discreteness);
  CHECK(m.density[11] == 1.0); /* the passive solid element */
  for (size_t e = 0; e < (size_t)vox_grid_elements(&m.grid); e++)
    CHECK(m.density[e] >= 0 && m.density[e] <= 1);
  vox_model_free(&m);
}

typedef struct trace {
  int n;
  double objective[32];
} trace;

static int record(const vox_progress *p, void *user) {
  trace *t = user;
  if (t->n < 32) t->objective[t->n++] = p->objective;
  return 0;
}

/* What the optimizer reuses from earlier design iterations only changes
 * where CG starts (start_history: earlier solutions, ksp.h) and how it is
 * preconditioned (mg_bound_refresh: the coarse smoother bounds of an
 * earlier setup, on 3 levels so that level 1 has them): with a tight CG
 * tolerance every iteration's compliance and the final design are those of
 * the plain warm start with bounds estimated at every setup. Both load
 * cases keep a history of their own. So does the cycle's fine smoothing
 * (fine_smoothing_steps), whose default for elasticity on a bounded grid
 * is one step: the same CG iterations as an explicit 1. */
static void test_reuse_same_iterates(vox_context *ctx, vox_backend *be) {
  enum { RUNS = 6, AUTO = VOX_FINE_SMOOTHING_AUTO };
  const int history[RUNS] = {0, 1, 2, 0, 0, 0}, refresh[RUNS] = {1, 1, 4, 4, 1, 1};
  const int fine[RUNS] = {AUTO, AUTO, AUTO, AUTO, 0, 1};
  trace t[RUNS] = {{0}};
  double *density[RUNS];
  int cg[RUNS];
  for (int k = 0; k < RUNS; k++) {
    vox_model m;
    make_cantilever(ctx, &m, 8);
    vox_optimizer_options opt;
    vox_optimizer_options_default(&opt);
    opt.volume_fraction = 0.25;
    opt.max_iterations = 10;
    opt.continuation = 0;
    opt.change_tolerance = 0, opt.objective_tolerance = 0;
    opt.solver.rtol = 1e-10;
    opt.solver.mg_levels = 3;
    opt.solver.start_history = history[k];
    opt.solver.mg_bound_refresh = refresh[k];
    opt.solver.fine_smoothing_steps = fine[k];
    vox_context_set_progress(ctx, record, &t[k]);
    vox_optimize_result r;
    CHECK_OK(ctx, vox_optimize(ctx, be, &m, &opt, &r));
    vox_context_set_progress(ctx, NULL, NULL);
    CHECK(r.iterations == 10 && t[k].n == 10);
    cg[k] = r.total_cg_iterations;
    const size_t ne = (size_t)vox_grid_elements(&m.grid);
    density[k] = malloc(ne * sizeof *density[k]);
    memcpy(density[k], m.density, ne * sizeof *density[k]);
    if (k > 0) {
      double worst = 0, dworst = 0;
      for (int i = 0; i < 10; i++)
        worst = fmax(worst, fabs(t[k].objective[i] - t[0].objective[i]) / t[0].objective[i]);
      for (size_t e = 0; e < ne; e++) dworst = fmax(dworst, fabs(density[k][e] - density[0][e]));
      fprintf(stderr, "start history %d, bounds every %d setups, fine smoothing %d: %d CG "
              "iterations (%d with neither, auto), compliance within %.1e, densities within "
              "%.1e\n", history[k], refresh[k], fine[k], cg[k], cg[0], worst, dworst);
      CHECK(worst <= 1e-8);
      CHECK(dworst <= 1e-6);
    }
    vox_model_free(&m);
  }
  CHECK(cg[5] == cg[0]); /* auto: one fine step for elasticity */
  CHECK(cg[4] != cg[0]); /* which differs from two */
  for (int k = 0; k < RUNS; k++) free(density[k]);
}

/* settle_iterations: the stop tolerances must hold in that many design
 * iterations in a row. The same run stops at its first settled iteration
 * k1 with 1, and at k1 + 2 or later with 3 (the same iterates until then). */
static void test_settle_iterations(vox_context *ctx, vox_backend *be) {
  int stopped[2] = {0, 0};
  trace t[2] = {{0}};
  for (int k = 0; k < 2; k++) {
    vox_model m;
    make_cantilever(ctx, &m, 8);
    vox_optimizer_options opt;
    vox_optimizer_options_default(&opt);
    opt.volume_fraction = 0.25;
    opt.max_iterations = 30;
    opt.continuation = 0;
    opt.change_tolerance = 1;
    opt.objective_tolerance = 1e-2;
    opt.settle_iterations = k == 0 ? 1 : 3;
    vox_context_set_progress(ctx, record, &t[k]);
    vox_optimize_result r;
    CHECK_OK(ctx, vox_optimize(ctx, be, &m, &opt, &r));
    vox_context_set_progress(ctx, NULL, NULL);
    CHECK(r.reason == VOX_STOP_CONVERGED);
    stopped[k] = r.iterations;
    vox_model_free(&m);
  }
  fprintf(stderr, "settled once: stopped at iteration %d; three times in a row: %d\n",
          stopped[0], stopped[1]);
  CHECK(stopped[1] >= stopped[0] + 2);
  for (int i = 0; i < stopped[0]; i++) CHECK(t[1].objective[i] == t[0].objective[i]);
  /* and each of the last three iterations of the second run met the tolerance */
  for (int i = stopped[1] - 3; i < stopped[1]; i++)
    CHECK(fabs(t[1].objective[i] - t[1].objective[i - 1]) <= 1e-2 * fabs(t[1].objective[i]));
}

/* Densities that rise from below 1e-3 to 0.15 or more in one design
 * iteration, over the run's snapshots (one per iteration). */
static int revivals(const vox_model *m) {
  const size_t ne = (size_t)vox_grid_elements(&m->grid);
  int count = 0;
  for (size_t s = 1; s < m->n_snapshots; s++) {
    const double *before = m->snapshot_density + (s - 1) * ne, *after = before + ne;
    for (size_t e = 0; e < ne; e++) count += before[e] < 1e-3 && after[e] >= 0.15;
  }
  return count;
}

/* MMA with the sensitivity filter (docs/engine.md, "The sensitivity
 * filter's floor"): with Andreassen et al.'s floor 1e-3 a density at the
 * lower bound 0 beside material gets its neighbours' x dc divided by 1e-3,
 * MMA (whose dual method reaches the bound exactly) lifts it by the move
 * limit, and it falls back within a few iterations: hundreds of such
 * jumps, a design of one-element spikes, and the multigrid needs far more
 * CG iterations than for the primal-dual method's design, whose barrier
 * keeps every density a few 1e-3 inside. MMA's own floor (auto) leaves
 * almost no jump, and the dual method's run then takes about the primal-dual one's
 * CG iterations. */
static void test_mma_sensitivity_floor(vox_context *ctx, vox_backend *be) {
  enum { RUNS = 3 };
  const vox_mma_subproblem method[RUNS] = {VOX_MMA_DUAL, VOX_MMA_DUAL, VOX_MMA_PRIMAL_DUAL};
  const double floors[RUNS] = {1e-3, VOX_SENSITIVITY_FLOOR_AUTO, VOX_SENSITIVITY_FLOOR_AUTO};
  int jumps[RUNS], cg[RUNS];
  for (int k = 0; k < RUNS; k++) {
    vox_model m;
    make_cantilever(ctx, &m, 24);
    vox_optimizer_options opt;
    vox_optimizer_options_default(&opt);
    opt.update = VOX_UPDATE_MMA;
    opt.mma.subproblem = method[k];
    opt.sensitivity_floor = floors[k];
    opt.max_iterations = 12;
    opt.snapshot_every = 1;
    vox_optimize_result r;
    CHECK_OK(ctx, vox_optimize(ctx, be, &m, &opt, &r));
    CHECK(m.n_snapshots == 12);
    jumps[k] = revivals(&m);
    cg[k] = r.total_cg_iterations - r.final_cg_iterations;
    fprintf(stderr, "MMA %s, sensitivity floor %g: %d densities jump from 0, %d CG iterations\n",
            vox_mma_subproblem_name(method[k]), vox_optimizer_sensitivity_floor(&opt), jumps[k],
            cg[k]);
    vox_model_free(&m);
  }
  /* the mechanism, with the floor 1e-3 (228 jumps, 381 CG iterations
   * against 295 on the CPU) */
  CHECK(jumps[0] >= 100 && cg[0] >= 1.15 * cg[2]);
  CHECK(jumps[1] <= 10 && cg[1] <= 1.05 * cg[2]); /* 4 jumps, 299 */
}

/* Load case c's displacement at model constraint i. */
static double *at_constraint(vox_model *m, size_t i, int c) {
  const size_t n_dofs = 3 * (size_t)vox_grid_nodes(&m->grid);
  return m->displacement + (size_t)c * n_dofs + 3 * (size_t)m->constraints[i].node +
         m->constraints[i].component;
}

/* A design's stored displacement as the state's start: values on the
 * fixed dofs (a file's displacement from the element-free Galerkin
 * method's penalty supports holds some) must not stay in the solution:
 * the same compliance, to the CG's tolerance, as from the stored solution
 * itself, and zero on the fixed dofs. */
static void test_start_off_the_supports(vox_context *ctx, vox_backend *be) {
  vox_model m;
  make_cantilever(ctx, &m, 8);
  vox_optimizer_options opt;
  vox_optimizer_options_default(&opt);
  opt.volume_fraction = 0.4;
  opt.max_iterations = 3;
  opt.solver.rtol = 1e-10;
  vox_optimize_result r, again, moved;
  CHECK_OK(ctx, vox_optimize(ctx, be, &m, &opt, &r));
  opt.max_iterations = 0;
  CHECK_OK(ctx, vox_optimize(ctx, be, &m, &opt, &again));
  const size_t n_dofs = 3 * (size_t)vox_grid_nodes(&m.grid);
  double largest = 0;
  for (size_t d = 0; d < n_dofs; d++) largest = fmax(largest, fabs(m.displacement[d]));
  for (size_t i = 0; i < m.n_constraints; i++)
    for (int c = 0; c < m.n_load_cases; c++)
      *at_constraint(&m, i, c) = 1e-2 * largest * (i % 2 ? 1 : -1);
  CHECK_OK(ctx, vox_optimize(ctx, be, &m, &opt, &moved));
  CHECK(moved.reason == VOX_STOP_EVALUATED);
  CHECK_CLOSE(moved.objective, again.objective, 1e-8 * again.objective);
  for (size_t i = 0; i < m.n_constraints; i++)
    for (int c = 0; c < m.n_load_cases; c++) CHECK(*at_constraint(&m, i, c) == 0);
  vox_model_free(&m);
}

static void test_bad_options(vox_context *ctx, vox_backend *be) {
  vox_model m;
  make_cantilever(ctx, &m, 4);
  vox_optimizer_options opt;
  vox_optimizer_options_default(&opt);
  vox_optimize_result r;
  opt.volume_fraction = 1.5;
  CHECK(vox_optimize(ctx, be, &m, &opt, &r) == VOX_ERR_INVALID_ARGUMENT);
  CHECK(strstr(vox_context_message(ctx), "volume fraction") != NULL);
  vox_optimizer_options_default(&opt);
  m.constraints[0].value = 0.1;
  CHECK(vox_optimize(ctx, be, &m, &opt, &r) == VOX_ERR_UNSUPPORTED);
  vox_model_free(&m);
}

int main(void) {
  vox_context *ctx;
  vox_backend *be;
  vox_context_create(&ctx);
  CHECK_OK(ctx, vox_backend_create(ctx, VOX_DEVICE_CPU, &be));
  test_sensitivities(ctx, be);
  test_optimization(ctx, be, VOX_FILTER_SENSITIVITY);
  test_optimization(ctx, be, VOX_FILTER_DENSITY);
  test_reuse_same_iterates(ctx, be);
  test_settle_iterations(ctx, be);
  test_mma_sensitivity_floor(ctx, be);
  test_start_off_the_supports(ctx, be);
  test_bad_options(ctx, be);
  vox_backend_destroy(be);
  vox_context_destroy(ctx);
  CHECK_DONE();
}
