/* SPDX-License-Identifier: BSD-3-Clause */
/* vox_render_surface_png: a shaded orthographic picture of a closed,
 * outward-oriented triangle mesh, rasterised here (no OpenGL on the machines
 * that run batch exports) and written through cairo.
 *
 * The mesh is drawn at twice the picture's size in each direction and box
 * filtered down (2x2 supersampling). Vertices are snapped to 1/256 of a
 * sample and every triangle's coverage is decided with exact integer edge
 * functions and a tie rule that gives a sample on an edge shared by two
 * front-facing triangles to exactly one of them, so a closed mesh shows no
 * cracks and no sample is drawn twice. Depth and the Gouraud intensity are
 * interpolated barycentrically; the depth test keeps the nearest sample, the
 * first triangle winning ties, so the picture does not depend on anything
 * but the mesh and the options. */
#include "voxfe/render.h"
#include "png_file.h"

#include <cairo.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { SUPERSAMPLE = 2, SUBPIXEL_BITS = 8 };
#define SUBPIXEL (1 << SUBPIXEL_BITS)

static const double default_color[3] = {0.70, 0.78, 0.90}; /* light grey-blue */
/* Lambert shading: ambient, a key light from the camera's upper left, and a
 * weak fill light from the camera so that faces turned from the key light
 * keep their shape. */
static const double ambient = 0.2, key_light = 0.6, fill_light = 0.25;
/* Margin around the fitted bounding box, as a fraction of the smaller side. */
static const double margin_fraction = VOX_RENDER_MARGIN;

static const char *const view_names[] = {"iso", "x", "y", "z", "-x", "-y", "-z"};

int vox_view_from_name(const char *name, vox_view *out) {
  if (!name) return -1;
  for (int i = 0; i < (int)(sizeof view_names / sizeof view_names[0]); i++)
    if (strcmp(name, view_names[i]) == 0) {
      if (out) *out = (vox_view)i;
      return 0;
    }
  return -1;
}

/* --- small vectors ------------------------------------------------------------ */

static void cross(const double a[3], const double b[3], double out[3]) {
  out[0] = a[1] * b[2] - a[2] * b[1];
  out[1] = a[2] * b[0] - a[0] * b[2];
  out[2] = a[0] * b[1] - a[1] * b[0];
}

static double dot(const double a[3], const double b[3]) {
  return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

static void normalize(double v[3]) {
  double n = sqrt(dot(v, v));
  if (n > 0) v[0] /= n, v[1] /= n, v[2] /= n;
}

/* The camera: `dir` from the mesh towards the camera, `right` and `up` the
 * picture's axes; (right, up, dir) is right-handed. */
typedef struct camera {
  double dir[3], right[3], up[3];
} camera;

static vox_status make_camera(vox_context *ctx, const char *path, const vox_render_options *o,
                              camera *c) {
  static const double named[7][3] = {{1, -1, 1}, {1, 0, 0},  {0, 1, 0}, {0, 0, 1},
                                     {-1, 0, 0}, {0, -1, 0}, {0, 0, -1}};
  double d[3];
  if (o->view >= VOX_VIEW_ISO && o->view < VOX_VIEW_ANGLES) {
    memcpy(d, named[o->view], sizeof d);
  } else if (o->view == VOX_VIEW_ANGLES) {
    if (!isfinite(o->azimuth) || !isfinite(o->elevation) || fabs(o->elevation) > 90)
      return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                       "%s: view azimuth %g, elevation %g: the elevation must be within "
                       "[-90, 90] degrees",
                       path, o->azimuth, o->elevation);
    double az = o->azimuth * M_PI / 180, el = o->elevation * M_PI / 180;
    d[0] = cos(el) * cos(az);
    d[1] = cos(el) * sin(az);
    d[2] = sin(el);
  } else {
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "%s: unknown view %d", path, (int)o->view);
  }
  normalize(d);
  /* z up, except when looking along z (within about 2.5 degrees): y up. */
  double world_up[3] = {0, 0, 1};
  if (fabs(d[2]) > 0.999) world_up[1] = 1, world_up[2] = 0;
  double f[3] = {-d[0], -d[1], -d[2]};
  cross(f, world_up, c->right);
  normalize(c->right);
  cross(c->right, f, c->up);
  normalize(c->up);
  memcpy(c->dir, d, sizeof d);
  return VOX_OK;
}

/* --- checks ---------------------------------------------------------------- */

static vox_status check_surface(vox_context *ctx, const char *path, const vox_surface *s,
                                double lo[3], double hi[3]) {
  if (!s || s->n_triangles == 0 || !s->triangle || !s->vertex || s->n_vertices == 0)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "%s: the surface has no triangles", path);
  if (s->n_vertices > (size_t)INT64_MAX)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "%s: the surface is too large", path);
  int64_t nv = (int64_t)s->n_vertices;
  for (size_t i = 0; i < 3 * s->n_triangles; i++)
    if (s->triangle[i] < 0 || s->triangle[i] >= nv)
      return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                       "%s: triangle %zu has a vertex index outside 0..%lld", path, i / 3,
                       (long long)(nv - 1));
  for (int a = 0; a < 3; a++) lo[a] = INFINITY, hi[a] = -INFINITY;
  for (size_t v = 0; v < s->n_vertices; v++)
    for (int a = 0; a < 3; a++) {
      double x = s->vertex[3 * v + a];
      if (!isfinite(x))
        return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "%s: vertex %zu is not finite", path, v);
      if (x < lo[a]) lo[a] = x;
      if (x > hi[a]) hi[a] = x;
    }
  return VOX_OK;
}

/* --- the rasteriser ------------------------------------------------------------ */

/* A vertex on the supersampled picture: x right and y down in 1/SUBPIXEL of
 * a sample, the depth towards the camera (larger is nearer), the intensity. */
typedef struct screen_vertex {
  int32_t x, y;
  float z, shade;
} screen_vertex;

typedef struct raster {
  int w, h;      /* samples */
  float *depth;  /* -INFINITY where nothing was drawn */
  float *shade;
} raster;

/* A sample exactly on edge a->b belongs to this triangle when the edge goes
 * down the picture, or along it to the left: the reversed edge, the
 * neighbour's, then does not. */
static int owns_ties(int64_t dx, int64_t dy) { return dy > 0 || (dy == 0 && dx < 0); }

static void draw_triangle(raster *r, const screen_vertex *a, const screen_vertex *b,
                          const screen_vertex *c) {
  /* Orientation on the y-down picture: front faces (counter-clockwise seen
   * from the camera) have a negative doubled area; those are drawn with b
   * and c swapped so that all three edge functions are positive inside. */
  int64_t area = (int64_t)(b->x - a->x) * (c->y - a->y) - (int64_t)(b->y - a->y) * (c->x - a->x);
  if (area >= 0) return; /* a back face, or edge-on */
  const screen_vertex *t = b;
  b = c;
  c = t;
  area = -area;

  int32_t xmin = a->x < b->x ? a->x : b->x, xmax = a->x > b->x ? a->x : b->x;
  int32_t ymin = a->y < b->y ? a->y : b->y, ymax = a->y > b->y ? a->y : b->y;
  if (c->x < xmin) xmin = c->x;
  if (c->x > xmax) xmax = c->x;
  if (c->y < ymin) ymin = c->y;
  if (c->y > ymax) ymax = c->y;
  /* Samples at (i + 1/2, j + 1/2) within the box. */
  int i0 = (int)((xmin - SUBPIXEL / 2 + SUBPIXEL - 1) >> SUBPIXEL_BITS);
  int i1 = (int)((xmax - SUBPIXEL / 2) >> SUBPIXEL_BITS);
  int j0 = (int)((ymin - SUBPIXEL / 2 + SUBPIXEL - 1) >> SUBPIXEL_BITS);
  int j1 = (int)((ymax - SUBPIXEL / 2) >> SUBPIXEL_BITS);
  if (i0 < 0) i0 = 0;
  if (j0 < 0) j0 = 0;
  if (i1 >= r->w) i1 = r->w - 1;
  if (j1 >= r->h) j1 = r->h - 1;
  if (i0 > i1 || j0 > j1) return;

  /* Edge functions e_k, positive inside, of the edges opposite a, b and c,
   * at the first sample (E0) and their steps per sample along x (A) and y
   * (B), in 1/SUBPIXEL units; e_k / area is vertex k's barycentric weight. */
  const screen_vertex *v[3] = {a, b, c};
  int64_t A[3], B[3], E0[3], bias[3];
  for (int k = 0; k < 3; k++) {
    const screen_vertex *p = v[(k + 1) % 3], *q = v[(k + 2) % 3];
    int64_t dx = q->x - p->x, dy = q->y - p->y;
    /* e(s) = (q - p) x (s - p) = dx (s.y - p.y) - dy (s.x - p.x): positive
     * on the side of p->q where the third vertex is. */
    A[k] = -dy;
    B[k] = dx;
    int64_t sx = (int64_t)i0 * SUBPIXEL + SUBPIXEL / 2, sy = (int64_t)j0 * SUBPIXEL + SUBPIXEL / 2;
    E0[k] = dx * (sy - p->y) - dy * (sx - p->x);
    bias[k] = owns_ties(dx, dy) ? 0 : -1;
  }
  /* Most triangles of a large mesh cover a sample or none: depth and shade
   * are interpolated only at the samples covered. */
  double inv = 1.0 / (double)area;
  for (int j = j0; j <= j1; j++) {
    int64_t dj = (int64_t)(j - j0) * SUBPIXEL;
    int64_t e0 = E0[0] + B[0] * dj, e1 = E0[1] + B[1] * dj, e2 = E0[2] + B[2] * dj;
    int64_t s0 = A[0] * SUBPIXEL, s1 = A[1] * SUBPIXEL, s2 = A[2] * SUBPIXEL;
    float *zrow = r->depth + (size_t)j * r->w, *srow = r->shade + (size_t)j * r->w;
    for (int i = i0; i <= i1; i++, e0 += s0, e1 += s1, e2 += s2) {
      if ((e0 + bias[0]) < 0 || (e1 + bias[1]) < 0 || (e2 + bias[2]) < 0) continue;
      double w0 = (double)e0 * inv, w1 = (double)e1 * inv, w2 = (double)e2 * inv;
      float z = (float)(w0 * a->z + w1 * b->z + w2 * c->z);
      if (z > zrow[i]) {
        zrow[i] = z;
        srow[i] = (float)(w0 * a->shade + w1 * b->shade + w2 * c->shade);
      }
    }
  }
}

/* --- annotations --------------------------------------------------------------- */

static double nice_length(double target) {
  double mag = pow(10, floor(log10(target)));
  double f = target / mag;
  return (f < 2 ? 1 : f < 5 ? 2 : 5) * mag;
}

static void format_mm(char out[32], double v) {
  if (v >= 1 && v < 1e6)
    snprintf(out, 32, "%.0f mm", v);
  else if (v < 1 && v >= 1e-4)
    snprintf(out, 32, "%.*f mm", (int)ceil(-log10(v) - 1e-9), v);
  else
    snprintf(out, 32, "%.0e mm", v);
}

/* The axis triad in the lower left and a scale bar in the lower right;
 * `scale` is pixels per mm. */
static void annotate(cairo_t *cr, const camera *c, int width, int height, double scale) {
  double s = fmin(width, height);
  double fs = fmax(9.0, s / 55.0);
  cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
  cairo_set_font_size(cr, fs);
  cairo_set_line_cap(cr, CAIRO_LINE_CAP_ROUND);

  /* Triad: the axes farthest from the camera first. */
  double len = 0.07 * s, ox = 0.6 * len + 1.5 * fs, oy = height - 0.6 * len - 1.5 * fs;
  static const double axis_color[3][3] = {{0.85, 0.1, 0.1}, {0.1, 0.6, 0.1}, {0.1, 0.2, 0.9}};
  static const char *const axis_name[3] = {"x", "y", "z"};
  int order[3] = {0, 1, 2};
  for (int a = 0; a < 3; a++)
    for (int b = a + 1; b < 3; b++)
      if (c->dir[order[b]] < c->dir[order[a]]) {
        int t = order[a];
        order[a] = order[b];
        order[b] = t;
      }
  cairo_set_line_width(cr, fmax(1.5, s / 400));
  for (int n = 0; n < 3; n++) {
    int a = order[n];
    double ex = c->right[a] * len, ey = -c->up[a] * len;
    cairo_set_source_rgb(cr, axis_color[a][0], axis_color[a][1], axis_color[a][2]);
    cairo_move_to(cr, ox, oy);
    cairo_line_to(cr, ox + ex, oy + ey);
    cairo_stroke(cr);
    double el = hypot(ex, ey);
    if (el > 0.15 * len) { /* no label on an axis seen end-on */
      cairo_text_extents_t te;
      cairo_text_extents(cr, axis_name[a], &te);
      double lx = ox + ex * (1 + 0.6 * fs / el), ly = oy + ey * (1 + 0.6 * fs / el);
      cairo_move_to(cr, lx - te.x_bearing - 0.5 * te.width, ly - te.y_bearing - 0.5 * te.height);
      cairo_show_text(cr, axis_name[a]);
    } else {
      /* the end-on axis as a dot with its name beside it */
      cairo_arc(cr, ox, oy, fmax(2.0, s / 250), 0, 2 * M_PI);
      cairo_fill(cr);
    }
  }

  /* Scale bar: 1, 2 or 5 times a power of ten mm, about 15% of the width. */
  if (!(scale > 0) || !isfinite(scale)) return;
  double mm = nice_length(0.15 * width / scale), px = mm * scale;
  char label[32];
  format_mm(label, mm);
  double x1 = width - 1.5 * fs, x0 = x1 - px, y = height - 1.5 * fs;
  cairo_set_source_rgb(cr, 0, 0, 0);
  cairo_set_line_width(cr, fmax(1.5, s / 500));
  cairo_set_line_cap(cr, CAIRO_LINE_CAP_BUTT);
  cairo_move_to(cr, x0, y);
  cairo_line_to(cr, x1, y);
  cairo_move_to(cr, x0, y - 0.4 * fs);
  cairo_line_to(cr, x0, y + 0.4 * fs);
  cairo_move_to(cr, x1, y - 0.4 * fs);
  cairo_line_to(cr, x1, y + 0.4 * fs);
  cairo_stroke(cr);
  cairo_text_extents_t te;
  cairo_text_extents(cr, label, &te);
  cairo_move_to(cr, 0.5 * (x0 + x1) - te.x_bearing - 0.5 * te.width, y - 0.6 * fs);
  cairo_show_text(cr, label);
}

/* --- the picture --------------------------------------------------------------- */

vox_status vox_render_surface_png(vox_context *ctx, const char *path, const vox_surface *s,
                                  const vox_render_options *options) {
  if (!path || !*path) return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "no output path given");
  vox_render_options o = {0};
  if (options) o = *options;
  if (o.width == 0 && o.height == 0) o.width = 1200, o.height = 1000;
  if (o.width < VOX_RENDER_MIN_SIZE || o.height < VOX_RENDER_MIN_SIZE ||
      o.width > VOX_RENDER_MAX_SIZE || o.height > VOX_RENDER_MAX_SIZE)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "%s: picture size %dx%d is outside %dx%d to %dx%d pixels", path, o.width,
                     o.height, VOX_RENDER_MIN_SIZE, VOX_RENDER_MIN_SIZE, VOX_RENDER_MAX_SIZE,
                     VOX_RENDER_MAX_SIZE);
  double color[3];
  if (o.color[0] == 0 && o.color[1] == 0 && o.color[2] == 0) {
    memcpy(color, default_color, sizeof color);
  } else {
    for (int a = 0; a < 3; a++) {
      if (!(o.color[a] >= 0 && o.color[a] <= 1))
        return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                         "%s: colour components must be within [0, 1]", path);
      color[a] = o.color[a];
    }
  }
  double lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};
  vox_status st = check_surface(ctx, path, s, lo, hi);
  if (st != VOX_OK) return st;
  camera cam = {{0, 0, 1}, {1, 0, 0}, {0, 1, 0}};
  if ((st = make_camera(ctx, path, &o, &cam)) != VOX_OK) return st;

  /* Fit the bounding box's projection, less the margin, centred. */
  double rlo = INFINITY, rhi = -INFINITY, ulo = INFINITY, uhi = -INFINITY;
  for (int corner = 0; corner < 8; corner++) {
    double p[3] = {corner & 1 ? hi[0] : lo[0], corner & 2 ? hi[1] : lo[1],
                   corner & 4 ? hi[2] : lo[2]};
    double r = dot(p, cam.right), u = dot(p, cam.up);
    rlo = fmin(rlo, r), rhi = fmax(rhi, r), ulo = fmin(ulo, u), uhi = fmax(uhi, u);
  }
  double margin = margin_fraction * fmin(o.width, o.height);
  double span_r = fmax(rhi - rlo, 1e-300), span_u = fmax(uhi - ulo, 1e-300);
  double scale = fmin((o.width - 2 * margin) / span_r, (o.height - 2 * margin) / span_u);
  if (rhi - rlo <= 0 && uhi - ulo <= 0) scale = 1;
  double rc = 0.5 * (rlo + rhi), uc = 0.5 * (ulo + uhi);

  raster r = {.w = SUPERSAMPLE * o.width, .h = SUPERSAMPLE * o.height};
  size_t n_samples = (size_t)r.w * (size_t)r.h;
  r.depth = malloc(n_samples * sizeof *r.depth);
  r.shade = malloc(n_samples * sizeof *r.shade);
  screen_vertex *sv = malloc(s->n_vertices * sizeof *sv);
  float *normal = calloc(3 * s->n_vertices, sizeof *normal);
  if (!r.depth || !r.shade || !sv || !normal) {
    free(r.depth), free(r.shade), free(sv), free(normal);
    return vox_error(ctx, VOX_ERR_NO_MEMORY, "%s: out of memory for a %dx%d picture of %zu "
                     "triangles", path, o.width, o.height, s->n_triangles);
  }
  for (size_t i = 0; i < n_samples; i++) r.depth[i] = -INFINITY;

  /* Area-weighted vertex normals: the sum of the triangles' cross products. */
  for (size_t t = 0; t < s->n_triangles; t++) {
    const int64_t *tri = s->triangle + 3 * t;
    const double *p0 = s->vertex + 3 * tri[0], *p1 = s->vertex + 3 * tri[1],
                 *p2 = s->vertex + 3 * tri[2];
    double e1[3] = {p1[0] - p0[0], p1[1] - p0[1], p1[2] - p0[2]};
    double e2[3] = {p2[0] - p0[0], p2[1] - p0[1], p2[2] - p0[2]};
    double n[3];
    cross(e1, e2, n);
    for (int k = 0; k < 3; k++)
      for (int a = 0; a < 3; a++) normal[3 * tri[k] + a] += (float)n[a];
  }

  /* Light from the camera's upper left, a little in front. */
  double light[3];
  for (int a = 0; a < 3; a++)
    light[a] = -0.45 * cam.right[a] + 0.55 * cam.up[a] + 0.70 * cam.dir[a];
  normalize(light);
  double ss = scale * SUPERSAMPLE * SUBPIXEL;
  double cx = 0.5 * r.w * SUBPIXEL, cy = 0.5 * r.h * SUBPIXEL;
  for (size_t v = 0; v < s->n_vertices; v++) {
    const double *p = s->vertex + 3 * v;
    double n[3] = {normal[3 * v], normal[3 * v + 1], normal[3 * v + 2]};
    normalize(n);
    double key = fmax(0.0, dot(n, light)), fill = fmax(0.0, dot(n, cam.dir));
    sv[v].x = (int32_t)lrint(cx + (dot(p, cam.right) - rc) * ss);
    sv[v].y = (int32_t)lrint(cy - (dot(p, cam.up) - uc) * ss);
    sv[v].z = (float)dot(p, cam.dir);
    sv[v].shade = (float)(ambient + key_light * key + fill_light * fill);
  }
  free(normal);

  for (size_t t = 0; t < s->n_triangles; t++) {
    const int64_t *tri = s->triangle + 3 * t;
    draw_triangle(&r, &sv[tri[0]], &sv[tri[1]], &sv[tri[2]]);
  }
  free(sv);

  cairo_surface_t *surface = cairo_image_surface_create(CAIRO_FORMAT_RGB24, o.width, o.height);
  cairo_status_t cs = cairo_surface_status(surface);
  if (cs == CAIRO_STATUS_SUCCESS) {
    cairo_surface_flush(surface);
    unsigned char *data = cairo_image_surface_get_data(surface);
    int stride = cairo_image_surface_get_stride(surface);
    for (int y = 0; y < o.height; y++) {
      uint32_t *row = (uint32_t *)(void *)(data + (size_t)y * stride);
      for (int x = 0; x < o.width; x++) {
        double sum[3] = {0, 0, 0};
        for (int dy = 0; dy < SUPERSAMPLE; dy++)
          for (int dx = 0; dx < SUPERSAMPLE; dx++) {
            size_t i = (size_t)(SUPERSAMPLE * y + dy) * r.w + (size_t)(SUPERSAMPLE * x + dx);
            if (r.depth[i] == -INFINITY) {
              sum[0] += 1, sum[1] += 1, sum[2] += 1;
            } else {
              for (int a = 0; a < 3; a++) sum[a] += fmin(1.0, color[a] * r.shade[i]);
            }
          }
        uint32_t px = 0;
        for (int a = 0; a < 3; a++) {
          double c = sum[a] / (SUPERSAMPLE * SUPERSAMPLE);
          px = (px << 8) | (uint32_t)lrint(fmin(fmax(c, 0.0), 1.0) * 255);
        }
        row[x] = px;
      }
    }
    cairo_surface_mark_dirty(surface);
  }
  free(r.depth);
  free(r.shade);
  if (cs == CAIRO_STATUS_SUCCESS && !o.no_annotations) {
    cairo_t *cr = cairo_create(surface);
    annotate(cr, &cam, o.width, o.height, scale);
    cs = cairo_status(cr);
    cairo_destroy(cr);
    cairo_surface_flush(surface);
  }
  if (cs == CAIRO_STATUS_SUCCESS) cs = cairo_surface_status(surface);
  if (cs != CAIRO_STATUS_SUCCESS) {
    cairo_surface_destroy(surface);
    return vox_error(ctx, cs == CAIRO_STATUS_NO_MEMORY ? VOX_ERR_NO_MEMORY : VOX_ERR_IO,
                     "%s: cairo: %s", path, cairo_status_to_string(cs));
  }
  st = vox_write_cairo_png(ctx, path, surface);
  cairo_surface_destroy(surface);
  return st;
}
