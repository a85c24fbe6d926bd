/* SPDX-License-Identifier: BSD-3-Clause */
/* The periodic cell solver's operations on the GPU (cell_ops.h): one
 * thread per node of a level or of one colour, each computed by
 * cell_kernels.h as the CPU backend computes it. Everything is in device
 * memory (vox_cell_floats); the host sees the coarsest stencil, its
 * pseudo-inverse, and the two norms the iteration tests. */
#include <cuda_fp16.h>

#include <new>

#include "cell_ops.h"
#include "cuda_backend.cuh"

namespace {

struct cell_level {
  vox_cell_dims dims;
  int64_t nodes;
  float *x, *b, *stencil;
  int slab; /* restrict_residual's coarse planes a slab (all but the coarsest) */
};

} // namespace

struct vox_cell {
  int n_levels;
  cell_level level[VOX_CELL_MAX_LEVELS];
  size_t slab_floats;
  float *slab;          /* restrict_residual's residual of a slab's fine planes */
  float *ke, *g, *kchi; /* 576, 8 x 576, 24 */
  double *h;            /* 64 x 576 */
  float *moduli;
  float *p; /* CG's direction on level 0 */
  double *pinv;
  double *sum; /* reductions' results: CG_SUMS doubles */
};

namespace {

int64_t nodes_of(vox_cell_dims d) { return (int64_t)d.nx * d.ny * d.nz; }

/* The sum of v over the block into *out (atomically); the block calls it
 * together (its shared partials are reused from call to call). */
__device__ void block_sum(double v, double *out) {
  __shared__ double part[32];
  __syncthreads();
  v = vox_cuda_warp_sum(v);
  if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = v;
  __syncthreads();
  if (threadIdx.x < 32) {
    v = threadIdx.x < (blockDim.x + 31) / 32 ? part[threadIdx.x] : 0;
    v = vox_cuda_warp_sum(v);
    if (threadIdx.x == 0) atomicAdd(out, v);
  }
}

/* A node's row of a level: ax, diag and its right-hand side b. */
struct level_view {
  int level;
  vox_cell_dims dims;
  const float *moduli, *ke, *g, *kchi, *stencil, *b;
};

__device__ __forceinline__ void row(const level_view &v, const float *x, int i, int j, int k,
                                    float ax[3], float diag[9], float b[3]) {
  if (v.level == 0) {
    float f[3]; /* the load, not the V-cycle's right-hand side */
    vox_cell_fine_row(v.dims, v.moduli, v.ke, v.kchi, x, i, j, k, ax, diag, f);
  } else if (v.level == 1)
    vox_cell_coarse1_row(v.dims, v.moduli, v.g, x, i, j, k, ax, diag);
  else
    vox_cell_stencil_row(v.dims, v.stencil, x, i, j, k, ax, diag);
  const int64_t n = vox_cell_node(v.dims, i, j, k);
  for (int q = 0; q < 3; q++) b[q] = v.b[3 * n + q];
}

__global__ void smooth_kernel(level_view v, float *x, int colour, int64_t count) {
  const int64_t m = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (m >= count) return;
  int i, j, k;
  vox_cell_colour_node(v.dims, colour, m, &i, &j, &k);
  float ax[3], diag[9], b[3];
  row(v, x, i, j, k, ax, diag, b);
  vox_cell_relax(b, ax, diag, x + 3 * vox_cell_node(v.dims, i, j, k));
}

/* The residual of the fine planes z0 .. z0 + slab.nz - 1 (wrapped) of a
 * level into r, the slab's nodes in order (restrict_residual). */
__global__ void residual_kernel(level_view v, const float *x, vox_cell_dims slab, int z0, float *r,
                                int64_t nodes) {
  const int64_t m = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (m >= nodes) return;
  int i, j, p;
  vox_cell_coords(slab, m, &i, &j, &p);
  float ax[3], diag[9], b[3];
  row(v, x, i, j, vox_cell_wrap(z0 + p, v.dims.nz), ax, diag, b);
  for (int q = 0; q < 3; q++) r[3 * m + q] = b[q] - ax[q];
}

/* CG on level 0 (cell_ops.h). With `load`, out = f - A in (the residual);
 * without, out = A in; either way *sum += in.out, or out.out with `load`. */
__global__ void fine_product_kernel(level_view v, const float *in, float *out, int load,
                                    int64_t nodes, double *sum) {
  const int64_t n = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  double s = 0;
  if (n < nodes) {
    int i, j, k;
    vox_cell_coords(v.dims, n, &i, &j, &k);
    float ax[3], diag[9], f[3];
    vox_cell_fine_row(v.dims, v.moduli, v.ke, v.kchi, in, i, j, k, ax, diag, f);
    for (int q = 0; q < 3; q++) {
      const float y = load ? f[q] - ax[q] : ax[q];
      out[3 * n + q] = y;
      s += (double)(load ? y : in[3 * n + q]) * y;
    }
  }
  block_sum(s, sum);
}

/* What cg_direction needs of r and z (cell_ops.h): sum[0] = r.z, sum[1 +
 * c] the sum of component c of z, sum[4 + c] of r. */
enum { CG_SUMS = 7 };
__global__ void direction_sums_kernel(size_t n, const float *r, const float *z, double *sum) {
  double rz = 0, zs[3] = {0, 0, 0}, rs[3] = {0, 0, 0};
  VOX_GRID_STRIDE(i, n) {
    rz += (double)r[i] * z[i];
    zs[i % 3] += z[i], rs[i % 3] += r[i];
  }
  block_sum(rz, sum);
  for (int c = 0; c < 3; c++) block_sum(zs[c], sum + 1 + c), block_sum(rs[c], sum + 4 + c);
}

/* p = (z - mean) + beta p; the first direction (beta 0) does not read p,
 * which holds whatever the allocation held. */
__global__ void direction_kernel(size_t n, const float *z, float3 mean, float beta, float *p) {
  VOX_GRID_STRIDE(i, n) {
    const int c = (int)(i % 3);
    const float y = z[i] - (c == 0 ? mean.x : c == 1 ? mean.y : mean.z);
    p[i] = beta != 0 ? y + beta * p[i] : y;
  }
}

__global__ void cg_update_kernel(size_t n, float alpha, const float *q, float *r, double *sum) {
  double s = 0;
  VOX_GRID_STRIDE(i, n) {
    r[i] -= alpha * q[i];
    s += (double)r[i] * r[i];
  }
  block_sum(s, sum);
}

__global__ void load_norm_kernel(vox_cell_dims d, const float *moduli, const float *kchi,
                                 int64_t nodes, double *sum) {
  const int64_t n = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  double ff = 0;
  if (n < nodes) {
    int i, j, k;
    vox_cell_coords(d, n, &i, &j, &k);
    float f[3];
    vox_cell_load_at(d, moduli, kchi, i, j, k, f);
    ff = (double)f[0] * f[0] + (double)f[1] * f[1] + (double)f[2] * f[2];
  }
  block_sum(ff, sum);
}

/* The coarse nodes first .. first + count - 1 restricted from the slab r
 * of fine planes from z0 on. */
__global__ void restrict_kernel(vox_cell_dims fine, const float *r, int z0, vox_cell_dims d,
                                float *b, float *x, int64_t first, int64_t count) {
  const int64_t m = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (m >= count) return;
  const int64_t n = first + m;
  int i, j, k;
  vox_cell_coords(d, n, &i, &j, &k);
  float out[3];
  vox_cell_restrict_at(fine, r, z0, i, j, k, out);
  for (int q = 0; q < 3; q++) b[3 * n + q] = out[q], x[3 * n + q] = 0;
}

__global__ void prolong_kernel(vox_cell_dims coarse, const float *xc, vox_cell_dims d, float *x,
                               int64_t nodes) {
  const int64_t n = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (n >= nodes) return;
  int i, j, k;
  vox_cell_coords(d, n, &i, &j, &k);
  float add[3];
  vox_cell_prolong_at(coarse, xc, i, j, k, add);
  for (int q = 0; q < 3; q++) x[3 * n + q] += add[q];
}

/* One thread per stored block (t = 13..26) of a node. */
__global__ void level2_kernel(vox_cell_dims d, const float *moduli, const double *h, float *stencil,
                              int64_t blocks) {
  const int64_t q = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (q >= blocks) return;
  int i, j, k;
  vox_cell_coords(d, q / VOX_CELL_STORED, &i, &j, &k);
  vox_cell_level2_block(d, moduli, h, i, j, k, 13 + (int)(q % VOX_CELL_STORED), stencil + 9 * q);
}

/* The same for a level >= 3, from the stencil of the level above. */
__global__ void galerkin_kernel(vox_cell_dims fine, const float *sf, vox_cell_dims d, float *sc,
                                int64_t blocks) {
  const int64_t q = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (q >= blocks) return;
  int i, j, k;
  vox_cell_coords(d, q / VOX_CELL_STORED, &i, &j, &k);
  vox_cell_galerkin_block(fine, sf, i, j, k, 13 + (int)(q % VOX_CELL_STORED), sc + 9 * q);
}

__global__ void moduli_kernel(size_t n, const double *m, float *out) {
  VOX_GRID_STRIDE(e, n) out[e] = (float)m[e];
}

/* The fem's layout: nodes (nx+1) x (ny+1) x (nz+1), images included. */
/* The fem's layout: nodes (nx+1) x (ny+1) x (nz+1), images included. x =
 * u widened, per master node. */
__global__ void field_load_kernel(vox_cell_dims d, const uint16_t *u, float *x, int64_t nodes) {
  const int64_t n = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (n >= nodes) return;
  int i, j, k;
  vox_cell_coords(d, n, &i, &j, &k);
  const int64_t f = ((int64_t)k * (d.ny + 1) + j) * (d.nx + 1) + i;
  for (int q = 0; q < 3; q++) x[3 * n + q] = __half2float(__ushort_as_half(u[3 * f + q]));
}

/* u += alpha p on every node of the fem's layout, images from their masters. */
__global__ void field_update_kernel(vox_cell_dims d, float alpha, const float *p, uint16_t *u,
                                    int64_t nodes) {
  const int64_t f = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (f >= nodes) return;
  const vox_cell_dims images = {d.nx + 1, d.ny + 1, d.nz + 1};
  int i, j, k;
  vox_cell_coords(images, f, &i, &j, &k);
  const int64_t n = vox_cell_node(d, i, j, k);
  for (int q = 0; q < 3; q++) {
    const float v = __half2float(__ushort_as_half(u[3 * f + q])) + alpha * p[3 * n + q];
    u[3 * f + q] = __half_as_ushort(__float2half_rn(v));
  }
}

/* x = pinv b; pinv is symmetric, so thread i reads its column: coalesced. */
__global__ void coarsest_kernel(const double *pinv, const float *b, float *x, int64_t n) {
  const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i >= n) return;
  double s = 0;
  for (int64_t j = 0; j < n; j++) s += pinv[j * n + i] * b[j];
  x[i] = (float)s;
}

unsigned blocks_for(int64_t n) { return vox_cuda_blocks((size_t)(n > 0 ? n : 1), 128); }

level_view view(const vox_cell *c, int l) {
  const cell_level &lv = c->level[l];
  return level_view{l, lv.dims, c->moduli, c->ke, c->g, c->kchi, lv.stencil, lv.b};
}

void cell_release(vox_backend *be, vox_cell *c) {
  (void)be;
  for (int l = 0; l < c->n_levels; l++) {
    cell_level &lv = c->level[l];
    vox_cuda_free(lv.x), vox_cuda_free(lv.b), vox_cuda_free(lv.stencil);
    lv.x = lv.b = lv.stencil = nullptr;
  }
  vox_cuda_free(c->slab), vox_cuda_free(c->p), vox_cuda_free(c->pinv);
  c->slab = c->p = nullptr;
  c->pinv = nullptr;
}

void cell_destroy(vox_backend *be, vox_cell *c) {
  if (!c) return;
  cell_release(be, c);
  float *f[] = {c->ke, c->g, c->kchi, c->moduli};
  for (float *p : f) vox_cuda_free(p);
  vox_cuda_free(c->h);
  vox_cuda_free(c->sum);
  delete c;
}

vox_status alloc_floats(vox_backend *be, float **p, size_t n, const char *what) {
  return vox_cuda_alloc(be, (void **)p, (n ? n : 1) * sizeof(float), what);
}

vox_status cell_hold_in(vox_backend *be, vox_cell *c) {
  for (int l = 0; l < c->n_levels; l++) {
    cell_level &lv = c->level[l];
    const size_t n3 = 3 * (size_t)lv.nodes;
    TRY(alloc_floats(be, &lv.x, n3, "the cell solver's iterate"));
    TRY(alloc_floats(be, &lv.b, n3, "the cell solver's right-hand side"));
    if (l >= 2)
      TRY(alloc_floats(be, &lv.stencil, VOX_CELL_BLOCK * (size_t)lv.nodes,
                       "the cell solver's stencil"));
  }
  TRY(alloc_floats(be, &c->slab, c->slab_floats, "the cell solver's residual slab"));
  const size_t nc = 3 * (size_t)c->level[c->n_levels - 1].nodes;
  TRY(vox_cuda_alloc(be, (void **)&c->pinv, nc * nc * sizeof(double),
                     "the cell solver's coarsest inverse"));
  return alloc_floats(be, &c->p, 3 * (size_t)c->level[0].nodes, "CG's direction");
}

vox_status cell_hold(vox_backend *be, vox_cell *c) {
  if (c->p) return VOX_OK;
  const vox_status s = cell_hold_in(be, c);
  if (s != VOX_OK) cell_release(be, c);
  return s;
}

vox_status cell_create_in(vox_backend *be, const vox_cell_desc *desc, vox_cell *c) {
  c->n_levels = desc->n_levels;
  for (int l = 0; l < c->n_levels; l++) {
    cell_level &lv = c->level[l];
    lv.dims = desc->dims[l];
    lv.nodes = nodes_of(lv.dims);
    lv.slab = l < c->n_levels - 1 ? vox_cell_slab(desc, l) : 0;
  }
  c->slab_floats = (size_t)vox_cell_slab_floats(desc);
  TRY(cell_hold_in(be, c));
  TRY(alloc_floats(be, &c->moduli, (size_t)c->level[0].nodes, "the cell solver's moduli"));
  TRY(alloc_floats(be, &c->ke, 576, "the element matrix"));
  TRY(alloc_floats(be, &c->g, 8 * 576, "the level-1 element matrices"));
  TRY(alloc_floats(be, &c->kchi, 24, "the load"));
  TRY(vox_cuda_alloc(be, (void **)&c->h, 64 * 576 * sizeof(double), "the level-2 matrices"));
  TRY(vox_cuda_alloc(be, (void **)&c->sum, CG_SUMS * sizeof(double), "the reductions"));
  float ke[576], g[8 * 576];
  for (int i = 0; i < 576; i++) ke[i] = (float)desc->ke[i];
  for (int i = 0; i < 8 * 576; i++) g[i] = (float)desc->g[i];
  CUDA_TRY(be, cudaMemcpy(c->ke, ke, sizeof ke, cudaMemcpyHostToDevice), "uploading Ke");
  CUDA_TRY(be, cudaMemcpy(c->g, g, sizeof g, cudaMemcpyHostToDevice), "uploading G");
  CUDA_TRY(be, cudaMemcpy(c->h, desc->h, 64 * 576 * sizeof(double), cudaMemcpyHostToDevice),
           "uploading the level-2 matrices");
  return VOX_OK;
}

vox_status cell_create(vox_backend *be, const vox_cell_desc *desc, vox_cell **out) {
  vox_cell *c = new (std::nothrow) vox_cell();
  if (!c) return vox_error(be->ctx, VOX_ERR_NO_MEMORY, "out of memory (the cell solver)");
  const vox_status s = cell_create_in(be, desc, c);
  if (s != VOX_OK) {
    cell_destroy(be, c);
    return s;
  }
  *out = c;
  return VOX_OK;
}

vox_status cell_set_moduli(vox_backend *be, vox_cell *c, const vox_vec *moduli) {
  moduli_kernel<<<vox_cuda_grid(moduli->n), VOX_CUDA_THREADS>>>(moduli->n, moduli->data, c->moduli);
  CUDA_LAUNCHED(be, "the cell solver's moduli");
  return VOX_OK;
}

vox_status cell_galerkin(vox_backend *be, vox_cell *c, int level) {
  if (level == 2) {
    const cell_level &l2 = c->level[2];
    const int64_t blocks = VOX_CELL_STORED * l2.nodes;
    level2_kernel<<<blocks_for(blocks), 128>>>(l2.dims, c->moduli, c->h, l2.stencil, blocks);
    CUDA_LAUNCHED(be, "the cell solver's level-2 stencil");
    return VOX_OK;
  }
  const cell_level &f = c->level[level - 1], &lv = c->level[level];
  const int64_t blocks = VOX_CELL_STORED * lv.nodes;
  galerkin_kernel<<<blocks_for(blocks), 128>>>(f.dims, f.stencil, lv.dims, lv.stencil, blocks);
  CUDA_LAUNCHED(be, "the cell solver's Galerkin product");
  return VOX_OK;
}

vox_status cell_stencil_download(vox_backend *be, vox_cell *c, int level, float *host) {
  CUDA_TRY(be,
           cudaMemcpy(host, c->level[level].stencil,
                      VOX_CELL_BLOCK * (size_t)c->level[level].nodes * sizeof(float),
                      cudaMemcpyDeviceToHost),
           "downloading a stencil");
  return VOX_OK;
}

vox_status cell_coarsest_upload(vox_backend *be, vox_cell *c, const double *pinv) {
  const size_t n = 3 * (size_t)c->level[c->n_levels - 1].nodes;
  CUDA_TRY(be, cudaMemcpy(c->pinv, pinv, n * n * sizeof(double), cudaMemcpyHostToDevice),
           "uploading the coarsest inverse");
  return VOX_OK;
}

vox_status cell_set_load(vox_backend *be, vox_cell *c, const double kchi[24]) {
  float k[24];
  for (int i = 0; i < 24; i++) k[i] = (float)kchi[i];
  CUDA_TRY(be, cudaMemcpy(c->kchi, k, sizeof k, cudaMemcpyHostToDevice), "uploading the load");
  return VOX_OK;
}

vox_status cell_zero_field(vox_backend *be, vox_cell *c, vox_vec *u) {
  (void)c;
  CUDA_TRY(be, cudaMemset(u->data, 0, vox_vec_bytes(u->n, u->scalar)), "zeroing a cell field");
  return VOX_OK;
}

vox_status read_sum(vox_backend *be, vox_cell *c, double *out) {
  CUDA_TRY(be, cudaMemcpy(out, c->sum, sizeof *out, cudaMemcpyDeviceToHost), "reading a sum");
  return VOX_OK;
}

vox_status cell_load_norm(vox_backend *be, vox_cell *c, double *ff) {
  const cell_level &l0 = c->level[0];
  CUDA_TRY(be, cudaMemset(c->sum, 0, sizeof(double)), "clearing a sum");
  load_norm_kernel<<<blocks_for(l0.nodes), 128>>>(l0.dims, c->moduli, c->kchi, l0.nodes, c->sum);
  CUDA_LAUNCHED(be, "the load's norm");
  return read_sum(be, c, ff);
}

vox_status cell_smooth(vox_backend *be, vox_cell *c, int level, int backward) {
  const cell_level &lv = c->level[level];
  const int64_t per_colour = lv.nodes / 8;
  const level_view v = view(c, level);
  for (int s = 0; s < 8; s++) {
    smooth_kernel<<<blocks_for(per_colour), 128>>>(v, lv.x, backward ? 7 - s : s, per_colour);
    CUDA_LAUNCHED(be, "a Gauss-Seidel colour");
  }
  return VOX_OK;
}

vox_status cell_clear(vox_backend *be, vox_cell *c) {
  CUDA_TRY(be, cudaMemset(c->level[0].x, 0, 3 * (size_t)c->level[0].nodes * sizeof(float)),
           "clearing the V-cycle's iterate");
  return VOX_OK;
}

vox_status clear_sum(vox_backend *be, vox_cell *c) {
  CUDA_TRY(be, cudaMemset(c->sum, 0, CG_SUMS * sizeof(double)), "clearing a sum");
  return VOX_OK;
}

vox_status cell_cg_residual(vox_backend *be, vox_cell *c, const vox_vec *u, double *rr) {
  const cell_level &l0 = c->level[0];
  field_load_kernel<<<blocks_for(l0.nodes), 128>>>(l0.dims, (const uint16_t *)u->raw, l0.x, l0.nodes);
  CUDA_LAUNCHED(be, "widening a cell field");
  TRY(clear_sum(be, c));
  fine_product_kernel<<<blocks_for(l0.nodes), 128>>>(view(c, 0), l0.x, l0.b, 1, l0.nodes, c->sum);
  CUDA_LAUNCHED(be, "the cell's CG residual");
  return read_sum(be, c, rr);
}

vox_status cell_cg_direction(vox_backend *be, vox_cell *c, double rz_old, double *rz) {
  const cell_level &l0 = c->level[0];
  const size_t n = 3 * (size_t)l0.nodes;
  TRY(clear_sum(be, c));
  direction_sums_kernel<<<vox_cuda_grid(n), VOX_CUDA_THREADS>>>(n, l0.b, l0.x, c->sum);
  CUDA_LAUNCHED(be, "the cell's r.z");
  double sums[CG_SUMS];
  CUDA_TRY(be, cudaMemcpy(sums, c->sum, sizeof sums, cudaMemcpyDeviceToHost), "reading sums");
  double mean[3];
  *rz = vox_cell_projected_rz(sums, l0.nodes, mean);
  const float beta = rz_old != 0 ? (float)(*rz / rz_old) : 0.0f;
  const float3 m = make_float3((float)mean[0], (float)mean[1], (float)mean[2]);
  direction_kernel<<<vox_cuda_grid(n), VOX_CUDA_THREADS>>>(n, l0.x, m, beta, c->p);
  CUDA_LAUNCHED(be, "the cell's CG direction");
  return VOX_OK;
}

vox_status cell_cg_product(vox_backend *be, vox_cell *c, double *pq) {
  const cell_level &l0 = c->level[0];
  TRY(clear_sum(be, c));
  fine_product_kernel<<<blocks_for(l0.nodes), 128>>>(view(c, 0), c->p, l0.x, 0, l0.nodes, c->sum);
  CUDA_LAUNCHED(be, "the cell's A p");
  return read_sum(be, c, pq);
}

vox_status cell_cg_update(vox_backend *be, vox_cell *c, double alpha, vox_vec *u, double *rr) {
  const cell_level &l0 = c->level[0];
  const size_t n = 3 * (size_t)l0.nodes;
  const int64_t images = (int64_t)(l0.dims.nx + 1) * (l0.dims.ny + 1) * (l0.dims.nz + 1);
  field_update_kernel<<<blocks_for(images), 128>>>(l0.dims, (float)alpha, c->p, (uint16_t *)u->raw, images);
  CUDA_LAUNCHED(be, "the cell field's update");
  TRY(clear_sum(be, c));
  cg_update_kernel<<<vox_cuda_grid(n), VOX_CUDA_THREADS>>>(n, (float)alpha, l0.x, l0.b, c->sum);
  CUDA_LAUNCHED(be, "the cell's CG update");
  return read_sum(be, c, rr);
}

/* Slab by slab (cell_ops.h): a launch for the residual of the slab's fine
 * planes into c->slab, one for the restriction of its coarse planes. */
vox_status cell_restrict(vox_backend *be, vox_cell *c, int level) {
  const cell_level &f = c->level[level], &lv = c->level[level + 1];
  const level_view v = view(c, level);
  const int64_t plane = (int64_t)lv.dims.nx * lv.dims.ny;
  for (int k0 = 0; k0 < lv.dims.nz; k0 += f.slab) {
    int k1, z0;
    const vox_cell_dims slab = vox_cell_slab_at(f.dims, lv.dims.nz, f.slab, k0, &k1, &z0);
    const int64_t nodes = (int64_t)slab.nx * slab.ny * slab.nz, count = (k1 - k0) * plane;
    residual_kernel<<<blocks_for(nodes), 128>>>(v, f.x, slab, z0, c->slab, nodes);
    CUDA_LAUNCHED(be, "the cell residual");
    restrict_kernel<<<blocks_for(count), 128>>>(f.dims, c->slab, z0, lv.dims, lv.b, lv.x,
                                                k0 * plane, count);
    CUDA_LAUNCHED(be, "the cell restriction");
  }
  return VOX_OK;
}

vox_status cell_prolong(vox_backend *be, vox_cell *c, int level) {
  const cell_level &lv = c->level[level], &cc = c->level[level + 1];
  prolong_kernel<<<blocks_for(lv.nodes), 128>>>(cc.dims, cc.x, lv.dims, lv.x, lv.nodes);
  CUDA_LAUNCHED(be, "the cell prolongation");
  return VOX_OK;
}

vox_status cell_coarsest_solve(vox_backend *be, vox_cell *c) {
  const cell_level &lv = c->level[c->n_levels - 1];
  const int64_t n = 3 * lv.nodes;
  coarsest_kernel<<<blocks_for(n), 128>>>(c->pinv, lv.b, lv.x, n);
  CUDA_LAUNCHED(be, "the coarsest cell solve");
  return VOX_OK;
}

} // namespace

extern "C" const vox_cell_ops vox_cuda_cell_ops = {
    cell_create,       cell_destroy,    cell_release,          cell_hold,
    cell_set_moduli,   cell_galerkin,   cell_stencil_download, cell_coarsest_upload,
    cell_set_load,     cell_zero_field, cell_load_norm,        cell_cg_residual,
    cell_cg_direction, cell_cg_product, cell_cg_update,        cell_smooth,
    cell_restrict,     cell_clear,      cell_prolong,          cell_coarsest_solve,
};
