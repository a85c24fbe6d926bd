/* SPDX-License-Identifier: BSD-3-Clause */
/* The progress display: a live status line on a terminal, one line per
 * iteration elsewhere. */
#include "cli_progress.h"

#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

void cli_progress_init(cli_progress *p, FILE *stream, int quiet, int show_q) {
  p->stream = stream;
  p->show_q = show_q;
  p->shown = 0;
  if (quiet)
    p->mode = CLI_PROGRESS_QUIET;
  else
    p->mode = isatty(fileno(stream)) ? CLI_PROGRESS_LIVE : CLI_PROGRESS_LINES;
}

/* One report as text, the same for both modes so that a log reads like the
 * screen. */
static void format_report(const cli_progress *p, const vox_progress *r, char *buf,
                          size_t size) {
  if (r->iteration < 1) { /* a stage, not a design iteration */
    snprintf(buf, size, "%s  %.2f s", r->stage ? r->stage : "", r->seconds);
    return;
  }
  /* single spaces: the line must fit an 80-column terminal */
  int n = snprintf(buf, size, "it %d/%d obj %.6g vol %.4f ch %.4f Mnd %.1f%% p %.2f",
                   r->iteration, r->max_iterations, r->objective, r->volume_fraction,
                   r->change, r->non_discreteness, r->penalty);
  if (n < 0 || (size_t)n >= size) return;
  if (p->show_q) {
    int m = snprintf(buf + n, size - (size_t)n, " q %.2f", r->q);
    if (m < 0 || (size_t)(n + m) >= size) return;
    n += m;
  }
  if (r->solves > 0) { /* how many systems the CG iterations went to */
    int m = snprintf(buf + n, size - (size_t)n, " %d solve%s", r->solves, r->solves > 1 ? "s" : "");
    if (m < 0 || (size_t)(n + m) >= size) return;
    n += m;
  }
  snprintf(buf + n, size - (size_t)n, " cg %d %.2f s/it", r->cg_iterations, r->seconds);
}

/* Columns of the terminal, so that the live line never wraps (a wrapped
 * line cannot be rewritten with \r). */
static size_t terminal_width(FILE *stream) {
  struct winsize ws;
  if (ioctl(fileno(stream), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1) return ws.ws_col;
  return 80;
}

int cli_progress_report(const vox_progress *progress, void *user) {
  cli_progress *p = user;
  if (p->mode == CLI_PROGRESS_QUIET) return 0;
  char line[256];
  format_report(p, progress, line, sizeof line);
  if (p->mode == CLI_PROGRESS_LINES) {
    fprintf(p->stream, "%s\n", line);
  } else {
    size_t width = terminal_width(p->stream) - 1;
    size_t len = strlen(line);
    if (len > width) line[len = width] = '\0';
    /* pad with blanks over the rest of a longer previous line */
    int pad = p->shown > len ? (int)(p->shown - len) : 0;
    fprintf(p->stream, "\r%s%*s", line, pad, "");
    p->shown = len;
  }
  fflush(p->stream);
  return 0;
}

void cli_progress_finish(cli_progress *p) {
  if (p->mode == CLI_PROGRESS_LIVE && p->shown > 0) {
    fputc('\n', p->stream);
    fflush(p->stream);
  }
  p->shown = 0;
}
