/* SPDX-License-Identifier: BSD-3-Clause */
/* Aggregates and the tentative prolongator of smoothed aggregation
 * (private; sparse_sa.h builds the levels from them). */
#ifndef VOXFE_SPARSE_AGGREGATION_H
#define VOXFE_SPARSE_AGGREGATION_H

#include "sparse_bsr.h"

/* Columns of the near-null space: the rigid-body modes of elasticity. */
enum { VOX_SA_MODES = 6 };

/* Standard aggregation (Vanek, Mandel and Brezina; PyAMG's
 * standard_aggregation) of a graph of n nodes (CSR: the neighbours of node
 * i are adj[row_start[i] .. row_start[i+1]), which may include i): pass 1
 * makes each node whose neighbours are all unaggregated a root that takes
 * them all; pass 2 attaches each node left to the aggregate of a neighbour
 * aggregated in pass 1; pass 3 makes new aggregates of a node left and its
 * neighbours left. Nodes with skip[i] (NULL: none) take no part and are
 * nobody's neighbour; agg[i] is -1 for them. Visits the nodes in index
 * order (the box order here), so the result is the same on every run. */
vox_status vox_sa_aggregate(vox_context *ctx, size_t n, const size_t *row_start,
                            const int32_t *adj, const uint8_t *skip, int32_t *agg,
                            size_t *n_agg);

/* The tentative prolongator of n nodes of `bn` dofs (3 or 6) in n_agg
 * aggregates (agg, -1 for none): per aggregate, the near-null space rows of
 * its nodes (b: bn x 6 per node, row-major), with the rows of the dofs in
 * dead (bit c: dof c of the node; NULL none) zeroed, orthonormalised by
 * modified Gram-Schmidt (twice, for orthogonality to rounding). A column
 * that is left with less than 1e-10 of its norm depends on the ones before
 * it (an aggregate of one node has no rotations, of collinear nodes one
 * fewer) and is dropped: its column of T is zero and its coarse dof dead.
 * Returns T (n x n_agg blocks of bn x 6, one per aggregated node), the
 * coarse near-null space (the R factors: 6 x 6 per aggregate, row-major,
 * into bc) and the coarse dead bits (dead_c, one byte per aggregate). */
vox_status vox_sa_tentative(vox_context *ctx, size_t n, int bn, const int32_t *agg, size_t n_agg,
                            const double *b, const uint8_t *dead, vox_bsr *t, double *bc,
                            uint8_t *dead_c);

#endif
