/* SPDX-License-Identifier: BSD-3-Clause */
/* What every voxfe program shares about failing: its name in messages, the
 * one-line error on stderr, and the exit statuses.
 *
 * Exit statuses are part of the programs' interface (Makefiles and batch
 * scripts branch on them), so they are decided here once:
 *   0  success
 *   1  the run failed (solver did not converge, out of memory, write error)
 *   2  bad usage or bad input (options, unreadable or invalid input file) */
#ifndef VOXFE_CLI_COMMON_H
#define VOXFE_CLI_COMMON_H

#include <time.h>

#include "voxfe/context.h"

enum { CLI_EXIT_OK = 0, CLI_EXIT_FAILED = 1, CLI_EXIT_USAGE = 2 };

/* Where a library call failed. The same status means different things at
 * different moments: VOX_ERR_IO while reading the input is the user's bad
 * file (2), while writing the output it is a failed run (1). */
typedef enum cli_phase {
  CLI_READING, /* reading or checking the inputs the user gave */
  CLI_RUNNING, /* computing */
  CLI_WRITING  /* writing the output */
} cli_phase;

/* The name that prefixes every message ("voxfe-optimize"); cli_parse sets it
 * from the program's declaration. */
void cli_set_program_name(const char *name);
const char *cli_program_name(void);

/* Prints "<program>: <message>" as one line on stderr (newlines in the
 * message are flattened, so that a log holds one line per error). */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Silences cli_error (the ranks of an MPI run but rank 0). */
void cli_set_silent(int on);

/* Seconds from a to b, and from t0 to now (CLOCK_MONOTONIC), for --timings. */
double cli_seconds_between(const struct timespec *a, const struct timespec *b);
double cli_seconds_since(const struct timespec *t0);

/* The exit status for a library failure `status` in `phase`. */
int cli_exit_status(vox_status status, cli_phase phase);

/* A new library context, or NULL after "out of memory" on stderr. */
vox_context *cli_context(void);

/* Reports a failed library call: prints the context's message as one line
 * and returns the exit status for `status` in `phase`. */
int cli_fail(const vox_context *ctx, vox_status status, cli_phase phase);

/* cli_fail for a call that refused what the input file holds (a model
 * without supports, a load on a void: exit status 2): the message gets the
 * file's name in front, unless it starts with it already. */
int cli_fail_input(const vox_context *ctx, vox_status status, cli_phase phase,
                   const char *input);

#endif
