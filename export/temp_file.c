/* SPDX-License-Identifier: BSD-3-Clause */
/* The temporary file of the writers (temp_file.h). */
#define _GNU_SOURCE
#include "voxfe/output_target.h"
#include "voxfe/io.h"
#include "temp_file.h"
#include "voxfe/temp_files.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static uint64_t splitmix64(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15u);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}

int vox_open_temp(const char *path, char **tmp_out) {
  static const char letters[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  /* a link, a FIFO, ...: the rename would replace it (a folder fails the
   * rename by itself, EISDIR) */
  const char *refusal = vox_output_refusal(path);
  if (refusal && strcmp(refusal, "a folder") != 0) {
    errno = EEXIST;
    return -1;
  }
  char *base = vox_output_temp_base(path);
  size_t size = base ? strlen(base) + sizeof ".tmp.XXXXXX" : 0;
  char *tmp = base ? malloc(size) : NULL;
  if (!tmp) {
    free(base);
    errno = ENOMEM;
    return -1;
  }
  /* The names need only differ between tries (O_EXCL makes a clash
   * harmless), so a failing clock just makes the seed weaker. */
  struct timespec now = {0};
  if (clock_gettime(CLOCK_REALTIME, &now) != 0) now.tv_nsec = 0;
  uint64_t state = (uint64_t)now.tv_nsec ^ ((uint64_t)now.tv_sec << 30) ^
                   ((uint64_t)getpid() << 40) ^ (uint64_t)(uintptr_t)tmp;
  for (int attempt = 0; attempt < 100; attempt++) {
    uint64_t bits = splitmix64(&state);
    snprintf(tmp, size, "%s.tmp.", base);
    char *x = tmp + size - 7;
    for (int i = 0; i < 6; i++, bits /= 62) x[i] = letters[bits % 62];
    x[6] = '\0';
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0) {
      free(base);
      vox_temp_register(tmp);
      *tmp_out = tmp;
      return fd;
    }
    if (errno != EEXIST) break;
  }
  int saved = errno;
  free(base);
  free(tmp);
  errno = saved;
  return -1;
}

int vox_write_all(int fd, const void *data, size_t size) {
  const char *p = data;
  while (size) {
    ssize_t n = write(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n < 0 ? errno : EIO;
    p += n;
    size -= (size_t)n;
  }
  return 0;
}

int vox_commit_temp(int fd, char *tmp, const char *path, int err) {
  if (!err && fsync(fd) != 0) err = errno;
  if (close(fd) != 0 && !err) err = errno;
  if (!err) err = vox_output_place(tmp, path);
  if (err) unlink(tmp);
  vox_temp_unregister(tmp);
  free(tmp);
  return err;
}
