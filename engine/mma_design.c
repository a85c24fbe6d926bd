/* SPDX-License-Identifier: BSD-3-Clause */
/* MMA as the optimizer's design update (mma_design.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mma_design.h"

struct vox_mma_design {
  vox_context *ctx;
  vox_mma *mma;
  size_t ne, n;     /* elements; design variables (the design elements) */
  int m;            /* constraints */
  size_t *index;    /* n: the element of each variable */
  double *host;     /* ne: a vector's download */
  double *x, *x_new, *df0, *xmin, *xmax; /* n each */
  double *dg;       /* m * n, constraint-major */
  double objective_scale; /* the options' */
  double scale;     /* of the objective: 0 until the first update sets it */
  double kkt;
};

void vox_mma_design_destroy(vox_mma_design *d) {
  if (!d) return;
  vox_mma_destroy(d->mma);
  free(d->index), free(d->host), free(d->x), free(d->x_new), free(d->df0), free(d->dg);
  free(d->xmin), free(d->xmax);
  free(d);
}

vox_status vox_mma_design_create(vox_backend *be, const vox_vec *design, double rho_min,
                                 const vox_optimizer_options *opt, int m, vox_mma_design **out) {
  vox_context *ctx = be->ctx;
  *out = NULL;
  vox_mma_design *d = calloc(1, sizeof *d);
  if (!d || !(d->host = malloc(design->n * sizeof *d->host))) {
    free(d);
    return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
  }
  d->ctx = ctx;
  d->ne = design->n;
  d->m = m;
  d->kkt = -1;
  d->objective_scale = opt->mma.objective_scale;
  vox_status st = be->ops->vec->download(be, design, d->host);
  for (size_t e = 0; st == VOX_OK && e < d->ne; e++) d->n += d->host[e] != 0;
  const size_t n = d->n ? d->n : 1;
  double **arrays[] = {&d->x, &d->x_new, &d->df0, &d->xmin, &d->xmax};
  if (st == VOX_OK && (m < 1 || !(d->index = malloc(n * sizeof *d->index)) ||
                       !(d->dg = malloc((size_t)m * n * sizeof *d->dg))))
    st = vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
  for (size_t i = 0; st == VOX_OK && i < sizeof arrays / sizeof arrays[0]; i++)
    if (!(*arrays[i] = malloc(n * sizeof(double))))
      st = vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
  if (st == VOX_OK) {
    size_t j = 0;
    for (size_t e = 0; e < d->ne; e++)
      if (d->host[e] != 0) d->index[j++] = e;
    for (j = 0; j < d->n; j++) d->xmin[j] = rho_min, d->xmax[j] = 1;
    /* the options' move limit is the method's: a density moves by at most
     * that much (of its range 1 - rho_min) in one iteration */
    vox_mma_options mma = opt->mma;
    mma.move = opt->move_limit;
    st = vox_mma_create(ctx, d->n, m, &mma, &d->mma);
    if (st == VOX_OK) vox_mma_set_threads(d->mma, be->threads);
  }
  if (st != VOX_OK) {
    vox_mma_design_destroy(d);
    return st;
  }
  *out = d;
  return VOX_OK;
}

/* The design elements' values of v, times `scale`, into out. */
static vox_status gather(vox_backend *be, vox_mma_design *d, const vox_vec *v, double scale,
                         double *out) {
  TRY(be->ops->vec->download(be, v, d->host));
  for (size_t j = 0; j < d->n; j++) out[j] = scale * d->host[d->index[j]];
  return VOX_OK;
}

vox_status vox_mma_design_update(vox_backend *be, vox_mma_design *d, const vox_vec *x,
                                 const vox_vec *dc, double objective, const double *g,
                                 const vox_vec *const *dg, const double *dg_scale,
                                 vox_vec *x_new) {
  if (d->scale == 0)
    d->scale = d->objective_scale / (objective != 0 && isfinite(objective) ? fabs(objective) : 1);
  for (int i = 0; i < d->m; i++) TRY(gather(be, d, dg[i], dg_scale[i], d->dg + (size_t)i * d->n));
  TRY(gather(be, d, dc, d->scale, d->df0));
  TRY(gather(be, d, x, 1, d->x));
  /* a design given from outside may lie under the least density */
  for (size_t j = 0; j < d->n; j++) d->x[j] = fmin(fmax(d->x[j], d->xmin[j]), d->xmax[j]);
  if (vox_mma_iterations(d->mma) > 0) {
    double norm;
    TRY(vox_mma_kkt(d->mma, d->x, d->xmin, d->xmax, d->df0, g, d->dg, &norm, &d->kkt));
  }
  TRY(vox_mma_update(d->mma, d->x, d->xmin, d->xmax, d->df0, g, d->dg, d->x_new));
  /* d->host holds x: the non-design elements keep their values */
  for (size_t j = 0; j < d->n; j++) d->host[d->index[j]] = d->x_new[j];
  return be->ops->vec->upload(be, x_new, d->host);
}

double vox_mma_design_kkt(const vox_mma_design *d) { return d->kkt; }

vox_status vox_mma_design_save(const vox_mma_design *d, vox_checkpoint *out) {
  TRY(vox_mma_save(d->mma, "mma", out));
  const double scalars[] = {d->scale, d->kkt};
  TRY(vox_checkpoint_add(d->ctx, out, "mma_design", 2, scalars));
  return vox_checkpoint_add_scalar(d->ctx, out, "option_update", VOX_UPDATE_MMA);
}

vox_status vox_mma_design_restore(vox_mma_design *d, const vox_checkpoint *state) {
  TRY(vox_mma_restore(d->mma, "mma", state));
  const vox_checkpoint_array *a = vox_checkpoint_find(state, "mma_design");
  if (!a || a->length != 2)
    return vox_error(d->ctx, VOX_ERR_INVALID_ARGUMENT, "the checkpoint has no 'mma_design'");
  d->scale = a->values[0];
  d->kkt = a->values[1];
  return VOX_OK;
}

vox_status vox_mma_design_check_resume(vox_context *ctx, const vox_checkpoint *state,
                                       vox_design_update update) {
  const vox_checkpoint_array *a = vox_checkpoint_find(state, "option_update");
  const double had = a && a->length == 1 ? a->values[0] : VOX_UPDATE_OC;
  if (had == (double)update) return VOX_OK;
  return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                   "the checkpoint's run had optimizer %s, this one has %s: a resumed run needs "
                   "the options of the run that made the checkpoint",
                   had == VOX_UPDATE_MMA ? "mma" : had == VOX_UPDATE_OC ? "oc" : "unknown",
                   vox_design_update_name(update));
}
