/* SPDX-License-Identifier: BSD-3-Clause */
/* The host's side of a backend's residual_newton (engine/mma_ops.h): a CPU
 * backend whose residual_newton is its residual followed by its newton at
 * the point reached, and whose newton alone fails, must give the stock
 * CPU's iterates bit for bit. That holds only if every Newton step of
 * engine/mma.c's subsolve is taken at the point, barrier and multipliers
 * of the residual before it, which the CUDA backend's merged pass relies
 * on; the direction must also get the multipliers of that residual. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "backend_ops.h"
#include "mma_backend.h"
#include "voxfe/voxfe.h"

static const vox_mma_ops *stock;
static vox_mma_ops fused_ops;
static vox_backend_ops fused_backend_ops;
/* the multipliers of the last residual, which the direction must be given */
static double last_lam[8];
static int newton_calls, mismatched_lam;

static vox_status fused_residual_newton(vox_backend *be, vox_mma_work *w,
                                        const vox_mma_vectors *v, const double *lam, double epsi,
                                        int move, double step, double *sum, double *max,
                                        double *gvec, double *gdelx, double *ggt) {
  TRY(stock->residual(be, w, v, lam, epsi, move, step, sum, max, gvec));
  /* the residual's sums stay: newton's work space is the same */
  const double s = *sum, mx = *max;
  double g[8];
  memcpy(g, gvec, (size_t)v->m * sizeof *g);
  TRY(stock->newton(be, w, v, lam, epsi, gvec, gdelx, ggt));
  for (int i = 0; i < v->m; i++) CHECK(memcmp(&g[i], &gvec[i], sizeof g[i]) == 0);
  *sum = s, *max = mx;
  memcpy(last_lam, lam, (size_t)v->m * sizeof *lam);
  return VOX_OK;
}

static vox_status refused_newton(vox_backend *be, vox_mma_work *w, const vox_mma_vectors *v,
                                 const double *lam, double epsi, double *gvec, double *gdelx,
                                 double *ggt) {
  (void)w, (void)v, (void)lam, (void)epsi, (void)gvec, (void)gdelx, (void)ggt;
  newton_calls++;
  return vox_error(be->ctx, VOX_ERR_UNSUPPORTED, "newton called beside residual_newton");
}

static vox_status checked_direction(vox_backend *be, vox_mma_work *w, const vox_mma_vectors *v,
                                    const double *lam, const double *dlam, double epsi,
                                    double *most) {
  if (memcmp(lam, last_lam, (size_t)v->m * sizeof *lam) != 0) mismatched_lam++;
  return stock->direction(be, w, v, lam, dlam, epsi, most);
}

static double uniform(uint64_t *state) {
  *state = *state * 6364136223846793005u + 1442695040888963407u;
  return (double)(*state >> 11) / 9007199254740992.0;
}

/* ITERATIONS outer iterations of min sum c_j / x_j under m weighted
 * volumes on `be`; the iterates' bits into xs (iterations n). */
static void run(vox_context *ctx, vox_backend *be, size_t n, int m, int iterations, double *xs) {
  vox_mma_options o;
  vox_mma_options_default(&o);
  vox_mma *mma = NULL;
  CHECK_OK(ctx, vox_mma_create_on(be, n, m, &o, &mma));
  if (!mma) return;
  double *c = malloc(n * sizeof *c), *w = malloc((size_t)m * n * sizeof *w);
  double *x = malloc(n * sizeof *x), *lo = malloc(n * sizeof *lo), *hi = malloc(n * sizeof *hi);
  double *df0 = malloc(n * sizeof *df0), *dg = malloc((size_t)m * n * sizeof *dg);
  double g[8], wsum[8] = {0};
  uint64_t state = 7;
  for (size_t j = 0; j < n; j++) {
    c[j] = 1 + uniform(&state), x[j] = 0.3, lo[j] = 0.001, hi[j] = 1;
    for (int i = 0; i < m; i++)
      wsum[i] += w[(size_t)i * n + j] = i == 0 ? 1 : 0.5 + uniform(&state);
  }
  const vox_vector_ops *vec = be->ops->vec;
  vox_mma_vectors *v = vox_mma_vectors_of(mma);
  for (int it = 0; it < iterations; it++) {
    double f0 = 0;
    for (int i = 0; i < m; i++) g[i] = -0.3;
    for (size_t j = 0; j < n; j++) f0 += c[j] / x[j];
    for (size_t j = 0; j < n; j++) {
      df0[j] = -c[j] / (x[j] * x[j]) / f0;
      for (int i = 0; i < m; i++) {
        g[i] += w[(size_t)i * n + j] * x[j] / wsum[i];
        dg[(size_t)i * n + j] = w[(size_t)i * n + j] / wsum[i];
      }
    }
    CHECK_OK(ctx, vec->upload(be, &v->xval, x));
    CHECK_OK(ctx, vec->upload(be, &v->xmin, lo));
    CHECK_OK(ctx, vec->upload(be, &v->xmax, hi));
    CHECK_OK(ctx, vec->upload(be, &v->df0dx, df0));
    CHECK_OK(ctx, vec->upload(be, &v->dfdx, dg));
    CHECK_OK(ctx, vox_mma_step(mma, g));
    CHECK_OK(ctx, vec->download(be, &v->x, x));
    memcpy(xs + (size_t)it * n, x, n * sizeof *x);
  }
  free(c), free(w), free(x), free(lo), free(hi), free(df0), free(dg);
  vox_mma_destroy(mma);
}

int main(void) {
  vox_context *ctx;
  vox_context_create(&ctx);
  vox_backend *be = NULL, *fused = NULL;
  CHECK_OK(ctx, vox_cpu_backend_create(ctx, NULL, &be));
  CHECK_OK(ctx, vox_cpu_backend_create(ctx, NULL, &fused));
  if (!be || !fused) CHECK_DONE();
  stock = be->ops->mma;
  CHECK(stock->residual_newton == NULL); /* the CPU keeps its separate passes */
  fused_ops = *stock;
  fused_ops.residual_newton = fused_residual_newton;
  fused_ops.newton = refused_newton;
  fused_ops.direction = checked_direction;
  fused_backend_ops = *fused->ops;
  fused_backend_ops.mma = &fused_ops;
  fused->ops = &fused_backend_ops;
  const size_t n = 3000;
  const int iterations = 8;
  for (int m = 1; m <= 3; m += 2) {
    double *a = malloc(iterations * n * sizeof *a), *b = malloc(iterations * n * sizeof *b);
    run(ctx, be, n, m, iterations, a);
    run(ctx, fused, n, m, iterations, b);
    CHECK(memcmp(a, b, iterations * n * sizeof *a) == 0);
    free(a), free(b);
  }
  CHECK(newton_calls == 0);
  CHECK(mismatched_lam == 0);
  vox_backend_destroy(be);
  vox_backend_destroy(fused);
  vox_context_destroy(ctx);
  CHECK_DONE();
}
