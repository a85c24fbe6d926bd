/* SPDX-License-Identifier: BSD-3-Clause */
/* Block sparse row (BSR) matrices on the host (private): the assembled
 * levels, prolongators and restrictions of the smoothed-aggregation coarse
 * space of the sparse solver (sparse_sa.h), and the host arithmetic its
 * setup needs. The backends copy them (sparse_ops.h: matrix_create). */
#ifndef VOXFE_SPARSE_BSR_H
#define VOXFE_SPARSE_BSR_H

#include <stddef.h>
#include <stdint.h>

#include "voxfe/context.h"

/* n_rows x n_cols blocks of br x bc values; the blocks of block row i are
 * [row_start[i], row_start[i+1]), with block columns `col` ascending and
 * values row-major per block: val[(k * br + r) * bc + c]. */
typedef struct vox_bsr {
  size_t n_rows, n_cols;
  int br, bc;
  size_t *row_start;
  int32_t *col;
  double *val;
} vox_bsr;

#ifdef __cplusplus
extern "C" {
#endif

void vox_bsr_free(vox_bsr *a);
static inline size_t vox_bsr_blocks(const vox_bsr *a) { return a->row_start[a->n_rows]; }

/* The position of block (i, j) in row i of a (columns ascending), by
 * bisection; -1 when the pattern lacks it. */
ptrdiff_t vox_bsr_find_block(const vox_bsr *a, int32_t i, int32_t j);
/* Bytes of the matrix's arrays (row starts, columns, values). */
size_t vox_bsr_bytes(const vox_bsr *a);

/* out = A^T. */
vox_status vox_bsr_transpose(vox_context *ctx, const vox_bsr *a, vox_bsr *out);
/* out = A B (A's bc must be B's br), by rows (Gustavson), in parallel. */
vox_status vox_bsr_multiply(vox_context *ctx, const vox_bsr *a, const vox_bsr *b, vox_bsr *out);
/* Row i of a matrix A that need not be stored (vox_bsr_multiply_rows): its
 * number of blocks, *cols their block columns and *vals their values
 * (br x bm each, row-major), pointing into the matrix or into the scratch
 * the caller lends (room for VOX_BSR_ROW_SCRATCH blocks of up to 8 x 8). */
enum { VOX_BSR_ROW_SCRATCH = 27 };
typedef size_t (*vox_bsr_row_fn)(const void *a, size_t i, int32_t *scratch_cols,
                                 double *scratch_vals, const int32_t **cols,
                                 const double **vals);
/* out = A B with A's n_rows rows of br x bm blocks from `row`, as
 * vox_bsr_multiply (the fine operator's rows are gathered from its
 * elements: sparse_sa_fine.c). */
vox_status vox_bsr_multiply_rows(vox_context *ctx, size_t n_rows, int br, int bm,
                                 vox_bsr_row_fn row, const void *a, const vox_bsr *b,
                                 vox_bsr *out);
/* out = A + s B (same shapes), by merging the rows' sorted columns. */
vox_status vox_bsr_add(vox_context *ctx, const vox_bsr *a, double s, const vox_bsr *b,
                       vox_bsr *out);
/* y = A x (scalar vectors of n_rows br and n_cols bc entries). */
void vox_bsr_apply(const vox_bsr *a, const double *x, double *y);
/* The diagonal blocks of a square matrix of square blocks, inverted, as a
 * block-diagonal matrix; the rows and columns in `dead` (per block row, bit
 * c for component c; NULL: none) the identity's; `point`: the blocks'
 * diagonals only (point Jacobi). Fails with a clear message when a block is
 * not positive definite. */
vox_status vox_bsr_inverse_block_diagonal(vox_context *ctx, const vox_bsr *a, const uint8_t *dead,
                                          int point, vox_bsr *out);
/* inv = the pseudo-inverse of the symmetric n x n matrix a (a square array,
 * either storage order; overwritten), eigenvalues under 1e-10 of the
 * largest taken as zero (LAPACK dsyev). 0 when dsyev fails or memory runs
 * out. */
int vox_symmetric_pseudo_inverse(double *a, int n, double *inv);
/* y = M x for an operator of n rows (a callback, so that the matrix-free
 * level 0 and the BSR levels share the power method below). */
typedef void (*vox_host_apply)(const void *m, const double *x, double *y);
/* The largest eigenvalue of W A (W, A symmetric positive semi-definite, W
 * definite on A's range), `iterations` steps of the power method in A's
 * inner product from a fixed start: its Rayleigh quotient
 * (A v)^T W (A v) / v^T A v, an estimate from below, to be widened by the
 * caller. n is the operators' size. */
vox_status vox_power_lambda_max(vox_context *ctx, size_t n, vox_host_apply apply_a,
                                const void *a, vox_host_apply apply_w, const void *w,
                                int iterations, double *out);
/* vox_bsr_apply as a vox_host_apply. */
void vox_bsr_apply_fn(const void *a, const double *x, double *y);
/* sum_i a_i b_i by fixed chunks, summed in parallel and then in chunk
 * order: the same sum on any thread count (the chunks depend on n only). */
double vox_dot_fixed(const double *a, const double *b, size_t n);

#ifdef __cplusplus
}
#endif

#endif
