/* SPDX-License-Identifier: BSD-3-Clause */
/* Descriptions of backend memory (layout.h). */
#include "layout.h"

static void add(vox_layout *l, vox_layout_entry e) {
  if (l->n >= VOX_LAYOUT_ENTRIES) {
    l->overflow = 1;
    return;
  }
  l->entry[l->n++] = e;
}

void vox_layout_vec(vox_layout *l, const char *what, size_t n, vox_scalar scalar, vox_vec *vec) {
  add(l, (vox_layout_entry){.what = what,
                            .bytes = (double)vox_vec_bytes(n, scalar),
                            .n = n,
                            .scalar = scalar,
                            .vec = vec});
}

void vox_layout_object(vox_layout *l, const char *what, double bytes) {
  add(l, (vox_layout_entry){.what = what, .bytes = bytes});
}

double vox_layout_bytes(const vox_layout *l) {
  double total = 0;
  for (int i = 0; i < l->n; i++) total += l->entry[i].bytes;
  return total;
}

vox_status vox_layout_create(vox_backend *be, const vox_layout *l) {
  if (l->overflow)
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT, "layout of more than %d entries",
                     (int)VOX_LAYOUT_ENTRIES);
  for (int i = 0; i < l->n; i++) {
    const vox_layout_entry *e = &l->entry[i];
    if (!e->vec) continue;
    const vox_status s = be->ops->vec->create(be, e->n, e->scalar, e->vec);
    if (s != VOX_OK) {
      for (int j = 0; j < i; j++)
        if (l->entry[j].vec) be->ops->vec->destroy(be, l->entry[j].vec);
      return s;
    }
  }
  return VOX_OK;
}
