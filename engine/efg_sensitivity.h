/* SPDX-License-Identifier: BSD-3-Clause */
/* Densities, SIMP and sensitivities of the EFG topology optimization
 * (private; Lu, Gong, Zhang, Xie and Yin 2021, sections 3 and 5.3-5.4).
 *
 * The design variables are nodal densities rho_i; the density at a Gauss
 * point is their MLS interpolation rho_g = sum_i phi_i(x_g) rho_i (eq. 16),
 * its modulus E_g = rho_g^p E0 (eq. 17). MLS shape functions may be
 * slightly negative (down to -1.5e-7 at the Gauss points of cubic voxels
 * with d_max = 2), so rho_g may undershoot the smallest nodal density by a
 * little where nodal densities jump; with nodal densities >= rho_min it
 * stays positive, and the modulus takes rho_g floored at zero only as a
 * guard (a negative rho_g would make K indefinite), its derivative zero
 * there. The volume (eq. 20) is the plain integral of rho_g over the design
 * cells, linear in the nodal densities, so dV/drho_i = integral of phi_i
 * (eq. 24).
 *
 * The compliance sensitivity (eq. 23, 25-27) is computed node-wise in two
 * stages, neither with races: per Gauss point the strain energy density
 * Q_g = u^T B^T D_1 B u (eq. 27; here from the strain eps = B u, O(n) per
 * point instead of the node pairs' O(n^2), the same value), then per node
 * dc/drho_i = -sum over the Gauss points g of node i of
 *     w_g E0_g p rho_g^(p-1) phi_i(x_g) Q_g. */
#ifndef VOXFE_EFG_SENSITIVITY_H
#define VOXFE_EFG_SENSITIVITY_H

#include "efg_model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* rho_g (one per Gauss point) = sum_i phi_i(x_g) rho_i, not clamped. */
void vox_efg_gauss_density(const vox_efg_model *efg, const double *rho_nodes, double *rho_gauss);

/* The density of each voxel of the grid from the Gauss points' densities:
 * the mean of its cell's 8 (the cell's integral of rho over its volume, by
 * the quadrature of eq. 20, so the design voxels' densities times their
 * volumes add up to vox_efg_volume); 0 for voxels without a label. This is
 * the voxel density a design file holds for export. */
void vox_efg_voxel_density(const vox_efg_model *efg, const double *rho_gauss, double *voxel);

/* scale[g] = w_g E0_g max(rho_g, 0)^p: the factors of
 * vox_efg_stiffness_assemble. */
void vox_efg_gauss_scale(const vox_efg_model *efg, const double *rho_gauss, double *scale);

/* q[g] = the strain energy density of the displacement parameters u (3 per
 * node) at Gauss point g for E = 1: eps^T D_1 eps. */
void vox_efg_strain_energy(const vox_efg_model *efg, const double *u, double *q);

/* dc[i] = d(f^T u)/d rho_i for every field node, from the Gauss densities
 * and the energy densities q of the solution u of K u = f. */
void vox_efg_compliance_sensitivity(const vox_efg_model *efg, const double *rho_gauss,
                                    const double *q, double *dc);

/* The supports' springs of the nodal densities rho, into
 * efg->support_stiffness: support_fixed + s_p support_scaled at each penalty
 * point p, s_p = max(rho_p, 0)^p (the SIMP factor of the MLS density there,
 * p = options.simp_penalty), so that a support holds the material next to
 * it to the same relative accuracy whether it is solid or void; a spring
 * of alpha on void material (E = 1e-9 E0) conditions K by 1e13 instead of
 * 1e4 (docs/experiments.md). */
void vox_efg_support_springs(const vox_efg_model *efg, const double *rho_nodes);

/* dc[i] -= sum over the penalty points p of node i of
 * phi_i(x_p) p rho_p^(p-1) sum_c scaled_pc u_p,c^2 (u_p the field at the
 * point): the share of the springs of vox_efg_support_springs in the
 * compliance sensitivity of the solution u (their load is the design's
 * own: the components they hold are held at 0). g: one double per penalty
 * point, the work. */
void vox_efg_support_sensitivity(const vox_efg_model *efg, const double *rho_nodes,
                                 const double *u, double *g, double *dc);

/* The material volume of the design cells, integral of rho_g (mm^3), and
 * the design cells' volume V0 when rho_gauss is NULL. */
double vox_efg_volume(const vox_efg_model *efg, const double *rho_gauss);

/* dv[i] = dV/d rho_i = the integral of phi_i over the design cells. */
void vox_efg_volume_sensitivity(const vox_efg_model *efg, double *dv);

#ifdef __cplusplus
}
#endif
#endif
