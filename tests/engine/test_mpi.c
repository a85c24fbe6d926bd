/* SPDX-License-Identifier: BSD-3-Clause */
/* The MPI backend (voxfe/mpi.h) against one process: run under mpirun with
 * any number of ranks, every rank solves the same model on the CPU backend
 * alone and split over the ranks, and the two must take the same CG
 * iterations and give the same displacements and compliance to 1e-12 of
 * their size (the sums differ only in their order).
 *
 * Parts: elasticity (a cantilever of two materials with a void tunnel and
 * SIMP densities down to a 1e-9 stiffness contrast, multigrid with four
 * levels), jacobi (the same with the Jacobi preconditioner), heat (heat
 * conduction with prescribed temperatures, i.e. a lifted right-hand side),
 * optimize (four design iterations of a cantilever with the density and the
 * sensitivity filter, history and design against one process), sparse (a
 * perlin bone nz^3 in the sparse storage: compressed along x between plates
 * of prescribed displacements, whose fixed dofs lie on the slabs'
 * interfaces, and clamped at the bottom under two load cases of forces on
 * the top; each with the connectivity-split and the box coarse levels),
 * download (a pseudo-random vector of the split grid, made on the ranks by
 * its global indices and gathered whole: on GPUs, a grid of 36 M dofs,
 * more than one of the device gathers' chunks), refuse (more ranks than
 * element layers), slabs (vox_mpi_slabs_weighted's splits). `nz=N` sets the grid's layers
 * (12), `slabs=a,b,...` each rank's layers (default: vox_mpi_slabs).
 * `device=cuda` runs both on CUDA devices (each rank on the device of its
 * rank on the node, modulo the devices; the one-process reference on the
 * same device) and exits 77 (skipped) without one; `exchange=E` chooses
 * how GPU ranks exchange (vox_mpi_exchange: auto, nccl, host). */
#include <math.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "backend_ops.h"
#include "memory_plan.h"
#include "sparse_hierarchy.h"
#include "sparse_ops.h"
#include "sparse_solve.h"
#include "voxfe/mpi.h"
#include "voxfe/voxfe.h"
/* after check.h */
#include "../bone_model.h"

static int rank, ranks;
static int64_t nz = 12;
static int64_t *slabs; /* first layer of each rank, ranks + 1; NULL: automatic */
static vox_device device = VOX_DEVICE_CPU;
static int device_index; /* CUDA: the rank's device */
static vox_mpi_exchange exchange = VOX_MPI_EXCHANGE_AUTO;
/* vox_mpi_options.gather_nodes: 0 (gathered only where slabs do not nest)
 * unless gather=N or gather=auto; split=K checks the split levels */
static int64_t gather_nodes = 0;
static int expect_split = -1;
static vox_mpi_hierarchy hierarchy = VOX_MPI_HIERARCHY_ROOT;
/* vox_mpi_options.overlap of the split backends: on, to run it on CPU ranks */
static vox_mpi_overlap overlap = VOX_MPI_OVERLAP_ON;

/* The one-process backend of the comparisons. */
static vox_status one_backend(vox_context *ctx, vox_backend **out) {
  return vox_backend_create_on(ctx, device, device_index, out);
}

/* Rank q's first layer of the nz-layer grids the parts split. */
static int64_t slab_first(int q) {
  int64_t first[65];
  if (slabs) return slabs[q];
  if (ranks > 64 || vox_mpi_slabs(nz, ranks, first) != 0) return -1;
  return first[q];
}

/* The split backend, on the same kind of device, its results on every
 * rank or on rank 0 alone (vox_mpi_results). */
static vox_status split_backend_results(vox_context *ctx, const vox_grid *g, int dpn,
                                        vox_mpi_results results, vox_backend **out);
static vox_status split_backend(vox_context *ctx, const vox_grid *g, int dpn, vox_backend **out) {
  return split_backend_results(ctx, g, dpn, VOX_MPI_RESULTS_EVERY_RANK, out);
}
static vox_status split_backend_results(vox_context *ctx, const vox_grid *g, int dpn,
                                        vox_mpi_results results, vox_backend **out) {
  vox_backend_options ranks_backend;
  vox_backend_options_default(&ranks_backend);
  ranks_backend.device = device;
  ranks_backend.device_index = device_index;
  vox_mpi_options o;
  vox_mpi_options_default(&o);
  o.first = slabs;
  o.ranks_backend = &ranks_backend;
  o.exchange = exchange;
  o.gather_nodes = gather_nodes;
  o.results = results;
  o.hierarchy = (int)hierarchy;
  o.overlap = (int)overlap;
  const vox_status s = vox_mpi_backend_create(ctx, MPI_COMM_WORLD, g, dpn, &o, out);
  if (s == VOX_OK && rank == 0)
    printf("exchange: %s, %d split levels\n", vox_mpi_backend_exchange(*out),
           vox_mpi_backend_split_levels(*out));
  if (s == VOX_OK && expect_split >= 0 && g->nz == nz)
    CHECK(vox_mpi_backend_split_levels(*out) == expect_split);
  return s;
}

static int64_t node(const vox_grid *g, int64_t i, int64_t j, int64_t k) {
  return (k * (g->ny + 1) + j) * (g->nx + 1) + i;
}

static uint64_t next(uint64_t *state) {
  *state = *state * 6364136223846793005u + 1442695040888963407u;
  return *state >> 11;
}

/* 16 x 8 x nz, clamped at x = 0, loaded down and sideways at x = nx; a
 * tunnel of void along z (nodes inside it touch no material, on every
 * layer, the slabs' interfaces included). */
static void make_model(vox_context *ctx, vox_model *m, vox_physics physics) {
  vox_grid g = {.nx = 12, .ny = 6, .nz = nz, .voxel_size = {1, 1, 1.25}};
  CHECK_OK(ctx, vox_model_init(ctx, m, &g));
  m->physics = physics;
  uint64_t state = 2024;
  for (int64_t k = 0; k < g.nz; k++)
    for (int64_t j = 0; j < g.ny; j++)
      for (int64_t i = 0; i < g.nx; i++) {
        const int64_t e = (k * g.ny + j) * g.nx + i;
        m->label[e] = (uint8_t)(1 + (next(&state) % 4 == 0));
        if (i >= 4 && i < 7 && j >= 2 && j < 4) m->label[e] = 0;
      }
  vox_material a = {.label = 1, .youngs_modulus = 1, .poisson_ratio = 0.3, .conductivity = 1};
  vox_material b = {.label = 2, .youngs_modulus = 0.01, .poisson_ratio = 0.3, .conductivity = 0.05};
  CHECK_OK(ctx, vox_model_add_material(ctx, m, &a));
  CHECK_OK(ctx, vox_model_add_material(ctx, m, &b));
  const int dpn = physics == VOX_PHYSICS_HEAT ? 1 : 3;
  for (int64_t k = 0; k <= g.nz; k++)
    for (int64_t j = 0; j <= g.ny; j++)
      for (int c = 0; c < dpn; c++) /* heat: a prescribed temperature that varies */
        CHECK_OK(ctx, vox_model_add_constraint(ctx, m, node(&g, 0, j, k), (uint8_t)c,
                                               dpn == 1 ? 1 + 0.1 * (double)k : 0));
  CHECK_OK(ctx, vox_model_set_load_cases(ctx, m, 1));
  for (int64_t k = 0; k <= g.nz; k++)
    for (int64_t j = 0; j <= g.ny; j++) {
      if (dpn == 1) {
        CHECK_OK(ctx, vox_model_add_load(ctx, m, node(&g, g.nx, j, k), 0, 0, 0.5));
      } else if (k == 0 || j == g.ny) {
        CHECK_OK(ctx, vox_model_add_load(ctx, m, node(&g, g.nx, j, k), 2, 0, -1));
        CHECK_OK(ctx, vox_model_add_load(ctx, m, node(&g, g.nx, j, k), 1, 0, 0.3));
      }
    }
  if (physics == VOX_PHYSICS_ELASTICITY) { /* SIMP densities in [0.001, 1] */
    const size_t ne = (size_t)vox_grid_elements(&g);
    m->density = malloc(ne * sizeof *m->density);
    for (size_t e = 0; e < ne; e++)
      m->density[e] = 0.001 + 0.999 * (double)(next(&state) % 1000) / 999.0;
  }
}

static double compliance(const vox_model *m, const double *u, int dpn) {
  double c = 0;
  for (size_t i = 0; i < m->n_loads; i++)
    c += m->loads[i].value * u[(size_t)dpn * (size_t)m->loads[i].node + m->loads[i].component];
  return c;
}

/* One solve on the CPU alone and over the ranks; the same iterations and
 * results to 1e-12. */
static void compare(vox_context *ctx, vox_physics physics, vox_preconditioner pc) {
  vox_model m;
  make_model(ctx, &m, physics);
  const int dpn = physics == VOX_PHYSICS_HEAT ? 1 : 3;
  const int use_density = physics == VOX_PHYSICS_ELASTICITY;
  const size_t nd = (size_t)dpn * (size_t)vox_grid_nodes(&m.grid);
  double *u_one = calloc(nd, sizeof *u_one), *u_split = calloc(nd, sizeof *u_split);
  vox_solver_options opt;
  vox_solver_options_default(&opt);
  opt.preconditioner = pc;
  opt.precision = VOX_PRECISION_DOUBLE;
  opt.storage = VOX_STORAGE_FULL_BOX;
  opt.rtol = 1e-10;
  opt.mg_levels = 4;
  vox_backend *alone = NULL, *split = NULL;
  vox_solve_result one = {0}, many = {0};
  CHECK_OK(ctx, one_backend(ctx, &alone));
  CHECK_OK(ctx, vox_solve_elasticity(ctx, alone, &m, use_density, 3, 1e-9, &opt, u_one, &one));
  CHECK_OK(ctx, split_backend(ctx, &m.grid, dpn, &split));
  if (split)
    CHECK_OK(ctx,
             vox_solve_elasticity(ctx, split, &m, use_density, 3, 1e-9, &opt, u_split, &many));
  double umax = 0, diff = 0;
  for (size_t i = 0; i < nd; i++)
    umax = fmax(umax, fabs(u_one[i])), diff = fmax(diff, fabs(u_split[i] - u_one[i]));
  const double c_one = compliance(&m, u_one, dpn), c_split = compliance(&m, u_split, dpn);
  if (rank == 0)
    printf("%s %s on %d ranks (%d split levels): %d CG iterations against %d; compliance "
           "%.15g against %.15g; max |u - u_one| / max |u| = %.2e\n",
           physics == VOX_PHYSICS_HEAT ? "heat" : "elasticity",
           pc == VOX_PC_MULTIGRID ? "multigrid" : "jacobi", ranks,
           split ? vox_mpi_backend_split_levels(split) : 0, many.iterations, one.iterations,
           c_split, c_one, diff / umax);
  CHECK(one.reason == VOX_CONVERGED_RTOL && many.reason == VOX_CONVERGED_RTOL);
  /* The same count with multigrid (tens of iterations); Jacobi's hundreds
   * may cross the tolerance one iteration apart, as the ranks' partial dot
   * products sum in another order than one process's (seen at -O1 under
   * the sanitizers: 523 against 524) */
  const int slack = pc == VOX_PC_MULTIGRID ? 0 : 1 + one.iterations / 100;
  CHECK(abs(many.iterations - one.iterations) <= slack);
  CHECK(umax > 0 && diff <= 1e-12 * umax);
  CHECK(fabs(c_split - c_one) <= 1e-12 * fabs(c_one));
  /* The exchanges of the fine smoothing steps and residuals after the
   * slab's step instead of beside it: the same operations, the same bits */
  if (split) {
    vox_backend *serial = NULL;
    vox_solve_result again = {0};
    double *u_serial = calloc(nd, sizeof *u_serial);
    const vox_mpi_overlap was = overlap;
    overlap = VOX_MPI_OVERLAP_OFF;
    CHECK_OK(ctx, split_backend(ctx, &m.grid, dpn, &serial));
    overlap = was;
    CHECK_OK(ctx,
             vox_solve_elasticity(ctx, serial, &m, use_density, 3, 1e-9, &opt, u_serial, &again));
    CHECK(again.iterations == many.iterations);
    CHECK(memcmp(u_serial, u_split, nd * sizeof *u_split) == 0);
    vox_backend_destroy(serial);
    free(u_serial);
  }
  /* Three iterations from zero: iterates made of a few preconditioner
   * applications, which a hierarchy that is not the one process's moves
   * (the converged solutions agree to the tolerance whatever the
   * preconditioner) */
  opt.max_iterations = 3;
  memset(u_one, 0, nd * sizeof *u_one);
  memset(u_split, 0, nd * sizeof *u_split);
  CHECK_OK(ctx, vox_solve_elasticity(ctx, alone, &m, use_density, 3, 1e-9, &opt, u_one, &one));
  if (split)
    CHECK_OK(ctx,
             vox_solve_elasticity(ctx, split, &m, use_density, 3, 1e-9, &opt, u_split, &many));
  umax = 0, diff = 0;
  for (size_t i = 0; i < nd; i++)
    umax = fmax(umax, fabs(u_one[i])), diff = fmax(diff, fabs(u_split[i] - u_one[i]));
  if (rank == 0) printf("  after 3 iterations: max |u - u_one| / max |u| = %.2e\n", diff / umax);
  CHECK(umax > 0 && diff <= 1e-13 * umax);
  vox_backend_destroy(split);
  vox_backend_destroy(alone);
  free(u_one);
  free(u_split);
  vox_model_free(&m);
}

/* A cantilever optimized on the CPU alone and over the ranks, with the
 * density or the sensitivity filter reaching over two slabs' layers: the
 * same CG iterations in every design iteration and the same history and
 * design to 1e-12; `turns`: the ranks' run by turns (each rank's parts of
 * the design waiting in its host memory: vec->held_download). */
static void optimize(vox_context *ctx, vox_filter_type filter, vox_by_turns turns) {
  vox_model one, many;
  vox_grid g = {.nx = 12, .ny = 6, .nz = nz, .voxel_size = {1, 1, 0.75}};
  vox_model *m[2] = {&one, &many};
  for (int i = 0; i < 2; i++) {
    CHECK_OK(ctx, vox_model_init(ctx, m[i], &g));
    memset(m[i]->label, 1, (size_t)vox_grid_elements(&g));
    vox_material steel = {.label = 1, .youngs_modulus = 1, .poisson_ratio = 0.3};
    CHECK_OK(ctx, vox_model_add_material(ctx, m[i], &steel));
    for (int64_t k = 0; k <= g.nz; k++)
      for (int64_t j = 0; j <= g.ny; j++)
        for (int c = 0; c < 3; c++)
          CHECK_OK(ctx, vox_model_add_constraint(ctx, m[i], node(&g, 0, j, k), (uint8_t)c, 0));
    CHECK_OK(ctx, vox_model_set_load_cases(ctx, m[i], 1));
    for (int64_t k = 0; k <= g.nz; k++)
      CHECK_OK(ctx, vox_model_add_load(ctx, m[i], node(&g, g.nx, 0, k), 1, 0, -1));
  }
  vox_optimizer_options opt;
  vox_optimizer_options_default(&opt);
  opt.volume_fraction = 0.3;
  opt.filter = filter;
  opt.filter_radius = 1.6; /* two layers of 0.75 mm along z */
  opt.max_iterations = 4;
  opt.solver.mg_levels = 3;
  /* a GPU's single-precision levels round differently on a slab's grid than
   * on the whole: the preconditioners differ at float's rounding, the
   * designs at CG's tolerance; in double they agree to the rounding of the
   * sums, as on the CPU */
  opt.solver.precision = VOX_PRECISION_DOUBLE;
  vox_backend *alone = NULL, *split = NULL;
  vox_optimize_result r_one = {0}, r_many = {0};
  CHECK_OK(ctx, one_backend(ctx, &alone));
  CHECK_OK(ctx, vox_optimize(ctx, alone, &one, &opt, &r_one));
  CHECK_OK(ctx, split_backend(ctx, &g, 3, &split));
  opt.solver.by_turns = turns;
  if (split) CHECK_OK(ctx, vox_optimize(ctx, split, &many, &opt, &r_many));
  CHECK(r_many.by_turns == (turns == VOX_BY_TURNS_ON));
  CHECK(one.n_history == 4 && many.n_history == one.n_history);
  for (size_t i = 0; i < one.n_history && i < many.n_history; i++) {
    const vox_history_row *a = &one.history[i], *b = &many.history[i];
    if (rank == 0)
      printf("%s filter, iteration %d: objective %.15g against %.15g, CG %d against %d\n",
             filter == VOX_FILTER_DENSITY ? "density" : "sensitivity", b->iteration,
             b->objective, a->objective, b->cg_iterations, a->cg_iterations);
    CHECK(a->cg_iterations == b->cg_iterations);
    CHECK(fabs(a->objective - b->objective) <= 1e-12 * fabs(a->objective));
    CHECK(fabs(a->volume_fraction - b->volume_fraction) <= 1e-12);
    CHECK(fabs(a->change - b->change) <= 1e-12);
    CHECK(fabs(a->non_discreteness - b->non_discreteness) <= 1e-10);
  }
  CHECK(fabs(r_one.objective - r_many.objective) <= 1e-12 * fabs(r_one.objective));
  CHECK(r_one.final_cg_iterations == r_many.final_cg_iterations);
  double diff = 0;
  for (int64_t e = 0; one.density && many.density && e < vox_grid_elements(&g); e++)
    diff = fmax(diff, fabs(one.density[e] - many.density[e]));
  CHECK(one.density && many.density && diff <= 1e-12);
  vox_backend_destroy(split);
  vox_backend_destroy(alone);
  vox_model_free(&one);
  vox_model_free(&many);
}

/* A bone in the sparse storage solved by one process and over the ranks
 * (both on the CPU, or both on GPUs):
 * the same CG iterations (within one on GPUs), displacements to 1e-10 of
 * their size (1e-11 after three iterations from zero). The preconditioner is the one
 * process's to the rounding of its sums; the bone's system, worse
 * conditioned than the cantilever's, amplifies that rounding to 1e-13 to
 * 5e-11 (the same difference at a CG tolerance of 1e-14 as at 1e-10, and
 * one process on one and on two threads differs by as much). In mixed
 * precision the V-cycle's float sums round apart at the interfaces (a
 * float's 6e-8 where double's was 1e-16), and the float V-cycle, which
 * takes 79 CG iterations where double's takes 66 on the clamped bone's
 * second load case, is as sensitive to them: within a tenth of the CG
 * iterations (75 against 79 there on two ranks), displacements within
 * CG's tolerance, 1e-8 of their size (1e-5 after three iterations). */
static void sparse(vox_context *ctx, int compression, vox_sparse_coarse coarse,
                   vox_precision precision) {
  vox_model m;
  make_bone_model(ctx, &m, nz, 7, 1);
  if (compression) {
    double applied;
    CHECK_OK(ctx, vox_add_compression_test(ctx, &m, VOX_TEST_UNIAXIAL, 0, -0.01, &applied));
  } else {
    clamp_bottom_load_top(ctx, &m);
  }
  const int cases = m.n_load_cases > 0 ? m.n_load_cases : 1;
  const size_t nd = 3 * (size_t)vox_grid_nodes(&m.grid) * (size_t)cases;
  double *u_one = calloc(nd, sizeof *u_one), *u_split = calloc(nd, sizeof *u_split);
  vox_solver_options opt;
  vox_solver_options_default(&opt);
  opt.precision = precision;
  opt.storage = VOX_STORAGE_SPARSE;
  opt.sparse.coarse = coarse;
  const int mixed = precision == VOX_PRECISION_MIXED;
  /* a GPU's sparse products add with atomics, whose sums round differently
   * from run to run: in double the CG counts of two solves agree within one */
  const int atomic_slack = device == VOX_DEVICE_CUDA;
  opt.mg_levels = 3; /* a coarse level between the fine one and the coarsest */
  opt.rtol = 1e-10;
  vox_backend *alone = NULL, *split = NULL;
  vox_solve_result one[2] = {{0}}, many[2] = {{0}};
  CHECK_OK(ctx, one_backend(ctx, &alone));
  CHECK_OK(ctx, split_backend(ctx, &m.grid, 3, &split));
  for (int round = 0; round < 2 && split; round++) {
    /* round 1: three iterations from zero */
    if (round == 1) opt.max_iterations = 3;
    memset(u_one, 0, nd * sizeof *u_one);
    memset(u_split, 0, nd * sizeof *u_split);
    CHECK_OK(ctx, vox_solve_elasticity(ctx, alone, &m, 0, 3, 1e-9, &opt, u_one, one));
    CHECK_OK(ctx, vox_solve_elasticity(ctx, split, &m, 0, 3, 1e-9, &opt, u_split, many));
    double umax = 0, diff = 0;
    for (size_t i = 0; i < nd; i++)
      umax = fmax(umax, fabs(u_one[i])), diff = fmax(diff, fabs(u_split[i] - u_one[i]));
    if (rank == 0)
      printf("sparse bone %lld^3, %s, %s coarse levels, %s, on %d ranks%s: %d CG iterations "
             "against %d (%d levels); max |u - u_one| / max |u| = %.2e\n",
             (long long)nz, compression ? "compression along x" : "clamped, two load cases",
             vox_sparse_coarse_name(coarse), mixed ? "mixed" : "double", ranks,
             round ? " after 3 iterations" : "", many[0].iterations, one[0].iterations,
             many[0].levels, diff / umax);
    CHECK(umax > 0 && diff <= (mixed ? round ? 1e-5 : 1e-8 : round ? 1e-11 : 1e-10) * umax);
    /* level 1 split too where the slabs' boundaries are even */
    int even = 1;
    for (int q = 1; q < ranks; q++) even &= slab_first(q) % 2 == 0;
    CHECK(vox_mpi_backend_sparse_split_levels(split) == (ranks > 1 && even ? 2 : 1));
    for (int c = 0; c < cases; c++) {
      CHECK(one[c].storage == VOX_STORAGE_SPARSE && many[c].storage == VOX_STORAGE_SPARSE);
      if (c > 0 && rank == 0)
        printf("  load case %d: %d CG iterations against %d\n", c + 1, many[c].iterations,
               one[c].iterations);
      CHECK(abs(many[c].iterations - one[c].iterations) <=
            (mixed ? 1 + one[c].iterations / 10 : atomic_slack));
      if (round == 0) CHECK(one[c].reason == VOX_CONVERGED_RTOL && many[c].reason == one[c].reason);
    }
  }
  if (split && compression) {
    /* a recorded and replayed V-cycle where the ranks' backend records and
     * the exchanges are device work (GPUs; the rounds above replayed it
     * too), the same CG iterations as op by op (within one on a GPU) */
    vox_sparse_stats st;
    vox_solve_result r[2];
    vox_solver_options defaults;
    vox_solver_options_default(&defaults);
    const int max_iterations = opt.max_iterations; /* round 1's, for the automatic storage */
    opt.max_iterations = defaults.max_iterations;
    for (int record = 1; record >= 0; record--) {
      opt.sparse.record = record;
      memset(u_split, 0, nd * sizeof *u_split);
      CHECK_OK(ctx, vox_sparse_solve_elasticity(ctx, split, &m, &opt, u_split, &r[record], &st));
      CHECK(st.replayed == (record && vox_mpi_backend_records(split)));
    }
    if (rank == 0)
      printf("  replayed V-cycles: %s, %d CG iterations against %d op by op\n",
             vox_mpi_backend_records(split) ? "yes" : "no", r[1].iterations, r[0].iterations);
    const int slack = mixed ? 1 + r[0].iterations / 10 : atomic_slack;
    CHECK(abs(r[1].iterations - r[0].iterations) <= slack);
    opt.sparse.record = 1;

    /* four levels: level 2 splits too where every boundary divides by 4
     * (and level 3 is the coarsest); the same CG iterations and
     * displacements as one process, as in round 0 (in mixed precision
     * within 2e-7: 1e-8 to 2e-8 with level 0 alone split, 1.6e-8 to 5.5e-8
     * with three levels on two H200 ranks, the float V-cycle's roundings,
     * which the GPU's atomic sums vary from run to run) */
    opt.mg_levels = 4;
    memset(u_one, 0, nd * sizeof *u_one);
    memset(u_split, 0, nd * sizeof *u_split);
    vox_solve_result r_one[2] = {{0}}, r_many[2] = {{0}};
    CHECK_OK(ctx, vox_solve_elasticity(ctx, alone, &m, 0, 3, 1e-9, &opt, u_one, r_one));
    CHECK_OK(ctx, vox_solve_elasticity(ctx, split, &m, 0, 3, 1e-9, &opt, u_split, r_many));
    double umax = 0, diff = 0;
    for (size_t i = 0; i < nd; i++)
      umax = fmax(umax, fabs(u_one[i])), diff = fmax(diff, fabs(u_split[i] - u_one[i]));
    int by4 = 1;
    for (int q = 1; q < ranks; q++) by4 &= slab_first(q) % 4 == 0;
    const int levels = vox_mpi_backend_sparse_split_levels(split);
    if (rank == 0)
      printf("  4 levels, %d split: %d CG iterations against %d; max |u - u_one| / max |u| = "
             "%.2e\n", levels, r_many[0].iterations, r_one[0].iterations, diff / umax);
    CHECK(umax > 0 && diff <= (mixed ? 2e-7 : 1e-10) * umax);
    CHECK(abs(r_many[0].iterations - r_one[0].iterations) <=
          (mixed ? 1 + r_one[0].iterations / 10 : atomic_slack));
    CHECK(r_many[0].levels == 4 && (ranks == 1 || !by4 || levels == 3));
    opt.mg_levels = 3;
    opt.max_iterations = max_iterations;
    memset(u_split, 0, nd * sizeof *u_split);
  }
  if (split && compression && coarse == VOX_SPARSE_COARSE_SPLIT && !mixed) {
    /* the memory check's share of levels 0 and 1: the rank's slab of a
     * split level (every element on one rank, the interface nodes on
     * two), the whole of level 1 where it is not split */
    vox_sparse_hierarchy h;
    CHECK_OK(ctx, vox_sparse_hierarchy_build(ctx, &m, 0.3, many[0].levels, 1, &h));
    const int split_levels = vox_mpi_backend_sparse_split_levels(split);
    for (int l = 0; l < 2; l++) {
      const vox_sparse_level_desc d = vox_sparse_level_describe(&h, l);
      size_t nodes = 0, elements = 0;
      split->ops->sparse->level_share(split, &d, l, &nodes, &elements);
      unsigned long long mine = elements, all = 0;
      MPI_Allreduce(&mine, &all, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
      if (l < split_levels)
        CHECK(all == d.n_elements && (ranks == 1 ? nodes == d.n_nodes : nodes < d.n_nodes));
      else
        CHECK(elements == d.n_elements && nodes == d.n_nodes);
    }
    vox_sparse_hierarchy_free(&h);
  }
  if (split && compression && coarse == VOX_SPARSE_COARSE_SPLIT) {
    /* the automatic storage: sparse, as one process takes it on this
     * porous bone */
    opt.storage = VOX_STORAGE_AUTO; /* three iterations, as round 1 */
    CHECK_OK(ctx, vox_solve_elasticity(ctx, split, &m, 0, 3, 1e-9, &opt, u_split, many));
    CHECK(many[0].storage == VOX_STORAGE_SPARSE && many[0].iterations == one[0].iterations);
  }
  vox_backend_destroy(split);
  vox_backend_destroy(alone);
  free(u_one);
  free(u_split);
  vox_model_free(&m);
}

/* vec->random by global index and vec->download on the split backend: the
 * whole vector on every rank, each entry the hash of its index. */
static void download(vox_context *ctx) {
  const int64_t n = device == VOX_DEVICE_CUDA ? 256 : 24;
  vox_grid g = {.nx = n, .ny = n, .nz = n * 45 / 64 > ranks ? n * 45 / 64 : ranks,
                .voxel_size = {1, 1, 1}};
  vox_backend *be = NULL;
  CHECK_OK(ctx, split_backend(ctx, &g, 3, &be));
  if (!be) return;
  const size_t nd = 3 * (size_t)vox_grid_nodes(&g);
  vox_vec v;
  CHECK_OK(ctx, be->ops->vec->create(be, nd, VOX_DOUBLE, &v));
  CHECK_OK(ctx, be->ops->vec->random(be, &v, 5, 7));
  double *x = malloc(nd * sizeof *x);
  CHECK_OK(ctx, be->ops->vec->download(be, &v, x));
  size_t wrong = 0;
  for (size_t i = 0; i < nd; i++) wrong += x[i] != vox_hash_uniform(5, 7 + i);
  if (rank == 0) printf("download of %zu values: %zu wrong\n", nd, wrong);
  CHECK(wrong == 0);
  free(x);
  be->ops->vec->destroy(be, &v);
  vox_backend_destroy(be);
}

/* Results on rank 0 alone (VOX_MPI_RESULTS_ROOT): a vector's download for
 * a caller reaches rank 0 whole and leaves the others' arrays as they
 * were; a full-box and a sparse solve give rank 0 the displacements of
 * the same solve with results on every rank, bit for bit, whatever its
 * array held (the start is not read), while the others pass NULL. */
static void results_on_root(vox_context *ctx) {
  vox_grid g = {.nx = 6, .ny = 5, .nz = nz, .voxel_size = {1, 1, 1}};
  vox_backend *be = NULL;
  CHECK_OK(ctx, split_backend_results(ctx, &g, 3, VOX_MPI_RESULTS_ROOT, &be));
  if (!be) return;
  CHECK(vox_results(be) == (rank == 0 ? VOX_RESULTS_HERE : VOX_RESULTS_ELSEWHERE));
  const size_t nd = 3 * (size_t)vox_grid_nodes(&g);
  vox_vec v;
  CHECK_OK(ctx, be->ops->vec->create(be, nd, VOX_DOUBLE, &v));
  CHECK_OK(ctx, be->ops->vec->random(be, &v, 5, 7));
  double *x = malloc(nd * sizeof *x);
  for (size_t i = 0; i < nd; i++) x[i] = -1;
  CHECK_OK(ctx, vox_vec_download_result(be, &v, x));
  size_t wrong = 0;
  for (size_t i = 0; i < nd; i++) wrong += x[i] != (rank == 0 ? vox_hash_uniform(5, 7 + i) : -1);
  CHECK(wrong == 0);
  CHECK_OK(ctx, vox_vec_download_result(be, &v, rank == 0 ? x : NULL));
  free(x);
  be->ops->vec->destroy(be, &v);
  vox_backend_destroy(be);

  for (int sparse_storage = 0; sparse_storage < 2; sparse_storage++) {
    vox_model m;
    if (sparse_storage) {
      make_bone_model(ctx, &m, nz, 7, 1);
      double applied;
      CHECK_OK(ctx, vox_add_compression_test(ctx, &m, VOX_TEST_UNIAXIAL, 0, -0.01, &applied));
    } else {
      make_model(ctx, &m, VOX_PHYSICS_ELASTICITY);
    }
    const size_t n = 3 * (size_t)vox_grid_nodes(&m.grid);
    double *every = calloc(n, sizeof *every), *root = malloc(n * sizeof *root);
    for (size_t i = 0; i < n; i++) root[i] = 1;
    vox_solver_options opt;
    vox_solver_options_default(&opt);
    opt.storage = sparse_storage ? VOX_STORAGE_SPARSE : VOX_STORAGE_FULL_BOX;
    opt.mg_levels = 3;
    opt.rtol = 1e-10;
    vox_backend *all = NULL, *one = NULL;
    vox_solve_result r_all = {0}, r_one = {0};
    CHECK_OK(ctx, split_backend(ctx, &m.grid, 3, &all));
    CHECK_OK(ctx, split_backend_results(ctx, &m.grid, 3, VOX_MPI_RESULTS_ROOT, &one));
    if (all && one) {
      const int density = !sparse_storage;
      CHECK_OK(ctx, vox_solve_elasticity(ctx, all, &m, density, 3, 1e-9, &opt, every, &r_all));
      CHECK_OK(ctx, vox_solve_elasticity(ctx, one, &m, density, 3, 1e-9, &opt,
                                         rank == 0 ? root : NULL, &r_one));
      /* on the CPU the same arithmetic in the same order; a GPU's sparse
       * products add with atomics, in another order each time */
      const int exact = device == VOX_DEVICE_CPU;
      CHECK(r_all.reason == VOX_CONVERGED_RTOL && r_one.reason == VOX_CONVERGED_RTOL);
      CHECK(abs(r_one.iterations - r_all.iterations) <= (exact ? 0 : 1));
      if (rank == 0) {
        size_t differ = 0;
        double umax = 0, diff = 0;
        for (size_t i = 0; i < n; i++) {
          differ += root[i] != every[i];
          umax = fmax(umax, fabs(every[i])), diff = fmax(diff, fabs(root[i] - every[i]));
        }
        printf("results on rank 0 alone (%s): %d CG iterations against %d, %zu of %zu values "
               "differ, by %.2e of max |u|\n",
               sparse_storage ? "sparse" : "full box", r_one.iterations, r_all.iterations, differ,
               n, diff / umax);
        CHECK(umax > 0 && (exact ? differ == 0 : diff <= 1e-8 * umax));
      }
    }
    vox_backend_destroy(all);
    vox_backend_destroy(one);
    free(every);
    free(root);
    vox_model_free(&m);
  }
}

/* The sparse storage's hierarchy is built on rank 0 and sent to the
 * others (the `sparse` part checks what they solve with it); a build that
 * fails there fails every rank, rank 0 with the reason. */
static void hierarchy_refused(vox_context *ctx) {
  vox_model m;
  make_bone_model(ctx, &m, 30, 7, 1);
  double applied;
  CHECK_OK(ctx, vox_add_compression_test(ctx, &m, VOX_TEST_UNIAXIAL, 0, -0.01, &applied));
  vox_solver_options opt;
  vox_solver_options_default(&opt);
  opt.storage = VOX_STORAGE_SPARSE;
  opt.mg_levels = 2; /* a coarsest box of 16^3 nodes: more than it factors */
  vox_backend *split = NULL;
  CHECK_OK(ctx, split_backend(ctx, &m.grid, 3, &split));
  const size_t nd = 3 * (size_t)vox_grid_nodes(&m.grid);
  double *u = calloc(nd, sizeof *u);
  vox_solve_result r;
  if (split) {
    CHECK(vox_solve_elasticity(ctx, split, &m, 0, 3, 1e-9, &opt, u, &r) != VOX_OK);
    const char *want = rank == 0 ? "leave a coarsest box" : "failed on rank 0";
    CHECK(strstr(vox_context_message(ctx), want) != NULL);
    if (rank == 0) printf("a hierarchy refused on rank 0: %s\n", vox_context_message(ctx));
  }
  free(u);
  vox_backend_destroy(split);
  vox_model_free(&m);
}

/* More ranks than element layers: every rank refuses, with one message. */
/* The memory check of a rank's slab (memory_plan.c): a grid of 2^30 x-y
 * nodes a layer per rank that no GPU holds is refused before anything is
 * allocated, with the ranks it would take; on CPU ranks (no device memory
 * to check) it passes. */
static void memory(vox_context *ctx) {
  vox_grid g = {.nx = 1024, .ny = 1024, .nz = 4096 * (int64_t)ranks, .voxel_size = {1, 1, 1}};
  vox_backend *be = NULL;
  CHECK_OK(ctx, split_backend(ctx, &g, 3, &be));
  if (!be) return;
  vox_solver_options so;
  vox_solver_options_default(&so);
  const vox_status s = vox_memory_check(be, &g, 3, 1, 0, &so, 6);
  if (rank == 0) printf("memory check: %s\n", s == VOX_OK ? "passed" : vox_context_message(ctx));
  if (device == VOX_DEVICE_CUDA) {
    CHECK(s == VOX_ERR_NO_MEMORY);
    CHECK(strstr(vox_context_message(ctx), "a rank's slab of the 1024x1024x") != NULL);
    CHECK(strstr(vox_context_message(ctx), "ranks would hold the grid") != NULL);
  } else {
    CHECK(s == VOX_OK);
  }
  vox_backend_destroy(be);
}

/* vox_mpi_slabs_weighted: equal weights give equal slabs; uneven ones
 * slabs of about equal weight, to a block of 4 layers; weightless layers
 * still a layer (a block) a rank; the boundaries in order, multiples of 4
 * where every rank gets 4 layers (of 2 where it gets 2), and covering the
 * layers. */
static void weighted_slabs(void) {
  int64_t first[5];
  double w[12];
  for (int k = 0; k < 12; k++) w[k] = 1;
  CHECK(vox_mpi_slabs_weighted(w, 12, 3, first) == 0);
  CHECK(first[0] == 0 && first[1] == 4 && first[2] == 8 && first[3] == 12);
  for (int k = 0; k < 12; k++) w[k] = k < 4 ? 10 : 1; /* 40 below, 8 above */
  CHECK(vox_mpi_slabs_weighted(w, 12, 2, first) == 0);
  CHECK(first[1] == 4 && first[2] == 12); /* 40 and 8: blocks of 4 layers (levels 0-2 nest) */
  for (int k = 0; k < 12; k++) w[k] = 0;
  w[11] = 5; /* all in the last layer */
  CHECK(vox_mpi_slabs_weighted(w, 12, 4, first) == 0);
  CHECK(first[0] == 0 && first[1] == 6 && first[2] == 8 && first[3] == 10 && first[4] == 12);
  CHECK(vox_mpi_slabs_weighted(w, 7, 4, first) == 0); /* 7 < 2 x 4: single layers */
  for (int r = 0; r < 4; r++) CHECK(first[r + 1] > first[r]);
  CHECK(first[0] == 0 && first[4] == 7 && first[3] == 6);
  for (int k = 0; k < 12; k++) w[k] = k == 5 ? 9 : 1; /* an odd layer's weight: blocks kept */
  CHECK(vox_mpi_slabs_weighted(w, 12, 2, first) == 0);
  CHECK(first[1] % 4 == 0 && first[2] == 12);
  CHECK(vox_mpi_slabs_weighted(w, 6, 2, first) == 0); /* 6 < 4 x 2: pairs */
  CHECK(first[1] % 2 == 0 && first[2] == 6);
  CHECK(vox_mpi_slabs_weighted(w, 3, 4, first) == -1);
  if (rank == 0) printf("weighted slabs: checked\n");
}

static void refuse(vox_context *ctx) {
  vox_grid g = {.nx = 4, .ny = 4, .nz = ranks - 1, .voxel_size = {1, 1, 1}};
  if (g.nz < 1) return;
  vox_backend *be = NULL;
  vox_mpi_options o;
  vox_mpi_options_default(&o);
  CHECK(vox_mpi_backend_create(ctx, MPI_COMM_WORLD, &g, 3, &o, &be) != VOX_OK && !be);
  CHECK(strstr(vox_context_message(ctx), "fewer than the") != NULL);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  int n_parts = 0;
  char *parts[8];
  for (int i = 1; i < argc; i++) {
    if (strncmp(argv[i], "nz=", 3) == 0) {
      nz = strtoll(argv[i] + 3, NULL, 10);
    } else if (strncmp(argv[i], "slabs=", 6) == 0) {
      slabs = calloc((size_t)ranks + 1, sizeof *slabs);
      char *p = argv[i] + 6;
      for (int r = 0; r < ranks; r++) {
        slabs[r + 1] = slabs[r] + strtoll(p, &p, 10);
        if (*p == ',') p++;
      }
    } else if (strcmp(argv[i], "device=cuda") == 0) {
      device = VOX_DEVICE_CUDA;
    } else if (strncmp(argv[i], "exchange=", 9) == 0) {
      if (vox_mpi_exchange_parse(argv[i] + 9, &exchange) != 0) return 2;
    } else if (strncmp(argv[i], "gather=", 7) == 0) {
      gather_nodes =
          strcmp(argv[i] + 7, "auto") == 0 ? VOX_MPI_GATHER_AUTO : strtoll(argv[i] + 7, NULL, 10);
    } else if (strncmp(argv[i], "hierarchy=", 10) == 0) {
      if (vox_mpi_hierarchy_parse(argv[i] + 10, &hierarchy) != 0) return 2;
    } else if (strncmp(argv[i], "overlap=", 8) == 0) {
      if (vox_mpi_overlap_parse(argv[i] + 8, &overlap) != 0) return 2;
    } else if (strncmp(argv[i], "split=", 6) == 0) {
      expect_split = atoi(argv[i] + 6);
    } else if (n_parts < 8) {
      parts[n_parts++] = argv[i];
    }
  }
  if (device == VOX_DEVICE_CUDA) { /* the rank's device: its rank among the node's */
    const int count = vox_device_count(VOX_DEVICE_CUDA);
    if (count == 0) {
      if (rank == 0) printf("SKIP: no CUDA device\n");
      MPI_Finalize();
      return 77;
    }
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    int local = 0;
    MPI_Comm_rank(node, &local);
    MPI_Comm_free(&node);
    device_index = local % count;
  }
  vox_context *ctx = NULL;
  if (vox_context_create(&ctx) != VOX_OK) return 1;
  char *names[9] = {argv[0]};
  for (int i = 0; i < n_parts; i++) names[i + 1] = parts[i];
  if (check_wanted(n_parts + 1, names, "elasticity"))
    compare(ctx, VOX_PHYSICS_ELASTICITY, VOX_PC_MULTIGRID);
  if (check_wanted(n_parts + 1, names, "jacobi"))
    compare(ctx, VOX_PHYSICS_ELASTICITY, VOX_PC_JACOBI);
  if (check_wanted(n_parts + 1, names, "heat")) compare(ctx, VOX_PHYSICS_HEAT, VOX_PC_MULTIGRID);
  if (check_wanted(n_parts + 1, names, "optimize")) {
    optimize(ctx, VOX_FILTER_DENSITY, VOX_BY_TURNS_ON);
    optimize(ctx, VOX_FILTER_SENSITIVITY, VOX_BY_TURNS_AUTO);
  }
  if (check_wanted(n_parts + 1, names, "sparse")) {
    for (int mixed = 0; mixed < 2; mixed++) {
      const vox_precision p = mixed ? VOX_PRECISION_MIXED : VOX_PRECISION_DOUBLE;
      sparse(ctx, 1, VOX_SPARSE_COARSE_SPLIT, p);
      sparse(ctx, 0, VOX_SPARSE_COARSE_SPLIT, p);
      sparse(ctx, 1, VOX_SPARSE_COARSE_BOX, p);
    }
  }
  if (check_wanted(n_parts + 1, names, "download")) download(ctx);
  if (check_wanted(n_parts + 1, names, "results")) results_on_root(ctx);
  if (check_wanted(n_parts + 1, names, "refused")) hierarchy_refused(ctx);
  if (check_wanted(n_parts + 1, names, "refuse")) refuse(ctx);
  if (check_wanted(n_parts + 1, names, "slabs")) weighted_slabs();
  if (check_wanted(n_parts + 1, names, "memory")) memory(ctx);
  vox_context_destroy(ctx);
  free(slabs);
  int failures = check_failures, all = 0;
  MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Finalize();
  if (all && !failures) fprintf(stderr, "rank %d: checks failed on another rank\n", rank);
  return all ? 1 : 0;
}
