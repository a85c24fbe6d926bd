/* SPDX-License-Identifier: BSD-3-Clause */
/* Large host arrays backed by transparent huge pages where the kernel
 * gives them on request (private).
 *
 * A setup pass that fills fresh arrays of gigabytes takes a page fault
 * every 4 KiB, and on many threads the faults contend in the kernel. On
 * the GPU machine's 16 cores the split sparse hierarchy of the 550^3
 * perlin bone took 0.90-0.98 s in 2 MiB pages against 1.14-1.30 s, and
 * the 512 x 256 x 256 cantilever's optimizer setup 0.45-0.47 s against
 * 0.67-0.82 s (docs/benchmarks.md). On the 2-core development machine
 * the same hierarchy at 256^3 took longer (0.67 s against 0.45 s; its
 * virtual machine's huge pages, cause not established), but there it is a
 * small part of a CPU run. Linux's default ("madvise") gives huge pages
 * only to ranges that ask with madvise(MADV_HUGEPAGE), as these functions
 * do for blocks of VOX_HOST_HUGE_MIN bytes and more; elsewhere they are
 * malloc and calloc. Free the blocks with vox_host_free, never free(). */
#ifndef VOXFE_HOST_MEMORY_H
#define VOXFE_HOST_MEMORY_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* malloc(bytes); a block of VOX_HOST_HUGE_MIN bytes or more asks for huge pages */
void *vox_host_malloc(size_t bytes);
/* calloc(n, size), likewise */
void *vox_host_calloc(size_t n, size_t size);
/* frees a block of the two above (NULL: nothing) */
void vox_host_free(void *p);

/* Smaller blocks are left alone: they come from the heap, where a huge
 * page would be shared with other blocks. */
#define VOX_HOST_HUGE_MIN ((size_t)8 << 20)

#ifdef __cplusplus
}
#endif
#endif
