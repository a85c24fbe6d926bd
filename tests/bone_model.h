/* Small perlin bones (bench/perlin_bone.h) as models for the tests of the
 * sparse solver on both backends (test_sparse.c, test_cuda_sparse.c). Each
 * test includes it once after check.h (everything here is static). */
#ifndef VOXFE_TESTS_BONE_MODEL_H
#define VOXFE_TESTS_BONE_MODEL_H

#include "perlin_bone.h"
#include "voxfe/voxfe.h"

/* A perlin bone of noise `seed` in an n^3 box of 0.05 mm voxels, coarse
 * enough for 20^3, its largest face-connected component (voxels that share
 * only an edge or a corner would hinge), two materials split at the middle
 * of axis `split` (0: x, 1: y), so that the material table is exercised. */
static void make_bone_model(vox_context *ctx, vox_model *m, int64_t n, uint64_t seed, int split) {
  vox_grid g = {.nx = n, .ny = n, .nz = n, .voxel_size = {0.05, 0.05, 0.05}};
  CHECK_OK(ctx, vox_model_init(ctx, m, &g));
  perlin_bone bone;
  perlin_bone_init(&bone, seed);
  bone.frequency = 1.5, bone.octaves = 2, bone.band = 0.22;
  for (int64_t k = 0; k < n; k++)
    for (int64_t j = 0; j < n; j++)
      for (int64_t i = 0; i < n; i++)
        m->label[(k * n + j) * n + i] =
            perlin_bone_voxel(&bone, n, i, j, k) ? (uint8_t)((split ? j : i) < n / 2 ? 1 : 2) : 0;
  vox_material a = {.label = 1, .youngs_modulus = 6829, .poisson_ratio = 0.3, .name = "bone"};
  vox_material b = {.label = 2, .youngs_modulus = 8748.3, .poisson_ratio = 0.3, .name = "bone2"};
  CHECK_OK(ctx, vox_model_add_material(ctx, m, &a));
  CHECK_OK(ctx, vox_model_add_material(ctx, m, &b));
  size_t removed, components;
  CHECK_OK(ctx, vox_keep_largest_component(ctx, m, 6, &removed, &components));
}

/* Replaces the model's supports and loads: the bottom face clamped, two
 * load cases of forces on the top face (down; sideways, growing along x). */
static void clamp_bottom_load_top(vox_context *ctx, vox_model *m) {
  const int64_t n = m->grid.nx, px = n + 1;
  m->n_constraints = 0;
  m->n_loads = 0;
  CHECK_OK(ctx, vox_model_set_load_cases(ctx, m, 2));
  for (int64_t j = 0; j <= n; j++)
    for (int64_t i = 0; i <= n; i++) {
      const int64_t bottom = j * px + i, top = (n * px + j) * px + i;
      for (int c = 0; c < 3; c++) CHECK_OK(ctx, vox_model_add_constraint(ctx, m, bottom, c, 0));
      CHECK_OK(ctx, vox_model_add_load(ctx, m, top, 2, 0, -0.5));
      CHECK_OK(ctx, vox_model_add_load(ctx, m, top, 0, 1, 0.25 + 0.01 * (double)i));
    }
}

#endif
