/* SPDX-License-Identifier: BSD-3-Clause */
/* The smoothed-aggregation (SA) coarse levels of the sparse solver
 * (private), built on the host: vox_sparse_pc_options.coarse =
 * VOX_SPARSE_COARSE_SA (sparse_solve.c).
 * Level 0 stays the matrix-free element operator; the levels below it are
 * assembled, with 6 x 6 blocks (the six rigid-body modes of an aggregate
 * per coarse node):
 *
 * - aggregates of the level's nodes that follow its connectivity (two fine
 *   nodes are neighbours when they share an element, two coarse ones when
 *   their block of A is stored), by standard aggregation;
 * - the tentative prolongator T: per aggregate the rigid-body modes (3
 *   translations, 3 rotations about the aggregate's centroid, in voxel
 *   units) on its free dofs, orthonormalised (sparse_aggregation.h), the
 *   R factors the next level's near-null space;
 * - P = (I - omega W A) T, W the inverted 3 x 3 (level 0) or 6 x 6 diagonal
 *   blocks, omega = 4/3 over lambda_max(W A) (power method);
 * - A_{l+1} = P^T A_l P, level 0's product from its elements
 *   (sparse_sa_fine.h), dead coarse dofs (dropped modes) an identity row;
 * - until a level has at most max_coarse_dofs dofs, whose A is inverted
 *   densely (LAPACK's Cholesky) for the coarsest solve.
 *
 * The levels' Chebyshev smoothers take W and the interval's upper end 1.1
 * lambda_max(W A) (the same power method), as the full-box solver's and
 * PyAMG's. docs/engine.md ("Sparse storage") has the measurements. */
#ifndef VOXFE_SPARSE_SA_H
#define VOXFE_SPARSE_SA_H

#include "sparse_bsr.h"
#include "sparse_hierarchy.h"

/* The most levels a hierarchy has, level 0 included. */
enum { VOX_SA_MAX_LEVELS = 16 };

typedef struct vox_sa_options {
  size_t max_coarse_dofs;   /* the coarsest level's at most (1000) */
  double omega;             /* prolongator smoothing's numerator (4/3) */
  int point_diagonal;       /* smooth P with the diagonal instead of the blocks */
  int power_iterations;     /* of the lambda_max estimates (20) */
  /* an assembled level 0's aggregation graph: the couplings of strength
   * at least this (strong_graph in sparse_sa.c; 0: every block stored) */
  double strength;
} vox_sa_options;

void vox_sa_options_default(vox_sa_options *o);

/* Level l's transfer to l + 1 and, for l >= 1, its operator. */
typedef struct vox_sa_level {
  size_t n_nodes;           /* block rows: fine nodes (level 0) or aggregates */
  int bn;                   /* dofs a node: 3 on level 0, 6 below */
  vox_bsr a;                /* l >= 1: A_l (dead dofs an identity row) */
  vox_bsr w;                /* l >= 1: its inverted diagonal blocks; level 0:
                               those P was smoothed with (3 x 3) */
  uint8_t *dead;            /* l >= 1: per node, bit c: coarse dof c dropped */
  double lambda_max;        /* l >= 1 (and an assembled level 0): of W A
                               (power method) */
  vox_bsr p, r;             /* l < last: prolongator to l and R = P^T */
  size_t n_aggregates;      /* l < last: nodes of level l + 1 */
  /* level 0: T and T^T and omega / lambda_max(W A), so that P = T - scale
   * W A T can be applied without storing P
   * (vox_sparse_pc_options.sa_fine_transfer) */
  vox_bsr t, tt;
  double p_scale;
  size_t scalar_nonzeros;   /* entries of A_l (level 0: of the assembled A_0) */
} vox_sa_level;

/* Seconds of the setup's parts, summed over the levels (where a device
 * port of the setup should look first). */
typedef struct vox_sa_timing {
  double aggregate;         /* the graph (level 0) and the aggregation */
  double tentative;         /* the modes and the QR of each aggregate */
  double prolongator;       /* W, lambda_max of W A, A T, P = T - omega W A T */
  double galerkin;          /* R = P^T, A P, R (A P) */
  double smoother;          /* the coarse levels' W and lambda_max */
  double coarsest;          /* the dense inverse */
} vox_sa_timing;

typedef struct vox_sa_hierarchy {
  int n_levels;             /* level 0 included */
  vox_sa_level *level;
  vox_bsr coarsest_inverse; /* A_last^-1, dense, as 6 x 6 blocks */
  double setup_seconds;
  vox_sa_timing timing;
} vox_sa_hierarchy;

/* Builds the SA levels below level 0 of a sparse hierarchy (its coarse
 * geometric levels are not read). */
vox_status vox_sa_build(vox_context *ctx, const vox_sparse_hierarchy *h,
                        const vox_sa_options *options, vox_sa_hierarchy *sa);
void vox_sa_free(vox_sa_hierarchy *sa);

/* The same levels below an assembled level 0 (square, 3 x 3 blocks, no
 * dofs fixed: the element-free Galerkin stiffness, whose supports are
 * penalties), its node graph the blocks stored and its near-null space the
 * rigid-body modes of the nodes at pos0 (3 a node, any length unit).
 * Level 0 gets P, R, W (its inverted diagonal blocks, for the smoother too)
 * and lambda_max(W A_0); A_0 is not copied. */
vox_status vox_sa_build_assembled(vox_context *ctx, const vox_bsr *a0, const double *pos0,
                                  const vox_sa_options *options, vox_sa_hierarchy *sa);

/* The level-0 near-null space of a sparse hierarchy: per node 3 x 6,
 * row-major (translations x, y, z; rotations about z, x, y), the rotations
 * about the centroid of the node's aggregate (agg; NULL: about the
 * origin), in voxels; `centre` (NULL, or 3 per aggregate) gets the
 * centroids. Exposed for the tests. */
vox_status vox_sa_rigid_modes(vox_context *ctx, const vox_sparse_host_level *lv,
                              const int32_t *agg, size_t n_agg, double *b, double *centre);

/* The rigid-body modes of n nodes at pos (3 x 6 a node, row-major, as
 * vox_sa_rigid_modes) about the centroids of their aggregates (agg; NULL:
 * about the origin), the centroids into centre (NULL: not wanted). */
vox_status vox_sa_rigid_modes_at(vox_context *ctx, size_t n, const double *pos,
                                 const int32_t *agg, size_t n_agg, double *b, double *centre);

/* The levels below a level 1 that the caller built: sa->level holds
 * VOX_SA_MAX_LEVELS zeroed levels, sa->n_levels is 2, level 0's transfer
 * (p, r, n_nodes, bn, n_aggregates) and level 1's a (6 x 6 blocks), dead
 * and n_nodes, bn are set; b1 and pos1 (level 1's near-null space, 6 x 6 a
 * node, and its nodes' positions, as vox_sa_tentative and the centroids
 * give them) are taken over. Level 1's dead dofs become identity rows;
 * the rest is vox_sa_build_assembled's. sa is freed on failure; t0 is the
 * setup's start (for setup_seconds). */
vox_status vox_sa_build_below(vox_context *ctx, const vox_sa_options *o, vox_sa_hierarchy *sa,
                              double *b1, double *pos1, double t0);

#endif
