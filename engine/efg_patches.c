/* SPDX-License-Identifier: BSD-3-Clause */
/* Additive Schwarz on the background cells' node patches (efg_patches.h). */
#include "efg_patches.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "voxfe/context.h"

void vox_efg_patches_free(vox_efg_patches *p) {
  free(p->node);
  free(p->block);
  free(p->node_patch);
  memset(p, 0, sizeof *p);
}

vox_status vox_efg_patches_init(vox_context *ctx, const vox_efg_model *efg, const vox_bsr *pattern,
                                vox_efg_patches *p) {
  memset(p, 0, sizeof *p);
  const vox_efg_nodes *nodes = &efg->nodes;
  const size_t n = efg->n_cells, nn = nodes->n;
  if (vox_bsr_blocks(pattern) >= UINT32_MAX)
    return vox_error(ctx, VOX_ERR_UNSUPPORTED,
                     "element-free Galerkin: the stiffness matrix has too many blocks (%zu) for "
                     "the patch preconditioner",
                     vox_bsr_blocks(pattern));
  p->n = n;
  p->n_nodes = nn;
  p->node = malloc((n ? n : 1) * VOX_EFG_PATCH_NODES * sizeof *p->node);
  p->block = malloc((n ? n : 1) * 64 * sizeof *p->block);
  p->node_patch = malloc((nn ? nn : 1) * VOX_EFG_PATCH_NODES * sizeof *p->node_patch);
  if (!p->node || !p->block || !p->node_patch) {
    vox_efg_patches_free(p);
    return vox_error(ctx, VOX_ERR_NO_MEMORY,
                     "element-free Galerkin: out of memory (patch preconditioner)");
  }
  const int64_t nx = nodes->grid.nx, ny = nodes->grid.ny;
  ptrdiff_t missing = -1;
#pragma omp parallel for schedule(static) reduction(max : missing)
  for (ptrdiff_t c = 0; c < (ptrdiff_t)n; c++) {
    const int64_t e = efg->cell_voxel[c];
    const int64_t i = e % nx, j = (e / nx) % ny, k = e / (nx * ny);
    int32_t *corner = p->node + VOX_EFG_PATCH_NODES * (size_t)c;
    for (int a = 0; a < VOX_EFG_PATCH_NODES; a++) {
      const int64_t g = ((k + (a >> 2)) * (ny + 1) + j + ((a >> 1) & 1)) * (nx + 1) + i + (a & 1);
      corner[a] = nodes->field[g];
    }
    for (int a = 0; a < VOX_EFG_PATCH_NODES; a++)
      for (int b = 0; b < VOX_EFG_PATCH_NODES; b++) {
        const ptrdiff_t at = corner[a] < 0 || corner[b] < 0
                                 ? -1
                                 : vox_bsr_find_block(pattern, corner[a], corner[b]);
        if (at < 0) missing = c;
        p->block[64 * (size_t)c + 8 * a + b] = at < 0 ? 0 : (uint32_t)at;
      }
  }
  if (missing >= 0) {
    vox_efg_patches_free(p);
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "element-free Galerkin: background cell %td's corners do not all couple in "
                     "the stiffness pattern",
                     missing);
  }
  /* each node's patches in ascending order: the patches are visited in
   * order, each adds itself to its corners' lists */
  for (size_t i = 0; i < nn * VOX_EFG_PATCH_NODES; i++) p->node_patch[i] = -1;
  for (size_t c = 0; c < n; c++)
    for (int a = 0; a < VOX_EFG_PATCH_NODES; a++) {
      int32_t *list = p->node_patch + VOX_EFG_PATCH_NODES * (size_t)p->node[8 * c + a];
      int s = 0;
      while (list[s] >= 0) s++; /* a node is the corner of at most 8 cells */
      list[s] = (int32_t)(8 * c + (size_t)a);
    }
  return VOX_OK;
}

int vox_efg_patch_invert(double *a, double *inverse) {
  enum { N = VOX_EFG_PATCH_DOFS };
  /* a = L L^T, L in a's lower triangle (column by column, right-looking) */
  for (int k = 0; k < N; k++) {
    const double pivot = a[N * k + k];
    if (!(pivot > 0)) return 0;
    const double l = sqrt(pivot);
    a[N * k + k] = l;
    for (int i = k + 1; i < N; i++) a[N * i + k] /= l;
    for (int j = k + 1; j < N; j++)
      for (int i = j; i < N; i++) a[N * i + j] -= a[N * i + k] * a[N * j + k];
  }
  for (int c = 0; c < N; c++) {
    double x[N];
    vox_efg_patch_inverse_column(a, c, x);
    for (int i = 0; i < N; i++) inverse[N * i + c] = x[i];
  }
  return 1;
}

vox_status vox_efg_patches_factor(vox_context *ctx, const vox_efg_patches *p, const double *kval,
                                  double *inverse) {
  ptrdiff_t failed = -1;
#pragma omp parallel for schedule(static) reduction(max : failed)
  for (ptrdiff_t c = 0; c < (ptrdiff_t)p->n; c++) {
    double a[VOX_EFG_PATCH_ENTRIES];
    const uint32_t *block = p->block + 64 * (size_t)c;
    for (int na = 0; na < 8; na++)
      for (int nb = 0; nb < 8; nb++) {
        const double *kb = kval + 9 * (size_t)block[8 * na + nb];
        for (int i = 0; i < 3; i++)
          for (int j = 0; j < 3; j++)
            a[VOX_EFG_PATCH_DOFS * (3 * na + i) + 3 * nb + j] = kb[3 * i + j];
      }
    if (!vox_efg_patch_invert(a, inverse + VOX_EFG_PATCH_ENTRIES * (size_t)c)) failed = c;
  }
  if (failed >= 0)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "element-free Galerkin: the stiffness block of the patch at field node %d "
                     "is not positive definite",
                     (int)p->node[8 * (size_t)failed]);
  return VOX_OK;
}

void vox_efg_patches_apply(const vox_efg_patches *p, const double *inverse, const double *r,
                           double *z, double *work) {
#pragma omp parallel for schedule(static)
  for (ptrdiff_t c = 0; c < (ptrdiff_t)p->n; c++) {
    double rc[VOX_EFG_PATCH_DOFS];
    const int32_t *corner = p->node + 8 * (size_t)c;
    for (int a = 0; a < 8; a++)
      for (int i = 0; i < 3; i++) rc[3 * a + i] = r[3 * (size_t)corner[a] + i];
    const double *inv = inverse + VOX_EFG_PATCH_ENTRIES * (size_t)c;
    double *y = work + VOX_EFG_PATCH_DOFS * (size_t)c;
    for (int i = 0; i < VOX_EFG_PATCH_DOFS; i++) {
      double s = 0;
      for (int j = 0; j < VOX_EFG_PATCH_DOFS; j++) s += inv[VOX_EFG_PATCH_DOFS * i + j] * rc[j];
      y[i] = s;
    }
  }
#pragma omp parallel for schedule(static)
  for (ptrdiff_t i = 0; i < (ptrdiff_t)p->n_nodes; i++) {
    const int32_t *list = p->node_patch + 8 * (size_t)i;
    double s0 = 0, s1 = 0, s2 = 0;
    for (int s = 0; s < 8 && list[s] >= 0; s++) {
      const double *y = work + 3 * (size_t)list[s]; /* patch c's corner a: 24 c + 3 a */
      s0 += y[0], s1 += y[1], s2 += y[2];
    }
    z[3 * i] = s0, z[3 * i + 1] = s1, z[3 * i + 2] = s2;
  }
}
