/* SPDX-License-Identifier: BSD-3-Clause */
/* Compliant mechanisms and weighted load cases through the engine:
 *
 * - springs to ground: a spring k on the loaded dof of a block makes its
 *   displacement c F / (1 + c k), c = the block's own flexibility there (a
 *   spring in parallel with the structure);
 * - the output-displacement objective -l.u and its adjoint sensitivities
 *   (Martinez-Frutos et al. 2017 eq. 6 to 8) against central finite differences on a small
 *   grid with springs, where they take both signs;
 * - weighted compliance: the value is sum w_c f_c.u_c of the single cases,
 *   its sensitivities match finite differences, and a second case of weight
 *   0 leaves the optimized design as the first case alone makes it;
 * - a small gripper (half model, symmetry plane z = 0): after optimization
 *   the jaws close (positive output displacement: the objective < 0) and the
 *   solid design (rho > 0.5) connects the input to the output. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "fem.h"
#include "objective.h"
#include "voxfe/voxfe.h"

static int64_t node(const vox_grid *g, int64_t i, int64_t j, int64_t k) {
  return (k * (g->ny + 1) + j) * (g->nx + 1) + i;
}

/* A full box of one material (E, nu), label 1. */
static void make_box(vox_context *ctx, vox_model *m, int nx, int ny, int nz, double e,
                     double nu) {
  vox_grid g = {.nx = nx, .ny = ny, .nz = nz, .voxel_size = {1, 1, 1}};
  CHECK_OK(ctx, vox_model_init(ctx, m, &g));
  memset(m->label, 1, (size_t)vox_grid_elements(&g));
  vox_material mat = {.label = 1, .youngs_modulus = e, .poisson_ratio = nu, .name = "solid"};
  CHECK_OK(ctx, vox_model_add_material(ctx, m, &mat));
  CHECK_OK(ctx, vox_model_set_load_cases(ctx, m, 1));
}

static void clamp_face_x0(vox_context *ctx, vox_model *m) {
  const vox_grid *g = &m->grid;
  for (int64_t k = 0; k <= g->nz; k++)
    for (int64_t j = 0; j <= g->ny; j++)
      for (int c = 0; c < 3; c++) CHECK_OK(ctx, vox_model_add_constraint(ctx, m, node(g, 0, j, k), c, 0));
}

/* u at one dof of the model solved at full stiffness. */
static double dof_displacement(vox_context *ctx, vox_backend *be, const vox_model *m, size_t dof,
                               vox_preconditioner pc) {
  vox_fem *fem;
  CHECK_OK(ctx, vox_fem_create(ctx, be, m, &fem));
  vox_vec u;
  be->ops->vec->create(be, fem->n_dofs, VOX_DOUBLE, &u);
  vox_solver_options opt;
  vox_solver_options_default(&opt);
  opt.rtol = 1e-13;
  opt.preconditioner = pc;
  vox_solve_result r;
  CHECK_OK(ctx, vox_fem_solve(fem, 0, &u, &opt, &r));
  CHECK(r.reason == VOX_CONVERGED_RTOL);
  double *host = malloc(fem->n_dofs * sizeof *host);
  be->ops->vec->download(be, &u, host);
  const double value = host[dof];
  free(host);
  be->ops->vec->destroy(be, &u);
  vox_fem_destroy(fem);
  return value;
}

/* Both preconditioners: multigrid's coarse levels leave the springs out. */
static void test_spring(vox_context *ctx, vox_backend *be) {
  const vox_preconditioner pcs[2] = {VOX_PC_JACOBI, VOX_PC_MULTIGRID};
  for (int i = 0; i < 2; i++) {
    const vox_preconditioner pc = pcs[i];
    vox_model m;
    make_box(ctx, &m, 12, 4, 4, 1000, 0.3);
    clamp_face_x0(ctx, &m);
    const int64_t n = node(&m.grid, 12, 1, 4);
    const double force = -2;
    CHECK_OK(ctx, vox_model_add_load(ctx, &m, n, 2, 0, force));
    const double c = dof_displacement(ctx, be, &m, 3 * (size_t)n + 2, pc) / force;
    const double k = 150;
    CHECK_OK(ctx, vox_model_add_spring(ctx, &m, n, 2, 0.4 * k)); /* two springs on one dof */
    CHECK_OK(ctx, vox_model_add_spring(ctx, &m, n, 2, 0.6 * k)); /* add up */
    CHECK_OK(ctx, vox_model_add_spring(ctx, &m, node(&m.grid, 0, 0, 0), 1, 1e6)); /* fixed: no-op */
    const double u = dof_displacement(ctx, be, &m, 3 * (size_t)n + 2, pc);
    printf("spring (%s): flexibility %.10g, u with spring %.12g, c F / (1 + c k) %.12g\n",
           vox_preconditioner_name(pc), c, u,
           c * force / (1 + c * k));
    const double want = c * force / (1 + c * k);
    CHECK(fabs(u - want) <= 1e-9 * fabs(want));
    vox_model_free(&m);
  }
}

/* The small mechanism of the sensitivity test: a block clamped at x-, an
 * input force with its spring at the middle of x+ ... and an output with its
 * spring elsewhere on x+, so that u_out depends on the density both ways. */
static void make_mechanism(vox_context *ctx, vox_model *m, int nx, int ny, int nz) {
  make_box(ctx, m, nx, ny, nz, 3000, 0.4);
  const vox_grid *g = &m->grid;
  for (int64_t j = 0; j <= ny; j++) {
    for (int c = 0; c < 3; c++) {
      CHECK_OK(ctx, vox_model_add_constraint(ctx, m, node(g, 0, j, nz), c, 0));
      CHECK_OK(ctx, vox_model_add_constraint(ctx, m, node(g, 0, j, 0), c, 0));
    }
    const int64_t in = node(g, 0, j, nz / 2), out = node(g, nx, j, nz);
    CHECK_OK(ctx, vox_model_add_load(ctx, m, in, 0, 0, 100.0 / (ny + 1)));
    CHECK_OK(ctx, vox_model_add_spring(ctx, m, in, 0, 300.0 / (ny + 1)));
    CHECK_OK(ctx, vox_model_add_output(ctx, m, out, 2, -1.0 / (ny + 1)));
    CHECK_OK(ctx, vox_model_add_spring(ctx, m, out, 2, 300.0 / (ny + 1)));
  }
  m->objective = VOX_OBJECTIVE_OUTPUT_DISPLACEMENT;
}

typedef struct fixture {
  vox_backend *be;
  vox_fem *fem;
  vox_objective_state *obj;
  vox_vec rho, energy, dc;
  vox_solver_options opt;
  double emin;
} fixture;

static void fixture_open(vox_context *ctx, vox_backend *be, const vox_model *m, fixture *f) {
  memset(f, 0, sizeof *f);
  f->be = be;
  f->emin = 1e-3;
  CHECK_OK(ctx, vox_fem_create(ctx, be, m, &f->fem));
  CHECK_OK(ctx, vox_objective_create(ctx, f->fem, m, &f->obj));
  be->ops->vec->create(be, f->fem->n_elements, VOX_DOUBLE, &f->rho);
  be->ops->vec->create(be, f->fem->n_elements, VOX_DOUBLE, &f->energy);
  be->ops->vec->create(be, f->fem->n_elements, VOX_DOUBLE, &f->dc);
  vox_solver_options_default(&f->opt);
  f->opt.rtol = 1e-13;
}

static void fixture_close(fixture *f) {
  f->be->ops->vec->destroy(f->be, &f->rho);
  f->be->ops->vec->destroy(f->be, &f->energy);
  f->be->ops->vec->destroy(f->be, &f->dc);
  vox_objective_destroy(f->obj);
  vox_fem_destroy(f->fem);
}

/* The objective at densities rho (host); dc gets its sensitivities when not NULL. */
static double objective(fixture *f, const double *rho, double p, double *dc) {
  const vox_backend_ops *o = f->be->ops;
  o->vec->upload(f->be, &f->rho, rho);
  o->design->simp_moduli(f->be, &f->rho, &f->fem->e_solid, p, f->emin, &f->fem->moduli);
  vox_fem_update(f->fem);
  double value;
  int cg;
  vox_solve_result failed;
  CHECK_OK(f->be->ctx, vox_objective_evaluate(f->obj, &f->opt, dc ? &f->energy : NULL, &value,
                                              &cg, &failed));
  CHECK(failed.reason > 0);
  if (dc) {
    o->design->simp_sensitivity(f->be, &f->rho, &f->fem->e_solid, &f->energy, p, f->emin, &f->dc);
    o->vec->download(f->be, &f->dc, dc);
  }
  return value;
}

/* Central differences at a few elements; returns how many sensitivities of
 * each sign the whole field has. */
static void check_against_differences(fixture *f, double *rho, double p, int *n_pos, int *n_neg) {
  const size_t ne = f->fem->n_elements;
  double *dc = malloc(ne * sizeof *dc);
  const double value = objective(f, rho, p, dc);
  *n_pos = *n_neg = 0;
  double dc_max = 0;
  for (size_t e = 0; e < ne; e++) {
    *n_pos += dc[e] > 0, *n_neg += dc[e] < 0;
    dc_max = fmax(dc_max, fabs(dc[e]));
  }
  printf("objective %.12g; sensitivities: %d positive, %d negative\n", value, *n_pos, *n_neg);
  const size_t probe[] = {0, 5, 17, ne / 3, ne / 2, ne - 7, ne - 1};
  for (size_t i = 0; i < sizeof probe / sizeof probe[0]; i++) {
    const size_t e = probe[i];
    const double h = 1e-5, saved = rho[e];
    rho[e] = saved + h;
    const double fp = objective(f, rho, p, NULL);
    rho[e] = saved - h;
    const double fm = objective(f, rho, p, NULL);
    rho[e] = saved;
    const double fd = (fp - fm) / (2 * h);
    printf("  element %3zu: df/drho %+.10e, central difference %+.10e\n", e, dc[e], fd);
    /* relative to the element's own value, and to the largest for the small ones */
    CHECK(fabs(dc[e] - fd) <= 1e-6 * fabs(dc[e]) + 1e-7 * dc_max);
  }
  free(dc);
}

static void test_adjoint_sensitivities(vox_context *ctx, vox_backend *be) {
  vox_model m;
  make_mechanism(ctx, &m, 8, 2, 6);
  fixture f;
  fixture_open(ctx, be, &m, &f);
  CHECK(vox_objective_has_adjoint(f.obj));
  const size_t ne = f.fem->n_elements;
  double *rho = malloc(ne * sizeof *rho);
  srand(7);
  for (size_t e = 0; e < ne; e++) rho[e] = 0.2 + 0.8 * rand() / (double)RAND_MAX;
  int n_pos, n_neg;
  check_against_differences(&f, rho, 3, &n_pos, &n_neg);
  CHECK(n_pos > 0 && n_neg > 0); /* a mechanism's sensitivities take both signs */
  /* the value is -l.u of the state */
  const double value = objective(&f, rho, 3, NULL);
  double *u = malloc(f.fem->n_dofs * sizeof *u);
  be->ops->vec->download(be, vox_objective_state_vector(f.obj, 0), u);
  double lu = 0;
  for (size_t i = 0; i < m.n_outputs; i++)
    lu += m.outputs[i].weight * u[3 * (size_t)m.outputs[i].node + m.outputs[i].component];
  CHECK(fabs(value + lu) <= 1e-12 * fabs(lu));
  free(u);
  free(rho);
  fixture_close(&f);
  vox_model_free(&m);
}

/* A cantilever with two load cases: a tip load down and one sideways. */
static void make_two_cases(vox_context *ctx, vox_model *m) {
  make_box(ctx, m, 8, 3, 3, 1, 0.3);
  clamp_face_x0(ctx, m);
  CHECK_OK(ctx, vox_model_set_load_cases(ctx, m, 2));
  for (int64_t j = 0; j <= 3; j++) {
    CHECK_OK(ctx, vox_model_add_load(ctx, m, node(&m->grid, 8, j, 0), 2, 0, -0.25));
    CHECK_OK(ctx, vox_model_add_load(ctx, m, node(&m->grid, 8, j, 3), 1, 1, 0.1));
  }
}

static void test_weighted_compliance(vox_context *ctx, vox_backend *be) {
  vox_model m;
  make_two_cases(ctx, &m);
  const size_t ne = (size_t)vox_grid_elements(&m.grid);
  double *rho = malloc(ne * sizeof *rho);
  srand(3);
  for (size_t e = 0; e < ne; e++) rho[e] = 0.3 + 0.7 * rand() / (double)RAND_MAX;
  /* each case alone: weights (1, 0) and (0, 1) */
  double single[2];
  for (int c = 0; c < 2; c++) {
    const double w[2] = {c == 0, c == 1};
    CHECK_OK(ctx, vox_model_set_load_case_weights(ctx, &m, w));
    fixture f;
    fixture_open(ctx, be, &m, &f);
    single[c] = objective(&f, rho, 3, NULL);
    fixture_close(&f);
  }
  const double w[2] = {0.7, 2.5};
  CHECK_OK(ctx, vox_model_set_load_case_weights(ctx, &m, w));
  fixture f;
  fixture_open(ctx, be, &m, &f);
  const double both = objective(&f, rho, 3, NULL);
  printf("weighted compliance %.12g, 0.7 c1 + 2.5 c2 = %.12g\n", both,
         0.7 * single[0] + 2.5 * single[1]);
  CHECK(single[0] > 0 && single[1] > 0);
  CHECK(fabs(both - (0.7 * single[0] + 2.5 * single[1])) <= 1e-10 * both);
  int n_pos, n_neg;
  check_against_differences(&f, rho, 3, &n_pos, &n_neg);
  CHECK(n_pos == 0); /* compliance only falls with material */
  fixture_close(&f);
  free(rho);

  /* a case of weight 0 leaves the design of the other alone */
  vox_optimizer_options opt;
  vox_optimizer_options_default(&opt);
  opt.volume_fraction = 0.4;
  opt.max_iterations = 8;
  opt.continuation = 0;
  opt.solver.rtol = 1e-10;
  vox_optimize_result r;
  vox_model one, zero;
  CHECK_OK(ctx, vox_model_copy(ctx, &one, &m));
  CHECK_OK(ctx, vox_model_set_load_case_weights(ctx, &one, NULL));
  CHECK_OK(ctx, vox_model_set_load_cases(ctx, &one, 1));
  size_t kept = 0;
  for (size_t i = 0; i < one.n_loads; i++)
    if (one.loads[i].load_case == 0) one.loads[kept++] = one.loads[i];
  one.n_loads = kept;
  CHECK_OK(ctx, vox_model_copy(ctx, &zero, &m));
  const double w0[2] = {1, 0};
  CHECK_OK(ctx, vox_model_set_load_case_weights(ctx, &zero, w0));
  CHECK_OK(ctx, vox_optimize(ctx, be, &one, &opt, &r));
  const double c_one = r.objective;
  CHECK_OK(ctx, vox_optimize(ctx, be, &zero, &opt, &r));
  double diff = 0;
  for (size_t e = 0; e < ne; e++) diff = fmax(diff, fabs(one.density[e] - zero.density[e]));
  printf("weight 0 on the second case: objective %.12g (one case %.12g), max density "
         "difference %.3g\n",
         r.objective, c_one, diff);
  CHECK(diff <= 1e-9);
  CHECK(fabs(r.objective - c_one) <= 1e-9 * c_one);
  /* and weights change the design */
  vox_model heavy;
  CHECK_OK(ctx, vox_model_copy(ctx, &heavy, &m));
  const double w1[2] = {1, 50};
  CHECK_OK(ctx, vox_model_set_load_case_weights(ctx, &heavy, w1));
  CHECK_OK(ctx, vox_optimize(ctx, be, &heavy, &opt, &r));
  diff = 0;
  for (size_t e = 0; e < ne; e++) diff = fmax(diff, fabs(one.density[e] - heavy.density[e]));
  CHECK(diff > 0.05);
  vox_model_free(&heavy);
  vox_model_free(&one);
  vox_model_free(&zero);
  vox_model_free(&m);
}

/* The small gripper: the half model above its symmetry plane z = 0. Input
 * at the middle of the left face (on the plane), pushed in +x, with its
 * spring; the left face's top edge held; jaws on the right face above a
 * passive-void gap, their output the closing -z movement with its spring. */
enum { GX = 32, GY = 2, GZ = 16, GAP_X = 6, GAP_Z = 3 };

static void make_gripper(vox_context *ctx, vox_model *m) {
  make_box(ctx, m, GX, GY, GZ, 3000, 0.4);
  const vox_grid *g = &m->grid;
  vox_material gap = {.label = 3, .role = VOX_ROLE_VOID, .youngs_modulus = 3000,
                      .poisson_ratio = 0.4, .name = "gap"};
  CHECK_OK(ctx, vox_model_add_material(ctx, m, &gap));
  for (int64_t k = 0; k < GAP_Z; k++)
    for (int64_t j = 0; j < GY; j++)
      for (int64_t i = GX - GAP_X; i < GX; i++) m->label[(k * GY + j) * GX + i] = 3;
  for (int64_t i = 0; i <= GX; i++) /* symmetry plane */
    for (int64_t j = 0; j <= GY; j++)
      CHECK_OK(ctx, vox_model_add_constraint(ctx, m, node(g, i, j, 0), 2, 0));
  for (int64_t j = 0; j <= GY; j++) {
    for (int c = 0; c < 3; c++)
      CHECK_OK(ctx, vox_model_add_constraint(ctx, m, node(g, 0, j, GZ), c, 0));
    const int64_t in = node(g, 0, j, 0), out = node(g, GX, j, GAP_Z);
    CHECK_OK(ctx, vox_model_add_load(ctx, m, in, 0, 0, 500.0 / (GY + 1)));
    CHECK_OK(ctx, vox_model_add_spring(ctx, m, in, 0, 500.0 / (GY + 1)));
    CHECK_OK(ctx, vox_model_add_output(ctx, m, out, 2, -1.0 / (GY + 1)));
    CHECK_OK(ctx, vox_model_add_spring(ctx, m, out, 2, 500.0 / (GY + 1)));
  }
  m->objective = VOX_OBJECTIVE_OUTPUT_DISPLACEMENT;
}

/* Solid elements (rho > 0.5) reachable from the element at the input reach
 * the element at the output, elements that share a node counting as
 * connected: they are in the finite element model (load passes through the
 * shared node), and the hinges of mechanism designs are often such one-node
 * joints. */
static int connected(const double *rho, int64_t from, int64_t to) {
  const int64_t ne = (int64_t)GX * GY * GZ;
  int64_t *queue = malloc((size_t)ne * sizeof *queue);
  char *seen = calloc((size_t)ne, 1);
  int64_t head = 0, tail = 0;
  if (rho[from] > 0.5) queue[tail++] = from, seen[from] = 1;
  while (head < tail) {
    const int64_t e = queue[head++];
    const int64_t i = e % GX, j = (e / GX) % GY, k = e / ((int64_t)GX * GY);
    for (int64_t c = k - 1; c <= k + 1; c++)
      for (int64_t b = j - 1; b <= j + 1; b++)
        for (int64_t a = i - 1; a <= i + 1; a++) {
          if (a < 0 || a >= GX || b < 0 || b >= GY || c < 0 || c >= GZ) continue;
          const int64_t n = (c * GY + b) * GX + a;
          if (!seen[n] && rho[n] > 0.5) seen[n] = 1, queue[tail++] = n;
        }
  }
  const int reached = seen[to];
  free(queue), free(seen);
  return reached;
}

static void test_gripper(vox_context *ctx, vox_backend *be) {
  vox_model m;
  make_gripper(ctx, &m);
  vox_optimizer_options opt;
  vox_optimizer_options_default(&opt);
  opt.volume_fraction = 0.25;
  opt.emin_ratio = 1.0 / 3000; /* E_void = 1 MPa, as Martinez-Frutos et al. 2017's gripper */
  opt.filter_radius = 1.5;
  opt.move_limit = 0.1;
  opt.damping = 0.3;
  opt.max_iterations = 60;
  opt.continuation_start_p = 10;
  opt.continuation_growth_p = 1.1;
  opt.solver.rtol = 1e-8;
  vox_optimize_result r;
  CHECK_OK(ctx, vox_optimize(ctx, be, &m, &opt, &r));
  printf("gripper %dx%dx%d: -u_out %.6g -> %.6g mm after %d iterations, volume %.4f, M_nd "
         "%.2f%%\n",
         GX, GY, GZ, m.history[0].objective, r.objective, r.iterations, r.volume_fraction,
         r.non_discreteness);
  if (getenv("VOXFE_TEST_VERBOSE")) /* the design, slice j = 0, z up */
    for (int64_t k = GZ - 1; k >= 0; k--) {
      for (int64_t i = 0; i < GX; i++) {
        const double d = m.density[(k * GY) * GX + i];
        putchar(d > 0.75 ? '#' : d > 0.5 ? '+' : d > 0.25 ? '.' : ' ');
      }
      printf("|\n");
    }
  printf("total CG iterations %d\n", r.total_cg_iterations);
  CHECK(r.reason != VOX_STOP_SOLVER_FAILED);
  CHECK(r.objective < 0);                        /* the jaws close */
  CHECK(r.objective < m.history[0].objective);   /* and more than at the start */
  CHECK(fabs(r.volume_fraction - 0.25) < 1e-3);
  CHECK(r.adjoint_gpu == -1);                    /* the CPU solves its own adjoint */
  /* the stored displacement moves the output node down (closing) */
  const double uz = m.displacement[3 * (size_t)node(&m.grid, GX, 0, GAP_Z) + 2];
  CHECK(uz < 0);
  /* input element (0, 0, 0) to the jaw element (GX-1, 0, GAP_Z) */
  CHECK(connected(m.density, 0, ((int64_t)GAP_Z * GY) * GX + GX - 1));
  vox_model_free(&m);
}

int main(int argc, char **argv) {
  vox_context *ctx;
  vox_backend *be;
  if (vox_context_create(&ctx) || vox_backend_create(ctx, VOX_DEVICE_CPU, &be)) return 1;
  const char *only = argc > 1 ? argv[1] : "";
  if (!*only || !strcmp(only, "spring")) test_spring(ctx, be);
  if (!*only || !strcmp(only, "adjoint")) test_adjoint_sensitivities(ctx, be);
  if (!*only || !strcmp(only, "weights")) test_weighted_compliance(ctx, be);
  if (!*only || !strcmp(only, "gripper")) test_gripper(ctx, be);
  vox_backend_destroy(be);
  vox_context_destroy(ctx);
  CHECK_DONE();
}
