/* SPDX-License-Identifier: BSD-3-Clause */
/* The stages of a long import (reading a mesh or an image, filling a mesh,
 * segmenting an image), told to the context's progress callback when each
 * ends: voxfe-voxelize shows them on a terminal (cli/cli_progress.c). The
 * callback may cancel: the caller then returns VOX_ERR_CANCELLED. Internal
 * to libvoxfe. */
#ifndef VOXFE_IMPORT_PROGRESS_H
#define VOXFE_IMPORT_PROGRESS_H

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "voxfe/context.h"

static inline double import_clock(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* A file's last name ("scan/" for "data/scan/"), for a status line that
 * must fit a terminal's width. */
static inline const char *import_short_name(const char *path) {
  const char *name = path;
  for (const char *c = path; *c; c++)
    if (c[0] == '/' && c[1] && c[1] != '/') name = c + 1;
  return name;
}

/* A stage that began at `since` (import_clock) and ended now, described by
 * the format. */
static inline vox_status import_stage(vox_context *ctx, double since, const char *format, ...)
    __attribute__((format(printf, 3, 4)));
static inline vox_status import_stage(vox_context *ctx, double since, const char *format, ...) {
  char text[512];
  va_list args;
  va_start(args, format);
  vsnprintf(text, sizeof text, format, args);
  va_end(args);
  vox_progress p = {.stage = text, .iteration = 0, .max_iterations = -1, .objective = NAN,
                    .volume_fraction = NAN, .change = NAN, .non_discreteness = NAN,
                    .penalty = NAN, .q = NAN, .cg_iterations = -1,
                    .seconds = import_clock() - since};
  return vox_report_progress(ctx, &p);
}

#endif
