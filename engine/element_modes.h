/* SPDX-License-Identifier: BSD-3-Clause */
/* The elasticity element matrix in the modes of the brick's reflections
 * (docs/engine.md), for the CPU's and the GPU's element products.
 *
 * Corner a at (x, y, z) in {0, 1}^3 has bits b(a) = x + 2y + 4z; mode m
 * (0-7) is the field (-1)^popcount(m & b) over the corners, so one
 * component's eight values x become H x, H the 8 x 8 Walsh-Hadamard matrix
 * (symmetric, H H = 8 I). A brick of one isotropic material is symmetric
 * under the reflection of each axis, which flips mode m along the axes in
 * m and displacement component c along axis c: the pair (m, c) has parity
 * m ^ (1 << c), and Ke couples only pairs of equal parity. Each parity has
 * three pairs (one a component), so H Ke H / 64 is eight 3 x 3 blocks B:
 * Ke x = H B (H x) in 72 products and the transforms' 144 sums instead of
 * Ke's 576 products. Plain C (the CUDA backend includes it). */
#ifndef VOXFE_ELEMENT_MODES_H
#define VOXFE_ELEMENT_MODES_H

#include <math.h>

#include "voxfe/element.h"

typedef struct vox_element_modes {
  int ok;               /* Ke has the symmetry (to 1e-13 of its largest entry) */
  double block[8][9];   /* by parity p: row r, column c at 3 r + c */
  float block32[8][9];  /* the same rounded to float (float products) */
  int corner_mode[8];   /* b(a) of corner a */
} vox_element_modes;

/* The blocks of a 24 x 24 elasticity Ke (row-major), or ok = 0 where Ke
 * couples two parities by more than 1e-13 of its largest entry. */
static inline void vox_element_modes_set(const double *ke, vox_element_modes *out) {
  int bits[8];
  for (int a = 0; a < 8; a++)
    bits[a] = vox_hex8_corner[a][0] | vox_hex8_corner[a][1] << 1 | vox_hex8_corner[a][2] << 2;
  double kmax = 0;
  for (int i = 0; i < 24 * 24; i++) kmax = fmax(kmax, fabs(ke[i]));
  int ok = kmax > 0;
  for (int m = 0; m < 8; m++)
    for (int c = 0; c < 3; c++)
      for (int n = 0; n < 8; n++)
        for (int d = 0; d < 3; d++) {
          double sum = 0;
          for (int a = 0; a < 8; a++)
            for (int b = 0; b < 8; b++) {
              const int sign = (__builtin_popcount((unsigned)(m & bits[a]) ^
                                                  (unsigned)(n & bits[b]) << 3) & 1) ? -1 : 1;
              sum += sign * ke[(3 * a + c) * 24 + 3 * b + d];
            }
          sum /= 64;
          const int p = m ^ 1 << c, q = n ^ 1 << d;
          if (p != q) {
            ok &= fabs(sum) <= 1e-13 * kmax;
          } else {
            /* (a rigid translation's rows are sums of Ke's rows: zero) */
            out->block[p][3 * c + d] = fabs(sum) <= 1e-13 * kmax ? 0 : sum;
          }
        }
  for (int p = 0; p < 8; p++)
    for (int i = 0; i < 9; i++) out->block32[p][i] = (float)out->block[p][i];
  for (int a = 0; a < 8; a++) out->corner_mode[a] = bits[a];
  out->ok = ok;
}

#endif
