/* SPDX-License-Identifier: BSD-3-Clause */
/* The adjoint problem of a mechanism solved on a second device, in a thread
 * of its own, while the state is solved on the first (Martinez-Frutos et al. 2017 solves the
 * two on two K40s). The worker thread owns its backend, the model's FE
 * system there and the adjoint; only the moduli go to it and the adjoint
 * comes back, through the host (private). */
#ifndef VOXFE_ADJOINT_WORKER_H
#define VOXFE_ADJOINT_WORKER_H

#include "backend_ops.h"
#include "voxfe/solver.h"

typedef struct vox_adjoint_worker vox_adjoint_worker;

/* Starts the thread and builds `model`'s system on the device of kind
 * `device` and index `index` there; returns when it is ready (or failed: the
 * message is on ctx). `primary` is the backend the optimizer runs on. */
vox_status vox_adjoint_worker_create(vox_context *ctx, vox_backend *primary,
                                     const vox_model *model, vox_device device, int index,
                                     vox_adjoint_worker **out);
/* Stops the thread and frees everything; NULL is fine. */
void vox_adjoint_worker_destroy(vox_adjoint_worker *worker);

/* Hands the element moduli (a vector of the primary backend) to the worker,
 * which solves K v = l at them; returns at once. */
vox_status vox_adjoint_worker_start(vox_adjoint_worker *worker, const vox_vec *moduli,
                                    const vox_vec *v, const vox_solver_options *options);
/* Waits for the solve and puts its adjoint into v (primary backend). */
vox_status vox_adjoint_worker_finish(vox_adjoint_worker *worker, vox_vec *v,
                                     vox_solve_result *result);

#endif
