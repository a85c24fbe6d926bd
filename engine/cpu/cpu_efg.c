/* SPDX-License-Identifier: BSD-3-Clause */
/* The element-free Galerkin loop's stages on the CPU backend (efg_ops.h):
 * the host functions of efg_sensitivity.h, efg_assembly.h and
 * efg_optimize.h on the backend's vectors, which are host arrays. The EFG
 * loop itself runs the CPU on its host arrays (efg_optimize.c); this table
 * is what its backend path runs on the CPU, and what a test of another
 * backend's table checks itself with on a machine without that device. */
#include <stdlib.h>
#include <string.h>

#include "../efg_assembly.h"
#include "../efg_ops.h"
#include "../efg_optimize.h"
#include "../efg_sensitivity.h"

struct vox_efg_device {
  /* the caller's model, its tables read in place; the copy's SIMP
   * penalty is set per call */
  vox_efg_model efg;
  vox_bsr k;       /* the stiffness on the pattern */
  vox_bsr inverse; /* its diagonal blocks inverted (block_jacobi) */
  const vox_efg_patches *patches; /* the caller's (patches_create) */
  double *patch_inverse, *patch_work;
};

static void efg_destroy(vox_backend *be, vox_efg_device *d) {
  (void)be;
  if (!d) return;
  vox_bsr_free(&d->k);
  vox_bsr_free(&d->inverse);
  free(d->patch_inverse);
  free(d->patch_work);
  free(d);
}

static vox_status efg_create(vox_backend *be, const vox_efg_model *efg, const vox_bsr *pattern,
                             vox_efg_device **out) {
  *out = NULL;
  vox_efg_device *d = calloc(1, sizeof *d);
  const size_t n = pattern->n_rows, nb = vox_bsr_blocks(pattern);
  if (d) {
    d->efg = *efg;
    d->k = *pattern;
    d->k.row_start = malloc((n + 1) * sizeof *d->k.row_start);
    d->k.col = malloc((nb ? nb : 1) * sizeof *d->k.col);
    d->k.val = calloc(9 * nb + 1, sizeof *d->k.val);
  }
  if (!d || !d->k.row_start || !d->k.col || !d->k.val) {
    efg_destroy(be, d);
    return vox_error(be->ctx, VOX_ERR_NO_MEMORY,
                     "element-free Galerkin: out of memory (stiffness matrix)");
  }
  memcpy(d->k.row_start, pattern->row_start, (n + 1) * sizeof *d->k.row_start);
  memcpy(d->k.col, pattern->col, nb * sizeof *d->k.col);
  *out = d;
  return VOX_OK;
}

static size_t efg_bytes(const vox_efg_device *d) {
  return vox_bsr_bytes(&d->k) + (d->inverse.row_start ? vox_bsr_bytes(&d->inverse) : 0) +
         (d->patches ? vox_efg_patches_inverse_bytes(d->patches) +
                           d->patches->n * VOX_EFG_PATCH_DOFS * sizeof(double)
                     : 0);
}

/* The vectors of the stages are double (efg_ops.h). */
static vox_status doubles(vox_backend *be, const vox_vec *v, size_t n, const char *what) {
  if (v->scalar == VOX_DOUBLE && v->n == n) return VOX_OK;
  return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT,
                   "element-free Galerkin: %s must be a double vector of %zu entries", what, n);
}

static vox_status efg_gauss_density(vox_backend *be, vox_efg_device *d, const vox_vec *rho,
                                    vox_vec *rho_gauss) {
  TRY(doubles(be, rho, d->efg.nodes.n, "the nodal densities"));
  TRY(doubles(be, rho_gauss, d->efg.gauss.n_points, "the Gauss points' densities"));
  vox_efg_gauss_density(&d->efg, rho->data, rho_gauss->data);
  return VOX_OK;
}

static vox_status efg_gauss_scale(vox_backend *be, vox_efg_device *d, const vox_vec *rho_gauss,
                                  double p, vox_vec *scale) {
  TRY(doubles(be, rho_gauss, d->efg.gauss.n_points, "the Gauss points' densities"));
  TRY(doubles(be, scale, d->efg.gauss.n_points, "the Gauss points' factors"));
  d->efg.options.simp_penalty = p;
  vox_efg_gauss_scale(&d->efg, rho_gauss->data, scale->data);
  return VOX_OK;
}

static vox_status efg_assemble(vox_backend *be, vox_efg_device *d, const vox_vec *scale) {
  TRY(doubles(be, scale, d->efg.gauss.n_points, "the Gauss points' factors"));
  return vox_efg_stiffness_assemble(be->ctx, &d->efg, scale->data, &d->k);
}

static vox_status efg_block_jacobi(vox_backend *be, vox_efg_device *d) {
  vox_bsr_free(&d->inverse);
  return vox_efg_block_jacobi(be->ctx, &d->k, &d->inverse);
}

static vox_status efg_apply(vox_backend *be, vox_efg_device *d, const vox_vec *x, vox_vec *y) {
  TRY(doubles(be, x, 3 * d->efg.nodes.n, "x of K x"));
  TRY(doubles(be, y, 3 * d->efg.nodes.n, "y of K x"));
  vox_efg_stiffness_apply(&d->k, x->data, y->data);
  return VOX_OK;
}

static vox_status efg_precondition(vox_backend *be, vox_efg_device *d, const vox_vec *r,
                                   vox_vec *z) {
  if (!d->inverse.row_start)
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT,
                     "element-free Galerkin: block Jacobi applied before its setup");
  TRY(doubles(be, r, 3 * d->efg.nodes.n, "the residual"));
  TRY(doubles(be, z, 3 * d->efg.nodes.n, "the preconditioned residual"));
  vox_efg_stiffness_apply(&d->inverse, r->data, z->data);
  return VOX_OK;
}

static vox_status efg_patches_create(vox_backend *be, vox_efg_device *d,
                                     const vox_efg_patches *p) {
  free(d->patch_inverse);
  free(d->patch_work);
  d->patches = p;
  d->patch_inverse = malloc(vox_efg_patches_inverse_bytes(p) + 1);
  d->patch_work = malloc((p->n * VOX_EFG_PATCH_DOFS + 1) * sizeof *d->patch_work);
  if (!d->patch_inverse || !d->patch_work)
    return vox_error(be->ctx, VOX_ERR_NO_MEMORY,
                     "element-free Galerkin: out of memory (patch preconditioner)");
  return VOX_OK;
}

static vox_status efg_patches_factor(vox_backend *be, vox_efg_device *d) {
  if (!d->patches)
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT,
                     "element-free Galerkin: patches factored before their tables");
  return vox_efg_patches_factor(be->ctx, d->patches, d->k.val, d->patch_inverse);
}

static vox_status efg_patches_apply(vox_backend *be, vox_efg_device *d, const vox_vec *r,
                                    vox_vec *z) {
  if (!d->patches)
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT,
                     "element-free Galerkin: patches applied before their tables");
  TRY(doubles(be, r, 3 * d->efg.nodes.n, "the residual"));
  TRY(doubles(be, z, 3 * d->efg.nodes.n, "the preconditioned residual"));
  vox_efg_patches_apply(d->patches, d->patch_inverse, r->data, z->data, d->patch_work);
  return VOX_OK;
}

static vox_status efg_strain_energy(vox_backend *be, vox_efg_device *d, const vox_vec *u,
                                    vox_vec *q) {
  TRY(doubles(be, u, 3 * d->efg.nodes.n, "the displacement parameters"));
  TRY(doubles(be, q, d->efg.gauss.n_points, "the energy densities"));
  vox_efg_strain_energy(&d->efg, u->data, q->data);
  return VOX_OK;
}

static vox_status efg_compliance_sensitivity(vox_backend *be, vox_efg_device *d,
                                             const vox_vec *rho_gauss, const vox_vec *q,
                                             double p, vox_vec *dc) {
  TRY(doubles(be, rho_gauss, d->efg.gauss.n_points, "the Gauss points' densities"));
  TRY(doubles(be, q, d->efg.gauss.n_points, "the energy densities"));
  TRY(doubles(be, dc, d->efg.nodes.n, "the sensitivities"));
  d->efg.options.simp_penalty = p;
  vox_efg_compliance_sensitivity(&d->efg, rho_gauss->data, q->data, dc->data);
  return VOX_OK;
}

static vox_status efg_matrix_download(vox_backend *be, const vox_efg_device *d, double *val) {
  (void)be;
  memcpy(val, d->k.val, 9 * vox_bsr_blocks(&d->k) * sizeof *val);
  return VOX_OK;
}

const vox_efg_ops vox_cpu_efg_ops = {
    .create = efg_create,
    .destroy = efg_destroy,
    .bytes = efg_bytes,
    .gauss_density = efg_gauss_density,
    .gauss_scale = efg_gauss_scale,
    .assemble = efg_assemble,
    .block_jacobi = efg_block_jacobi,
    .apply = efg_apply,
    .precondition = efg_precondition,
    .patches_create = efg_patches_create,
    .patches_factor = efg_patches_factor,
    .patches_apply = efg_patches_apply,
    .strain_energy = efg_strain_energy,
    .compliance_sensitivity = efg_compliance_sensitivity,
    .matrix_download = efg_matrix_download,
};
