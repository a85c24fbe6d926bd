/* SPDX-License-Identifier: BSD-3-Clause */
/* The CUDA backend: device selection, device memory, vector operations and
 * reductions, and the operation table that ties in the operator, SIMP,
 * filter and multigrid kernels. */
#include <stdio.h>
#include <stdlib.h>

#include <cuda_fp16.h>

#include "cell_ops.h"
#include "efg_ops.h"
#include "host_copy.h"
#include "mma_ops.h"
#include "peer_ops.h"
#include "cuda_backend.cuh"
#include "voxfe/element.h"

/* Reductions: a fixed grid, so that the order of the additions and thus the
 * result is the same on every run. */
enum { REDUCE_THREADS = 256, REDUCE_BLOCKS = 1024 };

vox_status vox_cuda_check(vox_backend *be, cudaError_t err, const char *what) {
  if (err == cudaSuccess) return VOX_OK;
  cudaGetLastError(); /* clear a non-sticky error so later calls report their own */
  return vox_error(be->ctx, err == cudaErrorMemoryAllocation ? VOX_ERR_NO_MEMORY : VOX_ERR_DEVICE,
                   "CUDA: %s: %s", what, cudaGetErrorString(err));
}

vox_status vox_cuda_refuse_recording(vox_backend *be, const char *what) {
  if (!vox_cuda(be)->launch_stream) return VOX_OK;
  return vox_error(be->ctx, VOX_ERR_UNSUPPORTED, "CUDA: %s cannot be recorded", what);
}

vox_status vox_cuda_alloc(vox_backend *be, void **p, size_t bytes, const char *what) {
  *p = NULL;
  cudaError_t err = cudaMalloc(p, bytes ? bytes : 1);
  if (err == cudaSuccess) return VOX_OK;
  cudaGetLastError();
  *p = NULL;
  size_t free_bytes = 0, total = 0;
  cudaMemGetInfo(&free_bytes, &total);
  return vox_error(be->ctx, VOX_ERR_NO_MEMORY,
                   "CUDA: out of device memory for %s: %zu bytes needed, %zu of %zu free", what,
                   bytes, free_bytes, total);
}

void vox_cuda_free(void *p) {
  if (p) cudaFree(p);
}

/* ---- vectors -------------------------------------------------------------- */

static vox_status vec_create(vox_backend *be, size_t n, vox_scalar scalar, vox_vec *v) {
  const size_t bytes = vox_vec_bytes(n ? n : 1, scalar);
  v->n = 0;
  v->scalar = scalar;
  TRY(vox_cuda_alloc(be, &v->raw, bytes, "a vector"));
  v->n = n;
  CUDA_TRY(be, cudaMemset(v->raw, 0, bytes), "clearing a vector");
  return VOX_OK;
}

static void vec_destroy(vox_backend *be, vox_vec *v) {
  vox_cuda_free(v->raw);
  v->raw = NULL;
  v->n = 0;
}

static vox_status host_alloc(vox_backend *be, size_t bytes, void **p) {
  if (cudaMallocHost(p, bytes ? bytes : 1) == cudaSuccess) return VOX_OK;
  cudaGetLastError();
  *p = NULL;
  return vox_error(be->ctx, VOX_ERR_NO_MEMORY, "CUDA: out of page-locked host memory (%zu bytes)",
                   bytes);
}

static void host_free(vox_backend *be, void *p) {
  (void)be;
  if (p) cudaFreeHost(p);
}

/* Transfers. cudaMemcpy from pageable memory copies through the driver's
 * own small page-locked buffer in one host thread, and into memory never
 * touched it takes the page faults one by one: about 1.4 GB/s for a
 * design's fields on the H200's host (docs/benchmarks.md). Vectors from a
 * few megabytes on go through two page-locked buffers of the backend
 * instead: the host's threads fill one (vox_host_copy) while the copy
 * engine drains the other, on the legacy stream, so that the transfers
 * stay in order with the kernels around them. */
static const size_t STAGE_BYTES = (size_t)32 << 20, STAGE_FROM = (size_t)4 << 20;

static vox_status stage_make(vox_backend *be) {
  vox_cuda_state *cs = vox_cuda(be);
  for (int b = 0; b < 2; b++) {
    if (cs->stage[b]) continue;
    CUDA_TRY(be, cudaMallocHost(&cs->stage[b], STAGE_BYTES), "page-locked transfer buffers");
    CUDA_TRY(be, cudaEventCreateWithFlags(&cs->stage_done[b], cudaEventDisableTiming),
             "page-locked transfer buffers");
  }
  return VOX_OK;
}

static void stage_free(vox_cuda_state *cs) {
  for (int b = 0; b < 2; b++) {
    if (cs->stage[b]) cudaFreeHost(cs->stage[b]);
    if (cs->stage_done[b]) cudaEventDestroy(cs->stage_done[b]);
    cs->stage[b] = NULL;
    cs->stage_done[b] = NULL;
  }
}

/* The bytes of chunk c of a transfer of `bytes`. */
static size_t chunk_bytes(size_t bytes, size_t c) {
  const size_t at = c * STAGE_BYTES;
  return bytes - at < STAGE_BYTES ? bytes - at : STAGE_BYTES;
}

static vox_status upload_bytes(vox_backend *be, void *device, const void *host, size_t bytes) {
  const char *what = "uploading a vector";
  TRY(vox_cuda_refuse_recording(be, what));
  if (bytes < STAGE_FROM) {
    CUDA_TRY(be, cudaMemcpy(device, host, bytes, cudaMemcpyHostToDevice), what);
    return VOX_OK;
  }
  TRY(stage_make(be));
  vox_cuda_state *cs = vox_cuda(be);
  const size_t chunks = (bytes + STAGE_BYTES - 1) / STAGE_BYTES;
  for (size_t c = 0; c < chunks; c++) {
    const size_t at = c * STAGE_BYTES, n = chunk_bytes(bytes, c);
    const int b = (int)(c & 1);
    CUDA_TRY(be, cudaEventSynchronize(cs->stage_done[b]), what); /* its last copy is done */
    vox_host_copy(cs->stage[b], (const char *)host + at, n, be->threads);
    CUDA_TRY(be, cudaMemcpyAsync((char *)device + at, cs->stage[b], n, cudaMemcpyHostToDevice, 0),
             what);
    CUDA_TRY(be, cudaEventRecord(cs->stage_done[b], 0), what);
  }
  return VOX_OK;
}

/* Chunk c of a download on its way into buffer c & 1, its event recorded. */
static vox_status fetch_chunk(vox_backend *be, const void *device, size_t bytes, size_t c) {
  vox_cuda_state *cs = vox_cuda(be);
  const char *what = "downloading a vector";
  CUDA_TRY(be, cudaMemcpyAsync(cs->stage[c & 1], (const char *)device + c * STAGE_BYTES,
                               chunk_bytes(bytes, c), cudaMemcpyDeviceToHost, 0), what);
  CUDA_TRY(be, cudaEventRecord(cs->stage_done[c & 1], 0), what);
  return VOX_OK;
}

static vox_status download_bytes(vox_backend *be, void *host, const void *device, size_t bytes) {
  TRY(vox_cuda_refuse_recording(be, "downloading a vector"));
  if (bytes < STAGE_FROM) {
    CUDA_TRY(be, cudaMemcpy(host, device, bytes, cudaMemcpyDeviceToHost), "downloading a vector");
    return VOX_OK;
  }
  TRY(stage_make(be));
  vox_cuda_state *cs = vox_cuda(be);
  const size_t chunks = (bytes + STAGE_BYTES - 1) / STAGE_BYTES;
  /* the next chunk is on its way while the host's threads copy this one out */
  for (size_t c = 0; c < chunks && c < 2; c++) TRY(fetch_chunk(be, device, bytes, c));
  for (size_t c = 0; c < chunks; c++) {
    CUDA_TRY(be, cudaEventSynchronize(cs->stage_done[c & 1]), "downloading a vector");
    vox_host_copy((char *)host + c * STAGE_BYTES, cs->stage[c & 1], chunk_bytes(bytes, c),
                  be->threads);
    if (c + 2 < chunks) TRY(fetch_chunk(be, device, bytes, c + 2));
  }
  return VOX_OK;
}

static vox_status vec_upload(vox_backend *be, vox_vec *v, const void *host) {
  return upload_bytes(be, v->raw, host, vox_vec_bytes(v->n, v->scalar));
}

static vox_status vec_download(vox_backend *be, const vox_vec *v, void *host) {
  return download_bytes(be, host, v->raw, vox_vec_bytes(v->n, v->scalar));
}

static __global__ void set_kernel(double *x, double a, size_t n) { VOX_GRID_STRIDE(i, n) x[i] = a; }

static __global__ void axpby_kernel(double *__restrict__ y, double a, const double *__restrict__ x,
                                    double b, size_t n) {
  VOX_GRID_STRIDE(i, n) y[i] = a * x[i] + b * y[i];
}

static __global__ void axpy_kernel(double *__restrict__ y, double a, const double *__restrict__ x,
                                   size_t n) {
  VOX_GRID_STRIDE(i, n) y[i] += a * x[i];
}

static __global__ void xpay_kernel(double *__restrict__ y, double a, const double *__restrict__ x,
                                   size_t n) {
  VOX_GRID_STRIDE(i, n) y[i] = x[i] + a * y[i];
}

static __global__ void mult_kernel(double *w, const double *x, const double *y, size_t n) {
  VOX_GRID_STRIDE(i, n) w[i] = x[i] * y[i];
}

static __global__ void reciprocal_kernel(double *x, size_t n) {
  VOX_GRID_STRIDE(i, n) x[i] = 1 / x[i];
}

static __global__ void random_kernel(double *x, uint64_t seed, uint64_t first, size_t n) {
  VOX_GRID_STRIDE(i, n) x[i] = vox_hash_uniform(seed, first + i);
}

static vox_status vec_random(vox_backend *be, vox_vec *v, uint64_t seed, uint64_t first) {
  random_kernel<<<vox_cuda_grid(v->n), VOX_CUDA_THREADS, 0, vox_cuda_stream(be)>>>(
      v->data, seed, first, v->n);
  CUDA_LAUNCHED(be, "random vector");
  return VOX_OK;
}

static __global__ void smoother_step_kernel(const double *__restrict__ b,
                                            const double *__restrict__ ax,
                                            const double *__restrict__ w, double alpha, double beta,
                                            double *__restrict__ d, double *__restrict__ x,
                                            size_t n) {
  VOX_GRID_STRIDE(i, n) {
    const double r = w[i] * (ax ? b[i] - ax[i] : b[i]);
    const double di = beta != 0 ? alpha * r + beta * d[i] : alpha * r;
    if (d) d[i] = di;
    x[i] = ax ? x[i] + di : di; /* a zero start: x is not read (it need not be zeroed) */
  }
}

static vox_status smoother_step(vox_backend *be, const vox_vec *b, const vox_vec *ax,
                                const vox_vec *inv_diag, double alpha, double beta, vox_vec *d,
                                vox_vec *x) {
  smoother_step_kernel<<<vox_cuda_grid(x->n), VOX_CUDA_THREADS, 0, vox_cuda_stream(be)>>>(
      b->data, ax ? ax->data : NULL, inv_diag->data, alpha, beta, d ? d->data : NULL, x->data,
      x->n);
  CUDA_LAUNCHED(be, "smoother step");
  return VOX_OK;
}

static vox_status vec_set(vox_backend *be, vox_vec *v, double a) {
  if (v->scalar != VOX_DOUBLE) return vox_cuda_vec_set_any(be, v, a);
  set_kernel<<<vox_cuda_grid(v->n), VOX_CUDA_THREADS, 0, vox_cuda_stream(be)>>>(v->data, a, v->n);
  CUDA_LAUNCHED(be, "vector set");
  return VOX_OK;
}

static vox_status vec_copy(vox_backend *be, vox_vec *dst, const vox_vec *src) {
  if (dst->scalar != src->scalar) return vox_cuda_vec_convert(be, dst, src);
  CUDA_TRY(be,
           cudaMemcpyAsync(dst->raw, src->raw, vox_vec_bytes(src->n, src->scalar),
                           cudaMemcpyDeviceToDevice, vox_cuda_stream(be)),
           "copying a vector");
  return VOX_OK;
}

static vox_status vec_axpy(vox_backend *be, vox_vec *y, double a, const vox_vec *x) {
  if (y->scalar != VOX_DOUBLE || x->scalar != VOX_DOUBLE) return vox_cuda_vec_axpy_any(be, y, a, x);
  axpy_kernel<<<vox_cuda_grid(y->n), VOX_CUDA_THREADS, 0, vox_cuda_stream(be)>>>(
      y->data, a, x->data, y->n);
  CUDA_LAUNCHED(be, "vector axpy");
  return VOX_OK;
}

static vox_status vec_xpay(vox_backend *be, vox_vec *y, double a, const vox_vec *x) {
  xpay_kernel<<<vox_cuda_grid(y->n), VOX_CUDA_THREADS, 0, vox_cuda_stream(be)>>>(
      y->data, a, x->data, y->n);
  CUDA_LAUNCHED(be, "vector xpay");
  return VOX_OK;
}

static vox_status vec_mult(vox_backend *be, vox_vec *w, const vox_vec *x, const vox_vec *y) {
  mult_kernel<<<vox_cuda_grid(w->n), VOX_CUDA_THREADS, 0, vox_cuda_stream(be)>>>(
      w->data, x->data, y->data, w->n);
  CUDA_LAUNCHED(be, "vector product");
  return VOX_OK;
}

static vox_status vec_axpby(vox_backend *be, vox_vec *y, double a, const vox_vec *x, double b) {
  axpby_kernel<<<vox_cuda_grid(y->n), VOX_CUDA_THREADS, 0, vox_cuda_stream(be)>>>(
      y->data, a, x->data, b, y->n);
  CUDA_LAUNCHED(be, "vector axpby");
  return VOX_OK;
}

static vox_status vec_reciprocal(vox_backend *be, vox_vec *v) {
  reciprocal_kernel<<<vox_cuda_grid(v->n), VOX_CUDA_THREADS, 0, vox_cuda_stream(be)>>>(
      v->data, v->n);
  CUDA_LAUNCHED(be, "vector reciprocal");
  return VOX_OK;
}

/* ---- reductions ----------------------------------------------------------- */

struct sum_op {
  __device__ double operator()(double a, double b) const { return a + b; }
};
struct max_op {
  __device__ double operator()(double a, double b) const { return fmax(a, b); }
};

/* Reduces the value of every thread of a block into thread 0's result. */
template <class Op> static __device__ double block_reduce(double v, Op op) {
  __shared__ double warp_sums[REDUCE_THREADS / 32];
  for (int offset = 16; offset > 0; offset /= 2)
    v = op(v, __shfl_down_sync(0xffffffffu, v, offset));
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < REDUCE_THREADS / 32 ? warp_sums[lane] : 0.0;
    for (int offset = 16; offset > 0; offset /= 2)
      v = op(v, __shfl_down_sync(0xffffffffu, v, offset));
  }
  return v;
}

/* Stage 1: partials[block] = reduction of term(i) over a grid-stride slice. */
template <class Op, class Term>
static __global__ void reduce_partials(size_t n, Term term, Op op, double *partials) {
  double v = 0;
  VOX_GRID_STRIDE(i, n) v = op(v, term(i));
  v = block_reduce(v, op);
  if (threadIdx.x == 0) partials[blockIdx.x] = v;
}

/* Stage 2: one block folds the partials into partials[REDUCE_BLOCKS]. */
template <class Op> static __global__ void reduce_final(Op op, double *partials) {
  double v = 0;
  for (int i = threadIdx.x; i < REDUCE_BLOCKS; i += REDUCE_THREADS) v = op(v, partials[i]);
  v = block_reduce(v, op);
  if (threadIdx.x == 0) partials[REDUCE_BLOCKS] = v;
}

struct dot_term {
  const double *x, *y;
  __device__ double operator()(size_t i) const { return x[i] * y[i]; }
};
struct abs_diff_term {
  const double *x, *y;
  __device__ double operator()(size_t i) const { return fabs(x[i] - y[i]); }
};

template <class Op, class Term>
static vox_status reduce(vox_backend *be, size_t n, Term term, Op op, double *out) {
  TRY(vox_cuda_refuse_recording(be, "a reduction read on the host"));
  vox_cuda_state *cs = vox_cuda(be);
  reduce_partials<<<REDUCE_BLOCKS, REDUCE_THREADS>>>(n, term, op, cs->partials);
  reduce_final<<<1, REDUCE_THREADS>>>(op, cs->partials);
  CUDA_LAUNCHED(be, "a reduction");
  CUDA_TRY(
      be,
      cudaMemcpy(cs->scalar, cs->partials + REDUCE_BLOCKS, sizeof(double), cudaMemcpyDeviceToHost),
      "reading a reduction");
  *out = *cs->scalar;
  return VOX_OK;
}

static vox_status vec_dot(vox_backend *be, const vox_vec *x, const vox_vec *y, double *out) {
  return reduce(be, x->n, dot_term{x->data, y->data}, sum_op{}, out);
}

/* CG's update as the term of its own reduction: each element is updated
 * once and its new residual squared is summed in the same pass. */
struct cg_update_term {
  double *x, *r;
  const double *p, *q;
  double alpha;
  __device__ double operator()(size_t i) const {
    x[i] += alpha * p[i];
    const double ri = r[i] - alpha * q[i];
    r[i] = ri;
    return ri * ri;
  }
};

static vox_status cg_update(vox_backend *be, vox_vec *x, vox_vec *r, double alpha,
                            const vox_vec *p, const vox_vec *q, double *rr) {
  return reduce(be, x->n, cg_update_term{x->data, r->data, p->data, q->data, alpha}, sum_op{}, rr);
}

static vox_status vec_max_abs_diff(vox_backend *be, const vox_vec *x, const vox_vec *y,
                                   double *out) {
  return reduce(be, x->n, abs_diff_term{x->data, y->data}, max_op{}, out);
}

/* ---- the smoother bound's Lanczos steps, scalars on the device ------------- */

/* stencil_lanczos keeps CG's scalars in cs->lanczos: rz, the current step's
 * alpha and beta, whether every step so far was sound, then alpha, beta of
 * each step. Each step is the host loop of multigrid.c with the same
 * kernels' arithmetic (the same two-stage sums), so the estimates are
 * those of that loop, but no step waits for the host: 16 steps on each
 * coarse level were 32 round trips a level, and on the small levels the
 * steps are nothing but latency. */
enum { LZ_RZ, LZ_ALPHA, LZ_BETA, LZ_OK, LZ_STEPS };
enum { LZ_SCALARS = LZ_STEPS + 3 * VOX_LANCZOS_MAX_STEPS };

/* Stage 2 of a reduction whose result stays on the device: `post` takes
 * the sum in thread 0. */
template <class Post> static __global__ void reduce_final_post(double *partials, Post post) {
  double v = 0;
  for (int i = threadIdx.x; i < REDUCE_BLOCKS; i += REDUCE_THREADS) v += partials[i];
  v = block_reduce(v, sum_op{});
  if (threadIdx.x == 0) post(v);
}

struct lanczos_start {
  double *s;
  __device__ void operator()(double rz) const { s[LZ_RZ] = rz, s[LZ_OK] = 1; }
};
/* after p.q of step k: the step is sound while p.q > 0 and r.z > 0 */
struct lanczos_alpha {
  double *s;
  int k;
  __device__ void operator()(double pq) const {
    const double rz = s[LZ_RZ];
    const bool ok = s[LZ_OK] != 0 && pq > 0 && rz > 0;
    s[LZ_OK] = ok;
    s[LZ_ALPHA] = ok ? rz / pq : 0;
    s[LZ_STEPS + k] = s[LZ_ALPHA];
    s[LZ_STEPS + 2 * VOX_LANCZOS_MAX_STEPS + k] = ok;
  }
};
/* after the new r.z of step k */
struct lanczos_beta {
  double *s;
  int k;
  __device__ void operator()(double rz_new) const {
    const bool ok = s[LZ_OK] != 0;
    s[LZ_BETA] = ok ? rz_new / s[LZ_RZ] : 0;
    s[LZ_STEPS + VOX_LANCZOS_MAX_STEPS + k] = s[LZ_BETA];
    if (ok) s[LZ_RZ] = rz_new;
  }
};

/* r += (-alpha) q, z = r .* w, summing r.z: vec->axpy, vec->mult and vec->dot
 * of the host loop in one pass, alpha read on the device */
struct lanczos_update_term {
  double *r, *z;
  const double *q, *w, *s;
  __device__ double operator()(size_t i) const {
    const double a = -s[LZ_ALPHA];
    r[i] += a * q[i];
    const double ri = r[i], zi = ri * w[i];
    z[i] = zi;
    return ri * zi;
  }
};

/* p = z + beta p (vec->xpay) with beta where a reduction left it on the
 * device: the Lanczos steps' and CG's direction updates */
static __global__ void xpay_device_beta_kernel(double *__restrict__ p,
                                               const double *__restrict__ z,
                                               const double *__restrict__ beta_on_device,
                                               size_t n) {
  const double beta = *beta_on_device;
  VOX_GRID_STRIDE(i, n) p[i] = z[i] + beta * p[i];
}

template <class Term, class Post>
static vox_status reduce_on_device(vox_backend *be, size_t n, Term term, Post post) {
  vox_cuda_state *cs = vox_cuda(be);
  reduce_partials<<<REDUCE_BLOCKS, REDUCE_THREADS>>>(n, term, sum_op{}, cs->partials);
  reduce_final_post<<<1, REDUCE_THREADS>>>(cs->partials, post);
  CUDA_LAUNCHED(be, "a reduction on the device");
  return VOX_OK;
}

static vox_status lanczos_scalars(vox_backend *be, double **s) {
  vox_cuda_state *cs = vox_cuda(be);
  if (!cs->lanczos)
    TRY(vox_cuda_alloc(be, (void **)&cs->lanczos, LZ_SCALARS * sizeof(double),
                       "the Lanczos steps' scalars"));
  *s = cs->lanczos;
  return VOX_OK;
}

/* alpha_j and beta_j of the sound steps among the first `steps`, read back
 * at once */
static vox_status lanczos_read(vox_backend *be, int steps, double *alpha, double *beta,
                               int *done) {
  double *s, host[LZ_SCALARS];
  *done = 0;
  if (steps < 0 || steps > VOX_LANCZOS_MAX_STEPS)
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT, "Lanczos: %d steps", steps);
  TRY(lanczos_scalars(be, &s));
  TRY(vox_cuda_refuse_recording(be, "reading the Lanczos steps"));
  CUDA_TRY(be, cudaMemcpy(host, s, sizeof host, cudaMemcpyDeviceToHost),
           "reading the Lanczos steps");
  int k = 0;
  while (k < steps && host[LZ_STEPS + 2 * VOX_LANCZOS_MAX_STEPS + k] != 0) {
    alpha[k] = host[LZ_STEPS + k];
    beta[k] = host[LZ_STEPS + VOX_LANCZOS_MAX_STEPS + k];
    k++;
  }
  *done = k;
  return VOX_OK;
}

/* The Lanczos steps of vox_vector_ops with any preconditioner: the
 * kernels of the host loop's v->dot, v->axpy and v->xpay, alpha and beta
 * read on the device. */
static vox_status lanczos_begin(vox_backend *be, const vox_vec *r, const vox_vec *z,
                                vox_vec *p) {
  double *s;
  TRY(lanczos_scalars(be, &s));
  TRY(vec_copy(be, p, z));
  return reduce_on_device(be, r->n, dot_term{r->data, z->data}, lanczos_start{s});
}

static __global__ void axpy_device_alpha_kernel(double *__restrict__ r,
                                                const double *__restrict__ q,
                                                const double *__restrict__ s, size_t n) {
  const double a = -s[LZ_ALPHA];
  VOX_GRID_STRIDE(i, n) r[i] += a * q[i];
}

static vox_status lanczos_step(vox_backend *be, int k, const vox_vec *p, const vox_vec *q,
                               vox_vec *r) {
  double *s;
  if (k < 0 || k >= VOX_LANCZOS_MAX_STEPS)
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT, "Lanczos: step %d", k);
  TRY(lanczos_scalars(be, &s));
  TRY(reduce_on_device(be, p->n, dot_term{p->data, q->data}, lanczos_alpha{s, k}));
  axpy_device_alpha_kernel<<<vox_cuda_grid(r->n), VOX_CUDA_THREADS>>>(r->data, q->data, s, r->n);
  CUDA_LAUNCHED(be, "a Lanczos step");
  return VOX_OK;
}

static vox_status lanczos_direction(vox_backend *be, int k, const vox_vec *r, const vox_vec *z,
                                    vox_vec *p) {
  double *s;
  if (k < 0 || k >= VOX_LANCZOS_MAX_STEPS)
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT, "Lanczos: step %d", k);
  TRY(lanczos_scalars(be, &s));
  TRY(reduce_on_device(be, r->n, dot_term{r->data, z->data}, lanczos_beta{s, k}));
  xpay_device_beta_kernel<<<vox_cuda_grid(p->n), VOX_CUDA_THREADS>>>(p->data, z->data,
                                                                      s + LZ_BETA, p->n);
  CUDA_LAUNCHED(be, "a Lanczos step's direction");
  return VOX_OK;
}

static vox_status stencil_lanczos(vox_backend *be, vox_stencil *st, const vox_vec *inv_diag,
                                  uint64_t seed, int steps, vox_vec *r, vox_vec *z, vox_vec *p,
                                  vox_vec *q, double *alpha, double *beta, int *done) {
  *done = 0;
  if (steps < 0 || steps > VOX_LANCZOS_MAX_STEPS)
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT, "Lanczos: %d steps", steps);
  double *s;
  TRY(lanczos_scalars(be, &s));
  const size_t n = r->n;
  TRY(vec_random(be, r, seed, 0));
  TRY(vec_mult(be, z, r, inv_diag));
  TRY(vec_copy(be, p, z));
  TRY(reduce_on_device(be, n, dot_term{r->data, z->data}, lanczos_start{s}));
  for (int k = 0; k < steps; k++) {
    TRY(vox_cuda_stencil_apply(be, st, p, q));
    TRY(reduce_on_device(be, n, dot_term{p->data, q->data}, lanczos_alpha{s, k}));
    TRY(reduce_on_device(be, n, lanczos_update_term{r->data, z->data, q->data, inv_diag->data, s},
                         lanczos_beta{s, k}));
    xpay_device_beta_kernel<<<vox_cuda_grid(n), VOX_CUDA_THREADS>>>(p->data, z->data,
                                                                      s + LZ_BETA, n);
    CUDA_LAUNCHED(be, "a Lanczos step");
  }
  return lanczos_read(be, steps, alpha, beta, done);
}

/* ---- conjugate gradients with its scalars on the device -------------------- */

/* cs->cg: rz, then pq and rr (read back together with rz by cg_step), alpha,
 * whether the step is sound, beta. The kernels are those of ksp.c's host
 * loop (the same two-stage sums, the same update term), so the iterates are
 * the same; only the waits for the host go: p.q's and r.z's. */
enum { CG_RZ, CG_PQ, CG_RR, CG_ALPHA, CG_OK, CG_BETA, CG_SCALARS };

static vox_status cg_scalars(vox_backend *be, double **s) {
  vox_cuda_state *cs = vox_cuda(be);
  if (!cs->cg)
    TRY(vox_cuda_alloc(be, (void **)&cs->cg, CG_SCALARS * sizeof(double), "CG's scalars"));
  *s = cs->cg;
  return VOX_OK;
}

struct cg_keep_rz {
  double *s;
  __device__ void operator()(double rz) const { s[CG_RZ] = rz; }
};
struct cg_alpha {
  double *s;
  __device__ void operator()(double pq) const {
    const double rz = s[CG_RZ];
    const bool ok = pq > 0 && rz > 0;
    s[CG_PQ] = pq;
    s[CG_OK] = ok;
    s[CG_ALPHA] = ok ? rz / pq : 0;
  }
};
struct cg_keep_rr {
  double *s;
  __device__ void operator()(double rr) const { s[CG_RR] = rr; }
};
struct cg_beta {
  double *s;
  __device__ void operator()(double rz_new) const {
    s[CG_BETA] = rz_new / s[CG_RZ];
    s[CG_RZ] = rz_new;
  }
};

/* cg_update_term with alpha read on the device, and no update where the
 * step is not sound */
struct cg_step_term {
  double *x, *r;
  const double *p, *q, *s;
  __device__ double operator()(size_t i) const {
    if (s[CG_OK] == 0) return r[i] * r[i];
    const double alpha = s[CG_ALPHA];
    x[i] += alpha * p[i];
    const double ri = r[i] - alpha * q[i];
    r[i] = ri;
    return ri * ri;
  }
};

static vox_status cg_begin(vox_backend *be, const vox_vec *r, const vox_vec *z, vox_vec *p,
                           double *rz) {
  double *s;
  TRY(cg_scalars(be, &s));
  TRY(vec_copy(be, p, z));
  TRY(reduce_on_device(be, r->n, dot_term{r->data, z->data}, cg_keep_rz{s}));
  TRY(vox_cuda_refuse_recording(be, "reading r.z"));
  CUDA_TRY(be, cudaMemcpy(rz, s + CG_RZ, sizeof *rz, cudaMemcpyDeviceToHost), "reading r.z");
  return VOX_OK;
}

static vox_status cg_step(vox_backend *be, vox_vec *x, vox_vec *r, const vox_vec *p,
                          const vox_vec *q, double *pq, double *rz, double *rr) {
  double *s, host[3];
  TRY(cg_scalars(be, &s));
  TRY(reduce_on_device(be, p->n, dot_term{p->data, q->data}, cg_alpha{s}));
  TRY(reduce_on_device(be, x->n, cg_step_term{x->data, r->data, p->data, q->data, s},
                       cg_keep_rr{s}));
  static_assert(CG_RZ + 1 == CG_PQ && CG_PQ + 1 == CG_RR, "read back together");
  TRY(vox_cuda_refuse_recording(be, "reading CG's step"));
  CUDA_TRY(be, cudaMemcpy(host, s + CG_RZ, sizeof host, cudaMemcpyDeviceToHost),
           "reading CG's step");
  *rz = host[0], *pq = host[1], *rr = host[2];
  return VOX_OK;
}

static vox_status cg_direction(vox_backend *be, const vox_vec *r, const vox_vec *z, vox_vec *p) {
  double *s;
  TRY(cg_scalars(be, &s));
  TRY(reduce_on_device(be, r->n, dot_term{r->data, z->data}, cg_beta{s}));
  xpay_device_beta_kernel<<<vox_cuda_grid(p->n), VOX_CUDA_THREADS>>>(p->data, z->data,
                                                                      s + CG_BETA, p->n);
  CUDA_LAUNCHED(be, "CG's direction");
  return VOX_OK;
}

/* ---- the backend ---------------------------------------------------------- */

static vox_status synchronize(vox_backend *be) {
  CUDA_TRY(be, cudaDeviceSynchronize(), "waiting for the device");
  return VOX_OK;
}

static vox_status memory(vox_backend *be, size_t *free_bytes, size_t *total_bytes) {
  CUDA_TRY(be, cudaMemGetInfo(free_bytes, total_bytes), "reading the device memory");
  return VOX_OK;
}

static void destroy(vox_backend *be) {
  vox_cuda_state *cs = vox_cuda(be);
  if (cs) {
    vox_cuda_coarse_solver_free(be);
    vox_cuda_free(cs->partials);
    vox_cuda_free(cs->oc_partial);
    vox_cuda_free(cs->lanczos);
    vox_cuda_free(cs->cg);
    vox_cuda_free(cs->peer_arrived);
    if (cs->scalar) cudaFreeHost(cs->scalar);
    if (cs->record_stream) cudaStreamDestroy(cs->record_stream);
    if (cs->side_stream) cudaStreamDestroy(cs->side_stream);
    if (cs->side_fork) cudaEventDestroy(cs->side_fork);
    if (cs->side_join) cudaEventDestroy(cs->side_join);
    stage_free(cs);
    vox_backend_destroy(cs->host);
    free(cs);
  }
  free(be);
}

/* the FP16 levels' scales (cuda_stencil.cu, "FP16 storage") */
static int stencil_mixed_dof_bytes(const vox_backend *be, const vox_grid *grid) {
  return vox_cuda_fp16_stencils(be, grid) ? (int)sizeof(float) : 0;
}

static vox_vector_ops make_vec_ops(void) {
  vox_vector_ops o = {};
  o.create = vec_create;
  o.destroy = vec_destroy;
  o.upload = vec_upload;
  o.download = vec_download;
  o.set = vec_set;
  o.copy = vec_copy;
  o.axpy = vec_axpy;
  o.xpay = vec_xpay;
  o.mult = vec_mult;
  o.axpby = vec_axpby;
  o.reciprocal = vec_reciprocal;
  o.random = vec_random;
  o.smoother_step = smoother_step;
  o.dot = vec_dot;
  o.cg_update = cg_update;
  o.cg_begin = cg_begin;
  o.cg_step = cg_step;
  o.cg_direction = cg_direction;
  o.lanczos_begin = lanczos_begin;
  o.lanczos_step = lanczos_step;
  o.lanczos_direction = lanczos_direction;
  o.lanczos_read = lanczos_read;
  o.max_abs_diff = vec_max_abs_diff;
  return o;
}

static const vox_vector_ops cuda_vec_ops = make_vec_ops();

static vox_operator_ops make_op_ops(void) {
  vox_operator_ops o = {};
  o.create = vox_cuda_op_create;
  o.destroy = vox_cuda_op_destroy;
  o.set_moduli = vox_cuda_op_set_moduli;
  o.apply = vox_cuda_op_apply;
  o.zero_fixed = vox_cuda_op_zero_fixed;
  o.diagonal = vox_cuda_op_diagonal;
  o.element_energy = vox_cuda_op_element_energy;
  o.strain_load = vox_cuda_op_strain_load;
  o.strain_energy = vox_cuda_op_strain_energy;
  o.strain_energy_sums = vox_cuda_op_strain_energy_sums;
  o.smooth = vox_cuda_op_smooth;
  o.residual = vox_cuda_op_residual;
  o.prepare = vox_cuda_op_prepare;
  return o;
}

static const vox_operator_ops cuda_op_ops = make_op_ops();

static vox_multigrid_ops make_mg_ops(void) {
  vox_multigrid_ops o = {};
  o.dense_coarse_dofs = VOX_CUDA_DENSE_COARSE_DOFS;
  o.stencil_blocks = VOX_CUDA_STENCIL_SLOTS;
  o.records = 1; /* every launch of a cycle goes to vox_cuda_stream */
  o.stencil_mixed_dof_bytes = stencil_mixed_dof_bytes;
  o.stencil_create = vox_cuda_stencil_create;
  o.stencil_destroy = vox_cuda_stencil_destroy;
  o.galerkin_operator = vox_cuda_galerkin_operator;
  o.galerkin_stencil = vox_cuda_galerkin_stencil;
  o.stencil_upload = vox_cuda_stencil_upload;
  o.stencil_download = vox_cuda_stencil_download;
  o.stencil_values = vox_cuda_stencil_values;
  o.stencil_value_runs = VOX_CUDA_STENCIL_SLOTS; /* slot by slot */
  o.stencil_apply = vox_cuda_stencil_apply;
  o.stencil_smooth = vox_cuda_stencil_smooth;
  o.stencil_residual = vox_cuda_stencil_residual;
  o.stencil_diagonal = vox_cuda_stencil_diagonal;
  o.stencil_full_storage = vox_cuda_stencil_full_storage;
  o.stencil_lanczos = stencil_lanczos;
  o.stencil_factor = vox_cuda_stencil_factor;
  o.stencil_solve = vox_cuda_stencil_solve;
  o.restrict_residual = vox_cuda_restrict_residual;
  o.prolong_add = vox_cuda_prolong_add;
  return o;
}

static const vox_multigrid_ops cuda_mg_ops = make_mg_ops();

static vox_design_ops make_design_ops(void) {
  vox_design_ops o = {};
  o.simp_moduli = vox_cuda_simp_moduli;
  o.simp_sensitivity = vox_cuda_simp_sensitivity;
  o.oc_update = vox_cuda_oc_update;
  o.oc_volumes = vox_cuda_oc_volumes;
  o.filter_create = vox_cuda_filter_create;
  o.filter_destroy = vox_cuda_filter_destroy;
  o.filter_apply = vox_cuda_filter_apply;
  o.filter_transpose = vox_cuda_filter_transpose;
  o.filter_sensitivity = vox_cuda_filter_sensitivity;
  o.filter_create_periodic = vox_cuda_filter_create_periodic;
  o.symmetrize = vox_cuda_symmetrize;
  o.turn_field = vox_cuda_turn_field;
  return o;
}

static const vox_design_ops cuda_design_ops = make_design_ops();

static vox_backend_ops make_ops(void) {
  vox_backend_ops o = {};
  o.name = "cuda";
  o.destroy = destroy;
  o.synchronize = synchronize;
  o.device_memory = 1;
  o.memory = memory;
  o.vec = &cuda_vec_ops;
  o.op = &cuda_op_ops;
  o.mg = &cuda_mg_ops;
  o.design = &cuda_design_ops;
  o.sparse = &vox_cuda_sparse_ops;
  o.cell = &vox_cuda_cell_ops;
  o.efg = &vox_cuda_efg_ops;
  o.mma = &vox_cuda_mma_ops;
  o.peer = &vox_cuda_peer_ops;
  o.host_alloc = host_alloc;
  o.host_free = host_free;
  return o;
}

static const vox_backend_ops cuda_ops = make_ops();

/* The kernels number the hexahedron's corners by vox_cuda_corner; it must be
 * element.h's order, in which Ke numbers its dofs. */
static bool corners_match_element_h(void) {
  for (int a = 0; a < 8; a++) {
    for (int axis = 0; axis < 3; axis++)
      if (vox_cuda_corner(a, axis) != vox_hex8_corner[a][axis]) return false;
    if (vox_cuda_corner_index(vox_cuda_corner(a, 0), vox_cuda_corner(a, 1),
                              vox_cuda_corner(a, 2)) != a)
      return false;
  }
  return true;
}

extern "C" int vox_cuda_device_count(void) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return count;
}

extern "C" void vox_cuda_warm_up(int index) {
  /* the runtime's first call starts the driver; cudaFree(0) then makes the
   * device's primary context, which every later thread of the process
   * shares */
  int count = 0;
  if (cudaGetDeviceCount(&count) == cudaSuccess && count > 0 &&
      (index < 0 || cudaSetDevice(index % count) == cudaSuccess) && cudaFree(0) == cudaSuccess)
    vox_cuda_coarse_warm_up();
  cudaGetLastError();
}

extern "C" vox_status vox_cuda_backend_create(vox_context *ctx, const vox_backend_options *options,
                                              vox_backend **out) {
  *out = NULL;
  if (!corners_match_element_h())
    return vox_error(ctx, VOX_ERR_UNSUPPORTED,
                     "the CUDA backend's hexahedron corner order differs from voxfe/element.h");
  if (options && options->device_index >= 0) {
    cudaError_t err = cudaSetDevice(options->device_index);
    if (err != cudaSuccess) {
      cudaGetLastError();
      return vox_error(ctx, VOX_ERR_DEVICE, "CUDA device %d: %s", options->device_index,
                       cudaGetErrorString(err));
    }
  }
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    cudaGetLastError();
    return vox_error(ctx, VOX_ERR_DEVICE, "no CUDA device: %s",
                     err != cudaSuccess ? cudaGetErrorString(err) : "none found");
  }
  vox_backend *be = (vox_backend *)calloc(1, sizeof *be);
  vox_cuda_state *cs = (vox_cuda_state *)calloc(1, sizeof *cs);
  if (!be || !cs) {
    free(be);
    free(cs);
    return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
  }
  be->ops = &cuda_ops;
  be->ctx = ctx;
  be->device = VOX_DEVICE_CUDA;
  be->threads = vox_context_threads(ctx);
  if (options) {
    be->kernel = options->kernel;
    be->fp16_levels = options->fp16_levels;
    be->stencil_kernel = options->stencil_kernel;
  }
  be->impl = cs;
  vox_status s = vox_cuda_check(be, cudaGetDevice(&cs->device), "selecting the device");
  be->device_index = cs->device;
  if (s == VOX_OK)
    s = vox_cuda_check(be, cudaGetDeviceProperties(&cs->prop, cs->device), "reading the device");
  if (s == VOX_OK)
    s = vox_cuda_alloc(be, (void **)&cs->partials, (REDUCE_BLOCKS + 1) * sizeof(double),
                       "reduction scratch");
  if (s == VOX_OK)
    s = vox_cuda_check(be, cudaMallocHost((void **)&cs->scalar, sizeof(double)),
                       "pinned host memory");
  if (s == VOX_OK) s = vox_cpu_backend_create(ctx, NULL, &cs->host);
  if (s != VOX_OK) {
    destroy(be);
    return s;
  }
  *out = be;
  return VOX_OK;
}
