/* The gate between a caller and the thread that writes its file beside
 * its work (private to io/: the result writer, the n88model writer). The
 * caller raises the stage as the parts of the file become ready (the
 * solution, the fields, ...), or cancels; the writing thread waits for a
 * stage. What a stage hands over is stored before the stage is raised: the
 * lock orders those stores before the waiter's reads. */
#ifndef VOXFE_STAGE_GATE_H
#define VOXFE_STAGE_GATE_H

#include <pthread.h>

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

#endif
