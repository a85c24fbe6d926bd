/* SPDX-License-Identifier: BSD-3-Clause */
/* The backend memory a part of the engine allocates, described once
 * (private): each part (fem.c, ksp.c, multigrid.c, objective.c,
 * optimizer.c, homogenize.c) lists its vectors in a function that both its
 * allocation and the memory plan (memory_plan.c) call, the first with the
 * vectors to make, the second with none, so that the plan cannot drift
 * from what is allocated. Backend objects that are not vectors (stencils,
 * the filter, an operator's flags) enter by their bytes as the backend
 * declares them. */
#ifndef VOXFE_LAYOUT_H
#define VOXFE_LAYOUT_H

#include "backend_ops.h"

enum { VOX_LAYOUT_ENTRIES = 96 };

typedef struct vox_layout_entry {
  const char *what;
  double bytes;
  size_t n;           /* a vector's entries (0: bytes of another object) */
  vox_scalar scalar;  /* and their precision */
  vox_vec *vec;       /* where vox_layout_create makes it; NULL in a plan */
} vox_layout_entry;

typedef struct vox_layout {
  int n;
  vox_layout_entry entry[VOX_LAYOUT_ENTRIES];
  int overflow; /* more entries than fit: vox_layout_create refuses */
} vox_layout;

static inline void vox_layout_init(vox_layout *l) {
  l->n = 0;
  l->overflow = 0;
}

/* A vector of n entries of a precision, made at *vec (NULL: counted only). */
void vox_layout_vec(vox_layout *l, const char *what, size_t n, vox_scalar scalar, vox_vec *vec);

/* Bytes of an object the part makes itself (a stencil, a filter). */
void vox_layout_object(vox_layout *l, const char *what, double bytes);

double vox_layout_bytes(const vox_layout *l);

/* Makes every vector of the layout that has a place (zeroed, as
 * vec->create); on failure destroys those it made. */
vox_status vox_layout_create(vox_backend *be, const vox_layout *l);

#endif
