/* SPDX-License-Identifier: BSD-3-Clause */
/* The finite element system of a voxel model on a backend (private), linear
 * elasticity or heat conduction after the model's physics: operator, element
 * moduli, Dirichlet elimination, the load
 * vectors of every load case, and the solve. */
#ifndef VOXFE_FEM_H
#define VOXFE_FEM_H

#include "backend_ops.h"
#include "multigrid.h"
#include "ksp.h"
#include "voxfe/solver.h"

typedef struct vox_fem {
  vox_backend *be;
  vox_grid grid;
  size_t n_dofs, n_elements;
  int dpn;             /* dofs per node: 3 (elasticity) or 1 (heat) */
  int n_cases;
  vox_operator *op;
  vox_vec e_solid;     /* modulus (heat: conductivity) of each element's material,
                          0 for empty voxels */
  vox_vec moduli;      /* current element moduli, referenced by the operator */
  vox_vec inv_diag;    /* Jacobi preconditioner */
  vox_vec *force;      /* n_cases nodal force vectors (0 on fixed dofs) */
  vox_vec output;      /* the output vector l of a mechanism (0 on fixed dofs); n = 0 when
                          the model has no outputs */
  vox_vec lift;        /* prescribed values on fixed dofs, 0 elsewhere */
  int has_lift;        /* some prescribed value is non-zero */
  vox_vec rhs, correction;
  vox_ksp_work pcg;
  vox_multigrid *mg;   /* made on the first multigrid solve */
  double jacobi_bound; /* lambda_max(D^-1 A) <= this, for any moduli (smoother_bound.h) */
  int mg_stale;        /* the moduli changed since the last multigrid (or cell solver) setup */
  int bound_redos;     /* solves redone with fresh multigrid bounds (fem.c) */
  int storage_redos;   /* solves redone with float coarse levels (fem.c) */
  int solver_released; /* vox_fem_release_solver: no solve until vox_fem_acquire_solver */
  int forces_parked;   /* vox_fem_park_forces: the forces are in force_host */
  double **force_host; /* n_cases host vectors (the parts this process holds) */
  uint8_t *element_active; /* host: label != 0 */
} vox_fem;

/* What a fem allocates on its backend, from its model. */
typedef struct vox_fem_shape {
  const vox_grid *grid;
  int dofs_per_node;
  int n_cases;
  int lean;       /* vox_fem_create_lean: the moduli and the solid E only */
  int prescribed; /* some prescribed value is non-zero: lift, rhs, correction */
  int output;     /* a mechanism's output vector */
  int without_solver; /* the plan of a solver that takes turns: its part counted apart
                         (vox_fem_solver_layout), the solid E too (it waits with the
                         optimizer's vectors), the forces not (host memory:
                         vox_fem_park_forces) */
} vox_fem_shape;

/* The fem's backend memory (layout.h): its vectors, the CG work vectors
 * and the operator's fixed flags (a byte per dof and per node); fem NULL:
 * counted only (the memory plan), else made at fem's vectors, whose
 * `force` array has n_cases places. */
void vox_fem_layout(const vox_fem_shape *shape, vox_fem *fem, vox_layout *l);
/* Its solver's part, which vox_fem_release_solver frees: the inverse
 * diagonal and CG's four work vectors. */
void vox_fem_solver_layout(const vox_fem_shape *shape, vox_fem *fem, vox_layout *l);

/* The solver's memory off the backend between solves, for data that takes
 * turns with it (the optimizer's by turns): the inverse diagonal, CG's work
 * vectors and the multigrid's stencils and vectors (what the hierarchy
 * knows is kept: multigrid.h). vox_fem_acquire_solver makes them again and
 * refreshes them for the current moduli (vox_fem_update). A solve needs
 * the solver acquired. */
vox_status vox_fem_release_solver(vox_fem *fem);
vox_status vox_fem_acquire_solver(vox_fem *fem);
/* The load cases' forces off the backend for good, into host memory
 * (page-locked), for a run whose device memory is short (the optimizer's
 * turns): each solve lends CG's z to its force (uploaded after the
 * preconditioner's setup), and vox_fem_force_dot CG's q. One upload of a
 * force a solve and one a dot, the same iterates. Not for prescribed
 * values or periodic grids, whose forces are worked on in place. */
vox_status vox_fem_park_forces(vox_fem *fem);
/* f_c . u, from wherever the force is (a solve's work vector q with the
 * forces parked: not during a solve, nor with the solver released). */
vox_status vox_fem_force_dot(vox_fem *fem, int c, const vox_vec *u, double *out);

/* Builds the system; element moduli start at each material's E. Fails if
 * the materials in use have different Poisson ratios (one element matrix). */
vox_status vox_fem_create(vox_context *ctx, vox_backend *be, const vox_model *model,
                          vox_fem **out);
/* The same with the operator and the moduli only: no solve state (inverse
 * diagonal, CG vectors, forces) and an operator without fixed flags
 * (backend_ops.h: energies only), for a solver that keeps its own
 * (cell_solver.h); vox_fem_solve* must not be called on it. */
vox_status vox_fem_create_lean(vox_context *ctx, vox_backend *be, const vox_model *model,
                               vox_fem **out);
void vox_fem_destroy(vox_fem *fem);
/* Call after fem->moduli changed: refreshes the preconditioners (the
 * multigrid hierarchy on its next use). */
vox_status vox_fem_update(vox_fem *fem);
/* Checks solver options from the caller (message names the bad one). */
vox_status vox_solver_options_check(vox_context *ctx, const vox_solver_options *options);
/* Solves load case `load_case`; u holds the initial guess (warm start). */
vox_status vox_fem_solve(vox_fem *fem, int load_case, vox_vec *u,
                         const vox_solver_options *options, vox_solve_result *result);
/* The same from the best start in span{u, history} (ksp.h): for a sequence
 * of solves of one load case, whose earlier solutions the history keeps.
 * A model with prescribed non-zero values solves as vox_fem_solve. */
vox_status vox_fem_solve_with_history(vox_fem *fem, int load_case, vox_vec *u,
                                      vox_ksp_history *history,
                                      const vox_solver_options *options,
                                      vox_solve_result *result);
/* The same for a right-hand side f (0 on fixed dofs) of the caller. */
vox_status vox_fem_solve_rhs(vox_fem *fem, const vox_vec *f, vox_vec *u,
                             const vox_solver_options *options, vox_solve_result *result);
/* The adjoint problem of a mechanism, K v = l (Martinez-Frutos et al. 2017 eq. 8 up to the
 * sign), v = 0 on the fixed dofs; v holds the initial guess. */
vox_status vox_fem_solve_adjoint(vox_fem *fem, vox_vec *v, const vox_solver_options *options,
                                 vox_solve_result *result);

#endif
