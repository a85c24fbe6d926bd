/* SPDX-License-Identifier: BSD-3-Clause */
/* The element-free Galerkin loop's stages on the CUDA backend (efg_ops.h,
 * cuda/cuda_efg.cu) against the host functions the CPU loop runs, on a
 * small EFG cantilever (Lu, Gong, Zhang, Xie and Yin 2021, section 6.1, at
 * 12 x 6 x 3 voxels of 1.25 x 1.25 x 1 mm, a passive solid block of another
 * modulus, clamped by the penalty points, two load cases) at random nodal
 * densities:
 *
 * - the Gauss points' densities (eq. 16) and SIMP factors, 1e-12;
 * - the node-pair assembled stiffness against vox_efg_stiffness_assemble,
 *   1e-12 of its largest entry, also at support radii 1.5, 2.5 and 3 with
 *   a third of the Gauss points void;
 * - K x and block Jacobi's D^-1 r against the host products, 1e-12;
 * - the cells' patches (efg_patches.h): the host's inverses times their
 *   blocks of K give the identity, the host's sum over the patches equals
 *   one made with each patch solved by Gaussian elimination in long
 *   double, and the backend's equals the host's, each to 1e-9 (patches at
 *   a void's edge are ill-conditioned: that is what they are for); the
 *   patches of 2 x 2 x 2 cells on the backend against the host's, 1e-9,
 *   and in single precision 1e-5;
 * - the multigrid's levels (efg_levels.h): the host's Galerkin product
 *   against P^T A P made densely from the prolongation's definition, and
 *   the backend's coarse products, block Jacobi, fused Chebyshev steps,
 *   residuals, restriction, prolongation
 *   and dense solve against the host's, 1e-12 (the solve: its residual);
 * - the energy densities and the node-wise sensitivities of a solution
 *   (the host's CG to 1e-10), 1e-12;
 * - five design iterations of vox_optimize on the CPU (host arrays) and on
 *   the backend: each iteration's compliance within 1e-9 and the final
 *   nodal densities within 1e-6 (the CG iterates differ by the reductions'
 *   rounding; each solve is to 1e-10), with block Jacobi, the patches and
 *   the multigrid, whose runs take the same designs in fewer CG
 *   iterations, the multigrid fewest.
 *
 * Exit 77 (skipped) when this build has no CUDA or the machine no device;
 * VOXFE_GPU_TEST_DEVICE=cpu runs it against the CPU backend's table (and
 * its design iterations through the backend path, vox_efg_optimize_on). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "../dense_solve_reference.h"
#include "backend_ops.h"
#include "efg_assembly.h"
#include "efg_ops.h"
#include "efg_levels.h"
#include "efg_mg.h"
#include "efg_optimize.h"
#include "efg_patches.h"
#include "efg_sensitivity.h"
#include "voxfe/voxfe.h"

enum { SKIP = 77 };

static vox_device test_device(void) {
  vox_device d = VOX_DEVICE_CUDA;
  const char *env = getenv("VOXFE_GPU_TEST_DEVICE");
  if (env && *env && vox_device_parse(env, &d) == 0)
    printf("VOXFE_GPU_TEST_DEVICE=%s: testing the %s backend against the CPU one\n", env, env);
  return d;
}

static double uniform(uint64_t *state) {
  *state = *state * 6364136223846793005u + 1442695040888963407u;
  return (double)(*state >> 11) / 9007199254740992.0;
}

static int64_t node(const vox_grid *g, int64_t i, int64_t j, int64_t k) {
  return (k * (g->ny + 1) + j) * (g->nx + 1) + i;
}

/* max |a - b| / max |b|, printed with its tolerance; a failure counted
 * above it (NaN fails). */
static void compare(const char *what, const double *a, const double *b, size_t n, double tol) {
  double num = 0, den = 0;
  size_t worst = 0;
  for (size_t i = 0; i < n; i++) {
    const double d = fabs(a[i] - b[i]);
    if (!(d <= num)) num = d, worst = i;
    den = fmax(den, fabs(b[i]));
  }
  const double rel = den > 0 ? num / den : num;
  const int ok = rel <= tol && den > 0;
  printf("  %-4s  %-52s %9.2e  (tol %.0e; %zu values, largest %.3e)\n", ok ? "ok" : "FAIL", what,
         rel, tol, n, den);
  if (!ok) {
    printf("        worst at %zu: device %.17g, host %.17g\n", worst, a[worst], b[worst]);
    check_failures++;
  }
}

/* The cantilever: E 200 GPa design voxels with a passive solid block of
 * 100 GPa at the loaded end's top, clamped at x = 0; case 0 a downward
 * force at the free end's centre line, case 1 a sideways one at its top
 * edge. */
static void make_cantilever(vox_context *ctx, vox_model *m) {
  vox_grid g = {.nx = 12, .ny = 6, .nz = 3, .voxel_size = {1.25, 1.25, 1}};
  CHECK_OK(ctx, vox_model_init(ctx, m, &g));
  for (int64_t k = 0; k < g.nz; k++)
    for (int64_t j = 0; j < g.ny; j++)
      for (int64_t i = 0; i < g.nx; i++)
        m->label[(k * g.ny + j) * g.nx + i] = i >= 10 && j >= 4 ? 2 : 1;
  vox_material design = {.label = 1, .role = VOX_ROLE_DESIGN, .youngs_modulus = 200e3,
                         .poisson_ratio = 0.3, .name = "design"};
  vox_material solid = {.label = 2, .role = VOX_ROLE_SOLID, .youngs_modulus = 100e3,
                        .poisson_ratio = 0.3, .name = "solid"};
  CHECK_OK(ctx, vox_model_add_material(ctx, m, &design));
  CHECK_OK(ctx, vox_model_add_material(ctx, m, &solid));
  for (int64_t k = 0; k <= g.nz; k++)
    for (int64_t j = 0; j <= g.ny; j++)
      for (int c = 0; c < 3; c++)
        CHECK_OK(ctx, vox_model_add_constraint(ctx, m, node(&g, 0, j, k), c, 0));
  CHECK_OK(ctx, vox_model_set_load_cases(ctx, m, 2));
  for (int64_t k = 0; k <= g.nz; k++) {
    CHECK_OK(ctx, vox_model_add_load(ctx, m, node(&g, g.nx, g.ny / 2, k), 1, 0,
                                     -(k == 0 || k == g.nz ? 500.0 : 1000.0) / (double)g.nz));
    CHECK_OK(ctx, vox_model_add_load(ctx, m, node(&g, g.nx, g.ny, k), 2, 1,
                                     (k == 0 || k == g.nz ? 100.0 : 200.0) / (double)g.nz));
  }
}

/* A host array of n doubles in a backend vector (created here). */
static int to_backend(vox_backend *be, const double *host, size_t n, vox_vec *v) {
  vox_status s = be->ops->vec->create(be, n, VOX_DOUBLE, v);
  if (s == VOX_OK && host) s = be->ops->vec->upload(be, v, host);
  if (s != VOX_OK) printf("  FAIL  a vector of %zu: %s\n", n, vox_context_message(be->ctx));
  check_failures += s != VOX_OK;
  return s == VOX_OK;
}

static void download(vox_backend *be, const vox_vec *v, double *host) {
  CHECK_OK(be->ctx, be->ops->vec->download(be, v, host));
}

/* The stages one by one against the host functions. */
/* The penalty points' patches of p against their definition, from the
 * nodes' positions: patch q holds exactly the nodes of the supports of
 * penalty point q and of the penalty points one voxel edge away along one
 * axis; and ref += each patch's block of K solved for x's entries there
 * (dense_solve_reference; K's blocks of two nodes that do not couple are
 * zero). */
static void test_penalty_patches(const vox_efg_model *efg, const vox_bsr *k,
                                 const vox_efg_patches *p, const double *x, double *ref) {
  const vox_efg_shapes *sh = &efg->support;
  const double *h = efg->nodes.grid.voxel_size;
  CHECK(p->n_penalty == sh->n_points && p->n_penalty > 0);
  uint8_t *mark = calloc(efg->nodes.n, 1);
  size_t most = 0;
  for (size_t q = 0; q < p->n_penalty; q++) {
    const size_t m = p->penalty_start[q + 1] - p->penalty_start[q];
    const int32_t *nd = p->penalty_node + p->penalty_start[q];
    most = m > most ? m : most;
    double xq[3], xo[3];
    vox_efg_node_position(&efg->nodes, efg->support_node[q], xq);
    size_t expected = 0;
    for (size_t o = 0; o < sh->n_points; o++) {
      vox_efg_node_position(&efg->nodes, efg->support_node[o], xo);
      int off = 0, one = 0;
      for (int a = 0; a < 3; a++) {
        const double d = fabs(xo[a] - xq[a]);
        if (d > 1e-9 * h[a]) off++, one += fabs(d - h[a]) <= 1e-9 * h[a];
      }
      if (!(off == 0 || (off == 1 && one == 1))) continue;
      for (size_t a = sh->start[o]; a < sh->start[o + 1]; a++)
        if (!mark[sh->node[a]]) mark[sh->node[a]] = 1, expected++;
    }
    CHECK(m == expected);
    for (size_t a = 0; a < m; a++) {
      CHECK(mark[nd[a]]);
      CHECK(a == 0 || nd[a] > nd[a - 1]);
    }
    memset(mark, 0, efg->nodes.n);
    const int n = (int)(3 * m);
    double *a = malloc((size_t)n * n * sizeof *a), *rq = malloc(n * sizeof *rq),
           *xs = malloc(n * sizeof *xs);
    for (int i = 0; i < n; i++) {
      for (int j = 0; j < n; j++) {
        const ptrdiff_t at = vox_bsr_find_block(k, nd[i / 3], nd[j / 3]);
        a[(size_t)n * i + j] = at < 0 ? 0 : k->val[9 * (size_t)at + 3 * (i % 3) + j % 3];
      }
      rq[i] = x[3 * (size_t)nd[i / 3] + i % 3];
    }
    dense_solve_reference(n, a, rq, xs);
    for (int i = 0; i < n; i++) ref[3 * (size_t)nd[i / 3] + i % 3] += xs[i];
    free(a);
    free(rq);
    free(xs);
  }
  printf("  penalty patches: %zu, the largest of %zu nodes\n", p->n_penalty, most);
  free(mark);
}

/* The patches p (made here, kept by the caller while dev lives: the CPU's
 * table reads them in place) on the host against their definition, and
 * the backend's against the host's, for K's values and the vector x. */
static void test_patches(vox_context *ctx, vox_backend *be, vox_efg_device *dev,
                         const vox_efg_model *efg, const vox_bsr *k, const double *x,
                         vox_efg_patches *patches) {
  const vox_efg_ops *ops = be->ops->efg;
  const size_t nd = 3 * efg->nodes.n;
  CHECK_OK(ctx, vox_efg_patches_init(ctx, efg, k, 1, 1, patches));
  const vox_efg_patches p = *patches;
  CHECK(p.n == efg->n_cells);
  double *inverse = malloc(vox_efg_patches_inverse_bytes(&p)),
         *work = malloc(vox_efg_patches_work_doubles(&p) * sizeof *work),
         *z = calloc(nd, sizeof *z),
         *ref = calloc(nd, sizeof *ref), *hz = malloc(nd * sizeof *hz);
  CHECK_OK(ctx, vox_efg_patches_factor(ctx, &p, k->val, inverse));
  double worst_identity = 0, worst_cond = 0;
  for (size_t c = 0; c < p.n; c++) {
    enum { N = VOX_EFG_PATCH_DOFS };
    double a[VOX_EFG_PATCH_ENTRIES], rc[N], xc[N];
    for (int i = 0; i < N; i++)
      for (int j = 0; j < N; j++)
        a[N * i + j] = k->val[9 * (size_t)p.block[64 * c + 8 * (i / 3) + j / 3] + 3 * (i % 3) +
                              j % 3];
    const double *inv = inverse + VOX_EFG_PATCH_ENTRIES * c;
    double na = 0, ni = 0;
    for (int i = 0; i < N; i++) {
      double ra = 0, ri = 0;
      for (int j = 0; j < N; j++) ra += fabs(a[N * i + j]), ri += fabs(inv[N * i + j]);
      na = fmax(na, ra), ni = fmax(ni, ri);
    }
    worst_cond = fmax(worst_cond, na * ni);
    for (int i = 0; i < N; i++)
      for (int j = 0; j < N; j++) {
        double t = 0;
        for (int l = 0; l < N; l++) t += a[N * i + l] * inv[N * l + j];
        /* |A A^-1 - I| is bounded by the block's condition times rounding */
        worst_identity = fmax(worst_identity, fabs(t - (i == j)) / (na * ni));
      }
    for (int i = 0; i < N; i++) rc[i] = x[3 * (size_t)p.node[8 * c + i / 3] + i % 3];
    dense_solve_reference(N, a, rc, xc);
    for (int i = 0; i < N; i++) ref[3 * (size_t)p.node[8 * c + i / 3] + i % 3] += xc[i];
  }
  printf("  patches: %zu, the largest condition %.1e; |A A^-1 - I| / cond %.1e\n", p.n,
         worst_cond, worst_identity);
  CHECK(worst_identity < 1e-14);
  test_penalty_patches(efg, k, &p, x, ref);
  vox_efg_patches_apply(&p, inverse, x, z, work);
  compare("patches' sum against long-double solves", z, ref, nd, 1e-9);

  vox_vec d_x, d_z;
  if (to_backend(be, x, nd, &d_x) && to_backend(be, NULL, nd, &d_z)) {
    CHECK_OK(ctx, ops->patches_create(be, dev, patches));
    CHECK_OK(ctx, ops->patches_factor(be, dev, 0));
    CHECK_OK(ctx, ops->patches_apply(be, dev, &d_x, &d_z));
    download(be, &d_z, hz);
    compare("patches' sum on the backend", hz, z, nd, 1e-9);
    be->ops->vec->destroy(be, &d_x);
    be->ops->vec->destroy(be, &d_z);
  }
  free(inverse);
  free(work);
  free(z);
  free(ref);
  free(hz);
}

/* The patches of 2 x 2 x 2 cells with the penalty points' at weight 0.5
 * (efg_patches.h, size 2; their definition is test_efg's) on the backend
 * against the host's sum, on a device of their own in double (1e-9) and
 * in mixed precision (their inverses in float: 1e-5). */
static void test_block_patches(vox_context *ctx, vox_backend *be, const vox_efg_model *efg,
                               const vox_bsr *k, const vox_vec *d_scale, const double *x) {
  const vox_efg_ops *ops = be->ops->efg;
  const size_t nd = 3 * efg->nodes.n;
  vox_efg_patches p;
  CHECK_OK(ctx, vox_efg_patches_init(ctx, efg, k, 2, 1, &p));
  p.penalty_weight = 0.5;
  CHECK(p.n == 0 && p.n_blocks > 0);
  double *inverse = malloc(vox_efg_patches_inverse_bytes(&p)),
         *work = malloc(vox_efg_patches_work_doubles(&p) * sizeof *work),
         *z = malloc(nd * sizeof *z), *hz = malloc(nd * sizeof *hz);
  CHECK_OK(ctx, vox_efg_patches_factor(ctx, &p, k->val, inverse));
  vox_efg_patches_apply(&p, inverse, x, z, work);
  printf("  block patches: %zu, then %zu penalty points', the largest of %zu unknowns\n",
         p.n_blocks, p.n_penalty - p.n_blocks, p.penalty_max_dofs);
  vox_vec d_x, d_z;
  if (to_backend(be, x, nd, &d_x) && to_backend(be, NULL, nd, &d_z)) {
    for (int mixed = 0; mixed < 2; mixed++) {
      if (mixed && vox_backend_device(be) == VOX_DEVICE_CPU) break; /* the host keeps double */
      vox_efg_device *dev = NULL;
      CHECK_OK(ctx, ops->create(be, efg, k, mixed ? VOX_PRECISION_MIXED : VOX_PRECISION_DOUBLE,
                                &dev));
      if (!dev) break;
      CHECK_OK(ctx, ops->assemble(be, dev, d_scale));
      CHECK_OK(ctx, ops->patches_create(be, dev, &p));
      CHECK_OK(ctx, ops->patches_factor(be, dev, 0));
      CHECK_OK(ctx, ops->patches_apply(be, dev, &d_x, &d_z));
      download(be, &d_z, hz);
      compare(mixed ? "block patches' sum in single precision" : "block patches' sum", hz, z,
              nd, mixed ? 1e-5 : 1e-9);
      ops->destroy(be, dev);
    }
    be->ops->vec->destroy(be, &d_x);
    be->ops->vec->destroy(be, &d_z);
  }
  vox_efg_patches_free(&p);
  free(inverse), free(work), free(z), free(hz);
}

/* The multigrid's levels lv (made here, kept by the caller while dev
 * lives) on the host against their definition, and the backend's level
 * operations against the host's, for K's values in k and the vector x. */
static void test_levels(vox_context *ctx, vox_backend *be, vox_efg_device *dev,
                        const vox_efg_model *efg, const vox_bsr *k, const double *x,
                        vox_efg_levels *lv) {
  const vox_efg_ops *ops = be->ops->efg;
  CHECK_OK(ctx, vox_efg_levels_init(ctx, efg, k, 150, lv));
  printf("  levels: %d,", lv->n_levels);
  for (int l = 0; l < lv->n_levels; l++) printf(" %zu", lv->n_nodes[l]);
  printf(" nodes\n");
  CHECK(lv->n_levels >= 3);
  if (lv->n_levels < 2) return;
  /* the host's values of every level */
  double *val[VOX_EFG_MAX_LEVELS] = {k->val}, *bval[VOX_EFG_MAX_LEVELS] = {0};
  for (int l = 0; l + 1 < lv->n_levels; l++) {
    const vox_efg_transfer *t = &lv->transfer[l];
    bval[l] = malloc(9 * vox_bsr_blocks(&t->b) * sizeof(double));
    val[l + 1] = malloc(9 * vox_bsr_blocks(&t->coarse) * sizeof(double));
    vox_bsr a = *vox_efg_level_pattern(lv, k, l);
    vox_efg_galerkin(t, &a, val[l], bval[l], val[l + 1]);
  }
  /* level 1 against P^T K P from the definition of P, densely */
  {
    const vox_efg_transfer *t = &lv->transfer[0];
    const size_t nf = 3 * t->n_fine, nc = 3 * t->n_coarse;
    double *P = calloc(nf * nc, sizeof *P), *A = calloc(nf * nf, sizeof *A),
           *AP = calloc(nf * nc, sizeof *AP), *C = calloc(nc * nc, sizeof *C),
           *H = calloc(nc * nc, sizeof *H);
    for (size_t i = 0; i < t->n_fine; i++)
      for (int p = 0; p < 8 && t->parent[8 * i + (size_t)p] >= 0; p++)
        for (int c = 0; c < 3; c++)
          P[(3 * i + (size_t)c) * nc + 3 * (size_t)t->parent[8 * i + (size_t)p] + (size_t)c] =
              t->parent_weight[8 * i + (size_t)p];
    for (size_t i = 0; i < k->n_rows; i++)
      for (size_t b = k->row_start[i]; b < k->row_start[i + 1]; b++)
        for (int r = 0; r < 3; r++)
          for (int c = 0; c < 3; c++)
            A[(3 * i + (size_t)r) * nf + 3 * (size_t)k->col[b] + (size_t)c] = k->val[9 * b + 3 * (size_t)r + (size_t)c];
    for (size_t i = 0; i < nf; i++)
      for (size_t l = 0; l < nf; l++)
        if (A[i * nf + l] != 0)
          for (size_t j = 0; j < nc; j++) AP[i * nc + j] += A[i * nf + l] * P[l * nc + j];
    for (size_t l = 0; l < nf; l++)
      for (size_t i = 0; i < nc; i++)
        if (P[l * nc + i] != 0)
          for (size_t j = 0; j < nc; j++) C[i * nc + j] += P[l * nc + i] * AP[l * nc + j];
    const vox_bsr *a1 = &t->coarse;
    for (size_t i = 0; i < a1->n_rows; i++)
      for (size_t b = a1->row_start[i]; b < a1->row_start[i + 1]; b++)
        for (int r = 0; r < 3; r++)
          for (int c = 0; c < 3; c++)
            H[(3 * i + (size_t)r) * nc + 3 * (size_t)a1->col[b] + (size_t)c] = val[1][9 * b + 3 * (size_t)r + (size_t)c];
    compare("level 1 = P^T K P (dense, from P's definition)", H, C, nc * nc, 1e-12);
    free(P), free(A), free(AP), free(C), free(H);
  }
  /* the backend's operations against the host's */
  CHECK_OK(ctx, ops->mg_create(be, dev, lv));
  int made = 0;
  CHECK_OK(ctx, ops->mg_setup(be, dev, 1, 0, &made));
  CHECK(made == 1);
  if (ops->mg_setup_wait) CHECK_OK(ctx, ops->mg_setup_wait(be, dev)); /* the last level's */
  for (int l = 0; l < lv->n_levels; l++) {
    const size_t n = 3 * lv->n_nodes[l];
    double *xl = malloc(n * sizeof *xl), *yh = malloc(n * sizeof *yh), *yd = malloc(n * sizeof *yd);
    for (size_t i = 0; i < n; i++) xl[i] = x[i % (3 * efg->nodes.n)] * (1 + 0.1 * (double)(i % 7));
    vox_vec dx, dy;
    if (!to_backend(be, xl, n, &dx) || !to_backend(be, NULL, n, &dy)) break;
    vox_bsr a = *vox_efg_level_pattern(lv, k, l);
    a.val = val[l];
    char what[80];
    if (l > 0) {
      vox_efg_stiffness_apply(&a, xl, yh);
      CHECK_OK(ctx, ops->mg_apply(be, dev, l, &dx, &dy));
      download(be, &dy, yd);
      snprintf(what, sizeof what, "level %d: A_l x", l);
      compare(what, yd, yh, n, 1e-12);
      for (size_t i = 0; i < lv->n_nodes[l]; i++) {
        double inv[9] = {0};
        const ptrdiff_t at = vox_bsr_find_block(&a, (int32_t)i, (int32_t)i);
        CHECK(at >= 0 && vox_efg_spd3_inverse(a.val + 9 * (size_t)at, inv));
        for (int c = 0; c < 3; c++)
          yh[3 * i + (size_t)c] = inv[3 * c] * xl[3 * i] + inv[3 * c + 1] * xl[3 * i + 1] +
                                  inv[3 * c + 2] * xl[3 * i + 2];
      }
      CHECK_OK(ctx, ops->mg_jacobi(be, dev, l, &dx, &dy));
      download(be, &dy, yd);
      snprintf(what, sizeof what, "level %d: block Jacobi", l);
      compare(what, yd, yh, n, 1e-12);
      /* a fused Chebyshev step from the residual x: dir = 2 D^-1 x + 0.5 dir
       * with dir = x before, then x += dir */
      vox_vec ddir;
      if (to_backend(be, xl, n, &ddir)) {
        double *dh = malloc(n * sizeof *dh);
        for (size_t i = 0; i < n; i++) dh[i] = 2 * yh[i] + 0.5 * xl[i];
        CHECK_OK(ctx, ops->mg_smooth_step(be, dev, l, &dx, 2, 0.5, 0, &ddir, &dx));
        download(be, &ddir, yd);
        snprintf(what, sizeof what, "level %d: Chebyshev step's direction", l);
        compare(what, yd, dh, n, 1e-12);
        for (size_t i = 0; i < n; i++) dh[i] += xl[i];
        download(be, &dx, yd);
        snprintf(what, sizeof what, "level %d: Chebyshev step's iterate", l);
        compare(what, yd, dh, n, 1e-12);
        CHECK_OK(ctx, be->ops->vec->upload(be, &dx, xl));
        be->ops->vec->destroy(be, &ddir);
        free(dh);
      }
    }
    { /* the residual b - A_l x, here x - A_l x */
      vox_efg_stiffness_apply(&a, xl, yh);
      for (size_t i = 0; i < n; i++) yh[i] = xl[i] - yh[i];
      CHECK_OK(ctx, ops->mg_residual(be, dev, l, &dx, &dx, &dy));
      download(be, &dy, yd);
      snprintf(what, sizeof what, "level %d: residual", l);
      compare(what, yd, yh, n, 1e-12);
    }
    if (l + 1 < lv->n_levels) {
      const vox_efg_transfer *t = &lv->transfer[l];
      const size_t nc = 3 * t->n_coarse;
      double *ch = malloc(nc * sizeof *ch), *cd = malloc(nc * sizeof *cd);
      vox_vec dc;
      if (to_backend(be, NULL, nc, &dc)) {
        vox_efg_restrict(t, xl, ch);
        CHECK_OK(ctx, ops->mg_restrict(be, dev, l, &dx, &dc));
        download(be, &dc, cd);
        snprintf(what, sizeof what, "level %d: P^T r", l);
        compare(what, cd, ch, nc, 1e-12);
        memcpy(yh, xl, n * sizeof *yh);
        vox_efg_prolong_add(t, ch, yh);
        CHECK_OK(ctx, ops->mg_prolong_add(be, dev, l, &dc, &dx));
        download(be, &dx, yd);
        snprintf(what, sizeof what, "level %d: x + P xc", l);
        compare(what, yd, yh, n, 1e-12);
        be->ops->vec->destroy(be, &dc);
      }
      free(ch), free(cd);
    } else { /* the dense solve: A_last x = b */
      CHECK_OK(ctx, ops->mg_coarse_solve(be, dev, &dx, &dy));
      download(be, &dy, yd);
      vox_efg_stiffness_apply(&a, yd, yh);
      snprintf(what, sizeof what, "level %d (last): A x of the dense solve, against b", l);
      compare(what, yh, xl, n, 1e-9);
    }
    be->ops->vec->destroy(be, &dx);
    be->ops->vec->destroy(be, &dy);
    free(xl), free(yh), free(yd);
  }
  for (int l = 0; l + 1 < lv->n_levels; l++) free(bval[l]), free(val[l + 1]);
}

/* The smoothers' bounds (efg_mg.c's Lanczos steps) with their scalars
 * kept on the device against the host loop on the same device (the ops
 * left out of a copy of the backend's table): the same kernels' sums, so
 * the same lambda_max to rounding; and both estimates of every level
 * finite and positive. The estimates themselves are checked against the
 * power method on the CPU (engine_efg's mg_bounds). */
static void test_bounds(vox_context *ctx, vox_backend *be, vox_efg_device *dev,
                        const vox_efg_levels *lv) {
  if (!be->ops->vec->lanczos_begin) {
    printf("  bounds: this backend keeps the Lanczos steps' scalars on the host\n");
    return;
  }
  vox_efg_mg mg;
  CHECK_OK(ctx, vox_efg_mg_init(&mg, be, be->ops->efg, dev, lv, 2, 10));
  double kept[VOX_EFG_MAX_LEVELS] = {0};
  CHECK_OK(ctx, vox_efg_mg_setup_bounds(&mg, 1));
  memcpy(kept, mg.lambda, sizeof kept);
  const vox_backend_ops *ops = be->ops;
  vox_backend_ops host_ops = *ops;
  vox_vector_ops host_vec = *ops->vec;
  host_vec.lanczos_begin = NULL, host_vec.lanczos_step = NULL;
  host_vec.lanczos_direction = NULL, host_vec.lanczos_read = NULL;
  host_ops.vec = &host_vec;
  be->ops = &host_ops;
  CHECK_OK(ctx, vox_efg_mg_setup_bounds(&mg, 1));
  be->ops = ops;
  for (int l = 0; l + 1 < lv->n_levels; l++) {
    const double dl = fabs(kept[l] - mg.lambda[l]) / mg.lambda[l];
    const int ok = isfinite(kept[l]) && kept[l] > 0 && dl <= 1e-12;
    printf("  %-4s  level %d: lambda_max estimate, scalars on the device %.15g, on the host "
           "%.15g  (%.1e, tol 1e-12)\n",
           ok ? "ok" : "FAIL", l, kept[l], mg.lambda[l], dl);
    CHECK(ok);
  }
  vox_efg_mg_free(&mg);
}

/* A device made with VOX_PRECISION_MIXED against dev (double) for the
 * same K: the patches' sum and the multigrid's level 0 residual within
 * float's rounding of the stored inverses and K (max-norm, 1e-5 of the
 * largest entry) but not equal to them (the single-precision copies are
 * what the kernels read); the coarse levels the same as double's. */
static void test_single(vox_context *ctx, vox_backend *be, vox_efg_device *dev,
                        const vox_efg_model *efg, const vox_bsr *k, const vox_vec *d_scale,
                        const double *x, const vox_efg_patches *patches,
                        const vox_efg_levels *lv) {
  const vox_efg_ops *ops = be->ops->efg;
  if (vox_backend_device(be) == VOX_DEVICE_CPU) return; /* the host keeps double */
  vox_efg_device *single = NULL;
  int made = 0;
  CHECK_OK(ctx, ops->create(be, efg, k, VOX_PRECISION_MIXED, &single));
  if (!single) return;
  const size_t nd = 3 * efg->nodes.n;
  double *hd = malloc(nd * sizeof *hd), *hs = malloc(nd * sizeof *hs);
  vox_vec d_x, d_y, d_x1, d_y1;
  if (to_backend(be, x, nd, &d_x) && to_backend(be, NULL, nd, &d_y) &&
      to_backend(be, x, 3 * lv->n_nodes[1], &d_x1) &&
      to_backend(be, NULL, 3 * lv->n_nodes[1], &d_y1)) {
    CHECK_OK(ctx, ops->assemble(be, single, d_scale));
    CHECK_OK(ctx, ops->patches_create(be, single, patches));
    CHECK_OK(ctx, ops->mg_create(be, single, lv));
    CHECK_OK(ctx, ops->mg_setup(be, single, 1, 0, &made));
    CHECK_OK(ctx, ops->patches_factor(be, single, 0));
    CHECK_OK(ctx, ops->mg_setup_wait(be, single));
    for (int pass = 0; pass < 3; pass++) {
      vox_efg_device *d[2] = {dev, single};
      double *h[2] = {hd, hs};
      for (int i = 0; i < 2; i++) {
        if (pass == 0) CHECK_OK(ctx, ops->patches_apply(be, d[i], &d_x, &d_y));
        if (pass == 1) CHECK_OK(ctx, ops->mg_residual(be, d[i], 0, &d_x, &d_x, &d_y));
        if (pass == 2) CHECK_OK(ctx, ops->mg_jacobi(be, d[i], 1, &d_x1, &d_y1));
        download(be, pass == 2 ? &d_y1 : &d_y, h[i]);
      }
      const size_t n = pass == 2 ? 3 * lv->n_nodes[1] : nd;
      double diff = 0;
      for (size_t i = 0; i < n; i++) diff = fmax(diff, fabs(hs[i] - hd[i]));
      static const char *what[] = {"patches' sum in single precision",
                                   "level 0 residual from K in single precision",
                                   "level 1 block Jacobi (double in both)"};
      compare(what[pass], hs, hd, n, pass == 2 ? 0 : 1e-5);
      CHECK(pass == 2 ? diff == 0 : diff > 0);
    }
    be->ops->vec->destroy(be, &d_x);
    be->ops->vec->destroy(be, &d_y);
    be->ops->vec->destroy(be, &d_x1);
    be->ops->vec->destroy(be, &d_y1);
  }
  /* K in float added, the cells' and the penalty points' patches'
   * inverses (these made in shared memory) in float instead of double */
  const double more = 4.0 * (9.0 * (double)vox_bsr_blocks(k) -
                             (double)vox_efg_patches_inverse_doubles(patches));
  const double told = (double)ops->bytes(single) - (double)ops->bytes(dev);
  printf("  %-4s  single precision: the device holds %zu bytes against %zu (%+.0f, expected "
         "%+.0f)\n",
         told == more ? "ok" : "FAIL", ops->bytes(single), ops->bytes(dev), told, more);
  CHECK(told == more);
  /* back to double: after the next setup the same answers as dev's, to the
   * bit, and the same bytes */
  CHECK_OK(ctx, ops->precision_double(be, single));
  CHECK_OK(ctx, ops->mg_setup(be, single, 1, 0, &made));
  CHECK_OK(ctx, ops->patches_factor(be, single, 0));
  CHECK_OK(ctx, ops->mg_setup_wait(be, single));
  if (to_backend(be, x, nd, &d_x) && to_backend(be, NULL, nd, &d_y)) {
    for (int pass = 0; pass < 2; pass++) {
      vox_efg_device *d[2] = {dev, single};
      double *h[2] = {hd, hs};
      for (int i = 0; i < 2; i++) {
        if (pass == 0) CHECK_OK(ctx, ops->patches_apply(be, d[i], &d_x, &d_y));
        if (pass == 1) CHECK_OK(ctx, ops->mg_residual(be, d[i], 0, &d_x, &d_x, &d_y));
        download(be, &d_y, h[i]);
      }
      compare(pass ? "level 0 residual, back in double" : "patches' sum, back in double", hs,
              hd, nd, 0);
    }
    be->ops->vec->destroy(be, &d_x);
    be->ops->vec->destroy(be, &d_y);
  }
  printf("  %-4s  back in double: %zu bytes against %zu\n",
         ops->bytes(single) == ops->bytes(dev) ? "ok" : "FAIL", ops->bytes(single),
         ops->bytes(dev));
  CHECK(ops->bytes(single) == ops->bytes(dev));
  ops->destroy(be, single);
  free(hd), free(hs);
}

/* The OC update and the measure of non-discreteness's sum on the backend
 * against the host's (efg_oc.h), for these sensitivities: cold, then
 * around the answer, then with q = 2. The searches' sums differ by
 * rounding, so their multipliers may end anywhere in the last bracket
 * (2e-9 wide in log lambda), the densities within eta times that. */
static void test_oc(vox_context *ctx, vox_backend *be, vox_efg_device *dev,
                    const vox_efg_model *efg, const double *rho, const double *dc,
                    const double *rho_g, const vox_vec *d_rho, const vox_vec *d_dc,
                    const vox_vec *d_rho_g) {
  const vox_efg_ops *ops = be->ops->efg;
  const size_t nn = efg->nodes.n;
  double *dv = malloc(nn * sizeof *dv), *work = malloc(3 * nn * sizeof *work),
         *want = malloc(nn * sizeof *want), *got = malloc(nn * sizeof *got);
  uint8_t *design = malloc(nn);
  vox_vec d_new;
  if (!dv || !work || !want || !got || !design || !to_backend(be, NULL, nn, &d_new)) return;
  vox_efg_volume_sensitivity(efg, dv);
  double v0 = 0;
  for (size_t i = 0; i < nn; i++) {
    design[i] = efg->node_role[i] == VOX_ROLE_DESIGN;
    v0 += design[i] ? dv[i] : 0;
  }
  vox_efg_oc_options o = {.eta = 0.5, .move = 0.2, .rmin = 1e-3, .q = 1, .target = 0.4 * v0,
                          .log_lambda = NAN};
  const char *what[] = {"cold", "around the answer", "q = 2"};
  for (int pass = 0; pass < 3; pass++) {
    vox_efg_oc_result h, g;
    vox_efg_oc_update(&o, nn, rho, dc, dv, design, work, want, &h);
    CHECK_OK(ctx, ops->oc_update(be, dev, &o, d_rho, d_dc, &d_new, &g));
    download(be, &d_new, got);
    const double dt = fabs(g.log_lambda - h.log_lambda);
    const int ok = dt <= 2.5e-9;
    printf("  %-4s  OC update, %-17s: log lambda %-22.15g %9.2e  (tol 2.5e-09; %d and %d "
           "passes)\n",
           ok ? "ok" : "FAIL", what[pass], g.log_lambda, dt, g.passes, h.passes);
    CHECK(ok);
    compare("  its densities", got, want, nn, 2e-9);
    compare("  the volume going in", &g.volume, &h.volume, 1, 1e-13);
    compare("  the largest change", &g.change, &h.change, 1, 1e-8);
    o.log_lambda = h.log_lambda + 0.01;
    if (pass == 1) o.q = 2, o.target = 0.5 * v0, o.log_lambda = NAN;
  }
  double sum_h = vox_efg_non_discreteness_sum(efg->n_cells, efg->cell_role, rho_g), sum_g;
  CHECK_OK(ctx, ops->non_discreteness(be, dev, d_rho_g, &sum_g));
  compare("the measure of non-discreteness's sum", &sum_g, &sum_h, 1, 1e-13);
  be->ops->vec->destroy(be, &d_new);
  free(dv), free(work), free(want), free(got), free(design);
}

static void test_stages(vox_context *ctx, vox_backend *be) {
  const vox_efg_ops *ops = be->ops->efg;
  CHECK(ops != NULL);
  if (!ops) return;
  vox_model m;
  make_cantilever(ctx, &m);
  vox_efg_options eo;
  vox_efg_options_default(&eo);
  eo.penalty_scale = 1e2;
  eo.simp_penalty = 3;
  vox_efg_model efg;
  CHECK_OK(ctx, vox_efg_model_create(ctx, &m, &eo, &efg));
  const size_t nn = efg.nodes.n, ng = efg.gauss.n_points, nd = 3 * nn;
  vox_bsr k;
  CHECK_OK(ctx, vox_efg_stiffness_pattern(ctx, &efg, &k));
  const size_t nb = vox_bsr_blocks(&k);
  printf("stages: %zu nodes, %zu Gauss points, %zu penalty points, %zu blocks of K\n", nn, ng,
         efg.support.n_points, nb);
  vox_efg_device *dev = NULL;
  CHECK_OK(be->ctx, ops->create(be, &efg, &k, VOX_PRECISION_DOUBLE, &dev));
  if (!dev) {
    vox_bsr_free(&k);
    vox_efg_model_free(&efg);
    vox_model_free(&m);
    return;
  }
  printf("  the device holds %.1f MB\n", (double)ops->bytes(dev) / 1e6);

  /* random nodal densities in [rho_min, 1] (solid nodes 1) */
  double *rho = malloc(nn * sizeof *rho), *rho_g = malloc(ng * sizeof *rho_g),
         *scale = malloc(ng * sizeof *scale), *q = malloc(ng * sizeof *q),
         *dc = malloc(nn * sizeof *dc), *hg = malloc((ng > nd ? ng : nd) * sizeof *hg),
         *x = malloc(nd * sizeof *x), *y = malloc(nd * sizeof *y), *f = malloc(nd * sizeof *f),
         *u = calloc(nd, sizeof *u), *kval = malloc(9 * nb * sizeof *kval);
  uint64_t seed = 7;
  for (size_t i = 0; i < nn; i++)
    rho[i] = efg.node_role[i] == VOX_ROLE_SOLID ? 1 : 1e-3 + (1 - 1e-3) * uniform(&seed);
  for (size_t i = 0; i < nd; i++) x[i] = uniform(&seed) - 0.5;
  vox_vec d_rho, d_rho_g, d_scale, d_q, d_dc, d_x, d_y, d_u;
  if (!to_backend(be, rho, nn, &d_rho) || !to_backend(be, NULL, ng, &d_rho_g) ||
      !to_backend(be, NULL, ng, &d_scale) || !to_backend(be, NULL, ng, &d_q) ||
      !to_backend(be, NULL, nn, &d_dc) || !to_backend(be, x, nd, &d_x) ||
      !to_backend(be, NULL, nd, &d_y) || !to_backend(be, NULL, nd, &d_u))
    return;

  /* eq. 16 and SIMP at p = 3 */
  vox_efg_gauss_density(&efg, rho, rho_g);
  CHECK_OK(ctx, ops->gauss_density(be, dev, &d_rho, &d_rho_g));
  download(be, &d_rho_g, hg);
  compare("Gauss points' densities (eq. 16)", hg, rho_g, ng, 1e-12);
  vox_efg_gauss_scale(&efg, rho_g, scale);
  CHECK_OK(ctx, ops->gauss_scale(be, dev, &d_rho_g, 3, &d_scale));
  download(be, &d_scale, hg);
  compare("Gauss points' factors w E rho^p", hg, scale, ng, 1e-12);

  /* the node-pair assembly, twice (the second overwrites the first) */
  CHECK_OK(ctx, vox_efg_stiffness_assemble(ctx, &efg, scale, &k));
  for (int pass = 0; pass < 2; pass++) {
    CHECK_OK(ctx, ops->assemble(be, dev, &d_scale));
    CHECK_OK(ctx, ops->matrix_download(be, dev, kval));
    compare(pass ? "K assembled again" : "K node pair by node pair", kval, k.val, 9 * nb, 1e-12);
  }

  /* products: K x and block Jacobi */
  vox_efg_stiffness_apply(&k, x, y);
  CHECK_OK(ctx, ops->apply(be, dev, &d_x, &d_y));
  download(be, &d_y, hg);
  compare("K x", hg, y, nd, 1e-12);
  vox_bsr inverse;
  CHECK_OK(ctx, vox_efg_block_jacobi(ctx, &k, &inverse));
  CHECK_OK(ctx, ops->block_jacobi(be, dev));
  vox_efg_stiffness_apply(&inverse, x, y);
  CHECK_OK(ctx, ops->precondition(be, dev, &d_x, &d_y));
  download(be, &d_y, hg);
  compare("block Jacobi D^-1 r", hg, y, nd, 1e-12);
  vox_efg_patches patches;
  test_patches(ctx, be, dev, &efg, &k, x, &patches);
  vox_efg_levels levels;
  test_levels(ctx, be, dev, &efg, &k, x, &levels);
  test_bounds(ctx, be, dev, &levels);
  test_single(ctx, be, dev, &efg, &k, &d_scale, x, &patches, &levels);
  test_block_patches(ctx, be, &efg, &k, &d_scale, x);

  /* the sensitivities of load case 0's solution */
  CHECK_OK(ctx, vox_efg_load_vector(ctx, &efg, &m, 0, f));
  vox_solver_options so;
  vox_solver_options_default(&so);
  so.rtol = 1e-10;
  so.max_iterations = 20000;
  vox_solve_result res;
  CHECK_OK(ctx, vox_efg_cg(&k, &inverse, f, u, &so, &res));
  CHECK(res.reason > 0);
  printf("  the host's solve: %d CG iterations, |r| / |f| = %.1e\n", res.iterations,
         res.residual_norm / res.rhs_norm);
  CHECK_OK(ctx, be->ops->vec->upload(be, &d_u, u));
  vox_efg_strain_energy(&efg, u, q);
  CHECK_OK(ctx, ops->strain_energy(be, dev, &d_u, &d_q));
  download(be, &d_q, hg);
  compare("energy densities Q per Gauss point (eq. 27)", hg, q, ng, 1e-12);
  vox_efg_compliance_sensitivity(&efg, rho_g, q, dc);
  CHECK_OK(ctx, ops->compliance_sensitivity(be, dev, &d_rho_g, &d_q, 3, &d_dc));
  download(be, &d_dc, hg);
  compare("node-wise sensitivities dc/drho (eq. 26)", hg, dc, nn, 1e-12);

  /* the supports' springs that follow the material: K with them, and
   * their share of the sensitivities */
  vox_efg_support_springs(&efg, rho);
  CHECK_OK(ctx, ops->support_springs(be, dev, &d_rho, 3));
  CHECK_OK(ctx, vox_efg_stiffness_assemble(ctx, &efg, scale, &k));
  CHECK_OK(ctx, ops->assemble(be, dev, &d_scale));
  CHECK_OK(ctx, ops->matrix_download(be, dev, kval));
  compare("K with the springs of these densities", kval, k.val, 9 * nb, 1e-12);
  double *g = malloc((efg.support.n_points + 1) * sizeof *g), *before = malloc(nn * sizeof *before);
  memcpy(before, dc, nn * sizeof *dc);
  vox_efg_support_sensitivity(&efg, rho, u, g, dc);
  double share = 0;
  for (size_t i = 0; i < nn; i++) share = fmax(share, fabs(dc[i] - before[i]));
  CHECK(share > 0);
  CHECK_OK(ctx, ops->support_sensitivity(be, dev, &d_rho, &d_u, 3, &d_dc));
  download(be, &d_dc, hg);
  compare("dc/drho with the springs' share", hg, dc, nn, 1e-12);
  free(g), free(before);
  test_oc(ctx, be, dev, &efg, rho, dc, rho_g, &d_rho, &d_dc, &d_rho_g);

  /* a block that is not definite is named */
  for (size_t i = 0; i < ng; i++) scale[i] = 0;
  CHECK_OK(ctx, be->ops->vec->upload(be, &d_scale, scale));
  CHECK_OK(ctx, ops->assemble(be, dev, &d_scale));
  const vox_status s = ops->block_jacobi(be, dev);
  CHECK(s == VOX_ERR_INVALID_ARGUMENT);
  printf("  zero stiffness: %s\n", vox_context_message(be->ctx));
  CHECK(ops->patches_factor(be, dev, 0) == VOX_ERR_INVALID_ARGUMENT);
  printf("  zero stiffness: %s\n", vox_context_message(be->ctx));
  CHECK(strstr(vox_context_message(be->ctx), "patch") != NULL);

  vox_vec *vs[] = {&d_rho, &d_rho_g, &d_scale, &d_q, &d_dc, &d_x, &d_y, &d_u};
  for (size_t i = 0; i < sizeof vs / sizeof vs[0]; i++) be->ops->vec->destroy(be, vs[i]);
  ops->destroy(be, dev);
  vox_efg_patches_free(&patches);
  vox_efg_levels_free(&levels);
  double *h[] = {rho, rho_g, scale, q, dc, hg, x, y, f, u, kval};
  for (size_t i = 0; i < sizeof h / sizeof h[0]; i++) free(h[i]);
  vox_bsr_free(&inverse);
  vox_bsr_free(&k);
  vox_efg_model_free(&efg);
  vox_model_free(&m);
}

/* The EFG cantilever's design options of these tests: no continuation,
 * supports held loosely enough for tight solves, three multigrid levels. */
static void design_options(vox_optimizer_options *o, int iterations,
                           vox_efg_preconditioner pc) {
  vox_optimizer_options_default(o);
  o->discretization = VOX_DISCRETIZATION_EFG;
  o->volume_fraction = 0.4;
  o->continuation = 0;
  o->max_iterations = iterations;
  o->efg_penalty_scale = 1e2;
  o->efg_preconditioner = pc;
  o->efg_mg_coarse_dofs = 150; /* three levels on this cantilever */
}

/* Five design iterations on the CPU (host arrays) and on the backend with
 * the preconditioner pc (and the multigrid's last level kept while its
 * diagonal moves by no more than drift); their CG iterations in *cg. */
static void test_design_with(vox_context *ctx, vox_backend *cpu, vox_backend *be,
                             vox_efg_preconditioner pc, double drift, double *history,
                             int cg[2]) {
  vox_model mc, mg;
  make_cantilever(ctx, &mc);
  make_cantilever(ctx, &mg);
  vox_optimizer_options o;
  design_options(&o, 5, pc);
  o.efg_mg_refactor_drift = drift;
  o.solver.rtol = 1e-10;
  o.solver.max_iterations = 20000;
  vox_optimize_result rc, rg;
  CHECK_OK(ctx, vox_optimize(ctx, cpu, &mc, &o, &rc));
  if (vox_backend_device(be) != VOX_DEVICE_CPU) {
    CHECK_OK(ctx, vox_optimize(ctx, be, &mg, &o, &rg));
  } else { /* the self-check: the CPU's table through the backend path */
    vox_optimizer_options resolved = o;
    resolved.solver.rtol = vox_optimizer_rtol(&o);
    CHECK_OK(ctx, vox_efg_optimize_on(ctx, be, be->ops->efg, &mg, &resolved, &rg));
  }
  printf("design, %s: %d iterations each, compliance %.9g N mm (cpu) %.9g (%s), CG %d and %d\n",
         vox_efg_preconditioner_name(pc), rc.iterations, rc.objective, rg.objective,
         vox_backend_name(be), rc.total_cg_iterations, rg.total_cg_iterations);
  cg[0] = rc.total_cg_iterations, cg[1] = rg.total_cg_iterations;
  if (pc == VOX_EFG_PC_MG) {
    /* a drift no design reaches keeps the first factor and patch inverses
     * on both, until a solve that breaks down with them is redone with all
     * made afresh; 0 keeps none */
    printf("  the last level factored %d times (cpu) and %d (%s)\n", rc.efg_mg_factors,
           rg.efg_mg_factors, vox_backend_name(be));
    CHECK(rc.efg_mg_factors == rg.efg_mg_factors);
    CHECK(drift == 0 ? rc.efg_mg_factors == 5 : rc.efg_mg_factors < 5);
  }
  for (size_t i = 0; i < 5 && i < mc.n_history; i++) history[i] = mc.history[i].objective;
  CHECK(rc.iterations == 5 && rg.iterations == 5 && mc.n_history == 5 && mg.n_history == 5);
  for (size_t i = 0; i < mc.n_history && i < mg.n_history; i++) {
    char what[64];
    snprintf(what, sizeof what, "iteration %d's compliance", mc.history[i].iteration);
    compare(what, &mg.history[i].objective, &mc.history[i].objective, 1, 1e-9);
  }
  compare("final compliance", &rg.objective, &rc.objective, 1, 1e-9);
  compare("final volume fraction", &rg.volume_fraction, &rc.volume_fraction, 1, 1e-9);
  const size_t n_nodes = (size_t)vox_grid_nodes(&mc.grid), ne = (size_t)vox_grid_elements(&mc.grid);
  CHECK(mc.nodal_density && mg.nodal_density && mc.density && mg.density && mc.displacement &&
        mg.displacement);
  if (mc.nodal_density && mg.nodal_density) {
    compare("final nodal densities", mg.nodal_density, mc.nodal_density, n_nodes, 1e-6);
    compare("final voxel densities", mg.density, mc.density, ne, 1e-6);
    compare("final displacements (2 cases)", mg.displacement, mc.displacement, 6 * n_nodes,
            1e-6);
  }
  vox_model_free(&mc);
  vox_model_free(&mg);
}

/* The same designs with block Jacobi and with the patches (each solve to
 * 1e-10), the patches in fewer CG iterations on each device. */
static void test_design(vox_context *ctx, vox_backend *cpu, vox_backend *be) {
  double hj[5] = {0}, hs[5] = {0}, hm[5] = {0};
  int cj[2] = {0}, cs[2] = {0}, cm[2] = {0};
  test_design_with(ctx, cpu, be, VOX_EFG_PC_JACOBI, 0, hj, cj);
  test_design_with(ctx, cpu, be, VOX_EFG_PC_SCHWARZ, 0, hs, cs);
  test_design_with(ctx, cpu, be, VOX_EFG_PC_MG, 0, hm, cm);
  double hk[5] = {0};
  int ck[2] = {0};
  test_design_with(ctx, cpu, be, VOX_EFG_PC_MG, 1e300, hk, ck); /* the first ones kept */
  compare("compliances, the first inverses kept against made afresh", hk, hm, 5, 1e-8);
  compare("compliances, patches against block Jacobi", hs, hj, 5, 1e-8);
  compare("compliances, multigrid against block Jacobi", hm, hj, 5, 1e-8);
  CHECK(cs[0] < cj[0] && cs[1] < cj[1]);
  CHECK(cm[0] < cs[0] && cm[1] < cs[1]);
}

/* The multigrid's V-cycle recorded and replayed (efg_record 1) against
 * launched kernel by kernel (0): the same kernels in the same order, so the
 * same CG iterations and the same design to the last bit. */
static void test_recorded(vox_context *ctx, vox_backend *be) {
  if (vox_backend_device(be) == VOX_DEVICE_CPU) return; /* nothing to record */
  vox_model m[2];
  vox_optimize_result r[2];
  for (int rec = 0; rec < 2; rec++) {
    make_cantilever(ctx, &m[rec]);
    vox_optimizer_options o;
    design_options(&o, 3, VOX_EFG_PC_MG);
    o.efg_record = rec;
    CHECK_OK(ctx, vox_optimize(ctx, be, &m[rec], &o, &r[rec]));
  }
  printf("recorded V-cycles: compliance %.17g against %.17g, CG %d against %d\n", r[1].objective,
         r[0].objective, r[1].total_cg_iterations, r[0].total_cg_iterations);
  CHECK(r[1].objective == r[0].objective);
  CHECK(r[1].total_cg_iterations == r[0].total_cg_iterations);
  const size_t nn = (size_t)vox_grid_nodes(&m[0].grid);
  CHECK(m[0].nodal_density && m[1].nodal_density &&
        memcmp(m[0].nodal_density, m[1].nodal_density, nn * sizeof *m[0].nodal_density) == 0);
  vox_model_free(&m[0]);
  vox_model_free(&m[1]);
}

/* The row assembly's tables follow the supports' reach (the box of grid
 * offsets two supports span, 2 reach + 1 lines an axis, and the longest
 * row): K against the host's assembly at other radii, on the cantilever's
 * voxels of 1.25 x 1.25 x 1 (reaches that differ by axis), with a third of
 * the Gauss points' factors zero (void, skipped by both). */
static void test_assembly_supports(vox_context *ctx, vox_backend *be) {
  const vox_efg_ops *ops = be->ops->efg;
  if (!ops) return;
  const double supports[] = {1.5, 2.5, 3.0};
  for (size_t t = 0; t < sizeof supports / sizeof supports[0]; t++) {
    vox_model m;
    make_cantilever(ctx, &m);
    vox_efg_options eo;
    vox_efg_options_default(&eo);
    eo.support_scale = supports[t];
    vox_efg_model efg;
    vox_bsr k;
    CHECK_OK(ctx, vox_efg_model_create(ctx, &m, &eo, &efg));
    CHECK_OK(ctx, vox_efg_stiffness_pattern(ctx, &efg, &k));
    const size_t ng = efg.gauss.n_points, nb = vox_bsr_blocks(&k);
    double *scale = malloc(ng * sizeof *scale), *kval = malloc(9 * nb * sizeof *kval);
    uint64_t seed = 11 + t;
    for (size_t g = 0; g < ng; g++) scale[g] = g % 3 == 1 ? 0 : 0.5 + uniform(&seed);
    CHECK_OK(ctx, vox_efg_stiffness_assemble(ctx, &efg, scale, &k));
    vox_efg_device *dev = NULL;
    vox_vec d_scale;
    CHECK_OK(be->ctx, ops->create(be, &efg, &k, VOX_PRECISION_DOUBLE, &dev));
    if (dev && to_backend(be, scale, ng, &d_scale)) {
      CHECK_OK(ctx, ops->assemble(be, dev, &d_scale));
      CHECK_OK(ctx, ops->matrix_download(be, dev, kval));
      char what[80];
      snprintf(what, sizeof what, "K at support %.1f (reach %d, %d, %d; %zu blocks)",
               supports[t], efg.nodes.reach[0], efg.nodes.reach[1], efg.nodes.reach[2], nb);
      compare(what, kval, k.val, 9 * nb, 1e-12);
      be->ops->vec->destroy(be, &d_scale);
    }
    if (dev) ops->destroy(be, dev);
    free(scale), free(kval);
    vox_bsr_free(&k);
    vox_efg_model_free(&efg);
    vox_model_free(&m);
  }
}

/* What the backend path refuses: the host's smoothed aggregation. */
static void test_refuse(vox_context *ctx, vox_backend *be) {
  if (vox_backend_device(be) == VOX_DEVICE_CPU) return;
  vox_model m;
  make_cantilever(ctx, &m);
  vox_optimizer_options o;
  vox_optimizer_options_default(&o);
  o.discretization = VOX_DISCRETIZATION_EFG;
  o.max_iterations = 1;
  o.efg_preconditioner = VOX_EFG_PC_SA;
  vox_optimize_result r;
  CHECK(vox_optimize(ctx, be, &m, &o, &r) == VOX_ERR_UNSUPPORTED);
  printf("refused: %s\n", vox_context_message(ctx));
  CHECK(m.n_history == 0 && !m.nodal_density);
  vox_model_free(&m);
}

int main(int argc, char **argv) {
  vox_context *gctx, *cctx;
  vox_context_create(&gctx);
  vox_context_create(&cctx);
  vox_backend *gpu = NULL, *cpu = NULL;
  if (vox_backend_create(gctx, test_device(), &gpu) != VOX_OK) {
    printf("SKIP: %s\n", vox_context_message(gctx));
    vox_context_destroy(gctx);
    vox_context_destroy(cctx);
    return SKIP;
  }
  CHECK_OK(cctx, vox_backend_create(cctx, VOX_DEVICE_CPU, &cpu));
  if (check_wanted(argc, argv, "stages")) test_stages(gctx, gpu);
  if (check_wanted(argc, argv, "supports")) test_assembly_supports(gctx, gpu);
  if (check_wanted(argc, argv, "design")) test_design(gctx, cpu, gpu);
  if (check_wanted(argc, argv, "refuse")) test_refuse(gctx, gpu);
  if (check_wanted(argc, argv, "recorded")) test_recorded(gctx, gpu);
  vox_backend_destroy(gpu);
  vox_backend_destroy(cpu);
  vox_context_destroy(gctx);
  vox_context_destroy(cctx);
  CHECK_DONE();
}
