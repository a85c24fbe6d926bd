/* SPDX-License-Identifier: BSD-3-Clause */
/* Symmetry enforcement on the device (voxfe/symmetry.h): one thread per
 * element, each orbit averaged and written by its lowest element only
 * (engine/symmetry_group.h, the same code as the CPU's), in place. The
 * group, at most 48 maps of 6 bytes, travels as a kernel argument. The orbit
 * sum adds the same values in the same order as the CPU, so the results are
 * the same bits. Node fields turned about the cell's diagonal: a thread per
 * node. */
#include "cuda_backend.cuh"
#include "symmetry_group.h"

static __global__ void __launch_bounds__(VOX_CUDA_THREADS)
    symmetrize_kernel(vox_symmetry_group g, long long nx, long long ny, long long nz,
                      size_t ne, double *field) {
  VOX_GRID_STRIDE(e, ne) {
    int64_t i, j, k;
    vox_cuda_node_coords(e, nx, ny, nz, i, j, k); /* elements laid out like nodes */
    vox_symmetry_average_orbit(&g, nx, ny, nz, i, j, k, field);
  }
}

vox_status vox_cuda_symmetrize(vox_backend *be, const vox_grid *grid, vox_symmetry symmetry,
                               vox_vec *v) {
  TRY(vox_symmetry_check(be->ctx, grid, symmetry));
  const size_t ne = (size_t)vox_grid_elements(grid);
  if (v->n != ne)
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT,
                     "symmetrize: a vector of %zu values for %zu elements", v->n, ne);
  vox_symmetry_group g;
  vox_symmetry_group_make(symmetry, &g);
  if (g.n <= 1) return VOX_OK; /* the identity alone */
  symmetrize_kernel<<<vox_cuda_grid(ne), VOX_CUDA_THREADS>>>(g, grid->nx, grid->ny, grid->nz, ne,
                                                             v->data);
  CUDA_LAUNCHED(be, "the symmetry kernel");
  return VOX_OK;
}

template <class T>
static __global__ void __launch_bounds__(VOX_CUDA_THREADS)
    turn_field_kernel(int turns, long long n, const T *__restrict__ src, T *__restrict__ dst) {
  VOX_GRID_STRIDE(q, (size_t)(n * n * n)) {
    int64_t i, j, k;
    vox_cuda_node_coords(q, n, n, n, i, j, k);
    const int64_t p = vox_turn_source(turns, n, i, j, k);
#pragma unroll
    for (int c = 0; c < 3; c++) dst[3 * q + (c + turns) % 3] = src[3 * p + c];
  }
}

vox_status vox_cuda_turn_field(vox_backend *be, const vox_grid *grid, int turns,
                               const vox_vec *src, vox_vec *dst) {
  TRY(vox_turn_field_check(be, grid, turns, src, dst));
  const long long n = grid->nx + 1;
  const size_t nodes = (size_t)(n * n * n);
  if (src->scalar == VOX_DOUBLE)
    turn_field_kernel<double><<<vox_cuda_grid(nodes), VOX_CUDA_THREADS, 0, vox_cuda_stream(be)>>>(
        turns, n, (const double *)src->raw, (double *)dst->raw);
  else
    turn_field_kernel<uint16_t><<<vox_cuda_grid(nodes), VOX_CUDA_THREADS, 0,
                                  vox_cuda_stream(be)>>>(turns, n, (const uint16_t *)src->raw,
                                                         (uint16_t *)dst->raw);
  CUDA_LAUNCHED(be, "the field-turning kernel");
  return VOX_OK;
}
