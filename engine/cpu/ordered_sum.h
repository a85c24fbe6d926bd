/* SPDX-License-Identifier: BSD-3-Clause */
/* Sums over the CPU backend's threads in a fixed order (private).
 * OpenMP's reduction clause adds the threads' partial sums in the order
 * they arrive: past two threads one input gave other bits from one run to
 * the next (a solve repeated on 4 threads moved in its last digits). Here
 * each thread sums its own block of the index range and the blocks' sums
 * are added in thread order: the same bits on every run with the same
 * number of threads. Use:
 *
 *   vox_ordered_sums sums;
 *   vox_ordered_start(&sums, threads);
 *   #pragma omp parallel num_threads(sums.threads)
 *   {
 *     ptrdiff_t lo, hi;
 *     double *part = vox_ordered_block(&sums, n, &lo, &hi), s = 0;
 *     for (ptrdiff_t i = lo; i < hi; i++) s += ...;
 *     part[0] = s;
 *   }
 *   total = vox_ordered_total(&sums, 0);
 */
#ifndef VOXFE_CPU_ORDERED_SUM_H
#define VOXFE_CPU_ORDERED_SUM_H

#include <omp.h>
#include <stddef.h>
#include <stdint.h>

enum { VOX_ORDERED_MAX_THREADS = 256, VOX_ORDERED_MAX_SUMS = 24 };

typedef struct vox_ordered_sums {
  int threads;     /* asked for (num_threads) */
  int used;        /* the team's size, set by its blocks */
  double part[VOX_ORDERED_MAX_THREADS][VOX_ORDERED_MAX_SUMS];
} vox_ordered_sums;

/* threads as vox_cpu_threads gives them (0: OpenMP's default), at most
 * VOX_ORDERED_MAX_THREADS. */
static inline void vox_ordered_start(vox_ordered_sums *s, int threads) {
  if (threads <= 0) threads = omp_get_max_threads();
  s->threads = threads < VOX_ORDERED_MAX_THREADS ? threads : VOX_ORDERED_MAX_THREADS;
  s->used = 1;
  for (int k = 0; k < VOX_ORDERED_MAX_SUMS; k++) s->part[0][k] = 0;
}

/* The calling thread's block [lo, hi) of [0, n) (in a parallel region of
 * sums->threads threads), and its partial sums, zeroed. */
static inline double *vox_ordered_block(vox_ordered_sums *s, ptrdiff_t n, ptrdiff_t *lo,
                                        ptrdiff_t *hi) {
  const int t = omp_get_thread_num(), nt = omp_get_num_threads();
  if (t == 0) s->used = nt;
  for (int k = 0; k < VOX_ORDERED_MAX_SUMS; k++) s->part[t][k] = 0;
  *lo = (ptrdiff_t)((int64_t)n * t / nt);
  *hi = (ptrdiff_t)((int64_t)n * (t + 1) / nt);
  return s->part[t];
}

/* Sum k over the blocks, in thread order. */
static inline double vox_ordered_total(const vox_ordered_sums *s, int k) {
  double total = 0;
  for (int t = 0; t < s->used; t++) total += s->part[t][k];
  return total;
}

#endif
