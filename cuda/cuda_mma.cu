/* SPDX-License-Identifier: BSD-3-Clause */
/* The method of moving asymptotes' per-variable work on the device
 * (mma_ops.h): the asymptotes, move limits and approximations, the
 * interior point's start, moves and directions, and the sums over the
 * variables that the host's dual Newton system, residual and KKT check
 * need. The m dual variables stay on the host (engine/mma.c); what a kernel
 * needs of them (lambda, its step) goes up as 2m doubles from pinned
 * memory, ahead of the kernel in the same stream, without a wait.
 *
 * Each variable's arithmetic is engine/cpu/cpu_mma.c's, operation for
 * operation, and this file is compiled without fused multiply-adds
 * (cuda/CMakeLists.txt), so every per-variable value is the CPU's to the
 * bit; only the order of the sums differs. The sums are deterministic:
 * a grid fixed by n (one variable a thread, at most MMA_BLOCKS blocks)
 * whose threads accumulate their variables in grid-stride order, reduced
 * in each block in a fixed tree; the last block to finish (a counter) adds
 * the blocks' partial sums in block order, in the same kernel. No atomics
 * touch a value, so a run repeats itself to the bit on the same device.
 *
 * Subsolv's passes are memory-bound (each reads a dozen vectors of n), so
 * they are as few as the method allows: the residual's pass also takes
 * newton's sums at the point it reaches (residual_newton), the direction
 * recomputes delx and diagx instead of reading them, and the residual's
 * move recomputes the bound multipliers' steps from dx instead of reading
 * them; each call is one kernel and one copy of its sums to the host.
 *
 * A pass accumulates up to MMA_CHUNK sums ("slots") per thread; calls with
 * more (the dual system's m(m+1)/2 + 2m + 2 for m >= 3) take several
 * passes, the first of which moves the point the others read. */
#include <stdlib.h>
#include <string.h>

#include <cub/device/device_select.cuh>
#include <thrust/iterator/counting_iterator.h>

#include "cuda_backend.cuh"
#include "mma_ops.h"

enum {
  MMA_BLOCKS = 1024, /* the reductions' largest grid */
  MMA_CHUNK = 8,     /* slots a pass sums: m <= 1 in one pass, at most 80 registers a
                      * thread (16 took 128: half the occupancy of these memory-bound
                      * loops) */
  MMA_WARPS = VOX_CUDA_THREADS / 32,
  MMA_MIN_BLOCKS = 3, /* of the residual and Newton kernel on an SM: at most 80 registers,
                      * as the separate kernels had (it takes 114 unbounded) */
  MMA_DUAL_POINTS = 8 /* the dual method's points of one call at most (mma_dual.c) */
};

/* What a slot sums (or, for the MAX kinds, maximises from 0). */
enum {
  SLOT_BAD,   /* max: 1 where an input is bad (approximate) */
  SLOT_B,     /* row i: P_ij / (U - x) + Q_ij / (x - L) at xval (approximate) */
  SLOT_SUMSQ, /* rex^2 + rexsi^2 + reeta^2 (residual, kkt) */
  SLOT_MAX,   /* max: their largest magnitude (residual, kkt) */
  SLOT_GVEC,  /* row i: P_ij / (U - x) + Q_ij / (x - L) at x (residual, newton) */
  SLOT_GDELX, /* row i: G_ij delx / diagx (newton) */
  SLOT_GGT,   /* rows i, l: G_ij G_lj / diagx (newton) */
  SLOT_MOST,  /* max: the step's bound (direction) */
  SLOT_DUAL_G, /* point k, row r (i = k m + r): P_rj / (U - x) + Q_rj / (x - L) at x(lam_k) */
  SLOT_DUAL_H  /* point k, rows r, l (i = k m + r): G_rj G_lj / h_j where x(lam_k) is inside */
};
static int slot_is_max(int kind) {
  return kind == SLOT_BAD || kind == SLOT_MAX || kind == SLOT_MOST;
}

struct mma_slots {
  int count;         /* slots of this pass */
  unsigned max_mask; /* the maxima among them */
  int rows, newton;  /* some slot needs the residual's rows, newton's delx and diagx */
  int kind[MMA_CHUNK], i[MMA_CHUNK], l[MMA_CHUNK];
};

/* The method's vectors' device arrays (mma_ops.h, vox_mma_vectors). */
struct mma_ptrs {
  size_t n;
  int m;
  const double *xval, *xmin, *xmax, *df0dx, *dfdx, *xold1, *xold2;
  double *low, *upp, *alfa, *beta, *p0, *q0, *P, *Q;
  double *x, *xsi, *eta, *xo, *xsio, *etao, *dx, *dxsi, *deta, *delx, *diagx;
};

static mma_ptrs ptrs_of(const vox_mma_vectors *v) {
  mma_ptrs p;
  p.n = v->n, p.m = v->m;
  p.xval = v->xval.data, p.xmin = v->xmin.data, p.xmax = v->xmax.data;
  p.df0dx = v->df0dx.data, p.dfdx = v->dfdx.data, p.xold1 = v->xold1.data, p.xold2 = v->xold2.data;
  p.low = v->low.data, p.upp = v->upp.data, p.alfa = v->alfa.data, p.beta = v->beta.data;
  p.p0 = v->p0.data, p.q0 = v->q0.data, p.P = v->P.data, p.Q = v->Q.data;
  p.x = v->x.data, p.xsi = v->xsi.data, p.eta = v->eta.data, p.xo = v->xo.data;
  p.xsio = v->xsio.data, p.etao = v->etao.data, p.dx = v->dx.data, p.dxsi = v->dxsi.data;
  p.deta = v->deta.data, p.delx = v->delx.data, p.diagx = v->diagx.data;
  return p;
}

/* Where a pass's kernel puts its sums: partial[slot][block], the counter
 * of finished blocks (0 between kernels: the last block resets it), and
 * the results, of which this pass's start at `result`. */
struct mma_sink {
  double *partial;
  unsigned *done;
  double *result;
};

struct vox_mma_work {
  int m;
  int slots;        /* the most of any call */
  unsigned blocks;  /* the sums' grid, fixed by n */
  double *partial;  /* device: MMA_CHUNK rows of `blocks` partial sums */
  unsigned *done;   /* device: the blocks of the running pass that finished */
  double *result;   /* device: a call's slots */
  double *dual;     /* device: 2m values: lambda, its step (the dual method's points:
                     * MMA_DUAL_POINTS m) */
  double *host;     /* pinned host: a call's slots */
  double *host_dual; /* pinned host: what goes to `dual` */
};

struct vox_index_map {
  size_t n;
  int64_t *index; /* the element of each variable */
};

/* ---- the sums ---------------------------------------------------------------- */

static __device__ __forceinline__ double warp_max(double v) {
  for (int offset = 16; offset > 0; offset /= 2) v = fmax(v, __shfl_down_sync(0xffffffffu, v, offset));
  return v;
}

/* The block's sums (maxima) of the threads' slots, warps in order, into
 * partial[slot][block]; the last block to get here then adds the blocks'
 * partial sums of each slot in a fixed order (thread t takes blocks t, t +
 * 256, ..., then the warps' tree, then the warps in order) into result.
 * Which block is last changes from run to run; the order of the sums does
 * not. Every thread of the block calls it, after its loop. */
static __device__ void block_reduce(const double (&acc)[MMA_CHUNK], const mma_slots &s,
                                    const mma_sink &out) {
  __shared__ double part[MMA_WARPS][MMA_CHUNK];
  __shared__ bool last;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const unsigned blocks = gridDim.x;
#pragma unroll
  for (int c = 0; c < MMA_CHUNK; c++) {
    if (c < s.count) { /* the same for every thread: the shuffles see the whole warp */
      const double t = (s.max_mask >> c & 1u) ? warp_max(acc[c]) : vox_cuda_warp_sum(acc[c]);
      if (lane == 0) part[warp][c] = t;
    }
  }
  __syncthreads();
  if ((int)threadIdx.x < s.count) {
    const int c = threadIdx.x;
    const bool is_max = s.max_mask >> c & 1u;
    double t = 0;
    for (int w = 0; w < MMA_WARPS; w++) t = is_max ? fmax(t, part[w][c]) : t + part[w][c];
    out.partial[(size_t)c * blocks + blockIdx.x] = t;
    __threadfence(); /* the partial sum is seen by every block before the count */
  }
  __syncthreads();
  if (threadIdx.x == 0) last = atomicAdd(out.done, 1u) == blocks - 1;
  __syncthreads();
  if (!last) return;
  __threadfence();
  for (int c = 0; c < s.count; c++) {
    const bool is_max = s.max_mask >> c & 1u;
    const double *row = out.partial + (size_t)c * blocks;
    double t = 0;
    for (unsigned b = threadIdx.x; b < blocks; b += blockDim.x) {
      const double r = __ldcg(row + b); /* from L2: other blocks wrote it */
      t = is_max ? fmax(t, r) : t + r;
    }
    t = is_max ? warp_max(t) : vox_cuda_warp_sum(t);
    __syncthreads(); /* part's last readers are done */
    if (lane == 0) part[warp][0] = t;
    __syncthreads();
    if (threadIdx.x == 0) {
      double r = 0;
      for (int w = 0; w < MMA_WARPS; w++) r = is_max ? fmax(r, part[w][0]) : r + part[w][0];
      out.result[c] = r;
    }
  }
  if (threadIdx.x == 0) *out.done = 0;
}

/* The K slots that kind_of(t, &kind, &i, &l) describes, in passes of
 * MMA_CHUNK: launch(slots, first pass, sink) runs a pass's kernel on
 * w->blocks blocks; the results come to w->host[0..K) in one copy after the
 * last pass. */
template <class Kind, class Launch>
static vox_status run_sums(vox_backend *be, vox_mma_work *w, int K, Kind kind_of, Launch launch,
                           const char *what) {
  for (int t0 = 0; t0 < K; t0 += MMA_CHUNK) {
    mma_slots s = {};
    s.count = K - t0 < MMA_CHUNK ? K - t0 : MMA_CHUNK;
    for (int c = 0; c < s.count; c++) {
      kind_of(t0 + c, &s.kind[c], &s.i[c], &s.l[c]);
      if (slot_is_max(s.kind[c])) s.max_mask |= 1u << c;
      if (s.kind[c] == SLOT_SUMSQ || s.kind[c] == SLOT_MAX) s.rows = 1;
      if (s.kind[c] == SLOT_GDELX || s.kind[c] == SLOT_GGT) s.newton = 1;
    }
    const mma_sink sink = {w->partial, w->done, w->result + t0};
    launch(s, t0 == 0, sink);
    CUDA_LAUNCHED(be, what);
  }
  CUDA_TRY(be, cudaMemcpy(w->host, w->result, (size_t)K * sizeof(double), cudaMemcpyDeviceToHost),
           what);
  return VOX_OK;
}

/* lam (and dlam where not NULL) to the device, behind the kernels before
 * and ahead of the next one in the stream: the host does not wait. (The
 * pinned buffer is not written again before the call's copy of its sums,
 * which waits for this one.) */
static vox_status upload_dual(vox_backend *be, vox_mma_work *w, const double *lam,
                              const double *dlam) {
  const size_t m = (size_t)w->m;
  memcpy(w->host_dual, lam, m * sizeof(double));
  if (dlam) memcpy(w->host_dual + m, dlam, m * sizeof(double));
  CUDA_TRY(be,
           cudaMemcpyAsync(w->dual, w->host_dual, (dlam ? 2 : 1) * m * sizeof(double),
                           cudaMemcpyHostToDevice, 0),
           "uploading MMA's multipliers");
  return VOX_OK;
}

/* ---- the kernels ------------------------------------------------------------- */

/* mmasub (pass 0: the per-variable results and the bad flag) and b's sums */
static __global__ void __launch_bounds__(VOX_CUDA_THREADS)
    approximate_kernel(mma_ptrs p, vox_mma_options o, int first, mma_slots s, int write,
                       mma_sink out) {
  double acc[MMA_CHUNK];
#pragma unroll
  for (int c = 0; c < MMA_CHUNK; c++) acc[c] = 0;
  const size_t n = p.n;
  const int m = p.m;
  VOX_GRID_STRIDE(j, n) {
    const double x = p.xval[j];
    int bad = 0;
    if (write) {
      const double range = p.xmax[j] - p.xmin[j];
      bad = !isfinite(x) || !isfinite(p.df0dx[j]) || !(range >= 0) || x < p.xmin[j] ||
            x > p.xmax[j];
      for (int i = 0; i < m; i++) bad |= !isfinite(p.dfdx[(size_t)i * n + j]);
      if (!bad) {
        /* the bounds whose width the asymptotes take: xmin, xmax or the
         * move-limit box in them */
        const int box = o.bounds == VOX_MMA_BOUNDS_MOVE;
        const double lo = box ? fmax(p.xmin[j], x - o.move * range) : p.xmin[j];
        const double hi = box ? fmin(p.xmax[j], x + o.move * range) : p.xmax[j];
        const double width = hi - lo;
        /* the asymptotes */
        const double xmami = fmax(width, 1e-5);
        double low, upp;
        if (first) {
          low = x - o.asymptote_init * width;
          upp = x + o.asymptote_init * width;
        } else {
          const double trend = (x - p.xold1[j]) * (p.xold1[j] - p.xold2[j]);
          const double f = trend > 0 ? o.asymptote_increase
                           : trend < 0 ? o.asymptote_decrease
                                       : 1;
          low = x - f * (p.xold1[j] - p.low[j]);
          upp = x + f * (p.upp[j] - p.xold1[j]);
          low = fmin(fmax(low, x - 10 * xmami), x - 0.01 * xmami);
          upp = fmax(fmin(upp, x + 10 * xmami), x + 0.01 * xmami);
        }
        p.low[j] = low, p.upp[j] = upp;
        /* the move limits (x - move range is lo's or below it with the box) */
        p.alfa[j] = fmax(fmax(low + o.albefa * (x - low), x - o.move * range), lo);
        p.beta[j] = fmin(fmin(upp - o.albefa * (upp - x), x + o.move * range), hi);
        /* the approximations */
        const double ux1 = upp - x, xl1 = x - low, ux2 = ux1 * ux1, xl2 = xl1 * xl1;
        const int aage = o.convexity == VOX_MMA_CONVEXITY_AAGE;
        const double curv = aage ? 0.5 * o.raa0 / (upp - low) : o.raa0 / xmami;
        const double g0 = p.df0dx[j], p0 = fmax(g0, 0.0), q0 = fmax(-g0, 0.0),
                     pq0 = 0.001 * (p0 + q0) + curv;
        p.p0[j] = (p0 + pq0) * ux2;
        p.q0[j] = (q0 + pq0) * xl2;
        for (int i = 0; i < m; i++) {
          const double g = p.dfdx[(size_t)i * n + j], pp = fmax(g, 0.0), qq = fmax(-g, 0.0),
                       pq = aage ? 0.0 : 0.001 * (pp + qq) + curv;
          p.P[(size_t)i * n + j] = (pp + pq) * ux2;
          p.Q[(size_t)i * n + j] = (qq + pq) * xl2;
        }
      }
    }
#pragma unroll
    for (int c = 0; c < MMA_CHUNK; c++) {
      if (c >= s.count) continue;
      if (s.kind[c] == SLOT_BAD) {
        acc[c] = fmax(acc[c], bad ? 1.0 : 0.0);
      } else {
        const size_t r = (size_t)s.i[c] * n + j;
        acc[c] += p.P[r] / (p.upp[j] - x) + p.Q[r] / (x - p.low[j]);
      }
    }
  }
  block_reduce(acc, s, out);
}

static __global__ void start_kernel(mma_ptrs p) {
  VOX_GRID_STRIDE(j, p.n) {
    const double x = 0.5 * (p.alfa[j] + p.beta[j]);
    p.x[j] = x;
    p.xsi[j] = fmax(1.0, 1 / (x - p.alfa[j]));
    p.eta[j] = fmax(1.0, 1 / (p.beta[j] - x));
  }
}

/* sum_i lam_i P_ij, Q_ij onto the objective's p0_j, q0_j (cpu_mma.c's
 * order), and Newton's delx and diagx at x from them (cpu_mma.c's newton,
 * operation for operation). */
static __device__ __forceinline__ void lambda_sums(const mma_ptrs &p, size_t j,
                                                   const double *__restrict__ lam, double *plam,
                                                   double *qlam) {
  const size_t n = p.n;
  double pl = p.p0[j], ql = p.q0[j];
  for (int i = 0; i < p.m; i++)
    pl += p.P[(size_t)i * n + j] * lam[i], ql += p.Q[(size_t)i * n + j] * lam[i];
  *plam = pl, *qlam = ql;
}
static __device__ __forceinline__ void newton_diagonal(double plam, double qlam, double epsi,
                                                       double xsi, double eta, double ux1,
                                                       double xl1, double xa, double bx,
                                                       double *delx, double *diagx) {
  const double ux2 = ux1 * ux1, xl2 = xl1 * xl1;
  *delx = plam / ux2 - qlam / xl2 - epsi / xa + epsi / bx;
  *diagx = 2 * (plam / (ux2 * ux1) + qlam / (xl2 * xl1)) + xsi / xa + eta / bx;
}

/* The move (pass 0 where `move`: x, xsi, eta = their old values + step
 * times the direction, the multipliers' steps recomputed from dx as the
 * CPU's direction computes them), then the residual's sums and newton's at
 * the point reached. */
static __global__ void __launch_bounds__(VOX_CUDA_THREADS, MMA_MIN_BLOCKS)
    point_kernel(mma_ptrs p, const double *__restrict__ lam, double epsi, int move, double step,
                 mma_slots s, mma_sink out) {
  double acc[MMA_CHUNK];
#pragma unroll
  for (int c = 0; c < MMA_CHUNK; c++) acc[c] = 0;
  const size_t n = p.n;
  VOX_GRID_STRIDE(j, n) {
    double x, xsi, eta;
    if (move) {
      const double xo = p.xo[j], xsio = p.xsio[j], etao = p.etao[j], dx = p.dx[j];
      const double xa = xo - p.alfa[j], bx = p.beta[j] - xo;
      const double dxsi = -xsio + epsi / xa - xsio * dx / xa;
      const double deta = -etao + epsi / bx + etao * dx / bx;
      x = xo + step * dx;
      xsi = xsio + step * dxsi;
      eta = etao + step * deta;
      p.x[j] = x, p.xsi[j] = xsi, p.eta[j] = eta;
    } else {
      x = p.x[j], xsi = p.xsi[j], eta = p.eta[j];
    }
    const double ux1 = p.upp[j] - x, xl1 = x - p.low[j];
    const double ux2 = ux1 * ux1, xl2 = xl1 * xl1;
    double rex = 0, rexsi = 0, reeta = 0, delx = 0, diagx = 1;
    if (s.rows || s.newton) {
      double plam, qlam;
      lambda_sums(p, j, lam, &plam, &qlam);
      const double xa = x - p.alfa[j], bx = p.beta[j] - x;
      if (s.rows) {
        rex = plam / (ux1 * ux1) - qlam / (xl1 * xl1) - xsi + eta;
        rexsi = xsi * xa - epsi;
        reeta = eta * bx - epsi;
      }
      if (s.newton) newton_diagonal(plam, qlam, epsi, xsi, eta, ux1, xl1, xa, bx, &delx, &diagx);
    }
#pragma unroll
    for (int c = 0; c < MMA_CHUNK; c++) {
      if (c >= s.count) continue;
      if (s.kind[c] == SLOT_SUMSQ) {
        acc[c] += rex * rex + rexsi * rexsi + reeta * reeta;
      } else if (s.kind[c] == SLOT_MAX) {
        acc[c] = fmax(acc[c], fmax(fabs(rex), fmax(fabs(rexsi), fabs(reeta))));
      } else {
        const size_t r = (size_t)s.i[c] * n + j;
        const double pij = p.P[r], qij = p.Q[r];
        if (s.kind[c] == SLOT_GVEC) {
          acc[c] += pij / ux1 + qij / xl1;
        } else if (s.kind[c] == SLOT_GDELX) {
          const double gi = pij / ux2 - qij / xl2;
          acc[c] += gi * delx / diagx;
        } else {
          const size_t rl = (size_t)s.l[c] * n + j;
          const double gi = pij / ux2 - qij / xl2, gl = p.P[rl] / ux2 - p.Q[rl] / xl2;
          acc[c] += gi * gl / diagx;
        }
      }
    }
  }
  block_reduce(acc, s, out);
}

/* The direction dx from dlam (delx and diagx recomputed from lam) and the
 * largest step's bound; dxsi and deta are the move's to recompute. */
static __global__ void __launch_bounds__(VOX_CUDA_THREADS)
    direction_kernel(mma_ptrs p, const double *__restrict__ lam,
                     const double *__restrict__ dlam, double epsi, mma_slots s, mma_sink out) {
  double acc[MMA_CHUNK];
#pragma unroll
  for (int c = 0; c < MMA_CHUNK; c++) acc[c] = 0;
  const size_t n = p.n;
  const int m = p.m;
  VOX_GRID_STRIDE(j, n) {
    const double x = p.x[j], xsi = p.xsi[j], eta = p.eta[j];
    const double ux1 = p.upp[j] - x, xl1 = x - p.low[j];
    const double xa = x - p.alfa[j], bx = p.beta[j] - x;
    double plam, qlam, delx, diagx;
    lambda_sums(p, j, lam, &plam, &qlam);
    newton_diagonal(plam, qlam, epsi, xsi, eta, ux1, xl1, xa, bx, &delx, &diagx);
    /* (upp - x) (upp - x) as cpu_mma.c's direction has it: ux1 * ux1 */
    const double ux2 = ux1 * ux1, xl2 = xl1 * xl1;
    double gd = 0;
    for (int i = 0; i < m; i++)
      gd += (p.P[(size_t)i * n + j] / ux2 - p.Q[(size_t)i * n + j] / xl2) * dlam[i];
    const double dx = -(delx + gd) / diagx;
    const double dxsi = -xsi + epsi / xa - xsi * dx / xa;
    const double deta = -eta + epsi / bx + eta * dx / bx;
    p.dx[j] = dx;
    double most = fmax(acc[0], fmax(-1.01 * dxsi / xsi, -1.01 * deta / eta));
    acc[0] = fmax(most, fmax(-1.01 * dx / xa, 1.01 * dx / bx));
  }
  block_reduce(acc, s, out);
}

/* kktcheck's rows of the variables */
static __global__ void __launch_bounds__(VOX_CUDA_THREADS)
    kkt_kernel(mma_ptrs p, const double *__restrict__ lam, mma_slots s, mma_sink out) {
  double acc[MMA_CHUNK];
#pragma unroll
  for (int c = 0; c < MMA_CHUNK; c++) acc[c] = 0;
  const size_t n = p.n;
  const int m = p.m;
  VOX_GRID_STRIDE(j, n) {
    double rex = p.df0dx[j] - p.xsi[j] + p.eta[j];
    for (int i = 0; i < m; i++) rex += p.dfdx[(size_t)i * n + j] * lam[i];
    const double rexsi = p.xsi[j] * (p.xval[j] - p.xmin[j]),
                 reeta = p.eta[j] * (p.xmax[j] - p.xval[j]);
    acc[0] += rex * rex + rexsi * rexsi + reeta * reeta;
    acc[1] = fmax(acc[1], fmax(fabs(rex), fmax(fabs(rexsi), fabs(reeta))));
  }
  block_reduce(acc, s, out);
}

/* The dual method's x_j at lam (m) and what its sums need, as cpu_mma_dual.c's
 * point_at, operation for operation. */
struct dual_point {
  double x, plam, qlam, iu, il;
  bool inside;
};
static __device__ __forceinline__ dual_point dual_point_at(const mma_ptrs &p, size_t j,
                                                           const double *__restrict__ lam) {
  double plam, qlam;
  lambda_sums(p, j, lam, &plam, &qlam);
  const double low = p.low[j], upp = p.upp[j], alfa = p.alfa[j], beta = p.beta[j];
  const double sp = sqrt(plam), sq = sqrt(qlam);
  const double t = (sp * low + sq * upp) / (sp + sq);
  dual_point d;
  d.inside = t > alfa && t < beta;
  d.x = d.inside ? t : t <= alfa ? alfa : beta;
  d.plam = plam, d.qlam = qlam;
  d.iu = 1 / (upp - d.x), d.il = 1 / (d.x - low);
  return d;
}

/* The dual method's sums at the points lams (rows of m): each slot's point
 * recomputed where it changes (the slots come by points). */
static __global__ void __launch_bounds__(VOX_CUDA_THREADS, MMA_MIN_BLOCKS)
    dual_kernel(mma_ptrs p, const double *__restrict__ lams, mma_slots s, mma_sink out) {
  double acc[MMA_CHUNK];
#pragma unroll
  for (int c = 0; c < MMA_CHUNK; c++) acc[c] = 0;
  const size_t n = p.n;
  const int m = p.m;
  VOX_GRID_STRIDE(j, n) {
    int current = -1;
    dual_point d = {};
    double iu2 = 1, il2 = 1, ih = 1;
#pragma unroll
    for (int c = 0; c < MMA_CHUNK; c++) {
      if (c >= s.count) continue;
      const int k = s.i[c] / m, r = s.i[c] - k * m;
      if (k != current) {
        d = dual_point_at(p, j, lams + (size_t)k * m);
        iu2 = d.iu * d.iu, il2 = d.il * d.il;
        ih = 1 / (2 * (d.plam * iu2 * d.iu + d.qlam * il2 * d.il));
        current = k;
      }
      const size_t row = (size_t)r * n + j;
      if (s.kind[c] == SLOT_DUAL_G) {
        acc[c] += p.P[row] * d.iu + p.Q[row] * d.il;
      } else if (d.inside) {
        const size_t rl = (size_t)s.l[c] * n + j;
        const double gi = p.P[row] * iu2 - p.Q[row] * il2, gl = p.P[rl] * iu2 - p.Q[rl] * il2;
        acc[c] += gi * gl * ih;
      }
    }
  }
  block_reduce(acc, s, out);
}

/* x at lam and the bounds' multipliers there (cpu_mma_dual.c's dual_solution) */
static __global__ void dual_solution_kernel(mma_ptrs p, const double *__restrict__ lam) {
  VOX_GRID_STRIDE(j, p.n) {
    const dual_point d = dual_point_at(p, j, lam);
    const double r = d.plam * (d.iu * d.iu) - d.qlam * (d.il * d.il);
    p.x[j] = d.x;
    p.xsi[j] = d.inside ? 0.0 : fmax(r, 0.0);
    p.eta[j] = d.inside ? 0.0 : fmax(-r, 0.0);
  }
}

/* ---- the operations ------------------------------------------------------------ */

static void free_work(vox_mma_work *w) {
  vox_cuda_free(w->partial), vox_cuda_free(w->result), vox_cuda_free(w->dual);
  vox_cuda_free(w->done);
  if (w->host) cudaFreeHost(w->host);
  if (w->host_dual) cudaFreeHost(w->host_dual);
  free(w);
}

static vox_status work_create(vox_backend *be, size_t n, int m, vox_mma_work **out) {
  *out = NULL;
  vox_mma_work *w = (vox_mma_work *)calloc(1, sizeof *w);
  if (!w) return vox_error(be->ctx, VOX_ERR_NO_MEMORY, "out of memory");
  w->m = m;
  /* one variable a thread where n is small: a small sum does not wait for
   * a thousand blocks' partial sums */
  const size_t blocks = (n + VOX_CUDA_THREADS - 1) / VOX_CUDA_THREADS;
  w->blocks = blocks < 1 ? 1u : blocks > (size_t)MMA_BLOCKS ? (unsigned)MMA_BLOCKS : (unsigned)blocks;
  const int point = 2 + 2 * m + m * (m + 1) / 2;
  w->slots = point > 1 + m ? point : 1 + m;
  if (w->slots < MMA_CHUNK) w->slots = MMA_CHUNK; /* the dual method's points of a pass */
  vox_status st = vox_cuda_alloc(be, (void **)&w->partial,
                                 (size_t)MMA_CHUNK * w->blocks * sizeof(double),
                                 "MMA's partial sums");
  if (st == VOX_OK)
    st = vox_cuda_alloc(be, (void **)&w->result, (size_t)w->slots * sizeof(double), "MMA's sums");
  if (st == VOX_OK)
    st = vox_cuda_alloc(be, (void **)&w->dual, MMA_DUAL_POINTS * (size_t)m * sizeof(double),
                        "MMA's multipliers");
  if (st == VOX_OK)
    st = vox_cuda_alloc(be, (void **)&w->done, sizeof(unsigned), "MMA's block counter");
  if (st == VOX_OK)
    st = vox_cuda_check(be, cudaMemset(w->done, 0, sizeof(unsigned)), "MMA's block counter");
  if (st == VOX_OK &&
      (cudaMallocHost((void **)&w->host, (size_t)w->slots * sizeof(double)) != cudaSuccess ||
       cudaMallocHost((void **)&w->host_dual, MMA_DUAL_POINTS * (size_t)m * sizeof(double)) !=
           cudaSuccess)) {
    cudaGetLastError();
    st = vox_error(be->ctx, VOX_ERR_NO_MEMORY, "out of pinned host memory for MMA's sums");
  }
  if (st != VOX_OK) {
    free_work(w);
    return st;
  }
  *out = w;
  return VOX_OK;
}

static void work_destroy(vox_backend *be, vox_mma_work *w) {
  (void)be;
  if (w) free_work(w);
}

static vox_status approximate(vox_backend *be, vox_mma_work *w, const vox_mma_vectors *v,
                              const vox_mma_options *o, int first, double *b, int *bad) {
  const mma_ptrs p = ptrs_of(v);
  const vox_mma_options opt = *o;
  /* slot 0: the bad flag, then b's rows */
  TRY(run_sums(
      be, w, 1 + v->m,
      [](int t, int *kind, int *i, int *l) {
        *kind = t == 0 ? SLOT_BAD : SLOT_B, *i = t == 0 ? 0 : t - 1, *l = 0;
      },
      [&](const mma_slots &s, int write, const mma_sink &sink) {
        approximate_kernel<<<w->blocks, VOX_CUDA_THREADS>>>(p, opt, first, s, write, sink);
      },
      "the MMA approximations kernel"));
  *bad = w->host[0] != 0;
  for (int i = 0; i < v->m; i++) b[i] = w->host[1 + i];
  return VOX_OK;
}

static vox_status start(vox_backend *be, const vox_mma_vectors *v) {
  start_kernel<<<vox_cuda_grid(v->n), VOX_CUDA_THREADS>>>(ptrs_of(v));
  CUDA_LAUNCHED(be, "the MMA start kernel");
  return VOX_OK;
}

/* The point's sums: the residual's (sum of squares, largest entry: slots 0,
 * 1) where `rows`, then gvec (m), then newton's gdelx (m) and the lower
 * triangle of G D^-1 G' by rows where `newton`; the move in the first pass. */
static vox_status point_sums(vox_backend *be, vox_mma_work *w, const vox_mma_vectors *v,
                             const double *lam, double epsi, int move, double step, int rows,
                             int newton, const char *what) {
  const mma_ptrs p = ptrs_of(v);
  const int m = v->m, r0 = rows ? 2 : 0;
  TRY(upload_dual(be, w, lam, NULL));
  TRY(run_sums(
      be, w, r0 + m + (newton ? m + m * (m + 1) / 2 : 0),
      [m, r0](int t, int *kind, int *i, int *l) {
        *i = 0, *l = 0;
        if (t < r0) {
          *kind = t == 0 ? SLOT_SUMSQ : SLOT_MAX;
        } else if ((t -= r0) < m) {
          *kind = SLOT_GVEC, *i = t;
        } else if (t < 2 * m) {
          *kind = SLOT_GDELX, *i = t - m;
        } else {
          int k = t - 2 * m, row = 0;
          while (k > row) k -= row + 1, row++;
          *kind = SLOT_GGT, *i = row, *l = k;
        }
      },
      [&](const mma_slots &s, int first, const mma_sink &sink) {
        point_kernel<<<w->blocks, VOX_CUDA_THREADS>>>(p, w->dual, epsi, move && first, step, s,
                                                      sink);
      },
      what));
  return VOX_OK;
}

static void unpack_newton(const double *h, int m, double *gdelx, double *ggt) {
  for (int i = 0; i < m; i++) gdelx[i] = h[i];
  for (int i = 0, t = m; i < m; i++)
    for (int l = 0; l <= i; l++) ggt[i * m + l] = h[t++];
}

static vox_status residual(vox_backend *be, vox_mma_work *w, const vox_mma_vectors *v,
                           const double *lam, double epsi, int move, double step, double *sum,
                           double *max, double *gvec) {
  TRY(point_sums(be, w, v, lam, epsi, move, step, 1, 0, "the MMA residual kernel"));
  *sum = w->host[0], *max = w->host[1];
  for (int i = 0; i < v->m; i++) gvec[i] = w->host[2 + i];
  return VOX_OK;
}

static vox_status residual_newton(vox_backend *be, vox_mma_work *w, const vox_mma_vectors *v,
                                  const double *lam, double epsi, int move, double step,
                                  double *sum, double *max, double *gvec, double *gdelx,
                                  double *ggt) {
  TRY(point_sums(be, w, v, lam, epsi, move, step, 1, 1, "the MMA residual and Newton kernel"));
  *sum = w->host[0], *max = w->host[1];
  for (int i = 0; i < v->m; i++) gvec[i] = w->host[2 + i];
  unpack_newton(w->host + 2 + v->m, v->m, gdelx, ggt);
  return VOX_OK;
}

static vox_status newton(vox_backend *be, vox_mma_work *w, const vox_mma_vectors *v,
                         const double *lam, double epsi, double *gvec, double *gdelx,
                         double *ggt) {
  TRY(point_sums(be, w, v, lam, epsi, 0, 0, 0, 1, "the MMA Newton kernel"));
  for (int i = 0; i < v->m; i++) gvec[i] = w->host[i];
  unpack_newton(w->host + v->m, v->m, gdelx, ggt);
  return VOX_OK;
}

static vox_status direction(vox_backend *be, vox_mma_work *w, const vox_mma_vectors *v,
                            const double *lam, const double *dlam, double epsi, double *most) {
  const mma_ptrs p = ptrs_of(v);
  TRY(upload_dual(be, w, lam, dlam));
  TRY(run_sums(
      be, w, 1, [](int, int *kind, int *i, int *l) { *kind = SLOT_MOST, *i = 0, *l = 0; },
      [&](const mma_slots &s, int, const mma_sink &sink) {
        direction_kernel<<<w->blocks, VOX_CUDA_THREADS>>>(p, w->dual, w->dual + v->m, epsi, s,
                                                          sink);
      },
      "the MMA direction kernel"));
  *most = w->host[0];
  return VOX_OK;
}

static vox_status kkt(vox_backend *be, vox_mma_work *w, const vox_mma_vectors *v,
                      const double *lam, double *sum, double *max) {
  const mma_ptrs p = ptrs_of(v);
  TRY(upload_dual(be, w, lam, NULL));
  TRY(run_sums(
      be, w, 2,
      [](int t, int *kind, int *i, int *l) { *kind = t == 0 ? SLOT_SUMSQ : SLOT_MAX, *i = 0, *l = 0; },
      [&](const mma_slots &s, int, const mma_sink &sink) {
        kkt_kernel<<<w->blocks, VOX_CUDA_THREADS>>>(p, w->dual, s, sink);
      },
      "the MMA KKT kernel"));
  *sum = w->host[0], *max = w->host[1];
  return VOX_OK;
}

static vox_status dual_sums(vox_backend *be, vox_mma_work *w, const vox_mma_vectors *v,
                            int points, const double *lam, double *sums) {
  const mma_ptrs p = ptrs_of(v);
  const int m = v->m, S = m + m * (m + 1) / 2;
  if (points < 1 || points > MMA_DUAL_POINTS)
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT, "MMA: %d dual points", points);
  /* the points go up behind the kernels before, as upload_dual's values */
  memcpy(w->host_dual, lam, (size_t)points * m * sizeof(double));
  CUDA_TRY(be,
           cudaMemcpyAsync(w->dual, w->host_dual, (size_t)points * m * sizeof(double),
                           cudaMemcpyHostToDevice, 0),
           "uploading MMA's dual points");
  for (int t0 = 0; t0 < points * S; t0 += w->slots) {
    /* the result buffer holds w->slots sums: longer calls (large m) copy in parts */
    const int K = points * S - t0 < w->slots ? points * S - t0 : w->slots;
    TRY(run_sums(
        be, w, K,
        [m, S, t0](int t, int *kind, int *i, int *l) {
          t += t0;
          const int k = t / S;
          int r = t - k * S;
          *l = 0;
          if (r < m) {
            *kind = SLOT_DUAL_G, *i = k * m + r;
          } else {
            r -= m;
            int row = 0;
            while (r > row) r -= row + 1, row++;
            *kind = SLOT_DUAL_H, *i = k * m + row, *l = r;
          }
        },
        [&](const mma_slots &s, int, const mma_sink &sink) {
          dual_kernel<<<w->blocks, VOX_CUDA_THREADS>>>(p, w->dual, s, sink);
        },
        "the MMA dual kernel"));
    memcpy(sums + t0, w->host, (size_t)K * sizeof(double));
  }
  return VOX_OK;
}

static vox_status dual_solution(vox_backend *be, vox_mma_work *w, const vox_mma_vectors *v,
                                const double *lam) {
  /* from pageable memory: the call returns when lam is staged, and the
   * copy runs behind the kernels before, without a wait */
  CUDA_TRY(be,
           cudaMemcpyAsync(w->dual, lam, (size_t)v->m * sizeof(double), cudaMemcpyHostToDevice,
                           0),
           "uploading MMA's multipliers");
  dual_solution_kernel<<<vox_cuda_grid(v->n), VOX_CUDA_THREADS>>>(ptrs_of(v), w->dual);
  CUDA_LAUNCHED(be, "the MMA dual solution kernel");
  return VOX_OK;
}

/* ---- the design elements ----------------------------------------------------- */

/* The design elements (mask entry not zero): counted by a grid of warp
 * sums, then listed in increasing order by CUB's stream compaction, on the
 * device (through host memory, the 512 x 256 x 256 cantilever's 268 MB mask
 * and its index made MMA's setup about 0.6 s longer than OC's). */
struct is_design {
  __host__ __device__ bool operator()(double flag) const { return flag != 0; }
};

static __global__ void count_design_kernel(const double *__restrict__ mask, size_t n,
                                           unsigned long long *__restrict__ count) {
  unsigned long long c = 0;
  VOX_GRID_STRIDE(e, n) c += mask[e] != 0;
  for (int o = 16; o > 0; o /= 2) c += __shfl_down_sync(0xffffffffu, c, o);
  if ((threadIdx.x & 31) == 0 && c) atomicAdd(count, c);
}

static vox_status map_create(vox_backend *be, const vox_vec *mask, vox_index_map **out,
                             size_t *n_out) {
  *out = NULL;
  vox_index_map *map = (vox_index_map *)calloc(1, sizeof *map);
  unsigned long long *count = NULL, n = 0; /* count[0]: counted, count[1]: selected */
  void *temp = NULL;
  size_t temp_bytes = 0;
  const thrust::counting_iterator<int64_t> element(0);
  vox_status st = map ? VOX_OK : vox_error(be->ctx, VOX_ERR_NO_MEMORY, "out of memory");
  if (st == VOX_OK) st = vox_cuda_alloc(be, (void **)&count, 2 * sizeof *count, "a count");
  if (st == VOX_OK)
    st = vox_cuda_check(be, cudaMemset(count, 0, 2 * sizeof *count), "clearing a count");
  if (st == VOX_OK && mask->n) {
    count_design_kernel<<<vox_cuda_grid(mask->n), VOX_CUDA_THREADS>>>(mask->data, mask->n,
                                                                       count);
    st = vox_cuda_check(be, cudaGetLastError(), "counting the design elements");
  }
  if (st == VOX_OK)
    st = vox_cuda_check(be, cudaMemcpy(&n, count, sizeof n, cudaMemcpyDeviceToHost),
                        "counting the design elements");
  if (st == VOX_OK)
    st = vox_cuda_alloc(be, (void **)&map->index, (n ? n : 1) * sizeof *map->index,
                        "the design elements' indices");
  /* CUB's two calls: the scratch's size (temp NULL), then the list */
  const auto list = [&]() {
    return vox_cuda_check(be,
                          cub::DeviceSelect::FlaggedIf(temp, temp_bytes, element, mask->data,
                                                       map->index, count + 1, (int64_t)mask->n,
                                                       is_design()),
                          "listing the design elements");
  };
  if (st == VOX_OK && n) st = list();
  if (st == VOX_OK && n) st = vox_cuda_alloc(be, &temp, temp_bytes ? temp_bytes : 1, "a scan");
  if (st == VOX_OK && n) st = list();
  if (st == VOX_OK)
    st = vox_cuda_check(be, cudaDeviceSynchronize(), "listing the design elements");
  vox_cuda_free(temp);
  vox_cuda_free(count);
  if (st != VOX_OK) {
    if (map) vox_cuda_free(map->index);
    free(map);
    return st;
  }
  map->n = n;
  *out = map;
  *n_out = n;
  return VOX_OK;
}

static void map_destroy(vox_backend *be, vox_index_map *map) {
  (void)be;
  if (map) vox_cuda_free(map->index);
  free(map);
}

static __global__ void gather_kernel(const int64_t *__restrict__ index,
                                     const double *__restrict__ in, double scale,
                                     const double *__restrict__ lo, const double *__restrict__ hi,
                                     double *__restrict__ out, size_t n) {
  VOX_GRID_STRIDE(j, n) {
    const double v = scale * in[index[j]];
    out[j] = lo ? fmin(fmax(v, lo[j]), hi[j]) : v;
  }
}

static __global__ void scatter_kernel(const int64_t *__restrict__ index,
                                      const double *__restrict__ in, double *__restrict__ out,
                                      size_t n) {
  VOX_GRID_STRIDE(j, n) out[index[j]] = in[j];
}

static vox_status gather(vox_backend *be, const vox_index_map *map, const vox_vec *in, double scale,
                         const vox_vec *lo, const vox_vec *hi, vox_vec *out) {
  if (map->n == 0) return VOX_OK;
  gather_kernel<<<vox_cuda_grid(map->n), VOX_CUDA_THREADS>>>(
      map->index, in->data, scale, lo ? lo->data : NULL, lo ? hi->data : NULL, out->data, map->n);
  CUDA_LAUNCHED(be, "the MMA gather kernel");
  return VOX_OK;
}

static vox_status scatter(vox_backend *be, const vox_index_map *map, const vox_vec *in,
                          vox_vec *out) {
  if (map->n == 0) return VOX_OK;
  scatter_kernel<<<vox_cuda_grid(map->n), VOX_CUDA_THREADS>>>(map->index, in->data, out->data,
                                                              map->n);
  CUDA_LAUNCHED(be, "the MMA scatter kernel");
  return VOX_OK;
}

static vox_mma_ops make_mma_ops(void) {
  vox_mma_ops o = {};
  o.work_create = work_create;
  o.work_destroy = work_destroy;
  o.approximate = approximate;
  o.start = start;
  o.residual = residual;
  o.newton = newton;
  o.residual_newton = residual_newton;
  o.direction = direction;
  o.kkt = kkt;
  o.dual_sums = dual_sums;
  /* one step length a pass: with m = 1, four a pass (MMA_CHUNK slots) took
   * 4.44 ms an update at n = 4.2 M on the H200 against 2.53 ms for one
   * (`bench_cuda mma 4194304 1 30 dual --dual-points=4|1`): a halving is
   * rare, so the three extra points are mostly wasted arithmetic */
  o.dual_slots = 0;
  o.dual_solution = dual_solution;
  o.map_create = map_create;
  o.map_destroy = map_destroy;
  o.gather = gather;
  o.scatter = scatter;
  return o;
}

extern "C" const vox_mma_ops vox_cuda_mma_ops = make_mma_ops();
