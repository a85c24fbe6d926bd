/* SPDX-License-Identifier: BSD-3-Clause */
/* Small perlin bones (bench/perlin_bone.h) as models for the tests of the
 * sparse solver on both backends (test_sparse.c, test_cuda_sparse.c). Each
 * test includes it once after check.h (everything here is static). */
#ifndef VOXFE_TESTS_BONE_MODEL_H
#define VOXFE_TESTS_BONE_MODEL_H

#include <math.h>

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

/* A bone with mechanisms, as 26-connectivity keeps them: a 2 x 2 voxel
 * column from plate to plate (x, y < 2), a 2 x 2 x 2 cube hinged on one of
 * its edges and a 2 x 2 x 1 plate hanging from the cube by one corner, in a
 * 6 x 6 x 10 box under the uniaxial compression test. Each hinge lets its
 * part rotate at no energy: the stiffness matrix is only semi-definite, and
 * so is every coarse level that still resolves a hinge. */
static inline void make_hinged_model(vox_context *ctx, vox_model *m) {
  vox_grid g = {.nx = 6, .ny = 6, .nz = 10, .voxel_size = {0.05, 0.05, 0.05}};
  CHECK_OK(ctx, vox_model_init(ctx, m, &g));
  vox_material bone = {.label = 1, .youngs_modulus = 6829, .poisson_ratio = 0.3};
  CHECK_OK(ctx, vox_model_add_material(ctx, m, &bone));
  for (int k = 0; k < 10; k++)
    for (int j = 0; j < 6; j++)
      for (int i = 0; i < 6; i++) {
        const int column = i < 2 && j < 2;
        const int hinged = i >= 2 && i < 4 && j >= 2 && j < 4 && k >= 4 && k < 6; /* edge */
        const int hanging = i >= 4 && j >= 4 && k == 6;                            /* corner */
        m->label[(k * 6 + j) * 6 + i] = (uint8_t)(column || hinged || hanging);
      }
  double applied;
  CHECK_OK(ctx, vox_add_compression_test(ctx, m, VOX_TEST_UNIAXIAL, 2, -0.01, &applied));
}

/* max |a - b| over the dofs of the hinged model's column (nodes with x, y
 * <= 2), which no mechanism moves, relative to max |b| there. */
static inline double hinged_column_difference(const double *a, const double *b) {
  double d = 0, scale = 0;
  for (size_t i = 0; i < 3 * 7 * 7 * 11; i++) {
    const size_t node = i / 3, x = node % 7, y = node / 7 % 7;
    if (x <= 2 && y <= 2) d = fmax(d, fabs(a[i] - b[i])), scale = fmax(scale, fabs(b[i]));
  }
  return scale > 0 ? d / scale : INFINITY;
}

#endif
