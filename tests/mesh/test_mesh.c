/* SPDX-License-Identifier: BSD-3-Clause */
/* The mesh reader and fill against analytic solids (tests/mesh/mesh_shapes.h):
 *   test_mesh formats DIR   one sphere written as binary STL (header "solid"),
 *                           ASCII STL, OBJ, PLY and OFF: the same voxels from all
 *   test_mesh sphere        voxel by voxel against the sphere's own inside test;
 *                           volume within the discretization error
 *   test_mesh holed_cube    the same for a cube with a hole (genus 1)
 *   test_mesh order         shuffled, flipped, rotated and duplicated triangles:
 *                           the same voxels, parity and vote alike
 *   test_mesh exact         a box whose faces and edges pass through voxel
 *                           centres: exactly the half-open count
 *   test_mesh holes         an open sphere: the vote still fills it
 *   test_mesh grid          voxel size, resolution, padding and origin
 *   test_mesh problem DIR   mesh regions of a problem file */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "mesh_shapes.h"
#include "voxfe/mesh.h"
#include "voxfe/problem.h"

static vox_context *ctx;

/* A grid of cubic voxels h over [lo, hi]^3. */
static vox_grid cube_grid(double lo, double hi, double h) {
  vox_grid g = {0};
  int64_t n = (int64_t)ceil((hi - lo) / h);
  g.nx = g.ny = g.nz = n;
  for (int a = 0; a < 3; a++) g.voxel_size[a] = h, g.origin[a] = lo;
  return g;
}

static uint8_t *fill(const vox_mesh *m, const vox_grid *g, vox_fill_rule rule,
                     vox_mesh_fill_info *info) {
  uint8_t *in = malloc((size_t)vox_grid_elements(g));
  CHECK_OK(ctx, vox_mesh_fill(ctx, m, g, rule, VOX_DEVICE_CPU, in, info));
  return in;
}

static int64_t differences(const uint8_t *a, const uint8_t *b, const vox_grid *g) {
  int64_t d = 0;
  for (int64_t e = 0; e < vox_grid_elements(g); e++) d += a[e] != b[e];
  return d;
}

static void centre(const vox_grid *g, int64_t e, double p[3]) {
  int64_t i = e % g->nx, j = (e / g->nx) % g->ny, k = e / (g->nx * g->ny);
  p[0] = g->origin[0] + (i + 0.5) * g->voxel_size[0];
  p[1] = g->origin[1] + (j + 0.5) * g->voxel_size[1];
  p[2] = g->origin[2] + (k + 0.5) * g->voxel_size[2];
}

static const double sphere_centre[3] = {0.31, -0.17, 0.23};

static void make_sphere(vox_mesh *m) { shape_sphere(m, 48, 96, 10, sphere_centre); }

/* ---- files ------------------------------------------------------------------ */

static int test_formats(const char *dir) {
  vox_mesh sphere;
  make_sphere(&sphere);
  vox_grid g = cube_grid(-11, 11, 0.5);
  uint8_t *want = fill(&sphere, &g, VOX_FILL_AUTO, NULL);
  char path[1024];
  static const char *const names[] = {"binary.stl", "ascii.stl", "sphere.obj", "sphere.ply",
                                      "sphere.off"};
  for (int f = 0; f < 5; f++) {
    snprintf(path, sizeof path, "%s/%s", dir, names[f]);
    int written = f == 0   ? shape_write_stl_binary(&sphere, path, "solid sphere, binary")
                  : f == 1 ? shape_write_stl_ascii(&sphere, path)
                           : shape_write_indexed(&sphere, path, strrchr(names[f], '.') + 1);
    CHECK(written == 0);
    vox_mesh read;
    vox_status s = vox_mesh_read(ctx, path, &read);
    CHECK_OK(ctx, s);
    if (s) continue;
    /* welded: the soup of an STL becomes the shared vertices again */
    CHECK(read.n_triangles == sphere.n_triangles);
    CHECK(read.n_vertices == sphere.n_vertices);
    vox_mesh_fill_info info;
    uint8_t *got = fill(&read, &g, VOX_FILL_AUTO, &info);
    CHECK(info.rule == VOX_FILL_PARITY && info.open_edges == 0);
    int64_t d = differences(got, want, &g);
    if (d) fprintf(stderr, "%s: %lld voxels differ\n", names[f], (long long)d);
    CHECK(d == 0);
    free(got);
    vox_mesh_free(&read);
  }
  free(want);
  vox_mesh_free(&sphere);
  return 0;
}

/* ---- against the analytic solids ------------------------------------------ */

/* Voxel by voxel against an independent inside test, and the voxel volume
 * against the solid's. Centres within 1e-9 mm of a face may go either way. */
static void compare(const char *what, const vox_mesh *m, const vox_grid *g, vox_fill_rule rule,
                    int (*inside)(const vox_mesh *, const double *), double volume,
                    double area, double bound) {
  vox_mesh_fill_info info;
  uint8_t *in = fill(m, g, rule, &info);
  int64_t wrong = 0, near = 0, count = 0;
  for (int64_t e = 0; e < vox_grid_elements(g); e++) {
    double p[3];
    centre(g, e, p);
    int want = inside(m, p);
    count += in[e];
    if (want < 0) near++;
    else wrong += want != in[e];
  }
  double h = g->voxel_size[0], v = (double)count * h * h * h;
  /* The discretization error: centres sample a layer of thickness h along
   * the surface. A face along the grid's planes may be off by up to h/2
   * over its whole area (bound 0.5); over a curved surface the errors of
   * neighbouring voxels cancel (bound 0.05, far below a half-voxel shift). */
  printf("%s (%s): %lld voxels, volume %.3f, exact %.3f, error %.4f (bound %.4f); "
         "%lld wrong, %lld on a face\n",
         what, vox_fill_rule_name(info.rule), (long long)count, v, volume, v - volume,
         bound * area * h, (long long)wrong, (long long)near);
  CHECK(wrong == 0);
  CHECK(fabs(v - volume) <= bound * area * h);
  free(in);
}

/* The sphere's face test, skipped well inside (the face planes of the
 * 48 x 96 UV sphere lie more than 0.99 r from its centre) and outside. */
static const double *inside_centre;
static double inside_radius;
static int sphere_inside(const vox_mesh *m, const double *p) {
  double d = 0;
  for (int a = 0; a < 3; a++) d += (p[a] - inside_centre[a]) * (p[a] - inside_centre[a]);
  d = sqrt(d);
  if (d > inside_radius * 1.0001) return 0;
  if (d < inside_radius * 0.99) return 1;
  return shape_convex_inside(m, p, 1e-9);
}

static int test_sphere(void) {
  vox_mesh sphere;
  make_sphere(&sphere);
  double area, volume = shape_volume(&sphere, &area);
  inside_centre = sphere_centre, inside_radius = 10;
  /* the mesh is within the discretization of the true sphere */
  CHECK(fabs(volume - 4.0 / 3 * M_PI * 1000) < 0.01 * 4.0 / 3 * M_PI * 1000);
  for (int r = 0; r < 2; r++) {
    vox_grid g = cube_grid(-10.5, 11, r ? 0.35 : 0.7);
    compare("sphere", &sphere, &g, r ? VOX_FILL_PARITY : VOX_FILL_VOTE, sphere_inside, volume,
            area, 0.05);
  }
  vox_mesh_free(&sphere);
  return 0;
}

static const double cube_L = 8, cube_r = 4.1;
static const int cube_N = 32;

static int holed_cube_inside(const vox_mesh *m, const double *p) {
  return shape_holed_cube_inside(cube_L, cube_r, cube_N, p, 1e-9);
}

static int test_holed_cube(void) {
  vox_mesh cube;
  shape_holed_cube(&cube, cube_L, cube_r, cube_N);
  const double pi = 3.14159265358979323846;
  double polygon = 0.5 * cube_N * cube_r * cube_r * sin(2 * pi / cube_N);
  double volume = 8 * cube_L * cube_L * cube_L - polygon * 2 * cube_L;
  double area = 6 * 4 * cube_L * cube_L + 2 * cube_N * cube_r * sin(pi / cube_N) * 2 * cube_L;
  /* the polygon is within 1% of the cylinder it stands for */
  CHECK(fabs(polygon - pi * cube_r * cube_r) < 0.01 * pi * cube_r * cube_r);
  vox_grid g = cube_grid(-8.3, 8.4, 0.23);
  g.origin[2] = -8.27; /* not symmetric: no centre on a face plane */
  compare("holed cube", &cube, &g, VOX_FILL_AUTO, holed_cube_inside, volume, area, 0.5);
  compare("holed cube", &cube, &g, VOX_FILL_VOTE, holed_cube_inside, volume, area, 0.5);
  vox_mesh_free(&cube);
  return 0;
}

/* ---- order and orientation -------------------------------------------------- */

static uint64_t rng = 88172645463325252ULL;
static uint64_t next_random(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

/* A copy with the triangles shuffled, each triangle's corners rotated and a
 * third of them flipped, and `dup` of them repeated; the vertices renumbered. */
static void scramble(const vox_mesh *in, vox_mesh *out, int64_t dup) {
  shape_alloc(out, in->n_vertices, in->n_triangles + dup);
  out->n_vertices = in->n_vertices;
  uint32_t *perm = malloc((size_t)in->n_vertices * sizeof *perm);
  for (int64_t v = 0; v < in->n_vertices; v++) perm[v] = (uint32_t)v;
  for (int64_t v = in->n_vertices - 1; v > 0; v--) {
    int64_t w = (int64_t)(next_random() % (uint64_t)(v + 1));
    uint32_t t = perm[v];
    perm[v] = perm[w], perm[w] = t;
  }
  for (int64_t v = 0; v < in->n_vertices; v++)
    memcpy(&out->vertex[3 * perm[v]], &in->vertex[3 * v], 3 * sizeof(double));
  for (int64_t t = 0; t < in->n_triangles + dup; t++) {
    const uint32_t *s = &in->triangle[3 * (t < in->n_triangles ? t : (int64_t)(next_random() % (uint64_t)in->n_triangles))];
    int rot = (int)(next_random() % 3), flip = next_random() % 3 == 0 && t < in->n_triangles;
    uint32_t c[3] = {perm[s[rot]], perm[s[(rot + 1) % 3]], perm[s[(rot + 2) % 3]]};
    if (flip) {
      uint32_t tmp = c[1];
      c[1] = c[2], c[2] = tmp;
    }
    memcpy(&out->triangle[3 * t], c, sizeof c);
  }
  out->n_triangles = in->n_triangles + dup;
  for (int64_t t = out->n_triangles - 1; t > 0; t--) {
    int64_t w = (int64_t)(next_random() % (uint64_t)(t + 1));
    uint32_t tmp[3];
    memcpy(tmp, &out->triangle[3 * t], sizeof tmp);
    memcpy(&out->triangle[3 * t], &out->triangle[3 * w], sizeof tmp);
    memcpy(&out->triangle[3 * w], tmp, sizeof tmp);
  }
  free(perm);
}

static int test_order(void) {
  vox_mesh shapes[2];
  make_sphere(&shapes[0]);
  shape_holed_cube(&shapes[1], cube_L, cube_r, cube_N);
  /* a grid whose rays go through the sphere's poles and the cube's corners */
  vox_grid g = cube_grid(-10.5, 10.5, 0.5);
  for (int s = 0; s < 2; s++)
    for (int r = 1; r <= 2; r++) {
      vox_fill_rule rule = (vox_fill_rule)r;
      uint8_t *want = fill(&shapes[s], &g, rule, NULL);
      for (int trial = 0; trial < 3; trial++) {
        vox_mesh other;
        int64_t dup = trial == 2 ? shapes[s].n_triangles / 10 : 0;
        scramble(&shapes[s], &other, dup);
        vox_mesh_fill_info info;
        uint8_t *got = fill(&other, &g, VOX_FILL_AUTO == rule ? VOX_FILL_AUTO : rule, &info);
        int64_t d = differences(got, want, &g);
        if (d) fprintf(stderr, "shape %d, %s, trial %d: %lld voxels differ\n", s,
                       vox_fill_rule_name(rule), trial, (long long)d);
        CHECK(d == 0);
        CHECK(info.open_edges == 0);
        CHECK(info.duplicates == dup);
        free(got);
        vox_mesh_free(&other);
      }
      free(want);
    }
  /* AUTO on a duplicated mesh: the repeats go, the mesh is closed, parity */
  vox_mesh other;
  scramble(&shapes[0], &other, 50);
  vox_mesh_fill_info info;
  free(fill(&other, &g, VOX_FILL_AUTO, &info));
  CHECK(info.rule == VOX_FILL_PARITY && info.duplicates == 50);
  vox_mesh_free(&other);
  /* the vote of a closed mesh is its parity */
  uint8_t *parity = fill(&shapes[1], &g, VOX_FILL_PARITY, NULL);
  uint8_t *vote = fill(&shapes[1], &g, VOX_FILL_VOTE, NULL);
  CHECK(differences(parity, vote, &g) == 0);
  free(parity);
  free(vote);
  for (int s = 0; s < 2; s++) vox_mesh_free(&shapes[s]);
  return 0;
}

/* ---- rays through vertices and edges --------------------------------------- */

static void make_box(vox_mesh *m, const double lo[3], const double hi[3]) {
  shape_alloc(m, 8, 12);
  for (int c = 0; c < 8; c++)
    shape_vertex(m, c & 1 ? hi[0] : lo[0], c & 2 ? hi[1] : lo[1], c & 4 ? hi[2] : lo[2]);
  shape_quad(m, 0, 2, 3, 1); /* z- */
  shape_quad(m, 4, 5, 7, 6); /* z+ */
  shape_quad(m, 0, 1, 5, 4); /* y- */
  shape_quad(m, 2, 6, 7, 3); /* y+ */
  shape_quad(m, 0, 4, 6, 2); /* x- */
  shape_quad(m, 1, 3, 7, 5); /* x+ */
}

static int test_exact(void) {
  /* Faces, edges, corners and the faces' diagonals all pass through voxel
   * centres (h = 1, centres at k + 0.5). Inside is half-open, [lo, hi)
   * along each axis: 8 x 6 x 4 voxels, whatever the order of the
   * triangles, by both rules. */
  const double lo[3] = {0.5, 1.5, 2.5}, hi[3] = {8.5, 7.5, 6.5};
  vox_mesh box;
  make_box(&box, lo, hi);
  vox_grid g = cube_grid(0, 10, 1);
  for (int r = 1; r <= 2; r++)
    for (int trial = 0; trial < 20; trial++) {
      vox_mesh other;
      scramble(&box, &other, 0);
      uint8_t *in = fill(&other, &g, (vox_fill_rule)r, NULL);
      int64_t count = 0, wrong = 0;
      for (int64_t e = 0; e < vox_grid_elements(&g); e++) {
        double p[3];
        centre(&g, e, p);
        int want = 1;
        for (int a = 0; a < 3; a++) want = want && p[a] >= lo[a] && p[a] < hi[a];
        wrong += want != in[e];
        count += in[e];
      }
      if (wrong) fprintf(stderr, "%s, trial %d: %lld voxels, %lld wrong\n",
                         vox_fill_rule_name((vox_fill_rule)r), trial, (long long)count,
                         (long long)wrong);
      CHECK(wrong == 0 && count == 8 * 6 * 4);
      free(in);
      vox_mesh_free(&other);
    }
  vox_mesh_free(&box);
  return 0;
}

/* ---- open meshes ------------------------------------------------------------ */

static int test_holes(void) {
  vox_mesh sphere, open;
  make_sphere(&sphere);
  vox_grid g = cube_grid(-10.5, 11, 0.5);
  uint8_t *closed = fill(&sphere, &g, VOX_FILL_PARITY, NULL);
  /* 20 triangles spread over the surface taken away: 20 small holes */
  shape_alloc(&open, sphere.n_vertices, sphere.n_triangles);
  open.n_vertices = sphere.n_vertices;
  memcpy(open.vertex, sphere.vertex, (size_t)sphere.n_vertices * 3 * sizeof(double));
  for (int64_t t = 0; t < sphere.n_triangles; t++)
    if (t % (sphere.n_triangles / 20) != 7)
      memcpy(&open.triangle[3 * open.n_triangles++], &sphere.triangle[3 * t], 3 * sizeof(uint32_t));
  vox_mesh_fill_info info;
  uint8_t *vote = fill(&open, &g, VOX_FILL_AUTO, &info);
  uint8_t *parity = fill(&open, &g, VOX_FILL_PARITY, NULL);
  int64_t d_vote = differences(vote, closed, &g), d_parity = differences(parity, closed, &g);
  printf("sphere with 20 holes: open edges %lld, %s; voxels unlike the closed sphere's: "
         "vote %lld, parity %lld (of %lld)\n",
         (long long)info.open_edges, vox_fill_rule_name(info.rule), (long long)d_vote,
         (long long)d_parity, (long long)info.inside);
  CHECK(info.rule == VOX_FILL_VOTE && info.open_edges == 60);
  /* the vote leaves at most a voxel here and there; parity smears each
   * hole's columns through the whole grid */
  CHECK(d_vote <= 5);
  CHECK(d_parity > 100);
  free(closed);
  free(vote);
  free(parity);
  vox_mesh_free(&open);
  vox_mesh_free(&sphere);
  return 0;
}

/* ---- grids ------------------------------------------------------------------ */

static int test_grid(void) {
  const double min[3] = {-1, 2, 10}, max[3] = {3, 4, 11};
  const double nan3[3] = {NAN, NAN, NAN}, h[3] = {0.5, 0.25, 0.3};
  vox_grid g;
  CHECK_OK(ctx, vox_grid_around(ctx, min, max, h, 0, 2, 1 << 20, &g));
  CHECK(g.nx == 8 + 4 && g.ny == 8 + 4 && g.nz == 4 + 4);
  CHECK(g.origin[0] == -2 && g.origin[1] == 1.5 && fabs(g.origin[2] - 9.4) < 1e-12);
  CHECK(g.voxel_size[1] == 0.25);
  CHECK_OK(ctx, vox_grid_around(ctx, min, max, nan3, 40, 0, 1 << 20, &g));
  CHECK(g.nx == 40 && g.ny == 20 && g.nz == 10 && g.voxel_size[2] == 0.1);
  CHECK(g.origin[0] == -1 && g.origin[2] == 10);
  CHECK(vox_grid_around(ctx, min, max, nan3, 4000, 0, 1 << 20, &g) == VOX_ERR_INVALID_ARGUMENT);
  /* a mesh off the grid's origin: the voxels follow the mesh coordinates */
  vox_mesh sphere;
  const double far[3] = {1000.25, -500.5, 20};
  shape_sphere(&sphere, 24, 48, 3, far);
  double lo[3], hi[3];
  vox_mesh_bounds(&sphere, lo, hi);
  CHECK(fabs(lo[0] - 997.25) < 1e-4 && fabs(hi[2] - 23) < 1e-4);
  const double h1[3] = {0.2, 0.2, 0.2};
  CHECK_OK(ctx, vox_grid_around(ctx, lo, hi, h1, 0, 1, 1 << 24, &g));
  double area, volume = shape_volume(&sphere, &area);
  inside_centre = far, inside_radius = 3;
  compare("sphere far from 0", &sphere, &g, VOX_FILL_AUTO, sphere_inside, volume, area, 0.05);
  vox_mesh_free(&sphere);
  return 0;
}

/* ---- problem files ------------------------------------------------------------ */

static int write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  if (!f) return -1;
  fputs(text, f);
  return fclose(f);
}

static int test_problem(const char *dir) {
  /* A 20 x 10 x 10 box of 1 mm voxels; a ball of radius 3 at (10, 5, 5)
   * made passive void by its mesh; a load on the nodes inside a small box
   * mesh at the x+ end; supports on the face x-. */
  vox_mesh ball, pad;
  const double c[3] = {10, 5, 5.0001};
  shape_sphere(&ball, 24, 48, 3, c);
  const double lo[3] = {19.5, 3.5, 3.5}, hi[3] = {20.5, 6.5, 6.5};
  make_box(&pad, lo, hi);
  char path[1024], yaml[1024];
  snprintf(path, sizeof path, "%s/ball.stl", dir);
  CHECK(shape_write_stl_binary(&ball, path, "ball") == 0);
  snprintf(path, sizeof path, "%s/pad.obj", dir);
  CHECK(shape_write_indexed(&pad, path, "obj") == 0);
  snprintf(yaml, sizeof yaml, "%s/problem.yaml", dir);
  CHECK(write_text(yaml, "voxfe-problem: 1\n"
                         "material: {E: 1, nu: 0.3}\n"
                         "supports:\n  - {name: wall, region: {face: x-}, fix: [x, y, z]}\n"
                         "loads:\n  - {name: push, region: {mesh: pad.obj}, force: [0, 0, -16]}\n"
                         "passive:\n  - {name: hole, region: {mesh: ball.stl}, type: void}\n") ==
        0);
  vox_problem problem;
  CHECK_OK(ctx, vox_problem_read(ctx, yaml, &problem));
  CHECK(problem.n_forces == 1 && problem.forces[0].region.kind == VOX_REGION_MESH);
  snprintf(path, sizeof path, "%s/pad.obj", dir);
  CHECK(!strcmp(problem.forces[0].region.mesh, path));
  vox_model model = {0};
  vox_grid g = {.nx = 20, .ny = 10, .nz = 10, .voxel_size = {1, 1, 1}};
  CHECK_OK(ctx, vox_model_init(ctx, &model, &g));
  memset(model.label, 1, 2000);
  CHECK_OK(ctx, vox_problem_rasterize(ctx, &problem, &model));
  int64_t voids = 0, want = 0;
  for (int64_t e = 0; e < 2000; e++) {
    double p[3];
    centre(&g, e, p);
    voids += model.label[e] == 3;
    want += shape_convex_inside(&ball, p, 0) == 1;
  }
  printf("void ball: %lld voxels (independent test %lld); load on %zu entries\n",
         (long long)voids, (long long)want, model.n_loads);
  CHECK(voids == want && voids > 50);
  /* nodes x = 20, y and z in 4..6: 9 nodes, each -16/9 in z */
  CHECK(model.n_loads == 9);
  for (size_t i = 0; i < model.n_loads; i++) {
    int64_t node = model.loads[i].node, ix = node % 21, iy = (node / 21) % 11, iz = node / 231;
    CHECK(ix == 20 && iy >= 4 && iy <= 6 && iz >= 4 && iz <= 6 && model.loads[i].component == 2);
    CHECK_CLOSE(model.loads[i].value, -16.0 / 9, 1e-12);
  }
  vox_model_free(&model);
  vox_problem_free(&problem);

  /* a missing mesh: the item and the file named */
  CHECK(write_text(yaml, "voxfe-problem: 1\nmaterial: {E: 1, nu: 0.3}\n"
                         "supports:\n  - {name: wall, region: {mesh: nothere.stl}, fix: [x]}\n") ==
        0);
  CHECK_OK(ctx, vox_problem_read(ctx, yaml, &problem));
  CHECK_OK(ctx, vox_model_init(ctx, &model, &g));
  memset(model.label, 1, 2000);
  CHECK(vox_problem_rasterize(ctx, &problem, &model) == VOX_ERR_IO);
  printf("missing mesh: %s\n", vox_context_message(ctx));
  CHECK(strstr(vox_context_message(ctx), "support 'wall'") &&
        strstr(vox_context_message(ctx), "nothere.stl"));
  vox_model_free(&model);
  vox_problem_free(&problem);
  vox_mesh_free(&ball);
  vox_mesh_free(&pad);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: test_mesh TEST [DIR]\n");
    return 2;
  }
  if (vox_context_create(&ctx) != VOX_OK) return 1;
  const char *t = argv[1], *dir = argc > 2 ? argv[2] : ".";
  if (!strcmp(t, "formats")) test_formats(dir);
  else if (!strcmp(t, "sphere")) test_sphere();
  else if (!strcmp(t, "holed_cube")) test_holed_cube();
  else if (!strcmp(t, "order")) test_order();
  else if (!strcmp(t, "exact")) test_exact();
  else if (!strcmp(t, "holes")) test_holes();
  else if (!strcmp(t, "grid")) test_grid();
  else if (!strcmp(t, "problem")) test_problem(dir);
  else {
    fprintf(stderr, "unknown test %s\n", t);
    return 2;
  }
  vox_context_destroy(ctx);
  CHECK_DONE();
}
