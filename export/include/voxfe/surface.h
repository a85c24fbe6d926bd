/* SPDX-License-Identifier: BSD-3-Clause */
/* Surfaces of a voxel model as triangle meshes, and STL files of them.
 *
 * An isosurface treats a voxel field (the density, or a label as 1 where it
 * is and 0 elsewhere) as values at the voxel centres, on the grid padded by
 * one layer of 0 all around, and extracts the level set with marching cubes
 * on the cubes of the centres, with a case table derived from one rule per
 * cube face (export/cube_cases.h): on a face whose inside corners lie on one
 * diagonal, each inside corner is cut off on its own. The inside voxels are
 * therefore joined through faces only (6-connected), the outside ones
 * through faces and edges (18-connected). The mesh is indexed (a vertex is
 * shared by all triangles that meet there), closed, 2-manifold, free of
 * degenerate triangles, and every triangle is ordered so that its
 * right-hand normal points from the inside (value >= threshold) to the
 * outside (value < threshold). It is the same whatever the number of
 * threads.
 *
 * Coordinates are physical, in mm: a voxel centre (i, j, k) is at
 * origin + (i + 0.5, j + 0.5, k + 0.5) * voxel_size. The surface lies between
 * the centres of the voxels inside and those outside, so a binary (0/1) field
 * gives a surface through the voxel faces with the corners cut. */
#ifndef VOXFE_SURFACE_H
#define VOXFE_SURFACE_H

#include <stddef.h>
#include <stdint.h>

#include "voxfe/backend.h"
#include "voxfe/model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A triangle mesh. Zero it before a call that fills it; vox_surface_free
 * frees the arrays and zeroes it again. */
typedef struct vox_surface {
  size_t n_vertices, n_triangles;
  double *vertex;    /* 3 per vertex: x, y, z in mm */
  int64_t *triangle; /* 3 per triangle: 0-based vertex indices, counter-clockwise seen
                        from outside */
} vox_surface;

void vox_surface_free(vox_surface *surface);

/* The isosurface of the element density at `threshold` (> 0, since the
 * padding is 0). A model without density uses 1 where the label is non-zero
 * and 0 elsewhere, at threshold 0.5 (`threshold` is then ignored, as in
 * vox_write_vtu). NaN densities count as 0. Fails with
 * VOX_ERR_INVALID_ARGUMENT if no voxel reaches the threshold. `out` is
 * overwritten (not freed first); on failure it is left zeroed. */
vox_status vox_isosurface_density(vox_context *ctx, const vox_model *model, double threshold,
                                  vox_surface *out);

/* The surface of the voxels whose label is `label` (0..255): the isosurface
 * at 0.5 of 1 there and 0 elsewhere. Fails if no voxel has that label. */
vox_status vox_isosurface_label(vox_context *ctx, const vox_model *model, int label,
                                vox_surface *out);

/* Where an isosurface was extracted, and how long the device took. */
typedef struct vox_isosurface_info {
  vox_device device;     /* VOX_DEVICE_CPU or VOX_DEVICE_CUDA */
  double seconds_device; /* CUDA: the kernels alone, without the transfers of
                            the field and the mesh; 0 on the CPU */
} vox_isosurface_info;

/* The same two, on a chosen device: VOX_DEVICE_CPU, VOX_DEVICE_CUDA (fails
 * with VOX_ERR_UNSUPPORTED in a build without CUDA, VOX_ERR_DEVICE without a
 * device or its memory), or VOX_DEVICE_AUTO, which is the CPU: the field
 * lives in host memory, and copying it to the device and the mesh back
 * takes longer than the CPU's whole extraction on a multi-core host (the
 * kernels themselves are far faster; docs/benchmarks.md). Both give
 * the same surface: the same vertices, bit for bit, in the same order, and
 * the same triangles in the same order. `info` may be NULL. */
vox_status vox_isosurface_density_on(vox_context *ctx, const vox_model *model, double threshold,
                                     vox_device device, vox_surface *out,
                                     vox_isosurface_info *info);
vox_status vox_isosurface_label_on(vox_context *ctx, const vox_model *model, int label,
                                   vox_device device, vox_surface *out,
                                   vox_isosurface_info *info);

/* Taubin smoothing: `iterations` pairs of a shrinking step (lambda = 0.5) and
 * an inflating one (mu = -0.53), each moving every vertex towards (or away
 * from) the mean of its neighbours along the mesh's edges. It smooths the
 * voxel steps away while keeping the enclosed volume nearly unchanged;
 * the connectivity is not touched, so a closed mesh stays closed. */
vox_status vox_surface_smooth(vox_context *ctx, vox_surface *surface, int iterations);

/* Decimation to at most `target_triangles` triangles (>= 4) by quadric
 * error edge collapses (export/decimate.c): each collapse keeps the mesh a
 * closed, oriented 2-manifold of the same topology (the link condition), and
 * refuses to flip a triangle or to make a sliver, so the result is
 * watertight, outward and free of degenerate triangles like the input. It
 * stops earlier, above the budget, when no edge may collapse any more (a
 * part is at least a tetrahedron: 4 triangles). A surface within the budget
 * is left as it is. The surface must be closed and 2-manifold (every edge
 * shared by two triangles with opposite orientations, one fan of triangles
 * around every vertex), as the isosurfaces here are: other meshes fail with
 * VOX_ERR_INVALID_ARGUMENT and are left untouched. The collapses go in
 * rounds of the cheapest edges (costs computed on the context's threads);
 * deterministic, the same for any number of threads; vertices keep their
 * order, less the removed ones. */
vox_status vox_surface_decimate(vox_context *ctx, vox_surface *surface, size_t target_triangles);

/* Writes the surface as STL, binary (`binary` non-zero: an 80-byte header,
 * a uint32 triangle count, then 50 bytes per triangle, little-endian) or
 * ASCII (`solid voxfe` ... `endsolid voxfe`). Coordinates are written as
 * float, in mm; each facet normal is the unit right-hand normal of its
 * triangle. The output replaces `path` atomically (a temporary file renamed
 * into place) and is left untouched on failure. Fails on a surface without
 * triangles or with a vertex index out of range. */
vox_status vox_write_stl(vox_context *ctx, const char *path, const vox_surface *surface,
                         int binary);

#ifdef __cplusplus
}
#endif
#endif
