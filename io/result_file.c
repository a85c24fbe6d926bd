/* The analysis result file: the model file that vox_model_write makes (its
 * displacement on the bone nodes, schema version 4) with the analysis
 * variables and the `results` group added in the same pass
 * (model_writer.h): element fields over the bone elements, the reaction of
 * each constraint. Written under a temporary name, synced and renamed into
 * place once complete, like every model file. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <netcdf.h>

#include "model_writer.h"
#include "voxfe/io.h"
#include "voxfe/result_file.h"

typedef struct result_writer {
  vox_context *ctx;
  const char *path;
  const vox_model *model;
  const vox_analysis_output *out;
  int v_index, v_reaction, v_field[5];
} result_writer;

static vox_status nc_fail(result_writer *w, int err, const char *what) {
  return vox_error(w->ctx, VOX_ERR_IO, "%s: cannot write %s: %s", w->path, what, nc_strerror(err));
}

#define R_TRY(w, call, what)                                                      \
  do {                                                                            \
    int r_err_ = (call);                                                          \
    if (r_err_) return nc_fail(w, r_err_, what);                                  \
  } while (0)

static int put_text(int ncid, int varid, const char *name, const char *text) {
  return nc_put_att_text(ncid, varid, name, strlen(text), text);
}

/* A variable written whole, so without fill, stored contiguous and
 * uncompressed: the floats of a solution deflate by under 10 %, and
 * netCDF deflates on one thread (docs/benchmarks.md, issue 6). */
static int def_plain_var(int ncid, const char *name, nc_type type, int ndims, const int *dims,
                         int *varid) {
  int err = nc_def_var(ncid, name, type, ndims, dims, varid);
  if (!err) err = nc_def_var_fill(ncid, *varid, NC_NOFILL, NULL);
  if (!err) err = nc_def_var_chunking(ncid, *varid, NC_CONTIGUOUS, NULL);
  return err;
}

static int var_atts(int ncid, int varid, const char *long_name, const char *units,
                    const char *comment) {
  int err = put_text(ncid, varid, "long_name", long_name);
  if (!err && units) err = put_text(ncid, varid, "units", units);
  if (!err && comment) err = put_text(ncid, varid, "comment", comment);
  return err;
}

static const char voigt_comment[] =
    "Voigt order xx, yy, zz, yz, zx, xy (strain_component 0..5); shear strains are "
    "engineering strains (2 eps_ij); at the element centre of each bone element";

static const char *const field_names[5] = {"strain", "stress", "strain_energy_density",
                                           "von_mises", "effective_strain"};

static const double *field_data(const vox_element_fields *f, int i) {
  const double *d[5] = {f->strain, f->stress, f->sed, f->von_mises, f->effective_strain};
  return d[i];
}

static vox_status define_analysis(void *user, int ncid) {
  result_writer *w = user;
  const vox_analysis_output *out = w->out;
  int voigt, bone, results;
  R_TRY(w, nc_def_dim(ncid, "strain_component", 6, &voigt), "dimension strain_component");
  R_TRY(w, nc_def_dim(ncid, "bone_element", out->fields.n_elements, &bone),
        "dimension bone_element");
  /* int32 where the grid's elements fit (half the bytes; readers convert) */
  const nc_type index_type = vox_grid_elements(&w->model->grid) <= INT32_MAX ? NC_INT : NC_INT64;
  R_TRY(w, def_plain_var(ncid, "bone_element_index", index_type, 1, &bone, &w->v_index),
        "bone_element_index");
  R_TRY(w,
        var_atts(ncid, w->v_index, "grid element of each bone element", NULL,
                 "(k * ny + j) * nx + i for voxel (i, j, k); the non-empty voxels in element "
                 "order"),
        "bone_element_index");
  if (w->model->n_constraints > 0) {
    int constraint;
    R_TRY(w, nc_inq_dimid(ncid, "constraint", &constraint), "dimension constraint");
    R_TRY(w, def_plain_var(ncid, "constraint_reaction", NC_DOUBLE, 1, &constraint,
                           &w->v_reaction),
          "constraint_reaction");
    R_TRY(w,
          var_atts(ncid, w->v_reaction, "reaction force of the support", "N",
                   "(K u) at the constraint's node and component; a node and component "
                   "constrained twice has its reaction at the first of its constraints, 0 at "
                   "the others"),
          "constraint_reaction");
  }
  const int tensor[2] = {bone, voigt};
  for (int i = 0; i < 5; i++)
    R_TRY(w, def_plain_var(ncid, field_names[i], NC_FLOAT, i < 2 ? 2 : 1, tensor, &w->v_field[i]),
          field_names[i]);
  R_TRY(w, var_atts(ncid, w->v_field[0], "element strain", "1", voigt_comment), "strain");
  R_TRY(w, var_atts(ncid, w->v_field[1], "element stress", "MPa", voigt_comment), "stress");
  R_TRY(w,
        var_atts(ncid, w->v_field[2], "element strain-energy density", "MPa",
                 "element strain energy 1/2 u'Ke u over the element volume (mJ/mm^3)"),
        "strain_energy_density");
  R_TRY(w, var_atts(ncid, w->v_field[3], "von Mises stress at the element centre", "MPa", NULL),
        "von_mises");
  R_TRY(w,
        var_atts(ncid, w->v_field[4], "effective strain sqrt(2 SED / E)", "1",
                 "E the element's Young's modulus (Pistoia et al. 2002)"),
        "effective_strain");

  R_TRY(w, nc_def_grp(ncid, "results", &results), "group results");
  R_TRY(w, put_text(results, NC_GLOBAL, "comment", "summary of the analysis; <name>_units "
                                                   "gives a value's units"),
        "group results");
  for (size_t i = 0; i < out->n_summary; i++) {
    const vox_summary_entry *e = &out->summary[i];
    if (e->text)
      R_TRY(w, put_text(results, NC_GLOBAL, e->name, e->text), e->name);
    else
      R_TRY(w, nc_put_att_double(results, NC_GLOBAL, e->name, NC_DOUBLE, 1, &e->value), e->name);
    if (e->units) {
      char units_name[VOX_NAME_MAX + 8];
      snprintf(units_name, sizeof units_name, "%s_units", e->name);
      R_TRY(w, put_text(results, NC_GLOBAL, units_name, e->units), e->name);
    }
  }
  return VOX_OK;
}

/* The reaction of each constraint, the first of a repeated dof only. */
static vox_status put_reactions(result_writer *w, int ncid) {
  const vox_model *m = w->model;
  const size_t n = m->n_constraints, n_dofs = 3 * (size_t)vox_grid_nodes(&m->grid);
  double *value = malloc(n * sizeof *value);
  uint8_t *taken = calloc(n_dofs, 1);
  if (!value || !taken) {
    free(value), free(taken);
    return vox_error(w->ctx, VOX_ERR_NO_MEMORY, "%s: out of memory", w->path);
  }
  for (size_t i = 0; i < n; i++) {
    const size_t dof = 3 * (size_t)m->constraints[i].node + (size_t)m->constraints[i].component;
    value[i] = taken[dof] ? 0 : w->out->reaction[dof];
    taken[dof] = 1;
  }
  int err = nc_put_var_double(ncid, w->v_reaction, value);
  free(value), free(taken);
  return err ? nc_fail(w, err, "constraint_reaction") : VOX_OK;
}

static vox_status put_analysis(void *user, int ncid) {
  result_writer *w = user;
  const vox_element_fields *f = &w->out->fields;
  R_TRY(w, vox_put_indices(ncid, w->v_index, f->elements, f->n_elements), "bone_element_index");
  if (w->model->n_constraints > 0) {
    vox_status s = put_reactions(w, ncid);
    if (s) return s;
  }
  /* doubles to floats (7 digits, half the bytes), in parallel */
  const size_t nb = f->n_elements;
  float *buf = malloc((nb ? 6 * nb : 1) * sizeof *buf);
  if (!buf) return vox_error(w->ctx, VOX_ERR_NO_MEMORY, "%s: out of memory", w->path);
  for (int i = 0; i < 5; i++) {
    const double *x = field_data(f, i);
    const ptrdiff_t n = (ptrdiff_t)(i < 2 ? 6 * nb : nb);
#pragma omp parallel for schedule(static)
    for (ptrdiff_t k = 0; k < n; k++) buf[k] = (float)x[k];
    int err = nc_put_var_float(ncid, w->v_field[i], buf);
    if (err) {
      free(buf);
      return nc_fail(w, err, field_names[i]);
    }
  }
  free(buf);
  return VOX_OK;
}

vox_status vox_result_write(vox_context *ctx, const char *path, const vox_model *model,
                            const vox_analysis_output *output) {
  const vox_element_fields *f = &output->fields;
  if (!model->displacement || model->stage != VOX_STAGE_ANALYSIS ||
      model->physics != VOX_PHYSICS_ELASTICITY || !output->reaction || !f->strain ||
      !f->stress || !f->sed || !f->von_mises || !f->effective_strain)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "%s: an analysis result needs the displacement and every field", path);
  /* the fields of the bone elements, entry k for the k-th non-empty voxel */
  const int64_t ne = vox_grid_elements(&model->grid);
  size_t k = 0, bad = !f->elements;
  for (int64_t e = 0; e < ne && !bad; e++)
    if (model->label[e]) bad = k >= f->n_elements || f->elements[k++] != e;
  if (bad || k != f->n_elements)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "%s: the element fields must be those of the non-empty voxels "
                     "(vox_bone_elements)",
                     path);
  result_writer w = {ctx, path, model, output, -1, -1, {-1, -1, -1, -1, -1}};
  const vox_model_extra extra = {define_analysis, put_analysis, &w};
  return vox_model_write_extra(ctx, path, model, &extra);
}
