/* SPDX-License-Identifier: BSD-3-Clause */
/* The geometric multigrid levels of the EFG stiffness (efg_levels.h). */
#include "efg_levels.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "backend_ops.h"
#include "voxfe/context.h"

static void transfer_free(vox_efg_transfer *t) {
  free(t->parent);
  free(t->parent_weight);
  free(t->child);
  free(t->child_weight);
  vox_bsr_free(&t->b);
  vox_bsr_free(&t->coarse);
  memset(t, 0, sizeof *t);
}

void vox_efg_levels_free(vox_efg_levels *lv) {
  for (int l = 0; l + 1 < lv->n_levels; l++) transfer_free(&lv->transfer[l]);
  memset(lv, 0, sizeof *lv);
}

static int cmp_i32(const void *a, const void *b) {
  const int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

/* The pattern of the rows of `out` (n_rows x n_cols blocks): row r's columns
 * are the sorted union of list(r)'s entries, which row_cols gathers into
 * scratch (returning how many, duplicates allowed). Two passes, threaded. */
typedef size_t (*row_cols_fn)(const void *self, size_t r, int32_t *scratch);
static vox_status union_pattern(vox_context *ctx, size_t n_rows, size_t n_cols, size_t max_row,
                                row_cols_fn row_cols, const void *self, vox_bsr *out) {
  memset(out, 0, sizeof *out);
  out->n_rows = n_rows, out->n_cols = n_cols, out->br = out->bc = 3;
  out->row_start = calloc(n_rows + 1, sizeof *out->row_start);
  if (!out->row_start) return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory (multigrid levels)");
  int failed = 0;
  for (int pass = 0; pass < 2 && !failed; pass++) {
#pragma omp parallel reduction(| : failed)
    {
      int32_t *scratch = malloc((max_row ? max_row : 1) * sizeof *scratch);
      if (!scratch) failed = 1;
#pragma omp for schedule(dynamic, 64)
      for (ptrdiff_t r = 0; r < (ptrdiff_t)n_rows; r++) {
        if (!scratch) continue;
        size_t n = row_cols(self, (size_t)r, scratch);
        qsort(scratch, n, sizeof *scratch, cmp_i32);
        size_t u = 0;
        for (size_t k = 0; k < n; k++)
          if (u == 0 || scratch[k] != scratch[u - 1]) scratch[u++] = scratch[k];
        if (pass == 0)
          out->row_start[r + 1] = u;
        else
          memcpy(out->col + out->row_start[r], scratch, u * sizeof *scratch);
      }
      free(scratch);
    }
    if (pass == 0 && !failed) {
      for (size_t r = 0; r < n_rows; r++) out->row_start[r + 1] += out->row_start[r];
      out->col = malloc((out->row_start[n_rows] + 1) * sizeof *out->col);
      if (!out->col) failed = 1;
    }
  }
  if (failed) {
    vox_bsr_free(out);
    return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory (multigrid levels)");
  }
  return VOX_OK;
}

/* B's row i: the parents of the columns of A's row i. */
typedef struct b_rows {
  const vox_bsr *a;
  const vox_efg_transfer *t;
} b_rows;

static size_t b_row_cols(const void *self, size_t i, int32_t *scratch) {
  const b_rows *s = self;
  size_t n = 0;
  for (size_t k = s->a->row_start[i]; k < s->a->row_start[i + 1]; k++) {
    const int32_t *par = s->t->parent + 8 * (size_t)s->a->col[k];
    for (int p = 0; p < 8 && par[p] >= 0; p++) scratch[n++] = par[p];
  }
  return n;
}

/* A_l+1's row I: the columns of B's rows of I's children. */
static size_t c_row_cols(const void *self, size_t row, int32_t *scratch) {
  const vox_efg_transfer *t = self;
  size_t n = 0;
  for (int c = 0; c < 27; c++) {
    const int32_t i = t->child[27 * row + (size_t)c];
    if (i < 0) continue;
    for (size_t k = t->b.row_start[i]; k < t->b.row_start[i + 1]; k++) scratch[n++] = t->b.col[k];
  }
  return n;
}

static size_t max_row_blocks(const vox_bsr *a) {
  size_t m = 0;
  for (size_t i = 0; i < a->n_rows; i++) {
    const size_t n = a->row_start[i + 1] - a->row_start[i];
    m = n > m ? n : m;
  }
  return m;
}

/* One coarsening: the fine level's nodes at grid lines coord (3 a node) on
 * a grid of cells[3] cells; the coarse level's coordinates and cells out. */
static vox_status coarsen(vox_context *ctx, const vox_bsr *a, size_t nf, const int32_t *coord,
                          const int64_t cells[3], vox_efg_transfer *t, int32_t **coarse_coord,
                          int64_t coarse_cells[3]) {
  int f[3];
  int64_t dims[3];
  for (int d = 0; d < 3; d++) {
    f[d] = cells[d] >= 2 ? 2 : 1;
    coarse_cells[d] = f[d] == 2 ? (cells[d] + 1) / 2 : cells[d];
    dims[d] = coarse_cells[d] + 1;
  }
  const size_t ng = (size_t)(dims[0] * dims[1] * dims[2]);
  int32_t *index = malloc(ng * sizeof *index);
  t->n_fine = nf;
  t->parent = malloc((nf ? nf : 1) * 8 * sizeof *t->parent);
  t->parent_weight = malloc((nf ? nf : 1) * 8 * sizeof *t->parent_weight);
  if (!index || !t->parent || !t->parent_weight) {
    free(index);
    return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory (multigrid levels)");
  }
  for (size_t g = 0; g < ng; g++) index[g] = -1;
  /* each fine node's coarse grid nodes (as grid indices first) */
  for (size_t i = 0; i < nf; i++) {
    int64_t line[3][2];
    double w[3][2];
    int m[3];
    for (int d = 0; d < 3; d++) {
      const int64_t c = coord[3 * i + (size_t)d];
      if (f[d] == 1 || c % 2 == 0) {
        line[d][0] = f[d] == 1 ? c : c / 2, w[d][0] = 1, m[d] = 1;
      } else {
        line[d][0] = c / 2, line[d][1] = c / 2 + 1, w[d][0] = w[d][1] = 0.5, m[d] = 2;
      }
    }
    int p = 0;
    for (int z = 0; z < m[2]; z++)
      for (int y = 0; y < m[1]; y++)
        for (int x = 0; x < m[0]; x++, p++) {
          const int64_t g = (line[2][z] * dims[1] + line[1][y]) * dims[0] + line[0][x];
          t->parent[8 * i + (size_t)p] = (int32_t)g;
          t->parent_weight[8 * i + (size_t)p] = w[0][x] * w[1][y] * w[2][z];
          index[g] = 0;
        }
    for (; p < 8; p++) t->parent[8 * i + (size_t)p] = -1, t->parent_weight[8 * i + (size_t)p] = 0;
  }
  size_t nc = 0;
  for (size_t g = 0; g < ng; g++)
    if (index[g] >= 0) index[g] = (int32_t)nc++;
  t->n_coarse = nc;
  *coarse_coord = malloc((nc ? nc : 1) * 3 * sizeof **coarse_coord);
  t->child = malloc((nc ? nc : 1) * 27 * sizeof *t->child);
  t->child_weight = malloc((nc ? nc : 1) * 27 * sizeof *t->child_weight);
  if (!*coarse_coord || !t->child || !t->child_weight) {
    free(index);
    return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory (multigrid levels)");
  }
  for (size_t g = 0; g < ng; g++)
    if (index[g] >= 0) {
      int32_t *cc = *coarse_coord + 3 * (size_t)index[g];
      cc[0] = (int32_t)((int64_t)g % dims[0]);
      cc[1] = (int32_t)(((int64_t)g / dims[0]) % dims[1]);
      cc[2] = (int32_t)((int64_t)g / (dims[0] * dims[1]));
    }
  for (size_t i = 0; i < 27 * nc; i++) t->child[i] = -1, t->child_weight[i] = 0;
  for (size_t i = 0; i < nf; i++)
    for (int p = 0; p < 8 && t->parent[8 * i + (size_t)p] >= 0; p++) {
      const int32_t c = index[t->parent[8 * i + (size_t)p]];
      t->parent[8 * i + (size_t)p] = c;
      int s = 0;
      while (t->child[27 * (size_t)c + (size_t)s] >= 0) s++; /* at most 27: 3 lines an axis */
      t->child[27 * (size_t)c + (size_t)s] = (int32_t)i;
      t->child_weight[27 * (size_t)c + (size_t)s] = t->parent_weight[8 * i + (size_t)p];
    }
  free(index);
  const b_rows br = {a, t};
  TRY(union_pattern(ctx, nf, nc, 8 * max_row_blocks(a), b_row_cols, &br, &t->b));
  TRY(union_pattern(ctx, nc, nc, 27 * max_row_blocks(&t->b), c_row_cols, t, &t->coarse));
  return VOX_OK;
}

vox_status vox_efg_levels_init(vox_context *ctx, const vox_efg_model *efg, const vox_bsr *k,
                               size_t dense_dofs, vox_efg_levels *lv) {
  memset(lv, 0, sizeof *lv);
  lv->n_levels = 1;
  lv->n_nodes[0] = efg->nodes.n;
  int64_t cells[3] = {efg->nodes.grid.nx, efg->nodes.grid.ny, efg->nodes.grid.nz};
  const int32_t *coord = efg->nodes.coord;
  int32_t *own = NULL; /* the coordinates of the level below the newest */
  const vox_bsr *a = k;
  vox_status s = VOX_OK;
  while (lv->n_levels < VOX_EFG_MAX_LEVELS && 3 * lv->n_nodes[lv->n_levels - 1] > dense_dofs &&
         (cells[0] >= 2 || cells[1] >= 2 || cells[2] >= 2)) {
    vox_efg_transfer *t = &lv->transfer[lv->n_levels - 1];
    int32_t *next = NULL;
    int64_t coarse_cells[3];
    s = coarsen(ctx, a, lv->n_nodes[lv->n_levels - 1], coord, cells, t, &next, coarse_cells);
    lv->n_levels++; /* the transfer is freed with the levels, complete or not */
    free(own);
    own = next;
    if (s != VOX_OK) break;
    lv->n_nodes[lv->n_levels - 1] = t->n_coarse;
    coord = next;
    memcpy(cells, coarse_cells, sizeof cells);
    a = &t->coarse;
  }
  free(own);
  const size_t last = 3 * lv->n_nodes[lv->n_levels - 1];
  if (s == VOX_OK && last > VOX_EFG_MAX_DENSE_DOFS)
    s = vox_error(ctx, VOX_ERR_UNSUPPORTED,
                  "element-free Galerkin: the multigrid's last level has %zu unknowns, too "
                  "many to factor densely",
                  last);
  if (s != VOX_OK) vox_efg_levels_free(lv);
  return s;
}

void vox_efg_galerkin(const vox_efg_transfer *t, const vox_bsr *a, const double *aval,
                      double *bval, double *cval) {
#pragma omp parallel for schedule(dynamic, 64)
  for (ptrdiff_t i = 0; i < (ptrdiff_t)t->n_fine; i++)
    for (size_t k = t->b.row_start[i]; k < t->b.row_start[i + 1]; k++) {
      const size_t J = (size_t)t->b.col[k];
      double s[9] = {0};
      for (int c = 0; c < 27; c++) {
        const int32_t j = t->child[27 * J + (size_t)c];
        if (j < 0) continue;
        const ptrdiff_t at = vox_bsr_find_block(a, (int32_t)i, j);
        if (at < 0) continue;
        const double w = t->child_weight[27 * J + (size_t)c], *blk = aval + 9 * (size_t)at;
        for (int e = 0; e < 9; e++) s[e] += w * blk[e];
      }
      memcpy(bval + 9 * k, s, sizeof s);
    }
#pragma omp parallel for schedule(dynamic, 64)
  for (ptrdiff_t I = 0; I < (ptrdiff_t)t->n_coarse; I++)
    for (size_t k = t->coarse.row_start[I]; k < t->coarse.row_start[I + 1]; k++) {
      const int32_t J = t->coarse.col[k];
      double s[9] = {0};
      for (int c = 0; c < 27; c++) {
        const int32_t i = t->child[27 * (size_t)I + (size_t)c];
        if (i < 0) continue;
        const ptrdiff_t at = vox_bsr_find_block(&t->b, i, J);
        if (at < 0) continue;
        const double w = t->child_weight[27 * (size_t)I + (size_t)c], *blk = bval + 9 * (size_t)at;
        /* (P^T B)_IJ = sum_i P_iI B_iJ: P's blocks are w times the identity */
        for (int e = 0; e < 9; e++) s[e] += w * blk[e];
      }
      memcpy(cval + 9 * k, s, sizeof s);
    }
}

void vox_efg_restrict(const vox_efg_transfer *t, const double *r, double *rc) {
#pragma omp parallel for schedule(static)
  for (ptrdiff_t I = 0; I < (ptrdiff_t)t->n_coarse; I++) {
    double s0 = 0, s1 = 0, s2 = 0;
    for (int c = 0; c < 27; c++) {
      const int32_t i = t->child[27 * (size_t)I + (size_t)c];
      if (i < 0) continue;
      const double w = t->child_weight[27 * (size_t)I + (size_t)c];
      s0 += w * r[3 * (size_t)i], s1 += w * r[3 * (size_t)i + 1], s2 += w * r[3 * (size_t)i + 2];
    }
    rc[3 * I] = s0, rc[3 * I + 1] = s1, rc[3 * I + 2] = s2;
  }
}

void vox_efg_prolong_add(const vox_efg_transfer *t, const double *xc, double *x) {
#pragma omp parallel for schedule(static)
  for (ptrdiff_t i = 0; i < (ptrdiff_t)t->n_fine; i++)
    for (int p = 0; p < 8; p++) {
      const int32_t J = t->parent[8 * (size_t)i + (size_t)p];
      if (J < 0) break;
      const double w = t->parent_weight[8 * (size_t)i + (size_t)p];
      for (int c = 0; c < 3; c++) x[3 * i + c] += w * xc[3 * (size_t)J + (size_t)c];
    }
}
