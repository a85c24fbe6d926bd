/* SPDX-License-Identifier: BSD-3-Clause */
/* Device memory that the ranks of one host write into each other's
 * (peer_ops.h): CUDA's interprocess memory handles, and an exchange as two
 * kernels on the backend's stream, a put into the neighbour's mapped
 * memory followed by its flag, and a get that waits on this device for the
 * neighbour's flag. The flag is raised by the put's last block to finish
 * (the pattern of CUDA's threadFenceReduction sample, at system scope):
 * every thread fences its own stores, the blocks count themselves in, and
 * the last one fences again and stores the sequence number with release
 * semantics; the get reads it with acquire semantics. The last block of
 * each also raises its direction's count, from which the next launch takes
 * its sequence number: no number is fixed at launch, so a recording
 * replays. */
#include "cuda_backend.cuh"
#include "peer_ops.h"

/* Blocks of a put or a get: enough to move a fine grid's layer near the
 * link's bandwidth, few enough that the get's waiting blocks stay cheap. */
enum { PEER_MAX_BLOCKS = 264 };

struct peer_pair {
  const double *src[2];
  double *dst[2];
  size_t n[2];
  unsigned long long *flag[2];
  unsigned long long *count[2];
  size_t stride[2];
  int add[2];
  const double *mask[2];
};

/* The exchange's sequence number in direction t: one more than the count
 * so far, which the launch's last block raises to it (peer_ops.h). Every
 * block reads the count before any block is done, and the launch before
 * ended with it raised (stream order). */
static __device__ unsigned long long next_seq(const peer_pair &a, int t) {
  return *(volatile unsigned long long *)a.count[t] + 1;
}

/* The last of a launch's blocks to finish (its thread 0 returns true),
 * counted on `arrived`, which it resets for the next launch: the pattern
 * of CUDA's threadFenceReduction sample, at system scope. */
static __device__ bool last_block(unsigned int *arrived) {
  __threadfence_system();
  __syncthreads();
  if (threadIdx.x != 0 || atomicAdd(arrived, 1u) != gridDim.x - 1) return false;
  *arrived = 0; /* for the next launch, which starts after this one */
  __threadfence_system();
  return true;
}

static __device__ void store_release(unsigned long long *p, unsigned long long v) {
  asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

static __device__ unsigned long long load_acquire(const unsigned long long *p) {
  unsigned long long v;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

static __global__ void put_kernel(peer_pair a, unsigned int *arrived) {
  const size_t stride = (size_t)gridDim.x * blockDim.x;
  unsigned long long seq[2];
  for (int t = 0; t < 2; t++) {
    if (!a.n[t]) continue;
    seq[t] = next_seq(a, t);
    double *dst = a.dst[t] + (seq[t] & 1) * a.stride[t];
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < a.n[t]; i += stride)
      dst[i] = a.src[t][i];
  }
  if (!last_block(arrived)) return;
  for (int t = 0; t < 2; t++)
    if (a.n[t]) {
      store_release(a.flag[t], seq[t]);
      *a.count[t] = seq[t];
    }
}

static __global__ void get_kernel(peer_pair a, unsigned int *arrived) {
  unsigned long long seq[2];
  for (int t = 0; t < 2; t++)
    if (a.n[t]) seq[t] = next_seq(a, t);
  if (threadIdx.x == 0)
    for (int t = 0; t < 2; t++)
      if (a.n[t])
        while (load_acquire(a.flag[t]) < seq[t]) __nanosleep(100);
  __syncthreads();
  const size_t stride = (size_t)gridDim.x * blockDim.x;
  for (int t = 0; t < 2; t++) {
    if (!a.n[t]) continue;
    const double *src = a.src[t] + (seq[t] & 1) * a.stride[t];
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < a.n[t]; i += stride) {
      /* a mask of 0s and 1s: the product is exact, and the sum the same
       * bits as a copy, a multiplication and an axpy */
      const double v = a.mask[t] ? a.mask[t][i] * src[i] : src[i];
      a.dst[t][i] = a.add[t] ? a.dst[t][i] + v : v;
    }
  }
  if (!last_block(arrived)) return;
  for (int t = 0; t < 2; t++)
    if (a.n[t]) *a.count[t] = seq[t];
}

static peer_pair pair_of(const vox_peer_transfer t[2], unsigned *blocks) {
  peer_pair a = {};
  size_t most = 0;
  for (int i = 0; i < 2; i++) {
    a.src[i] = t[i].src, a.dst[i] = t[i].dst, a.n[i] = t[i].n;
    a.flag[i] = (unsigned long long *)t[i].flag;
    a.count[i] = (unsigned long long *)t[i].count, a.stride[i] = t[i].stride;
    a.add[i] = t[i].add, a.mask[i] = t[i].mask;
    if (t[i].n > most) most = t[i].n;
  }
  const unsigned b = vox_cuda_blocks(most, VOX_CUDA_THREADS);
  *blocks = b < 1u ? 1u : b > (unsigned)PEER_MAX_BLOCKS ? (unsigned)PEER_MAX_BLOCKS : b;
  return a;
}

static vox_status device_id(vox_backend *be, char id[VOX_PEER_ID_BYTES]) {
  memset(id, 0, VOX_PEER_ID_BYTES);
  CUDA_TRY(be, cudaDeviceGetPCIBusId(id, VOX_PEER_ID_BYTES - 1, vox_cuda(be)->device),
           "the device's PCI address");
  return VOX_OK;
}

static vox_status share(vox_backend *be, size_t bytes, void **mem,
                        unsigned char handle[VOX_PEER_HANDLE_BYTES]) {
  static_assert(sizeof(cudaIpcMemHandle_t) == VOX_PEER_HANDLE_BYTES, "the handle's size");
  vox_cuda_state *cs = vox_cuda(be);
  if (!cs->peer_arrived) {
    TRY(vox_cuda_alloc(be, (void **)&cs->peer_arrived, sizeof *cs->peer_arrived,
                       "the exchanges' counter"));
    CUDA_TRY(be, cudaMemset(cs->peer_arrived, 0, sizeof *cs->peer_arrived), "the counter");
  }
  TRY(vox_cuda_alloc(be, mem, bytes, "the exchanges' mailbox"));
  cudaIpcMemHandle_t h;
  cudaError_t err = cudaMemset(*mem, 0, bytes);
  if (err == cudaSuccess) err = cudaIpcGetMemHandle(&h, *mem);
  if (err != cudaSuccess) {
    vox_cuda_free(*mem);
    *mem = NULL;
  }
  CUDA_TRY(be, err, "sharing the exchanges' mailbox");
  memcpy(handle, &h, sizeof h);
  return VOX_OK;
}

static void unshare(vox_backend *be, void *mem) { vox_cuda_free(mem); }

static vox_status map(vox_backend *be, const unsigned char handle[VOX_PEER_HANDLE_BYTES],
                      void **mem) {
  cudaIpcMemHandle_t h;
  memcpy(&h, handle, sizeof h);
  *mem = NULL;
  const cudaError_t err = cudaIpcOpenMemHandle(mem, h, cudaIpcMemLazyEnablePeerAccess);
  if (err != cudaSuccess) *mem = NULL;
  CUDA_TRY(be, err, "mapping a neighbour's mailbox");
  return VOX_OK;
}

static void unmap(vox_backend *be, void *mem) {
  if (mem) cudaIpcCloseMemHandle(mem);
}

static vox_status put(vox_backend *be, const vox_peer_transfer t[2]) {
  unsigned blocks;
  const peer_pair a = pair_of(t, &blocks);
  put_kernel<<<blocks, VOX_CUDA_THREADS, 0, vox_cuda_stream(be)>>>(a, vox_cuda(be)->peer_arrived);
  CUDA_LAUNCHED(be, "an exchange's put");
  return VOX_OK;
}

static vox_status get(vox_backend *be, const vox_peer_transfer t[2]) {
  unsigned blocks;
  const peer_pair a = pair_of(t, &blocks);
  get_kernel<<<blocks, VOX_CUDA_THREADS, 0, vox_cuda_stream(be)>>>(a, vox_cuda(be)->peer_arrived);
  CUDA_LAUNCHED(be, "an exchange's get");
  return VOX_OK;
}

static void *stream(vox_backend *be) { return (void *)vox_cuda_stream(be); }

/* The side stream is non-blocking: the legacy stream, which the backend's
 * kernels run on outside recordings, would otherwise wait for it and it
 * for the legacy stream. Made on first use, outside any recording (the
 * exchanges' setup warms up NCCL through it). */
static vox_status beside(vox_backend *be, void **out) {
  vox_cuda_state *cs = vox_cuda(be);
  if (!cs->side_stream) {
    CUDA_TRY(be, cudaStreamCreateWithFlags(&cs->side_stream, cudaStreamNonBlocking),
             "a stream for the exchanges");
    CUDA_TRY(be, cudaEventCreateWithFlags(&cs->side_fork, cudaEventDisableTiming),
             "an event for the exchanges");
    CUDA_TRY(be, cudaEventCreateWithFlags(&cs->side_join, cudaEventDisableTiming),
             "an event for the exchanges");
  }
  CUDA_TRY(be, cudaEventRecord(cs->side_fork, vox_cuda_stream(be)), "forking a stream");
  CUDA_TRY(be, cudaStreamWaitEvent(cs->side_stream, cs->side_fork, 0), "forking a stream");
  *out = (void *)cs->side_stream;
  return VOX_OK;
}

static vox_status rejoin(vox_backend *be) {
  vox_cuda_state *cs = vox_cuda(be);
  CUDA_TRY(be, cudaEventRecord(cs->side_join, cs->side_stream), "joining a stream");
  CUDA_TRY(be, cudaStreamWaitEvent(vox_cuda_stream(be), cs->side_join, 0), "joining a stream");
  return VOX_OK;
}

static vox_peer_ops make_peer_ops(void) {
  vox_peer_ops o = {};
  o.device_id = device_id;
  o.share = share;
  o.unshare = unshare;
  o.map = map;
  o.unmap = unmap;
  o.put = put;
  o.get = get;
  o.stream = stream;
  o.beside = beside;
  o.rejoin = rejoin;
  return o;
}

extern "C" const vox_peer_ops vox_cuda_peer_ops = make_peer_ops();
