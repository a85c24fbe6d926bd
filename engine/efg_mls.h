/* SPDX-License-Identifier: BSD-3-Clause */
/* Moving least-squares (MLS) shape functions of the element-free Galerkin
 * (EFG) method (private; Lu, Gong, Zhang, Xie and Yin 2021, section 2), on
 * the nodes of a voxel grid.
 *
 * The field nodes are the grid nodes of the domain: the corners of the
 * voxels the caller marks (a model's voxels with a label). The shape
 * function of node i at x is
 *     phi_i(x) = w_i(x) p(x_i)^T A(x)^-1 p(x),   A(x) = sum_j w_j(x) p(x_j) p(x_j)^T
 * with the linear basis p = [1 x y z] (eq. 2, 8, 9) and the cubic spline
 * weight w(r) of eq. 4, r = |x - x_i| / (d_max c_i) (eq. 5). c_i, the
 * distance from node i to its nearest field node, is the smallest voxel
 * edge for every node: each field node is the corner of a domain voxel,
 * whose edges end at field nodes. So all supports have the one radius
 * d_max c, and the nodes that can influence a point are a fixed box of grid
 * lines around it, kept where they are field nodes and nearer than the
 * radius.
 *
 * The basis is shifted to the evaluation point and scaled by the radius,
 * p(y) = [1, (y - x)/R], which spans the same functions (so the shape
 * functions are the same) and keeps A well conditioned on any grid size or
 * origin. */
#ifndef VOXFE_EFG_MLS_H
#define VOXFE_EFG_MLS_H

#include <stddef.h>
#include <stdint.h>

#include "voxfe/context.h"
#include "voxfe/model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The cubic spline weight of eq. 4 at r >= 0 (0 from r = 1 on); *dw_over_r
 * (when not NULL) gets w'(r) / r, finite at r = 0, which the derivatives
 * need: dw/dx_k = (w'(r)/r) (x_k - x_ik) / R^2. */
double vox_efg_weight(double r, double *dw_over_r);

/* The field nodes of a voxel domain. */
typedef struct vox_efg_nodes {
  vox_grid grid;
  size_t n;            /* field nodes */
  int64_t *grid_node;  /* n: the grid index of each field node, ascending */
  int32_t *field;      /* one per grid node: its field index, or -1 */
  int32_t *coord;      /* 3 per field node: its grid line i, j, k */
  double radius;       /* the support radius d_max c, mm */
  int reach[3];        /* grid lines along x, y, z that two nodes of one
                          support may be apart: floor(2 radius / h) */
  size_t max_support;  /* the most nodes a point's support can hold */
} vox_efg_nodes;

/* The field nodes of the voxels e with in_domain[e] != 0, with supports of
 * d_max = support_scale times the smallest voxel edge. Fails for an empty
 * domain, a periodic grid or a support scale under 1 (the supports would not
 * overlap). */
vox_status vox_efg_nodes_init(vox_context *ctx, const vox_grid *grid, const uint8_t *in_domain,
                              double support_scale, vox_efg_nodes *nodes);
void vox_efg_nodes_free(vox_efg_nodes *nodes);

/* The position (mm) of field node i. */
void vox_efg_node_position(const vox_efg_nodes *nodes, int32_t i, double x[3]);

/* The shape functions at x: the number of nodes whose support holds x,
 * their field indices in node[] (ascending), phi[] and, when dphi is not
 * NULL, the gradients dphi[3*a + k] = d phi_a / d x_k. The arrays need room
 * for nodes->max_support. Returns -1 when A(x) is singular (fewer than four
 * nodes that are not coplanar: a point outside the domain, or supports too
 * small for the voxels' aspect ratio). */
int vox_efg_shape_at(const vox_efg_nodes *nodes, const double x[3], int32_t *node, double *phi,
                     double *dphi);

/* The shape functions of a list of points, stored compactly: the nodes of
 * point g are entries [start[g], start[g+1]), with their field index, phi
 * and (when built with derivatives) the gradient, 3 values per entry. */
typedef struct vox_efg_shapes {
  size_t n_points;
  size_t *start; /* n_points + 1 */
  int32_t *node;
  double *phi;
  double *dphi;  /* NULL without derivatives */
} vox_efg_shapes;

/* The shape functions of n_points points x (3 coordinates each), computed
 * once in parallel. `what` names the points in the message when one has a
 * singular A. */
vox_status vox_efg_shapes_build(vox_context *ctx, const vox_efg_nodes *nodes, size_t n_points,
                                const double *x, int derivatives, const char *what,
                                vox_efg_shapes *out);
void vox_efg_shapes_free(vox_efg_shapes *s);

/* The transpose of a shape table: for each node i, the entries that name it,
 * [start[i], start[i+1]) of entry[] (the entry index into the table) and
 * point[] (the entry's point), in the order of the points. */
typedef struct vox_efg_node_points {
  size_t *start; /* n nodes + 1 */
  size_t *entry;
  size_t *point;
} vox_efg_node_points;

vox_status vox_efg_node_points_build(vox_context *ctx, const vox_efg_shapes *s, size_t n_nodes,
                                     vox_efg_node_points *out);
void vox_efg_node_points_free(vox_efg_node_points *np);

#ifdef __cplusplus
}
#endif
#endif
