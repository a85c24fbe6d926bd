/* SPDX-License-Identifier: BSD-3-Clause */
/* Element-granularity SIMP kernels on the CPU: moduli from densities,
 * compliance sensitivities, and the optimality-criteria update for one trial
 * Lagrange multiplier (Martinez-Frutos et al. 2017, eq. 2, 7, 9, 10). */
#include <math.h>
#include <omp.h>
#include <stdlib.h>

#include "cpu.h"

vox_status vox_cpu_simp_moduli(vox_backend *be, const vox_vec *rho, const vox_vec *e_solid,
                               double p, double emin, vox_vec *moduli) {
  const double *restrict x = rho->data, *restrict es = e_solid->data;
  double *restrict m = moduli->data;
  const ptrdiff_t n = (ptrdiff_t)rho->n;
#pragma omp parallel for num_threads(vox_cpu_threads(be)) schedule(static)
  for (ptrdiff_t e = 0; e < n; e++) m[e] = es[e] * (emin + (1 - emin) * pow(x[e], p));
  return VOX_OK;
}

vox_status vox_cpu_simp_sensitivity(vox_backend *be, const vox_vec *rho, const vox_vec *e_solid,
                                    const vox_vec *energy, double p, double emin, vox_vec *dc) {
  const double *restrict x = rho->data, *restrict es = e_solid->data, *restrict w = energy->data;
  double *restrict g = dc->data;
  const ptrdiff_t n = (ptrdiff_t)rho->n;
#pragma omp parallel for num_threads(vox_cpu_threads(be)) schedule(static)
  for (ptrdiff_t e = 0; e < n; e++) g[e] = -p * pow(x[e], p - 1) * (1 - emin) * es[e] * w[e];
  return VOX_OK;
}

/* y^eta: the square root where eta is 1/2 (the usual damping; a
 * vectorisable instruction instead of a call of pow, correctly rounded
 * where pow is within half an ulp and a bit). */
static inline double power_eta(double y, double eta) { return eta == 0.5 ? sqrt(y) : pow(y, eta); }

vox_status vox_cpu_oc_update(vox_backend *be, const vox_vec *rho, const vox_vec *dc,
                             const vox_vec *dv, const vox_vec *design, const vox_vec *passive,
                             double lambda, double move, double eta, double q,
                             double rho_min, vox_vec *rho_new) {
  const double *restrict x = rho->data, *restrict g = dc->data, *restrict v = dv->data;
  const double *restrict des = design->data, *restrict pas = passive->data;
  double *restrict xn = rho_new->data;
  const ptrdiff_t n = (ptrdiff_t)rho->n;
#pragma omp parallel for num_threads(vox_cpu_threads(be)) schedule(static)
  for (ptrdiff_t e = 0; e < n; e++) {
    if (des[e] == 0) {
      xn[e] = pas[e];
      continue;
    }
    const double b = fmax(0.0, -g[e]) / (lambda * v[e]);
    const double trial = x[e] * power_eta(b, eta);
    const double lo = fmax(0.0, x[e] - move), hi = fmin(1.0, x[e] + move);
    xn[e] = fmax(rho_min, trial <= lo ? lo : trial >= hi ? hi : (q == 1 ? trial : pow(trial, q)));
  }
  return VOX_OK;
}

/* The volumes of elements [e0, e1) for n trial multipliers, added into
 * sum[j] element by element: the trials' clamps as comparisons, which
 * vectorise across the multipliers (fmax is a library call in the baseline
 * build, and its signed zeros do not matter here: each value is a density
 * >= rho_min >= 0). */
HOT_CLONES static void oc_volume_range(const vox_vec *rho, const vox_vec *dc, const vox_vec *dv,
                                       const vox_vec *design, const vox_vec *passive,
                                       const double *scale, const double *scale_q, int n,
                                       double move, double eta, double q, double rho_min,
                                       ptrdiff_t e0, ptrdiff_t e1, double *restrict sum) {
  const double *restrict x = rho->data, *restrict g = dc->data, *restrict v = dv->data;
  const double *restrict des = design->data, *restrict pas = passive->data;
  double acc[VOX_OC_LAMBDAS];
  for (int j = 0; j < n; j++) acc[j] = sum[j];
  for (ptrdiff_t e = e0; e < e1; e++) {
    if (des[e] == 0) {
      for (int j = 0; j < n; j++) acc[j] += v[e] * pas[e];
      continue;
    }
    const double c = x[e] * power_eta(fmax(0.0, -g[e]) / v[e], eta), cq = q == 1 ? c : pow(c, q);
    const double lo = fmax(0.0, x[e] - move), hi = fmin(1.0, x[e] + move);
    for (int j = 0; j < n; j++) {
      const double trial = c * scale[j];
      const double t = trial <= lo ? lo : trial >= hi ? hi : cq * scale_q[j];
      acc[j] += v[e] * (t > rho_min ? t : rho_min);
    }
  }
  for (int j = 0; j < n; j++) sum[j] = acc[j];
}

vox_status vox_cpu_oc_volumes(vox_backend *be, const vox_vec *rho, const vox_vec *dc,
                              const vox_vec *dv, const vox_vec *design, const vox_vec *passive,
                              const double *lambda, int n, double move, double eta,
                              double q, double rho_min, double *volume) {
  double scale[VOX_OC_LAMBDAS], scale_q[VOX_OC_LAMBDAS];
  for (int j = 0; j < n; j++) scale[j] = pow(lambda[j], -eta), scale_q[j] = pow(scale[j], q);
  const ptrdiff_t ne = (ptrdiff_t)rho->n;
  /* per-thread sums added in thread order: the same result on every run */
  const int threads = vox_cpu_threads(be);
  double(*sums)[VOX_OC_LAMBDAS] = calloc((size_t)threads, sizeof *sums);
  if (!sums) return vox_error(be->ctx, VOX_ERR_NO_MEMORY, "out of memory");
#pragma omp parallel num_threads(threads)
  {
    /* this thread's share of the elements, in one piece */
    const int t = omp_get_thread_num(), nt = omp_get_num_threads();
    const ptrdiff_t per = ne / nt, extra = ne % nt;
    const ptrdiff_t e0 = t * per + (t < extra ? t : extra), e1 = e0 + per + (t < extra);
    oc_volume_range(rho, dc, dv, design, passive, scale, scale_q, n, move, eta, q, rho_min, e0,
                    e1, sums[t]);
  }
  for (int j = 0; j < n; j++) {
    volume[j] = 0;
    for (int t = 0; t < threads; t++) volume[j] += sums[t][j];
  }
  free(sums);
  return VOX_OK;
}
