/* SPDX-License-Identifier: BSD-3-Clause */
/* Coarse levels that follow the bone's connectivity (sparse_split.h). Every
 * pass is parallel: the joins through a lock-free union-find
 * (union_find.h), the numbering per layer of the coarse box; threads take
 * layers or chunks as they come free, since voxfe-analyze builds this
 * while its device warm-up and writer threads share the cores.
 *
 *  1. pieces: the fine elements are joined where they share a fine node
 *     and lie in one coarse cell; the sets are the pieces, numbered in the
 *     order of their cells, then of their first element. From level 0
 *     every non-empty cell is one piece (its elements all hold the fine
 *     node at its centre), and its voxels, a bit each, are all the joins
 *     below need to know: no union-find over the elements, and no table of
 *     each fine node's elements (32 bytes a node);
 *  2. copies: every piece has eight slots, one per corner; where two pieces
 *     share a fine node, the slots of the corners their cells have in
 *     common and whose interpolation reaches that node are joined; the sets
 *     of slots of one box node are its copies, numbered in box order, then
 *     in the order of their first slot. From level 0 the sets are found
 *     per coarse node among its at most eight slots, from the 27 fine
 *     nodes each cell's voxels touch around it: no union-find over all
 *     slots;
 *  3. the pieces become the coarse elements, their slots' copies their
 *     corners; the fine nodes learn their parents (level 0's from the
 *     cells' voxels at each node), the copies their fixed components. */
#include "sparse_split.h"

#include <stdlib.h>
#include <string.h>

#include "backend_ops.h"
#include "host_memory.h"
#include "prefix_sum.h"
#include "union_find.h"
#include "voxfe/element.h"

static vox_status no_memory(vox_context *ctx, const char *what) {
  return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory for the sparse system (%s)", what);
}

/* vox_hex8_corner's index of corner (x, y, z) */
static inline int corner_index(int x, int y, int z) {
  static const int t[8] = {0, 1, 3, 2, 4, 5, 7, 6};
  return t[x + 2 * y + 4 * z];
}

/* Of a cell's eight voxels (bit x + 2y + 4z), those whose coordinate
 * along axis a is 0 (voxels_lower[a]) or 1 (voxels_upper[a]). */
static const uint8_t voxels_lower[3] = {0x55, 0x33, 0x0f}, voxels_upper[3] = {0xaa, 0xcc, 0xf0};

static inline void box_ijk(int64_t b, int64_t nx, int64_t ny, int64_t ijk[3]) {
  ijk[0] = b % nx, ijk[1] = (b / nx) % ny, ijk[2] = b / (nx * ny);
}

static inline double fine_modulus(const vox_sparse_host_level *f, const double *table, size_t e) {
  return f->material ? table[f->material[e]] : (double)f->modulus[e];
}

typedef struct split {
  const double *table;
  const vox_sparse_host_level *f;
  vox_sparse_host_level *c;
  int32_t *node_elem;   /* per fine node and corner: an element that has it there, or -1
                         * (not from level 0) */
  uint8_t *cell_voxels; /* from level 0: per coarse cell, bit x + 2y + 4z set where its
                         * fine voxel (x, y, z) is an element */
  int64_t *cell_of;     /* per fine element: its coarse cell (box index) */
  int64_t *elem_set;    /* union-find over the fine elements (pieces) */
  int32_t *piece_of;    /* per fine element (not from level 0) */
  size_t *cell_piece;   /* per coarse cell + 1: its first piece */
  int64_t *slot_set;    /* union-find over the pieces' corners, 8 a piece */
  size_t *node_start;   /* per coarse box node + 1: its first copy */
  int32_t *slot_copy;   /* per slot: its copy */
  uint32_t (*reach)[256]; /* from level 0: reach_masks */
} split;

/* Pieces are numbered per coarse layer (a thread a layer), whose pieces
 * come from fine layers 2k and 2k + 1 only: each layer's count
 * (layer_pieces[k]) becomes its first piece, layer_pieces[cnz] the total,
 * and the coarse elements' arrays are allocated for them. */
static vox_status allocate_pieces(vox_context *ctx, vox_sparse_host_level *c,
                                  size_t *layer_pieces, int64_t cnz) {
  size_t total = 0;
  for (int64_t kc = 0; kc <= cnz; kc++) {
    const size_t n = kc < cnz ? layer_pieces[kc] : 0;
    layer_pieces[kc] = total;
    total += n;
  }
  c->n_elements = total;
  if (total > INT32_MAX)
    return vox_error(ctx, VOX_ERR_UNSUPPORTED, "too many coarse elements for the sparse system");
  c->element_box = vox_host_malloc((total ? total : 1) * sizeof *c->element_box);
  c->modulus = vox_host_calloc(total ? total : 1, sizeof *c->modulus);
  if (!c->element_box || !c->modulus) return no_memory(ctx, "coarse elements");
  return VOX_OK;
}

/* 1, from level 0: the cells' voxels, then a piece for each cell that has
 * any, its modulus summed in element order (as the general pass below). */
static vox_status cell_pieces(vox_context *ctx, split *sp) {
  const vox_sparse_host_level *f = sp->f;
  vox_sparse_host_level *c = sp->c;
  const vox_grid *cg = &c->grid;
  const int64_t cnx = cg->nx, cnz = cg->nz, plane = cnx * cg->ny;
  const int64_t fnx = f->grid.nx, fplane = fnx * f->grid.ny;
  const size_t *els = f->element_layer_start;
  size_t *layer_pieces = calloc((size_t)cnz + 1, sizeof *layer_pieces);
  if (!layer_pieces) return no_memory(ctx, "pieces");
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t kc = 0; kc < cnz; kc++) {
    uint8_t *voxels = sp->cell_voxels + kc * plane;
    for (int64_t k = 2 * kc; k < 2 * kc + 2 && k < f->grid.nz; k++)
      for (size_t e = els[k]; e < els[k + 1]; e++) {
        const int64_t r = f->element_box[e] - k * fplane, j = r / fnx, i = r - j * fnx;
        const int bit = (int)((i & 1) + 2 * (j & 1) + 4 * (k & 1));
        voxels[(j >> 1) * cnx + (i >> 1)] |= (uint8_t)(1u << bit);
      }
    size_t n = 0;
    for (int64_t q = 0; q < plane; q++) n += voxels[q] != 0;
    layer_pieces[kc] = n;
  }
  vox_status s = allocate_pieces(ctx, c, layer_pieces, cnz);
  if (s) {
    free(layer_pieces);
    return s;
  }
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t kc = 0; kc < cnz; kc++) {
    const uint8_t *voxels = sp->cell_voxels + kc * plane;
    size_t p = layer_pieces[kc];
    for (int64_t q = 0; q < plane; q++) {
      sp->cell_piece[kc * plane + q] = p;
      if (voxels[q]) c->element_box[p++] = kc * plane + q;
    }
    for (int64_t k = 2 * kc; k < 2 * kc + 2 && k < f->grid.nz; k++)
      for (size_t e = els[k]; e < els[k + 1]; e++) {
        const int64_t r = f->element_box[e] - k * fplane, j = r / fnx, i = r - j * fnx;
        const size_t piece = sp->cell_piece[kc * plane + (j >> 1) * cnx + (i >> 1)];
        c->modulus[piece] += (float)(fine_modulus(f, sp->table, e) / 8);
      }
  }
  sp->cell_piece[cnz * plane] = c->n_elements;
  free(layer_pieces);
  return VOX_OK;
}

/* 1. The pieces of a level with copies: fine elements joined through
 * shared nodes within a cell. */
static vox_status find_pieces(vox_context *ctx, split *sp) {
  const vox_sparse_host_level *f = sp->f;
  vox_sparse_host_level *c = sp->c;
  const vox_grid *cg = &c->grid;
  const ptrdiff_t nfe = (ptrdiff_t)f->n_elements, nfn = (ptrdiff_t)f->n_nodes;
  const int64_t cnz = cg->nz, plane = cg->nx * cg->ny;
  const size_t *els = f->element_layer_start;
#define FINE_RANGE(kc)                                                                   \
  const size_t e0 = els[2 * (kc)], e1 = els[2 * (kc) + 2 < f->grid.nz ? 2 * (kc) + 2 : f->grid.nz]
  int failed = 0;
  /* each fine element's coarse cell, a fine layer a thread (one division
   * an element: the box index less its layer's start) */
  const int64_t fnx = f->grid.nx, fplane = fnx * f->grid.ny;
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t k = 0; k < f->grid.nz; k++)
    for (size_t e = els[k]; e < els[k + 1]; e++) {
      const int64_t r = f->element_box[e] - k * fplane, j = r / fnx, i = r - j * fnx;
      sp->cell_of[e] = ((k / 2) * cg->ny + j / 2) * cg->nx + i / 2;
    }
#pragma omp parallel for schedule(dynamic, 16384)
  for (ptrdiff_t e = 0; e < nfe; e++) sp->elem_set[e] = e;
  /* an element at each node's corner; two at one (the copies of a coarse
   * level's node) lie in one fine cell and share the node: joined */
#pragma omp parallel for schedule(dynamic, 16384)
  for (ptrdiff_t e = 0; e < nfe; e++) {
    int32_t node[8];
    vox_sparse_corners(f->element_nodes, f->element_nodes_x1, (size_t)e, node);
    for (int a = 0; a < 8; a++) {
      int32_t *at = &sp->node_elem[8 * (size_t)node[a] + (size_t)a];
      int32_t expected = -1;
      if (!__atomic_compare_exchange_n(at, &expected, (int32_t)e, 0, __ATOMIC_RELAXED,
                                       __ATOMIC_RELAXED))
        vox_uf_unite(sp->elem_set, e, expected);
    }
  }
  /* the elements at one node in one coarse cell */
#pragma omp parallel for schedule(dynamic, 16384)
  for (ptrdiff_t m = 0; m < nfn; m++) {
    int64_t cell[8];
    const int32_t *at = sp->node_elem + 8 * m;
    for (int a = 0; a < 8; a++) {
      if (at[a] < 0) continue;
      cell[a] = sp->cell_of[at[a]];
      for (int b = 0; b < a; b++)
        if (at[b] >= 0 && cell[b] == cell[a]) {
          vox_uf_unite(sp->elem_set, at[a], at[b]);
          break;
        }
    }
  }
  /* the roots (each set's first element) numbered by cell, then by root:
   * counted per coarse layer, whose pieces come from fine layers 2k and
   * 2k + 1 only, then numbered per layer */
  size_t *layer_pieces = calloc((size_t)cnz + 1, sizeof *layer_pieces);
  if (!layer_pieces) return no_memory(ctx, "pieces");
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t kc = 0; kc < cnz; kc++) {
    FINE_RANGE(kc);
    size_t n = 0;
    for (size_t e = e0; e < e1; e++) n += vox_uf_find(sp->elem_set, (int64_t)e) == (int64_t)e;
    layer_pieces[kc] = n;
  }
  vox_status s = allocate_pieces(ctx, c, layer_pieces, cnz);
  if (s) {
    free(layer_pieces);
    return s;
  }
#pragma omp parallel
  {
    size_t *count = malloc(((size_t)plane + 1) * sizeof *count);
    if (!count) __atomic_store_n(&failed, 1, __ATOMIC_RELAXED);
#pragma omp for schedule(dynamic, 1)
    for (int64_t kc = 0; kc < cnz; kc++) {
      if (!count) continue;
      FINE_RANGE(kc);
      memset(count, 0, ((size_t)plane + 1) * sizeof *count);
      for (size_t e = e0; e < e1; e++)
        if (vox_uf_find(sp->elem_set, (int64_t)e) == (int64_t)e)
          count[sp->cell_of[e] - kc * plane + 1]++;
      count[0] = layer_pieces[kc];
      for (int64_t q = 0; q < plane; q++) {
        count[q + 1] += count[q];
        sp->cell_piece[kc * plane + q] = count[q];
      }
      /* count[q]: the next piece of plane cell q; roots come in element
       * order, so a cell's pieces are in the order of their roots */
      for (size_t e = e0; e < e1; e++)
        if (vox_uf_find(sp->elem_set, (int64_t)e) == (int64_t)e) {
          const int64_t cell = sp->cell_of[e];
          const size_t p = count[cell - kc * plane]++;
          sp->piece_of[e] = (int32_t)p;
          c->element_box[p] = cell;
        }
      for (size_t e = e0; e < e1; e++) {
        const int64_t root = vox_uf_find(sp->elem_set, (int64_t)e);
        if (root != (int64_t)e) sp->piece_of[e] = sp->piece_of[root];
        c->modulus[sp->piece_of[e]] += (float)(fine_modulus(f, sp->table, e) / 8);
      }
    }
    free(count);
  }
#undef FINE_RANGE
  sp->cell_piece[cnz * plane] = c->n_elements;
  free(layer_pieces);
  return failed ? no_memory(ctx, "pieces") : VOX_OK;
}

/* The distinct pieces at fine node m, at box position fijk, and their
 * cells, from the elements at its corners (each corner's element starts at
 * the node less the corner); returns how many. */
static int pieces_at_node(const split *sp, size_t m, const int64_t fijk[3], int32_t piece[8],
                          int64_t cell[8][3]) {
  int n = 0;
  const int32_t *at = sp->node_elem + 8 * m;
  for (int a = 0; a < 8; a++) {
    const int32_t e = at[a];
    if (e < 0) continue;
    const int32_t p = sp->piece_of[e];
    int seen = 0;
    for (int b = 0; b < n; b++) seen |= piece[b] == p;
    if (seen) continue;
    piece[n] = p;
    for (int x = 0; x < 3; x++) cell[n][x] = (fijk[x] - vox_hex8_corner[a][x]) >> 1;
    n++;
  }
  return n;
}

/* From level 0, the parent word of the fine node at box position fijk:
 * of the pieces at it, the largest word the elements there would offer
 * (vox_sparse_parent_offer), which is the last cell's in box order whose
 * voxels touch the node, since a cell's elements are one piece and pieces
 * are numbered in the order of their cells. Per axis the node lies inside
 * a cell (an odd position: both of its voxels along the axis touch the
 * node) or between two (even: the lower cell's upper voxel and the upper
 * cell's lower one), so each cell around it is tested by a mask of its
 * voxels that touch the node. */
static uint64_t parent_of_cells(const split *sp, const int64_t fijk[3]) {
  const vox_grid *cg = &sp->c->grid;
  const int64_t cn[3] = {cg->nx, cg->ny, cg->nz};
  int64_t at[3][2];
  uint8_t touch[3][2];
  int count[3];
  for (int x = 0; x < 3; x++) {
    const int64_t v = fijk[x];
    count[x] = 0;
    if (v & 1) {
      at[x][0] = v >> 1, touch[x][0] = 0xff, count[x] = 1;
      continue;
    }
    if (v > 0) at[x][count[x]] = (v >> 1) - 1, touch[x][count[x]++] = voxels_upper[x];
    if ((v >> 1) < cn[x]) at[x][count[x]] = v >> 1, touch[x][count[x]++] = voxels_lower[x];
  }
  for (int z = count[2] - 1; z >= 0; z--)
    for (int y = count[1] - 1; y >= 0; y--)
      for (int x = count[0] - 1; x >= 0; x--) {
        const int64_t q = (at[2][z] * cn[1] + at[1][y]) * cn[0] + at[0][x];
        if (!(sp->cell_voxels[q] & touch[0][x] & touch[1][y] & touch[2][z])) continue;
        const int pos = (int)((fijk[0] - 2 * at[0][x]) + 3 * (fijk[1] - 2 * at[1][y]) +
                              9 * (fijk[2] - 2 * at[2][z]));
        return vox_sparse_parent_wide((uint64_t)sp->cell_piece[q], pos);
      }
  return 0; /* not reached: a node of level 0 touches a voxel */
}

/* The joins at fine node m, at box position fijk (fine_node_pass). */
static void join_at_node(split *sp, size_t m, const int64_t fijk[3]) {
  int32_t piece[8];
  int64_t cell[8][3];
  const int n = pieces_at_node(sp, m, fijk, piece, cell);
  if (n < 2) return;
  /* each coarse node that reaches this one (per axis the one on it, or
   * the two around it), and the pieces here whose cells have it as a
   * corner: their slots there joined in a chain */
  int64_t lo[3], hi[3];
  for (int x = 0; x < 3; x++) lo[x] = fijk[x] >> 1, hi[x] = (fijk[x] + 1) >> 1;
  for (int64_t K = lo[2]; K <= hi[2]; K++)
    for (int64_t J = lo[1]; J <= hi[1]; J++)
      for (int64_t I = lo[0]; I <= hi[0]; I++) {
        int64_t first = -1;
        for (int i = 0; i < n; i++) {
          const int64_t x = I - cell[i][0], y = J - cell[i][1], z = K - cell[i][2];
          if ((x | y | z) & ~(int64_t)1) continue; /* not a corner of this cell */
          const int64_t slot = 8 * (int64_t)piece[i] + corner_index((int)x, (int)y, (int)z);
          if (first < 0)
            first = slot;
          else
            vox_uf_unite(sp->slot_set, first, slot);
        }
      }
}

/* 2a. Pieces that share a fine node: the slots of their cells' common
 * corners that reach the node joined. Distinct pieces at a node lie in
 * distinct cells (two in one cell would be one piece), and the node's
 * elements at its corners name them all: two elements at one corner of a
 * node lie in one piece. From level 0 there is nothing to join
 * (cell_node_copies), and the same pass over the fine nodes gives their
 * parent words (parent_of_cells) instead. */
static void fine_node_pass(split *sp) {
  const vox_sparse_host_level *f = sp->f;
  const int from_cells = sp->cell_voxels != NULL;
  const ptrdiff_t slots = from_cells ? 0 : 8 * (ptrdiff_t)sp->c->n_elements;
#pragma omp parallel for schedule(dynamic, 16384)
  for (ptrdiff_t q = 0; q < slots; q++) sp->slot_set[q] = q;
  /* a node layer a thread: the box position by one division a node */
  const int64_t px = f->grid.nx + 1, pplane = px * (f->grid.ny + 1);
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t K = 0; K <= f->grid.nz; K++)
    for (size_t m = f->node_layer_start[K]; m < f->node_layer_start[K + 1]; m++) {
      const int64_t r = f->node_box[m] - K * pplane, J = r / px;
      const int64_t fijk[3] = {r - J * px, J, K};
      if (from_cells)
        f->parent[m] = parent_of_cells(sp, fijk);
      else
        join_at_node(sp, m, fijk);
    }
}

/* The slots of coarse box node (I, J, K): each piece of the (up to) eight
 * cells around it, at the corner the node is of its cell. Returns how many. */
static int node_slots(const split *sp, int64_t I, int64_t J, int64_t K, int64_t *out, int max) {
  const vox_grid *cg = &sp->c->grid;
  int n = 0;
  for (int z = 1; z >= 0; z--)
    for (int y = 1; y >= 0; y--)
      for (int x = 1; x >= 0; x--) {
        const int64_t ci = I - x, cj = J - y, ck = K - z; /* the node is corner (x, y, z) */
        if (ci < 0 || cj < 0 || ck < 0 || ci >= cg->nx || cj >= cg->ny || ck >= cg->nz) continue;
        const int64_t cell = (ck * cg->ny + cj) * cg->nx + ci;
        for (size_t p = sp->cell_piece[cell]; p < sp->cell_piece[cell + 1] && n < max; p++)
          out[n++] = 8 * (int64_t)p + corner_index(x, y, z);
      }
  return n;
}

/* The distinct sets among a node's slots, in the order of their first
 * slot; rank[i]: the set of slot i. Returns how many. */
static int node_copies(int64_t *slot_set, const int64_t *slot, int n, int64_t *root, int *rank) {
  int copies = 0;
  for (int i = 0; i < n; i++) {
    const int64_t r = vox_uf_find(slot_set, slot[i]);
    int k = 0;
    while (k < copies && root[k] != r) k++;
    if (k == copies) root[copies++] = r;
    rank[i] = k;
  }
  return copies;
}

/* From level 0, for a cell at corner (x, y, z) of a coarse node (bits 0,
 * 1 and 2 of `corner`) and its voxels: the bit dx + 3 dy + 9 dz set where
 * a voxel touches the fine node 2 (I, J, K) + (dx, dy, dz) - 1, one of the
 * 27 the coarse node reaches (a cell below the node along an axis, corner
 * 1, holds fine planes 2I - 1 and 2I; one above, corner 0, 2I and 2I + 1). */
static void reach_masks(uint32_t mask[8][256]) {
  for (int corner = 0; corner < 8; corner++) {
    uint8_t touch[3][3];
    for (int a = 0; a < 3; a++) {
      const int below = (corner >> a) & 1;
      touch[a][0] = below ? 0xff : 0;
      touch[a][1] = below ? voxels_upper[a] : voxels_lower[a];
      touch[a][2] = below ? 0 : 0xff;
    }
    for (int v = 0; v < 256; v++) {
      uint32_t m = 0;
      for (int d = 0; d < 27; d++)
        if (v & touch[0][d % 3] & touch[1][(d / 3) % 3] & touch[2][d / 9]) m |= 1u << d;
      mask[corner][v] = m;
    }
  }
}

/* The same from level 0, where a cell's elements are one piece: the slots
 * of the cells around coarse node (I, J, K), in node_slots' order, and
 * their copies without a union-find over all slots. join_at_node joins two
 * of the node's slots where both cells' voxels touch a fine node the node
 * reaches (reach_masks), so the copies are the sets these joins make
 * among at most eight slots. `row`: the first cell of the rows (J - y,
 * K - z) for (y, z) = (1, 1), (0, 1), (1, 0), (0, 0), or -1 outside the
 * box. Returns how many slots, their ranks in `rank`, the copies in
 * `copies`. */
static int cell_node_copies(const split *sp, const int64_t row[4], int64_t I, int64_t *slot,
                            int *rank, int *copies) {
  const int64_t nx = sp->c->grid.nx;
  uint32_t reach[8];
  int n = 0;
  for (int r = 0; r < 4; r++) {
    if (row[r] < 0) continue;
    const int y = 1 - (r & 1), z = 1 - (r >> 1);
    for (int x = 1; x >= 0; x--) {
      const int64_t ci = I - x; /* the node is corner (x, y, z) */
      if (ci < 0 || ci >= nx) continue;
      const uint8_t voxels = sp->cell_voxels[row[r] + ci];
      if (!voxels) continue;
      slot[n] = 8 * (int64_t)sp->cell_piece[row[r] + ci] + corner_index(x, y, z);
      reach[n++] = sp->reach[x + 2 * y + 4 * z][voxels];
    }
  }
  /* the sets as bit masks of the slots: each grown from its first slot
   * through the slots that share a reached fine node, ranked in the order
   * of their first slots */
  unsigned meets[8];
  for (int i = 0; i < n; i++) {
    meets[i] = 1u << i;
    for (int j = 0; j < i; j++)
      if (reach[i] & reach[j]) meets[i] |= 1u << j, meets[j] |= 1u << i;
  }
  unsigned left = (1u << n) - 1;
  int count = 0;
  while (left) {
    unsigned set = left & -left, grown = set;
    do {
      set = grown;
      for (unsigned b = set; b; b &= b - 1) grown |= meets[__builtin_ctz(b)];
    } while (grown != set);
    for (unsigned b = set; b; b &= b - 1) rank[__builtin_ctz(b)] = count;
    count++;
    left &= ~set;
  }
  *copies = count;
  return n;
}

/* The copies' starts from their counts (node_start[N + 1]: N's), and the
 * coarse nodes' arrays. */
static vox_status allocate_copies(vox_context *ctx, split *sp) {
  vox_sparse_host_level *c = sp->c;
  const int64_t nb = vox_grid_nodes(&c->grid);
  sp->node_start[0] = 0;
  vox_inclusive_scan(sp->node_start, (size_t)nb + 1);
  c->n_nodes = sp->node_start[nb];
  if (c->n_nodes > INT32_MAX)
    return vox_error(ctx, VOX_ERR_UNSUPPORTED,
                     "the sparse system holds at most 2^31 nodes a level");
  c->node_box = vox_host_malloc((c->n_nodes ? c->n_nodes : 1) * sizeof *c->node_box);
  c->node_fixed = vox_host_calloc(c->n_nodes ? c->n_nodes : 1, 1);
  if (!c->node_box || !c->node_fixed) return no_memory(ctx, "coarse nodes");
  return VOX_OK;
}

/* 2b. The copies numbered: each box node's sets among its slots, ranked in
 * the order of their first slot (a coarse node layer a thread), each
 * slot's rank kept; then the nodes' starts (a prefix sum in box order),
 * added to their slots' ranks cell by cell. */
static vox_status number_copies(vox_context *ctx, split *sp, int max_slots) {
  vox_sparse_host_level *c = sp->c;
  const int64_t nx = c->grid.nx, ny = c->grid.ny, nz = c->grid.nz;
  const int64_t px = nx + 1, py = ny + 1, pz = nz + 1;
  int failed = 0;
#pragma omp parallel
  {
    int64_t *slot = malloc((size_t)max_slots * sizeof *slot);
    int64_t *root = malloc((size_t)max_slots * sizeof *root);
    int *rank = malloc((size_t)max_slots * sizeof *rank);
    if (!slot || !root || !rank) __atomic_store_n(&failed, 1, __ATOMIC_RELAXED);
#pragma omp for schedule(dynamic, 1)
    for (int64_t K = 0; K < pz; K++) {
      if (!slot || !root || !rank) continue;
      for (int64_t J = 0; J < py; J++) {
        int64_t row[4];
        for (int r = 0; r < 4; r++) {
          const int64_t cj = J - 1 + (r & 1), ck = K - 1 + (r >> 1);
          row[r] = cj < 0 || ck < 0 || cj >= ny || ck >= nz ? -1 : (ck * ny + cj) * nx;
        }
        for (int64_t I = 0; I < px; I++) {
          int n, copies;
          if (sp->cell_voxels) {
            n = cell_node_copies(sp, row, I, slot, rank, &copies);
          } else {
            n = node_slots(sp, I, J, K, slot, max_slots);
            copies = node_copies(sp->slot_set, slot, n, root, rank);
          }
          sp->node_start[(K * py + J) * px + I + 1] = (size_t)copies;
          for (int i = 0; i < n; i++) sp->slot_copy[slot[i]] = rank[i];
        }
      }
    }
    free(slot), free(root), free(rank);
  }
  if (failed) return no_memory(ctx, "copies");
  TRY(allocate_copies(ctx, sp));
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t k = 0; k < nz; k++)
    for (int64_t j = 0; j < ny; j++)
      for (int64_t i = 0; i < nx; i++) {
        const int64_t cell = (k * ny + j) * nx + i;
        for (size_t p = sp->cell_piece[cell]; p < sp->cell_piece[cell + 1]; p++)
          for (int a = 0; a < 8; a++) {
            const int64_t node = ((k + vox_hex8_corner[a][2]) * py + j + vox_hex8_corner[a][1]) *
                                     px + i + vox_hex8_corner[a][0];
            sp->slot_copy[8 * p + (size_t)a] += (int32_t)sp->node_start[node];
          }
      }
#pragma omp parallel for schedule(dynamic, 16384)
  for (int64_t node = 0; node < px * py * pz; node++)
    for (size_t q = sp->node_start[node]; q < sp->node_start[node + 1]; q++) c->node_box[q] = node;
  return VOX_OK;
}

/* 3. The coarse elements, the layers, the fine nodes' parents and the
 * copies' fixed components. */
static vox_status finish_level(vox_context *ctx, split *sp, vox_sparse_host_level *f) {
  vox_sparse_host_level *c = sp->c;
  const ptrdiff_t np = (ptrdiff_t)c->n_elements;
  const int64_t cnx = c->grid.nx, cny = c->grid.ny, cnz = c->grid.nz;
  c->element_nodes = vox_host_malloc((np ? (size_t)np : 1) * 4 * sizeof *c->element_nodes);
  c->element_nodes_x1 =
      vox_host_malloc((np ? (size_t)np : 1) * 4 * sizeof *c->element_nodes_x1);
  c->element_layer_start =
      vox_host_malloc((size_t)(cnz + 1) * sizeof *c->element_layer_start);
  c->node_layer_start = vox_host_malloc((size_t)(cnz + 2) * sizeof *c->node_layer_start);
  if (!c->element_nodes || !c->element_nodes_x1 || !c->element_layer_start ||
      !c->node_layer_start)
    return no_memory(ctx, "coarse elements");
#pragma omp parallel for schedule(dynamic, 16384)
  for (ptrdiff_t p = 0; p < np; p++)
    for (int yz = 0; yz < 4; yz++) {
      c->element_nodes[4 * p + yz] = sp->slot_copy[8 * p + corner_index(0, yz & 1, yz >> 1)];
      c->element_nodes_x1[4 * p + yz] = sp->slot_copy[8 * p + corner_index(1, yz & 1, yz >> 1)];
    }
  for (int64_t k = 0; k <= cnz; k++) c->element_layer_start[k] = sp->cell_piece[k * cnx * cny];
  for (int64_t k = 0; k <= cnz + 1; k++)
    c->node_layer_start[k] = sp->node_start[k * (cnx + 1) * (cny + 1)];
  /* parents, except from level 0 (join_at_node): the piece of any element
   * at the node (all give its copies), the same on every run
   * (vox_sparse_parent_offer: the largest word) */
  const ptrdiff_t nfe = sp->cell_voxels ? 0 : (ptrdiff_t)f->n_elements;
#pragma omp parallel for schedule(dynamic, 16384)
  for (ptrdiff_t e = 0; e < nfe; e++) {
    int32_t node[8];
    vox_sparse_corners(f->element_nodes, f->element_nodes_x1, (size_t)e, node);
    int64_t ijk[3];
    box_ijk(f->element_box[e], f->grid.nx, f->grid.ny, ijk);
    for (int a = 0; a < 8; a++) {
      int pos = 0;
      for (int x = 2; x >= 0; x--) pos = 3 * pos + (int)(ijk[x] % 2) + vox_hex8_corner[a][x];
      vox_sparse_parent_offer(&f->parent[node[a]],
                              vox_sparse_parent_wide((uint64_t)sp->piece_of[e], pos));
    }
  }
  /* fixed components: those of the candidates (sparse_hierarchy.h) among
   * the corners of the fine node's parent piece (or-ed in any order) */
  const int64_t fpx = f->grid.nx + 1, fpy = f->grid.ny + 1;
  const ptrdiff_t nfn = (ptrdiff_t)f->n_nodes;
#pragma omp parallel for schedule(dynamic, 16384)
  for (ptrdiff_t m = 0; m < nfn; m++) {
    if (!f->node_fixed[m]) continue;
    const uint64_t word = f->parent[m];
    const size_t p = (size_t)(word >> VOX_SPARSE_POS_BITS);
    int64_t fijk[3], cijk[3], cand[3][2];
    int nc[3];
    box_ijk(f->node_box[m], fpx, fpy, fijk);
    box_ijk(c->element_box[p], cnx, cny, cijk);
    const int64_t fn[3] = {f->grid.nx, f->grid.ny, f->grid.nz};
    for (int x = 0; x < 3; x++) nc[x] = vox_sparse_coarse_candidates(fijk[x], fn[x], cand[x]);
    for (int z = 0; z < nc[2]; z++)
      for (int y = 0; y < nc[1]; y++)
        for (int x = 0; x < nc[0]; x++) {
          const int a = corner_index((int)(cand[0][x] - cijk[0]), (int)(cand[1][y] - cijk[1]),
                                     (int)(cand[2][z] - cijk[2]));
          uint8_t *to = &c->node_fixed[sp->slot_copy[8 * p + (size_t)a]];
#pragma omp atomic update
          *to |= f->node_fixed[m];
        }
  }
  return VOX_OK;
}

vox_status vox_sparse_split_coarsen(vox_context *ctx, const double table[256],
                                    vox_sparse_host_level *f, vox_sparse_host_level *c) {
  split sp = {.table = table, .f = f, .c = c};
  const size_t ncell = (size_t)vox_grid_elements(&c->grid);
  const size_t nbox = (size_t)vox_grid_nodes(&c->grid);
  const size_t nfe = f->n_elements ? f->n_elements : 1;
  const int copies = f->element_nodes_x1 != NULL; /* not level 0 */
  if (copies) {
    sp.node_elem = vox_host_malloc((f->n_nodes ? f->n_nodes : 1) * 8 * sizeof *sp.node_elem);
    sp.elem_set = vox_host_malloc(nfe * sizeof *sp.elem_set);
    sp.cell_of = vox_host_malloc(nfe * sizeof *sp.cell_of);
    sp.piece_of = vox_host_malloc(nfe * sizeof *sp.piece_of);
  } else {
    sp.cell_voxels = vox_host_calloc(ncell ? ncell : 1, 1);
    sp.reach = malloc(8 * sizeof *sp.reach);
    if (sp.reach) reach_masks(sp.reach);
  }
  sp.cell_piece = vox_host_malloc((ncell + 1) * sizeof *sp.cell_piece);
  sp.node_start = vox_host_calloc(nbox + 1, sizeof *sp.node_start);
  vox_status s = VOX_OK;
  if ((copies ? !sp.node_elem || !sp.elem_set || !sp.cell_of || !sp.piece_of
              : !sp.cell_voxels || !sp.reach) ||
      !sp.cell_piece || !sp.node_start)
    s = no_memory(ctx, "coarse pieces");
  if (s == VOX_OK && copies) {
    const ptrdiff_t n_at = 8 * (ptrdiff_t)f->n_nodes;
#pragma omp parallel for schedule(dynamic, 16384)
    for (ptrdiff_t i = 0; i < n_at; i++) sp.node_elem[i] = -1;
    s = find_pieces(ctx, &sp);
  } else if (s == VOX_OK) {
    s = cell_pieces(ctx, &sp);
  }
  vox_host_free(sp.elem_set), vox_host_free(sp.cell_of);
  sp.elem_set = NULL, sp.cell_of = NULL;
  if (s == VOX_OK) {
    if (copies) sp.slot_set = vox_host_malloc((8 * c->n_elements + 1) * sizeof *sp.slot_set);
    sp.slot_copy = vox_host_malloc((8 * c->n_elements + 1) * sizeof *sp.slot_copy);
    /* zeros, as the offers need (a fresh mapping's, not written) */
    f->parent = vox_host_calloc(f->n_nodes ? f->n_nodes : 1, sizeof *f->parent);
    if ((copies && !sp.slot_set) || !sp.slot_copy || !f->parent)
      s = no_memory(ctx, "coarse copies");
  }
  if (s == VOX_OK) {
    fine_node_pass(&sp);
    size_t most = 1;
    const ptrdiff_t cells = (ptrdiff_t)ncell;
#pragma omp parallel for schedule(static) reduction(max : most)
    for (ptrdiff_t q = 0; q < cells; q++)
      if (sp.cell_piece[q + 1] - sp.cell_piece[q] > most)
        most = sp.cell_piece[q + 1] - sp.cell_piece[q];
    s = number_copies(ctx, &sp, (int)(8 * most));
  }
  if (s == VOX_OK) s = finish_level(ctx, &sp, f);
  vox_host_free(sp.node_elem), vox_host_free(sp.cell_voxels), vox_host_free(sp.piece_of);
  vox_host_free(sp.cell_piece), vox_host_free(sp.node_start), vox_host_free(sp.slot_set);
  vox_host_free(sp.slot_copy), free(sp.reach);
  return s;
}
