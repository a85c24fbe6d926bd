/* SPDX-License-Identifier: BSD-3-Clause */
/* Connected components of the non-empty voxels of a label grid: the one
 * implementation behind the image import's --largest-component and the
 * analysis's bone connectivity. Labels are nx*ny*nz bytes, x fastest, 0 is
 * empty. Connectivity 6 joins voxels that share a face, 26 also those that
 * share an edge or a corner.
 *
 * A parallel union-find over the runs of non-empty voxels along x (OpenMP
 * threads). Memory: 16 bytes a run and 8 bytes a row (j, k) of the grid. */
#ifndef VOXFE_COMPONENTS_H
#define VOXFE_COMPONENTS_H

#include <stddef.h>
#include <stdint.h>

#include "voxfe/context.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct vox_component_counts {
  size_t components; /* components found (0 when nothing is labelled) */
  size_t kept;       /* voxels of the largest component */
  size_t removed;    /* voxels emptied: those of the other components */
} vox_component_counts;

/* Keeps the largest connected component of the non-empty voxels of `label`
 * (n[0] x n[1] x n[2]) and sets every other voxel to 0. Ties keep the
 * component found first in voxel order. `counts` may be NULL. */
vox_status vox_keep_largest_labels(vox_context *ctx, uint8_t *label, const int64_t n[3],
                                   int connectivity, vox_component_counts *counts);

/* Whether a non-empty voxel on the last layer along `axis` (0 = x, 1 = y,
 * 2 = z) is connected to one on the first layer: `connected` gets 1 or 0. */
vox_status vox_layers_connected(vox_context *ctx, const uint8_t *label, const int64_t n[3],
                                int axis, int connectivity, int *connected);

#ifdef __cplusplus
}
#endif
#endif
