/* SPDX-License-Identifier: BSD-3-Clause */
/* The isosurface on the GPU: the extraction of export/surface.c (the same
 * padded point grid, crossing masks, case table and vertex formula), giving
 * the same vertices bit for bit in the same order, and the same triangles
 * in the same order.
 *
 * surface.c numbers the vertices by point (padded, x fastest), then by axis,
 * and the triangles by cube (its lowest corner, in the same order), then by
 * the case table: both are exclusive prefix sums over the points, which is
 * how they are computed here, in tiles of TILE points:
 *   1. classify: inside[p] = (value >= threshold), one byte per point, 0 on
 *      the padding and on a tail past the last point (so the neighbours of
 *      any point can be read without bounds checks);
 *   2. count: per point its crossing mask (3 bits: the edges from it along
 *      x, y, z that cross) and its cube's case; per tile the scan of the
 *      vertex counts (kept per point as 16 bits: a tile has at most
 *      3 TILE vertices) and the tile's totals of vertices and triangles;
 *   3. a device-wide exclusive scan (CUB) of the tiles' totals;
 *   4. emit: per point its vertices (interpolated as surface.c does, with
 *      no fused multiply-add: this file is built with --fmad=false), and per
 *      cube its triangles, at offsets from a block scan of the cubes'
 *      triangle counts; a triangle corner on the edge (q, axis) is vertex
 *      tile_first[q / TILE] + local[q] + (the bits of mask[q] below axis).
 * The field goes to the device and the mesh comes back through two pinned
 * staging buffers (upload, download); the triangles come back as int32
 * where the vertex numbers fit, widened on the host. The vertices stay
 * double all the way: they must be the CPU's bit for bit. */
#include <cuda_runtime.h>

#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/device/device_scan.cuh>

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "voxfe/device/isosurface.h"

namespace {

constexpr int THREADS = 256, ITEMS = 4, TILE = THREADS * ITEMS;

struct grid {
  int64_t px, py, pz, n; /* padded points per axis; all points */
  int64_t nx, ny, nz;    /* voxels */
};

struct field_view {
  vox_iso_field_kind kind;
  const double *density; /* device */
  const uint8_t *label;  /* device */
  uint8_t which;
  double threshold;
};

/* The value of voxel e (NaN as 0), as surface.c's voxel_value. */
__device__ __forceinline__ double voxel_value(const field_view &f, int64_t e) {
  if (f.kind == VOX_ISO_DENSITY) {
    double v = f.density[e];
    return v == v ? v : 0.0;
  }
  if (f.kind == VOX_ISO_NONZERO) return f.label[e] != 0 ? 1.0 : 0.0;
  return f.label[e] == f.which ? 1.0 : 0.0;
}

/* The value at padded point (a, b, c): 0 on the padding. */
__device__ __forceinline__ double point_value(const field_view &f, const grid &g, int64_t a,
                                              int64_t b, int64_t c) {
  if (a < 1 || b < 1 || c < 1 || a > g.nx || b > g.ny || c > g.nz) return 0.0;
  return voxel_value(f, ((c - 1) * g.ny + (b - 1)) * g.nx + (a - 1));
}

__global__ void classify(field_view f, grid g, uint8_t *inside) {
  const int64_t p = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (p >= g.n) return;
  const int64_t a = p % g.px, r = p / g.px, b = r % g.py, c = r / g.py;
  uint8_t in = 0;
  if (a >= 1 && b >= 1 && c >= 1 && a <= g.nx && b <= g.ny && c <= g.nz) {
    const int64_t e = ((c - 1) * g.ny + (b - 1)) * g.nx + (a - 1);
    if (f.kind == VOX_ISO_DENSITY)
      in = f.density[e] >= f.threshold; /* NaN >= t is false: NaN counts as 0 */
    else if (f.kind == VOX_ISO_NONZERO)
      in = f.label[e] != 0;
    else
      in = f.label[e] == f.which;
  }
  inside[p] = in;
}

/* The crossing mask of point p: bit k, the edge from p along axis k. Every
 * neighbour exists in `inside` (the padding and the tail are 0). */
__device__ __forceinline__ unsigned crossing_mask(const uint8_t *in, const grid &g, int64_t p) {
  const unsigned v = in[p];
  return (v ^ in[p + 1]) | (v ^ in[p + g.px]) << 1 | (v ^ in[p + g.px * g.py]) << 2;
}

/* The case of the cube whose lowest corner is point p (corner k = dx + 2 dy
 * + 4 dz), 0 where p has no cube (the last point of a row, column or layer). */
__device__ __forceinline__ unsigned cube_case(const uint8_t *in, const grid &g, int64_t p) {
  const int64_t a = p % g.px, r = p / g.px, b = r % g.py, c = r / g.py;
  if (a + 1 >= g.px || b + 1 >= g.py || c + 1 >= g.pz) return 0;
  const int64_t sy = g.px, sz = g.px * g.py;
  return in[p] | in[p + 1] << 1 | in[p + sy] << 2 | in[p + sy + 1] << 3 | in[p + sz] << 4 |
         in[p + sz + 1] << 5 | in[p + sz + sy] << 6 | in[p + sz + sy + 1] << 7;
}

typedef cub::BlockScan<int, THREADS> block_scan;
typedef cub::BlockReduce<int, THREADS> block_reduce;

/* Thread t of a tile has its points TILE * tile + ITEMS * t + [0, ITEMS). */
__global__ void count(const uint8_t *inside, grid g, const uint8_t *case_count, uint8_t *mask,
                      uint16_t *local, unsigned long long *tile_vertices,
                      unsigned long long *tile_triangles) {
  __shared__ union {
    block_scan::TempStorage scan;
    block_reduce::TempStorage reduce;
  } temp;
  const int64_t first = (int64_t)blockIdx.x * TILE + (int64_t)threadIdx.x * ITEMS;
  int nv[ITEMS], nt = 0;
  for (int i = 0; i < ITEMS; i++) {
    const int64_t p = first + i;
    nv[i] = 0;
    if (p >= g.n) continue;
    const unsigned m = crossing_mask(inside, g, p);
    mask[p] = (uint8_t)m;
    nv[i] = __popc(m);
    nt += case_count[cube_case(inside, g, p)];
  }
  int offset[ITEMS], total_vertices;
  block_scan(temp.scan).ExclusiveSum(nv, offset, total_vertices);
  for (int i = 0; i < ITEMS; i++)
    if (first + i < g.n) local[first + i] = (uint16_t)offset[i];
  __syncthreads(); /* temp is reused */
  const int total_triangles = block_reduce(temp.reduce).Sum(nt);
  if (threadIdx.x == 0) {
    tile_vertices[blockIdx.x] = (unsigned long long)total_vertices;
    tile_triangles[blockIdx.x] = (unsigned long long)total_triangles;
  }
}

struct emit_args {
  field_view f;
  grid g;
  const uint8_t *inside, *mask;
  const uint16_t *local;
  const unsigned long long *tile_vertices, *tile_triangles; /* scanned */
  const uint8_t *case_count;
  const uint8_t *case_edge; /* [256][VOX_CUBE_MAX_TRIANGLES][3] */
  double origin[3], h[3];
  double *vertex;
  int64_t *triangle;   /* or, where the vertex numbers fit, */
  int32_t *triangle32; /* these (half the bytes to copy back; widened on the host) */
};

/* The number of the first vertex of point q. */
__device__ __forceinline__ int64_t first_vertex(const emit_args &e, int64_t q) {
  return (int64_t)e.tile_vertices[q / TILE] + e.local[q];
}

__global__ void emit(emit_args e) {
  __shared__ block_scan::TempStorage temp;
  const grid &g = e.g;
  const int64_t first = (int64_t)blockIdx.x * TILE + (int64_t)threadIdx.x * ITEMS;
  int nt[ITEMS];
  unsigned config[ITEMS];
  for (int i = 0; i < ITEMS; i++) {
    const int64_t p = first + i;
    config[i] = p < g.n ? cube_case(e.inside, g, p) : 0;
    nt[i] = e.case_count[config[i]];
  }
  int offset[ITEMS];
  block_scan(temp).ExclusiveSum(nt, offset);
  const int64_t tile_first_triangle = (int64_t)e.tile_triangles[blockIdx.x];
  const int64_t sy = g.px, sz = g.px * g.py;
  for (int i = 0; i < ITEMS; i++) {
    const int64_t p = first + i;
    if (p >= g.n) break;
    /* the vertices of point p, in order of axis, as surface.c's emit_vertices */
    const unsigned m = e.mask[p];
    if (m) {
      const int64_t a = p % g.px, r = p / g.px, b = r % g.py, c = r / g.py;
      const double f0 = point_value(e.f, g, a, b, c);
      const double x = e.origin[0] + ((double)a - 0.5) * e.h[0];
      const double y = e.origin[1] + ((double)b - 0.5) * e.h[1];
      const double z = e.origin[2] + ((double)c - 0.5) * e.h[2];
      double *v = e.vertex + 3 * first_vertex(e, p);
      for (int k = 0; k < 3; k++) {
        if (!(m >> k & 1)) continue;
        const double f1 = point_value(e.f, g, a + (k == 0), b + (k == 1), c + (k == 2));
        double s = (e.f.threshold - f0) / (f1 - f0);
        if (!(s >= VOX_ISO_EDGE_EPS)) s = VOX_ISO_EDGE_EPS; /* also NaN */
        if (s > 1 - VOX_ISO_EDGE_EPS) s = 1 - VOX_ISO_EDGE_EPS;
        v[0] = k == 0 ? x + s * e.h[0] : x;
        v[1] = k == 1 ? y + s * e.h[1] : y;
        v[2] = k == 2 ? z + s * e.h[2] : z;
        v += 3;
      }
    }
    /* the triangles of the cube at p */
    if (!nt[i]) continue;
    const int64_t at = 3 * (tile_first_triangle + offset[i]);
    const uint8_t *edge = e.case_edge + (size_t)config[i] * VOX_CUBE_MAX_TRIANGLES * 3;
    for (int j = 0; j < 3 * nt[i]; j++) {
      const int code = edge[j], u = code >> 2, axis = code & 3;
      const int64_t q = p + (u & 1) + (u >> 1 & 1) * sy + (u >> 2 & 1) * sz;
      const int64_t id = first_vertex(e, q) + __popc(e.mask[q] & ((1u << axis) - 1));
      if (e.triangle32) e.triangle32[at + j] = (int32_t)id;
      else e.triangle[at + j] = id;
    }
  }
}

unsigned blocks(int64_t n, int threads) { return (unsigned)((n + threads - 1) / threads); }

/* Copies between the caller's pageable host memory and the device go
 * through two pinned buffers of STAGE_BYTES, the host's copy of one chunk
 * overlapping the DMA of the other: plain cudaMemcpy from and to pageable
 * memory is slower (docs/benchmarks.md). The
 * buffers are pinned on the first call and kept for the process (pinning
 * them costs milliseconds, much of a small extraction); a mutex lends them
 * to one call at a time, and a call on another device than the first
 * copies directly. */
constexpr size_t STAGE_BYTES = (size_t)16 << 20;

struct staging {
  char *buf[2];
  cudaEvent_t done[2]; /* the last copy through buf[k] is finished */
  cudaStream_t stream;
  int device;
};

pthread_mutex_t stage_lock = PTHREAD_MUTEX_INITIALIZER;
staging stage;
int stage_state; /* 0 not tried, 1 ready, -1 could not be made */

/* The staging buffers, locked, or null (then unlocked) where there are none
 * for the current device. */
staging *stage_acquire() {
  int device = -1;
  if (cudaGetDevice(&device) != cudaSuccess) return nullptr;
  pthread_mutex_lock(&stage_lock);
  if (stage_state == 0) {
    stage_state = -1;
    staging s = {};
    s.device = device;
    bool ok = cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking) == cudaSuccess;
    for (int k = 0; k < 2 && ok; k++)
      ok = cudaHostAlloc((void **)&s.buf[k], STAGE_BYTES, cudaHostAllocDefault) == cudaSuccess &&
           cudaEventCreateWithFlags(&s.done[k], cudaEventDisableTiming) == cudaSuccess;
    if (ok) {
      stage = s, stage_state = 1;
    } else { /* without pinned memory the copies go directly */
      for (int k = 0; k < 2; k++) {
        if (s.buf[k]) cudaFreeHost(s.buf[k]);
        if (s.done[k]) cudaEventDestroy(s.done[k]);
      }
      if (s.stream) cudaStreamDestroy(s.stream);
      cudaGetLastError(); /* the failure is not the caller's */
    }
  }
  if (stage_state == 1 && stage.device == device) return &stage;
  pthread_mutex_unlock(&stage_lock);
  return nullptr;
}

void stage_release(staging *s) {
  if (s) pthread_mutex_unlock(&stage_lock);
}

/* bytes from host src to device dst, in chunks through the staging. */
cudaError_t upload(staging *s, void *dst, const void *src, size_t bytes) {
  if (!s) return cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice);
  const char *from = (const char *)src;
  char *to = (char *)dst;
  int k = 0;
  for (size_t off = 0; off < bytes; off += STAGE_BYTES, k ^= 1) {
    const size_t n = bytes - off < STAGE_BYTES ? bytes - off : STAGE_BYTES;
    cudaError_t err = cudaEventSynchronize(s->done[k]); /* buf[k]'s last chunk has left */
    if (err != cudaSuccess) return err;
    memcpy(s->buf[k], from + off, n);
    if ((err = cudaMemcpyAsync(to + off, s->buf[k], n, cudaMemcpyHostToDevice, s->stream)) !=
            cudaSuccess ||
        (err = cudaEventRecord(s->done[k], s->stream)) != cudaSuccess)
      return err;
  }
  return cudaStreamSynchronize(s->stream);
}

/* bytes from device src to host dst, in chunks through the staging; with
 * widen, src holds int32 values and dst gets them as int64 (2 bytes for
 * each byte of src). */
cudaError_t download(staging *s, void *dst, const void *src, size_t bytes, bool widen) {
  if (!s && !widen) return cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost);
  if (!s) { /* widen through one host buffer */
    int32_t *narrow = (int32_t *)malloc(bytes);
    if (!narrow) return cudaErrorMemoryAllocation;
    cudaError_t err = cudaMemcpy(narrow, src, bytes, cudaMemcpyDeviceToHost);
    for (size_t i = 0; err == cudaSuccess && i < bytes / 4; i++) ((int64_t *)dst)[i] = narrow[i];
    free(narrow);
    return err;
  }
  const size_t chunks = (bytes + STAGE_BYTES - 1) / STAGE_BYTES;
  const char *from = (const char *)src;
  cudaError_t err = cudaSuccess;
  /* chunk c goes through buf[c % 2]; chunk c + 2 is asked for once c is out */
  for (size_t c = 0; c < chunks && c < 2 && err == cudaSuccess; c++) {
    const size_t off = c * STAGE_BYTES, n = bytes - off < STAGE_BYTES ? bytes - off : STAGE_BYTES;
    if ((err = cudaMemcpyAsync(s->buf[c], from + off, n, cudaMemcpyDeviceToHost, s->stream)) ==
        cudaSuccess)
      err = cudaEventRecord(s->done[c], s->stream);
  }
  for (size_t c = 0; c < chunks && err == cudaSuccess; c++) {
    const int k = (int)(c % 2);
    const size_t off = c * STAGE_BYTES, n = bytes - off < STAGE_BYTES ? bytes - off : STAGE_BYTES;
    if ((err = cudaEventSynchronize(s->done[k])) != cudaSuccess) break;
    if (widen) {
      const int32_t *a = (const int32_t *)s->buf[k];
      int64_t *b = (int64_t *)dst + off / 4;
      for (size_t i = 0; i < n / 4; i++) b[i] = a[i];
    } else {
      memcpy((char *)dst + off, s->buf[k], n);
    }
    if (c + 2 < chunks) {
      const size_t off2 = (c + 2) * STAGE_BYTES,
                   n2 = bytes - off2 < STAGE_BYTES ? bytes - off2 : STAGE_BYTES;
      if ((err = cudaMemcpyAsync(s->buf[k], from + off2, n2, cudaMemcpyDeviceToHost,
                                 s->stream)) == cudaSuccess)
        err = cudaEventRecord(s->done[k], s->stream);
    }
  }
  if (err == cudaSuccess) err = cudaStreamSynchronize(s->stream);
  return err;
}

} // namespace

#define TRY(call)                                                                             \
  do {                                                                                        \
    cudaError_t err_ = (call);                                                                \
    if (err_ != cudaSuccess) {                                                                \
      status = vox_error(ctx, VOX_ERR_DEVICE, "CUDA isosurface: %s: %s", #call,               \
                         cudaGetErrorString(err_));                                           \
      goto done;                                                                              \
    }                                                                                         \
  } while (0)

extern "C" vox_status vox_gpu_isosurface(vox_context *ctx, const vox_iso_field *f,
                                         const vox_cube_cases *cases, const double origin[3],
                                         const double voxel_size[3], double **vertex_out,
                                         size_t *n_vertices_out, int64_t **triangle_out,
                                         size_t *n_triangles_out, double *kernel_seconds) {
  vox_status status = VOX_OK;
  struct {
    size_t n_vertices, n_triangles;
    double *vertex;
    int64_t *triangle;
  } mesh, *out = &mesh;
  memset(out, 0, sizeof *out);
  *vertex_out = nullptr, *n_vertices_out = 0;
  *triangle_out = nullptr, *n_triangles_out = 0;
  grid g;
  g.nx = f->nx, g.ny = f->ny, g.nz = f->nz;
  g.px = f->nx + 2, g.py = f->ny + 2, g.pz = f->nz + 2;
  g.n = g.px * g.py * g.pz;
  const int64_t voxels = f->nx * f->ny * f->nz;
  const int64_t tiles = (g.n + TILE - 1) / TILE;
  /* the neighbours read past the last point: up to one layer, one row and one point */
  const int64_t tail = g.px * g.py + g.px + 1;
  const size_t field_bytes =
      (size_t)voxels * (f->kind == VOX_ISO_DENSITY ? sizeof(double) : sizeof(uint8_t));
  void *d_field = nullptr, *d_scan = nullptr;
  uint8_t *d_inside = nullptr, *d_mask = nullptr, *d_table = nullptr;
  uint16_t *d_local = nullptr;
  unsigned long long *d_tile_v = nullptr, *d_tile_t = nullptr;
  double *d_vertex = nullptr;
  int64_t *d_triangle = nullptr;
  int32_t *d_triangle32 = nullptr;
  staging *stg = nullptr;
  size_t scan_bytes = 0;
  unsigned long long totals[2] = {0, 0};
  cudaEvent_t start[2] = {nullptr, nullptr}, stop[2] = {nullptr, nullptr};
  float ms[2] = {0, 0};
  int devices = 0;
  field_view fv;
  emit_args e;

  TRY(cudaGetDeviceCount(&devices));
  if (devices < 1) return vox_error(ctx, VOX_ERR_DEVICE, "CUDA isosurface: no device");
  stg = stage_acquire(); /* null: direct copies */
  TRY(cudaMalloc(&d_field, field_bytes));
  TRY(cudaMalloc(&d_inside, (size_t)(g.n + tail)));
  TRY(cudaMalloc(&d_mask, (size_t)g.n));
  TRY(cudaMalloc(&d_local, (size_t)g.n * sizeof *d_local));
  TRY(cudaMalloc(&d_tile_v, (size_t)(tiles + 1) * sizeof *d_tile_v));
  TRY(cudaMalloc(&d_tile_t, (size_t)(tiles + 1) * sizeof *d_tile_t));
  TRY(cudaMalloc(&d_table, sizeof cases->count + sizeof cases->edge));
  TRY(cub::DeviceScan::ExclusiveSum(nullptr, scan_bytes, d_tile_v, d_tile_v, tiles + 1));
  TRY(cudaMalloc(&d_scan, scan_bytes));
  for (int k = 0; k < 2; k++) {
    TRY(cudaEventCreate(&start[k]));
    TRY(cudaEventCreate(&stop[k]));
  }
  TRY(upload(stg, d_field, f->kind == VOX_ISO_DENSITY ? (const void *)f->density : f->label,
             field_bytes));
  TRY(cudaMemcpy(d_table, cases->count, sizeof cases->count, cudaMemcpyHostToDevice));
  TRY(cudaMemcpy(d_table + sizeof cases->count, cases->edge, sizeof cases->edge,
                 cudaMemcpyHostToDevice));

  /* 1-3: the counts and their scans */
  fv.kind = f->kind;
  fv.density = f->kind == VOX_ISO_DENSITY ? (const double *)d_field : nullptr;
  fv.label = f->kind == VOX_ISO_DENSITY ? nullptr : (const uint8_t *)d_field;
  fv.which = f->which;
  fv.threshold = f->threshold;
  TRY(cudaEventRecord(start[0]));
  TRY(cudaMemsetAsync(d_inside + g.n, 0, (size_t)tail));
  classify<<<blocks(g.n, 256), 256>>>(fv, g, d_inside);
  TRY(cudaGetLastError());
  count<<<(unsigned)tiles, THREADS>>>(d_inside, g, d_table, d_mask, d_local, d_tile_v, d_tile_t);
  TRY(cudaGetLastError());
  /* the entry past the last tile becomes the total */
  TRY(cudaMemsetAsync(d_tile_v + tiles, 0, sizeof *d_tile_v));
  TRY(cudaMemsetAsync(d_tile_t + tiles, 0, sizeof *d_tile_t));
  TRY(cub::DeviceScan::ExclusiveSum(d_scan, scan_bytes, d_tile_v, d_tile_v, tiles + 1));
  TRY(cub::DeviceScan::ExclusiveSum(d_scan, scan_bytes, d_tile_t, d_tile_t, tiles + 1));
  TRY(cudaEventRecord(stop[0]));
  TRY(cudaMemcpy(&totals[0], d_tile_v + tiles, sizeof totals[0], cudaMemcpyDeviceToHost));
  TRY(cudaMemcpy(&totals[1], d_tile_t + tiles, sizeof totals[1], cudaMemcpyDeviceToHost));
  TRY(cudaEventElapsedTime(&ms[0], start[0], stop[0]));
  if (totals[0] == 0) goto done; /* nothing inside: the caller says so */
  TRY(cudaMalloc(&d_vertex, (size_t)totals[0] * 3 * sizeof *d_vertex));
  if (totals[0] <= (unsigned long long)INT32_MAX + 1) /* vertex numbers fit in int32 */
    TRY(cudaMalloc(&d_triangle32, (size_t)totals[1] * 3 * sizeof *d_triangle32));
  else
    TRY(cudaMalloc(&d_triangle, (size_t)totals[1] * 3 * sizeof *d_triangle));
  out->vertex = (double *)malloc((size_t)totals[0] * 3 * sizeof *out->vertex);
  out->triangle = (int64_t *)malloc((size_t)totals[1] * 3 * sizeof *out->triangle);
  if (!out->vertex || !out->triangle) {
    status = vox_error(ctx, VOX_ERR_NO_MEMORY,
                       "isosurface: out of memory for %llu vertices and %llu triangles",
                       totals[0], totals[1]);
    goto done;
  }
  /* 4: the mesh */
  e.f = fv;
  e.g = g;
  e.inside = d_inside, e.mask = d_mask, e.local = d_local;
  e.tile_vertices = d_tile_v, e.tile_triangles = d_tile_t;
  e.case_count = d_table, e.case_edge = d_table + sizeof cases->count;
  for (int k = 0; k < 3; k++) e.origin[k] = origin[k], e.h[k] = voxel_size[k];
  e.vertex = d_vertex, e.triangle = d_triangle, e.triangle32 = d_triangle32;
  TRY(cudaEventRecord(start[1]));
  emit<<<(unsigned)tiles, THREADS>>>(e);
  TRY(cudaGetLastError());
  TRY(cudaEventRecord(stop[1]));
  /* the copies back run on the staging's stream, which does not wait for
   * the default stream's kernels by itself */
  TRY(cudaEventSynchronize(stop[1]));
  TRY(download(stg, out->vertex, d_vertex, (size_t)totals[0] * 3 * sizeof *d_vertex, false));
  if (d_triangle32)
    TRY(download(stg, out->triangle, d_triangle32,
                 (size_t)totals[1] * 3 * sizeof *d_triangle32, true));
  else
    TRY(download(stg, out->triangle, d_triangle, (size_t)totals[1] * 3 * sizeof *d_triangle,
                 false));
  TRY(cudaEventElapsedTime(&ms[1], start[1], stop[1]));
  out->n_vertices = (size_t)totals[0];
  out->n_triangles = (size_t)totals[1];

done:
  if (kernel_seconds) *kernel_seconds = 1e-3 * ((double)ms[0] + (double)ms[1]);
  for (int k = 0; k < 2; k++) {
    if (start[k]) cudaEventDestroy(start[k]);
    if (stop[k]) cudaEventDestroy(stop[k]);
  }
  cudaFree(d_field);
  cudaFree(d_scan);
  cudaFree(d_inside);
  cudaFree(d_mask);
  cudaFree(d_local);
  cudaFree(d_tile_v);
  cudaFree(d_tile_t);
  cudaFree(d_table);
  cudaFree(d_vertex);
  cudaFree(d_triangle);
  cudaFree(d_triangle32);
  stage_release(stg);
  if (status != VOX_OK) {
    free(out->vertex);
    free(out->triangle);
    memset(out, 0, sizeof *out);
  }
  *vertex_out = out->vertex, *n_vertices_out = out->n_vertices;
  *triangle_out = out->triangle, *n_triangles_out = out->n_triangles;
  return status;
}
