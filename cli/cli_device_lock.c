/* SPDX-License-Identifier: BSD-3-Clause */
/* Taking turns on the GPU through a lock file (cli_device_lock.h). */
#define _DEFAULT_SOURCE /* flock */
#include "cli_device_lock.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli_common.h"
#include "cli_files.h"

int cli_device_lock_open(const char *path, const char *input, const char *output) {
  /* O_NONBLOCK: a FIFO named by mistake must not hang the open */
  const int fd = open(path, O_RDONLY | O_CREAT | O_NONBLOCK | O_CLOEXEC, 0666);
  if (fd < 0) {
    cli_error("%s: cannot open as the device lock: %s", path, strerror(errno));
    return -1;
  }
  struct stat st;
  const char *problem = fstat(fd, &st) != 0                   ? strerror(errno)
                        : !S_ISREG(st.st_mode)                  ? "not a regular file"
                        : input && cli_same_file(path, input)   ? "it is the input"
                        : output && cli_same_file(path, output) ? "it is the output"
                                                                : NULL;
  if (problem) {
    cli_error("%s: cannot use as the device lock: %s", path, problem);
    close(fd);
    return -1;
  }
  return fd;
}

double cli_device_lock_take(int fd) {
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  /* a signal's handler ends the program (cli_signals.h); EINTR is retried */
  int status;
  do
    status = flock(fd, LOCK_EX);
  while (status != 0 && errno == EINTR);
  return status == 0 ? cli_seconds_since(&t0) : -1;
}

void cli_device_lock_give(int fd) { (void)flock(fd, LOCK_UN); }
