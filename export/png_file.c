/* SPDX-License-Identifier: BSD-3-Clause */
/* vox_write_cairo_png: a cairo image written as PNG through a stream
 * callback into a temporary file that is renamed into place (as in
 * summary.c and vtk_xml.c). */
#include "png_file.h"
#include "temp_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct png_sink {
  int fd;
  int err; /* errno of the first failed write */
} png_sink;

static cairo_status_t write_png_bytes(void *closure, const unsigned char *data,
                                      unsigned int length) {
  png_sink *sink = closure;
  const int err = vox_write_all(sink->fd, data, length);
  if (err) {
    if (!sink->err) sink->err = err;
    return CAIRO_STATUS_WRITE_ERROR;
  }
  return CAIRO_STATUS_SUCCESS;
}

vox_status vox_write_cairo_png(vox_context *ctx, const char *path, cairo_surface_t *surface) {
  char *tmp = NULL;
  png_sink sink = {.fd = vox_open_temp(path, &tmp), .err = 0};
  if (sink.fd < 0) return vox_error(ctx, VOX_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
  cairo_status_t cs = cairo_surface_write_to_png_stream(surface, write_png_bytes, &sink);
  int err = sink.err;
  if (cs != CAIRO_STATUS_SUCCESS && !err) err = -1;
  err = vox_commit_temp(sink.fd, tmp, path, err);
  if (err > 0) return vox_error(ctx, VOX_ERR_IO, "%s: cannot write: %s", path, strerror(err));
  if (err < 0)
    return vox_error(ctx, cs == CAIRO_STATUS_NO_MEMORY ? VOX_ERR_NO_MEMORY : VOX_ERR_IO,
                     "%s: cannot write: cairo: %s", path, cairo_status_to_string(cs));
  return VOX_OK;
}

