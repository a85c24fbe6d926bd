/* SPDX-License-Identifier: BSD-3-Clause */
/* voxfe-optimize's checkpoints (cli_checkpoint.h). */
#include "cli_checkpoint.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_common.h"
#include "cli_files.h"
#include "cli_signals.h"
#include "voxfe/checkpoint_file.h"

char *cli_checkpoint_path(const char *output, const char *given) {
  if (given) return strdup(given);
  const size_t stem = strlen(output) - strlen(cli_extension(output));
  static const char suffix[] = ".checkpoint.nc";
  char *path = malloc(stem + sizeof suffix);
  if (!path) return NULL;
  memcpy(path, output, stem);
  memcpy(path + stem, suffix, sizeof suffix);
  return path;
}

vox_status cli_checkpoint_write(void *self, const vox_model *model, const vox_checkpoint *state) {
  cli_checkpointer *c = self;
  /* the file's history gets the line, the run's model does not (its own
   * file gets it once, at the end) */
  vox_model copy = *model;
  copy.history_text = model->history_text ? strdup(model->history_text) : NULL;
  vox_status s = model->history_text && !copy.history_text
                     ? vox_error(c->ctx, VOX_ERR_NO_MEMORY, "out of memory")
                     : vox_model_append_history(c->ctx, &copy, c->history);
  if (s == VOX_OK) s = vox_checkpoint_write(c->ctx, c->path, &copy, state);
  free(copy.history_text);
  if (s == VOX_OK) c->written++;
  return s;
}

int cli_interrupted(void *self) {
  (void)self;
  return cli_signal_received() != 0;
}

int cli_resume(vox_context *ctx, const char *path, vox_model *model, vox_checkpoint *state) {
  vox_model saved;
  vox_status s = vox_checkpoint_read(ctx, path, &saved, state);
  if (s != VOX_OK) return cli_fail(ctx, s, CLI_READING);
  /* the run's rows and snapshots so far are the checkpoint's */
  free(model->history);
  model->history = saved.history;
  model->n_history = saved.n_history;
  saved.history = NULL;
  saved.n_history = 0;
  /* and their design constraints' values (the model's constraints are the
   * checkpoint's: vox_optimize checks the model against it) */
  free(model->history_constraint);
  model->history_constraint = saved.history_constraint;
  saved.history_constraint = NULL;
  free(model->snapshot_iteration);
  free(model->snapshot_density);
  model->snapshot_iteration = saved.snapshot_iteration;
  model->snapshot_density = saved.snapshot_density;
  model->n_snapshots = saved.n_snapshots;
  saved.snapshot_iteration = NULL;
  saved.snapshot_density = NULL;
  saved.n_snapshots = 0;
  vox_model_free(&saved);
  return 0;
}
