/* SPDX-License-Identifier: BSD-3-Clause */
/* Fills the solid a triangle mesh bounds into a voxel grid (the voxels whose
 * centres are inside), on the CPU with OpenMP or on the GPU.
 *
 * One pass per ray axis A does all crossings of all columns at once: every
 * triangle marks, in each column of voxels along A that it crosses, the first
 * voxel whose centre lies at or beyond the crossing (an XOR of 1); a running XOR
 * along each column then gives, for every voxel, the parity of the crossings
 * below its centre. The order of the triangles cannot matter (XOR commutes)
 * and a crossing is found once, whatever the column length: the work is the
 * triangles, the columns they cover and one sweep of the grid.
 *
 * Threads split the columns by their outer index (the cross axis with the
 * larger memory stride) into bins, each triangle listed in the bins its
 * columns fall in, so that no two threads mark the same bytes. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <omp.h>

#include "mesh_prepared.h"
#include "voxfe/device/raycast.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static vox_status out_of_memory(vox_context *ctx) {
  return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory filling the mesh");
}

/* The range of columns, along cross axis X, that triangle t may cross. */
static void triangle_span(const vox_prepared_mesh *m, int64_t t, int X, int64_t *first,
                          int64_t *last) {
  const uint32_t *v = &m->triangle[3 * t];
  int64_t lo = m->fixed[3 * (int64_t)v[0] + X], hi = lo;
  for (int c = 1; c < 3; c++) {
    int64_t x = m->fixed[3 * (int64_t)v[c] + X];
    lo = x < lo ? x : lo;
    hi = x > hi ? x : hi;
  }
  raycast_span(lo, hi, m->bits, m->n[X], first, last);
}

/* Triangles by bin of the outer cross axis D: bins of `width` columns. */
typedef struct bins {
  int64_t count, width;
  int64_t *start; /* count + 1 offsets into list */
  uint32_t *list;
} bins;

static vox_status bin_triangles(vox_context *ctx, const vox_prepared_mesh *m, int D,
                                int threads, bins *b) {
  int64_t n = m->n[D];
  b->width = n / (8 * threads) > 1 ? n / (8 * threads) : 1;
  b->count = (n + b->width - 1) / b->width;
  b->start = calloc((size_t)b->count + 1, sizeof *b->start);
  if (!b->start) return out_of_memory(ctx);
  for (int64_t t = 0; t < m->n_triangles; t++) {
    int64_t first, last;
    triangle_span(m, t, D, &first, &last);
    for (int64_t k = first / b->width; first <= last && k <= last / b->width; k++)
      b->start[k + 1]++;
  }
  for (int64_t k = 0; k < b->count; k++) b->start[k + 1] += b->start[k];
  b->list = malloc((size_t)(b->start[b->count] ? b->start[b->count] : 1) * sizeof *b->list);
  int64_t *fill = malloc((size_t)b->count * sizeof *fill);
  if (!b->list || !fill) {
    free(fill);
    return out_of_memory(ctx);
  }
  memcpy(fill, b->start, (size_t)b->count * sizeof *fill);
  for (int64_t t = 0; t < m->n_triangles; t++) {
    int64_t first, last;
    triangle_span(m, t, D, &first, &last);
    for (int64_t k = first / b->width; first <= last && k <= last / b->width; k++)
      b->list[fill[k]++] = (uint32_t)t;
  }
  free(fill);
  return VOX_OK;
}

static void bins_free(bins *b) {
  free(b->start);
  free(b->list);
}

/* Marks the crossings of the columns along A: cells[first voxel past the
 * crossing] ^= 1, and row_total[column] ^= 1 for every crossing of the
 * column's whole line (NULL when not wanted). */
static vox_status mark_crossings(vox_context *ctx, const vox_prepared_mesh *m, int A,
                                 uint8_t *cells, uint8_t *row_total) {
  const int B = (A + 1) % 3, C = (A + 2) % 3;
  const int64_t stride[3] = {1, m->n[0], m->n[0] * m->n[1]};
  const int D = stride[B] > stride[C] ? B : C;
  const int threads = omp_get_max_threads();
  bins b = {0};
  vox_status status = bin_triangles(ctx, m, D, threads, &b);
  if (status) {
    bins_free(&b);
    return status;
  }
  const int64_t half = (int64_t)1 << (m->bits - 1);
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t bin = 0; bin < b.count; bin++) {
    const int64_t d_lo = bin * b.width, d_hi = d_lo + b.width - 1;
    for (int64_t i = b.start[bin]; i < b.start[bin + 1]; i++) {
      const int64_t t = b.list[i];
      const uint32_t *v = &m->triangle[3 * t];
      const int64_t *p0 = &m->fixed[3 * (int64_t)v[0]], *p1 = &m->fixed[3 * (int64_t)v[1]],
                    *p2 = &m->fixed[3 * (int64_t)v[2]];
      int64_t lo[3], hi[3];
      triangle_span(m, t, B, &lo[B], &hi[B]);
      triangle_span(m, t, C, &lo[C], &hi[C]);
      if (lo[D] < d_lo) lo[D] = d_lo;
      if (hi[D] > d_hi) hi[D] = d_hi;
      for (int64_t jc = lo[C]; jc <= hi[C]; jc++) {
        const int64_t pc = 2 * jc * half + half;
        for (int64_t jb = lo[B]; jb <= hi[B]; jb++) {
          const int64_t pb = 2 * jb * half + half;
          int64_t cut;
          if (!raycast_cross(p0, p1, p2, A, B, C, pb, pc, m->bits, m->n[A], &cut)) continue;
          if (row_total) row_total[jc * m->n[B] + jb] ^= 1;
          if (cut < m->n[A]) cells[cut * stride[A] + jb * stride[B] + jc * stride[C]] ^= 1;
        }
      }
    }
  }
  bins_free(&b);
  return VOX_OK;
}

/* The running XOR along A: every voxel gets the parity of the crossings
 * below its centre. */
static void sweep(const vox_prepared_mesh *m, int A, uint8_t *cells) {
  const int64_t nx = m->n[0], ny = m->n[1], nz = m->n[2];
  if (A == 0) {
#pragma omp parallel for schedule(static)
    for (int64_t row = 0; row < ny * nz; row++) {
      uint8_t *c = cells + row * nx, run = 0;
      for (int64_t i = 0; i < nx; i++) c[i] = run ^= c[i];
    }
    return;
  }
  /* y or z: whole rows of x at once, each a row of the previous layer XOR'd
   * in (vectorised); the threads split the other axis. */
  const int64_t layer = A == 1 ? nx : nx * ny, outer_stride = A == 1 ? nx * ny : nx;
  const int64_t n_outer = A == 1 ? nz : ny, n_along = A == 1 ? ny : nz;
#pragma omp parallel for schedule(static)
  for (int64_t o = 0; o < n_outer; o++)
    for (int64_t s = 1; s < n_along; s++) {
      uint8_t *c = cells + o * outer_stride + s * layer;
      const uint8_t *prev = c - layer;
      for (int64_t i = 0; i < nx; i++) c[i] ^= prev[i];
    }
}

vox_status mesh_fill_cpu(vox_context *ctx, const vox_prepared_mesh *m, vox_fill_rule rule,
                         uint8_t *inside) {
  const int64_t nx = m->n[0], ny = m->n[1], nz = m->n[2];
  const size_t ne = (size_t)(nx * ny * nz);
  vox_status status;
  if (rule == VOX_FILL_PARITY) {
    memset(inside, 0, ne);
    const int A = raycast_parity_axis(m->n);
    if ((status = mark_crossings(ctx, m, A, inside, NULL))) return status;
    sweep(m, A, inside);
    return VOX_OK;
  }
  /* VOTE: per axis, the parity below (the ray towards -A) and above (towards
   * +A) each voxel; above = total XOR below. A column whose line crosses
   * the surface an odd number of times went through a hole: its two votes
   * differ, one each way. */
  uint8_t *cells = malloc(ne);
  if (!cells) return out_of_memory(ctx);
  memset(inside, 0, ne);
  for (int A = 0; A < 3; A++) {
    const int B = (A + 1) % 3;
    const int64_t rows = m->n[B] * m->n[(A + 2) % 3];
    uint8_t *row_total = calloc((size_t)rows, 1);
    if (!row_total) {
      free(cells);
      return out_of_memory(ctx);
    }
    memset(cells, 0, ne);
    if ((status = mark_crossings(ctx, m, A, cells, row_total))) {
      free(row_total);
      free(cells);
      return status;
    }
    sweep(m, A, cells);
#pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < nz; k++)
      for (int64_t j = 0; j < ny; j++) {
        uint8_t *vote = inside + (k * ny + j) * nx;
        const uint8_t *below = cells + (k * ny + j) * nx;
        for (int64_t i = 0; i < nx; i++) {
          const int64_t row = A == 0 ? j + k * ny : A == 1 ? k + i * nz : i + j * nx;
          vote[i] += row_total[row] ? 1 : 2 * below[i];
        }
      }
    free(row_total);
  }
  free(cells);
#pragma omp parallel for schedule(static)
  for (int64_t e = 0; e < (int64_t)ne; e++) inside[e] = inside[e] >= 4;
  return VOX_OK;
}

/* ---- the public entry ----------------------------------------------------- */

const char *vox_fill_rule_name(vox_fill_rule rule) {
  switch (rule) {
  case VOX_FILL_PARITY: return "parity";
  case VOX_FILL_VOTE: return "vote";
  default: return "auto";
  }
}

int vox_fill_rule_parse(const char *text, vox_fill_rule *rule) {
  static const vox_fill_rule rules[] = {VOX_FILL_AUTO, VOX_FILL_PARITY, VOX_FILL_VOTE};
  for (int i = 0; i < 3; i++)
    if (!strcmp(text, vox_fill_rule_name(rules[i]))) {
      *rule = rules[i];
      return 0;
    }
  return -1;
}

/* Grids from this size on go to the GPU under VOX_DEVICE_AUTO: below it the
 * transfers and the start of the device cost more than the CPU's fill. */
#define GPU_MIN_ELEMENTS ((int64_t)1 << 21)

/* What the preparation found; the rule AUTO decided. */
static void record_prepared(const vox_prepared_mesh *m, double seconds, vox_fill_rule *rule,
                            vox_mesh_fill_info *info) {
  info->seconds_prepare = seconds;
  info->triangles = m->n_triangles;
  info->degenerate = m->degenerate;
  info->duplicates = m->duplicates;
  info->open_edges = m->open_edges;
  info->fixed_point_bits = m->bits;
  if (*rule == VOX_FILL_AUTO) *rule = m->open_edges ? VOX_FILL_VOTE : VOX_FILL_PARITY;
  info->rule = *rule;
}

/* The fill from a mesh prepared on the GPU (since t0); the voxels come back
 * packed to bits and are unpacked here. */
static vox_status fill_gpu(vox_context *ctx, const vox_prepared_mesh *m, vox_fill_rule rule,
                           int64_t ne, uint8_t *inside, double t0, vox_mesh_fill_info *info) {
  record_prepared(m, now() - t0, &rule, info);
  t0 = now();
  const int64_t words = (ne + 31) / 32;
  uint32_t *bits = malloc((size_t)words * sizeof *bits);
  if (!bits) return out_of_memory(ctx);
  double kernel_seconds;
  vox_status status =
      vox_gpu_mesh_fill(ctx, m, rule == VOX_FILL_VOTE, bits, &info->inside, &kernel_seconds);
  if (status == VOX_OK) {
    info->seconds_device = kernel_seconds;
#pragma omp parallel for schedule(static)
    for (int64_t w = 0; w < words; w++) {
      uint8_t *out = inside + 32 * w;
      const int n = ne - 32 * w < 32 ? (int)(ne - 32 * w) : 32;
      for (int b = 0; b < n; b++) out[b] = (uint8_t)(bits[w] >> b & 1u);
    }
    info->seconds_fill = now() - t0;
  }
  free(bits);
  return status;
}

vox_status vox_mesh_fill(vox_context *ctx, const vox_mesh *mesh, const vox_grid *grid,
                         vox_fill_rule rule, vox_device device, uint8_t *inside,
                         vox_mesh_fill_info *info) {
  vox_mesh_fill_info local;
  if (!info) info = &local;
  memset(info, 0, sizeof *info);
  if (!mesh || !grid || !inside)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "fill needs a mesh, a grid and an output");
  if (rule != VOX_FILL_AUTO && rule != VOX_FILL_PARITY && rule != VOX_FILL_VOTE)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "unknown fill rule %d", (int)rule);
  const int64_t ne = vox_grid_elements(grid);
  double t0 = now();
  vox_prepared_mesh m;
  vox_status status;
  info->device = VOX_DEVICE_CPU;
  /* On the GPU the mesh is prepared there too and never comes back; AUTO on
   * a machine without a usable device (or a build without CUDA) goes on on
   * the CPU. */
  if (device == VOX_DEVICE_CUDA ||
      (device == VOX_DEVICE_AUTO && ne >= GPU_MIN_ELEMENTS && vox_gpu_devices() > 0)) {
    status = mesh_prepare_gpu(ctx, mesh, grid, &m);
    if (status == VOX_OK) {
      info->device = VOX_DEVICE_CUDA;
      status = fill_gpu(ctx, &m, rule, ne, inside, t0, info);
      vox_gpu_mesh_free(&m);
    }
    if (status != VOX_ERR_DEVICE || device != VOX_DEVICE_AUTO) return status;
    info->device = VOX_DEVICE_CPU;
    t0 = now();
  }
  if ((status = mesh_prepare(ctx, mesh, grid, &m))) return status;
  record_prepared(&m, now() - t0, &rule, info);
  t0 = now();
  if ((status = mesh_fill_cpu(ctx, &m, rule, inside))) goto done;
  int64_t count = 0;
#pragma omp parallel for reduction(+ : count) schedule(static)
  for (int64_t e = 0; e < ne; e++) count += inside[e];
  info->inside = count;
  info->seconds_fill = now() - t0;
done:
  mesh_prepared_free(&m);
  return status;
}
