/* The marching-cubes case table of the isosurface (private to export/; the
 * tests check it on every corner configuration).
 *
 * Cube corner k = dx + 2 dy + 4 dz; corner k is inside when bit k of the
 * configuration is set. A cube edge is coded as (u << 2) | axis: its lower
 * corner u (bit `axis` of u clear) and its axis (0 x, 1 y, 2 z).
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

#include <stdint.h>

/* at most 12 vertices a cube; the loops of a configuration have at most 12
 * vertices together, and a loop of n vertices makes n - 2 triangles */
#define VOX_CUBE_MAX_TRIANGLES 10

typedef struct vox_cube_cases {
  uint8_t count[256];                                /* triangles of each configuration */
  uint8_t edge[256][VOX_CUBE_MAX_TRIANGLES][3];      /* their edges, counter-clockwise
                                                        seen from outside */
} vox_cube_cases;

/* Fills the table. Returns 0, or -1 if a loop could not be triangulated
 * under the rule above (which does not happen: the tests check every
 * configuration). */
int vox_cube_cases_build(vox_cube_cases *cases);

#endif
