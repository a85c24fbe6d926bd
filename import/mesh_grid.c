/* SPDX-License-Identifier: BSD-3-Clause */
/* The grid around a part: from its bounding box, a voxel size or a number of
 * voxels along the longest side, and a margin of empty voxels. */
#include <math.h>

#include "voxfe/mesh.h"

vox_status vox_grid_around(vox_context *ctx, const double min[3], const double max[3],
                           const double voxel_size[3], int64_t resolution, int64_t padding,
                           int64_t max_elements, vox_grid *grid) {
  double h[3];
  double longest = 0;
  for (int a = 0; a < 3; a++) {
    if (!isfinite(min[a]) || !isfinite(max[a]) || !(min[a] <= max[a]))
      return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "the bounding box is empty");
    longest = fmax(longest, max[a] - min[a]);
  }
  if (padding < 0) return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "negative padding");
  if (isnan(voxel_size[0])) {
    if (resolution < 1)
      return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "the resolution must be at least 1");
    if (!(longest > 0))
      return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                       "the part is flat (no extent along any axis); give a voxel size");
    h[0] = h[1] = h[2] = longest / (double)resolution;
  } else {
    for (int a = 0; a < 3; a++) {
      if (!(voxel_size[a] > 0) || !isfinite(voxel_size[a]))
        return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "the voxel size must be positive");
      h[a] = voxel_size[a];
    }
  }
  double elements = 1;
  int64_t n[3];
  for (int a = 0; a < 3; a++) {
    /* cells from min on, enough to reach max (at least one); a side that is
     * a whole number of voxels up to rounding gets no extra, empty layer */
    double cells = ceil((max[a] - min[a]) / h[a] * (1 - 1e-12));
    if (cells < 1) cells = 1;
    cells += 2.0 * (double)padding;
    elements *= cells;
    if (cells > 1e9 || elements > (double)max_elements)
      return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                       "the grid would have more than %lld voxels; give a larger voxel size "
                       "or a smaller resolution",
                       (long long)max_elements);
    n[a] = (int64_t)cells;
    grid->voxel_size[a] = h[a];
    grid->origin[a] = min[a] - (double)padding * h[a];
  }
  grid->nx = n[0];
  grid->ny = n[1];
  grid->nz = n[2];
  return VOX_OK;
}
