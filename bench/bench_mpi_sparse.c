/* SPDX-License-Identifier: BSD-3-Clause */
/* Where the time of the bone's sparse solve goes over MPI ranks
 * (docs/benchmarks.md, "Many GPUs"):
 *
 *   mpirun -np N bench_mpi_sparse MODEL.nc [double|mixed] [RTOL] [--device=cuda]
 *       [--cycle=v|w] [--profile=1] [--parts=1] [--slabs=bone|layers]
 *       [--exchange=auto|nccl|host] [--max-iterations=N] [--record=0|1]
 *       [--results=every|root] [--hierarchy=root|every]
 *       [--overlap=auto|on|off]
 *
 * The model (bench_sparse --write=MODEL.nc's perlin bone, or the clinical
 * sample) solved as `bench_sparse MODEL.nc` solves it on one process: its
 * largest 26-connected component, uniaxial compression along z at -1 %
 * strain, the sparse storage to RTOL (default 1e-6); here with its levels
 * 0 and 1 split into slabs over the ranks (vox_mpi_backend_create), each rank's
 * slab on its CPU cores or, with --device=cuda, on the GPU of its rank on
 * the node. Prints rank 0's setup and solve seconds, the CG iterations and,
 * with --profile=1, the milliseconds per CG iteration of the CG's own work
 * and of each V-cycle level (sparse_solve.h: every part waits for the
 * device). Compare with `bench_sparse MODEL.nc cuda RTOL --profile=1` in
 * the same call. The slabs carry equal bone (vox_mpi_slabs_weighted), as
 * voxfe-analyze --mpi splits a sparse solve; --slabs=layers takes the
 * box's automatic slabs (vox_mpi_slabs) instead.
 * --exchange=auto|nccl|host is vox_mpi_options.exchange;
 * --parts=1 first times the V-cycle's parts alone on levels 0 and 1, as
 * `bench_sparse MODEL.nc cuda --parts=1` does (sparse_parts.h), level 0
 * split over the ranks, level 1 whole on each; --max-iterations=N caps
 * CG; --record=0 runs the V-cycle op by op where it would be recorded and
 * replayed (vox_sparse_pc_options.record; "(replayed)" says it was);
 * --results=root returns the displacements to rank 0 alone, as
 * voxfe-analyze --mpi does (vox_mpi_options.results; every rank gets
 * them by default); --hierarchy=every has every rank build the host
 * hierarchy (vox_mpi_options.hierarchy; rank 0 builds it and sends it to
 * the others by default); --overlap=off exchanges after the slabs'
 * products, not beside them (vox_mpi_options.overlap). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_ops.h"
#include "bench_common.h"
#include "host_memory.h"
#include "mpi_ranks.h"
#include "sparse_hierarchy.h"
#include "sparse_ops.h"
#include "sparse_parts.h"
#include "sparse_solve.h"
#include "voxfe/io.h"
#include "voxfe/mpi.h"
#include "voxfe/voxfe.h"

static void barrier(void) { MPI_Barrier(MPI_COMM_WORLD); }

static _Noreturn void die(vox_context *ctx, const char *what) {
  fprintf(stderr, "bench_mpi_sparse: %s: %s\n", what, vox_context_message(ctx));
  MPI_Abort(MPI_COMM_WORLD, 1);
  exit(1);
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  MPI_Init(&argc, &argv);
  int rank, ranks;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  static const char *const settings[] = {"device", "exchange", "cycle",
                                         "profile", "parts",    "slabs",
                                         "max-iterations", "record", "results", "hierarchy",
                                         "overlap", NULL};
  bench_options_take(&argc, argv, settings);
  if (argc < 2) {
    if (rank == 0)
      fprintf(stderr,
              "usage: mpirun -np N %s MODEL.nc [double|mixed] [RTOL] [--device=cuda] "
              "[--cycle=v|w] [--profile=1] [--parts=1] [--exchange=auto|nccl|host] "
              "[--slabs=layers] [--max-iterations=N] [--record=0|1] [--results=every|root] "
              "[--hierarchy=root|every]\n",
              argv[0]);
    MPI_Finalize();
    return 2;
  }
  vox_context *ctx;
  vox_context_create(&ctx);
  vox_solver_options opt;
  vox_solver_options_default(&opt);
  opt.storage = VOX_STORAGE_SPARSE;
  if (argc > 2 && vox_precision_parse(argv[2], &opt.precision) != 0) die(ctx, "precision");
  opt.rtol = argc > 3 ? atof(argv[3]) : 1e-6;
  const char *cycle = bench_option("cycle"), *profile = bench_option("profile");
  if (cycle && vox_mg_cycle_parse(cycle, &opt.mg_cycle) != 0) die(ctx, "--cycle");
  opt.sparse.profile = profile && atoi(profile) > 0;
  const char *max_iterations = bench_option("max-iterations");
  if (max_iterations) opt.max_iterations = atoi(max_iterations);
  const char *record = bench_option("record");
  if (record) opt.sparse.record = atoi(record) != 0;

  vox_model m;
  size_t removed, components;
  double applied;
  if (vox_model_read(ctx, argv[1], &m)) die(ctx, argv[1]);
  if (vox_keep_largest_component(ctx, &m, 26, &removed, &components)) die(ctx, "component");
  if (vox_add_compression_test(ctx, &m, VOX_TEST_UNIAXIAL, 2, -0.01, &applied))
    die(ctx, "compression test");

  vox_backend_options ranks_backend;
  vox_mpi_options o;
  const char *failed = bench_mpi_options(rank, &ranks_backend, &o);
  if (failed) die(ctx, failed);
  const char *slabs = bench_option("slabs");
  const int by_layers = slabs && strcmp(slabs, "layers") == 0;
  int64_t *first = malloc(((size_t)ranks + 1) * sizeof *first);
  if (!first || (by_layers ? vox_mpi_slabs(m.grid.nz, ranks, first)
                           : vox_mpi_slabs_of_bone(&m, ranks, first)) != 0)
    die(ctx, "slabs");
  o.first = first;
  const char *results = bench_option("results");
  if (results && strcmp(results, "root") != 0 && strcmp(results, "every") != 0)
    die(ctx, "--results: every or root");
  o.results = results && strcmp(results, "root") == 0 ? VOX_MPI_RESULTS_ROOT
                                                      : VOX_MPI_RESULTS_EVERY_RANK;
  const char *hierarchy = bench_option("hierarchy");
  vox_mpi_hierarchy built_by = VOX_MPI_HIERARCHY_ROOT;
  if (hierarchy && vox_mpi_hierarchy_parse(hierarchy, &built_by) != 0)
    die(ctx, "--hierarchy: root or every");
  o.hierarchy = (int)built_by;
  vox_backend *be;
  if (vox_mpi_backend_create(ctx, MPI_COMM_WORLD, &m.grid, 3, &o, &be)) die(ctx, "backend");
  if (rank == 0) {
    printf("%d ranks on %s, exchanging by %s; slabs (%s), layers:", ranks, vox_backend_name(be),
           vox_mpi_backend_exchange(be), by_layers ? "layers" : "equal bone");
    for (int q = 0; q < ranks; q++) printf(" %lld", (long long)(first[q + 1] - first[q]));
    printf("\n");
  }

  const char *parts = bench_option("parts");
  if (parts && atoi(parts) > 0) {
    bench_sparse_wait_all = barrier;
    if ((failed = bench_sparse_parts(ctx, be, &m, "split", rank == 0))) die(ctx, failed);
  }
  const size_t nd = 3 * (size_t)vox_grid_nodes(&m.grid);
  const int receive = o.results == VOX_MPI_RESULTS_EVERY_RANK || rank == 0;
  /* in huge pages, as voxfe-analyze allocates it (vox_alloc_buffer): the
   * solve clears the box beside the iterations, at a fault a 2 MB page */
  double *u = receive ? vox_host_calloc(nd, sizeof *u) : NULL;
  if (receive && !u) die(ctx, "displacements");
  vox_solve_result r;
  vox_sparse_stats st;
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = bench_now();
  if (vox_sparse_solve_elasticity(ctx, be, &m, &opt, u, &r, &st)) die(ctx, "sparse solve");
  MPI_Barrier(MPI_COMM_WORLD);
  const double total = bench_now() - t0;
  if (rank == 0) {
    printf("sparse: %zu dofs, %d levels (%d split over the ranks), %s-cycle%s, %s: %s in %d CG "
           "iterations, relative residual %.2e\n",
           st.n_dofs, st.n_levels, vox_mpi_backend_sparse_split_levels(be),
           opt.mg_cycle == VOX_MG_CYCLE_W ? "W" : "V", st.replayed ? " (replayed)" : "",
           vox_precision_name(opt.precision), vox_convergence_string(r.reason), r.iterations,
           r.residual_norm / r.rhs_norm);
    printf("sparse: setup %.2f s, solve %.2f s (iterations %.2f s, %.1f ms each), total %.2f s\n",
           st.setup_seconds, st.solve_seconds, st.pcg_seconds,
           1e3 * st.pcg_seconds / (r.iterations + 1), total);
    bench_sparse_print_profile(&st, r.iterations);
  }
  vox_host_free(u);
  free(first);
  vox_backend_destroy(be);
  vox_model_free(&m);
  vox_context_destroy(ctx);
  MPI_Finalize();
  return 0;
}
