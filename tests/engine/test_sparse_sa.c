/* SPDX-License-Identifier: BSD-3-Clause */
/* The smoothed-aggregation coarse levels of the sparse solver (sparse_sa.h,
 * --sparse-coarse=sa, vox_sparse_pc_options.coarse), each piece against an independent reference:
 * the BSR products against dense ones; the tentative prolongator's dropped
 * modes on degenerate aggregates; the rigid-body modes in the kernel of the
 * fine operator and in the range of T on a bone with no supports; A_1 =
 * P^T A_0 P against a dense product with A_0 assembled here from the
 * element matrix; the deeper levels' A_{l+1} = R_l A_l P_l on vectors and
 * their symmetry; the SA-preconditioned solution against the geometric
 * one; a CG count clearly below the geometric one on a perlin bone; and the
 * refusals (a bad coarse kind or fine transfer, a backend without the
 * matrices). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "../bone_model.h"
#include "sparse_aggregation.h"
#include "sparse_hierarchy.h"
#include "sparse_sa.h"
#include "sparse_sa_fine.h"
#include "sparse_solve.h"
#include "voxfe/element.h"
#include "voxfe/voxfe.h"

/* A BSR matrix as a dense row-major one (rows br n_rows, columns bc n_cols). */
static double *dense_of(const vox_bsr *a) {
  const size_t nr = a->n_rows * (size_t)a->br, nc = a->n_cols * (size_t)a->bc;
  double *d = calloc(nr * nc, sizeof *d);
  for (size_t i = 0; i < a->n_rows; i++)
    for (size_t k = a->row_start[i]; k < a->row_start[i + 1]; k++)
      for (int r = 0; r < a->br; r++)
        for (int c = 0; c < a->bc; c++)
          d[(i * (size_t)a->br + (size_t)r) * nc + (size_t)a->col[k] * (size_t)a->bc + (size_t)c] +=
              a->val[(k * (size_t)a->br + (size_t)r) * (size_t)a->bc + (size_t)c];
  return d;
}

/* A random BSR matrix: each block present with probability 1/3. */
static void random_bsr(size_t nr, size_t nc, int br, int bc, unsigned seed, vox_bsr *a) {
  srand(seed);
  a->n_rows = nr, a->n_cols = nc, a->br = br, a->bc = bc;
  a->row_start = calloc(nr + 1, sizeof *a->row_start);
  a->col = malloc(nr * nc * sizeof *a->col);
  a->val = malloc(nr * nc * (size_t)(br * bc) * sizeof *a->val);
  size_t k = 0;
  for (size_t i = 0; i < nr; i++) {
    for (size_t j = 0; j < nc; j++) {
      if (rand() % 3) continue;
      a->col[k] = (int32_t)j;
      for (int t = 0; t < br * bc; t++)
        a->val[k * (size_t)(br * bc) + (size_t)t] = (double)rand() / RAND_MAX - 0.5;
      k++;
    }
    a->row_start[i + 1] = k;
  }
}

static double max_diff(const double *a, const double *b, size_t n, double *scale) {
  double d = 0, s = 0;
  for (size_t i = 0; i < n; i++) d = fmax(d, fabs(a[i] - b[i])), s = fmax(s, fabs(b[i]));
  *scale = s;
  return d;
}

/* Product, transpose and sum against dense arithmetic. */
static void test_bsr(vox_context *ctx) {
  vox_bsr a, b, c, t, s;
  random_bsr(7, 5, 3, 6, 1, &a);
  random_bsr(5, 9, 6, 2, 2, &b);
  CHECK_OK(ctx, vox_bsr_multiply(ctx, &a, &b, &c));
  double *da = dense_of(&a), *db = dense_of(&b), *dc = dense_of(&c);
  double *ref = calloc(21 * 30, sizeof *ref);
  for (int i = 0; i < 21; i++)
    for (int j = 0; j < 18; j++)
      for (int k = 0; k < 30; k++) ref[i * 18 + j] += da[i * 30 + k] * db[k * 18 + j];
  double scale, d = max_diff(dc, ref, 21 * 18, &scale);
  printf("BSR product: max |C - A B| = %.2e (max %.2e)\n", d, scale);
  CHECK(scale > 0 && d <= 1e-14 * scale);
  for (size_t i = 0; i < c.n_rows; i++) /* columns ascending */
    for (size_t k = c.row_start[i] + 1; k < c.row_start[i + 1]; k++) CHECK(c.col[k - 1] < c.col[k]);
  CHECK_OK(ctx, vox_bsr_transpose(ctx, &a, &t));
  double *dt = dense_of(&t);
  int ok = 1;
  for (int i = 0; i < 21; i++)
    for (int j = 0; j < 30; j++) ok &= dt[j * 21 + i] == da[i * 30 + j];
  CHECK(ok);
  vox_bsr a2;
  random_bsr(7, 5, 3, 6, 3, &a2);
  CHECK_OK(ctx, vox_bsr_add(ctx, &a, -0.25, &a2, &s));
  double *ds = dense_of(&s), *da2 = dense_of(&a2);
  for (int i = 0; i < 21 * 30; i++) ref[i] = da[i] - 0.25 * da2[i];
  d = max_diff(ds, ref, 21 * 30, &scale);
  CHECK(d <= 1e-15 * scale);
  vox_bsr *all[] = {&a, &b, &c, &t, &s, &a2};
  for (int i = 0; i < 6; i++) vox_bsr_free(all[i]);
  free(da), free(db), free(dc), free(ref), free(dt), free(ds), free(da2);
}

/* Degenerate aggregates: one node keeps the translations only, two nodes
 * along x lose the rotation about x, a plate of nodes keeps all six; the
 * columns kept are orthonormal and T R reproduces the modes. */
static void test_tentative(vox_context *ctx) {
  /* nodes 0; 1, 2 (along x); 3..6 (a unit square in x, y): 3 aggregates */
  const double pos[7][3] = {{0, 0, 0}, {0, 0, 0}, {1, 0, 0}, {0, 0, 0},
                            {1, 0, 0}, {0, 1, 0}, {1, 1, 0}};
  const int32_t agg[7] = {0, 1, 1, 2, 2, 2, 2};
  double b[7 * 18];
  for (int m = 0; m < 7; m++) {
    const double x = pos[m][0], y = pos[m][1], z = pos[m][2];
    const double rows[3][6] = {{1, 0, 0, -y, 0, z}, {0, 1, 0, x, -z, 0}, {0, 0, 1, 0, y, -x}};
    memcpy(b + 18 * m, rows, sizeof rows);
  }
  vox_bsr t;
  double r[3 * 36];
  uint8_t dead[3];
  CHECK_OK(ctx, vox_sa_tentative(ctx, 7, 3, agg, 3, b, NULL, &t, r, dead));
  printf("tentative: dead modes %#x %#x %#x\n", dead[0], dead[1], dead[2]);
  CHECK(dead[0] == 0x38); /* rotations of one node: about its own centre, 0 */
  CHECK(dead[1] == 0x10); /* two nodes on the x axis: no rotation about x */
  CHECK(dead[2] == 0);    /* a square: six modes */
  double *dt = dense_of(&t); /* 21 x 18 */
  double err = 0;
  for (int i = 0; i < 18; i++)
    for (int j = 0; j < 18; j++) {
      double s = 0;
      for (int k = 0; k < 21; k++) s += dt[k * 18 + i] * dt[k * 18 + j];
      const int live = !(dead[i / 6] >> (i % 6) & 1);
      err = fmax(err, fabs(s - (i == j && live)));
    }
  CHECK(err <= 1e-14);
  err = 0; /* T R = B per aggregate */
  for (int m = 0; m < 7; m++)
    for (int q = 0; q < 3; q++)
      for (int c = 0; c < 6; c++) {
        double s = 0;
        for (int k = 0; k < 6; k++)
          s += dt[(3 * m + q) * 18 + 6 * agg[m] + k] * r[36 * agg[m] + 6 * k + c];
        err = fmax(err, fabs(s - b[18 * m + 6 * q + c]));
      }
  printf("tentative: max |T T^T T - T| over live columns, |T R - B| = %.2e\n", err);
  CHECK(err <= 1e-14);
  vox_bsr_free(&t);
  free(dt);
}

/* On a bone with no supports: the global rigid-body modes are in A_0's
 * kernel (the fine operator and the mode layout agree) and in the range of
 * the tentative prolongator of the standard aggregates (T T^T B = B). */
static void test_rigid_modes(vox_context *ctx) {
  vox_model m;
  make_bone_model(ctx, &m, 12, 7, 0);
  vox_sparse_hierarchy h;
  CHECK_OK(ctx, vox_sparse_hierarchy_build(ctx, &m, 0.3, VOX_SPARSE_FINE_ONLY, 0, &h));
  CHECK(h.n_levels == 1);
  const vox_sparse_host_level *lv = &h.level[0];
  const size_t n = lv->n_nodes;
  vox_sa_fine f;
  CHECK_OK(ctx, vox_sa_fine_create(ctx, &h, &f));
  size_t *rs;
  int32_t *adj, *agg = malloc(n * sizeof *agg);
  CHECK_OK(ctx, vox_sa_fine_graph(ctx, &f, &rs, &adj));
  size_t na = 0;
  CHECK_OK(ctx, vox_sa_aggregate(ctx, n, rs, adj, NULL, agg, &na));
  size_t unaggregated = 0;
  for (size_t i = 0; i < n; i++) unaggregated += agg[i] < 0;
  CHECK(unaggregated == 0 && na > 1 && na < n / 4);
  /* aggregates are connected through the graph: each node shares an
   * element with another node of its aggregate (or is alone in it) */
  size_t *size = calloc(na, sizeof *size);
  for (size_t i = 0; i < n; i++) size[agg[i]]++;
  int connected = 1;
  for (size_t i = 0; i < n; i++) {
    int has = size[agg[i]] == 1;
    for (size_t k = rs[i]; k < rs[i + 1]; k++) has |= (size_t)adj[k] != i && agg[adj[k]] == agg[i];
    connected &= has;
  }
  CHECK(connected);
  double *g = malloc(n * 18 * sizeof *g), *ba = malloc(n * 18 * sizeof *ba);
  CHECK_OK(ctx, vox_sa_rigid_modes(ctx, lv, NULL, 0, g, NULL));   /* about the origin */
  CHECK_OK(ctx, vox_sa_rigid_modes(ctx, lv, agg, na, ba, NULL)); /* about the centroids */
  vox_bsr t;
  double *r = malloc(na * 36 * sizeof *r);
  uint8_t *dead = malloc(na);
  CHECK_OK(ctx, vox_sa_tentative(ctx, n, 3, agg, na, ba, NULL, &t, r, dead));
  double *x = malloc(3 * n * sizeof *x), *y = malloc(3 * n * sizeof *y);
  double *c = calloc(6 * na, sizeof *c), *tx = malloc(3 * n * sizeof *tx);
  vox_bsr tt;
  CHECK_OK(ctx, vox_bsr_transpose(ctx, &t, &tt));
  /* a scale for A_0's residuals: |A_0| |x| by a vector of ones per component */
  for (int mode = 0; mode < 6; mode++) {
    double xmax = 0, ymax = 0, kmax = 0;
    for (size_t i = 0; i < 3 * n; i++) x[i] = g[(i / 3) * 18 + (i % 3) * 6 + (size_t)mode];
    for (size_t i = 0; i < 3 * n; i++) xmax = fmax(xmax, fabs(x[i]));
    vox_sa_fine_apply(&f, x, y);
    for (size_t i = 0; i < 3 * n; i++) ymax = fmax(ymax, fabs(y[i]));
    for (size_t i = 0; i < 3 * n; i++) y[i] = (i % 3) == (size_t)(mode % 3);
    vox_sa_fine_apply(&f, y, tx);
    for (size_t i = 0; i < 3 * n; i++) kmax = fmax(kmax, fabs(tx[i])); /* > 0: no kernel */
    vox_sa_fine_apply(&f, x, y);
    CHECK(ymax <= 1e-11 * 8748.3 * xmax);
    vox_bsr_apply(&tt, x, c);
    vox_bsr_apply(&t, c, tx);
    double scale, d = max_diff(tx, x, 3 * n, &scale);
    printf("rigid mode %d: max |A_0 b| = %.2e (E |b| = %.2e), max |T T^T b - b| = %.2e\n", mode,
           ymax, 8748.3 * xmax, d);
    CHECK(d <= 1e-12 * scale);
    (void)kmax;
  }
  vox_bsr_free(&t), vox_bsr_free(&tt);
  free(rs), free(adj), free(agg), free(size), free(g), free(ba), free(r), free(dead);
  free(x), free(y), free(c), free(tx);
  vox_sa_fine_free(&f);
  vox_sparse_hierarchy_free(&h);
  vox_model_free(&m);
}

/* A 5^3 box with holes under a compression test: A_1 against P^T A_0 P
 * with A_0 assembled densely here from the element matrix, R = P^T, and
 * the levels' symmetry. */
static void test_galerkin_dense(vox_context *ctx) {
  const int64_t n = 5, px = n + 1;
  vox_grid gr = {.nx = n, .ny = n, .nz = n, .voxel_size = {0.05, 0.05, 0.05}};
  vox_model m;
  CHECK_OK(ctx, vox_model_init(ctx, &m, &gr));
  for (int64_t k = 0; k < n; k++)
    for (int64_t j = 0; j < n; j++)
      for (int64_t i = 0; i < n; i++) { /* a hole along z, one along x, two materials */
        const int hole = (i == 2 && j == 2) || (j == 3 && k == 1) || (i == 0 && j == 4 && k > 2);
        m.label[(k * n + j) * n + i] = hole ? 0 : (uint8_t)(k < 3 ? 1 : 2);
      }
  vox_material a = {.label = 1, .youngs_modulus = 1000, .poisson_ratio = 0.3, .name = "a"};
  vox_material b = {.label = 2, .youngs_modulus = 3000, .poisson_ratio = 0.3, .name = "b"};
  CHECK_OK(ctx, vox_model_add_material(ctx, &m, &a));
  CHECK_OK(ctx, vox_model_add_material(ctx, &m, &b));
  double applied;
  CHECK_OK(ctx, vox_add_compression_test(ctx, &m, VOX_TEST_UNIAXIAL, 2, -0.01, &applied));
  vox_sparse_hierarchy h;
  CHECK_OK(ctx, vox_sparse_hierarchy_build(ctx, &m, 0.3, VOX_SPARSE_FINE_ONLY, 0, &h));
  vox_sa_options o;
  vox_sa_options_default(&o);
  vox_sa_hierarchy sa;
  CHECK_OK(ctx, vox_sa_build(ctx, &h, &o, &sa));
  const vox_sparse_host_level *lv = &h.level[0];
  const size_t nd = 3 * lv->n_nodes, nc = 6 * sa.level[1].n_nodes;
  /* A_0 from the element matrix and the box, fixed rows and columns zero */
  double *a0 = calloc(nd * nd, sizeof *a0), ke[576];
  CHECK(vox_hex8_elasticity(1, 0.3, gr.voxel_size, ke) == 0);
  for (int64_t k = 0; k < n; k++)
    for (int64_t j = 0; j < n; j++)
      for (int64_t i = 0; i < n; i++) {
        const uint8_t l = m.label[(k * n + j) * n + i];
        if (!l) continue;
        const double e = l == 1 ? 1000 : 3000;
        size_t dof[24];
        for (int c = 0; c < 8; c++) {
          const int64_t box = ((k + vox_hex8_corner[c][2]) * px + j + vox_hex8_corner[c][1]) * px +
                              i + vox_hex8_corner[c][0];
          for (int q = 0; q < 3; q++) dof[3 * c + q] = 3 * (size_t)h.box_to_node[box] + (size_t)q;
        }
        for (int r = 0; r < 24; r++)
          for (int c = 0; c < 24; c++) a0[dof[r] * nd + dof[c]] += e * ke[r * 24 + c];
      }
  for (size_t d = 0; d < nd; d++)
    if (lv->node_fixed[d / 3] >> (d % 3) & 1)
      for (size_t q = 0; q < nd; q++) a0[d * nd + q] = a0[q * nd + d] = 0;
  double *p = dense_of(&sa.level[0].p), *rr = dense_of(&sa.level[0].r);
  double *a1 = dense_of(&sa.level[1].a);
  int transposed = 1;
  for (size_t i = 0; i < nd; i++)
    for (size_t j = 0; j < nc; j++) transposed &= rr[j * nd + i] == p[i * nc + j];
  CHECK(transposed);
  double *ap = calloc(nd * nc, sizeof *ap), *ref = calloc(nc * nc, sizeof *ref);
  for (size_t i = 0; i < nd; i++)
    for (size_t k = 0; k < nd; k++)
      if (a0[i * nd + k] != 0)
        for (size_t j = 0; j < nc; j++) ap[i * nc + j] += a0[i * nd + k] * p[k * nc + j];
  for (size_t i = 0; i < nc; i++)
    for (size_t k = 0; k < nd; k++)
      if (p[k * nc + i] != 0)
        for (size_t j = 0; j < nc; j++) ref[i * nc + j] += p[k * nc + i] * ap[k * nc + j];
  size_t n_dead = 0;
  for (size_t i = 0; i < nc; i++) /* dead coarse dofs: identity rows */
    if (sa.level[1].dead[i / 6] >> (i % 6) & 1) ref[i * nc + i] = 1, n_dead++;
  double scale, d = max_diff(a1, ref, nc * nc, &scale), asym = 0;
  for (size_t i = 0; i < nc; i++)
    for (size_t j = 0; j < nc; j++) asym = fmax(asym, fabs(a1[i * nc + j] - a1[j * nc + i]));
  printf("Galerkin 5^3 with holes: %zu fine dofs, %zu coarse (%zu dead), %d levels: "
         "max |A_1 - P^T A_0 P| = %.2e, |A_1 - A_1^T| = %.2e (max %.2e)\n",
         nd, nc, n_dead, sa.n_levels, d, asym, scale);
  CHECK(nc > 6 && nc < nd);
  CHECK(d <= 1e-12 * scale);
  CHECK(asym <= 1e-12 * scale);
  free(a0), free(p), free(rr), free(a1), free(ap), free(ref);
  vox_sa_free(&sa);
  vox_sparse_hierarchy_free(&h);
  vox_model_free(&m);
}

/* Every level below the first of a perlin bone: A_{l+1} x = R_l A_l P_l x
 * on a vector, A_l symmetric, the coarsest inverse an inverse. */
static void test_deeper_levels(vox_context *ctx) {
  vox_model m;
  make_bone_model(ctx, &m, 24, 7, 0);
  double applied;
  CHECK_OK(ctx, vox_add_compression_test(ctx, &m, VOX_TEST_UNIAXIAL, 2, -0.01, &applied));
  vox_sparse_hierarchy h;
  CHECK_OK(ctx, vox_sparse_hierarchy_build(ctx, &m, 0.3, VOX_SPARSE_FINE_ONLY, 0, &h));
  vox_sa_options o;
  vox_sa_options_default(&o);
  o.max_coarse_dofs = 300; /* more levels on a small bone */
  vox_sa_hierarchy sa;
  CHECK_OK(ctx, vox_sa_build(ctx, &h, &o, &sa));
  printf("levels of a 24^3 bone:");
  for (int l = 0; l < sa.n_levels; l++)
    printf(" %zu", sa.level[l].n_nodes * (size_t)sa.level[l].bn);
  printf(" dofs\n");
  CHECK(sa.n_levels >= 3);
  for (int l = 1; l < sa.n_levels; l++) {
    const vox_sa_level *lv = &sa.level[l];
    const vox_bsr *a = &lv->a;
    double asym = 0, amax = 0;
    for (size_t i = 0; i < a->n_rows; i++) /* symmetry, block by block */
      for (size_t k = a->row_start[i]; k < a->row_start[i + 1]; k++) {
        const size_t j = (size_t)a->col[k];
        size_t t = a->row_start[j];
        while (t < a->row_start[j + 1] && a->col[t] != (int32_t)i) t++;
        CHECK(t < a->row_start[j + 1]);
        if (t == a->row_start[j + 1]) continue;
        for (int r = 0; r < 6; r++)
          for (int c = 0; c < 6; c++) {
            asym = fmax(asym, fabs(a->val[k * 36 + (size_t)(6 * r + c)] -
                                   a->val[t * 36 + (size_t)(6 * c + r)]));
            amax = fmax(amax, fabs(a->val[k * 36 + (size_t)(6 * r + c)]));
          }
      }
    CHECK(asym <= 1e-12 * amax);
    if (l == sa.n_levels - 1) { /* A^-1 A x = x */
      const size_t nc = 6 * lv->n_nodes;
      double *x = malloc(nc * sizeof *x), *y = malloc(nc * sizeof *y), *z = malloc(nc * sizeof *z);
      for (size_t i = 0; i < nc; i++) x[i] = sin(0.7 * (double)i);
      vox_bsr_apply(a, x, y);
      vox_bsr_apply(&sa.coarsest_inverse, y, z);
      double scale, d = max_diff(z, x, nc, &scale);
      printf("level %d (coarsest): |A^-1 A x - x| = %.2e, asymmetry %.2e of %.2e\n", l, d, asym,
             amax);
      CHECK(d <= 1e-8 * scale);
      free(x), free(y), free(z);
      continue;
    }
    const vox_sa_level *next = &sa.level[l + 1];
    const size_t nf = 6 * lv->n_nodes, nc = 6 * next->n_nodes;
    double *x = malloc(nc * sizeof *x), *px = malloc(nf * sizeof *px);
    double *apx = malloc(nf * sizeof *apx);
    double *ref = malloc(nc * sizeof *ref), *y = malloc(nc * sizeof *y);
    for (size_t i = 0; i < nc; i++)
      x[i] = (next->dead[i / 6] >> (i % 6) & 1) ? 0 : cos(0.3 * (double)i);
    vox_bsr_apply(&lv->p, x, px);
    vox_bsr_apply(a, px, apx);
    vox_bsr_apply(&lv->r, apx, ref);
    vox_bsr_apply(&next->a, x, y);
    double scale, d = max_diff(y, ref, nc, &scale);
    printf("level %d -> %d: |A_c x - R A P x| = %.2e (max %.2e), asymmetry %.2e of %.2e\n", l,
           l + 1, d, scale, asym, amax);
    CHECK(scale > 0 && d <= 1e-12 * scale);
    free(x), free(px), free(apx), free(ref), free(y);
  }
  vox_sa_free(&sa);
  vox_sparse_hierarchy_free(&h);
  vox_model_free(&m);
}

static int sa_levels; /* of the last SA solve */

/* Solves `m` with the geometric and the SA coarse levels; returns the CG
 * counts and the largest difference of the solutions over the largest
 * displacement. */
static double solve_both(vox_context *ctx, vox_backend *be, vox_model *m, double rtol,
                         int its[2]) {
  const size_t nd = 3 * (size_t)vox_grid_nodes(&m->grid);
  const int cases = m->n_load_cases > 0 ? m->n_load_cases : 1;
  double *u[2];
  vox_solver_options opt;
  vox_solver_options_default(&opt);
  opt.rtol = rtol;
  opt.storage = VOX_STORAGE_SPARSE;
  for (int k = 0; k < 2; k++) {
    u[k] = calloc(nd * (size_t)cases, sizeof *u[k]);
    vox_solve_result r[4];
    vox_sparse_stats st;
    opt.sparse.coarse = k ? VOX_SPARSE_COARSE_SA : VOX_SPARSE_COARSE_SPLIT;
    CHECK_OK(ctx, vox_sparse_solve_elasticity(ctx, be, m, &opt, u[k], r, &st));
    for (int c = 0; c < cases; c++)
      CHECK(r[c].reason == VOX_CONVERGED_RTOL || r[c].reason == VOX_CONVERGED_ZERO_RHS);
    CHECK(st.sa == k);
    its[k] = r[0].iterations;
    if (k) sa_levels = st.n_levels;
    printf("  %s: %zu dofs, %d levels, CG %d", k ? "sa" : "geometric", st.n_dofs, st.n_levels,
           r[0].iterations);
    if (k) printf(", operator complexity %.2f", st.operator_complexity);
    printf("\n");
  }
  double scale, d = max_diff(u[1], u[0], nd * (size_t)cases, &scale);
  free(u[0]), free(u[1]);
  return d / scale;
}

static void test_solutions(vox_context *ctx, vox_backend *be) {
  vox_model m;
  make_bone_model(ctx, &m, 16, 7, 0);
  double applied;
  CHECK_OK(ctx, vox_add_compression_test(ctx, &m, VOX_TEST_UNIAXIAL, 2, -0.01, &applied));
  int its[2];
  printf("compression 16^3 to 1e-10:\n");
  double d = solve_both(ctx, be, &m, 1e-10, its);
  printf("  max |u_sa - u_geometric| / max |u| = %.2e\n", d);
  CHECK(d <= 1e-7);
  vox_model_free(&m);
  make_bone_model(ctx, &m, 12, 7, 1);
  clamp_bottom_load_top(ctx, &m);
  printf("forces 12^3, two load cases, to 1e-10:\n");
  d = solve_both(ctx, be, &m, 1e-10, its);
  printf("  max |u_sa - u_geometric| / max |u| = %.2e\n", d);
  CHECK(d <= 1e-7);
  vox_model_free(&m);
}

/* Level 0's prolongator applied from T (implicit, the default) and stored
 * (explicit): the same preconditioner up to rounding. */
static void test_fine_transfer(vox_context *ctx, vox_backend *be) {
  vox_model m;
  make_bone_model(ctx, &m, 16, 7, 0);
  double applied;
  CHECK_OK(ctx, vox_add_compression_test(ctx, &m, VOX_TEST_UNIAXIAL, 2, -0.01, &applied));
  const size_t nd = 3 * (size_t)vox_grid_nodes(&m.grid);
  double *u[3];
  int its[3];
  size_t bytes[3];
  vox_solver_options opt;
  vox_solver_options_default(&opt);
  opt.rtol = 1e-10;
  opt.storage = VOX_STORAGE_SPARSE;
  opt.sparse.coarse = VOX_SPARSE_COARSE_SA;
  for (int k = 0; k < 3; k++) {
    /* 0: implicit with the smoother's blocks as W; 1: explicit; 2: implicit
     * under a diagonal smoother (W kept as a matrix of its own) */
    u[k] = calloc(nd, sizeof *u[k]);
    vox_solve_result r;
    vox_sparse_stats st;
    opt.sparse.sa_fine_transfer = k == 1 ? VOX_SA_FINE_EXPLICIT : VOX_SA_FINE_IMPLICIT;
    if (k == 2) opt.sparse.block_levels = 0; /* the diagonal */
    CHECK_OK(ctx, vox_sparse_solve_elasticity(ctx, be, &m, &opt, u[k], &r, &st));
    CHECK(r.reason == VOX_CONVERGED_RTOL);
    its[k] = r.iterations;
    bytes[k] = st.bytes;
  }
  double scale, d = max_diff(u[2], u[1], nd, &scale);
  printf("fine transfer implicit under a diagonal smoother: CG %d, max |du| / max |u| = %.2e\n",
         its[2], d / scale);
  CHECK(d <= 1e-8 * scale);
  d = max_diff(u[0], u[1], nd, &scale);
  printf("fine transfer implicit / explicit: CG %d / %d, %zu / %zu bytes, max |du| / max |u| = "
         "%.2e\n",
         its[0], its[1], bytes[0], bytes[1], d / scale);
  CHECK(abs(its[0] - its[1]) <= 1);
  CHECK(d <= 1e-8 * scale);
  CHECK(bytes[0] < bytes[1]);
  free(u[0]), free(u[1]), free(u[2]);
  vox_model_free(&m);
}

/* The point of the coarse space: fewer CG iterations on a thin bone, here
 * with three SA levels (25 geometric against 16 when written). */
static void test_count(vox_context *ctx, vox_backend *be) {
  vox_model m;
  make_bone_model(ctx, &m, 24, 7, 0);
  double applied;
  CHECK_OK(ctx, vox_add_compression_test(ctx, &m, VOX_TEST_UNIAXIAL, 2, -0.01, &applied));
  int its[2];
  printf("compression 24^3 to 1e-6:\n");
  solve_both(ctx, be, &m, 1e-6, its);
  CHECK(sa_levels >= 3);
  CHECK(its[1] <= 0.75 * its[0]);
  vox_model_free(&m);
}

/* The hinged bone (bone_model.h): its A_0, and the coarse levels whose
 * aggregates hold a hinged part, are only semi-definite (the clinical
 * sample has hundreds of such parts). The SA levels take the pseudo-inverse
 * of those blocks (sparse_bsr.c), the geometric levels shift their coarsest
 * factor (sparse_solve.c), and both solves reach the displacements of
 * Jacobi CG on the full box on the column, which no mechanism moves (the
 * hinged parts' rotations are the null space's, which each method may fill
 * in its own way). */
static void test_mechanisms(vox_context *ctx, vox_backend *be) {
  vox_model m;
  make_hinged_model(ctx, &m);
  const size_t nd = 3 * (size_t)vox_grid_nodes(&m.grid);
  double *reference = calloc(nd, sizeof *reference), *u = calloc(nd, sizeof *u);
  vox_solver_options opt;
  vox_solver_options_default(&opt);
  opt.rtol = 1e-10;
  vox_solver_options jacobi = opt;
  jacobi.storage = VOX_STORAGE_FULL_BOX;
  jacobi.preconditioner = VOX_PC_JACOBI;
  jacobi.max_iterations = 100000;
  vox_solve_result r;
  CHECK_OK(ctx, vox_solve_elasticity(ctx, be, &m, 0, 1, 0, &jacobi, reference, &r));
  CHECK(r.reason == VOX_CONVERGED_RTOL);
  printf("mechanisms, Jacobi CG on the full box: CG %d\n", r.iterations);
  opt.storage = VOX_STORAGE_SPARSE;
  for (int k = 0; k < 2; k++) {
    opt.sparse.coarse = k ? VOX_SPARSE_COARSE_SPLIT : VOX_SPARSE_COARSE_SA;
    vox_sparse_stats st;
    memset(u, 0, nd * sizeof *u);
    CHECK_OK(ctx, vox_sparse_solve_elasticity(ctx, be, &m, &opt, u, &r, &st));
    CHECK(r.reason == VOX_CONVERGED_RTOL);
    const double d = hinged_column_difference(u, reference);
    printf("mechanisms, %s: %zu dofs, %d levels, CG %d; the column's max |u - u_jacobi| / max "
           "|u| = %.2e\n", k ? "geometric" : "sa", st.n_dofs, st.n_levels, r.iterations, d);
    CHECK(d <= 1e-7);
  }
  free(reference), free(u);
  vox_model_free(&m);
}

/* A bad coarse kind or fine transfer, and sa on a backend without assembled
 * matrices: one clear error each. */
static void test_option(vox_context *ctx, vox_backend *be) {
  vox_model m;
  make_bone_model(ctx, &m, 12, 7, 0);
  double applied;
  CHECK_OK(ctx, vox_add_compression_test(ctx, &m, VOX_TEST_UNIAXIAL, 2, -0.01, &applied));
  double *u = calloc(3 * (size_t)vox_grid_nodes(&m.grid), sizeof *u);
  vox_solver_options opt;
  vox_solver_options_default(&opt);
  opt.storage = VOX_STORAGE_SPARSE;
  vox_solve_result r;
  vox_sparse_coarse amg;
  CHECK(vox_sparse_coarse_parse("amg", &amg) == -1);
  opt.sparse.coarse = (vox_sparse_coarse)7;
  CHECK(vox_solve_elasticity(ctx, be, &m, 0, 1, 0, &opt, u, &r) == VOX_ERR_INVALID_ARGUMENT);
  CHECK(strstr(vox_context_message(ctx), "unknown sparse coarse levels 7") != NULL);
  opt.sparse.coarse = VOX_SPARSE_COARSE_SA;
  opt.sparse.sa_fine_transfer = (vox_sa_fine_transfer)5;
  CHECK(vox_solve_elasticity(ctx, be, &m, 0, 1, 0, &opt, u, &r) == VOX_ERR_INVALID_ARGUMENT);
  CHECK(strstr(vox_context_message(ctx), "unknown SA fine transfer 5") != NULL);
  opt.sparse.sa_fine_transfer = VOX_SA_FINE_IMPLICIT;
  /* a backend without the matrix operations: sa is refused with a
   * message, nothing is solved */
  vox_backend_ops no_matrices = *be->ops;
  vox_sparse_ops sparse = *be->ops->sparse;
  sparse.matrix_create = NULL;
  no_matrices.sparse = &sparse;
  const vox_backend_ops *ops = be->ops;
  be->ops = &no_matrices;
  CHECK(vox_solve_elasticity(ctx, be, &m, 0, 1, 0, &opt, u, &r) == VOX_ERR_UNSUPPORTED);
  CHECK(strstr(vox_context_message(ctx), "no smoothed-aggregation levels") != NULL);
  be->ops = ops;
  free(u);
  vox_model_free(&m);
}

/* Two voxels: pinned on their x = 0 face under a force (a level 1 of one
 * or two aggregates), then with every node prescribed (no free dof, empty
 * coarse levels): the geometric solution, and no failure. */
static void test_degenerate(vox_context *ctx, vox_backend *be) {
  for (int all = 0; all < 2; all++) {
    vox_grid g = {.nx = 2, .ny = 1, .nz = 1, .voxel_size = {1, 1, 1}};
    vox_model m;
    CHECK_OK(ctx, vox_model_init(ctx, &m, &g));
    m.label[0] = m.label[1] = 1;
    vox_material mat = {.label = 1, .youngs_modulus = 1000, .poisson_ratio = 0.3, .name = "b"};
    CHECK_OK(ctx, vox_model_add_material(ctx, &m, &mat));
    for (int64_t node = 0; node < 12; node++) {
      const int64_t i = node % 3;
      if (!all && i != 0) continue;
      for (int c = 0; c < 3; c++)
        CHECK_OK(ctx, vox_model_add_constraint(ctx, &m, node, c, c == 0 ? 0.01 * (double)i : 0));
    }
    if (!all) {
      CHECK_OK(ctx, vox_model_set_load_cases(ctx, &m, 1));
      CHECK_OK(ctx, vox_model_add_load(ctx, &m, 2, 0, 0, 1.0));
    }
    int its[2];
    const double d = solve_both(ctx, be, &m, 1e-10, its);
    printf("two voxels, %s: max |u_sa - u_geometric| / max |u| = %.2e\n",
           all ? "every node prescribed" : "pinned, a force", d);
    CHECK(d <= 1e-8);
    vox_model_free(&m);
  }
}

int main(void) {
  setvbuf(stdout, NULL, _IONBF, 0);
  vox_context *ctx;
  vox_context_create(&ctx);
  vox_backend *be;
  CHECK_OK(ctx, vox_backend_create(ctx, VOX_DEVICE_CPU, &be));
  test_bsr(ctx);
  test_tentative(ctx);
  test_rigid_modes(ctx);
  test_galerkin_dense(ctx);
  test_deeper_levels(ctx);
  test_option(ctx, be);
  test_degenerate(ctx, be);
  test_solutions(ctx, be);
  test_mechanisms(ctx, be);
  test_fine_transfer(ctx, be);
  test_count(ctx, be);
  vox_backend_destroy(be);
  vox_context_destroy(ctx);
  CHECK_DONE();
}
