/* SPDX-License-Identifier: BSD-3-Clause */
/* A program run over MPI ranks (--mpi, builds with VOXFE_MPI): its start and
 * end, and how the ranks agree on a failure so that the run ends with one
 * message and one exit status on every rank. Rank 0 reads, prints and
 * writes; the others compute their slabs and stay silent. */
#ifndef VOXFE_CLI_MPI_H
#define VOXFE_CLI_MPI_H

#ifdef VOXFE_HAVE_MPI
#include <mpi.h>

#include "voxfe/backend.h"
#include "voxfe/model.h"
#include "voxfe/mpi.h"

/* --mpi-exchange, the same in every program with --mpi: the int `field`
 * of `type`, a vox_mpi_exchange. */
#define CLI_MPI_EXCHANGE_OPTION(type, field)                                                 \
  {.name = "mpi-exchange", .arg = "E", .kind = CLI_CUSTOM, .offset = offsetof(type, field), \
   .flags = CLI_RECORD,                                                                      \
   .help = "--mpi on GPUs: how the ranks exchange the slabs' interface layers and gather "  \
           "vectors: auto (layers written straight into the neighbour's GPU where every "   \
           "rank has a GPU of its own on one host, else NCCL; gathers by NCCL), nccl, or "   \
           "host (through host memory and MPI); each falls back to host memory where it "  \
           "cannot run",                                                                     \
   .parse = cli_parse_mpi_exchange, .format = cli_format_mpi_exchange}

int cli_parse_mpi_exchange(const char *what, const char *text, void *value);
void cli_format_mpi_exchange(const void *value, char *buf, size_t n);

/* --mpi-hierarchy: the int `field` of `type`, a vox_mpi_hierarchy. */
#define CLI_MPI_HIERARCHY_OPTION(type, field)                                                 \
  {.name = "mpi-hierarchy", .arg = "H", .kind = CLI_CUSTOM, .offset = offsetof(type, field), \
   .flags = CLI_RECORD,                                                                       \
   .help = "--mpi, sparse storage: who builds the multigrid's host hierarchy, which every "  \
           "rank needs whole: root (rank 0 on the node's threads, then sent to the others: "  \
           "one build's host memory) or every (each rank its own, at once)",                 \
   .parse = cli_parse_mpi_hierarchy, .format = cli_format_mpi_hierarchy}

int cli_parse_mpi_hierarchy(const char *what, const char *text, void *value);
void cli_format_mpi_hierarchy(const void *value, char *buf, size_t n);

/* --mpi-gather-nodes: the int `field` of `type`, vox_mpi_options.gather_nodes
 * (VOX_MPI_GATHER_AUTO for auto). */
#define CLI_MPI_GATHER_OPTION(type, field)                                                      \
  {.name = "mpi-gather-nodes", .arg = "N", .kind = CLI_CUSTOM, .offset = offsetof(type, field), \
   .flags = CLI_RECORD,                                                                         \
   .help = "--mpi: multigrid levels of fewer than N nodes are gathered whole onto every rank "  \
           "and computed there redundantly (split, their products would be mostly the "        \
           "latency of launches and exchanges): auto (131072 on GPUs, 0 on CPU cores), or "     \
           "a number (0: only the levels whose slab boundaries fall between coarse nodes)",    \
   .parse = cli_parse_mpi_gather, .format = cli_format_mpi_gather}

int cli_parse_mpi_gather(const char *what, const char *text, void *value);
void cli_format_mpi_gather(const void *value, char *buf, size_t n);

/* --mpi-overlap: the int `field` of `type`, a vox_mpi_overlap. */
#define CLI_MPI_OVERLAP_OPTION(type, field)                                                    \
  {.name = "mpi-overlap", .arg = "USE", .kind = CLI_CUSTOM, .offset = offsetof(type, field), \
   .flags = CLI_RECORD,                                                                        \
   .help = "--mpi: whether the exchanges of the fine grid's smoothing steps and of the "      \
           "sparse storage's split levels travel beside the slab's work: auto (where that "  \
           "measured faster: the fine grid on GPUs, the sparse storage on GPUs that exchange " \
           "through host memory; never on CPU cores), on or off; the same results to "        \
           "rounding",                                                                         \
   .parse = cli_parse_mpi_overlap, .format = cli_format_mpi_overlap}

int cli_parse_mpi_overlap(const char *what, const char *text, void *value);
void cli_format_mpi_overlap(const void *value, char *buf, size_t n);

/* MPI_Init and the communicators; the other ranks' messages are silenced
 * (cli_set_silent); the ranks on one node divide OpenMP's threads among
 * them. Returns 0, or an exit status after a message. */
int cli_mpi_start(int *argc, char ***argv);
/* From here on rank 0 works alone (the fields, the files) while the
 * node's other ranks are done or wait for it: on rank 0, the node's
 * threads less a core for each of them (the analysis of the 550^3 bone's
 * fields took 0.91 s on 16 threads, 0.61 s on 32 without MPI). */
void cli_mpi_root_alone(void);
/* The node's threads shared between its ranks again (after
 * cli_mpi_root_alone: the others wait while rank 0 builds what it sends
 * them, then they compute together). */
void cli_mpi_ranks_together(void);
int cli_mpi_rank(void);
int cli_mpi_size(void);
/* This rank's rank among those on its node (its GPU: this modulo the
 * node's GPUs). */
int cli_mpi_node_rank(void);
/* The communicator the engine computes on (a copy of MPI_COMM_WORLD). */
MPI_Comm cli_mpi_engine(void);
/* Every rank's exit status after a step that every rank takes: the largest,
 * on every rank. A rank whose step failed while the others have not come
 * back within a few seconds failed on its own (out of memory, a device):
 * it prints its message (`failed` prints it) and ends every rank with its
 * status (MPI_Abort). */
int cli_mpi_agree(int status, void (*failed)(void *self), void *self);
/* cli_mpi_agree after a computation on input that every rank runs: its
 * exit status, and cli_fail_input's line (CLI_RUNNING) for a failure. */
int cli_mpi_agree_running(vox_context *ctx, vox_status status, const char *input);
/* rank 0's value of *status on every rank. */
int cli_mpi_from_root(int status);
/* Whether any rank saw an interrupt (SIGINT, SIGTERM): every rank stops
 * after the same design iteration. */
int cli_mpi_interrupted(void *self);
void cli_mpi_finish(void);
/* The MPI backend for `grid` (dofs_per_node 3 or 1) on the engine's
 * communicator, each rank's slab on `options`' device: auto becomes CUDA
 * where the node has GPUs, and a CUDA rank takes the GPU of its rank on the
 * node (modulo the node's GPUs) unless options name one; options->device
 * becomes the device taken. exchange, gather_nodes, first (NULL: the
 * automatic slabs), results, hierarchy and overlap: those of
 * vox_mpi_options. Collective. */
vox_status cli_mpi_backend(vox_context *ctx, const vox_grid *grid, int dofs_per_node,
                           vox_backend_options *options, vox_mpi_exchange exchange,
                           int gather_nodes, const int64_t *first, vox_mpi_results results,
                           vox_mpi_hierarchy hierarchy, vox_mpi_overlap overlap,
                           vox_backend **out);
/* One line on stderr from rank 0 (unless quiet): the ranks, their devices
 * and how they exchange. */
void cli_mpi_say_ranks(const char *input, const vox_backend *backend, int quiet);
#endif

/* The CUDA device that a program starts while it reads its input
 * (vox_device_warm_up_start): the one asked for (device_index >= 0), under
 * --mpi the rank's on its node (the one cli_mpi_backend gives it), else -1
 * (the current one). */
static inline int cli_warm_up_device(int mpi, int device_index) {
#ifdef VOXFE_HAVE_MPI
  if (mpi && device_index < 0) return cli_mpi_node_rank();
#else
  (void)mpi;
#endif
  return device_index;
}

#endif
