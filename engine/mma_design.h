/* SPDX-License-Identifier: BSD-3-Clause */
/* The method of moving asymptotes (voxfe/mma.h) as the design update of
 * vox_optimize (private): the design elements are its variables, between
 * the least density and 1; the objective's filtered gradient is scaled so
 * that the first iteration's objective has the magnitude
 * mma.objective_scale; the m constraints g_i <= 0 are normalised by the
 * caller (design_constraints.h: the volume g = V / V* - 1, V measured on
 * the physical density, a compliance g = c / c_max - 1). The work is the
 * backend's (mma_ops.h): the design elements' values are gathered from the
 * vectors per element into the method's vectors and the new design
 * scattered back, where the vectors are; only the m constraints' values
 * and the dual variables are on the host. */
#ifndef VOXFE_MMA_DESIGN_H
#define VOXFE_MMA_DESIGN_H

#include "backend_ops.h"
#include "layout.h"
#include "voxfe/checkpoint.h"
#include "voxfe/mma.h"
#include "voxfe/optimizer.h"

typedef struct vox_mma_design vox_mma_design;

/* For the design elements of the mask `design` (1 or 0 per element) and
 * m >= 1 constraints. */
vox_status vox_mma_design_create(vox_backend *be, const vox_vec *design, double rho_min,
                                 const vox_optimizer_options *opt, int m, vox_mma_design **out);
void vox_mma_design_destroy(vox_mma_design *d);

/* What it allocates on the backend for ne elements (at most ne design
 * elements) and m constraints, counted only (the memory plan). */
void vox_mma_design_layout(size_t ne, int m, vox_layout *l);

/* One MMA iteration from the design variables x with the objective's value
 * and gradient dc (with respect to x, filtered) and the m constraints'
 * values g[i] with their gradients dg_scale[i] * dg[i] (vectors per
 * element, with respect to x): the new design variables into x_new (the
 * non-design elements as in x). */
vox_status vox_mma_design_update(vox_backend *be, vox_mma_design *d, const vox_vec *x,
                                 const vox_vec *dc, double objective, const double *g,
                                 const vox_vec *const *dg, const double *dg_scale,
                                 vox_vec *x_new);

/* The largest entry of Svanberg's KKT residual at the last update's x
 * with the multipliers of the subproblem before it; -1 before the second
 * update. */
double vox_mma_design_kkt(const vox_mma_design *d);

/* The state into a checkpoint and back (after vox_mma_design_create). */
vox_status vox_mma_design_save(const vox_mma_design *d, vox_checkpoint *out);
vox_status vox_mma_design_restore(vox_mma_design *d, const vox_checkpoint *state);

/* The checkpoint's design update ("option_update"; none: OC, as the
 * checkpoints before MMA) must be opt->update. */
vox_status vox_mma_design_check_resume(vox_context *ctx, const vox_checkpoint *state,
                                       vox_design_update update);
#endif
