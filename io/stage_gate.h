/* SPDX-License-Identifier: BSD-3-Clause */
/* The gate between a caller and the thread that writes its file beside
 * its work (private to io/: the result writer, the n88model writer). The
 * caller raises the stage as the parts of the file become ready (the
 * solution, the fields, ...), or cancels; the writing thread waits for a
 * stage. What a stage hands over is stored before the stage is raised: the
 * lock orders those stores before the waiter's reads. */
#ifndef VOXFE_STAGE_GATE_H
#define VOXFE_STAGE_GATE_H

#include <netcdf.h>
#include <omp.h>
#include <pthread.h>

#include "voxfe/context.h"

typedef struct vox_stage_gate {
  pthread_mutex_t lock;
  pthread_cond_t changed;
  int stage, cancelled;
} vox_stage_gate;

static inline void vox_gate_init(vox_stage_gate *g, int stage) {
  pthread_mutex_init(&g->lock, NULL);
  pthread_cond_init(&g->changed, NULL);
  g->stage = stage;
  g->cancelled = 0;
}

static inline void vox_gate_destroy(vox_stage_gate *g) {
  pthread_mutex_destroy(&g->lock);
  pthread_cond_destroy(&g->changed);
}

/* Raises the stage to `stage` (never lowers it). */
static inline void vox_gate_raise(vox_stage_gate *g, int stage) {
  pthread_mutex_lock(&g->lock);
  if (g->stage < stage) g->stage = stage;
  pthread_cond_broadcast(&g->changed);
  pthread_mutex_unlock(&g->lock);
}

static inline void vox_gate_cancel(vox_stage_gate *g) {
  pthread_mutex_lock(&g->lock);
  g->cancelled = 1;
  pthread_cond_broadcast(&g->changed);
  pthread_mutex_unlock(&g->lock);
}

/* Waits until the stage is `stage` or more (1) or the gate is cancelled
 * (0, whatever the stage: a cancelled file is not finished). */
static inline int vox_gate_wait(vox_stage_gate *g, int stage) {
  pthread_mutex_lock(&g->lock);
  while (g->stage < stage && !g->cancelled) pthread_cond_wait(&g->changed, &g->lock);
  const int reached = !g->cancelled;
  pthread_mutex_unlock(&g->lock);
  return reached;
}

/* The writing thread: write(user) on a quarter of the OpenMP threads (the
 * rest are the caller's, computing what the writer waits for), its status
 * kept for vox_writer_join. */
typedef struct vox_writer_thread {
  pthread_t thread;
  vox_status (*write)(void *user);
  void *user;
  vox_status status;
} vox_writer_thread;

static inline void *vox_writer_main(void *arg) {
  vox_writer_thread *t = (vox_writer_thread *)arg;
  const int threads = omp_get_max_threads() / 4;
  omp_set_num_threads(threads > 1 ? threads : 1);
  t->status = t->write(t->user);
  return NULL;
}

/* 0 once the thread runs, else pthread_create's error. netCDF is
 * initialised here first: it turns HDF5's error printing off only in the
 * thread that initialises it, which must be the caller's (else every
 * attribute netCDF probes for in the caller's later reads prints HDF5's
 * diagnostics). */
static inline int vox_writer_start(vox_writer_thread *t, vox_status (*write)(void *), void *user) {
  t->write = write, t->user = user, t->status = VOX_OK;
  nc_initialize();
  return pthread_create(&t->thread, NULL, vox_writer_main, t);
}

static inline vox_status vox_writer_join(vox_writer_thread *t) {
  pthread_join(t->thread, NULL);
  return t->status;
}

#endif
