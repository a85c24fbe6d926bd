/* SPDX-License-Identifier: BSD-3-Clause */
/* The smoothed-aggregation V-cycle on the element-free Galerkin stiffness
 * (efg_multigrid.h): the levels' hooks of vox_multigrid_cycle on host
 * arrays. */
#include "efg_multigrid.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sparse_aggregation.h"

/* The Chebyshev interval as fractions of the estimated lambda_max(W A):
 * above it for safety (the power method estimates from below), a tenth of
 * it below, the range the smoothing must damp (multigrid.c's). */
static const double CHEBYSHEV_UPPER = 1.1, CHEBYSHEV_LOWER = 0.1;

void vox_efg_sa_options_default(vox_efg_sa_options *o) {
  o->degree = 2;
  o->aggregate = 3;
  o->strength = 0.2;
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static size_t level_dofs(const vox_efg_sa *sa, int l) {
  const vox_sa_level *lv = &sa->h.level[l];
  return lv->n_nodes * (size_t)lv->bn;
}

/* y = A_l x */
static void level_apply(const vox_efg_sa *sa, int l, const double *x, double *y) {
  if (l == 0) sa->apply0(sa->k, x, y);
  else vox_bsr_apply(&sa->h.level[l].a, x, y);
}

/* res = b_l - A_l x_l */
static void level_residual(vox_efg_sa *sa, int l) {
  const size_t n = level_dofs(sa, l);
  double *res = sa->res[l];
  const double *b = sa->b[l];
  level_apply(sa, l, sa->x[l], res);
  const ptrdiff_t nn = (ptrdiff_t)n;
#pragma omp parallel for schedule(static)
  for (ptrdiff_t i = 0; i < nn; i++) res[i] = b[i] - res[i];
}

/* options.degree steps of Chebyshev iteration on W A (Saad, Iterative
 * Methods, algorithm 12.1, as multigrid.c's): d = alpha W (b - A x) +
 * beta d, x += d; from x = 0 unless warm. */
static vox_status smooth(vox_efg_sa *sa, int l, int warm) {
  const vox_sa_level *lv = &sa->h.level[l];
  const size_t n = level_dofs(sa, l);
  const ptrdiff_t nn = (ptrdiff_t)n;
  double *x = sa->x[l], *d = sa->d[l], *res = sa->res[l];
  const double upper = CHEBYSHEV_UPPER * lv->lambda_max, lower = CHEBYSHEV_LOWER * lv->lambda_max;
  const double theta = 0.5 * (upper + lower), delta = 0.5 * (upper - lower);
  const double sigma = theta / delta;
  double rho = 1 / sigma, alpha = 1 / theta, beta = 0;
  for (int step = 0; step < sa->options.degree; step++) {
    if (step == 0 && !warm) {
      memset(x, 0, n * sizeof *x);
      memcpy(res, sa->b[l], n * sizeof *res);
    } else {
      level_residual(sa, l);
    }
    if (l == 0 && sa->smoother0) /* res's second half: W res, or M res */
      sa->smoother0(sa->smoother0_self, res, res + n);
    else
      vox_bsr_apply(&lv->w, res, res + n);
    const double *wr = res + n;
#pragma omp parallel for schedule(static)
    for (ptrdiff_t i = 0; i < nn; i++) {
      d[i] = alpha * wr[i] + (step == 0 ? 0 : beta * d[i]);
      x[i] += d[i];
    }
    const double rho_new = 1 / (2 * sigma - rho);
    alpha = 2 * rho_new / delta;
    beta = rho_new * rho;
    rho = rho_new;
  }
  return VOX_OK;
}

static vox_status presmooth(void *self, int l, int warm) { return smooth(self, l, warm); }
static vox_status postsmooth(void *self, int l) { return smooth(self, l, 1); }

static vox_status restrict_residual(void *self, int l) {
  vox_efg_sa *sa = self;
  level_residual(sa, l);
  vox_bsr_apply(&sa->h.level[l].r, sa->res[l], sa->b[l + 1]);
  return VOX_OK;
}

static vox_status coarse_solve(void *self, int l) {
  vox_efg_sa *sa = self;
  vox_bsr_apply(&sa->h.coarsest_inverse, sa->b[l], sa->x[l]);
  return VOX_OK;
}

static vox_status prolong(void *self, int l) {
  vox_efg_sa *sa = self;
  double *px = sa->res[l], *x = sa->x[l];
  vox_bsr_apply(&sa->h.level[l].p, sa->x[l + 1], px);
  const ptrdiff_t nn = (ptrdiff_t)level_dofs(sa, l);
#pragma omp parallel for schedule(static)
  for (ptrdiff_t i = 0; i < nn; i++) x[i] += px[i];
  return VOX_OK;
}

static const vox_mg_level_ops level_ops = {.presmooth = presmooth,
                                           .restrict_residual = restrict_residual,
                                           .coarse_solve = coarse_solve,
                                           .prolong = prolong,
                                           .postsmooth = postsmooth};

static void free_vectors(vox_efg_sa *sa) {
  for (int l = 0; l < sa->n_vectors; l++) {
    if (l > 0) free(sa->x[l]), free(sa->b[l]);
    free(sa->res[l]), free(sa->d[l]);
  }
  free(sa->x), free(sa->b), free(sa->res), free(sa->d);
  sa->x = sa->b = sa->res = sa->d = NULL;
  sa->n_vectors = 0;
}

/* The levels of the design iteration before (not the fixed coarse space). */
static void free_levels(vox_efg_sa *sa) {
  free_vectors(sa);
  vox_sa_free(&sa->h);
}

static void sa_destroy(void *self) {
  vox_efg_sa *sa = self;
  free_levels(sa);
  vox_efg_coarse_space_free(&sa->cs);
  sa->cs_built = 0;
}

/* The levels on the fixed aggregates (efg_coarse_space.h): level 0's W,
 * lambda_max(W K) and P = T - omega / lambda W K T on the kept pattern,
 * A_1 = P^T K P, then the sparse solver's levels below A_1. */
static vox_status build_fixed(vox_efg_sa *sa, const vox_sa_options *o) {
  const double t0 = now();
  vox_context *ctx = sa->ctx;
  const vox_bsr *k = sa->k;
  if (!sa->cs_built) {
    TRY(vox_efg_coarse_space_build(ctx, k, sa->pos, sa->coord, sa->options.aggregate, &sa->cs));
    sa->cs_built = 1;
  }
  vox_sa_hierarchy *h = &sa->h;
  memset(h, 0, sizeof *h);
  h->level = calloc(VOX_SA_MAX_LEVELS, sizeof *h->level);
  if (!h->level) return vox_error(ctx, VOX_ERR_NO_MEMORY, "element-free Galerkin: out of memory");
  h->n_levels = 2;
  vox_sa_level *l0 = &h->level[0], *l1 = &h->level[1];
  const size_t n = k->n_rows, na = sa->cs.n_agg;
  double *b1 = malloc((na ? na : 1) * VOX_SA_MODES * VOX_SA_MODES * sizeof *b1);
  double *pos1 = malloc((na ? na : 1) * 3 * sizeof *pos1);
  l1->dead = malloc(na ? na : 1);
  vox_status s = b1 && pos1 && l1->dead
                     ? VOX_OK
                     : vox_error(ctx, VOX_ERR_NO_MEMORY, "element-free Galerkin: out of memory");
  double t = now();
  if (s == VOX_OK) s = vox_bsr_inverse_block_diagonal(ctx, k, NULL, 0, &l0->w);
  if (s == VOX_OK)
    s = vox_power_lambda_max(ctx, 3 * n, sa->apply0, k, vox_bsr_apply_fn, &l0->w,
                             o->power_iterations, &l0->lambda_max);
  if (s == VOX_OK)
    s = vox_efg_coarse_space_prolongator(ctx, &sa->cs, k, &l0->w, o->omega / l0->lambda_max,
                                         &l0->p);
  h->timing.prolongator += now() - t, t = now();
  vox_bsr kp = {0};
  if (s == VOX_OK) s = vox_bsr_transpose(ctx, &l0->p, &l0->r);
  if (s == VOX_OK) s = vox_bsr_multiply(ctx, k, &l0->p, &kp);
  if (s == VOX_OK) s = vox_bsr_multiply(ctx, &l0->r, &kp, &l1->a);
  vox_bsr_free(&kp);
  h->timing.galerkin += now() - t;
  if (s != VOX_OK) {
    free(b1), free(pos1);
    vox_sa_free(h);
    return s;
  }
  l0->n_nodes = n, l0->bn = 3, l0->n_aggregates = na;
  l0->scalar_nonzeros = 9 * vox_bsr_blocks(k);
  l1->n_nodes = na, l1->bn = VOX_SA_MODES;
  memcpy(l1->dead, sa->cs.dead1, na);
  memcpy(b1, sa->cs.b1, na * VOX_SA_MODES * VOX_SA_MODES * sizeof *b1);
  memcpy(pos1, sa->cs.pos1, na * 3 * sizeof *pos1);
  return vox_sa_build_below(ctx, o, h, b1, pos1, t0);
}

static vox_status sa_setup(void *self) {
  vox_efg_sa *sa = self;
  free_levels(sa);
  vox_sa_options o;
  vox_sa_options_default(&o);
  o.strength = sa->options.strength;
  if (sa->options.aggregate > 0) TRY(build_fixed(sa, &o));
  else TRY(vox_sa_build_assembled(sa->ctx, sa->k, sa->pos, &o, &sa->h));
  if (sa->smoother0) /* Chebyshev's interval for M K instead of W K */
    TRY(vox_power_lambda_max(sa->ctx, 3 * sa->k->n_rows, sa->apply0, sa->k, sa->smoother0,
                             sa->smoother0_self, o.power_iterations, &sa->h.level[0].lambda_max));
  const int nl = sa->h.n_levels;
  sa->x = calloc((size_t)nl, sizeof *sa->x);
  sa->b = calloc((size_t)nl, sizeof *sa->b);
  sa->res = calloc((size_t)nl, sizeof *sa->res);
  sa->d = calloc((size_t)nl, sizeof *sa->d);
  int ok = sa->x && sa->b && sa->res && sa->d;
  if (ok) sa->n_vectors = nl;
  for (int l = 0; ok && l < nl; l++) {
    const size_t n = level_dofs(sa, l) + 1;
    if (l > 0) {
      sa->x[l] = malloc(n * sizeof *sa->x[l]);
      sa->b[l] = malloc(n * sizeof *sa->b[l]);
      ok = sa->x[l] && sa->b[l];
    }
    sa->res[l] = malloc(2 * n * sizeof *sa->res[l]); /* the residual and W times it */
    sa->d[l] = malloc(n * sizeof *sa->d[l]);
    ok = ok && sa->res[l] && sa->d[l];
  }
  if (!ok) {
    free_levels(sa);
    return vox_error(sa->ctx, VOX_ERR_NO_MEMORY,
                     "element-free Galerkin: out of memory (smoothed aggregation)");
  }
  return VOX_OK;
}

static vox_status sa_apply(void *self, const void *r, void *z) {
  vox_efg_sa *sa = self;
  if (sa->n_vectors == 0)
    return vox_error(sa->ctx, VOX_ERR_INVALID_ARGUMENT,
                     "element-free Galerkin: the multigrid preconditioner is not set up");
  sa->b[0] = (double *)(uintptr_t)r; /* read only: the hooks write no level's b but below 0 */
  sa->x[0] = z;
  return vox_multigrid_cycle(&level_ops, sa, sa->h.n_levels, NULL);
}

static const vox_pc_ops sa_ops = {
    .name = "smoothed-aggregation", .setup = sa_setup, .apply = sa_apply, .destroy = sa_destroy};

void vox_efg_sa_set_smoother(vox_efg_sa *sa, vox_host_apply apply, const void *self) {
  sa->smoother0 = apply;
  sa->smoother0_self = self;
}

vox_pc vox_efg_sa_make(vox_efg_sa *sa, vox_context *ctx, const vox_bsr *k, const double *pos,
                       const int32_t *coord, vox_host_apply apply0,
                       const vox_efg_sa_options *options) {
  *sa = (vox_efg_sa){.ctx = ctx,
                     .k = k,
                     .pos = pos,
                     .coord = coord,
                     .apply0 = apply0 ? apply0 : vox_bsr_apply_fn};
  if (options) sa->options = *options;
  else vox_efg_sa_options_default(&sa->options);
  return (vox_pc){.ops = &sa_ops, .self = sa};
}
