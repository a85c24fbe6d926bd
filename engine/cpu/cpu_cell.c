/* SPDX-License-Identifier: BSD-3-Clause */
/* The periodic cell solver's operations on the CPU (cell_ops.h): OpenMP
 * loops over the nodes of a level or of one colour, each node computed by
 * cell_kernels.h as the CUDA backend computes it. */
#include <stdlib.h>
#include <string.h>

#include "../cell_ops.h"
#include "cpu.h"
#include "ordered_sum.h"

typedef struct cell_level {
  vox_cell_dims dims;
  int64_t nodes;
  float *x, *b, *stencil; /* stencil: levels >= 2 */
  int slab;               /* restrict_residual's coarse planes a slab (all but the coarsest) */
} cell_level;

struct vox_cell {
  int n_levels;
  cell_level level[VOX_CELL_MAX_LEVELS];
  size_t slab_floats;
  float *slab; /* restrict_residual's residual of a slab's fine planes */
  float ke[576], g[8 * 576], kchi[24];
  double *h;     /* 64 x 576 */
  float *moduli; /* fine, per element */
  float *p;      /* CG's direction on level 0 */
  double *pinv;  /* the coarsest level's pseudo-inverse */
};

static int64_t nodes_of(vox_cell_dims d) { return (int64_t)d.nx * d.ny * d.nz; }

static void cell_release(vox_backend *be, vox_cell *c) {
  (void)be;
  for (int l = 0; l < c->n_levels; l++) {
    cell_level *lv = &c->level[l];
    free(lv->x), free(lv->b), free(lv->stencil);
    lv->x = lv->b = lv->stencil = NULL;
  }
  free(c->slab), free(c->p), free(c->pinv);
  c->slab = c->p = NULL;
  c->pinv = NULL;
}

static void cell_destroy(vox_backend *be, vox_cell *c) {
  if (!c) return;
  cell_release(be, c);
  free(c->h);
  free(c->moduli);
  free(c);
}

static float *floats(size_t n) { return calloc(n ? n : 1, sizeof(float)); }

static vox_status cell_hold(vox_backend *be, vox_cell *c) {
  if (c->p) return VOX_OK;
  int ok = 1;
  for (int l = 0; l < c->n_levels; l++) {
    cell_level *lv = &c->level[l];
    const size_t n3 = 3 * (size_t)lv->nodes;
    lv->x = floats(n3);
    lv->b = floats(n3);
    lv->stencil = l >= 2 ? floats(VOX_CELL_BLOCK * (size_t)lv->nodes) : NULL;
    ok = ok && lv->x && lv->b && (l < 2 || lv->stencil);
  }
  c->slab = floats(c->slab_floats);
  const int64_t nc = c->level[c->n_levels - 1].nodes;
  c->pinv = calloc(9 * (size_t)nc * (size_t)nc, sizeof *c->pinv);
  c->p = floats(3 * (size_t)c->level[0].nodes);
  if (ok && c->slab && c->pinv && c->p) return VOX_OK;
  cell_release(be, c);
  return vox_error(be->ctx, VOX_ERR_NO_MEMORY, "out of memory (the cell solver)");
}

static vox_status cell_create(vox_backend *be, const vox_cell_desc *desc, vox_cell **out) {
  vox_cell *c = calloc(1, sizeof *c);
  if (!c) return vox_error(be->ctx, VOX_ERR_NO_MEMORY, "out of memory (the cell solver)");
  c->n_levels = desc->n_levels;
  for (int l = 0; l < c->n_levels; l++) {
    cell_level *lv = &c->level[l];
    lv->dims = desc->dims[l];
    lv->nodes = nodes_of(lv->dims);
    lv->slab = l < c->n_levels - 1 ? vox_cell_slab(desc, l) : 0;
  }
  c->slab_floats = (size_t)vox_cell_slab_floats(desc);
  c->moduli = floats((size_t)c->level[0].nodes);
  c->h = malloc(64 * 576 * sizeof *c->h);
  if (!c->moduli || !c->h) {
    cell_destroy(be, c);
    return vox_error(be->ctx, VOX_ERR_NO_MEMORY, "out of memory (the cell solver)");
  }
  const vox_status s = cell_hold(be, c);
  if (s != VOX_OK) {
    cell_destroy(be, c);
    return s;
  }
  for (int i = 0; i < 576; i++) c->ke[i] = (float)desc->ke[i];
  for (int i = 0; i < 8 * 576; i++) c->g[i] = (float)desc->g[i];
  memcpy(c->h, desc->h, 64 * 576 * sizeof *c->h);
  *out = c;
  return VOX_OK;
}

static vox_status cell_set_moduli(vox_backend *be, vox_cell *c, const vox_vec *moduli) {
  const int64_t ne = c->level[0].nodes;
  const double *m = moduli->data;
#pragma omp parallel for num_threads(vox_cpu_threads(be)) schedule(static)
  for (int64_t e = 0; e < ne; e++) c->moduli[e] = (float)m[e];
  return VOX_OK;
}

/* Level 2's stencil from the fine moduli. */
static vox_status level2(vox_backend *be, vox_cell *c) {
  const cell_level *l2 = &c->level[2];
  const int64_t blocks = VOX_CELL_STORED * l2->nodes; /* the stored blocks t = 13..26 */
#pragma omp parallel for num_threads(vox_cpu_threads(be)) schedule(static)
  for (int64_t q = 0; q < blocks; q++) {
    const int64_t n = q / VOX_CELL_STORED;
    const int t = 13 + (int)(q % VOX_CELL_STORED);
    int i, j, k;
    vox_cell_coords(l2->dims, n, &i, &j, &k);
    vox_cell_level2_block(l2->dims, c->moduli, c->h, i, j, k, t, l2->stencil + 9 * q);
  }
  return VOX_OK;
}

static vox_status cell_galerkin(vox_backend *be, vox_cell *c, int level) {
  if (level == 2) return level2(be, c);
  const cell_level *fine = &c->level[level - 1], *lv = &c->level[level];
  const int64_t blocks = VOX_CELL_STORED * lv->nodes; /* the stored blocks t = 13..26 */
#pragma omp parallel for num_threads(vox_cpu_threads(be)) schedule(static)
  for (int64_t q = 0; q < blocks; q++) {
    const int64_t n = q / VOX_CELL_STORED;
    const int t = 13 + (int)(q % VOX_CELL_STORED);
    int i, j, k;
    vox_cell_coords(lv->dims, n, &i, &j, &k);
    vox_cell_galerkin_block(fine->dims, fine->stencil, i, j, k, t, lv->stencil + 9 * q);
  }
  return VOX_OK;
}

static vox_status cell_stencil_download(vox_backend *be, vox_cell *c, int level, float *host) {
  (void)be;
  memcpy(host, c->level[level].stencil, VOX_CELL_BLOCK * (size_t)c->level[level].nodes * 4);
  return VOX_OK;
}

static vox_status cell_coarsest_upload(vox_backend *be, vox_cell *c, const double *pinv) {
  (void)be;
  const size_t n = 3 * (size_t)c->level[c->n_levels - 1].nodes;
  memcpy(c->pinv, pinv, n * n * sizeof *pinv);
  return VOX_OK;
}

static vox_status cell_set_load(vox_backend *be, vox_cell *c, const double kchi[24]) {
  (void)be;
  for (int i = 0; i < 24; i++) c->kchi[i] = (float)kchi[i];
  return VOX_OK;
}

/* The fem's node (with images) of master node n of level 0. */
static size_t fem_node(vox_cell_dims d, int64_t n) {
  int i, j, k;
  vox_cell_coords(d, n, &i, &j, &k);
  return (size_t)(((int64_t)k * (d.ny + 1) + j) * (d.nx + 1) + i);
}

/* u = 0 on every node of the fem's layout. */
static vox_status cell_zero_field(vox_backend *be, vox_cell *c, vox_vec *u) {
  (void)be, (void)c;
  memset(u->raw, 0, u->n * sizeof(_Float16));
  return VOX_OK;
}

/* A node's row of level l: ax, diag, and its right-hand side b. */
static void row(const vox_cell *c, int l, const float *x, int i, int j, int k, float ax[3],
                float diag[9], float b[3]) {
  const cell_level *lv = &c->level[l];
  if (l == 0) {
    float f[3]; /* the load, not the V-cycle's right-hand side */
    vox_cell_fine_row(lv->dims, c->moduli, c->ke, c->kchi, x, i, j, k, ax, diag, f);
  } else if (l == 1) {
    vox_cell_coarse1_row(lv->dims, c->moduli, c->g, x, i, j, k, ax, diag);
  } else {
    vox_cell_stencil_row(lv->dims, lv->stencil, x, i, j, k, ax, diag);
  }
  const int64_t n = vox_cell_node(lv->dims, i, j, k);
  for (int q = 0; q < 3; q++) b[q] = lv->b[3 * n + q];
}

static vox_status cell_load_norm(vox_backend *be, vox_cell *c, double *ff) {
  const cell_level *l0 = &c->level[0];
  const vox_cell_dims d = l0->dims;
  vox_ordered_sums sums;
  vox_ordered_start(&sums, vox_cpu_threads(be));
#pragma omp parallel num_threads(sums.threads)
  {
    ptrdiff_t lo, hi;
    double *part = vox_ordered_block(&sums, (ptrdiff_t)l0->nodes, &lo, &hi);
    double sum = 0;
    for (int64_t n = lo; n < hi; n++) {
      int i, j, k;
      vox_cell_coords(d, n, &i, &j, &k);
      float f[3];
      vox_cell_load_at(d, c->moduli, c->kchi, i, j, k, f);
      sum += (double)f[0] * f[0] + (double)f[1] * f[1] + (double)f[2] * f[2];
    }
    part[0] = sum;
  }
  *ff = vox_ordered_total(&sums, 0);
  return VOX_OK;
}

static vox_status cell_smooth(vox_backend *be, vox_cell *c, int level, int backward) {
  const cell_level *lv = &c->level[level];
  const int64_t per_colour = lv->nodes / 8;
  for (int s = 0; s < 8; s++) {
    const int colour = backward ? 7 - s : s;
#pragma omp parallel for num_threads(vox_cpu_threads(be)) schedule(static)
    for (int64_t m = 0; m < per_colour; m++) {
      int i, j, k;
      vox_cell_colour_node(lv->dims, colour, m, &i, &j, &k);
      float ax[3], diag[9], b[3];
      row(c, level, lv->x, i, j, k, ax, diag, b);
      vox_cell_relax(b, ax, diag, lv->x + 3 * vox_cell_node(lv->dims, i, j, k));
    }
  }
  return VOX_OK;
}

static vox_status cell_clear(vox_backend *be, vox_cell *c) {
  (void)be;
  memset(c->level[0].x, 0, 3 * (size_t)c->level[0].nodes * sizeof(float));
  return VOX_OK;
}

/* Conjugate gradients' steps on level 0 (cell_ops.h). */
static vox_status cell_cg_residual(vox_backend *be, vox_cell *c, const vox_vec *u, double *rr) {
  const cell_level *l0 = &c->level[0];
  const vox_cell_dims d = l0->dims;
  const _Float16 *in = (const _Float16 *)u->raw;
#pragma omp parallel for num_threads(vox_cpu_threads(be)) schedule(static)
  for (int64_t n = 0; n < l0->nodes; n++) {
    const size_t f = fem_node(d, n);
    for (int q = 0; q < 3; q++) l0->x[3 * n + q] = (float)in[3 * f + q];
  }
  vox_ordered_sums sums;
  vox_ordered_start(&sums, vox_cpu_threads(be));
#pragma omp parallel num_threads(sums.threads)
  {
    ptrdiff_t lo, hi;
    double *part = vox_ordered_block(&sums, (ptrdiff_t)l0->nodes, &lo, &hi);
    double sum = 0;
    for (int64_t n = lo; n < hi; n++) {
      int i, j, k;
      vox_cell_coords(d, n, &i, &j, &k);
      float ax[3], diag[9], f[3];
      vox_cell_fine_row(d, c->moduli, c->ke, c->kchi, l0->x, i, j, k, ax, diag, f);
      for (int q = 0; q < 3; q++) {
        l0->b[3 * n + q] = f[q] - ax[q];
        sum += (double)l0->b[3 * n + q] * l0->b[3 * n + q];
      }
    }
    part[0] = sum;
  }
  *rr = vox_ordered_total(&sums, 0);
  return VOX_OK;
}

static vox_status cell_cg_direction(vox_backend *be, vox_cell *c, double rz_old, double *rz) {
  const cell_level *l0 = &c->level[0];
  const int64_t nodes = l0->nodes;
  vox_ordered_sums ordered;
  vox_ordered_start(&ordered, vox_cpu_threads(be));
#pragma omp parallel num_threads(ordered.threads)
  {
    ptrdiff_t lo, hi;
    double *part = vox_ordered_block(&ordered, (ptrdiff_t)nodes, &lo, &hi);
    double rzs = 0, z0 = 0, z1 = 0, z2 = 0, r0 = 0, r1 = 0, r2 = 0;
    for (int64_t n = lo; n < hi; n++) {
      const float *b = l0->b + 3 * n, *x = l0->x + 3 * n;
      rzs += (double)b[0] * x[0] + (double)b[1] * x[1] + (double)b[2] * x[2];
      z0 += x[0], z1 += x[1], z2 += x[2], r0 += b[0], r1 += b[1], r2 += b[2];
    }
    part[0] = rzs, part[1] = z0, part[2] = z1, part[3] = z2, part[4] = r0, part[5] = r1,
    part[6] = r2;
  }
  double sums[7];
  for (int k = 0; k < 7; k++) sums[k] = vox_ordered_total(&ordered, k);
  double mean[3];
  *rz = vox_cell_projected_rz(sums, nodes, mean);
  const float beta = rz_old != 0 ? (float)(*rz / rz_old) : 0.0f;
  const float m[3] = {(float)mean[0], (float)mean[1], (float)mean[2]};
#pragma omp parallel for num_threads(vox_cpu_threads(be)) schedule(static)
  for (int64_t i = 0; i < 3 * nodes; i++) {
    const float y = l0->x[i] - m[i % 3];
    c->p[i] = beta != 0 ? y + beta * c->p[i] : y;
  }
  return VOX_OK;
}

static vox_status cell_cg_product(vox_backend *be, vox_cell *c, double *pq) {
  const cell_level *l0 = &c->level[0];
  const vox_cell_dims d = l0->dims;
  vox_ordered_sums sums;
  vox_ordered_start(&sums, vox_cpu_threads(be));
#pragma omp parallel num_threads(sums.threads)
  {
    ptrdiff_t lo, hi;
    double *part = vox_ordered_block(&sums, (ptrdiff_t)l0->nodes, &lo, &hi);
    double sum = 0;
    for (int64_t n = lo; n < hi; n++) {
      int i, j, k;
      vox_cell_coords(d, n, &i, &j, &k);
      float ax[3], diag[9], f[3];
      vox_cell_fine_row(d, c->moduli, c->ke, c->kchi, c->p, i, j, k, ax, diag, f);
      for (int q = 0; q < 3; q++) {
        l0->x[3 * n + q] = ax[q];
        sum += (double)c->p[3 * n + q] * ax[q];
      }
    }
    part[0] = sum;
  }
  *pq = vox_ordered_total(&sums, 0);
  return VOX_OK;
}

static vox_status cell_cg_update(vox_backend *be, vox_cell *c, double alpha, vox_vec *u,
                                 double *rr) {
  const cell_level *l0 = &c->level[0];
  const vox_cell_dims d = l0->dims;
  const int64_t n3 = 3 * l0->nodes, nodes = (int64_t)(d.nx + 1) * (d.ny + 1) * (d.nz + 1);
  const float a = (float)alpha;
  _Float16 *out = (_Float16 *)u->raw;
  /* every node of the fem's layout, images included, from its master */
  const vox_cell_dims images = {d.nx + 1, d.ny + 1, d.nz + 1};
#pragma omp parallel for num_threads(vox_cpu_threads(be)) schedule(static)
  for (int64_t f = 0; f < nodes; f++) {
    int i, j, k;
    vox_cell_coords(images, f, &i, &j, &k);
    const int64_t n = vox_cell_node(d, i, j, k);
    for (int q = 0; q < 3; q++)
      out[3 * f + q] = (_Float16)((float)out[3 * f + q] + a * c->p[3 * n + q]);
  }
  vox_ordered_sums sums;
  vox_ordered_start(&sums, vox_cpu_threads(be));
#pragma omp parallel num_threads(sums.threads)
  {
    ptrdiff_t lo, hi;
    double *part = vox_ordered_block(&sums, (ptrdiff_t)n3, &lo, &hi);
    double sum = 0;
    for (int64_t i = lo; i < hi; i++) {
      l0->b[i] -= a * l0->x[i];
      sum += (double)l0->b[i] * l0->b[i];
    }
    part[0] = sum;
  }
  *rr = vox_ordered_total(&sums, 0);
  return VOX_OK;
}

/* Slab by slab (cell_ops.h): the residual of the slab's fine planes into
 * c->slab, then the restriction of its coarse planes from there. */
static vox_status cell_restrict(vox_backend *be, vox_cell *c, int level) {
  const cell_level *fine = &c->level[level], *lv = &c->level[level + 1];
  const vox_cell_dims df = fine->dims, d = lv->dims;
  const int64_t plane = (int64_t)d.nx * d.ny;
  for (int k0 = 0; k0 < d.nz; k0 += fine->slab) {
    int k1, z0;
    const vox_cell_dims slab = vox_cell_slab_at(df, d.nz, fine->slab, k0, &k1, &z0);
    const int64_t count = (int64_t)slab.nx * slab.ny * slab.nz;
#pragma omp parallel for num_threads(vox_cpu_threads(be)) schedule(static)
    for (int64_t m = 0; m < count; m++) {
      int i, j, p;
      vox_cell_coords(slab, m, &i, &j, &p);
      float ax[3], diag[9], b[3];
      row(c, level, fine->x, i, j, vox_cell_wrap(z0 + p, df.nz), ax, diag, b);
      for (int q = 0; q < 3; q++) c->slab[3 * m + q] = b[q] - ax[q];
    }
#pragma omp parallel for num_threads(vox_cpu_threads(be)) schedule(static)
    for (int64_t n = k0 * plane; n < k1 * plane; n++) {
      int i, j, k;
      vox_cell_coords(d, n, &i, &j, &k);
      vox_cell_restrict_at(df, c->slab, z0, i, j, k, lv->b + 3 * n);
      for (int q = 0; q < 3; q++) lv->x[3 * n + q] = 0;
    }
  }
  return VOX_OK;
}

static vox_status cell_prolong(vox_backend *be, vox_cell *c, int level) {
  const cell_level *lv = &c->level[level], *coarse = &c->level[level + 1];
  const vox_cell_dims d = lv->dims;
#pragma omp parallel for num_threads(vox_cpu_threads(be)) schedule(static)
  for (int64_t n = 0; n < lv->nodes; n++) {
    int i, j, k;
    vox_cell_coords(d, n, &i, &j, &k);
    float add[3];
    vox_cell_prolong_at(coarse->dims, coarse->x, i, j, k, add);
    for (int q = 0; q < 3; q++) lv->x[3 * n + q] += add[q];
  }
  return VOX_OK;
}

static vox_status cell_coarsest_solve(vox_backend *be, vox_cell *c) {
  const cell_level *lv = &c->level[c->n_levels - 1];
  const int64_t n = 3 * lv->nodes;
#pragma omp parallel for num_threads(vox_cpu_threads(be)) schedule(static)
  for (int64_t i = 0; i < n; i++) {
    double s = 0;
    for (int64_t j = 0; j < n; j++) s += c->pinv[i * n + j] * lv->b[j];
    lv->x[i] = (float)s;
  }
  return VOX_OK;
}

const vox_cell_ops vox_cpu_cell_ops = {
    .create = cell_create,
    .destroy = cell_destroy,
    .release = cell_release,
    .hold = cell_hold,
    .set_moduli = cell_set_moduli,
    .galerkin = cell_galerkin,
    .stencil_download = cell_stencil_download,
    .coarsest_upload = cell_coarsest_upload,
    .set_load = cell_set_load,
    .zero_field = cell_zero_field,
    .load_norm = cell_load_norm,
    .cg_residual = cell_cg_residual,
    .cg_direction = cell_cg_direction,
    .cg_product = cell_cg_product,
    .cg_update = cell_cg_update,
    .smooth = cell_smooth,
    .restrict_residual = cell_restrict,
    .clear = cell_clear,
    .prolong_add = cell_prolong,
    .coarsest_solve = cell_coarsest_solve,
};
