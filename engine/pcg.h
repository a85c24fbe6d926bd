/* Preconditioned conjugate gradients, written once against the backend
 * interface (private). */
#ifndef VOXFE_PCG_H
#define VOXFE_PCG_H

#include "backend_ops.h"
#include "voxfe/solver.h"

/* Work vectors of one PCG solve, allocated once and reused. */
typedef struct vox_pcg_work {
  vox_vec r, z, p, q;
} vox_pcg_work;

vox_status vox_pcg_work_create(vox_backend *be, size_t n, vox_pcg_work *work);
void vox_pcg_work_destroy(vox_backend *be, vox_pcg_work *work);

/* Solves A x = b, A = op (with fixed dofs eliminated), preconditioned by
 * z = inv_diag .* r. x holds the initial guess. */
vox_status vox_pcg_solve(vox_backend *be, vox_operator *op, const vox_vec *inv_diag,
                         const vox_vec *b, vox_vec *x, const vox_solver_options *options,
                         vox_pcg_work *work, vox_solve_result *result);

#endif
