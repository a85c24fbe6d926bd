/* SPDX-License-Identifier: BSD-3-Clause */
/* Geometric multigrid for the element-free Galerkin stiffness (private):
 * the V-cycle on the levels of efg_levels.h, on any backend's vectors
 * through its efg table (efg_ops.h), as the EFG loop's CG preconditioner
 * (vox_optimizer_options.efg_preconditioner = VOX_EFG_PC_MG).
 *
 * Each level but the last is smoothed by Chebyshev iteration of degree
 * `degree` on M A over [lower, 1.1] lambda_max(M A) (lower 0.1 unless the
 * caller sets it), before and after its
 * coarse correction, the same polynomial both times, so the cycle is
 * symmetric positive definite and CG stays valid: M is the cells' patches
 * (efg_patches.h) on level 0, where the MLS supports leave nearly singular
 * combinations of nodes at a void's edge, and the inverted 3 x 3 diagonal
 * blocks below. lambda_max comes from Lanczos' method in each setup (the
 * largest eigenvalue of the tridiagonal matrix of lanczos_steps conjugate
 * gradient steps on M A; Ritz values lie inside the spectrum and its ends
 * converge first, where power iteration's estimate of the same cost fell
 * short enough to make a V-cycle indefinite). The last level is solved
 * directly. */
#ifndef VOXFE_EFG_MG_H
#define VOXFE_EFG_MG_H

#include "efg_levels.h"
#include "efg_ops.h"

/* The most Lanczos steps of a bound (vox_efg_mg_init). */
#define VOX_EFG_MG_MAX_LANCZOS_STEPS 64

typedef struct vox_efg_mg {
  vox_backend *be;
  const vox_efg_ops *ops;
  vox_efg_device *device;
  int n_levels, degree, lanczos_steps;
  double lower; /* the Chebyshev interval's lower end, a fraction of lambda_max (0.1) */
  double lambda[VOX_EFG_MAX_LEVELS];
  int bounded; /* lambda holds estimates (vox_efg_mg_setup_bounds may keep them) */
  /* per level: the iterate, right-hand side, residual, M times it and the
   * Chebyshev step (level 0's x and b: the caller's z and r in apply) */
  vox_vec x[VOX_EFG_MAX_LEVELS], b[VOX_EFG_MAX_LEVELS], r[VOX_EFG_MAX_LEVELS],
      z[VOX_EFG_MAX_LEVELS], d[VOX_EFG_MAX_LEVELS], w[VOX_EFG_MAX_LEVELS];
  const vox_vec *b0;
  vox_vec *x0;
} vox_efg_mg;

/* The cycle's vectors on the backend, for levels lv whose tables the
 * device holds (ops->mg_create). */
vox_status vox_efg_mg_init(vox_efg_mg *mg, vox_backend *be, const vox_efg_ops *ops,
                           vox_efg_device *device, const vox_efg_levels *lv, int degree,
                           int lanczos_steps);
void vox_efg_mg_free(vox_efg_mg *mg);

/* The levels for the device's K (after its assembly): the Galerkin
 * products and, with `factor` (or at the first call), the last level's
 * factor (ops->mg_setup), else the factor of an earlier call kept, also
 * with `factor` where drift > 0 and the level's diagonal has moved by no
 * more than drift since it was made (*made: 1 where made now); then
 * (after the patches' factor) the smoothers' bounds, estimated with
 * `estimate` (or at the first call), else those of an earlier call kept,
 * with the factor finishing beside them where the backend runs it so
 * (ops->mg_setup_wait); two calls, so that the caller may time each. A
 * kept factor leaves the V-cycle symmetric positive definite; kept bounds
 * may fall short of the new operator's lambda_max (the caller redoes a
 * solve that breaks down with them). */
vox_status vox_efg_mg_setup_levels(vox_efg_mg *mg, int factor, double drift, int *made);
vox_status vox_efg_mg_setup_bounds(vox_efg_mg *mg, int estimate);

/* z = one V-cycle from zero for r. */
vox_status vox_efg_mg_apply(vox_efg_mg *mg, const vox_vec *r, vox_vec *z);

#endif
