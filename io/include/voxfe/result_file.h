/* SPDX-License-Identifier: BSD-3-Clause */
/* The analysis result file: a voxfe model file (stage "analysis", with the
 * displacement) plus the analysis's reaction forces, element fields and
 * summary (docs/file-format.md, "Analysis results"). */
#ifndef VOXFE_RESULT_FILE_H
#define VOXFE_RESULT_FILE_H

#include "voxfe/analysis.h"
#include "voxfe/model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One value of an analysis summary: a number (text NULL) or a text. Names
 * are snake_case; they become attributes of the result file's group
 * `results`, keys of the JSON summary and columns of the CSV row. */
typedef struct vox_summary_entry {
  char name[VOX_NAME_MAX];
  const char *text; /* static or owned by the caller; NULL for a number */
  double value;     /* NaN when undefined (written as null / empty) */
  const char *units;/* NULL for none */
} vox_summary_entry;

typedef struct vox_analysis_output {
  const double *reaction;     /* 3 per node (0 off the supports) */
  /* every array given; for vox_result_write in the compact layout (elements
   * from vox_bone_elements), vox_n88model_write takes either */
  vox_element_fields fields;
  const vox_summary_entry *summary;
  size_t n_summary;
} vox_analysis_output;

/* Writes `model` (an elasticity model, its displacement set, stage
 * VOX_STAGE_ANALYSIS) and the analysis output to `path`, atomically: through
 * a temporary file beside it that is renamed into place only when complete.
 * The displacement goes on the bone nodes, the element fields over the bone
 * elements, the reactions per constraint (docs/file-format.md, "Analysis
 * results"). */
vox_status vox_result_write(vox_context *ctx, const char *path, const vox_model *model,
                            const vox_analysis_output *output);

/* The same file, written beside the analysis: vox_result_writer_start
 * begins it in a thread of its own, which writes the model (labels, lists,
 * the bone nodes and elements) at once, even while the caller solves (the
 * compressed parts reach the file once vox_result_writer_solving says the
 * solver iterates, the host mostly idle, or at the latest with the
 * displacement); its displacement once vox_result_writer_put_displacement
 * says the solution is
 * there; the reactions and element fields once vox_result_writer_put_fields
 * hands them over (which says the displacement is there too); and the
 * summary once vox_result_writer_finish does, which then waits for the file
 * to be in place. vox_result_writer_cancel stops it instead: no file, the
 * temporary one removed. Either of the two frees the writer, and one of
 * them must end every writer that started.
 *
 * The model must be as vox_result_write wants it, its displacement array
 * given (filled later is fine); `elements` (n_elements) are the bone
 * elements (vox_bone_elements) that the fields will be over. The model (its
 * labels and lists), `elements` and every array handed over must stay
 * unchanged until finish or cancel returns, the displacement from when it
 * is said to be there; and since netCDF is not thread-safe, no other netCDF
 * file may be read or written meanwhile. Start refuses what
 * vox_result_write would (nothing started then); put_fields refuses missing
 * fields or fields over other elements (nothing handed over: cancel the
 * writer). Errors of the writing itself come from finish, path named. */
typedef struct vox_result_writer vox_result_writer;

vox_status vox_result_writer_start(vox_context *ctx, const char *path, const vox_model *model,
                                   const int64_t *elements, size_t n_elements,
                                   vox_result_writer **writer);

/* The solver iterates (the device busy, the host mostly idle): a good time
 * for the writer's own host work. Optional. */
void vox_result_writer_solving(vox_result_writer *writer);

void vox_result_writer_put_displacement(vox_result_writer *writer);

vox_status vox_result_writer_put_fields(vox_context *ctx, vox_result_writer *writer,
                                        const double *reaction, const vox_element_fields *fields);

vox_status vox_result_writer_finish(vox_context *ctx, vox_result_writer *writer,
                                    const vox_summary_entry *summary, size_t n_summary);

/* NULL: nothing to do. */
void vox_result_writer_cancel(vox_result_writer *writer);

/* What an analysis result file holds besides the model (which
 * vox_model_read reads, the displacement on every node): read back for the
 * programs that show a result (voxfe-export). Everything is owned; free it
 * with vox_result_data_free. */
typedef struct vox_result_data {
  /* the five element fields over fields.elements (= `elements`: the
   * non-empty voxels, ascending); every array NULL and n_elements 0 for a
   * file without them (a model, a design, or a result of schema version 1) */
  vox_element_fields fields;
  int64_t *elements;
  /* the reaction of each of the model's constraints (N), at the first of a
   * node and component constrained twice; NULL when the file has none */
  double *constraint_reaction;
  size_t n_constraints;
  /* the group `results`: one entry per attribute, its units from
   * <name>_units; texts and units owned */
  vox_summary_entry *summary;
  size_t n_summary;
} vox_result_data;

/* Reads the result's parts of `path` for `model`, the model read from the
 * same file (its grid, labels and constraints check the file's lists).
 * Fails with VOX_ERR_FORMAT, naming the file, when the lists do not match
 * the model (an index off the grid, on an empty voxel or not ascending, a
 * field missing or over other dimensions); `out` is zeroed on failure. */
vox_status vox_result_read(vox_context *ctx, const char *path, const vox_model *model,
                           vox_result_data *out);
void vox_result_data_free(vox_result_data *data);

#ifdef __cplusplus
}
#endif
#endif
