/* Connected components of a label grid by breadth-first flood fill over a
 * bitset (voxfe/components.h): one bit per voxel marks what a flood reached,
 * and a ring-buffer queue holds the front. Finding the largest component
 * takes two passes -- one that sizes every component, one that floods the
 * largest again from its first voxel -- so that no per-voxel component id
 * (4 bytes a voxel) is needed. */
#include "voxfe/components.h"

#include <stdlib.h>
#include <string.h>

#define TEST(bits, v) ((bits)[(v) >> 6] >> ((v)&63) & 1)
#define SET(bits, v) ((bits)[(v) >> 6] |= (uint64_t)1 << ((v)&63))

/* A FIFO of voxel indices that grows as needed: a ring buffer whose
 * capacity is a power of two, so that a mask, not a division, wraps it. */
typedef struct queue {
  int64_t *items;
  size_t head, tail, capacity; /* tail - head items */
} queue;

static int push(queue *q, int64_t v) {
  if (q->tail - q->head == q->capacity) {
    const size_t grown = q->capacity ? 2 * q->capacity : 4096;
    int64_t *p = malloc(grown * sizeof *p);
    if (!p) return -1;
    for (size_t i = 0; i < q->capacity; i++) p[i] = q->items[(q->head + i) & (q->capacity - 1)];
    free(q->items);
    q->items = p;
    q->tail = q->capacity;
    q->head = 0;
    q->capacity = grown;
  }
  q->items[q->tail++ & (q->capacity - 1)] = v;
  return 0;
}

static int64_t pop(queue *q) { return q->items[q->head++ & (q->capacity - 1)]; }

typedef struct grid {
  const uint8_t *label;
  int64_t nx, ny, nz;
  int connectivity;
} grid;

/* The index offsets of the neighbours of a voxel away from the grid's
 * faces: 6 or 26 of them. */
static int neighbour_offsets(const grid *g, int64_t *off) {
  int m = 0;
  for (int dk = -1; dk <= 1; dk++)
    for (int dj = -1; dj <= 1; dj++)
      for (int di = -1; di <= 1; di++) {
        const int away = (di != 0) + (dj != 0) + (dk != 0);
        if (away == 0 || (g->connectivity == 6 && away > 1)) continue;
        off[m++] = (dk * g->ny + dj) * g->nx + di;
      }
  return m;
}

/* Floods from the voxels already in the queue (marked in `seen`); returns
 * the number of voxels taken from the queue, -1 when out of memory. Voxels
 * off the faces (nearly all of them) use the offset table without bounds
 * checks: with the queue's mask, 1.1 to 1.7 times faster than checking every
 * neighbour on the clinical benchmark's model (CPU time on a shared machine). */
static int64_t flood(const grid *g, uint64_t *seen, queue *q) {
  const int64_t nx = g->nx, ny = g->ny, nz = g->nz, plane = nx * ny;
  const int faces_only = g->connectivity == 6;
  int64_t off[26];
  const int n_off = neighbour_offsets(g, off);
  int64_t size = 0;
  while (q->tail != q->head) {
    const int64_t v = pop(q), i = v % nx, j = v / nx % ny, k = v / plane;
    size++;
    if (i > 0 && i + 1 < nx && j > 0 && j + 1 < ny && k > 0 && k + 1 < nz) {
      for (int t = 0; t < n_off; t++) {
        const int64_t w = v + off[t];
        if (!g->label[w] || TEST(seen, w)) continue;
        SET(seen, w);
        if (push(q, w)) return -1;
      }
      continue;
    }
    for (int dk = -1; dk <= 1; dk++) {
      if (k + dk < 0 || k + dk >= nz) continue;
      for (int dj = -1; dj <= 1; dj++) {
        if (j + dj < 0 || j + dj >= ny) continue;
        for (int di = -1; di <= 1; di++) {
          const int away = (di != 0) + (dj != 0) + (dk != 0);
          if (away == 0 || (faces_only && away > 1) || i + di < 0 || i + di >= nx) continue;
          const int64_t w = v + dk * plane + dj * nx + di;
          if (!g->label[w] || TEST(seen, w)) continue;
          SET(seen, w);
          if (push(q, w)) return -1;
        }
      }
    }
  }
  return size;
}

static vox_status check_grid(vox_context *ctx, const int64_t n[3], int connectivity) {
  if (connectivity != 6 && connectivity != 26)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "connectivity %d is not 6 or 26",
                     connectivity);
  if (n[0] < 1 || n[1] < 1 || n[2] < 1)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "grid %lld x %lld x %lld is empty",
                     (long long)n[0], (long long)n[1], (long long)n[2]);
  return VOX_OK;
}

static vox_status out_of_memory(vox_context *ctx, uint64_t *seen, queue *q) {
  free(seen);
  free(q->items);
  return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
}

vox_status vox_keep_largest_labels(vox_context *ctx, uint8_t *label, const int64_t n[3],
                                   int connectivity, vox_component_counts *counts) {
  vox_status s = check_grid(ctx, n, connectivity);
  if (s) return s;
  const grid g = {label, n[0], n[1], n[2], connectivity};
  const int64_t nv = n[0] * n[1] * n[2];
  const size_t words = (size_t)(nv + 63) / 64;
  uint64_t *seen = calloc(words, sizeof *seen);
  queue q = {0};
  if (!seen) return out_of_memory(ctx, seen, &q);
  int64_t best = 0, best_seed = -1, all = 0;
  size_t components = 0;
  for (int64_t v = 0; v < nv; v++) {
    if (!label[v] || TEST(seen, v)) continue;
    SET(seen, v);
    if (push(&q, v)) return out_of_memory(ctx, seen, &q);
    const int64_t size = flood(&g, seen, &q);
    if (size < 0) return out_of_memory(ctx, seen, &q);
    components++;
    all += size;
    if (size > best) best = size, best_seed = v;
  }
  if (components > 1) {
    memset(seen, 0, words * sizeof *seen);
    SET(seen, best_seed);
    if (push(&q, best_seed) || flood(&g, seen, &q) < 0) return out_of_memory(ctx, seen, &q);
    for (int64_t v = 0; v < nv; v++)
      if (label[v] && !TEST(seen, v)) label[v] = 0;
  }
  free(seen);
  free(q.items);
  if (counts) *counts = (vox_component_counts){components, (size_t)best, (size_t)(all - best)};
  return VOX_OK;
}

/* Voxel (p, q) of layer `layer` across `axis`; p and q run along the other
 * two axes in increasing order. */
static int64_t layer_voxel(const int64_t n[3], int axis, int64_t layer, int64_t p, int64_t q) {
  int64_t ijk[3];
  ijk[axis] = layer, ijk[axis == 0 ? 1 : 0] = p, ijk[axis == 2 ? 1 : 2] = q;
  return (ijk[2] * n[1] + ijk[1]) * n[0] + ijk[0];
}

vox_status vox_layers_connected(vox_context *ctx, const uint8_t *label, const int64_t n[3],
                                int axis, int connectivity, int *connected) {
  vox_status s = check_grid(ctx, n, connectivity);
  if (s) return s;
  if (axis < 0 || axis > 2) return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "axis %d", axis);
  const grid g = {label, n[0], n[1], n[2], connectivity};
  const int a1 = axis == 0 ? 1 : 0, a2 = axis == 2 ? 1 : 2;
  const size_t words = (size_t)(n[0] * n[1] * n[2] + 63) / 64;
  uint64_t *seen = calloc(words, sizeof *seen);
  queue q = {0};
  if (!seen) return out_of_memory(ctx, seen, &q);
  for (int64_t p = 0; p < n[a1]; p++)
    for (int64_t r = 0; r < n[a2]; r++) {
      const int64_t v = layer_voxel(n, axis, 0, p, r);
      if (!label[v]) continue;
      SET(seen, v);
      if (push(&q, v)) return out_of_memory(ctx, seen, &q);
    }
  if (flood(&g, seen, &q) < 0) return out_of_memory(ctx, seen, &q);
  int reached = 0;
  for (int64_t p = 0; p < n[a1] && !reached; p++)
    for (int64_t r = 0; r < n[a2] && !reached; r++)
      reached = TEST(seen, layer_voxel(n, axis, n[axis] - 1, p, r)) != 0;
  free(seen);
  free(q.items);
  *connected = reached;
  return VOX_OK;
}
