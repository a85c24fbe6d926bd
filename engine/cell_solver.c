/* SPDX-License-Identifier: BSD-3-Clause */
/* The periodic cell solver's driver (cell_solver.h): the hierarchy, its
 * coarsest pseudo-inverse on the host, and the hooks of the one
 * conjugate gradients (ksp.h) with one V-cycle of the shared cycle (pc.h)
 * as the preconditioner. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cell_solver.h"
#include "galerkin_element.h"
#include "ksp.h"
#include "voxfe/element.h"

static int even(vox_cell_dims d) { return d.nx % 2 == 0 && d.ny % 2 == 0 && d.nz % 2 == 0; }
static int64_t nodes_of(vox_cell_dims d) { return (int64_t)d.nx * d.ny * d.nz; }

int vox_cell_solver_levels(const vox_grid *grid, vox_cell_dims dims[VOX_CELL_MAX_LEVELS]) {
  /* node indices of every level and of the fem's layout (with images)
   * below 2^32: vox_cell_coords */
  if (!grid->periodic || (double)(grid->nx + 1) * (grid->ny + 1) * (grid->nz + 1) >= 4294967296.0)
    return 0;
  dims[0] = (vox_cell_dims){(int)grid->nx, (int)grid->ny, (int)grid->nz};
  int n = 1;
  /* levels 0..2 always (the two matrix-free ones and the first stencil),
   * then down while the coarsest is too large to invert densely */
  while (n < 3 || 3 * nodes_of(dims[n - 1]) > VOX_CELL_COARSEST_DOFS) {
    const vox_cell_dims d = dims[n - 1];
    if (!even(d) || d.nx < 4 || d.ny < 4 || d.nz < 4 || n == VOX_CELL_MAX_LEVELS) return 0;
    dims[n++] = (vox_cell_dims){d.nx / 2, d.ny / 2, d.nz / 2};
  }
  return even(dims[n - 1]) ? n : 0;
}

/* The trilinear interpolation from the corners of a level-2 element to the
 * 24 dofs of its fine element at sub-position f = fx + 4 fy + 16 fz (4 fine
 * elements per axis). */
static void interpolation4(int f, double q[576]) {
  const int sub[3] = {f & 3, (f >> 2) & 3, f >> 4};
  memset(q, 0, 576 * sizeof *q);
  for (int a = 0; a < 8; a++)
    for (int c = 0; c < 8; c++) {
      double w = 1;
      for (int axis = 0; axis < 3; axis++) {
        const int x = sub[axis] + vox_hex8_corner[a][axis]; /* 0..4 fine units */
        w *= 1 - 0.25 * abs(x - 4 * vox_hex8_corner[c][axis]);
      }
      for (int d = 0; d < 3; d++) q[(3 * a + d) * 24 + 3 * c + d] = w;
    }
}

double vox_cell_solver_bytes(const vox_backend *be, const vox_grid *grid) {
  vox_cell_desc desc = {0};
  if (!be->ops->cell || !(desc.n_levels = vox_cell_solver_levels(grid, desc.dims))) return 0;
  return 4 * vox_cell_floats(&desc);
}

double vox_cell_solver_kept_bytes(const vox_backend *be, const vox_grid *grid) {
  vox_cell_desc desc = {0};
  if (!be->ops->cell || !(desc.n_levels = vox_cell_solver_levels(grid, desc.dims))) return 0;
  return 4 * vox_cell_kept_floats(&desc);
}

void vox_cell_solver_destroy(vox_cell_solver *cs) {
  if (!cs) return;
  if (cs->cell) cs->be->ops->cell->destroy(cs->be, cs->cell);
  free(cs->coarsest);
  free(cs->stencil);
  free(cs);
}

void vox_cell_solver_release(vox_cell_solver *cs) {
  if (cs->held) cs->be->ops->cell->release(cs->be, cs->cell);
  cs->held = cs->built = 0;
}

vox_status vox_cell_solver_create(vox_backend *be, const vox_grid *grid, const double ke[576],
                                  vox_cell_solver **out) {
  return vox_cell_solver_create_slab(be, grid, ke, 0, out);
}

vox_status vox_cell_solver_create_slab(vox_backend *be, const vox_grid *grid, const double ke[576],
                                       int slab, vox_cell_solver **out) {
  *out = NULL;
  vox_cell_desc desc = {.slab = slab};
  if (!be->ops->cell || !(desc.n_levels = vox_cell_solver_levels(grid, desc.dims))) return VOX_OK;
  vox_cell_solver *cs = calloc(1, sizeof *cs);
  const size_t nc = (size_t)nodes_of(desc.dims[desc.n_levels - 1]), n = 3 * nc;
  double *matrices = malloc((8 + 64) * 576 * sizeof *matrices);
  if (cs) {
    cs->coarsest = malloc(n * n * sizeof *cs->coarsest);
    cs->stencil = malloc(VOX_CELL_BLOCK * nc * sizeof *cs->stencil);
  }
  if (!cs || !cs->coarsest || !cs->stencil || !matrices) {
    free(matrices);
    vox_cell_solver_destroy(cs);
    return vox_error(be->ctx, VOX_ERR_NO_MEMORY, "out of memory (the cell solver)");
  }
  cs->be = be;
  double *g = matrices, *h = matrices + 8 * 576;
  vox_galerkin_element_products(ke, 3, g);
  for (int f = 0; f < 64; f++) {
    double q[576];
    interpolation4(f, q);
    vox_galerkin_triple_product(q, ke, 24, h + 576 * f);
  }
  desc.ke = ke, desc.g = g, desc.h = h;
  vox_status s = be->ops->cell->create(be, &desc, &cs->cell);
  free(matrices);
  desc.ke = desc.g = desc.h = NULL; /* the backend keeps its copies */
  cs->desc = desc;
  cs->held = s == VOX_OK;
  if (s != VOX_OK) {
    vox_cell_solver_destroy(cs);
    return s;
  }
  *out = cs;
  return VOX_OK;
}

/* In place: the inverse of the SPD matrix a (n x n) by its Cholesky factor;
 * -1 if a is not positive definite. */
static int invert_spd(double *a, size_t n) {
  /* a = L L' (L in the lower triangle) */
  for (size_t j = 0; j < n; j++) {
    double d = a[j * n + j];
    for (size_t k = 0; k < j; k++) d -= a[j * n + k] * a[j * n + k];
    if (!(d > 0)) return -1;
    d = sqrt(d);
    a[j * n + j] = d;
    for (size_t i = j + 1; i < n; i++) {
      double s = a[i * n + j];
      for (size_t k = 0; k < j; k++) s -= a[i * n + k] * a[j * n + k];
      a[i * n + j] = s / d;
    }
  }
  /* L^-1 in the lower triangle */
  for (size_t j = 0; j < n; j++) {
    a[j * n + j] = 1 / a[j * n + j];
    for (size_t i = j + 1; i < n; i++) {
      double s = 0;
      for (size_t k = j; k < i; k++) s -= a[i * n + k] * a[k * n + j];
      a[i * n + j] = s / a[i * n + i];
    }
  }
  /* a^-1 = L^-T L^-1, symmetric: computed into the upper triangle row by
   * row (reading only the lower one), then mirrored */
  for (size_t i = 0; i < n; i++)
    for (size_t j = i; j < n; j++) {
      double s = 0;
      for (size_t k = j; k < n; k++) s += a[k * n + i] * a[k * n + j];
      a[i * n + j] = s; /* i <= j: stored above the diagonal or on it */
    }
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < i; j++) a[i * n + j] = a[j * n + i];
  return 0;
}

/* The coarsest level's matrix from its stencil into a (n x n), symmetrised
 * (the stencil is symmetric, but where an axis has 2 nodes several blocks
 * add into one entry, in another order in its mirror), plus shift on the
 * diagonal; its mean diagonal entry returned. */
static double coarsest_matrix(const vox_cell_solver *cs, double shift, double *a) {
  const vox_cell_dims d = cs->desc.dims[cs->desc.n_levels - 1];
  const size_t nc = (size_t)nodes_of(d), n = 3 * nc;
  memset(a, 0, n * n * sizeof *a);
  for (size_t node = 0; node < nc; node++) {
    int i, j, k;
    vox_cell_coords(d, (int64_t)node, &i, &j, &k);
    for (int t = 0; t < 27; t++) {
      const size_t nb = (size_t)vox_cell_node(d, i + t % 3 - 1, j + (t / 3) % 3 - 1, k + t / 9 - 1);
      float s[9];
      vox_cell_stencil_block(d, cs->stencil, i, j, k, t, s);
      for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++) a[(3 * node + r) * n + 3 * nb + c] += s[3 * r + c];
    }
  }
  double diag = 0;
  for (size_t i = 0; i < n; i++) diag += a[i * n + i] / (double)n;
  for (size_t i = 0; i < n; i++) {
    for (size_t j = 0; j < i; j++)
      a[i * n + j] = a[j * n + i] = 0.5 * (a[i * n + j] + a[j * n + i]);
    a[i * n + i] += shift;
  }
  return diag;
}

/* The coarsest level's pseudo-inverse A+ from its stencil: with T the unit
 * translations (orthonormal) and c a typical diagonal entry, A + c T T' is
 * definite and its inverse is A+ + T T' / c (A's null space is exactly the
 * translations: the fine periodic operator's, kept by the Galerkin
 * products). At SIMP's contrasts the float stencils' rounding can leave A a
 * little indefinite beyond them (a 256^3 cell in its 18th design
 * iteration): then A + s I, s from 1e-7 of c up by tenfold steps, the
 * correction of the modes under s left to the smoothers. */
static vox_status coarsest_inverse(vox_cell_solver *cs) {
  vox_backend *be = cs->be;
  const int last = cs->desc.n_levels - 1;
  const size_t nc = (size_t)nodes_of(cs->desc.dims[last]), n = 3 * nc;
  TRY(be->ops->cell->stencil_download(be, cs->cell, last, cs->stencil));
  double *a = cs->coarsest;
  double shift = 0, diag = coarsest_matrix(cs, 0, a);
  for (;;) {
    const double tt = diag / (double)nc; /* c T T': c / nc on dofs of one component */
    for (size_t i = 0; i < n; i++)
      for (size_t j = i % 3; j < n; j += 3) a[i * n + j] += tt;
    if (invert_spd(a, n) == 0) break;
    shift = shift > 0 ? 10 * shift : 1e-7 * diag;
    if (!(shift <= 1e-2 * diag))
      return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT,
                       "cell solver: the coarsest level is singular beyond its translations");
    coarsest_matrix(cs, shift, a);
  }
  /* less T T' / (c + s): the translations' eigenvalue of A + s I + c T T' */
  const double back = 1 / ((diag + shift) * (double)nc);
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < n; j++) a[i * n + j] -= i % 3 == j % 3 ? back : 0;
  return be->ops->cell->coarsest_upload(be, cs->cell, a);
}

vox_status vox_cell_solver_set_moduli(vox_cell_solver *cs, const vox_vec *moduli) {
  cs->built = 0;
  return cs->be->ops->cell->set_moduli(cs->be, cs->cell, moduli);
}

/* The hierarchy from the fine moduli: held again where released, the
 * stencils, the coarsest pseudo-inverse. */
static vox_status build(vox_cell_solver *cs) {
  const vox_cell_ops *o = cs->be->ops->cell;
  if (!cs->held) TRY(o->hold(cs->be, cs->cell));
  cs->held = 1;
  for (int l = 2; l < cs->desc.n_levels; l++) TRY(o->galerkin(cs->be, cs->cell, l));
  TRY(coarsest_inverse(cs));
  cs->built = 1;
  return VOX_OK;
}

vox_status vox_cell_solver_update(vox_cell_solver *cs, const vox_vec *moduli) {
  TRY(vox_cell_solver_set_moduli(cs, moduli));
  return build(cs);
}

/* The cell's levels for the one cycle (pc.h): every vector is the
 * backend's, of the level named. Down through the levels, each
 * pre-smoothed (forward colours), the coarsest solve, and up, each
 * post-smoothed (backward colours): a symmetric operator, as CG needs. */
static vox_status cell_presmooth(void *self, int l, int warm) {
  vox_cell_solver *cs = self;
  (void)warm; /* a V-cycle: always from zero */
  if (l == 0) TRY(cs->be->ops->cell->clear(cs->be, cs->cell)); /* the coarser x: restrict */
  return cs->be->ops->cell->smooth(cs->be, cs->cell, l, 0);
}
static vox_status cell_restrict(void *self, int l) {
  vox_cell_solver *cs = self;
  return cs->be->ops->cell->restrict_residual(cs->be, cs->cell, l);
}
static vox_status cell_coarse_solve(void *self, int l) {
  vox_cell_solver *cs = self;
  (void)l;
  return cs->be->ops->cell->coarsest_solve(cs->be, cs->cell);
}
static vox_status cell_prolong(void *self, int l) {
  vox_cell_solver *cs = self;
  return cs->be->ops->cell->prolong_add(cs->be, cs->cell, l);
}
static vox_status cell_postsmooth(void *self, int l) {
  vox_cell_solver *cs = self;
  return cs->be->ops->cell->smooth(cs->be, cs->cell, l, 1);
}
static const vox_mg_level_ops cell_levels = {.presmooth = cell_presmooth,
                                             .restrict_residual = cell_restrict,
                                             .coarse_solve = cell_coarse_solve,
                                             .prolong = cell_prolong,
                                             .postsmooth = cell_postsmooth};

/* The cell's preconditioner as an object: z = M b, one V-cycle from zero
 * (b and z are the backend's: level 0's b and x), the hierarchy set up
 * from the moduli where they changed. */
static vox_status cell_pc_setup(void *self) {
  vox_cell_solver *cs = self;
  return cs->built ? VOX_OK : build(cs);
}
static vox_status cell_pc_apply(void *self, const void *r, void *z) {
  vox_cell_solver *cs = self;
  (void)r, (void)z;
  return vox_multigrid_cycle(&cell_levels, cs, cs->desc.n_levels, NULL);
}
static const vox_pc_ops cell_pc = {.name = "cell multigrid", .setup = cell_pc_setup,
                                   .apply = cell_pc_apply};

/* The one CG's hooks (ksp.h) on the cell's vectors: the half-precision
 * field u (x), b (r), x (z, then q), p. */
typedef struct cell_cg {
  vox_cell_solver *cs;
  vox_pc pc;
  vox_vec *u;
} cell_cg;

static vox_status cell_product(void *self, double *pq) {
  cell_cg *c = self;
  return c->cs->be->ops->cell->cg_product(c->cs->be, c->cs->cell, pq);
}
static vox_status cell_precondition(void *self) {
  cell_cg *c = self;
  return vox_pc_apply(&c->pc, NULL, NULL);
}
static vox_status cell_update(void *self, double alpha, double *rr) {
  cell_cg *c = self;
  return c->cs->be->ops->cell->cg_update(c->cs->be, c->cs->cell, alpha, c->u, rr);
}
static vox_status cell_direction(void *self, double rz_old, double *rz) {
  cell_cg *c = self;
  return c->cs->be->ops->cell->cg_direction(c->cs->be, c->cs->cell, rz_old, rz);
}
static const vox_ksp_ops cell_cg_ops = {.product = cell_product,
                                        .precondition = cell_precondition,
                                        .update = cell_update,
                                        .direction = cell_direction};

vox_status vox_cell_solver_solve(vox_cell_solver *cs, const double kchi[24], double scale2,
                                 const vox_solver_options *options, vox_vec *u,
                                 vox_solve_result *result) {
  return vox_cell_solver_solve_guess(cs, kchi, scale2, options, u, result, NULL);
}

vox_status vox_cell_solver_solve_guess(vox_cell_solver *cs, const double kchi[24], double scale2,
                                       const vox_solver_options *options, vox_vec *u,
                                       vox_solve_result *result, int *from_rest) {
  const double zero_ff = VOX_CELL_ZERO_LOAD * VOX_CELL_ZERO_LOAD * scale2;
  vox_backend *be = cs->be;
  const vox_cell_ops *o = be->ops->cell;
  double ff, rr;
  memset(result, 0, sizeof *result);
  cell_cg c = {.cs = cs, .pc = {.ops = &cell_pc, .self = cs}, .u = u};
  TRY(vox_pc_setup(&c.pc));
  TRY(o->set_load(be, cs->cell, kchi));
  TRY(o->load_norm(be, cs->cell, &ff));
  result->rhs_norm = sqrt(ff);
  if (ff <= zero_ff) { /* homogenize.c: the exact solution of no load */
    if (from_rest) *from_rest = 1;
    result->residual_norm = result->rhs_norm;
    result->reason = VOX_CONVERGED_RTOL;
    return o->zero_field(be, cs->cell, u);
  }
  TRY(o->cg_residual(be, cs->cell, u, &rr));
  if (from_rest) *from_rest = !(rr < ff);
  if (from_rest && *from_rest) { /* the guess is no nearer than rest: from rest */
    TRY(o->zero_field(be, cs->cell, u));
    TRY(o->cg_residual(be, cs->cell, u, &rr));
  }
  /* the start's energy: 0 from rest; a guess's is not formed (the cell's
   * load stays inside its ops), which leaves the energy test off */
  const double start_energy = from_rest && *from_rest ? 0 : NAN;
  return vox_ksp_cg(&cell_cg_ops, &c, rr, result->rhs_norm, start_energy, options, result);
}
