/* The smoothed-aggregation levels of the sparse solver (sparse_sa.h): the
 * loop over levels, the prolongator smoothing, the Galerkin triple
 * products and the coarsest level's dense inverse. */
#include "sparse_sa.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sparse_aggregation.h"
#include "sparse_sa_fine.h"

/* LAPACK: Cholesky factor and inverse of a symmetric positive definite matrix. */
extern void dpotrf_(const char *uplo, const int *n, double *a, const int *lda, int *info);
extern void dpotri_(const char *uplo, const int *n, double *a, const int *lda, int *info);

enum { M = VOX_SA_MODES, MAX_LEVELS = 16 };

void vox_sa_options_default(vox_sa_options *o) {
  o->max_coarse_dofs = 3000;
  o->omega = 4.0 / 3.0;
  o->point_diagonal = 0;
  o->power_iterations = 20;
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
    free(lv->dead);
  }
  free(sa->level);
  vox_bsr_free(&sa->coarsest_inverse);
  memset(sa, 0, sizeof *sa);
}

vox_status vox_sa_rigid_modes(vox_context *ctx, const vox_sparse_host_level *lv,
                              const int32_t *agg, size_t n_agg, double *b) {
  const int64_t px = lv->grid.nx + 1, py = lv->grid.ny + 1;
  double *centre = calloc(4 * (n_agg ? n_agg : 1), sizeof *centre); /* x, y, z, count */
  if (!centre) return no_memory(ctx, "centroids");
  if (agg) {
    for (size_t m = 0; m < lv->n_nodes; m++) {
      if (agg[m] < 0) continue;
      const int64_t q = lv->node_box[m];
      double *c = centre + 4 * (size_t)agg[m];
      c[0] += (double)(q % px), c[1] += (double)(q / px % py), c[2] += (double)(q / (px * py));
      c[3] += 1;
    }
    for (size_t a = 0; a < n_agg; a++)
      for (int k = 0; k < 3; k++) centre[4 * a + k] /= centre[4 * a + 3];
  }
  for (size_t m = 0; m < lv->n_nodes; m++) {
    const int64_t q = lv->node_box[m];
    const double *c = agg && agg[m] >= 0 ? centre + 4 * (size_t)agg[m] : NULL;
    const double x = (double)(q % px) - (c ? c[0] : 0), y = (double)(q / px % py) - (c ? c[1] : 0),
                 z = (double)(q / (px * py)) - (c ? c[2] : 0);
    const double rows[3][M] = {{1, 0, 0, -y, 0, z}, {0, 1, 0, x, -z, 0}, {0, 0, 1, 0, y, -x}};
    memcpy(b + 3 * M * m, rows, sizeof rows);
  }
  free(centre);
  return VOX_OK;
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
  double *d = calloc(n * n, sizeof *d);
  if (!d) return no_memory(ctx, "coarsest level");
  for (size_t i = 0; i < nn; i++)
    for (size_t k = a->row_start[i]; k < a->row_start[i + 1]; k++)
      for (int r = 0; r < M; r++)
        for (int c = 0; c < M; c++) /* column-major; A symmetric */
          d[(M * i + (size_t)r) + n * (M * (size_t)a->col[k] + (size_t)c)] =
              a->val[k * M * M + (size_t)(r * M + c)];
  const int ni = (int)n;
  int info = 0;
  dpotrf_("L", &ni, d, &ni, &info);
  if (info == 0) dpotri_("L", &ni, d, &ni, &info);
  if (info != 0) {
    free(d);
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "smoothed aggregation: the coarsest level (%zu dofs) is not positive "
                     "definite (LAPACK info %d)",
                     n, info);
  }
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

/* Level l + 1 from level l >= 1 (its a, dead, and near-null space b). */
static vox_status coarsen(vox_context *ctx, const vox_sa_options *o, vox_sa_level *lv,
                          const double *b, vox_sa_level *next, double **b_next) {
  const size_t n = lv->n_nodes;
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
  double *bc = s == VOX_OK ? malloc((na ? na : 1) * M * M * sizeof *bc) : NULL;
  next->dead = s == VOX_OK ? calloc(na ? na : 1, 1) : NULL;
  if (s == VOX_OK && (!bc || !next->dead)) s = no_memory(ctx, "coarse modes");
  vox_bsr t = {0}, at = {0}, ap = {0}, wp = {0};
  if (s == VOX_OK) s = vox_sa_tentative(ctx, n, M, agg, na, b, lv->dead, &t, bc, next->dead);
  free(agg);
  double lambda = lv->lambda_max;
  const vox_bsr *w = &lv->w;
  if (s == VOX_OK && o->point_diagonal) {
    s = vox_bsr_inverse_block_diagonal(ctx, &lv->a, lv->dead, 1, &wp);
    if (s == VOX_OK)
      s = vox_power_lambda_max(ctx, n * M, vox_bsr_apply_fn, &lv->a, vox_bsr_apply_fn, &wp,
                               o->power_iterations, &lambda);
    w = &wp;
  }
  if (s == VOX_OK) s = vox_bsr_multiply(ctx, &lv->a, &t, &at);
  if (s == VOX_OK) s = smooth_prolongator(ctx, &t, w, &at, o->omega / lambda, &lv->p);
  vox_bsr_free(&t), vox_bsr_free(&at), vox_bsr_free(&wp);
  if (s == VOX_OK) s = vox_bsr_transpose(ctx, &lv->p, &lv->r);
  if (s == VOX_OK) s = vox_bsr_multiply(ctx, &lv->a, &lv->p, &ap);
  if (s == VOX_OK) s = vox_bsr_multiply(ctx, &lv->r, &ap, &next->a);
  vox_bsr_free(&ap);
  if (s != VOX_OK) {
    free(bc);
    return s;
  }
  identity_on_dead(&next->a, next->dead);
  lv->n_aggregates = na;
  next->n_nodes = na;
  next->bn = M;
  *b_next = bc;
  return VOX_OK;
}

/* The smoother's W and lambda_max of a level l >= 1. */
static vox_status smoother_of(vox_context *ctx, const vox_sa_options *o, vox_sa_level *lv) {
  lv->scalar_nonzeros = scalar_entries(&lv->a);
  vox_status s = vox_bsr_inverse_block_diagonal(ctx, &lv->a, lv->dead, 0, &lv->w);
  if (s == VOX_OK)
    s = vox_power_lambda_max(ctx, lv->n_nodes * M, vox_bsr_apply_fn, &lv->a, vox_bsr_apply_fn,
                             &lv->w, o->power_iterations, &lv->lambda_max);
  return s;
}

/* Level 1 from the elements of level 0. */
static vox_status first_level(vox_context *ctx, const vox_sa_options *o,
                              const vox_sparse_hierarchy *h, vox_sa_level *l0, vox_sa_level *l1,
                              double **b1) {
  const vox_sparse_host_level *f0 = &h->level[0];
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
  if (s == VOX_OK) s = vox_sa_rigid_modes(ctx, f0, agg, na, b);
  if (s == VOX_OK) {
    bc = malloc((na ? na : 1) * M * M * sizeof *bc);
    l1->dead = calloc(na ? na : 1, 1);
    if (!bc || !l1->dead) s = no_memory(ctx, "coarse modes");
  }
  if (s == VOX_OK) s = vox_sa_tentative(ctx, n, 3, agg, na, b, f0->node_fixed, &t, bc, l1->dead);
  free(agg), free(b);
  double lambda = 0;
  if (s == VOX_OK) s = vox_sa_fine_inverse_block_diagonal(ctx, &f, o->point_diagonal, &w);
  if (s == VOX_OK)
    s = vox_power_lambda_max(ctx, 3 * n, vox_sa_fine_apply, &f, vox_bsr_apply_fn, &w,
                             o->power_iterations, &lambda);
  if (s == VOX_OK) s = vox_sa_fine_multiply(ctx, &f, &t, &at);
  if (s == VOX_OK) s = smooth_prolongator(ctx, &t, &w, &at, o->omega / lambda, &l0->p);
  vox_bsr_free(&t), vox_bsr_free(&w), vox_bsr_free(&at);
  if (s == VOX_OK) s = vox_bsr_transpose(ctx, &l0->p, &l0->r);
  if (s == VOX_OK) s = vox_sa_fine_multiply(ctx, &f, &l0->p, &ap);
  if (s == VOX_OK) s = vox_bsr_multiply(ctx, &l0->r, &ap, &l1->a);
  vox_bsr_free(&ap);
  vox_sa_fine_free(&f);
  if (s != VOX_OK) {
    free(bc);
    return s;
  }
  identity_on_dead(&l1->a, l1->dead);
  l0->n_nodes = n;
  l0->bn = 3;
  l0->n_aggregates = na;
  l1->n_nodes = na;
  l1->bn = M;
  *b1 = bc;
  return VOX_OK;
}

vox_status vox_sa_build(vox_context *ctx, const vox_sparse_hierarchy *h,
                        const vox_sa_options *o, vox_sa_hierarchy *sa) {
  const double t0 = now();
  memset(sa, 0, sizeof *sa);
  sa->level = calloc(MAX_LEVELS, sizeof *sa->level);
  if (!sa->level) return no_memory(ctx, "levels");
  sa->n_levels = 2;
  double *b = NULL;
  vox_status s = first_level(ctx, o, h, &sa->level[0], &sa->level[1], &b);
  /* coarsen while the level is larger than the coarsest may be and the
   * aggregation still shrinks it */
  while (s == VOX_OK) {
    vox_sa_level *lv = &sa->level[sa->n_levels - 1];
    s = smoother_of(ctx, o, lv);
    if (s != VOX_OK || lv->n_nodes * M <= o->max_coarse_dofs || sa->n_levels == MAX_LEVELS)
      break;
    double *b_next = NULL;
    s = coarsen(ctx, o, lv, b, &sa->level[sa->n_levels], &b_next);
    if (s != VOX_OK) break;
    free(b);
    b = b_next;
    sa->n_levels++;
    if (sa->level[sa->n_levels - 1].n_nodes * 10 > lv->n_nodes * 9) { /* stalled */
      s = smoother_of(ctx, o, &sa->level[sa->n_levels - 1]);
      break;
    }
  }
  free(b);
  const vox_sa_level *last = &sa->level[sa->n_levels - 1];
  if (s == VOX_OK && last->n_nodes * M > 4 * o->max_coarse_dofs)
    s = vox_error(ctx, VOX_ERR_UNSUPPORTED,
                  "smoothed aggregation: the aggregation stalled at %zu coarse dofs",
                  last->n_nodes * M);
  if (s == VOX_OK) s = coarsest_inverse(ctx, &last->a, &sa->coarsest_inverse);
  if (s != VOX_OK) {
    vox_sa_free(sa);
    return s;
  }
  sa->setup_seconds = now() - t0;
  return VOX_OK;
}
