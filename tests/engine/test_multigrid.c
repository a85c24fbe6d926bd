/* SPDX-License-Identifier: BSD-3-Clause */
/* The multigrid preconditioner on the CPU: R = P^T, Galerkin coarse stencils
 * equal to R A P composed from the operators themselves, iteration counts
 * that do not grow with the grid, robustness to a 1e-9 stiffness contrast,
 * and the same solution as Jacobi-PCG, on grids not divisible by 2^levels;
 * the W-cycle symmetric, definite and no slower to converge than the V;
 * coarse smoother bounds kept between setups, and a solve redone with
 * fresh ones when kept ones break it down, or with float coarse levels
 * when a backend's narrower storage of them does. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "fem.h"
#include "voxfe/voxfe.h"

static int64_t node(const vox_grid *g, int64_t i, int64_t j, int64_t k) {
  return (k * (g->ny + 1) + j) * (g->nx + 1) + i;
}

static double uniform(uint64_t *state) {
  *state = *state * 6364136223846793005u + 1442695040888963407u;
  return (double)(*state >> 11) / 9007199254740992.0;
}

/* A cantilever clamped at x- with a load at the far bottom edge. */
static void make_cantilever(vox_context *ctx, vox_model *m, int64_t nx, int64_t ny, int64_t nz) {
  vox_grid g = {.nx = nx, .ny = ny, .nz = nz, .voxel_size = {1, 1, 1}};
  CHECK_OK(ctx, vox_model_init(ctx, m, &g));
  memset(m->label, 1, (size_t)vox_grid_elements(&g));
  vox_material mat = {.label = 1, .youngs_modulus = 1, .poisson_ratio = 0.3};
  CHECK_OK(ctx, vox_model_add_material(ctx, m, &mat));
  for (int64_t k = 0; k <= nz; k++)
    for (int64_t j = 0; j <= ny; j++)
      for (int c = 0; c < 3; c++) CHECK_OK(ctx, vox_model_add_constraint(ctx, m, node(&g, 0, j, k), c, 0));
  CHECK_OK(ctx, vox_model_set_load_cases(ctx, m, 1));
  for (int64_t j = 0; j <= ny; j++)
    CHECK_OK(ctx, vox_model_add_load(ctx, m, node(&g, nx, j, 0), 2, 0, -1.0 / (double)(ny + 1)));
}

static void random_vec(vox_backend *be, vox_vec *v, uint64_t seed) {
  double *h = malloc(v->n * sizeof *h);
  for (size_t i = 0; i < v->n; i++) h[i] = uniform(&seed) - 0.5;
  be->ops->vec->upload(be, v, h);
  free(h);
}

/* Whether every value of a stencil is a float (the storage of a mixed
 * precision stencil). */
static int stencil_values_are_floats(vox_backend *be, const vox_stencil *st, const vox_grid *g,
                                     int dpn) {
  const size_t n = (size_t)vox_grid_nodes(g) * 27 * (size_t)(dpn * dpn);
  double *h = malloc(n * sizeof *h);
  be->ops->mg->stencil_download(be, st, h);
  int floats = 1, nonzero = 0;
  for (size_t i = 0; i < n; i++) floats &= (double)(float)h[i] == h[i], nonzero |= h[i] != 0;
  free(h);
  return floats && nonzero;
}

/* How close a mixed-precision (float) product comes to the exact one: the
 * difference relative to its size, which must not be 0 (float storage and
 * arithmetic leave one; 0 means a double product), and within float's
 * rounding. */
static void check_product(double err, double scale, vox_precision precision) {
  if (precision == VOX_PRECISION_DOUBLE) {
    CHECK(sqrt(err) <= 1e-13 * sqrt(scale));
  } else {
    CHECK(sqrt(err) > 1e-12 * sqrt(scale) && sqrt(err) <= 1e-5 * sqrt(scale));
  }
}

/* R A P x == (Galerkin stencil) x, for the operator level and a stencil
 * level, in double to rounding, and for float stencils (mixed precision)
 * to float's rounding, their values floats. */
static void test_galerkin(vox_context *ctx, vox_backend *be, vox_precision precision) {
  vox_model m;
  make_cantilever(ctx, &m, 7, 5, 6); /* odd and even sizes */
  vox_fem *fem;
  CHECK_OK(ctx, vox_fem_create(ctx, be, &m, &fem));
  const size_t ne = fem->n_elements;
  double *mod = malloc(ne * sizeof *mod);
  uint64_t seed = 11;
  for (size_t e = 0; e < ne; e++) mod[e] = uniform(&seed) < 0.3 ? 1e-9 : 0.1 + uniform(&seed);
  be->ops->vec->upload(be, &fem->moduli, mod);
  free(mod);

  const vox_grid g0 = m.grid, g1 = vox_grid_coarsen(&g0), g2 = vox_grid_coarsen(&g1);
  const size_t n0 = 3 * (size_t)vox_grid_nodes(&g0), n1 = 3 * (size_t)vox_grid_nodes(&g1),
               n2 = 3 * (size_t)vox_grid_nodes(&g2);
  vox_stencil *s1, *s2;
  CHECK_OK(ctx, be->ops->mg->stencil_create(be, &g1, 3, precision, &s1));
  CHECK_OK(ctx, be->ops->mg->stencil_create(be, &g2, 3, precision, &s2));
  CHECK_OK(ctx, be->ops->mg->galerkin_operator(be, fem->op, s1));
  CHECK_OK(ctx, be->ops->mg->galerkin_stencil(be, s1, s2));
  if (precision == VOX_PRECISION_MIXED)
    CHECK(stencil_values_are_floats(be, s1, &g1, 3) && stencil_values_are_floats(be, s2, &g2, 3));

  vox_vec xc, xf, yf, yc, ref, x2, y1, y2;
  be->ops->vec->create(be, n1, VOX_DOUBLE, &xc), be->ops->vec->create(be, n0, VOX_DOUBLE, &xf);
  be->ops->vec->create(be, n0, VOX_DOUBLE, &yf), be->ops->vec->create(be, n1, VOX_DOUBLE, &yc);
  be->ops->vec->create(be, n1, VOX_DOUBLE, &ref), be->ops->vec->create(be, n2, VOX_DOUBLE, &x2);
  be->ops->vec->create(be, n1, VOX_DOUBLE, &y1), be->ops->vec->create(be, n2, VOX_DOUBLE, &y2);

  /* level 0 -> 1 */
  random_vec(be, &xc, 3);
  be->ops->mg->prolong_add(be, &g0, 3, &xc, &xf);        /* xf = P xc */
  be->ops->op->apply(be, fem->op, &xf, &yf, 0);          /* yf = A P xc */
  be->ops->mg->restrict_residual(be, &g0, 3, &yf, &ref); /* R A P xc */
  be->ops->mg->stencil_apply(be, s1, &xc, &yc);
  be->ops->vec->axpy(be, &yc, -1, &ref);
  double err, scale;
  be->ops->vec->dot(be, &yc, &yc, &err);
  be->ops->vec->dot(be, &ref, &ref, &scale);
  check_product(err, scale, precision);

  /* level 1 -> 2 */
  random_vec(be, &x2, 5);
  be->ops->vec->set(be, &xc, 0);
  be->ops->mg->prolong_add(be, &g1, 3, &x2, &xc);
  be->ops->mg->stencil_apply(be, s1, &xc, &y1);
  vox_vec r2;
  be->ops->vec->create(be, n2, VOX_DOUBLE, &r2);
  be->ops->mg->restrict_residual(be, &g1, 3, &y1, &r2); /* R S1 P x2 */
  be->ops->mg->stencil_apply(be, s2, &x2, &y2);
  be->ops->vec->axpy(be, &y2, -1, &r2);
  be->ops->vec->dot(be, &y2, &y2, &err);
  be->ops->vec->dot(be, &r2, &r2, &scale);
  check_product(err, scale, precision);

  /* R = P^T: <P xc, yf> = <xc, R yf> */
  random_vec(be, &xc, 7);
  random_vec(be, &yf, 9);
  be->ops->vec->set(be, &xf, 0);
  be->ops->mg->prolong_add(be, &g0, 3, &xc, &xf);
  be->ops->mg->restrict_residual(be, &g0, 3, &yf, &yc);
  double a, b;
  be->ops->vec->dot(be, &xf, &yf, &a);
  be->ops->vec->dot(be, &xc, &yc, &b);
  CHECK_CLOSE(a, b, 1e-13);

  vox_vec *v[] = {&xc, &xf, &yf, &yc, &ref, &x2, &y1, &y2, &r2};
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) be->ops->vec->destroy(be, v[i]);
  be->ops->mg->stencil_destroy(be, s1);
  be->ops->mg->stencil_destroy(be, s2);
  vox_fem_destroy(fem);
  vox_model_free(&m);
}

/* The same R A P identity for one dof per node (heat conduction). */
static void test_galerkin_conduction(vox_context *ctx, vox_backend *be, vox_precision precision) {
  const vox_grid g0 = {.nx = 5, .ny = 6, .nz = 3, .voxel_size = {1, 0.5, 2}};
  const vox_grid g1 = vox_grid_coarsen(&g0);
  const size_t n0 = (size_t)vox_grid_nodes(&g0), n1 = (size_t)vox_grid_nodes(&g1),
               ne = (size_t)vox_grid_elements(&g0);
  double ke[64], *mod = malloc(ne * sizeof *mod);
  uint8_t *fixed = calloc(n0, 1);
  CHECK(vox_hex8_conduction(1.0, g0.voxel_size, ke) == 0);
  uint64_t seed = 13;
  for (size_t e = 0; e < ne; e++) mod[e] = 0.1 + uniform(&seed);
  for (int64_t k = 0; k <= g0.nz; k++)
    for (int64_t j = 0; j <= g0.ny; j++) fixed[node(&g0, 0, j, k)] = 1;
  vox_operator_desc desc = {.grid = g0, .dofs_per_node = 1, .ke = ke, .dof_fixed = fixed};
  vox_operator *op;
  vox_stencil *s1;
  CHECK_OK(ctx, be->ops->op->create(be, &desc, &op));
  CHECK_OK(ctx, be->ops->mg->stencil_create(be, &g1, 1, precision, &s1));
  vox_vec m, xc, xf, yf, yc, ref;
  be->ops->vec->create(be, ne, VOX_DOUBLE, &m), be->ops->vec->create(be, n1, VOX_DOUBLE, &xc);
  be->ops->vec->create(be, n0, VOX_DOUBLE, &xf), be->ops->vec->create(be, n0, VOX_DOUBLE, &yf);
  be->ops->vec->create(be, n1, VOX_DOUBLE, &yc), be->ops->vec->create(be, n1, VOX_DOUBLE, &ref);
  be->ops->vec->upload(be, &m, mod);
  be->ops->op->set_moduli(be, op, &m);
  CHECK_OK(ctx, be->ops->mg->galerkin_operator(be, op, s1));
  if (precision == VOX_PRECISION_MIXED) CHECK(stencil_values_are_floats(be, s1, &g1, 1));
  random_vec(be, &xc, 17);
  be->ops->mg->prolong_add(be, &g0, 1, &xc, &xf);
  be->ops->op->apply(be, op, &xf, &yf, 0);
  be->ops->mg->restrict_residual(be, &g0, 1, &yf, &ref);
  be->ops->mg->stencil_apply(be, s1, &xc, &yc);
  be->ops->vec->axpy(be, &yc, -1, &ref);
  double err, scale;
  be->ops->vec->dot(be, &yc, &yc, &err);
  be->ops->vec->dot(be, &ref, &ref, &scale);
  check_product(err, scale, precision);
  vox_vec *v[] = {&m, &xc, &xf, &yf, &yc, &ref};
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) be->ops->vec->destroy(be, v[i]);
  be->ops->mg->stencil_destroy(be, s1);
  be->ops->op->destroy(be, op);
  free(mod), free(fixed);
}

/* Solves the cantilever at densities rho (NULL: solid) with the options;
 * returns the iterations, and the solution in u (host, n_dofs). */
static int solve(vox_context *ctx, vox_backend *be, vox_model *m, const double *rho,
                 const vox_solver_options *opt, double *u) {
  vox_fem *fem;
  CHECK_OK(ctx, vox_fem_create(ctx, be, m, &fem));
  if (rho) {
    vox_vec r;
    be->ops->vec->create(be, fem->n_elements, VOX_DOUBLE, &r);
    be->ops->vec->upload(be, &r, rho);
    be->ops->design->simp_moduli(be, &r, &fem->e_solid, 3, 1e-9, &fem->moduli);
    be->ops->vec->destroy(be, &r);
  }
  vox_fem_update(fem);
  vox_vec uv;
  be->ops->vec->create(be, fem->n_dofs, VOX_DOUBLE, &uv);
  vox_solve_result res;
  CHECK_OK(ctx, vox_fem_solve(fem, 0, &uv, opt, &res));
  CHECK(res.reason == VOX_CONVERGED_RTOL);
  if (u) be->ops->vec->download(be, &uv, u);
  be->ops->vec->destroy(be, &uv);
  vox_fem_destroy(fem);
  return res.iterations;
}

static void test_grid_independence(vox_context *ctx, vox_backend *be, vox_smoother smoother) {
  vox_solver_options opt;
  vox_solver_options_default(&opt);
  opt.preconditioner = VOX_PC_MULTIGRID;
  opt.smoother = smoother;
  opt.rtol = 1e-8;
  int its[3];
  const int64_t sizes[3] = {8, 16, 32};
  for (int s = 0; s < 3; s++) {
    vox_model m;
    make_cantilever(ctx, &m, sizes[s], sizes[s], sizes[s]); /* a homogeneous cube */
    its[s] = solve(ctx, be, &m, NULL, &opt, NULL);
    vox_model_free(&m);
  }
  fprintf(stderr, "multigrid (%s) iterations on 8^3, 16^3, 32^3: %d %d %d\n",
          vox_smoother_name(smoother), its[0], its[1], its[2]);
  CHECK(its[2] <= its[0] + 6 && its[2] < 40);
}

/* The contrast case of the tests below: the 21 x 11 x 9 cantilever (odd
 * sizes) with solid (1) or void (0) elements of equal chances, the same
 * field on every call, and room for two solutions. */
typedef struct contrast_case {
  vox_model m;
  size_t ne, nd;
  double *rho, *u0, *u1;
} contrast_case;

static void contrast_case_make(vox_context *ctx, contrast_case *c) {
  make_cantilever(ctx, &c->m, 21, 11, 9);
  c->ne = (size_t)vox_grid_elements(&c->m.grid);
  c->nd = 3 * (size_t)vox_grid_nodes(&c->m.grid);
  c->rho = malloc(c->ne * sizeof *c->rho);
  c->u0 = malloc(c->nd * sizeof *c->u0);
  c->u1 = malloc(c->nd * sizeof *c->u1);
  uint64_t seed = 42;
  for (size_t e = 0; e < c->ne; e++) c->rho[e] = uniform(&seed) < 0.5 ? 1.0 : 0.0;
}

static void contrast_case_free(contrast_case *c) {
  free(c->rho), free(c->u0), free(c->u1);
  vox_model_free(&c->m);
}

/* ||a - b|| / ||b|| */
static double relative_difference(const double *a, const double *b, size_t n) {
  double num = 0, den = 0;
  for (size_t i = 0; i < n; i++) {
    num += (a[i] - b[i]) * (a[i] - b[i]);
    den += b[i] * b[i];
  }
  return sqrt(num) / sqrt(den);
}

/* Random solid/void densities (stiffness contrast 1e-9), odd grid sizes:
 * multigrid-PCG converges quickly and agrees with Jacobi-PCG. */
static void test_contrast(vox_context *ctx, vox_backend *be) {
  contrast_case c;
  contrast_case_make(ctx, &c);
  double *u_mg = c.u0, *u_j = c.u1;
  vox_solver_options opt;
  vox_solver_options_default(&opt);
  opt.rtol = 1e-10;
  opt.max_iterations = 100000;
  opt.preconditioner = VOX_PC_JACOBI;
  const int its_jacobi = solve(ctx, be, &c.m, c.rho, &opt, u_j);
  opt.preconditioner = VOX_PC_MULTIGRID;
  const int its_mg = solve(ctx, be, &c.m, c.rho, &opt, u_mg);
  fprintf(stderr, "1e-9 contrast: Jacobi %d iterations, multigrid %d\n", its_jacobi, its_mg);
  CHECK(its_mg < its_jacobi / 5);
  CHECK(relative_difference(u_mg, u_j, c.nd) <= 1e-5); /* both within their tolerances */
  contrast_case_free(&c);
}

static void check_cycle_symmetric_definite_in(vox_context *ctx, vox_backend *be,
                                              contrast_case *c, const vox_solver_options *opt,
                                              double tolerance) {
  vox_fem *fem;
  CHECK_OK(ctx, vox_fem_create(ctx, be, &c->m, &fem));
  const vox_backend_ops *o = be->ops;
  vox_vec r, a, b, ma, mb;
  CHECK_OK(ctx, o->vec->create(be, fem->n_elements, VOX_DOUBLE, &r));
  CHECK_OK(ctx, o->vec->upload(be, &r, c->rho));
  CHECK_OK(ctx, o->design->simp_moduli(be, &r, &fem->e_solid, 3, 1e-9, &fem->moduli));
  CHECK_OK(ctx, vox_fem_update(fem));
  vox_multigrid *mg;
  CHECK_OK(ctx, vox_mg_create(be, fem->op, &fem->grid, 3, fem->jacobi_bound, opt, &mg));
  CHECK(mg->n_levels == 4 && mg->visits[1] == 1 && mg->visits[2] == 2 &&
        mg->visits[3] == 1);
  vox_vec *const work[4] = {&fem->pcg.r, &fem->pcg.z, &fem->pcg.p, &fem->pcg.q};
  CHECK_OK(ctx, vox_mg_setup(mg, &fem->inv_diag, work));
  vox_vec *v[] = {&a, &b, &ma, &mb};
  for (int i = 0; i < 4; i++) CHECK_OK(ctx, o->vec->create(be, fem->n_dofs, VOX_DOUBLE, v[i]));
  random_vec(be, &a, 7);
  random_vec(be, &b, 8);
  CHECK_OK(ctx, o->op->zero_fixed(be, fem->op, &a));
  CHECK_OK(ctx, o->op->zero_fixed(be, fem->op, &b));
  CHECK_OK(ctx, vox_mg_apply(mg, &a, &ma));
  CHECK_OK(ctx, vox_mg_apply(mg, &b, &mb));
  CHECK_OK(ctx, o->op->zero_fixed(be, fem->op, &ma));
  CHECK_OK(ctx, o->op->zero_fixed(be, fem->op, &mb));
  double amb, bma, ama, bmb;
  CHECK_OK(ctx, o->vec->dot(be, &a, &mb, &amb));
  CHECK_OK(ctx, o->vec->dot(be, &b, &ma, &bma));
  CHECK_OK(ctx, o->vec->dot(be, &a, &ma, &ama));
  CHECK_OK(ctx, o->vec->dot(be, &b, &mb, &bmb));
  fprintf(stderr, "cycle in %s: |a.Mb - b.Ma| / sqrt(a.Ma b.Mb) = %.1e\n",
          opt->precision == VOX_PRECISION_MIXED ? "mixed precision" : "double",
          fabs(amb - bma) / sqrt(ama * bmb));
  CHECK(fabs(amb - bma) <= tolerance * sqrt(ama * bmb));
  CHECK(ama > 0 && bmb > 0);
  for (int i = 0; i < 4; i++) o->vec->destroy(be, v[i]);
  o->vec->destroy(be, &r);
  vox_mg_destroy(mg);
  vox_fem_destroy(fem);
}

/* Mixed precision (float coarse stencils, float fine products in the
 * cycle, CG in double) against double on test_contrast's 1e-9 contrast:
 * the same solution to CG's tolerance, and a fifth more CG iterations at
 * most (52 and 58 when written: float's rounding drops the void's share of
 * the entries where void meets solid). */
static void test_mixed_precision(vox_context *ctx, vox_backend *be) {
  contrast_case c;
  contrast_case_make(ctx, &c);
  double *u_double = c.u0, *u_mixed = c.u1;
  vox_solver_options opt;
  vox_solver_options_default(&opt);
  opt.rtol = 1e-10;
  opt.max_iterations = 10000;
  opt.precision = VOX_PRECISION_DOUBLE;
  const int its_double = solve(ctx, be, &c.m, c.rho, &opt, u_double);
  opt.precision = VOX_PRECISION_MIXED;
  const int its_mixed = solve(ctx, be, &c.m, c.rho, &opt, u_mixed);
  const double d = relative_difference(u_mixed, u_double, c.nd);
  fprintf(stderr, "1e-9 contrast to 1e-10: double %d CG iterations, mixed %d; |u_mixed - "
          "u_double| / |u_double| = %.1e\n", its_double, its_mixed, d);
  CHECK(its_mixed <= its_double + its_double / 5);
  CHECK(d > 0 && d <= 1e-8);
  contrast_case_free(&c);
}

/* The cycle's symmetry (a.Mb = b.Ma to rounding) and definiteness (a.Ma
 * > 0) on the free dofs, as multigrid_apply uses it, for test_contrast's
 * 1e-9 contrast with 4 levels, so that level 2 is cycled twice: in double
 * to 1e-10, and in mixed precision (float stencils and fine products) to
 * float's rounding. */
static void check_cycle_symmetric_definite(vox_context *ctx, vox_backend *be, contrast_case *c,
                                           const vox_solver_options *options) {
  for (int mixed = 0; mixed < 2; mixed++) {
    vox_solver_options o = *options;
    o.precision = mixed ? VOX_PRECISION_MIXED : VOX_PRECISION_DOUBLE;
    check_cycle_symmetric_definite_in(ctx, be, c, &o, mixed ? 1e-7 : 1e-10);
  }
}

/* The W-cycle (levels 2 and deeper cycled twice, the second visit from
 * the first's result): symmetric and positive definite, as CG needs, no
 * more CG iterations than the V-cycle, and the same solution; the same
 * with one smoothing step on the fine level (fine_smoothing_steps) and two
 * on the others. */
static void test_w_cycle(vox_context *ctx, vox_backend *be) {
  contrast_case c;
  contrast_case_make(ctx, &c);
  double *u_v = c.u0, *u_w = c.u1;
  vox_solver_options opt;
  vox_solver_options_default(&opt);
  opt.rtol = 1e-10;
  opt.max_iterations = 100000;
  opt.mg_levels = 4;
  /* in double: float's rounding moves both counts by several iterations
   * at this contrast (test_mixed_precision), more than W gains on V */
  opt.precision = VOX_PRECISION_DOUBLE;
  opt.mg_cycle = VOX_MG_CYCLE_V;
  const int its_v = solve(ctx, be, &c.m, c.rho, &opt, u_v);
  opt.mg_cycle = VOX_MG_CYCLE_W;
  const int its_w = solve(ctx, be, &c.m, c.rho, &opt, u_w);
  fprintf(stderr, "1e-9 contrast, 4 levels: V-cycle %d CG iterations, W-cycle %d\n", its_v, its_w);
  CHECK(its_w <= its_v);
  CHECK(relative_difference(u_w, u_v, c.nd) <= 1e-5);
  check_cycle_symmetric_definite(ctx, be, &c, &opt);
  opt.fine_smoothing_steps = 1;
  const int its_w1 = solve(ctx, be, &c.m, c.rho, &opt, u_w);
  fprintf(stderr, "the same W-cycle with one fine smoothing step: %d CG iterations\n", its_w1);
  CHECK(relative_difference(u_w, u_v, c.nd) <= 1e-5);
  CHECK(its_w1 <= 2 * its_v); /* weaker, not broken (58 against 84 when written) */
  check_cycle_symmetric_definite(ctx, be, &c, &opt);
  contrast_case_free(&c);
}

/* mg_bound_refresh = 3: the coarse levels' smoother bounds are estimated
 * at the first setup and every third one after, and kept in between (the
 * Galerkin levels always new); solves with kept bounds reach the solution.
 * A kept bound far below the operator's spectrum (set by hand here, five
 * times too low) turns the cycle indefinite: the solve breaks down, is
 * redone with fresh bounds (fem.c) and still reaches the solution. */
static void test_bound_refresh(vox_context *ctx, vox_backend *be) {
  contrast_case c;
  contrast_case_make(ctx, &c);
  double *u_ref = c.u0, *u = c.u1;
  vox_solver_options opt;
  vox_solver_options_default(&opt);
  opt.rtol = 1e-10;
  opt.max_iterations = 10000;
  opt.mg_levels = 4;
  solve(ctx, be, &c.m, c.rho, &opt, u_ref); /* fresh bounds */
  opt.mg_bound_refresh = 3;
  vox_fem *fem;
  CHECK_OK(ctx, vox_fem_create(ctx, be, &c.m, &fem));
  const vox_backend_ops *o = be->ops;
  vox_vec r, uv;
  CHECK_OK(ctx, o->vec->create(be, fem->n_elements, VOX_DOUBLE, &r));
  CHECK_OK(ctx, o->vec->upload(be, &r, c.rho));
  CHECK_OK(ctx, o->vec->create(be, fem->n_dofs, VOX_DOUBLE, &uv));
  vox_solve_result res;
  CHECK_OK(ctx, vox_fem_solve(fem, 0, &uv, &opt, &res)); /* all solid: setup 1 estimates */
  CHECK(res.reason == VOX_CONVERGED_RTOL && !fem->mg->bounds_kept);
  const double solid_l1 = fem->mg->level[1].lambda_max, solid_l2 = fem->mg->level[2].lambda_max;
  CHECK_OK(ctx, o->design->simp_moduli(be, &r, &fem->e_solid, 3, 1e-9, &fem->moduli));
  double l1 = 0, l2 = 0;
  for (int setup = 2; setup <= 4; setup++) { /* the 1e-9 contrast, set up anew each time */
    CHECK_OK(ctx, vox_fem_update(fem));
    CHECK_OK(ctx, vox_fem_solve(fem, 0, &uv, &opt, &res));
    CHECK(res.reason == VOX_CONVERGED_RTOL);
    CHECK(fem->mg->bounds_kept == (setup != 4));
    if (setup < 4) {
      CHECK(fem->mg->level[1].lambda_max == solid_l1 && fem->mg->level[2].lambda_max == solid_l2);
    } else {
      l1 = fem->mg->level[1].lambda_max, l2 = fem->mg->level[2].lambda_max;
      CHECK(l1 != solid_l1 && l2 != solid_l2);
    }
    CHECK_OK(ctx, o->vec->download(be, &uv, u));
    CHECK(relative_difference(u, u_ref, c.nd) <= 1e-7);
  }
  fprintf(stderr, "bounds kept: lambda_max of levels 1, 2: %.4f %.4f solid, %.4f %.4f at the "
          "contrast\n", solid_l1, solid_l2, l1, l2);
  CHECK(fem->bound_redos == 0);
  /* bounds kept five times too low: the solve breaks down and is redone */
  CHECK_OK(ctx, vox_fem_update(fem));
  CHECK_OK(ctx, vox_mg_setup(fem->mg, &fem->inv_diag, (vox_vec *const[4]){&fem->pcg.r,
                             &fem->pcg.z, &fem->pcg.p, &fem->pcg.q}));
  fem->mg_stale = 0;
  CHECK(fem->mg->bounds_kept);
  for (int l = 1; l < 3; l++) fem->mg->level[l].lambda_max *= 0.2;
  CHECK_OK(ctx, o->vec->set(be, &uv, 0));
  CHECK_OK(ctx, vox_fem_solve(fem, 0, &uv, &opt, &res));
  fprintf(stderr, "bounds kept too low: %d redo, %d CG iterations in all\n", fem->bound_redos,
          res.iterations);
  CHECK(res.reason == VOX_CONVERGED_RTOL && fem->bound_redos == 1 && !fem->mg->bounds_kept);
  CHECK(fem->mg->level[1].lambda_max == l1 && fem->mg->level[2].lambda_max == l2);
  CHECK_OK(ctx, o->vec->download(be, &uv, u));
  CHECK(relative_difference(u, u_ref, c.nd) <= 1e-7);
  o->vec->destroy(be, &r), o->vec->destroy(be, &uv);
  vox_fem_destroy(fem);
  contrast_case_free(&c);
}

/* A backend whose coarse levels start in a storage below float that
 * ruins the cycle (here: every coarse smoothing step yields NaN, as an
 * overflow of a narrow format would), the CPU's ops otherwise: the solve
 * that breaks down is redone with float levels (stencil_full_storage), which
 * stay; the solution is the one of a plain backend. */
static int lossy_storage; /* the coarse levels hold the ruinous storage */

static vox_status lossy_full_storage(vox_backend *be, vox_stencil *st, int *was) {
  (void)be, (void)st;
  *was = lossy_storage;
  lossy_storage = 0;
  return VOX_OK;
}

static const vox_backend_ops *plain_ops;

static vox_status lossy_smooth(vox_backend *be, vox_stencil *st, const vox_vec *b, const vox_vec *x,
                               const vox_vec *inv_diag, double alpha, double beta, vox_vec *d,
                               vox_vec *x_out) {
  TRY(plain_ops->mg->stencil_smooth(be, st, b, x, inv_diag, alpha, beta, d, x_out));
  return lossy_storage ? be->ops->vec->set(be, x_out, NAN) : VOX_OK;
}

static void test_reduced_storage(vox_context *ctx, vox_backend *be) {
  contrast_case c;
  contrast_case_make(ctx, &c);
  vox_solver_options opt;
  vox_solver_options_default(&opt);
  opt.rtol = 1e-10;
  opt.max_iterations = 10000;
  opt.mg_levels = 3;
  solve(ctx, be, &c.m, c.rho, &opt, c.u0);
  plain_ops = be->ops;
  vox_backend_ops lossy = *be->ops;
  vox_multigrid_ops lossy_mg = *be->ops->mg;
  lossy_mg.stencil_full_storage = lossy_full_storage;
  lossy_mg.stencil_smooth = lossy_smooth;
  lossy.mg = &lossy_mg;
  be->ops = &lossy;
  lossy_storage = 1;
  vox_fem *fem;
  CHECK_OK(ctx, vox_fem_create(ctx, be, &c.m, &fem));
  vox_vec r, uv;
  CHECK_OK(ctx, lossy.vec->create(be, fem->n_elements, VOX_DOUBLE, &r));
  CHECK_OK(ctx, lossy.vec->upload(be, &r, c.rho));
  CHECK_OK(ctx, lossy.design->simp_moduli(be, &r, &fem->e_solid, 3, 1e-9, &fem->moduli));
  CHECK_OK(ctx, vox_fem_update(fem));
  CHECK_OK(ctx, lossy.vec->create(be, fem->n_dofs, VOX_DOUBLE, &uv));
  vox_solve_result res;
  CHECK_OK(ctx, vox_fem_solve(fem, 0, &uv, &opt, &res));
  fprintf(stderr, "lossy coarse storage: %d redo, %d CG iterations in all (%s)\n",
          fem->storage_redos, res.iterations, vox_convergence_string(res.reason));
  CHECK(res.reason == VOX_CONVERGED_RTOL && fem->storage_redos == 1 && !lossy_storage);
  CHECK_OK(ctx, lossy.vec->download(be, &uv, c.u1));
  CHECK(relative_difference(c.u1, c.u0, c.nd) <= 1e-7);
  /* float from then on: the next design's solve needs no redo */
  CHECK_OK(ctx, vox_fem_update(fem));
  CHECK_OK(ctx, lossy.vec->set(be, &uv, 0));
  CHECK_OK(ctx, vox_fem_solve(fem, 0, &uv, &opt, &res));
  CHECK(res.reason == VOX_CONVERGED_RTOL && fem->storage_redos == 1);
  lossy.vec->destroy(be, &r), lossy.vec->destroy(be, &uv);
  vox_fem_destroy(fem);
  be->ops = plain_ops;
  contrast_case_free(&c);
}

/* The levels for a grid and a coarsest size, and the coarsest size the
 * options leave to the CPU backend. */
static void test_levels(vox_backend *be) {
  const vox_grid g = {.nx = 96, .ny = 48, .nz = 48, .voxel_size = {1, 1, 1}};
  CHECK(vox_mg_levels_for(&g, 3, 0, 6000) == 4); /* 96 -> 48 -> 24 -> 12: 1911 dofs */
  CHECK(vox_mg_levels_for(&g, 3, 0, 1911) == 4);
  CHECK(vox_mg_levels_for(&g, 3, 0, 1910) == 5); /* -> 6 x 3 x 3: 336 dofs */
  CHECK(vox_mg_levels_for(&g, 3, 2, 1) == 2);
  const vox_grid tiny = {.nx = 1, .ny = 1, .nz = 1, .voxel_size = {1, 1, 1}};
  CHECK(vox_mg_levels_for(&tiny, 3, 0, 6000) == 2);
  CHECK(vox_mg_levels_for(&tiny, 3, 0, 1) == 2);
  vox_solver_options o;
  vox_solver_options_default(&o);
  CHECK(o.mg_coarse_dofs == 0 && vox_mg_coarse_dofs(be, &o) == 1000);
  o.mg_coarse_dofs = 5000;
  CHECK(vox_mg_coarse_dofs(be, &o) == 5000);
}

int main(void) {
  vox_context *ctx;
  vox_backend *be;
  vox_context_create(&ctx);
  CHECK_OK(ctx, vox_backend_create(ctx, VOX_DEVICE_CPU, &be));
  test_levels(be);
  test_galerkin(ctx, be, VOX_PRECISION_DOUBLE);
  test_galerkin(ctx, be, VOX_PRECISION_MIXED);
  test_galerkin_conduction(ctx, be, VOX_PRECISION_DOUBLE);
  test_galerkin_conduction(ctx, be, VOX_PRECISION_MIXED);
  test_grid_independence(ctx, be, VOX_SMOOTHER_JACOBI);
  test_grid_independence(ctx, be, VOX_SMOOTHER_CHEBYSHEV);
  test_contrast(ctx, be);
  test_mixed_precision(ctx, be);
  test_w_cycle(ctx, be);
  test_bound_refresh(ctx, be);
  test_reduced_storage(ctx, be);
  vox_backend_destroy(be);
  vox_context_destroy(ctx);
  CHECK_DONE();
}
