/* SPDX-License-Identifier: BSD-3-Clause */
#include "host_copy.h"

#include <omp.h>
#include <string.h>

void vox_host_copy(void *to, const void *from, size_t bytes, int threads) {
  /* below a few megabytes a thread team costs more than it saves */
  if (bytes < ((size_t)4 << 20)) {
    memcpy(to, from, bytes);
    return;
  }
  const int n = threads > 0 ? threads : omp_get_max_threads();
#pragma omp parallel num_threads(n)
  {
    const size_t t = (size_t)omp_get_thread_num(), nt = (size_t)omp_get_num_threads();
    /* ranges of whole cache lines, the last one taking the rest */
    const size_t line = 64, lines = bytes / line;
    const size_t begin = lines * t / nt * line;
    const size_t end = t + 1 == nt ? bytes : lines * (t + 1) / nt * line;
    memcpy((char *)to + begin, (const char *)from + begin, end - begin);
  }
}
