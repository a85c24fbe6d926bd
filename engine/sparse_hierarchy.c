/* SPDX-License-Identifier: BSD-3-Clause */
/* The levels of the sparse multigrid on the host (sparse_hierarchy.h): active
 * nodes and elements of each level in box order, their moduli, fixed dofs,
 * and the parent words that tie each node to the next coarser level. */
#include "sparse_hierarchy.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "host_memory.h"
#include "multigrid.h"
#include "sparse_split.h"
#include "voxfe/element.h"

static vox_status no_memory(vox_context *ctx, const char *what) {
  return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory for the sparse system (%s)", what);
}

void vox_sparse_level_arrays(vox_sparse_host_level *lv, void **array[VOX_SPARSE_LEVEL_ARRAYS],
                             size_t bytes[VOX_SPARSE_LEVEL_ARRAYS]) {
  const size_t ne = lv->n_elements, nn = lv->n_nodes, nz = (size_t)lv->grid.nz;
  void **const a[VOX_SPARSE_LEVEL_ARRAYS] = {
      (void **)&lv->element_nodes, (void **)&lv->element_nodes_x1, (void **)&lv->element_box,
      (void **)&lv->material,      (void **)&lv->modulus,          (void **)&lv->node_fixed,
      (void **)&lv->node_box,      (void **)&lv->parent,
      (void **)&lv->element_layer_start,
      (void **)&lv->node_layer_start};
  const size_t b[VOX_SPARSE_LEVEL_ARRAYS] = {
      4 * ne * sizeof(int32_t), 4 * ne * sizeof(int32_t), ne * sizeof(int64_t),
      ne,                       ne * sizeof(float),       nn,
      nn * sizeof(int64_t),     nn * sizeof(uint64_t),    (nz + 1) * sizeof(size_t),
      (nz + 2) * sizeof(size_t)};
  for (int i = 0; i < VOX_SPARSE_LEVEL_ARRAYS; i++) array[i] = a[i], bytes[i] = b[i];
}

/* Frees a level's arrays but those `keep` names (a bit per array). */
static void level_free_arrays(vox_sparse_host_level *lv, unsigned keep) {
  void **array[VOX_SPARSE_LEVEL_ARRAYS];
  size_t bytes[VOX_SPARSE_LEVEL_ARRAYS];
  vox_sparse_level_arrays(lv, array, bytes);
  for (int i = 0; i < VOX_SPARSE_LEVEL_ARRAYS; i++) {
    if (keep >> i & 1) continue;
    vox_host_free(*array[i]);
    *array[i] = NULL;
  }
}

static void level_free(vox_sparse_host_level *l) {
  level_free_arrays(l, 0);
  memset(l, 0, sizeof *l);
}

void vox_sparse_hierarchy_trim(vox_sparse_hierarchy *h) {
  for (int l = 0; h->level && l < h->n_levels; l++)
    level_free_arrays(&h->level[l],
                      l == 0 ? 1u << VOX_SPARSE_NODE_FIXED | 1u << VOX_SPARSE_NODE_BOX : 0);
}

void vox_sparse_hierarchy_free(vox_sparse_hierarchy *h) {
  for (int l = 0; h->level && l < h->n_levels; l++) level_free(&h->level[l]);
  free(h->level);
  vox_host_free(h->box_to_node);
  memset(h, 0, sizeof *h);
}

/* The active elements of a box: `label` (level 0) or `box_modulus` > 0. */
static inline int element_active(const uint8_t *label, const float *box_modulus, int64_t e) {
  return label ? label[e] != 0 : box_modulus[e] > 0;
}

/* Numbers the active nodes and elements of one level's box. `full_box`
 * numbers every box node (the coarsest level). `box_to_node` (box nodes)
 * is returned to the caller. */
static vox_status number_level(vox_context *ctx, vox_sparse_host_level *l, const uint8_t *label,
                               const float *box_modulus, int full_box, int32_t **box_to_node) {
  const vox_grid *g = &l->grid;
  const int64_t nx = g->nx, ny = g->ny, nz = g->nz, px = nx + 1, py = ny + 1, pz = nz + 1;
  const int64_t nb = px * py * pz;
  /* zeros, no node marked yet: a large block is a fresh mapping, which
   * reads as zeros without a pass over it */
  int32_t *map = vox_host_calloc((size_t)nb, sizeof *map);
  if (!map) return no_memory(ctx, "node map");
  *box_to_node = map;
  /* the elements of each layer counted, and their nodes marked (benign
   * races: every writer writes 1) */
  l->node_layer_start = vox_host_malloc((size_t)(pz + 1) * sizeof *l->node_layer_start);
  l->element_layer_start =
      vox_host_malloc((size_t)(nz + 1) * sizeof *l->element_layer_start);
  if (!l->node_layer_start || !l->element_layer_start) return no_memory(ctx, "layers");
  size_t *count = l->element_layer_start, *node_count = l->node_layer_start;
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t k = 0; k < nz; k++) {
    size_t c = 0;
    for (int64_t j = 0; j < ny; j++)
      for (int64_t i = 0; i < nx; i++) {
        const int64_t e = (k * ny + j) * nx + i;
        if (!element_active(label, box_modulus, e)) continue;
        c++;
        for (int a = 0; a < 8; a++)
          map[((k + vox_hex8_corner[a][2]) * py + j + vox_hex8_corner[a][1]) * px + i +
              vox_hex8_corner[a][0]] = 1;
      }
    count[k] = c;
  }
  /* the active nodes of each node layer, then the layers' starts (prefix
   * sums), then each layer numbered in box order on its own thread: the
   * same numbers as one pass over the box */
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t k = 0; k < pz; k++) {
    size_t c = 0;
    for (int64_t m = k * px * py; m < (k + 1) * px * py; m++) c += full_box || map[m];
    node_count[k] = c;
  }
  size_t nn = 0, ne = 0;
  for (int64_t k = 0; k <= pz; k++) {
    const size_t c = k < pz ? node_count[k] : 0;
    node_count[k] = nn;
    nn += c;
  }
  for (int64_t k = 0; k <= nz; k++) {
    const size_t c = k < nz ? count[k] : 0;
    count[k] = ne;
    ne += c;
  }
  if (nn > INT32_MAX)
    return vox_error(ctx, VOX_ERR_UNSUPPORTED,
                     "the sparse system holds at most 2^31 nodes a level");
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t k = 0; k < pz; k++) {
    int32_t next = (int32_t)l->node_layer_start[k];
    for (int64_t m = k * px * py; m < (k + 1) * px * py; m++)
      map[m] = full_box || map[m] ? next++ : -1;
  }
  l->n_nodes = nn;
  l->n_elements = ne;
  l->node_box = vox_host_malloc(nn ? nn * sizeof *l->node_box : 1);
  l->node_fixed = vox_host_calloc(nn ? nn : 1, 1);
  l->element_nodes = vox_host_malloc((ne ? ne : 1) * 4 * sizeof *l->element_nodes);
  l->element_box = vox_host_malloc((ne ? ne : 1) * sizeof *l->element_box);
  if (!l->node_box || !l->node_fixed || !l->element_nodes || !l->element_box)
    return no_memory(ctx, "nodes and elements");
#pragma omp parallel for schedule(dynamic, 16384)
  for (int64_t m = 0; m < nb; m++)
    if (map[m] >= 0) l->node_box[map[m]] = m;
  /* elements in box order, each layer from its start */
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t k = 0; k < nz; k++) {
    size_t next = l->element_layer_start[k];
    for (int64_t j = 0; j < ny; j++)
      for (int64_t i = 0; i < nx; i++) {
        const int64_t e = (k * ny + j) * nx + i;
        if (!element_active(label, box_modulus, e)) continue;
        int32_t *en = l->element_nodes + 4 * next;
        for (int c = 0; c < 4; c++) /* corners (0, c & 1, c >> 1) */
          en[c] = map[((k + (c >> 1)) * py + j + (c & 1)) * px + i];
        l->element_box[next++] = e;
      }
  }
  return VOX_OK;
}

/* The box moduli of level l + 1: the mean over the children of level l's
 * elements (an absent child counts 0). A thread per coarse layer, which only
 * fine layers 2 kc and 2 kc + 1 add to: no two threads add to one entry,
 * and each entry's sum is in element order, as in one pass. */
static vox_status next_box_moduli(vox_context *ctx, const vox_sparse_hierarchy *h, int l,
                                  float **box_mod) {
  const vox_sparse_host_level *lv = &h->level[l];
  const vox_grid g = lv->grid, c = vox_grid_coarsen(&g);
  float *next = vox_host_calloc((size_t)vox_grid_elements(&c), sizeof *next);
  if (!next) return no_memory(ctx, "coarse moduli");
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t kc = 0; kc < c.nz; kc++) {
    const size_t e0 = lv->element_layer_start[2 * kc];
    const size_t e1 = lv->element_layer_start[2 * kc + 2 < g.nz ? 2 * kc + 2 : g.nz];
    for (size_t e = e0; e < e1; e++) {
      const int64_t b = lv->element_box[e];
      const int64_t i = b % g.nx, j = (b / g.nx) % g.ny, k = b / (g.nx * g.ny);
      const double m = lv->material ? h->table[lv->material[e]] : lv->modulus[e];
      next[((k / 2) * c.ny + j / 2) * c.nx + i / 2] += (float)(m / 8);
    }
  }
  vox_host_free(*box_mod);
  *box_mod = next;
  return VOX_OK;
}

vox_status vox_sparse_hierarchy_build(vox_context *ctx, const vox_model *model, double nu,
                                      int levels, int split, vox_sparse_hierarchy *h) {
  return vox_sparse_hierarchy_build_moduli(ctx, model, NULL, nu, levels, split, h);
}

vox_status vox_sparse_hierarchy_build_moduli(vox_context *ctx, const vox_model *model,
                                             const double *moduli, double nu, int levels,
                                             int split, vox_sparse_hierarchy *h) {
  memset(h, 0, sizeof *h);
  for (int i = 0; i < model->n_materials; i++)
    h->table[model->materials[i].label] = model->materials[i].youngs_modulus;
  /* the number of levels: halve the box until it is small enough to factor */
  int n = 1;
  if (levels != VOX_SPARSE_FINE_ONLY) {
    vox_grid g = model->grid;
    while (levels > 0 ? n < levels
                      : (size_t)vox_grid_nodes(&g) * 3 > VOX_SPARSE_COARSEST_DOFS) {
      const vox_grid c = vox_grid_coarsen(&g);
      if (c.nx == g.nx && c.ny == g.ny && c.nz == g.nz) break;
      g = c;
      n++;
    }
  }
  if (levels != VOX_SPARSE_FINE_ONLY && n < 2) n = 2;
  if (n > 1) {
    /* the coarsest level is a full box, assembled and factored */
    vox_grid g = model->grid;
    for (int l = 1; l < n; l++) g = vox_grid_coarsen(&g);
    const size_t dofs = 3 * (size_t)vox_grid_nodes(&g);
    if (dofs > VOX_SPARSE_MAX_COARSEST_DOFS)
      return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                       "%d multigrid levels leave a coarsest box of %zu dofs for the sparse "
                       "storage (at most %d): ask for more levels, or 0 for automatic",
                       n, dofs, (int)VOX_SPARSE_MAX_COARSEST_DOFS);
  }
  h->n_levels = n;
  h->level = calloc((size_t)n, sizeof *h->level);
  if (!h->level) return no_memory(ctx, "levels");

  vox_status s = VOX_OK;
  float *box_mod = NULL;      /* the current coarse level's box moduli */
  vox_grid g = model->grid;
  for (int l = 0; l < n && s == VOX_OK; l++) {
    vox_sparse_host_level *lv = &h->level[l];
    lv->grid = g;
    if (vox_hex8_elasticity(1.0, nu, g.voxel_size, lv->ke) != 0) {
      s = vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "Poisson ratio %g out of (-1, 0.5)", nu);
      break;
    }
    if (split && l > 0 && l < n - 1) {
      /* a level that follows the bone's connectivity; the box moduli only
       * for the coarsest level after it (a split level takes its pieces') */
      s = vox_sparse_split_coarsen(ctx, h->table, &h->level[l - 1], lv);
      if (s == VOX_OK && lv->n_elements == 0)
        s = vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "the model has no material voxels");
      if (s == VOX_OK && l + 1 == n - 1) s = next_box_moduli(ctx, h, l, &box_mod);
      g = vox_grid_coarsen(&g);
      continue;
    }
    int32_t *map = NULL;
    s = number_level(ctx, lv, l == 0 ? model->label : NULL, box_mod, l > 0 && l == n - 1,
                     &map);
    if (s == VOX_OK && lv->n_elements == 0)
      s = vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "the model has no material voxels");
    if (s == VOX_OK && l == 0 && moduli) {
      lv->modulus = vox_host_malloc(lv->n_elements * sizeof *lv->modulus);
      if (!lv->modulus) s = no_memory(ctx, "moduli");
      const ptrdiff_t ne = s == VOX_OK ? (ptrdiff_t)lv->n_elements : 0;
#pragma omp parallel for schedule(dynamic, 16384)
      for (ptrdiff_t e = 0; e < ne; e++) lv->modulus[e] = (float)moduli[lv->element_box[e]];
    } else if (s == VOX_OK && l == 0) {
      lv->material = vox_host_malloc(lv->n_elements);
      if (!lv->material) s = no_memory(ctx, "materials");
      const ptrdiff_t ne = s == VOX_OK ? (ptrdiff_t)lv->n_elements : 0;
#pragma omp parallel for schedule(dynamic, 16384)
      for (ptrdiff_t e = 0; e < ne; e++) lv->material[e] = model->label[lv->element_box[e]];
    }
    if (s == VOX_OK && l == 0) {
      /* the constraints' fixed bits (one on a node outside the bone fixes
       * nothing the system holds) */
      const ptrdiff_t nc = (ptrdiff_t)model->n_constraints;
#pragma omp parallel for schedule(static)
      for (ptrdiff_t c = 0; c < nc; c++) {
        const int32_t m = map[model->constraints[c].node];
        if (m < 0) continue;
#pragma omp atomic update
        lv->node_fixed[m] |= (uint8_t)(1u << model->constraints[c].component);
      }
    } else if (s == VOX_OK) {
      lv->modulus = vox_host_malloc(lv->n_elements * sizeof *lv->modulus);
      if (!lv->modulus) s = no_memory(ctx, "moduli");
      const ptrdiff_t ne = s == VOX_OK ? (ptrdiff_t)lv->n_elements : 0;
#pragma omp parallel for schedule(dynamic, 16384)
      for (ptrdiff_t e = 0; e < ne; e++) lv->modulus[e] = box_mod[lv->element_box[e]];
    }
    if (s == VOX_OK && l > 0) {
      /* the fine level's fixed dofs fix coarse dofs (vox_sparse_coarse_candidates),
       * and its nodes learn their parent elements */
      vox_sparse_host_level *f = &h->level[l - 1];
      const int64_t fpx = f->grid.nx + 1, fpy = f->grid.ny + 1;
      const int64_t cpx = g.nx + 1, cpy = g.ny + 1;
      const ptrdiff_t nfn = (ptrdiff_t)f->n_nodes;
#pragma omp parallel for schedule(dynamic, 16384)
      for (ptrdiff_t m = 0; m < nfn; m++) {
        if (!f->node_fixed[m]) continue;
        const int64_t b = f->node_box[m];
        const int64_t i = b % fpx, j = (b / fpx) % fpy, k = b / (fpx * fpy);
        int64_t ci[2], cj[2], ck[2];
        const int ni = vox_sparse_coarse_candidates(i, f->grid.nx, ci),
                  nj = vox_sparse_coarse_candidates(j, f->grid.ny, cj),
                  nk = vox_sparse_coarse_candidates(k, f->grid.nz, ck);
        for (int c = 0; c < nk; c++)
          for (int b2 = 0; b2 < nj; b2++)
            for (int a = 0; a < ni; a++) {
              const int32_t cn = map[(ck[c] * cpy + cj[b2]) * cpx + ci[a]];
              if (cn < 0) continue;
#pragma omp atomic update
              lv->node_fixed[cn] |= f->node_fixed[m];
            }
      }
      /* box element -> coarse element */
      const int64_t cne = vox_grid_elements(&g);
      int32_t *emap = vox_host_malloc((size_t)cne * sizeof *emap);
      /* zeros, as the offers need (a fresh mapping's, not written) */
      f->parent = vox_host_calloc(f->n_nodes ? f->n_nodes : 1, sizeof *f->parent);
      if (!emap || !f->parent) s = no_memory(ctx, "parents");
      if (s == VOX_OK) {
        const ptrdiff_t cn_el = (ptrdiff_t)lv->n_elements;
#pragma omp parallel for schedule(dynamic, 16384)
        for (ptrdiff_t e = 0; e < cn_el; e++) emap[lv->element_box[e]] = (int32_t)e;
        const int64_t fnx = f->grid.nx, fny = f->grid.ny;
#pragma omp parallel for schedule(dynamic, 16384)
        for (size_t e = 0; e < f->n_elements; e++) {
          const int64_t b = f->element_box[e];
          const int64_t i = b % fnx, j = (b / fnx) % fny, k = b / (fnx * fny);
          const int64_t ci = i / 2, cj = j / 2, ck = k / 2;
          const uint64_t ce = (uint64_t)emap[(ck * g.ny + cj) * g.nx + ci];
          int32_t en[8];
          vox_sparse_corners(f->element_nodes, f->element_nodes_x1, e, en);
          for (int a = 0; a < 8; a++) {
            const int x = vox_hex8_corner[a][0], y = vox_hex8_corner[a][1],
                      z = vox_hex8_corner[a][2];
            const int32_t node = en[a];
            const int pos = (int)(i + x - 2 * ci) + 3 * (int)(j + y - 2 * cj) +
                            9 * (int)(k + z - 2 * ck);
            vox_sparse_parent_offer(&f->parent[node], vox_sparse_parent_wide(ce, pos));
          }
        }
      }
      vox_host_free(emap);
    }
    if (s == VOX_OK && l < n - 1) {
      if (!split || l + 1 == n - 1) s = next_box_moduli(ctx, h, l, &box_mod);
      g = vox_grid_coarsen(&g);
    }
    if (l == 0)
      h->box_to_node = map;
    else
      vox_host_free(map);
  }
  vox_host_free(box_mod);
  if (s == VOX_OK && n > 1) {
    /* the coarsest level numbers its whole box: nodes no element touches
     * have no stiffness and are fixed */
    vox_sparse_host_level *lv = &h->level[n - 1];
    uint8_t *touched = vox_host_calloc(lv->n_nodes, 1);
    if (!touched) s = no_memory(ctx, "coarsest level");
    for (size_t e = 0; s == VOX_OK && e < lv->n_elements; e++) {
      int32_t node[8];
      vox_sparse_corners(lv->element_nodes, lv->element_nodes_x1, e, node);
      for (int a = 0; a < 8; a++) touched[node[a]] = 1;
    }
    for (size_t m = 0; s == VOX_OK && m < lv->n_nodes; m++)
      if (!touched[m]) lv->node_fixed[m] = 7;
    vox_host_free(touched);
  }
  if (s != VOX_OK) vox_sparse_hierarchy_free(h);
  return s;
}

vox_status vox_sparse_parents_narrow(vox_context *ctx, const uint64_t *parent, size_t n,
                                     uint32_t **out) {
  *out = NULL;
  if (!parent) return VOX_OK;
  uint32_t *p = malloc((n ? n : 1) * sizeof *p);
  if (!p) return no_memory(ctx, "parents");
  int over = 0;
  const ptrdiff_t count = (ptrdiff_t)n;
#pragma omp parallel for schedule(static) reduction(| : over)
  for (ptrdiff_t i = 0; i < count; i++) {
    over |= (parent[i] >> VOX_SPARSE_POS_BITS) >= VOX_SPARSE_MAX_COARSE_ELEMENTS;
    p[i] = (uint32_t)parent[i];
  }
  if (over) {
    free(p);
    return vox_error(ctx, VOX_ERR_UNSUPPORTED,
                     "a coarse level of more than %zu elements on one process: split the model "
                     "over more MPI ranks",
                     (size_t)VOX_SPARSE_MAX_COARSE_ELEMENTS);
  }
  *out = p;
  return VOX_OK;
}

vox_sparse_level_desc vox_sparse_level_describe(const vox_sparse_hierarchy *h, int l) {
  const vox_sparse_host_level *lv = &h->level[l];
  return (vox_sparse_level_desc){
      .n_nodes = lv->n_nodes,
      .n_elements = lv->n_elements,
      .element_nodes = lv->element_nodes,
      .element_nodes_x1 = lv->element_nodes_x1,
      .material = lv->material,
      .table = lv->material ? h->table : NULL,
      .modulus = lv->modulus,
      .ke = lv->ke,
      .node_fixed = lv->node_fixed,
      .parent = l < h->n_levels - 1 ? lv->parent : NULL,
      .element_layer_start = lv->element_layer_start,
      .node_layer_start = lv->node_layer_start,
      .nz = lv->grid.nz,
      .level = l,
      .n_levels = h->n_levels,
      .parent_element_layer_start =
          l < h->n_levels - 1 ? h->level[l + 1].element_layer_start : NULL,
  };
}

void vox_sparse_assemble_coarsest(const vox_sparse_hierarchy *h, double *value) {
  const vox_sparse_host_level *lv = &h->level[h->n_levels - 1];
  const int64_t px = lv->grid.nx + 1, py = lv->grid.ny + 1;
  memset(value, 0, lv->n_nodes * 27 * 9 * sizeof *value);
  for (size_t e = 0; e < lv->n_elements; e++) {
    int32_t node[8];
    vox_sparse_corners(lv->element_nodes, lv->element_nodes_x1, e, node);
    const double m = lv->modulus[e];
    for (int a = 0; a < 8; a++)
      for (int b = 0; b < 8; b++) {
        const int t = (vox_hex8_corner[b][2] - vox_hex8_corner[a][2] + 1) * 9 +
                      (vox_hex8_corner[b][1] - vox_hex8_corner[a][1] + 1) * 3 +
                      (vox_hex8_corner[b][0] - vox_hex8_corner[a][0] + 1);
        double *blk = value + ((size_t)node[a] * 27 + (size_t)t) * 9;
        for (int r = 0; r < 3; r++)
          for (int c = 0; c < 3; c++) blk[r * 3 + c] += m * lv->ke[(3 * a + r) * 24 + 3 * b + c];
      }
  }
  /* fixed dofs: identity rows and columns */
  for (int64_t n = 0; n < (int64_t)lv->n_nodes; n++) {
    const int64_t i = n % px, j = (n / px) % py, k = n / (px * py);
    for (int t = 0; t < 27; t++) {
      const int64_t ii = i + t % 3 - 1, jj = j + (t / 3) % 3 - 1, kk = k + t / 9 - 1;
      double *blk = value + ((size_t)n * 27 + (size_t)t) * 9;
      const int inside = ii >= 0 && jj >= 0 && kk >= 0 && ii < px && jj < py &&
                         kk < lv->grid.nz + 1;
      const uint8_t fm = inside ? lv->node_fixed[(kk * py + jj) * px + ii] : 7;
      for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++)
          if ((lv->node_fixed[n] >> r & 1) || (fm >> c & 1)) blk[r * 3 + c] = 0;
    }
    for (int r = 0; r < 3; r++)
      if (lv->node_fixed[n] >> r & 1) value[((size_t)n * 27 + 13) * 9 + r * 3 + r] = 1;
  }
}
