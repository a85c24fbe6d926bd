/* SPDX-License-Identifier: BSD-3-Clause */
/* The optimizer's starting design on the host (design_start.h). */
#include <math.h>
#include <stdio.h>

#include "design_start.h"
#include "host_memory.h"
#include "symmetry_group.h"
#include "voxfe/initial_design.h"

/* The starting design x on the host: on design elements the initial design,
 * the model's density or the volume fraction; elsewhere the passive values
 * (1 solid, 0 void); averaged over the orbits of the symmetry. `design` and
 * `passive` are the masks (0 or 1 per element). */
static vox_status start_design(vox_context *ctx, const vox_model *model,
                               const vox_optimizer_options *opt, double rho_min,
                               const double *design, const double *passive, double *x) {
  const size_t ne = (size_t)vox_grid_elements(&model->grid);
  const vox_grid *grid = &model->grid;
  double *scratch = NULL;
  uint8_t *mask = NULL;
  vox_status st = VOX_OK;
  if (opt->initial) {
    scratch = vox_host_malloc(ne * sizeof *scratch);
    mask = vox_host_malloc(ne);
    if (!scratch || !mask) {
      vox_host_free(scratch), vox_host_free(mask);
      return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
    }
  }
  if (opt->symmetry != VOX_SYMMETRY_NONE) {
    /* the design domain and the passive solid must have the symmetry:
     * then every orbit lies in one of them, or in neither */
    const int threads = vox_context_threads(ctx);
    st = vox_symmetry_check(ctx, grid, opt->symmetry);
    const int design_ok = st == VOX_OK && vox_symmetry_holds(grid, opt->symmetry, design, threads);
    const int passive_ok =
        st == VOX_OK && vox_symmetry_holds(grid, opt->symmetry, passive, threads);
    if (st == VOX_OK && !(design_ok && passive_ok))
      st = vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "symmetry %s: the model's %s voxels are not symmetric under it",
                     vox_symmetry_name(opt->symmetry), design_ok ? "passive solid" : "design");
  }
  if (st == VOX_OK && opt->initial) {
    vox_initial_design d = *opt->initial;
    d.volume_fraction = opt->volume_fraction;
    d.symmetry = opt->symmetry;
    d.rho_min = fmax(d.rho_min, rho_min);
#pragma omp parallel for schedule(static)
    for (size_t e = 0; e < ne; e++) mask[e] = design[e] != 0;
    st = vox_initial_design_make_masked(ctx, grid, &d, mask, scratch);
    if (st == VOX_OK) {
#pragma omp parallel for schedule(static)
      for (size_t e = 0; e < ne; e++) x[e] = design[e] ? scratch[e] : passive[e];
    }
  } else if (st == VOX_OK) {
#pragma omp parallel for schedule(static)
    for (size_t e = 0; e < ne; e++)
      x[e] = design[e] ? (model->density ? model->density[e] : opt->volume_fraction) : passive[e];
    /* a model's density need not be symmetric: start from its projection */
    if (opt->symmetry != VOX_SYMMETRY_NONE) st = vox_symmetrize(ctx, grid, opt->symmetry, x);
  }
  vox_host_free(scratch), vox_host_free(mask);
  return st;
}

/* The masks from the labels, then the start. */
static vox_status make_start(vox_design_start *job) {
  const vox_model *model = job->model;
  const size_t ne = (size_t)vox_grid_elements(&model->grid);
  vox_material_role role[256];
  for (int l = 0; l < 256; l++) role[l] = VOX_ROLE_VOID;
  for (int i = 0; i < model->n_materials; i++)
    role[model->materials[i].label] = model->materials[i].role;
  size_t n_design = 0;
  double *design = job->design, *passive = job->passive;
#pragma omp parallel for schedule(static) reduction(+ : n_design)
  for (size_t e = 0; e < ne; e++) {
    const int is_design = model->label[e] && role[model->label[e]] == VOX_ROLE_DESIGN;
    design[e] = is_design;
    passive[e] = model->label[e] && role[model->label[e]] == VOX_ROLE_SOLID;
    n_design += (size_t)is_design;
  }
  job->n_design = n_design;
  if (n_design == 0)
    return vox_error(job->ctx, VOX_ERR_INVALID_ARGUMENT, "the model has no design voxels");
  return start_design(job->ctx, model, job->opt, job->rho_min, design, passive, job->x);
}

static void *start_main(void *arg) {
  vox_design_start *job = arg;
  job->status = make_start(job);
  return NULL;
}

vox_status vox_design_start_begin(vox_context *ctx, const vox_model *model,
                                  const vox_optimizer_options *opt, double rho_min,
                                  int background, vox_design_start *job) {
  *job = (vox_design_start){.model = model, .opt = opt, .rho_min = rho_min};
  const size_t ne = (size_t)vox_grid_elements(&model->grid);
  job->design = vox_host_malloc(ne * sizeof *job->design);
  job->passive = vox_host_malloc(ne * sizeof *job->passive);
  job->x = vox_host_malloc(ne * sizeof *job->x);
  if (!job->design || !job->passive || !job->x || vox_context_create(&job->ctx) != VOX_OK) {
    vox_design_start_free(job);
    return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
  }
  vox_context_set_threads(job->ctx, vox_context_threads(ctx));
  job->started = background && pthread_create(&job->thread, NULL, start_main, job) == 0;
  if (!job->started) job->status = make_start(job); /* here, where no thread could start */
  return VOX_OK;
}

vox_status vox_design_start_end(vox_context *ctx, vox_design_start *job) {
  if (job->started) pthread_join(job->thread, NULL);
  job->started = 0;
  if (job->status != VOX_OK)
    return vox_error(ctx, job->status, "%s", vox_context_message(job->ctx));
  return VOX_OK;
}

void vox_design_start_free(vox_design_start *job) {
  if (job->started) pthread_join(job->thread, NULL);
  job->started = 0;
  vox_host_free(job->design), vox_host_free(job->passive), vox_host_free(job->x);
  job->design = job->passive = job->x = NULL;
  if (job->ctx) vox_context_destroy(job->ctx);
  job->ctx = NULL;
}
