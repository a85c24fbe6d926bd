/* SPDX-License-Identifier: BSD-3-Clause */
/* What FP16 storage of a periodic cell's six displacement fields would do to
 * its moduli and sensitivities (the cell's mixed precision), measured on a
 * design rather than assumed: the fields are solved in double, then each
 * value is rounded to IEEE half precision (as a store and reload would) and
 * C^H is computed from the rounded fields in the energy form
 *   C_ij = (1/|Y|) sum_e m_e (chi_i - u_i,e)' Ke (chi_j - u_j,e)
 * (op->strain_energy), against the same form with the double fields. The
 * sensitivities of the bulk modulus (the weights of eq. 19) are compared
 * element by element. The optimizer keeps a cell's fields so in mixed
 * precision (homogenize.h, vox_homog_half_fields): this is the accuracy
 * side of that decision. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_ops.h"
#include "cell_fp16.h"
#include "homogenize.h"

/* C^H in the energy form from the fields in h->u, and the bulk modulus's
 * per-element sensitivity energies into `bulk`. */
static vox_status energy_form(vox_homog *h, vox_vec *out, const vox_vec *moduli, double c[36],
                              vox_vec *bulk) {
  vox_backend *be = h->fem->be;
  for (int i = 0; i < VOX_STRAINS; i++)
    for (int j = 0; j <= i; j++) {
      double w[36] = {0};
      w[i * VOX_STRAINS + j] = 1;
      TRY(be->ops->op->strain_energy(be, h->fem->op, VOX_STRAINS, h->u, h->chi, w, out));
      double s;
      TRY(be->ops->vec->dot(be, out, moduli, &s));
      c[i * VOX_STRAINS + j] = c[j * VOX_STRAINS + i] = s / h->volume;
    }
  double w[36] = {0};
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) w[i * VOX_STRAINS + j] = 1.0 / 9;
  return be->ops->op->strain_energy(be, h->fem->op, VOX_STRAINS, h->u, h->chi, w, bulk);
}

static double bulk_of(const double c[36]) {
  return (c[0] + c[7] + c[14] + 2 * (c[1] + c[2] + c[8])) / 9;
}

static double shear_of(const double c[36]) { return (c[21] + c[28] + c[35]) / 3; }

int cell_fp16_check(vox_context *ctx, vox_backend *be, const vox_model *model, double penalty,
                    double emin) {
  vox_homog *h = NULL;
  vox_vec rho = {0}, ones = {0}, out = {0}, bulk64 = {0}, bulk16 = {0};
  const vox_backend_ops *o = be->ops;
  double *host = NULL, *e64 = NULL, *e16 = NULL;
  vox_status s = vox_homog_create(ctx, be, model, &h);
  const size_t ne = s == VOX_OK ? h->fem->n_elements : 0, nd = s == VOX_OK ? h->fem->n_dofs : 0;
  if (s == VOX_OK) s = o->vec->create(be, ne, VOX_DOUBLE, &rho);
  if (s == VOX_OK) s = o->vec->create(be, ne, VOX_DOUBLE, &ones);
  if (s == VOX_OK) s = o->vec->create(be, ne, VOX_DOUBLE, &out);
  if (s == VOX_OK) s = o->vec->create(be, ne, VOX_DOUBLE, &bulk64);
  if (s == VOX_OK) s = o->vec->create(be, ne, VOX_DOUBLE, &bulk16);
  if (s == VOX_OK) s = o->vec->set(be, &ones, 1);
  if (s == VOX_OK) s = o->vec->upload(be, &rho, model->density);
  if (s == VOX_OK)
    s = o->design->simp_moduli(be, &rho, &h->fem->e_solid, penalty, emin, &h->fem->moduli);
  if (s == VOX_OK) s = vox_fem_update(h->fem);
  vox_solver_options opt;
  vox_solver_options_default(&opt);
  opt.rtol = 1e-10; /* the fields as exact as double gets: the rounding is what is measured */
  double c_solve[36], c64[36], c16[36];
  int cg = 0;
  vox_solve_result failed;
  if (s == VOX_OK) s = vox_homog_solve(h, &opt, &ones, c_solve, &cg, &failed);
  if (s == VOX_OK) s = energy_form(h, &out, &h->fem->moduli, c64, &bulk64);
  host = malloc((nd ? nd : 1) * sizeof *host);
  e64 = malloc((ne ? ne : 1) * sizeof *e64);
  e16 = malloc((ne ? ne : 1) * sizeof *e16);
  if (!host || !e64 || !e16) s = VOX_ERR_NO_MEMORY;
  double umax = 0;
  size_t subnormal = 0;
  for (int f = 0; f < VOX_STRAINS && s == VOX_OK; f++) {
    s = o->vec->download(be, &h->u[f], host);
    for (size_t d = 0; d < nd && s == VOX_OK; d++) {
      umax = fmax(umax, fabs(host[d]));
      if (host[d] != 0 && fabs(host[d]) < 6.103515625e-05) subnormal++;
      host[d] = (double)(_Float16)host[d];
    }
    if (s == VOX_OK) s = o->vec->upload(be, &h->u[f], host);
  }
  if (s == VOX_OK) s = energy_form(h, &out, &h->fem->moduli, c16, &bulk16);
  if (s == VOX_OK) s = o->vec->download(be, &bulk64, e64);
  if (s == VOX_OK) s = o->vec->download(be, &bulk16, e16);
  if (s == VOX_OK) {
    double dc = 0, cmax = 0, de = 0, emax = 0, ds = 0;
    for (int i = 0; i < 36; i++) {
      dc = fmax(dc, fabs(c16[i] - c64[i]));
      ds = fmax(ds, fabs(c64[i] - c_solve[i]));
      cmax = fmax(cmax, fabs(c64[i]));
    }
    for (size_t e = 0; e < ne; e++) {
      de = fmax(de, fabs(e16[e] - e64[e]));
      emax = fmax(emax, fabs(e64[e]));
    }
    printf("FP16 fields: |u| <= %.3g, %zu of %zu values below FP16's normal range; C^H (energy "
           "form) FP16 vs double: max |dC| / max |C| = %.2e (energy vs solve form in double "
           "%.2e); bulk modulus %.6f vs %.6f (%.2e relative), shear %.6f vs %.6f (%.2e); bulk "
           "sensitivity energies: max |d| / max = %.2e\n",
           umax, subnormal, 6 * nd, dc / cmax, ds / cmax, bulk_of(c16), bulk_of(c64),
           fabs(bulk_of(c16) - bulk_of(c64)) / fabs(bulk_of(c64)), shear_of(c16), shear_of(c64),
           fabs(shear_of(c16) - shear_of(c64)) / fabs(shear_of(c64)), de / emax);
  } else {
    fprintf(stderr, "FP16 check: %s\n", vox_context_message(ctx));
  }
  vox_vec *v[] = {&rho, &ones, &out, &bulk64, &bulk16};
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
    if (v[i]->data) o->vec->destroy(be, v[i]);
  vox_homog_destroy(h);
  free(host), free(e64), free(e16);
  return s == VOX_OK ? 0 : 1;
}
