/* SPDX-License-Identifier: BSD-3-Clause */
/* The bulk-modulus problem of the cell benchmarks (bench_cell, bench_cell_rtol):
 * an n^3 periodic cell, E = 1, nu = 0.3, volume fraction V, p = 3 from the
 * start, sensitivity filter of 2 voxels (periodic), move limit 0.05, OC
 * damping 0.5 (Zhang et al. 2023 section 6), every iteration run (no convergence
 * test). Two starts:
 *   cosine:  rho = V + (V/2)(cos 2 pi x + cos 2 pi y + cos 2 pi z) clamped
 *            to [0.001, 1], no symmetry enforced (the start of the first
 *            H100 rows of docs/benchmarks.md);
 *   zhang2023: Zhang et al. 2023's own setup (section 6.1, 6.2): its trigonometric
 *            family with seed 1 and reflect6 symmetry enforced.
 * And the moduli of a design after binarization (Zhang et al. 2023 table 2 reports
 * its objectives so): rho >= 0.5 solid, the rest void (Emin). */
#ifndef VOXFE_BENCH_CELL_PROBLEM_H
#define VOXFE_BENCH_CELL_PROBLEM_H

#include "voxfe/voxfe.h"

typedef struct cell_problem {
  vox_model model;
  vox_optimizer_options opt; /* opt.initial points into this struct: do not move it */
  vox_initial_design initial;
  int zhang2023;
} cell_problem;

/* start: "cosine" or "zhang2023". 0, or -1 with a message on stderr. */
int cell_problem_make(vox_context *ctx, int n, double volume_fraction, const char *start,
                      cell_problem *p);
void cell_problem_free(cell_problem *p);

/* C^H of `density` (n elements of model's grid) binarized at 0.5, solved to
 * a relative residual of 1e-10: its moduli and the binary design's volume
 * fraction. 0, or -1 with the context's message. */
int cell_binary_moduli(vox_context *ctx, vox_backend *be, const vox_model *model,
                       const double *density, double penalty, double emin,
                       vox_cell_moduli *moduli, double *volume_fraction);

/* The same binarized at the threshold that keeps the volume fraction
 * `target` (the k-th largest density, k = target n; elements tied with it
 * go solid too, so the volume can exceed the target by a tie's count):
 * Zhang et al. 2023's moduli are at its volume fraction, which a threshold of 0.5
 * need not keep. */
int cell_binary_moduli_at_volume(vox_context *ctx, vox_backend *be, const vox_model *model,
                                 const double *density, double target, double penalty,
                                 double emin, vox_cell_moduli *moduli, double *threshold,
                                 double *volume_fraction);

/* Likewise for the grey design itself (no binarization). */
int cell_grey_moduli(vox_context *ctx, vox_backend *be, const vox_model *model,
                     const double *density, double penalty, double emin, vox_cell_moduli *moduli);

#endif
