/* SPDX-License-Identifier: BSD-3-Clause */
/* A bound on the spectrum of the Jacobi-scaled fine operator, from its one
 * element matrix (private).
 *
 * The fine operator is A = sum_e m_e K_e with one element matrix K (moduli
 * m_e >= 0), and its diagonal D = sum_e m_e diag(K_e). For every x,
 *   x' A x = sum_e m_e x_e' K x_e <= lambda_K sum_e m_e x_e' diag(K) x_e
 *          = lambda_K x' D x,
 * with lambda_K the largest eigenvalue of diag(K)^-1 K: so lambda_max(D^-1 A)
 * <= lambda_K whatever the moduli. Eliminated (fixed) dofs keep the bound
 * (a principal submatrix) and add eigenvalues 1. In a design with sharp
 * solid/void interfaces the bound is reached: 16 Lanczos steps estimated up
 * to 5.31 against lambda_K = 5.318 (hex8, nu = 0.3) during the 256 x 128 x
 * 128 cantilever, so the Chebyshev smoother can take it as its upper end
 * with no estimate at all, and with no risk of an estimate that is too low
 * (which makes the V-cycle indefinite). */
#ifndef VOXFE_SMOOTHER_BOUND_H
#define VOXFE_SMOOTHER_BOUND_H

#include "voxfe/context.h"

/* max(1, largest eigenvalue of diag(K)^-1 K) for the n x n symmetric
 * positive semi-definite element matrix `ke` (row-major), by LAPACK's dsyev
 * on diag(K)^-1/2 K diag(K)^-1/2. */
vox_status vox_jacobi_spectrum_bound(vox_context *ctx, const double *ke, int n, double *bound);

/* The same argument for block Jacobi: with B_e the block diagonal of K_e in
 * blocks of `block` rows (a node's 3 x 3 for elasticity) and B = sum_e m_e
 * B_e the operator's block diagonal (each node's diagonal block is the sum
 * of its elements' blocks),
 *   x' A x = sum_e m_e x_e' K x_e <= lambda_B sum_e m_e x_e' B_e x_e
 *          = lambda_B x' B x,
 * with lambda_B the largest eigenvalue of B_e^-1 K: lambda_max(B^-1 A) <=
 * lambda_B whatever the moduli, and on every rediscretised level (K scaled).
 * Eliminated dofs again give principal submatrices of A and B (a fixed
 * component's row and column of its node's block replaced by the identity)
 * and eigenvalues 1. For hex8 elasticity, nu = 0.3: 3.162 (the diagonal's:
 * 5.318). max(1, lambda_B) by LAPACK's dsygv (K v = lambda B_e v), `n` a
 * multiple of `block`. */
vox_status vox_block_jacobi_spectrum_bound(vox_context *ctx, const double *ke, int n, int block,
                                           double *bound);

#endif
