/* SPDX-License-Identifier: BSD-3-Clause */
/* Preconditioned conjugate gradients, written once (private): the loop,
 * its convergence test, its reasons and its monitor, against a small set
 * of hooks that each solver supplies for its own vectors (the box's
 * backend vectors, the bone's sparse ones, the cell solver's float ones
 * inside the backend), after PETSc's KSPSolve_CG; and the energy-minimal
 * warm start from a history of earlier solutions, on backend vectors. */
#ifndef VOXFE_KSP_H
#define VOXFE_KSP_H

#include "backend_ops.h"
#include "layout.h"
#include "pc.h"
#include "voxfe/solver.h"

/* The hooks of one solve. Each works on the solver's own x (the iterate),
 * r (its residual), z (the preconditioned residual), p (the direction)
 * and q (A p). */
typedef struct vox_ksp_ops {
  /* q = A p, and *pq = p.q where pq is not NULL */
  vox_status (*product)(void *self, double *pq);
  /* z = M^-1 r */
  vox_status (*precondition)(void *self);
  /* x += alpha p, r -= alpha q, *rr = r.r of the new r (one pass) */
  vox_status (*update)(void *self, double alpha, double *rr);
  /* *rz = r.z, then p = z + (*rz / rz_old) p; rz_old = 0 on the first
   * direction: p = z */
  vox_status (*direction)(void *self, double rz_old, double *rz);
  /* Optional: the step with its scalars kept where the vectors are, so
   * that an iteration waits for the host once: pq = p.q and, while
   * pq > 0 and rz > 0, x += alpha p, r -= alpha q with alpha = rz / pq
   * (x and r stay otherwise); returns pq, the rz it used and rr = r.r.
   * With it, product is called with pq NULL and update never, and
   * direction may leave *rz at rz_old (the next step returns the new one). */
  vox_status (*kept_step)(void *self, double *pq, double *rz, double *rr);
  /* Optional (NULL: the solve has no prescribed values, and the reaction
   * test is off): *work = g'K u for the whole field u = g + x, the work of
   * the reactions on the prescribed values g at the current iterate. */
  vox_status (*reaction)(void *self, double *work);
} vox_ksp_ops;

/* CG from an iterate x whose residual r is formed, rr = r.r, to
 * |r| <= options->rtol * rhs_norm or options->max_iterations iterations,
 * or, where options->energy_tol > 0 and start_energy is finite, until the
 * last options->cg_window steps' sum of alpha_j r_j'z_j is at most
 * energy_tol times |E_k|, E_k = start_energy + the sum over all steps.
 * Each step lowers the energy J(x) = x'Ax/2 - b'x by alpha_j r_j'z_j / 2,
 * so the window's sum is |x - x_(k-delay)|_A^2 (an estimate from below of
 * the earlier iterate's error) and E_k = -2 Pi(u_k), Pi the potential
 * energy of the whole field u = g + x (g the lift of prescribed values,
 * 0 without any): Pi(u) = Pi(g) + J(x). At the solution |E| is the strain
 * energy u'Ku where only loads (E = u'Ku = f'u, the compliance) or only
 * prescribed values act (E = -u'Ku): the test bounds the relative error
 * of that energy (Hestenes and Stiefel 1952; Strakoš and Tichý 2002;
 * Arioli 2004). start_energy = -2 Pi(u_0) = x_0'(b + r_0) - g'Kg
 * (vox_ksp_start_energy, and the lift's energy from the solver; 0 from
 * x_0 = 0 without a lift), NAN where the solver cannot tell (the test is
 * then off); or, where options->reaction_tol > 0 and ops->reaction is
 * set, until the reactions' work changed by at most reaction_tol of itself
 * over the last options->cg_window steps; result->rhs_norm is set to rhs_norm, iterations,
 * residual_norm and reason from the loop (storage, levels and
 * setup_seconds are left as they are). It stops right after the update
 * that converges: no preconditioner for a step it will not take. A solve
 * that fails to converge returns VOX_OK with its reason; only a hook's
 * failure is an error. options->monitor, where set, sees every
 * iteration's |r| (iteration 0: the start's). */
vox_status vox_ksp_cg(const vox_ksp_ops *ops, void *self, double rr, double rhs_norm,
                      double start_energy, const vox_solver_options *options,
                      vox_solve_result *result);

/* *energy = x'(b + r), the start's -2 J(x) for vox_ksp_cg (r = b - A x). */
vox_status vox_ksp_start_energy(vox_backend *be, const vox_vec *x, const vox_vec *b,
                                const vox_vec *r, double *energy);

/* ---- conjugate gradients on backend vectors (the box solver) ---- */

/* Work vectors of one solve, allocated once and reused. */
typedef struct vox_ksp_work {
  vox_vec r, z, p, q;
} vox_ksp_work;

/* The work vectors of n entries (work NULL: counted only, layout.h). */
void vox_ksp_work_layout(size_t n, vox_ksp_work *work, vox_layout *l);
vox_status vox_ksp_work_create(vox_backend *be, size_t n, vox_ksp_work *work);
void vox_ksp_work_destroy(vox_backend *be, vox_ksp_work *work);

/* Earlier solutions of one right-hand side in a sequence of solves whose
 * operator changes a little each time (the optimizer's design iterations).
 * A solve with a history starts from the combination of its initial guess
 * (the last solution) and these earlier ones that minimises the energy
 * 1/2 x'Ax - b'x of the new operator over their span: the Galerkin
 * projection of the new solution onto that span, the best start in the
 * A-norm (docs/engine.md). */
enum { VOX_KSP_HISTORY_MAX = 2 };
typedef struct vox_ksp_history {
  vox_vec v[VOX_KSP_HISTORY_MAX];
  int capacity; /* vectors allocated (0 to VOX_KSP_HISTORY_MAX) */
  int count;    /* of them holding a solution */
  int newest;   /* index of the newest; older ones follow cyclically */
} vox_ksp_history;

/* capacity 0 makes an empty history, a solve with which starts from x. */
void vox_ksp_history_layout(size_t n, int capacity, vox_ksp_history *h, vox_layout *l);
vox_status vox_ksp_history_create(vox_backend *be, size_t n, int capacity, vox_ksp_history *h);
void vox_ksp_history_destroy(vox_backend *be, vox_ksp_history *h);

/* y = A x for vox_ksp_history_start */
typedef vox_status (*vox_ksp_apply)(void *self, const vox_vec *x, vox_vec *y);

/* x <- the best start in span{x, history} (the Galerkin projection above,
 * A x by apply) and r = b - A x, for a solver whose operator is not a
 * vox_operator (the EFG stiffness); the work vectors r, q and p (n each)
 * hold the basis's products on the way, b may be none of them; the
 * guess x becomes the history's newest solution. */
vox_status vox_ksp_history_start(vox_backend *be, vox_ksp_apply apply, void *self,
                                 const vox_vec *b, vox_vec *x, vox_ksp_history *h, vox_vec *r,
                                 vox_vec *q, vox_vec *p);

/* Solves A x = b, A = op (with fixed dofs eliminated), preconditioned by
 * pc (on backend vectors), from x, or where `history` holds solutions
 * (NULL: none) from the best start in span{x, history}; the initial guess
 * x then becomes the history's newest solution, and the oldest drops out
 * (one product with A per solution in the history and a few vector
 * passes more). b = 0 gives x = 0 and VOX_CONVERGED_ZERO_RHS. The
 * backend's kept-scalar steps (cg_begin, cg_step, cg_direction) are used
 * where it has them: the same iterates, one wait for the host an
 * iteration. b may be the work vector z, which is read as b before it is
 * first written (fem.c lends it to a load that waits in host memory).
 * lift: the prescribed values g that b carries (b = f - K g on the free
 * dofs, x the correction to g), for the energy and reaction tests
 * (vox_ksp_cg); NULL without any. */
typedef struct vox_ksp_lift {
  double energy;       /* g'Kg */
  const vox_vec *load; /* f: then (K g)_f = f - b, and g'K u = g'Kg + (f - b)'x */
} vox_ksp_lift;

vox_status vox_ksp_solve(vox_backend *be, vox_operator *op, const vox_pc *pc, const vox_vec *b,
                         vox_vec *x, vox_ksp_history *history, const vox_ksp_lift *lift,
                         const vox_solver_options *options, vox_ksp_work *work,
                         vox_solve_result *result);

#endif
