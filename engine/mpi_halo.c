/* SPDX-License-Identifier: BSD-3-Clause */
/* The MPI backend's traffic between neighbouring slabs (mpi_halo.h). NCCL
 * and the direct writes run their transfers on the legacy default stream,
 * the one the CUDA backend's kernels run on in order: the product that
 * fills a layer ends before it is sent, and the sum that reads the received
 * layer starts after it arrives, with no wait on the host in between. The
 * direct writes are two small kernels an exchange (peer_ops.h), the
 * second adding the neighbour's layer in place; between two H200s a cycle
 * takes 2.5 % less than with NCCL's send, receive and a sum, and a coarse
 * multigrid level's product and exchange still take twice the product
 * alone (docs/benchmarks.md).
 *
 * A swap split around the rank's own work (vox_mpi_halo_swap_start and
 * _finish) overlaps it as each transport allows: the direct writes put at
 * the start and get at the finish, by when the neighbour's put, launched
 * at the same point of its own work, has landed, and nothing waits; NCCL
 * sends and receives on a stream beside the backend's, joined at the
 * finish; MPI posts MPI_Isend and MPI_Irecv and waits at the finish
 * (OpenMPI moves large messages between processes inside its calls, so on
 * CPU ranks the transfer itself still happens in the wait). */
#include "mpi_halo.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "peer_ops.h"

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
  ncclResult_t (*all_reduce)(const void *send, void *recv, size_t n, ncclDataType_t type,
                             ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);
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
                    (void **)&api->all_reduce,    (void **)&api->error_string};
  static const char *const names[] = {"ncclGetUniqueId", "ncclCommInitRank", "ncclCommDestroy",
                                      "ncclGroupStart",  "ncclGroupEnd",     "ncclSend",
                                      "ncclRecv",        "ncclBroadcast",    "ncclAllReduce",
                                      "ncclGetErrorString"};
  int all = 1;
  for (int i = 0; i < 10; i++) all &= (*entry[i] = dlsym(lib, names[i])) != NULL;
  return all; /* the library stays loaded for the process */
}
#endif

/* How a swap travels. */
typedef enum vox_mpi_halo_kind {
  VOX_MPI_HALO_HOST = 0,   /* MPI on the vectors themselves (host memory) */
  VOX_MPI_HALO_STAGED = 1, /* MPI on host copies of device vectors */
  VOX_MPI_HALO_NCCL = 2,   /* NCCL on device vectors */
  VOX_MPI_HALO_PEER = 3    /* device vectors written into the neighbours' GPUs */
} vox_mpi_halo_kind;

/* The mailbox of the direct writes, in each rank's device memory: a head
 * of the flags the neighbours raise and this rank's own counts of the
 * exchanges put and got each way, then two slots of max_layer values for
 * each neighbour (peer_ops.h). */
enum {
  FLAG_BELOW = 0,
  FLAG_ABOVE = 8,
  PUT_BELOW = 16,
  PUT_ABOVE = 24,
  GOT_BELOW = 32,
  GOT_ABOVE = 40,
  MAILBOX_HEAD = 256
};

void vox_mpi_broadcast_bytes(MPI_Comm comm, int root, void *data, size_t n) {
  for (size_t done = 0; done < n;) {
    const size_t piece = n - done < (size_t)1 << 30 ? n - done : (size_t)1 << 30;
    MPI_Bcast((char *)data + done, (int)piece, MPI_BYTE, root, comm);
    done += piece;
  }
}

void vox_mpi_send_bytes(MPI_Comm comm, int from, int to, void *data, size_t n) {
  int rank;
  MPI_Comm_rank(comm, &rank);
  for (size_t done = 0; done < n;) {
    const size_t piece = n - done < (size_t)1 << 30 ? n - done : (size_t)1 << 30;
    if (rank == from)
      MPI_Send((char *)data + done, (int)piece, MPI_BYTE, to, 0, comm);
    else
      MPI_Recv((char *)data + done, (int)piece, MPI_BYTE, from, 0, comm, MPI_STATUS_IGNORE);
    done += piece;
  }
}

/* A swap started and not yet finished (vox_mpi_halo_swap_start): where
 * its layers arrive, their masks (data NULL: none), and what the finish
 * waits on. */
typedef struct vox_mpi_halo_swap_state {
  int pending;
  vox_vec from_below, from_above;
  vox_vec mask[2];
  vox_peer_transfer get[2];       /* the direct writes' second half */
  int beside;                     /* NCCL's calls on the side stream */
  MPI_Request requests[4];        /* MPI's */
  int n_requests;
  double *staged_below, *staged_above; /* host copies on their way to the device */
} vox_mpi_halo_swap_state;

struct vox_mpi_halo {
  vox_context *ctx;
  MPI_Comm comm;
  int rank, size;
  vox_backend *inner;
  vox_mpi_halo_kind kind;
  double *host; /* 4 layers, the staged exchange */
  size_t host_n;
  /* the direct writes: the layers' most values, this rank's mailbox and
   * the neighbours' mapped */
  size_t max_layer;
  char *mailbox, *below, *above;
  vox_mpi_halo_swap_state swap;
#ifdef VOXFE_HAVE_NCCL
  ncclComm_t nccl; /* NULL where NCCL does not run */
  nccl_api api;
#endif
};

/* A neighbour's (or this rank's) mailbox: its flag from the rank below or
 * above, that rank's first slot (of two, max_layer doubles apart), and
 * this rank's counts. */
static uint64_t *mailbox_flag(char *box, int from_above) {
  return (uint64_t *)(void *)(box + (from_above ? FLAG_ABOVE : FLAG_BELOW));
}
static double *mailbox_slots(const vox_mpi_halo *h, char *box, int from_above) {
  return (double *)(void *)(box + MAILBOX_HEAD + 2 * (size_t)from_above * h->max_layer *
                                                     sizeof(double));
}
static uint64_t *mailbox_count(char *box, int offset) {
  return (uint64_t *)(void *)(box + offset);
}

/* Where the ranks' devices are (collective): *own 1 where every rank has a
 * GPU of its own (NCCL refuses two ranks on one, and the direct writes wait
 * on the device for each other): the ranks' hosts and their devices' PCI
 * addresses, all distinct; *one_host 1 where the ranks run on one host. */
static void devices_of(vox_mpi_halo *h, int *own, int *one_host) {
  enum { ID = VOX_PEER_ID_BYTES, NAME = ID + MPI_MAX_PROCESSOR_NAME };
  char mine[NAME] = {0};
  const vox_peer_ops *p = h->inner->ops->peer;
  int len = 0, known = p && p->device_id(h->inner, mine) == VOX_OK;
  MPI_Get_processor_name(mine + ID, &len);
  MPI_Allreduce(MPI_IN_PLACE, &known, 1, MPI_INT, MPI_MIN, h->comm);
  char *all = calloc((size_t)h->size, NAME);
  *own = *one_host = 0;
  if (!known || !all) {
    free(all);
    return;
  }
  MPI_Allgather(mine, NAME, MPI_CHAR, all, NAME, MPI_CHAR, h->comm);
  *own = *one_host = 1;
  for (int a = 0; a < h->size; a++) {
    const char *ra = all + (size_t)a * NAME;
    *one_host &= strcmp(ra + ID, all + ID) == 0;
    for (int b = a + 1; b < h->size; b++) *own &= memcmp(ra, all + (size_t)b * NAME, NAME) != 0;
  }
  free(all);
}

/* The direct writes (collective): this rank's mailbox shared, the
 * neighbours' mapped; 0 where any rank could not, and nothing kept. */
static int peer_start(vox_mpi_halo *h) {
  const vox_peer_ops *p = h->inner->ops->peer;
  unsigned char mine[VOX_PEER_HANDLE_BYTES] = {0};
  const size_t bytes = MAILBOX_HEAD + 4 * h->max_layer * sizeof(double);
  int ok = p->share(h->inner, bytes, (void **)&h->mailbox, mine) == VOX_OK;
  unsigned char *all = calloc((size_t)h->size, VOX_PEER_HANDLE_BYTES);
  ok &= all != NULL;
  MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, h->comm);
  if (ok) {
    MPI_Allgather(mine, VOX_PEER_HANDLE_BYTES, MPI_BYTE, all, VOX_PEER_HANDLE_BYTES, MPI_BYTE,
                  h->comm);
    if (h->rank > 0)
      ok &= p->map(h->inner, all + (size_t)(h->rank - 1) * VOX_PEER_HANDLE_BYTES,
                   (void **)&h->below) == VOX_OK;
    if (h->rank < h->size - 1)
      ok &= p->map(h->inner, all + (size_t)(h->rank + 1) * VOX_PEER_HANDLE_BYTES,
                   (void **)&h->above) == VOX_OK;
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, h->comm);
  }
  free(all);
  if (!ok) {
    p->unmap(h->inner, h->below);
    p->unmap(h->inner, h->above);
    if (h->mailbox) p->unshare(h->inner, h->mailbox);
    h->mailbox = h->below = h->above = NULL;
    return 0;
  }
  h->kind = VOX_MPI_HALO_PEER;
  return 1;
}

#ifdef VOXFE_HAVE_NCCL
/* The stream NCCL's calls go to: the one the ranks' backend launches onto
 * now (a recording's while it records), so that they keep its order. */
static cudaStream_t nccl_stream(const vox_mpi_halo *h) {
  const vox_peer_ops *p = h->inner->ops->peer;
  return p && p->stream ? (cudaStream_t)p->stream(h->inner) : 0;
}

/* Ends a group of NCCL calls begun with group_start; r: the first call's
 * failure, or ncclSuccess. */
static vox_status nccl_group_end(vox_mpi_halo *h, ncclResult_t r, const char *what) {
  const ncclResult_t end = h->api.group_end();
  if (r == ncclSuccess) r = end;
  if (r != ncclSuccess)
    return vox_error(h->ctx, VOX_ERR_DEVICE, "NCCL: %s: %s", what, h->api.error_string(r));
  return VOX_OK;
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

#ifdef VOXFE_HAVE_NCCL
/* NCCL connects the ranks for each kind of transfer on its first use
 * (150-180 ms between two H200s, which the first design iteration took on
 * top of its own time): one of each kind the backend runs, of a single
 * value, here in the setup. */
static vox_status nccl_warm_up(vox_mpi_halo *h) {
  const vox_backend_ops *in = h->inner->ops;
  vox_vec one = {0}, two = {0};
  TRY(in->vec->create(h->inner, 1, VOX_DOUBLE, &one));
  vox_status s = in->vec->create(h->inner, 2, VOX_DOUBLE, &two);
  const nccl_api *f = &h->api;
  if (s == VOX_OK) {
    ncclResult_t r = f->group_start();
    for (int q = 0; q < h->size && r == ncclSuccess; q++)
      r = f->broadcast(one.data, one.data, 1, ncclDouble, q, h->nccl, nccl_stream(h));
    s = nccl_group_end(h, r, "connecting the ranks");
  }
  if (s == VOX_OK) s = vox_mpi_halo_allreduce_sum(h, &one);
  if (s == VOX_OK && h->kind == VOX_MPI_HALO_NCCL) {
    const int lower = h->rank > 0, upper = h->rank < h->size - 1;
    vox_vec down = {.data = two.data, .n = 1, .scalar = VOX_DOUBLE}, up = down;
    vox_vec below = {.data = two.data + 1, .n = 1, .scalar = VOX_DOUBLE}, above = below;
    s = vox_mpi_halo_swap(h, lower, upper, &down, &up, &below, &above);
    /* and beside the backend's stream, whose stream this makes (outside
     * any recording) */
    if (s == VOX_OK)
      s = vox_mpi_halo_swap_start(h, lower, upper, &down, &up, &below, &above, NULL, NULL);
    if (s == VOX_OK) s = vox_mpi_halo_swap_finish(h);
  }
  if (s == VOX_OK) s = in->synchronize(h->inner);
  in->vec->destroy(h->inner, &one);
  in->vec->destroy(h->inner, &two);
  return s;
}
#endif

vox_status vox_mpi_halo_create(vox_context *ctx, MPI_Comm comm, vox_backend *inner,
                               vox_mpi_exchange exchange, size_t max_layer,
                               vox_mpi_halo **out) {
  *out = NULL;
  vox_mpi_halo *h = calloc(1, sizeof *h);
  if (!h) return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
  h->ctx = ctx;
  h->comm = comm;
  h->inner = inner;
  MPI_Comm_rank(comm, &h->rank);
  MPI_Comm_size(comm, &h->size);
  h->max_layer = max_layer;
  h->kind = vox_backend_device(inner) == VOX_DEVICE_CPU ? VOX_MPI_HALO_HOST : VOX_MPI_HALO_STAGED;
  /* every rank takes the same branches (each decision is collective) */
  int own = 0, one_host = 0;
  if (h->kind == VOX_MPI_HALO_STAGED && exchange != VOX_MPI_EXCHANGE_HOST && h->size > 1)
    devices_of(h, &own, &one_host);
#ifdef VOXFE_HAVE_NCCL
  /* NCCL where it loaded on every rank and every rank has a GPU of its own */
  int loaded = own && nccl_load(&h->api);
  MPI_Allreduce(MPI_IN_PLACE, &loaded, 1, MPI_INT, MPI_MIN, comm);
  if (loaded) {
    const vox_status s = nccl_start(h);
    if (s != VOX_OK) {
      free(h);
      return s;
    }
  }
#endif
  if (own && one_host && exchange == VOX_MPI_EXCHANGE_AUTO) peer_start(h);
#ifdef VOXFE_HAVE_NCCL
  vox_status s = h->nccl ? nccl_warm_up(h) : VOX_OK;
  int failed = s != VOX_OK; /* every rank the same outcome */
  MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, comm);
  if (failed && s == VOX_OK) s = vox_error(ctx, VOX_ERR_DEVICE, "NCCL: failed on another rank");
  if (s != VOX_OK) {
    vox_mpi_halo_destroy(h);
    return s;
  }
#endif
  *out = h;
  return VOX_OK;
}

void vox_mpi_halo_destroy(vox_mpi_halo *h) {
  if (!h) return;
  if (h->mailbox) {
    const vox_peer_ops *p = h->inner->ops->peer;
    p->unmap(h->inner, h->below);
    p->unmap(h->inner, h->above);
    p->unshare(h->inner, h->mailbox);
  }
#ifdef VOXFE_HAVE_NCCL
  if (h->nccl) h->api.comm_destroy(h->nccl);
#endif
  free(h->host);
  free(h);
}

const char *vox_mpi_halo_name(const vox_mpi_halo *h) {
  return h->kind == VOX_MPI_HALO_PEER     ? "direct writes between GPUs"
         : h->kind == VOX_MPI_HALO_NCCL   ? "NCCL"
         : h->kind == VOX_MPI_HALO_STAGED ? "MPI through host memory"
                                          : "MPI";
}

int vox_mpi_halo_swaps_on_device(const vox_mpi_halo *h, size_t n) {
  return h->kind == VOX_MPI_HALO_NCCL || (h->kind == VOX_MPI_HALO_PEER && n <= h->max_layer);
}

int vox_mpi_halo_gathers_on_device(const vox_mpi_halo *h) {
#ifdef VOXFE_HAVE_NCCL
  return h->nccl != NULL;
#else
  (void)h;
  return 0;
#endif
}

/* The transfers of a swap by direct writes: the layers into the
 * neighbours' mailboxes (put), then from this rank's mailbox into place
 * (get, peer_ops.h): copied into from_below and from_above, or (add) added
 * into them, masked (masks NULL for 1s). */
static vox_status peer_transfers(vox_mpi_halo *h, int lower, int upper, const vox_vec *down,
                                 const vox_vec *up, vox_vec *from_below, vox_vec *from_above,
                                 int add, const vox_vec *mask_below, const vox_vec *mask_above,
                                 vox_peer_transfer put[2], vox_peer_transfer get[2]) {
  const size_t n_down = lower ? down->n : 0, n_up = upper ? up->n : 0;
  if (n_down > h->max_layer || n_up > h->max_layer)
    return vox_error(h->ctx, VOX_ERR_INVALID_ARGUMENT,
                     "an interface layer of %zu values, more than the %zu of the exchanges' "
                     "mailbox", n_down > n_up ? n_down : n_up, h->max_layer);
  memset(put, 0, 2 * sizeof *put);
  memset(get, 0, 2 * sizeof *get);
  if (lower) {
    put[0] = (vox_peer_transfer){down->data, mailbox_slots(h, h->below, 1), n_down,
                                 mailbox_flag(h->below, 1), mailbox_count(h->mailbox, PUT_BELOW),
                                 h->max_layer, 0, NULL};
    get[0] = (vox_peer_transfer){mailbox_slots(h, h->mailbox, 0), from_below->data, n_down,
                                 mailbox_flag(h->mailbox, 0), mailbox_count(h->mailbox, GOT_BELOW),
                                 h->max_layer, add, mask_below ? mask_below->data : NULL};
  }
  if (upper) {
    put[1] = (vox_peer_transfer){up->data, mailbox_slots(h, h->above, 0), n_up,
                                 mailbox_flag(h->above, 0), mailbox_count(h->mailbox, PUT_ABOVE),
                                 h->max_layer, 0, NULL};
    get[1] = (vox_peer_transfer){mailbox_slots(h, h->mailbox, 1), from_above->data, n_up,
                                 mailbox_flag(h->mailbox, 1), mailbox_count(h->mailbox, GOT_ABOVE),
                                 h->max_layer, add, mask_above ? mask_above->data : NULL};
  }
  return VOX_OK;
}

int vox_mpi_halo_records(const vox_mpi_halo *h) {
  return h->size == 1 || ((h->kind == VOX_MPI_HALO_PEER || h->kind == VOX_MPI_HALO_NCCL) &&
                          vox_mpi_halo_gathers_on_device(h));
}

/* A swap's first half (vox_mpi_halo_swap_start); `beside`: NCCL's calls on
 * a stream beside the backend's, for a swap that overlaps the rank's work
 * (the plain swap keeps them on the backend's stream, without the fork and
 * join). */
static vox_status swap_begin(vox_mpi_halo *h, int lower, int upper, const vox_vec *down,
                             const vox_vec *up, vox_vec *from_below, vox_vec *from_above,
                             const vox_vec *mask_below, const vox_vec *mask_above, int beside) {
  vox_mpi_halo_swap_state *p = &h->swap;
  if (p->pending)
    return vox_error(h->ctx, VOX_ERR_INVALID_ARGUMENT,
                     "an exchange started before the one before it had finished");
  /* a layer of no values (the bone's storage: no bone on it) is skipped by
   * both of its ranks alike */
  const size_t n_down = lower ? down->n : 0, n_up = upper ? up->n : 0;
  lower = n_down > 0, upper = n_up > 0;
  if (!lower && !upper) return VOX_OK;
  memset(p, 0, sizeof *p);
  if (lower) p->from_below = *from_below;
  if (upper) p->from_above = *from_above;
  if (lower && mask_below) p->mask[0] = *mask_below;
  if (upper && mask_above) p->mask[1] = *mask_above;
  if (h->kind == VOX_MPI_HALO_PEER) {
    vox_peer_transfer put[2];
    TRY(peer_transfers(h, lower, upper, down, up, from_below, from_above, 0, mask_below,
                       mask_above, put, p->get));
    TRY(h->inner->ops->peer->put(h->inner, put));
    p->pending = 1;
    return VOX_OK;
  }
#ifdef VOXFE_HAVE_NCCL
  if (h->kind == VOX_MPI_HALO_NCCL) {
    void *side = NULL;
    if (beside) TRY(h->inner->ops->peer->beside(h->inner, &side));
    const cudaStream_t stream = beside ? (cudaStream_t)side : nccl_stream(h);
    const nccl_api *f = &h->api;
    ncclResult_t r = f->group_start();
    if (upper && r == ncclSuccess)
      r = f->send(up->data, n_up, ncclDouble, h->rank + 1, h->nccl, stream);
    if (upper && r == ncclSuccess)
      r = f->recv(from_above->data, n_up, ncclDouble, h->rank + 1, h->nccl, stream);
    if (lower && r == ncclSuccess)
      r = f->send(down->data, n_down, ncclDouble, h->rank - 1, h->nccl, stream);
    if (lower && r == ncclSuccess)
      r = f->recv(from_below->data, n_down, ncclDouble, h->rank - 1, h->nccl, stream);
    p->beside = beside;
    p->pending = 1;
    return nccl_group_end(h, r, "a halo exchange");
  }
#else
  (void)beside;
#endif
  if (n_down > INT_MAX || n_up > INT_MAX)
    return vox_error(h->ctx, VOX_ERR_UNSUPPORTED, "a grid layer of %zu values is too large for MPI",
                     n_down > n_up ? n_down : n_up);
  const double *send_down = lower ? down->data : NULL, *send_up = upper ? up->data : NULL;
  double *recv_below = lower ? from_below->data : NULL, *recv_above = upper ? from_above->data : NULL;
  if (h->kind == VOX_MPI_HALO_STAGED) { /* through host copies of the device's layers */
    const size_t n = n_down + n_up;
    if (h->host_n < 2 * n) {
      free(h->host);
      h->host = malloc(2 * n * sizeof *h->host);
      h->host_n = h->host ? 2 * n : 0;
      if (!h->host) return vox_error(h->ctx, VOX_ERR_NO_MEMORY, "out of memory");
    }
    send_down = h->host, send_up = h->host + n_down;
    recv_below = h->host + n, recv_above = h->host + n + n_down;
    const vox_backend_ops *in = h->inner->ops;
    if (lower) TRY(in->vec->download(h->inner, down, h->host));
    if (upper) TRY(in->vec->download(h->inner, up, h->host + n_down));
    p->staged_below = recv_below, p->staged_above = recv_above;
  }
  /* tag 1 travels up, tag 2 down */
  if (lower) {
    MPI_Irecv(recv_below, (int)n_down, MPI_DOUBLE, h->rank - 1, 1, h->comm,
              &p->requests[p->n_requests++]);
    MPI_Isend(send_down, (int)n_down, MPI_DOUBLE, h->rank - 1, 2, h->comm,
              &p->requests[p->n_requests++]);
  }
  if (upper) {
    MPI_Irecv(recv_above, (int)n_up, MPI_DOUBLE, h->rank + 1, 2, h->comm,
              &p->requests[p->n_requests++]);
    MPI_Isend(send_up, (int)n_up, MPI_DOUBLE, h->rank + 1, 1, h->comm,
              &p->requests[p->n_requests++]);
  }
  p->pending = 1;
  return VOX_OK;
}

vox_status vox_mpi_halo_swap_start(vox_mpi_halo *h, int lower, int upper, const vox_vec *down,
                                   const vox_vec *up, vox_vec *from_below, vox_vec *from_above,
                                   const vox_vec *mask_below, const vox_vec *mask_above) {
  return swap_begin(h, lower, upper, down, up, from_below, from_above, mask_below, mask_above, 1);
}

vox_status vox_mpi_halo_swap_finish(vox_mpi_halo *h) {
  vox_mpi_halo_swap_state *p = &h->swap;
  if (!p->pending) return VOX_OK;
  p->pending = 0;
  /* the direct writes' get waits, copies and masks on the device */
  if (h->kind == VOX_MPI_HALO_PEER) return h->inner->ops->peer->get(h->inner, p->get);
  if (p->beside) TRY(h->inner->ops->peer->rejoin(h->inner));
  if (p->n_requests) MPI_Waitall(p->n_requests, p->requests, MPI_STATUSES_IGNORE);
  const vox_backend_ops *in = h->inner->ops;
  if (p->staged_below) TRY(in->vec->upload(h->inner, &p->from_below, p->staged_below));
  if (p->staged_above) TRY(in->vec->upload(h->inner, &p->from_above, p->staged_above));
  if (p->mask[0].data) TRY(in->vec->mult(h->inner, &p->from_below, &p->from_below, &p->mask[0]));
  if (p->mask[1].data) TRY(in->vec->mult(h->inner, &p->from_above, &p->from_above, &p->mask[1]));
  return VOX_OK;
}

vox_status vox_mpi_halo_swap(vox_mpi_halo *h, int lower, int upper, const vox_vec *down,
                             const vox_vec *up, vox_vec *from_below, vox_vec *from_above) {
  TRY(swap_begin(h, lower, upper, down, up, from_below, from_above, NULL, NULL, 0));
  return vox_mpi_halo_swap_finish(h);
}

vox_status vox_mpi_halo_swap_add(vox_mpi_halo *h, int lower, int upper, vox_vec *first,
                                 vox_vec *last, vox_vec *recv_below, vox_vec *recv_above,
                                 const vox_vec *mask_below, const vox_vec *mask_above) {
  const size_t n_down = lower ? first->n : 0, n_up = upper ? last->n : 0;
  lower = n_down > 0, upper = n_up > 0;
  if (!lower && !upper) return VOX_OK;
  /* the direct writes add in their get: a launch less (the put reads the
   * layers before the get adds into them, in stream order) */
  if (h->kind == VOX_MPI_HALO_PEER) {
    vox_peer_transfer put[2], get[2];
    TRY(peer_transfers(h, lower, upper, first, last, first, last, 1, mask_below, mask_above, put,
                       get));
    TRY(h->inner->ops->peer->put(h->inner, put));
    return h->inner->ops->peer->get(h->inner, get);
  }
  TRY(vox_mpi_halo_swap(h, lower, upper, first, last, recv_below, recv_above));
  const vox_vector_ops *v = h->inner->ops->vec;
  if (lower) {
    if (mask_below) TRY(v->mult(h->inner, recv_below, recv_below, mask_below));
    TRY(v->axpy(h->inner, first, 1, recv_below));
  }
  if (upper) {
    if (mask_above) TRY(v->mult(h->inner, recv_above, recv_above, mask_above));
    TRY(v->axpy(h->inner, last, 1, recv_above));
  }
  return VOX_OK;
}

vox_status vox_mpi_halo_allgatherv(vox_mpi_halo *h, vox_vec *whole, const int *counts,
                                   const int *displs, size_t unit) {
#ifdef VOXFE_HAVE_NCCL
  if (h->nccl) {
    /* NCCL has no gather of unequal parts: one broadcast from each rank, of
     * its part in place, grouped into one launch */
    const nccl_api *f = &h->api;
    ncclResult_t r = f->group_start();
    for (int q = 0; q < h->size && r == ncclSuccess; q++) {
      double *at = whole->data + (size_t)displs[q] * unit;
      if (counts[q] > 0)
        r = f->broadcast(at, at, (size_t)counts[q] * unit, ncclDouble, q, h->nccl, nccl_stream(h));
    }
    return nccl_group_end(h, r, "a gather");
  }
#else
  (void)whole, (void)counts, (void)displs, (void)unit;
#endif
  return vox_error(h->ctx, VOX_ERR_UNSUPPORTED, "a gather on the device needs NCCL");
}

vox_status vox_mpi_halo_allreduce_sum(vox_mpi_halo *h, vox_vec *v) {
#ifdef VOXFE_HAVE_NCCL
  if (h->nccl && (v->scalar == VOX_DOUBLE || v->scalar == VOX_FLOAT)) {
    const nccl_api *f = &h->api;
    ncclResult_t r = f->group_start();
    if (r == ncclSuccess)
      r = f->all_reduce(v->raw, v->raw, v->n, v->scalar == VOX_DOUBLE ? ncclDouble : ncclFloat,
                        ncclSum, h->nccl, nccl_stream(h));
    return nccl_group_end(h, r, "a sum over the ranks");
  }
#else
  (void)v;
#endif
  return vox_error(h->ctx, VOX_ERR_UNSUPPORTED, "a sum on the device needs NCCL");
}
