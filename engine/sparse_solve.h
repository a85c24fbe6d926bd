/* SPDX-License-Identifier: BSD-3-Clause */
/* Linear elasticity on the bone only (private): the sparse system of
 * sparse_hierarchy.h solved by conjugate gradients preconditioned with a
 * V-cycle of matrix-free rediscretised levels (Arbenz et al. 2014). It gives the
 * solution of vox_solve_elasticity's full-box system (same equations, the
 * nodes that touch no material held at zero) with a fraction of its memory
 * on porous models. docs/engine.md ("Sparse storage") has the arithmetic. */
#ifndef VOXFE_SPARSE_SOLVE_H
#define VOXFE_SPARSE_SOLVE_H

#include "backend_ops.h"
#include "voxfe/solver.h"
#include "sparse_hierarchy.h"

/* What a sparse solve allocated and how it went (benchmarks, tests). */
typedef struct vox_sparse_stats {
  int n_levels;
  size_t n_dofs;           /* level 0: 3 x the nodes that touch bone */
  size_t n_elements;       /* level 0 */
  size_t level_dofs[16];   /* per level (the first 16) */
  size_t bytes;            /* bytes allocated on the backend, all together */
  int block_levels;        /* levels smoothed with the nodes' 3 x 3 blocks */
  int replayed;            /* 1: the V-cycle was recorded once and replayed */
  /* coarse levels SA (vox_sparse_pc_options): smoothed-aggregation levels (level_dofs: 6 a
   * coarse node), their operator complexity (the scalar entries of the
   * assembled operators of all levels over those of the fine one) and the
   * seconds of their setup on the host (of setup_seconds) */
  int sa;
  double operator_complexity;
  double sa_setup_seconds;
  /* of which (vox_sa_timing): aggregation, tentative prolongators,
   * prolongator smoothing, Galerkin products, coarse smoothers, coarsest */
  double sa_part_seconds[6];
  double setup_seconds;    /* hierarchy on the host, uploads, coarsest factor */
  /* of which: the host hierarchy's build (0 where it was prepared or built
   * elsewhere), its sharing between processes (the MPI backend's), the
   * smoothers' spectrum bounds, the levels on the backend (uploads, the
   * coarsest factor, the visits) */
  double build_seconds, share_seconds, bounds_seconds, system_seconds;
  double solve_seconds;    /* the conjugate gradients of every load case */
  double pcg_seconds;      /* of which the iterations (no transfers to the host) */
  /* With vox_sparse_pc_options.profile (benchmarks; each part
   * then waits for the backend, which slows the solve a little): seconds
   * of the CG's own work (its product, dot products and updates) and of
   * each V-cycle level's own work (smoothing, residual, transfers; the last
   * level its coarsest solve), summed over the iterations; 0 otherwise. */
  double cg_seconds;
  double level_seconds[16];
  /* Of solve_seconds (the backend waited for only with profile): the
   * right-hand sides and starts (from the end of the setup) and the
   * displacements' return to the box (download and copy). */
  double rhs_seconds, return_seconds;
} vox_sparse_stats;

/* The model's solid fraction below which vox_solve_elasticity takes the
 * sparse path by itself (VOX_STORAGE_AUTO). */
#define VOX_SPARSE_AUTO_FRACTION 0.5

/* As vox_solve_elasticity with use_density = 0 on an elasticity model;
 * `stats` may be NULL. */
vox_status vox_sparse_solve_elasticity(vox_context *ctx, vox_backend *be, const vox_model *model,
                                       const vox_solver_options *options, double *displacement,
                                       vox_solve_result *results, vox_sparse_stats *stats);

/* The hierarchy the sparse solve of the model with these options (and
 * element moduli, or NULL) builds: it needs no backend, so
 * vox_solve_plan_create builds it ahead. */
vox_status vox_sparse_hierarchy_for(vox_context *ctx, const vox_model *model,
                                    const double *moduli, const vox_solver_options *options,
                                    vox_sparse_hierarchy *h);
/* vox_sparse_solve_elasticity with each element's Young's modulus
 * moduli[e] (as vox_solve_elasticity_moduli; NULL: its material's) and
 * the hierarchy built ahead for them (NULL: built here), which it takes
 * over: zeroed on return, freed. */
vox_status vox_sparse_solve_elasticity_with(vox_context *ctx, vox_backend *be,
                                            const vox_model *model, const double *moduli,
                                            const vox_solver_options *options,
                                            vox_sparse_hierarchy *prepared, double *displacement,
                                            vox_solve_result *results, vox_sparse_stats *stats);

#endif
