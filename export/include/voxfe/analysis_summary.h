/* SPDX-License-Identifier: BSD-3-Clause */
/* The summary of an analysis (voxfe-analyze --summary) as JSON or as a CSV
 * row that batch jobs append to one table. */
#ifndef VOXFE_ANALYSIS_SUMMARY_H
#define VOXFE_ANALYSIS_SUMMARY_H

#include <stddef.h>

#include "voxfe/result_file.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One JSON object {"name": value, ..., "units": {"name": "units", ...}}:
 * numbers with the digits that read back exactly, null for NaN. Replaces
 * `path` atomically. */
vox_status vox_write_analysis_json(vox_context *ctx, const char *path,
                                   const vox_summary_entry *entries, size_t n);

/* Appends one CSV row (RFC 4180 quoting, empty fields for NaN) to `path`,
 * creating it with a header row of the names first. The file is locked
 * (flock) while the row goes out in one write, so that parallel jobs
 * appending to one table neither interleave rows nor write the header twice.
 * Fails (VOX_ERR_INVALID_ARGUMENT, nothing written) when the file's header
 * is not the header of these entries. */
vox_status vox_append_analysis_csv(vox_context *ctx, const char *path,
                                   const vox_summary_entry *entries, size_t n);

/* The check of vox_append_analysis_csv alone, for before a long run: OK
 * when `path` does not exist, is empty, or starts with the header of these
 * entries' names (their values do not matter); VOX_ERR_INVALID_ARGUMENT
 * naming the file and the first column that differs otherwise. Reads only. */
vox_status vox_check_analysis_csv(vox_context *ctx, const char *path,
                                  const vox_summary_entry *entries, size_t n);

#ifdef __cplusplus
}
#endif
#endif
