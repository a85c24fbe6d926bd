/* SPDX-License-Identifier: BSD-3-Clause */
/* Assembled block sparse row matrices of the sparse system on the CPU
 * (sparse_ops.h: matrix_*): the smoothed-aggregation levels. A copy of the
 * host matrix; products by block rows on all threads (each row written by
 * one thread). */
#include <stdlib.h>
#include <string.h>

#include "../sparse_ops.h"
#include "cpu.h"

struct vox_sparse_matrix {
  vox_bsr a;      /* a.val NULL when the values are float */
  float *val32;   /* the values in float (`single`) */
  size_t bytes;
};

/* Value k of the matrix, of either precision. */
static inline double value(const vox_sparse_matrix *m, size_t k) {
  return m->val32 ? (double)m->val32[k] : m->a.val[k];
}


enum { MAX_BLOCK = 8 };
/* Block rows below which a product stays on one thread: the coarse levels
 * are small, and a parallel region costs more than their rows (much more
 * when the cores are shared and the threads spin waiting for each other). */
enum { PARALLEL_ROWS = 512 };

vox_status vox_cpu_matrix_create(vox_backend *be, const vox_bsr *h, int single,
                                 vox_sparse_matrix **out) {
  if (h->br > MAX_BLOCK || h->bc > MAX_BLOCK)
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT, "blocks of %d x %d: at most %d", h->br,
                     h->bc, MAX_BLOCK);
  vox_sparse_matrix *m = calloc(1, sizeof *m);
  const size_t nb = vox_bsr_blocks(h), nv = nb * (size_t)(h->br * h->bc);
  if (m) {
    m->a = *h;
    m->a.row_start = malloc((h->n_rows + 1) * sizeof *m->a.row_start);
    m->a.col = malloc((nb ? nb : 1) * sizeof *m->a.col);
    m->a.val = single ? NULL : malloc((nv ? nv : 1) * sizeof *m->a.val);
    m->val32 = single ? malloc((nv ? nv : 1) * sizeof *m->val32) : NULL;
  }
  if (!m || !m->a.row_start || !m->a.col || (!m->a.val && !m->val32)) {
    if (m) vox_bsr_free(&m->a), free(m->val32);
    free(m);
    return vox_error(be->ctx, VOX_ERR_NO_MEMORY, "out of memory for a sparse matrix");
  }
  memcpy(m->a.row_start, h->row_start, (h->n_rows + 1) * sizeof *m->a.row_start);
  memcpy(m->a.col, h->col, nb * sizeof *m->a.col);
  if (single)
    for (size_t k = 0; k < nv; k++) m->val32[k] = (float)h->val[k];
  else
    memcpy(m->a.val, h->val, nv * sizeof *m->a.val);
  m->bytes = (h->n_rows + 1) * sizeof(size_t) + nb * sizeof(int32_t) +
             nv * (single ? sizeof(float) : sizeof(double));
  *out = m;
  return VOX_OK;
}

void vox_cpu_matrix_destroy(vox_backend *be, vox_sparse_matrix *m) {
  (void)be;
  if (!m) return;
  vox_bsr_free(&m->a);
  free(m->val32);
  free(m);
}

size_t vox_cpu_matrix_bytes(const vox_sparse_matrix *m) { return m->bytes; }

/* s += the block row i of a float matrix of 6 x 6 blocks times x (the
 * assembled levels in mixed precision): constant block sizes, so that the
 * compiler unrolls and vectorises the 36 products. */
static inline void row_66_float(const vox_bsr *a, const float *val, size_t i, const vox_vec *x,
                                double s[6]) {
  for (size_t k = a->row_start[i]; k < a->row_start[i + 1]; k++) {
    const float *v = val + 36 * k;
    const size_t c0 = 6 * (size_t)a->col[k];
    double xc[6];
    if (x->scalar)
      for (int c = 0; c < 6; c++) xc[c] = ((const float *)x->data)[c0 + (size_t)c];
    else
      for (int c = 0; c < 6; c++) xc[c] = ((const double *)x->data)[c0 + (size_t)c];
    for (int r = 0; r < 6; r++)
      for (int c = 0; c < 6; c++) s[r] += (double)v[6 * r + c] * xc[c];
  }
}

vox_status vox_cpu_matrix_apply(vox_backend *be, const vox_sparse_matrix *m, const vox_vec *x,
                                vox_vec *y, int add) {
  const vox_bsr *a = &m->a;
  const ptrdiff_t nr = (ptrdiff_t)a->n_rows;
  const int br = a->br, bc = a->bc;
  if (x->n != a->n_cols * (size_t)bc || y->n != a->n_rows * (size_t)br)
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT,
                     "sparse matrix of %zu x %zu entries applied to %zu into %zu",
                     a->n_rows * (size_t)br, a->n_cols * (size_t)bc, x->n, y->n);
  if (br == 6 && bc == 6 && m->val32) {
#pragma omp parallel for num_threads(vox_cpu_threads(be)) schedule(dynamic, 64) \
    if (nr > PARALLEL_ROWS)
    for (ptrdiff_t i = 0; i < nr; i++) {
      double s[6] = {0, 0, 0, 0, 0, 0};
      row_66_float(a, m->val32, (size_t)i, x, s);
      const size_t r0 = 6 * (size_t)i;
      for (int r = 0; r < 6; r++)
        vox_vec_put(y, r0 + (size_t)r, add ? vox_vec_get(y, r0 + (size_t)r) + s[r] : s[r]);
    }
    return VOX_OK;
  }
#pragma omp parallel for num_threads(vox_cpu_threads(be)) schedule(dynamic, 64) \
    if (nr > PARALLEL_ROWS)
  for (ptrdiff_t i = 0; i < nr; i++) {
    double s[MAX_BLOCK] = {0};
    for (size_t k = a->row_start[i]; k < a->row_start[i + 1]; k++) {
      const size_t v0 = k * (size_t)(br * bc);
      const size_t c0 = (size_t)a->col[k] * (size_t)bc;
      double xc[MAX_BLOCK];
      for (int c = 0; c < bc; c++) xc[c] = vox_vec_get(x, c0 + (size_t)c);
      for (int r = 0; r < br; r++)
        for (int c = 0; c < bc; c++) s[r] += value(m, v0 + (size_t)(r * bc + c)) * xc[c];
    }
    const size_t r0 = (size_t)i * (size_t)br;
    for (int r = 0; r < br; r++)
      vox_vec_put(y, r0 + (size_t)r, add ? vox_vec_get(y, r0 + (size_t)r) + s[r] : s[r]);
  }
  return VOX_OK;
}

vox_status vox_cpu_matrix_smoother_step(vox_backend *be, const vox_sparse_matrix *m,
                                        const vox_vec *b, const vox_vec *ax, double alpha,
                                        double beta, vox_vec *d, vox_vec *x) {
  const vox_bsr *w = &m->a;
  const ptrdiff_t nr = (ptrdiff_t)w->n_rows;
  const int br = w->br, bc = w->bc;
  const size_t rows = w->n_rows * (size_t)br;
  if (br != bc || w->n_rows != w->n_cols || b->n != rows || d->n != rows || x->n != rows ||
      (ax && ax->n != rows))
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT,
                     "smoother of %zu rows on vectors of %zu, %zu and %zu entries", rows, b->n,
                     d->n, x->n);
#pragma omp parallel for num_threads(vox_cpu_threads(be)) schedule(dynamic, 64) \
    if (nr > PARALLEL_ROWS)
  for (ptrdiff_t i = 0; i < nr; i++) {
    double z[MAX_BLOCK] = {0};
    for (size_t k = w->row_start[i]; k < w->row_start[i + 1]; k++) {
      const size_t v0 = k * (size_t)(br * bc);
      const size_t c0 = (size_t)w->col[k] * (size_t)bc;
      double r[MAX_BLOCK];
      for (int c = 0; c < bc; c++)
        r[c] = ax ? vox_vec_get(b, c0 + (size_t)c) - vox_vec_get(ax, c0 + (size_t)c)
                  : vox_vec_get(b, c0 + (size_t)c);
      for (int q = 0; q < br; q++)
        for (int c = 0; c < bc; c++) z[q] += value(m, v0 + (size_t)(q * bc + c)) * r[c];
    }
    const size_t r0 = (size_t)i * (size_t)br;
    for (int q = 0; q < br; q++) {
      const size_t u = r0 + (size_t)q;
      const double di = beta != 0 ? alpha * z[q] + beta * vox_vec_get(d, u) : alpha * z[q];
      vox_vec_put(d, u, di);
      vox_vec_put(x, u, vox_vec_get(x, u) + di);
    }
  }
  return VOX_OK;
}
