/* SPDX-License-Identifier: BSD-3-Clause */
/* Device memory that the processes of one host write into each other's
 * (private): the MPI backend's exchanges between GPUs that reach each other
 * (mpi_halo.c), as a table of the ranks' backend, reached through
 * vox_backend_ops.peer (NULL where the backend has none: the CPU's).
 *
 * An exchange is two launches on the backend's stream, with no host wait:
 * `put` writes each layer straight into the neighbour's memory and, once
 * every value is written, raises the neighbour's flag to the exchange's
 * sequence number; `get` waits on the device until its own flags reach it,
 * then copies what arrived into place. A rank alternates between two
 * mailbox slots (the sequence number's parity): a neighbour cannot write a
 * slot again before this rank has read it, since that write comes after
 * the neighbour's `get` of the next exchange, which waits for this rank's
 * `put`, which this rank launches after its `get` of the slot. The
 * sequence numbers are counted on the device (each put and get adds one to
 * its direction's count), so that a recorded V-cycle's exchanges replay
 * with the numbers of the replay, not of the recording. This is the
 * one-sided exchange of NVSHMEM's puts and signals, on memory shared by
 * CUDA's interprocess handles. */
#ifndef VOXFE_PEER_OPS_H
#define VOXFE_PEER_OPS_H

#include "backend_ops.h"

enum {
  VOX_PEER_HANDLE_BYTES = 64, /* cudaIpcMemHandle_t */
  VOX_PEER_ID_BYTES = 32      /* a PCI bus id */
};

/* n doubles from src to dst, and the flag that says they are there. The
 * exchange's sequence number is one more than *count (this device's count
 * of the exchanges so far in the transfer's direction, which the launch
 * then raises); the mailbox side (a put's dst, a get's src) is the first
 * of two slots `stride` doubles apart, the number's parity picking one. */
typedef struct vox_peer_transfer {
  const double *src;
  double *dst;
  size_t n; /* 0: no transfer */
  uint64_t *flag;
  uint64_t *count;
  size_t stride;
  /* get only: 1 adds src into dst (dst += mask .* src, mask NULL for 1s)
   * instead of copying it */
  int add;
  const double *mask;
} vox_peer_transfer;

struct vox_peer_ops {
  /* The device's PCI address, which tells two processes' devices apart */
  vox_status (*device_id)(vox_backend *be, char id[VOX_PEER_ID_BYTES]);
  /* `bytes` of zeroed device memory that another process of the host can
   * map, named by `handle` */
  vox_status (*share)(vox_backend *be, size_t bytes, void **mem,
                      unsigned char handle[VOX_PEER_HANDLE_BYTES]);
  void (*unshare)(vox_backend *be, void *mem);
  /* Another process's shared memory, mapped into this one; a failure (the
   * devices cannot reach each other) leaves a message and *mem NULL. */
  vox_status (*map)(vox_backend *be, const unsigned char handle[VOX_PEER_HANDLE_BYTES],
                    void **mem);
  void (*unmap)(vox_backend *be, void *mem);
  /* Each transfer of n > 0: src (this device's) into dst's slot (a
   * neighbour's mapped memory), then *flag (the neighbour's) = the
   * sequence number once all are written. */
  vox_status (*put)(vox_backend *be, const vox_peer_transfer t[2]);
  /* Each transfer of n > 0: waits until *flag (this device's, raised by a
   * neighbour) reaches the sequence number, then copies src's slot (this
   * device's mailbox) into dst, or adds it (add). */
  vox_status (*get)(vox_backend *be, const vox_peer_transfer t[2]);
  /* The stream the backend launches onto now (a recording's while it
   * records), for the other device work of an exchange (NCCL's). */
  void *(*stream)(vox_backend *be);
  /* A stream of its own for device work beside the backend's (an
   * exchange's NCCL calls while a slab's step runs), which first waits for
   * the work launched so far; `rejoin` makes the backend's stream wait for
   * what was put on it. One at a time. */
  vox_status (*beside)(vox_backend *be, void **stream);
  vox_status (*rejoin)(vox_backend *be);
};

#ifdef __cplusplus
extern "C" {
#endif
#ifdef VOXFE_HAVE_CUDA
extern const vox_peer_ops vox_cuda_peer_ops;
#endif
#ifdef __cplusplus
}
#endif

#endif
