/* Decimation of a closed surface to a triangle budget: quadric error edge
 * collapses (Garland and Heckbert, 1997) that keep the mesh a closed,
 * oriented 2-manifold of the same topology.
 *
 * Why written here and not taken from meshoptimizer (the Debian library
 * the issue suggested): meshopt_simplify 0.18 on our isosurfaces (a gyroid,
 * 100k triangles reduced to 1% and below) left edges with four triangles and
 * pinched vertices, and a zero-area triangle at 1%; it does not check the
 * link condition, and repairing its output afterwards would mean changing
 * its topology again. Here every collapse is checked before it is made:
 *   - the link condition (the vertices next to both ends of the edge are
 *     exactly the two across it), which keeps the mesh a 2-manifold of the
 *     same topology (Dey et al., 1999), and degree > 3 for those two, so
 *     that no component shrinks below a tetrahedron;
 *   - no triangle around the edge flips (its normal turns by more than 90
 *     degrees) or becomes a sliver (shape quality below a floor, unless it
 *     was worse before), so the surface stays outward and free of
 *     degenerate triangles.
 *
 * The mesh is held as half-edges: half-edge h of triangle h / 3 runs from
 * corner tri[h] to corner tri[next(h)], opp[h] is its twin. Edges wait in a
 * binary heap by cost; an entry is stale once one of its vertices changed
 * (a stamp per vertex), and is skipped when it comes up. Single-threaded
 * and deterministic. */
#include "voxfe/surface.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* New triangles whose shape quality (4 sqrt 3 area / sum of squared sides:
 * 1 equilateral, 0 degenerate) falls below this are refused, unless the
 * triangle was already worse. */
#define MIN_QUALITY 0.02

static inline int64_t next_he(int64_t h) { return h % 3 == 2 ? h - 2 : h + 1; }
static inline int64_t prev_he(int64_t h) { return h % 3 == 0 ? h + 2 : h - 1; }

typedef struct heap_entry {
  double cost;
  int64_t u, v;
  uint32_t stamp_u, stamp_v;
} heap_entry;

typedef struct mesh {
  int64_t nv, nt;
  double *x;       /* 3 per vertex */
  int64_t *tri;    /* corner h: the start of half-edge h */
  int64_t *opp;    /* twin of each half-edge */
  int64_t *out;    /* an outgoing half-edge of each vertex; -1 once removed */
  double *q;       /* the quadric of each vertex: a11 a12 a13 a22 a23 a33 b1 b2 b3 c */
  uint32_t *stamp; /* changes whenever the vertex does */
  uint8_t *dead;   /* per triangle */
  int64_t *mark;   /* scratch for the link condition: the last edge that marked a vertex */
  heap_entry *heap;
  size_t heap_n, heap_cap;
} mesh;

/* --- quadrics -------------------------------------------------------------------------------- */

static void add_plane(double *q, const double n[3], double d, double w) {
  q[0] += w * n[0] * n[0], q[1] += w * n[0] * n[1], q[2] += w * n[0] * n[2];
  q[3] += w * n[1] * n[1], q[4] += w * n[1] * n[2], q[5] += w * n[2] * n[2];
  q[6] += w * n[0] * d, q[7] += w * n[1] * d, q[8] += w * n[2] * d, q[9] += w * d * d;
}

static double quadric_error(const double *q, const double p[3]) {
  double x = p[0], y = p[1], z = p[2];
  double e = q[0] * x * x + 2 * q[1] * x * y + 2 * q[2] * x * z + q[3] * y * y +
             2 * q[4] * y * z + q[5] * z * z + 2 * (q[6] * x + q[7] * y + q[8] * z) + q[9];
  return e > 0 ? e : 0;
}

/* The point of least error of q (Cramer's rule), if the system is well
 * conditioned relative to its scale; 0 otherwise. */
static int quadric_minimum(const double *q, double p[3]) {
  double a = q[0], b = q[1], c = q[2], d = q[3], e = q[4], f = q[5];
  double det = a * (d * f - e * e) - b * (b * f - c * e) + c * (b * e - c * d);
  double scale = a + d + f;
  if (!(fabs(det) > 1e-6 * scale * scale * scale)) return 0;
  double r0 = -q[6], r1 = -q[7], r2 = -q[8];
  p[0] = (r0 * (d * f - e * e) - b * (r1 * f - e * r2) + c * (r1 * e - d * r2)) / det;
  p[1] = (a * (r1 * f - e * r2) - r0 * (b * f - c * e) + c * (b * r2 - r1 * c)) / det;
  p[2] = (a * (d * r2 - r1 * e) - b * (b * r2 - r1 * c) + r0 * (b * e - c * d)) / det;
  return isfinite(p[0]) && isfinite(p[1]) && isfinite(p[2]);
}

/* Where the edge (u, v) collapses to, and its cost: the quadric's minimum
 * when it lies near the edge, else the best of the ends and the middle. */
static double collapse_point(const mesh *m, int64_t u, int64_t v, double p[3]) {
  double q[10];
  for (int k = 0; k < 10; k++) q[k] = m->q[10 * u + k] + m->q[10 * v + k];
  const double *a = m->x + 3 * u, *b = m->x + 3 * v;
  double len2 = 0;
  for (int c = 0; c < 3; c++) len2 += (b[c] - a[c]) * (b[c] - a[c]);
  double best = INFINITY, cand[3];
  if (quadric_minimum(q, cand)) {
    /* far from the edge only where the quadric is nearly flat: not trusted */
    double dist2 = 0;
    for (int c = 0; c < 3; c++) {
      double mid = 0.5 * (a[c] + b[c]);
      dist2 += (cand[c] - mid) * (cand[c] - mid);
    }
    if (dist2 <= len2) best = quadric_error(q, cand), memcpy(p, cand, sizeof cand);
  }
  for (int k = 0; k < 3; k++) {
    double t = 0.5 * k;
    for (int c = 0; c < 3; c++) cand[c] = a[c] + t * (b[c] - a[c]);
    double e = quadric_error(q, cand);
    /* a small preference for the middle keeps flat regions even */
    if (k != 1) e *= 1 + 1e-9;
    if (e < best) best = e, memcpy(p, cand, sizeof cand);
  }
  return best;
}

/* --- the heap -------------------------------------------------------------------------------- */

static int heap_less(const heap_entry *a, const heap_entry *b) {
  if (a->cost != b->cost) return a->cost < b->cost;
  if (a->u != b->u) return a->u < b->u;
  return a->v < b->v;
}

/* A 4-ary heap: half the levels of a binary one, and the four children of
 * a node share cache lines; the heap's cache misses were most of the time. */
static void sift_down(heap_entry *heap, size_t n, size_t i, heap_entry e) {
  for (;;) {
    size_t c = 4 * i + 1, best = c;
    if (c >= n) break;
    size_t end = c + 4 < n ? c + 4 : n;
    for (size_t k = c + 1; k < end; k++)
      if (heap_less(&heap[k], &heap[best])) best = k;
    if (!heap_less(&heap[best], &e)) break;
    heap[i] = heap[best];
    i = best;
  }
  heap[i] = e;
}

static int heap_push(mesh *m, heap_entry e) {
  if (m->heap_n == m->heap_cap) {
    size_t cap = m->heap_cap ? 2 * m->heap_cap : 1024;
    heap_entry *h = realloc(m->heap, cap * sizeof *h);
    if (!h) return -1;
    m->heap = h, m->heap_cap = cap;
  }
  size_t i = m->heap_n++;
  while (i > 0) {
    size_t parent = (i - 1) / 4;
    if (!heap_less(&e, &m->heap[parent])) break;
    m->heap[i] = m->heap[parent];
    i = parent;
  }
  m->heap[i] = e;
  return 0;
}

static heap_entry heap_pop(mesh *m) {
  heap_entry top = m->heap[0], last = m->heap[--m->heap_n];
  if (m->heap_n) sift_down(m->heap, m->heap_n, 0, last);
  return top;
}

/* Orders the entries appended so far into a heap (Floyd), in linear time. */
static void heapify(mesh *m) {
  for (size_t i = m->heap_n / 4 + 1; i-- > 0;)
    if (i < m->heap_n) sift_down(m->heap, m->heap_n, i, m->heap[i]);
}

static heap_entry edge_entry(const mesh *m, int64_t u, int64_t v) {
  if (u > v) {
    int64_t t = u;
    u = v, v = t;
  }
  double p[3];
  return (heap_entry){collapse_point(m, u, v, p), u, v, m->stamp[u], m->stamp[v]};
}

static int push_edge(mesh *m, int64_t u, int64_t v) { return heap_push(m, edge_entry(m, u, v)); }

/* --- checks ---------------------------------------------------------------------------------- */

static void triangle_normal(const double *a, const double *b, const double *c, double n[3]) {
  double u[3], v[3];
  for (int k = 0; k < 3; k++) u[k] = b[k] - a[k], v[k] = c[k] - a[k];
  n[0] = u[1] * v[2] - u[2] * v[1];
  n[1] = u[2] * v[0] - u[0] * v[2];
  n[2] = u[0] * v[1] - u[1] * v[0];
}

static double shape_quality(const double *a, const double *b, const double *c) {
  double n[3], s = 0;
  triangle_normal(a, b, c, n);
  for (int k = 0; k < 3; k++)
    s += (b[k] - a[k]) * (b[k] - a[k]) + (c[k] - a[k]) * (c[k] - a[k]) +
         (c[k] - b[k]) * (c[k] - b[k]);
  return s > 0 ? 2 * sqrt(3.0) * sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]) / s : 0;
}

static int degree(const mesh *m, int64_t v) {
  int n = 0;
  int64_t h = m->out[v];
  do {
    n++;
    h = m->opp[prev_he(h)];
  } while (h != m->out[v]);
  return n;
}

/* Whether moving vertex w (one end of the collapsing edge) to p keeps each
 * of its triangles, other than the two on the edge, unflipped and not a
 * sliver. */
static int fan_stays_valid(const mesh *m, int64_t w, int64_t skip1, int64_t skip2,
                           const double p[3]) {
  int64_t h = m->out[w];
  do {
    int64_t t = h / 3;
    if (t != skip1 && t != skip2) {
      const double *b = m->x + 3 * m->tri[next_he(h)], *c = m->x + 3 * m->tri[prev_he(h)];
      const double *a = m->x + 3 * w;
      double n0[3], n1[3];
      triangle_normal(a, b, c, n0);
      triangle_normal(p, b, c, n1);
      double dot = n0[0] * n1[0] + n0[1] * n1[1] + n0[2] * n1[2];
      if (!(dot > 0)) return 0;
      double q1 = shape_quality(p, b, c);
      if (q1 < MIN_QUALITY && q1 < shape_quality(a, b, c)) return 0;
    }
    h = m->opp[prev_he(h)];
  } while (h != m->out[w]);
  return 1;
}

/* The half-edge from u to v, or -1. */
static int64_t find_half_edge(const mesh *m, int64_t u, int64_t v) {
  int64_t h = m->out[u];
  do {
    if (m->tri[next_he(h)] == v) return h;
    h = m->opp[prev_he(h)];
  } while (h != m->out[u]);
  return -1;
}

/* --- the collapse ---------------------------------------------------------------------------- */

/* Tries to collapse half-edge h (u -> v) into u at p; returns 1 if done. */
static int try_collapse(mesh *m, int64_t h, const double p[3], int64_t serial) {
  const int64_t ho = m->opp[h];
  const int64_t u = m->tri[h], v = m->tri[next_he(h)];
  const int64_t a = m->tri[prev_he(h)], b = m->tri[prev_he(ho)];
  const int64_t t1 = h / 3, t2 = ho / 3;
  /* link condition: mark u's neighbours, count the marked among v's */
  int64_t g = m->out[u];
  do {
    m->mark[m->tri[next_he(g)]] = serial;
    g = m->opp[prev_he(g)];
  } while (g != m->out[u]);
  int common = 0;
  g = m->out[v];
  do {
    common += m->mark[m->tri[next_he(g)]] == serial;
    g = m->opp[prev_he(g)];
  } while (g != m->out[v]);
  if (common != 2 || a == b) return 0;
  if (degree(m, a) <= 3 || degree(m, b) <= 3) return 0;
  if (!fan_stays_valid(m, u, t1, t2, p) || !fan_stays_valid(m, v, t1, t2, p)) return 0;

  /* v's corners become u's (walk v's fan before the twins change) */
  g = m->out[v];
  do {
    m->tri[g] = u;
    g = m->opp[prev_he(g)];
  } while (g != m->out[v]);
  /* glue the outer edges of the two removed triangles */
  const int64_t o1 = m->opp[next_he(h)], o2 = m->opp[prev_he(h)];   /* a -> v, u -> a */
  const int64_t o3 = m->opp[next_he(ho)], o4 = m->opp[prev_he(ho)]; /* b -> u, v -> b */
  m->opp[o1] = o2, m->opp[o2] = o1;
  m->opp[o3] = o4, m->opp[o4] = o3;
  m->dead[t1] = m->dead[t2] = 1;
  m->out[u] = o2, m->out[a] = o1, m->out[b] = o3, m->out[v] = -1;
  memcpy(m->x + 3 * u, p, 3 * sizeof *p);
  for (int k = 0; k < 10; k++) m->q[10 * u + k] += m->q[10 * v + k];
  m->stamp[u]++, m->stamp[v]++;
  return 1;
}

/* --- building and the result ----------------------------------------------------------------- */

static void mesh_free(mesh *m) {
  free(m->x), free(m->tri), free(m->opp), free(m->out), free(m->q), free(m->stamp);
  free(m->dead), free(m->mark), free(m->heap);
}

/* Twins from the outgoing half-edges of each vertex; 0, or -1 if the
 * surface is not a closed 2-manifold (an edge without a twin or with more
 * than one, or a vertex whose triangles are not one fan). */
static int build_twins(mesh *m) {
  const int64_t nv = m->nv, nh = 3 * m->nt;
  int64_t *first = calloc((size_t)nv + 1, sizeof *first), *list = malloc((size_t)nh * sizeof *list);
  int status = first && list ? 0 : -2;
  if (!status) {
    for (int64_t h = 0; h < nh; h++) first[m->tri[h] + 1]++;
    for (int64_t v = 0; v < nv; v++) first[v + 1] += first[v];
    int64_t *fill = m->out; /* as a cursor for now */
    for (int64_t v = 0; v < nv; v++) fill[v] = first[v];
    for (int64_t h = 0; h < nh; h++) list[fill[m->tri[h]]++] = h;
    for (int64_t h = 0; h < nh && !status; h++) {
      int64_t from = m->tri[h], to = m->tri[next_he(h)], found = -1, same = 0;
      for (int64_t k = first[to]; k < first[to + 1]; k++)
        if (m->tri[next_he(list[k])] == from) found = found < 0 ? list[k] : -2;
      for (int64_t k = first[from]; k < first[from + 1]; k++)
        same += m->tri[next_he(list[k])] == to;
      if (found < 0 || same != 1 || from == to) status = -1;
      m->opp[h] = found;
    }
    for (int64_t v = 0; v < nv; v++) m->out[v] = first[v] < first[v + 1] ? list[first[v]] : -1;
    /* one fan around each vertex */
    for (int64_t v = 0; v < nv && !status; v++) {
      if (m->out[v] < 0) continue;
      int64_t n = 0, h = m->out[v];
      do {
        n++;
        h = m->opp[prev_he(h)];
      } while (h != m->out[v] && n <= first[v + 1] - first[v]);
      if (n != first[v + 1] - first[v]) status = -1;
    }
  }
  free(first);
  free(list);
  return status;
}

vox_status vox_surface_decimate(vox_context *ctx, vox_surface *s, size_t target) {
  const char *what = "decimation";
  if (!s) return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "%s: no surface given", what);
  if (target < 4)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "%s: a budget of %zu triangles is too small (a closed surface needs 4)",
                     what, target);
  if ((s->n_vertices && !s->vertex) || (s->n_triangles && !s->triangle))
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "%s: the surface has no arrays", what);
  for (size_t i = 0; i < 3 * s->n_triangles; i++)
    if (s->triangle[i] < 0 || (size_t)s->triangle[i] >= s->n_vertices)
      return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                       "%s: a triangle has a vertex index outside 0..%zu", what,
                       s->n_vertices - 1);
  if (s->n_triangles <= target) return VOX_OK;

  mesh m = {.nv = (int64_t)s->n_vertices, .nt = (int64_t)s->n_triangles};
  const size_t nv = s->n_vertices, nh = 3 * s->n_triangles;
  m.x = malloc(3 * nv * sizeof *m.x);
  m.tri = malloc(nh * sizeof *m.tri);
  m.opp = malloc(nh * sizeof *m.opp);
  m.out = malloc(nv * sizeof *m.out);
  m.q = calloc(10 * nv, sizeof *m.q);
  m.stamp = calloc(nv, sizeof *m.stamp);
  m.dead = calloc(s->n_triangles, 1);
  m.mark = malloc(nv * sizeof *m.mark);
  vox_status status = VOX_OK;
  if (!m.x || !m.tri || !m.opp || !m.out || !m.q || !m.stamp || !m.dead || !m.mark) {
    status = vox_error(ctx, VOX_ERR_NO_MEMORY, "%s: out of memory", what);
    goto done;
  }
  memcpy(m.x, s->vertex, 3 * nv * sizeof *m.x);
  memcpy(m.tri, s->triangle, nh * sizeof *m.tri);
  for (size_t v = 0; v < nv; v++) m.mark[v] = -1;
  int twins = build_twins(&m);
  if (twins == -2) {
    status = vox_error(ctx, VOX_ERR_NO_MEMORY, "%s: out of memory", what);
    goto done;
  }
  if (twins) {
    status = vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                       "%s: the surface is not a closed 2-manifold (an edge without exactly one "
                       "twin, or a vertex whose triangles are not one fan)",
                       what);
    goto done;
  }

  /* quadrics: the planes of the triangles, weighted by area */
  for (int64_t t = 0; t < m.nt; t++) {
    const int64_t *c = m.tri + 3 * t;
    double n[3];
    triangle_normal(m.x + 3 * c[0], m.x + 3 * c[1], m.x + 3 * c[2], n);
    double len = sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
    if (!(len > 0)) continue;
    for (int k = 0; k < 3; k++) n[k] /= len;
    const double *p = m.x + 3 * c[0];
    double d = -(n[0] * p[0] + n[1] * p[1] + n[2] * p[2]);
    for (int k = 0; k < 3; k++) add_plane(m.q + 10 * c[k], n, d, 0.5 * len);
  }
  /* every edge once (from its lower end), then ordered */
  m.heap_cap = nh / 2 + 1;
  m.heap = malloc(m.heap_cap * sizeof *m.heap);
  if (!m.heap) {
    status = vox_error(ctx, VOX_ERR_NO_MEMORY, "%s: out of memory", what);
    goto done;
  }
  for (size_t h = 0; h < nh; h++) {
    int64_t u = m.tri[h], v = m.tri[next_he((int64_t)h)];
    if (u < v) m.heap[m.heap_n++] = edge_entry(&m, u, v);
  }
  heapify(&m);

  int64_t alive = m.nt, serial = 0;
  while (alive > (int64_t)target && m.heap_n > 0) {
    heap_entry e = heap_pop(&m);
    if (m.out[e.u] < 0 || m.out[e.v] < 0 || e.stamp_u != m.stamp[e.u] ||
        e.stamp_v != m.stamp[e.v])
      continue;
    int64_t h = find_half_edge(&m, e.u, e.v);
    if (h < 0) continue;
    double p[3];
    collapse_point(&m, e.u, e.v, p);
    if (!try_collapse(&m, h, p, serial++)) continue;
    alive -= 2;
    /* the edges around the merged vertex have new costs */
    int64_t g = m.out[e.u];
    do {
      if (push_edge(&m, e.u, m.tri[next_he(g)]) != 0) {
        status = vox_error(ctx, VOX_ERR_NO_MEMORY, "%s: out of memory", what);
        goto done;
      }
      g = m.opp[prev_he(g)];
    } while (g != m.out[e.u]);
  }

  /* the surviving vertices and triangles, in their old order */
  int64_t *renumber = m.mark; /* no longer needed for the link condition */
  size_t kept_v = 0;
  for (size_t v = 0; v < nv; v++) renumber[v] = m.out[v] >= 0 ? (int64_t)kept_v++ : -1;
  double *vertex = malloc(3 * kept_v * sizeof *vertex);
  int64_t *triangle = malloc(3 * (size_t)alive * sizeof *triangle);
  if (!vertex || !triangle) {
    free(vertex);
    free(triangle);
    status = vox_error(ctx, VOX_ERR_NO_MEMORY, "%s: out of memory", what);
    goto done;
  }
  for (size_t v = 0; v < nv; v++)
    if (renumber[v] >= 0) memcpy(vertex + 3 * renumber[v], m.x + 3 * v, 3 * sizeof *vertex);
  size_t kept_t = 0;
  for (int64_t t = 0; t < m.nt; t++) {
    if (m.dead[t]) continue;
    for (int k = 0; k < 3; k++) triangle[3 * kept_t + k] = renumber[m.tri[3 * t + k]];
    kept_t++;
  }
  free(s->vertex);
  free(s->triangle);
  s->vertex = vertex, s->triangle = triangle;
  s->n_vertices = kept_v, s->n_triangles = kept_t;

done:
  mesh_free(&m);
  return status;
}
