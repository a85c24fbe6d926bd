/* SPDX-License-Identifier: BSD-3-Clause */
/* Benchmark of the sparse (bone-only) solver on a synthetic trabecular bone
 * (docs/benchmarks.md, Arbenz et al. 2014's perlin meshes):
 *
 *   bench_sparse N|MODEL.nc [cuda|cpu] [RTOL] [SMOOTHING_STEPS] [full]
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
 * same model with the full-box storage as well (CG counts, times). A model
 * file instead of N (bench_clinical_model's clinical sample) is solved as
 * voxfe-analyze solves it: its largest 26-connected component, its own
 * materials, the same compression test (--connectivity=6 keeps the largest
 * face-connected one, --keep-label=L label L alone).
 *
 * Settings are --NAME=VALUE anywhere on the command line. --parts=1 times
 * the V-cycle's parts alone on the same model before the solve (the
 * products of levels 0 and 1, the transfers between them, a smoothing step
 * and a dot product; the mean of 20 after 3 warm-ups, with the bytes per
 * second over the least bytes each must move). --profile=1 adds the
 * solve's time per CG iteration in the CG's own work and in each V-cycle
 * level's (sparse_solve.h). --coarse=sa solves with the
 * smoothed-aggregation coarse levels (sparse_sa.h) and prints their
 * operator complexity and setup time, --coarse=box with the plain coarse
 * voxel images instead of the split levels (sparse_split.h).
 * --hierarchy=1 times the host hierarchy's build alone, plain and split, and
 * stops. --dilate=N thickens the bone by N voxels first (every empty voxel
 * with a bone face neighbour joins it, N times). */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_ops.h"
#include "bench_common.h"
#include "host_memory.h"
#include "perlin_bone.h"
#include "sparse_hierarchy.h"
#include "sparse_ops.h"
#include "sparse_parts.h"
#include "sparse_solve.h"
#include "voxfe/io.h"
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
  if (be->ops->vec->create(be, n, VOX_DOUBLE, &a) || be->ops->vec->create(be, n, VOX_DOUBLE, &b)) die(ctx, "copy vectors");
  double best = 0;
  for (int rep = 0; rep < 6; rep++) {
    be->ops->synchronize(be);
    const double t0 = bench_now();
    be->ops->vec->copy(be, &b, &a);
    be->ops->synchronize(be);
    const double t = bench_now() - t0;
    if (rep > 0 && 2.0 * (double)n * sizeof(double) / t > best)
      best = 2.0 * (double)n * sizeof(double) / t;
  }
  be->ops->vec->destroy(be, &a);
  be->ops->vec->destroy(be, &b);
  return best;
}

/* Adds to the bone every empty voxel with a bone face neighbour (a thicker
 * bone of the same shape: --dilate=N does it N times). */
static void dilate_bone(vox_context *ctx, vox_model *m) {
  const int64_t nx = m->grid.nx, ny = m->grid.ny, nz = m->grid.nz, ne = nx * ny * nz;
  uint8_t *copy = malloc((size_t)ne);
  if (!copy) die(ctx, "dilation");
  memcpy(copy, m->label, (size_t)ne);
  for (int64_t k = 0; k < nz; k++)
    for (int64_t j = 0; j < ny; j++)
      for (int64_t i = 0; i < nx; i++) {
        const int64_t e = (k * ny + j) * nx + i;
        if (copy[e]) continue;
        const int near = (i > 0 && copy[e - 1]) || (i < nx - 1 && copy[e + 1]) ||
                         (j > 0 && copy[e - nx]) || (j < ny - 1 && copy[e + nx]) ||
                         (k > 0 && copy[e - nx * ny]) || (k < nz - 1 && copy[e + nx * ny]);
        if (near) m->label[e] = 1;
      }
  free(copy);
}

int main(int argc, char **argv) {
  static const char *const settings[] = {"keep-label", "connectivity", "dilate", "hierarchy",
                                         "parts", "profile", "coarse", "write", "cycle", "rigid",
                                         NULL};
  bench_options_take(&argc, argv, settings);
  if (argc < 2) {
    fprintf(stderr, "usage: bench_sparse N|MODEL.nc [cuda|cpu] [RTOL] [SMOOTHING_STEPS] [full] "
                    "[--keep-label=L] [--connectivity=6|26] [--dilate=N] [--hierarchy=1] "
                    "[--parts=1] [--profile=1] [--coarse=split|box|sa] [--write=MODEL.nc] "
                    "[--cycle=v|w|auto] [--rigid=0|1]\n");
    return 2;
  }
  const int64_t n = strspn(argv[1], "0123456789") == strlen(argv[1]) ? atoll(argv[1]) : 0;
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
  size_t removed, components, bone_elements = 0;
  if (n <= 0) { /* a model file (voxfe-analyze's clinical sample): its largest
                 * 26-connected component, as voxfe-analyze keeps */
    if (vox_model_read(ctx, argv[1], &m)) die(ctx, argv[1]);
    g = m.grid;
    /* --keep-label=L keeps label L alone (the clinical sample's cortex 1
     * or trabeculae 2), --connectivity=6 the largest face-connected
     * component: what makes a sample's CG count */
    const char *keep = bench_option("keep-label");
    for (int64_t e = 0; keep && e < vox_grid_elements(&g); e++)
      if (m.label[e] != atoi(keep)) m.label[e] = 0;
    const char *conn = bench_option("connectivity");
    if (vox_keep_largest_component(ctx, &m, conn ? atoi(conn) : 26, &removed, &components))
      die(ctx, "component");
  } else {
    if (vox_model_init(ctx, &m, &g)) die(ctx, "model");
    perlin_bone bone;
    perlin_bone_init(&bone, 1);
#pragma omp parallel for schedule(dynamic)
    for (int64_t k = 0; k < n; k++)
      for (int64_t j = 0; j < n; j++)
        for (int64_t i = 0; i < n; i++)
          m.label[(k * n + j) * n + i] = (uint8_t)perlin_bone_voxel(&bone, n, i, j, k);
    const char *dilate = bench_option("dilate");
    for (int pass = 0; dilate && pass < atoi(dilate); pass++) dilate_bone(ctx, &m);
    if (vox_keep_largest_component(ctx, &m, 6, &removed, &components)) die(ctx, "component");
    vox_material mat = {.label = 1, .youngs_modulus = 8748, .poisson_ratio = 0.3, .name = "bone"};
    if (vox_model_add_material(ctx, &m, &mat)) die(ctx, "material");
  }
  const int64_t n_box = vox_grid_elements(&g);
  for (int64_t e = 0; e < n_box; e++) bone_elements += m.label[e] != 0;
  if (vox_check_plate_contact(ctx, &m, 2, 6)) die(ctx, "plates");
  /* --write=FILE: the bone as a model file for voxfe-analyze, which adds
   * the compression test itself (the perlin runs over MPI ranks) */
  const char *write = bench_option("write");
  if (write) {
    if (vox_model_write(ctx, write, &m)) die(ctx, write);
    printf("%s: %zu bone elements written\n", write, bone_elements);
    vox_model_free(&m);
    vox_backend_destroy(be);
    vox_context_destroy(ctx);
    return 0;
  }
  double applied;
  if (vox_add_compression_test(ctx, &m, VOX_TEST_UNIAXIAL, 2, -0.01, &applied)) die(ctx, "test");
  printf("model: %lld x %lld x %lld box, %zu bone elements (%.1f%%), %zu voxels in %zu smaller "
         "components removed, made in %.1f s\n",
         (long long)g.nx, (long long)g.ny, (long long)g.nz, bone_elements,
         100.0 * (double)bone_elements / (double)n_box, removed, components - 1, bench_now() - t0);

  const double bandwidth = copy_bandwidth(ctx, be);
  size_t free0 = 0, total = 0;
  if (be->ops->device_memory) be->ops->memory(be, &free0, &total);

  const char *hierarchy = bench_option("hierarchy");
  if (hierarchy && atoi(hierarchy) > 0) { /* the host hierarchy's build alone, each kind */
    for (int split = 0; split < 2; split++) {
      vox_sparse_hierarchy h;
      const double th = bench_now();
      if (vox_sparse_hierarchy_build(ctx, &m, 0.3, 0, split, &h)) die(ctx, "hierarchy");
      printf("hierarchy (%s coarse levels): %.3f s, nodes", split ? "split" : "box",
             bench_now() - th);
      for (int l = 0; l < h.n_levels; l++) printf(" %zu", h.level[l].n_nodes);
      printf("\n");
      vox_sparse_hierarchy_free(&h);
    }
    return 0;
  }
  vox_solver_options opt;
  vox_solver_options_default(&opt);
  opt.rtol = rtol;
  if (steps > 0) opt.smoothing_steps = steps;
  opt.storage = VOX_STORAGE_SPARSE;
  const char *profile = bench_option("profile"), *coarse = bench_option("coarse");
  opt.sparse.profile = profile && atoi(profile) > 0;
  if (coarse && vox_sparse_coarse_parse(coarse, &opt.sparse.coarse) != 0) {
    fprintf(stderr, "%s: --coarse=split, box or sa\n", argv[0]);
    return 2;
  }
  const char *cycle = bench_option("cycle");
  if (cycle && vox_mg_cycle_parse(cycle, &opt.mg_cycle) != 0) {
    fprintf(stderr, "%s: --cycle=v, w or auto\n", argv[0]);
    return 2;
  }
  const char *rigid = bench_option("rigid");
  if (rigid) opt.sparse.rigid_modes = atoi(rigid); /* --sparse-rigid-modes */
  const size_t nd = 3 * (size_t)vox_grid_nodes(&g);
  double *u = vox_host_calloc(nd, sizeof *u); /* in huge pages, as voxfe-analyze's */
  if (!u) die(ctx, "displacements");
  const char *parts = bench_option("parts");
  if (parts && atoi(parts) > 0) {
    const char *failed = bench_sparse_parts(ctx, be, &m, be->ops->name, 1);
    if (failed) die(ctx, failed);
  }
  {
    memset(u, 0, nd * sizeof *u);
    vox_solve_result r;
    vox_sparse_stats st;
    t0 = bench_now();
    if (vox_sparse_solve_elasticity(ctx, be, &m, &opt, u, &r, &st)) die(ctx, "sparse solve");
    const double total_seconds = bench_now() - t0;
    printf("sparse: %zu dofs, %d levels (dofs", st.n_dofs, st.n_levels);
    for (int l = 0; l < st.n_levels && l < 16; l++) printf(" %zu", st.level_dofs[l]);
    printf("), Chebyshev degree %d, %d of %d smoothed levels by 3 x 3 blocks, %s-cycle\n",
           opt.smoothing_steps > 4 ? opt.smoothing_steps : 4, st.block_levels, st.n_levels - 1,
           opt.mg_cycle == VOX_MG_CYCLE_W ? "W" : "V");
    printf("sparse: %s in %d CG iterations, relative residual %.2e\n",
           vox_convergence_string(r.reason), r.iterations, r.residual_norm / r.rhs_norm);
    printf("sparse: setup %.2f s, solve %.2f s (%.1f ms per iteration), total %.2f s on %s\n",
           st.setup_seconds, st.solve_seconds, 1e3 * st.solve_seconds / (r.iterations + 1),
           total_seconds, be->ops->name);
    printf("sparse: of the solve, %.2f s in the iterations (%.1f ms each), %.2f s in the "
           "right-hand side, the uploads and the result's return to the box\n",
           st.pcg_seconds, 1e3 * st.pcg_seconds / (r.iterations + 1),
           st.solve_seconds - st.pcg_seconds);
    printf("sparse: %.3f GB allocated by the solver, %.1f bytes per dof\n", (double)st.bytes / 1e9,
           (double)st.bytes / (double)st.n_dofs);
    if (st.sa) {
      const double *p = st.sa_part_seconds;
      printf("sparse: smoothed-aggregation levels (--coarse=sa), operator complexity "
             "%.2f, built in %.2f s on the host: aggregation %.2f, tentative %.2f, prolongator "
             "smoothing %.2f, Galerkin products %.2f, smoothers %.2f, coarsest inverse %.2f\n",
             st.operator_complexity, st.sa_setup_seconds, p[0], p[1], p[2], p[3], p[4], p[5]);
    }
    bench_sparse_print_profile(&st, r.iterations); /* the profile with --profile=1 */
    if (be->ops->device_memory)
      printf("device: %.2f GB free of %.2f GB before the solve\n", (double)free0 / 1e9,
             (double)total / 1e9);
    printf("copy bandwidth: %.0f GB/s (device-to-device, read + write)\n", bandwidth / 1e9);
  }

  if (full) {
    memset(u, 0, nd * sizeof *u);
    opt.storage = VOX_STORAGE_FULL_BOX;
    vox_solve_result rf;
    t0 = bench_now();
    if (vox_solve_elasticity(ctx, be, &m, 0, 1, 0, &opt, u, &rf)) die(ctx, "full-box solve");
    printf("full box: %s in %d CG iterations, %.2f s (setup included)\n",
           vox_convergence_string(rf.reason), rf.iterations, bench_now() - t0);
  }
  vox_host_free(u);
  vox_model_free(&m);
  vox_backend_destroy(be);
  vox_context_destroy(ctx);
  return 0;
}
