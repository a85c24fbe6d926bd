/* SPDX-License-Identifier: BSD-3-Clause */
/* The conjugate gradients of every solver against their recorded iterates:
 * the residual norm after each iteration and a checksum of the solution of
 * a box solve with the multigrid and with the Jacobi preconditioner, a
 * box solve started from a history of earlier solutions, a sparse (bone
 * only) solve and a periodic cell solve in single precision, each on a
 * small problem on the CPU with one thread (so that every reduction sums
 * in one order). The values were recorded from the three loops the solvers
 * had before they shared one (engine/ksp.c), so a change of the arithmetic
 * of any of them shows here. The residual after k iterations is that of a
 * solve stopped at max_iterations = k from the same start (Jacobi's after
 * its first 40 iterations, the checksum of that iterate); a monitor
 * (vox_solver_options.monitor) sees the same.
 *
 * `test_ksp print` prints the tables instead of checking them (to record
 * them anew after a deliberate change of the arithmetic). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "../bone_model.h"
#include "fem.h"
#include "homogenize.h"
#include "sparse_solve.h"
#include "voxfe/voxfe.h"

static int printing = 0;

/* The residuals a monitor saw (vox_solver_options.monitor). */
typedef struct seen {
  double residual[1000];
  int n, last;
} seen;

static void record(void *data, int iteration, double residual_norm) {
  seen *s = data;
  if (s->n < 1000) s->residual[s->n++] = residual_norm;
  s->last = iteration;
}

/* Relative agreement asked of every recorded value: far above the
 * rounding of one summation order, far below what a change of the
 * iteration (another preconditioner application, another step) makes. */
static const double TOLERANCE = 1e-9;

static void check_table(const char *name, const double *got, int n, const double *want,
                        int n_want) {
  if (printing) {
    printf("static const double %s[] = {\n", name);
    for (int i = 0; i < n; i++) printf("    %.17g,\n", got[i]);
    printf("};\n");
    return;
  }
  CHECK(n == n_want);
  for (int i = 0; i < n && i < n_want; i++)
    if (!(fabs(got[i] - want[i]) <= TOLERANCE * fabs(want[i]))) {
      fprintf(stderr, "%s[%d] = %.17g, recorded %.17g\n", name, i, got[i], want[i]);
      check_failures++;
    }
}

#define CHECK_TABLE(name, got, n) check_table(#name, got, n, name, (int)(sizeof name / sizeof name[0]))

static double checksum(const double *x, size_t n) {
  double s = 0;
  for (size_t i = 0; i < n; i++) s += x[i] * (double)(i % 13 + 1);
  return s;
}

static double vec_checksum(vox_backend *be, const vox_vec *v) {
  double *host = malloc(v->n * sizeof *host);
  be->ops->vec->download(be, v, host);
  const double s = checksum(host, v->n);
  free(host);
  return s;
}

static int64_t node(const vox_grid *g, int64_t i, int64_t j, int64_t k) {
  return (k * (g->ny + 1) + j) * (g->nx + 1) + i;
}

/* A 12 x 6 x 6 cantilever of two materials 100 times apart in a
 * pseudo-random pattern, clamped at x = 0, loaded down and sideways at the
 * far end. */
static void make_cantilever(vox_context *ctx, vox_model *m) {
  vox_grid g = {.nx = 12, .ny = 6, .nz = 6, .voxel_size = {1, 1, 1}};
  CHECK_OK(ctx, vox_model_init(ctx, m, &g));
  uint64_t state = 12345;
  for (int64_t e = 0; e < vox_grid_elements(&g); e++) {
    state = state * 6364136223846793005u + 1442695040888963407u;
    m->label[e] = (uint8_t)(1 + (state >> 62 == 0));
  }
  vox_material a = {.label = 1, .youngs_modulus = 1, .poisson_ratio = 0.3};
  vox_material b = {.label = 2, .youngs_modulus = 0.01, .poisson_ratio = 0.3};
  CHECK_OK(ctx, vox_model_add_material(ctx, m, &a));
  CHECK_OK(ctx, vox_model_add_material(ctx, m, &b));
  for (int64_t k = 0; k <= g.nz; k++)
    for (int64_t j = 0; j <= g.ny; j++)
      for (int c = 0; c < 3; c++)
        CHECK_OK(ctx, vox_model_add_constraint(ctx, m, node(&g, 0, j, k), c, 0));
  CHECK_OK(ctx, vox_model_set_load_cases(ctx, m, 1));
  for (int64_t j = 0; j <= g.ny; j++) {
    CHECK_OK(ctx, vox_model_add_load(ctx, m, node(&g, g.nx, j, g.nz), 2, 0, -1));
    CHECK_OK(ctx, vox_model_add_load(ctx, m, node(&g, g.nx, j, 0), 1, 0, 0.3));
  }
}

/* The residual norms of box solves stopped after 1, 2, ... iterations
 * (the last converged) from u = 0, or with `history` from a history of
 * two made-up earlier solutions and a made-up guess; the converged
 * solution's checksum and the iterations in *sum and *iterations. */
static int box_residuals(vox_context *ctx, vox_backend *be, vox_preconditioner pc, int history,
                         double *out, int max, double *sum) {
  vox_model m;
  make_cantilever(ctx, &m);
  vox_fem *fem;
  CHECK_OK(ctx, vox_fem_create(ctx, be, &m, &fem));
  vox_solver_options opt;
  vox_solver_options_default(&opt);
  opt.preconditioner = pc;
  opt.precision = VOX_PRECISION_DOUBLE;
  opt.rtol = 1e-10;
  vox_vec u;
  CHECK_OK(ctx, be->ops->vec->create(be, fem->n_dofs, VOX_DOUBLE, &u));
  vox_ksp_history h = {0};
  if (history) CHECK_OK(ctx, vox_ksp_history_create(be, fem->n_dofs, 2, &h));
  int n = 0;
  for (int k = 1; k <= max; k++) {
    opt.max_iterations = k;
    if (history) { /* the guess and the two earlier solutions */
      CHECK_OK(ctx, be->ops->vec->random(be, &u, 21, 0));
      for (int i = 0; i < 2; i++) {
        CHECK_OK(ctx, be->ops->vec->random(be, &h.v[i], 22 + (uint64_t)i, 0));
        CHECK_OK(ctx, be->ops->vec->axpy(be, &h.v[i], 0.5, &u));
        CHECK_OK(ctx, be->ops->op->zero_fixed(be, fem->op, &h.v[i]));
      }
      CHECK_OK(ctx, be->ops->op->zero_fixed(be, fem->op, &u));
      h.count = 2, h.newest = 0;
    } else {
      CHECK_OK(ctx, be->ops->vec->set(be, &u, 0));
    }
    vox_solve_result r;
    CHECK_OK(ctx, vox_fem_solve_with_history(fem, 0, &u, history ? &h : NULL, &opt, &r));
    out[n++] = r.residual_norm;
    if (r.reason == VOX_CONVERGED_RTOL) break;
    CHECK(r.reason == VOX_DIVERGED_MAX_ITERATIONS && r.iterations == k);
  }
  *sum = vec_checksum(be, &u);
  if (!history) { /* a monitor sees the start's residual and every iteration's */
    seen s = {.n = 0};
    opt.monitor = record, opt.monitor_data = &s;
    CHECK_OK(ctx, be->ops->vec->set(be, &u, 0));
    vox_solve_result r;
    CHECK_OK(ctx, vox_fem_solve(fem, 0, &u, &opt, &r));
    CHECK(s.n == n + 1 && s.last == n && r.iterations == n);
    CHECK(s.residual[0] == r.rhs_norm);
    for (int k = 1; k < s.n && k <= n; k++) CHECK(s.residual[k] == out[k - 1]);
  }
  vox_ksp_history_destroy(be, &h);
  be->ops->vec->destroy(be, &u);
  vox_fem_destroy(fem);
  vox_model_free(&m);
  return n;
}

/* The residuals of several solves in a row (vox_solver_options.monitor):
 * each solve starts at iteration 0. */
typedef struct seen_cases {
  double residual[8][1000];
  int last[8];
  int count;
} seen_cases;

static void record_case(void *data, int iteration, double residual_norm) {
  seen_cases *s = data;
  if (iteration == 0) s->count++;
  const int c = s->count - 1;
  if (c < 0 || c >= 8 || iteration >= 1000) return;
  s->residual[c][iteration] = residual_norm;
  s->last[c] = iteration;
}

/* The table the old loops were recorded as: for k = 1, 2, ... the residual
 * of each case had it stopped after k iterations (a case that converged
 * earlier keeps its last one), cases interleaved, until all converged. */
static int interleave(const seen_cases *s, int cases, double *out) {
  int longest = 0, n = 0;
  for (int c = 0; c < cases; c++)
    if (s->last[c] > longest) longest = s->last[c];
  for (int k = 1; k <= longest; k++)
    for (int c = 0; c < cases; c++) out[n++] = s->residual[c][k < s->last[c] ? k : s->last[c]];
  return n;
}

/* The same for the sparse solve of a 16^3 perlin bone (two load cases:
 * their residuals interleaved), from u = 0: one solve seen by the monitor,
 * and one stopped after `stop` iterations, whose residuals must be the
 * monitor's at that iteration. */
static int sparse_residuals(vox_context *ctx, vox_backend *be, double *out, int stop, double *sum) {
  vox_model m;
  make_bone_model(ctx, &m, 16, 7, 0);
  clamp_bottom_load_top(ctx, &m);
  const size_t nd = 3 * (size_t)vox_grid_nodes(&m.grid);
  double *u = calloc(2 * nd, sizeof *u);
  vox_solver_options opt;
  vox_solver_options_default(&opt);
  opt.rtol = 1e-10;
  opt.storage = VOX_STORAGE_SPARSE;
  seen_cases *s = calloc(1, sizeof *s);
  opt.monitor = record_case, opt.monitor_data = s;
  vox_solve_result r[2];
  CHECK_OK(ctx, vox_sparse_solve_elasticity(ctx, be, &m, &opt, u, r, NULL));
  CHECK(s->count == 2);
  CHECK(r[0].reason == VOX_CONVERGED_RTOL && r[1].reason == VOX_CONVERGED_RTOL);
  *sum = checksum(u, 2 * nd);
  const int n = interleave(s, 2, out);
  opt.monitor = NULL;
  opt.max_iterations = stop;
  memset(u, 0, 2 * nd * sizeof *u);
  CHECK_OK(ctx, vox_sparse_solve_elasticity(ctx, be, &m, &opt, u, r, NULL));
  for (int c = 0; c < 2; c++)
    CHECK(r[c].reason == VOX_DIVERGED_MAX_ITERATIONS && r[c].iterations == stop &&
          r[c].residual_norm == s->residual[c][stop]);
  free(s);
  free(u);
  vox_model_free(&m);
  return n;
}

/* The same for the six unit-strain fields of a random-density 8^3 cell
 * with the single-precision cell solver (their residuals interleaved),
 * from rest, and one solve stopped after `stop` iterations; the checksum
 * of C^H. */
static vox_status cell_solve(vox_context *ctx, vox_backend *be, const vox_model *m,
                             const double *rho_host, const vox_solver_options *opt, double c[36],
                             vox_solve_result last[6]) {
  const size_t ne = (size_t)vox_grid_elements(&m->grid);
  vox_homog *hc = NULL;
  CHECK_OK(ctx, vox_homog_create_fields(ctx, be, m, VOX_HOMOG_CELL_SOLVER, VOX_ALL_STRAINS, &hc));
  if (!hc || !hc->cell) {
    CHECK(!"the cell solver");
    vox_homog_destroy(hc);
    return VOX_ERR_INVALID_ARGUMENT;
  }
  vox_vec rho;
  CHECK_OK(ctx, be->ops->vec->create(be, ne, VOX_DOUBLE, &rho));
  CHECK_OK(ctx, be->ops->vec->upload(be, &rho, rho_host));
  CHECK_OK(ctx,
           be->ops->design->simp_moduli(be, &rho, &hc->fem->e_solid, 3, 1e-9, &hc->fem->moduli));
  CHECK_OK(ctx, vox_fem_update(hc->fem));
  be->ops->vec->destroy(be, &rho);
  int iterations;
  vox_solve_result failed;
  CHECK_OK(ctx, vox_homog_solve(hc, opt, NULL, c, &iterations, &failed));
  for (int i = 0; i < 6; i++) last[i] = hc->last[i];
  vox_homog_destroy(hc);
  return VOX_OK;
}

static int cell_residuals(vox_context *ctx, vox_backend *be, double *out, int stop, double *sum) {
  const int nc = 8;
  const vox_grid g = {.nx = nc, .ny = nc, .nz = nc, .voxel_size = {1.0 / nc, 1.0 / nc, 1.0 / nc}};
  vox_model m;
  CHECK_OK(ctx, vox_model_init(ctx, &m, &g));
  const size_t ne = (size_t)vox_grid_elements(&g);
  memset(m.label, 1, ne);
  vox_material a = {.label = 1, .youngs_modulus = 1, .poisson_ratio = 0.3, .role = VOX_ROLE_DESIGN};
  CHECK_OK(ctx, vox_model_add_material(ctx, &m, &a));
  double *rho_host = malloc(ne * sizeof *rho_host);
  uint64_t state = 31;
  for (size_t e = 0; e < ne; e++) {
    state = state * 6364136223846793005u + 1442695040888963407u;
    rho_host[e] = 0.05 + 0.95 * (double)(state >> 11) * 0x1.0p-53;
  }
  vox_solver_options opt;
  vox_solver_options_default(&opt);
  opt.rtol = 1e-6;
  opt.precision = VOX_PRECISION_MIXED;
  seen_cases *s = calloc(1, sizeof *s);
  opt.monitor = record_case, opt.monitor_data = s;
  double c[36];
  vox_solve_result last[6];
  int n = 0;
  if (cell_solve(ctx, be, &m, rho_host, &opt, c, last) == VOX_OK) {
    CHECK(s->count == 6);
    for (int i = 0; i < 6; i++) CHECK(last[i].reason == VOX_CONVERGED_RTOL);
    *sum = checksum(c, 36);
    n = interleave(s, 6, out);
    opt.monitor = NULL;
    opt.max_iterations = stop;
    if (cell_solve(ctx, be, &m, rho_host, &opt, c, last) == VOX_OK)
      for (int i = 0; i < 6; i++)
        CHECK(last[i].reason == VOX_DIVERGED_MAX_ITERATIONS && last[i].iterations == stop &&
              last[i].residual_norm == s->residual[i][stop]);
  }
  free(s);
  free(rho_host);
  vox_model_free(&m);
  return n;
}

#include "test_ksp_recorded.h"

int main(int argc, char **argv) {
  printing = argc > 1 && strcmp(argv[1], "print") == 0;
  vox_context *ctx;
  vox_backend *be;
  vox_context_create(&ctx);
  vox_context_set_threads(ctx, 1); /* one summation order */
  CHECK_OK(ctx, vox_backend_create(ctx, VOX_DEVICE_CPU, &be));
  enum { MAX = 400 };
  double *res = malloc(6 * MAX * sizeof *res), sum[1];
  int n;

  n = box_residuals(ctx, be, VOX_PC_MULTIGRID, 0, res, MAX, sum);
  CHECK_TABLE(box_multigrid, res, n);
  CHECK_TABLE(box_multigrid_sum, sum, 1);
  /* Jacobi's first 40 iterations only: later ones amplify the rounding of
   * one build against another's (a sanitizer build's products differ in
   * their last bits) beyond the tolerance */
  n = box_residuals(ctx, be, VOX_PC_JACOBI, 0, res, 40, sum);
  CHECK_TABLE(box_jacobi, res, n);
  CHECK_TABLE(box_jacobi_sum, sum, 1);
  n = box_residuals(ctx, be, VOX_PC_MULTIGRID, 1, res, MAX, sum);
  CHECK_TABLE(box_history, res, n);
  CHECK_TABLE(box_history_sum, sum, 1);
  n = sparse_residuals(ctx, be, res, 3, sum);
  CHECK_TABLE(sparse_bone, res, n);
  CHECK_TABLE(sparse_bone_sum, sum, 1);
  n = cell_residuals(ctx, be, res, 3, sum);
  CHECK_TABLE(cell, res, n);
  CHECK_TABLE(cell_sum, sum, 1);

  free(res);
  vox_backend_destroy(be);
  vox_context_destroy(ctx);
  CHECK_DONE();
}
