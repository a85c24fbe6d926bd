/* SPDX-License-Identifier: BSD-3-Clause */
/* The EFG discretisation of a voxel model (efg_model.h). */
#include "efg_model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void vox_efg_options_default(vox_efg_options *o) {
  o->support_scale = 2.0;
  o->penalty_scale = 1e4;
  o->simp_penalty = 3.0;
  o->density_min = 1e-3;
}

void vox_efg_model_free(vox_efg_model *efg) {
  vox_efg_nodes_free(&efg->nodes);
  free(efg->node_role);
  free(efg->cell_voxel);
  free(efg->cell_role);
  vox_efg_shapes_free(&efg->gauss);
  free(efg->gauss_weight);
  free(efg->gauss_modulus);
  vox_efg_node_points_free(&efg->node_gauss);
  vox_efg_shapes_free(&efg->support);
  free(efg->support_node);
  free(efg->support_stiffness);
  free(efg->support_fixed);
  free(efg->support_scaled);
  free(efg->support_value);
  vox_efg_node_points_free(&efg->node_support);
  memset(efg, 0, sizeof *efg);
}

static vox_status no_memory(vox_context *ctx, vox_efg_model *efg, const char *what) {
  vox_efg_model_free(efg);
  return vox_error(ctx, VOX_ERR_NO_MEMORY, "element-free Galerkin: out of memory (%s)", what);
}

/* The field node of a grid node that a constraint, spring or load names, or
 * -1 with the message set. */
static int32_t field_node(vox_context *ctx, const vox_efg_nodes *nodes, int64_t node,
                          const char *what, size_t index) {
  if (node < 0 || node >= vox_grid_nodes(&nodes->grid)) {
    vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "element-free Galerkin: %s %zu names node %lld, "
                                             "outside the grid",
              what, index, (long long)node);
    return -1;
  }
  const int32_t f = nodes->field[node];
  if (f < 0)
    vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
              "element-free Galerkin: %s %zu is on node %lld, which touches no material", what,
              index, (long long)node);
  return f;
}

/* The cells (labelled voxels), their roles, Gauss points and moduli. */
static vox_status make_cells(vox_context *ctx, const vox_model *model, vox_efg_model *efg) {
  const vox_grid *g = &model->grid;
  const int64_t ne = vox_grid_elements(g);
  size_t nc = 0;
  for (int64_t e = 0; e < ne; e++) nc += model->label[e] != 0;
  efg->n_cells = nc;
  efg->cell_voxel = malloc(nc * sizeof *efg->cell_voxel);
  efg->cell_role = malloc(nc * sizeof *efg->cell_role);
  const size_t ng = 8 * nc;
  double *x = malloc(3 * ng * sizeof *x);
  efg->gauss_weight = malloc(ng * sizeof *efg->gauss_weight);
  efg->gauss_modulus = malloc(ng * sizeof *efg->gauss_modulus);
  if (!efg->cell_voxel || !efg->cell_role || !x || !efg->gauss_weight || !efg->gauss_modulus) {
    free(x);
    return no_memory(ctx, efg, "Gauss points");
  }
  /* the materials by label, so the loop below does not search */
  double modulus[256] = {0};
  uint8_t role[256] = {0};
  for (int m = 0; m < model->n_materials; m++) {
    modulus[model->materials[m].label] = model->materials[m].youngs_modulus;
    role[model->materials[m].label] = (uint8_t)model->materials[m].role;
  }
  const double *h = g->voxel_size, weight = h[0] * h[1] * h[2] / 8.0;
  const double off[2] = {0.5 - 0.5 / sqrt(3.0), 0.5 + 0.5 / sqrt(3.0)};
  size_t c = 0;
  for (int64_t e = 0; e < ne; e++) {
    const uint8_t l = model->label[e];
    if (!l) continue;
    const int64_t i = e % g->nx, j = (e / g->nx) % g->ny, k = e / (g->nx * g->ny);
    efg->cell_voxel[c] = e;
    efg->cell_role[c] = role[l];
    for (int q = 0; q < 8; q++) {
      const size_t p = 8 * c + (size_t)q;
      x[3 * p + 0] = g->origin[0] + ((double)i + off[q & 1]) * h[0];
      x[3 * p + 1] = g->origin[1] + ((double)j + off[(q >> 1) & 1]) * h[1];
      x[3 * p + 2] = g->origin[2] + ((double)k + off[q >> 2]) * h[2];
      efg->gauss_weight[p] = weight;
      efg->gauss_modulus[p] = modulus[l];
    }
    c++;
  }
  vox_status s = vox_efg_shapes_build(ctx, &efg->nodes, ng, x, 1, "Gauss point", &efg->gauss);
  free(x);
  if (s != VOX_OK) return s;
  return vox_efg_node_points_build(ctx, &efg->gauss, efg->nodes.n, &efg->node_gauss);
}

/* A node's role from the voxels around it: solid over void over design. */
static void node_roles(const vox_model *model, vox_efg_model *efg) {
  const vox_grid *g = &model->grid;
  uint8_t role[256] = {0};
  for (int m = 0; m < model->n_materials; m++)
    role[model->materials[m].label] = (uint8_t)model->materials[m].role;
#pragma omp parallel for schedule(static)
  for (ptrdiff_t f = 0; f < (ptrdiff_t)efg->nodes.n; f++) {
    const int64_t gn = efg->nodes.grid_node[f];
    const int64_t i = gn % (g->nx + 1), j = (gn / (g->nx + 1)) % (g->ny + 1),
                  k = gn / ((g->nx + 1) * (g->ny + 1));
    int solid = 0, void_ = 0;
    for (int c = 0; c < 8; c++) {
      const int64_t ei = i - (c & 1), ej = j - ((c >> 1) & 1), ek = k - (c >> 2);
      if (ei < 0 || ej < 0 || ek < 0 || ei >= g->nx || ej >= g->ny || ek >= g->nz) continue;
      const uint8_t l = model->label[(ek * g->ny + ej) * g->nx + ei];
      if (!l) continue;
      solid |= role[l] == VOX_ROLE_SOLID;
      void_ |= role[l] == VOX_ROLE_VOID;
    }
    efg->node_role[f] = solid ? VOX_ROLE_SOLID : void_ ? VOX_ROLE_VOID : VOX_ROLE_DESIGN;
  }
}

/* The penalty points: one per node with constraints or springs. */
static vox_status make_supports(vox_context *ctx, const vox_model *model, vox_efg_model *efg) {
  const size_t nn = efg->nodes.n;
  int32_t *point_of = malloc(nn * sizeof *point_of);
  if (!point_of) return no_memory(ctx, efg, "supports");
  for (size_t i = 0; i < nn; i++) point_of[i] = -1;
  size_t np = 0;
  for (int pass = 0; pass < 2; pass++) {
    const size_t n = pass ? model->n_springs : model->n_constraints;
    for (size_t i = 0; i < n; i++) {
      const int64_t node = pass ? model->springs[i].node : model->constraints[i].node;
      const int comp = pass ? model->springs[i].component : model->constraints[i].component;
      const int32_t f = field_node(ctx, &efg->nodes, node, pass ? "spring" : "constraint", i);
      if (f < 0 || comp > 2) {
        free(point_of);
        vox_efg_model_free(efg);
        if (comp > 2 && f >= 0)
          return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                           "element-free Galerkin: %s %zu has component %d", pass ? "spring" :
                           "constraint", i, comp);
        return VOX_ERR_INVALID_ARGUMENT;
      }
      if (point_of[f] < 0) point_of[f] = (int32_t)np++;
    }
  }
  efg->support_node = malloc((np ? np : 1) * sizeof *efg->support_node);
  efg->support_stiffness = calloc(3 * np + 1, sizeof *efg->support_stiffness);
  efg->support_fixed = calloc(3 * np + 1, sizeof *efg->support_fixed);
  efg->support_scaled = calloc(3 * np + 1, sizeof *efg->support_scaled);
  efg->support_value = calloc(3 * np + 1, sizeof *efg->support_value);
  double *x = malloc((3 * np + 1) * sizeof *x);
  if (!efg->support_node || !efg->support_stiffness || !efg->support_fixed ||
      !efg->support_scaled || !efg->support_value || !x) {
    free(point_of);
    free(x);
    return no_memory(ctx, efg, "supports");
  }
  for (size_t f = 0; f < nn; f++)
    if (point_of[f] >= 0) {
      efg->support_node[point_of[f]] = (int32_t)f;
      vox_efg_node_position(&efg->nodes, (int32_t)f, x + 3 * point_of[f]);
    }
  /* A dof named twice by constraints is tied once (the last value wins, as
   * when the FE path fixes it); springs add up. */
  for (size_t i = 0; i < model->n_constraints; i++) {
    const vox_constraint *c = &model->constraints[i];
    const size_t p = (size_t)point_of[efg->nodes.field[c->node]];
    efg->support_scaled[3 * p + c->component] = efg->alpha;
    efg->support_value[3 * p + c->component] = efg->alpha * c->value;
  }
  for (size_t i = 0; i < model->n_springs; i++) {
    const vox_spring *sp = &model->springs[i];
    const size_t p = (size_t)point_of[efg->nodes.field[sp->node]];
    efg->support_fixed[3 * p + sp->component] += sp->stiffness;
  }
  /* a component held at a value other than 0 keeps its spring whatever
   * the material: its load alpha u_bar phi then stays the design's own */
  for (size_t k = 0; k < 3 * np; k++) {
    if (efg->support_value[k] != 0)
      efg->support_fixed[k] += efg->support_scaled[k], efg->support_scaled[k] = 0;
    efg->support_stiffness[k] = efg->support_fixed[k] + efg->support_scaled[k];
  }
  free(point_of);
  vox_status s = vox_efg_shapes_build(ctx, &efg->nodes, np, x, 0, "constrained node",
                                      &efg->support);
  free(x);
  if (s != VOX_OK) {
    vox_efg_model_free(efg);
    return s;
  }
  return vox_efg_node_points_build(ctx, &efg->support, nn, &efg->node_support);
}

vox_status vox_efg_model_create(vox_context *ctx, const vox_model *model,
                                const vox_efg_options *options, vox_efg_model *efg) {
  memset(efg, 0, sizeof *efg);
  if (model->physics != VOX_PHYSICS_ELASTICITY)
    return vox_error(ctx, VOX_ERR_UNSUPPORTED,
                     "element-free Galerkin: only elasticity is supported (not %s)",
                     vox_physics_name(model->physics));
  if (!(options->penalty_scale > 0) || !(options->simp_penalty >= 1) ||
      !(options->density_min > 0 && options->density_min < 1))
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "element-free Galerkin: needs a penalty scale > 0, a SIMP penalty >= 1 and "
                     "0 < density_min < 1 (got %g, %g, %g)",
                     options->penalty_scale, options->simp_penalty, options->density_min);
  double nu = 0;
  vox_status s = vox_model_poisson_ratio(ctx, model, &nu);
  if (s != VOX_OK) return s;
  efg->options = *options;
  efg->lambda = nu / ((1 + nu) * (1 - 2 * nu));
  efg->mu = 1 / (2 * (1 + nu));

  const vox_grid *g = &model->grid;
  const int64_t ne = vox_grid_elements(g);
  uint8_t *in_domain = malloc((size_t)ne);
  if (!in_domain) return no_memory(ctx, efg, "domain");
#pragma omp parallel for schedule(static)
  for (int64_t e = 0; e < ne; e++) in_domain[e] = model->label[e] != 0;
  s = vox_efg_nodes_init(ctx, g, in_domain, options->support_scale, &efg->nodes);
  free(in_domain);
  if (s != VOX_OK) return s;

  efg->node_role = malloc(efg->nodes.n);
  if (!efg->node_role) return no_memory(ctx, efg, "node roles");
  node_roles(model, efg);

  double e_max = 0;
  uint8_t used[256];
  vox_model_labels_used(model, used);
  for (int m = 0; m < model->n_materials; m++)
    if (used[model->materials[m].label]) e_max = fmax(e_max, model->materials[m].youngs_modulus);
  const double *h = g->voxel_size;
  efg->alpha = options->penalty_scale * e_max * fmin(h[0], fmin(h[1], h[2]));

  if ((s = make_cells(ctx, model, efg)) != VOX_OK) {
    vox_efg_model_free(efg);
    return s;
  }
  if ((s = make_supports(ctx, model, efg)) != VOX_OK) vox_efg_model_free(efg);
  return s;
}

vox_status vox_efg_load_vector(vox_context *ctx, const vox_efg_model *efg, const vox_model *model,
                               int load_case, double *f) {
  const vox_efg_nodes *nodes = &efg->nodes;
  memset(f, 0, vox_efg_dofs(efg) * sizeof *f);
  const size_t ms = nodes->max_support;
  int32_t *nd = malloc(ms * sizeof *nd);
  double *ph = malloc(ms * sizeof *ph);
  if (!nd || !ph) {
    free(nd);
    free(ph);
    return vox_error(ctx, VOX_ERR_NO_MEMORY, "element-free Galerkin: out of memory (loads)");
  }
  vox_status s = VOX_OK;
  for (size_t i = 0; i < model->n_loads && s == VOX_OK; i++) {
    const vox_load *l = &model->loads[i];
    if (l->load_case != load_case || l->value == 0) continue;
    const int32_t fn = field_node(ctx, nodes, l->node, "load", i);
    if (fn < 0 || l->component > 2) {
      s = fn < 0 ? VOX_ERR_INVALID_ARGUMENT
                 : vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                             "element-free Galerkin: load %zu has component %d", i, l->component);
      break;
    }
    double x[3];
    vox_efg_node_position(nodes, fn, x);
    const int n = vox_efg_shape_at(nodes, x, nd, ph, NULL);
    if (n < 0) {
      s = vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                    "element-free Galerkin: too few nodes around the load on node %lld",
                    (long long)l->node);
      break;
    }
    for (int a = 0; a < n; a++) f[3 * (size_t)nd[a] + l->component] += ph[a] * l->value;
  }
  free(nd);
  free(ph);
  if (s != VOX_OK) return s;
  /* the penalty's share, alpha phi_i u_bar, by node so that each entry of f
   * has one writer */
  const vox_efg_shapes *sp = &efg->support;
  const vox_efg_node_points *np = &efg->node_support;
#pragma omp parallel for schedule(static)
  for (ptrdiff_t i = 0; i < (ptrdiff_t)nodes->n; i++)
    for (size_t k = np->start[i]; k < np->start[i + 1]; k++) {
      const double phi = sp->phi[np->entry[k]];
      const double *v = efg->support_value + 3 * np->point[k];
      for (int c = 0; c < 3; c++) f[3 * i + c] += phi * v[c];
    }
  return VOX_OK;
}

void vox_efg_add_body_force(const vox_efg_model *efg, const double b[3], double *f) {
  const vox_efg_shapes *gs = &efg->gauss;
  const vox_efg_node_points *np = &efg->node_gauss;
#pragma omp parallel for schedule(static)
  for (ptrdiff_t i = 0; i < (ptrdiff_t)efg->nodes.n; i++) {
    double s = 0;
    for (size_t k = np->start[i]; k < np->start[i + 1]; k++)
      s += efg->gauss_weight[np->point[k]] * gs->phi[np->entry[k]];
    for (int c = 0; c < 3; c++) f[3 * i + c] += s * b[c];
  }
}

vox_status vox_efg_field_at_nodes(vox_context *ctx, const vox_efg_model *efg, int n_comp,
                                  const double *coef, double *out) {
  const vox_efg_nodes *nodes = &efg->nodes;
  const size_t ms = nodes->max_support;
  int failed = 0;
#pragma omp parallel reduction(| : failed)
  {
    int32_t *nd = malloc(ms * sizeof *nd);
    double *ph = malloc(ms * sizeof *ph);
    failed |= !nd || !ph;
#pragma omp for schedule(static)
    for (ptrdiff_t i = 0; i < (ptrdiff_t)nodes->n; i++) {
      if (!nd || !ph) continue;
      double x[3];
      vox_efg_node_position(nodes, (int32_t)i, x);
      const int n = vox_efg_shape_at(nodes, x, nd, ph, NULL);
      failed |= n < 0;
      for (int c = 0; c < n_comp; c++) {
        double v = 0;
        for (int a = 0; a < n; a++) v += ph[a] * coef[(size_t)n_comp * (size_t)nd[a] + (size_t)c];
        out[(size_t)n_comp * (size_t)i + (size_t)c] = v;
      }
    }
    free(nd);
    free(ph);
  }
  if (failed)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "element-free Galerkin: too few nodes around a field node (or out of memory)");
  return VOX_OK;
}

void vox_efg_initial_density(const vox_efg_model *efg, double fraction, double *rho) {
  for (size_t i = 0; i < efg->nodes.n; i++)
    rho[i] = efg->node_role[i] == VOX_ROLE_SOLID  ? 1.0
             : efg->node_role[i] == VOX_ROLE_VOID ? efg->options.density_min
                                                  : fraction;
}
