/* SPDX-License-Identifier: BSD-3-Clause */
/* Arrays of a periodic unit cell: the cell of an inverse-homogenization
 * design repeated along x, y and z, to export (voxfe-export --tile) the
 * material a printer would make rather than the one cell. The surface of the
 * array then goes through the isosurface of voxfe/surface.h like any model,
 * closed and manifold around the whole array. */
#ifndef VOXFE_TILE_H
#define VOXFE_TILE_H

#include "voxfe/model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The most elements an array may have (2^34: 128 GiB of density, well past
 * any machine this runs on, and far from int64 overflow). */
#define VOX_TILE_MAX_ELEMENTS ((int64_t)1 << 34)

/* `out` = `cell` repeated tiles[0] x tiles[1] x tiles[2] times (each >= 1):
 * the grid nx tiles[0] x ny tiles[1] x nz tiles[2] with the cell's voxel size
 * and origin, element (i, j, k) taking the cell's (i mod nx, j mod ny,
 * k mod nz). The label, the density, the intensity, the materials, the
 * stage, the physics and the title are carried; loads, constraints,
 * displacements, history and snapshots belong to one cell and are not.
 * Fails with VOX_ERR_INVALID_ARGUMENT for tile counts below 1 or an array
 * over VOX_TILE_MAX_ELEMENTS. `out` is overwritten (zeroed on failure); free
 * it with vox_model_free. */
vox_status vox_model_tile(vox_context *ctx, const vox_model *cell, const int tiles[3],
                          vox_model *out);

#ifdef __cplusplus
}
#endif
#endif
