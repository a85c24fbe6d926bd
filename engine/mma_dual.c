/* SPDX-License-Identifier: BSD-3-Clause */
/* MMA's subproblem by its dual (mma_dual.h; Svanberg 1987, section 4, and
 * the dual of his 2007 notes' subproblem).
 *
 * With a = 0 (z drops out: z = 0) and d > 0 the Lagrangian of the
 * subproblem separates for multipliers lam >= 0 of its m constraints:
 * x_j(lam) minimises p_j(lam) / (U_j - x) + q_j(lam) / (x - L_j) on
 * [alpha_j, beta_j] in closed form and y_i(lam) = max(0, (lam_i - c) / d).
 * The dual function W(lam) is concave and continuously differentiable:
 * its gradient is the constraints' values, W'_i = gvec_i(x(lam)) - y_i(lam)
 * - b_i, and its Hessian -(sum over the unclamped j of G_j G_j' / h_j) -
 * diag(1/d where lam_i > c) (mma_ops.h, dual_sums). Its maximum over lam >=
 * 0 is the subproblem's solution, x(lam*) (the subproblem is strictly
 * convex in x).
 *
 * The maximum is found by a primal-dual interior-point method in lam and
 * the slacks s of the constraints (the multipliers of lam >= 0 in the
 * dual): W'(lam) + s = 0, lam_i s_i = epsi, epsi from 1 down by tens to the
 * options' epsilon_min, as subsolv does for the whole problem. A Newton step
 * solves (-W'' + diag(s / lam)) dlam = W' + epsi / lam (order m, positive
 * definite: Cholesky), goes at most 1 / 1.01 of the way to lam = 0 or s =
 * 0, and is halved until the residual's norm decreases. Each trial point
 * takes one pass over the variables (x(lam), W' and W'' together), and a
 * backend whose passes cost more than their arithmetic evaluates several
 * step lengths of the halving in one pass (dual_slots): the same points in
 * the same order, so the same result, with fewer waits for the device.
 * The host keeps the m-dimensional work. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mma_dual.h"

enum {
  POINTS_MAX = 8,     /* the step lengths of one pass */
  HALVINGS = 50,      /* of a step, as subsolv */
  NEWTON_STEPS = 200  /* for one epsi, as subsolv */
};

static const char *const subproblem_names[] = {"primal-dual", "dual"};

const char *vox_mma_subproblem_name(vox_mma_subproblem subproblem) {
  return (unsigned)subproblem < 2 ? subproblem_names[subproblem] : "unknown";
}

int vox_mma_subproblem_parse(const char *text, vox_mma_subproblem *subproblem) {
  for (int i = 0; i < 2; i++)
    if (strcmp(text, subproblem_names[i]) == 0) {
      *subproblem = (vox_mma_subproblem)i;
      return 0;
    }
  return -1;
}

vox_status vox_mma_dual_check(vox_context *ctx, const vox_mma_options *o) {
  if (o->subproblem != VOX_MMA_PRIMAL_DUAL && o->subproblem != VOX_MMA_DUAL)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "MMA subproblem method %d is unknown",
                     (int)o->subproblem);
  if (o->subproblem == VOX_MMA_DUAL && !(o->a == 0 && o->d > 0))
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "MMA's dual subproblem method needs a = 0 and d > 0 (a %g, d %g)", o->a,
                     o->d);
  return VOX_OK;
}

vox_status vox_mma_dual_supported(vox_backend *be, const vox_mma_options *o) {
  if (o->subproblem == VOX_MMA_DUAL &&
      !(be->ops->mma && be->ops->mma->dual_sums && be->ops->mma->dual_solution))
    return vox_error(be->ctx, VOX_ERR_UNSUPPORTED,
                     "MMA's dual subproblem method does not run on the %s backend",
                     be->ops->name);
  return VOX_OK;
}

/* The host's part of the method for m constraints. */
typedef struct dual {
  int m, S;          /* constraints; sums a point: gvec (m), then H (m (m + 1) / 2) */
  const vox_mma_options *o;
  const double *b;
  double *lam, *s;   /* the point */
  double *sums;      /* its sums (S) */
  double *dlam, *ds; /* the step */
  double *trial;     /* POINTS_MAX rows of m: the trial points' lam */
  double *trial_s;   /* POINTS_MAX rows of m: their s */
  double *trial_sums; /* POINTS_MAX rows of S */
  double *matrix;    /* m * m: the Newton system */
} dual;

static double y_of(const vox_mma_options *o, double lam) {
  return lam > o->c ? (lam - o->c) / o->d : 0;
}

/* The relaxed KKT residual of the dual at (lam, s) with sums for epsi:
 * W' + s (m) and lam s - epsi (m): its Euclidean norm and largest entry. */
static void residual(const dual *d, const double *lam, const double *s, const double *sums,
                     double epsi, double *norm, double *max) {
  double sum = 0, big = 0;
  for (int i = 0; i < d->m; i++) {
    const double r1 = sums[i] - y_of(d->o, lam[i]) - d->b[i] + s[i], r2 = lam[i] * s[i] - epsi;
    sum += r1 * r1 + r2 * r2;
    big = fmax(big, fmax(fabs(r1), fabs(r2)));
  }
  *norm = sqrt(sum), *max = big;
}

/* Solves A x = r for the symmetric positive definite A of order k (the
 * lower triangle read, overwritten by its Cholesky factor); -1 when it is
 * not positive definite to the rounding. */
static int cholesky_solve(int k, double *A, double *r) {
  for (int j = 0; j < k; j++) {
    double djj = A[j * k + j];
    for (int t = 0; t < j; t++) djj -= A[j * k + t] * A[j * k + t];
    if (!(djj > 0)) return -1;
    djj = sqrt(djj);
    A[j * k + j] = djj;
    for (int i = j + 1; i < k; i++) {
      double a = A[i * k + j];
      for (int t = 0; t < j; t++) a -= A[i * k + t] * A[j * k + t];
      A[i * k + j] = a / djj;
    }
  }
  for (int i = 0; i < k; i++) { /* L u = r */
    double t = r[i];
    for (int j = 0; j < i; j++) t -= A[i * k + j] * r[j];
    r[i] = t / A[i * k + i];
  }
  for (int i = k - 1; i >= 0; i--) { /* L' x = u */
    double t = r[i];
    for (int j = i + 1; j < k; j++) t -= A[j * k + i] * r[j];
    r[i] = t / A[i * k + i];
  }
  return 0;
}

/* The Newton direction at the point for epsi, and the longest step that
 * keeps lam and s positive (1 / 1.01 of the way, at most 1). */
static vox_status direction(vox_context *ctx, dual *d, double epsi, double *step) {
  const int m = d->m;
  const vox_mma_options *o = d->o;
  const double *H = d->sums + m; /* the lower triangle by rows */
  double *A = d->matrix;
  for (int i = 0, t = 0; i < m; i++) {
    for (int l = 0; l <= i; l++) A[i * m + l] = H[t++];
    A[i * m + i] += d->s[i] / d->lam[i] + (d->lam[i] > o->c ? 1 / o->d : 0);
    d->dlam[i] = d->sums[i] - y_of(o, d->lam[i]) - d->b[i] + epsi / d->lam[i];
  }
  if (cholesky_solve(m, A, d->dlam) != 0)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "MMA: the dual subproblem's Newton system is not positive definite");
  double most = 1;
  for (int i = 0; i < m; i++) {
    d->ds[i] = -d->s[i] + epsi / d->lam[i] - d->s[i] * d->dlam[i] / d->lam[i];
    most = fmax(most, fmax(-1.01 * d->dlam[i] / d->lam[i], -1.01 * d->ds[i] / d->s[i]));
  }
  *step = 1 / most;
  return VOX_OK;
}

vox_status vox_mma_dual_solve(vox_backend *be, vox_mma_work *w, const vox_mma_vectors *v,
                              const vox_mma_options *o, const double *b, double *lam, double *y,
                              double *mu, double *s, double *z, double *zet) {
  const vox_mma_ops *ops = be->ops->mma;
  const int m = v->m, S = m + m * (m + 1) / 2;
  int points = ops->dual_slots / S;
  points = points < 1 ? 1 : points > POINTS_MAX ? POINTS_MAX : points;
  dual d = {.m = m, .S = S, .o = o, .b = b, .lam = lam, .s = s};
  const size_t mm = (size_t)m;
  double *all = malloc(sizeof(double) * (2 * mm + (size_t)S + 2 * POINTS_MAX * mm +
                                         POINTS_MAX * (size_t)S + mm * mm));
  if (!all) return vox_error(be->ctx, VOX_ERR_NO_MEMORY, "out of memory");
  d.dlam = all, d.ds = d.dlam + m, d.sums = d.ds + m, d.trial = d.sums + S;
  d.trial_s = d.trial + POINTS_MAX * mm, d.trial_sums = d.trial_s + POINTS_MAX * mm;
  d.matrix = d.trial_sums + POINTS_MAX * (size_t)S;
  vox_status st = VOX_OK;
  /* subsolv's start for lam and the slacks */
  for (int i = 0; i < m; i++) lam[i] = 1, s[i] = 1;
  st = ops->dual_sums(be, w, v, 1, lam, d.sums);
  for (double epsi = 1; st == VOX_OK && epsi > o->epsilon_min; epsi *= 0.1) {
    double norm, max;
    residual(&d, lam, s, d.sums, epsi, &norm, &max);
    for (int inner = 0; st == VOX_OK && max > 0.9 * epsi && inner < NEWTON_STEPS; inner++) {
      double step = 1;
      if ((st = direction(be->ctx, &d, epsi, &step)) != VOX_OK) break;
      /* the halvings, `points` of them a pass, until the residual's norm
       * decreases (after HALVINGS, the last point) */
      int chosen = -1, tries = 0;
      while (chosen < 0 && tries < HALVINGS && st == VOX_OK) {
        const int count = points < HALVINGS - tries ? points : HALVINGS - tries;
        for (int k = 0; k < count; k++, step /= 2)
          for (int i = 0; i < m; i++) {
            d.trial[k * m + i] = lam[i] + step * d.dlam[i];
            d.trial_s[k * m + i] = s[i] + step * d.ds[i];
          }
        if ((st = ops->dual_sums(be, w, v, count, d.trial, d.trial_sums)) != VOX_OK) break;
        for (int k = 0; k < count && chosen < 0; k++) {
          double trial_norm, trial_max;
          residual(&d, d.trial + k * m, d.trial_s + k * m, d.trial_sums + (size_t)k * S, epsi,
                   &trial_norm, &trial_max);
          if (trial_norm < norm || tries + k + 1 == HALVINGS) {
            chosen = k, norm = trial_norm, max = trial_max;
            memcpy(lam, d.trial + k * m, mm * sizeof *lam);
            memcpy(s, d.trial_s + k * m, mm * sizeof *s);
            memcpy(d.sums, d.trial_sums + (size_t)k * S, (size_t)S * sizeof *d.sums);
          }
        }
        tries += count;
      }
    }
  }
  if (st == VOX_OK) st = ops->dual_solution(be, w, v, lam);
  free(all);
  TRY(st);
  /* the other variables of the subproblem at lam: y, the multipliers of y
   * >= 0 from c + d y - mu - lam = 0, z = 0 and its multiplier from a0 -
   * zet - a lam = 0 (a = 0) */
  for (int i = 0; i < m; i++) {
    y[i] = y_of(o, lam[i]);
    mu[i] = fmax(0, o->c + o->d * y[i] - lam[i]);
  }
  *z = 0, *zet = o->a0;
  return VOX_OK;
}

vox_status vox_mma_subproblem_save(vox_context *ctx, const vox_mma_options *o, const char *prefix,
                                   vox_checkpoint *out) {
  char name[VOX_NAME_MAX];
  snprintf(name, sizeof name, "%s_subproblem", prefix);
  const double method = o->subproblem;
  return vox_checkpoint_add(ctx, out, name, 1, &method);
}

vox_status vox_mma_subproblem_check(vox_context *ctx, const vox_mma_options *o,
                                    const char *prefix, const vox_checkpoint *state) {
  char name[VOX_NAME_MAX];
  snprintf(name, sizeof name, "%s_subproblem", prefix);
  const vox_checkpoint_array *a = vox_checkpoint_find(state, name);
  const double had = a && a->length == 1 ? a->values[0] : VOX_MMA_PRIMAL_DUAL;
  if (had != (double)o->subproblem)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "the checkpoint's run solved MMA's subproblems by the %s method, this run "
                     "by the %s one: a resumed run needs the options of the run that made the "
                     "checkpoint",
                     had == VOX_MMA_DUAL ? "dual" : "primal-dual",
                     vox_mma_subproblem_name(o->subproblem));
  return VOX_OK;
}
