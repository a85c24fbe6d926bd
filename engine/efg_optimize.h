/* SPDX-License-Identifier: BSD-3-Clause */
/* Compliance minimisation on the element-free Galerkin (EFG) discretisation
 * (private; Lu, Gong, Zhang, Xie and Yin 2021, sections 3 and 5), the loop
 * vox_optimize runs for VOX_DISCRETIZATION_EFG.
 *
 * Each design iteration: the Gauss points' densities from the nodal design
 * variables (eq. 16), K(rho) assembled node pair by node pair
 * (efg_assembly.h), K u = f solved by the one conjugate-gradient loop
 * (ksp.h) with a 3x3 block Jacobi, the cells' patches (efg_patches.h), a
 * geometric multigrid (efg_mg.h) or a smoothed-aggregation multigrid
 * preconditioner (efg_multigrid.h), starting from the last
 * iteration's u; the compliance f^T u and its node-wise sensitivities
 * (efg_sensitivity.h); the optimality-criteria update of eq. 21-22 with the
 * volume multiplier found by bisection. The continuation of the SIMP
 * penalty, the move limit, the damping and the stopping rule are the FE
 * path's (vox_optimizer_options).
 *
 * On the CPU everything is on host arrays with OpenMP. On a device backend
 * (vox_backend_ops.efg, efg_ops.h: the CUDA one) the Gauss points'
 * densities, the node-pair assembly, the preconditioner, the solves and the
 * node-wise sensitivities run on the backend's vectors, with the same CG
 * loop; the nodal densities go there and the sensitivities come back each
 * design iteration (3 doubles a node), and the OC update and the design's
 * numbers stay on the host, as on the CPU. The geometric multigrid runs
 * this way on the CPU backend too (its table); the smoothed-aggregation
 * preconditioner is host-only and refused there. */
#ifndef VOXFE_EFG_OPTIMIZE_H
#define VOXFE_EFG_OPTIMIZE_H

#include "efg_model.h"
#include "pc.h"
#include "sparse_bsr.h"
#include "voxfe/optimizer.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Solves K u = f (n = 3 * K's block rows) by conjugate gradients with the
 * inverses of K's 3x3 diagonal blocks as the preconditioner, from the u
 * given (the warm start), to options->rtol or options->max_iterations.
 * `inverse` holds those inverses (vox_efg_block_jacobi). A solve that does
 * not converge returns VOX_OK with its reason in result. */
vox_status vox_efg_cg(const vox_bsr *k, const vox_bsr *inverse, const double *f, double *u,
                      const vox_solver_options *options, vox_solve_result *result);

/* vox_efg_cg with the preconditioner pc (pc.h, on host arrays of K's
 * size; set up for this K): block Jacobi or the smoothed-aggregation
 * multigrid (efg_multigrid.h). A preconditioner's error is returned. */
vox_status vox_efg_cg_pc(const vox_bsr *k, const vox_pc *pc, const double *f, double *u,
                         const vox_solver_options *options, vox_solve_result *result);

/* y = K x for the assembled stiffness (a vox_host_apply on its vox_bsr). */
void vox_efg_stiffness_apply(const void *k, const double *x, double *y);

/* The inverses of K's diagonal blocks (out is allocated here, freed with
 * vox_bsr_free); fails naming the node whose block is not definite. */
vox_status vox_efg_block_jacobi(vox_context *ctx, const vox_bsr *k, vox_bsr *out);

/* The refusals of what the EFG loop does not support, one message each:
 * a backend without EFG operations, the smoothed-aggregation
 * preconditioner off the CPU, heat conduction, a mechanism's output displacement, a
 * periodic cell objective or grid, symmetry, an initial design, checkpoints
 * and resuming, a density lower bound of 0. */
vox_status vox_efg_optimize_check(vox_context *ctx, vox_backend *be, const vox_model *model,
                                  const vox_optimizer_options *options);

/* vox_optimize for options->discretization VOX_DISCRETIZATION_EFG (the
 * options resolved and checked by vox_optimize). The model gets the voxel
 * density made from the final nodal densities (vox_efg_voxel_density),
 * their values per grid node (model->nodal_density), the displacement at
 * the grid nodes of the domain per load case (0 elsewhere), the history and
 * the end record, as the FE loop leaves them. The start is the model's
 * nodal densities where it has them (an EFG design to continue), else the
 * volume fraction on the design nodes. */
vox_status vox_efg_optimize(vox_context *ctx, vox_backend *be, vox_model *model,
                            const vox_optimizer_options *options, vox_optimize_result *result);

/* vox_efg_optimize with the stages on the backend's table `ops` (efg_ops.h;
 * not smoothed aggregation), or on host arrays when ops is NULL:
 * vox_efg_optimize takes the backend's table off the CPU or for the
 * geometric multigrid, and the host arrays otherwise; a test runs the
 * backend path on the CPU backend's table too. */
vox_status vox_efg_optimize_on(vox_context *ctx, vox_backend *be, const vox_efg_ops *ops,
                               vox_model *model, const vox_optimizer_options *options,
                               vox_optimize_result *result);

#ifdef __cplusplus
}
#endif
#endif
