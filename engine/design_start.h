/* SPDX-License-Identifier: BSD-3-Clause */
/* The optimizer's starting design on the host (private): the design and
 * passive masks from the labels, and the start x (the initial design, the
 * model's density or the volume fraction, made symmetric where asked),
 * made on a thread of its own while the caller sets up the device: a
 * periodic cell's trigonometric start and its symmetry take seconds at
 * 512^3, as long as the device's setup. */
#ifndef VOXFE_DESIGN_START_H
#define VOXFE_DESIGN_START_H

#include <pthread.h>

#include "voxfe/optimizer.h"

typedef struct vox_design_start {
  /* what it reads (the caller keeps them unchanged until the end) */
  const vox_model *model;
  const vox_optimizer_options *opt;
  double rho_min;   /* the least density of the optimizer */
  /* what it makes, one value per element: 1 on design elements (design),
   * 1 on passive solid ones (passive), the start (x); and the design
   * elements' count */
  double *design, *passive, *x;
  size_t n_design;
  /* the thread's own context (its errors, the caller's threads) */
  vox_context *ctx;
  vox_status status;
  pthread_t thread;
  int started;
} vox_design_start;

/* Starts making the start on a thread (background) or here. A failure to
 * start anything (memory) is returned; the start's own failure only at
 * vox_design_start_end. */
vox_status vox_design_start_begin(vox_context *ctx, const vox_model *model,
                                  const vox_optimizer_options *opt, double rho_min,
                                  int background, vox_design_start *job);
/* Waits for it; its failure, with its message, in ctx. */
vox_status vox_design_start_end(vox_context *ctx, vox_design_start *job);
/* Frees the arrays and the context (after vox_design_start_end; a job
 * begun and not ended is waited for first). */
void vox_design_start_free(vox_design_start *job);

#endif
