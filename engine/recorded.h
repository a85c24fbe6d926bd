/* SPDX-License-Identifier: BSD-3-Clause */
/* A fixed sequence of backend operations (a V-cycle) recorded once and
 * replayed (private): the backend's record ops (sparse_ops.h), for the
 * bone's sparse solve and the element-free Galerkin multigrid alike. */
#ifndef VOXFE_RECORDED_H
#define VOXFE_RECORDED_H

#include "backend_ops.h"
#include "sparse_ops.h"

/* run(self) replayed from *recording where it holds one; else, where
 * *record is set (cleared: one try), recorded into *recording and
 * replayed at once; else, or where the recording failed (nothing of it
 * ran then, and its error is cleared), run op by op. The caller frees
 * *recording (sparse_ops.h, recording_free) once the ops' vectors or
 * scalars change. */
vox_status vox_run_recorded(vox_backend *be, void **recording, int *record,
                            vox_status (*run)(void *self), void *self);

#endif
