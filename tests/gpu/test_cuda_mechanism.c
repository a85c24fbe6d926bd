/* SPDX-License-Identifier: BSD-3-Clause */
/* Compliant mechanisms on the CUDA backend:
 *
 * - one GPU against the CPU: a short gripper optimization (a 24x8x12 half
 *   model with input and output springs, p = 3 from the start, multigrid
 *   PCG in double) gives the same iterates within rounding: the objective
 *   history and the final densities;
 * - two GPUs: the same optimization with the adjoint solved on the second
 *   GPU while the state is solved on the first (--adjoint-gpu auto), in the
 *   default mixed precision, gives the same design as the one-GPU run, bit
 *   for bit, and says which GPU solved the adjoints. Skipped (the first part
 *   still runs) with fewer than two devices.
 *
 * Exit 77 (skipped) when this build has no CUDA or the machine no device. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../check.h"
#include "voxfe/voxfe.h"

enum { SKIP = 77, NX = 24, NY = 8, NZ = 12 };

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

/* The gripper of test_mechanism.c in 3D: symmetry plane z = 0, the left
 * face's top edge held, input at the middle of the left face on the plane
 * (+x, with its spring), jaws on the right face above a void gap, output
 * the closing -z with its spring. */
static void make_gripper(vox_context *ctx, vox_model *m) {
  vox_grid g = {.nx = NX, .ny = NY, .nz = NZ, .voxel_size = {1, 1, 1}};
  CHECK_OK(ctx, vox_model_init(ctx, m, &g));
  memset(m->label, 1, (size_t)vox_grid_elements(&g));
  vox_material nylon = {.label = 1, .youngs_modulus = 3000, .poisson_ratio = 0.4, .name = "nylon"};
  vox_material gap = {.label = 3, .role = VOX_ROLE_VOID, .youngs_modulus = 3000,
                      .poisson_ratio = 0.4, .name = "gap"};
  CHECK_OK(ctx, vox_model_add_material(ctx, m, &nylon));
  CHECK_OK(ctx, vox_model_add_material(ctx, m, &gap));
  CHECK_OK(ctx, vox_model_set_load_cases(ctx, m, 1));
  for (int64_t k = 0; k < 2; k++)
    for (int64_t j = 0; j < NY; j++)
      for (int64_t i = NX - 4; i < NX; i++) m->label[(k * NY + j) * NX + i] = 3;
  for (int64_t j = 0; j <= NY; j++) {
    for (int64_t i = 0; i <= NX; i++)
      CHECK_OK(ctx, vox_model_add_constraint(ctx, m, node(&g, i, j, 0), 2, 0));
    for (int c = 0; c < 3; c++)
      CHECK_OK(ctx, vox_model_add_constraint(ctx, m, node(&g, 0, j, NZ), c, 0));
  }
  for (int64_t j = NY / 2 - 1; j <= NY / 2 + 1; j++) {
    const int64_t in = node(&g, 0, j, 0), out = node(&g, NX, j, 2);
    CHECK_OK(ctx, vox_model_add_load(ctx, m, in, 0, 0, 500.0 / 3));
    CHECK_OK(ctx, vox_model_add_spring(ctx, m, in, 0, 500.0 / 3));
    CHECK_OK(ctx, vox_model_add_output(ctx, m, out, 2, -1.0 / 3));
    CHECK_OK(ctx, vox_model_add_spring(ctx, m, out, 2, 500.0 / 3));
  }
  m->objective = VOX_OBJECTIVE_OUTPUT_DISPLACEMENT;
}

static void options(vox_optimizer_options *o, vox_precision precision, int adjoint_gpu) {
  vox_optimizer_options_default(o);
  o->volume_fraction = 0.2;
  o->emin_ratio = 1.0 / 3000;
  o->filter_radius = 1.5;
  o->move_limit = 0.1;
  o->damping = 0.3;
  o->max_iterations = 12;
  o->continuation = 0;
  o->solver.rtol = 1e-10;
  o->solver.precision = precision;
  o->adjoint_gpu = adjoint_gpu;
}

/* Optimizes a fresh gripper on `be`; the design in *m (freed by the caller). */
static int optimize(vox_context *ctx, vox_backend *be, const vox_optimizer_options *o,
                    vox_model *m, vox_optimize_result *r, double *seconds) {
  make_gripper(ctx, m);
  const double t0 = now();
  const vox_status s = vox_optimize(ctx, be, m, o, r);
  *seconds = now() - t0;
  if (s != VOX_OK) {
    fprintf(stderr, "optimize: %s\n", vox_context_message(ctx));
    check_failures++;
    return 0;
  }
  return 1;
}

static double max_diff(const double *a, const double *b, size_t n) {
  double d = 0;
  for (size_t i = 0; i < n; i++) d = fmax(d, fabs(a[i] - b[i]));
  return d;
}

int main(void) {
  vox_context *ctx;
  if (vox_context_create(&ctx)) return 1;
  vox_backend *gpu, *cpu;
  if (vox_backend_create(ctx, VOX_DEVICE_CUDA, &gpu) != VOX_OK) {
    printf("skipped: %s\n", vox_context_message(ctx));
    vox_context_destroy(ctx);
    return SKIP;
  }
  CHECK_OK(ctx, vox_backend_create(ctx, VOX_DEVICE_CPU, &cpu));
  const size_t ne = (size_t)NX * NY * NZ;
  const int devices = vox_device_count(VOX_DEVICE_CUDA);
  printf("%d CUDA device(s); gripper %dx%dx%d\n", devices, NX, NY, NZ);

  /* one GPU against the CPU, in double */
  vox_optimizer_options o;
  options(&o, VOX_PRECISION_DOUBLE, VOX_ADJOINT_GPU_NONE);
  vox_model mc, mg;
  vox_optimize_result rc, rg;
  double tc, tg;
  if (optimize(ctx, cpu, &o, &mc, &rc, &tc) && optimize(ctx, gpu, &o, &mg, &rg, &tg)) {
    printf("CPU %.2f s, GPU %.2f s; -u_out %.9g (CPU) %.9g (GPU)\n", tc, tg, rc.objective,
           rg.objective);
    CHECK(rc.objective < 0 && rg.adjoint_gpu == -1);
    /* relative to the largest |objective|: the output displacement changes
     * sign in the first iterations, where a relative difference means nothing */
    double hist = 0, scale = 0;
    for (size_t i = 0; i < mc.n_history && i < mg.n_history; i++) {
      hist = fmax(hist, fabs(mc.history[i].objective - mg.history[i].objective));
      scale = fmax(scale, fabs(mc.history[i].objective));
    }
    report("objective history, GPU vs CPU (relative to its largest)", hist / scale, 1e-8);
    report("final densities, GPU vs CPU", max_diff(mc.density, mg.density, ne), 1e-7);
  }
  vox_model_free(&mc);
  vox_model_free(&mg);

  /* two GPUs against one, in the default mixed precision */
  if (devices < 2) {
    printf("skipped the two-GPU part: %d device\n", devices);
  } else {
    vox_model m1, m2;
    vox_optimize_result r1, r2;
    double t1, t2;
    options(&o, VOX_PRECISION_MIXED, VOX_ADJOINT_GPU_NONE);
    const int one = optimize(ctx, gpu, &o, &m1, &r1, &t1);
    options(&o, VOX_PRECISION_MIXED, VOX_ADJOINT_GPU_AUTO);
    if (one && optimize(ctx, gpu, &o, &m2, &r2, &t2)) {
      printf("one GPU %.2f s, two GPUs %.2f s (adjoint on GPU %d); -u_out %.17g and %.17g\n",
             t1, t2, r2.adjoint_gpu, r1.objective, r2.objective);
      CHECK(r1.adjoint_gpu == -1 && r2.adjoint_gpu == 1);
      CHECK(r1.iterations == r2.iterations && r1.total_cg_iterations == r2.total_cg_iterations);
      double hist = 0;
      for (size_t i = 0; i < m1.n_history && i < m2.n_history; i++)
        hist = fmax(hist, fabs(m1.history[i].objective - m2.history[i].objective));
      report("objective history, two GPUs vs one", hist, 0);
      report("final densities, two GPUs vs one", max_diff(m1.density, m2.density, ne), 0);
      report("final displacements, two GPUs vs one",
             max_diff(m1.displacement, m2.displacement, 3 * (size_t)(NX + 1) * (NY + 1) * (NZ + 1)),
             0);
    }
    vox_model_free(&m1);
    vox_model_free(&m2);
    /* a device that is not there is an error naming it */
    options(&o, VOX_PRECISION_MIXED, devices);
    vox_model m3;
    make_gripper(ctx, &m3);
    CHECK(vox_optimize(ctx, gpu, &m3, &o, &r1) == VOX_ERR_DEVICE);
    printf("adjoint GPU %d: %s\n", devices, vox_context_message(ctx));
    vox_model_free(&m3);
  }
  vox_backend_destroy(cpu);
  vox_backend_destroy(gpu);
  vox_context_destroy(ctx);
  CHECK_DONE();
}
