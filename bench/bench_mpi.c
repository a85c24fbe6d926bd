/* SPDX-License-Identifier: BSD-3-Clause */
/* Where the time of a multigrid cycle goes over MPI ranks
 * (docs/benchmarks.md, "Many GPUs"):
 *
 *   mpirun -np N bench_mpi PROBLEM.yaml SIZE [double|mixed] [--device=cuda]
 *
 * The cantilever NX x NX/2 x NX/2 (SIZE NX, or NXxNYxNZ) of the problem file
 * (workflows/cantilever/cantilever.yaml) split into slabs over the ranks
 * (vox_mpi_backend_create), each rank's slab on its CPU cores or, with
 * --device=cuda, on the GPU of its rank on the node; then the parts of a
 * cycle timed as `bench_cuda vcycle` times them on one device
 * (vcycle_parts.h), rank 0's clock read after every rank has synchronised.
 * Compare with `bench_cuda vcycle PROBLEM.yaml SIZE` in the same call.
 * --exchange=auto|nccl|host is vox_mpi_options.exchange, --gather=N|auto
 * vox_mpi_options.gather_nodes, --overlap=auto|on|off vox_mpi_options.overlap; the
 * solver alternatives of bench_cuda (--mg-cycle=C, --smoothing-steps=N, ...)
 * apply. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_ops.h"
#include "bench_common.h"
#include "fem.h"
#include "mpi_ranks.h"
#include "multigrid.h"
#include "vcycle_parts.h"
#include "voxfe/mpi.h"

static void barrier(void) { MPI_Barrier(MPI_COMM_WORLD); }

static _Noreturn void die(vox_context *ctx, const char *what) {
  fprintf(stderr, "bench_mpi: %s: %s\n", what, vox_context_message(ctx));
  MPI_Abort(MPI_COMM_WORLD, 1);
  exit(1);
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  MPI_Init(&argc, &argv);
  int rank, ranks;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  static const char *const settings[] = {
      "device",    "exchange",       "smoothing-steps", "fine-smoothing-steps", "mg-cycle",
      "mg-levels", "mg-coarse-dofs", "start-history",   "mg-bound-refresh",     "host-scalars",
      "gather",    "overlap",        NULL};
  bench_options_take(&argc, argv, settings);
  if (argc < 3) {
    if (rank == 0)
      fprintf(stderr, "usage: mpirun -np N %s PROBLEM.yaml NX [double|mixed] [--device=cuda]\n",
              argv[0]);
    MPI_Finalize();
    return 2;
  }
  vox_context *ctx;
  vox_context_create(&ctx);
  vox_solver_options so;
  vox_solver_options_default(&so);
  so.precision = VOX_PRECISION_DOUBLE;
  if (argc > 3 && vox_precision_parse(argv[3], &so.precision) != 0) die(ctx, "precision");
  vox_model model;
  const char *what;
  if (bench_cantilever_model(ctx, argv[1], argv[2], &model, &what)) die(ctx, what);
  vox_backend_options ranks_backend;
  vox_mpi_options o;
  if ((what = bench_mpi_options(rank, &ranks_backend, &o))) die(ctx, what);
  const char *gather = bench_option("gather");
  if (gather)
    o.gather_nodes = strcmp(gather, "auto") == 0 ? VOX_MPI_GATHER_AUTO : strtoll(gather, NULL, 10);
  vox_backend *be;
  if (vox_mpi_backend_create(ctx, MPI_COMM_WORLD, &model.grid, 3, &o, &be)) die(ctx, "backend");
  if (rank == 0)
    printf("%d ranks on %s, exchanging by %s%s, %d split levels\n", ranks,
           vox_backend_name(be), vox_mpi_backend_exchange(be),
           o.overlap == VOX_MPI_OVERLAP_ON    ? " beside the slabs' steps"
           : o.overlap == VOX_MPI_OVERLAP_OFF ? " after the slabs' steps"
                                              : "",
           vox_mpi_backend_split_levels(be));
  bench_solver_alternatives(be, &so);
  bench_wait_all = barrier;
  what = bench_vcycle_parts(ctx, be, &model, &so, rank == 0);
  if (what) die(ctx, what);
  vox_backend_destroy(be);
  vox_model_free(&model);
  vox_context_destroy(ctx);
  MPI_Finalize();
  return 0;
}
