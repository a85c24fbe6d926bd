/* SPDX-License-Identifier: BSD-3-Clause */
/* Smoothed-aggregation algebraic multigrid for the element-free Galerkin
 * stiffness (private): a preconditioner object (pc.h) on host arrays for
 * the design loop's conjugate gradients (efg_optimize.h,
 * vox_optimizer_options.efg_preconditioner = VOX_EFG_PC_SA).
 *
 * The levels are the sparse solver's smoothed aggregation
 * (sparse_sa.h: vox_sa_build_assembled) below the assembled K: aggregates
 * of K's node graph, the rigid-body modes of the nodes' positions as the
 * near-null space, P = (I - omega W A) T, A_c = P^T A P, a dense Cholesky
 * inverse on the coarsest level. Each level is smoothed by Chebyshev
 * iteration on W A (W its inverted diagonal blocks) over
 * [0.1, 1.1] lambda_max(W A), before and after the coarse correction: the
 * same polynomial both times, so the V-cycle is symmetric positive
 * definite and CG stays valid. Unlike block Jacobi, the coarse levels carry
 * the load across void regions, where block Jacobi's CG needs a number of
 * iterations that grows with the stiffness contrast. */
#ifndef VOXFE_EFG_MULTIGRID_H
#define VOXFE_EFG_MULTIGRID_H

#include "pc.h"
#include "sparse_sa.h"

/* Chebyshev degree of each level's smoothing, before and after. */
enum { VOX_EFG_SA_DEGREE = 4 };
/* The aggregation's strength of connection: a shape function's support
 * spans a few node distances, so K couples each node to a hundred others,
 * and aggregates of all of them would leave a handful of coarse nodes; the
 * strong couplings are the near ones. */
#define VOX_EFG_SA_STRENGTH 0.2

typedef struct vox_efg_sa {
  vox_context *ctx;
  const vox_bsr *k;    /* level 0, the caller's */
  const double *pos;   /* its nodes' positions, 3 a node */
  vox_host_apply apply0; /* y = K x */
  double strength;     /* of the aggregation graph's couplings (vox_sa_options) */
  vox_sa_hierarchy h;
  int n_vectors;       /* levels whose vectors are allocated */
  double **x, **b, **res, **d; /* per level (level 0's x and b: the caller's z and r) */
} vox_efg_sa;

/* The preconditioner of K (3 x 3 blocks) with its nodes at pos, K x by
 * apply0 (NULL: vox_bsr_apply); set up (vox_pc_setup) after every change
 * of K's values, destroyed with vox_pc_destroy. */
vox_pc vox_efg_sa_make(vox_efg_sa *sa, vox_context *ctx, const vox_bsr *k, const double *pos,
                       vox_host_apply apply0);

#endif
