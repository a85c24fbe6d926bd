/* SPDX-License-Identifier: BSD-3-Clause */
/* The element-free Galerkin loop's stages on the GPU (efg_ops.h; Lu, Gong,
 * Zhang, Xie and Yin 2021, section 5), none with atomics in its sums:
 *
 * - The stiffness K node pair by node pair (section 5.1): each block K_ij
 *   on and above the diagonal is the reduction over the Gauss points its
 *   two nodes share, summed by one lane, no atomics. A warp takes a block
 *   row, as a thread does on the CPU (efg_assembly.h): node i's points in
 *   turn, the lanes over each point's nodes, each adding into its own
 *   block; then each block is written with its mirror K_ji = K_ij^T (half
 *   the work, K exactly symmetric). The penalty points of the supports
 *   likewise. (A warp a block, finding the shared points by bisection in
 *   the two nodes' point lists, took 4.30 ms against 1.42 ms on the
 *   quarter annulus of Lu et al. 2021 at 2 mm on an H100, and read 1.21 GB
 *   from DRAM against 0.21 GB.)
 * - The density at the Gauss points (eq. 16): a warp per point, the lanes
 *   over its nodes.
 * - The sensitivities in two stages (section 5.3): the energy density Q of
 *   a warp per Gauss point (the lanes over its nodes, the displacement
 *   gradient summed by shuffles), then a warp per node summing over its
 *   Gauss points.
 *
 * K lives as a matrix of the sparse table (cuda_sparse_matrix.cu: the
 * pattern uploaded once, the values written here in place), and so do the
 * inverses of its diagonal blocks, which block Jacobi applies by that
 * table's BSR product; K's own product is a warp per block row
 * (level_product_kernel says why). The tables' indices are 32-bit on the device (the
 * entries of the shape tables, about 270 per node, stay far below 2^32 on
 * any model a GPU holds); create refuses a model past that. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_backend.cuh"
#include "cuda_dense_libraries.cuh"
#include "cuda_efg_oc.cuh"
#include "efg_assembly.h"
#include "efg_ops.h"

struct vox_efg_device {
  size_t n_nodes, n_points, n_blocks;
  double lambda, mu;
  /* the Gauss points: per point its entries [g_start[g], g_start[g+1]) with
   * the node, phi and the gradient (3 values), its weight and modulus; per
   * node its points [ng_start[i], ng_start[i+1]), ascending, with the
   * entry of the node there */
  uint32_t *g_start, *ng_start, *ng_entry, *ng_point;
  int32_t *g_node;
  double *g_phi, *g_dphi, *g_weight, *g_modulus;
  /* the penalty points, the same way (phi only), and their springs (3 a
   * point) */
  uint32_t *s_start, *ns_start, *ns_entry, *ns_point;
  int32_t *s_node;
  double *s_phi, *s_stiffness;
  /* the springs' parts (efg_model.h: support_fixed, support_scaled) and a
   * double a point for their sensitivity */
  size_t n_support;
  double *s_fixed, *s_scaled, *s_factor;
  int32_t *block_row; /* per block of K: its block row */
  uint32_t *mirror;   /* per block K_ij of K: the index of K_ji */
  /* the assembly's row tables (assemble_rows_kernel): the nodes' keys, the
   * box, the warps of a thread block and its shared memory */
  int32_t *row_key;
  int rows_box, rows_centre;
  size_t rows_acc_doubles, rows_shared;
  unsigned rows_warps;
  vox_sparse_matrix *k, *inverse;
  unsigned long long *failed; /* block_jacobi: 1 + the last node whose block is not definite;
                                 patches_factor: 1 + the last patch, then 1 + the last
                                 penalty patch */
  /* additive Schwarz on the cells' patches (efg_patches.h): 8 corners and
   * 64 block positions a patch, 8 patch corners a node, the inverses (576
   * a patch) and the patches' answers (24 a patch) */
  size_t n_patches;
  int32_t *p_node, *p_node_patch;
  uint32_t *p_block;
  double *p_inverse, *p_work;
  double *p_diagonal; /* the cells' patches' diagonals when inverted (24 each) */
  /* in single precision (create's VOX_PRECISION_MIXED) the cells' inverses
   * in p_inverse_single instead, and the multigrid's level 0 residuals
   * from k_single, K rounded to float after each assembly (block k's
   * first eight values at 8 k, its ninth at 8 n_blocks + k:
   * level_product_kernel) */
  int single;
  float *p_inverse_single, *k_single;
  /* the dense patches, the 2 x 2 x 2 cells' blocks' then the penalty
   * points' (efg_patches.h's tables; their inverses in pp_inverse, or in
   * single precision where the cells' are and the factor's blocks fit in
   * shared memory in pp_inverse_single; their answers after the cells' in
   * p_work); `patches` the host's tables, for the messages */
  const vox_efg_patches *patches;
  size_t n_penalty, n_block_patches, penalty_max_dofs;
  int penalty_in_shared; /* the factor's blocks in shared memory (penalty_factor_kernel) */
  double penalty_weight; /* the penalty points' inverses' factor (vox_efg_patches') */
  size_t *pp_start, *pp_block_start, *pp_inverse_start;
  double *pp_inverse;
  float *pp_inverse_single;
  int32_t *pp_node;
  uint32_t *pp_block, *node_pp_start, *node_pp;
  /* the multigrid's levels (efg_levels.h): per level its pattern (level
   * 0: K's), values and inverted diagonal blocks, per transfer its
   * tables and B; the last level's dense factor */
  int n_levels;
  size_t level_nodes[VOX_EFG_MAX_LEVELS], level_blocks[VOX_EFG_MAX_LEVELS];
  size_t *level_row_start[VOX_EFG_MAX_LEVELS];
  int32_t *level_col[VOX_EFG_MAX_LEVELS], *level_block_row[VOX_EFG_MAX_LEVELS];
  double *level_val[VOX_EFG_MAX_LEVELS], *level_inverse[VOX_EFG_MAX_LEVELS];
  int32_t *t_parent[VOX_EFG_MAX_LEVELS], *t_child[VOX_EFG_MAX_LEVELS];
  double *t_parent_weight[VOX_EFG_MAX_LEVELS], *t_child_weight[VOX_EFG_MAX_LEVELS];
  size_t t_b_blocks[VOX_EFG_MAX_LEVELS];
  size_t *t_b_row_start[VOX_EFG_MAX_LEVELS];
  int32_t *t_b_col[VOX_EFG_MAX_LEVELS], *t_b_block_row[VOX_EFG_MAX_LEVELS];
  double *t_b_val[VOX_EFG_MAX_LEVELS];
  /* the last level: its matrix and Cholesky factor, and its inverse,
   * made on the backend's factor stream (vox_cuda_factor_stream_setup)
   * between its events factor_ready and factor_done; the factor's status
   * in the backend's pinned word, read by efg_mg_setup_wait */
  double *dense_factor, *dense, *dense_work;
  double *dense_diagonal; /* the last level's diagonal when it was factored */
  int dense_n, dense_lwork, *dense_info;
  int dense_made; /* a factor and inverse were made (mg_setup may keep them) */
  vox_cuda_efg_oc oc; /* the OC update's tables (cuda_efg_oc.cu) */
  size_t bytes;
};

/* What the kernels read, by value. */
struct efg_view {
  size_t n_nodes, n_points;
  double lambda, mu;
  const uint32_t *g_start, *ng_start, *ng_entry, *ng_point;
  const int32_t *g_node;
  const double *g_phi, *g_dphi, *g_weight, *g_modulus;
  const uint32_t *s_start, *ns_start, *ns_entry, *ns_point;
  const int32_t *s_node;
  const double *s_phi, *s_stiffness;
  const int32_t *col;
  const uint32_t *mirror;
  const size_t *row_start;
};

static efg_view view_of(const vox_efg_device *d) {
  efg_view v;
  v.n_nodes = d->n_nodes, v.n_points = d->n_points;
  v.lambda = d->lambda, v.mu = d->mu;
  v.g_start = d->g_start, v.ng_start = d->ng_start, v.ng_entry = d->ng_entry;
  v.ng_point = d->ng_point, v.g_node = d->g_node, v.g_phi = d->g_phi, v.g_dphi = d->g_dphi;
  v.g_weight = d->g_weight, v.g_modulus = d->g_modulus;
  v.s_start = d->s_start, v.ns_start = d->ns_start, v.ns_entry = d->ns_entry;
  v.ns_point = d->ns_point, v.s_node = d->s_node, v.s_phi = d->s_phi;
  v.s_stiffness = d->s_stiffness, v.mirror = d->mirror;
  double *val;
  vox_cuda_matrix_arrays(d->k, &v.row_start, &v.col, &val);
  return v;
}

static double *values_of(const vox_efg_device *d, vox_sparse_matrix *m) {
  (void)d;
  const size_t *row_start;
  const int32_t *col;
  double *val;
  vox_cuda_matrix_arrays(m, &row_start, &col, &val);
  return val;
}

/* A warp per item: warp w of the grid takes items w, w + warps, ...; every
 * lane of a warp takes the same items, so the shuffles see the whole warp. */
#define WARP_STRIDE(w, n)                                                                   \
  for (size_t w = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) / 32; w < (n);           \
       w += (size_t)gridDim.x * blockDim.x / 32)
static inline unsigned warp_grid(size_t n) { return vox_cuda_grid(32 * (n ? n : 1)); }

/* ---- the stages ------------------------------------------------------------ */

static __global__ void gauss_density_kernel(efg_view v, const double *__restrict__ rho,
                                            double *__restrict__ out) {
  const unsigned lane = threadIdx.x % 32;
  WARP_STRIDE(g, v.n_points) {
    double s = 0;
    for (uint32_t e = v.g_start[g] + lane; e < v.g_start[g + 1]; e += 32)
      s += v.g_phi[e] * rho[v.g_node[e]];
    s = vox_cuda_warp_sum(s);
    if (lane == 0) out[g] = s;
  }
}

static __global__ void gauss_scale_kernel(efg_view v, const double *__restrict__ rho_gauss,
                                          double p, double *__restrict__ scale) {
  VOX_GRID_STRIDE(g, v.n_points) {
    const double r = rho_gauss[g] > 0 ? rho_gauss[g] : 0.0;
    scale[g] = v.g_weight[g] * v.g_modulus[g] * pow(r, p);
  }
}

/* Row i's blocks on and above the diagonal (j >= i), a warp a row, in the
 * CPU's order (efg_assembly.c): node i's Gauss points in turn, the lanes
 * over the point's nodes from i's own entry on (they ascend, so j >= i),
 * each the column of a different block, so no two
 * lanes add to one block at once and every block sums its shares in the
 * order of the points, with no atomics (the rows' blocks belong to their
 * warps). A point's share to K_ij is s_g (lambda g_i g_j^T + mu g_j g_i^T +
 * mu (g_i . g_j) I); the penalty points' after, phi_i phi_j diag(k_p)
 * (efg_assembly.h). A column's block is found by its grid offset from i,
 * slot[key[j] - key[i] + centre] in a table over the box of offsets that
 * two supports can span (rows.box); the sums run in shared memory, sized
 * for the longest row. Each block is then written with its mirror K_ji =
 * K_ij^T. */
struct efg_rows {
  const int32_t *key; /* per node: its grid line's place in the box's strides */
  int box, centre;    /* the box's slots, and the slot of offset zero */
  size_t acc_doubles; /* a warp's sums in shared memory */
};

static __global__ void assemble_rows_kernel(efg_view v, efg_rows rows,
                                            const double *__restrict__ scale,
                                            double *__restrict__ val) {
  extern __shared__ double shared[];
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  double *acc = shared + warp * rows.acc_doubles;
  int16_t *slot = (int16_t *)(shared + warps * rows.acc_doubles) + (size_t)warp * rows.box;
  const double lam = v.lambda, mu = v.mu;
  WARP_STRIDE(i, v.n_nodes) {
    const size_t r0 = v.row_start[i], r1 = v.row_start[i + 1];
    size_t lo = r0, hi = r1; /* the diagonal block: the first column >= i */
    while (lo < hi) {
      const size_t mid = lo + (hi - lo) / 2;
      if ((size_t)__ldg(v.col + mid) < i)
        lo = mid + 1;
      else
        hi = mid;
    }
    const size_t diag = lo, n_upper = r1 - diag;
    const int base = rows.centre - rows.key[i];
    for (size_t k = lane; k < n_upper; k += 32) {
      slot[base + rows.key[v.col[diag + k]]] = (int16_t)k;
#pragma unroll
      for (int r = 0; r < 9; r++) acc[9 * k + r] = 0;
    }
    __syncwarp();
    /* i's points 32 at a time: each lane reads one point's factor, i's
     * entry there, the end of its entries and i's gradient, which the
     * shuffles hand to the whole warp point by point */
    const uint32_t q_end = v.ng_start[i + 1];
    for (uint32_t q0 = v.ng_start[i]; q0 < q_end; q0 += 32) {
      const uint32_t q = q0 + lane;
      double s = 0, gq[3] = {0, 0, 0};
      uint32_t own = 0, end = 0;
      if (q < q_end) {
        const uint32_t g = v.ng_point[q];
        s = scale[g];
        own = v.ng_entry[q];
        end = v.g_start[g + 1];
        const double *gi = v.g_dphi + 3 * (size_t)own;
        gq[0] = gi[0], gq[1] = gi[1], gq[2] = gi[2];
      }
      const uint32_t points = q_end - q0 < 32 ? q_end - q0 : 32;
      for (uint32_t t = 0; t < points; t++) {
        const double st = __shfl_sync(0xffffffffu, s, t);
        if (st == 0) continue;
        const uint32_t e0 = __shfl_sync(0xffffffffu, own, t);
        const uint32_t e1 = __shfl_sync(0xffffffffu, end, t);
        double li[3], mi[3];
#pragma unroll
        for (int a = 0; a < 3; a++) {
          const double ga = __shfl_sync(0xffffffffu, gq[a], t);
          li[a] = st * lam * ga, mi[a] = st * mu * ga;
        }
        /* a point's nodes ascend (efg_mls.h): from i's own entry on, j >= i */
        for (uint32_t e = e0 + lane; e < e1; e += 32) {
          const int32_t j = v.g_node[e];
          const double *gj = v.g_dphi + 3 * (size_t)e;
          double *kb = acc + 9 * slot[base + rows.key[j]];
          const double dot = mi[0] * gj[0] + mi[1] * gj[1] + mi[2] * gj[2];
#pragma unroll
          for (int a = 0; a < 3; a++)
#pragma unroll
            for (int c = 0; c < 3; c++) kb[3 * a + c] += li[a] * gj[c] + mi[c] * gj[a];
          kb[0] += dot;
          kb[4] += dot;
          kb[8] += dot;
        }
        __syncwarp();
      }
    }
    for (uint32_t q = v.ns_start[i]; q < v.ns_start[i + 1]; q++) {
      const uint32_t pt = v.ns_point[q];
      const double phi_i = v.s_phi[v.ns_entry[q]]; /* i's own entry, then j > i */
      const double *kp = v.s_stiffness + 3 * (size_t)pt;
      for (uint32_t e = v.ns_entry[q] + lane; e < v.s_start[pt + 1]; e += 32) {
        const int32_t j = v.s_node[e];
        double *kb = acc + 9 * slot[base + rows.key[j]];
        const double f = phi_i * v.s_phi[e];
        kb[0] += f * kp[0];
        kb[4] += f * kp[1];
        kb[8] += f * kp[2];
      }
      __syncwarp();
    }
    /* each block and its mirror (on the diagonal the mirror is the block
     * itself: its upper triangle ends as the transpose of its lower, so
     * K_ii is exactly symmetric) */
    for (size_t k = lane; k < n_upper; k += 32) {
      const size_t b = diag + k;
      double kb[9];
#pragma unroll
      for (int r = 0; r < 9; r++) kb[r] = acc[9 * k + r];
      double *m = val + 9 * (size_t)v.mirror[b];
#pragma unroll
      for (int a = 0; a < 3; a++)
#pragma unroll
        for (int c = 0; c < 3; c++) {
          val[9 * b + 3 * a + c] = kb[3 * a + c];
          m[3 * c + a] = kb[3 * a + c];
        }
    }
    __syncwarp();
  }
}

/* The MLS density at penalty point q. */
static __device__ double support_density(const efg_view &v, size_t q,
                                         const double *__restrict__ rho) {
  double r = 0;
  for (uint32_t e = v.s_start[q]; e < v.s_start[q + 1]; e++) r += v.s_phi[e] * rho[v.s_node[e]];
  return r;
}

/* The supports' springs fixed + rho_p^p scaled (vox_efg_support_springs), a
 * thread per penalty point. */
static __global__ void support_springs_kernel(efg_view v, size_t n, const double *__restrict__ fixed,
                                              const double *__restrict__ scaled,
                                              const double *__restrict__ rho, double p,
                                              double *__restrict__ stiffness) {
  VOX_GRID_STRIDE(q, n) {
    const double r = support_density(v, q, rho), f = pow(r > 0 ? r : 0.0, p);
    for (int c = 0; c < 3; c++) stiffness[3 * q + c] = fixed[3 * q + c] + f * scaled[3 * q + c];
  }
}

/* Per penalty point g_q = p rho_q^(p-1) sum_c scaled_qc u_q,c^2, then per
 * node dc_i -= sum over its points of phi_i g_q (vox_efg_support_sensitivity). */
static __global__ void support_factor_kernel(efg_view v, size_t n,
                                             const double *__restrict__ scaled,
                                             const double *__restrict__ rho,
                                             const double *__restrict__ u, double p,
                                             double *__restrict__ g) {
  VOX_GRID_STRIDE(q, n) {
    const double r = support_density(v, q, rho);
    double up[3] = {0, 0, 0};
    for (uint32_t e = v.s_start[q]; e < v.s_start[q + 1]; e++)
      for (int c = 0; c < 3; c++) up[c] += v.s_phi[e] * u[3 * (size_t)v.s_node[e] + c];
    double e2 = 0;
    for (int c = 0; c < 3; c++) e2 += scaled[3 * q + c] * up[c] * up[c];
    g[q] = r > 0 ? p * pow(r, p - 1) * e2 : 0;
  }
}

static __global__ void support_sensitivity_kernel(efg_view v, const double *__restrict__ g,
                                                  double *__restrict__ dc) {
  VOX_GRID_STRIDE(i, v.n_nodes) {
    double s = 0;
    for (uint32_t k = v.ns_start[i]; k < v.ns_start[i + 1]; k++)
      s += v.s_phi[v.ns_entry[k]] * g[v.ns_point[k]];
    dc[i] -= s;
  }
}

/* The patches' inverses, a warp per patch (vox_efg_patch_invert's
 * arithmetic): the 24 x 24 block gathered from K into the warp's shared
 * memory, Cholesky's factorisation column by column with a lane per row,
 * then a lane per column of the inverse, substituting forward and back.
 * With drift > 0 a patch whose diagonal has moved by no more than drift
 * from reference's (vox_efg_diagonal_drift, a lane per node) keeps its
 * inverse; reference takes the diagonal of each one made. */
#define PATCH_WARPS 4
template <class T>
static __global__ void __launch_bounds__(32 * PATCH_WARPS)
    patch_factor_kernel(size_t n, const uint32_t *__restrict__ block,
                        const double *__restrict__ kval, double drift,
                        double *__restrict__ reference, T *__restrict__ inverse,
                        unsigned long long *failed) {
  enum { N = VOX_EFG_PATCH_DOFS };
  __shared__ double tile[PATCH_WARPS][VOX_EFG_PATCH_ENTRIES];
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  double *a = tile[warp];
  WARP_STRIDE(c, n) {
    const uint32_t *b = block + 64 * c;
    double *ref = reference + N * c;
    const double *diagonal = lane < 8 ? kval + 9 * (size_t)__ldg(b + 9 * lane) : NULL;
    if (drift > 0) {
      const double m = lane < 8 ? vox_efg_diagonal_drift(diagonal, ref + 3 * lane) : 0;
      if (__all_sync(0xffffffffu, m <= drift)) continue; /* kept */
    }
    if (lane < 8)
      for (int i = 0; i < 3; i++) ref[3 * lane + i] = diagonal[4 * i];
    for (unsigned e = lane; e < VOX_EFG_PATCH_ENTRIES; e += 32) {
      const unsigned row = e / N, col = e % N;
      a[e] = kval[9 * (size_t)__ldg(b + 8 * (row / 3) + col / 3) + 3 * (row % 3) + col % 3];
    }
    __syncwarp();
    int ok = 1;
    for (int k = 0; k < N && ok; k++) {
      const double pivot = a[N * k + k];
      ok = pivot > 0;
      if (!ok) break;
      const double l = sqrt(pivot);
      __syncwarp();
      if ((int)lane > k && (int)lane < N) a[N * lane + k] /= l;
      if (lane == 0) a[N * k + k] = l;
      __syncwarp();
      if ((int)lane > k && (int)lane < N)
        for (int j = k + 1; j <= (int)lane; j++) a[N * lane + j] -= a[N * lane + k] * a[N * j + k];
      __syncwarp();
    }
    if (!ok) {
      if (lane == 0) atomicMax(failed, (unsigned long long)c + 1); /* the report only */
    } else if (lane < N) {
      double x[N];
      vox_efg_patch_inverse_column(a, (int)lane, x);
      T *inv = inverse + VOX_EFG_PATCH_ENTRIES * c;
      for (int i = 0; i < N; i++) inv[N * i + lane] = (T)x[i];
    }
    __syncwarp();
  }
}

/* Each patch's answer y_c = inverse_c r_c, a thread per row of a patch,
 * summed in double from inverses stored as T. The inverse is symmetric, so
 * row `row` is read as column `row`: the threads of a patch read
 * consecutive entries. */
template <class T>
static __device__ __forceinline__ void patch_solve(size_t n, const int32_t *__restrict__ node,
                                                   const T *__restrict__ inverse,
                                                   const double *__restrict__ r,
                                                   double *__restrict__ y, size_t block,
                                                   size_t blocks) {
  for (size_t t = block * blockDim.x + threadIdx.x; t < n * VOX_EFG_PATCH_DOFS;
       t += blocks * blockDim.x) {
    const size_t c = t / VOX_EFG_PATCH_DOFS;
    const unsigned row = (unsigned)(t % VOX_EFG_PATCH_DOFS);
    const int32_t *corner = node + 8 * c;
    const T *inv = inverse + VOX_EFG_PATCH_ENTRIES * c + row;
    double s = 0;
#pragma unroll
    for (int a = 0; a < 8; a++) {
      const double *ra = r + 3 * (size_t)__ldg(corner + a);
      s += (double)__ldg(inv + VOX_EFG_PATCH_DOFS * (3 * a)) * __ldg(ra) +
           (double)__ldg(inv + VOX_EFG_PATCH_DOFS * (3 * a + 1)) * __ldg(ra + 1) +
           (double)__ldg(inv + VOX_EFG_PATCH_DOFS * (3 * a + 2)) * __ldg(ra + 2);
    }
    y[t] = s;
  }
}

/* The dense patches' inverses (vox_efg_patches_factor's arithmetic), a
 * block per patch: the block gathered from K, then
 * Gauss-Jordan's steps in place, each step's row and column in shared
 * memory (2 penalty_max_dofs doubles), and with IN_SHARED the whole block
 * there too (penalty_max_dofs^2 more; the steps' passes over it cost a
 * third to a half of those over its slot of `inverse`: 1.35 against
 * 2.0 ms a design iteration on the quarter annulus of Lu et al. 2021,
 * patches of up to 126 unknowns), written to its slot at the end (in
 * single precision, U float, only from there); from patch weighted_from on
 * (the penalty points') times `weight`. */
#define PENALTY_THREADS 1024
static size_t penalty_factor_shared_bytes(size_t max_dofs, int in_shared) {
  return (2 + (in_shared ? max_dofs : 0)) * max_dofs * sizeof(double);
}

/* The threads take a patch's block as 32 columns by blockDim.x / 32 rows
 * at a time, so that a step's pass over it needs no division per entry
 * and a warp reads a row's consecutive doubles; 1024 threads, since the
 * block in shared memory leaves one patch a multiprocessor (the annulus:
 * 0.60 ms a design iteration against 1.31 ms with 256 threads and an
 * entry's row and column divided out of its index). */
template <bool IN_SHARED, class U>
static __global__ void __launch_bounds__(PENALTY_THREADS)
    penalty_factor_kernel(size_t n, size_t max_dofs, const size_t *__restrict__ start,
                          const size_t *__restrict__ block_start,
                          const uint32_t *__restrict__ block,
                          const size_t *__restrict__ inverse_start,
                          const double *__restrict__ kval, size_t weighted_from, double weight,
                          U *__restrict__ inverse, unsigned long long *failed) {
  static_assert(IN_SHARED || sizeof(U) == sizeof(double), "in place in double only");
  extern __shared__ double step[];
  double *row_k = step, *col_k = step + max_dofs;
  const unsigned lane = threadIdx.x % 32, row0 = threadIdx.x / 32, rows = blockDim.x / 32;
  for (size_t q = blockIdx.x; q < n; q += gridDim.x) {
    const unsigned m = (unsigned)(start[q + 1] - start[q]), nd = 3 * m;
    const uint32_t *b = block + block_start[q];
    U *slot = inverse + inverse_start[q];
    double *a;
    if constexpr (IN_SHARED)
      a = step + 2 * max_dofs;
    else
      a = (double *)slot;
    const double w = q >= weighted_from ? weight : 1;
    for (unsigned row = row0; row < nd; row += rows)
      for (unsigned col = lane; col < nd; col += 32) {
        const uint32_t at = __ldg(b + m * (row / 3) + col / 3);
        a[nd * row + col] =
            at == VOX_EFG_NO_BLOCK ? 0 : kval[9 * (size_t)at + 3 * (row % 3) + col % 3];
      }
    __syncthreads();
    for (int k = 0; k < (int)nd; k++) {
      const double pivot = a[nd * k + k]; /* the same value in every thread */
      if (!(pivot > 0)) {
        if (threadIdx.x == 0) atomicMax(failed, (unsigned long long)q + 1); /* the report only */
        break;
      }
      for (unsigned j = threadIdx.x; j < nd; j += blockDim.x) {
        row_k[j] = (int)j == k ? 1 / pivot : a[nd * k + j] / pivot;
        col_k[j] = a[nd * j + k];
      }
      __syncthreads();
      for (unsigned i = row0; i < nd; i += rows)
        for (unsigned j = lane; j < nd; j += 32)
          a[nd * i + j] = vox_efg_sweep_entry(k, (int)i, (int)j, a[nd * i + j], row_k, col_k);
      __syncthreads();
    }
    if (IN_SHARED || w != 1)
      for (unsigned e = threadIdx.x; e < nd * nd; e += blockDim.x)
        slot[e] = (U)(w != 1 ? a[e] * w : a[e]);
    __syncthreads();
  }
}

/* Each penalty patch's answers y_q = inverse_q r_q, a block per patch: its
 * residual gathered into shared memory, then PENALTY_SOLVE_GROUPS groups of
 * threads, each over its quarter of the columns with a thread per row
 * (reading row j of the symmetric inverse as column j: the threads of a
 * group read consecutive doubles), their partial sums added in order.
 * Shared memory: (1 + PENALTY_SOLVE_GROUPS) penalty_max_dofs doubles.
 * (Measured on the cantilever, 205 patches of about 100 rows: a thread
 * per row over all columns took 16 us a call, a warp per row 28 us; too
 * few warps in flight either way.) */
#define PENALTY_SOLVE_GROUPS 4
#define PENALTY_SOLVE_THREADS 512
template <class U>
static __device__ __forceinline__ void penalty_solve(size_t n, size_t max_dofs,
                                                     const size_t *__restrict__ start,
                                                     const int32_t *__restrict__ node,
                                                     const size_t *__restrict__ inverse_start,
                                                     const U *__restrict__ inverse,
                                                     const double *__restrict__ r,
                                                     double *__restrict__ y, size_t block,
                                                     size_t blocks) {
  extern __shared__ double shared[];
  double *rq = shared, *part = shared + max_dofs;
  const unsigned per = blockDim.x / PENALTY_SOLVE_GROUPS, group = threadIdx.x / per,
                 t = threadIdx.x % per;
  for (size_t q = block; q < n; q += blocks) {
    const size_t first = start[q];
    const unsigned nd = 3 * (unsigned)(start[q + 1] - first);
    for (unsigned j = threadIdx.x; j < nd; j += blockDim.x)
      rq[j] = r[3 * (size_t)__ldg(node + first + j / 3) + j % 3];
    __syncthreads();
    const U *inv = inverse + inverse_start[q];
    const unsigned j0 = group * nd / PENALTY_SOLVE_GROUPS,
                   j1 = (group + 1) * nd / PENALTY_SOLVE_GROUPS;
    for (unsigned i = t; i < nd; i += per) {
      double s = 0;
      for (unsigned j = j0; j < j1; j++) s += (double)__ldg(inv + (size_t)nd * j + i) * rq[j];
      part[max_dofs * group + i] = s;
    }
    __syncthreads();
    for (unsigned i = threadIdx.x; i < nd; i += blockDim.x) {
      double s = part[i];
      for (unsigned g = 1; g < PENALTY_SOLVE_GROUPS; g++) s += part[max_dofs * g + i];
      y[3 * first + i] = s;
    }
    __syncthreads();
  }
}

/* Both kinds of patches' answers in one launch: the first penalty_blocks
 * blocks take the penalty patches (few, each a block's work), the rest the
 * cells' (a thread a row), so that the cells' streaming fills the GPU
 * beside the penalty patches instead of after them. */
template <class T, class U>
static __global__ void __launch_bounds__(PENALTY_SOLVE_THREADS)
    patches_solve_kernel(size_t n_patches, const int32_t *__restrict__ node,
                         const T *__restrict__ inverse, size_t n_penalty, size_t max_dofs,
                         const size_t *__restrict__ pp_start, const int32_t *__restrict__ pp_node,
                         const size_t *__restrict__ pp_inverse_start,
                         const U *__restrict__ pp_inverse, const double *__restrict__ r,
                         double *__restrict__ y, unsigned penalty_blocks) {
  if (blockIdx.x < penalty_blocks)
    penalty_solve(n_penalty, max_dofs, pp_start, pp_node, pp_inverse_start, pp_inverse, r,
                  y + VOX_EFG_PATCH_DOFS * n_patches, blockIdx.x, penalty_blocks);
  else
    patch_solve(n_patches, node, inverse, r, y, blockIdx.x - penalty_blocks,
                gridDim.x - penalty_blocks);
}

/* A node's slots in the penalty patches and their answers (empty without
 * them). */
struct penalty_sum {
  const uint32_t *start, *slot;
  const double *y;
};

/* Dof t's sum over its node's patches' answers y, in their order, then
 * over its penalty patches' answers. */
static __device__ __forceinline__ double patch_sum(const int32_t *__restrict__ node_patch,
                                                   const double *__restrict__ y,
                                                   penalty_sum pen, size_t t) {
  const int32_t *list = node_patch + 8 * (t / 3);
  const unsigned comp = (unsigned)(t % 3);
  double s = 0;
  for (int k = 0; k < 8; k++) {
    const int32_t e = __ldg(list + k);
    if (e < 0) break;
    s += y[3 * (size_t)e + comp];
  }
  if (pen.start)
    for (uint32_t k = __ldg(pen.start + t / 3), end = __ldg(pen.start + t / 3 + 1); k < end; k++)
      s += pen.y[3 * (size_t)__ldg(pen.slot + k) + comp];
  return s;
}

/* z = each node's sum over its patches: a thread a dof. */
static __global__ void patch_sum_kernel(size_t n_nodes, const int32_t *__restrict__ node_patch,
                                        const double *__restrict__ y, penalty_sum pen,
                                        double *__restrict__ z) {
  VOX_GRID_STRIDE(t, 3 * n_nodes) z[t] = patch_sum(node_patch, y, pen, t);
}

/* ---- the multigrid's levels (efg_levels.h) ---------------------------------- */

static __device__ __forceinline__ ptrdiff_t find_block(const size_t *__restrict__ row_start,
                                                       const int32_t *__restrict__ col,
                                                       int32_t i, int32_t j) {
  size_t lo = row_start[i], hi = row_start[i + 1];
  const size_t end = hi;
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (__ldg(col + mid) < j)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < end && __ldg(col + lo) == j ? (ptrdiff_t)lo : -1;
}

/* A block of B = A P or of A_c = P^T B, a thread a block: the sum over the
 * 27 children of the block's coarse node (its column for B, its row for
 * A_c) of the child's weight times the block of the finer matrix, as
 * vox_efg_galerkin sums them. */
static __global__ void galerkin_kernel(size_t n_blocks, const int32_t *__restrict__ out_row,
                                       const int32_t *__restrict__ out_col,
                                       const int32_t *__restrict__ child,
                                       const double *__restrict__ child_weight, int by_column,
                                       const size_t *__restrict__ in_row_start,
                                       const int32_t *__restrict__ in_col,
                                       const double *__restrict__ in_val, double *__restrict__ out) {
  VOX_GRID_STRIDE(k, n_blocks) {
    const int32_t row = out_row[k], col = out_col[k];
    const int32_t coarse = by_column ? col : row;
    double s[9] = {0, 0, 0, 0, 0, 0, 0, 0, 0};
    for (int c = 0; c < 27; c++) {
      const int32_t f = __ldg(child + 27 * (size_t)coarse + c);
      if (f < 0) continue;
      const ptrdiff_t at = by_column ? find_block(in_row_start, in_col, row, f)
                                     : find_block(in_row_start, in_col, f, col);
      if (at < 0) continue;
      const double w = __ldg(child_weight + 27 * (size_t)coarse + c);
      const double *blk = in_val + 9 * (size_t)at;
#pragma unroll
      for (int e = 0; e < 9; e++) s[e] += w * __ldg(blk + e);
    }
#pragma unroll
    for (int e = 0; e < 9; e++) out[9 * k + e] = s[e];
  }
}

/* The inverse of each node's diagonal block of a level's matrix (K's
 * holds the diagonal: a node shares its own Gauss points); a block that is
 * missing or not definite is reported by its node. */
static __global__ void diagonal_inverse_kernel(size_t n, const size_t *__restrict__ row_start,
                                               const int32_t *__restrict__ col,
                                               const double *__restrict__ val,
                                               double *__restrict__ inv,
                                               unsigned long long *failed) {
  VOX_GRID_STRIDE(i, n) {
    const ptrdiff_t at = find_block(row_start, col, (int32_t)i, (int32_t)i);
    if (at < 0 || !vox_efg_spd3_inverse(val + 9 * (size_t)at, inv + 9 * i)) {
      for (int r = 0; r < 9; r++) inv[9 * i + r] = 0;
      atomicMax(failed, (unsigned long long)i + 1); /* the error report only */
    }
  }
}

/* How far the last level's diagonal has moved since it was factored (the
 * largest of vox_efg_diagonal_drift against what dense_kernel kept, as
 * bits: non-negative doubles order as their bits; the same maximum
 * whatever the atomics' order). */
static __global__ void diagonal_drift_kernel(size_t n, const size_t *__restrict__ row_start,
                                             const int32_t *__restrict__ col,
                                             const double *__restrict__ val,
                                             const double *__restrict__ ref,
                                             unsigned long long *drift) {
  VOX_GRID_STRIDE(i, n) {
    const ptrdiff_t at = find_block(row_start, col, (int32_t)i, (int32_t)i);
    if (at < 0) continue; /* reported by diagonal_inverse_kernel */
    const double m = vox_efg_diagonal_drift(val + 9 * (size_t)at, ref + 3 * i);
    atomicMax(drift, (unsigned long long)__double_as_longlong(m));
  }
}

/* y = A x for a symmetric block matrix, a warp per block row; with b, the
 * residual y = b - A x. The lanes take the row's blocks in turn (a run of
 * blocks read together) and the warp sums the row's three values by
 * shuffles: the rows are long (about 90 to 270 blocks on K) and few (a node
 * each), so the sparse table's product, a thread per scalar row, would leave
 * a GPU a few warps per multiprocessor on the paper's 16,605 nodes, each
 * walking its row alone. With mirror (K's and level 0's: the index of K_ji
 * for each block K_ij), a block below the diagonal is read as its mirror
 * transposed, the same numbers: the mirror lies in a row a little before
 * this one, read lately and still in the L2 cache, so the lower half's bytes
 * stop coming from DRAM. Level 0 in float (T = float) holds a block's first
 * eight values together, read as two 16-byte loads, and the ninth values
 * of all blocks after them (`ninth`), where a warp's lanes read
 * neighbours: nine 4-byte loads 36 bytes apart across the lanes used 5.7
 * of each sector's 32 bytes and bound the product by the first-level
 * cache (83 % of its throughput; 67 % with the three loads, 42 against
 * 49 us on the quarter annulus of Lu et al. 2021, the same DRAM bytes;
 * blocks padded to twelve floats read as three 16-byte loads took 47 us
 * for a quarter more bytes). */
template <class T>
static __global__ void level_product_kernel(size_t n, const size_t *__restrict__ row_start,
                                            const int32_t *__restrict__ col,
                                            const uint32_t *__restrict__ mirror,
                                            const T *__restrict__ val,
                                            const float *__restrict__ ninth,
                                            const double *__restrict__ x,
                                            const double *__restrict__ b, double *__restrict__ y) {
  const unsigned lane = threadIdx.x % 32;
  WARP_STRIDE(i, n) {
    double s0 = 0, s1 = 0, s2 = 0;
    for (size_t k = row_start[i] + lane; k < row_start[i + 1]; k += 32) {
      const int32_t j = __ldg(col + k);
      const double *xc = x + 3 * (size_t)j;
      const double x0 = __ldg(xc), x1 = __ldg(xc + 1), x2 = __ldg(xc + 2);
      if constexpr (sizeof(T) == sizeof(float)) {
        const int below = mirror && (size_t)j < i;
        const size_t e = below ? (size_t)__ldg(mirror + k) : k;
        const float4 *a = reinterpret_cast<const float4 *>(val) + 2 * e;
        const float4 p = __ldg(a), q = __ldg(a + 1);
        const float r = __ldg(ninth + e);
        /* the block's rows (p.x p.y p.z) (p.w q.x q.y) (q.z q.w r) */
        if (below) {
          s0 += (double)p.x * x0 + (double)p.w * x1 + (double)q.z * x2;
          s1 += (double)p.y * x0 + (double)q.x * x1 + (double)q.w * x2;
          s2 += (double)p.z * x0 + (double)q.y * x1 + (double)r * x2;
        } else {
          s0 += (double)p.x * x0 + (double)p.y * x1 + (double)p.z * x2;
          s1 += (double)p.w * x0 + (double)q.x * x1 + (double)q.y * x2;
          s2 += (double)q.z * x0 + (double)q.w * x1 + (double)r * x2;
        }
      } else if (mirror && (size_t)j < i) {
        const T *a = val + 9 * (size_t)__ldg(mirror + k);
        s0 += (double)__ldg(a) * x0 + (double)__ldg(a + 3) * x1 + (double)__ldg(a + 6) * x2;
        s1 += (double)__ldg(a + 1) * x0 + (double)__ldg(a + 4) * x1 + (double)__ldg(a + 7) * x2;
        s2 += (double)__ldg(a + 2) * x0 + (double)__ldg(a + 5) * x1 + (double)__ldg(a + 8) * x2;
      } else {
        const T *a = val + 9 * k;
        s0 += (double)__ldg(a) * x0 + (double)__ldg(a + 1) * x1 + (double)__ldg(a + 2) * x2;
        s1 += (double)__ldg(a + 3) * x0 + (double)__ldg(a + 4) * x1 + (double)__ldg(a + 5) * x2;
        s2 += (double)__ldg(a + 6) * x0 + (double)__ldg(a + 7) * x1 + (double)__ldg(a + 8) * x2;
      }
    }
    s0 = vox_cuda_warp_sum(s0);
    s1 = vox_cuda_warp_sum(s1);
    s2 = vox_cuda_warp_sum(s2);
    if (lane == 0 && b)
      y[3 * i] = b[3 * i] - s0, y[3 * i + 1] = b[3 * i + 1] - s1, y[3 * i + 2] = b[3 * i + 2] - s2;
    else if (lane == 0)
      y[3 * i] = s0, y[3 * i + 1] = s1, y[3 * i + 2] = s2;
  }
}

/* A Chebyshev step's update from z = M r at dof t (efg_ops.h's
 * mg_smooth_step). */
static __device__ __forceinline__ void chebyshev_update(size_t t, double z, double alpha,
                                                        double beta, int first,
                                                        double *__restrict__ dir,
                                                        double *__restrict__ x) {
  const double dn = alpha * z + (beta != 0 ? beta * dir[t] : 0);
  dir[t] = dn;
  x[t] = first ? dn : x[t] + dn;
}

/* The patches' sums and the Chebyshev update. */
static __global__ void patch_sum_step_kernel(size_t n_nodes, const int32_t *__restrict__ node_patch,
                                             const double *__restrict__ y, penalty_sum pen,
                                             double alpha, double beta, int first,
                                             double *__restrict__ dir, double *__restrict__ x) {
  VOX_GRID_STRIDE(t, 3 * n_nodes)
  chebyshev_update(t, patch_sum(node_patch, y, pen, t), alpha, beta, first, dir, x);
}

/* Dof t of a node's inverted diagonal block times r. */
static __device__ __forceinline__ double block_times(const double *__restrict__ inv,
                                                     const double *__restrict__ r, size_t t) {
  const size_t i = t / 3, c = t % 3;
  const double *m = inv + 9 * i + 3 * c, *ri = r + 3 * i;
  return m[0] * ri[0] + m[1] * ri[1] + m[2] * ri[2];
}

/* Block Jacobi on a coarse level and the Chebyshev update. */
static __global__ void level_jacobi_step_kernel(size_t n, const double *__restrict__ inv,
                                                const double *__restrict__ r, double alpha,
                                                double beta, int first, double *__restrict__ dir,
                                                double *__restrict__ x) {
  VOX_GRID_STRIDE(t, 3 * n) chebyshev_update(t, block_times(inv, r, t), alpha, beta, first, dir, x);
}

static __global__ void level_jacobi_kernel(size_t n, const double *__restrict__ inv,
                                           const double *__restrict__ r, double *__restrict__ z) {
  VOX_GRID_STRIDE(t, 3 * n) z[t] = block_times(inv, r, t);
}

static __global__ void restrict_kernel(size_t n_coarse, const int32_t *__restrict__ child,
                                       const double *__restrict__ child_weight,
                                       const double *__restrict__ r, double *__restrict__ rc) {
  VOX_GRID_STRIDE(t, 3 * n_coarse) {
    const size_t I = t / 3, c = t % 3;
    double s = 0;
#pragma unroll
    for (int k = 0; k < 27; k++) {
      const int32_t i = __ldg(child + 27 * I + k);
      if (i >= 0) s += __ldg(child_weight + 27 * I + k) * r[3 * (size_t)i + c];
    }
    rc[t] = s;
  }
}

static __global__ void prolong_add_kernel(size_t n_fine, const int32_t *__restrict__ parent,
                                          const double *__restrict__ parent_weight,
                                          const double *__restrict__ xc, double *__restrict__ x) {
  VOX_GRID_STRIDE(t, 3 * n_fine) {
    const size_t i = t / 3, c = t % 3;
    double s = x[t];
#pragma unroll
    for (int k = 0; k < 8; k++) { /* the parents first, then -1 */
      const int32_t J = __ldg(parent + 8 * i + k);
      if (J >= 0) s += __ldg(parent_weight + 8 * i + k) * xc[3 * (size_t)J + c];
    }
    x[t] = s;
  }
}

/* The last level's blocks into its dense matrix (column-major, both
 * triangles: the blocks of a symmetric matrix), a thread a block, and its
 * diagonal into kept (what later setups' drift is measured from). */
static __global__ void dense_kernel(size_t n_blocks, int n, const int32_t *__restrict__ row,
                                    const int32_t *__restrict__ col,
                                    const double *__restrict__ val, double *__restrict__ dense,
                                    double *__restrict__ kept) {
  VOX_GRID_STRIDE(k, n_blocks) {
    for (int r = 0; r < 3; r++)
      for (int c = 0; c < 3; c++)
        dense[(size_t)(3 * col[k] + c) * (size_t)n + 3 * (size_t)row[k] + r] = val[9 * k + 3 * r + c];
    if (row[k] == col[k])
      for (int c = 0; c < 3; c++) kept[3 * (size_t)row[k] + c] = val[9 * k + 4 * c];
  }
}

/* a = the symmetric matrix whose lower triangle is lower's (syrk writes
 * no other), so that column i is row i. */
static __global__ void symmetric_copy_kernel(int n, const double *__restrict__ lower,
                                             double *__restrict__ a) {
  VOX_GRID_STRIDE(t, (size_t)n * (size_t)n) {
    const size_t i = t / (size_t)n, j = t % (size_t)n; /* column i, row j */
    a[t] = j < i ? lower[j * (size_t)n + i] : lower[t];
  }
}

/* x = A^-1 b with the dense symmetric inverse, a warp per row reading its
 * column (one contiguous stream of the inverse, where two triangular
 * solves are a chain of dependent steps). */
static __global__ void dense_solve_kernel(int n, const double *__restrict__ inv,
                                          const double *__restrict__ b, double *__restrict__ x) {
  const unsigned lane = threadIdx.x % 32;
  WARP_STRIDE(i, (size_t)n) {
    const double *col = inv + i * (size_t)n;
    double s = 0;
    for (int j = (int)lane; j < n; j += 32) s += __ldg(col + j) * __ldg(b + j);
    s = vox_cuda_warp_sum(s);
    if (lane == 0) x[i] = s;
  }
}

static __global__ void strain_energy_kernel(efg_view v, const double *__restrict__ u,
                                            double *__restrict__ q) {
  const unsigned lane = threadIdx.x % 32;
  WARP_STRIDE(g, v.n_points) {
    double du[9] = {0, 0, 0, 0, 0, 0, 0, 0, 0}; /* du[3a + k] = d u_a / d x_k */
    for (uint32_t e = v.g_start[g] + lane; e < v.g_start[g + 1]; e += 32) {
      const double *d = v.g_dphi + 3 * (size_t)e, *ue = u + 3 * (size_t)v.g_node[e];
#pragma unroll
      for (int a = 0; a < 3; a++)
#pragma unroll
        for (int k = 0; k < 3; k++) du[3 * a + k] += ue[a] * d[k];
    }
#pragma unroll
    for (int r = 0; r < 9; r++) du[r] = vox_cuda_warp_sum(du[r]);
    if (lane == 0) {
      const double tr = du[0] + du[4] + du[8];
      double ee = 0; /* eps : eps */
#pragma unroll
      for (int a = 0; a < 3; a++)
#pragma unroll
        for (int k = 0; k < 3; k++) {
          const double eps = 0.5 * (du[3 * a + k] + du[3 * k + a]);
          ee += eps * eps;
        }
      q[g] = v.lambda * tr * tr + 2 * v.mu * ee;
    }
  }
}

static __global__ void sensitivity_kernel(efg_view v, const double *__restrict__ rho_gauss,
                                          const double *__restrict__ q, double p,
                                          double *__restrict__ dc) {
  const unsigned lane = threadIdx.x % 32;
  WARP_STRIDE(i, v.n_nodes) {
    double s = 0;
    for (uint32_t k = v.ng_start[i] + lane; k < v.ng_start[i + 1]; k += 32) {
      const uint32_t g = v.ng_point[k];
      const double r = rho_gauss[g];
      if (!(r > 0)) continue; /* the modulus is floored at zero there (efg_sensitivity.h) */
      s += v.g_weight[g] * v.g_modulus[g] * p * pow(r, p - 1) * v.g_phi[v.ng_entry[k]] * q[g];
    }
    s = vox_cuda_warp_sum(s);
    if (lane == 0) dc[i] = -s;
  }
}

/* ---- the table -------------------------------------------------------------- */

static vox_status check_vec(vox_backend *be, const vox_vec *x, size_t n, const char *what) {
  if (x->scalar == VOX_DOUBLE && x->n == n) return VOX_OK;
  return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT,
                   "element-free Galerkin: %s must be a double vector of %zu entries", what, n);
}

static void efg_destroy(vox_backend *be, vox_efg_device *d) {
  if (!d) return;
  void *p[] = {d->g_start, d->ng_start, d->ng_entry, d->ng_point, d->g_node, d->g_phi,
               d->g_dphi,  d->g_weight, d->g_modulus, d->s_start, d->ns_start, d->ns_entry,
               d->ns_point, d->s_node, d->s_phi, d->s_stiffness, d->s_fixed, d->s_scaled,
               d->s_factor, d->block_row, d->mirror, d->row_key, d->failed,
               d->p_node, d->p_node_patch, d->p_block, d->p_inverse, d->p_work, d->p_diagonal,
               d->p_inverse_single, d->k_single, d->pp_inverse, d->pp_inverse_single, d->pp_start,
               d->pp_block_start, d->pp_inverse_start, d->pp_node, d->pp_block,
               d->node_pp_start, d->node_pp,
               d->dense_factor, d->dense, d->dense_work, d->dense_info, d->dense_diagonal};
  const cudaStream_t factor_stream = vox_cuda(be)->factor_stream;
  if (factor_stream) cudaStreamSynchronize(factor_stream); /* nothing left writing */
  for (size_t i = 0; i < sizeof p / sizeof p[0]; i++) vox_cuda_free(p[i]);
  for (int l = 0; l < VOX_EFG_MAX_LEVELS; l++) {
    void *q[] = {d->level_row_start[l], d->level_col[l], d->level_block_row[l],
                 d->level_val[l], d->level_inverse[l], d->t_parent[l], d->t_child[l],
                 d->t_parent_weight[l], d->t_child_weight[l], d->t_b_row_start[l],
                 d->t_b_col[l], d->t_b_block_row[l], d->t_b_val[l]};
    for (size_t i = 0; i < sizeof q / sizeof q[0]; i++) vox_cuda_free(q[i]);
  }
  vox_cuda_efg_oc_destroy(&d->oc);
  vox_cuda_matrix_destroy(be, d->k);
  vox_cuda_matrix_destroy(be, d->inverse);
  free(d);
}

static vox_status upload(vox_backend *be, vox_efg_device *d, void **dst, const void *src,
                         size_t bytes, const char *what) {
  TRY(vox_cuda_alloc(be, dst, bytes ? bytes : 1, what));
  d->bytes += bytes;
  if (bytes) CUDA_TRY(be, cudaMemcpy(*dst, src, bytes, cudaMemcpyHostToDevice), what);
  return VOX_OK;
}

/* n host size_t values as 32-bit ones on the device. */
static vox_status upload_u32(vox_backend *be, vox_efg_device *d, uint32_t **dst,
                             const size_t *src, size_t n, const char *what) {
  uint32_t *h = (uint32_t *)malloc((n ? n : 1) * sizeof *h);
  if (!h) return vox_error(be->ctx, VOX_ERR_NO_MEMORY, "out of memory staging %s", what);
  for (size_t i = 0; i < n; i++) {
    /* the top of the range is kept free: the assembly's bisection asks
     * for one past the largest point index, and the lanes' loops step 32
     * past the last entry */
    if (src[i] > UINT32_MAX - 64) {
      free(h);
      return vox_error(be->ctx, VOX_ERR_UNSUPPORTED,
                       "element-free Galerkin on CUDA: %s hold an index of %zu, past the 32 "
                       "bits of the device's tables",
                       what, src[i]);
    }
    h[i] = (uint32_t)src[i];
  }
  vox_status s = upload(be, d, (void **)dst, h, n * sizeof *h, what);
  free(h);
  return s;
}

/* The shape table s and its transpose np (efg_mls.h) on the device. */
static vox_status upload_shapes(vox_backend *be, vox_efg_device *d, const vox_efg_shapes *s,
                                const vox_efg_node_points *np, size_t n_nodes, uint32_t **start,
                                int32_t **node, double **phi, double **dphi, uint32_t **nstart,
                                uint32_t **nentry, uint32_t **npoint, const char *what) {
  const size_t ne = s->start[s->n_points];
  TRY(upload_u32(be, d, start, s->start, s->n_points + 1, what));
  TRY(upload(be, d, (void **)node, s->node, ne * sizeof **node, what));
  TRY(upload(be, d, (void **)phi, s->phi, ne * sizeof **phi, what));
  if (dphi) TRY(upload(be, d, (void **)dphi, s->dphi, 3 * ne * sizeof **dphi, what));
  TRY(upload_u32(be, d, nstart, np->start, n_nodes + 1, what));
  TRY(upload_u32(be, d, nentry, np->entry, ne, what));
  TRY(upload_u32(be, d, npoint, np->point, ne, what));
  return VOX_OK;
}

static vox_status create_tables(vox_backend *be, vox_efg_device *d, const vox_efg_model *efg,
                                const vox_bsr *pattern) {
  const size_t n = efg->nodes.n, ng = efg->gauss.n_points, ns = efg->support.n_points;
  if (pattern->n_rows != n || pattern->br != 3 || pattern->bc != 3 || !efg->gauss.dphi)
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT,
                     "element-free Galerkin: a stiffness pattern of %zu block rows of %d x %d "
                     "for %zu nodes",
                     pattern->n_rows, pattern->br, pattern->bc, n);
  d->n_nodes = n, d->n_points = ng, d->n_blocks = vox_bsr_blocks(pattern);
  d->lambda = efg->lambda, d->mu = efg->mu;
  TRY(upload_shapes(be, d, &efg->gauss, &efg->node_gauss, n, &d->g_start, &d->g_node, &d->g_phi,
                    &d->g_dphi, &d->ng_start, &d->ng_entry, &d->ng_point,
                    "the EFG Gauss points' shape functions"));
  TRY(upload(be, d, (void **)&d->g_weight, efg->gauss_weight, ng * sizeof(double),
             "the EFG Gauss points' weights"));
  TRY(upload(be, d, (void **)&d->g_modulus, efg->gauss_modulus, ng * sizeof(double),
             "the EFG Gauss points' moduli"));
  TRY(upload_shapes(be, d, &efg->support, &efg->node_support, n, &d->s_start, &d->s_node,
                    &d->s_phi, NULL, &d->ns_start, &d->ns_entry, &d->ns_point,
                    "the EFG penalty points' shape functions"));
  TRY(upload(be, d, (void **)&d->s_stiffness, efg->support_stiffness, 3 * ns * sizeof(double),
             "the EFG penalty points' springs"));
  d->n_support = ns;
  TRY(upload(be, d, (void **)&d->s_fixed, efg->support_fixed, 3 * ns * sizeof(double),
             "the EFG penalty points' springs"));
  TRY(upload(be, d, (void **)&d->s_scaled, efg->support_scaled, 3 * ns * sizeof(double),
             "the EFG penalty points' springs"));
  TRY(vox_cuda_alloc(be, (void **)&d->s_factor, (ns ? ns : 1) * sizeof(double),
                     "the EFG penalty points' sensitivities"));
  d->bytes += ns * sizeof(double);
  /* K and the inverses of its diagonal blocks as matrices of the sparse
   * table, and the block row of each block of K */
  TRY(vox_cuda_matrix_create(be, pattern, 0, &d->k));
  d->bytes += vox_cuda_matrix_bytes(d->k);
  int32_t *row = (int32_t *)malloc((d->n_blocks ? d->n_blocks : 1) * sizeof *row);
  uint32_t *mirror = (uint32_t *)malloc((d->n_blocks ? d->n_blocks : 1) * sizeof *mirror);
  vox_bsr diag = {n, n, 3, 3, NULL, NULL, NULL};
  diag.row_start = (size_t *)malloc((n + 1) * sizeof *diag.row_start);
  diag.col = (int32_t *)malloc((n ? n : 1) * sizeof *diag.col);
  diag.val = (double *)calloc(9 * n + 1, sizeof *diag.val);
  vox_status s = VOX_OK;
  if (!row || !mirror || !diag.row_start || !diag.col || !diag.val)
    s = vox_error(be->ctx, VOX_ERR_NO_MEMORY,
                  "element-free Galerkin: out of memory (stiffness matrix on the device)");
  if (s == VOX_OK) {
    for (size_t i = 0; i < n; i++) {
      for (size_t b = pattern->row_start[i]; b < pattern->row_start[i + 1]; b++)
        row[b] = (int32_t)i;
      diag.row_start[i] = i;
      diag.col[i] = (int32_t)i;
    }
    diag.row_start[n] = n;
    s = upload(be, d, (void **)&d->block_row, row, d->n_blocks * sizeof *row,
               "the EFG stiffness blocks' rows");
  }
  if (s == VOX_OK && vox_efg_stiffness_mirror(pattern, mirror) != 0)
    s = vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT,
                  "element-free Galerkin: the stiffness pattern is not symmetric");
  if (s == VOX_OK)
    s = upload(be, d, (void **)&d->mirror, mirror, d->n_blocks * sizeof *mirror,
               "the EFG stiffness blocks' mirrors");
  if (s == VOX_OK) s = vox_cuda_matrix_create(be, &diag, 0, &d->inverse);
  if (s == VOX_OK) d->bytes += vox_cuda_matrix_bytes(d->inverse);
  free(row);
  free(mirror);
  vox_bsr_free(&diag);
  TRY(s);
  TRY(vox_cuda_efg_oc_create(be, efg, &d->oc));
  d->bytes += d->oc.bytes;
  /* two words: block Jacobi's or the cells' patches', the penalty patches' */
  return vox_cuda_alloc(be, (void **)&d->failed, 2 * sizeof *d->failed,
                        "the EFG factorisations' status words");
}

/* The assembly's row tables (assemble_rows_kernel): each node's key, the
 * place of its grid line in the strides of the box of offsets that two
 * supports can span, (2 reach + 1) lines along each axis (efg_mls.h); and
 * the shared memory of a warp, its slot table and the sums of the longest
 * row's blocks on and above the diagonal. */
static vox_status create_rows(vox_backend *be, vox_efg_device *d, const vox_efg_model *efg,
                              const vox_bsr *pattern) {
  const vox_efg_nodes *nodes = &efg->nodes;
  int64_t b[3], box = 1;
  for (int a = 0; a < 3; a++) b[a] = 2 * (int64_t)nodes->reach[a] + 1, box *= b[a];
  size_t most_upper = 1;
  for (size_t i = 0; i < nodes->n; i++) {
    size_t upper = 0;
    for (size_t k = pattern->row_start[i]; k < pattern->row_start[i + 1]; k++)
      upper += (size_t)pattern->col[k] >= i;
    most_upper = upper > most_upper ? upper : most_upper;
  }
  int device = 0, most = 0;
  CUDA_TRY(be, cudaGetDevice(&device), "the device");
  CUDA_TRY(be, cudaDeviceGetAttribute(&most, cudaDevAttrMaxSharedMemoryPerBlockOptin, device),
           "the device's shared memory");
  /* four warps a thread block, fewer where their tables would not fit */
  const size_t table = ((size_t)box * sizeof(int16_t) + 7) / 8 * 8;
  const size_t sums = 9 * most_upper * sizeof(double);
  unsigned warps = 4;
  while (warps > 1 && warps * (sums + table) > (size_t)most) warps--;
  if (sums + table > (size_t)most)
    return vox_error(be->ctx, VOX_ERR_UNSUPPORTED,
                     "element-free Galerkin on CUDA: supports this wide (%zu blocks a row from "
                     "the diagonal on) pass the GPU's shared memory for the assembly (a smaller "
                     "--efg-support)",
                     most_upper);
  d->rows_warps = warps;
  d->rows_acc_doubles = 9 * most_upper;
  d->rows_shared = warps * (sums + table);
  d->rows_box = (int)box;
  d->rows_centre = (int)((nodes->reach[2] * b[1] + nodes->reach[1]) * b[0] + nodes->reach[0]);
  CUDA_TRY(be,
           cudaFuncSetAttribute(assemble_rows_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                (int)d->rows_shared),
           "the EFG assembly's shared memory");
  int32_t *key = (int32_t *)malloc((nodes->n ? nodes->n : 1) * sizeof *key);
  if (!key)
    return vox_error(be->ctx, VOX_ERR_NO_MEMORY,
                     "element-free Galerkin: out of memory (the assembly's node keys)");
  vox_status s = VOX_OK;
  for (size_t n = 0; n < nodes->n && s == VOX_OK; n++) {
    const int32_t *c = nodes->coord + 3 * n;
    const int64_t k = ((int64_t)c[2] * b[1] + c[1]) * b[0] + c[0];
    if (k > INT32_MAX - box)
      s = vox_error(be->ctx, VOX_ERR_UNSUPPORTED,
                    "element-free Galerkin on CUDA: a grid this large passes the 32 bits of "
                    "the assembly's node keys");
    key[n] = (int32_t)k;
  }
  if (s == VOX_OK)
    s = upload(be, d, (void **)&d->row_key, key, nodes->n * sizeof *key,
               "the EFG assembly's node keys");
  free(key);
  return s;
}

static vox_status efg_create(vox_backend *be, const vox_efg_model *efg, const vox_bsr *pattern,
                             vox_precision precision, vox_efg_device **out) {
  *out = NULL;
  vox_efg_device *d = (vox_efg_device *)calloc(1, sizeof *d);
  if (!d) return vox_error(be->ctx, VOX_ERR_NO_MEMORY, "out of memory");
  d->single = precision == VOX_PRECISION_MIXED;
  vox_status s = create_tables(be, d, efg, pattern);
  if (s == VOX_OK) s = create_rows(be, d, efg, pattern);
  if (s != VOX_OK) {
    efg_destroy(be, d);
    return s;
  }
  *out = d;
  return VOX_OK;
}

static size_t efg_bytes(const vox_efg_device *d) { return d->bytes; }

static vox_status efg_gauss_density(vox_backend *be, vox_efg_device *d, const vox_vec *rho,
                                    vox_vec *rho_gauss) {
  TRY(check_vec(be, rho, d->n_nodes, "the nodal densities"));
  TRY(check_vec(be, rho_gauss, d->n_points, "the Gauss points' densities"));
  gauss_density_kernel<<<warp_grid(d->n_points), VOX_CUDA_THREADS>>>(view_of(d), rho->data,
                                                                       rho_gauss->data);
  CUDA_LAUNCHED(be, "the EFG Gauss points' densities");
  return VOX_OK;
}

static vox_status efg_gauss_scale(vox_backend *be, vox_efg_device *d, const vox_vec *rho_gauss,
                                  double p, vox_vec *scale) {
  TRY(check_vec(be, rho_gauss, d->n_points, "the Gauss points' densities"));
  TRY(check_vec(be, scale, d->n_points, "the Gauss points' factors"));
  gauss_scale_kernel<<<vox_cuda_grid(d->n_points), VOX_CUDA_THREADS>>>(
      view_of(d), rho_gauss->data, p, scale->data);
  CUDA_LAUNCHED(be, "the EFG Gauss points' factors");
  return VOX_OK;
}

static vox_status efg_assemble(vox_backend *be, vox_efg_device *d, const vox_vec *scale) {
  TRY(check_vec(be, scale, d->n_points, "the Gauss points' factors"));
  const efg_rows rows = {d->row_key, d->rows_box, d->rows_centre, d->rows_acc_doubles};
  const unsigned threads = 32 * d->rows_warps;
  const size_t blocks = (d->n_nodes + d->rows_warps - 1) / d->rows_warps;
  assemble_rows_kernel<<<(unsigned)(blocks ? blocks : 1), threads, d->rows_shared>>>(
      view_of(d), rows, scale->data, values_of(d, d->k));
  CUDA_LAUNCHED(be, "the EFG node-pair assembly");
  return VOX_OK;
}

static vox_status efg_block_jacobi(vox_backend *be, vox_efg_device *d) {
  CUDA_TRY(be, cudaMemsetAsync(d->failed, 0, sizeof *d->failed), "block Jacobi's status");
  const efg_view v = view_of(d);
  diagonal_inverse_kernel<<<vox_cuda_grid(d->n_nodes), VOX_CUDA_THREADS>>>(
      d->n_nodes, v.row_start, v.col, values_of(d, d->k), values_of(d, d->inverse), d->failed);
  CUDA_LAUNCHED(be, "the EFG block Jacobi inverses");
  unsigned long long failed = 0;
  CUDA_TRY(be, cudaMemcpy(&failed, d->failed, sizeof failed, cudaMemcpyDeviceToHost),
           "block Jacobi's status");
  if (failed)
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT,
                     "element-free Galerkin: the stiffness block of field node %llu is not "
                     "positive definite",
                     failed - 1);
  return VOX_OK;
}

static vox_status efg_apply(vox_backend *be, vox_efg_device *d, const vox_vec *x, vox_vec *y) {
  TRY(check_vec(be, x, 3 * d->n_nodes, "x of K x"));
  TRY(check_vec(be, y, 3 * d->n_nodes, "y of K x"));
  const efg_view v = view_of(d);
  level_product_kernel<<<warp_grid(d->n_nodes), VOX_CUDA_THREADS, 0, vox_cuda_stream(be)>>>(
      d->n_nodes, v.row_start, v.col, d->mirror, values_of(d, d->k), NULL, x->data, NULL,
      y->data);
  CUDA_LAUNCHED(be, "the EFG stiffness product");
  return VOX_OK;
}

static vox_status efg_precondition(vox_backend *be, vox_efg_device *d, const vox_vec *r,
                                   vox_vec *z) {
  TRY(check_vec(be, r, 3 * d->n_nodes, "the residual"));
  TRY(check_vec(be, z, 3 * d->n_nodes, "the preconditioned residual"));
  return vox_cuda_matrix_apply(be, d->inverse, r, z, 0);
}

static vox_status efg_patches_create(vox_backend *be, vox_efg_device *d,
                                     const vox_efg_patches *p) {
  if (d->p_node)
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT,
                     "element-free Galerkin: the patches' tables are already on the device");
  if (p->n_nodes != d->n_nodes)
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT,
                     "element-free Galerkin: patches of %zu nodes for %zu field nodes",
                     p->n_nodes, d->n_nodes);
  d->n_patches = p->n;
  d->penalty_weight = p->penalty_weight;
  TRY(upload(be, d, (void **)&d->p_node, p->node, 8 * p->n * sizeof *p->node,
             "the EFG patches' corners"));
  TRY(upload(be, d, (void **)&d->p_block, p->block, 64 * p->n * sizeof *p->block,
             "the EFG patches' blocks"));
  TRY(upload(be, d, (void **)&d->p_node_patch, p->node_patch,
             8 * p->n_nodes * sizeof *p->node_patch, "the EFG nodes' patches"));
  /* the cells' inverses first in vox_efg_patches_inverse_bytes, then the
   * penalty patches' */
  const size_t cells = VOX_EFG_PATCH_ENTRIES * p->n,
               cell_bytes = cells * (d->single ? sizeof(float) : sizeof(double)),
               penalty_bytes = vox_efg_patches_inverse_bytes(p) - cells * sizeof(double),
               work = vox_efg_patches_work_doubles(p) * sizeof(double);
  if (d->single)
    TRY(vox_cuda_alloc(be, (void **)&d->p_inverse_single, cell_bytes ? cell_bytes : 1,
                       "the EFG patches' inverses"));
  else
    TRY(vox_cuda_alloc(be, (void **)&d->p_inverse, cell_bytes ? cell_bytes : 1,
                       "the EFG patches' inverses"));
  TRY(vox_cuda_alloc(be, (void **)&d->p_work, work ? work : 1, "the EFG patches' answers"));
  const size_t diagonal_bytes = VOX_EFG_PATCH_DOFS * p->n * sizeof(double);
  TRY(vox_cuda_alloc(be, (void **)&d->p_diagonal, diagonal_bytes ? diagonal_bytes : 1,
                     "the EFG patches' diagonals"));
  CUDA_TRY(be, cudaMemset(d->p_diagonal, 0, diagonal_bytes), "the EFG patches' diagonals");
  d->bytes += cell_bytes + work + diagonal_bytes;
  d->patches = p;
  if (!p->n_penalty) return VOX_OK;
  const size_t np = p->n_penalty, slots = p->penalty_start[np];
  /* the solve kernel's shared memory: past the default 48 KB by opting
   * in, up to the device's limit (wide supports make large patches) */
  const size_t shared = (1 + PENALTY_SOLVE_GROUPS) * p->penalty_max_dofs * sizeof(double);
  int device = 0, most = 0;
  CUDA_TRY(be, cudaGetDevice(&device), "the device");
  CUDA_TRY(be, cudaDeviceGetAttribute(&most, cudaDevAttrMaxSharedMemoryPerBlockOptin, device),
           "the device's shared memory");
  if (shared > (size_t)most)
    return vox_error(be->ctx, VOX_ERR_UNSUPPORTED,
                     "element-free Galerkin: a dense patch of %zu unknowns is too large for the "
                     "GPU's shared memory (--efg-penalty-patches 0 leaves the penalty points' out)",
                     p->penalty_max_dofs);
  /* every precision's kernels (precision_double may switch) */
  CUDA_TRY(be,
           cudaFuncSetAttribute(patches_solve_kernel<float, float>,
                                cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shared),
           "the dense patches' solve");
  CUDA_TRY(be,
           cudaFuncSetAttribute(patches_solve_kernel<float, double>,
                                cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shared),
           "the dense patches' solve");
  CUDA_TRY(be,
           cudaFuncSetAttribute(patches_solve_kernel<double, double>,
                                cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shared),
           "the dense patches' solve");
  d->penalty_in_shared = penalty_factor_shared_bytes(p->penalty_max_dofs, 1) <= (size_t)most;
  const size_t factor_shared = penalty_factor_shared_bytes(p->penalty_max_dofs,
                                                           d->penalty_in_shared);
  if (d->penalty_in_shared) {
    CUDA_TRY(be,
             cudaFuncSetAttribute(penalty_factor_kernel<true, float>,
                                  cudaFuncAttributeMaxDynamicSharedMemorySize, (int)factor_shared),
             "the dense patches' inverses");
    CUDA_TRY(be,
             cudaFuncSetAttribute(penalty_factor_kernel<true, double>,
                                  cudaFuncAttributeMaxDynamicSharedMemorySize, (int)factor_shared),
             "the dense patches' inverses");
  } else {
    CUDA_TRY(be,
             cudaFuncSetAttribute(penalty_factor_kernel<false, double>,
                                  cudaFuncAttributeMaxDynamicSharedMemorySize, (int)factor_shared),
             "the dense patches' inverses");
  }
  /* in single precision beside the cells' where made in shared memory */
  if (d->single && d->penalty_in_shared) {
    TRY(vox_cuda_alloc(be, (void **)&d->pp_inverse_single, penalty_bytes / 2,
                       "the EFG dense patches' inverses"));
    d->bytes += penalty_bytes / 2;
  } else {
    TRY(vox_cuda_alloc(be, (void **)&d->pp_inverse, penalty_bytes,
                       "the EFG dense patches' inverses"));
    d->bytes += penalty_bytes;
  }
  d->n_block_patches = p->n_blocks;
  d->n_penalty = np;
  d->penalty_max_dofs = p->penalty_max_dofs;
  TRY(upload(be, d, (void **)&d->pp_start, p->penalty_start, (np + 1) * sizeof(size_t),
             "the EFG penalty patches' nodes"));
  TRY(upload(be, d, (void **)&d->pp_node, p->penalty_node, slots * sizeof *p->penalty_node,
             "the EFG penalty patches' nodes"));
  TRY(upload(be, d, (void **)&d->pp_block_start, p->penalty_block_start,
             (np + 1) * sizeof(size_t), "the EFG penalty patches' blocks"));
  TRY(upload(be, d, (void **)&d->pp_block, p->penalty_block,
             p->penalty_block_start[np] * sizeof *p->penalty_block,
             "the EFG penalty patches' blocks"));
  TRY(upload(be, d, (void **)&d->pp_inverse_start, p->penalty_inverse_start,
             (np + 1) * sizeof(size_t), "the EFG penalty patches' inverses"));
  TRY(upload(be, d, (void **)&d->node_pp_start, p->node_penalty_start,
             (p->n_nodes + 1) * sizeof *p->node_penalty_start, "the EFG nodes' penalty patches"));
  TRY(upload(be, d, (void **)&d->node_pp, p->node_penalty, slots * sizeof *p->node_penalty,
             "the EFG nodes' penalty patches"));
  return VOX_OK;
}

/* The penalty patches' slot sums of patch_sum, with their answers in
 * p_work after the cells'. */
static penalty_sum penalty_sum_of(const vox_efg_device *d) {
  penalty_sum pen = {NULL, NULL, NULL};
  if (d->n_penalty)
    pen.start = d->node_pp_start, pen.slot = d->node_pp,
    pen.y = d->p_work + VOX_EFG_PATCH_DOFS * d->n_patches;
  return pen;
}

/* Every patch's answers for r into p_work: the cells', then the penalty
 * points'. */
static vox_status patches_solve(vox_backend *be, vox_efg_device *d, const vox_vec *r) {
  const unsigned penalty_blocks = (unsigned)(d->n_penalty < 65535 ? d->n_penalty : 65535),
                 cell_blocks = vox_cuda_blocks(d->n_patches * VOX_EFG_PATCH_DOFS,
                                               PENALTY_SOLVE_THREADS),
                 grid = penalty_blocks + (cell_blocks ? cell_blocks : 1);
  const size_t shared = (1 + PENALTY_SOLVE_GROUPS) * d->penalty_max_dofs * sizeof(double);
  if (d->single && d->pp_inverse_single)
    patches_solve_kernel<<<grid, PENALTY_SOLVE_THREADS, shared, vox_cuda_stream(be)>>>(
        d->n_patches, d->p_node, d->p_inverse_single, d->n_penalty, d->penalty_max_dofs,
        d->pp_start, d->pp_node, d->pp_inverse_start, d->pp_inverse_single, r->data, d->p_work,
        penalty_blocks);
  else if (d->single)
    patches_solve_kernel<<<grid, PENALTY_SOLVE_THREADS, shared, vox_cuda_stream(be)>>>(
        d->n_patches, d->p_node, d->p_inverse_single, d->n_penalty, d->penalty_max_dofs,
        d->pp_start, d->pp_node, d->pp_inverse_start, d->pp_inverse, r->data, d->p_work,
        penalty_blocks);
  else
    patches_solve_kernel<<<grid, PENALTY_SOLVE_THREADS, shared, vox_cuda_stream(be)>>>(
        d->n_patches, d->p_node, d->p_inverse, d->n_penalty, d->penalty_max_dofs, d->pp_start,
        d->pp_node, d->pp_inverse_start, d->pp_inverse, r->data, d->p_work, penalty_blocks);
  CUDA_LAUNCHED(be, "the EFG patches' solves");
  return VOX_OK;
}

static vox_status efg_patches_factor(vox_backend *be, vox_efg_device *d, double drift) {
  if (!d->p_node)
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT,
                     "element-free Galerkin: patches factored before their tables");
  CUDA_TRY(be, cudaMemsetAsync(d->failed, 0, 2 * sizeof *d->failed), "the patches' status");
  const size_t blocks = (d->n_patches + PATCH_WARPS - 1) / PATCH_WARPS;
  if (d->single)
    patch_factor_kernel<<<(unsigned)(blocks ? blocks : 1), 32 * PATCH_WARPS>>>(
        d->n_patches, d->p_block, values_of(d, d->k), drift, d->p_diagonal,
        d->p_inverse_single, d->failed);
  else
    patch_factor_kernel<<<(unsigned)(blocks ? blocks : 1), 32 * PATCH_WARPS>>>(
        d->n_patches, d->p_block, values_of(d, d->k), drift, d->p_diagonal, d->p_inverse,
        d->failed);
  CUDA_LAUNCHED(be, "the EFG patches' inverses");
  if (d->n_penalty) {
    const unsigned grid = (unsigned)(d->n_penalty < 65535 ? d->n_penalty : 65535);
    const size_t shared = penalty_factor_shared_bytes(d->penalty_max_dofs, d->penalty_in_shared);
    const double *kval = values_of(d, d->k);
    if (d->pp_inverse_single)
      penalty_factor_kernel<true, float><<<grid, PENALTY_THREADS, shared>>>(
          d->n_penalty, d->penalty_max_dofs, d->pp_start, d->pp_block_start, d->pp_block,
          d->pp_inverse_start, kval, d->n_block_patches, d->penalty_weight, d->pp_inverse_single,
          d->failed + 1);
    else
      (d->penalty_in_shared ? penalty_factor_kernel<true, double>
                            : penalty_factor_kernel<false, double>)<<<grid, PENALTY_THREADS,
                                                                      shared>>>(
          d->n_penalty, d->penalty_max_dofs, d->pp_start, d->pp_block_start, d->pp_block,
          d->pp_inverse_start, kval, d->n_block_patches, d->penalty_weight, d->pp_inverse,
          d->failed + 1);
    CUDA_LAUNCHED(be, "the EFG dense patches' inverses");
  }
  unsigned long long status[2] = {0, 0};
  CUDA_TRY(be, cudaMemcpy(status, d->failed, sizeof status, cudaMemcpyDeviceToHost),
           "the patches' status");
  const unsigned long long failed = status[0];
  if (failed) {
    int32_t first = 0;
    CUDA_TRY(be,
             cudaMemcpy(&first, d->p_node + 8 * (failed - 1), sizeof first,
                        cudaMemcpyDeviceToHost),
             "the patches' status");
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT,
                     "element-free Galerkin: the stiffness block of the patch at field node %d "
                     "is not positive definite",
                     (int)first);
  }
  return vox_efg_dense_patch_failed(be->ctx, d->patches, (ptrdiff_t)status[1] - 1);
}

static vox_status efg_precision_double(vox_backend *be, vox_efg_device *d) {
  if (!d->single) return VOX_OK;
  CUDA_TRY(be, cudaDeviceSynchronize(), "the EFG device in double"); /* nothing reads them */
  const size_t cells = VOX_EFG_PATCH_ENTRIES * d->n_patches;
  if (d->p_inverse_single) {
    TRY(vox_cuda_alloc(be, (void **)&d->p_inverse, cells ? cells * sizeof(double) : 1,
                       "the EFG patches' inverses"));
    vox_cuda_free(d->p_inverse_single);
    d->p_inverse_single = NULL;
    d->bytes += cells * sizeof(float);
  }
  if (d->pp_inverse_single) {
    const size_t dense = vox_efg_patches_inverse_doubles(d->patches) - cells;
    TRY(vox_cuda_alloc(be, (void **)&d->pp_inverse, dense * sizeof(double),
                       "the EFG dense patches' inverses"));
    vox_cuda_free(d->pp_inverse_single);
    d->pp_inverse_single = NULL;
    d->bytes += dense * sizeof(float);
  }
  if (d->k_single) {
    vox_cuda_free(d->k_single);
    d->k_single = NULL;
    d->bytes -= 9 * d->n_blocks * sizeof(float);
  }
  d->single = 0;
  /* every cell's patch made afresh in double by the next factor */
  if (d->p_diagonal)
    CUDA_TRY(be,
             cudaMemset(d->p_diagonal, 0, VOX_EFG_PATCH_DOFS * d->n_patches * sizeof(double)),
             "the EFG patches' diagonals");
  return VOX_OK;
}

static vox_status efg_patches_apply(vox_backend *be, vox_efg_device *d, const vox_vec *r,
                                    vox_vec *z) {
  if (!d->p_node)
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT,
                     "element-free Galerkin: patches applied before their tables");
  TRY(check_vec(be, r, 3 * d->n_nodes, "the residual"));
  TRY(check_vec(be, z, 3 * d->n_nodes, "the preconditioned residual"));
  TRY(patches_solve(be, d, r));
  patch_sum_kernel<<<vox_cuda_grid(3 * d->n_nodes), VOX_CUDA_THREADS, 0, vox_cuda_stream(be)>>>(
      d->n_nodes, d->p_node_patch, d->p_work, penalty_sum_of(d), z->data);
  CUDA_LAUNCHED(be, "the EFG patches' sums");
  return VOX_OK;
}

/* The block row of each block of a pattern, uploaded. */
static vox_status upload_block_rows(vox_backend *be, vox_efg_device *d, const vox_bsr *a,
                                    int32_t **dst, const char *what) {
  const size_t nb = vox_bsr_blocks(a);
  int32_t *row = (int32_t *)malloc((nb ? nb : 1) * sizeof *row);
  if (!row) return vox_error(be->ctx, VOX_ERR_NO_MEMORY, "out of memory staging %s", what);
  for (size_t i = 0; i < a->n_rows; i++)
    for (size_t k = a->row_start[i]; k < a->row_start[i + 1]; k++) row[k] = (int32_t)i;
  vox_status s = upload(be, d, (void **)dst, row, nb * sizeof *row, what);
  free(row);
  return s;
}

static vox_status efg_mg_create(vox_backend *be, vox_efg_device *d, const vox_efg_levels *lv) {
  if (d->n_levels)
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT,
                     "element-free Galerkin: the multigrid's levels are already on the device");
  const int last = lv->n_levels - 1;
  const size_t n_dense = 3 * lv->n_nodes[last]; /* within VOX_EFG_MAX_DENSE_DOFS */
  d->n_levels = lv->n_levels;
  const size_t *k_row_start;
  const int32_t *k_col;
  double *k_val;
  vox_cuda_matrix_arrays(d->k, &k_row_start, &k_col, &k_val);
  for (int l = 0; l < lv->n_levels; l++) {
    d->level_nodes[l] = lv->n_nodes[l];
    if (l == 0) {
      d->level_blocks[0] = d->n_blocks;
      continue;
    }
    const vox_bsr *a = &lv->transfer[l - 1].coarse;
    const size_t nb = vox_bsr_blocks(a);
    d->level_blocks[l] = nb;
    TRY(upload(be, d, (void **)&d->level_row_start[l], a->row_start,
               (a->n_rows + 1) * sizeof *a->row_start, "the EFG multigrid's patterns"));
    TRY(upload(be, d, (void **)&d->level_col[l], a->col, nb * sizeof *a->col,
               "the EFG multigrid's patterns"));
    TRY(upload_block_rows(be, d, a, &d->level_block_row[l], "the EFG multigrid's patterns"));
    TRY(vox_cuda_alloc(be, (void **)&d->level_val[l], 9 * nb * sizeof(double) + 8,
                       "the EFG multigrid's levels"));
    TRY(vox_cuda_alloc(be, (void **)&d->level_inverse[l], 9 * a->n_rows * sizeof(double) + 8,
                       "the EFG multigrid's levels"));
    d->bytes += 9 * (nb + a->n_rows) * sizeof(double);
  }
  for (int l = 0; l < last; l++) {
    const vox_efg_transfer *t = &lv->transfer[l];
    const size_t nb = vox_bsr_blocks(&t->b);
    d->t_b_blocks[l] = nb;
    TRY(upload(be, d, (void **)&d->t_parent[l], t->parent, 8 * t->n_fine * sizeof *t->parent,
               "the EFG multigrid's transfers"));
    TRY(upload(be, d, (void **)&d->t_parent_weight[l], t->parent_weight,
               8 * t->n_fine * sizeof *t->parent_weight, "the EFG multigrid's transfers"));
    TRY(upload(be, d, (void **)&d->t_child[l], t->child, 27 * t->n_coarse * sizeof *t->child,
               "the EFG multigrid's transfers"));
    TRY(upload(be, d, (void **)&d->t_child_weight[l], t->child_weight,
               27 * t->n_coarse * sizeof *t->child_weight, "the EFG multigrid's transfers"));
    TRY(upload(be, d, (void **)&d->t_b_row_start[l], t->b.row_start,
               (t->b.n_rows + 1) * sizeof *t->b.row_start, "the EFG multigrid's transfers"));
    TRY(upload(be, d, (void **)&d->t_b_col[l], t->b.col, nb * sizeof *t->b.col,
               "the EFG multigrid's transfers"));
    TRY(upload_block_rows(be, d, &t->b, &d->t_b_block_row[l], "the EFG multigrid's transfers"));
    TRY(vox_cuda_alloc(be, (void **)&d->t_b_val[l], 9 * nb * sizeof(double) + 8,
                       "the EFG multigrid's transfers"));
    d->bytes += 9 * nb * sizeof(double);
  }
  if (d->single) {
    TRY(vox_cuda_alloc(be, (void **)&d->k_single, 9 * d->n_blocks * sizeof(float) + 8,
                       "the EFG multigrid's level 0 in single precision"));
    d->bytes += 9 * d->n_blocks * sizeof(float);
  }
  d->dense_n = (int)n_dense;
  TRY(vox_cuda_alloc(be, (void **)&d->dense_factor, n_dense * n_dense * sizeof(double) + 8,
                     "the EFG multigrid's last level"));
  TRY(vox_cuda_alloc(be, (void **)&d->dense, n_dense * n_dense * sizeof(double) + 8,
                     "the EFG multigrid's last level"));
  TRY(vox_cuda_alloc(be, (void **)&d->dense_diagonal, n_dense * sizeof(double) + 8,
                     "the EFG multigrid's last level"));
  d->bytes += (2 * n_dense + 1) * n_dense * sizeof(double);
  TRY(vox_cuda_factor_stream_setup(be));
  int lwork = 0;
  if (vox_cuda_dense(NULL)->potrf_buffer_size((cusolverDnHandle_t)vox_cuda(be)->solver,
                                              CUBLAS_FILL_MODE_LOWER, d->dense_n,
                                              d->dense_factor, d->dense_n,
                                              &lwork) != CUSOLVER_STATUS_SUCCESS)
    return vox_error(be->ctx, VOX_ERR_DEVICE, "cuSOLVER: the factorisation's workspace");
  d->dense_lwork = lwork;
  TRY(vox_cuda_alloc(be, (void **)&d->dense_work, (size_t)(lwork > 0 ? lwork : 1) * sizeof(double),
                     "the EFG multigrid's factorisation"));
  TRY(vox_cuda_alloc(be, (void **)&d->dense_info, sizeof(int), "the EFG multigrid's status"));
  return VOX_OK;
}

/* Level l's pattern and values on the device. */
static void level_arrays(const vox_efg_device *d, int l, const size_t **row_start,
                         const int32_t **col, const int32_t **block_row, const double **val) {
  if (l == 0) {
    double *v;
    vox_cuda_matrix_arrays(d->k, row_start, col, &v);
    *val = v, *block_row = d->block_row;
  } else {
    *row_start = d->level_row_start[l], *col = d->level_col[l];
    *block_row = d->level_block_row[l], *val = d->level_val[l];
  }
}

/* K's n blocks rounded to float, each block's first eight values at 8 k,
 * the ninths after all of them (level_product_kernel). */
static __global__ void to_float_blocks_kernel(size_t n, const double *__restrict__ x,
                                              float *__restrict__ y) {
  VOX_GRID_STRIDE(t, 9 * n) {
    const size_t b = t / 9, r = t % 9;
    y[r < 8 ? 8 * b + r : 8 * n + b] = (float)x[t];
  }
}

static __global__ void identity_kernel(int n, double *__restrict__ a) {
  VOX_GRID_STRIDE(t, (size_t)n * (size_t)n) a[t] = t / (size_t)n == t % (size_t)n;
}

/* The last level's dense matrix on the legacy stream, then its factor and
 * inverse on the factor stream, beside what the setup does next (the
 * patches' inverses, the smoothers' bounds; efg_mg_setup_wait). The
 * inverse is kept whole for the cycles' solves, one product with it, made
 * as (L^-1)^T L^-1: L^-1 by vox_cuda_invert_lower's matrix products, then
 * syrk. On the annulus of Lu et al. 2021 (1,452 unknowns) potrs on the
 * identity took 1.2 ms, in cuSOLVER's blocked triangular solves, and potri
 * 2.5 ms. */
static vox_status launch_last_level_factor(vox_backend *be, vox_efg_device *d) {
  const int last = d->n_levels - 1;
  const size_t *rs;
  const int32_t *col, *brow;
  const double *val;
  level_arrays(d, last, &rs, &col, &brow, &val);
  vox_cuda_state *cs = vox_cuda(be);
  TRY(vox_cuda_stencil_factor_wait(be, cs->factor_pending)); /* the stream's one at a time */
  const cudaStream_t stream = cs->factor_stream;
  const size_t n = (size_t)d->dense_n;
  CUDA_TRY(be, cudaMemsetAsync(d->dense_factor, 0, n * n * sizeof(double)),
           "the multigrid's last level");
  dense_kernel<<<vox_cuda_grid(d->level_blocks[last]), VOX_CUDA_THREADS>>>(
      d->level_blocks[last], d->dense_n, brow, col, val, d->dense_factor, d->dense_diagonal);
  CUDA_LAUNCHED(be, "the EFG multigrid's last level");
  CUDA_TRY(be, cudaEventRecord(cs->factor_ready, 0), "the multigrid's last level");
  CUDA_TRY(be, cudaStreamWaitEvent(stream, cs->factor_ready, 0), "the multigrid's last level");
  const vox_cuda_dense_api *lib = vox_cuda_dense(NULL); /* loaded by the stream's setup */
  if (lib->potrf((cusolverDnHandle_t)cs->solver, CUBLAS_FILL_MODE_LOWER, d->dense_n,
                 d->dense_factor, d->dense_n, d->dense_work, d->dense_lwork,
                 d->dense_info) != CUSOLVER_STATUS_SUCCESS)
    return vox_error(be->ctx, VOX_ERR_DEVICE, "cuSOLVER: the factorisation failed to start");
  CUDA_TRY(be,
           cudaMemcpyAsync(cs->factor_info, d->dense_info, sizeof(int), cudaMemcpyDeviceToHost,
                           stream),
           "the multigrid's factorisation status");
  identity_kernel<<<vox_cuda_grid(n * n), VOX_CUDA_THREADS, 0, stream>>>(d->dense_n, d->dense);
  CUDA_LAUNCHED(be, "the EFG multigrid's last level");
  /* on a failed factor the products run on garbage, but the wait reports
   * it before anything reads their answers */
  static const double one = 1, zero = 0;
  cublasHandle_t blas = (cublasHandle_t)cs->blas;
  if (vox_cuda_invert_lower(blas, d->dense_factor, d->dense, d->dense_n, d->dense_n) !=
          CUBLAS_STATUS_SUCCESS ||
      lib->syrk(blas, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_T, d->dense_n, d->dense_n, &one,
                d->dense, d->dense_n, &zero, d->dense_factor,
                d->dense_n) != CUBLAS_STATUS_SUCCESS)
    return vox_error(be->ctx, VOX_ERR_DEVICE, "cuBLAS: the inverse failed to start");
  symmetric_copy_kernel<<<vox_cuda_grid(n * n), VOX_CUDA_THREADS, 0, stream>>>(
      d->dense_n, d->dense_factor, d->dense);
  CUDA_LAUNCHED(be, "the EFG multigrid's last level");
  CUDA_TRY(be, cudaEventRecord(cs->factor_done, stream), "the multigrid's last level");
  return VOX_OK;
}

/* The coarse levels' Galerkin products and diagonal blocks, then (with
 * `factor`, or where none was made yet) the last level's factor launched
 * at once, on the setup's longest path, before the host reads the levels'
 * status; with drift > 0 after it, and only where the level's diagonal
 * has moved by more than drift since the kept factor was made. Level 0's
 * single-precision copy after both. */
static vox_status efg_mg_setup(vox_backend *be, vox_efg_device *d, int factor, double drift,
                               int *made) {
  *made = 0;
  if (!d->n_levels)
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT,
                     "element-free Galerkin: the multigrid set up before its levels");
  const int last = d->n_levels - 1;
  for (int l = 0; l < last; l++) {
    const size_t *rs;
    const int32_t *col, *brow;
    const double *val;
    level_arrays(d, l, &rs, &col, &brow, &val);
    galerkin_kernel<<<vox_cuda_grid(d->t_b_blocks[l]), VOX_CUDA_THREADS>>>(
        d->t_b_blocks[l], d->t_b_block_row[l], d->t_b_col[l], d->t_child[l],
        d->t_child_weight[l], 1, rs, col, val, d->t_b_val[l]);
    CUDA_LAUNCHED(be, "the EFG multigrid's product A P");
    galerkin_kernel<<<vox_cuda_grid(d->level_blocks[l + 1]), VOX_CUDA_THREADS>>>(
        d->level_blocks[l + 1], d->level_block_row[l + 1], d->level_col[l + 1], d->t_child[l],
        d->t_child_weight[l], 0, d->t_b_row_start[l], d->t_b_col[l], d->t_b_val[l],
        d->level_val[l + 1]);
    CUDA_LAUNCHED(be, "the EFG multigrid's product P^T (A P)");
  }
  /* the status word, then the drift's */
  CUDA_TRY(be, cudaMemsetAsync(d->failed, 0, 2 * sizeof *d->failed), "the multigrid's status");
  for (int l = 1; l < d->n_levels; l++) {
    diagonal_inverse_kernel<<<vox_cuda_grid(d->level_nodes[l]), VOX_CUDA_THREADS>>>(
        d->level_nodes[l], d->level_row_start[l], d->level_col[l], d->level_val[l],
        d->level_inverse[l], d->failed);
    CUDA_LAUNCHED(be, "the EFG multigrid's diagonal blocks");
  }
  const int check = d->dense_made && factor && drift > 0;
  if (check) {
    diagonal_drift_kernel<<<vox_cuda_grid(d->level_nodes[last]), VOX_CUDA_THREADS>>>(
        d->level_nodes[last], d->level_row_start[last], d->level_col[last], d->level_val[last],
        d->dense_diagonal, d->failed + 1);
    CUDA_LAUNCHED(be, "the EFG multigrid's last level");
  }
  /* a factor of levels found wanting below is never read: the error ends
   * the run */
  if (!d->dense_made || (factor && !check)) {
    TRY(launch_last_level_factor(be, d));
    d->dense_made = *made = 1;
  }
  if (d->k_single) {
    to_float_blocks_kernel<<<vox_cuda_grid(9 * d->n_blocks), VOX_CUDA_THREADS>>>(
        d->n_blocks, values_of(d, d->k), d->k_single);
    CUDA_LAUNCHED(be, "the EFG multigrid's level 0 in single precision");
  }
  unsigned long long status[2] = {0, 0};
  CUDA_TRY(be, cudaMemcpy(status, d->failed, sizeof status, cudaMemcpyDeviceToHost),
           "the multigrid's status");
  if (status[0])
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT,
                     "element-free Galerkin: a block of the multigrid's coarse levels is not "
                     "positive definite (node %llu of its level)",
                     status[0] - 1);
  double moved;
  memcpy(&moved, &status[1], sizeof moved);
  if (check && !(moved <= drift)) { /* NaN too */
    TRY(launch_last_level_factor(be, d));
    *made = 1;
  }
  return VOX_OK;
}

/* The last level's factor and inverse done (the host waits: what comes
 * after, the cycles' coarse solves, finds them made) and its status
 * checked. */
static vox_status efg_mg_setup_wait(vox_backend *be, vox_efg_device *d) {
  const vox_cuda_state *cs = vox_cuda(be);
  CUDA_TRY(be, cudaEventSynchronize(cs->factor_done), "the multigrid's last level");
  if (*cs->factor_info != 0)
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT,
                     "element-free Galerkin: the multigrid's last level is not positive "
                     "definite (cuSOLVER potrf: %d)",
                     *cs->factor_info);
  return VOX_OK;
}

static vox_status mg_level_vec(vox_backend *be, const vox_efg_device *d, int l, const vox_vec *x) {
  if (l < 0 || l >= d->n_levels)
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT,
                     "element-free Galerkin: no multigrid level %d", l);
  return check_vec(be, x, 3 * d->level_nodes[l], "a multigrid level's vector");
}

/* y = A_l x, or with b the residual y = b - A_l x. */
static vox_status level_product(vox_backend *be, vox_efg_device *d, int l, const vox_vec *x,
                                const vox_vec *b, vox_vec *y) {
  TRY(mg_level_vec(be, d, l, x));
  TRY(mg_level_vec(be, d, l, y));
  if (b) TRY(mg_level_vec(be, d, l, b));
  const size_t *rs;
  const int32_t *col, *brow;
  const double *val;
  level_arrays(d, l, &rs, &col, &brow, &val);
  const unsigned grid = warp_grid(d->level_nodes[l]);
  const uint32_t *mirror = l == 0 ? d->mirror : NULL; /* the coarse levels' are not made */
  if (l == 0 && d->k_single)
    level_product_kernel<<<grid, VOX_CUDA_THREADS, 0, vox_cuda_stream(be)>>>(
        d->level_nodes[l], rs, col, mirror, (const float *)d->k_single,
        d->k_single + 8 * d->n_blocks, x->data, b ? b->data : NULL, y->data);
  else
    level_product_kernel<<<grid, VOX_CUDA_THREADS, 0, vox_cuda_stream(be)>>>(
        d->level_nodes[l], rs, col, mirror, val, NULL, x->data, b ? b->data : NULL, y->data);
  CUDA_LAUNCHED(be, b ? "the EFG multigrid's residual" : "the EFG multigrid's product");
  return VOX_OK;
}

static vox_status efg_mg_apply(vox_backend *be, vox_efg_device *d, int l, const vox_vec *x,
                               vox_vec *y) {
  return level_product(be, d, l, x, NULL, y);
}

static vox_status efg_mg_jacobi(vox_backend *be, vox_efg_device *d, int l, const vox_vec *r,
                                vox_vec *z) {
  TRY(mg_level_vec(be, d, l, r));
  TRY(mg_level_vec(be, d, l, z));
  if (l == 0)
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT,
                     "element-free Galerkin: level 0 is smoothed by its patches");
  level_jacobi_kernel<<<vox_cuda_grid(3 * d->level_nodes[l]), VOX_CUDA_THREADS, 0, vox_cuda_stream(be)>>>(
      d->level_nodes[l], d->level_inverse[l], r->data, z->data);
  CUDA_LAUNCHED(be, "the EFG multigrid's block Jacobi");
  return VOX_OK;
}

static vox_status efg_mg_restrict(vox_backend *be, vox_efg_device *d, int l, const vox_vec *r,
                                  vox_vec *rc) {
  TRY(mg_level_vec(be, d, l, r));
  TRY(mg_level_vec(be, d, l + 1, rc));
  restrict_kernel<<<vox_cuda_grid(3 * d->level_nodes[l + 1]), VOX_CUDA_THREADS, 0, vox_cuda_stream(be)>>>(
      d->level_nodes[l + 1], d->t_child[l], d->t_child_weight[l], r->data, rc->data);
  CUDA_LAUNCHED(be, "the EFG multigrid's restriction");
  return VOX_OK;
}

static vox_status efg_mg_prolong_add(vox_backend *be, vox_efg_device *d, int l,
                                     const vox_vec *xc, vox_vec *x) {
  TRY(mg_level_vec(be, d, l, x));
  TRY(mg_level_vec(be, d, l + 1, xc));
  prolong_add_kernel<<<vox_cuda_grid(3 * d->level_nodes[l]), VOX_CUDA_THREADS, 0, vox_cuda_stream(be)>>>(
      d->level_nodes[l], d->t_parent[l], d->t_parent_weight[l], xc->data, x->data);
  CUDA_LAUNCHED(be, "the EFG multigrid's prolongation");
  return VOX_OK;
}

static vox_status efg_mg_residual(vox_backend *be, vox_efg_device *d, int l, const vox_vec *b,
                                  const vox_vec *x, vox_vec *r) {
  return level_product(be, d, l, x, b, r);
}

static vox_status efg_mg_smooth_step(vox_backend *be, vox_efg_device *d, int l, const vox_vec *r,
                                     double alpha, double beta, int first, vox_vec *dir,
                                     vox_vec *x) {
  TRY(mg_level_vec(be, d, l, r));
  TRY(mg_level_vec(be, d, l, dir));
  TRY(mg_level_vec(be, d, l, x));
  if (l == 0) {
    if (!d->p_node)
      return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT,
                       "element-free Galerkin: the multigrid's patches are not on the device");
    TRY(patches_solve(be, d, r));
    patch_sum_step_kernel<<<vox_cuda_grid(3 * d->n_nodes), VOX_CUDA_THREADS, 0, vox_cuda_stream(be)>>>(
        d->n_nodes, d->p_node_patch, d->p_work, penalty_sum_of(d), alpha, beta, first, dir->data,
        x->data);
    CUDA_LAUNCHED(be, "the EFG multigrid's smoothing step");
    return VOX_OK;
  }
  level_jacobi_step_kernel<<<vox_cuda_grid(3 * d->level_nodes[l]), VOX_CUDA_THREADS, 0, vox_cuda_stream(be)>>>(
      d->level_nodes[l], d->level_inverse[l], r->data, alpha, beta, first, dir->data, x->data);
  CUDA_LAUNCHED(be, "the EFG multigrid's smoothing step");
  return VOX_OK;
}

static vox_status efg_mg_coarse_solve(vox_backend *be, vox_efg_device *d, const vox_vec *b,
                                      vox_vec *x) {
  TRY(mg_level_vec(be, d, d->n_levels - 1, b));
  TRY(mg_level_vec(be, d, d->n_levels - 1, x));
  dense_solve_kernel<<<warp_grid((size_t)d->dense_n), VOX_CUDA_THREADS, 0, vox_cuda_stream(be)>>>(d->dense_n, d->dense,
                                                                          b->data, x->data);
  CUDA_LAUNCHED(be, "the EFG multigrid's coarse solve");
  return VOX_OK;
}

static vox_status efg_strain_energy(vox_backend *be, vox_efg_device *d, const vox_vec *u,
                                    vox_vec *q) {
  TRY(check_vec(be, u, 3 * d->n_nodes, "the displacement parameters"));
  TRY(check_vec(be, q, d->n_points, "the energy densities"));
  strain_energy_kernel<<<warp_grid(d->n_points), VOX_CUDA_THREADS>>>(view_of(d), u->data,
                                                                       q->data);
  CUDA_LAUNCHED(be, "the EFG energy densities");
  return VOX_OK;
}

static vox_status efg_compliance_sensitivity(vox_backend *be, vox_efg_device *d,
                                             const vox_vec *rho_gauss, const vox_vec *q,
                                             double p, vox_vec *dc) {
  TRY(check_vec(be, rho_gauss, d->n_points, "the Gauss points' densities"));
  TRY(check_vec(be, q, d->n_points, "the energy densities"));
  TRY(check_vec(be, dc, d->n_nodes, "the sensitivities"));
  sensitivity_kernel<<<warp_grid(d->n_nodes), VOX_CUDA_THREADS>>>(view_of(d), rho_gauss->data,
                                                                    q->data, p, dc->data);
  CUDA_LAUNCHED(be, "the EFG node-wise sensitivities");
  return VOX_OK;
}

static vox_status efg_support_springs(vox_backend *be, vox_efg_device *d, const vox_vec *rho,
                                      double p) {
  TRY(check_vec(be, rho, d->n_nodes, "the nodal densities"));
  if (!d->n_support) return VOX_OK;
  support_springs_kernel<<<vox_cuda_grid(d->n_support), VOX_CUDA_THREADS, 0,
                           vox_cuda_stream(be)>>>(view_of(d), d->n_support, d->s_fixed,
                                                  d->s_scaled, rho->data, p, d->s_stiffness);
  CUDA_LAUNCHED(be, "the EFG supports' springs");
  return VOX_OK;
}

static vox_status efg_support_sensitivity(vox_backend *be, vox_efg_device *d, const vox_vec *rho,
                                          const vox_vec *u, double p, vox_vec *dc) {
  TRY(check_vec(be, rho, d->n_nodes, "the nodal densities"));
  TRY(check_vec(be, u, 3 * d->n_nodes, "the displacement parameters"));
  TRY(check_vec(be, dc, d->n_nodes, "the sensitivities"));
  if (!d->n_support) return VOX_OK;
  const efg_view v = view_of(d);
  support_factor_kernel<<<vox_cuda_grid(d->n_support), VOX_CUDA_THREADS, 0,
                          vox_cuda_stream(be)>>>(v, d->n_support, d->s_scaled, rho->data,
                                                 u->data, p, d->s_factor);
  CUDA_LAUNCHED(be, "the EFG supports' sensitivities");
  support_sensitivity_kernel<<<vox_cuda_grid(d->n_nodes), VOX_CUDA_THREADS, 0,
                               vox_cuda_stream(be)>>>(v, d->s_factor, dc->data);
  CUDA_LAUNCHED(be, "the EFG supports' sensitivities");
  return VOX_OK;
}

static vox_status efg_oc_update(vox_backend *be, vox_efg_device *d, const vox_efg_oc_options *o,
                                const vox_vec *rho, const vox_vec *dc, vox_vec *rho_new,
                                vox_efg_oc_result *res) {
  TRY(check_vec(be, rho, d->n_nodes, "the nodal densities"));
  TRY(check_vec(be, dc, d->n_nodes, "the sensitivities"));
  TRY(check_vec(be, rho_new, d->n_nodes, "the updated nodal densities"));
  return vox_cuda_efg_oc_update(be, &d->oc, o, rho->data, dc->data, rho_new->data, res);
}

static vox_status efg_non_discreteness(vox_backend *be, vox_efg_device *d,
                                       const vox_vec *rho_gauss, double *sum) {
  TRY(check_vec(be, rho_gauss, d->n_points, "the Gauss points' densities"));
  return vox_cuda_efg_non_discreteness(be, &d->oc, rho_gauss->data, sum);
}

static vox_status efg_matrix_download(vox_backend *be, const vox_efg_device *d, double *val) {
  CUDA_TRY(be,
           cudaMemcpy(val, values_of(d, d->k), 9 * d->n_blocks * sizeof *val,
                      cudaMemcpyDeviceToHost),
           "downloading the EFG stiffness");
  return VOX_OK;
}

static vox_efg_ops make_efg_ops(void) {
  vox_efg_ops o = {};
  o.create = efg_create;
  o.destroy = efg_destroy;
  o.bytes = efg_bytes;
  o.gauss_density = efg_gauss_density;
  o.gauss_scale = efg_gauss_scale;
  o.assemble = efg_assemble;
  o.block_jacobi = efg_block_jacobi;
  o.apply = efg_apply;
  o.precondition = efg_precondition;
  o.patches_create = efg_patches_create;
  o.patches_factor = efg_patches_factor;
  o.patches_apply = efg_patches_apply;
  o.mg_create = efg_mg_create;
  o.precision_double = efg_precision_double;
  o.mg_setup = efg_mg_setup;
  o.mg_setup_wait = efg_mg_setup_wait;
  o.mg_apply = efg_mg_apply;
  o.mg_jacobi = efg_mg_jacobi;
  o.mg_restrict = efg_mg_restrict;
  o.mg_prolong_add = efg_mg_prolong_add;
  o.mg_coarse_solve = efg_mg_coarse_solve;
  o.mg_residual = efg_mg_residual;
  o.mg_smooth_step = efg_mg_smooth_step;
  o.strain_energy = efg_strain_energy;
  o.compliance_sensitivity = efg_compliance_sensitivity;
  o.support_springs = efg_support_springs;
  o.support_sensitivity = efg_support_sensitivity;
  o.oc_update = efg_oc_update;
  o.non_discreteness = efg_non_discreteness;
  o.matrix_download = efg_matrix_download;
  return o;
}

extern "C" const vox_efg_ops vox_cuda_efg_ops = make_efg_ops();
