/* SPDX-License-Identifier: BSD-3-Clause */
/* The sparse (bone-only) system on the GPU (sparse_ops.h): vectors in double
 * or float, the element-by-element product over the active elements, and the
 * transfers between levels. A vector's precision is a run-time flag, the
 * same for every thread of a launch, so the branch on it costs nothing next
 * to the memory traffic.
 *
 * The product K x: one thread per element, the 24 x 24 element matrix in
 * shared memory, its results added to y with global atomics, except that an
 * element hands the 12 results of its x = 1 face to the next lane by a
 * shuffle when that lane holds its x-neighbour (the next index,
 * sparse_ops.h; on a split level, whose x = 1 corners are stored, the next
 * element whose x = 0 face is this one's x = 1 face), which adds them to its
 * own x = 0 face: about half the atomics of a plain kernel, no memory
 * (cuda/README.md has the numbers). */
#include <stdlib.h>
#include <string.h>

#include <cuda_bf16.h>

#include "cuda_backend.cuh"
#include "sparse_ops.h"

struct vox_sparse_level {
  size_t n_nodes, n_elements;
  int4 *element_nodes;
  int4 *element_nodes_x1; /* a split level's x = 1 corners (sparse_ops.h), or NULL */
  uint8_t *material;
  double *table;        /* 256 */
  float *modulus;
  double *ke;           /* 576 */
  float *ke32;          /* 576 */
  uint8_t *node_fixed;
  uint32_t *parent;
  size_t bytes;
};

static __device__ __forceinline__ void atomic_add(void *p, int single, size_t i, double v) {
  if (single == VOX_FLOAT_NODE4)
    atomicAdd((float *)p + vox_cuda_node4_index(i), (float)v);
  else if (single)
    atomicAdd((float *)p + i, (float)v);
  else
    atomicAdd((double *)p + i, v);
}

/* Adds three floats (a node's components) or six (two x-neighbours') at p:
 * on sm_90 through float2 and float4 atomics where p's alignment allows (3
 * floats in 2 operations, 6 in 2 to 4): fewer atomic operations for the
 * same bytes. The restriction, whose fine nodes of a warp mostly add into
 * the same coarse nodes, was slower with them and keeps scalar atomics. */
static __device__ __forceinline__ void red3(float *p, float a, float b, float c) {
#if __CUDA_ARCH__ >= 900
  if (((uintptr_t)p & 7) == 0) {
    atomicAdd(reinterpret_cast<float2 *>(p), make_float2(a, b));
    atomicAdd(p + 2, c);
  } else {
    atomicAdd(p, a);
    atomicAdd(reinterpret_cast<float2 *>(p + 1), make_float2(b, c));
  }
#else
  atomicAdd(p, a);
  atomicAdd(p + 1, b);
  atomicAdd(p + 2, c);
#endif
}
static __device__ __forceinline__ void red6(float *p, const float v[6]) {
#if __CUDA_ARCH__ >= 900
  switch ((uintptr_t)p >> 2 & 3) { /* p's offset in its 16 bytes, in floats */
  case 0:
    atomicAdd(reinterpret_cast<float4 *>(p), make_float4(v[0], v[1], v[2], v[3]));
    atomicAdd(reinterpret_cast<float2 *>(p + 4), make_float2(v[4], v[5]));
    break;
  case 1:
    atomicAdd(p, v[0]);
    atomicAdd(reinterpret_cast<float2 *>(p + 1), make_float2(v[1], v[2]));
    atomicAdd(reinterpret_cast<float2 *>(p + 3), make_float2(v[3], v[4]));
    atomicAdd(p + 5, v[5]);
    break;
  case 2:
    atomicAdd(reinterpret_cast<float2 *>(p), make_float2(v[0], v[1]));
    atomicAdd(reinterpret_cast<float4 *>(p + 2), make_float4(v[2], v[3], v[4], v[5]));
    break;
  default:
    atomicAdd(p, v[0]);
    atomicAdd(reinterpret_cast<float4 *>(p + 1), make_float4(v[1], v[2], v[3], v[4]));
    atomicAdd(p + 5, v[5]);
    break;
  }
#else
  for (int i = 0; i < 6; i++) atomicAdd(p + i, v[i]);
#endif
}

/* ---- vectors ---------------------------------------------------------------- */

/* Entry i of a vector of any precision, bfloat16 and half included (the
 * generic vox_cuda_ld and vox_cuda_st know float and double only). Half
 * precision rounds from double to the nearest, ties to even, as the CPU's
 * _Float16 conversion does. */
static __device__ __forceinline__ double ld_any(const void *p, int single, size_t i) {
  if (single == VOX_BF16) return __bfloat162float(((const __nv_bfloat16 *)p)[i]);
  if (single == VOX_HALF) return (double)__half2float(((const __half *)p)[i]);
  return vox_cuda_ld(p, single, i);
}
static __device__ __forceinline__ void st_any(void *p, int single, size_t i, double v) {
  if (single == VOX_BF16)
    ((__nv_bfloat16 *)p)[i] = __float2bfloat16((float)v);
  else if (single == VOX_HALF)
    ((__half *)p)[i] = __double2half(v);
  else
    vox_cuda_st(p, single, i, v);
}

static __global__ void convert_kernel(size_t n, const void *src, int ss, void *dst, int ds) {
  VOX_GRID_STRIDE(i, n) st_any(dst, ds, i, ld_any(src, ss, i));
}

vox_status vox_cuda_vec_convert(vox_backend *be, vox_vec *dst, const vox_vec *src) {
  convert_kernel<<<vox_cuda_grid(src->n), VOX_CUDA_THREADS, 0, vox_cuda_stream(be)>>>(
      src->n, src->raw, src->scalar, dst->raw, dst->scalar);
  CUDA_LAUNCHED(be, "converting a vector");
  return VOX_OK;
}

static __global__ void axpy_any_kernel(size_t n, void *y, int ys, double a, const void *x,
                                       int xs) {
  /* rounded product and sum, no fused multiply-add: the CPU's bits */
  VOX_GRID_STRIDE(i, n)
  st_any(y, ys, i, __dadd_rn(ld_any(y, ys, i), __dmul_rn(a, ld_any(x, xs, i))));
}

vox_status vox_cuda_vec_axpy_any(vox_backend *be, vox_vec *y, double a, const vox_vec *x) {
  axpy_any_kernel<<<vox_cuda_grid(y->n), VOX_CUDA_THREADS, 0, vox_cuda_stream(be)>>>(
      y->n, y->raw, y->scalar, a, x->raw, x->scalar);
  CUDA_LAUNCHED(be, "vector axpy");
  return VOX_OK;
}

static __global__ void set_kernel(size_t n, void *x, int xs, double a) {
  VOX_GRID_STRIDE(i, n) st_any(x, xs, i, a);
}

vox_status vox_cuda_vec_set_any(vox_backend *be, vox_vec *v, double a) {
  if (a == 0) {
    CUDA_TRY(
        be,
        cudaMemsetAsync(v->data, 0, vox_vec_bytes(v->n, v->scalar), vox_cuda_stream(be)),
        "clearing a vector");
    return VOX_OK;
  }
  set_kernel<<<vox_cuda_grid(v->n), VOX_CUDA_THREADS, 0, vox_cuda_stream(be)>>>(v->n, v->data,
                                                                                v->scalar, a);
  CUDA_LAUNCHED(be, "setting a vector");
  return VOX_OK;
}

static __global__ void scatter_kernel(size_t n, const size_t *index, const double *value,
                                      void *v, int vs) {
  VOX_GRID_STRIDE(i, n) st_any(v, vs, index[i], value[i]);
}

static vox_status vec_scatter(vox_backend *be, vox_vec *v, size_t n, const size_t *index,
                              const double *value) {
  if (n == 0) return VOX_OK;
  /* the indices and values side by side in one staging buffer */
  size_t *staged;
  TRY(vox_cuda_alloc(be, (void **)&staged, n * (sizeof *index + sizeof *value), "staging entries"));
  double *staged_value = (double *)(staged + n);
  vox_status s = vox_cuda_check(
      be, cudaMemcpy(staged, index, n * sizeof *index, cudaMemcpyHostToDevice),
      "uploading entries");
  if (s == VOX_OK)
    s = vox_cuda_check(be,
                       cudaMemcpy(staged_value, value, n * sizeof *value, cudaMemcpyHostToDevice),
                       "uploading entries");
  if (s == VOX_OK) {
    scatter_kernel<<<vox_cuda_grid(n), VOX_CUDA_THREADS>>>(n, staged, staged_value, v->data,
                                                           v->scalar);
    s = vox_cuda_check(be, cudaGetLastError(), "setting entries");
  }
  vox_cuda_free(staged);
  return s;
}

/* y = a x + b y */
static __global__ void axpby_kernel(size_t n, double a, const void *x, int xs, double b, void *y,
                                    int ys) {
  VOX_GRID_STRIDE(i, n)
  vox_cuda_st(y, ys, i, a * vox_cuda_ld(x, xs, i) + b * vox_cuda_ld(y, ys, i));
}

static vox_status vec_axpy(vox_backend *be, vox_vec *y, double a, const vox_vec *x) {
  axpby_kernel<<<vox_cuda_grid(y->n), VOX_CUDA_THREADS, 0, vox_cuda_stream(be)>>>(
      y->n, a, x->data, x->scalar, 1, y->data, y->scalar);
  CUDA_LAUNCHED(be, "axpy");
  return VOX_OK;
}

static vox_status vec_xpay(vox_backend *be, vox_vec *y, double a, const vox_vec *x) {
  axpby_kernel<<<vox_cuda_grid(y->n), VOX_CUDA_THREADS, 0, vox_cuda_stream(be)>>>(
      y->n, 1, x->data, x->scalar, a, y->data, y->scalar);
  CUDA_LAUNCHED(be, "xpay");
  return VOX_OK;
}

enum { DOT_BLOCKS = 1024, DOT_THREADS = 256 };

/* Per-block partial sums in a fixed grid, then one block folds them: the
 * same order of additions on every run. */
static __device__ __forceinline__ void block_partial(double v, double *partials) {
  __shared__ double warp_sums[DOT_THREADS / 32];
  v = vox_cuda_warp_sum(v);
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = v;
  __syncthreads();
  if (threadIdx.x < 32) {
    v = threadIdx.x < DOT_THREADS / 32 ? warp_sums[threadIdx.x] : 0.0;
    v = vox_cuda_warp_sum(v);
    if (threadIdx.x == 0) partials[blockIdx.x] = v;
  }
}

static __global__ void dot_partials(size_t n, const void *x, int xs, const void *y, int ys,
                                    double *partials) {
  double v = 0;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    v += vox_cuda_ld(x, xs, i) * vox_cuda_ld(y, ys, i);
  block_partial(v, partials);
}

/* u += alpha p, r -= alpha q, copy = r, and r . r's partial sums */
static __global__ void cg_update_partials(size_t n, double alpha, const void *p, int ps,
                                          const void *q, int qs, void *u, int us, void *r,
                                          int rs, void *copy, int cs, double *partials) {
  double v = 0;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    vox_cuda_st(u, us, i, vox_cuda_ld(u, us, i) + alpha * vox_cuda_ld(p, ps, i));
    double ri = vox_cuda_ld(r, rs, i) - alpha * vox_cuda_ld(q, qs, i);
    if (rs) ri = (double)(float)ri;
    vox_cuda_st(r, rs, i, ri);
    if (copy) vox_cuda_st(copy, cs, i, ri);
    v += ri * ri;
  }
  block_partial(v, partials);
}

static __global__ void dot_final(double *partials) {
  __shared__ double warp_sums[DOT_THREADS / 32];
  double v = 0;
  for (int i = threadIdx.x; i < DOT_BLOCKS; i += DOT_THREADS) v += partials[i];
  v = vox_cuda_warp_sum(v);
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = v;
  __syncthreads();
  if (threadIdx.x < 32) {
    v = threadIdx.x < DOT_THREADS / 32 ? warp_sums[threadIdx.x] : 0.0;
    v = vox_cuda_warp_sum(v);
    if (threadIdx.x == 0) partials[DOT_BLOCKS] = v;
  }
}

/* The partial sums folded and read back (the backend's reduction scratch
 * holds at least 1025 doubles). */
static vox_status fold_partials(vox_backend *be, const char *what, double *out) {
  vox_cuda_state *cs = vox_cuda(be);
  dot_final<<<1, DOT_THREADS>>>(cs->partials);
  CUDA_LAUNCHED(be, what);
  CUDA_TRY(be,
           cudaMemcpy(cs->scalar, cs->partials + DOT_BLOCKS, sizeof(double),
                      cudaMemcpyDeviceToHost),
           what);
  *out = *cs->scalar;
  return VOX_OK;
}

static vox_status vec_dot(vox_backend *be, const vox_vec *x, const vox_vec *y, double *out) {
  dot_partials<<<DOT_BLOCKS, DOT_THREADS>>>(x->n, x->data, x->scalar, y->data, y->scalar,
                                            vox_cuda(be)->partials);
  return fold_partials(be, "a dot product", out);
}

static vox_status cg_update(vox_backend *be, double alpha, const vox_vec *p, const vox_vec *q,
                            vox_vec *u, vox_vec *r, vox_vec *copy, double *rr) {
  cg_update_partials<<<DOT_BLOCKS, DOT_THREADS>>>(r->n, alpha, p->data, p->scalar, q->data,
                                                  q->scalar, u->data, u->scalar, r->data,
                                                  r->scalar, copy ? copy->data : NULL,
                                                  copy ? copy->scalar : 0, vox_cuda(be)->partials);
  return fold_partials(be, "CG's update", rr);
}

static __global__ void smoother_kernel(size_t n, const void *b, int bs, const void *ax, int as,
                                       const void *w, int ws, double alpha, double beta, void *d,
                                       int ds, void *x, int xs) {
  VOX_GRID_STRIDE(i, n) {
    const double r = vox_cuda_ld(w, ws, i) *
                     (ax ? vox_cuda_ld(b, bs, i) - vox_cuda_ld(ax, as, i) : vox_cuda_ld(b, bs, i));
    const double di = beta != 0 ? alpha * r + beta * vox_cuda_ld(d, ds, i) : alpha * r;
    vox_cuda_st(d, ds, i, di);
    vox_cuda_st(x, xs, i, vox_cuda_ld(x, xs, i) + di);
  }
}

static vox_status smoother_step(vox_backend *be, const vox_vec *b, const vox_vec *ax,
                                const vox_vec *w, double alpha, double beta, vox_vec *d,
                                vox_vec *x) {
  smoother_kernel<<<vox_cuda_grid(x->n), VOX_CUDA_THREADS, 0, vox_cuda_stream(be)>>>(
      x->n, b->data, b->scalar, ax ? ax->data : NULL, ax ? ax->scalar : 0, w->data, w->scalar,
      alpha, beta, d->data, d->scalar, x->data, x->scalar);
  CUDA_LAUNCHED(be, "a smoother step");
  return VOX_OK;
}

/* A thread a node: its three residuals times its inverse block (six
 * entries, sparse_ops.h). */
static __global__ void block_smoother_kernel(size_t nodes, const void *b, int bs, const void *ax,
                                             int as, const void *w, int ws, double alpha,
                                             double beta, void *d, int ds, void *x, int xs) {
  VOX_GRID_STRIDE(m, nodes) {
    double r[3], wm[6];
    for (int c = 0; c < 3; c++)
      r[c] = ax ? vox_cuda_ld(b, bs, 3 * m + c) - vox_cuda_ld(ax, as, 3 * m + c)
                : vox_cuda_ld(b, bs, 3 * m + c);
    if (ws == VOX_BF16) { /* 12 bytes a node: three pairs */
      const __nv_bfloat162 *w2 = (const __nv_bfloat162 *)w + 3 * m;
      for (int k = 0; k < 3; k++) {
        const float2 f = __bfloat1622float2(w2[k]);
        wm[2 * k] = f.x, wm[2 * k + 1] = f.y;
      }
    } else {
      for (int k = 0; k < 6; k++) wm[k] = vox_cuda_ld(w, ws, 6 * m + k);
    }
    for (int i = 0; i < 3; i++) {
      double z = 0;
      for (int j = 0; j < 3; j++) z += wm[vox_block_entry(i, j)] * r[j];
      const double di = beta != 0 ? alpha * z + beta * vox_cuda_ld(d, ds, 3 * m + i) : alpha * z;
      vox_cuda_st(d, ds, 3 * m + i, di);
      vox_cuda_st(x, xs, 3 * m + i, vox_cuda_ld(x, xs, 3 * m + i) + di);
    }
  }
}

/* The V-cycle's case in mixed precision: b, ax, d, x float, the blocks
 * bfloat16; a thread a node over the whole grid, float arithmetic, no
 * run-time precision flags: the step is bound by its 28 bytes a dof, and
 * the general kernel's flags cost it time. */
template <bool AX, bool AX4, bool BETA>
static __global__ void block_smoother_float_kernel(size_t nodes, const float *__restrict__ b,
                                                   const float *__restrict__ ax,
                                                   const __nv_bfloat162 *__restrict__ w,
                                                   float alpha, float beta,
                                                   float *__restrict__ d, float *__restrict__ x) {
  const size_t m = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (m >= nodes) return;
  float r[3];
  if (AX4) { /* ax in 16 bytes a node (VOX_FLOAT_NODE4) */
    const float4 a4 = reinterpret_cast<const float4 *>(ax)[m];
    r[0] = b[3 * m] - a4.x, r[1] = b[3 * m + 1] - a4.y, r[2] = b[3 * m + 2] - a4.z;
  } else {
#pragma unroll
    for (int c = 0; c < 3; c++) r[c] = AX ? b[3 * m + c] - ax[3 * m + c] : b[3 * m + c];
  }
  float wm[6];
#pragma unroll
  for (int k = 0; k < 3; k++) {
    const float2 f = __bfloat1622float2(w[3 * m + k]);
    wm[2 * k] = f.x, wm[2 * k + 1] = f.y;
  }
#pragma unroll
  for (int i = 0; i < 3; i++) {
    float z = 0;
#pragma unroll
    for (int j = 0; j < 3; j++) z = fmaf(wm[vox_block_entry(i, j)], r[j], z);
    const float di = BETA ? fmaf(alpha, z, beta * d[3 * m + i]) : alpha * z;
    d[3 * m + i] = di;
    x[3 * m + i] += di;
  }
}

/* The all-float step's instance for ax (none, plain or 16 bytes a node)
 * and for beta = 0 or not. */
template <bool AX, bool AX4>
static void launch_float_step(unsigned blocks, cudaStream_t stream, size_t nodes, const float *b,
                              const float *ax, const __nv_bfloat162 *w, float alpha, float beta,
                              float *d, float *x) {
  if (beta != 0)
    block_smoother_float_kernel<AX, AX4, true>
        <<<blocks, VOX_CUDA_THREADS, 0, stream>>>(nodes, b, ax, w, alpha, beta, d, x);
  else
    block_smoother_float_kernel<AX, AX4, false>
        <<<blocks, VOX_CUDA_THREADS, 0, stream>>>(nodes, b, ax, w, alpha, beta, d, x);
}

static vox_status block_smoother_step(vox_backend *be, const vox_vec *b, const vox_vec *ax,
                                      const vox_vec *w, double alpha, double beta, vox_vec *d,
                                      vox_vec *x) {
  const size_t nodes = x->n / 3;
  const int ax_float = !ax || ax->scalar == 1 || ax->scalar == VOX_FLOAT_NODE4;
  if (w->scalar == VOX_BF16 && b->scalar == 1 && ax_float && d->scalar == 1 &&
      x->scalar == 1) {
    const unsigned blocks = vox_cuda_blocks(nodes, VOX_CUDA_THREADS);
    if (blocks == 0) return VOX_OK;
    const float *bf = (const float *)b->data, *af = ax ? (const float *)ax->data : NULL;
    const __nv_bfloat162 *wf = (const __nv_bfloat162 *)w->data;
    float *df = (float *)d->data, *xf = (float *)x->data;
    const float a = (float)alpha, bt = (float)beta;
    cudaStream_t stream = vox_cuda_stream(be);
    if (!ax)
      launch_float_step<false, false>(blocks, stream, nodes, bf, af, wf, a, bt, df, xf);
    else if (ax->scalar == VOX_FLOAT_NODE4)
      launch_float_step<true, true>(blocks, stream, nodes, bf, af, wf, a, bt, df, xf);
    else
      launch_float_step<true, false>(blocks, stream, nodes, bf, af, wf, a, bt, df, xf);
    CUDA_LAUNCHED(be, "a block smoother step");
    return VOX_OK;
  }
  block_smoother_kernel<<<vox_cuda_grid(nodes), VOX_CUDA_THREADS, 0, vox_cuda_stream(be)>>>(
      nodes, b->data, b->scalar, ax ? ax->data : NULL, ax ? ax->scalar : 0, w->data, w->scalar,
      alpha, beta, d->data, d->scalar, x->data, x->scalar);
  CUDA_LAUNCHED(be, "a block smoother step");
  return VOX_OK;
}

/* ---- levels ------------------------------------------------------------------ */

static void level_destroy(vox_backend *be, vox_sparse_level *l) {
  if (!l) return;
  void *p[] = {l->element_nodes, l->element_nodes_x1, l->material, l->table,
               l->modulus,       l->ke,               l->ke32,     l->node_fixed,
               l->parent};
  for (size_t i = 0; i < sizeof p / sizeof p[0]; i++) vox_cuda_free(p[i]);
  free(l);
}

static vox_status upload(vox_backend *be, void **dst, const void *src, size_t bytes, size_t *total,
                         const char *what) {
  if (!src) return VOX_OK;
  TRY(vox_cuda_alloc(be, dst, bytes, what));
  *total += bytes;
  CUDA_TRY(be, cudaMemcpy(*dst, src, bytes, cudaMemcpyHostToDevice), what);
  return VOX_OK;
}

static vox_status level_create(vox_backend *be, const vox_sparse_level_desc *d,
                               vox_sparse_level **out) {
  vox_sparse_level *l = (vox_sparse_level *)calloc(1, sizeof *l);
  if (!l) return vox_error(be->ctx, VOX_ERR_NO_MEMORY, "out of memory");
  l->n_nodes = d->n_nodes;
  l->n_elements = d->n_elements;
  float ke32[576];
  for (int i = 0; i < 576; i++) ke32[i] = (float)d->ke[i];
  size_t b = 0;
  vox_status s = upload(be, (void **)&l->element_nodes, d->element_nodes,
                        d->n_elements * 4 * sizeof(int32_t), &b, "sparse elements");
  if (s == VOX_OK)
    s = upload(be, (void **)&l->element_nodes_x1, d->element_nodes_x1,
               d->n_elements * 4 * sizeof(int32_t), &b, "sparse elements");
  if (s == VOX_OK)
    s = upload(be, (void **)&l->material, d->material, d->n_elements, &b, "materials");
  if (s == VOX_OK) s = upload(be, (void **)&l->table, d->table, 256 * sizeof(double), &b, "moduli");
  if (s == VOX_OK)
    s = upload(be, (void **)&l->modulus, d->modulus, d->n_elements * sizeof(float), &b, "moduli");
  if (s == VOX_OK) s = upload(be, (void **)&l->ke, d->ke, 576 * sizeof(double), &b, "Ke");
  if (s == VOX_OK) s = upload(be, (void **)&l->ke32, ke32, 576 * sizeof(float), &b, "Ke");
  if (s == VOX_OK) s = upload(be, (void **)&l->node_fixed, d->node_fixed, d->n_nodes, &b, "fixed");
  uint32_t *parent = NULL;
  if (s == VOX_OK) s = vox_sparse_parents_narrow(be->ctx, d->parent, d->n_nodes, &parent);
  if (s == VOX_OK)
    s = upload(be, (void **)&l->parent, parent, d->n_nodes * sizeof(uint32_t), &b, "parents");
  free(parent);
  l->bytes = b;
  if (s != VOX_OK) {
    level_destroy(be, l);
    return s;
  }
  *out = l;
  return VOX_OK;
}

static size_t level_bytes(const vox_sparse_level *l) { return l->bytes; }

/* Element e's corners (sparse_ops.h: vox_sparse_corners). */
static __device__ __forceinline__ void corners(const vox_sparse_level &l, size_t e,
                                               int32_t node[8]) {
  const int4 b = l.element_nodes[e];
  const int32_t base[4] = {b.x, b.y, b.z, b.w};
  if (l.element_nodes_x1) {
    const int4 h = l.element_nodes_x1[e];
    const int32_t high[4] = {h.x, h.y, h.z, h.w};
#pragma unroll
    for (int a = 0; a < 8; a++) {
      const int yz = vox_cuda_corner(a, 1) + 2 * vox_cuda_corner(a, 2);
      node[a] = vox_cuda_corner(a, 0) ? high[yz] : base[yz];
    }
    return;
  }
#pragma unroll
  for (int a = 0; a < 8; a++)
    node[a] = base[vox_cuda_corner(a, 1) + 2 * vox_cuda_corner(a, 2)] + vox_cuda_corner(a, 0);
}

static __device__ __forceinline__ double modulus(const vox_sparse_level &l, size_t e) {
  return l.material ? l.table[l.material[e]] : (double)l.modulus[e];
}

/* An element's corner nodes, modulus and x (fixed columns zeroed unless
 * `full`), in T. */
template <class T>
static __device__ __forceinline__ void element_in(const vox_sparse_level &l, size_t e,
                                                  const void *x, int xs, int full,
                                                  int32_t node[8], T xl[24], T *m) {
  corners(l, e, node);
  *m = (T)modulus(l, e);
#pragma unroll
  for (int a = 0; a < 8; a++) {
    const uint8_t f = full ? 0 : l.node_fixed[node[a]];
#pragma unroll
    for (int c = 0; c < 3; c++)
      xl[3 * a + c] = (f >> c & 1) ? (T)0 : (T)vox_cuda_ld(x, xs, 3 * (size_t)node[a] + c);
  }
}

template <class T>
static __device__ __forceinline__ void load_ke(T *ke, const T *__restrict__ ke_global) {
  for (int i = threadIdx.x; i < 576; i += blockDim.x) ke[i] = ke_global[i];
}

/* Row r of the element matrix (in shared memory, 16-byte aligned) times
 * xl, read 16 bytes at a time: the rows' loads, shared by the whole warp,
 * are what limits the element kernels, and one 16-byte load serves four
 * floats or two doubles. */
static __device__ __forceinline__ float ke_row(const float *ke, int r, const float xl[24]) {
  const float4 *k = reinterpret_cast<const float4 *>(ke + 24 * r);
  float s = 0;
#pragma unroll
  for (int q = 0; q < 6; q++) {
    const float4 v = k[q];
    s += v.x * xl[4 * q] + v.y * xl[4 * q + 1] + v.z * xl[4 * q + 2] + v.w * xl[4 * q + 3];
  }
  return s;
}
static __device__ __forceinline__ double ke_row(const double *ke, int r, const double xl[24]) {
  const double2 *k = reinterpret_cast<const double2 *>(ke + 24 * r);
  double s = 0;
#pragma unroll
  for (int q = 0; q < 12; q++) {
    const double2 v = k[q];
    s += v.x * xl[2 * q] + v.y * xl[2 * q + 1];
  }
  return s;
}

/* y += K x over the elements, in T arithmetic; fixed columns dropped unless
 * `full`. The x = 1 face's results are handed to the next lane where it
 * holds the x-neighbour (the next element index with the next node index at
 * corner 0), which adds them to its x = 0 face before its atomics. The
 * block's threads are whole warps and all take part in the shuffles. */
template <class T>
static __global__ void product_kernel(vox_sparse_level l, const T *__restrict__ ke_global,
                                      const void *x, int xs, void *y, int ys, int full) {
  __shared__ __align__(16) T ke[576];
  load_ke(ke, ke_global);
  __syncthreads();
  const size_t e = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  const bool live = e < l.n_elements;
  const int lane = threadIdx.x % 32;
  bool from_prev, to_next;
  if (!l.element_nodes_x1) { /* the x = 1 corners are the x = 0 ones + 1 */
    const int32_t first = live ? l.element_nodes[e].x : -8;
    const int32_t prev = __shfl_up_sync(0xffffffffu, first, 1);
    const int32_t next = __shfl_down_sync(0xffffffffu, first, 1);
    from_prev = live && lane > 0 && prev + 1 == first;
    to_next = live && lane < 31 && e + 1 < l.n_elements && next == first + 1;
  } else { /* a split level: the x = 1 face of one is the x = 0 face of the next */
    const int4 x0 = live ? l.element_nodes[e] : make_int4(-8, -8, -8, -8);
    const int4 x1 = live ? l.element_nodes_x1[e] : make_int4(-9, -9, -9, -9);
    const int4 p1 = make_int4(__shfl_up_sync(0xffffffffu, x1.x, 1),
                              __shfl_up_sync(0xffffffffu, x1.y, 1),
                              __shfl_up_sync(0xffffffffu, x1.z, 1),
                              __shfl_up_sync(0xffffffffu, x1.w, 1));
    const int4 n0 = make_int4(__shfl_down_sync(0xffffffffu, x0.x, 1),
                              __shfl_down_sync(0xffffffffu, x0.y, 1),
                              __shfl_down_sync(0xffffffffu, x0.z, 1),
                              __shfl_down_sync(0xffffffffu, x0.w, 1));
    from_prev = live && lane > 0 && p1.x == x0.x && p1.y == x0.y && p1.z == x0.z && p1.w == x0.w;
    to_next = live && lane < 31 && e + 1 < l.n_elements && n0.x == x1.x && n0.y == x1.y &&
              n0.z == x1.z && n0.w == x1.w;
  }
  int32_t node[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  T xl[24], m = 0;
  if (live) {
    element_in(l, e, x, xs, full, node, xl, &m);
  } else {
#pragma unroll
    for (int c = 0; c < 24; c++) xl[c] = 0;
  }
  /* face by face (y, z), so that only a few results live at once: the
   * x = 1 corner's rows go to the next lane, the x = 0 corner's take the
   * previous lane's; the x = 1 corner is the x = 0 one's node + 1, so the
   * two nodes' six entries are adjacent */
#pragma unroll
  for (int f = 0; f < 4; f++) {
    const int left = vox_cuda_corner_index(0, f & 1, f >> 1);
    const int right = vox_cuda_corner_index(1, f & 1, f >> 1);
    T v[6];
#pragma unroll
    for (int c = 0; c < 3; c++) {
      v[3 + c] = m * ke_row(ke, 3 * right + c, xl);
      const T handed = __shfl_up_sync(0xffffffffu, v[3 + c], 1);
      v[c] = m * ke_row(ke, 3 * left + c, xl);
      if (from_prev) v[c] += handed;
    }
    if (!live) continue;
    if (ys == VOX_FLOAT_NODE4) { /* a node's three in one 16-byte atomic */
      float4 *y4 = (float4 *)y;
      atomicAdd(y4 + node[left], make_float4((float)v[0], (float)v[1], (float)v[2], 0.f));
      if (!to_next)
        atomicAdd(y4 + node[right], make_float4((float)v[3], (float)v[4], (float)v[5], 0.f));
      continue;
    }
    const size_t at = 3 * (size_t)node[left];
    if (l.element_nodes_x1) { /* the two corners' entries need not be adjacent */
      const size_t at1 = 3 * (size_t)node[right];
      if (ys) {
        red3((float *)y + at, (float)v[0], (float)v[1], (float)v[2]);
        if (!to_next) red3((float *)y + at1, (float)v[3], (float)v[4], (float)v[5]);
      } else {
#pragma unroll
        for (int c = 0; c < 3; c++) {
          atomicAdd((double *)y + at + c, (double)v[c]);
          if (!to_next) atomicAdd((double *)y + at1 + c, (double)v[3 + c]);
        }
      }
    } else if (ys) {
      float *yf = (float *)y + at;
      if (to_next) {
        red3(yf, (float)v[0], (float)v[1], (float)v[2]);
      } else {
        const float w[6] = {(float)v[0], (float)v[1], (float)v[2],
                            (float)v[3], (float)v[4], (float)v[5]};
        red6(yf, w);
      }
    } else {
      double *yd = (double *)y + at;
#pragma unroll
      for (int c = 0; c < 6; c++)
        if (c < 3 || !to_next) atomicAdd(yd + c, (double)v[c]);
    }
  }
}

/* y_c = x_c on the fixed dofs */
static __global__ void fixed_rows_kernel(size_t n, const uint8_t *fixed, const void *x, int xs,
                                         void *y, int ys) {
  VOX_GRID_STRIDE(m, n) {
    const uint8_t f = fixed[m];
    if (!f) continue;
    for (int c = 0; c < 3; c++)
      if (f >> c & 1) vox_cuda_st(y, ys, 3 * m + c, vox_cuda_ld(x, xs, 3 * m + c));
  }
}

enum { PRODUCT_THREADS = 128 };

template <class T>
static void launch_product(const vox_sparse_level *l, const T *ke, const vox_vec *x, vox_vec *y,
                           int full, cudaStream_t stream) {
  const unsigned blocks = vox_cuda_blocks(l->n_elements, PRODUCT_THREADS);
  if (blocks == 0) return;
  product_kernel<T><<<blocks, PRODUCT_THREADS, 0, stream>>>(*l, ke, x->data, x->scalar, y->data,
                                                            y->scalar, full);
}

static vox_status apply(vox_backend *be, vox_sparse_level *l, const vox_vec *x, vox_vec *y,
                        int flags) {
  const int full = flags & VOX_APPLY_FULL;
  cudaStream_t stream = vox_cuda_stream(be);
  CUDA_TRY(be,
           cudaMemsetAsync(y->data, 0, vox_vec_bytes(y->n, y->scalar), stream),
           "clearing a product");
  if (flags & VOX_APPLY_SINGLE)
    launch_product<float>(l, l->ke32, x, y, full, stream);
  else
    launch_product<double>(l, l->ke, x, y, full, stream);
  CUDA_LAUNCHED(be, "the sparse K u");
  if (!full) {
    fixed_rows_kernel<<<vox_cuda_grid(l->n_nodes), VOX_CUDA_THREADS, 0, stream>>>(
        l->n_nodes, l->node_fixed, x->data, x->scalar, y->data, y->scalar);
    CUDA_LAUNCHED(be, "the fixed rows");
  }
  return VOX_OK;
}

static __global__ void diagonal_kernel(vox_sparse_level l, void *d, int ds) {
  VOX_GRID_STRIDE(e, l.n_elements) {
    int32_t node[8];
    corners(l, e, node);
    const double m = modulus(l, e);
    for (int r = 0; r < 24; r++)
      atomic_add(d, ds, 3 * (size_t)node[r / 3] + r % 3, m * l.ke[r * 25]);
  }
}

static __global__ void invert_kernel(size_t n, const uint8_t *fixed, void *d, int ds) {
  VOX_GRID_STRIDE(m, n) {
    for (int c = 0; c < 3; c++) {
      const double v = vox_cuda_ld(d, ds, 3 * m + c);
      vox_cuda_st(d, ds, 3 * m + c, (fixed[m] >> c & 1) ? 0.0 : v <= 0 ? 1.0 : 1.0 / v);
    }
  }
}

static vox_status inv_diagonal(vox_backend *be, vox_sparse_level *l, vox_vec *d) {
  TRY(vox_cuda_vec_set_any(be, d, 0));
  diagonal_kernel<<<vox_cuda_grid(l->n_elements), VOX_CUDA_THREADS>>>(*l, d->data, d->scalar);
  invert_kernel<<<vox_cuda_grid(l->n_nodes), VOX_CUDA_THREADS>>>(l->n_nodes, l->node_fixed,
                                                                  d->data, d->scalar);
  CUDA_LAUNCHED(be, "the sparse diagonal");
  return VOX_OK;
}

/* Each element's 3 x 3 node blocks of m K added to w's six entries a node
 * (atomics, in w's precision, as the diagonal's). */
static __global__ void block_diagonal_kernel(vox_sparse_level l, void *w, int ws) {
  VOX_GRID_STRIDE(e, l.n_elements) {
    int32_t node[8];
    corners(l, e, node);
    const double m = modulus(l, e);
    for (int a = 0; a < 8; a++)
      for (int i = 0; i < 3; i++)
        for (int j = i; j < 3; j++)
          atomic_add(w, ws, 6 * (size_t)node[a] + vox_block_entry(i, j),
                     m * l.ke[(3 * a + i) * 24 + 3 * a + j]);
  }
}

static __global__ void invert_blocks_kernel(size_t n, const uint8_t *fixed, const void *sum,
                                            int ss, void *w, int ws) {
  VOX_GRID_STRIDE(m, n) {
    double in[6], out[6];
    for (int k = 0; k < 6; k++) in[k] = vox_cuda_ld(sum, ss, 6 * m + k);
    vox_block_invert(in, fixed[m], out);
    for (int k = 0; k < 6; k++) st_any(w, ws, 6 * m + k, out[k]);
  }
}

static vox_status inv_block_diagonal(vox_backend *be, vox_sparse_level *l, vox_vec *w,
                                     vox_vec *scratch) {
  vox_vec sum;
  TRY(vox_block_sums(be->ctx, w, scratch, &sum));
  TRY(vox_cuda_vec_set_any(be, &sum, 0));
  block_diagonal_kernel<<<vox_cuda_grid(l->n_elements), VOX_CUDA_THREADS>>>(*l, sum.data,
                                                                           sum.scalar);
  invert_blocks_kernel<<<vox_cuda_grid(l->n_nodes), VOX_CUDA_THREADS>>>(
      l->n_nodes, l->node_fixed, sum.data, sum.scalar, w->data, w->scalar);
  CUDA_LAUNCHED(be, "the sparse diagonal blocks");
  return VOX_OK;
}

static __global__ void zero_fixed_kernel(size_t n, const uint8_t *fixed, void *v, int vs) {
  VOX_GRID_STRIDE(m, n) {
    const uint8_t f = fixed[m];
    if (!f) continue;
    for (int c = 0; c < 3; c++)
      if (f >> c & 1) vox_cuda_st(v, vs, 3 * m + c, 0);
  }
}

static vox_status zero_fixed(vox_backend *be, vox_sparse_level *l, vox_vec *v) {
  zero_fixed_kernel<<<vox_cuda_grid(l->n_nodes), VOX_CUDA_THREADS, 0, vox_cuda_stream(be)>>>(
      l->n_nodes, l->node_fixed, v->data, v->scalar);
  CUDA_LAUNCHED(be, "zeroing fixed dofs");
  return VOX_OK;
}

/* The weight of coarse corner (x, y, z) for a fine node at position `pos`
 * (sparse_ops.h): per axis 1 on the coinciding node, 1/2 on both when
 * halfway, else 0. */
static __device__ __forceinline__ double weight(uint32_t pos, int x, int y, int z) {
  const int p[3] = {(int)(pos % 3), (int)(pos / 3 % 3), (int)(pos / 9)};
  const int o[3] = {x, y, z};
  double w = 1;
#pragma unroll
  for (int a = 0; a < 3; a++) w *= p[a] == 1 ? 0.5 : (p[a] == 2 * o[a] ? 1.0 : 0.0);
  return w;
}

/* coarse = P^T Z (b - ax), or P^T Z ax without b. A thread a fine node, a
 * warp 32 consecutive ones: mostly a run along x, where three fine nodes
 * add into each coarse node (positions 1 and 0 of two parents' x-line).
 * Before the atomics, a node at position 0 takes the position-1 node's
 * share of the same parent from the next lane and the previous parent's
 * position-1 share from the lane before when that coarse node is the same
 * copy: one atomic where there were three in a full run. Each share is
 * added once, whichever lane adds it, so the sum is the plain kernel's up
 * to rounding. It also saves the residual's own pass over the fine
 * vectors; runs along x are short in trabeculae, so the saving there is
 * less than the full run's two thirds. */
static __global__ void restrict_kernel(vox_sparse_level f, vox_sparse_level c, const void *b,
                                       int bs, const void *ax, int as, void *rc, int rcs) {
  const unsigned lane = threadIdx.x % 32;
  const size_t warp_first = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) - lane;
  for (size_t base = warp_first; base < f.n_nodes; base += (size_t)gridDim.x * blockDim.x) {
    const size_t m = base + lane;
    const bool active = m < f.n_nodes;
    uint32_t word = 0xffffffffu;
    double v[3] = {0, 0, 0};
    int32_t t0[4] = {-1, -1, -1, -1}, t1[4] = {-1, -1, -1, -1};
    double a0[4][3], a1[4][3];
    int px = 3;
    if (active) {
      word = f.parent[m];
      const uint32_t pos = word & ((1u << VOX_SPARSE_POS_BITS) - 1);
      int32_t cn[8];
      corners(c, word >> VOX_SPARSE_POS_BITS, cn);
      const uint8_t fx = f.node_fixed[m];
      for (int k = 0; k < 3; k++) {
        const double r = b ? vox_cuda_ld(b, bs, 3 * m + k) - vox_cuda_ld(ax, as, 3 * m + k)
                           : vox_cuda_ld(ax, as, 3 * m + k);
        v[k] = (fx >> k & 1) ? 0.0 : r;
      }
      px = (int)(pos % 3);
      const int py = (int)(pos / 3 % 3), pz = (int)(pos / 9);
#pragma unroll
      for (int j = 0; j < 4; j++) {
        const int cy = j & 1, cz = j >> 1;
        t0[j] = cn[vox_cuda_corner_index(0, cy, cz)];
        t1[j] = cn[vox_cuda_corner_index(1, cy, cz)];
      }
#pragma unroll
      for (int j = 0; j < 4; j++) {
        const int cy = j & 1, cz = j >> 1;
        const double wyz = (py == 1 ? 0.5 : py == 2 * cy ? 1.0 : 0.0) *
                           (pz == 1 ? 0.5 : pz == 2 * cz ? 1.0 : 0.0);
        const double w0 = wyz * (px == 1 ? 0.5 : px == 0 ? 1.0 : 0.0);
        const double w1 = wyz * (px == 1 ? 0.5 : px == 2 ? 1.0 : 0.0);
        for (int k = 0; k < 3; k++) a0[j][k] = w0 * v[k], a1[j][k] = w1 * v[k];
      }
    } else {
      for (int j = 0; j < 4; j++)
        for (int k = 0; k < 3; k++) a0[j][k] = a1[j][k] = 0;
    }
    /* the next lane's position-1 node of the same parent and x-line gives
     * this position-0 node its corner-0 shares */
    const uint32_t next_word = __shfl_down_sync(0xffffffffu, word, 1);
    const uint32_t prev_word = __shfl_up_sync(0xffffffffu, word, 1);
    const bool take_next = lane < 31 && active && px == 0 && next_word == word + 1;
    const bool give_prev = lane > 0 && px == 1 && active && prev_word + 1 == word;
    /* the previous lane's position-1 node of the parent before gives its
     * corner-1 shares where that corner is this node's corner 0 */
    const int prev_px = __shfl_up_sync(0xffffffffu, px, 1);
    const int next_px = __shfl_down_sync(0xffffffffu, px, 1);
#pragma unroll
    for (int j = 0; j < 4; j++) {
      const int32_t prev_t1 = __shfl_up_sync(0xffffffffu, t1[j], 1);
      const int32_t next_t0 = __shfl_down_sync(0xffffffffu, t0[j], 1);
      const bool take_prev = lane > 0 && px == 0 && prev_px == 1 && prev_t1 == t0[j] && active;
      const bool give_next = lane < 31 && px == 1 && next_px == 0 && next_t0 == t1[j] && active;
#pragma unroll
      for (int k = 0; k < 3; k++) {
        const double from_next = __shfl_down_sync(0xffffffffu, a0[j][k], 1);
        const double from_prev = __shfl_up_sync(0xffffffffu, a1[j][k], 1);
        if (take_next) a0[j][k] += from_next;
        if (take_prev) a0[j][k] += from_prev;
      }
      if (give_prev)
        for (int k = 0; k < 3; k++) a0[j][k] = 0;
      if (give_next)
        for (int k = 0; k < 3; k++) a1[j][k] = 0;
    }
    if (!active) continue;
#pragma unroll
    for (int j = 0; j < 4; j++)
      for (int k = 0; k < 3; k++) {
        if (a0[j][k] != 0) atomic_add(rc, rcs, 3 * (size_t)t0[j] + k, a0[j][k]);
        if (a1[j][k] != 0) atomic_add(rc, rcs, 3 * (size_t)t1[j] + k, a1[j][k]);
      }
  }
}

static vox_status restrict_residual(vox_backend *be, vox_sparse_level *f, vox_sparse_level *c,
                                    const vox_vec *b, const vox_vec *ax, vox_vec *rc) {
  TRY(vox_cuda_vec_set_any(be, rc, 0));
  restrict_kernel<<<vox_cuda_grid(f->n_nodes), VOX_CUDA_THREADS, 0, vox_cuda_stream(be)>>>(
      *f, *c, b ? b->data : NULL, b ? b->scalar : 0, ax->data, ax->scalar, rc->data, rc->scalar);
  CUDA_LAUNCHED(be, "the sparse restriction");
  return VOX_OK;
}

static __global__ void prolong_kernel(vox_sparse_level f, vox_sparse_level c, const void *xc,
                                      int xcs, void *xf, int xfs) {
  VOX_GRID_STRIDE(m, f.n_nodes) {
    const uint32_t word = f.parent[m];
    const uint32_t pos = word & ((1u << VOX_SPARSE_POS_BITS) - 1);
    int32_t cn[8];
    corners(c, word >> VOX_SPARSE_POS_BITS, cn);
    double s[3] = {0, 0, 0};
    for (int a = 0; a < 8; a++) {
      const double w = weight(pos, vox_cuda_corner(a, 0), vox_cuda_corner(a, 1),
                              vox_cuda_corner(a, 2));
      if (w == 0) continue;
      for (int k = 0; k < 3; k++) s[k] += w * vox_cuda_ld(xc, xcs, 3 * (size_t)cn[a] + k);
    }
    const uint8_t fx = f.node_fixed[m];
    for (int k = 0; k < 3; k++)
      if (!(fx >> k & 1)) vox_cuda_st(xf, xfs, 3 * m + k, vox_cuda_ld(xf, xfs, 3 * m + k) + s[k]);
  }
}

static vox_status prolong_add(vox_backend *be, vox_sparse_level *f, vox_sparse_level *c,
                              const vox_vec *xc, vox_vec *xf) {
  prolong_kernel<<<vox_cuda_grid(f->n_nodes), VOX_CUDA_THREADS, 0, vox_cuda_stream(be)>>>(
      *f, *c, xc->data, xc->scalar, xf->data, xf->scalar);
  CUDA_LAUNCHED(be, "the sparse prolongation");
  return VOX_OK;
}

/* ---- recordings ------------------------------------------------------------ */

/* A recording is a CUDA graph: the ops between record_begin and record_end
 * launch onto a stream in capture mode (launch_stream), which runs nothing
 * and records the kernels; replays launch the whole graph at once into the
 * legacy stream. Thread-local capture: another thread's CUDA calls (a
 * writer's, a warm-up's) neither join nor break it. */
static vox_status record_begin(vox_backend *be) {
  vox_cuda_state *cs = vox_cuda(be);
  if (!cs->record_stream)
    CUDA_TRY(be, cudaStreamCreateWithFlags(&cs->record_stream, cudaStreamNonBlocking),
             "creating the recording stream");
  CUDA_TRY(be, cudaStreamBeginCapture(cs->record_stream, cudaStreamCaptureModeThreadLocal),
           "starting a recording");
  cs->launch_stream = cs->record_stream;
  return VOX_OK;
}

static vox_status record_end(vox_backend *be, void **recording) {
  vox_cuda_state *cs = vox_cuda(be);
  *recording = NULL;
  cs->launch_stream = 0;
  cudaGraph_t graph = NULL;
  CUDA_TRY(be, cudaStreamEndCapture(cs->record_stream, &graph), "ending a recording");
  cudaGraphExec_t exec = NULL;
  const cudaError_t e = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  CUDA_TRY(be, e, "instantiating a recording");
  *recording = exec;
  return VOX_OK;
}

static vox_status replay(vox_backend *be, void *recording) {
  CUDA_TRY(be, cudaGraphLaunch((cudaGraphExec_t)recording, 0), "replaying a recording");
  return VOX_OK;
}

static void recording_free(vox_backend *be, void *recording) {
  (void)be;
  if (recording) cudaGraphExecDestroy((cudaGraphExec_t)recording);
}

static vox_sparse_ops make_ops(void) {
  vox_sparse_ops o = {};
  o.node4 = 1;
  o.views = 1;
  o.vec_scatter = vec_scatter;
  o.vec_axpy = vec_axpy;
  o.vec_xpay = vec_xpay;
  o.vec_dot = vec_dot;
  o.cg_update = cg_update;
  o.smoother_step = smoother_step;
  o.block_smoother_step = block_smoother_step;
  o.level_create = level_create;
  o.level_destroy = level_destroy;
  o.level_bytes = level_bytes;
  o.apply = apply;
  o.inv_diagonal = inv_diagonal;
  o.inv_block_diagonal = inv_block_diagonal;
  o.zero_fixed = zero_fixed;
  o.restrict_residual = restrict_residual;
  o.prolong_add = prolong_add;
  o.record_begin = record_begin;
  o.record_end = record_end;
  o.replay = replay;
  o.recording_free = recording_free;
  o.matrix_create = vox_cuda_matrix_create; /* cuda_sparse_matrix.cu */
  o.matrix_destroy = vox_cuda_matrix_destroy;
  o.matrix_bytes = vox_cuda_matrix_bytes;
  o.matrix_apply = vox_cuda_matrix_apply;
  o.matrix_smoother_step = vox_cuda_matrix_smoother_step;
  return o;
}

extern "C" const vox_sparse_ops vox_cuda_sparse_ops = make_ops();
