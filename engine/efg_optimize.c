/* SPDX-License-Identifier: BSD-3-Clause */
/* Compliance minimisation on the element-free Galerkin discretisation
 * (efg_optimize.h). */
#include "efg_optimize.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "efg_assembly.h"
#include "efg_multigrid.h"
#include "efg_mg.h"
#include "efg_oc.h"
#include "efg_ops.h"
#include "efg_patches.h"
#include "efg_sensitivity.h"
#include "ksp.h"
#include "name_table.h"
#include "recorded.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* ---- the solve: the one CG loop on host arrays -------------------------------- */

/* y = A x for a matrix of 3x3 blocks: vox_bsr_apply with the block size
 * known, so that the row's sums stay in registers (the products are most
 * of a design iteration's time). */
static void apply3(const vox_bsr *a, const double *restrict x, double *restrict y) {
  const ptrdiff_t n = (ptrdiff_t)a->n_rows;
#pragma omp parallel for schedule(static)
  for (ptrdiff_t i = 0; i < n; i++) {
    double s0 = 0, s1 = 0, s2 = 0;
    for (size_t k = a->row_start[i]; k < a->row_start[i + 1]; k++) {
      const double *v = a->val + 9 * k, *xc = x + 3 * (size_t)a->col[k];
      s0 += v[0] * xc[0] + v[1] * xc[1] + v[2] * xc[2];
      s1 += v[3] * xc[0] + v[4] * xc[1] + v[5] * xc[2];
      s2 += v[6] * xc[0] + v[7] * xc[1] + v[8] * xc[2];
    }
    y[3 * i] = s0, y[3 * i + 1] = s1, y[3 * i + 2] = s2;
  }
}

void vox_efg_stiffness_apply(const void *k, const double *x, double *y) { apply3(k, x, y); }

/* The block Jacobi preconditioner as a preconditioner object (pc.h) on
 * host arrays: z = D^-1 r with D the 3x3 diagonal blocks of K. */
static vox_status block_jacobi_apply(void *self, const void *r, void *z) {
  apply3(self, r, z);
  return VOX_OK;
}

static const vox_pc_ops block_jacobi_ops = {.name = "block-jacobi", .apply = block_jacobi_apply};

typedef struct host_cg {
  const vox_bsr *k;
  vox_pc pc;
  size_t n;
  double *x, *r, *z, *p, *q;
} host_cg;

static vox_status cg_product(void *self, double *pq) {
  host_cg *c = self;
  apply3(c->k, c->p, c->q);
  if (pq) *pq = vox_dot_fixed(c->p, c->q, c->n);
  return VOX_OK;
}

static vox_status cg_precondition(void *self) {
  host_cg *c = self;
  return vox_pc_apply(&c->pc, c->r, c->z);
}

static vox_status cg_update(void *self, double alpha, double *rr) {
  host_cg *c = self;
  const ptrdiff_t n = (ptrdiff_t)c->n;
#pragma omp parallel for schedule(static)
  for (ptrdiff_t i = 0; i < n; i++) {
    c->x[i] += alpha * c->p[i];
    c->r[i] -= alpha * c->q[i];
  }
  *rr = vox_dot_fixed(c->r, c->r, c->n);
  return VOX_OK;
}

static vox_status cg_direction(void *self, double rz_old, double *rz) {
  host_cg *c = self;
  *rz = vox_dot_fixed(c->r, c->z, c->n);
  const ptrdiff_t n = (ptrdiff_t)c->n;
  if (rz_old == 0) { /* the first direction: p = z (p holds no number yet) */
    memcpy(c->p, c->z, c->n * sizeof *c->p);
    return VOX_OK;
  }
  const double beta = *rz / rz_old;
#pragma omp parallel for schedule(static)
  for (ptrdiff_t i = 0; i < n; i++) c->p[i] = c->z[i] + beta * c->p[i];
  return VOX_OK;
}

static const vox_ksp_ops host_cg_ops = {.product = cg_product,
                                        .precondition = cg_precondition,
                                        .update = cg_update,
                                        .direction = cg_direction};

vox_status vox_efg_cg(const vox_bsr *k, const vox_bsr *inverse, const double *f, double *u,
                      const vox_solver_options *options, vox_solve_result *result) {
  const vox_pc pc = {.ops = &block_jacobi_ops, .self = (void *)inverse};
  return vox_efg_cg_pc(k, &pc, f, u, options, result);
}

vox_status vox_efg_cg_pc(const vox_bsr *k, const vox_pc *pc, const double *f, double *u,
                         const vox_solver_options *options, vox_solve_result *result) {
  const size_t n = 3 * k->n_rows;
  memset(result, 0, sizeof *result);
  result->rhs_norm = sqrt(vox_dot_fixed(f, f, n));
  if (result->rhs_norm == 0) { /* u = 0 is exact */
    memset(u, 0, n * sizeof *u);
    result->reason = VOX_CONVERGED_ZERO_RHS;
    return VOX_OK;
  }
  double *work = malloc(4 * n * sizeof *work);
  if (!work) return VOX_ERR_NO_MEMORY;
  host_cg c = {.k = k,
               .pc = *pc,
               .n = n,
               .x = u,
               .r = work,
               .z = work + n,
               .p = work + 2 * n,
               .q = work + 3 * n};
  apply3(k, u, c.r); /* r = f - K u */
  const ptrdiff_t nn = (ptrdiff_t)n;
#pragma omp parallel for schedule(static)
  for (ptrdiff_t i = 0; i < nn; i++) c.r[i] = f[i] - c.r[i];
  /* the start's energy u'(f + r) for the energy test */
  const double start_energy =
      options->energy_tol > 0 ? vox_dot_fixed(u, f, n) + vox_dot_fixed(u, c.r, n) : 0;
  vox_status s = vox_ksp_cg(&host_cg_ops, &c, vox_dot_fixed(c.r, c.r, n), result->rhs_norm,
                            start_energy, options, result);
  free(work);
  /* a preconditioner's failure (only a hook's error ends the loop) */
  if (s != VOX_OK && s != VOX_ERR_NO_MEMORY) return s;
  return s;
}

vox_status vox_efg_block_jacobi(vox_context *ctx, const vox_bsr *k, vox_bsr *out) {
  const size_t n = k->n_rows;
  memset(out, 0, sizeof *out);
  out->n_rows = out->n_cols = n;
  out->br = out->bc = 3;
  out->row_start = malloc((n + 1) * sizeof *out->row_start);
  out->col = malloc((n ? n : 1) * sizeof *out->col);
  out->val = malloc((9 * n + 1) * sizeof *out->val);
  if (!out->row_start || !out->col || !out->val) {
    vox_bsr_free(out);
    return vox_error(ctx, VOX_ERR_NO_MEMORY,
                     "element-free Galerkin: out of memory (block Jacobi preconditioner)");
  }
  ptrdiff_t failed = -1;
#pragma omp parallel for schedule(static) reduction(max : failed)
  for (ptrdiff_t i = 0; i < (ptrdiff_t)n; i++) {
    out->row_start[i] = (size_t)i;
    out->col[i] = (int32_t)i;
    const double *block = NULL;
    for (size_t b = k->row_start[i]; b < k->row_start[i + 1]; b++)
      if (k->col[b] == (int32_t)i) block = k->val + 9 * b;
    if (!block || !vox_efg_spd3_inverse(block, out->val + 9 * (size_t)i))
      failed = i > failed ? i : failed;
  }
  out->row_start[n] = n;
  if (failed >= 0) {
    vox_bsr_free(out);
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "element-free Galerkin: the stiffness block of field node %td is not "
                     "positive definite",
                     failed);
  }
  return VOX_OK;
}

static const char *const preconditioner_names[] = {"jacobi", "sa", "schwarz", "mg"};

const char *vox_efg_preconditioner_name(vox_efg_preconditioner preconditioner) {
  return (unsigned)preconditioner < 4 ? preconditioner_names[preconditioner] : "unknown";
}

int vox_efg_preconditioner_parse(const char *text, vox_efg_preconditioner *preconditioner) {
  const int i = vox_name_index(text, preconditioner_names, 4);
  if (i >= 0) *preconditioner = (vox_efg_preconditioner)i;
  return i >= 0 ? 0 : -1;
}

/* ---- what the loop supports ---------------------------------------------------- */

vox_status vox_efg_optimize_check(vox_context *ctx, vox_backend *be, const vox_model *model,
                                  const vox_optimizer_options *o) {
#define REFUSE(cond, ...)                                                        \
  if (cond) return vox_error(ctx, VOX_ERR_UNSUPPORTED, __VA_ARGS__)
  const int on_device = vox_backend_device(be) != VOX_DEVICE_CPU;
  REFUSE(on_device && !be->ops->efg,
         "discretization efg runs on the CPU and CUDA backends, not on %s", vox_backend_name(be));
  REFUSE(on_device && o->efg_preconditioner == VOX_EFG_PC_SA,
         "discretization efg's smoothed-aggregation preconditioner (efg-preconditioner sa) runs "
         "on the CPU only, not on %s: use device cpu, or efg-preconditioner schwarz or jacobi",
         vox_backend_name(be));
  REFUSE(o->cell_objective != VOX_CELL_NONE,
         "discretization efg minimises the model's compliance, not the %s objective of a "
         "periodic cell",
         vox_cell_objective_name(o->cell_objective));
  REFUSE(model->physics != VOX_PHYSICS_ELASTICITY,
         "discretization efg is for elasticity, not %s", vox_physics_name(model->physics));
  REFUSE(model->objective != VOX_OBJECTIVE_COMPLIANCE,
         "discretization efg minimises compliance, not the %s of a compliant mechanism",
         vox_objective_name(model->objective));
  REFUSE(model->grid.periodic, "discretization efg does not take a periodic grid");
  REFUSE(o->symmetry != VOX_SYMMETRY_NONE, "discretization efg does not take a symmetry (%s)",
         vox_symmetry_name(o->symmetry));
  REFUSE(o->initial != NULL,
         "discretization efg starts from the volume fraction (or the model's nodal densities), "
         "not from an initial design");
  REFUSE(o->resume || o->checkpoint_every > 0,
         "discretization efg has no checkpoints (checkpoint-every, resume)");
  REFUSE(o->update != VOX_UPDATE_OC,
         "discretization efg updates the nodal densities by optimality criteria (optimizer "
         "oc), not %s",
         vox_design_update_name(o->update));
#undef REFUSE
  if (!(o->efg_mg_chebyshev_lower > 0 && o->efg_mg_chebyshev_lower < 1))
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "discretization efg smooths over [l, 1.1] lambda_max with l in (0, 1), not "
                     "%g",
                     o->efg_mg_chebyshev_lower);
  if (o->efg_patch_size != 1 && o->efg_patch_size != 2)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "discretization efg makes patches of 1 or 2 cells a side, not %d",
                     o->efg_patch_size);
  if (!(o->efg_penalty_patch_weight > 0 && o->efg_penalty_patch_weight <= 1))
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "discretization efg weighs its penalty patches by a number in (0, 1], not %g",
                     o->efg_penalty_patch_weight);
  if (!(o->efg_support_scale >= 1) || !(o->efg_penalty_scale > 0))
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "discretization efg needs a support scale >= 1 and a penalty scale > 0, "
                     "not %g and %g",
                     o->efg_support_scale, o->efg_penalty_scale);
  if ((unsigned)o->efg_preconditioner > VOX_EFG_PC_MG)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "unknown EFG preconditioner %d",
                     (int)o->efg_preconditioner);
  if (o->efg_sa_smoother != VOX_EFG_PC_JACOBI && o->efg_sa_smoother != VOX_EFG_PC_SCHWARZ)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "discretization efg's multigrid smooths with jacobi or schwarz, not %s",
                     vox_efg_preconditioner_name(o->efg_sa_smoother));
  if (o->efg_mg_coarse_dofs != 0 &&
      (o->efg_mg_coarse_dofs < 3 || o->efg_mg_coarse_dofs > VOX_EFG_MAX_DENSE_DOFS))
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "discretization efg's multigrid needs a dense level of 3 to %d "
                     "unknowns (or 0, the backend's choice), not %d",
                     VOX_EFG_MAX_DENSE_DOFS, o->efg_mg_coarse_dofs);
  if (o->efg_mg_lanczos_steps < 1 || o->efg_mg_lanczos_steps > VOX_EFG_MG_MAX_LANCZOS_STEPS)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "discretization efg's multigrid bounds its smoothers by 1 to %d Lanczos "
                     "steps, not %d",
                     VOX_EFG_MG_MAX_LANCZOS_STEPS, o->efg_mg_lanczos_steps);
  if (o->efg_mg_refactor < 1)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "discretization efg's multigrid factors its last level at every N-th "
                     "design iteration, N >= 1, not %d",
                     o->efg_mg_refactor);
  if (!(o->efg_mg_refactor_drift >= 0 && o->efg_mg_refactor_drift < INFINITY))
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "discretization efg's multigrid keeps its last level's factor while the "
                     "level's diagonal moves by a fraction >= 0, not %g",
                     o->efg_mg_refactor_drift);
  if (o->efg_sa_degree < 1 || o->efg_sa_aggregate < 0 ||
      !(o->efg_sa_strength >= 0 && o->efg_sa_strength <= 1))
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "discretization efg's multigrid needs a Chebyshev degree >= 1, an "
                     "aggregate size >= 0 and a strength in [0, 1], not %d, %d and %g",
                     o->efg_sa_degree, o->efg_sa_aggregate, o->efg_sa_strength);
  if (o->density_min != VOX_DENSITY_MIN_AUTO && !(o->density_min > 0))
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "discretization efg needs a density minimum > 0 (it has no Emin), not %g",
                     o->density_min);
  return VOX_OK;
}

/* ---- the loop ------------------------------------------------------------------ */

/* The penalties of the FE path's continuation (optimizer.c: Martinez-Frutos et al. 2017 eq. 11
 * and 12) for 1-based iteration k. */
static void continuation(const vox_optimizer_options *o, int k, double *p, double *q) {
  if (!o->continuation) {
    *p = o->penalty;
    *q = o->q_max;
    return;
  }
  *p = k <= o->continuation_start_p ? 1 : fmin(o->penalty, *p * o->continuation_growth_p);
  *q = k <= o->continuation_start_q ? 1 : fmin(o->q_max, *q * o->continuation_growth_q);
}

typedef struct efg_run {
  vox_context *ctx;
  vox_model *model;
  const vox_optimizer_options *opt;
  vox_efg_model efg;
  vox_bsr k, inverse;
  double *position;   /* nn * 3: the nodes' positions (the multigrid's rigid modes) */
  vox_efg_sa sa;
  vox_pc pc;          /* the multigrid on sa */
  vox_efg_patches patches; /* VOX_EFG_PC_SCHWARZ: the cells' patches, and on the host */
  double *patch_inverse, *patch_work; /* their inverses (576 a patch) and answers (24) */
  vox_efg_levels levels; /* VOX_EFG_PC_MG: the multigrid's levels, and its cycle */
  vox_efg_mg mg;
  /* seconds of the design iterations' stages (Lu et al. 2021 table 1):
   * K assembled (with the Gauss points' densities), the solves (with the
   * preconditioner's setup), the sensitivities */
  double seconds_assembly, seconds_solve, seconds_sensitivity;
  double seconds_preconditioner, seconds_bounds; /* of seconds_solve */
  size_t nn, ng, nd, ne;
  int n_cases;
  double v0;          /* the design cells' volume */
  double *rho;        /* nn: the design variables (fixed on solid and void nodes) */
  double *rho_new;    /* nn */
  double *dc, *dc_case, *dv; /* nn */
  double *oc_work;           /* 3 nn: the OC update's bases and bounds on the host */
  double *support_work;      /* a double a penalty point (vox_efg_support_sensitivity) */
  double oc_log_lambda;      /* the last OC step's log(lambda), its next bracket's centre */
  size_t n_design_cells;
  double *rho_gauss, *scale, *energy; /* ng */
  double *f, *u;      /* n_cases * nd */
  double *voxel;      /* ne: the voxel density */
  uint8_t *is_design; /* nn */
  /* The stages on the backend's vectors (efg_ops.h), or with dev NULL on
   * the host arrays above. On the backend the whole design iteration,
   * the OC update included: the design goes there once (rho_sent) and
   * comes back for a snapshot and at the end, with the solutions. */
  vox_backend *be;
  const vox_efg_ops *dev;
  vox_efg_device *device;
  int single; /* the device was made with VOX_PRECISION_MIXED and keeps it */
  int mg_setups, mg_kept; /* the multigrid's setups so far; the last kept a part */
  int mg_factors;         /* the last level's factors made so far */
  /* the most CG iterations of a solve of this evaluation and of the one
   * before, a stalled solve's counted from its redo (stall_limit) */
  int cg_most, cg_most_before;
  int rho_sent;                           /* d_rho holds the design, not r->rho */
  vox_vec d_rho, d_rho_new, d_dc, d_dc_case; /* nn */
  vox_vec d_rho_gauss, d_scale, d_energy; /* ng */
  vox_vec d_r, d_z, d_p, d_q;             /* nd: CG's work */
  vox_vec *d_f, *d_u;                     /* n_cases of nd */
  /* n_cases: each case's earlier solutions, its solves' start
   * (solver.start_history, ksp.h) */
  vox_ksp_history *d_history;
  /* the multigrid's V-cycle of the solve under way, recorded (the
   * backend's sparse record ops) on its second application and replayed
   * after: its scalars (the Chebyshev coefficients of this design
   * iteration's bounds) and vectors are fixed within a solve */
  void *recording;
  int vcycles, record;
} efg_run;

/* z = the cells' patches (efg_patches.h) applied to r on the host: the
 * multigrid's first smoother (vox_efg_sa_set_smoother), and as a
 * preconditioner object of its own. */
static void schwarz_smoother(const void *self, const double *r, double *z) {
  const efg_run *run = self;
  vox_efg_patches_apply(&run->patches, run->patch_inverse, r, z, run->patch_work);
}

static vox_status schwarz_apply(void *self, const void *r, void *z) {
  schwarz_smoother(self, r, z);
  return VOX_OK;
}

static const vox_pc_ops schwarz_ops = {.name = "schwarz", .apply = schwarz_apply};

static void run_free(efg_run *r) {
  if (r->dev) {
    vox_vec *v[] = {&r->d_rho,   &r->d_rho_new, &r->d_dc,     &r->d_dc_case,
                    &r->d_rho_gauss, &r->d_scale, &r->d_energy, &r->d_r,
                    &r->d_z,     &r->d_p,       &r->d_q};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
      if (v[i]->raw) r->be->ops->vec->destroy(r->be, v[i]);
    for (int c = 0; c < r->n_cases; c++) {
      if (r->d_f && r->d_f[c].raw) r->be->ops->vec->destroy(r->be, &r->d_f[c]);
      if (r->d_u && r->d_u[c].raw) r->be->ops->vec->destroy(r->be, &r->d_u[c]);
      if (r->d_history) vox_ksp_history_destroy(r->be, &r->d_history[c]);
    }
    vox_efg_mg_free(&r->mg);
    if (r->device) r->dev->destroy(r->be, r->device);
  }
  vox_efg_levels_free(&r->levels);
  free(r->d_f);
  free(r->d_u);
  free(r->d_history);
  vox_efg_model_free(&r->efg);
  vox_bsr_free(&r->k);
  vox_bsr_free(&r->inverse);
  vox_pc_destroy(&r->pc);
  vox_efg_patches_free(&r->patches);
  free(r->patch_inverse);
  free(r->patch_work);
  double *v[] = {r->position, r->rho,    r->rho_new,   r->dc,    r->dc_case,
                 r->dv,       r->oc_work, r->rho_gauss, r->scale, r->energy,
                 r->f,        r->u,       r->voxel,     r->support_work};
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) free(v[i]);
  free(r->is_design);
}

/* ---- the stages on the backend (efg_ops.h) ------------------------------------ */

/* The backend's copies of the model's tables and K's pattern, the stages'
 * vectors, the loads and the solutions' start (zero, as on the host). K's
 * values live on the backend only: the host pattern's are freed. */
static vox_status device_init(efg_run *r) {
  vox_backend *be = r->be;
  const vox_vector_ops *v = be->ops->vec;
  const size_t nc = (size_t)r->n_cases;
  TRY(r->dev->create(be, &r->efg, &r->k, r->opt->solver.precision, &r->device));
  r->single = r->opt->solver.precision == VOX_PRECISION_MIXED;
  const vox_efg_preconditioner kind = r->opt->efg_preconditioner;
  if (kind == VOX_EFG_PC_SCHWARZ || kind == VOX_EFG_PC_MG)
    TRY(r->dev->patches_create(be, r->device, &r->patches));
  if (kind == VOX_EFG_PC_MG) {
    TRY(r->dev->mg_create(be, r->device, &r->levels));
    TRY(vox_efg_mg_init(&r->mg, be, r->dev, r->device, &r->levels, r->opt->efg_sa_degree,
                        r->opt->efg_mg_lanczos_steps));
    r->mg.lower = r->opt->efg_mg_chebyshev_lower;
  }
  free(r->k.val);
  r->k.val = NULL;
  struct {
    vox_vec *v;
    size_t n;
  } const want[] = {{&r->d_rho, r->nn},       {&r->d_rho_new, r->nn}, {&r->d_dc, r->nn},
                    {&r->d_dc_case, r->nn},   {&r->d_rho_gauss, r->ng},
                    {&r->d_scale, r->ng},     {&r->d_energy, r->ng}, {&r->d_r, r->nd},
                    {&r->d_z, r->nd},         {&r->d_p, r->nd},      {&r->d_q, r->nd}};
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
    TRY(v->create(be, want[i].n, VOX_DOUBLE, want[i].v));
  r->d_f = calloc(nc, sizeof *r->d_f);
  r->d_u = calloc(nc, sizeof *r->d_u);
  r->d_history = calloc(nc, sizeof *r->d_history);
  if (!r->d_f || !r->d_u || !r->d_history)
    return vox_error(r->ctx, VOX_ERR_NO_MEMORY, "element-free Galerkin: out of memory");
  for (size_t c = 0; c < nc; c++) {
    TRY(v->create(be, r->nd, VOX_DOUBLE, &r->d_f[c]));
    TRY(v->create(be, r->nd, VOX_DOUBLE, &r->d_u[c]));
    TRY(vox_ksp_history_create(be, r->nd, r->opt->solver.start_history, &r->d_history[c]));
    TRY(v->upload(be, &r->d_f[c], r->f + c * r->nd));
  }
  return VOX_OK;
}

/* K at the design and penalty p on the backend (the Gauss points'
 * densities, their factors, the node-pair assembly); the design goes
 * there from r->rho the first time. */
static vox_status device_assemble(efg_run *r, double p) {
  vox_backend *be = r->be;
  if (!r->rho_sent) TRY(be->ops->vec->upload(be, &r->d_rho, r->rho));
  r->rho_sent = 1;
  if (r->opt->efg_penalty_relative) TRY(r->dev->support_springs(be, r->device, &r->d_rho, p));
  TRY(r->dev->gauss_density(be, r->device, &r->d_rho, &r->d_rho_gauss));
  TRY(r->dev->gauss_scale(be, r->device, &r->d_rho_gauss, p, &r->d_scale));
  return r->dev->assemble(be, r->device, &r->d_scale);
}

/* r->rho (and with `gauss` r->rho_gauss) from the backend, where the
 * design lives after the first assembly. */
static vox_status device_design(efg_run *r, int gauss) {
  if (!r->dev || !r->rho_sent) return VOX_OK;
  TRY(r->be->ops->vec->download(r->be, &r->d_rho, r->rho));
  return gauss ? r->be->ops->vec->download(r->be, &r->d_rho_gauss, r->rho_gauss) : VOX_OK;
}

/* CG's hooks (ksp.h) on the backend's vectors. */
typedef struct device_cg {
  efg_run *r;
  vox_vec *x;
} device_cg;

static vox_status dcg_product(void *self, double *pq) {
  device_cg *c = self;
  efg_run *r = c->r;
  TRY(r->dev->apply(r->be, r->device, &r->d_p, &r->d_q));
  return pq ? r->be->ops->vec->dot(r->be, &r->d_p, &r->d_q, pq) : VOX_OK;
}

static vox_status mg_apply_op(void *self) {
  efg_run *r = self;
  return vox_efg_mg_apply(&r->mg, &r->d_r, &r->d_z);
}

/* The V-cycle: op by op the first time in a solve, recorded the second
 * (and replayed at once), replayed after (recorded.h). */
static vox_status mg_precondition(efg_run *r) {
  if (!r->recording && r->vcycles++ == 0) return mg_apply_op(r);
  return vox_run_recorded(r->be, &r->recording, &r->record, mg_apply_op, r);
}

static vox_status dcg_precondition(void *self) {
  efg_run *r = ((device_cg *)self)->r;
  if (r->opt->efg_preconditioner == VOX_EFG_PC_MG) return mg_precondition(r);
  if (r->opt->efg_preconditioner == VOX_EFG_PC_SCHWARZ)
    return r->dev->patches_apply(r->be, r->device, &r->d_r, &r->d_z);
  return r->dev->precondition(r->be, r->device, &r->d_r, &r->d_z);
}

static vox_status dcg_update(void *self, double alpha, double *rr) {
  device_cg *c = self;
  efg_run *r = c->r;
  return r->be->ops->vec->cg_update(r->be, c->x, &r->d_r, alpha, &r->d_p, &r->d_q, rr);
}

static vox_status dcg_direction(void *self, double rz_old, double *rz) {
  efg_run *r = ((device_cg *)self)->r;
  const vox_vector_ops *v = r->be->ops->vec;
  TRY(v->dot(r->be, &r->d_r, &r->d_z, rz));
  if (rz_old == 0) return v->copy(r->be, &r->d_p, &r->d_z); /* the first direction */
  return v->xpay(r->be, &r->d_p, *rz / rz_old, &r->d_z);  /* p = z + beta p */
}

/* CG's scalars kept on the device where the backend has them (its
 * cg_begin, cg_step, cg_direction; ksp.h): one wait for the host an
 * iteration instead of three, the same iterates. */
static vox_status dcg_kept_direction(void *self, double rz_old, double *rz) {
  efg_run *r = ((device_cg *)self)->r;
  const vox_vector_ops *v = r->be->ops->vec;
  if (rz_old == 0) return v->cg_begin(r->be, &r->d_r, &r->d_z, &r->d_p, rz);
  *rz = rz_old; /* the device's: the next step returns it */
  return v->cg_direction(r->be, &r->d_r, &r->d_z, &r->d_p);
}

static vox_status dcg_kept_step(void *self, double *pq, double *rz, double *rr) {
  device_cg *c = self;
  efg_run *r = c->r;
  return r->be->ops->vec->cg_step(r->be, c->x, &r->d_r, &r->d_p, &r->d_q, pq, rz, rr);
}

static const vox_ksp_ops device_cg_ops = {.product = dcg_product,
                                          .precondition = dcg_precondition,
                                          .update = dcg_update,
                                          .direction = dcg_direction};
static const vox_ksp_ops device_kept_ops = {.product = dcg_product,
                                            .precondition = dcg_precondition,
                                            .direction = dcg_kept_direction,
                                            .kept_step = dcg_kept_step};

/* y = K x on the backend (vox_ksp_apply) */
static vox_status device_apply(void *self, const vox_vec *x, vox_vec *y) {
  efg_run *r = self;
  return r->dev->apply(r->be, r->device, x, y);
}

/* K u = f of load case lc by the one CG loop with the run's preconditioner
 * on the backend (block Jacobi, the patches or the multigrid), as
 * vox_efg_cg_pc on the host: with `history` from the energy-best mix of
 * the case's last solution and its earlier ones (ksp.h), else from the
 * last solution (or where a broken solve left off); at most
 * `max_iterations` CG iterations. */
static vox_status device_solve(efg_run *r, int lc, int history, int max_iterations,
                               vox_solve_result *result) {
  vox_backend *be = r->be;
  const vox_vector_ops *v = be->ops->vec;
  const vox_vec *f = &r->d_f[lc];
  vox_vec *u = &r->d_u[lc];
  memset(result, 0, sizeof *result);
  double ff, rr;
  TRY(v->dot(be, f, f, &ff));
  result->rhs_norm = sqrt(ff);
  if (result->rhs_norm == 0) { /* u = 0 is exact */
    result->reason = VOX_CONVERGED_ZERO_RHS;
    return v->set(be, u, 0);
  }
  vox_ksp_history *h = &r->d_history[lc];
  if (history && h->capacity > 0) {
    TRY(vox_ksp_history_start(be, device_apply, r, f, u, h, &r->d_r, &r->d_q, &r->d_p));
  } else {
    TRY(r->dev->apply(be, r->device, u, &r->d_r)); /* r = f - K u */
    TRY(v->axpby(be, &r->d_r, 1, f, -1));
  }
  TRY(v->dot(be, &r->d_r, &r->d_r, &rr));
  double start_energy = 0;
  if (r->opt->solver.energy_tol > 0) TRY(vox_ksp_start_energy(be, u, f, &r->d_r, &start_energy));
  device_cg c = {.r = r, .x = u};
  const int kept = v->cg_begin && v->cg_step && v->cg_direction;
  const vox_sparse_ops *o = be->ops->sparse;
  r->vcycles = 0;
  r->record = r->opt->efg_record && o && o->record_begin;
  vox_solver_options options = r->opt->solver;
  options.max_iterations = max_iterations;
  const vox_status st = vox_ksp_cg(kept ? &device_kept_ops : &device_cg_ops, &c, rr,
                                   result->rhs_norm, start_energy, &options, result);
  if (r->recording) o->recording_free(be, r->recording);
  r->recording = NULL;
  return st;
}

/* Whether the setup numbered n (from 0) makes what is made at every
 * `every`-th one. */
static int due(int n, int every) { return every <= 1 || n % every == 0; }

/* The multigrid's setup on the device for K as assembled: the levels
 * first, so that the last one's factor (on a GPU on a stream of its own)
 * runs beside the patches' inverses and the bounds. The factor and the
 * bounds at every efg_mg_refactor-th and solver.mg_bound_refresh-th setup
 * and kept in between (the factor also while its level's diagonal has
 * moved by no more than efg_mg_refactor_drift, and each cell's patch
 * inverse while its own has), or with `fresh` all made now (a redo). */
static vox_status device_mg_setup(efg_run *r, int fresh) {
  const int n = fresh ? 0 : r->mg_setups++;
  const int factor = due(n, r->opt->efg_mg_refactor),
            estimate = due(n, r->opt->solver.mg_bound_refresh);
  const double drift = fresh ? 0 : r->opt->efg_mg_refactor_drift;
  int made = 0;
  TRY(vox_efg_mg_setup_levels(&r->mg, factor, drift, &made)); /* waits for its status */
  r->mg_factors += made;
  /* with a drift some patch inverses may be kept too */
  r->mg_kept = !made || !estimate || drift > 0;
  TRY(r->dev->patches_factor(r->be, r->device, drift));
  const double b = now();
  TRY(vox_efg_mg_setup_bounds(&r->mg, estimate)); /* waits for the last level's factor */
  r->seconds_bounds += now() - b;
  return VOX_OK;
}

static int broken(const vox_solve_result *result) {
  return result->reason == VOX_DIVERGED_INDEFINITE || result->reason == VOX_DIVERGED_NAN;
}

/* The solve of load case lc redone after a breakdown or a stall, from
 * zero where it left NaN, else from where it stopped, with the CG
 * iterations left of the run's limit; the iterations add up. */
static vox_status redo(efg_run *r, int lc, vox_solve_result *result) {
  const int before = result->iterations;
  if (result->reason == VOX_DIVERGED_NAN) TRY(r->be->ops->vec->set(r->be, &r->d_u[lc], 0));
  const int left = r->opt->solver.max_iterations - before;
  if (left <= 0) return VOX_OK; /* the limit reached: the solve has failed */
  TRY(device_solve(r, lc, 0, left, result));
  result->iterations += before;
  return VOX_OK;
}

/* A multigrid whose parts were kept from earlier design iterations stays
 * positive definite however far the design has moved from them, so CG
 * need not break down where it has become weak: it crawls instead (the
 * cantilever of Lu et al. 2021 at 40 x 20 x 2 voxels, 40 design
 * iterations, with --efg-mg-refactor-drift 1 took 91,859 CG against 589
 * with 0, no solve breaking down). Such a solve stops at STALL_FACTOR
 * times the most CG iterations of a solve of the evaluation before, plus
 * STALL_SLACK, and goes on from there with all made afresh; before the
 * second evaluation and where nothing is kept, the run's own limit. */
enum { STALL_FACTOR = 4, STALL_SLACK = 20 };

static int stall_limit(const efg_run *r) {
  const int most = r->opt->solver.max_iterations;
  if (r->opt->efg_preconditioner != VOX_EFG_PC_MG || !r->mg_kept || r->cg_most_before <= 0)
    return most;
  const long long limit = (long long)STALL_FACTOR * r->cg_most_before + STALL_SLACK;
  return limit < most ? (int)limit : most;
}

/* device_solve, and where the multigrid's V-cycle turned indefinite (CG
 * broke down) the solve redone, as the FE path redoes one with fresh
 * bounds: first, where this design iteration kept the bounds or the last
 * level's factor of an earlier one, with both made afresh; then with
 * twice the Lanczos steps (a level's lambda_max estimate short of the
 * Chebyshev interval's margin), kept for the rest of the run, until it
 * holds or the steps are the most; then, on a device whose patches are
 * in single precision (the multigrid's or schwarz's), in double for the
 * rest of the run. `counted`: the CG iterations the next evaluation's
 * stall limit goes by (a stalled solve's from its redo on). */
static vox_status device_solve_redone(efg_run *r, int lc, vox_solve_result *result,
                                      int *counted) {
  const int limit = stall_limit(r);
  TRY(device_solve(r, lc, 1, limit, result));
  const int stalled = limit < r->opt->solver.max_iterations &&
                      result->reason == VOX_DIVERGED_MAX_ITERATIONS;
  *counted = result->iterations;
  const vox_efg_preconditioner kind = r->opt->efg_preconditioner;
  if (kind != VOX_EFG_PC_MG && kind != VOX_EFG_PC_SCHWARZ) return VOX_OK;
  if ((broken(result) || stalled) && kind == VOX_EFG_PC_MG && r->mg_kept) {
    const double t = now();
    TRY(device_mg_setup(r, 1));
    r->seconds_preconditioner += now() - t;
    TRY(redo(r, lc, result));
  }
  while (broken(result) && kind == VOX_EFG_PC_MG &&
         r->mg.lanczos_steps < VOX_EFG_MG_MAX_LANCZOS_STEPS) {
    r->mg.lanczos_steps = 2 * r->mg.lanczos_steps < VOX_EFG_MG_MAX_LANCZOS_STEPS
                              ? 2 * r->mg.lanczos_steps
                              : VOX_EFG_MG_MAX_LANCZOS_STEPS;
    const double t = now();
    TRY(vox_efg_mg_setup_bounds(&r->mg, 1));
    const double dt = now() - t;
    r->seconds_bounds += dt, r->seconds_preconditioner += dt;
    TRY(redo(r, lc, result));
  }
  if (broken(result) && r->single && r->dev->precision_double) {
    r->single = 0;
    TRY(r->dev->precision_double(r->be, r->device));
    const double t = now();
    TRY(kind == VOX_EFG_PC_MG ? device_mg_setup(r, 1)
                              : r->dev->patches_factor(r->be, r->device, 0));
    r->seconds_preconditioner += now() - t;
    TRY(redo(r, lc, result));
  }
  *counted = result->iterations - (stalled ? limit : 0);
  return VOX_OK;
}

/* d_dc += w times the sensitivities of load case lc's compliance, in the
 * two stages of the backend (energy densities, then the node-wise sums). */
static vox_status device_sensitivity(efg_run *r, int lc, double p, double w) {
  vox_backend *be = r->be;
  TRY(r->dev->strain_energy(be, r->device, &r->d_u[lc], &r->d_energy));
  TRY(r->dev->compliance_sensitivity(be, r->device, &r->d_rho_gauss, &r->d_energy, p,
                                     &r->d_dc_case));
  if (r->opt->efg_penalty_relative)
    TRY(r->dev->support_sensitivity(be, r->device, &r->d_rho, &r->d_u[lc], p, &r->d_dc_case));
  return be->ops->vec->axpy(be, &r->d_dc, w, &r->d_dc_case);
}

/* ---- the loop's state ------------------------------------------------------------ */

/* The multigrid's largest dense level: the option's, or with 0 the
 * backend's FE coarsest size where it sets one (the CPU's 1000: there the
 * dense factor is remade each design iteration on one core; the
 * cantilever of Lu et al. 2021's solves took 16.8 s over 3 design
 * iterations on 1 thread against 20.1 s with 6000), else 2000 (a GPU: its
 * factor and inverse, remade each design iteration, grow as the cube of
 * the level; table 2's 19,488 DoF, whose second level has 3,780 unknowns,
 * took 0.60 s of solves over 100 design iterations against 1.33 s with
 * 6000, the three examples of table 1 the same within 1 %). */
static size_t mg_coarse_dofs(const efg_run *r) {
  if (r->opt->efg_mg_coarse_dofs > 0) return (size_t)r->opt->efg_mg_coarse_dofs;
  const vox_multigrid_ops *mg = r->be->ops->mg;
  return mg && mg->coarse_dofs ? mg->coarse_dofs : 2000;
}

static vox_status run_init(efg_run *r) {
  vox_context *ctx = r->ctx;
  const vox_model *m = r->model;
  vox_efg_options eo;
  vox_efg_options_default(&eo);
  if (r->opt->density_min != VOX_DENSITY_MIN_AUTO) eo.density_min = r->opt->density_min;
  eo.support_scale = r->opt->efg_support_scale;
  eo.penalty_scale = r->opt->efg_penalty_scale;
  TRY(vox_efg_model_create(ctx, m, &eo, &r->efg));
  r->nn = r->efg.nodes.n;
  r->ng = r->efg.gauss.n_points;
  r->nd = vox_efg_dofs(&r->efg);
  r->support_work = malloc((r->efg.support.n_points + 1) * sizeof *r->support_work);
  r->ne = (size_t)vox_grid_elements(&m->grid);
  r->n_cases = m->n_load_cases > 0 ? m->n_load_cases : 1;
  const size_t nc = (size_t)r->n_cases;
  r->rho = malloc(r->nn * sizeof *r->rho);
  r->rho_new = malloc(r->nn * sizeof *r->rho_new);
  r->dc = malloc(r->nn * sizeof *r->dc);
  r->dc_case = malloc(r->nn * sizeof *r->dc_case);
  r->oc_work = malloc(3 * r->nn * sizeof *r->oc_work);
  r->oc_log_lambda = NAN; /* no update yet: the widest bracket */
  r->dv = malloc(r->nn * sizeof *r->dv);
  r->rho_gauss = malloc(r->ng * sizeof *r->rho_gauss);
  r->scale = malloc(r->ng * sizeof *r->scale);
  r->energy = malloc(r->ng * sizeof *r->energy);
  r->f = malloc(nc * r->nd * sizeof *r->f);
  r->u = calloc(nc * r->nd, sizeof *r->u);
  r->voxel = malloc(r->ne * sizeof *r->voxel);
  r->is_design = malloc(r->nn);
  if (!r->rho || !r->rho_new || !r->dc || !r->dc_case || !r->dv || !r->oc_work ||
      !r->support_work ||
      !r->rho_gauss || !r->scale ||
      !r->energy || !r->f || !r->u || !r->voxel || !r->is_design)
    return vox_error(ctx, VOX_ERR_NO_MEMORY, "element-free Galerkin: out of memory (design)");
  TRY(vox_efg_stiffness_pattern(ctx, &r->efg, &r->k));
  if (r->opt->efg_preconditioner == VOX_EFG_PC_SA) {
    r->position = malloc(3 * r->nn * sizeof *r->position);
    if (!r->position)
      return vox_error(ctx, VOX_ERR_NO_MEMORY, "element-free Galerkin: out of memory (nodes)");
    for (size_t i = 0; i < r->nn; i++)
      vox_efg_node_position(&r->efg.nodes, (int32_t)i, r->position + 3 * i);
    const vox_efg_sa_options so = {.degree = r->opt->efg_sa_degree,
                                   .aggregate = r->opt->efg_sa_aggregate,
                                   .strength = r->opt->efg_sa_strength};
    r->pc = vox_efg_sa_make(&r->sa, ctx, &r->k, r->position, r->efg.nodes.coord,
                            vox_efg_stiffness_apply, &so);
    if (r->opt->efg_sa_smoother == VOX_EFG_PC_SCHWARZ)
      vox_efg_sa_set_smoother(&r->sa, schwarz_smoother, r);
  }
  if (r->opt->efg_preconditioner == VOX_EFG_PC_MG)
    TRY(vox_efg_levels_init(ctx, &r->efg, &r->k, mg_coarse_dofs(r), &r->levels));
  if (r->opt->efg_preconditioner == VOX_EFG_PC_SCHWARZ ||
      r->opt->efg_preconditioner == VOX_EFG_PC_MG || r->sa.smoother0) {
    /* the penalty points' patches in the multigrids' smoothers only: on
     * their own, the patches' added overlap costs more CG iterations than
     * they save (efg_patches.h) */
    const int penalty = r->opt->efg_penalty_patches &&
                        r->opt->efg_preconditioner != VOX_EFG_PC_SCHWARZ;
    TRY(vox_efg_patches_init(ctx, &r->efg, &r->k, r->opt->efg_patch_size, penalty,
                             &r->patches));
    r->patches.penalty_weight = r->opt->efg_penalty_patch_weight;
    if (!r->dev) {
      r->patch_inverse = malloc(vox_efg_patches_inverse_bytes(&r->patches) + 1);
      r->patch_work =
          malloc((vox_efg_patches_work_doubles(&r->patches) + 1) * sizeof *r->patch_work);
      if (!r->patch_inverse || !r->patch_work)
        return vox_error(ctx, VOX_ERR_NO_MEMORY,
                         "element-free Galerkin: out of memory (patch preconditioner)");
    }
  }
  for (int c = 0; c < r->n_cases; c++)
    TRY(vox_efg_load_vector(ctx, &r->efg, m, c, r->f + (size_t)c * r->nd));
  if (r->dev) TRY(device_init(r));
  size_t n_design = 0;
  for (size_t i = 0; i < r->nn; i++) {
    r->is_design[i] = r->efg.node_role[i] == VOX_ROLE_DESIGN;
    n_design += r->is_design[i];
  }
  for (size_t c = 0; c < r->efg.n_cells; c++)
    r->n_design_cells += r->efg.cell_role[c] == VOX_ROLE_DESIGN;
  r->v0 = vox_efg_volume(&r->efg, NULL);
  if (n_design == 0 || !(r->v0 > 0))
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "the model has no design voxels");
  vox_efg_volume_sensitivity(&r->efg, r->dv);
  /* the start: the model's nodal densities (an EFG design), else the
   * volume fraction on the design nodes */
  vox_efg_initial_density(&r->efg, r->opt->volume_fraction, r->rho);
  if (m->nodal_density)
    for (size_t i = 0; i < r->nn; i++)
      if (r->is_design[i])
        r->rho[i] = fmin(1, fmax(eo.density_min, m->nodal_density[r->efg.nodes.grid_node[i]]));
  return VOX_OK;
}

/* The state at the design rho and penalty p: K assembled, every load case
 * solved from its last solution; the weighted compliance in *c and, with
 * `sensitivity`, its gradient in r->dc. *failed holds a solve that did not
 * converge (reason < 0), else the last solve. */
static vox_status evaluate(efg_run *r, double p, int sensitivity, double *c, int *cg_iterations,
                           vox_solve_result *failed) {
  double t = now();
  r->efg.options.simp_penalty = p;
  if (r->dev) {
    TRY(device_assemble(r, p));
  } else {
    if (r->opt->efg_penalty_relative) vox_efg_support_springs(&r->efg, r->rho);
    vox_efg_gauss_density(&r->efg, r->rho, r->rho_gauss);
    vox_efg_gauss_scale(&r->efg, r->rho_gauss, r->scale);
    TRY(vox_efg_stiffness_assemble(r->ctx, &r->efg, r->scale, &r->k));
  }
  /* the stages' seconds: a backend's kernels waited for at each end */
  if (r->dev) TRY(r->be->ops->synchronize(r->be));
  r->seconds_assembly += now() - t, t = now();
  const vox_efg_preconditioner kind = r->opt->efg_preconditioner;
  if (r->dev && kind == VOX_EFG_PC_MG) {
    TRY(device_mg_setup(r, 0));
  } else if (r->dev && kind == VOX_EFG_PC_SCHWARZ) {
    TRY(r->dev->patches_factor(r->be, r->device, 0));
  } else if (r->dev) {
    TRY(r->dev->block_jacobi(r->be, r->device));
  } else if (kind == VOX_EFG_PC_SA) {
    if (r->sa.smoother0)
      TRY(vox_efg_patches_factor(r->ctx, &r->patches, r->k.val, r->patch_inverse));
    TRY(vox_pc_setup(&r->pc));
  } else if (kind == VOX_EFG_PC_SCHWARZ) {
    TRY(vox_efg_patches_factor(r->ctx, &r->patches, r->k.val, r->patch_inverse));
  } else {
    vox_bsr_free(&r->inverse);
    TRY(vox_efg_block_jacobi(r->ctx, &r->k, &r->inverse));
  }
  const vox_pc jacobi = {.ops = &block_jacobi_ops, .self = &r->inverse};
  const vox_pc schwarz = {.ops = &schwarz_ops, .self = r};
  const vox_pc *pc = kind == VOX_EFG_PC_SA ? &r->pc : kind == VOX_EFG_PC_SCHWARZ ? &schwarz : &jacobi;
  if (r->dev) TRY(r->be->ops->synchronize(r->be));
  r->seconds_preconditioner += now() - t;
  *c = 0;
  *cg_iterations = 0;
  memset(failed, 0, sizeof *failed);
  r->cg_most_before = r->cg_most;
  r->cg_most = 0;
  if (sensitivity && r->dev)
    TRY(r->be->ops->vec->set(r->be, &r->d_dc, 0));
  else if (sensitivity)
    memset(r->dc, 0, r->nn * sizeof *r->dc);
  for (int lc = 0; lc < r->n_cases; lc++) {
    const double w = vox_model_load_case_weight(r->model, lc);
    double *u = r->u + (size_t)lc * r->nd;
    const double *f = r->f + (size_t)lc * r->nd;
    vox_solve_result res;
    if (r->dev) {
      int counted;
      TRY(device_solve_redone(r, lc, &res, &counted));
      if (counted > r->cg_most) r->cg_most = counted;
    } else {
      vox_status s = vox_efg_cg_pc(&r->k, pc, f, u, &r->opt->solver, &res);
      if (s == VOX_ERR_NO_MEMORY)
        return vox_error(r->ctx, s, "element-free Galerkin: out of memory (solve)");
      TRY(s);
    }
    *cg_iterations += res.iterations;
    *failed = res;
    r->seconds_solve += now() - t, t = now();
    if (res.reason < 0) return VOX_OK;
    double fu;
    if (r->dev)
      TRY(r->be->ops->vec->dot(r->be, &r->d_f[lc], &r->d_u[lc], &fu));
    else
      fu = vox_dot_fixed(f, u, r->nd);
    *c += w * fu;
    if (!sensitivity || w == 0) continue;
    if (r->dev) {
      TRY(device_sensitivity(r, lc, p, w));
    } else {
      vox_efg_strain_energy(&r->efg, u, r->energy);
      vox_efg_compliance_sensitivity(&r->efg, r->rho_gauss, r->energy, r->dc_case);
      if (r->opt->efg_penalty_relative)
        vox_efg_support_sensitivity(&r->efg, r->rho, u, r->support_work, r->dc_case);
      for (size_t i = 0; i < r->nn; i++) r->dc[i] += w * r->dc_case[i];
    }
    if (r->dev) TRY(r->be->ops->synchronize(r->be));
    r->seconds_sensitivity += now() - t, t = now();
  }
  return VOX_OK;
}

/* rho_new by the OC update (efg_oc.h) of rho, on the backend or the host;
 * the update's numbers in *res. */
static vox_status oc_update(efg_run *r, double q, vox_efg_oc_result *res) {
  const vox_efg_oc_options o = {.eta = r->opt->damping,
                                .move = r->opt->move_limit,
                                .rmin = r->efg.options.density_min,
                                .q = q,
                                .target = r->opt->volume_fraction * r->v0,
                                .log_lambda = r->oc_log_lambda};
  if (r->dev) {
    TRY(r->dev->oc_update(r->be, r->device, &o, &r->d_rho, &r->d_dc, &r->d_rho_new, res));
    const vox_vec t = r->d_rho;
    r->d_rho = r->d_rho_new, r->d_rho_new = t;
  } else {
    vox_efg_oc_update(&o, r->nn, r->rho, r->dc, r->dv, r->is_design, r->oc_work, r->rho_new, res);
    double *t = r->rho;
    r->rho = r->rho_new, r->rho_new = t;
  }
  r->oc_log_lambda = res->log_lambda;
  return VOX_OK;
}

/* The design's volume fraction and M_nd (Sigmund 2007, percent) over
 * the design voxels, from the voxel density of rho (left in r->voxel);
 * `evaluated`: r->rho_gauss holds rho's Gauss point densities already (rho
 * is the design evaluate last assembled). */
static double m_nd_percent(const efg_run *r, double sum) {
  return r->n_design_cells ? 100 * 4 * sum / (double)r->n_design_cells : 0;
}

static void design_numbers(efg_run *r, int evaluated, double *fraction, double *m_nd) {
  if (!evaluated) vox_efg_gauss_density(&r->efg, r->rho, r->rho_gauss);
  vox_efg_voxel_density(&r->efg, r->rho_gauss, r->voxel);
  /* the volume sum_g w_g rho_g = sum_i dv_i rho_i (linear in rho), a
   * pass too short for threads */
  double v = 0;
  for (size_t i = 0; i < r->nn; i++) v += r->dv[i] * r->rho[i];
  *fraction = v / r->v0;
  *m_nd = m_nd_percent(
      r, vox_efg_non_discreteness_sum(r->efg.n_cells, r->efg.cell_role, r->rho_gauss));
}

static vox_status append_history(vox_context *ctx, vox_model *model, const vox_history_row *row) {
  vox_history_row *h = realloc(model->history, (model->n_history + 1) * sizeof *h);
  if (!h) return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
  model->history = h;
  model->history[model->n_history++] = *row;
  return VOX_OK;
}

/* The final design into the model: the voxel density (r->voxel, of r->rho),
 * the nodal densities per grid node, the displacement field at the grid
 * nodes per load case. */
static vox_status store_results(efg_run *r) {
  vox_model *m = r->model;
  const size_t n_nodes = (size_t)vox_grid_nodes(&m->grid), nc = (size_t)r->n_cases;
  double *density = realloc(m->density, r->ne * sizeof *density);
  if (density) m->density = density;
  double *nodal = realloc(m->nodal_density, n_nodes * sizeof *nodal);
  if (nodal) m->nodal_density = nodal;
  double *disp = realloc(m->displacement, nc * 3 * n_nodes * sizeof *disp);
  if (disp) m->displacement = disp;
  double *field = malloc(r->nd * sizeof *field);
  if (!density || !nodal || !disp || !field) {
    free(field);
    return vox_error(r->ctx, VOX_ERR_NO_MEMORY, "out of memory");
  }
  /* a voxel density a hair outside [0, 1] (MLS shape functions may be
   * slightly negative) would be refused by the file's reader */
  for (size_t e = 0; e < r->ne; e++) density[e] = fmin(1, fmax(0, r->voxel[e]));
  memset(nodal, 0, n_nodes * sizeof *nodal);
  memset(disp, 0, nc * 3 * n_nodes * sizeof *disp);
  for (size_t i = 0; i < r->nn; i++) nodal[r->efg.nodes.grid_node[i]] = r->rho[i];
  vox_status s = VOX_OK;
  /* the displacement at the nodes, not the MLS parameters (no Kronecker
   * delta property): what an FE design file holds there */
  for (size_t c = 0; c < nc && s == VOX_OK; c++) {
    s = vox_efg_field_at_nodes(r->ctx, &r->efg, 3, r->u + c * r->nd, field);
    for (size_t i = 0; s == VOX_OK && i < r->nn; i++)
      memcpy(disp + c * 3 * n_nodes + 3 * (size_t)r->efg.nodes.grid_node[i], field + 3 * i,
             3 * sizeof *field);
  }
  free(field);
  TRY(s);
  m->stage = VOX_STAGE_DESIGN;
  if (m->n_load_cases < 1) TRY(vox_model_set_load_cases(r->ctx, m, 1));
  return VOX_OK;
}

static vox_status optimize(efg_run *r, vox_optimize_result *result) {
  vox_context *ctx = r->ctx;
  vox_model *model = r->model;
  const vox_optimizer_options *opt = r->opt;
  TRY(run_init(r));
  double p = 1, q = 1, previous = 0, compliance = 0;
  int settled = 0;
  const int first_row = model->n_history ? model->history[model->n_history - 1].iteration : 0;
  const int evaluate_only = opt->max_iterations == 0;
  result->reason = evaluate_only ? VOX_STOP_EVALUATED : VOX_STOP_MAX_ITERATIONS;
  if (evaluate_only) p = opt->penalty, q = opt->q_max;
  vox_status st = VOX_OK;
  for (int k = 1; st == VOX_OK && k <= opt->max_iterations; k++) {
    vox_history_row row = {.iteration = first_row + k};
    const double t0 = now();
    continuation(opt, k, &p, &q);
    /* 1. assembly, solves and compliance; 2. sensitivities */
    vox_solve_result failed;
    TRY(evaluate(r, p, 1, &compliance, &row.cg_iterations, &failed));
    result->total_cg_iterations += row.cg_iterations;
    if (failed.reason < 0) {
      result->reason = VOX_STOP_SOLVER_FAILED;
      result->last_solve = failed;
      break;
    }
    const double t1 = now();
    /* the numbers of the design this iteration evaluated (its volume from
     * the update), 3. the OC update of the nodal densities */
    double sum;
    if (r->dev)
      TRY(r->dev->non_discreteness(r->be, r->device, &r->d_rho_gauss, &sum));
    else
      sum = vox_efg_non_discreteness_sum(r->efg.n_cells, r->efg.cell_role, r->rho_gauss);
    row.non_discreteness = m_nd_percent(r, sum);
    vox_efg_oc_result oc;
    TRY(oc_update(r, q, &oc));
    row.volume_fraction = oc.volume / r->v0;
    row.change = oc.change;
    const double t3 = now();
    row.objective = compliance;
    row.penalty = p;
    row.q = q;
    row.seconds = t3 - t0;
    /* the update: the design's numbers and the OC step */
    result->seconds_update += t3 - t1;
    result->seconds_assembly = r->seconds_assembly;
    result->seconds_solve = r->seconds_solve;
    result->seconds_preconditioner = r->seconds_preconditioner;
    result->seconds_bounds = r->seconds_bounds;
    result->efg_mg_factors = r->mg_factors;
    result->seconds_sensitivity = r->seconds_sensitivity;
    result->iterations = k;
    TRY(append_history(ctx, model, &row));
    if (opt->snapshot_every > 0 && row.iteration % opt->snapshot_every == 0) {
      double fraction, m_nd; /* the voxel density of the updated design */
      TRY(device_design(r, 0));
      design_numbers(r, 0, &fraction, &m_nd);
      for (size_t e = 0; e < r->ne; e++) r->voxel[e] = fmin(1, fmax(0, r->voxel[e]));
      TRY(vox_model_add_snapshot(ctx, model, row.iteration, r->voxel));
    }
    vox_progress progress = {.stage = "optimize",
                             .iteration = row.iteration,
                             .max_iterations = first_row + opt->max_iterations,
                             .objective = row.objective,
                             .volume_fraction = row.volume_fraction,
                             .change = row.change,
                             .non_discreteness = row.non_discreteness,
                             .penalty = p,
                             .q = q,
                             .cg_iterations = row.cg_iterations,
                             .solves = r->n_cases,
                             .seconds = row.seconds};
    TRY(vox_report_progress(ctx, &progress));
    /* 4. the FE path's stopping rule */
    const int penalties_final = p >= opt->penalty && q >= opt->q_max;
    settled = k > 1 && penalties_final && row.change <= opt->change_tolerance &&
                      fabs(compliance - previous) <= opt->objective_tolerance * fabs(compliance)
                  ? settled + 1
                  : 0;
    if (settled >= opt->settle_iterations) {
      result->reason = VOX_STOP_CONVERGED;
      break;
    }
    previous = compliance;
    if (opt->interrupted && opt->interrupted(opt->interrupted_self)) {
      result->reason = VOX_STOP_INTERRUPTED;
      break;
    }
  }
  if (result->reason == VOX_STOP_MAX_ITERATIONS && (p < opt->penalty || q < opt->q_max))
    result->reason = VOX_STOP_CONTINUATION_UNFINISHED;
  result->final_penalty = p;
  result->final_q = q;
  /* the final design's own state, so that density, displacement and
   * compliance in the file belong together */
  if (result->reason != VOX_STOP_SOLVER_FAILED) {
    int cg;
    vox_solve_result failed;
    TRY(evaluate(r, p, 0, &compliance, &cg, &failed));
    result->total_cg_iterations += cg;
    result->final_cg_iterations = cg;
    if (failed.reason < 0) {
      result->reason = VOX_STOP_SOLVER_FAILED;
      result->last_solve = failed;
    } else {
      result->last_solve = failed;
    }
  }
  result->objective = compliance;
  TRY(device_design(r, 1));
  design_numbers(r, 1, &result->volume_fraction, &result->non_discreteness);
  for (int c = 0; r->dev && c < r->n_cases; c++) /* the solutions back from the backend */
    TRY(r->be->ops->vec->download(r->be, &r->d_u[c], r->u + (size_t)c * r->nd));
  TRY(store_results(r));
  model->target_volume_fraction = opt->volume_fraction;
  model->optimization_end =
      (vox_optimization_end){result->reason, result->objective, result->volume_fraction,
                             result->non_discreteness, result->final_cg_iterations};
  result->adjoint_gpu = -1;
  return st;
}

vox_status vox_efg_optimize(vox_context *ctx, vox_backend *be, vox_model *model,
                            const vox_optimizer_options *options, vox_optimize_result *result) {
  /* the multigrid runs on the backend's table on the CPU too */
  const int mg = options->efg_preconditioner == VOX_EFG_PC_MG;
  if (mg && !be->ops->efg)
    return vox_error(ctx, VOX_ERR_UNSUPPORTED,
                     "discretization efg's multigrid (efg-preconditioner mg) needs the %s "
                     "backend's EFG operations, which it lacks: use efg-preconditioner jacobi",
                     vox_backend_name(be));
  const vox_efg_ops *ops = vox_backend_device(be) != VOX_DEVICE_CPU || mg ? be->ops->efg : NULL;
  return vox_efg_optimize_on(ctx, be, ops, model, options, result);
}

vox_status vox_efg_optimize_on(vox_context *ctx, vox_backend *be, const vox_efg_ops *ops,
                               vox_model *model, const vox_optimizer_options *options,
                               vox_optimize_result *result) {
  memset(result, 0, sizeof *result);
  /* the program's --threads for the host loops here (the CPU backend's own
   * kernels take it from the context likewise) */
  const int threads = vox_context_threads(ctx), saved = omp_get_max_threads();
  if (threads > 0) omp_set_num_threads(threads);
  if (ops && options->efg_preconditioner == VOX_EFG_PC_SA)
    return vox_error(ctx, VOX_ERR_UNSUPPORTED,
                     "discretization efg on the backend's vectors takes block Jacobi, the "
                     "patches or the geometric multigrid, not smoothed aggregation");
  efg_run r = {.ctx = ctx, .model = model, .opt = options, .be = be, .dev = ops};
  vox_status s = optimize(&r, result);
  run_free(&r);
  if (threads > 0) omp_set_num_threads(saved);
  return s;
}
