/* SPDX-License-Identifier: BSD-3-Clause */
/* User-defined objectives of inverse homogenization: a formula in the
 * entries of the homogenized elasticity tensor C^H, parsed once at run time
 * (no recompilation), then evaluated with its gradient with respect to every
 * entry (forward-mode automatic differentiation over the parse tree).
 *
 * C^H is the 6 x 6 matrix in Voigt order xx, yy, zz, xy, yz, zx (Zhang et al. 2023's
 * order, that of the homogenization solver, voxfe/homogenize.h, and of C^H
 * in the design files and the summary of voxfe-optimize), with
 * engineering shear strains (2 eps_yz, ...), stored row-major:
 * entry Cij (i, j = 1..6, the usual 1-based Voigt notation) is ch[6 (i-1) +
 * (j-1)]. The 36 entries are independent variables here: C12 and C21 are
 * equal in a symmetric C^H, but the gradient puts each derivative on the
 * entry the formula names, which is what sum_ij df/dCij dCij/drho needs.
 *
 * The language:
 *   numbers      2, 0.5, .5, 1e-3
 *   variables    C11 ... C66 (Voigt, 1-based); iter, the design iteration
 *                (1-based, for continuation as in Zhang et al. 2023 eq. 21); pi
 *   operators    + - * / ^ (power, right-associative and above unary
 *                minus: -C11^2 is -(C11^2)), parentheses
 *   functions    sqrt log exp abs sin cos (one argument),
 *                min max pow (two arguments)
 * Examples: the bulk modulus of Zhang et al. 2023 eq. 19 (negated, a minimisation)
 *   -(C11 + C22 + C33 + 2*(C12 + C13 + C23)) / 9
 * and eq. 22:
 *   log(1 + 0.6*(C12 + C23 + C31)/(C11 + C22 + C33)) - (C11 + C22 + C33)^0.5
 * Where a function is not differentiable the gradient is a one-sided choice:
 * abs'(0) = 0, and min/max follow their first argument on a tie. */
#ifndef VOXFE_EXPRESSION_H
#define VOXFE_EXPRESSION_H

#include "voxfe/context.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct vox_expression vox_expression;

/* Parses `text` (at most VOX_EXPRESSION_MAX_LENGTH characters). A bad
 * formula fails with VOX_ERR_INVALID_ARGUMENT and a one-line message naming
 * the 1-based character position of the problem, e.g.
 *   expression "C11 + * 2": at character 7: expected a number, a name or '('
 * On success *out holds the parsed formula, to free with
 * vox_expression_free. */
enum { VOX_EXPRESSION_MAX_LENGTH = 4096 };
vox_status vox_expression_parse(vox_context *ctx, const char *text, vox_expression **out);
void vox_expression_free(vox_expression *expression);

/* The text the expression was parsed from. */
const char *vox_expression_text(const vox_expression *expression);

/* 1 if the formula names entry Cij (i, j = 1..6), else 0. */
int vox_expression_uses(const vox_expression *expression, int i, int j);

/* The value of the formula at C^H = ch (36 entries, row-major Voigt, see
 * above) and design iteration `iteration`, and, when `gradient` is not NULL,
 * its 36 partial derivatives d value / d ch[k]. Fails with
 * VOX_ERR_INVALID_ARGUMENT, naming the operation and its position, where the
 * value or a derivative is not finite (log of a non-positive number, a
 * division by zero, sqrt at 0 of a varying argument...). */
vox_status vox_expression_evaluate(vox_context *ctx, const vox_expression *expression,
                                   const double ch[36], int iteration, double *value,
                                   double gradient[36]);

#ifdef __cplusplus
}
#endif
#endif
