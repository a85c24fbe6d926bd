/* SPDX-License-Identifier: BSD-3-Clause */
/* Pictures of surfaces (voxfe/render.h): PNG files read back with cairo.
 *
 * A sphere seen along x is a disc of the sphere's area at the documented
 * scale, lit from the upper left; a cube seen along each axis is a square;
 * a cube seen from the iso view shows three faces of three shades; the axis
 * triad and the scale bar are there unless turned off; the same call gives
 * the same bytes; failures leave no file and no temporary.
 *
 * usage: test_export_render OUTPUT_FOLDER  (created if missing; files replaced) */
#include <cairo.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "export/output_dir.h"
#include "voxfe/model.h"
#include "voxfe/render.h"
#include "voxfe/surface.h"

/* fontconfig, under cairo's text, keeps its configuration for the life of
 * the process; LeakSanitizer (VOXFE_SANITIZE builds) would report it. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void) { return "leak:libfontconfig.so\n"; }

static int message_has(vox_context *ctx, const char *text) {
  const char *msg = vox_context_message(ctx);
  if (strstr(msg, text) && !strchr(msg, '\n')) return 1;
  fprintf(stderr, "message '%s' lacks '%s'\n", msg, text);
  return 0;
}

/* --- pictures read back ---------------------------------------------------------- */

typedef struct picture {
  int w, h;
  unsigned char *rgb; /* 3 per pixel */
} picture;

/* Reads a PNG with cairo; checks the signature and the size. */
static int load_png(const char *path, int width, int height, picture *p) {
  memset(p, 0, sizeof *p);
  FILE *f = fopen(path, "rb");
  unsigned char sig[8] = {0};
  CHECK(f && fread(sig, 1, 8, f) == 8);
  if (f) fclose(f);
  CHECK(memcmp(sig, "\x89PNG\r\n\x1a\n", 8) == 0);
  cairo_surface_t *s = cairo_image_surface_create_from_png(path);
  CHECK(cairo_surface_status(s) == CAIRO_STATUS_SUCCESS);
  if (cairo_surface_status(s) != CAIRO_STATUS_SUCCESS) {
    cairo_surface_destroy(s);
    return 0;
  }
  p->w = cairo_image_surface_get_width(s);
  p->h = cairo_image_surface_get_height(s);
  CHECK(p->w == width && p->h == height);
  CHECK(cairo_image_surface_get_format(s) == CAIRO_FORMAT_RGB24);
  cairo_surface_flush(s);
  const unsigned char *data = cairo_image_surface_get_data(s);
  int stride = cairo_image_surface_get_stride(s);
  p->rgb = malloc((size_t)p->w * p->h * 3);
  for (int y = 0; y < p->h; y++)
    for (int x = 0; x < p->w; x++) {
      uint32_t v;
      memcpy(&v, data + (size_t)y * stride + 4 * (size_t)x, 4);
      unsigned char *o = p->rgb + 3 * ((size_t)y * p->w + x);
      o[0] = (v >> 16) & 255, o[1] = (v >> 8) & 255, o[2] = v & 255;
    }
  cairo_surface_destroy(s);
  return 1;
}

static const unsigned char *pixel(const picture *p, int x, int y) {
  return p->rgb + 3 * ((size_t)y * p->w + x);
}

static int is_white(const unsigned char *c) { return c[0] >= 250 && c[1] >= 250 && c[2] >= 250; }

static double brightness(const unsigned char *c) { return (c[0] + c[1] + c[2]) / 3.0; }

/* The non-white pixels: their count and bounding box. */
static long covered(const picture *p, int box[4]) {
  long n = 0;
  box[0] = p->w, box[1] = p->h, box[2] = -1, box[3] = -1;
  for (int y = 0; y < p->h; y++)
    for (int x = 0; x < p->w; x++)
      if (!is_white(pixel(p, x, y))) {
        n++;
        if (x < box[0]) box[0] = x;
        if (y < box[1]) box[1] = y;
        if (x > box[2]) box[2] = x;
        if (y > box[3]) box[3] = y;
      }
  return n;
}

/* --- models ---------------------------------------------------------------------- */

/* n^3 voxels of size h: density 1 within `radius` of the centre (a sphere),
 * or label 1 in the centred cube of `cube` voxels a side (cube > 0). */
static void make_model(vox_context *ctx, vox_model *m, int n, double h, double radius, int cube) {
  vox_grid g = {.nx = n, .ny = n, .nz = n, .voxel_size = {h, h, h}, .origin = {-3, 4, 10}};
  CHECK_OK(ctx, vox_model_init(ctx, m, &g));
  vox_material steel = {.label = 1, .name = "steel", .youngs_modulus = 210000, .poisson_ratio = 0.3};
  CHECK_OK(ctx, vox_model_add_material(ctx, m, &steel));
  if (!cube) m->density = malloc((size_t)n * n * n * sizeof *m->density);
  double c = 0.5 * n * h;
  int lo = (n - cube) / 2;
  for (int k = 0; k < n; k++)
    for (int j = 0; j < n; j++)
      for (int i = 0; i < n; i++) {
        size_t e = ((size_t)k * n + j) * n + i;
        if (cube) {
          int in = i >= lo && i < lo + cube && j >= lo && j < lo + cube && k >= lo && k < lo + cube;
          m->label[e] = in ? 1 : 0;
        } else {
          double x = (i + 0.5) * h - c, y = (j + 0.5) * h - c, z = (k + 0.5) * h - c;
          m->density[e] = sqrt(x * x + y * y + z * z) < radius ? 1.0 : 0.0;
          m->label[e] = 1;
        }
      }
}

static void bounds(const vox_surface *s, double lo[3], double hi[3]) {
  for (int a = 0; a < 3; a++) lo[a] = INFINITY, hi[a] = -INFINITY;
  for (size_t v = 0; v < s->n_vertices; v++)
    for (int a = 0; a < 3; a++) {
      lo[a] = fmin(lo[a], s->vertex[3 * v + a]);
      hi[a] = fmax(hi[a], s->vertex[3 * v + a]);
    }
}

/* Pixels per mm of a view whose picture axes span (su, sv) mm. */
static double fitted_scale(int w, int h, double su, double sv) {
  double margin = VOX_RENDER_MARGIN * fmin(w, h);
  return fmin((w - 2 * margin) / su, (h - 2 * margin) / sv);
}

static int same_bytes(const char *a, const char *b) {
  FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
  int same = fa && fb;
  while (same) {
    int ca = getc(fa), cb = getc(fb);
    if (ca != cb) same = 0;
    if (ca == EOF || cb == EOF) break;
  }
  if (fa) fclose(fa);
  if (fb) fclose(fb);
  return same;
}

/* --- tests ------------------------------------------------------------------------ */

static void test_sphere(vox_context *ctx) {
  const double h = 0.5, radius = 9.0; /* mm: 18 voxels */
  vox_model m;
  make_model(ctx, &m, 44, h, radius, 0);
  vox_surface s = {0};
  CHECK_OK(ctx, vox_isosurface_density(ctx, &m, 0.5, &s));
  vox_model_free(&m);
  double lo[3], hi[3];
  bounds(&s, lo, hi);

  const int w = 640, hgt = 480;
  vox_render_options o = {.width = w, .height = hgt, .view = VOX_VIEW_X, .no_annotations = 1};
  OUT_PATH(path, "sphere_x.png");
  CHECK_OK(ctx, vox_render_surface_png(ctx, path, &s, &o));
  picture p;
  if (load_png(path, w, hgt, &p)) {
    int box[4];
    long n = covered(&p, box);
    double scale = fitted_scale(w, hgt, hi[1] - lo[1], hi[2] - lo[2]);
    double expected = M_PI * radius * radius * scale * scale;
    printf("sphere: %ld pixels covered, pi r^2 at %.3f px/mm = %.0f\n", n, scale, expected);
    CHECK(n > 10000);
    CHECK(fabs(n - expected) <= 0.05 * expected);
    /* a disc: as wide as high, centred */
    CHECK(abs((box[2] - box[0]) - (box[3] - box[1])) <= 2);
    CHECK(fabs(0.5 * (box[0] + box[2]) - 0.5 * (w - 1)) <= 1.5);
    CHECK(fabs(0.5 * (box[1] + box[3]) - 0.5 * (hgt - 1)) <= 1.5);
    /* lit from the upper left: that quarter of the disc brighter than the
     * lower right one */
    double cx = 0.5 * (box[0] + box[2]), cy = 0.5 * (box[1] + box[3]);
    double sum_ul = 0, sum_lr = 0;
    long n_ul = 0, n_lr = 0;
    for (int y = box[1]; y <= box[3]; y++)
      for (int x = box[0]; x <= box[2]; x++) {
        const unsigned char *c = pixel(&p, x, y);
        if (is_white(c)) continue;
        if (x < cx && y < cy) sum_ul += brightness(c), n_ul++;
        if (x > cx && y > cy) sum_lr += brightness(c), n_lr++;
      }
    double ul = sum_ul / n_ul, lr = sum_lr / n_lr;
    printf("sphere: mean brightness upper left %.1f, lower right %.1f\n", ul, lr);
    CHECK(n_ul > 1000 && n_lr > 1000);
    CHECK(ul > lr + 20);
    /* the brightest point is up and left of the centre, in the disc */
    double best = -1;
    int bx = 0, by = 0;
    for (int y = box[1]; y <= box[3]; y++)
      for (int x = box[0]; x <= box[2]; x++)
        if (!is_white(pixel(&p, x, y)) && brightness(pixel(&p, x, y)) > best)
          best = brightness(pixel(&p, x, y)), bx = x, by = y;
    CHECK(bx < cx && by < cy);
    /* bluish grey: blue the strongest channel */
    const unsigned char *mid = pixel(&p, (int)cx, (int)cy);
    CHECK(mid[2] > mid[0] && mid[2] >= mid[1]);
    free(p.rgb);
  }

  /* the default view and size, annotated: an axis triad (red, green, blue
   * pixels) in the lower left and a black scale bar in the lower right */
  OUT_PATH(iso, "sphere_iso.png");
  CHECK_OK(ctx, vox_render_surface_png(ctx, iso, &s, NULL));
  if (load_png(iso, 1200, 1000, &p)) {
    int box[4];
    CHECK(covered(&p, box) > 100000);
    long red = 0, green = 0, blue = 0, black = 0;
    for (int y = 800; y < 1000; y++)
      for (int x = 0; x < 200; x++) {
        const unsigned char *c = pixel(&p, x, y);
        if (c[0] > 150 && c[1] < 80 && c[2] < 80) red++;
        if (c[1] > 100 && c[0] < 80 && c[2] < 80) green++;
        if (c[2] > 150 && c[0] < 80 && c[1] < 100) blue++;
      }
    for (int y = 900; y < 1000; y++)
      for (int x = 900; x < 1200; x++)
        if (brightness(pixel(&p, x, y)) < 40) black++;
    printf("annotations: %ld red, %ld green, %ld blue, %ld black pixels\n", red, green, blue,
           black);
    CHECK(red > 50 && green > 50 && blue > 50 && black > 150);
    free(p.rgb);
  }
  /* same input, same bytes */
  OUT_PATH(again, "sphere_iso_again.png");
  CHECK_OK(ctx, vox_render_surface_png(ctx, again, &s, NULL));
  CHECK(same_bytes(iso, again));
  /* azimuth 0, elevation 0 is the x view */
  OUT_PATH(angles, "sphere_angles.png");
  vox_render_options oa = o;
  oa.view = VOX_VIEW_ANGLES;
  CHECK_OK(ctx, vox_render_surface_png(ctx, angles, &s, &oa));
  CHECK(same_bytes(angles, path));
  vox_surface_free(&s);
}

static void test_cube(vox_context *ctx) {
  const double h = 0.25;
  const int side = 24; /* voxels: 6 mm */
  vox_model m;
  make_model(ctx, &m, 32, h, 0, side);
  vox_surface s = {0};
  CHECK_OK(ctx, vox_isosurface_label(ctx, &m, 1, &s));
  vox_model_free(&m);
  double lo[3], hi[3];
  bounds(&s, lo, hi);
  const int w = 500, hgt = 400;
  static const vox_view views[] = {VOX_VIEW_X,       VOX_VIEW_MINUS_X, VOX_VIEW_Y,
                                   VOX_VIEW_MINUS_Y, VOX_VIEW_Z,       VOX_VIEW_MINUS_Z};
  static const char *const names[] = {"x", "-x", "y", "-y", "z", "-z"};
  for (int v = 0; v < 6; v++) {
    vox_view parsed;
    CHECK(vox_view_from_name(names[v], &parsed) == 0 && parsed == views[v]);
    char name[32];
    snprintf(name, sizeof name, "cube_%s.png", names[v]);
    OUT_PATH(path, name);
    vox_render_options o = {.width = w, .height = hgt, .view = views[v], .no_annotations = 1};
    CHECK_OK(ctx, vox_render_surface_png(ctx, path, &s, &o));
    picture p;
    if (!load_png(path, w, hgt, &p)) continue;
    int box[4];
    long n = covered(&p, box);
    int bw = box[2] - box[0] + 1, bh = box[3] - box[1] + 1;
    double scale = fitted_scale(w, hgt, hi[0] - lo[0], hi[0] - lo[0]);
    printf("cube from %s: %dx%d pixels, %ld covered, side %.1f px expected\n", names[v], bw, bh,
           n, scale * (hi[0] - lo[0]));
    /* a square of the cube's side, filled (the cut corners of the voxel
     * surface are a few pixels), of one flat shade in its middle */
    CHECK(abs(bw - bh) <= 1);
    CHECK(fabs(bw - scale * (hi[0] - lo[0])) <= 2);
    CHECK(n >= 0.98 * bw * bh);
    const unsigned char *c0 = pixel(&p, (box[0] + box[2]) / 2, (box[1] + box[3]) / 2);
    const unsigned char *c1 = pixel(&p, box[0] + bw / 4, box[1] + bh / 4);
    CHECK(abs(c0[0] - c1[0]) <= 1 && abs(c0[1] - c1[1]) <= 1 && abs(c0[2] - c1[2]) <= 1);
    free(p.rgb);
  }
  /* the iso view: +z on top, lit most; -y at the lower left; +x at the lower
   * right, in the key light's shadow and darkest */
  OUT_PATH(iso, "cube_iso.png");
  vox_render_options o = {.width = w, .height = hgt, .no_annotations = 1};
  CHECK_OK(ctx, vox_render_surface_png(ctx, iso, &s, &o));
  picture p;
  if (load_png(iso, w, hgt, &p)) {
    int box[4];
    covered(&p, box);
    int cx = (box[0] + box[2]) / 2, bw = box[2] - box[0], bh = box[3] - box[1];
    double top = brightness(pixel(&p, cx, box[1] + bh / 4));
    double left = brightness(pixel(&p, box[0] + bw / 4, box[1] + 5 * bh / 8));
    double right = brightness(pixel(&p, box[2] - bw / 4, box[1] + 5 * bh / 8));
    printf("cube iso: top %.0f, left (-y) %.0f, right (+x) %.0f\n", top, left, right);
    CHECK(top > left + 15 && left > right + 15);
    free(p.rgb);
  }
  vox_surface_free(&s);
}

static void test_failures(vox_context *ctx) {
  vox_model m;
  make_model(ctx, &m, 8, 1.0, 0, 4);
  vox_surface s = {0};
  CHECK_OK(ctx, vox_isosurface_label(ctx, &m, 1, &s));
  vox_model_free(&m);

  /* a folder that does not exist: an I/O error naming the path, no file */
  OUT_PATH(missing, "no_such_folder/cube.png");
  CHECK(vox_render_surface_png(ctx, missing, &s, NULL) == VOX_ERR_IO);
  CHECK(message_has(ctx, "no_such_folder/cube.png: cannot write: "));
  CHECK(!file_exists(missing));
  /* a path that is a folder */
  OUT_PATH(folder, "a_folder.png");
  CHECK(mkdir(folder, 0777) == 0 || errno == EEXIST);
  CHECK(vox_render_surface_png(ctx, folder, &s, NULL) == VOX_ERR_IO);

  /* refusals leave an existing file as it was */
  OUT_PATH(old, "old.png");
  FILE *f = fopen(old, "w");
  CHECK(f && fputs("an older file\n", f) >= 0 && fclose(f) == 0);
  vox_render_options o = {.width = 20, .height = 400};
  CHECK(vox_render_surface_png(ctx, old, &s, &o) == VOX_ERR_INVALID_ARGUMENT);
  CHECK(message_has(ctx, "picture size 20x400 is outside"));
  o = (vox_render_options){.view = VOX_VIEW_ANGLES, .elevation = 91};
  CHECK(vox_render_surface_png(ctx, old, &s, &o) == VOX_ERR_INVALID_ARGUMENT);
  o = (vox_render_options){.view = (vox_view)42};
  CHECK(vox_render_surface_png(ctx, old, &s, &o) == VOX_ERR_INVALID_ARGUMENT);
  o = (vox_render_options){.color = {0.5, 2, 0}};
  CHECK(vox_render_surface_png(ctx, old, &s, &o) == VOX_ERR_INVALID_ARGUMENT);
  vox_surface empty = {0};
  CHECK(vox_render_surface_png(ctx, old, &empty, NULL) == VOX_ERR_INVALID_ARGUMENT);
  CHECK(message_has(ctx, "no triangles"));
  CHECK(vox_render_surface_png(ctx, old, NULL, NULL) == VOX_ERR_INVALID_ARGUMENT);
  s.triangle[4] = (int64_t)s.n_vertices;
  CHECK(vox_render_surface_png(ctx, old, &s, NULL) == VOX_ERR_INVALID_ARGUMENT);
  CHECK(message_has(ctx, "vertex index outside"));
  s.triangle[4] = 0;
  double saved = s.vertex[1];
  s.vertex[1] = NAN;
  CHECK(vox_render_surface_png(ctx, old, &s, NULL) == VOX_ERR_INVALID_ARGUMENT);
  CHECK(message_has(ctx, "not finite"));
  s.vertex[1] = saved;
  struct stat st;
  CHECK(stat(old, &st) == 0 && st.st_size == (off_t)strlen("an older file\n"));
  /* and a good call replaces it */
  CHECK_OK(ctx, vox_render_surface_png(ctx, old, &s, &(vox_render_options){.width = 64,
                                                                             .height = 64}));
  picture p;
  if (load_png(old, 64, 64, &p)) free(p.rgb);

  vox_view v = VOX_VIEW_X;
  CHECK(vox_view_from_name("iso", &v) == 0 && v == VOX_VIEW_ISO);
  CHECK(vox_view_from_name("top", &v) == -1 && vox_view_from_name(NULL, &v) == -1);
  CHECK(count_temporaries() == 0);
  vox_surface_free(&s);
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
  test_cube(ctx);
  test_failures(ctx);
  vox_context_destroy(ctx);
  cairo_debug_reset_static_data(); /* for LeakSanitizer (VOXFE_SANITIZE) */
  CHECK_DONE();
}
