/* SPDX-License-Identifier: BSD-3-Clause */
/* The dual method for MMA's subproblem (private; VOX_MMA_DUAL of
 * voxfe/mma.h): the m multipliers and their Newton systems on the host, the
 * passes over the variables the backend's (mma_ops.h: dual_sums,
 * dual_solution). engine/mma.c calls it in place of its `subsolv`. */
#ifndef VOXFE_MMA_DUAL_H
#define VOXFE_MMA_DUAL_H

#include "mma_ops.h"
#include "voxfe/checkpoint.h"

/* The options the dual method needs (a = 0, d > 0) where it is chosen, and a
 * known subproblem method (VOX_ERR_INVALID_ARGUMENT naming the parameter). */
vox_status vox_mma_dual_check(vox_context *ctx, const vox_mma_options *o);

/* VOX_ERR_UNSUPPORTED where the dual method is chosen and `be` has no
 * passes for it. */
vox_status vox_mma_dual_supported(vox_backend *be, const vox_mma_options *o);

/* The subproblem whose approximations, asymptotes and move limits are in v
 * and whose constraints' right-hand sides are b (m; the constraint i reads
 * gvec_i(x) - y_i <= b_i): its x into v->x, the bounds' multipliers into
 * v->xsi, v->eta, and the multipliers lam, y, their multipliers mu, the
 * constraints' slacks s (m each), z and zet as subsolv leaves them (z = 0,
 * zet = a0 as a = 0). */
vox_status vox_mma_dual_solve(vox_backend *be, vox_mma_work *w, const vox_mma_vectors *v,
                              const vox_mma_options *o, const double *b, double *lam, double *y,
                              double *mu, double *s, double *z, double *zet);

/* The subproblem method into a checkpoint (prefix + "_subproblem"), and
 * the check on a resume that a checkpoint's is this run's (one without
 * that array is of the primal-dual method's). */
vox_status vox_mma_subproblem_save(vox_context *ctx, const vox_mma_options *o, const char *prefix,
                                   vox_checkpoint *out);
vox_status vox_mma_subproblem_check(vox_context *ctx, const vox_mma_options *o,
                                    const char *prefix, const vox_checkpoint *state);

#endif
