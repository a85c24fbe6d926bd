/* SPDX-License-Identifier: BSD-3-Clause */
/* Benchmark of the CUDA backend (docs/benchmarks.md). Its modes:
 *
 *   bench_cuda kernel NX NY NZ [REPS]
 *     The matrix-free K u (elasticity, random moduli, the x- face fixed) in
 *     each variant (dbd, nbn, ebe, modes, and auto, the backend's choice): time per
 *     product, achieved bandwidth over the minimal bytes and its ratio to the
 *     device copy bandwidth measured in the same run, GFLOP/s of the dense
 *     element product; each variant's result against the first one and
 *     against one product on the CPU backend.
 *
 *   bench_cuda cantilever PROBLEM.yaml SIZE [ITERATIONS] [double|mixed] [KERNEL]
 *     Design iterations of the 2:1:1 cantilever NX x NX/2 x NX/2 (SIZE NX;
 *     or SIZE NXxNYxNZ, any box, voxels of 1) of the problem file
 *     (workflows/cantilever/cantilever.yaml) on the GPU with the
 *     multigrid preconditioner: E = 1, nu = 0.3, p = 3 from the start,
 *     volume fraction 0.12, sensitivity filter R = 1.5 voxels, CG to rtol
 *     1e-5 (warm started). Prints seconds per design iteration, CG
 *     iterations per solve, the final compliance, the time per stage and
 *     the peak device memory in use. --smoothing-steps=N, --mg-cycle=C,
 *     --host-scalars=1 and the others of bench_solver_alternatives set
 *     alternatives to the defaults; `vcycle` takes them too. --by-turns=on
 *     runs the solver and the design by turns (vox_solver_options.by_turns).
 *
 *   bench_cuda mma N M [ITERATIONS] [primal-dual|dual|both]
 *     The method of moving asymptotes' update alone (vox_mma_step and the
 *     KKT check before it) on N variables and M constraints, ITERATIONS
 *     (30) design iterations, with the subproblem solved by the given
 *     method (voxfe/mma.h; primal-dual, or both one after the other) of a
 *     separable problem like a compliance one:
 *     minimise sum_j c_j / x_j (c_j in [1, 2)) under M weighted volumes
 *     sum_j w_ij x_j / sum_j w_ij <= 0.3 (w_1j = 1, the others in [0.5,
 *     1.5)), x in [0.001, 1] from 0.3. Prints the milliseconds of the
 *     update per design iteration (the first two left out: their
 *     asymptotes are Svanberg's start), the objective, the largest
 *     constraint and the KKT residual, and a hash of the last design's
 *     bits (the same in two runs on one device). --dual-points=K has the
 *     dual method's passes take K step lengths of its halvings at once
 *     (the backend's choice otherwise: 1 on the GPU and on the
 *     CPU; the results are the same, the passes' count and cost not). The gradients are the
 *     host's, uploaded outside the clock.
 *
 * Times are wall-clock (CLOCK_MONOTONIC) around many repetitions after a
 * warm-up, with the backend's synchronize before reading the clock.
 * --device=cpu runs the same on the CPU backend (to try the program on a
 * machine without a GPU; the numbers then mean nothing); --fp16-levels=USE
 * is the backend's option (auto, on, off). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_ops.h"
#include "bench_common.h"
#include "memory_sampler.h"
#include "fem.h"
#include "memory_plan.h"
#include "mma_backend.h"
#include "multigrid.h"
#include "vcycle_parts.h"

static const double GiB = 1073741824.0;

static _Noreturn void usage(const char *prog) {
  fprintf(stderr,
          "usage: %s kernel NX NY NZ [REPS]\n"
          "       %s cantilever PROBLEM.yaml SIZE [ITERATIONS] [double|mixed] [auto|dbd|nbn|ebe|modes]\n"
          "       %s vcycle PROBLEM.yaml SIZE [double|mixed]\n"
          "       %s mma N M [ITERATIONS] [primal-dual|dual|both]\n"
          "settings: --device=cpu|cuda --fp16-levels=auto|on|off --stencil-kernel=auto|row|warp\n"
          "  --smoothing-steps=N --fine-smoothing-steps=N --mg-cycle=v|w --mg-levels=N --mg-coarse-dofs=N\n"
          "  --start-history=N --mg-bound-refresh=N --host-scalars=1 --dual-points=K\n",
          prog, prog, prog, prog);
  exit(2);
}

static _Noreturn void die(vox_context *ctx, const char *what) {
  fprintf(stderr, "bench_cuda: %s: %s\n", what, vox_context_message(ctx));
  exit(1);
}

static double uniform(uint64_t *state) {
  *state = *state * 6364136223846793005u + 1442695040888963407u;
  return (double)(*state >> 11) / 9007199254740992.0;
}

static vox_backend *cuda_backend(vox_context *ctx) {
  vox_backend *be;
  vox_backend_options options;
  vox_backend_options_default(&options);
  options.device = VOX_DEVICE_CUDA; /* --device=cpu: try this program without a GPU */
  const char *device = bench_option("device"), *fp16 = bench_option("fp16-levels");
  if (device && vox_device_parse(device, &options.device) != 0) usage("bench_cuda");
  if (fp16 && vox_fp16_levels_parse(fp16, &options.fp16_levels) != 0) usage("bench_cuda");
  const char *stencil = bench_option("stencil-kernel");
  if (stencil && vox_stencil_kernel_parse(stencil, &options.stencil_kernel) != 0)
    usage("bench_cuda");
  if (vox_backend_create_with(ctx, &options, &be)) die(ctx, "backend");
  size_t free_bytes, total;
  if (be->ops->memory(be, &free_bytes, &total)) die(ctx, "device memory");
  printf("device: %s backend, %.2f GiB of %.2f GiB free\n", vox_backend_name(be),
         (double)free_bytes / GiB, (double)total / GiB);
  return be;
}

/* max |a - b| / max |b|; non-finite values make it infinite. */
static double rel_diff(const double *a, const double *b, size_t n) {
  double num = 0, den = 0;
  for (size_t i = 0; i < n; i++) {
    const double d = fabs(a[i] - b[i]);
    if (!isfinite(d)) return INFINITY;
    num = fmax(num, d);
    den = fmax(den, fabs(b[i]));
  }
  return den > 0 ? num / den : num;
}

/* ---- kernel ------------------------------------------------------------------- */

/* Copy bandwidth of the device (read + write bytes per second) from
 * vec->copy of a pair of 512 MiB vectors; 0 when they do not fit. */
static double copy_bandwidth(vox_context *ctx, vox_backend *be) {
  const size_t n = 64u << 20;
  const int reps = 20;
  vox_vec a = {0}, b = {0};
  double best = INFINITY;
  if (be->ops->vec->create(be, n, VOX_DOUBLE, &a) || be->ops->vec->create(be, n, VOX_DOUBLE, &b)) {
    printf("copy bandwidth: not measured: %s\n", vox_context_message(ctx));
    goto done;
  }
  if (be->ops->vec->set(be, &a, 1.5) || be->ops->vec->copy(be, &b, &a) ||
      be->ops->vec->copy(be, &a, &b) || be->ops->synchronize(be)) /* warm-up */
    die(ctx, "copy bandwidth");
  for (int trial = 0; trial < 3; trial++) {
    const double t = bench_now();
    for (int r = 0; r < reps; r++)
      if (be->ops->vec->copy(be, &b, &a)) die(ctx, "vec_copy");
    if (be->ops->synchronize(be)) die(ctx, "synchronize");
    best = fmin(best, (bench_now() - t) / reps);
  }
done:
  if (a.data) be->ops->vec->destroy(be, &a);
  if (b.data) be->ops->vec->destroy(be, &b);
  if (!isfinite(best)) return 0;
  const double bw = 2.0 * (double)n * sizeof(double) / best;
  printf("copy bandwidth: %.0f GB/s (vec_copy of %.0f MiB, read + write, best of 3 x %d)\n",
         bw * 1e-9, (double)n * sizeof(double) / 1048576.0, reps);
  return bw;
}

static int kernel_mode(int argc, char **argv) {
  if (argc < 5) usage(argv[0]);
  const long long nx = atoll(argv[2]), ny = atoll(argv[3]), nz = atoll(argv[4]);
  const int reps_arg = argc > 5 ? atoi(argv[5]) : 0;
  if (nx < 1 || ny < 1 || nz < 1) usage(argv[0]);
  vox_context *ctx;
  vox_context_create(&ctx);
  vox_backend *be = cuda_backend(ctx), *cpu;
  if (vox_backend_create(ctx, VOX_DEVICE_CPU, &cpu)) die(ctx, "CPU backend");
  const double bw_copy = copy_bandwidth(ctx, be);

  const vox_grid grid = {.nx = nx, .ny = ny, .nz = nz, .voxel_size = {1, 1, 1}};
  const size_t ne = (size_t)vox_grid_elements(&grid), nd = 3 * (size_t)vox_grid_nodes(&grid);
  /* minimal traffic of y = K u: read u, the moduli and the fixed flags, write y */
  const double bytes = (double)nd * (8 + 8 + 1) + (double)ne * 8;
  const double flops = (double)ne * 2 * 576; /* the dense 24x24 element product */
  printf("K u: grid %lldx%lldx%lld, %zu elements, %zu dofs, elasticity; minimal bytes %.1f MB "
         "(u 8 B/dof, y 8 B/dof, fixed 1 B/dof, moduli 8 B/element), %.2f GFLOP "
         "(2*576 per element)\n",
         nx, ny, nz, ne, nd, bytes * 1e-6, flops * 1e-9);

  double ke[24 * 24];
  const double h[3] = {1, 1, 1};
  vox_hex8_elasticity(1.0, 0.3, h, ke);
  uint8_t *fixed = calloc(nd, 1);
  double *host = malloc((nd > ne ? nd : ne) * sizeof *host), *y_first = malloc(nd * sizeof *y_first),
         *y_cpu = malloc(nd * sizeof *y_cpu), *y = malloc(nd * sizeof *y);
  if (!fixed || !host || !y_first || !y_cpu || !y) {
    fprintf(stderr, "bench_cuda: out of host memory\n");
    return 1;
  }
  for (int64_t k = 0; k <= grid.nz; k++) /* clamp the x- face */
    for (int64_t j = 0; j <= grid.ny; j++)
      for (int c = 0; c < 3; c++) fixed[3 * (size_t)((k * (ny + 1) + j) * (nx + 1)) + (size_t)c] = 1;
  const vox_operator_desc desc = {.grid = grid, .dofs_per_node = 3, .ke = ke, .dof_fixed = fixed};
  vox_vec moduli, u, yv;
  if (be->ops->vec->create(be, ne, VOX_DOUBLE, &moduli) || be->ops->vec->create(be, nd, VOX_DOUBLE, &u) ||
      be->ops->vec->create(be, nd, VOX_DOUBLE, &yv))
    die(ctx, "vectors");
  uint64_t seed = 1;
  for (size_t e = 0; e < ne; e++) /* SIMP-like: a fifth void, the rest graded */
    host[e] = uniform(&seed) < 0.2 ? 1e-9 : 0.05 + 0.95 * uniform(&seed);
  if (be->ops->vec->upload(be, &moduli, host)) die(ctx, "upload");

  /* the reference: one product on the CPU backend */
  {
    vox_vec cm, cu, cy;
    vox_operator *cop;
    if (cpu->ops->vec->create(cpu, ne, VOX_DOUBLE, &cm) || cpu->ops->vec->create(cpu, nd, VOX_DOUBLE, &cu) ||
        cpu->ops->vec->create(cpu, nd, VOX_DOUBLE, &cy) || cpu->ops->op->create(cpu, &desc, &cop))
      die(ctx, "CPU operator");
    cpu->ops->vec->upload(cpu, &cm, host);
    for (size_t i = 0; i < nd; i++) host[i] = uniform(&seed) - 0.5;
    cpu->ops->vec->upload(cpu, &cu, host);
    if (be->ops->vec->upload(be, &u, host)) die(ctx, "upload");
    cpu->ops->op->set_moduli(cpu, cop, &cm);
    const double t = bench_now();
    if (cpu->ops->op->apply(cpu, cop, &cu, &cy, 0)) die(ctx, "CPU K u");
    printf("CPU reference K u: %.3f s\n", bench_now() - t);
    cpu->ops->vec->download(cpu, &cy, y_cpu);
    cpu->ops->op->destroy(cpu, cop);
    cpu->ops->vec->destroy(cpu, &cm), cpu->ops->vec->destroy(cpu, &cu),
        cpu->ops->vec->destroy(cpu, &cy);
  }

  printf("%-9s %10s %7s %10s %8s %10s  %-14s %-14s\n", "K u", "ms", "reps", "GB/s", "of copy",
         "GFLOP/s", "vs first", "vs cpu");
  const vox_kernel variants[] = {VOX_KERNEL_DBD, VOX_KERNEL_NBN, VOX_KERNEL_EBE, VOX_KERNEL_MODES,
                                 VOX_KERNEL_AUTO};
  int have_first = 0, failed = 0;
  for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++) {
    const char *name = vox_kernel_name(variants[v]);
    vox_backend_set_kernel(be, variants[v]);
    vox_operator *op;
    if (be->ops->op->create(be, &desc, &op)) {
      printf("%-5s op_create failed: %s\n", name, vox_context_message(ctx));
      failed = 1;
      continue;
    }
    vox_status s = be->ops->op->set_moduli(be, op, &moduli);
    /* each variant in double, then with single-precision arithmetic (what
     * the mixed-precision smoother asks for; ebe stays double) */
    for (int single = 0; single < 2 && !s; single++) {
      const int flags = single ? VOX_APPLY_SINGLE : 0;
      const double tol = single ? 1e-5 : 1e-12;
      char label[16];
      snprintf(label, sizeof label, "%s%s", name, single ? "/f32" : "");
      if (!s) s = be->ops->vec->set(be, &yv, 12345.678);      /* an output not written shows */
      if (!s) s = be->ops->op->apply(be, op, &u, &yv, flags); /* warm-up */
      if (!s) s = be->ops->synchronize(be);
      int reps = reps_arg;
      if (!s && reps <= 0) { /* about one second */
        const double t = bench_now();
        s = be->ops->op->apply(be, op, &u, &yv, flags);
        if (!s) s = be->ops->synchronize(be);
        const double once = bench_now() - t;
        reps = once > 0.1 ? 10 : once * 10000 < 1 ? 10000 : (int)(1.0 / once);
        if (reps < 10) reps = 10;
      }
      double t_one = 0;
      if (!s) {
        const double t = bench_now();
        for (int r = 0; r < reps && !s; r++) s = be->ops->op->apply(be, op, &u, &yv, flags);
        if (!s) s = be->ops->synchronize(be);
        t_one = (bench_now() - t) / reps;
      }
      if (!s) s = be->ops->vec->download(be, &yv, y);
      if (s) break;
      if (!have_first) memcpy(y_first, y, nd * sizeof *y), have_first = 1;
      const double d_first = rel_diff(y, y_first, nd), d_cpu = rel_diff(y, y_cpu, nd);
      printf("%-9s %10.4f %7d %10.1f %7.1f%% %10.1f  %-14.2e %-14.2e%s\n", label, t_one * 1e3,
             reps, bytes / t_one * 1e-9, bw_copy > 0 ? 100 * bytes / t_one / bw_copy : NAN,
             flops / t_one * 1e-9, d_first, d_cpu, d_cpu > tol ? "  <- DIFFERS" : "");
      if (d_cpu > tol) failed = 1;
    }
    if (s) {
      printf("%-5s failed: %s\n", name, vox_context_message(ctx));
      failed = 1;
    }
    be->ops->op->destroy(be, op);
  }
  printf("(vs first / vs cpu: max |y - y_ref| / max |y_ref|)\n");
  be->ops->vec->destroy(be, &moduli), be->ops->vec->destroy(be, &u), be->ops->vec->destroy(be, &yv);
  free(fixed), free(host), free(y_first), free(y_cpu), free(y);
  vox_backend_destroy(be), vox_backend_destroy(cpu);
  vox_context_destroy(ctx);
  return failed;
}

/* The defaults' alternatives, from the settings on the command line:
 *   --smoothing-steps=N       the Chebyshev degree;
 *   --fine-smoothing-steps=N  the same on the fine level (0: as the others);
 *   --mg-cycle=v|w            the multigrid cycle;
 *   --mg-levels=N             the number of multigrid levels (0: from the grid);
 *   --start-history=N         earlier solutions in each solve's start (start_history);
 *   --mg-bound-refresh=N      coarse smoother bounds estimated every N-th setup;
 *   --host-scalars=1          CG's and the coarse Lanczos steps' scalars on the host
 *                             (the backend's cg_* and stencil_lanczos left out). */
/* ---- cantilever ------------------------------------------------------------------ */

typedef struct watch {
  bench_sampler memory; /* the device's free memory, read every millisecond: a run by turns
                           peaks within a design iteration */
  double first_seconds;
  int n_cases;
} watch;

static int on_progress(const vox_progress *p, void *user) {
  watch *w = user;
  bench_sampler_note(&w->memory);
  if (p->iteration == 1) w->first_seconds = p->seconds;
  printf("  it %3d  compliance %-12.6g vol %.4f  change %.4f  CG %4d (%.1f per solve)  %.3f s\n",
         p->iteration, p->objective, p->volume_fraction, p->change, p->cg_iterations,
         (double)p->cg_iterations / w->n_cases, p->seconds);
  return 0;
}

static int cantilever_mode(int argc, char **argv) {
  if (argc < 4) usage(argv[0]);
  const int nx = atoi(argv[3]), iterations = argc > 4 ? atoi(argv[4]) : 20;
  vox_precision precision = VOX_PRECISION_DOUBLE;
  vox_kernel kernel = VOX_KERNEL_AUTO;
  if (nx < 2 || iterations < 1) usage(argv[0]);
  if (argc > 5 && vox_precision_parse(argv[5], &precision) != 0) usage(argv[0]);
  if (argc > 6 && vox_kernel_parse(argv[6], &kernel) != 0) usage(argv[0]);
  vox_context *ctx;
  vox_context_create(&ctx);
  vox_model model;
  const char *what;
  if (bench_cantilever_model(ctx, argv[2], argv[3], &model, &what)) die(ctx, what);
  vox_backend *be = cuda_backend(ctx);
  vox_backend_set_kernel(be, kernel);

  vox_optimizer_options opt;
  vox_optimizer_options_default(&opt);
  opt.volume_fraction = 0.12;
  opt.penalty = 3;
  opt.continuation = 0; /* every solve as hard as in the later iterations of a real run */
  opt.filter = VOX_FILTER_SENSITIVITY;
  opt.filter_radius = 1.5;
  opt.max_iterations = iterations;
  opt.change_tolerance = 0;
  opt.objective_tolerance = 0;
  opt.solver.rtol = 1e-5;
  opt.solver.preconditioner = VOX_PC_MULTIGRID;
  opt.solver.precision = precision;
  bench_solver_alternatives(be, &opt.solver);

  const vox_grid *g = &model.grid;
  const int n_cases = model.n_load_cases > 0 ? model.n_load_cases : 1;
  printf("cantilever %lldx%lldx%lld: %lld elements, %lld dofs, %d load case(s); multigrid "
         "(%d levels, %s-cycle, Chebyshev degree %d, fine level %d), %s precision, K u kernel "
         "%s%s\n",
         (long long)g->nx, (long long)g->ny, (long long)g->nz, (long long)vox_grid_elements(g),
         3 * (long long)vox_grid_nodes(g), n_cases,
         vox_mg_levels_for(g, 3, opt.solver.mg_levels, vox_mg_coarse_dofs(be, &opt.solver)),
         vox_mg_cycle_name(opt.solver.mg_cycle), opt.solver.smoothing_steps,
         opt.solver.fine_smoothing_steps > 0 ? opt.solver.fine_smoothing_steps
                                             : opt.solver.smoothing_steps,
         vox_precision_name(precision), vox_kernel_name(kernel),
         be->ops->vec->cg_step ? "" : ", CG scalars on the host");
  printf("volume fraction %g, p = %g, sensitivity filter R = %g, CG rtol %g, %d design "
         "iterations\n",
         opt.volume_fraction, opt.penalty, opt.filter_radius, opt.solver.rtol, iterations);
  size_t free0, total;
  if (be->ops->memory(be, &free0, &total)) die(ctx, "device memory");
  const char *turns = bench_option("by-turns");
  if (turns && vox_by_turns_parse(turns, &opt.solver.by_turns) != 0) usage(argv[0]);
  vox_solver_options solving;
  vox_memory_optimizer_solver(&model, &opt, &solving);
  if (solving.by_turns == VOX_BY_TURNS_AUTO) solving.by_turns = VOX_BY_TURNS_OFF;
  const size_t planned = vox_memory_needed(be, g, 3, n_cases, 0, &solving,
                                           vox_memory_optimizer_vectors(&model, &opt));

  watch w = {.n_cases = n_cases};
  bench_sampler_start(&w.memory, be, free0, 1);
  vox_context_set_progress(ctx, on_progress, &w);
  vox_optimize_result r;
  const double t = bench_now();
  const vox_status optimized = vox_optimize(ctx, be, &model, &opt, &r);
  bench_sampler_stop(&w.memory);
  if (optimized) die(ctx, "optimize");
  const double elapsed = bench_now() - t;
  size_t free1;
  if (be->ops->memory(be, &free1, &total)) die(ctx, "device memory");
  size_t least = atomic_load(&w.memory.least);
  if (free1 < least) least = free1;

  const double solves = (double)(r.iterations + 1) * n_cases;
  const double loop = r.seconds_solve + r.seconds_sensitivity + r.seconds_filter + r.seconds_update;
  printf("%s multigrid (%s, kernel %s): %d design iterations: %.3f s per iteration "
         "(%.3f s without the first, which took %.3f s), %.1f CG iterations per solve (rtol %g), "
         "final compliance %.6g (%s)\n",
         vox_backend_name(be), vox_precision_name(precision), vox_kernel_name(kernel),
         r.iterations, loop / r.iterations,
         r.iterations > 1 ? (loop - w.first_seconds) / (r.iterations - 1) : NAN, w.first_seconds,
         r.total_cg_iterations / solves, opt.solver.rtol, r.objective,
         vox_stop_reason_string(r.reason));
  if (r.reason == VOX_STOP_SOLVER_FAILED)
    printf("  the failing solve: %s after %d CG iterations, residual %.3g of %.3g\n",
           vox_convergence_string(r.last_solve.reason), r.last_solve.iterations,
           r.last_solve.residual_norm, r.last_solve.rhs_norm);
  printf("  total %.2f s (with setup and the final state solve); time per stage over the "
         "iterations: solve %.3f s, sensitivity %.3f s, filter %.3f s, OC update %.3f s\n",
         elapsed, r.seconds_solve, r.seconds_sensitivity, r.seconds_filter, r.seconds_update);
  if (r.by_turns) printf("  the solver and the design by turns (--by-turns)\n");
  printf("  device memory: %.3f GiB in use before the run, peak %.3f GiB (sampled every "
         "millisecond), i.e. %.3f GiB for the run; the memory plan predicted %.3f GiB; "
         "total %.2f GiB\n",
         (double)(total - free0) / GiB, (double)(total - least) / GiB,
         (double)(free0 - least) / GiB, (double)planned / GiB, (double)total / GiB);
  vox_context_set_progress(ctx, NULL, NULL);
  vox_backend_destroy(be);
  vox_model_free(&model);
  vox_context_destroy(ctx);
  return r.reason == VOX_STOP_SOLVER_FAILED;
}

/* Where the time of a V-cycle goes (vcycle_parts.h). */
static int vcycle_mode(int argc, char **argv) {
  if (argc < 4) usage(argv[0]);
  vox_solver_options so;
  vox_solver_options_default(&so);
  so.precision = VOX_PRECISION_DOUBLE;
  if (argc > 4 && vox_precision_parse(argv[4], &so.precision) != 0) usage(argv[0]);
  vox_context *ctx;
  vox_context_create(&ctx);
  vox_model model;
  const char *what;
  if (bench_cantilever_model(ctx, argv[2], argv[3], &model, &what)) die(ctx, what);
  vox_backend *be = cuda_backend(ctx);
  bench_solver_alternatives(be, &so);
  what = bench_vcycle_parts(ctx, be, &model, &so, 1);
  if (what) die(ctx, what);
  vox_backend_destroy(be);
  vox_model_free(&model);
  vox_context_destroy(ctx);
  return 0;
}

/* The MMA update alone on the separable problem of the header, its
 * subproblems solved by `method`. */
static void mma_run(vox_context *ctx, vox_backend *be, size_t n, int m, int iterations,
                    vox_mma_subproblem method) {
  vox_mma_options o;
  vox_mma_options_default(&o);
  o.subproblem = method;
  vox_mma *mma;
  if (vox_mma_create_on(be, n, m, &o, &mma)) die(ctx, "MMA");
  double *c = malloc(n * sizeof *c), *w = malloc((size_t)m * n * sizeof *w);
  double *x = malloc(n * sizeof *x), *lo = malloc(n * sizeof *lo), *hi = malloc(n * sizeof *hi);
  double *df0 = malloc(n * sizeof *df0), *dg = malloc((size_t)m * n * sizeof *dg);
  double *wsum = calloc((size_t)m, sizeof *wsum), *g = malloc((size_t)m * sizeof *g);
  if (!c || !w || !x || !lo || !hi || !df0 || !dg || !wsum || !g) {
    fprintf(stderr, "bench_cuda: out of memory\n");
    exit(1);
  }
  uint64_t state = 12345;
  for (size_t j = 0; j < n; j++) {
    c[j] = 1 + uniform(&state), x[j] = 0.3, lo[j] = 0.001, hi[j] = 1;
    for (int i = 0; i < m; i++) {
      w[(size_t)i * n + j] = i == 0 ? 1 : 0.5 + uniform(&state);
      wsum[i] += w[(size_t)i * n + j];
    }
  }
  const vox_vector_ops *vec = be->ops->vec;
  vox_mma_vectors *v = vox_mma_vectors_of(mma);
  double seconds = 0, f0 = 0, worst = 0, kkt = 0;
  int timed = 0;
  printf("MMA update: %zu variables, %d constraints, %d iterations, the %s method for the "
         "subproblem\n", n, m, iterations, vox_mma_subproblem_name(method));
  for (int it = 0; it < iterations; it++) {
    f0 = 0;
    for (int i = 0; i < m; i++) g[i] = -0.3;
    for (size_t j = 0; j < n; j++) {
      f0 += c[j] / x[j];
      df0[j] = -c[j] / (x[j] * x[j]);
      for (int i = 0; i < m; i++) {
        g[i] += w[(size_t)i * n + j] * x[j] / wsum[i];
        dg[(size_t)i * n + j] = w[(size_t)i * n + j] / wsum[i];
      }
    }
    /* the objective scaled to about 1, as the optimizer does */
    const double scale = 1 / f0;
    for (size_t j = 0; j < n; j++) df0[j] *= scale;
    worst = g[0];
    for (int i = 1; i < m; i++) worst = fmax(worst, g[i]);
    if (vec->upload(be, &v->xval, x) || vec->upload(be, &v->xmin, lo) ||
        vec->upload(be, &v->xmax, hi) || vec->upload(be, &v->df0dx, df0) ||
        vec->upload(be, &v->dfdx, dg) || be->ops->synchronize(be))
      die(ctx, "upload");
    const double t0 = bench_now();
    double norm;
    if (it > 0 && vox_mma_kkt_at(mma, g, &norm, &kkt)) die(ctx, "KKT");
    if (vox_mma_step(mma, g)) die(ctx, "MMA step");
    if (be->ops->synchronize(be)) die(ctx, "synchronize");
    const double t = bench_now() - t0;
    if (it >= 2) seconds += t, timed++;
    if (vec->download(be, &v->x, x)) die(ctx, "download");
    printf("  it %3d  objective %.9g  constraint %+.3e  KKT %.3e  %.3f ms\n", it, f0,
           worst, kkt, 1e3 * t);
  }
  /* the last design's bits: two runs on one device repeat them */
  uint64_t hash = 1469598103934665603u;
  for (size_t j = 0; j < n; j++) {
    uint64_t bits;
    memcpy(&bits, &x[j], sizeof bits);
    hash = (hash ^ bits) * 1099511628211u;
  }
  printf("MMA update (%s): %.3f ms per design iteration (%d timed), last design's hash "
         "%016llx\n", vox_mma_subproblem_name(method),
         1e3 * seconds / timed, timed, (unsigned long long)hash);
  free(c), free(w), free(x), free(lo), free(hi), free(df0), free(dg), free(wsum), free(g);
  vox_mma_destroy(mma);
}

static int mma_mode(int argc, char **argv) {
  if (argc < 4) usage(argv[0]);
  const long long n_arg = atoll(argv[2]);
  const int m = atoi(argv[3]), iterations = argc > 4 ? atoi(argv[4]) : 30;
  const char *method = argc > 5 ? argv[5] : "primal-dual";
  vox_mma_subproblem one = VOX_MMA_PRIMAL_DUAL;
  const int both = strcmp(method, "both") == 0;
  if (n_arg < 1 || m < 1 || m > 16 || iterations < 3 ||
      (!both && vox_mma_subproblem_parse(method, &one) != 0))
    usage(argv[0]);
  vox_context *ctx;
  vox_context_create(&ctx);
  vox_backend *be = cuda_backend(ctx);
  /* --dual-points: the backend's table with the sums of K points a pass */
  static vox_mma_ops mma_ops;
  static vox_backend_ops backend_ops;
  const char *points = bench_option("dual-points");
  if (points) {
    const int k = atoi(points), S = m + m * (m + 1) / 2;
    if (k < 1 || k > 8) usage(argv[0]);
    mma_ops = *be->ops->mma, backend_ops = *be->ops;
    mma_ops.dual_slots = k * S;
    backend_ops.mma = &mma_ops;
    be->ops = &backend_ops;
    printf("the dual method's passes take %d step lengths at once\n", k);
  }
  mma_run(ctx, be, (size_t)n_arg, m, iterations, both ? VOX_MMA_PRIMAL_DUAL : one);
  if (both) mma_run(ctx, be, (size_t)n_arg, m, iterations, VOX_MMA_DUAL);
  vox_backend_destroy(be);
  vox_context_destroy(ctx);
  return 0;
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  static const char *const settings[] = {
      "device",         "fp16-levels",   "smoothing-steps",  "fine-smoothing-steps", "mg-cycle",
      "mg-levels",      "mg-coarse-dofs", "start-history",   "mg-bound-refresh",     "host-scalars",
      "dual-points",    "by-turns",      "stencil-kernel",   NULL};
  bench_options_take(&argc, argv, settings);
  if (argc < 2) usage(argv[0]);
  if (strcmp(argv[1], "kernel") == 0) return kernel_mode(argc, argv);
  if (strcmp(argv[1], "cantilever") == 0) return cantilever_mode(argc, argv);
  if (strcmp(argv[1], "vcycle") == 0) return vcycle_mode(argc, argv);
  if (strcmp(argv[1], "mma") == 0) return mma_mode(argc, argv);
  usage(argv[0]);
}
