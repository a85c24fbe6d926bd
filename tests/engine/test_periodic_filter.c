/* SPDX-License-Identifier: BSD-3-Clause */
/* The periodic filter (Zhang et al. 2023 section 6.5) on the CPU backend against its
 * definition: on a cell tiled 3 x 3 x 3, the ordinary (cut at the faces)
 * filter of the tiled field, read in the middle cell, is the periodic filter
 * of the cell, as long as the taps reach no further than one cell. Checked
 * for the density filter, its transpose and the sensitivity filter, with
 * some inactive (empty) elements, on an anisotropic box and on a cell the
 * radius spans nearly whole. Also: a constant field stays constant (every
 * element has the same neighbourhood), and a radius too wide for the tap
 * bound fails. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "backend_ops.h"

static double rnd(uint64_t *s) {
  *s = *s * 6364136223846793005u + 1442695040888963407u;
  return (double)(*s >> 11) / 9007199254740992.0;
}

/* The field of `cell` repeated T times along each axis. */
static void tile(const vox_grid *cell, int T, const double *in, double *out) {
  const int64_t nx = cell->nx, ny = cell->ny, nz = cell->nz;
  for (int64_t k = 0; k < T * nz; k++)
    for (int64_t j = 0; j < T * ny; j++)
      for (int64_t i = 0; i < T * nx; i++)
        out[(k * T * ny + j) * T * nx + i] = in[((k % nz) * ny + j % ny) * nx + i % nx];
}

/* The middle cell of a T x T x T tiling (T odd). */
static void middle(const vox_grid *cell, int T, const double *tiled, double *out) {
  const int64_t nx = cell->nx, ny = cell->ny, nz = cell->nz, c = T / 2;
  for (int64_t k = 0; k < nz; k++)
    for (int64_t j = 0; j < ny; j++)
      for (int64_t i = 0; i < nx; i++)
        out[(k * ny + j) * nx + i] =
            tiled[((k + c * nz) * T * ny + j + c * ny) * T * nx + i + c * nx];
}

typedef enum which { APPLY, TRANSPOSE, SENSITIVITY } which;

/* Runs one filter operation on the CPU backend. */
static void run(vox_context *ctx, vox_backend *be, vox_filter *f, which w, size_t n,
                const double *in, const double *rho, double *out) {
  const vox_backend_ops *o = be->ops;
  vox_vec vi, vr, vo;
  CHECK_OK(ctx, o->vec->create(be, n, VOX_DOUBLE, &vi));
  CHECK_OK(ctx, o->vec->create(be, n, VOX_DOUBLE, &vr));
  CHECK_OK(ctx, o->vec->create(be, n, VOX_DOUBLE, &vo));
  CHECK_OK(ctx, o->vec->upload(be, &vi, in));
  CHECK_OK(ctx, o->vec->upload(be, &vr, rho));
  if (w == APPLY) CHECK_OK(ctx, o->design->filter_apply(be, f, &vi, &vo));
  if (w == TRANSPOSE) CHECK_OK(ctx, o->design->filter_transpose(be, f, &vi, &vo));
  if (w == SENSITIVITY) CHECK_OK(ctx, o->design->filter_sensitivity(be, f, &vr, &vi, 1e-3, &vo));
  CHECK_OK(ctx, o->vec->download(be, &vo, out));
  o->vec->destroy(be, &vi), o->vec->destroy(be, &vr), o->vec->destroy(be, &vo);
}

static void test_tiled(vox_context *ctx, vox_backend *be, const vox_grid *cell, int T,
                       double radius, int with_inactive, uint64_t seed) {
  const size_t n = (size_t)vox_grid_elements(cell), n3 = (size_t)(T * T * T) * n;
  vox_grid big = *cell;
  big.nx *= T, big.ny *= T, big.nz *= T;
  double *in = calloc(n, sizeof *in), *rho = calloc(n, sizeof *rho);
  double *out = malloc(n * sizeof *out), *ref = malloc(n * sizeof *ref);
  double *in3 = malloc(n3 * sizeof *in3), *rho3 = malloc(n3 * sizeof *rho3);
  double *out3 = malloc(n3 * sizeof *out3), *act = calloc(n, sizeof *act);
  double *act3 = malloc(n3 * sizeof *act3);
  uint8_t *active = malloc(n), *active3 = malloc(n3);
  for (size_t e = 0; e < n; e++) {
    in[e] = rnd(&seed) - 0.3;
    rho[e] = rnd(&seed) < 0.1 ? 1e-4 : rnd(&seed);
    act[e] = with_inactive ? rnd(&seed) < 0.8 : 1;
    active[e] = act[e] != 0;
  }
  tile(cell, T, in, in3), tile(cell, T, rho, rho3), tile(cell, T, act, act3);
  for (size_t e = 0; e < n3; e++) active3[e] = act3[e] != 0;
  vox_filter *fp = NULL, *f3 = NULL;
  CHECK_OK(ctx, be->ops->design->filter_create_periodic(be, cell, radius, active, &fp));
  CHECK_OK(ctx, be->ops->design->filter_create(be, &big, radius, active3, &f3));
  if (fp && f3)
    for (int w = APPLY; w <= SENSITIVITY; w++) {
      run(ctx, be, fp, (which)w, n, in, rho, out);
      run(ctx, be, f3, (which)w, n3, in3, rho3, out3);
      middle(cell, T, out3, ref);
      double worst = 0, scale = 0;
      for (size_t e = 0; e < n; e++)
        worst = fmax(worst, fabs(out[e] - ref[e])), scale = fmax(scale, fabs(ref[e]));
      if (!(worst <= 1e-13 * scale)) {
        fprintf(stderr, "%lldx%lldx%lld R=%g op %d: periodic differs from tiled by %g (of %g)\n",
                (long long)cell->nx, (long long)cell->ny, (long long)cell->nz, radius, w, worst,
                scale);
        check_failures++;
      }
      CHECK(scale > 0);
    }
  if (fp) be->ops->design->filter_destroy(be, fp);
  if (f3) be->ops->design->filter_destroy(be, f3);
  free(in), free(rho), free(out), free(ref), free(in3), free(rho3), free(out3), free(act);
  free(act3), free(active), free(active3);
}

int main(void) {
  vox_context *ctx;
  vox_backend *be;
  if (vox_context_create(&ctx) || vox_backend_create(ctx, VOX_DEVICE_CPU, &be)) return 1;
  const vox_grid box = {.nx = 7, .ny = 6, .nz = 5, .voxel_size = {1, 1.2, 0.9}};
  test_tiled(ctx, be, &box, 3, 2.3, 0, 1);
  test_tiled(ctx, be, &box, 3, 2.3, 1, 2);
  test_tiled(ctx, be, &box, 3, 1.1, 1, 3);
  /* taps reaching 3 voxels on a cell of 3: the whole cell. The transpose
   * reads 1/Hs of the neighbours, whose own taps reach 3 further: tiled 5
   * times, those are all whole on the plain filter's grid too. */
  const vox_grid small = {.nx = 3, .ny = 3, .nz = 3, .voxel_size = {1, 1, 1}};
  test_tiled(ctx, be, &small, 5, 3.5, 0, 4);
  test_tiled(ctx, be, &small, 5, 3.5, 1, 5);
  /* taps reaching 4 voxels, past the whole cell: tiled 7 times */
  test_tiled(ctx, be, &small, 7, 4.5, 1, 6);

  /* a constant stays constant, even where the plain filter's neighbourhood
   * is cut at the faces, and a radius wider than the cell counts the taps
   * that wrap onto the same element each time */
  const vox_grid cell = {.nx = 4, .ny = 4, .nz = 4, .voxel_size = {1, 1, 1}};
  uint8_t active[64];
  double ones[64], out[64];
  memset(active, 1, sizeof active);
  for (int e = 0; e < 64; e++) ones[e] = 2.5;
  for (double r = 1.5; r <= 6.5; r += 5) {
    vox_filter *f = NULL;
    CHECK_OK(ctx, be->ops->design->filter_create_periodic(be, &cell, r, active, &f));
    if (!f) continue;
    run(ctx, be, f, APPLY, 64, ones, ones, out);
    for (int e = 0; e < 64; e++) CHECK_CLOSE(out[e], 2.5, 1e-14);
    be->ops->design->filter_destroy(be, f);
  }
  /* the tap bound holds for periodic filters, whose reach is not cut */
  vox_filter *f = NULL;
  CHECK(be->ops->design->filter_create_periodic(be, &cell, 40, active, &f) ==
        VOX_ERR_INVALID_ARGUMENT);
  CHECK(f == NULL);
  CHECK(be->ops->design->filter_create_periodic(be, &cell, 1e300, active, &f) ==
        VOX_ERR_INVALID_ARGUMENT);
  CHECK(be->ops->design->filter_create_periodic(be, &cell, -1, active, &f) ==
        VOX_ERR_INVALID_ARGUMENT);

  vox_backend_destroy(be);
  vox_context_destroy(ctx);
  CHECK_DONE();
}
