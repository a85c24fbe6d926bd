/* SPDX-License-Identifier: BSD-3-Clause */
/* The programs' files: the checks before a run starts (so that a long run is
 * never lost to a typo in -o and an input file is never modified), reading
 * the input model and writing the output model, each with its exit status. */
#ifndef VOXFE_CLI_FILES_H
#define VOXFE_CLI_FILES_H

#include "voxfe/context.h"
#include "voxfe/io.h"
#include "voxfe/model.h"

/* Checks the output path before any work: it must not name one of the
 * `n_inputs` inputs (by the same path, or another path or link to the same
 * file), must not be a folder, and its folder must exist and be writable.
 * Nothing is created. Returns 0, or CLI_EXIT_USAGE after one line. */
int cli_check_output(const char *output, const char *const *inputs, int n_inputs);

/* 1 if both paths exist and are the same file (through links too). */
int cli_same_file(const char *a, const char *b);

/* The extension of `path`'s file name including the dot (".vti"), or "". */
const char *cli_extension(const char *path);

/* Reads a model or design file and checks it is consistent. Returns 0, or
 * the exit status after one line (2 for a missing, unreadable or invalid
 * file). */
int cli_read_model(vox_context *ctx, const char *path, vox_model *model);

/* Appends `history` (a line from cli_history_line; NULL when that ran out
 * of memory) to the model's history, then writes the model to `path` as
 * `options` say. Returns 0, or CLI_EXIT_FAILED after one line. */
int cli_write_model(vox_context *ctx, const char *path, vox_model *model, const char *history,
                    const vox_write_options *options);

/* The --deflate-fields option of the programs that write model files. */
#define CLI_DEFLATE_FIELDS_HELP                                                                  \
  "deflate the file's floating-point fields (density, displacements, intensity): about half "   \
  "the size, but netCDF deflates on one thread at about 30 MB/s where the disk takes a GB/s; "  \
  "labels and long lists are deflated always"

#endif
