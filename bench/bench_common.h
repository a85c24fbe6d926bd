/* What the benchmark programs share (bench_cantilever.c, bench_cuda.c): the
 * clock and the 2:1:1 cantilever model of a problem file. */
#ifndef VOXFE_BENCH_COMMON_H
#define VOXFE_BENCH_COMMON_H

#include <string.h>
#include <time.h>

#include "voxfe/problem.h"
#include "voxfe/voxfe.h"

static inline double bench_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The grid NX x NX/2 x NX/2 of unit voxels, every voxel label 1, with the
 * supports and loads of the problem file (workflows/cantilever/cantilever.yaml).
 * On failure the message is on the context and *what names the step. */
static inline vox_status bench_cantilever_model(vox_context *ctx, const char *problem_path, int nx,
                                                vox_model *model, const char **what) {
  vox_problem problem;
  vox_status s;
  *what = "problem";
  if ((s = vox_problem_read(ctx, problem_path, &problem)) != VOX_OK) return s;
  vox_grid grid = {.nx = nx, .ny = nx / 2, .nz = nx / 2, .voxel_size = {1, 1, 1}};
  *what = "model";
  if ((s = vox_model_init(ctx, model, &grid)) == VOX_OK) {
    memset(model->label, 1, (size_t)vox_grid_elements(&grid));
    *what = "rasterize";
    s = vox_problem_rasterize(ctx, &problem, model);
    if (s != VOX_OK) vox_model_free(model);
  }
  vox_problem_free(&problem);
  return s;
}

#endif
