/* SPDX-License-Identifier: BSD-3-Clause */
/* The periodic cell problems K u = f of homogenization in single precision
 * with little memory (private), after Zhang et al. 2023's solver: conjugate
 * gradients in float preconditioned by one V-cycle of symmetric 8-colour
 * block Gauss-Seidel smoothing, the two finest levels matrix-free (level 1
 * through the Galerkin sums of its children's element matrices), the load
 * computed where it is used, and a dense pseudo-inverse on the coarsest
 * level for the rigid translations. The fine level holds three float
 * vectors (CG's r and p, the V-cycle's z, which is also CG's q), 12 bytes
 * a dof where the solver of fem.c holds 8 doubles (64 bytes a dof): CG
 * accumulates the solution into the half-precision field itself, which it
 * never reads back during the iteration (its rounding is the field's own,
 * not the solver's), and the V-cycle restricts its residual slab by slab
 * of z-planes (about 1/16 of a level's) without holding it whole. Every
 * step is a backend operation (cell_ops.h). */
#ifndef VOXFE_CELL_SOLVER_H
#define VOXFE_CELL_SOLVER_H

#include "cell_ops.h"

typedef struct vox_cell_solver {
  vox_backend *be;
  vox_cell *cell;     /* the backend's part */
  vox_cell_desc desc; /* (its matrices NULL: the backend keeps its copies) */
  int held;           /* the backend's hierarchy is allocated (not released) */
  int built;          /* and made from the current moduli */
  double *coarsest;   /* host work of the pseudo-inverse (doubles, n^2) */
  float *stencil;     /* host copy of the coarsest stencil */
} vox_cell_solver;

/* The levels of the cell solver for a periodic grid into dims (its count
 * returned), or 0 when the grid does not suit it: every level down to the
 * third must have even sizes, and coarsening must reach a coarsest level
 * of at most VOX_CELL_COARSEST_DOFS dofs. */
enum { VOX_CELL_COARSEST_DOFS = 800 };
int vox_cell_solver_levels(const vox_grid *grid, vox_cell_dims dims[VOX_CELL_MAX_LEVELS]);

/* *out = NULL (and VOX_OK) where the backend has no cell operations or the
 * grid does not suit (vox_cell_solver_levels); ke: the fine element matrix
 * of unit modulus. */
vox_status vox_cell_solver_create(vox_backend *be, const vox_grid *grid, const double ke[576],
                                  vox_cell_solver **out);
/* The same with restrict_residual's slabs of `slab` coarse planes (0: the
 * default, vox_cell_slab), for tests of their bounds. */
vox_status vox_cell_solver_create_slab(vox_backend *be, const vox_grid *grid, const double ke[576],
                                       int slab, vox_cell_solver **out);
void vox_cell_solver_destroy(vox_cell_solver *cs);
/* Frees the backend's hierarchy between solves (all of
 * vox_cell_solver_bytes but vox_cell_solver_kept_bytes: the fine moduli in
 * float); the next solve makes it again. A phased optimization
 * (VOX_CELL_SOLVER_PHASED) gives the device to its per-element state so. */
void vox_cell_solver_release(vox_cell_solver *cs);
/* After the element moduli changed: their float copy (released or not; the
 * caller may then free its own), the hierarchy made from it by the next
 * solve. */
vox_status vox_cell_solver_set_moduli(vox_cell_solver *cs, const vox_vec *moduli);
/* The same and the hierarchy now: the coarse stencils and the coarsest
 * pseudo-inverse. */
vox_status vox_cell_solver_update(vox_cell_solver *cs, const vox_vec *moduli);
/* Solves for the unit strain with Ke chi = kchi (unit modulus), starting
 * from and updating in place the half-precision field u (the fem's layout), to
 * options->rtol in at most options->max_iterations CG iterations (one
 * V-cycle each). scale2: the square of the load's scale (homogenize.c); a
 * load below VOX_CELL_ZERO_LOAD of it is float rounding, not a load (a
 * uniform cell's), and is taken as zero (u = 0). */
#define VOX_CELL_ZERO_LOAD 1e-5
vox_status vox_cell_solver_solve(vox_cell_solver *cs, const double kchi[24], double scale2,
                                 const vox_solver_options *options, vox_vec *u,
                                 vox_solve_result *result);
/* The same from a guess u that may be farther from the solution than rest:
 * where its residual is no smaller than the load's, u = 0 first (*from_rest
 * 1; the one product more then). */
vox_status vox_cell_solver_solve_guess(vox_cell_solver *cs, const double kchi[24], double scale2,
                                       const vox_solver_options *options, vox_vec *u,
                                       vox_solve_result *result, int *from_rest);
/* Bytes the cell solver of a grid allocates on the backend, 0 where it
 * would not be used. */
double vox_cell_solver_bytes(const vox_backend *be, const vox_grid *grid);
/* Of those, the bytes a released cell solver keeps (its fine moduli). */
double vox_cell_solver_kept_bytes(const vox_backend *be, const vox_grid *grid);

#endif
