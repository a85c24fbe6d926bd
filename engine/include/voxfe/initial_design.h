/* SPDX-License-Identifier: BSD-3-Clause */
/* Initial designs of a periodic unit cell (Zhang et al. 2023 section 6.2): the
 * problem of inverse homogenization has many local minima, and the start
 * decides which one the optimizer finds.
 *
 *   uniform        every element at the volume fraction (the trivial
 *                  stationary point: only symmetry-breaking noise moves it);
 *   random         independent values per element from the seed;
 *   trigonometric  a random combination of the functions
 *                    T_n = {cos 2 pi k xb_i, sin 2 pi k xb_i : 0 < k <= n, i = 0, 1, 2}
 *                  and their pairwise products (Q_n, with the squares),
 *                  where xb = R_q (x - b): x the element centre in the unit
 *                  cell, b its centre (0.5, 0.5, 0.5), R_q the rotation of a
 *                  normalised quaternion of 4 random entries. Each function
 *                  has a weight drawn from [-1, 1).
 *
 * The random and trigonometric sums y_e (averaged over the orbits of the
 * symmetry first, when one is asked for) go through Zhang et al. 2023's rescaled
 * sigmoid S(y) = rho_min + V^ / (1 + exp(-k (y - mu))), k = 15,
 * V^ = min(1.5 V, 1 - rho_min) (so that rho <= 1), with mu found by
 * bisection so that the mean density is the volume fraction V; every value
 * is in [rho_min, 1]. The random numbers come from vox_hash_uniform(seed,
 * index), so a seed gives the same design on any machine and thread count.
 * Coordinates are normalised per axis (a box grid is mapped onto the unit
 * cube). */
#ifndef VOXFE_INITIAL_DESIGN_H
#define VOXFE_INITIAL_DESIGN_H

#include <stdint.h>

#include "voxfe/context.h"
#include "voxfe/model.h"
#include "voxfe/symmetry.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum vox_initial_kind {
  VOX_INITIAL_UNIFORM,
  VOX_INITIAL_RANDOM,
  VOX_INITIAL_TRIGONOMETRIC
} vox_initial_kind;

/* "uniform", "random", "trigonometric" */
const char *vox_initial_name(vox_initial_kind kind);
/* 0 and *kind set for a name above (or "trig"), -1 otherwise */
int vox_initial_parse(const char *text, vox_initial_kind *kind);

typedef struct vox_initial_design {
  vox_initial_kind kind;
  double volume_fraction; /* V, in (rho_min, 1) */
  double rho_min;         /* lower bound of the densities, in [0, V) */
  uint64_t seed;
  int order;              /* n of T_n, 1..8 (trigonometric) */
  vox_symmetry symmetry;  /* the sums averaged over its orbits before the sigmoid */
} vox_initial_design;

/* Defaults: uniform, V = 0.3, rho_min = 1e-3, seed 1, order 2, no symmetry. */
void vox_initial_design_defaults(vox_initial_design *design);

/* Fills rho (one value per element of `grid`, x fastest) with the design.
 * Fails with VOX_ERR_INVALID_ARGUMENT for values out of range, and for a
 * symmetry the grid cannot have. */
vox_status vox_initial_design_make(vox_context *ctx, const vox_grid *grid,
                                   const vox_initial_design *design, double *rho);

/* The same on the elements where mask[e] != 0 (the design domain of a model
 * with passive or empty voxels; NULL: every element): the mean over them is
 * the volume fraction, the elements outside the mask get 0, and the random
 * numbers are those of the unmasked design (element e draws the same
 * number). With a symmetry the mask must have it too (VOX_ERR_INVALID_ARGUMENT
 * otherwise), so that orbits do not mix masked and unmasked elements. */
vox_status vox_initial_design_make_masked(vox_context *ctx, const vox_grid *grid,
                                          const vox_initial_design *design, const uint8_t *mask,
                                          double *rho);

#ifdef __cplusplus
}
#endif
#endif
