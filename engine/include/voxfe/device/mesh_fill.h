/* SPDX-License-Identifier: BSD-3-Clause */
/* How import/ reaches the GPU for the mesh fill (docs/meshes.md): the mesh
 * made ready for the fill on one grid, which the CPU's preparation
 * (import/mesh_prepare.c) and the GPU's (cuda/cuda_mesh_prepare.cu) both
 * produce, and the GPU's preparation and fill. The exact arithmetic both
 * sides share is voxfe/device/raycast.h.
 *
 * Internal to libvoxfe, not installed: the engine declares it, the CUDA
 * backend implements it (engine/device_absent.c says "built without CUDA"
 * where there is none), import/ calls it; neither side sees the other's
 * private headers. */
#ifndef VOXFE_DEVICE_MESH_FILL_H
#define VOXFE_DEVICE_MESH_FILL_H

#include <stdint.h>

#include "voxfe/context.h"
#include "voxfe/model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Vertices on the grid's fixed-point lattice and welded there, degenerate
 * and repeated triangles dropped, corners in canonical order
 * (raycast_less), open edges counted. */
typedef struct vox_prepared_mesh {
  int64_t n_vertices;
  int64_t *fixed;          /* 3 * n_vertices: units of 2^-bits voxel from the origin */
  int64_t n_triangles;
  uint32_t *triangle;      /* 3 * n_triangles, corners in canonical order */
  int bits;                /* K */
  int64_t n[3];            /* the grid's elements along x, y, z */
  int64_t degenerate, duplicates, open_edges;
} vox_prepared_mesh;

/* The CUDA devices this build can use: 0 without CUDA or without a device. */
int vox_gpu_devices(void);

/* The preparation on the GPU (the thread's current device): the same welded
 * mesh as the CPU's (vertices numbered by first use, the same triangles
 * kept, in the same order and corner order) and the same counts, with
 * `fixed` and `triangle` in device memory (free with vox_gpu_mesh_free).
 * The triangles (3 * n_triangles vertex indices) and the vertices
 * (3 * n_vertices coordinates) are host arrays the caller has checked, and
 * `bits` the lattice's K it found for them on `grid`. VOX_ERR_UNSUPPORTED
 * in a build without CUDA; VOX_ERR_DEVICE without a device or for a mesh
 * too large for the GPU's 32-bit sorts (over 2^31 vertices or 2^29
 * triangles). */
vox_status vox_gpu_mesh_prepare(vox_context *ctx, const double *vertex, int64_t n_vertices,
                                const uint32_t *triangle, int64_t n_triangles,
                                const vox_grid *grid, int bits, vox_prepared_mesh *out);
void vox_gpu_mesh_free(vox_prepared_mesh *m);
/* A host copy (arrays from malloc) of a prepared mesh in device memory. */
vox_status vox_gpu_mesh_to_host(vox_context *ctx, const vox_prepared_mesh *device,
                                vox_prepared_mesh *host);

/* The fill on the GPU from a mesh prepared there: the CPU's voxels, by the
 * parity rule (vote = 0: along raycast_parity_axis) or by the vote of the
 * three axes (vote = 1), packed to bits to cross the bus 8 times faster:
 * bit b of bits[w] is voxel 32 w + b; (nx*ny*nz + 31) / 32 words. *count
 * gets the voxels inside, *kernel_seconds the device time without the
 * transfers. */
vox_status vox_gpu_mesh_fill(vox_context *ctx, const vox_prepared_mesh *m, int vote,
                             uint32_t *bits, int64_t *count, double *kernel_seconds);

#ifdef __cplusplus
}
#endif
#endif
