/* SPDX-License-Identifier: BSD-3-Clause */
/* Zeroing large host buffers on a thread of its own while the caller waits
 * for a device (the sparse solve's iterations): the first touch of fresh
 * pages (the kernel maps and zeroes each) and the clearing itself, off the
 * critical path. What the thread has not reached when the caller finishes
 * is cleared then on all threads. */
#ifndef VOXFE_BACKGROUND_CLEAR_H
#define VOXFE_BACKGROUND_CLEAR_H

#include <pthread.h>
#include <stddef.h>

enum { VOX_BACKGROUND_CLEAR_AREAS = 4 };

/* The caller's: start fills it, finish empties it. */
typedef struct vox_background_clear {
  char *area[VOX_BACKGROUND_CLEAR_AREAS];
  size_t bytes[VOX_BACKGROUND_CLEAR_AREAS];
  size_t first_chunk[VOX_BACKGROUND_CLEAR_AREAS + 1]; /* chunk numbering over the areas */
  int n;
  size_t next; /* the next chunk to zero (atomic) */
  pthread_t thread;
  int started; /* 0: no thread could start; finish then does it all */
} vox_background_clear;

/* Starts zeroing the n (at most VOX_BACKGROUND_CLEAR_AREAS) areas
 * (area[i], bytes[i]; a NULL area is skipped). The areas must stay
 * untouched by the caller until finish. */
void vox_background_clear_start(vox_background_clear *c, void *const *area, const size_t *bytes,
                                int n);
/* Zeroes what is left, on all threads, and joins the thread: the areas are
 * zero on return. */
void vox_background_clear_finish(vox_background_clear *c);

#endif
