/* SPDX-License-Identifier: BSD-3-Clause */
/* The CalculiX / Abaqus deck writer (vox_write_inp).
 *
 *   test_export_inp write DIR    writes cantilever.inp and design.inp into DIR
 *                                (created if missing) and checks the failures:
 *                                a bad output path, nothing kept, invalid
 *                                arguments; each must give a one-line message
 *                                and leave no file (no temporary either).
 *   test_export_inp compare DIR  after check_inp.sh has run ccx on the decks:
 *                                reads ccx's .dat (*NODE PRINT) and compares
 *                                the displacements of the loaded nodes and the
 *                                total reaction of the supports with voxfe's
 *                                own solve of the same models (rtol 1e-10).
 *
 * Both use exact trilinear bricks (C3D8: 2x2x2 Gauss points, exact on a box),
 * so the two solutions differ by the solvers' precision and by the 7
 * significant digits of ccx's .dat only. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"
#include "export/output_dir.h"
#include "voxfe/voxfe.h"
#include "voxfe/inp.h"

static int64_t node(const vox_grid *g, int64_t i, int64_t j, int64_t k) {
  return (k * (g->ny + 1) + j) * (g->nx + 1) + i;
}

static int64_t element(const vox_grid *g, int64_t i, int64_t j, int64_t k) {
  return (k * g->ny + j) * g->nx + i;
}

/* --- the models ------------------------------------------------------------------ */

/* An 8x3x3 cantilever of non-cubic voxels away from the origin, clamped at
 * x-: label 1 (E 1000, nu 0.3) with a stiffer label 2 (E 3000, nu 0.3: voxfe solves one nu yet) in
 * the last two layers, an empty voxel inside and one at the far top corner
 * (whose corner node then belongs to no element: a force and a constraint on
 * it must be left out of the deck, and voxfe holds such a node at zero).
 * A prescribed displacement of -0.002 mm in z at (4,0,0). Case 1: -1 N in z
 * spread over the far bottom edge; case 2: +0.5 N in y at (8,0,3), given as
 * two forces that must be summed, and -0.25 N in x at (8,3,0); case 3: no
 * force, only the prescribed displacement (the forces of the earlier steps
 * must not carry over in ccx). */
static void make_cantilever(vox_context *ctx, vox_model *m) {
  vox_grid g = {.nx = 8, .ny = 3, .nz = 3, .voxel_size = {1.0, 0.5, 0.75}, .origin = {-2, 1, 0.5}};
  CHECK_OK(ctx, vox_model_init(ctx, m, &g));
  m->title = strdup("inp test cantilever\nsecond line");
  vox_material soft = {.label = 1, .name = "soft\nbody", .youngs_modulus = 1000, .poisson_ratio = 0.3};
  vox_material stiff = {.label = 2, .name = "stiff end", .role = VOX_ROLE_SOLID,
                        .youngs_modulus = 3000, .poisson_ratio = 0.3};
  /* The table out of label order: the deck is ordered by label. */
  CHECK_OK(ctx, vox_model_add_material(ctx, m, &stiff));
  CHECK_OK(ctx, vox_model_add_material(ctx, m, &soft));
  for (int64_t k = 0; k < g.nz; k++)
    for (int64_t j = 0; j < g.ny; j++)
      for (int64_t i = 0; i < g.nx; i++) m->label[element(&g, i, j, k)] = i >= 6 ? 2 : 1;
  m->label[element(&g, 3, 1, 1)] = 0;
  m->label[element(&g, 7, 2, 2)] = 0;
  for (int64_t k = 0; k <= g.nz; k++)
    for (int64_t j = 0; j <= g.ny; j++)
      for (int c = 0; c < 3; c++) CHECK_OK(ctx, vox_model_add_constraint(ctx, m, node(&g, 0, j, k), c, 0));
  CHECK_OK(ctx, vox_model_add_constraint(ctx, m, node(&g, 4, 0, 0), 2, -0.002));
  CHECK_OK(ctx, vox_model_add_constraint(ctx, m, node(&g, 8, 3, 3), 0, 0)); /* dropped */
  CHECK_OK(ctx, vox_model_set_load_cases(ctx, m, 3));
  snprintf(m->load_case_names[0], VOX_NAME_MAX, "tip down");
  snprintf(m->load_case_names[1], VOX_NAME_MAX, "side\tpush");
  snprintf(m->load_case_names[2], VOX_NAME_MAX, "no force");
  for (int64_t j = 0; j <= g.ny; j++)
    CHECK_OK(ctx, vox_model_add_load(ctx, m, node(&g, 8, j, 0), 2, 0, -1.0 / (double)(g.ny + 1)));
  CHECK_OK(ctx, vox_model_add_load(ctx, m, node(&g, 8, 3, 3), 2, 0, -5.0)); /* dropped */
  CHECK_OK(ctx, vox_model_add_load(ctx, m, node(&g, 8, 0, 3), 1, 1, 0.2));
  CHECK_OK(ctx, vox_model_add_load(ctx, m, node(&g, 8, 3, 0), 0, 1, -0.25));
  CHECK_OK(ctx, vox_model_add_load(ctx, m, node(&g, 8, 0, 3), 1, 1, 0.3));
}

/* The cantilever as an optimized design: a density everywhere, low (0.2) in
 * a groove along the top (j = 1, k = 2, 2 <= i <= 5) and, at threshold 0.5,
 * one voxel exactly on it (kept) and one just below (dropped); the empty
 * voxels get density 1 (label 0 is never written). */
static void make_design(vox_context *ctx, vox_model *m, double threshold) {
  make_cantilever(ctx, m);
  const vox_grid *g = &m->grid;
  int64_t ne = vox_grid_elements(g);
  m->density = malloc((size_t)ne * sizeof *m->density);
  CHECK(m->density != NULL);
  for (int64_t e = 0; e < ne; e++) m->density[e] = 0.9;
  for (int64_t i = 2; i <= 5; i++) m->density[element(g, i, 1, 2)] = 0.2;
  m->density[element(g, 1, 2, 2)] = threshold;
  m->density[element(g, 5, 0, 2)] = nextafter(threshold, 0);
  m->density[element(g, 3, 1, 1)] = 1;
  m->density[element(g, 7, 2, 2)] = 1;
  m->stage = VOX_STAGE_DESIGN;
}

/* The solid/void model the design deck stands for: labels of the dropped
 * voxels set to 0, no density. */
static void design_as_solid(const vox_model *design, double threshold, vox_model *solid) {
  vox_context *ctx = NULL;
  CHECK(vox_context_create(&ctx) == VOX_OK);
  CHECK_OK(ctx, vox_model_copy(ctx, solid, design));
  int64_t ne = vox_grid_elements(&solid->grid);
  for (int64_t e = 0; e < ne; e++)
    if (!(solid->density[e] >= threshold)) solid->label[e] = 0;
  free(solid->density);
  solid->density = NULL;
  vox_context_destroy(ctx);
}

static const double design_threshold = 0.5;

/* --- write mode --------------------------------------------------------------- */

static int message_is_one_line(vox_context *ctx, const char *start, const char *part) {
  const char *msg = vox_context_message(ctx);
  int ok = strncmp(msg, start, strlen(start)) == 0 && strstr(msg, part) && !strchr(msg, '\n');
  if (!ok) fprintf(stderr, "unexpected message: '%s' (wanted '%s...%s')\n", msg, start, part);
  return ok;
}

static void test_failures(vox_context *ctx) {
  vox_model m;
  make_cantilever(ctx, &m);

  /* A folder that does not exist. */
  OUT_PATH(missing, "no/such/folder/x.inp");
  CHECK(vox_write_inp(ctx, missing, &m, 0.5) == VOX_ERR_IO);
  CHECK(message_is_one_line(ctx, missing, "cannot create a temporary file beside it"));
  CHECK(!file_exists(missing));

  /* A folder in the way: the temporary file is written, the rename fails,
   * the temporary file must go and the folder stay. */
  OUT_PATH(folder, "a_folder.inp");
  mkdir(folder, 0777);
  CHECK(vox_write_inp(ctx, folder, &m, 0.5) == VOX_ERR_IO);
  CHECK(message_is_one_line(ctx, folder, "cannot write"));
  struct stat st;
  CHECK(stat(folder, &st) == 0 && S_ISDIR(st.st_mode));
  CHECK(count_temporaries() == 0);

  /* Nothing kept: all labels 0. */
  OUT_PATH(empty, "empty.inp");
  vox_model none;
  vox_grid g = {.nx = 2, .ny = 2, .nz = 2, .voxel_size = {1, 1, 1}};
  CHECK_OK(ctx, vox_model_init(ctx, &none, &g));
  CHECK(vox_write_inp(ctx, empty, &none, 0.5) == VOX_ERR_INVALID_ARGUMENT);
  CHECK(message_is_one_line(ctx, empty, "every voxel has label 0"));
  CHECK(!file_exists(empty));
  vox_model_free(&none);

  /* Nothing kept: no density reaches the threshold. */
  vox_model design;
  make_design(ctx, &design, design_threshold);
  CHECK(vox_write_inp(ctx, empty, &design, 1.5) == VOX_ERR_INVALID_ARGUMENT);
  CHECK(message_is_one_line(ctx, empty, "the highest is 1"));
  CHECK(!file_exists(empty));
  /* ... or only voxels of label 0 reach it. */
  for (int64_t e = 0; e < vox_grid_elements(&design.grid); e++)
    if (design.label[e]) design.density[e] = 0.1;
  CHECK(vox_write_inp(ctx, empty, &design, 0.5) == VOX_ERR_INVALID_ARGUMENT);
  CHECK(message_is_one_line(ctx, empty, "label 0"));
  CHECK(vox_write_inp(ctx, empty, &design, NAN) == VOX_ERR_INVALID_ARGUMENT);
  CHECK(message_is_one_line(ctx, empty, "not a number"));
  CHECK(!file_exists(empty));
  vox_model_free(&design);

  /* Invalid arguments. */
  CHECK(vox_write_inp(ctx, "", &m, 0.5) == VOX_ERR_INVALID_ARGUMENT);
  CHECK(vox_write_inp(ctx, NULL, &m, 0.5) == VOX_ERR_INVALID_ARGUMENT);
  CHECK(vox_write_inp(ctx, empty, NULL, 0.5) == VOX_ERR_INVALID_ARGUMENT);
  m.label[0] = 9; /* no material */
  CHECK(vox_write_inp(ctx, empty, &m, 0.5) == VOX_ERR_INVALID_ARGUMENT);
  CHECK(message_is_one_line(ctx, empty, "label 9"));
  CHECK(!file_exists(empty));
  CHECK(count_temporaries() == 0);
  vox_model_free(&m);
}

/* Counts the data lines under keyword lines that start with `keyword`. */
static int64_t count_data_lines(const char *path, const char *keyword) {
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  char line[512];
  int64_t n = 0;
  int in = 0;
  while (fgets(line, sizeof line, f)) {
    if (line[0] == '*' && line[1] == '*') continue;
    if (line[0] == '*') in = strncmp(line, keyword, strlen(keyword)) == 0;
    else if (in) n++;
  }
  fclose(f);
  return n;
}

static void test_write(vox_context *ctx) {
  vox_model m;
  make_cantilever(ctx, &m);
  OUT_PATH(path, "cantilever.inp");
  /* Replaces an existing file. */
  FILE *old = fopen(path, "w");
  if (old) fputs("old\n", old), fclose(old);
  CHECK_OK(ctx, vox_write_inp(ctx, path, &m, 0.5));
  CHECK(count_data_lines(path, "*ELEMENT") == 8 * 3 * 3 - 2);
  CHECK(count_data_lines(path, "*NODE,") == 9 * 4 * 4 - 1);
  CHECK(count_data_lines(path, "*CLOAD") == 4 + 2); /* the dropped one out, two summed */
  CHECK(count_data_lines(path, "*BOUNDARY") == 16 * 3 + 1);
  CHECK(count_data_lines(path, "*MATERIAL") == 0);
  CHECK(count_data_lines(path, "*ELASTIC") == 2);
  vox_model_free(&m);

  vox_model design;
  make_design(ctx, &design, design_threshold);
  OUT_PATH(design_path, "design.inp");
  CHECK_OK(ctx, vox_write_inp(ctx, design_path, &design, design_threshold));
  CHECK(count_data_lines(design_path, "*ELEMENT") == 8 * 3 * 3 - 2 - 4 - 1);
  vox_model_free(&design);
  CHECK(count_temporaries() == 0);
}

/* --- compare mode --------------------------------------------------------------- */

typedef struct ccx_result {
  int64_t n_nodes;
  int64_t *grid_node;   /* deck node id -> grid node */
  int n_cases;
  double (*u)[3];       /* n_cases x (n_nodes + 1): U of the printed nodes, NAN elsewhere */
  double (*rf)[3];      /* n_cases: total RF of SUPPORTS */
  int n_rf;
} ccx_result;

/* The deck's *NODE block: deck id -> grid node, from the coordinates. */
static int read_deck_nodes(const char *path, const vox_grid *g, ccx_result *r) {
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  int64_t nn = vox_grid_nodes(g);
  r->grid_node = malloc((size_t)(nn + 1) * sizeof *r->grid_node);
  char line[512];
  int in = 0;
  r->n_nodes = 0;
  while (fgets(line, sizeof line, f)) {
    if (line[0] == '*') {
      in = strncmp(line, "*NODE,", 6) == 0;
      continue;
    }
    if (!in) continue;
    long long id;
    double x[3];
    if (sscanf(line, "%lld, %lf, %lf, %lf", &id, &x[0], &x[1], &x[2]) != 4) return -1;
    if (id != r->n_nodes + 1 || id > nn) return -1;
    int64_t index[3];
    for (int a = 0; a < 3; a++) {
      double t = (x[a] - g->origin[a]) / g->voxel_size[a];
      index[a] = llround(t);
      if (fabs(t - (double)index[a]) > 1e-12) return -1;
    }
    r->grid_node[id] = node(g, index[0], index[1], index[2]);
    r->n_nodes = id;
  }
  fclose(f);
  return 0;
}

/* ccx's .dat: blocks "displacements (vx,vy,vz) for set LOADED_<c> and time
 * ..." of lines "<node> <ux> <uy> <uz>", and "total force (fx,fy,fz) for set
 * SUPPORTS and time ..." followed by one line "<fx> <fy> <fz>", one per step. */
static int read_dat(const char *path, ccx_result *r) {
  FILE *f = fopen(path, "r");
  if (!f) {
    fprintf(stderr, "%s: %s\n", path, strerror(errno));
    return -1;
  }
  r->u = malloc((size_t)r->n_cases * (size_t)(r->n_nodes + 1) * sizeof *r->u);
  r->rf = calloc((size_t)r->n_cases, sizeof *r->rf);
  for (int64_t v = 0; v < r->n_cases * (r->n_nodes + 1); v++) r->u[v][0] = r->u[v][1] = r->u[v][2] = NAN;
  char line[512];
  enum { NONE, DISP, FORCE } block = NONE;
  int c = -1;
  r->n_rf = 0;
  while (fgets(line, sizeof line, f)) {
    int set_case;
    const char *set = strstr(line, "for set ");
    if (strstr(line, "displacements (vx,vy,vz)") && set &&
        sscanf(set, "for set LOADED_%d", &set_case) == 1) {
      block = DISP;
      c = set_case - 1;
      if (c < 0 || c >= r->n_cases) return -1;
      continue;
    }
    if (strstr(line, "total force (fx,fy,fz)") && set && strncmp(set, "for set SUPPORTS", 16) == 0) {
      block = FORCE;
      continue;
    }
    if (strspn(line, " \t\r\n") == strlen(line)) continue; /* blank */
    double a, b, d, e;
    if (block == DISP && sscanf(line, "%lf %lf %lf %lf", &a, &b, &d, &e) == 4) {
      int64_t id = (int64_t)a;
      if (id < 1 || id > r->n_nodes) return -1;
      double *u = r->u[(int64_t)c * (r->n_nodes + 1) + id];
      u[0] = b, u[1] = d, u[2] = e;
    } else if (block == FORCE && sscanf(line, "%lf %lf %lf", &a, &b, &d) == 3) {
      if (r->n_rf >= r->n_cases) return -1;
      r->rf[r->n_rf][0] = a, r->rf[r->n_rf][1] = b, r->rf[r->n_rf][2] = d;
      r->n_rf++;
      block = NONE;
    } else {
      block = NONE;
    }
  }
  fclose(f);
  return 0;
}

static void ccx_result_free(ccx_result *r) {
  free(r->grid_node);
  free(r->u);
  free(r->rf);
}

/* voxfe's reaction: K u summed over the constrained nodes (every component),
 * as ccx's RF (no force acts on them). *largest: the largest component of a
 * single node's reaction, the scale of the total when that sums to ~0. */
static void voxfe_reaction(const vox_model *m, const double *u, double rf[3], double *largest) {
  const vox_grid *g = &m->grid;
  int64_t nn = vox_grid_nodes(g), px = g->nx + 1, py = g->ny + 1;
  double *f = calloc((size_t)(3 * nn), sizeof *f);
  char *support = calloc((size_t)nn, 1);
  double ke[24 * 24];
  for (int64_t e = 0; e < vox_grid_elements(g); e++) {
    if (!m->label[e]) continue;
    const vox_material *mat = vox_model_material(m, m->label[e]);
    CHECK(vox_hex8_elasticity(mat->youngs_modulus, mat->poisson_ratio, g->voxel_size, ke) == 0);
    int64_t i = e % g->nx, j = (e / g->nx) % g->ny, k = e / (g->nx * g->ny), dof[24];
    for (int a = 0; a < 8; a++)
      for (int c = 0; c < 3; c++)
        dof[3 * a + c] = 3 * (((k + vox_hex8_corner[a][2]) * py + j + vox_hex8_corner[a][1]) * px +
                              i + vox_hex8_corner[a][0]) + c;
    for (int r = 0; r < 24; r++)
      for (int s = 0; s < 24; s++) f[dof[r]] += ke[24 * r + s] * u[dof[s]];
  }
  for (size_t c = 0; c < m->n_constraints; c++) support[m->constraints[c].node] = 1;
  rf[0] = rf[1] = rf[2] = 0;
  *largest = 0;
  for (int64_t n = 0; n < nn; n++)
    if (support[n])
      for (int c = 0; c < 3; c++) rf[c] += f[3 * n + c], *largest = fmax(*largest, fabs(f[3 * n + c]));
  free(f);
  free(support);
}

/* Solves `m` with voxfe, reads ccx's results of `deck`, compares. */
static void compare(vox_context *ctx, vox_backend *be, const char *name, const vox_model *m) {
  const vox_grid *g = &m->grid;
  int64_t nn = vox_grid_nodes(g);
  double *u = calloc((size_t)(m->n_load_cases * nn * 3), sizeof *u);
  vox_solve_result results[8];
  vox_solver_options opt;
  vox_solver_options_default(&opt);
  opt.rtol = 1e-10;
  CHECK_OK(ctx, vox_solve_elasticity(ctx, be, m, 0, 3, 1e-9, &opt, u, results));
  for (int c = 0; c < m->n_load_cases; c++) CHECK(results[c].reason == VOX_CONVERGED_RTOL);

  char deck[sizeof out_dir + 64], dat[sizeof out_dir + 64];
  snprintf(deck, sizeof deck, "%s/%s.inp", out_dir, name);
  snprintf(dat, sizeof dat, "%s/%s.dat", out_dir, name);
  ccx_result r = {.n_cases = m->n_load_cases};
  const int failures_before = check_failures;
  CHECK(read_deck_nodes(deck, g, &r) == 0);
  CHECK(read_dat(dat, &r) == 0);
  CHECK(r.n_rf == m->n_load_cases);
  if (check_failures > failures_before) {
    ccx_result_free(&r);
    free(u);
    return;
  }

  for (int c = 0; c < m->n_load_cases; c++) {
    const double *uc = u + (int64_t)c * nn * 3;
    double umax = 0, worst = 0;
    int printed = 0;
    for (int64_t n = 0; n < 3 * nn; n++) umax = fmax(umax, fabs(uc[n]));
    for (int64_t id = 1; id <= r.n_nodes; id++) {
      const double *ux = r.u[(int64_t)c * (r.n_nodes + 1) + id];
      if (isnan(ux[0])) continue;
      printed++;
      for (int a = 0; a < 3; a++) worst = fmax(worst, fabs(ux[a] - uc[3 * r.grid_node[id] + a]));
    }
    /* The loaded nodes of the deck: those of the case's forces, less the
     * dropped node (8,3,3) of case 1. */
    int expected_printed = 0;
    char *seen = calloc((size_t)nn, 1);
    for (size_t q = 0; q < m->n_loads; q++)
      if (m->loads[q].load_case == c && !seen[m->loads[q].node] &&
          m->loads[q].node != node(g, 8, 3, 3))
        seen[m->loads[q].node] = 1, expected_printed++;
    free(seen);
    CHECK(printed == expected_printed);

    double rf[3], load[3] = {0, 0, 0}, rf_scale, rf_worst = 0;
    voxfe_reaction(m, uc, rf, &rf_scale);
    for (size_t q = 0; q < m->n_loads; q++)
      if (m->loads[q].load_case == c && m->loads[q].node != node(g, 8, 3, 3))
        load[m->loads[q].component] += m->loads[q].value;
    for (int a = 0; a < 3; a++) {
      rf_scale = fmax(rf_scale, fabs(rf[a]));
      rf_worst = fmax(rf_worst, fabs(r.rf[c][a] - rf[a]));
    }
    printf("%s case %d: %d loaded nodes, max |u| %.6e mm, max |u_ccx - u_voxfe| %.3e "
           "(%.2e relative)\n",
           name, c + 1, printed, umax, worst, worst / umax);
    printf("%s case %d: reaction voxfe (%.9e, %.9e, %.9e) N, ccx (%.6e, %.6e, %.6e) N, "
           "max difference %.3e (%.2e of the largest nodal reaction); applied load (%.3g, %.3g, %.3g) N\n",
           name, c + 1, rf[0], rf[1], rf[2], r.rf[c][0], r.rf[c][1], r.rf[c][2], rf_worst,
           rf_worst / rf_scale, load[0], load[1], load[2]);
    /* ccx prints 7 significant digits: 1e-5 of the largest value leaves room
     * for that and for the solvers' own rounding. */
    CHECK(worst <= 1e-5 * umax);
    CHECK(rf_worst <= 1e-5 * rf_scale);
  }
  ccx_result_free(&r);
  free(u);
}

static void test_compare(vox_context *ctx) {
  vox_backend *be = NULL;
  CHECK_OK(ctx, vox_backend_create(ctx, VOX_DEVICE_CPU, &be));
  if (!be) return;
  vox_model m;
  make_cantilever(ctx, &m);
  compare(ctx, be, "cantilever", &m);
  vox_model_free(&m);

  vox_model design, solid;
  make_design(ctx, &design, design_threshold);
  design_as_solid(&design, design_threshold, &solid);
  compare(ctx, be, "design", &solid);
  vox_model_free(&design);
  vox_model_free(&solid);
  vox_backend_destroy(be);
}

int main(int argc, char **argv) {
  if (argc != 3 || (strcmp(argv[1], "write") && strcmp(argv[1], "compare"))) {
    fprintf(stderr, "usage: %s write|compare DIR\n", argv[0]);
    return 2;
  }
  snprintf(out_dir, sizeof out_dir, "%s", argv[2]);
  vox_context *ctx = NULL;
  if (vox_context_create(&ctx) != VOX_OK) return 1;
  vox_context_set_threads(ctx, 2);
  if (strcmp(argv[1], "write") == 0) {
    mkdir(out_dir, 0777);
    test_write(ctx);
    test_failures(ctx);
  } else {
    test_compare(ctx);
  }
  vox_context_destroy(ctx);
  CHECK_DONE();
}
