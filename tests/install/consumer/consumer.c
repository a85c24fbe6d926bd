/* SPDX-License-Identifier: BSD-3-Clause */
/* A program outside the voxfe tree that embeds libvoxfe: a bar in tension,
 * checked against EA/L. Built by test_install.sh through pkg-config and
 * through find_package(voxfe). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <voxfe/io.h>
#include <voxfe/voxfe.h>

int main(void) {
  vox_context *ctx;
  vox_backend *be;
  if (vox_context_create(&ctx) || vox_backend_create(ctx, VOX_DEVICE_CPU, &be)) return 1;
  vox_grid g = {.nx = 4, .ny = 1, .nz = 1, .voxel_size = {1, 1, 1}};
  vox_model m;
  vox_model_init(ctx, &m, &g);
  memset(m.label, 1, 4);
  vox_material steel = {.label = 1, .youngs_modulus = 200000, .poisson_ratio = 0.3};
  vox_model_add_material(ctx, &m, &steel);
  vox_model_set_load_cases(ctx, &m, 1);
  for (int k = 0; k <= 1; k++)
    for (int j = 0; j <= 1; j++) {
      int64_t left = (k * 2 + j) * 5, right = left + 4;
      vox_model_add_constraint(ctx, &m, left, 0, 0);
      if (j == 0) vox_model_add_constraint(ctx, &m, left, 1, 0);
      if (k == 0) vox_model_add_constraint(ctx, &m, left, 2, 0);
      vox_model_add_load(ctx, &m, right, 0, 0, 250.0);
    }
  double u[3 * 20] = {0};
  vox_solver_options opt;
  vox_solver_options_default(&opt);
  opt.rtol = 1e-12;
  vox_solve_result r;
  if (vox_solve_elasticity(ctx, be, &m, 0, 3, 1e-9, &opt, u, &r)) {
    fprintf(stderr, "%s\n", vox_context_message(ctx));
    return 1;
  }
  const double expected = 1000.0 * 4 / 200000; /* F L / (E A) */
  printf("voxfe %s: tip displacement %.12g mm, expected %.12g mm\n", vox_version(), u[3 * 4],
         expected);
  vox_model_free(&m);
  vox_backend_destroy(be);
  vox_context_destroy(ctx);
  return fabs(u[3 * 4] - expected) <= 1e-9 * expected ? 0 : 1;
}
