/* SPDX-License-Identifier: BSD-3-Clause */
/* The EFG path's OC update (engine/efg_oc.c) against a plain bisection in
 * long double written here from eq. 21-22 of Lu, Gong, Zhang, Xie and Yin
 * 2021: the multiplier to the update's bracket width (2e-9 in log lambda),
 * the new densities, the volume on the feasible side of the target, the
 * change and the volume going in; started cold and around the answer
 * (fewer passes, the same answer); with q = 2; targets out of reach (every
 * node at a bound); the same bits on 1 and 2 threads past the size where
 * the sums go to threads; and the measure of non-discreteness's sum. */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "efg_oc.h"
#include "voxfe/model.h"

typedef struct instance {
  size_t n;
  double *rho, *dc, *dv, *rho_new, *work;
  uint8_t *design;
} instance;

static double uniform(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return (double)(*s >> 11) / 9007199254740992.0;
}

/* Densities in [1e-3, 1], sensitivities of both signs (mostly negative, as
 * slightly negative shape functions leave some positive), volumes in
 * (0.5, 1.5], one node in 7 outside the design. */
static instance make(size_t n, uint64_t seed) {
  instance a = {n,
                malloc(n * sizeof(double)),
                malloc(n * sizeof(double)),
                malloc(n * sizeof(double)),
                malloc(n * sizeof(double)),
                malloc(3 * n * sizeof(double)),
                malloc(n)};
  for (size_t i = 0; i < n; i++) {
    a.rho[i] = 1e-3 + (1 - 1e-3) * uniform(&seed);
    a.dc[i] = -exp(8 * uniform(&seed) - 4) * (uniform(&seed) < 0.03 ? -1e-3 : 1);
    a.dv[i] = 0.5 + uniform(&seed);
    a.design[i] = i % 7 != 3;
  }
  return a;
}

static void release(instance *a) {
  free(a->rho), free(a->dc), free(a->dv), free(a->rho_new), free(a->work), free(a->design);
}

/* Node i's candidate at t = log(lambda), from the equations, in long double. */
static long double candidate(const vox_efg_oc_options *o, const instance *a, size_t i,
                             long double t) {
  const long double x = a->rho[i];
  if (!a->design[i]) return x;
  const long double lo = fmaxl(o->rmin, x - o->move), hi = fminl(1, x + o->move);
  const long double b = fmaxl(0, -a->dc[i]) / (expl(t) * a->dv[i]);
  const long double trial = x * powl(b, o->eta);
  if (trial <= lo) return lo;
  if (trial >= hi) return hi;
  return o->q == 1 ? trial : fmaxl(o->rmin, powl(trial, o->q));
}

static long double volume_at(const vox_efg_oc_options *o, const instance *a, long double t) {
  long double v = 0;
  for (size_t i = 0; i < a->n; i++) v += a->dv[i] * candidate(o, a, i, t);
  return v;
}

/* The smallest t whose volume is at most the target, by 200 halvings of a
 * bracket wide enough for any of these instances. */
static long double reference(const vox_efg_oc_options *o, const instance *a) {
  long double lo = -200, hi = 200;
  for (int k = 0; k < 200; k++) {
    const long double mid = 0.5L * (lo + hi);
    if (volume_at(o, a, mid) > o->target)
      lo = mid;
    else
      hi = mid;
  }
  return hi;
}

static double design_volume(const instance *a, const double *x) {
  long double v = 0;
  for (size_t i = 0; i < a->n; i++) v += (long double)a->dv[i] * x[i];
  return (double)v;
}

static void check_against_reference(const char *what, const vox_efg_oc_options *o,
                                    instance *a, int most_passes) {
  vox_efg_oc_result res;
  vox_efg_oc_update(o, a->n, a->rho, a->dc, a->dv, a->design, a->work, a->rho_new, &res);
  const long double t = reference(o, a);
  double worst = 0, change = 0;
  for (size_t i = 0; i < a->n; i++) {
    const double want = (double)candidate(o, a, i, t);
    worst = fmax(worst, fabs(a->rho_new[i] - want) / want);
    change = fmax(change, fabs(a->rho_new[i] - a->rho[i]));
  }
  const double v = design_volume(a, a->rho_new);
  printf("  %-34s log lambda %.12f (reference %.12Lf), %2d passes, densities %.1e, "
         "volume %.3e under\n",
         what, res.log_lambda, t, res.passes, worst, (o->target - v) / o->target);
  CHECK(fabs(res.log_lambda - (double)t) <= 2.5e-9);
  CHECK(worst <= 2e-9);
  CHECK(v <= o->target * (1 + 1e-15) && v >= o->target * (1 - 1e-8));
  CHECK(res.change == change);
  CHECK_CLOSE(res.volume, design_volume(a, a->rho), 1e-13 * design_volume(a, a->rho));
  CHECK(res.passes <= most_passes);
}

static vox_efg_oc_options options_for(const instance *a, double fraction, double q) {
  double v0 = 0;
  for (size_t i = 0; i < a->n; i++) v0 += a->dv[i];
  return (vox_efg_oc_options){.eta = 0.5,
                              .move = 0.2,
                              .rmin = 1e-3,
                              .q = q,
                              .target = fraction * v0,
                              .log_lambda = NAN};
}

static void test_search(void) {
  instance a = make(5000, 7);
  vox_efg_oc_options o = options_for(&a, 0.4, 1);
  check_against_reference("cold", &o, &a, 40);
  /* around the answer: the search's usual start after the first update */
  vox_efg_oc_result res;
  vox_efg_oc_update(&o, a.n, a.rho, a.dc, a.dv, a.design, a.work, a.rho_new, &res);
  o.log_lambda = res.log_lambda + 0.01;
  check_against_reference("warm, 0.01 off", &o, &a, 12);
  o.log_lambda = res.log_lambda - 3;
  check_against_reference("warm, 3 off", &o, &a, 20);
  o = options_for(&a, 0.55, 2);
  check_against_reference("q = 2", &o, &a, 40);
  o = options_for(&a, 0.45, 1);
  o.eta = 0.3; /* pow, not sqrt */
  check_against_reference("eta = 0.3", &o, &a, 40);
  release(&a);
}

/* Targets beyond what the move limit allows: every design node at its
 * upper (lower) bound. */
static void test_out_of_reach(void) {
  instance a = make(3000, 11);
  for (int side = 0; side < 2; side++) {
    vox_efg_oc_options o = options_for(&a, side ? 0.999 : 0.001, 1);
    vox_efg_oc_result res;
    vox_efg_oc_update(&o, a.n, a.rho, a.dc, a.dv, a.design, a.work, a.rho_new, &res);
    size_t off = 0;
    for (size_t i = 0; i < a.n; i++) {
      const double lo = fmax(o.rmin, a.rho[i] - o.move), hi = fmin(1, a.rho[i] + o.move);
      /* a node whose sensitivity is of the wrong sign goes down even so */
      const double want = !a.design[i]            ? a.rho[i]
                          : side && a.dc[i] < 0 ? hi
                                                  : lo;
      off += a.rho_new[i] != want;
    }
    printf("  target %s reach: %zu of %zu nodes off their bound\n", side ? "above" : "below",
           off, a.n);
    CHECK(off == 0);
  }
  release(&a);
}

/* Past the size where the sums go to threads: the same bits on 1 and 2. */
static void test_threads(void) {
  instance a = make(300000, 5);
  const vox_efg_oc_options o = options_for(&a, 0.35, 1);
  double *one = malloc(a.n * sizeof *one);
  vox_efg_oc_result r1, r2;
  omp_set_num_threads(1);
  vox_efg_oc_update(&o, a.n, a.rho, a.dc, a.dv, a.design, a.work, one, &r1);
  omp_set_num_threads(2);
  vox_efg_oc_update(&o, a.n, a.rho, a.dc, a.dv, a.design, a.work, a.rho_new, &r2);
  CHECK(memcmp(one, a.rho_new, a.n * sizeof *one) == 0);
  CHECK(r1.log_lambda == r2.log_lambda && r1.volume == r2.volume && r1.passes == r2.passes);
  printf("  1 and 2 threads, %zu nodes: %s\n", a.n,
         memcmp(one, a.rho_new, a.n * sizeof *one) ? "differ" : "the same bits");
  free(one);
  release(&a);
}

static void test_non_discreteness(void) {
  enum { CELLS = 50 };
  uint8_t role[CELLS];
  double g[8 * CELLS], want = 0;
  uint64_t seed = 3;
  for (int c = 0; c < CELLS; c++) {
    role[c] = c % 5 == 0 ? VOX_ROLE_SOLID : VOX_ROLE_DESIGN;
    double d = 0;
    for (int q = 0; q < 8; q++) d += g[8 * c + q] = uniform(&seed);
    if (role[c] == VOX_ROLE_DESIGN) want += d / 8 * (1 - d / 8);
  }
  CHECK_CLOSE(vox_efg_non_discreteness_sum(CELLS, role, g), want, 1e-14);
}

int main(void) {
  test_search();
  test_out_of_reach();
  test_threads();
  test_non_discreteness();
  CHECK_DONE();
}
