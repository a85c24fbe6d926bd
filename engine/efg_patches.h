/* SPDX-License-Identifier: BSD-3-Clause */
/* Additive Schwarz on the background cells' node patches (private): a
 * preconditioner for the element-free Galerkin stiffness (efg_assembly.h)
 * that solves, for every background cell, K restricted to the 24 degrees
 * of freedom of its 8 corner nodes exactly, and adds the patches' answers:
 *     z = sum_c R_c^T (R_c K R_c^T)^-1 R_c r.
 *
 * Why patches and not K's diagonal blocks: a node just outside the solid
 * reaches into it with the tail of its shape function, so near a void the
 * MLS supports leave combinations of a few neighbouring nodes whose field
 * nearly cancels in the solid: local, nearly singular modes that no
 * diagonal scaling and no smooth coarse space sees (the small cut cells of
 * fictitious-domain methods; patch smoothers are their known cure). Block
 * Jacobi's CG count grows by thousands with the contrast there; a patch
 * holds the nodes of such a combination together and inverts it.
 *
 * The penalty points' patches (penalty_patches): a point spring of the
 * penalty method (eq. 11) ties together all the nodes of its support with a
 * stiffness alpha far above the solid's, alpha phi phi^T: a dense, nearly
 * rank-one block that no 8-node patch holds, so the CG count grows with
 * alpha. A patch per penalty point of the nodes of its support and of the
 * supports of the penalty points at its six grid neighbours solves those
 * couplings together (measured on the cantilever of Lu et al. 2021, 49,815
 * unknowns, alpha 1e4 E h, multigrid: 15 CG iterations a solve against 133
 * without over the first 6 design iterations, 30 with the point's own
 * support alone; 34 against 193 over 100). They serve as a multigrid's
 * smoother: as a preconditioner on their own (no coarse space), their
 * added overlap raises the largest eigenvalue more than they lift the
 * smallest (353 CG iterations in the first solve against 270). Their
 * sizes vary (about 34 nodes at d_max 2 on a flat support), their
 * inverses are dense, and weighted (penalty_weight): a supported node
 * lies in a dozen of them, and their overlap can set the largest
 * eigenvalue of the smoothed operator, which the multigrid's Chebyshev
 * interval spans.
 *
 * Patches of 2 x 2 x 2 cells (size 2): the 27 nodes of a block of the
 * grid's even node lines, overlapping their neighbours in one node layer,
 * instead of the cells' 8. The MLS supports (d_max 2) couple nodes up to
 * four lines apart, which an 8-node patch holds little of: on the CPU
 * (Lu et al. 2021's examples at small scale, 20 design iterations) they
 * took the multigrid's CG counts 45 %, 18 % and 40 % down (annulus,
 * cantilever, cube) with the penalty points' patches at weight 0.25, for
 * about a third more bytes a smoothing step. Their nodes that a penalty
 * point's patch holds are left to those (docs/experiments.md: the two
 * overlapping near the supports set the Chebyshev interval). They are
 * dense patches like the penalty points' (sizes vary where nodes are left
 * out), listed before them and not weighted.
 *
 * The patches overlap (an interior node lies in 8), the sum is symmetric
 * positive definite, so CG stays valid. Each cell patch's inverse is dense,
 * 24 x 24, from a Cholesky factorisation, a penalty patch's by Gauss-Jordan
 * elimination in place (no pivoting: the pivots of a symmetric positive
 * definite matrix are its Schur complements' and positive), made again for
 * every design; the products run in two passes without atomics: each
 * patch's answers, then each node's sum over its cell patches and then its
 * penalty patches in a fixed order, so any number of threads gives the
 * same bits. */
#ifndef VOXFE_EFG_PATCHES_H
#define VOXFE_EFG_PATCHES_H

#include <math.h>

#include <stddef.h>
#include <stdint.h>

#include "efg_model.h"
#include "sparse_bsr.h"

#ifdef __cplusplus
extern "C" {
#endif

#define VOX_EFG_PATCH_NODES 8
#define VOX_EFG_PATCH_DOFS 24
#define VOX_EFG_PATCH_ENTRIES (VOX_EFG_PATCH_DOFS * VOX_EFG_PATCH_DOFS)

/* The patches of a model and K's pattern, fixed for the run. */
typedef struct vox_efg_patches {
  size_t n;             /* the cells' patches: one per background cell (none with size 2) */
  size_t n_nodes;       /* field nodes */
  int32_t *node;        /* 8 per patch: its corners' field nodes, corner a = x + 2 y + 4 z */
  uint32_t *block;      /* 64 per patch: the position of K's block (node[a], node[b]) in the
                           pattern, at 8 a + b */
  int32_t *node_patch;  /* 8 per field node: 8 patch + corner of the patches that hold it, in
                           ascending order, then -1 */
  /* the dense patches, of any node set: the first n_blocks the 2 x 2 x 2
   * cells' blocks' (size 2), then the penalty points' (none without
   * penalty_patches). Patch q holds the m_q field nodes
   * penalty_node[penalty_start[q] .. penalty_start[q + 1]), ascending; a
   * slot s of that list owns the answers 3 s .. 3 s + 2 */
  size_t n_penalty; /* all dense patches, the blocks' included */
  size_t n_blocks;
  size_t *penalty_start;         /* n_penalty + 1 */
  int32_t *penalty_node;
  size_t *penalty_block_start;   /* n_penalty + 1: patch q's m_q^2 block positions from here */
  uint32_t *penalty_block;       /* K's block (node a, node b) at m a + b, or
                                    VOX_EFG_NO_BLOCK where the two do not couple (zero) */
  size_t *penalty_inverse_start; /* n_penalty + 1: patch q's (3 m_q)^2 inverse from here, after
                                    the cells' inverses */
  size_t penalty_max_dofs;       /* 3 max m_q */
  double penalty_weight;         /* the penalty points' patches' inverses' factor w (1 from
                                    vox_efg_patches_init; the blocks' are not weighted) */
  uint32_t *node_penalty_start;  /* n_nodes + 1: node i's slots node_penalty[start[i] ..
                                    start[i + 1]), ascending */
  uint32_t *node_penalty;
} vox_efg_patches;

#define VOX_EFG_NO_BLOCK UINT32_MAX

/* The patches of efg's background cells (size 1) or of its blocks of
 * 2 x 2 x 2 cells (size 2) on K's pattern, and with penalty_patches those
 * of its penalty points. Fails when K has 2^32 blocks or more, or lacks a
 * block of two corners of one cell (not a pattern of
 * vox_efg_stiffness_pattern). */
vox_status vox_efg_patches_init(vox_context *ctx, const vox_efg_model *efg, const vox_bsr *pattern,
                                int size, int penalty_patches, vox_efg_patches *p);
void vox_efg_patches_free(vox_efg_patches *p);

/* Doubles of one set of inverses: 576 a cell patch, then the dense
 * patches'. */
static inline size_t vox_efg_patches_inverse_doubles(const vox_efg_patches *p) {
  return p->n * VOX_EFG_PATCH_ENTRIES + (p->n_penalty ? p->penalty_inverse_start[p->n_penalty] : 0);
}
static inline size_t vox_efg_patches_inverse_bytes(const vox_efg_patches *p) {
  return vox_efg_patches_inverse_doubles(p) * sizeof(double);
}

/* Doubles of the answers' work space of vox_efg_patches_apply: 24 a cell
 * patch, then 3 a slot of the dense patches. */
static inline size_t vox_efg_patches_work_doubles(const vox_efg_patches *p) {
  return p->n * VOX_EFG_PATCH_DOFS + (p->n_penalty ? 3 * p->penalty_start[p->n_penalty] : 0);
}

/* How far the diagonal of a 3x3 block (row-major) has moved from ref (its
 * 3 entries when an inverse was made; 0: none made): max |a_cc / ref_c -
 * 1|, +infinity where a ratio is not a number, so that callers take plain
 * maxima and compare; on the host and on a device alike. The diagonal's
 * ratios are Rayleigh quotients of the pencil (A, A_ref), so they bound
 * the spread of the eigenvalues of A_ref^-1 A from inside; on the EFG
 * multigrid's last level they came within a few per cent of it. */
#ifdef __CUDACC__
__host__ __device__
#endif
static inline double vox_efg_diagonal_drift(const double *a, const double *ref) {
  double drift = 0;
  for (int c = 0; c < 3; c++) {
    const double m = fabs(a[4 * c] / ref[c] - 1);
    if (!(m <= drift)) drift = m == m ? m : INFINITY;
  }
  return drift;
}

/* inverse (vox_efg_patches_inverse_doubles, row-major) = the patches'
 * blocks of K's values kval (9 per block of the pattern) inverted: the
 * cells' by Cholesky's factorisation and substitution, the dense ones by
 * vox_efg_sweep_invert, the penalty points' times penalty_weight. Fails
 * with a message naming the last patch whose block is not positive
 * definite: a cell's or a block's patch by its first node, a penalty
 * patch by its penalty point. */
vox_status vox_efg_patches_factor(vox_context *ctx, const vox_efg_patches *p, const double *kval,
                                  double *inverse);

/* vox_efg_patches_factor, but where drift > 0 a cell's patch whose 24
 * diagonal entries have moved by no more than drift (relatively) since
 * its inverse was made keeps that inverse: reference holds those entries
 * (24 a cell's patch, 0 before its first inverse), updated where one is
 * made. The dense patches are made every call. */
vox_status vox_efg_patches_factor_kept(vox_context *ctx, const vox_efg_patches *p,
                                       const double *kval, double drift, double *reference,
                                       double *inverse);

/* Column c of (L L^T)^-1 into x (24 values), L the lower triangle of the
 * factored block l (row-major): L y = e_c, then L^T x = y. The host's
 * vox_efg_patch_invert and a device's kernel share it. */
#ifdef __CUDACC__
__host__ __device__
#endif
static inline void vox_efg_patch_inverse_column(const double *l, int c, double *x) {
  enum { N = VOX_EFG_PATCH_DOFS };
  for (int i = 0; i < N; i++) {
    double s = i == c ? 1 : 0;
    for (int k = 0; k < i; k++) s -= l[N * i + k] * x[k];
    x[i] = s / l[N * i + i];
  }
  for (int i = N - 1; i >= 0; i--) {
    double s = x[i];
    for (int k = i + 1; k < N; k++) s -= l[N * k + i] * x[k];
    x[i] = s / l[N * i + i];
  }
}

/* The Cholesky factorisation and inverse of one patch's block a (24 x 24,
 * row-major, overwritten) into inverse; 0 when a is not positive definite.
 * The host's arithmetic, which a device's kernel repeats. */
int vox_efg_patch_invert(double *a, double *inverse);

/* Entry (i, j) after step k of the in-place Gauss-Jordan inversion of an
 * n x n matrix a: row_k holds row k before the step divided by its
 * pivot (row_k[k] = 1 / pivot), col_k column k before the step. After the
 * steps k = 0 .. n - 1, a holds its inverse. The host's arithmetic, which
 * a device's kernel repeats. */
#ifdef __CUDACC__
__host__ __device__
#endif
static inline double vox_efg_sweep_entry(int k, int i, int j, double a, const double *row_k,
                                         const double *col_k) {
  if (i == k) return row_k[j];
  if (j == k) return -col_k[i] * row_k[k];
  return a - col_k[i] * row_k[j];
}

/* a (n x n, row-major, symmetric positive definite) inverted in place by
 * vox_efg_sweep_entry; 0 when a pivot is not positive. */
int vox_efg_sweep_invert(int n, double *a, double *row_k, double *col_k);

/* VOX_OK for q < 0, else the message that dense patch q is not positive
 * definite, naming a block's patch by its first node and a penalty
 * point's by its point (vox_efg_patches_factor's, and a device's). */
vox_status vox_efg_dense_patch_failed(vox_context *ctx, const vox_efg_patches *p, ptrdiff_t q);

/* z = sum_c R_c^T inverse_c R_c r (3 per field node each), over the cell
 * patches and the dense patches; work holds
 * vox_efg_patches_work_doubles. */
void vox_efg_patches_apply(const vox_efg_patches *p, const double *inverse, const double *r,
                           double *z, double *work);

#ifdef __cplusplus
}
#endif
#endif
