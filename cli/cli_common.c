/* SPDX-License-Identifier: BSD-3-Clause */
/* The programs' name in messages, the one-line error, and the mapping from
 * library statuses to exit statuses. */
#include "cli_common.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli_signals.h"

static const char *program_name = "voxfe";

void cli_set_program_name(const char *name) { program_name = name; }

const char *cli_program_name(void) { return program_name; }

/* A rank of an MPI run other than rank 0 (cli_mpi.h) prints no message:
 * rank 0 prints the run's. */
static int silent;
void cli_set_silent(int on) { silent = on; }

void cli_error(const char *fmt, ...) {
  if (silent) return;
  char message[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(message, sizeof message, fmt, ap);
  va_end(ap);
  /* Messages may quote user text or a library's multi-line text; a log
   * parser expects one line per error. */
  for (char *c = message; *c; c++)
    if (*c == '\n' || *c == '\r') *c = ' ';
  fprintf(stderr, "%s: %s\n", program_name, message);
}

int cli_exit_status(vox_status status, cli_phase phase) {
  if (status == VOX_OK) return CLI_EXIT_OK;
  switch (phase) {
  case CLI_READING:
    /* The user's file is missing, unreadable or not what it claims to be. */
    return status == VOX_ERR_INVALID_ARGUMENT || status == VOX_ERR_IO ||
                   status == VOX_ERR_FORMAT || status == VOX_ERR_UNSUPPORTED
               ? CLI_EXIT_USAGE
               : CLI_EXIT_FAILED;
  case CLI_RUNNING:
    /* The library refused what it was given (an option it cannot honour, a
     * device this build lacks): the user can fix that. Anything else is a
     * failed run. */
    return status == VOX_ERR_INVALID_ARGUMENT || status == VOX_ERR_FORMAT ||
                   status == VOX_ERR_UNSUPPORTED
               ? CLI_EXIT_USAGE
               : CLI_EXIT_FAILED;
  case CLI_WRITING:
    return CLI_EXIT_FAILED;
  }
  return CLI_EXIT_FAILED;
}

vox_context *cli_context(void) {
  /* every program's signals remove its temporary files (cli_signals.h) */
  cli_signals_install();
  vox_context *ctx = NULL;
  if (vox_context_create(&ctx) != VOX_OK) cli_error("out of memory");
  return ctx;
}

int cli_fail_input(const vox_context *ctx, vox_status status, cli_phase phase,
                   const char *input) {
  const char *message = vox_context_message(ctx);
  const int exit_status = cli_exit_status(status, phase);
  const size_t n = input ? strlen(input) : 0;
  if (exit_status != CLI_EXIT_USAGE || !input || !message || !*message ||
      (strncmp(message, input, n) == 0 && message[n] == ':'))
    return cli_fail(ctx, status, phase);
  cli_error("%s: %s", input, message);
  return exit_status;
}

int cli_fail(const vox_context *ctx, vox_status status, cli_phase phase) {
  const char *message = vox_context_message(ctx);
  cli_error("%s", message && *message ? message : vox_status_string(status));
  return cli_exit_status(status, phase);
}

double cli_seconds_between(const struct timespec *a, const struct timespec *b) {
  return (double)(b->tv_sec - a->tv_sec) + 1e-9 * (double)(b->tv_nsec - a->tv_nsec);
}

double cli_seconds_since(const struct timespec *t0) {
  struct timespec t1;
  clock_gettime(CLOCK_MONOTONIC, &t1);
  return cli_seconds_between(t0, &t1);
}
