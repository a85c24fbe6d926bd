/* SPDX-License-Identifier: BSD-3-Clause */
/* A copy between large host buffers in OpenMP threads (private).
 *
 * One thread's memcpy moves about 10 GB/s at best, and much less into
 * memory that has never been touched, whose page faults it takes one by
 * one; a gigabyte vector staged through page-locked memory on its way to
 * or from a GPU (cuda_backend.cu) needs the threads of the host to keep up
 * with the copy engine. */
#ifndef VOXFE_HOST_COPY_H
#define VOXFE_HOST_COPY_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* memcpy(to, from, bytes) split into one contiguous range per thread
 * (threads <= 0: OpenMP's default number). */
void vox_host_copy(void *to, const void *from, size_t bytes, int threads);

#ifdef __cplusplus
}
#endif
#endif
