/* SPDX-License-Identifier: BSD-3-Clause */
/* Heat conduction (one dof per node) through the engine:
 *
 * - one-dimensional bars, read from problem files and rasterised: a fixed
 *   temperature at x- and a heat flow into x+ (T linear in x: exact), and a
 *   uniform heat source (T quadratic in x). With the consistent nodal loads
 *   of trilinear elements the nodal temperatures of the quadratic are exact
 *   too: the field is constant across the bar, the elements act as 1D linear
 *   elements, and those are nodally exact for -k T'' = q (their Green's
 *   function is in the element space). Both are checked to rounding;
 * - thermal compliance sensitivities against central finite differences,
 *   and the compliance from element energies against f.T;
 * - a short heat-sink optimization: the volume constraint holds and the
 *   thermal compliance falls; its design file reads back as written
 *   (physics, temperatures, loads). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../check.h"
#include "fem.h"
#include "voxfe/io.h"
#include "voxfe/problem.h"
#include "voxfe/voxfe.h"

static int64_t node(const vox_grid *g, int64_t i, int64_t j, int64_t k) {
  return (k * (g->ny + 1) + j) * (g->nx + 1) + i;
}

/* Reads `yaml` as a problem file and rasterises it onto a full box. */
static void bar_model(vox_context *ctx, const vox_grid *g, const char *yaml, vox_model *m) {
  char path[] = "/tmp/voxfe_test_heat_XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  FILE *f = fdopen(fd, "w");
  fputs(yaml, f);
  fclose(f);
  vox_problem p;
  memset(&p, 0, sizeof p);
  CHECK_OK(ctx, vox_problem_read(ctx, path, &p));
  unlink(path);
  CHECK(p.physics == VOX_PHYSICS_HEAT);
  CHECK_OK(ctx, vox_model_init(ctx, m, g));
  memset(m->label, 1, (size_t)vox_grid_elements(g));
  CHECK_OK(ctx, vox_problem_rasterize(ctx, &p, m));
  CHECK(m->physics == VOX_PHYSICS_HEAT);
  vox_problem_free(&p);
}

/* Solves the model (full conductivity) and returns the nodal temperatures. */
static double *solve(vox_context *ctx, vox_backend *be, const vox_model *m,
                     vox_preconditioner pc) {
  vox_solver_options opt;
  vox_solver_options_default(&opt);
  opt.rtol = 1e-14;
  opt.preconditioner = pc;
  double *t = calloc((size_t)vox_grid_nodes(&m->grid), sizeof *t);
  vox_solve_result r;
  CHECK_OK(ctx, vox_solve_elasticity(ctx, be, m, 0, 3, 1e-9, &opt, t, &r));
  CHECK(r.reason == VOX_CONVERGED_RTOL);
  return t;
}

static void test_bars(vox_context *ctx, vox_backend *be) {
  /* 10 elements of 2 x 1.5 x 0.5 mm: L = 20 mm, A = 0.75 mm^2, k = 0.3 */
  const vox_grid g = {.nx = 10, .ny = 1, .nz = 1, .voxel_size = {2, 1.5, 0.5}};
  const double L = 20, A = 0.75, k = 0.3, Q = 0.6, T0 = 5, q = 0.01;
  for (int pc = 0; pc < 2; pc++) {
    const vox_preconditioner precond = pc ? VOX_PC_MULTIGRID : VOX_PC_JACOBI;
    vox_model m;
    bar_model(ctx, &g,
              "voxfe-problem: 1\n"
              "physics: heat\n"
              "material: {conductivity: 0.3}\n"
              "supports:\n"
              "  - {name: cold_end, region: {face: x-}, temperature: 5}\n"
              "loads:\n"
              "  - {name: inflow, region: {face: x+}, heat: 0.6}\n",
              &m);
    CHECK(m.n_constraints == 4 && m.n_loads == 4);
    double *t = solve(ctx, be, &m, precond), worst = 0;
    for (int64_t k3 = 0; k3 <= g.nz; k3++)
      for (int64_t j = 0; j <= g.ny; j++)
        for (int64_t i = 0; i <= g.nx; i++) {
          const double x = (double)i * g.voxel_size[0], exact = T0 + Q * x / (k * A);
          worst = fmax(worst, fabs(t[node(&g, i, j, k3)] - exact) / (T0 + Q * L / (k * A)));
        }
    printf("bar, end flux (%s): max |T - T_exact| / T_max = %.2e\n",
           pc ? "multigrid" : "jacobi", worst);
    CHECK(worst < 1e-11);
    free(t);
    vox_model_free(&m);

    bar_model(ctx, &g,
              "voxfe-problem: 1\n"
              "physics: heat\n"
              "material: {conductivity: 0.3}\n"
              "supports:\n"
              "  - {name: sink, region: {face: x-}, temperature: 0}\n"
              "loads:\n"
              "  - {name: generation, heat_source: 0.01}\n",
              &m);
    double total = 0;
    for (size_t i = 0; i < m.n_loads; i++) total += m.loads[i].value;
    CHECK_CLOSE(total, q * L * A, 1e-14); /* the whole generated heat */
    t = solve(ctx, be, &m, precond);
    worst = 0;
    const double t_max = q * L * L / (2 * k);
    for (int64_t k3 = 0; k3 <= g.nz; k3++)
      for (int64_t j = 0; j <= g.ny; j++)
        for (int64_t i = 0; i <= g.nx; i++) {
          const double x = (double)i * g.voxel_size[0], exact = q / k * (L * x - x * x / 2);
          worst = fmax(worst, fabs(t[node(&g, i, j, k3)] - exact) / t_max);
        }
    printf("bar, uniform source (%s): max |T - T_exact| / T_max = %.2e (T_max %.6g)\n",
           pc ? "multigrid" : "jacobi", worst, t_max);
    CHECK(worst < 1e-11);
    free(t);
    vox_model_free(&m);
  }
}

/* A small heat-sink block: T = 0 on two nodes of the top face, a uniform
 * source everywhere (consistent nodal loads), conductivity 2. */
static void make_block(vox_context *ctx, vox_model *m, int nx, int ny, int nz) {
  vox_grid g = {.nx = nx, .ny = ny, .nz = nz, .voxel_size = {1, 1, 1}};
  CHECK_OK(ctx, vox_model_init(ctx, m, &g));
  m->physics = VOX_PHYSICS_HEAT;
  memset(m->label, 1, (size_t)vox_grid_elements(&g));
  vox_material mat = {.label = 1, .youngs_modulus = 1, .poisson_ratio = 0.3,
                      .conductivity = 2, .name = "conductor"};
  CHECK_OK(ctx, vox_model_add_material(ctx, m, &mat));
  CHECK_OK(ctx, vox_model_add_constraint(ctx, m, node(&g, 0, 0, nz), 0, 0));
  CHECK_OK(ctx, vox_model_add_constraint(ctx, m, node(&g, 1, 0, nz), 0, 0));
  CHECK_OK(ctx, vox_model_set_load_cases(ctx, m, 1));
  for (int64_t k = 0; k <= nz; k++)
    for (int64_t j = 0; j <= ny; j++)
      for (int64_t i = 0; i <= nx; i++) {
        /* elements sharing the node times 1/8 of each one's heat */
        const int ex = (i > 0) + (i < nx), ey = (j > 0) + (j < ny), ez = (k > 0) + (k < nz);
        CHECK_OK(ctx, vox_model_add_load(ctx, m, node(&g, i, j, k), 0, 0,
                                         1e-2 * ex * ey * ez / 8.0));
      }
}

typedef struct fixture {
  vox_backend *be;
  vox_fem *fem;
  vox_vec rho, t, energy;
  vox_solver_options opt;
} fixture;

/* Thermal compliance at densities rho (host), kmin/k0 = 1e-3; dc_host gets
 * its sensitivities, t_host the temperatures, when not NULL. */
static double compliance(fixture *f, const double *rho, double p, double *dc_host,
                         double *t_host) {
  const vox_backend_ops *o = f->be->ops;
  o->vec->upload(f->be, &f->rho, rho);
  o->design->simp_moduli(f->be, &f->rho, &f->fem->e_solid, p, 1e-3, &f->fem->moduli);
  vox_fem_update(f->fem);
  vox_solve_result r;
  o->vec->set(f->be, &f->t, 0);
  vox_fem_solve(f->fem, 0, &f->t, &f->opt, &r);
  CHECK(r.reason == VOX_CONVERGED_RTOL);
  o->op->element_energy(f->be, f->fem->op, &f->t, &f->energy, 0);
  double c;
  o->vec->dot(f->be, &f->fem->moduli, &f->energy, &c);
  if (dc_host) {
    vox_vec dc;
    o->vec->create(f->be, f->rho.n, VOX_DOUBLE, &dc);
    o->design->simp_sensitivity(f->be, &f->rho, &f->fem->e_solid, &f->energy, p, 1e-3, &dc);
    o->vec->download(f->be, &dc, dc_host);
    o->vec->destroy(f->be, &dc);
  }
  if (t_host) o->vec->download(f->be, &f->t, t_host);
  return c;
}

static void test_sensitivities(vox_context *ctx, vox_backend *be) {
  vox_model m;
  make_block(ctx, &m, 5, 4, 3);
  fixture f = {.be = be};
  CHECK_OK(ctx, vox_fem_create(ctx, be, &m, &f.fem));
  CHECK(f.fem->dpn == 1 && f.fem->n_dofs == (size_t)vox_grid_nodes(&m.grid));
  const size_t ne = f.fem->n_elements, nn = f.fem->n_dofs;
  be->ops->vec->create(be, ne, VOX_DOUBLE, &f.rho);
  be->ops->vec->create(be, nn, VOX_DOUBLE, &f.t);
  be->ops->vec->create(be, ne, VOX_DOUBLE, &f.energy);
  vox_solver_options_default(&f.opt);
  f.opt.rtol = 1e-13;
  double *rho = malloc(ne * sizeof *rho), *dc = malloc(ne * sizeof *dc),
         *t = malloc(nn * sizeof *t);
  srand(11);
  for (size_t e = 0; e < ne; e++) rho[e] = 0.2 + 0.8 * rand() / (double)RAND_MAX;
  const double p = 3, c = compliance(&f, rho, p, dc, t);
  /* the compliance from element energies is f.T */
  double ft = 0;
  for (size_t i = 0; i < m.n_loads; i++) ft += m.loads[i].value * t[m.loads[i].node];
  printf("thermal compliance: sum of element energies %.15g, f.T %.15g\n", c, ft);
  CHECK_CLOSE(c, ft, 1e-10);
  const size_t probe[] = {0, 3, 17, ne / 2, ne - 1};
  for (size_t i = 0; i < sizeof probe / sizeof probe[0]; i++) {
    const size_t e = probe[i];
    const double h = 1e-5, saved = rho[e];
    rho[e] = saved + h;
    const double cp = compliance(&f, rho, p, NULL, NULL);
    rho[e] = saved - h;
    const double cm = compliance(&f, rho, p, NULL, NULL);
    rho[e] = saved;
    const double fd = (cp - cm) / (2 * h);
    printf("  element %3zu: dc/drho %.10e, central difference %.10e\n", e, dc[e], fd);
    CHECK(dc[e] < 0);
    CHECK(fabs(dc[e] - fd) <= 1e-6 * fabs(dc[e]));
  }
  free(rho), free(dc), free(t);
  be->ops->vec->destroy(be, &f.rho), be->ops->vec->destroy(be, &f.t);
  be->ops->vec->destroy(be, &f.energy);
  vox_fem_destroy(f.fem);
  vox_model_free(&m);
}

static void test_optimization(vox_context *ctx, vox_backend *be) {
  vox_model m;
  make_block(ctx, &m, 8, 4, 8);
  vox_optimizer_options opt;
  vox_optimizer_options_default(&opt);
  opt.volume_fraction = 0.3;
  opt.emin_ratio = 1e-3;
  opt.filter_radius = 1.5;
  opt.max_iterations = 12;
  opt.continuation = 0;
  vox_optimize_result r;
  CHECK_OK(ctx, vox_optimize(ctx, be, &m, &opt, &r));
  CHECK(m.n_history == 12);
  printf("heat optimization 8x4x8: compliance %.6g -> %.6g, volume fraction %.6f\n",
         m.history[0].objective, r.objective, r.volume_fraction);
  CHECK(r.objective < 0.7 * m.history[0].objective);
  CHECK(fabs(r.volume_fraction - 0.3) < 1e-3);
  for (size_t i = 0; i < m.n_history; i++) CHECK(m.history[i].volume_fraction <= 0.3 + 1e-6);
  /* the stored state is one temperature per node */
  CHECK(m.displacement != NULL);
  double t_max = 0;
  for (int64_t n = 0; n < vox_grid_nodes(&m.grid); n++) t_max = fmax(t_max, m.displacement[n]);
  CHECK(t_max > 0 && m.displacement[node(&m.grid, 0, 0, m.grid.nz)] == 0);

  /* the design file: physics and temperatures come back bit for bit */
  char path[] = "/tmp/voxfe_test_heat_XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  close(fd);
  CHECK_OK(ctx, vox_model_write(ctx, path, &m));
  vox_model back;
  CHECK_OK(ctx, vox_model_read(ctx, path, &back));
  unlink(path);
  CHECK(back.physics == VOX_PHYSICS_HEAT && back.stage == VOX_STAGE_DESIGN);
  CHECK(back.displacement != NULL && back.n_load_cases == 1);
  if (back.displacement)
    CHECK(!memcmp(back.displacement, m.displacement,
                  (size_t)vox_grid_nodes(&m.grid) * sizeof *m.displacement));
  CHECK(back.n_loads == m.n_loads && back.n_constraints == m.n_constraints);
  for (size_t i = 0; i < back.n_loads && i < m.n_loads; i++)
    CHECK(back.loads[i].component == 0 && back.loads[i].value == m.loads[i].value);
  vox_model_free(&back);
  vox_model_free(&m);
}

int main(void) {
  vox_context *ctx;
  vox_backend *be;
  if (vox_context_create(&ctx) || vox_backend_create(ctx, VOX_DEVICE_CPU, &be)) return 1;
  test_bars(ctx, be);
  test_sensitivities(ctx, be);
  test_optimization(ctx, be);
  vox_backend_destroy(be);
  vox_context_destroy(ctx);
  CHECK_DONE();
}
