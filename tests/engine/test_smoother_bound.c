/* SPDX-License-Identifier: BSD-3-Clause */
/* The smoother's spectrum bound (engine/smoother_bound.c): against an
 * independent computation for the element matrices, and, the property it
 * stands for, above the largest eigenvalue of D^-1 A of an assembled
 * operator with random moduli and a 1e-9 contrast, and close to it there;
 * the same for the block bound (B^-1 K, B the nodes' 3 x 3 diagonal
 * blocks) against a power method with 3 x 3 solves and against B^-1 A. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "fem.h"
#include "smoother_bound.h"
#include "voxfe/voxfe.h"

extern void dsyev_(const char *jobz, const char *uplo, const int *n, double *a, const int *lda,
                   double *w, double *work, const int *lwork, int *info);
extern void dsygv_(const int *itype, const char *jobz, const char *uplo, const int *n, double *a,
                   const int *lda, double *b, const int *ldb, double *w, double *work,
                   const int *lwork, int *info);

static double uniform(uint64_t *state) {
  *state = *state * 6364136223846793005u + 1442695040888963407u;
  return (double)(*state >> 11) / 9007199254740992.0;
}

/* lambda_max(diag(K)^-1 K) by 20000 steps of the power method on the
 * symmetric scaling: a different algorithm from dsyev's. */
static double power_method(const double *k, int n) {
  double v[24], w[24], lambda = 0;
  for (int i = 0; i < n; i++) v[i] = 1 + 0.37 * i * (i % 2 ? -1 : 1);
  for (int it = 0; it < 20000; it++) {
    double norm = 0;
    for (int i = 0; i < n; i++) {
      double s = 0;
      for (int j = 0; j < n; j++) s += k[i * n + j] * v[j] / sqrt(k[j * n + j]);
      w[i] = s / sqrt(k[i * n + i]);
      norm += w[i] * w[i];
    }
    lambda = sqrt(norm);
    for (int i = 0; i < n; i++) v[i] = w[i] / lambda;
  }
  return lambda;
}

/* x = B^-1 y for a 3 x 3 block B (row-major) by Gaussian elimination with
 * partial pivoting. */
static void solve3(const double *b, const double *y, double *x) {
  double a[3][4];
  for (int i = 0; i < 3; i++) {
    for (int j = 0; j < 3; j++) a[i][j] = b[3 * i + j];
    a[i][3] = y[i];
  }
  for (int c = 0; c < 3; c++) {
    int p = c;
    for (int i = c + 1; i < 3; i++)
      if (fabs(a[i][c]) > fabs(a[p][c])) p = i;
    for (int j = 0; j < 4; j++) {
      const double t = a[c][j];
      a[c][j] = a[p][j], a[p][j] = t;
    }
    for (int i = c + 1; i < 3; i++) {
      const double f = a[i][c] / a[c][c];
      for (int j = c; j < 4; j++) a[i][j] -= f * a[c][j];
    }
  }
  for (int i = 2; i >= 0; i--) {
    double s = a[i][3];
    for (int j = i + 1; j < 3; j++) s -= a[i][j] * x[j];
    x[i] = s / a[i][i];
  }
}

/* lambda_max(B^-1 K), B the 3 x 3 block diagonal of the 24 x 24 K, by
 * 20000 steps of the power method with the Rayleigh quotient x'Kx / x'Bx
 * (B^-1 K is self-adjoint in the B inner product). */
static double block_power_method(const double *k) {
  double v[24], y[24], w[24], lambda = 0;
  for (int i = 0; i < 24; i++) v[i] = 1 + 0.37 * i * (i % 2 ? -1 : 1);
  for (int it = 0; it < 20000; it++) {
    for (int i = 0; i < 24; i++) {
      y[i] = 0;
      for (int j = 0; j < 24; j++) y[i] += k[i * 24 + j] * v[j];
    }
    double vkv = 0, vbv = 0, norm = 0;
    for (int a = 0; a < 8; a++) {
      double blk[9];
      for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) blk[3 * i + j] = k[(3 * a + i) * 24 + 3 * a + j];
      solve3(blk, y + 3 * a, w + 3 * a);
      for (int i = 0; i < 3; i++) {
        vkv += v[3 * a + i] * y[3 * a + i];
        for (int j = 0; j < 3; j++) vbv += v[3 * a + i] * blk[3 * i + j] * v[3 * a + j];
      }
    }
    lambda = vkv / vbv;
    for (int i = 0; i < 24; i++) norm += w[i] * w[i];
    for (int i = 0; i < 24; i++) v[i] = w[i] / sqrt(norm);
  }
  return lambda;
}

/* The block bound: against the power method on B^-1 K, the same as the
 * diagonal bound with blocks of one, scale-free, refused for a block size
 * that does not divide the matrix. */
static void test_block_elements(vox_context *ctx) {
  const double h[3] = {1, 1, 1}, ha[3] = {1, 0.5, 2};
  double ke[24 * 24], bound, diagonal, one;
  CHECK(vox_hex8_elasticity(1, 0.3, h, ke) == 0);
  CHECK_OK(ctx, vox_block_jacobi_spectrum_bound(ctx, ke, 24, 3, &bound));
  const double ref = block_power_method(ke);
  fprintf(stderr, "hex8 elasticity, nu 0.3: block bound %.9f, power method %.9f\n", bound, ref);
  CHECK(fabs(bound - ref) <= 1e-5 * ref);
  CHECK_OK(ctx, vox_jacobi_spectrum_bound(ctx, ke, 24, &diagonal));
  CHECK(bound < diagonal);
  CHECK_OK(ctx, vox_block_jacobi_spectrum_bound(ctx, ke, 24, 1, &one));
  CHECK(fabs(one - diagonal) <= 1e-9 * diagonal);
  CHECK(vox_hex8_elasticity(210e3, 0.31, ha, ke) == 0);
  CHECK_OK(ctx, vox_block_jacobi_spectrum_bound(ctx, ke, 24, 3, &bound));
  CHECK(fabs(bound - block_power_method(ke)) <= 1e-5 * bound);
  CHECK(vox_block_jacobi_spectrum_bound(ctx, ke, 24, 5, &bound) == VOX_ERR_INVALID_ARGUMENT);
}

static void test_elements(vox_context *ctx) {
  const double h[3] = {1, 1, 1}, ha[3] = {1, 0.5, 2};
  double ke[24 * 24], kc[8 * 8], bound;
  CHECK(vox_hex8_elasticity(1, 0.3, h, ke) == 0);
  CHECK_OK(ctx, vox_jacobi_spectrum_bound(ctx, ke, 24, &bound));
  const double ref = power_method(ke, 24);
  fprintf(stderr, "hex8 elasticity, nu 0.3: bound %.9f, power method %.9f\n", bound, ref);
  CHECK(fabs(bound - ref) <= 1e-5 * ref);
  CHECK(vox_hex8_elasticity(210e3, 0.31, ha, ke) == 0); /* scale-free, anisotropic voxels */
  CHECK_OK(ctx, vox_jacobi_spectrum_bound(ctx, ke, 24, &bound));
  CHECK(fabs(bound - power_method(ke, 24)) <= 1e-5 * bound);
  CHECK(vox_hex8_conduction(1, h, kc) == 0);
  CHECK_OK(ctx, vox_jacobi_spectrum_bound(ctx, kc, 8, &bound));
  CHECK(fabs(bound - power_method(kc, 8)) <= 1e-5 * bound);
  kc[0] = 0; /* not a stiffness matrix */
  CHECK(vox_jacobi_spectrum_bound(ctx, kc, 8, &bound) == VOX_ERR_INVALID_ARGUMENT);
}

/* D^-1 A of a small clamped block with solid/void moduli (random, or one
 * solid element in void), assembled column by column from the operator,
 * against the bound; `least` is how close it must come. */
static void test_assembled(vox_context *ctx, vox_backend *be, int single, double least) {
  vox_grid g = {.nx = 6, .ny = 5, .nz = 4, .voxel_size = {1, 1, 1}};
  vox_model m;
  CHECK_OK(ctx, vox_model_init(ctx, &m, &g));
  memset(m.label, 1, (size_t)vox_grid_elements(&g));
  vox_material mat = {.label = 1, .youngs_modulus = 1, .poisson_ratio = 0.3};
  CHECK_OK(ctx, vox_model_add_material(ctx, &m, &mat));
  for (int64_t k = 0; k <= g.nz; k++)
    for (int64_t j = 0; j <= g.ny; j++)
      for (int c = 0; c < 3; c++)
        CHECK_OK(ctx, vox_model_add_constraint(ctx, &m, (k * (g.ny + 1) + j) * (g.nx + 1), c, 0));
  vox_fem *fem;
  CHECK_OK(ctx, vox_fem_create(ctx, be, &m, &fem));
  const size_t ne = fem->n_elements, n = fem->n_dofs;
  double *rho = malloc(ne * sizeof *rho), *a = malloc(n * n * sizeof *a),
         *col = malloc(n * sizeof *col), *d = malloc(n * sizeof *d), *w = malloc(n * sizeof *w);
  uint64_t seed = 7;
  for (size_t e = 0; e < ne; e++) /* element 75 is (3, 2, 2), off the clamped face */
    rho[e] = single ? e == 75 : uniform(&seed) < 0.5;
  vox_vec r, x, y;
  be->ops->vec->create(be, ne, VOX_DOUBLE, &r);
  be->ops->vec->upload(be, &r, rho);
  be->ops->design->simp_moduli(be, &r, &fem->e_solid, 3, 1e-9, &fem->moduli);
  CHECK_OK(ctx, vox_fem_update(fem));
  be->ops->vec->download(be, &fem->inv_diag, d);
  be->ops->vec->create(be, n, VOX_DOUBLE, &x);
  be->ops->vec->create(be, n, VOX_DOUBLE, &y);
  double *raw = malloc(n * n * sizeof *raw), *blocks = calloc(n * n, sizeof *blocks);
  for (size_t j = 0; j < n; j++) { /* column j of A, and of D^-1/2 A D^-1/2 */
    memset(col, 0, n * sizeof *col);
    col[j] = 1;
    be->ops->vec->upload(be, &x, col);
    CHECK_OK(ctx, be->ops->op->apply(be, fem->op, &x, &y, 0));
    be->ops->vec->download(be, &y, col);
    for (size_t i = 0; i < n; i++) {
      raw[j * n + i] = col[i];
      a[j * n + i] = col[i] * sqrt(d[i] * d[j]);
      if (i / 3 == j / 3) blocks[j * n + i] = col[i]; /* dofs 3 m + c: node m's block */
    }
  }
  const int nn = (int)n, lwork = 8 * nn;
  double *work = malloc((size_t)lwork * sizeof *work);
  int info = 0;
  dsyev_("N", "U", &nn, a, &nn, w, work, &lwork, &info);
  CHECK(info == 0);
  fprintf(stderr, "assembled, 1e-9 contrast, %s: lambda_max(D^-1 A) %.6f, bound %.6f\n",
          single ? "one solid element" : "random", w[n - 1], fem->jacobi_bound);
  CHECK(w[n - 1] <= fem->jacobi_bound);
  CHECK(w[n - 1] >= least * fem->jacobi_bound);
  CHECK(w[0] > 0);
  /* lambda_max(B^-1 A), B the nodes' 3 x 3 blocks of A, against the block bound */
  const int itype = 1;
  double ke[24 * 24], block_bound;
  const double h[3] = {1, 1, 1};
  CHECK(vox_hex8_elasticity(1, 0.3, h, ke) == 0);
  CHECK_OK(ctx, vox_block_jacobi_spectrum_bound(ctx, ke, 24, 3, &block_bound));
  dsygv_(&itype, "N", "U", &nn, raw, &nn, blocks, &nn, w, work, &lwork, &info);
  CHECK(info == 0);
  fprintf(stderr, "assembled, 1e-9 contrast, %s: lambda_max(B^-1 A) %.6f, block bound %.6f\n",
          single ? "one solid element" : "random", w[n - 1], block_bound);
  CHECK(w[n - 1] <= block_bound);
  CHECK(w[n - 1] >= least * block_bound);
  CHECK(w[0] > 0);
  free(raw), free(blocks);
  be->ops->vec->destroy(be, &r), be->ops->vec->destroy(be, &x), be->ops->vec->destroy(be, &y);
  free(rho), free(a), free(col), free(d), free(w), free(work);
  vox_fem_destroy(fem);
  vox_model_free(&m);
}

int main(void) {
  vox_context *ctx;
  vox_backend *be;
  CHECK_OK(NULL, vox_context_create(&ctx));
  CHECK_OK(ctx, vox_backend_create(ctx, VOX_DEVICE_CPU, &be));
  test_elements(ctx);
  test_block_elements(ctx);
  test_assembled(ctx, be, 0, 0.75);
  test_assembled(ctx, be, 1, 0.999); /* the bound is reached at an isolated element */
  vox_backend_destroy(be);
  vox_context_destroy(ctx);
  CHECK_DONE();
}
