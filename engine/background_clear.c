/* SPDX-License-Identifier: BSD-3-Clause */
/* Background clearing (background_clear.h): the areas cut into chunks that
 * the thread and, at the finish, the caller's OpenMP threads take from one
 * atomic counter, so each chunk is zeroed once, by whoever comes first. */
#include "background_clear.h"

#include <string.h>

static const size_t CHUNK = (size_t)4 << 20; /* bytes: two huge pages */

/* Zeroes the next chunk nobody has taken; returns 0 when none is left. */
static int clear_next(vox_background_clear *c) {
  const size_t k = __atomic_fetch_add(&c->next, 1, __ATOMIC_RELAXED);
  if (k >= c->first_chunk[c->n]) return 0;
  int a = 0;
  while (k >= c->first_chunk[a + 1]) a++;
  const size_t at = (k - c->first_chunk[a]) * CHUNK;
  const size_t len = c->bytes[a] - at < CHUNK ? c->bytes[a] - at : CHUNK;
  memset(c->area[a] + at, 0, len);
  return 1;
}

static void *clear_main(void *arg) {
  while (clear_next(arg)) {
  }
  return NULL;
}

void vox_background_clear_start(vox_background_clear *c, void *const *area, const size_t *bytes,
                                int n) {
  memset(c, 0, sizeof *c);
  c->n = n < VOX_BACKGROUND_CLEAR_AREAS ? n : VOX_BACKGROUND_CLEAR_AREAS;
  for (int a = 0; a < c->n; a++) {
    c->area[a] = area[a];
    c->bytes[a] = area[a] ? bytes[a] : 0;
    c->first_chunk[a + 1] = c->first_chunk[a] + (c->bytes[a] + CHUNK - 1) / CHUNK;
  }
  c->started = pthread_create(&c->thread, NULL, clear_main, c) == 0;
}

void vox_background_clear_finish(vox_background_clear *c) {
  const ptrdiff_t chunks = (ptrdiff_t)c->first_chunk[c->n];
#pragma omp parallel for schedule(dynamic, 1)
  for (ptrdiff_t i = 0; i < chunks; i++) clear_next(c);
  if (c->started) pthread_join(c->thread, NULL);
  c->started = 0;
}
