/* SPDX-License-Identifier: BSD-3-Clause */
/* The child process in which a harness probes a third-party library with
 * an input before feeding it to voxfe (fuzz_model.c, fuzz_mesh.c). The
 * child inherits libFuzzer's handlers through fork: left so, the library's
 * crash would be reported as the harness's finding, with a crash file of
 * its own, and libFuzzer's alarm handler would catch the child's time
 * limit. */
#ifndef VOXFE_FUZZ_PROBE_CHILD_H
#define VOXFE_FUZZ_PROBE_CHILD_H

#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include <sanitizer/common_interface_defs.h>

static void fuzz_probe_child_died(void) { _exit(1); }

/* In the child: a crash or a sanitizer's report ends it with a failure and
 * nothing written, the library's messages go nowhere, and it dies after
 * `seconds`. */
static inline void fuzz_probe_child_start(unsigned seconds) {
  __sanitizer_set_death_callback(fuzz_probe_child_died);
  const int fatal[] = {SIGABRT, SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGALRM};
  for (size_t i = 0; i < sizeof fatal / sizeof *fatal; i++) signal(fatal[i], SIG_DFL);
  if (!freopen("/dev/null", "w", stderr)) _exit(0);
  alarm(seconds);
}

#endif
