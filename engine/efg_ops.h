/* SPDX-License-Identifier: BSD-3-Clause */
/* The backend operations of the element-free Galerkin (EFG) design loop
 * (private; efg_optimize.h), one table per backend, reached through
 * vox_backend_ops.efg: the stages of a design iteration where the
 * backend's vectors live (Lu, Gong, Zhang, Xie and Yin 2021, section 5).
 *
 * A backend's vox_efg_device holds what the stages read on every call,
 * copied once: the shape functions of the Gauss points and of the penalty
 * points with their per-node transposes (efg_model.h), the quadrature
 * weights and moduli, and the stiffness matrix K on its pattern
 * (efg_assembly.h) with the inverses of its diagonal blocks. Every
 * operation computes what the host function it names computes, on
 * VOX_DOUBLE vectors of the backend: one entry per field node (rho, dc),
 * per Gauss point (rho_gauss, scale, q) or per degree of freedom (x, y, r,
 * z: 3 per field node). Where the order of a sum differs from the host
 * function's (a GPU's reductions), the results differ by rounding only. */
#ifndef VOXFE_EFG_OPS_H
#define VOXFE_EFG_OPS_H

#include "efg_levels.h"
#include "efg_model.h"
#include "efg_oc.h"
#include "efg_patches.h"
#include "sparse_bsr.h"
#include "vector.h"
#include "voxfe/backend.h"
#include "voxfe/solver.h"

typedef struct vox_efg_device vox_efg_device; /* defined by each backend */

typedef struct vox_efg_ops {
  /* The model's tables and K's pattern (vox_efg_stiffness_pattern; its
   * values are not read) copied to the backend. The model must outlive
   * the device where the backend reads it in place (the CPU's). With
   * VOX_PRECISION_MIXED a backend may keep what only preconditions in
   * single precision (the CUDA backend: the cells' and the dense patches'
   * inverses, those made in shared memory, and the multigrid's level 0
   * residuals, summed in double; CG's products and the coarse levels stay
   * in double); the CPU's keeps double. */
  vox_status (*create)(vox_backend *be, const vox_efg_model *efg, const vox_bsr *pattern,
                       vox_precision precision, vox_efg_device **out);
  void (*destroy)(vox_backend *be, vox_efg_device *d);
  /* Bytes the device holds on the backend. */
  size_t (*bytes)(const vox_efg_device *d);
  /* rho_gauss = the MLS interpolation of the nodal densities rho (eq. 16;
   * vox_efg_gauss_density). */
  vox_status (*gauss_density)(vox_backend *be, vox_efg_device *d, const vox_vec *rho,
                              vox_vec *rho_gauss);
  /* scale_g = w_g E_g max(rho_g, 0)^p (vox_efg_gauss_scale with SIMP
   * penalty p). */
  vox_status (*gauss_scale)(vox_backend *be, vox_efg_device *d, const vox_vec *rho_gauss,
                            double p, vox_vec *scale);
  /* The supports' springs of the nodal densities rho at SIMP penalty p
   * (vox_efg_support_springs), read by the next assemble; until the first
   * call, the model's own (every support as on solid material). */
  vox_status (*support_springs)(vox_backend *be, vox_efg_device *d, const vox_vec *rho, double p);
  /* K's values for these factors, node pair by node pair with no atomics
   * (section 5.1; vox_efg_stiffness_assemble). */
  vox_status (*assemble)(vox_backend *be, vox_efg_device *d, const vox_vec *scale);
  /* The inverses of K's 3x3 diagonal blocks, kept for precondition
   * (vox_efg_block_jacobi); fails with its message naming the field node
   * whose block is not positive definite. */
  vox_status (*block_jacobi)(vox_backend *be, vox_efg_device *d);
  /* y = K x;  z = D^-1 r with D K's diagonal blocks (block_jacobi's). */
  vox_status (*apply)(vox_backend *be, vox_efg_device *d, const vox_vec *x, vox_vec *y);
  vox_status (*precondition)(vox_backend *be, vox_efg_device *d, const vox_vec *r, vox_vec *z);
  /* Additive Schwarz on the patches (efg_patches.h): their tables copied
   * to the backend once (the patches must outlive the device: the CPU's
   * reads them in place, the CUDA backend's messages name their nodes),
   * the inverses made from K's values (vox_efg_patches_factor_kept, its
   * message on failure: with drift > 0 a cell's patch keeps its inverse
   * while its diagonal moves by no more than drift), z = the patches' sum
   * for r (vox_efg_patches_apply). */
  vox_status (*patches_create)(vox_backend *be, vox_efg_device *d, const vox_efg_patches *p);
  vox_status (*patches_factor)(vox_backend *be, vox_efg_device *d, double drift);
  /* Optional (NULL: the backend keeps double throughout): what create's
   * VOX_PRECISION_MIXED kept in single precision goes back to double from
   * the next patches_factor and mg_setup on (their values are remade
   * there, every cell's patch whatever the drift), for a run whose
   * preconditioner broke down in single precision. */
  vox_status (*precision_double)(vox_backend *be, vox_efg_device *d);
  vox_status (*patches_apply)(vox_backend *be, vox_efg_device *d, const vox_vec *r, vox_vec *z);
  /* The geometric multigrid's levels (efg_levels.h, efg_mg.h): their
   * tables copied once (the levels must outlive the device where the
   * backend reads them in place); mg_setup makes each coarse level's
   * values from K (the Galerkin products B = A_l P, A_l+1 = P^T B), the
   * inverses of their diagonal blocks, and the last level's dense Cholesky
   * factor (failing with a message when a block or that level is not
   * positive definite). A backend may leave that factor running behind
   * mg_setup's return, beside what follows (the patches' inverses, the
   * smoothers' bounds), until mg_setup_wait (NULL: mg_setup finishes it);
   * no x = A_last^-1 b before then; with factor 0 it keeps the last
   * level's factor of an earlier mg_setup instead (its matrix not made),
   * and with factor 1 too where drift > 0 and no diagonal entry of the
   * last level has moved by more than drift, relatively, since that
   * factor was made (vox_efg_diagonal_drift); *made says which (1: made
   * now).
   * Then, for level l: y = A_l x (l > 0),
   * z = its inverted diagonal blocks times r (l > 0), rc = P_l^T r,
   * x += P_l xc, and x = A_last^-1 b. */
  vox_status (*mg_create)(vox_backend *be, vox_efg_device *d, const vox_efg_levels *lv);
  vox_status (*mg_setup)(vox_backend *be, vox_efg_device *d, int factor, double drift,
                         int *made);
  vox_status (*mg_setup_wait)(vox_backend *be, vox_efg_device *d);
  vox_status (*mg_apply)(vox_backend *be, vox_efg_device *d, int l, const vox_vec *x, vox_vec *y);
  vox_status (*mg_jacobi)(vox_backend *be, vox_efg_device *d, int l, const vox_vec *r,
                          vox_vec *z);
  vox_status (*mg_restrict)(vox_backend *be, vox_efg_device *d, int l, const vox_vec *r,
                            vox_vec *rc);
  vox_status (*mg_prolong_add)(vox_backend *be, vox_efg_device *d, int l, const vox_vec *xc,
                               vox_vec *x);
  vox_status (*mg_coarse_solve)(vox_backend *be, vox_efg_device *d, const vox_vec *b,
                                vox_vec *x);
  /* The smoothing steps' fused passes on level l (level 0: K and the
   * patches, which must be factored): r = b - A_l x; and one Chebyshev
   * step from its residual r: dir = alpha M_l r + beta dir (dir not read
   * when beta is 0), x += dir, or with `first` x = dir (x not read). */
  vox_status (*mg_residual)(vox_backend *be, vox_efg_device *d, int l, const vox_vec *b,
                            const vox_vec *x, vox_vec *r);
  vox_status (*mg_smooth_step)(vox_backend *be, vox_efg_device *d, int l, const vox_vec *r,
                               double alpha, double beta, int first, vox_vec *dir, vox_vec *x);
  /* The node-wise sensitivities in two stages (section 5.3): q_g = the
   * strain energy density of u at Gauss point g for E = 1
   * (vox_efg_strain_energy), then per node dc_i (the compliance
   * sensitivity of vox_efg_compliance_sensitivity with SIMP penalty p). */
  vox_status (*strain_energy)(vox_backend *be, vox_efg_device *d, const vox_vec *u, vox_vec *q);
  vox_status (*compliance_sensitivity)(vox_backend *be, vox_efg_device *d,
                                       const vox_vec *rho_gauss, const vox_vec *q, double p,
                                       vox_vec *dc);
  /* dc -= the springs' share of the compliance sensitivity of u at SIMP
   * penalty p (vox_efg_support_sensitivity). */
  vox_status (*support_sensitivity)(vox_backend *be, vox_efg_device *d, const vox_vec *rho,
                                    const vox_vec *u, double p, vox_vec *dc);
  /* The OC update of the nodal densities (vox_efg_oc_update with the
   * model's volume sensitivities and design nodes, which create copies):
   * rho_new and *res from rho and the sensitivities dc. */
  vox_status (*oc_update)(vox_backend *be, vox_efg_device *d, const vox_efg_oc_options *o,
                          const vox_vec *rho, const vox_vec *dc, vox_vec *rho_new,
                          vox_efg_oc_result *res);
  /* *sum = vox_efg_non_discreteness_sum of the Gauss points' densities. */
  vox_status (*non_discreteness)(vox_backend *be, vox_efg_device *d, const vox_vec *rho_gauss,
                                 double *sum);
  /* K's values to host memory: 9 per block of the pattern, in its order
   * (the tests' comparison with the host assembly). */
  vox_status (*matrix_download)(vox_backend *be, const vox_efg_device *d, double *val);
} vox_efg_ops;

/* The inverse of the symmetric 3x3 block a (row-major) into inv; 0 when a
 * is not positive definite (a leading minor <= 0): block Jacobi's, the
 * same arithmetic on the host and on a device. */
#ifdef __CUDACC__
__host__ __device__
#endif
static inline int vox_efg_spd3_inverse(const double *a, double *inv) {
  const double m1 = a[0], m2 = a[0] * a[4] - a[1] * a[3];
  const double c00 = a[4] * a[8] - a[5] * a[7], c01 = a[5] * a[6] - a[3] * a[8],
               c02 = a[3] * a[7] - a[4] * a[6];
  const double det = a[0] * c00 + a[1] * c01 + a[2] * c02;
  if (!(m1 > 0 && m2 > 0 && det > 0)) return 0;
  const double d = 1 / det;
  inv[0] = c00 * d;
  inv[1] = (a[2] * a[7] - a[1] * a[8]) * d;
  inv[2] = (a[1] * a[5] - a[2] * a[4]) * d;
  inv[3] = c01 * d;
  inv[4] = (a[0] * a[8] - a[2] * a[6]) * d;
  inv[5] = (a[2] * a[3] - a[0] * a[5]) * d;
  inv[6] = c02 * d;
  inv[7] = (a[1] * a[6] - a[0] * a[7]) * d;
  inv[8] = (a[0] * a[4] - a[1] * a[3]) * d;
  return 1;
}

#ifdef __cplusplus
extern "C" {
#endif
extern const vox_efg_ops vox_cpu_efg_ops;
#ifdef VOXFE_HAVE_CUDA
extern const vox_efg_ops vox_cuda_efg_ops;
#endif
#ifdef __cplusplus
}
#endif

#endif
