/* SPDX-License-Identifier: BSD-3-Clause */
/* The CPU backend's fast kernel paths against plain references written here
 * from their definitions: the stencil product on interior nodes and its
 * fused smoothing step and residual (double and float), the element product
 * in slabs of element layers (with void elements and fixed dofs; double and
 * float) and the element energies from the same column sums, and the
 * filter's interior taps (all elements active, or some not), each on grids
 * with interior and boundary parts, so both paths of each kernel run; and
 * the widening of half-precision values, all 65,536, against the
 * compiler's. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "backend_ops.h"
#include "cpu/cpu.h"
#include "filter_taps.h"
#include "voxfe/element.h"
#include "voxfe/voxfe.h"

static double uniform(uint64_t *state) {
  *state = *state * 6364136223846793005u + 1442695040888963407u;
  return (double)(*state >> 11) / 9007199254740992.0 - 0.5;
}

static double *random_array(size_t n, uint64_t seed) {
  double *a = malloc(n * sizeof *a);
  for (size_t i = 0; i < n; i++) a[i] = uniform(&seed);
  return a;
}

/* largest |a - b| relative to the largest |b| */
static double relative_difference(const double *a, const double *b, size_t n) {
  double d = 0, s = 0;
  for (size_t i = 0; i < n; i++) d = fmax(d, fabs(a[i] - b[i])), s = fmax(s, fabs(b[i]));
  return d / fmax(s, 1e-300);
}

static void vec_from(vox_backend *be, vox_vec *v, const double *h) {
  CHECK(be->ops->vec->create(be, v->n, VOX_DOUBLE, v) == VOX_OK);
  be->ops->vec->upload(be, v, h);
}

/* The tolerance of a product against its double reference: double's
 * rounding, or for mixed precision (float values, float sums) float's,
 * which must leave a difference: 0 would mean the double product. */
static void check_close(double difference, vox_precision precision) {
  if (precision == VOX_PRECISION_DOUBLE)
    CHECK(difference < 1e-14);
  else
    CHECK(difference > 1e-12 && difference < 1e-5);
}

/* y = A x for a stencil of random blocks, node by node and neighbour by
 * neighbour; then the smoothing step and the residual from it; in double
 * and with float storage (mixed precision), whose values are the double
 * ones rounded. */
static void test_stencil(vox_context *ctx, vox_backend *be, int64_t nx, int64_t ny, int64_t nz,
                         vox_precision precision) {
  const vox_grid g = {.nx = nx, .ny = ny, .nz = nz, .voxel_size = {1, 1, 1}};
  const size_t nodes = (size_t)vox_grid_nodes(&g), n = 3 * nodes;
  double *a = random_array(nodes * 243, 5), *x = random_array(n, 6), *b = random_array(n, 7),
         *w = random_array(n, 8), *d = random_array(n, 9);
  vox_stencil *st;
  CHECK_OK(ctx, be->ops->mg->stencil_create(be, &g, 3, precision, &st));
  CHECK_OK(ctx, be->ops->mg->stencil_upload(be, st, a));
  double *ref = calloc(n, sizeof *ref), *got = malloc(n * sizeof *got);
  {
    double *stored = malloc(nodes * 243 * sizeof *stored);
    CHECK_OK(ctx, be->ops->mg->stencil_download(be, st, stored));
    int as_stored = 1;
    for (size_t i = 0; i < nodes * 243; i++)
      as_stored &= stored[i] == (precision == VOX_PRECISION_DOUBLE ? a[i] : (double)(float)a[i]);
    CHECK(as_stored);
    free(stored);
  }
  for (int64_t k = 0; k <= nz; k++)
    for (int64_t j = 0; j <= ny; j++)
      for (int64_t i = 0; i <= nx; i++) {
        const int64_t node = (k * (ny + 1) + j) * (nx + 1) + i;
        for (int t = 0; t < 27; t++) {
          const int64_t ii = i + t % 3 - 1, jj = j + (t / 3) % 3 - 1, kk = k + t / 9 - 1;
          if (ii < 0 || ii > nx || jj < 0 || jj > ny || kk < 0 || kk > nz) continue;
          const int64_t m = (kk * (ny + 1) + jj) * (nx + 1) + ii;
          for (int r = 0; r < 3; r++)
            for (int c = 0; c < 3; c++)
              ref[node * 3 + r] += a[(node * 27 + t) * 9 + r * 3 + c] * x[m * 3 + c];
        }
      }
  vox_vec xv = {.n = n}, bv = {.n = n}, wv = {.n = n}, dv = {.n = n}, yv = {.n = n};
  vec_from(be, &xv, x), vec_from(be, &bv, b), vec_from(be, &wv, w), vec_from(be, &dv, d);
  vec_from(be, &yv, x);
  CHECK_OK(ctx, be->ops->mg->stencil_apply(be, st, &xv, &yv));
  be->ops->vec->download(be, &yv, got);
  check_close(relative_difference(got, ref, n), precision);

  CHECK_OK(ctx, be->ops->mg->stencil_residual(be, st, &bv, &xv, &yv));
  be->ops->vec->download(be, &yv, got);
  double *expect = malloc(n * sizeof *expect), *expect_d = malloc(n * sizeof *expect_d);
  for (size_t i = 0; i < n; i++) expect[i] = b[i] - ref[i];
  check_close(relative_difference(got, expect, n), precision);

  for (int with_beta = 0; with_beta < 2; with_beta++) {
    const double alpha = 0.7, beta = with_beta ? 0.3 : 0;
    be->ops->vec->upload(be, &dv, d);
    CHECK_OK(ctx, be->ops->mg->stencil_smooth(be, st, &bv, &xv, &wv, alpha, beta, &dv, &yv));
    for (size_t i = 0; i < n; i++) {
      expect_d[i] = alpha * w[i] * (b[i] - ref[i]) + beta * d[i];
      expect[i] = x[i] + expect_d[i];
    }
    be->ops->vec->download(be, &yv, got);
    check_close(relative_difference(got, expect, n), precision);
    be->ops->vec->download(be, &dv, got);
    check_close(relative_difference(got, expect_d, n), precision);
  }
  vox_vec *v[] = {&xv, &bv, &wv, &dv, &yv};
  for (size_t i = 0; i < 5; i++) be->ops->vec->destroy(be, v[i]);
  be->ops->mg->stencil_destroy(be, st);
  free(a), free(x), free(b), free(w), free(d), free(ref), free(got), free(expect), free(expect_d);
}

/* y = sum_e m_e Ke x_e with the fixed dofs eliminated (x read as 0 there,
 * y = x there), element by element; moduli of 0 on some elements; in
 * double, and in float (VOX_APPLY_SINGLE, as the mixed-precision
 * smoother asks for it) to float's rounding. */
static void test_element_product(vox_context *ctx, vox_backend *be, int64_t nx, int64_t ny,
                                 int64_t nz, const double h[3]) {
  const vox_grid g = {.nx = nx, .ny = ny, .nz = nz, .voxel_size = {h[0], h[1], h[2]}};
  const size_t nodes = (size_t)vox_grid_nodes(&g), n = 3 * nodes,
               ne = (size_t)vox_grid_elements(&g);
  double ke[24 * 24];
  CHECK(vox_hex8_elasticity(1, 0.3, g.voxel_size, ke) == 0);
  uint8_t *fixed = calloc(n, 1);
  for (size_t node = 0; node < nodes; node += (size_t)nx + 1) /* the face x = 0 */
    fixed[3 * node] = fixed[3 * node + 1] = fixed[3 * node + 2] = 1;
  fixed[3 * (nodes / 2) + 1] = 1; /* and one inner dof */
  uint64_t seed = 3;
  double *moduli = malloc(ne * sizeof *moduli), *x = random_array(n, 4);
  for (size_t e = 0; e < ne; e++) moduli[e] = uniform(&seed) < -0.3 ? 0 : uniform(&seed) + 0.6;
  const vox_operator_desc desc = {.grid = g, .dofs_per_node = 3, .ke = ke, .dof_fixed = fixed};
  vox_operator *op;
  CHECK_OK(ctx, be->ops->op->create(be, &desc, &op));
  vox_vec mv = {.n = ne}, xv = {.n = n}, yv = {.n = n};
  vec_from(be, &mv, moduli), vec_from(be, &xv, x), vec_from(be, &yv, x);
  CHECK_OK(ctx, be->ops->op->set_moduli(be, op, &mv));
  for (int variant = 0; variant < 4; variant++) {
    const int full = variant & 1, single = variant >> 1;
    const int flags = (full ? VOX_APPLY_FULL : 0) | (single ? VOX_APPLY_SINGLE : 0);
    double *ref = calloc(n, sizeof *ref), *got = malloc(n * sizeof *got);
    for (int64_t k = 0; k < nz; k++)
      for (int64_t j = 0; j < ny; j++)
        for (int64_t i = 0; i < nx; i++) {
          int64_t node[8];
          for (int a = 0; a < 8; a++)
            node[a] = ((k + vox_hex8_corner[a][2]) * (ny + 1) + j + vox_hex8_corner[a][1]) *
                          (nx + 1) +
                      i + vox_hex8_corner[a][0];
          const double m = moduli[(k * ny + j) * nx + i];
          for (int r = 0; r < 24; r++)
            for (int c = 0; c < 24; c++) {
              const int64_t dr = node[r / 3] * 3 + r % 3, dc = node[c / 3] * 3 + c % 3;
              if (!full && fixed[dc]) continue;
              ref[dr] += m * ke[r * 24 + c] * x[dc];
            }
        }
    if (!full)
      for (size_t i = 0; i < n; i++)
        if (fixed[i]) ref[i] = x[i];
    CHECK_OK(ctx, be->ops->op->apply(be, op, &xv, &yv, flags));
    be->ops->vec->download(be, &yv, got);
    if (single) {
      const double d = relative_difference(got, ref, n);
      CHECK(d > 1e-12 && d < 1e-5);
    } else {
      CHECK(relative_difference(got, ref, n) < 1e-13);
    }
    free(ref), free(got);
  }
  /* the element energies u_e' Ke u_e, row by row */
  double *energy = malloc(ne * sizeof *energy), *expect = malloc(ne * sizeof *expect);
  for (int64_t k = 0; k < nz; k++)
    for (int64_t j = 0; j < ny; j++)
      for (int64_t i = 0; i < nx; i++) {
        double ue[24], s = 0;
        for (int a = 0; a < 8; a++)
          for (int c = 0; c < 3; c++)
            ue[a * 3 + c] = x[(((k + vox_hex8_corner[a][2]) * (ny + 1) + j +
                                vox_hex8_corner[a][1]) * (nx + 1) + i + vox_hex8_corner[a][0]) * 3 + c];
        for (int r = 0; r < 24; r++)
          for (int c = 0; c < 24; c++) s += ue[r] * ke[r * 24 + c] * ue[c];
        expect[(k * ny + j) * nx + i] = s;
      }
  vox_vec ev = {.n = ne};
  vec_from(be, &ev, moduli);
  CHECK_OK(ctx, be->ops->op->element_energy(be, op, &xv, &ev, 0));
  be->ops->vec->download(be, &ev, energy);
  CHECK(relative_difference(energy, expect, ne) < 1e-13);
  be->ops->vec->destroy(be, &ev);
  free(energy), free(expect);
  be->ops->vec->destroy(be, &mv), be->ops->vec->destroy(be, &xv), be->ops->vec->destroy(be, &yv);
  be->ops->op->destroy(be, op);
  free(fixed), free(moduli), free(x);
}

/* On a periodic grid (the products by colours, not slabs): the float
 * product (VOX_APPLY_SINGLE) against the double one, to float's rounding
 * and not equal to it. */
static void test_element_product_periodic(vox_context *ctx, vox_backend *be) {
  const vox_grid g = {.nx = 6, .ny = 4, .nz = 4, .voxel_size = {1, 1, 1}, .periodic = 1};
  const size_t nodes = (size_t)vox_grid_nodes(&g), n = 3 * nodes,
               ne = (size_t)vox_grid_elements(&g);
  double ke[24 * 24];
  CHECK(vox_hex8_elasticity(1, 0.3, g.voxel_size, ke) == 0);
  uint8_t *fixed = calloc(n, 1);
  uint64_t seed = 21;
  double *moduli = malloc(ne * sizeof *moduli), *x = random_array(n, 22);
  for (size_t e = 0; e < ne; e++) moduli[e] = uniform(&seed) < -0.3 ? 1e-9 : uniform(&seed) + 0.6;
  const vox_operator_desc desc = {.grid = g, .dofs_per_node = 3, .ke = ke, .dof_fixed = fixed};
  vox_operator *op;
  CHECK_OK(ctx, be->ops->op->create(be, &desc, &op));
  vox_vec mv = {.n = ne}, xv = {.n = n}, yv = {.n = n};
  vec_from(be, &mv, moduli), vec_from(be, &xv, x), vec_from(be, &yv, x);
  CHECK_OK(ctx, be->ops->op->set_moduli(be, op, &mv));
  double *y_double = malloc(n * sizeof *y_double), *y_single = malloc(n * sizeof *y_single);
  CHECK_OK(ctx, be->ops->op->apply(be, op, &xv, &yv, 0));
  be->ops->vec->download(be, &yv, y_double);
  CHECK_OK(ctx, be->ops->op->apply(be, op, &xv, &yv, VOX_APPLY_SINGLE));
  be->ops->vec->download(be, &yv, y_single);
  const double d = relative_difference(y_single, y_double, n);
  CHECK(d > 1e-12 && d < 1e-5);
  be->ops->vec->destroy(be, &mv), be->ops->vec->destroy(be, &xv), be->ops->vec->destroy(be, &yv);
  be->ops->op->destroy(be, op);
  free(fixed), free(moduli), free(x), free(y_double), free(y_single);
}

/* out_e = sum_taps w in_i * (1 / sum_taps w) over the active i inside the
 * grid, tap by tap with bounds tests, for active e: to the bit, the products
 * kept apart from the sums (volatile) as the filter keeps them, whichever way
 * it walks the grid (along rows, element by element, at the faces). */
static void test_filter(vox_context *ctx, vox_backend *be, int64_t nx, int64_t ny, int64_t nz,
                        double radius, int some_inactive) {
  const vox_grid g = {.nx = nx, .ny = ny, .nz = nz, .voxel_size = {1, 1, 1}};
  const size_t ne = (size_t)vox_grid_elements(&g);
  uint8_t *active = malloc(ne);
  for (size_t e = 0; e < ne; e++) active[e] = !some_inactive || e % 7 != 3;
  double *in = random_array(ne, 12), *ref = calloc(ne, sizeof *ref), *got = malloc(ne * 8);
  vox_filter_taps taps;
  CHECK_OK(ctx, vox_filter_taps_make(ctx, &g, radius, &taps));
  for (int64_t k = 0; k < nz; k++)
    for (int64_t j = 0; j < ny; j++)
      for (int64_t i = 0; i < nx; i++) {
        const int64_t e = (k * ny + j) * nx + i;
        if (!active[e]) continue;
        double s = 0, hs = 0;
        for (int t = 0; t < taps.n; t++) {
          const int64_t ii = i + taps.offset[t][0], jj = j + taps.offset[t][1],
                        kk = k + taps.offset[t][2];
          if (ii < 0 || ii >= nx || jj < 0 || jj >= ny || kk < 0 || kk >= nz) continue;
          const int64_t m = (kk * ny + jj) * nx + ii;
          if (!active[m]) continue;
          const volatile double p = taps.weight[t] * in[m];
          s += p, hs += taps.weight[t];
        }
        ref[e] = s * (1 / hs);
      }
  free(taps.offset), free(taps.weight);
  vox_filter *f;
  CHECK_OK(ctx, be->ops->design->filter_create(be, &g, radius, active, &f));
  vox_vec iv = {.n = ne}, ov = {.n = ne};
  vec_from(be, &iv, in), vec_from(be, &ov, in);
  CHECK_OK(ctx, be->ops->design->filter_apply(be, f, &iv, &ov));
  be->ops->vec->download(be, &ov, got);
  size_t differ = 0;
  for (size_t e = 0; e < ne; e++) differ += got[e] != ref[e];
  CHECK(differ == 0);
  be->ops->design->filter_destroy(be, f);
  be->ops->vec->destroy(be, &iv), be->ops->vec->destroy(be, &ov);
  free(active), free(in), free(ref), free(got);
}

/* vox_cpu_half_to_double against the compiler's conversion, for every one
 * of the 65,536 half-precision values (NaNs: a NaN of the same sign). */
static void test_half_to_double(void) {
  int wrong = 0;
  for (uint32_t b = 0; b < 65536; b++) {
    const uint16_t bits = (uint16_t)b;
    _Float16 h;
    memcpy(&h, &bits, sizeof h);
    const double want = (double)h, got = vox_cpu_half_to_double(h);
    const int same = isnan(want) ? isnan(got) && signbit(got) == signbit(want)
                                 : memcmp(&want, &got, sizeof got) == 0;
    wrong += !same;
  }
  fprintf(stderr, "half to double: %d of 65536 values differ from the compiler's\n", wrong);
  CHECK(wrong == 0);
}

int main(void) {
  test_half_to_double();
  vox_context *ctx;
  vox_backend *be;
  vox_context_create(&ctx);
  CHECK_OK(ctx, vox_backend_create(ctx, VOX_DEVICE_CPU, &be));
  for (int mixed = 0; mixed < 2; mixed++) {
    const vox_precision p = mixed ? VOX_PRECISION_MIXED : VOX_PRECISION_DOUBLE;
    test_stencil(ctx, be, 6, 5, 4, p);
    test_stencil(ctx, be, 1, 3, 2, p); /* no interior node */
  }
  /* (the double product by Ke's reflection modes, element_modes.h: cubes
   * and bricks of three edge lengths) */
  const double cube[3] = {1, 1, 1}, brick[3] = {1, 1.3, 0.8};
  test_element_product(ctx, be, 9, 4, 3, cube); /* odd: a last element alone */
  test_element_product(ctx, be, 8, 3, 2, brick);
  test_element_product(ctx, be, 5, 3, 9, cube); /* slabs of layers, an odd number */
  test_element_product_periodic(ctx, be);
  test_filter(ctx, be, 11, 9, 8, 2.56, 0);
  test_filter(ctx, be, 11, 9, 8, 2.56, 1);
  test_filter(ctx, be, 4, 3, 3, 2.56, 0); /* no interior element */
  test_filter(ctx, be, 37, 6, 5, 3.2, 1); /* long rows, some taps reach past two faces */
  vox_backend_destroy(be);
  vox_context_destroy(ctx);
  CHECK_DONE();
}
