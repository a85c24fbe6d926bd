/* SPDX-License-Identifier: BSD-3-Clause */
/* Smoothed-aggregation algebraic multigrid for the element-free Galerkin
 * stiffness (private): a preconditioner object (pc.h) on host arrays for
 * the design loop's conjugate gradients (efg_optimize.h,
 * vox_optimizer_options.efg_preconditioner = VOX_EFG_PC_SA).
 *
 * The levels are smoothed aggregation below the assembled K: the first
 * level's aggregates blocks of the grid's nodes kept for the run
 * (efg_coarse_space.h), or K's strong graph aggregated afresh
 * (sparse_sa.h: vox_sa_build_assembled); the rigid-body modes of the
 * nodes' positions as the near-null space, P = (I - omega W A) T,
 * A_c = P^T A P, the sparse solver's levels below level 1, a dense
 * Cholesky inverse on the coarsest level. Each level is smoothed by Chebyshev
 * iteration on W A (W its inverted diagonal blocks) over
 * [0.1, 1.1] lambda_max(W A), before and after the coarse correction: the
 * same polynomial both times, so the V-cycle is symmetric positive
 * definite and CG stays valid. Unlike block Jacobi, the coarse levels carry
 * the load across void regions, where block Jacobi's CG needs a number of
 * iterations that grows with the stiffness contrast. */
#ifndef VOXFE_EFG_MULTIGRID_H
#define VOXFE_EFG_MULTIGRID_H

#include "pc.h"
#include "efg_coarse_space.h"
#include "sparse_sa.h"

/* The multigrid's constants (vox_optimizer_options' efg_sa_* fields,
 * voxfe-optimize's --efg-sa-*). */
typedef struct vox_efg_sa_options {
  /* Chebyshev degree of each level's smoothing, before and after (2): a
   * V-cycle costs about 2 degree + 3 products with K. */
  int degree;
  /* The first level's aggregates: blocks of `aggregate` x `aggregate` x
   * `aggregate` grid lines of nodes (efg_coarse_space.h), built once and
   * kept over the design iterations (3); 0 aggregates K's strong graph
   * afresh in each setup (standard aggregation). */
  int aggregate;
  /* aggregate 0 only: the strength of connection that keeps a coupling
   * in the aggregation graph (0.2). A shape function's support spans a
   * few node distances, so K couples each node to a hundred others, and
   * aggregates of all of them would leave a handful of coarse nodes; the
   * strong couplings are the near ones. */
  double strength;
} vox_efg_sa_options;

void vox_efg_sa_options_default(vox_efg_sa_options *o);

typedef struct vox_efg_sa {
  vox_context *ctx;
  const vox_bsr *k;    /* level 0, the caller's */
  const double *pos;   /* its nodes' positions, 3 a node */
  const int32_t *coord; /* its nodes' grid lines, 3 a node (aggregate > 0) */
  vox_host_apply apply0; /* y = K x */
  /* level 0's smoothing preconditioner in place of its inverted diagonal
   * blocks W (vox_efg_sa_set_smoother; NULL: W) */
  vox_host_apply smoother0;
  const void *smoother0_self;
  vox_efg_sa_options options;
  vox_efg_coarse_space cs; /* aggregate > 0: built by the first setup */
  int cs_built;
  vox_sa_hierarchy h;
  int n_vectors;       /* levels whose vectors are allocated */
  double **x, **b, **res, **d; /* per level (level 0's x and b: the caller's z and r) */
} vox_efg_sa;

/* The preconditioner of K (3 x 3 blocks) with its nodes at pos and grid
 * lines coord (NULL only with options->aggregate 0), K x by apply0 (NULL:
 * vox_bsr_apply); set up (vox_pc_setup) after every change of K's values
 * (K's pattern stays), destroyed with vox_pc_destroy. */
/* Level 0 smoothed by Chebyshev iteration on M K instead of W K, with
 * z = M r by apply(self, r, z) (symmetric positive definite; the EFG
 * loop's patches, efg_patches.h), lambda_max(M K) estimated in each setup.
 * W still smooths the prolongator. */
void vox_efg_sa_set_smoother(vox_efg_sa *sa, vox_host_apply apply, const void *self);

vox_pc vox_efg_sa_make(vox_efg_sa *sa, vox_context *ctx, const vox_bsr *k, const double *pos,
                       const int32_t *coord, vox_host_apply apply0,
                       const vox_efg_sa_options *options);

#endif
