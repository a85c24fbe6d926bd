/* SPDX-License-Identifier: BSD-3-Clause */
/* Large host arrays (host_memory.h): blocks under and over the huge-page
 * size hold what is written to them, calloc's read as zeros, a large
 * block's payload starts on a 2 MiB boundary (on Linux, where it is a
 * mapping of its own), and vox_host_free gives back both kinds and NULL
 * (the sanitizer build finds a block freed the wrong way). */
#include <stdint.h>
#include <stdlib.h>

#include "../check.h"
#include "host_memory.h"

/* Writes a pattern over the block and reads it back. */
static int holds(unsigned char *p, size_t bytes) {
  for (size_t i = 0; i < bytes; i += 4093) p[i] = (unsigned char)(i * 7 + 1);
  p[bytes - 1] = 0xA5;
  int ok = p[bytes - 1] == 0xA5;
  for (size_t i = 0; i < bytes - 1; i += 4093) ok &= p[i] == (unsigned char)(i * 7 + 1);
  return ok;
}

static int zeros(const unsigned char *p, size_t bytes) {
  for (size_t i = 0; i < bytes; i++)
    if (p[i]) return 0;
  return 1;
}

int main(void) {
  const size_t sizes[] = {1, 1000, VOX_HOST_HUGE_MIN - 1, VOX_HOST_HUGE_MIN,
                          3 * VOX_HOST_HUGE_MIN + 12345};
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    const size_t n = sizes[k];
    unsigned char *a = vox_host_malloc(n);
    CHECK(a != NULL);
    if (a) CHECK(holds(a, n));
    if (a) CHECK((uintptr_t)a % 16 == 0); /* any type's alignment, as malloc's */
#ifdef __linux__
    if (a && n >= VOX_HOST_HUGE_MIN) CHECK((uintptr_t)a % ((uintptr_t)2 << 20) == 0);
#endif
    vox_host_free(a);
    unsigned char *z = vox_host_calloc(n, 1);
    CHECK(z != NULL);
    if (z) CHECK(zeros(z, n));
    vox_host_free(z);
    /* calloc after a block was written and freed: zeros again */
    unsigned char *w = vox_host_malloc(n);
    if (w) holds(w, n);
    vox_host_free(w);
    double *d = vox_host_calloc(n, sizeof *d);
    CHECK(d != NULL);
    if (d) CHECK(zeros((const unsigned char *)d, n * sizeof *d));
    vox_host_free(d);
  }
  CHECK(vox_host_calloc(SIZE_MAX / 2, 4) == NULL); /* n * size overflows */
  vox_host_free(NULL);
  return check_failures ? 1 : 0;
}
