/* SPDX-License-Identifier: BSD-3-Clause */
/* The per-node arithmetic of the periodic cell solver (cell_solver.h),
 * shared by the backends (private): each function computes what one node
 * of one level needs, and a backend runs it over the nodes of a colour or
 * a level (OpenMP loops on the CPU, one thread per node in CUDA), so both
 * compute the same numbers.
 *
 * Every level is periodic with master nodes only: node (i, j, k) of a level
 * of nx x ny x nz elements is n = (k ny + j) nx + i, element (i, j, k) has
 * node n as its corner 0, and vectors hold 3 floats per node. Level 0 is
 * matrix-free with one modulus per element; level 1 is matrix-free too, its
 * element matrices the Galerkin sums m_c G_c over the 8 fine children c
 * (G_c = Q_c' Ke Q_c, galerkin_element.h's sub-positions c = x + 2 y + 4 z); levels 2 and coarser
 * are stencils of 27 blocks of 3 x 3 per node (backend_ops.h's stencil order), symmetric: block t
 * of node n is the transpose of block 26 - t of n's neighbour at offset t. So a node keeps its
 * centre block t = 13 and the forward ones t = 14..26, block t in slot t - 13
 * (vox_cell_stencil_block reads the backward ones from the neighbours). */
#ifndef VOXFE_CELL_KERNELS_H
#define VOXFE_CELL_KERNELS_H

#include <stdint.h>

#include "backend_ops.h"

typedef struct vox_cell_dims {
  int nx, ny, nz;
} vox_cell_dims;

enum {
  VOX_CELL_STORED = 14,                /* blocks kept per stencil node: t = 13..26 */
  VOX_CELL_BLOCK = VOX_CELL_STORED * 9 /* floats of a stencil node */
};

/* a + an offset of at most 2 wrapped into [0, n) (n >= 2) */
VOX_HOST_DEVICE static inline int vox_cell_wrap(int a, int n) {
  return a < 0 ? a + n : a >= n ? a - n : a;
}

VOX_HOST_DEVICE static inline int64_t vox_cell_node(vox_cell_dims d, int i, int j, int k) {
  return ((int64_t)vox_cell_wrap(k, d.nz) * d.ny + vox_cell_wrap(j, d.ny)) * d.nx +
         vox_cell_wrap(i, d.nx);
}

/* (i, j, k) of node n: 32-bit division, which the GPU does far faster than
 * 64-bit (a level has fewer than 2^32 nodes: vox_cell_solver_levels). */
VOX_HOST_DEVICE static inline void vox_cell_coords(vox_cell_dims d, int64_t n, int *i, int *j,
                                                   int *k) {
  const uint32_t m = (uint32_t)n, q = m / (uint32_t)d.nx;
  *i = (int)(m - q * (uint32_t)d.nx), *j = (int)(q % (uint32_t)d.ny),
  *k = (int)(q / (uint32_t)d.ny);
}

/* Coordinate `axis` of local corner a (voxfe/element.h's vox_hex8_corner). */
VOX_HOST_DEVICE static inline int vox_cell_corner(int a, int axis) {
  return axis == 0 ? ((a + 1) >> 1) & 1 : axis == 1 ? (a >> 1) & 1 : a >> 2;
}

/* The local corner at coordinates (x, y, z) in {0, 1}. */
VOX_HOST_DEVICE static inline int vox_cell_corner_index(int x, int y, int z) {
  return 4 * z + (y ? 3 - x : x);
}

/* The node of colour `colour` (its coordinates' parities, x the lowest
 * bit) with index `m` among that colour's nodes; every axis has an even
 * number of nodes, so nodes of one colour never share an element, across
 * the wrap too. */
VOX_HOST_DEVICE static inline void vox_cell_colour_node(vox_cell_dims d, int colour, int64_t m,
                                                        int *i, int *j, int *k) {
  const int hx = d.nx / 2, hy = d.ny / 2;
  *i = 2 * (int)(m % hx) + (colour & 1);
  *j = 2 * (int)((m / hx) % hy) + ((colour >> 1) & 1);
  *k = 2 * (int)(m / ((int64_t)hx * hy)) + (colour >> 2);
}

/* The load of the unit strain with Ke chi = kchi at node (i, j, k) of
 * level 0: f = sum_e m_e (Ke chi)_n over its 8 elements. */
VOX_HOST_DEVICE static inline void vox_cell_load_at(vox_cell_dims d, const float *moduli,
                                                    const float *kchi, int i, int j, int k,
                                                    float f[3]) {
  for (int r = 0; r < 3; r++) f[r] = 0;
  for (int a = 0; a < 8; a++) {
    const float m = moduli[vox_cell_node(d, i - vox_cell_corner(a, 0), j - vox_cell_corner(a, 1),
                                         k - vox_cell_corner(a, 2))];
    for (int r = 0; r < 3; r++) f[r] += m * kchi[3 * a + r];
  }
}

/* The 24 values of element (oi, oj, ok)'s corners. */
VOX_HOST_DEVICE static inline void vox_cell_gather(vox_cell_dims d, const float *x, int oi, int oj,
                                                   int ok, float xe[24]) {
  for (int b = 0; b < 8; b++) {
    const int64_t n = vox_cell_node(d, oi + vox_cell_corner(b, 0), oj + vox_cell_corner(b, 1),
                                    ok + vox_cell_corner(b, 2));
    for (int c = 0; c < 3; c++) xe[3 * b + c] = x[3 * n + c];
  }
}

/* ax += m (rows 3a..3a+2 of k) xe and diag += m (their 3 x 3 diagonal
 * block). The product takes xe relative to corner a's values (Zhang et al. 2023
 * after eq. 15): k annihilates translations, so this is the same product,
 * but one without their cancellation in float. At SIMP's contrasts the
 * void's fields are large and nearly rigid, and their products' rounding
 * then outweighed their energy: CG's p.Ap came out negative (a 64^3 cell
 * in its 5th design iteration). */
VOX_HOST_DEVICE static inline void vox_cell_rows(const float *k, int a, float m, const float xe[24],
                                                 float ax[3], float diag[9]) {
  for (int r = 0; r < 3; r++) {
    const float *row = k + (3 * a + r) * 24;
    float s = 0;
    for (int col = 0; col < 24; col++) s += row[col] * (xe[col] - xe[3 * a + col % 3]);
    ax[r] += m * s;
    for (int c = 0; c < 3; c++) diag[3 * r + c] += m * row[3 * a + c];
  }
}

/* Level 0 at node (i, j, k): ax = (K x)_n, diag = K_nn, and f = the load
 * sum_e m_e (Ke chi)_n of the unit strain whose Ke chi is kchi (as
 * vox_cell_load_at, fused into the same pass over the elements). */
VOX_HOST_DEVICE static inline void vox_cell_fine_row(vox_cell_dims d, const float *moduli,
                                                     const float *ke, const float *kchi,
                                                     const float *x, int i, int j, int k,
                                                     float ax[3], float diag[9], float f[3]) {
  for (int r = 0; r < 3; r++) ax[r] = f[r] = 0;
  for (int r = 0; r < 9; r++) diag[r] = 0;
  for (int a = 0; a < 8; a++) {
    const int oi = i - vox_cell_corner(a, 0), oj = j - vox_cell_corner(a, 1),
              ok = k - vox_cell_corner(a, 2);
    const float m = moduli[vox_cell_node(d, oi, oj, ok)];
    float xe[24];
    vox_cell_gather(d, x, oi, oj, ok, xe);
    vox_cell_rows(ke, a, m, xe, ax, diag);
    for (int r = 0; r < 3; r++) f[r] += m * kchi[3 * a + r];
  }
}

/* Level 1 at node (i, j, k) of a level of dims d: ax and diag as above, the
 * element matrices sum_c m_c G_c (g: 8 matrices of 24 x 24) over the
 * children in the fine moduli. */
VOX_HOST_DEVICE static inline void vox_cell_coarse1_row(vox_cell_dims d, const float *moduli,
                                                        const float *g, const float *x, int i,
                                                        int j, int k, float ax[3], float diag[9]) {
  const vox_cell_dims fine = {2 * d.nx, 2 * d.ny, 2 * d.nz};
  for (int r = 0; r < 3; r++) ax[r] = 0;
  for (int r = 0; r < 9; r++) diag[r] = 0;
  for (int a = 0; a < 8; a++) {
    const int oi = vox_cell_wrap(i - vox_cell_corner(a, 0), d.nx),
              oj = vox_cell_wrap(j - vox_cell_corner(a, 1), d.ny),
              ok = vox_cell_wrap(k - vox_cell_corner(a, 2), d.nz);
    float xe[24];
    vox_cell_gather(d, x, oi, oj, ok, xe);
    for (int c = 0; c < 8; c++) {
      const float m =
          moduli[vox_cell_node(fine, 2 * oi + (c & 1), 2 * oj + ((c >> 1) & 1), 2 * ok + (c >> 2))];
      vox_cell_rows(g + 576 * c, a, m, xe, ax, diag);
    }
  }
}

/* Block t (row-major 3 x 3) of node (i, j, k) of a stencil level of dims
 * d: stored for t >= 13, else the transpose of the neighbour's block
 * 26 - t (the stencil is symmetric). i, j, k may lie up to 1 outside the
 * level (wrapped). */
VOX_HOST_DEVICE static inline void vox_cell_stencil_block(vox_cell_dims d, const float *stencil,
                                                          int i, int j, int k, int t,
                                                          float out[9]) {
  if (t >= 13) {
    const float *s = stencil + VOX_CELL_BLOCK * vox_cell_node(d, i, j, k) + 9 * (t - 13);
    for (int r = 0; r < 9; r++) out[r] = s[r];
  } else {
    const int64_t n = vox_cell_node(d, i + t % 3 - 1, j + (t / 3) % 3 - 1, k + t / 9 - 1);
    const float *s = stencil + VOX_CELL_BLOCK * n + 9 * (13 - t); /* slot (26 - t) - 13 */
    for (int r = 0; r < 3; r++)
      for (int c = 0; c < 3; c++) out[3 * r + c] = s[3 * c + r];
  }
}

/* A stencil level at node (i, j, k): ax and diag from its 27 blocks, the
 * neighbours' values relative to the node's (as vox_cell_rows: a Galerkin
 * stencil annihilates translations too). */
VOX_HOST_DEVICE static inline void vox_cell_stencil_row(vox_cell_dims d, const float *stencil,
                                                        const float *x, int i, int j, int k,
                                                        float ax[3], float diag[9]) {
  const int64_t self = vox_cell_node(d, i, j, k);
  for (int r = 0; r < 3; r++) ax[r] = 0;
  for (int t = 0; t < 27; t++) {
    const int64_t n = vox_cell_node(d, i + t % 3 - 1, j + (t / 3) % 3 - 1, k + t / 9 - 1);
    float s[9];
    vox_cell_stencil_block(d, stencil, i, j, k, t, s);
    for (int r = 0; r < 3; r++)
      for (int c = 0; c < 3; c++) ax[r] += s[3 * r + c] * (x[3 * n + c] - x[3 * self + c]);
  }
  const float *s = stencil + VOX_CELL_BLOCK * self; /* slot 0: the centre block */
  for (int r = 0; r < 9; r++) diag[r] = s[r];
}

/* The Gauss-Seidel step of one node: x_n += diag^-1 (b_n - ax), the 3 x 3
 * solve by the adjugate of the block scaled to a unit trace: a node among
 * void elements has a block of 1e-9 of the solid's, whose determinant
 * would underflow float. */
VOX_HOST_DEVICE static inline void vox_cell_relax(const float b[3], const float ax[3],
                                                  const float *d, float *xn) {
  const float s = 1.0f / (d[0] + d[4] + d[8]);
  float m[9];
  for (int q = 0; q < 9; q++) m[q] = s * d[q];
  const float r0 = s * (b[0] - ax[0]), r1 = s * (b[1] - ax[1]), r2 = s * (b[2] - ax[2]);
  const float c00 = m[4] * m[8] - m[5] * m[7], c01 = m[5] * m[6] - m[3] * m[8],
              c02 = m[3] * m[7] - m[4] * m[6];
  const float inv = 1.0f / (m[0] * c00 + m[1] * c01 + m[2] * c02);
  /* the inverse of the symmetric block by its adjugate */
  const float c11 = m[0] * m[8] - m[2] * m[6], c12 = m[2] * m[3] - m[0] * m[5],
              c22 = m[0] * m[4] - m[1] * m[3];
  xn[0] += inv * (c00 * r0 + c01 * r1 + c02 * r2);
  xn[1] += inv * (c01 * r0 + c11 * r1 + c12 * r2);
  xn[2] += inv * (c02 * r0 + c12 * r1 + c22 * r2);
}

/* Restriction (the transpose of trilinear interpolation) at coarse node
 * (i, j, k) from the fine level of dims fine, whose values r holds from
 * plane z0 on: fine node (x, y, z) at r's node (x, y, z - z0), wrapped.
 * z0 = 0: r is the whole level; z0 = 2 K0 - 1: r is restrict_residual's
 * slab from coarse plane K0 (cell_ops.h), which holds the fine planes of
 * the slab's coarse nodes (unwrapped, but where the slab is the whole
 * level). */
VOX_HOST_DEVICE static inline void vox_cell_restrict_at(vox_cell_dims fine, const float *r, int z0,
                                                        int i, int j, int k, float out[3]) {
  for (int c = 0; c < 3; c++) out[c] = 0;
  for (int t = 0; t < 27; t++) {
    const int dx = t % 3 - 1, dy = (t / 3) % 3 - 1, dz = t / 9 - 1;
    const float w = (dx ? 0.5f : 1.0f) * (dy ? 0.5f : 1.0f) * (dz ? 0.5f : 1.0f);
    const int64_t n = vox_cell_node(fine, 2 * i + dx, 2 * j + dy, 2 * k + dz - z0);
    for (int c = 0; c < 3; c++) out[c] += w * r[3 * n + c];
  }
}

/* Trilinear interpolation at fine node (i, j, k) from the coarse level of
 * dims coarse. */
VOX_HOST_DEVICE static inline void vox_cell_prolong_at(vox_cell_dims coarse, const float *xc, int i,
                                                       int j, int k, float out[3]) {
  for (int c = 0; c < 3; c++) out[c] = 0;
  const int ci = i >> 1, cj = j >> 1, ck = k >> 1;
  for (int t = 0; t < 8; t++) {
    const int bx = t & 1, by = (t >> 1) & 1, bz = t >> 2;
    if ((bx && !(i & 1)) || (by && !(j & 1)) || (bz && !(k & 1))) continue;
    const float w = ((i & 1) ? 0.5f : 1.0f) * ((j & 1) ? 0.5f : 1.0f) * ((k & 1) ? 0.5f : 1.0f);
    const int64_t n = vox_cell_node(coarse, ci + bx, cj + by, ck + bz);
    for (int c = 0; c < 3; c++) out[c] += w * xc[3 * n + c];
  }
}

/* The centre block made exactly symmetric (its sums of (r, c) and (c, r)
 * round differently), in double before it is rounded: with the backward
 * blocks the transposes of the forward ones, the stencil is then an
 * exactly symmetric operator. */
VOX_HOST_DEVICE static inline void vox_cell_symmetric_centre(double acc[9]) {
  for (int r = 0; r < 3; r++)
    for (int c = r + 1; c < 3; c++)
      acc[3 * r + c] = acc[3 * c + r] = 0.5 * (acc[3 * r + c] + acc[3 * c + r]);
}

/* Block t (13..26, the stored ones) of node (i, j, k) of level 2 (dims d),
 * the Galerkin product over the fine level's elements (4 per axis in each
 * level-2 element): the sum over the element pairs of corners (a, b) with
 * corner b - corner a = the offset of t, and over the 64 fine elements f,
 * of m_f h_f[3a+r][3b+c] (h: 64 matrices Q_f' Ke Q_f, f = fx + 4 fy + 16
 * fz). */
VOX_HOST_DEVICE static inline void vox_cell_level2_block(vox_cell_dims d, const float *moduli,
                                                         const double *h, int i, int j, int k,
                                                         int t, float out[9]) {
  const vox_cell_dims fine = {4 * d.nx, 4 * d.ny, 4 * d.nz};
  const int off[3] = {t % 3 - 1, (t / 3) % 3 - 1, t / 9 - 1};
  double acc[9] = {0};
  for (int a = 0; a < 8; a++) {
    int cb[3], inside = 1;
    for (int ax = 0; ax < 3; ax++) {
      cb[ax] = vox_cell_corner(a, ax) + off[ax];
      inside = inside && (cb[ax] == 0 || cb[ax] == 1);
    }
    if (!inside) continue;
    const int b = vox_cell_corner_index(cb[0], cb[1], cb[2]);
    const int oi = vox_cell_wrap(i - vox_cell_corner(a, 0), d.nx),
              oj = vox_cell_wrap(j - vox_cell_corner(a, 1), d.ny),
              ok2 = vox_cell_wrap(k - vox_cell_corner(a, 2), d.nz);
    for (int f = 0; f < 64; f++) {
      const double m = moduli[vox_cell_node(fine, 4 * oi + (f & 3), 4 * oj + ((f >> 2) & 3),
                                            4 * ok2 + (f >> 4))];
      const double *hf = h + 576 * f;
      for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++) acc[3 * r + c] += m * hf[(3 * a + r) * 24 + 3 * b + c];
    }
  }
  if (t == 13) vox_cell_symmetric_centre(acc);
  for (int r = 0; r < 9; r++) out[r] = (float)acc[r];
}

/* Block t (13..26, the stored ones) of coarse node (i, j, k): the Galerkin
 * product R A P of the fine stencil (dims fine) over the fine pairs (p, q =
 * p + s) that p's and q's interpolations from coarse nodes (i, j, k) and
 * (i, j, k) + offset t connect. */
VOX_HOST_DEVICE static inline void vox_cell_galerkin_block(vox_cell_dims fine, const float *sf,
                                                           int i, int j, int k, int t,
                                                           float out[9]) {
  const int T[3] = {t % 3 - 1, (t / 3) % 3 - 1, t / 9 - 1};
  double acc[9] = {0};
  for (int p = 0; p < 27; p++) {
    const int dp[3] = {p % 3 - 1, (p / 3) % 3 - 1, p / 9 - 1};
    const double wp = (dp[0] ? 0.5 : 1.0) * (dp[1] ? 0.5 : 1.0) * (dp[2] ? 0.5 : 1.0);
    for (int u = 0; u < 27; u++) {
      const int du[3] = {u % 3 - 1, (u / 3) % 3 - 1, u / 9 - 1};
      double wq = wp;
      for (int ax = 0; ax < 3 && wq != 0; ax++) {
        const int e = dp[ax] + du[ax] - 2 * T[ax];
        wq *= e == 0 ? 1.0 : (e == 1 || e == -1) ? 0.5 : 0.0;
      }
      if (wq == 0) continue;
      float s[9];
      vox_cell_stencil_block(fine, sf, 2 * i + dp[0], 2 * j + dp[1], 2 * k + dp[2], u, s);
      for (int r = 0; r < 9; r++) acc[r] += wq * s[r];
    }
  }
  if (t == 13) vox_cell_symmetric_centre(acc);
  for (int r = 0; r < 9; r++) out[r] = (float)acc[r];
}

#endif
