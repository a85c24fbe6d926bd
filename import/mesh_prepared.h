/* SPDX-License-Identifier: BSD-3-Clause */
/* A mesh made ready for the fill on one grid (mesh_prepare.c): vertices on
 * the grid's fixed-point lattice and welded there, degenerate and repeated
 * triangles dropped, corners in canonical order, open edges counted. The CPU
 * fill (mesh_fill.c) and the GPU fill both start from it; the type and the
 * GPU's side are the engine's interface voxfe/device/mesh_fill.h. Internal
 * to libvoxfe. */
#ifndef VOXFE_MESH_PREPARED_H
#define VOXFE_MESH_PREPARED_H

#include <stdint.h>

#include "voxfe/device/mesh_fill.h"
#include "voxfe/mesh.h"

#ifdef __cplusplus
extern "C" {
#endif

vox_status mesh_prepare(vox_context *ctx, const vox_mesh *mesh, const vox_grid *grid,
                        vox_prepared_mesh *out);
void mesh_prepared_free(vox_prepared_mesh *m);

/* What both preparations check and share, on the host: the triangles refer
 * to vertices that exist, the vertices are finite and near enough to the
 * grid; *bits gets the lattice's K. The errors of a bad mesh come from here,
 * the same whichever device prepares it. */
vox_status mesh_lattice(vox_context *ctx, const vox_mesh *mesh, const vox_grid *grid, int *bits);

/* The same preparation on the GPU (vox_gpu_mesh_prepare after the checks of
 * mesh_lattice): `fixed` and `triangle` in device memory, freed by
 * vox_gpu_mesh_free. Sorts instead of hash tables: the CPU's 60 ms for a
 * million triangles become a few on the GPU, and the mesh crosses the bus
 * once, as it is read. */
vox_status mesh_prepare_gpu(vox_context *ctx, const vox_mesh *mesh, const vox_grid *grid,
                            vox_prepared_mesh *out);

/* The fill on the CPU (OpenMP); rule is PARITY or VOTE. */
vox_status mesh_fill_cpu(vox_context *ctx, const vox_prepared_mesh *m, vox_fill_rule rule,
                         uint8_t *inside);

#ifdef __cplusplus
}
#endif
#endif
