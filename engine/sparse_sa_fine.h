/* SPDX-License-Identifier: BSD-3-Clause */
/* The fine (level-0) operator of the sparse system as the smoothed
 * aggregation's setup needs it, from the elements, without assembling it
 * (private): A_0 = sum_e m_e K_e with the fixed dofs' rows and columns
 * removed (zero), a node's row gathered from the elements around it. */
#ifndef VOXFE_SPARSE_SA_FINE_H
#define VOXFE_SPARSE_SA_FINE_H

#include "sparse_bsr.h"
#include "sparse_hierarchy.h"

typedef struct vox_sa_fine {
  const vox_sparse_host_level *level; /* level 0 of a sparse hierarchy */
  const double *table;                /* modulus of each label */
  size_t *node_start;                 /* n_nodes + 1 */
  uint32_t *node_element;             /* 8 e + corner, of each node's elements */
} vox_sa_fine;

vox_status vox_sa_fine_create(vox_context *ctx, const vox_sparse_hierarchy *h, vox_sa_fine *f);
void vox_sa_fine_free(vox_sa_fine *f);

/* The nodes that share an element with each node, itself included (the
 * pattern of A_0's block rows), ascending: CSR into *row_start, *adj. */
vox_status vox_sa_fine_graph(vox_context *ctx, const vox_sa_fine *f, size_t **row_start,
                             int32_t **adj);
/* The inverted 3 x 3 diagonal blocks of A_0 (fixed components' rows and
 * columns the identity's; `point`: their diagonals only) as a
 * block-diagonal matrix. */
vox_status vox_sa_fine_inverse_block_diagonal(vox_context *ctx, const vox_sa_fine *f, int point,
                                              vox_bsr *out);
/* out = A_0 B for B of n_nodes block rows of 3 x bc. */
vox_status vox_sa_fine_multiply(vox_context *ctx, const vox_sa_fine *f, const vox_bsr *b,
                                vox_bsr *out);
/* y = A_0 x (3 entries a node), as a vox_host_apply of a vox_sa_fine. */
void vox_sa_fine_apply(const void *f, const double *x, double *y);

#endif
