/* SPDX-License-Identifier: BSD-3-Clause */
/* Homogenization of a periodic unit cell (Zhang et al. 2023 section 3.2): the
 * effective elasticity tensor C^H of a voxel microstructure, from the six
 * cell problems of unit macro strains, and the moduli derived from it.
 *
 * Voigt order (Zhang et al. 2023 eq. 7): 0 = xx, 1 = yy, 2 = zz, 3 = xy, 4 = yz,
 * 5 = zx, with engineering shear strains, so that for an isotropic
 * material C^H_33 is the shear modulus. (The element code's own order,
 * voxfe/element.h, is xx yy zz yz zx xy; only this header's tensors use the
 * seed's.) */
#ifndef VOXFE_HOMOGENIZE_H
#define VOXFE_HOMOGENIZE_H

#include "voxfe/backend.h"
#include "voxfe/model.h"
#include "voxfe/solver.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The moduli of a homogenized tensor. bulk and shear are Zhang et al. 2023's
 * (eq. 19, 20): the Voigt-type averages (C00+C11+C22+2(C01+C02+C12))/9 and
 * (C33+C44+C55)/3, which equal K and G of an isotropic C. young, poisson
 * and shear_axis come from the compliance S = C^-1: E_i = 1/S_ii,
 * nu_ij = -S_ij/S_ii (strain along j under stress along i), G_i = 1/S_ii
 * (i = 3, 4, 5). */
typedef struct vox_cell_moduli {
  double bulk, shear;
  double young[3];          /* E_x, E_y, E_z */
  double poisson[3][3];     /* nu_ij, i != j (diagonal 0) */
  double shear_axis[3];     /* G_xy, G_yz, G_zx */
} vox_cell_moduli;

/* A function of C^H to minimise (the objectives of a periodic cell, seed
 * 003 section 5.3): its value at c (6x6 row-major, the order above) and
 * its gradient d f / d c_ij (6x6, as if all 36 entries were independent;
 * only the symmetric part matters). `iteration` is the design iteration
 * (1-based; eq. 21 uses it). Returns 0, or -1 where f is not defined at c.
 * A parsed expression of the C^H entries plugs in here. */
typedef int (*vox_tensor_function)(void *self, const double c[36], int iteration, double *value,
                                   double gradient[36]);

/* Fills m from c (6x6 row-major). Returns 0, or -1 when c is singular (the
 * compliance-based entries are then NaN). */
int vox_cell_moduli_of(const double c[36], vox_cell_moduli *m);

/* C^H of the cell `model` (its grid taken as periodic; every axis a
 * multiple of 4 elements; one material, every voxel labelled): with
 * use_density, element moduli E (emin + (1 - emin) rho^p) from
 * model->density, otherwise the materials' E. c gets C^H (6x6 row-major,
 * units of E), results the six solves (may be NULL), displacement (may be
 * NULL) the six periodic fluctuation fields (6 * 3 * nodes values, images
 * filled with their twins' values, zero at the corner node). */
vox_status vox_homogenize(vox_context *ctx, vox_backend *backend, const vox_model *model,
                          int use_density, double penalty, double emin_ratio,
                          const vox_solver_options *options, double c[36],
                          vox_solve_result results[6], double *displacement);

#ifdef __cplusplus
}
#endif
#endif
