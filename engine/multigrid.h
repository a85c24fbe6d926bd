/* SPDX-License-Identifier: BSD-3-Clause */
/* Geometric multigrid preconditioner (private): the hierarchy of nested grids
 * with Galerkin coarse operators, and one V- or W-cycle as the preconditioner of
 * PCG. Host code only: every step is a backend operation. */
#ifndef VOXFE_MULTIGRID_H
#define VOXFE_MULTIGRID_H

#include "backend_ops.h"
#include "layout.h"
#include "voxfe/solver.h"

typedef struct vox_mg_level {
  vox_grid grid;
  vox_stencil *stencil;    /* NULL on level 0 (the matrix-free operator) */
  vox_vec inv_diag;        /* Jacobi scaling of the smoother */
  vox_vec b, x, r, d;      /* right-hand side, iterate, residual, work;
                              on level 0 r is lent by the caller */
  double lambda_max;       /* estimate of the largest eigenvalue of D^-1 A */
  vox_vec *cur, *other;    /* during a cycle: the iterate's vector (x or r) and the free one */
} vox_mg_level;

typedef struct vox_multigrid {
  vox_backend *be;
  vox_operator *fine;
  int dofs_per_node;
  int n_levels;
  vox_mg_level *level;
  vox_solver_options options; /* smoother, sweeps, ... */
  int *visits;              /* per level: its cycles per visit of the finer one (W: 2) */
  const vox_vec *cycle_b;   /* during a cycle: its argument (level 0's b) */
  vox_vec *cycle_x;         /* and its result (level 0's x) */
  double fine_bound;        /* an upper bound of lambda_max(D^-1 A) on level 0, or 0 */
  int setups;               /* vox_mg_setup calls since the last estimate of the coarse
                               bounds (options.mg_bound_refresh); 0: estimate at the next */
  int bounds_kept;          /* the last setup kept an earlier setup's coarse bounds */
  int full_storage;         /* the levels went back to float storage (vox_mg_full_storage) */
  int released;             /* its backend memory is freed (vox_mg_release) */
  /* The cycle recorded and replayed (options.mg_record, multigrid.c:
   * vox_mg_apply): the recording, NULL until the second cycle after a
   * setup; the cycle's argument and result it was recorded on (level 0's
   * other vectors change only at a setup, which spends it); whether a
   * cycle has run since the setup; set once a recording failed, after
   * which the cycles run op by op. */
  void *recording;
  const void *recorded_on[2];
  int cycled;
  int cannot_record;
  /* Periodic grids: the rigid translations on the coarsest level's master
   * nodes, one unit vector per component, removed from the restricted
   * residual before the coarsest solve and from its solution (Zhang et al. 2023
   * section 4.2). */
  int n_translations;
  vox_vec translation[3];
  /* 1 on every dof of the coarsest level but 0 on the held node's (hold_
   * node): the coarsest solve's answer is taken there as 0, the held
   * system's solution of the singular one, not the right-hand side that
   * its identity rows give back */
  vox_vec held_mask;
} vox_multigrid;

/* The coarsest level's most unknowns where the options do not say
 * (vox_solver_options.mg_coarse_dofs 0) nor the backend
 * (vox_multigrid_ops.coarse_dofs 0; the GPU's is this): its dense factor,
 * made again every design iteration, costs n^3 where one more level costs a
 * few kernels a cycle. At 6000 the factor took 10.5 of the 12 ms that the
 * bridge of Martinez-Frutos et al. 2017 spent setting the multigrid up each
 * design iteration on an H200 (docs/benchmarks.md). */
enum { VOX_MG_COARSE_DOFS = 2000 };

/* The coarsest level's most unknowns for these options on this backend. */
size_t vox_mg_coarse_dofs(const vox_backend *be, const vox_solver_options *options);

/* The number of levels for a grid: `requested`, or (0) coarsen while every
 * axis keeps at least 2 elements and the coarsest level has more than
 * `max_coarse_dofs` dofs. */
int vox_mg_levels_for(const vox_grid *grid, int dofs_per_node, int requested,
                      size_t max_coarse_dofs);

/* The hierarchy's backend memory (layout.h): per level below the finest a
 * stencil (in the options' precision, as the backend stores it) and its
 * inverse diagonal, b and x; r (but on level 0, the caller's) and d on
 * every level but the coarsest; the coarsest level's dense factor where the
 * backend keeps one; a periodic grid's translations. mg NULL: counted
 * only; else its vectors are made at mg's levels (already allocated). */
void vox_mg_layout(const vox_backend *be, const vox_grid *grid, int dofs_per_node,
                   const vox_solver_options *options, vox_multigrid *mg, vox_layout *l);

/* `fine_bound`: an upper bound of the fine level's Jacobi-scaled spectrum
 * (smoother_bound.h), the Chebyshev smoother's upper end there; 0 to
 * estimate it by Lanczos at every setup, as on the coarse levels. */
vox_status vox_mg_create(vox_backend *be, vox_operator *fine, const vox_grid *grid,
                         int dofs_per_node, double fine_bound, const vox_solver_options *options,
                         vox_multigrid **out);
void vox_mg_destroy(vox_multigrid *mg);
/* The same hierarchy without its backend memory (vox_mg_release's state):
 * for a run whose solver takes turns with other data, and a resumed run's
 * bounds (checkpoint.c). */
vox_status vox_mg_create_released(vox_backend *be, vox_operator *fine, const vox_grid *grid,
                                  int dofs_per_node, double fine_bound,
                                  const vox_solver_options *options, vox_multigrid **out);
/* The backend memory (stencils, the levels' vectors, a periodic grid's
 * translations) freed, and made again, while what the hierarchy knows is
 * kept: the smoother bounds and their age, and float storage where the
 * levels went back to it. A setup follows vox_mg_acquire before the next
 * cycle (the stencils hold nothing until then). */
void vox_mg_release(vox_multigrid *mg);
vox_status vox_mg_acquire(vox_multigrid *mg);
/* After the fine operator's moduli changed: Galerkin operators, diagonals,
 * smoother bounds, and the coarsest level's factorisation. `fine_inv_diag`
 * is the fine operator's inverse diagonal (owned by the caller). `work` is
 * four fine-level vectors of the caller's (the CG's r, z, p, q, so that the
 * fine level needs as little memory of its own as possible): setup
 * overwrites all four, and work[3] stays lent as the V-cycle's fine
 * residual, so every vox_mg_apply overwrites it too. CG's q qualifies: it
 * is dead between its use in the residual update and the next product. */
vox_status vox_mg_setup(vox_multigrid *mg, const vox_vec *fine_inv_diag, vox_vec *const work[4]);
/* Every level that a backend stores below float (stencil_full_storage)
 * goes back to float for good; *changed: whether any did. The hierarchy
 * needs a setup before its next use. */
vox_status vox_mg_full_storage(vox_multigrid *mg, int *changed);
/* Periodic hierarchies: v -= its rigid translations (the mean of each
 * component over the fine masters), through the levels: a restriction to
 * the coarsest level, three dot products and a prolongation. Overwrites the
 * coarse levels' vectors (not during a V-cycle). Does nothing on other
 * grids. */
vox_status vox_mg_remove_translations(vox_multigrid *mg, vox_vec *v);
/* z = one cycle (options.mg_cycle) applied to r (z need not be zero on entry). */
vox_status vox_mg_apply(vox_multigrid *mg, const vox_vec *r, vox_vec *z);
/* Whether mg holds a recording of its cycle, which the cycles replay until
 * the next setup (options.mg_record). */
int vox_mg_recorded(const vox_multigrid *mg);

#endif
