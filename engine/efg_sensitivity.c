/* SPDX-License-Identifier: BSD-3-Clause */
/* Densities, SIMP and sensitivities of the EFG topology optimization
 * (efg_sensitivity.h). Every loop writes one entry per iteration: the Gauss
 * point loops their point's, the node loops their node's, so none races. */
#include "efg_sensitivity.h"

#include <math.h>
#include <string.h>

void vox_efg_gauss_density(const vox_efg_model *efg, const double *rho_nodes, double *rho_gauss) {
  const vox_efg_shapes *gs = &efg->gauss;
#pragma omp parallel for schedule(static)
  for (ptrdiff_t g = 0; g < (ptrdiff_t)gs->n_points; g++) {
    double r = 0;
    for (size_t e = gs->start[g]; e < gs->start[g + 1]; e++)
      r += gs->phi[e] * rho_nodes[gs->node[e]];
    rho_gauss[g] = r;
  }
}

void vox_efg_voxel_density(const vox_efg_model *efg, const double *rho_gauss, double *voxel) {
  const vox_grid *g = &efg->nodes.grid;
  memset(voxel, 0, (size_t)vox_grid_elements(g) * sizeof *voxel);
  /* threads only where the pass is longer than waking them */
#pragma omp parallel for schedule(static) if (efg->n_cells >= 16384)
  for (ptrdiff_t c = 0; c < (ptrdiff_t)efg->n_cells; c++) {
    double s = 0;
    for (int q = 0; q < 8; q++) s += rho_gauss[8 * c + q];
    voxel[efg->cell_voxel[c]] = s / 8;
  }
}

/* rho floored at zero; *inside: whether it was above. (Not clamped to
 * [rho_min, 1]: void and solid regions interpolate to rho_min and 1 give or
 * take a rounding error, and a clamp there would zero their derivatives by
 * the rounding's sign.) */
static inline double floored(double rho, int *inside) {
  *inside = rho > 0;
  return rho > 0 ? rho : 0.0;
}

void vox_efg_gauss_scale(const vox_efg_model *efg, const double *rho_gauss, double *scale) {
  const vox_efg_options *o = &efg->options;
#pragma omp parallel for schedule(static)
  for (ptrdiff_t g = 0; g < (ptrdiff_t)efg->gauss.n_points; g++) {
    int inside;
    const double r = floored(rho_gauss[g], &inside);
    scale[g] = efg->gauss_weight[g] * efg->gauss_modulus[g] * pow(r, o->simp_penalty);
  }
}

void vox_efg_strain_energy(const vox_efg_model *efg, const double *u, double *q) {
  const vox_efg_shapes *gs = &efg->gauss;
  const double lam = efg->lambda, mu = efg->mu;
#pragma omp parallel for schedule(static)
  for (ptrdiff_t g = 0; g < (ptrdiff_t)gs->n_points; g++) {
    double du[3][3] = {{0}}; /* du[a][k] = d u_a / d x_k */
    for (size_t e = gs->start[g]; e < gs->start[g + 1]; e++) {
      const double *d = gs->dphi + 3 * e, *ue = u + 3 * (size_t)gs->node[e];
      for (int a = 0; a < 3; a++)
        for (int k = 0; k < 3; k++) du[a][k] += ue[a] * d[k];
    }
    const double tr = du[0][0] + du[1][1] + du[2][2];
    double ee = 0; /* eps : eps */
    for (int a = 0; a < 3; a++)
      for (int k = 0; k < 3; k++) {
        const double eps = 0.5 * (du[a][k] + du[k][a]);
        ee += eps * eps;
      }
    q[g] = lam * tr * tr + 2 * mu * ee;
  }
}

void vox_efg_compliance_sensitivity(const vox_efg_model *efg, const double *rho_gauss,
                                    const double *q, double *dc) {
  const vox_efg_options *o = &efg->options;
  const vox_efg_shapes *gs = &efg->gauss;
  const vox_efg_node_points *np = &efg->node_gauss;
  const double p = o->simp_penalty;
#pragma omp parallel for schedule(static)
  for (ptrdiff_t i = 0; i < (ptrdiff_t)efg->nodes.n; i++) {
    double s = 0;
    for (size_t k = np->start[i]; k < np->start[i + 1]; k++) {
      const size_t g = np->point[k];
      int inside;
      const double r = floored(rho_gauss[g], &inside);
      if (!inside) continue;
      s += efg->gauss_weight[g] * efg->gauss_modulus[g] * p * pow(r, p - 1) *
           gs->phi[np->entry[k]] * q[g];
    }
    dc[i] = -s;
  }
}

double vox_efg_volume(const vox_efg_model *efg, const double *rho_gauss) {
  double v = 0;
#pragma omp parallel for schedule(static) reduction(+ : v)
  for (ptrdiff_t g = 0; g < (ptrdiff_t)efg->gauss.n_points; g++)
    if (efg->cell_role[g / 8] == VOX_ROLE_DESIGN)
      v += efg->gauss_weight[g] * (rho_gauss ? rho_gauss[g] : 1.0);
  return v;
}

void vox_efg_volume_sensitivity(const vox_efg_model *efg, double *dv) {
  const vox_efg_shapes *gs = &efg->gauss;
  const vox_efg_node_points *np = &efg->node_gauss;
#pragma omp parallel for schedule(static)
  for (ptrdiff_t i = 0; i < (ptrdiff_t)efg->nodes.n; i++) {
    double s = 0;
    for (size_t k = np->start[i]; k < np->start[i + 1]; k++) {
      const size_t g = np->point[k];
      if (efg->cell_role[g / 8] == VOX_ROLE_DESIGN)
        s += efg->gauss_weight[g] * gs->phi[np->entry[k]];
    }
    dv[i] = s;
  }
}

/* rho_p, the MLS density at penalty point q. */
static double support_density(const vox_efg_shapes *ss, size_t q, const double *rho_nodes) {
  double r = 0;
  for (size_t e = ss->start[q]; e < ss->start[q + 1]; e++)
    r += ss->phi[e] * rho_nodes[ss->node[e]];
  return r;
}

void vox_efg_support_springs(const vox_efg_model *efg, const double *rho_nodes) {
  const vox_efg_shapes *ss = &efg->support;
  const double p = efg->options.simp_penalty;
  for (size_t q = 0; q < ss->n_points; q++) {
    int inside;
    const double f = pow(floored(support_density(ss, q, rho_nodes), &inside), p);
    for (int c = 0; c < 3; c++)
      efg->support_stiffness[3 * q + c] =
          efg->support_fixed[3 * q + c] + f * efg->support_scaled[3 * q + c];
  }
}

void vox_efg_support_sensitivity(const vox_efg_model *efg, const double *rho_nodes,
                                 const double *u, double *g, double *dc) {
  const vox_efg_shapes *ss = &efg->support;
  const vox_efg_node_points *ns = &efg->node_support;
  const double p = efg->options.simp_penalty;
  for (size_t q = 0; q < ss->n_points; q++) {
    int inside;
    const double r = floored(support_density(ss, q, rho_nodes), &inside);
    double up[3] = {0, 0, 0};
    for (size_t e = ss->start[q]; e < ss->start[q + 1]; e++)
      for (int c = 0; c < 3; c++) up[c] += ss->phi[e] * u[3 * (size_t)ss->node[e] + c];
    double e2 = 0;
    for (int c = 0; c < 3; c++) e2 += efg->support_scaled[3 * q + c] * up[c] * up[c];
    g[q] = inside ? p * pow(r, p - 1) * e2 : 0;
  }
#pragma omp parallel for schedule(static) if (efg->nodes.n >= 65536)
  for (ptrdiff_t i = 0; i < (ptrdiff_t)efg->nodes.n; i++) {
    double s = 0;
    for (size_t k = ns->start[i]; k < ns->start[i + 1]; k++)
      s += ss->phi[ns->entry[k]] * g[ns->point[k]];
    dc[i] -= s;
  }
}
