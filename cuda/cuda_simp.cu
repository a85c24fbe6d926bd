/* SPDX-License-Identifier: BSD-3-Clause */
/* Element-granularity SIMP kernels on the device: moduli from densities,
 * compliance sensitivities, and the optimality-criteria update for one trial
 * Lagrange multiplier (Martinez-Frutos et al. 2017, eq. 2, 7, 9, 10; algorithms 6 and 8).
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
                                 double eta, double q, double rho_min, double *__restrict__ xn,
                                 size_t n) {
  VOX_GRID_STRIDE(e, n) {
    if (des[e] == 0) {
      xn[e] = pas[e];
      continue;
    }
    const double b = fmax(0.0, -g[e]) / (lambda * v[e]);
    const double trial = x[e] * pow(b, eta);
    const double lo = fmax(0.0, x[e] - move), hi = fmin(1.0, x[e] + move);
    /* q == 1 skips a pow that would only add rounding (and time) */
    xn[e] = fmax(rho_min, trial <= lo ? lo : trial >= hi ? hi : (q == 1 ? trial : pow(trial, q)));
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
                              double lambda, double move, double eta, double q, double rho_min,
                              vox_vec *rho_new) {
  const size_t n = rho->n;
  oc_kernel<<<vox_cuda_grid(n), VOX_CUDA_THREADS>>>(rho->data, dc->data, dv->data, design->data,
                                                    passive->data, lambda, move, eta, q, rho_min,
                                                    rho_new->data, n);
  CUDA_LAUNCHED(be, "the OC update kernel");
  return VOX_OK;
}

/* ---- oc_volumes: the volume for many trial multipliers in one pass ------- */

/* A fixed grid, so that the sums are added in the same order on every run. */
enum { OC_BLOCKS = 512, OC_WARPS = VOX_CUDA_THREADS / 32 };

struct oc_scales {
  double scale[VOX_OC_LAMBDAS], scale_q[VOX_OC_LAMBDAS]; /* lambda^-eta, lambda^(-eta q) */
};

/* partial[block][j] = sum over the block's elements of dv_e rho_new_e(lambda_j) */
static __global__ void __launch_bounds__(VOX_CUDA_THREADS)
    oc_volumes_kernel(const double *__restrict__ x, const double *__restrict__ g,
                      const double *__restrict__ v, const double *__restrict__ des,
                      const double *__restrict__ pas, oc_scales k,
                      int n, double move, double eta, double q, double rho_min,
                      double *__restrict__ partial,
                      size_t ne) {
  double sum[VOX_OC_LAMBDAS];
#pragma unroll
  for (int j = 0; j < VOX_OC_LAMBDAS; j++) sum[j] = 0;
  VOX_GRID_STRIDE(e, ne) {
    if (des[e] == 0) {
      const double fixed = v[e] * pas[e];
#pragma unroll
      for (int j = 0; j < VOX_OC_LAMBDAS; j++) sum[j] += fixed;
      continue;
    }
    const double c = x[e] * pow(fmax(0.0, -g[e]) / v[e], eta), cq = q == 1 ? c : pow(c, q);
    const double lo = fmax(0.0, x[e] - move), hi = fmin(1.0, x[e] + move);
#pragma unroll
    for (int j = 0; j < VOX_OC_LAMBDAS; j++) {
      const double trial = c * k.scale[j];
      sum[j] += v[e] * fmax(rho_min, trial <= lo ? lo : trial >= hi ? hi : cq * k.scale_q[j]);
    }
  }
  __shared__ double warp_sum[OC_WARPS][VOX_OC_LAMBDAS];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
#pragma unroll
  for (int j = 0; j < VOX_OC_LAMBDAS; j++) {
    const double t = vox_cuda_warp_sum(sum[j]);
    if (lane == 0) warp_sum[warp][j] = t;
  }
  __syncthreads();
  if (threadIdx.x < n) {
    double t = 0;
    for (int i = 0; i < OC_WARPS; i++) t += warp_sum[i][threadIdx.x];
    partial[(size_t)blockIdx.x * VOX_OC_LAMBDAS + threadIdx.x] = t;
  }
}

/* volume[j] = the blocks' partial sums of multiplier j, in block order */
static __global__ void oc_volumes_final(const double *__restrict__ partial, int n,
                                        double *__restrict__ volume) {
  const int j = threadIdx.x;
  if (j >= n) return;
  double t = 0;
  for (int b = 0; b < OC_BLOCKS; b++) t += partial[(size_t)b * VOX_OC_LAMBDAS + j];
  volume[j] = t;
}

vox_status vox_cuda_oc_volumes(vox_backend *be, const vox_vec *rho, const vox_vec *dc,
                               const vox_vec *dv, const vox_vec *design, const vox_vec *passive,
                               const double *lambda, int n, double move, double eta,
                               double q, double rho_min, double *volume) {
  vox_cuda_state *cs = vox_cuda(be);
  if (n < 1 || n > VOX_OC_LAMBDAS)
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT, "OC: %d trial multipliers", n);
  if (!cs->oc_partial)
    TRY(vox_cuda_alloc(be, (void **)&cs->oc_partial,
                       ((size_t)OC_BLOCKS + 1) * VOX_OC_LAMBDAS * sizeof(double),
                       "the OC bisection's partial sums"));
  oc_scales k = {};
  for (int j = 0; j < n; j++) k.scale[j] = pow(lambda[j], -eta), k.scale_q[j] = pow(k.scale[j], q);
  double *result = cs->oc_partial + (size_t)OC_BLOCKS * VOX_OC_LAMBDAS;
  oc_volumes_kernel<<<OC_BLOCKS, VOX_CUDA_THREADS>>>(rho->data, dc->data, dv->data, design->data,
                                                     passive->data, k, n, move, eta, q, rho_min,
                                                     cs->oc_partial, rho->n);
  oc_volumes_final<<<1, VOX_OC_LAMBDAS>>>(cs->oc_partial, n, result);
  CUDA_LAUNCHED(be, "the OC volume kernels");
  CUDA_TRY(be, cudaMemcpy(volume, result, (size_t)n * sizeof *volume, cudaMemcpyDeviceToHost),
           "reading the OC volumes");
  return VOX_OK;
}
