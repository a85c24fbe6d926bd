/* SPDX-License-Identifier: BSD-3-Clause */
/* The method of moving asymptotes (Svanberg 1987, "The method of moving
 * asymptotes -- a new method for structural optimization"), in the form of
 * Svanberg's notes "MMA and GCMMA -- two methods for nonlinear optimization"
 * (2002, revised 2007): for n variables x and m >= 1 constraints
 *
 *   minimize   f_0(x) + a0 z + sum_i (c_i y_i + d_i y_i^2 / 2)
 *   subject to f_i(x) - a_i z - y_i <= 0,  xmin <= x <= xmax,  y >= 0, z >= 0,
 *
 * each outer iteration replaces every f_i by its convex separable
 * approximation around the current x, between the lower and upper
 * asymptotes L_j < x_j < U_j, which move with the history of x (wider while
 * x_j keeps going one way, narrower when it oscillates), and solves that
 * subproblem within the move limits alpha_j, beta_j, by the primal-dual
 * interior-point method of the notes (their `subsolv`) or by the dual
 * method (Svanberg 1987, section 4: vox_mma_subproblem). With a_i = 0 and
 * c_i large the y_i are the constraints' slack of last resort: they are 0
 * at the solution of a problem whose constraints can be met.
 *
 * These functions take host arrays and run on a CPU backend of the
 * method's own: the per-variable work in OpenMP threads over fixed blocks
 * of the variables, summed in block order, so that the result does not
 * depend on the number of threads. The m + 1 dual directions are solved on
 * the host. (vox_optimize runs the same method on its own backend, the GPU
 * included, with the variables where its vectors are: engine/mma_ops.h.) */
#ifndef VOXFE_MMA_H
#define VOXFE_MMA_H

#include <stddef.h>

#include "voxfe/checkpoint.h"
#include "voxfe/context.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How the subproblem is solved. Both solve the same strictly convex
 * problem; they differ by how near they come to its solution (the barrier
 * parameter epsilon_min of each) and by their cost. */
typedef enum vox_mma_subproblem {
  /* Svanberg's (2007 notes) `subsolv`: a primal-dual interior-point method
   * in x, y, z and all their multipliers, whose Newton steps each take
   * about a dozen passes over the n variables (and the direction's system
   * of order m + 1 on the host). */
  VOX_MMA_PRIMAL_DUAL = 0,
  /* The dual method (Svanberg 1987, section 4): for multipliers lambda >= 0
   * of the m constraints the Lagrangian separates, and each x_j, y_i is
   * explicit in lambda; the concave dual function of the m multipliers is
   * maximised by a primal-dual interior-point method in lambda and the
   * constraints' slacks, whose Newton step takes ONE pass over the
   * variables (x(lambda), the dual gradient and Hessian together). Needs
   * a = 0 and d > 0 (then z = 0 and y is explicit). */
  VOX_MMA_DUAL = 1
} vox_mma_subproblem;

/* "primal-dual" or "dual"; parse: 0, or -1 for another name. */
const char *vox_mma_subproblem_name(vox_mma_subproblem subproblem);
int vox_mma_subproblem_parse(const char *text, vox_mma_subproblem *subproblem);

/* The bounds that the asymptotes and the approximations take their widths
 * from. */
typedef enum vox_mma_bounds {
  /* the caller's xmin, xmax (Svanberg 1987, 2007) */
  VOX_MMA_BOUNDS_DESIGN = 0,
  /* in each iteration, the move-limit box around x, max(xmin, x - move
   * (xmax - xmin)) to min(xmax, x + move (xmax - xmin)), as Aage,
   * Andreassen and Lazarov 2015 hand their MMA: the asymptotes start at
   * asymptote_init times its width, a width that differs per variable, and
   * are kept 0.01 to 10 times it from x */
  VOX_MMA_BOUNDS_MOVE = 1
} vox_mma_bounds;

/* The terms that make each approximation strictly convex. */
typedef enum vox_mma_convexity {
  /* every function's p_ij and q_ij get 0.001 (p + q) + raa0 / max(xmax -
   * xmin, 1e-5) (Svanberg 2007) */
  VOX_MMA_CONVEXITY_SVANBERG = 0,
  /* the objective's get 0.001 (p + q) + raa0 / (2 (U - L)), the
   * constraints' nothing: the MMA of Aage, Andreassen and Lazarov 2015
   * (Aage and Lazarov after Svanberg; raa0 = 1e-6 there) */
  VOX_MMA_CONVEXITY_AAGE = 1
} vox_mma_convexity;

/* "design", "move"; "svanberg", "aage"; the parsers return -1 for other
 * words. */
const char *vox_mma_bounds_name(vox_mma_bounds bounds);
int vox_mma_bounds_parse(const char *text, vox_mma_bounds *bounds);
const char *vox_mma_convexity_name(vox_mma_convexity convexity);
int vox_mma_convexity_parse(const char *text, vox_mma_convexity *convexity);

/* Svanberg's defaults (vox_mma_options_default) in the comments. */
typedef struct vox_mma_options {
  vox_mma_bounds bounds;     /* design: the widths below are those of xmin, xmax (move: of
                                the move-limit box) */
  vox_mma_convexity convexity; /* svanberg */
  double asymptote_init;     /* 0.5: U - L = 2 * this * (xmax - xmin) in the first two iterations */
  double asymptote_increase; /* 1.2: the asymptotes widen while x_j keeps its direction */
  double asymptote_decrease; /* 0.7: they narrow where x_j oscillates */
  double move;               /* 0.5: |x_new - x| <= move * (xmax - xmin) */
  double albefa;             /* 0.1: x_new stays this fraction of the way from an asymptote */
  double raa0;               /* 1e-5: the approximations' least curvature */
  double a0;                 /* 1 */
  double a;                  /* 0: a_i of every constraint */
  double c;                  /* 1000: c_i of every constraint */
  double d;                  /* 1: d_i of every constraint */
  double epsilon_min;        /* 1e-7: the interior-point method's last barrier parameter */
  vox_mma_subproblem subproblem; /* VOX_MMA_PRIMAL_DUAL */
  /* Not read by vox_mma_update: vox_optimize divides the objective by the
   * magnitude of its first iteration's value and multiplies it by this, as
   * Svanberg advises values of order 1 to 100 for the defaults of a0 and
   * c (1: the objective starts at 1). */
  double objective_scale;
} vox_mma_options;

void vox_mma_options_default(vox_mma_options *options);
/* VOX_ERR_INVALID_ARGUMENT naming the first parameter out of its range. */
vox_status vox_mma_options_check(vox_context *ctx, const vox_mma_options *options);

typedef struct vox_mma vox_mma;

/* The method's state for n variables and m constraints (m >= 1). */
vox_status vox_mma_create(vox_context *ctx, size_t n, int m, const vox_mma_options *options,
                          vox_mma **out);
void vox_mma_destroy(vox_mma *mma);

/* One outer iteration at xval: the function values fval (m), the
 * gradients df0dx (n) and dfdx (m rows of n, constraint i at dfdx + i n);
 * the bounds xmin, xmax (n). The new x into xnew (n; may be xval). */
vox_status vox_mma_update(vox_mma *mma, const double *xval, const double *xmin,
                          const double *xmax, const double *df0dx, const double *fval,
                          const double *dfdx, double *xnew);

/* The OpenMP threads of its loops (0: OpenMP's default); the results do
 * not depend on it. */
void vox_mma_set_threads(vox_mma *mma, int threads);
/* Outer iterations done. */
int vox_mma_iterations(const vox_mma *mma);
/* The last iteration's asymptotes (n each). */
const double *vox_mma_lower(const vox_mma *mma);
const double *vox_mma_upper(const vox_mma *mma);
/* The last subproblem's multipliers of the constraints (m). */
const double *vox_mma_lambda(const vox_mma *mma);

/* The residual of the original problem's KKT conditions at x (after an
 * update, evaluated there: fval, df0dx, dfdx as for vox_mma_update) with
 * the last subproblem's solution's multipliers and y, z (Svanberg's
 * `kktcheck`): its Euclidean norm and largest entry. */
vox_status vox_mma_kkt(const vox_mma *mma, const double *x, const double *xmin,
                       const double *xmax, const double *df0dx, const double *fval,
                       const double *dfdx, double *norm, double *max);

/* The state into a checkpoint (arrays named prefix + "_..."), and back from
 * one of the same n, m and options (VOX_ERR_INVALID_ARGUMENT naming what
 * differs, in words that begin "the checkpoint"). */
vox_status vox_mma_save(const vox_mma *mma, const char *prefix, vox_checkpoint *out);
vox_status vox_mma_restore(vox_mma *mma, const char *prefix, const vox_checkpoint *state);

#ifdef __cplusplus
}
#endif
#endif
