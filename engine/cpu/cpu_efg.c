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
#include "../efg_oc.h"
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
  double *patch_diagonal; /* the cells' patches' diagonals when inverted */
  /* the multigrid's levels (mg_create): the caller's tables, each coarse
   * level's values and inverted diagonal blocks, B's values per transfer,
   * the last level's dense Cholesky factor (dense_n unknowns) */
  const vox_efg_levels *levels;
  double *level_val[VOX_EFG_MAX_LEVELS], *level_inverse[VOX_EFG_MAX_LEVELS];
  double *b_val[VOX_EFG_MAX_LEVELS];
  double *dense;
  int dense_n, dense_made; /* dense_made: a factor was made (mg_setup may keep it) */
  double *dense_diagonal;  /* the last level's diagonal when it was factored */
  double *level_tmp; /* M_l r of a smoothing step: 3 doubles a node of level 0 */
  double *dv, *oc_work; /* the OC update's volume sensitivities and work (3 a node) */
  uint8_t *design;      /* 1 on a design node */
  double *support_work; /* one double a penalty point */
};

extern void dpotrf_(const char *uplo, const int *n, double *a, const int *lda, int *info);
extern void dpotrs_(const char *uplo, const int *n, const int *nrhs, const double *a,
                    const int *lda, double *b, const int *ldb, int *info);

static void efg_destroy(vox_backend *be, vox_efg_device *d) {
  (void)be;
  if (!d) return;
  vox_bsr_free(&d->k);
  vox_bsr_free(&d->inverse);
  free(d->patch_inverse);
  free(d->patch_work);
  free(d->patch_diagonal);
  for (int l = 0; l < VOX_EFG_MAX_LEVELS; l++)
    free(d->level_val[l]), free(d->level_inverse[l]), free(d->b_val[l]);
  free(d->dense);
  free(d->dense_diagonal);
  free(d->level_tmp);
  free(d->dv);
  free(d->oc_work);
  free(d->design);
  free(d->support_work);
  free(d);
}

static vox_status efg_create(vox_backend *be, const vox_efg_model *efg, const vox_bsr *pattern,
                             vox_precision precision, vox_efg_device **out) {
  (void)precision; /* the host keeps double throughout */
  *out = NULL;
  vox_efg_device *d = calloc(1, sizeof *d);
  const size_t n = pattern->n_rows, nb = vox_bsr_blocks(pattern);
  if (d) {
    d->efg = *efg;
    d->k = *pattern;
    d->k.row_start = malloc((n + 1) * sizeof *d->k.row_start);
    d->k.col = malloc((nb ? nb : 1) * sizeof *d->k.col);
    d->k.val = calloc(9 * nb + 1, sizeof *d->k.val);
    d->dv = malloc((efg->nodes.n + 1) * sizeof *d->dv);
    d->oc_work = malloc((3 * efg->nodes.n + 1) * sizeof *d->oc_work);
    d->design = malloc(efg->nodes.n + 1);
    d->support_work = malloc((efg->support.n_points + 1) * sizeof *d->support_work);
  }
  if (!d || !d->k.row_start || !d->k.col || !d->k.val || !d->dv || !d->oc_work || !d->design ||
      !d->support_work) {
    efg_destroy(be, d);
    return vox_error(be->ctx, VOX_ERR_NO_MEMORY,
                     "element-free Galerkin: out of memory (stiffness matrix)");
  }
  memcpy(d->k.row_start, pattern->row_start, (n + 1) * sizeof *d->k.row_start);
  memcpy(d->k.col, pattern->col, nb * sizeof *d->k.col);
  vox_efg_volume_sensitivity(efg, d->dv);
  for (size_t i = 0; i < efg->nodes.n; i++) d->design[i] = efg->node_role[i] == VOX_ROLE_DESIGN;
  *out = d;
  return VOX_OK;
}

static size_t efg_bytes(const vox_efg_device *d) {
  return vox_bsr_bytes(&d->k) + (d->inverse.row_start ? vox_bsr_bytes(&d->inverse) : 0) +
         d->efg.nodes.n * (4 * sizeof(double) + 1) +
         (d->patches ? vox_efg_patches_inverse_bytes(d->patches) +
                           vox_efg_patches_work_doubles(d->patches) * sizeof(double)
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
  d->patch_work = malloc((vox_efg_patches_work_doubles(p) + 1) * sizeof *d->patch_work);
  d->patch_diagonal = calloc(VOX_EFG_PATCH_DOFS * p->n + 1, sizeof *d->patch_diagonal);
  if (!d->patch_inverse || !d->patch_work || !d->patch_diagonal)
    return vox_error(be->ctx, VOX_ERR_NO_MEMORY,
                     "element-free Galerkin: out of memory (patch preconditioner)");
  return VOX_OK;
}

static vox_status efg_patches_factor(vox_backend *be, vox_efg_device *d, double drift) {
  if (!d->patches)
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT,
                     "element-free Galerkin: patches factored before their tables");
  return vox_efg_patches_factor_kept(be->ctx, d->patches, d->k.val, drift, d->patch_diagonal,
                                     d->patch_inverse);
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

/* Level l's matrix: its pattern with its values. */
static vox_bsr level_matrix(const vox_efg_device *d, int l) {
  vox_bsr a = *vox_efg_level_pattern(d->levels, &d->k, l);
  a.val = l == 0 ? d->k.val : d->level_val[l];
  return a;
}

static vox_status efg_mg_create(vox_backend *be, vox_efg_device *d, const vox_efg_levels *lv) {
  if (d->levels)
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT,
                     "element-free Galerkin: the multigrid's levels are already made");
  d->levels = lv;
  const int last = lv->n_levels - 1;
  const size_t n_dense = 3 * lv->n_nodes[last]; /* within VOX_EFG_MAX_DENSE_DOFS */
  int ok = 1;
  for (int l = 0; l < lv->n_levels; l++) {
    const vox_bsr *p = vox_efg_level_pattern(lv, &d->k, l);
    if (l > 0) {
      d->level_val[l] = malloc((9 * vox_bsr_blocks(p) + 1) * sizeof(double));
      d->level_inverse[l] = malloc((9 * lv->n_nodes[l] + 1) * sizeof(double));
      ok = ok && d->level_val[l] && d->level_inverse[l];
    }
    if (l < last) {
      d->b_val[l] = malloc((9 * vox_bsr_blocks(&lv->transfer[l].b) + 1) * sizeof(double));
      ok = ok && d->b_val[l];
    }
  }
  d->dense_n = (int)n_dense;
  d->dense = malloc((n_dense * n_dense + 1) * sizeof *d->dense);
  d->dense_diagonal = malloc((n_dense + 1) * sizeof *d->dense_diagonal);
  d->level_tmp = malloc((3 * lv->n_nodes[0] + 1) * sizeof *d->level_tmp);
  if (!ok || !d->dense || !d->dense_diagonal || !d->level_tmp)
    return vox_error(be->ctx, VOX_ERR_NO_MEMORY,
                     "element-free Galerkin: out of memory (multigrid levels)");
  return VOX_OK;
}

/* How far the last level's diagonal has moved since it was factored
 * (vox_efg_diagonal_drift over its nodes). */
static double last_level_drift(const vox_efg_device *d) {
  const vox_bsr a = level_matrix(d, d->levels->n_levels - 1);
  double drift = 0;
  for (size_t i = 0; i < a.n_rows; i++) {
    const ptrdiff_t at = vox_bsr_find_block(&a, (int32_t)i, (int32_t)i);
    drift =
        fmax(drift, vox_efg_diagonal_drift(a.val + 9 * (size_t)at, d->dense_diagonal + 3 * i));
  }
  return drift;
}

static vox_status efg_mg_setup(vox_backend *be, vox_efg_device *d, int factor, double drift,
                               int *made) {
  const vox_efg_levels *lv = d->levels;
  *made = 0;
  if (!lv)
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT,
                     "element-free Galerkin: the multigrid set up before its levels");
  const int last = lv->n_levels - 1;
  for (int l = 0; l < last; l++) {
    const vox_bsr a = level_matrix(d, l);
    vox_efg_galerkin(&lv->transfer[l], &a, a.val, d->b_val[l], d->level_val[l + 1]);
  }
  for (int l = 1; l < lv->n_levels; l++) {
    const vox_bsr a = level_matrix(d, l);
    ptrdiff_t failed = -1;
#pragma omp parallel for schedule(static) reduction(max : failed)
    for (ptrdiff_t i = 0; i < (ptrdiff_t)lv->n_nodes[l]; i++) {
      const ptrdiff_t at = vox_bsr_find_block(&a, (int32_t)i, (int32_t)i);
      if (at < 0 || !vox_efg_spd3_inverse(a.val + 9 * (size_t)at, d->level_inverse[l] + 9 * i))
        failed = i;
    }
    if (failed >= 0)
      return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT,
                       "element-free Galerkin: the multigrid's level %d block of node %td is not "
                       "positive definite",
                       l, failed);
  }
  if (d->dense_made && (!factor || (drift > 0 && last_level_drift(d) <= drift)))
    return VOX_OK; /* the factor of an earlier setup */
  d->dense_made = 1;
  *made = 1;
  /* the last level densely, lower triangle in column-major order (the
   * blocks are symmetric) */
  const vox_bsr a = level_matrix(d, last);
  const int n = d->dense_n;
  memset(d->dense, 0, (size_t)n * (size_t)n * sizeof *d->dense);
  for (size_t i = 0; i < a.n_rows; i++)
    for (size_t k = a.row_start[i]; k < a.row_start[i + 1]; k++) {
      for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++)
          d->dense[(size_t)(3 * a.col[k] + c) * (size_t)n + 3 * i + (size_t)r] =
              a.val[9 * k + 3 * (size_t)r + (size_t)c];
      if ((size_t)a.col[k] == i) /* what later setups' drift is measured from */
        for (int c = 0; c < 3; c++)
          d->dense_diagonal[3 * i + (size_t)c] = a.val[9 * k + 4 * (size_t)c];
    }
  int info = 0;
  dpotrf_("L", &n, d->dense, &n, &info);
  if (info != 0)
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT,
                     "element-free Galerkin: the multigrid's last level is not positive "
                     "definite (LAPACK dpotrf: %d)",
                     info);
  return VOX_OK;
}

static vox_status mg_level_vectors(vox_backend *be, const vox_efg_device *d, int l,
                                   const vox_vec *x, const vox_vec *y) {
  if (!d->levels || l < 0 || l >= d->levels->n_levels)
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT,
                     "element-free Galerkin: no multigrid level %d", l);
  const size_t n = 3 * d->levels->n_nodes[l];
  TRY(doubles(be, x, n, "a multigrid level's vector"));
  return doubles(be, y, n, "a multigrid level's vector");
}

static vox_status efg_mg_apply(vox_backend *be, vox_efg_device *d, int l, const vox_vec *x,
                               vox_vec *y) {
  TRY(mg_level_vectors(be, d, l, x, y));
  const vox_bsr a = level_matrix(d, l);
  vox_efg_stiffness_apply(&a, x->data, y->data);
  return VOX_OK;
}

static vox_status efg_mg_jacobi(vox_backend *be, vox_efg_device *d, int l, const vox_vec *r,
                                vox_vec *z) {
  TRY(mg_level_vectors(be, d, l, r, z));
  if (l == 0)
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT,
                     "element-free Galerkin: level 0 is smoothed by its patches");
  const double *inv = d->level_inverse[l], *rr = r->data;
  double *zz = z->data;
#pragma omp parallel for schedule(static)
  for (ptrdiff_t i = 0; i < (ptrdiff_t)d->levels->n_nodes[l]; i++) {
    const double *m = inv + 9 * i, *ri = rr + 3 * i;
    for (int c = 0; c < 3; c++) zz[3 * i + c] = m[3 * c] * ri[0] + m[3 * c + 1] * ri[1] + m[3 * c + 2] * ri[2];
  }
  return VOX_OK;
}

static vox_status efg_mg_restrict(vox_backend *be, vox_efg_device *d, int l, const vox_vec *r,
                                  vox_vec *rc) {
  TRY(mg_level_vectors(be, d, l, r, r));
  TRY(mg_level_vectors(be, d, l + 1, rc, rc));
  vox_efg_restrict(&d->levels->transfer[l], r->data, rc->data);
  return VOX_OK;
}

static vox_status efg_mg_prolong_add(vox_backend *be, vox_efg_device *d, int l,
                                     const vox_vec *xc, vox_vec *x) {
  TRY(mg_level_vectors(be, d, l, x, x));
  TRY(mg_level_vectors(be, d, l + 1, xc, xc));
  vox_efg_prolong_add(&d->levels->transfer[l], xc->data, x->data);
  return VOX_OK;
}

static vox_status efg_mg_residual(vox_backend *be, vox_efg_device *d, int l, const vox_vec *b,
                                  const vox_vec *x, vox_vec *r) {
  TRY(mg_level_vectors(be, d, l, b, x));
  TRY(mg_level_vectors(be, d, l, r, r));
  const vox_bsr a = level_matrix(d, l);
  vox_efg_stiffness_apply(&a, x->data, r->data);
  const double *bb = b->data;
  double *rr = r->data;
  const ptrdiff_t n = (ptrdiff_t)(3 * d->levels->n_nodes[l]);
#pragma omp parallel for schedule(static)
  for (ptrdiff_t i = 0; i < n; i++) rr[i] = bb[i] - rr[i];
  return VOX_OK;
}

static vox_status efg_mg_smooth_step(vox_backend *be, vox_efg_device *d, int l, const vox_vec *r,
                                     double alpha, double beta, int first, vox_vec *dir,
                                     vox_vec *x) {
  TRY(mg_level_vectors(be, d, l, r, dir));
  TRY(mg_level_vectors(be, d, l, x, x));
  vox_vec z = *dir;
  z.data = d->level_tmp;
  if (l == 0) {
    if (!d->patches)
      return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT,
                       "element-free Galerkin: the multigrid's patches are not made");
    vox_efg_patches_apply(d->patches, d->patch_inverse, r->data, z.data, d->patch_work);
  } else {
    TRY(efg_mg_jacobi(be, d, l, r, &z));
  }
  const double *zz = z.data;
  double *dd = dir->data, *xx = x->data;
  const ptrdiff_t n = (ptrdiff_t)(3 * d->levels->n_nodes[l]);
#pragma omp parallel for schedule(static)
  for (ptrdiff_t i = 0; i < n; i++) {
    dd[i] = alpha * zz[i] + (beta != 0 ? beta * dd[i] : 0);
    xx[i] = first ? dd[i] : xx[i] + dd[i];
  }
  return VOX_OK;
}

static vox_status efg_mg_coarse_solve(vox_backend *be, vox_efg_device *d, const vox_vec *b,
                                      vox_vec *x) {
  TRY(mg_level_vectors(be, d, d->levels->n_levels - 1, b, x));
  memcpy(x->data, b->data, (size_t)d->dense_n * sizeof(double));
  const int n = d->dense_n, one = 1;
  int info = 0;
  dpotrs_("L", &n, &one, d->dense, &n, x->data, &n, &info);
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

static vox_status efg_support_springs(vox_backend *be, vox_efg_device *d, const vox_vec *rho,
                                      double p) {
  TRY(doubles(be, rho, d->efg.nodes.n, "the nodal densities"));
  d->efg.options.simp_penalty = p;
  vox_efg_support_springs(&d->efg, rho->data); /* the caller's model's springs: K reads them */
  return VOX_OK;
}

static vox_status efg_support_sensitivity(vox_backend *be, vox_efg_device *d, const vox_vec *rho,
                                          const vox_vec *u, double p, vox_vec *dc) {
  const size_t n = d->efg.nodes.n;
  TRY(doubles(be, rho, n, "the nodal densities"));
  TRY(doubles(be, u, 3 * n, "the displacement parameters"));
  TRY(doubles(be, dc, n, "the sensitivities"));
  d->efg.options.simp_penalty = p;
  vox_efg_support_sensitivity(&d->efg, rho->data, u->data, d->support_work, dc->data);
  return VOX_OK;
}

static vox_status efg_oc_update(vox_backend *be, vox_efg_device *d, const vox_efg_oc_options *o,
                                const vox_vec *rho, const vox_vec *dc, vox_vec *rho_new,
                                vox_efg_oc_result *res) {
  const size_t n = d->efg.nodes.n;
  TRY(doubles(be, rho, n, "the nodal densities"));
  TRY(doubles(be, dc, n, "the sensitivities"));
  TRY(doubles(be, rho_new, n, "the updated nodal densities"));
  vox_efg_oc_update(o, n, rho->data, dc->data, d->dv, d->design, d->oc_work, rho_new->data, res);
  return VOX_OK;
}

static vox_status efg_non_discreteness(vox_backend *be, vox_efg_device *d,
                                       const vox_vec *rho_gauss, double *sum) {
  TRY(doubles(be, rho_gauss, d->efg.gauss.n_points, "the Gauss points' densities"));
  *sum = vox_efg_non_discreteness_sum(d->efg.n_cells, d->efg.cell_role, rho_gauss->data);
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
    .mg_create = efg_mg_create,
    .mg_setup = efg_mg_setup,
    .mg_apply = efg_mg_apply,
    .mg_jacobi = efg_mg_jacobi,
    .mg_restrict = efg_mg_restrict,
    .mg_prolong_add = efg_mg_prolong_add,
    .mg_coarse_solve = efg_mg_coarse_solve,
    .mg_residual = efg_mg_residual,
    .mg_smooth_step = efg_mg_smooth_step,
    .strain_energy = efg_strain_energy,
    .compliance_sensitivity = efg_compliance_sensitivity,
    .support_springs = efg_support_springs,
    .support_sensitivity = efg_support_sensitivity,
    .oc_update = efg_oc_update,
    .non_discreteness = efg_non_discreteness,
    .matrix_download = efg_matrix_download,
};
