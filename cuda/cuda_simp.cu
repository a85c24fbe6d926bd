/* Element-granularity SIMP kernels on the device: moduli from densities,
 * compliance sensitivities, and the optimality-criteria update for one trial
 * Lagrange multiplier (seed 000, eq. 2, 7, 9, 10; algorithms 6 and 8).
 *
 * One thread per element, grid-stride. The formulas are those of
 * engine/cpu/cpu_simp.c term for term, so that the two backends differ only
 * by the rounding of pow (CUDA's double pow is within 2 ulp, glibc's within
 * 1) and of the one product-sum nvcc contracts into an FMA in the moduli. */
#include "cuda_backend.cuh"

/* moduli_e = e_solid_e (emin + (1 - emin) rho_e^p) */
static __global__ void moduli_kernel(const double *__restrict__ x, const double *__restrict__ es,
                                     double p, double emin, double *__restrict__ m, size_t n) {
  VOX_GRID_STRIDE(e, n) m[e] = es[e] * (emin + (1 - emin) * pow(x[e], p));
}

/* dc_e = -p rho_e^(p-1) (1 - emin) e_solid_e energy_e, multiplied left to
 * right as on the CPU. */
static __global__ void sensitivity_kernel(const double *__restrict__ x,
                                          const double *__restrict__ es,
                                          const double *__restrict__ w, double p, double emin,
                                          double *__restrict__ g, size_t n) {
  VOX_GRID_STRIDE(e, n) g[e] = -p * pow(x[e], p - 1) * (1 - emin) * es[e] * w[e];
}

/* The OC update (eq. 9, 10) for one lambda: design elements move towards
 * rho B^eta within the move limit and [0, 1], then the intermediate-density
 * penalty q; the others take their passive value. */
static __global__ void oc_kernel(const double *__restrict__ x, const double *__restrict__ g,
                                 const double *__restrict__ v, const double *__restrict__ des,
                                 const double *__restrict__ pas, double lambda, double move,
                                 double eta, double q, double *__restrict__ xn, size_t n) {
  VOX_GRID_STRIDE(e, n) {
    if (des[e] == 0) {
      xn[e] = pas[e];
      continue;
    }
    const double b = fmax(0.0, -g[e]) / (lambda * v[e]);
    const double trial = x[e] * pow(b, eta);
    const double lo = fmax(0.0, x[e] - move), hi = fmin(1.0, x[e] + move);
    /* q == 1 skips a pow that would only add rounding (and time) */
    xn[e] = trial <= lo ? lo : trial >= hi ? hi : (q == 1 ? trial : pow(trial, q));
  }
}

vox_status vox_cuda_simp_moduli(vox_backend *be, const vox_vec *rho, const vox_vec *e_solid,
                                double p, double emin, vox_vec *moduli) {
  const size_t n = rho->n;
  moduli_kernel<<<vox_cuda_grid(n), VOX_CUDA_THREADS>>>(rho->data, e_solid->data, p, emin,
                                                        moduli->data, n);
  CUDA_LAUNCHED(be, "the SIMP moduli kernel");
  return VOX_OK;
}

vox_status vox_cuda_simp_sensitivity(vox_backend *be, const vox_vec *rho, const vox_vec *e_solid,
                                     const vox_vec *energy, double p, double emin, vox_vec *dc) {
  const size_t n = rho->n;
  sensitivity_kernel<<<vox_cuda_grid(n), VOX_CUDA_THREADS>>>(rho->data, e_solid->data, energy->data,
                                                             p, emin, dc->data, n);
  CUDA_LAUNCHED(be, "the SIMP sensitivity kernel");
  return VOX_OK;
}

vox_status vox_cuda_oc_update(vox_backend *be, const vox_vec *rho, const vox_vec *dc,
                              const vox_vec *dv, const vox_vec *design, const vox_vec *passive,
                              double lambda, double move, double eta, double q, vox_vec *rho_new) {
  const size_t n = rho->n;
  oc_kernel<<<vox_cuda_grid(n), VOX_CUDA_THREADS>>>(rho->data, dc->data, dv->data, design->data,
                                                    passive->data, lambda, move, eta, q,
                                                    rho_new->data, n);
  CUDA_LAUNCHED(be, "the OC update kernel");
  return VOX_OK;
}
