/* SPDX-License-Identifier: BSD-3-Clause */
/* The method of moving asymptotes (voxfe/mma.h, mma_backend.h): Svanberg's
 * `mmasub` (asymptotes, move limits, the approximations) and `subsolv` (the
 * subproblem by a primal-dual interior-point method with the barrier
 * parameter epsilon going down by tens), and `kktcheck`, after the MATLAB
 * codes of Svanberg's 2007 notes. Everything of n entries is the backend's
 * (mma_ops.h: the CPU's OpenMP loops, the GPU's kernels, each summing over
 * the variables in a fixed order); the m dual variables, the dual Newton
 * system of order m + 1 and the step control are here, on the host. The
 * host API of voxfe/mma.h runs on a CPU backend of its own. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_ops.h"
#include "mma_backend.h"
#include "mma_dual.h"
#include "voxfe/mma.h"

static const char *const bounds_names[] = {"design", "move"};
static const char *const convexity_names[] = {"svanberg", "aage"};

static int name_index(const char *text, const char *const *names, int count) {
  for (int i = 0; i < count; i++)
    if (!strcmp(text, names[i])) return i;
  return -1;
}

const char *vox_mma_bounds_name(vox_mma_bounds b) {
  return (unsigned)b < 2 ? bounds_names[b] : "unknown";
}
int vox_mma_bounds_parse(const char *text, vox_mma_bounds *b) {
  const int i = name_index(text, bounds_names, 2);
  if (i >= 0) *b = (vox_mma_bounds)i;
  return i >= 0 ? 0 : -1;
}
const char *vox_mma_convexity_name(vox_mma_convexity c) {
  return (unsigned)c < 2 ? convexity_names[c] : "unknown";
}
int vox_mma_convexity_parse(const char *text, vox_mma_convexity *c) {
  const int i = name_index(text, convexity_names, 2);
  if (i >= 0) *c = (vox_mma_convexity)i;
  return i >= 0 ? 0 : -1;
}

void vox_mma_options_default(vox_mma_options *o) {
  o->bounds = VOX_MMA_BOUNDS_DESIGN;
  o->convexity = VOX_MMA_CONVEXITY_SVANBERG;
  o->asymptote_init = 0.5;
  o->asymptote_increase = 1.2;
  o->asymptote_decrease = 0.7;
  o->move = 0.5;
  o->albefa = 0.1;
  o->raa0 = 1e-5;
  o->a0 = 1;
  o->a = 0;
  o->c = 1000;
  o->d = 1;
  o->epsilon_min = 1e-7;
  o->subproblem = VOX_MMA_PRIMAL_DUAL;
  o->objective_scale = 1;
}

vox_status vox_mma_options_check(vox_context *ctx, const vox_mma_options *o) {
#define REQUIRE(cond, ...)                                                        \
  if (!(cond)) return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, __VA_ARGS__)
  REQUIRE((unsigned)o->bounds <= VOX_MMA_BOUNDS_MOVE, "unknown MMA bounds %d", (int)o->bounds);
  REQUIRE((unsigned)o->convexity <= VOX_MMA_CONVEXITY_AAGE, "unknown MMA convexity %d",
          (int)o->convexity);
  REQUIRE(o->asymptote_init > 0 && o->asymptote_init <= 10, "MMA asymptote init %g not in (0, 10]",
          o->asymptote_init);
  REQUIRE(o->asymptote_increase >= 1, "MMA asymptote increase %g must be >= 1",
          o->asymptote_increase);
  REQUIRE(o->asymptote_decrease > 0 && o->asymptote_decrease <= 1,
          "MMA asymptote decrease %g not in (0, 1]", o->asymptote_decrease);
  REQUIRE(o->move > 0 && o->move <= 1, "MMA move limit %g not in (0, 1]", o->move);
  REQUIRE(o->albefa > 0 && o->albefa < 1, "MMA albefa %g not in (0, 1)", o->albefa);
  REQUIRE(o->raa0 > 0, "MMA raa0 %g must be > 0", o->raa0);
  REQUIRE(o->a0 > 0, "MMA a0 %g must be > 0", o->a0);
  REQUIRE(o->a >= 0, "MMA a %g must be >= 0", o->a);
  REQUIRE(o->c >= 0, "MMA c %g must be >= 0", o->c);
  REQUIRE(o->d >= 0 && o->c + o->d > 0, "MMA d %g must be >= 0 (and c + d > 0)", o->d);
  REQUIRE(o->objective_scale > 0 && isfinite(o->objective_scale),
          "MMA objective scale %g must be > 0", o->objective_scale);
  REQUIRE(o->epsilon_min > 0 && o->epsilon_min < 1, "MMA epsilon min %g not in (0, 1)",
          o->epsilon_min);
#undef REQUIRE
  return vox_mma_dual_check(ctx, o);
}

struct vox_mma {
  vox_context *ctx;
  vox_backend *be;
  vox_backend *own_backend; /* the host API's CPU backend (NULL: the caller's) */
  const vox_mma_ops *ops;
  size_t n;
  int m;
  vox_mma_options o;
  int iteration;
  vox_mma_vectors v;   /* everything of n entries, on the backend */
  vox_mma_work *work;  /* the backend's work space of the sums */
  double *low_host, *upp_host; /* the host API's copies of the asymptotes */
  /* b; y, lam, mu, s (m each) and their old values and steps; z, zet */
  double *b, *y, *lam, *mu, *s, *yo, *lamo, *muo, *so, *dy, *dlam, *dmu, *ds;
  double z, zet, dz_step, dzet_step;
  double *gvec, *gdelx; /* m: the sums of the approximations and of G delx / diagx */
  double *ggt;          /* m * m: G D^-1 G' (the lower triangle) */
  double *matrix;       /* (m + 1)^2 + (m + 1): the dual Newton system */
};

void vox_mma_layout(size_t n, int m, vox_mma_vectors *v, vox_layout *l) {
  const size_t rows = (size_t)m * n;
#define VEC(what, name, len) vox_layout_vec(l, "MMA: " what, len, VOX_DOUBLE, v ? &v->name : NULL)
  VEC("the variables", xval, n);
  VEC("their lower bounds", xmin, n);
  VEC("their upper bounds", xmax, n);
  VEC("the objective's gradient", df0dx, n);
  VEC("the constraints' gradients", dfdx, rows);
  VEC("the last iterate", xold1, n);
  VEC("the iterate before", xold2, n);
  VEC("the lower asymptotes", low, n);
  VEC("the upper asymptotes", upp, n);
  VEC("the lower move limits", alfa, n);
  VEC("the upper move limits", beta, n);
  VEC("the objective's p", p0, n);
  VEC("the objective's q", q0, n);
  VEC("the constraints' p", P, rows);
  VEC("the constraints' q", Q, rows);
  VEC("the subproblem's x", x, n);
  VEC("the lower bounds' multipliers", xsi, n);
  VEC("the upper bounds' multipliers", eta, n);
  VEC("x before the step", xo, n);
  VEC("xsi before the step", xsio, n);
  VEC("eta before the step", etao, n);
  VEC("the step of x", dx, n);
  VEC("the step of xsi", dxsi, n);
  VEC("the step of eta", deta, n);
  VEC("Newton's delx", delx, n);
  VEC("Newton's diagx", diagx, n);
#undef VEC
}

void vox_mma_destroy(vox_mma *a) {
  if (!a) return;
  vox_layout l;
  vox_layout_init(&l);
  vox_mma_layout(a->n, a->m, &a->v, &l);
  for (int i = 0; i < l.n; i++)
    if (l.entry[i].vec->data) a->be->ops->vec->destroy(a->be, l.entry[i].vec);
  if (a->work) a->ops->work_destroy(a->be, a->work);
  double *all[] = {a->low_host, a->upp_host, a->b,   a->gvec, a->gdelx, a->ggt, a->y,
                   a->lam,      a->mu,       a->s,   a->yo,   a->lamo,  a->muo, a->so,
                   a->dy,       a->dlam,     a->dmu, a->ds,   a->matrix};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) free(all[i]);
  if (a->own_backend) vox_backend_destroy(a->own_backend);
  free(a);
}

vox_status vox_mma_create_on(vox_backend *be, size_t n, int m, const vox_mma_options *options,
                             vox_mma **out) {
  vox_context *ctx = be->ctx;
  *out = NULL;
  if (n == 0 || m < 1 || m > 1000 || (size_t)m > SIZE_MAX / sizeof(double) / n)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "MMA: %zu variables and %d constraints", n, m);
  TRY(vox_mma_options_check(ctx, options));
  if (!be->ops->mma)
    return vox_error(ctx, VOX_ERR_UNSUPPORTED,
                     "the method of moving asymptotes does not run on the %s backend",
                     be->ops->name);
  TRY(vox_mma_dual_supported(be, options));
  vox_mma *a = calloc(1, sizeof *a);
  if (!a) return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
  a->ctx = ctx, a->be = be, a->ops = be->ops->mma, a->n = n, a->m = m, a->o = *options;
  a->v.n = n, a->v.m = m;
  double **vm[] = {&a->b,  &a->gvec, &a->gdelx, &a->y,  &a->lam, &a->mu,   &a->s,  &a->yo,
                   &a->lamo, &a->muo, &a->so,   &a->dy, &a->dlam, &a->dmu, &a->ds};
  int ok = 1;
  for (size_t i = 0; i < sizeof vm / sizeof vm[0]; i++)
    ok &= !!(*vm[i] = calloc((size_t)m, sizeof(double)));
  ok = ok && (a->ggt = calloc((size_t)m * m, sizeof(double))) &&
       (a->matrix = malloc(((size_t)(m + 1) * (m + 1) + (size_t)(m + 1)) * sizeof(double)));
  if (!ok) {
    vox_mma_destroy(a);
    return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
  }
  vox_layout l;
  vox_layout_init(&l);
  vox_mma_layout(n, m, &a->v, &l);
  vox_status st = vox_layout_create(be, &l);
  if (st == VOX_OK) st = a->ops->work_create(be, n, m, &a->work);
  if (st != VOX_OK) {
    vox_mma_destroy(a);
    return st;
  }
  *out = a;
  return VOX_OK;
}

vox_status vox_mma_create(vox_context *ctx, size_t n, int m, const vox_mma_options *options,
                          vox_mma **out) {
  *out = NULL;
  if (n == 0 || m < 1 || m > 1000 || (size_t)m > SIZE_MAX / sizeof(double) / n)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "MMA: %zu variables and %d constraints", n, m);
  TRY(vox_mma_options_check(ctx, options));
  vox_backend *be = NULL;
  TRY(vox_cpu_backend_create(ctx, NULL, &be));
  be->threads = 0; /* OpenMP's default until vox_mma_set_threads */
  vox_mma *a = NULL;
  vox_status st = vox_mma_create_on(be, n, m, options, &a);
  if (st != VOX_OK) {
    vox_backend_destroy(be);
    return st;
  }
  a->own_backend = be;
  if (!(a->low_host = calloc(n, sizeof(double))) || !(a->upp_host = calloc(n, sizeof(double)))) {
    vox_mma_destroy(a);
    return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
  }
  *out = a;
  return VOX_OK;
}

vox_mma_vectors *vox_mma_vectors_of(vox_mma *a) { return &a->v; }
int vox_mma_iterations(const vox_mma *a) { return a->iteration; }
void vox_mma_set_threads(vox_mma *a, int threads) {
  if (a->own_backend) a->own_backend->threads = threads > 0 ? threads : 0;
}
const double *vox_mma_lower(const vox_mma *a) { return a->low_host; }
const double *vox_mma_upper(const vox_mma *a) { return a->upp_host; }
const double *vox_mma_lambda(const vox_mma *a) { return a->lam; }

static void swap_vec(vox_vec *a, vox_vec *b) {
  const vox_vec t = *a;
  *a = *b, *b = t;
}

/* ---- the subproblem ------------------------------------------------------ */

/* The residual of the relaxed KKT conditions of the subproblem for barrier
 * epsi (after moving the variables by `step` along the direction where
 * `move`, the dual ones moved already): its norm and largest entry. */
static vox_status residual(vox_mma *a, double epsi, int move, double step, double *norm,
                           double *max) {
  const int m = a->m;
  double sum, big;
  if (a->ops->residual_newton)
    TRY(a->ops->residual_newton(a->be, a->work, &a->v, a->lam, epsi, move, step, &sum, &big,
                                a->gvec, a->gdelx, a->ggt));
  else
    TRY(a->ops->residual(a->be, a->work, &a->v, a->lam, epsi, move, step, &sum, &big, a->gvec));
  const vox_mma_options *o = &a->o;
  double rez = o->a0 - a->zet, rezet = a->zet * a->z - epsi;
  for (int i = 0; i < m; i++) {
    rez -= o->a * a->lam[i];
    const double rey = o->c + o->d * a->y[i] - a->mu[i] - a->lam[i];
    const double relam = a->gvec[i] - o->a * a->z - a->y[i] + a->s[i] - a->b[i];
    const double remu = a->mu[i] * a->y[i] - epsi, res = a->lam[i] * a->s[i] - epsi;
    const double r[] = {rey, relam, remu, res};
    for (int t = 0; t < 4; t++) sum += r[t] * r[t], big = fmax(big, fabs(r[t]));
  }
  sum += rez * rez + rezet * rezet;
  big = fmax(big, fmax(fabs(rez), fabs(rezet)));
  *norm = sqrt(sum);
  *max = big;
  return VOX_OK;
}

/* Solves the dense system A x = r of order k (row-major, overwritten) by
 * Gaussian elimination with partial pivoting; -1 when it is singular. */
static int solve_dense(int k, double *A, double *r) {
  for (int c = 0; c < k; c++) {
    int piv = c;
    for (int i = c + 1; i < k; i++)
      if (fabs(A[i * k + c]) > fabs(A[piv * k + c])) piv = i;
    if (!(fabs(A[piv * k + c]) > 0)) return -1;
    if (piv != c) {
      for (int j = 0; j < k; j++) {
        const double t = A[c * k + j];
        A[c * k + j] = A[piv * k + j], A[piv * k + j] = t;
      }
      const double t = r[c];
      r[c] = r[piv], r[piv] = t;
    }
    for (int i = c + 1; i < k; i++) {
      const double f = A[i * k + c] / A[c * k + c];
      for (int j = c; j < k; j++) A[i * k + j] -= f * A[c * k + j];
      r[i] -= f * r[c];
    }
  }
  for (int i = k - 1; i >= 0; i--) {
    double t = r[i];
    for (int j = i + 1; j < k; j++) t -= A[i * k + j] * r[j];
    r[i] = t / A[i * k + i];
  }
  return 0;
}

/* One Newton direction of the relaxed KKT conditions for barrier epsi
 * (subsolv's m < n branch: the dual system of order m + 1, on the host),
 * and the largest step that keeps the point interior (1.01 of the way, at
 * most 1). The last residual was taken at this point for this epsi: with
 * the backend's residual_newton, its sums are this step's. */
static vox_status newton_step(vox_mma *a, double epsi, double *step) {
  const int m = a->m;
  const vox_mma_options *o = &a->o;
  if (!a->ops->residual_newton)
    TRY(a->ops->newton(a->be, a->work, &a->v, a->lam, epsi, a->gvec, a->gdelx, a->ggt));
  const double *gvec = a->gvec, *gdelx = a->gdelx, *ggt = a->ggt;
  /* the system [Alam a; a' -zet/z] [dlam; dz] = [blam; delz] */
  const int order = m + 1;
  double *A = a->matrix, *r = a->matrix + order * order;
  double delz = o->a0 - epsi / a->z;
  for (int i = 0; i < m; i++) {
    const double y = a->y[i], lam = a->lam[i];
    delz -= o->a * lam;
    const double dely = o->c + o->d * y - lam - epsi / y;
    const double dellam = gvec[i] - o->a * a->z - y - a->b[i] + epsi / lam;
    const double diagy = o->d + a->mu[i] / y;
    r[i] = dellam + dely / diagy - gdelx[i];
    for (int l = 0; l < m; l++)
      A[i * order + l] = i >= l ? ggt[i * m + l] : ggt[l * m + i];
    A[i * order + i] += a->s[i] / lam + 1 / diagy;
    A[i * order + m] = o->a;
    A[m * order + i] = o->a;
    a->dy[i] = dely / diagy; /* for now: dy = -dely / diagy + dlam / diagy below */
  }
  A[m * order + m] = -a->zet / a->z;
  r[m] = delz;
  if (solve_dense(order, A, r) != 0)
    return vox_error(a->ctx, VOX_ERR_INVALID_ARGUMENT,
                     "MMA: the subproblem's Newton system is singular");
  const double dz = r[m];
  for (int i = 0; i < m; i++) {
    const double diagy = o->d + a->mu[i] / a->y[i];
    a->dlam[i] = r[i];
    a->dy[i] = -a->dy[i] + r[i] / diagy;
  }
  /* dx and the bound multipliers' steps, and the largest step length */
  double most;
  TRY(a->ops->direction(a->be, a->work, &a->v, a->lam, a->dlam, epsi, &most));
  most = fmax(1, most);
  for (int i = 0; i < m; i++) {
    a->dmu[i] = -a->mu[i] + epsi / a->y[i] - a->mu[i] * a->dy[i] / a->y[i];
    a->ds[i] = -a->s[i] + epsi / a->lam[i] - a->s[i] * a->dlam[i] / a->lam[i];
    const double v[] = {a->y[i], a->lam[i], a->mu[i], a->s[i]},
                 d[] = {a->dy[i], a->dlam[i], a->dmu[i], a->ds[i]};
    for (int t = 0; t < 4; t++) most = fmax(most, -1.01 * d[t] / v[t]);
  }
  a->dz_step = dz;
  a->dzet_step = -a->zet + epsi / a->z - a->zet * dz / a->z;
  most = fmax(most, fmax(-1.01 * dz / a->z, -1.01 * a->dzet_step / a->zet));
  *step = 1 / most;
  return VOX_OK;
}

/* The dual variables of the point moved by `step` times the direction from
 * their old values (the primal ones move in the residual's pass). */
static void move_duals(vox_mma *a, double step) {
  for (int i = 0; i < a->m; i++) {
    a->y[i] = a->yo[i] + step * a->dy[i];
    a->lam[i] = a->lamo[i] + step * a->dlam[i];
    a->mu[i] = a->muo[i] + step * a->dmu[i];
    a->s[i] = a->so[i] + step * a->ds[i];
  }
}

/* subsolv: the subproblem's solution into the vectors' x and its
 * multipliers. */
static vox_status subsolve(vox_mma *a) {
  const int m = a->m;
  double epsi = 1;
  TRY(a->ops->start(a->be, &a->v));
  for (int i = 0; i < m; i++)
    a->y[i] = 1, a->lam[i] = 1, a->mu[i] = fmax(1, 0.5 * a->o.c), a->s[i] = 1;
  a->z = 1, a->zet = 1;
  while (epsi > a->o.epsilon_min) {
    double norm, max;
    TRY(residual(a, epsi, 0, 0, &norm, &max));
    for (int inner = 0; max > 0.9 * epsi && inner < 200; inner++) {
      double step = 1;
      TRY(newton_step(a, epsi, &step));
      /* the old values: x, xsi and eta change places with theirs, whose
       * buffers the moves below overwrite entirely (when they run at all:
       * not for a norm that is not a number) */
      double newnorm = 2 * norm;
      if (newnorm > norm) {
        swap_vec(&a->v.x, &a->v.xo);
        swap_vec(&a->v.xsi, &a->v.xsio);
        swap_vec(&a->v.eta, &a->v.etao);
      }
      const size_t mb = (size_t)m * sizeof *a->y;
      memcpy(a->yo, a->y, mb), memcpy(a->lamo, a->lam, mb);
      memcpy(a->muo, a->mu, mb), memcpy(a->so, a->s, mb);
      const double zo = a->z, zeto = a->zet;
      /* halve the step until the residual decreases */
      for (int tries = 0; newnorm > norm && tries < 50; tries++) {
        move_duals(a, step);
        a->z = zo + step * a->dz_step;
        a->zet = zeto + step * a->dzet_step;
        TRY(residual(a, epsi, 1, step, &newnorm, &max));
        step /= 2;
      }
      norm = newnorm;
    }
    epsi *= 0.1;
  }
  return VOX_OK;
}

vox_status vox_mma_step(vox_mma *a, const double *fval) {
  const int m = a->m;
  const int first = a->iteration < 2; /* Svanberg's outeriter < 2.5, 1-based */
  int bad = 0, bad_x = 0;
  for (int i = 0; i < m; i++) bad |= !isfinite(fval[i]);
  TRY(a->ops->approximate(a->be, a->work, &a->v, &a->o, first, a->b, &bad_x));
  if (bad || bad_x)
    return vox_error(a->ctx, VOX_ERR_INVALID_ARGUMENT,
                     "MMA: a value or gradient is not finite, or x is outside its bounds");
  /* b_i = sum_j P_ij / (U - x) + Q_ij / (x - L) - f_i */
  for (int i = 0; i < m; i++) a->b[i] -= fval[i];
  if (a->o.subproblem == VOX_MMA_DUAL)
    TRY(vox_mma_dual_solve(a->be, a->work, &a->v, &a->o, a->b, a->lam, a->y, a->mu, a->s, &a->z,
                           &a->zet));
  else
    TRY(subsolve(a));
  /* the history: xold2 = xold1, xold1 = xval (the old xold2's buffer is
   * the next xval's) */
  swap_vec(&a->v.xold2, &a->v.xold1);
  swap_vec(&a->v.xold1, &a->v.xval);
  a->iteration++;
  return VOX_OK;
}

vox_status vox_mma_update(vox_mma *a, const double *xval, const double *xmin, const double *xmax,
                          const double *df0dx, const double *fval, const double *dfdx,
                          double *xnew) {
  vox_backend *be = a->be;
  const vox_vector_ops *vec = be->ops->vec;
  vox_mma_vectors *v = &a->v;
  TRY(vec->upload(be, &v->xval, xval));
  TRY(vec->upload(be, &v->xmin, xmin));
  TRY(vec->upload(be, &v->xmax, xmax));
  TRY(vec->upload(be, &v->df0dx, df0dx));
  TRY(vec->upload(be, &v->dfdx, dfdx));
  TRY(vox_mma_step(a, fval));
  TRY(vec->download(be, &v->x, xnew));
  if (a->low_host) TRY(vec->download(be, &v->low, a->low_host));
  if (a->upp_host) TRY(vec->download(be, &v->upp, a->upp_host));
  return VOX_OK;
}

vox_status vox_mma_kkt_at(vox_mma *a, const double *fval, double *norm, double *max) {
  const int m = a->m;
  const vox_mma_options *o = &a->o;
  double sum, big;
  TRY(a->ops->kkt(a->be, a->work, &a->v, a->lam, &sum, &big));
  double rez = o->a0 - a->zet;
  for (int i = 0; i < m; i++) {
    rez -= o->a * a->lam[i];
    const double r[] = {o->c + o->d * a->y[i] - a->mu[i] - a->lam[i],
                        fval[i] - o->a * a->z - a->y[i] + a->s[i], a->mu[i] * a->y[i],
                        a->lam[i] * a->s[i]};
    for (int t = 0; t < 4; t++) sum += r[t] * r[t], big = fmax(big, fabs(r[t]));
  }
  const double rezet = a->zet * a->z;
  sum += rez * rez + rezet * rezet;
  big = fmax(big, fmax(fabs(rez), fabs(rezet)));
  *norm = sqrt(sum);
  *max = big;
  return VOX_OK;
}

vox_status vox_mma_kkt(const vox_mma *mma, const double *x, const double *xmin, const double *xmax,
                       const double *df0dx, const double *fval, const double *dfdx, double *norm,
                       double *max) {
  /* the inputs' vectors are scratch between updates: the method's state
   * does not change */
  vox_mma *a = (vox_mma *)mma;
  vox_backend *be = a->be;
  const vox_vector_ops *vec = be->ops->vec;
  vox_mma_vectors *v = &a->v;
  TRY(vec->upload(be, &v->xval, x));
  TRY(vec->upload(be, &v->xmin, xmin));
  TRY(vec->upload(be, &v->xmax, xmax));
  TRY(vec->upload(be, &v->df0dx, df0dx));
  TRY(vec->upload(be, &v->dfdx, dfdx));
  return vox_mma_kkt_at(a, fval, norm, max);
}

/* ---- checkpoints ---------------------------------------------------------- */

#define OPTION_COUNT 14
static void option_list(const vox_mma_options *o, double v[OPTION_COUNT]) {
  const double all[OPTION_COUNT] = {
      o->objective_scale, o->asymptote_init, o->asymptote_increase, o->asymptote_decrease,
      o->move, o->albefa, o->raa0, o->a0, o->a, o->c, o->d, o->epsilon_min, o->bounds,
      o->convexity};
  memcpy(v, all, sizeof all);
}

/* The vectors of the state: n-long, then the host's m-long arrays. */
static void state_arrays(vox_mma *a, vox_vec *n_vectors[6], double *m_arrays[4]) {
  vox_vec *nn[6] = {&a->v.xold1, &a->v.xold2, &a->v.low, &a->v.upp, &a->v.xsi, &a->v.eta};
  double *mm[4] = {a->y, a->lam, a->mu, a->s};
  memcpy(n_vectors, nn, sizeof nn);
  memcpy(m_arrays, mm, sizeof mm);
}
static const char *const n_names[6] = {"x_old1", "x_old2", "lower", "upper", "xsi", "eta"};
static const char *const m_names[4] = {"y", "lambda", "mu", "s"};

vox_status vox_mma_save(const vox_mma *mma, const char *prefix, vox_checkpoint *out) {
  vox_mma *a = (vox_mma *)mma; /* its vectors are only read */
  char name[VOX_NAME_MAX];
  double options[OPTION_COUNT];
  option_list(&a->o, options);
  const double scalars[] = {(double)a->n, a->m, a->iteration, a->z, a->zet};
  snprintf(name, sizeof name, "%s_options", prefix);
  TRY(vox_checkpoint_add(a->ctx, out, name, OPTION_COUNT, options));
  snprintf(name, sizeof name, "%s_scalars", prefix);
  TRY(vox_checkpoint_add(a->ctx, out, name, 5, scalars));
  TRY(vox_mma_subproblem_save(a->ctx, &a->o, prefix, out));
  vox_vec *nv[6];
  double *mv[4];
  state_arrays(a, nv, mv);
  for (int i = 0; i < 6; i++) { /* downloaded straight into the checkpoint's array */
    snprintf(name, sizeof name, "%s_%s", prefix, n_names[i]);
    TRY(vox_checkpoint_add(a->ctx, out, name, a->n, NULL));
    TRY(a->be->ops->vec->download(a->be, nv[i], out->arrays[out->n_arrays - 1].values));
  }
  for (int i = 0; i < 4; i++) {
    snprintf(name, sizeof name, "%s_%s", prefix, m_names[i]);
    TRY(vox_checkpoint_add(a->ctx, out, name, (size_t)a->m, mv[i]));
  }
  return VOX_OK;
}

static const vox_checkpoint_array *find(vox_mma *a, const vox_checkpoint *c, const char *prefix,
                                        const char *what, size_t length, vox_status *st) {
  char name[VOX_NAME_MAX];
  snprintf(name, sizeof name, "%s_%s", prefix, what);
  const vox_checkpoint_array *array = vox_checkpoint_find(c, name);
  if (*st != VOX_OK) return NULL;
  if (!array || array->length != length)
    *st = vox_error(a->ctx, VOX_ERR_INVALID_ARGUMENT,
                    "the checkpoint has no '%s' of %zu values (its run did not use MMA?)", name,
                    length);
  return *st == VOX_OK ? array : NULL;
}

vox_status vox_mma_restore(vox_mma *a, const char *prefix, const vox_checkpoint *c) {
  vox_status st = VOX_OK;
  /* a checkpoint of a build before the bounds and convexity options holds
   * the first LEGACY_OPTIONS, and ran with their defaults */
  enum { LEGACY_OPTIONS = 12 };
  char name[VOX_NAME_MAX];
  snprintf(name, sizeof name, "%s_options", prefix);
  const vox_checkpoint_array *legacy = vox_checkpoint_find(c, name);
  const int old = legacy && legacy->length == LEGACY_OPTIONS;
  const vox_checkpoint_array *options =
      find(a, c, prefix, "options", old ? LEGACY_OPTIONS : OPTION_COUNT, &st);
  const vox_checkpoint_array *scalars = find(a, c, prefix, "scalars", 5, &st);
  TRY(st);
  double mine[OPTION_COUNT];
  option_list(&a->o, mine);
  if (memcmp(mine, options->values, (old ? LEGACY_OPTIONS : OPTION_COUNT) * sizeof(double)) != 0 ||
      (old && (a->o.bounds != VOX_MMA_BOUNDS_DESIGN || a->o.convexity != VOX_MMA_CONVEXITY_SVANBERG)))
    return vox_error(a->ctx, VOX_ERR_INVALID_ARGUMENT,
                     "the checkpoint's run had other MMA parameters: a resumed run needs the "
                     "options of the run that made the checkpoint");
  TRY(vox_mma_subproblem_check(a->ctx, &a->o, prefix, c));
  const double *v = scalars->values;
  if (v[0] != (double)a->n || v[1] != a->m || !(v[2] >= 0 && v[2] <= 2e9 && v[2] == floor(v[2])))
    return vox_error(a->ctx, VOX_ERR_INVALID_ARGUMENT,
                     "the checkpoint's MMA state is of %g variables and %g constraints where this "
                     "run has %zu and %d",
                     v[0], v[1], a->n, a->m);
  vox_vec *nv[6];
  double *mv[4];
  state_arrays(a, nv, mv);
  const vox_checkpoint_array *na[6], *ma[4];
  for (int i = 0; i < 6; i++) na[i] = find(a, c, prefix, n_names[i], a->n, &st);
  for (int i = 0; i < 4; i++) ma[i] = find(a, c, prefix, m_names[i], (size_t)a->m, &st);
  TRY(st);
  for (int i = 0; i < 6; i++) TRY(a->be->ops->vec->upload(a->be, nv[i], na[i]->values));
  for (int i = 0; i < 4; i++) memcpy(mv[i], ma[i]->values, (size_t)a->m * sizeof(double));
  if (a->low_host) memcpy(a->low_host, na[2]->values, a->n * sizeof(double));
  if (a->upp_host) memcpy(a->upp_host, na[3]->values, a->n * sizeof(double));
  a->iteration = (int)v[2];
  a->z = v[3], a->zet = v[4];
  return VOX_OK;
}
