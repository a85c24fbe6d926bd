/* SPDX-License-Identifier: BSD-3-Clause */
/* The model writer with more in the same file (private to io/): the
 * analysis result file is a model file plus the analysis's variables,
 * defined and written in the one pass of vox_model_write, so that the file
 * is created, synced and renamed once. */
#ifndef VOXFE_MODEL_WRITER_H
#define VOXFE_MODEL_WRITER_H

#include "voxfe/io.h"

/* `define` runs in define mode after the model's variables are defined
 * (dimensions such as "constraint" or "bone_node" exist then), `put` after
 * the model's data are written; each returns VOX_OK or the error it set on
 * the context, naming the destination path. */
typedef struct vox_model_extra {
  vox_status (*define)(void *user, int ncid);
  vox_status (*put)(void *user, int ncid);
  /* NULL, or run in data mode just before the model's displacement is read
   * and written (everything else of the model is written by then): where a
   * writer that starts before the solve waits for the solution */
  vox_status (*before_displacement)(void *user, int ncid);
  void *user;
} vox_model_extra;

/* vox_model_write_with, with `extra` (NULL: none) adding to the file. */
vox_status vox_model_write_extra(vox_context *ctx, const char *path, const vox_model *model,
                                 const vox_write_options *options, const vox_model_extra *extra);

/* Creates an empty file under a fresh name "<path>.tmp.<pid>.<random>"
 * beside `path` (same folder, so that rename() is atomic; O_EXCL, mode 0666
 * less the umask) and returns the name (malloc'd) in `out`; the error names
 * the path. */
vox_status vox_create_temp(vox_context *ctx, const char *path, char **out);

/* Flushes a finished temporary file to disk before its rename; 0 or errno. */
int vox_sync_file(const char *tmp);

/* Asks the kernel to start writing the open file's data so far to the
 * disk, without waiting: where a writer waits for the caller next (the
 * result file beside the analysis: once the displacement is in, once the
 * fields are), that part of the final sync runs meanwhile. A hint:
 * failure changes nothing. */
void vox_start_writeback(int ncid);

/* Writes the `n` indices of a whole int32 or int64 variable, converted in
 * parallel here (netCDF's own conversion took longer than the write);
 * returns a netCDF status. */
int vox_put_indices(int ncid, int varid, const int64_t *index, size_t n);

#endif
