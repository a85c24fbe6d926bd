/* SPDX-License-Identifier: BSD-3-Clause */
/* The maps of a symmetry group of the cell (voxfe/symmetry.h) as index maps
 * on the element grid, shared by the CPU and CUDA backends (private), so
 * that both visit the maps in the same order and add the same values in the
 * same order: they give the same bits. */
#ifndef VOXFE_SYMMETRY_GROUP_H
#define VOXFE_SYMMETRY_GROUP_H

#include <stdint.h>

#include "voxfe/symmetry.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifdef __CUDACC__
#define VOX_SYMMETRY_HD __host__ __device__
#else
#define VOX_SYMMETRY_HD
#endif

enum { VOX_SYMMETRY_MAX_MAPS = 48 };

/* One map: image coordinate a = c[perm[a]], or n[a] - 1 - that when flip[a]. */
typedef struct vox_symmetry_map {
  int8_t perm[3];
  int8_t flip[3];
} vox_symmetry_map;

typedef struct vox_symmetry_group {
  vox_symmetry symmetry; /* the group's name */
  int n;                 /* maps, the identity first */
  vox_symmetry_map map[VOX_SYMMETRY_MAX_MAPS];
} vox_symmetry_group;

/* The maps of `symmetry` (none: the identity alone), in a fixed order. The
 * grid must suit the symmetry (vox_symmetry_check). */
void vox_symmetry_group_make(vox_symmetry symmetry, vox_symmetry_group *group);

/* The index of the image of element (i, j, k) under map m. */
static inline VOX_SYMMETRY_HD int64_t vox_symmetry_image(const vox_symmetry_map *m, int64_t nx,
                                                         int64_t ny, int64_t nz, int64_t i,
                                                         int64_t j, int64_t k) {
  const int64_t c[3] = {i, j, k}, n[3] = {nx, ny, nz};
  int64_t t[3];
  for (int a = 0; a < 3; a++) {
    const int64_t v = c[m->perm[a]];
    t[a] = m->flip[a] ? n[a] - 1 - v : v;
  }
  return (t[2] * ny + t[1]) * nx + t[0];
}

/* Whether element (i, j, k) has the lowest index of its orbit. The
 * mirror groups say it from the element's own coordinates: every orbit
 * member's coordinate along an axis is c or n - 1 - c, so the lowest one
 * takes the lesser along every axis (reflect3) and, where the axes may be
 * permuted too (reflect6, a cube), the least of the three along z, the
 * middle one along y and the greatest along x. Other groups look at every
 * image. */
static inline VOX_SYMMETRY_HD int vox_symmetry_is_lowest(const vox_symmetry_group *g, int64_t nx,
                                                         int64_t ny, int64_t nz, int64_t i,
                                                         int64_t j, int64_t k) {
  const int folded = i <= nx - 1 - i && j <= ny - 1 - j && k <= nz - 1 - k;
  if (g->symmetry == VOX_SYMMETRY_REFLECT3) return folded;
  if (g->symmetry == VOX_SYMMETRY_REFLECT6) return folded && k <= j && j <= i;
  const int64_t e = (k * ny + j) * nx + i;
  for (int m = 1; m < g->n; m++)
    if (vox_symmetry_image(&g->map[m], nx, ny, nz, i, j, k) < e) return 0;
  return 1;
}

/* The orbit mean at element e = (i, j, k), written to every member of the
 * orbit, when e is the orbit's lowest index (its representative); nothing
 * otherwise. Each orbit is thus written by one caller only, so the loop over
 * e may run in parallel and in place. The sum runs over the maps in order
 * (each member |stabiliser| times), divided by the number of maps. */
static inline VOX_SYMMETRY_HD void vox_symmetry_average_orbit(const vox_symmetry_group *g,
                                                              int64_t nx, int64_t ny, int64_t nz,
                                                              int64_t i, int64_t j, int64_t k,
                                                              double *field) {
  if (!vox_symmetry_is_lowest(g, nx, ny, nz, i, j, k)) return;
  double s = 0;
  for (int m = 0; m < g->n; m++) s += field[vox_symmetry_image(&g->map[m], nx, ny, nz, i, j, k)];
  const double mean = s / g->n;
  for (int m = 0; m < g->n; m++) field[vox_symmetry_image(&g->map[m], nx, ny, nz, i, j, k)] = mean;
}

/* Whether the host field f (one value per element; `mask`: bytes compared
 * as zero or not, else doubles compared exactly) is unchanged by every map
 * of the group: checked on the generators of the group (the mirrors in the
 * mid-planes for reflect3; a mirror, a swap and the turn of the axes for
 * reflect6; the turn and a quarter turn for rotate3), element by element
 * with no copy, which is what being unchanged by all of it takes. The grid
 * must suit the symmetry (vox_symmetry_check). */
int vox_symmetry_holds(const vox_grid *grid, vox_symmetry symmetry, const double *f, int threads);
int vox_symmetry_holds_mask(const vox_grid *grid, vox_symmetry symmetry, const uint8_t *mask,
                            int threads);

/* A node field of 3 components turned about the cube's diagonal, `turns`
 * (1 or 2) times x -> y -> z (the map of the groups reflect6 and rotate3
 * with perm {1, 2, 0} and no flips, applied `turns` times): the turned
 * field's component (c + turns) % 3 at node q = (i, j, k) is the field's
 * component c at node p, p[c] = q[(c + turns) % 3]. On a design that the
 * turn leaves unchanged, the cell problem of a strain turned so is solved
 * by the turned field of that strain's solution (homogenize.c). n: nodes
 * along each axis. The index of node p: */
static inline VOX_SYMMETRY_HD int64_t vox_turn_source(int turns, int64_t n, int64_t i, int64_t j,
                                                      int64_t k) {
  const int64_t q[3] = {i, j, k};
  return (q[(2 + turns) % 3] * n + q[(1 + turns) % 3]) * n + q[turns % 3];
}

#ifdef __cplusplus
}
#endif
#endif
