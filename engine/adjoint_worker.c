/* SPDX-License-Identifier: BSD-3-Clause */
/* The adjoint solve on a second device in a thread of its own
 * (adjoint_worker.h). Everything on the second device is made, used and
 * freed by the worker thread: a CUDA device is the current device of a
 * thread, and the backend's context is the thread's own (contexts are not
 * shared between threads); a failure's message is copied to the caller's.
 *
 * The worker solves exactly what the one-device path solves after the state
 * (the same moduli, the preconditioner set up from them, the previous adjoint
 * as the initial guess), so the two paths give the same designs. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adjoint_worker.h"
#include "fem.h"

enum job { JOB_NONE, JOB_SOLVE, JOB_QUIT };

struct vox_adjoint_worker {
  vox_context *ctx;          /* the caller's */
  vox_backend *primary;
  pthread_t thread;
  pthread_mutex_t mutex;
  pthread_cond_t wake, done_cond;
  enum job job;
  int done;                  /* the last job (or the set-up) finished */
  /* set up in the thread */
  const vox_model *model;    /* during set-up only */
  vox_device device;
  int index;
  vox_context *own_ctx;
  vox_backend *be;
  vox_fem *fem;
  vox_vec v;
  /* exchanged through the host */
  double *moduli, *adjoint;
  size_t n_elements, n_dofs;
  vox_solver_options options;
  vox_status status;
  vox_solve_result result;
  char message[512];
};

static void finish_job(vox_adjoint_worker *w, vox_status s) {
  pthread_mutex_lock(&w->mutex);
  w->status = s;
  if (s != VOX_OK)
    snprintf(w->message, sizeof w->message, "adjoint on device %d: %s", w->index,
             w->own_ctx ? vox_context_message(w->own_ctx) : "out of memory");
  w->job = JOB_NONE;
  w->done = 1;
  pthread_cond_signal(&w->done_cond);
  pthread_mutex_unlock(&w->mutex);
}

static vox_status set_up(vox_adjoint_worker *w) {
  TRY(vox_context_create(&w->own_ctx));
  vox_context_set_threads(w->own_ctx, vox_context_threads(w->ctx));
  vox_backend_options options; /* the primary's, on this worker's device */
  vox_backend_options_get(w->primary, &options);
  options.device = w->device;
  options.device_index = w->index;
  TRY(vox_backend_create_with(w->own_ctx, &options, &w->be));
  TRY(vox_fem_create(w->own_ctx, w->be, w->model, &w->fem));
  return w->be->ops->vec->create(w->be, w->fem->n_dofs, VOX_DOUBLE, &w->v);
}

static vox_status solve(vox_adjoint_worker *w) {
  const vox_backend_ops *o = w->be->ops;
  TRY(o->vec->upload(w->be, &w->fem->moduli, w->moduli));
  TRY(vox_fem_update(w->fem));
  TRY(vox_fem_solve_adjoint(w->fem, &w->v, &w->options, &w->result));
  return o->vec->download(w->be, &w->v, w->adjoint);
}

static void tear_down(vox_adjoint_worker *w) {
  if (w->v.data) w->be->ops->vec->destroy(w->be, &w->v);
  vox_fem_destroy(w->fem);
  vox_backend_destroy(w->be);
  vox_context_destroy(w->own_ctx);
  w->fem = NULL, w->be = NULL, w->own_ctx = NULL;
}

static void *worker_main(void *arg) {
  vox_adjoint_worker *w = arg;
  vox_status s = set_up(w);
  finish_job(w, s);
  for (;;) {
    pthread_mutex_lock(&w->mutex);
    while (w->job == JOB_NONE) pthread_cond_wait(&w->wake, &w->mutex);
    const enum job job = w->job;
    pthread_mutex_unlock(&w->mutex);
    if (job == JOB_QUIT) break;
    finish_job(w, w->fem ? solve(w) : VOX_ERR_DEVICE);
  }
  tear_down(w);
  return NULL;
}

/* Waits for the running job; its status, with the message on the caller's
 * context when it failed. */
static vox_status wait_done(vox_adjoint_worker *w) {
  pthread_mutex_lock(&w->mutex);
  while (!w->done) pthread_cond_wait(&w->done_cond, &w->mutex);
  const vox_status s = w->status;
  pthread_mutex_unlock(&w->mutex);
  return s == VOX_OK ? VOX_OK : vox_error(w->ctx, s, "%s", w->message);
}

static void post(vox_adjoint_worker *w, enum job job) {
  pthread_mutex_lock(&w->mutex);
  w->job = job;
  w->done = 0;
  pthread_cond_signal(&w->wake);
  pthread_mutex_unlock(&w->mutex);
}

vox_status vox_adjoint_worker_create(vox_context *ctx, vox_backend *primary,
                                     const vox_model *model, vox_device device, int index,
                                     vox_adjoint_worker **out) {
  *out = NULL;
  vox_adjoint_worker *w = calloc(1, sizeof *w);
  if (!w) return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
  w->ctx = ctx, w->primary = primary, w->model = model, w->device = device, w->index = index;
  w->n_elements = (size_t)vox_grid_elements(&model->grid);
  w->n_dofs = (size_t)vox_physics_dofs_per_node(model->physics) *
              (size_t)vox_grid_nodes(&model->grid);
  w->moduli = malloc(w->n_elements * sizeof *w->moduli);
  w->adjoint = malloc(w->n_dofs * sizeof *w->adjoint);
  if (!w->moduli || !w->adjoint) {
    free(w->moduli), free(w->adjoint), free(w);
    return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
  }
  pthread_mutex_init(&w->mutex, NULL);
  pthread_cond_init(&w->wake, NULL);
  pthread_cond_init(&w->done_cond, NULL);
  if (pthread_create(&w->thread, NULL, worker_main, w) != 0) {
    pthread_mutex_destroy(&w->mutex);
    pthread_cond_destroy(&w->wake);
    pthread_cond_destroy(&w->done_cond);
    free(w->moduli), free(w->adjoint), free(w);
    return vox_error(ctx, VOX_ERR_NO_MEMORY, "cannot start the adjoint thread");
  }
  vox_status s = wait_done(w); /* the set-up */
  w->model = NULL;
  if (s != VOX_OK) {
    vox_adjoint_worker_destroy(w);
    return s;
  }
  *out = w;
  return VOX_OK;
}

void vox_adjoint_worker_destroy(vox_adjoint_worker *w) {
  if (!w) return;
  pthread_mutex_lock(&w->mutex);
  while (!w->done) pthread_cond_wait(&w->done_cond, &w->mutex);
  pthread_mutex_unlock(&w->mutex);
  post(w, JOB_QUIT);
  pthread_join(w->thread, NULL);
  pthread_mutex_destroy(&w->mutex);
  pthread_cond_destroy(&w->wake);
  pthread_cond_destroy(&w->done_cond);
  free(w->moduli);
  free(w->adjoint);
  free(w);
}

vox_status vox_adjoint_worker_start(vox_adjoint_worker *w, const vox_vec *moduli,
                                    const vox_vec *v, const vox_solver_options *options) {
  (void)v; /* the worker keeps its own previous adjoint as the initial guess */
  TRY(w->primary->ops->vec->download(w->primary, moduli, w->moduli));
  w->options = *options;
  post(w, JOB_SOLVE);
  return VOX_OK;
}

vox_status vox_adjoint_worker_finish(vox_adjoint_worker *w, vox_vec *v,
                                     vox_solve_result *result) {
  TRY(wait_done(w));
  *result = w->result;
  return w->primary->ops->vec->upload(w->primary, v, w->adjoint);
}
