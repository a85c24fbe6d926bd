/* SPDX-License-Identifier: BSD-3-Clause */
/* Host arithmetic of block sparse row matrices (sparse_bsr.h). The products
 * run by rows on all threads, each row's columns found with a per-thread
 * marker over the output's columns (Gustavson), counted in a first pass and
 * filled in a second, so that every row is written by one thread only and
 * the sums come out the same on any thread count. */
#include "sparse_bsr.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

static vox_status no_memory(vox_context *ctx, const char *what) {
  return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory for the smoothed aggregation (%s)",
                   what);
}

void vox_bsr_free(vox_bsr *a) {
  free(a->row_start);
  free(a->col);
  free(a->val);
  memset(a, 0, sizeof *a);
}

size_t vox_bsr_bytes(const vox_bsr *a) {
  const size_t nb = vox_bsr_blocks(a);
  return (a->n_rows + 1) * sizeof(size_t) + nb * sizeof(int32_t) +
         nb * (size_t)(a->br * a->bc) * sizeof(double);
}

/* Allocates the row starts (zeroed) of an n_rows matrix. */
static vox_status alloc_rows(vox_context *ctx, vox_bsr *a, size_t n_rows, size_t n_cols, int br,
                             int bc) {
  memset(a, 0, sizeof *a);
  a->n_rows = n_rows, a->n_cols = n_cols, a->br = br, a->bc = bc;
  a->row_start = calloc(n_rows + 1, sizeof *a->row_start);
  return a->row_start ? VOX_OK : no_memory(ctx, "row starts");
}

/* Row counts in row_start[1 ..] to starts, then the columns and values. */
static vox_status alloc_blocks(vox_context *ctx, vox_bsr *a) {
  for (size_t i = 0; i < a->n_rows; i++) a->row_start[i + 1] += a->row_start[i];
  const size_t nb = a->row_start[a->n_rows];
  a->col = malloc((nb ? nb : 1) * sizeof *a->col);
  a->val = calloc((nb ? nb : 1) * (size_t)(a->br * a->bc), sizeof *a->val);
  return a->col && a->val ? VOX_OK : no_memory(ctx, "blocks");
}

vox_status vox_bsr_transpose(vox_context *ctx, const vox_bsr *a, vox_bsr *out) {
  vox_status s = alloc_rows(ctx, out, a->n_cols, a->n_rows, a->bc, a->br);
  if (s != VOX_OK) return s;
  const ptrdiff_t nb = (ptrdiff_t)vox_bsr_blocks(a);
  /* the output rows' lengths (atomics: counts do not depend on the order) */
#pragma omp parallel for schedule(static)
  for (ptrdiff_t k = 0; k < nb; k++) {
#pragma omp atomic
    out->row_start[a->col[k] + 1]++;
  }
  if ((s = alloc_blocks(ctx, out)) != VOX_OK) {
    vox_bsr_free(out);
    return s;
  }
  size_t *next = malloc((out->n_rows ? out->n_rows : 1) * sizeof *next);
  if (!next) {
    vox_bsr_free(out);
    return no_memory(ctx, "transpose");
  }
  memcpy(next, out->row_start, out->n_rows * sizeof *next);
  const int br = a->br, bc = a->bc;
  const size_t bb = (size_t)(br * bc);
  const ptrdiff_t nr = (ptrdiff_t)a->n_rows, nt = (ptrdiff_t)out->n_rows;
  /* the blocks transposed into places taken atomically, by input rows in
   * parallel (level 0's P of the clinical sample holds some 10^8 values)
   * ... */
#pragma omp parallel for schedule(dynamic, 256)
  for (ptrdiff_t i = 0; i < nr; i++)
    for (size_t k = a->row_start[i]; k < a->row_start[i + 1]; k++) {
      size_t t;
#pragma omp atomic capture
      t = next[a->col[k]]++;
      out->col[t] = (int32_t)i;
      const double *v = a->val + k * bb;
      double *w = out->val + t * bb;
      for (int r = 0; r < br; r++)
        for (int c = 0; c < bc; c++) w[c * br + r] = v[r * bc + c];
    }
  free(next);
  /* ... then each output row's blocks sorted by column (insertion: rows
   * are short): the order of one serial pass over the input rows, so the
   * result does not depend on the thread count */
#pragma omp parallel for schedule(dynamic, 256)
  for (ptrdiff_t j = 0; j < nt; j++) {
    double held[64];
    for (size_t q = out->row_start[j] + 1; q < out->row_start[j + 1]; q++) {
      const int32_t c = out->col[q];
      if (out->col[q - 1] <= c) continue;
      memcpy(held, out->val + q * bb, bb * sizeof *held);
      size_t p = q;
      for (; p > out->row_start[j] && out->col[p - 1] > c; p--) {
        out->col[p] = out->col[p - 1];
        memcpy(out->val + p * bb, out->val + (p - 1) * bb, bb * sizeof *held);
      }
      out->col[p] = c;
      memcpy(out->val + p * bb, held, bb * sizeof *held);
    }
  }
  return VOX_OK;
}

static int compare_int32(const void *x, const void *y) {
  const int32_t a = *(const int32_t *)x, b = *(const int32_t *)y;
  return (a > b) - (a < b);
}

vox_status vox_bsr_multiply_rows(vox_context *ctx, size_t n_rows, int br, int bm,
                                 vox_bsr_row_fn row, const void *a, const vox_bsr *b,
                                 vox_bsr *out) {
  if (bm != b->br || br > 8 || bm > 8)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "BSR product of mismatched shapes");
  vox_status s = alloc_rows(ctx, out, n_rows, b->n_cols, br, b->bc);
  if (s != VOX_OK) return s;
  const int nt = omp_get_max_threads();
  const size_t nc = b->n_cols;
  int32_t *marker = malloc((size_t)nt * (nc ? nc : 1) * sizeof *marker);
  if (!marker) {
    vox_bsr_free(out);
    return no_memory(ctx, "product markers");
  }
  const ptrdiff_t nr = (ptrdiff_t)n_rows;
  /* pass 1: the distinct columns of each row (marker: the last row that
   * saw the column) */
#pragma omp parallel num_threads(nt)
  {
    int32_t *mk = marker + (size_t)omp_get_thread_num() * nc;
    for (size_t j = 0; j < nc; j++) mk[j] = -1;
    int32_t scratch_cols[VOX_BSR_ROW_SCRATCH];
    double scratch_vals[VOX_BSR_ROW_SCRATCH * 64];
#pragma omp for schedule(dynamic, 256)
    for (ptrdiff_t i = 0; i < nr; i++) {
      const int32_t *acol;
      const double *aval;
      const size_t na = row(a, (size_t)i, scratch_cols, scratch_vals, &acol, &aval);
      size_t count = 0;
      for (size_t k = 0; k < na; k++) {
        const int32_t m = acol[k];
        for (size_t t = b->row_start[m]; t < b->row_start[m + 1]; t++)
          if (mk[b->col[t]] != (int32_t)i) mk[b->col[t]] = (int32_t)i, count++;
      }
      out->row_start[i + 1] = count;
    }
  }
  if ((s = alloc_blocks(ctx, out)) != VOX_OK) {
    free(marker);
    vox_bsr_free(out);
    return s;
  }
  /* pass 2: the columns sorted, then the blocks summed into their places
   * (marker: the column's position in the row) */
  const int bc = b->bc;
  const size_t ab = (size_t)(br * bm), bb = (size_t)(bm * bc), ob = (size_t)(br * bc);
#pragma omp parallel num_threads(nt)
  {
    int32_t *mk = marker + (size_t)omp_get_thread_num() * nc;
    for (size_t j = 0; j < nc; j++) mk[j] = -1;
    int32_t scratch_cols[VOX_BSR_ROW_SCRATCH];
    double scratch_vals[VOX_BSR_ROW_SCRATCH * 64];
#pragma omp for schedule(dynamic, 256)
    for (ptrdiff_t i = 0; i < nr; i++) {
      const int32_t *acol;
      const double *aval;
      const size_t na = row(a, (size_t)i, scratch_cols, scratch_vals, &acol, &aval);
      const size_t o0 = out->row_start[i];
      size_t count = 0;
      for (size_t k = 0; k < na; k++) {
        const int32_t m = acol[k];
        for (size_t t = b->row_start[m]; t < b->row_start[m + 1]; t++)
          if (mk[b->col[t]] < 0) mk[b->col[t]] = 0, out->col[o0 + count++] = b->col[t];
      }
      qsort(out->col + o0, count, sizeof *out->col, compare_int32);
      for (size_t q = 0; q < count; q++) mk[out->col[o0 + q]] = (int32_t)q;
      for (size_t k = 0; k < na; k++) {
        const int32_t m = acol[k];
        const double *av = aval + k * ab;
        for (size_t t = b->row_start[m]; t < b->row_start[m + 1]; t++) {
          const double *bv = b->val + t * bb;
          double *ov = out->val + (o0 + (size_t)mk[b->col[t]]) * ob;
          for (int r = 0; r < br; r++)
            for (int q = 0; q < bm; q++) {
              const double x = av[r * bm + q];
              if (x == 0) continue;
              for (int c = 0; c < bc; c++) ov[r * bc + c] += x * bv[q * bc + c];
            }
        }
      }
      for (size_t q = 0; q < count; q++) mk[out->col[o0 + q]] = -1;
    }
  }
  free(marker);
  return VOX_OK;
}

/* A stored matrix's row i: its own blocks, no copy. */
static size_t stored_row(const void *p, size_t i, int32_t *scratch_cols, double *scratch_vals,
                         const int32_t **cols, const double **vals) {
  (void)scratch_cols, (void)scratch_vals;
  const vox_bsr *a = p;
  const size_t k0 = a->row_start[i];
  *cols = a->col + k0;
  *vals = a->val + k0 * (size_t)(a->br * a->bc);
  return a->row_start[i + 1] - k0;
}

vox_status vox_bsr_multiply(vox_context *ctx, const vox_bsr *a, const vox_bsr *b, vox_bsr *out) {
  if (a->bc != b->br || a->n_cols != b->n_rows)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "BSR product of mismatched shapes");
  return vox_bsr_multiply_rows(ctx, a->n_rows, a->br, a->bc, stored_row, a, b, out);
}

vox_status vox_bsr_add(vox_context *ctx, const vox_bsr *a, double s, const vox_bsr *b,
                       vox_bsr *out) {
  if (a->n_rows != b->n_rows || a->n_cols != b->n_cols || a->br != b->br || a->bc != b->bc)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "BSR sum of mismatched shapes");
  vox_status st = alloc_rows(ctx, out, a->n_rows, a->n_cols, a->br, a->bc);
  if (st != VOX_OK) return st;
  const ptrdiff_t nr = (ptrdiff_t)a->n_rows;
#pragma omp parallel for schedule(static)
  for (ptrdiff_t i = 0; i < nr; i++) { /* the union of two ascending lists */
    size_t p = a->row_start[i], q = b->row_start[i], c = 0;
    while (p < a->row_start[i + 1] || q < b->row_start[i + 1]) {
      const int32_t x = p < a->row_start[i + 1] ? a->col[p] : INT32_MAX;
      const int32_t y = q < b->row_start[i + 1] ? b->col[q] : INT32_MAX;
      p += x <= y, q += y <= x, c++;
    }
    out->row_start[i + 1] = c;
  }
  if ((st = alloc_blocks(ctx, out)) != VOX_OK) {
    vox_bsr_free(out);
    return st;
  }
  const size_t bb = (size_t)(a->br * a->bc);
#pragma omp parallel for schedule(static)
  for (ptrdiff_t i = 0; i < nr; i++) {
    size_t p = a->row_start[i], q = b->row_start[i], o = out->row_start[i];
    while (p < a->row_start[i + 1] || q < b->row_start[i + 1]) {
      const int32_t x = p < a->row_start[i + 1] ? a->col[p] : INT32_MAX;
      const int32_t y = q < b->row_start[i + 1] ? b->col[q] : INT32_MAX;
      double *v = out->val + o * bb;
      out->col[o] = x < y ? x : y;
      if (x <= y) memcpy(v, a->val + p * bb, bb * sizeof *v), p++;
      if (y <= x) {
        for (size_t k = 0; k < bb; k++) v[k] += s * b->val[q * bb + k];
        q++;
      }
      o++;
    }
  }
  return VOX_OK;
}

void vox_bsr_apply(const vox_bsr *a, const double *x, double *y) {
  const ptrdiff_t nr = (ptrdiff_t)a->n_rows;
  const int br = a->br, bc = a->bc;
#pragma omp parallel for schedule(dynamic, 256)
  for (ptrdiff_t i = 0; i < nr; i++) {
    double s[64] = {0}; /* br <= 64 (3 or 6; the dense coarsest inverse has 6) */
    for (size_t k = a->row_start[i]; k < a->row_start[i + 1]; k++) {
      const double *v = a->val + k * (size_t)(br * bc);
      const double *xc = x + (size_t)a->col[k] * (size_t)bc;
      for (int r = 0; r < br; r++)
        for (int c = 0; c < bc; c++) s[r] += v[r * bc + c] * xc[c];
    }
    for (int r = 0; r < br; r++) y[(size_t)i * (size_t)br + (size_t)r] = s[r];
  }
}

void vox_bsr_apply_fn(const void *a, const double *x, double *y) { vox_bsr_apply(a, x, y); }

ptrdiff_t vox_bsr_find_block(const vox_bsr *a, int32_t i, int32_t j) {
  size_t lo = a->row_start[i], hi = a->row_start[i + 1];
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (a->col[mid] < j)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < a->row_start[i + 1] && a->col[lo] == j ? (ptrdiff_t)lo : -1;
}

/* The inverse of the symmetric positive definite n x n matrix a (row-major,
 * overwritten) into inv, through its Cholesky factor; 0 when a pivot is not
 * positive. */
static int spd_inverse(double *a, int n, double *inv) {
  /* a pivot under this share of the largest diagonal entry: not definite
   * (a mechanism's direction, which rounding may leave a tiny pivot of
   * either sign); the caller takes the pseudo-inverse */
  double largest = 0;
  for (int j = 0; j < n; j++) largest = fmax(largest, a[j * n + j]);
  for (int j = 0; j < n; j++) { /* a = L L^T, L in the lower triangle */
    double d = a[j * n + j];
    for (int k = 0; k < j; k++) d -= a[j * n + k] * a[j * n + k];
    if (!(d > 1e-10 * largest)) return 0;
    a[j * n + j] = sqrt(d);
    for (int i = j + 1; i < n; i++) {
      double s = a[i * n + j];
      for (int k = 0; k < j; k++) s -= a[i * n + k] * a[j * n + k];
      a[i * n + j] = s / a[j * n + j];
    }
  }
  for (int c = 0; c < n; c++) { /* column c of inv: L L^T x = e_c */
    double y[64];
    for (int i = 0; i < n; i++) {
      double s = i == c;
      for (int k = 0; k < i; k++) s -= a[i * n + k] * y[k];
      y[i] = s / a[i * n + i];
    }
    for (int i = n - 1; i >= 0; i--) {
      double s = y[i];
      for (int k = i + 1; k < n; k++) s -= a[k * n + i] * y[k];
      y[i] = s / a[i * n + i];
    }
    for (int i = 0; i < n; i++) inv[i * n + c] = y[i];
  }
  return 1;
}

/* LAPACK: eigenvalues and vectors of a symmetric matrix */
extern void dsyev_(const char *jobz, const char *uplo, const int *n, double *a, const int *lda,
                   double *w, double *work, const int *lwork, int *info);

int vox_symmetric_pseudo_inverse(double *a, int n, double *inv) {
  /* eigenvalues below this share of the largest count as zero: a
   * mechanism's directions (a part hinged on one node or edge, rigid modes
   * of an aggregate that such a part holds), which no consistent right-hand
   * side excites */
  const double relative_zero = 1e-10;
  double *w = malloc((size_t)n * sizeof *w);
  int lwork = -1, info = 0;
  double query = 0;
  dsyev_("V", "U", &n, a, &n, w, &query, &lwork, &info);
  lwork = info == 0 ? (int)query : 0;
  double *work = lwork > 0 ? malloc((size_t)lwork * sizeof *work) : NULL;
  if (!w || !work) {
    free(w), free(work);
    return 0;
  }
  dsyev_("V", "U", &n, a, &n, w, work, &lwork, &info);
  free(work);
  if (info != 0) {
    free(w);
    return 0;
  }
  const double largest = n > 0 ? fmax(fabs(w[0]), fabs(w[n - 1])) : 0;
  memset(inv, 0, (size_t)n * (size_t)n * sizeof *inv);
  for (int e = 0; e < n; e++) {
    if (!(w[e] > relative_zero * largest)) continue;
    const double *v = a + (size_t)e * (size_t)n; /* column e */
    for (int c = 0; c < n; c++)
      for (int r = 0; r < n; r++) inv[(size_t)c * (size_t)n + (size_t)r] += v[r] * v[c] / w[e];
  }
  free(w);
  return 1;
}

vox_status vox_bsr_inverse_block_diagonal(vox_context *ctx, const vox_bsr *a, const uint8_t *dead,
                                          int point, vox_bsr *out) {
  const int b = a->br;
  if (a->br != a->bc || a->n_rows != a->n_cols || b > 8)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "block diagonal of a non-square BSR matrix");
  vox_status s = alloc_rows(ctx, out, a->n_rows, a->n_cols, b, b);
  if (s != VOX_OK) return s;
  for (size_t i = 0; i < a->n_rows; i++) out->row_start[i + 1] = 1;
  if ((s = alloc_blocks(ctx, out)) != VOX_OK) {
    vox_bsr_free(out);
    return s;
  }
  const ptrdiff_t nr = (ptrdiff_t)a->n_rows;
  const size_t bb = (size_t)(b * b);
  ptrdiff_t failed = -1;
#pragma omp parallel for schedule(static)
  for (ptrdiff_t i = 0; i < nr; i++) {
    double m[64] = {0};
    for (size_t k = a->row_start[i]; k < a->row_start[i + 1]; k++)
      if (a->col[k] == (int32_t)i) memcpy(m, a->val + k * bb, bb * sizeof *m);
    const unsigned d = dead ? dead[i] : 0;
    for (int r = 0; r < b; r++)
      for (int c = 0; c < b; c++)
        if (((d >> r | d >> c) & 1) || (point && r != c)) m[r * b + c] = 0;
    for (int r = 0; r < b; r++)
      if (d >> r & 1) m[r * b + r] = 1;
    out->col[i] = (int32_t)i;
    double copy[64];
    memcpy(copy, m, bb * sizeof *m);
    /* a block that is only semi-definite (a mechanism's directions, see
     * vox_symmetric_pseudo_inverse): its pseudo-inverse */
    if (!spd_inverse(m, b, out->val + (size_t)i * bb) &&
        !vox_symmetric_pseudo_inverse(copy, b, out->val + (size_t)i * bb)) {
#pragma omp critical
      failed = i;
    }
  }
  if (failed >= 0) {
    vox_bsr_free(out);
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "smoothed aggregation: no inverse of diagonal block %td of a coarse "
                     "level (LAPACK dsyev failed or out of memory)",
                     failed);
  }
  return VOX_OK;
}

double vox_dot_fixed(const double *a, const double *b, size_t n) {
  enum { MAX_CHUNKS = 1024, LEAST_CHUNK = 16384 };
  size_t chunk = (n + MAX_CHUNKS - 1) / MAX_CHUNKS;
  if (chunk < LEAST_CHUNK) chunk = LEAST_CHUNK;
  const ptrdiff_t chunks = (ptrdiff_t)((n + chunk - 1) / chunk);
  double part[MAX_CHUNKS];
#pragma omp parallel for schedule(static) if (chunks > 1)
  for (ptrdiff_t c = 0; c < chunks; c++) {
    const size_t i0 = (size_t)c * chunk, i1 = i0 + chunk < n ? i0 + chunk : n;
    double s = 0;
    for (size_t i = i0; i < i1; i++) s += a[i] * b[i];
    part[c] = s;
  }
  double s = 0;
  for (ptrdiff_t c = 0; c < chunks; c++) s += part[c];
  return s;
}

vox_status vox_power_lambda_max(vox_context *ctx, size_t n, vox_host_apply apply_a,
                                const void *a, vox_host_apply apply_w, const void *w,
                                int iterations, double *out) {
  if (n == 0) { /* an empty level: any interval serves */
    *out = 1;
    return VOX_OK;
  }
  double *v = malloc((n ? n : 1) * sizeof *v), *u = malloc((n ? n : 1) * sizeof *u);
  if (!v || !u) {
    free(v), free(u);
    return no_memory(ctx, "power method");
  }
  /* a fixed start with every sign pattern's share: a hash of the index */
  for (size_t i = 0; i < n; i++) v[i] = (double)((i * 2654435761u) % 1000u) / 500.0 - 1.0;
  double lambda = 0;
  for (int it = 0; it < iterations; it++) {
    apply_a(a, v, u);
    const double vu = vox_dot_fixed(v, u, n);
    apply_w(w, u, v); /* v = W A v_old */
    const double uwu = vox_dot_fixed(u, v, n), vv = vox_dot_fixed(v, v, n);
    if (it == 0 && vu == 0 && vv == 0) { /* A = 0 (every dof fixed): nothing to scale */
      lambda = 1;
      break;
    }
    if (!(vu > 0) || !(vv > 0)) break;
    lambda = uwu / vu;
    const double scale = 1 / sqrt(vv);
    const ptrdiff_t ni = (ptrdiff_t)n;
#pragma omp parallel for schedule(static)
    for (ptrdiff_t i = 0; i < ni; i++) v[i] *= scale;
  }
  free(v), free(u);
  if (!(lambda > 0))
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "smoothed aggregation: no positive eigenvalue estimate of a level");
  *out = lambda;
  return VOX_OK;
}
