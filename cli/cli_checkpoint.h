/* SPDX-License-Identifier: BSD-3-Clause */
/* voxfe-optimize's checkpoints (--checkpoint-every, --checkpoint,
 * --resume): the file's name, the optimizer's callbacks that write it and
 * that ask whether a signal came, and the resumed run's start. */
#ifndef VOXFE_CLI_CHECKPOINT_H
#define VOXFE_CLI_CHECKPOINT_H

#include "voxfe/checkpoint.h"
#include "voxfe/context.h"
#include "voxfe/model.h"

/* The checkpoint's file: `given` (--checkpoint), else the output's name
 * with ".checkpoint.nc" in place of its extension (design.nc:
 * design.checkpoint.nc). malloc'd; NULL when out of memory. */
char *cli_checkpoint_path(const char *output, const char *given);

typedef struct cli_checkpointer {
  vox_context *ctx;
  const char *path;
  const char *history; /* the program's history line, for the file's `history` */
  int written;         /* checkpoints written */
} cli_checkpointer;

/* vox_optimizer_options.checkpoint: writes the file (atomically), with the
 * history line appended to the file's history. */
vox_status cli_checkpoint_write(void *self, const vox_model *model, const vox_checkpoint *state);

/* vox_optimizer_options.interrupted: a deferred SIGINT or SIGTERM came
 * (cli_signals.h). */
int cli_interrupted(void *self);

/* --resume: reads the checkpoint and puts its history and snapshots into
 * `model` (the run's model, read from its own file) in place of the
 * model's; returns 0 or the exit status after one line. */
int cli_resume(vox_context *ctx, const char *path, vox_model *model, vox_checkpoint *state);

#endif
