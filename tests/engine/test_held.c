/* SPDX-License-Identifier: BSD-3-Clause */
/* vox_model_check_held: supports that leave a rigid motion free are refused
 * only where a load does work on that motion. A compression test (no loads,
 * prescribed displacements only) on a wide, thin sample holds its rotation
 * about the axis by one pinned node a voxel from another: a short lever
 * that the check must not take for a free motion. */
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "voxfe/analysis.h"
#include "voxfe/context.h"
#include "voxfe/model.h"

static void make(vox_context *ctx, vox_model *m, int n) {
  const vox_grid g = {.nx = n, .ny = n, .nz = 1, .voxel_size = {1, 1, 1}};
  CHECK_OK(ctx, vox_model_init(ctx, m, &g));
  vox_material mat = {.label = 1, .youngs_modulus = 1000, .poisson_ratio = 0.3, .name = "bone"};
  CHECK_OK(ctx, vox_model_add_material(ctx, m, &mat));
  memset(m->label, 1, (size_t)n * (size_t)n);
}

int main(void) {
  vox_context *ctx;
  if (vox_context_create(&ctx)) return 1;
  vox_model m;
  double applied;
  /* the compression test: held, however short the pin's lever */
  make(ctx, &m, 400);
  CHECK_OK(ctx, vox_add_compression_test(ctx, &m, VOX_TEST_UNIAXIAL, 2, -0.01, &applied));
  CHECK_OK(ctx, vox_model_check_held(ctx, &m));
  vox_model_free(&m);

  /* z held on both faces, nothing else: x, y and the rotation about z are
   * free. Without loads the system is consistent: accepted. */
  make(ctx, &m, 8);
  const int64_t layer = 9 * 9;
  for (int64_t n = 0; n < layer; n++) {
    CHECK_OK(ctx, vox_model_add_constraint(ctx, &m, n, 2, 0));
    CHECK_OK(ctx, vox_model_add_constraint(ctx, &m, layer + n, 2, -0.01));
  }
  CHECK_OK(ctx, vox_model_check_held(ctx, &m));
  /* a load along z does no work on the free motions: accepted */
  CHECK_OK(ctx, vox_model_add_load(ctx, &m, layer + 40, 2, 0, -1));
  CHECK_OK(ctx, vox_model_check_held(ctx, &m));
  /* a lateral load at a corner drives x and the rotation about z: refused,
   * naming them */
  CHECK_OK(ctx, vox_model_add_load(ctx, &m, layer + 8, 0, 0, 1));
  CHECK(vox_model_check_held(ctx, &m) == VOX_ERR_INVALID_ARGUMENT);
  CHECK(strstr(vox_context_message(ctx), "rigid motion") != NULL);
  CHECK(strstr(vox_context_message(ctx), "rotation about z") != NULL);
  vox_model_free(&m);
  vox_context_destroy(ctx);
  CHECK_DONE();
}
