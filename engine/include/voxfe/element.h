/* SPDX-License-Identifier: BSD-3-Clause */
/* Exact element matrices of the 8-node hexahedron on a box voxel.
 *
 * Local node order is VTK_HEXAHEDRON's:
 *   0 (0,0,0)  1 (1,0,0)  2 (1,1,0)  3 (0,1,0)
 *   4 (0,0,1)  5 (1,0,1)  6 (1,1,1)  7 (0,1,1)
 * Trilinear shape functions on a box give integrands that are polynomials of
 * degree <= 2 in each coordinate, so 2x2x2 Gauss quadrature is exact. */
#ifndef VOXFE_ELEMENT_H
#define VOXFE_ELEMENT_H

#ifdef __cplusplus
extern "C" {
#endif

/* Local node offsets (di, dj, dk) in VTK_HEXAHEDRON order: a table in the
 * header so that writers of other formats share the one node order. */
static const int vox_hex8_corner[8][3] = {{0, 0, 0}, {1, 0, 0}, {1, 1, 0}, {0, 1, 0},
                                          {0, 0, 1}, {1, 0, 1}, {1, 1, 1}, {0, 1, 1}};

/* 24x24 stiffness matrix, row-major, dof 3*a + c for local node a and
 * component c, of an element with Young's modulus E, Poisson ratio nu and
 * edge lengths h[3]. Returns 0, or -1 if nu is not in (-1, 0.5). */
int vox_hex8_elasticity(double E, double nu, const double h[3], double ke[24 * 24]);

/* 8x8 conductivity matrix, row-major, of an element with conductivity k. */
int vox_hex8_conduction(double k, const double h[3], double ke[8 * 8]);

/* Isotropic constitutive matrix (Voigt order xx, yy, zz, yz, zx, xy;
 * engineering shear strains), row-major 6x6. */
int vox_isotropic_elasticity_matrix(double E, double nu, double d[6 * 6]);

/* Strain-displacement matrix B (6x24, row-major) at the element centre. */
void vox_hex8_strain_at_centre(const double h[3], double b[6 * 24]);

#ifdef __cplusplus
}
#endif
#endif
