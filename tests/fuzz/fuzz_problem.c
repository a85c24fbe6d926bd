/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer harness of the problem-file parser (import/problem_file.c) and
 * its rasterization (import/problem_rasterize.c) onto a small box: the
 * input becomes a YAML file, which the parser must accept or refuse with a
 * message naming it, never crash on, overrun, leak, or spend unbounded
 * memory on (an alias bomb); a problem it accepts is put on an 8 x 4 x 4
 * box, which must give a valid model or a message. Built with clang
 * -fsanitize=fuzzer,address,undefined by tests/fuzz/CMakeLists.txt and run
 * for a few seconds in the test suite (run_fuzzer.sh). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "voxfe/problem.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *input_path(void) {
  static char path[256];
  if (!path[0]) {
    const char *dir = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/voxfe-fuzz-%d.yaml", dir ? dir : "/tmp", (int)getpid());
  }
  return path;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *path = input_path();
  FILE *f = fopen(path, "wb");
  if (!f) return 0;
  fwrite(data, 1, size, f);
  fclose(f);
  vox_context *ctx = NULL;
  if (vox_context_create(&ctx) != VOX_OK) return 0;
  vox_problem problem;
  memset(&problem, 0, sizeof problem);
  vox_status s = vox_problem_read(ctx, path, &problem);
  if (s != VOX_OK) {
    /* a refusal names the file */
    if (!strstr(vox_context_message(ctx), path)) abort();
  } else {
    const vox_grid grid = {.nx = 8, .ny = 4, .nz = 4, .voxel_size = {1, 1, 1}};
    vox_model model;
    if (vox_model_init(ctx, &model, &grid) == VOX_OK) {
      memset(model.label, 1, 8 * 4 * 4);
      s = vox_problem_rasterize(ctx, &problem, &model);
      if (s == VOX_OK && vox_model_validate(ctx, &model) != VOX_OK) abort();
      if (s != VOX_OK && !vox_context_message(ctx)[0]) abort();
      vox_model_free(&model);
    }
    vox_problem_free(&problem);
  }
  vox_context_destroy(ctx);
  unlink(path);
  return 0;
}
