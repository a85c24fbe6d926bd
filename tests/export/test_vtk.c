/* SPDX-License-Identifier: BSD-3-Clause */
/* Writes small models as .vti and .vtu, and a sphere's surface as .vtp, into a folder, with expected.json
 * describing the models, for check_vtk.py to read back with VTK; and checks
 * the writers' failures here: an unwritable folder, no cell kept, a write
 * failing halfway, invalid models. A failure must return a clear message,
 * leave no file (no temporary either) and leave an existing file untouched.
 *
 * usage: test_export_vtk OUTPUT_FOLDER  (created if missing; files replaced) */
#include <dirent.h>
#include <errno.h>
#include <libxml/globals.h>
#include <libxml/xmlerror.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "export/output_dir.h"
#include "voxfe/model.h"
#include "voxfe/surface.h"
#include "voxfe/vtk.h"

/* --- the models (check_vtk.py reads them from expected.json) ---------------- */

static void add_materials(vox_context *ctx, vox_model *m) {
  vox_material steel = {
      .label = 1, .name = "steel", .youngs_modulus = 210000, .poisson_ratio = 0.3};
  vox_material soft = {.label = 2, .name = "soft", .youngs_modulus = 1000, .poisson_ratio = 0.4};
  CHECK_OK(ctx, vox_model_add_material(ctx, m, &steel));
  CHECK_OK(ctx, vox_model_add_material(ctx, m, &soft));
}

/* 4x3x2, non-unit voxels and origin, an empty cell every fourth, densities on
 * both sides of the threshold 0.5 (one exactly on it), two named load cases
 * whose names need XML escaping. */
static void make_small(vox_context *ctx, vox_model *m) {
  vox_grid g = {
      .nx = 4, .ny = 3, .nz = 2, .voxel_size = {0.5, 0.25, 2.0}, .origin = {-1.0, 2.0, 0.5}};
  CHECK_OK(ctx, vox_model_init(ctx, m, &g));
  add_materials(ctx, m);
  int64_t ne = vox_grid_elements(&g), nn = vox_grid_nodes(&g);
  m->density = malloc((size_t)ne * sizeof *m->density);
  CHECK(m->density != NULL);
  for (int64_t e = 0; e < ne; e++) {
    m->label[e] = e % 4 == 3 ? 0 : (uint8_t)(1 + e % 2);
    m->density[e] = e % 4 == 3 ? 0.0 : 0.05 + 0.9 * (double)((e * 7) % 11) / 10.0;
  }
  m->density[5] = 0.5; /* kept: the test is >= */
  CHECK_OK(ctx, vox_model_set_load_cases(ctx, m, 2));
  snprintf(m->load_case_names[0], VOX_NAME_MAX, "lift & <push>");
  snprintf(m->load_case_names[1], VOX_NAME_MAX, "side \"x\"");
  m->displacement = malloc((size_t)(2 * nn * 3) * sizeof *m->displacement);
  CHECK(m->displacement != NULL);
  for (int64_t v = 0; v < 2 * nn * 3; v++) m->displacement[v] = 1e-3 * (double)v - 0.05 + 1e-7 / 3;
  m->stage = VOX_STAGE_DESIGN;
  /* Supports: node 0 fixed in x and z (two entries), the last node in all
   * three, node 7 in y twice. Loads: node 59 pulled in case 1 by two entries
   * that add up, pushed in case 2; node 36 (in the .vtu) in case 2 only. */
  CHECK_OK(ctx, vox_model_add_constraint(ctx, m, nn - 1, 0, 0.0));
  CHECK_OK(ctx, vox_model_add_constraint(ctx, m, 0, 2, 0.0));
  CHECK_OK(ctx, vox_model_add_constraint(ctx, m, 7, 1, 0.0));
  CHECK_OK(ctx, vox_model_add_constraint(ctx, m, nn - 1, 1, 0.0));
  CHECK_OK(ctx, vox_model_add_constraint(ctx, m, 0, 0, 0.0));
  CHECK_OK(ctx, vox_model_add_constraint(ctx, m, 7, 1, 0.1));
  CHECK_OK(ctx, vox_model_add_constraint(ctx, m, nn - 1, 2, 0.0));
  CHECK_OK(ctx, vox_model_add_load(ctx, m, 59, 2, 0, -10.0));
  CHECK_OK(ctx, vox_model_add_load(ctx, m, 36, 0, 1, 2.5));
  CHECK_OK(ctx, vox_model_add_load(ctx, m, 59, 2, 0, -5.0));
  CHECK_OK(ctx, vox_model_add_load(ctx, m, 59, 1, 1, 7.0));
  m->title = strdup("small & <odd> \"title\" \xc2\xb5m");
  CHECK(m->title != NULL);
}

/* 32x32x32: the label array is exactly one full 32 KiB block, the density
 * exactly four; the displacement (one case, default name) ends in a partial
 * block. Some cells are empty. */
static void make_blocks(vox_context *ctx, vox_model *m) {
  vox_grid g = {.nx = 32, .ny = 32, .nz = 32, .voxel_size = {0.1, 0.2, 0.3}, .origin = {0, 0, 0}};
  CHECK_OK(ctx, vox_model_init(ctx, m, &g));
  add_materials(ctx, m);
  int64_t ne = vox_grid_elements(&g), nn = vox_grid_nodes(&g);
  m->density = malloc((size_t)ne * sizeof *m->density);
  CHECK(m->density != NULL);
  for (int64_t e = 0; e < ne; e++) {
    int64_t i = e % 32, j = (e / 32) % 32, k = e / 1024;
    m->label[e] = (i + j + k) % 7 == 0 ? 0 : (uint8_t)(1 + (k >= 16));
    m->density[e] = m->label[e] ? (double)((i * j + k) % 100) / 99.0 : 0.0;
  }
  CHECK_OK(ctx, vox_model_set_load_cases(ctx, m, 1));
  m->displacement = malloc((size_t)(nn * 3) * sizeof *m->displacement);
  CHECK(m->displacement != NULL);
  for (int64_t v = 0; v < nn * 3; v++) m->displacement[v] = sin(1e-3 * (double)v);
  m->stage = VOX_STAGE_DESIGN;
  /* The face x = 0 fixed, the face x = 32 loaded: sparse lists that span many
   * 32 KiB blocks of the point arrays (a block boundary falls inside them). */
  for (int64_t k = 0; k <= 32; k++)
    for (int64_t j = 0; j <= 32; j++) {
      int64_t node = (k * 33 + j) * 33;
      for (int c = 0; c < 3; c++) CHECK_OK(ctx, vox_model_add_constraint(ctx, m, node, c, 0.0));
      CHECK_OK(ctx, vox_model_add_load(ctx, m, node + 32, 2, 0, -1.0 - (double)j));
    }
}

/* 4x3x2 of labels only: no density, no displacement. */
static void make_labels(vox_context *ctx, vox_model *m) {
  vox_grid g = {.nx = 4, .ny = 3, .nz = 2, .voxel_size = {1, 1, 1}, .origin = {0, 0, 0}};
  CHECK_OK(ctx, vox_model_init(ctx, m, &g));
  add_materials(ctx, m);
  for (int64_t e = 0; e < vox_grid_elements(&g); e++)
    m->label[e] = e % 3 == 0 ? 0 : (uint8_t)(1 + e % 2);
}

static void json_string(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') fprintf(f, "\\%c", *s);
    else if ((unsigned char)*s < 0x20) fprintf(f, "\\u%04x", *s);
    else fputc(*s, f);
  }
  fputc('"', f);
}

static void json_doubles(FILE *f, const double *v, int64_t n) {
  fputc('[', f);
  for (int64_t i = 0; i < n; i++) fprintf(f, "%s%.17g", i ? "," : "", v[i]);
  fputc(']', f);
}

static void json_model(FILE *f, const char *name, const vox_model *m, double threshold) {
  const vox_grid *g = &m->grid;
  int64_t ne = vox_grid_elements(g), nn = vox_grid_nodes(g);
  fprintf(f, "{\"name\":\"%s\",\"n\":[%lld,%lld,%lld],\"h\":", name, (long long)g->nx,
          (long long)g->ny, (long long)g->nz);
  json_doubles(f, g->voxel_size, 3);
  fprintf(f, ",\"origin\":");
  json_doubles(f, g->origin, 3);
  fprintf(f, ",\"threshold\":%.17g,\"cases\":[", threshold);
  int n_cases = m->displacement ? m->n_load_cases : 0;
  for (int c = 0; c < n_cases; c++) {
    if (c) fputc(',', f);
    json_string(f, m->load_case_names[c]);
  }
  fprintf(f, "],\"label\":[");
  for (int64_t e = 0; e < ne; e++) fprintf(f, "%s%d", e ? "," : "", m->label[e]);
  fprintf(f, "],\"density\":");
  if (m->density) json_doubles(f, m->density, ne);
  else fprintf(f, "null");
  fprintf(f, ",\"displacement\":");
  if (m->displacement) json_doubles(f, m->displacement, n_cases * nn * 3);
  else fprintf(f, "null");
  fprintf(f, ",\"n_load_cases\":%d,\"constraints\":[", m->n_load_cases);
  for (size_t i = 0; i < m->n_constraints; i++)
    fprintf(f, "%s[%lld,%d]", i ? "," : "", (long long)m->constraints[i].node,
            m->constraints[i].component);
  fprintf(f, "],\"loads\":[");
  for (size_t i = 0; i < m->n_loads; i++)
    fprintf(f, "%s[%lld,%d,%d,%.17g]", i ? "," : "", (long long)m->loads[i].node,
            m->loads[i].component, m->loads[i].load_case, m->loads[i].value);
  fprintf(f, "],\"title\":");
  if (m->title) json_string(f, m->title);
  else fprintf(f, "null");
  fputc('}', f);
}

/* --- the surface ------------------------------------------------------------------ */

/* A ball of radius 9 voxels (1.5 mm) in a 24^3 grid, centred at `centre`. */
static void make_sphere(vox_context *ctx, vox_model *m, double centre[3]) {
  vox_grid g = {.nx = 24, .ny = 24, .nz = 24, .voxel_size = {1.5, 1.5, 1.5},
                .origin = {10, -20, 5}};
  CHECK_OK(ctx, vox_model_init(ctx, m, &g));
  add_materials(ctx, m);
  for (int a = 0; a < 3; a++) centre[a] = g.origin[a] + 12 * 1.5;
  for (int64_t e = 0; e < vox_grid_elements(&g); e++) {
    double i = (double)(e % 24) + 0.5 - 12, j = (double)((e / 24) % 24) + 0.5 - 12,
           k = (double)(e / 576) + 0.5 - 12;
    m->label[e] = i * i + j * j + k * k <= 81 ? 1 : 0;
  }
}

/* --- failures ------------------------------------------------------------------ */

static int message_has(vox_context *ctx, const char *a, const char *b) {
  const char *msg = vox_context_message(ctx);
  int ok = strstr(msg, a) && (!b || strstr(msg, b));
  if (!ok) fprintf(stderr, "unexpected message: %s\n", msg);
  return ok;
}

static void test_missing_folder(vox_context *ctx, const vox_model *m) {
  OUT_PATH(path, "missing/model.vti");
  CHECK(vox_write_vti(ctx, path, m) == VOX_ERR_IO);
  CHECK(message_has(ctx, path, "cannot write"));
  CHECK(!file_exists(path));
  OUT_PATH(path2, "missing/model.vtu");
  CHECK(vox_write_vtu(ctx, path2, m, 0.5) == VOX_ERR_IO);
  CHECK(message_has(ctx, path2, "cannot write"));
}

static void test_read_only_folder(vox_context *ctx, const vox_model *m) {
  if (geteuid() == 0) return; /* root writes anywhere */
  OUT_PATH(dir, "read_only");
  CHECK(mkdir(dir, 0755) == 0 || errno == EEXIST);
  CHECK(chmod(dir, 0555) == 0);
  OUT_PATH(path, "read_only/model.vti");
  CHECK(vox_write_vti(ctx, path, m) == VOX_ERR_IO);
  CHECK(message_has(ctx, path, "cannot write"));
  CHECK(!file_exists(path));
  CHECK(chmod(dir, 0755) == 0);
}

static void test_nothing_kept(vox_context *ctx, const vox_model *small, vox_model *labels) {
  OUT_PATH(path, "nothing_kept.vtu");
  write_text(path, "an older file\n");
  CHECK(vox_write_vtu(ctx, path, small, 2.0) == VOX_ERR_INVALID_ARGUMENT);
  CHECK(message_has(ctx, path, "threshold"));
  CHECK(file_is(path, "an older file\n"));

  uint8_t *saved = labels->label;
  uint8_t empty[24] = {0};
  labels->label = empty;
  CHECK(vox_write_vtu(ctx, path, labels, 0.5) == VOX_ERR_INVALID_ARGUMENT);
  CHECK(message_has(ctx, path, "label 0"));
  CHECK(file_is(path, "an older file\n"));
  labels->label = saved;
  CHECK(unlink(path) == 0);
}

/* A write that fails halfway (file size limit): an I/O error, the old file
 * intact, no temporary left, and nothing printed by libxml2. */
static void test_failed_write(vox_context *ctx, const vox_model *blocks) {
  OUT_PATH(path, "too_large.vti");
  write_text(path, "an older file\n");
  OUT_PATH(log, "stderr.txt");
  struct rlimit saved_limit;
  CHECK(getrlimit(RLIMIT_FSIZE, &saved_limit) == 0);
  void (*saved_signal)(int) = signal(SIGXFSZ, SIG_IGN);
  fflush(stderr);
  int saved_stderr = dup(2);
  FILE *capture = fopen(log, "w");
  CHECK(saved_stderr >= 0 && capture != NULL);
  if (saved_stderr < 0 || !capture) return;
  CHECK(dup2(fileno(capture), 2) == 2);

  struct rlimit limit = saved_limit;
  limit.rlim_cur = 20000;
  CHECK(setrlimit(RLIMIT_FSIZE, &limit) == 0);
  vox_status s = vox_write_vti(ctx, path, blocks);
  OUT_PATH(path2, "too_large.vtu");
  vox_status s2 = vox_write_vtu(ctx, path2, blocks, 0.0);
  CHECK(setrlimit(RLIMIT_FSIZE, &saved_limit) == 0);

  fflush(stderr);
  CHECK(dup2(saved_stderr, 2) == 2);
  close(saved_stderr);
  fclose(capture);
  signal(SIGXFSZ, saved_signal);

  CHECK(s == VOX_ERR_IO);
  CHECK(s2 == VOX_ERR_IO);
  CHECK(message_has(ctx, "too_large.vtu: cannot write: ", strerror(EFBIG)));
  CHECK(file_is(path, "an older file\n"));
  CHECK(!file_exists(path2));
  CHECK(file_is(log, "")); /* libxml2 printed nothing */
  CHECK(unlink(path) == 0);
  CHECK(unlink(log) == 0);
}

static void test_path_is_folder(vox_context *ctx, const vox_model *m) {
  OUT_PATH(path, "a_folder.vti");
  CHECK(mkdir(path, 0755) == 0 || errno == EEXIST);
  CHECK(vox_write_vti(ctx, path, m) == VOX_ERR_IO);
  CHECK(message_has(ctx, path, "cannot write"));
  CHECK(rmdir(path) == 0);
}

static void test_invalid_models(vox_context *ctx, vox_model *small) {
  OUT_PATH(path, "invalid.vti");
  CHECK(vox_write_vti(ctx, NULL, small) == VOX_ERR_INVALID_ARGUMENT);
  CHECK(vox_write_vti(ctx, "", small) == VOX_ERR_INVALID_ARGUMENT);
  CHECK(vox_write_vti(ctx, path, NULL) == VOX_ERR_INVALID_ARGUMENT);

  uint8_t *label = small->label;
  small->label = NULL;
  CHECK(vox_write_vti(ctx, path, small) == VOX_ERR_INVALID_ARGUMENT);
  CHECK(message_has(ctx, path, "no labels"));
  small->label = label;

  int n_cases = small->n_load_cases;
  small->n_load_cases = 0;
  CHECK(vox_write_vtu(ctx, path, small, 0.5) == VOX_ERR_INVALID_ARGUMENT);
  CHECK(message_has(ctx, path, "no load cases"));
  double *displacement = small->displacement;
  small->displacement = NULL;
  CHECK(vox_write_vti(ctx, path, small) == VOX_ERR_INVALID_ARGUMENT);
  CHECK(message_has(ctx, path, "loads are stored but there are no load cases"));
  small->displacement = displacement;
  small->n_load_cases = n_cases;

  /* Constraints and loads outside the grid or the load cases. */
  int64_t node = small->constraints[1].node;
  small->constraints[1].node = vox_grid_nodes(&small->grid);
  CHECK(vox_write_vti(ctx, path, small) == VOX_ERR_INVALID_ARGUMENT);
  CHECK(message_has(ctx, path, "constraint 2: node 60"));
  small->constraints[1].node = node;
  small->constraints[1].component = 3;
  CHECK(vox_write_vtu(ctx, path, small, 0.5) == VOX_ERR_INVALID_ARGUMENT);
  CHECK(message_has(ctx, path, "constraint 2"));
  small->constraints[1].component = 2;
  small->loads[2].node = -1;
  CHECK(vox_write_vti(ctx, path, small) == VOX_ERR_INVALID_ARGUMENT);
  CHECK(message_has(ctx, path, "load 3: node -1"));
  small->loads[2].node = 59;
  small->loads[2].load_case = 2;
  CHECK(vox_write_vti(ctx, path, small) == VOX_ERR_INVALID_ARGUMENT);
  CHECK(message_has(ctx, path, "load 3: load case 3 of 2"));
  small->loads[2].load_case = 0;

  char *title = small->title;
  small->title = "bad \xff title";
  CHECK(vox_write_vti(ctx, path, small) == VOX_ERR_INVALID_ARGUMENT);
  CHECK(message_has(ctx, path, "title is not UTF-8"));
  small->title = title;

  char name[VOX_NAME_MAX];
  memcpy(name, small->load_case_names[1], VOX_NAME_MAX);
  memcpy(small->load_case_names[1], small->load_case_names[0], VOX_NAME_MAX);
  CHECK(vox_write_vti(ctx, path, small) == VOX_ERR_INVALID_ARGUMENT);
  CHECK(message_has(ctx, path, "same name"));
  snprintf(small->load_case_names[1], VOX_NAME_MAX, "bad \xff utf-8");
  CHECK(vox_write_vti(ctx, path, small) == VOX_ERR_INVALID_ARGUMENT);
  CHECK(message_has(ctx, path, "UTF-8"));
  memcpy(small->load_case_names[1], name, VOX_NAME_MAX);

  CHECK(vox_write_vtu(ctx, path, small, NAN) == VOX_ERR_INVALID_ARGUMENT);
  CHECK(message_has(ctx, path, "not a number"));

  double h = small->grid.voxel_size[1];
  small->grid.voxel_size[1] = 0;
  CHECK(vox_write_vti(ctx, path, small) == VOX_ERR_INVALID_ARGUMENT);
  small->grid.voxel_size[1] = h;
  CHECK(!file_exists(path));
}

static void test_vtp_failures(vox_context *ctx, const vox_surface *sphere) {
  OUT_PATH(path, "bad.vtp");
  write_text(path, "an older file\n");
  vox_surface empty = {0};
  CHECK(vox_write_vtp(ctx, path, &empty) == VOX_ERR_INVALID_ARGUMENT);
  CHECK(message_has(ctx, path, "no triangles"));
  CHECK(vox_write_vtp(ctx, path, NULL) == VOX_ERR_INVALID_ARGUMENT);
  CHECK(vox_write_vtp(ctx, NULL, sphere) == VOX_ERR_INVALID_ARGUMENT);
  vox_surface bad = *sphere;
  int64_t saved = bad.triangle[5];
  bad.triangle[5] = (int64_t)bad.n_vertices;
  CHECK(vox_write_vtp(ctx, path, &bad) == VOX_ERR_INVALID_ARGUMENT);
  CHECK(message_has(ctx, path, "triangle 2"));
  bad.triangle[5] = -1;
  CHECK(vox_write_vtp(ctx, path, &bad) == VOX_ERR_INVALID_ARGUMENT);
  bad.triangle[5] = saved;
  CHECK(file_is(path, "an older file\n"));
  CHECK(unlink(path) == 0);
  OUT_PATH(missing, "missing/sphere.vtp");
  CHECK(vox_write_vtp(ctx, missing, sphere) == VOX_ERR_IO);
  CHECK(message_has(ctx, missing, "cannot write"));
}

/* --- a caller's libxml2 handler survives the writers ----------------------- */

static int caller_handler_calls = 0;
static void caller_handler(void *context, const char *msg, ...) {
  (void)context;
  (void)msg;
  caller_handler_calls++;
}

/* A .pvd of the density snapshots: one .vti per snapshot and the final
 * design added after them, the collection naming them in order; refusals
 * (no snapshots, a name not ending in .pvd); and a collection that cannot be
 * written takes back the frames it wrote. */
static void test_pvd(vox_context *ctx, const vox_model *small) {
  vox_model m;
  CHECK_OK(ctx, vox_model_copy(ctx, &m, small));
  OUT_PATH(path, "history.pvd");
  CHECK(vox_write_pvd(ctx, path, &m) == VOX_ERR_INVALID_ARGUMENT);
  CHECK(message_has(ctx, path, "no density snapshots"));
  const size_t ne = (size_t)vox_grid_elements(&m.grid);
  double *rho = malloc(ne * sizeof *rho);
  CHECK(rho != NULL);
  if (!rho) return;
  for (int k = 1; k <= 2; k++) {
    for (size_t e = 0; e < ne; e++) rho[e] = 0.1 * k;
    CHECK_OK(ctx, vox_model_add_snapshot(ctx, &m, 5 * k, rho));
  }
  free(rho);
  m.history = calloc(1, sizeof *m.history);
  CHECK(m.history != NULL);
  m.n_history = 1;
  m.history[0].iteration = 12; /* the final design: after the last snapshot */
  OUT_PATH(bad_name, "history.vti");
  CHECK(vox_write_pvd(ctx, bad_name, &m) == VOX_ERR_INVALID_ARGUMENT);
  CHECK_OK(ctx, vox_write_pvd(ctx, path, &m));
  OUT_PATH(f5, "history_0005.vti");
  OUT_PATH(f10, "history_0010.vti");
  OUT_PATH(f12, "history_0012.vti");
  CHECK(file_exists(f5) && file_exists(f10) && file_exists(f12));
  char *text = read_all(path, NULL);
  CHECK(text && strstr(text, "<VTKFile type=\"Collection\"") && !strstr(text, "AppendedData"));
  const char *a = text ? strstr(text, "timestep=\"5\"") : NULL;
  const char *b = a ? strstr(a, "timestep=\"10\"") : NULL;
  const char *c = b ? strstr(b, "timestep=\"12\"") : NULL;
  CHECK(c && strstr(c, "file=\"history_0012.vti\""));
  free(text);
  CHECK(unlink(f5) == 0 && unlink(f10) == 0 && unlink(f12) == 0 && unlink(path) == 0);

  /* the .pvd's name taken by a folder: no frame left behind */
  OUT_PATH(blocked, "blocked.pvd");
  CHECK(mkdir(blocked, 0755) == 0 || errno == EEXIST);
  CHECK(vox_write_pvd(ctx, blocked, &m) == VOX_ERR_IO);
  OUT_PATH(b5, "blocked_0005.vti");
  OUT_PATH(b12, "blocked_0012.vti");
  CHECK(!file_exists(b5) && !file_exists(b12));
  CHECK(rmdir(blocked) == 0);
  vox_model_free(&m);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s OUTPUT_FOLDER\n", argv[0]);
    return 2;
  }
  snprintf(out_dir, sizeof out_dir, "%s", argv[1]);
  if (mkdir(out_dir, 0755) != 0 && errno != EEXIST) {
    perror(out_dir);
    return 1;
  }
  xmlSetGenericErrorFunc(NULL, caller_handler);

  vox_context *ctx;
  CHECK(vox_context_create(&ctx) == VOX_OK);
  vox_model small, blocks, labels;
  make_small(ctx, &small);
  make_blocks(ctx, &blocks);
  make_labels(ctx, &labels);
  const double small_threshold = 0.5, blocks_threshold = 0.3;

  OUT_PATH(small_vti, "small.vti");
  OUT_PATH(small_vtu, "small.vtu");
  OUT_PATH(blocks_vti, "blocks.vti");
  OUT_PATH(blocks_vtu, "blocks.vtu");
  OUT_PATH(labels_vti, "labels.vti");
  OUT_PATH(labels_vtu, "labels.vtu");
  OUT_PATH(sphere_vtp, "sphere.vtp");
  CHECK_OK(ctx, vox_write_vti(ctx, small_vti, &small));
  CHECK_OK(ctx, vox_write_vti(ctx, small_vti, &small)); /* replaces it */
  CHECK_OK(ctx, vox_write_vtu(ctx, small_vtu, &small, small_threshold));
  CHECK_OK(ctx, vox_write_vti(ctx, blocks_vti, &blocks));
  CHECK_OK(ctx, vox_write_vtu(ctx, blocks_vtu, &blocks, blocks_threshold));
  CHECK_OK(ctx, vox_write_vti(ctx, labels_vti, &labels));
  CHECK_OK(ctx, vox_write_vtu(ctx, labels_vtu, &labels, 0.5));
  vox_model sphere_model;
  double centre[3];
  make_sphere(ctx, &sphere_model, centre);
  vox_surface sphere = {0};
  CHECK_OK(ctx, vox_isosurface_label(ctx, &sphere_model, 1, &sphere));
  CHECK_OK(ctx, vox_surface_smooth(ctx, &sphere, 10));
  CHECK_OK(ctx, vox_write_vtp(ctx, sphere_vtp, &sphere));

  /* The umask applies to new files as to any other (not mkstemp's 0600). */
  mode_t mask = umask(022);
  umask(mask);
  struct stat st;
  CHECK(stat(small_vti, &st) == 0 && (st.st_mode & 0777) == (0666 & ~mask));

  /* One thread or several: the same bytes. */
  OUT_PATH(blocks_1, "blocks_1.vtu");
  OUT_PATH(blocks_3, "blocks_3.vtu");
  vox_context_set_threads(ctx, 1);
  CHECK_OK(ctx, vox_write_vtu(ctx, blocks_1, &blocks, blocks_threshold));
  vox_context_set_threads(ctx, 3);
  CHECK_OK(ctx, vox_write_vtu(ctx, blocks_3, &blocks, blocks_threshold));
  vox_context_set_threads(ctx, 0);
  size_t size1 = 0, size3 = 0, size0 = 0;
  char *one = read_all(blocks_1, &size1);
  char *three = read_all(blocks_3, &size3);
  char *any = read_all(blocks_vtu, &size0);
  CHECK(one && three && any && size1 == size3 && size1 == size0 && memcmp(one, three, size1) == 0 &&
        memcmp(one, any, size1) == 0);
  free(one);
  free(three);
  free(any);
  CHECK(unlink(blocks_1) == 0 && unlink(blocks_3) == 0);

  test_missing_folder(ctx, &small);
  test_read_only_folder(ctx, &small);
  test_nothing_kept(ctx, &small, &labels);
  test_failed_write(ctx, &blocks);
  test_path_is_folder(ctx, &small);
  test_invalid_models(ctx, &small);
  test_vtp_failures(ctx, &sphere);
  test_pvd(ctx, &small);
  CHECK(count_temporaries() == 0);
  CHECK(xmlGenericError == caller_handler); /* put back after every call */
  CHECK(caller_handler_calls == 0);         /* and never called by them */

  OUT_PATH(expected, "expected.json");
  FILE *f = fopen(expected, "w");
  CHECK(f != NULL);
  if (f) {
    fprintf(f, "{\"models\":[");
    json_model(f, "small", &small, small_threshold);
    fputc(',', f);
    json_model(f, "blocks", &blocks, blocks_threshold);
    fputc(',', f);
    json_model(f, "labels", &labels, 0.5);
    fprintf(f, "],\"sphere\":{\"vertices\":%zu,\"triangles\":%zu,\"centre\":", sphere.n_vertices,
            sphere.n_triangles);
    json_doubles(f, centre, 3);
    fprintf(f, ",\"vertex\":");
    json_doubles(f, sphere.vertex, (int64_t)(3 * sphere.n_vertices));
    fprintf(f, ",\"triangle\":[");
    for (size_t i = 0; i < 3 * sphere.n_triangles; i++)
      fprintf(f, "%s%lld", i ? "," : "", (long long)sphere.triangle[i]);
    fprintf(f, "]}}\n");
    CHECK(fclose(f) == 0);
  }

  vox_model_free(&small);
  vox_model_free(&blocks);
  vox_model_free(&labels);
  vox_model_free(&sphere_model);
  vox_surface_free(&sphere);
  vox_context_destroy(ctx);
  CHECK_DONE();
}
