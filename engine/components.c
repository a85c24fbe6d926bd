/* SPDX-License-Identifier: BSD-3-Clause */
/* Connected components of a label grid (voxfe/components.h) by a parallel
 * union-find over runs: the non-empty voxels of each row (fixed j, k) form
 * runs along x; a run is joined to the runs it touches in the neighbouring
 * rows below it (j - 1 or k - 1), which finds every adjacency, since two
 * runs of one row never touch. All passes are parallel over rows:
 *
 *  1. the runs of each row (counted, then filled at the row's offset);
 *  2. the unions, lock-free: a root is linked to the smaller of the two
 *     roots by compare-and-swap, so that every parent points to a smaller
 *     run and the root of a set ends up its first run in voxel order; finds
 *     halve their paths as they go (a store of a grandparent keeps the
 *     invariant under concurrent updates);
 *  3. the sizes of the sets (summed per thread while consecutive runs share
 *     a root, one atomic add when the root changes: in a porous bone most
 *     runs belong to the one large component);
 *  4. what the caller asked: the largest set kept, or whether a set touches
 *     both end layers.
 *
 * Memory: 16 bytes a run (its x range and parent) and 8 a row, where the
 * bitset flood fill this replaces took 1 bit a voxel; runs are a few voxels
 * long in trabecular bone. Time: linear in the runs and parallel, where a
 * flood fill is serial. */
#include "voxfe/components.h"

#include <stdlib.h>
#include <string.h>

#include "union_find.h"

typedef struct runs {
  int64_t nx, ny, nz, n_rows; /* rows: (j, k), j fastest */
  int64_t *row_start;         /* n_rows + 1 offsets into the runs */
  int32_t *x0, *x1;           /* each run's first and last voxel along x */
  int64_t *parent;
  int64_t n;
} runs;

static void runs_free(runs *r) {
  free(r->row_start), free(r->x0), free(r->x1), free(r->parent);
  memset(r, 0, sizeof *r);
}

static vox_status out_of_memory(vox_context *ctx, runs *r) {
  runs_free(r);
  return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
}

/* Pass 1: the runs of every row. */
static vox_status find_runs(vox_context *ctx, const uint8_t *label, const int64_t n[3],
                            runs *r) {
  r->nx = n[0], r->ny = n[1], r->nz = n[2], r->n_rows = n[1] * n[2];
  const int64_t nx = r->nx, rows = r->n_rows;
  if (!(r->row_start = calloc((size_t)rows + 1, sizeof *r->row_start)))
    return out_of_memory(ctx, r);
#pragma omp parallel for schedule(dynamic, 64)
  for (int64_t row = 0; row < rows; row++) {
    const uint8_t *l = label + row * nx;
    int64_t count = 0;
    for (int64_t i = 0; i < nx; i++) count += l[i] && (i == 0 || !l[i - 1]);
    r->row_start[row + 1] = count;
  }
  for (int64_t row = 0; row < rows; row++) r->row_start[row + 1] += r->row_start[row];
  r->n = r->row_start[rows];
  const size_t m = (size_t)r->n + 1;
  r->x0 = malloc(m * sizeof *r->x0);
  r->x1 = malloc(m * sizeof *r->x1);
  r->parent = malloc(m * sizeof *r->parent);
  if (!r->x0 || !r->x1 || !r->parent) return out_of_memory(ctx, r);
#pragma omp parallel for schedule(dynamic, 64)
  for (int64_t row = 0; row < rows; row++) {
    const uint8_t *l = label + row * nx;
    int64_t at = r->row_start[row];
    for (int64_t i = 0; i < nx; i++) {
      if (!l[i]) continue;
      const int64_t start = i;
      while (i + 1 < nx && l[i + 1]) i++;
      r->x0[at] = (int32_t)start, r->x1[at] = (int32_t)i, r->parent[at] = at;
      at++;
    }
  }
  return VOX_OK;
}

/* Unites the runs of `row` with those of row `other` that touch them:
 * overlapping along x, or (26-connectivity, `reach` 1) one voxel apart. */
static void unite_rows(runs *r, int64_t row, int64_t other, int reach) {
  int64_t q = r->row_start[other];
  const int64_t q_end = r->row_start[other + 1];
  for (int64_t a = r->row_start[row]; a < r->row_start[row + 1]; a++) {
    while (q < q_end && r->x1[q] + reach < r->x0[a]) q++;
    for (int64_t t = q; t < q_end && r->x0[t] <= r->x1[a] + reach; t++)
      vox_uf_unite(r->parent, a, t);
  }
}

/* Passes 1 and 2: runs and their sets. */
static vox_status label_runs(vox_context *ctx, const uint8_t *label, const int64_t n[3],
                             int connectivity, runs *r) {
  vox_status s = find_runs(ctx, label, n, r);
  if (s) return s;
  const int64_t ny = r->ny, rows = r->n_rows;
  const int reach = connectivity == 26;
#pragma omp parallel for schedule(dynamic, 64)
  for (int64_t row = 0; row < rows; row++) {
    if (r->row_start[row] == r->row_start[row + 1]) continue;
    const int64_t j = row % ny, k = row / ny;
    /* face neighbours: (j - 1, k), (j, k - 1); with edges and corners also
     * (j - 1, k - 1) and (j + 1, k - 1): each pair of touching rows once */
    if (j > 0) unite_rows(r, row, row - 1, reach);
    if (k > 0) unite_rows(r, row, row - ny, reach);
    if (reach && k > 0 && j > 0) unite_rows(r, row, row - ny - 1, reach);
    if (reach && k > 0 && j + 1 < ny) unite_rows(r, row, row - ny + 1, reach);
  }
  return VOX_OK;
}

static vox_status check_grid(vox_context *ctx, const int64_t n[3], int connectivity) {
  if (connectivity != 6 && connectivity != 26)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "connectivity %d is not 6 or 26",
                     connectivity);
  if (n[0] < 1 || n[1] < 1 || n[2] < 1)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "grid %lld x %lld x %lld is empty",
                     (long long)n[0], (long long)n[1], (long long)n[2]);
  if (n[0] > INT32_MAX)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "grid of %lld voxels along x",
                     (long long)n[0]);
  return VOX_OK;
}

vox_status vox_keep_largest_labels(vox_context *ctx, uint8_t *label, const int64_t n[3],
                                   int connectivity, vox_component_counts *counts) {
  vox_status s = check_grid(ctx, n, connectivity);
  if (s) return s;
  runs r = {0};
  if ((s = label_runs(ctx, label, n, connectivity, &r))) return s;
  /* Pass 3: the voxels of each set, summed at its root */
  int64_t *size = calloc((size_t)r.n + 1, sizeof *size);
  if (!size) {
    runs_free(&r);
    return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
  }
  const int64_t n_runs = r.n;
#pragma omp parallel
  {
    int64_t root = -1, sum = 0;
#pragma omp for schedule(static)
    for (int64_t a = 0; a < n_runs; a++) {
      const int64_t ra = vox_uf_find(r.parent, a);
      if (ra != root) {
        if (root >= 0) __atomic_fetch_add(&size[root], sum, __ATOMIC_RELAXED);
        root = ra, sum = 0;
      }
      sum += (int64_t)r.x1[a] - r.x0[a] + 1;
    }
    if (root >= 0) __atomic_fetch_add(&size[root], sum, __ATOMIC_RELAXED);
  }
  /* the largest set; ties: the first root, whose first voxel comes first */
  int64_t best = -1, best_size = 0, all = 0;
  size_t components = 0;
  for (int64_t a = 0; a < n_runs; a++) {
    if (r.parent[a] != a) continue;
    components++;
    all += size[a];
    if (size[a] > best_size) best_size = size[a], best = a;
  }
  free(size);
  if (components > 1) {
    const int64_t nx = r.nx, rows = r.n_rows;
#pragma omp parallel for schedule(dynamic, 64)
    for (int64_t row = 0; row < rows; row++)
      for (int64_t a = r.row_start[row]; a < r.row_start[row + 1]; a++)
        if (vox_uf_find(r.parent, a) != best)
          memset(label + row * nx + r.x0[a], 0, (size_t)(r.x1[a] - r.x0[a] + 1));
  }
  runs_free(&r);
  if (counts) *counts = (vox_component_counts){components, (size_t)best_size,
                                               (size_t)(all - best_size)};
  return VOX_OK;
}

/* Whether run a of row `row` lies on the first (end 0) or last (end 1)
 * layer along `axis`. */
static int on_layer(const runs *r, int64_t row, int64_t a, int axis, int end) {
  if (axis == 0) return end ? r->x1[a] == r->nx - 1 : r->x0[a] == 0;
  const int64_t at = axis == 1 ? row % r->ny : row / r->ny, last = axis == 1 ? r->ny : r->nz;
  return at == (end ? last - 1 : 0);
}

vox_status vox_layers_connected(vox_context *ctx, const uint8_t *label, const int64_t n[3],
                                int axis, int connectivity, int *connected) {
  vox_status s = check_grid(ctx, n, connectivity);
  if (s) return s;
  if (axis < 0 || axis > 2) return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "axis %d", axis);
  runs r = {0};
  if ((s = label_runs(ctx, label, n, connectivity, &r))) return s;
  uint8_t *at_first = calloc((size_t)r.n + 1, 1);
  if (!at_first) return out_of_memory(ctx, &r);
  /* the roots of the runs on the first layer, then any on the last */
  int reached = 0;
  for (int end = 0; end < 2; end++)
    for (int64_t row = 0; row < r.n_rows; row++)
      for (int64_t a = r.row_start[row]; a < r.row_start[row + 1]; a++) {
        if (!on_layer(&r, row, a, axis, end)) continue;
        if (!end)
          at_first[vox_uf_find(r.parent, a)] = 1;
        else
          reached |= at_first[vox_uf_find(r.parent, a)];
      }
  free(at_first);
  runs_free(&r);
  *connected = reached;
  return VOX_OK;
}
