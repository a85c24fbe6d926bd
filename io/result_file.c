/* SPDX-License-Identifier: BSD-3-Clause */
/* The analysis result file: the model file that vox_model_write makes (its
 * displacement on the bone nodes, schema version 4) with the analysis
 * variables and the `results` group added in the same pass
 * (model_writer.h): element fields over the bone elements, the reaction of
 * each constraint. Written under a temporary name, synced and renamed into
 * place once complete, like every model file.
 *
 * The writing can start before the solve (vox_result_writer_start): a
 * thread of its own writes the model (labels, lists, the bone nodes and
 * elements) while the caller solves, then the displacement while the caller
 * computes the fields, then those and the summary, each once handed over
 * (the `results` group is defined last; netCDF-4 returns to define mode by
 * itself). vox_result_write runs the same steps in the calling thread with
 * everything at hand. */
#include <math.h>
#include <omp.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <netcdf.h>

#include "model_writer.h"
#include "stage_gate.h"
#include "voxfe/io.h"
#include "voxfe/result_file.h"

struct vox_result_writer {
  vox_context *ctx; /* the writer's own when it runs in a thread */
  char *path;
  const vox_model *model;
  const int64_t *elements; /* the bone elements (vox_bone_elements) */
  size_t n_elements;
  /* handed over by the caller, each before its stage (below) */
  const double *reaction;
  vox_element_fields fields;
  const vox_summary_entry *summary;
  size_t n_summary;
  vox_stage_gate gate; /* its stage raised by the caller alone */
  vox_writer_thread thread;
  int v_index, v_reaction, v_field[5];
};
typedef struct vox_result_writer result_writer;

/* What the caller has handed over: the gate's stages. */
enum { SOLVING = 1, HAS_DISPLACEMENT, HAS_FIELDS, HAS_SUMMARY };

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
 * netCDF deflates on one thread (docs/experiments.md). */
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
  int voigt, bone;
  R_TRY(w, nc_def_dim(ncid, "strain_component", 6, &voigt), "dimension strain_component");
  R_TRY(w, nc_def_dim(ncid, "bone_element", w->n_elements, &bone),
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

  return VOX_OK;
}

/* The summary: the attributes of group `results`, defined last. */
static vox_status put_summary(result_writer *w, int ncid) {
  int results;
  R_TRY(w, nc_def_grp(ncid, "results", &results), "group results");
  R_TRY(w, put_text(results, NC_GLOBAL, "comment", "summary of the analysis; <name>_units "
                                                   "gives a value's units"),
        "group results");
  for (size_t i = 0; i < w->n_summary; i++) {
    const vox_summary_entry *e = &w->summary[i];
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

/* Waits until the caller has handed over `stage` (VOX_OK) or cancelled the
 * writing (an error, which nobody reads: the caller has its own to
 * report). */
static vox_status wait_for(result_writer *w, int stage) {
  return vox_gate_wait(&w->gate, stage)
             ? VOX_OK
             : vox_error(w->ctx, VOX_ERR_INVALID_ARGUMENT, "%s: cancelled", w->path);
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
    value[i] = taken[dof] ? 0 : w->reaction[dof];
    taken[dof] = 1;
  }
  int err = nc_put_var_double(ncid, w->v_reaction, value);
  free(value), free(taken);
  return err ? nc_fail(w, err, "constraint_reaction") : VOX_OK;
}

/* The bone elements, then the wait for the solution: everything that does
 * not need it is in the file by then. The compressed variables' chunks
 * (the labels above all) stay in HDF5's chunk cache until flushed, and
 * nc_close would deflate them after the solve, one-threaded: most of what
 * a clinical sample's write had left after the solve.
 * Flushed as soon as the solver iterates on the device instead: flushed
 * at once, they slowed the solver's setup on the host by as much. */
static vox_status before_displacement(void *user, int ncid) {
  result_writer *w = user;
  R_TRY(w, vox_put_indices(ncid, w->v_index, w->elements, w->n_elements), "bone_element_index");
  vox_status s = wait_for(w, SOLVING);
  if (s) return s;
  R_TRY(w, nc_sync(ncid), "the model");
  vox_start_writeback(ncid); /* the model to the disk while the solver iterates */
  return wait_for(w, HAS_DISPLACEMENT);
}

/* The element fields and the summary once handed over (at once for
 * vox_result_write); the model and the displacement are written by then. */
static vox_status put_analysis(void *user, int ncid) {
  result_writer *w = user;
  vox_status s = wait_for(w, HAS_FIELDS);
  if (s) return s;
  const vox_element_fields *f = &w->fields;
  if (w->model->n_constraints > 0 && (s = put_reactions(w, ncid))) return s;
  /* doubles to floats (7 digits, half the bytes), in parallel */
  const size_t nb = f->n_elements;
  float *buf = vox_alloc_buffer(6 * nb * sizeof *buf);
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
    /* each field to the disk while the next is made, and the last while
     * the caller computes the statistics */
    vox_start_writeback(ncid);
  }
  free(buf);
  if ((s = wait_for(w, HAS_SUMMARY))) return s;
  return put_summary(w, ncid);
}

static vox_status write_file(result_writer *w) {
  const vox_model_extra extra = {define_analysis, put_analysis, before_displacement, w};
  return vox_model_write_extra(w->ctx, w->path, w->model, NULL, &extra);
}

/* What every result needs of the model and the element list. */
static vox_status check_model(vox_context *ctx, const char *path, const vox_model *model,
                              const int64_t *elements, size_t n_elements) {
  if (!path || !model || !model->displacement || model->stage != VOX_STAGE_ANALYSIS ||
      model->physics != VOX_PHYSICS_ELASTICITY)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "%s: an analysis result needs an elasticity model at stage analysis with "
                     "its displacement",
                     path ? path : "(no path)");
  /* the fields of the bone elements, entry k for the k-th non-empty voxel:
   * n increasing non-empty voxels, as many as there are (both in parallel) */
  const int64_t ne = vox_grid_elements(&model->grid), n = (int64_t)n_elements;
  int64_t count = 0, bad = !elements && n_elements;
#pragma omp parallel for schedule(static) reduction(+ : count)
  for (int64_t e = 0; e < ne; e++) count += model->label[e] != 0;
  if (!bad && count == n) {
#pragma omp parallel for schedule(static) reduction(| : bad)
    for (int64_t k = 0; k < n; k++)
      bad |= elements[k] < (k ? elements[k - 1] + 1 : 0) || elements[k] >= ne ||
             !model->label[elements[k]];
  }
  if (bad || count != n)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "%s: the element fields must be those of the non-empty voxels "
                     "(vox_bone_elements)",
                     path);
  return VOX_OK;
}

static vox_status check_fields(vox_context *ctx, const char *path, const double *reaction,
                               const vox_element_fields *f, const int64_t *elements,
                               size_t n_elements) {
  if (!reaction || !f || !f->strain || !f->stress || !f->sed || !f->von_mises ||
      !f->effective_strain)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "%s: an analysis result needs the reactions and every field", path);
  if (f->elements != elements || f->n_elements != n_elements)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "%s: the fields are not over the writer's bone elements", path);
  return VOX_OK;
}

static void init_writer(result_writer *w, vox_context *ctx, char *path, const vox_model *model,
                        const int64_t *elements, size_t n_elements) {
  memset(w, 0, sizeof *w);
  w->ctx = ctx, w->path = path, w->model = model;
  w->elements = elements, w->n_elements = n_elements;
  w->v_index = w->v_reaction = -1;
  for (int i = 0; i < 5; i++) w->v_field[i] = -1;
  vox_gate_init(&w->gate, 0);
}

vox_status vox_result_write(vox_context *ctx, const char *path, const vox_model *model,
                            const vox_analysis_output *output) {
  if (!output)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "%s: no analysis output", path);
  const vox_element_fields *f = &output->fields;
  vox_status s = check_model(ctx, path, model, f->elements, f->n_elements);
  if (!s) s = check_fields(ctx, path, output->reaction, f, f->elements, f->n_elements);
  if (s) return s;
  result_writer w;
  init_writer(&w, ctx, (char *)path, model, f->elements, f->n_elements);
  w.reaction = output->reaction, w.fields = *f;
  w.summary = output->summary, w.n_summary = output->n_summary;
  w.gate.stage = HAS_SUMMARY; /* everything at hand */
  s = write_file(&w);
  vox_gate_destroy(&w.gate);
  return s;
}

static vox_status write_in_thread(void *w) { return write_file(w); }

static void free_writer(result_writer *w) {
  vox_gate_destroy(&w->gate);
  vox_context_destroy(w->ctx);
  free(w->path);
  free(w);
}

vox_status vox_result_writer_start(vox_context *ctx, const char *path, const vox_model *model,
                                   const int64_t *elements, size_t n_elements,
                                   vox_result_writer **writer) {
  *writer = NULL;
  vox_status s = check_model(ctx, path, model, elements, n_elements);
  if (s) return s;
  result_writer *w = malloc(sizeof *w);
  char *copy = strdup(path);
  vox_context *own = NULL;
  if (!w || !copy || vox_context_create(&own)) {
    free(w), free(copy), vox_context_destroy(own);
    return vox_error(ctx, VOX_ERR_NO_MEMORY, "%s: out of memory", path);
  }
  init_writer(w, own, copy, model, elements, n_elements);
  if (vox_writer_start(&w->thread, write_in_thread, w)) {
    free_writer(w);
    return vox_error(ctx, VOX_ERR_NO_MEMORY, "%s: cannot start the writing thread", path);
  }
  *writer = w;
  return VOX_OK;
}

void vox_result_writer_solving(vox_result_writer *w) { vox_gate_raise(&w->gate, SOLVING); }

void vox_result_writer_put_displacement(vox_result_writer *w) {
  vox_gate_raise(&w->gate, HAS_DISPLACEMENT);
}

vox_status vox_result_writer_put_fields(vox_context *ctx, vox_result_writer *w,
                                        const double *reaction, const vox_element_fields *fields) {
  vox_status s = check_fields(ctx, w->path, reaction, fields, w->elements, w->n_elements);
  if (s) return s;
  w->reaction = reaction, w->fields = *fields;
  vox_gate_raise(&w->gate, HAS_FIELDS);
  return VOX_OK;
}

/* Hands over the summary (or cancels), waits for the thread, frees. */
static vox_status end_writer(result_writer *w, const vox_summary_entry *summary, size_t n,
                             int cancel) {
  if (cancel) {
    vox_gate_cancel(&w->gate);
  } else {
    w->summary = summary, w->n_summary = n;
    vox_gate_raise(&w->gate, HAS_SUMMARY);
  }
  return vox_writer_join(&w->thread);
}

vox_status vox_result_writer_finish(vox_context *ctx, vox_result_writer *w,
                                    const vox_summary_entry *summary, size_t n_summary) {
  if (w->gate.stage < HAS_FIELDS) { /* the caller's own writes: no lock */
    end_writer(w, NULL, 0, 1);
    free_writer(w);
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "vox_result_writer_finish: the fields were not handed over; nothing written");
  }
  vox_status s = end_writer(w, summary, n_summary, 0);
  if (s) vox_error(ctx, s, "%s", vox_context_message(w->ctx));
  free_writer(w);
  return s;
}

void vox_result_writer_cancel(vox_result_writer *w) {
  if (!w) return;
  end_writer(w, NULL, 0, 1);
  free_writer(w);
}
