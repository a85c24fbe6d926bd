/* SPDX-License-Identifier: BSD-3-Clause */
/* The single-precision periodic cell solver (cell_solver.h) on the CPU:
 * its hierarchy is Galerkin (A_{l+1} = R A_l P level by level, checked
 * against cell_kernels.h's host functions, so the backend's level-2
 * assembly and its Galerkin products are checked independently of each
 * other); the stencils, stored as half their blocks, are P' K P in double
 * to float rounding and exactly symmetric at SIMP's contrasts; the
 * V-cycle's residual restricted slab by slab gives the same bits whatever
 * the slabs; the coarsest pseudo-inverse inverts the coarsest level on the
 * complement of the translations; homogenization through it matches the
 * double-precision CG/multigrid reference; and a uniform cell, which has
 * no load, is solved at once. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "cell_kernels.h"
#include "cell_solver.h"
#include "galerkin_element.h"
#include "homogenize.h"
#include "voxfe/element.h"
#include "voxfe/voxfe.h"

static double uniform(uint64_t *state) {
  *state = *state * 6364136223846793005u + 1442695040888963407u;
  return (double)(*state >> 11) / 9007199254740992.0;
}

static int64_t nodes_of(vox_cell_dims d) { return (int64_t)d.nx * d.ny * d.nz; }

/* The isotropic stiffness in the seed's Voigt order (xx yy zz xy yz zx). */
static void isotropic(double E, double nu, double c[36]) {
  const double lambda = E * nu / ((1 + nu) * (1 - 2 * nu)), mu = E / (2 * (1 + nu));
  memset(c, 0, 36 * sizeof *c);
  for (int i = 0; i < 3; i++) {
    for (int j = 0; j < 3; j++) c[i * 6 + j] = lambda + (i == j ? 2 * mu : 0);
    c[(i + 3) * 7] = mu;
  }
}

/* The operator of level l of the hierarchy on the host: the matrix-free
 * levels from the moduli the test made itself, the stencil levels from the
 * backend's stencils. */
typedef struct host_levels {
  int n_levels;
  vox_cell_dims dims[VOX_CELL_MAX_LEVELS];
  float *moduli, ke[576], g[8 * 576];
  float *stencil[VOX_CELL_MAX_LEVELS]; /* levels >= 2 */
} host_levels;

static void apply(const host_levels *hl, int l, const float *x, float *ax) {
  const vox_cell_dims d = hl->dims[l];
  static const float kchi[24] = {0}; /* the load is not wanted here */
  for (int64_t n = 0; n < nodes_of(d); n++) {
    int i, j, k;
    vox_cell_coords(d, n, &i, &j, &k);
    float diag[9], f[3];
    if (l == 0)
      vox_cell_fine_row(d, hl->moduli, hl->ke, kchi, x, i, j, k, ax + 3 * n, diag, f);
    else if (l == 1)
      vox_cell_coarse1_row(d, hl->moduli, hl->g, x, i, j, k, ax + 3 * n, diag);
    else
      vox_cell_stencil_row(d, hl->stencil[l], x, i, j, k, ax + 3 * n, diag);
  }
}

/* A 32^3 cell solver (4 levels: 32, 16, 8, 4) after an update with random
 * moduli in [1e-3, 1], or with `simp` SIMP's of random densities (p = 3,
 * void: 1e-9) in the layers z < 2 and z >= 26, 40 % of them void, and void
 * in between (where nodes of levels 2 and 3 see only void); *hl gets the
 * host side of its hierarchy. */
static vox_cell_solver *make_solver(vox_context *ctx, vox_backend *be, host_levels *hl, int simp) {
  const int n = 32;
  const vox_grid grid = {
      .nx = n, .ny = n, .nz = n, .voxel_size = {1.0 / n, 1.0 / n, 1.0 / n}, .periodic = 1};
  double ke[576], g[8 * 576];
  CHECK(vox_hex8_elasticity(1.0, 0.3, grid.voxel_size, ke) == 0);
  vox_galerkin_element_products(ke, 3, g);
  vox_cell_solver *cs = NULL;
  CHECK_OK(ctx, vox_cell_solver_create(be, &grid, ke, &cs));
  CHECK(cs != NULL);
  if (!cs) return NULL;
  CHECK(cs->desc.n_levels == 4);
  CHECK(cs->desc.dims[3].nx == 4 && cs->desc.dims[3].ny == 4 && cs->desc.dims[3].nz == 4);
  const size_t ne = (size_t)n * n * n;
  double *m = malloc(ne * sizeof *m);
  memset(hl, 0, sizeof *hl);
  hl->moduli = malloc(ne * sizeof *hl->moduli);
  uint64_t seed = 17;
  for (size_t e = 0; e < ne; e++) {
    const double r = uniform(&seed);
    const int k = (int)(e / ((size_t)n * n)), solid = k < 2 || k >= 26;
    m[e] = simp ? 1e-9 + (1 - 1e-9) * (r < 0.4 || !solid ? 0 : r * r * r) : 1e-3 + (1 - 1e-3) * r;
    hl->moduli[e] = (float)m[e];
  }
  vox_vec moduli;
  CHECK_OK(ctx, be->ops->vec->create(be, ne, VOX_DOUBLE, &moduli));
  CHECK_OK(ctx, be->ops->vec->upload(be, &moduli, m));
  CHECK_OK(ctx, vox_cell_solver_update(cs, &moduli));
  be->ops->vec->destroy(be, &moduli);
  free(m);
  hl->n_levels = cs->desc.n_levels;
  memcpy(hl->dims, cs->desc.dims, sizeof hl->dims);
  for (int i = 0; i < 576; i++) hl->ke[i] = (float)ke[i];
  for (int i = 0; i < 8 * 576; i++) hl->g[i] = (float)g[i];
  for (int l = 2; l < hl->n_levels; l++) {
    hl->stencil[l] = malloc(VOX_CELL_BLOCK * (size_t)nodes_of(hl->dims[l]) * sizeof(float));
    CHECK_OK(ctx, be->ops->cell->stencil_download(be, cs->cell, l, hl->stencil[l]));
  }
  return cs;
}

static void free_levels(host_levels *hl) {
  free(hl->moduli);
  for (int l = 2; l < hl->n_levels; l++) free(hl->stencil[l]);
}

/* A_{l+1} x = R (A_l (P x)) for random x on every pair of levels. */
static void test_galerkin(vox_context *ctx, vox_backend *be) {
  host_levels hl;
  vox_cell_solver *cs = make_solver(ctx, be, &hl, 0);
  if (!cs) return;
  uint64_t seed = 23;
  for (int l = 0; l + 1 < hl.n_levels; l++) {
    const vox_cell_dims df = hl.dims[l], dc = hl.dims[l + 1];
    const size_t nf = 3 * (size_t)nodes_of(df), nc = 3 * (size_t)nodes_of(dc);
    float *x = malloc(nc * sizeof *x), *px = malloc(nf * sizeof *px);
    float *apx = malloc(nf * sizeof *apx), *rapx = malloc(nc * sizeof *rapx);
    float *ax = malloc(nc * sizeof *ax);
    for (size_t i = 0; i < nc; i++) x[i] = (float)(uniform(&seed) - 0.5);
    for (int64_t n = 0; n < nodes_of(df); n++) {
      int i, j, k;
      vox_cell_coords(df, n, &i, &j, &k);
      vox_cell_prolong_at(dc, x, i, j, k, px + 3 * n);
    }
    apply(&hl, l, px, apx);
    for (int64_t n = 0; n < nodes_of(dc); n++) {
      int i, j, k;
      vox_cell_coords(dc, n, &i, &j, &k);
      vox_cell_restrict_at(df, apx, 0, i, j, k, rapx + 3 * n);
    }
    apply(&hl, l + 1, x, ax);
    double amax = 0, diff = 0;
    for (size_t i = 0; i < nc; i++) {
      amax = fmax(amax, fabs(ax[i]));
      diff = fmax(diff, fabs((double)ax[i] - rapx[i]));
    }
    fprintf(stderr,
            "galerkin: levels %d-%d (%d^3 -> %d^3): max |A x - R A P x| / max |A x| "
            "%.2e\n",
            l, l + 1, df.nx, dc.nx, diff / amax);
    CHECK(amax > 0 && diff <= 1e-5 * amax);
    free(x), free(px), free(apx), free(rapx), free(ax);
  }
  free_levels(&hl);
  vox_cell_solver_destroy(cs);
}

/* The hat function of the trilinear interpolation of coarsening s at a
 * fine offset x from the coarse node. */
static double hat(int x, int s) {
  x = abs(x);
  return x < s ? 1 - (double)x / s : 0;
}

/* Node (i, j, k) of dims d, wrapped by any offset. */
static int64_t node_wrapped(vox_cell_dims d, int i, int j, int k) {
  i = (i % d.nx + d.nx) % d.nx, j = (j % d.ny + d.ny) % d.ny, k = (k % d.nz + d.nz) % d.nz;
  return ((int64_t)k * d.ny + j) * d.nx + i;
}

/* Level l's 27 blocks per node in double, independently of the backend's
 * Galerkin arithmetic: ref + 9 (27 n + t) = block t of node n of P' K P,
 * P the trilinear interpolation of coarsening s = 2^l (the levels'
 * interpolations composed), K the fine operator of hl's moduli and Ke
 * (double). Column (J, c) by probing: K P e_(J, c) over the elements that
 * touch the support of J's hat (fine offsets -s..s), then P' of it at the
 * nodes I = J - offset t. */
static void reference_blocks(const host_levels *hl, const double *ke, int l, double *ref) {
  const vox_cell_dims fine = hl->dims[0], d = hl->dims[l];
  const int s = 1 << l, w = 2 * s + 1;
  double *y = malloc(3 * (size_t)w * w * w * sizeof *y);
  for (int64_t J = 0; J < nodes_of(d); J++) {
    int ji, jj, jk;
    vox_cell_coords(d, J, &ji, &jj, &jk);
    for (int c = 0; c < 3; c++) {
      memset(y, 0, 3 * (size_t)w * w * w * sizeof *y);
      for (int ez = -s; ez < s; ez++)
        for (int ey = -s; ey < s; ey++)
          for (int ex = -s; ex < s; ex++) {
            double wb[8];
            int any = 0;
            for (int b = 0; b < 8; b++) {
              wb[b] = hat(ex + vox_hex8_corner[b][0], s) * hat(ey + vox_hex8_corner[b][1], s) *
                      hat(ez + vox_hex8_corner[b][2], s);
              any = any || wb[b] != 0;
            }
            if (!any) continue;
            const double m = hl->moduli[node_wrapped(fine, s * ji + ex, s * jj + ey, s * jk + ez)];
            for (int a = 0; a < 8; a++) {
              const int *ca = vox_hex8_corner[a];
              const size_t ya =
                  ((size_t)(ez + ca[2] + s) * w + ey + ca[1] + s) * w + ex + ca[0] + s;
              for (int r = 0; r < 3; r++) {
                double sum = 0;
                for (int b = 0; b < 8; b++) sum += ke[(3 * a + r) * 24 + 3 * b + c] * wb[b];
                y[3 * ya + r] += m * sum;
              }
            }
          }
      for (int t = 0; t < 27; t++) {
        const int o[3] = {t % 3 - 1, (t / 3) % 3 - 1, t / 9 - 1};
        const int64_t I = vox_cell_node(d, ji - o[0], jj - o[1], jk - o[2]);
        double acc[3] = {0, 0, 0};
        for (int z = -s; z <= s; z++)
          for (int yy = -s; yy <= s; yy++)
            for (int x = -s; x <= s; x++) {
              const double wi = hat(x + o[0] * s, s) * hat(yy + o[1] * s, s) * hat(z + o[2] * s, s);
              const size_t q = ((size_t)(z + s) * w + yy + s) * w + x + s;
              for (int r = 0; r < 3; r++) acc[r] += wi * y[3 * q + r];
            }
        for (int r = 0; r < 3; r++) ref[9 * (27 * I + t) + 3 * r + c] = acc[r];
      }
    }
  }
  free(y);
}

/* The stored stencils (levels 2 and 3: the fine moduli's assembly and a
 * Galerkin product) of a SIMP-contrast cell, read block by block through
 * vox_cell_stencil_block, backward blocks too, against the double
 * reference P' K P (errors relative to sqrt(|A_nn| |A_mm|), the scale of
 * block (n, m) of an SPD matrix); and the stencil exactly symmetric. */
static void test_stencil(vox_context *ctx, vox_backend *be) {
  host_levels hl;
  vox_cell_solver *cs = make_solver(ctx, be, &hl, 1);
  if (!cs) return;
  double ke[576];
  const double h[3] = {1.0 / hl.dims[0].nx, 1.0 / hl.dims[0].ny, 1.0 / hl.dims[0].nz};
  CHECK(vox_hex8_elasticity(1.0, 0.3, h, ke) == 0);
  for (int l = 2; l < hl.n_levels; l++) {
    const vox_cell_dims d = hl.dims[l];
    const int64_t nodes = nodes_of(d);
    double *ref = malloc(27 * 9 * (size_t)nodes * sizeof *ref),
           *centre = malloc(nodes * sizeof *centre);
    reference_blocks(&hl, ke, l, ref);
    for (int64_t n = 0; n < nodes; n++) {
      centre[n] = 0;
      for (int q = 0; q < 9; q++) centre[n] = fmax(centre[n], fabs(ref[9 * (27 * n + 13) + q]));
    }
    double err[2] = {0, 0}, cmin = INFINITY, cmax = 0; /* forward (t >= 13), backward */
    int symmetric = 1;
    for (int64_t n = 0; n < nodes; n++) {
      int i, j, k;
      vox_cell_coords(d, n, &i, &j, &k);
      cmin = fmin(cmin, centre[n]), cmax = fmax(cmax, centre[n]);
      for (int t = 0; t < 27; t++) {
        const int o[3] = {t % 3 - 1, (t / 3) % 3 - 1, t / 9 - 1};
        const int64_t nb = vox_cell_node(d, i + o[0], j + o[1], k + o[2]);
        float blk[9], mirror[9];
        vox_cell_stencil_block(d, hl.stencil[l], i, j, k, t, blk);
        vox_cell_stencil_block(d, hl.stencil[l], i + o[0], j + o[1], k + o[2], 26 - t, mirror);
        const double scale = sqrt(centre[n] * centre[nb]);
        for (int r = 0; r < 3; r++)
          for (int c = 0; c < 3; c++) {
            const double e = fabs(blk[3 * r + c] - ref[9 * (27 * n + t) + 3 * r + c]) / scale;
            err[t < 13] = fmax(err[t < 13], e);
            symmetric = symmetric && blk[3 * r + c] == mirror[3 * c + r];
          }
      }
    }
    fprintf(stderr,
            "stencil: level %d (%d^3, centre blocks %.1e..%.1e): max |block - P'KP| / "
            "sqrt(|A_nn| |A_mm|) %.2e forward, %.2e backward%s\n",
            l, d.nx, cmin, cmax, err[0], err[1], symmetric ? ", exactly symmetric" : "");
    const double tol = 1e-6;
    CHECK(err[0] <= tol && err[1] <= tol);
    CHECK(symmetric);
    free(ref), free(centre);
  }
  free_levels(&hl);
  vox_cell_solver_destroy(cs);
}

/* restrict_residual's slabs: a solve's iterations come out the same to the
 * last bit whatever their size (each node's residual is the same
 * arithmetic): the default (1 coarse plane on a 32^3 cell), 3 (a short
 * last slab on every level) and whole levels (a level's residual
 * vector). */
static void test_slabs(vox_context *ctx, vox_backend *be) {
  host_levels hl;
  vox_cell_solver *cs = make_solver(ctx, be, &hl, 0);
  if (!cs) return;
  const vox_cell_dims d = hl.dims[0];
  const size_t ne = (size_t)nodes_of(d), nu = 3 * (size_t)(d.nx + 1) * (d.ny + 1) * (d.nz + 1);
  /* the load of the unit strain xx */
  double ke[576], chi[24] = {0}, kchi[24];
  const double h[3] = {1.0 / d.nx, 1.0 / d.ny, 1.0 / d.nz};
  CHECK(vox_hex8_elasticity(1.0, 0.3, h, ke) == 0);
  for (int a = 0; a < 8; a++) chi[3 * a] = vox_hex8_corner[a][0] * h[0];
  for (int r = 0; r < 24; r++) {
    kchi[r] = 0;
    for (int c = 0; c < 24; c++) kchi[r] += ke[r * 24 + c] * chi[c];
  }
  double *m = malloc(ne * sizeof *m);
  for (size_t e = 0; e < ne; e++) m[e] = hl.moduli[e];
  vox_vec moduli;
  vox_vec u;
  CHECK_OK(ctx, be->ops->vec->create(be, ne, VOX_DOUBLE, &moduli));
  CHECK_OK(ctx, be->ops->vec->upload(be, &moduli, m));
  CHECK_OK(ctx, be->ops->vec->create(be, nu, VOX_HALF, &u));
  vox_solver_options o;
  vox_solver_options_default(&o);
  o.rtol = 1e-12, o.max_iterations = 4;
  const int slabs[3] = {0, 3, 1 << 20};
  uint16_t *bits[3];
  double rr[3];
  const vox_grid grid = {
      .nx = d.nx, .ny = d.ny, .nz = d.nz, .voxel_size = {h[0], h[1], h[2]}, .periodic = 1};
  vox_cell_solver_destroy(cs);
  for (int s = 0; s < 3; s++) {
    CHECK_OK(ctx, vox_cell_solver_create_slab(be, &grid, ke, slabs[s], &cs));
    CHECK_OK(ctx, vox_cell_solver_update(cs, &moduli));
    CHECK_OK(ctx, be->ops->cell->zero_field(be, cs->cell, &u));
    vox_solve_result result;
    CHECK_OK(ctx, vox_cell_solver_solve(cs, kchi, 1.0, &o, &u, &result));
    CHECK(result.iterations == 4);
    bits[s] = malloc(nu * sizeof *bits[s]);
    CHECK_OK(ctx, be->ops->vec->download(be, &u, bits[s]));
    rr[s] = result.residual_norm / result.rhs_norm;
    fprintf(stderr, "slabs: %d, %d, %d coarse planes (levels 0, 1, 2): residual %.17g after %d\n",
            vox_cell_slab(&cs->desc, 0), vox_cell_slab(&cs->desc, 1), vox_cell_slab(&cs->desc, 2),
            rr[s], result.iterations);
    vox_cell_solver_destroy(cs);
  }
  for (int s = 1; s < 3; s++) CHECK(rr[s] == rr[0] && memcmp(bits[s], bits[0], nu * 2) == 0);
  for (int s = 0; s < 3; s++) free(bits[s]);
  free(m);
  be->ops->vec->destroy(be, &u);
  be->ops->vec->destroy(be, &moduli);
  free_levels(&hl);
}

/* The coarsest pseudo-inverse (the driver's host copy of what it uploads):
 * for b of zero mean per component, x = A+ b solves A x = b and has zero
 * mean per component itself (A+ maps into the complement of the
 * translations). */
static void test_pinv(vox_context *ctx, vox_backend *be) {
  host_levels hl;
  vox_cell_solver *cs = make_solver(ctx, be, &hl, 0);
  if (!cs) return;
  const int last = hl.n_levels - 1;
  const size_t n = 3 * (size_t)nodes_of(hl.dims[last]);
  float *b = malloc(n * sizeof *b), *x = calloc(n, sizeof *x), *ax = malloc(n * sizeof *ax);
  uint64_t seed = 29;
  double mean[3] = {0, 0, 0};
  for (size_t i = 0; i < n; i++) {
    b[i] = (float)(uniform(&seed) - 0.5);
    mean[i % 3] += b[i] / (double)(n / 3);
  }
  for (size_t i = 0; i < n; i++) b[i] -= (float)mean[i % 3];
  double xmean[3] = {0, 0, 0}, xmax = 0, bmax = 0, diff = 0;
  for (size_t i = 0; i < n; i++) {
    double s = 0;
    for (size_t j = 0; j < n; j++) s += cs->coarsest[i * n + j] * b[j];
    x[i] = (float)s;
    xmean[i % 3] += s / (double)(n / 3);
    xmax = fmax(xmax, fabs(s));
  }
  apply(&hl, last, x, ax);
  for (size_t i = 0; i < n; i++) {
    bmax = fmax(bmax, fabs(b[i]));
    diff = fmax(diff, fabs((double)ax[i] - b[i]));
  }
  const double mmax = fmax(fabs(xmean[0]), fmax(fabs(xmean[1]), fabs(xmean[2])));
  fprintf(stderr, "pinv: max |A A+ b - b| / max |b| %.2e, mean of A+ b / max %.2e\n", diff / bmax,
          mmax / xmax);
  CHECK(diff <= 1e-5 * bmax);
  CHECK(mmax <= 1e-5 * xmax);
  free(b), free(x), free(ax);
  free_levels(&hl);
  vox_cell_solver_destroy(cs);
}

/* An n^3 cell of edge 1 with one material (E = 1, nu = 0.3) in every voxel,
 * its densities rho (NULL: all 1). */
static void make_cell(vox_context *ctx, vox_model *m, int n, uint64_t *seed) {
  const vox_grid g = {.nx = n, .ny = n, .nz = n, .voxel_size = {1.0 / n, 1.0 / n, 1.0 / n}};
  CHECK_OK(ctx, vox_model_init(ctx, m, &g));
  const size_t ne = (size_t)vox_grid_elements(&g);
  memset(m->label, 1, ne);
  vox_material a = {.label = 1, .youngs_modulus = 1, .poisson_ratio = 0.3, .role = VOX_ROLE_DESIGN};
  CHECK_OK(ctx, vox_model_add_material(ctx, m, &a));
  m->density = malloc(ne * sizeof *m->density);
  for (size_t e = 0; e < ne; e++) m->density[e] = seed ? 0.05 + 0.95 * uniform(seed) : 1;
}

/* SIMP moduli of the model's densities, then C^H. */
static void solve(vox_context *ctx, vox_backend *be, const vox_model *m, vox_homog *h,
                  const vox_solver_options *o, double c[36]) {
  const size_t ne = (size_t)vox_grid_elements(&m->grid);
  vox_vec rho;
  CHECK_OK(ctx, be->ops->vec->create(be, ne, VOX_DOUBLE, &rho));
  CHECK_OK(ctx, be->ops->vec->upload(be, &rho, m->density));
  CHECK_OK(ctx, be->ops->design->simp_moduli(be, &rho, &h->fem->e_solid, 3, 1e-9, &h->fem->moduli));
  CHECK_OK(ctx, vox_fem_update(h->fem));
  int iterations;
  vox_solve_result failed;
  CHECK_OK(ctx, vox_homog_solve(h, o, NULL, c, &iterations, &failed));
  CHECK(failed.reason > 0);
  be->ops->vec->destroy(be, &rho);
}

static void cell_options(vox_solver_options *o) {
  vox_solver_options_default(o);
  /* float's floor is near 1e-7 of the load */
  o->rtol = 1e-6;
  o->precision = VOX_PRECISION_MIXED;
  o->max_iterations = 200;
}

/* A random-density 16^3 cell: the cell solver's C^H against the double
 * CG/multigrid reference. */
static void test_solve(vox_context *ctx, vox_backend *be) {
  vox_model m;
  uint64_t seed = 31;
  make_cell(ctx, &m, 16, &seed);
  vox_homog *hd = NULL, *hc = NULL;
  CHECK_OK(ctx, vox_homog_create_fields(ctx, be, &m, VOX_HOMOG_DOUBLE, VOX_ALL_STRAINS, &hd));
  CHECK_OK(ctx, vox_homog_create_fields(ctx, be, &m, VOX_HOMOG_CELL_SOLVER, VOX_ALL_STRAINS, &hc));
  if (!hd || !hc) {
    vox_homog_destroy(hd), vox_homog_destroy(hc);
    vox_model_free(&m);
    return;
  }
  CHECK(hd->cell == NULL && hc->cell != NULL);
  vox_solver_options od, oc;
  vox_solver_options_default(&od);
  od.rtol = 1e-10;
  od.precision = VOX_PRECISION_DOUBLE;
  cell_options(&oc);
  double cd[36], cc[36];
  solve(ctx, be, &m, hd, &od, cd);
  solve(ctx, be, &m, hc, &oc, cc);
  double cmax = 0, dc = 0;
  for (int i = 0; i < 36; i++) cmax = fmax(cmax, fabs(cd[i]));
  for (int i = 0; i < 36; i++) {
    dc = fmax(dc, fabs(cc[i] - cd[i]));
  }
  fprintf(stderr, "solve: CG iterations (a V-cycle each)");
  for (int i = 0; i < 6; i++) {
    CHECK(hc->last[i].reason > 0 && hd->last[i].reason > 0);
    fprintf(stderr, " %d", hc->last[i].iterations);
  }
  fprintf(stderr, " (reference: iterations");
  for (int i = 0; i < 6; i++) fprintf(stderr, " %d", hd->last[i].iterations);
  fprintf(stderr, "); max |dC| / max |C| %.2e\n", dc / cmax);
  CHECK(dc <= 1e-4 * cmax);
  vox_homog_destroy(hd), vox_homog_destroy(hc);
  vox_model_free(&m);
}

/* A uniform cell has no load (its float rounding is taken as zero): no
 * V-cycle, and C^H is the material's stiffness. */
static void test_zero(vox_context *ctx, vox_backend *be) {
  vox_model m;
  make_cell(ctx, &m, 16, NULL);
  vox_homog *hc = NULL;
  CHECK_OK(ctx, vox_homog_create_fields(ctx, be, &m, VOX_HOMOG_CELL_SOLVER, VOX_ALL_STRAINS, &hc));
  if (!hc) {
    vox_model_free(&m);
    return;
  }
  CHECK(hc->cell != NULL);
  vox_solver_options o;
  cell_options(&o);
  double c[36], ref[36];
  solve(ctx, be, &m, hc, &o, c);
  for (int i = 0; i < 6; i++) CHECK(hc->last[i].reason > 0 && hc->last[i].iterations == 0);
  isotropic(1, 0.3, ref);
  double cmax = 0, dc = 0;
  for (int i = 0; i < 36; i++) cmax = fmax(cmax, fabs(ref[i]));
  for (int i = 0; i < 36; i++) dc = fmax(dc, fabs(c[i] - ref[i]));
  fprintf(stderr, "zero: max |C - C_iso| / max |C_iso| %.2e\n", dc / cmax);
  CHECK(dc <= 1e-5 * cmax);
  vox_homog_destroy(hc);
  vox_model_free(&m);
}

/* A SIMP-contrast cell (blobs of solid in a void of 1e-9, p = 3), solved
 * by the cell solver to a cell's 1e-2 five times over from warm starts
 * while the design moves: each field's mean stays at its start (CG's
 * directions lose the translations, cell_ops.h), the stored half field's
 * true residual, in double through the double reference's operator (the
 * cell solver's lean fem keeps no fixed flags, which products need), is of
 * CG's order,
 * and e_h' C^H e_h is within 1 % of the double reference's. */
static void test_contrast(vox_context *ctx, vox_backend *be) {
  const int n = 32;
  vox_model m;
  make_cell(ctx, &m, n, NULL);
  const size_t ne = (size_t)n * n * n;
  vox_homog *hc = NULL, *hd = NULL;
  CHECK_OK(ctx, vox_homog_create_fields(ctx, be, &m, VOX_HOMOG_CELL_SOLVER,
                                        VOX_HYDROSTATIC_CASE | 0x1, &hc));
  CHECK_OK(ctx, vox_homog_create_fields(ctx, be, &m, VOX_HOMOG_DOUBLE, VOX_HYDROSTATIC_CASE, &hd));
  if (!hc || !hd || !hc->cell) {
    vox_homog_destroy(hc), vox_homog_destroy(hd);
    vox_model_free(&m);
    return;
  }
  vox_solver_options oc, od;
  cell_options(&oc);
  oc.rtol = 1e-2;
  vox_solver_options_default(&od);
  od.rtol = 1e-10;
  od.precision = VOX_PRECISION_DOUBLE;
  const size_t nd = hc->fem->n_dofs;
  vox_vec w, f, ku;
  CHECK_OK(ctx, be->ops->vec->create(be, nd, VOX_DOUBLE, &w));
  CHECK_OK(ctx, be->ops->vec->create(be, nd, VOX_DOUBLE, &f));
  CHECK_OK(ctx, be->ops->vec->create(be, nd, VOX_DOUBLE, &ku));
  double *hw = malloc(nd * sizeof *hw), *hf = malloc(nd * sizeof *hf),
         *hk = malloc(nd * sizeof *hk);
  for (int step = 0; step < 5; step++) {
    for (int k = 0; k < n; k++)
      for (int j = 0; j < n; j++)
        for (int i = 0; i < n; i++) {
          const double x = (i + 0.5) / n, y = (j + 0.5) / n, z = (k + 0.5) / n, t = 0.1 * step;
          const double v = cos(2 * M_PI * (x + t)) + cos(2 * M_PI * y) + cos(4 * M_PI * (z - t));
          m.density[(k * n + j) * n + i] = v > 0.3 ? 1 : 1e-3;
        }
    double cc[36], cd[36];
    solve(ctx, be, &m, hc, &oc, cc);
    solve(ctx, be, &m, hd, &od, cd);
    fprintf(stderr, "contrast %d: e_h' C e_h %.6f (cell solver, CG", step, hc->hydrostatic);
    for (int c = 0; c < VOX_CASES; c++)
      if ((hc->strains >> c) & 1) fprintf(stderr, " %d", hc->last[c].iterations);
    fprintf(stderr, "), %.6f (double)", hd->hydrostatic);
    CHECK(fabs(hc->hydrostatic - hd->hydrostatic) <= 1e-2 * hd->hydrostatic);
    for (int c = 0; c < VOX_CASES; c++) {
      if (!((hc->strains >> c) & 1)) continue;
      CHECK_OK(ctx, be->ops->vec->copy(be, &w, &hc->uh[c]));
      /* the same moduli: both solved the same design; the full product, and
       * the load but at the fixed corner node (skipped below) */
      CHECK_OK(ctx, be->ops->op->strain_load(be, hd->fem->op, hc->chi + 24 * c, &f));
      CHECK_OK(ctx, be->ops->op->apply(be, hd->fem->op, &w, &ku, VOX_APPLY_FULL));
      CHECK_OK(ctx, be->ops->vec->download(be, &w, hw));
      CHECK_OK(ctx, be->ops->vec->download(be, &f, hf));
      CHECK_OK(ctx, be->ops->vec->download(be, &ku, hk));
      double ff = 0, rr = 0, mean[3] = {0, 0, 0}, umax = 0;
      for (int k = 0; k < n; k++) /* master nodes only: the images repeat them */
        for (int j = 0; j < n; j++)
          for (int i = 0; i < n; i++)
            for (int q = 0; q < 3; q++) {
              const size_t d = 3 * ((size_t)(k * (n + 1) + j) * (n + 1) + i) + q;
              if (d < 3) continue; /* the fixed corner */
              ff += hf[d] * hf[d], rr += (hk[d] - hf[d]) * (hk[d] - hf[d]);
              mean[q] += hw[d] / (double)ne, umax = fmax(umax, fabs(hw[d]));
            }
      const double drift = fmax(fabs(mean[0]), fmax(fabs(mean[1]), fabs(mean[2])));
      fprintf(stderr, "; case %d: true residual %.2g, mean / max %.2g", c, sqrt(rr / ff),
              drift / umax);
      CHECK(sqrt(rr / ff) <= 0.05);
      CHECK(drift <= 1e-3 * umax);
    }
    fprintf(stderr, "\n");
  }
  free(hw), free(hf), free(hk);
  be->ops->vec->destroy(be, &w), be->ops->vec->destroy(be, &f), be->ops->vec->destroy(be, &ku);
  vox_homog_destroy(hc), vox_homog_destroy(hd);
  vox_model_free(&m);
}

int main(int argc, char **argv) {
  vox_context *ctx;
  vox_backend *be;
  vox_context_create(&ctx);
  CHECK_OK(ctx, vox_backend_create(ctx, VOX_DEVICE_CPU, &be));
  if (check_wanted(argc, argv, "galerkin")) test_galerkin(ctx, be);
  if (check_wanted(argc, argv, "stencil")) test_stencil(ctx, be);
  if (check_wanted(argc, argv, "slabs")) test_slabs(ctx, be);
  if (check_wanted(argc, argv, "pinv")) test_pinv(ctx, be);
  if (check_wanted(argc, argv, "solve")) test_solve(ctx, be);
  if (check_wanted(argc, argv, "zero")) test_zero(ctx, be);
  if (check_wanted(argc, argv, "contrast")) test_contrast(ctx, be);
  vox_backend_destroy(be);
  vox_context_destroy(ctx);
  CHECK_DONE();
}
