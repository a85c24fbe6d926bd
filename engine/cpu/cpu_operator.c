/* SPDX-License-Identifier: BSD-3-Clause */
/* The matrix-free stiffness operator on the CPU: K x = sum_e m_e Ke x_e,
 * element by element, scattered without atomics: on a bounded grid in slabs
 * of element layers, those two apart in parallel (apply_slabs); elsewhere in
 * 8 colours (parity of i, j, k), so that the elements of one colour share no
 * node; within a colour, OpenMP threads split the (k, j) rows. */
#include <stdlib.h>
#include <string.h>

#include "cpu.h"
#include "ordered_sum.h"
#include "voxfe/element.h"


vox_status vox_cpu_op_create(vox_backend *be, const vox_operator_desc *desc, vox_operator **out) {
  vox_operator *op = calloc(1, sizeof *op);
  if (!op) return vox_error(be->ctx, VOX_ERR_NO_MEMORY, "out of memory");
  op->grid = desc->grid;
  op->dpn = desc->dofs_per_node;
  op->nloc = 8 * op->dpn;
  op->first_layer_shared = desc->first_layer_shared;
  op->n_dofs = (size_t)vox_grid_nodes(&desc->grid) * (size_t)op->dpn;
  op->ke = malloc((size_t)op->nloc * (size_t)op->nloc * sizeof *op->ke);
  op->ke32 = malloc((size_t)op->nloc * (size_t)op->nloc * sizeof *op->ke32);
  op->fixed = desc->dof_fixed ? malloc(op->n_dofs) : NULL;
  if (!op->ke || !op->ke32 || (desc->dof_fixed && !op->fixed)) {
    vox_cpu_op_destroy(be, op);
    return vox_error(be->ctx, VOX_ERR_NO_MEMORY, "out of memory");
  }
  memcpy(op->ke, desc->ke, (size_t)op->nloc * (size_t)op->nloc * sizeof *op->ke);
  for (int e = 0; e < op->nloc * op->nloc; e++) op->ke32[e] = (float)op->ke[e];
  if (op->nloc == 24) vox_element_modes_set(op->ke, &op->modes);
  if (op->fixed) memcpy(op->fixed, desc->dof_fixed, op->n_dofs);
  if (desc->n_springs > 0) {
    op->spring_dof = malloc(desc->n_springs * sizeof *op->spring_dof);
    op->spring_k = malloc(desc->n_springs * sizeof *op->spring_k);
    if (!op->spring_dof || !op->spring_k) {
      vox_cpu_op_destroy(be, op);
      return vox_error(be->ctx, VOX_ERR_NO_MEMORY, "out of memory");
    }
    memcpy(op->spring_dof, desc->spring_dof, desc->n_springs * sizeof *op->spring_dof);
    memcpy(op->spring_k, desc->spring_k, desc->n_springs * sizeof *op->spring_k);
    op->n_springs = desc->n_springs;
  }
  const ptrdiff_t sx = 1, sy = desc->grid.nx + 1, sz = sy * (desc->grid.ny + 1);
  for (int a = 0; a < 8; a++)
    op->corner[a] =
        vox_hex8_corner[a][0] * sx + vox_hex8_corner[a][1] * sy + vox_hex8_corner[a][2] * sz;
  *out = op;
  return VOX_OK;
}

void vox_cpu_op_destroy(vox_backend *be, vox_operator *op) {
  if (!op) return;
  free(op->ke);
  free(op->ke32);
  free(op->fixed);
  free(op->spring_dof);
  free(op->spring_k);
  free(op);
}

/* VOX_ERR_INVALID_ARGUMENT for an operator made without fixed flags
 * (backend_ops.h) asked for what reads them. */
vox_status vox_cpu_op_check_fixed(vox_backend *be, const vox_operator *op, const char *what) {
  if (op->fixed) return VOX_OK;
  return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT,
                   "operator: %s on an operator made without fixed flags", what);
}

vox_status vox_cpu_op_set_moduli(vox_backend *be, vox_operator *op, const vox_vec *moduli) {
  op->moduli = moduli->data;
  return VOX_OK;
}

/* The NLOC entries of x on the nodes of an element (0 on the fixed dofs
 * unless `full`). */
static inline __attribute__((always_inline)) void
gather_element(const vox_operator *op, const double *restrict x, int full, const ptrdiff_t node[8],
               double *restrict xe, const int NLOC) {
  const int dpn = NLOC / 8;
  const uint8_t *restrict fixed = op->fixed;
  for (int a = 0; a < 8; a++)
    for (int c = 0; c < dpn; c++) {
      const ptrdiff_t dof = node[a] * dpn + c;
      xe[a * dpn + c] = (full || !fixed[dof]) ? x[dof] : 0.0;
    }
}

static inline __attribute__((always_inline)) void
scatter_element(double *restrict y, const ptrdiff_t node[8], double m, const double *restrict ye,
                const int NLOC) {
  const int dpn = NLOC / 8;
  for (int a = 0; a < 8; a++)
    for (int c = 0; c < dpn; c++) y[node[a] * dpn + c] += m * ye[a * dpn + c];
}

static inline __attribute__((always_inline)) void element_nodes(const vox_operator *op, int64_t i,
                                                                int64_t j, int64_t k,
                                                                ptrdiff_t node[8]) {
  const ptrdiff_t sy = op->grid.nx + 1, sz = sy * (op->grid.ny + 1);
  const ptrdiff_t n0 = k * sz + j * sy + i;
  if (op->grid.periodic) vox_cpu_element_nodes(op, i, j, k, node);
  else
    for (int a = 0; a < 8; a++) node[a] = n0 + op->corner[a];
}

/* y += m Ke x_e for the elements i = ci, ci+2, ... of row (j, k), for an
 * element matrix of compile-time size NLOC. Ke x_e is a sum of columns (Ke
 * is symmetric: column c is row c), which vectorises without horizontal
 * reductions. */
static inline __attribute__((always_inline)) void
apply_row_double(const vox_operator *op, const double *restrict x, double *restrict y, int full,
                 int64_t j, int64_t k, int ci, int step, const int NLOC) {
  const int64_t nx = op->grid.nx, ny = op->grid.ny;
  const double *restrict ke = op->ke;
  const double *restrict moduli = op->moduli + (k * ny + j) * nx;
  for (int64_t i = ci; i < nx; i += step) {
    const double m = moduli[i];
    if (m == 0) continue;
    ptrdiff_t node[8];
    element_nodes(op, i, j, k, node);
    double xe[NLOC], ye[NLOC];
    gather_element(op, x, full, node, xe, NLOC);
    for (int r = 0; r < NLOC; r++) ye[r] = 0;
    for (int c = 0; c < NLOC; c++)
      for (int r = 0; r < NLOC; r++) ye[r] += ke[c * NLOC + r] * xe[c];
    scatter_element(y, node, m, ye, NLOC);
  }
}

/* apply_row_double for elasticity by Ke's modes (element_modes.h): the
 * row's elements of non-zero modulus, LANES at a time, gathered and added
 * to y one by one in row order; MODES the vector type (vox_modes: double,
 * four a vector; vox_modes_single: x_e rounded to float and multiplied in
 * float, eight a vector, the VOX_APPLY_SINGLE product), m (Ke x_e) added
 * to y in double either way. */
#define APPLY_ROW_MODES(NAME, MODES, T, LANES)                                                  \
  static inline __attribute__((always_inline)) void NAME(                                      \
      const vox_operator *op, const double *restrict x, double *restrict y, int full, int64_t j, \
      int64_t k, int ci, int step) {                                                             \
    const int64_t nx = op->grid.nx, ny = op->grid.ny;                                            \
    const double *restrict moduli = op->moduli + (k * ny + j) * nx;                              \
    const int *corner_mode = op->modes.corner_mode;                                              \
    for (int64_t i = ci; i < nx;) {                                                              \
      ptrdiff_t node[LANES][8];                                                                  \
      double m[LANES];                                                                           \
      MODES##_lanes v[8][3] = {{{0}}}, w[8][3];                                                  \
      int n = 0;                                                                                 \
      for (; i < nx && n < (LANES); i += step) {                                                 \
        if (moduli[i] == 0) continue;                                                            \
        m[n] = moduli[i];                                                                        \
        element_nodes(op, i, j, k, node[n]);                                                     \
        double xe[24];                                                                           \
        gather_element(op, x, full, node[n], xe, 24);                                            \
        for (int a = 0; a < 8; a++)                                                              \
          for (int c = 0; c < 3; c++) v[corner_mode[a]][c][n] = (T)xe[3 * a + c];                \
        n++;                                                                                     \
      }                                                                                          \
      if (n == 0) break;                                                                         \
      MODES##_product(&op->modes, v, w);                                                         \
      for (int q = 0; q < n; q++)                                                                \
        for (int a = 0; a < 8; a++)                                                              \
          for (int c = 0; c < 3; c++)                                                            \
            y[node[q][a] * 3 + c] += m[q] * (double)w[corner_mode[a]][c][q];                     \
    }                                                                                            \
  }
APPLY_ROW_MODES(apply_row_modes, vox_modes, double, VOX_MODE_LANES)
APPLY_ROW_MODES(apply_row_modes_single, vox_modes_single, float, VOX_MODE_LANES_SINGLE)
#undef APPLY_ROW_MODES

/* 8 floats, one AVX register (two SSE ones in the baseline build) */
typedef float float8 __attribute__((vector_size(32)));

/* apply_row_double in float (VOX_APPLY_SINGLE): x_e rounded to float,
 * Ke x_e summed in float from the float Ke (8 lanes where double takes 4),
 * m (Ke x_e) added to y in double. */
static inline __attribute__((always_inline)) void
apply_row_single(const vox_operator *op, const double *restrict x, double *restrict y, int full,
                 int64_t j, int64_t k, int ci, int step, const int NLOC) {
  const int dpn = NLOC / 8;
  const int64_t nx = op->grid.nx, ny = op->grid.ny;
  const float *restrict ke = op->ke32;
  const uint8_t *restrict fixed = op->fixed;
  const double *restrict moduli = op->moduli + (k * ny + j) * nx;
  for (int64_t i = ci; i < nx; i += step) {
    const double m = moduli[i];
    if (m == 0) continue;
    ptrdiff_t node[8];
    element_nodes(op, i, j, k, node);
    float xe[NLOC], ye[NLOC];
    for (int a = 0; a < 8; a++)
      for (int c = 0; c < dpn; c++) {
        const ptrdiff_t dof = node[a] * dpn + c;
        xe[a * dpn + c] = (full || !fixed[dof]) ? (float)x[dof] : 0.0f;
      }
    /* Ke x_e as four partial sums over the columns, each NLOC / 8
     * vectors of 8 floats kept in registers: one sum's chain of dependent
     * multiply-adds would bound the product by their latency */
    const int NV = NLOC / 8;
    float8 part[4][3];
    for (int q = 0; q < 4; q++)
      for (int v = 0; v < NV; v++) part[q][v] = (float8){0};
    for (int c = 0; c < NLOC; c += 4)
      for (int q = 0; q < 4; q++)
        for (int v = 0; v < NV; v++) {
          float8 kv;
          memcpy(&kv, ke + (c + q) * NLOC + 8 * v, sizeof kv);
          part[q][v] += kv * xe[c + q];
        }
    for (int v = 0; v < NV; v++) {
      const float8 sum = (part[0][v] + part[1][v]) + (part[2][v] + part[3][v]);
      memcpy(ye + 8 * v, &sum, sizeof sum);
    }
    for (int a = 0; a < 8; a++)
      for (int c = 0; c < dpn; c++) y[node[a] * dpn + c] += m * (double)ye[a * dpn + c];
  }
}

static inline __attribute__((always_inline)) void
apply_row(const vox_operator *op, const double *restrict x, double *restrict y, int full,
          int64_t j, int64_t k, int ci, int step, const int NLOC, const int SINGLE) {
  if (SINGLE && NLOC == 24 && op->modes.ok)
    apply_row_modes_single(op, x, y, full, j, k, ci, step);
  else if (SINGLE)
    apply_row_single(op, x, y, full, j, k, ci, step, NLOC);
  else if (NLOC == 24 && op->modes.ok)
    apply_row_modes(op, x, y, full, j, k, ci, step);
  else
    apply_row_double(op, x, y, full, j, k, ci, step, NLOC);
}

/* Every element of the element layers k0 <= k < k1 in turn. */
static inline __attribute__((always_inline)) void
apply_slab(const vox_operator *op, const double *x, double *y, int full, int64_t k0, int64_t k1,
           const int NLOC, const int SINGLE) {
  for (int64_t k = k0; k < k1; k++)
    for (int64_t j = 0; j < op->grid.ny; j++) apply_row(op, x, y, full, j, k, 0, 1, NLOC, SINGLE);
}

/* The rows (every other element: the colours of a periodic grid) and the
 * slabs for each element matrix size and precision, each built for AVX2
 * too (HOT_CLONES). */
#define APPLY_KERNELS(suffix, NLOC, SINGLE)                                                        \
  HOT_CLONES static void apply_row_##suffix(const vox_operator *op, const double *x, double *y,   \
                                            int full, int64_t j, int64_t k, int ci) {              \
    apply_row(op, x, y, full, j, k, ci, 2, NLOC, SINGLE);                                          \
  }                                                                                                \
  HOT_CLONES static void apply_slab_##suffix(const vox_operator *op, const double *x, double *y,  \
                                             int full, int64_t k0, int64_t k1) {                   \
    apply_slab(op, x, y, full, k0, k1, NLOC, SINGLE);                                              \
  }
APPLY_KERNELS(elasticity, 24, 0)
APPLY_KERNELS(conduction, 8, 0)
APPLY_KERNELS(elasticity_single, 24, 1)
APPLY_KERNELS(conduction_single, 8, 1)
#undef APPLY_KERNELS

/* A bounded grid's product in slabs of SLAB_LAYERS element layers, each
 * taken element by element in grid order by one thread: x and y pass
 * through the cache about once, where the 8 colours of elements (below)
 * stream both 8 times. Slabs two apart share no node, so the even slabs
 * run in parallel, then the odd ones. The slabs do not depend on the
 * threads, so neither do the sums' order and the result. */
enum { SLAB_LAYERS = 2 };

static void apply_slabs(vox_backend *be, const vox_operator *op, const double *x, double *y,
                        int full, int single) {
  const int64_t n_slabs = (op->grid.nz + SLAB_LAYERS - 1) / SLAB_LAYERS;
  for (int parity = 0; parity < 2; parity++) {
#pragma omp for schedule(dynamic, 1)
    for (int64_t s = parity; s < n_slabs; s += 2) {
      const int64_t k0 = s * SLAB_LAYERS,
                    k1 = k0 + SLAB_LAYERS < op->grid.nz ? k0 + SLAB_LAYERS : op->grid.nz;
      if (single)
        (op->nloc == 24 ? apply_slab_elasticity_single : apply_slab_conduction_single)(op, x, y, full,
                                                                                       k0, k1);
      else
        (op->nloc == 24 ? apply_slab_elasticity : apply_slab_conduction)(op, x, y, full, k0, k1);
    }
  }
}

/* VOX_APPLY_SINGLE: the element products in float (apply_row_single). */
vox_status vox_cpu_op_apply(vox_backend *be, vox_operator *op, const vox_vec *xv, vox_vec *yv,
                            int flags) {
  TRY(vox_cpu_op_check_fixed(be, op, "a product"));
  const int full = (flags & VOX_APPLY_FULL) != 0, single = (flags & VOX_APPLY_SINGLE) != 0;
  const double *restrict x = xv->data;
  double *restrict y = yv->data;
  const ptrdiff_t n = (ptrdiff_t)op->n_dofs;
#pragma omp parallel num_threads(vox_cpu_threads(be))
  {
#pragma omp for schedule(static)
    for (ptrdiff_t d = 0; d < n; d++) y[d] = 0;
    if (!op->grid.periodic) /* a periodic grid's last slab meets its first */
      apply_slabs(be, op, x, y, full, single);
    else
      for (int colour = 0; colour < 8; colour++) {
        const int ci = colour & 1, cj = (colour >> 1) & 1, ck = colour >> 2;
        /* rows of one colour share no node; the barrier of omp for ends it */
#pragma omp for collapse(2) schedule(static)
        for (int64_t k = ck; k < op->grid.nz; k += 2)
          for (int64_t j = cj; j < op->grid.ny; j += 2) {
            if (single)
              (op->nloc == 24 ? apply_row_elasticity_single
                              : apply_row_conduction_single)(op, x, y, full, j, k, ci);
            else
              (op->nloc == 24 ? apply_row_elasticity : apply_row_conduction)(op, x, y, full, j, k,
                                                                            ci);
          }
      }
    if (!full) {
#pragma omp for schedule(static)
      for (ptrdiff_t d = 0; d < n; d++)
        if (op->fixed[d]) y[d] = x[d];
    }
  }
  for (size_t i = 0; i < op->n_springs; i++)
    y[op->spring_dof[i]] += op->spring_k[i] * x[op->spring_dof[i]];
  return VOX_OK;
}

vox_status vox_cpu_op_zero_fixed(vox_backend *be, vox_operator *op, vox_vec *v) {
  TRY(vox_cpu_op_check_fixed(be, op, "zeroing the fixed dofs"));
  double *restrict x = v->data;
  const uint8_t *restrict fixed = op->fixed;
  const ptrdiff_t n = (ptrdiff_t)op->n_dofs;
#pragma omp parallel for num_threads(vox_cpu_threads(be)) schedule(static)
  for (ptrdiff_t d = 0; d < n; d++)
    if (fixed[d]) x[d] = 0;
  return VOX_OK;
}

vox_status vox_cpu_op_diagonal(vox_backend *be, vox_operator *op, vox_vec *dv) {
  TRY(vox_cpu_op_check_fixed(be, op, "the diagonal"));
  double *restrict d = dv->data;
  const int dpn = op->dpn, nloc = op->nloc;
  const int64_t nx = op->grid.nx, ny = op->grid.ny, nz = op->grid.nz;
  const ptrdiff_t n = (ptrdiff_t)op->n_dofs;
#pragma omp parallel num_threads(vox_cpu_threads(be))
  {
#pragma omp for schedule(static)
    for (ptrdiff_t i = 0; i < n; i++) d[i] = 0;
    for (int colour = 0; colour < 8; colour++) {
      const int ci = colour & 1, cj = (colour >> 1) & 1, ck = colour >> 2;
#pragma omp for collapse(2) schedule(static)
      for (int64_t k = ck; k < nz; k += 2)
        for (int64_t j = cj; j < ny; j += 2)
          for (int64_t i = ci; i < nx; i += 2) {
            const double m = op->moduli[(k * ny + j) * nx + i];
            ptrdiff_t node[8];
            vox_cpu_element_nodes(op, i, j, k, node);
            for (int a = 0; a < 8; a++)
              for (int c = 0; c < dpn; c++) {
                const int l = a * dpn + c;
                d[node[a] * dpn + c] += m * op->ke[l * nloc + l];
              }
          }
    }
#pragma omp for schedule(static)
    for (ptrdiff_t i = 0; i < n; i++)
      if (op->fixed[i]) d[i] = 1;
  }
  for (size_t i = 0; i < op->n_springs; i++) d[op->spring_dof[i]] += op->spring_k[i];
  return VOX_OK;
}

/* energy_e = u_e' Ke u_e for the elements of row (j, k), Ke u_e as a sum of
 * columns (as in apply_row) for an element matrix of compile-time size NLOC. */
static inline __attribute__((always_inline)) void
energy_row(const vox_operator *op, const double *restrict u, double *restrict energy,
           int accumulate, int64_t j, int64_t k, const int NLOC) {
  const int dpn = NLOC / 8;
  const int64_t nx = op->grid.nx, ny = op->grid.ny;
  const double *restrict ke = op->ke;
  for (int64_t i = 0; i < nx; i++) {
    const ptrdiff_t e = (k * ny + j) * nx + i;
    ptrdiff_t node[8];
    element_nodes(op, i, j, k, node);
    double ue[NLOC], ke_ue[NLOC];
    for (int a = 0; a < 8; a++)
      for (int c = 0; c < dpn; c++) ue[a * dpn + c] = u[node[a] * dpn + c];
    for (int r = 0; r < NLOC; r++) ke_ue[r] = 0;
    for (int c = 0; c < NLOC; c++)
      for (int r = 0; r < NLOC; r++) ke_ue[r] += ke[c * NLOC + r] * ue[c];
    double s = 0;
    for (int r = 0; r < NLOC; r++) s += ue[r] * ke_ue[r];
    energy[e] = accumulate ? energy[e] + s : s;
  }
}

HOT_CLONES static void energy_row_elasticity(const vox_operator *op, const double *u,
                                             double *energy, int accumulate, int64_t j,
                                             int64_t k) {
  energy_row(op, u, energy, accumulate, j, k, 24);
}

HOT_CLONES static void energy_row_conduction(const vox_operator *op, const double *u,
                                             double *energy, int accumulate, int64_t j,
                                             int64_t k) {
  energy_row(op, u, energy, accumulate, j, k, 8);
}

vox_status vox_cpu_op_element_energy(vox_backend *be, vox_operator *op, const vox_vec *uv,
                                     vox_vec *ev, int accumulate) {
  const double *u = uv->data;
  double *energy = ev->data;
  const int64_t ny = op->grid.ny, nz = op->grid.nz;
#pragma omp parallel for collapse(2) num_threads(vox_cpu_threads(be)) schedule(static)
  for (int64_t k = 0; k < nz; k++)
    for (int64_t j = 0; j < ny; j++) {
      if (op->nloc == 24)
        energy_row_elasticity(op, u, energy, accumulate, j, k);
      else
        energy_row_conduction(op, u, energy, accumulate, j, k);
    }
  return VOX_OK;
}

vox_status vox_cpu_op_strain_load(vox_backend *be, vox_operator *op, const double *chi,
                                  vox_vec *fv) {
  TRY(vox_cpu_op_check_fixed(be, op, "a strain load"));
  const int dpn = op->dpn, nloc = op->nloc;
  double kchi[24];
  for (int r = 0; r < nloc; r++) {
    kchi[r] = 0;
    for (int c = 0; c < nloc; c++) kchi[r] += op->ke[r * nloc + c] * chi[c];
  }
  double *restrict f = fv->data;
  const ptrdiff_t n = (ptrdiff_t)op->n_dofs;
#pragma omp parallel num_threads(vox_cpu_threads(be))
  {
#pragma omp for schedule(static)
    for (ptrdiff_t d = 0; d < n; d++) f[d] = 0;
    for (int colour = 0; colour < 8; colour++) {
      const int ci = colour & 1, cj = (colour >> 1) & 1, ck = colour >> 2;
#pragma omp for collapse(2) schedule(static)
      for (int64_t k = ck; k < op->grid.nz; k += 2)
        for (int64_t j = cj; j < op->grid.ny; j += 2)
          for (int64_t i = ci; i < op->grid.nx; i += 2) {
            const double m = op->moduli[(k * op->grid.ny + j) * op->grid.nx + i];
            if (m == 0) continue;
            ptrdiff_t node[8];
            vox_cpu_element_nodes(op, i, j, k, node);
            for (int a = 0; a < 8; a++)
              for (int c = 0; c < dpn; c++) f[node[a] * dpn + c] += m * kchi[a * dpn + c];
          }
    }
#pragma omp for schedule(static)
    for (ptrdiff_t d = 0; d < n; d++)
      if (op->fixed[d]) f[d] = 0;
  }
  return VOX_OK;
}

/* The six fields of the strain energies, in double or in half precision
 * (each value widened to double as it is read). */
typedef struct strain_fields {
  const double *d[6];
  const _Float16 *h[6];
} strain_fields;

static inline __attribute__((always_inline)) double field_value(const strain_fields *u, int f,
                                                                 ptrdiff_t i) {
  return u->d[f] ? u->d[f][i] : vox_cpu_half_to_double(u->h[f][i]);
}

static vox_status check_strain_fields(vox_backend *be, const vox_operator *op, int n_fields,
                                      const char *what) {
  if (n_fields < 1 || n_fields > 6 || op->nloc != 24)
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT, "%s: %d fields of %d dofs per element",
                     what, n_fields, op->nloc);
  return VOX_OK;
}

/* v_f = chi_f - u_f on the element */
static inline __attribute__((always_inline)) void
element_strain_fields(const strain_fields *u, int n_fields, const double *chi,
                      const ptrdiff_t node[8], double (*v)[24]) {
  for (int f = 0; f < n_fields; f++)
    for (int a = 0; a < 8; a++)
      for (int c = 0; c < 3; c++)
        v[f][a * 3 + c] = chi[f * 24 + a * 3 + c] - field_value(u, f, node[a] * 3 + c);
}

static vox_status strain_energy(vox_backend *be, vox_operator *op, int n_fields,
                                const strain_fields *u, const double *chi, const double *w,
                                vox_vec *ev) {
  TRY(check_strain_fields(be, op, n_fields, "strain energy"));
  double *restrict energy = ev->data;
  const int64_t nx = op->grid.nx, ny = op->grid.ny, nz = op->grid.nz;
#pragma omp parallel for collapse(2) num_threads(vox_cpu_threads(be)) schedule(static)
  for (int64_t k = 0; k < nz; k++)
    for (int64_t j = 0; j < ny; j++)
      for (int64_t i = 0; i < nx; i++) {
        ptrdiff_t node[8];
        vox_cpu_element_nodes(op, i, j, k, node);
        /* v_f = chi_f - u_f on the element, then K v_f */
        double v[6][24], kv[6][24];
        element_strain_fields(u, n_fields, chi, node, v);
        for (int f = 0; f < n_fields; f++)
          for (int r = 0; r < 24; r++) {
            double t = 0;
            for (int c = 0; c < 24; c++) t += op->ke[r * 24 + c] * v[f][c];
            kv[f][r] = t;
          }
        double s = 0;
        for (int f = 0; f < n_fields; f++)
          for (int g = 0; g < n_fields; g++) {
            const double wfg = w[f * n_fields + g];
            if (wfg == 0) continue;
            double t = 0;
            for (int r = 0; r < 24; r++) t += v[f][r] * kv[g][r];
            s += wfg * t;
          }
        energy[(k * ny + j) * nx + i] = s;
      }
  return VOX_OK;
}

/* The pairs f <= g of n fields in the order the sums are accumulated. */
enum { MAX_SUM_PAIRS = 6 * 7 / 2 };
_Static_assert((int)MAX_SUM_PAIRS <= (int)VOX_ORDERED_MAX_SUMS, "the ordered sums hold every pair");

/* acc[pair] += m_e (chi_f - u_f)' Ke (chi_g - u_g) over the elements of
 * row (j, k), the pairs f >= g in order; built for AVX2 and FMA too
 * (HOT_CLONES). */
HOT_CLONES static void strain_sums_row(const vox_operator *op, int n, const strain_fields *u,
                                       const double *chi, int64_t j, int64_t k,
                                       double *restrict acc) {
  const int64_t nx = op->grid.nx, ny = op->grid.ny;
  for (int64_t i = 0; i < nx; i++) {
    const double m = op->moduli[(k * ny + j) * nx + i];
    if (m == 0) continue;
    ptrdiff_t node[8];
    vox_cpu_element_nodes(op, i, j, k, node);
    double v[6][24], kv[24];
    element_strain_fields(u, n, chi, node, v);
    int pair = 0;
    for (int g = 0; g < n; g++) {
      for (int r = 0; r < 24; r++) {
        double t = 0;
        for (int c = 0; c < 24; c++) t += op->ke[r * 24 + c] * v[g][c];
        kv[r] = t;
      }
      for (int f = g; f < n; f++, pair++) {
        double t = 0;
        for (int r = 0; r < 24; r++) t += v[f][r] * kv[r];
        acc[pair] += m * t;
      }
    }
  }
}

static vox_status strain_energy_sums(vox_backend *be, vox_operator *op, int n_fields,
                                     const strain_fields *u, const double *chi, double *sums) {
  TRY(check_strain_fields(be, op, n_fields, "strain energy sums"));
  if (!op->moduli)
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT,
                     "operator: strain energy sums before its moduli");
  const int n = n_fields;
  const int64_t ny = op->grid.ny, nz = op->grid.nz;
  /* rows of elements (k, j) in blocks a thread, summed in thread order */
  vox_ordered_sums ordered;
  vox_ordered_start(&ordered, vox_cpu_threads(be));
#pragma omp parallel num_threads(ordered.threads)
  {
    ptrdiff_t lo, hi;
    double *acc = vox_ordered_block(&ordered, (ptrdiff_t)(nz * ny), &lo, &hi);
    for (ptrdiff_t row = lo; row < hi; row++)
      strain_sums_row(op, n, u, chi, row % ny, row / ny, acc);
  }
  for (int g = 0, pair = 0; g < n; g++)
    for (int f = g; f < n; f++, pair++)
      sums[f * n + g] = sums[g * n + f] = vox_ordered_total(&ordered, pair);
  return VOX_OK;
}

/* The fields as the kernels read them: all double or all half. */
static vox_status fields_of(vox_backend *be, int n_fields, const vox_vec *u, strain_fields *s) {
  *s = (strain_fields){{0}, {0}};
  for (int f = 0; f < n_fields && f < 6; f++) {
    if (u[f].scalar != u[0].scalar || (u[f].scalar != VOX_DOUBLE && u[f].scalar != VOX_HALF))
      return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT,
                       "strain energy: fields must be all double or all half vectors");
    if (u[f].scalar == VOX_HALF)
      s->h[f] = (const _Float16 *)u[f].raw;
    else
      s->d[f] = u[f].data;
  }
  return VOX_OK;
}

vox_status vox_cpu_op_strain_energy(vox_backend *be, vox_operator *op, int n_fields,
                                    const vox_vec *u, const double *chi, const double *w,
                                    vox_vec *ev) {
  strain_fields s;
  TRY(fields_of(be, n_fields, u, &s));
  return strain_energy(be, op, n_fields, &s, chi, w, ev);
}

vox_status vox_cpu_op_strain_energy_sums(vox_backend *be, vox_operator *op, int n_fields,
                                         const vox_vec *u, const double *chi, double *sums) {
  strain_fields s;
  TRY(fields_of(be, n_fields, u, &s));
  return strain_energy_sums(be, op, n_fields, &s, chi, sums);
}
