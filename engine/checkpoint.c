/* SPDX-License-Identifier: BSD-3-Clause */
/* Checkpoints of the optimizer (voxfe/checkpoint.h, optimizer_checkpoint.h):
 * the list of named arrays, and the design loop's state in it. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "optimizer_checkpoint.h"

/* ---- the list ------------------------------------------------------------ */

static int name_ok(const char *name) {
  size_t n = strlen(name);
  if (n == 0 || n >= VOX_NAME_MAX) return 0;
  for (size_t i = 0; i < n; i++) {
    const char c = name[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'))
      return 0;
  }
  return 1;
}

vox_status vox_checkpoint_add(vox_context *ctx, vox_checkpoint *c, const char *name, size_t length,
                              const double *values) {
  if (!name_ok(name) || length == 0)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "checkpoint array '%s' of %zu values: bad name "
                     "or no values", name, length);
  if (vox_checkpoint_find(c, name))
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "checkpoint array '%s' twice", name);
  if (length > SIZE_MAX / sizeof(double))
    return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
  vox_checkpoint_array *a = realloc(c->arrays, (c->n_arrays + 1) * sizeof *a);
  if (!a) return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
  c->arrays = a;
  double *copy = values ? malloc(length * sizeof *copy) : calloc(length, sizeof *copy);
  if (!copy) return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
  if (values) memcpy(copy, values, length * sizeof *copy);
  vox_checkpoint_array *entry = &c->arrays[c->n_arrays++];
  memset(entry, 0, sizeof *entry);
  snprintf(entry->name, sizeof entry->name, "%s", name);
  entry->length = length;
  entry->values = copy;
  return VOX_OK;
}

vox_status vox_checkpoint_add_scalar(vox_context *ctx, vox_checkpoint *c, const char *name,
                                     double value) {
  return vox_checkpoint_add(ctx, c, name, 1, &value);
}

const vox_checkpoint_array *vox_checkpoint_find(const vox_checkpoint *c, const char *name) {
  for (size_t i = 0; c && i < c->n_arrays; i++)
    if (strcmp(c->arrays[i].name, name) == 0) return &c->arrays[i];
  return NULL;
}

void vox_checkpoint_free(vox_checkpoint *c) {
  if (!c) return;
  for (size_t i = 0; i < c->n_arrays; i++) free(c->arrays[i].values);
  free(c->arrays);
  memset(c, 0, sizeof *c);
}

/* ---- what a resume must match ---------------------------------------------- */

/* FNV-1a over the fields, not the structs (whose padding is not defined). */
typedef struct hash {
  uint64_t h;
} hash;

static void hash_bytes(hash *h, const void *data, size_t n) {
  const unsigned char *p = data;
  for (size_t i = 0; i < n; i++) {
    h->h ^= p[i];
    h->h *= 0x100000001b3u;
  }
}
/* (an expression, so that a line may hash several fields) */
#define HASH(h, value) hash_bytes(h, &(__typeof__(value)){value}, sizeof(__typeof__(value)))

/* The model's problem: grid, labels, materials, physics, objective,
 * supports, loads, springs, outputs and design constraints (not its density, state or history,
 * which a run changes), as a double (53 bits of the hash, exact). */
static double model_fingerprint(const vox_model *m) {
  hash h = {0xcbf29ce484222325u};
  const vox_grid *g = &m->grid;
  HASH(&h, g->nx), HASH(&h, g->ny), HASH(&h, g->nz);
  for (int a = 0; a < 3; a++) HASH(&h, g->voxel_size[a]), HASH(&h, g->origin[a]);
  HASH(&h, (int)m->physics), HASH(&h, (int)m->objective);
  hash_bytes(&h, m->label, (size_t)vox_grid_elements(g));
  for (int i = 0; i < m->n_materials; i++) {
    const vox_material *x = &m->materials[i];
    HASH(&h, x->label), HASH(&h, (int)x->role), HASH(&h, x->youngs_modulus);
    HASH(&h, x->poisson_ratio), HASH(&h, x->conductivity);
  }
  for (size_t i = 0; i < m->n_constraints; i++)
    HASH(&h, m->constraints[i].node), HASH(&h, m->constraints[i].component),
        HASH(&h, m->constraints[i].value);
  HASH(&h, m->n_load_cases);
  for (size_t i = 0; i < m->n_loads; i++)
    HASH(&h, m->loads[i].node), HASH(&h, m->loads[i].component), HASH(&h, m->loads[i].load_case),
        HASH(&h, m->loads[i].value);
  for (int c = 0; m->load_case_weights && c < m->n_load_cases; c++)
    HASH(&h, m->load_case_weights[c]);
  for (size_t i = 0; i < m->n_springs; i++)
    HASH(&h, m->springs[i].node), HASH(&h, m->springs[i].component),
        HASH(&h, m->springs[i].stiffness);
  for (size_t i = 0; i < m->n_outputs; i++)
    HASH(&h, m->outputs[i].node), HASH(&h, m->outputs[i].component),
        HASH(&h, m->outputs[i].weight);
  /* (nothing without design constraints: the fingerprints of models
   * without them stay those of the checkpoints before them) */
  for (int i = 0; i < m->n_design_constraints; i++) {
    const vox_design_constraint *c = &m->design_constraints[i];
    HASH(&h, c->kind), HASH(&h, c->equal), HASH(&h, c->label), HASH(&h, c->load_case);
    HASH(&h, c->limit);
  }
  return (double)(h.h >> 11);
}

/* The options that shape the design (not max_iterations, snapshots,
 * checkpoints, the adjoint's device or the initial design, which a resumed
 * run does not use), as the loop resolved them. */
enum { N_OPTIONS = 32 };
typedef struct option_value {
  const char *name;
  double value;
} option_value;

static void shaping_options(const vox_optimizer_options *o, option_value v[N_OPTIONS]) {
  const vox_solver_options *s = &o->solver;
  const option_value all[N_OPTIONS] = {
      {"volume_fraction", o->volume_fraction},
      {"penalty", o->penalty},
      {"emin_ratio", o->emin_ratio},
      {"filter", o->filter},
      {"filter_radius", o->filter == VOX_FILTER_NONE ? 0 : o->filter_radius},
      {"move_limit", o->move_limit},
      {"damping", o->damping},
      {"q_max", o->q_max},
      {"continuation", o->continuation},
      {"continuation_start_p", o->continuation_start_p},
      {"continuation_growth_p", o->continuation_growth_p},
      {"continuation_start_q", o->continuation_start_q},
      {"continuation_growth_q", o->continuation_growth_q},
      {"change_tolerance", o->change_tolerance},
      {"objective_tolerance", o->objective_tolerance},
      {"constraint_tolerance", o->constraint_tolerance},
      {"settle_iterations", o->settle_iterations},
      {"symmetry", o->symmetry},
      {"density_min", o->density_min},
      {"cell_objective", o->cell_objective},
      {"cg_tolerance", s->rtol},
      {"cg_max_iterations", s->max_iterations},
      {"preconditioner", s->preconditioner},
      {"mg_levels", s->mg_levels},
      {"smoother", s->smoother},
      {"smoothing_steps", s->smoothing_steps},
      {"fine_smoothing_steps", s->fine_smoothing_steps},
      {"jacobi_damping", s->jacobi_damping},
      {"precision", s->precision},
      {"storage", s->storage},
      {"mg_cycle", s->mg_cycle},
      {"start_history", s->start_history},
  };
  memcpy(v, all, sizeof all);
}

/* mg_bound_refresh is checked with the multigrid's state (it says when the
 * kept bounds are estimated again). */
#define OPTION_PREFIX "option_"

static const vox_checkpoint_array *need(vox_context *ctx, const vox_checkpoint *c,
                                        const char *name, size_t length, vox_status *st) {
  const vox_checkpoint_array *a = vox_checkpoint_find(c, name);
  if (*st != VOX_OK) return NULL;
  if (!a)
    *st = vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "the checkpoint has no '%s'", name);
  else if (length && a->length != length)
    *st = vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                    "the checkpoint's '%s' has %zu values where this model needs %zu", name,
                    a->length, length);
  return *st == VOX_OK ? a : NULL;
}

/* The shortest of %.15g..%.17g that reads back as the same double. */
static const char *shortest(double value, char out[32]) {
  for (int digits = 15; digits <= 17; digits++) {
    snprintf(out, 32, "%.*g", digits, value);
    if (strtod(out, NULL) == value) break;
  }
  return out;
}

vox_status vox_loop_check_resume(vox_context *ctx, const vox_model *model,
                                 const vox_optimizer_options *opt) {
  const vox_checkpoint *c = opt->resume;
  vox_status st = VOX_OK;
  const vox_checkpoint_array *version = need(ctx, c, "checkpoint_version", 1, &st);
  if (st != VOX_OK) return st;
  if (version->values[0] != VOX_CHECKPOINT_VERSION)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "the checkpoint is of layout %g, this voxfe reads layout %d", version->values[0],
                     VOX_CHECKPOINT_VERSION);
  const vox_checkpoint_array *fingerprint = need(ctx, c, "model_fingerprint", 1, &st);
  if (st != VOX_OK) return st;
  if (fingerprint->values[0] != model_fingerprint(model))
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "the checkpoint is of another model (grid, labels, materials, boundary "
                     "conditions or design constraints differ from this one's)");
  option_value v[N_OPTIONS];
  shaping_options(opt, v);
  for (int i = 0; i < N_OPTIONS; i++) {
    char name[VOX_NAME_MAX];
    snprintf(name, sizeof name, OPTION_PREFIX "%s", v[i].name);
    const vox_checkpoint_array *a = need(ctx, c, name, 1, &st);
    if (st != VOX_OK) return st;
    /* bit for bit: what shapes the design must be the same number */
    if (memcmp(&a->values[0], &v[i].value, sizeof(double)) != 0) {
      char had[32], has[32];
      return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                       "the checkpoint's run had %s %s, this one has %s: a resumed run needs "
                       "the options of the run that made the checkpoint",
                       v[i].name, shortest(a->values[0], had), shortest(v[i].value, has));
    }
  }
  /* the sensitivity filter's floor as the run resolved it; a checkpoint
   * without one is of a run before the option, which took 1e-3. Its
   * default follows the optimizer, whose own check (in the update's state)
   * names a change of optimizer instead. */
  const vox_checkpoint_array *kept_floor =
      vox_checkpoint_find(c, OPTION_PREFIX "sensitivity_floor");
  const vox_checkpoint_array *update = vox_checkpoint_find(c, "option_update");
  const double had = kept_floor && kept_floor->length == 1 ? kept_floor->values[0] : 1e-3,
               has = vox_optimizer_sensitivity_floor(opt),
               had_update = update && update->length == 1 ? update->values[0] : VOX_UPDATE_OC;
  if (had != has && had_update == (double)opt->update) {
    char had_text[32], has_text[32];
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "the checkpoint's run had sensitivity floor %s, this one has %s: a resumed "
                     "run needs the options of the run that made the checkpoint",
                     shortest(had, had_text), shortest(has, has_text));
  }
  /* the coarsest level's size as the options gave it; a checkpoint without
   * one is of a run before the option, which left it to the device too (0) */
  const vox_checkpoint_array *coarse = vox_checkpoint_find(c, OPTION_PREFIX "mg_coarse_dofs");
  const double had_coarse = coarse && coarse->length == 1 ? coarse->values[0] : 0;
  if (had_coarse != opt->solver.mg_coarse_dofs)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "the checkpoint's run had mg_coarse_dofs %g, this one has %d: a resumed run "
                     "needs the options of the run that made the checkpoint",
                     had_coarse, opt->solver.mg_coarse_dofs);
  /* the energy and reaction tests of the CG; a checkpoint without them is
   * of a run before the options, which had them off (0). Their window
   * counts only where one is on. */
  const vox_checkpoint_array *energy =
      vox_checkpoint_find(c, OPTION_PREFIX "cg_energy_tolerance");
  const vox_checkpoint_array *reaction =
      vox_checkpoint_find(c, OPTION_PREFIX "cg_reaction_tolerance");
  const vox_checkpoint_array *window = vox_checkpoint_find(c, OPTION_PREFIX "cg_window");
  const double had_energy = energy && energy->length == 1 ? energy->values[0] : 0,
               had_reaction = reaction && reaction->length == 1 ? reaction->values[0] : 0,
               had_window = window && window->length == 1 ? window->values[0] : 0;
  if (had_energy != opt->solver.energy_tol || had_reaction != opt->solver.reaction_tol ||
      ((had_energy > 0 || had_reaction > 0) && had_window != opt->solver.cg_window)) {
    char had_e[32], has_e[32], had_r[32], has_r[32];
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "the checkpoint's run had CG energy and reaction tolerances %s and %s "
                     "(window %g), this one has %s and %s (window %d): a resumed run needs the "
                     "options of the run that made the checkpoint",
                     shortest(had_energy, had_e), shortest(had_reaction, had_r), had_window,
                     shortest(opt->solver.energy_tol, has_e),
                     shortest(opt->solver.reaction_tol, has_r), opt->solver.cg_window);
  }
  return VOX_OK;
}

/* ---- the loop's state -------------------------------------------------------- */

/* The multigrid's coarse smoother bounds and its count of setups since
 * they were estimated: with mg_bound_refresh > 1 the next setups keep the
 * bounds of an earlier one, which the resumed run must have too. */
static vox_status multigrid_save(vox_context *ctx, const vox_optimizer_options *opt,
                                 const vox_fem *fem, vox_checkpoint *out) {
  TRY(vox_checkpoint_add_scalar(ctx, out, OPTION_PREFIX "mg_bound_refresh",
                                opt->solver.mg_bound_refresh));
  if (!fem->mg) return VOX_OK;
  const vox_multigrid *mg = fem->mg;
  double *lambda = malloc((size_t)mg->n_levels * sizeof *lambda);
  if (!lambda) return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
  for (int l = 0; l < mg->n_levels; l++) lambda[l] = mg->level[l].lambda_max;
  vox_status st = vox_checkpoint_add(ctx, out, "multigrid_lambda_max", (size_t)mg->n_levels, lambda);
  free(lambda);
  TRY(st);
  return vox_checkpoint_add_scalar(ctx, out, "multigrid_setups", mg->setups);
}

static vox_status multigrid_restore(vox_context *ctx, const vox_optimizer_options *opt,
                                    vox_fem *fem) {
  const vox_checkpoint *c = opt->resume;
  vox_status st = VOX_OK;
  const vox_checkpoint_array *refresh = need(ctx, c, OPTION_PREFIX "mg_bound_refresh", 1, &st);
  TRY(st);
  if (refresh->values[0] != opt->solver.mg_bound_refresh)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "the checkpoint's run had mg_bound_refresh %g, this one has %d: a resumed "
                     "run needs the options of the run that made the checkpoint",
                     refresh->values[0], opt->solver.mg_bound_refresh);
  const vox_checkpoint_array *lambda = vox_checkpoint_find(c, "multigrid_lambda_max");
  if (!lambda) return VOX_OK; /* no multigrid solve yet */
  const vox_checkpoint_array *setups = need(ctx, c, "multigrid_setups", 1, &st);
  TRY(st);
  if (!fem->mg) {
    /* made now rather than on the first solve, so that it has the bounds */
    TRY((fem->solver_released ? vox_mg_create_released : vox_mg_create)(
        fem->be, fem->op, &fem->grid, fem->dpn, fem->jacobi_bound, &opt->solver, &fem->mg));
    fem->mg_stale = 1;
  }
  vox_multigrid *mg = fem->mg;
  if (lambda->length != (size_t)mg->n_levels || !(setups->values[0] >= 0) ||
      setups->values[0] > 1e9)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "the checkpoint's multigrid has %zu levels where this one has %d", lambda->length,
                     mg->n_levels);
  for (int l = 0; l < mg->n_levels; l++) mg->level[l].lambda_max = lambda->values[l];
  mg->setups = (int)setups->values[0];
  return VOX_OK;
}

vox_status vox_loop_save(vox_backend *be, const vox_model *model, const vox_optimizer_options *opt,
                         const vox_loop_state *loop, const vox_vec *x, vox_fem *fem,
                         vox_objective_state *objective, vox_homog *homog, vox_checkpoint *out) {
  vox_context *ctx = be->ctx;
  memset(out, 0, sizeof *out);
  vox_status st = vox_checkpoint_add_scalar(ctx, out, "checkpoint_version", VOX_CHECKPOINT_VERSION);
  if (st == VOX_OK) st = vox_checkpoint_add_scalar(ctx, out, "model_fingerprint", model_fingerprint(model));
  option_value v[N_OPTIONS];
  shaping_options(opt, v);
  for (int i = 0; st == VOX_OK && i < N_OPTIONS; i++) {
    char name[VOX_NAME_MAX];
    snprintf(name, sizeof name, OPTION_PREFIX "%s", v[i].name);
    st = vox_checkpoint_add_scalar(ctx, out, name, v[i].value);
  }
  /* the options read back beside shaping_options', then the loop's state */
  const struct {
    const char *name;
    double value;
  } scalars[] = {{OPTION_PREFIX "sensitivity_floor", vox_optimizer_sensitivity_floor(opt)},
                 {OPTION_PREFIX "mg_coarse_dofs", opt->solver.mg_coarse_dofs},
                 {OPTION_PREFIX "cg_energy_tolerance", opt->solver.energy_tol},
                 {OPTION_PREFIX "cg_reaction_tolerance", opt->solver.reaction_tol},
                 {OPTION_PREFIX "cg_window", opt->solver.cg_window},
                 {"iterations_done", loop->iterations},
                 {"first_row", loop->first_row},
                 {"penalty_now", loop->p},
                 {"q_now", loop->q},
                 {"previous_objective", loop->previous},
                 {"settled", loop->settled},
                 {"total_cg_iterations", loop->total_cg_iterations}};
  for (size_t i = 0; st == VOX_OK && i < sizeof scalars / sizeof scalars[0]; i++)
    st = vox_checkpoint_add_scalar(ctx, out, scalars[i].name, scalars[i].value);
  if (st == VOX_OK) st = vox_checkpoint_add(ctx, out, "seconds", 4, loop->seconds);
  if (st == VOX_OK) st = vox_checkpoint_add(ctx, out, "design_variables", x->n, NULL);
  if (st == VOX_OK)
    st = be->ops->vec->download(be, x, vox_checkpoint_find(out, "design_variables")->values);
  if (st == VOX_OK) st = homog ? vox_homog_save(homog, out) : vox_objective_save(objective, out);
  if (st == VOX_OK) st = multigrid_save(ctx, opt, fem, out);
  if (st != VOX_OK) vox_checkpoint_free(out);
  return st;
}

vox_status vox_loop_restore(vox_backend *be, const vox_optimizer_options *opt, vox_loop_state *loop,
                            vox_vec *x, vox_fem *fem, vox_objective_state *objective,
                            vox_homog *homog) {
  vox_context *ctx = be->ctx;
  const vox_checkpoint *c = opt->resume;
  vox_status st = VOX_OK;
  const char *names[] = {"iterations_done", "first_row", "penalty_now", "q_now",
                         "previous_objective", "settled", "total_cg_iterations"};
  double value[7];
  for (int i = 0; i < 7; i++) {
    const vox_checkpoint_array *a = need(ctx, c, names[i], 1, &st);
    TRY(st);
    value[i] = a->values[0];
  }
  /* counts that fit an int (a damaged file says anything) */
  const int counts[] = {0, 1, 5, 6};
  for (int i = 0; i < 4; i++)
    if (!(value[counts[i]] >= 0 && value[counts[i]] <= 2e9 && value[counts[i]] == floor(value[counts[i]])))
      return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "the checkpoint's '%s' is %g, not a count",
                       names[counts[i]], value[counts[i]]);
  loop->iterations = (int)value[0];
  loop->first_row = (int)value[1];
  loop->p = value[2];
  loop->q = value[3];
  loop->previous = value[4];
  loop->settled = (int)value[5];
  loop->total_cg_iterations = (int)value[6];
  const vox_checkpoint_array *seconds = need(ctx, c, "seconds", 4, &st);
  const vox_checkpoint_array *design = need(ctx, c, "design_variables", x->n, &st);
  TRY(st);
  memcpy(loop->seconds, seconds->values, sizeof loop->seconds);
  TRY(be->ops->vec->upload(be, x, design->values));
  TRY(homog ? vox_homog_restore(homog, c) : vox_objective_restore(objective, &opt->solver, c));
  return multigrid_restore(ctx, opt, fem);
}
