/* SPDX-License-Identifier: BSD-3-Clause */
/* The temporary files the library's writers have under way: every file
 * voxfe writes goes to "<path>.tmp.*" beside `path` and is renamed into
 * place when complete (a crash or kill -9 leaves the old file or the new
 * one, never a part). A program that ends on a signal removes the ones
 * under way with vox_temp_files_remove, from its handler. */
#ifndef VOXFE_TEMP_FILES_H
#define VOXFE_TEMP_FILES_H

#ifdef __cplusplus
extern "C" {
#endif

/* Unlinks every temporary file under way (those of every thread).
 * Async-signal-safe (unlink and lock-free atomics only): for a signal
 * handler, or atexit. The writers then fail or are never resumed; call it
 * only on the way out. */
void vox_temp_files_remove(void);

/* For the library's writers (io/ and export/): a temporary file is listed
 * once created and taken off once renamed into place or removed. A name
 * too long for the list, or one more than it holds, is simply not listed
 * (the file is still written and renamed as ever; only a signal could
 * leave it behind). */
void vox_temp_register(const char *tmp);
void vox_temp_unregister(const char *tmp);

#ifdef __cplusplus
}
#endif
#endif
