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
 * The patches overlap (an interior node lies in 8), the sum is symmetric
 * positive definite, so CG stays valid. Each patch's inverse is dense, 24 x
 * 24, from a Cholesky factorisation, made again for every design; the
 * products run in two passes without atomics: each patch's 24 answers,
 * then each node's sum over its patches in a fixed order, so any number of
 * threads gives the same bits. */
#ifndef VOXFE_EFG_PATCHES_H
#define VOXFE_EFG_PATCHES_H

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
  size_t n;             /* patches: one per background cell */
  size_t n_nodes;       /* field nodes */
  int32_t *node;        /* 8 per patch: its corners' field nodes, corner a = x + 2 y + 4 z */
  uint32_t *block;      /* 64 per patch: the position of K's block (node[a], node[b]) in the
                           pattern, at 8 a + b */
  int32_t *node_patch;  /* 8 per field node: 8 patch + corner of the patches that hold it, in
                           ascending order, then -1 */
} vox_efg_patches;

/* The patches of efg's background cells on K's pattern. Fails when K has
 * 2^32 blocks or more, or lacks a block of two corners of one cell (not a
 * pattern of vox_efg_stiffness_pattern). */
vox_status vox_efg_patches_init(vox_context *ctx, const vox_efg_model *efg, const vox_bsr *pattern,
                                vox_efg_patches *p);
void vox_efg_patches_free(vox_efg_patches *p);

/* Bytes of one set of inverses (576 doubles a patch). */
static inline size_t vox_efg_patches_inverse_bytes(const vox_efg_patches *p) {
  return p->n * VOX_EFG_PATCH_ENTRIES * sizeof(double);
}

/* inverse (576 per patch, row-major) = the patches' blocks of K's values
 * kval (9 per block of the pattern) inverted, by Cholesky's factorisation
 * and substitution. Fails with a message naming the first corner node of
 * the last patch whose block is not positive definite. */
vox_status vox_efg_patches_factor(vox_context *ctx, const vox_efg_patches *p, const double *kval,
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

/* z = sum_c R_c^T inverse_c R_c r (3 per field node each); work holds 24
 * doubles a patch. */
void vox_efg_patches_apply(const vox_efg_patches *p, const double *inverse, const double *r,
                           double *z, double *work);

#ifdef __cplusplus
}
#endif
#endif
