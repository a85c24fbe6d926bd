/* SPDX-License-Identifier: BSD-3-Clause */
/* The geometric multigrid levels of the element-free Galerkin stiffness
 * (private): what depends on the model only, built once on the host, for
 * the multigrid preconditioner of efg_mg.h on any backend.
 *
 * Level 0 is the field nodes. Level l + 1 takes every other grid line of
 * level l along each axis that still has two cells or more (a coarse grid
 * line 2I of the finer grid, a thin axis kept as it is); its nodes are the
 * coarse grid nodes that some node of level l interpolates from. The
 * prolongation P_l is trilinear: a node on coarse lines along every axis
 * takes its coarse node's value, one between two lines their mean, and so
 * on (weights 1, 1/2, 1/4, 1/8), the same for the three displacement
 * components. The coarse stiffness A_l+1 = P_l^T A_l P_l (Galerkin) is made
 * in two products without atomics: B = A_l P_l, each block of B the sum
 * over its coarse node's children, then A_l+1 = P_l^T B, each block the sum
 * over its row node's children; both patterns are made here. Why
 * geometric levels: on the voxel grid they coarsen 8 times a level and
 * keep each level's stencil a box of a few node lines (A_1 couples nodes
 * up to 3 coarse lines apart, deeper levels 2), where aggregating K's
 * strong couplings coarsened the paper's cantilever 2.7 times. The last
 * level (at most `dense_dofs` unknowns) is solved densely. */
#ifndef VOXFE_EFG_LEVELS_H
#define VOXFE_EFG_LEVELS_H

#include <stddef.h>
#include <stdint.h>

#include "efg_model.h"
#include "sparse_bsr.h"

#ifdef __cplusplus
extern "C" {
#endif

#define VOX_EFG_MAX_LEVELS 12
/* The most unknowns of the last level, factored densely: n^2 within a
 * LAPACK int. */
#define VOX_EFG_MAX_DENSE_DOFS 46340

/* The transfer between level l (fine) and l + 1 (coarse). */
typedef struct vox_efg_transfer {
  size_t n_fine, n_coarse;
  int32_t *parent;       /* 8 per fine node: its coarse nodes (-1: none) */
  double *parent_weight; /* 8 per fine node */
  int32_t *child;        /* 27 per coarse node: the fine nodes that take from it (-1: none) */
  double *child_weight;  /* 27 per coarse node */
  vox_bsr b;             /* the pattern of B = A_l P (n_fine x n_coarse blocks; no values) */
  vox_bsr coarse;        /* the pattern of A_l+1 = P^T B (no values) */
} vox_efg_transfer;

typedef struct vox_efg_levels {
  int n_levels;                                   /* 1 + the transfers */
  size_t n_nodes[VOX_EFG_MAX_LEVELS];             /* per level */
  vox_efg_transfer transfer[VOX_EFG_MAX_LEVELS - 1];
} vox_efg_levels;

/* The levels of efg's field nodes on K's pattern k, coarsened until a
 * level has at most dense_dofs unknowns (3 a node) or no axis has two
 * cells left; fails when that last level has more than
 * VOX_EFG_MAX_DENSE_DOFS unknowns. */
vox_status vox_efg_levels_init(vox_context *ctx, const vox_efg_model *efg, const vox_bsr *k,
                               size_t dense_dofs, vox_efg_levels *lv);
void vox_efg_levels_free(vox_efg_levels *lv);

/* The pattern of level l's matrix (l = 0: the caller's K). */
static inline const vox_bsr *vox_efg_level_pattern(const vox_efg_levels *lv, const vox_bsr *k,
                                                   int l) {
  return l == 0 ? k : &lv->transfer[l - 1].coarse;
}

/* The host's Galerkin product of transfer t: bval = the values of B on its
 * pattern for level l's values aval (on pattern a), then cval those of
 * A_l+1. Each block a sum in a fixed order. */
void vox_efg_galerkin(const vox_efg_transfer *t, const vox_bsr *a, const double *aval,
                      double *bval, double *cval);

/* rc = P^T r and x += P xc on the host (3 values a node). */
void vox_efg_restrict(const vox_efg_transfer *t, const double *r, double *rc);
void vox_efg_prolong_add(const vox_efg_transfer *t, const double *xc, double *x);

#ifdef __cplusplus
}
#endif
#endif
