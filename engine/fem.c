/* SPDX-License-Identifier: BSD-3-Clause */
/* The FE system of a voxel model -- linear elasticity (3 dofs per node) or
 * steady heat conduction (1 dof per node, the physics of the model): one
 * element matrix of unit modulus (conductivity) scaled per element,
 * Dirichlet dofs (and nodes touching no material)
 * eliminated symmetrically, prescribed values lifted into the right-hand side
 * so that the solve works on the correction only. */
#include <stdlib.h>
#include <string.h>

#include "fem.h"
#include "host_memory.h"
#include "smoother_bound.h"
#include "voxfe/element.h"

void vox_fem_destroy(vox_fem *fem) {
  if (!fem) return;
  vox_backend *be = fem->be;
  if (fem->op) be->ops->op->destroy(be, fem->op);
  vox_vec *v[] = {&fem->e_solid, &fem->moduli,     &fem->inv_diag,
                  &fem->lift,    &fem->rhs,        &fem->correction, &fem->output};
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
    if (v[i]->data) be->ops->vec->destroy(be, v[i]);
  for (int c = 0; fem->force && c < fem->n_cases; c++)
    if (fem->force[c].data) be->ops->vec->destroy(be, &fem->force[c]);
  free(fem->force);
  for (int c = 0; fem->force_host && c < fem->n_cases; c++)
    be->ops->host_free(be, fem->force_host[c]);
  free(fem->force_host);
  vox_ksp_work_destroy(be, &fem->pcg);
  vox_mg_destroy(fem->mg);
  vox_host_free(fem->element_active);
  free(fem);
}

/* Heat conduction: every material in use conducts (a zero conductivity
 * would leave its nodes without an equation). */
static vox_status check_conductivities(vox_context *ctx, const vox_model *model) {
  uint8_t used[256];
  vox_model_labels_used(model, used);
  int found = 0;
  for (int l = 1; l < 256; l++) {
    if (!used[l]) continue;
    const vox_material *m = vox_model_material(model, (uint8_t)l);
    if (!m || !(m->conductivity > 0))
      return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                       "material of label %d needs a positive conductivity for heat conduction", l);
    found = 1;
  }
  if (!found) return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "the model has no material voxels");
  return VOX_OK;
}

/* Host-side arrays that describe the system before they go to the backend. */
typedef struct fem_host {
  double *e_solid, *lift, *force;
  uint8_t *fixed;
  size_t n_springs;       /* springs on free dofs, one entry per dof */
  size_t *spring_dof;
  double *spring_k;
} fem_host;

static void host_free(fem_host *h) {
  vox_host_free(h->e_solid);
  vox_host_free(h->lift);
  vox_host_free(h->force);
  vox_host_free(h->fixed);
  free(h->spring_dof);
  free(h->spring_k);
}

/* The model's springs summed per dof; a spring on a fixed dof does nothing
 * (the dof does not move) and is dropped. */
static vox_status collect_springs(vox_context *ctx, const vox_model *model, int dpn, fem_host *h) {
  if (model->n_springs == 0) return VOX_OK;
  h->spring_dof = malloc(model->n_springs * sizeof *h->spring_dof);
  h->spring_k = malloc(model->n_springs * sizeof *h->spring_k);
  if (!h->spring_dof || !h->spring_k) return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
  for (size_t i = 0; i < model->n_springs; i++) {
    const vox_spring *sp = &model->springs[i];
    const size_t d = (size_t)dpn * (size_t)sp->node + sp->component;
    if (h->fixed[d]) continue;
    size_t j = 0;
    while (j < h->n_springs && h->spring_dof[j] != d) j++;
    if (j == h->n_springs) {
      h->spring_dof[j] = d;
      h->spring_k[j] = 0;
      h->n_springs++;
    }
    h->spring_k[j] += sp->stiffness;
  }
  return VOX_OK;
}

/* Whether one of the (up to eight) elements around node (i, j, k) holds
 * material; a periodic grid's elements wrap around its faces. */
static int node_touches_material(const vox_grid *g, const uint8_t *label, int64_t i, int64_t j,
                                 int64_t k) {
  for (int64_t c = k - 1; c <= k; c++) {
    int64_t kk = c;
    if (g->periodic) kk = (kk + g->nz) % g->nz;
    else if (kk < 0 || kk >= g->nz) continue;
    for (int64_t b = j - 1; b <= j; b++) {
      int64_t jj = b;
      if (g->periodic) jj = (jj + g->ny) % g->ny;
      else if (jj < 0 || jj >= g->ny) continue;
      const uint8_t *row = label + (kk * g->ny + jj) * g->nx;
      for (int64_t a = i - 1; a <= i; a++) {
        int64_t ii = a;
        if (g->periodic) ii = (ii + g->nx) % g->nx;
        else if (ii < 0 || ii >= g->nx) continue;
        if (row[ii]) return 1;
      }
    }
  }
  return 0;
}

static vox_status build_host(vox_context *ctx, const vox_model *model, vox_fem *fem, fem_host *h) {
  const vox_grid *g = &model->grid;
  const size_t ne = fem->n_elements, nd = fem->n_dofs;
  h->e_solid = vox_host_malloc(ne * sizeof *h->e_solid);
  h->lift = vox_host_calloc(nd, sizeof *h->lift);
  h->force = vox_host_malloc(nd * sizeof *h->force);
  h->fixed = vox_host_malloc(nd);
  fem->element_active = vox_host_malloc(ne);
  if (!h->e_solid || !h->lift || !h->force || !h->fixed || !fem->element_active)
    return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");

  /* the property that scales the unit element matrix: E, or the conductivity */
  const int heat = model->physics == VOX_PHYSICS_HEAT;
  double modulus[256] = {0};
  for (int i = 0; i < model->n_materials; i++)
    modulus[model->materials[i].label] =
        heat ? model->materials[i].conductivity : model->materials[i].youngs_modulus;
#pragma omp parallel for schedule(static)
  for (size_t e = 0; e < ne; e++) {
    h->e_solid[e] = modulus[model->label[e]];
    fem->element_active[e] = model->label[e] != 0;
  }

  /* A node that touches no material has no stiffness: hold it at zero.
   * Each node looks at its (up to) eight elements, so that the nodes are
   * independent and the threads share the grid without races.
   *
   * A periodic grid's images (vox_is_image) carry no unknowns: held too.
   * Nothing else is held: the periodic operator is singular with the rigid
   * translations, its loads are orthogonal to them, and CG solves the
   * consistent system; the multigrid holds one node on its coarsest level
   * only (multigrid.c). Holding the corner here instead (Zhang et al. 2023 section
   * 4.2) makes the translations a mode of low but non-zero energy that the
   * coarse levels must not remove: on a solid 16 x 24 x 8 cell, 33 CG
   * iterations to 1e-12 became 42-50 with the projection. */
  const int64_t sy = g->nx + 1, sz = sy * (g->ny + 1);
#pragma omp parallel for schedule(static)
  for (int64_t k = 0; k <= g->nz; k++)
    for (int64_t j = 0; j <= g->ny; j++)
      for (int64_t i = 0; i <= g->nx; i++) {
        const int touched = !(g->periodic && vox_is_image(g->nx, g->ny, g->nz, i, j, k)) &&
                            node_touches_material(g, model->label, i, j, k);
        memset(h->fixed + fem->dpn * (k * sz + j * sy + i), !touched, (size_t)fem->dpn);
      }
  for (size_t i = 0; i < model->n_constraints; i++) {
    const vox_constraint *c = &model->constraints[i];
    const size_t d = (size_t)fem->dpn * (size_t)c->node + c->component;
    h->fixed[d] = 1;
    h->lift[d] = c->value;
    if (c->value != 0) fem->has_lift = 1;
  }
  return VOX_OK;
}

/* Nodal forces of one load case; forces on fixed dofs are taken by the
 * support. Only the loaded dofs are visited after the zeroing: a model has
 * a few loads and 10^8 dofs. */
static void case_forces(const vox_model *model, const fem_host *h, int load_case, int dpn,
                        size_t nd, double *force) {
#pragma omp parallel for schedule(static)
  for (size_t d = 0; d < nd; d++) force[d] = 0;
  for (size_t i = 0; i < model->n_loads; i++) {
    const vox_load *l = &model->loads[i];
    if (l->load_case == load_case)
      force[(size_t)dpn * (size_t)l->node + l->component] += l->value;
  }
  for (size_t i = 0; i < model->n_loads; i++) {
    const size_t d = (size_t)dpn * (size_t)model->loads[i].node + model->loads[i].component;
    if (h->fixed[d]) force[d] = 0;
  }
}

void vox_fem_solver_layout(const vox_fem_shape *shape, vox_fem *fem, vox_layout *l) {
  const size_t nd = (size_t)shape->dofs_per_node * (size_t)vox_grid_nodes(shape->grid);
  vox_layout_vec(l, "inverse diagonal (double, per dof)", nd, VOX_DOUBLE,
                 fem ? &fem->inv_diag : NULL);
  vox_ksp_work_layout(nd, fem ? &fem->pcg : NULL, l);
}

vox_status vox_fem_release_solver(vox_fem *fem) {
  vox_backend *be = fem->be;
  if (fem->inv_diag.data) be->ops->vec->destroy(be, &fem->inv_diag);
  fem->inv_diag = (vox_vec){0};
  vox_ksp_work_destroy(be, &fem->pcg);
  memset(&fem->pcg, 0, sizeof fem->pcg);
  if (fem->mg) vox_mg_release(fem->mg);
  fem->solver_released = 1;
  return VOX_OK;
}

vox_status vox_fem_acquire_solver(vox_fem *fem) {
  if (!fem->solver_released) return VOX_OK;
  const vox_fem_shape shape = {.grid = &fem->grid, .dofs_per_node = fem->dpn};
  vox_layout l;
  vox_layout_init(&l);
  vox_fem_solver_layout(&shape, fem, &l);
  vox_status s = vox_layout_create(fem->be, &l);
  if (s == VOX_OK && fem->mg) s = vox_mg_acquire(fem->mg);
  if (s == VOX_OK) fem->solver_released = 0;
  /* the diagonal and the hierarchy hold nothing yet */
  if (s == VOX_OK) s = vox_fem_update(fem);
  if (s != VOX_OK) vox_fem_release_solver(fem);
  return s;
}

void vox_fem_layout(const vox_fem_shape *shape, vox_fem *fem, vox_layout *l) {
  const size_t ne = (size_t)vox_grid_elements(shape->grid);
  const size_t nodes = (size_t)vox_grid_nodes(shape->grid);
  const size_t nd = (size_t)shape->dofs_per_node * nodes;
  if (!shape->without_solver) /* by turns, the solid E waits with the design */
    vox_layout_vec(l, "solid E per element (fem)", ne, VOX_DOUBLE, fem ? &fem->e_solid : NULL);
  vox_layout_vec(l, "moduli per element (fem)", ne, VOX_DOUBLE, fem ? &fem->moduli : NULL);
  if (shape->output)
    vox_layout_vec(l, "output vector (a mechanism's l)", nd, VOX_DOUBLE,
                   fem ? &fem->output : NULL);
  if (shape->lean) return; /* nor fixed flags: the operator keeps none (fem.h) */
  if (!shape->without_solver) vox_fem_solver_layout(shape, fem, l);
  if (shape->prescribed) {
    vox_layout_vec(l, "prescribed values: lift", nd, VOX_DOUBLE, fem ? &fem->lift : NULL);
    vox_layout_vec(l, "prescribed values: rhs", nd, VOX_DOUBLE, fem ? &fem->rhs : NULL);
    vox_layout_vec(l, "prescribed values: correction", nd, VOX_DOUBLE,
                   fem ? &fem->correction : NULL);
  }
  for (int c = 0; c < shape->n_cases && !shape->without_solver; c++)
    vox_layout_vec(l, "force vectors (per load case)", nd, VOX_DOUBLE,
                   fem ? &fem->force[c] : NULL);
  vox_layout_object(l, "fixed flags (per dof and per node)", (double)(nd + nodes));
}

static vox_status create(vox_context *ctx, vox_backend *be, const vox_model *model, int lean,
                         vox_fem **out) {
  *out = NULL;
  double nu = 0, ke[24 * 24];
  TRY(vox_model_validate(ctx, model));
  TRY(vox_model_check_held(ctx, model));
  const int dpn = vox_physics_dofs_per_node(model->physics);
  if (model->physics == VOX_PHYSICS_HEAT) {
    TRY(check_conductivities(ctx, model));
    if (vox_hex8_conduction(1.0, model->grid.voxel_size, ke) != 0)
      return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "bad voxel size for conduction");
  } else {
    TRY(vox_model_poisson_ratio(ctx, model, &nu));
    if (vox_hex8_elasticity(1.0, nu, model->grid.voxel_size, ke) != 0)
      return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "Poisson ratio %g out of (-1, 0.5)", nu);
  }

  vox_fem *fem = calloc(1, sizeof *fem);
  if (!fem) return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
  fem->be = be;
  fem->grid = model->grid;
  fem->n_elements = (size_t)vox_grid_elements(&model->grid);
  fem->dpn = dpn;
  fem->n_dofs = (size_t)dpn * (size_t)vox_grid_nodes(&model->grid);
  fem->n_cases = model->n_load_cases > 0 ? model->n_load_cases : 1;
  fem->force = calloc((size_t)fem->n_cases, sizeof *fem->force);

  fem_host h = {0};
  vox_status s = fem->force ? build_host(ctx, model, fem, &h)
                            : vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
  if (s == VOX_OK) s = collect_springs(ctx, model, dpn, &h);
  const vox_backend_ops *o = be->ops;
#define STEP(call)                                                                 \
  if (s == VOX_OK) s = (call)
  if (s == VOX_OK) {
    const vox_fem_shape shape = {.grid = &model->grid,
                                 .dofs_per_node = dpn,
                                 .n_cases = fem->n_cases,
                                 .lean = lean,
                                 .prescribed = fem->has_lift,
                                 .output = model->n_outputs > 0};
    vox_layout l;
    vox_layout_init(&l);
    vox_fem_layout(&shape, fem, &l);
    s = vox_layout_create(be, &l);
  }
  STEP(o->vec->upload(be, &fem->e_solid, h.e_solid));
  STEP(o->vec->copy(be, &fem->moduli, &fem->e_solid)); /* on the device: one upload, not two */
  if (fem->has_lift) STEP(o->vec->upload(be, &fem->lift, h.lift));
  for (int c = 0; c < fem->n_cases && s == VOX_OK && !lean; c++) {
    case_forces(model, &h, c, dpn, fem->n_dofs, h.force);
    STEP(o->vec->upload(be, &fem->force[c], h.force));
  }
  if (s == VOX_OK && model->n_outputs > 0) { /* l, built the way a force is */
#pragma omp parallel for schedule(static)
    for (size_t d = 0; d < fem->n_dofs; d++) h.force[d] = 0;
    for (size_t i = 0; i < model->n_outputs; i++)
      h.force[(size_t)dpn * (size_t)model->outputs[i].node + model->outputs[i].component] +=
          model->outputs[i].weight;
    for (size_t i = 0; i < model->n_outputs; i++) {
      const size_t d = (size_t)dpn * (size_t)model->outputs[i].node + model->outputs[i].component;
      if (h.fixed[d]) h.force[d] = 0;
    }
    STEP(o->vec->upload(be, &fem->output, h.force));
  }
  if (s == VOX_OK) {
    vox_operator_desc desc = {.grid = model->grid,
                              .dofs_per_node = dpn,
                              .ke = ke,
                              .dof_fixed = lean ? NULL : h.fixed,
                              .n_springs = h.n_springs,
                              .spring_dof = h.spring_dof,
                              .spring_k = h.spring_k};
    s = o->op->create(be, &desc, &fem->op);
  }
  STEP(o->op->set_moduli(be, fem->op, &fem->moduli));
  STEP(vox_jacobi_spectrum_bound(ctx, ke, 8 * dpn, &fem->jacobi_bound));
  STEP(vox_fem_update(fem));
#undef STEP
  host_free(&h);
  if (s != VOX_OK) {
    vox_fem_destroy(fem);
    return s;
  }
  *out = fem;
  return VOX_OK;
}

vox_status vox_fem_create(vox_context *ctx, vox_backend *be, const vox_model *model,
                          vox_fem **out) {
  return create(ctx, be, model, 0, out);
}

vox_status vox_fem_create_lean(vox_context *ctx, vox_backend *be, const vox_model *model,
                               vox_fem **out) {
  return create(ctx, be, model, 1, out);
}

vox_status vox_fem_update(vox_fem *fem) {
  vox_backend *be = fem->be;
  fem->mg_stale = 1;
  if (!fem->inv_diag.data) return VOX_OK; /* lean: nothing of its own to refresh */
  TRY(be->ops->op->diagonal(be, fem->op, &fem->inv_diag));
  return be->ops->vec->reciprocal(be, &fem->inv_diag);
}

/* The box's multigrid preconditioner as an object (pc.h): one cycle,
 * kept off the fixed dofs (the correction there is zero, and CG then
 * stays in the free subspace where the cycle is definite); its setup
 * (Galerkin levels, bounds, the coarsest factor) borrows CG's work
 * vectors. */
static vox_status multigrid_setup(void *self) {
  vox_fem *fem = self;
  vox_vec *const work[4] = {&fem->pcg.r, &fem->pcg.z, &fem->pcg.p, &fem->pcg.q};
  return vox_mg_setup(fem->mg, &fem->inv_diag, work);
}

static vox_status multigrid_apply(void *self, const void *r, void *z) {
  vox_fem *fem = self;
  TRY(vox_mg_apply(fem->mg, r, z));
  return fem->be->ops->op->zero_fixed(fem->be, fem->op, z);
}

static const vox_pc_ops multigrid_pc = {.name = "multigrid", .setup = multigrid_setup,
                                        .apply = multigrid_apply};

/* The preconditioner the options ask for, set up for the current moduli. */
static vox_status preconditioner(vox_fem *fem, const vox_solver_options *options,
                                 vox_pc_jacobi *jacobi, vox_pc *pc) {
  if (options->preconditioner != VOX_PC_MULTIGRID) {
    *pc = vox_pc_jacobi_make(jacobi, fem->be, &fem->inv_diag);
    return VOX_OK;
  }
  if (!fem->mg) {
    TRY(vox_mg_create(fem->be, fem->op, &fem->grid, fem->dpn, fem->jacobi_bound, options,
                      &fem->mg));
    fem->mg_stale = 1;
  }
  *pc = (vox_pc){.ops = &multigrid_pc, .self = fem};
  if (fem->mg_stale) {
    TRY(vox_pc_setup(pc));
    fem->mg_stale = 0;
  }
  return VOX_OK;
}

static vox_status solve_rhs(vox_fem *fem, const vox_vec *f, vox_vec *u, vox_ksp_history *history,
                            const vox_solver_options *options, vox_solve_result *result);
static vox_status pcg(vox_fem *fem, const vox_vec *b, int parked, vox_vec *x,
                      vox_ksp_history *history, const vox_ksp_lift *lift,
                      const vox_solver_options *options, vox_solve_result *result);
static vox_status unpark_force(vox_fem *fem, int c, vox_vec *v);

vox_status vox_fem_solve(vox_fem *fem, int load_case, vox_vec *u,
                         const vox_solver_options *options, vox_solve_result *result) {
  return vox_fem_solve_with_history(fem, load_case, u, NULL, options, result);
}

vox_status vox_fem_solve_with_history(vox_fem *fem, int load_case, vox_vec *u,
                                      vox_ksp_history *history,
                                      const vox_solver_options *options,
                                      vox_solve_result *result) {
  if (fem->grid.periodic) {
    /* the singular periodic system is consistent only for loads without
     * a translation part: exact loads have none, but their rounding has
     * (all of a solid cell's load is rounding) */
    if (!fem->mg) {
      TRY(vox_mg_create(fem->be, fem->op, &fem->grid, fem->dpn, fem->jacobi_bound, options,
                        &fem->mg));
      fem->mg_stale = 1;
    }
    TRY(vox_mg_remove_translations(fem->mg, &fem->force[load_case]));
  }
  if (fem->forces_parked) /* (no prescribed values: vox_fem_park_forces) */
    return pcg(fem, NULL, load_case, u, history, NULL, options, result);
  return solve_rhs(fem, &fem->force[load_case], u, history, options, result);
}

vox_status vox_fem_park_forces(vox_fem *fem) {
  vox_backend *be = fem->be;
  const vox_vector_ops *o = be->ops->vec;
  if (fem->forces_parked) return VOX_OK;
  if (fem->has_lift || fem->grid.periodic)
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT,
                     "the loads of a model with prescribed values or a periodic grid stay on the "
                     "backend");
  fem->force_host = calloc((size_t)fem->n_cases, sizeof *fem->force_host);
  if (!fem->force_host) return vox_error(be->ctx, VOX_ERR_NO_MEMORY, "out of memory");
  for (int c = 0; c < fem->n_cases; c++) {
    vox_vec *f = &fem->force[c];
    const size_t held = vox_vec_held_n(be, f);
    TRY(be->ops->host_alloc(be, (held ? held : 1) * sizeof(double), (void **)&fem->force_host[c]));
    TRY(vox_vec_held_download(be, f, fem->force_host[c]));
    o->destroy(be, f);
    *f = (vox_vec){0};
  }
  fem->forces_parked = 1;
  return VOX_OK;
}

vox_status vox_fem_force_dot(vox_fem *fem, int c, const vox_vec *u, double *out) {
  vox_backend *be = fem->be;
  if (!fem->forces_parked) return be->ops->vec->dot(be, &fem->force[c], u, out);
  /* into CG's q, free after a solve */
  if (fem->solver_released)
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT, "a load's dot with the solver released");
  TRY(unpark_force(fem, c, &fem->pcg.q));
  return be->ops->vec->dot(be, &fem->pcg.q, u, out);
}

/* Load case c's force from host memory into `v` (vox_fem_park_forces). */
static vox_status unpark_force(vox_fem *fem, int c, vox_vec *v) {
  return vox_vec_held_upload(fem->be, v, fem->force_host[c]);
}

/* Preconditioned CG on K x = b from x (and the history, where given),
 * with the preconditioner the options ask for. Two economies of the
 * multigrid cycle can turn it indefinite: coarse smoother bounds kept from
 * an earlier setup (options->mg_bound_refresh), where the new operator's
 * largest eigenvalue outgrew them, and coarse levels a backend stores
 * below float (stencil_full_storage), whose rounding can leave a level's
 * smallest eigenvalues below zero. A solve that broke down with either is
 * redone from where it stopped (from zero after a NaN) with the bounds
 * estimated anew and every level in float from then on; its iterations
 * add up. */
/* `parked` >= 0: b is that load case's force, which waits in host memory,
 * lent CG's z after the preconditioner's setup (which overwrites z) and
 * again before a solve is redone (ksp.h: z is read as b before it is
 * written). */
static vox_status pcg(vox_fem *fem, const vox_vec *b, int parked, vox_vec *x,
                      vox_ksp_history *history, const vox_ksp_lift *lift,
                      const vox_solver_options *options, vox_solve_result *result) {
  vox_backend *be = fem->be;
  if (fem->solver_released)
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT, "a solve with the solver released");
  vox_pc_jacobi jacobi;
  vox_pc pc;
  TRY(preconditioner(fem, options, &jacobi, &pc));
  /* The start is 0 on the fixed dofs: there the operator's rows are the
   * identity and the preconditioner's correction is zero, so CG would keep
   * other values, and their residual, for good (the solve stalls and
   * breaks down). A design file's displacement from the element-free
   * Galerkin method, whose supports are penalty springs, holds some. */
  TRY(be->ops->op->zero_fixed(be, fem->op, x));
  if (parked >= 0) {
    TRY(unpark_force(fem, parked, &fem->pcg.z));
    b = &fem->pcg.z;
  }
  TRY(vox_ksp_solve(be, fem->op, &pc, b, x, history, lift, options, &fem->pcg, result));
  const int broke_down =
      result->reason == VOX_DIVERGED_INDEFINITE || result->reason == VOX_DIVERGED_NAN;
  if (!broke_down || options->preconditioner != VOX_PC_MULTIGRID || !fem->mg) return VOX_OK;
  int reduced_storage;
  TRY(vox_mg_full_storage(fem->mg, &reduced_storage));
  if (!fem->mg->bounds_kept && !reduced_storage) return VOX_OK;
  const int before = result->iterations;
  if (result->reason == VOX_DIVERGED_NAN) TRY(be->ops->vec->set(be, x, 0));
  fem->mg->setups = 0; /* the next setup estimates */
  fem->mg_stale = 1;
  if (fem->mg->bounds_kept) fem->bound_redos++;
  if (reduced_storage) fem->storage_redos++;
  TRY(preconditioner(fem, options, &jacobi, &pc));
  if (parked >= 0) TRY(unpark_force(fem, parked, &fem->pcg.z));
  TRY(vox_ksp_solve(be, fem->op, &pc, b, x, NULL, lift, options, &fem->pcg, result));
  result->iterations += before;
  return VOX_OK;
}

vox_status vox_fem_solve_adjoint(vox_fem *fem, vox_vec *v, const vox_solver_options *options,
                                 vox_solve_result *result) {
  if (!fem->output.data)
    return vox_error(fem->be->ctx, VOX_ERR_INVALID_ARGUMENT, "the model has no output dofs");
  /* K v = l with v = 0 on every fixed dof: the adjoint of prescribed values is zero */
  return pcg(fem, &fem->output, -1, v, NULL, NULL, options, result);
}

vox_status vox_fem_solve_rhs(vox_fem *fem, const vox_vec *f, vox_vec *u,
                             const vox_solver_options *options, vox_solve_result *result) {
  return solve_rhs(fem, f, u, NULL, options, result);
}

/* With prescribed values the solve is for the correction w = u - g, whose
 * history is not kept: such a solve ignores the history. */
static vox_status solve_rhs(vox_fem *fem, const vox_vec *f, vox_vec *u, vox_ksp_history *history,
                            const vox_solver_options *options, vox_solve_result *result) {
  vox_backend *be = fem->be;
  const vox_backend_ops *o = be->ops;
  if (!fem->has_lift) return pcg(fem, f, -1, u, history, NULL, options, result);

  /* u = g + w with w = 0 on fixed dofs and K_ff w_f = f_f - (K g)_f */
  vox_ksp_lift lift = {.energy = 0, .load = f}; /* g'Kg: for the energy and reaction tests */
  TRY(o->op->apply(be, fem->op, &fem->lift, &fem->rhs, VOX_APPLY_FULL));
  if (options->energy_tol > 0 || options->reaction_tol > 0)
    TRY(o->vec->dot(be, &fem->lift, &fem->rhs, &lift.energy));
  TRY(o->vec->xpay(be, &fem->rhs, -1, f));
  TRY(o->op->zero_fixed(be, fem->op, &fem->rhs));
  TRY(o->vec->copy(be, &fem->correction, u));
  TRY(o->vec->axpy(be, &fem->correction, -1, &fem->lift)); /* pcg zeroes its fixed dofs */
  TRY(pcg(fem, &fem->rhs, -1, &fem->correction, NULL, &lift, options, result));
  TRY(o->vec->copy(be, u, &fem->correction));
  return o->vec->axpy(be, u, 1, &fem->lift);
}
