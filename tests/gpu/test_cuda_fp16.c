/* SPDX-License-Identifier: BSD-3-Clause */
/* FP16 storage of the smoothed coarse multigrid levels on the CUDA backend
 * (mixed precision, vox_backend_options fp16_levels; cuda/cuda_stencil.cu
 * "FP16 storage") against the CPU backend in double:
 *
 * - level 1 of random moduli with a 1e-9 contrast (void blocks, so whole
 *   coarse rows of void): the product of the FP16-packed stencil, its fused
 *   smoothing step and residual against the CPU's product of the same float
 *   values, row by row: |y_fp16 - y|_i <= 1e-3 (|A| |x|)_i, so every row,
 *   a void one too, is held to FP16's rounding of its own terms (a void row
 *   lost to underflow would be off by its whole size); that the rounding is
 *   FP16's at all (above 1e-5: the level is not left in float); the
 *   diagonal, and the values read back, row by row, and symmetric (the
 *   centre blocks' pairs rounded alike); the Galerkin product
 *   of a packed level against the CPU's of the same FP16-rounded values;
 *   the level turned back to float storage (stencil_full_storage, what a
 *   solve that broke down asks for): float's product after its next
 *   Galerkin product.
 *   Elasticity and conduction on odd grids with a clamped face, and a
 *   periodic cell;
 * - a whole solve (vox_solve_elasticity, 64x32x32, random solid/void,
 *   three levels, level 1 in FP16) against the CPU's double solve to the
 *   CG tolerance: compliance and the energy norm of the difference; the
 *   CG iterations with FP16 on and off;
 * - a solve at a uniform density (the optimizer's first iteration), where
 *   rounding to nearest rounds every interior row alike and the errors add
 *   up on the smooth vectors (the level turned indefinite): FP16 against
 *   float storage, the same solution and not many more CG iterations;
 * - C^H of a periodic 32^3 cell (level 1 in FP16) against the CPU's.
 *
 * Exit 77 (skipped) when this build has no CUDA or the machine no device. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_pair.h"
#include "fem.h"

/* A stored value is rounded stochastically to one of its two FP16
 * neighbours: off by up to one unit in the last place, 2^-10 = 9.8e-4 of it
 * (2^-11 when rounded to nearest); the scales are float. Float storage alone
 * would be within 1e-6. */
static const double TOL_FP16 = 2e-3, FP16_SEEN = 1e-5;
/* float values (the unpacked level, the Galerkin sums rounded to float) */
static const double TOL_FLOAT = 1e-6;
/* converged solves against each other */
static const double TOL_SOLVE = 1e-7;

/* the backend's option for the levels made from now on (its constructor's
 * vox_backend_options, changed in place to test both on one device) */
static void fp16_stencils(int on) {
  gpu->fp16_levels = on ? VOX_FP16_LEVELS_ON : VOX_FP16_LEVELS_OFF;
}

static int is_cuda(void) { return strcmp(vox_backend_name(gpu), "cuda") == 0; }

/* ---- one level ------------------------------------------------------------------ */

typedef struct level_problem {
  vox_grid grid, coarse;
  int dpn;
  size_t n_dofs, n_coarse_dofs, n_values; /* values: the coarse level's 27 blocks per node */
  double ke[24 * 24];
  uint8_t *fixed;
  pvec moduli;
  vox_operator *cop, *gop;
} level_problem;

/* Moduli: blocks of 6^3 elements void (1e-9) or solid, then 3% of the
 * elements flipped, solid ones in [0.5, 1.5). Fixed: the face x = 0, or a
 * periodic cell's images. */
static int level_make(level_problem *p, int64_t nx, int64_t ny, int64_t nz, int dpn, int periodic,
                      uint64_t seed) {
  memset(p, 0, sizeof *p);
  p->grid = (vox_grid){.nx = nx, .ny = ny, .nz = nz, .voxel_size = {1, 1.25, 0.8},
                       .periodic = periodic};
  p->coarse = vox_grid_coarsen(&p->grid);
  snprintf(where, sizeof where, "%lldx%lldx%lld dpn=%d%s", (long long)nx, (long long)ny,
           (long long)nz, dpn, periodic ? " periodic" : "");
  p->dpn = dpn;
  p->n_dofs = (size_t)vox_grid_nodes(&p->grid) * (size_t)dpn;
  p->n_coarse_dofs = (size_t)vox_grid_nodes(&p->coarse) * (size_t)dpn;
  p->n_values = (size_t)vox_grid_nodes(&p->coarse) * 27 * (size_t)(dpn * dpn);
  const size_t ne = (size_t)vox_grid_elements(&p->grid);
  p->fixed = calloc(p->n_dofs, 1);
  if (!unit_element_matrix(&p->grid, dpn, p->ke) || !p->fixed || !pv_create(&p->moduli, ne))
    return 0;
  const int64_t bx = (nx + 5) / 6, by = (ny + 5) / 6, bz = (nz + 5) / 6;
  uint8_t *block_void = malloc((size_t)(bx * by * bz));
  if (!block_void) return 0;
  for (int64_t b = 0; b < bx * by * bz; b++) block_void[b] = uniform(&seed) < 0.4;
  for (int64_t k = 0; k < nz; k++)
    for (int64_t j = 0; j < ny; j++)
      for (int64_t i = 0; i < nx; i++) {
        int v = block_void[((k / 6) * by + j / 6) * bx + i / 6];
        if (uniform(&seed) < 0.03) v = !v;
        p->moduli.hc[(k * ny + j) * nx + i] = v ? 1e-9 : 0.5 + uniform(&seed);
      }
  free(block_void);
  for (int64_t k = 0; k <= nz; k++)
    for (int64_t j = 0; j <= ny; j++)
      for (int64_t i = 0; i <= nx; i++)
        for (int c = 0; c < dpn; c++)
          p->fixed[node_of(&p->grid, i, j, k) * dpn + c] =
              periodic ? vox_is_image(nx, ny, nz, i, j, k) : i == 0;
  return op_pair_create(&p->grid, dpn, p->ke, p->fixed, &p->moduli, &p->cop, &p->gop);
}

static void level_free(level_problem *p) {
  op_pair_destroy(&p->cop, &p->gop);
  pv_destroy(&p->moduli);
  free(p->fixed);
  memset(p, 0, sizeof *p);
}

/* max_i |a_i - b_i| / bound_i, reported against tol; with `seen`, the
 * largest ratio must also exceed it (FP16's rounding is there at all).
 * A zero bound needs a zero difference. */
static void report_rows(const char *check, const double *a, const double *b,
                        const double *bound, size_t n, double tol, double seen) {
  double worst = 0;
  size_t at = 0;
  for (size_t i = 0; i < n; i++) {
    const double d = fabs(a[i] - b[i]);
    const double ratio = bound[i] > 0 ? d / bound[i] : (d > 0 ? INFINITY : 0);
    if (!(ratio <= worst)) worst = ratio, at = i;
  }
  if (!(worst <= tol)) {
    fail_line(check, "row %zu of %zu: |cuda - cpu| = %.3e is %.3e of its bound %.3e (tol %.0e); "
              "cuda %.17g, cpu %.17g", at, n, fabs(a[at] - b[at]), worst, bound[at], tol, a[at],
              b[at]);
  } else if (seen > 0 && !(worst > seen)) {
    fail_line(check, "the largest difference, %.3e of its bound, is not FP16's rounding (> %.0e): "
              "the level was not packed", worst, seen);
  } else {
    ok_line(check, worst, tol);
  }
}

/* (|A| |x|)_i on the CPU: the absolute values in a stencil of their own. */
static int abs_product(const level_problem *p, const double *values, const double *x,
                       double *out) {
  const vox_backend_ops *c = cpu->ops;
  const size_t n = p->n_coarse_dofs;
  double *av = malloc(p->n_values * sizeof *av), *ax = malloc(n * sizeof *ax);
  vox_stencil *st = NULL;
  vox_vec vx = {0}, vy = {0};
  int ok = av && ax;
  if (ok) {
    for (size_t v = 0; v < p->n_values; v++) av[v] = fabs(values[v]);
    for (size_t i = 0; i < n; i++) ax[i] = fabs(x[i]);
  }
  ok = ok &&
       C_OK("abs stencil",
            c->mg->stencil_create(cpu, &p->coarse, p->dpn, VOX_PRECISION_DOUBLE, &st)) &&
       C_OK("abs stencil", c->mg->stencil_upload(cpu, st, av)) &&
       C_OK("abs stencil", c->vec->create(cpu, n, VOX_DOUBLE, &vx)) &&
       C_OK("abs stencil", c->vec->create(cpu, n, VOX_DOUBLE, &vy)) &&
       C_OK("abs stencil", c->vec->upload(cpu, &vx, ax)) &&
       C_OK("abs stencil", c->mg->stencil_apply(cpu, st, &vx, &vy)) &&
       C_OK("abs stencil", c->vec->download(cpu, &vy, out));
  if (st) c->mg->stencil_destroy(cpu, st);
  if (vx.data) c->vec->destroy(cpu, &vx);
  if (vy.data) c->vec->destroy(cpu, &vy);
  free(av), free(ax);
  return ok;
}

static void test_level(int64_t nx, int64_t ny, int64_t nz, int dpn, int periodic,
                       uint64_t seed) {
  const vox_backend_ops *c = cpu->ops, *g = gpu->ops;
  level_problem p;
  vox_stencil *cs = NULL, *gs = NULL, *c2 = NULL, *g2 = NULL;
  pvec x, y, b, w, d;
  memset(&x, 0, sizeof x), memset(&y, 0, sizeof y), memset(&b, 0, sizeof b);
  memset(&w, 0, sizeof w), memset(&d, 0, sizeof d);
  double *v = NULL, *packed = NULL, *bound = NULL, *bound_w = NULL, *g2v = NULL, *c2v = NULL;
  if (!level_make(&p, nx, ny, nz, dpn, periodic, seed)) goto done;
  const size_t n = p.n_coarse_dofs;
  const vox_grid l2 = vox_grid_coarsen(&p.coarse);
  const size_t n2_values = (size_t)vox_grid_nodes(&l2) * 27 * (size_t)(dpn * dpn);
  v = malloc(p.n_values * sizeof *v), packed = malloc(p.n_values * sizeof *packed);
  bound = malloc(n * sizeof *bound), bound_w = malloc(n * sizeof *bound_w);
  g2v = malloc(n2_values * sizeof *g2v), c2v = malloc(n2_values * sizeof *c2v);
  if (!v || !packed || !bound || !bound_w || !g2v || !c2v) {
    fail_line("setup", "out of host memory");
    goto done;
  }
  fp16_stencils(1);
  if (!C_OK("stencil_create",
            c->mg->stencil_create(cpu, &p.coarse, dpn, VOX_PRECISION_DOUBLE, &cs)) ||
      !G_OK("stencil_create",
            g->mg->stencil_create(gpu, &p.coarse, dpn, VOX_PRECISION_MIXED, &gs)) ||
      !C_OK("stencil_create", c->mg->stencil_create(cpu, &l2, dpn, VOX_PRECISION_DOUBLE, &c2)) ||
      !G_OK("stencil_create", g->mg->stencil_create(gpu, &l2, dpn, VOX_PRECISION_MIXED, &g2)))
    goto done;
  /* the Galerkin level in float (not packed before its first product): the
   * CPU takes these values */
  if (!G_OK("galerkin_operator", g->mg->galerkin_operator(gpu, p.gop, gs)) ||
      !G_OK("stencil_download", g->mg->stencil_download(gpu, gs, v)) ||
      !C_OK("stencil_upload", c->mg->stencil_upload(cpu, cs, v)))
    goto done;
  /* void rows: a diagonal below 1e-6 of the largest */
  size_t void_rows = 0;
  double dmax = 0;
  for (size_t i = 0; i < n; i++) {
    const size_t node = i / (size_t)dpn, r = i % (size_t)dpn;
    dmax = fmax(dmax, v[(node * 27 + 13) * (size_t)(dpn * dpn) + r * (size_t)dpn + r]);
  }
  for (size_t i = 0; i < n; i++) {
    const size_t node = i / (size_t)dpn, r = i % (size_t)dpn;
    const double dii = v[(node * 27 + 13) * (size_t)(dpn * dpn) + r * (size_t)dpn + r];
    void_rows += dii > 0 && dii < 1e-6 * dmax;
  }
  printf("        %s: level 1 has %zu dofs, %zu of them void (diagonal < 1e-6 of the largest)\n",
         where, n, void_rows);
  if (!void_rows) fail_line("setup", "no void rows: the test would not see them");
  if (!pv_create(&x, n) || !pv_create(&y, n) || !pv_create(&b, n) || !pv_create(&w, n) ||
      !pv_create(&d, n))
    goto done;
  pv_random(&x, &seed, -1, 1), pv_random(&b, &seed, -1, 1), pv_random(&w, &seed, 0.5, 2);
  if (!abs_product(&p, v, x.hc, bound)) goto done;

  /* the product packs the level; then the fused steps on the packed values */
  if (pv_poison(&y) &&
      BOTH("stencil_apply", c->mg->stencil_apply(cpu, cs, &x.c, &y.c),
           g->mg->stencil_apply(gpu, gs, &x.g, &y.g)) &&
      C_OK("download", c->vec->download(cpu, &y.c, y.hc)) &&
      G_OK("download", g->vec->download(gpu, &y.g, y.hg)))
    report_rows("fp16 stencil_apply, row by row", y.hg, y.hc, bound, n, TOL_FP16,
                is_cuda() ? FP16_SEEN : 0);
  if (pv_poison(&y) &&
      BOTH("stencil_residual", c->mg->stencil_residual(cpu, cs, &b.c, &x.c, &y.c),
           g->mg->stencil_residual(gpu, gs, &b.g, &x.g, &y.g)) &&
      C_OK("download", c->vec->download(cpu, &y.c, y.hc)) &&
      G_OK("download", g->vec->download(gpu, &y.g, y.hg)))
    report_rows("fp16 stencil_residual, row by row", y.hg, y.hc, bound, n, TOL_FP16, 0);
  /* d = alpha w (b - A x) + beta d: its error is alpha w_i times the product's */
  const double alpha = 0.7, beta = 0.2;
  pv_random(&d, &seed, -1, 1);
  for (size_t i = 0; i < n; i++) bound_w[i] = alpha * w.hc[i] * bound[i];
  if (pv_poison(&y) &&
      BOTH("stencil_smooth",
           c->mg->stencil_smooth(cpu, cs, &b.c, &x.c, &w.c, alpha, beta, &d.c, &y.c),
           g->mg->stencil_smooth(gpu, gs, &b.g, &x.g, &w.g, alpha, beta, &d.g, &y.g)) &&
      C_OK("download", c->vec->download(cpu, &d.c, d.hc)) &&
      G_OK("download", g->vec->download(gpu, &d.g, d.hg)) &&
      C_OK("download", c->vec->download(cpu, &y.c, y.hc)) &&
      G_OK("download", g->vec->download(gpu, &y.g, y.hg))) {
    report_rows("fp16 stencil_smooth d, row by row", d.hg, d.hc, bound_w, n, TOL_FP16, 0);
    report_rows("fp16 stencil_smooth x + d, row by row", y.hg, y.hc, bound_w, n, TOL_FP16, 0);
  }
  /* the diagonal of the packed level: S^2 times A_hat's exact 2^12 */
  if (pv_poison(&y) &&
      BOTH("stencil_diagonal", c->mg->stencil_diagonal(cpu, cs, &y.c),
           g->mg->stencil_diagonal(gpu, gs, &y.g)) &&
      C_OK("download", c->vec->download(cpu, &y.c, y.hc)) &&
      G_OK("download", g->vec->download(gpu, &y.g, y.hg))) {
    for (size_t i = 0; i < n; i++) bound[i] = fabs(y.hc[i]);
    report_rows("fp16 stencil_diagonal, entry by entry", y.hg, y.hc, bound, n, TOL_FLOAT, 0);
  }
  /* the packed values read back: per row, sum |W - V| <= tol sum |V| */
  if (G_OK("stencil_download packed", g->mg->stencil_download(gpu, gs, packed))) {
    const size_t bs = (size_t)(dpn * dpn);
    double *row_diff = bound_w, *row_sum = bound; /* reused */
    for (size_t i = 0; i < n; i++) row_diff[i] = row_sum[i] = 0;
    for (size_t node = 0; node < n / (size_t)dpn; node++)
      for (size_t t = 0; t < 27; t++)
        for (size_t e = 0; e < bs; e++) {
          const size_t at = (node * 27 + t) * bs + e, row = node * (size_t)dpn + e / (size_t)dpn;
          row_diff[row] += fabs(packed[at] - v[at]);
          row_sum[row] += fabs(v[at]);
        }
    double *zero = y.hc;
    for (size_t i = 0; i < n; i++) zero[i] = 0;
    report_rows("fp16 values read back, row by row", row_diff, zero, row_sum, n, TOL_FP16,
                is_cuda() ? FP16_SEEN : 0);
    /* symmetric as stored: the centre blocks' (r, c) and (c, r) alike (the
     * other blocks are stored once) */
    double asym = 0;
    for (size_t node = 0; node < n / (size_t)dpn; node++)
      for (int row = 0; row < dpn; row++)
        for (int col = 0; col < row; col++) {
          const double *centre = packed + (node * 27 + 13) * bs;
          asym = fmax(asym, fabs(centre[row * dpn + col] - centre[col * dpn + row]));
        }
    /* exactly on CUDA; the CPU backend (VOXFE_GPU_TEST_DEVICE=cpu) keeps its
     * double Galerkin sums, symmetric to their rounding */
    const double asym_tol = is_cuda() ? 0 : 1e-12 * dmax;
    if (asym <= asym_tol)
      ok_line("fp16 centre blocks symmetric", asym, asym_tol);
    else
      fail_line("fp16 centre blocks symmetric", "max |a_rc - a_cr| = %.3e", asym);
    /* the Galerkin product of the packed level (widened back to float
     * first) against the CPU's of the same FP16-rounded values */
    if (C_OK("stencil_upload", c->mg->stencil_upload(cpu, cs, packed)) &&
        BOTH("galerkin_stencil from a packed level", c->mg->galerkin_stencil(cpu, cs, c2),
             g->mg->galerkin_stencil(gpu, gs, g2)) &&
        C_OK("download", c->mg->stencil_download(cpu, c2, c2v)) &&
        G_OK("download", g->mg->stencil_download(gpu, g2, g2v)))
      report("galerkin_stencil from a packed level", g2v, c2v, n2_values, TOL_FLOAT);
  }
  /* back to float for good (what a solve that broke down asks for): the
   * level says once that it had FP16 storage, and from its next Galerkin
   * product on its product is float's again, not packed */
  if (g->mg->stencil_full_storage) {
    int was = -1, again = -1;
    if (G_OK("stencil_full_storage", g->mg->stencil_full_storage(gpu, gs, &was)) &&
        G_OK("stencil_full_storage again", g->mg->stencil_full_storage(gpu, gs, &again))) {
      if (was == 1 && again == 0)
        ok_line("stencil_full_storage: FP16 once, then float", 0, 0);
      else
        fail_line("stencil_full_storage", "reported %d, then %d (1, then 0 expected)", was, again);
    }
    if (G_OK("galerkin_operator", g->mg->galerkin_operator(gpu, p.gop, gs)) &&
        G_OK("stencil_download", g->mg->stencil_download(gpu, gs, v)) &&
        C_OK("stencil_upload", c->mg->stencil_upload(cpu, cs, v)) &&
        abs_product(&p, v, x.hc, bound) && pv_poison(&y) &&
        BOTH("stencil_apply in float again", c->mg->stencil_apply(cpu, cs, &x.c, &y.c),
             g->mg->stencil_apply(gpu, gs, &x.g, &y.g)) &&
        C_OK("download", c->vec->download(cpu, &y.c, y.hc)) &&
        G_OK("download", g->vec->download(gpu, &y.g, y.hg)))
      report_rows("stencil_apply in float again, row by row", y.hg, y.hc, bound, n, TOL_FLOAT, 0);
  }
done:
  if (cs) c->mg->stencil_destroy(cpu, cs);
  if (gs) g->mg->stencil_destroy(gpu, gs);
  if (c2) c->mg->stencil_destroy(cpu, c2);
  if (g2) g->mg->stencil_destroy(gpu, g2);
  pv_destroy(&x), pv_destroy(&y), pv_destroy(&b), pv_destroy(&w), pv_destroy(&d);
  free(v), free(packed), free(bound), free(bound_w), free(g2v), free(c2v);
  level_free(&p);
}

/* ---- whole solves --------------------------------------------------------------- */

/* A clamped 2:1:1 beam, random solid/void in 4^3 blocks (contrast 1e-9;
 * 4 elements at either end solid), a line load at the bottom of the free
 * end. */
static int beam_model(vox_context *ctx, vox_model *m, int nx, uint64_t seed) {
  vox_grid g = {.nx = nx, .ny = nx / 2, .nz = nx / 2, .voxel_size = {1, 1, 1}};
  vox_material mat = {.label = 1, .youngs_modulus = 1, .poisson_ratio = 0.3, .name = "solid"};
  if (vox_model_init(ctx, m, &g) || vox_model_add_material(ctx, m, &mat)) return 0;
  const size_t ne = (size_t)vox_grid_elements(&g);
  memset(m->label, 1, ne);
  m->density = malloc(ne * sizeof *m->density);
  if (!m->density) return 0;
  for (int64_t k = 0; k < g.nz; k++)
    for (int64_t j = 0; j < g.ny; j++)
      for (int64_t i = 0; i < g.nx; i++) {
        uint64_t s = seed ^ (uint64_t)(((k / 4) * 97 + j / 4) * 89 + i / 4) * 0x9e3779b97f4a7c15u;
        const int solid_block = uniform(&s) < 0.6 || i < 4 || i >= g.nx - 4;
        m->density[(k * g.ny + j) * g.nx + i] = (uniform(&seed) < 0.1) ^ solid_block ? 1.0 : 0.0;
      }
  for (int64_t k = 0; k <= g.nz; k++)
    for (int64_t j = 0; j <= g.ny; j++)
      for (int c = 0; c < 3; c++)
        if (vox_model_add_constraint(ctx, m, node_of(&g, 0, j, k), c, 0)) return 0;
  if (vox_model_set_load_cases(ctx, m, 1)) return 0;
  for (int64_t j = 0; j <= g.ny; j++)
    if (vox_model_add_load(ctx, m, node_of(&g, g.nx, j, 0), 2, 0, -1.0 / (double)(g.ny + 1)))
      return 0;
  return 1;
}

/* sqrt((u - v)' K (u - v) / u' K u) with K of the model's densities, on the CPU */
static double energy_difference(vox_context *ctx, const vox_model *m, const double *u,
                                const double *v) {
  const vox_backend_ops *o = cpu->ops;
  const size_t ne = (size_t)vox_grid_elements(&m->grid), nd = 3 * (size_t)vox_grid_nodes(&m->grid);
  vox_fem *fem = NULL;
  double result = INFINITY;
  double *diff = malloc(nd * sizeof *diff);
  if (!diff || vox_fem_create(ctx, cpu, m, &fem) != VOX_OK) {
    free(diff);
    return result;
  }
  vox_vec rho = {0}, d = {0}, kd = {0};
  double e_diff, e_ref;
  for (size_t i = 0; i < nd; i++) diff[i] = v[i] - u[i];
  if (!o->vec->create(cpu, ne, VOX_DOUBLE, &rho) && !o->vec->create(cpu, nd, VOX_DOUBLE, &d) &&
      !o->vec->create(cpu, nd, VOX_DOUBLE, &kd) && !o->vec->upload(cpu, &rho, m->density) &&
      !o->design->simp_moduli(cpu, &rho, &fem->e_solid, 3, 1e-9, &fem->moduli) &&
      !o->vec->upload(cpu, &d, diff) && !o->op->apply(cpu, fem->op, &d, &kd, 0) &&
      !o->vec->dot(cpu, &d, &kd, &e_diff) && !o->vec->upload(cpu, &d, u) &&
      !o->op->apply(cpu, fem->op, &d, &kd, 0) && !o->vec->dot(cpu, &d, &kd, &e_ref))
    result = sqrt(fabs(e_diff) / e_ref);
  if (rho.data) o->vec->destroy(cpu, &rho);
  if (d.data) o->vec->destroy(cpu, &d);
  if (kd.data) o->vec->destroy(cpu, &kd);
  vox_fem_destroy(fem);
  free(diff);
  return result;
}

static void test_solve(vox_context *cctx, vox_context *gctx, int nx) {
  snprintf(where, sizeof where, "beam %dx%dx%d, random solid/void", nx, nx / 2, nx / 2);
  vox_model m;
  if (!beam_model(cctx, &m, nx, 7)) {
    fail_line("setup", "model: %s", vox_context_message(cctx));
    return;
  }
  const size_t nd = 3 * (size_t)vox_grid_nodes(&m.grid);
  double *uc = calloc(nd, sizeof *uc), *ug = calloc(nd, sizeof *ug);
  if (!uc || !ug) {
    fail_line("setup", "out of host memory");
    goto done;
  }
  vox_solver_options opt;
  vox_solver_options_default(&opt);
  opt.preconditioner = VOX_PC_MULTIGRID;
  opt.rtol = 1e-11;
  opt.max_iterations = 20000;
  opt.precision = VOX_PRECISION_DOUBLE;
  vox_solve_result rc;
  if (!C_OK("vox_solve_elasticity", vox_solve_elasticity(cctx, cpu, &m, 1, 3, 1e-9, &opt, uc, &rc)))
    goto done;
  double fc = 0;
  for (size_t i = 0; i < m.n_loads; i++)
    fc += m.loads[i].value * uc[3 * (size_t)m.loads[i].node + m.loads[i].component];
  printf("        %s: cpu double, %d CG iterations, compliance %.15g\n", where, rc.iterations, fc);
  opt.precision = VOX_PRECISION_MIXED;
  for (int fp16 = 1; fp16 >= 0; fp16--) {
    fp16_stencils(fp16);
    vox_solve_result rg;
    char check[96];
    snprintf(check, sizeof check, "vox_solve_elasticity mixed, fp16 %s", fp16 ? "on" : "off");
    for (size_t i = 0; i < nd; i++) ug[i] = 0;
    if (!G_OK(check, vox_solve_elasticity(gctx, gpu, &m, 1, 3, 1e-9, &opt, ug, &rg))) continue;
    double fg = 0;
    for (size_t i = 0; i < m.n_loads; i++)
      fg += m.loads[i].value * ug[3 * (size_t)m.loads[i].node + m.loads[i].component];
    printf("        %s: cuda mixed, fp16 %s: %d CG iterations, compliance %.15g\n", where,
           fp16 ? "on" : "off", rg.iterations, fg);
    if (rg.reason != VOX_CONVERGED_RTOL)
      fail_line(check, "did not converge: %s", vox_convergence_string(rg.reason));
    snprintf(check, sizeof check, "compliance, fp16 %s vs cpu double", fp16 ? "on" : "off");
    report_scalar(check, fg, fc, fabs(fc), 1e-8);
    snprintf(check, sizeof check, "energy norm of u - u_cpu, fp16 %s", fp16 ? "on" : "off");
    const double e = energy_difference(cctx, &m, uc, ug);
    report_scalar(check, e, 0, 1, 1e-6);
  }
done:
  free(uc), free(ug);
  vox_model_free(&m);
}

/* The clamped beam at a uniform density 0.12 (p = 3: moduli 1.7e-3), FP16
 * against float storage on the CUDA backend (float is checked against the
 * CPU elsewhere): both converge, to the same compliance, and FP16 takes at
 * most a quarter more CG iterations. */
static void test_uniform_solve(vox_context *gctx, int nx) {
  snprintf(where, sizeof where, "beam %dx%dx%d, uniform density", nx, nx / 2, nx / 2);
  vox_model m;
  if (!beam_model(gctx, &m, nx, 7)) {
    fail_line("setup", "model: %s", vox_context_message(gctx));
    return;
  }
  const size_t ne = (size_t)vox_grid_elements(&m.grid), nd = 3 * (size_t)vox_grid_nodes(&m.grid);
  for (size_t e = 0; e < ne; e++) m.density[e] = 0.12;
  double *u = calloc(nd, sizeof *u);
  vox_solver_options opt;
  vox_solver_options_default(&opt);
  opt.preconditioner = VOX_PC_MULTIGRID;
  opt.precision = VOX_PRECISION_MIXED;
  opt.rtol = 1e-8;
  opt.max_iterations = 2000;
  double compliance[2] = {0, 0};
  int its[2] = {0, 0}, ok = u != NULL;
  for (int fp16 = 0; fp16 <= 1 && ok; fp16++) {
    fp16_stencils(fp16);
    vox_solve_result r;
    for (size_t i = 0; i < nd; i++) u[i] = 0;
    char check[96];
    snprintf(check, sizeof check, "vox_solve_elasticity, fp16 %s", fp16 ? "on" : "off");
    ok = G_OK(check, vox_solve_elasticity(gctx, gpu, &m, 1, 3, 1e-9, &opt, u, &r));
    if (!ok) break;
    for (size_t i = 0; i < m.n_loads; i++)
      compliance[fp16] += m.loads[i].value * u[3 * (size_t)m.loads[i].node + m.loads[i].component];
    its[fp16] = r.iterations;
    printf("        %s: cuda mixed, fp16 %s: %d CG iterations (%s), compliance %.15g\n", where,
           fp16 ? "on" : "off", r.iterations, vox_convergence_string(r.reason), compliance[fp16]);
    if (r.reason != VOX_CONVERGED_RTOL) {
      fail_line(check, "did not converge: %s", vox_convergence_string(r.reason));
      ok = 0;
    }
  }
  if (ok) {
    report_scalar("compliance, fp16 on vs off", compliance[1], compliance[0], compliance[0], 1e-6);
    const int more = its[0] / 4 + 2; /* a quarter, and two for small counts */
    if (its[1] > its[0] + more)
      fail_line("CG iterations", "fp16 on took %d, off %d", its[1], its[0]);
    else
      ok_line("CG iterations, fp16 on minus off", its[1] - its[0], more);
  }
  free(u);
  vox_model_free(&m);
}

/* C^H of a periodic cell with random densities, level 1 in FP16. */
static void test_cell(vox_context *ctx, int n) {
  snprintf(where, sizeof where, "%d^3 cell", n);
  vox_grid g = {.nx = n, .ny = n, .nz = n, .voxel_size = {1.0 / n, 1.0 / n, 1.0 / n}};
  vox_material solid = {.label = 1, .youngs_modulus = 1, .poisson_ratio = 0.3,
                        .role = VOX_ROLE_DESIGN};
  vox_model m;
  if (vox_model_init(ctx, &m, &g) || vox_model_add_material(ctx, &m, &solid)) {
    fail_line("setup", "model: %s", vox_context_message(ctx));
    return;
  }
  const size_t ne = (size_t)n * n * n;
  memset(m.label, 1, ne);
  m.density = malloc(ne * sizeof *m.density);
  uint64_t seed = 11;
  if (m.density) {
    for (size_t e = 0; e < ne; e++)
      m.density[e] = uniform(&seed) < 0.3 ? 0.0 : 0.3 + 0.7 * uniform(&seed);
    vox_solver_options opt;
    vox_solver_options_default(&opt);
    opt.rtol = 1e-10;
    double cc[36], cg[36];
    vox_solve_result rs[6];
    vox_solver_options mixed = opt;
    opt.precision = VOX_PRECISION_DOUBLE;
    mixed.precision = VOX_PRECISION_MIXED;
    fp16_stencils(1);
    if (C_OK("vox_homogenize", vox_homogenize(ctx, cpu, &m, 1, 3, 1e-9, &opt, cc, NULL, NULL)) &&
        G_OK("vox_homogenize", vox_homogenize(ctx, gpu, &m, 1, 3, 1e-9, &mixed, cg, rs, NULL))) {
      int its = 0;
      for (int f = 0; f < 6; f++) its += rs[f].iterations;
      printf("        %s: cuda mixed, fp16 on: %d CG iterations for the six fields\n", where, its);
      report("C^H, fp16 on vs cpu double", cg, cc, 36, TOL_SOLVE);
    }
  }
  vox_model_free(&m);
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  vox_context *ctx, *cpu_ctx;
  if (vox_context_create(&ctx) != VOX_OK) return 1;
  if (vox_backend_create(ctx, test_device(), &gpu) != VOX_OK) {
    printf("skipped: %s\n", vox_context_message(ctx));
    vox_context_destroy(ctx);
    return SKIP;
  }
  if (vox_context_create(&cpu_ctx) != VOX_OK || vox_backend_create(cpu_ctx, VOX_DEVICE_CPU, &cpu))
    return 1;
  printf("FP16 coarse stencils: %s against cpu\n", vox_backend_name(gpu));
  /* the levels' products both ways: a thread a row and a warp a node */
  for (int kernel = VOX_STENCIL_KERNEL_ROW; kernel <= VOX_STENCIL_KERNEL_WARP; kernel++) {
    gpu->stencil_kernel = (vox_stencil_kernel)kernel;
    printf("stencil products: %s\n", vox_stencil_kernel_name(gpu->stencil_kernel));
    test_level(25, 14, 11, 3, 0, 1);
    test_level(30, 18, 14, 1, 0, 2);
    test_level(24, 16, 20, 3, 1, 3);
  }
  gpu->stencil_kernel = VOX_STENCIL_KERNEL_AUTO;
  test_solve(cpu_ctx, ctx, 64);
  test_uniform_solve(ctx, 64);
  test_uniform_solve(ctx, 128);
  test_cell(ctx, 32);
  vox_backend_destroy(cpu), vox_backend_destroy(gpu);
  vox_context_destroy(cpu_ctx), vox_context_destroy(ctx);
  printf("%s\n", check_failures ? "FAILED" : "all passed");
  return check_failures ? 1 : 0;
}
