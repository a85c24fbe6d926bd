/* SPDX-License-Identifier: BSD-3-Clause */
/* What the benchmark programs share: the clock, the 2:1:1 cantilever model
 * of a problem file, and their settings as --NAME=VALUE arguments. */
#ifndef VOXFE_BENCH_COMMON_H
#define VOXFE_BENCH_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "voxfe/problem.h"
#include "voxfe/voxfe.h"

static inline double bench_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The grid of unit voxels SIZE says (NX: NX x NX/2 x NX/2; or NXxNYxNZ), every voxel label 1, with the
 * supports and loads of the problem file (workflows/cantilever/cantilever.yaml).
 * On failure the message is on the context and *what names the step. */
static inline vox_status bench_cantilever_model(vox_context *ctx, const char *problem_path,
                                                const char *size, vox_model *model,
                                                const char **what) {
  vox_problem problem;
  vox_status s;
  /* SIZE: N for the 2:1:1 box N x N/2 x N/2, or NXxNYxNZ voxels */
  int nx = 0, ny = 0, nz = 0;
  if (sscanf(size, "%dx%dx%d", &nx, &ny, &nz) != 3) nx = atoi(size), ny = nz = nx / 2;
  *what = "grid size";
  if (nx < 2 || ny < 1 || nz < 1) return VOX_ERR_INVALID_ARGUMENT;
  *what = "problem";
  if ((s = vox_problem_read(ctx, problem_path, &problem)) != VOX_OK) return s;
  vox_grid grid = {.nx = nx, .ny = ny, .nz = nz, .voxel_size = {1, 1, 1}};
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

/* A benchmark's settings besides its positional arguments: --NAME=VALUE
 * anywhere on the command line, NAME one of the program's `names` (a NULL
 * ends the list). bench_options_take moves them out of argv (the
 * positional arguments keep their order) and exits with status 2 on a
 * --NAME=VALUE of another name; bench_option then gives a setting's value,
 * or NULL when it was not given. */
enum { BENCH_OPTIONS_MAX = 32 };
static const char *bench_option_name[BENCH_OPTIONS_MAX], *bench_option_value[BENCH_OPTIONS_MAX];
static int bench_n_options;

static inline void bench_options_take(int *argc, char **argv, const char *const *names) {
  int kept = 1;
  for (int a = 1; a < *argc; a++) {
    const char *arg = argv[a], *eq = strchr(arg, '=');
    if (strncmp(arg, "--", 2) != 0 || !eq) {
      argv[kept++] = argv[a];
      continue;
    }
    const size_t len = (size_t)(eq - arg - 2);
    int known = 0;
    for (int i = 0; names[i] && !known; i++)
      known = strlen(names[i]) == len && strncmp(names[i], arg + 2, len) == 0;
    if (!known || bench_n_options == BENCH_OPTIONS_MAX) {
      fprintf(stderr, "%s: unknown setting %.*s; this program takes", argv[0], (int)(eq - arg),
              arg);
      for (int i = 0; names[i]; i++) fprintf(stderr, " --%s=", names[i]);
      fprintf(stderr, "\n");
      exit(2);
    }
    bench_option_name[bench_n_options] = arg + 2;
    bench_option_value[bench_n_options++] = eq + 1;
  }
  argv[kept] = NULL;
  *argc = kept;
}

/* The last value given for `name`, or NULL. */
static inline const char *bench_option(const char *name) {
  const size_t len = strlen(name);
  for (int i = bench_n_options - 1; i >= 0; i--)
    if (strncmp(bench_option_name[i], name, len) == 0 && bench_option_name[i][len] == '=')
      return bench_option_value[i];
  return NULL;
}

#endif
