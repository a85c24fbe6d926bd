/* SPDX-License-Identifier: BSD-3-Clause */
/* The linear-hat density and sensitivity filters on the device (Martinez-Frutos et al. 2017
 * eq. 3, 4; algorithm 7): w = R - |x_i - x_e| over element centres within R,
 * restricted to non-empty elements.
 *
 * As on the CPU (engine/cpu/cpu_filter.c), the filter is a list of taps
 * (offset and weight) built once on the host, and one thread per element
 * gathers over it. The taps are visited in the CPU's order and every product
 * and sum is rounded as the CPU rounds it (no FMA contraction), so both
 * backends give the same bits.
 *
 * The taps live in __constant__ memory when the table is small: every thread
 * of a warp reads the same tap at the same time, which the constant cache
 * broadcasts. Larger tables read a global-memory copy of the same layout
 * through the read-only cache.
 *
 * A periodic filter (Zhang et al. 2023 section 6.5) wraps a tap that leaves the grid
 * around to the opposite face instead of dropping it, computing the
 * neighbour's index from its wrapped coordinates; elements farther from the
 * faces than the taps reach take the plain filter's path. */
#include <math.h>
#include <stdlib.h>

#include "cuda_backend.cuh"
#include "filter_taps.h"

/* Taps kept in constant memory: at most 128 (3.5 KB; up to a radius of 3.16
 * voxels). Up to there constant memory is faster than the global table;
 * beyond it the table outgrows the SM's constant cache and constant memory
 * turns several times slower. */
enum { CONST_TAPS = 128 };


/* The tap table, structure of arrays: weight, linear offset of the neighbour
 * (dk ny + dj) nx + di, and (di, dj, dk) for the test against the grid's
 * faces. */
static __constant__ double c_weight[CONST_TAPS];
static __constant__ long long c_offset[CONST_TAPS];
static __constant__ int3 c_delta[CONST_TAPS];

struct vox_filter {
  vox_grid grid;
  int periodic;           /* taps wrap around the faces (a periodic cell) */
  int3 reach;             /* the largest |offset| of a tap along each axis */
  int far;                /* some tap reaches past a whole cell */
  size_t n_elements;
  int n_taps;
  unsigned long long id;  /* names the filter whose taps are in c_* (never 0) */
  /* host: the taps in the CPU's order, kept to reload constant memory */
  double *weight;
  long long *offset;
  int3 *delta;
  /* device: the same taps when more than CONST_TAPS, else NULL */
  double *d_weight;
  long long *d_offset;
  int3 *d_delta;
  /* device, per element */
  uint8_t *active;        /* nonzero = non-empty element */
  double *inv_hs;         /* 1 / (sum of the weights of the active neighbours); 0 if inactive */
  double *scratch;        /* ones while building inv_hs; the sensitivity filter's scaling */
};

/* Constant memory belongs to the module, not to a filter: this records whose
 * taps it holds on which device, so that using another filter reloads it.
 * Ids are never reused, so a filter made at a freed one's address is never
 * taken for it. (Not thread-safe: filters are used from one host thread.) */
static unsigned long long loaded_id = 0;
static int loaded_device = -1;
static unsigned long long last_id = 0;

/* ---- kernels -------------------------------------------------------------- */

/* What the convolution needs of a filter, passed by value. */
struct conv_args {
  long long nx, ny, nz;
  int3 reach;       /* the largest |offset| of a tap along each axis */
  int far;          /* a tap reaches past a whole cell: wrap by division */
  size_t ne;
  int n_taps;
  /* the global tap table; unused when the taps are in constant memory */
  const double *weight;
  const long long *offset;
  const int3 *delta;
};

/* a modulo n in [0, n): one addition or subtraction when the taps reach
 * no further than a cell (64-bit division is a long sequence on the GPU) */
static __device__ __forceinline__ long long wrap(long long a, long long n, int far) {
  if (!far) return a < 0 ? a + n : a >= n ? a - n : a;
  const long long r = a % n;
  return r < 0 ? r + n : r;
}

/* out_e = sum_taps w in_i (over active i), for active e; 0 elsewhere. Scaled
 * per element by pre[i] (on the input) and post[e] (on the output) when given.
 * TAPS_IN_CONSTANT picks where the taps are read from, PERIODIC whether taps
 * wrap around the faces. */
template <bool TAPS_IN_CONSTANT, bool PERIODIC>
static __global__ void __launch_bounds__(VOX_CUDA_THREADS)
    convolve_kernel(conv_args a, const uint8_t *__restrict__ active,
                    const double *__restrict__ in, const double *__restrict__ pre,
                    const double *__restrict__ post, double *__restrict__ out) {
  VOX_GRID_STRIDE(e, a.ne) {
    if (!active[e]) {
      out[e] = 0;
      continue;
    }
    const long long i = (long long)(e % (size_t)a.nx), r = (long long)(e / (size_t)a.nx);
    const long long j = r % a.ny, k = r / a.ny;
    const bool wraps = PERIODIC && !(i >= a.reach.x && i + a.reach.x < a.nx && j >= a.reach.y &&
                                     j + a.reach.y < a.ny && k >= a.reach.z &&
                                     k + a.reach.z < a.nz);
    double s = 0;
    /* The loop is the same for every thread of a warp, so they read tap t
     * together (one broadcast); only the tests below diverge, at the faces
     * and next to empty elements. */
    for (int t = 0; t < a.n_taps; t++) {
      /* (__ldg has no int3 overload: the global table is read a member at a time) */
      const int3 d = TAPS_IN_CONSTANT ? c_delta[t]
                                      : make_int3(__ldg(&a.delta[t].x), __ldg(&a.delta[t].y),
                                                  __ldg(&a.delta[t].z));
      size_t n;
      if (wraps) {
        n = (size_t)((wrap(k + d.z, a.nz, a.far) * a.ny + wrap(j + d.y, a.ny, a.far)) * a.nx +
                     wrap(i + d.x, a.nx, a.far));
      } else if (PERIODIC) { /* away from the faces: every tap lands inside */
        n = e + (TAPS_IN_CONSTANT ? c_offset[t] : __ldg(&a.offset[t]));
      } else {
        /* one unsigned comparison tests both ends of each axis */
        if ((unsigned long long)(i + d.x) >= (unsigned long long)a.nx ||
            (unsigned long long)(j + d.y) >= (unsigned long long)a.ny ||
            (unsigned long long)(k + d.z) >= (unsigned long long)a.nz)
          continue;
        n = e + (TAPS_IN_CONSTANT ? c_offset[t] : __ldg(&a.offset[t]));
      }
      if (!active[n]) continue;
      const double w = TAPS_IN_CONSTANT ? c_weight[t] : __ldg(&a.weight[t]);
      /* __dmul_rn/__dadd_rn keep nvcc from fusing the product and the sum
       * into an FMA: the CPU rounds them apart */
      const double v = pre ? __dmul_rn(pre[n], in[n]) : in[n];
      s = __dadd_rn(s, __dmul_rn(w, v));
    }
    out[e] = post ? __dmul_rn(s, post[e]) : s;
  }
}

static __global__ void fill_kernel(double *x, double a, size_t n) {
  VOX_GRID_STRIDE(i, n) x[i] = a;
}

/* Hs -> 1 / Hs on active elements (Hs > 0 there: an element is its own
 * neighbour), 0 elsewhere. */
static __global__ void invert_hs_kernel(const uint8_t *__restrict__ active, double *hs, size_t n) {
  VOX_GRID_STRIDE(e, n) hs[e] = active[e] ? 1 / hs[e] : 0;
}

/* post_e = 1 / (Hs_e max(gamma, rho_e)), as inv_hs_e / max(gamma, rho_e) */
static __global__ void sensitivity_scale_kernel(const double *__restrict__ inv_hs,
                                                const double *__restrict__ rho, double gamma,
                                                double *__restrict__ post, size_t n) {
  VOX_GRID_STRIDE(e, n) post[e] = inv_hs[e] / fmax(gamma, rho[e]);
}

/* ---- host ----------------------------------------------------------------- */

/* Makes sure the kernel will find f's taps: in constant memory, loaded there
 * unless they already are; or in f's own global table. */
static vox_status load_taps(vox_backend *be, vox_filter *f) {
  if (f->n_taps > CONST_TAPS) return VOX_OK;
  const int device = vox_cuda(be)->device;
  if (loaded_id == f->id && loaded_device == device) return VOX_OK;
  loaded_id = 0; /* a copy that fails half-way leaves nothing trusted */
  const size_t n = (size_t)f->n_taps;
  CUDA_TRY(be, cudaMemcpyToSymbol(c_weight, f->weight, n * sizeof *f->weight),
           "loading the filter weights");
  CUDA_TRY(be, cudaMemcpyToSymbol(c_offset, f->offset, n * sizeof *f->offset),
           "loading the filter offsets");
  CUDA_TRY(be, cudaMemcpyToSymbol(c_delta, f->delta, n * sizeof *f->delta),
           "loading the filter tap positions");
  loaded_id = f->id;
  loaded_device = device;
  return VOX_OK;
}

/* out = H (pre .* in) .* post over f's active elements (pre, post optional).
 * The copies into constant memory and the kernels share the legacy default
 * stream, so a reload waits for the kernels that read the previous taps. */
static vox_status convolve(vox_backend *be, vox_filter *f, const double *in, const double *pre,
                           const double *post, double *out, const char *what) {
  TRY(load_taps(be, f));
  const conv_args a = {f->grid.nx,  f->grid.ny,  f->grid.nz,  f->reach,   f->far,
                       f->n_elements, f->n_taps, f->d_weight, f->d_offset, f->d_delta};
  const unsigned blocks = vox_cuda_grid(a.ne);
  if (f->n_taps <= CONST_TAPS && !f->periodic)
    convolve_kernel<true, false><<<blocks, VOX_CUDA_THREADS>>>(a, f->active, in, pre, post, out);
  else if (!f->periodic)
    convolve_kernel<false, false><<<blocks, VOX_CUDA_THREADS>>>(a, f->active, in, pre, post, out);
  else if (f->n_taps <= CONST_TAPS)
    convolve_kernel<true, true><<<blocks, VOX_CUDA_THREADS>>>(a, f->active, in, pre, post, out);
  else
    convolve_kernel<false, true><<<blocks, VOX_CUDA_THREADS>>>(a, f->active, in, pre, post, out);
  CUDA_LAUNCHED(be, what);
  return VOX_OK;
}

void vox_cuda_filter_destroy(vox_backend *be, vox_filter *f) {
  if (!f) return;
  if (loaded_id == f->id) loaded_id = 0;
  free(f->weight);
  free(f->offset);
  free(f->delta);
  vox_cuda_free(f->d_weight);
  vox_cuda_free(f->d_offset);
  vox_cuda_free(f->d_delta);
  vox_cuda_free(f->active);
  vox_cuda_free(f->inv_hs);
  vox_cuda_free(f->scratch);
  free(f);
}

/* The taps within the radius (engine/filter_taps.c, the CPU's list and
 * order, so the weights are the same doubles), with each neighbour's linear
 * offset (dk ny + dj) nx + di for the kernels. */
static vox_status build_taps(vox_backend *be, vox_filter *f, double radius) {
  const vox_grid *grid = &f->grid;
  vox_filter_taps taps;
  TRY(f->periodic ? vox_filter_taps_make_periodic(be->ctx, grid, radius, &taps)
                  : vox_filter_taps_make(be->ctx, grid, radius, &taps));
  const size_t nt = (size_t)taps.n;
  f->weight = (double *)malloc(nt * sizeof *f->weight);
  f->offset = (long long *)malloc(nt * sizeof *f->offset);
  f->delta = (int3 *)malloc(nt * sizeof *f->delta);
  if (!f->weight || !f->offset || !f->delta) {
    vox_filter_taps_free(&taps);
    return vox_error(be->ctx, VOX_ERR_NO_MEMORY, "out of memory for the filter");
  }
  for (int t = 0; t < taps.n; t++) {
    const int di = taps.offset[t][0], dj = taps.offset[t][1], dk = taps.offset[t][2];
    f->weight[t] = taps.weight[t];
    f->offset[t] = ((long long)dk * grid->ny + dj) * grid->nx + di;
    f->delta[t] = make_int3(di, dj, dk);
  }
  f->n_taps = taps.n;
  f->reach = make_int3(0, 0, 0);
  for (int t = 0; t < taps.n; t++) {
    int r[3];
    for (int a = 0; a < 3; a++)
      r[a] = taps.offset[t][a] < 0 ? -taps.offset[t][a] : taps.offset[t][a];
    if (r[0] > f->reach.x) f->reach.x = r[0];
    if (r[1] > f->reach.y) f->reach.y = r[1];
    if (r[2] > f->reach.z) f->reach.z = r[2];
  }
  f->far = f->reach.x > grid->nx || f->reach.y > grid->ny || f->reach.z > grid->nz;
  vox_filter_taps_free(&taps);
  return VOX_OK;
}

/* The global tap table of a filter too large for constant memory. */
static vox_status upload_taps(vox_backend *be, vox_filter *f) {
  if (f->n_taps <= CONST_TAPS) return VOX_OK;
  const size_t nt = (size_t)f->n_taps;
  TRY(vox_cuda_alloc(be, (void **)&f->d_weight, nt * sizeof *f->d_weight, "filter weights"));
  TRY(vox_cuda_alloc(be, (void **)&f->d_offset, nt * sizeof *f->d_offset, "filter offsets"));
  TRY(vox_cuda_alloc(be, (void **)&f->d_delta, nt * sizeof *f->d_delta, "filter tap positions"));
  CUDA_TRY(be, cudaMemcpy(f->d_weight, f->weight, nt * sizeof *f->weight, cudaMemcpyHostToDevice),
           "uploading the filter weights");
  CUDA_TRY(be, cudaMemcpy(f->d_offset, f->offset, nt * sizeof *f->offset, cudaMemcpyHostToDevice),
           "uploading the filter offsets");
  CUDA_TRY(be, cudaMemcpy(f->d_delta, f->delta, nt * sizeof *f->delta, cudaMemcpyHostToDevice),
           "uploading the filter tap positions");
  return VOX_OK;
}

/* The per-element arrays: the active mask, 1/Hs and the scratch vector. */
static vox_status element_arrays(vox_backend *be, vox_filter *f, const uint8_t *active) {
  const size_t ne = f->n_elements;
  TRY(vox_cuda_alloc(be, (void **)&f->active, ne, "the filter's active elements"));
  TRY(vox_cuda_alloc(be, (void **)&f->inv_hs, ne * sizeof *f->inv_hs, "the filter's 1/Hs"));
  TRY(vox_cuda_alloc(be, (void **)&f->scratch, ne * sizeof *f->scratch, "filter scratch"));
  /* Only zero or nonzero matters to the kernels, so the mask goes up as given. */
  CUDA_TRY(be, cudaMemcpy(f->active, active, ne, cudaMemcpyHostToDevice),
           "uploading the filter's active elements");
  /* Hs = H 1, convolved like any input, then inverted on active elements */
  fill_kernel<<<vox_cuda_grid(ne), VOX_CUDA_THREADS>>>(f->scratch, 1.0, ne);
  CUDA_LAUNCHED(be, "the filter's ones kernel");
  TRY(convolve(be, f, f->scratch, NULL, NULL, f->inv_hs, "the filter's Hs kernel"));
  invert_hs_kernel<<<vox_cuda_grid(ne), VOX_CUDA_THREADS>>>(f->active, f->inv_hs, ne);
  CUDA_LAUNCHED(be, "the filter's 1/Hs kernel");
  return VOX_OK;
}

static vox_status create(vox_backend *be, const vox_grid *grid, double radius, int periodic,
                         const uint8_t *active, vox_filter **out) {
  *out = NULL;
  vox_filter *f = (vox_filter *)calloc(1, sizeof *f);
  if (!f) return vox_error(be->ctx, VOX_ERR_NO_MEMORY, "out of memory");
  f->grid = *grid;
  f->periodic = periodic;
  f->n_elements = (size_t)vox_grid_elements(grid);
  f->id = ++last_id;
  vox_status s = build_taps(be, f, radius);
  if (s == VOX_OK) s = upload_taps(be, f);
  if (s == VOX_OK) s = element_arrays(be, f, active);
  if (s != VOX_OK) {
    vox_cuda_filter_destroy(be, f); /* frees whatever was made */
    return s;
  }
  *out = f;
  return VOX_OK;
}

vox_status vox_cuda_filter_create(vox_backend *be, const vox_grid *grid, double radius,
                                  const uint8_t *active, vox_filter **out) {
  return create(be, grid, radius, 0, active, out);
}

vox_status vox_cuda_filter_create_periodic(vox_backend *be, const vox_grid *grid, double radius,
                                           const uint8_t *active, vox_filter **out) {
  return create(be, grid, radius, 1, active, out);
}

vox_status vox_cuda_filter_apply(vox_backend *be, vox_filter *f, const vox_vec *in,
                                 vox_vec *out) {
  return convolve(be, f, in->data, NULL, f->inv_hs, out->data, "the filter kernel");
}

vox_status vox_cuda_filter_transpose(vox_backend *be, vox_filter *f, const vox_vec *in,
                                     vox_vec *out) {
  /* the stencil is symmetric: H^T = H */
  return convolve(be, f, in->data, f->inv_hs, NULL, out->data, "the filter transpose kernel");
}

vox_status vox_cuda_filter_sensitivity(vox_backend *be, vox_filter *f, const vox_vec *rho,
                                       const vox_vec *dc, double gamma, vox_vec *out) {
  const size_t ne = f->n_elements;
  sensitivity_scale_kernel<<<vox_cuda_grid(ne), VOX_CUDA_THREADS>>>(f->inv_hs, rho->data, gamma,
                                                                    f->scratch, ne);
  CUDA_LAUNCHED(be, "the sensitivity filter's scaling kernel");
  return convolve(be, f, dc->data, rho->data, f->scratch, out->data,
                  "the sensitivity filter kernel");
}
