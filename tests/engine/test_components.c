/* SPDX-License-Identifier: BSD-3-Clause */
/* The connected components of a label grid (voxfe/components.h) against a
 * union-find over the same neighbour pairs, written here: random grids at
 * several fill fractions, both connectivities; the plate-to-plate check
 * against the union-find too; a grid one voxel thick; bad arguments. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "voxfe/components.h"

static int64_t find(int64_t *parent, int64_t v) {
  while (parent[v] != v) v = parent[v] = parent[parent[v]];
  return v;
}

static void join(int64_t *parent, int64_t a, int64_t b) {
  a = find(parent, a), b = find(parent, b);
  if (a != b) parent[a < b ? b : a] = a < b ? a : b; /* the root: the first voxel */
}

/* Reference: union-find over every pair of neighbours (connectivity 6 or
 * 26), then the largest set (ties: the one whose first voxel comes first). */
static void reference(const uint8_t *label, const int64_t n[3], int connectivity, uint8_t *keep,
                      vox_component_counts *counts, int64_t *parent) {
  const int64_t nv = n[0] * n[1] * n[2];
  for (int64_t v = 0; v < nv; v++) parent[v] = v;
  for (int64_t k = 0; k < n[2]; k++)
    for (int64_t j = 0; j < n[1]; j++)
      for (int64_t i = 0; i < n[0]; i++) {
        const int64_t v = (k * n[1] + j) * n[0] + i;
        if (!label[v]) continue;
        for (int dk = -1; dk <= 1; dk++)
          for (int dj = -1; dj <= 1; dj++)
            for (int di = -1; di <= 1; di++) {
              const int off = (di != 0) + (dj != 0) + (dk != 0);
              if (off == 0 || (connectivity == 6 && off > 1)) continue;
              const int64_t a = i + di, b = j + dj, c = k + dk;
              if (a < 0 || b < 0 || c < 0 || a >= n[0] || b >= n[1] || c >= n[2]) continue;
              const int64_t w = (c * n[1] + b) * n[0] + a;
              if (label[w]) join(parent, v, w);
            }
      }
  int64_t *size = calloc((size_t)nv, sizeof *size);
  CHECK(size != NULL);
  size_t components = 0, all = 0;
  for (int64_t v = 0; v < nv; v++)
    if (label[v]) {
      const int64_t r = find(parent, v);
      components += r == v;
      size[r]++, all++;
    }
  int64_t best = -1;
  for (int64_t v = 0; v < nv; v++)
    if (label[v] && find(parent, v) == v && (best < 0 || size[v] > size[best])) best = v;
  for (int64_t v = 0; v < nv; v++) keep[v] = label[v] && find(parent, v) == best ? label[v] : 0;
  counts->components = components;
  counts->kept = best >= 0 ? (size_t)size[best] : 0;
  counts->removed = all - counts->kept;
  free(size);
}

static void check_random(vox_context *ctx, const int64_t n[3], double fill, unsigned seed) {
  const int64_t nv = n[0] * n[1] * n[2];
  uint8_t *label = malloc((size_t)nv), *got = malloc((size_t)nv), *want = malloc((size_t)nv);
  int64_t *parent = malloc((size_t)nv * sizeof *parent);
  CHECK(label && got && want && parent);
  srand(seed);
  for (int64_t v = 0; v < nv; v++)
    label[v] = (double)rand() / RAND_MAX < fill ? (uint8_t)(1 + rand() % 3) : 0;
  for (int connectivity = 6; connectivity <= 26; connectivity += 20) {
    vox_component_counts c, r;
    memcpy(got, label, (size_t)nv);
    CHECK_OK(ctx, vox_keep_largest_labels(ctx, got, n, connectivity, &c));
    reference(label, n, connectivity, want, &r, parent);
    CHECK(memcmp(got, want, (size_t)nv) == 0); /* the labels kept as they were */
    CHECK(c.components == r.components && c.kept == r.kept && c.removed == r.removed);
    for (int axis = 0; axis < 3; axis++) {
      /* reference: a set with a first-layer voxel has a last-layer voxel */
      int want_connected = 0, connected = -1;
      uint8_t *root_at_first = calloc((size_t)nv, 1);
      CHECK(root_at_first != NULL);
      for (int64_t v = 0; v < nv; v++) {
        const int64_t ijk[3] = {v % n[0], v / n[0] % n[1], v / (n[0] * n[1])};
        if (label[v] && ijk[axis] == 0) root_at_first[find(parent, v)] = 1;
      }
      for (int64_t v = 0; v < nv; v++) {
        const int64_t ijk[3] = {v % n[0], v / n[0] % n[1], v / (n[0] * n[1])};
        if (label[v] && ijk[axis] == n[axis] - 1 && root_at_first[find(parent, v)])
          want_connected = 1;
      }
      free(root_at_first);
      CHECK_OK(ctx, vox_layers_connected(ctx, label, n, axis, connectivity, &connected));
      CHECK(connected == want_connected);
    }
  }
  free(label), free(got), free(want), free(parent);
}

int main(void) {
  vox_context *ctx = NULL;
  CHECK(vox_context_create(&ctx) == VOX_OK);
  /* below, near and above the percolation thresholds of both connectivities
   * (site percolation: about 0.31 for 6, 0.10 for 26) */
  const double fills[] = {0.08, 0.15, 0.3, 0.45};
  const int64_t sizes[][3] = {{17, 13, 11}, {40, 3, 25}, {1, 30, 30}, {64, 64, 1}};
  unsigned seed = 1;
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
    for (size_t f = 0; f < sizeof fills / sizeof fills[0]; f++)
      check_random(ctx, sizes[s], fills[f], seed++);

  /* a long winding path: a front far larger than one queue block */
  const int64_t big[3] = {120, 120, 40};
  check_random(ctx, big, 0.35, 99);

  /* an empty grid: no component, nothing removed */
  const int64_t n[3] = {4, 4, 4};
  uint8_t empty[64] = {0};
  vox_component_counts c = {9, 9, 9};
  CHECK_OK(ctx, vox_keep_largest_labels(ctx, empty, n, 26, &c));
  CHECK(c.components == 0 && c.kept == 0 && c.removed == 0);
  int connected = -1;
  CHECK_OK(ctx, vox_layers_connected(ctx, empty, n, 2, 6, &connected));
  CHECK(connected == 0);

  CHECK(vox_keep_largest_labels(ctx, empty, n, 18, NULL) == VOX_ERR_INVALID_ARGUMENT);
  CHECK(strstr(vox_context_message(ctx), "connectivity 18") != NULL);
  CHECK(vox_layers_connected(ctx, empty, n, 3, 6, &connected) == VOX_ERR_INVALID_ARGUMENT);
  const int64_t none[3] = {0, 4, 4};
  CHECK(vox_keep_largest_labels(ctx, empty, none, 6, NULL) == VOX_ERR_INVALID_ARGUMENT);
  vox_context_destroy(ctx);
  CHECK_DONE();
}
