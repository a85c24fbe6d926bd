/* SPDX-License-Identifier: BSD-3-Clause */
/* The library context: error messages, progress reporting, threads.
 *
 * libvoxfe keeps no global state. Every call takes a context; a failing call
 * returns a status code and leaves a one-line message on the context. The
 * library never prints and never exits: progress goes to a callback.
 * Separate contexts may be used from separate threads, except for file I/O
 * through netCDF (voxfe/io.h), which is not thread-safe. */
#ifndef VOXFE_CONTEXT_H
#define VOXFE_CONTEXT_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum vox_status {
  VOX_OK = 0,
  VOX_ERR_INVALID_ARGUMENT, /* the caller passed values that make no sense */
  VOX_ERR_NO_MEMORY,        /* an allocation failed */
  VOX_ERR_IO,               /* a file could not be opened, read or written */
  VOX_ERR_FORMAT,           /* a file's content does not follow its schema */
  VOX_ERR_UNSUPPORTED,      /* a feature this build does not have (e.g. CUDA) */
  VOX_ERR_DEVICE,           /* the compute device failed */
  VOX_ERR_CANCELLED         /* the progress callback asked to stop */
} vox_status;

typedef struct vox_context vox_context;

/* What the progress callback is told, once per design iteration (optimize) or
 * once per stage (other work). Fields that do not apply are NaN or -1. The
 * sparse solver reports "solve: iterating" (its setup's seconds) when its
 * setup is done and CG starts: from then the device works and the host
 * mostly waits. */
typedef struct vox_progress {
  const char *stage;        /* "optimize", "solve", ... */
  int iteration;            /* 1-based design iteration */
  int max_iterations;
  double objective;         /* compliance (summed over load cases) */
  double volume_fraction;   /* of the design domain */
  double change;            /* max |rho_new - rho_old| */
  double non_discreteness;  /* M_nd in percent (Martinez-Frutos et al. 2017, eq. 13) */
  double penalty;           /* SIMP exponent p in force this iteration */
  double q;                 /* intermediate-density exponent q in force */
  int cg_iterations;        /* summed over the load cases of this iteration */
  int solves;               /* the linear systems solved in it (load cases, a mechanism's
                               adjoint, the unit strains a cell objective needs); 0: not said */
  double seconds;           /* wall time of this iteration */
} vox_progress;

/* Returns 0 to go on, non-zero to cancel the running call (which then
 * returns VOX_ERR_CANCELLED). */
typedef int (*vox_progress_fn)(const vox_progress *progress, void *user);

vox_status vox_context_create(vox_context **out);
void vox_context_destroy(vox_context *ctx);

/* The message of the last failure on this context ("" if none). */
const char *vox_context_message(const vox_context *ctx);
/* Sets the message and returns `status`, so that code can write
 * `return vox_error(ctx, VOX_ERR_IO, "%s: cannot open", path);` */
vox_status vox_error(vox_context *ctx, vox_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void vox_context_clear_error(vox_context *ctx);

void vox_context_set_progress(vox_context *ctx, vox_progress_fn fn, void *user);
/* Calls the progress callback; returns VOX_ERR_CANCELLED if it asks to stop. */
vox_status vox_report_progress(vox_context *ctx, const vox_progress *progress);

/* Number of CPU threads the CPU backend uses (0 = OpenMP's default). */
void vox_context_set_threads(vox_context *ctx, int threads);
int vox_context_threads(const vox_context *ctx);

const char *vox_status_string(vox_status status);
const char *vox_version(void);

#ifdef __cplusplus
}
#endif
#endif
