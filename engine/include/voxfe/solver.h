/* SPDX-License-Identifier: BSD-3-Clause */
/* Linear solves on a voxel model: preconditioned conjugate gradients with a
 * matrix-free operator. A solve that does not converge is not an error: it
 * returns VOX_OK and says why in the result's reason. */
#ifndef VOXFE_SOLVER_H
#define VOXFE_SOLVER_H

#include "voxfe/backend.h"
#include "voxfe/model.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum vox_preconditioner {
  VOX_PC_JACOBI = 0,    /* diagonal scaling */
  VOX_PC_MULTIGRID = 1  /* one geometric multigrid V-cycle (Galerkin coarse levels) */
} vox_preconditioner;

typedef enum vox_smoother {
  VOX_SMOOTHER_JACOBI = 0,    /* damped Jacobi */
  VOX_SMOOTHER_CHEBYSHEV = 1  /* Chebyshev polynomial in D^-1 A (Arbenz et al. 2014) */
} vox_smoother;

/* Precision of the multigrid preconditioner: the outer conjugate gradients
 * always run in double, so the solution is as accurate either way. MIXED (the
 * default) stores the coarse-level operators in single precision and lets the
 * smoother's fine-level products compute in single precision, on the CPU
 * and CUDA backends alike. */
typedef enum vox_precision {
  VOX_PRECISION_DOUBLE = 0,
  VOX_PRECISION_MIXED = 1
} vox_precision;

/* What the solver stores (vox_solve_elasticity): the whole box of the grid,
 * or only the nodes and elements of the material (porous bone), with
 * matrix-free coarse levels rediscretised from the voxel image (Arbenz et al. 2014).
 * Both solve the same system. AUTO takes the sparse storage for elasticity
 * without densities on a model whose material fills less than half the box,
 * where the backend has it. */
typedef enum vox_storage {
  VOX_STORAGE_AUTO = 0,
  VOX_STORAGE_FULL_BOX = 1,
  VOX_STORAGE_SPARSE = 2
} vox_storage;

/* How a periodic cell's optimization solves its fields in mixed precision
 * (vox_optimize): with CG in double around the multigrid of
 * vox_solver_options (64 bytes a fine dof), or with the single-precision
 * cell solver (12 bytes a dof, a little slower where both fit:
 * docs/benchmarks.md). PHASED is the cell solver taking turns with the
 * optimizer's per-element state: the solver's memory is freed after each
 * design iteration's solves, and that state waits in host memory while they
 * run (the same designs, for two copies of the state over the bus each
 * iteration). AUTO takes the first of OFF, ON and PHASED whose memory plan
 * fits the device's free memory. Either way CG stops at rtol; the cell
 * solver needs rtol of at least 1e-4 (its float floor), else the double one
 * solves. */
/* Whether an optimization on a bounded grid runs its solver and its
 * design by turns on the device (vox_solver_options.by_turns). */
typedef enum vox_by_turns {
  VOX_BY_TURNS_AUTO = 0,
  VOX_BY_TURNS_OFF = 1,
  VOX_BY_TURNS_ON = 2
} vox_by_turns;

typedef enum vox_cell_solver_use {
  VOX_CELL_SOLVER_AUTO = 0,
  VOX_CELL_SOLVER_OFF = 1,
  VOX_CELL_SOLVER_ON = 2,
  VOX_CELL_SOLVER_PHASED = 3
} vox_cell_solver_use;

/* The multigrid cycle. V: every level is cycled once per visit of the level
 * above. W: every level from level 2 on (not level 1, the largest coarse
 * level) is cycled twice, the second time from the first's result: the
 * small levels, where a visit costs little, are where the V-cycle's coarse
 * correction was weakest (docs/benchmarks.md). AUTO: W on the full box, V
 * on the bone's sparse storage, where a clinical scan's CG count does not
 * drop with W (a perlin bone's halves: docs/benchmarks.md). */
typedef enum vox_mg_cycle {
  VOX_MG_CYCLE_V = 0,
  VOX_MG_CYCLE_W = 1,
  VOX_MG_CYCLE_AUTO = 2
} vox_mg_cycle;

/* fine_smoothing_steps of the optimizer's defaults: vox_optimize takes 1
 * for elasticity on a bounded grid and 0 for heat conduction and periodic
 * cells, whose solves lose more to the weaker cycle than they save
 * (docs/engine.md, Solver). */
enum { VOX_FINE_SMOOTHING_AUTO = -1 };

/* ---- the sparse (bone-only) preconditioner and the CG monitor ---- */

/* The coarse levels below the bone's fine level (VOX_STORAGE_SPARSE):
 * SPLIT rediscretises the voxel image on coarse grids whose nodes follow
 * the bone's connectivity (the default), BOX the plain coarse voxel
 * images, SA smoothed aggregation of the assembled fine matrix (Vanek,
 * Mandel and Brezina 1996; algebraic levels, backends with the sparse
 * matrix operations). */
typedef enum vox_sparse_coarse {
  VOX_SPARSE_COARSE_SPLIT = 0,
  VOX_SPARSE_COARSE_BOX = 1,
  VOX_SPARSE_COARSE_SA = 2
} vox_sparse_coarse;

/* Level 0's prolongator with SA levels: applied from the tentative one,
 * P = T - w W A T (IMPLICIT: one fine product more per transfer, less
 * memory), or stored with its transpose (EXPLICIT). */
typedef enum vox_sa_fine_transfer {
  VOX_SA_FINE_IMPLICIT = 0,
  VOX_SA_FINE_EXPLICIT = 1
} vox_sa_fine_transfer;

enum { VOX_SPARSE_MAX_DEGREES = 8, VOX_SPARSE_ALL_LEVELS = -1 };

typedef struct vox_sparse_pc_options {
  vox_sparse_coarse coarse;
  /* the smoothed levels, from the finest, whose Chebyshev smoother is
   * preconditioned by the nodes' inverted 3 x 3 diagonal blocks instead
   * of the diagonal: 0 (the diagonal everywhere) to any, or
   * VOX_SPARSE_ALL_LEVELS (the default) */
  int block_levels;
  /* each level's Chebyshev degree from the finest (0 or past the last
   * given: the one before it; none given: smoothing_steps, at least 4) */
  int degree[VOX_SPARSE_MAX_DEGREES];
  /* record the V-cycle once and replay it where the backend can (1, the
   * default), or launch it op by op (0) */
  int record;
  /* time the CG's and each level's parts into vox_sparse_stats (each part
   * then waits for the backend, which slows the solve a little; benchmarks) */
  int profile;
  vox_sa_fine_transfer sa_fine_transfer; /* SA only */
  int sa_point_diagonal; /* SA: smooth the prolongator with the diagonal, not the blocks */
  /* balance the V-cycle with the exact solve in the rigid motions that
   * the supports hold only weakly (1; 0, the default: the V-cycle alone):
   * the uniaxial test's plates leave the lateral translations and the
   * rotation about the axis to a pinned node or two, and the multigrid,
   * whose coarse levels see those nodes' stiffness otherwise than the fine
   * one does, can resolve such motions slowly; where they do not set the
   * CG count, their 2 k vector passes an iteration are a loss
   * (docs/engine.md) */
  int rigid_modes;
} vox_sparse_pc_options;

/* Called after every CG iteration (iteration 0: the start) with the
 * recurrence's residual norm |r|. */
typedef void (*vox_cg_monitor)(void *data, int iteration, double residual_norm);

enum { VOX_CG_WINDOW_MAX = 64 };

typedef struct vox_solver_options {
  double rtol;           /* stop when ||b - K u|| <= rtol * ||b|| */
  int max_iterations;
  /* > 0: stop also when the energy norm of the error, squared, estimated
   * from the last cg_window CG steps (the sum of alpha_j r_j'z_j), is at
   * most energy_tol times the solution's strain energy u'Ku, the lift of
   * prescribed values included (with loads alone the compliance f'u;
   * Hestenes and Stiefel 1952; Strakoš and Tichý 2002; engine/ksp.h).
   * 0 (the default): off. An error that stagnates for more steps than the
   * window fools the estimate (docs/engine.md). */
  double energy_tol;
  /* > 0: stop also when the work of the reactions on the prescribed
   * values, g'K u (a compression test's force times its displacement),
   * changed by at most reaction_tol of itself over the last cg_window
   * steps: a test on what an analysis reports. 0 (the default), or a
   * solve without prescribed values: off. */
  double reaction_tol;
  /* the steps the energy and reaction tests look back over, 1 to
   * VOX_CG_WINDOW_MAX; more: safer, later. Whichever of the residual
   * test and the ones switched on holds first stops a solve. */
  int cg_window;
  vox_preconditioner preconditioner;
  /* multigrid only */
  int mg_levels;         /* 0: chosen from the grid (mg_coarse_dofs) */
  /* with mg_levels 0: coarsen until a level has at most this many unknowns,
   * the coarsest, solved directly; 0: the backend's choice
   * (vox_mg_coarse_dofs) */
  int mg_coarse_dofs;
  vox_smoother smoother;
  int smoothing_steps;   /* Jacobi sweeps, or the Chebyshev degree, before and after */
  int fine_smoothing_steps; /* the same on the fine level; 0 (or VOX_FINE_SMOOTHING_AUTO
                               in a plain solve): smoothing_steps there too. Fewer there
                               save the costliest products of a cycle
                               (docs/benchmarks.md) */
  double jacobi_damping; /* omega of the damped Jacobi smoother */
  vox_precision precision;
  vox_storage storage;
  vox_mg_cycle mg_cycle; /* multigrid only */
  /* multigrid on the full box: record the cycle once after each setup and
   * replay it where the backend can (1, the default: the CUDA backend, one
   * launch instead of one per kernel, which sets the time of the small
   * levels), or launch it op by op (0); the same arithmetic either way */
  int mg_record;
  /* Sequences of solves (the optimizer's design iterations): earlier
   * solutions kept per load case (0 to 2) that, with the last one, span the
   * space each solve starts from, at the energy-minimal combination; 0: the
   * last solution as it is. One fine-level vector and one product each. */
  int start_history;
  /* 1: each solve starts from zero whatever the displacement array holds
   * on entry, which need not be initialised (a caller that starts from
   * zero, as voxfe-analyze does, saves clearing a box of displacements:
   * the sparse storage's solve clears it beside the iterations); 0 (the
   * default): the array is the initial guess */
  int zero_start;
  /* multigrid: the coarse levels' smoother bounds (16 Lanczos steps each;
   * the EFG multigrid: every level's, efg_mg_lanczos_steps each) are
   * estimated at every N-th setup and kept in between; 1 (or 0): at every
   * setup */
  int mg_bound_refresh;
  vox_cell_solver_use cell_solver; /* periodic cells only */
  /* vox_optimize on a bounded grid (periodic cells take turns through
   * cell_solver): ON, the optimizer's per-element vectors (the solid E
   * too) and its filter wait in host memory during each evaluation's
   * solves, while the solver's inverse diagonal, CG vectors and multigrid
   * are freed during the rest of the design iteration, so that the larger
   * of the two turns counts instead of both, and the loads wait in host
   * memory throughout (uploaded for each solve): about a fifth less device
   * memory, for transfers of the design and the loads each design
   * iteration and the filter made again; the same design either way. AUTO
   * (the default): where the run does not fit the device's free memory
   * otherwise. */
  vox_by_turns by_turns;
  /* the sparse storage's preconditioner */
  vox_sparse_pc_options sparse;
  /* NULL, or called at every CG iteration with monitor_data */
  vox_cg_monitor monitor;
  void *monitor_data;
} vox_solver_options;

typedef enum vox_convergence {
  VOX_CONVERGED_RTOL = 1,       /* relative residual below rtol */
  VOX_CONVERGED_ZERO_RHS = 2,   /* b = 0: u = 0 is exact */
  VOX_CONVERGED_ENERGY = 3,     /* estimated energy error below energy_tol */
  VOX_CONVERGED_REACTION = 4,   /* the reactions' work settled to reaction_tol */
  VOX_DIVERGED_MAX_ITERATIONS = -1,
  VOX_DIVERGED_INDEFINITE = -2, /* p'Kp <= 0 or z'r <= 0: singular or not SPD */
  VOX_DIVERGED_NAN = -3
} vox_convergence;

typedef struct vox_solve_result {
  int iterations;
  double residual_norm;     /* ||b - K u|| of the recurrence at exit */
  double rhs_norm;          /* ||b|| */
  vox_convergence reason;
  /* what vox_solve_elasticity did: the storage it took (FULL_BOX or
   * SPARSE), and for the sparse one its multigrid levels and the seconds of
   * its setup (hierarchy, uploads, coarsest factor; 0 otherwise) */
  vox_storage storage;
  int levels;
  double setup_seconds;
} vox_solve_result;

void vox_solver_options_default(vox_solver_options *options);
const char *vox_convergence_string(vox_convergence reason);
/* "jacobi" / "multigrid" and "jacobi" / "chebyshev"; parsers return -1 for
 * anything else. */
const char *vox_preconditioner_name(vox_preconditioner pc);
int vox_preconditioner_parse(const char *text, vox_preconditioner *pc);
const char *vox_smoother_name(vox_smoother smoother);
int vox_smoother_parse(const char *text, vox_smoother *smoother);
/* "auto" / "full" / "sparse" */
const char *vox_storage_name(vox_storage storage);
int vox_storage_parse(const char *text, vox_storage *storage);
/* "auto" / "off" / "on" / "phased" */
const char *vox_by_turns_name(vox_by_turns turns);
int vox_by_turns_parse(const char *text, vox_by_turns *turns);
const char *vox_cell_solver_use_name(vox_cell_solver_use use);
int vox_cell_solver_use_parse(const char *text, vox_cell_solver_use *use);
/* "v" / "w" */
const char *vox_mg_cycle_name(vox_mg_cycle cycle);
int vox_mg_cycle_parse(const char *text, vox_mg_cycle *cycle);
/* "double" / "mixed" */
const char *vox_precision_name(vox_precision precision);
int vox_precision_parse(const char *text, vox_precision *precision);
/* "split" (also "geometric") / "box" / "sa" */
const char *vox_sparse_coarse_name(vox_sparse_coarse coarse);
int vox_sparse_coarse_parse(const char *text, vox_sparse_coarse *coarse);
/* "implicit" / "explicit" */
const char *vox_sa_fine_transfer_name(vox_sa_fine_transfer transfer);
int vox_sa_fine_transfer_parse(const char *text, vox_sa_fine_transfer *transfer);

/* Solves linear elasticity (or heat conduction, when model->physics says so:
 * conductivity in place of E, temperatures in place of displacements) on the
 * model with every non-empty voxel at the full modulus of its material (or
 * scaled by model->density when present and `use_density` is set, with the
 * SIMP law of `penalty` and `emin_ratio`). `displacement` holds
 * n_load_cases * n_nodes * vox_physics_dofs_per_node(model->physics) values:
 * the initial guess on entry (zeros are fine), the solution on return. `results` has one entry
 * per load case. Nodes that touch no material are held at zero. On an MPI
 * backend that delivers results to rank 0 alone (vox_mpi_options.results),
 * the other ranks pass NULL and every rank starts from zero. */
vox_status vox_solve_elasticity(vox_context *ctx, vox_backend *backend, const vox_model *model,
                                int use_density, double penalty, double emin_ratio,
                                const vox_solver_options *options, double *displacement,
                                vox_solve_result *results);

/* As vox_solve_elasticity without density, with each non-empty element at
 * the Young's modulus moduli[e] (MPa, positive; nx*ny*nz entries, those of
 * empty voxels ignored) in place of its material's: heterogeneous tissue
 * moduli, for example from CT intensity (vox_intensity_moduli). The Poisson
 * ratio stays that of the materials in use. Elasticity models only. The
 * sparse storage holds the moduli in float (a relative 6e-8: the solution
 * is that of the moduli so rounded). */
vox_status vox_solve_elasticity_moduli(vox_context *ctx, vox_backend *backend,
                                       const vox_model *model, const double *moduli,
                                       const vox_solver_options *options, double *displacement,
                                       vox_solve_result *results);

/* What a solve can prepare before it has a device: for a model that
 * vox_solve_elasticity would solve in the sparse storage, the multigrid
 * hierarchy (the split coarse levels, a good part of a clinical sample's
 * host time). A program builds the plan while the device starts
 * (vox_device_warm_up_start) and solves with it; the model, the element
 * moduli (as vox_solve_elasticity_moduli takes them; NULL: the materials')
 * and the options must stay as they were. A plan of another storage is
 * empty: the solve then builds what it needs itself. */
typedef struct vox_solve_plan vox_solve_plan;
vox_status vox_solve_plan_create(vox_context *ctx, const vox_model *model, const double *moduli,
                                 const vox_solver_options *options, vox_solve_plan **out);
void vox_solve_plan_free(vox_solve_plan *plan);
/* The storage a solve with the plan takes: VOX_STORAGE_SPARSE where the
 * plan holds its hierarchy, else VOX_STORAGE_FULL_BOX (an MPI program
 * splits a sparse solve's layers by their bone: vox_mpi_slabs_weighted). */
vox_storage vox_solve_plan_storage(const vox_solve_plan *plan);
/* The storage a solve without density takes for this model and these
 * options on a backend that has both, without building anything: what
 * vox_solve_plan_storage says of their plan, for a process that makes none
 * (the MPI backend builds a sparse solve's hierarchy on rank 0 alone). */
vox_storage vox_solve_storage_choice(const vox_model *model, const vox_solver_options *options);
/* vox_solve_elasticity without density (moduli NULL) or
 * vox_solve_elasticity_moduli, with a plan of this model, these moduli and
 * these options (spent by the solve; NULL: none). */
vox_status vox_solve_elasticity_planned(vox_context *ctx, vox_backend *backend,
                                        const vox_model *model, const double *moduli,
                                        vox_solve_plan *plan, const vox_solver_options *options,
                                        double *displacement, vox_solve_result *results);

#ifdef __cplusplus
}
#endif
#endif
