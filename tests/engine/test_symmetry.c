/* SPDX-License-Identifier: BSD-3-Clause */
/* Symmetry enforcement (voxfe/symmetry.h) against a reference built here
 * from geometry alone: each group is generated as 3 x 3 matrices acting on
 * element centres about the cell's centre, by closing Zhang et al. 2023's generators
 * (the mirrors of reflect3 and reflect6, the quarter turns of rotate3) under
 * composition. For every group and grid:
 *   - the group has the expected order (8, 48, 24);
 *   - the result equals the brute-force orbit mean (1/|G|) sum_M f(M c);
 *   - the result is invariant under every map of the group;
 *   - a field symmetric by construction is left unchanged;
 *   - the mean is kept, and the operation is self-adjoint (<P a, b> =
 *     <a, P b>), which is why it is also the right projection of the
 *     sensitivities;
 *   - the CPU backend's op gives the same bits as the host function.
 * A cubic-only symmetry on a box grid fails with one line. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "backend_ops.h"
#include "voxfe/symmetry.h"

typedef struct mat3 {
  int m[3][3];
} mat3;

static mat3 mul(const mat3 *a, const mat3 *b) {
  mat3 c;
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) {
      c.m[i][j] = 0;
      for (int k = 0; k < 3; k++) c.m[i][j] += a->m[i][k] * b->m[k][j];
    }
  return c;
}

/* The closure of the generators under composition (with the identity). */
static int closure(const mat3 *gen, int n_gen, mat3 *group) {
  int n = 1;
  memset(&group[0], 0, sizeof group[0]);
  for (int a = 0; a < 3; a++) group[0].m[a][a] = 1;
  for (int i = 0; i < n; i++)
    for (int g = 0; g < n_gen; g++) {
      const mat3 p = mul(&gen[g], &group[i]);
      int known = 0;
      for (int j = 0; j < n && !known; j++) known = memcmp(&p, &group[j], sizeof p) == 0;
      if (!known) {
        if (n == 64) return -1;
        group[n++] = p;
      }
    }
  return n;
}

/* Zhang et al. 2023 section 6.1, in coordinates about the centre. */
static int reference_group(vox_symmetry sym, mat3 *group) {
  const mat3 mx = {{{-1, 0, 0}, {0, 1, 0}, {0, 0, 1}}}, my = {{{1, 0, 0}, {0, -1, 0}, {0, 0, 1}}},
             mz = {{{1, 0, 0}, {0, 1, 0}, {0, 0, -1}}};
  /* mirrors in x + y = 0, y + z = 0, z + x = 0: (x, y) -> (-y, -x) etc. */
  const mat3 dxy = {{{0, -1, 0}, {-1, 0, 0}, {0, 0, 1}}},
             dyz = {{{1, 0, 0}, {0, 0, -1}, {0, -1, 0}}},
             dzx = {{{0, 0, -1}, {0, 1, 0}, {-1, 0, 0}}};
  /* quarter turns about x, y, z */
  const mat3 rx = {{{1, 0, 0}, {0, 0, -1}, {0, 1, 0}}}, ry = {{{0, 0, 1}, {0, 1, 0}, {-1, 0, 0}}},
             rz = {{{0, -1, 0}, {1, 0, 0}, {0, 0, 1}}};
  mat3 gen[6];
  int n = 0;
  switch (sym) {
    case VOX_SYMMETRY_NONE: break;
    case VOX_SYMMETRY_REFLECT3: gen[n++] = mx, gen[n++] = my, gen[n++] = mz; break;
    case VOX_SYMMETRY_REFLECT6:
      gen[n++] = mx, gen[n++] = my, gen[n++] = mz;
      gen[n++] = dxy, gen[n++] = dyz, gen[n++] = dzx;
      break;
    case VOX_SYMMETRY_ROTATE3: gen[n++] = rx, gen[n++] = ry, gen[n++] = rz; break;
  }
  return closure(gen, n, group);
}

/* The element the map sends element (i, j, k) to: centres in units of half
 * a voxel about the cell's centre are integers (2 i + 1 - n), so the map is
 * exact. */
static int64_t image(const mat3 *M, const vox_grid *g, int64_t i, int64_t j, int64_t k) {
  const int64_t n[3] = {g->nx, g->ny, g->nz};
  const int64_t c[3] = {2 * i + 1 - n[0], 2 * j + 1 - n[1], 2 * k + 1 - n[2]};
  int64_t t[3];
  for (int a = 0; a < 3; a++) {
    const int64_t v = M->m[a][0] * c[0] + M->m[a][1] * c[1] + M->m[a][2] * c[2];
    t[a] = (v + n[a] - 1) / 2;
  }
  return (t[2] * g->ny + t[1]) * g->nx + t[0];
}

static double rnd(uint64_t *s) {
  *s = *s * 6364136223846793005u + 1442695040888963407u;
  return (double)(*s >> 11) / 9007199254740992.0;
}

static void test_group(vox_context *ctx, vox_backend *be, const vox_grid *g, vox_symmetry sym,
                       int expected_order) {
  mat3 group[64];
  const int order = reference_group(sym, group);
  CHECK(order == expected_order);
  const int64_t ne = vox_grid_elements(g);
  double *f = malloc(ne * sizeof *f), *p = malloc(ne * sizeof *p), *b = malloc(ne * sizeof *b);
  double *s = malloc(ne * sizeof *s);
  uint64_t seed = 7 + (uint64_t)sym;
  for (int64_t e = 0; e < ne; e++) f[e] = rnd(&seed), b[e] = rnd(&seed) - 0.5;
  memcpy(p, f, ne * sizeof *p);
  CHECK_OK(ctx, vox_symmetrize(ctx, g, sym, p));
  int mismatches = 0, not_invariant = 0;
  double mean_f = 0, mean_p = 0;
  for (int64_t k = 0; k < g->nz; k++)
    for (int64_t j = 0; j < g->ny; j++)
      for (int64_t i = 0; i < g->nx; i++) {
        const int64_t e = (k * g->ny + j) * g->nx + i;
        double sum = 0;
        for (int m = 0; m < order; m++) {
          const int64_t t = image(&group[m], g, i, j, k);
          sum += f[t];
          not_invariant += p[t] != p[e];
        }
        mismatches += fabs(sum / order - p[e]) > 1e-14;
        mean_f += f[e], mean_p += p[e];
      }
  if (mismatches || not_invariant)
    fprintf(stderr, "%s on %lldx%lldx%lld: %d values off the orbit mean, %d not invariant\n",
            vox_symmetry_name(sym), (long long)g->nx, (long long)g->ny, (long long)g->nz,
            mismatches, not_invariant);
  CHECK(mismatches == 0 && not_invariant == 0);
  CHECK_CLOSE(mean_p / ne, mean_f / ne, 1e-14);

  /* a symmetric field stays: the result itself, and one made symmetric by
   * its formula (invariant under sign changes and permutations of the
   * centred coordinates; reflect3's also under unequal axes) */
  memcpy(s, p, ne * sizeof *s);
  CHECK_OK(ctx, vox_symmetrize(ctx, g, sym, s));
  double worst = 0;
  for (int64_t e = 0; e < ne; e++) worst = fmax(worst, fabs(s[e] - p[e]));
  CHECK(worst <= 1e-15);
  for (int64_t k = 0; k < g->nz; k++)
    for (int64_t j = 0; j < g->ny; j++)
      for (int64_t i = 0; i < g->nx; i++) {
        const double x = (i + 0.5) / g->nx - 0.5, y = (j + 0.5) / g->ny - 0.5,
                     z = (k + 0.5) / g->nz - 0.5;
        const int64_t e = (k * g->ny + j) * g->nx + i;
        s[e] = sym == VOX_SYMMETRY_REFLECT3
                   ? cos(6 * x) + x * x * y * y + 3 * z * z * z * z + y * y
                   : cos(6 * x) + cos(6 * y) + cos(6 * z) + x * x * y * y * z * z;
        p[e] = s[e];
      }
  CHECK_OK(ctx, vox_symmetrize(ctx, g, sym, s));
  worst = 0;
  for (int64_t e = 0; e < ne; e++) worst = fmax(worst, fabs(s[e] - p[e]));
  CHECK(worst <= 1e-14);

  /* self-adjoint: <P f, b> = <f, P b> */
  memcpy(p, f, ne * sizeof *p);
  CHECK_OK(ctx, vox_symmetrize(ctx, g, sym, p));
  memcpy(s, b, ne * sizeof *s);
  CHECK_OK(ctx, vox_symmetrize(ctx, g, sym, s));
  double pf_b = 0, f_pb = 0;
  for (int64_t e = 0; e < ne; e++) pf_b += p[e] * b[e], f_pb += f[e] * s[e];
  CHECK_CLOSE(pf_b, f_pb, 1e-12);

  /* the backend's op: the same bits */
  vox_vec v;
  CHECK_OK(ctx, be->ops->vec->create(be, (size_t)ne, VOX_DOUBLE, &v));
  CHECK_OK(ctx, be->ops->vec->upload(be, &v, f));
  CHECK_OK(ctx, be->ops->design->symmetrize(be, g, sym, &v));
  CHECK_OK(ctx, be->ops->vec->download(be, &v, s));
  CHECK(memcmp(s, p, ne * sizeof *s) == 0);
  be->ops->vec->destroy(be, &v);
  free(f), free(p), free(b), free(s);
}

int main(void) {
  vox_context *ctx;
  vox_backend *be;
  if (vox_context_create(&ctx) || vox_backend_create(ctx, VOX_DEVICE_CPU, &be)) return 1;
  const vox_grid cubes[] = {{.nx = 6, .ny = 6, .nz = 6, .voxel_size = {1, 1, 1}},
                            {.nx = 7, .ny = 7, .nz = 7, .voxel_size = {0.5, 0.5, 0.5}},
                            {.nx = 1, .ny = 1, .nz = 1, .voxel_size = {1, 1, 1}}};
  for (size_t i = 0; i < 3; i++) {
    test_group(ctx, be, &cubes[i], VOX_SYMMETRY_NONE, 1);
    test_group(ctx, be, &cubes[i], VOX_SYMMETRY_REFLECT3, 8);
    test_group(ctx, be, &cubes[i], VOX_SYMMETRY_REFLECT6, 48);
    test_group(ctx, be, &cubes[i], VOX_SYMMETRY_ROTATE3, 24);
  }
  const vox_grid box = {.nx = 4, .ny = 5, .nz = 7, .voxel_size = {1, 0.8, 1.2}};
  test_group(ctx, be, &box, VOX_SYMMETRY_REFLECT3, 8);

  /* cubic-only groups on a box */
  double field[4 * 5 * 7] = {0};
  for (int sym = VOX_SYMMETRY_REFLECT6; sym <= VOX_SYMMETRY_ROTATE3; sym++) {
    CHECK(vox_symmetrize(ctx, &box, (vox_symmetry)sym, field) == VOX_ERR_INVALID_ARGUMENT);
    CHECK(strstr(vox_context_message(ctx), "needs a cubic cell") != NULL);
  }
  const vox_grid stretched = {.nx = 4, .ny = 4, .nz = 4, .voxel_size = {1, 1, 2}};
  CHECK(vox_symmetry_check(ctx, &stretched, VOX_SYMMETRY_ROTATE3) == VOX_ERR_INVALID_ARGUMENT);
  CHECK(vox_symmetry_check(ctx, &stretched, VOX_SYMMETRY_REFLECT3) == VOX_OK);

  /* names */
  vox_symmetry sym;
  CHECK(vox_symmetry_parse("reflect6", &sym) == 0 && sym == VOX_SYMMETRY_REFLECT6);
  CHECK(vox_symmetry_parse("rotate3", &sym) == 0 && sym == VOX_SYMMETRY_ROTATE3);
  CHECK(vox_symmetry_parse("reflect", &sym) == -1);
  CHECK(strcmp(vox_symmetry_name(VOX_SYMMETRY_REFLECT3), "reflect3") == 0);

  vox_backend_destroy(be);
  vox_context_destroy(ctx);
  CHECK_DONE();
}
