/* SPDX-License-Identifier: BSD-3-Clause */
/* The marching-cubes case table, derived from the per-face rule that
 * cube_cases.h describes. */
#include "cube_cases.h"

#include <math.h>
#include <string.h>

#define MAX_LOOP 12

static int edge_code(int p, int q) { /* the cube edge between corners p and q (one bit apart) */
  int d = p ^ q, axis = d == 1 ? 0 : d == 2 ? 1 : 2;
  return (p & q) << 2 | axis;
}

static void edge_midpoint(int code, double m[3]) {
  int u = code >> 2, axis = code & 3;
  for (int c = 0; c < 3; c++) m[c] = (u >> c) & 1;
  m[axis] += 0.5;
}

/* The faces (bit 2 axis + side) an edge lies on: the two planes of the axes
 * it does not run along. */
static unsigned edge_faces(int code) {
  int u = code >> 2, axis = code & 3;
  unsigned faces = 0;
  for (int k = 0; k < 3; k++)
    if (k != axis) faces |= 1u << (2 * k + ((u >> k) & 1));
  return faces;
}

/* 4 sqrt(3) area / sum of squared sides: 1 for an equilateral triangle, 0
 * for a degenerate one. */
static double quality(const double p[3], const double q[3], const double r[3]) {
  double u[3], v[3], w[3];
  for (int c = 0; c < 3; c++) u[c] = q[c] - p[c], v[c] = r[c] - p[c], w[c] = r[c] - q[c];
  double n[3] = {u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0]};
  double area = 0.5 * sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
  double s = 0;
  for (int c = 0; c < 3; c++) s += u[c] * u[c] + v[c] * v[c] + w[c] * w[c];
  return 4 * sqrt(3.0) * area / s;
}

/* Triangulates the loop v[0..n-1] (edge codes, in order) into `out`; returns
 * the number of triangles or -1. Dynamic programming over the sub-polygons
 * v[i..j]: best[i][j] is the best worst quality of a triangulation of it,
 * whose chord (i, j) must be allowed. */
static int triangulate(const int *v, int n, uint8_t (*out)[3]) {
  double p[MAX_LOOP][3];
  unsigned faces[MAX_LOOP];
  for (int i = 0; i < n; i++) edge_midpoint(v[i], p[i]), faces[i] = edge_faces(v[i]);
  double best[MAX_LOOP][MAX_LOOP];
  int apex[MAX_LOOP][MAX_LOOP];
  for (int len = 1; len < n; len++)
    for (int i = 0; i + len < n; i++) {
      int j = i + len;
      best[i][j] = len == 1 ? INFINITY : -1;
      apex[i][j] = -1;
      /* a chord inside the loop (not its closing edge 0 - (n-1)) joining two
       * vertices of one face could be drawn by the next cube as well */
      int chord = len > 1 && !(i == 0 && j == n - 1);
      if (len == 1 || (chord && (faces[i] & faces[j]))) continue;
      for (int k = i + 1; k < j; k++) {
        double q = fmin(quality(p[i], p[k], p[j]), fmin(best[i][k], best[k][j]));
        if (q > best[i][j]) best[i][j] = q, apex[i][j] = k;
      }
    }
  if (!(best[0][n - 1] > 0)) return -1;
  int stack[MAX_LOOP][2], top = 0, count = 0;
  stack[top][0] = 0, stack[top++][1] = n - 1;
  while (top > 0) {
    top--;
    int i = stack[top][0], j = stack[top][1];
    if (j - i < 2) continue;
    int k = apex[i][j];
    out[count][0] = (uint8_t)v[i], out[count][1] = (uint8_t)v[k], out[count][2] = (uint8_t)v[j];
    count++;
    stack[top][0] = i, stack[top++][1] = k;
    stack[top][0] = k, stack[top++][1] = j;
  }
  return count;
}

int vox_cube_cases_build(vox_cube_cases *cc) {
  memset(cc, 0, sizeof *cc);
  for (int config = 0; config < 256; config++) {
    /* next[e]: the edge after edge e along the loop through it, -1 where
     * the surface does not cross e */
    int next[32];
    for (int e = 0; e < 32; e++) next[e] = -1;
    for (int axis = 0; axis < 3; axis++)
      for (int side = 0; side < 2; side++) {
        /* the face's corners in cyclic order, its outward normal */
        int a1 = (axis + 1) % 3, a2 = (axis + 2) % 3, base = side << axis;
        int corner[4] = {base, base | 1 << a1, base | 1 << a1 | 1 << a2, base | 1 << a2};
        double normal[3] = {0, 0, 0};
        normal[axis] = side ? 1 : -1;
        int in[4], n_in = 0;
        for (int i = 0; i < 4; i++) n_in += in[i] = (config >> corner[i]) & 1;
        if (n_in == 0 || n_in == 4) continue;
        /* the segments as pairs of crossed face edges (edge i joins corners
         * i and i + 1), with an inside corner beside them */
        int seg[2][2], seg_corner[2], n_seg = 0;
        if (n_in == 2 && in[0] == in[2]) { /* ambiguous: cut off each inside corner */
          for (int i = 0; i < 4; i++)
            if (in[i]) {
              seg[n_seg][0] = (i + 3) % 4, seg[n_seg][1] = i, seg_corner[n_seg++] = corner[i];
            }
        } else {
          int k = 0;
          for (int i = 0; i < 4; i++)
            if (in[i] != in[(i + 1) % 4]) seg[0][k++] = i;
          for (int i = 0; i < 4; i++)
            if (in[i]) seg_corner[0] = corner[i];
          n_seg = 1;
        }
        for (int s = 0; s < n_seg; s++) {
          int e[2];
          for (int t = 0; t < 2; t++) {
            int i = seg[s][t];
            e[t] = edge_code(corner[i], corner[(i + 1) % 4]);
          }
          /* orient: (normal x d) points away from the inside corner */
          double p0[3], p1[3], c[3], d[3], m[3];
          edge_midpoint(e[0], p0);
          edge_midpoint(e[1], p1);
          for (int k = 0; k < 3; k++)
            c[k] = (seg_corner[s] >> k) & 1, d[k] = p1[k] - p0[k], m[k] = 0.5 * (p0[k] + p1[k]);
          double side_of[3] = {normal[1] * d[2] - normal[2] * d[1],
                               normal[2] * d[0] - normal[0] * d[2],
                               normal[0] * d[1] - normal[1] * d[0]};
          double dot = 0;
          for (int k = 0; k < 3; k++) dot += side_of[k] * (c[k] - m[k]);
          int from = dot < 0 ? e[0] : e[1], to = dot < 0 ? e[1] : e[0];
          if (next[from] != -1) return -1; /* two segments leave one vertex */
          next[from] = to;
        }
      }
    /* follow the loops, from their lowest edge code so the table does not
     * depend on the order of the faces */
    int done[32] = {0};
    for (int start = 0; start < 32; start++) {
      if (next[start] < 0 || done[start]) continue;
      int loop[MAX_LOOP], n = 0;
      for (int e = start; !done[e]; e = next[e]) {
        if (e < 0 || n == MAX_LOOP) return -1;
        done[e] = 1;
        loop[n++] = e;
      }
      if (loop[0] != start || n < 3 || next[loop[n - 1]] != start) return -1;
      if (cc->count[config] + n - 2 > VOX_CUBE_MAX_TRIANGLES) return -1;
      int made = triangulate(loop, n, cc->edge[config] + cc->count[config]);
      if (made != n - 2) return -1;
      cc->count[config] = (uint8_t)(cc->count[config] + made);
    }
  }
  return 0;
}
