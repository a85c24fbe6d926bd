/* SPDX-License-Identifier: BSD-3-Clause */
/* The voxel model's memory: allocation, copies, appending materials,
 * boundary conditions and history, and a consistency check. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "voxfe/model.h"

static vox_status out_of_memory(vox_context *ctx) {
  return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
}

/* Grows an array of `*count` items of `size` bytes by one; capacity doubles. */
static void *grow(void *array, size_t count, size_t size) {
  if (count & (count - 1)) return array; /* capacity is the next power of two */
  size_t capacity = count ? 2 * count : 1;
  return realloc(array, capacity * size);
}

static const char axis_letter[3] = {'x', 'y', 'z'};

double vox_host_memory_available(void) {
  /* MemAvailable counts the page cache the kernel gives back; sysconf's
   * free pages do not, and would refuse runs that fit */
  FILE *f = fopen("/proc/meminfo", "r");
  if (f) {
    char line[128];
    double kib = -1;
    while (fgets(line, sizeof line, f))
      if (sscanf(line, "MemAvailable: %lf kB", &kib) == 1) break;
    fclose(f);
    if (kib >= 0) return kib * 1024;
  }
  const long page = sysconf(_SC_PAGESIZE), pages = sysconf(_SC_AVPHYS_PAGES);
  return page > 0 && pages >= 0 ? (double)page * (double)pages : INFINITY;
}

vox_status vox_host_memory_check(vox_context *ctx, double bytes, const char *what) {
  const double available = vox_host_memory_available();
  if (bytes <= available) return VOX_OK;
  return vox_error(ctx, VOX_ERR_NO_MEMORY,
                   "%s needs %.3g GB of memory (%.0f bytes), and %.3g GB (%.0f bytes) are "
                   "available",
                   what, bytes / 1e9, bytes, available / 1e9, available);
}

vox_status vox_grid_check(vox_context *ctx, const vox_grid *g) {
  if (g->nx < 1 || g->ny < 1 || g->nz < 1)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "grid size %lldx%lldx%lld is empty",
                     (long long)g->nx, (long long)g->ny, (long long)g->nz);
  const int64_t n[3] = {g->nx, g->ny, g->nz};
  for (int a = 0; a < 3; a++) {
    const double h = g->voxel_size[a], o = g->origin[a];
    if (!(h >= VOX_VOXEL_SIZE_MIN && h <= VOX_VOXEL_SIZE_MAX))
      return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                       "voxel size along %c is %g mm, not a number in [%g, %g] mm",
                       axis_letter[a], h, VOX_VOXEL_SIZE_MIN, VOX_VOXEL_SIZE_MAX);
    if (!(fabs(o) <= VOX_ORIGIN_MAX))
      return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                       "origin along %c is %g mm, not a number in [-%g, %g] mm", axis_letter[a],
                       o, VOX_ORIGIN_MAX, VOX_ORIGIN_MAX);
    if (!isfinite(o + (double)n[a] * h))
      return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "the grid's extent along %c is not finite",
                       axis_letter[a]);
  }
  return VOX_OK;
}

vox_status vox_model_init(vox_context *ctx, vox_model *model, const vox_grid *grid) {
  memset(model, 0, sizeof *model);
  vox_status s = vox_grid_check(ctx, grid);
  if (s) return s;
  /* refused before the first byte: a calloc of 16 GB succeeds and then
   * grows until the kernel kills the process */
  char what[96];
  snprintf(what, sizeof what, "a grid of %lldx%lldx%lld voxels", (long long)grid->nx,
           (long long)grid->ny, (long long)grid->nz);
  const double voxels = (double)grid->nx * (double)grid->ny * (double)grid->nz;
  if ((s = vox_host_memory_check(ctx, VOX_MODEL_BYTES_PER_VOXEL * voxels, what))) return s;
  model->grid = *grid;
  model->label = calloc((size_t)vox_grid_elements(grid), 1);
  if (!model->label) return out_of_memory(ctx);
  return VOX_OK;
}

void vox_model_free(vox_model *model) {
  free(model->label);
  free(model->intensity);
  free(model->materials);
  free(model->constraints);
  free(model->load_case_names);
  free(model->loads);
  free(model->support_names);
  free(model->load_names);
  free(model->load_case_weights);
  free(model->springs);
  free(model->outputs);
  free(model->density);
  free(model->displacement);
  free(model->history);
  free(model->design_constraints);
  free(model->history_constraint);
  free(model->final_constraint);
  free(model->cell_tensor);
  free(model->cell_objective);
  free(model->cell_expression);
  free(model->cell_symmetry);
  free(model->history_text);
  free(model->title);
  free(model->snapshot_iteration);
  free(model->snapshot_density);
  free(model->nodal_density);
  memset(model, 0, sizeof *model);
}

static void *dup_array(const void *src, size_t bytes, int *failed) {
  if (!src || bytes == 0) return NULL;
  void *dst = malloc(bytes);
  if (!dst) {
    *failed = 1;
    return NULL;
  }
  return memcpy(dst, src, bytes);
}

/* A copy of a list that grow() extends: its capacity is the next power of two. */
static void *dup_list(const void *src, size_t count, size_t size, int *failed) {
  if (!src || count == 0) return NULL;
  size_t capacity = 1;
  while (capacity < count) capacity *= 2;
  void *dst = malloc(capacity * size);
  if (!dst) {
    *failed = 1;
    return NULL;
  }
  return memcpy(dst, src, count * size);
}

vox_status vox_model_copy(vox_context *ctx, vox_model *dst, const vox_model *src) {
  int failed = 0;
  size_t ne = (size_t)vox_grid_elements(&src->grid), nn = (size_t)vox_grid_nodes(&src->grid);
  *dst = *src;
  dst->label = dup_array(src->label, ne, &failed);
  dst->intensity = dup_array(src->intensity, ne * sizeof(float), &failed);
  dst->materials =
      dup_list(src->materials, (size_t)src->n_materials, sizeof *src->materials, &failed);
  dst->constraints =
      dup_list(src->constraints, src->n_constraints, sizeof *src->constraints, &failed);
  dst->load_case_names = dup_array(src->load_case_names,
                                   src->n_load_cases * sizeof *src->load_case_names, &failed);
  dst->loads = dup_list(src->loads, src->n_loads, sizeof *src->loads, &failed);
  dst->support_names = dup_array(
      src->support_names, (size_t)src->n_support_names * sizeof *src->support_names, &failed);
  dst->load_names =
      dup_array(src->load_names, (size_t)src->n_load_names * sizeof *src->load_names, &failed);
  dst->load_case_weights = dup_array(
      src->load_case_weights, (size_t)src->n_load_cases * sizeof(double), &failed);
  dst->springs = dup_list(src->springs, src->n_springs, sizeof *src->springs, &failed);
  dst->outputs = dup_list(src->outputs, src->n_outputs, sizeof *src->outputs, &failed);
  dst->density = dup_array(src->density, ne * sizeof(double), &failed);
  dst->displacement =
      dup_array(src->displacement, (size_t)src->n_load_cases * nn * 3 * sizeof(double), &failed);
  dst->history = dup_array(src->history, src->n_history * sizeof *src->history, &failed);
  const size_t n_dc = (size_t)src->n_design_constraints;
  dst->design_constraints =
      dup_array(src->design_constraints, n_dc * sizeof *src->design_constraints, &failed);
  dst->history_constraint = dup_array(src->history_constraint,
                                      src->n_history * n_dc * sizeof(double), &failed);
  dst->final_constraint = dup_array(src->final_constraint, n_dc * sizeof(double), &failed);
  dst->cell_tensor = dup_array(src->cell_tensor, src->cell_tensor ? 36 * sizeof(double) : 0, &failed);
  dst->history_text = src->history_text ? strdup(src->history_text) : NULL;
  dst->title = src->title ? strdup(src->title) : NULL;
  char **text[3] = {&dst->cell_objective, &dst->cell_expression, &dst->cell_symmetry};
  for (int i = 0; i < 3; i++)
    if (*text[i] && !(*text[i] = strdup(*text[i]))) failed = 1;
  dst->snapshot_iteration = dup_array(
      src->snapshot_iteration, src->n_snapshots * sizeof *src->snapshot_iteration, &failed);
  dst->snapshot_density =
      dup_array(src->snapshot_density, src->n_snapshots * ne * sizeof(double), &failed);
  dst->nodal_density = dup_array(src->nodal_density, nn * sizeof(double), &failed);
  if (failed || (src->history_text && !dst->history_text) || (src->title && !dst->title)) {
    vox_model_free(dst);
    return out_of_memory(ctx);
  }
  return VOX_OK;
}

vox_status vox_model_add_snapshot(vox_context *ctx, vox_model *model, int32_t iteration,
                                  const double *density) {
  const size_t ne = (size_t)vox_grid_elements(&model->grid), n = model->n_snapshots + 1;
  if (!density || ne == 0)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "snapshot: no density or an empty grid");
  if (n > SIZE_MAX / sizeof(double) / ne) return out_of_memory(ctx);
  int32_t *it = realloc(model->snapshot_iteration, n * sizeof *it);
  if (!it) return out_of_memory(ctx);
  model->snapshot_iteration = it;
  double *d = realloc(model->snapshot_density, n * ne * sizeof *d);
  if (!d) return out_of_memory(ctx);
  model->snapshot_density = d;
  it[n - 1] = iteration;
  memcpy(d + (n - 1) * ne, density, ne * sizeof *d);
  model->n_snapshots = n;
  return VOX_OK;
}

vox_status vox_model_add_material(vox_context *ctx, vox_model *model, const vox_material *m) {
  if (m->label == 0)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "material label 0 is reserved for empty voxels");
  if (vox_model_material(model, m->label))
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "material label %d is defined twice", m->label);
  vox_material *grown = grow(model->materials, (size_t)model->n_materials, sizeof *grown);
  if (!grown) return out_of_memory(ctx);
  model->materials = grown;
  model->materials[model->n_materials++] = *m;
  return VOX_OK;
}

void vox_model_labels_used(const vox_model *model, uint8_t used[256]) {
  uint8_t seen[256] = {0};
  const int64_t ne = vox_grid_elements(&model->grid);
#pragma omp parallel for schedule(static) reduction(| : seen[:256])
  for (int64_t e = 0; e < ne; e++) seen[model->label[e]] = 1;
  memcpy(used, seen, sizeof seen);
}

vox_status vox_model_poisson_ratio(vox_context *ctx, const vox_model *model, double *nu) {
  int found = 0;
  uint8_t used[256];
  vox_model_labels_used(model, used);
  for (int l = 1; l < 256; l++) {
    if (!used[l]) continue;
    const vox_material *m = vox_model_material(model, (uint8_t)l);
    if (!m) return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "label %d has no material", l);
    if (found && m->poisson_ratio != *nu)
      return vox_error(ctx, VOX_ERR_UNSUPPORTED,
                       "materials with different Poisson ratios (%g, %g) are not supported yet",
                       *nu, m->poisson_ratio);
    *nu = m->poisson_ratio;
    found = 1;
  }
  if (!found) return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "the model has no material voxels");
  return VOX_OK;
}

const vox_material *vox_model_material(const vox_model *model, uint8_t label) {
  for (int i = 0; i < model->n_materials; i++)
    if (model->materials[i].label == label) return &model->materials[i];
  return NULL;
}

vox_status vox_model_add_constraint(vox_context *ctx, vox_model *model, int64_t node,
                                    int component, double value) {
  vox_constraint *grown = grow(model->constraints, model->n_constraints, sizeof *grown);
  if (!grown) return out_of_memory(ctx);
  model->constraints = grown;
  model->constraints[model->n_constraints++] =
      (vox_constraint){.node = node, .component = (uint8_t)component, .value = value};
  return VOX_OK;
}

vox_status vox_model_add_load(vox_context *ctx, vox_model *model, int64_t node, int component,
                              int load_case, double value) {
  vox_load *grown = grow(model->loads, model->n_loads, sizeof *grown);
  if (!grown) return out_of_memory(ctx);
  model->loads = grown;
  model->loads[model->n_loads++] = (vox_load){
      .node = node, .component = (uint8_t)component, .load_case = load_case, .value = value};
  return VOX_OK;
}

vox_status vox_model_add_condition_name(vox_context *ctx, vox_model *model, int load,
                                        const char *name, uint16_t *index) {
  int *n = load ? &model->n_load_names : &model->n_support_names;
  char(**names)[VOX_NAME_MAX] = load ? &model->load_names : &model->support_names;
  if (*n >= VOX_MAX_CONDITION_NAMES)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "more than %d %s names",
                     VOX_MAX_CONDITION_NAMES, load ? "load" : "support");
  char(*grown)[VOX_NAME_MAX] = realloc(*names, (size_t)(*n + 1) * sizeof *grown);
  if (!grown) return out_of_memory(ctx);
  *names = grown;
  snprintf(grown[*n], VOX_NAME_MAX, "%s", name);
  *index = (uint16_t)++*n;
  return VOX_OK;
}

vox_status vox_model_add_spring(vox_context *ctx, vox_model *model, int64_t node, int component,
                                double stiffness) {
  vox_spring *grown = grow(model->springs, model->n_springs, sizeof *grown);
  if (!grown) return out_of_memory(ctx);
  model->springs = grown;
  model->springs[model->n_springs++] =
      (vox_spring){.node = node, .component = (uint8_t)component, .stiffness = stiffness};
  return VOX_OK;
}

vox_status vox_model_add_output(vox_context *ctx, vox_model *model, int64_t node, int component,
                                double weight) {
  vox_output *grown = grow(model->outputs, model->n_outputs, sizeof *grown);
  if (!grown) return out_of_memory(ctx);
  model->outputs = grown;
  model->outputs[model->n_outputs++] =
      (vox_output){.node = node, .component = (uint8_t)component, .weight = weight};
  return VOX_OK;
}

vox_status vox_model_set_load_case_weights(vox_context *ctx, vox_model *model,
                                           const double *weights) {
  free(model->load_case_weights);
  model->load_case_weights = NULL;
  if (!weights || model->n_load_cases < 1) return VOX_OK;
  const size_t bytes = (size_t)model->n_load_cases * sizeof *weights;
  model->load_case_weights = malloc(bytes);
  if (!model->load_case_weights) return out_of_memory(ctx);
  memcpy(model->load_case_weights, weights, bytes);
  return VOX_OK;
}

static const char *const objective_names[] = {"compliance", "output_displacement", "volume"};

const char *vox_objective_name(vox_objective objective) {
  return (unsigned)objective < 3 ? objective_names[objective] : "unknown";
}

const char *vox_design_constraint_kind_name(int kind) {
  return kind == VOX_CONSTRAINT_VOLUME ? "volume"
         : kind == VOX_CONSTRAINT_COMPLIANCE ? "compliance"
                                             : "unknown";
}

vox_status vox_model_add_design_constraint(vox_context *ctx, vox_model *model,
                                           const vox_design_constraint *constraint) {
  if (model->n_design_constraints >= VOX_MAX_DESIGN_CONSTRAINTS)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "more than %d design constraints",
                     VOX_MAX_DESIGN_CONSTRAINTS);
  vox_design_constraint *list =
      realloc(model->design_constraints,
              (size_t)(model->n_design_constraints + 1) * sizeof *list);
  if (!list) return out_of_memory(ctx);
  model->design_constraints = list;
  list[model->n_design_constraints++] = *constraint;
  return VOX_OK;
}

int vox_objective_parse(const char *text, vox_objective *objective) {
  for (int i = 0; i < 3; i++)
    if (strcmp(text, objective_names[i]) == 0) {
      *objective = (vox_objective)i;
      return 0;
    }
  return -1;
}

vox_status vox_model_set_load_cases(vox_context *ctx, vox_model *model, int n) {
  if (n < 0) return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "negative number of load cases");
  char(*names)[VOX_NAME_MAX] = realloc(model->load_case_names, (size_t)(n ? n : 1) * VOX_NAME_MAX);
  if (!names) return out_of_memory(ctx);
  if (model->load_case_weights) { /* new cases weigh 1 */
    double *w = realloc(model->load_case_weights, (size_t)(n ? n : 1) * sizeof *w);
    if (!w) return out_of_memory(ctx);
    for (int i = model->n_load_cases; i < n; i++) w[i] = 1;
    model->load_case_weights = w;
  }
  for (int i = model->n_load_cases; i < n; i++) snprintf(names[i], VOX_NAME_MAX, "case%d", i + 1);
  model->load_case_names = names;
  model->n_load_cases = n;
  return VOX_OK;
}

vox_status vox_model_append_history(vox_context *ctx, vox_model *model, const char *line) {
  char stamp[32];
  time_t now = time(NULL);
  struct tm tm;
  strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tm));
  size_t old = model->history_text ? strlen(model->history_text) : 0;
  size_t add = strlen(stamp) + 1 + strlen(line) + 2;
  char *text = realloc(model->history_text, old + add);
  if (!text) return out_of_memory(ctx);
  snprintf(text + old, add, "%s %s\n", stamp, line);
  model->history_text = text;
  return VOX_OK;
}

const char *vox_stage_name(vox_stage stage) {
  switch (stage) {
  case VOX_STAGE_MODEL: return "model";
  case VOX_STAGE_DESIGN: return "design";
  case VOX_STAGE_ANALYSIS: return "analysis";
  }
  return "unknown";
}

/* The design constraints against the model: kinds, limits, a volume's
 * label a design material, a compliance's load case one of the model's;
 * the volume objective needs a compliance limit (else the empty design is
 * its optimum). */
static vox_status check_design_constraints(vox_context *ctx, const vox_model *model) {
  const int n = model->n_design_constraints;
  if (n < 0 || n > VOX_MAX_DESIGN_CONSTRAINTS || (n > 0 && !model->design_constraints))
    return vox_error(ctx, VOX_ERR_FORMAT, "%d design constraints (0 to %d, with their list)", n,
                     VOX_MAX_DESIGN_CONSTRAINTS);
  int compliance = 0;
  for (int i = 0; i < n; i++) {
    const vox_design_constraint *c = &model->design_constraints[i];
    if (!memchr(c->name, '\0', VOX_NAME_MAX))
      return vox_error(ctx, VOX_ERR_FORMAT, "design constraint %d has an unterminated name", i);
    if (c->kind == VOX_CONSTRAINT_VOLUME) {
      if (!(c->limit > 0 && c->limit <= 1))
        return vox_error(ctx, VOX_ERR_FORMAT,
                         "design constraint '%s': volume fraction %g not in (0, 1]", c->name,
                         c->limit);
      if (c->equal > 1)
        return vox_error(ctx, VOX_ERR_FORMAT, "design constraint '%s': relation %d is not 0 or 1",
                         c->name, c->equal);
      const vox_material *m = c->label ? vox_model_material(model, c->label) : NULL;
      if (c->label && (!m || m->role != VOX_ROLE_DESIGN))
        return vox_error(ctx, VOX_ERR_FORMAT,
                         "design constraint '%s': label %d is not a design material of the "
                         "model", c->name, c->label);
    } else if (c->kind == VOX_CONSTRAINT_COMPLIANCE) {
      compliance++;
      if (!(c->limit > 0) || !isfinite(c->limit))
        return vox_error(ctx, VOX_ERR_FORMAT,
                         "design constraint '%s': compliance limit %g must be positive",
                         c->name, c->limit);
      if (c->load_case < 0 || c->load_case >= model->n_load_cases)
        return vox_error(ctx, VOX_ERR_FORMAT,
                         "design constraint '%s': load case %d is not one of the model's %d",
                         c->name, (int)c->load_case, model->n_load_cases);
      if (c->equal || c->label)
        return vox_error(ctx, VOX_ERR_FORMAT,
                         "design constraint '%s': a compliance limit is an upper bound over the "
                         "whole model (no '=', no label)", c->name);
    } else {
      return vox_error(ctx, VOX_ERR_FORMAT, "design constraint '%s': unknown kind %d", c->name,
                       c->kind);
    }
  }
  if (model->objective == VOX_OBJECTIVE_VOLUME && compliance == 0)
    return vox_error(ctx, VOX_ERR_FORMAT,
                     "the volume objective needs a compliance constraint (without one the empty "
                     "design is its minimum)");
  return VOX_OK;
}

vox_status vox_model_validate(vox_context *ctx, const vox_model *model) {
  const vox_grid *g = &model->grid;
  if (vox_grid_check(ctx, g)) return VOX_ERR_FORMAT; /* the message stays */
  if (!model->label) return vox_error(ctx, VOX_ERR_FORMAT, "the model has no labels");
  for (int i = 0; i < model->n_materials; i++) {
    const vox_material *m = &model->materials[i];
    if (m->label == 0 || vox_model_material(model, m->label) != m)
      return vox_error(ctx, VOX_ERR_FORMAT, "material '%s': label %d is zero or used twice",
                       m->name, m->label);
    if (!(m->youngs_modulus > 0) || !isfinite(m->youngs_modulus) ||
        !(m->poisson_ratio > -1 && m->poisson_ratio < 0.5))
      return vox_error(ctx, VOX_ERR_FORMAT,
                       "material '%s' (label %d) needs a finite E > 0 and -1 < nu < 0.5 "
                       "(E = %g, nu = %g)",
                       m->name, m->label, m->youngs_modulus, m->poisson_ratio);
    if (!isfinite(m->conductivity))
      return vox_error(ctx, VOX_ERR_FORMAT, "material '%s' (label %d): conductivity %g is not "
                       "finite", m->name, m->label, m->conductivity);
    if (m->role != VOX_ROLE_DESIGN && m->role != VOX_ROLE_SOLID && m->role != VOX_ROLE_VOID)
      return vox_error(ctx, VOX_ERR_FORMAT, "material '%s' has an unknown role", m->name);
  }
  if (model->physics != VOX_PHYSICS_ELASTICITY && model->physics != VOX_PHYSICS_HEAT)
    return vox_error(ctx, VOX_ERR_FORMAT, "unknown physics %d", (int)model->physics);
  const int max_component = vox_physics_dofs_per_node(model->physics) - 1;
  uint8_t used[256];
  const int64_t nn = vox_grid_nodes(g);
  vox_model_labels_used(model, used);
  for (int l = 1; l < 256; l++)
    if (used[l] && !vox_model_material(model, (uint8_t)l))
      return vox_error(ctx, VOX_ERR_FORMAT, "label %d is used but has no material", l);
  for (size_t i = 0; i < model->n_constraints; i++) {
    const vox_constraint *c = &model->constraints[i];
    if (c->node < 0 || c->node >= nn || c->component > max_component)
      return vox_error(ctx, VOX_ERR_FORMAT, "constraint %zu: node %lld component %d out of range",
                       i, (long long)c->node, c->component);
    if (c->name_index > model->n_support_names)
      return vox_error(ctx, VOX_ERR_FORMAT, "constraint %zu: support name %d of %d", i,
                       c->name_index, model->n_support_names);
    if (!isfinite(c->value))
      return vox_error(ctx, VOX_ERR_FORMAT,
                       "constraint %zu (node %lld, component %d): prescribed value %g is not "
                       "finite", i, (long long)c->node, c->component, c->value);
  }
  for (size_t i = 0; i < model->n_loads; i++) {
    const vox_load *l = &model->loads[i];
    if (l->node < 0 || l->node >= nn || l->component > max_component)
      return vox_error(ctx, VOX_ERR_FORMAT, "load %zu: node %lld component %d out of range", i,
                       (long long)l->node, l->component);
    if (l->load_case < 0 || l->load_case >= model->n_load_cases)
      return vox_error(ctx, VOX_ERR_FORMAT, "load %zu: load case %d out of range (%d cases)", i,
                       l->load_case, model->n_load_cases);
    if (l->name_index > model->n_load_names)
      return vox_error(ctx, VOX_ERR_FORMAT, "load %zu: load name %d of %d", i, l->name_index,
                       model->n_load_names);
    if (!isfinite(l->value))
      return vox_error(ctx, VOX_ERR_FORMAT, "load %zu (node %lld, component %d): value %g is "
                       "not finite", i, (long long)l->node, l->component, l->value);
  }
  for (int c = 0; model->load_case_weights && c < model->n_load_cases; c++)
    if (!(model->load_case_weights[c] >= 0) || !isfinite(model->load_case_weights[c]))
      return vox_error(ctx, VOX_ERR_FORMAT, "load case %d: weight %g is not a finite number >= 0",
                       c, model->load_case_weights[c]);
  for (size_t i = 0; i < model->n_springs; i++) {
    const vox_spring *sp = &model->springs[i];
    if (sp->node < 0 || sp->node >= nn || sp->component > max_component)
      return vox_error(ctx, VOX_ERR_FORMAT, "spring %zu: node %lld component %d out of range", i,
                       (long long)sp->node, sp->component);
    if (!(sp->stiffness > 0) || !isfinite(sp->stiffness))
      return vox_error(ctx, VOX_ERR_FORMAT, "spring %zu: stiffness %g must be positive", i,
                       sp->stiffness);
  }
  for (size_t i = 0; i < model->n_outputs; i++) {
    const vox_output *o = &model->outputs[i];
    if (o->node < 0 || o->node >= nn || o->component > max_component || !isfinite(o->weight))
      return vox_error(ctx, VOX_ERR_FORMAT, "output %zu: node %lld component %d out of range", i,
                       (long long)o->node, o->component);
  }
  if (model->objective != VOX_OBJECTIVE_COMPLIANCE &&
      model->objective != VOX_OBJECTIVE_OUTPUT_DISPLACEMENT &&
      model->objective != VOX_OBJECTIVE_VOLUME)
    return vox_error(ctx, VOX_ERR_FORMAT, "unknown objective %d", (int)model->objective);
  vox_status constraints_ok = check_design_constraints(ctx, model);
  if (constraints_ok) return constraints_ok;
  if (model->objective == VOX_OBJECTIVE_OUTPUT_DISPLACEMENT &&
      (model->n_outputs == 0 || model->physics != VOX_PHYSICS_ELASTICITY ||
       model->n_load_cases > 1))
    return vox_error(ctx, VOX_ERR_FORMAT,
                     "an output-displacement objective needs elasticity, one load case and "
                     "output dofs");
  if (model->displacement && model->n_load_cases < 1)
    return vox_error(ctx, VOX_ERR_FORMAT, "a displacement is stored but there are no load cases");
  return VOX_OK;
}

const char *vox_physics_name(vox_physics physics) {
  return physics == VOX_PHYSICS_HEAT ? "heat" : "elasticity";
}

int vox_physics_parse(const char *text, vox_physics *physics) {
  if (strcmp(text, "elasticity") == 0) *physics = VOX_PHYSICS_ELASTICITY;
  else if (strcmp(text, "heat") == 0) *physics = VOX_PHYSICS_HEAT;
  else return -1;
  return 0;
}

/* ---- checks before a solve or an optimization ------------------------------ */

extern void dsyev_(const char *jobz, const char *uplo, const int *n, double *a, const int *lda,
                   double *w, double *work, const int *lwork, int *info);

/* Row of one held dof in the matrix of the six rigid motions: the motion's
 * value at the dof. Coordinates are centred on the box and scaled by its
 * half-extent, so that translations and rotations weigh alike. */
static void rigid_row(const vox_grid *g, int64_t node, int component, const double centre[3],
                      double scale, double row[6]) {
  const int64_t ijk[3] = {node % (g->nx + 1), node / (g->nx + 1) % (g->ny + 1),
                          node / ((g->nx + 1) * (g->ny + 1))};
  double r[3];
  for (int a = 0; a < 3; a++) r[a] = ((double)ijk[a] * g->voxel_size[a] - centre[a]) / scale;
  for (int k = 0; k < 6; k++) row[k] = 0;
  row[component] = 1;
  /* (e_k x r)[component] for the rotation about axis k */
  const int c = component;
  row[3 + (c + 1) % 3] = r[(c + 2) % 3];  /* e_{c+1} x r has +r_{c+2} at c */
  row[3 + (c + 2) % 3] = -r[(c + 1) % 3]; /* e_{c+2} x r has -r_{c+1} at c */
}

int vox_model_prescribes_motion(const vox_model *model) {
  for (size_t i = 0; i < model->n_constraints; i++)
    if (model->constraints[i].value != 0) return 1;
  return 0;
}

vox_status vox_model_check_held(vox_context *ctx, const vox_model *model) {
  const vox_grid *g = &model->grid;
  if (g->periodic) return VOX_OK; /* a cell's rigid motions are the homogenization's business */
  if (model->physics == VOX_PHYSICS_HEAT) {
    if (model->n_constraints == 0)
      return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                       "no temperature is prescribed anywhere: the temperature field is not "
                       "held (give a support with 'temperature')");
    return VOX_OK;
  }
  const double extent[3] = {(double)g->nx * g->voxel_size[0], (double)g->ny * g->voxel_size[1],
                            (double)g->nz * g->voxel_size[2]};
  const double centre[3] = {extent[0] / 2, extent[1] / 2, extent[2] / 2};
  const double scale = fmax(extent[0], fmax(extent[1], extent[2])) / 2;
  double m[36] = {0}, row[6];
  int held_axis[3] = {0, 0, 0};
  const size_t n = model->n_constraints + model->n_springs;
  for (size_t i = 0; i < n; i++) {
    const int64_t node = i < model->n_constraints ? model->constraints[i].node
                                                  : model->springs[i - model->n_constraints].node;
    const int c = i < model->n_constraints ? model->constraints[i].component
                                           : model->springs[i - model->n_constraints].component;
    held_axis[c] = 1;
    rigid_row(g, node, c, centre, scale, row);
    for (int a = 0; a < 6; a++)
      for (int b = 0; b < 6; b++) m[6 * a + b] += row[a] * row[b];
  }
  double w[6], work[64];
  int dim = 6, lwork = 64, info = 0;
  dsyev_("V", "U", &dim, m, &dim, w, work, &lwork, &info);
  if (info != 0) return VOX_OK; /* cannot tell: leave it to the solver */
  /* the null space: eigenvalues (ascending) negligible against the largest */
  const double floor = 1e-10 * fmax(w[5], 0);
  int free_modes = 0;
  while (free_modes < 6 && !(w[free_modes] > floor)) free_modes++;
  if (free_modes == 0) return VOX_OK;
  /* A free motion that no load case's forces do work on is no error: the
   * system is singular but consistent (a compression test's prescribed
   * displacements, K g, are orthogonal to every rigid motion), and CG finds
   * a solution whose rigid part the loads never see. Only loads that drive
   * a free motion leave the structure to move without bound. */
  {
    const int cases = model->n_load_cases > 0 ? model->n_load_cases : 1;
    double *work_done = calloc((size_t)cases * 6, sizeof *work_done);
    double *magnitude = calloc((size_t)cases, sizeof *magnitude);
    if (!work_done || !magnitude) {
      free(work_done), free(magnitude);
      return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
    }
    for (size_t i = 0; i < model->n_loads; i++) {
      const vox_load *l = &model->loads[i];
      const int lc = l->load_case >= 0 && l->load_case < cases ? l->load_case : 0;
      rigid_row(g, l->node, l->component, centre, scale, row);
      for (int k = 0; k < free_modes; k++) {
        double r = 0;
        for (int a = 0; a < 6; a++) r += row[a] * m[6 * k + a];
        work_done[6 * lc + k] += l->value * r;
      }
      magnitude[lc] += fabs(l->value);
    }
    int driven = 0;
    for (int lc = 0; lc < cases; lc++)
      for (int k = 0; k < free_modes; k++)
        driven |= fabs(work_done[6 * lc + k]) > 1e-9 * magnitude[lc];
    free(work_done), free(magnitude);
    if (!driven) return VOX_OK;
  }
  /* Translations free: the axes no held dof points along. Rotations free:
   * the directions of the null vectors' rotation parts, orthonormalised. */
  char text[256];
  size_t used = 0;
  const char *axis = "xyz";
  for (int a = 0; a < 3; a++)
    if (!held_axis[a])
      used += (size_t)snprintf(text + used, sizeof text - used, "%stranslation along %c",
                               used ? ", " : "", axis[a]);
  double q[3][3];
  int nq = 0;
  for (int k = 0; k < free_modes && used < sizeof text; k++) {
    double v[3] = {m[6 * k + 3], m[6 * k + 4], m[6 * k + 5]};
    for (int j = 0; j < nq; j++) {
      const double d = v[0] * q[j][0] + v[1] * q[j][1] + v[2] * q[j][2];
      for (int a = 0; a < 3; a++) v[a] -= d * q[j][a];
    }
    const double len = sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
    if (len < 1e-6) continue;
    for (int a = 0; a < 3; a++) q[nq][a] = v[a] / len;
    nq++;
  }
  for (int a = 0; a < 3 && used < sizeof text; a++) {
    double along = 0; /* the length of e_a's projection on the rotations' span */
    for (int j = 0; j < nq; j++) along += q[j][a] * q[j][a];
    if (along > 1 - 1e-6)
      used += (size_t)snprintf(text + used, sizeof text - used, "%srotation about %c",
                               used ? ", " : "", axis[a]);
  }
  if (nq > 0 && used < sizeof text && !strstr(text, "rotation"))
    used += (size_t)snprintf(text + used, sizeof text - used,
                             "%srotation about an axis along (%.2g, %.2g, %.2g)",
                             used ? ", " : "", q[0][0], q[0][1], q[0][2]);
  return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                   "the supports do not hold the structure against rigid motion (%d free "
                   "mode%s: %s); add supports that stop %s",
                   free_modes, free_modes > 1 ? "s" : "", text, free_modes > 1 ? "them" : "it");
}

/* The node's coordinates in the grid, for messages. */
static void node_ijk(const vox_grid *g, int64_t node, long long ijk[3]) {
  ijk[0] = (long long)(node % (g->nx + 1));
  ijk[1] = (long long)(node / (g->nx + 1) % (g->ny + 1));
  ijk[2] = (long long)(node / ((g->nx + 1) * (g->ny + 1)));
}

vox_status vox_model_check_loads_carried(vox_context *ctx, const vox_model *model,
                                         const uint8_t carries[256], const char *what) {
  const vox_grid *g = &model->grid;
  for (size_t i = 0; i < model->n_loads; i++) {
    long long ijk[3];
    node_ijk(g, model->loads[i].node, ijk);
    int carried = 0;
    for (int dz = -1; dz <= 0 && !carried; dz++)
      for (int dy = -1; dy <= 0 && !carried; dy++)
        for (int dx = -1; dx <= 0 && !carried; dx++) {
          const long long e[3] = {ijk[0] + dx, ijk[1] + dy, ijk[2] + dz};
          if (e[0] < 0 || e[1] < 0 || e[2] < 0 || e[0] >= g->nx || e[1] >= g->ny || e[2] >= g->nz)
            continue;
          carried = carries[model->label[(e[2] * g->ny + e[1]) * g->nx + e[0]]];
        }
    if (!carried && model->loads[i].value != 0)
      return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                       "load %zu (node x %lld, y %lld, z %lld, component %d, %g) touches no "
                       "element of %s: nothing there can carry it",
                       i, ijk[0], ijk[1], ijk[2], model->loads[i].component,
                       model->loads[i].value, what);
  }
  return VOX_OK;
}

vox_status vox_model_check_cases_loaded(vox_context *ctx, const vox_model *model) {
  const int n_cases = model->n_load_cases;
  size_t *forces = calloc((size_t)(n_cases > 0 ? n_cases : 1), sizeof *forces);
  char *loaded = calloc((size_t)(n_cases > 0 ? n_cases : 1), 1);
  if (!forces || !loaded) {
    free(forces);
    free(loaded);
    return out_of_memory(ctx);
  }
  for (size_t i = 0; i < model->n_loads; i++) {
    const int c = model->loads[i].load_case;
    if (c < 0 || c >= n_cases) continue; /* vox_model_validate's to say */
    forces[c]++;
    loaded[c] |= model->loads[i].value != 0;
  }
  vox_status s = VOX_OK;
  for (int c = 0; c < n_cases && !s; c++)
    if (!loaded[c])
      s = vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                    "load case '%s' has no load (%zu nodal force%s, all zero): there is "
                    "nothing for the structure to carry",
                    model->load_case_names ? model->load_case_names[c] : "case1", forces[c],
                    forces[c] == 1 ? "" : "s");
  free(forces);
  free(loaded);
  return s;
}
