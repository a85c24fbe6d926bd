/* SPDX-License-Identifier: BSD-3-Clause */
/* The smoothed-aggregation levels of the sparse solver (sparse_sa.h): the
 * loop over levels, the prolongator smoothing, the Galerkin triple
 * products and the coarsest level's dense inverse. */
#include "sparse_sa.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sparse_aggregation.h"
#include "sparse_sa_fine.h"

/* LAPACK: Cholesky factor and inverse of a symmetric positive definite matrix. */
extern void dpotrf_(const char *uplo, const int *n, double *a, const int *lda, int *info);
extern void dpotri_(const char *uplo, const int *n, double *a, const int *lda, int *info);

enum { M = VOX_SA_MODES, MAX_LEVELS = VOX_SA_MAX_LEVELS };

void vox_sa_options_default(vox_sa_options *o) {
  o->max_coarse_dofs = 1000;
  o->omega = 4.0 / 3.0;
  o->point_diagonal = 0;
  o->power_iterations = 20;
  o->strength = 0;
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static vox_status no_memory(vox_context *ctx, const char *what) {
  return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory for the smoothed aggregation (%s)",
                   what);
}

void vox_sa_free(vox_sa_hierarchy *sa) {
  for (int l = 0; sa->level && l < sa->n_levels; l++) {
    vox_sa_level *lv = &sa->level[l];
    vox_bsr_free(&lv->a);
    vox_bsr_free(&lv->w);
    vox_bsr_free(&lv->p);
    vox_bsr_free(&lv->r);
    vox_bsr_free(&lv->t);
    vox_bsr_free(&lv->tt);
    free(lv->dead);
  }
  free(sa->level);
  vox_bsr_free(&sa->coarsest_inverse);
  memset(sa, 0, sizeof *sa);
}

/* The rigid-body modes about a point p expressed by those about a point q:
 * column j of the modes about p is sum_i (modes about q)_i S[i][j] with
 * d = q - p (a rotation about p is the rotation about q plus the
 * translation that q's offset adds). Row-major 6 x 6. */
static void frame_shift(const double d[3], double s[M * M]) {
  memset(s, 0, M * M * sizeof *s);
  for (int i = 0; i < M; i++) s[i * M + i] = 1;
  s[0 * M + 3] = -d[1], s[1 * M + 3] = d[0]; /* about z: (-y, x, 0) */
  s[1 * M + 4] = -d[2], s[2 * M + 4] = d[1]; /* about x: (0, -z, y) */
  s[0 * M + 5] = d[2], s[2 * M + 5] = -d[0]; /* about y: (z, 0, -x) */
}

/* The centroids of the aggregates of nodes at `pos` (3 a node). */
static vox_status centroids(vox_context *ctx, size_t n, const double *pos, const int32_t *agg,
                            size_t n_agg, double *centre) {
  double *count = calloc(n_agg ? n_agg : 1, sizeof *count);
  if (!count) return no_memory(ctx, "centroids");
  memset(centre, 0, 3 * n_agg * sizeof *centre);
  for (size_t m = 0; m < n; m++) {
    if (agg[m] < 0) continue;
    for (int k = 0; k < 3; k++) centre[3 * (size_t)agg[m] + (size_t)k] += pos[3 * m + (size_t)k];
    count[agg[m]] += 1;
  }
  for (size_t a = 0; a < n_agg; a++)
    for (int k = 0; k < 3; k++) centre[3 * a + (size_t)k] /= count[a];
  free(count);
  return VOX_OK;
}

/* Node positions of level 0, in voxels. */
static vox_status fine_positions(vox_context *ctx, const vox_sparse_host_level *lv,
                                 double **pos) {
  const int64_t px = lv->grid.nx + 1, py = lv->grid.ny + 1;
  double *p = malloc((lv->n_nodes ? lv->n_nodes : 1) * 3 * sizeof *p);
  if (!p) return no_memory(ctx, "positions");
  for (size_t m = 0; m < lv->n_nodes; m++) {
    const int64_t q = lv->node_box[m];
    p[3 * m] = (double)(q % px), p[3 * m + 1] = (double)(q / px % py);
    p[3 * m + 2] = (double)(q / (px * py));
  }
  *pos = p;
  return VOX_OK;
}

vox_status vox_sa_rigid_modes_at(vox_context *ctx, size_t n, const double *pos,
                                 const int32_t *agg, size_t n_agg, double *b, double *centre) {
  double *c = calloc(3 * (n_agg ? n_agg : 1), sizeof *c);
  vox_status s = c ? VOX_OK : no_memory(ctx, "centroids");
  if (s == VOX_OK && agg) s = centroids(ctx, n, pos, agg, n_agg, c);
  if (s != VOX_OK) {
    free(c);
    return s;
  }
  const double origin[3] = {0, 0, 0};
  for (size_t m = 0; m < n; m++) {
    /* a node's modes about itself are [I 0]; shifted to the centroid */
    const double *o = agg && agg[m] >= 0 ? c + 3 * (size_t)agg[m] : origin;
    const double d[3] = {pos[3 * m] - o[0], pos[3 * m + 1] - o[1], pos[3 * m + 2] - o[2]};
    double sh[M * M];
    frame_shift(d, sh);
    memcpy(b + 3 * M * m, sh, 3 * M * sizeof *b);
  }
  if (centre) memcpy(centre, c, 3 * n_agg * sizeof *c);
  free(c);
  return VOX_OK;
}

vox_status vox_sa_rigid_modes(vox_context *ctx, const vox_sparse_host_level *lv,
                              const int32_t *agg, size_t n_agg, double *b, double *centre) {
  double *pos = NULL;
  vox_status s = fine_positions(ctx, lv, &pos);
  if (s == VOX_OK) s = vox_sa_rigid_modes_at(ctx, lv->n_nodes, pos, agg, n_agg, b, centre);
  free(pos);
  return s;
}

/* The scalar entries of a BSR matrix's blocks (the operator complexity's). */
static size_t scalar_entries(const vox_bsr *a) {
  return vox_bsr_blocks(a) * (size_t)(a->br * a->bc);
}

/* P = T - omega / lambda W (A T), from A T. */
static vox_status smooth_prolongator(vox_context *ctx, const vox_bsr *t, const vox_bsr *w,
                                     const vox_bsr *at, double scale, vox_bsr *p) {
  vox_bsr wat;
  vox_status s = vox_bsr_multiply(ctx, w, at, &wat);
  if (s == VOX_OK) s = vox_bsr_add(ctx, t, -scale, &wat, p);
  vox_bsr_free(&wat);
  return s;
}

/* The coarse operator's dead dofs as identity rows: their prolongator
 * columns are zero, so their rows and columns of P^T A P are too. */
static void identity_on_dead(vox_bsr *a, const uint8_t *dead) {
  for (size_t i = 0; i < a->n_rows; i++) {
    if (!dead[i]) continue;
    for (size_t k = a->row_start[i]; k < a->row_start[i + 1]; k++)
      if (a->col[k] == (int32_t)i)
        for (int c = 0; c < M; c++)
          if (dead[i] >> c & 1) a->val[k * M * M + (size_t)(c * M + c)] = 1;
  }
}

/* A_l^-1 as a dense matrix of n_nodes^2 blocks (LAPACK dpotrf, dpotri). */
static vox_status coarsest_inverse(vox_context *ctx, const vox_bsr *a, vox_bsr *out) {
  const size_t nn = a->n_rows, n = nn * M;
  double *d = calloc(n * n + 1, sizeof *d);
  if (!d) return no_memory(ctx, "coarsest level");
  for (size_t i = 0; i < nn; i++)
    for (size_t k = a->row_start[i]; k < a->row_start[i + 1]; k++)
      for (int r = 0; r < M; r++)
        for (int c = 0; c < M; c++) /* column-major; A symmetric */
          d[(M * i + (size_t)r) + n * (M * (size_t)a->col[k] + (size_t)c)] =
              a->val[k * M * M + (size_t)(r * M + c)];
  const int ni = (int)n;
  int info = 0;
  double *copy = malloc((n > 0 ? n * n : 1) * sizeof *copy);
  if (!copy) {
    free(d);
    return no_memory(ctx, "coarsest level");
  }
  memcpy(copy, d, n * n * sizeof *d);
  if (n > 0) { /* none when every dof is fixed (LAPACK stops the program on lda 0) */
    dpotrf_("L", &ni, d, &ni, &info);
    /* a pivot under 1e-10 of the largest diagonal entry counts as a failure
     * too, as in the diagonal blocks' inverses (sparse_bsr.c) */
    double largest = 0;
    for (size_t j = 0; j < n; j++) largest = fmax(largest, copy[j + n * j]);
    for (size_t j = 0; info == 0 && j < n; j++)
      if (!(d[j + n * j] * d[j + n * j] > 1e-10 * largest)) info = (int)j + 1;
    if (info == 0) dpotri_("L", &ni, d, &ni, &info);
  }
  if (info != 0) {
    /* only semi-definite (a mechanism's directions, which a consistent
     * right-hand side does not excite): the pseudo-inverse, whole */
    if (!vox_symmetric_pseudo_inverse(copy, ni, d)) {
      free(d), free(copy);
      return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                       "smoothed aggregation: no inverse of the coarsest level (%zu dofs): "
                       "LAPACK dsyev failed or out of memory",
                       n);
    }
  }
  free(copy);
  memset(out, 0, sizeof *out);
  out->n_rows = out->n_cols = nn, out->br = out->bc = M;
  out->row_start = malloc((nn + 1) * sizeof *out->row_start);
  out->col = malloc((nn * nn + 1) * sizeof *out->col);
  out->val = malloc((n * n + 1) * sizeof *out->val);
  if (!out->row_start || !out->col || !out->val) {
    free(d);
    vox_bsr_free(out);
    return no_memory(ctx, "coarsest inverse");
  }
  for (size_t i = 0; i <= nn; i++) out->row_start[i] = i * nn;
  for (size_t i = 0; i < nn; i++)
    for (size_t j = 0; j < nn; j++) {
      out->col[i * nn + j] = (int32_t)j;
      for (int r = 0; r < M; r++)
        for (int c = 0; c < M; c++) { /* the lower triangle holds the inverse */
          const size_t gr = M * i + (size_t)r, gc = M * j + (size_t)c;
          out->val[(i * nn + j) * M * M + (size_t)(r * M + c)] =
              gr >= gc ? d[gr + n * gc] : d[gc + n * gr];
        }
    }
  free(d);
  return VOX_OK;
}

/* Level l + 1 from level l >= 1: its a, dead, near-null space b (6 x 6 a
 * node: the modes about the node's position pos, 3 a node), into
 * next->a, dead and the next level's b_next and pos_next. */
static vox_status coarsen(vox_context *ctx, const vox_sa_options *o, vox_sa_level *lv,
                          const double *b, const double *pos, vox_sa_level *next,
                          double **b_next, double **pos_next, vox_sa_timing *tm) {
  const size_t n = lv->n_nodes;
  double t = now();
  int32_t *agg = malloc((n ? n : 1) * sizeof *agg);
  uint8_t *skip = malloc(n ? n : 1);
  if (!agg || !skip) {
    free(agg), free(skip);
    return no_memory(ctx, "aggregates");
  }
  for (size_t i = 0; i < n; i++) skip[i] = lv->dead[i] == (1u << M) - 1;
  size_t na = 0;
  vox_status s = vox_sa_aggregate(ctx, n, lv->a.row_start, lv->a.col, skip, agg, &na);
  free(skip);
  tm->aggregate += now() - t, t = now();
  double *bc = s == VOX_OK ? malloc((na ? na : 1) * M * M * sizeof *bc) : NULL;
  double *pc = s == VOX_OK ? malloc((na ? na : 1) * 3 * sizeof *pc) : NULL;
  double *shifted = s == VOX_OK ? malloc((n ? n : 1) * M * M * sizeof *shifted) : NULL;
  next->dead = s == VOX_OK ? calloc(na ? na : 1, 1) : NULL;
  if (s == VOX_OK && (!bc || !pc || !shifted || !next->dead)) s = no_memory(ctx, "coarse modes");
  if (s == VOX_OK) s = centroids(ctx, n, pos, agg, na, pc);
  if (s == VOX_OK) /* each node's modes about its aggregate's centroid */
    for (size_t i = 0; i < n; i++) {
      double sh[M * M];
      const double *c = agg[i] >= 0 ? pc + 3 * (size_t)agg[i] : pos + 3 * i;
      const double d[3] = {pos[3 * i] - c[0], pos[3 * i + 1] - c[1], pos[3 * i + 2] - c[2]};
      frame_shift(d, sh);
      for (int r = 0; r < M; r++)
        for (int j = 0; j < M; j++) {
          double v = 0;
          for (int k = 0; k < M; k++) v += b[i * M * M + (size_t)(r * M + k)] * sh[k * M + j];
          shifted[i * M * M + (size_t)(r * M + j)] = v;
        }
    }
  vox_bsr tp = {0}, at = {0}, ap = {0}, wp = {0};
  if (s == VOX_OK)
    s = vox_sa_tentative(ctx, n, M, agg, na, shifted, lv->dead, &tp, bc, next->dead);
  free(agg), free(shifted);
  tm->tentative += now() - t, t = now();
  double lambda = lv->lambda_max;
  const vox_bsr *w = &lv->w;
  if (s == VOX_OK && o->point_diagonal) {
    s = vox_bsr_inverse_block_diagonal(ctx, &lv->a, lv->dead, 1, &wp);
    if (s == VOX_OK)
      s = vox_power_lambda_max(ctx, n * M, vox_bsr_apply_fn, &lv->a, vox_bsr_apply_fn, &wp,
                               o->power_iterations, &lambda);
    w = &wp;
  }
  if (s == VOX_OK) s = vox_bsr_multiply(ctx, &lv->a, &tp, &at);
  if (s == VOX_OK) s = smooth_prolongator(ctx, &tp, w, &at, o->omega / lambda, &lv->p);
  vox_bsr_free(&tp), vox_bsr_free(&at), vox_bsr_free(&wp);
  tm->prolongator += now() - t, t = now();
  if (s == VOX_OK) s = vox_bsr_transpose(ctx, &lv->p, &lv->r);
  if (s == VOX_OK) s = vox_bsr_multiply(ctx, &lv->a, &lv->p, &ap);
  if (s == VOX_OK) s = vox_bsr_multiply(ctx, &lv->r, &ap, &next->a);
  vox_bsr_free(&ap);
  tm->galerkin += now() - t;
  if (s != VOX_OK) {
    free(bc), free(pc);
    return s;
  }
  identity_on_dead(&next->a, next->dead);
  lv->n_aggregates = na;
  next->n_nodes = na;
  next->bn = M;
  *b_next = bc;
  *pos_next = pc;
  return VOX_OK;
}

/* The smoother's W and lambda_max of a level l >= 1. */
static vox_status smoother_of(vox_context *ctx, const vox_sa_options *o, vox_sa_level *lv,
                              vox_sa_timing *tm) {
  const double t = now();
  lv->scalar_nonzeros = scalar_entries(&lv->a);
  vox_status s = vox_bsr_inverse_block_diagonal(ctx, &lv->a, lv->dead, 0, &lv->w);
  if (s == VOX_OK)
    s = vox_power_lambda_max(ctx, lv->n_nodes * M, vox_bsr_apply_fn, &lv->a, vox_bsr_apply_fn,
                             &lv->w, o->power_iterations, &lv->lambda_max);
  tm->smoother += now() - t;
  return s;
}

/* Level 1 from the elements of level 0. */
/* The end of either first level's build: level 1's dead dofs made identity
 * rows, the two levels' sizes, and its near-null space bc and node
 * positions pc handed over (freed on failure). */
static vox_status first_level_done(vox_status s, size_t n, size_t na, vox_sa_level *l0,
                                   vox_sa_level *l1, double *bc, double *pc, double **b1,
                                   double **pos1) {
  if (s != VOX_OK) {
    free(bc), free(pc);
    return s;
  }
  identity_on_dead(&l1->a, l1->dead);
  l0->n_nodes = n;
  l0->bn = 3;
  l0->n_aggregates = na;
  l1->n_nodes = na;
  l1->bn = M;
  *b1 = bc;
  *pos1 = pc;
  return VOX_OK;
}

static vox_status first_level(vox_context *ctx, const vox_sa_options *o,
                              const vox_sparse_hierarchy *h, vox_sa_level *l0, vox_sa_level *l1,
                              double **b1, double **pos1, vox_sa_timing *tm) {
  const vox_sparse_host_level *f0 = &h->level[0];
  double t0 = now();
  const size_t n = f0->n_nodes;
  vox_sa_fine f;
  vox_status s = vox_sa_fine_create(ctx, h, &f);
  if (s != VOX_OK) return s;
  size_t *rs = NULL;
  int32_t *adj = NULL, *agg = malloc((n ? n : 1) * sizeof *agg);
  uint8_t *skip = malloc(n ? n : 1);
  double *b = malloc((n ? n : 1) * 3 * M * sizeof *b);
  double *bc = NULL;
  vox_bsr t = {0}, w = {0}, at = {0}, ap = {0};
  size_t na = 0;
  if (!agg || !skip || !b) s = no_memory(ctx, "aggregates");
  if (s == VOX_OK) s = vox_sa_fine_graph(ctx, &f, &rs, &adj);
  if (s == VOX_OK) {
    /* a node whose three dofs are all fixed has no unknown to aggregate */
    for (size_t i = 0; i < n; i++) skip[i] = f0->node_fixed[i] == 7;
    l0->scalar_nonzeros = 9 * rs[n];
    s = vox_sa_aggregate(ctx, n, rs, adj, skip, agg, &na);
  }
  free(rs), free(adj), free(skip);
  tm->aggregate += now() - t0, t0 = now();
  double *pc = NULL;
  if (s == VOX_OK) {
    bc = malloc((na ? na : 1) * M * M * sizeof *bc);
    pc = malloc((na ? na : 1) * 3 * sizeof *pc);
    l1->dead = calloc(na ? na : 1, 1);
    if (!bc || !pc || !l1->dead) s = no_memory(ctx, "coarse modes");
  }
  if (s == VOX_OK) s = vox_sa_rigid_modes(ctx, f0, agg, na, b, pc);
  if (s == VOX_OK) s = vox_sa_tentative(ctx, n, 3, agg, na, b, f0->node_fixed, &t, bc, l1->dead);
  free(agg), free(b);
  tm->tentative += now() - t0, t0 = now();
  double lambda = 0;
  if (s == VOX_OK) s = vox_sa_fine_inverse_block_diagonal(ctx, &f, o->point_diagonal, &w);
  if (s == VOX_OK)
    s = vox_power_lambda_max(ctx, 3 * n, vox_sa_fine_apply, &f, vox_bsr_apply_fn, &w,
                             o->power_iterations, &lambda);
  if (s == VOX_OK) s = vox_sa_fine_multiply(ctx, &f, &t, &at);
  if (s == VOX_OK) s = smooth_prolongator(ctx, &t, &w, &at, o->omega / lambda, &l0->p);
  vox_bsr_free(&at);
  /* kept for the implicit application of P = T - scale W A T */
  l0->p_scale = o->omega / lambda;
  if (s == VOX_OK) s = vox_bsr_transpose(ctx, &t, &l0->tt);
  l0->t = t;
  l0->w = w;
  tm->prolongator += now() - t0, t0 = now();
  if (s == VOX_OK) s = vox_bsr_transpose(ctx, &l0->p, &l0->r);
  if (s == VOX_OK) s = vox_sa_fine_multiply(ctx, &f, &l0->p, &ap);
  if (s == VOX_OK) s = vox_bsr_multiply(ctx, &l0->r, &ap, &l1->a);
  vox_bsr_free(&ap);
  tm->galerkin += now() - t0;
  vox_sa_fine_free(&f);
  return first_level_done(s, n, na, l0, l1, bc, pc, b1, pos1);
}

/* The strong couplings of a square BSR matrix as a graph (CSR, each node
 * its own neighbour): j is a neighbour of i where |A_ij|^2 >= theta^2
 * |A_ii| |A_jj| in the Frobenius norm (Vanek, Mandel and Brezina's
 * symmetric strength of connection, by blocks). */
static vox_status strong_graph(vox_context *ctx, const vox_bsr *a, double theta, size_t **rs_out,
                               int32_t **adj_out) {
  const size_t n = a->n_rows, bb = (size_t)(a->br * a->bc);
  double *diag = malloc((n ? n : 1) * sizeof *diag);
  size_t *rs = malloc((n + 1) * sizeof *rs);
  int32_t *adj = malloc((vox_bsr_blocks(a) ? vox_bsr_blocks(a) : 1) * sizeof *adj);
  if (!diag || !rs || !adj) {
    free(diag), free(rs), free(adj);
    return no_memory(ctx, "strength of connection");
  }
  const double t2 = theta * theta;
  for (size_t i = 0; i < n; i++) {
    diag[i] = 0;
    for (size_t k = a->row_start[i]; k < a->row_start[i + 1]; k++)
      if (a->col[k] == (int32_t)i)
        for (size_t e = 0; e < bb; e++) diag[i] += a->val[k * bb + e] * a->val[k * bb + e];
    diag[i] = sqrt(diag[i]);
  }
  rs[0] = 0;
  for (size_t i = 0; i < n; i++) {
    size_t m = rs[i];
    for (size_t k = a->row_start[i]; k < a->row_start[i + 1]; k++) {
      const size_t j = (size_t)a->col[k];
      double f = 0;
      for (size_t e = 0; e < bb; e++) f += a->val[k * bb + e] * a->val[k * bb + e];
      if (j == i || f >= t2 * diag[i] * diag[j]) adj[m++] = (int32_t)j;
    }
    rs[i + 1] = m;
  }
  free(diag);
  *rs_out = rs;
  *adj_out = adj;
  return VOX_OK;
}

/* Level 1 from an assembled level 0 of 3 x 3 blocks, its nodes at pos0
 * (no dofs fixed: supports held by penalties). Level 0 keeps W and
 * lambda_max(W A_0) for its smoother; its A stays the caller's. */
static vox_status first_level_assembled(vox_context *ctx, const vox_sa_options *o,
                                        const vox_bsr *a0, const double *pos0, vox_sa_level *l0,
                                        vox_sa_level *l1, double **b1, double **pos1,
                                        vox_sa_timing *tm) {
  double t0 = now();
  const size_t n = a0->n_rows;
  int32_t *agg = malloc((n ? n : 1) * sizeof *agg);
  double *b = malloc((n ? n : 1) * 3 * M * sizeof *b), *bc = NULL, *pc = NULL;
  vox_bsr t = {0}, at = {0}, ap = {0};
  size_t na = 0;
  vox_status s = agg && b ? VOX_OK : no_memory(ctx, "aggregates");
  /* the node graph: the blocks stored, or the strong ones among them */
  size_t *rs = NULL;
  int32_t *adj = NULL;
  if (s == VOX_OK && o->strength > 0) s = strong_graph(ctx, a0, o->strength, &rs, &adj);
  if (s == VOX_OK)
    s = vox_sa_aggregate(ctx, n, rs ? rs : a0->row_start, adj ? adj : a0->col, NULL, agg, &na);
  free(rs), free(adj);
  l0->scalar_nonzeros = scalar_entries(a0);
  tm->aggregate += now() - t0, t0 = now();
  if (s == VOX_OK) {
    bc = malloc((na ? na : 1) * M * M * sizeof *bc);
    pc = malloc((na ? na : 1) * 3 * sizeof *pc);
    l1->dead = calloc(na ? na : 1, 1);
    if (!bc || !pc || !l1->dead) s = no_memory(ctx, "coarse modes");
  }
  if (s == VOX_OK) s = vox_sa_rigid_modes_at(ctx, n, pos0, agg, na, b, pc);
  if (s == VOX_OK) s = vox_sa_tentative(ctx, n, 3, agg, na, b, NULL, &t, bc, l1->dead);
  free(agg), free(b);
  tm->tentative += now() - t0, t0 = now();
  if (s == VOX_OK) s = vox_bsr_inverse_block_diagonal(ctx, a0, NULL, o->point_diagonal, &l0->w);
  if (s == VOX_OK)
    s = vox_power_lambda_max(ctx, 3 * n, vox_bsr_apply_fn, a0, vox_bsr_apply_fn, &l0->w,
                             o->power_iterations, &l0->lambda_max);
  if (s == VOX_OK) s = vox_bsr_multiply(ctx, a0, &t, &at);
  if (s == VOX_OK) s = smooth_prolongator(ctx, &t, &l0->w, &at, o->omega / l0->lambda_max, &l0->p);
  vox_bsr_free(&t), vox_bsr_free(&at);
  tm->prolongator += now() - t0, t0 = now();
  if (s == VOX_OK) s = vox_bsr_transpose(ctx, &l0->p, &l0->r);
  if (s == VOX_OK) s = vox_bsr_multiply(ctx, a0, &l0->p, &ap);
  if (s == VOX_OK) s = vox_bsr_multiply(ctx, &l0->r, &ap, &l1->a);
  vox_bsr_free(&ap);
  tm->galerkin += now() - t0;
  return first_level_done(s, n, na, l0, l1, bc, pc, b1, pos1);
}

/* The levels below level 1 (built, with its near-null space b and node
 * positions pos, both taken over) and the coarsest inverse; sa freed on
 * failure. */
static vox_status coarse_levels(vox_context *ctx, const vox_sa_options *o, vox_sa_hierarchy *sa,
                                double *b, double *pos, double t0, vox_status s) {
  /* coarsen while the level is larger than the coarsest may be and the
   * aggregation still shrinks it */
  while (s == VOX_OK) {
    vox_sa_level *lv = &sa->level[sa->n_levels - 1];
    s = smoother_of(ctx, o, lv, &sa->timing);
    if (s != VOX_OK || lv->n_nodes * M <= o->max_coarse_dofs || sa->n_levels == MAX_LEVELS)
      break;
    double *b_next = NULL, *pos_next = NULL;
    s = coarsen(ctx, o, lv, b, pos, &sa->level[sa->n_levels], &b_next, &pos_next, &sa->timing);
    if (s != VOX_OK) break;
    free(b), free(pos);
    b = b_next, pos = pos_next;
    sa->n_levels++;
    if (sa->level[sa->n_levels - 1].n_nodes * 10 > lv->n_nodes * 9) { /* stalled */
      s = smoother_of(ctx, o, &sa->level[sa->n_levels - 1], &sa->timing);
      break;
    }
  }
  free(b), free(pos);
  const vox_sa_level *last = &sa->level[sa->n_levels - 1];
  if (s == VOX_OK && last->n_nodes * M > 4 * o->max_coarse_dofs)
    s = vox_error(ctx, VOX_ERR_UNSUPPORTED,
                  "smoothed aggregation: the aggregation stalled at %zu coarse dofs",
                  last->n_nodes * M);
  const double tc = now();
  if (s == VOX_OK) s = coarsest_inverse(ctx, &last->a, &sa->coarsest_inverse);
  sa->timing.coarsest = now() - tc;
  if (s != VOX_OK) {
    vox_sa_free(sa);
    return s;
  }
  sa->setup_seconds = now() - t0;
  return VOX_OK;
}

vox_status vox_sa_build(vox_context *ctx, const vox_sparse_hierarchy *h,
                        const vox_sa_options *o, vox_sa_hierarchy *sa) {
  const double t0 = now();
  memset(sa, 0, sizeof *sa);
  sa->level = calloc(MAX_LEVELS, sizeof *sa->level);
  if (!sa->level) return no_memory(ctx, "levels");
  sa->n_levels = 2;
  /* a level's near-null space: per node its six modes about the node's
   * position (the centroid of its aggregate), so that every level's modes
   * are the same global rigid motions, each aggregate's QR in its own
   * well-conditioned frame */
  double *b = NULL, *pos = NULL;
  vox_status s = first_level(ctx, o, h, &sa->level[0], &sa->level[1], &b, &pos, &sa->timing);
  return coarse_levels(ctx, o, sa, b, pos, t0, s);
}

vox_status vox_sa_build_assembled(vox_context *ctx, const vox_bsr *a0, const double *pos0,
                                  const vox_sa_options *o, vox_sa_hierarchy *sa) {
  const double t0 = now();
  memset(sa, 0, sizeof *sa);
  if (a0->br != 3 || a0->bc != 3 || a0->n_rows != a0->n_cols)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "smoothed aggregation: level 0 must be square with 3 x 3 blocks");
  sa->level = calloc(MAX_LEVELS, sizeof *sa->level);
  if (!sa->level) return no_memory(ctx, "levels");
  sa->n_levels = 2;
  double *b = NULL, *pos = NULL;
  vox_status s =
      first_level_assembled(ctx, o, a0, pos0, &sa->level[0], &sa->level[1], &b, &pos, &sa->timing);
  return coarse_levels(ctx, o, sa, b, pos, t0, s);
}

vox_status vox_sa_build_below(vox_context *ctx, const vox_sa_options *o, vox_sa_hierarchy *sa,
                              double *b1, double *pos1, double t0) {
  identity_on_dead(&sa->level[1].a, sa->level[1].dead);
  return coarse_levels(ctx, o, sa, b1, pos1, t0, VOX_OK);
}
