/* The field an isosurface is extracted from (private to export/ and the
 * CUDA extraction, cuda/cuda_isosurface.cu), and the GPU extraction's entry
 * point, which must give exactly the triangles of export/surface.c. */
#ifndef VOXFE_ISOSURFACE_FIELD_H
#define VOXFE_ISOSURFACE_FIELD_H

#include <stdint.h>

#include "cube_cases.h"
#include "voxfe/context.h"
#include "voxfe/surface.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum iso_field_kind { FIELD_DENSITY, FIELD_NONZERO, FIELD_LABEL } iso_field_kind;

typedef struct iso_field {
  iso_field_kind kind;
  const double *density;
  const uint8_t *label;
  uint8_t which;    /* FIELD_LABEL: the label */
  double threshold; /* > 0 */
  int64_t nx, ny, nz;
} iso_field;

/* Vertices keep at least this fraction of an edge away from its ends, so
 * that vertices stay apart once written as float (STL): 1/64 of 0.05 mm
 * voxels is still 10 float steps at 1000 mm. It moves the surface by at most
 * 1/64 of a voxel where a value is at (or within 1/64 of) the threshold. */
#define ISO_EDGE_EPS (1.0 / 64)

#ifdef VOXFE_HAVE_CUDA
/* The extraction of surface.c on the GPU (cuda/cuda_isosurface.cu): the same
 * vertices, in the same order, and the same triangles in the same order,
 * into `out` (host memory from malloc, as vox_surface_free expects). A field
 * with no point inside gives an empty surface and VOX_OK (the caller names
 * the problem). *kernel_seconds: the device time without the transfers.
 * VOX_ERR_DEVICE without a device or without enough device memory. */
vox_status isosurface_cuda(vox_context *ctx, const iso_field *f, const vox_cube_cases *cases,
                           const double origin[3], const double voxel_size[3], vox_surface *out,
                           double *kernel_seconds);
#endif

#ifdef __cplusplus
}
#endif
#endif
