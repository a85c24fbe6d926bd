/* SPDX-License-Identifier: BSD-3-Clause */
/* What a solve or an optimization will allocate on a backend, checked before
 * anything is allocated (private). A GPU has a fixed memory: a run that
 * cannot fit fails at once with the bytes it needs, the bytes free and the
 * largest grid of the same proportions that fits, instead of failing in the
 * middle of its setup. */
#ifndef VOXFE_MEMORY_PLAN_H
#define VOXFE_MEMORY_PLAN_H

#include "backend_ops.h"
#include "voxfe/model.h"
#include "voxfe/optimizer.h"
#include "voxfe/solver.h"

/* Room for what is not counted, as a factor and a fixed sum: the CUDA
 * context's own growth, allocation granularity, the filter's taps, and the
 * workspaces of the cuBLAS and cuSOLVER handles of the coarsest level
 * (tens of MiB). */
#define VOX_MEMORY_MARGIN 1.02
#define VOX_MEMORY_MARGIN_BYTES ((size_t)160 << 20)

/* The optimizer's vectors per element for a model and options, counted
 * from the layouts its state is made from (optimizer.c,
 * design_constraints.c): design variables, sensitivities, element energies
 * and the design mask; the physical density and dV/dx with the density
 * filter; the passive values where some element is not design; the design
 * constraints' masks and (MMA) gradients, and MMA's own vectors and design
 * element indices (mma_design.h). */
int vox_memory_optimizer_vectors(const vox_model *model, const vox_optimizer_options *opt);

/* The solver options vox_optimize solves with (the fine smoothing steps and
 * the tolerance resolved), for its memory plan. */
void vox_memory_optimizer_solver(const vox_model *model, const vox_optimizer_options *opt,
                                 vox_solver_options *out);

/* Bytes on the backend for a grid of `dofs_per_node` with `n_cases` load
 * cases and its solver; `prescribed`: some displacement is prescribed
 * non-zero (three more vectors); `optimizing`, when not 0, the optimizer's
 * vectors per element (vox_memory_optimizer_vectors), adds them and its
 * filter. For a periodic grid being optimized,
 * n_cases is the number of unit strains the objective solves in each
 * design iteration (vox_cell_objective_strains); the final evaluation's
 * six fields are counted too (the larger phase). */
size_t vox_memory_needed(const vox_backend *be, const vox_grid *grid, int dofs_per_node,
                         int n_cases, int prescribed, const vox_solver_options *solver,
                         int optimizing);

/* The same count item by item (at most VOX_MEMORY_ITEMS, the margin the
 * last): what a run's memory goes to, for benchmarks and for deciding what
 * to cut. total is vox_memory_needed's result. */
enum { VOX_MEMORY_ITEMS = 40 };
typedef struct vox_memory_item {
  const char *what;
  double bytes;
} vox_memory_item;
typedef struct vox_memory_plan {
  int n;
  vox_memory_item item[VOX_MEMORY_ITEMS];
  double total;
} vox_memory_plan;
void vox_memory_plan_items(const vox_backend *be, const vox_grid *grid, int dofs_per_node,
                           int n_cases, int prescribed, const vox_solver_options *solver,
                           int optimizing, vox_memory_plan *plan);

/* VOX_CELL_SOLVER_AUTO resolved for the optimization of a periodic cell
 * (grid periodic, n_cases the solves of a design iteration, optimizing as
 * below) with free_bytes of device memory: the first of OFF, ON and PHASED
 * whose plan fits them (PHASED, the smallest, where none does), where the
 * cell solver applies (mixed precision, a tolerance it reaches, a backend
 * and grid it serves); OFF otherwise. solver->cell_solver is not read. */
vox_cell_solver_use vox_cell_solver_choice(const vox_backend *be, const vox_grid *grid, int n_cases,
                                           const vox_solver_options *solver, int optimizing,
                                           size_t free_bytes);

/* solver->cell_solver with AUTO resolved by vox_cell_solver_choice with the
 * backend's free memory (OFF on a backend without device memory of its
 * own): what vox_optimize runs. */
vox_cell_solver_use vox_cell_solver_resolve(vox_backend *be, const vox_grid *grid, int n_cases,
                                            const vox_solver_options *solver, int optimizing);

/* solver->by_turns with AUTO resolved for an optimization on a bounded
 * grid: ON where the plan without turns exceeds the free device memory
 * (on any MPI rank) and the run `can_take_turns`, else OFF. Every process
 * calls it. */
vox_by_turns vox_by_turns_resolve(vox_backend *be, const vox_grid *grid, int dofs_per_node,
                                  int n_cases, const vox_solver_options *solver, int optimizing,
                                  int can_take_turns);

/* On backends with their own device memory: VOX_ERR_NO_MEMORY with the
 * message above when the need exceeds the free memory. */
vox_status vox_memory_check(vox_backend *be, const vox_grid *grid, int dofs_per_node, int n_cases,
                            int prescribed, const vox_solver_options *solver, int optimizing);

#endif
