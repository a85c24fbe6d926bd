/* SPDX-License-Identifier: BSD-3-Clause */
/* Element matrices: symmetry, rigid-body modes in the null space, the patch
 * test, and the conduction matrix's constant null space. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "voxfe/element.h"

/* The six rigid-body modes of the element at node coordinates x (mm). */
static void rigid_modes(const double h[3], double modes[6][24]) {
  memset(modes, 0, 6 * 24 * sizeof(double));
  for (int a = 0; a < 8; a++) {
    const double x = vox_hex8_corner[a][0] * h[0], y = vox_hex8_corner[a][1] * h[1],
                 z = vox_hex8_corner[a][2] * h[2];
    for (int c = 0; c < 3; c++) modes[c][3 * a + c] = 1; /* translations */
    modes[3][3 * a + 1] = -z, modes[3][3 * a + 2] = y;   /* rotation about x */
    modes[4][3 * a + 0] = z, modes[4][3 * a + 2] = -x;   /* about y */
    modes[5][3 * a + 0] = -y, modes[5][3 * a + 1] = x;   /* about z */
  }
}

static double max_abs(const double *a, int n) {
  double m = 0;
  for (int i = 0; i < n; i++) m = fmax(m, fabs(a[i]));
  return m;
}

static void test_elasticity(const double h[3]) {
  double ke[576], modes[6][24];
  const double E = 210000, nu = 0.3;
  CHECK(vox_hex8_elasticity(E, nu, h, ke) == 0);
  const double scale = max_abs(ke, 576);
  for (int r = 0; r < 24; r++)
    for (int c = 0; c < 24; c++) CHECK(fabs(ke[r * 24 + c] - ke[c * 24 + r]) <= 1e-14 * scale);
  for (int r = 0; r < 24; r++) CHECK(ke[r * 24 + r] > 0);

  rigid_modes(h, modes);
  for (int m = 0; m < 6; m++) {
    double f[24];
    for (int r = 0; r < 24; r++) {
      f[r] = 0;
      for (int c = 0; c < 24; c++) f[r] += ke[r * 24 + c] * modes[m][c];
    }
    CHECK(max_abs(f, 24) <= 1e-12 * scale * fmax(h[0], fmax(h[1], h[2])));
  }

  /* Energy of a uniform strain state equals its exact strain energy times
   * the volume: the element represents linear fields exactly. */
  const double grad[3][3] = {{1e-3, 2e-4, -3e-4}, {5e-4, -2e-3, 1e-4}, {-1e-4, 3e-4, 7e-4}};
  double u[24];
  for (int a = 0; a < 8; a++)
    for (int i = 0; i < 3; i++) {
      u[3 * a + i] = 0;
      for (int j = 0; j < 3; j++) u[3 * a + i] += grad[i][j] * vox_hex8_corner[a][j] * h[j];
    }
  double energy = 0;
  for (int r = 0; r < 24; r++)
    for (int c = 0; c < 24; c++) energy += u[r] * ke[r * 24 + c] * u[c];
  const double eps[6] = {grad[0][0], grad[1][1], grad[2][2], grad[1][2] + grad[2][1],
                         grad[2][0] + grad[0][2], grad[0][1] + grad[1][0]};
  double d[36], exact = 0;
  CHECK(vox_isotropic_elasticity_matrix(E, nu, d) == 0);
  for (int i = 0; i < 6; i++)
    for (int j = 0; j < 6; j++) exact += eps[i] * d[i * 6 + j] * eps[j];
  exact *= h[0] * h[1] * h[2];
  CHECK_CLOSE(energy, exact, 1e-12);

  /* The strain at the centre of that field is the field's strain. */
  double b[6 * 24];
  vox_hex8_strain_at_centre(h, b);
  for (int i = 0; i < 6; i++) {
    double s = 0;
    for (int c = 0; c < 24; c++) s += b[i * 24 + c] * u[c];
    CHECK_CLOSE(s, eps[i], 1e-12);
  }
}

/* Patch test on a 2x2x2 block of elements: a linear displacement field gives
 * zero force at the interior node, the one node with all its elements. */
static void test_patch(void) {
  const double h[3] = {1.0, 1.5, 0.7};
  double ke[576];
  CHECK(vox_hex8_elasticity(1000, 0.25, h, ke) == 0);
  const double grad[3][3] = {{1e-3, 2e-4, 0}, {0, -4e-4, 3e-4}, {1e-4, 0, 2e-3}};
  double f[3] = {0, 0, 0};
  for (int ek = 0; ek < 2; ek++)
    for (int ej = 0; ej < 2; ej++)
      for (int ei = 0; ei < 2; ei++) {
        double u[24];
        int centre = -1;
        for (int a = 0; a < 8; a++) {
          const int n[3] = {ei + vox_hex8_corner[a][0], ej + vox_hex8_corner[a][1],
                            ek + vox_hex8_corner[a][2]};
          if (n[0] == 1 && n[1] == 1 && n[2] == 1) centre = a;
          for (int i = 0; i < 3; i++) {
            u[3 * a + i] = 0.1 * i; /* plus a rigid translation */
            for (int j = 0; j < 3; j++) u[3 * a + i] += grad[i][j] * n[j] * h[j];
          }
        }
        for (int c = 0; c < 3; c++)
          for (int col = 0; col < 24; col++) f[c] += ke[(3 * centre + c) * 24 + col] * u[col];
      }
  for (int c = 0; c < 3; c++) CHECK(fabs(f[c]) <= 1e-12);
}

static void test_conduction(void) {
  const double h[3] = {0.5, 0.5, 2.0};
  double ke[64];
  CHECK(vox_hex8_conduction(3.0, h, ke) == 0);
  for (int r = 0; r < 8; r++) {
    double row = 0;
    for (int c = 0; c < 8; c++) {
      row += ke[r * 8 + c];
      CHECK(fabs(ke[r * 8 + c] - ke[c * 8 + r]) <= 1e-14);
    }
    CHECK(fabs(row) <= 1e-13); /* constants are in the null space */
    CHECK(ke[r * 8 + r] > 0);
  }
  /* a linear temperature field T = g.x: energy g'kg V */
  const double g[3] = {0.3, -1.2, 0.5};
  double t[8], energy = 0;
  for (int a = 0; a < 8; a++) {
    t[a] = 0;
    for (int j = 0; j < 3; j++) t[a] += g[j] * vox_hex8_corner[a][j] * h[j];
  }
  for (int r = 0; r < 8; r++)
    for (int c = 0; c < 8; c++) energy += t[r] * ke[r * 8 + c] * t[c];
  CHECK_CLOSE(energy, 3.0 * (g[0] * g[0] + g[1] * g[1] + g[2] * g[2]) * h[0] * h[1] * h[2], 1e-13);
  /* the unit cube's well-known diagonal: k h / 3 */
  const double unit[3] = {1, 1, 1};
  CHECK(vox_hex8_conduction(1.0, unit, ke) == 0);
  CHECK_CLOSE(ke[0], 1.0 / 3, 1e-15);
}

int main(void) {
  const double cube[3] = {1, 1, 1}, box[3] = {0.5, 1.25, 2.0};
  test_elasticity(cube);
  test_elasticity(box);
  test_patch();
  test_conduction();
  double ke[576];
  CHECK(vox_hex8_elasticity(1, 0.5, cube, ke) != 0); /* incompressible: refused */
  CHECK_DONE();
}
