/* SPDX-License-Identifier: BSD-3-Clause */
/* Tests of problem files: the shipped workflow files, node selection and
 * force weights of each region, passive parts, supports, loads, and the error
 * messages. One part per CTest:
 *   test_problem <part> <workflows dir> <scratch dir>
 * where part is workflows, regions, passive, supports, loads or errors. */
#include <fcntl.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "voxfe/problem.h"

#include "../check.h"

static const char *scratch;
static const char *workflows;

/* ---- helpers -------------------------------------------------------------- */

/* Writes `text` to <scratch>/<name> and returns the path (static buffer). */
static const char *write_file(const char *name, const char *text) {
  static char path[1024];
  snprintf(path, sizeof path, "%s/%s", scratch, name);
  FILE *f = fopen(path, "w");
  if (!f) {
    fprintf(stderr, "cannot write %s\n", path);
    exit(2);
  }
  fputs(text, f);
  fclose(f);
  return path;
}

/* vox_problem_read with stderr sent to a file, to check that neither voxfe
 * nor libfyaml prints anything. */
static vox_status read_quietly(vox_context *ctx, const char *path, vox_problem *p) {
  char capture[1024];
  snprintf(capture, sizeof capture, "%s/stderr.txt", scratch);
  fflush(stderr);
  int saved = dup(2);
  int fd = open(capture, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (saved < 0 || fd < 0) {
    fprintf(stderr, "cannot capture stderr\n");
    exit(2);
  }
  dup2(fd, 2);
  close(fd);
  vox_status status = vox_problem_read(ctx, path, p);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  struct stat st;
  CHECK(stat(capture, &st) == 0 && st.st_size == 0);
  return status;
}

/* Parses `text` as the problem file `name`; fails the test if it does not parse. */
static int parse(vox_context *ctx, const char *name, const char *text, vox_problem *p) {
  vox_status status = read_quietly(ctx, write_file(name, text), p);
  if (status) fprintf(stderr, "%s: unexpected failure: %s\n", name, vox_context_message(ctx));
  CHECK(status == VOX_OK);
  return status == VOX_OK;
}

/* A box model of nx*ny*nz voxels, all label 1, as the box voxelizer makes. */
static void box_model(vox_context *ctx, vox_model *m, int nx, int ny, int nz, const double h[3],
                      const double origin[3]) {
  vox_grid g = {.nx = nx, .ny = ny, .nz = nz};
  for (int a = 0; a < 3; a++) {
    g.voxel_size[a] = h ? h[a] : 1.0;
    g.origin[a] = origin ? origin[a] : 0.0;
  }
  CHECK_OK(ctx, vox_model_init(ctx, m, &g));
  memset(m->label, 1, (size_t)vox_grid_elements(&g));
}

static int64_t node_of(const vox_model *m, int64_t i, int64_t j, int64_t k) {
  return (k * (m->grid.ny + 1) + j) * (m->grid.nx + 1) + i;
}

static uint8_t label_of(const vox_model *m, int64_t i, int64_t j, int64_t k) {
  return m->label[(k * m->grid.ny + j) * m->grid.nx + i];
}

/* The force on (node, component, case), 0 if none; counts entries found. */
static double load_at(const vox_model *m, int64_t node, int c, int load_case, int *entries) {
  double v = 0;
  *entries = 0;
  for (size_t i = 0; i < m->n_loads; i++)
    if (m->loads[i].node == node && m->loads[i].component == c &&
        m->loads[i].load_case == load_case) {
      v += m->loads[i].value;
      ++*entries;
    }
  return v;
}

static double load_total(const vox_model *m, int c, int load_case) {
  double sum = 0;
  for (size_t i = 0; i < m->n_loads; i++)
    if (m->loads[i].component == c && m->loads[i].load_case == load_case) sum += m->loads[i].value;
  return sum;
}

static size_t count_loads(const vox_model *m, int c, int load_case) {
  size_t n = 0;
  for (size_t i = 0; i < m->n_loads; i++)
    n += m->loads[i].component == c && m->loads[i].load_case == load_case;
  return n;
}

static size_t count_constraints(const vox_model *m, int c) {
  size_t n = 0;
  for (size_t i = 0; i < m->n_constraints; i++) n += m->constraints[i].component == c;
  return n;
}

/* Parses `regions` as the loads of a problem clamped at x-, rasterises it on
 * model m, and returns the status. */
static vox_status with_loads(vox_context *ctx, vox_model *m, const char *loads) {
  char text[4096];
  snprintf(text, sizeof text,
           "voxfe-problem: 1\nmaterial: {E: 1, nu: 0.3}\n"
           "supports:\n  - {name: clamp, region: {face: x-}, fix: [x, y, z]}\n"
           "loads:\n%s",
           loads);
  vox_problem p;
  if (!parse(ctx, "loads.yaml", text, &p)) return VOX_ERR_FORMAT;
  vox_status status = vox_problem_rasterize(ctx, &p, m);
  vox_problem_free(&p);
  return status;
}

/* Number of nodes a region selects: the load entries of a unit x force. */
static size_t region_nodes(vox_context *ctx, vox_model *m, const char *region) {
  char loads[1024];
  snprintf(loads, sizeof loads, "  - {region: %s, force: [1, 0, 0]}\n", region);
  vox_status status = with_loads(ctx, m, loads);
  if (status) {
    fprintf(stderr, "region %s: %s\n", region, vox_context_message(ctx));
    return 0;
  }
  CHECK_CLOSE(load_total(m, 0, 0), 1.0, 1e-12);
  return count_loads(m, 0, 0);
}

/* ---- the shipped workflow files ------------------------------------------- */

static void test_workflows(vox_context *ctx) {
  char path[1024];
  vox_problem p;
  vox_model m;

  /* The 2:1:1 cantilever at two resolutions and origins: faces and edges
   * carry no coordinates, so one file fits any box. */
  snprintf(path, sizeof path, "%s/cantilever/cantilever.yaml", workflows);
  CHECK_OK(ctx, read_quietly(ctx, path, &p));
  CHECK_CLOSE(p.material.youngs_modulus, 1.0, 0);
  CHECK_CLOSE(p.material.poisson_ratio, 0.3, 0);
  CHECK(p.n_supports == 1 && p.n_forces == 1 && p.n_passive == 0 && p.n_load_cases == 1);
  for (int res = 1; res <= 2; res++) {
    int nx = 8 * res, ny = 4 * res, nz = 4 * res;
    double h[3] = {1.0 / res, 1.0 / res, 1.0 / res}, origin[3] = {-4, -2, res == 2 ? 10 : 0};
    box_model(ctx, &m, nx, ny, nz, h, origin);
    CHECK_OK(ctx, vox_problem_rasterize(ctx, &p, &m));
    CHECK_OK(ctx, vox_model_validate(ctx, &m));
    size_t face = (size_t)(ny + 1) * (nz + 1);
    CHECK(m.n_constraints == 3 * face);
    for (size_t i = 0; i < m.n_constraints; i++)
      CHECK(m.constraints[i].node % (nx + 1) == 0 && m.constraints[i].value == 0);
    /* Line load on the bottom edge of the free end: ny+1 nodes, ends half. */
    CHECK(m.n_loads == (size_t)ny + 1 && count_loads(&m, 2, 0) == (size_t)ny + 1);
    int entries;
    for (int j = 0; j <= ny; j++) {
      double expected = -1.0 / ny * (j == 0 || j == ny ? 0.5 : 1.0);
      CHECK_CLOSE(load_at(&m, node_of(&m, nx, j, 0), 2, 0, &entries), expected, 1e-14);
      CHECK(entries == 1);
    }
    CHECK_CLOSE(load_total(&m, 2, 0), -1.0, 1e-12);
    CHECK(m.n_materials == 1 && m.materials[0].label == 1 &&
          m.materials[0].role == VOX_ROLE_DESIGN);
    CHECK(m.n_load_cases == 1 && !strcmp(m.load_case_names[0], p.load_case_names[0]));
    vox_model_free(&m);
  }
  vox_problem_free(&p);

  /* The half MBB beam, with symmetry planes x- and y-. */
  snprintf(path, sizeof path, "%s/mbb/mbb.yaml", workflows);
  CHECK_OK(ctx, read_quietly(ctx, path, &p));
  box_model(ctx, &m, 12, 2, 4, NULL, NULL);
  CHECK_OK(ctx, vox_problem_rasterize(ctx, &p, &m));
  CHECK_OK(ctx, vox_model_validate(ctx, &m));
  CHECK(count_constraints(&m, 0) == 3 * 5);  /* ux on x-: (ny+1)(nz+1) */
  CHECK(count_constraints(&m, 1) == 13 * 5); /* uy on y-: (nx+1)(nz+1) */
  CHECK(count_constraints(&m, 2) == 3);      /* uz on x+ z-: ny+1 */
  for (size_t i = 0; i < m.n_constraints; i++) {
    const vox_constraint *c = &m.constraints[i];
    int64_t i0 = c->node % 13, j0 = (c->node / 13) % 3, k0 = c->node / 39;
    CHECK(c->value == 0);
    CHECK((c->component == 0 && i0 == 0) || (c->component == 1 && j0 == 0) ||
          (c->component == 2 && i0 == 12 && k0 == 0));
  }
  int entries;
  CHECK(m.n_loads == 3);
  CHECK_CLOSE(load_at(&m, node_of(&m, 0, 0, 4), 2, 0, &entries), -0.25, 1e-14);
  CHECK_CLOSE(load_at(&m, node_of(&m, 0, 1, 4), 2, 0, &entries), -0.5, 1e-14);
  CHECK_CLOSE(load_at(&m, node_of(&m, 0, 2, 4), 2, 0, &entries), -0.25, 1e-14);
  CHECK_CLOSE(load_total(&m, 2, 0), -1.0, 1e-12);
  vox_model_free(&m);
  vox_problem_free(&p);
}

/* ---- regions -------------------------------------------------------------- */

static void test_regions(vox_context *ctx) {
  vox_model m;
  int entries;

  /* Face weights on a 2x2 face: corners 1/16, edge midpoints 2/16, centre
   * 4/16 of the total, whatever the voxel's aspect ratio. */
  double hs[2][3] = {{1, 1, 1}, {1, 2, 0.5}};
  for (int v = 0; v < 2; v++) {
    box_model(ctx, &m, 2, 2, 2, hs[v], NULL);
    CHECK_OK(ctx, with_loads(ctx, &m, "  - {region: {face: z+}, force: [0, 0, -16]}\n"));
    CHECK(count_loads(&m, 2, 0) == 9);
    for (int j = 0; j <= 2; j++)
      for (int i = 0; i <= 2; i++) {
        double w = (i == 1 ? 2 : 1) * (j == 1 ? 2 : 1);
        CHECK_CLOSE(load_at(&m, node_of(&m, i, j, 2), 2, 0, &entries), -w, 1e-14);
      }
    CHECK_CLOSE(load_total(&m, 2, 0), -16.0, 1e-12);
    vox_model_free(&m);
  }

  /* A face with an empty voxel: only quads of material count, and the grid
   * corner that touches only the empty voxel is not loaded. */
  box_model(ctx, &m, 2, 2, 2, NULL, NULL);
  m.label[(1 * 2 + 1) * 2 + 1] = 0; /* element (1,1,1) */
  CHECK_OK(ctx, with_loads(ctx, &m, "  - {region: {face: z+}, force: [0, 0, -12]}\n"));
  static const double hole[3][3] = {{1, 2, 1}, {2, 3, 1}, {1, 1, 0}}; /* [j][i] */
  CHECK(count_loads(&m, 2, 0) == 8);
  for (int j = 0; j <= 2; j++)
    for (int i = 0; i <= 2; i++)
      CHECK_CLOSE(load_at(&m, node_of(&m, i, j, 2), 2, 0, &entries), -hole[j][i], 1e-14);
  vox_model_free(&m);

  /* Edge weights: end nodes half. */
  box_model(ctx, &m, 4, 1, 1, NULL, NULL);
  CHECK_OK(ctx, with_loads(ctx, &m, "  - {region: {edge: [y-, z-]}, force: [0, 0, -8]}\n"));
  CHECK(count_loads(&m, 2, 0) == 5);
  for (int i = 0; i <= 4; i++)
    CHECK_CLOSE(load_at(&m, node_of(&m, i, 0, 0), 2, 0, &entries), i == 0 || i == 4 ? -1 : -2,
                1e-14);
  vox_model_free(&m);

  /* Totals hold on odd grids with awkward forces, face and edge alike. */
  box_model(ctx, &m, 7, 3, 5, (double[3]){0.3, 0.7, 1.1}, (double[3]){-1, 2, 3});
  CHECK_OK(ctx, with_loads(ctx, &m,
                           "  - {region: {face: x+}, force: [0.3, -0.7, 1.1]}\n"
                           "  - {region: {edge: [z+, y+]}, force: [1e-3, 3.3, -7.77]}\n"
                           "  - {region: {sphere: {center: [0, 3, 5], radius: 1.3}}, "
                           "force: [0.1, 0.2, 0.3]}\n"));
  CHECK_CLOSE(load_total(&m, 0, 0), 0.3 + 1e-3 + 0.1, 1e-12);
  CHECK_CLOSE(load_total(&m, 1, 0), -0.7 + 3.3 + 0.2, 1e-12);
  CHECK_CLOSE(load_total(&m, 2, 0), 1.1 - 7.77 + 0.3, 1e-12);
  CHECK_OK(ctx, vox_model_validate(ctx, &m));
  vox_model_free(&m);

  /* Point: the one nearest node. */
  box_model(ctx, &m, 4, 4, 4, NULL, NULL);
  CHECK_OK(ctx, with_loads(ctx, &m, "  - {region: {point: [1.4, 2.6, 4]}, force: [0, 0, -3]}\n"));
  CHECK(m.n_loads == 1 && m.loads[0].node == node_of(&m, 1, 3, 4) && m.loads[0].value == -3);
  vox_model_free(&m);
  /* A point halfway between nodes takes the lower one. */
  box_model(ctx, &m, 4, 4, 4, NULL, NULL);
  CHECK_OK(ctx, with_loads(ctx, &m, "  - {region: {point: [2, 2.5, 4]}, force: [0, 0, -3]}\n"));
  CHECK(m.n_loads == 1 && m.loads[0].node == node_of(&m, 2, 2, 4));
  vox_model_free(&m);
  /* ... nearest among nodes on material: the corner (4,4,4) touches only an
   * empty voxel; of its three neighbours at distance 1, the lowest index. */
  box_model(ctx, &m, 4, 4, 4, NULL, NULL);
  m.label[(3 * 4 + 3) * 4 + 3] = 0;
  CHECK_OK(ctx, with_loads(ctx, &m, "  - {region: {point: [4, 4, 4]}, force: [0, 0, -3]}\n"));
  CHECK(m.n_loads == 1 && m.loads[0].node == node_of(&m, 4, 4, 3));
  vox_model_free(&m);

  /* Boxes: inclusive bounds with a tolerance, infinite bounds. */
  box_model(ctx, &m, 4, 4, 4, NULL, NULL);
  CHECK(region_nodes(ctx, &m, "{box: {min: [1, 1, 1], max: [2, 2, 2]}}") == 8);
  vox_model_free(&m);
  box_model(ctx, &m, 4, 4, 4, NULL, NULL);
  CHECK(region_nodes(ctx, &m, "{box: {min: [1.0000000001, 1, 1], max: [2, 2, 1.9999999999]}}") ==
        8);
  vox_model_free(&m);
  box_model(ctx, &m, 4, 4, 4, NULL, NULL);
  CHECK(region_nodes(ctx, &m, "{box: {min: [1.001, 1.001, 1.001], max: [2, 2, 2]}}") == 1);
  vox_model_free(&m);
  box_model(ctx, &m, 4, 4, 4, NULL, NULL);
  CHECK(region_nodes(ctx, &m, "{box: {min: [-.inf, -.inf, 3.5], max: [.inf, .inf, .inf]}}") ==
        25);
  vox_model_free(&m);

  /* Spheres: the centre and its six neighbours at distance 1. */
  box_model(ctx, &m, 4, 4, 4, NULL, NULL);
  CHECK(region_nodes(ctx, &m, "{sphere: {center: [2, 2, 2], radius: 1}}") == 7);
  vox_model_free(&m);
  box_model(ctx, &m, 4, 4, 4, NULL, NULL);
  CHECK(region_nodes(ctx, &m, "{sphere: {center: [2, 2, 2], radius: 0.9999999}}") == 7);
  vox_model_free(&m);
  box_model(ctx, &m, 4, 4, 4, NULL, NULL);
  CHECK(region_nodes(ctx, &m, "{sphere: {center: [2, 2, 2], radius: 0}}") == 1);
  vox_model_free(&m);
  /* Shifted origin: coordinates are the model's frame. */
  box_model(ctx, &m, 4, 4, 4, (double[3]){0.5, 0.5, 0.5}, (double[3]){10, 20, 30});
  CHECK(region_nodes(ctx, &m, "{sphere: {center: [11, 21, 31], radius: 0.5}}") == 7);
  vox_model_free(&m);

  /* Label: the nodes of the elements of a label the caller defined. */
  box_model(ctx, &m, 4, 4, 4, NULL, NULL);
  m.label[(2 * 4 + 2) * 4 + 2] = 7;
  vox_material seven = {.label = 7, .name = "bone", .youngs_modulus = 5, .poisson_ratio = 0.3};
  CHECK_OK(ctx, vox_model_add_material(ctx, &m, &seven));
  CHECK(region_nodes(ctx, &m, "{label: 7}") == 8);
  CHECK(m.n_materials == 2 && vox_model_material(&m, 7)->youngs_modulus == 5);
  CHECK_OK(ctx, vox_model_validate(ctx, &m));
  vox_model_free(&m);

  /* Only nodes on material count: an empty slab z in [0, 1] keeps the face
   * z- free of nodes and thins the face x-. */
  box_model(ctx, &m, 2, 2, 3, NULL, NULL);
  memset(m.label, 0, 4);
  CHECK(region_nodes(ctx, &m, "{face: x+}") == 3 * 3);
  vox_model_free(&m);
}

/* ---- passive parts -------------------------------------------------------- */

static void test_passive(vox_context *ctx) {
  vox_problem p;
  vox_model m;
  CHECK(parse(ctx, "passive.yaml",
              "voxfe-problem: 1\n"
              "material: {name: steel, E: 210000, nu: 0.3, conductivity: 0.05}\n"
              "supports: [{region: {face: x-}, fix: [x, y, z]}]\n"
              "loads: [{region: {face: x+}, force: [0, 0, -1]}]\n"
              "passive:\n"
              "  - {name: hole, region: {sphere: {center: [2, 2, 2], radius: 1}}, type: void}\n"
              "  - {name: deck, region: {box: {min: [-.inf, -.inf, 3], max: [.inf, .inf, .inf]}},"
              " type: solid}\n"
              "  - {name: again, region: {sphere: {center: [2, 2, 2], radius: 1.5}}, type: solid}\n"
              "  - {name: floor, region: {face: z-}, type: solid}\n",
              &p));
  box_model(ctx, &m, 4, 4, 4, NULL, NULL);
  CHECK_OK(ctx, vox_problem_rasterize(ctx, &p, &m));
  CHECK_OK(ctx, vox_model_validate(ctx, &m));
  int count[4] = {0};
  for (int k = 0; k < 4; k++)
    for (int j = 0; j < 4; j++)
      for (int i = 0; i < 4; i++) {
        uint8_t l = label_of(&m, i, j, k);
        count[l < 4 ? l : 0]++;
        int centre = (i == 1 || i == 2) && (j == 1 || j == 2) && (k == 1 || k == 2);
        /* The earlier part wins: "again" finds the hole already void. */
        CHECK(l == (centre ? 3 : k == 3 || k == 0 ? 2 : 1));
      }
  CHECK(count[3] == 8 && count[2] == 32 && count[1] == 24 && count[0] == 0);
  CHECK(m.n_materials == 3);
  const vox_material *design = vox_model_material(&m, 1), *solid = vox_model_material(&m, 2),
                     *hole = vox_model_material(&m, 3);
  CHECK(design && design->role == VOX_ROLE_DESIGN && !strcmp(design->name, "steel"));
  CHECK(solid && solid->role == VOX_ROLE_SOLID && solid->youngs_modulus == 210000);
  CHECK(hole && hole->role == VOX_ROLE_VOID && hole->poisson_ratio == 0.3);
  CHECK(design && design->conductivity == 0.05);
  vox_model_free(&m);
  vox_problem_free(&p);

  /* Materials only for labels in use; a label region and an edge region. */
  CHECK(parse(ctx, "passive2.yaml",
              "voxfe-problem: 1\nmaterial: {E: 1, nu: 0.3}\n"
              "supports: [{region: {face: x-}, fix: [x, y, z]}]\n"
              "passive:\n"
              "  - {region: {edge: [x+, y+]}, type: void}\n"
              "  - {region: {point: [0.5, 0.5, 0.5]}, type: void}\n",
              &p));
  box_model(ctx, &m, 3, 3, 3, NULL, NULL);
  CHECK_OK(ctx, vox_problem_rasterize(ctx, &p, &m));
  CHECK(m.n_materials == 2 && !vox_model_material(&m, 2) && vox_model_material(&m, 3));
  for (int k = 0; k < 3; k++) {
    CHECK(label_of(&m, 2, 2, k) == 3);
    CHECK(label_of(&m, 1, 2, k) == 1 && label_of(&m, 2, 1, k) == 1);
  }
  CHECK(label_of(&m, 0, 0, 0) == 3 && label_of(&m, 1, 0, 0) == 1);
  CHECK(m.n_load_cases == 1 && m.n_loads == 0);
  vox_model_free(&m);
  vox_problem_free(&p);

  /* A passive region that misses the model is an error, and the model is
   * left as it was. */
  CHECK(parse(ctx, "passive3.yaml",
              "voxfe-problem: 1\nmaterial: {E: 1, nu: 0.3}\n"
              "supports: [{region: {face: x-}, fix: [x, y, z]}]\n"
              "passive:\n"
              "  - {name: first, region: {face: x+}, type: solid}\n"
              "  - {name: far, region: {sphere: {center: [20, 2, 2], radius: 1}}, type: void}\n",
              &p));
  box_model(ctx, &m, 4, 4, 4, NULL, NULL);
  CHECK(vox_problem_rasterize(ctx, &p, &m) == VOX_ERR_FORMAT);
  CHECK(!strcmp(vox_context_message(ctx), "passive 'far': region selects no element"));
  CHECK(m.n_materials == 0 && m.n_constraints == 0 && label_of(&m, 3, 0, 0) == 1);
  vox_model_free(&m);
  vox_problem_free(&p);
}

/* ---- supports ------------------------------------------------------------- */

static void test_supports(vox_context *ctx) {
  vox_problem p;
  vox_model m;
  CHECK(parse(ctx, "supports.yaml",
              "voxfe-problem: 1\nmaterial: {E: 1, nu: 0.3}\n"
              "supports:\n"
              "  - {name: wall, region: {face: x-}, fix: [x]}\n"
              "  - {name: hinge, region: {edge: [x-, z-]}, fix: [x, z]}\n"
              "  - {name: pull, region: {face: x+}, displacement: {x: 0.1, y: 0}}\n",
              &p));
  CHECK(p.n_supports == 3 && p.supports[2].fixed[0] && p.supports[2].fixed[1] &&
        !p.supports[2].fixed[2] && p.supports[2].value[0] == 0.1);
  box_model(ctx, &m, 2, 2, 2, NULL, NULL);
  CHECK_OK(ctx, vox_problem_rasterize(ctx, &p, &m));
  /* wall: 9 nodes in x; hinge: 3 nodes in x (the same as wall's) and z;
   * pull: 9 nodes in x and y. */
  CHECK(m.n_constraints == 9 + 3 + 18);
  CHECK(count_constraints(&m, 0) == 18 && count_constraints(&m, 1) == 9 &&
        count_constraints(&m, 2) == 3);
  for (size_t i = 0; i < m.n_constraints; i++) {
    const vox_constraint *c = &m.constraints[i];
    int64_t i0 = c->node % 3;
    CHECK(c->value == (i0 == 2 && c->component == 0 ? 0.1 : 0.0));
    if (i) /* sorted by node, then component, without repeats */
      CHECK(m.constraints[i - 1].node < c->node ||
            (m.constraints[i - 1].node == c->node &&
             m.constraints[i - 1].component < c->component));
  }
  vox_model_free(&m);
  vox_problem_free(&p);

  /* Two supports that disagree on a node: an error naming both. */
  CHECK(parse(ctx, "conflict.yaml",
              "voxfe-problem: 1\nmaterial: {E: 1, nu: 0.3}\n"
              "supports:\n"
              "  - {name: wall, region: {face: x-}, fix: [x, y, z]}\n"
              "  - {name: push, region: {edge: [x-, z+]}, displacement: {z: -0.01}}\n",
              &p));
  box_model(ctx, &m, 2, 2, 2, NULL, NULL);
  CHECK(vox_problem_rasterize(ctx, &p, &m) == VOX_ERR_FORMAT);
  CHECK(strstr(vox_context_message(ctx), "'wall'") && strstr(vox_context_message(ctx), "'push'"));
  CHECK(m.n_constraints == 0);
  vox_model_free(&m);
  vox_problem_free(&p);

  /* A support that selects nothing, and none at all. */
  CHECK(parse(ctx, "nothing.yaml",
              "voxfe-problem: 1\nmaterial: {E: 1, nu: 0.3}\n"
              "supports:\n"
              "  - {name: clamped_end, region: {box: {min: [5, 0, 0], max: [6, 1, 1]}},"
              " fix: [x]}\n",
              &p));
  box_model(ctx, &m, 2, 2, 2, NULL, NULL);
  CHECK(vox_problem_rasterize(ctx, &p, &m) == VOX_ERR_FORMAT);
  CHECK(strstr(vox_context_message(ctx), "support 'clamped_end': region selects no node") ==
        vox_context_message(ctx));
  vox_model_free(&m);
  vox_problem_free(&p);

  CHECK(parse(ctx, "free.yaml",
              "voxfe-problem: 1\nmaterial: {E: 1, nu: 0.3}\n"
              "loads: [{region: {face: x+}, force: [1, 0, 0]}]\n",
              &p));
  box_model(ctx, &m, 2, 2, 2, NULL, NULL);
  CHECK(vox_problem_rasterize(ctx, &p, &m) == VOX_ERR_FORMAT);
  CHECK(strstr(vox_context_message(ctx), "no support") != NULL);
  vox_model_free(&m);
  vox_problem_free(&p);

  /* Support on the nodes of empty voxels only: none. */
  CHECK(parse(ctx, "empty_face.yaml",
              "voxfe-problem: 1\nmaterial: {E: 1, nu: 0.3}\n"
              "supports: [{name: base, region: {face: z-}, fix: [z]}]\n",
              &p));
  box_model(ctx, &m, 2, 2, 2, NULL, NULL);
  memset(m.label, 0, 4);
  CHECK(vox_problem_rasterize(ctx, &p, &m) == VOX_ERR_FORMAT);
  CHECK(strstr(vox_context_message(ctx), "support 'base': region selects no node") != NULL);
  vox_model_free(&m);
  vox_problem_free(&p);
}

/* ---- loads and load cases ------------------------------------------------- */

static void test_loads(vox_context *ctx) {
  vox_problem p;
  vox_model m;
  int entries;
  CHECK(parse(ctx, "cases.yaml",
              "voxfe-problem: 1\n"
              "title: two cases\n"
              "material: {E: 1, nu: 0.3}\n"
              "load_cases: [down, side]\n"
              "supports: [{region: {face: x-}, fix: [x, y, z]}]\n"
              "loads:\n"
              "  - {name: a, region: {point: [2, 0, 0]}, force: [0, 0, -1], case: down}\n"
              "  - {name: b, region: {point: [2, 0, 0]}, force: [0, 0, -2], case: down}\n"
              "  - {name: c, region: {edge: [x+, z-]}, force: [0, 4, 0], case: side}\n",
              &p));
  CHECK(p.n_load_cases == 2 && !strcmp(p.load_case_names[1], "side"));
  CHECK(p.n_forces == 3 && p.forces[2].load_case == 1 && !strcmp(p.forces[1].name, "b"));
  box_model(ctx, &m, 2, 2, 2, NULL, NULL);
  CHECK_OK(ctx, vox_problem_rasterize(ctx, &p, &m));
  CHECK_OK(ctx, vox_model_validate(ctx, &m));
  CHECK(m.n_load_cases == 2 && !strcmp(m.load_case_names[0], "down") &&
        !strcmp(m.load_case_names[1], "side"));
  /* a and b fall on one node: one entry, summed. */
  CHECK_CLOSE(load_at(&m, node_of(&m, 2, 0, 0), 2, 0, &entries), -3, 0);
  CHECK(entries == 1);
  CHECK(count_loads(&m, 2, 0) == 1 && count_loads(&m, 1, 1) == 3 && m.n_loads == 4);
  CHECK_CLOSE(load_at(&m, node_of(&m, 2, 1, 0), 1, 1, &entries), 2, 1e-15);
  CHECK_CLOSE(load_total(&m, 1, 1), 4, 1e-12);
  vox_model_free(&m);
  vox_problem_free(&p);

  /* Default names: one case "case1", unnamed items numbered. */
  CHECK(parse(ctx, "defaults.yaml",
              "voxfe-problem: 1\nmaterial: {E: 1, nu: 0.3}\n"
              "supports: [{region: {face: x-}, fix: [x, y, z]}]\n"
              "loads: [{region: {face: x+}, force: [0, 0, -1]}, "
              "{region: {face: y+}, force: [0, 0, -1]}]\n",
              &p));
  CHECK(p.n_load_cases == 1 && !strcmp(p.load_case_names[0], "case1"));
  CHECK(!strcmp(p.supports[0].name, "support1") && !strcmp(p.forces[1].name, "load2"));
  CHECK(!strcmp(p.material.name, "design") && p.material.conductivity == 1.0);
  vox_problem_free(&p);

  /* A host program's locale with a decimal comma does not change how the
   * file's numbers read (checked where such a locale is installed). */
  if (setlocale(LC_NUMERIC, "de_DE.UTF-8") || setlocale(LC_NUMERIC, "de_DE.utf8")) {
    CHECK(parse(ctx, "locale.yaml", "voxfe-problem: 1\nmaterial: {E: 2.5, nu: 0.3}\n", &p));
    CHECK(p.material.youngs_modulus == 2.5 && p.material.poisson_ratio == 0.3);
    CHECK(*localeconv()->decimal_point == ',');
    vox_problem_free(&p);
    setlocale(LC_NUMERIC, "C");
  }
}

/* ---- compliant mechanisms and weighted load cases ------------------------- */

static void test_mechanism(vox_context *ctx) {
  vox_problem p;
  vox_model m;
  CHECK(parse(ctx, "gripper.yaml",
              "voxfe-problem: 1\n"
              "material: {E: 3000, nu: 0.4}\n"
              "objective: output_displacement\n"
              "supports: [{region: {edge: [x-, z+]}, fix: [x, y, z]}]\n"
              "loads: [{name: f_in, region: {edge: [x-, z-]}, force: [500, 0, 0]}]\n"
              "springs:\n"
              "  - {name: k_in, region: {edge: [x-, z-]}, stiffness: [500, 0, 0]}\n"
              "  - {name: k_out, region: {edge: [x+, z-]}, stiffness: [0, 0, 500]}\n"
              "  - {name: also_in, region: {point: [0, 0, 0]}, stiffness: [10, 0, 0]}\n"
              "outputs:\n"
              "  - {name: jaw, region: {edge: [x+, z-]}, direction: [0, 0, -1]}\n",
              &p));
  CHECK(p.objective == VOX_OBJECTIVE_OUTPUT_DISPLACEMENT && p.n_springs == 3 && p.n_outputs == 1);
  CHECK(!strcmp(p.springs[1].name, "k_out") && p.springs[1].force[2] == 500);
  CHECK(!strcmp(p.outputs[0].name, "jaw") && p.outputs[0].force[2] == -1);
  box_model(ctx, &m, 4, 2, 3, NULL, NULL);
  CHECK_OK(ctx, vox_problem_rasterize(ctx, &p, &m));
  CHECK_OK(ctx, vox_model_validate(ctx, &m));
  CHECK(m.objective == VOX_OBJECTIVE_OUTPUT_DISPLACEMENT && !m.load_case_weights);
  /* springs spread like forces and merge per dof: 3 nodes on each edge,
   * ends half; the point spring adds to the x- edge's first node */
  double total[3] = {0, 0, 0};
  for (size_t i = 0; i < m.n_springs; i++) total[m.springs[i].component] += m.springs[i].stiffness;
  CHECK(m.n_springs == 6);
  CHECK_CLOSE(total[0], 510, 1e-12);
  CHECK_CLOSE(total[2], 500, 1e-12);
  for (size_t i = 0; i < m.n_springs; i++)
    if (m.springs[i].node == node_of(&m, 0, 0, 0)) CHECK_CLOSE(m.springs[i].stiffness, 135, 1e-12);
  /* the outputs: the edge's mean of -u_z */
  double sum = 0;
  CHECK(m.n_outputs == 3);
  for (size_t i = 0; i < m.n_outputs; i++) {
    CHECK(m.outputs[i].component == 2 && m.outputs[i].node % 5 == 4);
    sum += m.outputs[i].weight;
  }
  CHECK_CLOSE(sum, -1, 1e-14);
  vox_model_free(&m);
  vox_problem_free(&p);

  CHECK(parse(ctx, "weights.yaml",
              "voxfe-problem: 1\nmaterial: {E: 1, nu: 0.3}\n"
              "load_cases: [a, b]\nload_case_weights: [0.5, 2]\n"
              "supports: [{region: {face: x-}, fix: [x, y, z]}]\n"
              "loads: [{region: {face: x+}, force: [0, 0, -1], case: a},"
              " {region: {face: x+}, force: [0, 1, 0], case: b}]\n",
              &p));
  CHECK(p.load_case_weights && p.load_case_weights[0] == 0.5 && p.load_case_weights[1] == 2);
  box_model(ctx, &m, 2, 2, 2, NULL, NULL);
  CHECK_OK(ctx, vox_problem_rasterize(ctx, &p, &m));
  CHECK(m.load_case_weights && m.load_case_weights[0] == 0.5 && m.load_case_weights[1] == 2);
  CHECK(m.objective == VOX_OBJECTIVE_COMPLIANCE && m.n_springs == 0 && m.n_outputs == 0);
  vox_model_free(&m);
  vox_problem_free(&p);
}

/* ---- periodic cells ------------------------------------------------------- */

/* `cell: true`, and `cell:` as a mapping of design settings that the model
 * carries to voxfe-optimize; its errors name the line and the key (and the
 * formula's character). */
static void test_cell(vox_context *ctx) {
  vox_problem p;
  vox_model m;
  CHECK(parse(ctx, "plain.yaml", "voxfe-problem: 1\nmaterial: {E: 1, nu: 0.3}\ncell: true\n", &p));
  CHECK(p.cell == 1 && !p.cell_objective[0] && !p.cell_symmetry[0] && !p.cell_expression);
  box_model(ctx, &m, 4, 4, 4, NULL, NULL);
  CHECK_OK(ctx, vox_problem_rasterize(ctx, &p, &m));
  CHECK(!m.cell_objective && !m.cell_expression && !m.cell_symmetry);
  vox_model_free(&m);
  vox_problem_free(&p);

  CHECK(parse(ctx, "custom.yaml",
              "voxfe-problem: 1\nmaterial: {E: 1, nu: 0.3}\n"
              "cell:\n  objective: custom\n  expression: \"-(C44 + C55 + C66)/3\"\n"
              "  symmetry: reflect6\n",
              &p));
  CHECK(p.cell == 1 && !strcmp(p.cell_objective, "custom") && !strcmp(p.cell_symmetry, "reflect6"));
  CHECK(p.cell_expression && !strcmp(p.cell_expression, "-(C44 + C55 + C66)/3"));
  box_model(ctx, &m, 4, 4, 4, NULL, NULL);
  CHECK_OK(ctx, vox_problem_rasterize(ctx, &p, &m));
  CHECK(m.cell_objective && !strcmp(m.cell_objective, "custom"));
  CHECK(m.cell_expression && !strcmp(m.cell_expression, "-(C44 + C55 + C66)/3"));
  CHECK(m.cell_symmetry && !strcmp(m.cell_symmetry, "reflect6"));
  vox_model copy;
  CHECK_OK(ctx, vox_model_copy(ctx, &copy, &m));
  CHECK(copy.cell_expression && copy.cell_expression != m.cell_expression &&
        !strcmp(copy.cell_expression, m.cell_expression));
  vox_model_free(&copy);
  vox_model_free(&m);
  vox_problem_free(&p);

  CHECK(parse(ctx, "bulk.yaml",
              "voxfe-problem: 1\nmaterial: {E: 1, nu: 0.3}\ncell: {objective: bulk}\n", &p));
  CHECK(p.cell == 1 && !strcmp(p.cell_objective, "bulk") && !p.cell_symmetry[0]);
  vox_problem_free(&p);
}

/* ---- errors --------------------------------------------------------------- */

/* Reads `text` as `name`, expecting `status` and a one-line message that
 * begins with the path and `position` (":line:col: ", ":line:" or ": " when
 * there is none) and holds `expected`. */
static void expect_error(vox_context *ctx, const char *name, const char *text, vox_status status,
                         const char *position, const char *expected) {
  vox_problem p;
  const char *path = write_file(name, text);
  char start[1200];
  snprintf(start, sizeof start, "%s%s", path, position);
  vox_status got = read_quietly(ctx, path, &p);
  const char *message = vox_context_message(ctx);
  int ok = got == status && strncmp(message, start, strlen(start)) == 0 &&
           strstr(message, expected) && !strchr(message, '\n');
  if (!ok)
    fprintf(stderr, "%s: got status %d, message \"%s\"; expected status %d, \"%s...%s...\"\n",
            name, got, message, status, start, expected);
  CHECK(ok);
  /* A failed read leaves nothing to free, and freeing is harmless. */
  CHECK(p.n_supports == 0 && p.supports == NULL && p.load_case_names == NULL);
  vox_problem_free(&p);
}

#define HEAD "voxfe-problem: 1\nmaterial: {E: 1, nu: 0.3}\n"
#define CLAMP "supports:\n  - {name: clamped_end, region: {face: x-}, fix: [x, y, z]}\n"

static void test_errors(vox_context *ctx) {
  vox_problem p;
  char path[1024];

  /* Files that cannot be read: VOX_ERR_IO, naming the file. */
  snprintf(path, sizeof path, "%s/no-such-file.yaml", scratch);
  CHECK(read_quietly(ctx, path, &p) == VOX_ERR_IO);
  CHECK(strncmp(vox_context_message(ctx), path, strlen(path)) == 0);
  CHECK(read_quietly(ctx, scratch, &p) == VOX_ERR_IO); /* a directory */
  CHECK(strncmp(vox_context_message(ctx), scratch, strlen(scratch)) == 0);

  /* Periodic cells. */
  expect_error(ctx, "cellword.yaml", HEAD "cell: yes\n", VOX_ERR_FORMAT, ":3:7: ",
               "cell: unknown value 'yes'");
  expect_error(ctx, "cellkey.yaml", HEAD "cell: {objectiv: bulk}\n", VOX_ERR_FORMAT, ":3:8: ",
               "unknown key 'objectiv'");
  expect_error(ctx, "cellobj.yaml", HEAD "cell: {objective: compliance}\n", VOX_ERR_FORMAT,
               ":3:19: ", "cell.objective: unknown objective 'compliance'");
  expect_error(ctx, "cellsym.yaml", HEAD "cell: {symmetry: mirror}\n", VOX_ERR_FORMAT, ":3:18: ",
               "cell.symmetry: unknown symmetry 'mirror'");
  expect_error(ctx, "cellnoexpr.yaml", HEAD "cell: {objective: custom}\n", VOX_ERR_FORMAT,
               ":3:19: ", "'custom' needs 'expression'");
  expect_error(ctx, "cellexprbulk.yaml", HEAD "cell: {objective: bulk, expression: C11}\n",
               VOX_ERR_FORMAT, ":3:25: ", "is the formula of 'objective: custom'");
  expect_error(ctx, "cellbadexpr.yaml",
               HEAD "cell:\n  objective: custom\n  expression: \"C11 + * 2\"\n",
               VOX_ERR_FORMAT, ":5:16: ", "at character 7: expected a number");
  expect_error(ctx, "cellexprlist.yaml",
               HEAD "cell: {objective: custom, expression: [C11]}\n", VOX_ERR_FORMAT, ":3:",
               "cell.expression: must be a formula");

  /* Mechanisms and weights. */
  expect_error(ctx, "noout.yaml", HEAD CLAMP "objective: output_displacement\n", VOX_ERR_FORMAT,
               ":5:12: ", "'output_displacement' needs 'outputs'");
  expect_error(ctx, "outnoobj.yaml",
               HEAD CLAMP "outputs: [{region: {face: x+}, direction: [1, 0, 0]}]\n",
               VOX_ERR_FORMAT, ":5:1: ", "need 'objective: output_displacement'");
  expect_error(ctx, "badobj.yaml", HEAD "objective: displacement\n", VOX_ERR_FORMAT, ":3:12: ",
               "objective");
  expect_error(ctx, "negk.yaml",
               HEAD "springs: [{region: {face: x+}, stiffness: [1, -2, 0]}]\n", VOX_ERR_FORMAT,
               ":3:", "stiffnesses must be >= 0");
  expect_error(ctx, "zerodir.yaml",
               HEAD "objective: output_displacement\n"
                    "outputs: [{region: {face: x+}, direction: [0, 0, 0]}]\n",
               VOX_ERR_FORMAT, ":4:", "must not be all zero");
  expect_error(ctx, "nweights.yaml", HEAD "load_case_weights: [1, 2]\n", VOX_ERR_FORMAT,
               ":3:21: ", "has 2 weight(s) for 1 load case(s)");
  expect_error(ctx, "negweight.yaml", HEAD "load_case_weights: [-1]\n", VOX_ERR_FORMAT, ":3:",
               "must be >= 0");
  expect_error(ctx, "heatspring.yaml",
               "voxfe-problem: 1\nphysics: heat\nmaterial: {conductivity: 1}\n"
               "springs: [{region: {face: x+}, stiffness: [1, 0, 0]}]\n",
               VOX_ERR_FORMAT, ":4:1: ", "is for elasticity");

  /* YAML syntax, through libfyaml's collected diagnostics. */
  expect_error(ctx, "syntax.yaml", HEAD "supports: [1, 2\n", VOX_ERR_FORMAT, ":", "YAML:");
  expect_error(ctx, "dupkey.yaml", HEAD "material: {E: 2, nu: 0.3}\n", VOX_ERR_FORMAT, ":3:1: ",
               "duplicate key");
  expect_error(ctx, "tab.yaml", "voxfe-problem: 1\n\tmaterial: 1\n", VOX_ERR_FORMAT, ":", "YAML:");
  expect_error(ctx, "empty.yaml", "", VOX_ERR_FORMAT, ": ", "no YAML document");
  expect_error(ctx, "comment.yaml", "# nothing here\n", VOX_ERR_FORMAT, ": ", "no YAML document");
  {
    const char binary[] = "voxfe-problem: 1\n\0\x01\x02";
    snprintf(path, sizeof path, "%s/binary.yaml", scratch);
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(binary, 1, sizeof binary, f) == sizeof binary);
    if (f) fclose(f);
    CHECK(read_quietly(ctx, path, &p) == VOX_ERR_FORMAT);
    CHECK(strstr(vox_context_message(ctx), "is not a text file") != NULL);
  }
  expect_error(ctx, "two.yaml", HEAD CLAMP "---\n" HEAD, VOX_ERR_FORMAT, ":6:1: ",
               "more than one YAML document");
  expect_error(ctx, "scalar.yaml", "just some text\n", VOX_ERR_FORMAT, ":1:1: ",
               "must be a YAML mapping");

  /* The version. */
  expect_error(ctx, "noversion.yaml", "material: {E: 1, nu: 0.3}\n", VOX_ERR_FORMAT, ":1:1: ",
               "missing 'voxfe-problem: 1'");
  expect_error(ctx, "version2.yaml", "voxfe-problem: 2\nnew_key: 1\n", VOX_ERR_FORMAT, ":1:16: ",
               "voxfe-problem: unsupported format version 2");
  expect_error(ctx, "versionstr.yaml", "voxfe-problem: one\n", VOX_ERR_FORMAT, ":1:16: ",
               "'one' is not a number");

  /* Keys and types. */
  expect_error(ctx, "unknown.yaml",
               HEAD "supports:\n  - {region: {face: x-}, fix: [x]}\n"
                    "  - region: {face: x+}\n    fixx: [y]\n",
               VOX_ERR_FORMAT, ":6:5: ", "supports[1]: unknown key 'fixx'");
  expect_error(ctx, "toplevel.yaml", HEAD "support: []\n", VOX_ERR_FORMAT, ":3:1: ",
               "unknown key 'support'");
  expect_error(ctx, "nomaterial.yaml", "voxfe-problem: 1\n" CLAMP, VOX_ERR_FORMAT, ":1:1: ",
               "missing 'material'");
  expect_error(ctx, "noE.yaml", "voxfe-problem: 1\nmaterial: {nu: 0.3}\n", VOX_ERR_FORMAT,
               ":2:12: ", "material: missing 'E'");
  expect_error(ctx, "Estring.yaml", "voxfe-problem: 1\nmaterial: {E: \"1\", nu: 0.3}\n",
               VOX_ERR_FORMAT, ":2:16: ", "material.E: must be a number, not a quoted string");
  expect_error(ctx, "Elist.yaml", "voxfe-problem: 1\nmaterial: {E: [1], nu: 0.3}\n",
               VOX_ERR_FORMAT, ":2:", "material.E: must be a number, not a list");
  expect_error(ctx, "Enan.yaml", "voxfe-problem: 1\nmaterial: {E: .nan, nu: 0.3}\n",
               VOX_ERR_FORMAT, ":2:", "is not a number");
  expect_error(ctx, "Eempty.yaml", "voxfe-problem: 1\nmaterial:\n  E:\n  nu: 0.3\n",
               VOX_ERR_FORMAT, ":3:3: ", "material.E: must be a number, not empty");
  expect_error(ctx, "Ezero.yaml", "voxfe-problem: 1\nmaterial: {E: 0, nu: 0.3}\n",
               VOX_ERR_FORMAT, ":2:15: ", "material.E: must be positive");
  expect_error(ctx, "nuhalf.yaml", "voxfe-problem: 1\nmaterial: {E: 1, nu: 0.5}\n",
               VOX_ERR_FORMAT, ":2:22: ", "material.nu: must lie in (-1, 0.5)");
  expect_error(ctx, "numinus1.yaml", "voxfe-problem: 1\nmaterial: {E: 1, nu: -1}\n",
               VOX_ERR_FORMAT, ":2:", "material.nu: must lie in (-1, 0.5)");
  expect_error(ctx, "cond.yaml", "voxfe-problem: 1\nmaterial: {E: 1, nu: 0.3, conductivity: -1}\n",
               VOX_ERR_FORMAT, ":2:", "material.conductivity: must be positive");
  expect_error(ctx, "supmap.yaml", HEAD "supports: {face: x-}\n", VOX_ERR_FORMAT, ":3:",
               "supports: must be a list");

  /* Regions. */
  expect_error(ctx, "face.yaml", HEAD "supports:\n  - {region: {face: x*}, fix: [x]}\n",
               VOX_ERR_FORMAT, ":4:", "supports[0].region.face: unknown face 'x*'");
  expect_error(ctx, "edge.yaml", HEAD "supports:\n  - {region: {edge: [x-, x+]}, fix: [x]}\n",
               VOX_ERR_FORMAT, ":4:", "parallel");
  expect_error(ctx, "edge1.yaml", HEAD "supports:\n  - {region: {edge: [x-]}, fix: [x]}\n",
               VOX_ERR_FORMAT, ":4:", "two faces");
  expect_error(ctx, "shape0.yaml", HEAD "supports:\n  - {region: {}, fix: [x]}\n",
               VOX_ERR_FORMAT, ":4:", "needs one of face");
  expect_error(ctx, "shape2.yaml", HEAD "supports:\n  - {region: {face: x-, label: 1}, fix: [x]}\n",
               VOX_ERR_FORMAT, ":4:", "has both 'face' and 'label'");
  expect_error(ctx, "radius.yaml",
               HEAD CLAMP "passive:\n  - {region: {sphere: {center: [1, 1, 1], radius: -2}}, "
                          "type: void}\n",
               VOX_ERR_FORMAT, ":6:", "passive[0].region.sphere.radius: must not be negative");
  expect_error(ctx, "center.yaml",
               HEAD CLAMP "passive:\n  - {region: {sphere: {center: [1, 1], radius: 2}}, "
                          "type: void}\n",
               VOX_ERR_FORMAT, ":6:", "center: must be a list of three numbers");
  expect_error(ctx, "boxorder.yaml",
               HEAD CLAMP "passive:\n  - {region: {box: {min: [0, 2, 0], max: [1, 1, 1]}}, "
                          "type: void}\n",
               VOX_ERR_FORMAT, ":6:", "min 2 is greater than max 1 along y");
  expect_error(ctx, "boxmissing.yaml",
               HEAD CLAMP "passive:\n  - {region: {box: {min: [0, 2, 0]}}, type: void}\n",
               VOX_ERR_FORMAT, ":6:", "box: missing 'max'");
  expect_error(ctx, "label0.yaml", HEAD "supports:\n  - {region: {label: 0}, fix: [x]}\n",
               VOX_ERR_FORMAT, ":4:", "must be a whole number from 1 to 255");
  expect_error(ctx, "pointinf.yaml",
               HEAD "supports:\n  - {region: {point: [0, 0, .inf]}, fix: [x]}\n",
               VOX_ERR_FORMAT, ":4:", "must be a finite number");

  /* Supports, loads, passive parts, load cases. */
  expect_error(ctx, "nofix.yaml", HEAD "supports:\n  - {name: s, region: {face: x-}}\n",
               VOX_ERR_FORMAT, ":4:", "needs 'fix' or 'displacement'");
  expect_error(ctx, "fixcomp.yaml", HEAD "supports:\n  - {region: {face: x-}, fix: [x, w]}\n",
               VOX_ERR_FORMAT, ":4:", "unknown component 'w'");
  expect_error(ctx, "both.yaml",
               HEAD "supports:\n  - {region: {face: x-}, fix: [x], displacement: {x: 1}}\n",
               VOX_ERR_FORMAT, ":4:", "x is both in 'fix' and 'displacement'");
  expect_error(ctx, "dupname.yaml",
               HEAD "supports:\n  - {name: a, region: {face: x-}, fix: [x]}\n"
                    "  - {name: a, region: {face: x+}, fix: [x]}\n",
               VOX_ERR_FORMAT, ":5:", "already used by supports[0]");
  expect_error(ctx, "case.yaml",
               HEAD "load_cases: [tip]\n" CLAMP
                    "loads:\n  - {region: {face: x+}, force: [0, 0, 1], case: tipp}\n",
               VOX_ERR_FORMAT, ":7:50: ",
               "loads[0].case: unknown load case 'tipp' (declared: tip)");
  expect_error(ctx, "nocase.yaml",
               HEAD "load_cases: [a, b]\n" CLAMP
                    "loads:\n  - {region: {face: x+}, force: [0, 0, 1]}\n",
               VOX_ERR_FORMAT, ":7:", "needs 'case'");
  expect_error(ctx, "unused.yaml",
               HEAD "load_cases: [a, b]\n" CLAMP
                    "loads:\n  - {region: {face: x+}, force: [0, 0, 1], case: a}\n",
               VOX_ERR_FORMAT, ":3:17: ", "load_cases[1]: load case 'b' has no load");
  expect_error(ctx, "dupcase.yaml", HEAD "load_cases: [a, a]\n", VOX_ERR_FORMAT, ":3:17: ",
               "declared twice");
  expect_error(ctx, "force.yaml", HEAD CLAMP "loads:\n  - {region: {face: x+}, force: 1}\n",
               VOX_ERR_FORMAT, ":6:", "loads[0].force: must be a list of three numbers");
  expect_error(ctx, "noforce.yaml", HEAD CLAMP "loads:\n  - {region: {face: x+}}\n",
               VOX_ERR_FORMAT, ":6:", "missing 'force'");
  expect_error(ctx, "type.yaml", HEAD CLAMP "passive:\n  - {region: {face: x+}, type: hollow}\n",
               VOX_ERR_FORMAT, ":6:", "unknown type 'hollow' (one of solid, void)");
  expect_error(ctx, "longname.yaml",
               HEAD "supports:\n  - {name: "
                    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
                    ", region: {face: x-}, fix: [x]}\n",
               VOX_ERR_FORMAT, ":4:", "is longer than 63 characters");

  /* Rasterize errors name the item. */
  vox_model m;
  CHECK(parse(ctx, "outside.yaml",
              HEAD CLAMP "loads:\n  - {name: tip, region: {point: [9, 0, 0]}, force: [0, 0, 1]}\n",
              &p));
  box_model(ctx, &m, 2, 2, 2, NULL, NULL);
  CHECK(vox_problem_rasterize(ctx, &p, &m) == VOX_ERR_FORMAT);
  CHECK(strncmp(vox_context_message(ctx), "load 'tip': point (9, 0, 0) lies outside the grid",
                49) == 0);
  vox_model_free(&m);
  vox_problem_free(&p);
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s workflows|regions|passive|supports|loads|errors|mechanism|cell "
                    "<workflows dir> <scratch dir>\n", argv[0]);
    return 2;
  }
  workflows = argv[2];
  scratch = argv[3];
  mkdir(scratch, 0755);
  vox_context *ctx;
  if (vox_context_create(&ctx)) return 2;
  if (!strcmp(argv[1], "workflows")) test_workflows(ctx);
  else if (!strcmp(argv[1], "regions")) test_regions(ctx);
  else if (!strcmp(argv[1], "passive")) test_passive(ctx);
  else if (!strcmp(argv[1], "supports")) test_supports(ctx);
  else if (!strcmp(argv[1], "loads")) test_loads(ctx);
  else if (!strcmp(argv[1], "errors")) test_errors(ctx);
  else if (!strcmp(argv[1], "mechanism")) test_mechanism(ctx);
  else if (!strcmp(argv[1], "cell")) test_cell(ctx);
  else {
    fprintf(stderr, "unknown part '%s'\n", argv[1]);
    check_failures++;
  }
  vox_context_destroy(ctx);
  CHECK_DONE();
}
