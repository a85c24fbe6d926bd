/* SPDX-License-Identifier: BSD-3-Clause */
/* The temporary file every writer of export/ writes before renaming it over
 * its output, so that a failed write never leaves a partial file (private). */
#ifndef VOXFE_TEMP_FILE_H
#define VOXFE_TEMP_FILE_H

#include <stddef.h>

/* Creates "<path>.tmp.XXXXXX" exclusively, as mkstemp does, but with mode
 * 0666 so that the kernel applies the caller's umask (and default ACLs):
 * mkstemp's 0600 would make every exported file private, and reading the
 * umask to fchmod afterwards means changing it, which is process-wide.
 * Returns the descriptor and the malloc'ed name, or -1 with errno set. */
int vox_open_temp(const char *path, char **tmp_out);

/* Writes all `size` bytes, again after EINTR and short writes. Returns 0,
 * or the errno of the failure (EIO for a write that wrote nothing). */
int vox_write_all(int fd, const void *data, size_t size);

/* Ends a temporary file of vox_open_temp: when `err` is 0, fsyncs it (so
 * that a crash after the rename cannot leave an empty file in place of the
 * old one, and late write errors show), closes it and renames it over
 * `path`; otherwise, or when one of those fails, closes and removes it.
 * Frees `tmp`. Returns `err`, or the errno of the step that failed. */
int vox_commit_temp(int fd, char *tmp, const char *path, int err);

#endif
