/* SPDX-License-Identifier: BSD-3-Clause */
/* The backend operations of the sparse (bone-only) system (private): what
 * sparse_solve.c is written against, one table per backend, reached through
 * vox_backend_ops.sparse.
 *
 * A sparse level stores only its active nodes, numbered in the box's
 * lexicographic order (x fastest), and its active elements, also in box
 * order. Since the two x-neighbours of an element's edge are both active and
 * no active node lies between them, the node at x + 1 is always the next
 * index: an element stores four node indices, those of its corners (0,0,0),
 * (0,1,0), (0,0,1) and (0,1,1) (y and z offsets), and its corner (1, y, z)
 * is that index + 1. That is 16 bytes per element where eight indices take
 * 32. docs/engine.md ("Sparse storage") gives the memory arithmetic.
 *
 * A coarse level split along the bone's connectivity (sparse_split.h) may
 * hold several copies of a box node, and then an element's x = 1 corners
 * are not always the next indices: such a level stores them too, four more
 * indices an element (`element_nodes_x1`). */
#ifndef VOXFE_SPARSE_OPS_H
#define VOXFE_SPARSE_OPS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "sparse_bsr.h"
#include "vector.h"
#include "voxfe/backend.h"

/* float <-> bfloat16, rounding to the nearest (ties to even), as CUDA's
 * __float2bfloat16 */
static inline float vox_bf16_to_float(uint16_t h) {
  const uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}
static inline uint16_t vox_float_to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)(u >> 16 | 0x40u); /* NaN stays NaN */
  return (uint16_t)((u + 0x7fffu + (u >> 16 & 1u)) >> 16);
}

/* Where inv_block_diagonal sums the blocks: in w itself, or for a bfloat16
 * w in float in the scratch (at least w->n floats' bytes). */
static inline vox_status vox_block_sums(vox_context *ctx, const vox_vec *w,
                                        const vox_vec *scratch, vox_vec *sum) {
  *sum = *w;
  if (w->scalar != VOX_BF16) return VOX_OK;
  if (!scratch || scratch->n * vox_scalar_bytes(scratch->scalar) < w->n * sizeof(float))
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "inverse blocks: scratch too small");
  sum->raw = scratch->raw;
  sum->n = w->n;
  sum->scalar = VOX_FLOAT;
  return VOX_OK;
}

/* Entry i of a host vector of any precision, as a double (the CPU
 * backend's sparse operations). */
static inline double vox_vec_get(const vox_vec *v, size_t i) {
  if (v->scalar == VOX_BF16) return vox_bf16_to_float(((const uint16_t *)v->data)[i]);
  return v->scalar ? (double)((const float *)v->data)[i] : ((const double *)v->data)[i];
}
static inline void vox_vec_put(vox_vec *v, size_t i, double a) {
  if (v->scalar == VOX_BF16)
    ((uint16_t *)v->data)[i] = vox_float_to_bf16((float)a);
  else if (v->scalar)
    ((float *)v->data)[i] = (float)a;
  else
    ((double *)v->data)[i] = a;
}

/* The eight corner nodes of element e, in vox_hex8_corner's order, from
 * its x = 0 corners (`x0`, four an element) and its x = 1 corners (`x1`,
 * likewise; NULL: the x = 0 corner's index + 1). */
static inline void vox_sparse_corners(const int32_t *x0, const int32_t *x1, size_t e,
                                      int32_t node[8]) {
  static const int yz[8] = {0, 0, 1, 1, 2, 2, 3, 3}; /* vox_hex8_corner: y + 2 z */
  static const int x[8] = {0, 1, 1, 0, 0, 1, 1, 0};
  for (int a = 0; a < 8; a++)
    node[a] = x[a] && x1 ? x1[4 * e + (size_t)yz[a]] : x0[4 * e + (size_t)yz[a]] + x[a];
}

/* Prolongation data of a fine node: the coarse element that contains it and
 * its position there, (px + 3 py + 9 pz) with p 0 (on the coarse element's
 * low node), 1 (halfway) or 2 (on its high node) along each axis. */
enum { VOX_SPARSE_POS_BITS = 5 };
static inline uint32_t vox_sparse_parent(uint32_t coarse_element, int pos) {
  return coarse_element << VOX_SPARSE_POS_BITS | (uint32_t)pos;
}
/* Coarse elements a backend's parent word (32 bits) can name: a process's
 * part of the next level (an MPI rank's slab numbers its own). */
#define VOX_SPARSE_MAX_COARSE_ELEMENTS ((size_t)1 << (32 - VOX_SPARSE_POS_BITS))
/* The host's parent words (sparse_hierarchy.h, vox_sparse_level_desc) are
 * the same in 64 bits: a whole level may hold more coarse elements than a
 * backend's word names (perlin32's level 1 holds more than 2^27). */
static inline uint64_t vox_sparse_parent_wide(uint64_t coarse_element, int pos) {
  return coarse_element << VOX_SPARSE_POS_BITS | (uint64_t)pos;
}

/* A fine node in several coarse elements may take any of them as parent
 * (the prolongation is the same), but the choice must not depend on the
 * threads' timing: the ranks of an MPI solve build their hierarchies on
 * their own and split level 1 by its parents. Each fine element offers its
 * nodes their words from all threads at once; a node keeps the largest
 * (*slot 0 before the first offer). */
static inline void vox_sparse_parent_offer(uint64_t *slot, uint64_t word) {
  uint64_t seen = __atomic_load_n(slot, __ATOMIC_RELAXED);
  while (word > seen &&
         !__atomic_compare_exchange_n(slot, &seen, word, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
}

/* One level as the host built it (sparse_hierarchy.h); the backend copies
 * what it needs. */
typedef struct vox_sparse_level_desc {
  size_t n_nodes, n_elements;
  const int32_t *element_nodes; /* 4 per element (see above) */
  const int32_t *element_nodes_x1; /* 4 per element, or NULL (see above) */
  /* element moduli: `material` (one byte per element) indexing `table`
   * (256 doubles, exact: level 0) when not NULL, else `modulus` (float: the
   * coarse levels, which only precondition) */
  const uint8_t *material;
  const double *table;
  const float *modulus;
  const double *ke;             /* 24 x 24 element matrix of unit modulus */
  const uint8_t *node_fixed;    /* per node: bit c set = dof c is fixed */
  /* per node, the coarse level's parent word (64 bits, numbering the whole
   * next level; a backend keeps them in 32: vox_sparse_parents_narrow);
   * NULL on the coarsest level */
  const uint64_t *parent;
  /* the elements of box layer k (along z) are [layer_start[k],
   * layer_start[k+1]), likewise the nodes of node layer k: CPU threads take
   * slabs of layers so that no two write the same node */
  const size_t *element_layer_start; /* nz + 1 */
  const size_t *node_layer_start;    /* nz + 2 */
  int64_t nz;                   /* element layers of the box */
  /* level `level` of n_levels, and the next level's element layer starts
   * (NULL on the coarsest), which a backend that splits both levels into
   * slabs numbers `parent`'s coarse elements by */
  int level, n_levels;
  const size_t *parent_element_layer_start;
} vox_sparse_level_desc;

typedef struct vox_sparse_level vox_sparse_level; /* defined by each backend */
/* An assembled block sparse row matrix (sparse_bsr.h) on the backend: the
 * smoothed-aggregation levels, transfers and inverse blocks (sparse_sa.h). */
typedef struct vox_sparse_matrix vox_sparse_matrix;

/* Where the entries of a symmetric 3 x 3 block lie among its six. */
enum { VOX_BLOCK_XX, VOX_BLOCK_XY, VOX_BLOCK_XZ, VOX_BLOCK_YY, VOX_BLOCK_YZ, VOX_BLOCK_ZZ };
/* The entry (i, j) of a 3 x 3 block as one of its six. */
#ifdef __CUDACC__
__host__ __device__
#endif
static inline int vox_block_entry(int i, int j) {
  const int a = i < j ? i : j, b = i < j ? j : i;
  return a == 0 ? b : a == 1 ? 2 + b : 5;
}

/* The inverse of a symmetric 3 x 3 block (six entries, as above) with the
 * rows and columns of the components set in `fixed` (bits) taken as the
 * identity's; the identity where what is left is not positive definite;
 * then the fixed components' diagonal entries zero: the smoother never
 * moves a fixed dof, whatever the residual there (the V-cycle's products
 * are the plain K x, fixed rows and all). By cofactors in
 * double: a node's block is a sum of its elements' blocks, each positive
 * definite, so no pivoting is needed. */
#ifdef __CUDACC__
__host__ __device__
#endif
static inline void vox_block_invert(const double in[6], unsigned fixed, double out[6]) {
  double a[6];
  for (int i = 0; i < 3; i++)
    for (int j = i; j < 3; j++) {
      const int k = vox_block_entry(i, j);
      a[k] = ((fixed >> i | fixed >> j) & 1) ? (i == j ? 1.0 : 0.0) : in[k];
    }
  const double c00 = a[3] * a[5] - a[4] * a[4], c01 = a[2] * a[4] - a[1] * a[5],
               c02 = a[1] * a[4] - a[2] * a[3];
  const double det = a[0] * c00 + a[1] * c01 + a[2] * c02;
  /* positive definite: leading minors a00 > 0, a00 a11 - a01^2 > 0, det > 0 */
  if (!(a[0] > 0 && a[0] * a[3] - a[1] * a[1] > 0 && det > 0)) {
    out[0] = out[3] = out[5] = 1;
    out[1] = out[2] = out[4] = 0;
  } else {
    const double r = 1 / det;
    out[VOX_BLOCK_XX] = c00 * r;
    out[VOX_BLOCK_XY] = c01 * r;
    out[VOX_BLOCK_XZ] = c02 * r;
    out[VOX_BLOCK_YY] = (a[0] * a[5] - a[2] * a[2]) * r;
    out[VOX_BLOCK_YZ] = (a[1] * a[2] - a[0] * a[4]) * r;
    out[VOX_BLOCK_ZZ] = (a[0] * a[3] - a[1] * a[1]) * r;
  }
  for (int i = 0; i < 3; i++)
    if (fixed >> i & 1) out[vox_block_entry(i, i)] = 0;
}

/* The vectors of a sparse level are backend vectors (vec->create) in
 * double or float; the smoother's inverse blocks in mixed precision are
 * bfloat16 (VOX_BF16), which only vec->create, destroy, set, copy and
 * vec_scatter, inv_block_diagonal and block_smoother_step below take. On a
 * backend with `node4` set, the V-cycle's products A x are VOX_FLOAT_NODE4
 * vectors (vector.h): the product adds a node's three entries as one
 * 16-byte atomic where they would straddle two or three; apply's y, the
 * smoother steps' and the restriction's ax, and vec->create, destroy and
 * set take them. The operations here accept any mix of double and float
 * (the mixed-precision V-cycle), where the vec table's take double. */
typedef struct vox_sparse_hierarchy vox_sparse_hierarchy; /* sparse_hierarchy.h */

typedef struct vox_sparse_ops {
  /* VOX_FLOAT_NODE4 vectors taken */
  int node4;
  /* Optional (NULL: each process builds its own): a backend over several
   * processes (the MPI backend) builds a solve's host hierarchy on one of
   * them and copies it to the others. builds_hierarchy says whether this
   * process builds it; share_hierarchy (collective) passes `status`, the
   * builder's outcome, and its hierarchy to every process: on the others
   * *h (freed first) becomes the copy of what this backend's levels and the
   * solve read there (the MPI backend's: of a split level the rank's slab
   * part alone, the arrays' other entries never written), and a failed
   * build fails every process. */
  int (*builds_hierarchy)(const vox_backend *be);
  vox_status (*share_hierarchy)(vox_backend *be, vox_status status, vox_sparse_hierarchy *h);
  /* 1: the solve may view part of a vector's memory as a vector of its
   * own (level 0's smoother direction in the second half of CG's q); 0
   * (the MPI backend's, whose vectors are its own structures): it makes
   * that vector */
  int views;
  /* v[index[i]] = value[i] for i < n, the indices distinct; v's other
   * entries as they were (the solve's prescribed values and loads: a few
   * entries, where uploading a whole vector would move them all) */
  vox_status (*vec_scatter)(vox_backend *be, vox_vec *v, size_t n, const size_t *index,
                            const double *value);
  /* y += a x;  y = x + a y;  any mix of precisions */
  vox_status (*vec_axpy)(vox_backend *be, vox_vec *y, double a, const vox_vec *x);
  vox_status (*vec_xpay)(vox_backend *be, vox_vec *y, double a, const vox_vec *x);
  vox_status (*vec_dot)(vox_backend *be, const vox_vec *x, const vox_vec *y, double *out);
  /* CG's update in one pass: u += alpha p, r -= alpha q, copy = r in the
   * copy's precision (NULL: none), *rr = r . r (summed as vec_dot) */
  vox_status (*cg_update)(vox_backend *be, double alpha, const vox_vec *p, const vox_vec *q,
                          vox_vec *u, vox_vec *r, vox_vec *copy, double *rr);
  /* d = alpha inv_diag .* (b - ax) + beta d, then x += d (ax NULL: A x = 0;
   * beta = 0 overwrites d) */
  vox_status (*smoother_step)(vox_backend *be, const vox_vec *b, const vox_vec *ax,
                              const vox_vec *inv_diag, double alpha, double beta, vox_vec *d,
                              vox_vec *x);
  /* The same with a node's 3 x 3 block: d_m = alpha W_m (b - ax)_m + beta d_m
   * for each node m, W_m its six entries in `inv_blocks` (as inv_blocks
   * below; x, d, b, ax have 3 entries a node). */
  vox_status (*block_smoother_step)(vox_backend *be, const vox_vec *b, const vox_vec *ax,
                                    const vox_vec *inv_blocks, double alpha, double beta,
                                    vox_vec *d, vox_vec *x);

  vox_status (*level_create)(vox_backend *be, const vox_sparse_level_desc *desc,
                             vox_sparse_level **out);
  /* The nodes and elements of level `level` (described by desc) that this
   * process will hold (the MPI backend's: a rank's slab of a split level), for
   * the memory check before anything is allocated; NULL: all of them. */
  void (*level_share)(const vox_backend *be, const vox_sparse_level_desc *desc, int level,
                      size_t *nodes, size_t *elements);
  void (*level_destroy)(vox_backend *be, vox_sparse_level *level);
  /* Bytes the level holds on the backend. */
  size_t (*level_bytes)(const vox_sparse_level *level);
  /* y = K x with the fixed dofs eliminated (y_c = x_c), or the plain K x
   * with VOX_APPLY_FULL (the V-cycle's, whose x is zero on fixed dofs);
   * VOX_APPLY_SINGLE lets the backend compute in float. */
  vox_status (*apply)(vox_backend *be, vox_sparse_level *level, const vox_vec *x, vox_vec *y,
                      int flags);
  /* d = 1 / diag(K) (0 on fixed dofs, as the blocks' vox_block_invert) */
  vox_status (*inv_diagonal)(vox_backend *be, vox_sparse_level *level, vox_vec *d);
  /* w = the inverse of each node's 3 x 3 diagonal block of K (its fixed
   * components' rows and columns the identity's), six entries a node, the
   * upper triangle row by row (VOX_BLOCK_XX ...); w has 6 n_nodes entries. A
   * block that is not positive definite (a node of no element) is
   * replaced by the identity. */
  /* A bfloat16 w is summed in float in `scratch` first (at least 6
   * n_nodes floats' bytes, any precision; NULL otherwise). */
  vox_status (*inv_block_diagonal)(vox_backend *be, vox_sparse_level *level, vox_vec *w,
                                   vox_vec *scratch);
  vox_status (*zero_fixed)(vox_backend *be, vox_sparse_level *level, vox_vec *v);
  /* coarse = P^T Z (b - ax)  (b NULL: P^T Z ax)  and  fine += Z P coarse,
   * with P trilinear interpolation through the parent words and Z zeroing
   * the fine level's fixed dofs (so the coarse correction never moves a
   * fixed dof); the V-cycle restricts its residual b - A x without
   * forming it */
  vox_status (*restrict_residual)(vox_backend *be, vox_sparse_level *fine,
                                  vox_sparse_level *coarse, const vox_vec *b,
                                  const vox_vec *ax, vox_vec *r_coarse);
  vox_status (*prolong_add)(vox_backend *be, vox_sparse_level *fine, vox_sparse_level *coarse,
                            const vox_vec *x_coarse, vox_vec *x_fine);

  /* Recording a fixed sequence of the element levels' ops above (the
   * V-cycle) to replay it at once (NULL on a backend without them, which
   * then runs the ops one by one): between record_begin and record_end the
   * ops are recorded, not run, and must not read results on the host;
   * record_end ends the recording whatever happened in it and returns it,
   * or fails where an op could not be recorded; replay runs it on the
   * vectors and scalars it was recorded with. */
  vox_status (*record_begin)(vox_backend *be);
  vox_status (*record_end)(vox_backend *be, void **recording);
  vox_status (*replay)(vox_backend *be, void *recording);
  void (*recording_free)(vox_backend *be, void *recording);

  /* Assembled matrices, for the smoothed-aggregation coarse levels
   * (--sparse-coarse=sa; NULL on a backend without them, which the
   * solver then refuses). Values stored in float when `single` (the
   * V-cycle's matrices in mixed precision), else double; products in
   * double. */
  vox_status (*matrix_create)(vox_backend *be, const vox_bsr *host, int single,
                              vox_sparse_matrix **out);
  void (*matrix_destroy)(vox_backend *be, vox_sparse_matrix *m);
  size_t (*matrix_bytes)(const vox_sparse_matrix *m);
  /* y = M x, or y += M x with `add` (x and y of any precision) */
  vox_status (*matrix_apply)(vox_backend *be, const vox_sparse_matrix *m, const vox_vec *x,
                             vox_vec *y, int add);
  /* d = alpha W (b - ax) + beta d, then x += d, W a matrix of the vectors'
   * size (the inverted diagonal blocks; ax NULL: A x = 0; beta = 0
   * overwrites d) */
  vox_status (*matrix_smoother_step)(vox_backend *be, const vox_sparse_matrix *w,
                                     const vox_vec *b, const vox_vec *ax, double alpha,
                                     double beta, vox_vec *d, vox_vec *x);
} vox_sparse_ops;

#ifdef __cplusplus
extern "C" {
#endif
extern const vox_sparse_ops vox_cpu_sparse_ops;
/* n host parent words as a backend keeps them (32 bits), in a new array
 * (*out, free() it; NULL where `parent` is NULL); fails where one names a
 * coarse element beyond VOX_SPARSE_MAX_COARSE_ELEMENTS (the process holds
 * too much of the next level). sparse_hierarchy.c */
vox_status vox_sparse_parents_narrow(vox_context *ctx, const uint64_t *parent, size_t n,
                                     uint32_t **out);
#ifdef VOXFE_HAVE_CUDA
extern const vox_sparse_ops vox_cuda_sparse_ops;
#endif
#ifdef __cplusplus
}
#endif

#endif
