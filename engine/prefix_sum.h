/* SPDX-License-Identifier: BSD-3-Clause */
/* Running sums of a long array of counts on the host's threads (private).
 * The sparse hierarchy's coarse levels count the copies of every node of a
 * coarse box (perlin32's level 1: 668 million, 5 GB of counts), a pass
 * that one thread made while the others waited. */
#ifndef VOXFE_PREFIX_SUM_H
#define VOXFE_PREFIX_SUM_H

#include <stddef.h>

/* a[i] = a[0] + ... + a[i] for i < n, in place: each of a fixed number of
 * blocks summed on its own, the blocks' totals summed in order, then each
 * block raised by the totals before it. Integer sums: the same result as
 * one pass. */
void vox_inclusive_scan(size_t *a, size_t n);

#endif
