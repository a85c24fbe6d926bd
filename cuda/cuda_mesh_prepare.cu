/* SPDX-License-Identifier: BSD-3-Clause */
/* The preparation of a mesh for the fill (import/mesh_prepare.c) on the GPU,
 * with the same result to the bit: the vertices on the fixed-point lattice,
 * welded and numbered in the order of their first use, degenerate triangles
 * and repeats dropped (the first copy in the input stays), corners in
 * canonical order, the open edges counted.
 *
 * The CPU uses hash tables and buckets; here everything is a stable radix
 * sort (CUB) followed by a look at neighbours:
 *   - vertices sorted by (x, y, z), three stable passes of 31-bit keys: equal
 *     points are neighbours, the first of a run is the lowest input index
 *     (stability), and the run's index, its rank, orders the welded vertices
 *     as raycast_less does, so that the canonical corner order of a triangle
 *     is the order of its ranks;
 *   - triangles by their sorted ranks (two stable passes): repeats are
 *     neighbours, the first of a run the first in the input;
 *   - edges by (lower rank, higher rank): a run of odd length is an open
 *     edge. */
#include <cuda_runtime.h>

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_run_length_encode.cuh>
#include <cub/device/device_scan.cuh>
#include <cub/device/device_select.cuh>

#include <stdint.h>
#include <string.h>

#include "voxfe/device/mesh_fill.h"
#include "voxfe/device/raycast.h"

namespace {

unsigned blocks(int64_t n, int threads) { return (unsigned)((n + threads - 1) / threads); }

/* Fixed point as mesh_prepare computes it, each operation rounded once (no
 * fused multiply-add, whatever the compiler flags), and the coordinates as
 * unsigned sort keys: |fixed| <= 2^29, so fixed + 2^29 takes 31 bits. */
__global__ void to_fixed(const double *vertex, int64_t nv, double3 origin, double3 size,
                         double scale, int64_t *fixed, uint32_t *key) {
  int64_t v = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (v >= nv) return;
  const double o[3] = {origin.x, origin.y, origin.z}, h[3] = {size.x, size.y, size.z};
  for (int a = 0; a < 3; a++) {
    int64_t f = llrint(__dmul_rn(__ddiv_rn(__dsub_rn(vertex[3 * v + a], o[a]), h[a]), scale));
    fixed[3 * v + a] = f;
    key[a * nv + v] = (uint32_t)(f + RAYCAST_FIXED_LIMIT);
  }
}

__global__ void iota(uint32_t *out, int64_t n) {
  int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = (uint32_t)i;
}

__global__ void gather(const uint32_t *from, const uint32_t *index, int64_t n, uint32_t *to) {
  int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) to[i] = from[index[i]];
}

/* order: the vertices sorted by point. head[i] = 1 where a new point starts. */
__global__ void point_heads(const int64_t *fixed, const uint32_t *order, int64_t nv,
                            uint32_t *head) {
  int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= nv) return;
  uint32_t h = 1;
  if (i > 0) {
    const int64_t *p = &fixed[3 * (int64_t)order[i]], *q = &fixed[3 * (int64_t)order[i - 1]];
    h = p[0] != q[0] || p[1] != q[1] || p[2] != q[2];
  }
  head[i] = h;
}

/* rank: inclusive sum of the heads (the point's rank + 1). Each vertex gets
 * its rank and the lowest input index of its point (the run's first). */
__global__ void point_ranks(const uint32_t *order, const uint32_t *head, const uint32_t *rank1,
                            int64_t nv, uint32_t *rank_of, uint32_t *first_of_rank) {
  int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= nv) return;
  const uint32_t r = rank1[i] - 1;
  rank_of[order[i]] = r;
  if (head[i]) first_of_rank[r] = order[i];
}

/* is_first[v]: v is the first input vertex at its point, and gets a new
 * index (numbered by first use, as the CPU's hash table does). */
__global__ void first_uses(const uint32_t *rank_of, const uint32_t *first_of_rank, int64_t nv,
                           uint32_t *is_first) {
  int64_t v = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (v < nv) is_first[v] = first_of_rank[rank_of[v]] == (uint32_t)v;
}

/* new_of_rank[r]: the welded index of point r; the welded coordinates. */
__global__ void welded_vertices(const uint32_t *first_of_rank, const uint32_t *new_index,
                                const int64_t *fixed, int64_t n_points, uint32_t *new_of_rank,
                                int64_t *welded) {
  int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= n_points) return;
  const uint32_t v = first_of_rank[r], w = new_index[v];
  new_of_rank[r] = w;
  for (int a = 0; a < 3; a++) welded[3 * (int64_t)w + a] = fixed[3 * (int64_t)v + a];
}

/* Each triangle's corners as ranks, sorted (the canonical order); proper[t]
 * = 0 for a degenerate one (two corners on one point). */
__global__ void triangle_ranks(const uint32_t *tri, const uint32_t *rank_of, int64_t nt,
                               uint32_t *ranks, uint32_t *proper) {
  int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= nt) return;
  uint32_t k[3];
  for (int c = 0; c < 3; c++) k[c] = rank_of[tri[3 * t + c]];
  uint32_t u;
  if (k[0] > k[1]) u = k[0], k[0] = k[1], k[1] = u;
  if (k[1] > k[2]) u = k[1], k[1] = k[2], k[2] = u;
  if (k[0] > k[1]) u = k[0], k[0] = k[1], k[1] = u;
  for (int c = 0; c < 3; c++) ranks[3 * t + c] = k[c];
  proper[t] = k[0] != k[1] && k[1] != k[2];
}

/* The sort keys of the proper triangles `list`: the highest rank, and the
 * two lower ones packed in `bits` bits each. */
__global__ void triangle_keys(const uint32_t *ranks, const uint32_t *list, int64_t n, int bits,
                              uint32_t *high, uint64_t *low) {
  int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const uint32_t *k = &ranks[3 * (int64_t)list[i]];
  high[i] = k[2];
  low[i] = (uint64_t)k[0] << bits | k[1];
}

__global__ void gather_low(const uint64_t *from, const uint32_t *index, int64_t n, uint64_t *to) {
  int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) to[i] = from[index[i]];
}

/* sorted: the proper triangles sorted by corners; the first of each run of
 * equal triangles is kept. */
__global__ void first_copies(const uint32_t *sorted, const uint32_t *ranks, int64_t n,
                             uint32_t *keep) {
  int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const uint32_t *p = &ranks[3 * (int64_t)sorted[i]];
  uint32_t first = 1;
  if (i > 0) {
    const uint32_t *q = &ranks[3 * (int64_t)sorted[i - 1]];
    first = p[0] != q[0] || p[1] != q[1] || p[2] != q[2];
  }
  keep[sorted[i]] = first;
}

/* The kept triangles in input order, corners as welded indices in canonical
 * order, and their three edges as keys (lower rank, higher rank). */
__global__ void kept_triangles(const uint32_t *kept, const uint32_t *ranks,
                               const uint32_t *new_of_rank, int64_t n, int bits, uint32_t *tri,
                               uint64_t *edge) {
  int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const uint32_t *k = &ranks[3 * (int64_t)kept[i]];
  for (int c = 0; c < 3; c++) tri[3 * i + c] = new_of_rank[k[c]];
  edge[3 * i + 0] = (uint64_t)k[0] << bits | k[1];
  edge[3 * i + 1] = (uint64_t)k[1] << bits | k[2];
  edge[3 * i + 2] = (uint64_t)k[0] << bits | k[2];
}

__global__ void odd_runs(const uint32_t *length, const uint32_t *n_runs, uint32_t *odd) {
  int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < *n_runs) odd[i] = length[i] & 1u;
}

/* Bits to hold the numbers 0..n-1 (at least 1). */
int bits_for(int64_t n) {
  int b = 1;
  while (b < 32 && ((int64_t)1 << b) < n) b++;
  return b;
}

/* One scratch buffer for all CUB calls, grown as they need. */
struct scratch {
  void *p = nullptr;
  size_t bytes = 0;
  cudaError_t need(size_t n) {
    if (n <= bytes) return cudaSuccess;
    cudaFree(p);
    p = nullptr, bytes = 0;
    cudaError_t e = cudaMalloc(&p, n);
    if (e == cudaSuccess) bytes = n;
    return e;
  }
};

} // namespace

/* A CUB call twice: for the scratch size, then for real. */
#define CUB(call_with_temp)                                                                   \
  do {                                                                                        \
    void *temp_ = nullptr;                                                                    \
    size_t temp_bytes_ = 0;                                                                   \
    TRY(call_with_temp);                                                                      \
    TRY(tmp.need(temp_bytes_));                                                               \
    temp_ = tmp.p;                                                                            \
    temp_bytes_ = tmp.bytes;                                                                  \
    TRY(call_with_temp);                                                                      \
  } while (0)

#define TRY(call)                                                                             \
  do {                                                                                        \
    cudaError_t err_ = (call);                                                                \
    if (err_ != cudaSuccess) {                                                                \
      status = vox_error(ctx, VOX_ERR_DEVICE, "CUDA mesh preparation: %s: %s", #call,         \
                         cudaGetErrorString(err_));                                           \
      goto done;                                                                              \
    }                                                                                         \
  } while (0)

/* A kernel on n threads; none for n = 0 (a grid of no blocks is an error). */
#define LAUNCH(n, kernel, ...)                                                                \
  do {                                                                                        \
    if ((n) > 0) {                                                                            \
      kernel<<<blocks((n), T), T>>>(__VA_ARGS__);                                             \
      TRY(cudaGetLastError());                                                                \
    }                                                                                         \
  } while (0)

#define ALLOC(ptr, count) TRY(cudaMalloc(&(ptr), (size_t)(count) * sizeof *(ptr)))

extern "C" int vox_gpu_devices(void) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return devices;
}

extern "C" vox_status vox_gpu_mesh_prepare(vox_context *ctx, const double *vertex,
                                           int64_t n_vertices, const uint32_t *triangle,
                                           int64_t n_triangles, const vox_grid *grid, int bits,
                                           vox_prepared_mesh *out) {
  memset(out, 0, sizeof *out);
  if (vox_gpu_devices() == 0) return vox_error(ctx, VOX_ERR_DEVICE, "no CUDA device");
  vox_status status = VOX_OK;
  const int64_t nv = n_vertices, nt = n_triangles;
  if (nv >= ((int64_t)1 << 31) || nt >= ((int64_t)1 << 29))
    return vox_error(ctx, VOX_ERR_DEVICE,
                     "the mesh is too large for the GPU's preparation (%lld vertices, %lld "
                     "triangles)",
                     (long long)nv, (long long)nt);
  out->bits = bits;
  out->n[0] = grid->nx, out->n[1] = grid->ny, out->n[2] = grid->nz;
  const int T = 256;
  scratch tmp;
  double *d_vertex = nullptr;
  int64_t *d_fixed = nullptr;
  uint32_t *d_tri_in = nullptr, *d_key = nullptr, *d_key_sorted = nullptr, *d_order = nullptr,
           *d_order_alt = nullptr, *d_head = nullptr, *d_rank1 = nullptr, *d_rank_of = nullptr,
           *d_first_of_rank = nullptr, *d_is_first = nullptr, *d_new_index = nullptr,
           *d_new_of_rank = nullptr, *d_ranks = nullptr, *d_proper = nullptr, *d_list = nullptr,
           *d_high = nullptr, *d_high_sorted = nullptr, *d_sorted = nullptr,
           *d_sorted_alt = nullptr, *d_keep = nullptr, *d_kept = nullptr, *d_counts = nullptr,
           *d_length = nullptr, *d_odd = nullptr;
  uint64_t *d_low = nullptr, *d_low_gathered = nullptr, *d_low_sorted = nullptr,
           *d_edge = nullptr, *d_edge_sorted = nullptr;
  /* counts on the device: proper triangles, kept triangles, edge runs, the
   * open edges */
  enum { PROPER, KEPT, RUNS, OPEN, N_COUNTS };
  uint32_t counts[N_COUNTS] = {0}, n_points = 0, n_welded = 0;
  uint32_t *d_list_pos = nullptr;

  ALLOC(d_vertex, 3 * nv);
  ALLOC(d_fixed, 3 * nv);
  ALLOC(d_tri_in, 3 * nt);
  ALLOC(d_key, 3 * nv);
  ALLOC(d_key_sorted, nv);
  ALLOC(d_order, nv);
  ALLOC(d_order_alt, nv);
  ALLOC(d_counts, N_COUNTS);
  TRY(cudaMemcpyAsync(d_vertex, vertex, (size_t)nv * 3 * sizeof *d_vertex,
                      cudaMemcpyHostToDevice));
  TRY(cudaMemcpyAsync(d_tri_in, triangle, (size_t)nt * 3 * sizeof *d_tri_in,
                      cudaMemcpyHostToDevice));
  TRY(cudaMemsetAsync(d_counts, 0, N_COUNTS * sizeof *d_counts));
  {
    const double3 origin = make_double3(grid->origin[0], grid->origin[1], grid->origin[2]);
    const double3 size =
        make_double3(grid->voxel_size[0], grid->voxel_size[1], grid->voxel_size[2]);
    LAUNCH(nv, to_fixed, d_vertex, nv, origin, size, ldexp(1.0, bits), d_fixed, d_key);
  }
  cudaFree(d_vertex), d_vertex = nullptr;

  /* ---- weld: the vertices sorted by (x, y, z), z first (stable passes) */
  LAUNCH(nv, iota, d_order, nv);
  for (int a = 2; a >= 0; a--) {
    /* this axis' keys in the order so far; the sorted keys are not used,
     * only the order */
    uint32_t *key = d_key + a * nv, *sorted = d_key_sorted;
    if (a < 2) {
      LAUNCH(nv, gather, key, d_order, nv, d_key_sorted);
      sorted = key, key = d_key_sorted;
    }
    CUB(cub::DeviceRadixSort::SortPairs(temp_, temp_bytes_, key, sorted, d_order, d_order_alt,
                                        (int)nv, 0, 31));
    uint32_t *swap = d_order;
    d_order = d_order_alt, d_order_alt = swap;
  }
  ALLOC(d_head, nv);
  ALLOC(d_rank1, nv);
  ALLOC(d_rank_of, nv);
  ALLOC(d_first_of_rank, nv);
  ALLOC(d_is_first, nv);
  ALLOC(d_new_index, nv);
  LAUNCH(nv, point_heads, d_fixed, d_order, nv, d_head);
  CUB(cub::DeviceScan::InclusiveSum(temp_, temp_bytes_, d_head, d_rank1, (int)nv));
  LAUNCH(nv, point_ranks, d_order, d_head, d_rank1, nv, d_rank_of, d_first_of_rank);
  LAUNCH(nv, first_uses, d_rank_of, d_first_of_rank, nv, d_is_first);
  CUB(cub::DeviceScan::ExclusiveSum(temp_, temp_bytes_, d_is_first, d_new_index, (int)nv));
  TRY(cudaMemcpy(&n_points, d_rank1 + nv - 1, sizeof n_points, cudaMemcpyDeviceToHost));
  n_welded = n_points; /* every point has one first use */
  ALLOC(d_new_of_rank, n_points);
  ALLOC(out->fixed, 3 * (int64_t)n_welded);
  out->n_vertices = n_welded;
  LAUNCH(n_points, welded_vertices, d_first_of_rank, d_new_index, d_fixed, n_points,
         d_new_of_rank, out->fixed);

  /* ---- triangles: degenerate ones out, repeats by a sort of their ranks */
  {
    const int rank_bits = bits_for(n_points);
    ALLOC(d_ranks, 3 * nt);
    ALLOC(d_proper, nt);
    ALLOC(d_list, nt);
    ALLOC(d_list_pos, nt);
    ALLOC(d_high, nt);
    ALLOC(d_high_sorted, nt);
    ALLOC(d_low, nt);
    ALLOC(d_low_gathered, nt);
    ALLOC(d_low_sorted, nt);
    ALLOC(d_sorted, nt);
    ALLOC(d_sorted_alt, nt);
    ALLOC(d_keep, nt);
    LAUNCH(nt, triangle_ranks, d_tri_in, d_rank_of, nt, d_ranks, d_proper);
    LAUNCH(nt, iota, d_sorted, nt);
    CUB(cub::DeviceSelect::Flagged(temp_, temp_bytes_, d_sorted, d_proper, d_list,
                                   d_counts + PROPER, (int)nt));
    TRY(cudaMemcpy(&counts[PROPER], d_counts + PROPER, sizeof *counts, cudaMemcpyDeviceToHost));
    const int64_t np = counts[PROPER];
    LAUNCH(np, triangle_keys, d_ranks, d_list, np, rank_bits, d_high, d_low);
    /* values: positions in `list`, in input order; stable passes, the
     * highest rank first, then the two lower ones */
    LAUNCH(np, iota, d_list_pos, np);
    CUB(cub::DeviceRadixSort::SortPairs(temp_, temp_bytes_, d_high, d_high_sorted, d_list_pos,
                                        d_sorted, (int)np, 0, rank_bits));
    LAUNCH(np, gather_low, d_low, d_sorted, np, d_low_gathered);
    CUB(cub::DeviceRadixSort::SortPairs(temp_, temp_bytes_, d_low_gathered, d_low_sorted,
                                        d_sorted, d_sorted_alt, (int)np, 0, 2 * rank_bits));
    /* positions in `list` to triangles */
    LAUNCH(np, gather, d_list, d_sorted_alt, np, d_sorted);
    TRY(cudaMemsetAsync(d_keep, 0, (size_t)nt * sizeof *d_keep));
    LAUNCH(np, first_copies, d_sorted, d_ranks, np, d_keep);
    /* the kept ones in input order */
    LAUNCH(nt, iota, d_sorted_alt, nt);
    d_kept = d_list; /* reused: the proper list is done with */
    CUB(cub::DeviceSelect::Flagged(temp_, temp_bytes_, d_sorted_alt, d_keep, d_kept,
                                   d_counts + KEPT, (int)nt));
    TRY(cudaMemcpy(&counts[KEPT], d_counts + KEPT, sizeof *counts, cudaMemcpyDeviceToHost));
    const int64_t nk = counts[KEPT];
    out->n_triangles = nk;
    out->degenerate = nt - np;
    out->duplicates = np - nk;
    ALLOC(out->triangle, 3 * (nk ? nk : 1));
    ALLOC(d_edge, 3 * nk);
    ALLOC(d_edge_sorted, 3 * nk);
    ALLOC(d_length, 3 * nk);
    ALLOC(d_odd, 3 * nk);
    LAUNCH(nk, kept_triangles, d_kept, d_ranks, d_new_of_rank, nk, rank_bits, out->triangle,
           d_edge);

    /* ---- open edges: runs of odd length among the sorted edges */
    if (nk) {
      CUB(cub::DeviceRadixSort::SortKeys(temp_, temp_bytes_, d_edge, d_edge_sorted, (int)(3 * nk),
                                         0, 2 * rank_bits));
      /* unique keys go to d_edge, no longer needed */
      CUB(cub::DeviceRunLengthEncode::Encode(temp_, temp_bytes_, d_edge_sorted, d_edge, d_length,
                                             d_counts + RUNS, (int)(3 * nk)));
      LAUNCH(3 * nk, odd_runs, d_length, d_counts + RUNS, d_odd);
      TRY(cudaMemcpy(&counts[RUNS], d_counts + RUNS, sizeof *counts, cudaMemcpyDeviceToHost));
      CUB(cub::DeviceReduce::Sum(temp_, temp_bytes_, d_odd, d_counts + OPEN, (int)counts[RUNS]));
      TRY(cudaMemcpy(&counts[OPEN], d_counts + OPEN, sizeof *counts, cudaMemcpyDeviceToHost));
    }
    out->open_edges = counts[OPEN];
  }
done:
  cudaFree(tmp.p);
  cudaFree(d_vertex);
  cudaFree(d_fixed);
  cudaFree(d_tri_in);
  cudaFree(d_key);
  cudaFree(d_key_sorted);
  cudaFree(d_order);
  cudaFree(d_order_alt);
  cudaFree(d_head);
  cudaFree(d_rank1);
  cudaFree(d_rank_of);
  cudaFree(d_first_of_rank);
  cudaFree(d_is_first);
  cudaFree(d_new_index);
  cudaFree(d_new_of_rank);
  cudaFree(d_ranks);
  cudaFree(d_proper);
  cudaFree(d_list);
  cudaFree(d_list_pos);
  cudaFree(d_high);
  cudaFree(d_high_sorted);
  cudaFree(d_low);
  cudaFree(d_low_gathered);
  cudaFree(d_low_sorted);
  cudaFree(d_sorted);
  cudaFree(d_sorted_alt);
  cudaFree(d_keep);
  cudaFree(d_edge);
  cudaFree(d_edge_sorted);
  cudaFree(d_length);
  cudaFree(d_odd);
  cudaFree(d_counts);
  if (status) vox_gpu_mesh_free(out);
  return status;
}

extern "C" void vox_gpu_mesh_free(vox_prepared_mesh *m) {
  cudaFree(m->fixed);
  cudaFree(m->triangle);
  memset(m, 0, sizeof *m);
}

/* Frees a host copy. */
static void free_host(vox_prepared_mesh *m) {
  free(m->fixed);
  free(m->triangle);
  memset(m, 0, sizeof *m);
}

extern "C" vox_status vox_gpu_mesh_to_host(vox_context *ctx, const vox_prepared_mesh *device,
                                           vox_prepared_mesh *host) {
  *host = *device;
  host->fixed = (int64_t *)malloc((size_t)(device->n_vertices ? device->n_vertices : 1) * 3 *
                                  sizeof *host->fixed);
  host->triangle = (uint32_t *)malloc((size_t)(device->n_triangles ? device->n_triangles : 1) *
                                      3 * sizeof *host->triangle);
  vox_status status = VOX_OK;
  if (!host->fixed || !host->triangle) {
    free_host(host);
    return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory copying the prepared mesh");
  }
  TRY(cudaMemcpy(host->fixed, device->fixed, (size_t)device->n_vertices * 3 * sizeof *host->fixed,
                 cudaMemcpyDeviceToHost));
  TRY(cudaMemcpy(host->triangle, device->triangle,
                 (size_t)device->n_triangles * 3 * sizeof *host->triangle,
                 cudaMemcpyDeviceToHost));
done:
  if (status) free_host(host);
  return status;
}
