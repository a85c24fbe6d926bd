/* SPDX-License-Identifier: BSD-3-Clause */
/* The optimality-criteria update of the EFG path's nodal densities (private;
 * Lu, Gong, Zhang, Xie and Yin 2021, eq. 21-22), one algorithm for the host
 * and the devices: the search for the multiplier below is shared code, and
 * only the volume's sum differs between them (fixed chunks on the host, a
 * grid's fixed tree on a GPU), so their results differ by rounding only.
 *
 * Node i's candidate for the multiplier lambda is
 *     rho_i B_i^eta clamped to [lo_i, hi_i],
 *     B_i = max(0, -dc_i) / (lambda dv_i),  lo_i, hi_i = rho_i -+ move in [rmin, 1]
 * (lo = hi = rho on nodes outside the design), with q > 1 raising it to q
 * as the FE path's intermediate-density exponent; a sensitivity of the
 * wrong sign, which slightly negative shape functions can leave, takes the
 * density down to its move limit. The volume sum_i dv_i
 * rho_i of the candidate (exact: the volume is linear in the nodal
 * densities) falls as t = log(lambda) grows, smoothly between the nodes'
 * clamps, so regula falsi with the Illinois modification (Dowell and
 * Jarratt 1971) takes a handful of passes where bisection takes 36. The
 * bracket starts around the last update's multiplier and widens until it
 * holds the target; it ends 1e-9 wide relative to lambda, as the FE path's
 * bisection, on the feasible side (the volume at or under the target). */
#ifndef VOXFE_EFG_OC_H
#define VOXFE_EFG_OC_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __CUDACC__
#define VOX_EFG_OC_FN __host__ __device__ static inline
#else
#define VOX_EFG_OC_FN static inline
#endif

typedef struct vox_efg_oc_options {
  double eta;        /* the damping exponent (1/2) */
  double move;       /* the move limit */
  double rmin;       /* the smallest density */
  double q;          /* the intermediate-density exponent (1: none) */
  double target;     /* the volume to meet, mm^3 */
  double log_lambda; /* the last update's log(lambda), NaN for none: the widest bracket */
} vox_efg_oc_options;

typedef struct vox_efg_oc_result {
  double log_lambda; /* the multiplier found */
  double volume;     /* sum_i dv_i rho_i of the design going in */
  double change;     /* max_i |rho_new_i - rho_i| */
  int passes;        /* the volume sums the search took */
} vox_efg_oc_result;

/* The candidate for s = lambda^-eta from base = rho B^eta lambda^eta. */
VOX_EFG_OC_FN double vox_efg_oc_density(double base, double lo, double hi, double s, double q,
                                       double rmin) {
  const double trial = base * s;
  return trial <= lo ? lo : trial >= hi ? hi : (q == 1 ? trial : fmax(rmin, pow(trial, q)));
}

/* Node i's base and bounds; returns B_i lambda (the widest bracket's scale).
 * sqrt for the usual eta = 1/2: a few times quicker than pow. */
VOX_EFG_OC_FN double vox_efg_oc_node(const vox_efg_oc_options *o, double rho, double dc,
                                    double dv, int design, double *base, double *lo,
                                    double *hi) {
  const double b = dv > 0 ? fmax(0.0, -dc) / dv : 0;
  *base = design ? rho * (o->eta == 0.5 ? sqrt(b) : pow(b, o->eta)) : 0;
  *lo = design ? fmax(o->rmin, rho - o->move) : rho;
  *hi = design ? fmin(1.0, rho + o->move) : rho;
  return b;
}

/* The search for t = log(lambda) as a state machine, so that a device runs
 * it in every thread alike between its grid-wide sums: next gives the t
 * whose volume excess (volume - target) take wants, until it returns 0;
 * then hi is the answer. */
typedef struct vox_efg_oc_search {
  double t_min, t_max, width, lo, hi, f_lo, f_hi, d, t;
  int phase, around, replaced, step;
} vox_efg_oc_search;

enum { VOX_EFG_OC_LO, VOX_EFG_OC_HI, VOX_EFG_OC_WIDEN_LO, VOX_EFG_OC_WIDEN_HI, VOX_EFG_OC_SOLVE };

/* b_max: the largest B_i lambda (vox_efg_oc_node's). */
VOX_EFG_OC_FN void vox_efg_oc_search_begin(vox_efg_oc_search *s, const vox_efg_oc_options *o,
                                           double b_max) {
  /* the widest bracket: the FE path's [1e-40, 1] 1e9 max B */
  s->t_max = log(1e9 * (b_max > 0 ? b_max : 1));
  s->t_min = s->t_max + log(1e-40);
  s->width = 2e-9;
  s->lo = s->t_min, s->hi = s->t_max, s->f_lo = s->f_hi = 0;
  s->d = 0.05;
  s->around = o->log_lambda > s->t_min && o->log_lambda < s->t_max;
  if (s->around) /* widen [c - d, c + d] around the last multiplier until it brackets */
    s->lo = fmax(s->t_min, o->log_lambda - s->d), s->hi = fmin(s->t_max, o->log_lambda + s->d);
  s->phase = VOX_EFG_OC_LO, s->replaced = 0, s->step = 0, s->t = s->lo;
}

/* Settles the bracket once both ends are known: widens it while it does not
 * hold the target, else clamps it to what can be met. */
VOX_EFG_OC_FN void vox_efg_oc_search_bracket(vox_efg_oc_search *s) {
  if (s->around && ((s->f_lo <= 0 && s->lo > s->t_min) || (s->f_hi > 0 && s->hi < s->t_max))) {
    s->d *= 4;
    if (s->f_lo <= 0 && s->lo > s->t_min) {
      s->hi = s->lo, s->f_hi = s->f_lo, s->lo = fmax(s->t_min, s->lo - s->d);
      s->phase = VOX_EFG_OC_WIDEN_LO, s->t = s->lo;
    } else {
      s->lo = s->hi, s->f_lo = s->f_hi, s->hi = fmin(s->t_max, s->hi + s->d);
      s->phase = VOX_EFG_OC_WIDEN_HI, s->t = s->hi;
    }
    return;
  }
  /* under the target even at the smallest multiplier */
  if (s->f_lo <= 0) s->hi = s->lo, s->f_hi = s->f_lo;
  /* over it even at the largest: as close as it goes */
  if (s->f_hi > 0) s->lo = s->hi, s->f_lo = s->f_hi;
  s->phase = VOX_EFG_OC_SOLVE;
}

VOX_EFG_OC_FN int vox_efg_oc_search_next(vox_efg_oc_search *s, double *t) {
  if (s->phase == VOX_EFG_OC_SOLVE) {
    if (!(s->hi - s->lo > s->width && s->f_hi != 0 && s->f_lo > 0 && s->step < 200)) return 0;
    double u = s->lo + (s->hi - s->lo) * (s->f_lo / (s->f_lo - s->f_hi));
    if (!(u > s->lo && u < s->hi) || s->step % 8 == 7)
      u = 0.5 * (s->lo + s->hi); /* a bisection now and then */
    s->t = u;
  }
  *t = s->t;
  return 1;
}

VOX_EFG_OC_FN void vox_efg_oc_search_take(vox_efg_oc_search *s, double f) {
  switch (s->phase) {
  case VOX_EFG_OC_LO:
    s->f_lo = f, s->phase = VOX_EFG_OC_HI, s->t = s->hi;
    return;
  case VOX_EFG_OC_HI:
  case VOX_EFG_OC_WIDEN_HI:
    s->f_hi = f;
    vox_efg_oc_search_bracket(s);
    return;
  case VOX_EFG_OC_WIDEN_LO:
    s->f_lo = f;
    vox_efg_oc_search_bracket(s);
    return;
  default:
    if (f > 0) {
      s->lo = s->t, s->f_lo = f;
      if (s->replaced == -1) s->f_hi *= 0.5; /* hi kept twice: Illinois */
      s->replaced = -1;
    } else {
      s->hi = s->t, s->f_hi = f;
      if (s->replaced == 1) s->f_lo *= 0.5;
      s->replaced = 1;
    }
    s->step++;
  }
}

#ifdef __cplusplus
extern "C" {
#endif

/* The update on host arrays of n nodes: rho_new and *res from rho, the
 * sensitivities dc, the volume sensitivities dv and the design mask; work
 * holds 3 n doubles. Its volume sums run on OpenMP's threads from
 * VOX_EFG_OC_PARALLEL_NODES nodes, in chunks of a fixed size summed in
 * order: the same bits on any number of threads. */
void vox_efg_oc_update(const vox_efg_oc_options *o, size_t n, const double *rho, const double *dc,
                       const double *dv, const uint8_t *design, double *work, double *rho_new,
                       vox_efg_oc_result *res);

/* Sum over the design cells (cell_role VOX_ROLE_DESIGN) of d (1 - d), d
 * the mean of the cell's 8 Gauss points' densities (its voxel density):
 * the measure of non-discreteness in percent is 400 / n_design_cells
 * times it (Sigmund 2007). */
double vox_efg_non_discreteness_sum(size_t n_cells, const uint8_t *cell_role,
                                    const double *rho_gauss);

#ifdef __cplusplus
}
#endif

#endif
