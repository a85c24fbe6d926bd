/* SPDX-License-Identifier: BSD-3-Clause */
/* vox_write_history_png: the optimization history as five stacked line
 * plots, drawn with cairo on an RGB image and written as PNG through a
 * stream callback into a temporary file that is renamed into place. */
#include "voxfe/plot.h"
#include "png_file.h"

#include <cairo.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { N_PANELS = VOX_HISTORY_PANELS, MAX_TICKS = 24 };

typedef struct panel {
  const char *title;
  int n_series;
  const char *names[VOX_PLOT_MAX_SERIES];  /* the columns' names, for the legend and tests */
  const char *legend[VOX_PLOT_MAX_SERIES]; /* NULL: no legend (one series) */
  size_t offset[VOX_PLOT_MAX_SERIES];      /* of the double in vox_history_row */
  double rgb[VOX_PLOT_MAX_SERIES][3];
  /* the design constraints' panel: series k is column[k] of the rows of
   * `matrix` (stride values a row) times scale[k], not a field of the row */
  const double *matrix;
  size_t stride;
  int column[VOX_PLOT_MAX_SERIES];
  double scale[VOX_PLOT_MAX_SERIES];
  double reference;  /* a dashed horizontal line (the target volume fraction); NaN: none */
  const char *reference_label; /* "target" or "limit" */
  double max_half; /* > 0: the axis reaches at most this far from the reference (the
                      constraints' early iterations may lie a hundred times off) */
  int pad;           /* room above and below the values: lines that stay at one
                        value (p, q) would hide in the frame otherwise */
  /* Set up by setup_axis: */
  int log;       /* values are drawn as log10 */
  int has_data;  /* at least one finite (and, for log, positive) value */
  double lo, hi; /* axis range, in log10 when log */
  int n_ticks;
  double ticks[MAX_TICKS];
  char labels[MAX_TICKS][32];
} panel;

static double row_value(const vox_history_row *row, size_t offset) {
  double v;
  memcpy(&v, (const char *)row + offset, sizeof v);
  return v;
}

/* The value of series k of panel p at row i. */
static double series_value(const panel *p, int k, const vox_history_row *rows, size_t i) {
  if (p->matrix) return p->matrix[i * p->stride + (size_t)p->column[k]] * p->scale[k];
  return row_value(&rows[i], p->offset[k]);
}

/* The x of a row: its iteration, or its 1-based position when the row has
 * none. */
static double row_x(const vox_history_row *rows, size_t i) {
  return rows[i].iteration >= 0 ? (double)rows[i].iteration : (double)(i + 1);
}

/* 1, 2 or 5 times a power of ten, near range/target. */
static double nice_step(double range, int target) {
  double raw = range / target;
  double mag = pow(10, floor(log10(raw)));
  double f = raw / mag;
  return (f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10) * mag;
}

static void format_tick(char out[32], double value, double step) {
  if (fabs(value) < 1e-9 * step) value = 0; /* no "-0" or "1e-17" */
  double mag = fabs(value) > fabs(step) ? fabs(value) : fabs(step);
  if (mag >= 1e6 || mag < 1e-4) {
    snprintf(out, 32, "%.3g", value);
  } else {
    int decimals = step >= 1 ? 0 : (int)ceil(-log10(step) - 1e-9);
    snprintf(out, 32, "%.*f", decimals, value);
  }
}

/* Linear ticks covering [lo, hi] (widened to whole steps). */
static void linear_ticks(double *lo, double *hi, int target, double *ticks, int *n,
                         char (*labels)[32]) {
  if (!(*hi > *lo)) {
    double pad = *lo != 0 ? fabs(*lo) * 0.1 : 1.0;
    *lo -= pad;
    *hi += pad;
  }
  double step = nice_step(*hi - *lo, target);
  *lo = floor(*lo / step + 1e-9) * step;
  *hi = ceil(*hi / step - 1e-9) * step;
  *n = 0;
  for (double t = *lo; t <= *hi + 0.5 * step && *n < MAX_TICKS; t += step) {
    ticks[*n] = t;
    if (labels) format_tick(labels[*n], t, step);
    (*n)++;
  }
}

static void setup_axis(panel *p, const vox_history_row *rows, size_t n_rows) {
  double lo = INFINITY, hi = -INFINITY, deviation = 0;
  int positive = 1;
  for (int k = 0; k < p->n_series; k++)
    for (size_t i = 0; i < n_rows; i++) {
      double v = series_value(p, k, rows, i);
      if (!isfinite(v)) continue;
      if (v < lo) lo = v;
      if (v > hi) hi = v;
      if (v <= 0) positive = 0;
      if (isfinite(p->reference)) deviation = fmax(deviation, fabs(v - p->reference));
    }
  p->has_data = lo <= hi;
  if (!p->has_data) {
    lo = 0;
    hi = 1;
  }
  if (isfinite(p->reference)) {
    /* around the reference: the largest deviation from it and some room,
     * at least a tenth of it, above and below */
    double half = fmax(1.1 * deviation, 0.1 * fabs(p->reference));
    if (p->max_half > 0) half = fmin(half, p->max_half);
    p->log = 0;
    /* a volume fraction is never negative: no room below 0 */
    p->lo = p->reference - half < 0 && lo >= 0 ? 0 : p->reference - half;
    p->hi = p->reference + half;
    linear_ticks(&p->lo, &p->hi, 4, p->ticks, &p->n_ticks, p->labels);
    return;
  }
  p->log = p->has_data && positive && hi / lo > 100;
  if (!p->log) {
    const double room = p->pad ? 0.05 * (hi - lo) : 0;
    p->lo = lo - room;
    p->hi = hi + room;
    linear_ticks(&p->lo, &p->hi, 4, p->ticks, &p->n_ticks, p->labels);
    return;
  }
  p->lo = floor(log10(lo));
  p->hi = ceil(log10(hi));
  int decades = (int)(p->hi - p->lo);
  int every = (decades + 5) / 6; /* at most about 6 labelled decades */
  p->n_ticks = 0;
  for (int k = (int)p->lo; k <= (int)p->hi && p->n_ticks < MAX_TICKS; k += every) {
    p->ticks[p->n_ticks] = k;
    if (k >= -3 && k <= 5) snprintf(p->labels[p->n_ticks], 32, "%g", pow(10, k));
    else snprintf(p->labels[p->n_ticks], 32, "1e%d", k);
    p->n_ticks++;
  }
}

/* Text for cairo's toy API: valid UTF-8 (other bytes become '?') on one line
 * (control characters become blanks). */
static void clean_text(const char *in, char *out, size_t size) {
  const unsigned char *s = (const unsigned char *)in;
  size_t o = 0;
  while (*s && o + 5 < size) {
    unsigned c = s[0];
    int n = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
    unsigned cp = n == 2 ? c & 0x1F : n == 3 ? c & 0x0F : c & 0x07;
    for (int i = 1; i < n; i++) {
      if ((s[i] & 0xC0) != 0x80) {
        n = 0;
        break;
      }
      cp = (cp << 6) | (s[i] & 0x3F);
    }
    if (n > 1) {
      static const unsigned min[5] = {0, 0, 0x80, 0x800, 0x10000};
      if (cp < min[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) n = 0;
    }
    if (n == 0) {
      out[o++] = '?';
      s++;
    } else if (n == 1) {
      out[o++] = c < 0x20 || c == 0x7F ? ' ' : (char)c;
      s++;
    } else {
      memcpy(out + o, s, (size_t)n);
      o += (size_t)n;
      s += n;
    }
  }
  out[o] = '\0';
}

/* Shortens UTF-8 text to fit `width` pixels, ending it in "...". */
static void fit_text(cairo_t *cr, char *text, double width) {
  cairo_text_extents_t e;
  cairo_text_extents(cr, text, &e);
  if (e.x_advance <= width) return;
  size_t len = strlen(text);
  while (len > 0) {
    do len--; /* back to the start of a character */
    while (len > 0 && ((unsigned char)text[len] & 0xC0) == 0x80);
    memcpy(text + len, "...", 4);
    cairo_text_extents(cr, text, &e);
    if (e.x_advance <= width) return;
  }
}

static double text_width(cairo_t *cr, const char *text) {
  cairo_text_extents_t e;
  cairo_text_extents(cr, text, &e);
  return e.x_advance;
}

/* Draws text with its left (align 0), centre (0.5) or right (1) end at x and
 * its vertical middle at y. */
static void draw_text(cairo_t *cr, const char *text, double x, double y, double align) {
  cairo_text_extents_t e;
  cairo_font_extents_t fe;
  cairo_text_extents(cr, text, &e);
  cairo_font_extents(cr, &fe);
  cairo_move_to(cr, x - align * e.x_advance, y + 0.5 * (fe.ascent - fe.descent));
  cairo_show_text(cr, text);
}

/* --- drawing ------------------------------------------------------------------ */

/* Series k of a panel: its line, broken where a value is missing, with
 * dots when there are few points (and always for a point that stands
 * alone). */
static void draw_series(cairo_t *cr, const panel *p, int k, const vox_history_row *rows,
                        size_t n_rows, double x0, double y0, double w, double h, double xlo,
                        double xhi, double fs) {
  cairo_save(cr);
  cairo_rectangle(cr, x0, y0, w, h);
  cairo_clip(cr);
  cairo_set_source_rgb(cr, p->rgb[k][0], p->rgb[k][1], p->rgb[k][2]);
  cairo_set_line_width(cr, fmax(1.5, fs / 7));
  cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
  double radius = fmax(2.0, fs / 5);
  int run = 0;
  for (size_t i = 0; i < n_rows; i++) {
    double v = series_value(p, k, rows, i);
    int ok = isfinite(v) && (!p->log || v > 0);
    if (!ok) {
      run = 0;
      continue;
    }
    double x = x0 + (row_x(rows, i) - xlo) / (xhi - xlo) * w;
    double y = y0 + h - ((p->log ? log10(v) : v) - p->lo) / (p->hi - p->lo) * h;
    if (run) cairo_line_to(cr, x, y);
    else cairo_move_to(cr, x, y);
    run = 1;
  }
  cairo_stroke(cr);
  for (size_t i = 0; i < n_rows; i++) {
    double v = series_value(p, k, rows, i);
    if (!isfinite(v) || (p->log && v <= 0)) continue;
    int alone = (i == 0 || !isfinite(series_value(p, k, rows, i - 1))) &&
                (i + 1 == n_rows || !isfinite(series_value(p, k, rows, i + 1)));
    if (n_rows > 40 && !alone) continue;
    double x = x0 + (row_x(rows, i) - xlo) / (xhi - xlo) * w;
    double y = y0 + h - ((p->log ? log10(v) : v) - p->lo) / (p->hi - p->lo) * h;
    cairo_new_sub_path(cr);
    cairo_arc(cr, x, y, radius, 0, 2 * M_PI);
    cairo_fill(cr);
  }
  cairo_restore(cr);
}

static void draw_panel(cairo_t *cr, const panel *p, const vox_history_row *rows, size_t n_rows,
                       double x0, double y0, double w, double h, double xlo, double xhi,
                       const double *xticks, int n_xticks, double fs, int last) {
  /* The frame, grid lines and tick labels. */
  cairo_set_line_width(cr, 1.0);
  cairo_set_source_rgb(cr, 0.88, 0.88, 0.88);
  for (int i = 0; i < n_xticks; i++) {
    double x = x0 + (xticks[i] - xlo) / (xhi - xlo) * w;
    cairo_move_to(cr, floor(x) + 0.5, y0);
    cairo_line_to(cr, floor(x) + 0.5, y0 + h);
  }
  for (int i = 0; i < p->n_ticks; i++) {
    double y = y0 + h - (p->ticks[i] - p->lo) / (p->hi - p->lo) * h;
    cairo_move_to(cr, x0, floor(y) + 0.5);
    cairo_line_to(cr, x0 + w, floor(y) + 0.5);
  }
  cairo_stroke(cr);
  cairo_set_source_rgb(cr, 0, 0, 0);
  cairo_rectangle(cr, floor(x0) + 0.5, floor(y0) + 0.5, floor(w), floor(h));
  cairo_stroke(cr);
  cairo_set_font_size(cr, fs * 0.85);
  for (int i = 0; i < p->n_ticks; i++) {
    double y = y0 + h - (p->ticks[i] - p->lo) / (p->hi - p->lo) * h;
    cairo_move_to(cr, x0 - 0.4 * fs, floor(y) + 0.5);
    cairo_line_to(cr, x0, floor(y) + 0.5);
    cairo_stroke(cr);
    draw_text(cr, p->labels[i], x0 - 0.6 * fs, y, 1.0);
  }
  cairo_set_font_size(cr, fs);
  cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_BOLD);
  char title[160];
  snprintf(title, sizeof title, "%s%s", p->title, p->log ? " (log scale)" : "");
  draw_text(cr, title, x0, y0 - 0.8 * fs, 0.0);
  cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
  if (!p->has_data) {
    cairo_set_source_rgb(cr, 0.5, 0.5, 0.5);
    draw_text(cr, "no values", x0 + 0.5 * w, y0 + 0.5 * h, 0.5);
    cairo_set_source_rgb(cr, 0, 0, 0);
  }
  if (last) {
    cairo_set_font_size(cr, fs * 0.85);
    char label[32];
    for (int i = 0; i < n_xticks; i++) {
      double x = x0 + (xticks[i] - xlo) / (xhi - xlo) * w;
      cairo_move_to(cr, floor(x) + 0.5, y0 + h);
      cairo_line_to(cr, floor(x) + 0.5, y0 + h + 0.4 * fs);
      cairo_stroke(cr);
      snprintf(label, sizeof label, "%.0f", xticks[i]);
      draw_text(cr, label, x, y0 + h + 1.2 * fs, 0.5);
    }
    cairo_set_font_size(cr, fs);
    draw_text(cr, "iteration", x0 + 0.5 * w, y0 + h + 2.6 * fs, 0.5);
  }
  if (isfinite(p->reference)) { /* the target: dashed, under the lines */
    double y = y0 + h - (p->reference - p->lo) / (p->hi - p->lo) * h;
    const double dash[2] = {0.6 * fs, 0.4 * fs};
    cairo_save(cr);
    cairo_set_source_rgb(cr, 0.35, 0.35, 0.35);
    cairo_set_line_width(cr, fmax(1.0, fs / 10));
    cairo_set_dash(cr, dash, 2, 0);
    cairo_move_to(cr, x0, y);
    cairo_line_to(cr, x0 + w, y);
    cairo_stroke(cr);
    cairo_restore(cr);
    cairo_set_font_size(cr, fs * 0.8);
    cairo_set_source_rgb(cr, 0.35, 0.35, 0.35);
    char label[48];
    snprintf(label, sizeof label, "%s %g", p->reference_label, p->reference);
    draw_text(cr, label, x0 + w - 0.4 * fs, y - 0.7 * fs, 1.0);
    cairo_set_source_rgb(cr, 0, 0, 0);
  }
  /* the legend, right of the title: a slot of 5 font sizes a line, wider
   * for a longer name (a design constraint's) */
  double slot[VOX_PLOT_MAX_SERIES], right = 0;
  cairo_set_font_size(cr, fs * 0.85);
  for (int k = 0; p->legend[0] && k < p->n_series; k++)
    right += slot[k] = fmax(5 * fs, 2.7 * fs + text_width(cr, p->legend[k]));
  cairo_set_font_size(cr, fs);
  for (int k = 0; p->legend[0] && k < p->n_series; k++) {
    cairo_set_font_size(cr, fs * 0.85);
    double x = x0 + w - right;
    right -= slot[k];
    cairo_set_source_rgb(cr, p->rgb[k][0], p->rgb[k][1], p->rgb[k][2]);
    cairo_set_line_width(cr, fmax(1.5, fs / 7));
    cairo_move_to(cr, x, y0 - 0.8 * fs);
    cairo_line_to(cr, x + 1.5 * fs, y0 - 0.8 * fs);
    cairo_stroke(cr);
    cairo_set_source_rgb(cr, 0, 0, 0);
    draw_text(cr, p->legend[k], x + 1.9 * fs, y0 - 0.8 * fs, 0.0);
    cairo_set_font_size(cr, fs);
  }
  if (!p->has_data) return;
  for (int k = 0; k < p->n_series; k++) draw_series(cr, p, k, rows, n_rows, x0, y0, w, h, xlo, xhi, fs);
}

/* The panels and their axes (the order of VOX_PANEL_*). */
static void make_panels(const vox_model *m, panel panels[N_PANELS]) {
  const panel layout[N_PANELS] = {
      {.title = "objective (compliance, N mm)", .n_series = 1, .names = {"objective"},
       .offset = {offsetof(vox_history_row, objective)}, .rgb = {{0.12, 0.47, 0.71}}},
      {.title = "volume fraction", .n_series = 1, .names = {"volume_fraction"},
       .offset = {offsetof(vox_history_row, volume_fraction)}, .rgb = {{0.85, 0.45, 0.0}}},
      {.title = "largest density change", .n_series = 1, .names = {"change"},
       .offset = {offsetof(vox_history_row, change)}, .rgb = {{0.17, 0.60, 0.17}}},
      {.title = "non-discreteness M_nd (%)", .n_series = 1, .names = {"non_discreteness"},
       .offset = {offsetof(vox_history_row, non_discreteness)}, .rgb = {{0.80, 0.15, 0.16}}},
      {.title = "continuation: SIMP penalty p, exponent q", .n_series = 2,
       .names = {"penalty", "q"}, .legend = {"p", "q"}, .pad = 1,
       .offset = {offsetof(vox_history_row, penalty), offsetof(vox_history_row, q)},
       .rgb = {{0.45, 0.25, 0.65}, {0.55, 0.55, 0.55}}},
      {.title = "design constraints: value / limit", .n_series = 0},
  };
  for (int i = 0; i < N_PANELS; i++) {
    panels[i] = layout[i];
    panels[i].reference = NAN;
    panels[i].reference_label = "target";
  }
  if (m->target_volume_fraction > 0) panels[VOX_PANEL_VOLUME].reference = m->target_volume_fraction;
  if (m->objective == VOX_OBJECTIVE_VOLUME)
    panels[VOX_PANEL_OBJECTIVE].title = "objective (volume fraction of the design domain)";
  /* the design constraints, each over its limit: all on one axis, met at or
   * under 1 (an equality at 1) */
  static const double palette[VOX_PLOT_MAX_SERIES][3] = {
      {0.12, 0.47, 0.71}, {0.85, 0.45, 0.0}, {0.17, 0.60, 0.17}, {0.80, 0.15, 0.16},
      {0.45, 0.25, 0.65}, {0.55, 0.34, 0.29}, {0.89, 0.47, 0.76}, {0.5, 0.5, 0.5}};
  panel *c = &panels[VOX_PANEL_CONSTRAINTS];
  if (m->n_design_constraints > 0 && m->history_constraint) {
    c->matrix = m->history_constraint;
    c->stride = (size_t)m->n_design_constraints;
    c->n_series = m->n_design_constraints < VOX_PLOT_MAX_SERIES ? m->n_design_constraints
                                                                : VOX_PLOT_MAX_SERIES;
    for (int k = 0; k < c->n_series; k++) {
      c->names[k] = c->legend[k] = m->design_constraints[k].name;
      c->column[k] = k;
      c->scale[k] = 1 / m->design_constraints[k].limit;
      memcpy(c->rgb[k], palette[k], sizeof palette[k]);
    }
    c->reference = 1;
    c->reference_label = "limit";
    c->max_half = 1;
  }
  for (int i = 0; i < N_PANELS; i++) setup_axis(&panels[i], m->history, m->n_history);
}

void vox_history_panels(const vox_model *m, vox_history_panel out[VOX_HISTORY_PANELS]) {
  panel panels[N_PANELS];
  make_panels(m, panels);
  for (int i = 0; i < N_PANELS; i++) {
    out[i] = (vox_history_panel){.title = panels[i].title, .n_series = panels[i].n_series,
                                 .log = panels[i].log, .has_data = panels[i].has_data,
                                 .lo = panels[i].lo, .hi = panels[i].hi,
                                 .reference = panels[i].reference};
    for (int k = 0; k < panels[i].n_series; k++) out[i].series[k] = panels[i].names[k];
  }
}

static void format_value(char out[32], double v) {
  if (isfinite(v)) snprintf(out, 32, "%.6g", v);
  else snprintf(out, 32, "n/a");
}

vox_status vox_write_history_png(vox_context *ctx, const char *path, const vox_model *m, int width,
                                 int height) {
  if (!path || !*path) return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "no output path given");
  if (!m) return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "%s: no model given", path);
  if (m->n_history == 0 || !m->history)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "%s: the model has no optimization history to plot (not a design file?)",
                     path);
  if (width < VOX_PLOT_MIN_WIDTH || height < VOX_PLOT_MIN_HEIGHT || width > VOX_PLOT_MAX_SIZE ||
      height > VOX_PLOT_MAX_SIZE)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "%s: picture size %dx%d is outside %dx%d to %dx%d pixels", path, width,
                     height, VOX_PLOT_MIN_WIDTH, VOX_PLOT_MIN_HEIGHT, VOX_PLOT_MAX_SIZE,
                     VOX_PLOT_MAX_SIZE);
  const vox_history_row *rows = m->history;
  size_t n_rows = m->n_history;

  panel panels[N_PANELS];
  make_panels(m, panels);
  /* the design constraints' panel only where there are some */
  const int drawn = panels[VOX_PANEL_CONSTRAINTS].n_series > 0 ? N_PANELS : N_PANELS - 1;
  double xlo = INFINITY, xhi = -INFINITY;
  for (size_t i = 0; i < n_rows; i++) {
    xlo = fmin(xlo, row_x(rows, i));
    xhi = fmax(xhi, row_x(rows, i));
  }
  if (!(xhi > xlo)) {
    xlo -= 1;
    xhi += 1;
  }
  double xticks[MAX_TICKS];
  int n_xticks = 0;
  {
    /* Whole iterations: the step is at least 1; the axis keeps the data's
     * range so that the lines start and end at the frame. */
    double step = fmax(1.0, nice_step(xhi - xlo, 6));
    for (double t = ceil(xlo / step - 1e-9) * step; t <= xhi + 1e-9 && n_xticks < MAX_TICKS;
         t += step)
      xticks[n_xticks++] = t + 0.0; /* no -0 */
  }

  cairo_surface_t *surface = cairo_image_surface_create(CAIRO_FORMAT_RGB24, width, height);
  cairo_t *cr = cairo_create(surface);
  if (cairo_status(cr) != CAIRO_STATUS_SUCCESS) {
    cairo_status_t cs = cairo_status(cr);
    cairo_destroy(cr);
    cairo_surface_destroy(surface);
    return vox_error(ctx, cs == CAIRO_STATUS_NO_MEMORY ? VOX_ERR_NO_MEMORY : VOX_ERR_IO,
                     "%s: cairo: %s", path, cairo_status_to_string(cs));
  }
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_paint(cr);
  cairo_set_source_rgb(cr, 0, 0, 0);
  cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);

  /* Sizes follow the picture: about 14 px text on 800x1000. */
  double fs = fmax(9.0, fmin(width / 55.0, height / 70.0));
  cairo_set_font_size(cr, fs * 0.85);
  double label_w = 0;
  for (int i = 0; i < drawn; i++)
    for (int t = 0; t < panels[i].n_ticks; t++)
      label_w = fmax(label_w, text_width(cr, panels[i].labels[t]));
  double left = label_w + 1.4 * fs, right = 1.5 * fs;
  double top = 4.4 * fs, bottom = 3.6 * fs, title_h = 1.8 * fs, gap = 0.8 * fs;
  double plot_w = width - left - right;
  double plot_h = (height - top - bottom - drawn * title_h - (drawn - 1) * gap) / drawn;
  if (plot_w < 4 * fs || plot_h < 2 * fs) {
    cairo_destroy(cr);
    cairo_surface_destroy(surface);
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "%s: picture size %dx%d leaves no room to plot",
                     path, width, height);
  }

  /* The file's title, and the final values under it. */
  char text[512];
  clean_text(m->title && *m->title ? m->title : "optimization history", text, sizeof text);
  cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_BOLD);
  cairo_set_font_size(cr, fs * 1.3);
  fit_text(cr, text, width - 2 * fs);
  draw_text(cr, text, 0.5 * width, 1.3 * fs, 0.5);
  cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
  cairo_set_font_size(cr, fs * 0.9);
  const vox_history_row *last = &rows[n_rows - 1];
  char obj[32], vol[32], mnd[32], pen[32], q[32], target[48] = "";
  format_value(obj, last->objective);
  format_value(vol, last->volume_fraction);
  format_value(mnd, last->non_discreteness);
  format_value(pen, last->penalty);
  format_value(q, last->q);
  if (m->target_volume_fraction > 0)
    snprintf(target, sizeof target, " (target %g)", m->target_volume_fraction);
  snprintf(text, sizeof text,
           "%zu iteration%s, final objective %s, volume fraction %s%s, M_nd %s%%, p %s, q %s",
           n_rows, n_rows == 1 ? "" : "s", obj, vol, target, mnd, pen, q);
  fit_text(cr, text, width - 2 * fs);
  cairo_set_source_rgb(cr, 0.3, 0.3, 0.3);
  draw_text(cr, text, 0.5 * width, 2.9 * fs, 0.5);
  cairo_set_source_rgb(cr, 0, 0, 0);

  for (int i = 0; i < drawn; i++) {
    double y0 = top + i * (title_h + plot_h + gap) + title_h;
    draw_panel(cr, &panels[i], rows, n_rows, left, y0, plot_w, plot_h, xlo, xhi, xticks, n_xticks,
               fs, i == drawn - 1);
  }

  cairo_status_t cs = cairo_status(cr);
  cairo_destroy(cr);
  cairo_surface_flush(surface);
  if (cs == CAIRO_STATUS_SUCCESS) cs = cairo_surface_status(surface);
  if (cs != CAIRO_STATUS_SUCCESS) {
    cairo_surface_destroy(surface);
    return vox_error(ctx, cs == CAIRO_STATUS_NO_MEMORY ? VOX_ERR_NO_MEMORY : VOX_ERR_IO,
                     "%s: cairo: %s", path, cairo_status_to_string(cs));
  }
  vox_status status = vox_write_cairo_png(ctx, path, surface);
  cairo_surface_destroy(surface);
  return status;
}
