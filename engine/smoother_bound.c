/* SPDX-License-Identifier: BSD-3-Clause */
/* The Jacobi-scaled spectrum bound of smoother_bound.h, by LAPACK. */
#include <math.h>
#include <stdlib.h>

#include "smoother_bound.h"

/* LAPACK (Fortran calling convention): eigenvalues of a symmetric matrix. */
extern void dsyev_(const char *jobz, const char *uplo, const int *n, double *a, const int *lda,
                   double *w, double *work, const int *lwork, int *info);

extern void dsygv_(const int *itype, const char *jobz, const char *uplo, const int *n, double *a,
                   const int *lda, double *b, const int *ldb, double *w, double *work,
                   const int *lwork, int *info);

enum { MAX_N = 24 };

vox_status vox_jacobi_spectrum_bound(vox_context *ctx, const double *ke, int n, double *bound) {
  if (n < 1 || n > MAX_N)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "element matrix of %d rows", n);
  double a[MAX_N * MAX_N], w[MAX_N], work[3 * MAX_N * MAX_N];
  for (int i = 0; i < n; i++)
    if (!(ke[i * n + i] > 0))
      return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                       "element matrix: diagonal entry %d is not positive", i);
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) /* symmetric: row- and column-major alike */
      a[i * n + j] = ke[i * n + j] / sqrt(ke[i * n + i] * ke[j * n + j]);
  const int lwork = 3 * MAX_N * MAX_N;
  int info = 0;
  dsyev_("N", "U", &n, a, &n, w, work, &lwork, &info);
  if (info != 0)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "element matrix: the eigenvalue solver failed (LAPACK dsyev info %d)", info);
  /* w ascending; a relative margin for dsyev's rounding and for the
   * single-precision smoothing products of mixed precision */
  const double top = w[n - 1] * (1 + 1e-6);
  *bound = top > 1 ? top : 1;
  return VOX_OK;
}

vox_status vox_block_jacobi_spectrum_bound(vox_context *ctx, const double *ke, int n, int block,
                                           double *bound) {
  if (n < 1 || n > MAX_N || block < 1 || n % block != 0)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "element matrix of %d rows in blocks of %d",
                     n, block);
  double a[MAX_N * MAX_N], b[MAX_N * MAX_N], w[MAX_N], work[3 * MAX_N * MAX_N];
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) { /* symmetric: row- and column-major alike */
      a[i * n + j] = ke[i * n + j];
      b[i * n + j] = i / block == j / block ? ke[i * n + j] : 0;
    }
  const int lwork = 3 * MAX_N * MAX_N, itype = 1;
  int info = 0;
  dsygv_(&itype, "N", "U", &n, a, &n, b, &n, w, work, &lwork, &info);
  if (info > n)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "element matrix: a diagonal block is not positive definite");
  if (info != 0)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "element matrix: the eigenvalue solver failed (LAPACK dsygv info %d)", info);
  const double top = w[n - 1] * (1 + 1e-6); /* margin as above */
  *bound = top > 1 ? top : 1;
  return VOX_OK;
}
