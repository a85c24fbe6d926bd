/* SPDX-License-Identifier: BSD-3-Clause */
/* The backend operations of the method of moving asymptotes (private):
 * the per-variable work of Svanberg's `mmasub`, `subsolv` and `kktcheck`
 * (the asymptotes, the move limits, the approximations' p and q, the
 * interior point's per-variable updates and the sums over the variables
 * that its dual Newton system and its residual need) and of the dual
 * method's x(lambda) and its sums (mma_dual.c), one table per
 * backend, reached through vox_backend_ops.mma (NULL where the backend has
 * none). mma.c keeps the few dual variables (m of them) on the host and
 * calls these for everything of n entries, which stays where the backend's
 * vectors are.
 *
 * The sums over the variables run in a fixed order on each backend (the
 * CPU: 64 blocks of consecutive variables, added in block order, whatever
 * the thread count; CUDA: a fixed grid whose partial sums are added in
 * block order, no atomics), so that a run repeats itself to the bit. The
 * two backends differ by the order of those sums only: each variable's
 * arithmetic is the same operations in the same order (CUDA without fused
 * multiply-adds). */
#ifndef VOXFE_MMA_OPS_H
#define VOXFE_MMA_OPS_H

#include "backend_ops.h"
#include "voxfe/mma.h"

/* The method's vectors on the backend, n entries each but P, Q and dfdx:
 * m rows of n, row i from entry i n. mma.c makes them (vox_mma_layout) and
 * may swap two of the same role (x and xo, ...) instead of copying. */
typedef struct vox_mma_vectors {
  size_t n;
  int m;
  /* an outer iteration's inputs, which the caller fills: the variables,
   * their bounds, the objective's and the constraints' gradients */
  vox_vec xval, xmin, xmax, df0dx, dfdx;
  /* the history: the last two iterates and the asymptotes */
  vox_vec xold1, xold2, low, upp;
  /* the subproblem: the move limits and the approximations' p and q */
  vox_vec alfa, beta, p0, q0, P, Q;
  /* the interior point: x and the bound multipliers, their values before
   * the step, the step, and Newton's delx and diagx */
  vox_vec x, xsi, eta, xo, xsio, etao, dx, dxsi, deta, delx, diagx;
} vox_mma_vectors;

typedef struct vox_mma_work vox_mma_work;     /* the sums' work space, by each backend */
typedef struct vox_index_map vox_index_map;   /* the design elements, by each backend */

typedef struct vox_mma_ops {
  /* The work space of the sums for n variables and m constraints. */
  vox_status (*work_create)(vox_backend *be, size_t n, int m, vox_mma_work **out);
  void (*work_destroy)(vox_backend *be, vox_mma_work *w);
  /* mmasub at xval: the asymptotes low, upp (Svanberg's first two
   * iterations where `first`, else from xold1, xold2 and the last ones),
   * the move limits alfa, beta, the approximations p0, q0, P, Q (o's
   * asymptote_*, move, albefa, raa0), and b_i = sum_j P_ij / (upp_j -
   * xval_j) + Q_ij / (xval_j - low_j) (m, host). *bad: some xval, df0dx or
   * dfdx is not finite or xval lies outside its bounds (or a bound range
   * is negative); nothing else is defined then. */
  vox_status (*approximate)(vox_backend *be, vox_mma_work *w, const vox_mma_vectors *v,
                            const vox_mma_options *o, int first, double *b, int *bad);
  /* subsolv's start: x = (alfa + beta) / 2, xsi = max(1, 1 / (x - alfa)),
   * eta = max(1, 1 / (beta - x)). */
  vox_status (*start)(vox_backend *be, const vox_mma_vectors *v);
  /* With `move`, first x = xo + step dx, xsi = xsio + step dxsi, eta =
   * etao + step deta. Then the variables' part of the relaxed KKT residual
   * for barrier epsi and multipliers lam (m, host): the sum of the squares
   * of its rows rex, rexsi, reeta (*sum), their largest magnitude (*max,
   * from 0), and gvec_i = sum_j P_ij / (upp_j - x_j) + Q_ij / (x_j - low_j)
   * (m, host). */
  vox_status (*residual)(vox_backend *be, vox_mma_work *w, const vox_mma_vectors *v,
                         const double *lam, double epsi, int move, double step, double *sum,
                         double *max, double *gvec);
  /* Newton's delx and diagx at x for epsi and lam (stored), and the sums
   * of the dual system: gvec (as above), gdelx_i = sum_j G_ij delx_j /
   * diagx_j and, for l <= i, ggt[i m + l] = sum_j G_ij G_lj / diagx_j
   * (the upper triangle is not written), G_ij = P_ij / (upp_j - x_j)^2 -
   * Q_ij / (x_j - low_j)^2; all host. */
  vox_status (*newton)(vox_backend *be, vox_mma_work *w, const vox_mma_vectors *v,
                       const double *lam, double epsi, double *gvec, double *gdelx, double *ggt);
  /* Optional (NULL: mma.c calls residual, then newton at the same point):
   * residual's work and newton's sums gdelx, ggt at the point it reaches, in
   * the same pass over the variables, which a backend whose passes cost
   * more than their arithmetic prefers (subsolv takes a Newton step at the
   * point of each residual but the rejected halvings). It need not store
   * delx, diagx, dxsi or deta: that backend's direction recomputes the
   * first two from lam and its residual's move the last two from dx (the
   * same operations, so the same values). */
  vox_status (*residual_newton)(vox_backend *be, vox_mma_work *w, const vox_mma_vectors *v,
                                const double *lam, double epsi, int move, double step,
                                double *sum, double *max, double *gvec, double *gdelx,
                                double *ggt);
  /* The direction dx = -(delx + G' dlam) / diagx, dxsi, deta from dlam (m,
   * host), and *most: the largest of 0 and -1.01 dxsi / xsi, -1.01 deta /
   * eta, -1.01 dx / (x - alfa), 1.01 dx / (beta - x) over the variables.
   * lam (m, host) is newton's, for a backend that recomputes delx and
   * diagx. */
  vox_status (*direction)(vox_backend *be, vox_mma_work *w, const vox_mma_vectors *v,
                          const double *lam, const double *dlam, double epsi, double *most);
  /* kktcheck's rows of the variables at xval with xsi, eta and lam (m,
   * host): rex = df0dx - xsi + eta + dfdx' lam, rexsi = xsi (xval - xmin),
   * reeta = eta (xmax - xval): the sum of their squares and their largest
   * magnitude (from 0). */
  vox_status (*kkt)(vox_backend *be, vox_mma_work *w, const vox_mma_vectors *v,
                    const double *lam, double *sum, double *max);
  /* The dual method (VOX_MMA_DUAL, mma_dual.c), optional (NULL: the backend
   * has none). For each of `points` multiplier vectors lam_k (row k of lam,
   * m each, host, >= 0), the subproblem's x at lam_k: with p_j = p0_j +
   * sum_i lam_ki P_ij and q_j = q0_j + sum_i lam_ki Q_ij, the minimiser of
   * p_j / (upp_j - x) + q_j / (x - low_j), (sqrt(p_j) low_j + sqrt(q_j)
   * upp_j) / (sqrt(p_j) + sqrt(q_j)), clamped to [alfa_j, beta_j]; and its
   * sums, S = m + m (m + 1) / 2 of them from sums + k S: gvec_i = sum_j
   * P_ij / (upp_j - x_j) + Q_ij / (x_j - low_j), then, for l <= i by rows,
   * sum over the unclamped j of G_ij G_lj / h_j, G_ij = P_ij / (upp_j -
   * x_j)^2 - Q_ij / (x_j - low_j)^2, h_j = 2 (p_j / (upp_j - x_j)^3 + q_j /
   * (x_j - low_j)^3) (minus the dual function's Hessian); all host. One
   * pass over the variables for all points where the backend can
   * (dual_slots), stores nothing. */
  vox_status (*dual_sums)(vox_backend *be, vox_mma_work *w, const vox_mma_vectors *v,
                          int points, const double *lam, double *sums);
  /* The sums a pass of dual_sums takes at best (the points' count the
   * host asks for at once: dual_slots / S, at least 1); 0: one point. */
  int dual_slots;
  /* x at lam (m, host) as dual_sums has it, into x, and the bounds'
   * multipliers of the subproblem there: with r_j = p_j / (upp_j - x_j)^2 -
   * q_j / (x_j - low_j)^2, xsi_j = max(r_j, 0) and eta_j = max(-r_j, 0)
   * where x_j is clamped, both 0 where it is not. */
  vox_status (*dual_solution)(vox_backend *be, vox_mma_work *w, const vox_mma_vectors *v,
                              const double *lam);
  /* The design elements as the variables: those of mask != 0, in element
   * order (*n of them), at most 8 bytes each (the memory plan). */
  vox_status (*map_create)(vox_backend *be, const vox_vec *mask, vox_index_map **out, size_t *n);
  void (*map_destroy)(vox_backend *be, vox_index_map *map);
  /* out_j = scale in_e(j) (out: n, in: a vector per element); with lo and
   * hi (n each, or both NULL), then out_j = min(max(out_j, lo_j), hi_j). */
  vox_status (*gather)(vox_backend *be, const vox_index_map *map, const vox_vec *in, double scale,
                       const vox_vec *lo, const vox_vec *hi, vox_vec *out);
  /* out_e(j) = in_j; the other elements of out stay. */
  vox_status (*scatter)(vox_backend *be, const vox_index_map *map, const vox_vec *in,
                        vox_vec *out);
} vox_mma_ops;

#ifdef __cplusplus
extern "C" {
#endif
extern const vox_mma_ops vox_cpu_mma_ops;
#ifdef VOXFE_HAVE_CUDA
extern const vox_mma_ops vox_cuda_mma_ops;
#endif
#ifdef __cplusplus
}
#endif

#endif
