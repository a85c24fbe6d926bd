/* SPDX-License-Identifier: BSD-3-Clause */
/* The element-level pieces of the Galerkin product R A P on the matrix-free
 * level (private, shared by the backends): every fine element lies in one
 * coarse element, where the prolongation P is a fixed map Q_s of its
 * sub-position s (bits x, y, z), so each fine element adds
 * m_e Q_s' Ke Q_s to its coarse element's matrix. */
#ifndef VOXFE_GALERKIN_ELEMENT_H
#define VOXFE_GALERKIN_ELEMENT_H

#ifdef __cplusplus
extern "C" {
#endif

/* Q_s: the interpolation from the 8 corners of a coarse element to the 8
 * nodes of its fine element at sub-position s, nloc x nloc (nloc = 8 dpn). */
void vox_galerkin_interpolation(int s, int dpn, double *q);
/* out = Q' K Q, nloc x nloc, nloc <= 24. */
void vox_galerkin_triple_product(const double *q, const double *k, int nloc, double *out);
/* Q_s' Ke Q_s for s = 0..7, 8 blocks of nloc x nloc. */
void vox_galerkin_element_products(const double *ke, int dpn, double *qkq);

#ifdef __cplusplus
}
#endif
#endif
