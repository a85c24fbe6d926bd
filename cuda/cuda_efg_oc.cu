/* SPDX-License-Identifier: BSD-3-Clause */
/* The EFG path's optimality-criteria update on the GPU (cuda_efg_oc.cuh).
 *
 * The search for the multiplier takes 6-15 volume sums of a few tens of
 * thousands of nodes; as a kernel and a wait for the host each, the waits
 * would be the update's time. Here one cooperative kernel runs the whole
 * update: every block sums its nodes, writes its partial sum, waits at a
 * grid-wide barrier, then adds all blocks' partials in block order, so
 * that every thread of the grid holds the same total and takes the same
 * next step of the shared search (efg_oc.h). The partials alternate
 * between two slots: a block writes pass k + 1's only after the barrier of
 * pass k, which every block reaches after reading pass k - 1's. */
#include <cooperative_groups.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_efg_oc.cuh"
#include "efg_sensitivity.h"

namespace cg = cooperative_groups;

enum { OC_THREADS = 256, OC_WARPS = OC_THREADS / 32 };

/* The partials' slots, gridDim.x doubles each: the search's two, the
 * largest B and rho's volume, the largest change. */
enum { SLOT_PASS, SLOT_B_MAX = 2, SLOT_VOLUME, SLOT_CHANGE, SLOTS };

struct oc_args {
  vox_efg_oc_options o;
  size_t n;
  const double *rho, *dc, *dv;
  const uint8_t *design;
  double *base, *lo, *hi, *rho_new, *partial;
  vox_efg_oc_result *result;
};

static __device__ __forceinline__ double combine(double a, double b, bool max) {
  return max ? fmax(a, b) : a + b;
}

static __device__ __forceinline__ double warp_reduce(double v, bool max) {
  for (int k = 16; k > 0; k /= 2) v = combine(v, __shfl_down_sync(0xffffffffu, v, k), max);
  return v;
}

/* The block's sum (or maximum, of values >= 0) of v, in a fixed order, to
 * every thread. */
static __device__ double block_reduce(double v, bool max, double *shared) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  v = warp_reduce(v, max);
  __syncthreads(); /* the last call's readers are done with shared */
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = warp_reduce(lane < OC_WARPS ? shared[lane] : 0, max);
    if (lane == 0) shared[OC_WARPS] = v;
  }
  __syncthreads();
  return shared[OC_WARPS];
}

/* The grid's total of slot s: the block's v written there, the barrier,
 * then the blocks' values added in block order by every block alike. */
static __device__ double grid_reduce(cg::grid_group &grid, double v, bool max, double *partial,
                                     int s, double *shared) {
  v = block_reduce(v, max, shared);
  if (threadIdx.x == 0) partial[(size_t)s * gridDim.x + blockIdx.x] = v;
  grid.sync();
  if (threadIdx.x < 32) {
    double t = 0;
    for (unsigned b = threadIdx.x; b < gridDim.x; b += 32)
      t = combine(t, partial[(size_t)s * gridDim.x + b], max);
    t = warp_reduce(t, max);
    if (threadIdx.x == 0) shared[OC_WARPS + 1] = t;
  }
  __syncthreads();
  return shared[OC_WARPS + 1];
}

static __global__ void __launch_bounds__(OC_THREADS) oc_kernel(oc_args a) {
  __shared__ double shared[OC_WARPS + 2];
  cg::grid_group grid = cg::this_grid();
  const vox_efg_oc_options o = a.o;
  double b_max = 0, volume = 0;
  VOX_GRID_STRIDE(i, a.n) {
    double base, lo, hi;
    b_max = fmax(b_max, vox_efg_oc_node(&o, a.rho[i], a.dc[i], a.dv[i], a.design[i], &base,
                                        &lo, &hi));
    a.base[i] = base, a.lo[i] = lo, a.hi[i] = hi;
    volume += a.dv[i] * a.rho[i];
  }
  b_max = grid_reduce(grid, b_max, true, a.partial, SLOT_B_MAX, shared);
  volume = grid_reduce(grid, volume, false, a.partial, SLOT_VOLUME, shared);
  vox_efg_oc_search s;
  vox_efg_oc_search_begin(&s, &o, b_max);
  double t;
  int passes = 0;
  while (vox_efg_oc_search_next(&s, &t)) {
    const double sc = exp(-o.eta * t);
    double v = 0;
    VOX_GRID_STRIDE(i, a.n) {
      v += a.dv[i] * vox_efg_oc_density(a.base[i], a.lo[i], a.hi[i], sc, o.q, o.rmin);
    }
    v = grid_reduce(grid, v, false, a.partial, SLOT_PASS + passes % 2, shared);
    vox_efg_oc_search_take(&s, v - o.target);
    passes++;
  }
  const double sc = exp(-o.eta * s.hi);
  double change = 0;
  VOX_GRID_STRIDE(i, a.n) {
    const double x = vox_efg_oc_density(a.base[i], a.lo[i], a.hi[i], sc, o.q, o.rmin);
    a.rho_new[i] = x;
    change = fmax(change, fabs(x - a.rho[i]));
  }
  change = grid_reduce(grid, change, true, a.partial, SLOT_CHANGE, shared);
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    a.result->log_lambda = s.hi;
    a.result->volume = volume;
    a.result->change = change;
    a.result->passes = passes;
  }
}

/* The blocks' sums of d (1 - d) over their design cells; then one warp
 * adds them in block order. */
static __global__ void non_discreteness_kernel(size_t n_cells, const uint8_t *__restrict__ design,
                                               const double *__restrict__ rho_gauss,
                                               double *__restrict__ partial) {
  __shared__ double shared[OC_WARPS + 2];
  double v = 0;
  VOX_GRID_STRIDE(c, n_cells) {
    if (!design[c]) continue;
    double d = 0;
    for (int q = 0; q < 8; q++) d += rho_gauss[8 * c + q];
    d /= 8;
    v += d * (1 - d);
  }
  v = block_reduce(v, false, shared);
  if (threadIdx.x == 0) partial[blockIdx.x] = v;
}

static __global__ void sum_kernel(const double *__restrict__ partial, unsigned n,
                                  double *__restrict__ sum) {
  double t = 0;
  for (unsigned b = threadIdx.x; b < n; b += 32) t += partial[b];
  t = warp_reduce(t, false);
  if (threadIdx.x == 0) *sum = t;
}

/* The non-discreteness kernel's blocks (and so its partials). */
enum { ND_BLOCKS = 512 };

vox_status vox_cuda_efg_oc_create(vox_backend *be, const vox_efg_model *efg, vox_cuda_efg_oc *t) {
  memset(t, 0, sizeof *t);
  const size_t n = efg->nodes.n, nc = efg->n_cells;
  t->n_nodes = n, t->n_cells = nc;
  int cooperative = 0, per_sm = 0;
  const cudaDeviceProp *prop = &vox_cuda(be)->prop;
  CUDA_TRY(be, cudaDeviceGetAttribute(&cooperative, cudaDevAttrCooperativeLaunch,
                                      vox_cuda(be)->device),
           "asking for cooperative launches");
  if (!cooperative)
    return vox_error(be->ctx, VOX_ERR_UNSUPPORTED,
                     "element-free Galerkin on CUDA: the device cannot launch cooperative "
                     "kernels (the OC update's)");
  CUDA_TRY(be, cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, oc_kernel, OC_THREADS, 0),
           "the EFG OC update's occupancy");
  if (per_sm < 1)
    return vox_error(be->ctx, VOX_ERR_UNSUPPORTED,
                     "element-free Galerkin on CUDA: the OC update's kernel does not fit an SM");
  /* a block an SM at most (all resident, as a grid-wide barrier needs): the
   * nodes are few, and every block reads every block's partial after each
   * barrier */
  const size_t most = (size_t)prop->multiProcessorCount;
  const size_t want = (n + OC_THREADS - 1) / OC_THREADS;
  t->blocks = (unsigned)(want < 1 ? 1 : want < most ? want : most);
  uint8_t *h_design = (uint8_t *)malloc(n + nc + 1);
  double *h_dv = (double *)malloc((n ? n : 1) * sizeof *h_dv);
  vox_status s = VOX_OK;
  if (!h_design || !h_dv)
    s = vox_error(be->ctx, VOX_ERR_NO_MEMORY, "element-free Galerkin: out of memory (OC tables)");
  if (s == VOX_OK) {
    vox_efg_volume_sensitivity(efg, h_dv);
    for (size_t i = 0; i < n; i++) h_design[i] = efg->node_role[i] == VOX_ROLE_DESIGN;
    for (size_t c = 0; c < nc; c++) h_design[n + c] = efg->cell_role[c] == VOX_ROLE_DESIGN;
  }
  struct {
    void **p;
    size_t bytes;
  } const want_arrays[] = {
      {(void **)&t->dv, n * sizeof(double)},
      {(void **)&t->design, n},
      {(void **)&t->cell_design, nc},
      {(void **)&t->work, 3 * n * sizeof(double)},
      {(void **)&t->partial, (SLOTS * (size_t)t->blocks + ND_BLOCKS + 1) * sizeof(double)},
      {(void **)&t->result, sizeof(vox_efg_oc_result)}};
  for (size_t i = 0; s == VOX_OK && i < sizeof want_arrays / sizeof want_arrays[0]; i++) {
    s = vox_cuda_alloc(be, want_arrays[i].p, want_arrays[i].bytes ? want_arrays[i].bytes : 1,
                       "the EFG OC update's tables");
    t->bytes += want_arrays[i].bytes;
  }
  if (s == VOX_OK) s = vox_cuda_check(be, cudaMemcpy(t->dv, h_dv, n * sizeof *h_dv,
                                                     cudaMemcpyHostToDevice),
                                      "uploading the EFG volume sensitivities");
  if (s == VOX_OK) s = vox_cuda_check(be, cudaMemcpy(t->design, h_design, n,
                                                     cudaMemcpyHostToDevice),
                                      "uploading the EFG design nodes");
  if (s == VOX_OK) s = vox_cuda_check(be, cudaMemcpy(t->cell_design, h_design + n, nc,
                                                     cudaMemcpyHostToDevice),
                                      "uploading the EFG design cells");
  free(h_design);
  free(h_dv);
  return s;
}

void vox_cuda_efg_oc_destroy(vox_cuda_efg_oc *t) {
  void *p[] = {t->dv, t->design, t->cell_design, t->work, t->partial, t->result};
  for (size_t i = 0; i < sizeof p / sizeof p[0]; i++) vox_cuda_free(p[i]);
  memset(t, 0, sizeof *t);
}

vox_status vox_cuda_efg_oc_update(vox_backend *be, vox_cuda_efg_oc *t, const vox_efg_oc_options *o,
                                  const double *rho, const double *dc, double *rho_new,
                                  vox_efg_oc_result *res) {
  const size_t n = t->n_nodes;
  oc_args a = {*o,          n,          rho,   dc,      t->dv,      t->design, t->work,
               t->work + n, t->work + 2 * n, rho_new, t->partial, t->result};
  void *args[] = {&a};
  CUDA_TRY(be,
           cudaLaunchCooperativeKernel((const void *)oc_kernel, t->blocks, OC_THREADS, args, 0,
                                       vox_cuda_stream(be)),
           "the EFG OC update");
  CUDA_TRY(be, cudaMemcpy(res, t->result, sizeof *res, cudaMemcpyDeviceToHost),
           "the EFG OC update's result");
  return VOX_OK;
}

vox_status vox_cuda_efg_non_discreteness(vox_backend *be, vox_cuda_efg_oc *t,
                                         const double *rho_gauss, double *sum) {
  const unsigned most = ND_BLOCKS, blocks = vox_cuda_grid(t->n_cells) < most
                                                   ? vox_cuda_grid(t->n_cells)
                                                   : most;
  double *partial = t->partial + SLOTS * (size_t)t->blocks;
  non_discreteness_kernel<<<blocks, OC_THREADS, 0, vox_cuda_stream(be)>>>(
      t->n_cells, t->cell_design, rho_gauss, partial);
  CUDA_LAUNCHED(be, "the EFG measure of non-discreteness");
  sum_kernel<<<1, 32, 0, vox_cuda_stream(be)>>>(partial, blocks, partial + ND_BLOCKS);
  CUDA_LAUNCHED(be, "the EFG measure of non-discreteness");
  CUDA_TRY(be, cudaMemcpy(sum, partial + ND_BLOCKS, sizeof *sum, cudaMemcpyDeviceToHost),
           "the EFG measure of non-discreteness");
  return VOX_OK;
}
