/* Stencils on the device: the assembled operators of the coarse multigrid
 * levels, stored per node as 27 blocks of dpn x dpn (backend_ops.h layout,
 * value[((n*27 + t)*dpn + r)*dpn + c]), their product and diagonal, and the
 * transfers between a grid and its coarse grid: trilinear prolongation P and
 * restriction R = P^T (engine/cpu/cpu_stencil.c is the reference).
 *
 * Storage is double, or float for VOX_PRECISION_MIXED (the preconditioner's
 * reduced-precision storage: half the memory traffic of the coarse levels).
 * Arithmetic is always double; a float value is widened when loaded.
 *
 * Every kernel is a gather, one thread per dof it writes, so no two threads
 * write the same entry and no atomics are needed. Sums run in the order of
 * the CPU loops; the transfers' weights are powers of two, so restriction
 * and prolongation give the CPU's results bit for bit, and the product
 * differs from it only where nvcc contracts a multiply-add into an FMA. */
#include <stdlib.h>

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

static size_t stencil_values(const vox_stencil *st) {
  return st->n_nodes * 27 * (size_t)(st->dpn * st->dpn);
}

static vox_status check_dpn(vox_backend *be, int dpn) {
  if (dpn == 1 || dpn == 3) return VOX_OK;
  return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT,
                   "CUDA multigrid: %d dofs per node (1 or 3 supported)", dpn);
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
  *out = st;
  return VOX_OK;
}

void vox_cuda_stencil_destroy(vox_backend *be, vox_stencil *st) {
  if (!st) return;
  vox_cuda_stencil_factor_free(be, st);
  vox_cuda_free(st->value);
  vox_cuda_free(st->value32);
  free(st);
}

vox_status vox_cuda_stencil_upload(vox_backend *be, vox_stencil *st, const double *host) {
  const size_t n = stencil_values(st);
  if (st->value) {
    CUDA_TRY(be, cudaMemcpy(st->value, host, n * sizeof *host, cudaMemcpyHostToDevice),
             "uploading a stencil");
    return VOX_OK;
  }
  const size_t chunk = n < CONVERT_CHUNK ? n : CONVERT_CHUNK;
  float *buf = (float *)malloc((chunk ? chunk : 1) * sizeof *buf);
  if (!buf) return vox_error(be->ctx, VOX_ERR_NO_MEMORY, "out of memory");
  vox_status s = VOX_OK;
  for (size_t at = 0; at < n && s == VOX_OK; at += chunk) {
    const size_t len = n - at < chunk ? n - at : chunk;
    for (size_t e = 0; e < len; e++) buf[e] = (float)host[at + e];
    /* from pageable memory cudaMemcpy returns once buf has been read, so the
     * buffer can be refilled at once */
    s = vox_cuda_check(be, cudaMemcpy(st->value32 + at, buf, len * sizeof *buf,
                                      cudaMemcpyHostToDevice),
                       "uploading a stencil");
  }
  free(buf);
  return s;
}

vox_status vox_cuda_stencil_download(vox_backend *be, const vox_stencil *st, double *host) {
  const size_t n = stencil_values(st);
  if (st->value) {
    CUDA_TRY(be, cudaMemcpy(host, st->value, n * sizeof *host, cudaMemcpyDeviceToHost),
             "downloading a stencil");
    return VOX_OK;
  }
  const size_t chunk = n < CONVERT_CHUNK ? n : CONVERT_CHUNK;
  float *buf = (float *)malloc((chunk ? chunk : 1) * sizeof *buf);
  if (!buf) return vox_error(be->ctx, VOX_ERR_NO_MEMORY, "out of memory");
  vox_status s = VOX_OK;
  for (size_t at = 0; at < n && s == VOX_OK; at += chunk) {
    const size_t len = n - at < chunk ? n - at : chunk;
    s = vox_cuda_check(be, cudaMemcpy(buf, st->value32 + at, len * sizeof *buf,
                                      cudaMemcpyDeviceToHost),
                       "downloading a stencil");
    if (s == VOX_OK)
      for (size_t e = 0; e < len; e++) host[at + e] = (double)buf[e];
  }
  free(buf);
  return s;
}

/* ---- product and diagonal ---------------------------------------------------- */

/* y = A x, one thread per dof (n, r) of NB nodes per thread block: row r of
 * each of node n's 27 blocks against the neighbour's dofs, in t order.
 * Blocks reaching outside the grid are skipped (they are zero).
 *
 * A node's row is 27 dpn^2 contiguous values, so a thread reading its own
 * row makes a warp touch 32 rows far apart at each load. Instead the block
 * first copies the rows of its nodes, G blocks of each at a time, into
 * shared memory with consecutive threads on consecutive values (for dpn 1,
 * G = 27 and the whole range of the thread block is one contiguous run),
 * then each thread reads its row from there. */
template <int DPN> struct apply_shape {
  /* Measured on an H100 among 32..256 nodes and 3, 9 or 27 blocks a round:
   * dpn 1: 128 nodes x 27 blocks (27.6 KB of doubles), one round, 2.5 TB/s
   * against 1.6 for a thread reading its own row; dpn 3: 32 nodes x 9 blocks
   * (those of one dk, 20.7 KB of doubles), three rounds, 2.46 TB/s against
   * 2.16 in double and 2.2 against 2.1 in float. */
  static constexpr int NB = DPN == 1 ? 128 : 32, G = DPN == 1 ? 27 : 9;
  static constexpr int THREADS = NB * DPN;
};

template <int DPN, class V, int NB, int G>
static __global__ void __launch_bounds__(NB * DPN)
    stencil_apply_kernel(const V *__restrict__ a, const double *__restrict__ x,
                         double *__restrict__ y, int64_t px, int64_t py, int64_t pz,
                         size_t n_nodes) {
  constexpr int BS = DPN * DPN, CHUNK = G * BS; /* values of a node in one round */
  __shared__ V s_a[NB * CHUNK];
  const size_t first = (size_t)blockIdx.x * NB;
  const int nodes = n_nodes - first < (size_t)NB ? (int)(n_nodes - first) : NB;
  const int local = threadIdx.x / DPN, r = threadIdx.x - local * DPN;
  const bool active = local < nodes;
  int64_t i = 0, j = 0, k = 0;
  if (active) vox_cuda_node_coords(first + local, px, py, pz, i, j, k);
  double s = 0;
#pragma unroll 1
  for (int round = 0; round < 27 / G; round++) {
    if (round) __syncthreads(); /* the previous round's values are read */
    const V *src = a + first * 27 * BS + (size_t)round * CHUNK;
    for (int idx = threadIdx.x; idx < nodes * CHUNK; idx += NB * DPN) {
      const int node = idx / CHUNK;
      s_a[idx] = src[(size_t)node * 27 * BS + (idx - node * CHUNK)];
    }
    __syncthreads();
    if (!active) continue;
    const V *row = s_a + local * CHUNK + r * DPN; /* row r of the round's first block */
#pragma unroll
    for (int b = 0; b < G; b++) {
      const int t = round * G + b;
      const int64_t ii = i + t % 3 - 1, jj = j + t / 3 % 3 - 1, kk = k + t / 9 - 1;
      if (ii < 0 || ii >= px || jj < 0 || jj >= py || kk < 0 || kk >= pz) continue;
      const double *xm = x + ((kk * py + jj) * px + ii) * DPN;
#pragma unroll
      for (int c = 0; c < DPN; c++) s += (double)row[b * BS + c] * xm[c];
    }
  }
  if (active) y[(first + local) * DPN + r] = s;
}

/* d = the diagonal of the centre blocks (t = 13). */
template <int DPN, class V>
static __global__ void __launch_bounds__(THREADS)
    stencil_diagonal_kernel(const V *__restrict__ a, double *__restrict__ d, size_t n_dofs) {
  const size_t dof = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (dof >= n_dofs) return;
  const size_t n = dof / DPN;
  const int r = (int)(dof - n * DPN);
  d[dof] = (double)a[((n * 27 + 13) * DPN + r) * DPN + r];
}

template <int DPN, class V>
static vox_status apply_as(vox_backend *be, const V *a, const vox_stencil *st, const vox_vec *x,
                           vox_vec *y) {
  using S = apply_shape<DPN>;
  if (!st->n_nodes) return VOX_OK;
  stencil_apply_kernel<DPN, V, S::NB, S::G><<<vox_cuda_blocks(st->n_nodes, S::NB), S::THREADS>>>(
      a, x->data, y->data, st->grid.nx + 1, st->grid.ny + 1, st->grid.nz + 1, st->n_nodes);
  CUDA_LAUNCHED(be, "the stencil product kernel");
  return VOX_OK;
}

template <int DPN, class V>
static vox_status diagonal_as(vox_backend *be, const V *a, const vox_stencil *st, vox_vec *d) {
  if (!st->n_dofs) return VOX_OK;
  stencil_diagonal_kernel<DPN, V><<<vox_cuda_blocks(st->n_dofs, THREADS), THREADS>>>(
      a, d->data, st->n_dofs);
  CUDA_LAUNCHED(be, "the stencil diagonal kernel");
  return VOX_OK;
}

vox_status vox_cuda_stencil_apply(vox_backend *be, vox_stencil *st, const vox_vec *x,
                                  vox_vec *y) {
  if (st->dpn == 3)
    return st->value ? apply_as<3>(be, st->value, st, x, y) : apply_as<3>(be, st->value32, st, x, y);
  if (st->dpn == 1)
    return st->value ? apply_as<1>(be, st->value, st, x, y) : apply_as<1>(be, st->value32, st, x, y);
  return check_dpn(be, st->dpn);
}

vox_status vox_cuda_stencil_diagonal(vox_backend *be, vox_stencil *st, vox_vec *d) {
  if (st->dpn == 3)
    return st->value ? diagonal_as<3>(be, st->value, st, d) : diagonal_as<3>(be, st->value32, st, d);
  if (st->dpn == 1)
    return st->value ? diagonal_as<1>(be, st->value, st, d) : diagonal_as<1>(be, st->value32, st, d);
  return check_dpn(be, st->dpn);
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

/* fine += P coarse, one thread per fine dof: the 1, 2, 4 or 8 coarse parents
 * of its node, summed first and then added, as on the CPU. */
template <int DPN>
static __global__ void __launch_bounds__(THREADS)
    prolong_kernel(const double *__restrict__ c, double *__restrict__ f, int64_t fx, int64_t fy,
                   int64_t fz, int64_t cx, int64_t cy, size_t n_fine_dofs) {
  const size_t dof = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (dof >= n_fine_dofs) return;
  const size_t n = dof / DPN;
  const int r = (int)(dof - n * DPN);
  int64_t i, j, k;
  vox_cuda_node_coords(n, fx, fy, fz, i, j, k);
  int64_t Pi[2], Pj[2], Pk[2];
  double wi[2], wj[2], wk[2];
  const int nk = parents(k, Pk, wk), nj = parents(j, Pj, wj), ni = parents(i, Pi, wi);
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
  restrict_kernel<DPN><<<vox_cuda_blocks(n, THREADS), THREADS>>>(
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
  prolong_kernel<DPN><<<vox_cuda_blocks(n, THREADS), THREADS>>>(
      xc->data, xf->data, fine->nx + 1, fine->ny + 1, fine->nz + 1, coarse.nx + 1, coarse.ny + 1,
      n);
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
