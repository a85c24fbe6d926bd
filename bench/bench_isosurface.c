/* SPDX-License-Identifier: BSD-3-Clause */
/* Benchmark of the isosurface and the STL writer (voxfe/surface.h) on a
 * gyroid, or on an optimized design upsampled.
 *
 *   bench_isosurface [--triangles T] [--device D] N [THREADS] [PERIODS] [OUTPUT.stl]
 *                    [REPEATS]
 *   bench_isosurface [--triangles T] [--device D] --design DESIGN.nc FACTOR [THREADS]
 *                    [OUTPUT.stl] [REPEATS] [RAW]
 *
 * The gyroid: an N^3 grid of unit voxels with density
 *   (sin x cos y + sin y cos z + sin z cos x + 1.5) / 3   in [0, 1]
 * at the voxel centres, x = 2 pi PERIODS (i + 0.5) / N, extracted at 0.5.
 * The design: the density of DESIGN.nc (a voxfe-optimize result)
 * interpolated trilinearly between its voxel centres onto a grid FACTOR
 * times finer in each direction, extracted at 0.5; with RAW, the fine field
 * is also written there (float64, x fastest) with RAW.dims ("nx ny nz hx hy
 * hz ox oy oz"), for VTK. bench/isosurface-vs-vtk.sh runs VTK's
 * vtkFlyingEdges3D on the same fields.
 *
 * Prints the best of REPEATS (default 5) isosurface times (wall clock, and
 * CPU seconds of all threads, which a busy machine inflates less), with --triangles
 * the time of one decimation of the surface to T triangles
 * (vox_surface_decimate), and the time of one binary STL write (fsync
 * included) to OUTPUT.stl (default gyroid-N.stl or design.stl in the current
 * folder; removed afterwards unless named).
 *
 * --device cuda extracts on the GPU (vox_isosurface_density_on):
 * the time then includes the transfers of the field to the device and of
 * the mesh back, and the device time of the kernels alone is printed beside
 * it; the first extraction, which also starts the device, is not timed. The
 * GPU's surface is compared with the CPU's, vertex for vertex and triangle
 * for triangle (they must be equal, in the same order). */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "voxfe/backend.h"
#include "voxfe/context.h"
#include "voxfe/io.h"
#include "voxfe/model.h"
#include "voxfe/surface.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* CPU seconds of all threads of the process: on a shared machine the best
 * of several wall times still includes waiting for a core, this does not. */
static double cpu_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void die(vox_context *ctx, const char *what) {
  fprintf(stderr, "bench_isosurface: %s: %s\n", what, vox_context_message(ctx));
  exit(1);
}

/* The design's density, FACTOR times finer: trilinear between the coarse
 * voxel centres, constant beyond the outer ones. */
static void upsample(vox_context *ctx, const char *path, int factor, int threads,
                     vox_model *fine) {
  vox_model coarse = {0};
  if (vox_model_read(ctx, path, &coarse) != VOX_OK) die(ctx, path);
  if (!coarse.density) {
    fprintf(stderr, "bench_isosurface: %s has no density\n", path);
    exit(1);
  }
  const vox_grid *c = &coarse.grid;
  vox_grid g = {.nx = c->nx * factor, .ny = c->ny * factor, .nz = c->nz * factor};
  for (int k = 0; k < 3; k++)
    g.voxel_size[k] = c->voxel_size[k] / factor, g.origin[k] = c->origin[k];
  if (vox_model_init(ctx, fine, &g) != VOX_OK) die(ctx, "model");
  fine->density = malloc((size_t)vox_grid_elements(&g) * sizeof *fine->density);
  if (!fine->density) exit(1);
  const int64_t cn[3] = {c->nx, c->ny, c->nz};
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t kz = 0; kz < g.nz; kz++)
    for (int64_t ky = 0; ky < g.ny; ky++)
      for (int64_t kx = 0; kx < g.nx; kx++) {
        const int64_t at[3] = {kx, ky, kz};
        int64_t lo[3];
        double w[3];
        for (int d = 0; d < 3; d++) {
          double u = ((double)at[d] + 0.5) / factor - 0.5; /* in coarse centre units */
          if (u < 0) u = 0;
          if (u > (double)(cn[d] - 1)) u = (double)(cn[d] - 1);
          lo[d] = (int64_t)u;
          if (lo[d] > cn[d] - 2) lo[d] = cn[d] > 1 ? cn[d] - 2 : 0;
          w[d] = cn[d] > 1 ? u - (double)lo[d] : 0;
        }
        double v = 0;
        for (int corner = 0; corner < 8; corner++) {
          int64_t i[3];
          double weight = 1;
          for (int d = 0; d < 3; d++) {
            int bit = (corner >> d) & 1;
            i[d] = lo[d] + (cn[d] > 1 ? bit : 0);
            weight *= bit ? w[d] : 1 - w[d];
          }
          v += weight * coarse.density[(i[2] * cn[1] + i[1]) * cn[0] + i[0]];
        }
        fine->density[(kz * g.ny + ky) * g.nx + kx] = v;
      }
  vox_model_free(&coarse);
}

static void write_raw(const vox_model *m, const char *path) {
  const vox_grid *g = &m->grid;
  FILE *f = fopen(path, "wb");
  size_t n = (size_t)vox_grid_elements(g);
  if (!f || fwrite(m->density, sizeof *m->density, n, f) != n || fclose(f) != 0) {
    perror(path);
    exit(1);
  }
  char dims[4096];
  snprintf(dims, sizeof dims, "%s.dims", path);
  f = fopen(dims, "w");
  if (!f || fprintf(f, "%lld %lld %lld %.17g %.17g %.17g %.17g %.17g %.17g\n",
                    (long long)g->nx, (long long)g->ny, (long long)g->nz, g->voxel_size[0],
                    g->voxel_size[1], g->voxel_size[2], g->origin[0], g->origin[1],
                    g->origin[2]) < 0 || fclose(f) != 0) {
    perror(dims);
    exit(1);
  }
}

int main(int argc, char **argv) {
  long budget = 0; /* --triangles */
  vox_device device = VOX_DEVICE_CPU;
  while (argc > 2 && (strcmp(argv[1], "--triangles") == 0 || strcmp(argv[1], "--device") == 0)) {
    if (strcmp(argv[1], "--triangles") == 0) budget = atol(argv[2]);
    else if (vox_device_parse(argv[2], &device) != 0) {
      fprintf(stderr, "bench_isosurface: --device: expected cpu, cuda or auto, got '%s'\n",
              argv[2]);
      return 2;
    }
    argv[2] = argv[0];
    argv += 2, argc -= 2;
  }
  const int design = argc > 1 && strcmp(argv[1], "--design") == 0;
  if (design ? argc < 4 || atoi(argv[3]) < 1 : argc < 2 || atoi(argv[1]) < 2) {
    fprintf(stderr,
            "usage: %s N [THREADS] [PERIODS] [OUTPUT.stl] [REPEATS]\n"
            "       %s --design DESIGN.nc FACTOR [THREADS] [OUTPUT.stl] [REPEATS] [RAW]\n",
            argv[0], argv[0]);
    return 2;
  }
  /* the arguments after the field's */
  char **rest = argv + (design ? 4 : 2);
  int n_rest = argc - (design ? 4 : 2);
  const int threads = n_rest > 0 && atoi(rest[0]) > 0 ? atoi(rest[0]) : omp_get_max_threads();
  if (!design) rest++, n_rest--; /* PERIODS */
  const int n = design ? 0 : atoi(argv[1]);
  const double periods = !design && argc > 3 && atof(argv[3]) > 0 ? atof(argv[3]) : 4;
  char default_path[64];
  snprintf(default_path, sizeof default_path, design ? "design.stl" : "gyroid-%d.stl", n);
  const char *path = n_rest > 1 ? rest[1] : default_path;
  const int repeats = n_rest > 2 && atoi(rest[2]) > 0 ? atoi(rest[2]) : 5;

  vox_context *ctx;
  if (vox_context_create(&ctx) != VOX_OK) return 1;
  vox_context_set_threads(ctx, threads);
  vox_model model;
  char what[512];
  if (design) {
    upsample(ctx, argv[2], atoi(argv[3]), threads, &model);
    if (n_rest > 3) write_raw(&model, rest[3]);
    snprintf(what, sizeof what, "%lldx%lldx%lld design (%s x%d)", (long long)model.grid.nx,
             (long long)model.grid.ny, (long long)model.grid.nz, argv[2], atoi(argv[3]));
  } else {
    vox_grid grid = {.nx = n, .ny = n, .nz = n, .voxel_size = {1, 1, 1}};
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
    snprintf(what, sizeof what, "%d^3 gyroid (%g periods)", n, periods);
  }

  vox_surface s = {0};
  vox_isosurface_info info = {0};
  if (device != VOX_DEVICE_CPU) { /* start the device, untimed */
    if (vox_isosurface_density_on(ctx, &model, 0.5, device, &s, &info) != VOX_OK)
      die(ctx, "isosurface");
  }
  double best = 1e30, best_cpu = 1e30, best_device = 1e30;
  for (int r = 0; r < repeats; r++) {
    vox_surface_free(&s);
    double t = now(), c = cpu_now();
    if (vox_isosurface_density_on(ctx, &model, 0.5, device, &s, &info) != VOX_OK)
      die(ctx, "isosurface");
    t = now() - t, c = cpu_now() - c;
    if (t < best) best = t;
    if (c < best_cpu) best_cpu = c;
    if (info.seconds_device < best_device) best_device = info.seconds_device;
  }
  if (info.device == VOX_DEVICE_CUDA) {
    vox_surface cpu = {0};
    double t = now();
    if (vox_isosurface_density(ctx, &model, 0.5, &cpu) != VOX_OK) die(ctx, "CPU isosurface");
    t = now() - t;
    const int same =
        cpu.n_vertices == s.n_vertices && cpu.n_triangles == s.n_triangles &&
        !memcmp(cpu.vertex, s.vertex, 3 * s.n_vertices * sizeof *s.vertex) &&
        !memcmp(cpu.triangle, s.triangle, 3 * s.n_triangles * sizeof *s.triangle);
    printf("voxfe  %s: GPU isosurface %.4f s with transfers, %.4f s kernels alone (best of %d);"
           " CPU (%d threads) %.4f s; the same surface: %s\n",
           what, best, best_device, repeats, threads, t, same ? "yes" : "NO");
    vox_surface_free(&cpu);
    if (!same) return 1;
  }
  if (budget > 0) {
    size_t before = s.n_triangles;
    double t = now(), c = cpu_now();
    if (vox_surface_decimate(ctx, &s, (size_t)budget) != VOX_OK) die(ctx, "decimation");
    t = now() - t, c = cpu_now() - c;
    printf("voxfe  %s: decimation %zu -> %zu triangles in %.3f s (CPU %.3f s)\n", what, before,
           s.n_triangles, t, c);
  }
  double t_stl = now();
  if (vox_write_stl(ctx, path, &s, 1) != VOX_OK) die(ctx, "STL");
  t_stl = now() - t_stl;
  printf("voxfe  %s, %d threads: isosurface %.4f s (best of %d; CPU %.4f s), "
         "%zu triangles, %zu vertices; binary STL %.4f s (%.1f MB)\n",
         what, threads, best, repeats, best_cpu, s.n_triangles, s.n_vertices, t_stl,
         (84.0 + 50.0 * (double)s.n_triangles) / 1e6);
  if (n_rest <= 1) unlink(path);
  vox_surface_free(&s);
  vox_model_free(&model);
  vox_context_destroy(ctx);
  return 0;
}
