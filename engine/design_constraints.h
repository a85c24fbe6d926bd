/* SPDX-License-Identifier: BSD-3-Clause */
/* The design constraints of vox_optimize (private): the model's
 * (voxfe/model.h, vox_design_constraint), or where it has none the one
 * volume of the design domain at options.volume_fraction. Each has a value
 * at the evaluated design and, for the method of moving asymptotes, a
 * normalised row g <= 0 with its gradient with respect to the design
 * variables:
 *
 *   volume of a region r (a label's design elements, or all of them),
 *     V_r = sum_{e in r} rho_phys,e / N_r,  g = V_r / V* - 1,
 *     dg/dx = (H^T 1_r) / (N_r V*) through the density filter (1_r / (N_r V*)
 *     without it): the filtered density's derivative restricted to r;
 *   compliance of load case k,
 *     c_k = f_k.u_k,  g = c_k / c_max - 1,
 *     dc_k/drho_e = -p rho_e^(p-1) (1 - emin) E_e u_k,e' Ke u_k,e (the SIMP
 *     kernel of the objective's compliance), through the objective's own
 *     filter chain (the sensitivity filter or the density filter's
 *     transpose, and the symmetry's orbit means), divided by c_max.
 *
 * An equality V_r = V* is the two rows g <= 0 and -g <= 0 (MMA has no
 * equality constraints of its own: Svanberg 1987 takes inequalities). */
#ifndef VOXFE_DESIGN_CONSTRAINTS_H
#define VOXFE_DESIGN_CONSTRAINTS_H

#include "backend_ops.h"
#include "fem.h"
#include "layout.h"
#include "objective.h"
#include "voxfe/optimizer.h"

typedef struct vox_constraint_set vox_constraint_set;

/* The set's vectors per element (layout.h): a compliance constraint's
 * gradient and the scratch where `gradients`, a labelled region's mask
 * and, with the density filter, its volume gradient. set NULL: counted
 * only (the memory plan). */
void vox_constraints_layout(const vox_design_constraint *list, int n, vox_filter_type filter,
                            int gradients, size_t ne, vox_constraint_set *set, vox_layout *l);

/* For `model` (its labels and design constraints) with the design mask
 * `design` and its volume gradient `dv` (the mask, or its transpose
 * through the density filter), counting n_design design elements; `filter`
 * is the loop's (NULL without one). `gradients`: 1 where the MMA rows and
 * their gradients will be asked for, 0 where only the values will. */
vox_status vox_constraints_create(vox_backend *be, const vox_model *model,
                                  const vox_optimizer_options *opt, vox_filter *filter,
                                  const vox_vec *design, const vox_vec *dv, double n_design,
                                  int gradients, vox_constraint_set **out);
void vox_constraints_destroy(vox_constraint_set *set);

/* The model's design constraints (0 where the set holds only the implicit
 * volume) and the MMA rows (an equality counts two). */
int vox_constraints_count(const vox_constraint_set *set);
int vox_constraints_rows(const vox_constraint_set *set);

/* The value of each of the model's constraints at the physical density
 * x_phys, with the states the objective solved last (values: count). */
vox_status vox_constraints_values(vox_constraint_set *set, const vox_vec *x_phys,
                                  vox_objective_state *objective, vox_fem *fem, double *values);

/* After vox_constraints_values at the same design: the MMA rows g (rows)
 * and their gradients (vectors dg with factors dg_scale) at design
 * variables x, penalty p (the set's vectors, valid until the next call). */
vox_status vox_constraints_rows_at(vox_constraint_set *set, const vox_vec *x, const vox_vec *x_phys,
                                   vox_objective_state *objective, vox_fem *fem, double p,
                                   double *g, const vox_vec **dg, double *dg_scale);

/* The largest normalised violation max(0, g) over the rows of the last
 * vox_constraints_rows_at (0 with none): the loop's feasibility test. */
double vox_constraints_violation(const vox_constraint_set *set);

#endif
