/* SPDX-License-Identifier: BSD-3-Clause */
/* What the image readers share: decoding typed voxels to float, reading a
 * byte range of a file with messages that name it, and the folder listing
 * that series and stacks are read from. Not installed. */
#ifndef VOXFE_IMAGE_INTERNAL_H
#define VOXFE_IMAGE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "voxfe/image.h"

/* Sends stderr to /dev/null while a library that prints its own complaints
 * (nifticlib) runs, so that voxfe's one-line message is all the user sees;
 * returns what image_quiet_end needs. Not for threads. */
int image_quiet_begin(void);
void image_quiet_end(int saved);

/* Asks the kernel for huge pages under a large, not yet touched array: a
 * volume of a gigabyte otherwise costs a quarter million page faults,
 * about as long as reading its files. A hint; nothing changes without it. */
void image_huge_pages(void *p, size_t bytes);

/* 1 on a big-endian machine. */
int image_host_big_endian(void);

/* n voxels of `type` (in the given byte order) to float. */
void image_decode(const void *src, vox_raw_type type, int big_endian, size_t n, float *dst);

/* Reads the voxels of `image` (allocated) from `path` at `offset`: `type`
 * in the given byte order, slice by slice. */
vox_status image_read_typed(vox_context *ctx, const char *path, uint64_t offset, vox_raw_type type,
                            int big_endian, vox_image *image);

/* Reads exactly `bytes` at `offset` of the open file; a short read is a
 * truncated file (VOX_ERR_FORMAT), a failing read VOX_ERR_IO. */
vox_status image_read_at(vox_context *ctx, const char *path, FILE *f, uint64_t offset, void *buf,
                         size_t bytes);

/* The size of a regular file, or an error naming it. */
vox_status image_file_size(vox_context *ctx, const char *path, uint64_t *size);

/* n[0]*n[1]*n[2]*elem, or an error when a dimension is not positive or the
 * product does not fit in memory sizes. */
vox_status image_checked_size(vox_context *ctx, const char *path, const int64_t n[3], size_t elem,
                              size_t *bytes);

/* The regular files of a folder that do not start with '.', sorted by name
 * with digit runs compared as numbers (slice2 before slice10). */
vox_status image_list_folder(vox_context *ctx, const char *path, char ***names, size_t *count);
void image_free_list(char **names, size_t count);

/* "<folder>/<name>" in a new string, or NULL. */
char *image_join(const char *folder, const char *name);

/* 1 when the path ends with `suffix`, ignoring case. */
int image_has_suffix(const char *path, const char *suffix);

#endif
