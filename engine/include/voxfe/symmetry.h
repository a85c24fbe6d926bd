/* SPDX-License-Identifier: BSD-3-Clause */
/* Symmetry of a periodic unit cell's design (Zhang et al. 2023 section 6.1): the
 * groups of mirrors and rotations of the cell, and their enforcement on an
 * element field by averaging it over the orbits of the group.
 *
 *   reflect3  the mirrors in the three mid-planes x = 0.5, y = 0.5, z = 0.5
 *             of the cell and their compositions (8 maps; any box grid);
 *   reflect6  those and the mirrors in the diagonal planes x + y = 0,
 *             y + z = 0, z + x = 0 through the centre (coordinates about the
 *             centre), which with the first three give every permutation of
 *             the axes: the full symmetry group of the cube, 48 maps (cubic
 *             grids only);
 *   rotate3   the quarter turns about the x, y and z axes through the centre
 *             and their compositions: the cube's 24 rotations (cubic grids).
 *
 * On the grid a map sends element (i, j, k) to the element whose index along
 * axis a is c[perm[a]] or n - 1 - c[perm[a]] (flipped), c = (i, j, k): the
 * element centres map onto element centres exactly.
 *
 * Enforcement sets every element to the mean of its orbit, computed as
 * (1/|G|) sum over the maps g of v(g e) (each orbit member appears equally
 * often), which is the orthogonal projection onto the symmetric fields. So
 * it leaves a symmetric field unchanged and maps the gradient of a function
 * of a symmetric design to its projection: the optimizer applies it to the
 * sensitivities before the update and to the density after it, as Zhang et al. 2023
 * section 5.2 does. */
#ifndef VOXFE_SYMMETRY_H
#define VOXFE_SYMMETRY_H

#include "voxfe/context.h"
#include "voxfe/model.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum vox_symmetry {
  VOX_SYMMETRY_NONE,
  VOX_SYMMETRY_REFLECT3,
  VOX_SYMMETRY_REFLECT6,
  VOX_SYMMETRY_ROTATE3
} vox_symmetry;

/* "none", "reflect3", "reflect6", "rotate3" */
const char *vox_symmetry_name(vox_symmetry symmetry);
/* 0 and *symmetry set for one of the names above, -1 otherwise */
int vox_symmetry_parse(const char *text, vox_symmetry *symmetry);

/* Fails with VOX_ERR_INVALID_ARGUMENT, naming the grid, where the symmetry
 * needs a cubic grid (reflect6, rotate3) and the grid is not one. */
vox_status vox_symmetry_check(vox_context *ctx, const vox_grid *grid, vox_symmetry symmetry);

/* Averages `field` (one value per element, x fastest) over the orbits of the
 * group, in place, on the host. The backends have the same operation on
 * their vectors (the optimizer's path); this one is for host arrays. */
vox_status vox_symmetrize(vox_context *ctx, const vox_grid *grid, vox_symmetry symmetry,
                          double *field);

#ifdef __cplusplus
}
#endif
#endif
