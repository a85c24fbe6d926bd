/* SPDX-License-Identifier: BSD-3-Clause */
/* The coarse-level direct solver (CHOLMOD): stencils built by hand, with
 * values that vary per node pair and non-symmetric off-diagonal blocks (so
 * that a transposed block or a wrong neighbour shows), solved against a known
 * x through a reference matrix-vector product; refactorisation with new
 * values; indefinite matrices reported as errors, silently. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../check.h"
#include "cpu/cpu.h"
#include "voxfe/voxfe.h"

/* A symmetric weight of the node pair {n, m}, in [0.5, 1.6]. */
static double pair_weight(int64_t n, int64_t m, double seed) {
  const double s = (double)(n + m), p = (double)(n * m % 97);
  return 1 + 0.4 * sin(0.7 * s + seed) + 0.2 * cos(0.3 * p + 2 * seed);
}

/* Fills st->value with a symmetric, strictly diagonally dominant (so SPD)
 * matrix: the block of node n with neighbour m != n is -w(n,m) G if n < m and
 * -w(n,m) G' if n > m (G not symmetric); the diagonal block couples the
 * components symmetrically and dominates. Blocks reaching out of the grid get
 * NaN: the solver must not read them. */
static void fill_stencil(vox_stencil *st, double seed) {
  static const double g[3][3] = {{1.0, 0.3, -0.2}, {-0.5, 0.8, 0.1}, {0.25, -0.4, 0.6}};
  const int64_t nx = st->grid.nx, ny = st->grid.ny, nz = st->grid.nz;
  const int dpn = st->dpn;
  for (int64_t k = 0; k <= nz; k++)
    for (int64_t j = 0; j <= ny; j++)
      for (int64_t i = 0; i <= nx; i++) {
        const int64_t n = (k * (ny + 1) + j) * (nx + 1) + i;
        double offsum[3] = {0, 0, 0};
        for (int t = 0; t < 27; t++) {
          double *b = st->value + (size_t)(n * 27 + t) * dpn * dpn;
          const int64_t ii = i + t % 3 - 1, jj = j + t / 3 % 3 - 1, kk = k + t / 9 - 1;
          if (ii < 0 || ii > nx || jj < 0 || jj > ny || kk < 0 || kk > nz) {
            for (int q = 0; q < dpn * dpn; q++) b[q] = NAN;
            continue;
          }
          if (t == 13) continue;
          const int64_t m = (kk * (ny + 1) + jj) * (nx + 1) + ii;
          const double w = pair_weight(n, m, seed);
          for (int r = 0; r < dpn; r++)
            for (int c = 0; c < dpn; c++) {
              const double gv = dpn == 1 ? 1 : n < m ? g[r][c] : g[c][r];
              b[r * dpn + c] = -w * gv;
              offsum[r] += fabs(w * gv);
            }
        }
        double *d = st->value + (size_t)(n * 27 + 13) * dpn * dpn;
        const double e = 0.3 * cos((double)n + seed); /* symmetric intra-node coupling */
        for (int r = 0; r < dpn; r++)
          for (int c = 0; c < dpn; c++) d[r * dpn + c] = abs(r - c) == 1 ? e : 0;
        for (int r = 0; r < dpn; r++)
          d[r * dpn + r] = offsum[r] + (dpn > 1 ? 2 * fabs(e) : 0) + 0.05 + 0.01 * (double)(n % 7);
      }
}

/* y = A x from the stencil, skipping neighbours outside the grid. */
static void ref_apply(const vox_stencil *st, const double *x, double *y) {
  const int64_t nx = st->grid.nx, ny = st->grid.ny, nz = st->grid.nz;
  const int dpn = st->dpn;
  for (int64_t k = 0; k <= nz; k++)
    for (int64_t j = 0; j <= ny; j++)
      for (int64_t i = 0; i <= nx; i++) {
        const int64_t n = (k * (ny + 1) + j) * (nx + 1) + i;
        for (int r = 0; r < dpn; r++) {
          double s = 0;
          for (int t = 0; t < 27; t++) {
            const int64_t ii = i + t % 3 - 1, jj = j + t / 3 % 3 - 1, kk = k + t / 9 - 1;
            if (ii < 0 || ii > nx || jj < 0 || jj > ny || kk < 0 || kk > nz) continue;
            const int64_t m = (kk * (ny + 1) + jj) * (nx + 1) + ii;
            const double *b = st->value + (size_t)(n * 27 + t) * dpn * dpn;
            for (int c = 0; c < dpn; c++) s += b[r * dpn + c] * x[m * dpn + c];
          }
          y[n * dpn + r] = s;
        }
      }
}

static vox_stencil make_stencil(int64_t nx, int64_t ny, int64_t nz, int dpn) {
  vox_stencil st = {.grid = {.nx = nx, .ny = ny, .nz = nz, .voxel_size = {1, 1, 1}}, .dpn = dpn};
  st.n_nodes = (size_t)((nx + 1) * (ny + 1) * (nz + 1));
  st.n_dofs = st.n_nodes * (size_t)dpn;
  st.value = calloc(st.n_nodes * 27 * (size_t)(dpn * dpn), sizeof *st.value);
  return st;
}

/* max |a - b| / max |b| */
static double rel_err(const double *a, const double *b, size_t n) {
  double num = 0, den = 0;
  for (size_t q = 0; q < n; q++) {
    num = fmax(num, fabs(a[q] - b[q]));
    den = fmax(den, fabs(b[q]));
  }
  return num / den;
}

/* Runs `factor` with stdout and stderr sent to a temporary file; returns its
 * status and sets *printed to the number of bytes written meanwhile. */
static vox_status factor_silently(vox_backend *be, vox_stencil *st, long *printed) {
  fflush(stdout);
  fflush(stderr);
  FILE *tmp = tmpfile();
  const int out = dup(1), err = dup(2);
  dup2(fileno(tmp), 1);
  dup2(fileno(tmp), 2);
  const vox_status s = vox_cpu_stencil_factor(be, st);
  fflush(stdout);
  fflush(stderr);
  dup2(out, 1);
  dup2(err, 2);
  close(out);
  close(err);
  fseek(tmp, 0, SEEK_END);
  *printed = ftell(tmp);
  fclose(tmp);
  return s;
}

/* Factor, solve against a known x, refactor with new values, refactor with
 * the values doubled; then an indefinite matrix (all of the diagonal, or one
 * diagonal entry, negated) must fail silently, and the factor recover. */
static void test_case(vox_context *ctx, vox_backend *be, int64_t nx, int64_t ny, int64_t nz,
                      int dpn) {
  vox_stencil st = make_stencil(nx, ny, nz, dpn);
  const size_t n = st.n_dofs, nv = st.n_nodes * 27 * (size_t)(dpn * dpn);
  double *x = malloc(n * sizeof *x), *b = malloc(n * sizeof *b), *y = malloc(n * sizeof *y);
  for (size_t q = 0; q < n; q++) x[q] = sin(1.3 * (double)q) + 0.5 * cos(0.17 * (double)q * q);
  vox_vec bv = {.data = b, .n = n}, yv = {.data = y, .n = n};

  /* solving before factoring is an error */
  CHECK(vox_cpu_stencil_solve(be, &st, &bv, &yv) != VOX_OK);

  fill_stencil(&st, 0.0);
  ref_apply(&st, x, b);
  CHECK_OK(ctx, vox_cpu_stencil_factor(be, &st));
  CHECK(st.factor != NULL);
  CHECK_OK(ctx, vox_cpu_stencil_solve(be, &st, &bv, &yv));
  CHECK_CLOSE(rel_err(y, x, n), 0, 1e-10);
  /* a second solve reuses the workspace; x may alias b */
  memcpy(y, b, n * sizeof *y);
  CHECK_OK(ctx, vox_cpu_stencil_solve(be, &st, &yv, &yv));
  CHECK_CLOSE(rel_err(y, x, n), 0, 1e-10);

  /* new values on the same pattern */
  fill_stencil(&st, 1.0);
  ref_apply(&st, x, b);
  CHECK_OK(ctx, vox_cpu_stencil_factor(be, &st));
  CHECK_OK(ctx, vox_cpu_stencil_solve(be, &st, &bv, &yv));
  CHECK_CLOSE(rel_err(y, x, n), 0, 1e-10);
  /* doubled values, same b: x halves */
  for (size_t q = 0; q < nv; q++) st.value[q] *= 2;
  CHECK_OK(ctx, vox_cpu_stencil_factor(be, &st));
  CHECK_OK(ctx, vox_cpu_stencil_solve(be, &st, &bv, &yv));
  for (size_t q = 0; q < n; q++) y[q] *= 2;
  CHECK_CLOSE(rel_err(y, x, n), 0, 1e-10);

  /* indefinite: the whole diagonal negated */
  double *saved = malloc(nv * sizeof *saved);
  memcpy(saved, st.value, nv * sizeof *saved);
  for (size_t node = 0; node < st.n_nodes; node++)
    for (int r = 0; r < dpn; r++) st.value[((node * 27 + 13) * dpn + r) * dpn + r] *= -1;
  long printed = -1;
  vox_context_clear_error(ctx);
  CHECK(factor_silently(be, &st, &printed) == VOX_ERR_INVALID_ARGUMENT);
  CHECK(printed == 0);
  CHECK(strstr(vox_context_message(ctx), "not positive definite") != NULL);
  CHECK(vox_cpu_stencil_solve(be, &st, &bv, &yv) != VOX_OK);

  /* indefinite: one diagonal entry, of a node in the middle, negated */
  memcpy(st.value, saved, nv * sizeof *saved);
  const size_t bad_node = st.n_nodes / 2;
  const int bad_r = dpn - 1;
  st.value[((bad_node * 27 + 13) * dpn + bad_r) * dpn + bad_r] *= -1;
  vox_context_clear_error(ctx);
  CHECK(factor_silently(be, &st, &printed) == VOX_ERR_INVALID_ARGUMENT);
  CHECK(printed == 0);
  /* the pivots before that dof's are those of an SPD principal submatrix, so
   * whatever the ordering, the factorisation fails exactly there */
  char where[64];
  snprintf(where, sizeof where, "dof %d of coarse node %zu)", bad_r, bad_node);
  CHECK(strstr(vox_context_message(ctx), "not positive definite") != NULL);
  CHECK(strstr(vox_context_message(ctx), where) != NULL);

  /* back to SPD: the factor recovers */
  memcpy(st.value, saved, nv * sizeof *saved);
  CHECK_OK(ctx, vox_cpu_stencil_factor(be, &st));
  CHECK_OK(ctx, vox_cpu_stencil_solve(be, &st, &bv, &yv));
  for (size_t q = 0; q < n; q++) y[q] *= 2;
  CHECK_CLOSE(rel_err(y, x, n), 0, 1e-10);

  /* wrong vector length */
  vox_vec short_v = {.data = y, .n = n - 1};
  CHECK(vox_cpu_stencil_solve(be, &st, &bv, &short_v) != VOX_OK);

  vox_cpu_stencil_factor_free(&st);
  CHECK(st.factor == NULL);
  vox_cpu_stencil_factor_free(&st); /* safe twice */
  free(saved);
  free(st.value);
  free(x);
  free(b);
  free(y);
}

int main(void) {
  vox_context *ctx;
  if (vox_context_create(&ctx) != VOX_OK) return 1;
  vox_backend be = {.ctx = ctx, .threads = 1};

  test_case(ctx, &be, 5, 4, 3, 1);    /* scalar, 120 dofs */
  test_case(ctx, &be, 5, 4, 3, 3);    /* blocks, 360 dofs */
  test_case(ctx, &be, 1, 1, 1, 3);    /* the smallest coarse grid */
  test_case(ctx, &be, 2, 1, 0, 1);    /* a flat grid: neighbours missing along z */
  test_case(ctx, &be, 12, 11, 10, 3); /* large enough for CHOLMOD's supernodal path */

  vox_context_destroy(ctx);
  CHECK_DONE();
}
