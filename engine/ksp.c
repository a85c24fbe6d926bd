/* SPDX-License-Identifier: BSD-3-Clause */
/* Preconditioned conjugate gradients, written once (ksp.h), and its hooks
 * on backend vectors with the warm start from a history. */
#include "ksp.h"

#include <math.h>
#include <string.h>

static void monitor(const vox_solver_options *options, int k, double rr) {
  if (options->monitor) options->monitor(options->monitor_data, k, sqrt(rr));
}

/* The energy test's window: the last `delay` steps' alpha_j r_j'z_j, whose
 * sum estimates |x - x_{k-delay}|_A^2 (ksp.h), and the energy -2 Pi(u_k)
 * they add up to. */
typedef struct energy_window {
  double step[VOX_CG_WINDOW_MAX];
  double energy;
} energy_window;

/* Adds step k's alpha r'z; whether the last `delay` steps' sum is at most
 * tol times the energy (never before `delay` steps). */
static int energy_converged(energy_window *w, int delay, int k, double alpha_rz, double tol) {
  w->step[k % delay] = alpha_rz;
  w->energy += alpha_rz;
  if (k + 1 < delay) return 0;
  double sum = 0;
  for (int j = 0; j < delay; j++) sum += w->step[j];
  return sum <= tol * fabs(w->energy);
}

vox_status vox_ksp_cg(const vox_ksp_ops *o, void *self, double rr, double rhs_norm,
                      double start_energy, const vox_solver_options *options,
                      vox_solve_result *result) {
  const double target = options->rtol * rhs_norm;
  /* the steps both tests below look back over */
  const int delay = options->cg_window < 1                   ? 1
                    : options->cg_window > VOX_CG_WINDOW_MAX ? VOX_CG_WINDOW_MAX
                                                             : options->cg_window;
  const int by_energy = options->energy_tol > 0 && isfinite(start_energy);
  energy_window window = {.energy = start_energy};
  /* the reactions' work of the last delay + 1 iterates, cyclically */
  const int by_reaction = options->reaction_tol > 0 && o->reaction;
  double work[VOX_CG_WINDOW_MAX + 1];
  double rz = 0, pq;
  result->rhs_norm = rhs_norm;
  result->reason = 0;
  monitor(options, 0, rr);
  int k = 0;
  if (by_reaction) TRY(o->reaction(self, &work[0]));
  if (sqrt(rr) > target && options->max_iterations > 0) {
    TRY(o->precondition(self));                     /* z <- M^-1 r */
    TRY(o->direction(self, 0, &rz));                /* p <- z */
  }
  while (sqrt(rr) > target && k < options->max_iterations) {
    if (!isfinite(rr) || !isfinite(rz)) {
      result->reason = VOX_DIVERGED_NAN;
      break;
    }
    if (o->kept_step) { /* the step below, which leaves x and r where it stops */
      TRY(o->product(self, NULL));                  /* q <- A p */
      TRY(o->kept_step(self, &pq, &rz, &rr));
    } else {
      TRY(o->product(self, &pq));                   /* q <- A p, p.q */
    }
    if (!(pq > 0) || !(rz > 0)) {
      result->reason = isfinite(pq) && isfinite(rz) ? VOX_DIVERGED_INDEFINITE : VOX_DIVERGED_NAN;
      break;
    }
    if (!o->kept_step) TRY(o->update(self, rz / pq, &rr)); /* x += alpha p, r -= alpha q */
    k++;
    monitor(options, k, rr);
    if (sqrt(rr) <= target) break; /* converged: no preconditioner for a next step */
    if (by_energy && energy_converged(&window, delay, k - 1, rz / pq * rz, options->energy_tol)) {
      result->reason = VOX_CONVERGED_ENERGY;
      break;
    }
    if (by_reaction) {
      TRY(o->reaction(self, &work[k % (delay + 1)]));
      const double now = work[k % (delay + 1)];
      if (k >= delay && now != 0 &&
          fabs(now - work[(k - delay) % (delay + 1)]) <= options->reaction_tol * fabs(now)) {
        result->reason = VOX_CONVERGED_REACTION;
        break;
      }
    }
    TRY(o->precondition(self));                     /* z <- M^-1 r */
    TRY(o->direction(self, rz, &rz));               /* p <- z + beta p */
  }
  result->iterations = k;
  result->residual_norm = sqrt(rr);
  if (result->reason == 0)
    result->reason = sqrt(rr) <= target ? VOX_CONVERGED_RTOL
                     : isfinite(rr)     ? VOX_DIVERGED_MAX_ITERATIONS
                                        : VOX_DIVERGED_NAN;
  return VOX_OK;
}

/* ---- backend vectors ---- */

void vox_ksp_work_layout(size_t n, vox_ksp_work *w, vox_layout *l) {
  vox_layout_vec(l, "CG: r (double, per dof)", n, VOX_DOUBLE, w ? &w->r : NULL);
  vox_layout_vec(l, "CG: z (double, per dof)", n, VOX_DOUBLE, w ? &w->z : NULL);
  vox_layout_vec(l, "CG: p (double, per dof)", n, VOX_DOUBLE, w ? &w->p : NULL);
  vox_layout_vec(l, "CG: q (double, per dof)", n, VOX_DOUBLE, w ? &w->q : NULL);
}

vox_status vox_ksp_work_create(vox_backend *be, size_t n, vox_ksp_work *w) {
  memset(w, 0, sizeof *w);
  vox_layout l;
  vox_layout_init(&l);
  vox_ksp_work_layout(n, w, &l);
  return vox_layout_create(be, &l);
}

void vox_ksp_work_destroy(vox_backend *be, vox_ksp_work *w) {
  vox_vec *v[] = {&w->r, &w->z, &w->p, &w->q};
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
    if (v[i]->data) be->ops->vec->destroy(be, v[i]);
}

void vox_ksp_history_layout(size_t n, int capacity, vox_ksp_history *h, vox_layout *l) {
  for (int i = 0; i < capacity && i < VOX_KSP_HISTORY_MAX; i++)
    vox_layout_vec(l, "earlier solutions (start history)", n, VOX_DOUBLE, h ? &h->v[i] : NULL);
}

vox_status vox_ksp_history_create(vox_backend *be, size_t n, int capacity, vox_ksp_history *h) {
  memset(h, 0, sizeof *h);
  if (capacity < 0 || capacity > VOX_KSP_HISTORY_MAX)
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT, "solution history of %d vectors: 0 to %d",
                     capacity, (int)VOX_KSP_HISTORY_MAX);
  vox_layout l;
  vox_layout_init(&l);
  vox_ksp_history_layout(n, capacity, h, &l);
  TRY(vox_layout_create(be, &l));
  h->capacity = capacity;
  return VOX_OK;
}

void vox_ksp_history_destroy(vox_backend *be, vox_ksp_history *h) {
  for (int i = 0; i < h->capacity; i++)
    if (h->v[i].data) be->ops->vec->destroy(be, &h->v[i]);
  memset(h, 0, sizeof *h);
}

/* The hooks' state on backend vectors. */
typedef struct vec_cg {
  vox_backend *be;
  vox_operator *op;
  const vox_pc *pc;
  const vox_vec *b;
  vox_vec *x;
  vox_ksp_work *w;
  const vox_ksp_lift *lift;
} vec_cg;

static vox_status vec_product(void *self, double *pq) {
  vec_cg *c = self;
  TRY(c->be->ops->op->apply(c->be, c->op, &c->w->p, &c->w->q, 0));
  return pq ? c->be->ops->vec->dot(c->be, &c->w->p, &c->w->q, pq) : VOX_OK;
}

static vox_status vec_precondition(void *self) {
  vec_cg *c = self;
  return vox_pc_apply(c->pc, &c->w->r, &c->w->z);
}

static vox_status vec_update(void *self, double alpha, double *rr) {
  vec_cg *c = self;
  return c->be->ops->vec->cg_update(c->be, c->x, &c->w->r, alpha, &c->w->p, &c->w->q, rr);
}

static vox_status vec_direction(void *self, double rz_old, double *rz) {
  vec_cg *c = self;
  const vox_backend_ops *o = c->be->ops;
  if (rz_old == 0) {
    TRY(o->vec->copy(c->be, &c->w->p, &c->w->z));
    return o->vec->dot(c->be, &c->w->r, &c->w->z, rz);
  }
  TRY(o->vec->dot(c->be, &c->w->r, &c->w->z, rz));
  return o->vec->xpay(c->be, &c->w->p, *rz / rz_old, &c->w->z);
}

/* the backend's scalars on the device, where it has them */
static vox_status kept_direction(void *self, double rz_old, double *rz) {
  vec_cg *c = self;
  const vox_backend_ops *o = c->be->ops;
  if (rz_old == 0) return o->vec->cg_begin(c->be, &c->w->r, &c->w->z, &c->w->p, rz);
  *rz = rz_old; /* the device's: the next step returns it */
  return o->vec->cg_direction(c->be, &c->w->r, &c->w->z, &c->w->p);
}

static vox_status kept_step(void *self, double *pq, double *rz, double *rr) {
  vec_cg *c = self;
  return c->be->ops->vec->cg_step(c->be, c->x, &c->w->r, &c->w->p, &c->w->q, pq, rz, rr);
}

/* g'K u = g'Kg + (K g)_f'x with (K g)_f = f - b (ksp.h) */
static vox_status vec_reaction(void *self, double *work) {
  vec_cg *c = self;
  double fx, bx;
  TRY(c->be->ops->vec->dot(c->be, c->lift->load, c->x, &fx));
  TRY(c->be->ops->vec->dot(c->be, c->b, c->x, &bx));
  *work = c->lift->energy + fx - bx;
  return VOX_OK;
}

static const vox_ksp_ops vec_ops = {.product = vec_product,
                                    .precondition = vec_precondition,
                                    .update = vec_update,
                                    .direction = vec_direction};
static const vox_ksp_ops kept_ops = {.product = vec_product,
                                     .precondition = vec_precondition,
                                     .direction = kept_direction,
                                     .kept_step = kept_step};

/* Solves G c = g for the symmetric positive semi-definite n x n Gram matrix
 * G (row-major) of the energy inner product, leaving out (c_j = 0) every
 * vector whose energy lies within a relative 1e-10 of the span of the ones
 * before it (a pivot of the Cholesky factorisation that small), so that a
 * history of (nearly) equal solutions cannot make the start blow up. */
static void gram_solve(double *G, const double *g, int n, double *c) {
  enum { N = VOX_KSP_HISTORY_MAX + 1 };
  double L[N][N] = {{0}}, y[N] = {0};
  int keep[N] = {0};
  for (int j = 0; j < n; j++) {
    double d = G[j * n + j];
    for (int k = 0; k < j; k++) d -= L[j][k] * L[j][k];
    keep[j] = G[j * n + j] > 0 && d > 1e-10 * G[j * n + j];
    if (!keep[j]) continue;
    L[j][j] = sqrt(d);
    for (int i = j + 1; i < n; i++) {
      double e = G[i * n + j];
      for (int k = 0; k < j; k++) e -= L[i][k] * L[j][k];
      L[i][j] = e / L[j][j];
    }
  }
  for (int i = 0; i < n; i++) { /* L y = g over the kept vectors (dropped columns are 0) */
    if (!keep[i]) continue;
    double e = g[i];
    for (int k = 0; k < i; k++) e -= L[i][k] * y[k];
    y[i] = e / L[i][i];
  }
  for (int i = n - 1; i >= 0; i--) { /* L' c = y */
    c[i] = 0;
    if (!keep[i]) continue;
    double e = y[i];
    for (int k = i + 1; k < n; k++) e -= L[k][i] * c[k];
    c[i] = e / L[i][i];
  }
}

vox_status vox_ksp_history_start(vox_backend *be, vox_ksp_apply apply, void *self,
                                 const vox_vec *b, vox_vec *x, vox_ksp_history *h, vox_vec *r,
                                 vox_vec *q, vox_vec *p) {
  const vox_backend_ops *o = be->ops;
  /* the basis: x, then the history from the newest; their products in r,
   * q and p (free before the iterations) */
  enum { N = VOX_KSP_HISTORY_MAX + 1 };
  const int n = 1 + h->count;
  const vox_vec *v[N] = {x};
  vox_vec *av[N] = {r, q, p};
  for (int i = 1; i < n; i++) v[i] = &h->v[(h->newest + i - 1) % h->capacity];
  double G[N * N], g[N], c[N] = {0};
  for (int j = 0; j < n; j++) {
    TRY(apply(self, v[j], av[j]));
    TRY(o->vec->dot(be, b, v[j], &g[j]));
    for (int i = 0; i <= j; i++) {
      TRY(o->vec->dot(be, v[i], av[j], &G[i * n + j]));
      G[j * n + i] = G[i * n + j];
    }
  }
  gram_solve(G, g, n, c);
  /* r <- sum c_i A v_i (A v_2 in p read first), then p <- sum c_i v_i,
   * then r <- b - r */
  TRY(o->vec->axpby(be, r, n > 1 ? c[1] : 0, av[n > 1], c[0]));
  for (int i = 2; i < n; i++) TRY(o->vec->axpy(be, r, c[i], av[i]));
  TRY(o->vec->copy(be, p, x));
  TRY(o->vec->axpby(be, p, n > 1 ? c[1] : 0, v[n > 1], c[0]));
  for (int i = 2; i < n; i++) TRY(o->vec->axpy(be, p, c[i], v[i]));
  TRY(o->vec->xpay(be, r, -1, b));
  /* the guess becomes the newest solution of the history, in the slot of
   * the oldest once it is full; then x <- the start */
  const int slot = (h->newest + h->capacity - 1) % h->capacity; /* free, or the oldest */
  TRY(o->vec->copy(be, &h->v[slot], x));
  h->newest = slot;
  if (h->count < h->capacity) h->count++;
  return o->vec->copy(be, x, p);
}

vox_status vox_ksp_start_energy(vox_backend *be, const vox_vec *x, const vox_vec *b,
                                const vox_vec *r, double *energy) {
  double xb, xr;
  TRY(be->ops->vec->dot(be, x, b, &xb));
  TRY(be->ops->vec->dot(be, x, r, &xr));
  *energy = xb + xr;
  return VOX_OK;
}

/* vox_ksp_apply of a box operator */
typedef struct operator_apply {
  vox_backend *be;
  vox_operator *op;
} operator_apply;

static vox_status apply_operator(void *self, const vox_vec *x, vox_vec *y) {
  const operator_apply *a = self;
  return a->be->ops->op->apply(a->be, a->op, x, y, 0);
}

vox_status vox_ksp_solve(vox_backend *be, vox_operator *op, const vox_pc *pc, const vox_vec *b,
                         vox_vec *x, vox_ksp_history *history, const vox_ksp_lift *lift,
                         const vox_solver_options *options, vox_ksp_work *w,
                         vox_solve_result *result) {
  const vox_backend_ops *o = be->ops;
  double bb, rr;
  memset(result, 0, sizeof *result);
  TRY(o->vec->dot(be, b, b, &bb));
  result->rhs_norm = sqrt(bb);
  if (bb == 0) { /* x = 0 is exact */
    TRY(o->vec->set(be, x, 0));
    result->reason = VOX_CONVERGED_ZERO_RHS;
    return VOX_OK;
  }
  if (history && history->capacity > 0) {
    operator_apply a = {be, op};
    TRY(vox_ksp_history_start(be, apply_operator, &a, b, x, history, &w->r, &w->q, &w->p));
  } else {                                          /* r <- b - A x */
    TRY(o->op->apply(be, op, x, &w->r, 0));
    TRY(o->vec->xpay(be, &w->r, -1, b));
  }
  TRY(o->vec->dot(be, &w->r, &w->r, &rr));
  double start_energy = 0; /* x'(b + r) - g'Kg, only where the energy test asks */
  if (options->energy_tol > 0) TRY(vox_ksp_start_energy(be, x, b, &w->r, &start_energy));
  if (lift) start_energy -= lift->energy;
  vec_cg c = {.be = be, .op = op, .pc = pc, .b = b, .x = x, .w = w, .lift = lift};
  const int kept = o->vec->cg_begin && o->vec->cg_step && o->vec->cg_direction;
  vox_ksp_ops ops = kept ? kept_ops : vec_ops;
  if (lift) ops.reaction = vec_reaction;
  return vox_ksp_cg(&ops, &c, rr, result->rhs_norm, start_energy, options, result);
}
