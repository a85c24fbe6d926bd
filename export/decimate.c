/* SPDX-License-Identifier: BSD-3-Clause */
/* Decimation of a closed surface to a triangle budget: quadric error edge
 * collapses (Garland and Heckbert, 1997) that keep the mesh a closed,
 * oriented 2-manifold of the same topology.
 *
 * Why written here and not taken from meshoptimizer (a Debian library):
 * meshopt_simplify 0.18 left edges with four triangles, pinched vertices
 * and zero-area triangles on our isosurfaces (docs/experiments.md); it does
 * not check the link condition, and repairing its output afterwards would
 * mean changing its topology again. Here every collapse is checked before it is made:
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
 * corner tri[h] to corner tri[next(h)], opp[h] is its twin; an edge is
 * represented by its half-edge from the lower vertex number to the higher.
 *
 * The collapses go in rounds rather than from one priority queue of all
 * edges: a global heap of millions of edges, with a new entry for every
 * edge around every collapse and the stale ones left in it, spent most of
 * its time in cache misses (docs/experiments.md). Each round
 *   1. computes the cost of every edge touching a vertex that changed in the
 *      round before (every edge in the first), in parallel;
 *   2. finds the cost below which lie as many edges as the round should
 *      collapse (half of the collapses still to make), from a histogram of
 *      the costs' top 16 bits as float (1% steps);
 *   3. collapses the edges up to that cost in mesh order (so that the walks
 *      around them stay in cache, where cost order jumps across the mesh),
 *      skipping every edge one of whose ends has already changed in this
 *      round (its cost is out of date), until half of the triangles still
 *      to remove are gone.
 * So every collapse made has its exact, current cost, and a round takes
 * only the cheapest edges, as the greedy order would; the edges around a
 * vertex just merged wait for the next round. A round that collapses
 * nothing below its limit is followed by one without a limit; one without a
 * limit that collapses nothing ends the decimation. The result depends only
 * on the mesh and the budget, not on the number of threads. */
#include "voxfe/surface.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* New triangles whose shape quality (4 sqrt 3 area / sum of squared sides:
 * 1 equilateral, 0 degenerate) falls below this are refused, unless the
 * triangle was already worse. */
#define MIN_QUALITY 0.02

static inline int64_t next_he(int64_t h) { return h % 3 == 2 ? h - 2 : h + 1; }
static inline int64_t prev_he(int64_t h) { return h % 3 == 0 ? h + 2 : h - 1; }

/* One edge: its cost as the bits of a float (for costs >= 0 they order as
 * the floats do) and its half-edge. */
typedef struct edge_key {
  uint32_t key;
  int64_t h;
} edge_key;

typedef struct mesh {
  int64_t nv, nt;
  double *x;       /* 3 per vertex */
  int64_t *tri;    /* corner h: the start of half-edge h */
  int64_t *opp;    /* twin of each half-edge */
  int64_t *out;    /* an outgoing half-edge of each vertex; -1 once removed */
  double *q;       /* the quadric of each vertex: a11 a12 a13 a22 a23 a33 b1 b2 b3 c */
  int64_t *changed; /* the last round in which the vertex moved or was removed; -1 never */
  float *cost;      /* per half-edge from the lower vertex to the higher: its edge's cost */
  uint8_t *dead;    /* per triangle */
  int64_t *mark;    /* scratch for the link condition: the last edge that marked a vertex */
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

/* --- the costs --------------------------------------------------------------------- */

/* The cost as sortable bits: a non-negative float's bits order as it does;
 * anything else (NaN) goes last. */
static uint32_t cost_key(double cost) {
  float f = cost < (double)FLT_MAX ? (float)cost : FLT_MAX;
  if (!(f >= 0)) return UINT32_MAX;
  uint32_t k;
  memcpy(&k, &f, sizeof k);
  return k;
}

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

/* --- the collapse ---------------------------------------------------------------------------- */

/* Tries to collapse half-edge h (u -> v) into u at p; returns 1 if done. */
static int try_collapse(mesh *m, int64_t h, const double p[3], int64_t serial, int64_t round) {
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
  m->changed[u] = m->changed[v] = round;
  return 1;
}

/* --- building and the result ----------------------------------------------------------------- */

static void mesh_free(mesh *m) {
  free(m->x), free(m->tri), free(m->opp), free(m->out), free(m->q), free(m->changed);
  free(m->cost), free(m->dead), free(m->mark);
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
  int threads = vox_context_threads(ctx);
#ifdef _OPENMP
  if (threads <= 0) threads = omp_get_max_threads();
#endif
  if (threads < 1) threads = 1;
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
  m.changed = malloc(nv * sizeof *m.changed);
  m.cost = malloc(nh * sizeof *m.cost);
  m.dead = calloc(s->n_triangles, 1);
  m.mark = malloc(nv * sizeof *m.mark);
  vox_status status = VOX_OK;
  if (!m.x || !m.tri || !m.opp || !m.out || !m.q || !m.changed || !m.cost || !m.dead || !m.mark) {
    status = vox_error(ctx, VOX_ERR_NO_MEMORY, "%s: out of memory", what);
    goto done;
  }
  memcpy(m.x, s->vertex, 3 * nv * sizeof *m.x);
  memcpy(m.tri, s->triangle, nh * sizeof *m.tri);
  for (size_t v = 0; v < nv; v++) m.mark[v] = -1, m.changed[v] = -1;
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
  /* the rounds (the comment at the top) */
  edge_key *order = malloc(nh / 2 * sizeof *order);
  size_t *hist = malloc(65536 * sizeof *hist);
  if (!order || !hist) {
    free(order);
    free(hist);
    status = vox_error(ctx, VOX_ERR_NO_MEMORY, "%s: out of memory", what);
    goto done;
  }
  int64_t alive = m.nt, serial = 0;
  int open = 0; /* 1 after a round that collapsed nothing below its cost limit: no limit */
  for (int64_t round = 0; alive > (int64_t)target; round++) {
    /* 1. costs of the edges that changed in the last round */
    const int64_t nt = m.nt;
    const mesh *mc = &m;
#pragma omp parallel for num_threads(threads) schedule(dynamic, 4096)
    for (int64_t t = 0; t < nt; t++) {
      if (mc->dead[t]) continue;
      for (int64_t h = 3 * t; h < 3 * t + 3; h++) {
        const int64_t u = mc->tri[h], v = mc->tri[next_he(h)];
        if (u < v && (round == 0 || mc->changed[u] == round - 1 || mc->changed[v] == round - 1)) {
          double p[3];
          const double c = collapse_point(mc, u, v, p);
          m.cost[h] = c < (double)FLT_MAX ? (float)c : FLT_MAX;
        }
      }
    }
    /* 2. the edges, in mesh order */
    size_t n = 0;
    for (int64_t t = 0; t < nt; t++) {
      if (m.dead[t]) continue;
      for (int64_t h = 3 * t; h < 3 * t + 3; h++)
        if (m.tri[h] < m.tri[next_he(h)]) order[n++] = (edge_key){cost_key(m.cost[h]), h};
    }
    /* 3. collapses of the edges up to the cost of the one that would end
     * the round in cost order (a histogram of the keys' top 16 bits: sign,
     * exponent and 7 bits of mantissa, 1% steps), in mesh order, which
     * keeps the walks around the edges in cache; until half of the
     * triangles still to remove are gone */
    const int64_t stop = (int64_t)target + (alive - (int64_t)target) / 2;
    const size_t want = (size_t)(alive - stop + 1) / 2;
    memset(hist, 0, 65536 * sizeof *hist);
    for (size_t i = 0; i < n; i++) hist[order[i].key >> 16]++;
    uint32_t limit = UINT32_MAX;
    size_t below = 0;
    for (uint32_t b = 0; b < 65536 && !open; b++)
      if ((below += hist[b]) >= want) {
        limit = b << 16 | 0xFFFF;
        break;
      }
    int64_t made = 0;
    for (size_t i = 0; i < n && alive > stop; i++) {
      if (order[i].key > limit) continue;
      const int64_t h = order[i].h, u = m.tri[h], v = m.tri[next_he(h)];
      /* a removed triangle, or an end changed in this round: the cost is old */
      if (m.dead[h / 3] || m.changed[u] == round || m.changed[v] == round) continue;
      double p[3];
      collapse_point(&m, u, v, p);
      if (!try_collapse(&m, h, p, serial++, round)) continue;
      alive -= 2, made++;
    }
    if (made == 0 && limit == UINT32_MAX) break; /* no edge may collapse any more */
    open = made == 0;
  }
  free(order);
  free(hist);

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
