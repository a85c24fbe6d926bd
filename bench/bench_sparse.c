/* Benchmark of the sparse (bone-only) solver on a synthetic trabecular bone
 * (docs/benchmarks.md, seed 004's perlin meshes):
 *
 *   bench_sparse N [cuda|cpu] [RTOL] [SMOOTHING_STEPS] [full]
 *
 * makes the perlin bone of bench/perlin_bone.h in an N^3 box (0.05 mm
 * voxels, E = 8748 MPa, nu = 0.3), keeps its largest face-connected
 * component, sets up uniaxial compression along z at -1% strain and solves
 * it to RTOL (default 1e-6) with the sparse storage (SMOOTHING_STEPS: the
 * Chebyshev degree when above the sparse solver's least, 4). Prints the bone
 * elements and dofs, the levels, the CG iterations, the setup and solve
 * times, the bytes the solver allocated on the backend per dof, the
 * backend's free memory before and during the solve (device memory only),
 * and the device copy bandwidth measured in the same run. `full` solves the
 * same model with the full-box storage as well (CG counts, times). */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_ops.h"
#include "bench_common.h"
#include "perlin_bone.h"
#include "sparse_solve.h"
#include "voxfe/voxfe.h"

static void die(vox_context *ctx, const char *what) {
  fprintf(stderr, "bench_sparse: %s: %s\n", what, vox_context_message(ctx));
  exit(1);
}

/* Bytes per second of a device-to-device copy of 1 GiB (read + write),
 * the best of 5 after a warm-up. */
static double copy_bandwidth(vox_context *ctx, vox_backend *be) {
  const size_t n = ((size_t)1 << 30) / sizeof(double) / 2;
  vox_vec a, b;
  if (be->ops->vec_create(be, n, &a) || be->ops->vec_create(be, n, &b)) die(ctx, "copy vectors");
  double best = 0;
  for (int rep = 0; rep < 6; rep++) {
    be->ops->synchronize(be);
    const double t0 = bench_now();
    be->ops->vec_copy(be, &b, &a);
    be->ops->synchronize(be);
    const double t = bench_now() - t0;
    if (rep > 0 && 2.0 * (double)n * sizeof(double) / t > best)
      best = 2.0 * (double)n * sizeof(double) / t;
  }
  be->ops->vec_destroy(be, &a);
  be->ops->vec_destroy(be, &b);
  return best;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: bench_sparse N [cuda|cpu] [RTOL] [SMOOTHING_STEPS] [full]\n");
    return 2;
  }
  const int64_t n = atoll(argv[1]);
  const int cpu = argc > 2 && strcmp(argv[2], "cpu") == 0;
  const double rtol = argc > 3 ? atof(argv[3]) : 1e-6;
  const int steps = argc > 4 ? atoi(argv[4]) : 0;
  const int full = argc > 5 && strcmp(argv[5], "full") == 0;
  vox_context *ctx;
  if (vox_context_create(&ctx)) return 1;
  vox_backend *be;
  if (vox_backend_create(ctx, cpu ? VOX_DEVICE_CPU : VOX_DEVICE_CUDA, &be)) die(ctx, "backend");

  double t0 = bench_now();
  vox_grid g = {.nx = n, .ny = n, .nz = n, .voxel_size = {0.05, 0.05, 0.05}};
  vox_model m;
  if (vox_model_init(ctx, &m, &g)) die(ctx, "model");
  perlin_bone bone;
  perlin_bone_init(&bone, 1);
#pragma omp parallel for schedule(dynamic)
  for (int64_t k = 0; k < n; k++)
    for (int64_t j = 0; j < n; j++)
      for (int64_t i = 0; i < n; i++)
        m.label[(k * n + j) * n + i] = (uint8_t)perlin_bone_voxel(&bone, n, i, j, k);
  size_t removed, components, bone_elements = 0;
  if (vox_keep_largest_component(ctx, &m, 6, &removed, &components)) die(ctx, "component");
  for (int64_t e = 0; e < n * n * n; e++) bone_elements += m.label[e] != 0;
  vox_material mat = {.label = 1, .youngs_modulus = 8748, .poisson_ratio = 0.3, .name = "bone"};
  if (vox_model_add_material(ctx, &m, &mat)) die(ctx, "material");
  if (vox_check_plate_contact(ctx, &m, 2, 6)) die(ctx, "plates");
  double applied;
  if (vox_add_compression_test(ctx, &m, VOX_TEST_UNIAXIAL, 2, -0.01, &applied)) die(ctx, "test");
  printf("model: %lld^3 box, %zu bone elements (%.1f%%), %zu voxels in %zu smaller components "
         "removed, made in %.1f s\n",
         (long long)n, bone_elements, 100.0 * (double)bone_elements / (double)(n * n * n), removed,
         components - 1, bench_now() - t0);

  const double bandwidth = copy_bandwidth(ctx, be);
  size_t free0 = 0, total = 0;
  if (be->ops->device_memory) be->ops->memory(be, &free0, &total);

  vox_solver_options opt;
  vox_solver_options_default(&opt);
  opt.rtol = rtol;
  if (steps > 0) opt.smoothing_steps = steps;
  opt.storage = VOX_STORAGE_SPARSE;
  const size_t nd = 3 * (size_t)vox_grid_nodes(&g);
  double *u = calloc(nd, sizeof *u);
  if (!u) die(ctx, "displacements");
  vox_solve_result r;
  vox_sparse_stats st;
  t0 = bench_now();
  if (vox_sparse_solve_elasticity(ctx, be, &m, &opt, u, &r, &st)) die(ctx, "sparse solve");
  const double total_seconds = bench_now() - t0;
  printf("sparse: %zu dofs, %d levels (dofs", st.n_dofs, st.n_levels);
  for (int l = 0; l < st.n_levels && l < 16; l++) printf(" %zu", st.level_dofs[l]);
  printf("), Chebyshev degree %d\n", opt.smoothing_steps > 4 ? opt.smoothing_steps : 4);
  printf("sparse: %s in %d CG iterations, relative residual %.2e\n",
         vox_convergence_string(r.reason), r.iterations, r.residual_norm / r.rhs_norm);
  printf("sparse: setup %.2f s, solve %.2f s (%.1f ms per iteration), total %.2f s on %s\n",
         st.setup_seconds, st.solve_seconds, 1e3 * st.solve_seconds / (r.iterations + 1),
         total_seconds, be->ops->name);
  printf("sparse: %.3f GB allocated by the solver, %.1f bytes per dof\n", (double)st.bytes / 1e9,
         (double)st.bytes / (double)st.n_dofs);
  if (be->ops->device_memory)
    printf("device: %.2f GB free of %.2f GB before the solve\n", (double)free0 / 1e9,
           (double)total / 1e9);
  printf("copy bandwidth: %.0f GB/s (device-to-device, read + write)\n", bandwidth / 1e9);

  if (full) {
    memset(u, 0, nd * sizeof *u);
    opt.storage = VOX_STORAGE_FULL_BOX;
    vox_solve_result rf;
    t0 = bench_now();
    if (vox_solve_elasticity(ctx, be, &m, 0, 1, 0, &opt, u, &rf)) die(ctx, "full-box solve");
    printf("full box: %s in %d CG iterations, %.2f s (setup included)\n",
           vox_convergence_string(rf.reason), rf.iterations, bench_now() - t0);
  }
  free(u);
  vox_model_free(&m);
  vox_backend_destroy(be);
  vox_context_destroy(ctx);
  return 0;
}
