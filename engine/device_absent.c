/* SPDX-License-Identifier: BSD-3-Clause */
/* The GPU side of import/ and export/ (voxfe/device/mesh_fill.h,
 * voxfe/device/isosurface.h) in a build without CUDA: no devices, and each
 * call says how to get them. Built only then; the CUDA backend implements
 * the same functions otherwise. */
#include "voxfe/device/isosurface.h"
#include "voxfe/device/mesh_fill.h"

#include <string.h>

static vox_status built_without_cuda(vox_context *ctx, const char *what) {
  return vox_error(ctx, VOX_ERR_UNSUPPORTED,
                   "%s: this voxfe was built without CUDA (configure with -DVOXFE_CUDA=ON)",
                   what);
}

int vox_gpu_devices(void) { return 0; }

vox_status vox_gpu_mesh_prepare(vox_context *ctx, const double *vertex, int64_t n_vertices,
                                const uint32_t *triangle, int64_t n_triangles,
                                const vox_grid *grid, int bits, vox_prepared_mesh *out) {
  memset(out, 0, sizeof *out);
  return built_without_cuda(ctx, "mesh fill");
}

void vox_gpu_mesh_free(vox_prepared_mesh *m) { memset(m, 0, sizeof *m); }

vox_status vox_gpu_mesh_to_host(vox_context *ctx, const vox_prepared_mesh *device,
                                vox_prepared_mesh *host) {
  memset(host, 0, sizeof *host);
  return built_without_cuda(ctx, "mesh fill");
}

vox_status vox_gpu_mesh_fill(vox_context *ctx, const vox_prepared_mesh *m, int vote,
                             uint32_t *bits, int64_t *count, double *kernel_seconds) {
  return built_without_cuda(ctx, "mesh fill");
}

vox_status vox_gpu_isosurface(vox_context *ctx, const vox_iso_field *f,
                              const vox_cube_cases *cases, const double origin[3],
                              const double voxel_size[3], double **vertex, size_t *n_vertices,
                              int64_t **triangle, size_t *n_triangles,
                              double *kernel_seconds) {
  *vertex = NULL, *n_vertices = 0, *triangle = NULL, *n_triangles = 0;
  return built_without_cuda(ctx, "isosurface");
}
