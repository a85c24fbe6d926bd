/* The GPU mesh fill against the CPU's, voxel for voxel (label gpu; exit 77
 * without CUDA or a device): the analytic solids of tests/mesh on grids of
 * odd sizes, anisotropic voxels and both rules, an open mesh, rays through
 * edges and vertices, and a rippled ball of a million triangles at 512. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "../mesh/mesh_shapes.h"
#include "voxfe/mesh.h"

static vox_context *ctx;

static void same(const char *what, const vox_mesh *m, const vox_grid *g, vox_fill_rule rule) {
  const int64_t ne = vox_grid_elements(g);
  uint8_t *cpu = malloc((size_t)ne), *gpu = malloc((size_t)ne);
  vox_mesh_fill_info ic, ig;
  CHECK_OK(ctx, vox_mesh_fill(ctx, m, g, rule, VOX_DEVICE_CPU, cpu, &ic));
  CHECK_OK(ctx, vox_mesh_fill(ctx, m, g, rule, VOX_DEVICE_CUDA, gpu, &ig));
  int64_t differ = 0;
  for (int64_t e = 0; e < ne; e++) differ += cpu[e] != gpu[e];
  printf("%s: %lldx%lldx%lld, %s: %lld voxels inside, %lld differ; GPU kernels %.2f ms\n", what,
         (long long)g->nx, (long long)g->ny, (long long)g->nz, vox_fill_rule_name(ic.rule),
         (long long)ic.inside, (long long)differ, 1e3 * ig.seconds_device);
  CHECK(ig.device == VOX_DEVICE_CUDA && ic.rule == ig.rule);
  CHECK(differ == 0 && ic.inside > 0);
  free(cpu);
  free(gpu);
}

int main(void) {
  if (vox_context_create(&ctx) != VOX_OK) return 1;
  vox_mesh sphere;
  const double c[3] = {0.31, -0.17, 0.23};
  shape_sphere(&sphere, 48, 96, 10, c);
  vox_grid g = {.nx = 37, .ny = 41, .nz = 43, .voxel_size = {0.61, 0.53, 0.5},
                .origin = {-11, -10.7, -10.9}};
  uint8_t probe[37 * 41 * 43];
  vox_status s = vox_mesh_fill(ctx, &sphere, &g, VOX_FILL_AUTO, VOX_DEVICE_CUDA, probe, NULL);
  if (s == VOX_ERR_UNSUPPORTED || s == VOX_ERR_DEVICE) {
    printf("skipped: %s\n", vox_context_message(ctx));
    vox_mesh_free(&sphere);
    vox_context_destroy(ctx);
    return 77;
  }
  for (int r = 1; r <= 2; r++) same("sphere", &sphere, &g, (vox_fill_rule)r);
  /* every ray axis takes its turn as the parity axis */
  vox_grid flat[3] = {g, g, g};
  flat[0].nx = 20, flat[1].ny = 20, flat[2].nz = 20;
  for (int a = 0; a < 3; a++) same("sphere, thin grid", &sphere, &flat[a], VOX_FILL_PARITY);

  vox_mesh cube;
  shape_holed_cube(&cube, 8, 4.1, 32);
  vox_grid gc = {.nx = 77, .ny = 75, .nz = 73, .voxel_size = {0.23, 0.23, 0.23},
                 .origin = {-8.3, -8.3, -8.27}};
  for (int r = 1; r <= 2; r++) same("holed cube", &cube, &gc, (vox_fill_rule)r);

  /* an open sphere: the vote */
  vox_mesh open = sphere;
  open.n_triangles -= 40;
  same("open sphere", &open, &g, VOX_FILL_AUTO);

  /* a grid whose rays pass through the sphere's poles and the cube's edges */
  vox_grid through = {.nx = 42, .ny = 42, .nz = 42, .voxel_size = {0.5, 0.5, 0.5},
                      .origin = {-10.5, -10.5, -10.5}};
  same("sphere through poles", &sphere, &through, VOX_FILL_VOTE);
  same("holed cube through edges", &cube, &through, VOX_FILL_PARITY);

  vox_mesh ball;
  shape_rippled_ball(&ball, 1000000);
  double lo[3], hi[3];
  vox_mesh_bounds(&ball, lo, hi);
  const double nan3[3] = {NAN, NAN, NAN};
  vox_grid gb;
  CHECK_OK(ctx, vox_grid_around(ctx, lo, hi, nan3, 512, 0, (int64_t)1 << 30, &gb));
  same("rippled ball, 1M triangles", &ball, &gb, VOX_FILL_PARITY);
  vox_mesh_free(&ball);
  vox_mesh_free(&cube);
  vox_mesh_free(&sphere);
  vox_context_destroy(ctx);
  CHECK_DONE();
}
