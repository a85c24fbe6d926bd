/* SPDX-License-Identifier: BSD-3-Clause */
/* A coarse level of the sparse multigrid that follows the bone's
 * connectivity (private; sparse_hierarchy.c builds its levels with it).
 *
 * Plain rediscretisation (sparse_hierarchy.h) gives a coarse box node one
 * set of dofs for everything within its reach: two trabeculae that pass
 * through the 4 x 4 x 4 fine elements around a coarse node without
 * touching there are moved by the same coarse dofs, so the coarse space
 * ties together what the fine level does not, and multigrid converges
 * slowly on thin, porous bone. Here, as in composite finite elements and in
 * agglomeration multigrid:
 *  - a coarse element is a *piece*: the fine elements of one coarse cell
 *    that are connected to each other through shared fine nodes (a cell may
 *    hold several pieces);
 *  - a coarse node is one *copy* of a box node per connected part of the
 *    pieces around it (the pieces of its eight cells, joined where two
 *    share a fine node that the box node interpolates to);
 *  - a fine node interpolates, trilinearly as before, from the copies of
 *    the piece that holds it: every piece that holds it gives the same
 *    copies, since they share that node.
 * A piece's modulus is the sum of its children's over 8 (the mean over the
 * cell, absent children counting 0), and its element matrix the coarse
 * voxel's, as before. Copies of a box node are numbered next to each other
 * and pieces of a cell likewise, so the levels keep box order and the layer
 * structure the backends rely on. */
#ifndef VOXFE_SPARSE_SPLIT_H
#define VOXFE_SPARSE_SPLIT_H

#include "sparse_hierarchy.h"

/* Builds coarse level `c` (its grid the coarsened grid of `f`, set by the
 * caller, as is its element matrix) from fine level `f`: c's nodes,
 * elements (with element_nodes_x1), moduli, fixed dofs (as
 * sparse_hierarchy.c derives them from the fine level's) and layer starts,
 * and f's parent words. `table` gives the moduli of f's materials when f
 * is level 0. */
vox_status vox_sparse_split_coarsen(vox_context *ctx, const double table[256],
                                    vox_sparse_host_level *f, vox_sparse_host_level *c);

#endif
