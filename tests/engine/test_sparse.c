/* SPDX-License-Identifier: BSD-3-Clause */
/* The sparse (bone-only) solver against the full-box one: on small porous
 * bones (bench/perlin_bone.h) under a compression test and under forces,
 * the same displacements and the same reaction force (computed from each
 * solution by the full-box operator) to 1e-8, with the diagonal and with
 * the 3 x 3 block smoother (vox_sparse_pc_options.block_levels); the inverse blocks
 * against the blocks of the level's own operator; CG counts that stay
 * moderate as the same bone is sampled finer; the prescribed values and
 * loads as the system's entries; a plan's hierarchy built ahead;
 * per-element moduli; and the storage option's rules. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "../bone_model.h"
#include "fem.h"
#include "prefix_sum.h"
#include "sparse_entries.h"
#include "sparse_hierarchy.h"
#include "voxfe/element.h"
#include "sparse_solve.h"
#include "voxfe/voxfe.h"
#include "../vector_doubles.h"

/* The sparse preconditioner's options of the solves that follow. */
static vox_sparse_pc_options sparse_options;

/* "diagonal", "block:N" (the first N levels) or "block" (every level). */
static int block_levels(const char *smoother) {
  return strcmp(smoother, "diagonal") == 0 ? 0
         : strncmp(smoother, "block:", 6) == 0 ? atoi(smoother + 6)
                                                : VOX_SPARSE_ALL_LEVELS;
}

static double max_abs(const double *x, size_t n) {
  double v = 0;
  for (size_t i = 0; i < n; i++) v = fmax(v, fabs(x[i]));
  return v;
}

/* K u by the full-box operator on the host (flags: VOX_APPLY_FULL for the
 * whole field's rows, 0 for the eliminated operator); NULL where it fails. */
static double *full_product(vox_context *ctx, vox_backend *be, const vox_model *m,
                            const double *u, unsigned flags) {
  vox_fem *fem;
  CHECK_OK(ctx, vox_fem_create(ctx, be, m, &fem));
  if (!fem) return NULL;
  vox_vec uv, ku;
  const size_t nd = fem->n_dofs;
  double *k = malloc(nd * sizeof *k);
  CHECK_OK(ctx, be->ops->vec->create(be, nd, VOX_DOUBLE, &uv));
  CHECK_OK(ctx, be->ops->vec->create(be, nd, VOX_DOUBLE, &ku));
  CHECK_OK(ctx, be->ops->vec->upload(be, &uv, u));
  CHECK_OK(ctx, be->ops->op->apply(be, fem->op, &uv, &ku, flags));
  CHECK_OK(ctx, be->ops->vec->download(be, &ku, k));
  be->ops->vec->destroy(be, &uv);
  be->ops->vec->destroy(be, &ku);
  vox_fem_destroy(fem);
  return k;
}

/* The sum of (K u)_z over the constrained dofs of the top plate (z = nz),
 * by the full-box operator: the reaction force of a compression test. */
static double top_reaction(vox_context *ctx, vox_backend *be, const vox_model *m, const double *u) {
  double *k = full_product(ctx, be, m, u, VOX_APPLY_FULL), total = 0;
  if (!k) return NAN;
  const vox_grid *g = &m->grid;
  for (size_t i = 0; i < m->n_constraints; i++) {
    const vox_constraint *c = &m->constraints[i];
    if (c->component == 2 && c->node / ((g->nx + 1) * (g->ny + 1)) == g->nz)
      total += k[3 * c->node + 2];
  }
  free(k);
  return total;
}

/* Solves `m` with both storages at a tight tolerance and compares. */
static void compare(vox_context *ctx, vox_backend *be, vox_model *m, const char *what) {
  const size_t nd = 3 * (size_t)vox_grid_nodes(&m->grid);
  const int cases = m->n_load_cases > 0 ? m->n_load_cases : 1;
  double *full = calloc(nd * (size_t)cases, sizeof *full);
  double *sparse = calloc(nd * (size_t)cases, sizeof *sparse);
  vox_solver_options opt;
  vox_solver_options_default(&opt);
  opt.rtol = 1e-12;
  vox_solve_result rf[4], rs[4];
  opt.storage = VOX_STORAGE_FULL_BOX;
  CHECK_OK(ctx, vox_solve_elasticity(ctx, be, m, 0, 1, 0, &opt, full, rf));
  opt.storage = VOX_STORAGE_SPARSE;
  opt.sparse = sparse_options;
  vox_sparse_stats stats;
  CHECK_OK(ctx, vox_sparse_solve_elasticity(ctx, be, m, &opt, sparse, rs, &stats));
  for (int c = 0; c < cases; c++) {
    CHECK(rf[c].reason == VOX_CONVERGED_RTOL);
    CHECK(rs[c].reason == VOX_CONVERGED_RTOL);
    /* the same right-hand side norm: the same system */
    CHECK_CLOSE(rs[c].rhs_norm / rf[c].rhs_norm, 1, 1e-12);
    double diff = 0;
    for (size_t i = 0; i < nd; i++) diff = fmax(diff, fabs(full[c * nd + i] - sparse[c * nd + i]));
    const double scale = max_abs(full + c * nd, nd);
    printf("%s, case %d: %zu dofs (box %zu), %d levels, CG %d (full box %d), max |du| / max |u| "
           "= %.2e\n",
           what, c, stats.n_dofs, nd, stats.n_levels, rs[c].iterations, rf[c].iterations,
           diff / scale);
    CHECK(scale > 0);
    /* both to a relative residual of 1e-12: on these bones their
     * difference went from 2.5e-10 to 1.2e-8 of max |u| with the sums'
     * rounding on 1 to 8 threads */
    CHECK(diff <= 5e-8 * scale);
  }
  if (m->n_loads == 0) {
    const double a = top_reaction(ctx, be, m, full), b = top_reaction(ctx, be, m, sparse);
    printf("%s: reaction %.12g (full box) %.12g (sparse)\n", what, a, b);
    CHECK(fabs(a) > 0);
    CHECK(fabs(a - b) <= 1e-8 * fabs(a));
  }
  free(full);
  free(sparse);
}

static void test_compression(vox_context *ctx, vox_backend *be, int64_t n, const char *smoother) {
  vox_model m;
  make_bone_model(ctx, &m, n, 7, 0);
  CHECK_OK(ctx, vox_check_plate_contact(ctx, &m, 2, 6));
  double applied;
  CHECK_OK(ctx, vox_add_compression_test(ctx, &m, VOX_TEST_UNIAXIAL, 2, -0.01, &applied));
  char what[64];
  snprintf(what, sizeof what, "compression %lld^3, %s smoother", (long long)n, smoother);
  sparse_options.block_levels = block_levels(smoother);
  compare(ctx, be, &m, what);
  sparse_options.block_levels = VOX_SPARSE_ALL_LEVELS;
  vox_model_free(&m);
}

/* Each fine node's parent is the largest word its elements offer
 * (vox_sparse_parent_offer), which puts it in the coarse element of the
 * last box cell, in box order, among those of its fine elements: the same
 * choice whatever the threads' timing, as the ranks of an MPI solve need.
 * Returns the nodes whose parent is elsewhere. */
static size_t parents_not_largest(const vox_sparse_hierarchy *h) {
  size_t bad = 0;
  for (int l = 0; l + 1 < h->n_levels; l++) {
    const vox_sparse_host_level *f = &h->level[l], *c = &h->level[l + 1];
    const int64_t fnx = f->grid.nx, fny = f->grid.ny, cnx = c->grid.nx, cny = c->grid.ny;
    int64_t *last = malloc(f->n_nodes * sizeof *last);
    for (size_t n = 0; n < f->n_nodes; n++) last[n] = -1;
    for (size_t e = 0; e < f->n_elements; e++) {
      const int64_t b = f->element_box[e];
      const int64_t cell = ((b / (fnx * fny)) / 2 * cny + b / fnx % fny / 2) * cnx + b % fnx / 2;
      int32_t node[8];
      vox_sparse_corners(f->element_nodes, f->element_nodes_x1, e, node);
      for (int a = 0; a < 8; a++)
        if (cell > last[node[a]]) last[node[a]] = cell;
    }
    for (size_t n = 0; n < f->n_nodes; n++)
      bad += c->element_box[f->parent[n] >> VOX_SPARSE_POS_BITS] != last[n];
    free(last);
  }
  return bad;
}

/* Level 1's copies of each coarse box node, straight from the labels, one
 * node at a time: its cells that hold bone are joined where both have a
 * voxel at one of the 27 fine nodes it reaches (its own and the fine nodes
 * around it); the copies are the groups. Whether `c` (level 1 of `m`'s
 * split hierarchy) has that many copies of every box node, in box order. */
static size_t copies_not_from_labels(const vox_model *m, const vox_sparse_host_level *c) {
  const int64_t nx = m->grid.nx, ny = m->grid.ny, nz = m->grid.nz;
  const int64_t cnx = c->grid.nx, cny = c->grid.ny, cnz = c->grid.nz;
  const int64_t cpx = cnx + 1, cpy = cny + 1, cpz = cnz + 1;
  size_t bad = 0, q = 0;
  for (int64_t K = 0; K < cpz; K++)
    for (int64_t J = 0; J < cpy; J++)
      for (int64_t I = 0; I < cpx; I++) {
        /* the (up to) eight cells around the node; at[a][n]: cell a has a
         * bone voxel at the reached fine node n (3 x 3 x 3 around it) */
        int group[8], has[8] = {0}, at[8][27] = {{0}};
        for (int a = 0; a < 8; a++) {
          group[a] = a;
          const int64_t ci = I - 1 + (a & 1), cj = J - 1 + (a >> 1 & 1), ck = K - 1 + (a >> 2);
          for (int v = 0; v < 8; v++) {
            const int64_t i = 2 * ci + (v & 1), j = 2 * cj + (v >> 1 & 1), k = 2 * ck + (v >> 2);
            if (i < 0 || j < 0 || k < 0 || i >= nx || j >= ny || k >= nz) continue;
            if (!m->label[(k * ny + j) * nx + i]) continue;
            has[a] = 1;
            for (int corner = 0; corner < 8; corner++) {
              const int64_t di = i + (corner & 1) - 2 * I, dj = j + (corner >> 1 & 1) - 2 * J,
                            dk = k + (corner >> 2) - 2 * K;
              if (llabs(di) <= 1 && llabs(dj) <= 1 && llabs(dk) <= 1)
                at[a][(dk + 1) * 9 + (dj + 1) * 3 + di + 1] = 1;
            }
          }
        }
        for (int n = 0; n < 27; n++)
          for (int a = 0; a < 8; a++)
            for (int b = 0; b < a; b++)
              if (at[a][n] && at[b][n]) { /* join a's group and b's */
                const int from = group[a], to = group[b];
                for (int g = 0; g < 8; g++)
                  if (group[g] == from) group[g] = to;
              }
        int copies = 0;
        for (int a = 0; a < 8; a++) {
          int first = has[a];
          for (int b = 0; b < a && first; b++) first = !(has[b] && group[b] == group[a]);
          copies += first;
        }
        const int64_t box = (K * cpy + J) * cpx + I;
        for (int i = 0; i < copies; i++, q++) bad += q >= c->n_nodes || c->node_box[q] != box;
      }
  return bad + (q != c->n_nodes);
}

/* The levels that follow the bone's connectivity (sparse_split.h) on a
 * porous bone with a compression test, level by level against the fine
 * level: the interpolation is one function on every fine element (all its
 * nodes that a coarse box node reaches, each through its own parent piece,
 * name the same copy of that node, at that node's box position, and the
 * parent words put the node where it is); copies and pieces in box order;
 * the coarse moduli sum to the fine ones over 8; the fixed dofs of a fine
 * node fix the copies it interpolates from; level 1's copies those of
 * each box node counted from the labels alone; and the bone's separate
 * struts make copies, more nodes on level 1 than the plain coarse image. */
static void test_split_levels(vox_context *ctx) {
  vox_model m;
  make_bone_model(ctx, &m, 40, 7, 0);
  double applied;
  CHECK_OK(ctx, vox_add_compression_test(ctx, &m, VOX_TEST_UNIAXIAL, 2, -0.01, &applied));
  vox_sparse_hierarchy h, box;
  CHECK_OK(ctx, vox_sparse_hierarchy_build(ctx, &m, 0.3, 0, 1, &h));
  CHECK_OK(ctx, vox_sparse_hierarchy_build(ctx, &m, 0.3, 0, 0, &box));
  CHECK(h.n_levels == box.n_levels && h.n_levels >= 4);
  printf("split levels: nodes");
  for (int l = 0; l < h.n_levels; l++)
    printf(" %zu (plain %zu)", h.level[l].n_nodes, box.level[l].n_nodes);
  printf("\n");
  CHECK(h.level[1].n_nodes > box.level[1].n_nodes);
  CHECK(h.level[1].element_nodes_x1 && !h.level[0].element_nodes_x1);
  const size_t split_elsewhere = parents_not_largest(&h), box_elsewhere = parents_not_largest(&box);
  printf("split levels: parents not the largest offered: %zu (plain levels %zu)\n",
         split_elsewhere, box_elsewhere);
  CHECK(split_elsewhere == 0 && box_elsewhere == 0);
  const size_t not_from_labels = copies_not_from_labels(&m, &h.level[1]);
  printf("split levels: level 1's copies against the labels: %zu wrong\n", not_from_labels);
  CHECK(not_from_labels == 0);
  size_t checked = 0, bad = 0;
  for (int l = 0; l + 1 < h.n_levels; l++) {
    const vox_sparse_host_level *f = &h.level[l], *c = &h.level[l + 1];
    const int64_t fnx = f->grid.nx, fny = f->grid.ny, fpx = fnx + 1, fpy = fny + 1;
    const int64_t cnx = c->grid.nx, cny = c->grid.ny, cpx = cnx + 1, cpy = cny + 1;
    for (size_t q = 1; q < c->n_nodes; q++) bad += c->node_box[q] < c->node_box[q - 1];
    for (size_t q = 1; q < c->n_elements; q++) bad += c->element_box[q] < c->element_box[q - 1];
    double fine_sum = 0, coarse_sum = 0;
    for (size_t e = 0; e < f->n_elements; e++)
      fine_sum += f->material ? h.table[f->material[e]] : f->modulus[e];
    for (size_t e = 0; e < c->n_elements; e++) coarse_sum += c->modulus[e];
    CHECK_CLOSE(coarse_sum, fine_sum / 8, 1e-5);
    for (size_t e = 0; e < f->n_elements; e++) {
      const int64_t b = f->element_box[e];
      const int64_t cell[3] = {b % fnx / 2, b / fnx % fny / 2, b / (fnx * fny) / 2};
      int32_t node[8];
      vox_sparse_corners(f->element_nodes, f->element_nodes_x1, e, node);
      for (int corner = 0; corner < 8; corner++) {
        int64_t N[3];
        for (int a = 0; a < 3; a++) N[a] = cell[a] + vox_hex8_corner[corner][a];
        int32_t copy = -1;
        for (int a = 0; a < 8; a++) {
          const int32_t mf = node[a];
          const int64_t fb = f->node_box[mf];
          const int64_t fm[3] = {fb % fpx, fb / fpx % fpy, fb / (fpx * fpy)};
          int reach = 1;
          for (int x = 0; x < 3; x++) reach &= llabs(fm[x] - 2 * N[x]) <= 1;
          if (!reach) continue;
          const uint64_t word = f->parent[mf];
          const size_t p = word >> VOX_SPARSE_POS_BITS;
          const int pos = (int)(word & ((1u << VOX_SPARSE_POS_BITS) - 1));
          const int64_t pb = c->element_box[p];
          const int64_t pc[3] = {pb % cnx, pb / cnx % cny, pb / (cnx * cny)};
          const int pp[3] = {pos % 3, pos / 3 % 3, pos / 9};
          int at[3], inside = 1;
          for (int x = 0; x < 3; x++) {
            bad += fm[x] != 2 * pc[x] + pp[x];
            at[x] = (int)(N[x] - pc[x]);
            inside &= at[x] == 0 || at[x] == 1;
          }
          CHECK(inside);
          if (!inside) continue;
          int32_t cn[8];
          vox_sparse_corners(c->element_nodes, c->element_nodes_x1, p, cn);
          int k = 0;
          while (vox_hex8_corner[k][0] != at[0] || vox_hex8_corner[k][1] != at[1] ||
                 vox_hex8_corner[k][2] != at[2])
            k++;
          bad += c->node_box[cn[k]] != (N[2] * cpy + N[1]) * cpx + N[0];
          if (copy >= 0) bad += cn[k] != copy;
          copy = cn[k];
          /* a fixed fine node on the coarse node fixes that copy likewise */
          if (fm[0] == 2 * N[0] && fm[1] == 2 * N[1] && fm[2] == 2 * N[2])
            bad += (c->node_fixed[copy] & f->node_fixed[mf]) != f->node_fixed[mf];
          checked++;
        }
      }
    }
  }
  printf("split levels: %zu (element, coarse node, fine node) triples checked, %zu wrong\n",
         checked, bad);
  CHECK(checked > 0 && bad == 0);
  vox_sparse_hierarchy_free(&h);
  vox_sparse_hierarchy_free(&box);
  vox_model_free(&m);
}

/* The inverse 3 x 3 blocks of levels 0 and 1 of a bone under a compression
 * test (fixed dofs), in double and float, against the blocks of the level's
 * own product: K applied to the sum of the unit vectors of component j at
 * the nodes of one parity class (x, y, z mod 2 of the node's box position:
 * no two of them share an element) gives column j of each of their blocks.
 * W B = I to 1e-12 in double and 1e-5 in float, and W symmetric. */

static void test_block_inverse(vox_context *ctx, vox_backend *be, int split) {
  vox_model m;
  make_bone_model(ctx, &m, 20, 7, 0);
  double applied;
  CHECK_OK(ctx, vox_add_compression_test(ctx, &m, VOX_TEST_UNIAXIAL, 2, -0.01, &applied));
  vox_sparse_hierarchy h;
  CHECK_OK(ctx, vox_sparse_hierarchy_build(ctx, &m, 0.3, 0, split, &h));
  const vox_sparse_ops *o = be->ops->sparse;
  for (int l = 0; l < 2; l++) {
    const vox_sparse_host_level *hl = &h.level[l];
    const vox_sparse_level_desc d = vox_sparse_level_describe(&h, l);
    const size_t nn = d.n_nodes, n = 3 * nn;
    const int64_t px = hl->grid.nx + 1, py = hl->grid.ny + 1;
    vox_sparse_level *lv;
    CHECK_OK(ctx, o->level_create(be, &d, &lv));
    double *block = calloc(9 * nn, sizeof *block), *x = malloc(n * sizeof *x),
           *y = malloc(n * sizeof *y), *w = malloc(6 * nn * sizeof *w);
    int *parity = malloc(nn * sizeof *parity);
    size_t n_fixed = 0;
    for (size_t a = 0; a < nn; a++) {
      const int64_t b = hl->node_box[a];
      parity[a] = (int)(b % px % 2 + 2 * (b / px % py % 2) + 4 * (b / (px * py) % 2));
      n_fixed += hl->node_fixed[a] != 0;
    }
    CHECK(n_fixed > 0);
    vox_vec xv, yv, wv;
    CHECK_OK(ctx, be->ops->vec->create(be, n, VOX_DOUBLE, &xv));
    CHECK_OK(ctx, be->ops->vec->create(be, n, VOX_DOUBLE, &yv));
    for (int p = 0; p < 8; p++)
      for (int j = 0; j < 3; j++) {
        for (size_t a = 0; a < nn; a++)
          for (int c = 0; c < 3; c++) x[3 * a + c] = parity[a] == p && c == j;
        CHECK_OK(ctx, upload_doubles(be, &xv, x));
        CHECK_OK(ctx, o->apply(be, lv, &xv, &yv, 0));
        CHECK_OK(ctx, download_doubles(be, &yv, y));
        for (size_t a = 0; a < nn; a++)
          if (parity[a] == p)
            for (int i = 0; i < 3; i++) block[9 * a + 3 * i + j] = y[3 * a + i];
      }
    /* double, float, and bfloat16 (summed in a float scratch) */
    for (vox_scalar single = VOX_DOUBLE; single <= VOX_BF16; single++) {
      vox_vec scratch = {0};
      if (single == VOX_BF16) CHECK_OK(ctx, be->ops->vec->create(be, 6 * nn, VOX_FLOAT, &scratch));
      CHECK_OK(ctx, be->ops->vec->create(be, 6 * nn, single, &wv));
      CHECK_OK(ctx, o->inv_block_diagonal(be, lv, &wv, scratch.data ? &scratch : NULL));
      CHECK_OK(ctx, download_doubles(be, &wv, w));
      be->ops->vec->destroy(be, &wv);
      if (scratch.data) be->ops->vec->destroy(be, &scratch);
      double err = 0;
      for (size_t a = 0; a < nn; a++)
        for (int i = 0; i < 3; i++)
          for (int j = 0; j < 3; j++) {
            double s = 0, bmax = 0;
            for (int k = 0; k < 3; k++) {
              s += w[6 * a + vox_block_entry(i, k)] * block[9 * a + 3 * k + j];
              bmax = fmax(bmax, fabs(block[9 * a + 3 * k + j]));
            }
            /* W B - I relative to B's column and W's row scale, a fixed
             * component's row of W zero (the smoother leaves it) */
            const int free_row = !(hl->node_fixed[a] >> i & 1);
            double wmax = 0;
            for (int k = 0; k < 3; k++) wmax = fmax(wmax, fabs(w[6 * a + vox_block_entry(i, k)]));
            err = fmax(err, fabs(s - (i == j && free_row)) / fmax(1, wmax * bmax));
          }
      printf("inverse blocks, %s level %d (%zu nodes, %zu with fixed dofs), %s: max |W B - I| "
             "= %.2e\n",
             split ? "split" : "plain", l, nn, n_fixed,
             single == VOX_BF16 ? "bfloat16" : single ? "float" : "double", err);
      /* bfloat16 rounds each entry by up to 2^-9 of it */
      CHECK(err <= (single == VOX_BF16 ? 1e-2 : single ? 1e-5 : 1e-12));
    }
    be->ops->vec->destroy(be, &xv);
    be->ops->vec->destroy(be, &yv);
    o->level_destroy(be, lv);
    free(block), free(x), free(y), free(w), free(parity);
  }
  vox_sparse_hierarchy_free(&h);
  vox_model_free(&m);
}

/* A level's product K x against the element sum done here, straight from
 * Ke (the descriptor's): on bricks of three edge lengths the backend takes
 * Ke's reflection modes (eight 3 x 3 blocks), and with a Ke that lacks the
 * symmetry the dense product; both to rounding. */
static void test_product_modes(vox_context *ctx, vox_backend *be) {
  vox_model m;
  make_bone_model(ctx, &m, 20, 11, 0);
  m.grid.voxel_size[0] = 1.0, m.grid.voxel_size[1] = 1.3, m.grid.voxel_size[2] = 0.8;
  vox_sparse_hierarchy h;
  CHECK_OK(ctx, vox_sparse_hierarchy_build(ctx, &m, 0.3, 0, 0, &h));
  const vox_sparse_ops *o = be->ops->sparse;
  for (int l = 0; l < 2; l++)
    for (int skewed = 0; skewed < 2; skewed++) {
      vox_sparse_level_desc d = vox_sparse_level_describe(&h, l);
      double ke[24 * 24];
      memcpy(ke, d.ke, sizeof ke);
      if (skewed) /* a coupling between two parities, kept symmetric */
        ke[1 * 24 + 7] += 0.1 * ke[0], ke[7 * 24 + 1] += 0.1 * ke[0];
      d.ke = ke;
      const size_t nn = d.n_nodes, n = 3 * nn;
      double *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y), *want = calloc(n, sizeof *want);
      for (size_t i = 0; i < n; i++) x[i] = sin(0.37 * (double)i) + 0.2 * cos(1.7 * (double)i);
      for (size_t e = 0; e < d.n_elements; e++) {
        int32_t node[8];
        vox_sparse_corners(d.element_nodes, d.element_nodes_x1, e, node);
        const double mod = d.material ? d.table[d.material[e]] : (double)d.modulus[e];
        for (int r = 0; r < 24; r++) {
          double sum = 0;
          for (int c = 0; c < 24; c++) sum += ke[r * 24 + c] * x[3 * (size_t)node[c / 3] + c % 3];
          want[3 * (size_t)node[r / 3] + r % 3] += mod * sum;
        }
      }
      vox_sparse_level *lv;
      vox_vec xv, yv;
      CHECK_OK(ctx, o->level_create(be, &d, &lv));
      CHECK_OK(ctx, be->ops->vec->create(be, n, VOX_DOUBLE, &xv));
      CHECK_OK(ctx, be->ops->vec->create(be, n, VOX_DOUBLE, &yv));
      CHECK_OK(ctx, upload_doubles(be, &xv, x));
      CHECK_OK(ctx, o->apply(be, lv, &xv, &yv, VOX_APPLY_FULL));
      CHECK_OK(ctx, download_doubles(be, &yv, y));
      double diff = 0;
      for (size_t i = 0; i < n; i++) diff = fmax(diff, fabs(y[i] - want[i]));
      const double scale = max_abs(want, n);
      printf("product of level %d (%zu elements), %s Ke: max |K x - sum| / max |sum| = %.2e\n", l,
             d.n_elements, skewed ? "a skewed" : "the brick's", diff / scale);
      CHECK(scale > 0 && diff <= 1e-13 * scale);
      be->ops->vec->destroy(be, &xv);
      be->ops->vec->destroy(be, &yv);
      o->level_destroy(be, lv);
      free(x), free(y), free(want);
    }
  vox_sparse_hierarchy_free(&h);
  vox_model_free(&m);
}

/* Forces in two load cases on the top of a bone clamped at the bottom:
 * loads without prescribed values, and a second case. */
static void test_forces(vox_context *ctx, vox_backend *be, const char *smoother) {
  vox_model m;
  const int64_t n = 20;
  make_bone_model(ctx, &m, n, 7, 0);
  clamp_bottom_load_top(ctx, &m);
  char what[64];
  snprintf(what, sizeof what, "forces 20^3, %s smoother", smoother);
  sparse_options.block_levels = block_levels(smoother);
  compare(ctx, be, &m, what);
  sparse_options.block_levels = VOX_SPARSE_ALL_LEVELS;
  vox_model_free(&m);
}

/* The prescribed values and loads as system entries (sparse_entries.h):
 * out of order, repeated (a later constraint wins, loads add up), on nodes
 * outside the bone (left out), in another load case (left out); then a
 * solve started from its own solution (the guess uploaded) stops at once
 * with the same displacements. */
static void test_entries(vox_context *ctx, vox_backend *be) {
  vox_model m;
  make_bone_model(ctx, &m, 12, 5, 0);
  double applied;
  CHECK_OK(ctx, vox_add_compression_test(ctx, &m, VOX_TEST_UNIAXIAL, 2, -0.01, &applied));
  vox_sparse_hierarchy h;
  CHECK_OK(ctx, vox_sparse_hierarchy_build(ctx, &m, 0.3, VOX_SPARSE_FINE_ONLY, 0, &h));
  int64_t inside[2] = {-1, -1}, outside = -1;
  for (int64_t b = 0; b < vox_grid_nodes(&m.grid); b++) {
    if (h.box_to_node[b] < 0 && outside < 0) outside = b;
    if (h.box_to_node[b] >= 0 && inside[0] < 0) inside[0] = b;
    if (h.box_to_node[b] >= 0) inside[1] = b;
  }
  CHECK(outside >= 0 && inside[0] >= 0 && inside[1] > inside[0]);
  const size_t d0 = 3 * (size_t)h.box_to_node[inside[0]], d1 = 3 * (size_t)h.box_to_node[inside[1]];
  vox_model t = {0};
#define C(n, c, v) {.node = (n), .component = (c), .value = (v)}
#define L(n, c, lc, v) {.node = (n), .component = (c), .load_case = (lc), .value = (v)}
  vox_constraint c[] = {C(inside[1], 2, 5), C(inside[0], 1, 1), C(outside, 0, 7),
                        C(inside[1], 2, 6), C(inside[0], 0, 2)};
  vox_load l[] = {L(inside[1], 0, 0, 1), L(inside[0], 2, 0, 2), L(inside[1], 0, 1, 4),
                  L(inside[1], 0, 0, 0.5), L(outside, 1, 0, 3)};
#undef C
#undef L
  t.constraints = c, t.n_constraints = 5, t.loads = l, t.n_loads = 5;
  vox_sparse_entries e;
  CHECK_OK(ctx, vox_sparse_prescribed_entries(ctx, &t, &h, &e));
  CHECK(e.n == 3 && e.index[0] == d0 && e.index[1] == d0 + 1 && e.index[2] == d1 + 2);
  CHECK(e.n == 3 && e.value[0] == 2 && e.value[1] == 1 && e.value[2] == 6);
  vox_sparse_entries_free(&e);
  CHECK_OK(ctx, vox_sparse_load_entries(ctx, &t, &h, 0, &e));
  CHECK(e.n == 2 && e.index[0] == d0 + 2 && e.index[1] == d1);
  CHECK(e.n == 2 && e.value[0] == 2 && e.value[1] == 1.5);
  vox_sparse_entries_free(&e);
  /* without the box's map (an MPI rank sent the hierarchy), the nodes by a
   * search in level 0's node_box: the same node for every box node */
  int32_t *map = h.box_to_node;
  h.box_to_node = NULL;
  size_t differ = 0;
  for (int64_t b = 0; b < vox_grid_nodes(&m.grid); b++) differ += vox_sparse_node_at(&h, b) != map[b];
  CHECK(differ == 0);
  CHECK_OK(ctx, vox_sparse_prescribed_entries(ctx, &t, &h, &e));
  CHECK(e.n == 3 && e.index[0] == d0 && e.index[2] == d1 + 2 && e.value[2] == 6);
  vox_sparse_entries_free(&e);
  h.box_to_node = map;
  vox_sparse_hierarchy_free(&h);

  const size_t nd = 3 * (size_t)vox_grid_nodes(&m.grid);
  double *u = calloc(nd, sizeof *u);
  vox_solver_options opt;
  vox_solver_options_default(&opt);
  opt.rtol = 1e-10;
  opt.storage = VOX_STORAGE_SPARSE;
  vox_solve_result r0, r1;
  CHECK_OK(ctx, vox_sparse_solve_elasticity(ctx, be, &m, &opt, u, &r0, NULL));
  double *u0 = malloc(nd * sizeof *u0);
  memcpy(u0, u, nd * sizeof *u);
  opt.rtol = 1e-8;
  CHECK_OK(ctx, vox_sparse_solve_elasticity(ctx, be, &m, &opt, u, &r1, NULL));
  double diff = 0;
  for (size_t i = 0; i < nd; i++) diff = fmax(diff, fabs(u[i] - u0[i]));
  printf("entries: CG %d from zero, %d from the solution, max |du| / max |u| = %.1e\n",
         r0.iterations, r1.iterations, diff / max_abs(u0, nd));
  CHECK(r0.reason == VOX_CONVERGED_RTOL && r0.iterations > 3);
  CHECK(r1.reason == VOX_CONVERGED_RTOL && r1.iterations == 0);
  CHECK(diff <= 1e-12 * max_abs(u0, nd));
  free(u), free(u0);
  vox_model_free(&m);
}

/* A solve with a plan (its hierarchy built ahead) gives the displacements
 * of one without, bit for bit; a plan of the full box is empty and
 * changes nothing either; the plan names the storage the solve takes;
 * with zero_start the displacement array's contents on entry change
 * nothing. */
static void test_plan(vox_context *ctx, vox_backend *be) {
  vox_model m;
  make_bone_model(ctx, &m, 14, 9, 0);
  double applied;
  CHECK_OK(ctx, vox_add_compression_test(ctx, &m, VOX_TEST_UNIAXIAL, 2, -0.01, &applied));
  const size_t nd = 3 * (size_t)vox_grid_nodes(&m.grid);
  for (int storage = 0; storage < 2; storage++) {
    vox_solver_options opt;
    vox_solver_options_default(&opt);
    opt.rtol = 1e-8;
    opt.storage = storage ? VOX_STORAGE_FULL_BOX : VOX_STORAGE_AUTO;
    double *u0 = calloc(nd, sizeof *u0), *u1 = calloc(nd, sizeof *u1);
    vox_solve_result r0, r1;
    CHECK_OK(ctx, vox_solve_elasticity(ctx, be, &m, 0, 1, 0, &opt, u0, &r0));
    vox_solve_plan *plan = NULL;
    CHECK_OK(ctx, vox_solve_plan_create(ctx, &m, NULL, &opt, &plan));
    CHECK(vox_solve_plan_storage(plan) == r0.storage); /* what the solve takes */
    CHECK_OK(ctx, vox_solve_elasticity_planned(ctx, be, &m, NULL, plan, &opt, u1, &r1));
    vox_solve_plan_free(plan);
    CHECK(r0.storage == (storage ? VOX_STORAGE_FULL_BOX : VOX_STORAGE_SPARSE));
    CHECK(r1.storage == r0.storage && r1.iterations == r0.iterations);
    CHECK(memcmp(u0, u1, nd * sizeof *u0) == 0);
    /* zero_start: the array's NaNs neither read as the start nor left in
     * the answer (the box's nodes off the bone included) */
    double *u2 = malloc(nd * sizeof *u2);
    for (size_t i = 0; i < nd; i++) u2[i] = NAN;
    vox_solve_result r2;
    opt.zero_start = 1;
    CHECK_OK(ctx, vox_solve_plan_create(ctx, &m, NULL, &opt, &plan));
    CHECK_OK(ctx, vox_solve_elasticity_planned(ctx, be, &m, NULL, plan, &opt, u2, &r2));
    vox_solve_plan_free(plan);
    CHECK(r2.storage == r0.storage && r2.iterations == r0.iterations);
    CHECK(memcmp(u0, u2, nd * sizeof *u0) == 0);
    free(u0), free(u1), free(u2);
  }
  vox_model_free(&m);
}

/* Per-element moduli (vox_solve_elasticity_moduli, three values exact in
 * float, which the sparse storage holds) on a porous bone: the sparse
 * storage's displacements those of the full box to 1e-8, and not the
 * materials'. */
static void test_moduli(vox_context *ctx, vox_backend *be) {
  vox_model m;
  make_bone_model(ctx, &m, 20, 7, 0);
  double applied;
  CHECK_OK(ctx, vox_add_compression_test(ctx, &m, VOX_TEST_UNIAXIAL, 2, -0.01, &applied));
  const size_t nd = 3 * (size_t)vox_grid_nodes(&m.grid), ne = (size_t)vox_grid_elements(&m.grid);
  double *moduli = malloc(ne * sizeof *moduli);
  for (size_t e = 0; e < ne; e++) moduli[e] = 2000 + 1500 * (double)(e * 7 % 3);
  double *u[3];
  vox_solve_result r[3];
  const vox_storage storage[3] = {VOX_STORAGE_FULL_BOX, VOX_STORAGE_SPARSE, VOX_STORAGE_SPARSE};
  for (int k = 0; k < 3; k++) {
    vox_solver_options opt;
    vox_solver_options_default(&opt);
    opt.rtol = 1e-12;
    opt.storage = storage[k];
    u[k] = calloc(nd, sizeof *u[k]);
    if (k < 2)
      CHECK_OK(ctx, vox_solve_elasticity_moduli(ctx, be, &m, moduli, &opt, u[k], &r[k]));
    else /* the materials' E */
      CHECK_OK(ctx, vox_solve_elasticity(ctx, be, &m, 0, 1, 0, &opt, u[k], &r[k]));
  }
  double diff = 0, diff_materials = 0;
  for (size_t i = 0; i < nd; i++) {
    diff = fmax(diff, fabs(u[1][i] - u[0][i]));
    diff_materials = fmax(diff_materials, fabs(u[2][i] - u[0][i]));
  }
  const double scale = max_abs(u[0], nd);
  printf("element moduli 20^3: CG %d (sparse, %d levels) %d (full box), max |du| / max |u| = "
         "%.2e (the materials': %.2e)\n",
         r[1].iterations, r[1].levels, r[0].iterations, diff / scale, diff_materials / scale);
  CHECK(r[1].storage == VOX_STORAGE_SPARSE && r[1].reason == VOX_CONVERGED_RTOL);
  CHECK(diff <= 1e-8 * scale && diff_materials > 1e-2 * scale);
  for (int k = 0; k < 3; k++) free(u[k]);
  free(moduli);
  vox_model_free(&m);
}

/* The CG count as the same bone is sampled finer must stay moderate
 * (Arbenz et al. 2014: it even falls); printed for docs/engine.md. */
static void test_growth(vox_context *ctx, vox_backend *be) {
  const int64_t sizes[] = {16, 32, 48};
  int its[3];
  for (int s = 0; s < 3; s++) {
    vox_model m;
    make_bone_model(ctx, &m, sizes[s], 7, 0);
    double applied;
    CHECK_OK(ctx, vox_add_compression_test(ctx, &m, VOX_TEST_UNIAXIAL, 2, -0.01, &applied));
    const size_t nd = 3 * (size_t)vox_grid_nodes(&m.grid);
    double *u = calloc(nd, sizeof *u);
    vox_solver_options opt;
    vox_solver_options_default(&opt);
    opt.rtol = 1e-6;
    opt.storage = VOX_STORAGE_SPARSE;
    vox_solve_result r;
    vox_sparse_stats st;
    CHECK_OK(ctx, vox_sparse_solve_elasticity(ctx, be, &m, &opt, u, &r, &st));
    CHECK(r.reason == VOX_CONVERGED_RTOL);
    its[s] = r.iterations;
    printf("growth %lld^3: %zu elements, %zu dofs, %d levels, %d CG iterations to 1e-6\n",
           (long long)sizes[s], st.n_elements, st.n_dofs, st.n_levels, r.iterations);
    free(u);
    vox_model_free(&m);
  }
  CHECK(its[2] <= 50);
  CHECK(its[2] <= 2 * its[0]);
}

/* AUTO takes the sparse storage on porous elasticity only; the option's
 * names round trip. */
static void test_storage_option(vox_context *ctx) {
  vox_storage s;
  CHECK(vox_storage_parse("sparse", &s) == 0 && s == VOX_STORAGE_SPARSE);
  CHECK(vox_storage_parse("full", &s) == 0 && s == VOX_STORAGE_FULL_BOX);
  CHECK(vox_storage_parse("auto", &s) == 0 && s == VOX_STORAGE_AUTO);
  CHECK(vox_storage_parse("dense", &s) == -1);
  CHECK(strcmp(vox_storage_name(VOX_STORAGE_SPARSE), "sparse") == 0);
  vox_solver_options opt;
  vox_solver_options_default(&opt);
  CHECK(opt.storage == VOX_STORAGE_AUTO);
  opt.storage = (vox_storage)7;
  CHECK(vox_solver_options_check(ctx, &opt) != VOX_OK);
}

/* Options the sparse storage does not take: one clear error each. */
static void test_refusals(vox_context *ctx, vox_backend *be) {
  vox_model m;
  make_bone_model(ctx, &m, 32, 7, 0);
  double applied;
  CHECK_OK(ctx, vox_add_compression_test(ctx, &m, VOX_TEST_UNIAXIAL, 2, -0.01, &applied));
  double *u = calloc(3 * (size_t)vox_grid_nodes(&m.grid), sizeof *u);
  vox_solver_options opt;
  vox_solver_options_default(&opt);
  opt.storage = VOX_STORAGE_SPARSE;
  vox_solve_result r;
  opt.smoother = VOX_SMOOTHER_JACOBI;
  CHECK(vox_solve_elasticity(ctx, be, &m, 0, 1, 0, &opt, u, &r) == VOX_ERR_UNSUPPORTED);
  CHECK(strstr(vox_context_message(ctx), "Chebyshev") != NULL);
  opt.smoother = VOX_SMOOTHER_CHEBYSHEV;
  opt.mg_levels = 2; /* a coarsest box of 17^3 nodes: too large to factor */
  CHECK(vox_solve_elasticity(ctx, be, &m, 0, 1, 0, &opt, u, &r) == VOX_ERR_INVALID_ARGUMENT);
  CHECK(strstr(vox_context_message(ctx), "coarsest box") != NULL);
  opt.mg_levels = 3;
  opt.sparse.block_levels = -2;
  CHECK(vox_solve_elasticity(ctx, be, &m, 0, 1, 0, &opt, u, &r) == VOX_ERR_INVALID_ARGUMENT);
  CHECK(strstr(vox_context_message(ctx), "block-smoothed levels -2") != NULL);
  opt.sparse.block_levels = VOX_SPARSE_ALL_LEVELS;
  CHECK_OK(ctx, vox_solve_elasticity(ctx, be, &m, 0, 1, 0, &opt, u, &r));
  CHECK(r.reason == VOX_CONVERGED_RTOL);
  free(u);
  vox_model_free(&m);
}

/* The sparse W-cycle (--mg-cycle w): CG stays valid with it (the same
 * displacements as the V-cycle's to the tolerance) and it needs fewer
 * iterations on a perlin bone of four levels, whose level 2 it visits
 * twice; `auto`, the default, is the V-cycle here. */
static void test_w_cycle(vox_context *ctx, vox_backend *be) {
  vox_model m;
  make_bone_model(ctx, &m, 36, 7, 0);
  double applied;
  CHECK_OK(ctx, vox_add_compression_test(ctx, &m, VOX_TEST_UNIAXIAL, 2, -0.01, &applied));
  const size_t nd = 3 * (size_t)vox_grid_nodes(&m.grid);
  double *u[3];
  vox_solve_result r[3];
  vox_sparse_stats stats;
  static const vox_mg_cycle cycle[3] = {VOX_MG_CYCLE_V, VOX_MG_CYCLE_W, VOX_MG_CYCLE_AUTO};
  for (int k = 0; k < 3; k++) {
    u[k] = calloc(nd, sizeof *u[k]);
    vox_solver_options opt;
    vox_solver_options_default(&opt);
    opt.rtol = 1e-10;
    opt.storage = VOX_STORAGE_SPARSE;
    opt.mg_cycle = cycle[k];
    CHECK_OK(ctx, vox_sparse_solve_elasticity(ctx, be, &m, &opt, u[k], &r[k], &stats));
    CHECK(r[k].reason == VOX_CONVERGED_RTOL);
  }
  double diff = 0;
  for (size_t i = 0; i < nd; i++) diff = fmax(diff, fabs(u[1][i] - u[0][i]));
  const double scale = max_abs(u[0], nd);
  printf("W-cycle, compression 36^3, %d levels: CG %d (V %d, auto %d), max |du| / max |u| = "
         "%.2e\n",
         stats.n_levels, r[1].iterations, r[0].iterations, r[2].iterations, diff / scale);
  CHECK(stats.n_levels >= 4); /* a level visited twice */
  CHECK(scale > 0 && diff <= 1e-6 * scale);
  CHECK(r[1].iterations < r[0].iterations);
  CHECK(r[2].iterations == r[0].iterations);
  for (int k = 0; k < 3; k++) free(u[k]);
  vox_model_free(&m);
}

/* The correction in the weakly held rigid motions (rigid_modes): under
 * the uniaxial test (the lateral translations and the rotation about the
 * axis held by the pinned nodes alone) it takes fewer CG iterations to the
 * same solution; under the friction test, whose plates hold every rigid
 * motion, it keeps none, and the solve is the same to the bit. In mixed
 * and in double precision. */
static void test_rigid_modes(vox_context *ctx, vox_backend *be) {
  for (int test = VOX_TEST_UNIAXIAL; test <= VOX_TEST_FRICTION; test++) {
    vox_model m;
    make_bone_model(ctx, &m, 36, 7, 0);
    CHECK_OK(ctx, vox_add_compression_test(ctx, &m, (vox_compression_test)test, 2, -0.01, NULL));
    const size_t nd = 3 * (size_t)vox_grid_nodes(&m.grid);
    double *u[3];
    vox_solve_result r[3];
    vox_sparse_stats stats;
    for (int k = 0; k < 3; k++) { /* without, with, with in double precision */
      u[k] = calloc(nd, sizeof *u[k]);
      vox_solver_options opt;
      vox_solver_options_default(&opt);
      opt.rtol = 1e-10;
      opt.storage = VOX_STORAGE_SPARSE;
      opt.sparse.rigid_modes = k > 0;
      if (k == 2) opt.precision = VOX_PRECISION_DOUBLE;
      CHECK_OK(ctx, vox_sparse_solve_elasticity(ctx, be, &m, &opt, u[k], &r[k], &stats));
      CHECK(r[k].reason == VOX_CONVERGED_RTOL);
    }
    const double scale = max_abs(u[0], nd);
    double diff = 0, diff_double = 0;
    for (size_t i = 0; i < nd; i++) {
      diff = fmax(diff, fabs(u[1][i] - u[0][i]));
      diff_double = fmax(diff_double, fabs(u[2][i] - u[0][i]));
    }
    CHECK(diff_double <= 1e-6 * scale);
    printf("rigid motions, %s 36^3: CG %d with the correction, %d without, max |du| / max |u| = "
           "%.2e\n",
           vox_compression_test_name((vox_compression_test)test), r[1].iterations,
           r[0].iterations, diff / scale);
    if (test == VOX_TEST_UNIAXIAL) {
      CHECK(scale > 0 && diff <= 1e-6 * scale);
      CHECK(r[1].iterations < r[0].iterations);
    } else {
      CHECK(diff == 0 && r[1].iterations == r[0].iterations);
    }
    for (int k = 0; k < 3; k++) free(u[k]);
    vox_model_free(&m);
  }
}

/* The sum of (K u)_axis over the constrained dofs of the plate that moves
 * (prescribed non-zero), by the full-box operator. */
static double axis_reaction(vox_context *ctx, vox_backend *be, const vox_model *m,
                            const double *u, int axis) {
  double *k = full_product(ctx, be, m, u, VOX_APPLY_FULL), total = 0;
  if (!k) return NAN;
  for (size_t i = 0; i < m->n_constraints; i++) {
    const vox_constraint *c = &m->constraints[i];
    if (c->component == axis && c->value != 0) total += k[3 * c->node + axis];
  }
  free(k);
  return total;
}

/* x'K x by the full-box operator (flags as full_product's). */
static double energy_norm(vox_context *ctx, vox_backend *be, const vox_model *m, const double *x,
                          unsigned flags) {
  double *k = full_product(ctx, be, m, x, flags), e = 0;
  if (!k) return NAN;
  for (size_t i = 0; i < 3 * (size_t)vox_grid_nodes(&m->grid); i++) e += x[i] * k[i];
  free(k);
  return e;
}

/* The CG's energy and reaction tests (ksp.h) on a bone's compression
 * tests, whose only actions are prescribed displacements: measured against the whole
 * field's energy u'Ku (the lift's g'Kg taken off the solved correction's),
 * the stop's true relative error |u_k - u*|_K^2 / u*'Ku* is at most the
 * tolerance. Compressed across, the bone stores a small part of its
 * lift's energy, so that against the correction's energy alone the test
 * would stop far too early. */
static void test_energy_stop(vox_context *ctx, vox_backend *be) {
  for (int axis = 0; axis < 3; axis += 2) {
    vox_model m;
    make_bone_model(ctx, &m, 28, 7, 0);
    CHECK_OK(ctx, vox_add_compression_test(ctx, &m, VOX_TEST_UNIAXIAL, axis, -0.01, NULL));
    const size_t nd = 3 * (size_t)vox_grid_nodes(&m.grid);
    double *exact = calloc(nd, sizeof *exact), *u = calloc(nd, sizeof *u);
    vox_solver_options opt;
    vox_solver_options_default(&opt);
    opt.storage = VOX_STORAGE_SPARSE;
    opt.rtol = 1e-12;
    vox_solve_result r;
    vox_sparse_stats stats;
    CHECK_OK(ctx, vox_sparse_solve_elasticity(ctx, be, &m, &opt, exact, &r, &stats));
    const int full = r.iterations;
    const double energy = energy_norm(ctx, be, &m, exact, VOX_APPLY_FULL);
    for (int k = 0; k < 2; k++) {
      opt.energy_tol = k ? 1e-7 : 1e-5;
      opt.cg_window = 8;
      memset(u, 0, nd * sizeof *u);
      CHECK_OK(ctx, vox_sparse_solve_elasticity(ctx, be, &m, &opt, u, &r, &stats));
      for (size_t i = 0; i < nd; i++) u[i] -= exact[i]; /* zero on the fixed dofs */
      const double error = energy_norm(ctx, be, &m, u, 0) / energy;
      printf("energy test, compression along %c, tol %.0e: %d CG (%d to a residual of 1e-12), "
             "relative energy error %.2e\n",
             "xyz"[axis], opt.energy_tol, r.iterations, full, error);
      CHECK(r.reason == VOX_CONVERGED_ENERGY && r.iterations < full);
      CHECK(error >= 0 && error <= opt.energy_tol);
    }
    /* the reaction test: the plate's force (the reactions' work over the
     * plate's displacement) settled to 1e-6 over 16 steps is within a
     * tenth of that of the tight solve's, where the solve stops by it
     * (a work that does not follow the iterate stops at 16 steps, 5e-7
     * and 3e-6 off) */
    opt.energy_tol = 0;
    opt.reaction_tol = 1e-6;
    opt.cg_window = 16;
    memset(u, 0, nd * sizeof *u);
    CHECK_OK(ctx, vox_sparse_solve_elasticity(ctx, be, &m, &opt, u, &r, &stats));
    const double force = axis_reaction(ctx, be, &m, u, axis),
                 tight = axis_reaction(ctx, be, &m, exact, axis);
    printf("reaction test, compression along %c: %d CG (%d to a residual of 1e-12), force %.10g "
           "against %.10g\n",
           "xyz"[axis], r.iterations, full, force, tight);
    CHECK(r.reason == VOX_CONVERGED_REACTION && r.iterations < full);
    CHECK(fabs(force - tight) <= 1e-7 * fabs(tight));
    free(exact), free(u);
    vox_model_free(&m);
  }
}

/* The host's 64-bit parent words (a whole level may hold more coarse
 * elements than a backend's 32-bit words name) narrow to a backend's where
 * they fit, and are refused with a message where one does not. */
static void test_parent_words(vox_context *ctx) {
  const uint64_t last = VOX_SPARSE_MAX_COARSE_ELEMENTS - 1;
  const uint64_t words[3] = {vox_sparse_parent_wide(0, 13), vox_sparse_parent_wide(last, 26),
                             vox_sparse_parent_wide(last + 1, 0)};
  uint32_t *narrow = NULL;
  CHECK_OK(ctx, vox_sparse_parents_narrow(ctx, words, 2, &narrow));
  CHECK(narrow && narrow[0] == vox_sparse_parent(0, 13) &&
        narrow[1] == vox_sparse_parent((uint32_t)last, 26));
  free(narrow);
  CHECK(vox_sparse_parents_narrow(ctx, words, 3, &narrow) == VOX_ERR_UNSUPPORTED && !narrow);
  CHECK(strstr(vox_context_message(ctx), "more MPI ranks") != NULL);
  CHECK_OK(ctx, vox_sparse_parents_narrow(ctx, NULL, 3, &narrow));
  CHECK(narrow == NULL);
}

/* The running sums of the coarse levels' counts: in blocks on the host's
 * threads above a million entries, one pass below; both equal to one pass,
 * for lengths that do not divide into the blocks. */
static void test_inclusive_scan(void) {
  const size_t sizes[3] = {1000, ((size_t)1 << 20) + 77, 3 * ((size_t)1 << 20) + 255};
  for (int t = 0; t < 3; t++) {
    const size_t n = sizes[t];
    size_t *a = malloc(n * sizeof *a), *want = malloc(n * sizeof *want);
    CHECK(a && want);
    if (!a || !want) return;
    for (size_t i = 0; i < n; i++) a[i] = (i * 2654435761u) % 7;
    want[0] = a[0];
    for (size_t i = 1; i < n; i++) want[i] = want[i - 1] + a[i];
    vox_inclusive_scan(a, n);
    CHECK(memcmp(a, want, n * sizeof *a) == 0);
    free(a);
    free(want);
  }
}

int main(void) {
  setvbuf(stdout, NULL, _IONBF, 0);
  vox_context *ctx;
  vox_context_create(&ctx);
  vox_backend *be;
  CHECK_OK(ctx, vox_backend_create(ctx, VOX_DEVICE_CPU, &be));
  test_storage_option(ctx);
  test_refusals(ctx, be);
  test_split_levels(ctx);
  test_parent_words(ctx);
  test_inclusive_scan();
  test_product_modes(ctx, be);
  test_entries(ctx, be);
  test_plan(ctx, be);
  test_moduli(ctx, be);
  test_block_inverse(ctx, be, 0);
  test_block_inverse(ctx, be, 1);
  /* each smoother once: the diagonal, blocks on level 0 only, on every
   * level; the plain coarse levels once, the split ones (the default) in
   * the rest */
  vox_solver_options defaults;
  vox_solver_options_default(&defaults);
  sparse_options = defaults.sparse;
  sparse_options.coarse = VOX_SPARSE_COARSE_BOX;
  test_compression(ctx, be, 20, "diagonal");
  sparse_options.coarse = VOX_SPARSE_COARSE_SPLIT;
  test_compression(ctx, be, 27, "block:1"); /* odd box sides: coarse nodes past the box */
  test_forces(ctx, be, "block");
  test_growth(ctx, be);
  test_w_cycle(ctx, be);
  test_rigid_modes(ctx, be);
  test_energy_stop(ctx, be);
  vox_backend_destroy(be);
  vox_context_destroy(ctx);
  CHECK_DONE();
}
