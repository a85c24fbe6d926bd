/* SPDX-License-Identifier: BSD-3-Clause */
/* Preconditioners as objects (private), and the multigrid cycle written
 * once over a level interface.
 *
 * A preconditioner is set up from its operator (apart from its use, so
 * that a sequence of solves with one operator sets it up once), applied
 * (z = M^-1 r, on the vectors of the solver it serves) and destroyed.
 * The ones there are: Jacobi and geometric multigrid on the box
 * (fem.c, multigrid.h: vox_solver_options' multigrid fields), the bone's
 * sparse hierarchy (sparse_solve.c: vox_sparse_pc_options) and the
 * periodic cell solver's levels (cell_solver.c). */
#ifndef VOXFE_PC_H
#define VOXFE_PC_H

#include "backend_ops.h"

typedef struct vox_pc_ops {
  const char *name;
  /* After the operator changed: what the preconditioner derives from it
   * (NULL: nothing). */
  vox_status (*setup)(void *self);
  /* z = M^-1 r; r and z are vectors of the solver's kind (vox_vec on the
   * box, vox_vec on the bone; NULL where the solver keeps them inside the
   * backend, as the cell solver does). M is symmetric positive definite
   * on the free dofs, as conjugate gradients require. */
  vox_status (*apply)(void *self, const void *r, void *z);
  void (*destroy)(void *self); /* NULL: owned elsewhere */
} vox_pc_ops;

typedef struct vox_pc {
  const vox_pc_ops *ops;
  void *self;
} vox_pc;

static inline vox_status vox_pc_apply(const vox_pc *pc, const void *r, void *z) {
  return pc->ops->apply(pc->self, r, z);
}
static inline vox_status vox_pc_setup(const vox_pc *pc) {
  return pc->ops->setup ? pc->ops->setup(pc->self) : VOX_OK;
}
static inline void vox_pc_destroy(vox_pc *pc) {
  if (pc->ops && pc->ops->destroy) pc->ops->destroy(pc->self);
  pc->ops = NULL, pc->self = NULL;
}

/* Jacobi on backend vectors: z = inv_diag .* r. */
typedef struct vox_pc_jacobi {
  vox_backend *be;
  const vox_vec *inv_diag;
} vox_pc_jacobi;
vox_pc vox_pc_jacobi_make(vox_pc_jacobi *jacobi, vox_backend *be, const vox_vec *inv_diag);

/* The levels of a multigrid hierarchy, as its cycle sees them: each level
 * l has its own right-hand side b_l and iterate x_l (level 0's those of
 * the cycle's caller), which the hooks know. */
typedef struct vox_mg_level_ops {
  /* x_l = smoothing of A_l x = b_l from x_l = 0, or with warm from the
   * x_l there (a W-cycle's second visit) */
  vox_status (*presmooth)(void *self, int l, int warm);
  /* b_(l+1) = R (b_l - A_l x_l) */
  vox_status (*restrict_residual)(void *self, int l);
  /* x_l = A_l^-1 b_l on the coarsest level */
  vox_status (*coarse_solve)(void *self, int l);
  /* x_l += P x_(l+1) */
  vox_status (*prolong)(void *self, int l);
  /* the pre-smoother's transpose (the same smoother, or the sweeps in the
   * opposite order), so that the cycle is symmetric */
  vox_status (*postsmooth)(void *self, int l);
} vox_mg_level_ops;

/* Visits of level l per visit of the level above in a W-cycle (w) or a
 * V-cycle: 2 from level 2 on, the coarsest level (solved exactly) and
 * level 1 (the largest coarse level, where a visit costs most) once. */
static inline int vox_multigrid_visits(int w, int l, int n_levels) {
  return w && l >= 2 && l < n_levels - 1 ? 2 : 1;
}

/* One cycle from level 0 down to level n_levels - 1 and back: level l + 1
 * cycled visits[l + 1] times per visit of level l (NULL, or 1 everywhere:
 * a V-cycle; 2 below some level: a W-cycle), each visit after the first
 * from the iterate of the one before. */
vox_status vox_multigrid_cycle(const vox_mg_level_ops *ops, void *self, int n_levels,
                        const int *visits);

#endif
