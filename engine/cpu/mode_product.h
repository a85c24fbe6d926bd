/* SPDX-License-Identifier: BSD-3-Clause */
/* The CPU's element products by the brick's reflection modes
 * (element_modes.h): Ke x = H B (H x), LANES elements side by side in one
 * vector (GCC's and Clang's vector extension; a baseline build splits it),
 * each element's values taking the same operations in any lane. */
#ifndef VOXFE_CPU_MODE_PRODUCT_H
#define VOXFE_CPU_MODE_PRODUCT_H

#include "../element_modes.h"

/* The product in modes for one vector type: NAME_lanes holds LANES
 * elements' values of type T; NAME_product(modes, v, w) turns the corner
 * values v (by mode index b(a), component) into Ke v in w, the same way
 * (H, the blocks of BLOCK, H), and leaves H v in v. */
#define VOX_MODE_PRODUCT(NAME, T, LANES, BLOCK)                                                 \
  typedef T NAME##_lanes __attribute__((vector_size((LANES) * sizeof(T))));                     \
  static inline __attribute__((always_inline)) void NAME##_hadamard8(NAME##_lanes v[8][3]) {    \
    for (int h = 1; h < 8; h <<= 1)                                                              \
      for (int i = 0; i < 8; i++)                                                                \
        if (!(i & h))                                                                            \
          for (int c = 0; c < 3; c++) {                                                          \
            const NAME##_lanes a = v[i][c], b = v[i | h][c];                                     \
            v[i][c] = a + b;                                                                     \
            v[i | h][c] = a - b;                                                                 \
          }                                                                                      \
  }                                                                                              \
  static inline __attribute__((always_inline)) void NAME##_product(                             \
      const vox_element_modes *modes, NAME##_lanes v[8][3], NAME##_lanes w[8][3]) {              \
    NAME##_hadamard8(v);                                                                         \
    for (int p = 0; p < 8; p++)                                                                  \
      for (int r = 0; r < 3; r++) {                                                              \
        const T *row = modes->BLOCK[p] + 3 * r;                                                  \
        w[p ^ 1 << r][r] = row[0] * v[p ^ 1][0] + row[1] * v[p ^ 2][1] + row[2] * v[p ^ 4][2];   \
      }                                                                                          \
    NAME##_hadamard8(w);                                                                         \
  }

/* Four doubles a vector, and eight floats (the float products). */
enum { VOX_MODE_LANES = 4, VOX_MODE_LANES_SINGLE = 8 };
VOX_MODE_PRODUCT(vox_modes, double, VOX_MODE_LANES, block)
VOX_MODE_PRODUCT(vox_modes_single, float, VOX_MODE_LANES_SINGLE, block32)

#endif
