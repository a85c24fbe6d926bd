/* SPDX-License-Identifier: BSD-3-Clause */
/* Conjugate gradients on the sparse (bone-only) system, preconditioned by a
 * V-cycle over rediscretised levels (sparse_solve.h), or with
 * vox_sparse_pc_options.coarse = SA over smoothed-aggregation levels below the fine
 * one (sparse_sa.h; backends with the matrix operations of sparse_ops.h).
 * Host code only: every step is an operation of the backend's sparse table.
 *
 * Memory: the CG keeps u, r, p and q in double; the preconditioner's output
 * z, the fine smoother's direction and the fine inverse diagonal (or
 * blocks) are float in mixed precision, and the V-cycle borrows q (dead
 * from the residual update until the next product): in mixed precision its
 * first half as a float fine residual, so that the fine products of the
 * smoother write floats (their atomics bound them, and float atomics are
 * the cheaper), and its second half
 * as the fine smoother's direction, at no extra memory. Prescribed
 * displacements stay in u's fixed entries, which the search directions
 * never touch, so no lift vectors are needed. */
#include "sparse_solve.h"

#include "ksp.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fem.h"
#include "host_memory.h"
#include "smoother_bound.h"
#include "background_clear.h"
#include "recorded.h"
#include "sparse_entries.h"
#include "sparse_hierarchy.h"
#include "sparse_ops.h"
#include "sparse_sa.h"

/* The Chebyshev interval as in multigrid.c: the upper end at the bound of
 * the Jacobi- or block-Jacobi-scaled spectrum (smoother_bound.h; every
 * rediscretised level is sum_e m_e K_e with the fine element matrix scaled,
 * so the one bound holds on all of them), the lower at a tenth of the
 * bound's lambda_max. */
static const double CHEBYSHEV_UPPER = 1.1, CHEBYSHEV_LOWER = 0.1;

/* The smoothed levels, from the finest, whose Chebyshev smoother is
 * preconditioned by the nodes' inverted 3 x 3 diagonal blocks instead of
 * the inverted diagonal (vox_sparse_pc_options.block_levels; the rest:
 * the diagonal). The blocks couple a node's three components, which the
 * diagonal leaves to the iterations, and their bound is lower (3.162
 * against 5.318 for hex8, nu = 0.3), so the interval is narrower. */
static int block_levels_of(const vox_sparse_pc_options *o) {
  return o->block_levels == VOX_SPARSE_ALL_LEVELS ? INT_MAX : o->block_levels;
}

/* The least Chebyshev degree of the sparse V-cycle. Rediscretised levels
 * approximate the fine operator less closely than Galerkin ones, and more
 * smoothing pays: lower degrees cost more iterations than they save
 * (docs/experiments.md). A larger smoothing_steps is taken as asked. */
enum { MIN_CHEBYSHEV_DEGREE = 4 };

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

typedef struct sparse_level {
  vox_sparse_level *op;        /* the element operator (geometric levels, SA level 0) */
  /* smoothed aggregation (sparse_sa.h): a level's assembled operator `a`
   * (levels >= 1; on the coarsest, its inverse) and inverted diagonal
   * blocks `w`, and the transfers to the next level, P and R = P^T */
  vox_sparse_matrix *a, *w, *p, *r_mat;
  /* SA level 0 with the implicit fine transfer (VOX_SA_FINE_IMPLICIT): P = T - p_scale W A T
   * applied from T, T^T and W with the scratch vector `t_vec`, instead of P and
   * R stored (docs/engine.md); W the smoother's inverse blocks when they
   * are the ones P was smoothed with, else `pw` */
  vox_sparse_matrix *t_mat, *tt_mat, *pw;
  vox_vec t_vec;
  double p_scale;
  double t;      /* profiling: when the level's current part began */
  /* level 0: b, x and r are lent by the CG, and in mixed precision d too;
   * inv_diag holds the inverse diagonal or, `block`, the inverse blocks */
  vox_vec b, x, r, d, inv_diag;
  size_t n_dofs;
  int block;
  double bound;  /* the Chebyshev interval's upper end */
  int degree;    /* of its Chebyshev smoother (set_degrees) */
  int d_lent;
} sparse_level;

typedef struct sparse_system {
  vox_backend *be;
  const vox_sparse_ops *o;
  int n_levels;
  sparse_level *level;
  vox_stencil *coarsest;
  int sa;                      /* smoothed-aggregation levels (VOX_SPARSE_COARSE_SA) */
  vox_vec u, r, p, q, z;
  /* in mixed precision, r in float for the V-cycle (its steps read it 8
   * times an iteration), written by CG's update */
  vox_vec r_single;
  vox_solver_options options;
  double lift_energy;          /* g'Kg of the prescribed values, for the energy test */
  vox_vec lift_force;          /* (K g)_f, for the reaction test (where it is on) */
  int block_levels;            /* the first block_levels levels smooth by blocks */
  double diagonal_bound, block_bound; /* smoother_bound.h */
  size_t bytes;
  int profile;                 /* vox_sparse_pc_options.profile: time the parts */
  /* the V-cycle recorded once and replayed (sparse_ops.h: record_begin):
   * `record` while that may still be tried */
  int record;
  void *recording;
  double pcg_seconds;          /* in pcg(): the iterations alone */
  double cg_mark;              /* profiling: when the CG's product began */
  const vox_vec *cycle_b;     /* the V-cycle's argument (level 0's b) */
  vox_vec *cycle_x;           /* and result (level 0's x) */
  int vcycles;                 /* of this solve so far */
  /* visits of each level per visit of the level above (pc.h): 1 for a
   * V-cycle, 2 on levels 2 and deeper but the coarsest for a W-cycle */
  int *visits;
  double cg_seconds, level_seconds[16];
  /* the weakly held rigid motions (rigid_modes_setup): n_rigid vectors Z
   * (zero on the fixed dofs, in z's precision) and (Z' K Z)^-1 */
  int n_rigid;
  vox_vec rigid[6];
  vox_vec rigid_k[6]; /* K Z */
  vox_vec rigid_t;    /* in double precision: the V-cycle's argument */
  double rigid_inverse[36];
} sparse_system;

/* The float layout of the V-cycle's products A x (sparse_ops.h; SA's
 * matrix operations take plain vectors). */
static int product_layout(const sparse_system *s) {
  return s->o->node4 && !s->sa ? VOX_FLOAT_NODE4 : 1;
}

/* The time after the backend's queued work, when profiling. */
static double mark(sparse_system *s) {
  if (!s->profile) return 0;
  s->be->ops->synchronize(s->be);
  return now();
}
/* The time now, after the backend's queued work when profiling. */
static double wait_now(sparse_system *s) { return s->profile ? mark(s) : now(); }
static void charge(sparse_system *s, int l, double since) {
  if (s->profile && l < 16) s->level_seconds[l] += mark(s) - since;
}

static vox_status vec(sparse_system *s, size_t n, vox_scalar single, vox_vec *v) {
  TRY(s->be->ops->vec->create(s->be, n, single, v));
  s->bytes += vox_vec_bytes(n, single);
  return VOX_OK;
}

/* Drops the rigid motions' vectors: the V-cycle alone. */
static void rigid_free(sparse_system *s) {
  vox_vec *v[13] = {&s->rigid_t};
  for (int i = 0; i < 6; i++) v[1 + i] = &s->rigid[i], v[7 + i] = &s->rigid_k[i];
  for (int i = 0; i < 13; i++) {
    if (v[i]->data) s->be->ops->vec->destroy(s->be, v[i]);
    *v[i] = (vox_vec){0};
  }
  s->n_rigid = 0;
}

static void system_free(sparse_system *s) {
  vox_backend *be = s->be;
  for (int l = 0; s->level && l < s->n_levels; l++) {
    sparse_level *lv = &s->level[l];
    vox_vec *v[] = {&lv->b, &lv->x, &lv->r, &lv->d, &lv->inv_diag, &lv->t_vec};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
      if (v[i]->data && (l > 0 || (i >= 3 && !(i == 3 && lv->d_lent))))
        be->ops->vec->destroy(be, v[i]);
    if (lv->op) s->o->level_destroy(be, lv->op);
    vox_sparse_matrix *m[] = {lv->a, lv->w, lv->p, lv->r_mat, lv->t_mat, lv->tt_mat, lv->pw};
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++)
      if (m[i]) s->o->matrix_destroy(be, m[i]);
  }
  free(s->level);
  vox_vec *v[] = {&s->u, &s->r, &s->p, &s->q, &s->z, &s->r_single, &s->lift_force};
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
    if (v[i]->data) be->ops->vec->destroy(be, v[i]);
  rigid_free(s);
  if (s->coarsest) be->ops->mg->stencil_destroy(be, s->coarsest);
  if (s->recording) s->o->recording_free(be, s->recording);
  free(s->visits);
}

/* A level's product in the V-cycle. On the geometric levels x is zero on
 * the fixed dofs (the smoother's inverse is zero there, the transfers skip
 * them, the coarsest solve keeps them), so the plain K x is the eliminated
 * one on the free rows, which are all that the smoother (zero on fixed
 * rows) and the restriction (which skips them) read: no fixed flags read
 * per element, no pass to copy x into the fixed rows. SA's implicit
 * transfers read those rows. */
static vox_status level_apply(sparse_system *s, int l, const vox_vec *x, vox_vec *y) {
  if (s->level[l].a) return s->o->matrix_apply(s->be, s->level[l].a, x, y, 0);
  const int single = s->options.precision == VOX_PRECISION_MIXED;
  const int flags = (single ? VOX_APPLY_SINGLE : 0) | (s->sa ? 0 : VOX_APPLY_FULL);
  return s->o->apply(s->be, s->level[l].op, x, y, flags);
}

/* Each level's Chebyshev degree: smoothing_steps, at least
 * MIN_CHEBYSHEV_DEGREE, or as vox_sparse_pc_options.degree asks (the last
 * one given holds for the levels below). */
static void set_degrees(sparse_system *s) {
  const int asked = s->options.smoothing_steps;
  const int *degree = s->options.sparse.degree;
  for (int l = 0, given = 0; l < s->n_levels; l++) {
    if (l < VOX_SPARSE_MAX_DEGREES && degree[l] > 0) given = degree[l];
    s->level[l].degree = given > 0                       ? given
                         : asked > MIN_CHEBYSHEV_DEGREE ? asked
                                                        : MIN_CHEBYSHEV_DEGREE;
  }
}

/* The cycle (vox_solver_options.mg_cycle; AUTO: V), as multigrid.c's. */
static vox_status set_visits(vox_context *ctx, sparse_system *s) {
  const size_t n = s->n_levels > 0 ? (size_t)s->n_levels : 1;
  s->visits = calloc(n, sizeof *s->visits);
  if (!s->visits) return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
  const int w = s->options.mg_cycle == VOX_MG_CYCLE_W;
  for (int l = 0; l < s->n_levels; l++)
    s->visits[l] = vox_multigrid_visits(w, l, s->n_levels);
  return VOX_OK;
}

/* Chebyshev smoothing of degree lv->degree (multigrid.c's). */
static vox_status smooth(sparse_system *s, int l, const vox_vec *b, vox_vec *x, int x_is_zero) {
  sparse_level *lv = &s->level[l];
  const double lambda_max = lv->bound / CHEBYSHEV_UPPER;
  const double upper = lv->bound, lower = CHEBYSHEV_LOWER * lambda_max;
  const double theta = 0.5 * (upper + lower), delta = 0.5 * (upper - lower);
  const double sigma = theta / delta;
  double rho = 1 / sigma;
  vox_status (*step)(vox_backend *, const vox_vec *, const vox_vec *, const vox_vec *, double,
                     double, vox_vec *, vox_vec *) =
      lv->block ? s->o->block_smoother_step : s->o->smoother_step;
  if (!x_is_zero) TRY(level_apply(s, l, x, &lv->r));
  if (lv->w) { /* an assembled level: its inverted 6 x 6 blocks */
    TRY(s->o->matrix_smoother_step(s->be, lv->w, b, x_is_zero ? NULL : &lv->r, 1 / theta, 0,
                                   &lv->d, x));
  } else {
    TRY(step(s->be, b, x_is_zero ? NULL : &lv->r, &lv->inv_diag, 1 / theta, 0, &lv->d, x));
  }
  for (int k = 1; k < lv->degree; k++) {
    const double rho_new = 1 / (2 * sigma - rho);
    TRY(level_apply(s, l, x, &lv->r));
    if (lv->w)
      TRY(s->o->matrix_smoother_step(s->be, lv->w, b, &lv->r, 2 * rho_new / delta, rho_new * rho,
                                     &lv->d, x));
    else
      TRY(step(s->be, b, &lv->r, &lv->inv_diag, 2 * rho_new / delta, rho_new * rho, &lv->d, x));
    rho = rho_new;
  }
  return VOX_OK;
}

/* The V-cycle's levels (pc.h: vox_multigrid_cycle): level 0's b and x are the
 * cycle's argument and result (cycle_b, cycle_x), the others their own.
 * The cycle is symmetric (the same smoother before and after, transfers
 * P and P^T), so CG may use it. With profiling, each level is charged
 * its smoothing, residual and transfers (the coarsest its solve). */
static const vox_vec *level_b(const sparse_system *s, int l) {
  return l ? &s->level[l].b : s->cycle_b;
}
static vox_vec *level_x(sparse_system *s, int l) { return l ? &s->level[l].x : s->cycle_x; }

static vox_status sparse_coarse_solve(void *self, int l) {
  sparse_system *s = self;
  vox_backend *be = s->be;
  const double t = mark(s);
  if (s->sa) { /* the dense inverse */
    TRY(s->o->matrix_apply(be, s->level[l].a, level_b(s, l), level_x(s, l), 0));
  } else {
    TRY(be->ops->mg->stencil_solve(be, s->coarsest, level_b(s, l), level_x(s, l)));
  }
  charge(s, l, t);
  return VOX_OK;
}

/* From zero, or (a W-cycle's second visit) from the first visit's x. */
static vox_status sparse_presmooth(void *self, int l, int warm) {
  sparse_system *s = self;
  s->level[l].t = mark(s);
  if (!warm) TRY(s->be->ops->vec->set(s->be, level_x(s, l), 0));
  return smooth(s, l, level_b(s, l), level_x(s, l), !warm);
}

static vox_status sparse_restrict(void *self, int l) {
  sparse_system *s = self;
  vox_backend *be = s->be;
  sparse_level *lv = &s->level[l], *c = &s->level[l + 1];
  const vox_vec *b = level_b(s, l);
  TRY(level_apply(s, l, level_x(s, l), &lv->r));
  if (!s->sa) {
    /* P^T (b - A x), the residual formed on the way */
    TRY(s->o->restrict_residual(be, lv->op, c->op, b, &lv->r, &c->b));
    /* the coarse level's own fixed dofs take no correction either (an
     * identity row would echo the residual there back as a correction) */
    TRY(s->o->zero_fixed(be, c->op, &c->b));
  } else {
    TRY(s->o->vec_xpay(be, &lv->r, -1, b)); /* r = b - A x */
    if (lv->t_mat) {
      /* P^T r = T^T (r - scale A W r), into r (dead after this); with the
       * smoother's blocks, d = W r adds W r to t too, which A d overwrites */
      if (lv->pw)
        TRY(s->o->matrix_apply(be, lv->pw, &lv->r, &lv->d, 0));
      else
        TRY(s->o->block_smoother_step(be, &lv->r, NULL, &lv->inv_diag, 1, 0, &lv->d, &lv->t_vec));
      TRY(level_apply(s, l, &lv->d, &lv->t_vec));
      TRY(s->o->vec_axpy(be, &lv->r, -lv->p_scale, &lv->t_vec));
      TRY(s->o->matrix_apply(be, lv->tt_mat, &lv->r, &c->b, 0));
    } else {
      /* R's columns of fixed fine dofs and rows of dead coarse dofs are zero */
      TRY(s->o->matrix_apply(be, lv->r_mat, &lv->r, &c->b, 0));
    }
  }
  charge(s, l, lv->t);
  return VOX_OK;
}

static vox_status sparse_prolong(void *self, int l) {
  sparse_system *s = self;
  vox_backend *be = s->be;
  sparse_level *lv = &s->level[l], *c = &s->level[l + 1];
  vox_vec *x = level_x(s, l);
  lv->t = mark(s);
  if (s->sa && lv->t_mat) {
    /* x += T x_c - scale W A T x_c */
    TRY(s->o->matrix_apply(be, lv->t_mat, &c->x, &lv->t_vec, 0));
    TRY(s->o->vec_axpy(be, x, 1, &lv->t_vec));
    TRY(level_apply(s, l, &lv->t_vec, &lv->d));
    if (lv->pw) {
      TRY(s->o->matrix_apply(be, lv->pw, &lv->d, &lv->t_vec, 0));
      TRY(s->o->vec_axpy(be, x, -lv->p_scale, &lv->t_vec));
    } else { /* t = -scale W d, x += t */
      TRY(s->o->block_smoother_step(be, &lv->d, NULL, &lv->inv_diag, -lv->p_scale, 0, &lv->t_vec,
                                    x));
    }
  } else if (s->sa) {
    TRY(s->o->matrix_apply(be, lv->p, &c->x, x, 1));
  } else {
    TRY(s->o->prolong_add(be, lv->op, c->op, &c->x, x));
  }
  return VOX_OK;
}

static vox_status sparse_postsmooth(void *self, int l) {
  sparse_system *s = self;
  TRY(smooth(s, l, level_b(s, l), level_x(s, l), 0));
  charge(s, l, s->level[l].t);
  return VOX_OK;
}

static const vox_mg_level_ops sparse_levels = {.presmooth = sparse_presmooth,
                                               .restrict_residual = sparse_restrict,
                                               .coarse_solve = sparse_coarse_solve,
                                               .prolong = sparse_prolong,
                                               .postsmooth = sparse_postsmooth};

/* The bone's preconditioner as an object (pc.h): one V-cycle of the
 * levels above, on sparse vectors, its output zero on the fixed dofs. The
 * hierarchy is set up when the system is built (build_system). */
static vox_status sparse_pc_apply(void *self, const void *r, void *z) {
  sparse_system *s = self;
  sparse_level *l0 = &s->level[0];
  /* the V-cycle's fine products: q is dead here; float in mixed precision,
   * like the rest of the preconditioner (fine_vectors) */
  l0->r = s->q;
  if (s->options.precision == VOX_PRECISION_MIXED) l0->r.scalar = product_layout(s);
  s->cycle_b = r;
  s->cycle_x = z;
  TRY(vox_multigrid_cycle(&sparse_levels, s, s->n_levels, s->visits));
  return s->o->zero_fixed(s->be, l0->op, z);
}

static const vox_pc_ops sparse_pc = {.name = "sparse multigrid", .apply = sparse_pc_apply};

/* z = M^-1 r of the CG (r in float in mixed precision). */
static vox_status precondition(sparse_system *s) {
  const vox_pc pc = {.ops = &sparse_pc, .self = s};
  const vox_vec *b = s->rigid_t.data ? &s->rigid_t : s->r_single.data ? &s->r_single : &s->r;
  return vox_pc_apply(&pc, b, &s->z);
}

static vox_status precondition_op(void *self) { return precondition(self); }

/* The V-cycle replayed from its recording, made by the first call here
 * (recorded.h). Replays launch the ~130 kernels of a clinical sample's
 * V-cycle at once, where op by op its small coarse levels wait for the
 * host's launches. */
static vox_status precondition_replayed(sparse_system *s) {
  return vox_run_recorded(s->be, &s->recording, &s->record, precondition_op, s);
}

/* The one CG's hooks (ksp.h) on the sparse vectors: u (x), r, z, p, q. */
static vox_status cg_product(void *self, double *pq) {
  sparse_system *s = self;
  s->cg_mark = mark(s);
  TRY(s->o->apply(s->be, s->level[0].op, &s->p, &s->q, 0));
  return s->o->vec_dot(s->be, &s->p, &s->q, pq);
}

static vox_status cg_update(void *self, double alpha, double *rr) {
  sparse_system *s = self;
  TRY(s->o->cg_update(s->be, alpha, &s->p, &s->q, &s->u, &s->r,
                      s->r_single.data ? &s->r_single : NULL, rr));
  if (s->profile) s->cg_seconds += mark(s) - s->cg_mark;
  return VOX_OK;
}

/* y = x, the two of any precisions (sparse_ops.h) */
static vox_status assign(sparse_system *s, vox_vec *y, const vox_vec *x) {
  TRY(s->be->ops->vec->set(s->be, y, 0));
  return s->o->vec_axpy(s->be, y, 1, x);
}

/* c = (Z'KZ)^-1 w */
static void rigid_solve(const sparse_system *s, const double *w, double *c) {
  for (int i = 0; i < s->n_rigid; i++) {
    c[i] = 0;
    for (int j = 0; j < s->n_rigid; j++) c[i] += s->rigid_inverse[6 * i + j] * w[j];
  }
}

/* The balancing form: z = Q r + (I - Q K) B (I - K Q) r with Q = Z (Z'KZ)^-1
 * Z' and B the V-cycle (Mandel 1993's balancing of the coarse space):
 * the V-cycle's argument r - K Z c1 (K Z stored), then z = B(...) + Z c2
 * with c2 from Z'r - (KZ)'z. The weak motions' eigenvalues become 1, the
 * rest are the V-cycle's on what is K-orthogonal to them. */
static vox_status rigid_balanced(sparse_system *s) {
  double w[6], v[6], c[6];
  for (int i = 0; i < s->n_rigid; i++) TRY(s->o->vec_dot(s->be, &s->r, &s->rigid[i], &w[i]));
  rigid_solve(s, w, c);
  /* the V-cycle's argument: r_single, which holds r, or else rigid_t */
  vox_vec *t = s->rigid_t.data ? &s->rigid_t : &s->r_single;
  if (s->rigid_t.data) TRY(s->be->ops->vec->copy(s->be, t, &s->r));
  for (int i = 0; i < s->n_rigid; i++) TRY(s->o->vec_axpy(s->be, t, -c[i], &s->rigid_k[i]));
  TRY(s->vcycles++ ? precondition_replayed(s) : precondition(s));
  for (int i = 0; i < s->n_rigid; i++) {
    TRY(s->o->vec_dot(s->be, &s->z, &s->rigid_k[i], &v[i]));
    v[i] = w[i] - v[i];
  }
  rigid_solve(s, v, c);
  for (int i = 0; i < s->n_rigid; i++) TRY(s->o->vec_axpy(s->be, &s->z, c[i], &s->rigid[i]));
  return VOX_OK;
}

/* The first V-cycle of a solve runs op by op, the later ones replayed. */
static vox_status cg_precondition(void *self) {
  sparse_system *s = self;
  if (s->n_rigid) return rigid_balanced(s);
  return s->vcycles++ ? precondition_replayed(s) : precondition(s);
}

static vox_status cg_direction(void *self, double rz_old, double *rz) {
  sparse_system *s = self;
  const double t = mark(s);
  if (rz_old == 0) { /* p = z (p may be float) */
    TRY(s->be->ops->vec->set(s->be, &s->p, 0));
    TRY(s->o->vec_axpy(s->be, &s->p, 1, &s->z));
    return s->o->vec_dot(s->be, &s->r, &s->z, rz);
  }
  TRY(s->o->vec_dot(s->be, &s->r, &s->z, rz));
  TRY(s->o->vec_xpay(s->be, &s->p, *rz / rz_old, &s->z));
  if (s->profile) s->cg_seconds += mark(s) - t;
  return VOX_OK;
}

/* g'K u = g'Kg + (K g)_f'w (u holds g on the fixed dofs, where (K g)_f is
 * zero) */
static vox_status cg_reaction(void *self, double *work) {
  sparse_system *s = self;
  TRY(s->o->vec_dot(s->be, &s->lift_force, &s->u, work));
  *work += s->lift_energy;
  return VOX_OK;
}

static const vox_ksp_ops cg_ops = {.product = cg_product,
                                   .precondition = cg_precondition,
                                   .update = cg_update,
                                   .direction = cg_direction};

/* CG on K_ff w = b_f with u = g + w: the tolerance from ||b||, b = f - K g
 * (in r on entry). */
static vox_status pcg(sparse_system *s, vox_solve_result *result) {
  vox_backend *be = s->be;
  const vox_sparse_ops *o = s->o;
  vox_sparse_level *op = s->level[0].op;
  double rr, wb = 0, wr = 0;
  /* the start's energy w'(b + r) - g'Kg for the energy test (u holds g on
   * the fixed dofs, where b and r are zero) */
  const int by_energy = s->options.energy_tol > 0;
  if (by_energy) TRY(o->vec_dot(be, &s->u, &s->r, &wb));
  TRY(o->apply(be, op, &s->u, &s->q, 0)); /* r = b - K_ff w (fixed columns ignored) */
  TRY(o->vec_axpy(be, &s->r, -1, &s->q));
  TRY(o->zero_fixed(be, op, &s->r));
  TRY(o->vec_dot(be, &s->r, &s->r, &rr));
  if (by_energy) TRY(o->vec_dot(be, &s->u, &s->r, &wr));
  if (s->r_single.data) {
    TRY(be->ops->vec->set(be, &s->r_single, 0));
    TRY(o->vec_axpy(be, &s->r_single, 1, &s->r));
  }
  s->vcycles = 0;
  vox_ksp_ops ops = cg_ops;
  if (s->options.reaction_tol > 0 && s->lift_energy != 0 && s->lift_force.data)
    ops.reaction = cg_reaction;
  return vox_ksp_cg(&ops, s, rr, result->rhs_norm, wb + wr - s->lift_energy, &s->options,
                    result);
}

/* Factors the coarsest level and learns whether that took: a device may
 * report a failed factorisation only at the next solve (the CUDA backend's
 * runs beside the host), so one solve of the level's b, still zero, comes
 * with it. */
static vox_status factor_coarsest(sparse_system *s, sparse_level *lv) {
  TRY(s->be->ops->mg->stencil_factor(s->be, s->coarsest));
  return s->be->ops->mg->stencil_solve(s->be, s->coarsest, &lv->b, &lv->x);
}

/* Bytes the system will allocate, for the check against a device's free
 * memory before anything is allocated. */
static size_t bytes_needed(const vox_sparse_hierarchy *h, const vox_backend *be, int mixed,
                           int block_levels) {
  const size_t fs = mixed ? sizeof(float) : sizeof(double);
  size_t b = 0;
  for (int l = 0; l < h->n_levels; l++) {
    const vox_sparse_host_level *lv = &h->level[l];
    /* the part of the level this process holds (an MPI rank's slab) */
    size_t nodes = lv->n_nodes, elements = lv->n_elements;
    if (be->ops->sparse->level_share) {
      const vox_sparse_level_desc d = vox_sparse_level_describe(h, l);
      be->ops->sparse->level_share(be, &d, l, &nodes, &elements);
    }
    const size_t n = 3 * nodes;
    /* 6 bfloat16 or 3 entries a node (element_smoother) */
    const size_t inverse = l < block_levels ? 2 * n * (mixed ? 2 : fs) : n * fs;
    b += elements * ((lv->element_nodes_x1 ? 8 : 4) * sizeof(int32_t) +
                     (lv->material ? 1 : sizeof(float)));
    b += nodes * (1 + (l < h->n_levels - 1 ? sizeof(uint32_t) : 0));
    /* the products' 16 bytes a node (VOX_FLOAT_NODE4) in mixed precision */
    const int node4 = mixed && be->ops->sparse->node4;
    const int own_d = mixed && (node4 || !be->ops->sparse->views);
    if (l == 0) /* u, r, q; p, z, r in float; d (in q unless node4 or no views) */
      b += n * (3 * sizeof(double) + 3 * fs + (own_d ? fs : 0)) + inverse;
    else if (l < h->n_levels - 1) /* b, x, r, d */
      b += n * 3 * fs + (node4 ? vox_vec_bytes(n, VOX_FLOAT_NODE4) : n * fs) + inverse;
    else {
      b += n * 2 * sizeof(double) + nodes * 27 * 9 * sizeof(double);
      if (be->ops->device_memory && n <= be->ops->mg->dense_coarse_dofs)
        b += 2 * n * n * sizeof(double);
    }
  }
  return b;
}

/* Level 0's vectors: the CG's u, r, p, q, z, r in float, and the smoother's direction
 * (p, z and the copy of r in float in mixed precision). */
static vox_status fine_vectors(sparse_system *s, sparse_level *lv, int mixed) {
  TRY(vec(s, lv->n_dofs, VOX_DOUBLE, &s->u));
  TRY(vec(s, lv->n_dofs, VOX_DOUBLE, &s->r));
  /* p, the search direction, in float in mixed precision: q = K p is
   * computed in double from the p stored, and u += alpha p, r -= alpha q
   * take that same p, so r stays u's residual to double rounding; rounding
   * p only perturbs the direction, as the float V-cycle that makes z does
   * (clinical sample and 550^3: the same CG counts); 4 bytes a dof less */
  TRY(vec(s, lv->n_dofs, mixed, &s->p));
  TRY(vec(s, lv->n_dofs, VOX_DOUBLE, &s->q));
  TRY(vec(s, lv->n_dofs, mixed, &s->z));
  if (mixed) {
    TRY(vec(s, lv->n_dofs, VOX_FLOAT, &s->r_single));
    /* the V-cycle's products A x over q, in 16 bytes a node where the
     * backend takes that (VOX_FLOAT_NODE4), and d then a vector of its own,
     * else over q's second half where the backend lets the solve view it */
    if (product_layout(s) == VOX_FLOAT_NODE4 || !s->o->views)
      return vec(s, lv->n_dofs, VOX_FLOAT, &lv->d);
    lv->d = (vox_vec){.raw = (float *)s->q.raw + lv->n_dofs, .n = lv->n_dofs, .scalar = VOX_FLOAT};
    lv->d_lent = 1;
    return VOX_OK;
  }
  return vec(s, lv->n_dofs, mixed, &lv->d);
}

/* An element level's smoother: the inverse diagonal or 3 x 3 blocks and
 * the Chebyshev interval's upper end. In mixed precision the blocks are
 * bfloat16 (not for SA, whose level-0 transfers use them): the steps read
 * 12 bytes a node instead of 24, the same CG iterations (perlin 64^3, CPU:
 * 115 either way); the sums go through CG's q, idle until the solve. */
static vox_status element_smoother(sparse_system *s, sparse_level *lv, int l, int mixed) {
  lv->block = l < s->block_levels;
  lv->bound = lv->block ? s->block_bound : s->diagonal_bound;
  const int bf16 = lv->block && mixed && !s->sa;
  TRY(vec(s, (lv->block ? 2 : 1) * lv->n_dofs, bf16 ? VOX_BF16 : mixed, &lv->inv_diag));
  if (lv->block)
    return s->o->inv_block_diagonal(s->be, lv->op, &lv->inv_diag, bf16 ? &s->q : NULL);
  return s->o->inv_diagonal(s->be, lv->op, &lv->inv_diag);
}

static vox_status build_system(vox_context *ctx, vox_backend *be, const vox_sparse_hierarchy *h,
                               const vox_solver_options *options, sparse_system *s) {
  const int mixed = options->precision == VOX_PRECISION_MIXED;
  if (be->ops->device_memory) {
    size_t free_bytes = 0, total = 0;
    TRY(be->ops->memory(be, &free_bytes, &total));
    const size_t need = bytes_needed(h, be, mixed, s->block_levels) + ((size_t)160 << 20);
    if (need > free_bytes)
      return vox_error(ctx, VOX_ERR_NO_MEMORY,
                       "the sparse system needs %.2f GB on %s, %.2f GB are free",
                       (double)need / 1e9, be->ops->name, (double)free_bytes / 1e9);
  }
  s->level = calloc((size_t)h->n_levels, sizeof *s->level);
  if (!s->level) return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
  s->n_levels = h->n_levels;
  const int last = h->n_levels - 1;
  for (int l = 0; l < h->n_levels; l++) {
    sparse_level *lv = &s->level[l];
    const vox_sparse_level_desc d = vox_sparse_level_describe(h, l);
    lv->n_dofs = 3 * d.n_nodes;
    TRY(s->o->level_create(be, &d, &lv->op));
    s->bytes += s->o->level_bytes(lv->op);
    if (l == 0) {
      TRY(fine_vectors(s, lv, mixed));
    } else if (l < last) {
      vox_vec *v[] = {&lv->b, &lv->x, &lv->r, &lv->d};
      for (size_t i = 0; i < 4; i++)
        TRY(vec(s, lv->n_dofs, mixed && v[i] == &lv->r ? product_layout(s) : mixed, v[i]));
    } else {
      TRY(vec(s, lv->n_dofs, VOX_DOUBLE, &lv->b));
      TRY(vec(s, lv->n_dofs, VOX_DOUBLE, &lv->x));
    }
    if (l < last) TRY(element_smoother(s, lv, l, mixed));
  }
  /* the coarsest level: assembled on the host and factored */
  const vox_sparse_host_level *c = &h->level[last];
  double *value = malloc(c->n_nodes * 27 * 9 * sizeof *value);
  if (!value) return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
  vox_sparse_assemble_coarsest(h, value);
  vox_status st = be->ops->mg->stencil_create(be, &c->grid, 3, VOX_PRECISION_DOUBLE, &s->coarsest);
  if (st == VOX_OK) st = be->ops->mg->stencil_upload(be, s->coarsest, value);
  if (st == VOX_OK) st = factor_coarsest(s, &s->level[last]);
  if (st == VOX_ERR_INVALID_ARGUMENT) {
    /* Only semi-definite: a part hinged on one edge or node of the rest
     * (26-connectivity keeps them) rotates at no energy on every level
     * that still resolves the hinge, which a small bone's coarsest does.
     * A + 1e-8 D is definite and changes the preconditioner by that much;
     * the solve's right-hand side does not excite the hinge's directions. */
    for (size_t n = 0; n < c->n_nodes; n++)
      for (int r = 0; r < 3; r++) value[((size_t)n * 27 + 13) * 9 + r * 3 + r] *= 1 + 1e-8;
    st = be->ops->mg->stencil_upload(be, s->coarsest, value);
    if (st == VOX_OK) st = factor_coarsest(s, &s->level[last]);
  }
  free(value);
  TRY(st);
  /* the coarsest stencil in double, and on a GPU its dense factor and inverse */
  s->bytes += c->n_nodes * (size_t)be->ops->mg->stencil_blocks * 9 * sizeof(double);
  if (be->ops->device_memory && 3 * c->n_nodes <= be->ops->mg->dense_coarse_dofs)
    s->bytes += 2 * 9 * c->n_nodes * c->n_nodes * sizeof(double);
  return VOX_OK;
}

/* The system with smoothed-aggregation levels below level 0 (sparse_sa.h):
 * level 0 as build_system's, the assembled levels' operators, inverted
 * blocks and transfers uploaded, their vectors in double. */
static vox_status build_sa_system(vox_context *ctx, vox_backend *be, const vox_sparse_hierarchy *h,
                                  const vox_sa_hierarchy *sa, const vox_solver_options *options,
                                  int sao_point, sparse_system *s) {
  const int mixed = options->precision == VOX_PRECISION_MIXED;
  /* level 0's P applied from T (implicit, the default: one fine product
   * more per transfer, the same CG count and about the same time per
   * iteration on the CPU, 104 bytes per dof fewer on the 64^3 perlin
   * bone) or P and R stored (explicit) */
  const int implicit = options->sparse.sa_fine_transfer == VOX_SA_FINE_IMPLICIT;
  /* (a backend without the matrix operations was refused before the
   * hierarchy was built: vox_sparse_solve_elasticity) */
  s->level = calloc((size_t)sa->n_levels, sizeof *s->level);
  if (!s->level) return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
  s->n_levels = sa->n_levels;
  const int last = sa->n_levels - 1;
  for (int l = 0; l < sa->n_levels; l++) {
    sparse_level *lv = &s->level[l];
    const vox_sa_level *q = &sa->level[l];
    lv->n_dofs = q->n_nodes * (size_t)q->bn;
    if (l == 0) {
      const vox_sparse_level_desc d = vox_sparse_level_describe(h, 0);
      TRY(s->o->level_create(be, &d, &lv->op));
      s->bytes += s->o->level_bytes(lv->op);
      TRY(fine_vectors(s, lv, mixed));
      TRY(element_smoother(s, lv, 0, mixed));
    } else {
      /* in mixed precision the assembled levels' values and vectors are
       * float, as the geometric levels' (they only precondition); the
       * coarsest inverse and its vectors stay double (they are small) */
      const int single = l == last ? 0 : mixed;
      TRY(vec(s, lv->n_dofs, single, &lv->b));
      TRY(vec(s, lv->n_dofs, single, &lv->x));
      const vox_bsr *a = l == last ? &sa->coarsest_inverse : &q->a;
      TRY(s->o->matrix_create(be, a, single, &lv->a));
      s->bytes += s->o->matrix_bytes(lv->a);
      if (l < last) {
        TRY(vec(s, lv->n_dofs, single, &lv->r));
        TRY(vec(s, lv->n_dofs, single, &lv->d));
        TRY(s->o->matrix_create(be, &q->w, mixed, &lv->w));
        s->bytes += s->o->matrix_bytes(lv->w);
        lv->bound = CHEBYSHEV_UPPER * q->lambda_max;
      }
    }
    if (l == 0 && implicit) {
      TRY(s->o->matrix_create(be, &q->t, mixed, &lv->t_mat));
      TRY(s->o->matrix_create(be, &q->tt, mixed, &lv->tt_mat));
      s->bytes += s->o->matrix_bytes(lv->t_mat) + s->o->matrix_bytes(lv->tt_mat);
      if (!lv->block || sao_point) { /* P was smoothed with other blocks */
        TRY(s->o->matrix_create(be, &q->w, mixed, &lv->pw));
        s->bytes += s->o->matrix_bytes(lv->pw);
      }
      TRY(vec(s, lv->n_dofs, mixed, &lv->t_vec));
      lv->p_scale = q->p_scale;
    } else if (l < last) {
      TRY(s->o->matrix_create(be, &q->p, mixed, &lv->p));
      TRY(s->o->matrix_create(be, &q->r, mixed, &lv->r_mat));
      s->bytes += s->o->matrix_bytes(lv->p) + s->o->matrix_bytes(lv->r_mat);
    }
  }
  return VOX_OK;
}

/* What the options and the model ask of the solve, checked: the SA levels
 * or the split ones (vox_sparse_pc_options.coarse), the Poisson ratio. */
static vox_status solve_kind(vox_context *ctx, const vox_model *model,
                             const vox_solver_options *options, int *use_sa, int *split,
                             double *nu) {
  TRY(vox_solver_options_check(ctx, options));
  TRY(vox_model_validate(ctx, model));
  TRY(vox_model_check_held(ctx, model));
  if (model->physics != VOX_PHYSICS_ELASTICITY)
    return vox_error(ctx, VOX_ERR_UNSUPPORTED, "the sparse solver is for elasticity only");
  if (options->preconditioner != VOX_PC_MULTIGRID || options->smoother != VOX_SMOOTHER_CHEBYSHEV)
    return vox_error(ctx, VOX_ERR_UNSUPPORTED,
                     "the sparse storage solves with the multigrid preconditioner and the "
                     "Chebyshev smoother only");
  *use_sa = options->sparse.coarse == VOX_SPARSE_COARSE_SA;
  *split = options->sparse.coarse == VOX_SPARSE_COARSE_SPLIT;
  return vox_model_poisson_ratio(ctx, model, nu);
}

/* The hierarchy of that kind: level 0 alone under SA levels. */
static vox_status build_hierarchy(vox_context *ctx, const vox_model *model, const double *moduli,
                                  const vox_solver_options *options, int use_sa, int split,
                                  double nu, vox_sparse_hierarchy *h) {
  return vox_sparse_hierarchy_build_moduli(
      ctx, model, moduli, nu, use_sa ? VOX_SPARSE_FINE_ONLY : options->mg_levels, split, h);
}

vox_status vox_sparse_hierarchy_for(vox_context *ctx, const vox_model *model,
                                    const double *moduli, const vox_solver_options *options,
                                    vox_sparse_hierarchy *h) {
  int use_sa = 0, split = 0;
  double nu = 0;
  TRY(solve_kind(ctx, model, options, &use_sa, &split, &nu));
  return build_hierarchy(ctx, model, moduli, options, use_sa, split, nu, h);
}

/* The constraints' values written into the box where their node is
 * outside the system, in the list's order (a later one holds); the nodes
 * looked up in parallel (on an MPI rank sent the hierarchy, each a
 * search). */
static vox_status hold_outside(vox_context *ctx, const vox_model *model,
                               const vox_sparse_hierarchy *h, double *ub) {
  const ptrdiff_t n = (ptrdiff_t)model->n_constraints;
  unsigned char *outside = malloc(n > 0 ? (size_t)n : 1);
  if (!outside) return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
#pragma omp parallel for schedule(static)
  for (ptrdiff_t i = 0; i < n; i++)
    outside[i] = vox_sparse_node_at(h, model->constraints[i].node) < 0;
  for (ptrdiff_t i = 0; i < n; i++) {
    const vox_constraint *k = &model->constraints[i];
    if (outside[i]) ub[3 * k->node + k->component] = k->value;
  }
  free(outside);
  return VOX_OK;
}

/* The inverse of the symmetric positive definite k x k matrix a (k <= 6,
 * rows of 6) into inv by Gauss-Jordan elimination; 0 where a pivot is not
 * positive. */
static int invert_small(int k, const double a_in[36], double inv[36]) {
  double a[36];
  memcpy(a, a_in, sizeof a);
  for (int i = 0; i < 36; i++) inv[i] = i % 7 == 0;
  for (int c = 0; c < k; c++) {
    const double pivot = a[6 * c + c];
    if (!(pivot > 0)) return 0;
    for (int j = 0; j < k; j++) a[6 * c + j] /= pivot, inv[6 * c + j] /= pivot;
    for (int i = 0; i < k; i++) {
      if (i == c) continue;
      const double f = a[6 * i + c];
      for (int j = 0; j < k; j++) {
        a[6 * i + j] -= f * a[6 * c + j];
        inv[6 * i + j] -= f * inv[6 * c + j];
      }
    }
  }
  return 1;
}

/* Rigid motion `mode` (0-2: translation along x, y, z; 3-5: rotation about
 * x, y, z through the nodes' centroid, in units of the box's longest side)
 * of level 0's nodes, zero on their fixed dofs, into v (3 a node). */
static void rigid_mode(const vox_sparse_host_level *f, const double centre[3], int mode,
                       double *v) {
  const vox_grid *g = &f->grid;
  const int64_t px = g->nx + 1, py = g->ny + 1;
  const double h[3] = {g->voxel_size[0], g->voxel_size[1], g->voxel_size[2]};
  double length = fmax(fmax(g->nx * h[0], g->ny * h[1]), g->nz * h[2]);
  if (!(length > 0)) length = 1;
  const ptrdiff_t nodes = (ptrdiff_t)f->n_nodes;
#pragma omp parallel for schedule(static)
  for (ptrdiff_t m = 0; m < nodes; m++) {
    const int64_t b = f->node_box[m];
    const double x[3] = {((double)(b % px) - centre[0]) * h[0] / length,
                         ((double)(b / px % py) - centre[1]) * h[1] / length,
                         ((double)(b / (px * py)) - centre[2]) * h[2] / length};
    double *o = v + 3 * m;
    o[0] = o[1] = o[2] = 0;
    if (mode < 3) {
      o[mode] = 1;
    } else { /* e_a x x: about x (0, -z, y), about y (z, 0, -x), about z (-y, x, 0) */
      const int a = mode - 3, p = (a + 1) % 3, q = (a + 2) % 3;
      o[p] = -x[q];
      o[q] = x[p];
    }
    for (int c = 0; c < 3; c++)
      if (f->node_fixed[m] >> c & 1) o[c] = 0;
  }
}

/* Finds the rigid motions the supports hold only weakly: those whose
 * Rayleigh quotient z'Kz / z'z (z the motion with the fixed dofs held) is
 * below a thousandth of the largest of the six. Under the uniaxial test
 * the plates hold the translation along the axis and the two rotations
 * about the lateral axes over whole faces, and the pinned nodes alone the
 * other three, whose quotients are then 1e-4 to 1e-6 of the largest; under
 * the friction test none is weak. The weak ones become the vectors Z of
 * rigid_balanced, with K Z, both in z's precision, and (Z'KZ)^-1 from the
 * vectors as stored. u and q are the scratch (the solve sets them
 * afterwards). Its vectors are not in bytes_needed's count: a device
 * without room for them solves with the V-cycle alone. */
static vox_status rigid_modes_setup(vox_context *ctx, sparse_system *s,
                                    const vox_sparse_host_level *f, int mixed) {
  if (!f->node_box || !f->node_fixed || f->n_nodes == 0) return VOX_OK;
  vox_backend *be = s->be;
  vox_sparse_level *op = s->level[0].op;
  const size_t n = 3 * f->n_nodes;
  double *v = malloc(n * sizeof *v);
  if (!v) return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
  const vox_grid *g = &f->grid;
  const int64_t px = g->nx + 1, py = g->ny + 1;
  double c0 = 0, c1 = 0, c2 = 0;
  const ptrdiff_t nodes = (ptrdiff_t)f->n_nodes;
#pragma omp parallel for schedule(static) reduction(+ : c0, c1, c2)
  for (ptrdiff_t m = 0; m < nodes; m++) {
    const int64_t b = f->node_box[m];
    c0 += (double)(b % px), c1 += (double)(b / px % py), c2 += (double)(b / (px * py));
  }
  const double centre[3] = {c0 / (double)nodes, c1 / (double)nodes, c2 / (double)nodes};
  vox_status st = VOX_OK;
  double quotient[6], largest = 0;
  for (int mode = 0; mode < 6 && st == VOX_OK; mode++) {
    double zz = 0, zkz = 0;
    rigid_mode(f, centre, mode, v);
    st = be->ops->vec->upload(be, &s->u, v);
    if (st == VOX_OK) st = s->o->apply(be, op, &s->u, &s->q, 0);
    if (st == VOX_OK) st = s->o->vec_dot(be, &s->u, &s->u, &zz);
    if (st == VOX_OK) st = s->o->vec_dot(be, &s->u, &s->q, &zkz);
    quotient[mode] = zz > 0 ? zkz / zz : INFINITY;
    if (isfinite(quotient[mode])) largest = fmax(largest, quotient[mode]);
  }
  int kept[6], k = 0;
  for (int mode = 0; mode < 6; mode++)
    if (quotient[mode] < 1e-3 * largest) kept[k++] = mode;
  const vox_scalar scalar = mixed ? VOX_FLOAT : VOX_DOUBLE;
  /* no room: the V-cycle alone */
  int room = 1;
  for (int i = 0; i < k && room; i++)
    room = vec(s, n, scalar, &s->rigid[i]) == VOX_OK &&
           vec(s, n, scalar, &s->rigid_k[i]) == VOX_OK;
  if (room && k && !s->r_single.data) room = vec(s, n, VOX_DOUBLE, &s->rigid_t) == VOX_OK;
  if (!room) {
    vox_context_clear_error(ctx);
    rigid_free(s);
    k = 0;
  }
  s->n_rigid = k;
  for (int i = 0; i < k && st == VOX_OK; i++) {
    rigid_mode(f, centre, kept[i], v);
    st = be->ops->vec->upload(be, &s->u, v);
    if (st == VOX_OK) st = assign(s, &s->rigid[i], &s->u);
  }
  free(v);
  double e[36] = {0};
  for (int i = 0; i < s->n_rigid && st == VOX_OK; i++) {
    /* K Z_i of the stored (rounded) Z_i */
    st = assign(s, &s->u, &s->rigid[i]);
    if (st == VOX_OK) st = s->o->apply(be, op, &s->u, &s->q, 0);
    if (st == VOX_OK) st = assign(s, &s->rigid_k[i], &s->q);
    for (int j = 0; j <= i && st == VOX_OK; j++)
      st = s->o->vec_dot(be, &s->rigid[j], &s->q, &e[6 * i + j]);
    for (int j = 0; j < i; j++) e[6 * j + i] = e[6 * i + j];
  }
  /* (not expected: Z'KZ of independent motions held somewhere is
   * positive definite) the V-cycle alone */
  if (st == VOX_OK && s->n_rigid && !invert_small(s->n_rigid, e, s->rigid_inverse)) rigid_free(s);
  return st;
}

vox_status vox_sparse_solve_elasticity(vox_context *ctx, vox_backend *be, const vox_model *model,
                                       const vox_solver_options *options, double *displacement,
                                       vox_solve_result *results, vox_sparse_stats *stats) {
  return vox_sparse_solve_elasticity_with(ctx, be, model, NULL, options, NULL, displacement,
                                          results, stats);
}

vox_status vox_sparse_solve_elasticity_with(vox_context *ctx, vox_backend *be,
                                            const vox_model *model, const double *moduli,
                                            const vox_solver_options *options,
                                            vox_sparse_hierarchy *prepared, double *displacement,
                                            vox_solve_result *results, vox_sparse_stats *stats) {
  vox_sparse_hierarchy h = {0};
  if (prepared) h = *prepared, *prepared = (vox_sparse_hierarchy){0};
  int use_sa = 0, split = 0;
  double nu = 0;
  vox_status st = solve_kind(ctx, model, options, &use_sa, &split, &nu);
  if (st == VOX_OK && !be->ops->sparse)
    st = vox_error(ctx, VOX_ERR_UNSUPPORTED, "the %s backend has no sparse solver",
                   be->ops->name);
  if (st == VOX_OK && use_sa && !be->ops->sparse->matrix_create)
    st = vox_error(ctx, VOX_ERR_UNSUPPORTED,
                   "sparse coarse levels sa: the %s backend has no smoothed-aggregation levels "
                   "yet (use split or box)",
                   be->ops->name);
  if (st != VOX_OK) {
    vox_sparse_hierarchy_free(&h);
    return st;
  }
  const double t0 = now();
  const vox_grid *g = &model->grid;
  const size_t nb = (size_t)vox_grid_nodes(g);
  /* one process builds the hierarchy for all where the backend shares it
   * (the MPI backend: the ranks would each build the same, in each
   * other's way) */
  const vox_sparse_ops *so = be->ops->sparse;
  const int builds = !so->builds_hierarchy || so->builds_hierarchy(be);
  if (!prepared && builds) st = build_hierarchy(ctx, model, moduli, options, use_sa, split, nu, &h);
  const double t_built = now();
  if (so->share_hierarchy) st = so->share_hierarchy(be, st, &h);
  const double t_shared = now();
  TRY(st);
  vox_sa_hierarchy sa = {0};
  int sa_point = 0;
  if (use_sa) {
    vox_sa_options sao;
    vox_sa_options_default(&sao);
    /* the prolongator smoothed with the diagonal instead of the 3 x 3 and
     * 6 x 6 blocks: a comparison (more CG iterations: docs/experiments.md) */
    sao.point_diagonal = sa_point = options->sparse.sa_point_diagonal != 0;
    st = vox_sa_build(ctx, &h, &sao, &sa);
    if (st != VOX_OK) {
      vox_sparse_hierarchy_free(&h);
      return st;
    }
  }

  sparse_system s = {.be = be, .o = be->ops->sparse, .options = *options, .sa = use_sa};
  s.profile = options->sparse.profile != 0;
  /* recorded V-cycles: not when profiling (it times the parts on the
   * host), nor on SA levels (their matrix ops are not recorded) */
  s.record = s.o->record_begin && !s.profile && !use_sa && options->sparse.record;
  s.block_levels = block_levels_of(&options->sparse);
  const double t_bounds = now();
  st = vox_jacobi_spectrum_bound(ctx, h.level[0].ke, 24, &s.diagonal_bound);
  if (st == VOX_OK)
    st = vox_block_jacobi_spectrum_bound(ctx, h.level[0].ke, 24, 3, &s.block_bound);
  const double t_system = now();
  if (st == VOX_OK)
    st = use_sa ? build_sa_system(ctx, be, &h, &sa, options, sa_point, &s)
                : build_system(ctx, be, &h, options, &s);
  if (st == VOX_OK) set_degrees(&s);
  if (st == VOX_OK) st = set_visits(ctx, &s);
  /* the levels are on the backend: the host keeps what the loads and the
   * return read (the SA levels' setup is kept whole) */
  if (st == VOX_OK && !use_sa) vox_sparse_hierarchy_trim(&h);
  const vox_sparse_host_level *f = &h.level[0];
  if (st == VOX_OK && options->sparse.rigid_modes)
    st = rigid_modes_setup(ctx, &s, f, options->precision == VOX_PRECISION_MIXED);
  const size_t n = 3 * f->n_nodes;
  /* the results arrive here (and the caller's start is read) or elsewhere
   * (an MPI rank whose rank 0 alone takes them: no box, no host copy) */
  const vox_results_place place = vox_results(be);
  const int receive = place != VOX_RESULTS_ELSEWHERE;
  if (st == VOX_OK && receive && !displacement)
    st = vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "no array for the displacements");
  /* (huge pages: the clearing beside the iterations faults 2 MB at a time) */
  double *host = st == VOX_OK && receive ? vox_host_malloc(n * sizeof *host) : NULL;
  if (st == VOX_OK && receive && !host) st = vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
  /* when profiling, after the setup's queued work */
  const double t1 = wait_now(&s);
  double rhs_seconds = 0, return_seconds = 0;
  const int n_cases = model->n_load_cases > 0 ? model->n_load_cases : 1;
  double t_case = t1;
  vox_sparse_entries fixed = {0};
  if (st == VOX_OK) st = vox_sparse_prescribed_entries(ctx, model, &h, &fixed);
  for (int c = 0; c < n_cases && st == VOX_OK; c++) {
    double *ub = receive ? displacement + (size_t)c * 3 * nb : NULL;
    vox_solve_result *res = &results[c];
    memset(res, 0, sizeof *res);
    /* b = f - K g on the free dofs: g (the prescribed values) into u (in
     * double; p may be float), K g into q; g and f set entry by entry (a
     * few plates' worth), not uploaded as whole vectors */
    vox_sparse_entries f_entries = {0};
    st = s.be->ops->vec->set(be, &s.u, 0);
    if (st == VOX_OK) st = s.o->vec_scatter(be, &s.u, fixed.n, fixed.index, fixed.value);
    if (st == VOX_OK) st = s.o->apply(be, s.level[0].op, &s.u, &s.q, VOX_APPLY_FULL);
    /* g'Kg and (K g)_f for the energy and reaction tests (ksp.h); the
     * reaction test is off without prescribed values */
    s.lift_energy = 0;
    if (st == VOX_OK && (s.options.energy_tol > 0 || s.options.reaction_tol > 0))
      st = s.o->vec_dot(be, &s.u, &s.q, &s.lift_energy);
    if (st == VOX_OK && s.options.reaction_tol > 0 && s.lift_energy != 0) {
      if (!s.lift_force.data) st = vec(&s, s.level[0].n_dofs, VOX_DOUBLE, &s.lift_force);
      if (st == VOX_OK) st = s.be->ops->vec->set(be, &s.lift_force, 0);
      if (st == VOX_OK) st = s.o->vec_axpy(be, &s.lift_force, 1, &s.q);
      if (st == VOX_OK) st = s.o->zero_fixed(be, s.level[0].op, &s.lift_force);
    }
    if (st == VOX_OK) st = vox_sparse_load_entries(ctx, model, &h, c, &f_entries);
    if (st == VOX_OK) st = s.be->ops->vec->set(be, &s.r, 0);
    if (st == VOX_OK)
      st = s.o->vec_scatter(be, &s.r, f_entries.n, f_entries.index, f_entries.value);
    vox_sparse_entries_free(&f_entries);
    if (st == VOX_OK) st = s.o->vec_axpy(be, &s.r, -1, &s.q);
    if (st == VOX_OK) st = s.o->zero_fixed(be, s.level[0].op, &s.r);
    double bb = 0;
    if (st == VOX_OK) st = s.o->vec_dot(be, &s.r, &s.r, &bb);
    res->rhs_norm = sqrt(bb);
    /* u: the initial guess on the free dofs, g on the fixed ones (the
     * guess uploaded only where it is not zero; none with zero_start) */
    int guess = 0;
    if (st == VOX_OK && bb != 0 && place == VOX_RESULTS_EVERY_PROCESS && !options->zero_start) {
      const ptrdiff_t nodes = (ptrdiff_t)f->n_nodes;
#pragma omp parallel for schedule(static) reduction(| : guess)
      for (ptrdiff_t m = 0; m < nodes; m++)
        for (int k = 0; k < 3; k++)
          guess |= !(f->node_fixed[m] >> k & 1) && ub[3 * f->node_box[m] + k] != 0;
    }
    if (st == VOX_OK && guess) {
#pragma omp parallel for schedule(static)
      for (size_t m = 0; m < f->n_nodes; m++)
        for (int k = 0; k < 3; k++)
          host[3 * m + k] = (f->node_fixed[m] >> k & 1) ? 0 : ub[3 * f->node_box[m] + k];
      st = be->ops->vec->upload(be, &s.u, host);
    } else if (st == VOX_OK) {
      st = s.be->ops->vec->set(be, &s.u, 0);
    }
    if (st == VOX_OK) st = s.o->vec_scatter(be, &s.u, fixed.n, fixed.index, fixed.value);
    if (st == VOX_OK && bb == 0) {
      res->reason = VOX_CONVERGED_ZERO_RHS; /* u = g is exact */
    } else if (st == VOX_OK) {
      /* the stage "solve: iterating": from here the device works and the
       * host mostly waits (a writer beside the solve uses that time) */
      const vox_progress p = {.stage = "solve: iterating", .iteration = -1,
                              .max_iterations = -1, .objective = NAN, .volume_fraction = NAN,
                              .change = NAN, .non_discreteness = NAN, .penalty = NAN, .q = NAN,
                              .cg_iterations = -1, .seconds = now() - t0};
      st = vox_report_progress(ctx, &p);
    }
    /* while the device iterates, a thread zeroes the box's displacements
     * (the guess is read) and touches the download's buffer: 490 MB of
     * fresh or stale pages on a clinical sample, whose clearing and first
     * touch would otherwise follow the solve */
    void *const area[2] = {host, ub};
    const size_t bytes[2] = {n * sizeof *host, 3 * nb * sizeof *ub};
    vox_background_clear clearing;
    vox_background_clear_start(&clearing, area, bytes, receive ? 2 : 0);
    if (st == VOX_OK && bb != 0) {
      const double tc = wait_now(&s);
      rhs_seconds += tc - t_case;
      st = pcg(&s, res);
      s.pcg_seconds += now() - tc;
    }
    const double t_return = wait_now(&s);
    vox_background_clear_finish(&clearing);
    res->storage = VOX_STORAGE_SPARSE;
    res->levels = s.n_levels;
    res->setup_seconds = t1 - t0;
    if (st == VOX_OK) st = vox_vec_download_result(be, &s.u, host);
    if (st == VOX_OK && receive) {
      /* back to the box: nodes that touch no material are held at zero (or
       * at a value prescribed there), as in the full-box system */
#pragma omp parallel for schedule(static)
      for (size_t m = 0; m < f->n_nodes; m++)
        for (int k = 0; k < 3; k++) ub[3 * f->node_box[m] + k] = host[3 * m + k];
      st = hold_outside(ctx, model, &h, ub);
    }
    t_case = wait_now(&s);
    return_seconds += t_case - t_return;
  }
  const double t2 = now();
  if (stats) {
    memset(stats, 0, sizeof *stats);
    stats->n_levels = s.n_levels;
    stats->n_dofs = n;
    stats->n_elements = f->n_elements;
    for (int l = 0; l < h.n_levels && l < 16; l++) stats->level_dofs[l] = 3 * h.level[l].n_nodes;
    if (use_sa) {
      size_t entries = 0;
      for (int l = 0; l < sa.n_levels && l < 16; l++) {
        stats->level_dofs[l] = sa.level[l].n_nodes * (size_t)sa.level[l].bn;
        entries += sa.level[l].scalar_nonzeros;
      }
      stats->sa = 1;
      stats->operator_complexity = (double)entries / (double)sa.level[0].scalar_nonzeros;
      stats->sa_setup_seconds = sa.setup_seconds;
      const vox_sa_timing *tm = &sa.timing;
      const double parts[6] = {tm->aggregate, tm->tentative, tm->prolongator,
                               tm->galerkin,  tm->smoother,  tm->coarsest};
      memcpy(stats->sa_part_seconds, parts, sizeof parts);
    }
    stats->bytes = s.bytes;
    stats->replayed = s.recording != NULL;
    /* with SA only level 0 has 3 x 3 blocks (the assembled levels 6 x 6) */
    const int smoothed = use_sa ? 1 : s.n_levels - 1;
    stats->block_levels = s.block_levels < smoothed ? s.block_levels : smoothed;
    stats->setup_seconds = t1 - t0;
    stats->build_seconds = t_built - t0;
    stats->share_seconds = t_shared - t_built;
    stats->bounds_seconds = t_system - t_bounds;
    stats->system_seconds = t1 - t_system;
    stats->solve_seconds = t2 - t1;
    stats->pcg_seconds = s.pcg_seconds;
    stats->cg_seconds = s.cg_seconds;
    memcpy(stats->level_seconds, s.level_seconds, sizeof s.level_seconds);
    stats->rhs_seconds = rhs_seconds;
    stats->return_seconds = return_seconds;
  }
  vox_host_free(host);
  vox_sparse_entries_free(&fixed);
  system_free(&s);
  vox_sa_free(&sa);
  vox_sparse_hierarchy_free(&h);
  return st;
}
