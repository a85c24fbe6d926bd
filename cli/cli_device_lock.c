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

/* Whether `path` names the file open on `fd` (by device and inode). */
static int same_file(const char *path, const struct stat *open_file) {
  struct stat st;
  return path && stat(path, &st) == 0 && st.st_dev == open_file->st_dev &&
         st.st_ino == open_file->st_ino;
}

int cli_device_lock_open(const char *path, const char *input, const char *output) {
  /* O_NONBLOCK: a FIFO named by mistake must not hang the open */
  const int fd = open(path, O_RDONLY | O_CREAT | O_NONBLOCK | O_CLOEXEC, 0666);
  if (fd < 0) {
    cli_error("%s: cannot open as the device lock: %s", path, strerror(errno));
    return -1;
  }
  struct stat st;
  const char *problem = fstat(fd, &st) != 0  ? strerror(errno)
                        : !S_ISREG(st.st_mode) ? "not a regular file"
                        : same_file(input, &st)  ? "it is the input"
                        : same_file(output, &st) ? "it is the output"
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
  int held;
  while (!(held = flock(fd, LOCK_EX) == 0) && errno == EINTR) {
  }
  return held ? cli_seconds_since(&t0) : -1;
}

void cli_device_lock_give(int fd) { (void)flock(fd, LOCK_UN); }
