/* SPDX-License-Identifier: BSD-3-Clause */
/* Assembled block sparse row matrices of the sparse system on the GPU
 * (sparse_ops.h: matrix_*): the smoothed-aggregation levels, their
 * transfers and inverted diagonal blocks (sparse_sa.h). A copy of the host
 * matrix (sparse_bsr.h) with its values in double or, `single`, float;
 * vectors of either precision (the vector's flag, as in cuda_sparse.cu);
 * sums in double.
 *
 * One thread per scalar row: thread (i, r) sums row r of block row i's
 * blocks against x, so a block row's br threads read each block's br x bc
 * values as one contiguous run, and no two threads write the same entry (no
 * atomics; the restriction is the prolongator's transpose stored as a
 * matrix of its own, or applied from T^T: sparse_solve.c). The shapes the
 * SA hierarchy has (6 x 6 levels and inverse blocks, 3 x 6 prolongator and
 * 6 x 3 restriction of level 0, 3 x 3 blocks) are compiled with their
 * sizes known; others run the same loop with run-time sizes. A warp per
 * block row (the lanes reading the row's values as one run, the sums
 * reduced by shuffles) was measured slower (docs/experiments.md). */
#include <stdlib.h>

#include <type_traits>

#include "cuda_backend.cuh"
#include "sparse_ops.h"

struct vox_sparse_matrix {
  size_t n_rows, n_cols;
  int br, bc;
  size_t *row_start; /* device, n_rows + 1 */
  int32_t *col;      /* device, one per block */
  void *val;         /* device, br x bc per block, row-major: float (single) or double */
  int single;
  size_t bytes;
};

/* Row r of block row i times x (minus ax where given): sum_k block_k[r][:]
 * . x[col_k]. BR and BC 0: the matrix's own sizes at run time; V the
 * values' type. */
template <int BR, int BC, class V>
static __device__ __forceinline__ double row_dot(const vox_sparse_matrix &m, size_t i, int r,
                                                 const void *x, int xs, const void *ax,
                                                 int axs) {
  const int br = BR ? BR : m.br, bc = BC ? BC : m.bc;
  double s = 0;
  for (size_t k = m.row_start[i]; k < m.row_start[i + 1]; k++) {
    const V *v = (const V *)m.val + (k * (size_t)br + (size_t)r) * (size_t)bc;
    const size_t c0 = (size_t)m.col[k] * (size_t)bc;
#pragma unroll
    for (int c = 0; c < (BC ? BC : 8); c++) {
      if (!BC && c >= bc) break;
      const double xc = ax ? vox_cuda_ld(x, xs, c0 + c) - vox_cuda_ld(ax, axs, c0 + c)
                           : vox_cuda_ld(x, xs, c0 + c);
      s += (double)__ldg(v + c) * xc;
    }
  }
  return s;
}

template <int BR, int BC, class V>
static __global__ void apply_kernel(vox_sparse_matrix m, const void *x, int xs, void *y, int ys,
                                    int add) {
  const int br = BR ? BR : m.br;
  VOX_GRID_STRIDE(t, m.n_rows * (size_t)br) {
    const double s = row_dot<BR, BC, V>(m, t / (size_t)br, (int)(t % (size_t)br), x, xs, NULL, 0);
    vox_cuda_st(y, ys, t, add ? vox_cuda_ld(y, ys, t) + s : s);
  }
}

/* d = alpha W (b - ax) + beta d; x += d (beta 0: d's old value unread) */
template <int BR, int BC, class V>
static __global__ void smoother_kernel(vox_sparse_matrix w, const void *b, int bs, const void *ax,
                                       int axs, double alpha, double beta, void *d, int ds,
                                       void *x, int xs) {
  const int br = BR ? BR : w.br;
  VOX_GRID_STRIDE(t, w.n_rows * (size_t)br) {
    const double z = row_dot<BR, BC, V>(w, t / (size_t)br, (int)(t % (size_t)br), b, bs, ax, axs);
    const double di = beta != 0 ? alpha * z + beta * vox_cuda_ld(d, ds, t) : alpha * z;
    vox_cuda_st(d, ds, t, di);
    vox_cuda_st(x, xs, t, vox_cuda_ld(x, xs, t) + di);
  }
}

/* Calls launch(BR, BC, value) with the shape as compile-time constants
 * where it is one the hierarchy has, else with (0, 0): run-time sizes; and
 * a value of the matrix's value type (float or double). */
template <class Launch>
static void by_shape(const vox_sparse_matrix *m, Launch launch) {
  using six = std::integral_constant<int, 6>;
  using three = std::integral_constant<int, 3>;
  using any = std::integral_constant<int, 0>;
  auto typed = [&](auto br, auto bc) {
    if (m->single)
      launch(br, bc, 0.0f);
    else
      launch(br, bc, 0.0);
  };
  if (m->br == 6 && m->bc == 6)
    typed(six{}, six{});
  else if (m->br == 3 && m->bc == 6)
    typed(three{}, six{});
  else if (m->br == 6 && m->bc == 3)
    typed(six{}, three{});
  else if (m->br == 3 && m->bc == 3)
    typed(three{}, three{});
  else
    typed(any{}, any{});
}

enum { MAX_BLOCK = 8 }; /* the run-time loop's bound, as the CPU backend's */

void vox_cuda_matrix_destroy(vox_backend *be, vox_sparse_matrix *m) {
  (void)be;
  if (!m) return;
  vox_cuda_free(m->row_start);
  vox_cuda_free(m->col);
  vox_cuda_free(m->val);
  free(m);
}

vox_status vox_cuda_matrix_create(vox_backend *be, const vox_bsr *h, int single,
                                  vox_sparse_matrix **out) {
  *out = NULL;
  if (h->br < 1 || h->bc < 1 || h->br > MAX_BLOCK || h->bc > MAX_BLOCK)
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT, "blocks of %d x %d: 1 to %d", h->br,
                     h->bc, MAX_BLOCK);
  vox_sparse_matrix *m = (vox_sparse_matrix *)calloc(1, sizeof *m);
  if (!m) return vox_error(be->ctx, VOX_ERR_NO_MEMORY, "out of memory for a sparse matrix");
  m->n_rows = h->n_rows, m->n_cols = h->n_cols, m->br = h->br, m->bc = h->bc;
  m->single = single;
  const size_t nb = vox_bsr_blocks(h), nv = nb * (size_t)(h->br * h->bc);
  const size_t rs = (h->n_rows + 1) * sizeof *m->row_start, cs = nb * sizeof *m->col,
               vs = nv * (single ? sizeof(float) : sizeof(double));
  /* float values converted on the host (setup; the matrices are small next
   * to level 0) */
  float *staged = single && nv ? (float *)malloc(nv * sizeof *staged) : NULL;
  if (single && nv && !staged) {
    free(m);
    return vox_error(be->ctx, VOX_ERR_NO_MEMORY, "out of memory for a sparse matrix");
  }
  for (size_t k = 0; staged && k < nv; k++) staged[k] = (float)h->val[k];
  vox_status s = vox_cuda_alloc(be, (void **)&m->row_start, rs, "a sparse matrix's rows");
  if (s == VOX_OK)
    s = vox_cuda_alloc(be, (void **)&m->col, cs ? cs : 1, "a sparse matrix's columns");
  if (s == VOX_OK)
    s = vox_cuda_alloc(be, (void **)&m->val, vs ? vs : 1, "a sparse matrix's values");
  if (s == VOX_OK)
    s = vox_cuda_check(be, cudaMemcpy(m->row_start, h->row_start, rs, cudaMemcpyHostToDevice),
                       "uploading a sparse matrix");
  if (s == VOX_OK && nb)
    s = vox_cuda_check(be, cudaMemcpy(m->col, h->col, cs, cudaMemcpyHostToDevice),
                       "uploading a sparse matrix");
  if (s == VOX_OK && nb)
    s = vox_cuda_check(be,
                       cudaMemcpy(m->val, staged ? (const void *)staged : (const void *)h->val,
                                  vs, cudaMemcpyHostToDevice),
                       "uploading a sparse matrix");
  free(staged);
  if (s != VOX_OK) {
    vox_cuda_matrix_destroy(be, m);
    return s;
  }
  m->bytes = rs + cs + vs;
  *out = m;
  return VOX_OK;
}

size_t vox_cuda_matrix_bytes(const vox_sparse_matrix *m) { return m->bytes; }

void vox_cuda_matrix_arrays(vox_sparse_matrix *m, const size_t **row_start, const int32_t **col,
                            double **val) {
  *row_start = m->row_start;
  *col = m->col;
  *val = m->single ? NULL : (double *)m->val;
}

vox_status vox_cuda_matrix_apply(vox_backend *be, const vox_sparse_matrix *m, const vox_vec *x,
                                 vox_vec *y, int add) {
  const size_t rows = m->n_rows * (size_t)m->br;
  if (x->n != m->n_cols * (size_t)m->bc || y->n != rows)
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT,
                     "sparse matrix of %zu x %zu entries applied to %zu into %zu", rows,
                     m->n_cols * (size_t)m->bc, x->n, y->n);
  by_shape(m, [&](auto br, auto bc, auto value) {
    constexpr int BR = decltype(br)::value, BC = decltype(bc)::value;
    apply_kernel<BR, BC, decltype(value)><<<vox_cuda_grid(rows), VOX_CUDA_THREADS>>>(
        *m, x->data, x->scalar, y->data, y->scalar, add);
  });
  CUDA_LAUNCHED(be, "the sparse matrix product");
  return VOX_OK;
}

vox_status vox_cuda_matrix_smoother_step(vox_backend *be, const vox_sparse_matrix *w,
                                         const vox_vec *b, const vox_vec *ax, double alpha,
                                         double beta, vox_vec *d, vox_vec *x) {
  const size_t rows = w->n_rows * (size_t)w->br;
  if (w->br != w->bc || w->n_rows != w->n_cols || b->n != rows || d->n != rows || x->n != rows ||
      (ax && ax->n != rows))
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT,
                     "smoother of %zu rows on vectors of %zu, %zu and %zu entries", rows, b->n,
                     d->n, x->n);
  const void *axd = ax ? ax->data : NULL;
  const int axs = ax ? ax->scalar : 0;
  by_shape(w, [&](auto br, auto bc, auto value) {
    constexpr int BR = decltype(br)::value, BC = decltype(bc)::value;
    smoother_kernel<BR, BC, decltype(value)><<<vox_cuda_grid(rows), VOX_CUDA_THREADS>>>(
        *w, b->data, b->scalar, axd, axs, alpha, beta, d->data, d->scalar, x->data, x->scalar);
  });
  CUDA_LAUNCHED(be, "the sparse matrix smoother step");
  return VOX_OK;
}
