/* SPDX-License-Identifier: BSD-3-Clause */
/* The element-level pieces of the Galerkin product (galerkin_element.h). */
#include "galerkin_element.h"

#include <stdlib.h>
#include <string.h>

#include "voxfe/element.h"

void vox_galerkin_interpolation(int s, int dpn, double *q) {
  const int nloc = 8 * dpn;
  memset(q, 0, (size_t)nloc * (size_t)nloc * sizeof *q);
  for (int a = 0; a < 8; a++)
    for (int c = 0; c < 8; c++) {
      double w = 1;
      for (int axis = 0; axis < 3; axis++) {
        const int f = ((s >> axis) & 1) + vox_hex8_corner[a][axis]; /* 0..2 fine units */
        w *= 1 - 0.5 * abs(f - 2 * vox_hex8_corner[c][axis]);
      }
      for (int d = 0; d < dpn; d++) q[(dpn * a + d) * nloc + dpn * c + d] = w;
    }
}

void vox_galerkin_triple_product(const double *q, const double *k, int nloc, double *out) {
  double kq[24 * 24];
  for (int r = 0; r < nloc; r++)
    for (int c = 0; c < nloc; c++) {
      double s = 0;
      for (int m = 0; m < nloc; m++) s += k[r * nloc + m] * q[m * nloc + c];
      kq[r * nloc + c] = s;
    }
  for (int r = 0; r < nloc; r++)
    for (int c = 0; c < nloc; c++) {
      double s = 0;
      for (int m = 0; m < nloc; m++) s += q[m * nloc + r] * kq[m * nloc + c];
      out[r * nloc + c] = s;
    }
}

void vox_galerkin_element_products(const double *ke, int dpn, double *qkq) {
  const int nloc = 8 * dpn;
  double q[24 * 24];
  for (int s = 0; s < 8; s++) {
    vox_galerkin_interpolation(s, dpn, q);
    vox_galerkin_triple_product(q, ke, nloc, qkq + (size_t)s * (size_t)(nloc * nloc));
  }
}
