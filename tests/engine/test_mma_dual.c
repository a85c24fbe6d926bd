/* SPDX-License-Identifier: BSD-3-Clause */
/* MMA's subproblem by the dual method (VOX_MMA_DUAL, engine/mma_dual.c)
 * against the primal-dual method and a reference of its own:
 *
 *   compare     random problems (n 7 to 20000, m 1 to 4), four outer
 *               iterations each from the same iterates: the dual method's x
 *               within 1e-6 of the range of the primal-dual method's (both
 *               solve the same strictly convex subproblem; the dual to a
 *               barrier of 1e-10, the primal-dual to 1e-12, as its barrier
 *               moves the x near their bounds by up to 1e-5 at 1e-10), its
 *               multipliers near theirs, and the subproblem's
 *               KKT conditions at its solution (stationarity in x on its
 *               box, the constraints, complementarity);
 *   bisection   for m = 1, the multiplier found by bisection on the
 *               monotone dual gradient in long double, and x at it;
 *   bits        the dual method's iterates with 1 and 3 threads, and with
 *               one and several points a pass over the variables (a CPU
 *               backend that takes several, as the GPU's does), the same
 *               bits; a run resumed from a checkpoint too;
 *   options     a != 0, d = 0 and an unknown method refused, and a
 *               checkpoint of the other method;
 *   cantilever  the 24x12x12 cantilever, 30 iterations: the dual method's
 *               compliance history within 1e-4 of the primal-dual method's
 *               for ten iterations, the final one within 1 %, its volume
 *               and KKT residual (see test_cantilever). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "backend_ops.h"
#include "mma_backend.h"
#include "voxfe/voxfe.h"

enum { ITERATIONS = 4 };

static double uniform(uint64_t *state) {
  *state = *state * 6364136223846793005u + 1442695040888963407u;
  return (double)(*state >> 11) / 9007199254740992.0;
}

static double normal(uint64_t *s) {
  const double u = fmax(uniform(s), 1e-300), v = uniform(s);
  return sqrt(-2 * log(u)) * cos(6.283185307179586 * v);
}

/* One random problem: bounds, a start, and per iteration the gradients and
 * the constraints' values (the scales of tests/engine/mma_subproblem.py). */
typedef struct problem {
  size_t n;
  int m;
  double *xmin, *xmax, *x0, range;
  double *df0[ITERATIONS], *fval[ITERATIONS], *dfdx[ITERATIONS];
} problem;

static void problem_make(problem *p, size_t n, int m, uint64_t seed) {
  memset(p, 0, sizeof *p);
  p->n = n, p->m = m;
  p->xmin = malloc(n * sizeof(double)), p->xmax = malloc(n * sizeof(double));
  p->x0 = malloc(n * sizeof(double));
  for (size_t j = 0; j < n; j++) {
    p->xmin[j] = seed % 2 ? 0.001 : -uniform(&seed);
    p->xmax[j] = p->xmin[j] + 0.5 + 1.5 * uniform(&seed);
    p->x0[j] = p->xmin[j] + (0.1 + 0.8 * uniform(&seed)) * (p->xmax[j] - p->xmin[j]);
    p->range = fmax(p->range, p->xmax[j] - p->xmin[j]);
  }
  for (int k = 0; k < ITERATIONS; k++) {
    p->df0[k] = malloc(n * sizeof(double));
    p->fval[k] = malloc((size_t)m * sizeof(double));
    p->dfdx[k] = malloc((size_t)m * n * sizeof(double));
    const double scale = 0.1 + 9.9 * uniform(&seed);
    for (size_t j = 0; j < n; j++) p->df0[k][j] = scale * normal(&seed);
    for (int i = 0; i < m; i++) {
      p->fval[k][i] = 0.6 * uniform(&seed) - 0.3;
      const double offset = 2 * uniform(&seed) - 0.5;
      for (size_t j = 0; j < n; j++)
        p->dfdx[k][(size_t)i * n + j] = (normal(&seed) + offset) / (double)n;
    }
  }
}

static void problem_free(problem *p) {
  free(p->xmin), free(p->xmax), free(p->x0);
  for (int k = 0; k < ITERATIONS; k++) free(p->df0[k]), free(p->fval[k]), free(p->dfdx[k]);
}

static vox_mma *make(vox_context *ctx, vox_backend *be, const problem *p,
                     vox_mma_subproblem method, double epsilon_min) {
  vox_mma_options o;
  vox_mma_options_default(&o);
  o.subproblem = method;
  o.epsilon_min = epsilon_min;
  vox_mma *mma = NULL;
  CHECK_OK(ctx, vox_mma_create_on(be, p->n, p->m, &o, &mma));
  return mma;
}

/* Outer iteration k from xval on the CPU backend be (its vectors are host
 * memory): the new x into xnew. */
static int iterate(vox_context *ctx, vox_mma *mma, const problem *p, int k, const double *xval,
                   double *xnew) {
  vox_mma_vectors *v = vox_mma_vectors_of(mma);
  const size_t n = p->n, m = (size_t)p->m;
  memcpy(v->xval.data, xval, n * sizeof(double));
  memcpy(v->xmin.data, p->xmin, n * sizeof(double));
  memcpy(v->xmax.data, p->xmax, n * sizeof(double));
  memcpy(v->df0dx.data, p->df0[k], n * sizeof(double));
  memcpy(v->dfdx.data, p->dfdx[k], m * n * sizeof(double));
  const vox_status st = vox_mma_step(mma, p->fval[k]);
  CHECK_OK(ctx, st);
  if (st == VOX_OK) memcpy(xnew, v->x.data, n * sizeof(double));
  return st == VOX_OK;
}

/* x_j of the subproblem in v at the multipliers lam, in long double (the
 * reference's), and its p and q. */
static long double x_at(const vox_mma_vectors *v, size_t j, const long double *lam,
                        long double *pl, long double *ql) {
  const size_t n = v->n;
  long double p = v->p0.data[j], q = v->q0.data[j];
  for (int i = 0; i < v->m; i++)
    p += lam[i] * v->P.data[(size_t)i * n + j], q += lam[i] * v->Q.data[(size_t)i * n + j];
  const long double low = v->low.data[j], upp = v->upp.data[j];
  long double x = (sqrtl(p) * low + sqrtl(q) * upp) / (sqrtl(p) + sqrtl(q));
  if (x < v->alfa.data[j]) x = v->alfa.data[j];
  if (x > v->beta.data[j]) x = v->beta.data[j];
  *pl = p, *ql = q;
  return x;
}

/* The constraints' right-hand sides b_i of the subproblem just solved
 * (xval is the history's xold1 after the step). */
static void rhs(const vox_mma_vectors *v, const double *fval, long double *b) {
  const size_t n = v->n;
  const double *xval = v->xold1.data, *low = v->low.data, *upp = v->upp.data;
  for (int i = 0; i < v->m; i++) {
    long double s = 0;
    for (size_t j = 0; j < n; j++)
      s += v->P.data[(size_t)i * n + j] / (long double)(upp[j] - xval[j]) +
           v->Q.data[(size_t)i * n + j] / (long double)(xval[j] - low[j]);
    b[i] = s - fval[i];
  }
}

/* The KKT conditions of the subproblem in v at its x and the method's
 * multipliers lam (c = 1000, d = 1: y_i = max(0, lam_i - c)): the largest
 * violation of stationarity on the box (relative to the terms), of the
 * constraints and of complementarity. */
static double subproblem_kkt(const vox_mma_vectors *v, const double *fval, const double *lam) {
  const size_t n = v->n;
  const int m = v->m;
  long double b[4], g[4] = {0}, lamd[4];
  rhs(v, fval, b);
  for (int i = 0; i < m; i++) lamd[i] = lam[i];
  double worst = 0;
  for (size_t j = 0; j < n; j++) {
    const long double x = v->x.data[j], u = v->upp.data[j] - x, l = x - v->low.data[j];
    long double p = v->p0.data[j], q = v->q0.data[j];
    for (int i = 0; i < m; i++) {
      const long double P = v->P.data[(size_t)i * n + j], Q = v->Q.data[(size_t)i * n + j];
      p += lamd[i] * P, q += lamd[i] * Q;
      g[i] += P / u + Q / l;
    }
    const long double r = p / (u * u) - q / (l * l), scale = p / (u * u) + q / (l * l);
    double bad = 0;
    if (x > v->alfa.data[j] && x < v->beta.data[j]) bad = (double)(fabsl(r) / scale);
    else if (x <= v->alfa.data[j]) bad = (double)(fmaxl(-r, 0) / scale);
    else bad = (double)(fmaxl(r, 0) / scale);
    worst = fmax(worst, bad);
  }
  for (int i = 0; i < m; i++) {
    const long double y = lamd[i] > 1000 ? lamd[i] - 1000 : 0, c = g[i] - y - b[i];
    worst = fmax(worst, fmax((double)c, 0));              /* the constraint */
    worst = fmax(worst, (double)fabsl(lamd[i] * c));      /* complementarity */
    worst = fmax(worst, -lam[i]);
  }
  return worst;
}

/* For m = 1: the dual gradient g(x(lam)) - y(lam) - b in long double,
 * which decreases with lam. */
static long double gradient(const vox_mma_vectors *v, long double b, long double lam) {
  const long double l1[1] = {lam};
  long double s = 0, pl, ql;
  for (size_t j = 0; j < v->n; j++) {
    const long double x = x_at(v, j, l1, &pl, &ql);
    s += v->P.data[j] / (v->upp.data[j] - x) + v->Q.data[j] / (x - v->low.data[j]);
  }
  return s - (lam > 1000 ? lam - 1000 : 0) - b;
}

/* For m = 1: the multiplier by bisection on the dual gradient, and x at it
 * into x. */
static long double bisection(const vox_mma_vectors *v, const double *fval, double *x) {
  long double b, lo = 0, hi = 1, pl, ql;
  rhs(v, fval, &b);
  if (gradient(v, b, 0) <= 0) {
    hi = 0;
  } else {
    while (gradient(v, b, hi) > 0) lo = hi, hi *= 2;
    for (int it = 0; it < 200 && hi - lo > 1e-30L * hi; it++) {
      const long double mid = (lo + hi) / 2;
      if (gradient(v, b, mid) > 0) lo = mid;
      else hi = mid;
    }
  }
  const long double l1[1] = {(lo + hi) / 2};
  for (size_t j = 0; j < v->n; j++) x[j] = (double)x_at(v, j, l1, &pl, &ql);
  return l1[0];
}

static double max_difference(const double *a, const double *b, size_t n) {
  double d = 0;
  for (size_t j = 0; j < n; j++) d = fmax(d, fabs(a[j] - b[j]));
  return d;
}

static void test_compare(vox_context *ctx, vox_backend *be, size_t n, int m, uint64_t seed,
                         int bisect) {
  problem p;
  problem_make(&p, n, m, seed);
  vox_mma *pd = make(ctx, be, &p, VOX_MMA_PRIMAL_DUAL, 1e-12),
          *du = make(ctx, be, &p, VOX_MMA_DUAL, 1e-10);
  double *x = malloc(n * sizeof *x), *xp = malloc(n * sizeof *xp), *xd = malloc(n * sizeof *xd),
         *xb = malloc(n * sizeof *xb);
  memcpy(x, p.x0, n * sizeof *x);
  for (int k = 0; pd && du && k < ITERATIONS; k++) {
    if (!iterate(ctx, pd, &p, k, x, xp) || !iterate(ctx, du, &p, k, x, xd)) break;
    const double dx = max_difference(xd, xp, n) / p.range;
    double dlam = 0;
    for (int i = 0; i < m; i++)
      dlam = fmax(dlam, fabs(vox_mma_lambda(du)[i] - vox_mma_lambda(pd)[i]) /
                            fmax(1, fabs(vox_mma_lambda(pd)[i])));
    const double kkt = subproblem_kkt(vox_mma_vectors_of(du), p.fval[k], vox_mma_lambda(du));
    fprintf(stderr,
            "n %zu m %d iteration %d: max |x_dual - x_primal-dual| / range %.2e, multipliers "
            "%.2e, subproblem KKT %.2e\n",
            n, m, k + 1, dx, dlam, kkt);
    CHECK(dx <= 1e-6);
    CHECK(dlam <= 1e-5);
    CHECK(kkt <= 1e-8);
    if (bisect && m == 1) {
      const long double lam = bisection(vox_mma_vectors_of(du), p.fval[k], xb);
      const double db = max_difference(xd, xb, n) / p.range;
      const double dl = fabs(vox_mma_lambda(du)[0] - (double)lam) / fmax(1, (double)lam);
      fprintf(stderr, "  bisection: lambda %.12Lg (dual %.12g), max |x - x_bisection| / range %.2e\n",
              lam, vox_mma_lambda(du)[0], db);
      CHECK(db <= 1e-8);
      CHECK(dl <= 1e-8);
    }
    memcpy(x, xp, n * sizeof *x);
  }
  vox_mma_destroy(pd), vox_mma_destroy(du);
  free(x), free(xp), free(xd), free(xb);
  problem_free(&p);
}

/* A CPU backend whose dual passes take `slots` sums (several points) */
static vox_mma_ops several_ops;
static vox_backend_ops several_backend_ops;

static void run_dual(vox_context *ctx, vox_backend *be, const problem *p, int threads,
                     double *out /* ITERATIONS rows of n */, vox_checkpoint *save_after_2,
                     const vox_checkpoint *resume_from_2) {
  const size_t n = p->n;
  be->threads = threads;
  vox_mma *mma = make(ctx, be, p, VOX_MMA_DUAL, 1e-7);
  double *x = malloc(n * sizeof *x);
  memcpy(x, p->x0, n * sizeof *x);
  int k = 0;
  if (mma && resume_from_2) {
    CHECK_OK(ctx, vox_mma_restore(mma, "mma", resume_from_2));
    k = 2;
    memcpy(x, out + n, n * sizeof *x);
  }
  for (; mma && k < ITERATIONS; k++) {
    if (!iterate(ctx, mma, p, k, x, out + (size_t)k * n)) break;
    memcpy(x, out + (size_t)k * n, n * sizeof *x);
    if (k == 1 && save_after_2) CHECK_OK(ctx, vox_mma_save(mma, "mma", save_after_2));
  }
  vox_mma_destroy(mma);
  free(x);
}

static void test_bits(vox_context *ctx, vox_backend *be) {
  for (int m = 1; m <= 3; m++) {
    problem p;
    problem_make(&p, 5003, m, 40 + (uint64_t)m);
    const size_t size = ITERATIONS * p.n * sizeof(double);
    double *one = malloc(size), *three = malloc(size), *several = malloc(size),
           *resumed = malloc(size);
    vox_checkpoint ck = {0};
    run_dual(ctx, be, &p, 1, one, &ck, NULL);
    run_dual(ctx, be, &p, 3, three, NULL, NULL);
    CHECK(memcmp(one, three, size) == 0);
    const vox_backend_ops *stock = be->ops;
    several_ops = *stock->mma;
    several_ops.dual_slots = 16; /* 8 points a pass for m = 1, 3 for m = 2, 1 for m = 3 */
    several_backend_ops = *stock;
    several_backend_ops.mma = &several_ops;
    be->ops = &several_backend_ops;
    run_dual(ctx, be, &p, 2, several, NULL, NULL);
    be->ops = stock;
    CHECK(memcmp(one, several, size) == 0);
    memcpy(resumed, one, 2 * p.n * sizeof(double));
    run_dual(ctx, be, &p, 2, resumed, NULL, &ck);
    CHECK(memcmp(one, resumed, size) == 0);
    fprintf(stderr, "m %d: 1 and 3 threads, 1 and several points a pass, resumed: %s\n", m,
            memcmp(one, three, size) == 0 && memcmp(one, several, size) == 0 &&
                    memcmp(one, resumed, size) == 0
                ? "the same bits"
                : "DIFFERENT");
    vox_checkpoint_free(&ck);
    free(one), free(three), free(several), free(resumed);
    problem_free(&p);
  }
}

static void test_options(vox_context *ctx, vox_backend *be) {
  vox_mma_options o;
  vox_mma_options_default(&o);
  CHECK(o.subproblem == VOX_MMA_PRIMAL_DUAL);
  vox_mma_subproblem s = VOX_MMA_PRIMAL_DUAL;
  CHECK(vox_mma_subproblem_parse("dual", &s) == 0 && s == VOX_MMA_DUAL);
  CHECK(vox_mma_subproblem_parse("primal-dual", &s) == 0 && s == VOX_MMA_PRIMAL_DUAL);
  CHECK(vox_mma_subproblem_parse("newton", &s) != 0);
  CHECK(strcmp(vox_mma_subproblem_name(VOX_MMA_DUAL), "dual") == 0);
  o.subproblem = VOX_MMA_DUAL;
  CHECK_OK(ctx, vox_mma_options_check(ctx, &o));
  o.a = 1;
  CHECK(vox_mma_options_check(ctx, &o) == VOX_ERR_INVALID_ARGUMENT);
  o.a = 0, o.d = 0;
  CHECK(vox_mma_options_check(ctx, &o) == VOX_ERR_INVALID_ARGUMENT);
  o.d = 1, o.subproblem = (vox_mma_subproblem)7;
  CHECK(vox_mma_options_check(ctx, &o) == VOX_ERR_INVALID_ARGUMENT);
  /* a checkpoint of one method refused by the other, both ways */
  problem p;
  problem_make(&p, 11, 1, 3);
  double *out = malloc(ITERATIONS * p.n * sizeof(double));
  vox_checkpoint ck = {0};
  run_dual(ctx, be, &p, 1, out, &ck, NULL);
  vox_mma *pd = make(ctx, be, &p, VOX_MMA_PRIMAL_DUAL, 1e-7);
  if (pd) CHECK(vox_mma_restore(pd, "mma", &ck) == VOX_ERR_INVALID_ARGUMENT);
  vox_checkpoint ck2 = {0};
  if (pd) CHECK_OK(ctx, vox_mma_save(pd, "mma", &ck2));
  vox_mma *du = make(ctx, be, &p, VOX_MMA_DUAL, 1e-7);
  if (du) CHECK(vox_mma_restore(du, "mma", &ck2) == VOX_ERR_INVALID_ARGUMENT);
  vox_mma_destroy(pd), vox_mma_destroy(du);
  vox_checkpoint_free(&ck), vox_checkpoint_free(&ck2);
  free(out);
  problem_free(&p);
}

/* ---- the optimizer ---------------------------------------------------------- */

static int64_t node(const vox_grid *g, int64_t i, int64_t j, int64_t k) {
  return (k * (g->ny + 1) + j) * (g->nx + 1) + i;
}

static double cantilever(vox_context *ctx, vox_backend *be, vox_mma_subproblem method,
                         double epsilon_min, vox_optimize_result *r, double history[30]) {
  vox_grid g = {.nx = 24, .ny = 12, .nz = 12, .voxel_size = {1, 1, 1}};
  vox_model m = {0};
  CHECK_OK(ctx, vox_model_init(ctx, &m, &g));
  memset(m.label, 1, (size_t)vox_grid_elements(&g));
  vox_material design = {.label = 1, .youngs_modulus = 1, .poisson_ratio = 0.3, .name = "design"};
  CHECK_OK(ctx, vox_model_add_material(ctx, &m, &design));
  for (int64_t k = 0; k <= g.nz; k++)
    for (int64_t j = 0; j <= g.ny; j++)
      for (int c = 0; c < 3; c++) CHECK_OK(ctx, vox_model_add_constraint(ctx, &m, node(&g, 0, j, k), c, 0));
  CHECK_OK(ctx, vox_model_set_load_cases(ctx, &m, 1));
  for (int64_t j = 0; j <= g.ny; j++)
    CHECK_OK(ctx, vox_model_add_load(ctx, &m, node(&g, g.nx, j, 0), 2, 0, -1.0 / (g.ny + 1)));
  vox_optimizer_options o;
  vox_optimizer_options_default(&o);
  o.update = VOX_UPDATE_MMA;
  o.mma.subproblem = method;
  o.mma.epsilon_min = epsilon_min;
  o.max_iterations = 30;
  o.filter = VOX_FILTER_DENSITY;
  o.continuation = 0;
  o.change_tolerance = 0;
  o.objective_tolerance = 0;
  o.solver.rtol = 1e-10; /* the two runs' designs compared, not their solves' errors */
  CHECK_OK(ctx, vox_optimize(ctx, be, &m, &o, r));
  CHECK(m.n_history == 30);
  for (size_t i = 0; i < m.n_history && i < 30; i++) history[i] = m.history[i].objective;
  vox_model_free(&m);
  fprintf(stderr, "24x12x12 cantilever, MMA by the %s method (epsilon %g), %d iterations: "
          "compliance %.9g, volume %.6g, KKT %.3g, %.2f s in the updates\n",
          vox_mma_subproblem_name(method), epsilon_min, r->iterations, r->objective, r->volume_fraction,
          r->kkt_residual, r->seconds_update);
  return r->objective;
}

/* The primal-dual method to epsilon_min 1e-10: at its default 1e-7 its
 * barrier leaves the densities near their bounds up to about 1e-4 away
 * from the subproblem's solution (the objective's gradients are of order 1
 * / n), and its history differs from its own at 1e-10 by 2e-3 within ten
 * iterations. Even so the designs of the two methods part after ten
 * iterations or so: the path of this optimization is as sensitive to the
 * precision of each subproblem's solution as to the method (the
 * primal-dual method's own final compliance moves by 0.3 % between 1e-7
 * and 1e-10). So the histories agree to 1e-4 for ten iterations, the
 * final compliances to 1 %. */
static void test_cantilever(vox_context *ctx, vox_backend *be) {
  vox_optimize_result pd, du;
  double h_pd[30] = {0}, h_du[30] = {0};
  const double c_pd = cantilever(ctx, be, VOX_MMA_PRIMAL_DUAL, 1e-10, &pd, h_pd);
  const double c_du = cantilever(ctx, be, VOX_MMA_DUAL, 1e-7, &du, h_du);
  double worst = 0;
  for (int i = 0; i < 10; i++) worst = fmax(worst, fabs(h_du[i] - h_pd[i]) / h_pd[i]);
  fprintf(stderr, "iterations 1 to 10: largest relative difference %.2e; final: %.2e\n", worst,
          fabs(c_du - c_pd) / c_pd);
  CHECK(pd.iterations == 30 && du.iterations == 30);
  CHECK(worst <= 1e-4);
  CHECK(fabs(c_du - c_pd) <= 1e-2 * c_pd);
  CHECK(fabs(du.volume_fraction - 0.3) <= 1e-3);
  CHECK(du.kkt_residual >= 0 && du.kkt_residual < 1e-3);
}

int main(int argc, char **argv) {
  vox_context *ctx;
  vox_context_create(&ctx);
  vox_backend *be;
  CHECK_OK(ctx, vox_backend_create(ctx, VOX_DEVICE_CPU, &be));
  if (check_wanted(argc, argv, "compare")) {
    const struct {
      size_t n;
      int m;
    } cases[] = {{7, 1}, {7, 4}, {50, 2}, {300, 3}, {2000, 4}, {20000, 1}, {20000, 2}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
      test_compare(ctx, be, cases[c].n, cases[c].m, 100 + c, 0);
  }
  if (check_wanted(argc, argv, "bisection")) {
    test_compare(ctx, be, 7, 1, 7, 1);
    test_compare(ctx, be, 1000, 1, 8, 1);
    test_compare(ctx, be, 20000, 1, 9, 1);
  }
  if (check_wanted(argc, argv, "bits")) test_bits(ctx, be);
  if (check_wanted(argc, argv, "options")) test_options(ctx, be);
  if (check_wanted(argc, argv, "cantilever")) test_cantilever(ctx, be);
  vox_backend_destroy(be);
  vox_context_destroy(ctx);
  CHECK_DONE();
}
