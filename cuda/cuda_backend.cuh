/* SPDX-License-Identifier: BSD-3-Clause */
/* The CUDA backend's pieces, one file each (private to libvoxfe).
 *
 * Every large array lives in device memory, allocated once; operations run
 * on the legacy default stream in order, so a kernel launch needs no
 * synchronisation, and only scalars (dot products, maxima) and the coarsest
 * multigrid level cross to the host. */
#ifndef VOXFE_CUDA_BACKEND_CUH
#define VOXFE_CUDA_BACKEND_CUH

#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#include "backend_ops.h"

/* The backend's own state (be->impl). */
typedef struct vox_cuda_state {
  int device;
  cudaDeviceProp prop;
  double *partials;      /* device: per-block partial sums of the reductions */
  double *scalar;        /* pinned host: a reduction's result */
  vox_backend *host;     /* the CPU backend, for the coarsest level's direct solve */
  void *solver;          /* cuSOLVER handle, made by the first dense coarse solve */
  void *blas;            /* cuBLAS handle, likewise */
  /* The dense coarsest factorisation runs on its own stream, beside the
   * setup's Lanczos steps on the legacy stream (cuda_coarse_solve.cu) */
  cudaStream_t factor_stream;
  cudaEvent_t factor_ready, factor_done;
  int *factor_info;      /* pinned host: cuSOLVER's status word, read when it is done */
  vox_stencil *factor_pending; /* the stencil whose factorisation they belong to, until
                                * its status is read: one at a time */
  double *oc_partial;    /* device: the OC bisection's per-block sums (cuda_simp.cu) */
  double *lanczos;       /* device: stencil_lanczos's scalars (cuda_backend.cu) */
  double *cg;            /* device: cg_begin/cg_step/cg_direction's scalars (likewise) */
  /* The sparse ops' recordings (sparse_ops.h: record_begin): the stream
   * they are captured on, and the stream the V-cycle's kernels go to, that
   * one while recording, else 0 (the legacy stream). The vector ops the
   * V-cycle calls (vec->set, axpy, ...) launch there too: a launch on the
   * legacy stream during a recording runs once, at once, and is missing
   * from every replay. */
  cudaStream_t record_stream, launch_stream;
  /* Two page-locked buffers through which large vectors travel between
   * host and device (cuda_backend.cu, "Transfers"), made by the first such
   * transfer; each one's event says when the copy engine is done with it */
  void *stage[2];
  cudaEvent_t stage_done[2];
  unsigned int *peer_arrived; /* device: the blocks of an exchange's put that are done
                               * (cuda_peer.cu), made by the first shared mailbox */
  /* A stream beside launch_stream for an exchange's NCCL calls while the
   * slab's own work runs (peer_ops.h: beside), forked from it and joined to
   * it by the two events; made on first use */
  cudaStream_t side_stream;
  cudaEvent_t side_fork, side_join;
} vox_cuda_state;

static inline vox_cuda_state *vox_cuda(vox_backend *be) { return (vox_cuda_state *)be->impl; }
/* The stream of the sparse V-cycle's kernels and the vector ops (see
 * launch_stream). */
static inline cudaStream_t vox_cuda_stream(vox_backend *be) { return vox_cuda(be)->launch_stream; }

/* What copies between host and device refuses while ops are recorded
 * (launch_stream set: cuda_sparse.cu, record_begin): the copy would run
 * now, on values that the recorded kernels have not made yet, and never
 * again at a replay; the recording fails instead, and its ops run one by
 * one. */
vox_status vox_cuda_refuse_recording(vox_backend *be, const char *what);

/* A failing CUDA call as a voxfe status with the message on the context:
 *   CUDA_TRY(be, cudaMemcpy(...), "uploading a vector");
 * and after a kernel launch:
 *   CUDA_LAUNCHED(be, "the K u kernel"); */
vox_status vox_cuda_check(vox_backend *be, cudaError_t err, const char *what);
#define CUDA_TRY(be, call, what) TRY(vox_cuda_check((be), (call), (what)))
#define CUDA_LAUNCHED(be, what) TRY(vox_cuda_check((be), cudaGetLastError(), (what)))

/* cudaMalloc with a message that names what it was for, the bytes asked and
 * the bytes free; *p is NULL on failure. */
vox_status vox_cuda_alloc(vox_backend *be, void **p, size_t bytes, const char *what);
void vox_cuda_free(void *p);

/* Blocks of `threads` threads that cover n items once. */
static inline unsigned vox_cuda_blocks(size_t n, unsigned threads) {
  return (unsigned)((n + threads - 1) / threads);
}

/* Elementwise kernels: 256 threads a block, grid-stride loops over at most
 * 4096 blocks (enough to fill 132 SMs several times); larger arrays loop:
 *   kernel<<<vox_cuda_grid(n), VOX_CUDA_THREADS>>>(...)  with
 *   VOX_GRID_STRIDE(i, n) body;  inside. */
enum { VOX_CUDA_THREADS = 256, VOX_CUDA_MAX_BLOCKS = 4096 };
static inline unsigned vox_cuda_grid(size_t n) {
  const unsigned b = vox_cuda_blocks(n, VOX_CUDA_THREADS), most = VOX_CUDA_MAX_BLOCKS;
  return b < 1 ? 1 : b > most ? most : b;
}
#define VOX_GRID_STRIDE(i, n)                                                          \
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < (n);             \
       i += (size_t)gridDim.x * blockDim.x)

/* Entry i of a device vector of either precision (`single`: float, else
 * double; VOX_FLOAT_NODE4: float, a node's entries in 16 bytes), as a
 * double: the sparse system's vectors (cuda_sparse.cu,
 * cuda_sparse_matrix.cu), whose precision is a run-time flag. */
static __device__ __forceinline__ size_t vox_cuda_node4_index(size_t i) {
  return 4 * (i / 3) + i % 3; /* VOX_FLOAT_NODE4 (sparse_ops.h) */
}
static __device__ __forceinline__ double vox_cuda_ld(const void *p, int single, size_t i) {
  if (single == VOX_FLOAT_NODE4) return (double)((const float *)p)[vox_cuda_node4_index(i)];
  return single ? (double)((const float *)p)[i] : ((const double *)p)[i];
}
static __device__ __forceinline__ void vox_cuda_st(void *p, int single, size_t i, double v) {
  if (single == VOX_FLOAT_NODE4)
    ((float *)p)[vox_cuda_node4_index(i)] = (float)v;
  else if (single)
    ((float *)p)[i] = (float)v;
  else
    ((double *)p)[i] = v;
}

/* The hexahedron's corners, vox_hex8_corner (VTK order) as bit arithmetic:
 * that host table cannot be read on the device nor used in constant
 * expressions. vox_cuda_backend_create checks the two agree. */
__host__ __device__ constexpr int vox_cuda_corner(int a, int axis) {
  return axis == 0 ? ((a ^ (a >> 1)) & 1) : axis == 1 ? ((a >> 1) & 1) : ((a >> 2) & 1);
}
/* The corner at offset (x, y, z), each 0 or 1: the inverse of vox_cuda_corner. */
__host__ __device__ constexpr int vox_cuda_corner_index(int x, int y, int z) {
  return 4 * z + (y ? 3 - x : x);
}

/* (i, j, k) of node n on a grid of px x py x pz nodes. 64-bit division is a
 * long emulated sequence on the GPU, so grids of fewer than 2^32 nodes (all
 * in practice) divide in 32 bits. */
static __device__ __forceinline__ void vox_cuda_node_coords(size_t n, int64_t px, int64_t py,
                                                            int64_t pz, int64_t &i, int64_t &j,
                                                            int64_t &k) {
  if ((uint64_t)(px * py * pz) <= UINT32_MAX) {
    const uint32_t m = (uint32_t)n, x = (uint32_t)px, y = (uint32_t)py;
    const uint32_t q = m / x;
    i = m - q * x, j = q % y, k = q / y;
  } else {
    const int64_t m = (int64_t)n, q = m / px;
    i = m - q * px, j = q % py, k = q / py;
  }
}

/* The sum over a warp, in lane 0. */
static __device__ __forceinline__ double vox_cuda_warp_sum(double v) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
  return v;
}

/* The matrix-free operator (cuda_operator.cu). */
struct vox_operator {
  vox_grid grid;
  int dpn;                 /* dofs per node: 3 or 1 */
  int nloc;                /* 8 * dpn */
  vox_kernel kernel;       /* the K u variant, never AUTO */
  size_t n_dofs, n_elements;
  double ke_host[24 * 24]; /* nloc x nloc, unit modulus */
  float ke32_host[24 * 24]; /* the same rounded to float (VOX_APPLY_SINGLE) */
  double *ke;              /* device copy of ke_host */
  uint8_t *fixed;          /* device, per dof: 1 = Dirichlet or isolated */
  const double *moduli;    /* device, per element, set by op->set_moduli */
  size_t n_springs;        /* springs to ground on free dofs (vox_operator_desc) */
  int first_layer_shared;  /* vox_operator_desc */
  size_t *spring_dof;      /* device */
  double *spring_k;        /* device */
  int periodic_masters_fixed; /* a periodic grid with a fixed dof on a master node */
};

/* What a fused kernel does with row i of y = A x instead of storing it
 * (op->smooth, op->residual, stencil_smooth, stencil_residual of the backend
 * interface):
 *   ROW_PRODUCT   out = y;
 *   ROW_SMOOTH    d = alpha w (b - y) + beta d, out = x + d;
 *   ROW_RESIDUAL  out = b - y.
 * out never aliases x (the interface forbids it). */
enum { ROW_PRODUCT, ROW_SMOOTH, ROW_RESIDUAL };
struct row_epilogue {
  const double *b, *w; /* right-hand side, inverse diagonal */
  double alpha, beta;
  double *d;
};

template <int MODE>
static __device__ __forceinline__ void row_out(int64_t i, double y, const double *__restrict__ x,
                                               double *__restrict__ out, const row_epilogue &e) {
  if (MODE == ROW_PRODUCT) {
    out[i] = y;
  } else if (MODE == ROW_RESIDUAL) {
    out[i] = __ldg(e.b + i) - y;
  } else {
    const double r = __ldg(e.w + i) * (__ldg(e.b + i) - y);
    const double di = e.beta != 0 ? e.alpha * r + e.beta * e.d[i] : e.alpha * r;
    if (e.d) e.d[i] = di; /* NULL: a one-step smoother keeps no direction */
    out[i] = __ldg(x + i) + di;
  }
}

/* The epilogue on its own, after a product stored in out. */
template <int MODE>
static __global__ void vox_cuda_finish_rows_kernel(const double *__restrict__ x,
                                                   double *__restrict__ out, row_epilogue e,
                                                   size_t n) {
  VOX_GRID_STRIDE(i, n) row_out<MODE>((int64_t)i, out[i], x, out, e);
}

/* The epilogue as a second pass over a product already in out (for the
 * kernels that do not fuse it). */
template <int MODE>
static vox_status vox_cuda_finish_rows(vox_backend *be, const vox_vec *x, vox_vec *out,
                                       const row_epilogue &e, const char *what) {
  vox_cuda_finish_rows_kernel<MODE><<<vox_cuda_grid(out->n), VOX_CUDA_THREADS, 0,
                                      vox_cuda_stream(be)>>>(
      x->data, out->data, e, out->n);
  CUDA_LAUNCHED(be, what);
  return VOX_OK;
}

/* An assembled operator of 27 blocks per node (backend_ops.h layout), in
 * double or, for VOX_PRECISION_MIXED, single precision (cuda_stencil.cu,
 * cuda_galerkin.cu). The operators are symmetric (Galerkin products of a
 * symmetric one), so only the centre block and the 13 blocks towards the
 * neighbours later in the node order are stored: block t = 13..26 in slot
 * t - 13, while block t < 13 of node n is the transpose of block 26 - t of
 * its neighbour n + offset(t). That halves the bytes of every coarse product
 * and of the Galerkin output. The values lie slot by slot, each slot's
 * blocks in node order, value[(((t-13)*n_nodes + n)*dpn + r)*dpn + c]
 * (vox_cuda_stencil_block): a warp's threads on consecutive nodes read one
 * block of each, own or a neighbour's transposed, from a few adjacent
 * cache lines instead of one line per node. The coarsest level keeps a CPU
 * copy for the direct solve (cuda_coarse_solve.cu). */
enum { VOX_CUDA_STENCIL_SLOTS = 14, VOX_CUDA_STENCIL_CENTRE = 13 };

/* The first value of block `slot` (t - 13) of node n, of a level of n_nodes
 * nodes with bs = dpn^2 values a block. */
static __host__ __device__ __forceinline__ size_t vox_cuda_stencil_block(size_t n, int slot,
                                                                         size_t n_nodes,
                                                                         int bs) {
  return ((size_t)slot * n_nodes + n) * (size_t)bs;
}
/* The inverse: value v's node n, slot and entry e of its block. */
struct vox_cuda_stencil_place {
  size_t n;
  int slot, e;
};
static __host__ __device__ __forceinline__ vox_cuda_stencil_place
vox_cuda_stencil_place_of(size_t v, size_t n_nodes, int bs) {
  return {v / (size_t)bs % n_nodes, (int)(v / (n_nodes * (size_t)bs)), (int)(v % (size_t)bs)};
}
/* vox_stencil_kernel AUTO: a warp a node below this many nodes of a level
 * (cuda_stencil.cu, stencil_warp_kernel), a thread a row from it on */
enum { VOX_CUDA_STENCIL_WARP_NODES = 1 << 13 };

/* A stored value widened to double: double, float, or FP16 (whose scale
 * the caller applies). */
static __device__ __forceinline__ double vox_cuda_widen(double v) { return v; }
static __device__ __forceinline__ double vox_cuda_widen(float v) { return (double)v; }
static __device__ __forceinline__ double vox_cuda_widen(__half v) {
  return (double)__half2float(v);
}

/* Entry (r, c) of block t of node n, whose neighbour at offset t is m (both
 * inside the grid), from the half storage `a` of a level of n_nodes nodes
 * (double or float; FP16 values are read by the product kernels only,
 * cuda_stencil.cu). */
template <int DPN, class V>
static __device__ __forceinline__ double vox_cuda_stencil_entry(const V *__restrict__ a, size_t n,
                                                                size_t m, size_t n_nodes, int t,
                                                                int r, int c) {
  constexpr int BS = DPN * DPN;
  return t >= VOX_CUDA_STENCIL_CENTRE
             ? (double)a[vox_cuda_stencil_block(n, t - VOX_CUDA_STENCIL_CENTRE, n_nodes, BS) +
                         r * DPN + c]
             : (double)a[vox_cuda_stencil_block(m, VOX_CUDA_STENCIL_CENTRE - t, n_nodes, BS) +
                         c * DPN + r];
}

/* FP16 storage of the smoothed coarse levels in MIXED precision
 * (cuda_stencil.cu, "FP16 storage") for a level on `grid`: on by default
 * where the grid is not periodic (half the bytes of the coarse products),
 * off for a periodic cell, which needs more CG iterations with it than it
 * saves (docs/experiments.md); the backend's fp16_levels
 * (vox_backend_options) off or on overrides. The rounding can make level 1
 * indefinite (it did on the 512 x 256 x 256 cantilever): a solve that
 * breaks down is then redone with float levels, which stay (stencil_full_storage,
 * engine/fem.c). */
int vox_cuda_fp16_stencils(const vox_backend *be, const vox_grid *grid);

struct vox_stencil {
  vox_grid grid;
  int dpn;
  size_t n_nodes, n_dofs;
  vox_precision precision;
  double *value;           /* device, n_nodes * 14 * dpn^2, when DOUBLE */
  float *value32;          /* device, the same when MIXED */
  /* FP16 storage (MIXED only): the Galerkin products write float into
   * value32 (the next level's product reads it), and the first product
   * that smooths with the level packs it in place into FP16 values
   * A_hat = S^-1 A S^-1 in the first half of the same buffer, with
   * S = diag(sqrt(a_ii)) per dof in `scale`: y = S (A_hat (S x)). */
  int fp16;                /* the level is packed before its products */
  int packed;              /* value32 holds FP16 values now (as __half) */
  float *scale;            /* device, n_dofs: S, when fp16 */
  vox_stencil *host;       /* CPU backend stencil, made by stencil_factor */
  vox_vec host_b, host_x;  /* CPU backend vectors of the coarse solve */
  /* A small coarsest level's dense solve (cuda_coarse_solve.cu): */
  double *dense_factor;    /* device, n_dofs^2: A, then its Cholesky factor L */
  double *dense_inverse;   /* device, n_dofs^2: X = L^-1, column-major */
  const void *x_rows, *x_cols; /* X by rows and by columns, as the solve reads
                            * it: float (packed into dense_factor) when MIXED */
  double *dense_z;         /* work vector of its solve */
  int *info;               /* device: cuSOLVER's status word */
  void *factor_work;       /* device: cuSOLVER's Cholesky workspace, kept */
  size_t factor_work_bytes;
  int factor_pending;      /* factored on the side stream, status not read yet */
};

/* cuda_operator.cu */
vox_status vox_cuda_op_create(vox_backend *be, const vox_operator_desc *desc, vox_operator **op);
void vox_cuda_op_destroy(vox_backend *be, vox_operator *op);
vox_status vox_cuda_op_set_moduli(vox_backend *be, vox_operator *op, const vox_vec *moduli);
vox_status vox_cuda_op_check_fixed(vox_backend *be, const vox_operator *op, const char *what);
vox_status vox_cuda_op_apply(vox_backend *be, vox_operator *op, const vox_vec *x, vox_vec *y,
                             int flags);
vox_status vox_cuda_op_smooth(vox_backend *be, vox_operator *op, const vox_vec *b,
                              const vox_vec *x, const vox_vec *inv_diag, double alpha,
                              double beta, vox_vec *d, vox_vec *x_out, int flags);
vox_status vox_cuda_op_residual(vox_backend *be, vox_operator *op, const vox_vec *b,
                                const vox_vec *x, vox_vec *r, int flags);
vox_status vox_cuda_op_prepare(vox_backend *be, vox_operator *op);
vox_status vox_cuda_op_zero_fixed(vox_backend *be, vox_operator *op, vox_vec *v);
vox_status vox_cuda_op_diagonal(vox_backend *be, vox_operator *op, vox_vec *d);
vox_status vox_cuda_op_element_energy(vox_backend *be, vox_operator *op, const vox_vec *u,
                                      vox_vec *energy, int accumulate);
vox_status vox_cuda_op_strain_load(vox_backend *be, vox_operator *op, const double *chi,
                                   vox_vec *f);
vox_status vox_cuda_op_strain_energy(vox_backend *be, vox_operator *op, int n_fields,
                                     const vox_vec *u, const double *chi, const double *w,
                                     vox_vec *energy);
vox_status vox_cuda_op_strain_energy_sums(vox_backend *be, vox_operator *op, int n_fields,
                                          const vox_vec *u, const double *chi, double *sums);

/* cuda_sparse.cu: vec->set and vec->copy of the precisions other than
 * double (one kernel each for every precision vox_vec carries) */
vox_status vox_cuda_vec_set_any(vox_backend *be, vox_vec *v, double a);
vox_status vox_cuda_vec_convert(vox_backend *be, vox_vec *dst, const vox_vec *src);
/* y += a x of any precisions (vox_vector_ops.axpy), through doubles */
vox_status vox_cuda_vec_axpy_any(vox_backend *be, vox_vec *y, double a, const vox_vec *x);

/* cuda_simp.cu */
vox_status vox_cuda_simp_moduli(vox_backend *be, const vox_vec *rho, const vox_vec *e_solid,
                                double p, double emin, vox_vec *moduli);
vox_status vox_cuda_simp_sensitivity(vox_backend *be, const vox_vec *rho, const vox_vec *e_solid,
                                     const vox_vec *energy, double p, double emin, vox_vec *dc);
vox_status vox_cuda_oc_update(vox_backend *be, const vox_vec *rho, const vox_vec *dc,
                              const vox_vec *dv, const vox_vec *design, const vox_vec *passive,
                              double lambda, double move, double eta, double q, double rho_min,
                              vox_vec *rho_new);

vox_status vox_cuda_oc_volumes(vox_backend *be, const vox_vec *rho, const vox_vec *dc,
                               const vox_vec *dv, const vox_vec *design, const vox_vec *passive,
                               const double *lambda, int n, double move, double eta,
                               double q, double rho_min, double *volume);

/* cuda_filter.cu */
vox_status vox_cuda_filter_create(vox_backend *be, const vox_grid *grid, double radius,
                                  const uint8_t *active, vox_filter **filter);
vox_status vox_cuda_filter_create_periodic(vox_backend *be, const vox_grid *grid, double radius,
                                           const uint8_t *active, vox_filter **filter);
void vox_cuda_filter_destroy(vox_backend *be, vox_filter *filter);

/* cuda_symmetry.cu */
vox_status vox_cuda_symmetrize(vox_backend *be, const vox_grid *grid, vox_symmetry symmetry,
                               vox_vec *v);
vox_status vox_cuda_turn_field(vox_backend *be, const vox_grid *grid, int turns,
                               const vox_vec *src, vox_vec *dst);
vox_status vox_cuda_filter_apply(vox_backend *be, vox_filter *f, const vox_vec *in, vox_vec *out);
vox_status vox_cuda_filter_transpose(vox_backend *be, vox_filter *f, const vox_vec *in,
                                     vox_vec *out);
vox_status vox_cuda_filter_sensitivity(vox_backend *be, vox_filter *f, const vox_vec *rho,
                                       const vox_vec *dc, double gamma, vox_vec *out);

/* cuda_stencil.cu: stencils, their products and the grid transfers */
vox_status vox_cuda_stencil_create(vox_backend *be, const vox_grid *grid, int dpn,
                                   vox_precision precision, vox_stencil **st);
void vox_cuda_stencil_destroy(vox_backend *be, vox_stencil *st);
vox_status vox_cuda_stencil_upload(vox_backend *be, vox_stencil *st, const double *host);
vox_status vox_cuda_stencil_download(vox_backend *be, const vox_stencil *st, double *host);
vox_status vox_cuda_stencil_values(vox_backend *be, vox_stencil *st, vox_vec *values);
vox_status vox_cuda_stencil_apply(vox_backend *be, vox_stencil *st, const vox_vec *x,
                                  vox_vec *y);
vox_status vox_cuda_stencil_smooth(vox_backend *be, vox_stencil *st, const vox_vec *b,
                                   const vox_vec *x, const vox_vec *inv_diag, double alpha,
                                   double beta, vox_vec *d, vox_vec *x_out);
vox_status vox_cuda_stencil_residual(vox_backend *be, vox_stencil *st, const vox_vec *b,
                                     const vox_vec *x, vox_vec *r);
vox_status vox_cuda_stencil_diagonal(vox_backend *be, vox_stencil *st, vox_vec *d);
/* FP16 storage (struct vox_stencil): pack a level marked fp16 that holds
 * float values (a no-op otherwise), and the reverse (a no-op unless packed). */
vox_status vox_cuda_stencil_pack(vox_backend *be, vox_stencil *st);
vox_status vox_cuda_stencil_unpack(vox_backend *be, vox_stencil *st);
/* backend op stencil_full_storage: unpacked, and never packed again */
vox_status vox_cuda_stencil_full_storage(vox_backend *be, vox_stencil *st, int *was);
vox_status vox_cuda_restrict_residual(vox_backend *be, const vox_grid *fine, int dpn,
                                      const vox_vec *r_fine, vox_vec *r_coarse);
vox_status vox_cuda_prolong_add(vox_backend *be, const vox_grid *fine, int dpn,
                                const vox_vec *x_coarse, vox_vec *x_fine);

/* cuda_galerkin.cu: coarse operators R A P computed on the device */
vox_status vox_cuda_galerkin_operator(vox_backend *be, vox_operator *fine, vox_stencil *coarse);
vox_status vox_cuda_galerkin_stencil(vox_backend *be, vox_stencil *fine, vox_stencil *coarse);

/* cuda_sparse_matrix.cu: the assembled block matrices of the sparse
 * system's smoothed-aggregation levels (sparse_ops.h: matrix_*) */
vox_status vox_cuda_matrix_create(vox_backend *be, const vox_bsr *h, int single,
                                  vox_sparse_matrix **out);
void vox_cuda_matrix_destroy(vox_backend *be, vox_sparse_matrix *m);
size_t vox_cuda_matrix_bytes(const vox_sparse_matrix *m);
/* The device arrays of a matrix, for kernels that write its values in
 * place (the EFG stiffness assembled on the device, cuda_efg.cu); val is
 * NULL for a matrix stored in float. */
void vox_cuda_matrix_arrays(vox_sparse_matrix *m, const size_t **row_start, const int32_t **col,
                            double **val);
vox_status vox_cuda_matrix_apply(vox_backend *be, const vox_sparse_matrix *m, const vox_vec *x,
                                 vox_vec *y, int add);
vox_status vox_cuda_matrix_smoother_step(vox_backend *be, const vox_sparse_matrix *w,
                                         const vox_vec *b, const vox_vec *ax, double alpha,
                                         double beta, vox_vec *d, vox_vec *x);

/* cuda_coarse_solve.cu: the coarsest level, by a dense Cholesky factor on
 * the device when it is small, else through the CPU backend */
vox_status vox_cuda_stencil_factor(vox_backend *be, vox_stencil *st);
vox_status vox_cuda_stencil_solve(vox_backend *be, vox_stencil *st, const vox_vec *b,
                                  vox_vec *x);
/* The largest coarsest level factored densely on the device: 8000 unknowns
 * make 2 x 512 MB (the inverse factor in both orders; the memory plan
 * counts them). */
enum { VOX_CUDA_DENSE_COARSE_DOFS = 8000 };
/* Waits for a factorisation still running on the side stream and reports
 * its status; anything that writes the stencil's values or reads the factor
 * calls it first (a no-op when none is pending). */
vox_status vox_cuda_stencil_factor_wait(vox_backend *be, vox_stencil *st);
/* Frees the factor (called by vox_cuda_stencil_destroy). */
void vox_cuda_stencil_factor_free(vox_backend *be, vox_stencil *st);
/* The side stream, its events, the pinned status word and the cuSOLVER and
 * cuBLAS handles bound to the stream (made once per backend): for any
 * dense factorisation that runs beside the legacy stream's work (the
 * stencils' coarsest level, the EFG multigrid's last level). */
vox_status vox_cuda_factor_stream_setup(vox_backend *be);
/* X = L^-1 for the m x m lower triangle L (column-major, leading dimension
 * ld) into X preset to the identity, on h's stream (cuda_coarse_solve.cu). */
cublasStatus_t vox_cuda_invert_lower(cublasHandle_t h, const double *L, double *X, int m, int ld);
/* Releases the cuSOLVER handle (called when the backend is destroyed). */
void vox_cuda_coarse_solver_free(vox_backend *be);
/* Loads the coarse solve's library kernels (the warm-up thread's). */
extern "C" void vox_cuda_coarse_warm_up(void);

#endif
