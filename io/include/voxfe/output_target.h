/* SPDX-License-Identifier: BSD-3-Clause */
/* Where the writers (io/, export/) put their finished temporary file: every
 * output is written under a temporary name and then renamed over the output
 * path, which must therefore be a regular file or a new name; a character
 * device (/dev/null, /dev/stdout on a terminal) is written through instead,
 * and anything else (a symbolic link, a FIFO, a socket, a block device) is
 * refused by vox_output_refusal (voxfe/io.h) before any work. */
#ifndef VOXFE_OUTPUT_TARGET_H
#define VOXFE_OUTPUT_TARGET_H

/* The name the temporary file's name is built on (malloc'd, NULL when out
 * of memory): `path` itself, so that the rename stays in one file system;
 * for a character device "<P_tmpdir>/voxfe-<name>", since /dev takes no
 * files of ours. */
char *vox_output_temp_base(const char *path);

/* Puts the finished temporary file `tmp` at `path`: renames it when `path`
 * is a regular file or does not exist; copies its bytes into a character
 * device and removes it; EEXIST for anything else. 0 or errno (`tmp` is
 * left for the caller to remove on failure). */
int vox_output_place(const char *tmp, const char *path);

#endif
