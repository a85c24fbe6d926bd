/* SPDX-License-Identifier: BSD-3-Clause */
/* The harness of the tests that compare a backend with the CPU one,
 * operation by operation (test_cuda_backend.c, test_cuda_periodic.c): the
 * two backends, the line that names what is being checked, one "ok" or
 * "FAIL" line per check with max |cuda - cpu| / max |cpu|, backend calls
 * that report their failure, and a vector held on both backends. Each test
 * includes it once (everything here is static). */
#ifndef VOXFE_TESTS_BACKEND_PAIR_H
#define VOXFE_TESTS_BACKEND_PAIR_H

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "backend_ops.h"
#include "voxfe/voxfe.h"

enum { SKIP = 77 };

/* The backend under test: CUDA, or the one VOXFE_GPU_TEST_DEVICE names
 * ("cpu" checks this test itself on a machine without a GPU: every
 * difference is then that of the CPU backend with itself). */
static inline vox_device test_device(void) {
  vox_device d = VOX_DEVICE_CUDA;
  const char *env = getenv("VOXFE_GPU_TEST_DEVICE");
  if (env && *env && vox_device_parse(env, &d) == 0)
    printf("VOXFE_GPU_TEST_DEVICE=%s: testing the %s backend against the CPU one\n", env, env);
  return d;
}

static vox_backend *cpu, *gpu;
/* What the checks of the moment work on ("13x10x7 dpn=3"), for the names. */
static char where[96];

static inline double uniform(uint64_t *state) {
  *state = *state * 6364136223846793005u + 1442695040888963407u;
  return (double)(*state >> 11) / 9007199254740992.0;
}
/* The index of grid node (i, j, k). */
static inline int64_t node_of(const vox_grid *g, int64_t i, int64_t j, int64_t k) {
  return (k * (g->ny + 1) + j) * (g->nx + 1) + i;
}

/* ---- reporting ------------------------------------------------------------- */

static inline void fail_line(const char *check, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static inline void fail_line(const char *check, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  printf("  FAIL  %s %s: %s\n", where, check, msg);
  check_failures++;
}

static inline void ok_line(const char *check, double d, double tol) {
  char name[192];
  snprintf(name, sizeof name, "%s %s", where, check);
  if (tol > 0)
    printf("  ok    %-68s %9.2e  (tol %.0e)\n", name, d, tol);
  else
    printf("  ok    %-68s %9.2e  (exact)\n", name, d);
}

/* A backend call; on failure prints the check, the call and the backend's
 * message, counts a failure and evaluates to 0. */
static inline int call_ok(vox_status s, vox_backend *be, const char *check, const char *call) {
  static int failed_calls = 0;
  if (s == VOX_OK) return 1;
  fail_line(check, "%s backend: %s returned %s: %s", be->ops->name, call, vox_status_string(s),
            vox_context_message(be->ctx));
  /* A CUDA error such as an illegal address is sticky: every later call
   * fails with it. Stop rather than print hundreds of lines. */
  if (++failed_calls >= 25) {
    printf("stopping after %d failed backend calls: the first FAIL above is the one to look at\n",
           failed_calls);
    exit(1);
  }
  return 0;
}
#define C_OK(check, call) call_ok((call), cpu, (check), #call)
#define G_OK(check, call) call_ok((call), gpu, (check), #call)

/* max |a - b| / max |b| over n values; a non-finite value where the other
 * is finite counts as infinitely far. *worst is the index of the largest
 * difference. */
static inline double rel_diff(const double *a, const double *b, size_t n, size_t *worst) {
  double num = 0, den = 0;
  *worst = 0;
  for (size_t i = 0; i < n; i++) {
    double d;
    if (isfinite(a[i]) && isfinite(b[i]))
      d = fabs(a[i] - b[i]);
    else
      d = (a[i] == b[i]) ? 0 : INFINITY; /* equal infinities are equal; NaN never is */
    if (d > num || (isnan(d) && !isnan(num))) num = d, *worst = i;
    if (isfinite(b[i]) && fabs(b[i]) > den) den = fabs(b[i]);
  }
  return den > 0 ? num / den : num;
}

/* Prints "ok"/"FAIL" with the difference of `cuda` from `ref` (the CPU). */
static inline void report(const char *check, const double *cuda, const double *ref, size_t n,
                          double tol) {
  size_t worst;
  const double d = rel_diff(cuda, ref, n, &worst);
  if (d <= tol) {
    ok_line(check, d, tol);
  } else {
    fail_line(check, "relative difference %.3e > tol %.0e; worst at index %zu of %zu: cuda %.17g, "
              "cpu %.17g", d, tol, worst, n, cuda[worst], ref[worst]);
  }
}

static inline void report_scalar(const char *check, double cuda, double ref, double scale,
                                 double tol) {
  const double d = fabs(cuda - ref) / (scale > 0 ? scale : 1);
  if (d <= tol)
    ok_line(check, d, tol);
  else
    fail_line(check, "relative difference %.3e > tol %.0e: cuda %.17g, cpu %.17g", d, tol, cuda,
              ref);
}

/* ---- a vector on both backends ---------------------------------------------- */

typedef struct pvec {
  vox_vec c, g;   /* CPU and CUDA */
  size_t n;
  double *hc, *hg; /* host scratch for downloads */
} pvec;

static inline int pv_create(pvec *v, size_t n) {
  memset(v, 0, sizeof *v);
  v->n = n;
  v->hc = malloc((n ? n : 1) * sizeof(double));
  v->hg = malloc((n ? n : 1) * sizeof(double));
  if (!v->hc || !v->hg) {
    fail_line("setup", "out of host memory");
    return 0;
  }
  return C_OK("vec_create", cpu->ops->vec->create(cpu, n, VOX_DOUBLE, &v->c)) &&
         G_OK("vec_create", gpu->ops->vec->create(gpu, n, VOX_DOUBLE, &v->g));
}

static inline void pv_destroy(pvec *v) {
  if (v->c.data) cpu->ops->vec->destroy(cpu, &v->c);
  if (v->g.data) gpu->ops->vec->destroy(gpu, &v->g);
  free(v->hc), free(v->hg);
  memset(v, 0, sizeof *v);
}

static inline int pv_upload(pvec *v, const double *h) {
  return C_OK("vec_upload", cpu->ops->vec->upload(cpu, &v->c, h)) &&
         G_OK("vec_upload", gpu->ops->vec->upload(gpu, &v->g, h));
}

/* Uniform in [lo, hi) on both backends (the same values). */
static inline int pv_random(pvec *v, uint64_t *seed, double lo, double hi) {
  for (size_t i = 0; i < v->n; i++) v->hc[i] = lo + (hi - lo) * uniform(seed);
  return pv_upload(v, v->hc);
}

/* Fills the CUDA copy with a value no kernel computes, so that an output a
 * kernel fails to write shows up. */
static inline int pv_poison(pvec *v) {
  return G_OK("vec_set", gpu->ops->vec->set(gpu, &v->g, 12345.678));
}

/* Downloads both copies and reports their difference. */
static inline void pv_check(const char *check, pvec *v, double tol) {
  if (!C_OK(check, cpu->ops->vec->download(cpu, &v->c, v->hc)) ||
      !G_OK(check, gpu->ops->vec->download(gpu, &v->g, v->hg)))
    return;
  report(check, v->hg, v->hc, v->n, tol);
}

/* ---- an operator on both backends ------------------------------------------ */

/* The unit element matrix of the grid's voxel: elasticity (nu = 0.3) for 3
 * dofs a node, conduction for 1; 0 (and a FAIL line) for a bad voxel. */
static inline int unit_element_matrix(const vox_grid *g, int dpn, double *ke) {
  const int bad = dpn == 3 ? vox_hex8_elasticity(1.0, 0.3, g->voxel_size, ke)
                           : vox_hex8_conduction(1.0, g->voxel_size, ke);
  if (bad) fail_line("setup", "element matrix");
  return !bad;
}

/* The operator of (grid, dpn, ke, fixed) on both backends with the moduli
 * the caller put in moduli->hc (uploaded here), on the default kernel. */
static inline int op_pair_create(const vox_grid *g, int dpn, const double *ke,
                                 const uint8_t *fixed, pvec *moduli, vox_operator **cop,
                                 vox_operator **gop) {
  const vox_operator_desc desc = {.grid = *g, .dofs_per_node = dpn, .ke = ke, .dof_fixed = fixed};
  vox_backend_set_kernel(gpu, VOX_KERNEL_AUTO);
  return pv_upload(moduli, moduli->hc) &&
         C_OK("op_create", cpu->ops->op->create(cpu, &desc, cop)) &&
         G_OK("op_create", gpu->ops->op->create(gpu, &desc, gop)) &&
         C_OK("op_set_moduli", cpu->ops->op->set_moduli(cpu, *cop, &moduli->c)) &&
         G_OK("op_set_moduli", gpu->ops->op->set_moduli(gpu, *gop, &moduli->g));
}

static inline void op_pair_destroy(vox_operator **cop, vox_operator **gop) {
  if (*cop) cpu->ops->op->destroy(cpu, *cop);
  if (*gop) gpu->ops->op->destroy(gpu, *gop);
  *cop = *gop = NULL;
}

/* Both calls ran: compare. Used as `if (BOTH(name, cpu call, gpu call)) pv_check(...)`. */
#define BOTH(check, ccall, gcall) (C_OK((check), (ccall)) & G_OK((check), (gcall)))

#endif
