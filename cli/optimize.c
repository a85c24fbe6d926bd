/* SPDX-License-Identifier: BSD-3-Clause */
/* voxfe-optimize: reads a model file, runs topology optimization of the
 * model's objective (compliance, or a mechanism's output displacement) on it, and writes the design file (density, displacements,
 * history). Nothing is written unless the run succeeds. */
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli_checkpoint.h"
#include "cli_common.h"
#include "cli_mpi.h"
#include "cli_design_options.h"
#include "cli_files.h"
#include "cli_options.h"
#include "cli_progress.h"
#include "cli_signals.h"
#include "cli_solver_options.h"
#include "voxfe/voxfe.h"
#ifdef VOXFE_HAVE_MPI
#include "voxfe/mpi.h"
#endif

/* The default filter radius, in voxel sizes; the library's default is in mm
 * and cannot know the grid. */
#define FILTER_RADIUS_VOXELS 1.5

typedef struct settings {
  vox_write_options write;    /* --deflate-fields */
  const char *input;
  const char *output;
  vox_optimizer_options opt;
  vox_initial_design initial; /* kind CLI_INITIAL_AUTO: opt.initial stays NULL */
  const char *expression;     /* --expression */
  vox_backend_options backend; /* --device, --kernel, --fp16-levels */
  const char *checkpoint;     /* --checkpoint */
  const char *resume;         /* --resume */
  int threads;
  int quiet;
  int timings;                /* --timings */
  int mpi;                    /* --mpi */
  int mpi_exchange;           /* vox_mpi_exchange (voxfe/mpi.h, in MPI builds) */
  int mpi_gather_nodes;       /* vox_mpi_options.gather_nodes, -1 auto */
  int mpi_overlap;            /* vox_mpi_overlap (voxfe/mpi.h, in MPI builds): 0 auto */
} settings;

static int parse_objective(const char *what, const char *text, void *value) {
  vox_cell_objective objective;
  if (vox_cell_objective_parse(text, &objective) != 0) {
    cli_error("%s: expected compliance, bulk, shear, poisson, poisson-log or custom, got '%s'",
              what, text);
    return -1;
  }
  *(vox_cell_objective *)value = objective;
  return 0;
}

/* --objective not given: the model file's cell objective (a problem file's
 * `cell:`), else compliance; resolved in run(). */
#define OBJECTIVE_FROM_MODEL ((vox_cell_objective)-1)

static void format_objective(const void *value, char *buf, size_t size) {
  snprintf(buf, size, "%s", vox_cell_objective_name(*(const vox_cell_objective *)value));
}

static int parse_discretization(const char *what, const char *text, void *value) {
  if (vox_discretization_parse(text, value) != 0) {
    cli_error("%s: expected fe or efg, got '%s'", what, text);
    return -1;
  }
  return 0;
}

static int parse_optimizer(const char *what, const char *text, void *value) {
  if (vox_design_update_parse(text, value) != 0) {
    cli_error("%s: expected oc or mma, got '%s'", what, text);
    return -1;
  }
  return 0;
}

static int parse_mma_subproblem(const char *what, const char *text, void *value) {
  if (vox_mma_subproblem_parse(text, value) != 0) {
    cli_error("%s: expected primal-dual or dual, got '%s'", what, text);
    return -1;
  }
  return 0;
}

static int parse_mma_bounds(const char *what, const char *text, void *value) {
  if (vox_mma_bounds_parse(text, value) != 0) {
    cli_error("%s: expected design or move, got '%s'", what, text);
    return -1;
  }
  return 0;
}

static void format_mma_subproblem(const void *value, char *buf, size_t size) {
  snprintf(buf, size, "%s", vox_mma_subproblem_name(*(const vox_mma_subproblem *)value));
}

static void format_mma_bounds(const void *value, char *buf, size_t size) {
  snprintf(buf, size, "%s", vox_mma_bounds_name(*(const vox_mma_bounds *)value));
}

static int parse_mma_convexity(const char *what, const char *text, void *value) {
  if (vox_mma_convexity_parse(text, value) != 0) {
    cli_error("%s: expected svanberg or aage, got '%s'", what, text);
    return -1;
  }
  return 0;
}

static void format_mma_convexity(const void *value, char *buf, size_t size) {
  snprintf(buf, size, "%s", vox_mma_convexity_name(*(const vox_mma_convexity *)value));
}

static void format_discretization(const void *value, char *buf, size_t size) {
  snprintf(buf, size, "%s", vox_discretization_name(*(const vox_discretization *)value));
}

static void format_optimizer(const void *value, char *buf, size_t size) {
  snprintf(buf, size, "%s", vox_design_update_name(*(const vox_design_update *)value));
}

static int parse_efg_preconditioner(const char *what, const char *text, void *value) {
  if (vox_efg_preconditioner_parse(text, value) != 0) {
    cli_error("%s: expected jacobi, schwarz, mg or sa, got '%s'", what, text);
    return -1;
  }
  return 0;
}

static int parse_efg_sa_smoother(const char *what, const char *text, void *value) {
  vox_efg_preconditioner pc;
  if (vox_efg_preconditioner_parse(text, &pc) != 0 || pc == VOX_EFG_PC_SA) {
    cli_error("%s: expected jacobi or schwarz, got '%s'", what, text);
    return -1;
  }
  *(vox_efg_preconditioner *)value = pc;
  return 0;
}

static void format_efg_preconditioner(const void *value, char *buf, size_t size) {
  snprintf(buf, size, "%s",
           vox_efg_preconditioner_name(*(const vox_efg_preconditioner *)value));
}

static int parse_filter(const char *what, const char *text, void *value) {
  if (vox_filter_parse(text, value) != 0) {
    cli_error("%s: expected sensitivity, density or none, got '%s'", what, text);
    return -1;
  }
  return 0;
}

static void format_filter(const void *value, char *buf, size_t size) {
  snprintf(buf, size, "%s", vox_filter_name(*(const vox_filter_type *)value));
}

/* --density-min: auto or a number in [0, 1). */
static int parse_density_min(const char *what, const char *text, void *value) {
  return cli_parse_auto_real(what, text, (cli_range){0, 1, 0, 1}, VOX_DENSITY_MIN_AUTO, value);
}

static void format_density_min(const void *value, char *buf, size_t size) {
  cli_format_auto_real(*(const double *)value, VOX_DENSITY_MIN_AUTO, buf, size);
}

/* --sensitivity-floor: auto or a number in (0, 1]. */
static int parse_sensitivity_floor(const char *what, const char *text, void *value) {
  return cli_parse_auto_real(what, text, (cli_range){0, 1, 1, 0}, VOX_SENSITIVITY_FLOOR_AUTO,
                             value);
}

static void format_sensitivity_floor(const void *value, char *buf, size_t size) {
  cli_format_auto_real(*(const double *)value, VOX_SENSITIVITY_FLOOR_AUTO, buf, size);
}

/* --adjoint-gpu: auto, none or a CUDA device index. */
static int parse_adjoint_gpu(const char *what, const char *text, void *value) {
  int *gpu = value;
  char *end;
  if (!strcmp(text, "auto")) {
    *gpu = VOX_ADJOINT_GPU_AUTO;
    return 0;
  }
  if (!strcmp(text, "none")) {
    *gpu = VOX_ADJOINT_GPU_NONE;
    return 0;
  }
  long index = strtol(text, &end, 10);
  if (*text && !*end && index >= 0 && index < 1024) {
    *gpu = (int)index;
    return 0;
  }
  cli_error("%s: expected auto, none or a CUDA device index, got '%s'", what, text);
  return -1;
}

static void format_adjoint_gpu(const void *value, char *buf, size_t size) {
  const int gpu = *(const int *)value;
  if (gpu == VOX_ADJOINT_GPU_AUTO)
    snprintf(buf, size, "auto");
  else if (gpu == VOX_ADJOINT_GPU_NONE)
    snprintf(buf, size, "none");
  else
    snprintf(buf, size, "%d", gpu);
}

static int parse_cell_solver(const char *what, const char *text, void *value) {
  if (vox_cell_solver_use_parse(text, value) == 0) return 0;
  cli_error("%s: expected auto, off, on or phased, got '%s'", what, text);
  return -1;
}

static void format_cell_solver(const void *value, char *buf, size_t size) {
  snprintf(buf, size, "%s", vox_cell_solver_use_name(*(const vox_cell_solver_use *)value));
}

static int parse_by_turns(const char *what, const char *text, void *value) {
  if (vox_by_turns_parse(text, value) == 0) return 0;
  cli_error("%s: expected auto, off or on, got '%s'", what, text);
  return -1;
}

static void format_by_turns(const void *value, char *buf, size_t size) {
  snprintf(buf, size, "%s", vox_by_turns_name(*(const vox_by_turns *)value));
}

#define AT(member) offsetof(settings, member)
/* Accepted ranges: (a, b] is {a, b, 1, 0}, (a, b) {a, b, 1, 1}. */
#define POSITIVE {0, INFINITY, 1, 0}
#define FRACTION {0, 1, 1, 0}
#define AT_LEAST(a) {a, INFINITY, 0, 0}
#define COUNT {1, INT_MAX, 0, 0}
#define ANY {-INFINITY, INFINITY, 0, 0}
#define RANGE(a, b) {a, b, 0, 0}
#define OPEN_FRACTION {0, 1, 1, 1}
/* A number of the optimizer's, recorded in the history. */
#define NUMBER(NAME, KIND, ARG, MEMBER, RANGE, HELP)                                    \
  {.name = NAME, .arg = ARG, .kind = KIND, .offset = AT(MEMBER), .range = RANGE,         \
   .flags = CLI_RECORD, .help = HELP}

static const cli_option options[] = {
    {.kind = CLI_HEADING, .help = "Output:"},
    {.name = "output", .key = 'o', .arg = "FILE", .kind = CLI_STRING, .offset = AT(output),
     .flags = CLI_REQUIRED,
     .help = "design file to write (netCDF); written only when the run succeeds"},
    {.name = "deflate-fields", .kind = CLI_ENABLE, .offset = AT(write.deflate_fields),
     .flags = CLI_RECORD, .help = CLI_DEFLATE_FIELDS_HELP},
    {.name = "timings", .kind = CLI_ENABLE, .offset = AT(timings),
     .help = "print the seconds of each stage on stderr: reading the model, starting the "
             "device, the optimization (its design iterations' solves, sensitivities, filter "
             "and update, the setup, the final design's evaluation), writing the design"},

    {.kind = CLI_HEADING, .help = "Optimization:"},
    {.name = "discretization", .arg = "KIND", .kind = CLI_CUSTOM,
     .offset = AT(opt.discretization), .flags = CLI_RECORD,
     .help = "fe: trilinear bricks with a density per voxel; efg: the element-free Galerkin "
             "method of Lu, Gong, Zhang, Xie and Yin 2021, the grid nodes as field nodes with "
             "moving least-squares shape functions and a density per node (smooth without a "
             "filter: --filter and --emin-ratio are not used; --density-min auto is 1e-3), "
             "on the CPU or the GPU (--device; with --efg-preconditioner sa the CPU only), for "
             "the compliance of elasticity models",
     .parse = parse_discretization, .format = format_discretization},
    NUMBER("efg-support", CLI_REAL, "D", opt.efg_support_scale, AT_LEAST(1),
           "efg: the support radius of the shape functions in nearest-node distances (the "
           "smallest voxel edge), d_max of Lu et al. 2021 eq. 5"),
    NUMBER("efg-penalty", CLI_REAL, "A", opt.efg_penalty_scale, POSITIVE,
           "efg: the penalty that holds the supports, in multiples of the largest Young's "
           "modulus times the smallest voxel edge (N/mm); larger holds them closer (to about "
           "one part in A) and takes more CG iterations"),
    {.name = "efg-preconditioner", .arg = "PC", .kind = CLI_CUSTOM,
     .offset = AT(opt.efg_preconditioner), .flags = CLI_RECORD,
     .help = "efg: the CG preconditioner, mg (geometric multigrid: Galerkin levels on every "
             "other node line, smoothed by the patches below on the first level, "
             "--efg-sa-degree Chebyshev steps; the fastest measured), jacobi (the inverted 3x3 "
             "diagonal blocks of K, as Lu et al. 2021), schwarz (additive Schwarz: each voxel's "
             "8 corner nodes solved together, 24 x 24 inverses made each design iteration) or "
             "sa (a smoothed-aggregation multigrid V-cycle built from K each "
             "design iteration; the CPU only: --device auto then picks it)",
     .parse = parse_efg_preconditioner, .format = format_efg_preconditioner},
    {.name = "efg-sa-smoother", .arg = "M", .kind = CLI_CUSTOM,
     .offset = AT(opt.efg_sa_smoother), .flags = CLI_RECORD,
     .help = "efg, sa: the first level's smoothing preconditioner inside the Chebyshev "
             "iteration, schwarz (the voxels' 8-node patches of --efg-preconditioner schwarz; "
             "a third to a sixth of jacobi's CG iterations) or jacobi (K's inverted 3x3 "
             "diagonal blocks)",
     .parse = parse_efg_sa_smoother, .format = format_efg_preconditioner},
    NUMBER("efg-mg-coarse-dofs", CLI_INTEGER, "N", opt.efg_mg_coarse_dofs, RANGE(0, 46340),
           "efg, mg: coarsen until a level has at most N unknowns, then factor it densely "
           "(N^2 doubles, on a GPU twice: its factor and inverse); 0 (the default): 1000 on "
           "the CPU, 2000 on a GPU"),
    NUMBER("efg-mg-lanczos-steps", CLI_INTEGER, "N", opt.efg_mg_lanczos_steps, RANGE(1, 64),
           "efg, mg: the Lanczos steps that estimate the largest eigenvalue of each level's "
           "smoothed operator for its Chebyshev smoothing, each design iteration (10; the same "
           "CG counts as 20 on the examples of Lu et al. 2021); too few can fall short of it "
           "and make the V-cycle indefinite, and a solve that breaks down for it is redone with "
           "twice the steps"),
    NUMBER("efg-mg-refactor", CLI_INTEGER, "N", opt.efg_mg_refactor, RANGE(1, 1000000),
           "efg, mg: factor the last level (and on a GPU invert it) at every N-th design "
           "iteration and keep it in between (1: every one); a kept one leaves the V-cycle "
           "positive definite but weaker as the design moves, and a solve that breaks down "
           "with kept parts, or takes more than 4 times the most CG iterations of a solve of "
           "the design iteration before plus 20, goes on with all made afresh"),
    NUMBER("efg-mg-refactor-drift", CLI_REAL, "T", opt.efg_mg_refactor_drift, AT_LEAST(0),
           "efg, mg: at those design iterations keep the last level's factor all the same, "
           "and at every one each voxel's patch inverse of the first level's smoother, while "
           "no diagonal entry of theirs has moved by more than the fraction T since it was "
           "made (0.3; 0: never); the diagonal's moves bound a kept inverse's error from inside "
           "(on the last level of the examples of Lu et al. 2021 within a few per cent)"),
    NUMBER("efg-mg-chebyshev-lower", CLI_REAL, "L", opt.efg_mg_chebyshev_lower, OPEN_FRACTION,
           "efg, mg: smooth each level by Chebyshev iteration over [L, 1.1] times the largest "
           "eigenvalue of its smoothed operator, L in (0, 1) (0.1); a smaller L damps more of "
           "the spectrum's lower end and less of each eigenvalue"),
    NUMBER("efg-record", CLI_INTEGER, "0|1", opt.efg_record, RANGE(0, 1),
           "efg, mg on a GPU: record the V-cycle once a solve and replay it (1), or launch it "
           "kernel by kernel (0); the same iterates"),
    NUMBER("efg-penalty-patches", CLI_INTEGER, "0|1", opt.efg_penalty_patches, RANGE(0, 1),
           "efg, mg and sa's schwarz smoother: also smooth each supported node's penalty "
           "couplings together, a patch of the supports of it and of its supported grid "
           "neighbours (1; a fifth of the CG iterations measured), or with the voxels' patches "
           "alone (0)"),
    NUMBER("efg-patch-size", CLI_INTEGER, "1|2", opt.efg_patch_size, RANGE(1, 2),
           "efg, mg, schwarz and sa's schwarz smoother: the first level's patches, a voxel's 8 "
           "nodes (1) or a block of 2 x 2 x 2 voxels' 27 (2; its nodes near the supports left "
           "to the penalty patches): they hold more of the wide MLS coupling for about a third "
           "more work a smoothing step"),
    NUMBER("efg-penalty-patch-weight", CLI_REAL, "W", opt.efg_penalty_patch_weight, FRACTION,
           "efg: the penalty points' patches' weight in the smoother, in (0, 1] (1); less "
           "lowers the largest eigenvalue that the Chebyshev smoothing spans, which their "
           "overlap near the supports can set, but holds the penalty couplings less"),
    NUMBER("efg-penalty-relative", CLI_INTEGER, "0|1", opt.efg_penalty_relative, RANGE(0, 1),
           "efg: the supports' springs on components held at 0 follow the material, the "
           "penalty times the SIMP factor of the density at the supported node (1; a support "
           "on void material otherwise conditions K by 1e13 and multiplies the CG iterations), "
           "or the penalty everywhere (0, as Lu et al. 2021)"),
    NUMBER("efg-sa-degree", CLI_INTEGER, "N", opt.efg_sa_degree, RANGE(1, 16),
           "efg, sa and mg: the Chebyshev degree of each level's smoothing before and after its "
           "coarse correction (a V-cycle costs about 2 N + 3 products with K)"),
    NUMBER("efg-sa-aggregate", CLI_INTEGER, "N", opt.efg_sa_aggregate, RANGE(0, 64),
           "efg, sa: the first coarse level's aggregates, blocks of N x N x N grid lines of "
           "nodes built once for the run; 0 aggregates the strong couplings of K afresh in "
           "each design iteration (see --efg-sa-strength)"),
    NUMBER("efg-sa-strength", CLI_REAL, "T", opt.efg_sa_strength, FRACTION,
           "efg, sa with --efg-sa-aggregate 0: the strength of connection that keeps a "
           "coupling of K in the aggregation graph, |K_ij| >= T sqrt(|K_ii| |K_jj|)"),
    {.name = "objective", .arg = "NAME", .kind = CLI_CUSTOM, .offset = AT(opt.cell_objective),
     .flags = CLI_RECORD,
     .help = "compliance (the model's own objective: compliance, or the output displacement "
             "of a mechanism whose problem file says so), or a property of the model as a "
             "periodic unit cell (every axis a multiple of 4 voxels, no supports or loads): "
             "bulk or shear (maximise the modulus), poisson or poisson-log (negative Poisson "
             "ratio, Zhang et al. 2023 eq. 21 or 22), or custom (minimise the --expression "
             "formula of C^H)",
     .default_text = "the model file's cell objective, else compliance",
     .parse = parse_objective, .format = format_objective},
    NUMBER("poisson-beta", CLI_REAL, "B", opt.poisson_beta, FRACTION,
           "poisson: the weight beta^k of the normal stiffnesses at iteration k, beta in (0, 1)"),
    NUMBER("poisson-eta", CLI_REAL, "H", opt.poisson_eta, POSITIVE, "poisson-log: eta"),
    NUMBER("poisson-gamma", CLI_REAL, "G", opt.poisson_gamma, POSITIVE, "poisson-log: gamma"),
    NUMBER("poisson-tau", CLI_REAL, "T", opt.poisson_tau, ANY,
           "poisson-log: tau; 0 means -1 / E^gamma of the material"),
    NUMBER("volume-fraction", CLI_REAL, "F", opt.volume_fraction, FRACTION,
           "target volume fraction of the design domain, in (0, 1]"),
    NUMBER("penalty", CLI_REAL, "P", opt.penalty, RANGE(1, VOX_PENALTY_MAX),
           "SIMP penalty exponent p (its final value under continuation)"),
    NUMBER("emin-ratio", CLI_REAL, "R", opt.emin_ratio, POSITIVE,
           "modulus of void over that of solid, E_min / E (keeps K positive definite)"),
    {.name = "filter", .arg = "KIND", .kind = CLI_CUSTOM, .offset = AT(opt.filter),
     .flags = CLI_RECORD, .help = "sensitivity, density or none", .parse = parse_filter,
     .format = format_filter},
    {.name = "filter-radius", .arg = "R", .kind = CLI_REAL, .offset = AT(opt.filter_radius),
     .range = POSITIVE, .flags = CLI_RECORD,
     .help = "filter radius in mm, between element centres",
     .default_text = "1.5 times the longest voxel edge"},
    {.name = "optimizer", .arg = "METHOD", .kind = CLI_CUSTOM, .offset = AT(opt.update),
     .flags = CLI_RECORD,
     .help = "the design update: oc (optimality criteria) or mma (the method of moving "
             "asymptotes, Svanberg 1987, with the volume as its constraint; q 1)",
     .parse = parse_optimizer, .format = format_optimizer},
    NUMBER("move-limit", CLI_REAL, "M", opt.move_limit, FRACTION,
           "largest change of a density in one iteration (OC and MMA)"),
    {.name = "mma-bounds", .arg = "KIND", .kind = CLI_CUSTOM, .offset = AT(opt.mma.bounds),
     .flags = CLI_RECORD,
     .help = "mma: the bounds whose width the asymptotes' start and limits take: design (the "
             "density range, Svanberg 1987) or move (each density's move-limit box, "
             "max(density min, x - M) to min(1, x + M) for --move-limit M, as Aage, Andreassen "
             "and Lazarov 2015 hand their MMA)",
     .parse = parse_mma_bounds, .format = format_mma_bounds},
    {.name = "mma-convexity", .arg = "KIND", .kind = CLI_CUSTOM, .offset = AT(opt.mma.convexity),
     .flags = CLI_RECORD,
     .help = "mma: the terms that make the approximations strictly convex: svanberg (every "
             "function's get 0.001 |gradient| + raa0 / bound width, Svanberg 2007) or aage "
             "(the objective's get 0.001 |gradient| + raa0 / (2 (U - L)), the constraints' "
             "none: the MMA of Aage, Andreassen and Lazarov 2015, whose raa0 is 1e-6)",
     .parse = parse_mma_convexity, .format = format_mma_convexity},
    NUMBER("mma-raa0", CLI_REAL, "R", opt.mma.raa0, POSITIVE,
           "mma: the approximations' least curvature (see --mma-convexity)"),
    NUMBER("mma-epsilon-min", CLI_REAL, "E", opt.mma.epsilon_min, RANGE(1e-15, 0.5),
           "mma: the subproblem's last barrier parameter (it goes down from 1 by tens)"),
    NUMBER("mma-asymptote-init", CLI_REAL, "S", opt.mma.asymptote_init, RANGE(1e-3, 10),
           "mma: the asymptotes' distance from the design in the first two iterations, "
           "in widths of the bounds (--mma-bounds)"),
    NUMBER("mma-asymptote-increase", CLI_REAL, "F", opt.mma.asymptote_increase, RANGE(1, 10),
           "mma: factor that widens the asymptotes where a density keeps its direction"),
    NUMBER("mma-asymptote-decrease", CLI_REAL, "F", opt.mma.asymptote_decrease, FRACTION,
           "mma: factor that narrows the asymptotes where a density oscillates"),
    NUMBER("mma-objective-scale", CLI_REAL, "S", opt.mma.objective_scale, POSITIVE,
           "mma: the objective is scaled so that its first iteration's value has this "
           "magnitude (Svanberg: 1 to 100 suit a0 = 1, c = 1000)"),
    {.name = "mma-subproblem", .arg = "METHOD", .kind = CLI_CUSTOM,
     .offset = AT(opt.mma.subproblem), .flags = CLI_RECORD,
     .help = "mma: how each iteration's subproblem is solved: primal-dual (Svanberg's "
             "interior-point method in all its variables, about a dozen passes over the "
             "densities a Newton step) or dual (Svanberg 1987: the densities explicit in the "
             "constraints' multipliers, whose concave dual is maximised with one pass a "
             "Newton step; faster, the same subproblem)",
     .parse = parse_mma_subproblem, .format = format_mma_subproblem},
    NUMBER("damping", CLI_REAL, "D", opt.damping, FRACTION,
           "damping exponent of the optimality-criteria update"),
    NUMBER("q-max", CLI_REAL, "Q", opt.q_max, AT_LEAST(1),
           "final exponent q that pushes intermediate densities to 0 or 1; 1 = off"),
    {.name = "no-continuation", .kind = CLI_DISABLE, .offset = AT(opt.continuation),
     .flags = CLI_RECORD, .help = "use the final p and q from the first iteration on"},
    {.name = "density-min", .arg = "D", .kind = CLI_CUSTOM, .offset = AT(opt.density_min),
     .flags = CLI_RECORD,
     .help = "lower bound of the design densities (auto: 0, 1e-3 for compliant mechanisms, "
             "whose OC update could otherwise leave densities at 0 for good)",
     .parse = parse_density_min, .format = format_density_min},
    {.name = "sensitivity-floor", .arg = "G", .kind = CLI_CUSTOM,
     .offset = AT(opt.sensitivity_floor), .flags = CLI_RECORD,
     .help = "the sensitivity filter's floor: an element's filtered sensitivity is divided by "
             "max(G, its density) (auto: 1e-3 with oc, 0.05 with mma, whose update would "
             "otherwise lift densities at 0 beside material by the move limit and drop them "
             "again, a design of one-element spikes that costs the multigrid several times "
             "the CG iterations)",
     .parse = parse_sensitivity_floor, .format = format_sensitivity_floor},
    NUMBER("max-iterations", CLI_INTEGER, "N", opt.max_iterations, RANGE(0, INT_MAX),
           "stop after N design iterations; 0: evaluate the given design (the model's "
           "density, or --initial) without changing it, at the final --penalty and without "
           "filtering it: its compliance and state, or a periodic cell's C^H"),
    NUMBER("checkpoint-every", CLI_INTEGER, "N", opt.checkpoint_every, RANGE(0, INT_MAX),
           "write a checkpoint (--checkpoint) after every N-th design iteration, from which "
           "--resume goes on; 0: only when SIGINT or SIGTERM stops the run (after the design "
           "iteration under way, with the design so far: exit status 130 or 143)"),
    {.name = "checkpoint", .arg = "FILE", .kind = CLI_STRING, .offset = AT(checkpoint),
     .flags = CLI_RECORD, .help = "the checkpoint file (netCDF, written atomically)",
     .default_text = "the output's name with .checkpoint.nc for its extension"},
    {.name = "resume", .arg = "CHECKPOINT", .kind = CLI_STRING, .offset = AT(resume),
     .flags = CLI_RECORD,
     .help = "go on from a checkpoint of a run of this MODEL with these options (checked; "
             "--max-iterations may grow): the design and history come out as the uninterrupted "
             "run's, to the bit on the CPU with the same --threads"},
    NUMBER("snapshot-every", CLI_INTEGER, "N", opt.snapshot_every, COUNT,
           "save the density of every N-th iteration in the design file (variable "
           "density_snapshot), for voxfe-export -o history.pvd"),
    NUMBER("change-tol", CLI_REAL, "T", opt.change_tolerance, AT_LEAST(0),
           "converged when the largest density change is at most T (and the "
           "objective tolerance is met)"),
    NUMBER("objective-tol", CLI_REAL, "T", opt.objective_tolerance, AT_LEAST(0),
           "converged when the relative change of the objective is at most T (and the "
           "change tolerance is met)"),
    NUMBER("constraint-tol", CLI_REAL, "T", opt.constraint_tolerance, AT_LEAST(0),
           "mma: converged only when every design constraint holds to T (value / limit - 1 "
           "<= T; an equality within T)"),
    NUMBER("settle-iterations", CLI_INTEGER, "N", opt.settle_iterations, COUNT,
           "converged when both tolerances hold in N design iterations in a row"),

    CLI_DESIGN_OPTIONS(settings, opt.symmetry, initial, expression),

    CLI_SOLVER_OPTIONS_DEFAULT(settings, opt.solver,
                               "relative residual at which a state solve has converged",
                               "1e-6; for a periodic cell's six solves " VOX_CELL_RTOL_TEXT,
                               NULL),
    NUMBER("start-history", CLI_INTEGER, "M", opt.solver.start_history, RANGE(0, 2),
           "earlier states (0 to 2) that with the last one span each state solve's start, "
           "at their energy-minimal combination; 0: the last state as it is"),
    NUMBER("cell-turned-fields", CLI_INTEGER, "0|1", opt.cell_turned_fields, RANGE(0, 1),
           "periodic cells of --symmetry reflect6 or rotate3: solve one strain of each of "
           "{xx, yy, zz} and {xy, yz, zx} and take the others' fields as its field turned about "
           "the cell's diagonal, their exact solutions on such a design (1), or solve every "
           "strain (0)"),
    NUMBER("cell-zz-from-hydrostatic", CLI_INTEGER, "0|1", opt.cell_zz_from_hydrostatic,
           RANGE(0, 1),
           "periodic cells whose objective solves the hydrostatic strain (bulk): start the final "
           "design's zz field from the hydrostatic field less those of xx and yy where that is "
           "nearer than rest, then solve it to the same tolerance (1), or solve zz from rest (0)"),
    {.name = "cell-solver", .arg = "USE", .kind = CLI_CUSTOM, .offset = AT(opt.solver.cell_solver),
     .flags = CLI_RECORD,
     .help = "periodic cells in mixed precision: solve the fields with the single-precision cell "
             "solver (16 bytes a dof against 64; on), or with it taking turns on the device with "
             "the optimizer's per-element state, which waits in host memory during the solves "
             "(phased), or with CG in double (off); auto: the first of off, on and phased that "
             "fits the device's memory",
     .parse = parse_cell_solver, .format = format_cell_solver},
    {.name = "by-turns", .arg = "USE", .kind = CLI_CUSTOM, .offset = AT(opt.solver.by_turns),
     .flags = CLI_RECORD,
     .help = "problems on a bounded grid (the OC update, no design constraints): the "
             "optimizer's per-element vectors and its filter wait in host memory during the "
             "solves, and the solver's vectors and multigrid are freed during the rest of each "
             "design iteration; the loads wait there throughout (on): about a fifth less device "
             "memory for copies of the design and the loads each design iteration, the same "
             "design; auto: on where the run does not fit otherwise",
     .parse = parse_by_turns, .format = format_by_turns},
    NUMBER("mg-bound-refresh", CLI_INTEGER, "N", opt.solver.mg_bound_refresh, COUNT,
           "multigrid: estimate the coarse levels' smoother bounds (with --discretization efg "
           "every level's) at every N-th design iteration and keep them in between (a solve "
           "that breaks down with kept bounds is redone with fresh ones)"),
    CLI_EXECUTION_OPTIONS(settings, backend, threads, quiet),
    {.name = "adjoint-gpu", .arg = "GPU", .kind = CLI_CUSTOM, .offset = AT(opt.adjoint_gpu),
     .help = "compliant mechanisms: the CUDA device that solves the adjoint problem at the "
             "same time as the state (auto: a second GPU when there is one; none: after the "
             "state on the same device); the design is the same either way",
     .parse = parse_adjoint_gpu, .format = format_adjoint_gpu},
#ifdef VOXFE_HAVE_MPI
    {.name = "mpi", .kind = CLI_ENABLE, .offset = AT(mpi), .flags = CLI_RECORD,
     .help = "split the model over the MPI ranks the program runs on (mpirun -np N "
             "voxfe-optimize --mpi ...): slabs of element layers along z, one a rank, on its "
             "CPU cores or (--device cuda or auto) on a GPU of its own (the node's GPUs dealt "
             "out by the ranks' order on the node); rank 0 reads the model and sends it to the "
             "others, and writes the design; the same design as one process, to rounding"},
    CLI_MPI_EXCHANGE_OPTION(settings, mpi_exchange),
    CLI_MPI_GATHER_OPTION(settings, mpi_gather_nodes),
    CLI_MPI_OVERLAP_OPTION(settings, mpi_overlap),
#endif
    {.kind = CLI_END},
};

static const cli_program program = {
    .name = "voxfe-optimize",
    .args_doc = "MODEL.nc -o DESIGN.nc",
    .doc = "Topology optimization (SIMP, filter, optimality criteria or the method of moving "
           "asymptotes, continuation) of a "
           "voxfe model file: minimum (weighted) compliance, the largest output "
           "displacement of a compliant mechanism, or the least volume, under the volume "
           "fraction or the model's design constraints (volumes of labelled regions, "
           "compliance limits of load cases: --optimizer mma) when the model says so; "
           "writes the design file.",
    .epilogue = "Progress goes to stderr: one line rewritten in place on a terminal, one "
                "line per iteration otherwise. A summary goes to stdout.",
    .options = options,
    .input = "MODEL.nc",
    .input_offset = AT(input),
};

/* The filter radius the user did not give: a fixed number of voxels, so
 * that the same options suit every grid. */
static void resolve_filter_radius(settings *s, const vox_grid *g) {
  if (!isnan(s->opt.filter_radius)) return;
  double h = fmax(g->voxel_size[0], fmax(g->voxel_size[1], g->voxel_size[2]));
  s->opt.filter_radius = FILTER_RADIUS_VOXELS * h;
}

/* The exit status and message of a run that ended without an error. */
static int report_result(const settings *s, const vox_optimize_result *r) {
  if (r->reason == VOX_STOP_SOLVER_FAILED) {
    const vox_solve_result *solve = &r->last_solve;
    double relative = solve->rhs_norm > 0 ? solve->residual_norm / solve->rhs_norm : NAN;
    /* the failing solve may come after the last design iteration (the
     * final state), so count the iterations done, not the one failing */
    cli_error("%s after %d design iterations: %s after %d CG iterations, relative residual "
              "%.3g (--cg-tol %g, --cg-max-iterations %d); %s not written",
              vox_stop_reason_string(r->reason), r->iterations,
              vox_convergence_string(solve->reason), solve->iterations, relative,
              s->opt.solver.rtol, s->opt.solver.max_iterations, s->output);
    return CLI_EXIT_FAILED;
  }
  return 0;
}

/* --objective custom and --expression go together. */
static int check_expression(const settings *s) {
  const int custom = s->opt.cell_objective == VOX_CELL_CUSTOM;
  if (custom && !s->expression) {
    cli_error("--objective custom needs --expression F, a formula of C11..C66 to minimise");
    return CLI_EXIT_USAGE;
  }
  if (!custom && s->expression) {
    cli_error("--expression is the formula of --objective custom, not of --objective %s",
              vox_cell_objective_name(s->opt.cell_objective));
    return CLI_EXIT_USAGE;
  }
  return 0;
}

/* The cell settings the options left open, from the model file (a problem
 * file's `cell:`, checked when the file was read): the objective, the
 * formula of a custom one and the symmetry. */
static int resolve_cell_settings(settings *s, const vox_model *m) {
  if (s->opt.cell_objective == OBJECTIVE_FROM_MODEL) {
    s->opt.cell_objective = VOX_CELL_NONE;
    if (m->cell_objective) vox_cell_objective_parse(m->cell_objective, &s->opt.cell_objective);
  }
  if (s->opt.symmetry == CLI_SYMMETRY_FROM_MODEL) {
    s->opt.symmetry = VOX_SYMMETRY_NONE;
    if (m->cell_symmetry) vox_symmetry_parse(m->cell_symmetry, &s->opt.symmetry);
  }
  if (s->opt.cell_objective == VOX_CELL_CUSTOM && !s->expression)
    s->expression = m->cell_expression;
  return check_expression(s);
}

/* The ranks but rank 0 of an MPI run write no checkpoint. */
static vox_status skip_checkpoint(void *self, const vox_model *model, const vox_checkpoint *state) {
  return VOX_OK;
}

static int run(vox_context *ctx, settings *s, int argc, char **argv) {
  vox_model model = {0};
  vox_backend *backend = NULL;
  vox_expression *expression = NULL;
  char *history = NULL, *checkpoint_path = NULL;
  vox_checkpoint resume = {0};
  int status = 0;
#ifdef VOXFE_HAVE_MPI
  const int root = !s->mpi || cli_mpi_rank() == 0;
#else
  const int root = 1;
#endif
  if (!root) s->quiet = 1; /* rank 0 reports */
  if (s->mpi && (s->resume || s->opt.update == VOX_UPDATE_MMA ||
                 s->opt.discretization == VOX_DISCRETIZATION_EFG)) {
    cli_error("--mpi: %s is not split over MPI ranks yet",
              s->resume                                         ? "--resume"
              : s->opt.update == VOX_UPDATE_MMA                 ? "--optimizer mma"
                                                                : "--discretization efg");
    return CLI_EXIT_USAGE;
  }
  /* t_read: the model read (and sent to every rank), t_device: the backend
   * made, t0 and t1 around the optimization (--timings) */
  struct timespec t_start, t_read1, t_read, t_device, t0, t1;
  /* the device's runtime and libraries start while the model is read, as
   * in voxfe-analyze (ranks the GPU they will take) */
  vox_device_warm_up *warm_up = vox_device_warm_up_start(
      s->backend.device, cli_warm_up_device(s->mpi, s->backend.device_index));
  clock_gettime(CLOCK_MONOTONIC, &t_start);
  if (root) status = cli_read_model(ctx, s->input, &model);
  clock_gettime(CLOCK_MONOTONIC, &t_read1);
#ifdef VOXFE_HAVE_MPI
  if (s->mpi) { /* rank 0's model on every rank */
    if ((status = cli_mpi_from_root(status))) goto done;
    vox_status bs = vox_mpi_model_broadcast(ctx, cli_mpi_engine(), 0, &model);
    if (bs != VOX_OK) {
      status = cli_fail(ctx, bs, CLI_RUNNING);
      goto done;
    }
  }
#endif
  clock_gettime(CLOCK_MONOTONIC, &t_read);
  if (s->mpi && !s->quiet)
    fprintf(stderr, "%s: read in %.3f s, sent to %d ranks in %.3f s\n", s->input,
            cli_seconds_between(&t_start, &t_read1),
#ifdef VOXFE_HAVE_MPI
            cli_mpi_size(),
#else
            1,
#endif
            cli_seconds_between(&t_read1, &t_read));
  if (!status && s->resume && !(status = cli_resume(ctx, s->resume, &model, &resume)))
    s->opt.resume = &resume;
  if (status) goto done;
  resolve_filter_radius(s, &model.grid);
  if ((status = resolve_cell_settings(s, &model))) goto done;
  /* the element-free Galerkin loop's smoothed-aggregation preconditioner
   * runs on the CPU only (its block Jacobi runs on either device) */
  const int efg_sa = s->opt.discretization == VOX_DISCRETIZATION_EFG &&
                     s->opt.efg_preconditioner == VOX_EFG_PC_SA;
  if (efg_sa && s->backend.device == VOX_DEVICE_CUDA) {
    cli_error("--efg-preconditioner sa runs on the CPU only: use --device cpu, or "
              "--efg-preconditioner schwarz or jacobi on the GPU");
    status = CLI_EXIT_USAGE;
    goto done;
  }
  if (efg_sa) s->backend.device = VOX_DEVICE_CPU;
  /* --cg-tol not given: the engine's (a cell's C^H is second order in its
   * fields' error, so its solves stop earlier: VOX_CELL_RTOL) */
  s->opt.solver.rtol = vox_optimizer_rtol(&s->opt);
  if (s->expression) { /* parsed once already, when the options or the file were read */
    vox_status es = vox_expression_parse(ctx, s->expression, &expression);
    if (es != VOX_OK) {
      status = cli_fail(ctx, es, CLI_READING);
      goto done;
    }
    s->opt.expression = expression;
  }
  /* auto: the model's density, or the volume fraction (the optimizer's own
   * start); a kind: that design, whatever the input holds. A periodic cell
   * without a density of its own starts from Zhang et al. 2023's trigonometric
   * family instead, as the engine does for NULL, but with this program's
   * --seed and --initial-order. */
  if (s->initial.kind == CLI_INITIAL_AUTO && s->opt.cell_objective != VOX_CELL_NONE &&
      !model.density)
    s->initial.kind = VOX_INITIAL_TRIGONOMETRIC;
  s->opt.initial = s->initial.kind == CLI_INITIAL_AUTO ? NULL : &s->initial;
  vox_context_set_threads(ctx, s->threads);

  vox_status vs;
#ifdef VOXFE_HAVE_MPI
  if (s->mpi) { /* every rank the same call and the same outcome */
    s->opt.adjoint_gpu = VOX_ADJOINT_GPU_NONE; /* every GPU holds a slab */
    vs = cli_mpi_backend(ctx, &model.grid, vox_physics_dofs_per_node(model.physics), &s->backend,
                         (vox_mpi_exchange)s->mpi_exchange, s->mpi_gather_nodes, NULL,
                         VOX_MPI_RESULTS_EVERY_RANK, VOX_MPI_HIERARCHY_ROOT,
                         (vox_mpi_overlap)s->mpi_overlap,
                         &backend);
  } else
#endif
    vs = vox_backend_create_with(ctx, &s->backend, &backend);
  clock_gettime(CLOCK_MONOTONIC, &t_device);
  if (vs != VOX_OK) {
    status = cli_fail_input(ctx, vs, CLI_RUNNING, s->input);
    goto done;
  }
  /* record the device that ran, not "auto" */
  s->backend.device = vox_backend_device(backend);
#ifdef VOXFE_HAVE_MPI
  if (s->mpi) cli_mpi_say_ranks(s->input, backend, s->quiet);
#endif

  cli_progress progress;
  cli_progress_init(&progress, stderr, s->quiet, s->opt.q_max > 1);
  vox_context_set_progress(ctx, cli_progress_report, &progress);
  /* checkpoints, and SIGINT or SIGTERM stop the run after its design
   * iteration (cli_signals.h) */
  history = cli_history_line(&program, s, argc, argv);
  checkpoint_path = cli_checkpoint_path(s->output, s->checkpoint);
  if (!history || !checkpoint_path) {
    cli_error("out of memory");
    status = CLI_EXIT_FAILED;
    goto done;
  }
  cli_checkpointer checkpointer = {ctx, checkpoint_path, history, 0};
  s->opt.checkpoint = root ? cli_checkpoint_write : skip_checkpoint; /* rank 0 writes */
  s->opt.checkpoint_self = &checkpointer;
  s->opt.interrupted = cli_interrupted;
#ifdef VOXFE_HAVE_MPI
  if (s->mpi) s->opt.interrupted = cli_mpi_interrupted; /* every rank stops together */
#endif
  cli_signals_defer();
  vox_optimize_result result = {0};
  clock_gettime(CLOCK_MONOTONIC, &t0);
  vs = vox_optimize(ctx, backend, &model, &s->opt, &result);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  cli_progress_finish(&progress);
#ifdef VOXFE_HAVE_MPI
  if (s->mpi) { /* a failure of every rank (rank 0 says it), or of one (it says it) */
    status = cli_mpi_agree_running(ctx, vs, s->input);
    if (status) goto done;
  }
#endif
  if (vs != VOX_OK && s->resume && !strncmp(vox_context_message(ctx), "the checkpoint", 14)) {
    /* the engine's refusal of the checkpoint, with the file's name */
    cli_error("--resume %s: %s", s->resume, vox_context_message(ctx));
    status = cli_exit_status(vs, CLI_READING);
    goto done;
  }
  if (vs != VOX_OK) {
    status = cli_fail_input(ctx, vs, CLI_RUNNING, s->input);
    goto done;
  }
  if ((status = report_result(s, &result))) goto done;

#ifdef VOXFE_HAVE_MPI
  if (s->mpi) cli_mpi_root_alone(); /* the others wait for its file */
#endif
  if (root) status = cli_write_model(ctx, s->output, &model, history, &s->write);
#ifdef VOXFE_HAVE_MPI
  if (s->mpi) status = cli_mpi_from_root(status);
#endif
  if (status) goto done;
  if (s->timings && root) {
    struct timespec t_write;
    clock_gettime(CLOCK_MONOTONIC, &t_write);
    const double iterations = result.seconds_solve + result.seconds_sensitivity +
                              result.seconds_filter + result.seconds_update;
    fprintf(stderr,
            "%s: seconds: read %.3f, device %.3f, optimize %.3f (design iterations: solve %.3f, "
            "sensitivities %.3f, filter %.3f, update %.3f; setup %.3f; final evaluation %.3f), "
            "write %.3f, total %.3f\n",
            s->input, cli_seconds_between(&t_start, &t_read), cli_seconds_between(&t_read, &t_device),
            cli_seconds_between(&t0, &t1), result.seconds_solve, result.seconds_sensitivity,
            result.seconds_filter, result.seconds_update,
            cli_seconds_between(&t0, &t1) - iterations - result.seconds_final,
            result.seconds_final, cli_seconds_between(&t1, &t_write),
            cli_seconds_between(&t_start, &t_write));
  }
  if (!s->quiet && result.has_tensor) {
    const vox_cell_moduli *m = &result.moduli;
    printf("%s: %s after %d iterations: %s objective %.6g, volume fraction %.4f, M_nd %.1f%%; "
           "%.2f s, %d CG iterations\n",
           s->output, vox_stop_reason_string(result.reason), result.iterations,
           vox_cell_objective_name(s->opt.cell_objective), result.objective, result.volume_fraction,
           result.non_discreteness,
           cli_seconds_between(&t0, &t1),
           result.total_cg_iterations);
    if (result.cell_solver)
      printf("fields solved by the single-precision cell solver (--cell-solver)\n");
    if (result.cell_turned)
      printf("fields of yy, zz, yz and zx: those of xx and xy turned about the cell's diagonal "
             "(--cell-turned-fields)\n");
    if (result.cell_zz_derived)
      printf("field of zz at the final design started from the hydrostatic one less those of xx "
             "and yy (--cell-zz-from-hydrostatic)\n");
    char strains[32]; /* what each design iteration solved */
    printf("strains %s solved per design iteration (what the objective reads), the six unit "
           "strains at the final design\n",
           vox_strains_text(vox_cell_objective_strains(&s->opt), strains, sizeof strains));
    printf("homogenized stiffness C^H (Voigt order xx yy zz xy yz zx, engineering shear):\n");
    for (int i = 0; i < 6; i++)
      printf("  %12.6g %12.6g %12.6g %12.6g %12.6g %12.6g\n", result.tensor[6 * i],
             result.tensor[6 * i + 1], result.tensor[6 * i + 2], result.tensor[6 * i + 3],
             result.tensor[6 * i + 4], result.tensor[6 * i + 5]);
    printf("bulk modulus %.6g, shear modulus %.6g (Zhang et al. 2023 eq. 19, 20)\n", m->bulk,
           m->shear);
    printf("Young's moduli E_x %.6g, E_y %.6g, E_z %.6g; shear moduli G_xy %.6g, G_yz %.6g, "
           "G_zx %.6g\n", m->young[0], m->young[1], m->young[2], m->shear_axis[0],
           m->shear_axis[1], m->shear_axis[2]);
    printf("Poisson ratios nu_xy %.6g, nu_xz %.6g, nu_yx %.6g, nu_yz %.6g, nu_zx %.6g, "
           "nu_zy %.6g\n", m->poisson[0][1], m->poisson[0][2], m->poisson[1][0],
           m->poisson[1][2], m->poisson[2][0], m->poisson[2][1]);
  } else if (!s->quiet) {
    /* a mechanism reports the output displacement it maximised, -objective */
    const int mechanism = model.objective == VOX_OBJECTIVE_OUTPUT_DISPLACEMENT;
    printf("%s: %s after %d iterations: final design %s %.6g%s, volume fraction %.4f, "
           "M_nd %.1f%%; %.2f s, %d CG iterations",
           s->output, vox_stop_reason_string(result.reason), result.iterations,
           mechanism                            ? "output displacement"
           : model.physics == VOX_PHYSICS_HEAT ? "thermal compliance"
                                                : "compliance",
           mechanism ? -result.objective : result.objective, mechanism ? " mm" : "",
           result.volume_fraction, result.non_discreteness,
           cli_seconds_between(&t0, &t1),
           result.total_cg_iterations);
    if (result.adjoint_gpu >= 0) printf(", adjoint on GPU %d", result.adjoint_gpu);
    if (result.by_turns) printf(", solver and design by turns");
    if (result.reason == VOX_STOP_CONTINUATION_UNFINISHED)
      printf(" (p %.4g of %g, q %.4g of %g)", result.final_penalty, s->opt.penalty,
             result.final_q, s->opt.q_max);
    if (checkpointer.written) printf("; checkpoint %s", checkpoint_path);
    printf("\n");
    if (s->opt.discretization == VOX_DISCRETIZATION_EFG) {
      char factors[64] = "";
      if (s->opt.efg_preconditioner == VOX_EFG_PC_MG)
        snprintf(factors, sizeof factors, "; the last level factored %d times",
                 result.efg_mg_factors);
      printf("stages of the design iterations (Lu et al. 2021 table 1): assembly %.3f s, "
             "solve %.3f s (with the preconditioner's setup %.3f s, of it the smoothers' bounds "
             "%.3f s%s), sensitivity %.3f s, update %.3f s\n",
             result.seconds_assembly, result.seconds_solve, result.seconds_preconditioner,
             result.seconds_bounds, factors, result.seconds_sensitivity, result.seconds_update);
    }
  }
  /* a stop the user asked for is not a success: the run is unfinished */
  if (result.reason == VOX_STOP_INTERRUPTED)
    status = cli_signal_exit_status(cli_signal_received());
done:
  vox_device_warm_up_finish(warm_up); /* no exit while the device is starting */
  free(history);
  free(checkpoint_path);
  vox_checkpoint_free(&resume);
  vox_expression_free(expression);
  if (backend) vox_backend_destroy(backend);
  vox_model_free(&model);
  return status;
}

int main(int argc, char **argv) {
  settings s = {.mpi_gather_nodes = -1}; /* auto */
  vox_backend_options_default(&s.backend);
  vox_optimizer_options_default(&s.opt);
  s.opt.filter_radius = NAN; /* not given: resolved from the grid in run() */
  s.opt.solver.rtol = VOX_RTOL_AUTO; /* not given: resolved from the objective in run() */
  vox_initial_design_defaults(&s.initial);
  s.initial.kind = CLI_INITIAL_AUTO;
  s.opt.cell_objective = OBJECTIVE_FROM_MODEL;
  s.opt.symmetry = CLI_SYMMETRY_FROM_MODEL;
  int status = cli_parse(&program, argc, argv, &s);
  if (status) return status;
  const char *inputs[] = {s.input, s.resume};
  if ((status = cli_check_output(s.output, inputs, 2))) return status;
  /* the checkpoint may replace the one resumed from, not the model */
  char *checkpoint = cli_checkpoint_path(s.output, s.checkpoint);
  if (!checkpoint) return CLI_EXIT_FAILED;
  if (strcmp(checkpoint, s.output) == 0) {
    cli_error("--checkpoint %s: is the output file", checkpoint);
    status = CLI_EXIT_USAGE;
  } else {
    status = cli_check_output(checkpoint, inputs, 1);
  }
  free(checkpoint);
  if (status) return status;

#ifdef VOXFE_HAVE_MPI
  if (s.mpi && (status = cli_mpi_start(&argc, &argv))) return status;
#endif
  vox_context *ctx = cli_context();
  if (!ctx) return CLI_EXIT_FAILED;
  status = run(ctx, &s, argc, argv);
  vox_context_destroy(ctx);
#ifdef VOXFE_HAVE_MPI
  if (s.mpi) cli_mpi_finish();
#endif
  return status;
}
