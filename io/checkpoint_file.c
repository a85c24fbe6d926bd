/* SPDX-License-Identifier: BSD-3-Clause */
/* The checkpoint file (voxfe/checkpoint_file.h): the design file's writer
 * with the group `checkpoint` added, one variable per array of the state
 * (a scalar variable for one value, else a dimension "<name>_length" of
 * its own), stored whole and uncompressed: a checkpoint is written often
 * and read once, and deflate runs on one thread at about 100 MB/s
 * (docs/file-format.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <netcdf.h>

#include "model_writer.h"
#include "voxfe/checkpoint_file.h"
#include "voxfe/io.h"

#define GROUP "checkpoint"

typedef struct state_writer {
  vox_context *ctx;
  const char *path;
  const vox_checkpoint *state;
  int gid;
  int *varid;
} state_writer;

static vox_status nc_fail(vox_context *ctx, const char *path, int err, const char *what) {
  return vox_error(ctx, VOX_ERR_IO, "%s: cannot write %s: %s", path, what, nc_strerror(err));
}

static vox_status define_state(void *user, int ncid) {
  state_writer *w = user;
  const vox_checkpoint *c = w->state;
  int err = nc_def_grp(ncid, GROUP, &w->gid);
  if (err) return nc_fail(w->ctx, w->path, err, "group " GROUP);
  const int version = VOX_CHECKPOINT_VERSION;
  static const char comment[] =
      "the state of voxfe-optimize after the design iteration iterations_done, from which "
      "voxfe-optimize --resume goes on; the rest of the file is the design so far";
  if ((err = nc_put_att_text(w->gid, NC_GLOBAL, "comment", sizeof comment - 1, comment)) ||
      (err = nc_put_att_int(w->gid, NC_GLOBAL, "checkpoint_version", NC_INT, 1, &version)))
    return nc_fail(w->ctx, w->path, err, "group " GROUP);
  for (size_t i = 0; i < c->n_arrays; i++) {
    const vox_checkpoint_array *a = &c->arrays[i];
    int dim = -1;
    if (a->length > 1) {
      char dim_name[VOX_NAME_MAX + 16];
      snprintf(dim_name, sizeof dim_name, "%s_length", a->name);
      if ((err = nc_def_dim(w->gid, dim_name, a->length, &dim)))
        return nc_fail(w->ctx, w->path, err, a->name);
    }
    if ((err = nc_def_var(w->gid, a->name, NC_DOUBLE, a->length > 1, &dim, &w->varid[i])) ||
        (a->length > 1 && (err = nc_def_var_chunking(w->gid, w->varid[i], NC_CONTIGUOUS, NULL))) ||
        (err = nc_def_var_fill(w->gid, w->varid[i], NC_NOFILL, NULL)))
      return nc_fail(w->ctx, w->path, err, a->name);
  }
  return VOX_OK;
}

static vox_status put_state(void *user, int ncid) {
  (void)ncid;
  state_writer *w = user;
  for (size_t i = 0; i < w->state->n_arrays; i++) {
    int err = nc_put_var_double(w->gid, w->varid[i], w->state->arrays[i].values);
    if (err) return nc_fail(w->ctx, w->path, err, w->state->arrays[i].name);
  }
  return VOX_OK;
}

vox_status vox_checkpoint_write(vox_context *ctx, const char *path, const vox_model *model,
                                const vox_checkpoint *state) {
  if (!state || !state->n_arrays)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "%s: no checkpoint state to write",
                     path ? path : "");
  state_writer w = {ctx, path, state, -1, malloc(state->n_arrays * sizeof(int))};
  if (!w.varid) return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
  const vox_model_extra extra = {define_state, put_state, NULL, &w};
  vox_status s = vox_model_write_extra(ctx, path, model, NULL, &extra);
  free(w.varid);
  return s;
}

/* ---- reading ------------------------------------------------------------------ */

static vox_status read_state(vox_context *ctx, const char *path, int ncid, const vox_model *model,
                             vox_checkpoint *state) {
  int gid, err = nc_inq_grp_ncid(ncid, GROUP, &gid);
  if (err == NC_ENOGRP || err == NC_ENOTNC4)
    return vox_error(ctx, VOX_ERR_FORMAT,
                     "%s: not a checkpoint (no group '" GROUP "'; voxfe-optimize "
                     "--checkpoint-every writes them)", path);
  int nvars;
  if (err || (err = nc_inq_varids(gid, &nvars, NULL)))
    return vox_error(ctx, VOX_ERR_FORMAT, "%s: group " GROUP ": %s", path, nc_strerror(err));
  int *ids = malloc((size_t)(nvars > 0 ? nvars : 1) * sizeof *ids);
  if (!ids) return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
  /* no array is larger than the states of every load case and their
   * histories: a damaged header must not ask for more memory than that */
  const size_t nn = (size_t)vox_grid_nodes(&model->grid), ne = (size_t)vox_grid_elements(&model->grid);
  const size_t cases = model->n_load_cases > 0 ? (size_t)model->n_load_cases : 1;
  const size_t largest = 3 * nn * cases * 3 + ne + 1024;
  vox_status s = VOX_OK;
  if ((err = nc_inq_varids(gid, &nvars, ids)))
    s = vox_error(ctx, VOX_ERR_FORMAT, "%s: group " GROUP ": %s", path, nc_strerror(err));
  for (int i = 0; s == VOX_OK && i < nvars; i++) {
    char name[NC_MAX_NAME + 1];
    nc_type type;
    int ndims, dims[NC_MAX_VAR_DIMS];
    size_t length = 1;
    if ((err = nc_inq_var(gid, ids[i], name, &type, &ndims, NULL, NULL)) || ndims > 1 ||
        (err = nc_inq_var(gid, ids[i], NULL, NULL, NULL, dims, NULL)) ||
        (ndims == 1 && (err = nc_inq_dimlen(gid, dims[0], &length)))) {
      s = vox_error(ctx, VOX_ERR_FORMAT, "%s: checkpoint variable %d: %s", path, i,
                    err ? nc_strerror(err) : "more than one dimension");
      break;
    }
    if (type != NC_DOUBLE || length == 0 || length > largest) {
      s = vox_error(ctx, VOX_ERR_FORMAT,
                    "%s: checkpoint variable '%s' is not 1 to %zu doubles", path, name, largest);
      break;
    }
    if ((s = vox_checkpoint_add(ctx, state, name, length, NULL))) {
      char message[512];
      snprintf(message, sizeof message, "%s", vox_context_message(ctx));
      s = vox_error(ctx, s == VOX_ERR_NO_MEMORY ? s : VOX_ERR_FORMAT, "%s: %s", path, message);
      break;
    }
    double *values = state->arrays[state->n_arrays - 1].values;
    if ((err = nc_get_var_double(gid, ids[i], values)))
      s = vox_error(ctx, VOX_ERR_FORMAT, "%s: cannot read checkpoint variable '%s': %s", path,
                    name, nc_strerror(err));
  }
  free(ids);
  return s;
}

vox_status vox_checkpoint_read(vox_context *ctx, const char *path, vox_model *model,
                               vox_checkpoint *state) {
  memset(state, 0, sizeof *state);
  vox_status s = vox_model_read(ctx, path, model);
  if (s) return s;
  int ncid, err = nc_open(path, NC_NOWRITE, &ncid);
  if (err) {
    s = vox_error(ctx, VOX_ERR_FORMAT, "%s: %s", path, nc_strerror(err));
  } else {
    s = read_state(ctx, path, ncid, model, state);
    nc_close(ncid);
  }
  if (s) {
    vox_model_free(model);
    vox_checkpoint_free(state);
  }
  return s;
}
