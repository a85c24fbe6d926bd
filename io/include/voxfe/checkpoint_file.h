/* SPDX-License-Identifier: BSD-3-Clause */
/* voxfe-optimize's checkpoint file (docs/file-format.md, "Checkpoints"): a
 * design file of the run so far (the model with its history, snapshots
 * and the density of the checkpoint's design iteration) plus the
 * optimizer's state (voxfe/checkpoint.h) in the group `checkpoint`, from
 * which vox_optimize goes on (vox_optimizer_options.resume). */
#ifndef VOXFE_CHECKPOINT_FILE_H
#define VOXFE_CHECKPOINT_FILE_H

#include "voxfe/checkpoint.h"
#include "voxfe/model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Writes `model` as vox_model_write does, and the state beside it,
 * atomically (a temporary file renamed into place when complete, so that
 * a run killed while writing leaves the last checkpoint as it was). */
vox_status vox_checkpoint_write(vox_context *ctx, const char *path, const vox_model *model,
                                const vox_checkpoint *state);

/* Reads a checkpoint file into a zeroed model (vox_model_read) and a
 * zeroed state; a file without the group `checkpoint` (a design file) is
 * VOX_ERR_FORMAT "not a checkpoint". On error both are left zeroed. */
vox_status vox_checkpoint_read(vox_context *ctx, const char *path, vox_model *model,
                               vox_checkpoint *state);

#ifdef __cplusplus
}
#endif
#endif
