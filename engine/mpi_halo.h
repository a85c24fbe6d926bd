/* SPDX-License-Identifier: BSD-3-Clause */
/* The MPI backend's traffic between neighbouring slabs, on the memory its
 * ranks' own backend keeps vectors in: MPI on host memory (the CPU
 * backend); between GPUs, each rank's layers written straight into its
 * neighbours' device memory (peer_ops.h: every rank on a GPU of its own,
 * all on one host, the GPUs reaching each other), or NCCL on device memory
 * (a CUDA build with NCCL, every rank on a GPU of its own); MPI through
 * host copies otherwise (a build without NCCL, or ranks sharing a GPU,
 * which NCCL refuses). Gathers run by NCCL where it runs. */
#ifndef VOXFE_MPI_HALO_H
#define VOXFE_MPI_HALO_H

#include <mpi.h>

#include "backend_ops.h"
#include "voxfe/mpi.h"

typedef struct vox_mpi_halo vox_mpi_halo;

/* n bytes from rank `root` to every rank of `comm`, in pieces an int
 * counts (a model's arrays, a sparse solve's hierarchy). */
void vox_mpi_broadcast_bytes(MPI_Comm comm, int root, void *data, size_t n);
/* n bytes from rank `from` to rank `to` (the calling rank is one of them),
 * in pieces likewise. */
void vox_mpi_send_bytes(MPI_Comm comm, int from, int to, void *data, size_t n);

/* For vectors of `inner` (a CPU or CUDA backend) on the ranks of `comm`,
 * whose swaps carry at most `max_layer` values each way; collective.
 * `exchange` chooses among the transports that can run. */
vox_status vox_mpi_halo_create(vox_context *ctx, MPI_Comm comm, vox_backend *inner,
                               vox_mpi_exchange exchange, size_t max_layer,
                               vox_mpi_halo **out);
void vox_mpi_halo_destroy(vox_mpi_halo *h);
/* "MPI", "MPI through host memory", "NCCL" or "direct writes between GPUs". */
const char *vox_mpi_halo_name(const vox_mpi_halo *h);

/* One layer each way between neighbours (inner vectors or views of them,
 * of doubles): `down` to rank - 1 and `up` to rank + 1; from rank - 1 into
 * `from_below` (as many values as `down`), from rank + 1 into `from_above`
 * (as many as `up`): the layer a rank shares with a neighbour has the same
 * size on both. `lower` and `upper` say whether those neighbours exist; a
 * layer of no values is skipped. Collective over the neighbours: every rank
 * calls it in the same order. */
vox_status vox_mpi_halo_swap(vox_mpi_halo *h, int lower, int upper, const vox_vec *down,
                             const vox_vec *up, vox_vec *from_below, vox_vec *from_above);

/* The same swap in two halves, around work of the rank's own that
 * overlaps it (the slab's step while its edges travel): `start` sends the
 * layers and posts their receipt, `finish` completes it and multiplies the
 * received layers by the masks (NULL for 1s). In between the rank neither
 * writes down and up nor reads from_below and from_above, and starts no
 * other swap. Collective as the swap. */
vox_status vox_mpi_halo_swap_start(vox_mpi_halo *h, int lower, int upper, const vox_vec *down,
                                   const vox_vec *up, vox_vec *from_below, vox_vec *from_above,
                                   const vox_vec *mask_below, const vox_vec *mask_above);
vox_status vox_mpi_halo_swap_finish(vox_mpi_halo *h);

/* The same swap, the neighbours' layers then added into the rank's own:
 * first += mask_below .* (rank - 1's layer), last += mask_above .* (rank +
 * 1's); masks NULL for 1s, recv_below and recv_above room for the
 * received layers where the transport needs it. */
vox_status vox_mpi_halo_swap_add(vox_mpi_halo *h, int lower, int upper, vox_vec *first,
                                 vox_vec *last, vox_vec *recv_below, vox_vec *recv_above,
                                 const vox_vec *mask_below, const vox_vec *mask_above);

/* Whether swaps of up to n values a side run between the devices (direct
 * writes or NCCL), not through host memory. */
int vox_mpi_halo_swaps_on_device(const vox_mpi_halo *h, size_t n);

/* Whether vox_mpi_halo_allgatherv runs (NCCL). */
int vox_mpi_halo_gathers_on_device(const vox_mpi_halo *h);

/* Whether the swaps and gathers are device work alone, which a recording
 * of the ranks' backend (sparse_ops.h: record_begin) can hold: the direct
 * writes or NCCL, and NCCL's gathers; or a single rank. */
int vox_mpi_halo_records(const vox_mpi_halo *h);

/* Every rank's part of `whole` (an inner vector of doubles, whose part of
 * rank q, counts[q] * unit values from displs[q] * unit, that rank holds)
 * on every rank, in place on the device: NCCL only (VOX_ERR_UNSUPPORTED
 * otherwise, where the caller gathers through host memory). Collective. */
vox_status vox_mpi_halo_allgatherv(vox_mpi_halo *h, vox_vec *whole, const int *counts,
                                   const int *displs, size_t unit);

/* v (an inner vector of doubles or floats) summed over the ranks, in
 * place on the device, the same bits on every rank: NCCL only
 * (VOX_ERR_UNSUPPORTED otherwise). Collective. */
vox_status vox_mpi_halo_allreduce_sum(vox_mpi_halo *h, vox_vec *v);

#endif
