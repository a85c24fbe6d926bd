/* SPDX-License-Identifier: BSD-3-Clause */
/* MMA as the optimizer's design update (mma_design.h). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mma_backend.h"
#include "mma_design.h"

struct vox_mma_design {
  vox_context *ctx;
  vox_backend *be;
  vox_mma *mma;
  vox_index_map *map; /* the design elements: the variables */
  size_t n;           /* design variables */
  int m;              /* constraints */
  double objective_scale; /* the options' */
  double scale;       /* of the objective: 0 until the first update sets it */
  double kkt;
};

void vox_mma_design_destroy(vox_mma_design *d) {
  if (!d) return;
  vox_mma_destroy(d->mma);
  if (d->map) d->be->ops->mma->map_destroy(d->be, d->map);
  free(d);
}

void vox_mma_design_layout(size_t ne, int m, vox_layout *l) {
  vox_mma_layout(ne, m, NULL, l);
  vox_layout_object(l, "MMA: the design elements' indices", (double)ne * sizeof(int64_t));
}

vox_status vox_mma_design_create(vox_backend *be, const vox_vec *design, double rho_min,
                                 const vox_optimizer_options *opt, int m, vox_mma_design **out) {
  vox_context *ctx = be->ctx;
  *out = NULL;
  if (!be->ops->mma)
    return vox_error(ctx, VOX_ERR_UNSUPPORTED,
                     "the method of moving asymptotes (optimizer mma) does not run on the %s "
                     "backend",
                     be->ops->name);
  vox_mma_design *d = calloc(1, sizeof *d);
  if (!d) return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
  d->ctx = ctx;
  d->be = be;
  d->m = m;
  d->kkt = -1;
  d->objective_scale = opt->mma.objective_scale;
  /* the options' move limit is the method's: a density moves by at most
   * that much (of its range 1 - rho_min) in one iteration */
  vox_mma_options mma = opt->mma;
  mma.move = opt->move_limit;
  vox_status st = be->ops->mma->map_create(be, design, &d->map, &d->n);
  if (st == VOX_OK) st = vox_mma_create_on(be, d->n, m, &mma, &d->mma);
  if (st == VOX_OK) {
    vox_mma_vectors *v = vox_mma_vectors_of(d->mma);
    st = be->ops->vec->set(be, &v->xmin, rho_min);
    if (st == VOX_OK) st = be->ops->vec->set(be, &v->xmax, 1);
  }
  if (st != VOX_OK) {
    vox_mma_design_destroy(d);
    return st;
  }
  *out = d;
  return VOX_OK;
}

vox_status vox_mma_design_update(vox_backend *be, vox_mma_design *d, const vox_vec *x,
                                 const vox_vec *dc, double objective, const double *g,
                                 const vox_vec *const *dg, const double *dg_scale,
                                 vox_vec *x_new) {
  const vox_mma_ops *ops = be->ops->mma;
  vox_mma_vectors *v = vox_mma_vectors_of(d->mma);
  if (d->scale == 0)
    d->scale = d->objective_scale / (objective != 0 && isfinite(objective) ? fabs(objective) : 1);
  /* the design elements' values: the constraints' gradients (row i of
   * dfdx), the objective's, and x, which a design given from outside may
   * have under the least density */
  for (int i = 0; i < d->m; i++) {
    vox_vec row = v->dfdx;
    row.data += (size_t)i * v->n, row.n = v->n;
    TRY(ops->gather(be, d->map, dg[i], dg_scale[i], NULL, NULL, &row));
  }
  TRY(ops->gather(be, d->map, dc, d->scale, NULL, NULL, &v->df0dx));
  TRY(ops->gather(be, d->map, x, 1, &v->xmin, &v->xmax, &v->xval));
  if (vox_mma_iterations(d->mma) > 0) {
    double norm;
    TRY(vox_mma_kkt_at(d->mma, g, &norm, &d->kkt));
  }
  TRY(vox_mma_step(d->mma, g));
  /* the non-design elements keep their values */
  TRY(be->ops->vec->copy(be, x_new, x));
  return ops->scatter(be, d->map, &v->x, x_new);
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
