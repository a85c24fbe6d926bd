/* SPDX-License-Identifier: BSD-3-Clause */
/* Objectives of the optimizer (objective.h): weighted compliance and the
 * output displacement of a compliant mechanism with its adjoint solve. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "adjoint_worker.h"
#include "objective.h"
#include "optimizer_checkpoint.h"

struct vox_objective_state {
  vox_context *ctx;
  vox_objective kind;
  vox_fem *fem;
  int n_cases;
  double *weight;        /* n_cases; compliance only */
  int unit_weights;      /* every weight is 1: energies accumulate in place */
  vox_vec *u;            /* state of each load case */
  vox_ksp_history *history; /* earlier states of each load case (the solves' start), made on
                               the first evaluation with options->start_history > 0 */
  vox_vec v;             /* mechanism: the adjoint, K v = l */
  vox_vec w;             /* mechanism: u +- a v (polarisation) */
  vox_vec energy_minus;  /* mechanism: element energies of u - a v; weighted compliance:
                            one case's energies */
  vox_adjoint_worker *worker; /* the adjoint on another backend, or NULL */
};

void vox_objective_destroy(vox_objective_state *obj) {
  if (!obj) return;
  vox_backend *be = obj->fem->be;
  for (int c = 0; obj->u && c < obj->n_cases; c++)
    if (obj->u[c].data) be->ops->vec->destroy(be, &obj->u[c]);
  free(obj->u);
  for (int c = 0; obj->history && c < obj->n_cases; c++)
    vox_ksp_history_destroy(be, &obj->history[c]);
  free(obj->history);
  vox_vec *v[] = {&obj->v, &obj->w, &obj->energy_minus};
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
    if (v[i]->data) be->ops->vec->destroy(be, v[i]);
  vox_adjoint_worker_destroy(obj->worker);
  free(obj->weight);
  free(obj);
}

void vox_objective_layout(const vox_objective_shape *shape, vox_objective_state *obj,
                          vox_layout *l) {
  const int adjoint = shape->kind == VOX_OBJECTIVE_OUTPUT_DISPLACEMENT;
  for (int c = 0; c < shape->n_cases; c++)
    vox_layout_vec(l, "displacements (per load case)", shape->n_dofs, VOX_DOUBLE,
                   obj ? &obj->u[c] : NULL);
  if (adjoint) {
    vox_layout_vec(l, "adjoint state", shape->n_dofs, VOX_DOUBLE, obj ? &obj->v : NULL);
    vox_layout_vec(l, "adjoint work vector", shape->n_dofs, VOX_DOUBLE, obj ? &obj->w : NULL);
  }
  if (adjoint || !shape->unit_weights)
    vox_layout_vec(l, "element energies of a second state", shape->n_elements, VOX_DOUBLE,
                   obj ? &obj->energy_minus : NULL);
  /* made by state_history, on the first evaluation */
  if (!obj)
    for (int c = 0; c < shape->n_cases; c++)
      vox_ksp_history_layout(shape->n_dofs, shape->start_history, NULL, l);
}

vox_status vox_objective_create(vox_context *ctx, vox_fem *fem, const vox_model *model,
                                vox_objective_state **out) {
  *out = NULL;
  if (model->objective == VOX_OBJECTIVE_OUTPUT_DISPLACEMENT && !fem->output.data)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "the output-displacement objective needs output dofs");
  vox_objective_state *obj = calloc(1, sizeof *obj);
  if (!obj) return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
  obj->ctx = ctx;
  obj->kind = model->objective;
  obj->fem = fem;
  obj->n_cases = fem->n_cases;
  obj->u = calloc((size_t)obj->n_cases, sizeof *obj->u);
  obj->weight = malloc((size_t)obj->n_cases * sizeof *obj->weight);
  if (!obj->u || !obj->weight) {
    vox_objective_destroy(obj);
    return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
  }
  obj->unit_weights = 1;
  for (int c = 0; c < obj->n_cases; c++) {
    obj->weight[c] = c < model->n_load_cases ? vox_model_load_case_weight(model, c) : 1;
    if (obj->weight[c] != 1) obj->unit_weights = 0;
  }
  vox_backend *be = fem->be;
  const vox_objective_shape shape = {.kind = obj->kind,
                                     .n_cases = obj->n_cases,
                                     .unit_weights = obj->unit_weights,
                                     .n_dofs = fem->n_dofs,
                                     .n_elements = fem->n_elements};
  vox_layout l;
  vox_layout_init(&l);
  vox_objective_layout(&shape, obj, &l);
  vox_status s = vox_layout_create(be, &l);
  for (int c = 0; c < obj->n_cases && s == VOX_OK && model->displacement; c++)
    s = be->ops->vec->upload(be, &obj->u[c], model->displacement + (size_t)c * fem->n_dofs);
  if (s != VOX_OK) {
    vox_objective_destroy(obj);
    return s;
  }
  *out = obj;
  return VOX_OK;
}

int vox_objective_has_adjoint(const vox_objective_state *obj) {
  return obj->kind == VOX_OBJECTIVE_OUTPUT_DISPLACEMENT;
}

const vox_vec *vox_objective_state_vector(const vox_objective_state *obj, int c) {
  return &obj->u[c];
}

/* The state's history for `options`, or NULL without one (also with
 * prescribed values, whose solves do not use it: fem.h). */
static vox_status state_history(vox_objective_state *obj, const vox_solver_options *options,
                                int c, vox_ksp_history **out) {
  *out = NULL;
  if (options->start_history <= 0 || obj->fem->has_lift) return VOX_OK;
  if (!obj->history) {
    obj->history = calloc((size_t)obj->n_cases, sizeof *obj->history);
    if (!obj->history) return vox_error(obj->ctx, VOX_ERR_NO_MEMORY, "out of memory");
    for (int k = 0; k < obj->n_cases; k++)
      TRY(vox_ksp_history_create(obj->fem->be, obj->fem->n_dofs, options->start_history,
                                 &obj->history[k]));
  }
  *out = &obj->history[c];
  return VOX_OK;
}

static void note_failure(const vox_solve_result *r, vox_solve_result *failed) {
  if (r->reason < 0 && failed->reason > 0) *failed = *r;
}

/* sum_c w_c f_c.u_c and sum_c w_c u_c,e' Ke u_c,e. */
static vox_status compliance(vox_objective_state *obj, const vox_solver_options *options,
                             vox_vec *energy, double *value, int *cg, vox_solve_result *failed) {
  vox_fem *fem = obj->fem;
  vox_backend *be = fem->be;
  const vox_backend_ops *o = be->ops;
  *value = 0;
  for (int c = 0; c < obj->n_cases; c++) {
    vox_solve_result r;
    vox_ksp_history *history;
    TRY(state_history(obj, options, c, &history));
    TRY(vox_fem_solve_with_history(fem, c, &obj->u[c], history, options, &r));
    *cg += r.iterations;
    note_failure(&r, failed);
    double fu;
    TRY(vox_fem_force_dot(fem, c, &obj->u[c], &fu));
    *value += obj->weight[c] * fu;
    if (!energy) continue;
    if (obj->unit_weights) {
      TRY(o->op->element_energy(be, fem->op, &obj->u[c], energy, c > 0));
    } else {
      if (c == 0) TRY(o->vec->set(be, energy, 0));
      TRY(o->op->element_energy(be, fem->op, &obj->u[c], &obj->energy_minus, 0));
      TRY(o->vec->axpy(be, energy, obj->weight[c], &obj->energy_minus));
    }
  }
  return VOX_OK;
}

/* energy_e = -v_e' Ke u_e from two element energies (polarisation):
 * v' K u = (E(u + a v) - E(u - a v)) / (4a), with a = |u| / |v| so that both
 * terms are of one size and the difference loses no more than rounding of
 * |u|^2 |K| -- the backends then need no kernel of two vectors. */
static vox_status mutual_energy(vox_objective_state *obj, vox_vec *energy) {
  vox_fem *fem = obj->fem;
  vox_backend *be = fem->be;
  const vox_backend_ops *o = be->ops;
  double uu, vv;
  TRY(o->vec->dot(be, &obj->u[0], &obj->u[0], &uu));
  TRY(o->vec->dot(be, &obj->v, &obj->v, &vv));
  if (!(uu > 0) || !(vv > 0)) return o->vec->set(be, energy, 0);
  const double a = sqrt(uu / vv);
  TRY(o->vec->copy(be, &obj->w, &obj->u[0]));
  TRY(o->vec->axpy(be, &obj->w, a, &obj->v));
  TRY(o->op->element_energy(be, fem->op, &obj->w, &obj->energy_minus, 0)); /* E(u + a v) */
  TRY(o->vec->axpy(be, &obj->w, -2 * a, &obj->v));
  TRY(o->op->element_energy(be, fem->op, &obj->w, energy, 0)); /* E(u - a v) */
  /* energy = (E(u - a v) - E(u + a v)) / (4a) */
  return o->vec->axpby(be, energy, -1 / (4 * a), &obj->energy_minus, 1 / (4 * a));
}

/* f = -l.u; with energy, the adjoint K v = l and energy_e = -v_e' Ke u_e. */
static vox_status output_displacement(vox_objective_state *obj, const vox_solver_options *options,
                                      vox_vec *energy, double *value, int *cg,
                                      vox_solve_result *failed) {
  vox_fem *fem = obj->fem;
  vox_backend *be = fem->be;
  vox_solve_result r, ra;
  vox_ksp_history *history;
  TRY(state_history(obj, options, 0, &history));
  if (energy && obj->worker) {
    /* the adjoint on the other device while the state is solved here */
    TRY(vox_adjoint_worker_start(obj->worker, &fem->moduli, &obj->v, options));
    vox_status s = vox_fem_solve_with_history(fem, 0, &obj->u[0], history, options, &r);
    vox_status sa = vox_adjoint_worker_finish(obj->worker, &obj->v, &ra);
    TRY(s);
    TRY(sa);
  } else {
    TRY(vox_fem_solve_with_history(fem, 0, &obj->u[0], history, options, &r));
    if (energy) TRY(vox_fem_solve_adjoint(fem, &obj->v, options, &ra));
  }
  *cg += r.iterations;
  note_failure(&r, failed);
  if (energy) {
    *cg += ra.iterations;
    note_failure(&ra, failed);
  }
  double lu;
  TRY(be->ops->vec->dot(be, &fem->output, &obj->u[0], &lu));
  *value = -lu;
  return energy ? mutual_energy(obj, energy) : VOX_OK;
}

vox_status vox_objective_evaluate(vox_objective_state *obj, const vox_solver_options *options,
                                  vox_vec *energy, double *value, int *cg_iterations,
                                  vox_solve_result *failed) {
  *cg_iterations = 0;
  failed->reason = VOX_CONVERGED_RTOL;
  if (obj->kind == VOX_OBJECTIVE_OUTPUT_DISPLACEMENT)
    return output_displacement(obj, options, energy, value, cg_iterations, failed);
  return compliance(obj, options, energy, value, cg_iterations, failed);
}

vox_status vox_objective_use_adjoint_worker(vox_objective_state *obj, vox_adjoint_worker *worker) {
  if (obj->kind != VOX_OBJECTIVE_OUTPUT_DISPLACEMENT) {
    vox_adjoint_worker_destroy(worker);
    return VOX_OK; /* self-adjoint: nothing to hand over */
  }
  vox_adjoint_worker_destroy(obj->worker);
  obj->worker = worker;
  return VOX_OK;
}

/* ---- checkpoints (optimizer_checkpoint.h) ----------------------------------- */

/* Array `name` of n_cases * per values from the cases' vectors (NULL ones
 * stay zero). */
static vox_status save_vectors(vox_objective_state *obj, vox_checkpoint *out, const char *name,
                               size_t per, const vox_vec *const *v, int n) {
  vox_backend *be = obj->fem->be;
  TRY(vox_checkpoint_add(obj->ctx, out, name, (size_t)n * per, NULL));
  double *values = vox_checkpoint_find(out, name)->values;
  for (int i = 0; i < n; i++)
    if (v[i]) TRY(be->ops->vec->download(be, v[i], values + (size_t)i * per));
  return VOX_OK;
}

vox_status vox_objective_save(vox_objective_state *obj, vox_checkpoint *out) {
  const size_t nd = obj->fem->n_dofs;
  const int n = obj->n_cases, capacity = obj->history ? obj->history[0].capacity : 0;
  const int n_vectors = n * (capacity > 1 ? capacity : 1);
  const vox_vec **v = malloc((size_t)n_vectors * sizeof *v);
  double *count = malloc((size_t)n * sizeof *count), *newest = malloc((size_t)n * sizeof *newest);
  vox_status st = v && count && newest ? VOX_OK : vox_error(obj->ctx, VOX_ERR_NO_MEMORY, "out of memory");
  for (int c = 0; st == VOX_OK && c < n; c++) v[c] = &obj->u[c];
  if (st == VOX_OK) st = save_vectors(obj, out, "state", nd, v, n);
  if (st == VOX_OK && obj->kind == VOX_OBJECTIVE_OUTPUT_DISPLACEMENT) {
    v[0] = &obj->v;
    st = save_vectors(obj, out, "adjoint", nd, v, 1);
  }
  /* the histories where they are made (on the first evaluation that asks) */
  if (st == VOX_OK && obj->history) {
    for (int c = 0; c < n; c++) {
      count[c] = obj->history[c].count;
      newest[c] = obj->history[c].newest;
      for (int i = 0; i < capacity; i++) v[c * capacity + i] = &obj->history[c].v[i];
    }
    st = vox_checkpoint_add(obj->ctx, out, "state_history_count", (size_t)n, count);
    if (st == VOX_OK) st = vox_checkpoint_add(obj->ctx, out, "state_history_newest", (size_t)n, newest);
    if (st == VOX_OK && capacity > 0) st = save_vectors(obj, out, "state_history", nd, v, n * capacity);
  }
  free(v), free(count), free(newest);
  return st;
}

vox_status vox_objective_restore(vox_objective_state *obj, const vox_solver_options *options,
                                 const vox_checkpoint *state) {
  vox_context *ctx = obj->ctx;
  vox_backend *be = obj->fem->be;
  const size_t nd = obj->fem->n_dofs;
  const int n = obj->n_cases;
  const vox_checkpoint_array *u = vox_checkpoint_find(state, "state");
  if (!u || u->length != (size_t)n * nd)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "the checkpoint's states are not %d load case(s) of %zu dofs", n, nd);
  for (int c = 0; c < n; c++) TRY(be->ops->vec->upload(be, &obj->u[c], u->values + (size_t)c * nd));
  if (obj->kind == VOX_OBJECTIVE_OUTPUT_DISPLACEMENT) {
    const vox_checkpoint_array *v = vox_checkpoint_find(state, "adjoint");
    if (!v || v->length != nd)
      return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "the checkpoint has no adjoint of %zu dofs",
                       nd);
    TRY(be->ops->vec->upload(be, &obj->v, v->values));
  }
  const vox_checkpoint_array *count = vox_checkpoint_find(state, "state_history_count"),
                             *newest = vox_checkpoint_find(state, "state_history_newest"),
                             *h = vox_checkpoint_find(state, "state_history");
  if (!count && !newest && !h) return VOX_OK; /* made on the next evaluation, as in the run */
  vox_ksp_history *history;
  TRY(state_history(obj, options, 0, &history));
  const int capacity = history ? history->capacity : 0;
  if (!history || !count || !newest || (capacity > 0 && !h) || count->length != (size_t)n ||
      newest->length != (size_t)n || (h && h->length != (size_t)n * (size_t)capacity * nd))
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "the checkpoint's solution histories are not %d load case(s) of %d "
                     "solutions (start_history)", n, capacity);
  for (int c = 0; c < n; c++) {
    vox_ksp_history *hc = &obj->history[c];
    if (!(count->values[c] >= 0 && count->values[c] <= capacity && newest->values[c] >= 0 &&
          newest->values[c] < capacity && count->values[c] == (int)count->values[c] &&
          newest->values[c] == (int)newest->values[c]))
      return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                       "the checkpoint's solution history of load case %d is damaged", c);
    hc->count = (int)count->values[c];
    hc->newest = (int)newest->values[c];
    for (int i = 0; i < capacity; i++)
      TRY(be->ops->vec->upload(be, &hc->v[i], h->values + ((size_t)c * capacity + i) * nd));
  }
  return VOX_OK;
}
