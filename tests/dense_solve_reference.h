/* SPDX-License-Identifier: BSD-3-Clause */
/* x = a^-1 b for the n x n matrix a (row-major), by Gaussian elimination
 * with partial pivoting in long double: the EFG tests' reference for a
 * patch's solve, an algorithm of its own beside the patches' Cholesky
 * factorisation and Gauss-Jordan sweeps (efg_patches.h). */
#ifndef VOXFE_TEST_DENSE_SOLVE_REFERENCE_H
#define VOXFE_TEST_DENSE_SOLVE_REFERENCE_H

#include <math.h>
#include <stdlib.h>

static inline void dense_solve_reference(int n, const double *a, const double *b, double *x) {
  long double *m = malloc((size_t)n * (size_t)(n + 1) * sizeof *m);
#define M(i, j) m[(size_t)(n + 1) * (size_t)(i) + (size_t)(j)]
  for (int i = 0; i < n; i++) {
    for (int j = 0; j < n; j++) M(i, j) = a[(size_t)n * i + j];
    M(i, n) = b[i];
  }
  for (int k = 0; k < n; k++) {
    int best = k;
    for (int i = k + 1; i < n; i++)
      if (fabsl(M(i, k)) > fabsl(M(best, k))) best = i;
    for (int j = 0; j <= n; j++) {
      const long double t = M(k, j);
      M(k, j) = M(best, j), M(best, j) = t;
    }
    for (int i = k + 1; i < n; i++) {
      const long double f = M(i, k) / M(k, k);
      for (int j = k; j <= n; j++) M(i, j) -= f * M(k, j);
    }
  }
  for (int i = n - 1; i >= 0; i--) {
    long double t = M(i, n);
    for (int j = i + 1; j < n; j++) t -= M(i, j) * x[j];
    x[i] = (double)(t / M(i, i));
  }
#undef M
  free(m);
}

#endif
