/* SPDX-License-Identifier: BSD-3-Clause */
/* Level 0 of the smoothed aggregation from its elements (sparse_sa_fine.h).
 * Every routine gathers a node's block row of A_0 (at most 27 blocks of
 * 3 x 3) from the elements around it, so each row is written by one thread
 * and nothing larger than a row is ever assembled: the fine operator's
 * assembled blocks would take 27 x 9 doubles a node (650 bytes a dof). */
#include "sparse_sa_fine.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "voxfe/element.h"

/* Node of corner a of element e (sparse_ops.h: 4 indices an element). */
static inline int32_t corner_node(const vox_sparse_host_level *lv, size_t e, int a) {
  return lv->element_nodes[4 * e + (size_t)(vox_hex8_corner[a][1] + 2 * vox_hex8_corner[a][2])] +
         vox_hex8_corner[a][0];
}

static vox_status no_memory(vox_context *ctx, const char *what) {
  return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory for the smoothed aggregation (%s)",
                   what);
}

vox_status vox_sa_fine_create(vox_context *ctx, const vox_sparse_hierarchy *h, vox_sa_fine *f) {
  memset(f, 0, sizeof *f);
  const vox_sparse_host_level *lv = &h->level[0];
  f->level = lv;
  f->table = h->table;
  if (lv->n_elements > UINT32_MAX / 8)
    return vox_error(ctx, VOX_ERR_UNSUPPORTED,
                     "smoothed aggregation: at most 2^29 bone elements");
  f->node_start = calloc(lv->n_nodes + 1, sizeof *f->node_start);
  f->node_element = malloc((lv->n_elements ? lv->n_elements : 1) * 8 * sizeof *f->node_element);
  if (!f->node_start || !f->node_element) {
    vox_sa_fine_free(f);
    return no_memory(ctx, "node elements");
  }
  for (size_t e = 0; e < lv->n_elements; e++)
    for (int a = 0; a < 8; a++) f->node_start[corner_node(lv, e, a) + 1]++;
  for (size_t m = 0; m < lv->n_nodes; m++) f->node_start[m + 1] += f->node_start[m];
  size_t *next = malloc((lv->n_nodes ? lv->n_nodes : 1) * sizeof *next);
  if (!next) {
    vox_sa_fine_free(f);
    return no_memory(ctx, "node elements");
  }
  memcpy(next, f->node_start, lv->n_nodes * sizeof *next);
  for (size_t e = 0; e < lv->n_elements; e++)
    for (int a = 0; a < 8; a++) {
      f->node_element[next[corner_node(lv, e, a)]++] = (uint32_t)(8 * e + (size_t)a);
    }
  free(next);
  return VOX_OK;
}

void vox_sa_fine_free(vox_sa_fine *f) {
  free(f->node_start);
  free(f->node_element);
  memset(f, 0, sizeof *f);
}

/* Node m's block row of A_0: `nbr` (ascending) and their 3 x 3 blocks,
 * fixed rows (of m) and columns (of the neighbour) zero. Returns the count. */
static int fine_row(const vox_sa_fine *f, size_t m, int32_t nbr[27], double blk[27][9]) {
  const vox_sparse_host_level *lv = f->level;
  int n = 0;
  for (size_t k = f->node_start[m]; k < f->node_start[m + 1]; k++) {
    const size_t e = f->node_element[k] / 8;
    const int a = (int)(f->node_element[k] % 8);
    const double mod = lv->material ? f->table[lv->material[e]] : (double)lv->modulus[e];
    for (int b = 0; b < 8; b++) {
      const int32_t j = corner_node(lv, e, b);
      int s = 0;
      while (s < n && nbr[s] < j) s++;
      if (s == n || nbr[s] != j) { /* insert, keeping nbr ascending */
        memmove(nbr + s + 1, nbr + s, (size_t)(n - s) * sizeof *nbr);
        memmove(blk[s + 1], blk[s], (size_t)(n - s) * sizeof *blk);
        nbr[s] = j;
        memset(blk[s], 0, sizeof blk[s]);
        n++;
      }
      for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++) blk[s][3 * r + c] += mod * lv->ke[(3 * a + r) * 24 + 3 * b + c];
    }
  }
  const unsigned fm = lv->node_fixed[m];
  for (int s = 0; s < n; s++) {
    const unsigned fj = lv->node_fixed[nbr[s]];
    for (int r = 0; r < 3; r++)
      for (int c = 0; c < 3; c++)
        if ((fm >> r | fj >> c) & 1) blk[s][3 * r + c] = 0;
  }
  return n;
}

vox_status vox_sa_fine_graph(vox_context *ctx, const vox_sa_fine *f, size_t **row_start,
                             int32_t **adj) {
  const size_t n = f->level->n_nodes;
  size_t *rs = calloc(n + 1, sizeof *rs);
  if (!rs) return no_memory(ctx, "fine graph");
  const ptrdiff_t nn = (ptrdiff_t)n;
#pragma omp parallel for schedule(dynamic, 1024)
  for (ptrdiff_t m = 0; m < nn; m++) {
    int32_t nbr[27];
    double blk[27][9];
    rs[m + 1] = (size_t)fine_row(f, (size_t)m, nbr, blk);
  }
  for (size_t m = 0; m < n; m++) rs[m + 1] += rs[m];
  int32_t *a = malloc((rs[n] ? rs[n] : 1) * sizeof *a);
  if (!a) {
    free(rs);
    return no_memory(ctx, "fine graph");
  }
#pragma omp parallel for schedule(dynamic, 1024)
  for (ptrdiff_t m = 0; m < nn; m++) {
    int32_t nbr[27];
    double blk[27][9];
    const int k = fine_row(f, (size_t)m, nbr, blk);
    memcpy(a + rs[m], nbr, (size_t)k * sizeof *nbr);
  }
  *row_start = rs;
  *adj = a;
  return VOX_OK;
}

vox_status vox_sa_fine_inverse_block_diagonal(vox_context *ctx, const vox_sa_fine *f, int point,
                                              vox_bsr *out) {
  /* the diagonal blocks as a block-diagonal matrix, then sparse_bsr's
   * inverse with the fixed components as identity */
  const size_t n = f->level->n_nodes;
  vox_bsr d = {.n_rows = n, .n_cols = n, .br = 3, .bc = 3};
  d.row_start = malloc((n + 1) * sizeof *d.row_start);
  d.col = malloc((n ? n : 1) * sizeof *d.col);
  d.val = malloc((n ? n : 1) * 9 * sizeof *d.val);
  if (!d.row_start || !d.col || !d.val) {
    vox_bsr_free(&d);
    return no_memory(ctx, "fine diagonal");
  }
  const ptrdiff_t nn = (ptrdiff_t)n;
#pragma omp parallel for schedule(dynamic, 1024)
  for (ptrdiff_t m = 0; m < nn; m++) {
    int32_t nbr[27];
    double blk[27][9];
    const int k = fine_row(f, (size_t)m, nbr, blk);
    d.row_start[m] = (size_t)m;
    d.col[m] = (int32_t)m;
    memset(d.val + 9 * m, 0, 9 * sizeof *d.val);
    for (int s = 0; s < k; s++)
      if (nbr[s] == (int32_t)m) memcpy(d.val + 9 * m, blk[s], 9 * sizeof *d.val);
  }
  d.row_start[n] = n;
  const vox_status s = vox_bsr_inverse_block_diagonal(ctx, &d, f->level->node_fixed, point, out);
  vox_bsr_free(&d);
  return s;
}

void vox_sa_fine_apply(const void *p, const double *x, double *y) {
  const vox_sa_fine *f = p;
  const ptrdiff_t nn = (ptrdiff_t)f->level->n_nodes;
#pragma omp parallel for schedule(dynamic, 1024)
  for (ptrdiff_t m = 0; m < nn; m++) {
    int32_t nbr[27];
    double blk[27][9];
    const int k = fine_row(f, (size_t)m, nbr, blk);
    double s[3] = {0, 0, 0};
    for (int t = 0; t < k; t++)
      for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++) s[r] += blk[t][3 * r + c] * x[3 * (size_t)nbr[t] + (size_t)c];
    for (int r = 0; r < 3; r++) y[3 * (size_t)m + (size_t)r] = s[r];
  }
}

/* The fine operator's row m as vox_bsr_multiply_rows reads a row: gathered
 * from the node's elements into the scratch. */
static size_t gathered_row(const void *p, size_t m, int32_t *scratch_cols, double *scratch_vals,
                           const int32_t **cols, const double **vals) {
  const int k = fine_row(p, m, scratch_cols, (double(*)[9])scratch_vals);
  *cols = scratch_cols;
  *vals = scratch_vals;
  return (size_t)k;
}

vox_status vox_sa_fine_multiply(vox_context *ctx, const vox_sa_fine *f, const vox_bsr *b,
                                vox_bsr *out) {
  if (b->br != 3 || b->n_rows != f->level->n_nodes)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "fine product of a mismatched matrix");
  return vox_bsr_multiply_rows(ctx, f->level->n_nodes, 3, 3, gathered_row, f, b, out);
}
