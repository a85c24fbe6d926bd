/* SPDX-License-Identifier: BSD-3-Clause */
/* The taps of the linear-hat filter (Martinez-Frutos et al. 2017 eq. 3, 4), shared by the
 * backends (private): every offset (di, dj, dk) between element centres
 * closer than the radius, with its weight R - |d|, in the order dk, dj, di
 * ascending, so that every backend adds them up the same way. */
#ifndef VOXFE_FILTER_TAPS_H
#define VOXFE_FILTER_TAPS_H

#include "voxfe/context.h"
#include "voxfe/model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A bound on the filter's neighbourhood: a radius of 20 voxels, far more
 * than any useful filter, already means 33 000 taps per element. */
#define VOX_FILTER_MAX_TAPS 100000

typedef struct vox_filter_taps {
  int n;
  int (*offset)[3]; /* di, dj, dk */
  double *weight;
} vox_filter_taps;

/* Fails, with a message on the context, for a radius that is not positive
 * or spans more than VOX_FILTER_MAX_TAPS voxels. Taps reaching beyond the
 * grid are left out: they never contribute. */
vox_status vox_filter_taps_make(vox_context *ctx, const vox_grid *grid, double radius,
                                vox_filter_taps *taps);
/* The taps of the same filter on a periodic cell (Zhang et al. 2023 section 6.5):
 * not cut at the grid's size, since a tap past a face wraps around to the
 * opposite one. A radius wider than the cell gives taps that wrap onto the
 * same element more than once, each counted, as on the tiled cell. */
vox_status vox_filter_taps_make_periodic(vox_context *ctx, const vox_grid *grid, double radius,
                                         vox_filter_taps *taps);
void vox_filter_taps_free(vox_filter_taps *taps);

#ifdef __cplusplus
}
#endif
#endif
