/* SPDX-License-Identifier: BSD-3-Clause */
/* The optimizer's design constraints (design_constraints.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "design_constraints.h"

struct vox_constraint_set {
  vox_backend *be;
  const vox_optimizer_options *opt;
  vox_filter *filter;
  int n;                       /* the model's constraints; 0: the implicit volume */
  vox_design_constraint *list; /* n, or the implicit volume */
  int implicit;
  int rows;
  /* per constraint: a volume's region mask and its volume gradient (the
   * design mask and dv themselves for the whole design domain, else vectors
   * of their own), its element count; a compliance's gradient vector */
  const vox_vec **mask, **dvol;
  vox_vec *own_mask, *own_dvol, *gradient;
  double *count;
  double *value; /* of the last vox_constraints_values (the implicit volume too) */
  vox_vec scratch; /* element energies, the filter's output */
  double violation;
};

void vox_constraints_destroy(vox_constraint_set *set) {
  if (!set) return;
  vox_backend *be = set->be;
  const int n = set->implicit ? 1 : set->n;
  for (int i = 0; i < n; i++) {
    vox_vec *v[] = {&set->own_mask[i], &set->own_dvol[i], &set->gradient[i]};
    for (size_t j = 0; j < 3; j++)
      if (v[j]->data) be->ops->vec->destroy(be, v[j]);
  }
  if (set->scratch.data) be->ops->vec->destroy(be, &set->scratch);
  free(set->list), free(set->mask), free(set->dvol), free(set->own_mask), free(set->own_dvol);
  free(set->gradient), free(set->count), free(set->value);
  free(set);
}

void vox_constraints_layout(const vox_design_constraint *list, int n, vox_filter_type filter,
                            int gradients, size_t ne, vox_constraint_set *set, vox_layout *l) {
  for (int i = 0; i < n; i++) {
    const vox_design_constraint *c = &list[i];
    if (c->kind == VOX_CONSTRAINT_COMPLIANCE) {
      if (gradients)
        vox_layout_vec(l, "design constraints: compliance gradients", ne, VOX_DOUBLE,
                       set ? &set->gradient[i] : NULL);
    } else if (c->label != 0) {
      vox_layout_vec(l, "design constraints: region masks", ne, VOX_DOUBLE,
                     set ? &set->own_mask[i] : NULL);
      if (filter == VOX_FILTER_DENSITY)
        vox_layout_vec(l, "design constraints: region volume gradients", ne, VOX_DOUBLE,
                       set ? &set->own_dvol[i] : NULL);
    }
  }
  if (gradients)
    vox_layout_vec(l, "design constraints: scratch", ne, VOX_DOUBLE, set ? &set->scratch : NULL);
}

vox_status vox_constraints_create(vox_backend *be, const vox_model *model,
                                  const vox_optimizer_options *opt, vox_filter *filter,
                                  const vox_vec *design, const vox_vec *dv, double n_design,
                                  int gradients, vox_constraint_set **out) {
  vox_context *ctx = be->ctx;
  const vox_backend_ops *o = be->ops;
  *out = NULL;
  vox_constraint_set *set = calloc(1, sizeof *set);
  if (!set) return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
  set->be = be;
  set->opt = opt;
  set->filter = filter;
  set->n = model->n_design_constraints;
  set->implicit = set->n == 0;
  const int n = set->implicit ? 1 : set->n;
  set->list = calloc((size_t)n, sizeof *set->list);
  set->mask = calloc((size_t)n, sizeof *set->mask);
  set->dvol = calloc((size_t)n, sizeof *set->dvol);
  set->own_mask = calloc((size_t)n, sizeof *set->own_mask);
  set->own_dvol = calloc((size_t)n, sizeof *set->own_dvol);
  set->gradient = calloc((size_t)n, sizeof *set->gradient);
  set->count = calloc((size_t)n, sizeof *set->count);
  set->value = calloc((size_t)n, sizeof *set->value);
  vox_status st = set->list && set->mask && set->dvol && set->own_mask && set->own_dvol &&
                          set->gradient && set->count && set->value
                      ? VOX_OK
                      : vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
  if (st == VOX_OK && set->implicit)
    set->list[0] = (vox_design_constraint){.name = "volume", .kind = VOX_CONSTRAINT_VOLUME,
                                           .limit = opt->volume_fraction};
  else if (st == VOX_OK)
    memcpy(set->list, model->design_constraints, (size_t)n * sizeof *set->list);
  const size_t ne = design->n;
  if (st == VOX_OK) {
    vox_layout l;
    vox_layout_init(&l);
    vox_constraints_layout(set->list, n, opt->filter, gradients, ne, set, &l);
    st = vox_layout_create(be, &l);
  }
  double *host = NULL;
  for (int i = 0; st == VOX_OK && i < n; i++) {
    const vox_design_constraint *c = &set->list[i];
    set->rows += c->kind == VOX_CONSTRAINT_VOLUME && c->equal ? 2 : 1;
    if (c->kind == VOX_CONSTRAINT_COMPLIANCE) continue;
    if (c->label == 0) { /* the whole design domain */
      set->mask[i] = design;
      set->dvol[i] = dv;
      set->count[i] = n_design;
      continue;
    }
    /* the design elements of the label */
    if (!host && !(host = malloc(ne * sizeof *host))) {
      st = vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
      break;
    }
    st = o->vec->download(be, design, host);
    double count = 0;
    for (size_t e = 0; st == VOX_OK && e < ne; e++) {
      host[e] = host[e] != 0 && model->label[e] == c->label;
      count += host[e];
    }
    if (st == VOX_OK && count == 0)
      st = vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "design constraint '%s': no design element has label %d", c->name, c->label);
    if (st == VOX_OK) st = o->vec->upload(be, &set->own_mask[i], host);
    set->mask[i] = set->dvol[i] = &set->own_mask[i];
    set->count[i] = count;
    /* the volume is measured on the physical density: its gradient with
     * respect to the design variables through the density filter */
    if (st == VOX_OK && opt->filter == VOX_FILTER_DENSITY) {
      st = o->design->filter_transpose(be, filter, &set->own_mask[i], &set->own_dvol[i]);
      set->dvol[i] = &set->own_dvol[i];
    }
  }
  free(host);
  if (st != VOX_OK) {
    vox_constraints_destroy(set);
    return st;
  }
  *out = set;
  return VOX_OK;
}

int vox_constraints_count(const vox_constraint_set *set) { return set->n; }
int vox_constraints_rows(const vox_constraint_set *set) { return set->rows; }
double vox_constraints_violation(const vox_constraint_set *set) { return set->violation; }

/* The value of constraint i at x_phys. */
static vox_status value_of(vox_constraint_set *set, int i, const vox_vec *x_phys,
                           vox_objective_state *objective, vox_fem *fem, double *out) {
  vox_backend *be = set->be;
  const vox_design_constraint *c = &set->list[i];
  if (c->kind == VOX_CONSTRAINT_COMPLIANCE) /* (by turns takes no such constraint) */
    return vox_fem_force_dot(fem, c->load_case,
                             vox_objective_state_vector(objective, c->load_case), out);
  double v;
  TRY(be->ops->vec->dot(be, x_phys, set->mask[i], &v));
  *out = v / set->count[i];
  return VOX_OK;
}

vox_status vox_constraints_values(vox_constraint_set *set, const vox_vec *x_phys,
                                  vox_objective_state *objective, vox_fem *fem, double *values) {
  const int n = set->implicit ? 1 : set->n;
  for (int i = 0; i < n; i++) TRY(value_of(set, i, x_phys, objective, fem, &set->value[i]));
  if (values && set->n) memcpy(values, set->value, (size_t)set->n * sizeof *values);
  return VOX_OK;
}

/* d c_k / d x through the objective's filter chain, into set->gradient[i]. */
static vox_status compliance_gradient(vox_constraint_set *set, int i, const vox_vec *x,
                                      const vox_vec *x_phys, vox_objective_state *objective,
                                      vox_fem *fem, double p) {
  vox_backend *be = set->be;
  const vox_backend_ops *o = be->ops;
  const vox_optimizer_options *opt = set->opt;
  vox_vec *grad = &set->gradient[i], *tmp = &set->scratch;
  const int k = set->list[i].load_case;
  TRY(o->op->element_energy(be, fem->op, vox_objective_state_vector(objective, k), tmp, 0));
  TRY(o->design->simp_sensitivity(be, x_phys, &fem->e_solid, tmp, p, opt->emin_ratio, grad));
  if (opt->filter == VOX_FILTER_SENSITIVITY) {
    TRY(o->design->filter_sensitivity(be, set->filter, x, grad,
                                      vox_optimizer_sensitivity_floor(opt), tmp));
    TRY(o->vec->copy(be, grad, tmp));
  } else if (opt->filter == VOX_FILTER_DENSITY) {
    TRY(o->design->filter_transpose(be, set->filter, grad, tmp));
    TRY(o->vec->copy(be, grad, tmp));
  }
  if (opt->symmetry != VOX_SYMMETRY_NONE)
    TRY(o->design->symmetrize(be, &fem->grid, opt->symmetry, grad));
  return VOX_OK;
}

vox_status vox_constraints_rows_at(vox_constraint_set *set, const vox_vec *x, const vox_vec *x_phys,
                                   vox_objective_state *objective, vox_fem *fem, double p,
                                   double *g, const vox_vec **dg, double *dg_scale) {
  const int n = set->implicit ? 1 : set->n;
  int row = 0;
  set->violation = 0;
  for (int i = 0; i < n; i++) {
    const vox_design_constraint *c = &set->list[i];
    const double gi = set->value[i] / c->limit - 1;
    if (c->kind == VOX_CONSTRAINT_COMPLIANCE) {
      TRY(compliance_gradient(set, i, x, x_phys, objective, fem, p));
      dg[row] = &set->gradient[i];
      dg_scale[row] = 1 / c->limit;
    } else {
      dg[row] = set->dvol[i];
      dg_scale[row] = 1 / (c->limit * set->count[i]);
    }
    g[row++] = gi;
    set->violation = fmax(set->violation, c->equal ? fabs(gi) : gi);
    if (c->kind == VOX_CONSTRAINT_VOLUME && c->equal) { /* and -g <= 0 */
      dg[row] = dg[row - 1];
      dg_scale[row] = -dg_scale[row - 1];
      g[row++] = -gi;
    }
  }
  return VOX_OK;
}
