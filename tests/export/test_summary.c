/* SPDX-License-Identifier: BSD-3-Clause */
/* Summaries (JSON, CSV) and the history plot (PNG) of small models built
 * here. Checks the files in C (JSON syntax, CSV fields, PNG header and
 * pixels loaded back with cairo) and writes expected.json for the second
 * test step, which reads the summaries with Python's json and csv modules.
 * A failure must return a clear message, leave no file (no temporary
 * either) and leave an existing file untouched.
 *
 * usage: test_export_summary OUTPUT_FOLDER  (created if missing; files replaced) */
#include <cairo.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "export/output_dir.h"
#include "voxfe/model.h"
#include "voxfe/plot.h"
#include "voxfe/optimizer.h"
#include "voxfe/summary.h"

/* fontconfig, under cairo's text, keeps its configuration for the life of
 * the process; LeakSanitizer (VOXFE_SANITIZE builds) would report it. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void) { return "leak:libfontconfig.so\n"; }

static int message_has(vox_context *ctx, const char *a, const char *b) {
  const char *msg = vox_context_message(ctx);
  int ok = strstr(msg, a) && (!b || strstr(msg, b)) && !strchr(msg, '\n');
  if (!ok) fprintf(stderr, "unexpected message: %s\n", msg);
  return ok;
}

/* --- the models ---------------------------------------------------------------- */

enum { N_ROWS = 30 };

/* 4x3x2 design: two materials and empty voxels, a density, two load cases
 * whose names need quoting in CSV and escaping in JSON, a title with a
 * quote, a comma, a newline and a byte that is not UTF-8, a history whose
 * objective spans three decades (log scale) with missing values. */
static void make_design(vox_context *ctx, vox_model *m) {
  vox_grid g = {
      .nx = 4, .ny = 3, .nz = 2, .voxel_size = {0.5, 0.25, 2.0}, .origin = {-1.0, 2.0, 0.5}};
  CHECK_OK(ctx, vox_model_init(ctx, m, &g));
  vox_material steel = {
      .label = 1, .name = "steel, \"S235\"", .youngs_modulus = 210000, .poisson_ratio = 0.3};
  vox_material soft = {.label = 7,
                       .name = "soft",
                       .role = VOX_ROLE_SOLID,
                       .youngs_modulus = 1000.5,
                       .poisson_ratio = 0.1};
  CHECK_OK(ctx, vox_model_add_material(ctx, m, &steel));
  CHECK_OK(ctx, vox_model_add_material(ctx, m, &soft));
  int64_t ne = vox_grid_elements(&g);
  m->density = malloc((size_t)ne * sizeof *m->density);
  CHECK(m->density != NULL);
  for (int64_t e = 0; e < ne; e++) { /* labels 0: 6, 1: 12, 7: 6 */
    m->label[e] = e % 4 == 3 ? 0 : e % 4 == 2 ? 7 : 1;
    m->density[e] = 0.001 + 0.998 * (double)((e * 7) % 11) / 10.0; /* 0.001 .. 0.999 */
  }
  CHECK_OK(ctx, vox_model_set_load_cases(ctx, m, 2));
  snprintf(m->load_case_names[0], VOX_NAME_MAX, "lift & \"push\"");
  snprintf(m->load_case_names[1], VOX_NAME_MAX, "side, x");
  CHECK_OK(ctx, vox_model_add_load(ctx, m, 0, 2, 0, -10.0));
  CHECK_OK(ctx, vox_model_add_load(ctx, m, 1, 2, 0, -15.5));
  CHECK_OK(ctx, vox_model_add_load(ctx, m, 2, 0, 0, 0.25));
  CHECK_OK(ctx, vox_model_add_load(ctx, m, 3, 1, 1, 7.0));
  for (int c = 0; c < 3; c++) CHECK_OK(ctx, vox_model_add_constraint(ctx, m, 0, c, 0.0));
  CHECK_OK(ctx, vox_model_add_constraint(ctx, m, 5, 0, 0.01));
  m->title = strdup("summary test, \"quoted\"\nsecond line \xc3\xbcmlaut \xff");
  /* As vox_model_append_history writes it, with fixed times. */
  m->history_text = strdup("2026-01-02T03:04:05Z voxfe-voxelize --box 4x3x2 -o model.nc\n"
                           "2026-01-02T03:04:06Z voxfe-optimize model.nc -o design.nc\n");
  m->history = calloc(N_ROWS, sizeof *m->history);
  CHECK(m->history != NULL);
  m->n_history = N_ROWS;
  for (int i = 0; i < N_ROWS; i++) {
    vox_history_row *r = &m->history[i];
    r->iteration = i + 1;
    r->objective = 1000.0 * pow(10, -3.0 * i / (N_ROWS - 1)); /* 1000 .. 1 */
    r->volume_fraction = 1.0 - 0.7 * (1 - exp(-0.3 * i));
    r->change = i == 0 ? NAN : 0.2 * exp(-0.1 * i);
    r->non_discreteness = 90.0 * exp(-0.08 * i);
    r->penalty = i < 10 ? 1.0 : 3.0;
    r->q = 1.0;
    r->cg_iterations = i == 0 ? -1 : 10 + i;
    r->seconds = i == 4 ? NAN : 0.25;
  }
  m->stage = VOX_STAGE_DESIGN;
}

/* 3x2x1 of labels only: a model, no title, no loads, no history. */
static void make_model(vox_context *ctx, vox_model *m) {
  vox_grid g = {.nx = 3, .ny = 2, .nz = 1, .voxel_size = {1, 1, 1}, .origin = {0, 0, 0}};
  CHECK_OK(ctx, vox_model_init(ctx, m, &g));
  vox_material a = {.label = 1, .name = "a", .youngs_modulus = 1, .poisson_ratio = 0.3};
  CHECK_OK(ctx, vox_model_add_material(ctx, m, &a));
  for (int64_t e = 0; e < 6; e++) m->label[e] = 1;
}

/* --- JSON: a syntax check (RFC 8259, no NaN) ------------------------------------ */

static const char *json_ws(const char *p) {
  while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
  return p;
}

static const char *json_value(const char *p, int depth);

static const char *json_str(const char *p) {
  if (*p != '"') return NULL;
  for (p++; *p != '"'; p++) {
    if ((unsigned char)*p < 0x20) return NULL;
    if (*p == '\\') {
      p++;
      if (*p == 'u') {
        for (int i = 1; i <= 4; i++)
          if (!strchr("0123456789abcdefABCDEF", p[i]) || !p[i]) return NULL;
        p += 4;
      } else if (!*p || !strchr("\"\\/bfnrt", *p)) {
        return NULL;
      }
    }
  }
  return p + 1;
}

static const char *json_num(const char *p) {
  const char *start = p;
  if (*p == '-') p++;
  if (*p == '0') p++;
  else if (*p >= '1' && *p <= '9') while (*p >= '0' && *p <= '9') p++;
  else return NULL;
  if (*p == '.') {
    if (!(*++p >= '0' && *p <= '9')) return NULL;
    while (*p >= '0' && *p <= '9') p++;
  }
  if (*p == 'e' || *p == 'E') {
    p++;
    if (*p == '+' || *p == '-') p++;
    if (!(*p >= '0' && *p <= '9')) return NULL;
    while (*p >= '0' && *p <= '9') p++;
  }
  return p > start ? p : NULL;
}

static const char *json_value(const char *p, int depth) {
  if (depth > 32) return NULL;
  p = json_ws(p);
  if (*p == '{' || *p == '[') {
    char close = *p == '{' ? '}' : ']';
    p = json_ws(p + 1);
    if (*p == close) return p + 1;
    for (;;) {
      if (close == '}') {
        if (!(p = json_str(json_ws(p)))) return NULL;
        p = json_ws(p);
        if (*p++ != ':') return NULL;
      }
      if (!(p = json_value(p, depth + 1))) return NULL;
      p = json_ws(p);
      if (*p == close) return p + 1;
      if (*p++ != ',') return NULL;
    }
  }
  if (*p == '"') return json_str(p);
  if (!strncmp(p, "true", 4)) return p + 4;
  if (!strncmp(p, "false", 5)) return p + 5;
  if (!strncmp(p, "null", 4)) return p + 4;
  return json_num(p);
}

static int json_valid(const char *text) {
  const char *end = json_value(text, 0);
  return end && *json_ws(end) == '\0';
}

/* --- CSV: records of RFC 4180 fields --------------------------------------------- */

/* The number of fields of each record (at most `max` records); returns the
 * number of records, or -1 for a malformed quoted field. */
static int csv_records(const char *p, int *fields, int max) {
  int n = 0;
  while (*p && n < max) {
    int count = 1;
    for (;;) {
      if (*p == '"') {
        for (p++;; p++) {
          if (!*p) return -1;
          if (*p == '"') {
            if (p[1] == '"') p++;
            else break;
          }
        }
        p++;
        if (*p && *p != ',' && *p != '\n') return -1;
      } else {
        while (*p && *p != ',' && *p != '\n') {
          if (*p == '"' || *p == '\r') return -1;
          p++;
        }
      }
      if (*p == ',') {
        count++;
        p++;
        continue;
      }
      if (*p == '\n') p++;
      break;
    }
    fields[n++] = count;
  }
  return n;
}

static int count_columns(const char *header) {
  int n = 1;
  for (; *header; header++) n += *header == ',';
  return n;
}

/* --- PNG ------------------------------------------------------------------------ */

static uint32_t be32(const unsigned char *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* A PNG of the size asked for, with a white background and drawing on it:
 * some black and grey (axes, text) and at least `min_coloured` of the
 * pixels in colour (the lines). */
static void check_png(const char *path, int width, int height, double min_coloured) {
  size_t size = 0;
  unsigned char *data = (unsigned char *)read_all(path, &size);
  CHECK(data != NULL && size > 33);
  if (!data || size <= 33) {
    free(data);
    return;
  }
  CHECK(memcmp(data, "\x89PNG\r\n\x1a\n", 8) == 0);
  CHECK(be32(data + 8) == 13 && memcmp(data + 12, "IHDR", 4) == 0);
  CHECK(be32(data + 16) == (uint32_t)width);
  CHECK(be32(data + 20) == (uint32_t)height);
  free(data);

  cairo_surface_t *s = cairo_image_surface_create_from_png(path);
  CHECK(cairo_surface_status(s) == CAIRO_STATUS_SUCCESS);
  if (cairo_surface_status(s) != CAIRO_STATUS_SUCCESS) {
    cairo_surface_destroy(s);
    return;
  }
  CHECK(cairo_image_surface_get_width(s) == width);
  CHECK(cairo_image_surface_get_height(s) == height);
  cairo_surface_flush(s);
  const unsigned char *px = cairo_image_surface_get_data(s);
  int stride = cairo_image_surface_get_stride(s);
  long non_white = 0, coloured = 0;
  for (int y = 0; y < height; y++)
    for (int x = 0; x < width; x++) {
      uint32_t v;
      memcpy(&v, px + (size_t)y * stride + 4 * (size_t)x, 4);
      int r = (v >> 16) & 255, g = (v >> 8) & 255, b = v & 255;
      if (r < 250 || g < 250 || b < 250) non_white++;
      int hi = r > g ? (r > b ? r : b) : (g > b ? g : b);
      int lo = r < g ? (r < b ? r : b) : (g < b ? g : b);
      if (hi - lo > 80) coloured++; /* the lines, not the black and grey axes */
    }
  uint32_t corner;
  memcpy(&corner, px, 4);
  CHECK((corner & 0xFFFFFF) == 0xFFFFFF); /* white background */
  double total = (double)width * height;
  if (!(non_white > 0.01 * total && non_white < 0.5 * total && coloured > min_coloured * total))
    fprintf(stderr, "%s: %ld non-white and %ld coloured of %.0f pixels\n", path, non_white,
            coloured, total);
  CHECK(non_white > 0.01 * total && non_white < 0.5 * total);
  CHECK(coloured > min_coloured * total);
  cairo_surface_destroy(s);
}

/* --- failures -------------------------------------------------------------------- */

static void test_bad_paths(vox_context *ctx, const vox_model *design) {
  OUT_PATH(json, "missing/design.json");
  OUT_PATH(csv, "missing/design.csv");
  OUT_PATH(png, "missing/design.png");
  CHECK(vox_write_summary_json(ctx, json, design) == VOX_ERR_IO);
  CHECK(message_has(ctx, json, "cannot write: No such file or directory"));
  CHECK(vox_write_summary_csv(ctx, csv, design, 1) == VOX_ERR_IO);
  CHECK(message_has(ctx, csv, "cannot write"));
  CHECK(vox_write_history_png(ctx, png, design, 640, 800) == VOX_ERR_IO);
  CHECK(message_has(ctx, png, "cannot write"));
  CHECK(!file_exists(json) && !file_exists(csv) && !file_exists(png));

  OUT_PATH(folder, "a_folder.png");
  CHECK(mkdir(folder, 0755) == 0 || errno == EEXIST);
  CHECK(vox_write_history_png(ctx, folder, design, 640, 800) == VOX_ERR_IO);
  CHECK(message_has(ctx, folder, "cannot write"));
  CHECK(vox_write_summary_json(ctx, folder, design) == VOX_ERR_IO);
  CHECK(rmdir(folder) == 0);

  CHECK(vox_write_summary_json(ctx, NULL, design) == VOX_ERR_INVALID_ARGUMENT);
  CHECK(vox_write_summary_csv(ctx, "", design, 1) == VOX_ERR_INVALID_ARGUMENT);
  CHECK(vox_write_history_png(ctx, "", design, 640, 800) == VOX_ERR_INVALID_ARGUMENT);
  OUT_PATH(nothing, "nothing.json");
  CHECK(vox_write_summary_json(ctx, nothing, NULL) == VOX_ERR_INVALID_ARGUMENT);
  CHECK(vox_write_history_png(ctx, nothing, NULL, 640, 800) == VOX_ERR_INVALID_ARGUMENT);
  CHECK(!file_exists(nothing));
}

/* What the history plot draws: the volume panel around the target (a
 * design held at it is a flat line in the middle, not noise at full
 * height), with the target as its reference line; p and q plotted. */
static void test_history_panels(vox_context *ctx, const vox_model *design) {
  vox_history_panel panels[VOX_HISTORY_PANELS];
  vox_history_panels(design, panels); /* no target known: none drawn */
  CHECK(isnan(panels[VOX_PANEL_VOLUME].reference));
  const vox_history_panel *pq = &panels[VOX_PANEL_CONTINUATION];
  CHECK(pq->n_series == 2 && strcmp(pq->series[0], "penalty") == 0 &&
        strcmp(pq->series[1], "q") == 0);
  CHECK(pq->has_data && pq->lo <= 1.0 && pq->hi >= 3.0); /* p runs from 1 to 3 */
  CHECK(panels[VOX_PANEL_OBJECTIVE].log);

  vox_model held;
  CHECK_OK(ctx, vox_model_copy(ctx, &held, design));
  held.target_volume_fraction = 0.3;
  vox_history_panels(&held, panels); /* from 1.0 down to the target: all of it, from 0 */
  const vox_history_panel *v = &panels[VOX_PANEL_VOLUME];
  CHECK(v->reference == 0.3 && v->lo == 0 && v->hi >= 1.0 && v->hi <= 1.2 + 1e-9);
  for (size_t i = 0; i < held.n_history; i++) /* at the target, to rounding */
    held.history[i].volume_fraction = 0.3 + (i % 2 ? 1e-9 : -1e-9);
  vox_history_panels(&held, panels);
  CHECK(v->reference == 0.3);
  CHECK(v->lo <= 0.3 - 0.029 && v->hi >= 0.3 + 0.029 && v->hi - v->lo <= 0.1);
  CHECK(fabs(0.5 * (v->lo + v->hi) - 0.3) <= 0.011); /* centred, to a tick */
  OUT_PATH(png, "history_target.png");
  CHECK_OK(ctx, vox_write_history_png(ctx, png, &held, 800, 1000));
  check_png(png, 800, 1000, 0.002);
  vox_model_free(&held);
}

static void test_png_refusals(vox_context *ctx, const vox_model *model, const vox_model *design) {
  OUT_PATH(path, "refused.png");
  write_text(path, "an older file\n");
  CHECK(vox_write_history_png(ctx, path, model, 640, 800) == VOX_ERR_INVALID_ARGUMENT);
  CHECK(message_has(ctx, path, "no optimization history"));
  CHECK(vox_write_history_png(ctx, path, design, 10, 800) == VOX_ERR_INVALID_ARGUMENT);
  CHECK(message_has(ctx, path, "10x800"));
  CHECK(vox_write_history_png(ctx, path, design, 640, 100000) == VOX_ERR_INVALID_ARGUMENT);
  CHECK(file_is(path, "an older file\n"));
  CHECK(unlink(path) == 0);
}

/* A write that fails halfway (file size limit): an I/O error naming EFBIG,
 * the old file intact, no temporary left. */
static void test_failed_write(vox_context *ctx, const vox_model *design) {
  OUT_PATH(json, "too_large.json");
  OUT_PATH(png, "too_large.png");
  write_text(json, "an older file\n");
  write_text(png, "an older file\n");
  struct rlimit saved_limit;
  CHECK(getrlimit(RLIMIT_FSIZE, &saved_limit) == 0);
  void (*saved_signal)(int) = signal(SIGXFSZ, SIG_IGN);
  struct rlimit limit = saved_limit;
  limit.rlim_cur = 200;
  CHECK(setrlimit(RLIMIT_FSIZE, &limit) == 0);
  vox_status s_json = vox_write_summary_json(ctx, json, design);
  char json_message[512];
  snprintf(json_message, sizeof json_message, "%s", vox_context_message(ctx));
  vox_status s_png = vox_write_history_png(ctx, png, design, 640, 800);
  CHECK(setrlimit(RLIMIT_FSIZE, &saved_limit) == 0);
  signal(SIGXFSZ, saved_signal);

  CHECK(s_json == VOX_ERR_IO);
  CHECK(strstr(json_message, "too_large.json: cannot write: ") &&
        strstr(json_message, strerror(EFBIG)));
  CHECK(s_png == VOX_ERR_IO);
  CHECK(message_has(ctx, "too_large.png: cannot write: ", strerror(EFBIG)));
  CHECK(file_is(json, "an older file\n"));
  CHECK(file_is(png, "an older file\n"));
  CHECK(unlink(json) == 0 && unlink(png) == 0);
}

/* --- expected.json for the Python step ------------------------------------------- */

static void write_expected(const vox_model *d) {
  OUT_PATH(path, "expected.json");
  FILE *f = fopen(path, "w");
  CHECK(f != NULL);
  if (!f) return;
  const vox_history_row *last = &d->history[N_ROWS - 1];
  double cg = 0, seconds = 0;
  for (int i = 0; i < N_ROWS; i++) {
    if (d->history[i].cg_iterations >= 0) cg += d->history[i].cg_iterations;
    if (isfinite(d->history[i].seconds)) seconds += d->history[i].seconds;
  }
  double lo = 1, hi = 0;
  for (int64_t e = 0; e < vox_grid_elements(&d->grid); e++) {
    lo = fmin(lo, d->density[e]);
    hi = fmax(hi, d->density[e]);
  }
  fprintf(f,
          "{\"design\": {\"title\": \"summary test, \\\"quoted\\\"\\nsecond line \\u00fcmlaut "
          "\\ufffd\", \"stage\": \"design\","
          " \"history\": [\"2026-01-02T03:04:05Z voxfe-voxelize --box 4x3x2 -o model.nc\","
          " \"2026-01-02T03:04:06Z voxfe-optimize model.nc -o design.nc\"],"
          " \"grid\": {\"nx\": 4, \"ny\": 3, \"nz\": 2, \"voxel_size\": [0.5, 0.25, 2.0],"
          " \"origin\": [-1.0, 2.0, 0.5], \"voxels\": 24},"
          " \"voxels_per_label\": [{\"label\": 0, \"material\": null, \"voxels\": 6},"
          " {\"label\": 1, \"material\": \"steel, \\\"S235\\\"\", \"voxels\": 12},"
          " {\"label\": 7, \"material\": \"soft\", \"voxels\": 6}],"
          " \"materials\": [{\"label\": 1, \"name\": \"steel, \\\"S235\\\"\", \"role\": \"design\","
          " \"youngs_modulus\": 210000, \"poisson_ratio\": 0.3, \"voxels\": 12},"
          " {\"label\": 7, \"name\": \"soft\", \"role\": \"passive_solid\", \"youngs_modulus\": "
          "1000.5, \"poisson_ratio\": 0.1, \"voxels\": 6}],"
          " \"n_constraints\": 4, \"constrained_nodes\": 2, \"n_loads\": 4, \"n_load_cases\": 2,"
          " \"load_cases\": [{\"name\": \"lift & \\\"push\\\"\", \"n_loads\": 3, \"total_force\": "
          "[0.25, 0, -25.5]},"
          " {\"name\": \"side, x\", \"n_loads\": 1, \"total_force\": [0, 7, 0]}],"
          " \"design\": {\"iterations\": %d, \"objective\": %.17g, \"volume_fraction\": %.17g,"
          " \"change\": %.17g, \"non_discreteness\": %.17g, \"penalty\": 3, \"q\": 1,"
          " \"cg_iterations\": %.17g, \"seconds\": %.17g, \"density_min\": %.17g,"
          " \"density_max\": %.17g}},\n",
          N_ROWS, last->objective, last->volume_fraction, last->change, last->non_discreteness,
          cg, seconds, lo, hi);
  fprintf(f, " \"model\": {\"title\": null, \"stage\": \"model\", \"history\": null,"
             " \"grid\": {\"nx\": 3, \"ny\": 2, \"nz\": 1, \"voxels\": 6},"
             " \"voxels_per_label\": [{\"label\": 1, \"material\": \"a\", \"voxels\": 6}],"
             " \"n_constraints\": 0, \"constrained_nodes\": 0, \"n_loads\": 0,"
             " \"n_load_cases\": 0, \"load_cases\": [], \"design\": null},\n"
             " \"nan\": {\"design\": {\"objective\": null, \"density_min\": null}}}\n");
  CHECK(fclose(f) == 0);
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
  vox_context *ctx;
  CHECK(vox_context_create(&ctx) == VOX_OK);
  vox_model design, model;
  make_design(ctx, &design);
  make_model(ctx, &model);

  /* JSON */
  OUT_PATH(design_json, "design.json");
  OUT_PATH(model_json, "model.json");
  OUT_PATH(nan_json, "nan.json");
  CHECK_OK(ctx, vox_write_summary_json(ctx, design_json, &design));
  CHECK_OK(ctx, vox_write_summary_json(ctx, design_json, &design)); /* replaces it */
  CHECK_OK(ctx, vox_write_summary_json(ctx, model_json, &model));
  {
    /* NaN and infinities become null. */
    vox_model copy;
    CHECK_OK(ctx, vox_model_copy(ctx, &copy, &design));
    copy.history[N_ROWS - 1].objective = NAN;
    copy.history[N_ROWS - 1].change = INFINITY;
    copy.density[0] = NAN;
    for (int64_t e = 0; e < vox_grid_elements(&copy.grid); e++) copy.density[e] = NAN;
    CHECK_OK(ctx, vox_write_summary_json(ctx, nan_json, &copy));
    vox_model_free(&copy);
  }
  const char *jsons[] = {design_json, model_json, nan_json};
  for (int i = 0; i < 3; i++) {
    char *text = read_all(jsons[i], NULL);
    CHECK(text && json_valid(text));
    CHECK(text && !strstr(text, "nan") && !strstr(text, "inf"));
    free(text);
  }
  {
    /* A design with the run's end record: the final design's numbers (not
     * the last row's), its stop reason, and the final evaluation's CG
     * iterations added to the rows'. */
    vox_model copy;
    CHECK_OK(ctx, vox_model_copy(ctx, &copy, &design));
    copy.optimization_end = (vox_optimization_end){VOX_STOP_INTERRUPTED, 0.125, 0.25, 12.5, 7};
    OUT_PATH(end_json, "end.json");
    OUT_PATH(end_csv, "end.csv");
    CHECK_OK(ctx, vox_write_summary_json(ctx, end_json, &copy));
    CHECK_OK(ctx, vox_write_summary_csv(ctx, end_csv, &copy, 0));
    double cg = 7;
    for (int i = 0; i < N_ROWS; i++)
      if (design.history[i].cg_iterations >= 0) cg += design.history[i].cg_iterations;
    char expect[160];
    snprintf(expect, sizeof expect, "\"cg_iterations\": %.17g,", cg);
    char *end = read_all(end_json, NULL), *row = read_all(end_csv, NULL);
    CHECK(end && strstr(end, "\"stop_reason\": \"interrupted\""));
    CHECK(end && strstr(end, "\"objective\": 0.125,"));
    CHECK(end && strstr(end, "\"volume_fraction\": 0.25,"));
    CHECK(end && strstr(end, "\"non_discreteness\": 12.5,"));
    CHECK(end && strstr(end, expect));
    CHECK(row && strstr(row, ",0.125,0.25,") && strstr(row, ",interrupted,"));
    free(end), free(row);
    /* without the record: the last row's numbers and a null reason */
    char *plain = read_all(design_json, NULL);
    CHECK(plain && strstr(plain, "\"stop_reason\": null"));
    free(plain);
    vox_model_free(&copy);
  }
  char *text = read_all(design_json, NULL);
  CHECK(text && strstr(text, "\"n_constraints\": 4"));
  CHECK(text && strstr(text, "\"total_force\": [0.25, 0, -25.5]"));
  CHECK(text && strstr(text, "\"voxel_size\": [0.5, 0.25, 2]"));
  free(text);

  /* CSV: a header and a row; a row alone; concatenated they line up. */
  OUT_PATH(design_csv, "design.csv");
  OUT_PATH(model_csv, "model.csv");
  CHECK_OK(ctx, vox_write_summary_csv(ctx, design_csv, &design, 1));
  CHECK_OK(ctx, vox_write_summary_csv(ctx, model_csv, &model, 0));
  char *a = read_all(design_csv, NULL), *b = read_all(model_csv, NULL);
  CHECK(a && b);
  if (a && b) {
    CHECK(strncmp(a, VOX_SUMMARY_CSV_COLUMNS "\n", strlen(VOX_SUMMARY_CSV_COLUMNS) + 1) == 0);
    CHECK(strncmp(b, "title,", 6) != 0);
    size_t la = strlen(a), lb = strlen(b);
    char *all = malloc(la + lb + 1);
    CHECK(all != NULL);
    if (all) {
      memcpy(all, a, la);
      memcpy(all + la, b, lb + 1);
      OUT_PATH(all_csv, "all.csv");
      write_text(all_csv, all);
      int fields[8];
      int n = csv_records(all, fields, 8);
      int columns = count_columns(VOX_SUMMARY_CSV_COLUMNS);
      CHECK(n == 3);
      for (int i = 0; i < n; i++) {
        if (fields[i] != columns)
          fprintf(stderr, "record %d has %d fields, expected %d\n", i + 1, fields[i], columns);
        CHECK(fields[i] == columns);
      }
      free(all);
    }
    /* The title is quoted (comma, quote, newline) with its quotes doubled. */
    CHECK(strstr(a, "\n\"summary test, \"\"quoted\"\"\nsecond line \xc3\xbcmlaut \xef\xbf\xbd\","));
    CHECK(strstr(a, ",\"1 steel, \"\"S235\"\" (E 210000, nu 0.3); 7 soft (E 1000.5, nu 0.1)\","));
    CHECK(strstr(a, ",\"lift & \"\"push\"\" (0.25 0 -25.5); side, x (0 7 0)\","));
    CHECK(strstr(a, ",0:6 1:12 7:6,"));
  }
  free(a);
  free(b);

  /* PNG */
  const int sizes[][2] = {{800, 1000}, {641, 877}, {VOX_PLOT_MIN_WIDTH, VOX_PLOT_MIN_HEIGHT}};
  for (int i = 0; i < 3; i++) {
    char name[64];
    snprintf(name, sizeof name, "history_%dx%d.png", sizes[i][0], sizes[i][1]);
    OUT_PATH(png, name);
    CHECK_OK(ctx, vox_write_history_png(ctx, png, &design, sizes[i][0], sizes[i][1]));
    check_png(png, sizes[i][0], sizes[i][1], 0.002);
  }
  {
    /* One row, a constant volume, no change at all: still a picture. */
    vox_model one;
    CHECK_OK(ctx, vox_model_copy(ctx, &one, &design));
    one.n_history = 1;
    free(one.title);
    one.title = NULL;
    OUT_PATH(png, "history_one_row.png");
    CHECK_OK(ctx, vox_write_history_png(ctx, png, &one, 640, 800));
    check_png(png, 640, 800, 2e-5); /* three dots */
    vox_model_free(&one);
  }
  mode_t mask = umask(022);
  umask(mask);
  struct stat st;
  OUT_PATH(png_default, "history_800x1000.png");
  CHECK(stat(png_default, &st) == 0 && (st.st_mode & 0777) == (0666 & ~mask));

  test_history_panels(ctx, &design);
  test_bad_paths(ctx, &design);
  test_png_refusals(ctx, &model, &design);
  test_failed_write(ctx, &design);
  CHECK(count_temporaries() == 0);
  write_expected(&design);

  vox_model_free(&design);
  vox_model_free(&model);
  vox_context_destroy(ctx);
  cairo_debug_reset_static_data(); /* for LeakSanitizer (VOXFE_SANITIZE) */
  CHECK_DONE();
}
