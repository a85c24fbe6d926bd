/* SPDX-License-Identifier: BSD-3-Clause */
/* One model on many MPI ranks (built with VOXFE_MPI): a backend that splits
 * the grid into slabs of element layers along z, one slab a rank, and runs
 * a backend's kernels (CPU or CUDA) on each rank's slab. The solver, the multigrid
 * and the FE system are the one-process code: they call this backend with
 * the whole grid's sizes, and it keeps each rank's part (docs/engine.md,
 * "Many ranks"). Every rank holds the whole model in host memory and calls
 * the same engine functions in the same order (collective calls). */
#ifndef VOXFE_MPI_H
#define VOXFE_MPI_H

#include <mpi.h>
#include <stdint.h>

#include "voxfe/backend.h"
#include "voxfe/model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The automatic split of nz element layers over `ranks` ranks: blocks of
 * 2^m layers, m as large as leaves every rank a block, dealt out in order
 * (the first ranks one more where they do not divide), so that the slab
 * boundaries stay multiples of 2^m and m multigrid levels below the fine one
 * stay split as well. first[r] is rank r's first layer, first[ranks] = nz.
 * Fails (returns -1) when nz < ranks. */
int vox_mpi_slabs(int64_t nz, int ranks, int64_t *first);

/* A split of nz element layers over `ranks` ranks whose slabs carry about
 * equal shares of the layers' weights (weight[k] >= 0 for layer k: a
 * bone's elements in it, for its sparse storage): each boundary where the
 * running sum comes nearest to its share, every rank at least one layer,
 * and the boundaries multiples of 4 where nz >= 4 ranks, else of 2 where
 * nz >= 2 ranks (the sparse storage's levels 1 and 2 are then split as
 * well: vox_mpi_backend_sparse_split_levels). first as for vox_mpi_slabs;
 * fails (returns -1) when nz < ranks. */
int vox_mpi_slabs_weighted(const double *weight, int64_t nz, int ranks, int64_t *first);

/* vox_mpi_slabs_weighted with each layer weighted by the model's non-empty
 * elements in it (a bone's, for its sparse storage). Fails (returns -1)
 * when nz < ranks or memory runs out. */
int vox_mpi_slabs_of_bone(const vox_model *model, int ranks, int64_t *first);

/* How a backend splits the grid over the ranks. */
/* How ranks on GPUs exchange the slabs' interface layers and gather
 * vectors (ranks on CPU cores use MPI on their host memory). */
typedef enum vox_mpi_exchange {
  /* interface layers written straight into the neighbour's GPU where every
   * rank has a GPU of its own on one host and the GPUs reach each other,
   * else by NCCL; gathers by NCCL; each through host memory and MPI where
   * it cannot run */
  VOX_MPI_EXCHANGE_AUTO = 0,
  VOX_MPI_EXCHANGE_NCCL = 1, /* NCCL for both, where it runs (the build has it, every rank
                                has a GPU of its own); host memory otherwise */
  VOX_MPI_EXCHANGE_HOST = 2  /* through host memory and MPI */
} vox_mpi_exchange;

/* "auto", "nccl", "host"; parse returns 0, or -1 for another name. */
const char *vox_mpi_exchange_name(vox_mpi_exchange e);
int vox_mpi_exchange_parse(const char *name, vox_mpi_exchange *out);

typedef struct vox_mpi_options {
  /* ranks + 1 entries, rank r owning element layers [first[r], first[r+1]),
   * each at least one; NULL takes vox_mpi_slabs */
  const int64_t *first;
  /* the backend each rank runs its slab on (device, device_index, kernel,
   * FP16 levels); NULL: the CPU. A CUDA device_index of -1 takes the
   * thread's current device. */
  const vox_backend_options *ranks_backend;
  /* how GPU ranks exchange (vox_mpi_exchange) */
  vox_mpi_exchange exchange;
  /* Multigrid levels of fewer nodes than this are gathered: the same whole
   * level on every rank, computed redundantly, where a split level's
   * products would be mostly the latency of launches and exchanges (levels
   * whose slab boundaries do not fall on coarse nodes are gathered
   * anyway). 0 gathers only those; VOX_MPI_GATHER_AUTO (the default) takes
   * VOX_MPI_GATHER_GPU on GPU ranks and VOX_MPI_GATHER_CPU on CPU ranks
   * (where MPI's latency on host memory is small: two ranks of the
   * development machine solved the 96 x 48 x 48 cantilever in the same
   * time with 0 and 4096, docs/engine.md). */
  int64_t gather_nodes;
  /* where a solve's results arrive (vox_mpi_results) */
  int results;
  /* who builds a sparse solve's host hierarchy (vox_mpi_hierarchy) */
  int hierarchy;
  /* Whether the exchanges overlap the slab's own work where it is large
   * (vox_mpi_overlap): the fine grid's smoothing steps and residuals, and
   * the products of the sparse storage's split levels, first compute the
   * slab's first and last element layer, whose parts of the shared layers
   * travel while the slab's step or product runs. The same results to
   * rounding (the full storage's to the bit). */
  int overlap;
} vox_mpi_options;

/* vox_mpi_options.overlap. */
typedef enum vox_mpi_overlap {
  /* where it measured faster: the fine grid's steps on GPU ranks (on two
   * H200s a cycle of the 512 x 256 x 256 cantilever 0.3 % faster with
   * direct writes, 0.5 % with NCCL, 15 % through host memory); the sparse
   * storage's products on GPU ranks whose swaps go through host memory (the
   * 550^3 bone 6 % faster, 1.5 % slower with direct writes, whose swaps
   * cost less than the edge copies); never on CPU ranks, where OpenMPI moves
   * large messages inside its calls, so the transfer waits for the slab's
   * work anyway (two ranks of the development machine: a cycle of the 96 x
   * 48 x 48 cantilever 4 % slower with it) */
  VOX_MPI_OVERLAP_AUTO = 0,
  VOX_MPI_OVERLAP_ON = 1,
  VOX_MPI_OVERLAP_OFF = 2 /* the swap of the slab's result after it */
} vox_mpi_overlap;

/* "auto", "on", "off"; parse returns 0, or -1 for another name. */
const char *vox_mpi_overlap_name(vox_mpi_overlap o);
int vox_mpi_overlap_parse(const char *name, vox_mpi_overlap *out);

/* Who builds the host hierarchy of a sparse (bone-only) solve, which every
 * rank needs whole (docs/engine.md, "Many ranks"). */
typedef enum vox_mpi_hierarchy {
  /* rank 0, on the node's threads, and sends it to the others (the default):
   * one copy built, the host memory of one build's work at a time (perlin32
   * on two H200s: 148 GB at the setup's peak against 247 GB), the sending
   * at about 2.5 GB/s on the H200 pair's host */
  VOX_MPI_HIERARCHY_ROOT = 0,
  /* every rank its own, at once (the same arrays on a share of the cores) */
  VOX_MPI_HIERARCHY_EVERY_RANK = 1
} vox_mpi_hierarchy;

/* "root", "every"; parse returns 0, or -1 for another name. */
const char *vox_mpi_hierarchy_name(vox_mpi_hierarchy h);
int vox_mpi_hierarchy_parse(const char *name, vox_mpi_hierarchy *out);

/* Where a solve's results (its displacements or temperatures) arrive. */
typedef enum vox_mpi_results {
  /* every rank gets the whole array and passes its start in it (the default) */
  VOX_MPI_RESULTS_EVERY_RANK = 0,
  /* rank 0 alone: the others pass NULL for them and are spared the array,
   * the gather to every rank and the scatter into it (a program whose rank
   * 0 writes the output); the solves then start from zero */
  VOX_MPI_RESULTS_ROOT = 1
} vox_mpi_results;

enum { VOX_MPI_GATHER_AUTO = -1, VOX_MPI_GATHER_GPU = 1 << 17, VOX_MPI_GATHER_CPU = 0 };

/* first NULL, ranks_backend NULL (the CPU), exchange VOX_MPI_EXCHANGE_AUTO,
 * gather_nodes VOX_MPI_GATHER_AUTO, results VOX_MPI_RESULTS_EVERY_RANK,
 * hierarchy VOX_MPI_HIERARCHY_ROOT, overlap VOX_MPI_OVERLAP_AUTO */
void vox_mpi_options_default(vox_mpi_options *options);

/* A backend on communicator `comm` for a grid and its dofs per node (3
 * elasticity, 1 heat); collective, and a failure on any rank (a missing
 * device) fails it on all. options NULL: the defaults. The backend's
 * vectors are the whole grid's to the engine (vec->upload takes,
 * vec->download gives the whole array on every rank); each rank stores its
 * slab and the interface node layers it shares with its neighbours, in its
 * own backend's memory. The bone's sparse storage is split in double
 * precision (level 0 on the slabs, the coarse levels whole on every rank).
 * Periodic grids, periodic cells and symmetry are not split yet: the
 * backend has no such operations, and refuses them with a message. */
vox_status vox_mpi_backend_create(vox_context *ctx, MPI_Comm comm, const vox_grid *grid,
                                  int dofs_per_node, const vox_mpi_options *options,
                                  vox_backend **out);

/* The slab of this rank, [*first, *end) element layers, of a backend made
 * by vox_mpi_backend_create. */
void vox_mpi_backend_slab(const vox_backend *be, int64_t *first, int64_t *end);

/* The number of levels, from the fine one, whose nodes are split over the
 * ranks (the others are gathered, the same on every rank). */
int vox_mpi_backend_split_levels(const vox_backend *be);
/* The same for the bone's sparse storage, as its last solve split it: 1
 * (level 0) to 3; level l splits too where every slab boundary divides by
 * 2^l, every rank's slab of level l holds bone and level l is not the
 * coarsest. 0 before a sparse solve. */
int vox_mpi_backend_sparse_split_levels(const vox_backend *be);

/* How the ranks exchange interface layers: "MPI" (host memory), "direct
 * writes between GPUs", "NCCL" or "MPI through host memory" (GPUs). */
const char *vox_mpi_backend_exchange(const vox_backend *be);
/* 1 where a sparse solve's V-cycle is recorded once and replayed (the
 * ranks' backend records, the exchanges and gathers are device work: GPUs
 * exchanging by direct writes or NCCL, with NCCL's gathers), else 0. */
int vox_mpi_backend_records(const vox_backend *be);

/* The model of rank `root` on every rank of `comm` (collective): on the
 * others, *model (whatever it held is not freed) becomes a copy that
 * vox_model_free frees. */
vox_status vox_mpi_model_broadcast(vox_context *ctx, MPI_Comm comm, int root, vox_model *model);

#ifdef __cplusplus
}
#endif

#endif
