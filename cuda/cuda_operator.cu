/* SPDX-License-Identifier: BSD-3-Clause */
/* The matrix-free operator on the device: y = K x with K = sum_e m_e Ke, the
 * one element matrix Ke of unit modulus shared by every voxel (Martinez-Frutos et al. 2017
 * section 4.1, Ratnakar et al. 2021, Arbenz et al. 2014 section 3). Four kernels compute the same
 * product, three of them by Ke's dense rows at three granularities and one
 * by the brick's reflection modes (modes, below ebe's); op->kernel picks
 * one, and default_kernel is what VOX_KERNEL_AUTO means.
 *
 * dbd, one thread per dof (Martinez-Frutos et al. 2017, algorithm 5). A block owns a tile of
 * BX x BY nodes and marches along z through BZ node planes. Each plane of x
 * (with a one-node halo, fixed dofs already zeroed) and of the moduli is
 * staged once in shared memory, coalesced, into a ring of planes, so each x
 * value is read from global memory about twice instead of 27 times. A thread
 * sums its row over the 27 neighbours of its node: each neighbour's dpn
 * values are read from shared memory once and feed every element around the
 * node that also holds the neighbour, into one partial sum per element; the
 * moduli multiply the 8 partials at the end (64 dpn + 8 FMA a row). The
 * component is the slowest thread index, so a warp works on one component
 * and every Ke entry it needs is one address for the whole warp, known at
 * compile time once the loops are unrolled: the warp fetches it once
 * (through the uniform datapath) from constant memory. For elasticity a
 * thread computes its row for NZ = 2 nodes above one another, so that each
 * fetched entry feeds two FMAs.
 *
 * nbn, one thread per node (Ratnakar et al. 2021). The same neighbour-major sum for all
 * dpn rows of the node at once (24 partial sums for elasticity): 27 dpn
 * loads feed 576 FMA (elasticity). The fused smoothing step scales each
 * neighbour's x by the element's modulus first and keeps 3 sums
 * (nbn_scaled_sums), which measured faster there alone. Elasticity on a
 * plain grid runs it staged (nbs_kernel): blocks march along z as dbd's do,
 * x and the moduli staged plane by plane in shared memory (in double by
 * asynchronous copies) with one barrier a plane, 1.6 times as fast in double
 * as reading the 27 neighbours through the read-only cache, which is how
 * nbn_kernel still does conduction and periodic cells (no shared memory, no
 * barrier). Both give the same bits.
 *
 * ebe, one thread per element (Arbenz et al. 2014). The plain 24 x 24 product of the
 * element, scattered into y. The elements run in 8 launches by the parity of
 * (i, j, k), so that no two threads of a launch share a node: the scatter
 * needs no atomics and the sums are deterministic (with a generic Ke, in
 * the CPU backend's order). Each launch reads x and updates y on every node:
 * ebe moves 8 times the data of the others.
 *
 * modes, one thread per column of elements: each element's product by the
 * modes of the brick's reflections (element_modes.h), 72 products and the
 * transforms' sums instead of 576 products, the forces summed into the
 * nodes by shuffles and shared memory (mbs_kernel). Elasticity with a
 * mirror-symmetric Ke, periodic or not; any other operator takes nbn.
 *
 * Constant memory. The double-precision product is compute-bound, and what
 * bounds it first is the SM's immediate constant cache: it holds far less
 * than the 4.6 KB of a 24 x 24 Ke, and warps at different places of the
 * unrolled product miss in it all the time (ncu: about half of all stall
 * cycles). voxfe's element matrices are those of a box of isotropic material
 * and so have the box's mirror symmetries: mirroring axis q maps corner a to
 * the corner with coordinate q flipped and changes the sign of rows and
 * columns of component q. Every entry is then +- an entry of the 3 rows of
 * corner 0 (72 doubles, 576 bytes), with the sign known at compile time and
 * folded into the FMA. load_ke checks the symmetry (to rounding) whenever it
 * loads a matrix, and the elasticity kernels then read only those rows; any
 * other Ke takes the generic kernels: the whole 24 x 24 matrix misses the
 * constant cache, which halved the kernels' speed. Conduction's Ke (512
 * bytes) fits as it is.
 *
 * Ke lives in one __constant__ array of the module, so one operator's matrix
 * is there at a time: load_ke re-uploads it when another operator is applied
 * (a run has one fine operator per physics; alternating physics reloads at
 * most once per solve).
 *
 * Single precision (VOX_APPLY_SINGLE, asked for by the multigrid smoother
 * of VOX_PRECISION_MIXED). dbd and nbn are templated on the compute type R:
 * with float, x and the moduli are read as double and converted on load
 * (staged as float in dbd's shared memory, half the bytes), Ke is read from
 * c_ke32, its float copy uploaded with c_ke, the products and sums are in
 * float, and y is stored as double. The GPU's float FMA rate is twice its
 * double rate. ebe ignores the flag and computes in double. The double
 * instances are the same code as before the template parameter.
 *
 * The device copy of `fixed` holds, after the n_dofs per-dof flags, one byte
 * per node with bit c set when dof c of the node is fixed: nbn and ebe test
 * a node with one load instead of dpn.
 *
 * Indices of dofs, nodes and elements are 64-bit (an H200 holds grids of
 * more than 2^31 dofs); node coordinates are int. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <type_traits>

#include <cuda_fp16.h>
#include <cuda_pipeline.h>

#include "cuda_backend.cuh"
#include "element_modes.h"
#include "voxfe/element.h"

/* The variant VOX_KERNEL_AUTO selects, by the dofs per node: the fastest
 * measured for each (docs/benchmarks.md). */
static vox_kernel default_kernel(int dpn) { return dpn == 3 ? VOX_KERNEL_MODES : VOX_KERNEL_DBD; }

/* The element matrix of the operator last applied, nloc x nloc row-major,
 * and the same rounded to float for the single-precision products
 * (VOX_APPLY_SINGLE), uploaded together. */
static __constant__ double c_ke[24 * 24];
static __constant__ float c_ke32[24 * 24];
/* Whose matrix c_ke holds (NULL: none), and whether it has the mirror
 * symmetries of the box. Per host thread: a thread drives one device
 * (vox_backend_create_on) and each device has its own constant memory, so a
 * second device's thread (the adjoint worker) keeps its own record. */
static thread_local const vox_operator *ke_loaded;
static thread_local bool ke_loaded_mirrored;

/* The corners as compile-time expressions (cuda_backend.cuh), so that
 * unrolled loops index Ke with constants. */
__host__ __device__ constexpr int corner_of(int x, int y, int z) {
  return vox_cuda_corner_index(x, y, z);
}
__host__ __device__ constexpr int corner_x(int a) { return vox_cuda_corner(a, 0); }
__host__ __device__ constexpr int corner_y(int a) { return vox_cuda_corner(a, 1); }
__host__ __device__ constexpr int corner_z(int a) { return vox_cuda_corner(a, 2); }
__host__ __device__ constexpr int corner_coord(int a, int q) {
  return q == 0 ? corner_x(a) : q == 1 ? corner_y(a) : corner_z(a);
}
/* The corner that b becomes when the axes on which a sits at 1 are mirrored. */
__host__ __device__ constexpr int corner_mirror(int a, int b) {
  return corner_of(corner_x(a) ^ corner_x(b), corner_y(a) ^ corner_y(b),
                   corner_z(a) ^ corner_z(b));
}

/* Entry l of the constant Ke in the compute type R (double or float). */
template <typename R> static __device__ __forceinline__ R ke_entry(int l);
template <> __device__ __forceinline__ double ke_entry<double>(int l) { return c_ke[l]; }
template <> __device__ __forceinline__ float ke_entry<float>(int l) { return c_ke32[l]; }

/* Ke[a DPN + r][b DPN + c] in the compute type R, the indices compile-time
 * after unrolling. With MIRROR, from the rows of corner 0 only (see the top
 * of the file). */
template <int DPN, bool MIRROR, typename R = double>
static __device__ __forceinline__ R ke(int a, int r, int b, int c) {
  constexpr int NLOC = 8 * DPN;
  if (!MIRROR) return ke_entry<R>((a * DPN + r) * NLOC + b * DPN + c);
  const R v = ke_entry<R>(r * NLOC + corner_mirror(a, b) * DPN + c);
  return DPN == 3 && (corner_coord(a, r) ^ corner_coord(a, c)) ? -v : v;
}

/* The grid as kernels see it: elements along each axis and node strides. */
struct grid_dims {
  int nx, ny, nz;
  int64_t sy, sz; /* node (i, j, k) = k sz + j sy + i */
};

static grid_dims dims_of(const vox_operator *op) {
  grid_dims g;
  g.nx = (int)op->grid.nx, g.ny = (int)op->grid.ny, g.nz = (int)op->grid.nz;
  g.sy = g.nx + 1;
  g.sz = g.sy * (g.ny + 1);
  return g;
}

static __device__ __forceinline__ int64_t element_index(const grid_dims &g, int i, int j, int k) {
  return ((int64_t)k * g.ny + j) * g.nx + i;
}

/* Periodic grids (vox_grid.periodic, nbn only): a master node or element
 * index plus or minus one, wrapped into [0, n). */
static __device__ __forceinline__ int wrap_master(int a, int n) {
  return a < 0 ? a + n : a >= n ? a - n : a;
}

/* Corner b of element (i, j, k) of a periodic grid: the corners past the
 * last element plane wrap to plane 0. */
static __device__ __forceinline__ int64_t element_node(const grid_dims &g, int i, int j, int k,
                                                       int b) {
  const int ii = i + corner_x(b), jj = j + corner_y(b), kk = k + corner_z(b);
  return (int64_t)(kk == g.nz ? 0 : kk) * g.sz + (int64_t)(jj == g.ny ? 0 : jj) * g.sy +
         (ii == g.nx ? 0 : ii);
}

/* VOX_ERR_INVALID_ARGUMENT for an operator made without fixed flags
 * (backend_ops.h) asked for what reads them. */
vox_status vox_cuda_op_check_fixed(vox_backend *be, const vox_operator *op, const char *what) {
  if (op->fixed) return VOX_OK;
  return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT,
                   "operator: %s on an operator made without fixed flags", what);
}

/* Per-node fixed bits (see the top of the file). */
static const uint8_t *node_fixed(const vox_operator *op) { return op->fixed + op->n_dofs; }

/* Blocks of `block` that cover nx x ny x nz items. */
static dim3 cover(int64_t nx, int64_t ny, int64_t nz, dim3 block) {
  return dim3(vox_cuda_blocks((size_t)nx, block.x), vox_cuda_blocks((size_t)ny, block.y),
              vox_cuda_blocks((size_t)nz, block.z));
}

/* ---- dbd: one thread per dof, shared-memory staging ------------------------ */

template <int DPN, bool MIRROR> struct dbd_tile {
  /* a block owns BX x BY nodes of a plane; BX * BY is a multiple of 32, so a
   * warp never spans two components */
  static constexpr int BX = 32, BY = DPN == 3 ? 4 : 8;
  /* a thread's row for NZ nodes above one another, BZ node planes a block
   * (a multiple of NZ). NZ = 2 needs about 80 registers: only worth it where
   * the constant fetches, not the registers, are what limits. */
  static constexpr int NZ = DPN == 3 && MIRROR ? 2 : 1, BZ = 8;
  static constexpr int ROW = (BX + 2) * DPN;   /* staged x values per node row */
  static constexpr int PLANE = (BY + 2) * ROW; /* ... per node plane */
  static constexpr int EROW = BX + 1;          /* staged moduli per element row */
  static constexpr int EPLANE = (BY + 1) * EROW;
  static constexpr int THREADS = BX * BY * DPN;
  /* registers: at most 85 (elasticity, 2 blocks of 384) or 51 (conduction,
   * 5 blocks of 256) a thread; measured, tighter bounds spill */
  static constexpr int MIN_BLOCKS = DPN == 3 ? 2 : 5;
  /* ring buffers: node planes k - 1 .. k + NZ, element planes k - 1 .. k + NZ - 1 */
  static constexpr int XRING = NZ + 2, MRING = NZ + 1;
};

/* Row C of the NZ nodes at planes k .. k + NZ - 1 into v: xc[p] points at the
 * thread's node column in node plane k - 1 + p, mc[p] at element (i, j) of
 * element plane k - 1 + p. */
template <int DPN, bool MIRROR, int C, typename R>
static __device__ __forceinline__ void dbd_rows(const R *const *xc, const R *const *mc, R *v) {
  using T = dbd_tile<DPN, MIRROR>;
  constexpr int NZ = T::NZ;
  R t[NZ][8]; /* row C of Ke x_e for the element whose corner a is the node */
#pragma unroll
  for (int n = 0; n < NZ; n++)
#pragma unroll
    for (int a = 0; a < 8; a++) t[n][a] = 0;
#pragma unroll
  for (int dz = -1; dz <= 1; dz++)
#pragma unroll
    for (int dy = -1; dy <= 1; dy++)
#pragma unroll
      for (int dx = -1; dx <= 1; dx++) {
        R xw[NZ][DPN]; /* the neighbour at (dx, dy, dz) of each node */
#pragma unroll
        for (int n = 0; n < NZ; n++)
#pragma unroll
          for (int d = 0; d < DPN; d++) xw[n][d] = xc[n + 1 + dz][dy * T::ROW + dx * DPN + d];
        /* the elements node - corner(a) that hold the neighbour too, as
         * their corner corner(a) + (dx, dy, dz) */
#pragma unroll
        for (int a = 0; a < 8; a++) {
          const int bx = corner_x(a) + dx, by = corner_y(a) + dy, bz = corner_z(a) + dz;
          if (bx < 0 || bx > 1 || by < 0 || by > 1 || bz < 0 || bz > 1) continue;
          const int b = corner_of(bx, by, bz);
#pragma unroll
          for (int d = 0; d < DPN; d++) {
            const R k = ke<DPN, MIRROR, R>(a, C, b, d);
#pragma unroll
            for (int n = 0; n < NZ; n++) t[n][a] += k * xw[n][d];
          }
        }
      }
#pragma unroll
  for (int n = 0; n < NZ; n++) {
    v[n] = 0;
#pragma unroll
    for (int a = 0; a < 8; a++) {
      const R m = mc[n + 1 - corner_z(a)][-corner_y(a) * T::EROW - corner_x(a)];
      if (m != 0) v[n] += m * t[n][a]; /* void elements add nothing, whatever x holds */
    }
  }
}

/* Node planes k .. k + planes - 1 of x (zeros outside the grid and, unless
 * full, on fixed dofs) into their ring slots: row r of a slot is node row
 * j0 - 1 + r from node i0 - 1 on. */
template <int DPN, bool MIRROR, typename R>
static __device__ __forceinline__ void dbd_stage_x(R (*xs)[dbd_tile<DPN, MIRROR>::PLANE],
                                                   const double *__restrict__ x,
                                                   const uint8_t *__restrict__ fixed, int full,
                                                   const grid_dims &g, int i0, int j0, int k,
                                                   int planes, int tid) {
  using T = dbd_tile<DPN, MIRROR>;
  for (int q = tid; q < planes * T::PLANE; q += T::THREADS) {
    const int s = q / T::PLANE, r = q % T::PLANE / T::ROW, p = q % T::ROW;
    const int kk = k + s, i = i0 - 1 + p / DPN, j = j0 - 1 + r;
    R v = 0;
    if (kk >= 0 && kk <= g.nz && j >= 0 && j <= g.ny && i >= 0 && i <= g.nx) {
      const int64_t dof = ((int64_t)kk * g.sz + (int64_t)j * g.sy + (i0 - 1)) * DPN + p;
      v = (R)x[dof]; /* loaded before the flag is known: the two loads overlap */
      if (!full && fixed[dof]) v = 0;
    }
    xs[(kk + T::XRING) % T::XRING][q % T::PLANE] = v;
  }
}

/* Element planes k .. k + planes - 1 of the moduli (zeros outside the grid)
 * into their ring slots: row r is element row j0 - 1 + r from element i0 - 1
 * on. */
template <int DPN, bool MIRROR, typename R>
static __device__ __forceinline__ void dbd_stage_moduli(
    R (*ms)[dbd_tile<DPN, MIRROR>::EPLANE], const double *__restrict__ moduli,
    const grid_dims &g, int i0, int j0, int k, int planes, int tid) {
  using T = dbd_tile<DPN, MIRROR>;
  for (int q = tid; q < planes * T::EPLANE; q += T::THREADS) {
    const int s = q / T::EPLANE, r = q % T::EPLANE / T::EROW, p = q % T::EROW;
    const int kk = k + s, i = i0 - 1 + p, j = j0 - 1 + r;
    ms[(kk + T::MRING) % T::MRING][q % T::EPLANE] =
        kk >= 0 && kk < g.nz && j >= 0 && j < g.ny && i >= 0 && i < g.nx
            ? (R)moduli[element_index(g, i, j, kk)]
            : (R)0;
  }
}

/* Block (BX, BY, DPN): thread (tx, ty, c) computes row c of the nodes
 * (i0 + tx, j0 + ty, k) for the block's planes k = k0 .. k0 + BZ - 1. */
template <int DPN, bool MIRROR, typename R>
static __global__ void __launch_bounds__(dbd_tile<DPN, MIRROR>::THREADS,
                                         dbd_tile<DPN, MIRROR>::MIN_BLOCKS)
    dbd_kernel(const double *__restrict__ x, double *__restrict__ y,
               const double *__restrict__ moduli, const uint8_t *__restrict__ fixed, int full,
               grid_dims g) {
  using T = dbd_tile<DPN, MIRROR>;
  __shared__ R xs[T::XRING][T::PLANE];
  __shared__ R ms[T::MRING][T::EPLANE];
  const int tx = threadIdx.x, ty = threadIdx.y, c = threadIdx.z;
  const int tid = tx + T::BX * (ty + T::BY * c);
  const int i0 = blockIdx.x * T::BX, j0 = blockIdx.y * T::BY, k0 = blockIdx.z * T::BZ;
  const int k_end = min(k0 + T::BZ, g.nz + 1);
  const int i = i0 + tx, j = j0 + ty;
  const bool inside = i <= g.nx && j <= g.ny;
  const int centre = (ty + 1) * T::ROW + (tx + 1) * DPN, ecentre = (ty + 1) * T::EROW + tx + 1;
  dbd_stage_x<DPN, MIRROR, R>(xs, x, fixed, full, g, i0, j0, k0 - 1, 2, tid);
  dbd_stage_moduli<DPN, MIRROR, R>(ms, moduli, g, i0, j0, k0 - 1, 1, tid);
  for (int k = k0; k < k_end; k += T::NZ) {
    dbd_stage_x<DPN, MIRROR, R>(xs, x, fixed, full, g, i0, j0, k + 1, T::NZ, tid);
    dbd_stage_moduli<DPN, MIRROR, R>(ms, moduli, g, i0, j0, k, T::NZ, tid);
    /* the rows of fixed dofs are x itself: skip the product when all are */
    int64_t dof[T::NZ];
    bool own[T::NZ], any = false;
#pragma unroll
    for (int n = 0; n < T::NZ; n++) {
      dof[n] = ((int64_t)(k + n) * g.sz + (int64_t)j * g.sy + i) * DPN + c;
      own[n] = inside && k + n < k_end;
      const bool identity = own[n] && !full && fixed[dof[n]];
      if (identity) y[dof[n]] = x[dof[n]];
      own[n] = own[n] && !identity;
      any = any || own[n];
    }
    __syncthreads();
    if (any) {
      const R *xc[T::XRING], *mc[T::MRING];
#pragma unroll
      for (int p = 0; p < T::XRING; p++) xc[p] = xs[(k - 1 + p + T::XRING) % T::XRING] + centre;
#pragma unroll
      for (int p = 0; p < T::MRING; p++)
        mc[p] = ms[(k - 1 + p + T::MRING) % T::MRING] + ecentre;
      R v[T::NZ];
      /* c is uniform across a warp: no divergence */
      if (DPN == 1 || c == 0)
        dbd_rows<DPN, MIRROR, 0, R>(xc, mc, v);
      else if (c == 1)
        dbd_rows<DPN, MIRROR, DPN == 3 ? 1 : 0, R>(xc, mc, v);
      else
        dbd_rows<DPN, MIRROR, DPN == 3 ? 2 : 0, R>(xc, mc, v);
#pragma unroll
      for (int n = 0; n < T::NZ; n++)
        if (own[n]) y[dof[n]] = v[n];
    }
    __syncthreads(); /* before the next planes overwrite the ring */
  }
}

/* ---- nbn: one thread per node, read-only cache ----------------------------- */

/* 128 threads of about 100 registers (elasticity): 4 blocks, 16 warps an SM;
 * capping the registers for more blocks spills */
enum { NBN_BX = 32, NBN_BY = 2, NBN_BZ = 2 };

/* The neighbour (i + dx, j + dy, k + dz)'s values of x, 0 on its fixed
 * dofs; neighbours outside the grid are clamped to a node inside (see
 * nbn_kernel). */
template <int DPN, typename R, bool PERIODIC>
static __device__ __forceinline__ void nbn_neighbour(const double *__restrict__ x,
                                                     const uint8_t *__restrict__ node_fixed,
                                                     int full, const grid_dims &g, int i, int j,
                                                     int k, int dx, int dy, int dz, R xw[DPN]) {
  const int kk = PERIODIC ? wrap_master(k + dz, g.nz) : min(max(k + dz, 0), g.nz);
  const int jj = PERIODIC ? wrap_master(j + dy, g.ny) : min(max(j + dy, 0), g.ny);
  const int ii = PERIODIC ? wrap_master(i + dx, g.nx) : min(max(i + dx, 0), g.nx);
  const int64_t w = (int64_t)kk * g.sz + (int64_t)jj * g.sy + ii;
  const unsigned wf = full ? 0u : __ldg(node_fixed + w);
#pragma unroll
  for (int d = 0; d < DPN; d++) {
    xw[d] = (R)__ldg(x + w * DPN + d); /* loaded before the flags are known */
    if ((wf >> d) & 1u) xw[d] = 0;
  }
}

/* The moduli of the 8 elements whose corner a node (i, j, k) is, 0 for
 * those outside the grid. */
template <typename R, bool PERIODIC>
static __device__ __forceinline__ void nbn_moduli(const double *__restrict__ moduli,
                                                  const grid_dims &g, int i, int j, int k,
                                                  R m[8]) {
#pragma unroll
  for (int a = 0; a < 8; a++) {
    int ei = i - corner_x(a), ej = j - corner_y(a), ek = k - corner_z(a);
    if (PERIODIC)
      ei = wrap_master(ei, g.nx), ej = wrap_master(ej, g.ny), ek = wrap_master(ek, g.nz);
    const bool exists = ei >= 0 && ei < g.nx && ej >= 0 && ej < g.ny && ek >= 0 && ek < g.nz;
    m[a] = exists ? (R)__ldg(moduli + element_index(g, ei, ej, ek)) : (R)0;
  }
}

/* Calls pair(a, b, xw) for each of the node's 27 neighbours (its x got by
 * fetch(dx, dy, dz, xw), 0 on fixed dofs) and each of the 8 elements a
 * whose corner the node is that has the neighbour as its corner b; a and b
 * are constants after unrolling. */
template <int DPN, typename R, typename Fetch, typename F>
static __device__ __forceinline__ void nbn_pairs(Fetch fetch, F pair) {
#pragma unroll
  for (int dz = -1; dz <= 1; dz++)
#pragma unroll
    for (int dy = -1; dy <= 1; dy++)
#pragma unroll
      for (int dx = -1; dx <= 1; dx++) {
        R xw[DPN];
        fetch(dx, dy, dz, xw);
#pragma unroll
        for (int a = 0; a < 8; a++) {
          const int bx = corner_x(a) + dx, by = corner_y(a) + dy, bz = corner_z(a) + dz;
          if (bx < 0 || bx > 1 || by < 0 || by > 1 || bz < 0 || bz > 1) continue;
          pair(a, corner_of(bx, by, bz), xw);
        }
      }
}

/* The node's rows of K x, element by element: the rows of Ke x_e of each
 * of the 8 elements whose corner a the node is (8 DPN partial sums),
 * then summed with their moduli m (got by moduli_of(m) after the loop, so
 * that they are not live through it). A void element adds nothing,
 * whatever x holds. */
template <int DPN, bool MIRROR, typename R, typename Fetch, typename Moduli>
static __device__ __forceinline__ void nbn_element_sums(Fetch fetch, Moduli moduli_of, R v[DPN]) {
  R t[8][DPN];
#pragma unroll
  for (int a = 0; a < 8; a++)
#pragma unroll
    for (int r = 0; r < DPN; r++) t[a][r] = 0;
  nbn_pairs<DPN, R>(fetch, [&](int a, int b, const R *xw) {
#pragma unroll
    for (int r = 0; r < DPN; r++)
#pragma unroll
      for (int d = 0; d < DPN; d++) t[a][r] += ke<DPN, MIRROR, R>(a, r, b, d) * xw[d];
  });
  R m[8];
  moduli_of(m);
#pragma unroll
  for (int r = 0; r < DPN; r++) {
    v[r] = 0;
#pragma unroll
    for (int a = 0; a < 8; a++)
      if (m[a] != 0) v[r] += m[a] * t[a][r];
  }
}

/* The same rows with each neighbour's x scaled by the element's modulus
 * first (DPN products more for every DPN^2 FMAs, and DPN running sums
 * instead of 8 DPN). A void element adds nothing, whatever x holds. */
template <int DPN, bool MIRROR, typename R, typename Fetch, typename Moduli>
static __device__ __forceinline__ void nbn_scaled_sums(Fetch fetch, Moduli moduli_of, R v[DPN]) {
  R m[8];
  moduli_of(m);
#pragma unroll
  for (int r = 0; r < DPN; r++) v[r] = 0;
  nbn_pairs<DPN, R>(fetch, [&](int a, int b, const R *xw) {
    R sw[DPN];
#pragma unroll
    for (int d = 0; d < DPN; d++) sw[d] = m[a] != 0 ? m[a] * xw[d] : (R)0;
#pragma unroll
    for (int r = 0; r < DPN; r++)
#pragma unroll
      for (int d = 0; d < DPN; d++) v[r] += ke<DPN, MIRROR, R>(a, r, b, d) * sw[d];
  });
}

/* All DPN rows of node (i, j, k). Neighbours outside the grid are clamped to
 * a node inside: they belong only to elements outside the grid, whose
 * modulus is taken as 0, so their values never count. */
template <int DPN, bool MIRROR, typename R, int MODE = ROW_PRODUCT, bool PERIODIC = false>
static __global__ void __launch_bounds__(NBN_BX *NBN_BY *NBN_BZ)
    nbn_kernel(const double *__restrict__ x, double *__restrict__ y,
               const double *__restrict__ moduli, const uint8_t *__restrict__ node_fixed,
               int full, grid_dims g, row_epilogue e = row_epilogue()) {
  const int i = blockIdx.x * NBN_BX + threadIdx.x, j = blockIdx.y * NBN_BY + threadIdx.y,
            k = blockIdx.z * NBN_BZ + threadIdx.z;
  if (i > g.nx || j > g.ny || k > g.nz) return;
  const int64_t node = (int64_t)k * g.sz + (int64_t)j * g.sy + i;
  const unsigned own = full ? 0u : __ldg(node_fixed + node);
  if (PERIODIC && (i == g.nx || j == g.ny || k == g.nz)) {
    /* an image: no element reaches it (they wrap to its master), so its
     * rows are x where fixed and 0 otherwise, as on the CPU */
#pragma unroll
    for (int c = 0; c < DPN; c++)
      row_out<MODE>(node * DPN + c, (own >> c) & 1u ? __ldg(x + node * DPN + c) : 0.0, x, y, e);
    return;
  }
  if (own == (1u << DPN) - 1) { /* every row is the identity */
#pragma unroll
    for (int c = 0; c < DPN; c++) row_out<MODE>(node * DPN + c, __ldg(x + node * DPN + c), x, y, e);
    return;
  }
  /* Two orders of the same sum: the fused smoothing step scaled by the
   * moduli first, 18 % faster on the H200 (0.385 against 0.468 ms at 256 x
   * 128 x 128), the products and residuals element by element (scaled, 3
   * to 18 % slower: docs/experiments.md). Periodic cells keep the CPU's
   * order: their short loose solves follow its designs to 1e-7 only so
   * (gpu_cuda_periodic). */
  const auto fetch = [&](int dx, int dy, int dz, R *xw) {
    nbn_neighbour<DPN, R, PERIODIC>(x, node_fixed, full, g, i, j, k, dx, dy, dz, xw);
  };
  const auto moduli_of = [&](R *m) { nbn_moduli<R, PERIODIC>(moduli, g, i, j, k, m); };
  R v[DPN];
  if constexpr (MODE == ROW_SMOOTH && !PERIODIC)
    nbn_scaled_sums<DPN, MIRROR, R>(fetch, moduli_of, v);
  else
    nbn_element_sums<DPN, MIRROR, R>(fetch, moduli_of, v);
#pragma unroll
  for (int r = 0; r < DPN; r++)
    row_out<MODE>(node * DPN + r, (own >> r) & 1u ? __ldg(x + node * DPN + r) : (double)v[r], x, y,
                  e);
}

/* ---- nbn staged: one thread per node, x in shared memory ------------------ */

/* A block owns BX x BY nodes of a plane and marches along z through BZ node
 * planes, as dbd does; each node plane of x (fixed dofs zeroed, zeros
 * outside the grid) and each element plane of the moduli is staged once,
 * into rings of planes, with one barrier a plane.
 *
 * float converts x on the way, so it stages through registers, before the
 * barrier: a plane two ahead is written while slower threads still read the
 * three before it, hence rings of five node and four element planes.
 *
 * double stages by asynchronous copies (cp.async), issued after the barrier
 * so that plane k + 2 lands while plane k is computed; the ring slot they
 * fill was last read before the barrier, so four node and three element
 * planes do. The copies hold no registers and the block no longer waits
 * at each barrier for global loads (0.280 against 0.301 ms at 256 x 128 x
 * 128 on the H200), although ptxas then takes 128 registers (4 blocks an SM
 * instead of 5; capped at 96 it spills and is slower). Blocks of 16 x 8
 * waste fewer threads than 32 x 4 on the usual 2^n + 1 nodes of a row; in
 * float they made the smoothing step slower (docs/experiments.md). */
template <typename R> struct nbs_tile {
  static constexpr bool ASYNC = std::is_same<R, double>::value;
  static constexpr int BX = ASYNC ? 16 : 32, BY = ASYNC ? 8 : 4, BZ = 8;
  static constexpr int THREADS = BX * BY;
  static constexpr int ROW = BX + 2, PLANE = (BY + 2) * ROW; /* staged nodes */
  static constexpr int EROW = BX + 1, EPLANE = (BY + 1) * EROW;
  static constexpr int XRING = ASYNC ? 4 : 5, MRING = ASYNC ? 3 : 4;
};

/* Blocks an SM should hold, for __launch_bounds__ (0: left to the compiler).
 * The float product and residual run fastest at 8 (64 registers); the
 * double product and residual spill below their 128 registers; the double
 * smoothing step, whose epilogue reads more operands, takes 162 left alone
 * (3 blocks) and runs faster at 4 blocks with a small spill; the float one
 * measured faster left alone (docs/experiments.md). */
template <typename R, int MODE> constexpr int nbs_min_blocks() {
  return sizeof(R) == 4 && MODE != ROW_SMOOTH ? 8 : sizeof(R) == 8 && MODE == ROW_SMOOTH ? 4 : 0;
}

/* Node plane k of x into its ring slot (row r of the slot: node row j0 - 1 +
 * r from node i0 - 1 on) and element plane k - 1 of the moduli into its. */
template <typename R>
static __device__ __forceinline__ void nbs_stage(R (*xs)[nbs_tile<R>::PLANE][3],
                                                 R (*ms)[nbs_tile<R>::EPLANE],
                                                 const double *__restrict__ x,
                                                 const double *__restrict__ moduli,
                                                 const uint8_t *__restrict__ node_fixed, int full,
                                                 const grid_dims &g, int i0, int j0, int k,
                                                 int tid) {
  using T = nbs_tile<R>;
  R(*xp)[3] = xs[(k + T::XRING) % T::XRING];
  for (int q = tid; q < T::PLANE; q += T::THREADS) {
    const int i = i0 - 1 + q % T::ROW, j = j0 - 1 + q / T::ROW;
    R v[3] = {0, 0, 0};
    if (k >= 0 && k <= g.nz && j >= 0 && j <= g.ny && i >= 0 && i <= g.nx) {
      const int64_t w = (int64_t)k * g.sz + (int64_t)j * g.sy + i;
      const unsigned f = full ? 0u : __ldg(node_fixed + w);
#pragma unroll
      for (int d = 0; d < 3; d++) {
        v[d] = (R)__ldg(x + w * 3 + d); /* loaded before the flags are known */
        if ((f >> d) & 1u) v[d] = 0;
      }
    }
#pragma unroll
    for (int d = 0; d < 3; d++) xp[q][d] = v[d];
  }
  R *mp = ms[(k - 1 + T::MRING) % T::MRING];
  for (int q = tid; q < T::EPLANE; q += T::THREADS) {
    const int i = i0 - 1 + q % T::EROW, j = j0 - 1 + q / T::EROW, ke = k - 1;
    mp[q] = ke >= 0 && ke < g.nz && j >= 0 && j < g.ny && i >= 0 && i < g.nx
                ? (R)__ldg(moduli + element_index(g, i, j, ke))
                : (R)0;
  }
}

/* nbs_stage for double, without registers: node plane k of x and element
 * plane k - 1 of the moduli copied straight into their ring slots by
 * asynchronous copies (zero-filled outside the grid), committed as one
 * group, so that the block computes while they land. Returns the fixed
 * flags of the thread's (at most two) staged nodes, a byte each, for
 * nbs_zero_fixed once the group has landed. */
static __device__ __forceinline__ unsigned nbs_stage_async(
    double (*xs)[nbs_tile<double>::PLANE][3], double (*ms)[nbs_tile<double>::EPLANE],
    const double *__restrict__ x, const double *__restrict__ moduli,
    const uint8_t *__restrict__ node_fixed, int full, const grid_dims &g, int i0, int j0, int k,
    int tid) {
  using T = nbs_tile<double>;
  static_assert(T::PLANE <= 2 * T::THREADS && T::EPLANE <= 2 * T::THREADS, "two nodes a thread");
  double(*xp)[3] = xs[(k + T::XRING) % T::XRING];
  unsigned flags = 0;
  for (int q = tid, n = 0; q < T::PLANE; q += T::THREADS, n++) {
    const int i = i0 - 1 + q % T::ROW, j = j0 - 1 + q / T::ROW;
    const bool in = k >= 0 && k <= g.nz && j >= 0 && j <= g.ny && i >= 0 && i <= g.nx;
    const int64_t w = in ? (int64_t)k * g.sz + (int64_t)j * g.sy + i : 0;
#pragma unroll
    for (int d = 0; d < 3; d++) __pipeline_memcpy_async(&xp[q][d], x + w * 3 + d, 8, in ? 0 : 8);
    if (in && !full) flags |= (unsigned)__ldg(node_fixed + w) << (8 * n);
  }
  double *mp = ms[(k - 1 + T::MRING) % T::MRING];
  for (int q = tid; q < T::EPLANE; q += T::THREADS) {
    const int i = i0 - 1 + q % T::EROW, j = j0 - 1 + q / T::EROW, ke = k - 1;
    const bool in = ke >= 0 && ke < g.nz && j >= 0 && j < g.ny && i >= 0 && i < g.nx;
    __pipeline_memcpy_async(mp + q, moduli + (in ? element_index(g, i, j, ke) : 0), 8,
                            in ? 0 : 8);
  }
  __pipeline_commit();
  return flags;
}

/* Zeroes the fixed dofs of the thread's staged nodes of node plane k, after
 * its copies have landed (the barrier that follows shows them to the
 * block). */
static __device__ __forceinline__ void nbs_zero_fixed(double (*xs)[nbs_tile<double>::PLANE][3],
                                                      int k, int tid, unsigned flags) {
  using T = nbs_tile<double>;
  double(*xp)[3] = xs[(k + T::XRING) % T::XRING];
  for (int q = tid; q < T::PLANE && flags; q += T::THREADS, flags >>= 8)
#pragma unroll
    for (int d = 0; d < 3; d++)
      if ((flags >> d) & 1u) xp[q][d] = 0;
}

/* The rows of nbn_kernel (elasticity, mirrored Ke, not periodic), the same
 * sums in the same order, so the same bits. */
template <typename R, int MODE = ROW_PRODUCT>
static __global__ void __launch_bounds__(nbs_tile<R>::THREADS, nbs_min_blocks<R, MODE>())
    nbs_kernel(const double *__restrict__ x, double *__restrict__ y,
               const double *__restrict__ moduli, const uint8_t *__restrict__ node_fixed,
               int full, grid_dims g, row_epilogue e = row_epilogue()) {
  using T = nbs_tile<R>;
  __shared__ R xs[T::XRING][T::PLANE][3];
  __shared__ R ms[T::MRING][T::EPLANE];
  const int tx = threadIdx.x, ty = threadIdx.y, tid = tx + T::BX * ty;
  const int i0 = blockIdx.x * T::BX, j0 = blockIdx.y * T::BY, k0 = blockIdx.z * T::BZ;
  const int k_end = min(k0 + T::BZ, g.nz + 1);
  const int i = i0 + tx, j = j0 + ty;
  const bool inside = i <= g.nx && j <= g.ny;
  const int centre = (ty + 1) * T::ROW + tx + 1, ecentre = (ty + 1) * T::EROW + tx + 1;
  /* double: plane k + 2's copies in flight while plane k is computed, its
   * fixed dofs zeroed once they have landed, before the next barrier */
  unsigned pending = 0; /* the fixed flags of plane k + 1, copies in flight */
  if constexpr (T::ASYNC) {
    const unsigned f0 = nbs_stage_async(xs, ms, x, moduli, node_fixed, full, g, i0, j0, k0 - 1, tid);
    const unsigned f1 = nbs_stage_async(xs, ms, x, moduli, node_fixed, full, g, i0, j0, k0, tid);
    pending = nbs_stage_async(xs, ms, x, moduli, node_fixed, full, g, i0, j0, k0 + 1, tid);
    __pipeline_wait_prior(1);
    nbs_zero_fixed(xs, k0 - 1, tid, f0);
    nbs_zero_fixed(xs, k0, tid, f1);
  } else {
    for (int k = k0 - 1; k <= k0 + 1; k++)
      nbs_stage<R>(xs, ms, x, moduli, node_fixed, full, g, i0, j0, k, tid);
  }
  for (int k = k0; k < k_end; k++) {
    if constexpr (T::ASYNC) {
      __pipeline_wait_prior(0);
      nbs_zero_fixed(xs, k + 1, tid, pending);
    } else if (k + 1 < k_end)
      nbs_stage<R>(xs, ms, x, moduli, node_fixed, full, g, i0, j0, k + 2, tid);
    __syncthreads();
    if constexpr (T::ASYNC)
      if (k + 1 < k_end)
        pending = nbs_stage_async(xs, ms, x, moduli, node_fixed, full, g, i0, j0, k + 2, tid);
    if (!inside) continue;
    const int64_t node = (int64_t)k * g.sz + (int64_t)j * g.sy + i;
    const unsigned own = full ? 0u : __ldg(node_fixed + node);
    if (own == 7u) { /* every row is the identity */
#pragma unroll
      for (int c = 0; c < 3; c++) row_out<MODE>(node * 3 + c, __ldg(x + node * 3 + c), x, y, e);
      continue;
    }
    const R(*xc[3])[3], *mc[2];
#pragma unroll
    for (int p = 0; p < 3; p++) xc[p] = xs[(k - 1 + p + T::XRING) % T::XRING] + centre;
#pragma unroll
    for (int p = 0; p < 2; p++) mc[p] = ms[(k - 1 + p + T::MRING) % T::MRING] + ecentre;
    const auto fetch = [&](int dx, int dy, int dz, R *xw) {
#pragma unroll
      for (int d = 0; d < 3; d++) xw[d] = xc[dz + 1][dy * T::ROW + dx][d];
    };
    const auto moduli_of = [&](R *m) {
#pragma unroll
      for (int a = 0; a < 8; a++)
        m[a] = mc[1 - corner_z(a)][-corner_y(a) * T::EROW - corner_x(a)];
    };
    R v[3];
    /* the double smoothing step sums as the product does: the same bits as
     * the product and update in two passes (periodic cells take those) */
    if constexpr (MODE == ROW_SMOOTH && !T::ASYNC)
      nbn_scaled_sums<3, true, R>(fetch, moduli_of, v);
    else
      nbn_element_sums<3, true, R>(fetch, moduli_of, v);
#pragma unroll
    for (int r = 0; r < 3; r++)
      row_out<MODE>(node * 3 + r, (own >> r) & 1u ? __ldg(x + node * 3 + r) : (double)v[r], x, y,
                    e);
  }
}

template <typename R, int MODE = ROW_PRODUCT>
static void launch_nbs(const vox_operator *op, const double *x, double *y, int full,
                       cudaStream_t stream, const row_epilogue &e = row_epilogue()) {
  using T = nbs_tile<R>;
  const grid_dims g = dims_of(op);
  const dim3 block(T::BX, T::BY),
      blocks(vox_cuda_blocks((size_t)g.nx + 1, T::BX), vox_cuda_blocks((size_t)g.ny + 1, T::BY),
             vox_cuda_blocks((size_t)g.nz + 1, T::BZ));
  nbs_kernel<R, MODE><<<blocks, block, 0, stream>>>(x, y, op->moduli, node_fixed(op), full, g, e);
}

/* ---- modes: element forces by the brick's reflection modes ---------------- */

/* The element products in the modes of the brick's reflections
 * (element_modes.h): Ke x_e = H B H x_e, the transforms' sums and 72
 * products an element instead of the 576 of the dense rows, so that the
 * product no longer waits on the FP64 units. Elasticity with the mirrored
 * Ke, on a plain grid or a periodic one (PERIODIC: the block's reach wraps
 * as nbn's neighbours do, node_on_axis).
 *
 * A thread owns a column of elements and a block EX x EY columns, marching
 * along z through the elements below and inside its BZ node planes; the
 * block's nodes are the (EX - 1) x (EY - 1) shared by four of its columns
 * (the outer columns are computed by two blocks). Each node plane of x
 * (fixed dofs zeroed, zeros outside the grid) is staged once in shared
 * memory, by asynchronous copies two planes ahead, and each element's
 * modulus and each node's fixed flags are loaded a step before they are
 * used: a thread's step has too few instructions to hide a load issued in
 * it. At element plane k a thread reads the four corners of the
 * element's top face (node plane k + 1) and turns them into the face's
 * modes; the bottom face's modes are those of the element below, kept in
 * registers, and the two give the element's eight modes (sum and
 * difference). B and the modulus act on them, the inverse transform gives
 * the eight corners' forces, and the four bottom ones plus the four top
 * ones of the element below are the column's forces on node plane k. The
 * warp's lanes are the columns of one row, so the forces on nodes shared
 * along x are summed by a shuffle; those shared along y go through shared
 * memory (two slots, one barrier a plane), where each node sums its two
 * halves. Every sum has one order: the same bits from run to run, though
 * not nbs's (another rounding of the same product). */
static __constant__ double c_modes[8 * 9];
static __constant__ float c_modes32[8 * 9];

template <typename R> static __device__ __forceinline__ R mode_block(int l);
template <> __device__ __forceinline__ double mode_block<double>(int l) { return c_modes[l]; }
template <> __device__ __forceinline__ float mode_block<float>(int l) { return c_modes32[l]; }

template <typename R> struct mbs_tile {
  /* element columns of a block (EX a warp) and node planes; double takes
   * 128 registers at 2 blocks an SM, float 128 threads a block */
  static constexpr bool DOUBLE = std::is_same<R, double>::value;
  static constexpr int EX = 32, EY = DOUBLE ? 8 : 4, BZ = 16, MIN_BLOCKS = DOUBLE ? 2 : 0;
  static constexpr int THREADS = EX * EY;
  static constexpr int BX = EX - 1, BY = EY - 1; /* the block's nodes in a plane */
  static constexpr int ROW = EX + 1, PLANE = ROW * (EY + 1); /* staged nodes */
  static constexpr int STAGED = (PLANE + THREADS - 1) / THREADS; /* a thread's */
  static_assert(STAGED <= 4, "a byte of fixed flags per staged node in 32 bits");
};

/* A block's node or element coordinate a along an axis of n elements as
 * the grid stores it, or false past the grid. On a periodic grid the one
 * before the first is the last master, and node n, the image of node 0,
 * takes its master's values (as wrap_master). */
template <bool PERIODIC> static __device__ __forceinline__ bool node_on_axis(int &a, int n) {
  if (!PERIODIC) return a >= 0 && a <= n;
  if (a < -1 || a > n) return false;
  a = a < 0 ? n - 1 : a == n ? 0 : a;
  return true;
}
template <bool PERIODIC> static __device__ __forceinline__ bool element_on_axis(int &a, int n) {
  if (!PERIODIC) return a >= 0 && a < n;
  if (a < -1 || a >= n) return false;
  a = a < 0 ? n - 1 : a;
  return true;
}

/* Node plane k of x (zeros outside the grid) copied asynchronously into
 * xp by component, as one committed group (empty past the block's planes:
 * the groups stay one a plane). Node q of the plane is (i0 - 1 + q % ROW,
 * j0 - 1 + q / ROW). Returns the fixed flags of the thread's staged nodes,
 * a byte each, for mbs_zero_fixed once the group has landed. */
template <typename R, bool PERIODIC>
static __device__ __forceinline__ unsigned mbs_stage(double (*xp)[mbs_tile<R>::PLANE],
                                                     const double *__restrict__ x,
                                                     const uint8_t *__restrict__ node_fixed,
                                                     int full, const grid_dims &g, int i0, int j0,
                                                     int k, bool wanted, int tid) {
  using T = mbs_tile<R>;
  unsigned flags = 0;
  if (wanted)
#pragma unroll
    for (int n = 0; n < T::STAGED; n++) {
      const int q = tid + n * T::THREADS;
      if (q >= T::PLANE) break;
      int i = i0 - 1 + q % T::ROW, j = j0 - 1 + q / T::ROW, kk = k;
      /* (the plain grid's test written out: through node_on_axis, ptxas
       * took 8 more registers for the float kernel, 9 % slower) */
      const bool in = PERIODIC ? node_on_axis<PERIODIC>(kk, g.nz) &&
                                     node_on_axis<PERIODIC>(j, g.ny) &&
                                     node_on_axis<PERIODIC>(i, g.nx)
                               : k >= 0 && k <= g.nz && j >= 0 && j <= g.ny && i >= 0 && i <= g.nx;
      const int64_t w = in ? (int64_t)kk * g.sz + (int64_t)j * g.sy + i : 0;
#pragma unroll
      for (int d = 0; d < 3; d++) __pipeline_memcpy_async(&xp[d][q], x + w * 3 + d, 8, in ? 0 : 8);
      if (in && !full) flags |= (unsigned)__ldg(node_fixed + w) << (8 * n);
    }
  __pipeline_commit();
  return flags;
}

/* Zeroes the fixed dofs of the thread's staged nodes of a plane, after its
 * copies have landed (the barrier that follows shows them to the block). */
template <typename R>
static __device__ __forceinline__ void mbs_zero_fixed(double (*xp)[mbs_tile<R>::PLANE],
                                                      unsigned flags, int tid) {
  using T = mbs_tile<R>;
  for (int q = tid; q < T::PLANE && flags; q += T::THREADS, flags >>= 8)
#pragma unroll
    for (int d = 0; d < 3; d++)
      if ((flags >> d) & 1u) xp[d][q] = 0;
}

/* The modes of the four corners of a face, f[x + 2y] (H of order 4). */
template <typename R> static __device__ __forceinline__ void face_modes(R (*f)[3]) {
#pragma unroll
  for (int d = 0; d < 3; d++) {
    const R s0 = f[0][d] + f[1][d], d0 = f[0][d] - f[1][d];
    const R s1 = f[2][d] + f[3][d], d1 = f[2][d] - f[3][d];
    f[0][d] = s0 + s1, f[1][d] = d0 + d1, f[2][d] = s0 - s1, f[3][d] = d0 - d1;
  }
}

template <typename R, int MODE = ROW_PRODUCT, bool PERIODIC = false>
static __global__ void __launch_bounds__(mbs_tile<R>::THREADS, mbs_tile<R>::MIN_BLOCKS)
    mbs_kernel(const double *__restrict__ x, double *__restrict__ y,
               const double *__restrict__ moduli, const uint8_t *__restrict__ node_fixed,
               int full, grid_dims g, row_epilogue e = row_epilogue()) {
  using T = mbs_tile<R>;
  /* node planes in a ring of three (plane k in slot (k + 3) % 3): a plane
   * is copied two steps before it is read */
  __shared__ double xs[3][3][T::PLANE];
  __shared__ R fs[2][6][T::THREADS]; /* a column's forces, summed along x */
  const int tx = threadIdx.x, ty = threadIdx.y, tid = tx + T::EX * ty;
  const int i0 = blockIdx.x * T::BX, j0 = blockIdx.y * T::BY, k0 = blockIdx.z * T::BZ;
  const int k_end = min(k0 + T::BZ, g.nz + 1); /* node planes k0 .. k_end - 1 */
  const int ie = i0 - 1 + tx, je = j0 - 1 + ty; /* the thread's column */
  int ce = ie, cj = je; /* as the grid stores it */
  const bool column = PERIODIC ? element_on_axis<PERIODIC>(ce, g.nx) &&
                                     element_on_axis<PERIODIC>(cj, g.ny)
                               : ie >= 0 && ie < g.nx && je >= 0 && je < g.ny;
  const bool owner = tx < T::BX && ty < T::BY && ie + 1 <= g.nx && je + 1 <= g.ny;
  const int corner0 = ty * T::ROW + tx; /* its top face's corner (0, 0) */
  const auto slot = [&](int kn) { return xs[(kn + 3) % 3]; };
  const auto face = [&](int kn, R(*f)[3]) { /* the modes of the face on node plane kn */
    const double(*xp)[T::PLANE] = slot(kn);
#pragma unroll
    for (int b = 0; b < 4; b++)
#pragma unroll
      for (int d = 0; d < 3; d++) f[b][d] = (R)xp[d][corner0 + (b >> 1) * T::ROW + (b & 1)];
    face_modes(f);
  };
  const auto modulus = [&](int k) {
    if (!PERIODIC)
      return column && k >= 0 && k < g.nz ? (R)__ldg(moduli + element_index(g, ie, je, k)) : (R)0;
    return column && element_on_axis<PERIODIC>(k, g.nz)
               ? (R)__ldg(moduli + element_index(g, ce, cj, k))
               : (R)0;
  };
  const auto stage = [&](int kn, bool wanted) { /* node plane kn, its fixed flags returned */
    return mbs_stage<R, PERIODIC>(slot(kn), x, node_fixed, full, g, i0, j0, kn, wanted, tid);
  };
  const unsigned f0 = stage(k0 - 1, true), f1 = stage(k0, true);
  unsigned pending = stage(k0 + 1, k0 + 1 <= k_end); /* plane k + 2's flags */
  R m_next = modulus(k0 - 1);
  __pipeline_wait_prior(1);
  mbs_zero_fixed<R>(slot(k0 - 1), f0, tid);
  mbs_zero_fixed<R>(slot(k0), f1, tid);
  __syncthreads();
  R below[4][3]; /* the modes of the element's bottom face */
  face(k0 - 1, below);
  __syncthreads(); /* node plane k0 - 1's slot is refilled next */
  R carry[4][3]; /* the top corners' forces of the element below */
#pragma unroll
  for (int b = 0; b < 4; b++)
#pragma unroll
    for (int d = 0; d < 3; d++) carry[b][d] = 0;
  for (int k = k0 - 1; k < k_end; k++) { /* element plane k */
    const unsigned staged = stage(k + 3, k + 3 <= k_end);
    const R m = m_next;
    m_next = modulus(k + 1);
    const int64_t node = (int64_t)k * g.sz + (int64_t)(je + 1) * g.sy + ie + 1;
    const unsigned own = owner && k >= k0 && !full ? __ldg(node_fixed + node) : 0u;
    R top[4][3], v[8][3];
    face(k + 1, top);
#pragma unroll
    for (int b = 0; b < 4; b++)
#pragma unroll
      for (int d = 0; d < 3; d++) {
        v[b][d] = below[b][d] + top[b][d], v[b + 4][d] = below[b][d] - top[b][d];
        below[b][d] = top[b][d];
      }
    R force[4][3]; /* on node plane k, corner x + 2y */
    if (m != 0) { /* a void element adds nothing, whatever x holds */
#pragma unroll
      for (int p = 0; p < 8; p++) { /* B by parity, in place */
        const R z0 = m * v[p ^ 1][0], z1 = m * v[p ^ 2][1], z2 = m * v[p ^ 4][2];
#pragma unroll
        for (int r = 0; r < 3; r++)
          v[p ^ (1 << r)][r] = mode_block<R>(9 * p + 3 * r) * z0 +
                               mode_block<R>(9 * p + 3 * r + 1) * z1 +
                               mode_block<R>(9 * p + 3 * r + 2) * z2;
      }
#pragma unroll
      for (int b = 0; b < 4; b++)
#pragma unroll
        for (int d = 0; d < 3; d++) {
          const R lo = v[b][d] + v[b + 4][d], hi = v[b][d] - v[b + 4][d];
          force[b][d] = lo, top[b][d] = hi;
        }
      face_modes(force); /* the corners (B carries H's scaling) */
      face_modes(top);
#pragma unroll
      for (int b = 0; b < 4; b++)
#pragma unroll
        for (int d = 0; d < 3; d++) {
          force[b][d] += carry[b][d];
          carry[b][d] = top[b][d];
        }
    } else {
#pragma unroll
      for (int b = 0; b < 4; b++)
#pragma unroll
        for (int d = 0; d < 3; d++) force[b][d] = carry[b][d], carry[b][d] = 0;
    }
    if (k >= k0) { /* node plane k is the block's: sum along x, then y */
      R(*fp)[T::THREADS] = fs[k & 1];
#pragma unroll
      for (int d = 0; d < 3; d++) {
        const R right0 = __shfl_down_sync(0xffffffffu, force[0][d], 1);
        const R right1 = __shfl_down_sync(0xffffffffu, force[2][d], 1);
        fp[d][tid] = force[1][d] + right0;
        fp[3 + d][tid] = force[3][d] + right1;
      }
    }
    __pipeline_wait_prior(1); /* node plane k + 2 has landed */
    mbs_zero_fixed<R>(slot(k + 2), pending, tid);
    pending = staged;
    __syncthreads();
    if (k < k0 || !owner) continue;
    if (PERIODIC && (ie + 1 == g.nx || je + 1 == g.ny || k == g.nz)) {
      /* an image: no element reaches it (they wrap to its master), so its
       * rows are x where fixed and 0 otherwise, as on the CPU */
#pragma unroll
      for (int r = 0; r < 3; r++)
        row_out<MODE>(node * 3 + r, (own >> r) & 1u ? __ldg(x + node * 3 + r) : 0.0, x, y, e);
      continue;
    }
    const R(*fp)[T::THREADS] = fs[k & 1];
#pragma unroll
    for (int r = 0; r < 3; r++) {
      const R sum = fp[3 + r][tid] + fp[r][tid + T::EX];
      row_out<MODE>(node * 3 + r, (own >> r) & 1u ? __ldg(x + node * 3 + r) : (double)sum, x, y,
                    e);
    }
  }
}

template <typename R, int MODE = ROW_PRODUCT>
static void launch_mbs(const vox_operator *op, const double *x, double *y, int full,
                       cudaStream_t stream, const row_epilogue &e = row_epilogue()) {
  using T = mbs_tile<R>;
  const grid_dims g = dims_of(op);
  const dim3 block(T::EX, T::EY),
      blocks(vox_cuda_blocks((size_t)g.nx + 1, T::BX), vox_cuda_blocks((size_t)g.ny + 1, T::BY),
             vox_cuda_blocks((size_t)g.nz + 1, T::BZ));
  if (op->grid.periodic)
    mbs_kernel<R, MODE, true>
        <<<blocks, block, 0, stream>>>(x, y, op->moduli, node_fixed(op), full, g, e);
  else
    mbs_kernel<R, MODE><<<blocks, block, 0, stream>>>(x, y, op->moduli, node_fixed(op), full, g, e);
}

/* ---- ebe: one thread per element, 8 colours ------------------------------- */

/* ye = Ke xe for one element. Generic: row by row, each row summed over the
 * columns in order, as the CPU backend does. MIRROR: each of the 64 DPN
 * entries of corner 0's rows is fetched once and used for the 8 corners it
 * stands for, with 8 DPN partial sums live (fetching per use, the compiler
 * keeps the fetched entries in registers instead, and spills). */
template <int DPN, bool MIRROR>
static __device__ __forceinline__ void element_product(const double *xe, double (*ye)[DPN]) {
  constexpr int NLOC = 8 * DPN;
#pragma unroll
  for (int a = 0; a < 8; a++)
#pragma unroll
    for (int r = 0; r < DPN; r++) ye[a][r] = 0;
  if (MIRROR) {
#pragma unroll
    for (int r = 0; r < DPN; r++)
#pragma unroll
      for (int b0 = 0; b0 < 8; b0++)
#pragma unroll
        for (int d = 0; d < DPN; d++) {
          const double k = c_ke[r * NLOC + b0 * DPN + d];
#pragma unroll
          for (int a = 0; a < 8; a++) {
            const double xv = xe[corner_mirror(a, b0) * DPN + d];
            if (DPN == 3 && (corner_coord(a, r) ^ corner_coord(a, d)))
              ye[a][r] -= k * xv;
            else
              ye[a][r] += k * xv;
          }
        }
  } else {
#pragma unroll
    for (int a = 0; a < 8; a++)
#pragma unroll
      for (int r = 0; r < DPN; r++)
#pragma unroll
        for (int b = 0; b < 8; b++)
#pragma unroll
          for (int d = 0; d < DPN; d++) ye[a][r] += ke<DPN, false>(a, r, b, d) * xe[b * DPN + d];
  }
}

enum { EBE_BX = 32, EBE_BY = 2, EBE_BZ = 2 };

/* y += m_e Ke x_e for the elements (ci + 2 u, cj + 2 v, ck + 2 w); y must be
 * cleared before colour 0. */
template <int DPN, bool MIRROR>
static __global__ void __launch_bounds__(EBE_BX *EBE_BY *EBE_BZ)
    ebe_kernel(const double *__restrict__ x, double *__restrict__ y,
               const double *__restrict__ moduli, const uint8_t *__restrict__ node_fixed,
               int full, grid_dims g, int ci, int cj, int ck) {
  constexpr int NLOC = 8 * DPN;
  const int i = 2 * (int)(blockIdx.x * EBE_BX + threadIdx.x) + ci;
  const int j = 2 * (int)(blockIdx.y * EBE_BY + threadIdx.y) + cj;
  const int k = 2 * (int)(blockIdx.z * EBE_BZ + threadIdx.z) + ck;
  if (i >= g.nx || j >= g.ny || k >= g.nz) return;
  const double m = __ldg(moduli + element_index(g, i, j, k));
  if (m == 0) return;
  const int64_t n0 = (int64_t)k * g.sz + (int64_t)j * g.sy + i;
  int64_t node[8];
  double xe[NLOC];
#pragma unroll
  for (int b = 0; b < 8; b++) {
    node[b] = n0 + corner_z(b) * g.sz + corner_y(b) * g.sy + corner_x(b);
    const unsigned f = full ? 0u : __ldg(node_fixed + node[b]);
#pragma unroll
    for (int d = 0; d < DPN; d++) {
      xe[b * DPN + d] = __ldg(x + node[b] * DPN + d); /* loaded before the flags are known */
      if ((f >> d) & 1u) xe[b * DPN + d] = 0;
    }
  }
  double ye[8][DPN];
  element_product<DPN, MIRROR>(xe, ye);
#pragma unroll
  for (int a = 0; a < 8; a++)
#pragma unroll
    for (int r = 0; r < DPN; r++) y[node[a] * DPN + r] += m * ye[a][r];
}

/* y = x on fixed dofs (the eliminated form, after ebe's scatter). */
static __global__ void fixed_rows_kernel(const double *__restrict__ x, double *__restrict__ y,
                                         const uint8_t *__restrict__ fixed, size_t n) {
  for (size_t d = blockIdx.x * (size_t)blockDim.x + threadIdx.x; d < n;
       d += (size_t)gridDim.x * blockDim.x)
    if (fixed[d]) y[d] = x[d];
}

/* ---- diagonal and element energies ----------------------------------------- */

enum { NODE_BX = 32, NODE_BY = 4, NODE_BZ = 1 };

/* d = sum over the elements around the node of m_e Ke[l][l]; 1 on fixed dofs. */
template <int DPN, bool PERIODIC = false>
static __global__ void diagonal_kernel(const double *__restrict__ moduli,
                                       const uint8_t *__restrict__ fixed, grid_dims g,
                                       double *__restrict__ diag) {
  const int i = blockIdx.x * NODE_BX + threadIdx.x, j = blockIdx.y * NODE_BY + threadIdx.y,
            k = blockIdx.z * NODE_BZ + threadIdx.z;
  if (i > g.nx || j > g.ny || k > g.nz) return;
  const int64_t node = (int64_t)k * g.sz + (int64_t)j * g.sy + i;
  /* a periodic grid's images get nothing from the elements */
  const bool image = PERIODIC && (i == g.nx || j == g.ny || k == g.nz);
  double v[DPN];
#pragma unroll
  for (int c = 0; c < DPN; c++) v[c] = 0;
#pragma unroll
  for (int a = 0; a < 8; a++) {
    int ei = i - corner_x(a), ej = j - corner_y(a), ek = k - corner_z(a);
    if (image) continue;
    if (PERIODIC)
      ei = wrap_master(ei, g.nx), ej = wrap_master(ej, g.ny), ek = wrap_master(ek, g.nz);
    if (ei < 0 || ei >= g.nx || ej < 0 || ej >= g.ny || ek < 0 || ek >= g.nz) continue;
    const double m = moduli[element_index(g, ei, ej, ek)];
#pragma unroll
    for (int c = 0; c < DPN; c++) v[c] += m * ke<DPN, false>(a, c, a, c);
  }
#pragma unroll
  for (int c = 0; c < DPN; c++) diag[node * DPN + c] = fixed[node * DPN + c] ? 1.0 : v[c];
}

/* energy_e (+)= u_e' Ke u_e, summed in the CPU backend's order (generic Ke). */
template <int DPN, bool MIRROR, bool PERIODIC = false>
static __global__ void energy_kernel(const double *__restrict__ u, grid_dims g, int accumulate,
                                     double *__restrict__ energy) {
  constexpr int NLOC = 8 * DPN;
  const int i = blockIdx.x * NODE_BX + threadIdx.x, j = blockIdx.y * NODE_BY + threadIdx.y,
            k = blockIdx.z * NODE_BZ + threadIdx.z;
  if (i >= g.nx || j >= g.ny || k >= g.nz) return;
  const int64_t n0 = (int64_t)k * g.sz + (int64_t)j * g.sy + i;
  double ue[NLOC];
#pragma unroll
  for (int b = 0; b < 8; b++) {
    const int64_t node = PERIODIC ? element_node(g, i, j, k, b)
                                  : n0 + corner_z(b) * g.sz + corner_y(b) * g.sy + corner_x(b);
#pragma unroll
    for (int d = 0; d < DPN; d++) ue[b * DPN + d] = __ldg(u + node * DPN + d);
  }
  double ku[8][DPN];
  element_product<DPN, MIRROR>(ue, ku);
  double s = 0;
#pragma unroll
  for (int a = 0; a < 8; a++)
#pragma unroll
    for (int r = 0; r < DPN; r++) s += ue[a * DPN + r] * ku[a][r];
  const int64_t e = element_index(g, i, j, k);
  energy[e] = accumulate ? energy[e] + s : s;
}

/* ---- host ------------------------------------------------------------------ */

/* Fills the per-node fixed bits after the per-dof flags. */
static __global__ void node_fixed_kernel(uint8_t *fixed, int dpn, size_t n_nodes) {
  for (size_t n = blockIdx.x * (size_t)blockDim.x + threadIdx.x; n < n_nodes;
       n += (size_t)gridDim.x * blockDim.x) {
    unsigned bits = 0;
    for (int c = 0; c < dpn; c++) bits |= (fixed[n * dpn + c] != 0) << c;
    fixed[dpn * n_nodes + n] = (uint8_t)bits;
  }
}

enum { THREADS = 256, MAX_BLOCKS = 4096 };

static unsigned flat_blocks(size_t n) {
  const unsigned b = vox_cuda_blocks(n, THREADS);
  return b < 1 ? 1 : b > (unsigned)MAX_BLOCKS ? (unsigned)MAX_BLOCKS : b;
}

/* Whether the elasticity Ke has the mirror symmetries of the box, to within
 * the rounding of its computation (the quadrature leaves mirrored entries a
 * few ulps of max |Ke| apart; the kernels then use the entries of corner 0's
 * rows, a difference of the order of the rounding of the product itself). */
static bool mirror_symmetric(const vox_operator *op) {
  if (op->dpn != 3) return false;
  const int nloc = op->nloc;
  double big = 0;
  for (int l = 0; l < nloc * nloc; l++) big = fmax(big, fabs(op->ke_host[l]));
  const double tol = 1e-14 * big;
  for (int a = 0; a < 8; a++)
    for (int b = 0; b < 8; b++)
      for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++) {
          const double v = op->ke_host[(a * 3 + r) * nloc + b * 3 + c];
          double w = op->ke_host[r * nloc + corner_mirror(a, b) * 3 + c];
          if (corner_coord(a, r) ^ corner_coord(a, c)) w = -w;
          if (!(fabs(v - w) <= tol)) return false;
        }
  return true;
}

/* Puts op's Ke into c_ke unless it is there already; *mirrored tells whether
 * the kernels may read it through its mirror symmetries. The copy is ordered
 * on the default stream after the kernels that still read the previous one. */
static vox_status load_ke(vox_backend *be, const vox_operator *op, bool *mirrored) {
  if (ke_loaded != op) {
    ke_loaded = NULL;
    CUDA_TRY(be,
             cudaMemcpyToSymbolAsync(c_ke, op->ke_host,
                                     (size_t)op->nloc * (size_t)op->nloc * sizeof(double), 0,
                                     cudaMemcpyHostToDevice),
             "loading the element matrix into constant memory");
    CUDA_TRY(be,
             cudaMemcpyToSymbolAsync(c_ke32, op->ke32_host,
                                     (size_t)op->nloc * (size_t)op->nloc * sizeof(float), 0,
                                     cudaMemcpyHostToDevice),
             "loading the single-precision element matrix into constant memory");
    ke_loaded = op;
    ke_loaded_mirrored = mirror_symmetric(op);
    if (ke_loaded_mirrored) {
      /* the modes' blocks: mirror symmetry to 1e-14 of the largest entry
       * keeps the couplings across parities below element_modes.h's 1e-13 */
      vox_element_modes modes;
      vox_element_modes_set(op->ke_host, &modes);
      CUDA_TRY(be, cudaMemcpyToSymbolAsync(c_modes, modes.block, sizeof modes.block, 0,
                                           cudaMemcpyHostToDevice),
               "loading the element matrix's modes into constant memory");
      CUDA_TRY(be, cudaMemcpyToSymbolAsync(c_modes32, modes.block32, sizeof modes.block32, 0,
                                           cudaMemcpyHostToDevice),
               "loading the element matrix's modes into constant memory");
    }
  }
  *mirrored = ke_loaded_mirrored;
  return VOX_OK;
}

vox_status vox_cuda_op_prepare(vox_backend *be, vox_operator *op) {
  bool mirrored;
  return load_ke(be, op, &mirrored);
}

vox_status vox_cuda_op_create(vox_backend *be, const vox_operator_desc *desc, vox_operator **out) {
  *out = NULL;
  const vox_grid *grid = &desc->grid;
  const int dpn = desc->dofs_per_node;
  if (dpn != 1 && dpn != 3)
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT,
                     "operator: %d dofs per node (1 or 3 expected)", dpn);
  /* node coordinates are int; the y and z of a launch grid stay below 65536 */
  if (grid->nx < 1 || grid->ny < 1 || grid->nz < 1 || grid->nx >= INT_MAX / 2 ||
      grid->ny >= 65535 || grid->nz >= 65535)
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT,
                     "operator: a grid of %lld x %lld x %lld elements is outside what the CUDA "
                     "kernels take (1 .. 65534 along y and z)",
                     (long long)grid->nx, (long long)grid->ny, (long long)grid->nz);
  /* auto on a periodic grid: the kernels that wrap, modes for elasticity */
  const vox_kernel kernel = be->kernel != VOX_KERNEL_AUTO ? be->kernel
                            : grid->periodic && dpn == 1  ? VOX_KERNEL_NBN
                                                          : default_kernel(desc->dofs_per_node);
  if (kernel != VOX_KERNEL_DBD && kernel != VOX_KERNEL_NBN && kernel != VOX_KERNEL_EBE &&
      kernel != VOX_KERNEL_MODES)
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT, "operator: unknown kernel %d",
                     (int)kernel);
  /* only nbn wraps its indices (the PERIODIC instances); the multigrid
   * levels of a periodic grid keep even sizes (vox_mg_levels_for) */
  if (grid->periodic && kernel != VOX_KERNEL_NBN && kernel != VOX_KERNEL_MODES)
    return vox_error(be->ctx, VOX_ERR_UNSUPPORTED,
                     "operator: periodic cells run on the CUDA backend with the nbn or modes "
                     "kernel only (--kernel nbn, modes or auto), not %s",
                     vox_kernel_name(kernel));
  if (grid->periodic && (grid->nx % 2 || grid->ny % 2 || grid->nz % 2))
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT,
                     "operator: a periodic grid of %lld x %lld x %lld elements (even sizes "
                     "expected)",
                     (long long)grid->nx, (long long)grid->ny, (long long)grid->nz);

  vox_operator *op = (vox_operator *)calloc(1, sizeof *op);
  if (!op) return vox_error(be->ctx, VOX_ERR_NO_MEMORY, "out of memory");
  op->grid = *grid;
  op->dpn = dpn;
  op->nloc = 8 * dpn;
  op->kernel = kernel;
  op->first_layer_shared = desc->first_layer_shared;
  const size_t n_nodes = (size_t)vox_grid_nodes(grid);
  op->n_dofs = n_nodes * (size_t)dpn;
  op->n_elements = (size_t)vox_grid_elements(grid);
  const size_t ke_bytes = (size_t)op->nloc * (size_t)op->nloc * sizeof(double);
  memcpy(op->ke_host, desc->ke, ke_bytes);
  if (grid->periodic && desc->dof_fixed) /* the Galerkin product takes free masters only */
    for (int64_t k = 0; k < grid->nz && !op->periodic_masters_fixed; k++)
      for (int64_t j = 0; j < grid->ny; j++)
        for (int64_t i = 0; i < grid->nx; i++)
          for (int c = 0; c < dpn; c++)
            op->periodic_masters_fixed |=
                desc->dof_fixed[((k * (grid->ny + 1) + j) * (grid->nx + 1) + i) * dpn + c] != 0;
  for (int l = 0; l < op->nloc * op->nloc; l++) op->ke32_host[l] = (float)op->ke_host[l];
  /* per-dof flags, then per-node bits */
  const size_t fixed_bytes = op->n_dofs + n_nodes;
  vox_status s = vox_cuda_alloc(be, (void **)&op->ke, ke_bytes, "the element matrix");
  if (s == VOX_OK && desc->dof_fixed)
    s = vox_cuda_alloc(be, (void **)&op->fixed, fixed_bytes, "the fixed-dof flags");
  if (s == VOX_OK)
    s = vox_cuda_check(be, cudaMemcpy(op->ke, op->ke_host, ke_bytes, cudaMemcpyHostToDevice),
                       "uploading the element matrix");
  if (s == VOX_OK && desc->dof_fixed)
    s = vox_cuda_check(
        be, cudaMemcpy(op->fixed, desc->dof_fixed, op->n_dofs, cudaMemcpyHostToDevice),
        "uploading the fixed-dof flags");
  if (s == VOX_OK && desc->dof_fixed) {
    node_fixed_kernel<<<flat_blocks(n_nodes), THREADS>>>(op->fixed, dpn, n_nodes);
    s = vox_cuda_check(be, cudaGetLastError(), "the per-node fixed flags kernel");
  }
  if (s == VOX_OK && desc->n_springs > 0) {
    const size_t n = desc->n_springs;
    s = vox_cuda_alloc(be, (void **)&op->spring_dof, n * sizeof(size_t), "the spring dofs");
    if (s == VOX_OK)
      s = vox_cuda_alloc(be, (void **)&op->spring_k, n * sizeof(double), "the spring stiffnesses");
    if (s == VOX_OK)
      s = vox_cuda_check(be,
                         cudaMemcpy(op->spring_dof, desc->spring_dof, n * sizeof(size_t),
                                    cudaMemcpyHostToDevice),
                         "uploading the spring dofs");
    if (s == VOX_OK)
      s = vox_cuda_check(
          be, cudaMemcpy(op->spring_k, desc->spring_k, n * sizeof(double), cudaMemcpyHostToDevice),
          "uploading the spring stiffnesses");
    if (s == VOX_OK) op->n_springs = n;
  }
  if (s != VOX_OK) {
    vox_cuda_op_destroy(be, op);
    return s;
  }
  *out = op;
  return VOX_OK;
}

void vox_cuda_op_destroy(vox_backend *be, vox_operator *op) {
  if (!op) return;
  if (ke_loaded == op) ke_loaded = NULL; /* a new operator may get this address */
  vox_cuda_free(op->ke);
  vox_cuda_free(op->fixed);
  vox_cuda_free(op->spring_dof);
  vox_cuda_free(op->spring_k);
  free(op);
}

vox_status vox_cuda_op_set_moduli(vox_backend *be, vox_operator *op, const vox_vec *moduli) {
  if (moduli->n < op->n_elements)
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT,
                     "operator: %zu moduli for %zu elements", moduli->n, op->n_elements);
  op->moduli = moduli->data;
  return VOX_OK;
}

/* The launches of one K u (without ebe's clearing and fixed rows), with the
 * dbd and nbn products computed in R (ebe always in double). */
template <int DPN, bool MIRROR, typename R>
static void launch_apply(const vox_operator *op, const double *x, double *y, int full,
                         cudaStream_t stream) {
  const grid_dims g = dims_of(op);
  const bool by_node = op->kernel == VOX_KERNEL_NBN || op->kernel == VOX_KERNEL_MODES;
  if (op->kernel == VOX_KERNEL_MODES && DPN == 3 && MIRROR) {
    launch_mbs<R>(op, x, y, full, stream);
  } else if (by_node && op->grid.periodic) {
    const dim3 block(NBN_BX, NBN_BY, NBN_BZ);
    nbn_kernel<DPN, MIRROR, R, ROW_PRODUCT, true>
        <<<cover(g.nx + 1, g.ny + 1, g.nz + 1, block), block, 0, stream>>>(
            x, y, op->moduli, node_fixed(op), full, g);
  } else if (op->kernel == VOX_KERNEL_NBN && DPN == 3 && MIRROR) {
    launch_nbs<R>(op, x, y, full, stream);
  } else if (by_node) {
    const dim3 block(NBN_BX, NBN_BY, NBN_BZ);
    nbn_kernel<DPN, MIRROR, R><<<cover(g.nx + 1, g.ny + 1, g.nz + 1, block), block, 0, stream>>>(
        x, y, op->moduli, node_fixed(op), full, g);
  } else if (op->kernel == VOX_KERNEL_EBE) {
    const dim3 block(EBE_BX, EBE_BY, EBE_BZ);
    for (int colour = 0; colour < 8; colour++) {
      const int ci = colour & 1, cj = (colour >> 1) & 1, ck = colour >> 2;
      const int64_t ex = (g.nx - ci + 1) / 2, ey = (g.ny - cj + 1) / 2, ez = (g.nz - ck + 1) / 2;
      if (ex == 0 || ey == 0 || ez == 0) continue; /* a grid one element thick */
      ebe_kernel<DPN, MIRROR><<<cover(ex, ey, ez, block), block, 0, stream>>>(
          x, y, op->moduli, node_fixed(op), full, g, ci, cj, ck);
    }
  } else {
    using T = dbd_tile<DPN, MIRROR>;
    const dim3 block(T::BX, T::BY, DPN);
    const dim3 blocks(vox_cuda_blocks((size_t)g.nx + 1, T::BX),
                      vox_cuda_blocks((size_t)g.ny + 1, T::BY),
                      vox_cuda_blocks((size_t)g.nz + 1, T::BZ));
    dbd_kernel<DPN, MIRROR, R><<<blocks, block, 0, stream>>>(x, y, op->moduli, op->fixed, full, g);
  }
}

/* y_d += k x_d (or d_d += k with x NULL) on the spring dofs: distinct dofs,
 * so no atomics. */
static __global__ void springs_kernel(const size_t *__restrict__ dof, const double *__restrict__ k,
                                      size_t n, const double *__restrict__ x,
                                      double *__restrict__ y) {
  VOX_GRID_STRIDE(i, n) y[dof[i]] += k[i] * (x ? x[dof[i]] : 1.0);
}

static vox_status add_springs(vox_backend *be, const vox_operator *op, const double *x,
                              double *y) {
  if (op->n_springs == 0) return VOX_OK;
  springs_kernel<<<vox_cuda_grid(op->n_springs), VOX_CUDA_THREADS, 0, vox_cuda_stream(be)>>>(
      op->spring_dof, op->spring_k, op->n_springs, x, y);
  CUDA_LAUNCHED(be, "the springs of K u");
  return VOX_OK;
}

vox_status vox_cuda_op_apply(vox_backend *be, vox_operator *op, const vox_vec *xv, vox_vec *yv,
                             int flags) {
  const int full = (flags & VOX_APPLY_FULL) != 0;
  const bool single = (flags & VOX_APPLY_SINGLE) && op->kernel != VOX_KERNEL_EBE;
  TRY(vox_cuda_op_check_fixed(be, op, "a product"));
  if (!op->moduli)
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT, "operator: applied before its moduli");
  bool mirrored;
  TRY(load_ke(be, op, &mirrored));
  const double *x = xv->data;
  double *y = yv->data;
  cudaStream_t stream = vox_cuda_stream(be); /* a recorded multigrid cycle's */
  if (op->kernel == VOX_KERNEL_EBE)
    CUDA_TRY(be, cudaMemsetAsync(y, 0, op->n_dofs * sizeof *y, stream), "clearing K u");
  if (single) {
    if (op->dpn == 1)
      launch_apply<1, false, float>(op, x, y, full, stream);
    else if (mirrored)
      launch_apply<3, true, float>(op, x, y, full, stream);
    else
      launch_apply<3, false, float>(op, x, y, full, stream);
  } else {
    if (op->dpn == 1)
      launch_apply<1, false, double>(op, x, y, full, stream);
    else if (mirrored)
      launch_apply<3, true, double>(op, x, y, full, stream);
    else
      launch_apply<3, false, double>(op, x, y, full, stream);
  }
  CUDA_LAUNCHED(be, op->kernel == VOX_KERNEL_NBN     ? "the node-by-node K u kernel"
                    : op->kernel == VOX_KERNEL_EBE   ? "the element-by-element K u kernel"
                    : op->kernel == VOX_KERNEL_MODES ? "the reflection modes' K u kernel"
                                                     : "the dof-by-dof K u kernel");
  if (op->kernel == VOX_KERNEL_EBE && !full) {
    fixed_rows_kernel<<<flat_blocks(op->n_dofs), THREADS, 0, stream>>>(x, y, op->fixed, op->n_dofs);
    CUDA_LAUNCHED(be, "the fixed rows of K u");
  }
  return add_springs(be, op, x, y);
}

/* ---- fused fine-level steps of the multigrid (op->smooth, op->residual) ---- */

/* nbn with the epilogue in the kernel (elasticity with the mirrored Ke and
 * no springs: the multigrid's fine level on every voxfe grid but a
 * mechanism's); any other operator stores its product in out (springs
 * included) and finishes in a second pass. Fusing saves a pass over the
 * fine vectors. A periodic cell's double smoothing step takes the two
 * passes: nbn_kernel's registers are its limit already, and the update's
 * operands add to them (docs/experiments.md). */
template <int MODE>
static vox_status fused_apply(vox_backend *be, vox_operator *op, const vox_vec *xv, vox_vec *out,
                              const row_epilogue &e, int flags, const char *what) {
  TRY(vox_cuda_op_check_fixed(be, op, what));
  if (!op->moduli)
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT, "operator: applied before its moduli");
  bool mirrored;
  TRY(load_ke(be, op, &mirrored));
  const int full = (flags & VOX_APPLY_FULL) != 0;
  const bool single = (flags & VOX_APPLY_SINGLE) != 0;
  /* springs (mechanisms) are added by op->apply's own pass, which the fused
   * kernel would have to follow: such an operator takes the two passes */
  if (op->kernel == VOX_KERNEL_MODES && op->dpn == 3 && mirrored && op->n_springs == 0) {
    cudaStream_t stream = vox_cuda_stream(be); /* a recorded multigrid cycle's */
    if (single)
      launch_mbs<float, MODE>(op, xv->data, out->data, full, stream, e);
    else
      launch_mbs<double, MODE>(op, xv->data, out->data, full, stream, e);
    CUDA_LAUNCHED(be, what);
    return VOX_OK;
  }
  if (op->kernel == VOX_KERNEL_NBN && op->dpn == 3 && mirrored && op->n_springs == 0 &&
      (single || MODE != ROW_SMOOTH || !op->grid.periodic)) {
    cudaStream_t stream = vox_cuda_stream(be); /* a recorded multigrid cycle's */
    if (!op->grid.periodic) {
      if (single)
        launch_nbs<float, MODE>(op, xv->data, out->data, full, stream, e);
      else
        launch_nbs<double, MODE>(op, xv->data, out->data, full, stream, e);
    } else {
      const grid_dims g = dims_of(op);
      const dim3 block(NBN_BX, NBN_BY, NBN_BZ),
          blocks = cover(g.nx + 1, g.ny + 1, g.nz + 1, block);
      if (single)
        nbn_kernel<3, true, float, MODE, true><<<blocks, block, 0, stream>>>(
            xv->data, out->data, op->moduli, node_fixed(op), full, g, e);
      else if constexpr (MODE != ROW_SMOOTH)
        nbn_kernel<3, true, double, MODE, true><<<blocks, block, 0, stream>>>(
            xv->data, out->data, op->moduli, node_fixed(op), full, g, e);
    }
    CUDA_LAUNCHED(be, what);
    return VOX_OK;
  }
  TRY(vox_cuda_op_apply(be, op, xv, out, flags));
  return vox_cuda_finish_rows<MODE>(be, xv, out, e, what);
}

vox_status vox_cuda_op_smooth(vox_backend *be, vox_operator *op, const vox_vec *b,
                              const vox_vec *x, const vox_vec *inv_diag, double alpha,
                              double beta, vox_vec *d, vox_vec *x_out, int flags) {
  const row_epilogue e = {b->data, inv_diag->data, alpha, beta, d ? d->data : NULL};
  return fused_apply<ROW_SMOOTH>(be, op, x, x_out, e, flags, "the fused smoothing step");
}

vox_status vox_cuda_op_residual(vox_backend *be, vox_operator *op, const vox_vec *b,
                                const vox_vec *x, vox_vec *r, int flags) {
  const row_epilogue e = {b->data, NULL, 0, 0, NULL};
  return fused_apply<ROW_RESIDUAL>(be, op, x, r, e, flags, "the fused residual");
}

static __global__ void zero_fixed_kernel(const uint8_t *__restrict__ fixed, double *__restrict__ v,
                                         size_t n) {
  VOX_GRID_STRIDE(d, n) if (fixed[d]) v[d] = 0;
}

vox_status vox_cuda_op_zero_fixed(vox_backend *be, vox_operator *op, vox_vec *v) {
  TRY(vox_cuda_op_check_fixed(be, op, "zeroing the fixed dofs"));
  zero_fixed_kernel<<<vox_cuda_grid(op->n_dofs), VOX_CUDA_THREADS>>>(op->fixed, v->data,
                                                                     op->n_dofs);
  CUDA_LAUNCHED(be, "zeroing the fixed dofs");
  return VOX_OK;
}

vox_status vox_cuda_op_diagonal(vox_backend *be, vox_operator *op, vox_vec *d) {
  TRY(vox_cuda_op_check_fixed(be, op, "the diagonal"));
  if (!op->moduli)
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT, "operator: diagonal before its moduli");
  bool mirrored;
  TRY(load_ke(be, op, &mirrored));
  const grid_dims g = dims_of(op);
  const dim3 block(NODE_BX, NODE_BY, NODE_BZ);
  const dim3 blocks = cover(g.nx + 1, g.ny + 1, g.nz + 1, block);
  if (op->grid.periodic && op->dpn == 3)
    diagonal_kernel<3, true><<<blocks, block>>>(op->moduli, op->fixed, g, d->data);
  else if (op->grid.periodic)
    diagonal_kernel<1, true><<<blocks, block>>>(op->moduli, op->fixed, g, d->data);
  else if (op->dpn == 3)
    diagonal_kernel<3><<<blocks, block>>>(op->moduli, op->fixed, g, d->data);
  else
    diagonal_kernel<1><<<blocks, block>>>(op->moduli, op->fixed, g, d->data);
  CUDA_LAUNCHED(be, "the operator diagonal kernel");
  return add_springs(be, op, NULL, d->data);
}

vox_status vox_cuda_op_element_energy(vox_backend *be, vox_operator *op, const vox_vec *u,
                                      vox_vec *energy, int accumulate) {
  bool mirrored;
  TRY(load_ke(be, op, &mirrored));
  const grid_dims g = dims_of(op);
  const dim3 block(NODE_BX, NODE_BY, NODE_BZ);
  const dim3 blocks = cover(g.nx, g.ny, g.nz, block);
  if (op->grid.periodic && op->dpn == 1)
    energy_kernel<1, false, true><<<blocks, block>>>(u->data, g, accumulate, energy->data);
  else if (op->grid.periodic && mirrored)
    energy_kernel<3, true, true><<<blocks, block>>>(u->data, g, accumulate, energy->data);
  else if (op->grid.periodic)
    energy_kernel<3, false, true><<<blocks, block>>>(u->data, g, accumulate, energy->data);
  else if (op->dpn == 1)
    energy_kernel<1, false><<<blocks, block>>>(u->data, g, accumulate, energy->data);
  else if (mirrored)
    energy_kernel<3, true><<<blocks, block>>>(u->data, g, accumulate, energy->data);
  else
    energy_kernel<3, false><<<blocks, block>>>(u->data, g, accumulate, energy->data);
  CUDA_LAUNCHED(be, "the element energy kernel");
  return VOX_OK;
}

/* ---- homogenization of a periodic cell (op->strain_load, op->strain_energy) --- */

/* Ke chi, the element load of a unit macro strain (nloc values). */
struct element_vector {
  double v[24];
};

/* f = sum_e m_e Ke chi gathered per node from the elements around it (0 on
 * fixed dofs and on a periodic grid's images), the CPU's scatter as a
 * gather: no colours, no atomics. */
template <int DPN, bool PERIODIC>
static __global__ void strain_load_kernel(const double *__restrict__ moduli,
                                          const uint8_t *__restrict__ fixed, grid_dims g,
                                          element_vector kchi, double *__restrict__ f) {
  const int i = blockIdx.x * NODE_BX + threadIdx.x, j = blockIdx.y * NODE_BY + threadIdx.y,
            k = blockIdx.z * NODE_BZ + threadIdx.z;
  if (i > g.nx || j > g.ny || k > g.nz) return;
  const int64_t node = (int64_t)k * g.sz + (int64_t)j * g.sy + i;
  const bool image = PERIODIC && (i == g.nx || j == g.ny || k == g.nz);
  double v[DPN];
#pragma unroll
  for (int c = 0; c < DPN; c++) v[c] = 0;
#pragma unroll
  for (int a = 0; a < 8; a++) {
    int ei = i - corner_x(a), ej = j - corner_y(a), ek = k - corner_z(a);
    if (image) continue;
    if (PERIODIC)
      ei = wrap_master(ei, g.nx), ej = wrap_master(ej, g.ny), ek = wrap_master(ek, g.nz);
    if (ei < 0 || ei >= g.nx || ej < 0 || ej >= g.ny || ek < 0 || ek >= g.nz) continue;
    const double m = __ldg(moduli + element_index(g, ei, ej, ek));
    if (m == 0) continue;
#pragma unroll
    for (int c = 0; c < DPN; c++) v[c] += m * kchi.v[a * DPN + c];
  }
#pragma unroll
  for (int c = 0; c < DPN; c++) f[node * DPN + c] = fixed[node * DPN + c] ? 0.0 : v[c];
}

vox_status vox_cuda_op_strain_load(vox_backend *be, vox_operator *op, const double *chi,
                                   vox_vec *f) {
  TRY(vox_cuda_op_check_fixed(be, op, "a strain load"));
  if (!op->moduli)
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT, "operator: strain load before its moduli");
  const int nloc = op->nloc;
  element_vector kchi = {};
  for (int r = 0; r < nloc; r++)
    for (int c = 0; c < nloc; c++) kchi.v[r] += op->ke_host[r * nloc + c] * chi[c];
  const grid_dims g = dims_of(op);
  const dim3 block(NODE_BX, NODE_BY, NODE_BZ);
  const dim3 blocks = cover(g.nx + 1, g.ny + 1, g.nz + 1, block);
  if (op->dpn == 3 && op->grid.periodic)
    strain_load_kernel<3, true><<<blocks, block>>>(op->moduli, op->fixed, g, kchi, f->data);
  else if (op->dpn == 3)
    strain_load_kernel<3, false><<<blocks, block>>>(op->moduli, op->fixed, g, kchi, f->data);
  else if (op->grid.periodic)
    strain_load_kernel<1, true><<<blocks, block>>>(op->moduli, op->fixed, g, kchi, f->data);
  else
    strain_load_kernel<1, false><<<blocks, block>>>(op->moduli, op->fixed, g, kchi, f->data);
  CUDA_LAUNCHED(be, "the strain load kernel");
  return VOX_OK;
}

/* Up to six fields u_f (double or half precision), their element strain
 * displacements chi_f and the weights w (n x n), passed by value (about 1.5
 * KB of kernel parameters). */
enum { MAX_STRAIN_FIELDS = 6 };
template <class T> struct strain_fields {
  const T *u[MAX_STRAIN_FIELDS];
  double chi[MAX_STRAIN_FIELDS * 24];
  double w[MAX_STRAIN_FIELDS * MAX_STRAIN_FIELDS];
  int n;
};

/* A field value widened to double (half: exact). */
static __device__ __forceinline__ double field_value(const double *p) { return __ldg(p); }
static __device__ __forceinline__ double field_value(const __half *p) {
  return (double)__half2float(__ushort_as_half(__ldg((const unsigned short *)p)));
}

/* The nodes of element (i, j, k) in corner order (wrapped on a periodic grid). */
template <bool PERIODIC>
static __device__ __forceinline__ void strain_element_nodes(const grid_dims &g, int i, int j, int k,
                                                            int64_t node[8]) {
  const int64_t n0 = (int64_t)k * g.sz + (int64_t)j * g.sy + i;
#pragma unroll
  for (int b = 0; b < 8; b++)
    node[b] = PERIODIC ? element_node(g, i, j, k, b)
                       : n0 + corner_z(b) * g.sz + corner_y(b) * g.sy + corner_x(b);
}

/* kv = Ke v_g with v_g = chi_g - u_g on the element. */
template <class T, bool MIRROR>
static __device__ __forceinline__ void strain_field_product(const strain_fields<T> &sf, int fg,
                                                            const int64_t node[8],
                                                            double kv[8][3]) {
  double v[24];
#pragma unroll
  for (int b = 0; b < 8; b++)
#pragma unroll
    for (int d = 0; d < 3; d++)
      v[b * 3 + d] = sf.chi[fg * 24 + b * 3 + d] - field_value(sf.u[fg] + node[b] * 3 + d);
  element_product<3, MIRROR>(v, kv);
}

/* v_f' kv, v_f reloaded from the cache rather than held in registers (six
 * fields of 24 values would spill). */
template <class T>
static __device__ __forceinline__ double strain_field_dot(const strain_fields<T> &sf, int ff,
                                                          const int64_t node[8],
                                                          const double kv[8][3]) {
  double t = 0;
#pragma unroll
  for (int b = 0; b < 8; b++)
#pragma unroll
    for (int d = 0; d < 3; d++)
      t += (sf.chi[ff * 24 + b * 3 + d] - field_value(sf.u[ff] + node[b] * 3 + d)) * kv[b][d];
  return t;
}

/* out_e = sum_fg w_fg v_f' Ke v_g with v_f = chi_f - u_f on the element:
 * per field g with a non-zero weight, Ke v_g once, then its products with
 * every v_f. */
template <class T, bool MIRROR, bool PERIODIC>
static __global__ void __launch_bounds__(NODE_BX *NODE_BY *NODE_BZ)
    strain_energy_kernel(strain_fields<T> sf, grid_dims g, double *__restrict__ energy) {
  const int i = blockIdx.x * NODE_BX + threadIdx.x, j = blockIdx.y * NODE_BY + threadIdx.y,
            k = blockIdx.z * NODE_BZ + threadIdx.z;
  if (i >= g.nx || j >= g.ny || k >= g.nz) return;
  int64_t node[8];
  strain_element_nodes<PERIODIC>(g, i, j, k, node);
  const int n = sf.n;
  double s = 0;
#pragma unroll 1
  for (int fg = 0; fg < n; fg++) {
    bool any = false;
    for (int ff = 0; ff < n; ff++) any = any || sf.w[ff * n + fg] != 0;
    if (!any) continue;
    double kv[8][3];
    strain_field_product<T, MIRROR>(sf, fg, node, kv);
#pragma unroll 1
    for (int ff = 0; ff < n; ff++) {
      const double w = sf.w[ff * n + fg];
      if (w != 0) s += w * strain_field_dot(sf, ff, node, kv);
    }
  }
  energy[element_index(g, i, j, k)] = s;
}

/* What the two strain-energy reductions share: the checks, Ke in constant
 * memory, and the fields' pointers and chi packed for the kernel. */
template <class T, class V>
static vox_status strain_fields_of(vox_backend *be, vox_operator *op, int n_fields, const V *u,
                                   const double *chi, const char *what, strain_fields<T> *sf,
                                   bool *mirrored) {
  if (n_fields < 1 || n_fields > MAX_STRAIN_FIELDS || op->nloc != 24)
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT, "%s: %d fields of %d dofs per element",
                     what, n_fields, op->nloc);
  TRY(load_ke(be, op, mirrored));
  *sf = strain_fields<T>{};
  sf->n = n_fields;
  for (int f = 0; f < n_fields; f++) sf->u[f] = (const T *)u[f].raw;
  memcpy(sf->chi, chi, (size_t)n_fields * 24 * sizeof *chi);
  return VOX_OK;
}

/* Calls launch(MIRROR, PERIODIC) with the operator's case as compile-time
 * constants (std::true_type or std::false_type), so that each reduction names its kernel
 * once instead of once per case. */
template <class Launch>
static void by_strain_case(bool mirrored, bool periodic, Launch launch) {
  if (mirrored && periodic)
    launch(std::true_type{}, std::true_type{});
  else if (periodic)
    launch(std::false_type{}, std::true_type{});
  else if (mirrored)
    launch(std::true_type{}, std::false_type{});
  else
    launch(std::false_type{}, std::false_type{});
}

template <class T, class V>
static vox_status strain_energy(vox_backend *be, vox_operator *op, int n_fields, const V *u,
                                const double *chi, const double *w, vox_vec *energy) {
  strain_fields<T> sf;
  bool mirrored;
  TRY(strain_fields_of(be, op, n_fields, u, chi, "strain energy", &sf, &mirrored));
  memcpy(sf.w, w, (size_t)n_fields * (size_t)n_fields * sizeof *w);
  const grid_dims g = dims_of(op);
  const dim3 block(NODE_BX, NODE_BY, NODE_BZ);
  const dim3 blocks = cover(g.nx, g.ny, g.nz, block);
  by_strain_case(mirrored, op->grid.periodic, [&](auto mirror, auto periodic) {
    constexpr bool M = decltype(mirror)::value, P = decltype(periodic)::value;
    strain_energy_kernel<T, M, P><<<blocks, block>>>(sf, g, energy->data);
  });
  CUDA_LAUNCHED(be, "the strain energy kernel");
  return VOX_OK;
}

/* The fields are all double or all half (vox_vec.scalar). */
static vox_status check_field_precision(vox_backend *be, int n_fields, const vox_vec *u) {
  for (int f = 0; f < n_fields; f++)
    if (u[f].scalar != u[0].scalar || (u[f].scalar != VOX_DOUBLE && u[f].scalar != VOX_HALF))
      return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT,
                       "strain energy: fields must be all double or all half vectors");
  return VOX_OK;
}

vox_status vox_cuda_op_strain_energy(vox_backend *be, vox_operator *op, int n_fields,
                                     const vox_vec *u, const double *chi, const double *w,
                                     vox_vec *energy) {
  TRY(check_field_precision(be, n_fields, u));
  if (u[0].scalar == VOX_HALF) return strain_energy<__half>(be, op, n_fields, u, chi, w, energy);
  return strain_energy<double>(be, op, n_fields, u, chi, w, energy);
}

/* sums_fg = sum_e m_e v_f' Ke v_g over the elements (C^H's energy form):
 * per thread one element, per field g one Ke v_g (element_product) and its
 * products with v_f, f >= g, each pair's
 * term in the block's shared row of that pair (rows padded by one so the
 * final sums do not hit one bank); then one thread per pair sums its row
 * and adds it to the device total atomically (one atomic per pair and
 * block). */
enum { STRAIN_PAIRS = MAX_STRAIN_FIELDS * (MAX_STRAIN_FIELDS + 1) / 2,
       SUMS_BLOCK = NODE_BX * NODE_BY * NODE_BZ };

template <class T, bool MIRROR, bool PERIODIC>
static __global__ void __launch_bounds__(SUMS_BLOCK)
    strain_energy_sums_kernel(strain_fields<T> sf, grid_dims g, const double *__restrict__ moduli,
                              double *__restrict__ sums) {
  __shared__ double row[STRAIN_PAIRS][SUMS_BLOCK + 1];
  const int tid = (threadIdx.z * NODE_BY + threadIdx.y) * NODE_BX + threadIdx.x;
  const int i = blockIdx.x * NODE_BX + threadIdx.x, j = blockIdx.y * NODE_BY + threadIdx.y,
            k = blockIdx.z * NODE_BZ + threadIdx.z;
  const int n = sf.n, pairs = n * (n + 1) / 2;
  for (int c = 0; c < pairs; c++) row[c][tid] = 0;
  const double m = i < g.nx && j < g.ny && k < g.nz ? __ldg(moduli + element_index(g, i, j, k))
                                                    : 0.0;
  if (m != 0) {
    int64_t node[8];
    strain_element_nodes<PERIODIC>(g, i, j, k, node);
    int pair = 0;
#pragma unroll 1
    for (int fg = 0; fg < n; fg++) {
      double kv[8][3];
      strain_field_product<T, MIRROR>(sf, fg, node, kv);
#pragma unroll 1
      for (int ff = fg; ff < n; ff++, pair++)
        row[pair][tid] = m * strain_field_dot(sf, ff, node, kv);
    }
  }
  __syncthreads();
  if (tid < pairs) {
    double s = 0;
    for (int r = 0; r < SUMS_BLOCK; r++) s += row[tid][r];
    atomicAdd(sums + tid, s);
  }
}

template <class T, class V>
static vox_status strain_energy_sums(vox_backend *be, vox_operator *op, int n_fields, const V *u,
                                     const double *chi, double *sums) {
  if (!op->moduli)
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT,
                     "operator: strain energy sums before its moduli");
  strain_fields<T> sf;
  bool mirrored;
  TRY(strain_fields_of(be, op, n_fields, u, chi, "strain energy sums", &sf, &mirrored));
  /* the totals in the reduction scratch (REDUCE_BLOCKS + 1 >= STRAIN_PAIRS
   * doubles), free between reductions on the one stream */
  double *total = vox_cuda(be)->partials;
  CUDA_TRY(be, cudaMemsetAsync(total, 0, STRAIN_PAIRS * sizeof *total), "clearing the sums");
  const grid_dims g = dims_of(op);
  const dim3 block(NODE_BX, NODE_BY, NODE_BZ);
  const dim3 blocks = cover(g.nx, g.ny, g.nz, block);
  by_strain_case(mirrored, op->grid.periodic, [&](auto mirror, auto periodic) {
    constexpr bool M = decltype(mirror)::value, P = decltype(periodic)::value;
    strain_energy_sums_kernel<T, M, P><<<blocks, block>>>(sf, g, op->moduli, total);
  });
  CUDA_LAUNCHED(be, "the strain energy sums kernel");
  double acc[STRAIN_PAIRS];
  const int pairs = n_fields * (n_fields + 1) / 2;
  CUDA_TRY(be, cudaMemcpy(acc, total, (size_t)pairs * sizeof *acc, cudaMemcpyDeviceToHost),
           "reading the strain energy sums");
  for (int fg = 0, pair = 0; fg < n_fields; fg++)
    for (int ff = fg; ff < n_fields; ff++, pair++)
      sums[ff * n_fields + fg] = sums[fg * n_fields + ff] = acc[pair];
  return VOX_OK;
}

vox_status vox_cuda_op_strain_energy_sums(vox_backend *be, vox_operator *op, int n_fields,
                                          const vox_vec *u, const double *chi, double *sums) {
  TRY(check_field_precision(be, n_fields, u));
  if (u[0].scalar == VOX_HALF) return strain_energy_sums<__half>(be, op, n_fields, u, chi, sums);
  return strain_energy_sums<double>(be, op, n_fields, u, chi, sums);
}
