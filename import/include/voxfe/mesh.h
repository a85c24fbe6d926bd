/* SPDX-License-Identifier: BSD-3-Clause */
/* Surface meshes to voxels: a triangle mesh read from STL, OBJ, PLY, OFF,
 * 3MF and the other formats of assimp, and the solid it bounds filled into a
 * voxel grid, a voxel counting as inside by its centre (docs/meshes.md).
 *
 * The fill is exact and deterministic: the vertices are put on a fixed-point
 * lattice of the grid (2^-K of a voxel, K up to 20), every ray/triangle test
 * is done in integers with a symbolic perturbation of the ray, so that a ray
 * through a vertex or an edge crosses exactly one of the triangles around it,
 * and the same voxels come out whatever the order or orientation of the
 * triangles, on the CPU and on the GPU. */
#ifndef VOXFE_MESH_H
#define VOXFE_MESH_H

#include <stddef.h> /* voxfe/backend.h uses size_t */
#include <stdint.h>

#include "voxfe/backend.h"
#include "voxfe/model.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct vox_mesh {
  int64_t n_vertices;
  double *vertex;        /* 3 * n_vertices coordinates, mm */
  int64_t n_triangles;
  uint32_t *triangle;    /* 3 * n_triangles vertex indices */
} vox_mesh;

/* Reads every mesh of a file through assimp (the format from the content and
 * the extension), node transforms applied, polygons triangulated, points and
 * lines dropped, identical vertices joined. VOX_ERR_IO when the file cannot
 * be read, VOX_ERR_FORMAT when assimp cannot make sense of it, it holds no
 * triangle, or a coordinate is not finite; the message names the file. */
vox_status vox_mesh_read(vox_context *ctx, const char *path, vox_mesh *mesh);
void vox_mesh_free(vox_mesh *mesh);

/* The bounding box of the vertices that triangles use. */
void vox_mesh_bounds(const vox_mesh *mesh, double min[3], double max[3]);

/* How inside is decided.
 *  PARITY: the number of crossings along a ray is odd; right for closed
 *          surfaces (every edge shared by an even number of triangles).
 *  VOTE:   rays along +x, -x, +y, -y, +z, -z each give a parity vote and a
 *          voxel is inside by a strict majority (4 of 6); a ray through a
 *          hole loses its vote on one side only, so holes, gaps and
 *          non-manifold seams of real exports cost nothing where the rays of
 *          the other axes see a closed surface.
 *  AUTO:   PARITY when the cleaned mesh is closed, VOTE otherwise. */
typedef enum vox_fill_rule { VOX_FILL_AUTO = 0, VOX_FILL_PARITY = 1, VOX_FILL_VOTE = 2 } vox_fill_rule;

/* "auto", "parity", "vote"; the parser returns -1 for anything else. */
const char *vox_fill_rule_name(vox_fill_rule rule);
int vox_fill_rule_parse(const char *text, vox_fill_rule *rule);

/* What a fill found and did. */
typedef struct vox_mesh_fill_info {
  vox_fill_rule rule;          /* PARITY or VOTE: the rule used */
  vox_device device;           /* CPU or CUDA: where it ran */
  int64_t triangles;           /* used, after cleaning */
  int64_t degenerate;          /* dropped: two corners on one vertex */
  int64_t duplicates;          /* dropped: repeats of a triangle, in either
                                  orientation */
  int64_t open_edges;          /* edges with an odd number of triangles */
  int64_t inside;              /* voxels marked */
  int fixed_point_bits;        /* K: vertices on a lattice of 2^-K voxel */
  double seconds_prepare;      /* weld, clean, fixed point */
  double seconds_fill;         /* the rays (with transfers on a GPU) */
  double seconds_device;       /* on a GPU: its kernels alone; 0 on the CPU */
} vox_mesh_fill_info;

/* Sets inside[e] to 1 for every element e of `grid` (model order, x fastest)
 * whose centre lies inside the solid the mesh bounds, 0 elsewhere. The mesh
 * may reach beyond the grid. `info` may be NULL. VOX_ERR_FORMAT when the
 * mesh lies more than 2^28 voxels from the grid (no fixed point fits). */
vox_status vox_mesh_fill(vox_context *ctx, const vox_mesh *mesh, const vox_grid *grid,
                         vox_fill_rule rule, vox_device device, uint8_t *inside,
                         vox_mesh_fill_info *info);

/* A grid around a box (mm): `voxel_size` (> 0 per axis), or, when it is NaN,
 * cubic voxels of the box's longest side / `resolution`; then `padding`
 * empty voxels on every side. The grid's cells fit the box from its min
 * corner (its origin is min - padding * h), so that the box's min corner is a
 * node. VOX_ERR_INVALID_ARGUMENT for an empty box, a bad size or a grid over
 * `max_elements`. */
vox_status vox_grid_around(vox_context *ctx, const double min[3], const double max[3],
                           const double voxel_size[3], int64_t resolution, int64_t padding,
                           int64_t max_elements, vox_grid *grid);

/* A model's grid and labels from meshes (voxfe-voxelize --mesh): the grid
 * around the design mesh and the passive solid mesh, the voxels inside the
 * design mesh labelled 1, those inside the passive solid mesh 2 (material
 * added where the design mesh has none), then those of label 1 inside the
 * passive void mesh 3. */
typedef struct vox_mesh_inputs {
  const char *design;          /* path; required */
  const char *solid;           /* path or NULL */
  const char *empty;           /* the passive void mesh: path or NULL */
  double voxel_size[3];        /* mm; NaN: from `resolution` */
  int64_t resolution;          /* voxels along the longest side of the part */
  int64_t padding;             /* empty voxels around the part */
  int64_t max_elements;        /* refuse grids larger than this */
  vox_fill_rule rule;
  vox_device device;
} vox_mesh_inputs;

/* Reads the meshes and fills `model` (vox_model_init'ed here; no materials
 * yet: vox_problem_rasterize adds them). info[0..2] (design, solid, void)
 * may be NULL. Errors name the file: VOX_ERR_IO, VOX_ERR_FORMAT (unreadable,
 * empty, not finite, no voxel inside), VOX_ERR_INVALID_ARGUMENT (grid). */
vox_status vox_model_from_meshes(vox_context *ctx, const vox_mesh_inputs *in, vox_model *model,
                                 vox_mesh_fill_info info[3]);

#ifdef __cplusplus
}
#endif
#endif
