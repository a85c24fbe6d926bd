/* SPDX-License-Identifier: BSD-3-Clause */
/* The mesh fill on the GPU: the same voxels as the CPU's (import/mesh_fill.c),
 * from the same prepared mesh, already in device memory
 * (cuda_mesh_prepare.cu), and the same exact arithmetic
 * (voxfe/device/raycast.h, with explicitly rounded double operations on the
 * device).
 *
 * Per ray axis: every (triangle, column) pair of the triangles' bounding
 * boxes is one thread (a scan of the per-triangle counts and a binary search
 * map threads to pairs, so that one large triangle does not hold up a
 * warp); a crossing flips its byte with an atomic XOR on the 32-bit word that
 * holds it; then one pass of running XORs along the columns. */
#include <cuda_runtime.h>

#include <cub/device/device_scan.cuh>

#include <algorithm>

#include <stdint.h>
#include <stdio.h>

#include "voxfe/device/mesh_fill.h"
#include "voxfe/device/raycast.h"

namespace {

struct axes {
  int A, B, C;
  int bits;
  int64_t n[3];
  int64_t stride[3]; /* of the voxels along x, y, z */
};

__device__ __forceinline__ void triangle_span(const int64_t *fixed, const uint32_t *v, int X,
                                              int bits, int64_t n, int64_t *first,
                                              int64_t *last) {
  int64_t lo = fixed[3 * (int64_t)v[0] + X], hi = lo;
  for (int c = 1; c < 3; c++) {
    int64_t x = fixed[3 * (int64_t)v[c] + X];
    lo = x < lo ? x : lo;
    hi = x > hi ? x : hi;
  }
  raycast_span(lo, hi, bits, n, first, last);
}

/* The number of columns in each triangle's bounding box (0 when none). */
__global__ void count_columns(const int64_t *fixed, const uint32_t *tri, int64_t nt, axes s,
                              unsigned long long *count) {
  int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= nt) return;
  int64_t fb, lb, fc, lc;
  triangle_span(fixed, &tri[3 * t], s.B, s.bits, s.n[s.B], &fb, &lb);
  triangle_span(fixed, &tri[3 * t], s.C, s.bits, s.n[s.C], &fc, &lc);
  count[t] = fb <= lb && fc <= lc ? (unsigned long long)((lb - fb + 1) * (lc - fc + 1)) : 0ull;
}

__device__ __forceinline__ void flip(unsigned *words, int64_t byte) {
  atomicXor(&words[byte >> 2], 1u << (8 * (byte & 3)));
}

/* One thread per (triangle, column) pair; offsets[t] is the first pair of
 * triangle t (exclusive sum, offsets[nt] the total). */
__global__ void mark_crossings(const int64_t *fixed, const uint32_t *tri, int64_t nt,
                               const unsigned long long *offsets, unsigned long long pairs,
                               axes s, unsigned *cells, unsigned *row_total) {
  unsigned long long p = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (p >= pairs) return;
  int64_t lo = 0, hi = nt; /* the last t with offsets[t] <= p */
  while (hi - lo > 1) {
    int64_t mid = (lo + hi) / 2;
    if (offsets[mid] <= p) lo = mid;
    else hi = mid;
  }
  const int64_t t = lo;
  const uint32_t *v = &tri[3 * t];
  int64_t fb, lb, fc, lc;
  triangle_span(fixed, v, s.B, s.bits, s.n[s.B], &fb, &lb);
  triangle_span(fixed, v, s.C, s.bits, s.n[s.C], &fc, &lc);
  const int64_t local = (int64_t)(p - offsets[t]), width = lb - fb + 1;
  const int64_t jb = fb + local % width, jc = fc + local / width;
  const int64_t half = (int64_t)1 << (s.bits - 1);
  int64_t a[3], b[3], c[3];
  for (int k = 0; k < 3; k++) {
    a[k] = fixed[3 * (int64_t)v[0] + k];
    b[k] = fixed[3 * (int64_t)v[1] + k];
    c[k] = fixed[3 * (int64_t)v[2] + k];
  }
  int64_t cut;
  if (!raycast_cross(a, b, c, s.A, s.B, s.C, 2 * jb * half + half, 2 * jc * half + half, s.bits,
                     s.n[s.A], &cut))
    return;
  if (row_total) flip(row_total, jc * s.n[s.B] + jb);
  if (cut < s.n[s.A]) flip(cells, cut * s.stride[s.A] + jb * s.stride[s.B] + jc * s.stride[s.C]);
}

/* Running XOR along y or z: one thread per column, neighbouring threads on
 * neighbouring bytes. */
__global__ void sweep_strided(uint8_t *cells, axes s) {
  const int64_t nx = s.n[0], ny = s.n[1];
  const int64_t columns = s.A == 2 ? nx * ny : nx * s.n[2];
  int64_t l = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (l >= columns) return;
  const int64_t base = s.A == 2 ? l : (l / nx) * nx * ny + l % nx;
  const int64_t step = s.stride[s.A], n = s.n[s.A];
  uint8_t run = 0;
  for (int64_t i = 0; i < n; i++) {
    uint8_t *c = &cells[base + i * step];
    run ^= *c;
    *c = run;
  }
}

/* Running XOR along x: one warp per row, 32 bytes a step, a shuffle scan. */
__global__ void sweep_rows(uint8_t *cells, axes s) {
  const int64_t rows = s.n[1] * s.n[2], nx = s.n[0];
  const int64_t row = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x & 31;
  if (row >= rows) return; /* whole warps leave together */
  uint8_t *c = &cells[row * nx];
  unsigned carry = 0;
  for (int64_t off = 0; off < nx; off += 32) {
    const int64_t i = off + lane;
    unsigned v = i < nx ? c[i] : 0u;
    for (int d = 1; d < 32; d *= 2) {
      unsigned u = __shfl_up_sync(0xffffffffu, v, d);
      if (lane >= d) v ^= u;
    }
    v ^= carry;
    if (i < nx) c[i] = (uint8_t)v;
    carry = __shfl_sync(0xffffffffu, v, 31);
  }
}

/* VOTE: two votes of axis A for each voxel, or one when its column's line
 * crosses the surface an odd number of times. */
__global__ void add_votes(const uint8_t *below, const uint8_t *row_total, axes s, uint8_t *vote) {
  const int64_t nx = s.n[0], ny = s.n[1], nz = s.n[2];
  int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (e >= nx * ny * nz) return;
  const int64_t i = e % nx, j = (e / nx) % ny, k = e / (nx * ny);
  const int64_t row = s.A == 0 ? j + k * ny : s.A == 1 ? k + i * nz : i + j * nx;
  vote[e] += row_total[row] ? 1 : 2 * below[e];
}

__global__ void majority(uint8_t *vote, int64_t ne) {
  int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (e < ne) vote[e] = vote[e] >= 4;
}

/* One bit per voxel, a warp's 32 voxels to a word (coalesced byte reads, a
 * ballot), and the count of the voxels inside. */
__global__ void pack_bits(const uint8_t *inside, int64_t ne, unsigned *bits,
                          unsigned long long *count) {
  const int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned word = __ballot_sync(0xffffffffu, e < ne && inside[e]);
  if ((threadIdx.x & 31) == 0 && e < ne) {
    bits[e / 32] = word;
    if (word) atomicAdd(count, (unsigned long long)__popc(word));
  }
}

unsigned blocks(int64_t n, int threads) { return (unsigned)((n + threads - 1) / threads); }

} // namespace

#define TRY(call)                                                                             \
  do {                                                                                        \
    cudaError_t err_ = (call);                                                                \
    if (err_ != cudaSuccess) {                                                                \
      status = vox_error(ctx, VOX_ERR_DEVICE, "CUDA mesh fill: %s: %s", #call,                \
                         cudaGetErrorString(err_));                                           \
      goto done;                                                                              \
    }                                                                                         \
  } while (0)

extern "C" vox_status vox_gpu_mesh_fill(vox_context *ctx, const vox_prepared_mesh *m, int vote,
                                     uint32_t *bits, int64_t *count, double *kernel_seconds) {
  vox_status status = VOX_OK;
  const int64_t nt = m->n_triangles;
  const int64_t ne = m->n[0] * m->n[1] * m->n[2];
  const int64_t max_rows =
      std::max(m->n[1] * m->n[2], std::max(m->n[2] * m->n[0], m->n[0] * m->n[1]));
  const int64_t *d_fixed = m->fixed;
  const uint32_t *d_tri = m->triangle;
  unsigned long long *d_offsets = nullptr;
  uint8_t *d_cells = nullptr, *d_vote = nullptr, *d_rows = nullptr;
  unsigned *d_bits = nullptr;
  unsigned long long *d_count = nullptr, inside_count = 0;
  const int64_t words = (ne + 31) / 32;
  void *d_scan = nullptr;
  size_t scan_bytes = 0;
  cudaEvent_t start = nullptr, stop = nullptr;
  axes s;
  s.bits = m->bits;
  for (int a = 0; a < 3; a++) s.n[a] = m->n[a];
  s.stride[0] = 1, s.stride[1] = m->n[0], s.stride[2] = m->n[0] * m->n[1];

  TRY(cudaMalloc(&d_offsets, (size_t)(nt + 1) * sizeof *d_offsets));
  /* bytes flipped through 32-bit words: rounded up to whole words */
  TRY(cudaMalloc(&d_cells, (size_t)(ne + 3) / 4 * 4));
  if (vote) {
    TRY(cudaMalloc(&d_vote, (size_t)ne));
    TRY(cudaMalloc(&d_rows, (size_t)(max_rows + 3) / 4 * 4));
  }
  TRY(cudaMalloc(&d_bits, (size_t)words * sizeof *d_bits));
  TRY(cudaMalloc(&d_count, sizeof *d_count));
  TRY(cub::DeviceScan::ExclusiveSum(nullptr, scan_bytes, d_offsets, d_offsets, nt + 1));
  TRY(cudaMalloc(&d_scan, scan_bytes));
  TRY(cudaEventCreate(&start));
  TRY(cudaEventCreate(&stop));
  TRY(cudaEventRecord(start));
  if (d_vote) TRY(cudaMemsetAsync(d_vote, 0, (size_t)ne));
  for (int A = 0; A < 3; A++) {
    if (!vote && A != raycast_parity_axis(m->n)) continue;
    s.A = A, s.B = (A + 1) % 3, s.C = (A + 2) % 3;
    TRY(cudaMemsetAsync(d_cells, 0, (size_t)(ne + 3) / 4 * 4));
    if (d_rows) TRY(cudaMemsetAsync(d_rows, 0, (size_t)(max_rows + 3) / 4 * 4));
    /* offsets[nt] is the total: its count is set to 0 first */
    TRY(cudaMemsetAsync(d_offsets + nt, 0, sizeof *d_offsets));
    if (nt) { /* a grid of no blocks is an error */
      count_columns<<<blocks(nt, 256), 256>>>(d_fixed, d_tri, nt, s, d_offsets);
      TRY(cudaGetLastError());
    }
    TRY(cub::DeviceScan::ExclusiveSum(d_scan, scan_bytes, d_offsets, d_offsets, nt + 1));
    unsigned long long pairs = 0;
    TRY(cudaMemcpy(&pairs, d_offsets + nt, sizeof pairs, cudaMemcpyDeviceToHost));
    if (pairs)
      mark_crossings<<<blocks((int64_t)pairs, 256), 256>>>(d_fixed, d_tri, nt, d_offsets, pairs,
                                                           s, (unsigned *)d_cells,
                                                           (unsigned *)d_rows);
    TRY(cudaGetLastError());
    if (A == 0)
      sweep_rows<<<blocks(m->n[1] * m->n[2] * 32, 256), 256>>>(d_cells, s);
    else
      sweep_strided<<<blocks(A == 2 ? m->n[0] * m->n[1] : m->n[0] * m->n[2], 256), 256>>>(
          d_cells, s);
    TRY(cudaGetLastError());
    if (d_vote) {
      add_votes<<<blocks(ne, 256), 256>>>(d_cells, d_rows, s, d_vote);
      TRY(cudaGetLastError());
    }
  }
  if (d_vote) {
    majority<<<blocks(ne, 256), 256>>>(d_vote, ne);
    TRY(cudaGetLastError());
  }
  TRY(cudaMemsetAsync(d_count, 0, sizeof *d_count));
  /* whole warps: the grid rounded up to 32 threads, guarded inside */
  pack_bits<<<blocks(words * 32, 256), 256>>>(d_vote ? d_vote : d_cells, ne, d_bits, d_count);
  TRY(cudaGetLastError());
  TRY(cudaEventRecord(stop));
  TRY(cudaEventSynchronize(stop));
  {
    float ms = 0;
    TRY(cudaEventElapsedTime(&ms, start, stop));
    if (kernel_seconds) *kernel_seconds = 1e-3 * ms;
  }
  TRY(cudaMemcpy(bits, d_bits, (size_t)words * sizeof *d_bits, cudaMemcpyDeviceToHost));
  TRY(cudaMemcpy(&inside_count, d_count, sizeof inside_count, cudaMemcpyDeviceToHost));
  *count = (int64_t)inside_count;
done:
  if (start) cudaEventDestroy(start);
  if (stop) cudaEventDestroy(stop);
  cudaFree(d_offsets);
  cudaFree(d_cells);
  cudaFree(d_vote);
  cudaFree(d_rows);
  cudaFree(d_scan);
  cudaFree(d_bits);
  cudaFree(d_count);
  return status;
}
