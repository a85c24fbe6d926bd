/* SPDX-License-Identifier: BSD-3-Clause */
/* Whole runs on the CUDA backend against the CPU backend:
 *
 * - a short optimization (2:1:1 cantilever 24x12x12, two load cases, a
 *   passive solid element, p = 3 from the start, sensitivity filter,
 *   multigrid-PCG in double): the same iterates within rounding, i.e. the
 *   compliance history and the final densities within 1e-8 relative;
 * - the same on CUDA with the mixed-precision multigrid: the final
 *   compliance within 1e-3 of the double CPU run;
 * - one vox_solve_elasticity with a 1e-9 density contrast: the same
 *   solution (compliance, and the difference in the energy norm);
 * - the multigrid cycle recorded and replayed against op by op: the same
 *   bits.
 *
 * Exit 77 (skipped) when this build has no CUDA or the machine no device. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../check.h"
#include "fem.h"
#include "memory_plan.h"
#include "voxfe/voxfe.h"

enum { SKIP = 77 };

/* The backend under test: CUDA, or the one VOXFE_GPU_TEST_DEVICE names
 * ("cpu" checks this test itself on a machine without a GPU: every
 * difference is then that of the CPU backend with itself). */
static vox_device test_device(void) {
  vox_device d = VOX_DEVICE_CUDA;
  const char *env = getenv("VOXFE_GPU_TEST_DEVICE");
  if (env && *env && vox_device_parse(env, &d) == 0)
    printf("VOXFE_GPU_TEST_DEVICE=%s: testing the %s backend against the CPU one\n", env, env);
  return d;
}


static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double uniform(uint64_t *state) {
  *state = *state * 6364136223846793005u + 1442695040888963407u;
  return (double)(*state >> 11) / 9007199254740992.0;
}

static int64_t node(const vox_grid *g, int64_t i, int64_t j, int64_t k) {
  return (k * (g->ny + 1) + j) * (g->nx + 1) + i;
}

/* Prints the check with its measured value; counts a failure above tol. */
static void report(const char *check, double measured, double tol) {
  const int ok = measured <= tol; /* NaN fails */
  printf("  %-4s  %-60s %9.2e  (tol %.0e)\n", ok ? "ok" : "FAIL", check, measured, tol);
  if (!ok) check_failures++;
}

static double rel(double a, double b) { return fabs(a - b) / fmax(fabs(b), 1e-300); }

/* The 2:1:1 cantilever of tests/engine/test_optimizer.c: clamped at x-, a
 * downward line load at the bottom of the free end (case 0), a sideways
 * point load at the top corner (case 1), one passive solid element. */
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
      for (int c = 0; c < 3; c++)
        CHECK_OK(ctx, vox_model_add_constraint(ctx, m, node(&g, 0, j, k), c, 0));
  CHECK_OK(ctx, vox_model_set_load_cases(ctx, m, 2));
  for (int64_t j = 0; j <= g.ny; j++)
    CHECK_OK(ctx, vox_model_add_load(ctx, m, node(&g, g.nx, j, 0), 2, 0, -1.0 / (double)(g.ny + 1)));
  CHECK_OK(ctx, vox_model_add_load(ctx, m, node(&g, g.nx, g.ny, g.nz), 1, 1, 0.5));
}

/* Runs the optimization on a copy of `base`; returns 0 when it failed. */
static int optimize_with(vox_context *ctx, vox_backend *be, const vox_model *base,
                         vox_precision precision, int mg_record, vox_model *out,
                         vox_optimize_result *r) {
  vox_optimizer_options opt;
  vox_optimizer_options_default(&opt);
  opt.solver.mg_record = mg_record;
  opt.solver.mg_coarse_dofs = 6000; /* the CPU's and the GPU's levels alike */
  opt.volume_fraction = 0.3;
  opt.max_iterations = 10;
  opt.continuation = 0;         /* p = 3 from the first iteration */
  opt.change_tolerance = 0;     /* run all 10 iterations */
  opt.objective_tolerance = 0;
  opt.filter = VOX_FILTER_SENSITIVITY;
  opt.filter_radius = 1.5;
  opt.solver.preconditioner = VOX_PC_MULTIGRID;
  opt.solver.precision = precision;
  CHECK_OK(ctx, vox_model_copy(ctx, out, base));
  const double t = now();
  const vox_status s = vox_optimize(ctx, be, out, &opt, r);
  if (s != VOX_OK) {
    printf("  FAIL  vox_optimize on %s (%s precision): %s: %s\n", vox_backend_name(be),
           vox_precision_name(precision), vox_status_string(s), vox_context_message(ctx));
    check_failures++;
    return 0;
  }
  printf("  %s, %s precision%s: %d iterations in %.2f s, %d CG iterations in all, final "
         "compliance %.12g, %s\n",
         vox_backend_name(be), vox_precision_name(precision),
         mg_record ? "" : ", the cycle op by op", r->iterations, now() - t,
         r->total_cg_iterations, r->objective, vox_stop_reason_string(r->reason));
  return 1;
}

static int optimize(vox_context *ctx, vox_backend *be, const vox_model *base,
                    vox_precision precision, vox_model *out, vox_optimize_result *r) {
  return optimize_with(ctx, be, base, precision, 1, out, r);
}

/* The multigrid cycle recorded and replayed (solver.h: mg_record) against
 * the same cycle launched op by op: the same kernels in the same order, so
 * the same bits, whole runs (two load cases, a setup every design
 * iteration) and single solves alike; a solve holds a recording where the
 * coarsest level is factored on the device, and none (the cycles run op by
 * op, correctly) where the coarsest solve goes through the host. */
static int solve_cases(vox_context *ctx, vox_backend *be, const vox_model *m, int mg_levels,
                       int mg_record, double *u, int *recorded) {
  vox_fem *fem;
  if (vox_fem_create(ctx, be, m, &fem) != VOX_OK) return 0;
  const vox_backend_ops *o = be->ops;
  vox_solver_options opt;
  vox_solver_options_default(&opt);
  opt.rtol = 1e-10;
  opt.mg_levels = mg_levels;
  opt.mg_record = mg_record;
  const size_t ne = (size_t)fem->n_elements, nd = (size_t)fem->n_dofs;
  double *rho = malloc(ne * sizeof *rho);
  uint64_t seed = 3;
  for (size_t e = 0; e < ne; e++) rho[e] = 0.05 + 0.95 * uniform(&seed);
  vox_vec r = {0}, uv = {0};
  vox_solve_result res = {0};
  int ok = rho && o->vec->create(be, ne, VOX_DOUBLE, &r) == VOX_OK &&
           o->vec->create(be, nd, VOX_DOUBLE, &uv) == VOX_OK &&
           o->vec->upload(be, &r, rho) == VOX_OK &&
           o->design->simp_moduli(be, &r, &fem->e_solid, 3, 1e-9, &fem->moduli) == VOX_OK &&
           vox_fem_update(fem) == VOX_OK;
  for (int c = 0; ok && c < 2; c++) {
    ok = o->vec->set(be, &uv, 0) == VOX_OK && vox_fem_solve(fem, c, &uv, &opt, &res) == VOX_OK &&
         res.reason == VOX_CONVERGED_RTOL && o->vec->download(be, &uv, u + c * nd) == VOX_OK;
    recorded[c] = ok && fem->mg && vox_mg_recorded(fem->mg);
  }
  if (!ok)
    printf("  FAIL  a solve (mg_record %d): %s (%s after %d CG iterations)\n", mg_record,
           vox_context_message(ctx), vox_convergence_string(res.reason), res.iterations);
  if (r.data) o->vec->destroy(be, &r);
  if (uv.data) o->vec->destroy(be, &uv);
  free(rho);
  vox_fem_destroy(fem);
  return ok;
}

static void test_recorded_cycle(vox_context *gctx, vox_backend *gpu) {
  printf("the multigrid cycle recorded and replayed against op by op\n");
  vox_model base, mr, mo;
  memset(&mr, 0, sizeof mr), memset(&mo, 0, sizeof mo);
  make_cantilever(gctx, &base, 24);
  vox_optimize_result rr, ro;
  if (optimize_with(gctx, gpu, &base, VOX_PRECISION_MIXED, 1, &mr, &rr) &&
      optimize_with(gctx, gpu, &base, VOX_PRECISION_MIXED, 0, &mo, &ro)) {
    int same = mr.n_history == mo.n_history && rr.total_cg_iterations == ro.total_cg_iterations;
    for (size_t i = 0; same && i < mr.n_history; i++)
      same = mr.history[i].objective == mo.history[i].objective &&
             mr.history[i].cg_iterations == mo.history[i].cg_iterations;
    const size_t ne = (size_t)vox_grid_elements(&base.grid);
    same = same && memcmp(mr.density, mo.density, ne * sizeof *mr.density) == 0;
    report("optimization (mixed): history and densities differ (0: bit for bit)", !same, 0);
  } else {
    check_failures++;
  }
  vox_model_free(&mr), vox_model_free(&mo), vox_model_free(&base);
  /* 24 x 12 x 12 on 3 levels: the coarsest (6 x 3 x 3 elements) factored
   * on the device; 48 x 24 x 24 on 2: 12,675 coarsest unknowns, past the
   * device's dense factor (VOX_CUDA_DENSE_COARSE_DOFS), solved on the host */
  const int sizes[2] = {24, 48}, levels[2] = {3, 2};
  for (int k = 0; k < 2; k++) {
    vox_model m;
    make_cantilever(gctx, &m, sizes[k]);
    const size_t nd = 3 * (size_t)vox_grid_nodes(&m.grid);
    double *ur = malloc(2 * nd * sizeof *ur), *uo = malloc(2 * nd * sizeof *uo);
    int rec_r[2] = {0, 0}, rec_o[2] = {0, 0};
    const int solved_r = ur && solve_cases(gctx, gpu, &m, levels[k], 1, ur, rec_r);
    const int solved_o = uo && solve_cases(gctx, gpu, &m, levels[k], 0, uo, rec_o);
    if (solved_r && solved_o) {
      char what[96];
      snprintf(what, sizeof what, "%dx%dx%d, %d levels: two solves differ (0: bit for bit)",
               sizes[k], sizes[k] / 2, sizes[k] / 2, levels[k]);
      report(what, memcmp(ur, uo, 2 * nd * sizeof *ur) != 0, 0);
      /* (the CPU backend, VOXFE_GPU_TEST_DEVICE=cpu, records none) */
      const int device_coarse = k == 0 && gpu->ops->mg->records;
      snprintf(what, sizeof what, "  recorded: %d %d (op by op: %d %d), expected %d", rec_r[0],
               rec_r[1], rec_o[0], rec_o[1], device_coarse);
      report(what,
             rec_r[0] != device_coarse || rec_r[1] != device_coarse || rec_o[0] || rec_o[1], 0);
    } else {
      check_failures++;
    }
    free(ur), free(uo);
    vox_model_free(&m);
  }
}

static void test_optimize(vox_context *cctx, vox_backend *cpu, vox_context *gctx,
                          vox_backend *gpu) {
  printf("optimization: cantilever 24x12x12, 10 design iterations, multigrid\n");
  vox_model base, mc, mg, mm;
  memset(&mc, 0, sizeof mc), memset(&mg, 0, sizeof mg), memset(&mm, 0, sizeof mm);
  make_cantilever(cctx, &base, 24);
  vox_optimize_result rc, rg, rm;
  const int ok_c = optimize(cctx, cpu, &base, VOX_PRECISION_DOUBLE, &mc, &rc);
  const int ok_g = optimize(gctx, gpu, &base, VOX_PRECISION_DOUBLE, &mg, &rg);
  if (ok_c && ok_g) {
    CHECK(rc.iterations == 10 && rg.iterations == 10);
    CHECK(mc.n_history == mg.n_history);
    printf("  iter  compliance cpu        compliance cuda       rel diff   CG cpu  CG cuda\n");
    double worst = 0;
    for (size_t i = 0; i < mc.n_history && i < mg.n_history; i++) {
      const double d = rel(mg.history[i].objective, mc.history[i].objective);
      worst = isnan(d) || d > worst ? d : worst;
      printf("  %4d  %.15g  %.15g  %9.2e  %6d  %7d\n", (int)mc.history[i].iteration,
             mc.history[i].objective, mg.history[i].objective, d, (int)mc.history[i].cg_iterations,
             (int)mg.history[i].cg_iterations);
    }
    report("compliance history, cuda vs cpu (double)", worst, 1e-8);
    report("final compliance, cuda vs cpu (double)", rel(rg.objective, rc.objective), 1e-8);
    const size_t ne = (size_t)vox_grid_elements(&base.grid);
    double dmax = 0;
    for (size_t e = 0; e < ne; e++) {
      const double d = fabs(mg.density[e] - mc.density[e]);
      dmax = isnan(d) || d > dmax ? d : dmax;
    }
    report("final densities max |cuda - cpu| (double)", dmax, 1e-8);
    report("final volume fraction, cuda vs cpu (double)",
           rel(rg.volume_fraction, rc.volume_fraction), 1e-8);
  }
  if (ok_c && optimize(gctx, gpu, &base, VOX_PRECISION_MIXED, &mm, &rm)) {
    printf("  iter  compliance cpu double  compliance cuda mixed  rel diff   CG cpu  CG cuda\n");
    for (size_t i = 0; i < mc.n_history && i < mm.n_history; i++)
      printf("  %4d  %.15g  %.15g  %9.2e  %6d  %7d\n", (int)mc.history[i].iteration,
             mc.history[i].objective, mm.history[i].objective,
             rel(mm.history[i].objective, mc.history[i].objective),
             (int)mc.history[i].cg_iterations, (int)mm.history[i].cg_iterations);
    report("final compliance, cuda mixed vs cpu double", rel(rm.objective, rc.objective), 1e-3);
  }
  vox_model_free(&mc), vox_model_free(&mg), vox_model_free(&mm), vox_model_free(&base);
}

/* A solve at random solid/void densities (stiffness contrast 1e-9). */
static void test_contrast_solve(vox_context *cctx, vox_backend *cpu, vox_context *gctx,
                                vox_backend *gpu) {
  printf("vox_solve_elasticity: cantilever 21x11x9, random solid/void, contrast 1e-9\n");
  vox_model m;
  vox_grid g = {.nx = 21, .ny = 11, .nz = 9, .voxel_size = {1, 1, 1}};
  CHECK_OK(cctx, vox_model_init(cctx, &m, &g));
  memset(m.label, 1, (size_t)vox_grid_elements(&g));
  vox_material mat = {.label = 1, .youngs_modulus = 1, .poisson_ratio = 0.3, .name = "solid"};
  CHECK_OK(cctx, vox_model_add_material(cctx, &m, &mat));
  for (int64_t k = 0; k <= g.nz; k++)
    for (int64_t j = 0; j <= g.ny; j++)
      for (int c = 0; c < 3; c++)
        CHECK_OK(cctx, vox_model_add_constraint(cctx, &m, node(&g, 0, j, k), c, 0));
  CHECK_OK(cctx, vox_model_set_load_cases(cctx, &m, 1));
  for (int64_t j = 0; j <= g.ny; j++)
    CHECK_OK(cctx, vox_model_add_load(cctx, &m, node(&g, g.nx, j, 0), 2, 0, -1.0 / (double)(g.ny + 1)));
  const size_t ne = (size_t)vox_grid_elements(&g), nd = 3 * (size_t)vox_grid_nodes(&g);
  m.density = malloc(ne * sizeof *m.density);
  double *uc = calloc(nd, sizeof *uc), *ug = calloc(nd, sizeof *ug);
  if (!m.density || !uc || !ug) {
    printf("  FAIL  out of host memory\n");
    check_failures++;
    goto done;
  }
  uint64_t seed = 42;
  for (size_t e = 0; e < ne; e++) m.density[e] = uniform(&seed) < 0.5 ? 1.0 : 0.0;

  vox_solver_options opt;
  vox_solver_options_default(&opt);
  opt.mg_coarse_dofs = 6000; /* the CPU's and the GPU's levels alike */
  opt.preconditioner = VOX_PC_MULTIGRID;
  opt.rtol = 1e-11;
  opt.max_iterations = 20000;
  vox_solve_result rc, rg;
  vox_status sc = vox_solve_elasticity(cctx, cpu, &m, 1, 3, 1e-9, &opt, uc, &rc);
  vox_status sg = vox_solve_elasticity(gctx, gpu, &m, 1, 3, 1e-9, &opt, ug, &rg);
  if (sc != VOX_OK || sg != VOX_OK) {
    printf("  FAIL  vox_solve_elasticity: cpu %s (%s), cuda %s (%s)\n", vox_status_string(sc),
           sc ? vox_context_message(cctx) : "", vox_status_string(sg),
           sg ? vox_context_message(gctx) : "");
    check_failures++;
    goto done;
  }
  printf("  cpu: %d CG iterations, %s; cuda: %d CG iterations, %s\n", rc.iterations,
         vox_convergence_string(rc.reason), rg.iterations, vox_convergence_string(rg.reason));
  CHECK(rc.reason == VOX_CONVERGED_RTOL);
  CHECK(rg.reason == VOX_CONVERGED_RTOL);
  double fc = 0, fg = 0, umax = 0, dmax = 0;
  for (size_t i = 0; i < m.n_loads; i++) {
    const size_t d = 3 * (size_t)m.loads[i].node + m.loads[i].component;
    fc += m.loads[i].value * uc[d];
    fg += m.loads[i].value * ug[d];
  }
  for (size_t i = 0; i < nd; i++) {
    umax = fmax(umax, fabs(uc[i]));
    const double d = fabs(ug[i] - uc[i]);
    dmax = isnan(d) || d > dmax ? d : dmax;
  }
  printf("  compliance: cpu %.15g, cuda %.15g; max |u_cuda - u_cpu| / max |u_cpu| = %.2e "
         "(not checked: voids are soft)\n",
         fc, fg, dmax / umax);
  report("compliance f.u, cuda vs cpu", rel(fg, fc), 1e-8);

  /* ||u_cuda - u_cpu||_K / ||u_cpu||_K with K at the same densities, on the CPU */
  vox_fem *fem = NULL;
  CHECK_OK(cctx, vox_fem_create(cctx, cpu, &m, &fem));
  if (fem) {
    const vox_backend_ops *o = cpu->ops;
    vox_vec rho, d, kd;
    o->vec->create(cpu, ne, VOX_DOUBLE, &rho), o->vec->create(cpu, nd, VOX_DOUBLE, &d), o->vec->create(cpu, nd, VOX_DOUBLE, &kd);
    o->vec->upload(cpu, &rho, m.density);
    o->design->simp_moduli(cpu, &rho, &fem->e_solid, 3, 1e-9, &fem->moduli);
    double e_diff, e_ref;
    for (size_t i = 0; i < nd; i++) ug[i] -= uc[i];
    o->vec->upload(cpu, &d, ug);
    o->op->apply(cpu, fem->op, &d, &kd, 0);
    o->vec->dot(cpu, &d, &kd, &e_diff);
    o->vec->upload(cpu, &d, uc);
    o->op->apply(cpu, fem->op, &d, &kd, 0);
    o->vec->dot(cpu, &d, &kd, &e_ref);
    report("energy norm of u_cuda - u_cpu, relative", sqrt(fabs(e_diff) / e_ref), 1e-6);
    o->vec->destroy(cpu, &rho), o->vec->destroy(cpu, &d), o->vec->destroy(cpu, &kd);
    vox_fem_destroy(fem);
  }
done:
  free(uc), free(ug);
  vox_model_free(&m);
}

/* A run too large for the device fails before allocating, with the bytes
 * and the largest grid that fits (only on a device backend). */
static void test_memory_plan(vox_context *ctx, vox_backend *gpu) {
  if (!gpu->ops->device_memory) return;
  vox_grid huge = {.nx = 4000, .ny = 2000, .nz = 2000, .voxel_size = {1, 1, 1}};
  vox_solver_options so;
  vox_solver_options_default(&so);
  so.mg_coarse_dofs = 6000; /* the CPU's and the GPU's levels alike */
  const vox_status s = vox_memory_check(gpu, &huge, 3, 1, 0, &so, 7);
  const char *msg = vox_context_message(ctx);
  printf("  memory plan of a 4000x2000x2000 optimization: %s\n", msg);
  CHECK(s == VOX_ERR_NO_MEMORY);
  CHECK(strstr(msg, "largest grid of these proportions that fits is") != NULL);
  vox_context_clear_error(ctx);
  vox_grid small = {.nx = 24, .ny = 12, .nz = 12, .voxel_size = {1, 1, 1}};
  CHECK(vox_memory_check(gpu, &small, 3, 1, 0, &so, 7) == VOX_OK);
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  vox_context *cctx, *gctx;
  vox_backend *cpu, *gpu;
  if (vox_context_create(&cctx) || vox_context_create(&gctx)) return 1;
  if (vox_backend_create(gctx, test_device(), &gpu) != VOX_OK) {
    printf("SKIP: %s\n", vox_context_message(gctx));
    vox_context_destroy(cctx), vox_context_destroy(gctx);
    return SKIP;
  }
  if (vox_backend_create(cctx, VOX_DEVICE_CPU, &cpu) != VOX_OK) {
    printf("FAIL: CPU backend: %s\n", vox_context_message(cctx));
    return 1;
  }
  test_optimize(cctx, cpu, gctx, gpu);
  test_contrast_solve(cctx, cpu, gctx, gpu);
  test_recorded_cycle(gctx, gpu);
  test_memory_plan(gctx, gpu);
  vox_backend_destroy(gpu), vox_backend_destroy(cpu);
  vox_context_destroy(cctx), vox_context_destroy(gctx);
  if (check_failures) printf("%d check(s) failed (lines with FAIL above)\n", check_failures);
  else printf("all checks passed\n");
  CHECK_DONE();
}
