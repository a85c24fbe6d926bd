/* SPDX-License-Identifier: BSD-3-Clause */
/* Stencils on the CPU: an assembled operator stored per node as 27 blocks
 * (the coarse levels of the multigrid) in double or float, its product and
 * diagonal, and the
 * transfers between a grid and its coarse grid: trilinear prolongation P and
 * restriction R = P^T. Every loop is a gather over the nodes it writes, so
 * threads never write the same entry. */
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

vox_status vox_cpu_stencil_create(vox_backend *be, const vox_grid *grid, int dpn,
                                  vox_precision precision, vox_stencil **out) {
  vox_stencil *st = calloc(1, sizeof *st);
  if (!st) return vox_error(be->ctx, VOX_ERR_NO_MEMORY, "out of memory");
  st->grid = *grid;
  st->dpn = dpn;
  st->n_nodes = (size_t)vox_grid_nodes(grid);
  st->n_dofs = st->n_nodes * (size_t)dpn;
  const size_t n_values = st->n_nodes * 27 * (size_t)(dpn * dpn);
  if (precision == VOX_PRECISION_MIXED)
    st->value32 = calloc(n_values, sizeof *st->value32);
  else
    st->value = calloc(n_values, sizeof *st->value);
  if (!st->value && !st->value32) {
    free(st);
    return vox_error(be->ctx, VOX_ERR_NO_MEMORY, "out of memory for a multigrid level (%zu nodes)",
                     (size_t)vox_grid_nodes(grid));
  }
  *out = st;
  return VOX_OK;
}

void vox_cpu_stencil_destroy(vox_backend *be, vox_stencil *st) {
  if (!st) return;
  vox_cpu_stencil_factor_free(st);
  free(st->value);
  free(st->value32);
  free(st);
}

/* Float storage takes the values rounded to nearest and gives them back
 * exactly (widened). */
vox_status vox_cpu_stencil_upload(vox_backend *be, vox_stencil *st, const double *host) {
  const ptrdiff_t n = (ptrdiff_t)(st->n_nodes * 27 * (size_t)(st->dpn * st->dpn));
  if (st->value) {
    memcpy(st->value, host, (size_t)n * sizeof *host);
    return VOX_OK;
  }
  float *restrict v = st->value32;
#pragma omp parallel for num_threads(vox_cpu_threads(be)) schedule(static)
  for (ptrdiff_t i = 0; i < n; i++) v[i] = (float)host[i];
  return VOX_OK;
}

vox_status vox_cpu_stencil_download(vox_backend *be, const vox_stencil *st, double *host) {
  const ptrdiff_t n = (ptrdiff_t)(st->n_nodes * 27 * (size_t)(st->dpn * st->dpn));
  if (st->value) {
    memcpy(host, st->value, (size_t)n * sizeof *host);
    return VOX_OK;
  }
  const float *restrict v = st->value32;
#pragma omp parallel for num_threads(vox_cpu_threads(be)) schedule(static)
  for (ptrdiff_t i = 0; i < n; i++) host[i] = v[i];
  return VOX_OK;
}

/* The values in place: host memory, 27 blocks a node. */
vox_status vox_cpu_stencil_values(vox_backend *be, vox_stencil *st, vox_vec *values) {
  (void)be;
  values->n = st->n_nodes * 27 * (size_t)(st->dpn * st->dpn);
  values->scalar = st->value ? VOX_DOUBLE : VOX_FLOAT;
  values->raw = st->value ? (void *)st->value : (void *)st->value32;
  return VOX_OK;
}

/* What a pass of the product writes for each dof from its row sum s:
 *   APPLY:    y = s
 *   RESIDUAL: y = b - s
 *   SMOOTH:   d = alpha D^-1 (b - s) + beta d, y = x + d
 * (the fused steps of backend_ops.h), so that s never goes to memory. */
typedef enum { PASS_APPLY, PASS_RESIDUAL, PASS_SMOOTH } pass_kind;

typedef struct stencil_pass {
  pass_kind kind;
  const double *restrict x, *restrict b, *restrict inv_diag;
  double *restrict d, *restrict y;
  double alpha, beta;
} stencil_pass;

static inline __attribute__((always_inline)) void finish_dof(const stencil_pass *p, int64_t dof,
                                                             double s) {
  switch (p->kind) {
  case PASS_APPLY:
    p->y[dof] = s;
    break;
  case PASS_RESIDUAL:
    p->y[dof] = p->b[dof] - s;
    break;
  case PASS_SMOOTH: {
    const double r = p->inv_diag[dof] * (p->b[dof] - s);
    const double di = p->beta != 0 ? p->alpha * r + p->beta * p->d[dof] : p->alpha * r;
    p->d[dof] = di;
    p->y[dof] = p->x[dof] + di;
    break;
  }
  }
}

/* The row of node (i, j, k) = n, any dofs per node, neighbours looked up
 * one by one (a periodic grid's images have identity rows: the centre
 * block); double or float values (SINGLE, known to the compiler), summed in
 * double. */
static inline __attribute__((always_inline)) void
node_general(const vox_stencil *st, const stencil_pass *p, int64_t i, int64_t j, int64_t k,
             int64_t n, const int SINGLE) {
  const int dpn = st->dpn, bs = dpn * dpn, periodic = st->grid.periodic;
  const int64_t nx = st->grid.nx, ny = st->grid.ny, nz = st->grid.nz;
  const int image = periodic && vox_is_image(nx, ny, nz, i, j, k);
  double s[3] = {0, 0, 0};
  for (int t = 0; t < 27; t++) {
    const int64_t m = image ? (t == 13 ? n : -1)
                            : vox_neighbour_node(nx, ny, nz, periodic, i, j, k, t);
    if (m < 0) continue;
    const size_t at = ((size_t)n * 27 + (size_t)t) * (size_t)bs;
    const double *xm = p->x + m * dpn;
    for (int r = 0; r < dpn; r++)
      for (int c = 0; c < dpn; c++)
        s[r] += (SINGLE ? (double)st->value32[at + r * dpn + c] : st->value[at + r * dpn + c]) *
                xm[c];
  }
  for (int r = 0; r < dpn; r++) finish_dof(p, n * dpn + r, s[r]);
}

/* The row of node n of a 3-dof stencil whose 27 neighbours all lie inside
 * the grid, at node offsets nb[t]: most nodes, without node_general's
 * lookups and tests. The same sums in the same order, so the same bits. */
static inline __attribute__((always_inline)) void node_interior3(const vox_stencil *st,
                                                                 const stencil_pass *p,
                                                                 const int64_t nb[27], int64_t n) {
  const double *restrict blk = st->value + (size_t)n * 243;
  const double *restrict x = p->x;
  double s0 = 0, s1 = 0, s2 = 0;
  for (int t = 0; t < 27; t++, blk += 9) {
    const double *xm = x + (n + nb[t]) * 3;
    const double x0 = xm[0], x1 = xm[1], x2 = xm[2];
    s0 += blk[0] * x0, s0 += blk[1] * x1, s0 += blk[2] * x2;
    s1 += blk[3] * x0, s1 += blk[4] * x1, s1 += blk[5] * x2;
    s2 += blk[6] * x0, s2 += blk[7] * x1, s2 += blk[8] * x2;
  }
  finish_dof(p, n * 3, s0), finish_dof(p, n * 3 + 1, s1), finish_dof(p, n * 3 + 2, s2);
}

/* 8 floats, one AVX register (two SSE ones in the baseline build) */
typedef float float8 __attribute__((vector_size(32)));

/* node_interior3 of float values in float arithmetic: the first 8 of the
 * nine products of a block with its neighbour's (x0, x1, x2, x0, x1, x2, x0,
 * x1, x2) are one vector of 8 floats (8 lanes where double takes 4), the
 * ninth a scalar; three partial sums of each, one per block of three in
 * turn (one sum's chain of dependent multiply-adds would bound the product
 * by their latency), summed by row at the end; the epilogue (finish_dof)
 * is double. */
static inline __attribute__((always_inline)) void
node_interior3_single(const vox_stencil *st, const stencil_pass *p, const int64_t nb[27],
                      int64_t n) {
  const float *restrict blk = st->value32 + (size_t)n * 243;
  const double *restrict x = p->x;
  float8 part[3] = {{0}, {0}, {0}};
  float last[3] = {0, 0, 0};
  for (int t = 0; t < 27; t += 3)
    for (int u = 0; u < 3; u++) {
      const double *xm = x + (n + nb[t + u]) * 3;
      const float x0 = (float)xm[0], x1 = (float)xm[1], x2 = (float)xm[2];
      const float8 xr = {x0, x1, x2, x0, x1, x2, x0, x1};
      float8 a;
      memcpy(&a, blk + (t + u) * 9, sizeof a);
      part[u] += a * xr;
      last[u] += blk[(t + u) * 9 + 8] * x2;
    }
  const float8 q = part[0] + part[1] + part[2];
  const float q8 = last[0] + last[1] + last[2];
  finish_dof(p, n * 3, (double)q[0] + q[1] + q[2]);
  finish_dof(p, n * 3 + 1, (double)q[3] + q[4] + q[5]);
  finish_dof(p, n * 3 + 2, (double)q[6] + q[7] + q8);
}

/* One row of nodes (j, k). */
static inline __attribute__((always_inline)) void
stencil_row(const vox_stencil *st, const stencil_pass *p, int64_t j, int64_t k, const int SINGLE) {
  const int64_t nx = st->grid.nx, ny = st->grid.ny, nz = st->grid.nz;
  const int64_t px = nx + 1, py = ny + 1;
  const int64_t n0 = (k * py + j) * px;
  const int fast = st->dpn == 3 && !st->grid.periodic && j > 0 && j < ny && k > 0 && k < nz;
  if (!fast) {
    for (int64_t i = 0; i <= nx; i++) node_general(st, p, i, j, k, n0 + i, SINGLE);
    return;
  }
  int64_t nb[27];
  for (int t = 0; t < 27; t++) nb[t] = ((t / 9 - 1) * py + (t / 3) % 3 - 1) * px + t % 3 - 1;
  node_general(st, p, 0, j, k, n0, SINGLE);
  for (int64_t i = 1; i < nx; i++) {
    if (SINGLE)
      node_interior3_single(st, p, nb, n0 + i);
    else
      node_interior3(st, p, nb, n0 + i);
  }
  if (nx > 0) node_general(st, p, nx, j, k, n0 + nx, SINGLE);
}

HOT_CLONES static void stencil_row_double(const vox_stencil *st, const stencil_pass *p, int64_t j,
                                          int64_t k) {
  stencil_row(st, p, j, k, 0);
}

HOT_CLONES static void stencil_row_single(const vox_stencil *st, const stencil_pass *p, int64_t j,
                                          int64_t k) {
  stencil_row(st, p, j, k, 1);
}

static void stencil_pass_run(vox_backend *be, const vox_stencil *st, const stencil_pass *p) {
  const int64_t py = st->grid.ny + 1, pz = st->grid.nz + 1;
#pragma omp parallel for collapse(2) num_threads(vox_cpu_threads(be)) schedule(static)
  for (int64_t k = 0; k < pz; k++)
    for (int64_t j = 0; j < py; j++) {
      if (st->value32)
        stencil_row_single(st, p, j, k);
      else
        stencil_row_double(st, p, j, k);
    }
}

vox_status vox_cpu_stencil_apply(vox_backend *be, vox_stencil *st, const vox_vec *xv,
                                 vox_vec *yv) {
  const stencil_pass p = {.kind = PASS_APPLY, .x = xv->data, .y = yv->data};
  stencil_pass_run(be, st, &p);
  return VOX_OK;
}

vox_status vox_cpu_stencil_residual(vox_backend *be, vox_stencil *st, const vox_vec *b,
                                    const vox_vec *x, vox_vec *r) {
  const stencil_pass p = {.kind = PASS_RESIDUAL, .x = x->data, .b = b->data, .y = r->data};
  stencil_pass_run(be, st, &p);
  return VOX_OK;
}

vox_status vox_cpu_stencil_smooth(vox_backend *be, vox_stencil *st, const vox_vec *b,
                                  const vox_vec *x, const vox_vec *inv_diag, double alpha,
                                  double beta, vox_vec *d, vox_vec *x_out) {
  const stencil_pass p = {.kind = PASS_SMOOTH,
                          .x = x->data,
                          .b = b->data,
                          .inv_diag = inv_diag->data,
                          .d = d->data,
                          .y = x_out->data,
                          .alpha = alpha,
                          .beta = beta};
  stencil_pass_run(be, st, &p);
  return VOX_OK;
}

vox_status vox_cpu_stencil_diagonal(vox_backend *be, vox_stencil *st, vox_vec *dv) {
  const int dpn = st->dpn, bs = dpn * dpn;
  const ptrdiff_t n = (ptrdiff_t)st->n_nodes;
  double *restrict d = dv->data;
#pragma omp parallel for num_threads(vox_cpu_threads(be)) schedule(static)
  for (ptrdiff_t m = 0; m < n; m++)
    for (int r = 0; r < dpn; r++)
      d[m * dpn + r] = vox_cpu_stencil_value(st, ((size_t)m * 27 + 13) * bs + r * dpn + r);
  return VOX_OK;
}

vox_status vox_cpu_prolong_add(vox_backend *be, const vox_grid *fine, int dpn,
                               const vox_vec *xc, vox_vec *xf) {
  const vox_grid coarse = vox_grid_coarsen(fine);
  const int64_t fx = fine->nx + 1, fy = fine->ny + 1, fz = fine->nz + 1;
  const int64_t cx = coarse.nx + 1, cy = coarse.ny + 1;
  const double *restrict c = xc->data;
  double *restrict f = xf->data;
  /* a periodic grid's images keep their (zero) values */
  const int periodic = fine->periodic;
  const int64_t ex = periodic ? fx - 1 : fx, ey = periodic ? fy - 1 : fy,
                ez = periodic ? fz - 1 : fz;
#pragma omp parallel for collapse(2) num_threads(vox_cpu_threads(be)) schedule(static)
  for (int64_t k = 0; k < ez; k++)
    for (int64_t j = 0; j < ey; j++) {
      int64_t J[3][2];
      double w[3][2];
      const int nk = periodic ? vox_cpu_parents_periodic(k, coarse.nz, J[2], w[2])
                              : vox_cpu_parents(k, J[2], w[2]);
      const int nj = periodic ? vox_cpu_parents_periodic(j, coarse.ny, J[1], w[1])
                              : vox_cpu_parents(j, J[1], w[1]);
      for (int64_t i = 0; i < ex; i++) {
        const int ni = periodic ? vox_cpu_parents_periodic(i, coarse.nx, J[0], w[0])
                                : vox_cpu_parents(i, J[0], w[0]);
        double s[3] = {0, 0, 0};
        for (int a = 0; a < nk; a++)
          for (int b = 0; b < nj; b++)
            for (int e = 0; e < ni; e++) {
              const double wt = w[2][a] * w[1][b] * w[0][e];
              const double *cv = c + ((J[2][a] * cy + J[1][b]) * cx + J[0][e]) * dpn;
              for (int r = 0; r < dpn; r++) s[r] += wt * cv[r];
            }
        double *fv = f + ((k * fy + j) * fx + i) * dpn;
        for (int r = 0; r < dpn; r++) fv[r] += s[r];
      }
    }
  return VOX_OK;
}

vox_status vox_cpu_restrict_residual(vox_backend *be, const vox_grid *fine, int dpn,
                                     const vox_vec *rf, vox_vec *rc) {
  const vox_grid coarse = vox_grid_coarsen(fine);
  const int64_t fx = fine->nx + 1, fy = fine->ny + 1, fz = fine->nz + 1;
  const int64_t cx = coarse.nx + 1, cy = coarse.ny + 1, cz = coarse.nz + 1;
  const double *restrict f = rf->data;
  double *restrict c = rc->data;
  const int periodic = fine->periodic;
#pragma omp parallel for collapse(2) num_threads(vox_cpu_threads(be)) schedule(static)
  for (int64_t K = 0; K < cz; K++)
    for (int64_t J = 0; J < cy; J++)
      for (int64_t I = 0; I < cx; I++) {
        /* the fine nodes 2I-1..2I+1 per axis that interpolate from (I,J,K) */
        double s[3] = {0, 0, 0};
        if (periodic) { /* wrapped; the coarse images get nothing */
          if (!vox_is_image(coarse.nx, coarse.ny, coarse.nz, I, J, K))
            for (int t = 0; t < 27; t++) {
              const int di = t % 3 - 1, dj = (t / 3) % 3 - 1, dk = t / 9 - 1;
              const double wt = (dk ? 0.5 : 1) * (dj ? 0.5 : 1) * (di ? 0.5 : 1);
              const double *fv =
                  f + vox_neighbour_node(fine->nx, fine->ny, fine->nz, 1, 2 * I, 2 * J, 2 * K, t) *
                          dpn;
              for (int r = 0; r < dpn; r++) s[r] += wt * fv[r];
            }
          double *cv = c + ((K * cy + J) * cx + I) * dpn;
          for (int r = 0; r < dpn; r++) cv[r] = s[r];
          continue;
        }
        for (int dk = -1; dk <= 1; dk++) {
          const int64_t k = 2 * K + dk;
          if (k < 0 || k >= fz) continue;
          for (int dj = -1; dj <= 1; dj++) {
            const int64_t j = 2 * J + dj;
            if (j < 0 || j >= fy) continue;
            for (int di = -1; di <= 1; di++) {
              const int64_t i = 2 * I + di;
              if (i < 0 || i >= fx) continue;
              const double wt = (dk ? 0.5 : 1) * (dj ? 0.5 : 1) * (di ? 0.5 : 1);
              const double *fv = f + ((k * fy + j) * fx + i) * dpn;
              for (int r = 0; r < dpn; r++) s[r] += wt * fv[r];
            }
          }
        }
        double *cv = c + ((K * cy + J) * cx + I) * dpn;
        for (int r = 0; r < dpn; r++) cv[r] = s[r];
      }
  return VOX_OK;
}
