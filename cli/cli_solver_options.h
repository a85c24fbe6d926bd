/* SPDX-License-Identifier: BSD-3-Clause */
/* The solver and execution options that every solving program shares
 * (voxfe-optimize, voxfe-analyze): parsers of their names and the option
 * table entries, declared once so that the programs take the same options
 * with the same help. */
#ifndef VOXFE_CLI_SOLVER_OPTIONS_H
#define VOXFE_CLI_SOLVER_OPTIONS_H

#include <limits.h>
#include <math.h>
#include <stddef.h>

#include "cli_options.h"

/* CLI_CUSTOM callbacks for vox_preconditioner, vox_smoother, vox_precision,
 * vox_kernel, vox_fp16_levels and vox_device values. */
int cli_parse_preconditioner(const char *what, const char *text, void *value);
void cli_format_preconditioner(const void *value, char *buf, size_t size);
int cli_parse_smoother(const char *what, const char *text, void *value);
void cli_format_smoother(const void *value, char *buf, size_t size);
int cli_parse_mg_cycle(const char *what, const char *text, void *value);
void cli_format_mg_cycle(const void *value, char *buf, size_t size);
int cli_parse_precision(const char *what, const char *text, void *value);
void cli_format_precision(const void *value, char *buf, size_t size);
int cli_parse_kernel(const char *what, const char *text, void *value);
void cli_format_kernel(const void *value, char *buf, size_t size);
int cli_parse_fp16_levels(const char *what, const char *text, void *value);
void cli_format_fp16_levels(const void *value, char *buf, size_t size);
int cli_parse_stencil_kernel(const char *what, const char *text, void *value);
void cli_format_stencil_kernel(const void *value, char *buf, size_t size);
int cli_parse_device(const char *what, const char *text, void *value);
void cli_format_device(const void *value, char *buf, size_t size);
/* The sparse preconditioner's: vox_sparse_coarse, vox_sa_fine_transfer,
 * and the per-level Chebyshev degrees (an int[VOX_SPARSE_MAX_DEGREES]). */
int cli_parse_sparse_coarse(const char *what, const char *text, void *value);
void cli_format_sparse_coarse(const void *value, char *buf, size_t size);
int cli_parse_sa_fine_transfer(const char *what, const char *text, void *value);
void cli_format_sa_fine_transfer(const void *value, char *buf, size_t size);
int cli_parse_sparse_degrees(const char *what, const char *text, void *value);
void cli_format_sparse_degrees(const void *value, char *buf, size_t size);

/* The "Solver:" entries of an option table, for a vox_solver_options at
 * member SOLVER of the settings struct TYPE; CLI_SOLVER_OPTIONS_DEFAULT
 * shows CG_TOL_DEFAULT and REACTION_TOL_DEFAULT as the defaults of --cg-tol
 * and --cg-reaction-tol (ones the program resolves; NULL: the values). */
#define CLI_SOLVER_OPTIONS(TYPE, SOLVER, CG_TOL_HELP)                                            \
  CLI_SOLVER_OPTIONS_DEFAULT(TYPE, SOLVER, CG_TOL_HELP, NULL, NULL)
#define CLI_SOLVER_OPTIONS_DEFAULT(TYPE, SOLVER, CG_TOL_HELP, CG_TOL_DEFAULT,                    \
                                   REACTION_TOL_DEFAULT)                                         \
  {.kind = CLI_HEADING, .help = "Solver:"},                                                      \
  {.name = "cg-tol", .arg = "T", .kind = CLI_REAL, .offset = offsetof(TYPE, SOLVER.rtol),        \
   .range = {0, 1, 1, 0}, .flags = CLI_RECORD, .help = CG_TOL_HELP,                              \
   .default_text = CG_TOL_DEFAULT},                                                              \
  {.name = "cg-max-iterations", .arg = "N", .kind = CLI_INTEGER,                                 \
   .offset = offsetof(TYPE, SOLVER.max_iterations), .range = {1, INT_MAX, 0, 0},                 \
   .flags = CLI_RECORD, .help = "CG iterations after which a solve has failed"},                 \
  {.name = "cg-energy-tol", .arg = "E", .kind = CLI_REAL,                                        \
   .offset = offsetof(TYPE, SOLVER.energy_tol), .range = {0, 1, 0, 1}, .flags = CLI_RECORD,      \
   .help = "stop CG also where the error's energy, estimated from the last --cg-window steps, " \
           "is at most E times the solution's strain energy (with loads alone: the "            \
           "compliance's relative error; Strakos and Tichy 2002); 0: off"},                      \
  {.name = "cg-reaction-tol", .arg = "T", .kind = CLI_REAL,                                      \
   .offset = offsetof(TYPE, SOLVER.reaction_tol), .range = {0, 1, 0, 1}, .flags = CLI_RECORD,    \
   .help = "stop CG also where the work of the reactions on the prescribed displacements (a "   \
           "compression test's force times its displacement) changed by at most T of itself "   \
           "over the last --cg-window steps; 0 (or no prescribed displacements): off",           \
   .default_text = REACTION_TOL_DEFAULT},                                                        \
  {.name = "cg-window", .arg = "D", .kind = CLI_INTEGER,                                         \
   .offset = offsetof(TYPE, SOLVER.cg_window), .range = {1, VOX_CG_WINDOW_MAX, 0, 0},            \
   .flags = CLI_RECORD,                                                                          \
   .help = "CG steps over which --cg-energy-tol and --cg-reaction-tol look back (more: safer, "  \
           "later)"},                                                                            \
  {.name = "preconditioner", .arg = "PC", .kind = CLI_CUSTOM,                                    \
   .offset = offsetof(TYPE, SOLVER.preconditioner), .flags = CLI_RECORD,                         \
   .help = "multigrid (a geometric multigrid V-cycle) or jacobi",                                \
   .parse = cli_parse_preconditioner, .format = cli_format_preconditioner},                      \
  {.name = "smoother", .arg = "KIND", .kind = CLI_CUSTOM,                                        \
   .offset = offsetof(TYPE, SOLVER.smoother), .flags = CLI_RECORD,                               \
   .help = "multigrid smoother: chebyshev or jacobi (damped)", .parse = cli_parse_smoother,      \
   .format = cli_format_smoother},                                                               \
  {.name = "smoothing-steps", .arg = "N", .kind = CLI_INTEGER,                                   \
   .offset = offsetof(TYPE, SOLVER.smoothing_steps), .range = {1, INT_MAX, 0, 0},                \
   .flags = CLI_RECORD,                                                                          \
   .help = "multigrid smoothing before and after the coarse correction: Jacobi sweeps or the "   \
           "Chebyshev degree"},                                                                  \
  {.name = "fine-smoothing-steps", .arg = "N", .kind = CLI_INTEGER,                              \
   .offset = offsetof(TYPE, SOLVER.fine_smoothing_steps), .range = {-1, INT_MAX, 0, 0},          \
   .flags = CLI_RECORD,                                                                          \
   .help = "the same on the finest level only; 0: as --smoothing-steps; -1: automatic (1 "      \
           "where voxfe-optimize gains by it: elasticity on a bounded grid)"},                   \
  {.name = "mg-levels", .arg = "N", .kind = CLI_INTEGER,                                         \
   .offset = offsetof(TYPE, SOLVER.mg_levels), .range = {0, INFINITY, 0, 0},                     \
   .flags = CLI_RECORD,                                                                          \
   .help = "multigrid levels, 0 to choose from the grid (see --mg-coarse-dofs)"},               \
  {.name = "mg-coarse-dofs", .arg = "N", .kind = CLI_INTEGER,                                    \
   .offset = offsetof(TYPE, SOLVER.mg_coarse_dofs), .range = {0, INT_MAX, 0, 0},                 \
   .flags = CLI_RECORD,                                                                          \
   .help = "with --mg-levels 0, coarsen until a level has at most N unknowns, the coarsest, "   \
           "solved directly; 0: the device's choice, 2000 on a GPU (a dense factor), 1000 on "   \
           "the CPU (a sparse one, on one core)"},                                               \
  {.name = "mg-cycle", .arg = "C", .kind = CLI_CUSTOM,                                           \
   .offset = offsetof(TYPE, SOLVER.mg_cycle), .flags = CLI_RECORD,                               \
   .help = "multigrid cycle: w (levels 2 and deeper cycled twice), v, or auto (w on the full "  \
           "box, v on the bone's sparse storage)",                                               \
   .parse = cli_parse_mg_cycle, .format = cli_format_mg_cycle},                                  \
  {.name = "mg-record", .arg = "0|1", .kind = CLI_INTEGER,                                       \
   .offset = offsetof(TYPE, SOLVER.mg_record), .range = {0, 1, 0, 0}, .flags = CLI_RECORD,       \
   .help = "multigrid: 1 records the cycle once after each setup and replays it where the GPU " \
           "can (one launch instead of one per kernel), 0 launches it op by op"},               \
  {.name = "precision", .arg = "P", .kind = CLI_CUSTOM,                                          \
   .offset = offsetof(TYPE, SOLVER.precision), .flags = CLI_RECORD,                              \
   .help = "multigrid storage: double, or mixed (single-precision coarse levels and smoother " \
           "products; with --discretization efg on a GPU level 0's K and patches in the "       \
           "smoother; CG stays in double)",                                                      \
   .parse = cli_parse_precision, .format = cli_format_precision}

/* The sparse (bone-only) storage's preconditioner (vox_sparse_pc_options),
 * for the programs that solve in that storage (voxfe-analyze; the
 * optimizer keeps the whole box); its profiling fills only the statistics
 * of the benchmarks, which no program prints, and so is no option. */
#define CLI_SPARSE_OPTIONS(TYPE, SOLVER)                                                         \
  {.name = "sparse-coarse", .arg = "KIND", .kind = CLI_CUSTOM,                                   \
   .offset = offsetof(TYPE, SOLVER.sparse.coarse), .flags = CLI_RECORD,                          \
   .help = "sparse storage's coarse levels: split (rediscretised, following the bone's "         \
           "connectivity), box (the plain coarse voxel images) or sa (smoothed aggregation of "  \
           "the assembled matrix)",                                                               \
   .parse = cli_parse_sparse_coarse, .format = cli_format_sparse_coarse},                        \
  {.name = "sparse-block-levels", .arg = "N", .kind = CLI_INTEGER,                               \
   .offset = offsetof(TYPE, SOLVER.sparse.block_levels), .range = {-1, INT_MAX, 0, 0},           \
   .flags = CLI_RECORD,                                                                          \
   .help = "sparse storage: the smoothed levels, from the finest, smoothed with the nodes' "     \
           "3 x 3 blocks instead of the diagonal; -1: all"},                                     \
  {.name = "sparse-degrees", .arg = "D0,D1,..", .kind = CLI_CUSTOM,                              \
   .offset = offsetof(TYPE, SOLVER.sparse.degree), .flags = CLI_RECORD,                          \
   .help = "sparse storage: each level's Chebyshev degree from the finest (the last for the "    \
           "levels below; 0: as the level before); none: --smoothing-steps, at least 4",         \
   .parse = cli_parse_sparse_degrees, .format = cli_format_sparse_degrees},                      \
  {.name = "sparse-record", .arg = "0|1", .kind = CLI_INTEGER,                                   \
   .offset = offsetof(TYPE, SOLVER.sparse.record), .range = {0, 1, 0, 0}, .flags = CLI_RECORD,   \
   .help = "sparse storage: 1 records the V-cycle once and replays it where the GPU can, 0 "     \
           "launches it op by op"},                                                              \
  {.name = "sparse-rigid-modes", .arg = "0|1", .kind = CLI_INTEGER,                             \
   .offset = offsetof(TYPE, SOLVER.sparse.rigid_modes), .range = {0, 1, 0, 0},                   \
   .flags = CLI_RECORD,                                                                          \
   .help = "sparse storage: 1 balances the V-cycle with the exact solve in the rigid motions "  \
           "the supports hold only weakly (the uniaxial test's lateral translations and "        \
           "rotation about the axis, held by pinned nodes), which the multigrid can resolve "    \
           "slowly; 0: the V-cycle alone"},                                                      \
  {.name = "sa-fine-transfer", .arg = "KIND", .kind = CLI_CUSTOM,                                \
   .offset = offsetof(TYPE, SOLVER.sparse.sa_fine_transfer), .flags = CLI_RECORD,                \
   .help = "--sparse-coarse=sa: the fine prolongator applied from the tentative one "            \
           "(implicit: less memory) or stored (explicit)",                                       \
   .parse = cli_parse_sa_fine_transfer, .format = cli_format_sa_fine_transfer},                  \
  {.name = "sa-prolongator-diagonal", .arg = "0|1", .kind = CLI_INTEGER,                         \
   .offset = offsetof(TYPE, SOLVER.sparse.sa_point_diagonal), .range = {0, 1, 0, 0},             \
   .flags = CLI_RECORD,                                                                          \
   .help = "--sparse-coarse=sa: 1 smooths the prolongators with the diagonal instead of the "    \
           "nodes' blocks"}

/* The "Execution:" entries: --device, --kernel, --fp16-levels and
 * --stencil-kernel (of the
 * vox_backend_options at member BACKEND), --threads, --quiet. */
#define CLI_EXECUTION_OPTIONS(TYPE, BACKEND, THREADS, QUIET)                                     \
  {.kind = CLI_HEADING, .help = "Execution:"},                                                   \
  {.name = "device", .arg = "DEV", .kind = CLI_CUSTOM, .offset = offsetof(TYPE, BACKEND.device), \
   .flags = CLI_RECORD, .help = "cpu, cuda or auto (the GPU when there is one)",                 \
   .parse = cli_parse_device, .format = cli_format_device},                                      \
  {.name = "kernel", .arg = "K", .kind = CLI_CUSTOM, .offset = offsetof(TYPE, BACKEND.kernel),   \
   .flags = CLI_RECORD,                                                                          \
   .help = "GPU K u kernel: dbd (per dof), nbn (per node), ebe (per element), modes (element "  \
           "products by the brick's reflection modes, summed into the nodes) or auto",           \
   .parse = cli_parse_kernel, .format = cli_format_kernel},                                      \
  {.name = "fp16-levels", .arg = "USE", .kind = CLI_CUSTOM,                                      \
   .offset = offsetof(TYPE, BACKEND.fp16_levels), .flags = CLI_RECORD,                           \
   .help = "GPU, --precision mixed: the smoothed coarse multigrid levels stored in FP16 (a "     \
           "third less time a level product; a solve that breaks down with them is redone in "   \
           "float): on, off, or auto (on unless the grid is periodic)",                          \
   .parse = cli_parse_fp16_levels, .format = cli_format_fp16_levels},                            \
  {.name = "stencil-kernel", .arg = "K", .kind = CLI_CUSTOM,                                     \
   .offset = offsetof(TYPE, BACKEND.stencil_kernel), .flags = CLI_RECORD,                        \
   .help = "GPU: the coarse multigrid levels' products a thread a row (row), a warp a node "     \
           "(warp: lane t on neighbour block t, for levels too small to fill the device), or "   \
           "auto (warp below 8,192 nodes)",                                                     \
   .parse = cli_parse_stencil_kernel, .format = cli_format_stencil_kernel},                      \
  {.name = "threads", .arg = "N", .kind = CLI_INTEGER, .offset = offsetof(TYPE, THREADS),        \
   .range = {0, 4096, 0, 0},                                                                     \
   .help = "CPU threads, 0 for OpenMP's choice: OMP_NUM_THREADS or all cores (with --mpi, "      \
           "divided among a node's ranks)"},                                                     \
  {.name = "quiet", .key = 'q', .kind = CLI_ENABLE, .offset = offsetof(TYPE, QUIET),             \
   .help = "print nothing but errors"}

#endif
