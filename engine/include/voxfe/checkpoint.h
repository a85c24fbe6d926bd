/* SPDX-License-Identifier: BSD-3-Clause */
/* The state of an optimization between two design iterations, from which
 * vox_optimize continues a run as if it had never stopped
 * (vox_optimizer_options.checkpoint and .resume): a list of named arrays of
 * doubles, so that a file format can store it without knowing the
 * optimizer (io/include/voxfe/checkpoint_file.h writes and reads it).
 * Counts and flags are stored as doubles too (exact below 2^53). What the
 * names are is the optimizer's business; docs/file-format.md lists them. */
#ifndef VOXFE_CHECKPOINT_H
#define VOXFE_CHECKPOINT_H

#include <stddef.h>

#include "voxfe/context.h"
#include "voxfe/model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The version of the state's layout, the array "checkpoint_version":
 * a resume refuses a state of another. */
#define VOX_CHECKPOINT_VERSION 1

typedef struct vox_checkpoint_array {
  char name[VOX_NAME_MAX]; /* letters, digits and '_' */
  size_t length;           /* >= 1 */
  double *values;
} vox_checkpoint_array;

typedef struct vox_checkpoint {
  size_t n_arrays;
  vox_checkpoint_array *arrays;
} vox_checkpoint;

/* Appends a copy of `values` (NULL: `length` zeros) under `name`, which must
 * be new, made of letters, digits and '_', and shorter than VOX_NAME_MAX. */
vox_status vox_checkpoint_add(vox_context *ctx, vox_checkpoint *checkpoint, const char *name,
                              size_t length, const double *values);
/* The same for one number. */
vox_status vox_checkpoint_add_scalar(vox_context *ctx, vox_checkpoint *checkpoint,
                                     const char *name, double value);
/* The array called `name`, or NULL. */
const vox_checkpoint_array *vox_checkpoint_find(const vox_checkpoint *checkpoint,
                                                const char *name);
/* Frees the arrays and zeroes the struct. */
void vox_checkpoint_free(vox_checkpoint *checkpoint);

#ifdef __cplusplus
}
#endif
#endif
