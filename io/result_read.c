/* SPDX-License-Identifier: BSD-3-Clause */
/* vox_result_read: the parts of an analysis result file that vox_model_read
 * leaves out (the element fields over the bone elements, the reaction of
 * each constraint, the group `results`), for the programs that show a
 * result (voxfe-export). The layout is docs/file-format.md's "Analysis
 * results" (io/result_file.c writes it). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <netcdf.h>

#include "voxfe/result_file.h"

typedef struct reader {
  vox_context *ctx;
  const char *path;
  int ncid;
} reader;

static vox_status nc_fail(reader *r, int err, const char *what) {
  vox_status status = err > 0 ? VOX_ERR_IO : err == NC_ENOMEM ? VOX_ERR_NO_MEMORY : VOX_ERR_FORMAT;
  return vox_error(r->ctx, status, "%s: cannot read %s: %s", r->path, what, nc_strerror(err));
}

#define TRY(r, call, what)                                                                         \
  do {                                                                                             \
    int try_err_ = (call);                                                                         \
    if (try_err_ != NC_NOERR) return nc_fail((r), try_err_, (what));                               \
  } while (0)

/* The variable `name` over the dimensions `dims` (ndims of them, by name),
 * or -1 when the file has no such variable. */
static vox_status find_var(reader *r, const char *name, int ndims, const char *const *dims,
                           int *varid) {
  int err = nc_inq_varid(r->ncid, name, varid);
  if (err == NC_ENOTVAR) {
    *varid = -1;
    return VOX_OK;
  }
  TRY(r, err, name);
  int nd, dimids[NC_MAX_VAR_DIMS];
  TRY(r, nc_inq_varndims(r->ncid, *varid, &nd), name);
  int same = nd == ndims;
  if (same) TRY(r, nc_inq_vardimid(r->ncid, *varid, dimids), name);
  for (int i = 0; same && i < nd; i++) {
    char dim_name[NC_MAX_NAME + 1];
    TRY(r, nc_inq_dimname(r->ncid, dimids[i], dim_name), name);
    same = strcmp(dim_name, dims[i]) == 0;
  }
  if (!same)
    return vox_error(r->ctx, VOX_ERR_FORMAT, "%s: variable '%s' is not over (%s%s%s)", r->path,
                     name, dims[0], ndims > 1 ? ", " : "", ndims > 1 ? dims[1] : "");
  return VOX_OK;
}

static double *alloc_doubles(size_t n) { return malloc((n ? n : 1) * sizeof(double)); }

/* The element fields: bone_element_index and the five fields over it. */
static vox_status read_fields(reader *r, const vox_model *model, vox_result_data *out) {
  static const char *const bone[] = {"bone_element"};
  static const char *const tensor[] = {"bone_element", "strain_component"};
  int v_index;
  vox_status s = find_var(r, "bone_element_index", 1, bone, &v_index);
  if (s || v_index < 0) return s; /* no fields: the layout of schema version 1 */
  int dim;
  size_t n;
  TRY(r, nc_inq_dimid(r->ncid, "bone_element", &dim), "bone_element");
  TRY(r, nc_inq_dimlen(r->ncid, dim, &n), "bone_element");
  static const char *const names[5] = {"strain", "stress", "strain_energy_density", "von_mises",
                                       "effective_strain"};
  int v_field[5];
  for (int i = 0; i < 5; i++) {
    if ((s = find_var(r, names[i], i < 2 ? 2 : 1, i < 2 ? tensor : bone, &v_field[i]))) return s;
    if (v_field[i] < 0)
      return vox_error(r->ctx, VOX_ERR_FORMAT,
                       "%s: has bone_element_index but not the element field '%s'", r->path,
                       names[i]);
  }
  vox_element_fields *f = &out->fields;
  out->elements = malloc((n ? n : 1) * sizeof *out->elements);
  f->strain = alloc_doubles(6 * n);
  f->stress = alloc_doubles(6 * n);
  f->sed = alloc_doubles(n);
  f->von_mises = alloc_doubles(n);
  f->effective_strain = alloc_doubles(n);
  if (!out->elements || !f->strain || !f->stress || !f->sed || !f->von_mises ||
      !f->effective_strain)
    return vox_error(r->ctx, VOX_ERR_NO_MEMORY, "%s: out of memory", r->path);
  f->elements = out->elements;
  f->n_elements = n;
  /* through a small buffer: long long and int64_t are distinct types */
  enum { CHUNK = 1 << 14 };
  long long buf[CHUNK];
  for (size_t start = 0; start < n; start += CHUNK) {
    size_t count = n - start < CHUNK ? n - start : CHUNK;
    TRY(r, nc_get_vara_longlong(r->ncid, v_index, &start, &count, buf), "bone_element_index");
    for (size_t k = 0; k < count; k++) out->elements[start + k] = (int64_t)buf[k];
  }
  double *data[5] = {f->strain, f->stress, f->sed, f->von_mises, f->effective_strain};
  for (int i = 0; i < 5; i++) TRY(r, nc_get_var_double(r->ncid, v_field[i], data[i]), names[i]);
  /* The fields are put back on the grid through the index: it must name
   * distinct non-empty voxels, ascending, as the writer stores them. */
  const int64_t ne = vox_grid_elements(&model->grid);
  for (size_t k = 0; k < n; k++) {
    const int64_t e = out->elements[k];
    if (e < 0 || e >= ne || (k > 0 && e <= out->elements[k - 1]) || model->label[e] == 0)
      return vox_error(r->ctx, VOX_ERR_FORMAT,
                       "%s: bone_element_index[%zu] = %lld is not a non-empty voxel after the "
                       "previous one",
                       r->path, k, (long long)e);
  }
  return VOX_OK;
}

static vox_status read_reactions(reader *r, const vox_model *model, vox_result_data *out) {
  static const char *const constraint[] = {"constraint"};
  int v;
  vox_status s = find_var(r, "constraint_reaction", 1, constraint, &v);
  if (s || v < 0 || model->n_constraints == 0) return s;
  if (!(out->constraint_reaction = alloc_doubles(model->n_constraints)))
    return vox_error(r->ctx, VOX_ERR_NO_MEMORY, "%s: out of memory", r->path);
  out->n_constraints = model->n_constraints;
  TRY(r, nc_get_var_double(r->ncid, v, out->constraint_reaction), "constraint_reaction");
  return VOX_OK;
}

/* A text attribute of group `grp` as a new string. */
static vox_status read_text(reader *r, int grp, const char *name, size_t len, char **text) {
  if (!(*text = malloc(len + 1)))
    return vox_error(r->ctx, VOX_ERR_NO_MEMORY, "%s: out of memory", r->path);
  (*text)[len] = '\0';
  TRY(r, nc_get_att_text(grp, NC_GLOBAL, name, *text), name);
  return VOX_OK;
}

static int ends_with(const char *s, const char *tail) {
  size_t n = strlen(s), m = strlen(tail);
  return n > m && strcmp(s + n - m, tail) == 0;
}

/* The group `results`: one entry per attribute (a text or one number),
 * with its units from the attribute <name>_units beside it. */
static vox_status read_summary(reader *r, vox_result_data *out) {
  int grp, err = nc_inq_grp_ncid(r->ncid, "results", &grp);
  if (err == NC_ENOGRP) return VOX_OK;
  TRY(r, err, "group results");
  int n_atts;
  TRY(r, nc_inq_natts(grp, &n_atts), "group results");
  if (!(out->summary = calloc((size_t)n_atts + 1, sizeof *out->summary)))
    return vox_error(r->ctx, VOX_ERR_NO_MEMORY, "%s: out of memory", r->path);
  for (int a = 0; a < n_atts; a++) {
    char name[NC_MAX_NAME + 1];
    nc_type type;
    size_t len;
    TRY(r, nc_inq_attname(grp, NC_GLOBAL, a, name), "group results");
    TRY(r, nc_inq_att(grp, NC_GLOBAL, name, &type, &len), name);
    if (strcmp(name, "comment") == 0 || ends_with(name, "_units") ||
        strlen(name) >= VOX_NAME_MAX)
      continue;
    vox_summary_entry *e = &out->summary[out->n_summary];
    memcpy(e->name, name, strlen(name) + 1);
    e->value = NAN;
    if (type == NC_CHAR) {
      vox_status s = read_text(r, grp, name, len, (char **)&e->text);
      if (s) return s;
    } else if (type != NC_STRING && len == 1) {
      TRY(r, nc_get_att_double(grp, NC_GLOBAL, name, &e->value), name);
    } else {
      continue; /* nothing the writer puts there */
    }
    out->n_summary++;
    char units_name[NC_MAX_NAME + 8];
    snprintf(units_name, sizeof units_name, "%s_units", name);
    if (nc_inq_att(grp, NC_GLOBAL, units_name, &type, &len) == NC_NOERR && type == NC_CHAR) {
      vox_status s = read_text(r, grp, units_name, len, (char **)&e->units);
      if (s) return s;
    }
  }
  return VOX_OK;
}

void vox_result_data_free(vox_result_data *r) {
  if (!r) return;
  free(r->elements);
  free(r->fields.strain);
  free(r->fields.stress);
  free(r->fields.sed);
  free(r->fields.von_mises);
  free(r->fields.effective_strain);
  free(r->constraint_reaction);
  for (size_t i = 0; r->summary && i < r->n_summary; i++) {
    free((char *)r->summary[i].text);
    free((char *)r->summary[i].units);
  }
  free(r->summary);
  memset(r, 0, sizeof *r);
}

vox_status vox_result_read(vox_context *ctx, const char *path, const vox_model *model,
                           vox_result_data *out) {
  memset(out, 0, sizeof *out);
  if (!path || !model || !model->label)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "vox_result_read: no path or no model");
  reader r = {ctx, path, -1};
  int err = nc_open(path, NC_NOWRITE, &r.ncid);
  if (err) return nc_fail(&r, err, "the file");
  vox_status s = read_fields(&r, model, out);
  if (!s) s = read_reactions(&r, model, out);
  if (!s) s = read_summary(&r, out);
  nc_close(r.ncid);
  if (s) vox_result_data_free(out);
  return s;
}
