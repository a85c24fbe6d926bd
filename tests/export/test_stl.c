/* SPDX-License-Identifier: BSD-3-Clause */
/* Isosurfaces, smoothing and STL files (voxfe/surface.h).
 *
 * Every surface is checked to be a closed, consistently oriented 2-manifold:
 * each directed edge once and its reverse once, each vertex's triangles one
 * fan that closes, no degenerate triangle, no two vertices at one point, the
 * Euler characteristic of its components (a sphere 2 per part, a torus 0),
 * and a positive enclosed volume (outward normals). Volumes (divergence
 * theorem) and areas are compared with the exact shapes and the voxel
 * volume. STL files are written into OUTPUT_FOLDER and read back; check_stl.sh
 * then runs admesh on them.
 *
 * usage: test_export_stl OUTPUT_FOLDER  (created if missing; files replaced) */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "export/output_dir.h"
#include "voxfe/model.h"
#include "voxfe/surface.h"

static long file_size(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

static int message_has(vox_context *ctx, const char *text) {
  const char *msg = vox_context_message(ctx);
  if (strstr(msg, text) && !strchr(msg, '\n')) return 1;
  fprintf(stderr, "message '%s' lacks '%s'\n", msg, text);
  return 0;
}

/* --- mesh checks --------------------------------------------------------------- */

typedef struct key3 {
  int64_t a, b, c;
} key3;

static int cmp_key3(const void *x, const void *y) {
  const key3 *p = x, *q = y;
  if (p->a != q->a) return p->a < q->a ? -1 : 1;
  if (p->b != q->b) return p->b < q->b ? -1 : 1;
  return 0;
}

static const key3 *find_edge(const key3 *k, size_t n, int64_t a, int64_t b) {
  key3 probe = {a, b, 0};
  return bsearch(&probe, k, n, sizeof *k, cmp_key3);
}

static const double *vertex_of(const vox_surface *s, int64_t v) { return s->vertex + 3 * v; }

static int cmp_point(const void *x, const void *y) {
  const double *p = x, *q = y;
  for (int c = 0; c < 3; c++)
    if (p[c] != q[c]) return p[c] < q[c] ? -1 : 1;
  return 0;
}

static int64_t find_root(int64_t *parent, int64_t v) {
  while (parent[v] != v) v = parent[v] = parent[parent[v]];
  return v;
}

typedef struct mesh_stats {
  int closed;       /* every checks above held */
  int64_t components, euler;
  double volume, area;
} mesh_stats;

static mesh_stats check_mesh(const char *name, const vox_surface *s) {
  mesh_stats st = {.closed = 1};
  size_t nt = s->n_triangles, nv = s->n_vertices, nh = 3 * nt;
  key3 *h = malloc(nh * sizeof *h);
  double *pts = malloc(3 * nv * sizeof *pts);
  int64_t *parent = malloc(nv * sizeof *parent);
  CHECK(h && pts && parent && nt > 0);
  if (!h || !pts || !parent || !nt) {
    free(h), free(pts), free(parent);
    st.closed = 0;
    return st;
  }
  int degenerate = 0, bad_index = 0;
  for (size_t i = 0; i < nt; i++) {
    const int64_t *t = s->triangle + 3 * i;
    for (int k = 0; k < 3; k++) {
      if (t[k] < 0 || (size_t)t[k] >= nv) bad_index++;
      h[3 * i + k] = (key3){t[k], t[(k + 1) % 3], t[(k + 2) % 3]};
    }
    if (bad_index) continue;
    const double *p = vertex_of(s, t[0]), *q = vertex_of(s, t[1]), *r = vertex_of(s, t[2]);
    double u[3], v[3];
    for (int c = 0; c < 3; c++) u[c] = q[c] - p[c], v[c] = r[c] - p[c];
    double n[3] = {u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0]};
    double len = sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
    if (!(len > 0) || t[0] == t[1] || t[1] == t[2] || t[0] == t[2]) degenerate++;
    st.area += 0.5 * len;
    st.volume += (p[0] * (q[1] * r[2] - q[2] * r[1]) + p[1] * (q[2] * r[0] - q[0] * r[2]) +
                  p[2] * (q[0] * r[1] - q[1] * r[0])) /
                 6.0;
  }
  if (bad_index || degenerate) {
    fprintf(stderr, "%s: %d bad indices, %d degenerate triangles\n", name, bad_index, degenerate);
    st.closed = 0;
  }
  if (bad_index) {
    free(h), free(pts), free(parent);
    return st;
  }
  qsort(h, nh, sizeof *h, cmp_key3);
  size_t duplicated = 0, unpaired = 0, open_fans = 0;
  for (size_t i = 0; i + 1 < nh; i++)
    if (h[i].a == h[i + 1].a && h[i].b == h[i + 1].b) duplicated++;
  for (size_t i = 0; i < nh; i++)
    if (!find_edge(h, nh, h[i].b, h[i].a)) unpaired++;
  /* the triangles around each vertex: one cycle through all of them */
  for (size_t i = 0; i < nh && !duplicated && !unpaired;) {
    size_t j = i;
    while (j < nh && h[j].a == h[i].a) j++;
    int64_t v = h[i].a, b = h[i].b;
    size_t steps = 0;
    do {
      const key3 *e = find_edge(h, nh, v, b);
      b = e ? e->c : -1;
      steps++;
    } while (b != h[i].b && b >= 0 && steps <= j - i);
    if (steps != j - i) open_fans++;
    i = j;
  }
  /* no two vertices at one point; every vertex used */
  memcpy(pts, s->vertex, 3 * nv * sizeof *pts);
  qsort(pts, nv, 3 * sizeof *pts, cmp_point);
  size_t coincident = 0;
  for (size_t i = 0; i + 1 < nv; i++)
    if (cmp_point(pts + 3 * i, pts + 3 * i + 3) == 0) coincident++;
  size_t unused = 0;
  for (size_t v = 0, i = 0; v < nv; v++) {
    while (i < nh && h[i].a < (int64_t)v) i++;
    if (i >= nh || h[i].a != (int64_t)v) unused++;
  }
  if (duplicated || unpaired || open_fans || coincident || unused) {
    fprintf(stderr,
            "%s: %zu repeated and %zu unpaired directed edges, %zu vertices not one fan, "
            "%zu coincident, %zu unused\n",
            name, duplicated, unpaired, open_fans, coincident, unused);
    st.closed = 0;
  }
  /* components and Euler characteristic V - E + F (E = half-edges / 2) */
  for (size_t v = 0; v < nv; v++) parent[v] = (int64_t)v;
  for (size_t i = 0; i < nh; i++) {
    int64_t ra = find_root(parent, h[i].a), rb = find_root(parent, h[i].b);
    if (ra != rb) parent[ra] = rb;
  }
  for (size_t v = 0; v < nv; v++) st.components += find_root(parent, (int64_t)v) == (int64_t)v;
  st.euler = (int64_t)nv - (int64_t)nh / 2 + (int64_t)nt;
  if (!(st.volume > 0)) {
    fprintf(stderr, "%s: enclosed volume %g is not positive (normals inward?)\n", name,
            st.volume);
    st.closed = 0;
  }
  free(h), free(pts), free(parent);
  return st;
}

/* --- models ---------------------------------------------------------------------- */

/* n^3 voxels of size h, origin o, with density f(x, y, z) of the voxel
 * centre relative to the grid's centre. */
typedef double (*shape_fn)(double x, double y, double z, const double *param);

static void make_model(vox_context *ctx, vox_model *m, int n, double h, const double origin[3],
                       shape_fn fn, const double *param) {
  vox_grid g = {.nx = n, .ny = n, .nz = n, .voxel_size = {h, h, h},
                .origin = {origin[0], origin[1], origin[2]}};
  CHECK_OK(ctx, vox_model_init(ctx, m, &g));
  vox_material steel = {.label = 1, .name = "steel", .youngs_modulus = 210000, .poisson_ratio = 0.3};
  CHECK_OK(ctx, vox_model_add_material(ctx, m, &steel));
  m->density = malloc((size_t)(n * n * n) * sizeof *m->density);
  CHECK(m->density != NULL);
  double c = 0.5 * n * h;
  for (int k = 0; k < n; k++)
    for (int j = 0; j < n; j++)
      for (int i = 0; i < n; i++) {
        size_t e = ((size_t)k * n + j) * n + i;
        double d = fn((i + 0.5) * h - c, (j + 0.5) * h - c, (k + 0.5) * h - c, param);
        m->density[e] = d;
        m->label[e] = 1;
      }
  m->stage = VOX_STAGE_DESIGN;
}

static double clamp01(double v) { return v < 0 ? 0 : v > 1 ? 1 : v; }

/* param: radius; 1 inside */
static double binary_sphere(double x, double y, double z, const double *p) {
  return sqrt(x * x + y * y + z * z) < p[0] ? 1.0 : 0.0;
}

/* param: radius, voxel size; a linear ramp of three voxels across the sphere,
 * 0.5 on it: the isosurface at 0.5 is the sphere up to the interpolation */
static double smooth_sphere(double x, double y, double z, const double *p) {
  return clamp01(0.5 + (p[0] - sqrt(x * x + y * y + z * z)) / (3 * p[1]));
}

/* param: R, r, voxel size; a torus around z, as a ramp */
static double smooth_torus(double x, double y, double z, const double *p) {
  double q = sqrt(x * x + y * y) - p[0];
  return clamp01(0.5 + (p[1] - sqrt(q * q + z * z)) / (3 * p[2]));
}

/* two binary spheres of radius p[0] at x = -+p[1] */
static double two_spheres(double x, double y, double z, const double *p) {
  return binary_sphere(x - p[1], y, z, p) + binary_sphere(x + p[1], y, z, p);
}

static double voxel_volume(const vox_model *m, double threshold) {
  const vox_grid *g = &m->grid;
  double n = 0;
  for (int64_t e = 0; e < vox_grid_elements(g); e++) n += m->density[e] >= threshold;
  return n * g->voxel_size[0] * g->voxel_size[1] * g->voxel_size[2];
}

static int same_surface(const vox_surface *a, const vox_surface *b) {
  return a->n_vertices == b->n_vertices && a->n_triangles == b->n_triangles &&
         memcmp(a->vertex, b->vertex, 3 * a->n_vertices * sizeof *a->vertex) == 0 &&
         memcmp(a->triangle, b->triangle, 3 * a->n_triangles * sizeof *a->triangle) == 0;
}

/* --- STL reading ----------------------------------------------------------------- */

static float get_f32(const unsigned char *p) {
  uint32_t u = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static unsigned char *read_bytes(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  long n = file_size(path);
  unsigned char *data = n >= 0 ? malloc((size_t)n + 1) : NULL;
  if (data && fread(data, 1, (size_t)n, f) != (size_t)n) {
    free(data);
    data = NULL;
  }
  fclose(f);
  if (data) data[n] = 0, *size = (size_t)n;
  return data;
}

/* The normal of each facet is the unit right-hand normal of its corners. */
static int normal_matches(const float n[3], const float v[3][3]) {
  double u[3], w[3];
  for (int c = 0; c < 3; c++) u[c] = (double)v[1][c] - v[0][c], w[c] = (double)v[2][c] - v[0][c];
  double m[3] = {u[1] * w[2] - u[2] * w[1], u[2] * w[0] - u[0] * w[2], u[0] * w[1] - u[1] * w[0]};
  double len = sqrt(m[0] * m[0] + m[1] * m[1] + m[2] * m[2]), dot = 0, nn = 0;
  for (int c = 0; c < 3; c++) dot += m[c] * n[c], nn += (double)n[c] * n[c];
  return len > 0 && fabs(nn - 1) < 1e-5 && dot / len > 0.999;
}

static void check_binary_stl(const char *path, const vox_surface *s) {
  size_t size = 0;
  unsigned char *d = read_bytes(path, &size);
  CHECK(d != NULL);
  if (!d) return;
  CHECK(size == 84 + 50 * s->n_triangles);
  CHECK(memcmp(d, "voxfe", 5) == 0);
  uint32_t n = (uint32_t)d[80] | (uint32_t)d[81] << 8 | (uint32_t)d[82] << 16 |
               (uint32_t)d[83] << 24;
  CHECK(n == s->n_triangles);
  size_t bad = 0, moved = 0;
  for (size_t i = 0; i < n && 84 + 50 * (i + 1) <= size; i++) {
    const unsigned char *f = d + 84 + 50 * i;
    float nrm[3], v[3][3];
    for (int c = 0; c < 3; c++) nrm[c] = get_f32(f + 4 * c);
    for (int k = 0; k < 3; k++)
      for (int c = 0; c < 3; c++) {
        v[k][c] = get_f32(f + 12 + 12 * k + 4 * c);
        double want = s->vertex[3 * s->triangle[3 * i + k] + c];
        if (fabs(v[k][c] - want) > 1e-6 * (1 + fabs(want))) moved++;
      }
    if (!normal_matches(nrm, v) || f[48] || f[49]) bad++;
  }
  CHECK(bad == 0);
  CHECK(moved == 0);
  free(d);
}

static void check_ascii_stl(const char *path, const vox_surface *s) {
  size_t size = 0;
  unsigned char *d = read_bytes(path, &size);
  CHECK(d != NULL);
  if (!d) return;
  const char *text = (const char *)d;
  CHECK(strncmp(text, "solid voxfe\n", 12) == 0);
  CHECK(size > 15 && strcmp(text + size - 15, "endsolid voxfe\n") == 0);
  size_t facets = 0, bad = 0, moved = 0;
  const char *p = text;
  while ((p = strstr(p, "facet normal "))) {
    float n[3], v[3][3];
    int got = sscanf(p,
                     "facet normal %e %e %e outer loop vertex %e %e %e vertex %e %e %e "
                     "vertex %e %e %e endloop endfacet",
                     &n[0], &n[1], &n[2], &v[0][0], &v[0][1], &v[0][2], &v[1][0], &v[1][1],
                     &v[1][2], &v[2][0], &v[2][1], &v[2][2]);
    if (got != 12 || !normal_matches(n, v)) bad++;
    else if (facets < s->n_triangles)
      for (int k = 0; k < 3; k++)
        for (int c = 0; c < 3; c++)
          if (v[k][c] != (float)s->vertex[3 * s->triangle[3 * facets + k] + c]) moved++;
    facets++;
    p += 13;
  }
  CHECK(facets == s->n_triangles);
  CHECK(bad == 0);
  CHECK(moved == 0); /* %.8e reads back as the same float */
  free(d);
}

/* --- the tests ---------------------------------------------------------------------- */

static const double origin[3] = {-10.0, 5.0, 2.5};

static void test_sphere(vox_context *ctx) {
  const int n = 40;
  const double h = 0.5, r = 15 * h;
  const double exact_v = 4.0 / 3.0 * M_PI * r * r * r, exact_a = 4 * M_PI * r * r;
  /* binary: the surface cuts the voxels' corners */
  vox_model m;
  double p[2] = {r, h};
  make_model(ctx, &m, n, h, origin, binary_sphere, p);
  vox_surface s = {0};
  CHECK_OK(ctx, vox_isosurface_density(ctx, &m, 0.5, &s));
  mesh_stats st = check_mesh("binary sphere", &s);
  double vv = voxel_volume(&m, 0.5);
  printf("binary sphere: %zu vertices, %zu triangles, volume %.2f (voxels %.2f, exact %.2f), "
         "area %.2f (exact %.2f)\n",
         s.n_vertices, s.n_triangles, st.volume, vv, exact_v, st.area, exact_a);
  CHECK(st.closed);
  CHECK(st.components == 1 && st.euler == 2);
  CHECK_CLOSE(st.volume, exact_v, 0.03);
  CHECK_CLOSE(st.volume, vv, 0.03);
  /* the cut voxel steps: more area than the sphere (about +29% here), less
   * than the voxel faces' 1.5 times */
  CHECK(st.area > exact_a && st.area < 1.35 * exact_a);

  /* the centre of the sphere is the grid's centre, in physical coordinates */
  double lo[3] = {1e30, 1e30, 1e30}, hi[3] = {-1e30, -1e30, -1e30};
  for (size_t v = 0; v < s.n_vertices; v++)
    for (int c = 0; c < 3; c++) {
      lo[c] = fmin(lo[c], s.vertex[3 * v + c]);
      hi[c] = fmax(hi[c], s.vertex[3 * v + c]);
    }
  for (int c = 0; c < 3; c++) {
    CHECK_CLOSE(0.5 * (lo[c] + hi[c]), origin[c] + 0.5 * n * h, 1e-9);
    CHECK(hi[c] - lo[c] <= 2 * r + h && hi[c] - lo[c] >= 2 * r - 2 * h);
  }

  /* the same on 1 and 2 threads */
  vox_surface s1 = {0};
  vox_context_set_threads(ctx, 1);
  CHECK_OK(ctx, vox_isosurface_density(ctx, &m, 0.5, &s1));
  vox_context_set_threads(ctx, 2);
  CHECK(same_surface(&s, &s1));
  vox_surface_free(&s1);

  /* smoothing keeps it closed and its volume within 1%, and smooths the
   * steps away: the area within a few % of the sphere's */
  CHECK_OK(ctx, vox_surface_smooth(ctx, &s, 40));
  mesh_stats sm = check_mesh("smoothed sphere", &s);
  printf("smoothed (40 iterations): volume %.2f, area %.2f\n", sm.volume, sm.area);
  CHECK(sm.closed && sm.components == 1 && sm.euler == 2);
  CHECK_CLOSE(sm.volume, st.volume, 0.01);
  CHECK_CLOSE(sm.volume, exact_v, 0.03);
  CHECK_CLOSE(sm.area, exact_a, 0.05);

  /* STL, both kinds */
  OUT_PATH(bin, "sphere.stl");
  OUT_PATH(asc, "sphere_ascii.stl");
  CHECK_OK(ctx, vox_write_stl(ctx, bin, &s, 1));
  CHECK_OK(ctx, vox_write_stl(ctx, asc, &s, 0));
  check_binary_stl(bin, &s);
  check_ascii_stl(asc, &s);
  vox_surface_free(&s);
  CHECK(s.vertex == NULL && s.n_triangles == 0);

  /* a smooth field: the sphere up to the interpolation */
  vox_model_free(&m);
  make_model(ctx, &m, n, h, origin, smooth_sphere, p);
  CHECK_OK(ctx, vox_isosurface_density(ctx, &m, 0.5, &s));
  st = check_mesh("smooth sphere", &s);
  printf("smooth sphere: %zu triangles, volume %.3f (exact %.3f), area %.3f (exact %.3f)\n",
         s.n_triangles, st.volume, exact_v, st.area, exact_a);
  CHECK(st.closed && st.components == 1 && st.euler == 2);
  CHECK_CLOSE(st.volume, exact_v, 0.01);
  CHECK_CLOSE(st.area, exact_a, 0.02);
  vox_surface_free(&s);
  vox_model_free(&m);
}

static void test_two_and_torus(vox_context *ctx) {
  const double h = 1.0;
  vox_model m;
  vox_surface s = {0};
  double p2[2] = {6, 9}; /* radius 6, centres 18 apart */
  make_model(ctx, &m, 40, h, origin, two_spheres, p2);
  CHECK_OK(ctx, vox_isosurface_density(ctx, &m, 0.5, &s));
  mesh_stats st = check_mesh("two spheres", &s);
  double vv = voxel_volume(&m, 0.5);
  printf("two spheres: %zu triangles, %lld parts, volume %.1f (voxels %.1f)\n", s.n_triangles,
         (long long)st.components, st.volume, vv);
  CHECK(st.closed && st.components == 2 && st.euler == 4);
  CHECK_CLOSE(st.volume, vv, 0.05);
  CHECK_CLOSE(st.volume, 2 * 4.0 / 3.0 * M_PI * 216, 0.05);
  OUT_PATH(two, "two_spheres.stl");
  CHECK_OK(ctx, vox_write_stl(ctx, two, &s, 1));
  vox_surface_free(&s);
  vox_model_free(&m);

  double pt[3] = {12, 4.5, h};
  make_model(ctx, &m, 40, h, origin, smooth_torus, pt);
  CHECK_OK(ctx, vox_isosurface_density(ctx, &m, 0.5, &s));
  st = check_mesh("torus", &s);
  double exact_v = 2 * M_PI * M_PI * 12 * 4.5 * 4.5, exact_a = 4 * M_PI * M_PI * 12 * 4.5;
  printf("torus: %zu triangles, euler %lld, volume %.1f (exact %.1f), area %.1f (exact %.1f)\n",
         s.n_triangles, (long long)st.euler, st.volume, exact_v, st.area, exact_a);
  CHECK(st.closed && st.components == 1 && st.euler == 0);
  CHECK_CLOSE(st.volume, exact_v, 0.02);
  CHECK_CLOSE(st.area, exact_a, 0.03);
  OUT_PATH(torus, "torus_ascii.stl");
  CHECK_OK(ctx, vox_write_stl(ctx, torus, &s, 0));
  CHECK_OK(ctx, vox_surface_smooth(ctx, &s, 5));
  mesh_stats sm = check_mesh("smoothed torus", &s);
  CHECK(sm.closed && sm.euler == 0);
  CHECK_CLOSE(sm.volume, st.volume, 0.01);
  vox_surface_free(&s);
  vox_model_free(&m);
}

/* Random densities, many exactly at the threshold: still a closed manifold,
 * with no degenerate triangle and no coincident vertices. */
static void test_noise(vox_context *ctx) {
  vox_grid g = {.nx = 23, .ny = 17, .nz = 19, .voxel_size = {0.3, 0.7, 1.1}, .origin = {1, 2, 3}};
  vox_model m;
  CHECK_OK(ctx, vox_model_init(ctx, &m, &g));
  int64_t ne = vox_grid_elements(&g);
  m.density = malloc((size_t)ne * sizeof *m.density);
  CHECK(m.density != NULL);
  uint64_t x = 12345;
  for (int64_t e = 0; e < ne; e++) {
    x = x * 6364136223846793005u + 1442695040888963407u;
    int r = (int)(x >> 59); /* 0..31 */
    m.density[e] = r < 8 ? 0.5 : (double)r / 31.0;
  }
  m.density[7] = NAN; /* counts as 0 */
  vox_surface s = {0};
  CHECK_OK(ctx, vox_isosurface_density(ctx, &m, 0.5, &s));
  mesh_stats st = check_mesh("noise", &s);
  printf("noise: %zu triangles, %lld parts, euler %lld\n", s.n_triangles,
         (long long)st.components, (long long)st.euler);
  CHECK(st.closed);
  CHECK(st.euler % 2 == 0);
  OUT_PATH(path, "noise.stl");
  CHECK_OK(ctx, vox_write_stl(ctx, path, &s, 1));
  vox_surface_free(&s);

  /* thresholds with nothing inside, or that would close nothing */
  CHECK(vox_isosurface_density(ctx, &m, 2.0, &s) == VOX_ERR_INVALID_ARGUMENT);
  CHECK(message_has(ctx, "no voxel has density >= 2"));
  CHECK(s.vertex == NULL && s.triangle == NULL && s.n_triangles == 0);
  CHECK(vox_isosurface_density(ctx, &m, 0.0, &s) == VOX_ERR_INVALID_ARGUMENT);
  CHECK(message_has(ctx, "threshold must be a number > 0"));
  CHECK(vox_isosurface_density(ctx, &m, NAN, &s) == VOX_ERR_INVALID_ARGUMENT);
  vox_model_free(&m);
}

/* Label surfaces, and a model without density (label != 0 is inside). */
static void test_labels(vox_context *ctx) {
  vox_grid g = {.nx = 12, .ny = 10, .nz = 8, .voxel_size = {1, 1, 1}, .origin = {0, 0, 0}};
  vox_model m;
  CHECK_OK(ctx, vox_model_init(ctx, &m, &g));
  vox_material a = {.label = 1, .name = "a", .youngs_modulus = 1, .poisson_ratio = 0.3};
  vox_material b = {.label = 7, .name = "b", .youngs_modulus = 1, .poisson_ratio = 0.3};
  CHECK_OK(ctx, vox_model_add_material(ctx, &m, &a));
  CHECK_OK(ctx, vox_model_add_material(ctx, &m, &b));
  /* label 1: a 6x6x4 block; label 7: a 4x4x4 block beside it touching it */
  int64_t n1 = 0, n7 = 0;
  for (int k = 0; k < 8; k++)
    for (int j = 0; j < 10; j++)
      for (int i = 0; i < 12; i++) {
        uint8_t l = 0;
        if (i >= 1 && i < 7 && j >= 2 && j < 8 && k >= 2 && k < 6) l = 1, n1++;
        else if (i >= 7 && i < 11 && j >= 3 && j < 7 && k >= 2 && k < 6) l = 7, n7++;
        m.label[((size_t)k * 10 + j) * 12 + i] = l;
      }
  vox_surface s = {0};
  CHECK_OK(ctx, vox_isosurface_label(ctx, &m, 7, &s));
  mesh_stats st = check_mesh("label 7", &s);
  printf("label 7: %zu triangles, volume %.2f (voxels %lld)\n", s.n_triangles, st.volume,
         (long long)n7);
  CHECK(st.closed && st.components == 1 && st.euler == 2);
  /* a box of voxels with its edges and corners cut: 4^3 less 12 edge prisms
   * of 4 * 1/8 and 8 corner pieces; within the discretization error */
  CHECK(st.volume < (double)n7 && st.volume > 0.8 * (double)n7);
  /* its bounding box: the voxel centres of the block +- half a voxel */
  double lo = 1e30, hi = -1e30;
  for (size_t v = 0; v < s.n_vertices; v++) {
    lo = fmin(lo, s.vertex[3 * v]);
    hi = fmax(hi, s.vertex[3 * v]);
  }
  CHECK_CLOSE(lo, 7.0, 1e-12);
  CHECK_CLOSE(hi, 11.0, 1e-12);
  vox_surface_free(&s);

  /* both labels as one (no density): one part */
  CHECK_OK(ctx, vox_isosurface_density(ctx, &m, 0.123, &s)); /* threshold ignored */
  st = check_mesh("labels != 0", &s);
  CHECK(st.closed && st.components == 1 && st.euler == 2);
  CHECK(st.volume < (double)(n1 + n7) && st.volume > 0.85 * (double)(n1 + n7));
  vox_surface_free(&s);

  /* the empty voxels' surface: closed by the padding, around the blocks too */
  CHECK_OK(ctx, vox_isosurface_label(ctx, &m, 0, &s));
  st = check_mesh("label 0", &s);
  CHECK(st.closed && st.components == 2 && st.euler == 4);
  vox_surface_free(&s);

  CHECK(vox_isosurface_label(ctx, &m, 3, &s) == VOX_ERR_INVALID_ARGUMENT);
  CHECK(message_has(ctx, "no voxel has label 3"));
  CHECK(vox_isosurface_label(ctx, &m, 256, &s) == VOX_ERR_INVALID_ARGUMENT);
  CHECK(vox_isosurface_label(ctx, &m, -1, &s) == VOX_ERR_INVALID_ARGUMENT);
  memset(m.label, 0, (size_t)vox_grid_elements(&g));
  CHECK(vox_isosurface_density(ctx, &m, 0.5, &s) == VOX_ERR_INVALID_ARGUMENT);
  CHECK(message_has(ctx, "every voxel is empty"));
  CHECK(s.triangle == NULL && s.n_vertices == 0);
  vox_model_free(&m);

  /* one voxel: an octahedron-like closed surface */
  vox_grid one = {.nx = 1, .ny = 1, .nz = 1, .voxel_size = {2, 3, 4}, .origin = {0, 0, 0}};
  CHECK_OK(ctx, vox_model_init(ctx, &m, &one));
  m.label[0] = 1;
  CHECK_OK(ctx, vox_isosurface_label(ctx, &m, 1, &s));
  st = check_mesh("one voxel", &s);
  CHECK(st.closed && st.components == 1 && st.euler == 2);
  vox_surface_free(&s);
  vox_model_free(&m);
}

/* --- topology of binary fields ------------------------------------------------- */

/* The surface parts that a binary field should have: the inside voxels are
 * joined through faces (6-connected: the table cuts inside corners apart on
 * ambiguous faces), the outside ones, with the padding, through faces or
 * edges (18-connected: across an ambiguous face, but not along a cube's
 * diagonal, whose two outside corners the table leaves in two loops when
 * the other six are inside), and every pair of an inside and an outside
 * component that touch through a face is separated by one closed surface.
 * comp[] gets the component of each padded voxel. Returns the number of
 * touching pairs. */
static int64_t expected_parts(const uint8_t *in, int nx, int ny, int nz) {
  const int px = nx + 2, py = ny + 2, pz = nz + 2;
  const size_t np = (size_t)px * py * pz;
  int64_t *comp = malloc(np * sizeof *comp), *queue = malloc(np * sizeof *queue);
  uint8_t *inside = calloc(np, 1);
  CHECK(comp && queue && inside);
  if (!comp || !queue || !inside) return -1;
  for (int k = 0; k < nz; k++)
    for (int j = 0; j < ny; j++)
      for (int i = 0; i < nx; i++)
        inside[((size_t)(k + 1) * py + j + 1) * px + i + 1] = in[((size_t)k * ny + j) * nx + i];
  for (size_t p = 0; p < np; p++) comp[p] = -1;
  int64_t n_comp = 0;
  for (size_t seed = 0; seed < np; seed++) {
    if (comp[seed] >= 0) continue;
    size_t head = 0, tail = 0;
    comp[seed] = n_comp;
    queue[tail++] = (int64_t)seed;
    while (head < tail) {
      int64_t p = queue[head++];
      int i = (int)(p % px), j = (int)(p / px % py), k = (int)(p / px / py);
      for (int dk = -1; dk <= 1; dk++)
        for (int dj = -1; dj <= 1; dj++)
          for (int di = -1; di <= 1; di++) {
            int far = abs(di) + abs(dj) + abs(dk);
            if (!far || far > (inside[p] ? 1 : 2)) continue;
            int a = i + di, b = j + dj, c = k + dk;
            if (a < 0 || b < 0 || c < 0 || a >= px || b >= py || c >= pz) continue;
            size_t q = ((size_t)c * py + b) * px + a;
            if (comp[q] >= 0 || inside[q] != inside[p]) continue;
            comp[q] = n_comp;
            queue[tail++] = (int64_t)q;
          }
    }
    n_comp++;
  }
  /* touching pairs (inside component, outside component), without repeats */
  uint8_t *pair = calloc((size_t)(n_comp * n_comp), 1);
  int64_t pairs = 0;
  for (size_t p = 0; pair && p < np; p++) {
    if (!inside[p]) continue;
    const size_t step[3] = {1, (size_t)px, (size_t)px * py};
    for (int d = 0; d < 3; d++)
      for (int sgn = -1; sgn <= 1; sgn += 2) {
        size_t q = sgn > 0 ? p + step[d] : p - step[d]; /* inside voxels are not on the padding */
        if (inside[q]) continue;
        uint8_t *seen = &pair[comp[p] * n_comp + comp[q]];
        pairs += !*seen;
        *seen = 1;
      }
  }
  free(pair), free(comp), free(queue), free(inside);
  return pairs;
}

/* Every corner configuration of a cube, in a 2x2x2 grid of voxels whose
 * centres are the cube's corners (on the padded grid, so the cubes around
 * it see other configurations too), with values far from the threshold, at
 * it and just off it on either side (vertices pushed against the corners):
 * a closed, oriented 2-manifold each time, with as many parts as the voxels
 * say and the Euler characteristic of as many spheres. */
static void test_every_case(vox_context *ctx) {
  static const double value_sets[4][2] = {/* inside, outside */
                                          {1.0, 0.0},
                                          {0.5, 0.0},
                                          {0.5, 0.4999999999},
                                          {0.5000000001, 0.25}};
  vox_grid g = {.nx = 2, .ny = 2, .nz = 2, .voxel_size = {0.5, 1.0, 2.0}, .origin = {1, 2, 3}};
  vox_model m;
  CHECK_OK(ctx, vox_model_init(ctx, &m, &g));
  m.density = malloc(8 * sizeof *m.density);
  CHECK(m.density != NULL);
  int failed = 0;
  size_t triangles = 0;
  for (int set = 0; set < 4; set++)
    for (int config = 1; config < 256; config++) {
      uint8_t in[8];
      for (int k = 0; k < 8; k++) {
        in[k] = (config >> k) & 1;
        m.density[k] = value_sets[set][!in[k]];
      }
      vox_surface s = {0};
      CHECK_OK(ctx, vox_isosurface_density(ctx, &m, 0.5, &s));
      char name[64];
      snprintf(name, sizeof name, "case %d (values %g, %g)", config, value_sets[set][0],
               value_sets[set][1]);
      mesh_stats st = check_mesh(name, &s);
      int64_t parts = expected_parts(in, 2, 2, 2);
      if (!st.closed || st.components != parts || st.euler != 2 * parts) {
        fprintf(stderr, "%s: closed %d, %lld parts (expected %lld), euler %lld\n", name,
                st.closed, (long long)st.components, (long long)parts, (long long)st.euler);
        failed++;
      }
      triangles += s.n_triangles;
      vox_surface_free(&s);
    }
  printf("every case: 4 x 255 configurations, %zu triangles, %d failed\n", triangles, failed);
  CHECK(failed == 0);
  vox_model_free(&m);
}

/* Random binary fields (every kind of neighbourhood, many ambiguous faces)
 * and random fields with ties: closed 2-manifolds with the parts that the
 * voxels' components say. */
static void test_random_fields(vox_context *ctx) {
  vox_grid g = {.nx = 7, .ny = 6, .nz = 5, .voxel_size = {1, 1, 1}, .origin = {0, 0, 0}};
  vox_model m;
  CHECK_OK(ctx, vox_model_init(ctx, &m, &g));
  const int ne = 7 * 6 * 5;
  m.density = malloc((size_t)ne * sizeof *m.density);
  uint8_t *in = malloc((size_t)ne);
  CHECK(m.density && in);
  uint64_t x = 99;
  int failed = 0, tried = 0;
  for (int round = 0; round < 200; round++) {
    int any = 0;
    for (int e = 0; e < ne; e++) {
      x = x * 6364136223846793005u + 1442695040888963407u;
      int r = (int)(x >> 58); /* 0..63 */
      /* even rounds binary, odd ones with values at the threshold */
      double v = round % 2 ? (r < 16 ? 0.5 : r / 63.0) : (r < 32 ? 1.0 : 0.0);
      m.density[e] = v;
      any |= in[e] = v >= 0.5;
    }
    if (!any) continue;
    vox_surface s = {0};
    CHECK_OK(ctx, vox_isosurface_density(ctx, &m, 0.5, &s));
    mesh_stats st = check_mesh("random field", &s);
    int64_t parts = expected_parts(in, 7, 6, 5);
    if (!st.closed || st.components != parts || st.euler % 2) {
      fprintf(stderr, "random field %d: closed %d, %lld parts (expected %lld), euler %lld\n",
              round, st.closed, (long long)st.components, (long long)parts, (long long)st.euler);
      failed++;
    }
    tried++;
    vox_surface_free(&s);
  }
  printf("random fields: %d tried, %d failed\n", tried, failed);
  CHECK(failed == 0 && tried > 150);
  free(in);
  vox_model_free(&m);
}

/* The crossed edges of the padded grid of `in`: the vertices an isosurface
 * must have (one on each edge between an inside and an outside point). */
static int64_t crossed_edges(const uint8_t *in, int nx, int ny, int nz) {
  int64_t n = 0;
  for (int c = 0; c <= nz + 1; c++)
    for (int b = 0; b <= ny + 1; b++)
      for (int a = 0; a <= nx + 1; a++) {
        int here = a >= 1 && b >= 1 && c >= 1 && a <= nx && b <= ny && c <= nz &&
                   in[((size_t)(c - 1) * ny + (b - 1)) * nx + (a - 1)];
        for (int k = 0; k < 3; k++) {
          int a1 = a + (k == 0), b1 = b + (k == 1), c1 = c + (k == 2);
          if (a1 > nx + 1 || b1 > ny + 1 || c1 > nz + 1) continue;
          int there = a1 >= 1 && b1 >= 1 && c1 >= 1 && a1 <= nx && b1 <= ny && c1 <= nz &&
                      in[((size_t)(c1 - 1) * ny + (b1 - 1)) * nx + (a1 - 1)];
          n += here != there;
        }
      }
  return n;
}

/* Rows longer than the 64 points that pass 1 compares at once (in SIMD
 * where it can), with a tail, and rows whose padded points (NX + 2) end just
 * before, at and after a 64-bit word of the extraction's bit rows (NX = 62,
 * 63, 64: the last voxel's bit carried into a word of its own; 128):
 * random densities (NaN, values at the threshold, whole empty rows) and
 * labels; the vertices must be exactly the crossed edges, the surface
 * closed with the expected parts. */
static void test_wide_rows(vox_context *ctx, const int NX) {
  enum { NY = 5, NZ = 4 };
  const int NE = NX * NY * NZ;
  vox_grid g = {.nx = NX, .ny = NY, .nz = NZ, .voxel_size = {1, 1, 1}, .origin = {0, 0, 0}};
  vox_model m;
  CHECK_OK(ctx, vox_model_init(ctx, &m, &g));
  m.density = malloc(NE * sizeof *m.density);
  uint8_t *in = malloc(NE);
  CHECK(m.density && in);
  uint64_t x = 7;
  for (int round = 0; round < 12; round++) {
    int what = round % 3; /* 0 density, 1 the label of voxel 0, 2 label non-zero (no density) */
    for (int e = 0; e < NE; e++) {
      x = x * 6364136223846793005u + 1442695040888963407u;
      int r = (int)(x >> 58), row = e / NX;
      double v = r < 8 ? 0.5 : r < 12 ? NAN : r < 40 ? 0.2 : 0.9;
      if (row % 4 == 1) v = 0.1; /* an empty row */
      if (row == 2 && e % NX > NX / 2) v = 1.0; /* a row inside at its end */
      m.density[e] = v;
      m.label[e] = (uint8_t)(v >= 0.5 ? (round % 2 ? 3 : 200) : r % 2 ? 1 : 0);
      in[e] = what == 0 ? v >= 0.5 : what == 1 ? m.label[e] == m.label[0] : m.label[e] != 0;
    }
    vox_surface s = {0};
    double *density = m.density;
    if (what == 2) m.density = NULL;
    if (what == 1) CHECK_OK(ctx, vox_isosurface_label(ctx, &m, m.label[0], &s));
    else CHECK_OK(ctx, vox_isosurface_density(ctx, &m, 0.5, &s));
    m.density = density;
    mesh_stats st = check_mesh("wide rows", &s);
    int64_t edges = crossed_edges(in, NX, NY, NZ), parts = expected_parts(in, NX, NY, NZ);
    if ((int64_t)s.n_vertices != edges || !st.closed || st.components != parts)
      fprintf(stderr, "wide rows %d (nx %d): %zu vertices (%lld crossed edges), closed %d, %lld parts "
              "(expected %lld)\n", round, NX, s.n_vertices, (long long)edges, st.closed,
              (long long)st.components, (long long)parts);
    CHECK((int64_t)s.n_vertices == edges && st.closed && st.components == parts);
    vox_surface_free(&s);
  }
  free(in);
  vox_model_free(&m);
}

/* --- decimation ------------------------------------------------------------------ */

static double max_radius_error(const vox_surface *s, const double centre[3], double r) {
  double worst = 0;
  for (size_t v = 0; v < s->n_vertices; v++) {
    double d2 = 0;
    for (int c = 0; c < 3; c++) d2 += pow(s->vertex[3 * v + c] - centre[c], 2);
    worst = fmax(worst, fabs(sqrt(d2) - r));
  }
  return worst;
}

static void copy_surface(const vox_surface *from, vox_surface *to) {
  to->n_vertices = from->n_vertices, to->n_triangles = from->n_triangles;
  to->vertex = malloc(3 * from->n_vertices * sizeof *to->vertex);
  to->triangle = malloc(3 * from->n_triangles * sizeof *to->triangle);
  CHECK(to->vertex && to->triangle);
  memcpy(to->vertex, from->vertex, 3 * from->n_vertices * sizeof *to->vertex);
  memcpy(to->triangle, from->triangle, 3 * from->n_triangles * sizeof *to->triangle);
}

static void test_decimate(vox_context *ctx) {
  /* a sphere: the budget reached, the shape kept (vertices on the sphere,
   * volume and area), still one closed outward sphere */
  const int n = 40;
  const double h = 0.5, r = 15 * h, p[2] = {r, h};
  const double exact_v = 4.0 / 3.0 * M_PI * r * r * r, exact_a = 4 * M_PI * r * r;
  vox_model m;
  make_model(ctx, &m, n, h, origin, smooth_sphere, p);
  vox_surface s = {0}, again = {0};
  CHECK_OK(ctx, vox_isosurface_density(ctx, &m, 0.5, &s));
  const double centre[3] = {origin[0] + 0.5 * n * h, origin[1] + 0.5 * n * h,
                            origin[2] + 0.5 * n * h};
  double before = max_radius_error(&s, centre, r);
  copy_surface(&s, &again);
  CHECK_OK(ctx, vox_surface_decimate(ctx, &s, 1000));
  mesh_stats st = check_mesh("decimated sphere", &s);
  double after = max_radius_error(&s, centre, r);
  printf("decimated sphere: %zu -> %zu triangles, volume %.3f (exact %.3f), area %.3f "
         "(exact %.3f), radius error %.4f mm (before %.4f)\n",
         again.n_triangles, s.n_triangles, st.volume, exact_v, st.area, exact_a, after, before);
  CHECK(st.closed && st.components == 1 && st.euler == 2);
  CHECK(s.n_triangles <= 1000 && s.n_triangles >= 998);
  CHECK_CLOSE(st.volume, exact_v, 0.02);
  CHECK_CLOSE(st.area, exact_a, 0.02);
  CHECK(after < 0.1 * h);
  OUT_PATH(path, "sphere_decimated.stl");
  CHECK_OK(ctx, vox_write_stl(ctx, path, &s, 1));
  /* the same again (deterministic), and on one thread (the costs are
   * computed in parallel); a budget above the count: untouched */
  vox_surface single = {0};
  copy_surface(&again, &single);
  CHECK_OK(ctx, vox_surface_decimate(ctx, &again, 1000));
  CHECK(same_surface(&s, &again));
  vox_context_set_threads(ctx, 1);
  CHECK_OK(ctx, vox_surface_decimate(ctx, &single, 1000));
  vox_context_set_threads(ctx, 2);
  CHECK(same_surface(&s, &single));
  vox_surface_free(&single);
  CHECK_OK(ctx, vox_surface_decimate(ctx, &again, 5000));
  CHECK(same_surface(&s, &again));
  vox_surface_free(&again);
  vox_surface_free(&s);
  vox_model_free(&m);

  /* a torus keeps its hole */
  double pt[3] = {12, 4.5, 1.0};
  make_model(ctx, &m, 40, 1.0, origin, smooth_torus, pt);
  CHECK_OK(ctx, vox_isosurface_density(ctx, &m, 0.5, &s));
  CHECK_OK(ctx, vox_surface_decimate(ctx, &s, 400));
  st = check_mesh("decimated torus", &s);
  double torus_v = 2 * M_PI * M_PI * 12 * 4.5 * 4.5;
  printf("decimated torus: %zu triangles, euler %lld, volume %.1f (exact %.1f)\n",
         s.n_triangles, (long long)st.euler, st.volume, torus_v);
  CHECK(st.closed && st.components == 1 && st.euler == 0 && s.n_triangles <= 400);
  CHECK_CLOSE(st.volume, torus_v, 0.04);
  vox_surface_free(&s);
  vox_model_free(&m);

  /* random binary fields, to a budget of 4: every part down to as few
   * triangles as the link condition allows, parts and Euler characteristic
   * (the topology) kept */
  vox_grid g = {.nx = 9, .ny = 8, .nz = 7, .voxel_size = {1, 1, 1}, .origin = {0, 0, 0}};
  CHECK_OK(ctx, vox_model_init(ctx, &m, &g));
  const int ne = 9 * 8 * 7;
  m.density = malloc((size_t)ne * sizeof *m.density);
  CHECK(m.density != NULL);
  uint64_t x = 7;
  int failed = 0;
  for (int round = 0; round < 20; round++) {
    for (int e = 0; e < ne; e++) {
      x = x * 6364136223846793005u + 1442695040888963407u;
      m.density[e] = (x >> 62) < 2 ? 1.0 : 0.0;
    }
    CHECK_OK(ctx, vox_isosurface_density(ctx, &m, 0.5, &s));
    mesh_stats a = check_mesh("random field", &s);
    CHECK_OK(ctx, vox_surface_decimate(ctx, &s, round % 2 ? 4 : s.n_triangles / 5));
    mesh_stats b = check_mesh("decimated random field", &s);
    if (!b.closed || b.components != a.components || b.euler != a.euler ||
        (int64_t)s.n_triangles < 4 * b.components)
      failed++;
    vox_surface_free(&s);
  }
  printf("decimated random fields: 20 tried, %d failed\n", failed);
  CHECK(failed == 0);
  vox_model_free(&m);

  /* refusals: too small a budget, meshes that are not closed 2-manifolds
   * (left as they were) */
  vox_grid one = {.nx = 3, .ny = 3, .nz = 3, .voxel_size = {1, 1, 1}, .origin = {0, 0, 0}};
  CHECK_OK(ctx, vox_model_init(ctx, &m, &one));
  for (int e = 0; e < 27; e++) m.label[e] = 1;
  CHECK_OK(ctx, vox_isosurface_label(ctx, &m, 1, &s));
  CHECK(vox_surface_decimate(ctx, &s, 3) == VOX_ERR_INVALID_ARGUMENT);
  CHECK(message_has(ctx, "too small"));
  size_t nt = s.n_triangles;
  s.n_triangles--; /* a hole */
  CHECK(vox_surface_decimate(ctx, &s, 10) == VOX_ERR_INVALID_ARGUMENT);
  CHECK(message_has(ctx, "not a closed 2-manifold"));
  CHECK(s.n_triangles == nt - 1);
  s.n_triangles++;
  int64_t saved = s.triangle[0];
  s.triangle[0] = s.triangle[1]; /* a degenerate triangle */
  CHECK(vox_surface_decimate(ctx, &s, 10) == VOX_ERR_INVALID_ARGUMENT);
  s.triangle[0] = (int64_t)s.n_vertices;
  CHECK(vox_surface_decimate(ctx, &s, 10) == VOX_ERR_INVALID_ARGUMENT);
  CHECK(message_has(ctx, "vertex index outside"));
  s.triangle[0] = saved;
  CHECK_OK(ctx, vox_surface_decimate(ctx, &s, 10));
  st = check_mesh("decimated cube", &s);
  CHECK(st.closed && st.euler == 2 && s.n_triangles <= 10);
  vox_surface_free(&s);
  vox_model_free(&m);
}

static void test_failures(vox_context *ctx) {
  /* a small surface to write */
  vox_grid g = {.nx = 2, .ny = 2, .nz = 2, .voxel_size = {1, 1, 1}, .origin = {0, 0, 0}};
  vox_model m;
  CHECK_OK(ctx, vox_model_init(ctx, &m, &g));
  m.label[0] = 1;
  vox_surface s = {0};
  CHECK_OK(ctx, vox_isosurface_label(ctx, &m, 1, &s));
  vox_model_free(&m);

  /* a folder that does not exist: an I/O error naming the path, no file */
  OUT_PATH(bad, "no such folder/out.stl");
  CHECK(vox_write_stl(ctx, bad, &s, 1) == VOX_ERR_IO);
  CHECK(message_has(ctx, "no such folder/out.stl: cannot write: No such file or directory"));
  CHECK(!file_exists(bad));
  CHECK(vox_write_stl(ctx, bad, &s, 0) == VOX_ERR_IO);
  CHECK(vox_write_stl(ctx, "", &s, 1) == VOX_ERR_INVALID_ARGUMENT);

  /* a write that fails halfway (file size limit): the old file stays */
  OUT_PATH(big, "too_large.stl");
  FILE *f = fopen(big, "w");
  CHECK(f && fputs("an older file\n", f) >= 0 && fclose(f) == 0);
  vox_model sphere;
  double p[1] = {12};
  make_model(ctx, &sphere, 32, 1.0, origin, binary_sphere, p);
  vox_surface large = {0};
  CHECK_OK(ctx, vox_isosurface_density(ctx, &sphere, 0.5, &large));
  vox_model_free(&sphere);
  struct rlimit saved_limit, limit;
  CHECK(getrlimit(RLIMIT_FSIZE, &saved_limit) == 0);
  void (*saved_signal)(int) = signal(SIGXFSZ, SIG_IGN);
  limit = saved_limit;
  limit.rlim_cur = 20000;
  CHECK(setrlimit(RLIMIT_FSIZE, &limit) == 0);
  vox_status s1 = vox_write_stl(ctx, big, &large, 1);
  vox_status s2 = vox_write_stl(ctx, big, &large, 0);
  CHECK(setrlimit(RLIMIT_FSIZE, &saved_limit) == 0);
  signal(SIGXFSZ, saved_signal);
  CHECK(s1 == VOX_ERR_IO && s2 == VOX_ERR_IO);
  CHECK(message_has(ctx, "too_large.stl: cannot write: "));
  CHECK(file_size(big) == (long)strlen("an older file\n"));
  CHECK(unlink(big) == 0);
  vox_surface_free(&large);

  /* surfaces that are not meshes */
  OUT_PATH(out, "bad.stl");
  vox_surface empty = {0};
  CHECK(vox_write_stl(ctx, out, &empty, 1) == VOX_ERR_INVALID_ARGUMENT);
  CHECK(message_has(ctx, "no triangles"));
  s.triangle[4] = (int64_t)s.n_vertices;
  CHECK(vox_write_stl(ctx, out, &s, 1) == VOX_ERR_INVALID_ARGUMENT);
  CHECK(message_has(ctx, "vertex index outside"));
  CHECK(vox_surface_smooth(ctx, &s, 3) == VOX_ERR_INVALID_ARGUMENT);
  s.triangle[4] = 0;
  CHECK(vox_surface_smooth(ctx, &s, -1) == VOX_ERR_INVALID_ARGUMENT);
  CHECK(!file_exists(out));
  CHECK(count_temporaries() == 0);
  vox_surface_free(&s);

  /* models that are not grids */
  vox_model none = {0};
  CHECK(vox_isosurface_density(ctx, &none, 0.5, &s) == VOX_ERR_INVALID_ARGUMENT);
  CHECK(message_has(ctx, "is empty"));
  CHECK(vox_isosurface_density(ctx, NULL, 0.5, &s) == VOX_ERR_INVALID_ARGUMENT);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s OUTPUT_FOLDER\n", argv[0]);
    return 2;
  }
  snprintf(out_dir, sizeof out_dir, "%s", argv[1]);
  if (mkdir(out_dir, 0777) != 0 && errno != EEXIST) {
    perror(out_dir);
    return 1;
  }
  vox_context *ctx;
  if (vox_context_create(&ctx) != VOX_OK) return 1;
  vox_context_set_threads(ctx, 2);
  test_sphere(ctx);
  test_two_and_torus(ctx);
  test_noise(ctx);
  test_labels(ctx);
  test_every_case(ctx);
  test_random_fields(ctx);
  const int wide[] = {150, 62, 63, 64, 128};
  for (int k = 0; k < 5; k++) test_wide_rows(ctx, wide[k]);
  test_decimate(ctx);
  test_failures(ctx);
  vox_context_destroy(ctx);
  CHECK_DONE();
}
