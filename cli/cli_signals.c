/* SPDX-License-Identifier: BSD-3-Clause */
/* The programs' signal handling (cli_signals.h). */
#include "cli_signals.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "voxfe/temp_files.h"

static volatile sig_atomic_t deferring, received;

/* Async-signal-safe only: unlink (in vox_temp_files_remove), signal and
 * raise are on POSIX's list; the rest is reading and setting flags. */
static void on_signal(int sig) {
  if (deferring && (sig == SIGINT || sig == SIGTERM) && !received) {
    received = sig;
    return;
  }
  vox_temp_files_remove();
  signal(sig, SIG_DFL);
  raise(sig);
}

static void remove_at_exit(void) { vox_temp_files_remove(); }

void cli_signals_install(void) {
  static int installed;
  if (installed) return;
  installed = 1;
  atexit(remove_at_exit);
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  /* a noted signal must not fail a write or a read under way with EINTR */
  action.sa_flags = SA_RESTART;
  const int signals[] = {SIGINT, SIGTERM, SIGHUP};
  for (size_t i = 0; i < sizeof signals / sizeof signals[0]; i++) {
    struct sigaction old;
    /* a signal the shell told the program to ignore (nohup, a background
     * job's SIGINT) stays ignored */
    if (sigaction(signals[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN) continue;
    sigaction(signals[i], &action, NULL);
  }
}

void cli_signals_defer(void) { deferring = 1; }

int cli_signal_received(void) { return received; }

int cli_signal_exit_status(int sig) { return 128 + sig; }
