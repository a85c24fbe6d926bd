/* SPDX-License-Identifier: BSD-3-Clause */
/* Running sums on the host's threads (prefix_sum.h). */
#include "prefix_sum.h"

void vox_inclusive_scan(size_t *a, size_t n) {
  enum { BLOCKS = 256 };
  if (n < ((size_t)1 << 20)) { /* one pass: the blocks would cost more */
    for (size_t i = 1; i < n; i++) a[i] += a[i - 1];
    return;
  }
  size_t before[BLOCKS + 1];
  before[0] = 0;
#pragma omp parallel for schedule(dynamic, 1)
  for (int b = 0; b < BLOCKS; b++) {
    const size_t lo = n / BLOCKS * (size_t)b, hi = b == BLOCKS - 1 ? n : lo + n / BLOCKS;
    for (size_t i = lo + 1; i < hi; i++) a[i] += a[i - 1];
    before[b + 1] = a[hi - 1];
  }
  for (int b = 1; b <= BLOCKS; b++) before[b] += before[b - 1];
#pragma omp parallel for schedule(dynamic, 1)
  for (int b = 1; b < BLOCKS; b++) {
    const size_t lo = n / BLOCKS * (size_t)b, hi = b == BLOCKS - 1 ? n : lo + n / BLOCKS;
    for (size_t i = lo; i < hi; i++) a[i] += before[b];
  }
}
