/* SPDX-License-Identifier: BSD-3-Clause */
/* The EFG stiffness matrix, assembled node pair by node pair (private; Lu,
 * Gong, Zhang, Xie and Yin 2021, section 5.1, after Karatarakis et al.).
 *
 * K is a block sparse matrix of 3x3 blocks, one per interacting node pair:
 * two nodes whose supports share a Gauss point or a penalty point. Block
 *     K_ij = sum_g s_g B_i(x_g)^T D_1 B_j(x_g) + sum_p phi_i(x_p) phi_j(x_p) diag(k_p)
 * (eq. 11 and 19), the first sum over the Gauss points in both supports,
 * s_g = w_g E_g (the quadrature weight times the point's modulus, SIMP
 * applied: vox_efg_gauss_scale), D_1 the isotropic law of E = 1; the second
 * over the penalty points in both supports, k_p their springs.
 *
 * Each block row belongs to one thread, which visits node i's Gauss points
 * (its list in the order of the points) and adds each point's share into
 * the row's blocks on and above the diagonal (j >= i): every such block
 * K_ij is the reduction over the Gauss points that i and j share, written
 * by one thread, with no atomics, and the sums come out the same on any
 * number of threads. The blocks below are then copied from their mirrors
 * (K_ji = K_ij^T): half the work, and K exactly symmetric. In Voigt form
 * B_i^T D B_j = lambda g_i g_j^T + mu g_j g_i^T + mu (g_i . g_j) I with the
 * shape function gradients g, which is what is summed. */
#ifndef VOXFE_EFG_ASSEMBLY_H
#define VOXFE_EFG_ASSEMBLY_H

#include "efg_model.h"
#include "sparse_bsr.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The pattern of K: n x n blocks of 3x3 (n field nodes), columns ascending,
 * values zero. The pattern depends on the model only; the values are filled
 * again for each design. */
vox_status vox_efg_stiffness_pattern(vox_context *ctx, const vox_efg_model *efg, vox_bsr *k);

/* The values of K on its pattern, for the Gauss point factors
 * gauss_scale[g] = w_g E_g. */
vox_status vox_efg_stiffness_assemble(vox_context *ctx, const vox_efg_model *efg,
                                      const double *gauss_scale, vox_bsr *k);

/* mirror[b] = the index of block K_ji for each block b = K_ij of the
 * pattern (symmetric, columns ascending): in one pass, row j's blocks
 * left of the diagonal met in the order of their columns. 0 on success, -1
 * when a block's mirror is not in the pattern or an index passes 32 bits. */
int vox_efg_stiffness_mirror(const vox_bsr *k, uint32_t *mirror);

#ifdef __cplusplus
}
#endif
#endif
