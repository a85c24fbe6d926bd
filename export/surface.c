/* Isosurfaces of voxel fields (marching tetrahedra on the Kuhn split of the
 * grid of voxel centres), Taubin smoothing, and STL output.
 *
 * Why marching tetrahedra and not marching cubes: the Kuhn (Freudenthal)
 * triangulation splits every cube of the centre grid into six tetrahedra
 * along its main diagonal, with the same face diagonals in neighbouring
 * cubes, so the tetrahedra fill space without gaps. The level set of the
 * piecewise-linear interpolant on them is a closed 2-manifold whenever no
 * sample equals the threshold, with no ambiguous cases and no tables to get
 * wrong: the 256 cube cases are generated below from the six tetrahedra.
 * Samples exactly at the threshold count as inside (>= threshold) and
 * vertices are kept a little away from the samples (parameter in
 * [EDGE_EPS, 1 - EDGE_EPS]), so no triangle is degenerate and no two
 * vertices coincide. The cost is about twice the triangles of marching
 * cubes.
 *
 * The sample grid is the voxel centres padded by one layer of 0, point
 * (a, b, c) = voxel (a-1, b-1, c-1). The mesh vertices lie on the edges of
 * the triangulation, which join a point p to p + d for the seven directions
 * d = (dx, dy, dz) in {0,1}^3 \ {0}; edge (p, d) has bit d-1 of mask[p]. The
 * work goes by rows of points along x (b, c fixed), in three passes:
 *   1. inside[p] = (value >= threshold), one byte per point;
 *   2. per row: the crossing masks, the number of vertices (the masks' bits)
 *      and the number of triangles of the cubes whose lowest corner is in
 *      the row; prefix sums over the rows give each row's first vertex and
 *      first triangle, so the output is the same for any number of threads;
 *   3. per row: its vertices, in order of x then direction, and its cubes'
 *      triangles. A cube's edges start at four rows of points, whose vertex
 *      numbers are counted along with the cubes.
 * This is the structure of flying edges (Schroeder et al., 2015), on
 * tetrahedra. */
#include "voxfe/surface.h"
#include "temp_file.h"

#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* Vertices keep at least this fraction of an edge away from its ends, so
 * that vertices stay apart once written as float (STL): 1/64 of 0.05 mm
 * voxels is still 10 float steps at 1000 mm. It moves the surface by at most
 * 1/64 of a voxel where a value is at (or within 1/64 of) the threshold. */
#define EDGE_EPS (1.0 / 64)

void vox_surface_free(vox_surface *surface) {
  if (!surface) return;
  free(surface->vertex);
  free(surface->triangle);
  memset(surface, 0, sizeof *surface);
}

static int thread_count(const vox_context *ctx) {
  int threads = vox_context_threads(ctx);
#ifdef _OPENMP
  if (threads <= 0) threads = omp_get_max_threads();
#endif
  return threads > 0 ? threads : 1;
}

/* --- the cube cases ---------------------------------------------------------------
 * Cube corner k = dx + 2 dy + 4 dz. An edge of the triangulation inside the
 * cube joins corners u and v with u's bits a subset of v's (the tetrahedra
 * go along chains 0 -> e_i -> e_i + e_j -> 7); it is coded as
 * 8 * u + (v - u): its lowest corner and its direction d = v ^ u. */

typedef struct cube_cases {
  uint8_t count[256];           /* triangles of each inside-corner configuration */
  uint8_t edge[256][12][3];     /* their edges, oriented */
} cube_cases;

static void corner_point(int k, double p[3]) {
  p[0] = k & 1, p[1] = (k >> 1) & 1, p[2] = (k >> 2) & 1;
}

/* Appends the triangle on edges (a0,a1), (b0,b1), (c0,c1) of the cube,
 * ordered so that its right-hand normal points from the inside corners to
 * the outside ones. The orientation is decided on the edge midpoints, where
 * the triangle is the level set of the linear interpolant of the 0/1 corner
 * values; it stays valid for any point inside the edges, since a triangle on
 * three edges of a tetrahedron cannot become degenerate there. */
static void add_triangle(cube_cases *cc, int config, const int e[3][2], const double in[3],
                         const double out[3]) {
  double m[3][3];
  uint8_t code[3];
  for (int i = 0; i < 3; i++) {
    double p[3], q[3];
    corner_point(e[i][0], p);
    corner_point(e[i][1], q);
    for (int c = 0; c < 3; c++) m[i][c] = 0.5 * (p[c] + q[c]);
    int lo = e[i][0] & e[i][1], d = e[i][0] ^ e[i][1];
    code[i] = (uint8_t)(8 * lo + d);
  }
  double u[3], v[3];
  for (int c = 0; c < 3; c++) u[c] = m[1][c] - m[0][c], v[c] = m[2][c] - m[0][c];
  double n[3] = {u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0]};
  double dot = 0;
  for (int c = 0; c < 3; c++) dot += n[c] * (out[c] - in[c]);
  if (dot < 0) {
    uint8_t t = code[1];
    code[1] = code[2];
    code[2] = t;
  }
  uint8_t *dst = cc->edge[config][cc->count[config]++];
  memcpy(dst, code, 3);
}

static void centroid(const int *corners, int n, double c[3]) {
  c[0] = c[1] = c[2] = 0;
  for (int i = 0; i < n; i++) {
    double p[3];
    corner_point(corners[i], p);
    for (int k = 0; k < 3; k++) c[k] += p[k] / n;
  }
}

static void build_cases(cube_cases *cc) {
  static const int perm[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
  memset(cc, 0, sizeof *cc);
  for (int config = 0; config < 256; config++) {
    for (int t = 0; t < 6; t++) {
      int v[4] = {0, 1 << perm[t][0], (1 << perm[t][0]) | (1 << perm[t][1]), 7};
      int ins[4], outs[4], n_in = 0, n_out = 0;
      for (int i = 0; i < 4; i++) {
        if ((config >> v[i]) & 1) ins[n_in++] = v[i];
        else outs[n_out++] = v[i];
      }
      if (n_in == 0 || n_in == 4) continue;
      double cin[3], cout[3];
      centroid(ins, n_in, cin);
      centroid(outs, n_out, cout);
      if (n_in == 1 || n_in == 3) {
        int lone = n_in == 1 ? ins[0] : outs[0];
        const int *rest = n_in == 1 ? outs : ins;
        int e[3][2] = {{lone, rest[0]}, {lone, rest[1]}, {lone, rest[2]}};
        add_triangle(cc, config, e, cin, cout);
      } else { /* a quad on edges AC, AD, BD, BC (A, B in; C, D out), cut along AC-BD */
        int a = ins[0], b = ins[1], c = outs[0], d = outs[1];
        int e1[3][2] = {{a, c}, {a, d}, {b, d}};
        int e2[3][2] = {{a, c}, {b, d}, {b, c}};
        add_triangle(cc, config, e1, cin, cout);
        add_triangle(cc, config, e2, cin, cout);
      }
    }
  }
}

/* --- the field ---------------------------------------------------------------------- */

typedef enum field_kind { FIELD_DENSITY, FIELD_NONZERO, FIELD_LABEL } field_kind;

typedef struct field {
  field_kind kind;
  const double *density;
  const uint8_t *label;
  uint8_t which;    /* FIELD_LABEL: the label */
  double threshold; /* > 0 */
  int64_t nx, ny, nz;
} field;

/* The value of voxel e (NaN as 0). */
static inline double voxel_value(const field *f, size_t e) {
  switch (f->kind) {
  case FIELD_DENSITY: {
    double v = f->density[e];
    return v == v ? v : 0.0;
  }
  case FIELD_NONZERO: return f->label[e] != 0;
  default: return f->label[e] == f->which;
  }
}

/* The value at padded point (a, b, c): 0 on the padding. */
static inline double point_value(const field *f, int64_t a, int64_t b, int64_t c) {
  if (a < 1 || b < 1 || c < 1 || a > f->nx || b > f->ny || c > f->nz) return 0.0;
  return voxel_value(f, (size_t)(((c - 1) * f->ny + (b - 1)) * f->nx + (a - 1)));
}

/* --- extraction -------------------------------------------------------------------- */

/* Pass 1 for one row: inside[a] for a in [0, px). */
static int64_t fill_inside_row(const field *f, int64_t b, int64_t c, int64_t px, uint8_t *row) {
  if (b < 1 || c < 1 || b > f->ny || c > f->nz) {
    memset(row, 0, (size_t)px);
    return 0;
  }
  size_t e0 = (size_t)(((c - 1) * f->ny + (b - 1)) * f->nx);
  const int64_t nx = f->nx;
  row[0] = 0;
  row[px - 1] = 0;
  uint8_t *r = row + 1;
  int64_t n = 0;
  switch (f->kind) {
  case FIELD_DENSITY: {
    const double *d = f->density + e0, t = f->threshold;
    for (int64_t i = 0; i < nx; i++) r[i] = d[i] >= t; /* NaN: 0 */
    break;
  }
  case FIELD_NONZERO: {
    const uint8_t *l = f->label + e0;
    for (int64_t i = 0; i < nx; i++) r[i] = l[i] != 0;
    break;
  }
  default: {
    const uint8_t *l = f->label + e0;
    const uint8_t w = f->which;
    for (int64_t i = 0; i < nx; i++) r[i] = l[i] == w;
    break;
  }
  }
  for (int64_t i = 0; i < nx; i++) n += r[i];
  return n;
}

typedef struct grid_rows {
  int64_t px, py, pz;       /* padded point counts */
  const uint8_t *inside;    /* px*py*pz + 1 (the last 0) */
  const uint8_t *mask;      /* px*py*pz */
  const uint8_t *zero;      /* px + 1 zeros, for rows past the grid */
} grid_rows;

/* The inside or mask row (b, c), or zeros past the grid. */
static inline const uint8_t *row_of(const grid_rows *g, const uint8_t *base, int64_t b,
                                    int64_t c) {
  if (b >= g->py || c >= g->pz) return g->zero;
  return base + (size_t)((c * g->py + b) * g->px);
}

/* Pass 2 for row (b, c): crossing masks, and the numbers of vertices and
 * triangles of the row. */
static void mask_row(const grid_rows *g, const cube_cases *cc, int64_t b, int64_t c,
                     uint8_t *mask, int64_t *n_vertices, int64_t *n_triangles) {
  const uint8_t *r0 = row_of(g, g->inside, b, c), *r1 = row_of(g, g->inside, b + 1, c),
                *r2 = row_of(g, g->inside, b, c + 1), *r3 = row_of(g, g->inside, b + 1, c + 1);
  const int64_t px = g->px;
  int64_t nv = 0, nt = 0;
  for (int64_t a = 0; a < px; a++) {
    unsigned p = r0[a];
    unsigned m = (p ^ r0[a + 1]) | (p ^ r1[a]) << 1 | (p ^ r1[a + 1]) << 2 | (p ^ r2[a]) << 3 |
                 (p ^ r2[a + 1]) << 4 | (p ^ r3[a]) << 5 | (p ^ r3[a + 1]) << 6;
    mask[a] = (uint8_t)m;
    /* Corner 0 of cube (a, b, c) is joined to all seven others, so the cube
     * has mixed corners exactly when m != 0. */
    if (m) {
      unsigned config = p | r0[a + 1] << 1 | r1[a] << 2 | r1[a + 1] << 3 | r2[a] << 4 |
                        r2[a + 1] << 5 | r3[a] << 6 | r3[a + 1] << 7;
      nv += __builtin_popcount(m);
      nt += cc->count[config];
    }
  }
  *n_vertices = nv;
  *n_triangles = nt;
}

typedef struct extract_job {
  const field *f;
  const grid_rows *g;
  const cube_cases *cc;
  const double *origin, *h;
  const int64_t *vertex_first, *triangle_first; /* per row */
  double *vertex;
  int64_t *triangle;
} extract_job;

/* Pass 3 for row (b, c): its vertices and its cubes' triangles. */
static void emit_row(const extract_job *j, int64_t b, int64_t c) {
  const grid_rows *g = j->g;
  const field *f = j->f;
  const int64_t px = g->px, row = c * g->py + b;
  const uint8_t *mask = g->mask + (size_t)(row * px);

  /* vertices, in order of a then direction */
  double *v = j->vertex + 3 * (size_t)j->vertex_first[row];
  const double t = f->threshold;
  for (int64_t a = 0; a < px; a++) {
    unsigned m = mask[a];
    if (!m) continue;
    double f0 = point_value(f, a, b, c);
    for (int d = 1; d < 8; d++) {
      if (!(m >> (d - 1) & 1)) continue;
      int dx = d & 1, dy = (d >> 1) & 1, dz = (d >> 2) & 1;
      double f1 = point_value(f, a + dx, b + dy, c + dz);
      double s = (t - f0) / (f1 - f0);
      if (!(s >= EDGE_EPS)) s = EDGE_EPS; /* also NaN */
      if (s > 1 - EDGE_EPS) s = 1 - EDGE_EPS;
      v[0] = j->origin[0] + ((double)a - 0.5 + s * dx) * j->h[0];
      v[1] = j->origin[1] + ((double)b - 0.5 + s * dy) * j->h[1];
      v[2] = j->origin[2] + ((double)c - 0.5 + s * dz) * j->h[2];
      v += 3;
    }
  }

  /* triangles of the cubes (a, b, c), a < px - 1 */
  if (b + 1 >= g->py || c + 1 >= g->pz) return;
  const uint8_t *in[4] = {row_of(g, g->inside, b, c), row_of(g, g->inside, b + 1, c),
                          row_of(g, g->inside, b, c + 1), row_of(g, g->inside, b + 1, c + 1)};
  const uint8_t *mk[4] = {mask, row_of(g, g->mask, b + 1, c), row_of(g, g->mask, b, c + 1),
                          row_of(g, g->mask, b + 1, c + 1)};
  /* the first vertex of point (a, row k) */
  int64_t next[4] = {j->vertex_first[row], j->vertex_first[row + 1],
                     j->vertex_first[row + g->py], j->vertex_first[row + g->py + 1]};
  int64_t *tri = j->triangle + 3 * (size_t)j->triangle_first[row];
  for (int64_t a = 0; a + 1 < px; a++) {
    unsigned ms[4] = {mk[0][a], mk[1][a], mk[2][a], mk[3][a]};
    if (!(ms[0] | ms[1] | ms[2] | ms[3])) continue; /* no vertex at x = a in these rows */
    /* corner 0 is joined to all seven others: a cube with mixed corners has
     * a crossing edge from it */
    if (ms[0]) {
      unsigned config = in[0][a] | in[0][a + 1] << 1 | in[1][a] << 2 | in[1][a + 1] << 3 |
                        in[2][a] << 4 | in[2][a + 1] << 5 | in[3][a] << 6 | in[3][a + 1] << 7;
      int n = j->cc->count[config];
      for (int i = 0; i < n; i++) {
        for (int k = 0; k < 3; k++) {
          unsigned code = j->cc->edge[config][i][k];
          unsigned base = code >> 3, d = code & 7, r = base >> 1;
          unsigned low = (1u << (d - 1)) - 1;
          int64_t id = next[r];
          if (base & 1) id += __builtin_popcount(ms[r]) + __builtin_popcount(mk[r][a + 1] & low);
          else id += __builtin_popcount(ms[r] & low);
          tri[k] = id;
        }
        tri += 3;
      }
    }
    for (int r = 0; r < 4; r++) next[r] += __builtin_popcount(ms[r]);
  }
}

static vox_status check_grid(vox_context *ctx, const vox_model *m, const char *what) {
  if (!m) return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "%s: no model given", what);
  const vox_grid *g = &m->grid;
  if (g->nx < 1 || g->ny < 1 || g->nz < 1)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "%s: grid size %lldx%lldx%lld is empty", what,
                     (long long)g->nx, (long long)g->ny, (long long)g->nz);
  /* padded points, and 3 doubles per vertex, must be countable */
  const int64_t limit = (int64_t)1 << 40;
  if (g->nx > limit || g->ny > limit || g->nz > limit ||
      (double)(g->nx + 2) * (double)(g->ny + 2) * (double)(g->nz + 2) > (double)limit)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "%s: grid size %lldx%lldx%lld is too large",
                     what, (long long)g->nx, (long long)g->ny, (long long)g->nz);
  for (int k = 0; k < 3; k++)
    if (!(g->voxel_size[k] > 0) || !isfinite(g->voxel_size[k]) || !isfinite(g->origin[k]))
      return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                       "%s: voxel size and origin must be finite, the size positive", what);
  return VOX_OK;
}

static vox_status extract(vox_context *ctx, const vox_model *m, const field *f, const char *what,
                          vox_surface *out) {
  const vox_grid *gr = &m->grid;
  const int threads = thread_count(ctx);
  grid_rows g = {.px = gr->nx + 2, .py = gr->ny + 2, .pz = gr->nz + 2};
  const size_t n_points = (size_t)(g.px * g.py * g.pz);
  const int64_t n_rows = g.py * g.pz;
  uint8_t *inside = malloc(n_points + 1), *mask = malloc(n_points), *zero = calloc(1, (size_t)g.px + 1);
  int64_t *vertex_first = malloc(((size_t)n_rows + 1) * sizeof *vertex_first);
  int64_t *triangle_first = malloc(((size_t)n_rows + 1) * sizeof *triangle_first);
  cube_cases *cc = malloc(sizeof *cc);
  vox_status status = VOX_OK;
  if (!inside || !mask || !zero || !vertex_first || !triangle_first || !cc) {
    status = vox_error(ctx, VOX_ERR_NO_MEMORY, "%s: out of memory", what);
    goto done;
  }
  build_cases(cc);
  inside[n_points] = 0;
  g.inside = inside, g.mask = mask, g.zero = zero;

  /* 1. inside */
  int64_t n_inside = 0;
#pragma omp parallel for num_threads(threads) schedule(static) reduction(+ : n_inside)
  for (int64_t row = 0; row < n_rows; row++)
    n_inside += fill_inside_row(f, row % g.py, row / g.py, g.px, inside + (size_t)(row * g.px));
  if (n_inside == 0) {
    if (f->kind == FIELD_LABEL)
      status = vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "%s: no voxel has label %d", what,
                         f->which);
    else if (f->kind == FIELD_NONZERO)
      status = vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                         "%s: every voxel is empty (label 0), there is no surface", what);
    else
      status = vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                         "%s: no voxel has density >= %g, there is no surface", what,
                         f->threshold);
    goto done;
  }

  /* 2. masks and counts (row counts first, then prefix sums in place) */
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t row = 0; row < n_rows; row++)
    mask_row(&g, cc, row % g.py, row / g.py, mask + (size_t)(row * g.px), &vertex_first[row + 1],
             &triangle_first[row + 1]);
  vertex_first[0] = triangle_first[0] = 0;
  for (int64_t row = 0; row < n_rows; row++) {
    vertex_first[row + 1] += vertex_first[row];
    triangle_first[row + 1] += triangle_first[row];
  }
  const int64_t n_vertices = vertex_first[n_rows], n_triangles = triangle_first[n_rows];
  if ((uint64_t)n_vertices > SIZE_MAX / (3 * sizeof(double)) ||
      (uint64_t)n_triangles > SIZE_MAX / (3 * sizeof(int64_t))) {
    status = vox_error(ctx, VOX_ERR_NO_MEMORY, "%s: out of memory", what);
    goto done;
  }
  out->vertex = malloc((size_t)n_vertices * 3 * sizeof *out->vertex);
  out->triangle = malloc((size_t)n_triangles * 3 * sizeof *out->triangle);
  if (!out->vertex || !out->triangle) {
    vox_surface_free(out);
    status = vox_error(ctx, VOX_ERR_NO_MEMORY,
                       "%s: out of memory for %lld vertices and %lld triangles", what,
                       (long long)n_vertices, (long long)n_triangles);
    goto done;
  }
  out->n_vertices = (size_t)n_vertices;
  out->n_triangles = (size_t)n_triangles;

  /* 3. vertices and triangles */
  extract_job job = {.f = f, .g = &g, .cc = cc, .origin = gr->origin, .h = gr->voxel_size,
                     .vertex_first = vertex_first, .triangle_first = triangle_first,
                     .vertex = out->vertex, .triangle = out->triangle};
#pragma omp parallel for num_threads(threads) schedule(dynamic, 16)
  for (int64_t row = 0; row < n_rows; row++) {
    if (vertex_first[row + 1] == vertex_first[row] &&
        triangle_first[row + 1] == triangle_first[row])
      continue;
    emit_row(&job, row % g.py, row / g.py);
  }

done:
  free(inside);
  free(mask);
  free(zero);
  free(vertex_first);
  free(triangle_first);
  free(cc);
  return status;
}

vox_status vox_isosurface_density(vox_context *ctx, const vox_model *model, double threshold,
                                  vox_surface *out) {
  const char *what = "isosurface";
  if (!out) return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "%s: no output surface given", what);
  memset(out, 0, sizeof *out);
  vox_status s = check_grid(ctx, model, what);
  if (s != VOX_OK) return s;
  const vox_grid *g = &model->grid;
  field f = {.nx = g->nx, .ny = g->ny, .nz = g->nz};
  if (model->density) {
    if (!(threshold > 0) || !isfinite(threshold))
      return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                       "%s: the density threshold must be a number > 0, not %g", what, threshold);
    f.kind = FIELD_DENSITY, f.density = model->density, f.threshold = threshold;
  } else {
    if (!model->label)
      return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "%s: the model has no labels", what);
    f.kind = FIELD_NONZERO, f.label = model->label, f.threshold = 0.5;
  }
  return extract(ctx, model, &f, what, out);
}

vox_status vox_isosurface_label(vox_context *ctx, const vox_model *model, int label,
                                vox_surface *out) {
  const char *what = "label surface";
  if (!out) return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "%s: no output surface given", what);
  memset(out, 0, sizeof *out);
  vox_status s = check_grid(ctx, model, what);
  if (s != VOX_OK) return s;
  if (label < 0 || label > 255)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "%s: label %d is not in 0..255", what, label);
  if (!model->label)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "%s: the model has no labels", what);
  const vox_grid *g = &model->grid;
  field f = {.kind = FIELD_LABEL, .label = model->label, .which = (uint8_t)label,
             .threshold = 0.5, .nx = g->nx, .ny = g->ny, .nz = g->nz};
  return extract(ctx, model, &f, what, out);
}

/* --- smoothing ------------------------------------------------------------------- */

/* Every triangle's indices in range; `what` names the caller. */
static vox_status check_surface(vox_context *ctx, const vox_surface *s, const char *what) {
  if (!s) return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "%s: no surface given", what);
  if ((s->n_vertices && !s->vertex) || (s->n_triangles && !s->triangle))
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "%s: the surface has no arrays", what);
  const int64_t nv = (int64_t)s->n_vertices;
  const size_t n = 3 * s->n_triangles;
  const int64_t *t = s->triangle;
  int bad = 0;
#pragma omp parallel for num_threads(thread_count(ctx)) schedule(static) reduction(| : bad)
  for (size_t i = 0; i < n; i++) bad |= t[i] < 0 || t[i] >= nv;
  if (bad)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "%s: a triangle has a vertex index outside 0..%lld", what,
                     (long long)nv - 1);
  return VOX_OK;
}

vox_status vox_surface_smooth(vox_context *ctx, vox_surface *s, int iterations) {
  const char *what = "smoothing";
  vox_status status = check_surface(ctx, s, what);
  if (status != VOX_OK) return status;
  if (iterations < 0)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "%s: %d iterations (must be >= 0)", what,
                     iterations);
  if (iterations == 0 || s->n_vertices == 0 || s->n_triangles == 0) return VOX_OK;
  const size_t nv = s->n_vertices, nh = 3 * s->n_triangles;
  const int threads = thread_count(ctx);
  /* neighbours: the ends of the half-edges from each vertex; in a closed
   * 2-manifold each edge has one half-edge each way, so every neighbour is
   * listed once */
  size_t *first = calloc(nv + 1, sizeof *first);
  int64_t *next = malloc(nh * sizeof *next);
  double *other = malloc(3 * nv * sizeof *other);
  size_t *cursor = malloc(nv * sizeof *cursor);
  if (!first || !next || !other || !cursor) {
    free(cursor);
    free(first);
    free(next);
    free(other);
    return vox_error(ctx, VOX_ERR_NO_MEMORY, "%s: out of memory", what);
  }
  const int64_t *t = s->triangle;
  for (size_t i = 0; i < nh; i++) first[t[i] + 1]++;
  for (size_t v = 0; v < nv; v++) first[v + 1] += first[v];
  /* fill in triangle order, so the result does not depend on threads */
  for (size_t v = 0; v < nv; v++) cursor[v] = first[v];
  for (size_t i = 0; i < nh; i++) {
    size_t from = i, to = i % 3 == 2 ? i - 2 : i + 1;
    next[cursor[t[from]]++] = t[to];
  }
  free(cursor);

  double *x = s->vertex, *y = other;
  static const double factor[2] = {0.5, -0.53};
  for (int it = 0; it < 2 * iterations; it++) {
    const double lambda = factor[it & 1];
#pragma omp parallel for num_threads(threads) schedule(static)
    for (size_t v = 0; v < nv; v++) {
      double sum[3] = {0, 0, 0};
      size_t n = first[v + 1] - first[v];
      for (size_t k = first[v]; k < first[v + 1]; k++)
        for (int c = 0; c < 3; c++) sum[c] += x[3 * next[k] + c];
      for (int c = 0; c < 3; c++)
        y[3 * v + c] = n ? x[3 * v + c] + lambda * (sum[c] / (double)n - x[3 * v + c])
                         : x[3 * v + c];
    }
    double *swap = x;
    x = y;
    y = swap;
  }
  /* an even number of steps: the result is back in s->vertex */
  free(first);
  free(next);
  free(other);
  return VOX_OK;
}

/* --- STL ----------------------------------------------------------------------------- */

/* 0 or the errno of the failure. */
static int write_all(int fd, const void *data, size_t size) {
  const char *p = data;
  while (size) {
    ssize_t n = write(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n < 0 ? errno : EIO;
    p += n;
    size -= (size_t)n;
  }
  return 0;
}

static void put_u32(unsigned char *p, uint32_t u) {
  p[0] = (unsigned char)u, p[1] = (unsigned char)(u >> 8), p[2] = (unsigned char)(u >> 16),
  p[3] = (unsigned char)(u >> 24);
}

static float to_float(double v) {
  if (v > (double)FLT_MAX) return INFINITY; /* a plain cast would be undefined */
  if (v < -(double)FLT_MAX) return -INFINITY;
  return (float)v;
}

/* The triangle's corners as floats and its unit right-hand normal, computed
 * from those floats (their differences are exact in double), so that readers
 * that check the normals against the corners (admesh) find them right even
 * for small triangles. */
static void facet(const vox_surface *s, size_t i, float n[3], float p[3][3]) {
  const int64_t *t = s->triangle + 3 * i;
  for (int k = 0; k < 3; k++)
    for (int c = 0; c < 3; c++) p[k][c] = to_float(s->vertex[3 * t[k] + c]);
  double u[3], v[3];
  for (int c = 0; c < 3; c++)
    u[c] = (double)p[1][c] - (double)p[0][c], v[c] = (double)p[2][c] - (double)p[0][c];
  double m[3] = {u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0]};
  double len = sqrt(m[0] * m[0] + m[1] * m[1] + m[2] * m[2]);
  for (int c = 0; c < 3; c++) n[c] = len > 0 ? (float)(m[c] / len) : 0.0f;
}

#define STL_BLOCK 16384                 /* triangles formatted by one task */
#define STL_ASCII_MAX 480               /* bytes of one ASCII facet, at most */

/* Formats triangles [first, first + count) into dst; returns the bytes. */
static size_t format_block(const vox_surface *s, size_t first, size_t count, int binary,
                           char *dst) {
  char *p = dst;
  for (size_t i = first; i < first + count; i++) {
    float n[3], v[3][3];
    facet(s, i, n, v);
    if (binary) {
      unsigned char *b = (unsigned char *)p;
      const float *all[4] = {n, v[0], v[1], v[2]};
      for (int k = 0; k < 4; k++)
        for (int c = 0; c < 3; c++) {
          uint32_t u;
          memcpy(&u, &all[k][c], 4);
          put_u32(b + 12 * k + 4 * c, u);
        }
      b[48] = b[49] = 0;
      p += 50;
    } else {
      p += snprintf(p, STL_ASCII_MAX,
                    "  facet normal %.8e %.8e %.8e\n    outer loop\n"
                    "      vertex %.8e %.8e %.8e\n      vertex %.8e %.8e %.8e\n"
                    "      vertex %.8e %.8e %.8e\n    endloop\n  endfacet\n",
                    n[0], n[1], n[2], v[0][0], v[0][1], v[0][2], v[1][0], v[1][1], v[1][2],
                    v[2][0], v[2][1], v[2][2]);
    }
  }
  return (size_t)(p - dst);
}

vox_status vox_write_stl(vox_context *ctx, const char *path, const vox_surface *s, int binary) {
  if (!path || !*path) return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "no output path given");
  vox_status status = check_surface(ctx, s, path);
  if (status != VOX_OK) return status;
  if (s->n_triangles == 0)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "%s: the surface has no triangles", path);
  if (binary && s->n_triangles > UINT32_MAX)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "%s: %zu triangles are more than binary STL can count", path,
                     s->n_triangles);

  const int threads = thread_count(ctx);
  const size_t per_round = 2 * (size_t)threads;
  const size_t block_bytes = STL_BLOCK * (size_t)(binary ? 50 : STL_ASCII_MAX);
  char *buffer = malloc(per_round * block_bytes);
  size_t *used = malloc(per_round * sizeof *used);
  if (!buffer || !used) {
    free(buffer);
    free(used);
    return vox_error(ctx, VOX_ERR_NO_MEMORY, "%s: out of memory", path);
  }
  char *tmp = NULL;
  int fd = vox_open_temp(path, &tmp);
  int err = fd < 0 ? errno : 0;

  if (!err) {
    char head[128];
    size_t head_size;
    if (binary) {
      unsigned char bin[84] = {0};
      snprintf((char *)bin, 80, "voxfe %s binary STL, units mm", vox_version());
      put_u32(bin + 80, (uint32_t)s->n_triangles);
      memcpy(head, bin, 84);
      head_size = 84;
    } else {
      head_size = (size_t)snprintf(head, sizeof head, "solid voxfe\n");
    }
    err = write_all(fd, head, head_size);
  }
  const size_t n_blocks = (s->n_triangles + STL_BLOCK - 1) / STL_BLOCK;
  for (size_t round = 0; !err && round < n_blocks; round += per_round) {
    size_t count = n_blocks - round < per_round ? n_blocks - round : per_round;
#pragma omp parallel for num_threads(threads) schedule(dynamic) if (count > 1)
    for (size_t k = 0; k < count; k++) {
      size_t first = (round + k) * STL_BLOCK;
      size_t n = s->n_triangles - first < STL_BLOCK ? s->n_triangles - first : STL_BLOCK;
      used[k] = format_block(s, first, n, binary, buffer + k * block_bytes);
    }
    for (size_t k = 0; !err && k < count; k++) err = write_all(fd, buffer + k * block_bytes, used[k]);
  }
  if (!err && !binary) err = write_all(fd, "endsolid voxfe\n", strlen("endsolid voxfe\n"));
  free(buffer);
  free(used);

  if (fd >= 0) {
    /* fsync so that a crash after the rename cannot leave an empty file in
     * place of the old one, and so that late write errors show */
    if (!err && fsync(fd) != 0) err = errno;
    if (close(fd) != 0 && !err) err = errno;
    if (!err && rename(tmp, path) != 0) err = errno;
    if (err) unlink(tmp);
  }
  free(tmp);
  if (err) return vox_error(ctx, VOX_ERR_IO, "%s: cannot write: %s", path, strerror(err));
  return VOX_OK;
}
