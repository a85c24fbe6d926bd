/* SPDX-License-Identifier: BSD-3-Clause */
/* The CPU backend: vectors in host memory, vector operations with OpenMP, and
 * the operation table that ties in the operator, SIMP and filter kernels. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../cell_ops.h"
#include "../efg_ops.h"
#include "../mma_ops.h"
#include "cpu.h"
#include "ordered_sum.h"

int vox_cpu_threads(const vox_backend *be) {
  return be->threads > 0 ? be->threads : omp_get_max_threads();
}

static vox_status vec_create(vox_backend *be, size_t n, vox_scalar scalar, vox_vec *v) {
  v->n = n;
  v->scalar = scalar;
  v->raw = calloc(1, vox_vec_bytes(n ? n : 1, scalar));
  if (!v->raw) return vox_error(be->ctx, VOX_ERR_NO_MEMORY, "out of memory (a vector of %zu)", n);
  return VOX_OK;
}

static void vec_destroy(vox_backend *be, vox_vec *v) {
  free(v->raw);
  v->raw = NULL;
  v->n = 0;
}

static vox_status vec_upload(vox_backend *be, vox_vec *v, const void *host) {
  memcpy(v->raw, host, vox_vec_bytes(v->n, v->scalar));
  return VOX_OK;
}

static vox_status vec_download(vox_backend *be, const vox_vec *v, void *host) {
  memcpy(host, v->raw, vox_vec_bytes(v->n, v->scalar));
  return VOX_OK;
}

/* Entries of any precision as doubles: half precision by _Float16's
 * conversion from double (round to nearest even) and exactly back, the
 * others as the sparse operations read them. */
static inline double get_any(const vox_vec *v, size_t i) {
  return v->scalar == VOX_HALF ? vox_cpu_half_to_double(((const _Float16 *)v->raw)[i])
                               : vox_vec_get(v, i);
}
static inline void put_any(vox_vec *v, size_t i, double a) {
  if (v->scalar == VOX_HALF)
    ((_Float16 *)v->raw)[i] = (_Float16)a;
  else
    vox_vec_put(v, i, a);
}

static vox_status vec_set(vox_backend *be, vox_vec *v, double a) {
  const ptrdiff_t n = (ptrdiff_t)v->n;
  if (v->scalar != VOX_DOUBLE) {
#pragma omp parallel for num_threads(vox_cpu_threads(be)) schedule(static)
    for (ptrdiff_t i = 0; i < n; i++) put_any(v, (size_t)i, a);
    return VOX_OK;
  }
  double *restrict x = v->data;
#pragma omp parallel for num_threads(vox_cpu_threads(be)) schedule(static)
  for (ptrdiff_t i = 0; i < n; i++) x[i] = a;
  return VOX_OK;
}

static vox_status vec_copy(vox_backend *be, vox_vec *dst, const vox_vec *src) {
  if (dst->scalar == src->scalar) {
    memcpy(dst->raw, src->raw, vox_vec_bytes(src->n, src->scalar));
    return VOX_OK;
  }
  const ptrdiff_t n = (ptrdiff_t)src->n;
#pragma omp parallel for num_threads(vox_cpu_threads(be)) schedule(static)
  for (ptrdiff_t i = 0; i < n; i++) put_any(dst, (size_t)i, get_any(src, (size_t)i));
  return VOX_OK;
}

static vox_status host_alloc(vox_backend *be, size_t bytes, void **p) {
  if ((*p = malloc(bytes ? bytes : 1))) return VOX_OK;
  return vox_error(be->ctx, VOX_ERR_NO_MEMORY, "out of host memory (%zu bytes)", bytes);
}

static void host_free(vox_backend *be, void *p) {
  (void)be;
  free(p);
}

static vox_status vec_axpy(vox_backend *be, vox_vec *y, double a, const vox_vec *x) {
  const ptrdiff_t n = (ptrdiff_t)y->n;
  if (y->scalar != VOX_DOUBLE || x->scalar != VOX_DOUBLE) { /* half fields (homogenize.c) */
#pragma omp parallel for num_threads(vox_cpu_threads(be)) schedule(static)
    for (ptrdiff_t i = 0; i < n; i++)
      put_any(y, (size_t)i, get_any(y, (size_t)i) + a * get_any(x, (size_t)i));
    return VOX_OK;
  }
  double *restrict yy = y->data;
  const double *restrict xx = x->data;
#pragma omp parallel for num_threads(vox_cpu_threads(be)) schedule(static)
  for (ptrdiff_t i = 0; i < n; i++) yy[i] += a * xx[i];
  return VOX_OK;
}

static vox_status vec_xpay(vox_backend *be, vox_vec *y, double a, const vox_vec *x) {
  double *restrict yy = y->data;
  const double *restrict xx = x->data;
  const ptrdiff_t n = (ptrdiff_t)y->n;
#pragma omp parallel for num_threads(vox_cpu_threads(be)) schedule(static)
  for (ptrdiff_t i = 0; i < n; i++) yy[i] = xx[i] + a * yy[i];
  return VOX_OK;
}

static vox_status vec_mult(vox_backend *be, vox_vec *w, const vox_vec *x, const vox_vec *y) {
  double *ww = w->data; /* may alias x or y */
  const double *xx = x->data, *yy = y->data;
  const ptrdiff_t n = (ptrdiff_t)w->n;
#pragma omp parallel for num_threads(vox_cpu_threads(be)) schedule(static)
  for (ptrdiff_t i = 0; i < n; i++) ww[i] = xx[i] * yy[i];
  return VOX_OK;
}

static vox_status vec_axpby(vox_backend *be, vox_vec *y, double a, const vox_vec *x, double b) {
  double *restrict yy = y->data;
  const double *restrict xx = x->data;
  const ptrdiff_t n = (ptrdiff_t)y->n;
#pragma omp parallel for num_threads(vox_cpu_threads(be)) schedule(static)
  for (ptrdiff_t i = 0; i < n; i++) yy[i] = a * xx[i] + b * yy[i];
  return VOX_OK;
}

static vox_status vec_reciprocal(vox_backend *be, vox_vec *v) {
  double *restrict x = v->data;
  const ptrdiff_t n = (ptrdiff_t)v->n;
#pragma omp parallel for num_threads(vox_cpu_threads(be)) schedule(static)
  for (ptrdiff_t i = 0; i < n; i++) x[i] = 1 / x[i];
  return VOX_OK;
}

static vox_status vec_random(vox_backend *be, vox_vec *v, uint64_t seed, uint64_t first) {
  double *restrict x = v->data;
  const ptrdiff_t n = (ptrdiff_t)v->n;
#pragma omp parallel for num_threads(vox_cpu_threads(be)) schedule(static)
  for (ptrdiff_t i = 0; i < n; i++) x[i] = vox_hash_uniform(seed, first + (uint64_t)i);
  return VOX_OK;
}

static vox_status smoother_step(vox_backend *be, const vox_vec *b, const vox_vec *ax,
                                const vox_vec *inv_diag, double alpha, double beta, vox_vec *d,
                                vox_vec *x) {
  const double *restrict bb = b->data, *restrict aa = ax ? ax->data : NULL,
                         *restrict w = inv_diag->data;
  double *restrict dd = d ? d->data : NULL, *restrict xx = x->data;
  const ptrdiff_t n = (ptrdiff_t)x->n;
#pragma omp parallel for num_threads(vox_cpu_threads(be)) schedule(static)
  for (ptrdiff_t i = 0; i < n; i++) {
    const double r = w[i] * (aa ? bb[i] - aa[i] : bb[i]);
    const double di = beta != 0 ? alpha * r + beta * dd[i] : alpha * r;
    if (dd) dd[i] = di;
    xx[i] = aa ? xx[i] + di : di; /* a zero start: x is not read (it need not be zeroed) */
  }
  return VOX_OK;
}

/* The fused steps of the interface, composed: the product goes into the
 * output vector, which these updates then read in place. */
static void finish_smooth(vox_backend *be, const vox_vec *b, const vox_vec *x,
                          const vox_vec *inv_diag, double alpha, double beta, vox_vec *d,
                          vox_vec *x_out) {
  const double *restrict bb = b->data, *restrict xx = x->data, *restrict w = inv_diag->data;
  double *restrict dd = d ? d->data : NULL, *restrict out = x_out->data;
  const ptrdiff_t n = (ptrdiff_t)x->n;
#pragma omp parallel for num_threads(vox_cpu_threads(be)) schedule(static)
  for (ptrdiff_t i = 0; i < n; i++) {
    const double r = w[i] * (bb[i] - out[i]);
    const double di = beta != 0 ? alpha * r + beta * dd[i] : alpha * r;
    if (dd) dd[i] = di;
    out[i] = xx[i] + di;
  }
}

static void finish_residual(vox_backend *be, const vox_vec *b, vox_vec *r) {
  const double *restrict bb = b->data;
  double *restrict rr = r->data;
  const ptrdiff_t n = (ptrdiff_t)r->n;
#pragma omp parallel for num_threads(vox_cpu_threads(be)) schedule(static)
  for (ptrdiff_t i = 0; i < n; i++) rr[i] = bb[i] - rr[i];
}

static vox_status op_smooth(vox_backend *be, vox_operator *op, const vox_vec *b, const vox_vec *x,
                            const vox_vec *inv_diag, double alpha, double beta, vox_vec *d,
                            vox_vec *x_out, int flags) {
  TRY(vox_cpu_op_apply(be, op, x, x_out, flags));
  finish_smooth(be, b, x, inv_diag, alpha, beta, d, x_out);
  return VOX_OK;
}

static vox_status op_residual(vox_backend *be, vox_operator *op, const vox_vec *b,
                              const vox_vec *x, vox_vec *r, int flags) {
  TRY(vox_cpu_op_apply(be, op, x, r, flags));
  finish_residual(be, b, r);
  return VOX_OK;
}

static vox_status cg_update(vox_backend *be, vox_vec *x, vox_vec *r, double alpha,
                            const vox_vec *p, const vox_vec *q, double *rr) {
  double *restrict xx = x->data, *restrict res = r->data;
  const double *restrict pp = p->data, *restrict qq = q->data;
  const ptrdiff_t n = (ptrdiff_t)x->n;
  vox_ordered_sums sums;
  vox_ordered_start(&sums, vox_cpu_threads(be));
#pragma omp parallel num_threads(sums.threads)
  {
    ptrdiff_t lo, hi;
    double *part = vox_ordered_block(&sums, n, &lo, &hi);
    double s = 0;
    for (ptrdiff_t i = lo; i < hi; i++) {
      xx[i] += alpha * pp[i];
      res[i] -= alpha * qq[i];
      s += res[i] * res[i];
    }
    part[0] = s;
  }
  *rr = vox_ordered_total(&sums, 0);
  return VOX_OK;
}

static vox_status vec_dot(vox_backend *be, const vox_vec *x, const vox_vec *y, double *out) {
  const double *restrict xx = x->data, *restrict yy = y->data;
  const ptrdiff_t n = (ptrdiff_t)x->n;
  vox_ordered_sums sums;
  vox_ordered_start(&sums, vox_cpu_threads(be));
#pragma omp parallel num_threads(sums.threads)
  {
    ptrdiff_t lo, hi;
    double *part = vox_ordered_block(&sums, n, &lo, &hi);
    double s = 0;
    for (ptrdiff_t i = lo; i < hi; i++) s += xx[i] * yy[i];
    part[0] = s;
  }
  *out = vox_ordered_total(&sums, 0);
  return VOX_OK;
}

static vox_status vec_max_abs_diff(vox_backend *be, const vox_vec *x, const vox_vec *y,
                                   double *out) {
  const double *restrict xx = x->data, *restrict yy = y->data;
  const ptrdiff_t n = (ptrdiff_t)x->n;
  double m = 0;
#pragma omp parallel for num_threads(vox_cpu_threads(be)) schedule(static) reduction(max : m)
  for (ptrdiff_t i = 0; i < n; i++) m = fmax(m, fabs(xx[i] - yy[i]));
  *out = m;
  return VOX_OK;
}

static void destroy(vox_backend *be) { free(be); }

static vox_status synchronize(vox_backend *be) { return VOX_OK; }

static vox_status memory(vox_backend *be, size_t *free_bytes, size_t *total_bytes) {
  const long page = sysconf(_SC_PAGESIZE), avail = sysconf(_SC_AVPHYS_PAGES),
             total = sysconf(_SC_PHYS_PAGES);
  if (page <= 0 || avail < 0 || total <= 0)
    return vox_error(be->ctx, VOX_ERR_UNSUPPORTED, "the size of memory is unknown");
  *free_bytes = (size_t)avail * (size_t)page;
  *total_bytes = (size_t)total * (size_t)page;
  return VOX_OK;
}

static const vox_vector_ops cpu_vec_ops = {
    .create = vec_create,
    .destroy = vec_destroy,
    .upload = vec_upload,
    .download = vec_download,
    .set = vec_set,
    .copy = vec_copy,
    .axpy = vec_axpy,
    .xpay = vec_xpay,
    .mult = vec_mult,
    .axpby = vec_axpby,
    .reciprocal = vec_reciprocal,
    .random = vec_random,
    .smoother_step = smoother_step,
    .dot = vec_dot,
    .cg_update = cg_update,
    .max_abs_diff = vec_max_abs_diff,
};

static const vox_operator_ops cpu_op_ops = {
    .create = vox_cpu_op_create,
    .destroy = vox_cpu_op_destroy,
    .set_moduli = vox_cpu_op_set_moduli,
    .apply = vox_cpu_op_apply,
    .zero_fixed = vox_cpu_op_zero_fixed,
    .diagonal = vox_cpu_op_diagonal,
    .element_energy = vox_cpu_op_element_energy,
    .smooth = op_smooth,
    .residual = op_residual,
    .strain_load = vox_cpu_op_strain_load,
    .strain_energy = vox_cpu_op_strain_energy,
    .strain_energy_sums = vox_cpu_op_strain_energy_sums,
};

static const vox_multigrid_ops cpu_mg_ops = {
    .stencil_blocks = 27,
    /* CHOLMOD factors and solves the coarsest level on one core while the
     * levels above use them all: with 4131 unknowns (the 128 x 64 x 64
     * cantilever's 16 x 8 x 8 level) its solves took 14 % longer on two
     * cores and 53 % longer on sixteen than with 675 (8 x 4 x 4), for about
     * the same CG iterations (docs/experiments.md) */
    .coarse_dofs = 1000,
    .stencil_create = vox_cpu_stencil_create,
    .stencil_destroy = vox_cpu_stencil_destroy,
    .galerkin_operator = vox_cpu_galerkin_operator,
    .galerkin_stencil = vox_cpu_galerkin_stencil,
    .stencil_upload = vox_cpu_stencil_upload,
    .stencil_download = vox_cpu_stencil_download,
    .stencil_values = vox_cpu_stencil_values,
    .stencil_apply = vox_cpu_stencil_apply,
    .stencil_smooth = vox_cpu_stencil_smooth,
    .stencil_residual = vox_cpu_stencil_residual,
    .stencil_diagonal = vox_cpu_stencil_diagonal,
    .stencil_factor = vox_cpu_stencil_factor,
    .stencil_solve = vox_cpu_stencil_solve,
    .restrict_residual = vox_cpu_restrict_residual,
    .prolong_add = vox_cpu_prolong_add,
};

static const vox_design_ops cpu_design_ops = {
    .simp_moduli = vox_cpu_simp_moduli,
    .simp_sensitivity = vox_cpu_simp_sensitivity,
    .oc_update = vox_cpu_oc_update,
    .oc_volumes = vox_cpu_oc_volumes,
    .filter_create = vox_cpu_filter_create,
    .filter_destroy = vox_cpu_filter_destroy,
    .filter_apply = vox_cpu_filter_apply,
    .filter_transpose = vox_cpu_filter_transpose,
    .filter_sensitivity = vox_cpu_filter_sensitivity,
    .filter_create_periodic = vox_cpu_filter_create_periodic,
    .symmetrize = vox_cpu_symmetrize,
    .turn_field = vox_cpu_turn_field,
};

static const vox_backend_ops cpu_ops = {
    .name = "cpu",
    .destroy = destroy,
    .synchronize = synchronize,
    .memory = memory,
    .host_alloc = host_alloc,
    .host_free = host_free,
    .vec = &cpu_vec_ops,
    .op = &cpu_op_ops,
    .mg = &cpu_mg_ops,
    .design = &cpu_design_ops,
    .sparse = &vox_cpu_sparse_ops,
    .cell = &vox_cpu_cell_ops,
    .efg = &vox_cpu_efg_ops,
    .mma = &vox_cpu_mma_ops,
};

vox_status vox_cpu_backend_create(vox_context *ctx, const vox_backend_options *options,
                                  vox_backend **out) {
  vox_backend *be = calloc(1, sizeof *be);
  if (!be) return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
  be->ops = &cpu_ops;
  be->ctx = ctx;
  be->device = VOX_DEVICE_CPU;
  be->device_index = 0;
  if (options) { /* the CPU has one kernel and double levels: kept to be reported */
    be->kernel = options->kernel;
    be->fp16_levels = options->fp16_levels;
    be->stencil_kernel = options->stencil_kernel;
  }
  be->threads = vox_context_threads(ctx);
  *out = be;
  return VOX_OK;
}
