/* SPDX-License-Identifier: BSD-3-Clause */
/* Galerkin coarse operators on the CPU (Martinez-Frutos et al. 2017 section 4.1), R A P.
 *
 * From the matrix-free level 0, element by element: every fine element lies
 * in one coarse element, and P restricted to it is a fixed map Q_s of its
 * position s in that coarse element, so
 *   R A P = sum_e m_e Q_s' (D Ke D) Q_s  +  R (I - D) P,
 * with D the free-dof mask (the solver's eliminated operator: identity rows
 * and columns on fixed dofs). Q_s' Ke Q_s is computed once per position;
 * elements with fixed dofs get their own product. Coarse elements are
 * visited like the operator's elements (slabs of layers, or 8 colours on a
 * periodic grid), so their scatter needs no atomics.
 *
 * From a stencil level, one coarse row at a time:
 *   row I = sum over fine nodes a near 2I of w(a, I) * (fine row a) * P,
 * where a fine row is the 27 blocks that couple node a to its neighbours.
 * Rows are independent, so threads need no synchronisation. */
#include <stdlib.h>
#include <string.h>

#include "../galerkin_element.h"
#include "cpu.h"
#include "voxfe/element.h"

enum { MAX_DPN = 3, MAX_BLOCK = MAX_DPN * MAX_DPN, MAX_LOCAL = 8 * MAX_DPN };

static inline int offset_index(int di, int dj, int dk) { return (dk + 1) * 9 + (dj + 1) * 3 + di + 1; }

static vox_status check_nesting(vox_backend *be, const vox_grid *fine, int dpn,
                                const vox_stencil *coarse) {
  const vox_grid expect = vox_grid_coarsen(fine);
  if (coarse->grid.nx != expect.nx || coarse->grid.ny != expect.ny ||
      coarse->grid.nz != expect.nz || coarse->dpn != dpn || dpn > MAX_DPN)
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT, "multigrid levels do not nest");
  return VOX_OK;
}

/* Adds w * block (dpn x dpn, coupling into fine node b = (bi, bj, bk)) to the
 * blocks of coarse row (I, J, K) of the coarse nodes that b interpolates
 * from, each with its interpolation weight. */
static inline __attribute__((always_inline)) void spread(int64_t I, int64_t J, int64_t K,
                                                         int64_t bi, int64_t bj, int64_t bk,
                                                         double w, const double *block, int bs,
                                                         double *row) {
  int64_t Pi[2], Pj[2], Pk[2];
  double wi[2], wj[2], wk[2];
  const int ni = vox_cpu_parents(bi, Pi, wi), nj = vox_cpu_parents(bj, Pj, wj),
            nk = vox_cpu_parents(bk, Pk, wk);
  for (int c3 = 0; c3 < nk; c3++)
    for (int c2 = 0; c2 < nj; c2++)
      for (int c1 = 0; c1 < ni; c1++) {
        const double wt = w * wi[c1] * wj[c2] * wk[c3];
        double *blk =
            row + (size_t)offset_index((int)(Pi[c1] - I), (int)(Pj[c2] - J), (int)(Pk[c3] - K)) * bs;
        for (int e = 0; e < bs; e++) blk[e] += wt * block[e];
      }
}

/* The row of a periodic grid's image node: identity, no neighbours. */
static void identity_row(int dpn, double *row) {
  for (int d = 0; d < dpn; d++) row[13 * dpn * dpn + d * dpn + d] = 1;
}

/* Row n of a stencil (27 blocks) from a double row: copied, or rounded to
 * float once. */
static void store_row(vox_stencil *st, size_t n, const double *row) {
  const size_t len = 27 * (size_t)st->dpn * (size_t)st->dpn;
  if (st->value) {
    memcpy(st->value + n * len, row, len * sizeof *row);
    return;
  }
  float *out = st->value32 + n * len;
  for (size_t e = 0; e < len; e++) out[e] = (float)row[e];
}

/* Row a of a stencil as doubles (widened from float storage). */
static const double *load_row(const vox_stencil *st, size_t a, double *buffer) {
  const size_t len = 27 * (size_t)st->dpn * (size_t)st->dpn;
  if (st->value) return st->value + a * len;
  const float *in = st->value32 + a * len;
  for (size_t e = 0; e < len; e++) buffer[e] = in[e];
  return buffer;
}

/* ---- level 0: element by element ------------------------------------------ */

/* The matrix of coarse element (I, J, K): the sum over its fine elements of
 * m_e Q_s' (D Ke D) Q_s; qkq holds Q_s' Ke Q_s for the 8 positions. */
static inline __attribute__((always_inline)) void
coarse_element(const vox_operator *op, const double *qkq, int64_t I, int64_t J, int64_t K,
               double *restrict ke_coarse, const int NLOC) {
  const int dpn = NLOC / 8, nloc = NLOC, size = NLOC * NLOC;
  const int64_t nx = op->grid.nx, ny = op->grid.ny, nz = op->grid.nz;
  memset(ke_coarse, 0, (size_t)size * sizeof *ke_coarse);
  for (int s = 0; s < 8; s++) {
    const int64_t i = 2 * I + (s & 1), j = 2 * J + ((s >> 1) & 1), k = 2 * K + (s >> 2);
    if (i >= nx || j >= ny || k >= nz) continue;
    const double m = op->moduli[(k * ny + j) * nx + i];
    if (m == 0) continue;
    ptrdiff_t node[8];
    vox_cpu_element_nodes(op, i, j, k, node);
    uint8_t fixed[MAX_LOCAL];
    int any_fixed = 0;
    for (int a = 0; a < 8; a++)
      for (int d = 0; d < dpn; d++) any_fixed |= fixed[dpn * a + d] = op->fixed[dpn * node[a] + d];
    const double *product = qkq + (size_t)s * (size_t)size;
    double kd[MAX_LOCAL * MAX_LOCAL], q[MAX_LOCAL * MAX_LOCAL], own[MAX_LOCAL * MAX_LOCAL];
    if (any_fixed) { /* this element's own Q_s' (D Ke D) Q_s */
      for (int r = 0; r < nloc; r++)
        for (int c = 0; c < nloc; c++)
          kd[r * nloc + c] = fixed[r] || fixed[c] ? 0 : op->ke[r * nloc + c];
      vox_galerkin_interpolation(s, dpn, q);
      vox_galerkin_triple_product(q, kd, nloc, own);
      product = own;
    }
    const double *restrict pr = product;
    for (int e = 0; e < size; e++) ke_coarse[e] += m * pr[e];
  }
}

/* Coarse row (I, J, K) of R (I - D) P: the identity rows of the fixed fine
 * dofs of the fine nodes near 2I (but for those of a node layer 0 that
 * another operator holds too: vox_operator_desc.first_layer_shared). */
static void fixed_identity_row(const vox_operator *op, int64_t I, int64_t J, int64_t K,
                               double *row) {
  const int dpn = op->dpn;
  const vox_grid *g = &op->grid;
  const int64_t px = g->nx + 1, py = g->ny + 1, pz = g->nz + 1;
  for (int dk = -1; dk <= 1; dk++)
    for (int dj = -1; dj <= 1; dj++)
      for (int di = -1; di <= 1; di++) {
        /* periodic: unwrapped coordinates for the weights, the wrapped
         * master for the flags */
        const int64_t i = 2 * I + di, j = 2 * J + dj, k = 2 * K + dk;
        int64_t a;
        if (g->periodic)
          a = vox_neighbour_node(g->nx, g->ny, g->nz, 1, 2 * I, 2 * J, 2 * K,
                                 offset_index(di, dj, dk));
        else if (i < 0 || i >= px || j < 0 || j >= py || k < 0 || k >= pz ||
                 (k == 0 && op->first_layer_shared))
          continue;
        else
          a = (k * py + j) * px + i;
        double identity[MAX_BLOCK] = {0};
        int any = 0;
        for (int d = 0; d < dpn; d++) any |= (int)(identity[d * dpn + d] = op->fixed[dpn * a + d]);
        if (!any) continue;
        const double wa = (di ? 0.5 : 1) * (dj ? 0.5 : 1) * (dk ? 0.5 : 1);
        spread(I, J, K, i, j, k, wa, identity, dpn * dpn, row);
      }
}

/* Coarse elements I = ci, ci + 2, ... of row (J, K): their matrices added
 * into the blocks of their nodes' rows (NLOC, the element matrix's size,
 * known to the compiler, which vectorises the sums). A float stencil
 * (SINGLE) takes each element's double sum rounded once per add: a value
 * sums at most 8 coarse elements, so it is within a few float roundings of
 * the double sum rounded. */
static inline __attribute__((always_inline)) void
galerkin_row(const vox_operator *op, const double *qkq, vox_stencil *coarse, int64_t J, int64_t K,
             int ci, int step, const int NLOC, const int SINGLE) {
  const int dpn = NLOC / 8, nloc = NLOC, bs = dpn * dpn;
  const int64_t cx = coarse->grid.nx, cy = coarse->grid.ny, cz = coarse->grid.nz;
  const int64_t qx = cx + 1, qy = cy + 1;
  for (int64_t I = ci; I < cx; I += step) {
    double kc[NLOC * NLOC];
    coarse_element(op, qkq, I, J, K, kc, NLOC);
    for (int p = 0; p < 8; p++) {
      int64_t pi = I + vox_hex8_corner[p][0], pj = J + vox_hex8_corner[p][1],
              pk = K + vox_hex8_corner[p][2];
      if (coarse->grid.periodic) /* wrapped; offsets stay unwrapped */
        pi = pi == cx ? 0 : pi, pj = pj == cy ? 0 : pj, pk = pk == cz ? 0 : pk;
      const int64_t np = (pk * qy + pj) * qx + pi;
      for (int c = 0; c < 8; c++) {
        const int t = offset_index(vox_hex8_corner[c][0] - vox_hex8_corner[p][0],
                                   vox_hex8_corner[c][1] - vox_hex8_corner[p][1],
                                   vox_hex8_corner[c][2] - vox_hex8_corner[p][2]);
        const size_t at = ((size_t)np * 27 + (size_t)t) * (size_t)bs;
        for (int r = 0; r < dpn; r++)
          for (int d = 0; d < dpn; d++) {
            const double v = kc[(dpn * p + r) * nloc + dpn * c + d];
            if (SINGLE)
              coarse->value32[at + r * dpn + d] =
                  (float)((double)coarse->value32[at + r * dpn + d] + v);
            else
              coarse->value[at + r * dpn + d] += v;
          }
      }
    }
  }
}

/* Every other coarse element of a row (the colours of a periodic grid),
 * and the slabs of SLAB_LAYERS layers of coarse elements (below), for each
 * element matrix size and storage, each built for AVX2 too (HOT_CLONES). */
#define GALERKIN_KERNELS(suffix, NLOC, SINGLE)                                                     \
  HOT_CLONES static void galerkin_row_##suffix(const vox_operator *op, const double *qkq,         \
                                               vox_stencil *coarse, int64_t J, int64_t K,          \
                                               int ci) {                                           \
    galerkin_row(op, qkq, coarse, J, K, ci, 2, NLOC, SINGLE);                                      \
  }                                                                                                \
  HOT_CLONES static void galerkin_slab_##suffix(const vox_operator *op, const double *qkq,        \
                                                vox_stencil *coarse, int64_t K0, int64_t K1) {     \
    for (int64_t K = K0; K < K1; K++)                                                              \
      for (int64_t J = 0; J < coarse->grid.ny; J++)                                                \
        galerkin_row(op, qkq, coarse, J, K, 0, 1, NLOC, SINGLE);                                   \
  }
GALERKIN_KERNELS(elasticity, 24, 0)
GALERKIN_KERNELS(conduction, 8, 0)
GALERKIN_KERNELS(elasticity_single, 24, 1)
GALERKIN_KERNELS(conduction_single, 8, 1)
#undef GALERKIN_KERNELS

/* The row of coarse elements (every other one) for the operator's element
 * size and the coarse stencil's storage. */
static void galerkin_row_any(const vox_operator *op, const double *qkq, vox_stencil *coarse,
                             int64_t J, int64_t K, int ci) {
  if (coarse->value32)
    (op->nloc == 24 ? galerkin_row_elasticity_single
                    : galerkin_row_conduction_single)(op, qkq, coarse, J, K, ci);
  else
    (op->nloc == 24 ? galerkin_row_elasticity : galerkin_row_conduction)(op, qkq, coarse, J, K,
                                                                        ci);
}

/* A bounded grid's coarse elements in slabs of SLAB_LAYERS layers, as the
 * operator's product does (cpu_operator.c): each slab in grid order by one
 * thread, the even slabs in parallel and then the odd ones, so the coarse
 * rows pass through the cache about once instead of once per colour. */
enum { SLAB_LAYERS = 2 };

static void galerkin_slab(const vox_operator *op, const double *qkq, vox_stencil *coarse,
                          int64_t K0, int64_t K1) {
  if (coarse->value32)
    (op->nloc == 24 ? galerkin_slab_elasticity_single
                    : galerkin_slab_conduction_single)(op, qkq, coarse, K0, K1);
  else
    (op->nloc == 24 ? galerkin_slab_elasticity : galerkin_slab_conduction)(op, qkq, coarse, K0,
                                                                          K1);
}

static vox_status galerkin_elements(vox_backend *be, const vox_operator *op, vox_stencil *coarse) {
  const int dpn = op->dpn, bs = dpn * dpn;
  double qkq[8 * MAX_LOCAL * MAX_LOCAL];
  vox_galerkin_element_products(op->ke, dpn, qkq);
  const int64_t cx = coarse->grid.nx, cy = coarse->grid.ny, cz = coarse->grid.nz;
  const int64_t qx = cx + 1, qy = cy + 1;
  const ptrdiff_t n_nodes = (ptrdiff_t)coarse->n_nodes;
#pragma omp parallel num_threads(vox_cpu_threads(be))
  {
    /* the identity part first: it also clears each row */
#pragma omp for schedule(static)
    for (ptrdiff_t n = 0; n < n_nodes; n++) {
      double row[27 * MAX_BLOCK];
      memset(row, 0, 27 * (size_t)bs * sizeof *row);
      const int64_t I = n % qx, J = (n / qx) % qy, K = n / (qx * qy);
      if (coarse->grid.periodic && vox_is_image(cx, cy, cz, I, J, K))
        identity_row(dpn, row);
      else
        fixed_identity_row(op, I, J, K, row);
      store_row(coarse, (size_t)n, row);
    }
    const int64_t n_slabs = (cz + SLAB_LAYERS - 1) / SLAB_LAYERS;
    for (int parity = 0; parity < 2 && !coarse->grid.periodic; parity++) {
#pragma omp for schedule(dynamic, 1)
      for (int64_t slab = parity; slab < n_slabs; slab += 2)
        galerkin_slab(op, qkq, coarse, slab * SLAB_LAYERS,
                      slab * SLAB_LAYERS + SLAB_LAYERS < cz ? slab * SLAB_LAYERS + SLAB_LAYERS : cz);
    }
    /* a periodic grid's last slab meets its first: colours there */
    for (int colour = 0; colour < 8 && coarse->grid.periodic; colour++) {
      const int ci = colour & 1, cj = (colour >> 1) & 1, ck = colour >> 2;
#pragma omp for collapse(2) schedule(static)
      for (int64_t K = ck; K < cz; K += 2)
        for (int64_t J = cj; J < cy; J += 2) galerkin_row_any(op, qkq, coarse, J, K, ci);
    }
  }
  return VOX_OK;
}

vox_status vox_cpu_galerkin_operator(vox_backend *be, vox_operator *fine, vox_stencil *coarse) {
  TRY(vox_cpu_op_check_fixed(be, fine, "a Galerkin product"));
  TRY(check_nesting(be, &fine->grid, fine->dpn, coarse));
  return galerkin_elements(be, fine, coarse);
}

/* ---- stencil levels: row by row ------------------------------------------- */

/* Coarse row (I, J, K) of R S P for a fine stencil S, summed in double
 * (from float values widened). BS = dpn^2, a constant at the elasticity
 * call, so that spread's block loop unrolls. */
static inline __attribute__((always_inline)) void coarse_row(const vox_stencil *st, int64_t I,
                                                             int64_t J, int64_t K, double *out,
                                                             const int BS) {
  const int bs = BS;
  double buffer[27 * MAX_BLOCK]; /* a fine row widened from float */
  const vox_grid *g = &st->grid;
  const int64_t px = g->nx + 1, py = g->ny + 1, pz = g->nz + 1;
  memset(out, 0, 27 * (size_t)bs * sizeof *out);
  if (g->periodic) {
    const vox_grid c = vox_grid_coarsen(g);
    if (vox_is_image(c.nx, c.ny, c.nz, I, J, K)) {
      identity_row(st->dpn, out);
      return;
    }
    /* fine masters near 2I (wrapped), their neighbours in unwrapped
     * coordinates relative to 2I, so that the weights and offsets come out
     * as on an infinite lattice */
    for (int ta = 0; ta < 27; ta++) {
      const int di = ta % 3 - 1, dj = (ta / 3) % 3 - 1, dk = ta / 9 - 1;
      const double wa = (di ? 0.5 : 1) * (dj ? 0.5 : 1) * (dk ? 0.5 : 1);
      const int64_t a = vox_neighbour_node(g->nx, g->ny, g->nz, 1, 2 * I, 2 * J, 2 * K, ta);
      const double *fine_row = load_row(st, (size_t)a, buffer);
      for (int t = 0; t < 27; t++)
        spread(I, J, K, 2 * I + di + t % 3 - 1, 2 * J + dj + (t / 3) % 3 - 1,
               2 * K + dk + t / 9 - 1, wa, fine_row + (size_t)t * (size_t)bs, bs, out);
    }
    return;
  }
  for (int dk = -1; dk <= 1; dk++)
    for (int dj = -1; dj <= 1; dj++)
      for (int di = -1; di <= 1; di++) {
        const int64_t i = 2 * I + di, j = 2 * J + dj, k = 2 * K + dk;
        if (i < 0 || i >= px || j < 0 || j >= py || k < 0 || k >= pz) continue;
        const double wa = (di ? 0.5 : 1) * (dj ? 0.5 : 1) * (dk ? 0.5 : 1);
        const double *fine_row = load_row(st, (size_t)((k * py + j) * px + i), buffer);
        for (int t = 0; t < 27; t++) {
          /* neighbour b of fine node a, spread onto the coarse nodes it
           * interpolates from */
          const int64_t bi = i + t % 3 - 1, bj = j + (t / 3) % 3 - 1, bk = k + t / 9 - 1;
          if (bi < 0 || bi >= px || bj < 0 || bj >= py || bk < 0 || bk >= pz) continue;
          spread(I, J, K, bi, bj, bk, wa, fine_row + (size_t)t * (size_t)bs, bs, out);
        }
      }
}

vox_status vox_cpu_galerkin_stencil(vox_backend *be, vox_stencil *fine, vox_stencil *coarse) {
  TRY(check_nesting(be, &fine->grid, fine->dpn, coarse));
  const int64_t cx = coarse->grid.nx + 1, cy = coarse->grid.ny + 1, cz = coarse->grid.nz + 1;
#pragma omp parallel for collapse(2) num_threads(vox_cpu_threads(be)) schedule(dynamic, 4)
  for (int64_t K = 0; K < cz; K++)
    for (int64_t J = 0; J < cy; J++)
      for (int64_t I = 0; I < cx; I++) {
        double row[27 * MAX_BLOCK];
        if (fine->dpn == 3) /* elasticity's 3 x 3 blocks */
          coarse_row(fine, I, J, K, row, 9);
        else
          coarse_row(fine, I, J, K, row, fine->dpn * fine->dpn);
        store_row(coarse, (size_t)((K * cy + J) * cx + I), row);
      }
  return VOX_OK;
}
