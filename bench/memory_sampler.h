/* SPDX-License-Identifier: BSD-3-Clause */
/* The least free device memory a run leaves, read by a thread every
 * millisecond (a run's peak falls within its steps, not at their ends): the
 * least over the whole run, and the least since it was last taken (a
 * design iteration's). */
#ifndef VOXFE_BENCH_MEMORY_SAMPLER_H
#define VOXFE_BENCH_MEMORY_SAMPLER_H

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "voxfe/voxfe.h"

typedef struct bench_sampler {
  vox_backend *be;
  size_t free0;                  /* free before the run */
  _Atomic size_t least, recent;  /* the least seen: in all, since bench_sampler_take */
  atomic_int stop;
  pthread_t thread;
  int running;
} bench_sampler;

static inline void bench_sampler_note(bench_sampler *w) {
  size_t free_bytes, total;
  if (vox_backend_memory(w->be, &free_bytes, &total) != VOX_OK) return;
  _Atomic size_t *at[2] = {&w->least, &w->recent};
  for (int i = 0; i < 2; i++) {
    size_t seen = atomic_load(at[i]);
    while (free_bytes < seen && !atomic_compare_exchange_weak(at[i], &seen, free_bytes)) {
    }
  }
}

static inline void *bench_sampler_run(void *user) {
  bench_sampler *w = user;
  const struct timespec pause = {.tv_sec = 0, .tv_nsec = 1000000};
  while (!atomic_load(&w->stop)) {
    bench_sampler_note(w);
    nanosleep(&pause, NULL);
  }
  return NULL;
}

/* Starts reading (where `sample`: a device backend) from free0. */
static inline void bench_sampler_start(bench_sampler *w, vox_backend *be, size_t free0,
                                       int sample) {
  w->be = be, w->free0 = free0;
  atomic_init(&w->least, free0);
  atomic_init(&w->recent, free0);
  atomic_init(&w->stop, 0);
  w->running = sample && pthread_create(&w->thread, NULL, bench_sampler_run, w) == 0;
}

static inline void bench_sampler_stop(bench_sampler *w) {
  atomic_store(&w->stop, 1);
  if (w->running) pthread_join(w->thread, NULL);
  w->running = 0;
}

/* The least free memory since the last call, and from now on afresh. */
static inline size_t bench_sampler_take(bench_sampler *w) {
  return atomic_exchange(&w->recent, w->free0);
}

#endif
