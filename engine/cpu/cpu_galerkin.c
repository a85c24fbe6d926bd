/* Galerkin coarse operators on the CPU (seed 000 section 4.1), R A P.
 *
 * From a stencil level, one coarse row at a time:
 *   row I = sum over fine nodes a near 2I of w(a, I) * (fine row a) * P,
 * where a fine row is the 27 blocks that couple node a to its neighbours.
 * Rows are independent, so threads need no synchronisation.
 *
 * From the matrix-free level 0, element by element: every fine element lies
 * in one coarse element, and P restricted to it is a fixed 24x24 map Q_s of
 * its position s in that coarse element, so
 *   R A P = sum_e m_e Q_s' (D Ke D) Q_s  +  R (I - D) P,
 * with D the free-dof mask (the solver's eliminated operator: identity rows
 * and columns on fixed dofs). Q_s' Ke Q_s is computed once per position;
 * elements with fixed dofs get their own product. Coarse elements are
 * visited in 8 colours, like the operator, so their scatter needs no atomics. */
#include <stdlib.h>
#include <string.h>

#include "cpu.h"
#include "voxfe/element.h"

enum { MAX_BLOCK = 9 }; /* dpn <= 3 */

static inline int offset_index(int di, int dj, int dk) { return (dk + 1) * 9 + (dj + 1) * 3 + di + 1; }

/* The fine row of node (i, j, k) of the matrix-free operator, eliminated form. */
static void operator_row(const vox_operator *op, int64_t i, int64_t j, int64_t k,
                         double row[27][MAX_BLOCK]) {
  const int dpn = op->dpn, nloc = op->nloc;
  const int64_t nx = op->grid.nx, ny = op->grid.ny, nz = op->grid.nz;
  const int64_t px = nx + 1, py = ny + 1;
  const int64_t a = (k * py + j) * px + i;
  memset(row, 0, 27 * MAX_BLOCK * sizeof(double));
  for (int la = 0; la < 8; la++) {
    /* the element that has node a as its local corner la */
    const int64_t ei = i - vox_hex8_corner[la][0], ej = j - vox_hex8_corner[la][1],
                  ek = k - vox_hex8_corner[la][2];
    if (ei < 0 || ei >= nx || ej < 0 || ej >= ny || ek < 0 || ek >= nz) continue;
    const double m = op->moduli[(ek * ny + ej) * nx + ei];
    if (m == 0) continue;
    for (int lb = 0; lb < 8; lb++) {
      const int di = vox_hex8_corner[lb][0] - vox_hex8_corner[la][0],
                dj = vox_hex8_corner[lb][1] - vox_hex8_corner[la][1],
                dk = vox_hex8_corner[lb][2] - vox_hex8_corner[la][2];
      const int64_t b = a + (dk * py + dj) * px + di;
      double *blk = row[offset_index(di, dj, dk)];
      for (int r = 0; r < dpn; r++) {
        if (op->fixed[a * dpn + r]) continue;
        for (int c = 0; c < dpn; c++)
          if (!op->fixed[b * dpn + c])
            blk[r * dpn + c] += m * op->ke[(la * dpn + r) * nloc + lb * dpn + c];
      }
    }
  }
  for (int r = 0; r < dpn; r++)
    if (op->fixed[a * dpn + r]) row[13][r * dpn + r] = 1;
}

static void stencil_row(const vox_stencil *st, int64_t n, double row[27][MAX_BLOCK]) {
  const int bs = st->dpn * st->dpn;
  for (int t = 0; t < 27; t++)
    memcpy(row[t], st->value + ((size_t)n * 27 + (size_t)t) * (size_t)bs, (size_t)bs * sizeof(double));
}

/* Coarse row I of R A P for a fine level given as a matrix-free operator
 * (op) or a stencil (st); `fine` is the fine level's grid. */
static void coarse_row(const vox_operator *op, const vox_stencil *st, const vox_grid *fine,
                       int dpn, int64_t I, int64_t J, int64_t K, double *out) {
  const int bs = dpn * dpn;
  const int64_t px = fine->nx + 1, py = fine->ny + 1, pz = fine->nz + 1;
  double row[27][MAX_BLOCK];
  memset(out, 0, 27 * (size_t)bs * sizeof *out);
  for (int dk = -1; dk <= 1; dk++)
    for (int dj = -1; dj <= 1; dj++)
      for (int di = -1; di <= 1; di++) {
        const int64_t i = 2 * I + di, j = 2 * J + dj, k = 2 * K + dk;
        if (i < 0 || i >= px || j < 0 || j >= py || k < 0 || k >= pz) continue;
        const double wa = (di ? 0.5 : 1) * (dj ? 0.5 : 1) * (dk ? 0.5 : 1);
        if (op)
          operator_row(op, i, j, k, row);
        else
          stencil_row(st, (k * py + j) * px + i, row);
        for (int t = 0; t < 27; t++) {
          /* neighbour b of a, and the coarse nodes it interpolates from */
          const int64_t bi = i + t % 3 - 1, bj = j + (t / 3) % 3 - 1, bk = k + t / 9 - 1;
          if (bi < 0 || bi >= px || bj < 0 || bj >= py || bk < 0 || bk >= pz) continue;
          int64_t Pi[2], Pj[2], Pk[2];
          double wi[2], wj[2], wk[2];
          const int ni = vox_cpu_parents(bi, Pi, wi), nj = vox_cpu_parents(bj, Pj, wj),
                    nk = vox_cpu_parents(bk, Pk, wk);
          for (int c3 = 0; c3 < nk; c3++)
            for (int c2 = 0; c2 < nj; c2++)
              for (int c1 = 0; c1 < ni; c1++) {
                const double w = wa * wi[c1] * wj[c2] * wk[c3];
                double *blk =
                    out + (size_t)offset_index((int)(Pi[c1] - I), (int)(Pj[c2] - J), (int)(Pk[c3] - K)) * bs;
                for (int e = 0; e < bs; e++) blk[e] += w * row[t][e];
              }
        }
      }
}

/* Q_s: the 24x24 interpolation from the 8 corners of a coarse element to the
 * 8 nodes of its fine element at sub-position s (bits x, y, z). */
static void interpolation(int s, double q[24 * 24]) {
  memset(q, 0, 24 * 24 * sizeof *q);
  for (int a = 0; a < 8; a++)
    for (int c = 0; c < 8; c++) {
      double w = 1;
      for (int axis = 0; axis < 3; axis++) {
        const int f = ((s >> axis) & 1) + vox_hex8_corner[a][axis]; /* 0..2 fine units */
        w *= 1 - 0.5 * abs(f - 2 * vox_hex8_corner[c][axis]);
      }
      for (int d = 0; d < 3; d++) q[(3 * a + d) * 24 + 3 * c + d] = w;
    }
}

/* out = Q' K Q for 24x24 matrices. */
static void triple_product(const double *q, const double *k, double *out) {
  double kq[24 * 24];
  for (int r = 0; r < 24; r++)
    for (int c = 0; c < 24; c++) {
      double s = 0;
      for (int m = 0; m < 24; m++) s += k[r * 24 + m] * q[m * 24 + c];
      kq[r * 24 + c] = s;
    }
  for (int r = 0; r < 24; r++)
    for (int c = 0; c < 24; c++) {
      double s = 0;
      for (int m = 0; m < 24; m++) s += q[m * 24 + r] * kq[m * 24 + c];
      out[r * 24 + c] = s;
    }
}

/* The coarse element matrix of coarse element (I, J, K): sum over its fine
 * elements of m_e Q_s' (D Ke D) Q_s. */
static void coarse_element(const vox_operator *op, const double *qkq, int64_t I, int64_t J,
                           int64_t K, double ke_coarse[24 * 24]) {
  const int64_t nx = op->grid.nx, ny = op->grid.ny, nz = op->grid.nz;
  const int64_t px = nx + 1, py = ny + 1;
  memset(ke_coarse, 0, 24 * 24 * sizeof *ke_coarse);
  for (int s = 0; s < 8; s++) {
    const int64_t i = 2 * I + (s & 1), j = 2 * J + ((s >> 1) & 1), k = 2 * K + (s >> 2);
    if (i >= nx || j >= ny || k >= nz) continue;
    const double m = op->moduli[(k * ny + j) * nx + i];
    if (m == 0) continue;
    const int64_t n0 = (k * py + j) * px + i;
    uint8_t fixed[24];
    int any_fixed = 0;
    for (int a = 0; a < 8; a++)
      for (int d = 0; d < 3; d++) any_fixed |= fixed[3 * a + d] = op->fixed[3 * (n0 + op->corner[a]) + d];
    if (!any_fixed) {
      const double *a_s = qkq + (size_t)s * 576;
      for (int e = 0; e < 576; e++) ke_coarse[e] += m * a_s[e];
      continue;
    }
    double kd[576], q[576], out[576];
    for (int r = 0; r < 24; r++)
      for (int c = 0; c < 24; c++) kd[r * 24 + c] = fixed[r] || fixed[c] ? 0 : op->ke[r * 24 + c];
    interpolation(s, q);
    triple_product(q, kd, out);
    for (int e = 0; e < 576; e++) ke_coarse[e] += m * out[e];
  }
}

/* R (I - D) P of coarse row I: the identity rows of the fixed fine dofs. */
static void fixed_identity_row(const vox_operator *op, int64_t I, int64_t J, int64_t K,
                               double *row) {
  const int64_t px = op->grid.nx + 1, py = op->grid.ny + 1, pz = op->grid.nz + 1;
  for (int dk = -1; dk <= 1; dk++)
    for (int dj = -1; dj <= 1; dj++)
      for (int di = -1; di <= 1; di++) {
        const int64_t i = 2 * I + di, j = 2 * J + dj, k = 2 * K + dk;
        if (i < 0 || i >= px || j < 0 || j >= py || k < 0 || k >= pz) continue;
        const int64_t a = (k * py + j) * px + i;
        if (!op->fixed[3 * a] && !op->fixed[3 * a + 1] && !op->fixed[3 * a + 2]) continue;
        const double wa = (di ? 0.5 : 1) * (dj ? 0.5 : 1) * (dk ? 0.5 : 1);
        int64_t Pi[2], Pj[2], Pk[2];
        double wi[2], wj[2], wk[2];
        const int ni = vox_cpu_parents(i, Pi, wi), nj = vox_cpu_parents(j, Pj, wj),
                  nk = vox_cpu_parents(k, Pk, wk);
        for (int c3 = 0; c3 < nk; c3++)
          for (int c2 = 0; c2 < nj; c2++)
            for (int c1 = 0; c1 < ni; c1++) {
              double *blk = row + (size_t)offset_index((int)(Pi[c1] - I), (int)(Pj[c2] - J),
                                                       (int)(Pk[c3] - K)) * 9;
              for (int d = 0; d < 3; d++)
                if (op->fixed[3 * a + d]) blk[d * 3 + d] += wa * wi[c1] * wj[c2] * wk[c3];
            }
      }
}

static vox_status galerkin_elements(vox_backend *be, const vox_operator *op, vox_stencil *coarse) {
  double qkq[8 * 576], q[576];
  for (int s = 0; s < 8; s++) {
    interpolation(s, q);
    triple_product(q, op->ke, qkq + (size_t)s * 576);
  }
  const int64_t cx = coarse->grid.nx, cy = coarse->grid.ny, cz = coarse->grid.nz;
  const int64_t qx = cx + 1, qy = cy + 1;
  double *value = coarse->value;
  const ptrdiff_t n_nodes = (ptrdiff_t)coarse->n_nodes;
#pragma omp parallel num_threads(vox_cpu_threads(be))
  {
    /* the identity part first: it also clears each row */
#pragma omp for schedule(static)
    for (ptrdiff_t n = 0; n < n_nodes; n++) {
      double *row = value + (size_t)n * 27 * 9;
      memset(row, 0, 27 * 9 * sizeof *row);
      const int64_t I = n % qx, J = (n / qx) % qy, K = n / (qx * qy);
      fixed_identity_row(op, I, J, K, row);
    }
    for (int colour = 0; colour < 8; colour++) {
      const int ci = colour & 1, cj = (colour >> 1) & 1, ck = colour >> 2;
#pragma omp for collapse(2) schedule(static)
      for (int64_t K = ck; K < cz; K += 2)
        for (int64_t J = cj; J < cy; J += 2)
          for (int64_t I = ci; I < cx; I += 2) {
            double kc[576];
            coarse_element(op, qkq, I, J, K, kc);
            for (int p = 0; p < 8; p++) {
              const int64_t np = ((K + vox_hex8_corner[p][2]) * qy + J + vox_hex8_corner[p][1]) * qx +
                                 I + vox_hex8_corner[p][0];
              for (int c = 0; c < 8; c++) {
                const int t = offset_index(vox_hex8_corner[c][0] - vox_hex8_corner[p][0],
                                           vox_hex8_corner[c][1] - vox_hex8_corner[p][1],
                                           vox_hex8_corner[c][2] - vox_hex8_corner[p][2]);
                double *blk = value + ((size_t)np * 27 + (size_t)t) * 9;
                for (int r = 0; r < 3; r++)
                  for (int d = 0; d < 3; d++) blk[r * 3 + d] += kc[(3 * p + r) * 24 + 3 * c + d];
              }
            }
          }
    }
  }
  return VOX_OK;
}

static vox_status galerkin(vox_backend *be, const vox_operator *op, const vox_stencil *st,
                           const vox_grid *fine, int dpn, vox_stencil *coarse) {
  const vox_grid expect = vox_grid_coarsen(fine);
  if (coarse->grid.nx != expect.nx || coarse->grid.ny != expect.ny ||
      coarse->grid.nz != expect.nz || coarse->dpn != dpn || dpn * dpn > MAX_BLOCK)
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT, "multigrid levels do not nest");
  const int64_t cx = expect.nx + 1, cy = expect.ny + 1, cz = expect.nz + 1;
  const size_t bs = (size_t)dpn * (size_t)dpn;
#pragma omp parallel for collapse(2) num_threads(vox_cpu_threads(be)) schedule(dynamic, 4)
  for (int64_t K = 0; K < cz; K++)
    for (int64_t J = 0; J < cy; J++)
      for (int64_t I = 0; I < cx; I++)
        coarse_row(op, st, fine, dpn, I, J, K,
                   coarse->value + (size_t)((K * cy + J) * cx + I) * 27 * bs);
  return VOX_OK;
}

vox_status vox_cpu_galerkin_operator(vox_backend *be, vox_operator *fine, vox_stencil *coarse) {
  if (fine->dpn != 3) /* the row-wise product serves other dof counts */
    return galerkin(be, fine, NULL, &fine->grid, fine->dpn, coarse);
  const vox_grid expect = vox_grid_coarsen(&fine->grid);
  if (coarse->grid.nx != expect.nx || coarse->grid.ny != expect.ny ||
      coarse->grid.nz != expect.nz || coarse->dpn != 3)
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT, "multigrid levels do not nest");
  return galerkin_elements(be, fine, coarse);
}

vox_status vox_cpu_galerkin_stencil(vox_backend *be, vox_stencil *fine, vox_stencil *coarse) {
  return galerkin(be, NULL, fine, &fine->grid, fine->dpn, coarse);
}
