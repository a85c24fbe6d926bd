/* SPDX-License-Identifier: BSD-3-Clause */
/* The objective of a topology optimization on a backend (private): which
 * state (and adjoint) problems it solves, its value, and the element
 * energies from which the SIMP kernels make its sensitivities (Martinez-Frutos et al. 2017
 * eq. 5 to 8). The optimizer loop (optimizer.c) is written against this and
 * does not know which objective it minimises.
 *
 *   compliance          f = sum_c w_c f_c.u_c,   self-adjoint (u* = u)
 *   output_displacement f = -l.u,                adjoint K v = l, u* = -v
 *
 * Both give df/drho_e = -(dm_e/drho_e) energy_e with m_e the element modulus,
 * so that simp_sensitivity turns energy into the derivative:
 *   compliance: energy_e = sum_c w_c u_c,e' Ke u_c,e
 *   mechanism:  energy_e = -v_e' Ke u_e
 * Springs to ground do not depend on the density and add nothing. */
#ifndef VOXFE_OBJECTIVE_H
#define VOXFE_OBJECTIVE_H

#include "adjoint_worker.h"
#include "fem.h"

typedef struct vox_objective_state vox_objective_state;

/* What an objective allocates on its backend. */
typedef struct vox_objective_shape {
  vox_objective kind;
  int n_cases;       /* its states (load cases) */
  int unit_weights;  /* every case weighs 1 */
  size_t n_dofs, n_elements;
  int start_history; /* earlier states kept per case (options.start_history;
                        none where values are prescribed) */
} vox_objective_shape;

/* Its backend memory (layout.h): a state per case, a mechanism's adjoint
 * and its work vector, the element energies of the other state (an
 * adjoint's, or the cases' when they are weighted), and the cases'
 * earlier states (made on the first evaluation, through
 * vox_ksp_history_layout). obj NULL: counted only; else the vectors but
 * the histories are made at obj's. */
void vox_objective_layout(const vox_objective_shape *shape, vox_objective_state *obj,
                          vox_layout *l);

/* Vectors for the objective of `model` on fem's backend. State vectors start
 * at the model's displacement when it has one (a warm start). */
vox_status vox_objective_create(vox_context *ctx, vox_fem *fem, const vox_model *model,
                                vox_objective_state **out);
void vox_objective_destroy(vox_objective_state *obj);

/* From now on the adjoint is solved by `worker` (on another device, at the
 * same time as the state) instead of after the state; the objective owns the
 * worker (and frees it at once when it has no adjoint). */
vox_status vox_objective_use_adjoint_worker(vox_objective_state *obj, vox_adjoint_worker *worker);

/* 1 when the objective needs an adjoint solve besides the state. */
int vox_objective_has_adjoint(const vox_objective_state *obj);

/* At fem's current moduli: solves the state problems (and, when `energy` is
 * not NULL, the adjoint), sets *value to the objective and fills `energy`
 * (elements) as above. cg_iterations sums every solve's iterations; a
 * solve that did not converge is reported in *failed (reason < 0), the
 * first one if several. */
vox_status vox_objective_evaluate(vox_objective_state *obj, const vox_solver_options *options,
                                  vox_vec *energy, double *value, int *cg_iterations,
                                  vox_solve_result *failed);

/* The state of load case c (the displacement written to the model). */
const vox_vec *vox_objective_state_vector(const vox_objective_state *obj, int c);

#endif
