/* SPDX-License-Identifier: BSD-3-Clause */
/* The GPU mesh fill against the CPU's, voxel for voxel (label gpu; exit 77
 * without CUDA or a device): the analytic solids of tests/mesh on grids of
 * odd sizes, anisotropic voxels and both rules, an open mesh, rays through
 * edges and vertices, and a rippled ball of a million triangles at 512.
 * In every case the GPU's preparation of the mesh (welding, dropping
 * degenerate and repeated triangles, the open edges) is compared with the
 * CPU's, array for array and count for count; messy triangle soups (every
 * triangle with its own corners, shuffled, flipped, repeated, degenerate
 * before and after the snap to the lattice, unused vertices) put it to work. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "../mesh/mesh_shapes.h"
#include "voxfe/mesh.h"
#ifdef VOXFE_HAVE_CUDA
#include "mesh_prepared.h"
#endif

static vox_context *ctx;

/* The preparations on both sides: the same welded vertices in the same
 * order, the same triangles kept in the same order and corner order, the
 * same counts. */
static void same_prepared(const char *what, const vox_mesh *m, const vox_grid *g) {
#ifdef VOXFE_HAVE_CUDA
  vox_prepared_mesh cpu, dev, gpu;
  CHECK_OK(ctx, mesh_prepare(ctx, m, g, &cpu));
  CHECK_OK(ctx, mesh_prepare_gpu(ctx, m, g, &dev));
  CHECK_OK(ctx, vox_gpu_mesh_to_host(ctx, &dev, &gpu));
  vox_gpu_mesh_free(&dev);
  printf("%s: prepared: %lld vertices, %lld triangles (%lld degenerate, %lld repeats dropped), "
         "%lld open edges on the CPU; GPU %lld, %lld (%lld, %lld), %lld\n",
         what, (long long)cpu.n_vertices, (long long)cpu.n_triangles, (long long)cpu.degenerate,
         (long long)cpu.duplicates, (long long)cpu.open_edges, (long long)gpu.n_vertices,
         (long long)gpu.n_triangles, (long long)gpu.degenerate, (long long)gpu.duplicates,
         (long long)gpu.open_edges);
  CHECK(cpu.n_vertices == gpu.n_vertices && cpu.n_triangles == gpu.n_triangles);
  CHECK(cpu.degenerate == gpu.degenerate && cpu.duplicates == gpu.duplicates);
  CHECK(cpu.open_edges == gpu.open_edges && cpu.bits == gpu.bits);
  CHECK(!memcmp(cpu.n, gpu.n, sizeof cpu.n));
  if (cpu.n_vertices == gpu.n_vertices)
    CHECK(!memcmp(cpu.fixed, gpu.fixed, (size_t)cpu.n_vertices * 3 * sizeof *cpu.fixed));
  if (cpu.n_triangles == gpu.n_triangles)
    CHECK(!memcmp(cpu.triangle, gpu.triangle, (size_t)cpu.n_triangles * 3 * sizeof *cpu.triangle));
  mesh_prepared_free(&cpu);
  mesh_prepared_free(&gpu);
#else
  (void)what, (void)m, (void)g;
#endif
}

/* A pseudo-random number (xorshift), the same on every run. */
static uint64_t next_random(uint64_t *state) {
  *state ^= *state << 13;
  *state ^= *state >> 7;
  *state ^= *state << 17;
  return *state;
}

/* A messy soup of mesh m: each triangle with corners of its own, the
 * triangles shuffled, some flipped, some corners rotated; about 5% repeated
 * (half of them flipped), some degenerate (an index repeated, or a corner
 * moved by 1e-9 voxel onto its neighbour's lattice point), and some vertices
 * no triangle uses. `h` is the voxel size. */
static void messy_soup(const vox_mesh *m, double h, uint64_t seed, vox_mesh *soup) {
  const int64_t nt = m->n_triangles;
  const int64_t max_t = nt + nt / 10 + 8;
  shape_alloc(soup, 3 * max_t + 16, max_t);
  uint64_t state = seed;
  for (int64_t i = 0; i < 8; i++) /* unused */
    shape_vertex(soup, (double)i, -(double)i, 0.5 * (double)i);
  int64_t *order = malloc((size_t)nt * sizeof *order);
  for (int64_t t = 0; t < nt; t++) order[t] = t;
  for (int64_t t = nt - 1; t > 0; t--) {
    int64_t u = (int64_t)(next_random(&state) % (uint64_t)(t + 1)), tmp = order[t];
    order[t] = order[u], order[u] = tmp;
  }
  for (int64_t i = 0; i < nt; i++) {
    const uint32_t *k = &m->triangle[3 * order[i]];
    uint64_t r = next_random(&state);
    int rot = (int)(r % 3), flipped = (int)(r >> 8 & 1), copies = (r >> 16) % 20 == 0 ? 2 : 1;
    for (int c = 0; c < copies; c++) {
      uint32_t v[3];
      for (int j = 0; j < 3; j++) {
        const double *p = &m->vertex[3 * k[(j + rot) % 3]];
        v[j] = (uint32_t)soup->n_vertices;
        double *q = &soup->vertex[3 * soup->n_vertices++];
        memcpy(q, p, 3 * sizeof *q);
      }
      if ((flipped ^ c) & 1) {
        uint32_t tmp = v[1];
        v[1] = v[2], v[2] = tmp;
      }
      shape_triangle(soup, v[0], v[1], v[2]);
    }
    if ((r >> 40) % 97 == 0) { /* degenerate by index */
      uint32_t a = soup->triangle[3 * (soup->n_triangles - 1)];
      shape_triangle(soup, a, a, soup->triangle[3 * (soup->n_triangles - 1) + 1]);
    } else if ((r >> 48) % 89 == 0) { /* degenerate on the lattice: not bit-identical points */
      const uint32_t *last = &soup->triangle[3 * (soup->n_triangles - 1)];
      uint32_t a = last[0], b = last[1];
      uint32_t near = (uint32_t)soup->n_vertices;
      double *q = &soup->vertex[3 * soup->n_vertices++];
      memcpy(q, &soup->vertex[3 * a], 3 * sizeof *q);
      q[0] += 1e-9 * h;
      shape_triangle(soup, a, near, b);
    }
  }
  free(order);
}

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
  CHECK(ic.triangles == ig.triangles && ic.degenerate == ig.degenerate);
  CHECK(ic.duplicates == ig.duplicates && ic.open_edges == ig.open_edges);
  same_prepared(what, m, g);
  free(cpu);
  free(gpu);
}

int main(int argc, char **argv) {
  const int small = argc > 1 && !strcmp(argv[1], "small");
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

  /* messy soups: the sphere's and the holed cube's */
  vox_mesh soup;
  messy_soup(&sphere, 0.5, 12345, &soup);
  same("sphere, messy soup", &soup, &g, VOX_FILL_AUTO);
  same("sphere, messy soup, through poles", &soup, &through, VOX_FILL_VOTE);
  vox_mesh_free(&soup);
  messy_soup(&cube, 0.23, 777, &soup);
  same("holed cube, messy soup", &soup, &gc, VOX_FILL_AUTO);
  vox_mesh_free(&soup);

  if (small) {
    vox_mesh_free(&cube);
    vox_mesh_free(&sphere);
    vox_context_destroy(ctx);
    CHECK_DONE();
  }
  vox_mesh ball;
  shape_rippled_ball(&ball, 1000000);
  double lo[3], hi[3];
  vox_mesh_bounds(&ball, lo, hi);
  const double nan3[3] = {NAN, NAN, NAN};
  vox_grid gb;
  CHECK_OK(ctx, vox_grid_around(ctx, lo, hi, nan3, 512, 0, (int64_t)1 << 30, &gb));
  same("rippled ball, 1M triangles", &ball, &gb, VOX_FILL_PARITY);
  messy_soup(&ball, gb.voxel_size[0], 99, &soup);
  same("rippled ball, messy soup", &soup, &gb, VOX_FILL_AUTO);
  vox_mesh_free(&soup);
  vox_mesh_free(&ball);
  vox_mesh_free(&cube);
  vox_mesh_free(&sphere);
  vox_context_destroy(ctx);
  CHECK_DONE();
}
