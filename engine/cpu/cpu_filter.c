/* SPDX-License-Identifier: BSD-3-Clause */
/* The linear-hat density and sensitivity filters on the CPU (Martinez-Frutos et al. 2017 eq. 3,
 * 4): w = R - |x_i - x_e| over element centres within R, restricted to
 * non-empty elements. The stencil of offsets and weights is built once. A
 * periodic filter (Zhang et al. 2023 section 6.5) wraps the taps that leave the grid
 * around to the opposite face. */
#include <math.h>
#include <stdlib.h>

#include "../filter_taps.h"
#include "cpu.h"

struct vox_filter {
  vox_grid grid;
  int periodic;       /* taps wrap around the faces (a periodic cell) */
  int64_t reach[3];   /* the largest |offset| of a tap along each axis */
  int n_taps;
  int (*offset)[3];   /* di, dj, dk of each tap */
  double *weight;
  int all_active;     /* every element is active: no tap needs the test */
  uint8_t *active;    /* per element */
  double *inv_hs;     /* 1 / (sum of the weights of an element's active neighbours) */
  double *scratch;    /* per element, for the sensitivity filter's scaling */
};

void vox_cpu_filter_destroy(vox_backend *be, vox_filter *f) {
  if (!f) return;
  free(f->offset);
  free(f->weight);
  free(f->active);
  free(f->inv_hs);
  free(f->scratch);
  free(f);
}

/* a modulo n in [0, n), for a tap past a face of a periodic cell: one
 * addition or subtraction when the taps reach no further than a cell, a
 * division when they span several */
static inline int64_t wrap(int64_t a, int64_t n, int far) {
  if (!far) return a < 0 ? a + n : a >= n ? a - n : a;
  const int64_t r = a % n;
  return r < 0 ? r + n : r;
}

/* The sum of element e = (i, j, k), tap by tap: each tap tested, wrapped on
 * a periodic filter, dropped past a face otherwise. */
static inline __attribute__((always_inline)) double
edge_sum(const vox_filter *f, const double *restrict in, const double *restrict pre, int64_t i,
         int64_t j, int64_t k) {
  const int64_t nx = f->grid.nx, ny = f->grid.ny, nz = f->grid.nz;
  const int64_t *reach = f->reach;
  const int far = reach[0] > nx || reach[1] > ny || reach[2] > nz;
  double s = 0;
  for (int t = 0; t < f->n_taps; t++) {
    int64_t ii = i + f->offset[t][0], jj = j + f->offset[t][1], kk = k + f->offset[t][2];
    if (f->periodic) {
      ii = wrap(ii, nx, far), jj = wrap(jj, ny, far), kk = wrap(kk, nz, far);
    } else if (ii < 0 || ii >= nx || jj < 0 || jj >= ny || kk < 0 || kk >= nz) {
      continue;
    }
    const int64_t n = (kk * ny + jj) * nx + ii;
    if (!f->active[n]) continue;
    s += f->weight[t] * (pre ? pre[n] * in[n] : in[n]);
  }
  return s;
}

/* acc[i] += w in[from + i] (times pre, zero where that element is inactive)
 * for i in [lo, hi): one tap over a stretch of a row. */
static inline __attribute__((always_inline)) void
add_tap(const vox_filter *f, const double *restrict in, const double *restrict pre,
        double *restrict acc, double w, int64_t from, int64_t lo, int64_t hi, const int all_active,
        const int scaled) {
  const uint8_t *restrict active = f->active;
  for (int64_t i = lo; i < hi; i++) {
    const int64_t n = from + i;
    const double v = scaled ? pre[n] * in[n] : in[n];
    acc[i] += w * (all_active || active[n] ? v : 0.0);
  }
}

/* Row (j, k)'s sums into acc, tap by tap along the row: each element sums its
 * taps in the order and with the terms of edge_sum (a tap past a face adds
 * nothing, an inactive neighbour adds w * 0), so the bits are
 * theirs, but the loops run along the row, where they vectorise, instead of
 * along one element's taps, a chain of dependent additions. A periodic
 * filter's taps wrap in up to three stretches; 0 when its taps reach further
 * than the cell, which the element-wise sums handle. */
static inline __attribute__((always_inline)) int
row_sums(const vox_filter *f, const double *restrict in, const double *restrict pre,
         double *restrict acc, int64_t j, int64_t k, const int all_active, const int scaled) {
  const int64_t nx = f->grid.nx, ny = f->grid.ny, nz = f->grid.nz;
  if (f->periodic && (f->reach[0] > nx || f->reach[1] > ny || f->reach[2] > nz)) return 0;
  for (int64_t i = 0; i < nx; i++) acc[i] = 0;
  for (int t = 0; t < f->n_taps; t++) {
    int64_t jj = j + f->offset[t][1], kk = k + f->offset[t][2];
    const int64_t di = f->offset[t][0];
    if (f->periodic) {
      jj = wrap(jj, ny, 0), kk = wrap(kk, nz, 0);
    } else if (jj < 0 || jj >= ny || kk < 0 || kk >= nz) {
      continue;
    }
    const int64_t from = (kk * ny + jj) * nx + di;
    const int64_t lo = di < 0 ? -di : 0, hi = di > 0 ? nx - di : nx;
    const double w = f->weight[t];
    if (f->periodic) add_tap(f, in, pre, acc, w, from + nx, 0, lo, all_active, scaled);
    add_tap(f, in, pre, acc, w, from, lo, hi, all_active, scaled);
    if (f->periodic) add_tap(f, in, pre, acc, w, from - nx, hi, nx, all_active, scaled);
  }
  return 1;
}

/* Row (j, k) of the convolution below; acc (nx doubles, or NULL to sum
 * element by element) is the row's scratch. */
HOT_CLONES static void convolve_row(const vox_filter *f, const double *restrict in,
                                    const double *restrict pre, const double *restrict post,
                                    double *restrict out, int64_t j, int64_t k,
                                    double *restrict acc) {
  const int64_t nx = f->grid.nx, ny = f->grid.ny;
  const int64_t row = (k * ny + j) * nx;
  int by_row = 0;
  if (acc) {
    if (f->all_active)
      by_row = pre ? row_sums(f, in, pre, acc, j, k, 1, 1) : row_sums(f, in, pre, acc, j, k, 1, 0);
    else
      by_row = pre ? row_sums(f, in, pre, acc, j, k, 0, 1) : row_sums(f, in, pre, acc, j, k, 0, 0);
  }
  for (int64_t i = 0; i < nx; i++) {
    const int64_t e = row + i;
    if (!f->active[e]) {
      out[e] = 0;
      continue;
    }
    const double s = by_row ? acc[i] : edge_sum(f, in, pre, i, j, k);
    out[e] = post ? s * post[e] : s;
  }
}

/* out_e = sum_taps w in_i (over active i), for active e; 0 elsewhere. Scaled
 * per element by pre[i] (on the input) and post[e] (on the output) when given.
 * Each thread sums its rows in a scratch row of its own; without one (no
 * memory) it sums element by element, to the same bits. */
static void convolve(vox_backend *be, const vox_filter *f, const double *restrict in,
                     const double *restrict pre, const double *restrict post,
                     double *restrict out) {
  const int64_t nx = f->grid.nx, ny = f->grid.ny, nz = f->grid.nz;
#pragma omp parallel num_threads(vox_cpu_threads(be))
  {
    double *acc = malloc((size_t)nx * sizeof *acc);
#pragma omp for collapse(2) schedule(static)
    for (int64_t k = 0; k < nz; k++)
      for (int64_t j = 0; j < ny; j++) convolve_row(f, in, pre, post, out, j, k, acc);
    free(acc);
  }
}

static vox_status create(vox_backend *be, const vox_grid *grid, double radius, int periodic,
                         const uint8_t *active, vox_filter **out) {
  vox_filter *f = calloc(1, sizeof *f);
  if (!f) return vox_error(be->ctx, VOX_ERR_NO_MEMORY, "out of memory");
  f->grid = *grid;
  f->periodic = periodic;
  vox_filter_taps taps;
  vox_status st = periodic ? vox_filter_taps_make_periodic(be->ctx, grid, radius, &taps)
                           : vox_filter_taps_make(be->ctx, grid, radius, &taps);
  if (st != VOX_OK) {
    free(f);
    return st;
  }
  f->n_taps = taps.n, f->offset = taps.offset, f->weight = taps.weight; /* taken over */
  for (int t = 0; t < f->n_taps; t++)
    for (int a = 0; a < 3; a++)
      if (llabs(f->offset[t][a]) > f->reach[a]) f->reach[a] = llabs(f->offset[t][a]);
  size_t ne = (size_t)vox_grid_elements(grid);
  f->active = malloc(ne);
  f->inv_hs = malloc(ne * sizeof *f->inv_hs);
  f->scratch = malloc(ne * sizeof *f->scratch);
  double *ones = malloc(ne * sizeof *ones);
  if (!f->active || !f->inv_hs || !f->scratch || !ones) {
    free(ones);
    vox_cpu_filter_destroy(be, f);
    return vox_error(be->ctx, VOX_ERR_NO_MEMORY, "out of memory for the filter");
  }
  f->all_active = 1;
  for (size_t e = 0; e < ne; e++) {
    f->active[e] = active[e] != 0;
    f->all_active &= f->active[e];
    ones[e] = 1;
  }
  convolve(be, f, ones, NULL, NULL, f->inv_hs);
  free(ones);
  /* Hs > 0 on active elements: an element is its own neighbour */
  for (size_t e = 0; e < ne; e++) f->inv_hs[e] = f->active[e] ? 1 / f->inv_hs[e] : 0;
  *out = f;
  return VOX_OK;
}

vox_status vox_cpu_filter_create(vox_backend *be, const vox_grid *grid, double radius,
                                 const uint8_t *active, vox_filter **out) {
  return create(be, grid, radius, 0, active, out);
}

vox_status vox_cpu_filter_create_periodic(vox_backend *be, const vox_grid *grid, double radius,
                                          const uint8_t *active, vox_filter **out) {
  return create(be, grid, radius, 1, active, out);
}

vox_status vox_cpu_filter_apply(vox_backend *be, vox_filter *f, const vox_vec *in, vox_vec *out) {
  convolve(be, f, in->data, NULL, f->inv_hs, out->data);
  return VOX_OK;
}

vox_status vox_cpu_filter_transpose(vox_backend *be, vox_filter *f, const vox_vec *in,
                                    vox_vec *out) {
  convolve(be, f, in->data, f->inv_hs, NULL, out->data); /* the stencil is symmetric */
  return VOX_OK;
}

vox_status vox_cpu_filter_sensitivity(vox_backend *be, vox_filter *f, const vox_vec *rho,
                                      const vox_vec *dc, double gamma, vox_vec *out) {
  const ptrdiff_t ne = (ptrdiff_t)rho->n;
  double *restrict post = f->scratch;
#pragma omp parallel for num_threads(vox_cpu_threads(be)) schedule(static)
  for (ptrdiff_t e = 0; e < ne; e++) post[e] = f->inv_hs[e] / fmax(gamma, rho->data[e]);
  convolve(be, f, dc->data, rho->data, post, out->data);
  return VOX_OK;
}
