/* SPDX-License-Identifier: BSD-3-Clause */
/* Record once, replay after (recorded.h). */
#include "recorded.h"

vox_status vox_run_recorded(vox_backend *be, void **recording, int *record,
                            vox_status (*run)(void *self), void *self) {
  const vox_sparse_ops *o = be->ops->sparse;
  if (*recording) return o->replay(be, *recording);
  if (*record) {
    *record = 0;
    vox_status st = o->record_begin(be);
    if (st == VOX_OK) {
      st = run(self);
      void *made = NULL;
      const vox_status end = o->record_end(be, &made);
      if (st == VOX_OK && end == VOX_OK) {
        *recording = made;
        return o->replay(be, made);
      }
      if (made) o->recording_free(be, made);
    }
    vox_context_clear_error(be->ctx);
  }
  return run(self);
}
