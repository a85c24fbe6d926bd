/* SPDX-License-Identifier: BSD-3-Clause */
/* Heat conduction on the CUDA backend against the CPU backend: a short
 * heat-sink optimization (a 24x12x24 block heated everywhere, cooled through
 * a patch of its top face, kmin/k0 = 1e-3, p = 3 from the start, sensitivity
 * filter, multigrid-PCG in double) gives the same iterates within rounding:
 * the thermal compliance history, the final densities and temperatures
 * within 1e-8.
 *
 * Exit 77 (skipped) when this build has no CUDA or the machine no device;
 * VOXFE_GPU_TEST_DEVICE=cpu runs it CPU against CPU (checks the test). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../check.h"
#include "voxfe/voxfe.h"

enum { SKIP = 77 };

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

static int64_t node(const vox_grid *g, int64_t i, int64_t j, int64_t k) {
  return (k * (g->ny + 1) + j) * (g->nx + 1) + i;
}

static void report(const char *check, double measured, double tol) {
  const int ok = measured <= tol; /* NaN fails */
  printf("  %-4s  %-60s %9.2e  (tol %.0e)\n", ok ? "ok" : "FAIL", check, measured, tol);
  if (!ok) check_failures++;
}

static double rel(double a, double b) { return fabs(a - b) / fmax(fabs(b), 1e-300); }

/* The heat-sink block: T = 0 on a 4x4-node patch at the corner of the top
 * face (a quarter model: x- and y- are adiabatic symmetry planes), a uniform
 * source of 1e-5 W/mm^3 as consistent nodal loads, k0 = 0.1 W/(mm K). */
static void make_block(vox_context *ctx, vox_model *m, int nx, int ny, int nz) {
  vox_grid g = {.nx = nx, .ny = ny, .nz = nz, .voxel_size = {1, 1, 1}};
  CHECK_OK(ctx, vox_model_init(ctx, m, &g));
  m->physics = VOX_PHYSICS_HEAT;
  memset(m->label, 1, (size_t)vox_grid_elements(&g));
  vox_material mat = {.label = 1, .youngs_modulus = 1, .poisson_ratio = 0.3,
                      .conductivity = 0.1, .name = "conductor"};
  CHECK_OK(ctx, vox_model_add_material(ctx, m, &mat));
  for (int64_t j = 0; j < 4; j++)
    for (int64_t i = 0; i < 4; i++)
      CHECK_OK(ctx, vox_model_add_constraint(ctx, m, node(&g, i, j, nz), 0, 0));
  CHECK_OK(ctx, vox_model_set_load_cases(ctx, m, 1));
  for (int64_t k = 0; k <= nz; k++)
    for (int64_t j = 0; j <= ny; j++)
      for (int64_t i = 0; i <= nx; i++) {
        const int ex = (i > 0) + (i < nx), ey = (j > 0) + (j < ny), ez = (k > 0) + (k < nz);
        CHECK_OK(ctx,
                 vox_model_add_load(ctx, m, node(&g, i, j, k), 0, 0, 1e-5 * ex * ey * ez / 8.0));
      }
}

static int optimize(vox_context *ctx, vox_backend *be, const vox_model *base, vox_model *out,
                    vox_optimize_result *r) {
  vox_optimizer_options opt;
  vox_optimizer_options_default(&opt);
  opt.solver.mg_coarse_dofs = 6000; /* the CPU's and the GPU's levels alike */
  opt.volume_fraction = 0.3;
  opt.emin_ratio = 1e-3;
  opt.max_iterations = 10;
  opt.continuation = 0;
  opt.change_tolerance = 0;
  opt.objective_tolerance = 0;
  opt.filter = VOX_FILTER_SENSITIVITY;
  opt.filter_radius = 2;
  opt.solver.preconditioner = VOX_PC_MULTIGRID;
  CHECK_OK(ctx, vox_model_copy(ctx, out, base));
  const double t = now();
  if (vox_optimize(ctx, be, out, &opt, r) != VOX_OK) {
    printf("  FAIL  vox_optimize on %s: %s\n", vox_backend_name(be), vox_context_message(ctx));
    check_failures++;
    return 0;
  }
  printf("  %s: %d iterations in %.2f s, %d CG iterations in all, final thermal compliance %.12g\n",
         vox_backend_name(be), r->iterations, now() - t, r->total_cg_iterations, r->objective);
  return 1;
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
  printf("heat-sink optimization: block 24x12x24, 10 design iterations, multigrid\n");
  vox_model base, mc, mg;
  memset(&mc, 0, sizeof mc), memset(&mg, 0, sizeof mg);
  make_block(cctx, &base, 24, 12, 24);
  vox_optimize_result rc, rg;
  const int ok_c = optimize(cctx, cpu, &base, &mc, &rc);
  const int ok_g = optimize(gctx, gpu, &base, &mg, &rg);
  if (ok_c && ok_g) {
    CHECK(mc.n_history == 10 && mg.n_history == 10);
    double worst = 0;
    printf("  iter  compliance cpu        compliance cuda       rel diff   CG cpu  CG cuda\n");
    for (size_t i = 0; i < mc.n_history && i < mg.n_history; i++) {
      const double d = rel(mg.history[i].objective, mc.history[i].objective);
      worst = isnan(d) || d > worst ? d : worst;
      printf("  %4d  %.15g  %.15g  %9.2e  %6d  %7d\n", (int)mc.history[i].iteration,
             mc.history[i].objective, mg.history[i].objective, d, (int)mc.history[i].cg_iterations,
             (int)mg.history[i].cg_iterations);
    }
    report("thermal compliance history, cuda vs cpu", worst, 1e-8);
    report("final thermal compliance, cuda vs cpu", rel(rg.objective, rc.objective), 1e-8);
    double dmax = 0, tmax = 0, tdiff = 0;
    for (int64_t e = 0; e < vox_grid_elements(&base.grid); e++) {
      const double d = fabs(mg.density[e] - mc.density[e]);
      dmax = isnan(d) || d > dmax ? d : dmax;
    }
    for (int64_t n = 0; n < vox_grid_nodes(&base.grid); n++) {
      tmax = fmax(tmax, fabs(mc.displacement[n]));
      const double d = fabs(mg.displacement[n] - mc.displacement[n]);
      tdiff = isnan(d) || d > tdiff ? d : tdiff;
    }
    report("final densities max |cuda - cpu|", dmax, 1e-8);
    report("final temperatures max |cuda - cpu| / max T", tdiff / tmax, 1e-8);
  }
  vox_model_free(&mc), vox_model_free(&mg), vox_model_free(&base);
  vox_backend_destroy(gpu), vox_backend_destroy(cpu);
  vox_context_destroy(cctx), vox_context_destroy(gctx);
  if (check_failures) printf("%d check(s) failed (lines with FAIL above)\n", check_failures);
  else printf("all checks passed\n");
  CHECK_DONE();
}
