/* SPDX-License-Identifier: BSD-3-Clause */
/* The exact ray/triangle arithmetic of the mesh fill, shared by the CPU
 * (import/mesh_fill.c) and the GPU (cuda/cuda_mesh_fill.cu) so that both
 * give the same voxels bit for bit: part of the interface through which
 * import/ reaches the GPU (voxfe/device/mesh_fill.h), not installed.
 *
 * Coordinates are fixed point: integers in units of 2^-K voxel from the
 * grid's origin, at most 2^29 in magnitude, so that every difference fits in
 * 31 bits and every 2x2 determinant in 63. A ray runs along axis A through
 * the centre of a voxel column; B and C are the two other axes, in cyclic
 * order. Whether the ray meets a triangle is decided on the projection to
 * (B, C) by the signs of three edge functions, each exact, with the ray's
 * point moved by (eps, eps^2): a ray through an edge or a vertex is then
 * inside exactly one of the triangles around it (the sign for an edge (a, b)
 * is minus that for (b, a), perturbation included), which keeps the parity of
 * a closed surface whatever the order or orientation of its triangles.
 *
 * Where the ray crosses the triangle's plane is computed in double from the
 * exact integer weights, with the triangle's corners in a fixed
 * (lexicographic) order and no fused multiply-add: rounded, but the same
 * number on every platform and for every order of the triangles. A voxel
 * whose centre lies below that crossing along the ray counts it. */
#ifndef VOXFE_DEVICE_RAYCAST_H
#define VOXFE_DEVICE_RAYCAST_H

#include <math.h>
#include <stdint.h>

#ifdef __CUDACC__
#define RAYCAST_FN static __host__ __device__ __forceinline__
#else
#define RAYCAST_FN static inline
#endif

/* The largest magnitude of a fixed-point coordinate. */
#define RAYCAST_FIXED_LIMIT ((int64_t)1 << 29)

/* Sign (+1, -1, or 0 only for a degenerate edge) of the edge function of the
 * projected edge (a, b) at point p, with p moved by (eps, eps^2). The edge
 * function is affine in p: d/dp_b = a_c - b_c, d/dp_c = b_b - a_b. */
RAYCAST_FN int raycast_edge_sign(int64_t ab, int64_t ac, int64_t bb, int64_t bc, int64_t pb,
                                 int64_t pc, int64_t *value) {
  int64_t e = (ab - pb) * (bc - pc) - (ac - pc) * (bb - pb);
  *value = e;
  if (e) return e > 0 ? 1 : -1;
  if (ac != bc) return ac > bc ? 1 : -1;
  if (bb != ab) return bb > ab ? 1 : -1;
  return 0;
}

/* Floor of n / d for d > 0, in integers. */
RAYCAST_FN int64_t raycast_floor_div(int64_t n, int64_t d) {
  int64_t q = n / d;
  return (n % d != 0 && n < 0) ? q - 1 : q;
}

/* The rays (column indices along one cross axis) whose centres
 * (2j + 1) * 2^(K-1) lie in [lo, hi], clamped to [0, n - 1]; *first > *last
 * when none. */
RAYCAST_FN void raycast_span(int64_t lo, int64_t hi, int bits, int64_t n, int64_t *first,
                             int64_t *last) {
  const int64_t scale = (int64_t)1 << bits, half = scale >> 1;
  int64_t f = -raycast_floor_div(half - lo, scale); /* ceil((lo - half) / scale) */
  int64_t l = raycast_floor_div(hi - half, scale);
  *first = f < 0 ? 0 : f;
  *last = l > n - 1 ? n - 1 : l;
}

#ifdef __CUDA_ARCH__
#define RAYCAST_MUL(x, y) __dmul_rn(x, y)
#define RAYCAST_ADD(x, y) __dadd_rn(x, y)
#define RAYCAST_DIV(x, y) __ddiv_rn(x, y)
#define RAYCAST_TO_DOUBLE(x) __ll2double_rn(x)
#else
/* import/mesh_fill.c is compiled with -ffp-contract=off: these stay two
 * roundings. */
#define RAYCAST_MUL(x, y) ((x) * (y))
#define RAYCAST_ADD(x, y) ((x) + (y))
#define RAYCAST_DIV(x, y) ((x) / (y))
#define RAYCAST_TO_DOUBLE(x) ((double)(x))
#endif

/* Whether the ray through (pb, pc) along axis A meets the triangle with
 * corners a, b, c (fixed point, indexed by axis, in canonical order); if so
 * *cut is the number of voxel centres of the column (0..n) that lie below the
 * crossing: the voxels from *cut on have it below their centres. */
RAYCAST_FN int raycast_cross(const int64_t *a, const int64_t *b, const int64_t *c, int A, int B,
                             int C, int64_t pb, int64_t pc, int bits, int64_t n, int64_t *cut) {
  int64_t wc, wa, wb;
  int s1 = raycast_edge_sign(a[B], a[C], b[B], b[C], pb, pc, &wc);
  if (!s1) return 0;
  int s2 = raycast_edge_sign(b[B], b[C], c[B], c[C], pb, pc, &wa);
  if (s2 != s1) return 0;
  int s3 = raycast_edge_sign(c[B], c[C], a[B], a[C], pb, pc, &wb);
  if (s3 != s1) return 0;
  /* Barycentric weights: wa for a (the edge b-c), and so on; their sum is
   * twice the projected area, the same for every p. */
  const int64_t w = wa + wb + wc;
  if (w == 0) return 0;
  double num = RAYCAST_ADD(RAYCAST_MUL(RAYCAST_TO_DOUBLE(wb), RAYCAST_TO_DOUBLE(b[A] - a[A])),
                           RAYCAST_MUL(RAYCAST_TO_DOUBLE(wc), RAYCAST_TO_DOUBLE(c[A] - a[A])));
  double x = RAYCAST_ADD(RAYCAST_TO_DOUBLE(a[A]), RAYCAST_DIV(num, RAYCAST_TO_DOUBLE(w)));
  /* voxel i's centre is (i + 1/2) * 2^K: below x for i < ceil(x / 2^K - 1/2);
   * the scalings by powers of two are exact. */
  const double scale = RAYCAST_TO_DOUBLE((int64_t)1 << bits);
  double t = ceil(RAYCAST_ADD(RAYCAST_DIV(x, scale), -0.5));
  *cut = t <= 0 ? 0 : t >= (double)n ? n : (int64_t)t;
  return 1;
}

/* The ray axis of the parity rule: the one with the fewest columns (rays),
 * on a tie the later axis (z before y before x); the CPU and the GPU must
 * take the same. n: the grid's elements along x, y, z. */
RAYCAST_FN int raycast_parity_axis(const int64_t n[3]) {
  const int64_t rays[3] = {n[1] * n[2], n[2] * n[0], n[0] * n[1]};
  int best = 2;
  for (int a = 1; a >= 0; a--)
    if (rays[a] < rays[best]) best = a;
  return best;
}

/* Corners in canonical order: lexicographic by (x, y, z). Welded vertices
 * are distinct points, so the order is strict. */
RAYCAST_FN int raycast_less(const int64_t *p, const int64_t *q) {
  if (p[0] != q[0]) return p[0] < q[0];
  if (p[1] != q[1]) return p[1] < q[1];
  return p[2] < q[2];
}

#endif
