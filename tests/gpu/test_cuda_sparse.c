/* The sparse (bone-only) solver on the CUDA backend against the CPU
 * backend's (label gpu): a perlin bone under a compression test and under
 * forces in two load cases solved to 1e-12 on both, the same displacements
 * to 1e-8 of the largest (the GPU's float preconditioner changes the path,
 * not the solution), and the CG counts close. Exit 77 (skipped) when this
 * build has no CUDA or the machine no device; VOXFE_GPU_TEST_DEVICE=cpu runs
 * it against the CPU backend itself. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "perlin_bone.h"
#include "sparse_solve.h"
#include "voxfe/voxfe.h"

enum { SKIP = 77 };

static void make_bone(vox_context *ctx, vox_model *m, int64_t n) {
  vox_grid g = {.nx = n, .ny = n, .nz = n, .voxel_size = {0.05, 0.05, 0.05}};
  CHECK_OK(ctx, vox_model_init(ctx, m, &g));
  perlin_bone bone;
  perlin_bone_init(&bone, 3);
  bone.frequency = 1.5, bone.octaves = 2, bone.band = 0.22;
  for (int64_t k = 0; k < n; k++)
    for (int64_t j = 0; j < n; j++)
      for (int64_t i = 0; i < n; i++)
        m->label[(k * n + j) * n + i] =
            perlin_bone_voxel(&bone, n, i, j, k) ? (uint8_t)(j < n / 2 ? 1 : 2) : 0;
  vox_material a = {.label = 1, .youngs_modulus = 6829, .poisson_ratio = 0.3, .name = "a"};
  vox_material b = {.label = 2, .youngs_modulus = 8748.3, .poisson_ratio = 0.3, .name = "b"};
  CHECK_OK(ctx, vox_model_add_material(ctx, m, &a));
  CHECK_OK(ctx, vox_model_add_material(ctx, m, &b));
  size_t removed, components;
  CHECK_OK(ctx, vox_keep_largest_component(ctx, m, 6, &removed, &components));
}

static void compare(vox_context *ctx, vox_backend *gpu, vox_backend *cpu, const vox_model *m,
                    const char *what) {
  const size_t nd = 3 * (size_t)vox_grid_nodes(&m->grid);
  const int cases = m->n_load_cases > 0 ? m->n_load_cases : 1;
  double *ug = calloc(nd * (size_t)cases, sizeof *ug), *uc = calloc(nd * (size_t)cases, sizeof *uc);
  vox_solver_options opt;
  vox_solver_options_default(&opt);
  opt.rtol = 1e-12;
  opt.storage = VOX_STORAGE_SPARSE;
  vox_solve_result rg[2], rc[2];
  vox_sparse_stats sg, sc;
  CHECK_OK(ctx, vox_sparse_solve_elasticity(ctx, gpu, m, &opt, ug, rg, &sg));
  CHECK_OK(ctx, vox_sparse_solve_elasticity(ctx, cpu, m, &opt, uc, rc, &sc));
  CHECK(sg.bytes > 0 && sg.n_dofs == sc.n_dofs);
  for (int c = 0; c < cases; c++) {
    double diff = 0, scale = 0;
    for (size_t i = 0; i < nd; i++) {
      diff = fmax(diff, fabs(ug[c * nd + i] - uc[c * nd + i]));
      scale = fmax(scale, fabs(uc[c * nd + i]));
    }
    printf("%s case %d: %zu dofs, CG %d (gpu) %d (cpu), max |du| / max |u| = %.2e, "
           "%.1f bytes per dof on the device\n",
           what, c, sg.n_dofs, rg[c].iterations, rc[c].iterations, diff / scale,
           (double)sg.bytes / (double)sg.n_dofs);
    CHECK(rg[c].reason == VOX_CONVERGED_RTOL && rc[c].reason == VOX_CONVERGED_RTOL);
    CHECK(scale > 0 && diff <= 1e-8 * scale);
    CHECK(abs(rg[c].iterations - rc[c].iterations) <= 3 + rc[c].iterations / 5);
  }
  free(ug);
  free(uc);
}

int main(void) {
  setvbuf(stdout, NULL, _IONBF, 0);
  vox_context *ctx;
  vox_context_create(&ctx);
  vox_device d = VOX_DEVICE_CUDA;
  const char *env = getenv("VOXFE_GPU_TEST_DEVICE");
  if (env && *env) vox_device_parse(env, &d);
  vox_backend *gpu, *cpu;
  if (vox_backend_create(ctx, d, &gpu) != VOX_OK) {
    printf("SKIP: %s\n", vox_context_message(ctx));
    vox_context_destroy(ctx);
    return SKIP;
  }
  CHECK_OK(ctx, vox_backend_create(ctx, VOX_DEVICE_CPU, &cpu));
  vox_model m;
  make_bone(ctx, &m, 27);
  double applied;
  CHECK_OK(ctx, vox_add_compression_test(ctx, &m, VOX_TEST_UNIAXIAL, 2, -0.01, &applied));
  compare(ctx, gpu, cpu, &m, "compression 27^3");
  /* forces, two load cases, bottom clamped */
  const int64_t n = m.grid.nx, px = n + 1;
  m.n_constraints = 0;
  m.n_loads = 0;
  CHECK_OK(ctx, vox_model_set_load_cases(ctx, &m, 2));
  for (int64_t j = 0; j <= n; j++)
    for (int64_t i = 0; i <= n; i++) {
      const int64_t bottom = j * px + i, top = (n * px + j) * px + i;
      for (int c = 0; c < 3; c++) CHECK_OK(ctx, vox_model_add_constraint(ctx, &m, bottom, c, 0));
      CHECK_OK(ctx, vox_model_add_load(ctx, &m, top, 2, 0, -0.5));
      CHECK_OK(ctx, vox_model_add_load(ctx, &m, top, 0, 1, 0.25 + 0.01 * (double)i));
    }
  compare(ctx, gpu, cpu, &m, "forces 27^3");
  vox_model_free(&m);
  vox_backend_destroy(gpu);
  vox_backend_destroy(cpu);
  vox_context_destroy(ctx);
  CHECK_DONE();
}
