/* SPDX-License-Identifier: BSD-3-Clause */
/* The optimizer's checkpoints (private): what the design loop of
 * optimizer.c needs to go on after design iteration k exactly as it would
 * have, taken from the backend into a vox_checkpoint and put back. The loop
 * keeps its scalars in a vox_loop_state; the vectors are the design
 * variables, the objective's states with their solution histories and
 * adjoint (objective.h) or a periodic cell's fields (homogenize.h), and the
 * multigrid's kept smoother bounds with the
 * count that says when they are estimated next (multigrid.h). Everything
 * else of the loop is made again from these: the physical density from the
 * design variables, the moduli, the operator and the preconditioner from the
 * physical density. */
#ifndef VOXFE_OPTIMIZER_CHECKPOINT_H
#define VOXFE_OPTIMIZER_CHECKPOINT_H

#include "fem.h"
#include "homogenize.h"
#include "objective.h"
#include "voxfe/optimizer.h"

typedef struct vox_loop_state {
  int iterations;          /* design iterations of the run done (k) */
  int first_row;           /* the history's last row number before the run */
  double p, q;             /* the penalties of iteration k (continuation goes on from them) */
  double previous;         /* the objective of iteration k (the next one's change test) */
  int settled;             /* iterations in a row that met the stop tolerances */
  int total_cg_iterations; /* of the run's design iterations */
  double seconds[4];       /* the run's solve, sensitivity, filter and update times */
} vox_loop_state;

/* Before anything is allocated: the resume state of `opt` is of this
 * layout, for this model (its fingerprint) and these options (those that
 * shape the design); the message names what differs. */
vox_status vox_loop_check_resume(vox_context *ctx, const vox_model *model,
                                 const vox_optimizer_options *opt);

/* The state after design iteration loop->iterations into `out` (zeroed
 * first; the caller frees it): the objective's, or a cell's (homog not
 * NULL). */
vox_status vox_loop_save(vox_backend *be, const vox_model *model, const vox_optimizer_options *opt,
                         const vox_loop_state *loop, const vox_vec *x, vox_fem *fem,
                         vox_objective_state *objective, vox_homog *homog, vox_checkpoint *out);

/* The state of opt->resume back: the scalars into `loop`, the design
 * variables into x, the rest into the objective and the fem (after
 * vox_loop_check_resume). */
vox_status vox_loop_restore(vox_backend *be, const vox_optimizer_options *opt, vox_loop_state *loop,
                            vox_vec *x, vox_fem *fem, vox_objective_state *objective,
                            vox_homog *homog);

/* The objective's part (objective.c): the states, their solution
 * histories and a mechanism's adjoint. */
vox_status vox_objective_save(vox_objective_state *obj, vox_checkpoint *out);
vox_status vox_objective_restore(vox_objective_state *obj, const vox_solver_options *options,
                                 const vox_checkpoint *state);

/* A periodic cell's part (homogenize.c): the fields of the cases it
 * solves, the warm starts of the next design iteration's solves, as they
 * are kept (double values, or half precision's bit patterns). */
vox_status vox_homog_save(vox_homog *h, vox_checkpoint *out);
vox_status vox_homog_restore(vox_homog *h, const vox_checkpoint *state);

#endif
