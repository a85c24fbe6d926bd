/* SPDX-License-Identifier: BSD-3-Clause */
/* Analytic solids as triangle meshes, for the mesh tests: a UV sphere and a
 * cube with a polygonal hole through it, their exact inside tests and
 * volumes (independent of the fill's ray casting), and writers of the file
 * formats assimp reads. Coordinates are rounded to float, so that every file
 * format (float32 in STL) holds exactly the mesh in memory. */
#ifndef VOXFE_TESTS_MESH_SHAPES_H
#define VOXFE_TESTS_MESH_SHAPES_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "voxfe/mesh.h"

static inline void shape_alloc(vox_mesh *m, int64_t nv, int64_t nt) {
  m->n_vertices = 0;
  m->n_triangles = 0;
  m->vertex = malloc((size_t)nv * 3 * sizeof *m->vertex);
  m->triangle = malloc((size_t)nt * 3 * sizeof *m->triangle);
  if (!m->vertex || !m->triangle) {
    fprintf(stderr, "out of memory\n");
    exit(1);
  }
}

static inline uint32_t shape_vertex(vox_mesh *m, double x, double y, double z) {
  double *v = &m->vertex[3 * m->n_vertices];
  v[0] = (float)x, v[1] = (float)y, v[2] = (float)z;
  return (uint32_t)m->n_vertices++;
}

static inline void shape_triangle(vox_mesh *m, uint32_t a, uint32_t b, uint32_t c) {
  uint32_t *t = &m->triangle[3 * m->n_triangles++];
  t[0] = a, t[1] = b, t[2] = c;
}

/* a-b-c-d counter-clockwise seen from outside */
static inline void shape_quad(vox_mesh *m, uint32_t a, uint32_t b, uint32_t c, uint32_t d) {
  shape_triangle(m, a, b, c);
  shape_triangle(m, a, c, d);
}

/* A UV sphere: `rings` bands of latitude, `segments` of longitude; outward
 * triangles, poles as single vertices. */
static inline void shape_sphere(vox_mesh *m, int rings, int segments, double r, const double c[3]) {
  shape_alloc(m, (int64_t)(rings - 1) * segments + 2, 2 * (int64_t)segments * (rings - 1));
  const double pi = 3.14159265358979323846;
  uint32_t south = shape_vertex(m, c[0], c[1], c[2] - r);
  for (int i = 1; i < rings; i++) {
    double theta = pi * i / rings - pi / 2;
    for (int j = 0; j < segments; j++) {
      double phi = 2 * pi * j / segments;
      shape_vertex(m, c[0] + r * cos(theta) * cos(phi), c[1] + r * cos(theta) * sin(phi),
                   c[2] + r * sin(theta));
    }
  }
  uint32_t north = shape_vertex(m, c[0], c[1], c[2] + r);
#define RING(i, j) ((uint32_t)(1 + ((i) - 1) * segments + ((j) % segments)))
  for (int j = 0; j < segments; j++) {
    shape_triangle(m, south, RING(1, j + 1), RING(1, j));
    shape_triangle(m, north, RING(rings - 1, j), RING(rings - 1, j + 1));
    for (int i = 1; i < rings - 1; i++)
      shape_quad(m, RING(i, j), RING(i, j + 1), RING(i + 1, j + 1), RING(i + 1, j));
  }
#undef RING
}

/* A ball of radius 40 mm whose surface ripples by up to 8 mm (12 x 9
 * bumps): saddles, several crossings per column, no symmetry a grid could
 * line up with, a bounding box close to a cube. About `triangles` triangles:
 * u x v quads of longitude and latitude, two triangles each; those at the
 * poles are degenerate (a pole is one point), as in many exports. */
static inline void shape_rippled_ball(vox_mesh *m, long triangles) {
  int v = (int)sqrt(triangles / 2.0 / 2.0), u = (int)(triangles / 2.0 / v);
  const double pi = 3.14159265358979323846;
  shape_alloc(m, (int64_t)u * (v + 1), 2 * (int64_t)u * v);
  for (int i = 0; i < u; i++)
    for (int j = 0; j <= v; j++) {
      double a = 2 * pi * i / u, b = pi * j / v - pi / 2;
      double r = 40 + 8 * sin(12 * a) * sin(9 * b) * cos(b);
      shape_vertex(m, r * cos(b) * cos(a) + 0.123, r * cos(b) * sin(a) - 0.456,
                   r * sin(b) + 0.789);
    }
  for (int i = 0; i < u; i++)
    for (int j = 0; j < v; j++) {
      uint32_t i1 = (uint32_t)((i + 1) % u), w = (uint32_t)(v + 1);
      shape_quad(m, (uint32_t)i * w + j, i1 * w + j, i1 * w + j + 1, (uint32_t)i * w + j + 1);
    }
}

/* The exact inside test of a convex mesh with outward triangles: the point
 * lies on the inner side of every face plane. Returns 1 inside, 0 outside,
 * -1 within `tol` of a plane (where rounding may decide either way). */
static inline int shape_convex_inside(const vox_mesh *m, const double p[3], double tol) {
  int near = 0;
  for (int64_t t = 0; t < m->n_triangles; t++) {
    const double *a = &m->vertex[3 * m->triangle[3 * t]], *b = &m->vertex[3 * m->triangle[3 * t + 1]],
                 *c = &m->vertex[3 * m->triangle[3 * t + 2]];
    double u[3], v[3], n[3];
    for (int k = 0; k < 3; k++) u[k] = b[k] - a[k], v[k] = c[k] - a[k];
    n[0] = u[1] * v[2] - u[2] * v[1];
    n[1] = u[2] * v[0] - u[0] * v[2];
    n[2] = u[0] * v[1] - u[1] * v[0];
    double len = sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
    if (len == 0) continue;
    double d = (n[0] * (p[0] - a[0]) + n[1] * (p[1] - a[1]) + n[2] * (p[2] - a[2])) / len;
    if (d > tol) return 0;
    if (d > -tol) near = 1;
  }
  return near ? -1 : 1;
}

/* The volume of a closed mesh with outward triangles (divergence theorem)
 * and its surface area. */
static inline double shape_volume(const vox_mesh *m, double *area) {
  double volume = 0, a_sum = 0;
  for (int64_t t = 0; t < m->n_triangles; t++) {
    const double *a = &m->vertex[3 * m->triangle[3 * t]], *b = &m->vertex[3 * m->triangle[3 * t + 1]],
                 *c = &m->vertex[3 * m->triangle[3 * t + 2]];
    volume += (a[0] * (b[1] * c[2] - b[2] * c[1]) - a[1] * (b[0] * c[2] - b[2] * c[0]) +
               a[2] * (b[0] * c[1] - b[1] * c[0])) / 6;
    double u[3], v[3];
    for (int k = 0; k < 3; k++) u[k] = b[k] - a[k], v[k] = c[k] - a[k];
    double n0 = u[1] * v[2] - u[2] * v[1], n1 = u[2] * v[0] - u[0] * v[2],
           n2 = u[0] * v[1] - u[1] * v[0];
    a_sum += 0.5 * sqrt(n0 * n0 + n1 * n1 + n2 * n2);
  }
  if (area) *area = a_sum;
  return volume;
}

/* The cube [-L, L]^3 with a regular N-gon prism of circumradius r along z
 * cut out (N a multiple of 8, so that the square's corners are ring
 * vertices): genus 1, not convex. Each of the N sectors is four quads: top
 * and bottom between the polygon and the square, the hole's wall and the
 * cube's side. */
static inline void shape_holed_cube(vox_mesh *m, double L, double r, int N) {
  shape_alloc(m, 4 * (int64_t)N, 8 * (int64_t)N);
  const double pi = 3.14159265358979323846;
  for (int s = 0; s < 2; s++) { /* bottom, top */
    double z = s ? L : -L;
    for (int i = 0; i < N; i++) {
      double phi = 2 * pi * i / N, c = cos(phi), sn = sin(phi);
      double reach = L / fmax(fabs(c), fabs(sn));
      shape_vertex(m, r * c, r * sn, z);         /* hole: 2*N*s + 2*i */
      shape_vertex(m, reach * c, reach * sn, z); /* square: 2*N*s + 2*i + 1 */
    }
  }
#define HOLE(s, i) ((uint32_t)(2 * N * (s) + 2 * ((i) % N)))
#define SQUARE(s, i) ((uint32_t)(2 * N * (s) + 2 * ((i) % N) + 1))
  for (int i = 0; i < N; i++) {
    shape_quad(m, HOLE(1, i), SQUARE(1, i), SQUARE(1, i + 1), HOLE(1, i + 1));
    shape_quad(m, HOLE(0, i), HOLE(0, i + 1), SQUARE(0, i + 1), SQUARE(0, i));
    shape_quad(m, SQUARE(0, i), SQUARE(0, i + 1), SQUARE(1, i + 1), SQUARE(1, i));
    shape_quad(m, HOLE(0, i), HOLE(1, i), HOLE(1, i + 1), HOLE(0, i + 1));
  }
#undef HOLE
#undef SQUARE
}

/* Inside the holed cube: in the cube, outside the N-gon (the side of every
 * polygon edge); -1 within tol of a face. */
static inline int shape_holed_cube_inside(double L, double r, int N, const double p[3], double tol) {
  const double pi = 3.14159265358979323846;
  double out = -INFINITY; /* largest signed distance to the cube's faces */
  for (int k = 0; k < 3; k++) out = fmax(out, fabs(p[k]) - L);
  double hole = -INFINITY; /* largest signed distance to the polygon's edges */
  for (int i = 0; i < N; i++) {
    double mid = 2 * pi * (i + 0.5) / N;
    hole = fmax(hole, p[0] * cos(mid) + p[1] * sin(mid) - r * cos(pi / N));
  }
  double d = fmax(out, -hole); /* > 0 outside the solid */
  if (fabs(d) <= tol) return -1;
  return d < 0;
}

/* ---- files ------------------------------------------------------------------ */

static inline const double *shape_corner(const vox_mesh *m, int64_t t, int c) {
  return &m->vertex[3 * m->triangle[3 * t + c]];
}

/* Binary STL; `header` goes into the 80-byte header ("solid ..." is what
 * many CAD tools write there, and what fools a reader that trusts it). */
static inline int shape_write_stl_binary(const vox_mesh *m, const char *path, const char *header) {
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  char head[80] = {0};
  memcpy(head, header, strlen(header) < sizeof head ? strlen(header) : sizeof head);
  fwrite(head, 1, 80, f);
  uint32_t n = (uint32_t)m->n_triangles;
  fwrite(&n, 4, 1, f);
  for (int64_t t = 0; t < m->n_triangles; t++) {
    float rec[12] = {0};
    for (int c = 0; c < 3; c++)
      for (int k = 0; k < 3; k++) rec[3 + 3 * c + k] = (float)shape_corner(m, t, c)[k];
    uint16_t attr = 0;
    fwrite(rec, 4, 12, f);
    fwrite(&attr, 2, 1, f);
  }
  return fclose(f);
}

static inline int shape_write_stl_ascii(const vox_mesh *m, const char *path) {
  FILE *f = fopen(path, "w");
  if (!f) return -1;
  fprintf(f, "solid shape\n");
  for (int64_t t = 0; t < m->n_triangles; t++) {
    fprintf(f, "facet normal 0 0 0\n outer loop\n");
    for (int c = 0; c < 3; c++) {
      const double *p = shape_corner(m, t, c);
      fprintf(f, "  vertex %.9g %.9g %.9g\n", p[0], p[1], p[2]);
    }
    fprintf(f, " endloop\nendfacet\n");
  }
  fprintf(f, "endsolid shape\n");
  return fclose(f);
}

/* OBJ, PLY (ASCII) and OFF: shared vertices, faces by index. */
static inline int shape_write_indexed(const vox_mesh *m, const char *path, const char *format) {
  FILE *f = fopen(path, "w");
  if (!f) return -1;
  int obj = !strcmp(format, "obj"), ply = !strcmp(format, "ply");
  if (ply)
    fprintf(f, "ply\nformat ascii 1.0\nelement vertex %lld\nproperty float x\nproperty float y\n"
               "property float z\nelement face %lld\nproperty list uchar int vertex_indices\n"
               "end_header\n",
            (long long)m->n_vertices, (long long)m->n_triangles);
  else if (!obj)
    fprintf(f, "OFF\n%lld %lld 0\n", (long long)m->n_vertices, (long long)m->n_triangles);
  for (int64_t v = 0; v < m->n_vertices; v++)
    fprintf(f, "%s%.9g %.9g %.9g\n", obj ? "v " : "", m->vertex[3 * v], m->vertex[3 * v + 1],
            m->vertex[3 * v + 2]);
  for (int64_t t = 0; t < m->n_triangles; t++) {
    const uint32_t *i = &m->triangle[3 * t];
    if (obj)
      fprintf(f, "f %u %u %u\n", i[0] + 1, i[1] + 1, i[2] + 1);
    else
      fprintf(f, "3 %u %u %u\n", i[0], i[1], i[2]);
  }
  return fclose(f);
}

#endif
