/* SPDX-License-Identifier: BSD-3-Clause */
/* A program run over MPI ranks (cli_mpi.h). */
#include "cli_mpi.h"

#include <errno.h>
#include <limits.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "voxfe/mpi.h"

#include "cli_checkpoint.h"
#include "cli_common.h"

/* How long a rank whose step failed waits for the others to come back from
 * theirs before it takes the failure for its own. The ranks meet in
 * collective calls throughout a step, so the others come back within
 * moments of it unless they wait for it. */
static const double AGREE_SECONDS = 10;

static MPI_Comm engine = MPI_COMM_NULL, status_comm = MPI_COMM_NULL;
static int rank, size = 1;
/* OpenMP's threads for the whole node, and the ranks on it */
static int node_threads, node_ranks = 1;

int cli_mpi_start(int *argc, char ***argv) {
  if (MPI_Init(argc, argv) != MPI_SUCCESS) {
    cli_error("--mpi: MPI could not start");
    return CLI_EXIT_FAILED;
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_dup(MPI_COMM_WORLD, &engine);
  /* agreements never meet the engine's collectives, even when a rank left
   * the engine early */
  MPI_Comm_dup(MPI_COMM_WORLD, &status_comm);
  cli_set_silent(rank != 0);
  /* OpenMP's choice (OMP_NUM_THREADS or all cores) would give every rank
   * on a node all of them: the setup of a bone's sparse solve on two ranks
   * on 32 cores (every rank builds the whole hierarchy) took 3.2 s on 32
   * threads each, 1.9 s on 16. The node's ranks share them (--threads sets
   * the backend's). */
  MPI_Comm node;
  int on_node = 1;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  MPI_Comm_size(node, &on_node);
  MPI_Comm_free(&node);
  node_threads = omp_get_max_threads();
  node_ranks = on_node;
  if (on_node > 1) {
    const int share = omp_get_max_threads() / on_node;
    omp_set_num_threads(share > 0 ? share : 1);
  }
  return 0;
}

void cli_mpi_root_alone(void) {
  /* a core for each other rank's waiting in MPI (it polls) */
  const int threads = node_threads - (node_ranks - 1);
  if (rank == 0 && node_ranks > 1 && threads > omp_get_max_threads())
    omp_set_num_threads(threads);
}

void cli_mpi_ranks_together(void) {
  if (node_ranks > 1) {
    const int share = node_threads / node_ranks;
    omp_set_num_threads(share > 0 ? share : 1);
  }
}

int cli_mpi_rank(void) { return rank; }
int cli_mpi_size(void) { return size; }

int cli_mpi_node_rank(void) {
  MPI_Comm node;
  int local = 0;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  MPI_Comm_rank(node, &local);
  MPI_Comm_free(&node);
  return local;
}
MPI_Comm cli_mpi_engine(void) { return engine; }

int cli_mpi_agree(int status, void (*failed)(void *self), void *self) {
  /* the largest status, and rank 0's: rank 0 says a failure it shares,
   * a rank says its own where rank 0 did not fail */
  int mine[2] = {status, rank == 0 ? status : 0}, all[2] = {0, 0};
  MPI_Request request;
  MPI_Iallreduce(mine, all, 2, MPI_INT, MPI_MAX, status_comm, &request);
  int done = 0;
  const double start = MPI_Wtime();
  while (!done) {
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (!done && status && MPI_Wtime() - start > AGREE_SECONDS) {
      cli_set_silent(0); /* this rank's own failure: its message */
      if (failed) failed(self);
      MPI_Abort(MPI_COMM_WORLD, status);
    }
    if (!done) nanosleep(&(struct timespec){0, 1000000}, NULL);
  }
  if (status && failed && (rank == 0 || !all[1])) {
    cli_set_silent(0);
    failed(self);
  }
  return all[0];
}

int cli_mpi_from_root(int status) {
  MPI_Bcast(&status, 1, MPI_INT, 0, status_comm);
  return status;
}

int cli_mpi_interrupted(void *self) {
  int mine = cli_interrupted(self), any = 0;
  MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, status_comm);
  return any;
}

vox_status cli_mpi_backend(vox_context *ctx, const vox_grid *grid, int dofs_per_node,
                           vox_backend_options *options, vox_mpi_exchange exchange,
                           int gather_nodes, const int64_t *first, vox_mpi_results results,
                           vox_mpi_hierarchy hierarchy, vox_mpi_overlap overlap,
                           vox_backend **out) {
  const int gpus = vox_device_count(VOX_DEVICE_CUDA);
  if (options->device == VOX_DEVICE_AUTO)
    options->device = gpus > 0 ? VOX_DEVICE_CUDA : VOX_DEVICE_CPU;
  vox_backend_options ranks_backend = *options;
  if (ranks_backend.device == VOX_DEVICE_CUDA && ranks_backend.device_index < 0 && gpus > 0)
    ranks_backend.device_index = cli_mpi_node_rank() % gpus;
  vox_mpi_options o;
  vox_mpi_options_default(&o);
  o.ranks_backend = &ranks_backend;
  o.exchange = exchange;
  o.gather_nodes = gather_nodes;
  o.first = first;
  o.results = results;
  o.hierarchy = hierarchy;
  o.overlap = overlap;
  return vox_mpi_backend_create(ctx, engine, grid, dofs_per_node, &o, out);
}

int cli_parse_mpi_exchange(const char *what, const char *text, void *value) {
  vox_mpi_exchange e;
  if (vox_mpi_exchange_parse(text, &e) != 0) {
    cli_error("%s: expected auto, nccl or host, got '%s'", what, text);
    return -1;
  }
  *(int *)value = (int)e;
  return 0;
}

void cli_format_mpi_exchange(const void *value, char *buf, size_t n) {
  snprintf(buf, n, "%s", vox_mpi_exchange_name((vox_mpi_exchange) * (const int *)value));
}

int cli_parse_mpi_hierarchy(const char *what, const char *text, void *value) {
  vox_mpi_hierarchy h;
  if (vox_mpi_hierarchy_parse(text, &h) != 0) {
    cli_error("%s: expected root or every, got '%s'", what, text);
    return -1;
  }
  *(int *)value = (int)h;
  return 0;
}

void cli_format_mpi_hierarchy(const void *value, char *buf, size_t n) {
  snprintf(buf, n, "%s", vox_mpi_hierarchy_name((vox_mpi_hierarchy) * (const int *)value));
}

int cli_parse_mpi_gather(const char *what, const char *text, void *value) {
  if (strcmp(text, "auto") == 0) {
    *(int *)value = VOX_MPI_GATHER_AUTO;
    return 0;
  }
  char *end;
  errno = 0;
  const long n = strtol(text, &end, 10);
  if (end == text || *end || errno || n < 0 || n > INT_MAX) {
    cli_error("%s: expected auto or a number of nodes, 0 or more, got '%s'", what, text);
    return -1;
  }
  *(int *)value = (int)n;
  return 0;
}

void cli_format_mpi_gather(const void *value, char *buf, size_t n) {
  const int v = *(const int *)value;
  if (v < 0) snprintf(buf, n, "auto");
  else snprintf(buf, n, "%d", v);
}

int cli_parse_mpi_overlap(const char *what, const char *text, void *value) {
  vox_mpi_overlap o;
  if (vox_mpi_overlap_parse(text, &o) != 0) {
    cli_error("%s: expected auto, on or off, got '%s'", what, text);
    return -1;
  }
  *(int *)value = (int)o;
  return 0;
}

void cli_format_mpi_overlap(const void *value, char *buf, size_t n) {
  snprintf(buf, n, "%s", vox_mpi_overlap_name((vox_mpi_overlap) * (const int *)value));
}

void cli_mpi_say_ranks(const char *input, const vox_backend *backend, int quiet) {
  if (quiet || rank != 0) return;
  fprintf(stderr, "%s: %d ranks on %s, their slabs' layers exchanged by %s\n", input, size,
          vox_backend_device(backend) == VOX_DEVICE_CUDA ? "GPUs" : "CPU cores",
          vox_mpi_backend_exchange(backend));
}

void cli_mpi_finish(void) {
  if (engine != MPI_COMM_NULL) MPI_Comm_free(&engine);
  if (status_comm != MPI_COMM_NULL) MPI_Comm_free(&status_comm);
  MPI_Finalize();
}

/* A computation's failure, for cli_mpi_agree. */
typedef struct running_failure {
  vox_context *ctx;
  vox_status status;
  const char *input;
} running_failure;

static void say_running_failure(void *self) {
  const running_failure *f = self;
  cli_fail_input(f->ctx, f->status, CLI_RUNNING, f->input);
}

int cli_mpi_agree_running(vox_context *ctx, vox_status status, const char *input) {
  running_failure f = {ctx, status, input};
  return cli_mpi_agree(status == VOX_OK ? 0 : cli_exit_status(status, CLI_RUNNING),
                       say_running_failure, &f);
}
