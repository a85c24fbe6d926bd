/* Zeroing large host buffers on a thread of its own while the caller waits
 * for a device (the sparse solve's iterations): the first touch of fresh
 * pages (the kernel maps and zeroes each) and the clearing itself, off the
 * critical path. What the thread has not reached when the caller finishes
 * is cleared then on all threads. */
#ifndef VOXFE_BACKGROUND_CLEAR_H
#define VOXFE_BACKGROUND_CLEAR_H

#include <stddef.h>

typedef struct vox_background_clear vox_background_clear;

/* Starts zeroing the n areas (area[i], bytes[i]); NULL where no thread
 * could start (finish then does it all). The areas must stay untouched by
 * the caller until finish. */
vox_background_clear *vox_background_clear_start(void *const *area, const size_t *bytes, int n);
/* Zeroes what is left, on all threads, and joins the thread: the areas are
 * zero on return. `c` NULL (a failed start) zeroes the areas given here. */
void vox_background_clear_finish(vox_background_clear *c, void *const *area, const size_t *bytes,
                                 int n);

#endif
