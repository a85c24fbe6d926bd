/* VTK XML writers (appended binary, zlib-compressed, UInt64 headers), written
 * with libxml2: what ParaView opens.
 *
 * Density and displacement are written as Float32 (viewing precision; the
 * netCDF file keeps the doubles). The output replaces `path` atomically (a
 * temporary file renamed into place) and leaves it untouched on failure.
 * Compression runs on the context's threads. */
#ifndef VOXFE_VTK_H
#define VOXFE_VTK_H

#include "voxfe/model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ImageData (.vti) of the whole grid: cell data `label` and, when present,
 * `density`; point data `displacement_<case name>` for each load case. */
vox_status vox_write_vti(vox_context *ctx, const char *path, const vox_model *model);

/* UnstructuredGrid (.vtu) of the hexahedra (VTK_HEXAHEDRON) whose density is
 * >= threshold (or, without density, whose label is non-zero: the threshold
 * is then ignored), with the same
 * cell and point arrays as the .vti, restricted to the kept cells and their
 * nodes. Fails if no cell is kept. */
vox_status vox_write_vtu(vox_context *ctx, const char *path, const vox_model *model,
                         double threshold);

#ifdef __cplusplus
}
#endif
#endif
