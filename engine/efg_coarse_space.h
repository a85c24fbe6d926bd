/* SPDX-License-Identifier: BSD-3-Clause */
/* The first coarse level of the element-free Galerkin multigrid
 * (efg_multigrid.h) on fixed aggregates (private): the field nodes grouped
 * by blocks of a x a x a grid lines, the voxel grid's geometric
 * coarsening, in place of an aggregation of K's graph.
 *
 * What depends on the nodes only is built once: the aggregates, the
 * tentative prolongator T (the rigid-body modes of each aggregate's nodes
 * about its centroid, orthonormalised: sparse_aggregation.h) and the
 * pattern of the smoothed prolongator P = T - s W K T, which is that of
 * K T (a node's row holds the aggregates of the nodes K couples it to),
 * with the position of each block of K in it. A design iteration changes
 * K's values only, so each setup fills P's values in one pass over K's
 * blocks (T has one 3 x 6 block a row, so K T costs about what a product
 * K x does) and forms A_1 = P^T K P.
 *
 * Why blocks of the grid and not K's graph: a shape function's support
 * spans a few node distances, so K couples each node to about a hundred
 * others; standard aggregation of the strong couplings coarsens the
 * paper's cantilever only 2.7 times (its coarse level is then as costly as
 * K and its Galerkin product most of the setup), while blocks of 3 x 3 x 3
 * nodes coarsen it about 22 times with coarse functions as wide as the
 * supports. The node graph never changes, so neither do the aggregates. */
#ifndef VOXFE_EFG_COARSE_SPACE_H
#define VOXFE_EFG_COARSE_SPACE_H

#include "sparse_bsr.h"

typedef struct vox_efg_coarse_space {
  size_t n_nodes, n_agg;
  int32_t *agg;       /* n_nodes: the aggregate of each node */
  vox_bsr t;          /* T: n_nodes x n_agg blocks of 3 x 6, one a row */
  double *b1;         /* 6 x 6 per aggregate: the coarse near-null space */
  double *pos1;       /* 3 per aggregate: the centroids */
  uint8_t *dead1;     /* per aggregate, bit c: coarse dof c dropped */
  vox_bsr p;          /* P's pattern (its values refilled by each setup) */
  size_t *k_to_p;     /* per block of K: the block of P that K_ij T_j adds to */
  size_t *t_to_p;     /* per node: the block of P that holds T's */
} vox_efg_coarse_space;

/* The aggregates of the n nodes at grid lines coord (3 a node) by blocks
 * of `edge` lines along each axis, T from the nodes' positions pos (3 a
 * node) and P's pattern from K's (3 x 3 blocks, n x n). */
vox_status vox_efg_coarse_space_build(vox_context *ctx, const vox_bsr *k, const double *pos,
                                      const int32_t *coord, int edge, vox_efg_coarse_space *cs);
void vox_efg_coarse_space_free(vox_efg_coarse_space *cs);

/* P = T - scale W (K T) for this K (the pattern's own, values only) and W
 * (the inverted 3 x 3 diagonal blocks of K, one block a row) into p, a
 * new matrix with the pattern's arrays copied. */
vox_status vox_efg_coarse_space_prolongator(vox_context *ctx, const vox_efg_coarse_space *cs,
                                            const vox_bsr *k, const vox_bsr *w, double scale,
                                            vox_bsr *p);

#endif
