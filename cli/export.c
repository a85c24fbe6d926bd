/* SPDX-License-Identifier: BSD-3-Clause */
/* voxfe-export: writes a model or design file in a format other programs
 * open, chosen by the extension of -o: VTK XML for ParaView (the grid, the
 * kept voxels, the surface), STL for CAD and
 * printing, a CalculiX/Abaqus deck, a PNG plot of the optimization history,
 * and JSON or CSV summaries. */
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "cli_common.h"
#include "cli_files.h"
#include "cli_numbers.h"
#include "cli_options.h"
#include "cli_solver_options.h"
#include "voxfe/inp.h"
#include "voxfe/plot.h"
#include "voxfe/render.h"
#include "voxfe/result_file.h"
#include "voxfe/summary.h"
#include "voxfe/surface.h"
#include "voxfe/tile.h"
#include "voxfe/vtk.h"

typedef struct settings {
  const char *input;
  const char *output;
  double threshold;
  int label;      /* .stl, .vtp: the surface of this label instead of the density's */
  int smooth;     /* .stl, .vtp: Taubin smoothing iterations */
  int triangles;  /* .stl, .vtp: decimate to at most this many triangles; 0: no decimation */
  vox_device device; /* .stl, .vtp, .png surface: where the isosurface is extracted */
  int ascii;      /* .stl: ASCII instead of binary */
  int no_header;  /* .csv: the row alone */
  int width, height; /* .png */
  const char *picture; /* .png: "surface" or "history"; NULL: history if there is one */
  const char *view;    /* .png surface: a name vox_view_from_name takes */
  long long tile[3];   /* cells along x, y, z of a periodic design's array */
} settings;

#define AT(member) offsetof(settings, member)

/* --tile NXxNYxNZ, or N for N x N x N */
static int parse_tile(const char *what, const char *text, void *value) {
  long long *t = value;
  const cli_range range = {1, 1000, 0, 0};
  if (cli_count_fields(text, 'x') == 1) {
    if (cli_parse_integer(what, text, range, &t[0])) return -1;
    t[1] = t[2] = t[0];
    return 0;
  }
  return cli_parse_integer_list(what, "NXxNYxNZ", text, 'x', 3, range, t);
}

static void format_tile(const void *value, char *buf, size_t size) {
  const long long *t = value;
  snprintf(buf, size, "%lldx%lldx%lld", t[0], t[1], t[2]);
}

static const cli_option options[] = {
    {.name = "output", .key = 'o', .arg = "FILE", .kind = CLI_STRING, .offset = AT(output),
     .flags = CLI_REQUIRED,
     .help = "file to write; its extension picks the format: .vti (the whole grid), .vtu (the "
             "kept voxels as hexahedra; both with every field of the file, an analysis "
             "result's strain, stress, von Mises stress, strain-energy density, effective "
             "strain and reactions too), .stl (the surface), .vtp (the surface with normals, for "
             "ParaView), .pvd (the density snapshots of an optimization, one .vti each beside "
             "it, for ParaView's time controls), .inp (a CalculiX/Abaqus deck of "
             "the kept voxels), .png (a plot of the optimization history), .json or .csv (a "
             "summary, with the largest displacement and an analysis result's largest von "
             "Mises stress, strain-energy density and effective strain)"},
    {.name = "threshold", .arg = "T", .kind = CLI_REAL, .offset = AT(threshold),
     .range = {0, 1, 0, 0},
     .help = ".vtu, .inp: keep the voxels whose density is at least T; .stl, .vtp: the density "
             "of the surface"},
    {.name = "label", .arg = "L", .kind = CLI_INTEGER, .offset = AT(label), .range = {1, 255, 0, 0},
     .help = ".stl, .vtp: the surface of the voxels of label L instead of the density's"},
    {.name = "smooth", .arg = "N", .kind = CLI_INTEGER, .offset = AT(smooth),
     .range = {0, 10000, 0, 0},
     .help = ".stl, .vtp: N iterations of volume-keeping (Taubin) smoothing"},
    {.name = "triangles", .arg = "N", .kind = CLI_INTEGER, .offset = AT(triangles),
     .range = {4, INT_MAX, 0, 0},
     .help = ".stl, .vtp: at most N triangles, by quadric error edge collapses that keep the "
             "surface closed, manifold and outward (after --smooth)"},
    {.name = "device", .arg = "DEV", .kind = CLI_CUSTOM, .offset = AT(device),
     .help = ".stl, .vtp, .png surface: where the isosurface is extracted: cpu, cuda or auto "
             "(the CPU, faster than the GPU once the field's transfer is counted); the same "
             "surface on each",
     .parse = cli_parse_device, .format = cli_format_device},
    {.name = "ascii", .kind = CLI_ENABLE, .offset = AT(ascii), .help = ".stl: ASCII, not binary"},
    {.name = "no-header", .kind = CLI_ENABLE, .offset = AT(no_header),
     .help = ".csv: the row alone, to append to a table of many files"},
    {.name = "width", .arg = "PX", .kind = CLI_INTEGER, .offset = AT(width),
     .range = {100, 10000, 0, 0}, .help = ".png: width in pixels"},
    {.name = "height", .arg = "PX", .kind = CLI_INTEGER, .offset = AT(height),
     .range = {100, 10000, 0, 0}, .help = ".png: height in pixels"},
    {.name = "picture", .arg = "WHAT", .kind = CLI_STRING, .offset = AT(picture),
     .default_text = "history if the file has one, else surface",
     .help = ".png: 'history' (a plot of the optimization history) or 'surface' (a shaded "
             "picture of the surface that .stl writes, with --threshold, --label, --smooth, "
             "--triangles)"},
    {.name = "tile", .arg = "NXxNYxNZ", .kind = CLI_CUSTOM, .offset = AT(tile),
     .parse = parse_tile, .format = format_tile,
     .help = ".stl, .vtp, .vti, .vtu, .png surface: an array of NX x NY x NZ copies of the cell "
             "of a periodic design (N alone: N x N x N), as one closed surface or grid"},
    {.name = "view", .arg = "V", .kind = CLI_STRING, .offset = AT(view),
     .help = ".png surface: where the camera is: iso, x, y, z, -x, -y or -z (x: from the +x "
             "side)"},
    {.kind = CLI_END},
};

static const cli_program program = {
    .name = "voxfe-export",
    .args_doc = "INPUT.nc -o OUTPUT.vti|.vtu|.vtp|.pvd|.stl|.inp|.png|.json|.csv",
    .doc = "Writes a voxfe model or design file for other programs: VTK XML for ParaView, STL, "
           "a CalculiX/Abaqus deck, a plot of the optimization history, or a summary.",
    .options = options,
    .input = "INPUT.nc",
    .input_offset = AT(input),
};

/* --- the formats ------------------------------------------------------------ */

typedef struct format {
  const char *extension;
  vox_status (*write)(vox_context *ctx, const settings *s, const vox_model *model);
} format;

/* An analysis result's fields, reactions and summary (voxfe-analyze's
 * file), read once the model is; NULL for other files. */
static const vox_result_data *result;

static vox_status write_vti(vox_context *ctx, const settings *s, const vox_model *model) {
  return vox_write_result_vti(ctx, s->output, model, result);
}

static vox_status write_vtu(vox_context *ctx, const settings *s, const vox_model *model) {
  return vox_write_result_vtu(ctx, s->output, model, s->threshold, result);
}

/* The surface that .stl and .vtp write: of --label, or of the density at
 * --threshold, smoothed --smooth times, decimated to --triangles. */
static vox_status make_surface(vox_context *ctx, const settings *s, const vox_model *model,
                               vox_surface *surface) {
  vox_status st =
      s->label ? vox_isosurface_label_on(ctx, model, s->label, s->device, surface, NULL)
               : vox_isosurface_density_on(ctx, model, s->threshold, s->device, surface, NULL);
  if (st == VOX_OK && s->smooth > 0) st = vox_surface_smooth(ctx, surface, s->smooth);
  if (st == VOX_OK && s->triangles > 0)
    st = vox_surface_decimate(ctx, surface, (size_t)s->triangles);
  return st;
}

static vox_status write_stl(vox_context *ctx, const settings *s, const vox_model *model) {
  vox_surface surface = {0};
  vox_status st = make_surface(ctx, s, model, &surface);
  if (st == VOX_OK) st = vox_write_stl(ctx, s->output, &surface, !s->ascii);
  vox_surface_free(&surface);
  return st;
}

static vox_status write_vtp(vox_context *ctx, const settings *s, const vox_model *model) {
  vox_surface surface = {0};
  vox_status st = make_surface(ctx, s, model, &surface);
  if (st == VOX_OK) st = vox_write_vtp(ctx, s->output, &surface);
  vox_surface_free(&surface);
  return st;
}

static vox_status write_pvd(vox_context *ctx, const settings *s, const vox_model *model) {
  return vox_write_pvd(ctx, s->output, model);
}

static vox_status write_inp(vox_context *ctx, const settings *s, const vox_model *model) {
  return vox_write_inp(ctx, s->output, model, s->threshold);
}

static vox_status write_png(vox_context *ctx, const settings *s, const vox_model *model) {
  int surface_picture = s->picture ? strcmp(s->picture, "surface") == 0 : model->n_history == 0;
  if (!surface_picture) return vox_write_history_png(ctx, s->output, model, s->width, s->height);
  vox_render_options o = {.width = s->width, .height = s->height};
  vox_view_from_name(s->view, &o.view); /* checked in main */
  vox_surface surface = {0};
  vox_status st = make_surface(ctx, s, model, &surface);
  if (st == VOX_OK) st = vox_render_surface_png(ctx, s->output, &surface, &o);
  vox_surface_free(&surface);
  return st;
}

static vox_status write_json(vox_context *ctx, const settings *s, const vox_model *model) {
  return vox_write_result_summary_json(ctx, s->output, model, result);
}

static vox_status write_csv(vox_context *ctx, const settings *s, const vox_model *model) {
  return vox_write_result_summary_csv(ctx, s->output, model, result, !s->no_header);
}

static const format formats[] = {
    {".vti", write_vti}, {".vtu", write_vtu},   {".vtp", write_vtp}, {".pvd", write_pvd},
    {".stl", write_stl}, {".inp", write_inp},   {".png", write_png},
    {".json", write_json}, {".csv", write_csv},
};
#define N_FORMATS (sizeof formats / sizeof formats[0])

/* The format named by the output's extension, or NULL after a message. */
static const format *pick_format(const char *output) {
  const char *ext = cli_extension(output);
  for (size_t i = 0; i < N_FORMATS; i++)
    if (strcasecmp(ext, formats[i].extension) == 0) return &formats[i];
  cli_error("-o %s: unknown extension '%s'; expected .vti, .vtu, .vtp, .pvd, .stl, .inp, .png, "
            ".json or .csv",
            output, ext);
  return NULL;
}

int main(int argc, char **argv) {
  settings s = {.threshold = 0.5, .width = 1200, .height = 1000, .view = "iso", .tile = {1, 1, 1}};
  int status = cli_parse(&program, argc, argv, &s);
  if (status) return status;
  if (s.picture && strcmp(s.picture, "surface") != 0 && strcmp(s.picture, "history") != 0) {
    cli_error("--picture %s: expected 'surface' or 'history'", s.picture);
    return CLI_EXIT_USAGE;
  }
  if (vox_view_from_name(s.view, NULL) != 0) {
    cli_error("--view %s: expected iso, x, y, z, -x, -y or -z", s.view);
    return CLI_EXIT_USAGE;
  }
  const format *fmt = pick_format(s.output);
  if (!fmt) return CLI_EXIT_USAGE;
  const int tiled = s.tile[0] * s.tile[1] * s.tile[2] > 1;
  if (tiled && !(fmt->write == write_stl || fmt->write == write_vtp || fmt->write == write_vti ||
                 fmt->write == write_vtu || (fmt->write == write_png && s.picture &&
                                             strcmp(s.picture, "surface") == 0))) {
    cli_error("--tile: applies to .stl, .vtp, .vti, .vtu and .png --picture surface, not %s",
              cli_extension(s.output));
    return CLI_EXIT_USAGE;
  }
  const char *inputs[] = {s.input};
  if ((status = cli_check_output(s.output, inputs, 1))) return status;

  vox_context *ctx = cli_context();
  if (!ctx) return CLI_EXIT_FAILED;
  vox_model model = {0};
  status = cli_read_model(ctx, s.input, &model);
  vox_result_data result_data = {0};
  if (!status && model.stage == VOX_STAGE_ANALYSIS) {
    vox_status vs = vox_result_read(ctx, s.input, &model, &result_data);
    if (vs != VOX_OK) status = cli_fail(ctx, vs, CLI_READING);
    else result = &result_data;
  }
  if (!status && tiled) {
    /* the array replaces the cell; a refusal (too large) is bad input */
    vox_model array;
    const int tiles[3] = {(int)s.tile[0], (int)s.tile[1], (int)s.tile[2]};
    vox_status vs = vox_model_tile(ctx, &model, tiles, &array);
    vox_model_free(&model);
    result = NULL; /* a result's fields belong to the one cell */
    if (vs != VOX_OK)
      status = cli_fail(ctx, vs, CLI_RUNNING);
    else
      model = array;
  }
  if (!status) {
    vox_status vs = fmt->write(ctx, &s, &model);
    /* The writers convert and write in one call: a refusal (no voxel at or
     * above the threshold) is bad input like a running computation's, an
     * I/O error is a failed run. */
    if (vs != VOX_OK) status = cli_fail(ctx, vs, CLI_RUNNING);
  }
  vox_result_data_free(&result_data);
  vox_model_free(&model);
  vox_context_destroy(ctx);
  return status;
}
