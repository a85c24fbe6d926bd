/* SPDX-License-Identifier: BSD-3-Clause */
/* The marching-cubes case table of the isosurface (the type, shared with the
 * GPU's extraction, is voxfe/device/isosurface.h; the tests check the table
 * on every corner configuration).
 *
 * The table is derived from one rule per face, not written by hand: the
 * segments of the surface on a cube face depend only on that face's four
 * corners (so the two cubes that share a face draw the same segments), and
 * where a face is ambiguous (inside corners on one diagonal, outside ones on
 * the other) each inside corner is cut off by its own segment (the inside
 * corners are separated). The segments of the six faces, oriented so that
 * the inside lies on their right seen from outside the cube, join into
 * closed loops; each loop is triangulated as a disk, by the triangulation
 * that never joins two vertices on one cube face by an inner diagonal (such
 * a diagonal could be drawn by the neighbouring cube too, and its edge would
 * then have four triangles) and has the best worst triangle (at the edges'
 * midpoints) among those. */
#ifndef VOXFE_CUBE_CASES_H
#define VOXFE_CUBE_CASES_H

#include "voxfe/device/isosurface.h"

/* Fills the table. Returns 0, or -1 if a loop could not be triangulated
 * under the rule above (which does not happen: the tests check every
 * configuration). */
int vox_cube_cases_build(vox_cube_cases *cases);

#endif
