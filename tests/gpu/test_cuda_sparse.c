/* SPDX-License-Identifier: BSD-3-Clause */
/* The sparse (bone-only) solver on the CUDA backend against the CPU
 * backend's (label gpu; cuda/cuda_sparse.cu): the products of the first
 * two levels (of the plain and of the split coarse levels, sparse_split.h) on a random vector, in double (1e-12 of
 * the largest entry), float and with the fixed dofs kept, and the transfers
 * between them (float coarse vectors: 1e-6), the inverse 3 x 3 diagonal
 * blocks and a block smoother step; then a perlin bone
 * under a compression test and under forces in two load cases solved to
 * 1e-12 on both (also with each smoother, vox_sparse_pc_options), the
 * same displacements to 1e-8 of the largest (the GPU's
 * float preconditioner changes the path, not the solution), and the CG
 * counts close; the assembled block matrices of the smoothed-aggregation
 * levels (matrix_apply, matrix_smoother_step) for each block shape against
 * the CPU's, a solve with those levels (vox_sparse_pc_options.coarse), and the
 * hinged bone (semi-definite) with each coarse space. Exit 77 (skipped)
 * when this build has no CUDA or the machine no device;
 * VOXFE_GPU_TEST_DEVICE=cpu runs it against the CPU backend itself. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "../bone_model.h"
#include "backend_ops.h"
#include "sparse_bsr.h"
#include "sparse_hierarchy.h"
#include "sparse_ops.h"
#include "sparse_solve.h"
#include "voxfe/voxfe.h"
#include "../vector_doubles.h"

enum { SKIP = 77 };


/* The sparse preconditioner's options of the comparisons that follow. */
static vox_sparse_pc_options sparse_options;

static void compare(vox_context *ctx, vox_backend *gpu, vox_backend *cpu, const vox_model *m,
                    const char *what) {
  const size_t nd = 3 * (size_t)vox_grid_nodes(&m->grid);
  const int cases = m->n_load_cases > 0 ? m->n_load_cases : 1;
  double *ug = calloc(nd * (size_t)cases, sizeof *ug), *uc = calloc(nd * (size_t)cases, sizeof *uc);
  vox_solver_options opt;
  vox_solver_options_default(&opt);
  opt.rtol = 1e-12;
  opt.storage = VOX_STORAGE_SPARSE;
  opt.sparse = sparse_options;
  vox_solve_result rg[2], rc[2];
  vox_sparse_stats sg, sc;
  CHECK_OK(ctx, vox_sparse_solve_elasticity(ctx, gpu, m, &opt, ug, rg, &sg));
  CHECK_OK(ctx, vox_sparse_solve_elasticity(ctx, cpu, m, &opt, uc, rc, &sc));
  CHECK(sg.bytes > 0 && sg.n_dofs == sc.n_dofs);
  for (int c = 0; c < cases; c++) {
    double diff = 0, scale = 0;
    for (size_t i = 0; i < nd; i++) {
      diff = fmax(diff, fabs(ug[c * nd + i] - uc[c * nd + i]));
      scale = fmax(scale, fabs(uc[c * nd + i]));
    }
    printf("%s case %d: %zu dofs, CG %d (gpu) %d (cpu), max |du| / max |u| = %.2e, "
           "%.1f bytes per dof on the device\n",
           what, c, sg.n_dofs, rg[c].iterations, rc[c].iterations, diff / scale,
           (double)sg.bytes / (double)sg.n_dofs);
    CHECK(rg[c].reason == VOX_CONVERGED_RTOL && rc[c].reason == VOX_CONVERGED_RTOL);
    CHECK(scale > 0 && diff <= 1e-8 * scale);
    CHECK(abs(rg[c].iterations - rc[c].iterations) <= 3 + rc[c].iterations / 5);
  }
  free(ug);
  free(uc);
}

/* y = K x of levels 0 and 1 on both backends: a random x with fixed dofs
 * (a compression test's), in double, in float (VOX_APPLY_SINGLE, 1e-5) and
 * the full matrix (VOX_APPLY_FULL). */
static void compare_products(vox_context *ctx, vox_backend *gpu, vox_backend *cpu,
                             const vox_model *m, const char *kind, int split) {
  vox_sparse_hierarchy h;
  CHECK_OK(ctx, vox_sparse_hierarchy_build(ctx, m, 0.3, 0, split, &h));
  printf("%s hierarchy\n", split ? "split" : "plain");
  CHECK(h.n_levels >= 3);
  for (int l = 0; l < 2; l++) {
    const vox_sparse_level_desc d = vox_sparse_level_describe(&h, l);
    const size_t n = 3 * d.n_nodes;
    double *x = malloc(n * sizeof *x), *yg = malloc(n * sizeof *yg), *yc = malloc(n * sizeof *yc);
    uint64_t seed = 12345 + (uint64_t)l;
    for (size_t i = 0; i < n; i++) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      x[i] = (double)(seed >> 11) / 9007199254740992.0 - 0.5;
    }
    /* double, float, the fixed dofs kept, and float into 16 bytes a node
     * (VOX_FLOAT_NODE4: the V-cycle's products on a backend that takes it) */
    const int flag_sets[4] = {0, VOX_APPLY_SINGLE, VOX_APPLY_FULL, VOX_APPLY_SINGLE};
    for (int f = 0; f < 4; f++) {
      const int single = flag_sets[f] == VOX_APPLY_SINGLE;
      vox_backend *bes[2] = {gpu, cpu};
      double *ys[2] = {yg, yc};
      for (int b = 0; b < 2; b++) {
        const vox_sparse_ops *o = bes[b]->ops->sparse;
        vox_sparse_level *lv;
        vox_vec xv, yv;
        CHECK_OK(ctx, o->level_create(bes[b], &d, &lv));
        CHECK_OK(ctx, bes[b]->ops->vec->create(bes[b], n, single, &xv));
        const int layout = f == 3 && o->node4 ? VOX_FLOAT_NODE4 : single;
        CHECK_OK(ctx, bes[b]->ops->vec->create(bes[b], n, layout, &yv));
        CHECK_OK(ctx, upload_doubles(bes[b], &xv, x));
        CHECK_OK(ctx, o->apply(bes[b], lv, &xv, &yv, flag_sets[f]));
        CHECK_OK(ctx, download_doubles(bes[b], &yv, ys[b]));
        bes[b]->ops->vec->destroy(bes[b], &xv);
        bes[b]->ops->vec->destroy(bes[b], &yv);
        o->level_destroy(bes[b], lv);
      }
      double diff = 0, scale = 0;
      for (size_t i = 0; i < n; i++) {
        diff = fmax(diff, fabs(yg[i] - yc[i]));
        scale = fmax(scale, fabs(yc[i]));
      }
      printf("%s: level %d K x (%s): %zu dofs, max |dy| / max |y| = %.2e\n", kind, l,
             f == 0 ? "double" : f == 1 ? "float" : f == 2 ? "full" : "float, 16-byte nodes", n,
             diff / scale);
      CHECK(scale > 0 && diff <= (single ? 1e-5 : 1e-12) * scale);
    }
    free(x);
    free(yg);
    free(yc);
  }
  /* the inverse 3 x 3 blocks of levels 0 and 1, in double (1e-12), float
   * (1e-5) and bfloat16 (summed in a float scratch; 2^-7: the two may
   * round a float sum one unit apart), and a block smoother step with them:
   * random b, ax, d and x, b double and the rest float (1e-5; with
   * bfloat16 blocks all float, as the V-cycle's levels in mixed precision,
   * and both backends step with the double blocks rounded alike), then all
   * double (1e-12) */
  for (int l = 0; l < 2; l++) {
    const vox_sparse_level_desc d = vox_sparse_level_describe(&h, l);
    const size_t n = 3 * d.n_nodes;
    double *in = malloc(4 * n * sizeof *in), *w[2], *xd[2][2];
    double *w64 = malloc(2 * n * sizeof *w64); /* the CPU's double blocks */
    uint64_t seed = 99 + (uint64_t)l;
    for (size_t i = 0; i < 4 * n; i++) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      in[i] = (double)(seed >> 11) / 9007199254740992.0 - 0.5;
    }
    for (int single = 0; single <= VOX_BF16; single++) {
      vox_backend *bes[2] = {gpu, cpu};
      for (int b = 0; b < 2; b++) {
        const vox_sparse_ops *o = bes[b]->ops->sparse;
        vox_sparse_level *lv;
        vox_vec wv, bv, av, dv, xv;
        w[b] = malloc(2 * n * sizeof(double));
        xd[b][0] = malloc(n * sizeof(double));
        xd[b][1] = malloc(n * sizeof(double));
        CHECK_OK(ctx, o->level_create(bes[b], &d, &lv));
        const int vs = single ? 1 : 0; /* the vectors' precision */
        vox_vec scratch = {0};
        if (single == VOX_BF16) CHECK_OK(ctx, bes[b]->ops->vec->create(bes[b], 2 * n, 1, &scratch));
        CHECK_OK(ctx, bes[b]->ops->vec->create(bes[b], 2 * n, single, &wv));
        CHECK_OK(ctx, o->inv_block_diagonal(bes[b], lv, &wv, scratch.data ? &scratch : NULL));
        CHECK_OK(ctx, download_doubles(bes[b], &wv, w[b]));
        if (scratch.data) bes[b]->ops->vec->destroy(bes[b], &scratch);
        if (single == 0 && b == 1) memcpy(w64, w[b], 2 * n * sizeof *w64);
        if (single == VOX_BF16) CHECK_OK(ctx, upload_doubles(bes[b], &wv, w64));
        /* b: CG's double r, or with bfloat16 blocks its float copy (the
         * V-cycle's level 0 now, CUDA's all-float step) */
        CHECK_OK(ctx, bes[b]->ops->vec->create(bes[b], n, single == VOX_BF16, &bv));
        CHECK_OK(ctx, bes[b]->ops->vec->create(bes[b], n, vs, &av));
        CHECK_OK(ctx, bes[b]->ops->vec->create(bes[b], n, vs, &dv));
        CHECK_OK(ctx, bes[b]->ops->vec->create(bes[b], n, vs, &xv));
        CHECK_OK(ctx, upload_doubles(bes[b], &bv, in));
        CHECK_OK(ctx, upload_doubles(bes[b], &av, in + n));
        CHECK_OK(ctx, upload_doubles(bes[b], &dv, in + 2 * n));
        CHECK_OK(ctx, upload_doubles(bes[b], &xv, in + 3 * n));
        CHECK_OK(ctx, o->block_smoother_step(bes[b], &bv, &av, &wv, 0.7, 0.3, &dv, &xv));
        CHECK_OK(ctx, download_doubles(bes[b], &dv, xd[b][0]));
        CHECK_OK(ctx, download_doubles(bes[b], &xv, xd[b][1]));
        vox_vec *v[] = {&wv, &bv, &av, &dv, &xv};
        for (int i = 0; i < 5; i++) bes[b]->ops->vec->destroy(bes[b], v[i]);
        o->level_destroy(bes[b], lv);
      }
      const double *got[3][2] = {{w[0], w[1]}, {xd[0][0], xd[1][0]}, {xd[0][1], xd[1][1]}};
      const size_t len[3] = {2 * n, n, n};
      static const char *const names[3] = {"inverse blocks", "block step d", "block step x"};
      for (int t = 0; t < 3; t++) {
        double diff = 0, scale = 0;
        for (size_t i = 0; i < len[t]; i++) {
          diff = fmax(diff, fabs(got[t][0][i] - got[t][1][i]));
          scale = fmax(scale, fabs(got[t][1][i]));
        }
        printf("%s: level %d %s (%s): max |d| / max = %.2e\n", kind, l, names[t],
               single == VOX_BF16 ? "bfloat16" : single ? "float" : "double", diff / scale);
        const double tol = single == VOX_BF16 && t == 0 ? 0x1p-7 : single ? 1e-5 : 1e-12;
        CHECK(scale > 0 && diff <= tol * scale);
      }
      for (int b = 0; b < 2; b++) free(w[b]), free(xd[b][0]), free(xd[b][1]);
    }
    free(in);
    free(w64);
  }
  /* the transfers between levels 0 and 1: a random fine residual (double,
   * as CG's, and float, as the V-cycle's) restricted into a float coarse
   * vector, b - ax restricted (b double, ax float: the V-cycle's level 0),
   * and a random coarse vector prolonged onto a fine one */
  const vox_sparse_level_desc d0 = vox_sparse_level_describe(&h, 0);
  const vox_sparse_level_desc d1 = vox_sparse_level_describe(&h, 1);
  const size_t n0 = 3 * d0.n_nodes, n1 = 3 * d1.n_nodes;
  double *f = malloc(2 * n0 * sizeof *f), *c = malloc(n1 * sizeof *c);
  double *out[2] = {malloc(n0 * sizeof(double)), malloc(n0 * sizeof(double))};
  uint64_t seed = 777;
  for (size_t i = 0; i < 2 * n0; i++) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    f[i] = (double)(seed >> 11) / 9007199254740992.0 - 0.5;
    if (i < n1) c[i] = -f[i];
  }
  static const char *const transfer[4] = {"restriction from double", "restriction from float",
                                          "restriction of b - ax", "prolongation"};
  for (int t = 0; t < 4; t++) {
    vox_backend *bes[2] = {gpu, cpu};
    for (int b = 0; b < 2; b++) {
      const vox_sparse_ops *o = bes[b]->ops->sparse;
      vox_sparse_level *l0, *l1;
      vox_vec fine, coarse, rhs = {0};
      CHECK_OK(ctx, o->level_create(bes[b], &d0, &l0));
      CHECK_OK(ctx, o->level_create(bes[b], &d1, &l1));
      CHECK_OK(ctx, bes[b]->ops->vec->create(bes[b], n0, t > 0, &fine));
      CHECK_OK(ctx, bes[b]->ops->vec->create(bes[b], n1, 1, &coarse));
      CHECK_OK(ctx, upload_doubles(bes[b], &fine, f));
      if (t == 2) {
        CHECK_OK(ctx, bes[b]->ops->vec->create(bes[b], n0, 0, &rhs));
        CHECK_OK(ctx, upload_doubles(bes[b], &rhs, f + n0));
      }
      if (t < 3) {
        CHECK_OK(ctx, o->restrict_residual(bes[b], l0, l1, t == 2 ? &rhs : NULL, &fine, &coarse));
        CHECK_OK(ctx, download_doubles(bes[b], &coarse, out[b]));
      } else {
        CHECK_OK(ctx, upload_doubles(bes[b], &coarse, c));
        CHECK_OK(ctx, o->prolong_add(bes[b], l0, l1, &coarse, &fine));
        CHECK_OK(ctx, download_doubles(bes[b], &fine, out[b]));
      }
      bes[b]->ops->vec->destroy(bes[b], &fine);
      bes[b]->ops->vec->destroy(bes[b], &coarse);
      if (rhs.data) bes[b]->ops->vec->destroy(bes[b], &rhs);
      o->level_destroy(bes[b], l0);
      o->level_destroy(bes[b], l1);
    }
    const size_t n = t < 3 ? n1 : n0;
    double diff = 0, scale = 0;
    for (size_t i = 0; i < n; i++) {
      diff = fmax(diff, fabs(out[0][i] - out[1][i]));
      scale = fmax(scale, fabs(out[1][i]));
    }
    printf("%s: %s: max |d| / max = %.2e\n", kind, transfer[t], diff / scale);
    CHECK(scale > 0 && diff <= 1e-6 * scale);
  }
  free(f);
  free(c);
  free(out[0]);
  free(out[1]);
  vox_sparse_hierarchy_free(&h);
}

/* ---- assembled matrices (the smoothed-aggregation levels) ------------------ */

static double unit(uint64_t *state) {
  *state = *state * 6364136223846793005u + 1442695040888963407u;
  return (double)(*state >> 11) / 9007199254740992.0 * 2 - 1;
}

/* A random BSR matrix of rows x cols blocks of br x bc: `diagonal` one block
 * per row on the diagonal (an inverse-block smoother's W), else up to 6
 * blocks a row at ascending distinct columns (some rows empty). */
static void random_bsr(vox_bsr *a, size_t rows, size_t cols, int br, int bc, int diagonal,
                       uint64_t seed) {
  *a = (vox_bsr){.n_rows = rows, .n_cols = cols, .br = br, .bc = bc};
  a->row_start = calloc(rows + 1, sizeof *a->row_start);
  a->col = malloc(rows * 6 * sizeof *a->col);
  a->val = malloc(rows * 6 * (size_t)(br * bc) * sizeof *a->val);
  size_t k = 0;
  for (size_t i = 0; i < rows; i++) {
    if (diagonal) {
      a->col[k++] = (int32_t)i;
    } else {
      size_t c = (size_t)((unit(&seed) + 1) * 3);
      for (int b = 0; b < 6 && c < cols; b++, c += 1 + (size_t)((unit(&seed) + 1) * 4))
        a->col[k++] = (int32_t)c;
    }
    a->row_start[i + 1] = k;
  }
  for (size_t v = 0; v < k * (size_t)(br * bc); v++) a->val[v] = unit(&seed);
}

/* max |gpu - cpu| / max |cpu| of a vector on both backends */
static double vec_difference(vox_context *ctx, vox_backend *gpu, vox_backend *cpu,
                             const vox_vec *g, const vox_vec *c) {
  double *hg = malloc(g->n * sizeof *hg), *hc = malloc(c->n * sizeof *hc);
  CHECK_OK(ctx, download_doubles(gpu, g, hg));
  CHECK_OK(ctx, download_doubles(cpu, c, hc));
  double diff = 0, scale = 0;
  for (size_t i = 0; i < g->n; i++)
    diff = fmax(diff, fabs(hg[i] - hc[i])), scale = fmax(scale, fabs(hc[i]));
  free(hg), free(hc);
  return scale > 0 ? diff / scale : diff;
}

/* A vector of n random entries on both backends, in double or float. */
static void random_pair(vox_context *ctx, vox_backend *gpu, vox_backend *cpu, size_t n,
                        int single, uint64_t seed, vox_vec *g, vox_vec *c) {
  double *h = malloc(n * sizeof *h);
  for (size_t i = 0; i < n; i++) h[i] = unit(&seed);
  CHECK_OK(ctx, gpu->ops->vec->create(gpu, n, single, g));
  CHECK_OK(ctx, cpu->ops->vec->create(cpu, n, single, c));
  CHECK_OK(ctx, upload_doubles(gpu, g, h));
  CHECK_OK(ctx, upload_doubles(cpu, c, h));
  free(h);
}

/* matrix_apply (y = A x and y += A x) and matrix_smoother_step (beta 0 and
 * not) on both backends for each block shape of the SA hierarchy and one of
 * run-time size, values and vectors in double (1e-12) or float (1e-5). */
static void compare_matrix_ops(vox_context *ctx, vox_backend *gpu, vox_backend *cpu) {
  const vox_sparse_ops *go = gpu->ops->sparse, *co = cpu->ops->sparse;
  static const int shapes[][2] = {{6, 6}, {3, 6}, {6, 3}, {3, 3}, {5, 4}};
  for (int sh = 0; sh < 5; sh++)
    for (int single = 0; single < 2; single++) {
      const int br = shapes[sh][0], bc = shapes[sh][1];
      const double tol = single ? 1e-5 : 1e-12;
      const size_t rows = 300, cols = 200;
      vox_bsr h;
      random_bsr(&h, rows, cols, br, bc, 0, 7 + (uint64_t)sh);
      vox_sparse_matrix *mg, *mc;
      /* float vectors with float values, as the V-cycle's in mixed precision */
      CHECK_OK(ctx, go->matrix_create(gpu, &h, single, &mg));
      CHECK_OK(ctx, co->matrix_create(cpu, &h, single, &mc));
      CHECK(go->matrix_bytes(mg) == co->matrix_bytes(mc));
      vox_vec xg, xc, yg, yc;
      random_pair(ctx, gpu, cpu, cols * (size_t)bc, single, 11, &xg, &xc);
      random_pair(ctx, gpu, cpu, rows * (size_t)br, single, 13, &yg, &yc);
      double worst = 0;
      for (int add = 0; add < 2; add++) {
        CHECK_OK(ctx, go->matrix_apply(gpu, mg, &xg, &yg, add));
        CHECK_OK(ctx, co->matrix_apply(cpu, mc, &xc, &yc, add));
        worst = fmax(worst, vec_difference(ctx, gpu, cpu, &yg, &yc));
      }
      /* a mismatched vector is refused */
      CHECK(go->matrix_apply(gpu, mg, &yg, &xg, 0) == VOX_ERR_INVALID_ARGUMENT);
      printf("matrix %d x %d blocks, %s vectors: products max |gpu - cpu| / max |cpu| = %.2e "
             "(tol %.0e)\n", br, bc, single ? "float" : "double", worst, tol);
      CHECK(worst <= tol);
      go->matrix_destroy(gpu, mg), co->matrix_destroy(cpu, mc);
      vox_bsr_free(&h);
      if (br == bc) { /* the smoother step with W block diagonal */
        random_bsr(&h, rows, rows, br, bc, 1, 17 + (uint64_t)sh);
        CHECK_OK(ctx, go->matrix_create(gpu, &h, single, &mg));
        CHECK_OK(ctx, co->matrix_create(cpu, &h, single, &mc));
        vox_vec bg, bcv, ag, ac, dg, dc, zg, zc;
        const size_t n = rows * (size_t)br;
        random_pair(ctx, gpu, cpu, n, single, 19, &bg, &bcv);
        random_pair(ctx, gpu, cpu, n, single, 23, &ag, &ac);
        random_pair(ctx, gpu, cpu, n, single, 29, &dg, &dc);
        random_pair(ctx, gpu, cpu, n, single, 31, &zg, &zc);
        double sworst = 0;
        for (int step = 0; step < 2; step++) {
          const double beta = step ? 0.3 : 0;
          CHECK_OK(ctx, go->matrix_smoother_step(gpu, mg, &bg, step ? &ag : NULL, 0.7, beta, &dg,
                                                 &zg));
          CHECK_OK(ctx, co->matrix_smoother_step(cpu, mc, &bcv, step ? &ac : NULL, 0.7, beta,
                                                 &dc, &zc));
          sworst = fmax(sworst, vec_difference(ctx, gpu, cpu, &dg, &dc));
          sworst = fmax(sworst, vec_difference(ctx, gpu, cpu, &zg, &zc));
        }
        printf("matrix %d x %d blocks, %s vectors: smoother steps max |gpu - cpu| / max |cpu| "
               "= %.2e\n", br, bc, single ? "float" : "double", sworst);
        CHECK(sworst <= tol);
        gpu->ops->vec->destroy(gpu, &bg), cpu->ops->vec->destroy(cpu, &bcv);
        gpu->ops->vec->destroy(gpu, &ag), cpu->ops->vec->destroy(cpu, &ac);
        gpu->ops->vec->destroy(gpu, &dg), cpu->ops->vec->destroy(cpu, &dc);
        gpu->ops->vec->destroy(gpu, &zg), cpu->ops->vec->destroy(cpu, &zc);
        go->matrix_destroy(gpu, mg), co->matrix_destroy(cpu, mc);
        vox_bsr_free(&h);
      }
      gpu->ops->vec->destroy(gpu, &xg), cpu->ops->vec->destroy(cpu, &xc);
      gpu->ops->vec->destroy(gpu, &yg), cpu->ops->vec->destroy(cpu, &yc);
    }
}

/* The recorded V-cycle (a CUDA graph, replayed from the second CG
 * iteration on) against the V-cycle launched op by op and, in double,
 * against the CPU: three CG iterations from zero, so that a replay that
 * misses an op (a launch outside the recording runs once, at recording
 * time) shows in the iterate; a converged solve would show it only in its
 * CG count. */
static void compare_recorded(vox_context *ctx, vox_backend *gpu, vox_backend *cpu,
                             const vox_model *m) {
  const size_t nd = 3 * (size_t)vox_grid_nodes(&m->grid);
  double *u[3];
  for (int k = 0; k < 3; k++) u[k] = calloc(nd, sizeof *u[k]);
  for (int mixed = 0; mixed < 2; mixed++) {
    vox_solver_options opt;
    vox_solver_options_default(&opt);
    opt.storage = VOX_STORAGE_SPARSE;
    opt.precision = mixed ? VOX_PRECISION_MIXED : VOX_PRECISION_DOUBLE;
    opt.max_iterations = 3;
    opt.rtol = 1e-14;
    vox_solve_result r[3];
    for (int k = 0; k < 3; k++) {
      memset(u[k], 0, nd * sizeof *u[k]);
      opt.sparse.record = k == 0; /* 0: recorded, 1: op by op, 2: the CPU */
      CHECK_OK(ctx, vox_sparse_solve_elasticity(ctx, k < 2 ? gpu : cpu, m, &opt, u[k], &r[k],
                                                NULL));
      CHECK(r[k].iterations == 3);
    }
    double scale = 0, d_ops = 0, d_cpu = 0;
    for (size_t i = 0; i < nd; i++) {
      scale = fmax(scale, fabs(u[1][i]));
      d_ops = fmax(d_ops, fabs(u[0][i] - u[1][i]));
      d_cpu = fmax(d_cpu, fabs(u[0][i] - u[2][i]));
    }
    printf("recorded V-cycle, %s, 3 CG iterations: max |du| / max |u| = %.2e against op by op, "
           "%.2e against the CPU\n",
           mixed ? "mixed" : "double", d_ops / scale, d_cpu / scale);
    /* float smoothing with atomic sums rounds apart from run to run. The
     * CPU's element products take Ke's reflection modes, the GPU's the
     * dense sums: the products agree to rounding, and this bone's V-cycle
     * (its coarse solve) amplifies that to 3e-12 in one CG iteration and
     * 1.5e-10 in three (the CPU's modes against its own dense product,
     * measured); an op missing from the replay leaves far more. */
    CHECK(scale > 0 && d_ops <= (mixed ? 1e-4 : 1e-11) * scale);
    if (!mixed) CHECK(d_cpu <= 1e-9 * scale);
  }
  for (int k = 0; k < 3; k++) free(u[k]);
}

int main(void) {
  setvbuf(stdout, NULL, _IONBF, 0);
  vox_context *ctx;
  vox_context_create(&ctx);
  vox_solver_options defaults;
  vox_solver_options_default(&defaults);
  sparse_options = defaults.sparse;
  vox_device d = VOX_DEVICE_CUDA;
  const char *env = getenv("VOXFE_GPU_TEST_DEVICE");
  if (env && *env) vox_device_parse(env, &d);
  vox_backend *gpu, *cpu;
  /* the device started in a thread of its own first, as voxfe-analyze does;
   * the CPU needs none */
  CHECK(vox_device_warm_up_start(VOX_DEVICE_CPU, -1) == NULL);
  vox_device_warm_up_finish(vox_device_warm_up_start(d, -1));
  if (vox_backend_create(ctx, d, &gpu) != VOX_OK) {
    printf("SKIP: %s\n", vox_context_message(ctx));
    vox_context_destroy(ctx);
    return SKIP;
  }
  CHECK_OK(ctx, vox_backend_create(ctx, VOX_DEVICE_CPU, &cpu));
  compare_matrix_ops(ctx, gpu, cpu);
  { /* the smoothed-aggregation coarse levels */
    vox_model m;
    make_bone_model(ctx, &m, 27, 3, 1);
    double applied;
    CHECK_OK(ctx, vox_add_compression_test(ctx, &m, VOX_TEST_UNIAXIAL, 2, -0.01, &applied));
    sparse_options.coarse = VOX_SPARSE_COARSE_SA;
    compare(ctx, gpu, cpu, &m, "smoothed aggregation: compression 27^3");
    sparse_options.coarse = VOX_SPARSE_COARSE_SPLIT;
    vox_model_free(&m);
  }
  { /* the hinged bone (bone_model.h), semi-definite: each coarse space
     * converges on the device to the CPU's displacements on the column */
    vox_model m;
    make_hinged_model(ctx, &m);
    const size_t nd = 3 * (size_t)vox_grid_nodes(&m.grid);
    double *ug = calloc(nd, sizeof *ug), *uc = calloc(nd, sizeof *uc);
    vox_solver_options opt;
    vox_solver_options_default(&opt);
    opt.rtol = 1e-10;
    opt.storage = VOX_STORAGE_SPARSE;
    static const char *const coarse[] = {"split", "box", "sa"};
    for (int k = 0; k < 3; k++) {
      opt.sparse.coarse = (vox_sparse_coarse)k; /* split, box, sa */
      vox_solve_result rg, rc;
      memset(ug, 0, nd * sizeof *ug), memset(uc, 0, nd * sizeof *uc);
      CHECK_OK(ctx, vox_sparse_solve_elasticity(ctx, gpu, &m, &opt, ug, &rg, NULL));
      CHECK_OK(ctx, vox_sparse_solve_elasticity(ctx, cpu, &m, &opt, uc, &rc, NULL));
      const double diff = hinged_column_difference(ug, uc);
      printf("hinged bone, %s: CG %d (gpu) %d (cpu), the column's max |du| / max |u| = %.2e\n",
             coarse[k], rg.iterations, rc.iterations, diff);
      CHECK(rg.reason == VOX_CONVERGED_RTOL && rc.reason == VOX_CONVERGED_RTOL);
      CHECK(diff <= 1e-7);
    }
    free(ug), free(uc);
    vox_model_free(&m);
  }
  {
    char what[64];
    vox_model m;
    make_bone_model(ctx, &m, 27, 3, 1);
    double applied;
    CHECK_OK(ctx, vox_add_compression_test(ctx, &m, VOX_TEST_UNIAXIAL, 2, -0.01, &applied));
    compare_products(ctx, gpu, cpu, &m, "product", 0);
    compare_products(ctx, gpu, cpu, &m, "product", 1); /* level 1 with copies (x1 corners) */
    compare(ctx, gpu, cpu, &m, "compression 27^3");
    compare_recorded(ctx, gpu, cpu, &m);
    for (int k = 0; k < 2; k++) {
      sparse_options.block_levels = k == 0 ? VOX_SPARSE_ALL_LEVELS : 0;
      snprintf(what, sizeof what, "compression 27^3, %s smoother", k == 0 ? "block" : "diagonal");
      compare(ctx, gpu, cpu, &m, what);
    }
    sparse_options.block_levels = VOX_SPARSE_ALL_LEVELS;
    clamp_bottom_load_top(ctx, &m); /* forces, two load cases, bottom clamped */
    compare(ctx, gpu, cpu, &m, "forces 27^3");
    vox_model_free(&m);
  }
  vox_backend_destroy(gpu);
  vox_backend_destroy(cpu);
  vox_context_destroy(ctx);
  CHECK_DONE();
}
