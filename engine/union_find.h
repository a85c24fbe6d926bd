/* SPDX-License-Identifier: BSD-3-Clause */
/* A disjoint-set forest over int64 indices that threads may join at once
 * (private): parent[x] == x at a root. Finds halve their paths; a join links
 * the larger root to the smaller one by a compare-and-swap, retried when
 * another thread linked that root first, so every set ends up rooted at its
 * smallest member whatever the order of the joins. */
#ifndef VOXFE_UNION_FIND_H
#define VOXFE_UNION_FIND_H

#include <stdint.h>

static inline int64_t vox_uf_find(int64_t *parent, int64_t x) {
  for (;;) {
    const int64_t p = __atomic_load_n(&parent[x], __ATOMIC_RELAXED);
    if (p == x) return x;
    const int64_t gp = __atomic_load_n(&parent[p], __ATOMIC_RELAXED);
    if (gp != p) __atomic_store_n(&parent[x], gp, __ATOMIC_RELAXED); /* path halving */
    x = gp;
  }
}

static inline void vox_uf_unite(int64_t *parent, int64_t a, int64_t b) {
  for (;;) {
    a = vox_uf_find(parent, a), b = vox_uf_find(parent, b);
    if (a == b) return;
    if (a < b) {
      const int64_t t = a;
      a = b, b = t;
    }
    int64_t expected = a;
    if (__atomic_compare_exchange_n(&parent[a], &expected, b, 0, __ATOMIC_RELAXED,
                                    __ATOMIC_RELAXED))
      return;
  }
}

#endif
