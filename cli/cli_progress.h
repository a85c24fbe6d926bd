/* SPDX-License-Identifier: BSD-3-Clause */
/* The progress display of long runs, fed by the library's progress callback.
 *
 * On a terminal: one status line rewritten in place (\r), ended with a
 * newline when the run ends. Otherwise (pipes, logs, make -j): exactly one
 * plain line per report. Quiet: nothing. Everything goes to the given stream
 * (stderr), so stdout stays free for results. */
#ifndef VOXFE_CLI_PROGRESS_H
#define VOXFE_CLI_PROGRESS_H

#include <stddef.h>
#include <stdio.h>

#include "voxfe/context.h"

typedef enum cli_progress_mode {
  CLI_PROGRESS_QUIET,
  CLI_PROGRESS_LINES, /* one line per report */
  CLI_PROGRESS_LIVE   /* one line rewritten in place */
} cli_progress_mode;

typedef struct cli_progress {
  FILE *stream;
  cli_progress_mode mode;
  int show_q;          /* show the q exponent (only when it is in use) */
  size_t shown;        /* characters of the live line now on screen */
} cli_progress;

/* Chooses LIVE or LINES by whether `stream` is a terminal, or QUIET. */
void cli_progress_init(cli_progress *p, FILE *stream, int quiet, int show_q);

/* The vox_progress_fn; `user` is the cli_progress. Never cancels. */
int cli_progress_report(const vox_progress *progress, void *user);

/* Ends a live line with its newline, so that what follows (an error, the
 * shell prompt) starts on a line of its own. Safe to call more than once. */
void cli_progress_finish(cli_progress *p);

#endif
