/* SPDX-License-Identifier: BSD-3-Clause */
/* The compression test on the CUDA backend against the CPU backend (label
 * gpu): a random porous two-material model, uniaxial along z, solved on both
 * in double and in mixed precision to a tight tolerance; displacements and
 * the top plate's force must agree, and so must solves that stop by the
 * energy test or the reaction test on either storage. Then one larger model
 * on the GPU alone, whose time is printed (not checked). Exit 77 (skipped)
 * when this build has no CUDA or the machine no device. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../check.h"
#include "voxfe/voxfe.h"

static void porous(vox_context *ctx, vox_model *m, int n, unsigned seed) {
  vox_grid g = {n, n, n, {0.06, 0.06, 0.06}, {0, 0, 0}, 0};
  CHECK_OK(ctx, vox_model_init(ctx, m, &g));
  const size_t ne = (size_t)n * n * n, layer = (size_t)n * n;
  for (size_t e = 0; e < ne; e++) {
    seed = seed * 1103515245u + 12345u;
    const unsigned r = (seed >> 16) % 100;
    m->label[e] = r < 40 ? 0 : (uint8_t)(1 + r % 2);
  }
  memset(m->label, 1, layer);
  memset(m->label + ne - layer, 1, layer);
  for (int l = 1; l <= 2; l++) {
    vox_material mat = {.label = (uint8_t)l, .role = VOX_ROLE_SOLID,
                        .youngs_modulus = l == 1 ? 8748 : 4000, .poisson_ratio = 0.3,
                        .conductivity = 1};
    snprintf(mat.name, sizeof mat.name, "bone%d", l);
    CHECK_OK(ctx, vox_model_add_material(ctx, m, &mat));
  }
  size_t removed, comps;
  CHECK_OK(ctx, vox_keep_largest_component(ctx, m, 26, &removed, &comps));
  CHECK_OK(ctx, vox_add_compression_test(ctx, m, VOX_TEST_UNIAXIAL, 2, -0.01, NULL));
}

static double top_force(vox_context *ctx, const vox_model *m, const double *u) {
  const size_t nn = (size_t)vox_grid_nodes(&m->grid);
  double *r = malloc(3 * nn * sizeof *r), f = 0;
  CHECK_OK(ctx, vox_analysis_fields(ctx, m, NULL, u, r, NULL, NULL, 0, NULL));
  for (size_t i = 0; i < m->n_constraints; i++)
    if (m->constraints[i].component == 2 && m->constraints[i].value != 0)
      f += r[3 * m->constraints[i].node + 2];
  free(r);
  return f;
}

static double seconds(const struct timespec *t0) {
  struct timespec t1;
  clock_gettime(CLOCK_MONOTONIC, &t1);
  return (double)(t1.tv_sec - t0->tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0->tv_nsec);
}

int main(void) {
  vox_context *ctx;
  if (vox_context_create(&ctx) != VOX_OK) return 1;
  vox_backend *gpu, *cpu;
  if (vox_backend_create(ctx, VOX_DEVICE_CUDA, &gpu) != VOX_OK) {
    printf("no CUDA backend or device: skipped (%s)\n", vox_context_message(ctx));
    vox_context_destroy(ctx);
    return 77;
  }
  CHECK_OK(ctx, vox_backend_create(ctx, VOX_DEVICE_CPU, &cpu));
  vox_model m = {0};
  porous(ctx, &m, 24, 7);
  const size_t nd = 3 * (size_t)vox_grid_nodes(&m.grid);
  double *uc = calloc(nd, sizeof *uc), *ug = calloc(nd, sizeof *ug);
  vox_solver_options opt;
  vox_solver_options_default(&opt);
  opt.rtol = 1e-11;
  opt.precision = VOX_PRECISION_DOUBLE;
  vox_solve_result rc, rg;
  CHECK_OK(ctx, vox_solve_elasticity(ctx, cpu, &m, 0, 1, 0, &opt, uc, &rc));
  const double fc = top_force(ctx, &m, uc);
  for (int p = 0; p < 2; p++) {
    opt.precision = p ? VOX_PRECISION_MIXED : VOX_PRECISION_DOUBLE;
    memset(ug, 0, nd * sizeof *ug);
    CHECK_OK(ctx, vox_solve_elasticity(ctx, gpu, &m, 0, 1, 0, &opt, ug, &rg));
    CHECK(rc.reason > 0 && rg.reason > 0);
    double umax = 0, diff = 0;
    for (size_t i = 0; i < nd; i++)
      umax = fmax(umax, fabs(uc[i])), diff = fmax(diff, fabs(uc[i] - ug[i]));
    const double fg = top_force(ctx, &m, ug);
    printf("%s: force cpu %.12g gpu %.12g N; max |u diff| %.3g of %.3g mm; CG %d / %d\n",
           vox_precision_name(opt.precision), fc, fg, diff, umax, rc.iterations, rg.iterations);
    CHECK(diff <= 1e-8 * umax);
    CHECK(fabs(fg - fc) <= 1e-8 * fabs(fc));
  }
  /* the energy test (--cg-energy-tol) and the reaction test
   * (--cg-reaction-tol) on either storage, in double: the same step on both
   * backends (the box's CG keeps its scalars on the device), and the force
   * near the tight solve's */
  for (int t = 0; t < 4; t++) {
    const int st = t % 2, reaction = t / 2;
    opt.precision = VOX_PRECISION_DOUBLE;
    opt.storage = st ? VOX_STORAGE_SPARSE : VOX_STORAGE_FULL_BOX;
    opt.rtol = 1e-12;
    opt.energy_tol = reaction ? 0 : 1e-8;
    opt.reaction_tol = reaction ? 1e-8 : 0;
    memset(uc, 0, nd * sizeof *uc), memset(ug, 0, nd * sizeof *ug);
    CHECK_OK(ctx, vox_solve_elasticity(ctx, cpu, &m, 0, 1, 0, &opt, uc, &rc));
    CHECK_OK(ctx, vox_solve_elasticity(ctx, gpu, &m, 0, 1, 0, &opt, ug, &rg));
    const double fe = top_force(ctx, &m, uc), fg = top_force(ctx, &m, ug);
    printf("%s, %s test 1e-8: force cpu %.12g gpu %.12g N (tight %.12g); CG %d / %d\n",
           st ? "sparse" : "full box", reaction ? "reaction" : "energy", fe, fg, fc,
           rc.iterations, rg.iterations);
    const int reason = reaction ? VOX_CONVERGED_REACTION : VOX_CONVERGED_ENERGY;
    CHECK(rc.reason == reason && rg.reason == reason);
    CHECK(abs(rc.iterations - rg.iterations) <= 1);
    CHECK(fabs(fe - fc) <= 1e-6 * fabs(fc) && fabs(fg - fc) <= 1e-6 * fabs(fc));
  }
  free(uc);
  free(ug);
  vox_model_free(&m);

  /* a larger model on the GPU alone: the time of one analysis solve */
  porous(ctx, &m, 160, 3);
  size_t bone = 0;
  for (size_t e = 0; e < (size_t)vox_grid_elements(&m.grid); e++) bone += m.label[e] != 0;
  ug = calloc(3 * (size_t)vox_grid_nodes(&m.grid), sizeof *ug);
  vox_solver_options_default(&opt);
  opt.rtol = 1e-6;
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  CHECK_OK(ctx, vox_solve_elasticity(ctx, gpu, &m, 0, 1, 0, &opt, ug, &rg));
  const double ts = seconds(&t0);
  clock_gettime(CLOCK_MONOTONIC, &t0);
  const double f = top_force(ctx, &m, ug);
  printf("160^3 box, %zu bone elements, %zu dofs: GPU solve to 1e-6 in %.2f s (%d CG "
         "iterations), host reactions %.2f s, force %.6g N\n",
         bone, 3 * (size_t)vox_grid_nodes(&m.grid), ts, rg.iterations, seconds(&t0), f);
  CHECK(rg.reason > 0);
  free(ug);
  vox_model_free(&m);
  vox_backend_destroy(gpu);
  vox_backend_destroy(cpu);
  vox_context_destroy(ctx);
  if (check_failures) fprintf(stderr, "%d checks failed\n", check_failures);
  return check_failures ? 1 : 0;
}
