/* SPDX-License-Identifier: BSD-3-Clause */
/* Arrays of a periodic cell (voxfe/tile.h) and their STL surfaces.
 *
 * The cell is a cross of three square bars through its centre, each running
 * from face to face, so that the cells of an array join into one lattice of
 * rods. Checks: the tiled model is the cell repeated (element by element,
 * and against the same lattice drawn directly on the large grid: the same
 * surface, vertex for vertex); the array's surface is a closed, consistently
 * oriented 2-manifold (each directed edge once, its reverse once) whose
 * Euler characteristic is that of the lattice: one part whose genus is the
 * number of independent cycles of its graph of rods, 3 T^2 (T - 1) - T^3 + 1
 * for T x T x T cells; tile counts below 1 and oversize arrays fail. The STL
 * files go to OUTPUT_FOLDER for check_stl.sh (admesh: closed, nothing to
 * repair, one part).
 *
 * usage: test_export_tile OUTPUT_FOLDER */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "export/output_dir.h"
#include "voxfe/model.h"
#include "voxfe/surface.h"
#include "voxfe/tile.h"

enum { N = 8 };

/* 1 in the bars: 2 x 2 voxels about the centre lines along x, y and z. */
static double cross(int64_t i, int64_t j, int64_t k) {
  const int ci = i % N == 3 || i % N == 4, cj = j % N == 3 || j % N == 4,
            ck = k % N == 3 || k % N == 4;
  return (cj && ck) || (ci && ck) || (ci && cj) ? 1.0 : 0.0;
}

static void make(vox_context *ctx, vox_model *m, int64_t nx, int64_t ny, int64_t nz) {
  const vox_grid g = {.nx = nx, .ny = ny, .nz = nz, .voxel_size = {0.5, 0.5, 0.5},
                      .origin = {1, 2, 3}};
  CHECK_OK(ctx, vox_model_init(ctx, m, &g));
  m->density = malloc((size_t)vox_grid_elements(&g) * sizeof *m->density);
  for (int64_t k = 0; k < nz; k++)
    for (int64_t j = 0; j < ny; j++)
      for (int64_t i = 0; i < nx; i++) {
        const int64_t e = (k * ny + j) * nx + i;
        m->density[e] = cross(i, j, k);
        m->label[e] = m->density[e] > 0 ? 1 : 2;
      }
  m->stage = VOX_STAGE_DESIGN;
}

typedef struct edge {
  int64_t a, b;
} edge;

static int cmp_edge(const void *x, const void *y) {
  const edge *p = x, *q = y;
  if (p->a != q->a) return p->a < q->a ? -1 : 1;
  return p->b < q->b ? -1 : p->b > q->b;
}

/* Closed and oriented: every directed edge once and its reverse once.
 * Returns V - E + F, or a huge number when the check fails. */
static long euler(const vox_surface *s) {
  const size_t ne = 3 * s->n_triangles;
  edge *e = malloc(ne * sizeof *e);
  for (size_t t = 0; t < s->n_triangles; t++)
    for (int c = 0; c < 3; c++)
      e[3 * t + c] = (edge){s->triangle[3 * t + c], s->triangle[3 * t + (c + 1) % 3]};
  qsort(e, ne, sizeof *e, cmp_edge);
  size_t bad = 0;
  for (size_t i = 0; i < ne; i++) {
    if (i + 1 < ne && !cmp_edge(&e[i], &e[i + 1])) bad++; /* directed edge twice */
    edge r = {e[i].b, e[i].a};
    if (!bsearch(&r, e, ne, sizeof *e, cmp_edge)) bad++; /* no reverse */
  }
  free(e);
  if (bad) {
    fprintf(stderr, "surface not closed and oriented: %zu bad edges\n", bad);
    return 1000000;
  }
  return (long)s->n_vertices - (long)(ne / 2) + (long)s->n_triangles;
}

static void test_array(vox_context *ctx, const vox_model *cell, int T) {
  const int tiles[3] = {T, T, T};
  vox_model array = {0}, direct = {0};
  CHECK_OK(ctx, vox_model_tile(ctx, cell, tiles, &array));
  CHECK(array.grid.nx == T * N && array.grid.ny == T * N && array.grid.nz == T * N);
  CHECK(array.grid.origin[1] == 2 && array.grid.voxel_size[2] == 0.5);
  CHECK(array.stage == VOX_STAGE_DESIGN && array.n_materials == cell->n_materials);
  make(ctx, &direct, T * N, T * N, T * N);
  const size_t n = (size_t)vox_grid_elements(&array.grid);
  CHECK(memcmp(array.density, direct.density, n * sizeof *array.density) == 0);
  CHECK(memcmp(array.label, direct.label, n) == 0);

  vox_surface s = {0}, d = {0};
  CHECK_OK(ctx, vox_isosurface_density(ctx, &array, 0.5, &s));
  CHECK_OK(ctx, vox_isosurface_density(ctx, &direct, 0.5, &d));
  CHECK(s.n_vertices == d.n_vertices && s.n_triangles == d.n_triangles);
  if (s.n_vertices == d.n_vertices && s.n_triangles == d.n_triangles) {
    CHECK(memcmp(s.vertex, d.vertex, 3 * s.n_vertices * sizeof *s.vertex) == 0);
    CHECK(memcmp(s.triangle, d.triangle, 3 * s.n_triangles * sizeof *s.triangle) == 0);
  }
  const long cycles = 3L * T * T * (T - 1) - (long)T * T * T + 1;
  const long chi = euler(&s);
  if (chi != 2 - 2 * cycles) {
    fprintf(stderr, "%dx%dx%d array: Euler characteristic %ld, expected %ld\n", T, T, T, chi,
            2 - 2 * cycles);
    check_failures++;
  }
  char name[32];
  snprintf(name, sizeof name, "lattice_%d.stl", T);
  OUT_PATH(path, name);
  CHECK_OK(ctx, vox_write_stl(ctx, path, &s, 1));
  vox_surface_free(&s), vox_surface_free(&d);
  vox_model_free(&array), vox_model_free(&direct);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s OUTPUT_FOLDER\n", argv[0]);
    return 2;
  }
  snprintf(out_dir, sizeof out_dir, "%s", argv[1]);
  if (mkdir(out_dir, 0777) != 0 && errno != EEXIST) {
    perror(out_dir);
    return 1;
  }
  vox_context *ctx;
  if (vox_context_create(&ctx)) return 1;
  vox_model cell = {0};
  make(ctx, &cell, N, N, N);
  vox_material steel = {.label = 1, .youngs_modulus = 200e3, .poisson_ratio = 0.3};
  CHECK_OK(ctx, vox_model_add_material(ctx, &cell, &steel));
  for (int T = 1; T <= 3; T++) test_array(ctx, &cell, T);

  /* a box of 2 x 1 x 3 */
  vox_model array = {0};
  const int box[3] = {2, 1, 3};
  CHECK_OK(ctx, vox_model_tile(ctx, &cell, box, &array));
  CHECK(array.grid.nx == 2 * N && array.grid.ny == N && array.grid.nz == 3 * N);
  CHECK(array.density[((2 * N + 5) * N + 1) * 2 * N + N + 3] == cross(3, 1, 5));
  vox_model_free(&array);

  const int zero[3] = {1, 0, 1}, huge[3] = {1 << 20, 1 << 20, 2};
  CHECK(vox_model_tile(ctx, &cell, zero, &array) == VOX_ERR_INVALID_ARGUMENT);
  CHECK(strstr(vox_context_message(ctx), "along y must be at least 1") != NULL);
  CHECK(vox_model_tile(ctx, &cell, huge, &array) == VOX_ERR_INVALID_ARGUMENT);
  CHECK(array.label == NULL && array.density == NULL);
  vox_model_free(&cell);
  vox_context_destroy(ctx);
  CHECK_DONE();
}
