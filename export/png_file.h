/* SPDX-License-Identifier: BSD-3-Clause */
/* Writing a cairo image surface as a PNG file that replaces its path
 * atomically, shared by the picture writers of export/ (private). */
#ifndef VOXFE_PNG_FILE_H
#define VOXFE_PNG_FILE_H

#include <cairo.h>

#include "voxfe/context.h"

/* Writes `surface` as PNG into a temporary file (temp_file.h), syncs it and
 * renames it over `path`; on failure the temporary file is removed, `path`
 * is left as it was, and the error (VOX_ERR_IO, or VOX_ERR_NO_MEMORY from
 * cairo) is one line naming `path`. */
vox_status vox_write_cairo_png(vox_context *ctx, const char *path, cairo_surface_t *surface);

#endif
