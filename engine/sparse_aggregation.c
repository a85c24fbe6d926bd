/* SPDX-License-Identifier: BSD-3-Clause */
/* Standard aggregation and the tentative prolongator of smoothed
 * aggregation (sparse_aggregation.h). */
#include "sparse_aggregation.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A column left with less than this share of its norm after the columns
 * before it are taken out depends on them (PyAMG's fit_candidates uses the
 * same relative threshold). */
static const double DEPENDENT = 1e-10;

vox_status vox_sa_aggregate(vox_context *ctx, size_t n, const size_t *row_start,
                            const int32_t *adj, const uint8_t *skip, int32_t *agg,
                            size_t *n_agg) {
  /* state: -1 unaggregated, else the aggregate; `first` marks pass 1's */
  for (size_t i = 0; i < n; i++) agg[i] = -1;
  int32_t next = 0;
  for (size_t i = 0; i < n; i++) { /* pass 1 */
    if (agg[i] >= 0 || (skip && skip[i])) continue;
    int free_neighbourhood = 1;
    for (size_t k = row_start[i]; k < row_start[i + 1] && free_neighbourhood; k++) {
      const int32_t j = adj[k];
      if ((size_t)j != i && !(skip && skip[j]) && agg[j] >= 0) free_neighbourhood = 0;
    }
    if (!free_neighbourhood) continue;
    agg[i] = next;
    for (size_t k = row_start[i]; k < row_start[i + 1]; k++)
      if (!(skip && skip[adj[k]])) agg[adj[k]] = next;
    next++;
  }
  const int32_t first = next;
  for (size_t i = 0; i < n; i++) { /* pass 2: to a neighbouring pass-1 aggregate */
    if (agg[i] >= 0 || (skip && skip[i])) continue;
    for (size_t k = row_start[i]; k < row_start[i + 1]; k++) {
      const int32_t j = adj[k];
      if (!(skip && skip[j]) && agg[j] >= 0 && agg[j] < first) {
        agg[i] = agg[j];
        break;
      }
    }
  }
  for (size_t i = 0; i < n; i++) { /* pass 3: what is left, with its free neighbours */
    if (agg[i] >= 0 || (skip && skip[i])) continue;
    agg[i] = next;
    for (size_t k = row_start[i]; k < row_start[i + 1]; k++)
      if (!(skip && skip[adj[k]]) && agg[adj[k]] < 0) agg[adj[k]] = next;
    next++;
  }
  (void)ctx;
  *n_agg = (size_t)next;
  return VOX_OK;
}

vox_status vox_sa_tentative(vox_context *ctx, size_t n, int bn, const int32_t *agg, size_t n_agg,
                            const double *b, const uint8_t *dead, vox_bsr *t, double *bc,
                            uint8_t *dead_c) {
  enum { M = VOX_SA_MODES };
  memset(t, 0, sizeof *t);
  t->n_rows = n, t->n_cols = n_agg, t->br = bn, t->bc = M;
  t->row_start = calloc(n + 1, sizeof *t->row_start);
  /* the nodes of each aggregate, in node order (a counting sort) */
  size_t *start = calloc(n_agg + 1, sizeof *start), *member = malloc((n ? n : 1) * sizeof *member);
  if (!t->row_start || !start || !member) {
    free(start), free(member), vox_bsr_free(t);
    return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory for the tentative prolongator");
  }
  for (size_t i = 0; i < n; i++)
    if (agg[i] >= 0) start[agg[i] + 1]++, t->row_start[i + 1] = 1;
  for (size_t a = 0; a < n_agg; a++) start[a + 1] += start[a];
  for (size_t i = 0; i < n; i++) t->row_start[i + 1] += t->row_start[i];
  size_t largest = 0;
  {
    size_t *next = malloc((n_agg ? n_agg : 1) * sizeof *next);
    if (!next) {
      free(start), free(member), vox_bsr_free(t);
      return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory for the tentative prolongator");
    }
    memcpy(next, start, n_agg * sizeof *next);
    for (size_t i = 0; i < n; i++)
      if (agg[i] >= 0) member[next[agg[i]]++] = i;
    free(next);
  }
  for (size_t a = 0; a < n_agg; a++)
    if (start[a + 1] - start[a] > largest) largest = start[a + 1] - start[a];
  const size_t nb = t->row_start[n];
  t->col = malloc((nb ? nb : 1) * sizeof *t->col);
  t->val = calloc((nb ? nb : 1) * (size_t)(bn * M), sizeof *t->val);
  if (!t->col || !t->val) {
    free(start), free(member), vox_bsr_free(t);
    return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory for the tentative prolongator");
  }
  const ptrdiff_t na = (ptrdiff_t)n_agg;
  int failed = 0;
#pragma omp parallel
  {
    /* the aggregate's rows, column-major: q[c * rows + r] */
    double *q = malloc((largest * (size_t)bn * M + 1) * sizeof *q);
    if (!q) {
#pragma omp atomic write
      failed = 1;
    }
#pragma omp for schedule(dynamic, 64)
    for (ptrdiff_t a = 0; a < na; a++) {
      if (!q) continue;
      const size_t s0 = start[a], nodes = start[a + 1] - s0, rows = nodes * (size_t)bn;
      for (size_t m = 0; m < nodes; m++) {
        const size_t i = member[s0 + m];
        for (int r = 0; r < bn; r++)
          for (int c = 0; c < M; c++)
            q[(size_t)c * rows + m * (size_t)bn + (size_t)r] =
                dead && (dead[i] >> r & 1) ? 0 : b[(i * (size_t)bn + (size_t)r) * M + (size_t)c];
      }
      double *rf = bc + (size_t)a * M * M;
      memset(rf, 0, M * M * sizeof *rf);
      uint8_t dc = 0;
      for (int c = 0; c < M; c++) {
        double *v = q + (size_t)c * rows;
        double norm0 = 0;
        for (size_t r = 0; r < rows; r++) norm0 += v[r] * v[r];
        norm0 = sqrt(norm0);
        for (int pass = 0; pass < 2; pass++)
          for (int k = 0; k < c; k++) {
            const double *u = q + (size_t)k * rows;
            double d = 0;
            for (size_t r = 0; r < rows; r++) d += u[r] * v[r];
            for (size_t r = 0; r < rows; r++) v[r] -= d * u[r];
            rf[k * M + c] += d;
          }
        double norm = 0;
        for (size_t r = 0; r < rows; r++) norm += v[r] * v[r];
        norm = sqrt(norm);
        if (!(norm > DEPENDENT * norm0) || norm0 == 0) {
          memset(v, 0, rows * sizeof *v);
          dc |= (uint8_t)(1u << c);
          continue;
        }
        rf[c * M + c] = norm;
        for (size_t r = 0; r < rows; r++) v[r] /= norm;
      }
      /* a dropped column's row of R: zero (its q is zero) */
      for (int c = 0; c < M; c++)
        if (dc >> c & 1)
          for (int j = 0; j < M; j++) rf[c * M + j] = 0;
      dead_c[a] = dc;
      for (size_t m = 0; m < nodes; m++) {
        const size_t i = member[s0 + m], k = t->row_start[i];
        t->col[k] = (int32_t)a;
        for (int r = 0; r < bn; r++)
          for (int c = 0; c < M; c++)
            t->val[(k * (size_t)bn + (size_t)r) * M + (size_t)c] =
                q[(size_t)c * rows + m * (size_t)bn + (size_t)r];
      }
    }
    free(q);
  }
  free(start), free(member);
  if (failed) {
    vox_bsr_free(t);
    return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory for the tentative prolongator");
  }
  return VOX_OK;
}
