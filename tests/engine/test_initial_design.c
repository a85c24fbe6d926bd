/* SPDX-License-Identifier: BSD-3-Clause */
/* Initial designs (voxfe/initial_design.h): the volume fraction and the
 * bounds of every kind; the trigonometric family against an independent
 * evaluation of Zhang et al. 2023 section 6.2 (the sigmoid's shift recovered from
 * each element must be one number); seeds that repeat and differ; the
 * symmetric variant; a mask of design voxels; bad parameters. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "backend_ops.h"
#include "voxfe/initial_design.h"

static double mean(const double *x, size_t n) {
  double s = 0;
  for (size_t i = 0; i < n; i++) s += x[i];
  return s / n;
}

static void check_bounds(const double *rho, size_t n, double lo, double hi) {
  size_t bad = 0;
  for (size_t i = 0; i < n; i++) bad += !(rho[i] >= lo && rho[i] <= hi);
  CHECK(bad == 0);
}

/* Zhang et al. 2023 section 6.2 written out again, from the header's definition:
 * quaternion entries then weights drawn in order as 2 vox_hash_uniform. */
static double reference_sum(const vox_grid *g, uint64_t seed, int n, int64_t i, int64_t j,
                            int64_t k) {
  double q[4], norm = 0;
  for (int a = 0; a < 4; a++) q[a] = 2 * vox_hash_uniform(seed, (uint64_t)a), norm += q[a] * q[a];
  norm = sqrt(norm);
  const double w = q[0] / norm, x = q[1] / norm, y = q[2] / norm, z = q[3] / norm;
  /* R v = v + 2 w (u x v) + 2 u x (u x v), u = (x, y, z) */
  const double c[3] = {(i + 0.5) / g->nx - 0.5, (j + 0.5) / g->ny - 0.5, (k + 0.5) / g->nz - 0.5};
  const double u[3] = {x, y, z};
  const double uxc[3] = {u[1] * c[2] - u[2] * c[1], u[2] * c[0] - u[0] * c[2],
                         u[0] * c[1] - u[1] * c[0]};
  const double uxuxc[3] = {u[1] * uxc[2] - u[2] * uxc[1], u[2] * uxc[0] - u[0] * uxc[2],
                           u[0] * uxc[1] - u[1] * uxc[0]};
  double xb[3];
  for (int a = 0; a < 3; a++) xb[a] = c[a] + 2 * w * uxc[a] + 2 * uxuxc[a];
  double p[48];
  int m = 0;
  for (int a = 0; a < 3; a++)
    for (int f = 1; f <= n; f++) {
      p[m++] = cos(2 * M_PI * f * xb[a]);
      p[m++] = sin(2 * M_PI * f * xb[a]);
    }
  uint64_t t = 4;
  double s = 0;
  for (int a = 0; a < m; a++) s += 2 * vox_hash_uniform(seed, t++) * p[a];
  for (int a = 0; a < m; a++)
    for (int b = a; b < m; b++) s += 2 * vox_hash_uniform(seed, t++) * p[a] * p[b];
  return s;
}

int main(void) {
  vox_context *ctx;
  if (vox_context_create(&ctx)) return 1;
  const vox_grid g = {.nx = 20, .ny = 18, .nz = 16, .voxel_size = {1, 1, 1}};
  const size_t n = (size_t)vox_grid_elements(&g);
  double *rho = malloc(n * sizeof *rho), *again = malloc(n * sizeof *again);
  vox_initial_design d;
  vox_initial_design_defaults(&d);

  d.kind = VOX_INITIAL_UNIFORM, d.volume_fraction = 0.25;
  CHECK_OK(ctx, vox_initial_design_make(ctx, &g, &d, rho));
  for (size_t e = 0; e < n; e++) CHECK(rho[e] == 0.25);

  for (int kind = VOX_INITIAL_RANDOM; kind <= VOX_INITIAL_TRIGONOMETRIC; kind++)
    for (double vf = 0.1; vf < 0.95; vf += 0.4) {
      d.kind = (vox_initial_kind)kind, d.volume_fraction = vf, d.seed = 42, d.order = 2;
      CHECK_OK(ctx, vox_initial_design_make(ctx, &g, &d, rho));
      CHECK_CLOSE(mean(rho, n), vf, 1e-10);
      check_bounds(rho, n, d.rho_min, fmin(1, d.rho_min + 1.5 * vf));
      /* far from the trivial design: a spread of densities */
      double var = 0;
      for (size_t e = 0; e < n; e++) var += (rho[e] - vf) * (rho[e] - vf);
      CHECK(sqrt(var / n) > 0.1 * vf);
      /* the same seed gives the same bits, whatever the threads */
      vox_context_set_threads(ctx, 1);
      CHECK_OK(ctx, vox_initial_design_make(ctx, &g, &d, again));
      vox_context_set_threads(ctx, 0);
      CHECK(memcmp(rho, again, n * sizeof *rho) == 0);
      /* another seed, another design */
      d.seed = 43;
      CHECK_OK(ctx, vox_initial_design_make(ctx, &g, &d, again));
      double diff = 0;
      for (size_t e = 0; e < n; e++) diff += fabs(rho[e] - again[e]);
      CHECK(diff / n > 0.05);
    }

  /* the trigonometric sum, independently: rho = S(y) means
   * mu = y + ln(V^ / (rho - rho_min) - 1) / k is the same for every element
   * (away from the sigmoid's flat ends, where rho carries no digits of y) */
  for (int order = 1; order <= 3; order++) {
    d.kind = VOX_INITIAL_TRIGONOMETRIC, d.volume_fraction = 0.3, d.seed = 7, d.order = order;
    CHECK_OK(ctx, vox_initial_design_make(ctx, &g, &d, rho));
    const double v_hat = fmin(1.5 * d.volume_fraction, 1 - d.rho_min);
    double mu_lo = INFINITY, mu_hi = -INFINITY;
    size_t used = 0;
    for (int64_t k = 0; k < g.nz; k++)
      for (int64_t j = 0; j < g.ny; j++)
        for (int64_t i = 0; i < g.nx; i++) {
          const double r = rho[(k * g.ny + j) * g.nx + i] - d.rho_min;
          if (r < 1e-3 * v_hat || r > (1 - 1e-3) * v_hat) continue;
          const double mu = reference_sum(&g, d.seed, order, i, j, k) + log(v_hat / r - 1) / 15;
          mu_lo = fmin(mu_lo, mu), mu_hi = fmax(mu_hi, mu);
          used++;
        }
    CHECK(used > n / 20);
    CHECK(mu_hi - mu_lo < 1e-9);
  }

  /* symmetric variant: invariant, same mean */
  const vox_grid cube = {.nx = 12, .ny = 12, .nz = 12, .voxel_size = {1, 1, 1}};
  d.kind = VOX_INITIAL_TRIGONOMETRIC, d.symmetry = VOX_SYMMETRY_REFLECT6, d.volume_fraction = 0.2;
  CHECK_OK(ctx, vox_initial_design_make(ctx, &cube, &d, rho));
  CHECK_CLOSE(mean(rho, 1728), 0.2, 1e-10);
  memcpy(again, rho, 1728 * sizeof *rho);
  CHECK_OK(ctx, vox_symmetrize(ctx, &cube, VOX_SYMMETRY_REFLECT6, again));
  for (size_t e = 0; e < 1728; e++) CHECK_CLOSE(again[e], rho[e], 1e-15);
  /* x -> 1 - x and x <-> y */
  CHECK(rho[(3 * 12 + 5) * 12 + 2] == rho[(3 * 12 + 5) * 12 + 9]);
  CHECK(rho[(3 * 12 + 5) * 12 + 2] == rho[(3 * 12 + 2) * 12 + 5]);
  /* still far from the uniform design: the sums are averaged before the
   * sigmoid (averaging the densities after it left a spread of 0.025 here,
   * against 0.072 and 0.132 now) */
  for (int kind = VOX_INITIAL_RANDOM; kind <= VOX_INITIAL_TRIGONOMETRIC; kind++) {
    d.kind = (vox_initial_kind)kind;
    CHECK_OK(ctx, vox_initial_design_make(ctx, &cube, &d, rho));
    double var = 0;
    for (size_t e = 0; e < 1728; e++) var += (rho[e] - 0.2) * (rho[e] - 0.2);
    printf("%s start, reflect6: spread %.3g about the volume fraction 0.2\n",
           vox_initial_name(d.kind), sqrt(var / 1728));
    CHECK(sqrt(var / 1728) > 0.25 * 0.2);
  }
  d.kind = VOX_INITIAL_TRIGONOMETRIC;

  /* on a mask (a model's design voxels): the mean over the mask, 0 outside;
   * the mask of the cube's lower half (z < 6) has reflect3's x and y
   * mirrors but not its z mirror */
  uint8_t *mask = malloc(1728);
  for (size_t e = 0; e < 1728; e++) mask[e] = e < 6 * 144 || (e % 12) == 0 || (e % 12) == 11;
  d.symmetry = VOX_SYMMETRY_NONE, d.volume_fraction = 0.35, d.seed = 5;
  for (int kind = VOX_INITIAL_UNIFORM; kind <= VOX_INITIAL_TRIGONOMETRIC; kind++) {
    d.kind = (vox_initial_kind)kind;
    CHECK_OK(ctx, vox_initial_design_make_masked(ctx, &cube, &d, mask, rho));
    double in = 0, out = 0;
    size_t count = 0;
    for (size_t e = 0; e < 1728; e++) {
      if (mask[e]) in += rho[e], count++;
      else out = fmax(out, fabs(rho[e]));
    }
    CHECK_CLOSE(in / count, 0.35, 1e-10);
    CHECK(out == 0);
  }
  d.symmetry = VOX_SYMMETRY_REFLECT3;
  CHECK(vox_initial_design_make_masked(ctx, &cube, &d, mask, rho) == VOX_ERR_INVALID_ARGUMENT);
  CHECK(strstr(vox_context_message(ctx), "does not have the symmetry reflect3") != NULL);
  for (size_t e = 0; e < 1728; e++) mask[e] = (e % 12) != 0 && (e % 12) != 11; /* x walls out */
  CHECK_OK(ctx, vox_initial_design_make_masked(ctx, &cube, &d, mask, rho));
  double in = 0;
  for (size_t e = 0; e < 1728; e++) in += mask[e] ? rho[e] : 0;
  CHECK_CLOSE(in / 1440, 0.35, 1e-10);
  CHECK(rho[(3 * 12 + 5) * 12 + 2] == rho[(8 * 12 + 6) * 12 + 9]); /* all three mirrors */
  memset(mask, 0, 1728);
  CHECK(vox_initial_design_make_masked(ctx, &cube, &d, mask, rho) == VOX_ERR_INVALID_ARGUMENT);
  free(mask);

  /* bad parameters */
  vox_initial_design bad = d;
  bad.symmetry = VOX_SYMMETRY_NONE, bad.volume_fraction = 1;
  CHECK(vox_initial_design_make(ctx, &g, &bad, rho) == VOX_ERR_INVALID_ARGUMENT);
  bad.volume_fraction = 1e-4;
  CHECK(vox_initial_design_make(ctx, &g, &bad, rho) == VOX_ERR_INVALID_ARGUMENT);
  CHECK(strstr(vox_context_message(ctx), "volume fraction") != NULL);
  bad.volume_fraction = 0.3, bad.order = 9;
  CHECK(vox_initial_design_make(ctx, &g, &bad, rho) == VOX_ERR_INVALID_ARGUMENT);
  bad.order = 2, bad.symmetry = VOX_SYMMETRY_ROTATE3;
  CHECK(vox_initial_design_make(ctx, &g, &bad, rho) == VOX_ERR_INVALID_ARGUMENT);
  vox_initial_kind kind;
  CHECK(vox_initial_parse("trig", &kind) == 0 && kind == VOX_INITIAL_TRIGONOMETRIC);
  CHECK(vox_initial_parse("random", &kind) == 0 && kind == VOX_INITIAL_RANDOM);
  CHECK(vox_initial_parse("noise", &kind) == -1);

  free(rho), free(again);
  vox_context_destroy(ctx);
  CHECK_DONE();
}
