/* SPDX-License-Identifier: BSD-3-Clause */
/* voxfe-voxelize: makes a model file from an input geometry and a problem
 * file (loads, supports, passive regions, material). The geometry is a box
 * of voxels, a surface mesh (import/mesh_*.c, docs/meshes.md) or a CT image
 * (import/image*.c, docs/images.md); each kind is an entry in `sources`. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include "cli_common.h"
#include "cli_files.h"
#include "cli_options.h"
#include "cli_progress.h"
#include "cli_solver_options.h"
#include "image_options.h"
#include "voxfe/image.h"
#include "voxfe/mesh.h"
#include "voxfe/model.h"
#include "voxfe/problem.h"

/* --image without -p: the scan's material unless the options say otherwise */
#define DEFAULT_MATERIAL "bone"
#define DEFAULT_YOUNGS_MODULUS 6829.0
#define DEFAULT_POISSON_RATIO 0.3

/* Largest grid size per axis; beyond it the node count would not fit. */
#define BOX_MAX 1000000

typedef struct settings {
  vox_write_options write;    /* --deflate-fields */
  const char *output;
  const char *problem;
  long long box[3];      /* NX, NY, NZ; 0 when --box is not given */
  double voxel_size[3];  /* mm; NaN when --voxel-size is not given */
  double origin[3];      /* mm; NaN when --origin is not given */
  /* --mesh */
  const char *mesh;       /* the design domain */
  const char *solid_mesh; /* --solid-mesh */
  const char *void_mesh;  /* --void-mesh */
  int resolution;         /* voxels along the part's longest side; 0: not given */
  int padding;            /* empty voxels around a mesh */
  vox_fill_rule fill;
  vox_device device;
  /* --image */
  const char *image;
  long long raw_size[3]; /* 0 when the image is not raw */
  vox_raw_type raw_type;
  int raw_big_endian;
  int raw_header;
  int crop;              /* margin; -1: no cropping */
  int downsample;
  vox_segmentation seg;
  int threshold_given;
  /* --image without -p: the material of the scan's bone */
  const char *material_name;
  double youngs_modulus, poisson_ratio;
  int verbose;
  int quiet;
} settings;

/* The stages of a long run (reading, filling, segmenting) on a terminal's
 * status line; nothing in a pipe or a log, where voxelize prints only
 * errors and notes. Every message ends the live line first. */
static cli_progress progress;

static int fail(const vox_context *ctx, vox_status status, cli_phase phase) {
  cli_progress_finish(&progress);
  return cli_fail(ctx, status, phase);
}

#define report_error(...) (cli_progress_finish(&progress), cli_error(__VA_ARGS__))

/* --- option values --------------------------------------------------------- */

static int parse_box(const char *what, const char *text, void *value) {
  cli_range range = {1, BOX_MAX, 0, 0};
  return cli_parse_integer_list(what, "NXxNYxNZ", text, 'x', 3, range, value);
}

/* Nothing when not given: the history then leaves it out. */
static void format_box(const void *value, char *buf, size_t size) {
  const long long *n = value;
  if (n[0] > 0)
    snprintf(buf, size, "%lldx%lldx%lld", n[0], n[1], n[2]);
  else
    buf[0] = '\0';
}

/* One edge length for cubes, or one per axis. */
static int parse_voxel_size(const char *what, const char *text, void *value) {
  cli_range positive = {VOX_VOXEL_SIZE_MIN, VOX_VOXEL_SIZE_MAX, 0, 0};
  double *h = value;
  if (cli_count_fields(text, ',') != 1)
    return cli_parse_real_list(what, "H or HX,HY,HZ", text, ',', 3, positive, h);
  if (cli_parse_real_list(what, "H or HX,HY,HZ", text, ',', 1, positive, h)) return -1;
  h[1] = h[2] = h[0];
  return 0;
}

static void format_voxel_size(const void *value, char *buf, size_t size) {
  const double *h = value;
  if (isnan(h[0])) {
    buf[0] = '\0'; /* not given: the image's */
    return;
  }
  cli_format_real_list(h, h[0] == h[1] && h[1] == h[2] ? 1 : 3, buf, size);
}

static int parse_point(const char *what, const char *text, void *value) {
  cli_range finite = {-VOX_ORIGIN_MAX, VOX_ORIGIN_MAX, 0, 0};
  return cli_parse_real_list(what, "X,Y,Z", text, ',', 3, finite, value);
}

static int parse_fill(const char *what, const char *text, void *value) {
  if (vox_fill_rule_parse(text, value) != 0) {
    report_error("%s: expected auto, parity or vote, got '%s'", what, text);
    return -1;
  }
  return 0;
}

static void format_fill(const void *value, char *buf, size_t size) {
  snprintf(buf, size, "%s", vox_fill_rule_name(*(const vox_fill_rule *)value));
}

static void format_origin(const void *value, char *buf, size_t size) {
  const double *p = value;
  if (isnan(p[0]))
    buf[0] = '\0'; /* not given: 0 for a box, the file's for an image */
  else
    cli_format_real_list(p, 3, buf, size);
}

#define AT(member) offsetof(settings, member)

static const cli_option options[] = {
    {.kind = CLI_HEADING, .help = "Geometry (give one):"},
    {.name = "box", .arg = "NXxNYxNZ", .kind = CLI_CUSTOM, .offset = AT(box),
     .flags = CLI_RECORD | CLI_NO_DEFAULT,
     .help = "a box of NX by NY by NZ voxels, all of the design material",
     .parse = parse_box, .format = format_box},
    {.name = "mesh", .arg = "FILE", .kind = CLI_STRING, .offset = AT(mesh),
     .help = "the design domain: the solid a closed surface mesh bounds (STL, OBJ, PLY, OFF, "
             "3MF, ...), coordinates in mm"},
    {.name = "solid-mesh", .arg = "FILE", .kind = CLI_STRING, .offset = AT(solid_mesh),
     .help = "with --mesh: a passive solid (label 2), added even outside the design mesh"},
    {.name = "void-mesh", .arg = "FILE", .kind = CLI_STRING, .offset = AT(void_mesh),
     .help = "with --mesh: a passive void (label 3) cut from the design domain"},
    {.name = "image", .arg = "PATH", .kind = CLI_STRING, .offset = AT(image),
     .flags = CLI_RECORD | CLI_NO_DEFAULT,
     .help = "a CT image: a folder of DICOM files (one series) or TIFF slices, or a .dcm, "
             ".tif, .nii, .nii.gz, .mhd, .mha or .aim file (docs/images.md)"},

    {.kind = CLI_HEADING, .help = "Raw images (--image FILE of bare voxels, x fastest):"},
    {.name = "raw-size", .arg = "NXxNYxNZ", .kind = CLI_CUSTOM, .offset = AT(raw_size),
     .flags = CLI_RECORD | CLI_NO_DEFAULT, .help = "read --image as raw voxels of this size",
     .parse = parse_box, .format = format_box},
    {.name = "raw-type", .arg = "TYPE", .kind = CLI_CUSTOM, .offset = AT(raw_type),
     .help = "voxel type: uint8, int8, uint16, int16, uint32, int32, float32, float64",
     .parse = image_parse_raw_type, .format = image_format_raw_type},
    {.name = "raw-big-endian", .kind = CLI_ENABLE, .offset = AT(raw_big_endian),
     .help = "the raw voxels are big-endian (default: little-endian)"},
    {.name = "raw-header", .arg = "BYTES", .kind = CLI_INTEGER, .offset = AT(raw_header),
     .range = {0, 2147483647, 0, 0}, .help = "bytes to skip at the start of the raw file"},

    {.kind = CLI_HEADING, .help = "Segmentation (with --image):"},
    {.name = "threshold", .arg = "T", .kind = CLI_CUSTOM, .offset = AT(seg),
     .flags = CLI_RECORD | CLI_NO_DEFAULT,
     .help = "material where the value >= T; otsu for Otsu's threshold; T1,T2,... for "
             "several classes (see --labels)",
     .parse = image_parse_thresholds, .format = image_format_thresholds},
    {.name = "threshold-units", .arg = "UNITS", .kind = CLI_CUSTOM, .offset = AT(seg.units),
     .help = "units of the thresholds and of --keep-intensity: file (as stored; DICOM "
             "rescaled), hu, or density (through --calibration or the file's)",
     .parse = image_parse_units, .format = image_format_units},
    {.name = "calibration", .arg = "SLOPE,INTERCEPT", .kind = CLI_CUSTOM,
     .offset = AT(seg.calibration), .flags = CLI_RECORD,
     .help = "density = SLOPE * value + INTERCEPT (value in file units)",
     .default_text = "the file's (AIM)",
     .parse = image_parse_calibration, .format = image_format_calibration},
    {.name = "labels", .arg = "L1,L2,...", .kind = CLI_CUSTOM, .offset = AT(seg.labels),
     .flags = CLI_RECORD,
     .help = "label of each class above T1, T2, ... (1 = design, 2 = passive solid)",
     .default_text = "1,4,5,...",
     .parse = image_parse_labels, .format = image_format_labels},
    {.name = "largest-component", .kind = CLI_ENABLE, .offset = AT(seg.keep_largest),
     .flags = CLI_RECORD,
     .help = "keep only the largest face-connected piece of material"},
    {.name = "crop", .arg = "MARGIN", .kind = CLI_INTEGER, .offset = AT(crop),
     .range = {0, 1e9, 0, 0}, .default_text = "no cropping",
     .help = "crop to the material's bounding box plus MARGIN voxels"},
    {.name = "downsample", .arg = "F", .kind = CLI_INTEGER, .offset = AT(downsample),
     .range = {1, 1000, 0, 0},
     .help = "merge blocks of FxFxF voxels into one"},
    {.name = "downsample-mode", .arg = "MODE", .kind = CLI_CUSTOM,
     .offset = AT(seg.downsample_mode),
     .help = "majority (vote of the labels) or mean (average the values, then threshold)",
     .parse = image_parse_downsample_mode, .format = image_format_downsample_mode},
    {.name = "roi", .arg = "X0:X1,Y0:Y1,Z0:Z1", .kind = CLI_CUSTOM, .offset = AT(seg.roi_lo),
     .flags = CLI_RECORD, .help = "use only these voxels of the image (indices, end excluded)",
     .default_text = "the whole image",
     .parse = image_parse_roi, .format = image_format_roi},
    {.name = "keep-intensity", .kind = CLI_ENABLE, .offset = AT(seg.keep_intensity),
     .flags = CLI_RECORD,
     .help = "store the image values (in --threshold-units) in the model as 'intensity'"},

    {.kind = CLI_HEADING, .help = "Grid:"},
    {.name = "voxel-size", .arg = "H", .kind = CLI_CUSTOM, .offset = AT(voxel_size),
     .flags = CLI_RECORD | CLI_NO_DEFAULT,
     .help = "voxel edge length in mm: H, or HX,HY,HZ (needed with --box; with --mesh, this "
             "or --resolution; with --image it overrides the file's)",
     .parse = parse_voxel_size, .format = format_voxel_size},
    {.name = "origin", .arg = "X,Y,Z", .kind = CLI_CUSTOM, .offset = AT(origin),
     .flags = CLI_RECORD,
     .help = "coordinates of the grid's first corner, mm (not with --mesh: its grid lies on "
             "the mesh's own coordinates)",
     .default_text = "0,0,0 for --box; from the file for --image",
     .parse = parse_point, .format = format_origin},
    {.name = "resolution", .arg = "N", .kind = CLI_INTEGER, .offset = AT(resolution),
     .range = {1, 100000, 0, 0}, .flags = CLI_RECORD | CLI_NO_DEFAULT,
     .help = "with --mesh: cubic voxels, N along the longest side of the part"},
    {.name = "padding", .arg = "N", .kind = CLI_INTEGER, .offset = AT(padding),
     .range = {0, 100000, 0, 0}, .flags = CLI_RECORD,
     .help = "with --mesh: empty voxels around the part on every side"},
    {.name = "fill", .arg = "RULE", .kind = CLI_CUSTOM, .offset = AT(fill), .flags = CLI_RECORD,
     .help = "with --mesh: inside by ray parity (closed surfaces), by a vote of six rays "
             "(holes, gaps), or auto (parity when the mesh is closed)",
     .parse = parse_fill, .format = format_fill},
    {.name = "device", .arg = "DEV", .kind = CLI_CUSTOM, .offset = AT(device),
     .flags = CLI_RECORD, .help = "with --mesh: cpu, cuda or auto (the GPU for large grids)",
     .parse = cli_parse_device, .format = cli_format_device},

    {.kind = CLI_HEADING, .help = "Problem and output:"},
    {.name = "problem", .key = 'p', .arg = "FILE", .kind = CLI_STRING, .offset = AT(problem),
     .help = "problem file (YAML): material, supports, loads, passive regions; required "
             "with --box and --mesh; without it, --image makes a model of the scan's "
             "material alone (--material, --youngs-modulus, --poisson-ratio), no supports "
             "and no loads, for voxfe-analyze's standard tests, which bring their own"},
    /* (not recorded: the model file's material table holds them) */
    {.name = "material", .arg = "NAME", .kind = CLI_STRING, .offset = AT(material_name),
     .default_text = DEFAULT_MATERIAL, .help = "--image without -p: the name of the material"},
    {.name = "youngs-modulus", .arg = "E", .kind = CLI_REAL, .offset = AT(youngs_modulus),
     .range = {0, INFINITY, 1, 0}, .default_text = "6829",
     .help = "--image without -p: Young's modulus of the material, MPa (6829: the tissue "
             "modulus of first-generation HR-pQCT studies; 8748 for the second generation)"},
    {.name = "poisson-ratio", .arg = "NU", .kind = CLI_REAL, .offset = AT(poisson_ratio),
     .range = {-1, 0.5, 1, 1}, .default_text = "0.3",
     .help = "--image without -p: Poisson's ratio of the material"},
    {.name = "output", .key = 'o', .arg = "FILE", .kind = CLI_STRING, .offset = AT(output),
     .flags = CLI_REQUIRED, .help = "model file to write (netCDF)"},
    {.name = "deflate-fields", .kind = CLI_ENABLE, .offset = AT(write.deflate_fields),
     .flags = CLI_RECORD, .help = CLI_DEFLATE_FIELDS_HELP},
    {.name = "verbose", .key = 'v', .kind = CLI_ENABLE, .offset = AT(verbose),
     .help = "say what was read and segmented (on stderr)"},
    {.name = "quiet", .key = 'q', .kind = CLI_ENABLE, .offset = AT(quiet),
     .help = "no progress line on a terminal (a pipe never gets one)"},
    {.kind = CLI_END},
};

static const cli_program program = {
    .name = "voxfe-voxelize",
    .args_doc = "--box NXxNYxNZ --voxel-size H -p FILE -o FILE\n"
                "--mesh FILE (--voxel-size H | --resolution N) -p FILE -o FILE\n"
                "--image PATH --threshold T [-p FILE] -o FILE",
    .doc = "Makes a voxfe model file: a voxel grid with the material, supports and loads "
           "of a problem file.\n\n"
           /* one example a paragraph: help2man joins consecutive indented lines */
           "  voxfe-voxelize --box 48x24x24 --voxel-size 1 -p cantilever.yaml -o model.nc\n\n"
           "  voxfe-voxelize --mesh bracket.stl --resolution 200 -p bracket.yaml -o model.nc\n\n"
           "  voxfe-voxelize --image scan/ --threshold 400 --threshold-units hu "
           "--largest-component --crop 2 -p bone.yaml -o model.nc\n\n"
           "  voxfe-voxelize --image radius.aim --threshold 320 --threshold-units density "
           "--youngs-modulus 8748 -o radius.nc # for voxfe-analyze",
    .options = options,
};

/* --- the geometry sources ------------------------------------------------- */

/* A kind of input a grid is made from. Exactly one is given; each fills
 * model->grid and model->label (label 1: the design material). */
typedef struct source {
  const char *option;                             /* as the user gives it */
  int (*given)(const settings *s);
  const char *(*input_file)(const settings *s);   /* an input file, or NULL */
  int (*build)(vox_context *ctx, const settings *s, vox_model *model); /* exit status */
} source;

static int box_given(const settings *s) { return s->box[0] > 0; }

static const char *box_file(const settings *s) { return NULL; }

static int box_build(vox_context *ctx, const settings *s, vox_model *model) {
  if (isnan(s->voxel_size[0])) {
    report_error("--box needs --voxel-size H");
    return CLI_EXIT_USAGE;
  }
  vox_grid grid = {.nx = s->box[0], .ny = s->box[1], .nz = s->box[2]};
  for (int a = 0; a < 3; a++) {
    grid.voxel_size[a] = s->voxel_size[a];
    grid.origin[a] = isnan(s->origin[a]) ? 0 : s->origin[a];
  }
  vox_status vs = vox_model_init(ctx, model, &grid);
  if (vs != VOX_OK) return fail(ctx, vs, CLI_RUNNING);
  memset(model->label, 1, (size_t)vox_grid_elements(&grid));
  return 0;
}

static int mesh_given(const settings *s) { return s->mesh != NULL; }

static const char *mesh_file(const settings *s) { return s->mesh; }

/* Largest mesh grid: the labels and one scratch byte per voxel. */
#define MESH_MAX_ELEMENTS ((int64_t)1 << 34)

static int mesh_build(vox_context *ctx, const settings *s, vox_model *model) {
  if (!isnan(s->origin[0])) {
    report_error("--origin is for --box; a mesh's grid lies on the mesh's own coordinates");
    return CLI_EXIT_USAGE;
  }
  if (isnan(s->voxel_size[0]) == !s->resolution) {
    report_error("--mesh needs one of --voxel-size H and --resolution N");
    return CLI_EXIT_USAGE;
  }
  vox_mesh_inputs in = {.design = s->mesh, .solid = s->solid_mesh, .empty = s->void_mesh,
                        .resolution = s->resolution, .padding = s->padding,
                        .max_elements = MESH_MAX_ELEMENTS, .rule = s->fill,
                        .device = s->device};
  memcpy(in.voxel_size, s->voxel_size, sizeof in.voxel_size);
  vox_mesh_fill_info info[3] = {{0}};
  vox_status vs = vox_model_from_meshes(ctx, &in, model, info);
  if (vs != VOX_OK) return fail(ctx, vs, CLI_READING);
  /* A mesh with holes is filled all the same, but its owner should know:
   * one note per such mesh, on stderr. */
  const char *paths[3] = {s->mesh, s->solid_mesh, s->void_mesh};
  cli_progress_finish(&progress);
  for (int i = 0; i < 3; i++)
    if (paths[i] && info[i].open_edges)
      fprintf(stderr, "%s: note: %s is not closed (%lld edges with an odd number of "
                      "triangles); filled by %s\n",
              cli_program_name(), paths[i], (long long)info[i].open_edges,
              info[i].rule == VOX_FILL_VOTE ? "the vote of six rays"
                                            : "ray parity, as asked: holes may leak");
  return 0;
}

static int image_given(const settings *s) { return s->image != NULL; }

static const char *image_file(const settings *s) { return s->image; }

static int image_build(vox_context *ctx, const settings *s, vox_model *model) {
  if (!s->threshold_given) {
    report_error("--image needs --threshold T (or --threshold otsu)");
    return CLI_EXIT_USAGE;
  }
  vox_image image;
  vox_status vs;
  if (s->raw_size[0] > 0) {
    vox_raw_layout layout = {.n = {s->raw_size[0], s->raw_size[1], s->raw_size[2]},
                             .type = s->raw_type, .big_endian = s->raw_big_endian,
                             .header_bytes = (uint64_t)s->raw_header};
    vs = vox_image_read_raw(ctx, s->image, &layout, &image);
  } else {
    vs = vox_image_read(ctx, s->image, &image);
  }
  if (vs != VOX_OK) return fail(ctx, vs, CLI_READING);
  if (!isnan(s->voxel_size[0])) {
    /* a file without a voxel size gives no position either: its corner at
     * 0, as a TIFF stack's with a size */
    for (int a = 0; a < 3; a++) {
      if (!image.spacing_known) image.origin[a] = 0.5 * s->voxel_size[a];
      image.spacing[a] = s->voxel_size[a];
    }
    image.spacing_known = 1;
  }
  if (!image.spacing_known) {
    report_error("%s: the file gives no voxel size: give --voxel-size H", s->image);
    vox_image_free(&image);
    return CLI_EXIT_USAGE;
  }
  for (int a = 0; a < 3; a++)
    if (image.spacing[a] * s->downsample > VOX_VOXEL_SIZE_MAX) {
      report_error("%s: --downsample %d makes voxels of %g mm along %c, more than %g mm",
                   s->image, s->downsample, image.spacing[a] * s->downsample, "xyz"[a],
                   VOX_VOXEL_SIZE_MAX);
      vox_image_free(&image);
      return CLI_EXIT_USAGE;
    }
  char what[160];
  snprintf(what, sizeof what, "%lldx%lldx%lld %s image, voxels %gx%gx%g mm", (long long)image.n[0],
           (long long)image.n[1], (long long)image.n[2], image.format, image.spacing[0],
           image.spacing[1], image.spacing[2]);
  vox_segmentation seg = s->seg;
  seg.crop = s->crop >= 0;
  seg.crop_margin = s->crop;
  seg.downsample = s->downsample;
  seg.roi_given = seg.roi_hi[0] > 0;
  vox_segmentation_report report;
  vs = vox_image_segment(ctx, s->image, &image, &seg, model, &report);
  if (vs != VOX_OK) return fail(ctx, vs, CLI_READING);
  if (!isnan(s->origin[0]))
    for (int a = 0; a < 3; a++) model->grid.origin[a] = s->origin[a];
  cli_progress_finish(&progress);
  if (s->verbose) {
    fprintf(stderr, "%s: %s: %s\n", cli_program_name(), s->image, what);
    for (int c = 0; c < report.n_thresholds; c++)
      fprintf(stderr, "%s: threshold %d: %g %s\n", cli_program_name(), c + 1,
              report.thresholds[c], report.units);
    fprintf(stderr, "%s: %lld voxels labelled, %lld kept; model %lldx%lldx%lld\n",
            cli_program_name(), (long long)report.labelled, (long long)report.kept,
            (long long)model->grid.nx, (long long)model->grid.ny, (long long)model->grid.nz);
  }
  return 0;
}

static const source sources[] = {
    {"--box", box_given, box_file, box_build},
    {"--mesh", mesh_given, mesh_file, mesh_build},
    {"--image", image_given, image_file, image_build},
};
#define N_SOURCES (sizeof sources / sizeof sources[0])

/* The one source given, or NULL after a usage message. */
static const source *pick_source(const settings *s) {
  const source *picked = NULL;
  for (size_t i = 0; i < N_SOURCES; i++) {
    if (!sources[i].given(s)) continue;
    if (picked) {
      report_error("give only one of %s and %s", picked->option, sources[i].option);
      return NULL;
    }
    picked = &sources[i];
  }
  if (!picked)
    report_error("missing the geometry: give --box NXxNYxNZ, --mesh FILE or --image PATH");
  return picked;
}

/* --- the run --------------------------------------------------------------- */

static int run(vox_context *ctx, const settings *s, const source *src, int argc, char **argv) {
  vox_problem problem = {0};
  vox_model model = {0};
  char *history = NULL;
  /* The problem first: a bad problem file fails before a large grid is
   * allocated. */
  vox_status vs = s->problem ? vox_problem_read(ctx, s->problem, &problem) : VOX_OK;
  int status = vs == VOX_OK ? 0 : fail(ctx, vs, CLI_READING);
  if (status || (status = src->build(ctx, s, &model))) goto done;

  /* A problem that does not fit this grid (a region that selects nothing)
   * is bad input. Without one, a scan gets its material alone. */
  if (s->problem) {
    vs = vox_problem_rasterize(ctx, &problem, &model);
    /* the problem file is what is wrong: its name leads the line */
    if (vs != VOX_OK && vs != VOX_ERR_NO_MEMORY) {
      char message[1024];
      snprintf(message, sizeof message, "%s", vox_context_message(ctx));
      vs = vox_error(ctx, vs, "%s: %s", s->problem, message);
    }
  } else {
    vox_material material = {.role = VOX_ROLE_DESIGN, .youngs_modulus = s->youngs_modulus,
                             .poisson_ratio = s->poisson_ratio, .conductivity = 1};
    snprintf(material.name, sizeof material.name, "%s", s->material_name);
    vs = vox_problem_materials(ctx, &material, &model);
  }
  if (vs != VOX_OK) {
    status = fail(ctx, vs, CLI_READING);
    goto done;
  }
  history = cli_history_line(&program, s, argc, argv);
  cli_progress_finish(&progress);
  status = cli_write_model(ctx, s->output, &model, history, &s->write);
done:
  cli_progress_finish(&progress);
  free(history);
  vox_model_free(&model);
  vox_problem_free(&problem);
  return status;
}

int main(int argc, char **argv) {
  settings s = {.voxel_size = {NAN, NAN, NAN},
                .origin = {NAN, NAN, NAN},
                .youngs_modulus = NAN,
                .poisson_ratio = NAN,
                .raw_type = VOX_RAW_U16,
                .crop = -1,
                .downsample = 1,
                .seg = {.units = VOX_UNITS_FILE, .n_thresholds = 1, .thresholds = {NAN}}};
  int status = cli_parse(&program, argc, argv, &s);
  if (status) return status;
  s.threshold_given = s.seg.otsu || s.seg.n_thresholds > 1 || !isnan(s.seg.thresholds[0]);
  const source *src = pick_source(&s);
  if (!src) return CLI_EXIT_USAGE;
  if ((s.solid_mesh || s.void_mesh) && !s.mesh) {
    report_error("--solid-mesh and --void-mesh go with --mesh");
    return CLI_EXIT_USAGE;
  }
  /* a box or a part to optimize needs its supports and loads; a scan for
   * voxfe-analyze does not */
  if (!s.problem && src->build != image_build) {
    report_error("%s needs a problem file: give -p FILE", src->option);
    return CLI_EXIT_USAGE;
  }
  if (s.problem && (s.material_name || !isnan(s.youngs_modulus) || !isnan(s.poisson_ratio))) {
    report_error("--material, --youngs-modulus and --poisson-ratio are for --image without -p; "
                 "the problem file gives the material");
    return CLI_EXIT_USAGE;
  }
  if (!s.material_name) s.material_name = DEFAULT_MATERIAL;
  if (isnan(s.youngs_modulus)) s.youngs_modulus = DEFAULT_YOUNGS_MODULUS;
  if (isnan(s.poisson_ratio)) s.poisson_ratio = DEFAULT_POISSON_RATIO;
  const char *inputs[] = {s.problem, src->input_file(&s), s.solid_mesh, s.void_mesh};
  if ((status = cli_check_output(s.output, inputs, 4))) return status;

  vox_context *ctx = cli_context();
  if (!ctx) return CLI_EXIT_FAILED;
  cli_progress_init(&progress, stderr, s.quiet || !isatty(fileno(stderr)), 0);
  vox_context_set_progress(ctx, cli_progress_report, &progress);
  status = run(ctx, &s, src, argc, argv);
  vox_context_destroy(ctx);
  return status;
}
