/* SPDX-License-Identifier: BSD-3-Clause */
/* The sparse (bone-only) system on the CPU (sparse_ops.h): vectors in double
 * or float, the element-by-element product over the active elements, and
 * the transfers between levels. Elements and nodes are in box order, so a
 * slab of z layers writes only its own node layers and the one above it:
 * threads take every other slab, then the rest, and never write the same
 * entry (no atomics; the sums come out the same run after run). */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "../sparse_ops.h"
#include "cpu.h"
#include "mode_product.h"
#include "ordered_sum.h"
#include "voxfe/element.h"

struct vox_sparse_level {
  size_t n_nodes, n_elements;
  int32_t *element_nodes, *element_nodes_x1;
  uint8_t *material;
  double table[256];
  float *modulus;
  double ke[24 * 24];
  double ke_t[24 * 24]; /* its transpose: column c of Ke is row c of ke_t */
  vox_element_modes modes; /* Ke by the brick's reflections (element_modes.h) */
  uint8_t *node_fixed;
  uint32_t *parent;
  /* the interpolation of a fine node at each of the 27 positions in its
   * parent (vox_sparse_parent): how many coarse corners, which, weights */
  struct interp_entry {
    int n, corner[8];
    double weight[8];
  } interp[27];
  size_t *element_layer_start, *node_layer_start;
  int64_t nz;
  size_t bytes;
};

static inline void add(vox_vec *v, size_t i, double a) {
  if (v->scalar)
    ((float *)v->data)[i] += (float)a;
  else
    ((double *)v->data)[i] += a;
}

static vox_status vec_scatter(vox_backend *be, vox_vec *v, size_t n, const size_t *index,
                              const double *value) {
  for (size_t i = 0; i < n; i++) vox_vec_put(v, index[i], value[i]);
  return VOX_OK;
}

static vox_status vec_axpy(vox_backend *be, vox_vec *y, double a, const vox_vec *x) {
  const ptrdiff_t n = (ptrdiff_t)y->n;
#pragma omp parallel for num_threads(vox_cpu_threads(be)) schedule(static)
  for (ptrdiff_t i = 0; i < n; i++)
    vox_vec_put(y, (size_t)i, vox_vec_get(y, (size_t)i) + a * vox_vec_get(x, (size_t)i));
  return VOX_OK;
}

static vox_status vec_xpay(vox_backend *be, vox_vec *y, double a, const vox_vec *x) {
  const ptrdiff_t n = (ptrdiff_t)y->n;
#pragma omp parallel for num_threads(vox_cpu_threads(be)) schedule(static)
  for (ptrdiff_t i = 0; i < n; i++)
    vox_vec_put(y, (size_t)i, vox_vec_get(x, (size_t)i) + a * vox_vec_get(y, (size_t)i));
  return VOX_OK;
}

static vox_status vec_dot(vox_backend *be, const vox_vec *x, const vox_vec *y, double *out) {
  const ptrdiff_t n = (ptrdiff_t)x->n;
  vox_ordered_sums sums;
  vox_ordered_start(&sums, vox_cpu_threads(be));
#pragma omp parallel num_threads(sums.threads)
  {
    ptrdiff_t lo, hi;
    double *part = vox_ordered_block(&sums, n, &lo, &hi);
    double s = 0;
    for (ptrdiff_t i = lo; i < hi; i++) s += vox_vec_get(x, (size_t)i) * vox_vec_get(y, (size_t)i);
    part[0] = s;
  }
  *out = vox_ordered_total(&sums, 0);
  return VOX_OK;
}

static vox_status cg_update(vox_backend *be, double alpha, const vox_vec *p, const vox_vec *q,
                            vox_vec *u, vox_vec *r, vox_vec *copy, double *rr) {
  const ptrdiff_t n = (ptrdiff_t)r->n;
  vox_ordered_sums sums;
  vox_ordered_start(&sums, vox_cpu_threads(be));
#pragma omp parallel num_threads(sums.threads)
  {
    ptrdiff_t lo, hi;
    double *part = vox_ordered_block(&sums, n, &lo, &hi);
    double s = 0;
    for (ptrdiff_t i = lo; i < hi; i++) {
      const size_t k = (size_t)i;
      vox_vec_put(u, k, vox_vec_get(u, k) + alpha * vox_vec_get(p, k));
      vox_vec_put(r, k, vox_vec_get(r, k) - alpha * vox_vec_get(q, k));
      const double v = vox_vec_get(r, k);
      if (copy) vox_vec_put(copy, k, v);
      s += v * v;
    }
    part[0] = s;
  }
  *rr = vox_ordered_total(&sums, 0);
  return VOX_OK;
}

static vox_status smoother_step(vox_backend *be, const vox_vec *b, const vox_vec *ax,
                                const vox_vec *inv_diag, double alpha, double beta, vox_vec *d,
                                vox_vec *x) {
  const ptrdiff_t n = (ptrdiff_t)x->n;
#pragma omp parallel for num_threads(vox_cpu_threads(be)) schedule(static)
  for (ptrdiff_t i = 0; i < n; i++) {
    const size_t u = (size_t)i;
    const double r = vox_vec_get(inv_diag, u) *
                     (ax ? vox_vec_get(b, u) - vox_vec_get(ax, u) : vox_vec_get(b, u));
    const double di = beta != 0 ? alpha * r + beta * vox_vec_get(d, u) : alpha * r;
    vox_vec_put(d, u, di);
    vox_vec_put(x, u, vox_vec_get(x, u) + di);
  }
  return VOX_OK;
}

/* block_smoother_step with b, ax, d and x in float and the blocks in
 * bfloat16, the mixed V-cycle's (sparse_solve.c): the same sums in double
 * as the general step below, without its branches on the precisions of
 * every entry it reads (a fifth of a mixed solve's time on the CPU). */
static void block_step_mixed(vox_backend *be, const float *restrict b, const float *restrict ax,
                             const uint16_t *restrict w, double alpha, double beta,
                             float *restrict d, float *restrict x, ptrdiff_t nodes) {
#pragma omp parallel for num_threads(vox_cpu_threads(be)) schedule(static)
  for (ptrdiff_t m = 0; m < nodes; m++) {
    const size_t u = 3 * (size_t)m, k = 6 * (size_t)m;
    double r[3], wk[6];
    for (int c = 0; c < 3; c++)
      r[c] = ax ? (double)b[u + c] - (double)ax[u + c] : (double)b[u + c];
    for (int q = 0; q < 6; q++) wk[q] = vox_bf16_to_float(w[k + (size_t)q]);
    for (int i = 0; i < 3; i++) {
      double z = 0;
      for (int j = 0; j < 3; j++) z += wk[vox_block_entry(i, j)] * r[j];
      const double di = beta != 0 ? alpha * z + beta * (double)d[u + i] : alpha * z;
      d[u + i] = (float)di;
      x[u + i] = (float)((double)x[u + i] + di);
    }
  }
}

static vox_status block_smoother_step(vox_backend *be, const vox_vec *b, const vox_vec *ax,
                                      const vox_vec *w, double alpha, double beta, vox_vec *d,
                                      vox_vec *x) {
  const ptrdiff_t nodes = (ptrdiff_t)(x->n / 3);
  if (b->scalar == VOX_FLOAT && (!ax || ax->scalar == VOX_FLOAT) && w->scalar == VOX_BF16 &&
      d->scalar == VOX_FLOAT && x->scalar == VOX_FLOAT) {
    block_step_mixed(be, b->raw, ax ? ax->raw : NULL, w->raw, alpha, beta, d->raw, x->raw, nodes);
    return VOX_OK;
  }
#pragma omp parallel for num_threads(vox_cpu_threads(be)) schedule(static)
  for (ptrdiff_t m = 0; m < nodes; m++) {
    const size_t u = 3 * (size_t)m, k = 6 * (size_t)m;
    double r[3];
    for (int c = 0; c < 3; c++)
      r[c] = ax ? vox_vec_get(b, u + c) - vox_vec_get(ax, u + c) : vox_vec_get(b, u + c);
    for (int i = 0; i < 3; i++) {
      double z = 0;
      for (int j = 0; j < 3; j++) z += vox_vec_get(w, k + (size_t)vox_block_entry(i, j)) * r[j];
      const double di = beta != 0 ? alpha * z + beta * vox_vec_get(d, u + i) : alpha * z;
      vox_vec_put(d, u + i, di);
      vox_vec_put(x, u + i, vox_vec_get(x, u + i) + di);
    }
  }
  return VOX_OK;
}

/* ---- levels ---------------------------------------------------------------- */

/* The coarse corners (vox_hex8_corner's order) that interpolate a fine node
 * at position pos of its parent, and their weights; returns how many. */
static int interpolation(uint32_t pos, int corner[8], double weight[8]) {
  const int p[3] = {(int)(pos % 3), (int)(pos / 3 % 3), (int)(pos / 9)};
  int n = 0;
  for (int z = 0; z < 2; z++)
    for (int y = 0; y < 2; y++)
      for (int x = 0; x < 2; x++) {
        const int o[3] = {x, y, z};
        double w = 1;
        for (int a = 0; a < 3; a++) /* p 0: all on the low node, 2: on the high, 1: halves */
          w *= p[a] == 1 ? 0.5 : (p[a] == 2 * o[a] ? 1 : 0);
        if (w == 0) continue;
        corner[n] = 4 * z + (y ? 3 - x : x); /* vox_hex8_corner's index of (x, y, z) */
        weight[n++] = w;
      }
  return n;
}

static void *copy_of(const void *src, size_t bytes, size_t *total) {
  if (!src) return NULL;
  void *p = malloc(bytes ? bytes : 1);
  if (p) memcpy(p, src, bytes);
  *total += bytes;
  return p;
}

static void level_destroy(vox_backend *be, vox_sparse_level *l) {
  if (!l) return;
  free(l->element_nodes);
  free(l->element_nodes_x1);
  free(l->material);
  free(l->modulus);
  free(l->node_fixed);
  free(l->parent);
  free(l->element_layer_start);
  free(l->node_layer_start);
  free(l);
}

static vox_status level_create(vox_backend *be, const vox_sparse_level_desc *d,
                               vox_sparse_level **out) {
  vox_sparse_level *l = calloc(1, sizeof *l);
  if (!l) return vox_error(be->ctx, VOX_ERR_NO_MEMORY, "out of memory");
  l->n_nodes = d->n_nodes;
  l->n_elements = d->n_elements;
  l->nz = d->nz;
  memcpy(l->ke, d->ke, sizeof l->ke);
  for (int r = 0; r < 24; r++)
    for (int c = 0; c < 24; c++) l->ke_t[c * 24 + r] = l->ke[r * 24 + c];
  vox_element_modes_set(l->ke, &l->modes);
  for (int p = 0; p < 27; p++)
    l->interp[p].n = interpolation((uint32_t)p, l->interp[p].corner, l->interp[p].weight);
  if (d->table) memcpy(l->table, d->table, sizeof l->table);
  size_t b = 0;
  l->element_nodes = copy_of(d->element_nodes, d->n_elements * 4 * sizeof(int32_t), &b);
  l->element_nodes_x1 = copy_of(d->element_nodes_x1, d->n_elements * 4 * sizeof(int32_t), &b);
  l->material = copy_of(d->material, d->n_elements, &b);
  l->modulus = copy_of(d->modulus, d->n_elements * sizeof(float), &b);
  l->node_fixed = copy_of(d->node_fixed, d->n_nodes, &b);
  vox_status narrowed = vox_sparse_parents_narrow(be->ctx, d->parent, d->n_nodes, &l->parent);
  if (l->parent) b += d->n_nodes * sizeof *l->parent;
  l->element_layer_start =
      copy_of(d->element_layer_start, (size_t)(d->nz + 1) * sizeof(size_t), &b);
  l->node_layer_start = copy_of(d->node_layer_start, (size_t)(d->nz + 2) * sizeof(size_t), &b);
  l->bytes = b;
  if (narrowed != VOX_OK) {
    level_destroy(be, l);
    return narrowed;
  }
  if (!l->element_nodes || (d->element_nodes_x1 && !l->element_nodes_x1) ||
      (!l->material && !l->modulus) || !l->node_fixed ||
      (d->parent && !l->parent) || !l->element_layer_start || !l->node_layer_start) {
    level_destroy(be, l);
    return vox_error(be->ctx, VOX_ERR_NO_MEMORY, "out of memory for a sparse level");
  }
  *out = l;
  return VOX_OK;
}

static size_t level_bytes(const vox_sparse_level *l) { return l->bytes; }

/* Runs body(first layer, end layer) over slabs of at least `thick` layers
 * of [0, n): the even slabs in parallel, then the odd ones. */
#define SLAB_PHASES(be, n, thick, body)                                            \
  do {                                                                             \
    const int64_t n_ = (n), th_ = vox_cpu_threads(be);                             \
    int64_t slabs_ = n_ / (thick);                                                 \
    if (slabs_ > 4 * th_) slabs_ = 4 * th_;                                        \
    if (slabs_ < 1) slabs_ = 1;                                                    \
    for (int phase_ = 0; phase_ < 2; phase_++) {                                   \
      _Pragma("omp parallel for num_threads(th_) schedule(dynamic)")               \
      for (int64_t s_ = phase_; s_ < slabs_; s_ += 2) {                            \
        const int64_t lo = n_ * s_ / slabs_, hi = n_ * (s_ + 1) / slabs_;          \
        body;                                                                      \
      }                                                                            \
    }                                                                              \
  } while (0)

static inline void element_corners(const vox_sparse_level *l, size_t e, int32_t node[8]) {
  vox_sparse_corners(l->element_nodes, l->element_nodes_x1, e, node);
}

static inline double element_modulus(const vox_sparse_level *l, size_t e) {
  return l->material ? l->table[l->material[e]] : (double)l->modulus[e];
}

/* y += m Ke x_e for the elements [e0, e1), x and y each in double or float
 * (XF, YF: float; compile-time after inlining), for a Ke without the
 * brick's symmetry (product_modes otherwise). Ke x_e is a sum of Ke's
 * columns, which vectorises across the rows without horizontal sums; a row
 * summed as one chain over the columns was bound by the chain's latency
 * (cpu_operator.c does the same). Each row is still the same sum of the
 * same products in the same order, never fused (-ffp-contract=off,
 * engine/CMakeLists.txt), so every clone gives the bits of a plain row sum.
 * A float x (the mixed V-cycle's) is summed in double too: summed in
 * float, as the full box's smoother products are, the V-cycle of the bone
 * phantoms turned indefinite (CG broke down after 7 iterations at 160^3;
 * docs/experiments.md). */
static inline __attribute__((always_inline)) void
product_elements(const vox_sparse_level *l, const void *xv, void *yv, int full, size_t e0,
                 size_t e1, const int XF, const int YF) {
  const double *restrict xd = xv;
  const float *restrict xf = xv;
  double *restrict yd = yv;
  float *restrict yf = yv;
  const uint8_t *restrict fixed = l->node_fixed;
  for (size_t e = e0; e < e1; e++) {
    int32_t node[8];
    element_corners(l, e, node);
    const double m = element_modulus(l, e);
    double xe[24], ye[24];
    for (int a = 0; a < 8; a++)
      for (int c = 0; c < 3; c++) {
        const size_t i = 3 * (size_t)node[a] + (size_t)c;
        xe[3 * a + c] = !full && (fixed[node[a]] >> c & 1) ? 0.0 : XF ? (double)xf[i] : xd[i];
      }
    for (int r = 0; r < 24; r++) ye[r] = 0;
    for (int c = 0; c < 24; c++)
      for (int r = 0; r < 24; r++) ye[r] += l->ke_t[c * 24 + r] * xe[c];
    for (int a = 0; a < 8; a++)
      for (int c = 0; c < 3; c++) {
        const size_t i = 3 * (size_t)node[a] + (size_t)c;
        if (YF)
          yf[i] += (float)(m * ye[3 * a + c]);
        else
          yd[i] += m * ye[3 * a + c];
      }
  }
}

/* product_elements by Ke's modes (element_modes.h), VOX_MODE_LANES
 * elements at a time: gathered one by one, transformed and multiplied side
 * by side, added to y one by one in element order. (The gather and the
 * sum into y are product_elements' again, written into the lanes: through
 * a shared 24-entry copy the solve took 4-8 % longer.) */
static inline __attribute__((always_inline)) void
product_modes(const vox_sparse_level *l, const void *xv, void *yv, int full, size_t e0,
              size_t e1, const int XF, const int YF) {
  const double *restrict xd = xv;
  const float *restrict xf = xv;
  double *restrict yd = yv;
  float *restrict yf = yv;
  const uint8_t *restrict fixed = l->node_fixed;
  const vox_element_modes *modes = &l->modes;
  enum { LANES = VOX_MODE_LANES };
  for (size_t e = e0; e < e1; e += LANES) {
    const int n = e1 - e < LANES ? (int)(e1 - e) : LANES;
    int32_t node[LANES][8];
    double m[LANES];
    vox_modes_lanes v[8][3], w[8][3];
    for (int a = 0; a < 8; a++)
      for (int c = 0; c < 3; c++) v[a][c] = (vox_modes_lanes){0};
    for (int k = 0; k < n; k++) {
      element_corners(l, e + (size_t)k, node[k]);
      m[k] = element_modulus(l, e + (size_t)k);
      for (int a = 0; a < 8; a++)
        for (int c = 0; c < 3; c++) {
          const size_t i = 3 * (size_t)node[k][a] + (size_t)c;
          v[modes->corner_mode[a]][c][k] = !full && (fixed[node[k][a]] >> c & 1) ? 0.0
                                       : XF                                  ? (double)xf[i]
                                                                             : xd[i];
        }
    }
    vox_modes_product(modes, v, w);
    for (int k = 0; k < n; k++)
      for (int a = 0; a < 8; a++)
        for (int c = 0; c < 3; c++) {
          const size_t i = 3 * (size_t)node[k][a] + (size_t)c;
          const double y = w[modes->corner_mode[a]][c][k];
          if (YF)
            yf[i] += (float)(m[k] * y);
          else
            yd[i] += m[k] * y;
        }
  }
}

/* One instance per precision pair, each built for AVX2 too (HOT_CLONES). */
#define PRODUCT_KERNEL(suffix, XF, YF)                                                          \
  HOT_CLONES static void product_##suffix(const vox_sparse_level *l, const void *x, void *y,   \
                                          int full, size_t e0, size_t e1) {                    \
    if (l->modes.ok)                                                                           \
      product_modes(l, x, y, full, e0, e1, XF, YF);                                            \
    else                                                                                       \
      product_elements(l, x, y, full, e0, e1, XF, YF);                                         \
  }
PRODUCT_KERNEL(dd, 0, 0)
PRODUCT_KERNEL(df, 0, 1)
PRODUCT_KERNEL(fd, 1, 0)
PRODUCT_KERNEL(ff, 1, 1)
#undef PRODUCT_KERNEL

static void product_range(const vox_sparse_level *l, const vox_vec *x, vox_vec *y, int full,
                          size_t e0, size_t e1) {
  const int xf = x->scalar != VOX_DOUBLE, yf = y->scalar != VOX_DOUBLE;
  (xf ? (yf ? product_ff : product_fd) : (yf ? product_df : product_dd))(l, x->data, y->data, full,
                                                                           e0, e1);
}

static vox_status apply(vox_backend *be, vox_sparse_level *l, const vox_vec *x, vox_vec *y,
                        int flags) {
  const int full = flags & VOX_APPLY_FULL;
  if (x->scalar == VOX_BF16 || y->scalar == VOX_BF16)
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT, "sparse product of bfloat16 vectors");
  TRY(be->ops->vec->set(be, y, 0));
  SLAB_PHASES(be, l->nz, 1,
              product_range(l, x, y, full, l->element_layer_start[lo],
                            l->element_layer_start[hi]));
  if (!full) {
    const ptrdiff_t n = (ptrdiff_t)l->n_nodes;
#pragma omp parallel for num_threads(vox_cpu_threads(be)) schedule(static)
    for (ptrdiff_t m = 0; m < n; m++)
      for (int c = 0; c < 3; c++)
        if (l->node_fixed[m] >> c & 1)
          vox_vec_put(y, 3 * (size_t)m + c, vox_vec_get(x, 3 * (size_t)m + c));
  }
  return VOX_OK;
}

static void diagonal_range(const vox_sparse_level *l, vox_vec *d, size_t e0, size_t e1) {
  for (size_t e = e0; e < e1; e++) {
    int32_t node[8];
    element_corners(l, e, node);
    const double m = element_modulus(l, e);
    for (int r = 0; r < 24; r++)
      add(d, 3 * (size_t)node[r / 3] + (size_t)(r % 3), m * l->ke[r * 25]);
  }
}

static vox_status inv_diagonal(vox_backend *be, vox_sparse_level *l, vox_vec *d) {
  TRY(be->ops->vec->set(be, d, 0));
  SLAB_PHASES(be, l->nz, 1,
              diagonal_range(l, d, l->element_layer_start[lo], l->element_layer_start[hi]));
  const ptrdiff_t n = (ptrdiff_t)l->n_nodes;
#pragma omp parallel for num_threads(vox_cpu_threads(be)) schedule(static)
  for (ptrdiff_t m = 0; m < n; m++)
    for (int c = 0; c < 3; c++) {
      const size_t i = 3 * (size_t)m + (size_t)c;
      const double v = vox_vec_get(d, i);
      vox_vec_put(d, i, (l->node_fixed[m] >> c & 1) ? 0 : v <= 0 ? 1 : 1 / v);
    }
  return VOX_OK;
}

/* Each element's 3 x 3 node blocks of m K added to w's six entries a node. */
static void block_diagonal_range(const vox_sparse_level *l, vox_vec *w, size_t e0, size_t e1) {
  for (size_t e = e0; e < e1; e++) {
    int32_t node[8];
    element_corners(l, e, node);
    const double m = element_modulus(l, e);
    for (int a = 0; a < 8; a++)
      for (int i = 0; i < 3; i++)
        for (int j = i; j < 3; j++)
          add(w, 6 * (size_t)node[a] + (size_t)vox_block_entry(i, j),
              m * l->ke[(3 * a + i) * 24 + 3 * a + j]);
  }
}

static vox_status inv_block_diagonal(vox_backend *be, vox_sparse_level *l, vox_vec *w,
                                     vox_vec *scratch) {
  vox_vec sum;
  TRY(vox_block_sums(be->ctx, w, scratch, &sum));
  TRY(be->ops->vec->set(be, &sum, 0));
  SLAB_PHASES(be, l->nz, 1,
              block_diagonal_range(l, &sum, l->element_layer_start[lo],
                                   l->element_layer_start[hi]));
  const ptrdiff_t n = (ptrdiff_t)l->n_nodes;
#pragma omp parallel for num_threads(vox_cpu_threads(be)) schedule(static)
  for (ptrdiff_t m = 0; m < n; m++) {
    double in[6], out[6];
    for (int k = 0; k < 6; k++) in[k] = vox_vec_get(&sum, 6 * (size_t)m + (size_t)k);
    vox_block_invert(in, l->node_fixed[m], out);
    for (int k = 0; k < 6; k++) vox_vec_put(w, 6 * (size_t)m + (size_t)k, out[k]);
  }
  return VOX_OK;
}

static vox_status zero_fixed(vox_backend *be, vox_sparse_level *l, vox_vec *v) {
  const ptrdiff_t n = (ptrdiff_t)l->n_nodes;
#pragma omp parallel for num_threads(vox_cpu_threads(be)) schedule(static)
  for (ptrdiff_t m = 0; m < n; m++)
    for (int c = 0; c < 3; c++)
      if (l->node_fixed[m] >> c & 1) vox_vec_put(v, 3 * (size_t)m + c, 0);
  return VOX_OK;
}

/* Fine node m's interpolation: the coarse nodes of its parent element
 * (cn) and the entry of the level's table for its position there. */
static inline const struct interp_entry *node_interpolation(const vox_sparse_level *f,
                                                            const vox_sparse_level *c, size_t m,
                                                            int32_t cn[8]) {
  const uint32_t word = f->parent[m];
  element_corners(c, word >> VOX_SPARSE_POS_BITS, cn);
  return &f->interp[word & ((1u << VOX_SPARSE_POS_BITS) - 1)];
}

static void restrict_range(const vox_sparse_level *f, const vox_sparse_level *c,
                           const vox_vec *b, const vox_vec *ax, vox_vec *rc, size_t n0,
                           size_t n1) {
  for (size_t m = n0; m < n1; m++) {
    int32_t cn[8];
    const struct interp_entry *p = node_interpolation(f, c, m, cn);
    for (int comp = 0; comp < 3; comp++) {
      if (f->node_fixed[m] >> comp & 1) continue;
      const size_t i = 3 * m + (size_t)comp;
      const double v = b ? vox_vec_get(b, i) - vox_vec_get(ax, i) : vox_vec_get(ax, i);
      for (int t = 0; t < p->n; t++)
        add(rc, 3 * (size_t)cn[p->corner[t]] + (size_t)comp, p->weight[t] * v);
    }
  }
}

static vox_status restrict_residual(vox_backend *be, vox_sparse_level *f, vox_sparse_level *c,
                                    const vox_vec *b, const vox_vec *ax, vox_vec *rc) {
  TRY(be->ops->vec->set(be, rc, 0));
  SLAB_PHASES(be, f->nz + 1, 4,
              restrict_range(f, c, b, ax, rc, f->node_layer_start[lo], f->node_layer_start[hi]));
  return VOX_OK;
}

static vox_status prolong_add(vox_backend *be, vox_sparse_level *f, vox_sparse_level *c,
                              const vox_vec *xc, vox_vec *xf) {
  const ptrdiff_t n = (ptrdiff_t)f->n_nodes;
#pragma omp parallel for num_threads(vox_cpu_threads(be)) schedule(static)
  for (ptrdiff_t i = 0; i < n; i++) {
    const size_t m = (size_t)i;
    int32_t cn[8];
    const struct interp_entry *p = node_interpolation(f, c, m, cn);
    for (int comp = 0; comp < 3; comp++) {
      if (f->node_fixed[m] >> comp & 1) continue;
      double s = 0;
      for (int t = 0; t < p->n; t++)
        s += p->weight[t] * vox_vec_get(xc, 3 * (size_t)cn[p->corner[t]] + (size_t)comp);
      add(xf, 3 * m + (size_t)comp, s);
    }
  }
  return VOX_OK;
}

const vox_sparse_ops vox_cpu_sparse_ops = {
    .views = 1,
    .vec_scatter = vec_scatter,
    .vec_axpy = vec_axpy,
    .vec_xpay = vec_xpay,
    .vec_dot = vec_dot,
    .cg_update = cg_update,
    .smoother_step = smoother_step,
    .block_smoother_step = block_smoother_step,
    .level_create = level_create,
    .level_destroy = level_destroy,
    .level_bytes = level_bytes,
    .apply = apply,
    .inv_diagonal = inv_diagonal,
    .inv_block_diagonal = inv_block_diagonal,
    .zero_fixed = zero_fixed,
    .restrict_residual = restrict_residual,
    .prolong_add = prolong_add,
    .matrix_create = vox_cpu_matrix_create,
    .matrix_destroy = vox_cpu_matrix_destroy,
    .matrix_bytes = vox_cpu_matrix_bytes,
    .matrix_apply = vox_cpu_matrix_apply,
    .matrix_smoother_step = vox_cpu_matrix_smoother_step,
};
