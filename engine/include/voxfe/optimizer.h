/* SPDX-License-Identifier: BSD-3-Clause */
/* Density topology optimization (Martinez-Frutos et al. 2017, section 3): the objective the
 * model names -- compliance, a weighted sum over its load cases, or the
 * output displacement of a compliant mechanism with its adjoint solve --
 * with modified SIMP, sensitivity or density filter, optimality-criteria
 * updates and continuation. */
#ifndef VOXFE_OPTIMIZER_H
#define VOXFE_OPTIMIZER_H

#include "voxfe/backend.h"
#include "voxfe/checkpoint.h"
#include "voxfe/expression.h"
#include "voxfe/homogenize.h"
#include "voxfe/initial_design.h"
#include "voxfe/mma.h"
#include "voxfe/model.h"
#include "voxfe/solver.h"
#include "voxfe/symmetry.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum vox_filter_type {
  VOX_FILTER_NONE = 0,
  VOX_FILTER_SENSITIVITY = 1, /* Martinez-Frutos et al. 2017 eq. 3 */
  VOX_FILTER_DENSITY = 2      /* rho_phys = H rho / sum H */
} vox_filter_type;

/* A function of the homogenized tensor C^H of a periodic unit cell to
 * minimise (Zhang et al. 2023, voxfe/homogenize.h) instead of the model's own
 * objective (vox_objective of voxfe/model.h: compliance, or a mechanism's
 * output displacement, which need supports and loads). A cell objective
 * treats the grid as a periodic unit cell (no supports or loads;
 * vox_homogenize's requirements). */
typedef enum vox_cell_objective {
  VOX_CELL_NONE = 0,             /* the model's own objective */
  VOX_CELL_BULK = 1,        /* maximise the bulk modulus: f = -B (eq. 19) */
  VOX_CELL_SHEAR = 2,       /* maximise the shear modulus: f = -G (eq. 20) */
  VOX_CELL_POISSON = 3,     /* negative Poisson ratio, eq. 21: C01 + C02 + C12
                                    - beta^k (C00 + C11 + C22) */
  VOX_CELL_POISSON_LOG = 4, /* negative Poisson ratio, eq. 22: log(1 + eta (C01 + C12
                                    + C20) / (C00 + C11 + C22)) + tau (C00 + C11 + C22)^gamma */
  VOX_CELL_CUSTOM = 5            /* options.custom, or else options.expression */
} vox_cell_objective;

/* How the displacement field and the design are discretised. */
typedef enum vox_discretization {
  VOX_DISCRETIZATION_FE = 0, /* trilinear bricks, one density per voxel (the default) */
  /* The element-free Galerkin method of Lu, Gong, Zhang, Xie and Yin 2021:
   * the grid nodes of the domain are the field nodes, with moving
   * least-squares shape functions; the design variables are the nodal
   * densities, the density anywhere their MLS interpolation, so the design
   * is smooth without a filter (filter and filter_radius are not used), and
   * the stiffness is E0 rho^p without an Emin (emin_ratio is not used: the
   * densities' lower bound density_min, 1e-3 for VOX_DENSITY_MIN_AUTO, keeps
   * K definite). The stiffness matrix is assembled and solved by CG with a
   * 3x3 block Jacobi preconditioner on the host (CPU backend only; the
   * solver's preconditioner, multigrid and start_history fields are not
   * used: each solve starts from the last solution). Model
   * objective compliance of elasticity only: no heat, mechanism, periodic
   * cell, symmetry, initial design or checkpoint (VOX_ERR_UNSUPPORTED). */
  VOX_DISCRETIZATION_EFG = 1
} vox_discretization;

/* How the design variables are updated from the gradients. */
typedef enum vox_design_update {
  VOX_UPDATE_OC = 0,  /* optimality criteria with a bisection on the volume multiplier */
  VOX_UPDATE_MMA = 1  /* the method of moving asymptotes (Svanberg 1987; voxfe/mma.h), with
                         the model's design constraints (volumes of regions, compliances of
                         load cases; design_constraints.h), or else the volume of the design
                         domain, as its constraints; on the CPU and CUDA backends */
} vox_design_update;
/* The preconditioner of the EFG loop's conjugate gradients: the inverted
 * 3x3 diagonal blocks of K; a smoothed-aggregation multigrid V-cycle
 * (Vanek, Mandel and Brezina 1996) whose coarse levels carry the load
 * across void regions (CPU only); or additive Schwarz on the background
 * cells' patches of 8 nodes, whose exact 24 x 24 solves catch the nearly
 * singular combinations of nodes that the MLS supports leave at a void's
 * edge (docs/engine.md, "Element-free Galerkin"). */
typedef enum vox_efg_preconditioner {
  VOX_EFG_PC_JACOBI = 0,
  VOX_EFG_PC_SA = 1,
  VOX_EFG_PC_SCHWARZ = 2,
  /* geometric multigrid (efg_mg.h): Galerkin levels on every other node
   * line of the voxel grid, Chebyshev smoothing by the patches on the
   * first level, a dense solve of the last; on the CPU and CUDA backends
   * (the default) */
  VOX_EFG_PC_MG = 3
} vox_efg_preconditioner;

typedef struct vox_optimizer_options {
  vox_discretization discretization;
  /* VOX_DISCRETIZATION_EFG: d_max of the supports (Lu et al. 2021 eq. 5:
   * the support radius over the nearest-node distance; 2.0) and the penalty
   * of the supports (eq. 11, 13) as a multiple of the largest Young's
   * modulus times the smallest voxel edge (1e4): larger holds the supports
   * closer and conditions K worse (more CG iterations). */
  double efg_support_scale;
  double efg_penalty_scale;
  vox_efg_preconditioner efg_preconditioner;
  /* VOX_EFG_PC_SA: the multigrid's constants. Chebyshev degree of each
   * level's smoothing, before and after (2); the first level's aggregates,
   * blocks of efg_sa_aggregate^3 grid lines of nodes built once for the
   * whole run (3), or 0 for standard aggregation of K's strong couplings
   * afresh each design iteration; that aggregation's strength of
   * connection (0.2). */
  int efg_sa_degree;
  int efg_sa_aggregate;
  double efg_sa_strength;
  /* VOX_EFG_PC_SA: the first level's smoothing preconditioner inside
   * Chebyshev's iteration: VOX_EFG_PC_JACOBI (K's inverted 3x3 diagonal
   * blocks) or VOX_EFG_PC_SCHWARZ (the cells' patches, the default: a
   * third to a sixth of the CG iterations) */
  vox_efg_preconditioner efg_sa_smoother;
  /* VOX_EFG_PC_MG: coarsen until a level has at most this many unknowns,
   * then solve it densely (at most 6000: on a GPU its factor and inverse,
   * 288 MB each); 0, the default: the backend's choice, the FE
   * multigrid's coarsest size where the backend sets one (1000 on the CPU,
   * whose dense factor runs on one core), else 2000 (a GPU). Its Chebyshev
   * degree is efg_sa_degree's */
  int efg_mg_coarse_dofs;
  /* VOX_EFG_PC_MG: the Lanczos steps that estimate each level's
   * lambda_max(M A) for its Chebyshev smoothing in each design iteration
   * (10, at most 64; on the three examples of Lu et al. 2021 the same CG
   * counts as 20 within 3 %): fewer take less of the setup, but an
   * estimate that falls short of lambda_max by more than the interval's
   * margin lets the smoothing grow the top modes; a solve whose CG breaks
   * down for it is redone with twice the steps, kept for the run */
  int efg_mg_lanczos_steps;
  /* VOX_EFG_PC_MG: the last level's dense factor and inverse made at every
   * N-th design iteration and kept in between (1, the default: every one).
   * A kept inverse leaves the V-cycle symmetric positive definite, only a
   * weaker preconditioner as the design moves on; a solve that breaks
   * down with it (or with bounds kept by solver.mg_bound_refresh), or
   * that crawls (more than 4 times the most CG iterations of a solve of
   * the evaluation before, plus 20), goes on with all made afresh */
  int efg_mg_refactor;
  /* VOX_EFG_PC_MG: at those design iterations keep the last level's
   * factor all the same, and at every one each cell's patch inverse of the
   * first level's smoother, while no diagonal entry of theirs has moved by
   * more than this fraction since it was made (0.3; 0: never; the diagonal's
   * ratios bound the spread of the kept inverse's error from inside, and
   * on the last level of the examples of Lu et al. 2021 came within a few
   * per cent of it) */
  double efg_mg_refactor_drift;
  /* VOX_EFG_PC_MG on a backend that records (the GPU): the V-cycle
   * recorded once a solve and replayed (1, the default: its few dozen
   * small kernels launched at once), or launched kernel by kernel (0); the
   * same iterates either way */
  int efg_record;
  /* VOX_EFG_PC_MG and the schwarz smoother of VOX_EFG_PC_SA: the first
   * level's smoother solves, besides the cells' patches, a patch per
   * penalty point of the supports of it and its grid neighbours among the
   * penalty points (efg_patches.h), so that the penalty's stiff couplings
   * do not set the CG count (1, the default: a fifth of the iterations on
   * the cantilever of Lu et al. 2021), or the cells' patches alone (0).
   * VOX_EFG_PC_SCHWARZ on its own does without them (their overlap costs
   * it more iterations than they save). */
  int efg_penalty_patches;
  /* The penalty points' patches' share of that smoother: their inverses
   * weighted by w in (0, 1] (1). Their overlap (each supported node in a
   * dozen of them) can put lambda_max of M K near the supports above the
   * cells' patches' elsewhere, and the Chebyshev interval, which follows
   * lambda_max, then smooths the rest less; but a smaller weight holds
   * the penalty couplings less (on the H200, 100 design iterations of Lu
   * et al. 2021's examples at 0.25: the cube 11 % fewer CG, the quarter
   * annulus 18 % more) */
  double efg_penalty_patch_weight;
  /* VOX_EFG_PC_MG, VOX_EFG_PC_SCHWARZ and the schwarz smoother of
   * VOX_EFG_PC_SA: the first level's patches, of each background cell's 8
   * nodes (1, the default) or of each block of 2 x 2 x 2 cells' 27 nodes
   * (2), whose nodes in a penalty point's patch are left to those: they
   * hold more of the MLS supports' coupling (about four node lines wide)
   * for about a third more bytes a smoothing step (efg_patches.h) */
  int efg_patch_size;
  /* VOX_EFG_PC_MG: the Chebyshev smoothing's interval [l, 1.1] lambda_max
   * of each level's M A, l in (0, 1) (0.1): a lower l damps more of the
   * spectrum's lower end, less of each eigenvalue in it */
  double efg_mg_chebyshev_lower;
  /* The supports' penalty springs on components held at 0 follow the
   * material: alpha times the SIMP factor rho_p^p of the density at each
   * supported node (1, the default: a support next to void material then
   * conditions K as one next to solid does; the late solves of the
   * cantilever of Lu et al. 2021 on 36,960 nodes took a seventh of the CG
   * iterations, the compliance within 1e-5), or alpha everywhere (0, as
   * the paper's eq. 11). */
  int efg_penalty_relative;
  vox_design_update update;
  /* VOX_UPDATE_MMA: the method's parameters (vox_mma_options_default);
   * its move limit is move_limit below (mma.move is not read). damping and
   * q are the OC update's: MMA refuses q_max > 1. */
  vox_mma_options mma;
  vox_cell_objective cell_objective;
  double poisson_beta;         /* beta of eq. 21, in (0, 1) */
  double poisson_eta;          /* eta of eq. 22 */
  double poisson_gamma;        /* gamma of eq. 22 */
  double poisson_tau;          /* tau of eq. 22; 0: -1 / E^gamma of the material */
  vox_tensor_function custom;  /* VOX_CELL_CUSTOM: f(C^H) and its gradient */
  void *custom_self;
  /* VOX_CELL_CUSTOM without `custom`: a parsed formula of the C^H entries
   * (voxfe/expression.h; C11..C66 name the entries of vox_optimize_result's
   * tensor, 1-based). Where it is not defined at an iteration's C^H (a log
   * of a negative number...) the run fails naming the iteration and the
   * formula's character. */
  const vox_expression *expression;
  /* Symmetry of the design (voxfe/symmetry.h, Zhang et al. 2023 section 6.1): the
   * starting design, the sensitivities before every update and the design
   * after it are averaged over the group's orbits (the loop of Zhang et al. 2023
   * section 5.2), so that the design stays symmetric to the bit whatever
   * rounding does. The grid must allow the symmetry (vox_symmetry_check)
   * and the design domain must have it (passive and empty voxels on whole
   * orbits); VOX_ERR_INVALID_ARGUMENT otherwise. */
  vox_symmetry symmetry;
  /* Periodic cells of symmetry reflect6 or rotate3 whose materials are
   * equally stiff: 1 (the default) solves one strain of each of the orbits
   * {xx, yy, zz} and {xy, yz, zx} that the objective or the final C^H reads
   * and takes the others' fields as its field turned about the cell's
   * diagonal, x -> y -> z (their exact solutions on a design the turn leaves
   * unchanged: a third of the solves where a whole orbit is read, C11 = C22
   * = C33 up to rounding); 0 solves every strain. */
  int cell_turned_fields;
  /* Periodic cells whose objective solves the hydrostatic strain in the
   * design iterations (bulk): 1 (the default) starts the final
   * evaluation's zz field from that field less those of xx and yy, solved
   * first (by linearity the hydrostatic field is the sum of the three
   * normal ones), where that start's residual is below the load's (so
   * after the last design iteration changed the moduli a little: not
   * while the penalty grows), and zz is solved from there to the same
   * tolerance; 0 solves zz from rest, the hydrostatic field dropped. The
   * same memory either way (zz's field takes the hydrostatic one's place);
   * turned fields (cell_turned_fields) solve no zz of its own. */
  int cell_zz_from_hydrostatic;
  /* The starting design. NULL: the model's density where it has one (a
   * design to continue), else the volume fraction on every design element,
   * or for a periodic cell Zhang et al. 2023's trigonometric family (seed 1): a
   * uniform density is a stationary point of every cell objective, so a
   * cell's run would end where it began.
   * Otherwise this initial design (voxfe/initial_design.h) on the design
   * elements (vox_initial_design_make_masked), with these options' volume
   * fraction and symmetry in place of its own, and its least density raised
   * to the optimizer's density_min where that is higher. */
  const vox_initial_design *initial;
  double volume_fraction;      /* target, of the design-domain volume */
  double penalty;              /* final SIMP exponent p, in [1, VOX_PENALTY_MAX] */
  double emin_ratio;           /* Emin / E */
  vox_filter_type filter;
  double filter_radius;        /* R, mm (distance between element centres) */
  /* The sensitivity filter's floor gamma (Andreassen et al. 2011): the
   * filtered sensitivity of element e is sum_j H_ej x_j dc_j / (max(gamma,
   * x_e) sum_j H_ej), so an element below gamma takes its neighbours'
   * x_j dc_j divided by gamma. VOX_SENSITIVITY_FLOOR_AUTO: 1e-3 with OC,
   * whose multiplicative update keeps a density near 0 near 0 whatever its
   * sensitivity; VOX_MMA_SENSITIVITY_FLOOR with MMA, which moves a density
   * by what its gradient says: at 1e-3 a density at 0 beside material gets
   * hundreds of times its neighbours' sensitivity, jumps up by the move
   * limit and falls back to 0 in the next iterations, and the design made
   * of such elements takes the multigrid several times the CG iterations
   * (docs/engine.md, "The sensitivity filter's floor"). */
  double sensitivity_floor;
  double move_limit;           /* zeta: |rho_new - rho| <= zeta */
  double damping;              /* eta: exponent on B */
  double q_max;                /* final intermediate-density exponent q (1 = off) */
  int continuation;            /* eq. 11 and 12; when 0, p and q are final at once */
  int continuation_start_p;    /* p = 1 for iterations <= this */
  double continuation_growth_p;/* gamma of eq. 11 */
  int continuation_start_q;    /* q = 1 for iterations <= this */
  double continuation_growth_q;/* factor of eq. 12 */
  int max_iterations;          /* 0: no design iteration; the given design (the model's
                                  density, or the initial design) is evaluated as it is, at
                                  the final penalty and unfiltered: its compliance, or a
                                  cell's C^H */
  double change_tolerance;     /* stop when max |d rho| <= this ... */
  double objective_tolerance;  /* ... and |df| / f <= this (after continuation) ... */
  double constraint_tolerance; /* ... and, with MMA, every design constraint met to this:
                                  g <= this for the normalised g = value / limit - 1
                                  (|g| for an equality); 1e-3 */
  int settle_iterations;       /* ... in this many design iterations in a row
                                  (Zhang et al. 2023 section 6: 3); 1 by default */
  vox_solver_options solver;
  int snapshot_every;          /* > 0: the physical density of every N-th iteration is kept
                                  in the model (vox_model_add_snapshot); 0: none */
  /* Where the adjoint problem of a mechanism is solved: VOX_ADJOINT_GPU_AUTO
   * on a second GPU, at the same time as the state, when the backend is CUDA
   * and another device exists (the two K40s of Martinez-Frutos et al.
   * 2017), else after the state on the backend's own device;
   * VOX_ADJOINT_GPU_NONE always the latter; an index >= 0 on that CUDA
   * device. The designs are the same either way.
   * Self-adjoint objectives (compliance) solve no adjoint. */
  int adjoint_gpu;
  /* Lower bound of the design densities. Modified SIMP lets densities reach
   * 0, but the multiplicative OC update cannot move a density away from 0
   * again; a mechanism's first iterations take every element whose
   * sensitivity is positive down by the move limit, which from a start at
   * the move limit is 0 for good. VOX_DENSITY_MIN_AUTO: 0 for compliance,
   * 1e-3 for mechanisms (Sigmund's mechanism codes). */
  double density_min;
  /* Stopping early and continuing later (voxfe-optimize's signals,
   * --checkpoint-every and --resume). `interrupted`, where given, is asked
   * after every design iteration: non-zero ends the run there with
   * VOX_STOP_INTERRUPTED (the final design is evaluated and stored as at
   * any other end). */
  int (*interrupted)(void *self);
  void *interrupted_self;
  /* `checkpoint`, where given, gets the run's state after every
   * checkpoint_every-th design iteration of the run (0: never) and after
   * the last one of an interrupted run: the model as it stands (the history
   * so far, the density of the design variables then) and the state
   * (voxfe/checkpoint.h) that `resume` continues from. An error it returns
   * ends the run with that error. Only the model's own objectives
   * (compliance, heat, mechanisms) have checkpoints: a cell objective with
   * checkpoint_every, or resume, is VOX_ERR_UNSUPPORTED. */
  int checkpoint_every;
  vox_status (*checkpoint)(void *self, const vox_model *model, const vox_checkpoint *state);
  void *checkpoint_self;
  /* NULL, or a state `checkpoint` gave: the run goes on after that state's
   * design iteration as if it had never stopped (the same designs, history
   * and final numbers, to the bit on one backend with one thread count).
   * The model is the one of that run with the checkpoint's history and
   * snapshots (the checkpoint's file holds both); a model or an option that
   * shapes the design other than the checkpoint's is VOX_ERR_INVALID_ARGUMENT
   * naming it. max_iterations counts the run's design iterations from its
   * start, those before the checkpoint included. */
  const vox_checkpoint *resume;
} vox_optimizer_options;

#define VOX_DENSITY_MIN_AUTO (-1.0)
#define VOX_SENSITIVITY_FLOOR_AUTO (-1.0)
/* The sensitivity filter's floor of an MMA run (VOX_SENSITIVITY_FLOOR_AUTO) */
#define VOX_MMA_SENSITIVITY_FLOOR 0.05
/* The largest SIMP penalty: the published ones are 3 to 5; at 1e308
 * every intermediate density's stiffness underflows to Emin and the run
 * "converges" on an empty design. */
#define VOX_PENALTY_MAX 100.0

/* CG's relative tolerance for the six solves of a periodic cell where the
 * user gives none (voxfe-optimize), Zhang et al. 2023's (its Fig. 6): C^H in the
 * energy form is second order in the fields' error, so the moduli stay
 * within 0.2 % of those solved to 1e-6 in a fraction of the time
 * (docs/benchmarks.md). */
#define VOX_CELL_RTOL 1e-2
#define VOX_CELL_RTOL_TEXT "1e-2"

/* The optimizer's default CG tolerance (vox_optimizer_options_default):
 * VOX_CELL_RTOL for a periodic cell, 1e-6 otherwise (vox_optimizer_rtol). */
#define VOX_RTOL_AUTO 0.0

enum { VOX_ADJOINT_GPU_AUTO = -1, VOX_ADJOINT_GPU_NONE = -2 };

typedef enum vox_stop_reason {
  VOX_STOP_CONVERGED = 1,       /* change and objective tolerances met */
  VOX_STOP_MAX_ITERATIONS = 2,  /* the iteration limit, p and q at their final values */
  VOX_STOP_CONTINUATION_UNFINISHED = 3, /* the iteration limit before continuation brought
                                           p or q to its final value */
  VOX_STOP_INTERRUPTED = 4,     /* options.interrupted asked to stop */
  VOX_STOP_EVALUATED = 5,       /* max_iterations 0: the given design evaluated */
  VOX_STOP_SOLVER_FAILED = -1   /* a state solve did not converge */
} vox_stop_reason;

typedef struct vox_optimize_result {
  int iterations;
  double objective;
  double volume_fraction;
  double non_discreteness;
  vox_stop_reason reason;
  vox_solve_result last_solve;  /* of the last failing or last solve */
  double seconds_solve, seconds_sensitivity, seconds_filter, seconds_update;
  /* discretization efg: the design iterations' stages of Lu et al. 2021
   * table 1 (the final evaluation not counted): the assembly of K, the
   * solves (preconditioner setup and CG) in seconds_solve, the
   * sensitivities and the update; 0 on the FE path */
  double seconds_assembly;
  /* of seconds_solve: the preconditioner's setup (the patches' inverses,
   * the multigrid's levels and its smoothers' bounds), and of that the
   * bounds alone (Lanczos' method, with the last level's factor running
   * beside it on a GPU); 0 on the FE path */
  double seconds_preconditioner, seconds_bounds;
  /* VOX_EFG_PC_MG: how many times the last level was factored */
  int efg_mg_factors;
  /* the final design's own state (its solves, and a cell's other strains) */
  double seconds_final;
  /* every solve's of the run: the design iterations' (those before a
   * resumed checkpoint included) and the final evaluation's */
  int total_cg_iterations;
  int final_cg_iterations;      /* the final evaluation's share of them */
  double final_penalty, final_q; /* p and q of the last design iteration */
  /* cell objectives: C^H of the final design (6x6, voxfe/homogenize.h's
   * order) and its moduli, from all six unit strains solved at the final
   * design (the design iterations solve only those the objective needs:
   * vox_cell_objective_strains); not set (has_tensor 0) when a solve failed */
  int has_tensor;
  double tensor[36];
  vox_cell_moduli moduli;
  int adjoint_gpu;              /* the CUDA device that solved the adjoints; -1: none */
  int cell_solver; /* cell objectives: 1 when the single-precision cell solver solved them */
  int cell_turned; /* cell objectives: 1 when fields were turned (cell_turned_fields) */
  /* cell objectives: 1 when the final evaluation's zz started from the
   * hydrostatic field (cell_zz_from_hydrostatic) */
  int cell_zz_derived;
  int by_turns;    /* 1 when the solver and the design took turns on the device
                      (vox_solver_options.by_turns) */
  /* MMA: the largest entry of the residual of the KKT conditions (Svanberg's
   * kktcheck, the objective scaled as the method sees it) at the design of
   * the last design iteration, with the multipliers of the subproblem that
   * made it; -1 with OC, or before MMA's second iteration */
  double kkt_residual;
} vox_optimize_result;

void vox_optimizer_options_default(vox_optimizer_options *options);
/* The CG tolerance a run with these options solves to: solver.rtol, or
 * where that is VOX_RTOL_AUTO the cell's or the default's. */
double vox_optimizer_rtol(const vox_optimizer_options *options);
/* The sensitivity filter's floor a run with these options takes:
 * options.sensitivity_floor, or where that is VOX_SENSITIVITY_FLOOR_AUTO
 * the update's (1e-3 with OC, VOX_MMA_SENSITIVITY_FLOOR with MMA). */
double vox_optimizer_sensitivity_floor(const vox_optimizer_options *options);
const char *vox_filter_name(vox_filter_type filter);
/* "fe" or "efg"; the parser returns -1 for other words. */
const char *vox_discretization_name(vox_discretization discretization);
int vox_discretization_parse(const char *text, vox_discretization *discretization);
/* "oc", "mma"; the parser returns -1 for other words. */
const char *vox_design_update_name(vox_design_update update);
int vox_design_update_parse(const char *text, vox_design_update *update);
/* "jacobi" or "sa"; the parser returns -1 for other words. */
const char *vox_efg_preconditioner_name(vox_efg_preconditioner preconditioner);
int vox_efg_preconditioner_parse(const char *text, vox_efg_preconditioner *preconditioner);
int vox_filter_parse(const char *text, vox_filter_type *filter);
/* Words for messages: "converged", "iteration limit reached", ... */
const char *vox_stop_reason_string(vox_stop_reason reason);
/* The file's token (docs/file-format.md): "converged", "iteration_limit",
 * "continuation_unfinished", "interrupted", "evaluated", "solver_failed"; the parser
 * returns -1 for other words. */
const char *vox_stop_reason_name(vox_stop_reason reason);
int vox_stop_reason_parse(const char *text, vox_stop_reason *reason);
/* "compliance" (VOX_CELL_NONE: the model's own objective), "bulk", "shear",
 * "poisson", "poisson-log", "custom". */
const char *vox_cell_objective_name(vox_cell_objective objective);
int vox_cell_objective_parse(const char *text, vox_cell_objective *objective);
/* The cell problems that the cell objective of `options` solves in each
 * design iteration, as a mask: bit s for unit strain s (C^H's Voigt order xx
 * yy zz xy yz zx), bit 6 for the hydrostatic strain (1, 1, 1, 0, 0, 0).
 * Entry C_ij (0-based) and its sensitivity need the fields of strains i and
 * j (Zhang et al. 2023 eq. 7, 9); the bulk modulus (eq. 19), 9 B = e_h' C^H e_h,
 * needs only the hydrostatic field, 0x40. The Poisson objectives (eq. 21,
 * 22) read the normal block, 0x07; the shear modulus (eq. 20) the shear
 * diagonal, 0x38; an expression the entries it names (vox_expression_uses);
 * a custom function, which does not say, all six, 0x3f. 0 for
 * VOX_CELL_NONE, or an expression that names no entry (which vox_optimize
 * refuses: it does not depend on the design). */
unsigned vox_cell_objective_strains(const vox_optimizer_options *options);
/* "xx yy zz" for 0x07, "hydrostatic" for 0x40: the strains of a mask, for
 * messages (buf of at least 30 characters). */
const char *vox_strains_text(unsigned strains, char *buf, size_t size);

/* Runs the optimization on `model` (stage model or design: an existing
 * density is the starting design). On success fills model->density (the
 * physical density), model->displacement (final state, every load case),
 * appends to model->history, records the end in model->optimization_end
 * (the stop reason and the final design's numbers, those of `result`) and
 * sets model->stage = VOX_STAGE_DESIGN. Progress is reported once per
 * iteration. */
vox_status vox_optimize(vox_context *ctx, vox_backend *backend, vox_model *model,
                        const vox_optimizer_options *options, vox_optimize_result *result);

#ifdef __cplusplus
}
#endif
#endif
