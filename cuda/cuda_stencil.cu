/* SPDX-License-Identifier: BSD-3-Clause */
/* Stencils on the device: the assembled operators of the coarse multigrid
 * levels, 27 blocks of dpn x dpn per node of which the 14 not implied by
 * symmetry are stored (cuda_backend.cuh), their product and diagonal, and the
 * transfers between a grid and its coarse grid: trilinear prolongation P and
 * restriction R = P^T (engine/cpu/cpu_stencil.c is the reference).
 *
 * Storage is double, or float for VOX_PRECISION_MIXED (the preconditioner's
 * reduced-precision storage: half the memory traffic of the coarse levels),
 * and in MIXED the levels that are smoothed are packed into scaled FP16
 * values before their products (below, "FP16 storage"). Arithmetic is
 * always double; a stored value is widened when loaded.
 *
 * Every kernel is a gather, one thread per dof it writes, so no two threads
 * write the same entry and no atomics are needed. Sums run in the order of
 * the CPU loops; the transfers' weights are powers of two, so restriction
 * and prolongation give the CPU's results bit for bit, and the product
 * differs from it only where nvcc contracts a multiply-add into an FMA. */
#include <stdlib.h>
#include <string.h>

#include <type_traits>

#include "cuda_backend.cuh"

enum { THREADS = 256 };

/* MIXED stencils are converted on the host, this many values at a time, so
 * that upload and download need a bounded host buffer, not a second copy of
 * the whole stencil. */
static const size_t CONVERT_CHUNK = (size_t)1 << 20;

/* ---- helpers shared by the kernels ------------------------------------------ */

/* The coarse nodes that interpolate fine node index a along one axis, with
 * their weights (vox_cpu_parents): an even a sits on coarse node a/2, an odd
 * one halfway between (a-1)/2 and (a+1)/2. Both slots are always written so
 * that callers can unroll over 2 and keep the arrays in registers. */
static __device__ __forceinline__ int parents(int64_t a, int64_t J[2], double w[2]) {
  if (!(a & 1)) {
    J[0] = J[1] = a / 2, w[0] = 1, w[1] = 0;
    return 1;
  }
  J[0] = (a - 1) / 2, J[1] = (a + 1) / 2, w[0] = w[1] = 0.5;
  return 2;
}

/* A periodic grid's master index plus or minus one, wrapped into [0, n). */
static __device__ __forceinline__ int64_t wrap_master(int64_t a, int64_t n) {
  return a < 0 ? a + n : a >= n ? a - n : a;
}

/* Values stored on the device; the host layout has 27 blocks per node. */
static size_t stencil_values(const vox_stencil *st) {
  return st->n_nodes * VOX_CUDA_STENCIL_SLOTS * (size_t)(st->dpn * st->dpn);
}

static vox_status check_dpn(vox_backend *be, int dpn) {
  if (dpn == 1 || dpn == 3) return VOX_OK;
  return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT,
                   "CUDA multigrid: %d dofs per node (1 or 3 supported)", dpn);
}

/* ---- FP16 storage ------------------------------------------------------------

 * In MIXED precision a level that is smoothed stores its values in IEEE half
 * precision, which halves the bytes of its products (the level-1 product is
 * bound by them). Raw values cannot go to FP16: at a 1e-9 density contrast
 * the void's entries lie far below its smallest normal number (6.1e-5). The
 * symmetric diagonal scaling A = S A_hat S, S = diag(sqrt(a_ii)) / 2^6 per
 * dof, gives A_hat the diagonal 2^12 and |A_hat_ij| <= 2^12 (A is positive
 * definite), whatever the stiffness, so every value keeps FP16's relative
 * precision (11 bits) down to 6.1e-5 / 2^12 = 1.5e-8 of its row's and
 * column's diagonals; with a unit diagonal FP16's normal range would end at
 * 6.1e-5 of them, where the coupling of a void dof to a solid one (about
 * 1e-9 / sqrt(1e-9 * 1) = 3e-5 at a 1e-9 contrast) already lies, and
 * would keep only an absolute 3e-8. The factor is a power of two, so it
 * costs no rounding; the largest value, 4096, is far from FP16's 65504. S
 * stays in float, and the product is y = S (A_hat (S x)), summed in double.
 * A_hat is symmetric with the same stored half (block t of n against the
 * transposed block 26 - t of m).
 *
 * Rounded to nearest, equal rows round alike: where the coefficients are
 * smooth (a uniform density, as at the optimizer's first iteration) every
 * interior row has the same rounding error, so the errors add up coherently
 * on the smooth vectors, and the rigid translations, which the operator
 * annihilates away from the supports, get an energy of about 2^-12 of the
 * diagonal, of either sign: more than the smallest eigenvalue of a level-1
 * operator (about 1e-4 of it at 128 x 64 x 64), so the level turned
 * indefinite and CG broke down at the cantilever's first solve. The values are therefore rounded stochastically: up or down
 * to the neighbouring FP16 values with the probabilities that make the
 * rounding unbiased, drawn from a hash of the value's index (reproducible).
 * The errors are then independent, up to 2^-10 of a value instead of
 * 2^-11, and average out on smooth vectors as they did at random densities;
 * the two values of a pair (r, c), (c, r) of a centre block take the same
 * draw, so that the operator stays symmetric (with independent draws, a
 * first version, the cell benchmark needed 1.8 times the CG iterations).
 *
 * The Galerkin products keep writing float (the next level's product reads
 * it, so the coarse operators, the coarsest one included, are the float
 * chain's, not built from FP16 values: the coarsest level is factored, and
 * of a periodic cell's singular operator float's rounding already left the
 * translations an energy of the order of the void's stiffness, see
 * engine/multigrid.c hold_node). The first product on the level packs it
 * in place (`pack`): its scales from the float diagonal, then the FP16
 * values into the first half of the float buffer, in launches over ranges
 * [c, 2c) of values from the front, each of which writes only over floats
 * that earlier launches have read (value i goes to bytes [2i, 2i + 2),
 * float i/2). A Galerkin product or an upload writes float again, and a
 * stencil that is factored (the coarsest) is never packed. The memory stays
 * that of the float storage plus the scales (4 bytes per dof). */

/* The first range: one thread block, which reads all of it before writing. */
enum { PACK_FIRST = 4096, PACK_THREADS = 1024 };

int vox_cuda_fp16_stencils(const vox_backend *be, const vox_grid *grid) {
  if (be->fp16_levels == VOX_FP16_LEVELS_ON) return 1;
  if (be->fp16_levels == VOX_FP16_LEVELS_OFF) return 0;
  /* auto: on where the grid is not periodic (cuda_backend.cuh) */
  return !grid->periodic;
}

/* s = sqrt(a_rr) / 2^6 of the float centre block (1 where it is not
 * positive: a row of zeros, which then stays zero). */
template <int DPN>
static __global__ void pack_scale_kernel(const float *__restrict__ a, float *__restrict__ scale,
                                         size_t n_dofs) {
  VOX_GRID_STRIDE(dof, n_dofs) {
    const size_t n = dof / DPN;
    const int r = (int)(dof - n * DPN);
    const float d = a[n * DPN * DPN + r * DPN + r]; /* slot 0 comes first */
    scale[dof] = d > 0 && d < INFINITY ? sqrtf(d) * 0.015625f : 1.0f;
  }
}

/* The centre blocks made exactly symmetric before packing: (r, c) and
 * (c, r) are separate Galerkin sums, equal to float's rounding, and the
 * product reads both; once equal, they round alike (pack_value). */
template <int DPN>
static __global__ void symmetrize_centre_kernel(float *__restrict__ a, size_t n_nodes) {
  VOX_GRID_STRIDE(n, n_nodes) {
    float *b = a + n * DPN * DPN; /* slot 0 comes first */
#pragma unroll
    for (int r = 1; r < DPN; r++)
#pragma unroll
      for (int c = 0; c < r; c++) {
        const float mean = 0.5f * (b[r * DPN + c] + b[c * DPN + r]);
        b[r * DPN + c] = b[c * DPN + r] = mean;
      }
  }
}

/* The node at offset t of node n, the way the product finds it; n itself for
 * a periodic image's centre; -1 outside the grid (the block is zero). */
template <bool PERIODIC>
static __device__ __forceinline__ int64_t pack_neighbour(size_t n, int t, int64_t px, int64_t py,
                                                         int64_t pz) {
  int64_t i, j, k;
  vox_cuda_node_coords(n, px, py, pz, i, j, k);
  if (t == VOX_CUDA_STENCIL_CENTRE) return (int64_t)n;
  int64_t ii = i + t % 3 - 1, jj = j + t / 3 % 3 - 1, kk = k + t / 9 - 1;
  if (PERIODIC) {
    if (i == px - 1 || j == py - 1 || k == pz - 1) return -1; /* an image: centre only */
    ii = wrap_master(ii, px - 1), jj = wrap_master(jj, py - 1), kk = wrap_master(kk, pz - 1);
  } else if (ii < 0 || ii >= px || jj < 0 || jj >= py || kk < 0 || kk >= pz) {
    return -1;
  }
  return (kk * py + jj) * px + ii;
}

/* x in FP16: to one of its two FP16 neighbours with the probability that
 * makes the rounding unbiased, from a hash of the value's index v
 * (splitmix64's finaliser; 24 bits of it). */
static __device__ __forceinline__ __half round_half(float x, size_t v) {
  const __half down = __float2half_rd(x), up = __float2half_ru(x);
  const float fdown = __half2float(down), fup = __half2float(up);
  if (fdown == fup) return down;
  uint64_t z = (uint64_t)v + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  const float u = (float)(z >> 40) * 0x1p-24f; /* uniform in [0, 1) */
  return u * (fup - fdown) < x - fdown ? up : down;
}

/* Stored value v of the float storage a as A_hat = a / (s_n,r s_m,c). */
template <int DPN, bool PERIODIC>
static __device__ __forceinline__ __half pack_value(const float *a, const float *__restrict__ s,
                                                    size_t v, int64_t px, int64_t py,
                                                    int64_t pz) {
  constexpr int BS = DPN * DPN;
  const vox_cuda_stencil_place at = vox_cuda_stencil_place_of(v, (size_t)(px * py * pz), BS);
  const size_t n = at.n;
  const int e = at.e, r = e / DPN, c = e % DPN, slot = at.slot;
  const int t = VOX_CUDA_STENCIL_CENTRE + slot;
  const int64_t m = pack_neighbour<PERIODIC>(n, t, px, py, pz);
  const double value = a[v];
  if (m < 0) return __float2half_rn(0.0f);
  /* the draw's key: the value's place node by node, (n 14 + slot) bs + e,
   * whatever the storage's order; the centre block holds (r, c) and (c, r),
   * made equal: the same draw rounds them alike, or the stored operator
   * would not be symmetric (the other blocks are stored once) */
  const size_t key = (n * VOX_CUDA_STENCIL_SLOTS + (size_t)slot) * BS +
                     (size_t)(t == VOX_CUDA_STENCIL_CENTRE && r > c ? c * DPN + r : e);
  return round_half((float)(value / ((double)s[n * DPN + r] * (double)s[m * DPN + c])), key);
}

/* Values [0, count) (count <= PACK_FIRST), in one thread block: all read,
 * then all written. */
template <int DPN, bool PERIODIC>
static __global__ void __launch_bounds__(PACK_THREADS)
    pack_first_kernel(float *a, const float *__restrict__ s, size_t count, int64_t px,
                      int64_t py, int64_t pz) {
  constexpr int PER = PACK_FIRST / PACK_THREADS;
  __half h[PER];
#pragma unroll
  for (int q = 0; q < PER; q++) {
    const size_t v = threadIdx.x + (size_t)q * PACK_THREADS;
    h[q] = v < count ? pack_value<DPN, PERIODIC>(a, s, v, px, py, pz)
                     : __float2half_rn(0.0f);
  }
  __syncthreads();
  __half *out = reinterpret_cast<__half *>(a);
#pragma unroll
  for (int q = 0; q < PER; q++) {
    const size_t v = threadIdx.x + (size_t)q * PACK_THREADS;
    if (v < count) out[v] = h[q];
  }
}

/* Values [lo, hi), hi <= 2 lo: they land on floats [lo/2, hi/2), below lo,
 * which earlier launches have read. */
template <int DPN, bool PERIODIC>
static __global__ void pack_range_kernel(float *a, const float *__restrict__ s, size_t lo,
                                         size_t hi, int64_t px, int64_t py, int64_t pz) {
  __half *out = reinterpret_cast<__half *>(a);
  VOX_GRID_STRIDE(q, hi - lo) {
    const size_t v = lo + q;
    out[v] = pack_value<DPN, PERIODIC>(a, s, v, px, py, pz);
  }
}

/* The reverse, for a packed stencil that must be float again (a Galerkin
 * product reads it, or it is factored): ranges from the back, each reading
 * FP16 values [lo, hi) (bytes [2 lo, 2 hi)) and writing floats [lo, hi)
 * (bytes [4 lo, 4 hi)), which held only values of the ranges above, already
 * read; [0, PACK_FIRST) last, in one thread block. */
template <int DPN, bool PERIODIC>
static __device__ __forceinline__ float unpack_value(const __half *h, const float *__restrict__ s,
                                                     size_t v, int64_t px, int64_t py,
                                                     int64_t pz) {
  constexpr int BS = DPN * DPN;
  const vox_cuda_stencil_place at = vox_cuda_stencil_place_of(v, (size_t)(px * py * pz), BS);
  const size_t n = at.n;
  const int r = at.e / DPN, c = at.e % DPN, t = VOX_CUDA_STENCIL_CENTRE + at.slot;
  const int64_t m = pack_neighbour<PERIODIC>(n, t, px, py, pz);
  if (m < 0) return 0.0f;
  return (float)((double)__half2float(h[v]) * (double)s[n * DPN + r] * (double)s[m * DPN + c]);
}

template <int DPN, bool PERIODIC>
static __global__ void unpack_range_kernel(float *a, const float *__restrict__ s, size_t lo,
                                           size_t hi, int64_t px, int64_t py, int64_t pz) {
  const __half *in = reinterpret_cast<const __half *>(a);
  VOX_GRID_STRIDE(q, hi - lo) {
    const size_t v = lo + q;
    a[v] = unpack_value<DPN, PERIODIC>(in, s, v, px, py, pz);
  }
}

template <int DPN, bool PERIODIC>
static __global__ void __launch_bounds__(PACK_THREADS)
    unpack_first_kernel(float *a, const float *__restrict__ s, size_t count, int64_t px,
                        int64_t py, int64_t pz) {
  constexpr int PER = PACK_FIRST / PACK_THREADS;
  const __half *in = reinterpret_cast<const __half *>(a);
  float f[PER];
#pragma unroll
  for (int q = 0; q < PER; q++) {
    const size_t v = threadIdx.x + (size_t)q * PACK_THREADS;
    f[q] = v < count ? unpack_value<DPN, PERIODIC>(in, s, v, px, py, pz) : 0.0f;
  }
  __syncthreads();
#pragma unroll
  for (int q = 0; q < PER; q++) {
    const size_t v = threadIdx.x + (size_t)q * PACK_THREADS;
    if (v < count) a[v] = f[q];
  }
}

template <int DPN, bool PERIODIC>
static vox_status pack_as(vox_backend *be, vox_stencil *st, bool pack) {
  const size_t n = stencil_values(st);
  const int64_t px = st->grid.nx + 1, py = st->grid.ny + 1, pz = st->grid.nz + 1;
  float *a = st->value32;
  const size_t first = n < (size_t)PACK_FIRST ? n : (size_t)PACK_FIRST;
  if (pack) {
    if (DPN > 1) {
      symmetrize_centre_kernel<DPN><<<vox_cuda_grid(st->n_nodes), VOX_CUDA_THREADS>>>(
          a, st->n_nodes);
      CUDA_LAUNCHED(be, "symmetrizing a stencil's centre blocks");
    }
    pack_scale_kernel<DPN><<<vox_cuda_grid(st->n_dofs), VOX_CUDA_THREADS>>>(a, st->scale,
                                                                            st->n_dofs);
    CUDA_LAUNCHED(be, "the FP16 stencil's scales");
    pack_first_kernel<DPN, PERIODIC><<<1, PACK_THREADS>>>(a, st->scale, first, px, py, pz);
    CUDA_LAUNCHED(be, "packing a stencil into FP16");
    for (size_t lo = first; lo < n; lo *= 2) {
      const size_t hi = n - lo < lo ? n : 2 * lo;
      pack_range_kernel<DPN, PERIODIC><<<vox_cuda_grid(hi - lo), VOX_CUDA_THREADS>>>(
          a, st->scale, lo, hi, px, py, pz);
      CUDA_LAUNCHED(be, "packing a stencil into FP16");
    }
    return VOX_OK;
  }
  size_t top = first; /* the start of the last range */
  while (top < n && n - top > top) top *= 2;
  for (size_t lo = top; lo >= first && lo < n; lo /= 2) {
    const size_t hi = n - lo < lo ? n : 2 * lo;
    unpack_range_kernel<DPN, PERIODIC><<<vox_cuda_grid(hi - lo), VOX_CUDA_THREADS>>>(
        a, st->scale, lo, hi, px, py, pz);
    CUDA_LAUNCHED(be, "unpacking an FP16 stencil");
    if (lo == first) break;
  }
  unpack_first_kernel<DPN, PERIODIC><<<1, PACK_THREADS>>>(a, st->scale, first, px, py, pz);
  CUDA_LAUNCHED(be, "unpacking an FP16 stencil");
  return VOX_OK;
}

static vox_status pack_dispatch(vox_backend *be, vox_stencil *st, bool pack) {
  TRY(check_dpn(be, st->dpn));
  if (!st->n_nodes) return VOX_OK;
  if (st->dpn == 3)
    return st->grid.periodic ? pack_as<3, true>(be, st, pack) : pack_as<3, false>(be, st, pack);
  return st->grid.periodic ? pack_as<1, true>(be, st, pack) : pack_as<1, false>(be, st, pack);
}

vox_status vox_cuda_stencil_pack(vox_backend *be, vox_stencil *st) {
  if (!st->fp16 || st->packed) return VOX_OK;
  TRY(vox_cuda_stencil_factor_wait(be, st)); /* a factorisation may still read the values */
  TRY(pack_dispatch(be, st, true));
  st->packed = 1;
  return VOX_OK;
}

vox_status vox_cuda_stencil_unpack(vox_backend *be, vox_stencil *st) {
  if (!st->packed) return VOX_OK;
  TRY(pack_dispatch(be, st, false));
  st->packed = 0;
  return VOX_OK;
}

vox_status vox_cuda_stencil_full_storage(vox_backend *be, vox_stencil *st, int *was) {
  *was = st->fp16;
  TRY(vox_cuda_stencil_unpack(be, st));
  st->fp16 = 0;
  return VOX_OK;
}

/* ---- create, destroy, upload, download ------------------------------------- */

vox_status vox_cuda_stencil_create(vox_backend *be, const vox_grid *grid, int dpn,
                                   vox_precision precision, vox_stencil **out) {
  *out = NULL;
  TRY(check_dpn(be, dpn));
  if (precision != VOX_PRECISION_DOUBLE && precision != VOX_PRECISION_MIXED)
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT, "CUDA multigrid: unknown precision %d",
                     (int)precision);
  vox_stencil *st = (vox_stencil *)calloc(1, sizeof *st);
  if (!st) return vox_error(be->ctx, VOX_ERR_NO_MEMORY, "out of memory");
  st->grid = *grid;
  st->dpn = dpn;
  st->n_nodes = (size_t)vox_grid_nodes(grid);
  st->n_dofs = st->n_nodes * (size_t)dpn;
  st->precision = precision;
  const size_t n = stencil_values(st);
  const int mixed = precision == VOX_PRECISION_MIXED;
  const size_t bytes = n * (mixed ? sizeof(float) : sizeof(double));
  void *p = NULL;
  vox_status s = vox_cuda_alloc(be, &p, bytes, "a multigrid level's stencil");
  if (s == VOX_OK) s = vox_cuda_check(be, cudaMemset(p, 0, bytes), "clearing a stencil");
  if (s != VOX_OK) {
    vox_cuda_free(p);
    free(st);
    return s;
  }
  if (mixed)
    st->value32 = (float *)p;
  else
    st->value = (double *)p;
  if (mixed && vox_cuda_fp16_stencils(be, grid)) {
    s = vox_cuda_alloc(be, (void **)&st->scale, (st->n_dofs ? st->n_dofs : 1) * sizeof(float),
                       "a multigrid level's FP16 scales");
    if (s != VOX_OK) {
      vox_cuda_free(p);
      free(st);
      return s;
    }
    st->fp16 = 1;
  }
  *out = st;
  return VOX_OK;
}

void vox_cuda_stencil_destroy(vox_backend *be, vox_stencil *st) {
  if (!st) return;
  vox_cuda_stencil_factor_free(be, st);
  vox_cuda_free(st->value);
  vox_cuda_free(st->value32);
  vox_cuda_free(st->scale);
  free(st);
}

/* Upload: blocks 13..26 of each node of the host's 27, converted to the
 * storage type and laid slot by slot, a bounded number of nodes of one slot
 * at a time. */
template <class V>
static vox_status upload_as(vox_backend *be, vox_stencil *st, V *dst, const double *host) {
  const int bs = st->dpn * st->dpn;
  const size_t chunk_nodes = CONVERT_CHUNK / (size_t)bs + 1;
  V *buf = (V *)malloc(chunk_nodes * (size_t)bs * sizeof *buf);
  if (!buf) return vox_error(be->ctx, VOX_ERR_NO_MEMORY, "out of memory");
  vox_status s = VOX_OK;
  for (int slot = 0; slot < VOX_CUDA_STENCIL_SLOTS && s == VOX_OK; slot++)
    for (size_t n0 = 0; n0 < st->n_nodes && s == VOX_OK; n0 += chunk_nodes) {
      const size_t nodes = st->n_nodes - n0 < chunk_nodes ? st->n_nodes - n0 : chunk_nodes;
      for (size_t n = 0; n < nodes; n++)
        for (int e = 0; e < bs; e++)
          buf[n * bs + e] =
              (V)host[((n0 + n) * 27 + VOX_CUDA_STENCIL_CENTRE + slot) * (size_t)bs + e];
      /* from pageable memory cudaMemcpy returns once buf has been read, so
       * the buffer can be refilled at once */
      s = vox_cuda_check(be,
                         cudaMemcpy(dst + vox_cuda_stencil_block(n0, slot, st->n_nodes, bs), buf,
                                    nodes * bs * sizeof *buf, cudaMemcpyHostToDevice),
                         "uploading a stencil");
    }
  free(buf);
  return s;
}

vox_status vox_cuda_stencil_upload(vox_backend *be, vox_stencil *st, const double *host) {
  TRY(vox_cuda_stencil_factor_wait(be, st)); /* a factorisation may still read the values */
  st->packed = 0; /* float again; packed before the next product */
  return st->value ? upload_as(be, st, st->value, host) : upload_as(be, st, st->value32, host);
}

/* The stored half in place (device memory), a packed FP16 level widened
 * back to float first: whoever writes them makes a new operator, which is
 * packed again before its next product. */
vox_status vox_cuda_stencil_values(vox_backend *be, vox_stencil *st, vox_vec *values) {
  TRY(vox_cuda_stencil_factor_wait(be, st)); /* a factorisation may still read them */
  TRY(vox_cuda_stencil_unpack(be, st));
  values->n = stencil_values(st);
  values->scalar = st->value ? VOX_DOUBLE : VOX_FLOAT;
  values->raw = st->value ? (void *)st->value : (void *)st->value32;
  return VOX_OK;
}

/* Download: the stored half, then the 27 blocks, those before the centre as
 * the transposes of their neighbours' (zero towards outside the grid). */
static double host_widen(double v) { return v; }
static double host_widen(float v) { return (double)v; }
static double host_widen(__half v) { return (double)__half2float(v); }

/* A packed (FP16) stencil's values are A_hat; times the scales of the row's
 * and the column's dofs, read from the host copy `scale` (NULL: 1). */
template <class V>
static vox_status download_as(vox_backend *be, const vox_stencil *st, const V *src,
                              double *host) {
  const int dpn = st->dpn;
  const size_t bs = (size_t)(dpn * dpn), n = stencil_values(st);
  V *half = (V *)malloc((n ? n : 1) * sizeof *half);
  float *scale = NULL;
  if (!half) return vox_error(be->ctx, VOX_ERR_NO_MEMORY, "out of memory");
  vox_status s = vox_cuda_check(
      be, cudaMemcpy(half, src, n * sizeof *half, cudaMemcpyDeviceToHost), "downloading a stencil");
  if (s == VOX_OK && st->packed) {
    scale = (float *)malloc((st->n_dofs ? st->n_dofs : 1) * sizeof *scale);
    if (!scale) s = vox_error(be->ctx, VOX_ERR_NO_MEMORY, "out of memory");
    if (s == VOX_OK)
      s = vox_cuda_check(be,
                         cudaMemcpy(scale, st->scale, st->n_dofs * sizeof *scale,
                                    cudaMemcpyDeviceToHost),
                         "downloading a stencil's FP16 scales");
  }
  const int64_t px = st->grid.nx + 1, py = st->grid.ny + 1, pz = st->grid.nz + 1;
  for (size_t node = 0; s == VOX_OK && node < st->n_nodes; node++) {
    const int64_t i = (int64_t)node % px, j = (int64_t)node / px % py,
                  k = (int64_t)node / (px * py);
    /* periodic: a master's neighbours wrap to masters; an image's row is
     * its centre block */
    const bool periodic = st->grid.periodic,
               image = periodic && vox_is_image(px - 1, py - 1, pz - 1, i, j, k);
    for (int t = 0; t < 27; t++) {
      double *out = host + (node * 27 + (size_t)t) * bs;
      int64_t ii = i + t % 3 - 1, jj = j + t / 3 % 3 - 1, kk = k + t / 9 - 1;
      if (periodic && !image)
        ii = vox_wrap(ii, px - 1), jj = vox_wrap(jj, py - 1), kk = vox_wrap(kk, pz - 1);
      const bool inside =
          !image && ii >= 0 && ii < px && jj >= 0 && jj < py && kk >= 0 && kk < pz;
      if (t >= VOX_CUDA_STENCIL_CENTRE) {
        const V *own = half + vox_cuda_stencil_block(node, t - 13, st->n_nodes, (int)bs);
        /* the column's node: the neighbour, or the node itself (centre) */
        const size_t m = t == VOX_CUDA_STENCIL_CENTRE ? node
                         : inside                     ? (size_t)((kk * py + jj) * px + ii)
                                                      : node;
        for (size_t e = 0; e < bs; e++)
          out[e] = host_widen(own[e]) *
                   (scale ? (double)scale[node * dpn + e / dpn] * scale[m * dpn + e % dpn] : 1.0);
      } else if (inside) {
        const size_t m = (size_t)((kk * py + jj) * px + ii);
        const V *theirs = half + vox_cuda_stencil_block(m, 13 - t, st->n_nodes, (int)bs);
        for (int r = 0; r < dpn; r++)
          for (int c = 0; c < dpn; c++)
            out[r * dpn + c] =
                host_widen(theirs[c * dpn + r]) *
                (scale ? (double)scale[node * dpn + r] * scale[m * dpn + c] : 1.0);
      } else {
        for (size_t e = 0; e < bs; e++) out[e] = 0;
      }
    }
  }
  free(half);
  free(scale);
  return s;
}

vox_status vox_cuda_stencil_download(vox_backend *be, const vox_stencil *st, double *host) {
  if (st->value) return download_as(be, st, st->value, host);
  return st->packed ? download_as(be, st, (const __half *)st->value32, host)
                    : download_as(be, st, st->value32, host);
}

/* ---- product and diagonal ---------------------------------------------------- */

/* y = A x, one thread per dof (n, r) of NB nodes per thread block: row r of
 * each of node n's 27 blocks against the neighbour's dofs, in t order.
 * Blocks reaching outside the grid are skipped (they are zero).
 *
 * The storage is slot by slot (vox_cuda_stencil_block), so at each block t
 * a warp's threads, on about eleven consecutive nodes, read that block of
 * each of them: their own (t >= 13) or, transposed, the neighbours' block
 * 26 - t (t < 13), either way adjacent in memory, a few cache lines a load.
 * (Node by node, a warp's load touched one line per node, and the level-1
 * product was bound by the first-level cache's sectors.) The neighbours'
 * blocks were read a moment ago by their own thread blocks and mostly come
 * from the L2 cache, which is where the halved storage saves its DRAM
 * bytes. */
template <int DPN> struct apply_shape {
  static constexpr int NB = DPN == 1 ? 128 : 32;
  static constexpr int THREADS = NB * DPN;
};

template <int DPN, class V, int NB, int MODE, bool PERIODIC = false>
static __global__ void __launch_bounds__(NB * DPN)
    stencil_apply_kernel(const V *__restrict__ a, const float *__restrict__ scale,
                         const double *__restrict__ x, double *__restrict__ y, int64_t px,
                         int64_t py, int64_t pz, size_t n_nodes, row_epilogue e) {
  constexpr int BS = DPN * DPN;
  /* FP16 values are A_hat: y = S (A_hat (S x)) with the per-dof scales */
  constexpr bool SCALED = std::is_same<V, __half>::value;
  const size_t dof = (size_t)blockIdx.x * (NB * DPN) + threadIdx.x;
  if (dof >= n_nodes * DPN) return;
  const size_t n = dof / DPN;
  const int r = (int)(dof - n * DPN);
  int64_t i, j, k;
  vox_cuda_node_coords(n, px, py, pz, i, j, k);
  /* a periodic grid's images have identity rows (their centre block) */
  const bool image = PERIODIC && (i == px - 1 || j == py - 1 || k == pz - 1);
  double s = 0;
#pragma unroll
  for (int t = 0; t < 27; t++) {
    int64_t ii = i + t % 3 - 1, jj = j + t / 3 % 3 - 1, kk = k + t / 9 - 1;
    if (PERIODIC) {
      if (image && t != VOX_CUDA_STENCIL_CENTRE) continue;
      if (!image) /* a master's neighbours wrap to masters */
        ii = wrap_master(ii, px - 1), jj = wrap_master(jj, py - 1), kk = wrap_master(kk, pz - 1);
    } else if (ii < 0 || ii >= px || jj < 0 || jj >= py || kk < 0 || kk >= pz) {
      continue;
    }
    const size_t m = (size_t)((kk * py + jj) * px + ii);
    const double *xm = x + m * DPN;
    double sx[DPN]; /* (S x) of node m */
#pragma unroll
    for (int c = 0; c < DPN; c++)
      sx[c] = SCALED ? xm[c] * (double)__ldg(scale + m * DPN + c) : xm[c];
    if (t >= VOX_CUDA_STENCIL_CENTRE) {
      const V *row =
          a + vox_cuda_stencil_block(n, t - VOX_CUDA_STENCIL_CENTRE, n_nodes, BS) + r * DPN;
#pragma unroll
      for (int c = 0; c < DPN; c++) s += vox_cuda_widen(row[c]) * sx[c];
    } else {
      const V *col = a + vox_cuda_stencil_block(m, VOX_CUDA_STENCIL_CENTRE - t, n_nodes, BS) + r;
#pragma unroll
      for (int c = 0; c < DPN; c++) s += vox_cuda_widen(col[c * DPN]) * sx[c];
    }
  }
  if (SCALED) s *= (double)__ldg(scale + n * DPN + r);
  row_out<MODE>((int64_t)(n * DPN + r), s, x, y, e); /* y = s, or a fused step's update */
}

/* The same product with a warp per node (vox_stencil_kernel WARP): lane
 * t < 27 multiplies block t's DPN rows with neighbour t's dofs (its own
 * stored block, or the transpose of the neighbour's block 26 - t), then
 * the warp sums each row in a butterfly and lane r finishes row r. Ten
 * times the threads of the row kernel (32 a node against 3) and no chain
 * of 27 neighbours in one thread: for the levels too small to hide that
 * chain's latency. */
enum { WARP_NODES = 4 }; /* nodes (warps) per thread block */

template <int DPN, class V, int MODE, bool PERIODIC = false>
static __global__ void __launch_bounds__(WARP_NODES * 32)
    stencil_warp_kernel(const V *__restrict__ a, const float *__restrict__ scale,
                        const double *__restrict__ x, double *__restrict__ y, int64_t px,
                        int64_t py, int64_t pz, size_t n_nodes, row_epilogue e) {
  constexpr int BS = DPN * DPN;
  constexpr bool SCALED = std::is_same<V, __half>::value;
  const size_t n = (size_t)blockIdx.x * WARP_NODES + threadIdx.x / 32;
  if (n >= n_nodes) return; /* the whole warp: n is the warp's */
  const int t = (int)(threadIdx.x % 32);
  int64_t i, j, k;
  vox_cuda_node_coords(n, px, py, pz, i, j, k);
  int64_t ii = i + t % 3 - 1, jj = j + t / 3 % 3 - 1, kk = k + t / 9 - 1;
  bool live = t < 27;
  if (PERIODIC) {
    /* a periodic grid's images have identity rows (their centre block) */
    const bool image = i == px - 1 || j == py - 1 || k == pz - 1;
    if (image && t != VOX_CUDA_STENCIL_CENTRE) live = false;
    if (!image) /* a master's neighbours wrap to masters */
      ii = wrap_master(ii, px - 1), jj = wrap_master(jj, py - 1), kk = wrap_master(kk, pz - 1);
  } else if (ii < 0 || ii >= px || jj < 0 || jj >= py || kk < 0 || kk >= pz) {
    live = false;
  }
  double s[DPN];
#pragma unroll
  for (int r = 0; r < DPN; r++) s[r] = 0;
  if (live) {
    const size_t m = (size_t)((kk * py + jj) * px + ii);
    double sx[DPN]; /* (S x) of node m */
#pragma unroll
    for (int c = 0; c < DPN; c++)
      sx[c] = SCALED ? x[m * DPN + c] * (double)__ldg(scale + m * DPN + c) : x[m * DPN + c];
    if (t >= VOX_CUDA_STENCIL_CENTRE) {
      const V *blk = a + vox_cuda_stencil_block(n, t - VOX_CUDA_STENCIL_CENTRE, n_nodes, BS);
#pragma unroll
      for (int r = 0; r < DPN; r++)
#pragma unroll
        for (int c = 0; c < DPN; c++) s[r] += vox_cuda_widen(blk[r * DPN + c]) * sx[c];
    } else {
      const V *blk = a + vox_cuda_stencil_block(m, VOX_CUDA_STENCIL_CENTRE - t, n_nodes, BS);
#pragma unroll
      for (int r = 0; r < DPN; r++)
#pragma unroll
        for (int c = 0; c < DPN; c++) s[r] += vox_cuda_widen(blk[c * DPN + r]) * sx[c];
    }
  }
#pragma unroll
  for (int r = 0; r < DPN; r++)
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2)
      s[r] += __shfl_xor_sync(0xffffffffu, s[r], offset);
  if (t >= DPN) return;
  double v = s[0];
#pragma unroll
  for (int r = 1; r < DPN; r++)
    if (t == r) v = s[r];
  if (SCALED) v *= (double)__ldg(scale + n * DPN + t);
  row_out<MODE>((int64_t)(n * DPN + t), v, x, y, e); /* y = v, or a fused step's update */
}

/* d = the diagonal of the centre blocks (t = 13). */
template <int DPN, class V>
static __global__ void __launch_bounds__(THREADS)
    stencil_diagonal_kernel(const V *__restrict__ a, const float *__restrict__ scale,
                            double *__restrict__ d, size_t n_dofs) {
  const size_t dof = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (dof >= n_dofs) return;
  const size_t n = dof / DPN;
  const int r = (int)(dof - n * DPN);
  const double v = vox_cuda_widen(a[n * DPN * DPN + r * DPN + r]); /* slot 0 comes first */
  d[dof] = std::is_same<V, __half>::value ? v * (double)scale[dof] * (double)scale[dof] : v;
}

template <int DPN, int MODE, class V>
static vox_status apply_as(vox_backend *be, const V *a, const vox_stencil *st, const vox_vec *x,
                           vox_vec *y, const row_epilogue &e) {
  using S = apply_shape<DPN>;
  if (!st->n_nodes) return VOX_OK;
  const vox_stencil_kernel kernel = be->stencil_kernel;
  if (kernel == VOX_STENCIL_KERNEL_WARP ||
      (kernel == VOX_STENCIL_KERNEL_AUTO && st->n_nodes < VOX_CUDA_STENCIL_WARP_NODES)) {
    const unsigned blocks = vox_cuda_blocks(st->n_nodes, WARP_NODES);
    if (st->grid.periodic)
      stencil_warp_kernel<DPN, V, MODE, true><<<blocks, WARP_NODES * 32, 0, vox_cuda_stream(be)>>>(
          a, st->scale, x->data, y->data, st->grid.nx + 1, st->grid.ny + 1, st->grid.nz + 1,
          st->n_nodes, e);
    else
      stencil_warp_kernel<DPN, V, MODE><<<blocks, WARP_NODES * 32, 0, vox_cuda_stream(be)>>>(
          a, st->scale, x->data, y->data, st->grid.nx + 1, st->grid.ny + 1, st->grid.nz + 1,
          st->n_nodes, e);
    CUDA_LAUNCHED(be, "the stencil product kernel (a warp a node)");
    return VOX_OK;
  }
  if (st->grid.periodic)
    stencil_apply_kernel<DPN, V, S::NB, MODE, true>
        <<<vox_cuda_blocks(st->n_nodes, S::NB), S::THREADS, 0, vox_cuda_stream(be)>>>(
            a, st->scale, x->data, y->data, st->grid.nx + 1, st->grid.ny + 1, st->grid.nz + 1,
            st->n_nodes, e);
  else
    stencil_apply_kernel<DPN, V, S::NB, MODE>
        <<<vox_cuda_blocks(st->n_nodes, S::NB), S::THREADS, 0, vox_cuda_stream(be)>>>(
            a, st->scale, x->data, y->data, st->grid.nx + 1, st->grid.ny + 1, st->grid.nz + 1,
            st->n_nodes, e);
  CUDA_LAUNCHED(be, MODE == ROW_PRODUCT ? "the stencil product kernel"
                    : MODE == ROW_SMOOTH ? "the fused stencil smoothing step"
                                         : "the fused stencil residual");
  return VOX_OK;
}

/* The product with the epilogue MODE (row_out), in the stencil's storage
 * precision; an FP16 level is packed first (once after each Galerkin
 * product). */
template <int DPN, int MODE>
static vox_status apply_dpn(vox_backend *be, vox_stencil *st, const vox_vec *x, vox_vec *y,
                            const row_epilogue &e) {
  if (st->value) return apply_as<DPN, MODE>(be, st->value, st, x, y, e);
  if (st->packed) return apply_as<DPN, MODE>(be, (const __half *)st->value32, st, x, y, e);
  return apply_as<DPN, MODE>(be, st->value32, st, x, y, e);
}

template <int MODE>
static vox_status apply_mode(vox_backend *be, vox_stencil *st, const vox_vec *x, vox_vec *y,
                             const row_epilogue &e) {
  TRY(check_dpn(be, st->dpn));
  TRY(vox_cuda_stencil_pack(be, st));
  return st->dpn == 3 ? apply_dpn<3, MODE>(be, st, x, y, e) : apply_dpn<1, MODE>(be, st, x, y, e);
}

template <int DPN, class V>
static vox_status diagonal_as(vox_backend *be, const V *a, const vox_stencil *st, vox_vec *d) {
  if (!st->n_dofs) return VOX_OK;
  stencil_diagonal_kernel<DPN, V><<<vox_cuda_blocks(st->n_dofs, THREADS), THREADS>>>(
      a, st->scale, d->data, st->n_dofs);
  CUDA_LAUNCHED(be, "the stencil diagonal kernel");
  return VOX_OK;
}

vox_status vox_cuda_stencil_apply(vox_backend *be, vox_stencil *st, const vox_vec *x,
                                  vox_vec *y) {
  return apply_mode<ROW_PRODUCT>(be, st, x, y, row_epilogue());
}

vox_status vox_cuda_stencil_smooth(vox_backend *be, vox_stencil *st, const vox_vec *b,
                                   const vox_vec *x, const vox_vec *inv_diag, double alpha,
                                   double beta, vox_vec *d, vox_vec *x_out) {
  const row_epilogue e = {b->data, inv_diag->data, alpha, beta, d->data};
  return apply_mode<ROW_SMOOTH>(be, st, x, x_out, e);
}

vox_status vox_cuda_stencil_residual(vox_backend *be, vox_stencil *st, const vox_vec *b,
                                     const vox_vec *x, vox_vec *r) {
  const row_epilogue e = {b->data, NULL, 0, 0, NULL};
  return apply_mode<ROW_RESIDUAL>(be, st, x, r, e);
}

/* The diagonal of the values as they are stored now (float after a Galerkin
 * product; the multigrid reads it before the level is packed). */
template <int DPN>
static vox_status diagonal_dpn(vox_backend *be, vox_stencil *st, vox_vec *d) {
  if (st->value) return diagonal_as<DPN>(be, st->value, st, d);
  if (st->packed) return diagonal_as<DPN>(be, (const __half *)st->value32, st, d);
  return diagonal_as<DPN>(be, st->value32, st, d);
}

vox_status vox_cuda_stencil_diagonal(vox_backend *be, vox_stencil *st, vox_vec *d) {
  TRY(check_dpn(be, st->dpn));
  return st->dpn == 3 ? diagonal_dpn<3>(be, st, d) : diagonal_dpn<1>(be, st, d);
}

/* ---- grid transfers ------------------------------------------------------------ */

/* coarse = R fine, one thread per coarse dof: the fine nodes 2I-1..2I+1 per
 * axis that interpolate from coarse node I, weight 1 on 2I and 0.5 beside
 * it, summed in the CPU's order (k, j, i ascending). */
template <int DPN>
static __global__ void __launch_bounds__(THREADS)
    restrict_kernel(const double *__restrict__ f, double *__restrict__ c, int64_t fx, int64_t fy,
                    int64_t fz, int64_t cx, int64_t cy, int64_t cz, size_t n_coarse_dofs) {
  const size_t dof = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (dof >= n_coarse_dofs) return;
  const size_t n = dof / DPN;
  const int r = (int)(dof - n * DPN);
  int64_t I, J, K;
  vox_cuda_node_coords(n, cx, cy, cz, I, J, K);
  double s = 0;
#pragma unroll
  for (int dk = -1; dk <= 1; dk++) {
    const int64_t k = 2 * K + dk;
    if (k < 0 || k >= fz) continue;
#pragma unroll
    for (int dj = -1; dj <= 1; dj++) {
      const int64_t j = 2 * J + dj;
      if (j < 0 || j >= fy) continue;
#pragma unroll
      for (int di = -1; di <= 1; di++) {
        const int64_t i = 2 * I + di;
        if (i < 0 || i >= fx) continue;
        const double wt = (dk ? 0.5 : 1) * (dj ? 0.5 : 1) * (di ? 0.5 : 1);
        s += wt * f[((k * fy + j) * fx + i) * DPN + r];
      }
    }
  }
  c[dof] = s;
}

/* fine += P coarse, one thread per fine node, its DPN dofs side by side:
 * the node's coordinates and its parents' indices are worked out once, not
 * once a dof, which bound the kernel (docs/benchmarks.md); the 1, 2, 4 or
 * 8 coarse parents of the node, summed first and then added, as on the
 * CPU. */
template <int DPN>
static __global__ void __launch_bounds__(THREADS)
    prolong_kernel(const double *__restrict__ c, double *__restrict__ f, int64_t fx, int64_t fy,
                   int64_t fz, int64_t cx, int64_t cy, size_t n_fine_nodes) {
  const size_t n = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (n >= n_fine_nodes) return;
  int64_t i, j, k;
  vox_cuda_node_coords(n, fx, fy, fz, i, j, k);
  int64_t Pi[2], Pj[2], Pk[2];
  double wi[2], wj[2], wk[2];
  const int nk = parents(k, Pk, wk), nj = parents(j, Pj, wj), ni = parents(i, Pi, wi);
  double s[DPN];
#pragma unroll
  for (int r = 0; r < DPN; r++) s[r] = 0;
#pragma unroll
  for (int a = 0; a < 2; a++) {
    if (a >= nk) break;
#pragma unroll
    for (int b = 0; b < 2; b++) {
      if (b >= nj) break;
#pragma unroll
      for (int e = 0; e < 2; e++) {
        if (e >= ni) break;
        const double wt = wk[a] * wj[b] * wi[e];
        const double *cm = c + ((Pk[a] * cy + Pj[b]) * cx + Pi[e]) * DPN;
#pragma unroll
        for (int r = 0; r < DPN; r++) s[r] += wt * cm[r];
      }
    }
  }
#pragma unroll
  for (int r = 0; r < DPN; r++) f[n * DPN + r] += s[r];
}

/* The transfers of a periodic grid (even sizes): the same weights with the
 * fine neighbours wrapped; a coarse image gets nothing, a fine image keeps
 * its value (as vox_cpu_restrict_residual and vox_cpu_prolong_add). */
template <int DPN>
static __global__ void __launch_bounds__(THREADS)
    restrict_periodic_kernel(const double *__restrict__ f, double *__restrict__ c, int64_t fx,
                             int64_t fy, int64_t cx, int64_t cy, int64_t cz,
                             size_t n_coarse_dofs) {
  const size_t dof = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (dof >= n_coarse_dofs) return;
  const size_t n = dof / DPN;
  const int r = (int)(dof - n * DPN);
  int64_t I, J, K;
  vox_cuda_node_coords(n, cx, cy, cz, I, J, K);
  double s = 0;
  if (I < cx - 1 && J < cy - 1 && K < cz - 1) {
#pragma unroll
    for (int dk = -1; dk <= 1; dk++) {
      const int64_t k = wrap_master(2 * K + dk, (cz - 1) * 2);
#pragma unroll
      for (int dj = -1; dj <= 1; dj++) {
        const int64_t j = wrap_master(2 * J + dj, (cy - 1) * 2);
#pragma unroll
        for (int di = -1; di <= 1; di++) {
          const int64_t i = wrap_master(2 * I + di, (cx - 1) * 2);
          const double wt = (dk ? 0.5 : 1) * (dj ? 0.5 : 1) * (di ? 0.5 : 1);
          s += wt * f[((k * fy + j) * fx + i) * DPN + r];
        }
      }
    }
  }
  c[dof] = s;
}

template <int DPN>
static __global__ void __launch_bounds__(THREADS)
    prolong_periodic_kernel(const double *__restrict__ c, double *__restrict__ f, int64_t fx,
                            int64_t fy, int64_t fz, int64_t cx, int64_t cy, size_t n_fine_dofs) {
  const size_t dof = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (dof >= n_fine_dofs) return;
  const size_t n = dof / DPN;
  const int r = (int)(dof - n * DPN);
  int64_t i, j, k;
  vox_cuda_node_coords(n, fx, fy, fz, i, j, k);
  if (i == fx - 1 || j == fy - 1 || k == fz - 1) return; /* an image */
  int64_t Pi[2], Pj[2], Pk[2];
  double wi[2], wj[2], wk[2];
  const int nk = parents(k, Pk, wk), nj = parents(j, Pj, wj), ni = parents(i, Pi, wi);
  /* the last odd master's upper parent is coarse node 0 again */
  if (Pk[1] == (fz - 1) / 2) Pk[1] = 0;
  if (Pj[1] == (fy - 1) / 2) Pj[1] = 0;
  if (Pi[1] == (fx - 1) / 2) Pi[1] = 0;
  double s = 0;
#pragma unroll
  for (int a = 0; a < 2; a++) {
    if (a >= nk) break;
#pragma unroll
    for (int b = 0; b < 2; b++) {
      if (b >= nj) break;
#pragma unroll
      for (int e = 0; e < 2; e++) {
        if (e >= ni) break;
        const double wt = wk[a] * wj[b] * wi[e];
        s += wt * c[((Pk[a] * cy + Pj[b]) * cx + Pi[e]) * DPN + r];
      }
    }
  }
  f[dof] += s;
}

template <int DPN>
static vox_status restrict_as(vox_backend *be, const vox_grid *fine, const vox_vec *rf,
                              vox_vec *rc) {
  const vox_grid coarse = vox_grid_coarsen(fine);
  const size_t n = (size_t)vox_grid_nodes(&coarse) * DPN;
  if (!n) return VOX_OK;
  if (fine->periodic) {
    restrict_periodic_kernel<DPN><<<vox_cuda_blocks(n, THREADS), THREADS, 0, vox_cuda_stream(be)>>>(
        rf->data, rc->data, fine->nx + 1, fine->ny + 1, coarse.nx + 1, coarse.ny + 1,
        coarse.nz + 1, n);
    CUDA_LAUNCHED(be, "the periodic restriction kernel");
    return VOX_OK;
  }
  restrict_kernel<DPN><<<vox_cuda_blocks(n, THREADS), THREADS, 0, vox_cuda_stream(be)>>>(
      rf->data, rc->data, fine->nx + 1, fine->ny + 1, fine->nz + 1, coarse.nx + 1, coarse.ny + 1,
      coarse.nz + 1, n);
  CUDA_LAUNCHED(be, "the restriction kernel");
  return VOX_OK;
}

template <int DPN>
static vox_status prolong_as(vox_backend *be, const vox_grid *fine, const vox_vec *xc,
                             vox_vec *xf) {
  const vox_grid coarse = vox_grid_coarsen(fine);
  const size_t n = (size_t)vox_grid_nodes(fine) * DPN;
  if (!n) return VOX_OK;
  if (fine->periodic) {
    prolong_periodic_kernel<DPN><<<vox_cuda_blocks(n, THREADS), THREADS, 0, vox_cuda_stream(be)>>>(
        xc->data, xf->data, fine->nx + 1, fine->ny + 1, fine->nz + 1, coarse.nx + 1,
        coarse.ny + 1, n);
    CUDA_LAUNCHED(be, "the periodic prolongation kernel");
    return VOX_OK;
  }
  const size_t nodes = n / DPN;
  prolong_kernel<DPN><<<vox_cuda_blocks(nodes, THREADS), THREADS, 0, vox_cuda_stream(be)>>>(
      xc->data, xf->data, fine->nx + 1, fine->ny + 1, fine->nz + 1, coarse.nx + 1, coarse.ny + 1,
      nodes);
  CUDA_LAUNCHED(be, "the prolongation kernel");
  return VOX_OK;
}

vox_status vox_cuda_restrict_residual(vox_backend *be, const vox_grid *fine, int dpn,
                                      const vox_vec *r_fine, vox_vec *r_coarse) {
  if (dpn == 3) return restrict_as<3>(be, fine, r_fine, r_coarse);
  if (dpn == 1) return restrict_as<1>(be, fine, r_fine, r_coarse);
  return check_dpn(be, dpn);
}

vox_status vox_cuda_prolong_add(vox_backend *be, const vox_grid *fine, int dpn,
                                const vox_vec *x_coarse, vox_vec *x_fine) {
  if (dpn == 3) return prolong_as<3>(be, fine, x_coarse, x_fine);
  if (dpn == 1) return prolong_as<1>(be, fine, x_coarse, x_fine);
  return check_dpn(be, dpn);
}
