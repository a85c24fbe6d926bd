/* SPDX-License-Identifier: BSD-3-Clause */
/* The library context: the last error message, the progress callback and the
 * thread count. One context per thread of the caller; nothing is global. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "voxfe/context.h"

#ifndef VOXFE_VERSION
#define VOXFE_VERSION "unknown"
#endif

struct vox_context {
  char message[1024];
  vox_progress_fn progress;
  void *progress_user;
  int threads;
};

vox_status vox_context_create(vox_context **out) {
  *out = calloc(1, sizeof **out);
  return *out ? VOX_OK : VOX_ERR_NO_MEMORY;
}

void vox_context_destroy(vox_context *ctx) { free(ctx); }

const char *vox_context_message(const vox_context *ctx) { return ctx ? ctx->message : ""; }

vox_status vox_error(vox_context *ctx, vox_status status, const char *fmt, ...) {
  if (ctx) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx->message, sizeof ctx->message, fmt, ap);
    va_end(ap);
  }
  return status;
}

void vox_context_clear_error(vox_context *ctx) { ctx->message[0] = '\0'; }

void vox_context_set_progress(vox_context *ctx, vox_progress_fn fn, void *user) {
  ctx->progress = fn;
  ctx->progress_user = user;
}

vox_status vox_report_progress(vox_context *ctx, const vox_progress *progress) {
  if (ctx->progress && ctx->progress(progress, ctx->progress_user) != 0)
    return vox_error(ctx, VOX_ERR_CANCELLED, "cancelled by the caller");
  return VOX_OK;
}

void vox_context_set_threads(vox_context *ctx, int threads) {
  ctx->threads = threads > 0 ? threads : 0;
}

int vox_context_threads(const vox_context *ctx) { return ctx->threads; }

const char *vox_status_string(vox_status status) {
  switch (status) {
  case VOX_OK: return "success";
  case VOX_ERR_INVALID_ARGUMENT: return "invalid argument";
  case VOX_ERR_NO_MEMORY: return "out of memory";
  case VOX_ERR_IO: return "input/output error";
  case VOX_ERR_FORMAT: return "bad file format";
  case VOX_ERR_UNSUPPORTED: return "not supported by this build";
  case VOX_ERR_DEVICE: return "device error";
  case VOX_ERR_CANCELLED: return "cancelled";
  }
  return "unknown status";
}

const char *vox_version(void) { return VOXFE_VERSION; }
