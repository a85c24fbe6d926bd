/* SPDX-License-Identifier: BSD-3-Clause */
/* The symmetry groups of the cell (voxfe/symmetry.h, symmetry_group.h). */
#include <omp.h>
#include <string.h>

#include "backend_ops.h"
#include "symmetry_group.h"
#include "voxfe/symmetry.h"
#include "cpu/cpu.h"

static const char *const names[] = {"none", "reflect3", "reflect6", "rotate3"};

const char *vox_symmetry_name(vox_symmetry symmetry) {
  return (unsigned)symmetry < 4 ? names[symmetry] : "unknown";
}

int vox_symmetry_parse(const char *text, vox_symmetry *symmetry) {
  for (int i = 0; i < 4; i++)
    if (strcmp(text, names[i]) == 0) {
      *symmetry = (vox_symmetry)i;
      return 0;
    }
  return -1;
}

vox_status vox_symmetry_check(vox_context *ctx, const vox_grid *grid, vox_symmetry symmetry) {
  if ((unsigned)symmetry > VOX_SYMMETRY_ROTATE3)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "unknown symmetry %d", (int)symmetry);
  const int cubic = grid->nx == grid->ny && grid->ny == grid->nz &&
                    grid->voxel_size[0] == grid->voxel_size[1] &&
                    grid->voxel_size[1] == grid->voxel_size[2];
  if ((symmetry == VOX_SYMMETRY_REFLECT6 || symmetry == VOX_SYMMETRY_ROTATE3) && !cubic)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "symmetry %s needs a cubic cell (equal elements and voxel sizes along x, y "
                     "and z); the grid is %lld x %lld x %lld of %g x %g x %g mm",
                     vox_symmetry_name(symmetry), (long long)grid->nx, (long long)grid->ny,
                     (long long)grid->nz, grid->voxel_size[0], grid->voxel_size[1],
                     grid->voxel_size[2]);
  return VOX_OK;
}

/* +1 for an even permutation of the axes, -1 for an odd one. */
static int permutation_sign(const int8_t p[3]) {
  int inversions = 0;
  for (int a = 0; a < 3; a++)
    for (int b = a + 1; b < 3; b++) inversions += p[a] > p[b];
  return inversions % 2 ? -1 : 1;
}

void vox_symmetry_group_make(vox_symmetry symmetry, vox_symmetry_group *g) {
  static const int8_t perms[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2},
                                     {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
  memset(g, 0, sizeof *g);
  g->symmetry = symmetry;
  /* reflect3 keeps the axes; reflect6 and rotate3 take every permutation */
  const int n_perms = symmetry == VOX_SYMMETRY_REFLECT6 || symmetry == VOX_SYMMETRY_ROTATE3 ? 6 : 1;
  const int n_flips = symmetry == VOX_SYMMETRY_NONE ? 1 : 8;
  for (int p = 0; p < n_perms; p++)
    for (int f = 0; f < n_flips; f++) {
      vox_symmetry_map m;
      int flips = 0;
      for (int a = 0; a < 3; a++) {
        m.perm[a] = perms[p][a];
        m.flip[a] = (int8_t)((f >> a) & 1);
        flips += m.flip[a];
      }
      /* a rotation has determinant +1: sign(perm) (-1)^flips */
      const int det = permutation_sign(m.perm) * (flips % 2 ? -1 : 1);
      if (symmetry == VOX_SYMMETRY_ROTATE3 && det != 1) continue;
      g->map[g->n++] = m;
    }
}

/* Generators of the group (symmetry_group.h: vox_symmetry_holds), their
 * number returned. */
static int group_generators(vox_symmetry symmetry, vox_symmetry_map g[3]) {
  static const vox_symmetry_map mirror_x = {{0, 1, 2}, {1, 0, 0}},
                                mirror_y = {{0, 1, 2}, {0, 1, 0}},
                                mirror_z = {{0, 1, 2}, {0, 0, 1}},
                                swap_xy = {{1, 0, 2}, {0, 0, 0}},
                                turn = {{1, 2, 0}, {0, 0, 0}},     /* about the diagonal */
                                quarter_z = {{1, 0, 2}, {1, 0, 0}}; /* (n-1-j, i, k) */
  switch (symmetry) {
  case VOX_SYMMETRY_REFLECT3: g[0] = mirror_x, g[1] = mirror_y, g[2] = mirror_z; return 3;
  case VOX_SYMMETRY_REFLECT6: g[0] = mirror_x, g[1] = swap_xy, g[2] = turn; return 3;
  case VOX_SYMMETRY_ROTATE3: g[0] = turn, g[1] = quarter_z; return 2;
  default: return 0;
  }
}

/* vox_symmetry_holds on doubles (d) or on a mask (m, zero or not). */
static int holds(const vox_grid *grid, vox_symmetry symmetry, const double *d, const uint8_t *m,
                 int threads) {
  vox_symmetry_map g[3];
  const int ng = group_generators(symmetry, g);
  const int64_t nx = grid->nx, ny = grid->ny, nz = grid->nz;
  int broken = 0;
#pragma omp parallel for collapse(2) reduction(|| : broken) schedule(static) \
    num_threads(threads > 0 ? threads : omp_get_max_threads())
  for (int64_t k = 0; k < nz; k++)
    for (int64_t j = 0; j < ny; j++)
      for (int64_t i = 0; i < nx && !broken; i++) {
        const int64_t e = (k * ny + j) * nx + i;
        for (int a = 0; a < ng; a++) {
          const int64_t f = vox_symmetry_image(&g[a], nx, ny, nz, i, j, k);
          if (d ? d[f] != d[e] : (m[f] != 0) != (m[e] != 0)) broken = 1;
        }
      }
  return !broken;
}

int vox_symmetry_holds(const vox_grid *grid, vox_symmetry symmetry, const double *f, int threads) {
  return holds(grid, symmetry, f, NULL, threads);
}

int vox_symmetry_holds_mask(const vox_grid *grid, vox_symmetry symmetry, const uint8_t *mask,
                            int threads) {
  return holds(grid, symmetry, NULL, mask, threads);
}

vox_status vox_symmetrize(vox_context *ctx, const vox_grid *grid, vox_symmetry symmetry,
                          double *field) {
  TRY(vox_symmetry_check(ctx, grid, symmetry));
  vox_symmetry_group g;
  vox_symmetry_group_make(symmetry, &g);
  vox_cpu_symmetrize_field(&g, grid, field, vox_context_threads(ctx));
  return VOX_OK;
}

/* design->turn_field's arguments: a cubic grid, 1 or 2 turns, two distinct
 * vectors of the same precision (double or half), 3 values a node. */
vox_status vox_turn_field_check(vox_backend *be, const vox_grid *grid, int turns,
                                const vox_vec *src, const vox_vec *dst) {
  const size_t n = (size_t)(grid->nx + 1);
  if (grid->nx != grid->ny || grid->ny != grid->nz || grid->voxel_size[0] != grid->voxel_size[1] ||
      grid->voxel_size[1] != grid->voxel_size[2] || (turns != 1 && turns != 2) ||
      src->raw == dst->raw || src->scalar != dst->scalar ||
      (src->scalar != VOX_DOUBLE && src->scalar != VOX_HALF) || src->n != 3 * n * n * n ||
      dst->n != src->n)
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT,
                     "turn_field: %d turns of %zu values into %zu on a %lld x %lld x %lld grid",
                     turns, src->n, dst->n, (long long)grid->nx, (long long)grid->ny,
                     (long long)grid->nz);
  return VOX_OK;
}
