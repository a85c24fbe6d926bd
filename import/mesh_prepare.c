/* SPDX-License-Identifier: BSD-3-Clause */
/* Makes a mesh ready for the fill on one grid: vertices to the grid's
 * fixed-point lattice, welded there (the same point is the same vertex, so
 * the edges of neighbouring triangles meet exactly), degenerate triangles
 * and repeats dropped, the edges counted for the closedness check, the
 * corners of each triangle put in canonical order. All of it is independent
 * of the order and orientation of the triangles. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mesh_prepared.h"
#include "voxfe/device/raycast.h"

static vox_status out_of_memory(vox_context *ctx) {
  return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory preparing the mesh");
}

static uint64_t mix(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ULL;
  h ^= h >> 33;
  return h;
}

static uint64_t table_size(int64_t n) {
  uint64_t size = 1024;
  while (size < 2 * (uint64_t)n) size *= 2;
  return size;
}

#define EMPTY UINT32_MAX

/* Welds the vertices the triangles use by their fixed-point coordinates:
 * remap[v] is the new index of input vertex v. */
static vox_status weld(vox_context *ctx, const int64_t *fixed_in, int64_t nv, int64_t *fixed_out,
                       int64_t *n_out, uint32_t *remap) {
  uint64_t size = table_size(nv), mask = size - 1;
  uint32_t *slot = malloc(size * sizeof *slot);
  if (!slot) return out_of_memory(ctx);
  memset(slot, 0xff, size * sizeof *slot);
  int64_t n = 0;
  for (int64_t v = 0; v < nv; v++) {
    const int64_t *p = &fixed_in[3 * v];
    uint64_t h = mix((uint64_t)p[0] * 0x9e3779b97f4a7c15ULL ^ mix((uint64_t)p[1]) ^
                     mix((uint64_t)p[2] + 0x632be59bd9b4e019ULL));
    for (;; h++) {
      uint32_t s = slot[h & mask];
      if (s == EMPTY) {
        slot[h & mask] = (uint32_t)n;
        memcpy(&fixed_out[3 * n], p, 3 * sizeof *p);
        remap[v] = (uint32_t)n++;
        break;
      }
      if (!memcmp(&fixed_out[3 * (int64_t)s], p, 3 * sizeof *p)) {
        remap[v] = s;
        break;
      }
    }
  }
  free(slot);
  *n_out = n;
  return VOX_OK;
}

/* Buckets items by a vertex (counting sort): start[v]..start[v + 1] index
 * `item` for vertex v, in the order the items come. */
typedef struct buckets {
  int64_t *start; /* n_vertices + 1 */
  uint32_t *item;
} buckets;

static void buckets_free(buckets *b) {
  free(b->start);
  free(b->item);
}

/* Sorts three indices; returns them in k. */
static void sort3(uint32_t k[3]) {
  if (k[0] > k[1]) { uint32_t t = k[0]; k[0] = k[1]; k[1] = t; }
  if (k[1] > k[2]) { uint32_t t = k[1]; k[1] = k[2]; k[2] = t; }
  if (k[0] > k[1]) { uint32_t t = k[0]; k[0] = k[1]; k[1] = t; }
}

/* Drops triangles with a repeated corner (degenerate after welding) and
 * repeats: the copies of one triangle, in either orientation, count once (a
 * face exported twice would otherwise cancel itself out of the parity); the
 * first copy in the input stays. Copies share their smallest vertex, so each
 * vertex compares the few triangles bucketed under it, in parallel. The kept
 * triangles, corners in canonical order, go to `m`. */
static vox_status clean_triangles(vox_context *ctx, vox_prepared_mesh *m, const uint32_t *in,
                                  int64_t nt) {
  const int64_t nv = m->n_vertices;
  buckets b = {calloc((size_t)nv + 1, sizeof *b.start), malloc((size_t)nt * sizeof *b.item)};
  uint8_t *keep = calloc((size_t)nt, 1);
  if (!b.start || !b.item || !keep) {
    buckets_free(&b);
    free(keep);
    return out_of_memory(ctx);
  }
  int64_t degenerate = 0;
  for (int64_t t = 0; t < nt; t++) {
    const uint32_t *k = &in[3 * t];
    if (k[0] == k[1] || k[1] == k[2] || k[0] == k[2]) {
      degenerate++;
      continue;
    }
    uint32_t low = k[0] < k[1] ? (k[0] < k[2] ? k[0] : k[2]) : (k[1] < k[2] ? k[1] : k[2]);
    b.start[low + 1]++;
    keep[t] = 1;
  }
  for (int64_t v = 0; v < nv; v++) b.start[v + 1] += b.start[v];
  int64_t *fill = malloc((size_t)nv * sizeof *fill);
  if (!fill) {
    buckets_free(&b);
    free(keep);
    return out_of_memory(ctx);
  }
  memcpy(fill, b.start, (size_t)nv * sizeof *fill);
  for (int64_t t = 0; t < nt; t++) {
    if (!keep[t]) continue;
    const uint32_t *k = &in[3 * t];
    uint32_t low = k[0] < k[1] ? (k[0] < k[2] ? k[0] : k[2]) : (k[1] < k[2] ? k[1] : k[2]);
    b.item[fill[low]++] = (uint32_t)t;
  }
  free(fill);
#pragma omp parallel for schedule(dynamic, 4096)
  for (int64_t v = 0; v < nv; v++)
    for (int64_t i = b.start[v] + 1; i < b.start[v + 1]; i++) {
      uint32_t ki[3];
      memcpy(ki, &in[3 * (int64_t)b.item[i]], sizeof ki);
      sort3(ki);
      for (int64_t j = b.start[v]; j < i; j++) {
        uint32_t kj[3];
        memcpy(kj, &in[3 * (int64_t)b.item[j]], sizeof kj);
        sort3(kj);
        if (!memcmp(ki, kj, sizeof ki)) {
          keep[b.item[i]] = 0; /* items are in input order: j came first */
          break;
        }
      }
    }
  buckets_free(&b);
  int64_t kept = 0;
  for (int64_t t = 0; t < nt; t++) kept += keep[t];
  m->triangle = malloc((size_t)(kept ? kept : 1) * 3 * sizeof *m->triangle);
  if (!m->triangle) {
    free(keep);
    return out_of_memory(ctx);
  }
  for (int64_t t = 0; t < nt; t++)
    if (keep[t]) memcpy(&m->triangle[3 * m->n_triangles++], &in[3 * t], 3 * sizeof(uint32_t));
  /* canonical corner order: lexicographic by coordinates */
#pragma omp parallel for schedule(static)
  for (int64_t t = 0; t < kept; t++) {
    uint32_t *o = &m->triangle[3 * t];
    for (int i = 0; i < 2; i++)
      for (int j = 0; j < 2 - i; j++)
        if (raycast_less(&m->fixed[3 * (int64_t)o[j + 1]], &m->fixed[3 * (int64_t)o[j]])) {
          uint32_t tmp = o[j];
          o[j] = o[j + 1];
          o[j + 1] = tmp;
        }
  }
  m->degenerate = degenerate;
  m->duplicates = nt - degenerate - kept;
  free(keep);
  return VOX_OK;
}

/* Edges with an odd number of triangles: 0 for a closed surface (every edge
 * shared by two triangles, or by four where two solids touch). Each edge is
 * bucketed under its smaller vertex; each vertex counts its few edges. */
static vox_status count_open_edges(vox_context *ctx, vox_prepared_mesh *m) {
  const int64_t nv = m->n_vertices, ne = 3 * m->n_triangles;
  buckets b = {calloc((size_t)nv + 1, sizeof *b.start), malloc((size_t)ne * sizeof *b.item)};
  int64_t *fill = malloc((size_t)nv * sizeof *fill);
  if (!b.start || !b.item || !fill) {
    buckets_free(&b);
    free(fill);
    return out_of_memory(ctx);
  }
  for (int64_t e = 0; e < ne; e++) {
    uint32_t p = m->triangle[e], q = m->triangle[e % 3 == 2 ? e - 2 : e + 1];
    b.start[(p < q ? p : q) + 1]++;
  }
  for (int64_t v = 0; v < nv; v++) b.start[v + 1] += b.start[v];
  memcpy(fill, b.start, (size_t)nv * sizeof *fill);
  for (int64_t e = 0; e < ne; e++) {
    uint32_t p = m->triangle[e], q = m->triangle[e % 3 == 2 ? e - 2 : e + 1];
    b.item[fill[p < q ? p : q]++] = p < q ? q : p;
  }
  free(fill);
  int64_t open = 0;
#pragma omp parallel for schedule(dynamic, 4096) reduction(+ : open)
  for (int64_t v = 0; v < nv; v++) {
    uint32_t *q = &b.item[b.start[v]];
    int64_t n = b.start[v + 1] - b.start[v];
    for (int64_t i = 1; i < n; i++) /* insertion sort: a vertex has a few edges */
      for (int64_t j = i; j > 0 && q[j - 1] > q[j]; j--) {
        uint32_t t = q[j];
        q[j] = q[j - 1];
        q[j - 1] = t;
      }
    for (int64_t i = 0; i < n;) {
      int64_t j = i;
      while (j < n && q[j] == q[i]) j++;
      open += (j - i) & 1;
      i = j;
    }
  }
  buckets_free(&b);
  m->open_edges = open;
  return VOX_OK;
}

vox_status mesh_lattice(vox_context *ctx, const vox_mesh *mesh, const vox_grid *grid,
                        int *bits_out) {
  const int64_t nv = mesh->n_vertices, nt = mesh->n_triangles;
  if (nt <= 0 || nv <= 0 || !mesh->vertex || !mesh->triangle)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "the mesh has no triangle");
  int64_t bad = -1;
#pragma omp parallel for schedule(static) reduction(max : bad)
  for (int64_t i = 0; i < 3 * nt; i++)
    if ((int64_t)mesh->triangle[i] >= nv) bad = bad > i ? bad : i;
  if (bad >= 0) { /* the first, as the message names it */
    for (bad = 0; (int64_t)mesh->triangle[bad] < nv; bad++) continue;
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "triangle %lld refers to vertex %u of %lld",
                     (long long)(bad / 3), mesh->triangle[bad], (long long)nv);
  }
  const int64_t n[3] = {grid->nx, grid->ny, grid->nz};
  /* The lattice: the finest 2^-K voxel (K <= 20) at which every coordinate,
   * of the mesh and of the grid's far corner, stays within 2^29. */
  double reach = 0;
  for (int a = 0; a < 3; a++) {
    if (!(grid->voxel_size[a] > 0) || !isfinite(grid->origin[a]) || n[a] < 1)
      return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "the grid is empty");
    reach = fmax(reach, (double)n[a]);
  }
  int finite = 1;
#pragma omp parallel for schedule(static) reduction(max : reach) reduction(&& : finite)
  for (int64_t v = 0; v < nv; v++)
    for (int a = 0; a < 3; a++) {
      double u = fabs((mesh->vertex[3 * v + a] - grid->origin[a]) / grid->voxel_size[a]);
      finite = finite && u <= 1e300;
      reach = u > reach ? u : reach;
    }
  if (!finite) return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "a vertex is not finite");
  int bits = 20;
  while (bits >= 1 && (reach + 1) * ldexp(1, bits) > (double)RAYCAST_FIXED_LIMIT) bits--;
  if (bits < 1)
    return vox_error(ctx, VOX_ERR_FORMAT,
                     "the mesh reaches %.3g voxels from the grid's origin, more than 2^28: "
                     "wrong units, or a stray vertex",
                     reach);
  *bits_out = bits;
  return VOX_OK;
}

vox_status mesh_prepare(vox_context *ctx, const vox_mesh *mesh, const vox_grid *grid,
                        vox_prepared_mesh *out) {
  memset(out, 0, sizeof *out);
  int bits;
  vox_status status = mesh_lattice(ctx, mesh, grid, &bits);
  if (status) return status;
  const int64_t nv = mesh->n_vertices, nt = mesh->n_triangles;
  out->bits = bits;
  out->n[0] = grid->nx, out->n[1] = grid->ny, out->n[2] = grid->nz;

  int64_t *fixed = malloc((size_t)nv * 3 * sizeof *fixed);
  uint32_t *remap = malloc((size_t)nv * sizeof *remap);
  uint32_t *tri = malloc((size_t)nt * 3 * sizeof *tri);
  out->fixed = malloc((size_t)nv * 3 * sizeof *out->fixed);
  if (!fixed || !remap || !tri || !out->fixed) {
    status = out_of_memory(ctx);
    goto done;
  }
  const double scale = ldexp(1, bits);
#pragma omp parallel for schedule(static)
  for (int64_t v = 0; v < nv; v++)
    for (int a = 0; a < 3; a++)
      fixed[3 * v + a] =
          llrint((mesh->vertex[3 * v + a] - grid->origin[a]) / grid->voxel_size[a] * scale);
  if ((status = weld(ctx, fixed, nv, out->fixed, &out->n_vertices, remap))) goto done;
  for (int64_t i = 0; i < 3 * nt; i++) tri[i] = remap[mesh->triangle[i]];
  if ((status = clean_triangles(ctx, out, tri, nt))) goto done;
  status = count_open_edges(ctx, out);
done:
  free(fixed);
  free(remap);
  free(tri);
  if (status) mesh_prepared_free(out);
  return status;
}

void mesh_prepared_free(vox_prepared_mesh *m) {
  free(m->fixed);
  free(m->triangle);
  memset(m, 0, sizeof *m);
}

vox_status mesh_prepare_gpu(vox_context *ctx, const vox_mesh *mesh, const vox_grid *grid,
                            vox_prepared_mesh *out) {
  memset(out, 0, sizeof *out);
  int bits;
  vox_status status = mesh_lattice(ctx, mesh, grid, &bits);
  if (status) return status;
  return vox_gpu_mesh_prepare(ctx, mesh->vertex, mesh->n_vertices, mesh->triangle,
                              mesh->n_triangles, grid, bits, out);
}
