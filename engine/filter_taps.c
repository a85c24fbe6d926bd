/* SPDX-License-Identifier: BSD-3-Clause */
/* The taps of the linear-hat filter (filter_taps.h). */
#include "filter_taps.h"

#include <math.h>
#include <stdlib.h>

static vox_status make_taps(vox_context *ctx, const vox_grid *grid, double radius, int periodic,
                            vox_filter_taps *taps) {
  *taps = (vox_filter_taps){0};
  /* tested first, so that a negative or NaN radius stays out of the reach
   * arithmetic; a positive one never gives an empty list (the centre tap
   * weighs R) */
  if (!(radius > 0))
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "filter radius %g mm must be positive",
                     radius);
  int64_t reach[3];
  const int64_t n[3] = {grid->nx, grid->ny, grid->nz};
  for (int a = 0; a < 3; a++) {
    const double r = floor(radius / grid->voxel_size[a]);
    /* a periodic filter reaches past the faces; the bound on the taps
     * then stops a radius too wide (and keeps the cast below in range) */
    const double limit = periodic ? VOX_FILTER_MAX_TAPS : (double)(n[a] - 1);
    reach[a] = r < limit ? (int64_t)r : (int64_t)limit;
  }
  const size_t max_taps =
      (size_t)(2 * reach[0] + 1) * (size_t)(2 * reach[1] + 1) * (size_t)(2 * reach[2] + 1);
  if (max_taps > VOX_FILTER_MAX_TAPS)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "filter radius %g mm spans %zu voxels; at most %d are supported", radius,
                     max_taps, VOX_FILTER_MAX_TAPS);
  taps->offset = malloc(max_taps * sizeof *taps->offset);
  taps->weight = malloc(max_taps * sizeof *taps->weight);
  if (!taps->offset || !taps->weight) {
    vox_filter_taps_free(taps);
    return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory for the filter");
  }
  for (int dk = -(int)reach[2]; dk <= reach[2]; dk++)
    for (int dj = -(int)reach[1]; dj <= reach[1]; dj++)
      for (int di = -(int)reach[0]; di <= reach[0]; di++) {
        const double dx = di * grid->voxel_size[0], dy = dj * grid->voxel_size[1],
                     dz = dk * grid->voxel_size[2];
        const double w = radius - sqrt(dx * dx + dy * dy + dz * dz);
        if (w <= 0) continue;
        taps->offset[taps->n][0] = di;
        taps->offset[taps->n][1] = dj;
        taps->offset[taps->n][2] = dk;
        taps->weight[taps->n++] = w;
      }
  return VOX_OK;
}

vox_status vox_filter_taps_make(vox_context *ctx, const vox_grid *grid, double radius,
                                vox_filter_taps *taps) {
  return make_taps(ctx, grid, radius, 0, taps);
}

vox_status vox_filter_taps_make_periodic(vox_context *ctx, const vox_grid *grid, double radius,
                                         vox_filter_taps *taps) {
  return make_taps(ctx, grid, radius, 1, taps);
}

void vox_filter_taps_free(vox_filter_taps *taps) {
  free(taps->offset);
  free(taps->weight);
  *taps = (vox_filter_taps){0};
}
