/* The smoother's spectrum bound (engine/smoother_bound.c): against an
 * independent computation for the element matrices, and, the property it
 * stands for, above the largest eigenvalue of D^-1 A of an assembled
 * operator with random moduli and a 1e-9 contrast, and close to it there. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "fem.h"
#include "smoother_bound.h"
#include "voxfe/voxfe.h"

extern void dsyev_(const char *jobz, const char *uplo, const int *n, double *a, const int *lda,
                   double *w, double *work, const int *lwork, int *info);

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
  be->ops->vec_create(be, ne, &r);
  be->ops->vec_upload(be, &r, rho);
  be->ops->simp_moduli(be, &r, &fem->e_solid, 3, 1e-9, &fem->moduli);
  CHECK_OK(ctx, vox_fem_update(fem));
  be->ops->vec_download(be, &fem->inv_diag, d);
  be->ops->vec_create(be, n, &x);
  be->ops->vec_create(be, n, &y);
  for (size_t j = 0; j < n; j++) { /* column j of D^-1/2 A D^-1/2 */
    memset(col, 0, n * sizeof *col);
    col[j] = sqrt(d[j]);
    be->ops->vec_upload(be, &x, col);
    CHECK_OK(ctx, be->ops->op_apply(be, fem->op, &x, &y, 0));
    be->ops->vec_download(be, &y, col);
    for (size_t i = 0; i < n; i++) a[j * n + i] = col[i] * sqrt(d[i]);
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
  be->ops->vec_destroy(be, &r), be->ops->vec_destroy(be, &x), be->ops->vec_destroy(be, &y);
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
  test_assembled(ctx, be, 0, 0.75);
  test_assembled(ctx, be, 1, 0.999); /* the bound is reached at an isolated element */
  vox_backend_destroy(be);
  vox_context_destroy(ctx);
  CHECK_DONE();
}
