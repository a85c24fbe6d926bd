/* SPDX-License-Identifier: BSD-3-Clause */
/* The backend's options (vox_backend_options): their defaults, names and
 * parsers; a CPU backend made from them reports them back (the device it
 * took, its index, the kernel, the FP16 levels, the stencil kernel); options
 * out of range and a device index that does not exist are refused; and the
 * CPU backend, which stores its multigrid levels in double, solves to the
 * same bits whatever --fp16-levels says. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "voxfe/voxfe.h"

static void test_defaults_and_names(void) {
  vox_backend_options o;
  memset(&o, 0x5a, sizeof o);
  vox_backend_options_default(&o);
  CHECK(o.device == VOX_DEVICE_AUTO);
  CHECK(o.device_index == -1);
  CHECK(o.kernel == VOX_KERNEL_AUTO);
  CHECK(o.fp16_levels == VOX_FP16_LEVELS_AUTO);
  static const char *const names[] = {"auto", "off", "on"};
  for (int i = 0; i < 3; i++) {
    vox_fp16_levels use = (vox_fp16_levels)-1;
    CHECK(vox_fp16_levels_parse(names[i], &use) == 0);
    CHECK(use == (vox_fp16_levels)i);
    CHECK(strcmp(vox_fp16_levels_name(use), names[i]) == 0);
  }
  vox_fp16_levels use = VOX_FP16_LEVELS_ON;
  CHECK(vox_fp16_levels_parse("1", &use) == -1);
  CHECK(vox_fp16_levels_parse("ON", &use) == -1);
  CHECK(vox_fp16_levels_parse("", &use) == -1);
  CHECK(use == VOX_FP16_LEVELS_ON); /* left as it was */
  CHECK(strcmp(vox_fp16_levels_name((vox_fp16_levels)9), "unknown") == 0);
  CHECK(o.stencil_kernel == VOX_STENCIL_KERNEL_AUTO);
  static const char *const kernels[] = {"auto", "row", "warp"};
  for (int i = 0; i < 3; i++) {
    vox_stencil_kernel k = (vox_stencil_kernel)-1;
    CHECK(vox_stencil_kernel_parse(kernels[i], &k) == 0);
    CHECK(k == (vox_stencil_kernel)i);
    CHECK(strcmp(vox_stencil_kernel_name(k), kernels[i]) == 0);
  }
  vox_stencil_kernel k = VOX_STENCIL_KERNEL_WARP;
  CHECK(vox_stencil_kernel_parse("warps", &k) == -1 && k == VOX_STENCIL_KERNEL_WARP);
  CHECK(strcmp(vox_stencil_kernel_name((vox_stencil_kernel)3), "unknown") == 0);
  static const char *const products[] = {"auto", "dbd", "nbn", "ebe", "modes"};
  for (int i = 0; i < 5; i++) {
    vox_kernel p = (vox_kernel)-1;
    CHECK(vox_kernel_parse(products[i], &p) == 0 && p == (vox_kernel)i);
    CHECK(strcmp(vox_kernel_name(p), products[i]) == 0);
  }
  vox_kernel p = VOX_KERNEL_MODES;
  CHECK(vox_kernel_parse("mode", &p) == -1 && p == VOX_KERNEL_MODES);
  CHECK(strcmp(vox_kernel_name((vox_kernel)5), "unknown") == 0);
}

static void test_create_with(vox_context *ctx) {
  vox_backend_options o, got;
  vox_backend_options_default(&o);
  o.device = VOX_DEVICE_CPU;
  o.kernel = VOX_KERNEL_NBN;
  o.fp16_levels = VOX_FP16_LEVELS_ON;
  o.stencil_kernel = VOX_STENCIL_KERNEL_WARP;
  vox_backend *be = NULL;
  CHECK_OK(ctx, vox_backend_create_with(ctx, &o, &be));
  if (be) {
    memset(&got, 0x5a, sizeof got);
    vox_backend_options_get(be, &got);
    CHECK(got.device == VOX_DEVICE_CPU);
    CHECK(got.device_index == 0);
    CHECK(got.kernel == VOX_KERNEL_NBN);
    CHECK(got.fp16_levels == VOX_FP16_LEVELS_ON);
    CHECK(got.stencil_kernel == VOX_STENCIL_KERNEL_WARP);
    CHECK(strcmp(vox_backend_name(be), "cpu") == 0);
    vox_backend_set_kernel(be, VOX_KERNEL_EBE); /* the kernel last set */
    vox_backend_options_get(be, &got);
    CHECK(got.kernel == VOX_KERNEL_EBE);
    vox_backend_destroy(be);
  }
  /* NULL: the defaults, on the device AUTO resolves to */
  be = NULL;
  CHECK_OK(ctx, vox_backend_create_with(ctx, NULL, &be));
  if (be) {
    vox_backend_options_get(be, &got);
    CHECK(got.device == VOX_DEVICE_CPU || got.device == VOX_DEVICE_CUDA);
    CHECK(got.kernel == VOX_KERNEL_AUTO && got.fp16_levels == VOX_FP16_LEVELS_AUTO);
    vox_backend_destroy(be);
  }
  /* the CPU's one device by index, as vox_backend_create_on gives it */
  o.device_index = 0;
  be = NULL;
  CHECK_OK(ctx, vox_backend_create_with(ctx, &o, &be));
  vox_backend_destroy(be);
  be = NULL;
  CHECK_OK(ctx, vox_backend_create_on(ctx, VOX_DEVICE_CPU, 0, &be));
  if (be) {
    vox_backend_options_get(be, &got);
    CHECK(got.fp16_levels == VOX_FP16_LEVELS_AUTO && got.device_index == 0);
    vox_backend_destroy(be);
  }
}

static void test_refused(vox_context *ctx) {
  vox_backend_options o;
  vox_backend *be = (vox_backend *)&o; /* set to NULL on failure */
  vox_backend_options_default(&o);
  o.device = VOX_DEVICE_CPU;
  o.fp16_levels = (vox_fp16_levels)3;
  CHECK(vox_backend_create_with(ctx, &o, &be) == VOX_ERR_INVALID_ARGUMENT);
  CHECK(be == NULL);
  CHECK(strstr(vox_context_message(ctx), "fp16_levels") != NULL);
  vox_backend_options_default(&o);
  o.device = VOX_DEVICE_CPU;
  o.kernel = (vox_kernel)(VOX_KERNEL_MODES + 1);
  CHECK(vox_backend_create_with(ctx, &o, &be) == VOX_ERR_INVALID_ARGUMENT);
  CHECK(strstr(vox_context_message(ctx), "kernel") != NULL);
  vox_backend_options_default(&o);
  o.device = VOX_DEVICE_CPU;
  o.stencil_kernel = (vox_stencil_kernel)3;
  CHECK(vox_backend_create_with(ctx, &o, &be) == VOX_ERR_INVALID_ARGUMENT);
  CHECK(strstr(vox_context_message(ctx), "stencil_kernel") != NULL);
  vox_backend_options_default(&o);
  o.device = VOX_DEVICE_CPU;
  o.device_index = 1; /* the CPU has device 0 only */
  CHECK(vox_backend_create_with(ctx, &o, &be) == VOX_ERR_DEVICE);
  CHECK(be == NULL);
  CHECK(vox_backend_create_on(ctx, VOX_DEVICE_CPU, -1, &be) == VOX_ERR_DEVICE);
  CHECK(be == NULL);
}

/* A 12 x 6 x 6 cantilever (clamped at x-, a load at the free end) solved
 * with multigrid in mixed precision on CPU backends made with FP16 levels
 * off and on: the same displacements, bit for bit. */
static void test_cpu_solve_unchanged(vox_context *ctx) {
  vox_grid g = {.nx = 12, .ny = 6, .nz = 6, .voxel_size = {1, 1, 1}};
  vox_model m;
  CHECK_OK(ctx, vox_model_init(ctx, &m, &g));
  memset(m.label, 1, (size_t)vox_grid_elements(&g));
  vox_material mat = {.label = 1, .youngs_modulus = 1000, .poisson_ratio = 0.3, .name = "solid"};
  CHECK_OK(ctx, vox_model_add_material(ctx, &m, &mat));
  for (int64_t k = 0; k <= g.nz; k++)
    for (int64_t j = 0; j <= g.ny; j++)
      for (int c = 0; c < 3; c++)
        CHECK_OK(ctx, vox_model_add_constraint(ctx, &m, (k * (g.ny + 1) + j) * (g.nx + 1), c, 0));
  CHECK_OK(ctx, vox_model_set_load_cases(ctx, &m, 1));
  CHECK_OK(ctx, vox_model_add_load(ctx, &m, (g.nz * (g.ny + 1) + g.ny) * (g.nx + 1) + g.nx, 2,
                                   0, -1));
  const size_t n = 3 * (size_t)vox_grid_nodes(&g);
  double *u[2] = {calloc(n, sizeof(double)), calloc(n, sizeof(double))};
  vox_solver_options so;
  vox_solver_options_default(&so);
  so.preconditioner = VOX_PC_MULTIGRID;
  so.precision = VOX_PRECISION_MIXED;
  so.storage = VOX_STORAGE_FULL_BOX;
  so.mg_levels = 2;
  so.rtol = 1e-8;
  int iterations[2] = {0, 0};
  for (int on = 0; on < 2 && u[0] && u[1]; on++) {
    vox_backend_options o;
    vox_backend_options_default(&o);
    o.device = VOX_DEVICE_CPU;
    o.fp16_levels = on ? VOX_FP16_LEVELS_ON : VOX_FP16_LEVELS_OFF;
    vox_backend *be = NULL;
    CHECK_OK(ctx, vox_backend_create_with(ctx, &o, &be));
    vox_solve_result r = {0};
    if (be) CHECK_OK(ctx, vox_solve_elasticity(ctx, be, &m, 0, 1, 0, &so, u[on], &r));
    CHECK(r.reason == VOX_CONVERGED_RTOL);
    iterations[on] = r.iterations;
    vox_backend_destroy(be);
  }
  CHECK(iterations[0] > 0 && iterations[0] == iterations[1]);
  CHECK(u[0] && u[1] && memcmp(u[0], u[1], n * sizeof(double)) == 0);
  double umax = 0;
  for (size_t i = 0; u[0] && i < n; i++) umax = fmax(umax, fabs(u[0][i]));
  CHECK(umax > 0);
  free(u[0]), free(u[1]);
  vox_model_free(&m);
}

int main(void) {
  vox_context *ctx;
  if (vox_context_create(&ctx) != VOX_OK) return 1;
  vox_context_set_threads(ctx, 2);
  test_defaults_and_names();
  test_create_with(ctx);
  test_refused(ctx);
  test_cpu_solve_unchanged(ctx);
  vox_context_destroy(ctx);
  CHECK_DONE();
}
