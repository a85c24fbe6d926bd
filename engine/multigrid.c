/* SPDX-License-Identifier: BSD-3-Clause */
/* Geometric multigrid V- or W-cycle as a PCG preconditioner (Martinez-Frutos et al. 2017
 * section 4.1, Arbenz et al. 2014 section 3): nested grids of vox_grid_coarsen,
 * Galerkin coarse operators R A P kept as 27-block stencils, damped Jacobi
 * or Chebyshev smoothing, and a direct solve on the coarsest level. This
 * file decides; the backend computes. Pre- and post-smoothing are the same
 * symmetric smoother, so the cycle is a symmetric operator, as conjugate
 * gradients require. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "multigrid.h"

#include "pc.h"
#include "recorded.h"

/* Bounds of the Chebyshev smoother as fractions of the estimated largest
 * eigenvalue of D^-1 A: above it for safety (the estimate is from below), and
 * a tenth of it as the lower end, the range smoothing must damp. */
static const double CHEBYSHEV_UPPER = 1.1, CHEBYSHEV_LOWER = 0.1;
/* Lanczos steps of the eigenvalue estimate. Power iteration is not enough:
 * at a solid/void interface of a 1e-9 contrast the largest eigenvalues
 * belong to modes on a few nodes and lie close together, power iteration
 * creeps towards them, and a Chebyshev interval that ends below them turns
 * the V-cycle indefinite (seen on a 128 x 64 x 64 cantilever). Lanczos
 * converges to the extreme eigenvalue far faster. */
enum { LANCZOS_STEPS = 16 };
_Static_assert((int)LANCZOS_STEPS <= (int)VOX_LANCZOS_MAX_STEPS,
               "stencil_lanczos takes them in one call");

static size_t grid_dofs(const vox_grid *g, int dpn) { return (size_t)vox_grid_nodes(g) * (size_t)dpn; }

size_t vox_mg_coarse_dofs(const vox_backend *be, const vox_solver_options *options) {
  if (options->mg_coarse_dofs > 0) return (size_t)options->mg_coarse_dofs;
  return be->ops->mg->coarse_dofs ? be->ops->mg->coarse_dofs : VOX_MG_COARSE_DOFS;
}

int vox_mg_levels_for(const vox_grid *grid, int dofs_per_node, int requested,
                      size_t max_coarse_dofs) {
  int levels = 1;
  vox_grid g = *grid;
  while (requested > 0 ? levels < requested : grid_dofs(&g, dofs_per_node) > max_coarse_dofs) {
    const vox_grid c = vox_grid_coarsen(&g);
    if (c.nx == g.nx && c.ny == g.ny && c.nz == g.nz) break; /* a single voxel */
    /* periodic levels nest only with even sizes, and keep even sizes
     * themselves so that their element colours do not meet across the wrap */
    if (g.periodic && (g.nx % 2 || g.ny % 2 || g.nz % 2 || c.nx % 2 || c.ny % 2 || c.nz % 2))
      break;
    g = c;
    levels++;
  }
  return levels < 2 ? 2 : levels;
}

/* Level 0 borrows its inverse diagonal and residual from the caller. */
static void level_free(vox_backend *be, vox_mg_level *l, int owns_borrowed) {
  vox_vec *v[] = {&l->b, &l->x, &l->d};
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
    if (v[i]->data) be->ops->vec->destroy(be, v[i]);
  if (owns_borrowed && l->r.data) be->ops->vec->destroy(be, &l->r);
  if (owns_borrowed && l->inv_diag.data) be->ops->vec->destroy(be, &l->inv_diag);
  if (l->stencil) be->ops->mg->stencil_destroy(be, l->stencil);
}

static void free_recording(vox_multigrid *mg) {
  if (mg->recording) mg->be->ops->sparse->recording_free(mg->be, mg->recording);
  mg->recording = NULL;
}

/* The recorded cycle, spent: the next setup changes its scalars, a release
 * its vectors; the next cycle finishes the setup's pending work first. */
static void forget_recording(vox_multigrid *mg) {
  free_recording(mg);
  mg->cycled = 0;
}

void vox_mg_destroy(vox_multigrid *mg) {
  if (!mg) return;
  forget_recording(mg);
  for (int l = 0; mg->level && l < mg->n_levels; l++) level_free(mg->be, &mg->level[l], l > 0);
  for (int c = 0; c < mg->n_translations; c++)
    if (mg->translation[c].data) mg->be->ops->vec->destroy(mg->be, &mg->translation[c]);
  if (mg->held_mask.data) mg->be->ops->vec->destroy(mg->be, &mg->held_mask);
  free(mg->level);
  free(mg->visits);
  free(mg);
}

/* The unit translation vectors of the coarsest level of a periodic
 * hierarchy: 1/sqrt(masters) on every master dof of one component. */
static vox_status make_translations(vox_multigrid *mg) {
  vox_backend *be = mg->be;
  const vox_grid *g = &mg->level[mg->n_levels - 1].grid;
  const int dpn = mg->dofs_per_node;
  const size_t n = grid_dofs(g, dpn);
  double *host = malloc(n * sizeof *host);
  if (!host) return vox_error(be->ctx, VOX_ERR_NO_MEMORY, "out of memory");
  const double value = 1 / sqrt((double)vox_grid_elements(g)); /* masters = elements */
  vox_status s = VOX_OK;
  for (int c = 0; c < dpn && s == VOX_OK; c++) {
    size_t d = 0;
    for (int64_t k = 0; k <= g->nz; k++)
      for (int64_t j = 0; j <= g->ny; j++)
        for (int64_t i = 0; i <= g->nx; i++, d += (size_t)dpn)
          for (int r = 0; r < dpn; r++)
            host[d + (size_t)r] = r == c && !vox_is_image(g->nx, g->ny, g->nz, i, j, k) ? value : 0;
    s = be->ops->vec->upload(be, &mg->translation[c], host);
  }
  free(host);
  return s;
}

/* The coarsest operator of a periodic hierarchy is singular with the
 * translations (P maps the coarse translations onto the fine ones, which
 * the fine operator annihilates). For its factorisation one node is held
 * (Zhang et al. 2023 section 4.2 holds the corner): its rows and columns become the
 * identity. With the restricted residual orthogonal to the translations,
 * the held system's solution, 0 on the held node, solves the singular one;
 * its identity rows would give back the residual there instead, a spike of
 * the stiffness's scale that made the W-cycle indefinite on a 64^3 cell of
 * 1 mm voxels (held_mask takes it out). Removing the translations from
 * that solution too keeps the cycle symmetric.
 *
 * The held node is the stiffest master (the largest trace of its diagonal
 * block; the first of equals), not the corner: once a design leaves the
 * corner void, holding it pins the structure only through the void's
 * stiffness (1e-9 of the solid's), and the rounding of single-precision
 * stencils (VOX_PRECISION_MIXED) leaves the translations an
 * energy of about 1e-7 of the stiffness, of either sign, so the held matrix
 * can turn indefinite: a 32^3 design with a void corner replayed on 64^3
 * and 128^3 grids, its levels rounded to float, fails with the corner held
 * and factors with the stiffest node held (in double both factor;
 * docs/experiments.md). */
static vox_status hold_node(vox_multigrid *mg) {
  vox_backend *be = mg->be;
  vox_stencil *st = mg->level[mg->n_levels - 1].stencil;
  const vox_grid *g = &mg->level[mg->n_levels - 1].grid;
  const int dpn = mg->dofs_per_node, bs = dpn * dpn;
  const size_t nodes = (size_t)vox_grid_nodes(g);
  double *v = malloc(nodes * 27 * (size_t)bs * sizeof *v);
  if (!v) return vox_error(be->ctx, VOX_ERR_NO_MEMORY, "out of memory");
  vox_status s = be->ops->mg->stencil_download(be, st, v);
  int64_t held = 0;
  double stiffest = -INFINITY;
  for (int64_t k = 0; k < g->nz && s == VOX_OK; k++)
    for (int64_t j = 0; j < g->ny; j++)
      for (int64_t i = 0; i < g->nx; i++) {
        const int64_t n = (k * (g->ny + 1) + j) * (g->nx + 1) + i;
        const double *centre = v + ((size_t)n * 27 + 13) * (size_t)bs;
        double trace = 0;
        for (int d = 0; d < dpn; d++) trace += centre[d * (dpn + 1)];
        if (trace > stiffest) stiffest = trace, held = n;
      }
  for (int64_t k = 0; k < g->nz && s == VOX_OK; k++)
    for (int64_t j = 0; j < g->ny; j++)
      for (int64_t i = 0; i < g->nx; i++) {
        const int64_t n = (k * (g->ny + 1) + j) * (g->nx + 1) + i;
        for (int t = 0; t < 27; t++) {
          double *blk = v + ((size_t)n * 27 + (size_t)t) * (size_t)bs;
          if (n == held) {
            for (int e = 0; e < bs; e++) blk[e] = t == 13 && e % (dpn + 1) == 0;
          } else if (vox_neighbour_node(g->nx, g->ny, g->nz, 1, i, j, k, t) == held) {
            memset(blk, 0, (size_t)bs * sizeof *blk);
          }
        }
      }
  if (s == VOX_OK) s = be->ops->mg->stencil_upload(be, st, v);
  /* the mask reuses v's first n values */
  const size_t n = nodes * (size_t)dpn;
  for (size_t d = 0; d < n; d++) v[d] = d / (size_t)dpn != (size_t)held;
  if (s == VOX_OK) s = be->ops->vec->upload(be, &mg->held_mask, v);
  free(v);
  return s;
}

/* v -= its components along the translations (orthonormal). */
static vox_status remove_translations(vox_multigrid *mg, vox_vec *v) {
  vox_backend *be = mg->be;
  for (int c = 0; c < mg->n_translations; c++) {
    double a;
    TRY(be->ops->vec->dot(be, v, &mg->translation[c], &a));
    TRY(be->ops->vec->axpy(be, v, -a, &mg->translation[c]));
  }
  return VOX_OK;
}

vox_status vox_mg_remove_translations(vox_multigrid *mg, vox_vec *v) {
  if (!mg->n_translations) return VOX_OK;
  vox_backend *be = mg->be;
  const int last = mg->n_levels - 1, dpn = mg->dofs_per_node;
  /* R preserves sums over the masters (every fine node hands on a total
   * weight of 1), so the coarsest level sees the fine sums; P maps the
   * coarse translations onto the fine ones exactly */
  for (int l = 0; l < last; l++)
    TRY(be->ops->mg->restrict_residual(be, &mg->level[l].grid, dpn, l == 0 ? v : &mg->level[l].b,
                                       &mg->level[l + 1].b));
  const double ratio = (double)vox_grid_elements(&mg->level[last].grid) /
                       (double)vox_grid_elements(&mg->level[0].grid);
  TRY(be->ops->vec->set(be, &mg->level[last].x, 0));
  for (int c = 0; c < mg->n_translations; c++) {
    double s;
    TRY(be->ops->vec->dot(be, &mg->level[last].b, &mg->translation[c], &s));
    TRY(be->ops->vec->axpy(be, &mg->level[last].x, -s * ratio, &mg->translation[c]));
  }
  for (int l = last - 1; l >= 0; l--) {
    if (l > 0) TRY(be->ops->vec->set(be, &mg->level[l].x, 0));
    TRY(be->ops->mg->prolong_add(be, &mg->level[l].grid, dpn, &mg->level[l + 1].x,
                                 l == 0 ? v : &mg->level[l].x));
  }
  return VOX_OK;
}

/* Smoothing steps on level l (the fine level may take fewer). */
static int steps_on(const vox_solver_options *options, int l) {
  return l == 0 && options->fine_smoothing_steps > 0 ? options->fine_smoothing_steps
                                                     : options->smoothing_steps;
}

/* Whether level l keeps the smoothing direction d between steps: only a
 * Chebyshev smoother of more than one step reads it again (beta d, beta 0
 * on a first step and always for Jacobi). The fine level of the
 * optimizer's elasticity (one step) so keeps none: 8 bytes a dof less, the
 * same iterates. The coarse levels keep theirs (an eighth of the size,
 * and the backends' stencil steps take no NULL). */
static int keeps_direction(const vox_solver_options *options, int l) {
  return l > 0 || (options->smoother == VOX_SMOOTHER_CHEBYSHEV && steps_on(options, l) > 1);
}

void vox_mg_layout(const vox_backend *be, const vox_grid *grid, int dpn,
                   const vox_solver_options *options, vox_multigrid *mg, vox_layout *out) {
  const int levels = mg ? mg->n_levels
                        : vox_mg_levels_for(grid, dpn, options->mg_levels,
                                            vox_mg_coarse_dofs(be, options));
  const int mixed = options->precision == VOX_PRECISION_MIXED;
  /* an FP16-packed level keeps the float buffer and adds its scales */
  const double scales = mixed && be->ops->mg->stencil_mixed_dof_bytes
                            ? be->ops->mg->stencil_mixed_dof_bytes(be, grid)
                            : 0;
  vox_grid g = *grid;
  for (int l = 0; l < levels; l++) {
    vox_mg_level *lv = mg ? &mg->level[l] : NULL;
    const size_t n = grid_dofs(&g, dpn);
    if (l > 0) {
      vox_layout_object(out, mixed ? "multigrid stencil (float)" : "multigrid stencil (double)",
                        (double)be->ops->mg->stencil_blocks * dpn * (double)n *
                                (mixed ? sizeof(float) : sizeof(double)) +
                            scales * (double)n);
      vox_layout_vec(out, "multigrid: inverse diagonal", n, VOX_DOUBLE, lv ? &lv->inv_diag : NULL);
      vox_layout_vec(out, "multigrid: b", n, VOX_DOUBLE, lv ? &lv->b : NULL);
      vox_layout_vec(out, "multigrid: x", n, VOX_DOUBLE, lv ? &lv->x : NULL);
    }
    if (l < levels - 1) { /* the coarsest level only solves */
      if (l > 0) vox_layout_vec(out, "multigrid: r", n, VOX_DOUBLE, lv ? &lv->r : NULL);
      if (keeps_direction(options, l))
        vox_layout_vec(out, "multigrid: d", n, VOX_DOUBLE, lv ? &lv->d : NULL);
    } else {
      if (n <= be->ops->mg->dense_coarse_dofs) /* L and L^-1 */
        vox_layout_object(out, "multigrid coarsest factor (L, L^-1)",
                          2 * sizeof(double) * (double)n * (double)n);
      for (int c = 0; c < dpn && grid->periodic; c++)
        vox_layout_vec(out, "multigrid: a translation (periodic)", n, VOX_DOUBLE,
                       mg ? &mg->translation[c] : NULL);
      if (grid->periodic)
        vox_layout_vec(out, "multigrid: the held node's mask (periodic)", n, VOX_DOUBLE,
                       mg ? &mg->held_mask : NULL);
    }
    g = vox_grid_coarsen(&g);
  }
}

vox_status vox_mg_create_released(vox_backend *be, vox_operator *fine, const vox_grid *grid,
                                  int dofs_per_node, double fine_bound,
                                  const vox_solver_options *options, vox_multigrid **out) {
  *out = NULL;
  vox_multigrid *mg = calloc(1, sizeof *mg);
  if (!mg) return vox_error(be->ctx, VOX_ERR_NO_MEMORY, "out of memory");
  mg->be = be;
  mg->fine = fine;
  mg->dofs_per_node = dofs_per_node;
  mg->fine_bound = fine_bound;
  mg->options = *options;
  mg->released = 1;
  mg->n_levels = vox_mg_levels_for(grid, dofs_per_node, options->mg_levels,
                                   vox_mg_coarse_dofs(be, options));
  mg->level = calloc((size_t)mg->n_levels, sizeof *mg->level);
  mg->visits = calloc((size_t)mg->n_levels, sizeof *mg->visits);
  if (!mg->level || !mg->visits) {
    vox_mg_destroy(mg);
    return vox_error(be->ctx, VOX_ERR_NO_MEMORY, "out of memory");
  }
  /* Periodic cells too: their W-cycle broke down until the coarsest
   * solve's held node gave back 0 (hold_node); since, it takes as many CG
   * iterations as V or fewer (docs/experiments.md). */
  const int w_cycle = options->mg_cycle != VOX_MG_CYCLE_V;
  vox_grid g = *grid;
  for (int l = 0; l < mg->n_levels; l++) {
    mg->level[l].grid = g;
    /* W: levels 2 and deeper twice; the coarsest level's solve is exact,
     * and a second visit would only repeat it */
    mg->visits[l] = vox_multigrid_visits(w_cycle, l, mg->n_levels);
    g = vox_grid_coarsen(&g);
  }
  *out = mg;
  return VOX_OK;
}

vox_status vox_mg_acquire(vox_multigrid *mg) {
  if (!mg->released) return VOX_OK;
  vox_backend *be = mg->be;
  const int dpn = mg->dofs_per_node;
  vox_status s = VOX_OK;
  for (int l = 1; l < mg->n_levels && s == VOX_OK; l++) {
    vox_mg_level *lv = &mg->level[l];
    s = be->ops->mg->stencil_create(be, &lv->grid, dpn, mg->options.precision, &lv->stencil);
    /* a level that went back to float storage stays there */
    int was;
    if (s == VOX_OK && mg->full_storage && be->ops->mg->stencil_full_storage)
      s = be->ops->mg->stencil_full_storage(be, lv->stencil, &was);
  }
  if (s == VOX_OK) {
    vox_layout layout;
    vox_layout_init(&layout);
    vox_mg_layout(be, &mg->level[0].grid, dpn, &mg->options, mg, &layout);
    s = vox_layout_create(be, &layout);
  }
  mg->released = 0;
  if (s == VOX_OK && mg->level[0].grid.periodic) {
    mg->n_translations = dpn;
    s = make_translations(mg);
  }
  if (s != VOX_OK) vox_mg_release(mg);
  return s;
}

void vox_mg_release(vox_multigrid *mg) {
  forget_recording(mg);
  for (int l = 0; l < mg->n_levels; l++) {
    vox_mg_level *lv = &mg->level[l];
    level_free(mg->be, lv, l > 0);
    lv->b = lv->x = lv->r = lv->d = (vox_vec){0};
    if (l > 0) lv->inv_diag = (vox_vec){0};
    lv->stencil = NULL;
  }
  for (int c = 0; c < mg->n_translations; c++)
    if (mg->translation[c].data) mg->be->ops->vec->destroy(mg->be, &mg->translation[c]);
  if (mg->held_mask.data) mg->be->ops->vec->destroy(mg->be, &mg->held_mask);
  mg->n_translations = 0;
  mg->released = 1;
}

vox_status vox_mg_create(vox_backend *be, vox_operator *fine, const vox_grid *grid,
                         int dofs_per_node, double fine_bound, const vox_solver_options *options,
                         vox_multigrid **out) {
  TRY(vox_mg_create_released(be, fine, grid, dofs_per_node, fine_bound, options, out));
  const vox_status s = vox_mg_acquire(*out);
  if (s != VOX_OK) {
    vox_mg_destroy(*out);
    *out = NULL;
  }
  return s;
}

/* The fine level's products (y = A_l x below, and those of the fused
 * steps) compute in single precision when the solver runs in
 * VOX_PRECISION_MIXED (the coarse stencils are stored in float then
 * already): the smoother, its eigenvalue bound and the residual only shape
 * the preconditioner, which the outer CG in double corrects. */
static int level_flags(const vox_multigrid *mg) {
  return mg->options.precision == VOX_PRECISION_MIXED ? VOX_APPLY_SINGLE : 0;
}

static vox_status level_apply(vox_multigrid *mg, int l, const vox_vec *x, vox_vec *y) {
  vox_backend *be = mg->be;
  if (l == 0) return be->ops->op->apply(be, mg->fine, x, y, level_flags(mg));
  return be->ops->mg->stencil_apply(be, mg->level[l].stencil, x, y);
}

/* Number of eigenvalues of the symmetric tridiagonal T (diagonal a,
 * off-diagonal b) below x, by the signs of its Sturm sequence. */
static int eigenvalues_below(const double *a, const double *b, int n, double x) {
  int count = 0;
  double d = 1;
  for (int i = 0; i < n; i++) {
    d = a[i] - x - (i > 0 ? b[i - 1] * b[i - 1] / d : 0);
    if (d == 0) d = 1e-300;
    if (d < 0) count++;
  }
  return count;
}

/* The largest eigenvalue of a symmetric tridiagonal matrix, by bisection
 * inside its Gershgorin interval. */
static double tridiagonal_max_eigenvalue(const double *a, const double *b, int n) {
  double lo = INFINITY, hi = -INFINITY;
  for (int i = 0; i < n; i++) {
    const double r = (i > 0 ? fabs(b[i - 1]) : 0) + (i < n - 1 ? fabs(b[i]) : 0);
    lo = fmin(lo, a[i] - r), hi = fmax(hi, a[i] + r);
  }
  for (int it = 0; it < 100 && hi - lo > 1e-12 * fabs(hi); it++) {
    const double mid = 0.5 * (lo + hi);
    if (eigenvalues_below(a, b, n, mid) == n) hi = mid; else lo = mid;
  }
  return hi;
}

/* Largest eigenvalue of D^-1 A (a lower estimate) from the Lanczos
 * tridiagonal of Jacobi-preconditioned conjugate gradients on A x = b for a
 * fixed pseudo-random b (Saad, Iterative Methods, section 6.7.3): with
 * alpha_j, beta_j of CG, T_jj = 1/alpha_j + beta_{j-1}/alpha_{j-1} and
 * T_j,j+1 = sqrt(beta_j)/alpha_j. `r`, `z`, `p` and `q` are work vectors
 * of the level's size. The products are those of the smoother (in single
 * precision where it runs so), whose spectrum the bound is for. */
static vox_status estimate_lambda_max(vox_multigrid *mg, int l, vox_vec *r, vox_vec *z,
                                      vox_vec *p, vox_vec *q) {
  vox_backend *be = mg->be;
  vox_mg_level *lv = &mg->level[l];
  /* the same start on every run and backend, made on the device */
  const uint64_t seed = 0x9e3779b97f4a7c15u;
  double alpha[LANCZOS_STEPS], beta[LANCZOS_STEPS], diag[LANCZOS_STEPS], off[LANCZOS_STEPS];
  int steps = 0;
  if (l > 0 && be->ops->mg->stencil_lanczos) {
    /* the same steps with the scalars on the device: no host round trip
     * per step (on the small levels the steps are all latency) */
    TRY(be->ops->mg->stencil_lanczos(be, lv->stencil, &lv->inv_diag, seed, LANCZOS_STEPS, r, z, p,
                                     q, alpha, beta, &steps));
  } else {
    double rz;
    TRY(be->ops->vec->random(be, r, seed, 0));
    TRY(be->ops->vec->mult(be, z, r, &lv->inv_diag));
    TRY(be->ops->vec->copy(be, p, z));
    TRY(be->ops->vec->dot(be, r, z, &rz));
    while (steps < LANCZOS_STEPS) {
      double pq, rz_new;
      TRY(level_apply(mg, l, p, q));
      TRY(be->ops->vec->dot(be, p, q, &pq));
      if (!(pq > 0) || !(rz > 0)) break; /* converged to rounding, or breakdown */
      alpha[steps] = rz / pq;
      TRY(be->ops->vec->axpy(be, r, -alpha[steps], q));
      TRY(be->ops->vec->mult(be, z, r, &lv->inv_diag));
      TRY(be->ops->vec->dot(be, r, z, &rz_new));
      beta[steps] = rz_new / rz;
      TRY(be->ops->vec->xpay(be, p, beta[steps], z));
      rz = rz_new;
      steps++;
    }
  }
  if (steps == 0)
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT,
                     "multigrid level %d: the operator is not positive definite", l);
  for (int j = 0; j < steps; j++) {
    diag[j] = 1 / alpha[j] + (j > 0 ? beta[j - 1] / alpha[j - 1] : 0);
    off[j] = sqrt(beta[j]) / alpha[j];
  }
  lv->lambda_max = tridiagonal_max_eigenvalue(diag, off, steps);
  return VOX_OK;
}

vox_status vox_mg_setup(vox_multigrid *mg, const vox_vec *fine_inv_diag, vox_vec *const work[4]) {
  vox_backend *be = mg->be;
  forget_recording(mg);
  mg->level[0].inv_diag = *fine_inv_diag; /* borrowed */
  if (mg->n_levels > 1) mg->level[0].r = *work[3];
  for (int l = 1; l < mg->n_levels; l++) {
    vox_mg_level *lv = &mg->level[l];
    if (l == 1)
      TRY(be->ops->mg->galerkin_operator(be, mg->fine, lv->stencil));
    else
      TRY(be->ops->mg->galerkin_stencil(be, mg->level[l - 1].stencil, lv->stencil));
    TRY(be->ops->mg->stencil_diagonal(be, lv->stencil, &lv->inv_diag));
    TRY(be->ops->vec->reciprocal(be, &lv->inv_diag));
  }
  /* The coarsest factorisation first: the CUDA backend runs it on a stream
   * of its own, under the Lanczos steps below (which leave the device
   * mostly idle on the small levels), and reports its status at the first
   * solve. A periodic hierarchy holds one coarsest node first. */
  if (mg->n_translations) TRY(hold_node(mg));
  TRY(be->ops->mg->stencil_factor(be, mg->level[mg->n_levels - 1].stencil));
  /* the coarse bounds of an earlier setup, where the options keep them */
  const int refresh = mg->options.mg_bound_refresh;
  const int keep_bounds = refresh > 1 && mg->setups % refresh != 0;
  mg->setups++;
  mg->bounds_kept = keep_bounds;
  for (int l = 0; l < mg->n_levels - 1; l++) {
    /* coarse levels use their own vectors, which setup does not need */
    vox_mg_level *lv = &mg->level[l];
    if (l == 0 && mg->fine_bound > 0) {
      /* a bound, not an estimate: the interval's upper end is the bound */
      lv->lambda_max = mg->fine_bound / CHEBYSHEV_UPPER;
      continue;
    }
    if (keep_bounds) continue;
    TRY(l == 0 ? estimate_lambda_max(mg, l, work[0], work[1], work[2], work[3])
               : estimate_lambda_max(mg, l, &lv->r, &lv->d, &lv->b, &lv->x));
  }
  return VOX_OK;
}

vox_status vox_mg_full_storage(vox_multigrid *mg, int *changed) {
  *changed = 0;
  forget_recording(mg);
  if (!mg->be->ops->mg->stencil_full_storage) return VOX_OK;
  for (int l = 1; l < mg->n_levels; l++) {
    int was;
    TRY(mg->be->ops->mg->stencil_full_storage(mg->be, mg->level[l].stencil, &was));
    *changed |= was;
  }
  mg->full_storage = 1;
  return VOX_OK;
}

/* The coefficients of smoothing step k (0 first): d = alpha D^-1 (b - A x)
 * + beta d, x += d.
 *
 * Damped Jacobi keeps the V-cycle positive definite only while omega
 * lambda_max(D^-1 A) < 2; at a high stiffness contrast lambda_max passes 3,
 * so omega is capped at 1.5 / lambda_max.
 *
 * Chebyshev iteration of degree k on [lower, upper] of D^-1 A (Saad,
 * Iterative Methods, algorithm 12.1, with the Jacobi scaling): rho_k follows
 * rho_0 = 1 / sigma, rho_k = 1 / (2 sigma - rho_(k-1)). */
typedef struct smoothing {
  double alpha, beta;
  double sigma, delta, rho; /* Chebyshev */
} smoothing;

static smoothing smoothing_start(const vox_multigrid *mg, int l) {
  const double lambda = mg->level[l].lambda_max;
  smoothing s = {0};
  if (mg->options.smoother != VOX_SMOOTHER_CHEBYSHEV) {
    s.alpha = fmin(mg->options.jacobi_damping, 1.5 / lambda);
    return s;
  }
  const double upper = CHEBYSHEV_UPPER * lambda, lower = CHEBYSHEV_LOWER * lambda;
  const double theta = 0.5 * (upper + lower);
  s.delta = 0.5 * (upper - lower);
  s.sigma = theta / s.delta;
  s.rho = 1 / s.sigma;
  s.alpha = 1 / theta; /* d = D^-1 r / theta */
  return s;
}

static void smoothing_next(const vox_multigrid *mg, smoothing *s) {
  if (mg->options.smoother != VOX_SMOOTHER_CHEBYSHEV) return; /* Jacobi: beta = 0 */
  const double rho_new = 1 / (2 * s->sigma - s->rho);
  s->alpha = 2 * rho_new / s->delta;
  s->beta = rho_new * s->rho;
  s->rho = rho_new;
}

/* The level's smoothing direction, NULL where it keeps none. */
static vox_vec *level_d(vox_multigrid *mg, int l) {
  return mg->level[l].d.data ? &mg->level[l].d : NULL;
}

/* One fused smoothing step on level l (op->smooth / stencil_smooth):
 * d = alpha D^-1 (b - A x) + beta d, x_out = x + d. */
static vox_status level_smooth(vox_multigrid *mg, int l, const vox_vec *b, const vox_vec *x,
                               const smoothing *s, vox_vec *x_out) {
  vox_backend *be = mg->be;
  vox_mg_level *lv = &mg->level[l];
  if (l == 0)
    return be->ops->op->smooth(be, mg->fine, b, x, &lv->inv_diag, s->alpha, s->beta,
                               level_d(mg, 0), x_out, level_flags(mg));
  return be->ops->mg->stencil_smooth(be, lv->stencil, b, x, &lv->inv_diag, s->alpha, s->beta,
                                     &lv->d, x_out);
}

/* r = b - A_l x, fused (op->residual / stencil_residual). */
static vox_status level_residual(vox_multigrid *mg, int l, const vox_vec *b, const vox_vec *x,
                                 vox_vec *r) {
  vox_backend *be = mg->be;
  if (l == 0) return be->ops->op->residual(be, mg->fine, b, x, r, level_flags(mg));
  return be->ops->mg->stencil_residual(be, mg->level[l].stencil, b, x, r);
}

/* The cycle's levels (pc.h: vox_multigrid_cycle): level 0's b and x are the
 * cycle's argument and result (cycle_b, cycle_x), the others their own.
 * On level l, x = cycle(b) from x = 0 (warm = 0: x's old values are never
 * read), or from the x given (warm = 1: x + cycle(b - A x), the second
 * visit of a W-cycle). Every product is fused with what follows it
 * (level_smooth, level_residual), so no product goes to memory. A fused
 * step writes a new iterate beside the one its product reads, so the
 * iterate alternates between x and the level's residual vector r, which the
 * fused steps do not otherwise need (on level 0, CG's q, lent): the zero
 * start writes r and each of the 2s - 1 later steps swaps, a warm start
 * swaps 2s times from x: either way it ends in x (lv->cur tracks it). The
 * residual before the restriction goes into whichever is free. The same
 * linear, symmetric smoothing on the way down and up keeps the cycle
 * symmetric, as conjugate gradients require. */
static const vox_vec *level_b(const vox_multigrid *mg, int l) {
  return l ? &mg->level[l].b : mg->cycle_b;
}
static vox_vec *level_x(vox_multigrid *mg, int l) { return l ? &mg->level[l].x : mg->cycle_x; }

static int level_steps(const vox_multigrid *mg, int l) { return steps_on(&mg->options, l); }

/* `steps` smoothing steps from lv->cur (the first from zero where
 * `from_zero`), the iterate swapping between cur and other. */
static vox_status smooth_steps(vox_multigrid *mg, int l, int from_zero) {
  vox_mg_level *lv = &mg->level[l];
  const vox_vec *b = level_b(mg, l);
  vox_vec *t;
  smoothing s = smoothing_start(mg, l);
  if (from_zero)
    TRY(mg->be->ops->vec->smoother_step(mg->be, b, NULL, &lv->inv_diag, s.alpha, s.beta,
                                        level_d(mg, l), lv->cur));
  for (int k = from_zero ? 1 : 0; k < level_steps(mg, l); k++) {
    if (k > 0) smoothing_next(mg, &s);
    TRY(level_smooth(mg, l, b, lv->cur, &s, lv->other));
    t = lv->cur, lv->cur = lv->other, lv->other = t;
  }
  return VOX_OK;
}

static vox_status mg_presmooth(void *self, int l, int warm) {
  vox_multigrid *mg = self;
  vox_mg_level *lv = &mg->level[l];
  vox_vec *x = level_x(mg, l);
  lv->cur = warm ? x : &lv->r, lv->other = warm ? &lv->r : x;
  return smooth_steps(mg, l, !warm);
}

/* a periodic hierarchy's coarsest solve sees no rigid translations */
static vox_status mg_restrict(void *self, int l) {
  vox_multigrid *mg = self;
  vox_mg_level *lv = &mg->level[l];
  TRY(level_residual(mg, l, level_b(mg, l), lv->cur, lv->other));
  TRY(mg->be->ops->mg->restrict_residual(mg->be, &lv->grid, mg->dofs_per_node, lv->other,
                                         &mg->level[l + 1].b));
  return l + 1 == mg->n_levels - 1 ? remove_translations(mg, &mg->level[l + 1].b) : VOX_OK;
}

static vox_status mg_coarse_solve(void *self, int l) {
  vox_multigrid *mg = self;
  TRY(mg->be->ops->mg->stencil_solve(mg->be, mg->level[l].stencil, level_b(mg, l), level_x(mg, l)));
  if (!mg->n_translations) return VOX_OK;
  TRY(mg->be->ops->vec->mult(mg->be, level_x(mg, l), level_x(mg, l), &mg->held_mask));
  return remove_translations(mg, level_x(mg, l));
}

static vox_status mg_prolong(void *self, int l) {
  vox_multigrid *mg = self;
  vox_mg_level *lv = &mg->level[l];
  return mg->be->ops->mg->prolong_add(mg->be, &lv->grid, mg->dofs_per_node, &mg->level[l + 1].x,
                                      lv->cur);
}

static vox_status mg_postsmooth(void *self, int l) {
  vox_multigrid *mg = self;
  vox_mg_level *lv = &mg->level[l];
  TRY(smooth_steps(mg, l, 0));
  vox_vec *x = level_x(mg, l);
  return lv->cur == x ? VOX_OK : mg->be->ops->vec->copy(mg->be, x, lv->cur); /* not reached */
}

static const vox_mg_level_ops mg_levels = {.presmooth = mg_presmooth,
                                           .restrict_residual = mg_restrict,
                                           .coarse_solve = mg_coarse_solve,
                                           .prolong = mg_prolong,
                                           .postsmooth = mg_postsmooth};

static vox_status run_cycle(void *self) {
  vox_multigrid *mg = self;
  return vox_multigrid_cycle(&mg_levels, mg, mg->n_levels, mg->visits);
}

static int can_record(const vox_multigrid *mg) {
  const vox_backend_ops *o = mg->be->ops;
  return mg->options.mg_record && !mg->cannot_record && o->mg->records && o->sparse &&
         o->sparse->record_begin;
}

/* A cycle is a fixed sequence of launches, a hundred and more in a
 * W-cycle, most on levels too small to hide the host's launching: recorded
 * once (options.mg_record) and replayed as one launch. Not the first cycle
 * after a setup, which finishes what the setup left pending (the coarsest
 * factorisation on its own stream, the element matrix's upload): the
 * second, replayed until the next setup changes the smoothers'
 * coefficients; a cycle on other vectors (another load case's solve)
 * records again. Where a recording fails (the coarsest solve on the host,
 * a periodic grid's translations read back), the cycles run op by op from
 * then on. */
vox_status vox_mg_apply(vox_multigrid *mg, const vox_vec *r, vox_vec *z) {
  mg->cycle_b = r, mg->cycle_x = z;
  if (!can_record(mg)) return run_cycle(mg);
  const void *on[2] = {r->data, z->data};
  if (mg->recording && memcmp(on, mg->recorded_on, sizeof on) != 0) free_recording(mg);
  if (!mg->cycled) {
    mg->cycled = 1;
    return run_cycle(mg);
  }
  vox_backend *be = mg->be;
  if (be->ops->op->prepare) TRY(be->ops->op->prepare(be, mg->fine));
  int record = !mg->recording;
  memcpy(mg->recorded_on, on, sizeof on);
  const vox_status s = vox_run_recorded(be, &mg->recording, &record, run_cycle, mg);
  if (!mg->recording) mg->cannot_record = 1;
  return s;
}

int vox_mg_recorded(const vox_multigrid *mg) { return mg->recording != NULL; }
