/* Preconditioned conjugate gradients against the backend interface: it calls
 * only the operator, the Jacobi scaling, axpy-type updates (those of x and r
 * fused with r.r: cg_update) and dot products, so it runs unchanged on every
 * backend; a backend that keeps CG's scalars itself (cg_begin, cg_step,
 * cg_direction) does the same arithmetic with one wait for the host per
 * iteration. A solve that fails to converge returns VOX_OK with a reason;
 * only backend failures are errors. */
#include <math.h>
#include <string.h>

#include "pcg.h"

vox_status vox_pcg_work_create(vox_backend *be, size_t n, vox_pcg_work *w) {
  memset(w, 0, sizeof *w);
  vox_vec *v[] = {&w->r, &w->z, &w->p, &w->q};
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
    vox_status s = be->ops->vec_create(be, n, v[i]);
    if (s != VOX_OK) {
      vox_pcg_work_destroy(be, w);
      return s;
    }
  }
  return VOX_OK;
}

void vox_pcg_work_destroy(vox_backend *be, vox_pcg_work *w) {
  vox_vec *v[] = {&w->r, &w->z, &w->p, &w->q};
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
    if (v[i]->data) be->ops->vec_destroy(be, v[i]);
}

vox_status vox_jacobi_apply(void *self, const vox_vec *r, vox_vec *z) {
  const vox_jacobi *j = self;
  return j->be->ops->vec_mult(j->be, z, j->inv_diag, r);
}

vox_status vox_pcg_solve(vox_backend *be, vox_operator *op, const vox_pcg_preconditioner *pc,
                         const vox_vec *b, vox_vec *x, const vox_solver_options *options,
                         vox_pcg_work *w, vox_solve_result *result) {
  const vox_backend_ops *o = be->ops;
  double bb, rr, rz, rz_old, pq;
  memset(result, 0, sizeof *result);

  TRY(o->vec_dot(be, b, b, &bb));
  result->rhs_norm = sqrt(bb);
  if (bb == 0) {                                  /* x = 0 is exact */
    TRY(o->vec_set(be, x, 0));
    result->reason = VOX_CONVERGED_ZERO_RHS;
    return VOX_OK;
  }
  const double target = options->rtol * result->rhs_norm;

  TRY(o->op_apply(be, op, x, &w->r, 0));          /* r <- b - A x */
  TRY(o->vec_xpay(be, &w->r, -1, b));
  TRY(o->vec_dot(be, &w->r, &w->r, &rr));
  TRY(pc->apply(pc->self, &w->r, &w->z));         /* z <- M^-1 r */
  /* the backend's scalars on the device, where it has them: the same
   * iterates, one wait for the host per iteration instead of three */
  const int device_scalars = o->cg_begin && o->cg_step && o->cg_direction;
  if (device_scalars) {
    TRY(o->cg_begin(be, &w->r, &w->z, &w->p, &rz)); /* p <- z, rz kept there */
  } else {
    TRY(o->vec_copy(be, &w->p, &w->z));           /* p <- z */
    TRY(o->vec_dot(be, &w->r, &w->z, &rz));
  }

  int k = 0;
  while (sqrt(rr) > target && k < options->max_iterations) {
    if (!isfinite(rr) || !isfinite(rz)) {
      result->reason = VOX_DIVERGED_NAN;
      break;
    }
    TRY(o->op_apply(be, op, &w->p, &w->q, 0));    /* q <- A p */
    if (device_scalars) /* the step below, which leaves x and r where it stops */
      TRY(o->cg_step(be, x, &w->r, &w->p, &w->q, &pq, &rz, &rr));
    else
      TRY(o->vec_dot(be, &w->p, &w->q, &pq));
    if (!(pq > 0) || !(rz > 0)) {
      result->reason = isfinite(pq) && isfinite(rz) ? VOX_DIVERGED_INDEFINITE : VOX_DIVERGED_NAN;
      break;
    }
    if (!device_scalars) {
      const double alpha = rz / pq;
      TRY(o->cg_update(be, x, &w->r, alpha, &w->p, &w->q, &rr)); /* x += alpha p, r -= alpha q */
    }
    if (sqrt(rr) <= target) { /* converged: no preconditioner for a next step */
      k++;
      break;
    }
    TRY(pc->apply(pc->self, &w->r, &w->z));       /* z <- M^-1 r */
    if (device_scalars) {
      TRY(o->cg_direction(be, &w->r, &w->z, &w->p)); /* p <- z + beta p */
    } else {
      rz_old = rz;
      TRY(o->vec_dot(be, &w->r, &w->z, &rz));
      TRY(o->vec_xpay(be, &w->p, rz / rz_old, &w->z)); /* p <- z + beta p */
    }
    k++;
  }
  result->iterations = k;
  result->residual_norm = sqrt(rr);
  if (result->reason == 0)
    result->reason = sqrt(rr) <= target ? VOX_CONVERGED_RTOL
                     : isfinite(rr)     ? VOX_DIVERGED_MAX_ITERATIONS
                                        : VOX_DIVERGED_NAN;
  return VOX_OK;
}
