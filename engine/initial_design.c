/* SPDX-License-Identifier: BSD-3-Clause */
/* Initial designs (voxfe/initial_design.h). The sums y_e are computed into
 * rho, then mapped through the sigmoid in place once its shift mu is found.
 * Every element is independent of the others, and the reductions of the
 * bisection are summed per z-slice and then in slice order, so the result is
 * the same for any number of threads. */
#include "voxfe/initial_design.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "backend_ops.h" /* vox_hash_uniform */
#include "symmetry_group.h"
#include "target_clones.h" /* row_sums: same bits in both clones (CMakeLists.txt) */

/* Zhang et al. 2023 section 6.2 */
#define SIGMOID_K 15.0
#define MAX_ORDER 8


static const char *const names[] = {"uniform", "random", "trigonometric"};

const char *vox_initial_name(vox_initial_kind kind) {
  return (unsigned)kind < 3 ? names[kind] : "unknown";
}

int vox_initial_parse(const char *text, vox_initial_kind *kind) {
  for (int i = 0; i < 3; i++)
    if (strcmp(text, names[i]) == 0) {
      *kind = (vox_initial_kind)i;
      return 0;
    }
  if (strcmp(text, "trig") == 0) {
    *kind = VOX_INITIAL_TRIGONOMETRIC;
    return 0;
  }
  return -1;
}

void vox_initial_design_defaults(vox_initial_design *d) {
  *d = (vox_initial_design){.kind = VOX_INITIAL_UNIFORM,
                            .volume_fraction = 0.3,
                            .rho_min = 1e-3,
                            .seed = 1,
                            .order = 2,
                            .symmetry = VOX_SYMMETRY_NONE};
}

/* A number in [-1, 1) from the seed: the design's random stream. Index 0..3
 * make the quaternion, 4 on the weights; "random" uses the element index. */
static double draw(uint64_t seed, uint64_t i) { return 2 * vox_hash_uniform(seed, i); }

/* The rotation matrix of the normalised quaternion (w, x, y, z). */
static void quaternion_rotation(uint64_t seed, double r[3][3]) {
  double q[4], norm = 0;
  for (int i = 0; i < 4; i++) {
    q[i] = draw(seed, (uint64_t)i);
    norm += q[i] * q[i];
  }
  norm = sqrt(norm);
  if (!(norm > 1e-12)) q[0] = 1, q[1] = q[2] = q[3] = 0, norm = 1; /* never in practice */
  const double w = q[0] / norm, x = q[1] / norm, y = q[2] / norm, z = q[3] / norm;
  r[0][0] = 1 - 2 * (y * y + z * z), r[0][1] = 2 * (x * y - w * z), r[0][2] = 2 * (x * z + w * y);
  r[1][0] = 2 * (x * y + w * z), r[1][1] = 1 - 2 * (x * x + z * z), r[1][2] = 2 * (y * z - w * x);
  r[2][0] = 2 * (x * z - w * y), r[2][1] = 2 * (y * z + w * x), r[2][2] = 1 - 2 * (x * x + y * y);
}

/* One row of y_e = sum_a w_a p_a + sum_{a <= b} w_ab p_a p_b (the x
 * parts' cosines and sines cx, sx; the row's cr, sr): each function p_a of
 * the row first (nb rows of nx in p), then the sums, each step a loop along
 * the row that the compiler vectorises. Every element takes the same
 * operations in the same order as one summed alone: sum_a p_a (w_a +
 * sum_{b >= a} w_ab p_b), nb short chains that overlap. */
HOT_CLONES static void row_sums(int order, int64_t nx, const double *restrict cx,
                                const double *restrict sx, const double *cr, const double *sr,
                                const double *w, double *restrict p, double *restrict q,
                                double *restrict y) {
  const int nb = 6 * order;
  int n = 0;
  for (int a = 0; a < 3; a++)
    for (int f = 1; f <= order; f++, n += 2) {
      const int u = 3 * (f - 1) + a;
      const double *c = cx + u * nx, *sn = sx + u * nx, cu = cr[u], su = sr[u];
      double *pc = p + n * nx, *ps = p + (n + 1) * nx;
      for (int64_t i = 0; i < nx; i++) {
        pc[i] = c[i] * cu - sn[i] * su; /* cos(x part + row part) */
        ps[i] = sn[i] * cu + c[i] * su; /* sin */
      }
    }
  for (int64_t i = 0; i < nx; i++) y[i] = 0;
  int t = nb;
  for (int a = 0; a < nb; a++) {
    for (int64_t i = 0; i < nx; i++) q[i] = w[a];
    for (int b = a; b < nb; b++, t++) {
      const double wt = w[t], *pb = p + b * nx;
      for (int64_t i = 0; i < nx; i++) q[i] += wt * pb[i];
    }
    const double *pa = p + a * nx;
    for (int64_t i = 0; i < nx; i++) y[i] += pa[i] * q[i];
  }
}

/* y_e over T_n (6n functions: for each axis i, for k = 1..n, cos then sin
 * of 2 pi k xb_i). xb_i = r_i0 x + r_i1 y + r_i2 z is the x part plus the
 * row's part, so each function is the angle sum of two: the x parts'
 * cosines and sines are tabled once per i, the row's once per row, and an
 * element takes four products a function instead of a sine and a cosine. */
static vox_status trigonometric_sums(vox_context *ctx, const vox_grid *grid, uint64_t seed,
                                     int order, int nt, double *y) {
  const int nb = 6 * order, nw = nb + nb * (nb + 1) / 2;
  double r[3][3], w[6 * MAX_ORDER + 6 * MAX_ORDER * (6 * MAX_ORDER + 1) / 2];
  quaternion_rotation(seed, r);
  for (int t = 0; t < nw; t++) w[t] = draw(seed, 4 + (uint64_t)t);
  const int64_t nx = grid->nx, ny = grid->ny, nz = grid->nz;
  const double two_pi = 2 * 3.14159265358979323846;
  /* cos and sin of 2 pi f r_a0 x(i), function (a, f) at [(3 f' + a) nx + i]
   * with f' = f - 1 */
  double *cx = malloc(2 * (size_t)(3 * order * nx) * sizeof *cx);
  if (!cx) return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory for the initial design");
  double *sx = cx + 3 * order * nx;
  for (int f = 1; f <= order; f++)
    for (int a = 0; a < 3; a++)
      for (int64_t i = 0; i < nx; i++) {
        const double t = two_pi * f * (r[a][0] * ((i + 0.5) / nx - 0.5));
        cx[(3 * (f - 1) + a) * nx + i] = cos(t), sx[(3 * (f - 1) + a) * nx + i] = sin(t);
      }
  int failed = 0;
#pragma omp parallel num_threads(nt) reduction(| : failed)
  {
    double *p = malloc((size_t)(nb + 1) * (size_t)nx * sizeof *p); /* and q */
    failed = !p;
#pragma omp for collapse(2) schedule(static)
    for (int64_t k = 0; k < nz; k++)
      for (int64_t j = 0; j < ny; j++) {
        if (!p) continue;
        const double yy = (j + 0.5) / ny - 0.5, zz = (k + 0.5) / nz - 0.5;
        double cr[3 * MAX_ORDER], sr[3 * MAX_ORDER]; /* the row's parts */
        for (int f = 1; f <= order; f++)
          for (int a = 0; a < 3; a++) {
            const double t = two_pi * f * (r[a][1] * yy + r[a][2] * zz);
            cr[3 * (f - 1) + a] = cos(t), sr[3 * (f - 1) + a] = sin(t);
          }
        row_sums(order, nx, cx, sx, cr, sr, w, p, p + nb * nx, y + (k * ny + j) * nx);
      }
    free(p);
  }
  free(cx);
  return failed ? vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory for the initial design")
                : VOX_OK;
}

static double sigmoid(double y, double mu, double rho_min, double v_hat) {
  return rho_min + v_hat / (1 + exp(-SIGMOID_K * (y - mu)));
}

/* The mean of S(y) over the grid's elements in the mask (all without one),
 * summed per z-slice in a fixed order; n_mask of them. Its derivative in mu
 * into *slope (dS/dmu = -k (S - rho_min) (1 - (S - rho_min) / v_hat)), from
 * the same exponentials. */
static double mean_density(const vox_grid *grid, const uint8_t *mask, int64_t n_mask,
                           const double *y, double mu, double rho_min, double v_hat, int nt,
                           double *slice, double *slope) {
  const int64_t per_slice = grid->nx * grid->ny, nz = grid->nz;
#pragma omp parallel for num_threads(nt) schedule(static)
  for (int64_t k = 0; k < nz; k++) {
    double s = 0, d = 0;
    for (int64_t e = k * per_slice; e < (k + 1) * per_slice; e++)
      if (!mask || mask[e]) {
        const double a = sigmoid(y[e], mu, rho_min, v_hat) - rho_min;
        s += a;
        d += a * (1 - a / v_hat);
      }
    slice[2 * k] = s;
    slice[2 * k + 1] = d;
  }
  double total = 0, derivative = 0;
  for (int64_t k = 0; k < nz; k++) total += slice[2 * k], derivative += slice[2 * k + 1];
  *slope = -SIGMOID_K * derivative / (double)n_mask;
  return rho_min + total / (double)n_mask;
}

/* rho = S(y) with mu such that the mean over the mask is V; 0 outside. */
static vox_status project(vox_context *ctx, const vox_grid *grid, const uint8_t *mask,
                          int64_t n_mask, double V, double rho_min, int nt, double *y) {
  const int64_t ne = vox_grid_elements(grid);
  const double v_hat = fmin(1.5 * V, 1 - rho_min);
  double *slice = malloc(2 * (size_t)grid->nz * sizeof *slice);
  if (!slice) return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory for the initial design");
  double lo = INFINITY, hi = -INFINITY;
#pragma omp parallel for num_threads(nt) schedule(static) reduction(min : lo) reduction(max : hi)
  for (int64_t e = 0; e < ne; e++)
    if (!mask || mask[e]) lo = fmin(lo, y[e]), hi = fmax(hi, y[e]);
  /* beyond 40/k of the values every element is at one end of the sigmoid
   * (to e^-40), so the mean brackets V there */
  lo -= 40 / SIGMOID_K, hi += 40 / SIGMOID_K;
  /* Newton's method in mu, kept inside the bracket [lo, hi] (a step that
   * leaves it bisects instead): each pass over the grid costs an
   * exponential an element, and at 512^3 bisection's 45 passes took
   * seconds where Newton takes a handful */
  double mu = 0.5 * (lo + hi);
  for (int it = 0; it < 200 && hi - lo > 1e-13 * (1 + fabs(mu)); it++) {
    double slope;
    const double m = mean_density(grid, mask, n_mask, y, mu, rho_min, v_hat, nt, slice, &slope);
    if (fabs(m - V) <= 1e-12 * V) break;
    if (m > V) /* the mean falls as mu rises */
      lo = mu;
    else
      hi = mu;
    const double next = slope < 0 ? mu - (m - V) / slope : NAN;
    mu = next > lo && next < hi ? next : 0.5 * (lo + hi);
  }
  free(slice);
#pragma omp parallel for num_threads(nt) schedule(static)
  for (int64_t e = 0; e < ne; e++) y[e] = !mask || mask[e] ? sigmoid(y[e], mu, rho_min, v_hat) : 0;
  return VOX_OK;
}

vox_status vox_initial_design_make(vox_context *ctx, const vox_grid *grid,
                                   const vox_initial_design *d, double *rho) {
  return vox_initial_design_make_masked(ctx, grid, d, NULL, rho);
}

vox_status vox_initial_design_make_masked(vox_context *ctx, const vox_grid *grid,
                                          const vox_initial_design *d, const uint8_t *mask,
                                          double *rho) {
  if ((unsigned)d->kind > VOX_INITIAL_TRIGONOMETRIC)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "unknown initial design %d", (int)d->kind);
  if (!(d->rho_min >= 0 && d->rho_min < 1))
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "initial design: the least density %g must be in [0, 1)", d->rho_min);
  if (!(d->volume_fraction > d->rho_min && d->volume_fraction < 1))
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "initial design: the volume fraction %g must lie between the least density "
                     "%g and 1",
                     d->volume_fraction, d->rho_min);
  if (d->kind == VOX_INITIAL_TRIGONOMETRIC && (d->order < 1 || d->order > MAX_ORDER))
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "initial design: the trigonometric order %d must be 1 to %d", d->order,
                     MAX_ORDER);
  TRY(vox_symmetry_check(ctx, grid, d->symmetry));
  const int64_t ne = vox_grid_elements(grid);
  if (ne <= 0) return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "initial design: an empty grid");
  int64_t n_mask = ne;
  if (mask) {
    n_mask = 0;
#pragma omp parallel for schedule(static) reduction(+ : n_mask)
    for (int64_t e = 0; e < ne; e++) n_mask += mask[e] != 0;
    if (n_mask == 0)
      return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "initial design: no element in the mask");
    /* the same on every orbit: averaging over the orbits then keeps the
     * masked elements' mean */
    if (d->symmetry != VOX_SYMMETRY_NONE &&
        !vox_symmetry_holds_mask(grid, d->symmetry, mask, vox_context_threads(ctx)))
      return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                       "initial design: the design domain does not have the symmetry %s (its "
                       "passive or empty voxels are not symmetric)",
                       vox_symmetry_name(d->symmetry));
  }
  const int threads = vox_context_threads(ctx);
  const int nt = threads > 0 ? threads : omp_get_max_threads();
  vox_status st = VOX_OK;
  switch (d->kind) {
    case VOX_INITIAL_UNIFORM:
      for (int64_t e = 0; e < ne; e++) rho[e] = !mask || mask[e] ? d->volume_fraction : 0;
      break;
    case VOX_INITIAL_RANDOM:
#pragma omp parallel for num_threads(nt) schedule(static)
      for (int64_t e = 0; e < ne; e++) rho[e] = draw(d->seed, (uint64_t)e);
      break;
    case VOX_INITIAL_TRIGONOMETRIC:
      st = trigonometric_sums(ctx, grid, d->seed, d->order, nt, rho);
      break;
  }
  if (d->kind == VOX_INITIAL_UNIFORM) return VOX_OK; /* symmetric already */
  /* The sums are made symmetric before the sigmoid, which then spreads the
   * orbit means over [rho_min, rho_min + V^] again. Averaging the projected
   * densities instead (48 members for reflect6) left a start close to the
   * trivial uniform design: a 32^3 bulk-modulus cell from it stopped at
   * the uniform design's modulus after 5 iterations. The sigmoid acts
   * element by element, so equal sums give equal densities: the start
   * stays symmetric to the bit. */
  if (st == VOX_OK && d->symmetry != VOX_SYMMETRY_NONE)
    st = vox_symmetrize(ctx, grid, d->symmetry, rho);
  if (st == VOX_OK) st = project(ctx, grid, mask, n_mask, d->volume_fraction, d->rho_min, nt, rho);
  return st;
}
