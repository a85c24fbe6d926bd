/* Benchmark of the isosurface and the STL writer (voxfe/surface.h) on a
 * gyroid: an N^3 grid of unit voxels with density
 *   (sin x cos y + sin y cos z + sin z cos x + 1.5) / 3   in [0, 1]
 * at the voxel centres, x = 2 pi PERIODS (i + 0.5) / N, extracted at 0.5.
 * bench/isosurface-vs-vtk.sh runs VTK's vtkFlyingEdges3D on the same field.
 *
 *   bench_isosurface N [THREADS] [PERIODS] [OUTPUT.stl] [REPEATS]
 *
 * Prints the best of REPEATS (default 5) isosurface times, and the time of
 * one binary STL write (fsync included) to OUTPUT.stl (default
 * gyroid-N.stl in the current folder; removed afterwards unless named). */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "voxfe/context.h"
#include "voxfe/model.h"
#include "voxfe/surface.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void die(vox_context *ctx, const char *what) {
  fprintf(stderr, "bench_isosurface: %s: %s\n", what, vox_context_message(ctx));
  exit(1);
}

int main(int argc, char **argv) {
  if (argc < 2 || atoi(argv[1]) < 2) {
    fprintf(stderr, "usage: %s N [THREADS] [PERIODS] [OUTPUT.stl] [REPEATS]\n", argv[0]);
    return 2;
  }
  const int n = atoi(argv[1]);
  const int threads = argc > 2 && atoi(argv[2]) > 0 ? atoi(argv[2]) : omp_get_max_threads();
  const double periods = argc > 3 && atof(argv[3]) > 0 ? atof(argv[3]) : 4;
  char default_path[64];
  snprintf(default_path, sizeof default_path, "gyroid-%d.stl", n);
  const char *path = argc > 4 ? argv[4] : default_path;
  const int repeats = argc > 5 && atoi(argv[5]) > 0 ? atoi(argv[5]) : 5;

  vox_context *ctx;
  if (vox_context_create(&ctx) != VOX_OK) return 1;
  vox_context_set_threads(ctx, threads);
  vox_grid grid = {.nx = n, .ny = n, .nz = n, .voxel_size = {1, 1, 1}};
  vox_model model;
  if (vox_model_init(ctx, &model, &grid) != VOX_OK) die(ctx, "model");
  size_t ne = (size_t)n * n * n;
  model.density = malloc(ne * sizeof *model.density);
  if (!model.density) return 1;
  const double w = 2 * M_PI * periods / n;
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int k = 0; k < n; k++)
    for (int j = 0; j < n; j++)
      for (int i = 0; i < n; i++) {
        double x = w * (i + 0.5), y = w * (j + 0.5), z = w * (k + 0.5);
        double v = sin(x) * cos(y) + sin(y) * cos(z) + sin(z) * cos(x);
        model.density[((size_t)k * n + j) * n + i] = (v + 1.5) / 3.0;
      }

  vox_surface s = {0};
  double best = 1e30;
  for (int r = 0; r < repeats; r++) {
    vox_surface_free(&s);
    double t = now();
    if (vox_isosurface_density(ctx, &model, 0.5, &s) != VOX_OK) die(ctx, "isosurface");
    t = now() - t;
    if (t < best) best = t;
  }
  double t_stl = now();
  if (vox_write_stl(ctx, path, &s, 1) != VOX_OK) die(ctx, "STL");
  t_stl = now() - t_stl;
  printf("voxfe  %d^3 gyroid (%g periods), %d threads: isosurface %.4f s (best of %d), "
         "%zu triangles, %zu vertices; binary STL %.4f s (%.1f MB)\n",
         n, periods, threads, best, repeats, s.n_triangles, s.n_vertices, t_stl,
         (84.0 + 50.0 * (double)s.n_triangles) / 1e6);
  if (argc <= 4) unlink(path);
  vox_surface_free(&s);
  vox_model_free(&model);
  vox_context_destroy(ctx);
  return 0;
}
