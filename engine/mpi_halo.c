/* SPDX-License-Identifier: BSD-3-Clause */
/* The MPI backend's traffic between neighbouring slabs (mpi_halo.h). NCCL
 * runs its transfers on the legacy default stream, the one the CUDA
 * backend's kernels run on in order: the product that fills a layer ends
 * before it is sent, and the sum that reads the received layer starts after
 * it arrives, with no wait on the host in between. */
#include "mpi_halo.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#ifdef VOXFE_HAVE_NCCL
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <nccl.h>

/* NCCL's entry points, loaded when a backend first asks (libnccl.so.2), so
 * that a build with NCCL still runs where it is not installed, exchanging
 * through host memory there. */
typedef struct nccl_api {
  ncclResult_t (*get_unique_id)(ncclUniqueId *id);
  ncclResult_t (*comm_init_rank)(ncclComm_t *comm, int ranks, ncclUniqueId id, int rank);
  ncclResult_t (*comm_destroy)(ncclComm_t comm);
  ncclResult_t (*group_start)(void);
  ncclResult_t (*group_end)(void);
  ncclResult_t (*send)(const void *data, size_t n, ncclDataType_t type, int peer,
                       ncclComm_t comm, cudaStream_t stream);
  ncclResult_t (*recv)(void *data, size_t n, ncclDataType_t type, int peer, ncclComm_t comm,
                       cudaStream_t stream);
  ncclResult_t (*broadcast)(const void *send, void *recv, size_t n, ncclDataType_t type,
                            int root, ncclComm_t comm, cudaStream_t stream);
  const char *(*error_string)(ncclResult_t result);
} nccl_api;

/* Whether NCCL loaded, its entry points in *api. */
static int nccl_load(nccl_api *api) {
  void *lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return 0;
  void **entry[] = {(void **)&api->get_unique_id, (void **)&api->comm_init_rank,
                    (void **)&api->comm_destroy,  (void **)&api->group_start,
                    (void **)&api->group_end,     (void **)&api->send,
                    (void **)&api->recv,          (void **)&api->broadcast,
                    (void **)&api->error_string};
  static const char *const names[] = {"ncclGetUniqueId", "ncclCommInitRank", "ncclCommDestroy",
                                      "ncclGroupStart",  "ncclGroupEnd",     "ncclSend",
                                      "ncclRecv",        "ncclBroadcast",    "ncclGetErrorString"};
  int all = 1;
  for (int i = 0; i < 9; i++) all &= (*entry[i] = dlsym(lib, names[i])) != NULL;
  return all; /* the library stays loaded for the process */
}
#endif

struct vox_mpi_halo {
  vox_context *ctx;
  MPI_Comm comm;
  int rank, size;
  vox_backend *inner;
  vox_mpi_halo_kind kind;
  double *host; /* 4 layers, the staged exchange */
  size_t host_n;
#ifdef VOXFE_HAVE_NCCL
  ncclComm_t nccl;
  nccl_api api;
#endif
};

#ifdef VOXFE_HAVE_NCCL
/* Whether every rank has a GPU of its own (NCCL refuses two ranks on one):
 * the ranks' hosts and their devices' PCI addresses, all distinct. */
static int own_devices(vox_mpi_halo *h) {
  enum { NAME = 288 };
  char mine[NAME] = {0};
  int device = 0, len = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetPCIBusId(mine, 32, device) != cudaSuccess)
    return 0;
  MPI_Get_processor_name(mine + 32, &len);
  char *all = calloc((size_t)h->size, NAME);
  if (!all) return 0;
  MPI_Allgather(mine, NAME, MPI_CHAR, all, NAME, MPI_CHAR, h->comm);
  int distinct = 1;
  for (int a = 0; a < h->size && distinct; a++)
    for (int b = a + 1; b < h->size && distinct; b++)
      distinct = memcmp(all + (size_t)a * NAME, all + (size_t)b * NAME, NAME) != 0;
  free(all);
  return distinct;
}

static vox_status nccl_start(vox_mpi_halo *h) {
  ncclUniqueId id;
  int failed = h->rank == 0 && h->api.get_unique_id(&id) != ncclSuccess;
  MPI_Bcast(&failed, 1, MPI_INT, 0, h->comm);
  if (failed) return vox_error(h->ctx, VOX_ERR_DEVICE, "NCCL: no unique id for the ranks");
  MPI_Bcast(&id, (int)sizeof id, MPI_BYTE, 0, h->comm);
  const ncclResult_t r = h->api.comm_init_rank(&h->nccl, h->size, id, h->rank);
  failed = r != ncclSuccess;
  MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, h->comm);
  if (failed) {
    if (r == ncclSuccess) h->api.comm_destroy(h->nccl);
    h->nccl = NULL;
    return vox_error(h->ctx, VOX_ERR_DEVICE, "NCCL: the ranks' communicator: %s",
                     r == ncclSuccess ? "failed on another rank" : h->api.error_string(r));
  }
  h->kind = VOX_MPI_HALO_NCCL;
  return VOX_OK;
}
#endif

vox_status vox_mpi_halo_create(vox_context *ctx, MPI_Comm comm, vox_backend *inner, int nccl,
                               vox_mpi_halo **out) {
  *out = NULL;
  vox_mpi_halo *h = calloc(1, sizeof *h);
  if (!h) return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
  h->ctx = ctx;
  h->comm = comm;
  h->inner = inner;
  MPI_Comm_rank(comm, &h->rank);
  MPI_Comm_size(comm, &h->size);
  h->kind = vox_backend_device(inner) == VOX_DEVICE_CPU ? VOX_MPI_HALO_HOST : VOX_MPI_HALO_STAGED;
#ifdef VOXFE_HAVE_NCCL
  /* every rank takes the same branch: NCCL where it loaded on every rank
   * and every rank has a GPU of its own (both collective) */
  int loaded = h->kind == VOX_MPI_HALO_STAGED && nccl && h->size > 1 && nccl_load(&h->api);
  MPI_Allreduce(MPI_IN_PLACE, &loaded, 1, MPI_INT, MPI_MIN, comm);
  if (loaded && own_devices(h)) {
    const vox_status s = nccl_start(h);
    if (s != VOX_OK) {
      free(h);
      return s;
    }
  }
#else
  (void)nccl;
#endif
  *out = h;
  return VOX_OK;
}

void vox_mpi_halo_destroy(vox_mpi_halo *h) {
  if (!h) return;
#ifdef VOXFE_HAVE_NCCL
  if (h->nccl) h->api.comm_destroy(h->nccl);
#endif
  free(h->host);
  free(h);
}

vox_mpi_halo_kind vox_mpi_halo_kind_of(const vox_mpi_halo *h) { return h->kind; }

const char *vox_mpi_halo_name(const vox_mpi_halo *h) {
  return h->kind == VOX_MPI_HALO_NCCL     ? "NCCL"
         : h->kind == VOX_MPI_HALO_STAGED ? "MPI through host memory"
                                          : "MPI";
}

/* The two MPI_Sendrecv of a swap on host arrays, n_down values with the
 * rank below and n_up with the rank above (absent neighbours are
 * MPI_PROC_NULL, whose transfers do nothing, but whose buffers MPI still
 * checks: the other side's stand in). */
static void sendrecv(vox_mpi_halo *h, int lower, int upper, int n_down, int n_up,
                     const double *down, const double *up, double *from_below,
                     double *from_above) {
  const int lo = lower ? h->rank - 1 : MPI_PROC_NULL, hi = upper ? h->rank + 1 : MPI_PROC_NULL;
  if (!lower) down = up, from_below = from_above;
  if (!upper) up = down, from_above = from_below;
  MPI_Sendrecv(up, n_up, MPI_DOUBLE, hi, 1, from_below, n_down, MPI_DOUBLE, lo, 1, h->comm,
               MPI_STATUS_IGNORE);
  MPI_Sendrecv(down, n_down, MPI_DOUBLE, lo, 2, from_above, n_up, MPI_DOUBLE, hi, 2, h->comm,
               MPI_STATUS_IGNORE);
}

vox_status vox_mpi_halo_swap(vox_mpi_halo *h, int lower, int upper, const vox_vec *down,
                             const vox_vec *up, vox_vec *from_below, vox_vec *from_above) {
  /* a layer of no values (the bone's storage: no bone on it) is skipped by
   * both of its ranks alike */
  const size_t n_down = lower ? down->n : 0, n_up = upper ? up->n : 0;
  lower = n_down > 0, upper = n_up > 0;
  if (!lower && !upper) return VOX_OK;
#ifdef VOXFE_HAVE_NCCL
  if (h->kind == VOX_MPI_HALO_NCCL) {
    const nccl_api *f = &h->api;
    ncclResult_t r = f->group_start();
    if (upper && r == ncclSuccess)
      r = f->send(up->data, n_up, ncclDouble, h->rank + 1, h->nccl, 0);
    if (upper && r == ncclSuccess)
      r = f->recv(from_above->data, n_up, ncclDouble, h->rank + 1, h->nccl, 0);
    if (lower && r == ncclSuccess)
      r = f->send(down->data, n_down, ncclDouble, h->rank - 1, h->nccl, 0);
    if (lower && r == ncclSuccess)
      r = f->recv(from_below->data, n_down, ncclDouble, h->rank - 1, h->nccl, 0);
    const ncclResult_t end = f->group_end();
    if (r == ncclSuccess) r = end;
    if (r != ncclSuccess)
      return vox_error(h->ctx, VOX_ERR_DEVICE, "NCCL: a halo exchange: %s", f->error_string(r));
    return VOX_OK;
  }
#endif
  if (n_down > INT_MAX || n_up > INT_MAX)
    return vox_error(h->ctx, VOX_ERR_UNSUPPORTED, "a grid layer of %zu values is too large for MPI",
                     n_down > n_up ? n_down : n_up);
  if (h->kind == VOX_MPI_HALO_HOST) {
    sendrecv(h, lower, upper, (int)n_down, (int)n_up, lower ? down->data : NULL,
             upper ? up->data : NULL, lower ? from_below->data : NULL,
             upper ? from_above->data : NULL);
    return VOX_OK;
  }
  const size_t n = n_down + n_up;
  if (h->host_n < 2 * n) {
    free(h->host);
    h->host = malloc(2 * n * sizeof *h->host);
    h->host_n = h->host ? 2 * n : 0;
    if (!h->host) return vox_error(h->ctx, VOX_ERR_NO_MEMORY, "out of memory");
  }
  double *send_down = h->host, *send_up = h->host + n_down, *recv_below = h->host + n,
         *recv_above = h->host + n + n_down;
  const vox_backend_ops *in = h->inner->ops;
  if (lower) TRY(in->vec->download(h->inner, down, send_down));
  if (upper) TRY(in->vec->download(h->inner, up, send_up));
  sendrecv(h, lower, upper, (int)n_down, (int)n_up, send_down, send_up, recv_below, recv_above);
  if (lower) TRY(in->vec->upload(h->inner, from_below, recv_below));
  if (upper) TRY(in->vec->upload(h->inner, from_above, recv_above));
  return VOX_OK;
}

vox_status vox_mpi_halo_allgatherv(vox_mpi_halo *h, vox_vec *whole, const int *counts,
                                   const int *displs, size_t unit) {
#ifdef VOXFE_HAVE_NCCL
  if (h->kind == VOX_MPI_HALO_NCCL) {
    /* NCCL has no gather of unequal parts: one broadcast from each rank, of
     * its part in place, grouped into one launch */
    const nccl_api *f = &h->api;
    ncclResult_t r = f->group_start();
    for (int q = 0; q < h->size && r == ncclSuccess; q++) {
      double *at = whole->data + (size_t)displs[q] * unit;
      if (counts[q] > 0)
        r = f->broadcast(at, at, (size_t)counts[q] * unit, ncclDouble, q, h->nccl, 0);
    }
    const ncclResult_t end = f->group_end();
    if (r == ncclSuccess) r = end;
    if (r != ncclSuccess)
      return vox_error(h->ctx, VOX_ERR_DEVICE, "NCCL: a gather: %s", f->error_string(r));
    return VOX_OK;
  }
#else
  (void)whole, (void)counts, (void)displs, (void)unit;
#endif
  return vox_error(h->ctx, VOX_ERR_UNSUPPORTED, "a gather on the device needs NCCL");
}
