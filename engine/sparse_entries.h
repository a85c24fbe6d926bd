/* SPDX-License-Identifier: BSD-3-Clause */
/* The model's prescribed values and one load case's forces as entries of
 * the sparse system's vectors (sparse_ops.h: vec_scatter): distinct dofs in
 * increasing order, those of nodes outside the system left out. */
#ifndef VOXFE_SPARSE_ENTRIES_H
#define VOXFE_SPARSE_ENTRIES_H

#include <stddef.h>
#include <stdint.h>

#include "sparse_hierarchy.h"
#include "voxfe/model.h"

typedef struct vox_sparse_entries {
  size_t n;
  size_t *index; /* system dofs, 3 x node + component */
  double *value;
} vox_sparse_entries;

/* The constraints' values; where two constrain one dof, the later holds
 * (as when they are written into a vector in order). The nodes are those
 * of the hierarchy's level 0 (vox_sparse_node_at). */
vox_status vox_sparse_prescribed_entries(vox_context *ctx, const vox_model *model,
                                         const vox_sparse_hierarchy *h, vox_sparse_entries *out);
/* The loads of `load_case`, those on one dof summed in order. */
vox_status vox_sparse_load_entries(vox_context *ctx, const vox_model *model,
                                   const vox_sparse_hierarchy *h, int load_case,
                                   vox_sparse_entries *out);
void vox_sparse_entries_free(vox_sparse_entries *e);

#endif
