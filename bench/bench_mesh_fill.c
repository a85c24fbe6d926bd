/* SPDX-License-Identifier: BSD-3-Clause */
/* The mesh fill benchmark (bench/mesh-vs-vtk.sh, docs/benchmarks.md): a
 * rippled ball of about T triangles (tests/mesh/mesh_shapes.h), written as a binary STL, read back
 * through assimp and filled into an N^3-ish grid (N voxels along the longest
 * side) on the CPU or the GPU. Prints the times, sizes and counts, and writes
 * the grid (for VTK) and the voxels (for the comparison).
 *   bench_mesh_fill TRIANGLES N THREADS DEVICE OUT_PREFIX
 * writes OUT_PREFIX.stl, OUT_PREFIX.grid (nx ny nz, origin, voxel size) and
 * OUT_PREFIX.raw (nx*ny*nz bytes, x fastest). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <omp.h>

#include "../tests/mesh/mesh_shapes.h"
#include "voxfe/mesh.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv) {
  if (argc != 6) {
    fprintf(stderr, "usage: bench_mesh_fill TRIANGLES N THREADS cpu|cuda|auto OUT_PREFIX\n");
    return 2;
  }
  long triangles = atol(argv[1]);
  int64_t resolution = atol(argv[2]);
  int threads = atoi(argv[3]);
  vox_device device;
  if (vox_device_parse(argv[4], &device)) return 2;
  omp_set_num_threads(threads);
  char path[1024];
  vox_context *ctx;
  if (vox_context_create(&ctx)) return 1;
  snprintf(path, sizeof path, "%s.stl", argv[5]);
  vox_mesh ball;
  shape_rippled_ball(&ball, triangles);
  /* a triangle soup, as CAD tools write STL */
  if (shape_write_stl_binary(&ball, path, "rippled ball (bench_mesh_fill)")) return 1;
  vox_mesh_free(&ball);

  double t0 = now();
  vox_mesh mesh;
  if (vox_mesh_read(ctx, path, &mesh)) {
    fprintf(stderr, "%s\n", vox_context_message(ctx));
    return 1;
  }
  double t_read = now() - t0;
  double lo[3], hi[3];
  vox_mesh_bounds(&mesh, lo, hi);
  const double nan3[3] = {NAN, NAN, NAN};
  vox_grid grid;
  if (vox_grid_around(ctx, lo, hi, nan3, resolution, 0, (int64_t)1 << 34, &grid)) return 1;
  const int64_t ne = vox_grid_elements(&grid);
  uint8_t *inside = malloc((size_t)ne);
  if (!inside) return 1;
  /* one warm-up run (page faults of the output, the GPU's start), then the
   * best of three */
  vox_mesh_fill_info info, best = {0};
  double best_total = INFINITY;
  for (int run = 0; run < 4; run++) {
    t0 = now();
    if (vox_mesh_fill(ctx, &mesh, &grid, VOX_FILL_AUTO, device, inside, &info)) {
      fprintf(stderr, "%s\n", vox_context_message(ctx));
      return 1;
    }
    double total = now() - t0;
    if (run > 0 && total < best_total) best_total = total, best = info;
  }
  printf("voxfe: %lld triangles (%lld vertices) -> %lldx%lldx%lld voxels, %s on %s, "
         "%d threads\n",
         (long long)best.triangles, (long long)mesh.n_vertices, (long long)grid.nx,
         (long long)grid.ny, (long long)grid.nz, vox_fill_rule_name(best.rule),
         best.device == VOX_DEVICE_CUDA ? "cuda" : "cpu", threads);
  printf("voxfe: read %.3f s (not counted); fill %.4f s = prepare (on the %s) %.4f s + rays "
         "%.4f s (+ count); %lld voxels inside, open edges %lld\n",
         t_read, best_total, best.device == VOX_DEVICE_CUDA ? "GPU" : "CPU", best.seconds_prepare, best.seconds_fill, (long long)best.inside,
         (long long)best.open_edges);
  if (best.device == VOX_DEVICE_CUDA) {
    printf("voxfe: GPU kernels %.4f s; transfers and set-up %.4f s\n", best.seconds_device,
           best.seconds_fill - best.seconds_device);
    /* the same voxels as the CPU's, counted in the same run */
    uint8_t *cpu = malloc((size_t)ne);
    t0 = now();
    if (!cpu || vox_mesh_fill(ctx, &mesh, &grid, VOX_FILL_AUTO, VOX_DEVICE_CPU, cpu, &info))
      return 1;
    double t_cpu = now() - t0;
    int64_t differ = 0;
    for (int64_t e = 0; e < ne; e++) differ += cpu[e] != inside[e];
    printf("voxfe: CPU (%d threads) %.4f s (prepare %.4f s); voxels that differ between GPU "
           "and CPU: %lld; counts (triangles, degenerate, repeats, open edges) %s\n",
           omp_get_max_threads(), t_cpu, info.seconds_prepare, (long long)differ,
           info.triangles == best.triangles && info.degenerate == best.degenerate &&
                   info.duplicates == best.duplicates && info.open_edges == best.open_edges
               ? "the same"
               : "DIFFER");
    free(cpu);
  }
  snprintf(path, sizeof path, "%s.grid", argv[5]);
  FILE *f = fopen(path, "w");
  fprintf(f, "%lld %lld %lld %.17g %.17g %.17g %.17g %.17g %.17g\n", (long long)grid.nx,
          (long long)grid.ny, (long long)grid.nz, grid.origin[0], grid.origin[1], grid.origin[2],
          grid.voxel_size[0], grid.voxel_size[1], grid.voxel_size[2]);
  fclose(f);
  snprintf(path, sizeof path, "%s.raw", argv[5]);
  f = fopen(path, "wb");
  fwrite(inside, 1, (size_t)ne, f);
  fclose(f);
  free(inside);
  vox_mesh_free(&mesh);
  vox_context_destroy(ctx);
  return 0;
}
