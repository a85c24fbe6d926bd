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

/* A preconditioner: z = M^-1 r. */
typedef struct vox_pcg_preconditioner {
  vox_status (*apply)(void *self, const vox_vec *r, vox_vec *z);
  void *self;
} vox_pcg_preconditioner;

/* Jacobi: z = inv_diag .* r. */
typedef struct vox_jacobi {
  vox_backend *be;
  const vox_vec *inv_diag;
} vox_jacobi;
vox_status vox_jacobi_apply(void *self, const vox_vec *r, vox_vec *z);

/* Solves A x = b, A = op (with fixed dofs eliminated), preconditioned by pc.
 * x holds the initial guess. */
vox_status vox_pcg_solve(vox_backend *be, vox_operator *op, const vox_pcg_preconditioner *pc,
                         const vox_vec *b, vox_vec *x, const vox_solver_options *options,
                         vox_pcg_work *work, vox_solve_result *result);

#endif
