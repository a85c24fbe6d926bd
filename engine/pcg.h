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

/* Earlier solutions of one right-hand side in a sequence of solves whose
 * operator changes a little each time (the optimizer's design iterations).
 * A solve with a history starts from the combination of its initial guess
 * (the last solution) and these earlier ones that minimises the energy
 * 1/2 x'Ax - b'x of the new operator over their span: the Galerkin
 * projection of the new solution onto that span, the best start in the
 * A-norm. On the 2:1:1 cantilever it extrapolates the design's trend:
 * docs/engine.md. */
enum { VOX_PCG_HISTORY_MAX = 2 };
typedef struct vox_pcg_history {
  vox_vec v[VOX_PCG_HISTORY_MAX];
  int capacity; /* vectors allocated (0 to VOX_PCG_HISTORY_MAX) */
  int count;    /* of them holding a solution */
  int newest;   /* index of the newest; older ones follow cyclically */
} vox_pcg_history;

/* capacity 0 makes an empty history that solves as vox_pcg_solve. */
vox_status vox_pcg_history_create(vox_backend *be, size_t n, int capacity, vox_pcg_history *h);
void vox_pcg_history_destroy(vox_backend *be, vox_pcg_history *h);

/* vox_pcg_solve from the best start in span{x, history} (above); the
 * initial guess x then becomes the history's newest solution, and the
 * oldest drops out. Costs one product with A per solution in the history
 * and a few vector passes more than vox_pcg_solve. */
vox_status vox_pcg_solve_with_history(vox_backend *be, vox_operator *op,
                                      const vox_pcg_preconditioner *pc, const vox_vec *b,
                                      vox_vec *x, vox_pcg_history *history,
                                      const vox_solver_options *options, vox_pcg_work *work,
                                      vox_solve_result *result);

#endif
