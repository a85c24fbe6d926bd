/* The direct solve of the coarsest multigrid level.
 *
 * Up to VOX_CUDA_DENSE_COARSE_DOFS unknowns it stays on the device: the
 * stencil is spread into a dense matrix, factored by cuSOLVER's Cholesky
 * A = L L' (potrf) after each Galerkin update, and L is inverted (cuBLAS
 * trsm against the identity); each V-cycle then applies x = L^-T (L^-1 b) as two triangular
 * matrix-vector products, one warp per entry reading a contiguous column
 * (L^-1 is kept in both orders for that), which stream the factor at memory
 * speed. Two triangular solves (potrs) are a chain of dependent steps, 0.6
 * ms for 4131 unknowns (a 16 x 8 x 8 level); cuBLAS's trmv took 1.05 ms. Whatever
 * the rounding in the computed inverse X of L, X' X is symmetric positive
 * definite, so the V-cycle stays a valid preconditioner even at a 1e-9
 * stiffness contrast. A larger coarse level (a small --mg-levels) goes
 * through the CPU backend instead (CHOLMOD, engine/cpu/cpu_coarse_solve.c),
 * with one round trip of b and x per V-cycle; the CPU stencil and its two
 * vectors hang off the device stencil (st->host, st->host_b, st->host_x),
 * made by the first factorisation and kept, so CHOLMOD's symbolic analysis
 * is reused by later factorisations. */
#include <cublas_v2.h>
#include <cusolverDn.h>
#include <stdlib.h>

#include "cuda_backend.cuh"

static int dense_fits(const vox_stencil *st) { return st->n_dofs <= VOX_CUDA_DENSE_COARSE_DOFS; }

void vox_cuda_coarse_solver_free(vox_backend *be) {
  vox_cuda_state *cs = vox_cuda(be);
  if (cs->solver) cusolverDnDestroy((cusolverDnHandle_t)cs->solver);
  if (cs->blas) cublasDestroy((cublasHandle_t)cs->blas);
  cs->solver = cs->blas = NULL;
}

/* The two products of a solve, x = L^-T (L^-1 b), one warp per output
 * entry so that every warp reads a contiguous column: X = L^-1 is lower
 * triangular in `x_cols` (column-major) and its transpose in `x_rows`
 * (column j of x_rows is row j of X). */
/* z_i = sum_{j <= i} X_ij b_j */
static __global__ void lower_product(const double *__restrict__ x_rows,
                                     const double *__restrict__ b, double *__restrict__ z, int n) {
  const int i = (int)((blockIdx.x * (size_t)blockDim.x + threadIdx.x) / 32),
            lane = threadIdx.x % 32;
  if (i >= n) return;
  const double *row = x_rows + (size_t)i * n;
  double s = 0;
  for (int j = lane; j <= i; j += 32) s += row[j] * b[j];
  s = vox_cuda_warp_sum(s);
  if (lane == 0) z[i] = s;
}

/* w_j = sum_{i >= j} X_ij z_i */
static __global__ void upper_product(const double *__restrict__ x_cols,
                                     const double *__restrict__ z, double *__restrict__ w, int n) {
  const int j = (int)((blockIdx.x * (size_t)blockDim.x + threadIdx.x) / 32),
            lane = threadIdx.x % 32;
  if (j >= n) return;
  const double *col = x_cols + (size_t)j * n;
  double s = 0;
  for (int i = j + lane; i < n; i += 32) s += col[i] * z[i];
  s = vox_cuda_warp_sum(s);
  if (lane == 0) w[j] = s;
}

/* x_rows = the lower triangle of x_cols, transposed (zeros above) */
static __global__ void transpose_lower(const double *__restrict__ x_cols,
                                       double *__restrict__ x_rows, int n) {
  for (size_t k = blockIdx.x * (size_t)blockDim.x + threadIdx.x; k < (size_t)n * n;
       k += (size_t)gridDim.x * blockDim.x) {
    const size_t i = k % n, j = k / n; /* x_rows(i, j) = X(j, i) */
    x_rows[k] = i <= j ? x_cols[j + i * (size_t)n] : 0.0;
  }
}

static __global__ void set_diagonal(double *__restrict__ a, int n, double value) {
  const int i = (int)(blockIdx.x * (size_t)blockDim.x + threadIdx.x);
  if (i < n) a[(size_t)i * n + i] = value;
}

static vox_status cusolver_check(vox_backend *be, cusolverStatus_t status, const char *what) {
  if (status == CUSOLVER_STATUS_SUCCESS) return VOX_OK;
  return vox_error(be->ctx, VOX_ERR_DEVICE, "cuSOLVER: %s failed (status %d)", what, (int)status);
}

/* Column-major dense matrix of the stencil: entry (row, col) with row =
 * node n, component r and col = its neighbour at offset t, component c. The
 * stencil's pattern gives every (row, col) once, so the writes never meet. */
template <typename V>
static __global__ void stencil_to_dense(const V *__restrict__ value, int dpn, int64_t px,
                                        int64_t py, int64_t pz, double *__restrict__ dense,
                                        int64_t n_dofs) {
  const int64_t n_nodes = px * py * pz;
  const int bs = dpn * dpn;
  for (int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; k < n_nodes * 27 * bs;
       k += (int64_t)gridDim.x * blockDim.x) {
    const int64_t n = k / (27 * bs);
    const int t = (int)(k / bs % 27), e = (int)(k % bs), r = e / dpn, c = e % dpn;
    const int64_t i = n % px, j = n / px % py, kk = n / (px * py);
    const int64_t ii = i + t % 3 - 1, jj = j + t / 3 % 3 - 1, k2 = kk + t / 9 - 1;
    if (ii < 0 || ii >= px || jj < 0 || jj >= py || k2 < 0 || k2 >= pz) continue;
    const int64_t m = (k2 * py + jj) * px + ii;
    dense[(m * dpn + c) * n_dofs + n * dpn + r] = (double)value[k];
  }
}

static vox_status dense_factor(vox_backend *be, vox_stencil *st) {
  vox_cuda_state *cs = vox_cuda(be);
  const int64_t n = (int64_t)st->n_dofs;
  if (!cs->solver) {
    cusolverDnHandle_t h;
    TRY(cusolver_check(be, cusolverDnCreate(&h), "creating a handle"));
    cs->solver = h;
  }

  cusolverDnHandle_t h = (cusolverDnHandle_t)cs->solver;
  if (!st->dense) {
    TRY(vox_cuda_alloc(be, (void **)&st->dense, (size_t)(n * n) * sizeof(double),
                       "the coarsest multigrid level's factor"));
    TRY(vox_cuda_alloc(be, (void **)&st->dense_rows, (size_t)(n * n) * sizeof(double),
                       "the coarsest multigrid level's factor"));
    TRY(vox_cuda_alloc(be, (void **)&st->info, sizeof(int), "cuSOLVER's status"));
    TRY(vox_cuda_alloc(be, (void **)&st->dense_z, (size_t)n * sizeof(double),
                       "the coarsest level's work vector"));
  }
  CUDA_TRY(be, cudaMemsetAsync(st->dense, 0, (size_t)(n * n) * sizeof(double)),
           "clearing the coarsest level's matrix");
  const int64_t px = st->grid.nx + 1, py = st->grid.ny + 1, pz = st->grid.nz + 1;
  const int64_t entries = (int64_t)st->n_nodes * 27 * st->dpn * st->dpn;
  const unsigned blocks = vox_cuda_blocks((size_t)entries, 256);
  if (st->value32)
    stencil_to_dense<<<blocks, 256>>>(st->value32, st->dpn, px, py, pz, st->dense, n);
  else
    stencil_to_dense<<<blocks, 256>>>(st->value, st->dpn, px, py, pz, st->dense, n);
  CUDA_LAUNCHED(be, "spreading the coarsest level into a dense matrix");
  int lwork = 0;
  TRY(cusolver_check(
      be, cusolverDnDpotrf_bufferSize(h, CUBLAS_FILL_MODE_LOWER, (int)n, st->dense, (int)n, &lwork),
      "sizing the Cholesky workspace"));
  double *work;
  TRY(vox_cuda_alloc(be, (void **)&work, (size_t)(lwork > 0 ? lwork : 1) * sizeof(double),
                     "the Cholesky workspace"));
  vox_status s = cusolver_check(
      be,
      cusolverDnDpotrf(h, CUBLAS_FILL_MODE_LOWER, (int)n, st->dense, (int)n, work, lwork, st->info),
      "the coarsest level's Cholesky factorisation");
  int info = 0;
  if (s == VOX_OK)
    s = vox_cuda_check(be, cudaMemcpy(&info, st->info, sizeof info, cudaMemcpyDeviceToHost),
                       "reading cuSOLVER's status");
  vox_cuda_free(work);
  TRY(s);
  if (info > 0)
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT,
                     "coarse-level Cholesky: the matrix is not positive definite (leading minor "
                     "%d of %lld)",
                     info, (long long)n);
  /* X = L^-1 as the solution of L X = I: cuBLAS's blocked triangular solve
   * runs as matrix products on the tensor cores, where cuSOLVER's trtri took
   * 8.5 ms of small recursive steps for 4131 unknowns (ncu, H100). X goes
   * to dense_rows, its transpose to dense, and the two are swapped so that
   * dense holds X by columns and dense_rows by rows, as the solve reads
   * them. The entries above X's diagonal come out exactly zero (zero
   * right-hand side, zero partial solutions) and are never read anyway. */
  if (!cs->blas) {
    cublasHandle_t bh;
    if (cublasCreate(&bh) != CUBLAS_STATUS_SUCCESS)
      return vox_error(be->ctx, VOX_ERR_DEVICE, "cuBLAS: creating a handle failed");
    cs->blas = bh;
  }
  CUDA_TRY(be, cudaMemsetAsync(st->dense_rows, 0, (size_t)(n * n) * sizeof(double)),
           "clearing the coarsest level's inverse factor");
  set_diagonal<<<vox_cuda_blocks((size_t)n, 256), 256>>>(st->dense_rows, (int)n, 1.0);
  CUDA_LAUNCHED(be, "the identity of the coarsest level's inverse factor");
  const double one = 1;
  if (cublasDtrsm((cublasHandle_t)cs->blas, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N,
                  CUBLAS_DIAG_NON_UNIT, (int)n, (int)n, &one, st->dense, (int)n, st->dense_rows,
                  (int)n) != CUBLAS_STATUS_SUCCESS)
    return vox_error(be->ctx, VOX_ERR_DEVICE,
                     "cuBLAS: inverting the coarsest level's Cholesky factor failed");
  transpose_lower<<<vox_cuda_blocks((size_t)(n * n), 256), 256>>>(st->dense_rows, st->dense,
                                                                  (int)n);
  CUDA_LAUNCHED(be, "transposing the coarsest level's inverse factor");
  double *x_cols = st->dense_rows;
  st->dense_rows = st->dense;
  st->dense = x_cols;
  return VOX_OK;
}

void vox_cuda_stencil_factor_free(vox_backend *be, vox_stencil *st) {
  if (!st) return;
  vox_cuda_free(st->dense);
  vox_cuda_free(st->dense_rows);
  vox_cuda_free(st->dense_z);
  vox_cuda_free(st->info);
  st->dense = st->dense_rows = st->dense_z = NULL;
  st->info = NULL;
  vox_backend *host = vox_cuda(be)->host;
  if (st->host) host->ops->stencil_destroy(host, st->host);
  if (st->host_b.data) host->ops->vec_destroy(host, &st->host_b);
  if (st->host_x.data) host->ops->vec_destroy(host, &st->host_x);
  st->host = NULL;
}

/* The CPU stencil and vectors, once per stencil. */
static vox_status host_setup(vox_backend *be, vox_stencil *st) {
  vox_backend *host = vox_cuda(be)->host;
  /* always a double stencil: a MIXED level is widened by the download */
  vox_status s =
      host->ops->stencil_create(host, &st->grid, st->dpn, VOX_PRECISION_DOUBLE, &st->host);
  if (s == VOX_OK) s = host->ops->vec_create(host, st->n_dofs, &st->host_b);
  if (s == VOX_OK) s = host->ops->vec_create(host, st->n_dofs, &st->host_x);
  if (s != VOX_OK) vox_cuda_stencil_factor_free(be, st);
  return s;
}

vox_status vox_cuda_stencil_factor(vox_backend *be, vox_stencil *st) {
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
  if (s == VOX_OK) s = host->ops->stencil_upload(host, st->host, values);
  free(values);
  /* a failed factorisation stays recorded in the CPU stencil, whose solve
   * then reports it */
  if (s == VOX_OK) s = host->ops->stencil_factor(host, st->host);
  return s;
}

vox_status vox_cuda_stencil_solve(vox_backend *be, vox_stencil *st, const vox_vec *b, vox_vec *x) {
  if (st->dense) { /* x = L^-T (L^-1 b), through the coarse level's own work vector */
    const int n = (int)st->n_dofs;
    const unsigned warps = vox_cuda_blocks((size_t)n * 32, 256);
    lower_product<<<warps, 256>>>(st->dense_rows, b->data, st->dense_z, n);
    upper_product<<<warps, 256>>>(st->dense, st->dense_z, x->data, n);
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
  /* cudaMemcpy on the legacy stream waits for the restriction that made b */
  CUDA_TRY(be, cudaMemcpy(st->host_b.data, b->data, n * sizeof *b->data, cudaMemcpyDeviceToHost),
           "reading the coarsest level's right-hand side");
  TRY(host->ops->stencil_solve(host, st->host, &st->host_b, &st->host_x));
  CUDA_TRY(be, cudaMemcpy(x->data, st->host_x.data, n * sizeof *x->data, cudaMemcpyHostToDevice),
           "writing the coarsest level's solution");
  return VOX_OK;
}
