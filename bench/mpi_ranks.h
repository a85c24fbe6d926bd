/* SPDX-License-Identifier: BSD-3-Clause */
/* The ranks' backend and the MPI backend's options of the MPI benchmarks
 * (bench_mpi, bench_mpi_sparse) from their settings. */
#ifndef VOXFE_BENCH_MPI_RANKS_H
#define VOXFE_BENCH_MPI_RANKS_H

#include <mpi.h>

#include "bench_common.h"
#include "voxfe/mpi.h"

/* --device=cpu|cuda (each rank on the GPU of its rank on the node, modulo
 * the node's GPUs) into ranks_backend, and --exchange=auto|nccl|host and
 * --overlap=auto|on|off (vox_mpi_options.overlap) into o, whose
 * ranks_backend it becomes; NULL, or the setting that failed. */
static const char *bench_mpi_options(int rank, vox_backend_options *ranks_backend,
                                     vox_mpi_options *o) {
  vox_backend_options_default(ranks_backend);
  ranks_backend->device = VOX_DEVICE_CPU;
  const char *device = bench_option("device");
  if (device && vox_device_parse(device, &ranks_backend->device) != 0) return "--device";
  if (ranks_backend->device == VOX_DEVICE_CUDA) {
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    int local = 0;
    MPI_Comm_rank(node, &local);
    MPI_Comm_free(&node);
    const int count = vox_device_count(VOX_DEVICE_CUDA);
    ranks_backend->device_index = count > 0 ? local % count : 0;
  }
  vox_mpi_options_default(o);
  o->ranks_backend = ranks_backend;
  const char *exchange = bench_option("exchange");
  if (exchange && vox_mpi_exchange_parse(exchange, &o->exchange) != 0) return "--exchange";
  const char *overlap = bench_option("overlap");
  vox_mpi_overlap use;
  if (overlap && vox_mpi_overlap_parse(overlap, &use) != 0) return "--overlap";
  if (overlap) o->overlap = (int)use;
  return NULL;
}

#endif
