/* SPDX-License-Identifier: BSD-3-Clause */
/* The direct solve of the coarsest multigrid level.
 *
 * Up to VOX_CUDA_DENSE_COARSE_DOFS unknowns it stays on the device: the
 * stencil is spread into a dense matrix, factored by cuSOLVER's Cholesky
 * A = L L' (potrf) after each Galerkin update, and L is inverted by cuBLAS's
 * triangular products (vox_cuda_invert_lower). Each V-cycle then applies
 * x = L^-T (L^-1 b) as two triangular matrix-vector products, one warp per
 * entry reading a contiguous column (L^-1 is kept in both orders for that),
 * which stream the factor at memory speed, where two triangular solves
 * (potrs, or cuBLAS's trmv) are a chain of dependent steps, several times
 * slower. In MIXED precision the two copies of L^-1 are stored in float,
 * which halves the bytes of every solve. Whatever the rounding in
 * the stored inverse X of L, X' X is symmetric positive definite, so the
 * V-cycle stays a valid preconditioner even at a 1e-9 stiffness contrast.
 * The factorisation runs on a stream of its own, after an event that marks
 * the Galerkin product of the level: multigrid setup factors the coarsest
 * level before it estimates the smoothers' bounds, whose Lanczos steps on
 * the small coarse levels are bound by launch latency and leave the device
 * mostly idle, so the factorisation, the setup's largest part, runs
 * under them (and under the rest of the setup). Its status is read, and the legacy
 * stream made to wait for it, by the first solve (or anything that writes
 * the stencil again: vox_cuda_stencil_factor_wait).
 * A larger coarse level (a small --mg-levels) goes through the CPU backend
 * instead (CHOLMOD, engine/cpu/cpu_coarse_solve.c), with one round trip of b
 * and x per V-cycle; the CPU stencil and its two vectors hang off the device
 * stencil (st->host, st->host_b, st->host_x), made by the first
 * factorisation and kept, so CHOLMOD's symbolic analysis is reused by later
 * factorisations. */
#include <stdlib.h>

#include "cuda_backend.cuh"
#include "cuda_dense_libraries.cuh"

static int dense_fits(const vox_stencil *st) { return st->n_dofs <= VOX_CUDA_DENSE_COARSE_DOFS; }

void vox_cuda_coarse_solver_free(vox_backend *be) {
  vox_cuda_state *cs = vox_cuda(be);
  if (cs->solver || cs->blas) { /* (the libraries are loaded where a handle is, and only then) */
    const vox_cuda_dense_api *dense = vox_cuda_dense(NULL);
    if (cs->solver) dense->solver_destroy((cusolverDnHandle_t)cs->solver);
    if (cs->blas) dense->blas_destroy((cublasHandle_t)cs->blas);
  }
  if (cs->factor_stream) cudaStreamDestroy(cs->factor_stream);
  if (cs->factor_ready) cudaEventDestroy(cs->factor_ready);
  if (cs->factor_done) cudaEventDestroy(cs->factor_done);
  if (cs->factor_info) cudaFreeHost(cs->factor_info);
  cs->solver = cs->blas = NULL;
  cs->factor_stream = NULL;
  cs->factor_ready = cs->factor_done = NULL;
  cs->factor_info = NULL;
}

/* The stream does not synchronise with the legacy one: the events order
 * the two. It has the device's greatest priority: its kernels are small
 * grids on the setup's longest path, and the block scheduler then runs
 * their blocks first wherever the wide kernels beside them (the patches'
 * inverses, the bounds' products) leave an SM free. */
vox_status vox_cuda_factor_stream_setup(vox_backend *be) {
  vox_cuda_state *cs = vox_cuda(be);
  if (!cs->factor_stream) {
    int least = 0, greatest = 0;
    CUDA_TRY(be, cudaDeviceGetStreamPriorityRange(&least, &greatest),
             "creating the coarse factorisation's stream");
    CUDA_TRY(be,
             cudaStreamCreateWithPriority(&cs->factor_stream, cudaStreamNonBlocking, greatest),
             "creating the coarse factorisation's stream");
    CUDA_TRY(be, cudaEventCreateWithFlags(&cs->factor_ready, cudaEventDisableTiming),
             "creating the coarse factorisation's events");
    CUDA_TRY(be, cudaEventCreateWithFlags(&cs->factor_done, cudaEventDisableTiming),
             "creating the coarse factorisation's events");
    CUDA_TRY(be, cudaMallocHost((void **)&cs->factor_info, sizeof(int)),
             "allocating the coarse factorisation's status word");
  }
  const char *why = NULL;
  const vox_cuda_dense_api *dense = vox_cuda_dense(&why);
  if (!dense)
    return vox_error(be->ctx, VOX_ERR_DEVICE, "the coarsest level's factorisation: %s", why);
  if (!cs->solver) {
    cusolverDnHandle_t h;
    if (dense->solver_create(&h) != CUSOLVER_STATUS_SUCCESS)
      return vox_error(be->ctx, VOX_ERR_DEVICE, "cuSOLVER: creating a handle failed");
    cs->solver = h;
    if (dense->solver_set_stream(h, cs->factor_stream) != CUSOLVER_STATUS_SUCCESS)
      return vox_error(be->ctx, VOX_ERR_DEVICE, "cuSOLVER: setting the stream failed");
  }
  if (!cs->blas) {
    cublasHandle_t bh;
    if (dense->blas_create(&bh) != CUBLAS_STATUS_SUCCESS)
      return vox_error(be->ctx, VOX_ERR_DEVICE, "cuBLAS: creating a handle failed");
    cs->blas = bh;
    if (dense->blas_set_stream(bh, cs->factor_stream) != CUBLAS_STATUS_SUCCESS)
      return vox_error(be->ctx, VOX_ERR_DEVICE, "cuBLAS: setting the stream failed");
  }
  return VOX_OK;
}

vox_status vox_cuda_stencil_factor_wait(vox_backend *be, vox_stencil *st) {
  if (!st || !st->factor_pending) return VOX_OK;
  vox_cuda_state *cs = vox_cuda(be);
  st->factor_pending = 0;
  cs->factor_pending = NULL;
  /* done: the whole factorisation, and the status word copied to the host */
  CUDA_TRY(be, cudaEventSynchronize(cs->factor_done), "the coarsest level's factorisation");
  const int info = *cs->factor_info;
  if (info > 0) {
    st->x_rows = st->x_cols = NULL; /* the inverse of a failed factor */
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT,
                     "coarse-level Cholesky: the matrix is not positive definite (leading minor "
                     "%d of %lld)",
                     info, (long long)st->n_dofs);
  }
  if (info < 0)
    return vox_error(be->ctx, VOX_ERR_DEVICE,
                     "cuSOLVER: the coarsest level's Cholesky factorisation rejected argument %d",
                     -info);
  return VOX_OK;
}

/* The two products of a solve, x = L^-T (L^-1 b), one warp per output
 * entry so that every warp reads a contiguous column: X = L^-1 is lower
 * triangular in `x_cols` (column-major) and its transpose in `x_rows`
 * (column j of x_rows is row j of X). */
/* z_i = sum_{j <= i} X_ij b_j */
template <typename T>
static __global__ void lower_product(const T *__restrict__ x_rows,
                                     const double *__restrict__ b, double *__restrict__ z, int n) {
  const int i = (int)((blockIdx.x * (size_t)blockDim.x + threadIdx.x) / 32),
            lane = threadIdx.x % 32;
  if (i >= n) return;
  const T *row = x_rows + (size_t)i * n;
  double s = 0;
  for (int j = lane; j <= i; j += 32) s += (double)row[j] * b[j];
  s = vox_cuda_warp_sum(s);
  if (lane == 0) z[i] = s;
}

/* w_j = sum_{i >= j} X_ij z_i */
template <typename T>
static __global__ void upper_product(const T *__restrict__ x_cols,
                                     const double *__restrict__ z, double *__restrict__ w, int n) {
  const int j = (int)((blockIdx.x * (size_t)blockDim.x + threadIdx.x) / 32),
            lane = threadIdx.x % 32;
  if (j >= n) return;
  const T *col = x_cols + (size_t)j * n;
  double s = 0;
  for (int i = j + lane; i < n; i += 32) s += (double)col[i] * z[i];
  s = vox_cuda_warp_sum(s);
  if (lane == 0) w[j] = s;
}

/* x_rows = the lower triangle of x (column-major) transposed, zeros above;
 * x_cols = the same as x, when given (the float copy) */
template <typename T>
static __global__ void copy_inverse(const double *__restrict__ x, T *__restrict__ x_rows,
                                    T *__restrict__ x_cols, int n) {
  for (size_t k = blockIdx.x * (size_t)blockDim.x + threadIdx.x; k < (size_t)n * n;
       k += (size_t)gridDim.x * blockDim.x) {
    const size_t i = k % n, j = k / n; /* x_rows(i, j) = X(j, i) */
    x_rows[k] = i <= j ? (T)x[j + i * (size_t)n] : (T)0;
    if (x_cols) x_cols[k] = i >= j ? (T)x[k] : (T)0;
  }
}

static __global__ void set_diagonal(double *__restrict__ a, int n, double value) {
  const int i = (int)(blockIdx.x * (size_t)blockDim.x + threadIdx.x);
  if (i < n) a[(size_t)i * n + i] = value;
}

/* X = L^-1 for the m x m lower triangle L, into X preset to the identity
 * (both column-major with leading dimension ld). Split in halves,
 *   [L11 0; L21 L22]^-1 = [X11 0; -X22 L21 X11  X22],
 * down to blocks solved by cuBLAS's trsm against the identity: all steps
 * run as matrix products on the tensor cores, in about n^3/3 flops where
 * one trsm of the whole would take n^3; cuSOLVER's own trtri runs in
 * small recursive steps, much slower. */
cublasStatus_t vox_cuda_invert_lower(cublasHandle_t h, const double *L, double *X, int m, int ld) {
  static const double one = 1, minus_one = -1;
  enum { TRSM_BLOCK = 1024 };
  const vox_cuda_dense_api *dense = vox_cuda_dense(NULL); /* loaded: h was made */
  if (m <= TRSM_BLOCK)
    return dense->trsm(h, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N,
                       CUBLAS_DIAG_NON_UNIT, m, m, &one, L, ld, X, ld);
  const int m1 = m / 2, m2 = m - m1;
  const size_t d = (size_t)m1 * (size_t)ld + (size_t)m1; /* offset of the (2,2) block */
  cublasStatus_t s = vox_cuda_invert_lower(h, L, X, m1, ld);
  if (s == CUBLAS_STATUS_SUCCESS) s = vox_cuda_invert_lower(h, L + d, X + d, m2, ld);
  /* X21 = L21 X11, then X21 = -X22 X21 (cuBLAS's trmm writes to C, and in
   * place when C is B) */
  if (s == CUBLAS_STATUS_SUCCESS)
    s = dense->trmm(h, CUBLAS_SIDE_RIGHT, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N,
                    CUBLAS_DIAG_NON_UNIT, m2, m1, &one, X, ld, L + m1, ld, X + m1, ld);
  if (s == CUBLAS_STATUS_SUCCESS)
    s = dense->trmm(h, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N,
                    CUBLAS_DIAG_NON_UNIT, m2, m1, &minus_one, X + d, ld, X + m1, ld, X + m1, ld);
  return s;
}

/* The libraries' first factorisation, on a made-up matrix of a coarsest
 * level's size, from the warm-up thread (vox_cuda_warm_up): cuSOLVER's and
 * cuBLAS's kernels load at their first launch in the process (lazy module
 * loading), time that a clinical sample otherwise spends on the
 * critical path of its setup. Errors change nothing: the solve's own
 * factorisation reports them. */
extern "C" void vox_cuda_coarse_warm_up(void) {
  enum { N = 512 };
  const vox_cuda_dense_api *dense = vox_cuda_dense(NULL);
  if (!dense) return;
  cusolverDnHandle_t h = NULL;
  cublasHandle_t bh = NULL;
  double *a = NULL, *x = NULL, *work = NULL;
  int *info = NULL, lwork = 0;
  if (dense->solver_create(&h) != CUSOLVER_STATUS_SUCCESS ||
      dense->blas_create(&bh) != CUBLAS_STATUS_SUCCESS ||
      cudaMalloc((void **)&a, sizeof(double) * N * N) != cudaSuccess ||
      cudaMalloc((void **)&x, sizeof(double) * N * N) != cudaSuccess ||
      cudaMalloc((void **)&info, sizeof(int)) != cudaSuccess ||
      dense->potrf_buffer_size(h, CUBLAS_FILL_MODE_LOWER, N, a, N, &lwork) !=
          CUSOLVER_STATUS_SUCCESS ||
      cudaMalloc((void **)&work, sizeof(double) * (lwork > 0 ? lwork : 1)) != cudaSuccess)
    goto done;
  /* the identity: positive definite, its factor and inverse the identity */
  cudaMemset(a, 0, sizeof(double) * N * N);
  cudaMemset(x, 0, sizeof(double) * N * N);
  set_diagonal<<<vox_cuda_blocks(N, 256), 256>>>(a, N, 1.0);
  set_diagonal<<<vox_cuda_blocks(N, 256), 256>>>(x, N, 1.0);
  dense->potrf(h, CUBLAS_FILL_MODE_LOWER, N, a, N, work, lwork, info);
  vox_cuda_invert_lower(bh, a, x, N, N);
  cudaDeviceSynchronize();
done:
  cudaFree(work), cudaFree(info), cudaFree(x), cudaFree(a);
  if (bh) dense->blas_destroy(bh);
  if (h) dense->solver_destroy(h);
  cudaGetLastError();
}

static vox_status cusolver_check(vox_backend *be, cusolverStatus_t status, const char *what) {
  if (status == CUSOLVER_STATUS_SUCCESS) return VOX_OK;
  return vox_error(be->ctx, VOX_ERR_DEVICE, "cuSOLVER: %s failed (status %d)", what, (int)status);
}

/* Column-major dense matrix of the stencil: entry (row, col) with row =
 * node n, component r and col = its neighbour m at offset t, component c,
 * from the stored blocks t = 13..26; a block past the centre also gives its
 * transpose, the block t' = 26 - t of m. Every (row, col) is written once. */
template <typename V>
static __global__ void stencil_to_dense(const V *__restrict__ value, int dpn, int64_t px,
                                        int64_t py, int64_t pz, double *__restrict__ dense,
                                        int64_t n_dofs) {
  const int64_t n_nodes = px * py * pz;
  const int bs = dpn * dpn;
  for (int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
       k < n_nodes * VOX_CUDA_STENCIL_SLOTS * bs; k += (int64_t)gridDim.x * blockDim.x) {
    const vox_cuda_stencil_place at = vox_cuda_stencil_place_of((size_t)k, (size_t)n_nodes, bs);
    const int64_t n = (int64_t)at.n;
    const int t = VOX_CUDA_STENCIL_CENTRE + at.slot, r = at.e / dpn, c = at.e % dpn;
    const int64_t i = n % px, j = n / px % py, kk = n / (px * py);
    const int64_t ii = i + t % 3 - 1, jj = j + t / 3 % 3 - 1, k2 = kk + t / 9 - 1;
    if (ii < 0 || ii >= px || jj < 0 || jj >= py || k2 < 0 || k2 >= pz) continue;
    const int64_t m = (k2 * py + jj) * px + ii;
    const double v = (double)value[k];
    dense[(m * dpn + c) * n_dofs + n * dpn + r] = v;
    if (t != VOX_CUDA_STENCIL_CENTRE) dense[(n * dpn + r) * n_dofs + m * dpn + c] = v;
  }
}

/* The same for a periodic stencil: a master's neighbours wrap to masters
 * (an image's row is its centre block), and where two offsets reach the
 * same node (an axis of 2 elements) their blocks add up, so the entries
 * are summed atomically into the cleared matrix. */
template <typename V>
static __global__ void stencil_to_dense_periodic(const V *__restrict__ value, int dpn, int64_t px,
                                                 int64_t py, int64_t pz,
                                                 double *__restrict__ dense, int64_t n_dofs) {
  const int64_t n_nodes = px * py * pz;
  const int bs = dpn * dpn;
  for (int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
       k < n_nodes * VOX_CUDA_STENCIL_SLOTS * bs; k += (int64_t)gridDim.x * blockDim.x) {
    const vox_cuda_stencil_place at = vox_cuda_stencil_place_of((size_t)k, (size_t)n_nodes, bs);
    const int64_t n = (int64_t)at.n;
    const int t = VOX_CUDA_STENCIL_CENTRE + at.slot, r = at.e / dpn, c = at.e % dpn;
    const int64_t i = n % px, j = n / px % py, kk = n / (px * py);
    const bool image = i == px - 1 || j == py - 1 || kk == pz - 1;
    if (image && t != VOX_CUDA_STENCIL_CENTRE) continue;
    const int64_t m = image ? n
                            : (vox_wrap(kk + t / 9 - 1, pz - 1) * py +
                               vox_wrap(j + t / 3 % 3 - 1, py - 1)) * px +
                                  vox_wrap(i + t % 3 - 1, px - 1);
    const double v = (double)value[k];
    if (v == 0) continue;
    atomicAdd(dense + (m * dpn + c) * n_dofs + n * dpn + r, v);
    if (t != VOX_CUDA_STENCIL_CENTRE) atomicAdd(dense + (n * dpn + r) * n_dofs + m * dpn + c, v);
  }
}

static vox_status dense_factor(vox_backend *be, vox_stencil *st) {
  vox_cuda_state *cs = vox_cuda(be);
  const int64_t n = (int64_t)st->n_dofs;
  /* the previous one, if never solved with: the events and the status word
   * serve one factorisation at a time */
  TRY(vox_cuda_stencil_factor_wait(be, cs->factor_pending));
  TRY(vox_cuda_factor_stream_setup(be));
  const vox_cuda_dense_api *lib = vox_cuda_dense(NULL); /* loaded by the setup */
  cudaStream_t stream = cs->factor_stream;
  cusolverDnHandle_t h = (cusolverDnHandle_t)cs->solver;
  if (!st->dense_factor) {
    TRY(vox_cuda_alloc(be, (void **)&st->dense_factor, (size_t)(n * n) * sizeof(double),
                       "the coarsest multigrid level's factor"));
    TRY(vox_cuda_alloc(be, (void **)&st->dense_inverse, (size_t)(n * n) * sizeof(double),
                       "the coarsest multigrid level's factor"));
    TRY(vox_cuda_alloc(be, (void **)&st->info, sizeof(int), "cuSOLVER's status"));
    TRY(vox_cuda_alloc(be, (void **)&st->dense_z, (size_t)n * sizeof(double),
                       "the coarsest level's work vector"));
  }
  st->x_rows = st->x_cols = NULL; /* until the new factor is complete */
  double *dense = st->dense_factor;
  /* the side stream starts once the legacy stream has made the values */
  CUDA_TRY(be, cudaEventRecord(cs->factor_ready, 0), "marking the coarsest level's values");
  CUDA_TRY(be, cudaStreamWaitEvent(stream, cs->factor_ready, 0),
           "ordering the coarsest level's factorisation");
  CUDA_TRY(be, cudaMemsetAsync(dense, 0, (size_t)(n * n) * sizeof(double), stream),
           "clearing the coarsest level's matrix");
  const int64_t px = st->grid.nx + 1, py = st->grid.ny + 1, pz = st->grid.nz + 1;
  const int64_t entries = (int64_t)st->n_nodes * VOX_CUDA_STENCIL_SLOTS * st->dpn * st->dpn;
  const unsigned blocks = vox_cuda_blocks((size_t)entries, 256);
  if (st->grid.periodic && st->value32)
    stencil_to_dense_periodic<<<blocks, 256, 0, stream>>>(st->value32, st->dpn, px, py, pz,
                                                          dense, n);
  else if (st->grid.periodic)
    stencil_to_dense_periodic<<<blocks, 256, 0, stream>>>(st->value, st->dpn, px, py, pz, dense,
                                                          n);
  else if (st->value32)
    stencil_to_dense<<<blocks, 256, 0, stream>>>(st->value32, st->dpn, px, py, pz, dense, n);
  else
    stencil_to_dense<<<blocks, 256, 0, stream>>>(st->value, st->dpn, px, py, pz, dense, n);
  CUDA_LAUNCHED(be, "spreading the coarsest level into a dense matrix");
  int lwork = 0;
  TRY(cusolver_check(
      be, lib->potrf_buffer_size(h, CUBLAS_FILL_MODE_LOWER, (int)n, dense, (int)n, &lwork),
      "sizing the Cholesky workspace"));
  /* kept with the stencil: freeing it here would wait for the device */
  const size_t work_bytes = (size_t)(lwork > 0 ? lwork : 1) * sizeof(double);
  if (work_bytes > st->factor_work_bytes) {
    vox_cuda_free(st->factor_work);
    st->factor_work = NULL, st->factor_work_bytes = 0;
    TRY(vox_cuda_alloc(be, &st->factor_work, work_bytes, "the Cholesky workspace"));
    st->factor_work_bytes = work_bytes;
  }
  TRY(cusolver_check(be,
                     lib->potrf(h, CUBLAS_FILL_MODE_LOWER, (int)n, dense, (int)n,
                                (double *)st->factor_work, lwork, st->info),
                     "the coarsest level's Cholesky factorisation"));
  CUDA_TRY(be,
           cudaMemcpyAsync(cs->factor_info, st->info, sizeof(int), cudaMemcpyDeviceToHost, stream),
           "reading cuSOLVER's status");
  /* X = L^-1 (vox_cuda_invert_lower), computed whatever the status (a failed factor
   * gives a useless X, which vox_cuda_stencil_factor_wait then withdraws).
   * The entries above X's diagonal stay exactly zero and are never read
   * anyway. */
  double *x = st->dense_inverse;
  CUDA_TRY(be, cudaMemsetAsync(x, 0, (size_t)(n * n) * sizeof(double), stream),
           "clearing the coarsest level's inverse factor");
  set_diagonal<<<vox_cuda_blocks((size_t)n, 256), 256, 0, stream>>>(x, (int)n, 1.0);
  CUDA_LAUNCHED(be, "the identity of the coarsest level's inverse factor");
  if (vox_cuda_invert_lower((cublasHandle_t)cs->blas, dense, x, (int)n, (int)n) != CUBLAS_STATUS_SUCCESS)
    return vox_error(be->ctx, VOX_ERR_DEVICE,
                     "cuBLAS: inverting the coarsest level's Cholesky factor failed");
  /* L is spent: its buffer takes X by rows (double), or both float copies */
  const unsigned blocks_nn = vox_cuda_blocks((size_t)(n * n), 256);
  if (st->value32) {
    float *rows = (float *)dense, *cols = rows + (size_t)(n * n);
    copy_inverse<<<blocks_nn, 256, 0, stream>>>(x, rows, cols, (int)n);
    st->x_rows = rows, st->x_cols = cols;
  } else {
    copy_inverse<<<blocks_nn, 256, 0, stream>>>(x, dense, (double *)NULL, (int)n);
    st->x_rows = dense, st->x_cols = x;
  }
  CUDA_LAUNCHED(be, "copying the coarsest level's inverse factor");
  CUDA_TRY(be, cudaEventRecord(cs->factor_done, stream), "marking the coarsest level's factor");
  st->factor_pending = 1;
  cs->factor_pending = st;
  return VOX_OK;
}

void vox_cuda_stencil_factor_free(vox_backend *be, vox_stencil *st) {
  if (!st) return;
  if (st->factor_pending) { /* its buffers are in use on the side stream */
    cudaEventSynchronize(vox_cuda(be)->factor_done);
    st->factor_pending = 0;
    vox_cuda(be)->factor_pending = NULL;
  }
  vox_cuda_free(st->factor_work);
  st->factor_work = NULL, st->factor_work_bytes = 0;
  vox_cuda_free(st->dense_factor);
  vox_cuda_free(st->dense_inverse);
  vox_cuda_free(st->dense_z);
  vox_cuda_free(st->info);
  st->dense_factor = st->dense_inverse = st->dense_z = NULL;
  st->x_rows = st->x_cols = NULL;
  st->info = NULL;
  vox_backend *host = vox_cuda(be)->host;
  if (st->host) host->ops->mg->stencil_destroy(host, st->host);
  if (st->host_b.data) host->ops->vec->destroy(host, &st->host_b);
  if (st->host_x.data) host->ops->vec->destroy(host, &st->host_x);
  st->host = NULL;
}

/* The CPU stencil and vectors, once per stencil. */
static vox_status host_setup(vox_backend *be, vox_stencil *st) {
  vox_backend *host = vox_cuda(be)->host;
  /* always a double stencil: a MIXED level is widened by the download */
  vox_status s =
      host->ops->mg->stencil_create(host, &st->grid, st->dpn, VOX_PRECISION_DOUBLE, &st->host);
  if (s == VOX_OK) s = host->ops->vec->create(host, st->n_dofs, VOX_DOUBLE, &st->host_b);
  if (s == VOX_OK) s = host->ops->vec->create(host, st->n_dofs, VOX_DOUBLE, &st->host_x);
  if (s != VOX_OK) vox_cuda_stencil_factor_free(be, st);
  return s;
}

vox_status vox_cuda_stencil_factor(vox_backend *be, vox_stencil *st) {
  /* the coarsest level is solved, not smoothed: it keeps its float values
   * (cuda_stencil.cu, "FP16 storage") */
  TRY(vox_cuda_stencil_unpack(be, st));
  st->fp16 = 0;
  if (dense_fits(st)) return dense_factor(be, st);
  vox_backend *host = vox_cuda(be)->host;
  if (!st->host) TRY(host_setup(be, st));
  const size_t n = st->n_nodes * 27 * (size_t)(st->dpn * st->dpn);
  double *values = (double *)malloc((n ? n : 1) * sizeof *values);
  if (!values)
    return vox_error(be->ctx, VOX_ERR_NO_MEMORY,
                     "out of memory for the coarsest multigrid level (%zu values)", n);
  /* the download waits for the Galerkin kernels that computed the values */
  vox_status s = vox_cuda_stencil_download(be, st, values);
  if (s == VOX_OK) s = host->ops->mg->stencil_upload(host, st->host, values);
  free(values);
  /* a failed factorisation stays recorded in the CPU stencil, whose solve
   * then reports it */
  if (s == VOX_OK) s = host->ops->mg->stencil_factor(host, st->host);
  return s;
}

vox_status vox_cuda_stencil_solve(vox_backend *be, vox_stencil *st, const vox_vec *b, vox_vec *x) {
  TRY(vox_cuda_stencil_factor_wait(be, st));
  if (st->x_rows) { /* x = L^-T (L^-1 b), through the coarse level's own work vector */
    const int n = (int)st->n_dofs;
    const unsigned warps = vox_cuda_blocks((size_t)n * 32, 256);
    cudaStream_t stream = vox_cuda_stream(be); /* the sparse V-cycle's, when recorded */
    if (st->value32) {
      lower_product<<<warps, 256, 0, stream>>>((const float *)st->x_rows, b->data, st->dense_z, n);
      upper_product<<<warps, 256, 0, stream>>>((const float *)st->x_cols, st->dense_z, x->data, n);
    } else {
      lower_product<<<warps, 256, 0, stream>>>((const double *)st->x_rows, b->data, st->dense_z, n);
      upper_product<<<warps, 256, 0, stream>>>((const double *)st->x_cols, st->dense_z, x->data, n);
    }
    CUDA_LAUNCHED(be, "the coarsest level's solve");
    return VOX_OK;
  }
  if (!st->host)
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT,
                     "coarse-level solve: the stencil has not been factored");
  const size_t n = st->n_dofs;
  if (b->n != n || x->n != n)
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT,
                     "coarse-level solve: vectors of %zu and %zu entries for %zu dofs", b->n, x->n,
                     n);
  vox_backend *host = vox_cuda(be)->host;
  TRY(vox_cuda_refuse_recording(be, "the coarsest level's solve on the host"));
  /* cudaMemcpy on the legacy stream waits for the restriction that made b */
  CUDA_TRY(be, cudaMemcpy(st->host_b.data, b->data, n * sizeof *b->data, cudaMemcpyDeviceToHost),
           "reading the coarsest level's right-hand side");
  TRY(host->ops->mg->stencil_solve(host, st->host, &st->host_b, &st->host_x));
  CUDA_TRY(be, cudaMemcpy(x->data, st->host_x.data, n * sizeof *x->data, cudaMemcpyHostToDevice),
           "writing the coarsest level's solution");
  return VOX_OK;
}
