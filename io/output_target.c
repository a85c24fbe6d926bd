/* SPDX-License-Identifier: BSD-3-Clause */
/* What an output path names, and putting a finished temporary file there
 * (voxfe/io.h vox_output_refusal, voxfe/output_target.h). */
#define _GNU_SOURCE
#include "voxfe/output_target.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "voxfe/io.h"

const char *vox_output_refusal(const char *path) {
  struct stat st;
  if (lstat(path, &st) != 0) return NULL; /* a new name (or unreachable: the write says why) */
  if (S_ISREG(st.st_mode) || S_ISCHR(st.st_mode)) return NULL;
  if (S_ISLNK(st.st_mode)) return "a symbolic link";
  if (S_ISDIR(st.st_mode)) return "a folder";
  if (S_ISFIFO(st.st_mode)) return "a FIFO (named pipe)";
  if (S_ISSOCK(st.st_mode)) return "a socket";
  if (S_ISBLK(st.st_mode)) return "a block device";
  return "not a regular file";
}

static int is_char_device(const char *path) {
  struct stat st;
  return lstat(path, &st) == 0 && S_ISCHR(st.st_mode);
}

char *vox_output_temp_base(const char *path) {
  if (!is_char_device(path)) return strdup(path);
  /* beside /dev/null no one may (or should) create files */
  const char *slash = strrchr(path, '/');
  const char *name = slash ? slash + 1 : path;
  size_t size = strlen(P_tmpdir) + strlen(name) + sizeof "/voxfe-";
  char *base = malloc(size);
  if (base) snprintf(base, size, "%s/voxfe-%s", P_tmpdir, name);
  return base;
}

/* Copies the file `tmp` into the open device `fd`; 0 or errno. */
static int copy_into(const char *tmp, int fd) {
  int in = open(tmp, O_RDONLY | O_CLOEXEC);
  if (in < 0) return errno;
  char buf[1 << 16];
  int err = 0;
  for (;;) {
    ssize_t n = read(in, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n < 0) err = errno;
      break;
    }
    for (ssize_t done = 0; done < n;) {
      ssize_t w = write(fd, buf + done, (size_t)(n - done));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        err = w < 0 ? errno : EIO;
        break;
      }
      done += w;
    }
    if (err) break;
  }
  close(in);
  return err;
}

int vox_output_place(const char *tmp, const char *path) {
  struct stat st;
  /* (a folder's rename fails by itself: EISDIR) */
  if (lstat(path, &st) != 0 || S_ISREG(st.st_mode) || S_ISDIR(st.st_mode))
    return rename(tmp, path) ? errno : 0;
  if (!S_ISCHR(st.st_mode)) return EEXIST; /* became something else since the check */
  /* written through, never renamed over: the device node stays */
  int fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) return errno;
  int err = copy_into(tmp, fd);
  if (close(fd) != 0 && !err) err = errno;
  if (!err) unlink(tmp);
  return err;
}
