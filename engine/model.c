/* The voxel model's memory: allocation, copies, appending materials,
 * boundary conditions and history, and a consistency check. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

vox_status vox_model_init(vox_context *ctx, vox_model *model, const vox_grid *grid) {
  memset(model, 0, sizeof *model);
  if (grid->nx < 1 || grid->ny < 1 || grid->nz < 1)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "grid size %lldx%lldx%lld is empty",
                     (long long)grid->nx, (long long)grid->ny, (long long)grid->nz);
  for (int a = 0; a < 3; a++)
    if (!(grid->voxel_size[a] > 0))
      return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "voxel size must be positive");
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
  free(model->cell_tensor);
  free(model->cell_objective);
  free(model->cell_expression);
  free(model->cell_symmetry);
  free(model->history_text);
  free(model->title);
  free(model->snapshot_iteration);
  free(model->snapshot_density);
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

static const char *const objective_names[] = {"compliance", "output_displacement"};

const char *vox_objective_name(vox_objective objective) {
  return (unsigned)objective < 2 ? objective_names[objective] : "unknown";
}

int vox_objective_parse(const char *text, vox_objective *objective) {
  for (int i = 0; i < 2; i++)
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

vox_status vox_model_validate(vox_context *ctx, const vox_model *model) {
  const vox_grid *g = &model->grid;
  if (g->nx < 1 || g->ny < 1 || g->nz < 1)
    return vox_error(ctx, VOX_ERR_FORMAT, "grid size %lldx%lldx%lld is empty", (long long)g->nx,
                     (long long)g->ny, (long long)g->nz);
  for (int a = 0; a < 3; a++)
    if (!(g->voxel_size[a] > 0))
      return vox_error(ctx, VOX_ERR_FORMAT, "voxel size must be positive");
  if (!model->label) return vox_error(ctx, VOX_ERR_FORMAT, "the model has no labels");
  for (int i = 0; i < model->n_materials; i++) {
    const vox_material *m = &model->materials[i];
    if (m->label == 0 || vox_model_material(model, m->label) != m)
      return vox_error(ctx, VOX_ERR_FORMAT, "material '%s': label %d is zero or used twice",
                       m->name, m->label);
    if (!(m->youngs_modulus > 0) || !(m->poisson_ratio > -1 && m->poisson_ratio < 0.5))
      return vox_error(ctx, VOX_ERR_FORMAT,
                       "material '%s' (label %d) needs E > 0 and -1 < nu < 0.5", m->name,
                       m->label);
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
      model->objective != VOX_OBJECTIVE_OUTPUT_DISPLACEMENT)
    return vox_error(ctx, VOX_ERR_FORMAT, "unknown objective %d", (int)model->objective);
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
