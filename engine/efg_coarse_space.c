/* SPDX-License-Identifier: BSD-3-Clause */
/* The fixed first coarse level of the element-free Galerkin multigrid
 * (efg_coarse_space.h). */
#include "efg_coarse_space.h"

#include <stdlib.h>
#include <string.h>

#include "sparse_aggregation.h"
#include "sparse_sa.h"

enum { M = VOX_SA_MODES, TB = 3 * VOX_SA_MODES };

static vox_status no_memory(vox_context *ctx) {
  return vox_error(ctx, VOX_ERR_NO_MEMORY,
                   "element-free Galerkin: out of memory (multigrid coarse space)");
}

void vox_efg_coarse_space_free(vox_efg_coarse_space *cs) {
  free(cs->agg), free(cs->b1), free(cs->pos1), free(cs->dead1);
  free(cs->k_to_p), free(cs->t_to_p);
  vox_bsr_free(&cs->t);
  vox_bsr_free(&cs->p);
  memset(cs, 0, sizeof *cs);
}

/* Aggregates numbered in the order of their first node (the nodes are in
 * grid order), so that the numbering is the same on every run. */
static vox_status block_aggregates(vox_context *ctx, size_t n, const int32_t *coord, int edge,
                                   int32_t *agg, size_t *n_agg) {
  int32_t hi[3] = {0, 0, 0};
  for (size_t i = 0; i < n; i++)
    for (int d = 0; d < 3; d++)
      if (coord[3 * i + (size_t)d] / edge + 1 > hi[d]) hi[d] = coord[3 * i + (size_t)d] / edge + 1;
  const size_t cells = (size_t)hi[0] * (size_t)hi[1] * (size_t)hi[2];
  int32_t *id = malloc((cells ? cells : 1) * sizeof *id);
  if (!id) return no_memory(ctx);
  for (size_t c = 0; c < cells; c++) id[c] = -1;
  size_t na = 0;
  for (size_t i = 0; i < n; i++) {
    const int32_t *x = coord + 3 * i;
    const size_t bx = (size_t)(x[0] / edge), by = (size_t)(x[1] / edge),
                 bz = (size_t)(x[2] / edge);
    const size_t c = bx + (size_t)hi[0] * (by + (size_t)hi[1] * bz);
    if (id[c] < 0) id[c] = (int32_t)na++;
    agg[i] = id[c];
  }
  free(id);
  *n_agg = na;
  return VOX_OK;
}

static int compare_int32(const void *a, const void *b) {
  const int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

/* P's pattern: per row i the aggregates of the nodes K couples i to,
 * ascending, and where each block of K and T goes in it. */
static vox_status prolongator_pattern(vox_context *ctx, const vox_bsr *k,
                                      vox_efg_coarse_space *cs) {
  const size_t n = k->n_rows, nb = vox_bsr_blocks(k);
  vox_bsr *p = &cs->p;
  memset(p, 0, sizeof *p);
  p->n_rows = n, p->n_cols = cs->n_agg, p->br = 3, p->bc = M;
  p->row_start = malloc((n + 1) * sizeof *p->row_start);
  cs->k_to_p = malloc((nb ? nb : 1) * sizeof *cs->k_to_p);
  cs->t_to_p = malloc((n ? n : 1) * sizeof *cs->t_to_p);
  /* the rows' aggregates, at most one per block of K */
  int32_t *cols = malloc((nb ? nb : 1) * sizeof *cols);
  if (!p->row_start || !cs->k_to_p || !cs->t_to_p || !cols) {
    free(cols);
    return no_memory(ctx);
  }
  p->row_start[0] = 0;
  for (size_t i = 0; i < n; i++) {
    int32_t *c = cols + p->row_start[i];
    size_t m = 0;
    for (size_t b = k->row_start[i]; b < k->row_start[i + 1]; b++) c[m++] = cs->agg[k->col[b]];
    c[m++] = cs->agg[i]; /* T's own block, there even if K has no diagonal */
    qsort(c, m, sizeof *c, compare_int32);
    size_t u = 0;
    for (size_t a = 0; a < m; a++)
      if (u == 0 || c[a] != c[u - 1]) c[u++] = c[a];
    p->row_start[i + 1] = p->row_start[i] + u;
    for (size_t b = k->row_start[i]; b < k->row_start[i + 1]; b++) {
      const int32_t *hit = bsearch(&cs->agg[k->col[b]], c, u, sizeof *c, compare_int32);
      cs->k_to_p[b] = p->row_start[i] + (size_t)(hit - c);
    }
    const int32_t *own = bsearch(&cs->agg[i], c, u, sizeof *c, compare_int32);
    cs->t_to_p[i] = p->row_start[i] + (size_t)(own - c);
  }
  const size_t np = p->row_start[n];
  int32_t *shrunk = realloc(cols, (np ? np : 1) * sizeof *cols);
  if (!shrunk) {
    free(cols);
    return no_memory(ctx);
  }
  p->col = shrunk;
  return VOX_OK;
}

vox_status vox_efg_coarse_space_build(vox_context *ctx, const vox_bsr *k, const double *pos,
                                      const int32_t *coord, int edge, vox_efg_coarse_space *cs) {
  memset(cs, 0, sizeof *cs);
  const size_t n = k->n_rows;
  if (k->br != 3 || k->bc != 3 || k->n_cols != n || edge < 1)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "element-free Galerkin: the coarse space needs a square K of 3 x 3 blocks "
                     "and aggregates of at least one grid line");
  cs->n_nodes = n;
  cs->agg = malloc((n ? n : 1) * sizeof *cs->agg);
  double *b = malloc((n ? n : 1) * TB * sizeof *b);
  vox_status s = cs->agg && b ? VOX_OK : no_memory(ctx);
  if (s == VOX_OK) s = block_aggregates(ctx, n, coord, edge, cs->agg, &cs->n_agg);
  if (s == VOX_OK) {
    const size_t na = cs->n_agg ? cs->n_agg : 1;
    cs->b1 = malloc(na * M * M * sizeof *cs->b1);
    cs->pos1 = malloc(na * 3 * sizeof *cs->pos1);
    cs->dead1 = calloc(na, 1);
    if (!cs->b1 || !cs->pos1 || !cs->dead1) s = no_memory(ctx);
  }
  if (s == VOX_OK) s = vox_sa_rigid_modes_at(ctx, n, pos, cs->agg, cs->n_agg, b, cs->pos1);
  if (s == VOX_OK)
    s = vox_sa_tentative(ctx, n, 3, cs->agg, cs->n_agg, b, NULL, &cs->t, cs->b1, cs->dead1);
  free(b);
  if (s == VOX_OK) s = prolongator_pattern(ctx, k, cs);
  if (s != VOX_OK) vox_efg_coarse_space_free(cs);
  return s;
}

vox_status vox_efg_coarse_space_prolongator(vox_context *ctx, const vox_efg_coarse_space *cs,
                                            const vox_bsr *k, const vox_bsr *w, double scale,
                                            vox_bsr *p) {
  const vox_bsr *pat = &cs->p;
  const size_t n = pat->n_rows, np = vox_bsr_blocks(pat);
  *p = (vox_bsr){.n_rows = n, .n_cols = pat->n_cols, .br = 3, .bc = M};
  p->row_start = malloc((n + 1) * sizeof *p->row_start);
  p->col = malloc((np ? np : 1) * sizeof *p->col);
  p->val = malloc((np ? np : 1) * TB * sizeof *p->val);
  if (!p->row_start || !p->col || !p->val) {
    vox_bsr_free(p);
    return no_memory(ctx);
  }
  memcpy(p->row_start, pat->row_start, (n + 1) * sizeof *p->row_start);
  memcpy(p->col, pat->col, np * sizeof *p->col);
  const ptrdiff_t nn = (ptrdiff_t)n;
#pragma omp parallel for schedule(static)
  for (ptrdiff_t ii = 0; ii < nn; ii++) {
    const size_t i = (size_t)ii;
    double *row = p->val + TB * p->row_start[i];
    memset(row, 0, (p->row_start[i + 1] - p->row_start[i]) * TB * sizeof *row);
    /* (K T) row i: K_ij T_j into the block of j's aggregate */
    for (size_t b = k->row_start[i]; b < k->row_start[i + 1]; b++) {
      const double *kb = k->val + 9 * b;
      const double *tj = cs->t.val + TB * cs->t.row_start[k->col[b]];
      double *y = p->val + TB * cs->k_to_p[b];
      for (int r = 0; r < 3; r++)
        for (int c = 0; c < M; c++)
          y[r * M + c] +=
              kb[3 * r] * tj[c] + kb[3 * r + 1] * tj[M + c] + kb[3 * r + 2] * tj[2 * M + c];
    }
    /* P_i = T_i - scale W_i (K T)_i */
    const double *wi = w->val + 9 * w->row_start[i];
    for (size_t b = p->row_start[i]; b < p->row_start[i + 1]; b++) {
      double *y = p->val + TB * b, wy[TB];
      for (int r = 0; r < 3; r++)
        for (int c = 0; c < M; c++)
          wy[r * M + c] =
              wi[3 * r] * y[c] + wi[3 * r + 1] * y[M + c] + wi[3 * r + 2] * y[2 * M + c];
      for (int e = 0; e < TB; e++) y[e] = -scale * wy[e];
    }
    const double *ti = cs->t.val + TB * cs->t.row_start[i];
    double *own = p->val + TB * cs->t_to_p[i];
    for (int e = 0; e < TB; e++) own[e] += ti[e];
  }
  return VOX_OK;
}
