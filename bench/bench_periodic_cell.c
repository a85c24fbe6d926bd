/* SPDX-License-Identifier: BSD-3-Clause */
/* Benchmark of the periodic cell's per-iteration pieces on a backend
 * (docs/benchmarks.md):
 *
 *   bench_periodic_cell N [REPS] [init]
 *
 * On an N^3 cell: the symmetry enforcement (reflect3, reflect6, rotate3) in
 * place on a random field, and the density filter of radius 2 voxels (seed
 * 003's) plain and periodic; seconds per call (the mean of REPS calls after
 * one warm-up, the backend synchronized before the clock is read) and the
 * bandwidth over the minimal bytes (one read and one write of the field for
 * the symmetry; for the filter, its input, 1/Hs and the output). With
 * "init", also the host's time for the random and the trigonometric (order
 * 2) initial designs at volume fraction 0.3.
 * --device=cpu runs on the CPU backend (default: CUDA). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_ops.h"
#include "bench_common.h"

static _Noreturn void die(vox_context *ctx, const char *what) {
  fprintf(stderr, "bench_periodic_cell: %s: %s\n", what, vox_context_message(ctx));
  exit(1);
}

#define RUN(ctx, what, call)                     \
  do {                                           \
    if ((call) != VOX_OK) die((ctx), (what));    \
  } while (0)

int main(int argc, char **argv) {
  static const char *const settings[] = {"device", NULL};
  bench_options_take(&argc, argv, settings);
  if (argc < 2) {
    fprintf(stderr, "usage: %s N [REPS] [init] [--device=cpu|cuda]\n", argv[0]);
    return 2;
  }
  const int n = atoi(argv[1]);
  const int reps = argc > 2 ? atoi(argv[2]) : 10;
  const int init = argc > 3 && strcmp(argv[3], "init") == 0;
  if (n < 2 || reps < 1) {
    fprintf(stderr, "%s: N >= 2 and REPS >= 1\n", argv[0]);
    return 2;
  }
  vox_context *ctx;
  vox_backend *be;
  if (vox_context_create(&ctx) != VOX_OK) return 1;
  const char *device_text = bench_option("device");
  vox_device device = VOX_DEVICE_CUDA;
  if (device_text && vox_device_parse(device_text, &device) != 0) {
    fprintf(stderr, "%s: --device: expected cpu, cuda or auto, got '%s'\n", argv[0], device_text);
    return 2;
  }
  RUN(ctx, "backend", vox_backend_create(ctx, device, &be));
  const vox_backend_ops *o = be->ops;
  const vox_grid grid = {.nx = n, .ny = n, .nz = n, .voxel_size = {1, 1, 1}};
  const size_t ne = (size_t)vox_grid_elements(&grid);
  printf("%s backend, %d^3 = %zu elements, %d repetitions\n", vox_backend_name(be), n, ne, reps);

  vox_vec v, w;
  RUN(ctx, "vectors", o->vec->create(be, ne, VOX_DOUBLE, &v));
  RUN(ctx, "vectors", o->vec->create(be, ne, VOX_DOUBLE, &w));
  RUN(ctx, "random", o->vec->random(be, &v, 7, 0));
  for (int s = VOX_SYMMETRY_REFLECT3; s <= VOX_SYMMETRY_ROTATE3; s++) {
    RUN(ctx, "symmetrize", o->design->symmetrize(be, &grid, (vox_symmetry)s, &v));
    RUN(ctx, "sync", o->synchronize(be));
    const double t0 = bench_now();
    for (int r = 0; r < reps; r++)
      RUN(ctx, "symmetrize", o->design->symmetrize(be, &grid, (vox_symmetry)s, &v));
    RUN(ctx, "sync", o->synchronize(be));
    const double t = (bench_now() - t0) / reps;
    printf("symmetrize %-9s %10.3f ms  %7.1f GB/s\n", vox_symmetry_name((vox_symmetry)s), 1e3 * t,
           2.0 * 8 * (double)ne / t / 1e9);
  }

  uint8_t *active = malloc(ne);
  if (!active) return 1;
  memset(active, 1, ne);
  for (int periodic = 0; periodic <= 1; periodic++) {
    vox_filter *f;
    RUN(ctx, "filter",
        periodic ? o->design->filter_create_periodic(be, &grid, 2.0, active, &f)
                 : o->design->filter_create(be, &grid, 2.0, active, &f));
    RUN(ctx, "filter", o->design->filter_apply(be, f, &v, &w));
    RUN(ctx, "sync", o->synchronize(be));
    const double t0 = bench_now();
    for (int r = 0; r < reps; r++) RUN(ctx, "filter", o->design->filter_apply(be, f, &v, &w));
    RUN(ctx, "sync", o->synchronize(be));
    const double t = (bench_now() - t0) / reps;
    printf("filter R=2 %-9s %10.3f ms  %7.1f GB/s\n", periodic ? "periodic" : "plain", 1e3 * t,
           (3.0 * 8 + 1) * (double)ne / t / 1e9);
    o->design->filter_destroy(be, f);
  }
  free(active);
  o->vec->destroy(be, &v), o->vec->destroy(be, &w);

  if (init) {
    double *rho = malloc(ne * sizeof *rho);
    if (!rho) return 1;
    vox_initial_design d;
    vox_initial_design_defaults(&d);
    for (int k = VOX_INITIAL_RANDOM; k <= VOX_INITIAL_TRIGONOMETRIC; k++) {
      d.kind = (vox_initial_kind)k;
      const double t0 = bench_now();
      RUN(ctx, "initial design", vox_initial_design_make(ctx, &grid, &d, rho));
      printf("initial %-13s %10.3f s (host)\n", vox_initial_name(d.kind), bench_now() - t0);
    }
    free(rho);
  }
  vox_backend_destroy(be);
  vox_context_destroy(ctx);
  return 0;
}
