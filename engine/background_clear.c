/* Background clearing (background_clear.h): the areas cut into chunks that
 * the thread and, at the finish, the caller's OpenMP threads take from one
 * atomic counter, so each chunk is zeroed once, by whoever comes first. */
#include "background_clear.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_AREAS = 4 };
static const size_t CHUNK = (size_t)4 << 20; /* bytes: two huge pages */

struct vox_background_clear {
  pthread_t thread;
  char *area[MAX_AREAS];
  size_t bytes[MAX_AREAS], first_chunk[MAX_AREAS + 1]; /* chunk numbering over the areas */
  int n;
  size_t next; /* the next chunk to zero (atomic) */
};

/* Zeroes chunk k; returns 0 past the last one. */
static int clear_chunk(struct vox_background_clear *c, size_t k) {
  if (k >= c->first_chunk[c->n]) return 0;
  int a = 0;
  while (k >= c->first_chunk[a + 1]) a++;
  const size_t at = (k - c->first_chunk[a]) * CHUNK;
  const size_t len = c->bytes[a] - at < CHUNK ? c->bytes[a] - at : CHUNK;
  memset(c->area[a] + at, 0, len);
  return 1;
}

static void *clear_main(void *arg) {
  struct vox_background_clear *c = arg;
  while (clear_chunk(c, __atomic_fetch_add(&c->next, 1, __ATOMIC_RELAXED))) {
  }
  return NULL;
}

vox_background_clear *vox_background_clear_start(void *const *area, const size_t *bytes, int n) {
  if (n > MAX_AREAS) return NULL;
  struct vox_background_clear *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  c->n = n;
  for (int a = 0; a < n; a++) {
    c->area[a] = area[a];
    c->bytes[a] = area[a] ? bytes[a] : 0;
    c->first_chunk[a + 1] = c->first_chunk[a] + (c->bytes[a] + CHUNK - 1) / CHUNK;
  }
  if (pthread_create(&c->thread, NULL, clear_main, c) != 0) {
    free(c);
    return NULL;
  }
  return c;
}

void vox_background_clear_finish(vox_background_clear *c, void *const *area, const size_t *bytes,
                                 int n) {
  if (!c) {
    for (int a = 0; a < n; a++) {
      if (!area[a]) continue;
      char *p = area[a];
      const ptrdiff_t len = (ptrdiff_t)bytes[a];
#pragma omp parallel for schedule(static)
      for (ptrdiff_t i = 0; i < len; i += (ptrdiff_t)CHUNK)
        memset(p + i, 0, (size_t)(len - i < (ptrdiff_t)CHUNK ? len - i : (ptrdiff_t)CHUNK));
    }
    return;
  }
  const ptrdiff_t chunks = (ptrdiff_t)c->first_chunk[c->n];
#pragma omp parallel for schedule(dynamic, 1)
  for (ptrdiff_t i = 0; i < chunks; i++) {
    const size_t k = __atomic_fetch_add(&c->next, 1, __ATOMIC_RELAXED);
    if (!clear_chunk(c, k)) continue;
  }
  pthread_join(c->thread, NULL);
  free(c);
}
