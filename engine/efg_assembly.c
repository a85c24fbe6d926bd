/* SPDX-License-Identifier: BSD-3-Clause */
/* Node-pair assembly of the EFG stiffness matrix (efg_assembly.h). */
#include "efg_assembly.h"

#include <stdlib.h>
#include <string.h>

/* Two nodes of one support are at most reach[a] grid lines apart along axis
 * a, so the columns of row i lie in a box of (2 reach + 1)^3 grid offsets
 * around it: a per-thread table over that box finds a column's block. */
typedef struct pair_box {
  int r[3];     /* reach */
  int b[3];     /* 2 reach + 1 */
  size_t size;
} pair_box;

static pair_box box_of(const vox_efg_nodes *nodes) {
  pair_box p;
  p.size = 1;
  for (int a = 0; a < 3; a++) {
    p.r[a] = nodes->reach[a];
    p.b[a] = 2 * p.r[a] + 1;
    p.size *= (size_t)p.b[a];
  }
  return p;
}

/* The box slot of node j seen from node i is linear in their grid
 * coordinates: key[j] - key[i] + centre, with key[n] = (k b_y + j) b_x + i
 * of node n's grid line (i, j, k) and centre the slot of offset zero; the
 * keys are made once per call, so the inner loops load one number. */
static int64_t *slot_keys(const vox_efg_nodes *nodes, const pair_box *p) {
  int64_t *key = malloc((nodes->n ? nodes->n : 1) * sizeof *key);
  if (!key) return NULL;
#pragma omp parallel for schedule(static)
  for (ptrdiff_t n = 0; n < (ptrdiff_t)nodes->n; n++) {
    const int32_t *c = nodes->coord + 3 * n;
    key[n] = ((int64_t)c[2] * p->b[1] + c[1]) * p->b[0] + c[0];
  }
  return key;
}

static inline size_t centre_slot(const pair_box *p) {
  return ((size_t)p->r[2] * (size_t)p->b[1] + (size_t)p->r[1]) * (size_t)p->b[0] + (size_t)p->r[0];
}

/* Marks in `mark` the slots of the nodes that share a point with node i;
 * returns how many were new. */
static size_t mark_row(const vox_efg_model *efg, const int64_t *key, size_t centre, int32_t i,
                       uint8_t *mark) {
  size_t n = 0;
  const int64_t base = (int64_t)centre - key[i];
  for (int s = 0; s < 2; s++) {
    const vox_efg_shapes *sh = s ? &efg->support : &efg->gauss;
    const vox_efg_node_points *np = s ? &efg->node_support : &efg->node_gauss;
    for (size_t k = np->start[i]; k < np->start[i + 1]; k++) {
      const size_t g = np->point[k];
      for (size_t e = sh->start[g]; e < sh->start[g + 1]; e++) {
        const size_t t = (size_t)(base + key[sh->node[e]]);
        n += !mark[t];
        mark[t] = 1;
      }
    }
  }
  return n;
}

vox_status vox_efg_stiffness_pattern(vox_context *ctx, const vox_efg_model *efg, vox_bsr *k) {
  const vox_efg_nodes *nodes = &efg->nodes;
  const size_t n = nodes->n;
  const pair_box p = box_of(nodes);
  memset(k, 0, sizeof *k);
  k->n_rows = k->n_cols = n;
  k->br = k->bc = 3;
  k->row_start = calloc(n + 1, sizeof *k->row_start);
  int64_t *key = slot_keys(nodes, &p);
  const size_t centre = centre_slot(&p);
  if (!k->row_start || !key) goto no_memory;
  int failed = 0;
  /* two passes over the rows: the counts, then the columns */
  for (int pass = 0; pass < 2 && !failed; pass++) {
#pragma omp parallel reduction(| : failed)
    {
      uint8_t *mark = calloc(p.size, 1);
      failed |= !mark;
#pragma omp for schedule(dynamic, 64)
      for (ptrdiff_t i = 0; i < (ptrdiff_t)n; i++) {
        if (!mark) continue;
        const size_t count = mark_row(efg, key, centre, (int32_t)i, mark);
        if (pass == 0) k->row_start[i + 1] = count;
        /* the box scanned in grid order gives the columns ascending (field
         * indices follow grid indices); the marks are cleared on the way */
        const int64_t gi = nodes->grid_node[i];
        const int64_t sx = nodes->grid.nx + 1, sxy = sx * (nodes->grid.ny + 1);
        size_t c = pass ? k->row_start[i] : 0;
        for (int dz = -p.r[2]; dz <= p.r[2]; dz++)
          for (int dy = -p.r[1]; dy <= p.r[1]; dy++)
            for (int dx = -p.r[0]; dx <= p.r[0]; dx++) {
              const size_t t = ((size_t)(dz + p.r[2]) * (size_t)p.b[1] + (size_t)(dy + p.r[1])) *
                                   (size_t)p.b[0] +
                               (size_t)(dx + p.r[0]);
              if (!mark[t]) continue;
              mark[t] = 0;
              if (pass) k->col[c++] = nodes->field[gi + dz * sxy + dy * sx + dx];
            }
      }
      free(mark);
    }
    if (pass == 0 && !failed) {
      for (size_t i = 0; i < n; i++) k->row_start[i + 1] += k->row_start[i];
      const size_t nb = k->row_start[n];
      k->col = malloc((nb ? nb : 1) * sizeof *k->col);
      k->val = calloc(9 * nb + 1, sizeof *k->val);
      if (!k->col || !k->val) goto no_memory;
    }
  }
  if (failed) goto no_memory;
  free(key);
  return VOX_OK;
no_memory:
  free(key);
  vox_bsr_free(k);
  return vox_error(ctx, VOX_ERR_NO_MEMORY,
                   "element-free Galerkin: out of memory (stiffness matrix pattern)");
}

vox_status vox_efg_stiffness_assemble(vox_context *ctx, const vox_efg_model *efg,
                                      const double *gauss_scale, vox_bsr *k) {
  const vox_efg_nodes *nodes = &efg->nodes;
  const pair_box p = box_of(nodes);
  const double lam = efg->lambda, mu = efg->mu;
  const vox_efg_shapes *gs = &efg->gauss, *ss = &efg->support;
  const vox_efg_node_points *ng = &efg->node_gauss, *ns = &efg->node_support;
  int64_t *key = slot_keys(nodes, &p);
  const size_t centre = centre_slot(&p);
  int failed = !key;
#pragma omp parallel reduction(| : failed) if (key)
  {
    int32_t *block = key ? malloc(p.size * sizeof *block) : NULL;
    failed |= !block;
#pragma omp for schedule(dynamic, 64)
    for (ptrdiff_t i = 0; i < (ptrdiff_t)nodes->n; i++) {
      if (!block) continue;
      const size_t r0 = k->row_start[i], r1 = k->row_start[i + 1];
      /* block[] over the box: the row's block of each column; the slots of
       * nodes that are not columns are never read */
      const int64_t base = (int64_t)centre - key[i];
      for (size_t b = r0; b < r1; b++) block[base + key[k->col[b]]] = (int32_t)(b - r0);
      double *row = k->val + 9 * r0;
      memset(row, 0, 9 * (r1 - r0) * sizeof *row);
      /* the Gauss points of node i, in order */
      for (size_t q = ng->start[i]; q < ng->start[i + 1]; q++) {
        const size_t g = ng->point[q];
        const double s = gauss_scale[g];
        if (s == 0) continue;
        const double *gi = gs->dphi + 3 * ng->entry[q];
        const double li[3] = {s * lam * gi[0], s * lam * gi[1], s * lam * gi[2]};
        const double mi[3] = {s * mu * gi[0], s * mu * gi[1], s * mu * gi[2]};
        for (size_t e = gs->start[g]; e < gs->start[g + 1]; e++) {
          if (gs->node[e] < i) continue; /* the lower blocks: mirrored below */
          const double *gj = gs->dphi + 3 * e;
          double *kb = row + 9 * (size_t)block[base + key[gs->node[e]]];
          const double dot = mi[0] * gj[0] + mi[1] * gj[1] + mi[2] * gj[2];
          for (int a = 0; a < 3; a++)
            for (int c = 0; c < 3; c++) kb[3 * a + c] += li[a] * gj[c] + mi[c] * gj[a];
          kb[0] += dot;
          kb[4] += dot;
          kb[8] += dot;
        }
      }
      /* the penalty points of node i */
      for (size_t q = ns->start[i]; q < ns->start[i + 1]; q++) {
        const size_t pt = ns->point[q];
        const double phi_i = ss->phi[ns->entry[q]];
        const double *kp = efg->support_stiffness + 3 * pt;
        for (size_t e = ss->start[pt]; e < ss->start[pt + 1]; e++) {
          if (ss->node[e] < i) continue;
          double *kb = row + 9 * (size_t)block[base + key[ss->node[e]]];
          const double f = phi_i * ss->phi[e];
          kb[0] += f * kp[0];
          kb[4] += f * kp[1];
          kb[8] += f * kp[2];
        }
      }
    }
    free(block);
    /* K_ij = K_ji^T below the diagonal (the pattern is symmetric) */
#pragma omp for schedule(dynamic, 64)
    for (ptrdiff_t i = 0; i < (ptrdiff_t)nodes->n; i++) {
      for (size_t b = k->row_start[i]; b < k->row_start[i + 1] && k->col[b] < i; b++) {
        const double *m = k->val + 9 * (size_t)vox_bsr_find_block(k, k->col[b], (int32_t)i);
        for (int a = 0; a < 3; a++)
          for (int c = 0; c < 3; c++) k->val[9 * b + 3 * a + c] = m[3 * c + a];
      }
    }
  }
  free(key);
  if (failed)
    return vox_error(ctx, VOX_ERR_NO_MEMORY,
                     "element-free Galerkin: out of memory (stiffness matrix assembly)");
  return VOX_OK;
}

int vox_efg_stiffness_mirror(const vox_bsr *k, uint32_t *mirror) {
  const size_t n = k->n_rows, nb = vox_bsr_blocks(k);
  if (nb > UINT32_MAX) return -1;
  size_t *next = malloc((n ? n : 1) * sizeof *next); /* row j's next block left of j */
  if (!next) return -1;
  for (size_t j = 0; j < n; j++) next[j] = k->row_start[j];
  int bad = 0;
  for (size_t i = 0; i < n && !bad; i++)
    for (size_t b = k->row_start[i]; b < k->row_start[i + 1]; b++) {
      const size_t j = (size_t)k->col[b];
      if (j < i) continue; /* set with its mirror */
      const size_t m = j == i ? b : next[j]++;
      if (m >= k->row_start[j + 1] || (size_t)k->col[m] != i) {
        bad = 1;
        break;
      }
      mirror[b] = (uint32_t)m, mirror[m] = (uint32_t)b;
    }
  free(next);
  return bad ? -1 : 0;
}
