/* SPDX-License-Identifier: BSD-3-Clause */
/* The GPU isosurface against the CPU's (label gpu; exit 77 without CUDA or
 * a device). The two must give the same triangle set: the same vertices
 * (bit for bit: a vertex lies strictly inside its grid edge, so its
 * position names the edge) and the same triangles between them with the
 * same orientation. That is checked canonically, independent of the order
 * (vertices sorted by position, each triangle rotated to start at its
 * lowest vertex, triangles sorted), and then the order itself, which
 * surface.h promises is the same too. Fields: a gyroid on an odd grid with
 * anisotropic voxels and an origin, random densities with values exactly at
 * the threshold and NaNs, labels (one label's surface, and the non-zero
 * labels of a model without density), a grid all inside, one voxel, a
 * field with nothing inside (the same error on both), and
 * VOX_DEVICE_AUTO staying on the CPU. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "voxfe/model.h"
#include "voxfe/surface.h"

static vox_context *ctx;

static uint64_t next_random(uint64_t *state) {
  *state ^= *state << 13;
  *state ^= *state >> 7;
  *state ^= *state << 17;
  return *state;
}

static const double *sort_vertex; /* for the comparators */

static int compare_vertex(const void *a, const void *b) {
  const double *p = sort_vertex + 3 * *(const int64_t *)a, *q = sort_vertex + 3 * *(const int64_t *)b;
  for (int c = 0; c < 3; c++)
    if (p[c] != q[c]) return p[c] < q[c] ? -1 : 1;
  return 0;
}

static int compare_triangle(const void *a, const void *b) {
  const int64_t *p = a, *q = b;
  for (int c = 0; c < 3; c++)
    if (p[c] != q[c]) return p[c] < q[c] ? -1 : 1;
  return 0;
}

/* The canonical form of s: vertices sorted (into *vertex), triangles on the
 * sorted numbers, each rotated to start at its lowest, sorted (*triangle). */
static void canonical(const vox_surface *s, double **vertex, int64_t **triangle) {
  const size_t nv = s->n_vertices, nt = s->n_triangles;
  int64_t *order = malloc(nv * sizeof *order), *rank = malloc(nv * sizeof *rank);
  *vertex = malloc(3 * nv * sizeof **vertex);
  *triangle = malloc(3 * nt * sizeof **triangle);
  for (size_t v = 0; v < nv; v++) order[v] = (int64_t)v;
  sort_vertex = s->vertex;
  qsort(order, nv, sizeof *order, compare_vertex);
  for (size_t v = 0; v < nv; v++) {
    rank[order[v]] = (int64_t)v;
    memcpy(*vertex + 3 * v, s->vertex + 3 * order[v], 3 * sizeof **vertex);
  }
  for (size_t t = 0; t < nt; t++) {
    int64_t c[3], *out = *triangle + 3 * t;
    for (int k = 0; k < 3; k++) c[k] = rank[s->triangle[3 * t + k]];
    int low = c[1] < c[0] ? (c[2] < c[1] ? 2 : 1) : (c[2] < c[0] ? 2 : 0);
    for (int k = 0; k < 3; k++) out[k] = c[(low + k) % 3];
  }
  qsort(*triangle, nt, 3 * sizeof **triangle, compare_triangle);
  free(order);
  free(rank);
}

/* Extracts on both devices (label < 0: the density at threshold) and
 * compares. */
static void same(const char *what, const vox_model *m, double threshold, int label) {
  vox_surface cpu = {0}, gpu = {0};
  vox_isosurface_info info;
  if (label < 0) {
    CHECK_OK(ctx, vox_isosurface_density_on(ctx, m, threshold, VOX_DEVICE_CPU, &cpu, NULL));
    CHECK_OK(ctx, vox_isosurface_density_on(ctx, m, threshold, VOX_DEVICE_CUDA, &gpu, &info));
  } else {
    CHECK_OK(ctx, vox_isosurface_label_on(ctx, m, label, VOX_DEVICE_CPU, &cpu, NULL));
    CHECK_OK(ctx, vox_isosurface_label_on(ctx, m, label, VOX_DEVICE_CUDA, &gpu, &info));
  }
  CHECK(info.device == VOX_DEVICE_CUDA);
  printf("%s: CPU %zu vertices, %zu triangles; GPU %zu, %zu\n", what, cpu.n_vertices,
         cpu.n_triangles, gpu.n_vertices, gpu.n_triangles);
  CHECK(cpu.n_triangles > 0);
  CHECK(cpu.n_vertices == gpu.n_vertices && cpu.n_triangles == gpu.n_triangles);
  if (cpu.n_vertices == gpu.n_vertices && cpu.n_triangles == gpu.n_triangles) {
    double *cv, *gv;
    int64_t *ct, *gt;
    canonical(&cpu, &cv, &ct);
    canonical(&gpu, &gv, &gt);
    CHECK(!memcmp(cv, gv, 3 * cpu.n_vertices * sizeof *cv));
    CHECK(!memcmp(ct, gt, 3 * cpu.n_triangles * sizeof *ct));
    /* no two vertices in one place: the positions name the edges */
    for (size_t v = 1; v < cpu.n_vertices; v++)
      CHECK(memcmp(cv + 3 * (v - 1), cv + 3 * v, 3 * sizeof *cv) != 0);
    /* and the order too */
    CHECK(!memcmp(cpu.vertex, gpu.vertex, 3 * cpu.n_vertices * sizeof *cv));
    CHECK(!memcmp(cpu.triangle, gpu.triangle, 3 * cpu.n_triangles * sizeof *ct));
    free(cv), free(gv), free(ct), free(gt);
  }
  vox_surface_free(&cpu);
  vox_surface_free(&gpu);
}

static void density_model(vox_model *m, int64_t nx, int64_t ny, int64_t nz, const double h[3],
                          const double origin[3]) {
  vox_grid g = {.nx = nx, .ny = ny, .nz = nz};
  for (int k = 0; k < 3; k++) g.voxel_size[k] = h[k], g.origin[k] = origin[k];
  CHECK_OK(ctx, vox_model_init(ctx, m, &g));
  m->density = calloc((size_t)(nx * ny * nz), sizeof *m->density);
}

int main(void) {
  if (vox_context_create(&ctx) != VOX_OK) return 1;
  const double unit[3] = {1, 1, 1}, zero[3] = {0, 0, 0};
  {
    vox_model one;
    density_model(&one, 1, 1, 1, unit, zero);
    one.density[0] = 1;
    vox_surface s = {0};
    vox_status st = vox_isosurface_density_on(ctx, &one, 0.5, VOX_DEVICE_CUDA, &s, NULL);
    if (st == VOX_ERR_UNSUPPORTED || st == VOX_ERR_DEVICE) {
      printf("skipped: %s\n", vox_context_message(ctx));
      vox_model_free(&one);
      vox_context_destroy(ctx);
      return 77;
    }
    vox_surface_free(&s);
    same("one voxel", &one, 0.5, -1);
    /* nothing inside: the CPU's error on both */
    one.density[0] = 0.25;
    CHECK(vox_isosurface_density_on(ctx, &one, 0.5, VOX_DEVICE_CPU, &s, NULL) ==
          VOX_ERR_INVALID_ARGUMENT);
    char message[256];
    snprintf(message, sizeof message, "%s", vox_context_message(ctx));
    CHECK(vox_isosurface_density_on(ctx, &one, 0.5, VOX_DEVICE_CUDA, &s, NULL) ==
          VOX_ERR_INVALID_ARGUMENT);
    CHECK(!strcmp(message, vox_context_message(ctx)));
    CHECK(s.n_triangles == 0 && !s.vertex && !s.triangle);
    vox_model_free(&one);
  }
  { /* a gyroid, odd sizes, anisotropic voxels, an origin */
    vox_model m;
    const double h[3] = {0.3, 0.5, 0.7}, o[3] = {-1, 2, 3.5};
    const int64_t nx = 45, ny = 38, nz = 29;
    density_model(&m, nx, ny, nz, h, o);
    for (int64_t k = 0; k < nz; k++)
      for (int64_t j = 0; j < ny; j++)
        for (int64_t i = 0; i < nx; i++) {
          double x = 0.4 * (double)i, y = 0.37 * (double)j, z = 0.45 * (double)k;
          m.density[(k * ny + j) * nx + i] =
              (sin(x) * cos(y) + sin(y) * cos(z) + sin(z) * cos(x) + 1.5) / 3;
        }
    same("gyroid 45x38x29", &m, 0.5, -1);
    same("gyroid 45x38x29 at 0.3", &m, 0.3, -1);
    /* VOX_DEVICE_AUTO is the CPU (surface.h says why) */
    vox_surface s = {0};
    vox_isosurface_info info;
    CHECK_OK(ctx, vox_isosurface_density_on(ctx, &m, 0.5, VOX_DEVICE_AUTO, &s, &info));
    CHECK(info.device == VOX_DEVICE_CPU && info.seconds_device == 0);
    vox_surface_free(&s);
    vox_model_free(&m);
  }
  { /* random densities on 8 levels (0.5 among them, exactly at the threshold), NaNs */
    vox_model m;
    const int64_t nx = 33, ny = 17, nz = 40;
    density_model(&m, nx, ny, nz, unit, zero);
    uint64_t state = 12345;
    for (int64_t e = 0; e < nx * ny * nz; e++) {
      uint64_t r = next_random(&state) % 9;
      m.density[e] = r == 8 ? NAN : (double)r / 8 + 0.0;
    }
    same("random levels with NaN", &m, 0.5, -1);
    /* all inside: the surface is the padding's box */
    for (int64_t e = 0; e < nx * ny * nz; e++) m.density[e] = 1;
    same("all inside", &m, 0.5, -1);
    vox_model_free(&m);
  }
  { /* labels: one label's surface, and the non-zero labels without a density */
    vox_model m;
    const double h[3] = {0.25, 0.25, 0.5};
    density_model(&m, 50, 21, 19, h, zero);
    free(m.density);
    m.density = NULL;
    uint64_t state = 99;
    for (int64_t e = 0; e < 50 * 21 * 19; e++) m.label[e] = (uint8_t)(next_random(&state) % 4);
    same("label 2", &m, 0.5, 2);
    same("non-zero labels", &m, 0.5, -1);
    vox_model_free(&m);
  }
  vox_context_destroy(ctx);
  CHECK_DONE();
}
