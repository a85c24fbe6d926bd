/* The sparse (bone-only) system on the GPU (sparse_ops.h): vectors in double
 * or float, the element-by-element product over the active elements, and the
 * transfers between levels. A vector's precision is a run-time flag, the
 * same for every thread of a launch, so the branch on it costs nothing next
 * to the memory traffic.
 *
 * The product K x has three kernels, chosen per level when it is created
 * (VOXFE_SPARSE_PRODUCT=atomic|warp|brick overrides the default, warp, for
 * benchmarks and tests; cuda/README.md has the numbers):
 *  - atomic: one thread per element, the 24 x 24 element matrix in shared
 *    memory, its 24 results added to y with global atomics;
 *  - warp: the same, but an element hands the 12 results of its x = 1 face
 *    to the next lane by a shuffle when that lane holds its x-neighbour (the
 *    next index, sparse_ops.h), which adds them to its own x = 0 face: about
 *    half the atomics, no memory;
 *  - brick: level 0's elements regrouped on the device by 8 x 8 x 8 bricks
 *    of the box (box order inside a brick, 2 bytes per element and 4 per
 *    brick more), a thread block per brick that stages the brick's x in
 *    shared memory and sums node by node (product_brick_kernel). The coarse
 *    levels keep box order (the finer level's parent words name their
 *    elements) and take the warp kernel.  */
#include <stdlib.h>
#include <string.h>

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_select.cuh>

#include "cuda_backend.cuh"
#include "sparse_ops.h"

enum product_kind { PRODUCT_ATOMIC, PRODUCT_WARP, PRODUCT_BRICK };
/* What VOXFE_SPARSE_PRODUCT does not choose. */
enum { PRODUCT_DEFAULT = PRODUCT_WARP };
/* The brick's side in elements, its nodes (slots) and elements. */
enum {
  BRICK = 8,
  BRICK_SIDE = BRICK + 1,
  BRICK_SLOTS = BRICK_SIDE * BRICK_SIDE * BRICK_SIDE,
  BRICK_ELEMENTS = BRICK * BRICK * BRICK
};

struct vox_sparse_level {
  size_t n_nodes, n_elements;
  int4 *element_nodes;
  uint8_t *material;
  double *table;        /* 256 */
  float *modulus;
  double *ke;           /* 576 */
  float *ke32;          /* 576 */
  uint8_t *node_fixed;
  uint32_t *parent;
  int product;            /* product_kind */
  uint32_t n_bricks;      /* PRODUCT_BRICK: the bricks that hold elements */
  uint32_t *brick_start;  /* n_bricks + 1: brick b's elements [start[b], start[b+1]) */
  uint16_t *element_slot; /* per element: slot of its corner (0,0,0) in its brick */
  size_t bytes;
};

static __device__ __forceinline__ double ld(const void *p, int single, size_t i) {
  return single ? (double)((const float *)p)[i] : ((const double *)p)[i];
}
static __device__ __forceinline__ void st(void *p, int single, size_t i, double v) {
  if (single)
    ((float *)p)[i] = (float)v;
  else
    ((double *)p)[i] = v;
}
static __device__ __forceinline__ void atomic_add(void *p, int single, size_t i, double v) {
  if (single)
    atomicAdd((float *)p + i, (float)v);
  else
    atomicAdd((double *)p + i, v);
}

/* Adds three floats (a node's components) or six (two x-neighbours') at p:
 * on sm_90 through float2 and float4 atomics where p's alignment allows (3
 * floats in 2 operations, 6 in 2 to 4). Measured on the H100 at 550^3: the
 * warp product into floats 2.86 -> 2.77 ms; the restriction, whose fine
 * nodes of a warp mostly add into the same coarse nodes, went 2.32 -> 2.65
 * ms with them and keeps scalar atomics (docs/benchmarks.md). */
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

static vox_status vec_create(vox_backend *be, size_t n, int single, vox_svec *v) {
  const size_t bytes = (n ? n : 1) * (single ? sizeof(float) : sizeof(double));
  TRY(vox_cuda_alloc(be, &v->data, bytes, "a sparse vector"));
  v->n = n;
  v->single = single;
  CUDA_TRY(be, cudaMemset(v->data, 0, bytes), "clearing a vector");
  return VOX_OK;
}

static void vec_destroy(vox_backend *be, vox_svec *v) {
  vox_cuda_free(v->data);
  v->data = NULL;
  v->n = 0;
}

static __global__ void convert_kernel(size_t n, const double *src, void *dst, int single) {
  VOX_GRID_STRIDE(i, n) st(dst, single, i, src[i]);
}
static __global__ void widen_kernel(size_t n, const void *src, int single, double *dst) {
  VOX_GRID_STRIDE(i, n) dst[i] = ld(src, single, i);
}

/* Host doubles through a device staging buffer when the vector is float. */
static vox_status vec_upload(vox_backend *be, vox_svec *v, const double *host) {
  if (!v->single) {
    CUDA_TRY(be, cudaMemcpy(v->data, host, v->n * sizeof(double), cudaMemcpyHostToDevice),
             "uploading a vector");
    return VOX_OK;
  }
  double *tmp;
  TRY(vox_cuda_alloc(be, (void **)&tmp, v->n * sizeof(double), "staging a vector"));
  vox_status s = vox_cuda_check(be, cudaMemcpy(tmp, host, v->n * sizeof(double), cudaMemcpyHostToDevice),
                                "uploading a vector");
  if (s == VOX_OK) {
    convert_kernel<<<vox_cuda_grid(v->n), VOX_CUDA_THREADS>>>(v->n, tmp, v->data, 1);
    s = vox_cuda_check(be, cudaGetLastError(), "converting a vector");
  }
  vox_cuda_free(tmp);
  return s;
}

static vox_status vec_download(vox_backend *be, const vox_svec *v, double *host) {
  if (!v->single) {
    CUDA_TRY(be, cudaMemcpy(host, v->data, v->n * sizeof(double), cudaMemcpyDeviceToHost),
             "downloading a vector");
    return VOX_OK;
  }
  double *tmp;
  TRY(vox_cuda_alloc(be, (void **)&tmp, v->n * sizeof(double), "staging a vector"));
  widen_kernel<<<vox_cuda_grid(v->n), VOX_CUDA_THREADS>>>(v->n, v->data, 1, tmp);
  vox_status s = vox_cuda_check(be, cudaGetLastError(), "converting a vector");
  if (s == VOX_OK)
    s = vox_cuda_check(be, cudaMemcpy(host, tmp, v->n * sizeof(double), cudaMemcpyDeviceToHost),
                       "downloading a vector");
  vox_cuda_free(tmp);
  return s;
}

static __global__ void set_kernel(size_t n, void *x, int xs, double a) {
  VOX_GRID_STRIDE(i, n) st(x, xs, i, a);
}

static vox_status vec_set(vox_backend *be, vox_svec *v, double a) {
  if (a == 0) {
    CUDA_TRY(be, cudaMemsetAsync(v->data, 0, v->n * (v->single ? sizeof(float) : sizeof(double))),
             "clearing a vector");
    return VOX_OK;
  }
  set_kernel<<<vox_cuda_grid(v->n), VOX_CUDA_THREADS>>>(v->n, v->data, v->single, a);
  CUDA_LAUNCHED(be, "setting a vector");
  return VOX_OK;
}

/* y = a x + b y */
static __global__ void axpby_kernel(size_t n, double a, const void *x, int xs, double b, void *y,
                                    int ys) {
  VOX_GRID_STRIDE(i, n) st(y, ys, i, a * ld(x, xs, i) + b * ld(y, ys, i));
}

static vox_status vec_axpy(vox_backend *be, vox_svec *y, double a, const vox_svec *x) {
  axpby_kernel<<<vox_cuda_grid(y->n), VOX_CUDA_THREADS>>>(y->n, a, x->data, x->single, 1, y->data,
                                                          y->single);
  CUDA_LAUNCHED(be, "axpy");
  return VOX_OK;
}

static vox_status vec_xpay(vox_backend *be, vox_svec *y, double a, const vox_svec *x) {
  axpby_kernel<<<vox_cuda_grid(y->n), VOX_CUDA_THREADS>>>(y->n, 1, x->data, x->single, a, y->data,
                                                          y->single);
  CUDA_LAUNCHED(be, "xpay");
  return VOX_OK;
}

enum { DOT_BLOCKS = 1024, DOT_THREADS = 256 };

/* Per-block partial sums in a fixed grid, then one block folds them: the
 * same order of additions on every run. */
static __global__ void dot_partials(size_t n, const void *x, int xs, const void *y, int ys,
                                    double *partials) {
  __shared__ double warp_sums[DOT_THREADS / 32];
  double v = 0;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    v += ld(x, xs, i) * ld(y, ys, i);
  v = vox_cuda_warp_sum(v);
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = v;
  __syncthreads();
  if (threadIdx.x < 32) {
    v = threadIdx.x < DOT_THREADS / 32 ? warp_sums[threadIdx.x] : 0.0;
    v = vox_cuda_warp_sum(v);
    if (threadIdx.x == 0) partials[blockIdx.x] = v;
  }
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

static vox_status vec_dot(vox_backend *be, const vox_svec *x, const vox_svec *y, double *out) {
  vox_cuda_state *cs = vox_cuda(be);
  /* the backend's reduction scratch holds at least 1025 doubles */
  dot_partials<<<DOT_BLOCKS, DOT_THREADS>>>(x->n, x->data, x->single, y->data, y->single,
                                            cs->partials);
  dot_final<<<1, DOT_THREADS>>>(cs->partials);
  CUDA_LAUNCHED(be, "a dot product");
  CUDA_TRY(be,
           cudaMemcpy(cs->scalar, cs->partials + DOT_BLOCKS, sizeof(double),
                      cudaMemcpyDeviceToHost),
           "reading a dot product");
  *out = *cs->scalar;
  return VOX_OK;
}

static __global__ void smoother_kernel(size_t n, const void *b, int bs, const void *ax, int as,
                                       const void *w, int ws, double alpha, double beta, void *d,
                                       int ds, void *x, int xs) {
  VOX_GRID_STRIDE(i, n) {
    const double r = ld(w, ws, i) * (ax ? ld(b, bs, i) - ld(ax, as, i) : ld(b, bs, i));
    const double di = beta != 0 ? alpha * r + beta * ld(d, ds, i) : alpha * r;
    st(d, ds, i, di);
    st(x, xs, i, ld(x, xs, i) + di);
  }
}

static vox_status smoother_step(vox_backend *be, const vox_svec *b, const vox_svec *ax,
                                const vox_svec *w, double alpha, double beta, vox_svec *d,
                                vox_svec *x) {
  smoother_kernel<<<vox_cuda_grid(x->n), VOX_CUDA_THREADS>>>(
      x->n, b->data, b->single, ax ? ax->data : NULL, ax ? ax->single : 0, w->data, w->single,
      alpha, beta, d->data, d->single, x->data, x->single);
  CUDA_LAUNCHED(be, "a smoother step");
  return VOX_OK;
}

/* ---- levels ------------------------------------------------------------------ */

static void level_destroy(vox_backend *be, vox_sparse_level *l) {
  if (!l) return;
  void *p[] = {l->element_nodes, l->material,   l->table,       l->modulus,     l->ke,
               l->ke32,          l->node_fixed, l->parent,     l->brick_start, l->element_slot};
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

/* Bricks along the box's axes, and their count (0 when it passes 32 bits). */
static uint32_t brick_count(const vox_sparse_level_desc *d, uint32_t nb[3]) {
  const int64_t side[3] = {d->nx, d->ny, d->nz};
  uint64_t count = 1;
  for (int a = 0; a < 3; a++) {
    nb[a] = (uint32_t)((side[a] + BRICK - 1) / BRICK);
    count *= nb[a];
  }
  return count < UINT32_MAX ? (uint32_t)count : 0;
}

/* The product kernel a level takes: the brick kernel on level 0 (the one
 * with per-element materials, which no parent word names) where chosen,
 * the warp kernel where the brick one is chosen elsewhere. */
static vox_status product_kind_of(vox_context *ctx, const vox_sparse_level_desc *d, int *kind) {
  const char *v = getenv("VOXFE_SPARSE_PRODUCT");
  int k = PRODUCT_DEFAULT;
  if (v && *v) {
    if (strcmp(v, "atomic") == 0)
      k = PRODUCT_ATOMIC;
    else if (strcmp(v, "warp") == 0)
      k = PRODUCT_WARP;
    else if (strcmp(v, "brick") == 0)
      k = PRODUCT_BRICK;
    else if (ctx)
      return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                       "VOXFE_SPARSE_PRODUCT=%s: expected atomic, warp or brick", v);
  }
  uint32_t nb[3];
  const int brickable = d->material && d->element_box && d->n_elements > 0 &&
                        d->n_elements <= INT32_MAX && d->nx > 0 && d->ny > 0 &&
                        brick_count(d, nb) > 0;
  if (k == PRODUCT_BRICK && !brickable) k = PRODUCT_WARP;
  *kind = k;
  return VOX_OK;
}

static void level_extra_bytes(const vox_sparse_level_desc *d, size_t *kept, size_t *peak) {
  int kind = PRODUCT_DEFAULT;
  product_kind_of(NULL, d, &kind);
  *kept = *peak = 0;
  if (kind != PRODUCT_BRICK) return;
  const size_t n = d->n_elements;
  *kept = n * sizeof(uint16_t) + (n + 1) * sizeof(uint32_t);
  /* build_bricks' scratch: the box indices, two key and two order arrays,
   * the regrouped elements and materials, head flags, CUB's temporary */
  *peak = n * (sizeof(int64_t) + 4 * sizeof(uint32_t) + 4 * sizeof(int32_t) + 2) + n * 4 +
          ((size_t)64 << 20);
}

static __global__ void brick_key_kernel(size_t n, const int64_t *box, int64_t nx, int64_t ny,
                                        uint32_t nbx, uint32_t nby, uint32_t *key,
                                        uint32_t *order) {
  VOX_GRID_STRIDE(e, n) {
    const int64_t b = box[e];
    const int64_t i = b % nx, j = b / nx % ny, k = b / (nx * ny);
    key[e] = (uint32_t)(((k / BRICK) * nby + j / BRICK) * nbx + i / BRICK);
    order[e] = (uint32_t)e;
  }
}

/* Element t of the regrouped level is element order[t] of box order. */
static __global__ void brick_gather_kernel(size_t n, const uint32_t *order, const uint32_t *key,
                                           const int64_t *box, int64_t nx, int64_t ny,
                                           const int4 *nodes_in, const uint8_t *material_in,
                                           int4 *nodes_out, uint8_t *material_out,
                                           uint16_t *slot, uint8_t *head, uint32_t *iota) {
  VOX_GRID_STRIDE(t, n) {
    const uint32_t e = order[t];
    nodes_out[t] = nodes_in[e];
    material_out[t] = material_in[e];
    const int64_t b = box[e];
    const int64_t i = b % nx, j = b / nx % ny, k = b / (nx * ny);
    slot[t] = (uint16_t)(i % BRICK + BRICK_SIDE * (j % BRICK + BRICK_SIDE * (k % BRICK)));
    head[t] = t == 0 || key[t] != key[t - 1];
    iota[t] = (uint32_t)t;
  }
}

/* Regroups level 0's elements by brick (the brick product's layout): keys
 * and a stable radix sort on the device, the elements and materials
 * gathered, the first element of each brick selected by CUB. */
static vox_status build_bricks(vox_backend *be, vox_sparse_level *l,
                               const vox_sparse_level_desc *d) {
  const size_t n = d->n_elements;
  uint32_t nb[3];
  const uint32_t n_keys = brick_count(d, nb);
  int end_bit = 1;
  while (end_bit < 32 && ((uint64_t)1 << end_bit) < n_keys) end_bit++;
  int64_t *box = NULL;
  uint32_t *buf[4] = {NULL, NULL, NULL, NULL};
  int4 *nodes = NULL;
  uint8_t *material = NULL, *head = NULL;
  void *temp = NULL;
  int *count_d = NULL;
  size_t temp_bytes = 0, select_bytes = 0;
  vox_status s = vox_cuda_alloc(be, (void **)&box, n * sizeof *box, "brick scratch");
  for (int i = 0; i < 4 && s == VOX_OK; i++)
    s = vox_cuda_alloc(be, (void **)&buf[i], (n + 1) * sizeof(uint32_t), "brick scratch");
  if (s == VOX_OK) s = vox_cuda_alloc(be, (void **)&nodes, n * sizeof *nodes, "bricked elements");
  if (s == VOX_OK) s = vox_cuda_alloc(be, (void **)&material, n, "bricked materials");
  if (s == VOX_OK) s = vox_cuda_alloc(be, (void **)&head, n, "brick scratch");
  if (s == VOX_OK)
    s = vox_cuda_alloc(be, (void **)&l->element_slot, n * sizeof(uint16_t), "element slots");
  if (s == VOX_OK) s = vox_cuda_alloc(be, (void **)&count_d, sizeof(int), "brick count");
  if (s == VOX_OK)
    s = vox_cuda_check(be, cudaMemcpy(box, d->element_box, n * sizeof *box, cudaMemcpyHostToDevice),
                       "uploading element positions");
  cub::DoubleBuffer<uint32_t> keys(buf[0], buf[1]), order(buf[2], buf[3]);
  if (s == VOX_OK) {
    brick_key_kernel<<<vox_cuda_grid(n), VOX_CUDA_THREADS>>>(n, box, d->nx, d->ny, nb[0], nb[1],
                                                             buf[0], buf[2]);
    s = vox_cuda_check(be, cudaGetLastError(), "brick keys");
  }
  if (s == VOX_OK)
    s = vox_cuda_check(be, cub::DeviceRadixSort::SortPairs(NULL, temp_bytes, keys, order, (int)n, 0,
                                                          end_bit),
                       "sizing the brick sort");
  if (s == VOX_OK)
    s = vox_cuda_check(be, cub::DeviceSelect::Flagged(NULL, select_bytes, buf[0], head, buf[0],
                                                      count_d, (int)n),
                       "sizing the brick selection");
  if (select_bytes > temp_bytes) temp_bytes = select_bytes;
  if (s == VOX_OK) s = vox_cuda_alloc(be, &temp, temp_bytes, "brick sort scratch");
  if (s == VOX_OK)
    s = vox_cuda_check(be, cub::DeviceRadixSort::SortPairs(temp, temp_bytes, keys, order, (int)n, 0,
                                                          end_bit),
                       "sorting elements by brick");
  /* after the sort: the sorted keys and order are Current(), their
   * alternates free: the iota in one, the selected starts in the other */
  uint32_t *iota = keys.Alternate(), *starts = order.Alternate();
  if (s == VOX_OK) {
    brick_gather_kernel<<<vox_cuda_grid(n), VOX_CUDA_THREADS>>>(
        n, order.Current(), keys.Current(), box, d->nx, d->ny, l->element_nodes, l->material,
        nodes, material, l->element_slot, head, iota);
    s = vox_cuda_check(be, cudaGetLastError(), "regrouping elements by brick");
  }
  if (s == VOX_OK)
    s = vox_cuda_check(be, cub::DeviceSelect::Flagged(temp, temp_bytes, iota, head, starts,
                                                      count_d, (int)n),
                       "finding the bricks");
  int count = 0;
  if (s == VOX_OK)
    s = vox_cuda_check(be, cudaMemcpy(&count, count_d, sizeof count, cudaMemcpyDeviceToHost),
                       "reading the brick count");
  if (s == VOX_OK)
    s = vox_cuda_alloc(be, (void **)&l->brick_start, ((size_t)count + 1) * sizeof(uint32_t),
                       "brick starts");
  const uint32_t end = (uint32_t)n;
  if (s == VOX_OK)
    s = vox_cuda_check(be, cudaMemcpy(l->brick_start, starts, (size_t)count * sizeof(uint32_t),
                                      cudaMemcpyDeviceToDevice),
                       "copying the brick starts");
  if (s == VOX_OK)
    s = vox_cuda_check(be, cudaMemcpy(l->brick_start + count, &end, sizeof end,
                                      cudaMemcpyHostToDevice),
                       "copying the brick starts");
  if (s == VOX_OK) {
    /* the regrouped arrays replace the box-ordered ones */
    vox_cuda_free(l->element_nodes);
    vox_cuda_free(l->material);
    l->element_nodes = nodes, l->material = material;
    nodes = NULL, material = NULL;
    l->n_bricks = (uint32_t)count;
    l->bytes += n * sizeof(uint16_t) + ((size_t)count + 1) * sizeof(uint32_t);
  }
  vox_cuda_free(box);
  for (int i = 0; i < 4; i++) vox_cuda_free(buf[i]);
  vox_cuda_free(nodes);
  vox_cuda_free(material);
  vox_cuda_free(head);
  vox_cuda_free(temp);
  vox_cuda_free(count_d);
  return s;
}

static vox_status level_create(vox_backend *be, const vox_sparse_level_desc *d,
                               vox_sparse_level **out) {
  int kind = PRODUCT_DEFAULT;
  TRY(product_kind_of(be->ctx, d, &kind));
  vox_sparse_level *l = (vox_sparse_level *)calloc(1, sizeof *l);
  if (!l) return vox_error(be->ctx, VOX_ERR_NO_MEMORY, "out of memory");
  l->n_nodes = d->n_nodes;
  l->n_elements = d->n_elements;
  float ke32[576];
  for (int i = 0; i < 576; i++) ke32[i] = (float)d->ke[i];
  size_t b = 0;
  vox_status s = upload(be, (void **)&l->element_nodes, d->element_nodes,
                        d->n_elements * 4 * sizeof(int32_t), &b, "sparse elements");
  if (s == VOX_OK) s = upload(be, (void **)&l->material, d->material, d->n_elements, &b, "materials");
  if (s == VOX_OK) s = upload(be, (void **)&l->table, d->table, 256 * sizeof(double), &b, "moduli");
  if (s == VOX_OK)
    s = upload(be, (void **)&l->modulus, d->modulus, d->n_elements * sizeof(float), &b, "moduli");
  if (s == VOX_OK) s = upload(be, (void **)&l->ke, d->ke, 576 * sizeof(double), &b, "Ke");
  if (s == VOX_OK) s = upload(be, (void **)&l->ke32, ke32, 576 * sizeof(float), &b, "Ke");
  if (s == VOX_OK) s = upload(be, (void **)&l->node_fixed, d->node_fixed, d->n_nodes, &b, "fixed");
  if (s == VOX_OK)
    s = upload(be, (void **)&l->parent, d->parent, d->n_nodes * sizeof(uint32_t), &b, "parents");
  l->bytes = b;
  l->product = kind;
  if (s == VOX_OK && kind == PRODUCT_BRICK) s = build_bricks(be, l, d);
  if (s != VOX_OK) {
    level_destroy(be, l);
    return s;
  }
  *out = l;
  return VOX_OK;
}

static size_t level_bytes(const vox_sparse_level *l) { return l->bytes; }

static __device__ __forceinline__ void corners(const int4 *en, size_t e, int32_t node[8]) {
  const int4 b = en[e];
  const int32_t base[4] = {b.x, b.y, b.z, b.w};
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
  corners(l.element_nodes, e, node);
  *m = (T)modulus(l, e);
#pragma unroll
  for (int a = 0; a < 8; a++) {
    const uint8_t f = full ? 0 : l.node_fixed[node[a]];
#pragma unroll
    for (int c = 0; c < 3; c++)
      xl[3 * a + c] = (f >> c & 1) ? (T)0 : (T)ld(x, xs, 3 * (size_t)node[a] + c);
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
 * `full`. The atomic kernel: every result a global atomic. */
template <class T>
static __global__ void product_kernel(vox_sparse_level l, const T *__restrict__ ke_global,
                                      const void *x, int xs, void *y, int ys, int full) {
  __shared__ T ke[576];
  load_ke(ke, ke_global);
  __syncthreads();
  const size_t e = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (e >= l.n_elements) return;
  int32_t node[8];
  T xl[24], m;
  element_in(l, e, x, xs, full, node, xl, &m);
#pragma unroll 4
  for (int r = 0; r < 24; r++) {
    T s = 0;
#pragma unroll
    for (int c = 0; c < 24; c++) s += ke[r * 24 + c] * xl[c];
    atomic_add(y, ys, 3 * (size_t)node[r / 3] + r % 3, (double)(m * s));
  }
}

/* The warp kernel: as the atomic one, with the x = 1 face's results handed
 * to the next lane where it holds the x-neighbour (the next element index
 * with the next node index at corner 0), which adds them to its x = 0 face
 * before its atomics. The block's threads are whole warps and all take part
 * in the shuffles. */
template <class T>
static __global__ void product_warp_kernel(vox_sparse_level l, const T *__restrict__ ke_global,
                                           const void *x, int xs, void *y, int ys, int full) {
  __shared__ __align__(16) T ke[576];
  load_ke(ke, ke_global);
  __syncthreads();
  const size_t e = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  const bool live = e < l.n_elements;
  const int lane = threadIdx.x % 32;
  const int32_t first = live ? l.element_nodes[e].x : -8;
  const int32_t prev = __shfl_up_sync(0xffffffffu, first, 1);
  const int32_t next = __shfl_down_sync(0xffffffffu, first, 1);
  const bool from_prev = live && lane > 0 && prev + 1 == first;
  const bool to_next = live && lane < 31 && e + 1 < l.n_elements && next == first + 1;
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
    const size_t at = 3 * (size_t)node[left];
    if (ys) {
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

/* The brick kernel, node by node inside a brick: block b stages brick b's
 * x (fixed columns zeroed unless `full`) by node slot (i + 9 j + 81 k for
 * the brick's node (i, j, k), 4 entries a slot for 16-byte loads) and its
 * elements' moduli by element slot in shared memory; then a thread per
 * node of the brick sums, over the brick's elements around it, the node's
 * three rows of m_e K_e times the element's x, and stores them for a node
 * strictly inside the brick (all its elements are the brick's) or adds
 * them atomically for one on its faces (y starts at 0). No atomics inside
 * the brick; each x read once per brick that touches its node. */
template <class T>
static __global__ void product_brick_kernel(vox_sparse_level l, const T *__restrict__ ke_global,
                                            const void *x, int xs, void *y, int ys, int full) {
  __shared__ __align__(16) T ke[576];
  __shared__ __align__(16) T xb[4 * BRICK_SLOTS];
  __shared__ T emod[BRICK_ELEMENTS];
  __shared__ int32_t slot_node[BRICK_SLOTS];
  __shared__ uint16_t list[BRICK_SLOTS];
  __shared__ int count;
  load_ke(ke, ke_global);
  for (int i = threadIdx.x; i < BRICK_SLOTS; i += blockDim.x) slot_node[i] = -1;
  for (int i = threadIdx.x; i < BRICK_ELEMENTS; i += blockDim.x) emod[i] = 0;
  if (threadIdx.x == 0) count = 0;
  __syncthreads();
  const uint32_t begin = l.brick_start[blockIdx.x], end = l.brick_start[blockIdx.x + 1];
  for (uint32_t e = begin + threadIdx.x; e < end; e += blockDim.x) {
    const int s0 = l.element_slot[e];
    const int ex = s0 % BRICK_SIDE, ey = s0 / BRICK_SIDE % BRICK_SIDE,
              ez = s0 / (BRICK_SIDE * BRICK_SIDE);
    emod[ex + BRICK * (ey + BRICK * ez)] = (T)modulus(l, e);
    int32_t node[8];
    corners(l.element_nodes, e, node);
#pragma unroll
    for (int a = 0; a < 8; a++) /* every writer of a slot writes the same node */
      slot_node[s0 + vox_cuda_corner(a, 0) + BRICK_SIDE * vox_cuda_corner(a, 1) +
                BRICK_SIDE * BRICK_SIDE * vox_cuda_corner(a, 2)] = node[a];
  }
  __syncthreads();
  for (int i = threadIdx.x; i < BRICK_SLOTS; i += blockDim.x) {
    const int32_t n = slot_node[i];
    if (n < 0) continue;
    list[atomicAdd(&count, 1)] = (uint16_t)i;
    const uint8_t f = full ? 0 : l.node_fixed[n];
#pragma unroll
    for (int c = 0; c < 3; c++)
      xb[4 * i + c] = (f >> c & 1) ? (T)0 : (T)ld(x, xs, 3 * (size_t)n + c);
  }
  __syncthreads();
  for (int i = threadIdx.x; i < count; i += blockDim.x) {
    const int s = list[i];
    const int sx = s % BRICK_SIDE, sy = s / BRICK_SIDE % BRICK_SIDE,
              sz = s / (BRICK_SIDE * BRICK_SIDE);
    T acc[3] = {0, 0, 0};
#pragma unroll 1 /* unrolled, the eight elements' loads spill */
    for (int q = 0; q < 8; q++) {
      /* the element at offset (dx, dy, dz) - 1 from the node, whose corner
       * (1 - dx, 1 - dy, 1 - dz) the node is */
      const int dx = q & 1, dy = q >> 1 & 1, dz = q >> 2;
      const int ex = sx - 1 + dx, ey = sy - 1 + dy, ez = sz - 1 + dz;
      if (ex < 0 || ey < 0 || ez < 0 || ex >= BRICK || ey >= BRICK || ez >= BRICK) continue;
      const T m = emod[ex + BRICK * (ey + BRICK * ez)];
      if (m == 0) continue;
      const int a = vox_cuda_corner_index(1 - dx, 1 - dy, 1 - dz);
      const int base = ex + BRICK_SIDE * (ey + BRICK_SIDE * ez);
      T xl[24];
#pragma unroll
      for (int b = 0; b < 8; b++) {
        const T *p = xb + 4 * (base + vox_cuda_corner(b, 0) + BRICK_SIDE * vox_cuda_corner(b, 1) +
                               BRICK_SIDE * BRICK_SIDE * vox_cuda_corner(b, 2));
        xl[3 * b] = p[0], xl[3 * b + 1] = p[1], xl[3 * b + 2] = p[2];
      }
#pragma unroll
      for (int r = 0; r < 3; r++) acc[r] += m * ke_row(ke, 3 * a + r, xl);
    }
    const size_t n = (size_t)slot_node[s];
    const bool inside = sx > 0 && sx < BRICK && sy > 0 && sy < BRICK && sz > 0 && sz < BRICK;
    if (inside) {
#pragma unroll
      for (int c = 0; c < 3; c++) st(y, ys, 3 * n + c, (double)acc[c]);
    } else if (ys) {
      red3((float *)y + 3 * n, (float)acc[0], (float)acc[1], (float)acc[2]);
    } else {
#pragma unroll
      for (int c = 0; c < 3; c++) atomicAdd((double *)y + 3 * n + c, (double)acc[c]);
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
      if (f >> c & 1) st(y, ys, 3 * m + c, ld(x, xs, 3 * m + c));
  }
}

enum { PRODUCT_THREADS = 128 };

template <class T>
static void launch_product(const vox_sparse_level *l, const T *ke, const vox_svec *x, vox_svec *y,
                           int full) {
  if (l->product == PRODUCT_BRICK) {
    if (l->n_bricks > 0)
      product_brick_kernel<T><<<l->n_bricks, PRODUCT_THREADS>>>(*l, ke, x->data, x->single,
                                                                 y->data, y->single, full);
    return;
  }
  const unsigned blocks = vox_cuda_blocks(l->n_elements, PRODUCT_THREADS);
  if (blocks == 0) return;
  if (l->product == PRODUCT_WARP)
    product_warp_kernel<T><<<blocks, PRODUCT_THREADS>>>(*l, ke, x->data, x->single, y->data,
                                                        y->single, full);
  else
    product_kernel<T><<<blocks, PRODUCT_THREADS>>>(*l, ke, x->data, x->single, y->data, y->single,
                                                   full);
}

static vox_status apply(vox_backend *be, vox_sparse_level *l, const vox_svec *x, vox_svec *y,
                        int flags) {
  const int full = flags & VOX_APPLY_FULL;
  CUDA_TRY(be, cudaMemsetAsync(y->data, 0, y->n * (y->single ? sizeof(float) : sizeof(double))),
           "clearing a product");
  if (flags & VOX_APPLY_SINGLE)
    launch_product<float>(l, l->ke32, x, y, full);
  else
    launch_product<double>(l, l->ke, x, y, full);
  CUDA_LAUNCHED(be, "the sparse K u");
  if (!full) {
    fixed_rows_kernel<<<vox_cuda_grid(l->n_nodes), VOX_CUDA_THREADS>>>(
        l->n_nodes, l->node_fixed, x->data, x->single, y->data, y->single);
    CUDA_LAUNCHED(be, "the fixed rows");
  }
  return VOX_OK;
}

static __global__ void diagonal_kernel(vox_sparse_level l, void *d, int ds) {
  VOX_GRID_STRIDE(e, l.n_elements) {
    int32_t node[8];
    corners(l.element_nodes, e, node);
    const double m = modulus(l, e);
    for (int r = 0; r < 24; r++) atomic_add(d, ds, 3 * (size_t)node[r / 3] + r % 3, m * l.ke[r * 25]);
  }
}

static __global__ void invert_kernel(size_t n, const uint8_t *fixed, void *d, int ds) {
  VOX_GRID_STRIDE(m, n) {
    for (int c = 0; c < 3; c++) {
      const double v = ld(d, ds, 3 * m + c);
      st(d, ds, 3 * m + c, (fixed[m] >> c & 1) || v <= 0 ? 1.0 : 1.0 / v);
    }
  }
}

static vox_status inv_diagonal(vox_backend *be, vox_sparse_level *l, vox_svec *d) {
  TRY(vec_set(be, d, 0));
  diagonal_kernel<<<vox_cuda_grid(l->n_elements), VOX_CUDA_THREADS>>>(*l, d->data, d->single);
  invert_kernel<<<vox_cuda_grid(l->n_nodes), VOX_CUDA_THREADS>>>(l->n_nodes, l->node_fixed,
                                                                  d->data, d->single);
  CUDA_LAUNCHED(be, "the sparse diagonal");
  return VOX_OK;
}

static __global__ void zero_fixed_kernel(size_t n, const uint8_t *fixed, void *v, int vs) {
  VOX_GRID_STRIDE(m, n) {
    const uint8_t f = fixed[m];
    if (!f) continue;
    for (int c = 0; c < 3; c++)
      if (f >> c & 1) st(v, vs, 3 * m + c, 0);
  }
}

static vox_status zero_fixed(vox_backend *be, vox_sparse_level *l, vox_svec *v) {
  zero_fixed_kernel<<<vox_cuda_grid(l->n_nodes), VOX_CUDA_THREADS>>>(l->n_nodes, l->node_fixed,
                                                                      v->data, v->single);
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

static __global__ void restrict_kernel(vox_sparse_level f, vox_sparse_level c, const void *rf,
                                       int rfs, void *rc, int rcs) {
  VOX_GRID_STRIDE(m, f.n_nodes) {
    const uint32_t word = f.parent[m];
    const uint32_t pos = word & ((1u << VOX_SPARSE_POS_BITS) - 1);
    int32_t cn[8];
    corners(c.element_nodes, word >> VOX_SPARSE_POS_BITS, cn);
    const uint8_t fx = f.node_fixed[m];
    double v[3];
    for (int k = 0; k < 3; k++) v[k] = (fx >> k & 1) ? 0.0 : ld(rf, rfs, 3 * m + k);
    for (int a = 0; a < 8; a++) {
      const double w = weight(pos, vox_cuda_corner(a, 0), vox_cuda_corner(a, 1),
                              vox_cuda_corner(a, 2));
      if (w == 0) continue;
      for (int k = 0; k < 3; k++)
        if (v[k] != 0) atomic_add(rc, rcs, 3 * (size_t)cn[a] + k, w * v[k]);
    }
  }
}

static vox_status restrict_residual(vox_backend *be, vox_sparse_level *f, vox_sparse_level *c,
                                    const vox_svec *rf, vox_svec *rc) {
  TRY(vec_set(be, rc, 0));
  restrict_kernel<<<vox_cuda_grid(f->n_nodes), VOX_CUDA_THREADS>>>(*f, *c, rf->data, rf->single,
                                                                    rc->data, rc->single);
  CUDA_LAUNCHED(be, "the sparse restriction");
  return VOX_OK;
}

static __global__ void prolong_kernel(vox_sparse_level f, vox_sparse_level c, const void *xc,
                                      int xcs, void *xf, int xfs) {
  VOX_GRID_STRIDE(m, f.n_nodes) {
    const uint32_t word = f.parent[m];
    const uint32_t pos = word & ((1u << VOX_SPARSE_POS_BITS) - 1);
    int32_t cn[8];
    corners(c.element_nodes, word >> VOX_SPARSE_POS_BITS, cn);
    double s[3] = {0, 0, 0};
    for (int a = 0; a < 8; a++) {
      const double w = weight(pos, vox_cuda_corner(a, 0), vox_cuda_corner(a, 1),
                              vox_cuda_corner(a, 2));
      if (w == 0) continue;
      for (int k = 0; k < 3; k++) s[k] += w * ld(xc, xcs, 3 * (size_t)cn[a] + k);
    }
    const uint8_t fx = f.node_fixed[m];
    for (int k = 0; k < 3; k++)
      if (!(fx >> k & 1)) st(xf, xfs, 3 * m + k, ld(xf, xfs, 3 * m + k) + s[k]);
  }
}

static vox_status prolong_add(vox_backend *be, vox_sparse_level *f, vox_sparse_level *c,
                              const vox_svec *xc, vox_svec *xf) {
  prolong_kernel<<<vox_cuda_grid(f->n_nodes), VOX_CUDA_THREADS>>>(*f, *c, xc->data, xc->single,
                                                                   xf->data, xf->single);
  CUDA_LAUNCHED(be, "the sparse prolongation");
  return VOX_OK;
}

static vox_sparse_ops make_ops(void) {
  vox_sparse_ops o = {};
  o.vec_create = vec_create;
  o.vec_destroy = vec_destroy;
  o.vec_upload = vec_upload;
  o.vec_download = vec_download;
  o.vec_set = vec_set;
  o.vec_axpy = vec_axpy;
  o.vec_xpay = vec_xpay;
  o.vec_dot = vec_dot;
  o.smoother_step = smoother_step;
  o.level_create = level_create;
  o.level_destroy = level_destroy;
  o.level_bytes = level_bytes;
  o.level_extra_bytes = level_extra_bytes;
  o.apply = apply;
  o.inv_diagonal = inv_diagonal;
  o.zero_fixed = zero_fixed;
  o.restrict_residual = restrict_residual;
  o.prolong_add = prolong_add;
  return o;
}

extern "C" const vox_sparse_ops vox_cuda_sparse_ops = make_ops();
