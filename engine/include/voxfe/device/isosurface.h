/* SPDX-License-Identifier: BSD-3-Clause */
/* How export/ reaches the GPU for the isosurface: the field a surface is
 * extracted from, the marching-cubes case table (built by
 * export/cube_cases.c), the vertex rule both sides share, and the GPU's
 * extraction (cuda/cuda_isosurface.cu), which must give exactly the
 * triangles of export/surface.c.
 *
 * Internal to libvoxfe, not installed: the engine declares it, the CUDA
 * backend implements it (engine/device_absent.c says "built without CUDA"
 * where there is none), export/ calls it; neither side sees the other's
 * private headers. */
#ifndef VOXFE_DEVICE_ISOSURFACE_H
#define VOXFE_DEVICE_ISOSURFACE_H

#include <stddef.h>
#include <stdint.h>

#include "voxfe/context.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum vox_iso_field_kind {
  VOX_ISO_DENSITY, /* density >= threshold (NaN as 0) */
  VOX_ISO_NONZERO, /* label != 0 */
  VOX_ISO_LABEL    /* label == which */
} vox_iso_field_kind;

typedef struct vox_iso_field {
  vox_iso_field_kind kind;
  const double *density;
  const uint8_t *label;
  uint8_t which;    /* VOX_ISO_LABEL: the label */
  double threshold; /* > 0 */
  int64_t nx, ny, nz;
} vox_iso_field;

/* Vertices keep at least this fraction of an edge away from its ends, so
 * that vertices stay apart once written as float (STL): 1/64 of 0.05 mm
 * voxels is still 10 float steps at 1000 mm. It moves the surface by at most
 * 1/64 of a voxel where a value is at (or within 1/64 of) the threshold. */
#define VOX_ISO_EDGE_EPS (1.0 / 64)

/* The marching-cubes case table (export/cube_cases.h says how it is made).
 * Cube corner k = dx + 2 dy + 4 dz; corner k is inside when bit k of the
 * configuration is set. A cube edge is coded as (u << 2) | axis: its lower
 * corner u (bit `axis` of u clear) and its axis (0 x, 1 y, 2 z). */
/* at most 12 vertices a cube; the loops of a configuration have at most 12
 * vertices together, and a loop of n vertices makes n - 2 triangles */
#define VOX_CUBE_MAX_TRIANGLES 10

typedef struct vox_cube_cases {
  uint8_t count[256];                                /* triangles of each configuration */
  uint8_t edge[256][VOX_CUBE_MAX_TRIANGLES][3];      /* their edges, counter-clockwise
                                                        seen from outside */
} vox_cube_cases;

/* The extraction of export/surface.c on the GPU (the thread's current
 * device): the same vertices (3 coordinates each, mm), in the same order,
 * and the same triangles (3 vertex indices each) in the same order, into
 * host arrays from malloc. A field with no point inside gives no vertices
 * and VOX_OK (the caller names the problem). *kernel_seconds: the device
 * time without the transfers. VOX_ERR_UNSUPPORTED in a build without CUDA;
 * VOX_ERR_DEVICE without a device or without enough device memory. */
vox_status vox_gpu_isosurface(vox_context *ctx, const vox_iso_field *f,
                              const vox_cube_cases *cases, const double origin[3],
                              const double voxel_size[3], double **vertex, size_t *n_vertices,
                              int64_t **triangle, size_t *n_triangles,
                              double *kernel_seconds);

#ifdef __cplusplus
}
#endif
#endif
