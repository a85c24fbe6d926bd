/* SPDX-License-Identifier: BSD-3-Clause */
/* Benchmark of a whole optimization of a model file, with the time of each
 * stage (docs/benchmarks.md, Martinez-Frutos et al. 2017's heat sink):
 *
 *   bench_optimize MODEL.nc DEVICE VOLUME_FRACTION FILTER_RADIUS EMIN_RATIO Q_MAX ITERATIONS
 *                  [DAMPING MOVE_LIMIT CG_TOL [ADJOINT_GPU]]
 *
 * runs vox_optimize on the model (any physics, any objective) with the
 * defaults of voxfe-optimize and these settings (DEVICE: cpu, cuda or auto;
 * ADJOINT_GPU: auto, none or a device index, for mechanisms), and prints
 * the grid, the dofs, the total time and the time of each stage of Martinez-Frutos et al. 2017's
 * table 4 (solve, sensitivities, filter, OC update), the CG iterations, the
 * final objective and M_nd. The stage times are those vox_optimize measures,
 * with the backend synchronised before each clock reading. With
 * --design=FILE it also writes the design file (after the timing);
 * --fine-smoothing-steps=N sets the fine level's smoothing steps (0: as the
 * coarse levels'); --fp16-levels=USE is the backend's option (auto, on,
 * off); --mg-coarse-dofs=N the coarsest level's most unknowns (0: the
 * backend's). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_common.h"
#include "voxfe/io.h"
#include "voxfe/voxfe.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char **argv) {
  static const char *const settings[] = {
      "design",         "fine-smoothing-steps", "fp16-levels", "kernel",
      "stencil-kernel", "mg-coarse-dofs",       NULL};
  bench_options_take(&argc, argv, settings);
  if (argc != 8 && argc != 11 && argc != 12) {
    fprintf(stderr,
            "usage: %s MODEL.nc DEVICE VOLUME_FRACTION FILTER_RADIUS EMIN_RATIO Q_MAX "
            "ITERATIONS [DAMPING MOVE_LIMIT CG_TOL [ADJOINT_GPU]] [--design=FILE] "
            "[--fine-smoothing-steps=N] [--fp16-levels=auto|on|off] [--mg-coarse-dofs=N] "
            "[--kernel=auto|dbd|nbn|ebe|modes]\n",
            argv[0]);
    return 2;
  }
  vox_context *ctx;
  vox_backend *be;
  vox_backend_options backend;
  vox_backend_options_default(&backend);
  vox_model model;
  if (vox_context_create(&ctx)) return 1;
  if (vox_device_parse(argv[2], &backend.device) != 0) {
    fprintf(stderr, "%s: unknown device '%s'\n", argv[0], argv[2]);
    return 2;
  }
  const char *fp16 = bench_option("fp16-levels");
  if (fp16 && vox_fp16_levels_parse(fp16, &backend.fp16_levels) != 0) {
    fprintf(stderr, "%s: --fp16-levels: expected auto, on or off, got '%s'\n", argv[0], fp16);
    return 2;
  }
  const char *kernel = bench_option("kernel");
  if (kernel && vox_kernel_parse(kernel, &backend.kernel) != 0) {
    fprintf(stderr, "%s: --kernel: expected auto, dbd, nbn, ebe or modes, got '%s'\n", argv[0],
            kernel);
    return 2;
  }
  const char *stencil = bench_option("stencil-kernel");
  if (stencil && vox_stencil_kernel_parse(stencil, &backend.stencil_kernel) != 0) {
    fprintf(stderr, "%s: --stencil-kernel: expected auto, row or warp, got '%s'\n", argv[0],
            stencil);
    return 2;
  }
  if (vox_model_read(ctx, argv[1], &model) || vox_backend_create_with(ctx, &backend, &be)) {
    fprintf(stderr, "%s: %s\n", argv[0], vox_context_message(ctx));
    return 1;
  }
  vox_optimizer_options opt;
  vox_optimizer_options_default(&opt);
  opt.volume_fraction = atof(argv[3]);
  opt.filter_radius = atof(argv[4]);
  opt.emin_ratio = atof(argv[5]);
  opt.q_max = atof(argv[6]);
  opt.max_iterations = atoi(argv[7]);
  if (argc >= 11) {
    opt.damping = atof(argv[8]);
    opt.move_limit = atof(argv[9]);
    opt.solver.rtol = atof(argv[10]);
  }
  if (argc == 12)
    opt.adjoint_gpu = !strcmp(argv[11], "auto")   ? VOX_ADJOINT_GPU_AUTO
                      : !strcmp(argv[11], "none") ? VOX_ADJOINT_GPU_NONE
                                                  : atoi(argv[11]);
  /* the fine level's smoothing steps (0: as the coarse levels') */
  const char *fine_steps = bench_option("fine-smoothing-steps");
  if (fine_steps) opt.solver.fine_smoothing_steps = atoi(fine_steps);
  const char *coarse_dofs = bench_option("mg-coarse-dofs");
  if (coarse_dofs) opt.solver.mg_coarse_dofs = atoi(coarse_dofs);
  const vox_grid *g = &model.grid;
  printf("%s: %lldx%lldx%lld, %lld elements, %lld dofs (%s), backend %s\n", argv[1],
         (long long)g->nx, (long long)g->ny, (long long)g->nz, (long long)vox_grid_elements(g),
         (long long)vox_grid_nodes(g) * vox_physics_dofs_per_node(model.physics),
         vox_physics_name(model.physics), vox_backend_name(be));
  vox_optimize_result r;
  const double t0 = now();
  if (vox_optimize(ctx, be, &model, &opt, &r) != VOX_OK) {
    fprintf(stderr, "%s: %s\n", argv[0], vox_context_message(ctx));
    return 1;
  }
  const double total = now() - t0;
  printf("%d iterations (%s), %d CG iterations: total %.2f s (with setup and the final "
         "state); solve %.2f s, sensitivities %.3f s, filter %.3f s, OC %.3f s\n",
         r.iterations, vox_stop_reason_string(r.reason), r.total_cg_iterations, total,
         r.seconds_solve, r.seconds_sensitivity, r.seconds_filter, r.seconds_update);
  printf("final objective %.6g (%s), volume fraction %.4f, M_nd %.2f%%", r.objective,
         vox_objective_name(model.objective), r.volume_fraction, r.non_discreteness);
  if (r.adjoint_gpu >= 0) printf(", adjoint on GPU %d", r.adjoint_gpu);
  printf("\n");
  const char *design = bench_option("design");
  if (design && *design && vox_model_write(ctx, design, &model) != VOX_OK) {
    fprintf(stderr, "%s: %s\n", argv[0], vox_context_message(ctx));
    return 1;
  }
  vox_model_free(&model);
  vox_backend_destroy(be);
  vox_context_destroy(ctx);
  return 0;
}
