/* SPDX-License-Identifier: BSD-3-Clause */
/* The matrix-free PCG solve: a homogeneous bar in uniaxial tension against
 * its analytic stiffness EA/L, the residual really below the tolerance, a
 * prescribed displacement giving the analytic reaction, and a half model
 * with a symmetry plane against the whole, the start of a solve from a
 * history of earlier solutions, and the CG's energy and reaction tests. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "fem.h"
#include "voxfe/voxfe.h"

static int64_t node(const vox_grid *g, int64_t i, int64_t j, int64_t k) {
  return (k * (g->ny + 1) + j) * (g->nx + 1) + i;
}

/* A bar along x on symmetry planes x-, y-, z- (rollers), so that it
 * contracts freely: the stress is exactly uniaxial. */
static void make_bar(vox_context *ctx, vox_model *m, double E, double nu) {
  vox_grid g = {.nx = 8, .ny = 3, .nz = 2, .voxel_size = {1.5, 1.0, 2.0}};
  CHECK_OK(ctx, vox_model_init(ctx, m, &g));
  memset(m->label, 1, (size_t)vox_grid_elements(&g));
  vox_material mat = {.label = 1, .youngs_modulus = E, .poisson_ratio = nu, .name = "steel"};
  CHECK_OK(ctx, vox_model_add_material(ctx, m, &mat));
  for (int64_t k = 0; k <= g.nz; k++)
    for (int64_t j = 0; j <= g.ny; j++)
      for (int64_t i = 0; i <= g.nx; i++) {
        if (i == 0) CHECK_OK(ctx, vox_model_add_constraint(ctx, m, node(&g, i, j, k), 0, 0));
        if (j == 0) CHECK_OK(ctx, vox_model_add_constraint(ctx, m, node(&g, i, j, k), 1, 0));
        if (k == 0) CHECK_OK(ctx, vox_model_add_constraint(ctx, m, node(&g, i, j, k), 2, 0));
      }
  CHECK_OK(ctx, vox_model_set_load_cases(ctx, m, 1));
}

static void test_tension(vox_context *ctx, vox_backend *be) {
  const double E = 2000, nu = 0.3, F = 12.0;
  vox_model m;
  make_bar(ctx, &m, E, nu);
  const vox_grid *g = &m.grid;
  /* total force F on face x+, spread by tributary area: a uniform traction */
  const double area = g->ny * g->voxel_size[1] * g->nz * g->voxel_size[2];
  for (int64_t k = 0; k <= g->nz; k++)
    for (int64_t j = 0; j <= g->ny; j++) {
      const double wy = (j == 0 || j == g->ny) ? 0.5 : 1, wz = (k == 0 || k == g->nz) ? 0.5 : 1;
      const double f = F * wy * g->voxel_size[1] * wz * g->voxel_size[2] / area;
      CHECK_OK(ctx, vox_model_add_load(ctx, &m, node(g, g->nx, j, k), 0, 0, f));
    }
  const size_t nd = 3 * (size_t)vox_grid_nodes(g);
  double *u = calloc(nd, sizeof *u);
  vox_solver_options opt;
  vox_solver_options_default(&opt);
  opt.rtol = 1e-12;
  vox_solve_result r;
  CHECK_OK(ctx, vox_solve_elasticity(ctx, be, &m, 0, 3, 1e-9, &opt, u, &r));
  CHECK(r.reason == VOX_CONVERGED_RTOL);
  CHECK(r.residual_norm <= 1e-12 * r.rhs_norm);
  const double L = g->nx * g->voxel_size[0];
  const double expected_ux = F * L / (E * area), expected_uy = -nu * F / (E * area);
  for (int64_t k = 0; k <= g->nz; k++)
    for (int64_t j = 0; j <= g->ny; j++) {
      CHECK_CLOSE(u[3 * node(g, g->nx, j, k)], expected_ux, 1e-9);
      CHECK_CLOSE(u[3 * node(g, g->nx, j, k) + 1] * 1e3, expected_uy * j * g->voxel_size[1] * 1e3,
                  1e-8);
    }
  /* stiffness F / u = EA / L */
  CHECK_CLOSE(F / u[3 * node(g, g->nx, 1, 1)], E * area / L, 1e-9);

  /* The true residual of the loose solve is below its tolerance. */
  vox_fem *fem;
  CHECK_OK(ctx, vox_fem_create(ctx, be, &m, &fem));
  vox_vec uv, kv;
  be->ops->vec->create(be, nd, VOX_DOUBLE, &uv);
  be->ops->vec->create(be, nd, VOX_DOUBLE, &kv);
  opt.rtol = 1e-6;
  CHECK_OK(ctx, vox_fem_solve(fem, 0, &uv, &opt, &r));
  CHECK(r.reason == VOX_CONVERGED_RTOL && r.iterations > 1);
  be->ops->op->apply(be, fem->op, &uv, &kv, 0);
  be->ops->vec->axpy(be, &kv, -1, &fem->force[0]);
  double rr;
  be->ops->vec->dot(be, &kv, &kv, &rr);
  CHECK(sqrt(rr) <= 1.0001e-6 * r.rhs_norm);
  /* and an iteration limit is reported as such, not as an error */
  opt.max_iterations = 2;
  be->ops->vec->set(be, &uv, 0);
  CHECK_OK(ctx, vox_fem_solve(fem, 0, &uv, &opt, &r));
  CHECK(r.reason == VOX_DIVERGED_MAX_ITERATIONS && r.iterations == 2);
  be->ops->vec->destroy(be, &uv);
  be->ops->vec->destroy(be, &kv);
  vox_fem_destroy(fem);
  free(u);
  vox_model_free(&m);
}

/* The bar with its face x+ pulled by a prescribed displacement d. */
static void make_pulled_bar(vox_context *ctx, vox_model *m, double E, double nu, double d) {
  make_bar(ctx, m, E, nu);
  const vox_grid *g = &m->grid;
  for (int64_t k = 0; k <= g->nz; k++)
    for (int64_t j = 0; j <= g->ny; j++)
      CHECK_OK(ctx, vox_model_add_constraint(ctx, m, node(g, g->nx, j, k), 0, d));
}

/* The sum of (K u)_x over face x+, by the full operator. */
static double face_reaction(vox_context *ctx, vox_backend *be, const vox_model *m,
                            const double *u) {
  const vox_grid *g = &m->grid;
  const size_t nd = 3 * (size_t)vox_grid_nodes(g);
  vox_fem *fem;
  CHECK_OK(ctx, vox_fem_create(ctx, be, m, &fem));
  vox_vec uv, kv;
  be->ops->vec->create(be, nd, VOX_DOUBLE, &uv);
  be->ops->vec->create(be, nd, VOX_DOUBLE, &kv);
  be->ops->vec->upload(be, &uv, u);
  be->ops->op->apply(be, fem->op, &uv, &kv, VOX_APPLY_FULL);
  double *ku = malloc(nd * sizeof *ku), reaction = 0;
  be->ops->vec->download(be, &kv, ku);
  for (int64_t k = 0; k <= g->nz; k++)
    for (int64_t j = 0; j <= g->ny; j++) reaction += ku[3 * node(g, g->nx, j, k)];
  free(ku);
  be->ops->vec->destroy(be, &uv);
  be->ops->vec->destroy(be, &kv);
  vox_fem_destroy(fem);
  return reaction;
}

/* Face x+ pulled by a prescribed displacement d: the reaction is EA d / L. */
static void test_prescribed(vox_context *ctx, vox_backend *be) {
  const double E = 500, nu = 0.2, d = 0.01;
  vox_model m;
  make_pulled_bar(ctx, &m, E, nu, d);
  const vox_grid *g = &m.grid;
  const size_t nd = 3 * (size_t)vox_grid_nodes(g);
  double *u = calloc(nd, sizeof *u);
  vox_solver_options opt;
  vox_solver_options_default(&opt);
  opt.rtol = 1e-12;
  vox_solve_result r;
  CHECK_OK(ctx, vox_solve_elasticity(ctx, be, &m, 0, 3, 1e-9, &opt, u, &r));
  CHECK(r.reason == VOX_CONVERGED_RTOL);
  const double L = g->nx * g->voxel_size[0];
  for (int64_t i = 0; i <= g->nx; i++)
    CHECK_CLOSE(u[3 * node(g, i, 2, 1)], d * i * g->voxel_size[0] / L, 1e-9);
  /* the reaction on face x+ from the full operator */
  const double area = g->ny * g->voxel_size[1] * g->nz * g->voxel_size[2];
  CHECK_CLOSE(face_reaction(ctx, be, &m, u), E * area * d / L, 1e-9);
  free(u);
  vox_model_free(&m);
}

/* The reaction test on the full box (ksp.h, vox_ksp_lift): the bar pulled
 * by a prescribed displacement of its end face, solved with Jacobi (many
 * steps), stops by the reactions' work g'K u settling to 1e-8 over 8
 * steps, before the residual test would, with the face's reaction within
 * 1e-6 of EA d / L; without prescribed values the test is off. */
static void test_reaction_stop(vox_context *ctx, vox_backend *be) {
  const double E = 500, nu = 0.2, d = 0.01;
  vox_model m;
  make_pulled_bar(ctx, &m, E, nu, d);
  const vox_grid *g = &m.grid;
  const size_t nd = 3 * (size_t)vox_grid_nodes(g);
  double *u = calloc(nd, sizeof *u);
  vox_solver_options opt;
  vox_solver_options_default(&opt);
  opt.preconditioner = VOX_PC_JACOBI;
  opt.storage = VOX_STORAGE_FULL_BOX;
  opt.rtol = 1e-12;
  vox_solve_result r;
  CHECK_OK(ctx, vox_solve_elasticity(ctx, be, &m, 0, 1, 0, &opt, u, &r));
  const int full = r.iterations;
  opt.reaction_tol = 1e-8;
  opt.cg_window = 8;
  memset(u, 0, nd * sizeof *u);
  CHECK_OK(ctx, vox_solve_elasticity(ctx, be, &m, 0, 1, 0, &opt, u, &r));
  const double reaction = face_reaction(ctx, be, &m, u), L = g->nx * g->voxel_size[0],
               area = g->ny * g->voxel_size[1] * g->nz * g->voxel_size[2];
  fprintf(stderr, "reaction test, full box: %d CG (%d to a residual of 1e-12), reaction %.10g "
          "against EA d / L %.10g\n", r.iterations, full, reaction, E * area * d / L);
  CHECK(r.reason == VOX_CONVERGED_REACTION && r.iterations < full);
  CHECK_CLOSE(reaction, E * area * d / L, 1e-6);
  /* loads alone: no reactions' work, the residual decides */
  vox_model bar;
  make_bar(ctx, &bar, E, nu);
  CHECK_OK(ctx, vox_model_add_load(ctx, &bar, node(&bar.grid, bar.grid.nx, 1, 1), 0, 0, 1));
  const size_t nb = 3 * (size_t)vox_grid_nodes(&bar.grid);
  double *ub = calloc(nb, sizeof *ub);
  opt.rtol = 1e-8;
  CHECK_OK(ctx, vox_solve_elasticity(ctx, be, &bar, 0, 1, 0, &opt, ub, &r));
  CHECK(r.reason == VOX_CONVERGED_RTOL);
  free(ub), free(u);
  vox_model_free(&bar), vox_model_free(&m);
}

/* The operator with one dof per node (heat conduction): a bar held at T = 0
 * on face x- and heated by a total flux Q through face x+ reaches
 * T = Q L / (k A) there, the same at every node of the face. */
static void test_conduction(vox_context *ctx, vox_backend *be) {
  const vox_grid g = {.nx = 6, .ny = 2, .nz = 3, .voxel_size = {0.5, 1.0, 0.75}};
  const double k = 0.2, Q = 3.0;
  double ke[64];
  CHECK(vox_hex8_conduction(1.0, g.voxel_size, ke) == 0);
  const size_t nn = (size_t)vox_grid_nodes(&g), ne = (size_t)vox_grid_elements(&g);
  uint8_t *fixed = calloc(nn, 1);
  double *q = calloc(nn, sizeof *q), *t = calloc(nn, sizeof *t), *mod = malloc(ne * sizeof *mod);
  const double area = g.ny * g.voxel_size[1] * g.nz * g.voxel_size[2];
  for (int64_t kk = 0; kk <= g.nz; kk++)
    for (int64_t j = 0; j <= g.ny; j++) {
      fixed[node(&g, 0, j, kk)] = 1;
      const double wy = (j == 0 || j == g.ny) ? 0.5 : 1, wz = (kk == 0 || kk == g.nz) ? 0.5 : 1;
      q[node(&g, g.nx, j, kk)] = Q * wy * g.voxel_size[1] * wz * g.voxel_size[2] / area;
    }
  for (size_t e = 0; e < ne; e++) mod[e] = k;
  vox_operator_desc desc = {.grid = g, .dofs_per_node = 1, .ke = ke, .dof_fixed = fixed};
  vox_operator *op;
  CHECK_OK(ctx, be->ops->op->create(be, &desc, &op));
  vox_vec m, b, x, d;
  be->ops->vec->create(be, ne, VOX_DOUBLE, &m), be->ops->vec->create(be, nn, VOX_DOUBLE, &b);
  be->ops->vec->create(be, nn, VOX_DOUBLE, &x), be->ops->vec->create(be, nn, VOX_DOUBLE, &d);
  be->ops->vec->upload(be, &m, mod);
  be->ops->vec->upload(be, &b, q);
  be->ops->op->set_moduli(be, op, &m);
  be->ops->op->diagonal(be, op, &d);
  be->ops->vec->reciprocal(be, &d);
  vox_ksp_work work;
  CHECK_OK(ctx, vox_ksp_work_create(be, nn, &work));
  vox_solver_options opt;
  vox_solver_options_default(&opt);
  opt.rtol = 1e-13;
  vox_solve_result r;
  vox_pc_jacobi jacobi;
  const vox_pc pc = vox_pc_jacobi_make(&jacobi, be, &d);
  CHECK_OK(ctx, vox_ksp_solve(be, op, &pc, &b, &x, NULL, NULL, &opt, &work, &r));
  CHECK(r.reason == VOX_CONVERGED_RTOL);
  be->ops->vec->download(be, &x, t);
  for (int64_t kk = 0; kk <= g.nz; kk++)
    for (int64_t j = 0; j <= g.ny; j++)
      for (int64_t i = 0; i <= g.nx; i++)
        CHECK_CLOSE(t[node(&g, i, j, kk)], Q * i * g.voxel_size[0] / (k * area), 1e-10);
  vox_ksp_work_destroy(be, &work);
  vox_vec *v[] = {&m, &b, &x, &d};
  for (int i = 0; i < 4; i++) be->ops->vec->destroy(be, v[i]);
  be->ops->op->destroy(be, op);
  free(fixed), free(q), free(t), free(mod);
}

/* A cantilever block clamped at x- with a load along its free top edge
 * that is symmetric about the plane y = NY/2, built whole (half = 0) or as
 * the half y <= NY/2 with u_y = 0 on that plane (half = 1), the half
 * carrying half the load (Martinez-Frutos et al. 2017 solves half and quarter models so). */
static void make_symmetric_block(vox_context *ctx, vox_model *m, int half) {
  enum { NX = 8, NY = 8, NZ = 4 };
  vox_grid g = {.nx = NX, .ny = half ? NY / 2 : NY, .nz = NZ, .voxel_size = {1, 1, 1}};
  CHECK_OK(ctx, vox_model_init(ctx, m, &g));
  memset(m->label, 1, (size_t)vox_grid_elements(&g));
  vox_material mat = {.label = 1, .youngs_modulus = 1, .poisson_ratio = 0.3};
  CHECK_OK(ctx, vox_model_add_material(ctx, m, &mat));
  for (int64_t k = 0; k <= g.nz; k++)
    for (int64_t j = 0; j <= g.ny; j++) {
      for (int c = 0; c < 3; c++)
        CHECK_OK(ctx, vox_model_add_constraint(ctx, m, node(&g, 0, j, k), c, 0));
      if (half)
        for (int64_t i = 1; i <= g.nx; i++)
          if (j == g.ny) CHECK_OK(ctx, vox_model_add_constraint(ctx, m, node(&g, i, j, k), 1, 0));
    }
  CHECK_OK(ctx, vox_model_set_load_cases(ctx, m, 1));
  /* -1 N over the whole edge, the end nodes (and the plane's, shared by
   * the two halves) at half weight */
  for (int64_t j = 0; j <= g.ny; j++) {
    const double w = (j == 0 || j == g.ny) ? 0.5 : 1;
    CHECK_OK(ctx, vox_model_add_load(ctx, m, node(&g, g.nx, j, g.nz), 2, 0, -w / NY));
  }
}

static double solve_compliance(vox_context *ctx, vox_backend *be, const vox_model *m, double *u) {
  vox_solver_options opt;
  vox_solver_options_default(&opt);
  opt.rtol = 1e-12;
  vox_solve_result res;
  memset(u, 0, 3 * (size_t)vox_grid_nodes(&m->grid) * sizeof *u);
  CHECK_OK(ctx, vox_solve_elasticity(ctx, be, m, 0, 1, 0, &opt, u, &res));
  CHECK(res.reason == VOX_CONVERGED_RTOL);
  double c = 0;
  for (size_t l = 0; l < m->n_loads; l++)
    c += m->loads[l].value * u[3 * (size_t)m->loads[l].node + m->loads[l].component];
  return c;
}

/* The half model with its symmetry plane: half the compliance of the whole,
 * and the same displacements where they overlap. */
static void test_symmetry_plane(vox_context *ctx, vox_backend *be) {
  vox_model whole, half;
  make_symmetric_block(ctx, &whole, 0);
  make_symmetric_block(ctx, &half, 1);
  double *uw = malloc(3 * (size_t)vox_grid_nodes(&whole.grid) * sizeof *uw),
         *uh = malloc(3 * (size_t)vox_grid_nodes(&half.grid) * sizeof *uh);
  const double cw = solve_compliance(ctx, be, &whole, uw);
  const double ch = solve_compliance(ctx, be, &half, uh);
  fprintf(stderr, "symmetry plane: whole compliance %.12g, twice the half's %.12g\n", cw, 2 * ch);
  CHECK(fabs(cw - 2 * ch) <= 1e-9 * cw);
  double worst = 0, scale = 0;
  for (int64_t k = 0; k <= half.grid.nz; k++)
    for (int64_t j = 0; j <= half.grid.ny; j++)
      for (int64_t i = 0; i <= half.grid.nx; i++)
        for (int c = 0; c < 3; c++) {
          const double a = uw[3 * node(&whole.grid, i, j, k) + c];
          const double b = uh[3 * node(&half.grid, i, j, k) + c];
          worst = fmax(worst, fabs(a - b));
          scale = fmax(scale, fabs(a));
        }
  CHECK(worst <= 1e-8 * scale);
  free(uw), free(uh);
  vox_model_free(&whole), vox_model_free(&half);
}

/* |K x - f| / |f| of the block's load case on the backend. */
static double true_residual(vox_backend *be, vox_fem *fem, const vox_vec *x, vox_vec *t) {
  double rr, ff;
  be->ops->op->apply(be, fem->op, x, t, 0);
  be->ops->vec->axpy(be, t, -1, &fem->force[0]);
  be->ops->vec->dot(be, t, t, &rr);
  be->ops->vec->dot(be, &fem->force[0], &fem->force[0], &ff);
  return sqrt(rr / ff);
}

/* max |x - y| / max |y| on the host. */
static double max_rel_diff(vox_backend *be, const vox_vec *x, const vox_vec *y, size_t n) {
  double *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b), d = 0, m = 0;
  be->ops->vec->download(be, x, a), be->ops->vec->download(be, y, b);
  for (size_t i = 0; i < n; i++) d = fmax(d, fabs(a[i] - b[i])), m = fmax(m, fabs(b[i]));
  free(a), free(b);
  return d / m;
}

/* A solve with a history of earlier solutions (ksp.h) starts from the
 * energy-minimal combination of its guess and the history: a history that
 * holds a multiple of the solution gives it exactly (no CG iteration), a
 * history of copies of one vector (a singular Gram matrix) changes nothing
 * but the start, the guess goes into the history and the oldest drops out,
 * and every solve ends at the solution to its tolerance. */
static void test_history_start(vox_context *ctx, vox_backend *be) {
  vox_model m;
  make_symmetric_block(ctx, &m, 0);
  vox_fem *fem;
  CHECK_OK(ctx, vox_fem_create(ctx, be, &m, &fem));
  const size_t n = fem->n_dofs;
  vox_vec x, exact, t;
  be->ops->vec->create(be, n, VOX_DOUBLE, &x), be->ops->vec->create(be, n, VOX_DOUBLE, &exact);
  be->ops->vec->create(be, n, VOX_DOUBLE, &t);
  vox_solver_options opt;
  vox_solver_options_default(&opt);
  opt.rtol = 1e-12;
  vox_solve_result r;
  CHECK_OK(ctx, vox_fem_solve(fem, 0, &exact, &opt, &r)); /* from 0 */
  const int plain_iterations = r.iterations;
  CHECK(r.reason == VOX_CONVERGED_RTOL && plain_iterations > 3);

  vox_ksp_history h;
  CHECK_OK(ctx, vox_ksp_history_create(be, n, 2, &h));
  /* first solve: an empty history, the guess 3 x* goes into it */
  be->ops->vec->set(be, &x, 0), be->ops->vec->axpy(be, &x, 3, &exact);
  opt.rtol = 1e-8;
  CHECK_OK(ctx, vox_fem_solve_with_history(fem, 0, &x, &h, &opt, &r));
  CHECK(r.reason == VOX_CONVERGED_RTOL && h.count == 1);
  CHECK(max_rel_diff(be, &h.v[h.newest], &exact, n) > 1.9); /* it holds 3 x* */
  CHECK(true_residual(be, fem, &x, &t) <= 1.0001e-8);
  /* from 0 with 3 x* in the history: the start is x*, no iteration */
  be->ops->vec->set(be, &x, 0);
  CHECK_OK(ctx, vox_fem_solve_with_history(fem, 0, &x, &h, &opt, &r));
  fprintf(stderr, "history start: %d CG iterations (%d from zero), |x - x*| / |x*| %.2e\n",
          r.iterations, plain_iterations, max_rel_diff(be, &x, &exact, n));
  CHECK(r.reason == VOX_CONVERGED_RTOL && r.iterations == 0);
  CHECK(max_rel_diff(be, &x, &exact, n) <= 1e-10);
  CHECK(h.count == 2); /* the zero guess is the newest now, 3 x* the older */
  double zz;
  be->ops->vec->dot(be, &h.v[h.newest], &h.v[h.newest], &zz);
  CHECK(zz == 0);
  /* a guess and a full history all equal to a rough vector: the Gram matrix
   * has rank 1, the start is its best multiple, and CG still converges */
  CHECK_OK(ctx, be->ops->vec->random(be, &x, 11, 0));
  for (int i = 0; i < 2; i++) {
    be->ops->vec->copy(be, &h.v[i], &x);
    be->ops->op->zero_fixed(be, fem->op, &h.v[i]);
  }
  be->ops->op->zero_fixed(be, fem->op, &x);
  CHECK_OK(ctx, vox_fem_solve_with_history(fem, 0, &x, &h, &opt, &r));
  CHECK(r.reason == VOX_CONVERGED_RTOL && r.iterations > 0);
  CHECK(true_residual(be, fem, &x, &t) <= 1.0001e-8);
  vox_ksp_history_destroy(be, &h);
  CHECK(vox_ksp_history_create(be, n, VOX_KSP_HISTORY_MAX + 1, &h) == VOX_ERR_INVALID_ARGUMENT);
  be->ops->vec->destroy(be, &x), be->ops->vec->destroy(be, &exact), be->ops->vec->destroy(be, &t);
  vox_fem_destroy(fem);
  vox_model_free(&m);
}

/* (x - y)'K(x - y) on the backend (t: work). */
static double energy_of_difference(vox_backend *be, vox_fem *fem, const vox_vec *x,
                                   const vox_vec *y, vox_vec *d, vox_vec *t) {
  double e;
  be->ops->vec->copy(be, d, x);
  be->ops->vec->axpy(be, d, -1, y);
  be->ops->op->apply(be, fem->op, d, t, 0);
  be->ops->vec->dot(be, d, t, &e);
  return e;
}

/* x = x* / 2 plus noise of 1e-3 |x*|_K / sqrt(n), zero on the fixed dofs:
 * the same warm start each time. */
static void warm_guess(vox_context *ctx, vox_backend *be, vox_fem *fem, const vox_vec *exact,
                       double energy, vox_vec *x) {
  CHECK_OK(ctx, be->ops->vec->random(be, x, 5, 0));
  be->ops->vec->axpby(be, x, 0.5, exact, 1e-3 * sqrt(energy / (double)fem->n_dofs));
  be->ops->op->zero_fixed(be, fem->op, x);
}

/* The energy test of the CG (--cg-energy-tol): the start's energy
 * x'(b + r) is -2 J(x) = 2 b'x - x'Kx; a solve stops by it, before the
 * residual test would, with the true relative energy error |x - x*|_K^2 /
 * |x*|_K^2 at most the tolerance, from rest and from a warm start, with
 * Jacobi (slow, many steps) and with the multigrid; a longer delay stops
 * no earlier; off (0), the residual alone decides. */
static void test_energy_stop(vox_context *ctx, vox_backend *be) {
  vox_model m;
  make_symmetric_block(ctx, &m, 0);
  vox_fem *fem;
  CHECK_OK(ctx, vox_fem_create(ctx, be, &m, &fem));
  const size_t n = fem->n_dofs;
  const vox_vector_ops *v = be->ops->vec;
  vox_vec x, exact, d, t;
  v->create(be, n, VOX_DOUBLE, &x), v->create(be, n, VOX_DOUBLE, &exact);
  v->create(be, n, VOX_DOUBLE, &d), v->create(be, n, VOX_DOUBLE, &t);
  const vox_vec *b = &fem->force[0];
  for (int pc = 0; pc < 2; pc++) {
    vox_solver_options opt;
    vox_solver_options_default(&opt);
    opt.preconditioner = pc ? VOX_PC_MULTIGRID : VOX_PC_JACOBI;
    opt.rtol = 1e-13;
    vox_solve_result r;
    v->set(be, &exact, 0);
    CHECK_OK(ctx, vox_fem_solve(fem, 0, &exact, &opt, &r));
    CHECK(r.reason == VOX_CONVERGED_RTOL);
    double energy; /* |x*|_K^2 = b'x* */
    v->dot(be, b, &exact, &energy);
    const int full = r.iterations;
    /* the start's energy against 2 b'x - x'Kx at x = x* / 2 + noise */
    warm_guess(ctx, be, fem, &exact, energy, &x);
    be->ops->op->apply(be, fem->op, &x, &t, 0); /* t = K x, d = b - K x */
    v->copy(be, &d, b);
    v->axpy(be, &d, -1, &t);
    double start, bx, xkx;
    CHECK_OK(ctx, vox_ksp_start_energy(be, &x, b, &d, &start));
    v->dot(be, b, &x, &bx), v->dot(be, &x, &t, &xkx);
    CHECK(fabs(start - (2 * bx - xkx)) <= 1e-12 * energy);
    opt.rtol = 1e-12; /* the residual test would take about `full` steps */
    for (int warm = 0; warm < 2; warm++)
      for (int k = 0; k < 3; k++) {
        const double tol = k == 0 ? 1e-4 : k == 1 ? 1e-6 : 1e-8;
        opt.energy_tol = tol;
        opt.cg_window = 4;
        if (warm)
          warm_guess(ctx, be, fem, &exact, energy, &x);
        else
          v->set(be, &x, 0);
        CHECK_OK(ctx, vox_fem_solve(fem, 0, &x, &opt, &r));
        const double error = energy_of_difference(be, fem, &x, &exact, &d, &t) / energy;
        fprintf(stderr,
                "energy test, %s, %s, tol %.0e: %d CG (%d to a residual of 1e-13), relative "
                "energy error %.2e\n",
                pc ? "multigrid" : "Jacobi", warm ? "warm start" : "from rest", tol, r.iterations,
                full, error);
        CHECK(r.reason == VOX_CONVERGED_ENERGY && r.iterations < full);
        CHECK(error <= tol && error >= 0);
        /* a longer delay: no earlier, and no worse */
        const int iterations = r.iterations;
        opt.cg_window = 12;
        if (warm)
          warm_guess(ctx, be, fem, &exact, energy, &x);
        else
          v->set(be, &x, 0);
        CHECK_OK(ctx, vox_fem_solve(fem, 0, &x, &opt, &r));
        CHECK(r.iterations >= iterations);
        CHECK(energy_of_difference(be, fem, &x, &exact, &d, &t) / energy <= error * 1.0000001);
      }
    /* off: the residual alone */
    opt.energy_tol = 0;
    opt.rtol = 1e-6;
    v->set(be, &x, 0);
    CHECK_OK(ctx, vox_fem_solve(fem, 0, &x, &opt, &r));
    CHECK(r.reason == VOX_CONVERGED_RTOL);
  }
  v->destroy(be, &x), v->destroy(be, &exact), v->destroy(be, &d), v->destroy(be, &t);
  vox_fem_destroy(fem);
  vox_model_free(&m);
}

int main(void) {
  vox_context *ctx;
  vox_backend *be;
  vox_context_create(&ctx);
  CHECK_OK(ctx, vox_backend_create(ctx, VOX_DEVICE_CPU, &be));
  test_tension(ctx, be);
  test_prescribed(ctx, be);
  test_conduction(ctx, be);
  test_symmetry_plane(ctx, be);
  test_history_start(ctx, be);
  test_energy_stop(ctx, be);
  test_reaction_stop(ctx, be);
  vox_backend_destroy(be);
  vox_context_destroy(ctx);
  CHECK_DONE();
}
