/* SPDX-License-Identifier: BSD-3-Clause */
/* The preconditioner objects' common parts (pc.h): Jacobi on backend
 * vectors and the multigrid cycle over a level interface. */
#include "pc.h"

static vox_status jacobi_apply(void *self, const void *r, void *z) {
  const vox_pc_jacobi *j = self;
  return j->be->ops->vec->mult(j->be, z, j->inv_diag, r);
}

static const vox_pc_ops jacobi_ops = {.name = "jacobi", .apply = jacobi_apply};

vox_pc vox_pc_jacobi_make(vox_pc_jacobi *jacobi, vox_backend *be, const vox_vec *inv_diag) {
  *jacobi = (vox_pc_jacobi){.be = be, .inv_diag = inv_diag};
  return (vox_pc){.ops = &jacobi_ops, .self = jacobi};
}

static vox_status cycle(const vox_mg_level_ops *ops, void *self, int l, int n_levels,
                        const int *visits, int warm) {
  if (l == n_levels - 1) return ops->coarse_solve(self, l);
  TRY(ops->presmooth(self, l, warm));
  TRY(ops->restrict_residual(self, l));
  const int n = visits ? visits[l + 1] : 1;
  for (int v = 0; v < n; v++) TRY(cycle(ops, self, l + 1, n_levels, visits, v > 0));
  TRY(ops->prolong(self, l));
  return ops->postsmooth(self, l);
}

vox_status vox_multigrid_cycle(const vox_mg_level_ops *ops, void *self, int n_levels,
                        const int *visits) {
  return cycle(ops, self, 0, n_levels, visits, 0);
}
