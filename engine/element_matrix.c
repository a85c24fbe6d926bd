/* SPDX-License-Identifier: BSD-3-Clause */
/* Exact hex8 element matrices on a box voxel, by 2x2x2 Gauss quadrature
 * (exact here: the integrands are polynomials of degree <= 2 per direction). */
#include <math.h>
#include <string.h>

#include "voxfe/element.h"

/* Gradients (physical, 1/mm) of the 8 shape functions at reference point
 * (xi, eta, zeta) in [0,1]^3 of a box with edges h. */
static void shape_gradients(const double xi[3], const double h[3], double grad[8][3]) {
  for (int a = 0; a < 8; a++) {
    double f[3], df[3];
    for (int d = 0; d < 3; d++) {
      /* 1D linear shape function of node coordinate 0 or 1 and its derivative */
      f[d] = vox_hex8_corner[a][d] ? xi[d] : 1 - xi[d];
      df[d] = (vox_hex8_corner[a][d] ? 1.0 : -1.0) / h[d];
    }
    grad[a][0] = df[0] * f[1] * f[2];
    grad[a][1] = f[0] * df[1] * f[2];
    grad[a][2] = f[0] * f[1] * df[2];
  }
}

/* Strain-displacement matrix, Voigt order xx yy zz yz zx xy (engineering). */
static void strain_matrix(double grad[8][3], double b[6 * 24]) {
  memset(b, 0, 6 * 24 * sizeof *b);
  for (int a = 0; a < 8; a++) {
    const double gx = grad[a][0], gy = grad[a][1], gz = grad[a][2];
    double *col = b + 3 * a;
    col[0 * 24 + 0] = gx;
    col[1 * 24 + 1] = gy;
    col[2 * 24 + 2] = gz;
    col[3 * 24 + 1] = gz; col[3 * 24 + 2] = gy; /* gamma_yz */
    col[4 * 24 + 0] = gz; col[4 * 24 + 2] = gx; /* gamma_zx */
    col[5 * 24 + 0] = gy; col[5 * 24 + 1] = gx; /* gamma_xy */
  }
}

/* The two Gauss points on [0,1] and their weight 1/2. */
static const double gauss_point[2] = {0.5 - 0.5 / 1.7320508075688772935,
                                      0.5 + 0.5 / 1.7320508075688772935};

int vox_isotropic_elasticity_matrix(double E, double nu, double d[6 * 6]) {
  if (!(nu > -1 && nu < 0.5) || !(E > 0)) return -1;
  const double lambda = E * nu / ((1 + nu) * (1 - 2 * nu)), mu = E / (2 * (1 + nu));
  memset(d, 0, 36 * sizeof *d);
  for (int i = 0; i < 3; i++) {
    for (int j = 0; j < 3; j++) d[i * 6 + j] = lambda;
    d[i * 6 + i] = lambda + 2 * mu;
    d[(i + 3) * 6 + (i + 3)] = mu;
  }
  return 0;
}

int vox_hex8_elasticity(double E, double nu, const double h[3], double ke[24 * 24]) {
  double d[36];
  if (vox_isotropic_elasticity_matrix(E, nu, d) != 0) return -1;
  const double weight = h[0] * h[1] * h[2] / 8; /* Jacobian times Gauss weights */
  memset(ke, 0, 24 * 24 * sizeof *ke);
  for (int g = 0; g < 8; g++) {
    const double xi[3] = {gauss_point[g & 1], gauss_point[(g >> 1) & 1], gauss_point[g >> 2]};
    double grad[8][3], b[6 * 24], db[6 * 24];
    shape_gradients(xi, h, grad);
    strain_matrix(grad, b);
    for (int i = 0; i < 6; i++)
      for (int k = 0; k < 24; k++) {
        double s = 0;
        for (int j = 0; j < 6; j++) s += d[i * 6 + j] * b[j * 24 + k];
        db[i * 24 + k] = s;
      }
    for (int r = 0; r < 24; r++)
      for (int c = 0; c < 24; c++) {
        double s = 0;
        for (int i = 0; i < 6; i++) s += b[i * 24 + r] * db[i * 24 + c];
        ke[r * 24 + c] += weight * s;
      }
  }
  return 0;
}

int vox_hex8_conduction(double k, const double h[3], double ke[8 * 8]) {
  if (!(k > 0)) return -1;
  const double weight = h[0] * h[1] * h[2] / 8;
  memset(ke, 0, 64 * sizeof *ke);
  for (int g = 0; g < 8; g++) {
    const double xi[3] = {gauss_point[g & 1], gauss_point[(g >> 1) & 1], gauss_point[g >> 2]};
    double grad[8][3];
    shape_gradients(xi, h, grad);
    for (int a = 0; a < 8; a++)
      for (int b = 0; b < 8; b++)
        ke[a * 8 + b] += weight * k *
                         (grad[a][0] * grad[b][0] + grad[a][1] * grad[b][1] + grad[a][2] * grad[b][2]);
  }
  return 0;
}

void vox_hex8_strain_at_centre(const double h[3], double b[6 * 24]) {
  const double centre[3] = {0.5, 0.5, 0.5};
  double grad[8][3];
  shape_gradients(centre, h, grad);
  strain_matrix(grad, b);
}
