/* SPDX-License-Identifier: BSD-3-Clause */
/* Homogenization of periodic cells on the CPU (Zhang et al. 2023): C^H of a solid
 * cell is the material's stiffness matrix; of a laminate, the exact
 * laminate tensor (Voigt along the layers, Reuss across); of random
 * two-phase designs, symmetric positive definite with bulk and shear moduli
 * under the Hashin-Shtrikman upper bounds; sensitivities against central
 * differences; the hydrostatic case against the normal strains; C^H's
 * energy form against its dot-product form; the six
 * fields in half precision; and the periodic multigrid against Jacobi-PCG. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "homogenize.h"
#include "multigrid.h"
#include "voxfe/voxfe.h"

static double uniform(uint64_t *state) {
  *state = *state * 6364136223846793005u + 1442695040888963407u;
  return (double)(*state >> 11) / 9007199254740992.0;
}

/* The isotropic stiffness in the seed's Voigt order (xx yy zz xy yz zx). */
static void isotropic(double E, double nu, double c[36]) {
  const double lambda = E * nu / ((1 + nu) * (1 - 2 * nu)), mu = E / (2 * (1 + nu));
  memset(c, 0, 36 * sizeof *c);
  for (int i = 0; i < 3; i++) {
    for (int j = 0; j < 3; j++) c[i * 6 + j] = lambda + (i == j ? 2 * mu : 0);
    c[(i + 3) * 7] = mu;
  }
}

/* A cell of n^3 voxels of edge 1/n with two materials of one Poisson ratio
 * (labels 1 and 2); the caller fills the labels. */
static void make_cell(vox_context *ctx, vox_model *m, int nx, int ny, int nz, double e1, double e2,
                      double nu) {
  vox_grid g = {.nx = nx, .ny = ny, .nz = nz, .voxel_size = {1.0 / nx, 1.0 / ny, 1.0 / nz}};
  CHECK_OK(ctx, vox_model_init(ctx, m, &g));
  memset(m->label, 1, (size_t)vox_grid_elements(&g));
  vox_material a = {.label = 1, .youngs_modulus = e1, .poisson_ratio = nu, .role = VOX_ROLE_DESIGN};
  vox_material b = {.label = 2, .youngs_modulus = e2, .poisson_ratio = nu, .role = VOX_ROLE_DESIGN};
  CHECK_OK(ctx, vox_model_add_material(ctx, m, &a));
  CHECK_OK(ctx, vox_model_add_material(ctx, m, &b));
}

static void solver(vox_solver_options *o) {
  vox_solver_options_default(o);
  o->rtol = 1e-12;
  o->precision = VOX_PRECISION_DOUBLE;
}

static void test_solid(vox_context *ctx, vox_backend *be) {
  vox_model m;
  make_cell(ctx, &m, 16, 24, 8, 2.5, 1, 0.3);
  vox_solver_options o;
  solver(&o);
  double c[36], ref[36];
  vox_solve_result r[6];
  CHECK_OK(ctx, vox_homogenize(ctx, be, &m, 0, 3, 1e-9, &o, c, r, NULL));
  /* a solid cell has no load (its rounding is taken as zero): u = 0 at once */
  for (int i = 0; i < 6; i++) CHECK(r[i].reason > 0 && r[i].iterations == 0);
  isotropic(2.5, 0.3, ref);
  for (int i = 0; i < 36; i++) CHECK_CLOSE(c[i], ref[i], 1e-9);
  vox_cell_moduli mod;
  CHECK(vox_cell_moduli_of(c, &mod) == 0);
  CHECK_CLOSE(mod.bulk, 2.5 / (3 * (1 - 0.6)), 1e-9);
  CHECK_CLOSE(mod.shear, 2.5 / 2.6, 1e-9);
  CHECK_CLOSE(mod.young[1], 2.5, 1e-9);
  CHECK_CLOSE(mod.poisson[2][0], 0.3, 1e-9);
  vox_model_free(&m);
}

/* 3x3 helpers for the laminate formula */
static void inv3(const double a[9], double r[9]) {
  const double d = a[0] * (a[4] * a[8] - a[5] * a[7]) - a[1] * (a[3] * a[8] - a[5] * a[6]) +
                   a[2] * (a[3] * a[7] - a[4] * a[6]);
  r[0] = (a[4] * a[8] - a[5] * a[7]) / d, r[1] = (a[2] * a[7] - a[1] * a[8]) / d;
  r[2] = (a[1] * a[5] - a[2] * a[4]) / d, r[3] = (a[5] * a[6] - a[3] * a[8]) / d;
  r[4] = (a[0] * a[8] - a[2] * a[6]) / d, r[5] = (a[2] * a[3] - a[0] * a[5]) / d;
  r[6] = (a[3] * a[7] - a[4] * a[6]) / d, r[7] = (a[1] * a[6] - a[0] * a[7]) / d;
  r[8] = (a[0] * a[4] - a[1] * a[3]) / d;
}
static void mul3(const double a[9], const double b[9], double r[9]) {
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) {
      r[i * 3 + j] = 0;
      for (int k = 0; k < 3; k++) r[i * 3 + j] += a[i * 3 + k] * b[k * 3 + j];
    }
}

/* The exact tensor of a laminate with layers normal to z (fractions f of
 * phases c[p]): in-plane strains (xx, yy, xy) and normal stresses (zz, yz,
 * zx) are uniform, so with C split into t = {0, 1, 3}, n = {2, 4, 5}:
 *   C_nn = <C_nn^-1>^-1,  C_nt = C_nn <C_nn^-1 C_nt>,
 *   C_tt = <C_tt - C_tn C_nn^-1 C_nt> + <C_tn C_nn^-1> C_nn <C_nn^-1 C_nt>. */
static void laminate(const double c[2][36], const double f[2], double out[36]) {
  static const int t[3] = {0, 1, 3}, n[3] = {2, 4, 5};
  double a_inv[9] = {0}, b[9] = {0}, d[9] = {0}, e[9] = {0};
  for (int p = 0; p < 2; p++) {
    double cnn[9], ctn[9], cnt[9], ctt[9], inv[9], x[9], y[9], z[9];
    for (int i = 0; i < 3; i++)
      for (int j = 0; j < 3; j++) {
        cnn[i * 3 + j] = c[p][n[i] * 6 + n[j]], ctn[i * 3 + j] = c[p][t[i] * 6 + n[j]];
        cnt[i * 3 + j] = c[p][n[i] * 6 + t[j]], ctt[i * 3 + j] = c[p][t[i] * 6 + t[j]];
      }
    inv3(cnn, inv);
    mul3(inv, cnt, x); /* C_nn^-1 C_nt */
    mul3(ctn, inv, y); /* C_tn C_nn^-1 */
    mul3(ctn, x, z);
    for (int k = 0; k < 9; k++) {
      a_inv[k] += f[p] * inv[k], b[k] += f[p] * x[k], d[k] += f[p] * y[k];
      e[k] += f[p] * (ctt[k] - z[k]);
    }
  }
  double cnn[9], cnt[9], x[9], ctt[9];
  inv3(a_inv, cnn);
  mul3(cnn, b, cnt);
  mul3(d, cnn, x);
  mul3(x, b, ctt);
  memset(out, 0, 36 * sizeof *out);
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) {
      out[n[i] * 6 + n[j]] = cnn[i * 3 + j];
      out[n[i] * 6 + t[j]] = out[t[j] * 6 + n[i]] = cnt[i * 3 + j];
      out[t[i] * 6 + t[j]] = e[i * 3 + j] + ctt[i * 3 + j];
    }
}

static void test_laminate(vox_context *ctx, vox_backend *be) {
  /* layers along z: 3 of 8 planes of the soft phase, which the grid resolves */
  vox_model m;
  make_cell(ctx, &m, 4, 4, 8, 1, 0.1, 0.3);
  for (int64_t e = 0; e < 4 * 4 * 8; e++) m.label[e] = e / 16 < 3 ? 2 : 1;
  vox_solver_options o;
  solver(&o);
  double c[36], phases[2][36], ref[36];
  const size_t nd = 3 * 5 * 5 * 9;
  double *u = malloc(6 * nd * sizeof *u);
  CHECK_OK(ctx, vox_homogenize(ctx, be, &m, 0, 3, 1e-9, &o, c, NULL, u));
  /* the fields: zero at the corner, periodic; normal strain zz moves the
   * layers along z only, linearly within each phase */
  for (int s = 0; s < 6; s++) CHECK(u[s * nd] == 0 && u[s * nd + 1] == 0 && u[s * nd + 2] == 0);
  for (int k = 0; k <= 8; k++)
    for (int j = 0; j <= 4; j++)
      for (int i = 0; i <= 4; i++) {
        const double *w = u + 2 * nd + 3 * ((k * 5 + j) * 5 + i);
        const double *twin = u + 2 * nd + 3 * (((k % 8) * 5 + j % 4) * 5 + i % 4);
        CHECK(w[2] == twin[2]);
        CHECK(fabs(w[0]) < 1e-12 && fabs(w[1]) < 1e-12);
        CHECK_CLOSE(w[2], u[2 * nd + 3 * (k * 25) + 2], 1e-12);
      }
  free(u);
  isotropic(1, 0.3, phases[0]);
  isotropic(0.1, 0.3, phases[1]);
  laminate(phases, (const double[2]){5.0 / 8, 3.0 / 8}, ref);
  for (int i = 0; i < 36; i++) CHECK_CLOSE(c[i], ref[i], 1e-6);
  /* Voigt along the layers for the in-plane shear, Reuss across */
  CHECK_CLOSE(c[21], (5.0 / 8) / 2.6 + (3.0 / 8) * 0.1 / 2.6, 1e-9);
  CHECK_CLOSE(c[28], 1 / ((5.0 / 8) * 2.6 + (3.0 / 8) * 26), 1e-9);
  vox_model_free(&m);
}

static void test_random(vox_context *ctx, vox_backend *be) {
  const double e1 = 1, e2 = 1e-3, nu = 0.3;
  uint64_t seed = 7;
  for (int trial = 0; trial < 3; trial++) {
    vox_model m;
    /* random 2 x 2 x 2 blocks: features of one voxel are not resolved
     * (their elements are far too stiff), features of two are */
    make_cell(ctx, &m, 12, 12, 12, e1, e2, nu);
    const double p_solid = 0.3 + 0.2 * trial;
    int64_t solid = 0;
    uint8_t block[6 * 6 * 6];
    for (int b = 0; b < 6 * 6 * 6; b++) block[b] = uniform(&seed) < p_solid ? 1 : 2;
    for (int64_t e = 0; e < 12 * 12 * 12; e++) {
      const int64_t i = e % 12, j = e / 12 % 12, k = e / 144;
      m.label[e] = block[(k / 2 * 6 + j / 2) * 6 + i / 2];
      solid += m.label[e] == 1;
    }
    vox_solver_options o;
    solver(&o);
    o.rtol = 1e-10;
    double c[36];
    CHECK_OK(ctx, vox_homogenize(ctx, be, &m, 0, 3, 1e-9, &o, c, NULL, NULL));
    for (int i = 0; i < 6; i++)
      for (int j = 0; j < i; j++) CHECK_CLOSE(c[i * 6 + j], c[j * 6 + i], 1e-9);
    /* positive definite: Cholesky */
    double l[36] = {0};
    int pd = 1;
    for (int j = 0; j < 6; j++) {
      double s = c[j * 7];
      for (int k = 0; k < j; k++) s -= l[j * 6 + k] * l[j * 6 + k];
      if (!(s > 0)) pd = 0;
      l[j * 7] = sqrt(fabs(s));
      for (int i = j + 1; i < 6; i++) {
        double t = c[i * 6 + j];
        for (int k = 0; k < j; k++) t -= l[i * 6 + k] * l[j * 6 + k];
        l[i * 6 + j] = t / l[j * 7];
      }
    }
    CHECK(pd);
    /* Hashin-Shtrikman upper bounds, phase 1 the stiffer */
    const double f1 = (double)solid / (12 * 12 * 12), f2 = 1 - f1;
    const double k1 = e1 / (3 * (1 - 2 * nu)), g1 = e1 / (2 * (1 + nu));
    const double k2 = e2 / (3 * (1 - 2 * nu)), g2 = e2 / (2 * (1 + nu));
    const double k_hs = k1 + f2 / (1 / (k2 - k1) + 3 * f1 / (3 * k1 + 4 * g1));
    const double g_hs =
        g1 + f2 / (1 / (g2 - g1) + 6 * f1 * (k1 + 2 * g1) / (5 * g1 * (3 * k1 + 4 * g1)));
    vox_cell_moduli mod;
    vox_cell_moduli_of(c, &mod);
    CHECK(mod.bulk > 0 && mod.bulk < k_hs);
    CHECK(mod.shear > 0 && mod.shear < g_hs);
    vox_model_free(&m);
  }
}

/* d C^H / d rho_e from vox_homog_gradient against central differences. */
static void test_sensitivity(vox_context *ctx, vox_backend *be) {
  vox_model m;
  make_cell(ctx, &m, 8, 8, 8, 1, 1, 0.3);
  const size_t ne = 512;
  m.density = malloc(ne * sizeof *m.density);
  uint64_t seed = 3;
  for (size_t e = 0; e < ne; e++) m.density[e] = 0.2 + 0.8 * uniform(&seed);
  vox_solver_options o;
  solver(&o);
  vox_homog *h;
  CHECK_OK(ctx, vox_homog_create(ctx, be, &m, &h));
  const vox_backend_ops *op = be->ops;
  vox_vec rho, ones, energy, df;
  op->vec->create(be, ne, VOX_DOUBLE, &rho), op->vec->create(be, ne, VOX_DOUBLE, &ones);
  op->vec->create(be, ne, VOX_DOUBLE, &energy), op->vec->create(be, ne, VOX_DOUBLE, &df);
  op->vec->set(be, &ones, 1);
  const double p = 3, emin = 1e-9;
  double c[36], g[36] = {0};
  int cg;
  vox_solve_result failed;
  /* C^H at rho, and at rho +- step on element e */
  double *work = malloc(ne * sizeof *work);
#define AT(density)                                                                                \
  do {                                                                                             \
    op->vec->upload(be, &rho, density);                                                            \
    CHECK_OK(ctx, op->design->simp_moduli(be, &rho, &h->fem->e_solid, p, emin, &h->fem->moduli));  \
    CHECK_OK(ctx, vox_fem_update(h->fem));                                                         \
    CHECK_OK(ctx, vox_homog_solve(h, &o, &ones, c, &cg, &failed));                                 \
    CHECK(failed.reason > 0);                                                                      \
  } while (0)
  const int elements[3] = {0, 137, 511};
  const int entries[4][2] = {{0, 0}, {0, 1}, {3, 3}, {2, 5}};
  double grad[4][512];
  AT(m.density);
  for (int q = 0; q < 4; q++) {
    memset(g, 0, sizeof g);
    g[entries[q][0] * 6 + entries[q][1]] = 1;
    CHECK_OK(ctx, vox_homog_gradient(h, g, 0, &rho, p, emin, &energy, &df));
    op->vec->download(be, &df, grad[q]);
  }
  const double step = 1e-5;
  for (int a = 0; a < 3; a++) {
    double cp[36], cm[36];
    memcpy(work, m.density, ne * sizeof *work);
    work[elements[a]] += step;
    AT(work);
    memcpy(cp, c, sizeof c);
    work[elements[a]] -= 2 * step;
    AT(work);
    memcpy(cm, c, sizeof c);
    for (int q = 0; q < 4; q++) {
      const int ij = entries[q][0] * 6 + entries[q][1];
      const double fd = (cp[ij] - cm[ij]) / (2 * step);
      if (!(fabs(grad[q][elements[a]] - fd) <= 1e-5 * fabs(fd) + 1e-9))
        fprintf(stderr, "element %d entry %d: %.10g, differences %.10g\n", elements[a], ij,
                grad[q][elements[a]], fd);
      CHECK(fabs(grad[q][elements[a]] - fd) <= 1e-5 * fabs(fd) + 1e-9);
    }
  }
#undef AT
  free(work);
  op->vec->destroy(be, &rho), op->vec->destroy(be, &ones);
  op->vec->destroy(be, &energy), op->vec->destroy(be, &df);
  vox_homog_destroy(h);
  vox_model_free(&m);
}

/* The hydrostatic case against the three normal strains on one random
 * design: e_h' C^H e_h from its one field equals the sum of C_ij over i, j <
 * 3 from theirs, and its sensitivity (g_hydrostatic = 1) the one of that sum
 * (g = 1 on the normal block); its field is dropped when the normal strains
 * are added, and a gradient that weighs it is refused without it. */
static void test_hydrostatic(vox_context *ctx, vox_backend *be) {
  vox_model m;
  make_cell(ctx, &m, 8, 8, 8, 1, 1, 0.3);
  const size_t ne = 512;
  m.density = malloc(ne * sizeof *m.density);
  uint64_t seed = 17;
  for (size_t e = 0; e < ne; e++) m.density[e] = 0.05 + 0.95 * uniform(&seed);
  vox_solver_options o;
  solver(&o);
  const vox_backend_ops *op = be->ops;
  vox_vec rho, energy, df[2];
  op->vec->create(be, ne, VOX_DOUBLE, &rho), op->vec->create(be, ne, VOX_DOUBLE, &energy);
  op->vec->create(be, ne, VOX_DOUBLE, &df[0]), op->vec->create(be, ne, VOX_DOUBLE, &df[1]);
  op->vec->upload(be, &rho, m.density);
  const double p = 3, emin = 1e-9;
  const unsigned masks[2] = {VOX_HYDROSTATIC_CASE, 0x07};
  double hydro[2], grad[2][512];
  vox_homog *h[2];
  for (int run = 0; run < 2; run++) {
    CHECK_OK(ctx, vox_homog_create_fields(ctx, be, &m, VOX_HOMOG_DOUBLE, masks[run], &h[run]));
    vox_fem *fem = h[run]->fem;
    CHECK_OK(ctx, op->design->simp_moduli(be, &rho, &fem->e_solid, p, emin, &fem->moduli));
    CHECK_OK(ctx, vox_fem_update(fem));
    double c[36], g[36] = {0};
    int cg;
    vox_solve_result failed;
    CHECK_OK(ctx, vox_homog_solve(h[run], &o, NULL, c, &cg, &failed));
    CHECK(failed.reason > 0);
    hydro[run] = h[run]->hydrostatic;
    for (int i = 0; i < 3; i++)
      for (int j = 0; j < 3; j++) g[i * 6 + j] = run;
    CHECK_OK(ctx, vox_homog_gradient(h[run], g, 1 - run, &rho, p, emin, &energy, &df[run]));
    op->vec->download(be, &df[run], grad[run]);
  }
  fprintf(stderr, "hydrostatic: e_h' C e_h %.15g (one field), %.15g (three)\n", hydro[0], hydro[1]);
  CHECK(hydro[0] > 0);
  CHECK_CLOSE(hydro[0], hydro[1], 1e-10);
  double worst = 0, scale = 0;
  for (size_t e = 0; e < ne; e++)
    worst = fmax(worst, fabs(grad[0][e] - grad[1][e])), scale = fmax(scale, fabs(grad[1][e]));
  fprintf(stderr, "hydrostatic: sensitivities agree to %.2g of the largest\n", worst / scale);
  CHECK(scale > 0 && worst <= 1e-9 * scale);
  /* no hydrostatic field in the three strains' run: refused */
  double g0[36] = {0};
  CHECK(vox_homog_gradient(h[1], g0, 1, &rho, p, emin, &energy, &df[1]) ==
        VOX_ERR_INVALID_ARGUMENT);
  /* the final evaluation's six strains replace the hydrostatic case */
  CHECK_OK(ctx, vox_homog_add_strains(h[0], VOX_ALL_STRAINS));
  CHECK(h[0]->strains == VOX_ALL_STRAINS && !h[0]->u[VOX_HYDROSTATIC].data);
  for (int run = 0; run < 2; run++) vox_homog_destroy(h[run]);
  op->vec->destroy(be, &rho), op->vec->destroy(be, &energy);
  op->vec->destroy(be, &df[0]), op->vec->destroy(be, &df[1]);
  vox_model_free(&m);
}

/* C^H in the energy form (the default) against the dot-product form: the
 * same tensor from fields solved to 1e-12; from fields u = u* + e solved to
 * 1e-2, the energy form's error is exactly e_i' K e_j (op->strain_energy_sums
 * of the differences with chi = 0: the first-order terms vanish), below the
 * dot-product form's error f_i . e_j. */
static void test_forms(vox_context *ctx, vox_backend *be) {
  vox_model m;
  make_cell(ctx, &m, 8, 8, 8, 1, 1, 0.3);
  const size_t ne = 512;
  m.density = malloc(ne * sizeof *m.density);
  uint64_t seed = 11;
  for (size_t e = 0; e < ne; e++) m.density[e] = 0.05 + 0.95 * uniform(&seed);
  const vox_backend_ops *op = be->ops;
  double c[2][2][36]; /* [tight, loose][energy, dot] */
  vox_homog *h[2];
  vox_vec rho, ones;
  op->vec->create(be, ne, VOX_DOUBLE, &rho), op->vec->create(be, ne, VOX_DOUBLE, &ones);
  op->vec->set(be, &ones, 1);
  op->vec->upload(be, &rho, m.density);
  for (int run = 0; run < 2; run++) {
    vox_solver_options o;
    solver(&o);
    o.rtol = run == 0 ? 1e-12 : 1e-2;
    CHECK_OK(ctx, vox_homog_create(ctx, be, &m, &h[run]));
    CHECK_OK(ctx, op->design->simp_moduli(be, &rho, &h[run]->fem->e_solid, 3, 1e-9,
                                          &h[run]->fem->moduli));
    CHECK_OK(ctx, vox_fem_update(h[run]->fem));
    int cg;
    vox_solve_result failed;
    h[run]->dot_form = 1;
    CHECK_OK(ctx, vox_homog_solve(h[run], &o, &ones, c[run][1], &cg, &failed));
    CHECK(failed.reason > 0);
    CHECK_OK(ctx, vox_homog_energy_tensor(h[run], c[run][0]));
  }
  /* e_i' K e_j with e = loose - tight fields */
  vox_vec e[6];
  const double zero[6 * 24] = {0};
  double eke[36];
  for (int f = 0; f < 6; f++) {
    op->vec->create(be, h[1]->fem->n_dofs, VOX_DOUBLE, &e[f]);
    op->vec->copy(be, &e[f], &h[1]->u[f]);
    op->vec->axpy(be, &e[f], -1, &h[0]->u[f]);
  }
  CHECK_OK(ctx, op->op->strain_energy_sums(be, h[1]->fem->op, 6, e, zero, eke));
  double cmax = 0, err[2] = {0, 0}, eke_max = 0;
  for (int i = 0; i < 36; i++) cmax = fmax(cmax, fabs(c[0][0][i]));
  for (int i = 0; i < 36; i++) {
    CHECK(fabs(c[0][0][i] - c[0][1][i]) <= 1e-10 * cmax);
    CHECK(c[0][0][i] == c[0][0][i % 6 * 6 + i / 6]); /* both triangles, the same sums */
    for (int f = 0; f < 2; f++) err[f] = fmax(err[f], fabs(c[1][f][i] - c[0][0][i]) / cmax);
    eke_max = fmax(eke_max, fabs(eke[i] / h[1]->volume) / cmax);
    CHECK(fabs(c[1][0][i] - c[0][0][i] - eke[i] / h[1]->volume) <= 1e-10 * cmax);
  }
  fprintf(stderr, "rtol 1e-2: max |dC| / max |C| %.2e energy form (e'Ke %.2e), %.2e dot-product "
          "form\n", err[0], eke_max, err[1]);
  CHECK(err[0] > 0 && err[0] < err[1]);
  for (int f = 0; f < 6; f++) op->vec->destroy(be, &e[f]);
  op->vec->destroy(be, &rho), op->vec->destroy(be, &ones);
  vox_homog_destroy(h[0]), vox_homog_destroy(h[1]);
  vox_model_free(&m);
}

/* The six fields in half precision: a store rounds every value as a
 * _Float16 conversion does and a load gives it back exactly; the half
 * strain energies and their sums equal the double ones of the rounded
 * fields; and C^H and the sensitivities of fields kept in half precision
 * stay within 1e-4 of C^H and 1e-2 of the largest sensitivity of double
 * fields (measured: 1e-7 and 2e-4 at 16^3, docs/benchmarks.md). */
static void test_half_fields(vox_context *ctx, vox_backend *be) {
  vox_model m;
  make_cell(ctx, &m, 8, 8, 8, 1, 1, 0.3);
  const size_t ne = 512;
  m.density = malloc(ne * sizeof *m.density);
  uint64_t seed = 5;
  for (size_t e = 0; e < ne; e++) m.density[e] = 0.05 + 0.95 * uniform(&seed);
  const vox_backend_ops *op = be->ops;
  vox_homog *h[2];
  vox_vec rho, ones, energy, df[2];
  op->vec->create(be, ne, VOX_DOUBLE, &rho), op->vec->create(be, ne, VOX_DOUBLE, &ones), op->vec->create(be, ne, VOX_DOUBLE, &energy);
  op->vec->create(be, ne, VOX_DOUBLE, &df[0]), op->vec->create(be, ne, VOX_DOUBLE, &df[1]);
  op->vec->set(be, &ones, 1);
  op->vec->upload(be, &rho, m.density);
  double c[2][36], g[36] = {0};
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) g[i * 6 + j] = -1.0 / 9;
  for (int half = 0; half < 2; half++) {
    vox_solver_options o;
    solver(&o);
    o.rtol = 1e-10;
    CHECK_OK(ctx, vox_homog_create_fields(ctx, be, &m, half, VOX_ALL_STRAINS, &h[half]));
    CHECK(h[half]->half_fields == half);
    CHECK_OK(ctx, op->design->simp_moduli(be, &rho, &h[half]->fem->e_solid, 3, 1e-9,
                                          &h[half]->fem->moduli));
    CHECK_OK(ctx, vox_fem_update(h[half]->fem));
    int cg;
    vox_solve_result failed;
    CHECK_OK(ctx, vox_homog_solve(h[half], &o, &ones, c[half], &cg, &failed));
    CHECK(failed.reason > 0);
    CHECK_OK(ctx, vox_homog_gradient(h[half], g, 0, &rho, 3, 1e-9, &energy, &df[half]));
  }
  double cmax = 0, dc = 0;
  for (int i = 0; i < 36; i++) cmax = fmax(cmax, fabs(c[0][i]));
  for (int i = 0; i < 36; i++) dc = fmax(dc, fabs(c[1][i] - c[0][i]));
  double *a = malloc(ne * sizeof *a), *b = malloc(ne * sizeof *b), amax = 0, dmax = 0;
  op->vec->download(be, &df[0], a), op->vec->download(be, &df[1], b);
  for (size_t e = 0; e < ne; e++)
    amax = fmax(amax, fabs(a[e])), dmax = fmax(dmax, fabs(a[e] - b[e]));
  fprintf(stderr, "half fields: max |dC| / max |C| %.2e, sensitivities %.2e\n", dc / cmax,
          dmax / amax);
  CHECK(dc > 0 && dc <= 1e-4 * cmax);
  CHECK(dmax <= 1e-2 * amax);
  free(a), free(b);

  /* store and load against the compiler's conversion; the half operations
   * against the double ones on the rounded values */
  const size_t nd = h[1]->fem->n_dofs;
  vox_vec x[6], y[6];
  vox_vec hx[6];
  double *host = malloc(nd * sizeof *host), *back = malloc(nd * sizeof *back);
  int exact = 1;
  for (int f = 0; f < 6; f++) {
    op->vec->create(be, nd, VOX_DOUBLE, &x[f]), op->vec->create(be, nd, VOX_DOUBLE, &y[f]);
    op->vec->create(be, nd, VOX_HALF, &hx[f]);
    for (size_t i = 0; i < nd; i++) host[i] = 0.2 * (uniform(&seed) - 0.5) * pow(10, -f);
    host[0] = 1e6; /* beyond half's range: infinity */
    op->vec->upload(be, &x[f], host);
    CHECK_OK(ctx, op->vec->copy(be, &hx[f], &x[f]));
    CHECK_OK(ctx, op->vec->copy(be, &y[f], &hx[f]));
    op->vec->download(be, &y[f], back);
    for (size_t i = 0; i < nd; i++) exact &= back[i] == (double)(_Float16)host[i];
    CHECK(isinf(back[0]));
    back[0] = (double)(_Float16)0.01; /* finite fields for the energies, half values */
    op->vec->upload(be, &y[f], back);
    CHECK_OK(ctx, op->vec->copy(be, &hx[f], &y[f]));
  }
  CHECK(exact);
  double chi[6 * 24], w[36], s16[36], s64[36];
  for (int i = 0; i < 6 * 24; i++) chi[i] = uniform(&seed) - 0.5;
  for (int i = 0; i < 36; i++) w[i] = uniform(&seed) - 0.3;
  vox_operator *k = h[1]->fem->op;
  CHECK_OK(ctx, op->op->strain_energy_sums(be, k, 6, hx, chi, s16));
  CHECK_OK(ctx, op->op->strain_energy_sums(be, k, 6, y, chi, s64));
  double smax = 0;
  for (int i = 0; i < 36; i++) smax = fmax(smax, fabs(s64[i]));
  for (int i = 0; i < 36; i++) CHECK(fabs(s16[i] - s64[i]) <= 1e-14 * smax);
  vox_vec e16, e64;
  op->vec->create(be, ne, VOX_DOUBLE, &e16), op->vec->create(be, ne, VOX_DOUBLE, &e64);
  CHECK_OK(ctx, op->op->strain_energy(be, k, 6, hx, chi, w, &e16));
  CHECK_OK(ctx, op->op->strain_energy(be, k, 6, y, chi, w, &e64));
  double emax = 0, e64max = 0;
  op->vec->download(be, &e16, host), op->vec->download(be, &e64, back);
  for (size_t e = 0; e < ne; e++)
    emax = fmax(emax, fabs(host[e] - back[e])), e64max = fmax(e64max, fabs(back[e]));
  CHECK(e64max > 0 && emax <= 1e-14 * e64max);
  for (int f = 0; f < 6; f++) {
    op->vec->destroy(be, &x[f]), op->vec->destroy(be, &y[f]);
    op->vec->destroy(be, &hx[f]);
  }
  free(host), free(back);
  op->vec->destroy(be, &e16), op->vec->destroy(be, &e64);
  op->vec->destroy(be, &rho), op->vec->destroy(be, &ones), op->vec->destroy(be, &energy);
  op->vec->destroy(be, &df[0]), op->vec->destroy(be, &df[1]);
  vox_homog_destroy(h[0]), vox_homog_destroy(h[1]);
  vox_model_free(&m);
}

/* The moduli of density rho (n entries) at SIMP exponent p into h's fem. */
static void set_density(vox_context *ctx, vox_backend *be, vox_homog *h, const double *rho,
                        double p) {
  vox_vec v;
  be->ops->vec->create(be, h->fem->n_elements, VOX_DOUBLE, &v);
  be->ops->vec->upload(be, &v, rho);
  CHECK_OK(ctx, be->ops->design->simp_moduli(be, &v, &h->fem->e_solid, p, 1e-9, &h->fem->moduli));
  CHECK_OK(ctx, vox_fem_update(h->fem));
  be->ops->vec->destroy(be, &v);
}

/* The final evaluation's zz field started from the hydrostatic one
 * (vox_homog_add_strains_zz) against zz from rest, in each way of keeping
 * and solving the fields, on a 16^3 cell whose hydrostatic field was solved
 * at the design before a small last update (p = 3 both times): C^H agrees
 * with that of the six from rest to the solves' tolerance, zz's solve
 * takes fewer CG iterations, and no seventh field is made. Where the
 * hydrostatic field was solved at p = 1 (a continuation's step to p = 3),
 * the derived start is farther than rest and zz starts from rest: the
 * same bits as the run from rest. A hydrostatic field never solved starts
 * nothing (from rest). The cell solver's phased run makes the start in host
 * memory: the same bits as the start on the backend. */
static void test_zz_start(vox_context *ctx, vox_backend *be) {
  const int n = 16;
  const size_t ne = (size_t)n * n * n;
  vox_model m;
  make_cell(ctx, &m, n, n, n, 1, 1, 0.3);
  /* the design of the last design iteration, the final one, another one */
  double *rho[3] = {malloc(ne * sizeof(double)), malloc(ne * sizeof(double)),
                    malloc(ne * sizeof(double))};
  uint64_t seed = 17;
  for (int k = 0; k < n; k++)
    for (int j = 0; j < n; j++)
      for (int i = 0; i < n; i++) {
        const size_t e = ((size_t)k * n + j) * n + i;
        const double x = 2 * M_PI * (i + 0.5) / n, y = 2 * M_PI * (j + 0.5) / n,
                     z = 2 * M_PI * (k + 0.5) / n;
        const double r =
            0.35 + 0.3 * cos(x) + 0.2 * cos(y + 0.4) + 0.25 * cos(2 * z) * cos(x + y) +
            0.1 * (uniform(&seed) - 0.5);
        rho[0][e] = fmin(1, fmax(0.01, r));
        rho[1][e] = fmin(1, fmax(0.01, rho[0][e] + 0.003 * (uniform(&seed) - 0.5)));
      }
  for (size_t e = 0; e < ne; e++) /* rho[0] moved by half the cell along x and y */
    rho[2][e] = rho[0][(e / (n * n)) * n * n + (e / n % n + n / 2) % n * n + (e % n + n / 2) % n];
  static const char *names[] = {"double", "half", "cell solver", "cell solver phased"};
  uint16_t *zz_bits[2] = {NULL, NULL}; /* the cell solver's zz field, on and phased */
  const size_t nd = (size_t)(n + 1) * (n + 1) * (n + 1) * 3;
  for (int fields = VOX_HOMOG_DOUBLE; fields <= VOX_HOMOG_CELL_SOLVER_PHASED; fields++) {
    vox_solver_options o;
    solver(&o);
    o.rtol = fields >= VOX_HOMOG_CELL_SOLVER ? VOX_CELL_SOLVER_RTOL_MIN : 1e-10;
    /* [the hydrostatic field's design: the last, another][zz from rest, from the
     * hydrostatic field] */
    double c[2][2][36];
    int its[2][2], derived[2][2];
    for (int before = 0; before < 2; before++)
      for (int start = 0; start < 2; start++) {
        vox_homog *h;
        CHECK_OK(ctx, vox_homog_create_fields(ctx, be, &m, fields, VOX_HYDROSTATIC_CASE, &h));
        CHECK((h->cell != NULL) == (fields >= VOX_HOMOG_CELL_SOLVER));
        int cg;
        vox_solve_result failed;
        double c0[36];
        set_density(ctx, be, h, rho[before ? 2 : 0], 3); /* the design iteration */
        CHECK_OK(ctx, vox_homog_solve(h, &o, NULL, c0, &cg, &failed));
        CHECK(failed.reason > 0 && h->solved == VOX_HYDROSTATIC_CASE);
        set_density(ctx, be, h, rho[1], 3); /* the final design */
        CHECK_OK(ctx, vox_homog_add_strains_zz(h, VOX_ALL_STRAINS, start));
        CHECK(h->strains == VOX_ALL_STRAINS && h->zz_pending == start);
        int kept = 0;
        for (int s = 0; s < VOX_CASES; s++)
          kept += h->u[s].data || h->uh[s].data || h->parked[s];
        CHECK(kept == VOX_STRAINS && !h->u[VOX_HYDROSTATIC].data && !h->uh[VOX_HYDROSTATIC].data &&
              !h->parked[VOX_HYDROSTATIC]);
        CHECK_OK(ctx, vox_homog_solve(h, &o, NULL, c[before][start], &cg, &failed));
        CHECK(failed.reason > 0 && h->zz_pending == 0);
        its[before][start] = h->last[2].iterations;
        derived[before][start] = h->zz_derived;
        if (before == 0 && start == 1 && fields >= VOX_HOMOG_CELL_SOLVER) {
          uint16_t **bits = &zz_bits[fields - VOX_HOMOG_CELL_SOLVER];
          *bits = malloc(nd * sizeof **bits);
          if (h->parked[2] && !h->uh[2].data) memcpy(*bits, h->parked[2], nd * sizeof **bits);
          else be->ops->vec->download(be, &h->uh[2], *bits);
        }
        vox_homog_destroy(h);
      }
    double cmax = 0, diff = 0;
    for (int i = 0; i < 36; i++) cmax = fmax(cmax, fabs(c[0][0][i]));
    for (int i = 0; i < 36; i++) diff = fmax(diff, fabs(c[0][1][i] - c[0][0][i]));
    fprintf(stderr,
            "zz from the hydrostatic field, %s fields (rtol %g): %d CG against %d from rest, C^H "
            "%.2e of its largest entry apart; after another design: %s, %d against %d CG\n",
            names[fields], o.rtol, its[0][1], its[0][0], diff / cmax,
            derived[1][1] ? "derived" : "from rest", its[1][1], its[1][0]);
    CHECK(derived[0][0] == 0 && derived[0][1] == 1);
    CHECK(its[0][1] < its[0][0]);
    CHECK(diff <= (fields >= VOX_HOMOG_CELL_SOLVER ? 1e-5 : fields ? 1e-6 : 1e-9) * cmax);
    /* the derived start farther than rest: from rest, the same run */
    CHECK(derived[1][0] == 0 && derived[1][1] == 0);
    CHECK(its[1][1] == its[1][0]);
    CHECK(memcmp(c[1][1], c[1][0], sizeof c[1][0]) == 0);
  }
  CHECK(memcmp(zz_bits[0], zz_bits[1], nd * sizeof *zz_bits[0]) == 0);
  free(zz_bits[0]), free(zz_bits[1]);

  /* a hydrostatic field never solved (a design evaluated as it is): zz from
   * rest, the hydrostatic field dropped */
  vox_homog *h;
  CHECK_OK(ctx, vox_homog_create_fields(ctx, be, &m, VOX_HOMOG_DOUBLE, VOX_HYDROSTATIC_CASE, &h));
  CHECK_OK(ctx, vox_homog_add_strains_zz(h, VOX_ALL_STRAINS, 1));
  CHECK(h->strains == VOX_ALL_STRAINS && h->zz_pending == 0 && !h->u[VOX_HYDROSTATIC].data);
  vox_homog_destroy(h);
  free(rho[0]), free(rho[1]), free(rho[2]);
  vox_model_free(&m);
}

/* A 16^3 cell of a solid ball in the middle, void (1e-9) around the
 * corners, and a rod along x through the ball, so that it connects across
 * the cell. */
static void ball_cell(vox_context *ctx, vox_model *m) {
  make_cell(ctx, m, 16, 16, 16, 1, 1e-9, 0.3);
  for (int k = 0; k < 16; k++)
    for (int j = 0; j < 16; j++)
      for (int i = 0; i < 16; i++) {
        const double x = i - 7.5, y = j - 7.5, z = k - 7.5;
        m->label[(k * 16 + j) * 16 + i] = x * x + y * y + z * z < 6.5 * 6.5 ? 1 : 2;
        if (fabs(y) < 2 && fabs(z) < 2) m->label[(k * 16 + j) * 16 + i] = 1;
      }
}

/* The periodic multigrid converges in few iterations, and to the answer of
 * Jacobi-PCG, on a design with a 1e-9 contrast and void at the corners. */
static void test_multigrid(vox_context *ctx, vox_backend *be) {
  vox_model m;
  ball_cell(ctx, &m);
  vox_solver_options o;
  solver(&o);
  o.rtol = 1e-8;
  double c_mg[36], c_j[36];
  vox_solve_result r_mg[6], r_j[6];
  CHECK_OK(ctx, vox_homogenize(ctx, be, &m, 0, 3, 1e-9, &o, c_mg, r_mg, NULL));
  o.preconditioner = VOX_PC_JACOBI;
  o.max_iterations = 100000;
  CHECK_OK(ctx, vox_homogenize(ctx, be, &m, 0, 3, 1e-9, &o, c_j, r_j, NULL));
  for (int i = 0; i < 6; i++) {
    CHECK(r_mg[i].reason > 0 && r_j[i].reason > 0);
    CHECK(r_mg[i].iterations < 60);
    fprintf(stderr, "case %d: multigrid %d, Jacobi %d iterations\n", i, r_mg[i].iterations,
            r_j[i].iterations);
  }
  for (int i = 0; i < 36; i++) CHECK_CLOSE(c_mg[i], c_j[i], 1e-6);
  vox_model_free(&m);
}

/* The coarsest level of a periodic hierarchy holds one node against the
 * translations: on the ball cell, whose corner is void, the stiffest node
 * (in the ball), not the corner, whose void would pin the structure only
 * by 1e-9 of its stiffness (multigrid.c: with single-precision stencils the
 * held matrix then turned indefinite on the GPU). */
static void test_held_node(vox_context *ctx, vox_backend *be) {
  vox_model m;
  ball_cell(ctx, &m);
  vox_homog *h;
  CHECK_OK(ctx, vox_homog_create(ctx, be, &m, &h));
  /* one solve sets the hierarchy up */
  vox_solver_options o;
  solver(&o);
  o.rtol = 1e-3;
  vox_solve_result r;
  CHECK_OK(ctx, be->ops->op->strain_load(be, h->fem->op, h->chi, &h->fem->force[0]));
  CHECK_OK(ctx, vox_fem_solve(h->fem, 0, &h->u[0], &o, &r));
  const vox_multigrid *mg = h->fem->mg;
  CHECK(mg && mg->n_translations == 3);
  if (mg) {
    const vox_grid *g = &mg->level[mg->n_levels - 1].grid;
    const size_t nodes = (size_t)vox_grid_nodes(g);
    double *v = malloc(nodes * 27 * 9 * sizeof *v);
    CHECK_OK(ctx, be->ops->mg->stencil_download(be, mg->level[mg->n_levels - 1].stencil, v));
    int held = 0;
    for (int64_t k = 0; k < g->nz; k++)
      for (int64_t j = 0; j < g->ny; j++)
        for (int64_t i = 0; i < g->nx; i++) {
          const size_t n = (size_t)((k * (g->ny + 1) + j) * (g->nx + 1) + i);
          int identity = 1;
          for (int t = 0; t < 27; t++)
            for (int e = 0; e < 9; e++)
              identity &= v[(n * 27 + (size_t)t) * 9 + (size_t)e] == (t == 13 && e % 4 == 0);
          if (!identity) continue;
          held++;
          /* coarse node I sits on fine node 2^(levels - 1) I; the ball's
           * centre is fine node 8 */
          const double s = (double)(1 << (mg->n_levels - 1));
          const double x = s * (double)i - 8, y = s * (double)j - 8, z = s * (double)k - 8;
          CHECK(n != 0 && x * x + y * y + z * z < 6.5 * 6.5);
        }
    CHECK(held == 1);
    free(v);
  }
  vox_homog_destroy(h);
  vox_model_free(&m);
}

/* Bulk-modulus maximisation of an 8^3 cell from a smooth start: the
 * modulus grows, stays under the Hashin-Shtrikman bound, the volume is
 * met, and the reported C^H is that of the final density. */
static void test_optimize(vox_context *ctx, vox_backend *be) {
  const int n = 8;
  vox_model m;
  make_cell(ctx, &m, n, n, n, 1, 1, 0.3);
  m.density = malloc((size_t)(n * n * n) * sizeof *m.density);
  for (int k = 0; k < n; k++)
    for (int j = 0; j < n; j++)
      for (int i = 0; i < n; i++) {
        const double x = 2 * M_PI * (i + 0.5) / n, y = 2 * M_PI * (j + 0.5) / n,
                     z = 2 * M_PI * (k + 0.5) / n;
        m.density[(k * n + j) * n + i] = fmin(1, fmax(0.01, 0.3 + 0.3 * (cos(x) + cos(y) + cos(z))));
      }
  vox_optimizer_options o;
  vox_optimizer_options_default(&o);
  o.cell_objective = VOX_CELL_BULK;
  o.continuation = 0;
  o.filter_radius = 1.5 / n;
  o.move_limit = 0.05;
  o.max_iterations = 10;
  o.solver.precision = VOX_PRECISION_DOUBLE;
  double c0[36];
  vox_solver_options so;
  solver(&so);
  CHECK_OK(ctx, vox_homogenize(ctx, be, &m, 1, 3, o.emin_ratio, &so, c0, NULL, NULL));
  vox_cell_moduli start;
  vox_cell_moduli_of(c0, &start);
  vox_optimize_result r;
  CHECK_OK(ctx, vox_optimize(ctx, be, &m, &o, &r));
  CHECK(r.has_tensor);
  CHECK_CLOSE(r.volume_fraction, 0.3, 1e-3);
  CHECK(r.moduli.bulk > 1.2 * start.bulk);
  CHECK(r.moduli.bulk < 0.117); /* HS: 0.1169 at 0.3 of E = 1, nu = 0.3 */
  CHECK_CLOSE(-r.objective, r.moduli.bulk, 1e-12);
  double c[36];
  CHECK_OK(ctx, vox_homogenize(ctx, be, &m, 1, 3, o.emin_ratio, &so, c, NULL, NULL));
  for (int i = 0; i < 36; i++) CHECK_CLOSE(r.tensor[i], c[i], 1e-5);
  fprintf(stderr, "bulk %g -> %g in %d iterations\n", start.bulk, r.moduli.bulk, r.iterations);
  vox_model_free(&m);
}

int main(int argc, char **argv) {
  vox_context *ctx;
  vox_backend *be;
  vox_context_create(&ctx);
  CHECK_OK(ctx, vox_backend_create(ctx, VOX_DEVICE_CPU, &be));
  if (check_wanted(argc, argv, "solid")) test_solid(ctx, be);
  if (check_wanted(argc, argv, "laminate")) test_laminate(ctx, be);
  if (check_wanted(argc, argv, "random")) test_random(ctx, be);
  if (check_wanted(argc, argv, "sensitivity")) test_sensitivity(ctx, be);
  if (check_wanted(argc, argv, "hydrostatic")) test_hydrostatic(ctx, be);
  if (check_wanted(argc, argv, "forms")) test_forms(ctx, be);
  if (check_wanted(argc, argv, "half")) test_half_fields(ctx, be);
  if (check_wanted(argc, argv, "multigrid")) test_multigrid(ctx, be);
  if (check_wanted(argc, argv, "held")) test_held_node(ctx, be);
  if (check_wanted(argc, argv, "optimize")) test_optimize(ctx, be);
  if (check_wanted(argc, argv, "zz")) test_zz_start(ctx, be);
  vox_backend_destroy(be);
  vox_context_destroy(ctx);
  CHECK_DONE();
}
