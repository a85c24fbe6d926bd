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
  free(p->penalty_start);
  free(p->penalty_node);
  free(p->penalty_block_start);
  free(p->penalty_block);
  free(p->penalty_inverse_start);
  free(p->node_penalty_start);
  free(p->node_penalty);
  memset(p, 0, sizeof *p);
}

static int ascending(const void *a, const void *b) {
  const int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

/* Patch q's nodes into list (sorted, without repeats; mark all zero on
 * entry and exit): the support of penalty point q and those of the penalty
 * points at the six grid neighbours of its node. Returns their number. */
static size_t penalty_patch_nodes(const vox_efg_model *efg, const int32_t *point_of_node, size_t q,
                                  uint8_t *mark, int32_t *list) {
  const vox_efg_nodes *nodes = &efg->nodes;
  const int64_t nx = nodes->grid.nx + 1, ny = nodes->grid.ny + 1, nz = nodes->grid.nz + 1;
  const int32_t *ijk = nodes->coord + 3 * (size_t)efg->support_node[q];
  int64_t points[7];
  int n_points = 0;
  points[n_points++] = (int64_t)q;
  for (int axis = 0; axis < 3; axis++)
    for (int side = -1; side <= 1; side += 2) {
      int64_t c[3] = {ijk[0], ijk[1], ijk[2]};
      c[axis] += side;
      if (c[0] < 0 || c[1] < 0 || c[2] < 0 || c[0] >= nx || c[1] >= ny || c[2] >= nz) continue;
      const int32_t f = nodes->field[(c[2] * ny + c[1]) * nx + c[0]];
      if (f >= 0 && point_of_node[f] >= 0) points[n_points++] = point_of_node[f];
    }
  const vox_efg_shapes *sh = &efg->support;
  size_t m = 0;
  for (int k = 0; k < n_points; k++)
    for (size_t a = sh->start[points[k]]; a < sh->start[points[k] + 1]; a++)
      if (!mark[sh->node[a]]) mark[sh->node[a]] = 1, list[m++] = sh->node[a];
  for (size_t a = 0; a < m; a++) mark[list[a]] = 0;
  qsort(list, m, sizeof *list, ascending);
  return m;
}

/* What the dense patches' node lists are made from. */
typedef struct dense_source {
  const vox_efg_model *efg;
  const int32_t *point_of_node; /* the penalty point at each field node, or -1 */
  const uint8_t *held;          /* the nodes of the penalty points' patches (NULL: none) */
  const int64_t *block;         /* the blocks' patches: block b at grid cell (2 I, 2 J, 2 K),
                                   b = (K by + J) bx + I */
  int64_t bx, by;
  size_t n_blocks;
} dense_source;

/* Block b's field nodes into list, ascending: the grid nodes of its cells
 * (27, fewer at an odd grid's last block), less those a penalty point's
 * patch holds. Returns their number. */
static size_t block_patch_nodes(const dense_source *src, int64_t b, int32_t *list) {
  const vox_efg_nodes *nodes = &src->efg->nodes;
  const int64_t nx = nodes->grid.nx, ny = nodes->grid.ny, nz = nodes->grid.nz;
  const int64_t i0 = 2 * (b % src->bx), j0 = 2 * (b / src->bx % src->by),
                k0 = 2 * (b / (src->bx * src->by));
  size_t m = 0;
  for (int64_t k = k0; k <= k0 + 2 && k <= nz; k++)
    for (int64_t j = j0; j <= j0 + 2 && j <= ny; j++)
      for (int64_t i = i0; i <= i0 + 2 && i <= nx; i++) {
        const int32_t f = nodes->field[(k * (ny + 1) + j) * (nx + 1) + i];
        if (f >= 0 && !(src->held && src->held[f])) list[m++] = f;
      }
  qsort(list, m, sizeof *list, ascending); /* field nodes need not follow the grid's order */
  return m;
}

/* Dense patch q's nodes into list (sorted): a block's, then a penalty
 * point's. */
static size_t dense_patch_nodes(const dense_source *src, size_t q, uint8_t *mark, int32_t *list) {
  if (q < src->n_blocks) return block_patch_nodes(src, src->block[q], list);
  return penalty_patch_nodes(src->efg, src->point_of_node, q - src->n_blocks, mark, list);
}

/* The dense patches of efg on K's pattern (efg_patches.h): with size 2
 * the blocks' (those with a node left), with penalty_patches the penalty
 * points'. */
static vox_status dense_patches_init(vox_context *ctx, const vox_efg_model *efg,
                                     const vox_bsr *pattern, int size, int penalty_patches,
                                     vox_efg_patches *p) {
  const vox_efg_nodes *nodes = &efg->nodes;
  const size_t np = penalty_patches ? efg->support.n_points : 0, nn = nodes->n;
  const int64_t bx = (nodes->grid.nx + 1) / 2, by = (nodes->grid.ny + 1) / 2,
                bz = (nodes->grid.nz + 1) / 2, candidates = size == 2 ? bx * by * bz : 0;
  const size_t cap = 7 * efg->nodes.max_support > 27 ? 7 * efg->nodes.max_support : 27;
  dense_source src = {.efg = efg, .bx = bx, .by = by};
  int32_t *point_of_node = malloc((nn ? nn : 1) * sizeof *point_of_node);
  int32_t *list = malloc(cap * sizeof *list);
  uint8_t *mark = calloc(nn ? nn : 1, 1), *held = NULL;
  int64_t *block = malloc((size_t)(candidates ? candidates : 1) * sizeof *block);
  vox_status s = VOX_OK;
  if (!point_of_node || !list || !mark || !block) goto out_of_memory;
  for (size_t i = 0; i < nn; i++) point_of_node[i] = -1;
  for (size_t q = 0; q < np; q++) point_of_node[efg->support_node[q]] = (int32_t)q;
  src.point_of_node = point_of_node;
  if (candidates && np) { /* the union of the penalty patches: every point's support */
    if (!(held = calloc(nn ? nn : 1, 1))) goto out_of_memory;
    for (size_t a = 0; a < efg->support.start[efg->support.n_points]; a++)
      held[efg->support.node[a]] = 1;
    src.held = held;
  }
  for (int64_t b = 0; b < candidates; b++)
    if (block_patch_nodes(&src, b, list)) block[src.n_blocks++] = b;
  src.block = block;
  const size_t n = src.n_blocks + np;
  if (!n) goto done;
  p->penalty_start = calloc(n + 1, sizeof *p->penalty_start);
  p->penalty_block_start = calloc(n + 1, sizeof *p->penalty_block_start);
  p->penalty_inverse_start = calloc(n + 1, sizeof *p->penalty_inverse_start);
  p->node_penalty_start = calloc(nn + 1, sizeof *p->node_penalty_start);
  if (!p->penalty_start || !p->penalty_block_start || !p->penalty_inverse_start ||
      !p->node_penalty_start)
    goto out_of_memory;
  /* the sizes, then the lists */
  for (size_t q = 0; q < n; q++) {
    const size_t m = dense_patch_nodes(&src, q, mark, list);
    if (3 * m > p->penalty_max_dofs) p->penalty_max_dofs = 3 * m;
    p->penalty_start[q + 1] = p->penalty_start[q] + m;
    p->penalty_block_start[q + 1] = p->penalty_block_start[q] + m * m;
    p->penalty_inverse_start[q + 1] = p->penalty_inverse_start[q] + 9 * m * m;
    for (size_t a = 0; a < m; a++) p->node_penalty_start[list[a] + 1]++;
  }
  const size_t slots = p->penalty_start[n];
  if (slots >= UINT32_MAX) {
    s = vox_error(ctx, VOX_ERR_UNSUPPORTED,
                  "element-free Galerkin: the dense patches hold too many nodes (%zu)", slots);
    goto done;
  }
  p->penalty_node = malloc((slots ? slots : 1) * sizeof *p->penalty_node);
  p->penalty_block = malloc((p->penalty_block_start[n] + 1) * sizeof *p->penalty_block);
  p->node_penalty = malloc((slots ? slots : 1) * sizeof *p->node_penalty);
  if (!p->penalty_node || !p->penalty_block || !p->node_penalty) goto out_of_memory;
  for (size_t i = 0; i < nn; i++) p->node_penalty_start[i + 1] += p->node_penalty_start[i];
  for (size_t q = 0; q < n; q++) {
    const size_t m = dense_patch_nodes(&src, q, mark, list);
    memcpy(p->penalty_node + p->penalty_start[q], list, m * sizeof *list);
  }
  uint32_t *fill = (uint32_t *)point_of_node; /* each node's next slot; point_of_node is done */
  for (size_t i = 0; i < nn; i++) fill[i] = p->node_penalty_start[i];
  for (size_t a = 0; a < slots; a++) p->node_penalty[fill[p->penalty_node[a]]++] = (uint32_t)a;
#pragma omp parallel for schedule(dynamic)
  for (ptrdiff_t q = 0; q < (ptrdiff_t)n; q++) {
    const size_t m = p->penalty_start[q + 1] - p->penalty_start[q];
    const int32_t *nd = p->penalty_node + p->penalty_start[q];
    uint32_t *pos = p->penalty_block + p->penalty_block_start[q];
    for (size_t a = 0; a < m; a++)
      for (size_t b = 0; b < m; b++) {
        const ptrdiff_t at = vox_bsr_find_block(pattern, nd[a], nd[b]);
        pos[m * a + b] = at < 0 ? VOX_EFG_NO_BLOCK : (uint32_t)at;
      }
  }
  p->n_penalty = n;
  p->n_blocks = src.n_blocks;
  goto done;
out_of_memory:
  s = vox_error(ctx, VOX_ERR_NO_MEMORY,
                "element-free Galerkin: out of memory (the dense patches of the smoother)");
done:
  free(point_of_node);
  free(list);
  free(mark);
  free(held);
  free(block);
  return s;
}

vox_status vox_efg_patches_init(vox_context *ctx, const vox_efg_model *efg, const vox_bsr *pattern,
                                int size, int penalty_patches, vox_efg_patches *p) {
  memset(p, 0, sizeof *p);
  p->penalty_weight = 1;
  if (size != 1 && size != 2)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "element-free Galerkin: patches of %d cells a side (1 or 2)", size);
  const vox_efg_nodes *nodes = &efg->nodes;
  const size_t n = size == 1 ? efg->n_cells : 0, nn = nodes->n;
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
  const vox_status s = dense_patches_init(ctx, efg, pattern, size, penalty_patches, p);
  if (s != VOX_OK) vox_efg_patches_free(p);
  return s;
}

int vox_efg_sweep_invert(int n, double *a, double *row_k, double *col_k) {
  for (int k = 0; k < n; k++) {
    const double pivot = a[(size_t)n * k + k];
    if (!(pivot > 0)) return 0;
    for (int j = 0; j < n; j++) {
      row_k[j] = j == k ? 1 / pivot : a[(size_t)n * k + j] / pivot;
      col_k[j] = a[(size_t)n * j + k];
    }
    for (int i = 0; i < n; i++)
      for (int j = 0; j < n; j++) {
        double *e = a + (size_t)n * i + j;
        *e = vox_efg_sweep_entry(k, i, j, *e, row_k, col_k);
      }
  }
  return 1;
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

vox_status vox_efg_dense_patch_failed(vox_context *ctx, const vox_efg_patches *p, ptrdiff_t q) {
  if (q < 0) return VOX_OK;
  if ((size_t)q < p->n_blocks)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "element-free Galerkin: the stiffness block of the patch of 2 x 2 x 2 cells "
                     "at field node %d is not positive definite",
                     (int)p->penalty_node[p->penalty_start[q]]);
  return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                   "element-free Galerkin: the stiffness block of the patch of penalty point %td "
                   "is not positive definite",
                   q - (ptrdiff_t)p->n_blocks);
}

vox_status vox_efg_patches_factor(vox_context *ctx, const vox_efg_patches *p, const double *kval,
                                  double *inverse) {
  return vox_efg_patches_factor_kept(ctx, p, kval, 0, NULL, inverse);
}

/* How far a cell's patch's diagonal blocks (of its 64 in block) have
 * moved from reference's (vox_efg_diagonal_drift over its 8 nodes). */
static double patch_drift(const uint32_t *block, const double *kval, const double *reference) {
  double drift = 0;
  for (int na = 0; na < 8; na++)
    drift = fmax(drift,
                 vox_efg_diagonal_drift(kval + 9 * (size_t)block[9 * na], reference + 3 * na));
  return drift;
}

vox_status vox_efg_patches_factor_kept(vox_context *ctx, const vox_efg_patches *p,
                                       const double *kval, double drift, double *reference,
                                       double *inverse) {
  ptrdiff_t failed = -1;
#pragma omp parallel for schedule(static) reduction(max : failed)
  for (ptrdiff_t c = 0; c < (ptrdiff_t)p->n; c++) {
    const uint32_t *block = p->block + 64 * (size_t)c;
    if (reference) {
      double *ref = reference + VOX_EFG_PATCH_DOFS * (size_t)c;
      if (drift > 0 && patch_drift(block, kval, ref) <= drift) continue; /* kept */
      for (int na = 0; na < 8; na++)
        for (int i = 0; i < 3; i++) ref[3 * na + i] = kval[9 * (size_t)block[9 * na] + 4 * i];
    }
    double a[VOX_EFG_PATCH_ENTRIES];
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
  double *penalty_inverse = inverse + VOX_EFG_PATCH_ENTRIES * p->n;
  const size_t most = p->penalty_max_dofs;
  int out_of_memory = 0;
#pragma omp parallel reduction(max : failed, out_of_memory)
  {
    double *row_k = malloc(2 * (most ? most : 1) * sizeof *row_k);
    if (!row_k) out_of_memory = 1;
#pragma omp for schedule(dynamic)
    for (ptrdiff_t q = 0; q < (ptrdiff_t)p->n_penalty; q++) {
      const size_t m = p->penalty_start[q + 1] - p->penalty_start[q], n = 3 * m;
      const uint32_t *block = p->penalty_block + p->penalty_block_start[q];
      double *a = penalty_inverse + p->penalty_inverse_start[q];
      for (size_t na = 0; na < m; na++)
        for (size_t nb = 0; nb < m; nb++) {
          const uint32_t at = block[m * na + nb];
          for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++)
              a[n * (3 * na + i) + 3 * nb + j] =
                  at == VOX_EFG_NO_BLOCK ? 0 : kval[9 * (size_t)at + 3 * i + j];
        }
      if (row_k && !vox_efg_sweep_invert((int)n, a, row_k, row_k + most)) failed = q;
      if ((size_t)q >= p->n_blocks && p->penalty_weight != 1)
        for (size_t e = 0; e < n * n; e++) a[e] *= p->penalty_weight;
    }
    free(row_k);
  }
  if (out_of_memory)
    return vox_error(ctx, VOX_ERR_NO_MEMORY,
                     "element-free Galerkin: out of memory (the dense patches of the smoother)");
  return vox_efg_dense_patch_failed(ctx, p, failed);
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
  if (!p->n_penalty) return;
  const double *penalty_inverse = inverse + VOX_EFG_PATCH_ENTRIES * p->n;
  double *penalty_work = work + VOX_EFG_PATCH_DOFS * p->n;
#pragma omp parallel for schedule(dynamic)
  for (ptrdiff_t q = 0; q < (ptrdiff_t)p->n_penalty; q++) {
    const size_t first = p->penalty_start[q], n = 3 * (p->penalty_start[q + 1] - first);
    const int32_t *nd = p->penalty_node + first;
    const double *inv = penalty_inverse + p->penalty_inverse_start[q];
    double *y = penalty_work + 3 * first;
    for (size_t i = 0; i < n; i++) {
      double s = 0;
      for (size_t j = 0; j < n; j++) s += inv[n * i + j] * r[3 * (size_t)nd[j / 3] + j % 3];
      y[i] = s;
    }
  }
#pragma omp parallel for schedule(static)
  for (ptrdiff_t i = 0; i < (ptrdiff_t)p->n_nodes; i++)
    for (uint32_t k = p->node_penalty_start[i]; k < p->node_penalty_start[i + 1]; k++) {
      const double *y = penalty_work + 3 * (size_t)p->node_penalty[k];
      z[3 * i] += y[0], z[3 * i + 1] += y[1], z[3 * i + 2] += y[2];
    }
}
