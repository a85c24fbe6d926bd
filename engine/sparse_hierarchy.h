/* SPDX-License-Identifier: BSD-3-Clause */
/* The levels of the sparse (bone-only) multigrid, built on the host from the
 * voxel labels (private). Level 0 is the model's active elements and the
 * nodes they touch; each coarser level is the voxel image at half the
 * resolution (Arbenz et al. 2014 section 3, "rediscretisation"): a coarse element is
 * active when any of its eight children is, with the mean of their moduli
 * (an absent child counts 0), and its element matrix is that of the coarse
 * voxel. With `split` (the solver's default) the levels between the finest
 * and the coarsest instead follow the bone's connectivity (sparse_split.h:
 * an element per connected piece of a coarse cell, a node per connected
 * copy of a box node). The coarsest level numbers every node of its (small)
 * box so that it can be assembled into a stencil and factored; its nodes
 * that touch no element are fixed. */
#ifndef VOXFE_SPARSE_HIERARCHY_H
#define VOXFE_SPARSE_HIERARCHY_H

#include "sparse_ops.h"
#include "voxfe/model.h"

/* (vox_sparse_level_arrays lists the arrays: keep it in step with this
 * struct) */
typedef struct vox_sparse_host_level {
  vox_grid grid;              /* the box */
  size_t n_nodes, n_elements;
  int32_t *element_nodes;     /* 4 per element (sparse_ops.h) */
  int32_t *element_nodes_x1;  /* 4 per element, split levels only (sparse_split.h) */
  int64_t *element_box;       /* box index of each element */
  uint8_t *material;          /* level 0: the label of each element */
  float *modulus;             /* coarse levels (and level 0 with moduli): per element */
  uint8_t *node_fixed;        /* per node, bits of fixed components */
  int64_t *node_box;          /* box node index of each node */
  uint64_t *parent;           /* per node, into the next level (sparse_ops.h's wide
                               * words); NULL on the last */
  size_t *element_layer_start, *node_layer_start;
  double ke[24 * 24];         /* element matrix of unit modulus of this voxel size */
} vox_sparse_host_level;

/* A level's arrays, for what handles each alike (freeing, trimming,
 * sending to MPI ranks): their addresses in the level and their bytes
 * (from its counts), in this order. */
enum {
  VOX_SPARSE_ELEMENT_NODES, VOX_SPARSE_ELEMENT_NODES_X1, VOX_SPARSE_ELEMENT_BOX,
  VOX_SPARSE_MATERIAL,      VOX_SPARSE_MODULUS,          VOX_SPARSE_NODE_FIXED,
  VOX_SPARSE_NODE_BOX,      VOX_SPARSE_PARENT,           VOX_SPARSE_ELEMENT_LAYER_START,
  VOX_SPARSE_NODE_LAYER_START,
  VOX_SPARSE_LEVEL_ARRAYS
};
void vox_sparse_level_arrays(vox_sparse_host_level *lv, void **array[VOX_SPARSE_LEVEL_ARRAYS],
                             size_t bytes[VOX_SPARSE_LEVEL_ARRAYS]);

typedef struct vox_sparse_hierarchy {
  int n_levels;
  vox_sparse_host_level *level;
  double table[256];          /* modulus of each label (level 0) */
  int32_t *box_to_node;       /* level 0: box node -> node, -1 for inactive; NULL on an
                               * MPI rank that was sent the hierarchy (vox_sparse_node_at) */
} vox_sparse_hierarchy;

/* Level 0's node at box node b, or -1 where none is: box_to_node's entry,
 * or a search in level 0's node_box, in increasing order, where the map is
 * not held. */
static inline int32_t vox_sparse_node_at(const vox_sparse_hierarchy *h, int64_t b) {
  if (h->box_to_node) return h->box_to_node[b];
  const int64_t *nb = h->level[0].node_box;
  size_t lo = 0, hi = h->level[0].n_nodes;
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (nb[mid] < b) lo = mid + 1;
    else hi = mid;
  }
  return lo < h->level[0].n_nodes && nb[lo] == b ? (int32_t)lo : -1;
}

/* A box of at most this many dofs is the coarsest level (factored densely on
 * the GPU: its two n^2 arrays stay a few MB). */
enum { VOX_SPARSE_COARSEST_DOFS = 2000 };
/* The largest coarsest box a requested number of levels may leave. */
enum { VOX_SPARSE_MAX_COARSEST_DOFS = 8000 };

/* `levels` that builds level 0 alone (the smoothed aggregation's, sparse_sa.h). */
enum { VOX_SPARSE_FINE_ONLY = -1 };

/* The coarse node indices along an axis of n fine elements that a fixed
 * fine node at index a fixes: the coarse node on it (a even), the two
 * between which it lies (a odd), or for the last fine node the coarse node
 * that interpolates it alone ((n + 1) / 2: one past it when n is odd, so
 * that a plate there fixes one coarse layer, not two). Two distinct fixed
 * fine nodes never merge into one coarse node this way, so a pin and its
 * partner keep holding the rigid rotations on every level and the coarsest
 * level stays non-singular. Returns how many. */
static inline int vox_sparse_coarse_candidates(int64_t a, int64_t n, int64_t out[2]) {
  if (a == n) {
    out[0] = (n + 1) / 2;
    return 1;
  }
  out[0] = a / 2;
  if (!(a & 1)) return 1;
  out[1] = a / 2 + 1;
  return 2;
}

/* Builds the hierarchy of an elasticity model, its fixed dofs those of the
 * model's constraints, `nu` the common Poisson ratio. `levels` 0 chooses
 * the count from the box; VOX_SPARSE_FINE_ONLY builds level 0 alone.
 * `split`: the levels between the finest and the coarsest follow the bone's
 * connectivity (sparse_split.h); else each is the plain coarse voxel image. */
vox_status vox_sparse_hierarchy_build(vox_context *ctx, const vox_model *model, double nu,
                                      int levels, int split, vox_sparse_hierarchy *h);
/* The same with each element's Young's modulus moduli[e] (a box element's,
 * as vox_solve_elasticity_moduli takes them; NULL: its material's): level
 * 0 then holds them in float, as the coarse levels do. */
vox_status vox_sparse_hierarchy_build_moduli(vox_context *ctx, const vox_model *model,
                                             const double *moduli, double nu, int levels,
                                             int split, vox_sparse_hierarchy *h);
void vox_sparse_hierarchy_free(vox_sparse_hierarchy *h);
/* Frees what a solve no longer reads once its levels are on the backend:
 * every level's arrays but level 0's node_box and node_fixed (the start
 * and the return of the displacements) and box_to_node (the loads and
 * prescribed values); the levels' grids and counts stay. A third of the
 * host memory of a bone's hierarchy, before the solve's own arrays come. */
void vox_sparse_hierarchy_trim(vox_sparse_hierarchy *h);

/* The level as a backend description. */
vox_sparse_level_desc vox_sparse_level_describe(const vox_sparse_hierarchy *h, int l);

/* The coarsest level assembled as 27 blocks of 3 x 3 per box node (the
 * stencil layout of backend_ops.h), fixed dofs as identity rows and
 * columns. `value` has n_nodes * 27 * 9 doubles. */
void vox_sparse_assemble_coarsest(const vox_sparse_hierarchy *h, double *value);

#endif
