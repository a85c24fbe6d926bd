/* SPDX-License-Identifier: BSD-3-Clause */
/* The MPI backend (voxfe/mpi.h): the grid split into slabs of element
 * layers along z, one a rank, each rank running its own backend's kernels
 * (the CPU's, or a GPU's) on its slab (Arbenz, Flaig and Kellenberger 2014
 * split the bone the same way over GPUs). The engine above sees the whole
 * grid's sizes; this file maps them onto the slabs, and calls the ranks'
 * backend with vectors of the slab's size (views of them where it needs a
 * part: a node layer, the owned entries).
 *
 * Vectors of node values are kept *consistent*: a node layer that two
 * slabs share (the interface) holds the same, whole value on both ranks.
 * A product on a slab gives the interface only its own elements' part, so
 * every product, diagonal, smoothing step and grid transfer ends with a
 * halo exchange that adds the neighbour's part (x + y on one rank, y + x on
 * the other: the same bits). Fixed dofs keep their own value (the
 * eliminated operator's identity rows are not sums). Reductions run over
 * the owned entries (an interface layer belongs to the rank below it) and
 * MPI_Allreduce. Vectors of element values need no exchange. The layers
 * travel through mpi_halo.c: MPI on host memory, NCCL between GPUs.
 *
 * Multigrid levels stay split while every slab boundary falls on a coarse
 * node (boundaries divisible by 2^l on level l): then each rank's coarse
 * grid is the coarsening of its fine slab, and the Galerkin product of the
 * slab's elements is the slab's part of the whole one, so the parts add up
 * like the fine products. The first level where a boundary does not fall
 * on a coarse node, and every coarser one, is gathered: the same whole
 * level on every rank, computed redundantly (no exchange), reached by
 * gathering the split level's residual and left by each rank taking its
 * slab of the prolongation. Levels of fewer nodes than
 * vox_mpi_options.gather_nodes are gathered too, where a product is mostly
 * the latency of its launch and its exchange: while their slabs still
 * nest, their Galerkin product and restriction run on the slabs, and the
 * slabs' parts are summed into the whole level (8 times smaller than the
 * split level's vectors and stencil, which a gather would move). The
 * direct solve of a coarsest level that is still split gathers its
 * stencil and right-hand side. Gathers of the
 * V-cycle's vectors and of the results run on the devices by NCCL between
 * GPUs, through host memory otherwise (and for the setup's stencils). */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend_ops.h"
#include "host_memory.h"
#include "mpi_halo.h"
#include "name_table.h"
#include "sparse_hierarchy.h"
#include "sparse_ops.h"
#include "voxfe/mpi.h"

enum { MAX_LEVELS = 64 };

/* Where a vector's entries live. Node layouts have `unit` dofs a node
 * layer, element layouts `unit` elements a layer; counts and displacements
 * (of the owned parts, per rank, in units) serve the gathers. */
typedef struct layout {
  size_t global_n, local_n;
  size_t offset;      /* global index of the first local entry */
  size_t owned_begin; /* first owned local entry (the interface below is the lower rank's) */
  size_t unit;        /* entries per layer */
  int split;          /* 0: replicated, the whole vector on every rank */
  int nodes;          /* node values: interfaces to exchange */
  int *counts, *displs;
  MPI_Datatype type;  /* `unit` doubles */
} layout;

/* Levels of the sparse storage split into slabs at most: level 0, and
 * levels 1 and 2 where the slabs nest (sparse_splits). */
enum { SPARSE_SPLIT_MAX = 3 };

typedef struct level {
  vox_grid global, local; /* local: the rank's slab (the whole grid when not split) */
  int split;
  /* gathered, below a split level whose slabs nest in it: its Galerkin
   * product and restriction run on the slabs (`slab`, `slab_grid`), then
   * summed into the whole level */
  int from_slabs;
  layout nodes;
  layout slab;
  vox_grid slab_grid;
  vox_vec whole;   /* vectors of the whole level (gathers), made when needed */
  vox_vec whole2;
  vox_vec aside;   /* a node layer of the level (restrict_slab) */
  vox_vec edges;   /* 4 node layers: split_smooth's old d and received layers */
  vox_vec slab_part; /* a vector of the slab's size (from_slabs) */
} level;

typedef struct impl {
  MPI_Comm comm;
  int rank, size;
  vox_backend *in; /* the ranks' own backend: CPU or CUDA */
  int host;        /* its vectors are in host memory */
  vox_mpi_halo *halo;
  vox_vec recv;    /* 2 node layers of the fine level: from below, from above */
  int dpn;
  int64_t *first;
  size_t gather_nodes; /* vox_mpi_options.gather_nodes, resolved */
  int results_root;    /* vox_mpi_options.results: VOX_MPI_RESULTS_ROOT */
  int hierarchy_root;  /* vox_mpi_options.hierarchy: VOX_MPI_HIERARCHY_ROOT */
  vox_mpi_overlap overlap; /* vox_mpi_options.overlap */
  int n_levels, split_levels;
  level lv[MAX_LEVELS];
  layout elements;
  layout replicated;
  double *stage; /* host memory of the gathers */
  size_t stage_n;
  /* the bone's sparse storage: its split levels while they live (level 0,
   * and the next ones where the slabs nest: sparse_split_levels), whose vectors
   * then have these layouts, 3 and 6 entries a node; every other vector is
   * whole on every rank */
  struct mpi_sparse_level *sparse_split[SPARSE_SPLIT_MAX];
  int sparse_split_levels;
  layout sparse3[SPARSE_SPLIT_MAX], sparse6[SPARSE_SPLIT_MAX];
  /* the tables, with the ranks' backend's stencil storage and 16-byte
   * nodes (node4) */
  vox_backend_ops ops;
  vox_multigrid_ops mg;
  vox_sparse_ops sparse;
} impl;

/* A vector of the backend: its layout and the rank's part, a vector of
 * the ranks' backend. */
typedef struct mpi_vec {
  const layout *lay;
  vox_vec local;
} mpi_vec;

static impl *M(const vox_backend *be) { return be->impl; }
static const vox_backend_ops *C(const vox_backend *be) { return M(be)->in->ops; }
static vox_backend *IN(const vox_backend *be) { return M(be)->in; }

static mpi_vec *MV(const vox_vec *v) { return v->raw; }
/* The rank's part of a vector, a vector of the ranks' backend, in the
 * vector's precision: a vector of doubles read in another (the sparse
 * solve's float or 16-byte-node products over its CG's q: sparse_solve.c)
 * is read so from its part's start. */
static vox_vec loc(const vox_vec *v) {
  vox_vec l = MV(v)->local;
  l.scalar = v->scalar;
  return l;
}
static const layout *lay_of(const vox_vec *v) { return MV(v)->lay; }
/* n entries of a vector of the ranks' backend from entry `at`, in its
 * precision (16 bytes a node: `at` a whole node's first entry). */
static vox_vec part(const vox_vec *v, size_t at, size_t n) {
  const size_t bytes = v->scalar == VOX_FLOAT_NODE4 ? at / 3 * 4 * sizeof(float)
                                                    : at * vox_scalar_bytes(v->scalar);
  return (vox_vec){.raw = (char *)v->raw + bytes, .n = n, .scalar = v->scalar};
}

static vox_status unsupported(vox_backend *be, const char *what) {
  return vox_error(be->ctx, VOX_ERR_UNSUPPORTED, "%s is not split over MPI ranks yet", what);
}

/* Host memory for n doubles, kept for the next gather. */
static double *stage(impl *m, size_t n) {
  if (m->stage_n < n) {
    free(m->stage);
    m->stage = malloc(n * sizeof *m->stage);
    m->stage_n = m->stage ? n : 0;
  }
  return m->stage;
}

/* ---- layouts ------------------------------------------------------------- */
static vox_status layout_types(vox_context *ctx, impl *m, layout *l) {
  l->counts = calloc((size_t)m->size, sizeof *l->counts);
  l->displs = calloc((size_t)m->size, sizeof *l->displs);
  if (!l->counts || !l->displs) return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
  if (l->unit > INT_MAX)
    return vox_error(ctx, VOX_ERR_UNSUPPORTED, "a grid layer of %zu values is too large for MPI",
                     l->unit);
  MPI_Type_contiguous((int)l->unit, MPI_DOUBLE, &l->type);
  MPI_Type_commit(&l->type);
  return VOX_OK;
}

static void layout_free(layout *l) {
  free(l->counts);
  free(l->displs);
  if (l->counts && l->type != MPI_DATATYPE_NULL) MPI_Type_free(&l->type);
  l->counts = l->displs = NULL;
}

/* Rank q's element layers [a, b) on level l of a split level. */
static void slab_on_level(const impl *m, int l, int q, int64_t *a, int64_t *b) {
  *a = m->first[q] >> l;
  *b = q == m->size - 1 ? m->lv[l].global.nz : m->first[q + 1] >> l;
}

/* Level l's node values split into the slabs (its grid lv->global set):
 * the layout `n` and the rank's slab `local`. */
static vox_status slab_layout(vox_context *ctx, impl *m, int l, layout *n, vox_grid *local) {
  const vox_grid *g = &m->lv[l].global;
  n->nodes = 1;
  n->unit = (size_t)m->dpn * (size_t)(g->nx + 1) * (size_t)(g->ny + 1);
  n->global_n = n->unit * (size_t)(g->nz + 1);
  n->type = MPI_DATATYPE_NULL;
  TRY(layout_types(ctx, m, n));
  int64_t a, b;
  slab_on_level(m, l, m->rank, &a, &b);
  *local = *g;
  local->nz = b - a;
  local->origin[2] = g->origin[2] + (double)a * g->voxel_size[2];
  n->split = 1;
  n->local_n = n->unit * (size_t)(b - a + 1);
  n->offset = n->unit * (size_t)a;
  n->owned_begin = m->rank > 0 ? n->unit : 0;
  for (int q = 0; q < m->size; q++) {
    slab_on_level(m, l, q, &a, &b);
    n->displs[q] = (int)(a + (q > 0));
    n->counts[q] = (int)(b + 1 - (a + (q > 0)));
  }
  return VOX_OK;
}

static vox_status make_levels(vox_context *ctx, impl *m, const vox_grid *grid) {
  vox_grid g = *grid;
  for (int l = 0; l < MAX_LEVELS; l++) {
    level *lv = &m->lv[l];
    lv->global = g;
    /* the slab boundaries on coarse nodes, below a split level */
    int nests = l == 0 || m->lv[l - 1].split;
    for (int q = 1; q < m->size && nests; q++) nests = m->first[q] % ((int64_t)1 << l) == 0;
    const int large = (size_t)vox_grid_nodes(&g) >= m->gather_nodes;
    lv->split = nests && (l == 0 || large);
    lv->from_slabs = nests && !lv->split;
    if (lv->split) {
      m->split_levels = l + 1;
      TRY(slab_layout(ctx, m, l, &lv->nodes, &lv->local));
    } else {
      layout *n = &lv->nodes;
      n->nodes = 1;
      n->unit = (size_t)m->dpn * (size_t)(g.nx + 1) * (size_t)(g.ny + 1);
      n->global_n = n->local_n = n->unit * (size_t)(g.nz + 1);
      n->type = MPI_DATATYPE_NULL;
      TRY(layout_types(ctx, m, n));
      lv->local = g;
      if (lv->from_slabs) TRY(slab_layout(ctx, m, l, &lv->slab, &lv->slab_grid));
    }
    m->n_levels = l + 1;
    const vox_grid c = vox_grid_coarsen(&g);
    if (c.nx == g.nx && c.ny == g.ny && c.nz == g.nz) break;
    g = c;
  }
  /* element values: the slab's layers, no interfaces */
  layout *e = &m->elements;
  e->split = 1;
  e->unit = (size_t)grid->nx * (size_t)grid->ny;
  e->global_n = e->unit * (size_t)grid->nz;
  e->local_n = e->unit * (size_t)(m->first[m->rank + 1] - m->first[m->rank]);
  e->offset = e->unit * (size_t)m->first[m->rank];
  e->type = MPI_DATATYPE_NULL;
  TRY(layout_types(ctx, m, e));
  for (int q = 0; q < m->size; q++)
    e->displs[q] = (int)m->first[q], e->counts[q] = (int)(m->first[q + 1] - m->first[q]);
  for (int l = 0; l < m->n_levels; l++)
    if (m->lv[l].nodes.global_n == e->global_n)
      return vox_error(ctx, VOX_ERR_UNSUPPORTED,
                       "grid %lld x %lld x %lld: its element count equals the node values of "
                       "multigrid level %d, which the MPI backend tells apart by size",
                       (long long)grid->nx, (long long)grid->ny, (long long)grid->nz, l);
  m->replicated.type = MPI_DATATYPE_NULL;
  return VOX_OK;
}

static const layout *layout_for(const impl *m, size_t n) {
  if (m->sparse_split[0]) {
    for (int l = 0; l < m->sparse_split_levels; l++) {
      if (n == m->sparse3[l].global_n) return &m->sparse3[l];
      if (n == m->sparse6[l].global_n) return &m->sparse6[l];
    }
    return &m->replicated;
  }
  if (n == m->elements.global_n) return &m->elements;
  for (int l = 0; l < m->n_levels; l++)
    if (n == m->lv[l].nodes.global_n) return &m->lv[l].nodes;
  return &m->replicated;
}

static int level_of(const impl *m, const vox_grid *g) {
  for (int l = 0; l < m->n_levels; l++)
    if (m->lv[l].global.nx == g->nx && m->lv[l].global.ny == g->ny && m->lv[l].global.nz == g->nz)
      return l;
  return -1;
}

/* ---- communication ------------------------------------------------------- */

static int parallel(const impl *m, const layout *l) { return l->split && m->size > 1; }

/* Whether the exchanges travel beside the slab's work: the fine grid's
 * steps, and the sparse storage's products with layers of `layer` values
 * (vox_mpi_overlap's auto: where it measured faster). */
static int overlap_fine(const impl *m) {
  return m->overlap == VOX_MPI_OVERLAP_ON || (m->overlap == VOX_MPI_OVERLAP_AUTO && !m->host);
}
static int overlap_sparse(const impl *m, size_t layer) {
  return m->overlap == VOX_MPI_OVERLAP_ON ||
         (m->overlap == VOX_MPI_OVERLAP_AUTO && !m->host &&
          !vox_mpi_halo_swaps_on_device(m->halo, layer));
}

/* Which entries of the interface layers take the neighbours' parts: 1,
 * or 0 for an entry that keeps its own value (a fixed dof); vectors of the
 * ranks' backend, a layer each. */
typedef struct interface_masks {
  vox_vec below, above;
} interface_masks;

/* Adds the neighbours' parts to the interface layers of y, the rank's part
 * of a node vector (all of each layer when `masks` is NULL). */
static vox_status exchange(vox_backend *be, const layout *l, vox_vec *y,
                           const interface_masks *masks) {
  impl *m = M(be);
  if (!parallel(m, l) || !l->nodes) return VOX_OK;
  const size_t u = l->unit;
  const int lower = m->rank > 0, upper = m->rank < m->size - 1;
  vox_vec first = part(y, 0, u), last = part(y, l->local_n - u, u);
  vox_vec from_below = part(&m->recv, 0, u), from_above = part(&m->recv, u, u);
  return vox_mpi_halo_swap_add(m->halo, lower, upper, &first, &last, &from_below, &from_above,
                               masks ? &masks->below : NULL, masks ? &masks->above : NULL);
}

static vox_status need(vox_backend *be, vox_vec *v, size_t n);

/* Values a gather to the host moves through the device at a time. */
enum { GATHER_CHUNK = 1 << 25 };

/* gather() between GPUs with NCCL: through a device buffer of at most
 * GATHER_CHUNK values (whole layers, 256 MB; freed after), each rank's
 * owned layers in it gathered by NCCL, then downloaded. Host memory and
 * MPI took 0.84 s for the results of a 512 x 256 x 256 cantilever on two
 * H200s. */
static vox_status gather_on_device(vox_backend *be, const layout *l, const vox_vec *local,
                                   double *whole) {
  impl *m = M(be);
  const size_t unit = l->unit, layers = l->global_n / unit;
  const size_t step = GATHER_CHUNK / unit > 0 ? GATHER_CHUNK / unit : 1;
  vox_vec chunk = {0};
  TRY(need(be, &chunk, (step < layers ? step : layers) * unit));
  int *counts = calloc(2 * (size_t)m->size, sizeof *counts);
  if (!counts) {
    C(be)->vec->destroy(IN(be), &chunk);
    return vox_error(be->ctx, VOX_ERR_NO_MEMORY, "out of memory");
  }
  int *displs = counts + m->size;
  vox_status s = VOX_OK;
  for (size_t a = 0; a < layers && s == VOX_OK; a += step) {
    const size_t b = a + step < layers ? a + step : layers;
    for (int q = 0; q < m->size; q++) { /* rank q's owned layers in [a, b) */
      const size_t from = (size_t)l->displs[q], to = from + (size_t)l->counts[q];
      const size_t lo = from > a ? from : a, hi = to < b ? to : b;
      counts[q] = hi > lo ? (int)(hi - lo) : 0;
      displs[q] = hi > lo ? (int)(lo - a) : 0;
    }
    if (counts[m->rank]) {
      const size_t first = l->owned_begin / unit + (a + (size_t)displs[m->rank]) -
                           (size_t)l->displs[m->rank];
      const vox_vec own = part(local, first * unit, (size_t)counts[m->rank] * unit);
      vox_vec at = part(&chunk, (size_t)displs[m->rank] * unit, own.n);
      s = C(be)->vec->copy(IN(be), &at, &own);
    }
    if (s == VOX_OK) s = vox_mpi_halo_allgatherv(m->halo, &chunk, counts, displs, unit);
    const vox_vec got = part(&chunk, 0, (b - a) * unit);
    if (s == VOX_OK) s = C(be)->vec->download(IN(be), &got, whole + a * unit);
  }
  free(counts);
  C(be)->vec->destroy(IN(be), &chunk);
  return s;
}

/* The whole vector, in host memory, from every rank's owned part, on every
 * rank, or on rank 0 alone (`to_root`: `whole` is not touched elsewhere
 * and may be NULL there). */
static vox_status gather(vox_backend *be, const layout *l, const vox_vec *local, double *whole,
                         int to_root) {
  impl *m = M(be);
  const int here = !to_root || m->rank == 0;
  if (!l->split) return here ? C(be)->vec->download(IN(be), local, whole) : VOX_OK;
  if (!to_root && !m->host && m->size > 1 && vox_mpi_halo_gathers_on_device(m->halo))
    return gather_on_device(be, l, local, whole);
  const size_t n = (size_t)l->counts[m->rank] * l->unit;
  double *mine = here ? whole + (size_t)l->displs[m->rank] * l->unit : stage(m, n);
  if (!mine) return vox_error(be->ctx, VOX_ERR_NO_MEMORY, "out of memory");
  const vox_vec own = part(local, l->owned_begin, n);
  TRY(C(be)->vec->download(IN(be), &own, mine));
  if (m->size == 1) return VOX_OK;
  if (!to_root)
    MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, whole, l->counts, l->displs, l->type,
                   m->comm);
  else if (m->rank == 0)
    MPI_Gatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, whole, l->counts, l->displs, l->type, 0,
                m->comm);
  else
    MPI_Gatherv(mine, l->counts[m->rank], l->type, NULL, NULL, NULL, l->type, 0, m->comm);
  return VOX_OK;
}

/* The same into `whole`, a vector of the ranks' backend of the global size
 * (made on first use). */
static vox_status gather_into(vox_backend *be, const layout *l, const vox_vec *local,
                              vox_vec *whole) {
  impl *m = M(be);
  if (!whole->data) TRY(C(be)->vec->create(IN(be), l->global_n, VOX_DOUBLE, whole));
  if (m->host) return gather(be, l, local, whole->data, 0);
  if (l->split && vox_mpi_halo_gathers_on_device(m->halo)) {
    const size_t n = (size_t)l->counts[m->rank] * l->unit;
    const vox_vec own = part(local, l->owned_begin, n);
    vox_vec to = part(whole, (size_t)l->displs[m->rank] * l->unit, n);
    TRY(C(be)->vec->copy(IN(be), &to, &own));
    return vox_mpi_halo_allgatherv(m->halo, whole, l->counts, l->displs, l->unit);
  }
  double *host = stage(m, l->global_n);
  if (!host) return vox_error(be->ctx, VOX_ERR_NO_MEMORY, "out of memory");
  TRY(gather(be, l, local, host, 0));
  return C(be)->vec->upload(IN(be), whole, host);
}

static void sum_all(impl *m, double *x, size_t n) {
  for (size_t done = 0; done < n && m->size > 1;) {
    const size_t chunk = n - done < (size_t)1 << 26 ? n - done : (size_t)1 << 26;
    MPI_Allreduce(MPI_IN_PLACE, x + done, (int)chunk, MPI_DOUBLE, MPI_SUM, m->comm);
    done += chunk;
  }
}

/* A vector of the ranks' backend of n values, made on first use. */
static vox_status need(vox_backend *be, vox_vec *v, size_t n) {
  return v->data ? VOX_OK : C(be)->vec->create(IN(be), n, VOX_DOUBLE, v);
}

/* ---- vectors ------------------------------------------------------------- */

/* Vectors below double precision: the sparse storage's mixed-precision
 * V-cycle (float, 16-byte nodes, and its bfloat16 blocks), whose exchanges
 * and sums go through double (sparse_layers_in_double). */
static vox_status vec_create(vox_backend *be, size_t n, vox_scalar scalar, vox_vec *v) {
  if (scalar != VOX_DOUBLE && !(M(be)->sparse_split[0] &&
                                (scalar == VOX_FLOAT || scalar == VOX_BF16 ||
                                 scalar == VOX_FLOAT_NODE4)))
    return unsupported(be, "a vector below double precision");
  const layout *l = layout_for(M(be), n);
  mpi_vec *mv = calloc(1, sizeof *mv);
  if (!mv) return vox_error(be->ctx, VOX_ERR_NO_MEMORY, "out of memory");
  mv->lay = l;
  const vox_status s =
      C(be)->vec->create(IN(be), l == &M(be)->replicated ? n : l->local_n, scalar, &mv->local);
  if (s != VOX_OK) {
    free(mv);
    return s;
  }
  v->raw = mv;
  v->n = n;
  v->scalar = scalar;
  return VOX_OK;
}

static void vec_destroy(vox_backend *be, vox_vec *v) {
  if (v->raw) {
    C(be)->vec->destroy(IN(be), &MV(v)->local);
    free(v->raw);
  }
  v->raw = NULL;
  v->n = 0;
}

static vox_status vec_upload(vox_backend *be, vox_vec *v, const void *values) {
  const double *host = values;
  return C(be)->vec->upload(IN(be), &MV(v)->local, host + lay_of(v)->offset);
}

/* (a replicated vector is not split: gather downloads the rank's copy) */
static vox_status vec_download(vox_backend *be, const vox_vec *v, void *values) {
  const vox_vec local = loc(v);
  return gather(be, lay_of(v), &local, values, 0);
}

static vox_status vec_download_result(vox_backend *be, const vox_vec *v, double *host) {
  const vox_vec local = loc(v);
  return gather(be, lay_of(v), &local, host, M(be)->results_root);
}

static int results(const vox_backend *be) {
  if (!M(be)->results_root) return VOX_RESULTS_EVERY_PROCESS;
  return M(be)->rank == 0 ? VOX_RESULTS_HERE : VOX_RESULTS_ELSEWHERE;
}

static size_t vec_held_n(vox_backend *be, const vox_vec *v) {
  (void)be;
  return MV(v)->local.n;
}

static vox_status vec_held_download(vox_backend *be, const vox_vec *v, double *host) {
  const vox_vec local = loc(v);
  return C(be)->vec->download(IN(be), &local, host);
}

static vox_status vec_held_upload(vox_backend *be, vox_vec *v, const double *host) {
  return C(be)->vec->upload(IN(be), &MV(v)->local, host);
}

#define LOCAL1(a) vox_vec a##_ = loc(a)
static vox_status vec_set(vox_backend *be, vox_vec *v, double a) {
  LOCAL1(v);
  return C(be)->vec->set(IN(be), &v_, a);
}
static vox_status vec_copy(vox_backend *be, vox_vec *dst, const vox_vec *src) {
  LOCAL1(dst);
  LOCAL1(src);
  return C(be)->vec->copy(IN(be), &dst_, &src_);
}
static vox_status vec_axpy(vox_backend *be, vox_vec *y, double a, const vox_vec *x) {
  LOCAL1(y);
  LOCAL1(x);
  return C(be)->vec->axpy(IN(be), &y_, a, &x_);
}
static vox_status vec_xpay(vox_backend *be, vox_vec *y, double a, const vox_vec *x) {
  LOCAL1(y);
  LOCAL1(x);
  return C(be)->vec->xpay(IN(be), &y_, a, &x_);
}
static vox_status vec_mult(vox_backend *be, vox_vec *w, const vox_vec *x, const vox_vec *y) {
  LOCAL1(w);
  LOCAL1(x);
  LOCAL1(y);
  return C(be)->vec->mult(IN(be), &w_, &x_, &y_);
}
static vox_status vec_axpby(vox_backend *be, vox_vec *y, double a, const vox_vec *x, double b) {
  LOCAL1(y);
  LOCAL1(x);
  return C(be)->vec->axpby(IN(be), &y_, a, &x_, b);
}
static vox_status vec_reciprocal(vox_backend *be, vox_vec *v) {
  LOCAL1(v);
  return C(be)->vec->reciprocal(IN(be), &v_);
}

/* The whole vector's pseudo-random entries: by global index. */
static vox_status vec_random(vox_backend *be, vox_vec *v, uint64_t seed, uint64_t first) {
  LOCAL1(v);
  return C(be)->vec->random(IN(be), &v_, seed, first + lay_of(v)->offset);
}

static vox_status vec_smoother_step(vox_backend *be, const vox_vec *b, const vox_vec *ax,
                                    const vox_vec *inv_diag, double alpha, double beta, vox_vec *d,
                                    vox_vec *x) {
  LOCAL1(b);
  LOCAL1(inv_diag);
  LOCAL1(x);
  vox_vec ax_ = ax ? loc(ax) : (vox_vec){0}, d_ = d ? loc(d) : (vox_vec){0};
  return C(be)->vec->smoother_step(IN(be), &b_, ax ? &ax_ : NULL, &inv_diag_, alpha, beta,
                                   d ? &d_ : NULL, &x_);
}

/* The owned part of a vector, a vector of the ranks' backend. */
static vox_vec owned(const vox_vec *v) {
  const vox_vec l = loc(v);
  const size_t b = lay_of(v)->owned_begin;
  return part(&l, b, l.n - b);
}

static vox_status vec_dot(vox_backend *be, const vox_vec *x, const vox_vec *y, double *out) {
  vox_vec x_ = owned(x), y_ = owned(y);
  TRY(C(be)->vec->dot(IN(be), &x_, &y_, out));
  if (parallel(M(be), lay_of(x))) sum_all(M(be), out, 1);
  return VOX_OK;
}

static vox_status vec_cg_update(vox_backend *be, vox_vec *x, vox_vec *r, double alpha,
                                const vox_vec *p, const vox_vec *q, double *rr) {
  const size_t b = lay_of(x)->owned_begin;
  if (b > 0) { /* the interface below: updated, not summed */
    LOCAL1(x);
    LOCAL1(r);
    LOCAL1(p);
    LOCAL1(q);
    vox_vec x0 = part(&x_, 0, b), r0 = part(&r_, 0, b), p0 = part(&p_, 0, b),
            q0 = part(&q_, 0, b);
    double ignored;
    TRY(C(be)->vec->cg_update(IN(be), &x0, &r0, alpha, &p0, &q0, &ignored));
  }
  vox_vec x_ = owned(x), r_ = owned(r), p_ = owned(p), q_ = owned(q);
  TRY(C(be)->vec->cg_update(IN(be), &x_, &r_, alpha, &p_, &q_, rr));
  if (parallel(M(be), lay_of(x))) sum_all(M(be), rr, 1);
  return VOX_OK;
}

static vox_status vec_max_abs_diff(vox_backend *be, const vox_vec *x, const vox_vec *y,
                                   double *out) {
  LOCAL1(x);
  LOCAL1(y);
  TRY(C(be)->vec->max_abs_diff(IN(be), &x_, &y_, out));
  if (parallel(M(be), lay_of(x)))
    MPI_Allreduce(MPI_IN_PLACE, out, 1, MPI_DOUBLE, MPI_MAX, M(be)->comm);
  return VOX_OK;
}

/* ---- the fine operator --------------------------------------------------- */

typedef struct mpi_operator {
  vox_operator *local;    /* the operator of the slab */
  interface_masks masks;  /* its free dofs on the interfaces (with fixed dofs) */
  int has_masks;
  /* The operators of the slab's first and last element layer (where a
   * neighbour shares its node layer), whose products give the slab's part
   * of the shared layer alone: the fused smoothing step and residual run on
   * the whole slab with that part, then add the neighbour's (edge_finish) */
  vox_operator *edge[2];
  vox_vec edge_moduli[2]; /* views of the moduli, which the edges keep */
  vox_vec edge_y[2];      /* their products, two node layers each */
  /* the whole grid's operator, for a level 1 that is gathered: its
   * description kept, the operator made on first use */
  vox_operator_desc whole_desc;
  uint8_t *whole_fixed;
  size_t *whole_spring_dof;
  double *whole_spring_k;
  double whole_ke[24 * 24];
  vox_operator *whole;
  vox_vec whole_moduli;
  const vox_vec *moduli;
} mpi_operator;

static void op_destroy(vox_backend *be, vox_operator *o) {
  mpi_operator *op = (mpi_operator *)(void *)o;
  if (!op) return;
  if (op->local) C(be)->op->destroy(IN(be), op->local);
  if (op->whole) C(be)->op->destroy(IN(be), op->whole);
  for (int side = 0; side < 2; side++)
    if (op->edge[side]) C(be)->op->destroy(IN(be), op->edge[side]);
  vox_vec *v[] = {&op->whole_moduli, &op->masks.below, &op->masks.above, &op->edge_y[0],
                  &op->edge_y[1]};
  for (int i = 0; i < 5; i++)
    if (v[i]->data) C(be)->vec->destroy(IN(be), v[i]);
  free(op->whole_fixed);
  free(op->whole_spring_dof);
  free(op->whole_spring_k);
  free(op);
}

/* The interface masks of a slab's fixed flags (`fixed`: the slab's). */
static vox_status make_masks(vox_backend *be, mpi_operator *op, const uint8_t *fixed) {
  const layout *n = &M(be)->lv[0].nodes;
  const size_t u = n->unit;
  double *host = malloc(u * sizeof *host);
  if (!host) return vox_error(be->ctx, VOX_ERR_NO_MEMORY, "out of memory");
  vox_status s = VOX_OK;
  vox_vec *mask[2] = {&op->masks.below, &op->masks.above};
  const uint8_t *layer[2] = {fixed, fixed + n->local_n - u};
  for (int side = 0; side < 2 && s == VOX_OK; side++) {
    for (size_t i = 0; i < u; i++) host[i] = layer[side][i] ? 0 : 1;
    s = C(be)->vec->create(IN(be), u, VOX_DOUBLE, mask[side]);
    if (s == VOX_OK) s = C(be)->vec->upload(IN(be), mask[side], host);
  }
  free(host);
  op->has_masks = s == VOX_OK;
  return s;
}

/* The edge operators of a slab (`slab`: its description) on the sides
 * where a neighbour is: one element layer each, with the springs of the
 * shared node layer. */
static vox_status make_edges(vox_backend *be, mpi_operator *op, const vox_operator_desc *slab) {
  impl *m = M(be);
  const layout *n = &m->lv[0].nodes;
  const size_t u = n->unit;
  const int64_t nz = slab->grid.nz;
  vox_status s = VOX_OK;
  size_t *dof = malloc((slab->n_springs + 1) * sizeof *dof);
  double *k = malloc((slab->n_springs + 1) * sizeof *k);
  if (!dof || !k) s = vox_error(be->ctx, VOX_ERR_NO_MEMORY, "out of memory");
  for (int side = 0; side < 2 && s == VOX_OK; side++) {
    if (side == 0 ? m->rank == 0 : m->rank == m->size - 1) continue;
    const int64_t layer = side == 0 ? 0 : nz - 1; /* the element layer */
    vox_operator_desc e = *slab;
    e.grid.nz = 1;
    e.grid.origin[2] = slab->grid.origin[2] + (double)layer * slab->grid.voxel_size[2];
    e.dof_fixed = slab->dof_fixed ? slab->dof_fixed + (size_t)layer * u : NULL;
    e.first_layer_shared = 0;
    const size_t shared = (size_t)(side == 0 ? 0 : nz) * u; /* the shared node layer */
    e.n_springs = 0;
    for (size_t i = 0; i < slab->n_springs; i++)
      if (slab->spring_dof[i] >= shared && slab->spring_dof[i] < shared + u)
        dof[e.n_springs] = slab->spring_dof[i] - (size_t)layer * u, k[e.n_springs++] = slab->spring_k[i];
    e.spring_dof = dof;
    e.spring_k = k;
    s = C(be)->op->create(IN(be), &e, &op->edge[side]);
    if (s == VOX_OK) s = C(be)->vec->create(IN(be), 2 * u, VOX_DOUBLE, &op->edge_y[side]);
  }
  free(dof);
  free(k);
  return s;
}

static vox_status op_create(vox_backend *be, const vox_operator_desc *desc, vox_operator **out) {
  impl *m = M(be);
  *out = NULL;
  if (desc->grid.periodic) return unsupported(be, "a periodic grid");
  if (level_of(m, &desc->grid) != 0 || desc->dofs_per_node != m->dpn)
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT,
                     "the operator's grid is not the one the MPI backend was made for");
  mpi_operator *op = calloc(1, sizeof *op);
  if (!op) return vox_error(be->ctx, VOX_ERR_NO_MEMORY, "out of memory");
  const layout *n = &m->lv[0].nodes;
  const size_t nd = n->global_n, nloc = 8 * (size_t)m->dpn;
  /* the whole description, kept for a gathered level 1 */
  op->whole_desc = *desc;
  memcpy(op->whole_ke, desc->ke, nloc * nloc * sizeof *desc->ke);
  op->whole_desc.ke = op->whole_ke;
  vox_status s = VOX_OK;
  if (desc->dof_fixed) {
    op->whole_fixed = malloc(nd);
    if (op->whole_fixed) memcpy(op->whole_fixed, desc->dof_fixed, nd);
    op->whole_desc.dof_fixed = op->whole_fixed;
  }
  op->whole_spring_dof = malloc((desc->n_springs + 1) * sizeof *op->whole_spring_dof);
  op->whole_spring_k = malloc((desc->n_springs + 1) * sizeof *op->whole_spring_k);
  size_t *local_dof = malloc((desc->n_springs + 1) * sizeof *local_dof);
  double *local_k = malloc((desc->n_springs + 1) * sizeof *local_k);
  if ((desc->dof_fixed && !op->whole_fixed) || !op->whole_spring_dof || !op->whole_spring_k ||
      !local_dof || !local_k)
    s = vox_error(be->ctx, VOX_ERR_NO_MEMORY, "out of memory");
  /* springs: on the rank that owns their dof, so that the sums count them once */
  size_t n_local = 0;
  for (size_t i = 0; i < desc->n_springs && s == VOX_OK; i++) {
    op->whole_spring_dof[i] = desc->spring_dof[i];
    op->whole_spring_k[i] = desc->spring_k[i];
    const size_t d = desc->spring_dof[i];
    if (d >= n->offset + n->owned_begin && d < n->offset + n->local_n)
      local_dof[n_local] = d - n->offset, local_k[n_local++] = desc->spring_k[i];
  }
  op->whole_desc.spring_dof = op->whole_spring_dof;
  op->whole_desc.spring_k = op->whole_spring_k;
  if (s == VOX_OK) {
    vox_operator_desc slab = *desc;
    slab.grid = m->lv[0].local;
    slab.dof_fixed = desc->dof_fixed ? desc->dof_fixed + n->offset : NULL;
    slab.n_springs = n_local;
    slab.spring_dof = local_dof;
    slab.spring_k = local_k;
    /* the slab below holds the identity rows of the interface's fixed dofs too */
    slab.first_layer_shared = m->rank > 0;
    IN(be)->kernel = be->kernel;
    s = C(be)->op->create(IN(be), &slab, &op->local);
    if (s == VOX_OK && desc->dof_fixed && parallel(m, n)) s = make_masks(be, op, slab.dof_fixed);
    if (s == VOX_OK && parallel(m, n)) s = make_edges(be, op, &slab);
  }
  free(local_dof);
  free(local_k);
  if (s != VOX_OK) {
    op_destroy(be, (vox_operator *)(void *)op);
    return s;
  }
  *out = (vox_operator *)(void *)op;
  return VOX_OK;
}

static mpi_operator *OP(vox_operator *o) { return (mpi_operator *)(void *)o; }
/* The exchange's masks of a product eliminated with the operator's flags. */
static const interface_masks *masks_of(vox_operator *o) {
  return OP(o)->has_masks ? &OP(o)->masks : NULL;
}

static vox_status op_set_moduli(vox_backend *be, vox_operator *o, const vox_vec *moduli) {
  mpi_operator *op = OP(o);
  op->moduli = moduli;
  LOCAL1(moduli);
  const size_t layer = M(be)->elements.unit;
  for (int side = 0; side < 2; side++)
    if (op->edge[side]) {
      op->edge_moduli[side] = part(&moduli_, side == 0 ? 0 : moduli_.n - layer, layer);
      TRY(C(be)->op->set_moduli(IN(be), op->edge[side], &op->edge_moduli[side]));
    }
  return C(be)->op->set_moduli(IN(be), op->local, &moduli_);
}

/* The slab's parts of the shared node layers of K x, from the edge
 * operators, on their way to the neighbours (a swap started), the
 * neighbours' parts on their way into M(be)->recv (from below, then from
 * above), masked to the free dofs: edge_finish completes it, and the slab's
 * own step may run in between (vox_mpi_options.overlap). */
static vox_status edge_start(vox_backend *be, mpi_operator *op, const vox_vec *x, int flags) {
  impl *m = M(be);
  const size_t u = m->lv[0].nodes.unit;
  vox_vec part_of[2];
  memset(part_of, 0, sizeof part_of);
  for (int side = 0; side < 2; side++)
    if (op->edge[side]) {
      const vox_vec xe = part(x, side == 0 ? 0 : x->n - 2 * u, 2 * u);
      TRY(C(be)->op->apply(IN(be), op->edge[side], &xe, &op->edge_y[side], flags));
      part_of[side] = part(&op->edge_y[side], side == 0 ? 0 : u, u);
    }
  vox_vec from_below = part(&m->recv, 0, u), from_above = part(&m->recv, u, u);
  const int masked = op->has_masks;
  TRY(vox_mpi_halo_swap_start(m->halo, op->edge[0] != NULL, op->edge[1] != NULL, &part_of[0],
                              &part_of[1], &from_below, &from_above,
                              masked ? &op->masks.below : NULL, masked ? &op->masks.above : NULL));
  return overlap_fine(m) ? VOX_OK : vox_mpi_halo_swap_finish(m->halo);
}

/* v -= a (the neighbour's part) .* w on the shared layers, w NULL for 1:
 * after a fused step on the slab, what the neighbour's part of K x changes
 * (r = b - K x: a = 1; the smoothing step's d and x: a = alpha, w the
 * inverse diagonal). The parts in M(be)->recv become their products with
 * w (v NULL: only that, for a smoothing step that keeps no d). The first
 * call after edge_start completes its swap. */
static vox_status edge_finish(vox_backend *be, mpi_operator *op, vox_vec *v, double a,
                              const vox_vec *w) {
  impl *m = M(be);
  const size_t u = m->lv[0].nodes.unit;
  TRY(vox_mpi_halo_swap_finish(m->halo));
  for (int side = 0; side < 2; side++) {
    if (!op->edge[side]) continue;
    const size_t at = side == 0 ? 0 : (w ? w : v)->n - u;
    vox_vec r = part(&m->recv, side == 0 ? 0 : u, u);
    if (w) {
      const vox_vec wl = part(w, at, u);
      TRY(C(be)->vec->mult(IN(be), &r, &r, &wl));
    }
    if (!v) continue;
    vox_vec layer = part(v, at, u);
    TRY(C(be)->vec->axpy(IN(be), &layer, -a, &r));
  }
  return VOX_OK;
}

static vox_status op_apply(vox_backend *be, vox_operator *o, const vox_vec *x, vox_vec *y,
                           int flags) {
  LOCAL1(x);
  LOCAL1(y);
  TRY(C(be)->op->apply(IN(be), OP(o)->local, &x_, &y_, flags));
  return exchange(be, &M(be)->lv[0].nodes, &y_, flags & VOX_APPLY_FULL ? NULL : masks_of(o));
}

static vox_status op_zero_fixed(vox_backend *be, vox_operator *o, vox_vec *v) {
  LOCAL1(v);
  return C(be)->op->zero_fixed(IN(be), OP(o)->local, &v_);
}

static vox_status op_diagonal(vox_backend *be, vox_operator *o, vox_vec *d) {
  LOCAL1(d);
  TRY(C(be)->op->diagonal(IN(be), OP(o)->local, &d_));
  return exchange(be, &M(be)->lv[0].nodes, &d_, masks_of(o));
}

static vox_status op_element_energy(vox_backend *be, vox_operator *o, const vox_vec *u,
                                    vox_vec *energy, int accumulate) {
  LOCAL1(u);
  LOCAL1(energy);
  return C(be)->op->element_energy(IN(be), OP(o)->local, &u_, &energy_, accumulate);
}

/* The fused steps on the slab, with the neighbours' parts of the shared
 * layers added after them (edge_start, edge_finish): the product of the
 * slab once, in the backend's one pass, and products of two element layers
 * besides. With d = alpha inv_diag .* (b - y - y') + beta d for the
 * neighbour's part y', the step's d and x_out less alpha inv_diag .* y'. */
static vox_status op_smooth(vox_backend *be, vox_operator *o, const vox_vec *b, const vox_vec *x,
                            const vox_vec *inv_diag, double alpha, double beta, vox_vec *d,
                            vox_vec *x_out, int flags) {
  mpi_operator *op = OP(o);
  LOCAL1(x);
  LOCAL1(b);
  LOCAL1(inv_diag);
  LOCAL1(x_out);
  vox_vec d_ = d ? loc(d) : (vox_vec){0}, *dp = d ? &d_ : NULL;
  if (!parallel(M(be), &M(be)->lv[0].nodes))
    return C(be)->op->smooth(IN(be), op->local, &b_, &x_, &inv_diag_, alpha, beta, dp, &x_out_,
                             flags);
  TRY(edge_start(be, op, &x_, flags));
  TRY(C(be)->op->smooth(IN(be), op->local, &b_, &x_, &inv_diag_, alpha, beta, dp, &x_out_, flags));
  TRY(edge_finish(be, op, dp, alpha, &inv_diag_));
  /* x_out = x + d: the same change, alpha y' .* inv_diag, which the call
   * above left in M(be)->recv */
  return edge_finish(be, op, &x_out_, alpha, NULL);
}

static vox_status op_residual(vox_backend *be, vox_operator *o, const vox_vec *b, const vox_vec *x,
                              vox_vec *r, int flags) {
  mpi_operator *op = OP(o);
  LOCAL1(x);
  LOCAL1(b);
  LOCAL1(r);
  if (!parallel(M(be), &M(be)->lv[0].nodes))
    return C(be)->op->residual(IN(be), op->local, &b_, &x_, &r_, flags);
  TRY(edge_start(be, op, &x_, flags));
  TRY(C(be)->op->residual(IN(be), op->local, &b_, &x_, &r_, flags));
  return edge_finish(be, op, &r_, 1, NULL);
}

static vox_status op_strain_load(vox_backend *be, vox_operator *op, const double *chi,
                                 vox_vec *f) {
  return unsupported(be, "a periodic cell");
}
static vox_status op_strain_energy(vox_backend *be, vox_operator *op, int n_fields,
                                   const vox_vec *u, const double *chi, const double *w,
                                   vox_vec *out) {
  return unsupported(be, "a periodic cell");
}
static vox_status op_strain_energy_sums(vox_backend *be, vox_operator *op, int n_fields,
                                        const vox_vec *u, const double *chi, double *sums) {
  return unsupported(be, "a periodic cell");
}
/* ---- multigrid levels ---------------------------------------------------- */

typedef struct mpi_stencil {
  int level; /* -1: a whole grid's on every rank (the sparse storage's coarsest) */
  vox_precision precision;
  vox_stencil *local; /* the slab's part (split), or the whole level (gathered) */
  vox_stencil *whole; /* a split level gathered whole (for the next level or a direct solve) */
  vox_stencil *slab;  /* the slab's part of a level gathered from_slabs */
} mpi_stencil;

static mpi_stencil *ST(vox_stencil *s) { return (mpi_stencil *)(void *)s; }

static void stencil_destroy(vox_backend *be, vox_stencil *s) {
  mpi_stencil *st = ST(s);
  if (!st) return;
  if (st->local) C(be)->mg->stencil_destroy(IN(be), st->local);
  if (st->whole) C(be)->mg->stencil_destroy(IN(be), st->whole);
  if (st->slab) C(be)->mg->stencil_destroy(IN(be), st->slab);
  free(st);
}

static vox_status stencil_create(vox_backend *be, const vox_grid *grid, int dpn,
                                 vox_precision precision, vox_stencil **out) {
  impl *m = M(be);
  *out = NULL;
  if (m->sparse_split[0]) { /* the sparse storage's coarsest level: whole */
    mpi_stencil *st = calloc(1, sizeof *st);
    if (!st) return vox_error(be->ctx, VOX_ERR_NO_MEMORY, "out of memory");
    st->level = -1;
    const vox_status s = C(be)->mg->stencil_create(IN(be), grid, dpn, precision, &st->local);
    if (s != VOX_OK) free(st);
    else *out = (vox_stencil *)(void *)st;
    return s;
  }
  const int l = level_of(m, grid);
  if (l <= 0 || dpn != m->dpn)
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT,
                     "a multigrid level the MPI backend does not know");
  mpi_stencil *st = calloc(1, sizeof *st);
  if (!st) return vox_error(be->ctx, VOX_ERR_NO_MEMORY, "out of memory");
  st->level = l;
  st->precision = precision;
  const vox_status s =
      C(be)->mg->stencil_create(IN(be), &m->lv[l].local, dpn, precision, &st->local);
  if (s != VOX_OK) {
    stencil_destroy(be, (vox_stencil *)(void *)st);
    return s;
  }
  *out = (vox_stencil *)(void *)st;
  return VOX_OK;
}

/* The whole stencil of a level from the slabs' parts `part` (laid out as
 * `slabs`), on every rank: each part in its place, zeros elsewhere, summed
 * over the ranks. At most two ranks share a node and x + 0 is exact, so
 * every rank gets the same bits. Through host memory in the upload layout. */
static vox_status sum_slabs_on_host(vox_backend *be, const layout *slabs, const vox_stencil *part,
                                    vox_stencil *whole) {
  impl *m = M(be);
  const size_t per_node = 27 * (size_t)m->dpn * (size_t)m->dpn;
  const size_t whole_nodes = slabs->global_n / (size_t)m->dpn,
               node_offset = slabs->offset / (size_t)m->dpn;
  double *values = calloc(whole_nodes * per_node, sizeof *values);
  if (!values) return vox_error(be->ctx, VOX_ERR_NO_MEMORY, "out of memory");
  vox_status s = C(be)->mg->stencil_download(IN(be), part, values + node_offset * per_node);
  if (s == VOX_OK) {
    sum_all(m, values, whole_nodes * per_node);
    s = C(be)->mg->stencil_upload(IN(be), whole, values);
  }
  free(values);
  return s;
}

/* The same sum on the stored values in place, where the ranks' backend
 * gives them (stencil_values): MPI on host memory, NCCL on the devices;
 * through host memory otherwise. `part` is a stencil of the slab made for
 * the sum (its values are read as they are: never packed by a product). */
static vox_status sum_slabs(vox_backend *be, const layout *slabs, vox_stencil *part,
                            vox_stencil *whole) {
  impl *m = M(be);
  const vox_multigrid_ops *mg = C(be)->mg;
  if (!mg->stencil_values || (!m->host && !vox_mpi_halo_gathers_on_device(m->halo)))
    return sum_slabs_on_host(be, slabs, part, whole);
  vox_vec from, to;
  TRY(mg->stencil_values(IN(be), part, &from));
  TRY(mg->stencil_values(IN(be), whole, &to));
  /* the slab's nodes are a range of the whole's in each run of values */
  const size_t runs = mg->stencil_value_runs > 1 ? (size_t)mg->stencil_value_runs : 1;
  const size_t part_nodes = slabs->local_n / (size_t)m->dpn,
               whole_nodes = slabs->global_n / (size_t)m->dpn;
  const size_t per_node = from.n / runs / part_nodes;
  const size_t bytes = vox_scalar_bytes(to.scalar);
  TRY(C(be)->vec->set(IN(be), &to, 0));
  for (size_t q = 0; q < runs; q++) {
    vox_vec at = to, run = from;
    at.raw = (char *)to.raw +
             (q * whole_nodes + slabs->offset / (size_t)m->dpn) * per_node * bytes;
    run.raw = (char *)from.raw + q * part_nodes * per_node * bytes;
    at.n = run.n = part_nodes * per_node;
    TRY(C(be)->vec->copy(IN(be), &at, &run));
  }
  if (!m->host) return vox_mpi_halo_allreduce_sum(m->halo, &to);
  const MPI_Datatype type = to.scalar == VOX_DOUBLE ? MPI_DOUBLE : MPI_FLOAT;
  for (size_t done = 0; done < to.n;) {
    const size_t chunk = to.n - done < (size_t)1 << 26 ? to.n - done : (size_t)1 << 26;
    MPI_Allreduce(MPI_IN_PLACE, (char *)to.raw + done * bytes, (int)chunk, type, MPI_SUM,
                  m->comm);
    done += chunk;
  }
  return VOX_OK;
}

/* The whole stencil of a split level on every rank (the next level's
 * Galerkin product where it is gathered and does not nest, a direct solve,
 * a download): through host memory, as the level's own values may be
 * packed for its products. */
static vox_status gather_stencil(vox_backend *be, mpi_stencil *st) {
  impl *m = M(be);
  const level *lv = &m->lv[st->level];
  if (!st->whole)
    TRY(C(be)->mg->stencil_create(IN(be), &lv->global, m->dpn, VOX_PRECISION_DOUBLE, &st->whole));
  return sum_slabs_on_host(be, &lv->nodes, st->local, st->whole);
}

/* The slab's part of a level gathered from_slabs, made on first use. */
static vox_status slab_stencil(vox_backend *be, mpi_stencil *st) {
  if (st->slab) return VOX_OK;
  impl *m = M(be);
  return C(be)->mg->stencil_create(IN(be), &m->lv[st->level].slab_grid, m->dpn, st->precision,
                                   &st->slab);
}

/* Level 1 of the fine operator. Split: the slab's elements (whose identity
 * rows of fixed interface dofs only the slab below counts:
 * first_layer_shared). Gathered: the whole grid's operator at the gathered
 * moduli. */
static vox_status galerkin_operator(vox_backend *be, vox_operator *o, vox_stencil *s) {
  impl *m = M(be);
  mpi_operator *op = OP(o);
  mpi_stencil *st = ST(s);
  if (st->level != 1)
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT, "multigrid levels do not nest");
  if (m->lv[1].split) return C(be)->mg->galerkin_operator(IN(be), op->local, st->local);
  if (m->lv[1].from_slabs) {
    TRY(slab_stencil(be, st));
    TRY(C(be)->mg->galerkin_operator(IN(be), op->local, st->slab));
    return sum_slabs(be, &m->lv[1].slab, st->slab, st->local);
  }
  if (!op->whole) {
    IN(be)->kernel = be->kernel;
    TRY(C(be)->op->create(IN(be), &op->whole_desc, &op->whole));
  }
  if (!op->moduli) return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT, "no moduli set");
  const vox_vec moduli = loc(op->moduli);
  TRY(gather_into(be, &m->elements, &moduli, &op->whole_moduli));
  TRY(C(be)->op->set_moduli(IN(be), op->whole, &op->whole_moduli));
  return C(be)->mg->galerkin_operator(IN(be), op->whole, st->local);
}

static vox_status galerkin_stencil(vox_backend *be, vox_stencil *f, vox_stencil *c) {
  impl *m = M(be);
  mpi_stencil *fine = ST(f), *coarse = ST(c);
  if (m->lv[coarse->level].split || !m->lv[fine->level].split)
    return C(be)->mg->galerkin_stencil(IN(be), fine->local, coarse->local);
  if (m->lv[coarse->level].from_slabs) {
    TRY(slab_stencil(be, coarse));
    TRY(C(be)->mg->galerkin_stencil(IN(be), fine->local, coarse->slab));
    return sum_slabs(be, &m->lv[coarse->level].slab, coarse->slab, coarse->local);
  }
  TRY(gather_stencil(be, fine));
  return C(be)->mg->galerkin_stencil(IN(be), fine->whole, coarse->local);
}

static vox_status stencil_upload(vox_backend *be, vox_stencil *s, const double *host) {
  if (ST(s)->level >= 0 && M(be)->lv[ST(s)->level].split) return unsupported(be, "uploading a split stencil");
  return C(be)->mg->stencil_upload(IN(be), ST(s)->local, host);
}

static vox_status stencil_download(vox_backend *be, const vox_stencil *s, double *host) {
  mpi_stencil *st = ST((vox_stencil *)(uintptr_t)s);
  if (st->level < 0 || !M(be)->lv[st->level].split) return C(be)->mg->stencil_download(IN(be), st->local, host);
  TRY(gather_stencil(be, st));
  return C(be)->mg->stencil_download(IN(be), st->whole, host);
}

static vox_status stencil_apply(vox_backend *be, vox_stencil *s, const vox_vec *x, vox_vec *y) {
  mpi_stencil *st = ST(s);
  LOCAL1(x);
  LOCAL1(y);
  TRY(C(be)->mg->stencil_apply(IN(be), st->local, &x_, &y_));
  return exchange(be, &M(be)->lv[st->level].nodes, &y_, NULL);
}

/* A smoothing step on a split level in the backend's one pass over the
 * slab, whose shared layers then hold d_own = alpha D^-1 (b - y_own) +
 * beta d_old with only the slab's part y_own of A x there. The neighbour's
 * d on the same layer holds its part y_nb, so the step's d is
 * d_own + d_nb - (alpha D^-1 b + beta d_old), and x_out = x + d: the old d
 * of the shared layers is kept before the pass, the neighbours' d added by
 * the exchange (d_own + d_nb on one rank, d_nb + d_own on the other: the
 * same bits), the rest the same operations on the same values on both.
 * Against the product, exchange and update of three passes: 0.64 against
 * 0.72 ms a step on level 1 of the 512 x 256 x 256 cantilever on two
 * H200s. */
static vox_status split_smooth(vox_backend *be, level *lv, vox_stencil *local, const vox_vec *b,
                               const vox_vec *x, const vox_vec *inv_diag, double alpha,
                               double beta, vox_vec *d, vox_vec *x_out) {
  impl *m = M(be);
  const vox_vector_ops *v = C(be)->vec;
  const size_t u = lv->nodes.unit;
  const int side[2] = {m->rank > 0, m->rank < m->size - 1};
  const size_t at[2] = {0, d->n - u};
  TRY(need(be, &lv->edges, 4 * u));
  for (int k = 0; k < 2; k++)
    if (side[k]) {
      vox_vec old = part(&lv->edges, (size_t)k * u, u);
      const vox_vec layer = part(d, at[k], u);
      TRY(v->copy(IN(be), &old, &layer));
    }
  TRY(C(be)->mg->stencil_smooth(IN(be), local, b, x, inv_diag, alpha, beta, d, x_out));
  vox_vec first = part(d, 0, u), last = part(d, at[1], u);
  vox_vec from_below = part(&lv->edges, 2 * u, u), from_above = part(&lv->edges, 3 * u, u);
  TRY(vox_mpi_halo_swap_add(m->halo, side[0], side[1], &first, &last, &from_below, &from_above,
                            NULL, NULL));
  for (int k = 0; k < 2; k++)
    if (side[k]) {
      vox_vec dk = part(d, at[k], u), xo = part(x_out, at[k], u);
      vox_vec t = part(&lv->edges, (size_t)(2 + k) * u, u); /* free again */
      const vox_vec old = part(&lv->edges, (size_t)k * u, u), bk = part(b, at[k], u),
                    wk = part(inv_diag, at[k], u), xk = part(x, at[k], u);
      TRY(v->mult(IN(be), &t, &wk, &bk));
      TRY(v->axpy(IN(be), &dk, -alpha, &t));
      TRY(v->axpy(IN(be), &dk, -beta, &old));
      TRY(v->copy(IN(be), &xo, &xk));
      TRY(v->axpy(IN(be), &xo, 1, &dk));
    }
  return VOX_OK;
}

static vox_status stencil_smooth(vox_backend *be, vox_stencil *s, const vox_vec *b,
                                 const vox_vec *x, const vox_vec *inv_diag, double alpha,
                                 double beta, vox_vec *d, vox_vec *x_out) {
  mpi_stencil *st = ST(s);
  level *lv = &M(be)->lv[st->level];
  LOCAL1(x);
  LOCAL1(b);
  LOCAL1(inv_diag);
  LOCAL1(d);
  LOCAL1(x_out);
  if (!parallel(M(be), &lv->nodes)) /* the backend's fused step */
    return C(be)->mg->stencil_smooth(IN(be), st->local, &b_, &x_, &inv_diag_, alpha, beta, &d_,
                                     &x_out_);
  return split_smooth(be, lv, st->local, &b_, &x_, &inv_diag_, alpha, beta, &d_, &x_out_);
}

static vox_status stencil_residual(vox_backend *be, vox_stencil *s, const vox_vec *b,
                                   const vox_vec *x, vox_vec *r) {
  if (!parallel(M(be), &M(be)->lv[ST(s)->level].nodes)) {
    LOCAL1(b);
    LOCAL1(x);
    LOCAL1(r);
    return C(be)->mg->stencil_residual(IN(be), ST(s)->local, &b_, &x_, &r_);
  }
  TRY(stencil_apply(be, s, x, r));
  LOCAL1(r);
  LOCAL1(b);
  return C(be)->vec->xpay(IN(be), &r_, -1, &b_);
}

static vox_status stencil_diagonal(vox_backend *be, vox_stencil *s, vox_vec *d) {
  mpi_stencil *st = ST(s);
  LOCAL1(d);
  TRY(C(be)->mg->stencil_diagonal(IN(be), st->local, &d_));
  return exchange(be, &M(be)->lv[st->level].nodes, &d_, NULL);
}

/* The Lanczos steps of a level's smoother bound (backend_ops.h): on a
 * gathered level the ranks' backend's own, with its scalars on the device
 * (every rank the same steps, no communication); on a split level the
 * steps of multigrid.c's loop, each dot product summed over the ranks. */
static vox_status stencil_lanczos(vox_backend *be, vox_stencil *s, const vox_vec *inv_diag,
                                  uint64_t seed, int steps, vox_vec *r, vox_vec *z, vox_vec *p,
                                  vox_vec *q, double *alpha, double *beta, int *done) {
  mpi_stencil *st = ST(s);
  const vox_multigrid_ops *mg = C(be)->mg;
  const int split = st->level >= 0 && parallel(M(be), &M(be)->lv[st->level].nodes);
  if (!split && mg->stencil_lanczos) {
    LOCAL1(inv_diag);
    LOCAL1(r);
    LOCAL1(z);
    LOCAL1(p);
    LOCAL1(q);
    return mg->stencil_lanczos(IN(be), st->local, &inv_diag_, seed, steps, &r_, &z_, &p_, &q_,
                               alpha, beta, done);
  }
  double rz;
  *done = 0;
  TRY(vec_random(be, r, seed, 0));
  TRY(vec_mult(be, z, r, inv_diag));
  TRY(vec_copy(be, p, z));
  TRY(vec_dot(be, r, z, &rz));
  while (*done < steps) {
    double pq, rz_new;
    TRY(stencil_apply(be, s, p, q));
    TRY(vec_dot(be, p, q, &pq));
    if (!(pq > 0) || !(rz > 0)) break; /* converged to rounding, or breakdown */
    alpha[*done] = rz / pq;
    TRY(vec_axpy(be, r, -alpha[*done], q));
    TRY(vec_mult(be, z, r, inv_diag));
    TRY(vec_dot(be, r, z, &rz_new));
    beta[*done] = rz_new / rz;
    TRY(vec_xpay(be, p, beta[*done], z));
    rz = rz_new;
    (*done)++;
  }
  return VOX_OK;
}

/* A backend's reduced storage of a mixed level given up (fem.c, after a
 * solve that broke down), on the slab's part and a gathered whole. */
static vox_status stencil_full_storage(vox_backend *be, vox_stencil *s, int *was) {
  mpi_stencil *st = ST(s);
  *was = 0;
  if (!C(be)->mg->stencil_full_storage) return VOX_OK;
  int a = 0, b = 0;
  TRY(C(be)->mg->stencil_full_storage(IN(be), st->local, &a));
  if (st->whole) TRY(C(be)->mg->stencil_full_storage(IN(be), st->whole, &b));
  *was = a || b;
  return VOX_OK;
}

static int stencil_mixed_dof_bytes(const vox_backend *be, const vox_grid *grid) {
  return C(be)->mg->stencil_mixed_dof_bytes
             ? C(be)->mg->stencil_mixed_dof_bytes(IN(be), grid)
             : 0;
}

static vox_status stencil_factor(vox_backend *be, vox_stencil *s) {
  mpi_stencil *st = ST(s);
  if (st->level < 0 || !M(be)->lv[st->level].split)
    return C(be)->mg->stencil_factor(IN(be), st->local);
  TRY(gather_stencil(be, st));
  return C(be)->mg->stencil_factor(IN(be), st->whole);
}

static vox_status stencil_solve(vox_backend *be, vox_stencil *s, const vox_vec *b, vox_vec *x) {
  impl *m = M(be);
  mpi_stencil *st = ST(s);
  LOCAL1(b);
  LOCAL1(x);
  if (st->level < 0) return C(be)->mg->stencil_solve(IN(be), st->local, &b_, &x_);
  level *lv = &m->lv[st->level];
  if (!lv->split) return C(be)->mg->stencil_solve(IN(be), st->local, &b_, &x_);
  TRY(need(be, &lv->whole2, lv->nodes.global_n));
  TRY(gather_into(be, &lv->nodes, &b_, &lv->whole));
  TRY(C(be)->mg->stencil_solve(IN(be), st->whole, &lv->whole, &lv->whole2));
  const vox_vec slab = part(&lv->whole2, lv->nodes.offset, lv->nodes.local_n);
  return C(be)->vec->copy(IN(be), &x_, &slab);
}

/* R r of a split level's slab into `out` (a vector of the coarse slab),
 * the interface below (the lower rank's) left out: that layer of r is put
 * aside, zeroed for the restriction and put back (cheaper than a copy of
 * the slab without it). */
static vox_status restrict_slab(vox_backend *be, level *lf, int dpn, const vox_vec *r,
                                vox_vec *out) {
  const size_t below = lf->nodes.owned_begin;
  if (below == 0) return C(be)->mg->restrict_residual(IN(be), &lf->local, dpn, r, out);
  TRY(need(be, &lf->aside, below));
  vox_vec layer = part(r, 0, below);
  TRY(C(be)->vec->copy(IN(be), &lf->aside, &layer));
  TRY(C(be)->vec->set(IN(be), &layer, 0));
  TRY(C(be)->mg->restrict_residual(IN(be), &lf->local, dpn, r, out));
  return C(be)->vec->copy(IN(be), &layer, &lf->aside);
}

/* Restriction from level l. Both split: each rank restricts its slab and
 * the exchange adds the coarse interfaces. Into a level gathered
 * from_slabs: the same into the coarse slab, then its owned layers
 * gathered. Into another gathered level: from the whole fine residual,
 * gathered. */
static vox_status restrict_residual(vox_backend *be, const vox_grid *fine, int dpn,
                                    const vox_vec *r_fine, vox_vec *r_coarse) {
  impl *m = M(be);
  const int l = level_of(m, fine);
  if (l < 0 || l + 1 >= m->n_levels)
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT, "multigrid levels do not nest");
  level *lf = &m->lv[l], *lc = &m->lv[l + 1];
  LOCAL1(r_fine);
  LOCAL1(r_coarse);
  if (!lf->split)
    return C(be)->mg->restrict_residual(IN(be), &lf->global, dpn, &r_fine_, &r_coarse_);
  if (lc->split) {
    TRY(restrict_slab(be, lf, dpn, &r_fine_, &r_coarse_));
    return exchange(be, &lc->nodes, &r_coarse_, NULL);
  }
  if (lc->from_slabs) {
    TRY(need(be, &lc->slab_part, lc->slab.local_n));
    TRY(restrict_slab(be, lf, dpn, &r_fine_, &lc->slab_part));
    TRY(exchange(be, &lc->slab, &lc->slab_part, NULL));
    return gather_into(be, &lc->slab, &lc->slab_part, &r_coarse_);
  }
  TRY(gather_into(be, &lf->nodes, &r_fine_, &lf->whole));
  return C(be)->mg->restrict_residual(IN(be), &lf->global, dpn, &lf->whole, &r_coarse_);
}

/* Prolongation to level l: split levels interpolate their slab (the
 * interface nodes from the same coarse values on both ranks), from a split
 * level or the slab of one gathered from_slabs; from another gathered
 * level, the whole prolongation and each rank its slab. */
static vox_status prolong_add(vox_backend *be, const vox_grid *fine, int dpn,
                              const vox_vec *x_coarse, vox_vec *x_fine) {
  impl *m = M(be);
  const int l = level_of(m, fine);
  if (l < 0 || l + 1 >= m->n_levels)
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT, "multigrid levels do not nest");
  level *lf = &m->lv[l], *lc = &m->lv[l + 1];
  LOCAL1(x_coarse);
  LOCAL1(x_fine);
  if (lc->split || !lf->split)
    return C(be)->mg->prolong_add(IN(be), &lf->local, dpn, &x_coarse_, &x_fine_);
  if (lc->from_slabs) {
    const vox_vec slab = part(&x_coarse_, lc->slab.offset, lc->slab.local_n);
    return C(be)->mg->prolong_add(IN(be), &lf->local, dpn, &slab, &x_fine_);
  }
  TRY(need(be, &lf->whole, lf->nodes.global_n));
  TRY(C(be)->vec->set(IN(be), &lf->whole, 0));
  TRY(C(be)->mg->prolong_add(IN(be), &lf->global, dpn, &x_coarse_, &lf->whole));
  const vox_vec slab = part(&lf->whole, lf->nodes.offset, lf->nodes.local_n);
  return C(be)->vec->axpy(IN(be), &x_fine_, 1, &slab);
}
/* ---- the bone's sparse storage ---------------------------------------------
 *
 * The sparse solve (sparse_solve.c) runs on this backend as on one: its
 * levels come as whole descriptions (sparse_ops.h), its vectors by their
 * whole sizes. Level 0, the bone's elements and nodes, is split like the
 * box: each rank keeps the elements of its slab's element layers and the
 * nodes of its node layers (a contiguous range of the level's numbering,
 * which is in box order, layer by layer), the interface node layers on
 * both ranks, consistent (the product's parts added by the exchange, the
 * fixed dofs' identity rows not). The coarse levels, an eighth of the
 * fine one's size and less, are whole on every rank and computed
 * redundantly, as the full storage's gathered levels: the restriction from
 * level 0 restricts each rank's owned fine nodes into the whole coarse
 * vector, and the ranks' parts (each over the coarse nodes its nodes' parent
 * elements reach) are added up in rank order on every rank; the
 * prolongation interpolates each slab from the whole coarse vector, the
 * shared layers then taken from the rank below (a GPU's redundant coarse
 * levels sum with atomics, and may round apart on the ranks). The coarsest
 * stencil is whole too. The inverse diagonal and blocks of level 0 come
 * from the slab and one element layer of each neighbour (the interface
 * nodes' whole sums before they are inverted), then the rank below's values
 * of the shared layer on both ranks. In mixed precision the V-cycle's
 * vectors are float and the blocks bfloat16 as on one process; their
 * interface layers and the restriction's parts travel and are summed in
 * double (sparse_layers_in_double), then rounded once, alike on every
 * rank. The smoother's direction has a vector of its own (one process
 * keeps it in the second half of CG's q, a view the MPI backend's vectors
 * cannot give: sparse_ops.h, `views`). */

typedef struct mpi_sparse_level {
  vox_sparse_level *local; /* the slab's (level 0) or the whole level */
  const vox_sparse_ops *inner; /* the ranks' backend's table */
  int split;
  int level;               /* in the hierarchy */
  size_t n_nodes;          /* the whole level's */
  /* a split level (level 0, and level 1 where the slabs nest) */
  size_t below, above;     /* nodes of the interface layers (0 without a neighbour) */
  interface_masks masks;   /* free dofs of the interface layers */
  /* a split level whose next level is split too: the interface dofs whose
   * parent element is the neighbour's (1, else 0), restricted and
   * prolonged by that neighbour (sparse_zero_elsewhere, sparse_take_elsewhere) */
  interface_masks elsewhere;
  vox_vec recv;            /* the neighbours' interface parts: below, then above */
  vox_vec stage;           /* a float vector's interface layers in double (6 a node) */
  /* The slab's first and last element layer (where a neighbour shares a
   * node layer with bone: vox_mpi_options.overlap), whose products give
   * the slab's part of the shared layers while the slab's own product
   * runs (sparse_apply_beside); their products in edge_y (3 doubles a node,
   * read in the product's precision) */
  vox_sparse_level *edge[2];
  size_t edge_nodes[2];
  vox_vec edge_y[2];
  vox_sparse_level *extended; /* the slab and a layer of each neighbour, until the diagonals */
  size_t extended_offset;  /* the slab's first node in it */
  size_t extended_nodes;
  uint64_t *owned_parent;  /* the owned nodes' parent words, until the coarse level */
  size_t n_owned;
  /* the restriction's parts: rank q's coarse nodes [reach_at[q], + reach[q]) */
  int *reach, *reach_at;
  size_t reach_total;
  double *gathered, *whole; /* host memory of the sums */
  vox_vec gathered_device;  /* the parts on the device (NCCL) */
  vox_vec whole_double;     /* a float coarse vector's sum, through MPI */
  size_t coarse_nodes;
} mpi_sparse_level;

static mpi_sparse_level *SL(vox_sparse_level *l) { return (mpi_sparse_level *)(void *)l; }
static const vox_sparse_ops *CS(const vox_backend *be) { return M(be)->in->ops->sparse; }

/* A level's description for element layers [ka, kb) of `d`, node layers
 * [ka, kb]: indices from the range's first node and element; the arrays the
 * ranks' backend copies are views of d's where they need no change, the
 * others in *storage (one block, freed by the caller). */
static vox_status carve(vox_backend *be, const vox_sparse_level_desc *d, int64_t ka, int64_t kb,
                        int parents, vox_sparse_level_desc *out, void **storage) {
  const size_t e0 = d->element_layer_start[ka], e1 = d->element_layer_start[kb];
  const size_t n0 = d->node_layer_start[ka], n1 = d->node_layer_start[kb + 1];
  const size_t ne = e1 - e0, layers = (size_t)(kb - ka);
  const size_t x1 = d->element_nodes_x1 ? 4 * ne : 0;
  const size_t bytes = (4 * ne + x1) * sizeof(int32_t) + (2 * layers + 3) * sizeof(size_t);
  char *p = malloc(bytes ? bytes : 1);
  *storage = p;
  if (!p) return vox_error(be->ctx, VOX_ERR_NO_MEMORY, "out of memory for a sparse slab");
  size_t *el = (size_t *)(void *)p, *nl = el + layers + 1;
  int32_t *en = (int32_t *)(void *)(nl + layers + 2), *ex = en + 4 * ne;
  for (size_t i = 0; i <= layers; i++) el[i] = d->element_layer_start[ka + (int64_t)i] - e0;
  for (size_t i = 0; i <= layers + 1; i++) nl[i] = d->node_layer_start[ka + (int64_t)i] - n0;
  /* (the slab and the extended level of a 550^3 bone: 60 M indices each) */
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < 4 * ne; i++) en[i] = d->element_nodes[4 * e0 + i] - (int32_t)n0;
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < x1; i++) ex[i] = d->element_nodes_x1[4 * e0 + i] - (int32_t)n0;
  *out = *d;
  out->n_nodes = n1 - n0;
  out->n_elements = ne;
  out->element_nodes = en;
  out->element_nodes_x1 = x1 ? ex : NULL;
  out->material = d->material ? d->material + e0 : NULL;
  out->modulus = d->modulus ? d->modulus + e0 : NULL;
  out->node_fixed = d->node_fixed + n0;
  out->parent = parents && d->parent ? d->parent + n0 : NULL;
  out->element_layer_start = el;
  out->node_layer_start = nl;
  out->nz = kb - ka;
  return VOX_OK;
}

static void sparse_level_destroy(vox_backend *be, vox_sparse_level *sl) {
  mpi_sparse_level *l = SL(sl);
  if (!l) return;
  impl *m = M(be);
  if (l->local) CS(be)->level_destroy(IN(be), l->local);
  if (l->extended) CS(be)->level_destroy(IN(be), l->extended);
  for (int side = 0; side < 2; side++)
    if (l->edge[side]) CS(be)->level_destroy(IN(be), l->edge[side]);
  vox_vec *v[] = {&l->masks.below,     &l->masks.above,     &l->recv,
                  &l->stage,           &l->gathered_device, &l->whole_double,
                  &l->elsewhere.below, &l->elsewhere.above, &l->edge_y[0],
                  &l->edge_y[1]};
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
    if (v[i]->data) C(be)->vec->destroy(IN(be), v[i]);
  free(l->owned_parent);
  free(l->reach);
  free(l->reach_at);
  free(l->gathered);
  free(l->whole);
  for (int k = 0; k < SPARSE_SPLIT_MAX; k++)
    if (m->sparse_split[k] == l) m->sparse_split[k] = NULL;
  free(l);
}

/* Rank q's element layers [a, b) on split level d->level: level 0's
 * slabs, halved on each level below (whose slabs nest: sparse_splits). */
static void sparse_slab(const impl *m, const vox_sparse_level_desc *d, int q, int64_t *a,
                        int64_t *b) {
  *a = m->first[q] >> d->level;
  *b = q == m->size - 1 ? d->nz : m->first[q + 1] >> d->level;
}

/* Whether level `l` (1 or more) splits too, from its element layer
 * starts `les` (of the level above's description or its own): where every
 * slab boundary of level 0 divides by 2^l (the slabs nest), every rank's
 * slab of level l holds coarse elements, l < SPARSE_SPLIT_MAX and level l
 * is not the coarsest. The same on every rank; a level that splits implies
 * that the levels above it do. The levels whole on every rank then start
 * one below. */
static int sparse_splits(const impl *m, int l, int n_levels, const size_t *les) {
  if (l == 0) return 1;
  if (m->size == 1 || l >= SPARSE_SPLIT_MAX || l >= n_levels - 1 || !les) return 0;
  int64_t nz = m->lv[0].global.nz;
  for (int k = 0; k < l; k++) nz = (nz + 1) / 2; /* vox_grid_coarsen */
  const int64_t unit = (int64_t)1 << l;
  for (int q = 0; q < m->size; q++) {
    const int64_t a = m->first[q], b = m->first[q + 1];
    if (a % unit || (q < m->size - 1 && b % unit)) return 0;
    const int64_t al = a >> l, bl = q == m->size - 1 ? nz : b >> l;
    if (bl <= al || les[bl] <= les[al]) return 0;
  }
  return 1;
}

/* The layouts of a split level's vectors, `unit` entries a node (3, or the
 * inverse blocks' 6): each rank's node range, the interface below the
 * lower rank's. */
static vox_status sparse_layout(vox_context *ctx, impl *m, const vox_sparse_level_desc *d,
                                size_t unit, layout *l) {
  layout_free(l);
  memset(l, 0, sizeof *l);
  l->unit = unit;
  l->split = 1;
  l->type = MPI_DATATYPE_NULL;
  TRY(layout_types(ctx, m, l));
  const size_t *nls = d->node_layer_start;
  l->global_n = unit * d->n_nodes;
  int64_t a, b;
  sparse_slab(m, d, m->rank, &a, &b);
  l->offset = unit * nls[a];
  l->local_n = unit * (nls[b + 1] - nls[a]);
  l->owned_begin = m->rank > 0 ? unit * (nls[a + 1] - nls[a]) : 0;
  for (int q = 0; q < m->size; q++) {
    sparse_slab(m, d, q, &a, &b);
    const size_t own = q > 0 ? nls[a + 1] : 0, end = nls[b + 1];
    l->displs[q] = (int)own;
    l->counts[q] = (int)(end - own);
  }
  return VOX_OK;
}

/* The slab's parent words (nodes [n0, n1) of `d`) numbering the next
 * level's slab of elements [ce0, ce1) from 0; a word whose element lies
 * outside (the neighbour's, on an interface layer only) names element 0,
 * which its node's zero residual and overwritten correction leave
 * unchanged. */
static void sparse_local_parents(const vox_sparse_level_desc *d, size_t n0, size_t n1,
                                 size_t ce0, size_t ce1, uint64_t *out) {
#pragma omp parallel for schedule(static)
  for (size_t i = n0; i < n1; i++) {
    const uint64_t w = d->parent[i], e = w >> VOX_SPARSE_POS_BITS;
    const int pos = (int)(w & ((1u << VOX_SPARSE_POS_BITS) - 1));
    out[i - n0] = e >= ce0 && e < ce1 ? vox_sparse_parent_wide(e - ce0, pos)
                                      : vox_sparse_parent_wide(0, pos);
  }
}

/* The masks of the interface dofs whose parent element lies outside
 * [ce0, ce1) (l->elsewhere), nodes [first[k], first[k] + side[k]). */
static vox_status sparse_elsewhere_masks(vox_backend *be, mpi_sparse_level *l,
                                         const vox_sparse_level_desc *d, const size_t first[2],
                                         size_t ce0, size_t ce1) {
  const size_t side[2] = {l->below, l->above};
  vox_vec *mask[2] = {&l->elsewhere.below, &l->elsewhere.above};
  for (int k = 0; k < 2; k++) {
    if (side[k] == 0) continue;
    double *host = malloc(3 * side[k] * sizeof *host);
    if (!host) return vox_error(be->ctx, VOX_ERR_NO_MEMORY, "out of memory");
    for (size_t i = 0; i < 3 * side[k]; i++) {
      const uint64_t e = d->parent[first[k] + i / 3] >> VOX_SPARSE_POS_BITS;
      host[i] = e >= ce0 && e < ce1 ? 0 : 1;
    }
    vox_status s = C(be)->vec->create(IN(be), 3 * side[k], VOX_DOUBLE, mask[k]);
    if (s == VOX_OK) s = C(be)->vec->upload(IN(be), mask[k], host);
    free(host);
    TRY(s);
  }
  return VOX_OK;
}

/* A split level (0, or a level below: sparse_splits) on the rank's slab (and,
 * until the diagonals, the slab with a layer of each neighbour). Its
 * parent words number the next level's slab where that is split too. */
static vox_status sparse_split_create(vox_backend *be, const vox_sparse_level_desc *d,
                                      mpi_sparse_level *l) {
  impl *m = M(be);
  if (d->n_nodes > (size_t)INT_MAX ||
      (d->level == 0 && d->nz != m->lv[0].global.nz))
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT,
                     "the sparse level's box is not the one the MPI backend was made for");
  int64_t a, b;
  sparse_slab(m, d, m->rank, &a, &b);
  const int lower = m->rank > 0, upper = m->rank < m->size - 1;
  const size_t *nls = d->node_layer_start;
  l->split = 1;
  l->below = lower ? nls[a + 1] - nls[a] : 0;
  l->above = upper ? nls[b + 1] - nls[b] : 0;
  TRY(sparse_layout(be->ctx, m, d, 3, &m->sparse3[d->level]));
  TRY(sparse_layout(be->ctx, m, d, 6, &m->sparse6[d->level]));
  const int next_split = d->level + 1 < m->sparse_split_levels;
  /* the next level's slab of elements, where it is split */
  const size_t ce0 = next_split ? d->parent_element_layer_start[a / 2] : 0;
  const size_t ce1 = next_split ? d->parent_element_layer_start[upper ? b / 2 : (d->nz + 1) / 2]
                                : 0;
  void *storage = NULL;
  uint64_t *parents = NULL; /* numbering the next level's slab: the ranks' backend narrows them */
  vox_sparse_level_desc slab;
  vox_status s = carve(be, d, a, b, 1, &slab, &storage);
  if (s == VOX_OK && next_split) {
    parents = malloc((slab.n_nodes ? slab.n_nodes : 1) * sizeof *parents);
    if (!parents) s = vox_error(be->ctx, VOX_ERR_NO_MEMORY, "out of memory");
    else sparse_local_parents(d, nls[a], nls[b + 1], ce0, ce1, parents);
    slab.parent = parents;
  }
  if (s == VOX_OK) s = CS(be)->level_create(IN(be), &slab, &l->local);
  free(parents);
  free(storage);
  /* the slab with the neighbours' adjacent element layers */
  const int64_t ea = a - lower, eb = b + upper;
  if (s == VOX_OK) s = carve(be, d, ea, eb, 0, &slab, &storage);
  if (s == VOX_OK) {
    l->extended_offset = nls[a] - nls[ea];
    l->extended_nodes = slab.n_nodes;
    s = CS(be)->level_create(IN(be), &slab, &l->extended);
  }
  free(storage);
  /* the edge layers, where the shared node layer has bone */
  const size_t shared[2] = {l->below, l->above};
  const int beside = overlap_sparse(m, 3 * (l->below > l->above ? l->below : l->above));
  for (int side = 0; side < 2 && s == VOX_OK && beside; side++) {
    if (shared[side] == 0) continue;
    const int64_t ka = side == 0 ? a : b - 1;
    s = carve(be, d, ka, ka + 1, 0, &slab, &storage);
    if (s == VOX_OK) {
      l->edge_nodes[side] = slab.n_nodes;
      s = CS(be)->level_create(IN(be), &slab, &l->edge[side]);
    }
    free(storage);
    if (s == VOX_OK) s = C(be)->vec->create(IN(be), 3 * slab.n_nodes, VOX_DOUBLE, &l->edge_y[side]);
  }
  /* the free dofs of the interface layers, and the neighbours' parts */
  const size_t side[2] = {l->below, l->above}, first[2] = {nls[a], nls[b]};
  vox_vec *mask[2] = {&l->masks.below, &l->masks.above};
  for (int k = 0; k < 2 && s == VOX_OK; k++) {
    if (side[k] == 0) continue;
    double *host = malloc(3 * side[k] * sizeof *host);
    if (!host) s = vox_error(be->ctx, VOX_ERR_NO_MEMORY, "out of memory");
    for (size_t i = 0; host && i < 3 * side[k]; i++)
      host[i] = d->node_fixed[first[k] + i / 3] >> (i % 3) & 1 ? 0 : 1;
    if (s == VOX_OK) s = C(be)->vec->create(IN(be), 3 * side[k], VOX_DOUBLE, mask[k]);
    if (s == VOX_OK) s = C(be)->vec->upload(IN(be), mask[k], host);
    free(host);
  }
  if (s == VOX_OK && l->below + l->above > 0)
    s = C(be)->vec->create(IN(be), 3 * (l->below + l->above), VOX_DOUBLE, &l->recv);
  if (s == VOX_OK && next_split) s = sparse_elsewhere_masks(be, l, d, first, ce0, ce1);
  /* the owned nodes' parents, for the restriction's reach into a whole
   * next level */
  const size_t own = nls[a] + l->below, end = nls[b + 1];
  l->n_owned = end - own;
  if (s == VOX_OK && d->parent && !next_split) {
    l->owned_parent = malloc((l->n_owned ? l->n_owned : 1) * sizeof *l->owned_parent);
    if (!l->owned_parent) s = vox_error(be->ctx, VOX_ERR_NO_MEMORY, "out of memory");
    else memcpy(l->owned_parent, d->parent + own, l->n_owned * sizeof *l->owned_parent);
  }
  return s;
}

/* The restriction's reach (level 0 into the whole level 1, `c`): the coarse
 * nodes of the owned nodes' parent elements, a range per rank. */
static vox_status sparse_reach(vox_backend *be, mpi_sparse_level *f,
                               const vox_sparse_level_desc *c) {
  impl *m = M(be);
  int64_t lo = INT64_MAX, hi = -1;
#pragma omp parallel for schedule(static) reduction(min : lo) reduction(max : hi)
  for (size_t i = 0; i < f->n_owned; i++) {
    int32_t node[8];
    vox_sparse_corners(c->element_nodes, c->element_nodes_x1,
                       (size_t)(f->owned_parent[i] >> VOX_SPARSE_POS_BITS), node);
    for (int k = 0; k < 8; k++) lo = node[k] < lo ? node[k] : lo, hi = node[k] > hi ? node[k] : hi;
  }
  int mine[2] = {hi >= lo ? (int)lo : 0, hi >= lo ? (int)(hi + 1 - lo) : 0};
  f->reach = calloc((size_t)m->size, sizeof *f->reach);
  f->reach_at = calloc((size_t)m->size, sizeof *f->reach_at);
  int *both = calloc(2 * (size_t)m->size, sizeof *both);
  f->coarse_nodes = c->n_nodes;
  f->whole = malloc((m->host ? 1 : 3 * c->n_nodes) * sizeof *f->whole);
  if (!f->reach || !f->reach_at || !both || !f->whole) {
    free(both);
    return vox_error(be->ctx, VOX_ERR_NO_MEMORY, "out of memory");
  }
  MPI_Allgather(mine, 2, MPI_INT, both, 2, MPI_INT, m->comm);
  f->reach_total = 0;
  for (int q = 0; q < m->size; q++) {
    f->reach_at[q] = both[2 * q];
    f->reach[q] = both[2 * q + 1];
    f->reach_total += (size_t)f->reach[q];
  }
  free(both);
  free(f->owned_parent);
  f->owned_parent = NULL;
  f->gathered = malloc((3 * f->reach_total + 1) * sizeof *f->gathered);
  if (!f->gathered) return vox_error(be->ctx, VOX_ERR_NO_MEMORY, "out of memory");
  return VOX_OK;
}

static vox_status sparse_level_create(vox_backend *be, const vox_sparse_level_desc *d,
                                      vox_sparse_level **out) {
  impl *m = M(be);
  *out = NULL;
  mpi_sparse_level *l = calloc(1, sizeof *l);
  if (!l) return vox_error(be->ctx, VOX_ERR_NO_MEMORY, "out of memory");
  l->n_nodes = d->n_nodes;
  l->inner = CS(be);
  l->level = d->level;
  vox_status s = VOX_OK;
  /* the solve makes level 0 first, then the coarser ones in order */
  if (d->level == 0) m->sparse_split_levels = 1;
  if (d->level < 0 || d->level >= d->n_levels || (d->level > 0 && !m->sparse_split[0])) {
    s = vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT,
                  "the MPI backend's sparse levels are made from level 0 on, in order");
  } else if (d->level < m->sparse_split_levels) {
    /* whether the next level splits too, before this one numbers its parents */
    if (sparse_splits(m, d->level + 1, d->n_levels, d->parent_element_layer_start))
      m->sparse_split_levels = d->level + 2;
    m->sparse_split[d->level] = l;
    s = sparse_split_create(be, d, l);
  } else {
    s = CS(be)->level_create(IN(be), d, &l->local);
    for (int k = 0; k < m->sparse_split_levels && s == VOX_OK; k++)
      if (m->sparse_split[k] && d->n_nodes == m->sparse_split[k]->n_nodes)
        s = vox_error(be->ctx, VOX_ERR_UNSUPPORTED,
                      "a coarse level of the sparse storage has as many nodes as a split one, "
                      "which the MPI backend tells apart by size");
    mpi_sparse_level *f = m->sparse_split[m->sparse_split_levels - 1];
    if (s == VOX_OK && f && !f->reach && f->owned_parent) s = sparse_reach(be, f, d);
  }
  if (s != VOX_OK) {
    sparse_level_destroy(be, (vox_sparse_level *)(void *)l);
    return s;
  }
  *out = (vox_sparse_level *)(void *)l;
  return VOX_OK;
}

/* The rank's part: its slab of a split level (level 0, and level 1 where
 * the slabs nest), both interface layers included; the other levels whole.
 * (The copies of the slab's edge layers for the overlapped exchanges,
 * sparse_split_create, are left out: their elements and indices, about
 * 2 / (the slab's layers) of the slab's, and no vectors of the V-cycle.) */
static void sparse_level_share(const vox_backend *be, const vox_sparse_level_desc *d, int l,
                               size_t *nodes, size_t *elements) {
  const impl *m = M(be);
  *nodes = d->n_nodes, *elements = d->n_elements;
  if (l != d->level || !sparse_splits(m, l, d->n_levels, d->element_layer_start)) return;
  int64_t a, b;
  sparse_slab(m, d, m->rank, &a, &b);
  *nodes = d->node_layer_start[b + 1] - d->node_layer_start[a];
  *elements = d->element_layer_start[b] - d->element_layer_start[a];
}

static size_t sparse_level_bytes(const vox_sparse_level *sl) {
  const mpi_sparse_level *l = (const mpi_sparse_level *)(const void *)sl;
  return l->inner->level_bytes(l->local);
}

/* The interface layers of v, a level-0 vector of the slab (nb values at
 * its start, na at its end), as doubles: views of v where it is double,
 * else copies in the level's stage. */
static vox_status sparse_layers_in_double(vox_backend *be, mpi_sparse_level *l, const vox_vec *v,
                                          size_t nb, size_t na, vox_vec *first, vox_vec *last) {
  *first = part(v, 0, nb), *last = part(v, v->n - na, na);
  if (v->scalar == VOX_DOUBLE) return VOX_OK;
  TRY(need(be, &l->stage, 6 * (l->below + l->above)));
  vox_vec f = part(&l->stage, 0, nb), t = part(&l->stage, nb, na);
  if (nb) TRY(C(be)->vec->copy(IN(be), &f, first));
  if (na) TRY(C(be)->vec->copy(IN(be), &t, last));
  *first = f, *last = t;
  return VOX_OK;
}

/* Adds the neighbours' parts of the interface layers to y, a level-0
 * vector of the slab (only the free dofs' with masks). A float y's layers
 * are swapped in double and added to its own in one rounding, the same
 * sum on both ranks. */
static vox_status sparse_exchange(vox_backend *be, mpi_sparse_level *l, vox_vec *y,
                                  const interface_masks *masks) {
  impl *m = M(be);
  const size_t nb = 3 * l->below, na = 3 * l->above;
  if (m->size == 1 || nb + na == 0) return VOX_OK; /* no bone on the shared layers */
  const int lower = m->rank > 0, upper = m->rank < m->size - 1;
  vox_vec first = part(y, 0, nb), last = part(y, y->n - na, na);
  vox_vec from_below = part(&l->recv, 0, nb), from_above = part(&l->recv, nb, na);
  if (y->scalar == VOX_DOUBLE)
    return vox_mpi_halo_swap_add(m->halo, lower, upper, &first, &last, &from_below, &from_above,
                                 masks ? &masks->below : NULL, masks ? &masks->above : NULL);
  vox_vec down, up;
  TRY(sparse_layers_in_double(be, l, y, nb, na, &down, &up));
  TRY(vox_mpi_halo_swap(m->halo, lower, upper, &down, &up, &from_below, &from_above));
  if (nb) {
    if (masks) TRY(C(be)->vec->mult(IN(be), &from_below, &from_below, &masks->below));
    TRY(CS(be)->vec_axpy(IN(be), &first, 1, &from_below));
  }
  if (na) {
    if (masks) TRY(C(be)->vec->mult(IN(be), &from_above, &from_above, &masks->above));
    TRY(CS(be)->vec_axpy(IN(be), &last, 1, &from_above));
  }
  return VOX_OK;
}

/* The shared layer below set to the lower rank's values (which it sends
 * up), `unit` entries a node: the inverse diagonals, whose sums may round
 * apart on the two ranks' differently sized levels, and the prolonged
 * corrections, which on a GPU come from coarse levels whose atomic sums
 * may round apart from rank to rank. Through the level's buffer of the
 * neighbours' parts where it is large enough; a float v's layers in
 * double (exact both ways). */
static vox_status sparse_take_below(vox_backend *be, mpi_sparse_level *l, vox_vec *v,
                                    size_t unit) {
  impl *m = M(be);
  const size_t nb = unit * l->below, na = unit * l->above;
  if (m->size == 1 || nb + na == 0) return VOX_OK;
  const int own = unit == 3;
  vox_vec recv = own ? l->recv : (vox_vec){0};
  if (!own) TRY(C(be)->vec->create(IN(be), nb + na, VOX_DOUBLE, &recv));
  vox_vec first, last, from_below = part(&recv, 0, nb), from_above = part(&recv, nb, na);
  vox_status s = sparse_layers_in_double(be, l, v, nb, na, &first, &last);
  if (s == VOX_OK)
    s = vox_mpi_halo_swap(m->halo, m->rank > 0, m->rank < m->size - 1, &first, &last,
                          &from_below, &from_above);
  vox_vec layer = part(v, 0, nb);
  if (s == VOX_OK && nb) s = C(be)->vec->copy(IN(be), &layer, &from_below);
  if (!own) C(be)->vec->destroy(IN(be), &recv);
  return s;
}

/* The inverse diagonal (`unit` 3 entries a node; the blocks: 6) of level 0 from the extended
 * level, the slab's nodes taken, the shared layer below the lower rank's;
 * the extended level freed after it (the solve asks once). Computed in
 * double, or in float for a float or bfloat16 d (rounded once more into
 * bfloat16), whose sums one process makes in float too. */
static vox_status sparse_fine_inverse(vox_backend *be, mpi_sparse_level *l, vox_vec *d,
                                      size_t unit) {
  if (!l->extended)
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT,
                     "the MPI backend's sparse level 0 gives its inverse diagonal once");
  vox_vec local = loc(d), ext = {0};
  TRY(C(be)->vec->create(IN(be), unit * l->extended_nodes,
                         local.scalar == VOX_DOUBLE ? VOX_DOUBLE : VOX_FLOAT, &ext));
  vox_status s = unit == 6 ? CS(be)->inv_block_diagonal(IN(be), l->extended, &ext, NULL)
                           : CS(be)->inv_diagonal(IN(be), l->extended, &ext);
  vox_vec slab = part(&ext, unit * l->extended_offset, local.n);
  if (s == VOX_OK) s = sparse_take_below(be, l, &slab, unit);
  if (s == VOX_OK) s = C(be)->vec->copy(IN(be), &local, &slab);
  C(be)->vec->destroy(IN(be), &ext);
  CS(be)->level_destroy(IN(be), l->extended);
  l->extended = NULL;
  return s;
}

static vox_status sparse_inv_diagonal(vox_backend *be, vox_sparse_level *sl, vox_vec *d) {
  mpi_sparse_level *l = SL(sl);
  if (l->split) return sparse_fine_inverse(be, l, d, 3);
  LOCAL1(d);
  return CS(be)->inv_diagonal(IN(be), l->local, &d_);
}

static vox_status sparse_inv_block_diagonal(vox_backend *be, vox_sparse_level *sl, vox_vec *w,
                                            vox_vec *scratch) {
  mpi_sparse_level *l = SL(sl);
  if (l->split) return sparse_fine_inverse(be, l, w, 6); /* sums in float in its own vector */
  LOCAL1(w);
  /* a whole coarse level's float sums may not fit the rank's part of the
   * solve's scratch (CG's q, of level 0's slab): then a vector of their own */
  vox_vec scratch_ = scratch ? loc(scratch) : (vox_vec){0}, own = {0};
  if (scratch && vox_vec_bytes(scratch_.n, scratch_.scalar) < w_.n * sizeof(float)) {
    TRY(C(be)->vec->create(IN(be), w_.n, VOX_FLOAT, &own));
    scratch_ = own;
  }
  const vox_status s =
      CS(be)->inv_block_diagonal(IN(be), l->local, &w_, scratch ? &scratch_ : NULL);
  if (own.raw) C(be)->vec->destroy(IN(be), &own);
  return s;
}

/* y = K x on a split level's slab with the exchange beside the slab's
 * product: the edge layers' products first, their parts of the shared
 * layers sent (in double) while the slab's product runs, then each shared
 * layer the sum of the two ranks' edge parts, which both ranks form alike
 * (the slab's own sum there, which may round apart from the edge's where
 * atomics add, is replaced): the rank's own part copied over the slab's,
 * the neighbour's added in one rounding as sparse_exchange adds it. */
static vox_status sparse_apply_beside(vox_backend *be, mpi_sparse_level *l, const vox_vec *x,
                                      vox_vec *y, int flags, const interface_masks *masks) {
  impl *m = M(be);
  const size_t nb = 3 * l->below, na = 3 * l->above, n[2] = {nb, na};
  vox_vec own[2], sent[2];
  memset(own, 0, sizeof own);
  memset(sent, 0, sizeof sent);
  for (int side = 0; side < 2; side++) {
    if (!n[side]) continue;
    const size_t en = 3 * l->edge_nodes[side];
    const vox_vec xe = part(x, side == 0 ? 0 : x->n - en, en);
    vox_vec ye = {.raw = l->edge_y[side].raw, .n = en, .scalar = y->scalar};
    TRY(CS(be)->apply(IN(be), l->edge[side], &xe, &ye, flags));
    own[side] = part(&ye, side == 0 ? 0 : en - na, n[side]);
    sent[side] = own[side];
  }
  if (y->scalar != VOX_DOUBLE) { /* the parts travel in double */
    TRY(need(be, &l->stage, 6 * (l->below + l->above)));
    for (int side = 0; side < 2; side++)
      if (n[side]) {
        sent[side] = part(&l->stage, side == 0 ? 0 : nb, n[side]);
        TRY(C(be)->vec->copy(IN(be), &sent[side], &own[side]));
      }
  }
  vox_vec from_below = part(&l->recv, 0, nb), from_above = part(&l->recv, nb, na);
  TRY(vox_mpi_halo_swap_start(m->halo, nb > 0, na > 0, &sent[0], &sent[1], &from_below,
                              &from_above, masks && nb ? &masks->below : NULL,
                              masks && na ? &masks->above : NULL));
  TRY(CS(be)->apply(IN(be), l->local, x, y, flags));
  TRY(vox_mpi_halo_swap_finish(m->halo));
  vox_vec *from[2] = {&from_below, &from_above};
  for (int side = 0; side < 2; side++) {
    if (!n[side]) continue;
    vox_vec layer = part(y, side == 0 ? 0 : y->n - n[side], n[side]);
    TRY(C(be)->vec->copy(IN(be), &layer, &own[side]));
    TRY(CS(be)->vec_axpy(IN(be), &layer, 1, from[side]));
  }
  return VOX_OK;
}

static vox_status sparse_apply(vox_backend *be, vox_sparse_level *sl, const vox_vec *x,
                               vox_vec *y, int flags) {
  mpi_sparse_level *l = SL(sl);
  LOCAL1(x);
  LOCAL1(y);
  /* the eliminated product's identity rows of fixed dofs are no sums */
  const interface_masks *masks = flags & VOX_APPLY_FULL ? NULL : &l->masks;
  if (l->split && (l->edge[0] || l->edge[1]))
    return sparse_apply_beside(be, l, &x_, &y_, flags, masks);
  TRY(CS(be)->apply(IN(be), l->local, &x_, &y_, flags));
  if (!l->split) return VOX_OK;
  return sparse_exchange(be, l, &y_, masks);
}

static vox_status sparse_zero_fixed(vox_backend *be, vox_sparse_level *sl, vox_vec *v) {
  LOCAL1(v);
  return CS(be)->zero_fixed(IN(be), SL(sl)->local, &v_);
}

/* sparse_sum_coarse on the device: the parts gathered by NCCL (in double),
 * then added in rank order by the same additions as on the host; into a
 * float rc through its own double vector, rounded once. */
static vox_status sparse_sum_coarse_device(vox_backend *be, mpi_sparse_level *f, vox_vec *rc,
                                           const int *counts, const int *displs) {
  impl *m = M(be);
  const int me = m->rank;
  TRY(need(be, &f->gathered_device, 3 * f->reach_total + 1));
  const vox_vec own = part(rc, 3 * (size_t)f->reach_at[me], 3 * (size_t)f->reach[me]);
  vox_vec mine = part(&f->gathered_device, 3 * (size_t)displs[me], own.n);
  if (own.n) TRY(C(be)->vec->copy(IN(be), &mine, &own));
  TRY(vox_mpi_halo_allgatherv(m->halo, &f->gathered_device, counts, displs, 3));
  vox_vec *sum = rc;
  if (rc->scalar != VOX_DOUBLE) {
    TRY(need(be, &f->whole_double, rc->n));
    sum = &f->whole_double;
  }
  TRY(C(be)->vec->set(IN(be), sum, 0));
  for (int q = 0; q < m->size; q++) {
    if (!counts[q]) continue;
    vox_vec to = part(sum, 3 * (size_t)f->reach_at[q], 3 * (size_t)f->reach[q]);
    const vox_vec from = part(&f->gathered_device, 3 * (size_t)displs[q], to.n);
    TRY(C(be)->vec->axpy(IN(be), &to, 1, &from));
  }
  return sum == rc ? VOX_OK : C(be)->vec->copy(IN(be), rc, sum);
}

/* Into the whole coarse vector: the ranks' parts, over the coarse nodes each
 * reaches, added in rank order (the same sums, bit for bit, on every
 * rank), through host memory. */
static vox_status sparse_sum_coarse(vox_backend *be, mpi_sparse_level *f, vox_vec *rc) {
  impl *m = M(be);
  if (!f->reach) return unsupported(be, "a sparse restriction without the coarse level's reach");
  const int me = m->rank;
  int *counts = calloc(2 * (size_t)m->size, sizeof *counts);
  if (!counts) return vox_error(be->ctx, VOX_ERR_NO_MEMORY, "out of memory");
  int *displs = counts + m->size, at = 0;
  for (int q = 0; q < m->size; q++) counts[q] = f->reach[q], displs[q] = at, at += f->reach[q];
  if (vox_mpi_halo_gathers_on_device(m->halo)) {
    vox_status s = sparse_sum_coarse_device(be, f, rc, counts, displs);
    free(counts);
    return s;
  }
  double *mine = f->gathered + 3 * (size_t)displs[me];
  const int single = rc->scalar != VOX_DOUBLE; /* through f->whole_double, rounded once */
  vox_status s = single ? need(be, &f->whole_double, rc->n) : VOX_OK;
  vox_vec own = part(rc, 3 * (size_t)f->reach_at[me], 3 * (size_t)f->reach[me]);
  if (s == VOX_OK && single && own.n) {
    vox_vec own_double = part(&f->whole_double, 3 * (size_t)f->reach_at[me], own.n);
    s = C(be)->vec->copy(IN(be), &own_double, &own);
    own = own_double;
  }
  if (s == VOX_OK && own.n) s = C(be)->vec->download(IN(be), &own, mine);
  if (s == VOX_OK)
    MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, f->gathered, counts, displs,
                   m->sparse3[0].type, m->comm);
  vox_vec *sum = single ? &f->whole_double : rc;
  double *whole = m->host ? sum->data : f->whole;
  if (s == VOX_OK) {
    memset(whole, 0, 3 * f->coarse_nodes * sizeof *whole);
    for (int q = 0; q < m->size; q++) {
      double *to = whole + 3 * (size_t)f->reach_at[q];
      const double *from = f->gathered + 3 * (size_t)displs[q];
      for (size_t i = 0; i < 3 * (size_t)f->reach[q]; i++) to[i] += from[i];
    }
    if (!m->host) s = C(be)->vec->upload(IN(be), sum, whole);
  }
  if (s == VOX_OK && single) s = C(be)->vec->copy(IN(be), rc, sum);
  free(counts);
  return s;
}

/* The exact selections of the interface layers (double: a layer of the
 * stage or a view) by 0/1 masks, each sum having a zero term: v's entries
 * where mask is 1 made 0 (`scratch` as long as v), and then `with`'s added
 * there (`with` overwritten). */
static vox_status sparse_drop_masked(vox_backend *be, vox_vec *v, const vox_vec *mask,
                                     vox_vec *scratch) {
  TRY(C(be)->vec->mult(IN(be), scratch, v, mask));
  return C(be)->vec->axpy(IN(be), v, -1, scratch);
}
static vox_status sparse_add_masked(vox_backend *be, vox_vec *v, const vox_vec *mask,
                                    vox_vec *with) {
  TRY(C(be)->vec->mult(IN(be), with, with, mask));
  return C(be)->vec->axpy(IN(be), v, 1, with);
}

/* Between two split levels, each interface node is restricted and
 * prolonged by the rank that holds its parent element: here ax made b
 * (b NULL: 0) on the interface dofs whose parent is the neighbour's, so
 * that their residual b - ax is exactly 0, through the level's stage (ax,
 * the V-cycle's product, is not read after). */
static vox_status sparse_zero_elsewhere(vox_backend *be, mpi_sparse_level *f, const vox_vec *b,
                                        vox_vec *ax) {
  const size_t side[2] = {3 * f->below, 3 * f->above}, half = side[0] + side[1];
  const vox_vec *mask[2] = {&f->elsewhere.below, &f->elsewhere.above};
  TRY(need(be, &f->stage, 6 * (f->below + f->above)));
  for (int k = 0; k < 2; k++) {
    if (!side[k]) continue;
    const size_t at = k ? ax->n - side[k] : 0, in_stage = k ? side[0] : 0;
    vox_vec axl = part(ax, at, side[k]), t = part(&f->stage, in_stage, side[k]),
            u = part(&f->stage, half + in_stage, side[k]);
    TRY(C(be)->vec->copy(IN(be), &t, &axl));
    TRY(sparse_drop_masked(be, &t, mask[k], &u));
    if (b) { /* u free again: b's layer in it */
      const vox_vec bl = part(b, at, side[k]);
      TRY(C(be)->vec->copy(IN(be), &u, &bl));
      TRY(sparse_add_masked(be, &t, mask[k], &u));
    }
    TRY(C(be)->vec->copy(IN(be), &axl, &t)); /* exact: ax's and b's own values */
  }
  return VOX_OK;
}

/* The other half: each interface value of x (prolonged) taken from the
 * neighbour where its parent is the neighbour's, exactly. */
static vox_status sparse_take_elsewhere(vox_backend *be, mpi_sparse_level *f, vox_vec *x) {
  impl *m = M(be);
  const size_t nb = 3 * f->below, na = 3 * f->above;
  if (nb + na == 0) return VOX_OK;
  vox_vec first, last, from_below = part(&f->recv, 0, nb), from_above = part(&f->recv, nb, na);
  TRY(sparse_layers_in_double(be, f, x, nb, na, &first, &last));
  TRY(vox_mpi_halo_swap(m->halo, m->rank > 0, m->rank < m->size - 1, &first, &last, &from_below,
                        &from_above));
  /* x's layers in double (views of a double x, else in the stage's first
   * half), the scratch in its second half */
  TRY(need(be, &f->stage, 6 * (f->below + f->above)));
  vox_vec *theirs[2] = {&from_below, &from_above}, *mine[2] = {&first, &last};
  const vox_vec *mask[2] = {&f->elsewhere.below, &f->elsewhere.above};
  const size_t side[2] = {nb, na};
  for (int k = 0; k < 2; k++) {
    if (!side[k]) continue;
    vox_vec u = part(&f->stage, nb + na + (k ? nb : 0), side[k]);
    TRY(sparse_drop_masked(be, mine[k], mask[k], &u));
    TRY(sparse_add_masked(be, mine[k], mask[k], theirs[k]));
    if (x->scalar != VOX_DOUBLE) {
      vox_vec xl = part(x, k ? x->n - side[k] : 0, side[k]);
      TRY(C(be)->vec->copy(IN(be), &xl, mine[k]));
    }
  }
  return VOX_OK;
}

static vox_status sparse_restrict(vox_backend *be, vox_sparse_level *fine,
                                  vox_sparse_level *coarse, const vox_vec *b, const vox_vec *ax,
                                  vox_vec *r_coarse) {
  mpi_sparse_level *f = SL(fine), *c = SL(coarse);
  vox_vec b_ = b ? loc(b) : (vox_vec){0}, ax_ = loc(ax);
  LOCAL1(r_coarse);
  if (f->split && c->split && M(be)->size > 1) {
    /* both split: the interface nodes of parents here restricted here,
     * the coarse interface's parts then added on both ranks */
    TRY(sparse_zero_elsewhere(be, f, b ? &b_ : NULL, &ax_));
    TRY(CS(be)->restrict_residual(IN(be), f->local, c->local, b ? &b_ : NULL, &ax_,
                                  &r_coarse_));
    return sparse_exchange(be, c, &r_coarse_, NULL);
  }
  if (f->split && M(be)->size > 1 && f->below) {
    /* the shared layer below is the lower rank's to restrict: its residual
     * b - ax made 0 here (ax, the V-cycle's product, is not read after) */
    vox_vec layer = part(&ax_, 0, 3 * f->below);
    if (b) {
      const vox_vec from = part(&b_, 0, 3 * f->below);
      TRY(C(be)->vec->copy(IN(be), &layer, &from));
    } else {
      TRY(C(be)->vec->set(IN(be), &layer, 0));
    }
  }
  TRY(CS(be)->restrict_residual(IN(be), f->local, c->local, b ? &b_ : NULL, &ax_, &r_coarse_));
  if (!f->split || M(be)->size == 1) return VOX_OK;
  return sparse_sum_coarse(be, f, &r_coarse_);
}

static vox_status sparse_prolong_add(vox_backend *be, vox_sparse_level *fine,
                                     vox_sparse_level *coarse, const vox_vec *x_coarse,
                                     vox_vec *x_fine) {
  mpi_sparse_level *f = SL(fine), *c = SL(coarse);
  LOCAL1(x_coarse);
  LOCAL1(x_fine);
  TRY(CS(be)->prolong_add(IN(be), f->local, c->local, &x_coarse_, &x_fine_));
  if (!f->split || M(be)->size == 1) return VOX_OK;
  return c->split ? sparse_take_elsewhere(be, f, &x_fine_) : sparse_take_below(be, f, &x_fine_, 3);
}

/* v[index[i]] = value[i]: on a split vector, the entries in the rank's
 * range (both interfaces' included). */
static vox_status sparse_vec_scatter(vox_backend *be, vox_vec *v, size_t n, const size_t *index,
                                     const double *value) {
  const layout *l = lay_of(v);
  LOCAL1(v);
  if (l == &M(be)->replicated) return CS(be)->vec_scatter(IN(be), &v_, n, index, value);
  size_t *at = malloc((n ? n : 1) * sizeof *at);
  double *x = malloc((n ? n : 1) * sizeof *x);
  size_t k = 0;
  for (size_t i = 0; at && x && i < n; i++)
    if (index[i] >= l->offset && index[i] < l->offset + l->local_n)
      at[k] = index[i] - l->offset, x[k++] = value[i];
  const vox_status s = at && x ? CS(be)->vec_scatter(IN(be), &v_, k, at, x)
                               : vox_error(be->ctx, VOX_ERR_NO_MEMORY, "out of memory");
  free(at);
  free(x);
  return s;
}

static vox_status sparse_vec_axpy(vox_backend *be, vox_vec *y, double a, const vox_vec *x) {
  LOCAL1(y);
  LOCAL1(x);
  return CS(be)->vec_axpy(IN(be), &y_, a, &x_);
}

static vox_status sparse_vec_xpay(vox_backend *be, vox_vec *y, double a, const vox_vec *x) {
  LOCAL1(y);
  LOCAL1(x);
  return CS(be)->vec_xpay(IN(be), &y_, a, &x_);
}

static vox_status sparse_vec_dot(vox_backend *be, const vox_vec *x, const vox_vec *y,
                                 double *out) {
  vox_vec x_ = owned(x), y_ = owned(y);
  TRY(CS(be)->vec_dot(IN(be), &x_, &y_, out));
  if (parallel(M(be), lay_of(x))) sum_all(M(be), out, 1);
  return VOX_OK;
}

static vox_status sparse_cg_update(vox_backend *be, double alpha, const vox_vec *p,
                                   const vox_vec *q, vox_vec *u, vox_vec *r, vox_vec *copy,
                                   double *rr) {
  const size_t b = lay_of(u)->owned_begin;
  if (b > 0) { /* the interface below: updated, not summed */
    LOCAL1(p);
    LOCAL1(q);
    LOCAL1(u);
    LOCAL1(r);
    vox_vec p0 = part(&p_, 0, b), q0 = part(&q_, 0, b), u0 = part(&u_, 0, b),
            r0 = part(&r_, 0, b), c0 = copy ? part(&MV(copy)->local, 0, b) : (vox_vec){0};
    double ignored;
    TRY(CS(be)->cg_update(IN(be), alpha, &p0, &q0, &u0, &r0, copy ? &c0 : NULL, &ignored));
  }
  vox_vec p_ = owned(p), q_ = owned(q), u_ = owned(u), r_ = owned(r);
  vox_vec c_ = copy ? owned(copy) : (vox_vec){0};
  TRY(CS(be)->cg_update(IN(be), alpha, &p_, &q_, &u_, &r_, copy ? &c_ : NULL, rr));
  if (parallel(M(be), lay_of(u))) sum_all(M(be), rr, 1);
  return VOX_OK;
}

static vox_status sparse_smoother_step(vox_backend *be, const vox_vec *b, const vox_vec *ax,
                                       const vox_vec *inv_diag, double alpha, double beta,
                                       vox_vec *d, vox_vec *x) {
  LOCAL1(b);
  LOCAL1(inv_diag);
  LOCAL1(d);
  LOCAL1(x);
  vox_vec ax_ = ax ? loc(ax) : (vox_vec){0};
  return CS(be)->smoother_step(IN(be), &b_, ax ? &ax_ : NULL, &inv_diag_, alpha, beta, &d_, &x_);
}

static vox_status sparse_block_smoother_step(vox_backend *be, const vox_vec *b, const vox_vec *ax,
                                             const vox_vec *inv_blocks, double alpha, double beta,
                                             vox_vec *d, vox_vec *x) {
  LOCAL1(b);
  LOCAL1(inv_blocks);
  LOCAL1(d);
  LOCAL1(x);
  vox_vec ax_ = ax ? loc(ax) : (vox_vec){0};
  return CS(be)->block_smoother_step(IN(be), &b_, ax ? &ax_ : NULL, &inv_blocks_, alpha, beta,
                                     &d_, &x_);
}

/* A recorded V-cycle is the ranks' backend's recording, where the
 * exchanges and gathers are device work alone (vox_mpi_halo_records: the
 * direct writes or NCCL between GPUs). The buffers that the split levels'
 * transfers make on first use are made first: a recording cannot allocate. */
static vox_status sparse_record_begin(vox_backend *be) {
  impl *m = M(be);
  if (!vox_mpi_backend_records(be))
    return unsupported(be, "a recorded V-cycle over these exchanges");
  for (int k = 0; k < m->sparse_split_levels; k++) {
    mpi_sparse_level *l = m->sparse_split[k];
    if (!l) continue;
    if (l->below + l->above) TRY(need(be, &l->stage, 6 * (l->below + l->above)));
    if (l->reach && m->size > 1) {
      TRY(need(be, &l->gathered_device, 3 * l->reach_total + 1));
      TRY(need(be, &l->whole_double, 3 * l->coarse_nodes));
    }
  }
  return CS(be)->record_begin(IN(be));
}
static vox_status sparse_record_end(vox_backend *be, void **recording) {
  return CS(be)->record_end(IN(be), recording);
}
static vox_status sparse_replay(vox_backend *be, void *recording) {
  return CS(be)->replay(IN(be), recording);
}
static void sparse_recording_free(vox_backend *be, void *recording) {
  CS(be)->recording_free(IN(be), recording);
}

/* ---- the host hierarchy, built on rank 0 --------------------------------- */

/* Rank 0 builds a sparse solve's host hierarchy and sends each of the
 * others what its levels read (vox_mpi_options.hierarchy): every rank
 * building its own builds the same arrays on a share of the node's cores,
 * each in its own host memory (perlin32 on two H200s: 247 against 148 GB
 * at the setup's peak, the setup 66.7 against 68.6 s, the sending at about
 * 2.5 GB/s). */
static int sparse_builds_hierarchy(const vox_backend *be) {
  return M(be)->rank == 0 || !M(be)->hierarchy_root;
}

/* Whether the other ranks need array i of level l (vox_sparse_level_arrays):
 * not the elements' box indices, which only the build reads, nor the
 * nodes' but level 0's (the loads' and prescribed values' nodes are found
 * there, vox_sparse_node_at, in place of the box's map: 8 bytes a node
 * instead of 4 a box node; the start and the result where every rank
 * takes them). */
static int array_needed(int l, int i) {
  if (i == VOX_SPARSE_ELEMENT_BOX) return 0;
  if (i == VOX_SPARSE_NODE_BOX) return l == 0;
  return 1;
}

/* 1: array i counts elements, 0: nodes, -1: neither (the layer starts). */
static int array_per_element(int i) {
  switch (i) {
  case VOX_SPARSE_ELEMENT_NODES:
  case VOX_SPARSE_ELEMENT_NODES_X1:
  case VOX_SPARSE_MATERIAL:
  case VOX_SPARSE_MODULUS: return 1;
  case VOX_SPARSE_NODE_FIXED:
  case VOX_SPARSE_NODE_BOX:
  case VOX_SPARSE_PARENT: return 0;
  default: return -1;
  }
}

/* Whether a rank needs all of split level l's array i, not its slab's
 * part: level 0's node boxes (the searches for the loads' nodes) and, where
 * every rank takes the results, its fixed flags (the start's and the
 * return's passes over every node). */
static int array_whole(const impl *m, int l, int i) {
  return l == 0 && (i == VOX_SPARSE_NODE_BOX || (i == VOX_SPARSE_NODE_FIXED && !m->results_root));
}

/* Rank q's elements [e[0], e[1]) and nodes [n[0], n[1]) of split level l:
 * its slab with a layer of each neighbour (sparse_split_create's extended
 * slab, which holds everything that reads the level's arrays). */
static void slab_part(const impl *m, const vox_sparse_host_level *lv, int l, int q, size_t e[2],
                      size_t n[2]) {
  int64_t a = m->first[q] >> l, b = q == m->size - 1 ? lv->grid.nz : m->first[q + 1] >> l;
  a -= q > 0;
  b += q < m->size - 1;
  e[0] = lv->element_layer_start[a], e[1] = lv->element_layer_start[b];
  n[0] = lv->node_layer_start[a], n[1] = lv->node_layer_start[b + 1];
}

/* Array i of a level (n bytes at p) from rank 0 to the others: whole, or on
 * a split level each rank's slab part alone (the rest of its copy is never
 * read, and never touched: no memory behind it). */
static void send_array(const impl *m, const vox_sparse_host_level *lv, int l, int split, int i,
                       char *p, size_t n) {
  const int per_element = array_per_element(i);
  if (!split || per_element < 0 || array_whole(m, l, i)) {
    vox_mpi_broadcast_bytes(m->comm, 0, p, n);
    return;
  }
  const size_t count = per_element ? lv->n_elements : lv->n_nodes;
  const size_t unit = count ? n / count : 0;
  for (int q = 1; q < m->size; q++) {
    if (m->rank != 0 && m->rank != q) continue;
    size_t e[2], nodes[2];
    slab_part(m, lv, l, q, e, nodes);
    const size_t *range = per_element ? e : nodes;
    vox_mpi_send_bytes(m->comm, 0, q, p + range[0] * unit, (range[1] - range[0]) * unit);
  }
}

static vox_status sparse_share_hierarchy(vox_backend *be, vox_status status,
                                         vox_sparse_hierarchy *h) {
  impl *m = M(be);
  if (!m->hierarchy_root) return status; /* each rank built its own */
  int failed = status != VOX_OK;
  MPI_Bcast(&failed, 1, MPI_INT, 0, m->comm);
  if (failed && m->rank > 0) {
    vox_sparse_hierarchy_free(h);
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT,
                     "the sparse system's hierarchy failed on rank 0");
  }
  if (failed || m->size == 1) return status;
  if (m->rank > 0) vox_sparse_hierarchy_free(h); /* a plan's: rank 0's is the one */
  /* the levels' headers (sizes, grids, element matrices; rank 0's pointers
   * say which arrays follow), then every array */
  int n_levels = h->n_levels;
  MPI_Bcast(&n_levels, 1, MPI_INT, 0, m->comm);
  vox_sparse_host_level *sent = calloc((size_t)n_levels, sizeof *sent);
  int no_room = !sent;
  MPI_Allreduce(MPI_IN_PLACE, &no_room, 1, MPI_INT, MPI_MAX, m->comm);
  if (no_room) {
    free(sent);
    if (m->rank > 0) vox_sparse_hierarchy_free(h);
    return vox_error(be->ctx, VOX_ERR_NO_MEMORY, "out of memory");
  }
  vox_status s = VOX_OK;
  if (m->rank == 0) memcpy(sent, h->level, (size_t)n_levels * sizeof *sent);
  vox_mpi_broadcast_bytes(m->comm, 0, sent, (size_t)n_levels * sizeof *sent);
  vox_mpi_broadcast_bytes(m->comm, 0, h->table, sizeof h->table);
  if (m->rank > 0) {
    h->level = calloc((size_t)n_levels, sizeof *h->level);
    if (!h->level) s = vox_error(be->ctx, VOX_ERR_NO_MEMORY, "out of memory");
    for (int l = 0; s == VOX_OK && l < n_levels; l++) {
      vox_sparse_host_level *lv = &h->level[l];
      *lv = sent[l];
      void **p[VOX_SPARSE_LEVEL_ARRAYS], **rank0[VOX_SPARSE_LEVEL_ARRAYS];
      size_t bytes[VOX_SPARSE_LEVEL_ARRAYS];
      vox_sparse_level_arrays(&sent[l], rank0, bytes);
      vox_sparse_level_arrays(lv, p, bytes);
      for (int i = 0; i < VOX_SPARSE_LEVEL_ARRAYS; i++) *p[i] = NULL;
      h->n_levels = l + 1;
      for (int i = 0; i < VOX_SPARSE_LEVEL_ARRAYS && s == VOX_OK; i++) {
        if (!*rank0[i] || !array_needed(l, i)) continue;
        *p[i] = vox_host_malloc(bytes[i] ? bytes[i] : 1);
        if (!*p[i]) s = vox_error(be->ctx, VOX_ERR_NO_MEMORY, "out of memory for the hierarchy");
#ifndef NDEBUG
        /* debug builds (CI's sanitizer run of the MPI tests): what is not
         * sent is garbage, so that a read outside a rank's part (send_array)
         * shows in the results instead of reading zeros */
        else memset(*p[i], 0xA5, bytes[i]);
#endif
      }
    }
  }
  /* every rank has its room (or none goes on) */
  int short_of_memory = s != VOX_OK;
  MPI_Allreduce(MPI_IN_PLACE, &short_of_memory, 1, MPI_INT, MPI_MAX, m->comm);
  if (short_of_memory) {
    free(sent);
    if (m->rank > 0) vox_sparse_hierarchy_free(h);
    return s != VOX_OK ? s
                       : vox_error(be->ctx, VOX_ERR_NO_MEMORY,
                                   "out of memory for the hierarchy on another rank");
  }
  /* two passes over the levels' arrays: the layer starts first (which
   * levels split, and the slabs' parts of those, are read from them, as
   * sparse_level_create will), then the rest */
  for (int pass = 0; pass < 2; pass++) {
    int split = 1; /* level 0's; a level splits only below one that does */
    for (int l = 0; l < n_levels; l++) {
      vox_sparse_host_level *lv = &h->level[l];
      if (pass == 1 && l > 0)
        split = split && sparse_splits(m, l, n_levels, lv->element_layer_start);
      void **p[VOX_SPARSE_LEVEL_ARRAYS];
      size_t bytes[VOX_SPARSE_LEVEL_ARRAYS];
      vox_sparse_level_arrays(lv, p, bytes);
      for (int i = 0; i < VOX_SPARSE_LEVEL_ARRAYS; i++)
        if (*p[i] && array_needed(l, i) && (array_per_element(i) < 0) == (pass == 0))
          send_array(m, lv, l, split, i, *p[i], bytes[i]);
    }
  }
  free(sent);
  return VOX_OK;
}

/* No smoothed-aggregation levels (matrix_create NULL: refused by the
 * solve), no views into its vectors; 16-byte nodes where the ranks'
 * backend takes them (the backend's copy of the table). */
static const vox_sparse_ops mpi_sparse_ops = {
    .node4 = 0,
    .builds_hierarchy = sparse_builds_hierarchy,
    .share_hierarchy = sparse_share_hierarchy,
    .views = 0,
    .vec_scatter = sparse_vec_scatter,
    .vec_axpy = sparse_vec_axpy,
    .vec_xpay = sparse_vec_xpay,
    .vec_dot = sparse_vec_dot,
    .cg_update = sparse_cg_update,
    .smoother_step = sparse_smoother_step,
    .block_smoother_step = sparse_block_smoother_step,
    .level_create = sparse_level_create,
    .level_destroy = sparse_level_destroy,
    .level_share = sparse_level_share,
    .level_bytes = sparse_level_bytes,
    .apply = sparse_apply,
    .inv_diagonal = sparse_inv_diagonal,
    .inv_block_diagonal = sparse_inv_block_diagonal,
    .zero_fixed = sparse_zero_fixed,
    .restrict_residual = sparse_restrict,
    .prolong_add = sparse_prolong_add,
    .record_begin = sparse_record_begin,
    .record_end = sparse_record_end,
    .replay = sparse_replay,
    .recording_free = sparse_recording_free,
};

/* ---- design kernels ------------------------------------------------------ */

static vox_status simp_moduli(vox_backend *be, const vox_vec *rho, const vox_vec *e_solid,
                              double p, double emin, vox_vec *moduli) {
  LOCAL1(rho);
  LOCAL1(e_solid);
  LOCAL1(moduli);
  return C(be)->design->simp_moduli(IN(be), &rho_, &e_solid_, p, emin, &moduli_);
}

static vox_status simp_sensitivity(vox_backend *be, const vox_vec *rho, const vox_vec *e_solid,
                                   const vox_vec *energy, double p, double emin, vox_vec *dc) {
  LOCAL1(rho);
  LOCAL1(e_solid);
  LOCAL1(energy);
  LOCAL1(dc);
  return C(be)->design->simp_sensitivity(IN(be), &rho_, &e_solid_, &energy_, p, emin, &dc_);
}

static vox_status oc_update(vox_backend *be, const vox_vec *rho, const vox_vec *dc,
                            const vox_vec *dv, const vox_vec *design, const vox_vec *passive,
                            double lambda, double move, double eta, double q, double rho_min,
                            vox_vec *rho_new) {
  LOCAL1(rho);
  LOCAL1(dc);
  LOCAL1(dv);
  LOCAL1(design);
  LOCAL1(passive);
  LOCAL1(rho_new);
  return C(be)->design->oc_update(IN(be), &rho_, &dc_, &dv_, &design_, &passive_, lambda, move,
                                  eta, q, rho_min, &rho_new_);
}

static vox_status oc_volumes(vox_backend *be, const vox_vec *rho, const vox_vec *dc,
                             const vox_vec *dv, const vox_vec *design, const vox_vec *passive,
                             const double *lambda, int n, double move, double eta, double q,
                             double rho_min, double *volume) {
  LOCAL1(rho);
  LOCAL1(dc);
  LOCAL1(dv);
  LOCAL1(design);
  LOCAL1(passive);
  TRY(C(be)->design->oc_volumes(IN(be), &rho_, &dc_, &dv_, &design_, &passive_, lambda, n, move,
                                eta, q, rho_min, volume));
  if (parallel(M(be), lay_of(rho))) sum_all(M(be), volume, (size_t)n);
  return VOX_OK;
}

/* The filter: each rank filters a window of element layers, its slab and
 * twice the taps' reach in z on either side (where the grid goes on), made
 * on the CPU backend. Its slab's values are then exact: the taps of a slab
 * element stay in the window, and so do those of the elements they reach,
 * whose sums of weights the transpose divides by. The same taps in the same
 * order as on the whole grid: the same bits as one process. The window's
 * other layers come from the ranks that own them: by a swap between the
 * devices where every slab is at least as deep as the window reaches (the
 * neighbours' layers then fill it), else MPI_Alltoallv. */
typedef struct mpi_filter {
  vox_filter *local;        /* on the window */
  vox_grid window;
  int64_t w0;               /* the window's first layer */
  int64_t depth;            /* layers on either side of a slab */
  vox_vec a, b, c;          /* window vectors */
  int *send_count, *send_at, *recv_count, *recv_at; /* per rank, in element layers */
  int swap;                 /* the neighbours' `depth` layers swapped on the devices */
} mpi_filter;

static mpi_filter *FI(vox_filter *f) { return (mpi_filter *)(void *)f; }

static void filter_destroy(vox_backend *be, vox_filter *filter) {
  mpi_filter *f = FI(filter);
  if (!f) return;
  if (f->local) C(be)->design->filter_destroy(IN(be), f->local);
  vox_vec *v[] = {&f->a, &f->b, &f->c};
  for (int i = 0; i < 3; i++)
    if (v[i]->data) C(be)->vec->destroy(IN(be), v[i]);
  free(f->send_count);
  free(f->send_at);
  free(f->recv_count);
  free(f->recv_at);
  free(f);
}

static void window_of(const impl *m, int q, int64_t depth, int64_t nz, int64_t *w0, int64_t *w1) {
  *w0 = m->first[q] - depth < 0 ? 0 : m->first[q] - depth;
  *w1 = m->first[q + 1] + depth > nz ? nz : m->first[q + 1] + depth;
}

static vox_status filter_create(vox_backend *be, const vox_grid *grid, double radius,
                                const uint8_t *active, vox_filter **out) {
  impl *m = M(be);
  *out = NULL;
  if (level_of(m, grid) != 0)
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT,
                     "the filter's grid is not the one the MPI backend was made for");
  mpi_filter *f = calloc(1, sizeof *f);
  const size_t q = (size_t)m->size;
  if (f) {
    f->send_count = calloc(q, sizeof(int)), f->send_at = calloc(q, sizeof(int));
    f->recv_count = calloc(q, sizeof(int)), f->recv_at = calloc(q, sizeof(int));
  }
  if (!f || !f->send_count || !f->send_at || !f->recv_count || !f->recv_at) {
    filter_destroy(be, (vox_filter *)(void *)f);
    return vox_error(be->ctx, VOX_ERR_NO_MEMORY, "out of memory");
  }
  /* the taps reach floor(R / h) layers (filter_taps.c), at most nz - 1 */
  const double reach = radius > 0 ? floor(radius / grid->voxel_size[2]) : 0;
  const int64_t r = reach < (double)(grid->nz - 1) ? (int64_t)reach : grid->nz - 1;
  f->depth = 2 * r;
  int64_t w1;
  window_of(m, m->rank, f->depth, grid->nz, &f->w0, &w1);
  f->window = *grid;
  f->window.nz = w1 - f->w0;
  const int64_t k0 = m->first[m->rank], k1 = m->first[m->rank + 1];
  for (int p = 0; p < m->size; p++) {
    int64_t p0, p1; /* p's window, and p's slab against mine */
    window_of(m, p, f->depth, grid->nz, &p0, &p1);
    const int64_t s0 = k0 > p0 ? k0 : p0, s1 = k1 < p1 ? k1 : p1;
    f->send_count[p] = s1 > s0 ? (int)(s1 - s0) : 0;
    f->send_at[p] = s1 > s0 ? (int)(s0 - k0) : 0;
    const int64_t q0 = m->first[p] > f->w0 ? m->first[p] : f->w0,
                  q1 = m->first[p + 1] < w1 ? m->first[p + 1] : w1;
    f->recv_count[p] = q1 > q0 ? (int)(q1 - q0) : 0;
    f->recv_at[p] = q1 > q0 ? (int)(q0 - f->w0) : 0;
  }
  const size_t layer = m->elements.unit, n = layer * (size_t)f->window.nz;
  /* the same decision on every rank: from the slabs and the transport */
  int deep = 1;
  for (int p = 0; p < m->size; p++) deep &= m->first[p + 1] - m->first[p] >= f->depth;
  f->swap = !m->host && m->size > 1 && f->depth > 0 && deep &&
            vox_mpi_halo_swaps_on_device(m->halo, (size_t)f->depth * layer);
  vox_status s = C(be)->design->filter_create(IN(be), &f->window, radius,
                                              active + layer * (size_t)f->w0, &f->local);
  if (s == VOX_OK) s = C(be)->vec->create(IN(be), n, VOX_DOUBLE, &f->a);
  if (s == VOX_OK) s = C(be)->vec->create(IN(be), n, VOX_DOUBLE, &f->b);
  if (s == VOX_OK) s = C(be)->vec->create(IN(be), n, VOX_DOUBLE, &f->c);
  if (s != VOX_OK) {
    filter_destroy(be, (vox_filter *)(void *)f);
    return s;
  }
  *out = (vox_filter *)(void *)f;
  return VOX_OK;
}

/* The window's values of an element vector, from the ranks that own them.
 * On a device, the rank's own layers are copied there, and only the
 * others' layers go through host memory. */
static vox_status fill_window(vox_backend *be, mpi_filter *f, const vox_vec *v, vox_vec *window) {
  impl *m = M(be);
  const vox_vec slab = loc(v);
  const size_t u = m->elements.unit;
  const int me = m->rank, q = m->size;
  if (f->swap) { /* depth layers each way between neighbours, the own ones copied */
    const int lower = me > 0, upper = me < q - 1;
    const size_t d = (size_t)f->depth * u;
    const vox_vec down = part(&slab, 0, d), up = part(&slab, slab.n - d, d);
    vox_vec below = part(window, 0, d), above = part(window, window->n - d, d);
    vox_vec mine = part(window, (size_t)f->recv_at[me] * u, slab.n);
    TRY(C(be)->vec->copy(IN(be), &mine, &slab));
    return vox_mpi_halo_swap(m->halo, lower, upper, &down, &up, &below, &above);
  }
  if (m->host) {
    MPI_Alltoallv(slab.data, f->send_count, f->send_at, m->elements.type, window->data,
                  f->recv_count, f->recv_at, m->elements.type, m->comm);
    return VOX_OK;
  }
  int *counts = calloc(4 * (size_t)q, sizeof *counts); /* the others' layers, packed */
  if (!counts) return vox_error(be->ctx, VOX_ERR_NO_MEMORY, "out of memory");
  int *send_count = counts, *send_at = counts + q, *recv_count = counts + 2 * q,
      *recv_at = counts + 3 * q;
  int sent = 0, received = 0;
  for (int p = 0; p < q; p++) {
    send_count[p] = p == me ? 0 : f->send_count[p], send_at[p] = sent, sent += send_count[p];
    recv_count[p] = p == me ? 0 : f->recv_count[p], recv_at[p] = received,
    received += recv_count[p];
  }
  double *host = stage(m, ((size_t)sent + (size_t)received) * u);
  vox_status s = host || sent + received == 0
                     ? VOX_OK
                     : vox_error(be->ctx, VOX_ERR_NO_MEMORY, "out of memory");
  for (int p = 0; p < q && s == VOX_OK; p++)
    if (send_count[p] > 0) {
      const vox_vec layers = part(&slab, (size_t)f->send_at[p] * u, (size_t)send_count[p] * u);
      s = C(be)->vec->download(IN(be), &layers, host + (size_t)send_at[p] * u);
    }
  if (s == VOX_OK && q > 1)
    MPI_Alltoallv(host, send_count, send_at, m->elements.type, host + (size_t)sent * u, recv_count,
                  recv_at, m->elements.type, m->comm);
  for (int p = 0; p < q && s == VOX_OK; p++)
    if (recv_count[p] > 0) {
      vox_vec layers = part(window, (size_t)f->recv_at[p] * u, (size_t)recv_count[p] * u);
      s = C(be)->vec->upload(IN(be), &layers, host + ((size_t)sent + (size_t)recv_at[p]) * u);
    }
  if (s == VOX_OK && f->recv_count[me] > 0) {
    vox_vec mine = part(window, (size_t)f->recv_at[me] * u, (size_t)f->recv_count[me] * u);
    const vox_vec own = part(&slab, (size_t)f->send_at[me] * u, (size_t)f->send_count[me] * u);
    s = C(be)->vec->copy(IN(be), &mine, &own);
  }
  free(counts);
  return s;
}

/* The slab's part of a window vector. */
static vox_status slab_of_window(vox_backend *be, const mpi_filter *f, const vox_vec *window,
                                 vox_vec *out) {
  impl *m = M(be);
  vox_vec out_ = loc(out);
  const size_t at = m->elements.unit * (size_t)(m->first[m->rank] - f->w0);
  const vox_vec slab = part(window, at, m->elements.local_n);
  return C(be)->vec->copy(IN(be), &out_, &slab);
}

static vox_status filter_apply(vox_backend *be, vox_filter *filter, const vox_vec *in,
                               vox_vec *out) {
  mpi_filter *f = FI(filter);
  TRY(fill_window(be, f, in, &f->a));
  TRY(C(be)->design->filter_apply(IN(be), f->local, &f->a, &f->b));
  return slab_of_window(be, f, &f->b, out);
}

static vox_status filter_transpose(vox_backend *be, vox_filter *filter, const vox_vec *in,
                                   vox_vec *out) {
  mpi_filter *f = FI(filter);
  TRY(fill_window(be, f, in, &f->a));
  TRY(C(be)->design->filter_transpose(IN(be), f->local, &f->a, &f->b));
  return slab_of_window(be, f, &f->b, out);
}

static vox_status filter_sensitivity(vox_backend *be, vox_filter *filter, const vox_vec *rho,
                                     const vox_vec *dc, double gamma, vox_vec *out) {
  mpi_filter *f = FI(filter);
  TRY(fill_window(be, f, rho, &f->a));
  TRY(fill_window(be, f, dc, &f->c));
  TRY(C(be)->design->filter_sensitivity(IN(be), f->local, &f->a, &f->c, gamma, &f->b));
  return slab_of_window(be, f, &f->b, out);
}

static vox_status filter_create_periodic(vox_backend *be, const vox_grid *grid, double radius,
                                         const uint8_t *active, vox_filter **filter) {
  return unsupported(be, "the periodic filter");
}
static vox_status symmetrize(vox_backend *be, const vox_grid *grid, vox_symmetry symmetry,
                             vox_vec *v) {
  return unsupported(be, "symmetry");
}

/* ---- the backend --------------------------------------------------------- */

static void destroy(vox_backend *be) {
  impl *m = M(be);
  if (m) {
    for (int l = 0; l < m->n_levels; l++) {
      vox_vec *v[] = {&m->lv[l].whole, &m->lv[l].whole2, &m->lv[l].aside,
                      &m->lv[l].slab_part, &m->lv[l].edges};
      for (int i = 0; i < 5; i++)
        if (v[i]->data) C(be)->vec->destroy(IN(be), v[i]);
      layout_free(&m->lv[l].nodes);
      layout_free(&m->lv[l].slab);
    }
    layout_free(&m->elements);
    for (int l = 0; l < SPARSE_SPLIT_MAX; l++) {
      layout_free(&m->sparse3[l]);
      layout_free(&m->sparse6[l]);
    }
    if (m->recv.data) C(be)->vec->destroy(IN(be), &m->recv);
    vox_mpi_halo_destroy(m->halo);
    if (m->in) vox_backend_destroy(m->in);
    free(m->first);
    free(m->stage);
    free(m);
  }
  free(be);
}

static vox_status synchronize(vox_backend *be) { return C(be)->synchronize(IN(be)); }
/* The memory check's part of a grid: this rank's slab, on its backend's
 * memory. */
static int memory_part(const vox_backend *be, const vox_grid *grid, vox_grid *part) {
  const impl *m = M(be);
  *part = *grid;
  if (grid->nz == m->lv[0].global.nz) part->nz = m->first[m->rank + 1] - m->first[m->rank];
  return C(be)->device_memory;
}
static vox_status memory(vox_backend *be, size_t *free_bytes, size_t *total_bytes) {
  return C(be)->memory(IN(be), free_bytes, total_bytes);
}
static int agree_max(vox_backend *be, int value) {
  int all = value;
  MPI_Allreduce(&value, &all, 1, MPI_INT, MPI_MAX, M(be)->comm);
  return all;
}
static vox_status host_alloc(vox_backend *be, size_t bytes, void **p) {
  return C(be)->host_alloc(IN(be), bytes, p);
}
static void host_free(vox_backend *be, void *p) { C(be)->host_free(IN(be), p); }

static const vox_vector_ops mpi_vec_ops = {
    .create = vec_create,
    .destroy = vec_destroy,
    .upload = vec_upload,
    .download = vec_download,
    .download_result = vec_download_result,
    .held_n = vec_held_n,
    .held_download = vec_held_download,
    .held_upload = vec_held_upload,
    .set = vec_set,
    .copy = vec_copy,
    .axpy = vec_axpy,
    .xpay = vec_xpay,
    .mult = vec_mult,
    .axpby = vec_axpby,
    .reciprocal = vec_reciprocal,
    .random = vec_random,
    .smoother_step = vec_smoother_step,
    .dot = vec_dot,
    .cg_update = vec_cg_update,
    .max_abs_diff = vec_max_abs_diff,
};

static const vox_operator_ops mpi_op_ops = {
    .create = op_create,
    .destroy = op_destroy,
    .set_moduli = op_set_moduli,
    .apply = op_apply,
    .zero_fixed = op_zero_fixed,
    .diagonal = op_diagonal,
    .element_energy = op_element_energy,
    .smooth = op_smooth,
    .residual = op_residual,
    .strain_load = op_strain_load,
    .strain_energy = op_strain_energy,
    .strain_energy_sums = op_strain_energy_sums,
};

/* stencil_blocks and the coarsest dense size: the ranks' backend's, set
 * when the backend is made */
static const vox_multigrid_ops mpi_mg_ops = {
    .stencil_mixed_dof_bytes = stencil_mixed_dof_bytes,
    .stencil_create = stencil_create,
    .stencil_destroy = stencil_destroy,
    .galerkin_operator = galerkin_operator,
    .galerkin_stencil = galerkin_stencil,
    .stencil_upload = stencil_upload,
    .stencil_download = stencil_download,
    .stencil_apply = stencil_apply,
    .stencil_smooth = stencil_smooth,
    .stencil_residual = stencil_residual,
    .stencil_diagonal = stencil_diagonal,
    .stencil_full_storage = stencil_full_storage,
    .stencil_lanczos = stencil_lanczos,
    .stencil_factor = stencil_factor,
    .stencil_solve = stencil_solve,
    .restrict_residual = restrict_residual,
    .prolong_add = prolong_add,
};

static const vox_design_ops mpi_design_ops = {
    .simp_moduli = simp_moduli,
    .simp_sensitivity = simp_sensitivity,
    .oc_update = oc_update,
    .oc_volumes = oc_volumes,
    .filter_create = filter_create,
    .filter_destroy = filter_destroy,
    .filter_apply = filter_apply,
    .filter_transpose = filter_transpose,
    .filter_sensitivity = filter_sensitivity,
    .filter_create_periodic = filter_create_periodic,
    .symmetrize = symmetrize,
};

static const vox_backend_ops mpi_ops = {
    .name = "mpi",
    .destroy = destroy,
    .synchronize = synchronize,
    .memory = memory,
    .memory_part = memory_part,
    .agree_max = agree_max,
    .results = results,
    .host_alloc = host_alloc,
    .host_free = host_free,
    .vec = &mpi_vec_ops,
    .op = &mpi_op_ops,
    .design = &mpi_design_ops,
};

int vox_mpi_slabs(int64_t nz, int ranks, int64_t *first) {
  if (ranks < 1 || nz < ranks) return -1;
  int m = 0;
  while (m < 62 && ((nz + ((int64_t)2 << m) - 1) >> (m + 1)) >= ranks) m++;
  const int64_t block = (int64_t)1 << m, blocks = (nz + block - 1) / block;
  int64_t at = 0;
  for (int r = 0; r < ranks; r++) {
    first[r] = at * block;
    at += blocks / ranks + (r < blocks % ranks);
  }
  first[ranks] = nz;
  return 0;
}

/* The weight of layers [j step, (j + 1) step), those of them below nz. */
static double block_weight(const double *weight, int64_t nz, int64_t step, int64_t j) {
  double w = 0;
  for (int64_t k = j * step; k < (j + 1) * step && k < nz; k++) w += weight[k];
  return w;
}

int vox_mpi_slabs_weighted(const double *weight, int64_t nz, int ranks, int64_t *first) {
  if (ranks < 1 || nz < ranks) return -1;
  /* in blocks of 4 layers (or 2) where every rank gets one, so that the
   * sparse storage's levels 1 and 2 split too (their slabs nest:
   * sparse_splits) */
  int64_t step = (int64_t)1 << (SPARSE_SPLIT_MAX - 1);
  while (step > 1 && nz < step * ranks) step /= 2;
  const int64_t blocks = (nz + step - 1) / step;
  double total = 0;
  for (int64_t k = 0; k < nz; k++) total += weight[k];
  first[0] = 0;
  first[ranks] = nz;
  double sum = 0; /* of the blocks before j */
  int64_t j = 0, at = 0; /* the block boundary of the rank before */
  for (int r = 1; r < ranks; r++) {
    const double share = total * r / ranks;
    /* past the blocks whose end is still short of the share */
    double w;
    while (j < blocks && sum + (w = block_weight(weight, nz, step, j)) <= share) sum += w, j++;
    /* j's own block to this rank where that ends nearer to the share */
    if (j < blocks && sum + (w = block_weight(weight, nz, step, j)) - share < share - sum)
      sum += w, j++;
    const int64_t lo = at + 1, hi = blocks - (ranks - r);
    at = j < lo ? lo : j > hi ? hi : j;
    for (; j < at; j++) sum += block_weight(weight, nz, step, j);
    for (; j > at; j--) sum -= block_weight(weight, nz, step, j - 1);
    first[r] = at * step;
  }
  return 0;
}

int vox_mpi_slabs_of_bone(const vox_model *model, int ranks, int64_t *first) {
  const int64_t nz = model->grid.nz, layer = model->grid.nx * model->grid.ny;
  double *weight = malloc((size_t)(nz > 0 ? nz : 1) * sizeof *weight);
  if (!weight) return -1;
#pragma omp parallel for schedule(static)
  for (int64_t k = 0; k < nz; k++) {
    int64_t bone = 0;
    for (int64_t e = k * layer; e < (k + 1) * layer; e++) bone += model->label[e] != 0;
    weight[k] = (double)bone;
  }
  const int split = vox_mpi_slabs_weighted(weight, nz, ranks, first);
  free(weight);
  return split;
}

/* The split of the layers: `first` checked, or vox_mpi_slabs. */
static vox_status slabs(vox_context *ctx, impl *m, const vox_grid *grid, const int64_t *first) {
  m->first = malloc(((size_t)m->size + 1) * sizeof *m->first);
  if (!m->first) return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
  if (first) {
    memcpy(m->first, first, ((size_t)m->size + 1) * sizeof *first);
    int ok = m->first[0] == 0 && m->first[m->size] == grid->nz;
    for (int r = 0; r < m->size && ok; r++) ok = m->first[r + 1] > m->first[r];
    if (!ok)
      return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                       "the slabs must cover the %lld element layers in order, at least one a rank",
                       (long long)grid->nz);
  } else if (vox_mpi_slabs(grid->nz, m->size, m->first) != 0) {
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "the grid has %lld element layers along z, fewer than the %d MPI ranks",
                     (long long)grid->nz, m->size);
  }
  return VOX_OK;
}

void vox_mpi_options_default(vox_mpi_options *options) {
  *options =
      (vox_mpi_options){.first = NULL,
                        .ranks_backend = NULL,
                        .exchange = VOX_MPI_EXCHANGE_AUTO,
                        .gather_nodes = VOX_MPI_GATHER_AUTO,
                        .results = VOX_MPI_RESULTS_EVERY_RANK,
                        .hierarchy = VOX_MPI_HIERARCHY_ROOT,
                        .overlap = VOX_MPI_OVERLAP_AUTO};
}

static const char *const exchange_names[] = {"auto", "nccl", "host"};

enum { N_EXCHANGES = sizeof exchange_names / sizeof exchange_names[0] };

const char *vox_mpi_exchange_name(vox_mpi_exchange e) {
  return (int)e >= 0 && (int)e < N_EXCHANGES ? exchange_names[e] : "unknown";
}

int vox_mpi_exchange_parse(const char *name, vox_mpi_exchange *out) {
  const int i = vox_name_index(name, exchange_names, N_EXCHANGES);
  if (i >= 0) *out = (vox_mpi_exchange)i;
  return i >= 0 ? 0 : -1;
}

static const char *const overlap_names[] = {"auto", "on", "off"};

const char *vox_mpi_overlap_name(vox_mpi_overlap o) {
  return (int)o >= 0 && (int)o < 3 ? overlap_names[o] : "unknown";
}

int vox_mpi_overlap_parse(const char *name, vox_mpi_overlap *out) {
  const int i = vox_name_index(name, overlap_names, 3);
  if (i >= 0) *out = (vox_mpi_overlap)i;
  return i >= 0 ? 0 : -1;
}

static const char *const hierarchy_names[] = {"root", "every"};

const char *vox_mpi_hierarchy_name(vox_mpi_hierarchy h) {
  return (int)h >= 0 && (int)h < 2 ? hierarchy_names[h] : "unknown";
}

int vox_mpi_hierarchy_parse(const char *name, vox_mpi_hierarchy *out) {
  const int i = vox_name_index(name, hierarchy_names, 2);
  if (i >= 0) *out = (vox_mpi_hierarchy)i;
  return i >= 0 ? 0 : -1;
}

vox_status vox_mpi_backend_create(vox_context *ctx, MPI_Comm comm, const vox_grid *grid,
                                  int dofs_per_node, const vox_mpi_options *options,
                                  vox_backend **out) {
  *out = NULL;
  vox_mpi_options o;
  vox_mpi_options_default(&o);
  if (options) o = *options;
  if (vox_grid_check(ctx, grid)) return VOX_ERR_INVALID_ARGUMENT;
  if (grid->periodic)
    return vox_error(ctx, VOX_ERR_UNSUPPORTED, "a periodic grid is not split over MPI ranks yet");
  if (dofs_per_node != 1 && dofs_per_node != 3)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "dofs per node %d: 1 or 3", dofs_per_node);
  if (o.results != VOX_MPI_RESULTS_EVERY_RANK && o.results != VOX_MPI_RESULTS_ROOT)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "results %d: every rank (0) or root (1)",
                     o.results);
  if (o.hierarchy != VOX_MPI_HIERARCHY_ROOT && o.hierarchy != VOX_MPI_HIERARCHY_EVERY_RANK)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "hierarchy %d: root (0) or every rank (1)",
                     o.hierarchy);
  vox_backend *be = calloc(1, sizeof *be);
  impl *m = calloc(1, sizeof *m);
  if (!be || !m) {
    free(be);
    free(m);
    return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
  }
  m->comm = comm;
  MPI_Comm_rank(comm, &m->rank);
  MPI_Comm_size(comm, &m->size);
  m->dpn = dofs_per_node;
  m->results_root = o.results == VOX_MPI_RESULTS_ROOT;
  m->hierarchy_root = o.hierarchy == VOX_MPI_HIERARCHY_ROOT;
  m->ops = mpi_ops;
  m->mg = mpi_mg_ops;
  m->ops.mg = &m->mg;
  be->ops = &m->ops;
  be->ctx = ctx;
  be->impl = m;
  vox_backend_options ranks;
  vox_backend_options_default(&ranks);
  ranks.device = VOX_DEVICE_CPU;
  if (o.ranks_backend) ranks = *o.ranks_backend;
  vox_status s = slabs(ctx, m, grid, o.first);
  /* a failure to make the ranks' backend (no device) on any rank fails all */
  if (s == VOX_OK) s = vox_backend_create_with(ctx, &ranks, &m->in);
  int failed = s != VOX_OK;
  MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, comm);
  if (failed && s == VOX_OK)
    s = vox_error(ctx, VOX_ERR_DEVICE, "the MPI backend failed on another rank");
  if (s == VOX_OK) {
    m->host = vox_backend_device(m->in) == VOX_DEVICE_CPU;
    m->gather_nodes = o.gather_nodes >= 0 ? (size_t)o.gather_nodes
                      : m->host           ? (size_t)VOX_MPI_GATHER_CPU
                                          : (size_t)VOX_MPI_GATHER_GPU;
    m->overlap = (vox_mpi_overlap)o.overlap;
    s = make_levels(ctx, m, grid);
  }
  if (s == VOX_OK) {
    m->mg.stencil_blocks = m->in->ops->mg->stencil_blocks;
    m->mg.dense_coarse_dofs = m->in->ops->mg->dense_coarse_dofs;
    m->mg.coarse_dofs = m->in->ops->mg->coarse_dofs;
    if (m->in->ops->sparse) {
      m->sparse = mpi_sparse_ops;
      m->sparse.node4 = m->in->ops->sparse->node4;
      m->ops.sparse = &m->sparse;
    }
    be->device = m->in->device;
    be->device_index = m->in->device_index;
    be->threads = m->in->threads;
    be->kernel = m->in->kernel;
    be->fp16_levels = m->in->fp16_levels;
    be->stencil_kernel = m->in->stencil_kernel;
    /* the largest layer: the sparse storage's inverse 3 x 3 blocks (6
     * values a node) of a whole node layer, or the box's dofs */
    const size_t layer_nodes = (size_t)(grid->nx + 1) * (size_t)(grid->ny + 1);
    s = vox_mpi_halo_create(ctx, comm, m->in, o.exchange,
                            (m->dpn == 3 ? 6 : 1) * layer_nodes, &m->halo);
  }
  if (s == VOX_OK)
    s = m->in->ops->vec->create(m->in, 2 * m->lv[0].nodes.unit, VOX_DOUBLE, &m->recv);
  if (s != VOX_OK) {
    destroy(be);
    return s;
  }
  *out = be;
  return VOX_OK;
}

void vox_mpi_backend_slab(const vox_backend *be, int64_t *first, int64_t *end) {
  const impl *m = M(be);
  *first = m->first[m->rank], *end = m->first[m->rank + 1];
}

int vox_mpi_backend_split_levels(const vox_backend *be) { return M(be)->split_levels; }
int vox_mpi_backend_sparse_split_levels(const vox_backend *be) {
  return M(be)->sparse_split_levels;
}

const char *vox_mpi_backend_exchange(const vox_backend *be) {
  return vox_mpi_halo_name(M(be)->halo);
}

int vox_mpi_backend_records(const vox_backend *be) {
  const impl *m = M(be);
  return m->in->ops->sparse && m->in->ops->sparse->record_begin && vox_mpi_halo_records(m->halo);
}
