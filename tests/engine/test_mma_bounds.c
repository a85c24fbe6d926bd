/* SPDX-License-Identifier: BSD-3-Clause */
/* MMA's bounds and convexity options (voxfe/mma.h: vox_mma_bounds,
 * vox_mma_convexity) against hand computations:
 *
 *   box        four densities in [0, 1] with a move limit of 0.2 under
 *              bounds = move: the first asymptotes at half of each
 *              density's move-limit box (written out by hand, and not the
 *              default's half of [0, 1]); the new x at the box's or the
 *              asymptotes' move limit, where a linear objective alone
 *              drives it;
 *              iterations 3 to 6 widened, narrowed and clamped to 0.01 to
 *              10 times the box's width (Svanberg's rules recomputed here
 *              from the iterates the method returned), each clamp taken;
 *   convexity  one variable with a gradient as small as raa0: the
 *              subproblem's minimiser in closed form, (sqrt(p) L +
 *              sqrt(q) U) / (sqrt(p) + sqrt(q)), with Svanberg's terms and
 *              with Aage's, which differ;
 *   threads    a random problem of 3000 variables under bounds = move and
 *              convexity = aage: the same bits with 1 and 3 threads, and
 *              other iterates than the defaults';
 *   checkpoint a state saved under bounds = move is refused by a method
 *              with the default bounds and taken by one with its own; one
 *              saved before these options (12 parameters) is taken with
 *              the defaults and refused with bounds = move. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "voxfe/voxfe.h"

enum { N = 4 };

/* The asymptotes of iteration k >= 3 by Svanberg's rules with bounds lo, hi
 * (the caller's box); *clamped gets 1 where a clamp decided. */
static void asymptotes(const vox_mma_options *o, double x, double x1, double x2, double low_old,
                       double upp_old, double lo, double hi, double *low, double *upp,
                       int *clamped_wide, int *clamped_narrow) {
  const double w = fmax(hi - lo, 1e-5), trend = (x - x1) * (x1 - x2);
  const double f = trend > 0 ? o->asymptote_increase : trend < 0 ? o->asymptote_decrease : 1;
  double l = x - f * (x1 - low_old), u = x + f * (upp_old - x1);
  if (l < x - 10 * w) l = x - 10 * w, *clamped_wide = 1;
  if (l > x - 0.01 * w) l = x - 0.01 * w, *clamped_narrow = 1;
  if (u > x + 10 * w) u = x + 10 * w, *clamped_wide = 1;
  if (u < x + 0.01 * w) u = x + 0.01 * w, *clamped_narrow = 1;
  *low = l, *upp = u;
}

/* Runs 6 iterations of a linear objective whose gradient's sign flips
 * every other iteration for the second density (so that it oscillates)
 * under bounds = move, and checks each iteration's asymptotes. */
static void box_run(vox_context *ctx, double init, double decrease, int *wide, int *narrow) {
  vox_mma_options o;
  vox_mma_options_default(&o);
  o.bounds = VOX_MMA_BOUNDS_MOVE;
  o.move = 0.2;
  o.asymptote_init = init;
  o.asymptote_decrease = decrease;
  vox_mma *mma = NULL;
  CHECK_OK(ctx, vox_mma_create(ctx, N, 1, &o, &mma));
  if (!mma) return;
  const double xmin[N] = {0, 0, 0, 0}, xmax[N] = {1, 1, 1, 1};
  double x[N] = {0.05, 0.5, 0.9, 1.0}, x1[N], x2[N], low[N], upp[N], xnew[N];
  memcpy(x1, x, sizeof x), memcpy(x2, x, sizeof x);
  for (int k = 1; k <= 6; k++) {
    const double sign = k % 4 < 2 ? 1 : -1;
    const double df0[N] = {-1, -sign, 1, 1}, dfdx[N] = {0.25, 0.25, 0.25, 0.25};
    const double g = (x[0] + x[1] + x[2] + x[3]) / 4 - 0.9; /* never active */
    CHECK_OK(ctx, vox_mma_update(mma, x, xmin, xmax, df0, &g, dfdx, xnew));
    const double *L = vox_mma_lower(mma), *U = vox_mma_upper(mma);
    for (int j = 0; j < N; j++) {
      const double lo = fmax(0, x[j] - 0.2), hi = fmin(1, x[j] + 0.2);
      double l, u;
      if (k <= 2) {
        l = x[j] - init * (hi - lo), u = x[j] + init * (hi - lo);
      } else {
        asymptotes(&o, x[j], x1[j], x2[j], low[j], upp[j], lo, hi, &l, &u, wide, narrow);
      }
      CHECK_CLOSE(L[j], l, 1e-14);
      CHECK_CLOSE(U[j], u, 1e-14);
      /* the new x within the box and the asymptotes' move limits */
      CHECK(xnew[j] >= fmax(lo, l + 0.1 * (x[j] - l)) - 1e-12);
      CHECK(xnew[j] <= fmin(hi, u - 0.1 * (u - x[j])) + 1e-12);
      low[j] = L[j], upp[j] = U[j];
    }
    memcpy(x2, x1, sizeof x), memcpy(x1, x, sizeof x), memcpy(x, xnew, sizeof x);
  }
  vox_mma_destroy(mma);
}

static void test_box(vox_context *ctx) {
  vox_mma_options o;
  vox_mma_options_default(&o);
  o.bounds = VOX_MMA_BOUNDS_MOVE;
  o.move = 0.2;
  vox_mma *mma = NULL, *plain = NULL;
  CHECK_OK(ctx, vox_mma_create(ctx, N, 1, &o, &mma));
  o.bounds = VOX_MMA_BOUNDS_DESIGN;
  CHECK_OK(ctx, vox_mma_create(ctx, N, 1, &o, &plain));
  if (!mma || !plain) return;
  const double xmin[N] = {0, 0, 0, 0}, xmax[N] = {1, 1, 1, 1};
  const double x[N] = {0.05, 0.5, 0.9, 1.0}, df0[N] = {-1, -1, 1, 1};
  /* a constraint of gradient 0, inactive: x follows the objective alone */
  const double dfdx[N] = {0, 0, 0, 0}, g = -1;
  double xnew[N], xplain[N];
  CHECK_OK(ctx, vox_mma_update(mma, x, xmin, xmax, df0, &g, dfdx, xnew));
  CHECK_OK(ctx, vox_mma_update(plain, x, xmin, xmax, df0, &g, dfdx, xplain));
  /* the boxes [0, 0.25], [0.3, 0.7], [0.7, 1], [0.8, 1]: half their widths
   * 0.125, 0.2, 0.15, 0.1 either side of x */
  const double low[N] = {-0.075, 0.3, 0.75, 0.9}, upp[N] = {0.175, 0.7, 1.05, 1.1};
  /* the objective drives x to the move limit of each: min(U - 0.1 (U - x),
   * box) up, max(L + 0.1 (x - L), box) down */
  const double moved[N] = {0.1625, 0.68, 0.765, 0.91};
  for (int j = 0; j < N; j++) {
    CHECK_CLOSE(vox_mma_lower(mma)[j], low[j], 1e-15);
    CHECK_CLOSE(vox_mma_upper(mma)[j], upp[j], 1e-15);
    CHECK_CLOSE(xnew[j], moved[j], 1e-6);
    /* the default's asymptotes: x -+ 0.5 of [0, 1] */
    CHECK_CLOSE(vox_mma_lower(plain)[j], x[j] - 0.5, 1e-15);
    CHECK(fabs(vox_mma_lower(plain)[j] - low[j]) > 0.1);
  }
  /* ... and with them the default moves x by the move limit times [0, 1] */
  CHECK_CLOSE(xplain[1], 0.7, 1e-6);
  vox_mma_destroy(mma), vox_mma_destroy(plain);

  /* the later iterations' rules, each clamp taken in one of the runs */
  int wide = 0, narrow = 0;
  box_run(ctx, 0.5, 0.7, &wide, &narrow);
  box_run(ctx, 10, 0.7, &wide, &narrow);
  box_run(ctx, 0.5, 0.01, &wide, &narrow);
  CHECK(wide && narrow);
}

/* One variable in [0, 1] at 0.5, the objective's gradient g0, a constraint
 * of gradient 0 far from active: the first subproblem's x. */
static double one_variable(vox_context *ctx, vox_mma_convexity convexity, double g0, double raa0) {
  vox_mma_options o;
  vox_mma_options_default(&o);
  o.convexity = convexity;
  o.raa0 = raa0;
  o.epsilon_min = 1e-12;
  vox_mma *mma = NULL;
  CHECK_OK(ctx, vox_mma_create(ctx, 1, 1, &o, &mma));
  if (!mma) return NAN;
  const double x = 0.5, xmin = 0, xmax = 1, dfdx = 0, g = -1;
  double xnew = NAN;
  CHECK_OK(ctx, vox_mma_update(mma, &x, &xmin, &xmax, &g0, &g, &dfdx, &xnew));
  CHECK_CLOSE(vox_mma_lower(mma)[0], 0, 1e-15);
  CHECK_CLOSE(vox_mma_upper(mma)[0], 1, 1e-15);
  vox_mma_destroy(mma);
  return xnew;
}

static void test_convexity(vox_context *ctx) {
  /* L = 0, U = 1, x = 0.5 (U - x = x - L = 1/2): p = (max(g, 0) + 0.001
   * |g| + r) / 4, q = (max(-g, 0) + 0.001 |g| + r) / 4, and the minimiser
   * of p / (U - x) + q / (x - L) is sqrt(q) / (sqrt(p) + sqrt(q)), inside
   * the move limits [0.05, 0.95] */
  const double g0 = -1e-5, raa0 = 1e-5;
  const double r_svanberg = raa0 / 1, r_aage = 0.5 * raa0 / (1 - 0);
  const double ps = 0.001e-5 + r_svanberg, qs = 1e-5 + 0.001e-5 + r_svanberg;
  const double pa = 0.001e-5 + r_aage, qa = 1e-5 + 0.001e-5 + r_aage;
  const double xs = sqrt(qs) / (sqrt(ps) + sqrt(qs)), xa = sqrt(qa) / (sqrt(pa) + sqrt(qa));
  const double got_s = one_variable(ctx, VOX_MMA_CONVEXITY_SVANBERG, g0, raa0);
  const double got_a = one_variable(ctx, VOX_MMA_CONVEXITY_AAGE, g0, raa0);
  fprintf(stderr, "convexity: svanberg x %.12g (hand %.12g), aage x %.12g (hand %.12g)\n", got_s,
          xs, got_a, xa);
  CHECK_CLOSE(got_s, xs, 1e-7);
  CHECK_CLOSE(got_a, xa, 1e-7);
  CHECK(fabs(xs - xa) > 0.01);
}

static double uniform(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return (double)(*s >> 11) * 0x1p-53;
}

/* 4 iterations of a random problem (2 constraints) with `threads`: the
 * iterates (4 n) and the last asymptotes (2 n). */
static void random_run(vox_context *ctx, const vox_mma_options *o, int threads, size_t n,
                       double *iterates, double *asym) {
  vox_mma *mma = NULL;
  CHECK_OK(ctx, vox_mma_create(ctx, n, 2, o, &mma));
  if (!mma) return;
  vox_mma_set_threads(mma, threads);
  uint64_t seed = 42;
  double *xmin = malloc(n * sizeof *xmin), *xmax = malloc(n * sizeof *xmax),
         *x = malloc(n * sizeof *x), *df0 = malloc(n * sizeof *df0),
         *dfdx = malloc(2 * n * sizeof *dfdx);
  for (size_t j = 0; j < n; j++)
    xmin[j] = 1e-3, xmax[j] = 1, x[j] = 0.1 + 0.8 * uniform(&seed);
  for (int k = 0; k < 4; k++) {
    double g[2] = {0, 0};
    for (size_t j = 0; j < n; j++) {
      df0[j] = -uniform(&seed) * (j % 7 ? 1 : 1e-6);
      dfdx[j] = 1.0 / (double)n;
      dfdx[n + j] = (uniform(&seed) - 0.3) / (double)n;
      g[0] += x[j] / (double)n, g[1] += x[j] * dfdx[n + j];
    }
    g[0] -= 0.5, g[1] -= 0.1;
    CHECK_OK(ctx, vox_mma_update(mma, x, xmin, xmax, df0, g, dfdx, x));
    memcpy(iterates + (size_t)k * n, x, n * sizeof *x);
  }
  memcpy(asym, vox_mma_lower(mma), n * sizeof *asym);
  memcpy(asym + n, vox_mma_upper(mma), n * sizeof *asym);
  free(xmin), free(xmax), free(x), free(df0), free(dfdx);
  vox_mma_destroy(mma);
}

static void test_threads(vox_context *ctx) {
  const size_t n = 3000;
  vox_mma_options o;
  vox_mma_options_default(&o);
  o.bounds = VOX_MMA_BOUNDS_MOVE;
  o.convexity = VOX_MMA_CONVEXITY_AAGE;
  o.move = 0.2;
  o.raa0 = 1e-6;
  double *a = calloc(6 * n, sizeof *a), *b = calloc(6 * n, sizeof *b), *c = calloc(6 * n, sizeof *c);
  random_run(ctx, &o, 1, n, a, a + 4 * n);
  random_run(ctx, &o, 3, n, b, b + 4 * n);
  CHECK(memcmp(a, b, 6 * n * sizeof *a) == 0);
  vox_mma_options_default(&o);
  o.move = 0.2;
  random_run(ctx, &o, 1, n, c, c + 4 * n);
  double differ = 0;
  for (size_t j = 0; j < 4 * n; j++) differ = fmax(differ, fabs(a[j] - c[j]));
  fprintf(stderr, "threads: the iterates with 1 and 3 threads %s; against the defaults' up to %g\n",
          memcmp(a, b, 6 * n * sizeof *a) ? "DIFFER" : "equal", differ);
  CHECK(differ > 1e-3);
  free(a), free(b), free(c);
}

static vox_status restore_into(vox_context *ctx, const vox_mma_options *o,
                               const vox_checkpoint *ck) {
  vox_mma *mma = NULL;
  vox_status st = vox_mma_create(ctx, N, 1, o, &mma);
  if (st == VOX_OK) st = vox_mma_restore(mma, "mma", ck);
  vox_mma_destroy(mma);
  return st;
}

static void test_checkpoint(vox_context *ctx) {
  vox_mma_options box, plain;
  vox_mma_options_default(&plain);
  box = plain;
  box.bounds = VOX_MMA_BOUNDS_MOVE;
  vox_mma *mma = NULL;
  CHECK_OK(ctx, vox_mma_create(ctx, N, 1, &box, &mma));
  if (!mma) return;
  const double xmin[N] = {0, 0, 0, 0}, xmax[N] = {1, 1, 1, 1}, df0[N] = {-1, -1, 1, 1};
  const double dfdx[N] = {0, 0, 0, 0}, g = -1;
  double x[N] = {0.05, 0.5, 0.9, 1.0};
  for (int k = 0; k < 2; k++) CHECK_OK(ctx, vox_mma_update(mma, x, xmin, xmax, df0, &g, dfdx, x));
  vox_checkpoint ck = {0};
  CHECK_OK(ctx, vox_mma_save(mma, "mma", &ck));
  vox_mma_destroy(mma);
  CHECK(restore_into(ctx, &plain, &ck) == VOX_ERR_INVALID_ARGUMENT);
  CHECK(restore_into(ctx, &box, &ck) == VOX_OK);
  /* the same state as a build before the options wrote it */
  for (size_t i = 0; i < ck.n_arrays; i++)
    if (!strcmp(ck.arrays[i].name, "mma_options")) ck.arrays[i].length = 12;
  CHECK(restore_into(ctx, &plain, &ck) == VOX_OK);
  CHECK(restore_into(ctx, &box, &ck) == VOX_ERR_INVALID_ARGUMENT);
  vox_checkpoint_free(&ck);
}

int main(int argc, char **argv) {
  vox_context *ctx;
  vox_context_create(&ctx);
  if (check_wanted(argc, argv, "box")) test_box(ctx);
  if (check_wanted(argc, argv, "convexity")) test_convexity(ctx);
  if (check_wanted(argc, argv, "threads")) test_threads(ctx);
  if (check_wanted(argc, argv, "checkpoint")) test_checkpoint(ctx);
  vox_context_destroy(ctx);
  CHECK_DONE();
}
