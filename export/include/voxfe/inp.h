/* SPDX-License-Identifier: BSD-3-Clause */
/* CalculiX / Abaqus input deck (.inp) of a voxel model's solid hexahedra, so
 * that a user can rerun the analysis in their own solver.
 *
 * The deck holds C3D8 elements (exact trilinear bricks: 2x2x2 Gauss points,
 * exact on box elements, as voxfe's own), the nodes they use, one material
 * and solid section per label, the supports (*BOUNDARY) and one linear
 * *STEP / *STATIC per load case with its nodal forces (*CLOAD). Units: mm, N,
 * MPa, as in the model file. The output replaces `path` atomically (a
 * temporary file renamed into place) and leaves it untouched on failure. */
#ifndef VOXFE_INP_H
#define VOXFE_INP_H

#include "voxfe/model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Writes the hexahedra whose density is >= threshold (or, without density,
 * whose label is non-zero: the threshold is then ignored), as vox_write_vtu
 * keeps them; a voxel with label 0 is never written (it has no material).
 *
 * Every kept element gets the full Young's modulus of its label's material,
 * whatever its density: a thresholded design is analysed as solid/void (no
 * SIMP-scaled moduli). Without density the deck is the same problem that
 * vox_solve_elasticity solves with use_density = 0.
 *
 * Names in the deck: nodes and elements are numbered from 1, nodes in the
 * grid's node order, elements grouped by material; the element set and the
 * material of a label take the material's name (LABEL_<label> and
 * MAT_<label> for a material without one); node sets SUPPORTS (constrained
 * nodes), LOADED_<case> (loaded nodes of load case <case>, 1-based), and one
 * set of each support and load that the problem file named (the model's
 * support_names and load_names), under that name, with the *BOUNDARY lines
 * of each support after a comment naming it. Names go in as CalculiX and
 * Abaqus read them: characters other than letters, digits and _ become _, a
 * name not starting with a letter gets M_, S_ or L_ before it, and a name
 * already given (case aside) gets _2, _3, ... after it. A degree of freedom
 * that two supports or two loads share is in the first one's set. Each step asks
 * for U and S in the .frd, and in the .dat for U of its loaded nodes and the
 * total reaction force (RF) of the supports. Forces on the same node and
 * component of a load case are summed. Constraints and forces on nodes that
 * no kept element uses are left out; comments in the deck say how many.
 *
 * Fails (VOX_ERR_INVALID_ARGUMENT) on an invalid model or when no element is
 * kept, and (VOX_ERR_IO) when the file cannot be written. */
vox_status vox_write_inp(vox_context *ctx, const char *path, const vox_model *model,
                         double threshold);

#ifdef __cplusplus
}
#endif
#endif
