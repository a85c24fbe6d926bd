/* SPDX-License-Identifier: BSD-3-Clause */
/* Benchmark of the CPU pipeline on the 2:1:1 cantilever (Ratnakar et al. 2021): the time
 * of one matrix-free product K*u, achieved bandwidth and flops against the
 * copy bandwidth measured in the same run, and a fixed number of design
 * iterations (seconds per iteration, CG iterations per solve) with each
 * preconditioner: Jacobi and the geometric multigrid V-cycle.
 *
 *   bench_cantilever PROBLEM.yaml SIZE [ITERATIONS] [THREADS] [jacobi|multigrid|both]
 *
 * The grid is NX x NX/2 x NX/2 unit voxels (SIZE NX), or NXxNYxNZ; the
 * problem file gives the supports and loads
 * (workflows/cantilever/cantilever.yaml). */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_ops.h"
#include "bench_common.h"
#include "fem.h"

/* Copy bandwidth (read + write bytes per second) of a large array. */
static double copy_bandwidth(int threads) {
  const size_t n = 64u << 20; /* 512 MiB per array */
  double *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
  if (!a || !b) return 0;
#pragma omp parallel for num_threads(threads)
  for (size_t i = 0; i < n; i++) a[i] = (double)i, b[i] = 0;
  double best = 1e30;
  for (int rep = 0; rep < 5; rep++) {
    double t = bench_now();
#pragma omp parallel for num_threads(threads) schedule(static)
    for (size_t i = 0; i < n; i++) b[i] = a[i];
    t = bench_now() - t;
    if (t < best) best = t;
  }
  double bw = 2.0 * (double)(n * sizeof *a) / best;
  free(a), free(b);
  return bw;
}

static void die(vox_context *ctx, const char *what) {
  fprintf(stderr, "bench_cantilever: %s: %s\n", what, vox_context_message(ctx));
  exit(1);
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s PROBLEM.yaml NX [ITERATIONS] [THREADS]\n", argv[0]);
    return 2;
  }
  const int nx = atoi(argv[2]), iterations = argc > 3 ? atoi(argv[3]) : 20;
  const int threads = argc > 4 && atoi(argv[4]) > 0 ? atoi(argv[4]) : omp_get_max_threads();
  const char *which = argc > 5 ? argv[5] : "both";
  vox_context *ctx;
  vox_context_create(&ctx);
  vox_context_set_threads(ctx, threads);
  vox_model model;
  const char *what;
  if (bench_cantilever_model(ctx, argv[1], argv[2], &model, &what)) die(ctx, what);
  const vox_grid grid = model.grid;
  vox_backend *be;
  if (vox_backend_create(ctx, VOX_DEVICE_CPU, &be)) die(ctx, "backend");

  const double bw = copy_bandwidth(threads);
  printf("cantilever %dx%dx%d: %lld elements, %lld dofs, %d threads\n", nx, nx / 2, nx / 2,
         (long long)vox_grid_elements(&grid), 3 * (long long)vox_grid_nodes(&grid), threads);
  printf("copy bandwidth: %.1f GB/s\n", bw * 1e-9);

  /* One matrix-free product at the uniform start design. */
  vox_fem *fem;
  if (vox_fem_create(ctx, be, &model, &fem)) die(ctx, "fem");
  vox_vec x, y;
  be->ops->vec->create(be, fem->n_dofs, VOX_DOUBLE, &x);
  be->ops->vec->create(be, fem->n_dofs, VOX_DOUBLE, &y);
  be->ops->vec->set(be, &x, 1e-3);
  be->ops->op->apply(be, fem->op, &x, &y, 0); /* warm-up */
  int reps = 0;
  double t = bench_now(), elapsed;
  do {
    be->ops->op->apply(be, fem->op, &x, &y, 0);
    reps++;
  } while ((elapsed = bench_now() - t) < 2.0);
  const double t_mv = elapsed / reps, ne = (double)fem->n_elements, nd = (double)fem->n_dofs;
  /* minimum traffic: x, y (read + write), fixed mask, moduli */
  const double bytes = nd * (8 + 16 + 1) + ne * 8, flops = ne * 24 * 24 * 2;
  printf("K*u: %.3f ms, %.1f GB/s (%.0f%% of copy), %.2f GFLOP/s\n", t_mv * 1e3,
         bytes / t_mv * 1e-9, 100 * bytes / t_mv / bw, flops / t_mv * 1e-9);
  be->ops->vec->destroy(be, &x);
  be->ops->vec->destroy(be, &y);
  vox_fem_destroy(fem);

  /* Design iterations at the final penalty (no continuation: every solve is
   * as hard as in the later iterations of a real run), from the same start. */
  for (int pc = VOX_PC_JACOBI; pc <= VOX_PC_MULTIGRID; pc++) {
    if (strcmp(which, "both") != 0 && strcmp(which, vox_preconditioner_name(pc)) != 0) continue;
    vox_model run;
    if (vox_model_copy(ctx, &run, &model)) die(ctx, "copy");
    vox_optimizer_options opt;
    vox_optimizer_options_default(&opt);
    opt.continuation = 0;
    opt.max_iterations = iterations;
    opt.change_tolerance = 0;
    opt.objective_tolerance = 0;
    opt.solver.rtol = 1e-6;
    opt.solver.preconditioner = (vox_preconditioner)pc;
    vox_optimize_result r;
    t = bench_now();
    if (vox_optimize(ctx, be, &run, &opt, &r)) die(ctx, "optimize");
    elapsed = bench_now() - t;
    const double solves = (double)(r.iterations + 1) * run.n_load_cases;
    printf("%s: %d design iterations: %.2f s per iteration, %.1f CG iterations per solve "
           "(rtol %g), compliance %.6g\n",
           vox_preconditioner_name(pc), r.iterations, elapsed / r.iterations,
           r.total_cg_iterations / solves, opt.solver.rtol, r.objective);
    printf("  time per stage: solve %.2f s, sensitivity %.3f s, filter %.3f s, OC update %.3f s\n",
           r.seconds_solve, r.seconds_sensitivity, r.seconds_filter, r.seconds_update);
    fflush(stdout);
    vox_model_free(&run);
  }
  vox_backend_destroy(be);
  vox_model_free(&model);
  vox_context_destroy(ctx);
  return 0;
}
