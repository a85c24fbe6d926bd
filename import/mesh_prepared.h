/* A mesh made ready for the fill on one grid (mesh_prepare.c): vertices on
 * the grid's fixed-point lattice and welded there, degenerate and repeated
 * triangles dropped, corners in canonical order, open edges counted. The CPU
 * fill (mesh_fill.c) and the GPU fill (cuda/cuda_mesh_fill.cu) both start
 * from it. Internal to libvoxfe. */
#ifndef VOXFE_MESH_PREPARED_H
#define VOXFE_MESH_PREPARED_H

#include <stdint.h>

#include "voxfe/mesh.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mesh_prepared {
  int64_t n_vertices;
  int64_t *fixed;          /* 3 * n_vertices: units of 2^-bits voxel from the origin */
  int64_t n_triangles;
  uint32_t *triangle;      /* 3 * n_triangles, corners in canonical order */
  int bits;                /* K */
  int64_t n[3];            /* the grid's elements along x, y, z */
  int64_t degenerate, duplicates, open_edges;
} mesh_prepared;

vox_status mesh_prepare(vox_context *ctx, const vox_mesh *mesh, const vox_grid *grid,
                        mesh_prepared *out);
void mesh_prepared_free(mesh_prepared *m);

/* What both preparations check and share, on the host: the triangles refer
 * to vertices that exist, the vertices are finite and near enough to the
 * grid; *bits gets the lattice's K. The errors of a bad mesh come from here,
 * the same whichever device prepares it. */
vox_status mesh_lattice(vox_context *ctx, const vox_mesh *mesh, const vox_grid *grid, int *bits);

/* The ray axis of the parity rule: the one with the fewest columns (rays),
 * on a tie the later axis (z before y before x); the CPU and the GPU must
 * take the same. */
int mesh_parity_axis(const int64_t n[3]);

/* The fill on the CPU (OpenMP); rule is PARITY or VOTE. */
vox_status mesh_fill_cpu(vox_context *ctx, const mesh_prepared *m, vox_fill_rule rule,
                         uint8_t *inside);

#ifdef VOXFE_HAVE_CUDA
/* The same preparation on the GPU (cuda/cuda_mesh_prepare.cu): the same
 * welded mesh (vertices numbered by first use, the same triangles kept, in
 * the same order and corner order) and the same counts, with `fixed` and
 * `triangle` in device memory (free with mesh_prepared_cuda_free). Sorts
 * instead of hash tables, since the GPU sorts fast, and the mesh crosses
 * the bus once, as it is read.
 * VOX_ERR_DEVICE without a device or for a mesh too large for its 32-bit
 * sorts (over 2^31 vertices or 2^29 triangles). */
vox_status mesh_prepare_cuda(vox_context *ctx, const vox_mesh *mesh, const vox_grid *grid,
                             mesh_prepared *out);
void mesh_prepared_cuda_free(mesh_prepared *m);
/* A host copy of a prepared mesh in device memory (tests compare it with
 * mesh_prepare's); free it with mesh_prepared_free. */
vox_status mesh_prepared_cuda_to_host(vox_context *ctx, const mesh_prepared *device,
                                      mesh_prepared *host);

/* The fill on the GPU from a mesh prepared there, the same voxels
 * (cuda/cuda_mesh_fill.cu), packed to
 * bits to cross the bus 8 times faster: bit b of bits[w] is voxel 32 w + b;
 * (nx*ny*nz + 31) / 32 words. *count gets the voxels inside, *kernel_seconds
 * the device time without the transfers. */
vox_status mesh_fill_cuda(vox_context *ctx, const mesh_prepared *m, vox_fill_rule rule,
                          uint32_t *bits, int64_t *count, double *kernel_seconds);
#endif

#ifdef __cplusplus
}
#endif
#endif
