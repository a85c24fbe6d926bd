/* SPDX-License-Identifier: BSD-3-Clause */
/* Large host arrays in transparent huge pages (host_memory.h).
 *
 * A large block is a mapping of its own, its payload starting on a 2 MiB
 * boundary so that every page of it can be huge, advised MADV_HUGEPAGE
 * before anything touches it; a header just below the payload says how to
 * give it back. */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS, madvise */
#include "host_memory.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__linux__)
#include <sys/mman.h>
#endif
#if defined(__linux__) && defined(MADV_HUGEPAGE)
#define HUGE_PAGES 1
#else
#define HUGE_PAGES 0
#endif

enum { HUGE = 2 << 20, HEADER = 64 };

/* Below each payload: where its memory starts, and its length for munmap
 * (0: a malloc block). */
typedef struct header {
  void *base;
  size_t mapped;
} header;

static void *from_malloc(size_t bytes) {
  if (bytes > SIZE_MAX - HEADER) return NULL;
  char *p = malloc(bytes + HEADER);
  if (!p) return NULL;
  ((header *)(void *)(p + HEADER - sizeof(header)))->base = p;
  ((header *)(void *)(p + HEADER - sizeof(header)))->mapped = 0;
  return p + HEADER;
}

void *vox_host_malloc(size_t bytes) {
#if HUGE_PAGES
  if (bytes >= VOX_HOST_HUGE_MIN && bytes <= SIZE_MAX - 2 * (size_t)HUGE) {
    /* a huge page more than the payload, for the header and the alignment */
    const size_t mapped = ((bytes + HUGE - 1) & ~(size_t)(HUGE - 1)) + HUGE;
    char *base = mmap(NULL, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base != MAP_FAILED) {
      char *payload = (char *)(((uintptr_t)base + HEADER + HUGE - 1) & ~(uintptr_t)(HUGE - 1));
      (void)madvise(payload, mapped - (size_t)(payload - base), MADV_HUGEPAGE); /* a hint */
      header *h = (header *)(void *)(payload - sizeof(header));
      h->base = base;
      h->mapped = mapped;
      return payload;
    }
  }
#endif
  return from_malloc(bytes);
}

void *vox_host_calloc(size_t n, size_t size) {
  if (size && n > SIZE_MAX / size) return NULL;
  const size_t bytes = n * size;
  void *p = vox_host_malloc(bytes);
  /* a fresh mapping reads as zeros already */
  if (p && ((header *)(void *)((char *)p - sizeof(header)))->mapped == 0) memset(p, 0, bytes);
  return p;
}

void vox_host_free(void *p) {
  if (!p) return;
  const header *h = (const header *)(void *)((char *)p - sizeof(header));
#if HUGE_PAGES
  if (h->mapped) {
    (void)munmap(h->base, h->mapped);
    return;
  }
#endif
  free(h->base);
}
