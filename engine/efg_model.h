/* SPDX-License-Identifier: BSD-3-Clause */
/* The element-free Galerkin (EFG) discretisation of a voxel model (private;
 * Lu, Gong, Zhang, Xie and Yin 2021, sections 2, 3 and 6).
 *
 * - Field nodes: the grid nodes of the voxels with a label (design domain
 *   and passive regions), MLS shape functions of efg_mls.h.
 * - Integration: each such voxel is a background cell with 2x2x2 Gauss
 *   points; the shape functions and their gradients are computed once and
 *   kept per Gauss point (vox_efg_shapes), with the transposed lists per
 *   node for the node-pair assembly and the node-wise sensitivities.
 * - Nodal densities are the design variables (eq. 16). A node takes the
 *   role of the voxels around it: solid when one of them is passive solid
 *   (density fixed at 1), else void when one is passive void (fixed at the
 *   lower bound), else design.
 * - Essential boundary conditions by the penalty method (eq. 11, 13): the
 *   model's constraints and springs are nodal, so Gamma_u is sampled at the
 *   constrained nodes; each is a point x_p where the displacement field
 *   u(x_p) = sum_i phi_i(x_p) U_i is tied to the prescribed value by a
 *   spring of stiffness alpha (a spring of the model adds its own
 *   stiffness there, tied to zero). The point's blocks alpha phi_i phi_j
 *   join the stiffness matrix, alpha phi_i u_bar the load vector.
 * - Loads: a nodal force is a point force at the node's position, through
 *   the shape functions there (eq. 13); the model's distributed loads
 *   arrive lumped to nodes, so this is their nodal quadrature. A body force
 *   goes through the Gauss points (vox_efg_add_body_force). */
#ifndef VOXFE_EFG_MODEL_H
#define VOXFE_EFG_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "efg_mls.h"
#include "voxfe/context.h"
#include "voxfe/model.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct vox_efg_options {
  /* d_max of eq. 5: the support radius over the nearest-node distance (2.0,
   * the paper's section 6). */
  double support_scale;
  /* The penalty alpha of eq. 11 and 13 as a multiple of the largest
   * Young's modulus times the smallest voxel edge (a point spring, N/mm;
   * 1e4). The constraint holds to about one part in penalty_scale of the
   * local stiffness; larger values hold it closer and condition K worse. */
  double penalty_scale;
  double simp_penalty; /* p of eq. 17 (3) */
  double density_min;  /* rho_min of eq. 18, also the void nodes' density (1e-3) */
} vox_efg_options;

void vox_efg_options_default(vox_efg_options *o);

typedef struct vox_efg_model {
  vox_efg_options options;
  vox_efg_nodes nodes;
  uint8_t *node_role;       /* nodes.n: vox_material_role */

  size_t n_cells;           /* voxels with a label: the background cells */
  int64_t *cell_voxel;      /* n_cells: the voxel index of each, ascending */
  uint8_t *cell_role;       /* n_cells: the role of its material */
  vox_efg_shapes gauss;     /* 8 points per cell, cell-major, with gradients */
  double *gauss_weight;     /* per Gauss point: its quadrature weight, mm^3 */
  double *gauss_modulus;    /* per Gauss point: E of its cell's material, MPa */
  vox_efg_node_points node_gauss;

  vox_efg_shapes support;   /* one point per node with constraints or springs */
  int32_t *support_node;    /* per support point: its field node */
  double *support_stiffness; /* 3 per point: the springs on x, y, z (N/mm) of the
                              * design the last vox_efg_support_springs saw (at
                              * first: fixed + scaled) */
  double *support_fixed;    /* 3 per point: the model's springs, and alpha where the
                             * prescribed value is not 0 */
  double *support_scaled;   /* 3 per point: alpha where the component is held at 0,
                             * the springs that may follow the material there */
  double *support_value;    /* 3 per point: alpha * the prescribed value (N) */
  vox_efg_node_points node_support;

  double lambda, mu;        /* Lame constants of E = 1 and the model's nu */
  double alpha;             /* the penalty, N/mm */
} vox_efg_model;

/* The EFG discretisation of an elasticity model (heat conduction and
 * periodic cells are not supported). Constraints and loads must name nodes
 * of the domain. */
vox_status vox_efg_model_create(vox_context *ctx, const vox_model *model,
                                const vox_efg_options *options, vox_efg_model *efg);
void vox_efg_model_free(vox_efg_model *efg);

static inline size_t vox_efg_dofs(const vox_efg_model *efg) { return 3 * efg->nodes.n; }

/* f (vox_efg_dofs entries) = the point forces of load case `load_case`
 * through the shape functions at their nodes, plus the penalty terms
 * alpha phi_i u_bar of the prescribed displacements (eq. 13). */
vox_status vox_efg_load_vector(vox_context *ctx, const vox_efg_model *efg, const vox_model *model,
                               int load_case, double *f);

/* f += the integral of phi_i b over the domain (eq. 13's first term) for a
 * body force b (N/mm^3), by the Gauss points. */
void vox_efg_add_body_force(const vox_efg_model *efg, const double b[3], double *f);

/* The field of n_comp components with nodal parameters coef (n_comp per
 * field node) evaluated at the field nodes' positions: out[n_comp*i + c] =
 * sum_j phi_j(x_i) coef[n_comp*j + c]. The parameters of the MLS
 * approximation are not the field's values at the nodes (no Kronecker delta
 * property); these are. */
vox_status vox_efg_field_at_nodes(vox_context *ctx, const vox_efg_model *efg, int n_comp,
                                  const double *coef, double *out);

/* The nodal densities of a uniform start: design nodes `fraction`, solid
 * nodes 1, void nodes density_min. */
void vox_efg_initial_density(const vox_efg_model *efg, double fraction, double *rho);

#ifdef __cplusplus
}
#endif
#endif
