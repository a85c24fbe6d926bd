/* SPDX-License-Identifier: BSD-3-Clause */
/* vox_write_summary_json, vox_write_summary_csv: the numbers of a model or
 * design file (see voxfe/summary.h). The numbers are gathered once into a
 * struct, formatted into memory (open_memstream), and the text is written to
 * a temporary file beside the output that is renamed into place. */
#include "voxfe/summary.h"
#include "voxfe/optimizer.h" /* vox_stop_reason_name */
#include "csv_field.h"
#include "temp_file.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* --- what the summary holds ------------------------------------------------- */

typedef struct case_sum {
  size_t n_loads;
  double force[3];
} case_sum;

typedef struct summary {
  int64_t voxels;
  int64_t per_label[256];
  size_t constrained_nodes;
  case_sum *cases;           /* n_load_cases */
  int has_design;            /* write the "design" part */
  const vox_history_row *last; /* NULL without history */
  /* the final design's numbers: the run's end record where the file has
   * one, else the last row's (files of runs before the record) */
  double objective, volume_fraction, non_discreteness;
  const char *stop_reason;   /* NULL where not recorded */
  double cg_iterations;      /* summed over the rows and the final evaluation, NaN when none
                                has them */
  double seconds;            /* likewise */
  double density_min, density_max; /* NaN without density */
  /* the largest displacement magnitude (mm, over the load cases), and an
   * analysis result's largest von Mises stress, strain-energy density and
   * effective strain: NaN where the file has no such field */
  double max_displacement, max_von_mises, max_sed, max_effective_strain;
  const vox_result_data *result; /* NULL: not an analysis result */
} summary;

static double constraint_value(const vox_model *m, int i);

static int compare_int64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* Checks what the writers read and gathers the numbers. */
/* The largest of n values (NaN when n is 0 or every value is NaN). */
static double largest(const double *x, size_t n) {
  double hi = NAN;
  for (size_t i = 0; i < n; i++)
    if (x[i] > hi || (isnan(hi) && !isnan(x[i]))) hi = x[i];
  return hi;
}

static void gather_maxima(const vox_model *m, const vox_result_data *result, summary *s) {
  s->max_displacement = s->max_von_mises = s->max_sed = s->max_effective_strain = NAN;
  if (m->displacement && m->physics == VOX_PHYSICS_ELASTICITY) {
    const size_t n = (size_t)m->n_load_cases * (size_t)vox_grid_nodes(&m->grid);
    double hi2 = NAN;
    for (size_t i = 0; i < n; i++) {
      const double *u = m->displacement + 3 * i;
      const double u2 = u[0] * u[0] + u[1] * u[1] + u[2] * u[2];
      if (u2 > hi2 || (isnan(hi2) && !isnan(u2))) hi2 = u2;
    }
    s->max_displacement = sqrt(hi2);
  }
  s->result = result;
  if (result && result->fields.elements) {
    const vox_element_fields *f = &result->fields;
    s->max_von_mises = largest(f->von_mises, f->n_elements);
    s->max_sed = largest(f->sed, f->n_elements);
    s->max_effective_strain = largest(f->effective_strain, f->n_elements);
  }
}

static vox_status gather(vox_context *ctx, const char *path, const vox_model *m,
                         const vox_result_data *result, summary *s) {
  memset(s, 0, sizeof *s);
  if (!path || !*path) return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "no output path given");
  if (!m || !m->label)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "%s: the model has no labels", path);
  const vox_grid *g = &m->grid;
  int64_t n = 1;
  const int64_t dims[3] = {g->nx, g->ny, g->nz};
  for (int a = 0; a < 3; a++)
    if (dims[a] < 1 || __builtin_mul_overflow(n, dims[a], &n))
      return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "%s: grid size %lldx%lldx%lld is invalid",
                       path, (long long)g->nx, (long long)g->ny, (long long)g->nz);
  if ((m->n_materials > 0 && !m->materials) || m->n_materials < 0 ||
      (m->n_constraints > 0 && !m->constraints) || (m->n_loads > 0 && !m->loads) ||
      (m->n_history > 0 && !m->history) || m->n_load_cases < 0 ||
      (m->n_load_cases > 0 && !m->load_case_names))
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "%s: the model's lists do not match their counts", path);
  for (size_t i = 0; i < m->n_loads; i++)
    if (m->loads[i].load_case < 0 || m->loads[i].load_case >= m->n_load_cases ||
        m->loads[i].component > 2)
      return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                       "%s: load %zu has load case %d or component %d out of range", path, i + 1,
                       (int)m->loads[i].load_case, (int)m->loads[i].component);

  s->voxels = n;
  for (int64_t e = 0; e < n; e++) s->per_label[m->label[e]]++;

  if (m->n_constraints > 0) {
    int64_t *nodes = malloc(m->n_constraints * sizeof *nodes);
    if (!nodes) return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
    for (size_t i = 0; i < m->n_constraints; i++) nodes[i] = m->constraints[i].node;
    qsort(nodes, m->n_constraints, sizeof *nodes, compare_int64);
    for (size_t i = 0; i < m->n_constraints; i++)
      s->constrained_nodes += i == 0 || nodes[i] != nodes[i - 1];
    free(nodes);
  }

  if (m->n_load_cases > 0) {
    s->cases = calloc((size_t)m->n_load_cases, sizeof *s->cases);
    long double(*sum)[3] = calloc((size_t)m->n_load_cases, sizeof *sum);
    if (!s->cases || !sum) {
      free(s->cases);
      free(sum);
      s->cases = NULL;
      return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
    }
    for (size_t i = 0; i < m->n_loads; i++) {
      const vox_load *l = &m->loads[i];
      sum[l->load_case][l->component] += l->value;
      s->cases[l->load_case].n_loads++;
    }
    for (int c = 0; c < m->n_load_cases; c++)
      for (int a = 0; a < 3; a++) s->cases[c].force[a] = (double)sum[c][a];
    free(sum);
  }

  s->has_design = m->stage == VOX_STAGE_DESIGN || m->n_history > 0 || m->density;
  s->cg_iterations = s->seconds = NAN;
  if (m->n_history > 0) {
    s->last = &m->history[m->n_history - 1];
    double cg = 0, seconds = 0;
    int any_cg = 0, any_seconds = 0;
    for (size_t i = 0; i < m->n_history; i++) {
      if (m->history[i].cg_iterations >= 0) {
        cg += m->history[i].cg_iterations;
        any_cg = 1;
      }
      if (isfinite(m->history[i].seconds)) {
        seconds += m->history[i].seconds;
        any_seconds = 1;
      }
    }
    if (any_cg) s->cg_iterations = cg;
    if (any_seconds) s->seconds = seconds;
  }
  const vox_optimization_end *end = &m->optimization_end;
  s->objective = s->last ? s->last->objective : NAN;
  s->volume_fraction = s->last ? s->last->volume_fraction : NAN;
  s->non_discreteness = s->last ? s->last->non_discreteness : NAN;
  s->stop_reason = NULL;
  if (end->stop_reason) {
    s->has_design = 1;
    s->objective = end->objective;
    s->volume_fraction = end->volume_fraction;
    s->non_discreteness = end->non_discreteness;
    s->stop_reason = vox_stop_reason_name(end->stop_reason);
    s->cg_iterations = (isnan(s->cg_iterations) ? 0 : s->cg_iterations) + (double)end->cg_iterations;
  }
  s->density_min = s->density_max = NAN;
  if (m->density) {
    double lo = INFINITY, hi = -INFINITY;
    for (int64_t e = 0; e < n; e++) {
      double d = m->density[e];
      if (d < lo) lo = d;
      if (d > hi) hi = d;
    }
    if (lo <= hi) {
      s->density_min = lo;
      s->density_max = hi;
    }
  }
  gather_maxima(m, result, s);
  return VOX_OK;
}

/* --- formatting ------------------------------------------------------------- */

/* The shortest of %.15g..%.17g that reads back as the same double. */
static void format_double(char out[32], double value) {
  for (int digits = 15; digits <= 17; digits++) {
    snprintf(out, 32, "%.*g", digits, value);
    if (strtod(out, NULL) == value) return;
  }
}

/* The length of the valid UTF-8 sequence at s (1..4), or 0 if it is not one. */
static int utf8_length(const unsigned char *s) {
  unsigned char c = s[0];
  if (c < 0x80) return 1;
  int n;
  unsigned min;
  unsigned cp;
  if ((c & 0xE0) == 0xC0) n = 2, cp = c & 0x1F, min = 0x80;
  else if ((c & 0xF0) == 0xE0) n = 3, cp = c & 0x0F, min = 0x800;
  else if ((c & 0xF8) == 0xF0) n = 4, cp = c & 0x07, min = 0x10000;
  else return 0;
  for (int i = 1; i < n; i++) {
    if ((s[i] & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (s[i] & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

static void json_string(FILE *f, const char *text) {
  fputc('"', f);
  const unsigned char *s = (const unsigned char *)text;
  while (*s) {
    int n = utf8_length(s);
    if (n == 0) {
      fputs("\\ufffd", f);
      s++;
      continue;
    }
    if (*s == '"' || *s == '\\') fprintf(f, "\\%c", *s);
    else if (*s == '\n') fputs("\\n", f);
    else if (*s == '\t') fputs("\\t", f);
    else if (*s == '\r') fputs("\\r", f);
    else if (*s < 0x20 || *s == 0x7F) fprintf(f, "\\u%04x", *s);
    else fwrite(s, 1, (size_t)n, f);
    s += n;
  }
  fputc('"', f);
}

/* A name from a fixed-size field, which may lack its NUL. */
static void json_name(FILE *f, const char name[VOX_NAME_MAX]) {
  char copy[VOX_NAME_MAX + 1];
  memcpy(copy, name, VOX_NAME_MAX);
  copy[VOX_NAME_MAX] = '\0';
  json_string(f, copy);
}

static void json_number(FILE *f, double value) {
  if (!isfinite(value)) {
    fputs("null", f);
    return;
  }
  char text[32];
  format_double(text, value);
  fputs(text, f);
}

static void json_vector(FILE *f, const double v[3]) {
  fputc('[', f);
  for (int a = 0; a < 3; a++) {
    if (a) fputs(", ", f);
    json_number(f, v[a]);
  }
  fputc(']', f);
}

static const char *role_name(vox_material_role role) {
  switch (role) {
  case VOX_ROLE_DESIGN: return "design";
  case VOX_ROLE_SOLID: return "passive_solid";
  case VOX_ROLE_VOID: return "passive_void";
  }
  return "unknown";
}

/* The maxima, and an analysis result's own summary (the group `results`),
 * then the end of the document. */
static void write_json_analysis(FILE *f, const summary *s) {
  const struct {
    const char *name, *units;
    double value;
  } maxima[] = {
      {"displacement", "mm", s->max_displacement},
      {"von_mises", "MPa", s->max_von_mises},
      {"strain_energy_density", "MPa", s->max_sed},
      {"effective_strain", "1", s->max_effective_strain},
  };
  const size_t n_maxima = sizeof maxima / sizeof maxima[0];
  fputs(",\n  \"maxima\": {", f);
  for (size_t i = 0; i < n_maxima; i++) {
    fprintf(f, "%s\"%s\": ", i ? ", " : "", maxima[i].name);
    json_number(f, maxima[i].value);
  }
  fputs(", \"units\": {", f);
  for (size_t i = 0; i < n_maxima; i++)
    fprintf(f, "%s\"%s\": \"%s\"", i ? ", " : "", maxima[i].name, maxima[i].units);
  fputs("}},\n  \"results\": ", f);
  const vox_result_data *r = s->result;
  if (!r || !r->summary) {
    fputs("null\n}\n", f);
    return;
  }
  fputc('{', f);
  for (size_t i = 0; i < r->n_summary; i++) {
    const vox_summary_entry *e = &r->summary[i];
    fputs(i ? ",\n    " : "\n    ", f);
    json_name(f, e->name);
    fputs(": ", f);
    if (e->text) json_string(f, e->text);
    else json_number(f, e->value);
  }
  fputs(r->n_summary ? ",\n    \"units\": {" : "\n    \"units\": {", f);
  int first = 1;
  for (size_t i = 0; i < r->n_summary; i++) {
    if (!r->summary[i].units) continue;
    fputs(first ? "" : ", ", f);
    json_name(f, r->summary[i].name);
    fputs(": ", f);
    json_string(f, r->summary[i].units);
    first = 0;
  }
  fputs("}\n  }\n}\n", f);
}

/* Returns non-zero if memory ran out. */
static int write_json(FILE *f, const vox_model *m, const summary *s) {
  int failed = 0;
  const vox_grid *g = &m->grid;
  fputs("{\n  \"title\": ", f);
  if (m->title) json_string(f, m->title);
  else fputs("null", f);
  fprintf(f, ",\n  \"stage\": \"%s\",\n  \"history\": ", vox_stage_name(m->stage));
  if (m->history_text) {
    /* One string per line of the netCDF history attribute. */
    fputc('[', f);
    const char *line = m->history_text;
    int first = 1;
    while (*line) {
      const char *end = strchr(line, '\n');
      size_t len = end ? (size_t)(end - line) : strlen(line);
      char *copy = strndup(line, len);
      if (!copy) failed = 1;
      if (copy && len > 0) {
        fputs(first ? "\n    " : ",\n    ", f);
        json_string(f, copy);
        first = 0;
      }
      free(copy);
      line += len + (end != NULL);
    }
    fputs(first ? "]" : "\n  ]", f);
  } else {
    fputs("null", f);
  }
  fprintf(f, ",\n  \"grid\": {\"nx\": %lld, \"ny\": %lld, \"nz\": %lld, \"voxel_size\": ",
          (long long)g->nx, (long long)g->ny, (long long)g->nz);
  json_vector(f, g->voxel_size);
  fputs(", \"origin\": ", f);
  json_vector(f, g->origin);
  fprintf(f, ", \"voxels\": %lld},\n  \"voxels_per_label\": [", (long long)s->voxels);
  int first = 1;
  for (int label = 0; label < 256; label++) {
    if (!s->per_label[label]) continue;
    fprintf(f, "%s\n    {\"label\": %d, \"material\": ", first ? "" : ",", label);
    const vox_material *mat = label ? vox_model_material(m, (uint8_t)label) : NULL;
    if (mat) json_name(f, mat->name);
    else fputs("null", f);
    fprintf(f, ", \"voxels\": %lld}", (long long)s->per_label[label]);
    first = 0;
  }
  fputs(first ? "],\n  \"materials\": [" : "\n  ],\n  \"materials\": [", f);
  for (int i = 0; i < m->n_materials; i++) {
    const vox_material *mat = &m->materials[i];
    fprintf(f, "%s\n    {\"label\": %d, \"name\": ", i ? "," : "", mat->label);
    json_name(f, mat->name);
    fprintf(f, ", \"role\": \"%s\", \"youngs_modulus\": ", role_name(mat->role));
    json_number(f, mat->youngs_modulus);
    fputs(", \"poisson_ratio\": ", f);
    json_number(f, mat->poisson_ratio);
    fprintf(f, ", \"voxels\": %lld}", (long long)s->per_label[mat->label]);
  }
  fprintf(f,
          "%s,\n  \"n_constraints\": %zu,\n  \"constrained_nodes\": %zu,\n  \"n_loads\": %zu,\n"
          "  \"n_load_cases\": %d,\n  \"load_cases\": [",
          m->n_materials > 0 ? "\n  ]" : "]", m->n_constraints, s->constrained_nodes, m->n_loads,
          m->n_load_cases);
  for (int c = 0; c < m->n_load_cases; c++) {
    fprintf(f, "%s\n    {\"name\": ", c ? "," : "");
    json_name(f, m->load_case_names[c]);
    fprintf(f, ", \"n_loads\": %zu, \"total_force\": ", s->cases[c].n_loads);
    json_vector(f, s->cases[c].force);
    fputc('}', f);
  }
  fputs(m->n_load_cases > 0 ? "\n  ],\n  \"design\": " : "],\n  \"design\": ", f);
  if (!s->has_design) {
    fputs("null", f);
    write_json_analysis(f, s);
    return failed;
  }
  const vox_history_row *r = s->last;
  fprintf(f, "{\n    \"iterations\": %zu,\n    \"stop_reason\": ", m->n_history);
  if (s->stop_reason) json_string(f, s->stop_reason);
  else fputs("null", f);
  const struct {
    const char *name;
    double value;
  } fields[] = {
      {"objective", s->objective},
      {"volume_fraction", s->volume_fraction},
      {"change", r ? r->change : NAN},
      {"non_discreteness", s->non_discreteness},
      {"penalty", r ? r->penalty : NAN},
      {"q", r ? r->q : NAN},
      {"cg_iterations", s->cg_iterations},
      {"seconds", s->seconds},
      {"density_min", s->density_min},
      {"density_max", s->density_max},
  };
  for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
    fprintf(f, ",\n    \"%s\": ", fields[i].name);
    json_number(f, fields[i].value);
  }
  /* the design constraints with the final design's values */
  if (m->n_design_constraints > 0) {
    fputs(",\n    \"constraints\": [", f);
    for (int i = 0; i < m->n_design_constraints; i++) {
      const vox_design_constraint *c = &m->design_constraints[i];
      fprintf(f, "%s\n      {\"name\": ", i ? "," : "");
      json_name(f, c->name);
      fprintf(f, ", \"kind\": \"%s\", \"relation\": \"%s\", ",
              vox_design_constraint_kind_name(c->kind), c->equal ? "=" : "<=");
      if (c->kind == VOX_CONSTRAINT_COMPLIANCE) {
        fputs("\"load_case\": ", f);
        if (c->load_case < m->n_load_cases) json_name(f, m->load_case_names[c->load_case]);
        else fputs("null", f);
      } else {
        fprintf(f, "\"label\": %d", c->label);
      }
      fputs(", \"limit\": ", f);
      json_number(f, c->limit);
      fputs(", \"value\": ", f);
      json_number(f, constraint_value(m, i));
      fputc('}', f);
    }
    fputs("\n    ]", f);
  }
  fputs("\n  }", f);
  write_json_analysis(f, s);
  return failed;
}

/* --- CSV -------------------------------------------------------------------- */

/* Text made valid UTF-8 (U+FFFD for bad bytes); NULL when out of memory. */
static char *valid_utf8(const char *text) {
  size_t len = strlen(text);
  char *out = malloc(3 * len + 1);
  if (!out) return NULL;
  const unsigned char *s = (const unsigned char *)text;
  char *o = out;
  while (*s) {
    int n = utf8_length(s);
    if (n == 0) {
      memcpy(o, "\xEF\xBF\xBD", 3);
      o += 3;
      s++;
    } else {
      memcpy(o, s, (size_t)n);
      o += n;
      s += n;
    }
  }
  *o = '\0';
  return out;
}

/* A field, quoted when RFC 4180 needs it (and for leading or trailing blanks,
 * which some readers strip). */
void vox_csv_field(FILE *f, const char *text, int last) {
  char *t = valid_utf8(text);
  const char *v = t ? t : "";
  size_t len = strlen(v);
  int quote = strpbrk(v, ",\"\r\n") != NULL ||
              (len > 0 && (v[0] == ' ' || v[0] == '\t' || v[len - 1] == ' ' || v[len - 1] == '\t'));
  if (quote) {
    fputc('"', f);
    for (const char *p = v; *p; p++) {
      if (*p == '"') fputc('"', f);
      fputc(*p, f);
    }
    fputc('"', f);
  } else {
    fputs(v, f);
  }
  fputc(last ? '\n' : ',', f);
  free(t);
}

static void csv_number(FILE *f, double value) {
  char text[32] = "";
  if (isfinite(value)) format_double(text, value);
  vox_csv_field(f, text, 0);
}

static void csv_integer(FILE *f, long long value) {
  char text[32];
  snprintf(text, sizeof text, "%lld", value);
  vox_csv_field(f, text, 0);
}

/* A packed list field, built in `mem` (NULL if open_memstream failed, which
 * sets *failed); the text is freed. */
static void csv_packed(FILE *f, char **text, FILE *mem, int *failed) {
  if (!mem || ferror(mem)) *failed = 1;
  if (mem && fclose(mem) != 0) *failed = 1;
  vox_csv_field(f, *text ? *text : "", 0);
  free(*text);
  *text = NULL;
}

static void short_number(FILE *f, double value) {
  char text[32] = "nan";
  if (isfinite(value)) format_double(text, value);
  else if (isinf(value)) snprintf(text, sizeof text, "%s", value > 0 ? "inf" : "-inf");
  fputs(text, f);
}

/* The value of design constraint i of the final design: the run's end
 * record, else the last history row's; NaN where neither has it. */
static double constraint_value(const vox_model *m, int i) {
  if (m->final_constraint) return m->final_constraint[i];
  if (m->history_constraint && m->n_history > 0)
    return m->history_constraint[(m->n_history - 1) * (size_t)m->n_design_constraints + (size_t)i];
  return NAN;
}

/* "volume of label 4 <= 0.3", "compliance of load case tip <= 120" */
static void constraint_text(FILE *f, const vox_model *m, const vox_design_constraint *c) {
  if (c->kind == VOX_CONSTRAINT_COMPLIANCE)
    fprintf(f, "compliance of load case %.*s <= ", VOX_NAME_MAX,
            c->load_case < m->n_load_cases ? m->load_case_names[c->load_case] : "?");
  else if (c->label)
    fprintf(f, "volume of label %d %s ", c->label, c->equal ? "=" : "<=");
  else
    fprintf(f, "volume %s ", c->equal ? "=" : "<=");
  short_number(f, c->limit);
}

/* Returns non-zero if memory ran out for a packed field. */
static int write_csv(FILE *f, const vox_model *m, const summary *s, int header) {
  int failed = 0;
  const vox_grid *g = &m->grid;
  if (header) fputs(VOX_SUMMARY_CSV_COLUMNS "\n", f);
  vox_csv_field(f, m->title ? m->title : "", 0);
  vox_csv_field(f, vox_stage_name(m->stage), 0);
  csv_integer(f, g->nx);
  csv_integer(f, g->ny);
  csv_integer(f, g->nz);
  for (int a = 0; a < 3; a++) csv_number(f, g->voxel_size[a]);
  for (int a = 0; a < 3; a++) csv_number(f, g->origin[a]);
  csv_integer(f, s->voxels);

  char *text = NULL;
  size_t size = 0;
  FILE *mem = open_memstream(&text, &size);
  for (int label = 0, first = 1; mem && label < 256; label++)
    if (s->per_label[label]) {
      fprintf(mem, "%s%d:%lld", first ? "" : " ", label, (long long)s->per_label[label]);
      first = 0;
    }
  csv_packed(f, &text, mem, &failed);

  csv_integer(f, m->n_materials);
  mem = open_memstream(&text, &size);
  for (int i = 0; mem && i < m->n_materials; i++) {
    const vox_material *mat = &m->materials[i];
    fprintf(mem, "%s%d %.*s (E ", i ? "; " : "", mat->label, VOX_NAME_MAX, mat->name);
    short_number(mem, mat->youngs_modulus);
    fputs(", nu ", mem);
    short_number(mem, mat->poisson_ratio);
    fputc(')', mem);
  }
  csv_packed(f, &text, mem, &failed);

  csv_integer(f, (long long)m->n_constraints);
  csv_integer(f, (long long)s->constrained_nodes);
  csv_integer(f, (long long)m->n_loads);
  csv_integer(f, m->n_load_cases);
  mem = open_memstream(&text, &size);
  for (int c = 0; mem && c < m->n_load_cases; c++) {
    fprintf(mem, "%s%.*s (", c ? "; " : "", VOX_NAME_MAX, m->load_case_names[c]);
    for (int a = 0; a < 3; a++) {
      if (a) fputc(' ', mem);
      short_number(mem, s->cases[c].force[a]);
    }
    fputc(')', mem);
  }
  csv_packed(f, &text, mem, &failed);

  const vox_history_row *r = s->last;
  if (s->has_design) csv_integer(f, (long long)m->n_history);
  else vox_csv_field(f, "", 0);
  csv_number(f, s->objective);
  csv_number(f, s->volume_fraction);
  csv_number(f, r ? r->change : NAN);
  csv_number(f, s->non_discreteness);
  csv_number(f, r ? r->penalty : NAN);
  csv_number(f, r ? r->q : NAN);
  csv_number(f, s->cg_iterations);
  csv_number(f, s->seconds);
  csv_number(f, s->density_min);
  csv_number(f, s->density_max);
  vox_csv_field(f, s->stop_reason ? s->stop_reason : "", 0);
  csv_number(f, s->max_displacement);
  csv_number(f, s->max_von_mises);
  csv_number(f, s->max_sed);
  char last[32] = "";
  if (isfinite(s->max_effective_strain)) format_double(last, s->max_effective_strain);
  vox_csv_field(f, last, 0);
  /* each design constraint: "name: what <= limit: final value" */
  mem = open_memstream(&text, &size);
  for (int i = 0; mem && i < m->n_design_constraints; i++) {
    const vox_design_constraint *c = &m->design_constraints[i];
    fprintf(mem, "%s%.*s: ", i ? "; " : "", VOX_NAME_MAX, c->name);
    constraint_text(mem, m, c);
    fputs(": ", mem);
    short_number(mem, constraint_value(m, i));
  }
  if (!mem || ferror(mem)) failed = 1;
  if (mem && fclose(mem) != 0) failed = 1;
  vox_csv_field(f, text ? text : "", 1);
  free(text);
  return failed;
}

/* --- the atomic write ------------------------------------------------------- */

/* Writes `size` bytes of `data` to a temporary file and renames it over
 * `path`; on failure removes the temporary and leaves `path` alone. */
static vox_status write_file(vox_context *ctx, const char *path, const char *data, size_t size) {
  char *tmp = NULL;
  int fd = vox_open_temp(path, &tmp);
  if (fd < 0) return vox_error(ctx, VOX_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
  const int err = vox_commit_temp(fd, tmp, path, vox_write_all(fd, data, size));
  if (err) return vox_error(ctx, VOX_ERR_IO, "%s: cannot write: %s", path, strerror(err));
  return VOX_OK;
}

/* --- the writers ------------------------------------------------------------ */

static vox_status write_summary(vox_context *ctx, const char *path, const vox_model *m,
                                const vox_result_data *result, int csv, int header) {
  summary s;
  vox_status status = gather(ctx, path, m, result, &s);
  if (status != VOX_OK) return status;
  char *text = NULL;
  size_t size = 0;
  FILE *f = open_memstream(&text, &size);
  if (!f) {
    free(s.cases);
    return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
  }
  int failed = csv ? write_csv(f, m, &s, header) : write_json(f, m, &s);
  if (ferror(f)) failed = 1;
  if (fclose(f) != 0) failed = 1;
  free(s.cases);
  if (failed || !text) {
    free(text);
    return vox_error(ctx, VOX_ERR_NO_MEMORY, "%s: out of memory formatting the summary", path);
  }
  status = write_file(ctx, path, text, size);
  free(text);
  return status;
}

vox_status vox_write_summary_json(vox_context *ctx, const char *path, const vox_model *m) {
  return write_summary(ctx, path, m, NULL, 0, 0);
}

vox_status vox_write_summary_csv(vox_context *ctx, const char *path, const vox_model *m,
                                 int header) {
  return write_summary(ctx, path, m, NULL, 1, header);
}

vox_status vox_write_result_summary_json(vox_context *ctx, const char *path, const vox_model *m,
                                         const vox_result_data *result) {
  return write_summary(ctx, path, m, result, 0, 0);
}

vox_status vox_write_result_summary_csv(vox_context *ctx, const char *path, const vox_model *m,
                                        const vox_result_data *result, int header) {
  return write_summary(ctx, path, m, result, 1, header);
}
