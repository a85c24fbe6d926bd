/* SPDX-License-Identifier: BSD-3-Clause */
/* Benchmark of inverse homogenization (Zhang et al. 2023 table 2): bulk-modulus
 * maximisation of a periodic N^3 cell, E = 1, nu = 0.3, at a volume
 * fraction V, p = 3 from the start, sensitivity filter of 2 voxels, move
 * limit 0.05, damping 0.5 (Zhang et al. 2023 section 6), for ITERATIONS iterations:
 *
 *   bench_cell N DEVICE VOLUME_FRACTION ITERATIONS [PRECISION]
 *
 * PRECISION: mixed (the default) or double, of the multigrid preconditioner.
 * Settings (--NAME=VALUE anywhere on the command line): --rtol=T sets CG's
 * relative tolerance (default VOX_CELL_RTOL, 1e-2, as voxfe-optimize takes
 * for a cell); --start=zhang2023 starts from Zhang et al. 2023's trigonometric family
 * with reflect6 symmetry instead of the cosine field (cell_problem.h), and
 * --seed=S picks another member of that family (default 1);
 * --filter=density filters the density instead of the sensitivities (seed
 * 003 section 5.2 filters the density); --fp16-check=1 adds the FP16 check
 * of the final design (cell_fp16.c); --mg-cycle=v|w and --mg-levels=N set
 * the multigrid's cycle and level count; --cell-solver=USE is
 * voxfe-optimize's --cell-solver (auto, off, on, phased; unset: auto);
 * --fp16-levels=USE the backend's option (auto, on, off); --kernel=K its K u kernel;
 * --all-strains=1 gives the optimizer the bulk modulus as a C function,
 * which does not say which entries of C^H it reads, so that it solves all
 * six unit strains every design iteration, as before the reduced sets
 * (the same iterates: the baseline of the three normal ones). The
 * optimizer's settings, to compare with Zhang et al. 2023's: --move-limit=M,
 * --filter-radius=R (in voxels), --penalty=P and --q-max=Q (the final
 * exponents; with --continuation=1 reached by the continuation of eq. 11
 * and 12 instead of at once). --stop=zhang2023 stops as Zhang et al. 2023 section 6
 * does, when the objective's relative change stays under 5e-4 in three
 * design iterations in a row (otherwise every iteration runs).
 * The start is the smooth periodic field rho = V + (V/2)(cos 2 pi x +
 * cos 2 pi y + cos 2 pi z) clamped to [0.001, 1] (a uniform start is a
 * stationary point of the problem; Zhang et al. 2023's own starts are its
 * trigonometric family, section 6.2). Prints the grid, seconds per
 * iteration (total over iterations; and without the first, which pays the
 * setup), CG iterations, the final C^H's bulk and shear moduli and the
 * volume fraction; per iteration the objective (-B), CG iterations and
 * seconds. On a device backend also the peak device memory in use (the
 * least free memory seen by a thread that reads it every millisecond, against
 * the free memory before the run: a phased run's solves and updates peak
 * between the iterations' reports) and what the memory plan predicted; before the run the
 * plan item by item. Last, the final
 * design's bulk modulus solved to 1e-10, grey, binarized at 0.5 and
 * binarized at the threshold that keeps the volume fraction V (Zhang et al. 2023
 * table 2 reports its objectives after binarization; --binary=0 skips these
 * three solves, --binary=volume keeps only the last). */
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_common.h"
#include "memory_sampler.h"
#include "cell_fp16.h"
#include "cell_problem.h"
#include "homogenize.h"
#include "memory_plan.h"
#include "voxfe/voxfe.h"

typedef struct watch {
  bench_sampler memory; /* the device's free memory, read every millisecond */
  double first_seconds, seconds;
} watch;

static int on_progress(const vox_progress *p, void *user) {
  watch *w = user;
  if (p->iteration == 1) w->first_seconds = p->seconds;
  w->seconds += p->seconds;
  /* the run's peak in this iteration, on a device (the sampler's) */
  const size_t recent = bench_sampler_take(&w->memory), free0 = w->memory.free0;
  char peak[48] = "";
  if (recent < free0) snprintf(peak, sizeof peak, "  peak %.3f GB", (free0 - recent) / 1e9);
  printf("  it %3d  objective %.6f  vol %.4f  change %.4f  CG %4d (%.1f per field)  %.3f s%s\n",
         p->iteration, p->objective, p->volume_fraction, p->change, p->cg_iterations,
         p->cg_iterations / (p->solves > 0 ? p->solves : 6.0), p->seconds, peak);
  fflush(stdout);
  return 0;
}

/* The bulk modulus of Zhang et al. 2023 eq. 19 (negated) as the built-in objective
 * computes it, as an opaque function: all six strains solved. */
static int bulk_all_strains(void *self, const double c[36], int iteration, double *f,
                            double g[36]) {
  (void)self, (void)iteration;
  *f = -(c[0] + c[7] + c[14] + 2 * (c[1] + c[2] + c[8])) / 9;
  for (int i = 0; i < 36; i++) g[i] = i / 6 < 3 && i % 6 < 3 ? -1.0 / 9 : 0;
  return 0;
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char **argv) {
  static const char *const settings[] = {
      "start",   "seed",   "rtol",     "filter",    "move-limit",  "filter-radius",
      "penalty", "q-max",  "continuation", "stop",  "mg-cycle",    "mg-levels",
      "cell-solver", "all-strains", "binary", "fp16-check", "fp16-levels", "kernel", NULL};
  bench_options_take(&argc, argv, settings);
  if (argc != 5 && argc != 6) {
    fprintf(stderr,
            "usage: %s N DEVICE VOLUME_FRACTION ITERATIONS [mixed|double] [--NAME=VALUE...]\n",
            argv[0]);
    return 2;
  }
  vox_precision precision = VOX_PRECISION_MIXED;
  if (argc == 6 && vox_precision_parse(argv[5], &precision) != 0) {
    fprintf(stderr, "%s: PRECISION mixed or double\n", argv[0]);
    return 2;
  }
  const int n = atoi(argv[1]);
  const double v = atof(argv[3]);
  vox_context *ctx;
  vox_backend *be;
  vox_backend_options backend;
  vox_backend_options_default(&backend);
  if (vox_context_create(&ctx)) return 1;
  if (n < 4 || n % 4 || vox_device_parse(argv[2], &backend.device) != 0) {
    fprintf(stderr, "%s: N a multiple of 4, DEVICE cpu, cuda or auto\n", argv[0]);
    return 2;
  }
  const char *fp16_levels = bench_option("fp16-levels");
  if (fp16_levels && vox_fp16_levels_parse(fp16_levels, &backend.fp16_levels) != 0) {
    fprintf(stderr, "%s: --fp16-levels auto, on or off\n", argv[0]);
    return 2;
  }
  /* --start=zhang2023: Zhang et al. 2023's start and symmetry (cell_problem.h) */
  const char *kernel = bench_option("kernel");
  if (kernel && vox_kernel_parse(kernel, &backend.kernel) != 0) {
    fprintf(stderr, "%s: --kernel auto, dbd, nbn, ebe or modes\n", argv[0]);
    return 2;
  }
  const char *start = bench_option("start");
  cell_problem problem;
  if (cell_problem_make(ctx, n, v, start ? start : "cosine", &problem) != 0) return 2;
  /* --seed: another trigonometric start of Zhang et al. 2023's family (default 1) */
  const char *seed = bench_option("seed");
  if (seed && problem.zhang2023) problem.initial.seed = strtoul(seed, NULL, 10);
  if (vox_backend_create_with(ctx, &backend, &be)) {
    fprintf(stderr, "%s: %s\n", argv[0], vox_context_message(ctx));
    return 1;
  }
  vox_model *m = &problem.model;
  const vox_grid g = m->grid;
  const size_t ne = (size_t)n * n * n;
  vox_optimizer_options opt = problem.opt;
  opt.max_iterations = atoi(argv[4]);
  opt.solver.precision = precision;
  opt.solver.rtol = VOX_CELL_RTOL; /* voxfe-optimize's for a cell */
  const char *rtol = bench_option("rtol"); /* CG's tolerance */
  if (rtol && atof(rtol) > 0) opt.solver.rtol = atof(rtol);
  const char *filter = bench_option("filter"); /* sensitivity (default) or density */
  if (filter && vox_filter_parse(filter, &opt.filter) != 0) {
    fprintf(stderr, "%s: --filter sensitivity or density\n", argv[0]);
    return 2;
  }
  const char *move = bench_option("move-limit"), *radius = bench_option("filter-radius");
  const char *penalty = bench_option("penalty"), *q_max = bench_option("q-max");
  const char *continuation = bench_option("continuation");
  if (move) opt.move_limit = atof(move);
  if (radius) opt.filter_radius = atof(radius) / n;
  if (penalty) opt.penalty = atof(penalty);
  if (q_max) opt.q_max = atof(q_max);
  if (continuation) opt.continuation = atoi(continuation);
  const char *stop = bench_option("stop");
  if (stop && strcmp(stop, "zhang2023") == 0) {
    opt.change_tolerance = 1; /* the objective alone decides */
    opt.objective_tolerance = 5e-4;
    opt.settle_iterations = 3;
  }
  printf("move limit %g, filter radius %g voxels, p %g, q %g, continuation %s\n", opt.move_limit,
         opt.filter_radius * n, opt.penalty, opt.q_max, opt.continuation ? "on" : "off");
  /* the multigrid's cycle (v or w) and level count, to compare with the defaults */
  const char *cycle = bench_option("mg-cycle"), *levels = bench_option("mg-levels");
  if (cycle && vox_mg_cycle_parse(cycle, &opt.solver.mg_cycle) != 0) {
    fprintf(stderr, "%s: --mg-cycle v or w\n", argv[0]);
    return 2;
  }
  if (levels) opt.solver.mg_levels = atoi(levels);
  /* auto is the W-cycle on a cell as on the rest of the full box (multigrid.c) */
  const vox_mg_cycle cycle_run =
      opt.solver.mg_cycle == VOX_MG_CYCLE_V ? VOX_MG_CYCLE_V : VOX_MG_CYCLE_W;
  printf("cell %d^3, %zu elements, %lld dofs, backend %s, %s precision, %s-cycle, %s filter\n",
         n, ne, (long long)vox_grid_nodes(&g) * 3, vox_backend_name(be),
         vox_precision_name(precision), vox_mg_cycle_name(cycle_run), vox_filter_name(opt.filter));
  size_t free0 = 0, total = 0;
  vox_backend_memory(be, &free0, &total);
  vox_grid cell = g;
  cell.periodic = 1;
  /* --cell-solver: voxfe-optimize's auto, off, on or phased (unset: auto) */
  const char *cell_solver = bench_option("cell-solver");
  if (cell_solver && vox_cell_solver_use_parse(cell_solver, &opt.solver.cell_solver) != 0) {
    fprintf(stderr, "%s: --cell-solver auto, off, on or phased\n", argv[0]);
    return 2;
  }
  const char *all_strains = bench_option("all-strains");
  if (all_strains && atoi(all_strains) > 0)
    opt.cell_objective = VOX_CELL_CUSTOM, opt.custom = bulk_all_strains;
  /* the strains the objective solves per iteration (the final evaluation solves all six) */
  const unsigned strains = vox_cell_objective_strains(&opt);
  char strain_names[32];
  printf("strains solved per design iteration: %s (the six unit strains at the final design)\n",
         vox_strains_text(strains, strain_names, sizeof strain_names));
  const int n_strains = vox_homog_strain_count(strains);
  /* the plan of the solver the run will take (auto resolved as vox_optimize does) */
  const int element_vectors = vox_memory_optimizer_vectors(m, &opt);
  vox_solver_options run_solver = opt.solver;
  run_solver.cell_solver =
      vox_cell_solver_resolve(be, &cell, n_strains, &run_solver, element_vectors);
  const size_t planned =
      vox_memory_needed(be, &cell, 3, n_strains, 0, &run_solver, element_vectors);
  /* what the memory plan counts, item by item, on this backend */
  vox_memory_plan plan;
  vox_memory_plan_items(be, &cell, 3, n_strains, 0, &run_solver, element_vectors, &plan);
  printf("memory plan on %s, %.3f GB:\n", vox_backend_name(be), plan.total / 1e9);
  for (int i = 0; i < plan.n; i++)
    printf("  %7.3f GB  %s\n", plan.item[i].bytes / 1e9, plan.item[i].what);
  watch w = {0};
  const int device = strcmp(vox_backend_name(be), "cpu") != 0;
  bench_sampler_start(&w.memory, be, free0, device);
  vox_context_set_progress(ctx, on_progress, &w);
  vox_optimize_result r;
  const double t0 = now();
  const vox_status status = vox_optimize(ctx, be, m, &opt, &r);
  const double t = now() - t0;
  bench_sampler_stop(&w.memory);
  const size_t least = atomic_load(&w.memory.least), final_least = atomic_load(&w.memory.recent);
  if (status != VOX_OK) {
    fprintf(stderr, "%s: %s\n", argv[0], vox_context_message(ctx));
    return 1;
  }
  printf("fields solved by %s (--cell-solver %s)\n",
         r.cell_solver ? "the single-precision cell solver" : "CG in double (fem.c)",
         vox_cell_solver_use_name(run_solver.cell_solver));
  printf("%d iterations (%s), %.3f s per iteration (%.3f s without the first, which took "
         "%.3f s; %.1f s in all with the final solves), %d CG iterations\n",
         r.iterations, vox_stop_reason_string(r.reason), w.seconds / r.iterations,
         r.iterations > 1 ? (w.seconds - w.first_seconds) / (r.iterations - 1) : NAN,
         w.first_seconds, t, r.total_cg_iterations);
  printf("time per stage over the iterations: solve %.3f s, sensitivity %.3f s, filter %.3f s, "
         "OC update %.3f s (CG rtol %g)\n",
         r.seconds_solve, r.seconds_sensitivity, r.seconds_filter, r.seconds_update,
         opt.solver.rtol);
  if (device && final_least < free0)
    printf("the final evaluation's peak: %.3f GB\n", (free0 - final_least) / 1e9);
  if (device)
    printf("device memory: peak %.3f GB in use of %.1f GB, %.3f GB of it for the run; the "
           "memory plan predicted %.3f GB\n",
           (double)(total - least) / 1e9, (double)total / 1e9, (double)(free0 - least) / 1e9,
           (double)planned / 1e9);
  printf("bulk modulus %.4f, shear modulus %.4f, volume fraction %.4f\n", r.moduli.bulk,
         r.moduli.shear, r.volume_fraction);
  /* Zhang et al. 2023 table 2's objective: the design binarized at 0.5 (and the grey
   * design's own, solved to 1e-10, against the run's) */
  vox_cell_moduli grey, binary;
  double binary_vf;
  const double tb = now();
  /* --binary=0 skips the binarized moduli, =volume keeps only the last
   * (Zhang et al. 2023's objective; at 512^3 each costs about a minute) */
  const char *binary_env = bench_option("binary");
  const int only_volume = binary_env && strcmp(binary_env, "volume") == 0;
  const int want_moduli = !binary_env || only_volume || atoi(binary_env) != 0;
  if (want_moduli && !only_volume &&
      (cell_grey_moduli(ctx, be, m, m->density, opt.penalty, opt.emin_ratio, &grey) != 0 ||
       cell_binary_moduli(ctx, be, m, m->density, opt.penalty, opt.emin_ratio, &binary,
                          &binary_vf) != 0)) {
    fprintf(stderr, "%s: %s\n", argv[0], vox_context_message(ctx));
    return 1;
  }
  if (want_moduli && !only_volume)
    printf("grey design to 1e-10: bulk modulus %.4f; binarized at 0.5: bulk modulus %.4f, "
           "shear modulus %.4f, volume fraction %.4f (%.1f s)\n",
           grey.bulk, binary.bulk, binary.shear, binary_vf, now() - tb);
  /* and at the threshold that keeps the target volume, Zhang et al. 2023's */
  vox_cell_moduli kept;
  double threshold, kept_vf;
  if (want_moduli && cell_binary_moduli_at_volume(ctx, be, m, m->density, v, opt.penalty,
                                                  opt.emin_ratio, &kept, &threshold,
                                                  &kept_vf) != 0) {
    fprintf(stderr, "%s: %s\n", argv[0], vox_context_message(ctx));
    return 1;
  }
  if (want_moduli)
    printf("binarized at %.4f, keeping the volume fraction: bulk modulus %.4f, shear modulus "
           "%.4f, volume fraction %.4f\n", threshold, kept.bulk, kept.shear, kept_vf);
  /* --fp16-check=1: what FP16 storage of the six fields would do to the
   * final design's moduli (cell_fp16.c) */
  const char *fp16 = bench_option("fp16-check");
  if (fp16 && atoi(fp16) > 0 && cell_fp16_check(ctx, be, m, opt.penalty, opt.emin_ratio))
    return 1;
  cell_problem_free(&problem);
  vox_backend_destroy(be);
  vox_context_destroy(ctx);
  return 0;
}
