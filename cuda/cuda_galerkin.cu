/* SPDX-License-Identifier: BSD-3-Clause */
/* Galerkin coarse operators R A P on the device (Martinez-Frutos et al. 2017 section 4.1), the
 * results of engine/cpu/cpu_galerkin.c: 27 blocks per coarse node, of which
 * the 14 not implied by symmetry are computed and stored (cuda_backend.cuh).
 *
 * Both products are gathers: each value of the coarse stencil is summed by
 * one thread and written once, so there are no atomics, no colour launches
 * and no read-modify-write of the output. That also lets a MIXED (float)
 * coarse stencil be rounded once, from a sum kept in double, with no
 * double-precision scratch copy of the level. Within each value, the terms
 * are summed in the order of the CPU loops, so the two backends differ only
 * where nvcc contracts a multiply-add into an FMA (and, for the stencil
 * levels, not at all: their weights are powers of two, which makes every
 * product exact).
 *
 * From the matrix-free level 0: every fine element lies in one coarse
 * element, and P restricted to it is a fixed map Q_s of its position s in
 * that coarse element, so
 *   R A P = sum_e m_e Q_s' (D Ke D) Q_s  +  R (I - D) P,
 * with D the free-dof mask. The 8 products Q_s' Ke Q_s are computed once on
 * the host; elements with a fixed dof get their own product, in the thread
 * that needs its entry (they only occur next to supports). Value (r, c) of
 * block T of coarse node P couples P with Q = P + T, so it collects, from
 * each coarse element E holding both P and Q (1, 2, 4 or 8 of them), the
 * entry (local P, local Q) of E's matrix, in the CPU's colour order of E.
 *
 * From a stencil level: coarse row I = sum over fine nodes a near 2I of
 * w(a, I) * (fine row a) spread onto the coarse parents of each neighbour b
 * of a. Block T of row I takes the terms whose parent is J = I + T, i.e.
 * those with b within 2J-1..2J+1 per axis, weight w(a, I) w(b, J). */
#include <stdlib.h>

#include "cuda_backend.cuh"
#include "galerkin_element.h"
#include "voxfe/element.h"

/* ---- the element geometry, usable on both sides --------------------------- */

/* Entry (a, c) of Q_s, node by node: the weight of coarse corner c at fine
 * corner a of the fine element at sub-position s (bits x, y, z) of its
 * coarse element. Exactly 1, 0.5 or 0, as in interpolation() of the CPU. */
static __host__ __device__ inline double interpolation_weight(int s, int a, int c) {
  double w = 1;
  for (int axis = 0; axis < 3; axis++) {
    const int f = ((s >> axis) & 1) + vox_cuda_corner(a, axis); /* 0..2 fine units */
    const int d = f - 2 * vox_cuda_corner(c, axis);
    w *= 1 - 0.5 * (d < 0 ? -d : d);
  }
  return w;
}

/* check_nesting of the CPU file: the coarse stencil must be on the coarsened
 * grid, with the same dofs per node (1 or 3 here: the kernels' instances). */
static vox_status check_nesting(vox_backend *be, const vox_grid *fine, int dpn,
                                const vox_stencil *coarse) {
  const vox_grid expect = vox_grid_coarsen(fine);
  if (coarse->grid.nx != expect.nx || coarse->grid.ny != expect.ny ||
      coarse->grid.nz != expect.nz || coarse->dpn != dpn || (dpn != 1 && dpn != 3))
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT, "multigrid levels do not nest");
  return VOX_OK;
}

/* ---- level 0: from the matrix-free operator -------------------------------- */

template <int DPN> struct op_shape {
  static constexpr int BS = DPN * DPN, NLOC = 8 * DPN, SIZE = NLOC * NLOC;
  static constexpr int HALF = VOX_CUDA_STENCIL_SLOTS * BS; /* stored values of a coarse row */
  /* A thread block takes TX coarse nodes in a line along x, which share most
   * of their fine neighbourhood: staging it costs about half as much per
   * node as for one node, and the barriers are paid once for TX rows. */
  static constexpr int TX = DPN == 1 ? 16 : 4;
  /* Phase 1 has TX SIZE element entries, phase 2 TX HALF values: 288 threads
   * take elasticity's in 8 and 2 rounds, 256 heat conduction's in 4 and 1. */
  static constexpr int THREADS = DPN == 1 ? 256 : 288;
  static_assert((TX * SIZE) % THREADS == 0, "whole rounds of phase 1");
  /* The staged fine neighbourhood: the nodes 2P-2..2P+2 and the elements
   * 2P-2..2P+1 per axis of every node P of the line, which hold every fine
   * element of the coarse elements around them. */
  static constexpr int NODES_X = 2 * TX + 3, ELEMENTS_X = 2 * TX + 2;
  static constexpr int SPAN_NODES = NODES_X * 5 * 5, SPAN_ELEMENTS = ELEMENTS_X * 4 * 4;
};

/* Local index of a staged fine node / element at offsets (x, y, z) from the
 * neighbourhood's first; W is the neighbourhood's width along x. */
template <int W> static __device__ __forceinline__ int staged_node(int x, int y, int z) {
  return (z * 5 + y) * W + x;
}
template <int W> static __device__ __forceinline__ int staged_element(int x, int y, int z) {
  return (z * 4 + y) * W + x;
}

/* Entry (DPN p + rr, DPN q + cc) of Q_s' (D Ke D) Q_s for the fine element
 * at staged position (x, y, z): the product of triple_product() in the CPU
 * file, entry by entry in the same order, skipping the terms whose weight is
 * 0 (which add nothing). fx holds the staged fixed flags. Not inlined: it is
 * rare (elements next to supports), and 8 inlined copies would crowd the
 * registers of the common path. */
template <int DPN, int W>
static __device__ __noinline__ double own_product_entry(const double *__restrict__ ke,
                                                        const uint8_t *fx, int s, int p, int q,
                                                        int rr, int cc, int x, int y, int z) {
  constexpr int NLOC = 8 * DPN;
  double own = 0;
  for (int a1 = 0; a1 < 8; a1++) {
    const double w1 = interpolation_weight(s, a1, p);
    if (w1 == 0) continue;
    const int m1 = DPN * a1 + rr;
    const uint8_t f1 =
        fx[staged_node<W>(x + vox_cuda_corner(a1, 0), y + vox_cuda_corner(a1, 1), z + vox_cuda_corner(a1, 2)) * DPN + rr];
    double kq = 0; /* (D Ke D Q_s)[m1][DPN q + cc] */
    for (int a2 = 0; a2 < 8; a2++) {
      const double w2 = interpolation_weight(s, a2, q);
      if (w2 == 0) continue;
      const int m2 = DPN * a2 + cc;
      const uint8_t f2 =
          fx[staged_node<W>(x + vox_cuda_corner(a2, 0), y + vox_cuda_corner(a2, 1), z + vox_cuda_corner(a2, 2)) * DPN + cc];
      const double kd = f1 || f2 ? 0.0 : ke[m1 * NLOC + m2];
      kq += kd * w2;
    }
    own += w1 * kq;
  }
  return own;
}

/* The rows of TX coarse nodes P = (I0 + g, J, K), g < TX, per thread block,
 * in three phases:
 *  0. stage the fixed flags and moduli of the fine neighbourhood (each is
 *     read by many threads), and which fine elements have a fixed dof;
 *  1. one thread per entry (R, C) of the matrix of coarse element E = P -
 *     vox_cuda_corner(R / DPN), for the 8 elements around each P: only the rows of
 *     P, but all 8 x 72 of them, which balances the work (a value of the
 *     centre block gathers from 8 elements, one of a corner block from 1)
 *     and reads the products Q_s' Ke Q_s coalesced. That is coarse_element()
 *     of the CPU, kept in shared memory; each entry of each coarse element is
 *     computed once, for the node its row belongs to;
 *  2. one thread per stored value (T >= 13, rr, cc) of a row (the blocks
 *     before the centre are the transposes of neighbours'): R (I - D) P (identity rows
 *     of fixed fine dofs, diagonal values only; not those of a shared
 *     first layer, vox_operator_desc), then the entries of the
 *     elements holding P and Q = P + T, in the CPU's colour order. The TX
 *     rows are contiguous, so the block's writes are too. */
template <int DPN, class VC>
static __global__ void __launch_bounds__(op_shape<DPN>::THREADS)
    galerkin_operator_kernel(const double *__restrict__ qkq, const double *__restrict__ ke,
                             const uint8_t *__restrict__ fixed,
                             const double *__restrict__ moduli, VC *__restrict__ value,
                             int64_t nx, int64_t ny, int64_t nz, int first_layer_shared) {
  using S = op_shape<DPN>;
  constexpr int WN = S::NODES_X, WE = S::ELEMENTS_X;
  const int64_t px = nx + 1, py = ny + 1, pz = nz + 1;                 /* fine nodes */
  const int64_t cn[3] = {(nx + 1) / 2, (ny + 1) / 2, (nz + 1) / 2};    /* coarse elements */
  const int64_t qx = cn[0] + 1, qy = cn[1] + 1;                        /* coarse nodes */
  __shared__ uint8_t s_fixed[S::SPAN_NODES * DPN];
  __shared__ uint8_t s_node_any[S::SPAN_NODES];   /* the fine node has a fixed dof */
  __shared__ double s_m[S::SPAN_ELEMENTS];        /* 0: no element or no stiffness */
  __shared__ uint8_t s_any[S::SPAN_ELEMENTS];     /* the element has a fixed dof */
  __shared__ double s_kc[S::TX][S::SIZE];         /* phase 1's element entries */

  const int64_t tiles = (qx + S::TX - 1) / S::TX;
  const int64_t I0 = blockIdx.x % tiles * S::TX, J = blockIdx.x / tiles % qy,
                K = blockIdx.x / tiles / qy;
  const int nodes = qx - I0 < S::TX ? (int)(qx - I0) : S::TX;
  /* the fine neighbourhood starts at (2 I0 - 2, 2 J - 2, 2 K - 2) */
  const int64_t fi = 2 * I0 - 2, fj = 2 * J - 2, fk = 2 * K - 2;

  /* phase 0: the fine nodes' flags and the fine elements' moduli, then which
   * elements have a fixed dof */
  int staged_fixed = 0; /* this thread staged a fixed dof */
  for (int idx = threadIdx.x; idx < S::SPAN_NODES + S::SPAN_ELEMENTS; idx += S::THREADS) {
    if (idx < S::SPAN_NODES) {
      const int64_t i = fi + idx % WN, j = fj + idx / WN % 5, k = fk + idx / (WN * 5);
      const bool inside = i >= 0 && i < px && j >= 0 && j < py && k >= 0 && k < pz;
      int any = 0;
      for (int d = 0; d < DPN; d++) {
        const uint8_t f = inside ? fixed[((k * py + j) * px + i) * DPN + d] : 0;
        s_fixed[idx * DPN + d] = f;
        any |= f;
      }
      s_node_any[idx] = any != 0;
      staged_fixed |= any;
    } else {
      const int l = idx - S::SPAN_NODES;
      const int64_t i = fi + l % WE, j = fj + l / WE % 4, k = fk + l / (WE * 4);
      const bool inside = i >= 0 && i < nx && j >= 0 && j < ny && k >= 0 && k < nz;
      s_m[l] = inside ? moduli[(k * ny + j) * nx + i] : 0.0;
    }
  }
  /* whether the block's neighbourhood holds a fixed dof at all (only next
   * to supports): R (I - D) P below adds nothing elsewhere */
  const int any_fixed = __syncthreads_or(staged_fixed);
  for (int l = threadIdx.x; l < S::SPAN_ELEMENTS; l += S::THREADS) {
    const int x = l % WE, y = l / WE % 4, z = l / (WE * 4);
    int any = 0;
    for (int a = 0; a < 8; a++)
      any |= s_node_any[staged_node<WN>(x + vox_cuda_corner(a, 0), y + vox_cuda_corner(a, 1), z + vox_cuda_corner(a, 2))];
    s_any[l] = any != 0;
  }
  __syncthreads();

  /* phase 1 */
  for (int idx = threadIdx.x; idx < S::TX * S::SIZE; idx += S::THREADS) {
    const int g = idx / S::SIZE, entry = idx - g * S::SIZE;
    const int R = entry / S::NLOC, C = entry - R * S::NLOC;
    const int p = R / DPN, rr = R - p * DPN, q = C / DPN, cc = C - q * DPN;
    const int64_t E[3] = {I0 + g - vox_cuda_corner(p, 0), J - vox_cuda_corner(p, 1), K - vox_cuda_corner(p, 2)};
    double kc = 0;
    if (g < nodes && E[0] >= 0 && E[0] < cn[0] && E[1] >= 0 && E[1] < cn[1] && E[2] >= 0 &&
        E[2] < cn[2]) {
      /* E's fine elements start at staged offset 2 (E - P) + 2, P at 2 g */
      const int x0 = 2 * g + 2 - 2 * vox_cuda_corner(p, 0), y0 = 2 - 2 * vox_cuda_corner(p, 1),
                z0 = 2 - 2 * vox_cuda_corner(p, 2);
#pragma unroll
      for (int s = 0; s < 8; s++) {
        const int x = x0 + (s & 1), y = y0 + ((s >> 1) & 1), z = z0 + (s >> 2);
        const int l = staged_element<WE>(x, y, z);
        const double m = s_m[l];
        if (m == 0) continue;
        const double product =
            s_any[l] ? own_product_entry<DPN, WN>(ke, s_fixed, s, p, q, rr, cc, x, y, z)
                     : qkq[s * S::SIZE + entry];
        kc += m * product;
      }
    }
    s_kc[g][entry] = kc;
  }
  __syncthreads();

  /* phase 2 */
  /* consecutive threads on one slot's blocks of consecutive nodes, which
   * lie side by side in the storage (vox_cuda_stencil_block) */
  const size_t n_coarse = (size_t)(qx * qy * (cn[2] + 1));
  for (int idx = threadIdx.x; idx < nodes * S::HALF; idx += S::THREADS) {
    const int slot = idx / (nodes * S::BS), g = idx / S::BS % nodes, ee = idx % S::BS;
    const int e = slot * S::BS + ee; /* of the node's 14 blocks */
    const int T = VOX_CUDA_STENCIL_CENTRE + e / S::BS, rr = e % S::BS / DPN, cc = e % DPN;
    const int t[3] = {T % 3 - 1, T / 3 % 3 - 1, T / 9 - 1};
    const int64_t P[3] = {I0 + g, J, K};
    double acc = 0;

    /* R (I - D) P: the identity rows of the fixed fine dofs a = 2P + d whose
     * parents include Q, i.e. a within 2Q-1..2Q+1 too (fixed_identity_row):
     * along an axis with offset 0, d = -1..1 and a is 2Q + d; with offset
     * +-1, only d = t, where a is 2Q - t. */
    if (rr == cc && any_fixed) {
      for (int dk = t[2] ? t[2] : -1; dk <= (t[2] ? t[2] : 1); dk++) {
        const int64_t k = 2 * P[2] + dk;
        if (k < 0 || k >= pz || (k == 0 && first_layer_shared)) continue;
        for (int dj = t[1] ? t[1] : -1; dj <= (t[1] ? t[1] : 1); dj++) {
          const int64_t j = 2 * P[1] + dj;
          if (j < 0 || j >= py) continue;
          for (int di = t[0] ? t[0] : -1; di <= (t[0] ? t[0] : 1); di++) {
            const int64_t i = 2 * P[0] + di;
            if (i < 0 || i >= px) continue;
            const double wa = (di ? 0.5 : 1) * (dj ? 0.5 : 1) * (dk ? 0.5 : 1);
            const int bi = di - 2 * t[0], bj = dj - 2 * t[1], bk = dk - 2 * t[2];
            const double wt = wa * (bi ? 0.5 : 1) * (bj ? 0.5 : 1) * (bk ? 0.5 : 1);
            acc += wt * (double)s_fixed[staged_node<WN>(2 * g + 2 + di, 2 + dj, 2 + dk) * DPN + rr];
          }
        }
      }
    }

    /* The coarse elements holding P and Q, in the CPU's colour order (colour
     * bits = parity of E along x, y, z), at most one per colour: along each
     * axis E is in max(P, Q) - 1 .. min(P, Q), of which one has each parity.
     * off[axis][parity] is P - E there (P's corner offset in E), -1 for none. */
    int off[3][2];
#pragma unroll
    for (int axis = 0; axis < 3; axis++) {
      const int64_t q = P[axis] + t[axis];
      const int64_t lo = (P[axis] > q ? P[axis] : q) - 1, hi = P[axis] < q ? P[axis] : q;
#pragma unroll
      for (int parity = 0; parity < 2; parity++) {
        const int64_t E = (lo & 1) == parity ? lo : hi;
        const bool ok = (E & 1) == parity && E >= lo && E <= hi && E >= 0 && E < cn[axis];
        off[axis][parity] = ok ? (int)(P[axis] - E) : -1;
      }
    }
#pragma unroll
    for (int colour = 0; colour < 8; colour++) {
      const int ox = off[0][colour & 1], oy = off[1][(colour >> 1) & 1], oz = off[2][colour >> 2];
      if (ox < 0 || oy < 0 || oz < 0) continue;
      const int p = vox_cuda_corner_index(ox, oy, oz);
      const int q = vox_cuda_corner_index(ox + t[0], oy + t[1], oz + t[2]);
      acc += s_kc[g][(DPN * p + rr) * S::NLOC + DPN * q + cc];
    }
    value[vox_cuda_stencil_block((size_t)((K * qy + J) * qx + I0 + g), slot, n_coarse, S::BS) +
          ee] = (VC)acc;
  }
}

template <int DPN, class VC>
static vox_status launch_operator(vox_backend *be, const vox_operator *op, const double *qkq,
                                  VC *value) {
  using S = op_shape<DPN>;
  const vox_grid c = vox_grid_coarsen(&op->grid);
  /* lines of TX nodes along x, one per thread block, then y, then z */
  const size_t blocks =
      (size_t)((c.nx + 1 + S::TX - 1) / S::TX) * (size_t)(c.ny + 1) * (size_t)(c.nz + 1);
  if (blocks > INT32_MAX)
    return vox_error(be->ctx, VOX_ERR_UNSUPPORTED,
                     "Galerkin coarse operator: %zu thread blocks exceed the launch limit", blocks);
  galerkin_operator_kernel<DPN, VC><<<(unsigned)blocks, S::THREADS>>>(
      qkq, op->ke, op->fixed, op->moduli, value, op->grid.nx, op->grid.ny, op->grid.nz,
      op->first_layer_shared);
  CUDA_LAUNCHED(be, "the Galerkin kernel of the fine operator");
  return VOX_OK;
}

/* The same on a periodic grid (even sizes, every master free: op->create
 * records whether one is fixed), one thread per stored coarse value
 * (coarse node P, entry e of its 14 blocks), written coalesced. A coarse
 * image's row is the identity. For a master, the coarse elements E holding
 * P and Q = P + T are taken in the CPU's colour order (the parity of E,
 * the same wrapped or not: the sizes are even), each E's entry summed over
 * its 8 fine elements first, as in coarse_element() of the CPU; E and its
 * fine elements wrap into the grid. No staging: this runs once per design
 * iteration, and the moduli and Q_s' Ke Q_s come from the caches. */
template <int DPN, class VC>
static __global__ void __launch_bounds__(256)
    galerkin_operator_periodic_kernel(const double *__restrict__ qkq,
                                      const double *__restrict__ moduli, VC *__restrict__ value,
                                      int64_t nx, int64_t ny, int64_t nz, size_t n_values) {
  using S = op_shape<DPN>;
  const size_t idx = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (idx >= n_values) return;
  const int64_t cn[3] = {nx / 2, ny / 2, nz / 2}; /* coarse elements */
  const vox_cuda_stencil_place at = vox_cuda_stencil_place_of(idx, n_values / S::HALF, S::BS);
  int64_t P[3];
  vox_cuda_node_coords(at.n, cn[0] + 1, cn[1] + 1, cn[2] + 1, P[0], P[1], P[2]);
  /* the slot's neighbour (of the node's 14 blocks) and the entry's row and column */
  const int T = VOX_CUDA_STENCIL_CENTRE + at.slot, rr = at.e / DPN, cc = at.e % DPN;
  if (P[0] == cn[0] || P[1] == cn[1] || P[2] == cn[2]) {
    value[idx] = (VC)(T == VOX_CUDA_STENCIL_CENTRE && rr == cc ? 1 : 0);
    return;
  }
  const int t[3] = {T % 3 - 1, T / 3 % 3 - 1, T / 9 - 1};
  /* along each axis E is in max(P, Q) - 1 .. min(P, Q) (unwrapped), one of
   * each parity; off[axis][parity] = P - E, -1 for none */
  int off[3][2];
  int64_t Eof[3][2];
#pragma unroll
  for (int axis = 0; axis < 3; axis++) {
    const int64_t q = P[axis] + t[axis];
    const int64_t lo = (P[axis] > q ? P[axis] : q) - 1, hi = P[axis] < q ? P[axis] : q;
#pragma unroll
    for (int parity = 0; parity < 2; parity++) {
      /* parity of the unwrapped E: lo may be -1 */
      const int64_t E = ((lo & 1) == parity) ? lo : hi;
      const bool ok = (E & 1) == parity && E >= lo && E <= hi;
      off[axis][parity] = ok ? (int)(P[axis] - E) : -1;
      Eof[axis][parity] = vox_wrap(E, cn[axis]);
    }
  }
  double acc = 0;
#pragma unroll
  for (int colour = 0; colour < 8; colour++) {
    const int ox = off[0][colour & 1], oy = off[1][(colour >> 1) & 1], oz = off[2][colour >> 2];
    if (ox < 0 || oy < 0 || oz < 0) continue;
    const int p = vox_cuda_corner_index(ox, oy, oz);
    const int q = vox_cuda_corner_index(ox + t[0], oy + t[1], oz + t[2]);
    const int entry = (DPN * p + rr) * S::NLOC + DPN * q + cc;
    const int64_t Ex = Eof[0][colour & 1], Ey = Eof[1][(colour >> 1) & 1],
                  Ez = Eof[2][colour >> 2];
    double kc = 0;
#pragma unroll
    for (int s = 0; s < 8; s++) {
      const int64_t i = 2 * Ex + (s & 1), j = 2 * Ey + ((s >> 1) & 1), k = 2 * Ez + (s >> 2);
      const double m = __ldg(moduli + (k * ny + j) * nx + i);
      if (m == 0) continue;
      kc += m * __ldg(qkq + s * S::SIZE + entry);
    }
    acc += kc;
  }
  value[idx] = (VC)acc;
}

template <int DPN, class VC>
static vox_status launch_operator_periodic(vox_backend *be, const vox_operator *op,
                                           const double *qkq, const vox_stencil *coarse,
                                           VC *value) {
  const size_t n = coarse->n_nodes * op_shape<DPN>::HALF;
  galerkin_operator_periodic_kernel<DPN, VC><<<vox_cuda_blocks(n, 256), 256>>>(
      qkq, op->moduli, value, op->grid.nx, op->grid.ny, op->grid.nz, n);
  CUDA_LAUNCHED(be, "the periodic Galerkin kernel of the fine operator");
  return VOX_OK;
}

vox_status vox_cuda_galerkin_operator(vox_backend *be, vox_operator *op, vox_stencil *coarse) {
  TRY(vox_cuda_op_check_fixed(be, op, "a Galerkin product"));
  TRY(check_nesting(be, &op->grid, op->dpn, coarse));
  TRY(vox_cuda_stencil_factor_wait(be, coarse)); /* it may still read the values */
  if (!op->moduli)
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT,
                     "Galerkin coarse operator: the fine operator has no moduli");
  coarse->packed = 0; /* written in float (an FP16 level is packed before its products) */
  if (!coarse->n_nodes) return VOX_OK;
  if (op->grid.periodic && op->periodic_masters_fixed)
    return vox_error(be->ctx, VOX_ERR_UNSUPPORTED,
                     "Galerkin coarse operator: a periodic grid with fixed nodes besides its "
                     "images runs on the CPU backend only");
  /* Q_s' Ke Q_s for the 8 positions, on the host as on the CPU; in global
   * memory, not __constant__, since the threads of a warp read different
   * entries (the constant cache serialises those). */
  const int nloc = op->nloc;
  const size_t size = (size_t)nloc * (size_t)nloc;
  double qkq[8 * 24 * 24];
  vox_galerkin_element_products(op->ke_host, op->dpn, qkq);
  double *dev = NULL;
  TRY(vox_cuda_alloc(be, (void **)&dev, 8 * size * sizeof *dev, "the Galerkin element products"));
  vox_status s = vox_cuda_check(
      be, cudaMemcpy(dev, qkq, 8 * size * sizeof *dev, cudaMemcpyHostToDevice),
      "uploading the Galerkin element products");
  if (s == VOX_OK && op->grid.periodic) {
    if (op->dpn == 3)
      s = coarse->value ? launch_operator_periodic<3>(be, op, dev, coarse, coarse->value)
                        : launch_operator_periodic<3>(be, op, dev, coarse, coarse->value32);
    else
      s = coarse->value ? launch_operator_periodic<1>(be, op, dev, coarse, coarse->value)
                        : launch_operator_periodic<1>(be, op, dev, coarse, coarse->value32);
  } else if (s == VOX_OK) {
    if (op->dpn == 3)
      s = coarse->value ? launch_operator<3>(be, op, dev, coarse->value)
                        : launch_operator<3>(be, op, dev, coarse->value32);
    else
      s = coarse->value ? launch_operator<1>(be, op, dev, coarse->value)
                        : launch_operator<1>(be, op, dev, coarse->value32);
  }
  vox_cuda_free(dev); /* cudaFree waits for the kernel */
  return s;
}

/* ---- stencil levels: coarse rows by gather --------------------------------- */

/* Block T of coarse row I (dpn^2 values), J = I + T. Its terms, in
 * coarse_row()'s order (a, then t ascending): fine node a near 2I, weight
 * w(a, I), block t of fine row a coupling a to b = a + t, taken when J is a
 * parent of b (b within 2J-1..2J+1) with weight w(b, J). */
template <int DPN, class VF, class VC, bool PERIODIC = false>
static __device__ __forceinline__ void coarse_block(const VF *__restrict__ fine,
                                                    VC *__restrict__ out, const int64_t I[3],
                                                    int T, int64_t fx, int64_t fy, int64_t fz,
                                                    int64_t cx, int64_t cy, int64_t cz) {
  constexpr int BS = DPN * DPN;
  const size_t fine_nodes = (size_t)(fx * fy * fz);
  const int64_t J[3] = {I[0] + T % 3 - 1, I[1] + T / 3 % 3 - 1, I[2] + T / 9 - 1};
  double acc[BS];
#pragma unroll
  for (int e = 0; e < BS; e++) acc[e] = 0;
  /* a J outside the coarse grid is no node's parent: the block stays zero.
   * PERIODIC (I a master): the lattice is unbounded, indices stay unwrapped
   * for the weights and offsets, and only the addresses of the fine masters
   * a and b wrap (fx - 1 elements along x, and so on). */
  if (PERIODIC ||
      (J[0] >= 0 && J[0] < cx && J[1] >= 0 && J[1] < cy && J[2] >= 0 && J[2] < cz)) {
#pragma unroll 1
    for (int dk = -1; dk <= 1; dk++) {
      const int64_t ak = 2 * I[2] + dk;
      if (!PERIODIC && (ak < 0 || ak >= fz)) continue;
#pragma unroll 1
      for (int dj = -1; dj <= 1; dj++) {
        const int64_t aj = 2 * I[1] + dj;
        if (!PERIODIC && (aj < 0 || aj >= fy)) continue;
#pragma unroll 1
        for (int di = -1; di <= 1; di++) {
          const int64_t ai = 2 * I[0] + di;
          if (!PERIODIC && (ai < 0 || ai >= fx)) continue;
          const double wa = (di ? 0.5 : 1) * (dj ? 0.5 : 1) * (dk ? 0.5 : 1);
          const size_t a = PERIODIC ? (size_t)((vox_wrap(ak, fz - 1) * fy + vox_wrap(aj, fy - 1)) *
                                                   fx + vox_wrap(ai, fx - 1))
                                    : (size_t)((ak * fy + aj) * fx + ai);
#pragma unroll
          for (int tk = -1; tk <= 1; tk++) {
            const int64_t bk = ak + tk, ek = bk - 2 * J[2];
            if ((!PERIODIC && (bk < 0 || bk >= fz)) || ek < -1 || ek > 1) continue;
#pragma unroll
            for (int tj = -1; tj <= 1; tj++) {
              const int64_t bj = aj + tj, ej = bj - 2 * J[1];
              if ((!PERIODIC && (bj < 0 || bj >= fy)) || ej < -1 || ej > 1) continue;
#pragma unroll
              for (int ti = -1; ti <= 1; ti++) {
                const int64_t bi = ai + ti, ei = bi - 2 * J[0];
                if ((!PERIODIC && (bi < 0 || bi >= fx)) || ei < -1 || ei > 1) continue;
                const double wt = wa * (ei ? 0.5 : 1) * (ej ? 0.5 : 1) * (ek ? 0.5 : 1);
                const int t = (tk + 1) * 9 + (tj + 1) * 3 + (ti + 1);
                const size_t b =
                    PERIODIC ? (size_t)((vox_wrap(bk, fz - 1) * fy + vox_wrap(bj, fy - 1)) * fx +
                                        vox_wrap(bi, fx - 1))
                             : (size_t)((bk * fy + bj) * fx + bi);
#pragma unroll
                for (int e = 0; e < BS; e++)
                  acc[e] += wt * vox_cuda_stencil_entry<DPN>(fine, a, b, fine_nodes, t, e / DPN,
                                                             e % DPN);
              }
            }
          }
        }
      }
    }
  }
#pragma unroll
  for (int e = 0; e < BS; e++) out[e] = (VC)acc[e];
}

/* The work of block T is the product over the axes of 7 (offset 0) or 3
 * pairs (a, b): 343 for the centre block, 147 for a face, 63 for an edge, 27
 * for a corner. A thread per (I, T) would put blocks of every kind in each
 * warp and make all wait for the centre's; instead a warp takes the same
 * blocks of 32 coarse nodes, and the 8 warps of a thread block share the 14
 * stored blocks (T >= 13) as evenly as they go: the centre; each face
 * (147); two edges (126) three times; the 4 corners (108). The warps of a
 * thread block then also read the same fine rows, close together in time.
 * -1 ends a list. */
static __constant__ signed char warp_blocks[8][5] = {
    {13, -1},     {14, -1},     {16, -1},     {22, -1},
    {15, 17, -1}, {19, 21, -1}, {23, 25, -1}, {18, 20, 24, 26, -1}};
enum { STENCIL_WARPS = 8, STENCIL_NODES = 32 };

template <int DPN, class VF, class VC, bool PERIODIC = false>
static __global__ void __launch_bounds__(STENCIL_WARPS * 32)
    galerkin_stencil_kernel(const VF *__restrict__ fine, VC *__restrict__ coarse, int64_t fx,
                            int64_t fy, int64_t fz, int64_t cx, int64_t cy, int64_t cz,
                            size_t n_coarse) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const size_t n = (size_t)blockIdx.x * STENCIL_NODES + lane;
  if (n >= n_coarse) return;
  int64_t I[3];
  vox_cuda_node_coords(n, cx, cy, cz, I[0], I[1], I[2]);
  /* a periodic grid's coarse images: identity rows */
  const bool image = PERIODIC && (I[0] == cx - 1 || I[1] == cy - 1 || I[2] == cz - 1);
  for (int b = 0; b < 5; b++) {
    const int T = warp_blocks[warp][b];
    if (T < 0) break;
    VC *out = coarse + vox_cuda_stencil_block(n, T - VOX_CUDA_STENCIL_CENTRE, n_coarse, DPN * DPN);
    if (image) {
      for (int e = 0; e < DPN * DPN; e++)
        out[e] = (VC)(T == VOX_CUDA_STENCIL_CENTRE && e % (DPN + 1) == 0 ? 1 : 0);
      continue;
    }
    coarse_block<DPN, VF, VC, PERIODIC>(fine, out, I, T, fx, fy, fz, cx, cy, cz);
  }
}

template <int DPN, class VF, class VC>
static vox_status launch_stencil(vox_backend *be, const vox_stencil *fine, const VF *fv,
                                 const vox_stencil *coarse, VC *cv) {
  if (fine->grid.periodic) {
    galerkin_stencil_kernel<DPN, VF, VC, true>
        <<<vox_cuda_blocks(coarse->n_nodes, STENCIL_NODES), STENCIL_WARPS * 32>>>(
            fv, cv, fine->grid.nx + 1, fine->grid.ny + 1, fine->grid.nz + 1, coarse->grid.nx + 1,
            coarse->grid.ny + 1, coarse->grid.nz + 1, coarse->n_nodes);
    CUDA_LAUNCHED(be, "the periodic Galerkin kernel of a stencil level");
    return VOX_OK;
  }
  galerkin_stencil_kernel<DPN, VF, VC>
      <<<vox_cuda_blocks(coarse->n_nodes, STENCIL_NODES), STENCIL_WARPS * 32>>>(
          fv, cv, fine->grid.nx + 1, fine->grid.ny + 1, fine->grid.nz + 1, coarse->grid.nx + 1,
          coarse->grid.ny + 1, coarse->grid.nz + 1, coarse->n_nodes);
  CUDA_LAUNCHED(be, "the Galerkin kernel of a stencil level");
  return VOX_OK;
}

/* The four storage combinations of one dpn. */
template <int DPN>
static vox_status launch_stencil_dpn(vox_backend *be, const vox_stencil *f, const vox_stencil *c) {
  if (f->value)
    return c->value ? launch_stencil<DPN>(be, f, f->value, c, c->value)
                    : launch_stencil<DPN>(be, f, f->value, c, c->value32);
  return c->value ? launch_stencil<DPN>(be, f, f->value32, c, c->value)
                  : launch_stencil<DPN>(be, f, f->value32, c, c->value32);
}

vox_status vox_cuda_galerkin_stencil(vox_backend *be, vox_stencil *fine, vox_stencil *coarse) {
  TRY(check_nesting(be, &fine->grid, fine->dpn, coarse));
  TRY(vox_cuda_stencil_factor_wait(be, coarse)); /* it may still read the values */
  /* from the fine level's float values: the multigrid computes this product
   * before the fine level's first smoothing packs it into FP16, so this
   * only widens a level packed before (the FP16 values, scaled back) */
  TRY(vox_cuda_stencil_unpack(be, fine));
  coarse->packed = 0;
  if (!coarse->n_nodes) return VOX_OK;
  return fine->dpn == 3 ? launch_stencil_dpn<3>(be, fine, coarse)
                        : launch_stencil_dpn<1>(be, fine, coarse);
}
