/* voxfe-voxelize: makes a model file from an input geometry and a problem
 * file (loads, supports, passive regions, material). The geometry is a box
 * of voxels or a surface mesh (import/mesh_*.c); each kind is an entry in
 * `sources`. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_common.h"
#include "cli_files.h"
#include "cli_options.h"
#include "voxfe/mesh.h"
#include "voxfe/model.h"
#include "voxfe/problem.h"

/* Largest grid size per axis; beyond it the node count would not fit. */
#define BOX_MAX 1000000

typedef struct settings {
  const char *output;
  const char *problem;
  long long box[3];      /* NX, NY, NZ; 0 when --box is not given */
  double voxel_size[3];  /* mm; NaN when --voxel-size is not given */
  double origin[3];      /* mm */
  int origin_given;
  const char *mesh;       /* --mesh: the design domain */
  const char *solid_mesh; /* --solid-mesh */
  const char *void_mesh;  /* --void-mesh */
  int resolution;         /* voxels along the part's longest side; 0: not given */
  int padding;            /* empty voxels around a mesh */
  vox_fill_rule fill;
  vox_device device;
} settings;

/* --- option values --------------------------------------------------------- */

static int parse_box(const char *what, const char *text, void *value) {
  cli_range range = {1, BOX_MAX, 0, 0};
  return cli_parse_integer_list(what, "NXxNYxNZ", text, 'x', 3, range, value);
}

static void format_box(const void *value, char *buf, size_t size) {
  const long long *n = value;
  snprintf(buf, size, "%lldx%lldx%lld", n[0], n[1], n[2]);
}

/* One edge length for cubes, or one per axis. */
static int parse_voxel_size(const char *what, const char *text, void *value) {
  cli_range positive = {0, INFINITY, 1, 0};
  double *h = value;
  if (cli_count_fields(text, ',') != 1)
    return cli_parse_real_list(what, "H or HX,HY,HZ", text, ',', 3, positive, h);
  if (cli_parse_real_list(what, "H or HX,HY,HZ", text, ',', 1, positive, h)) return -1;
  h[1] = h[2] = h[0];
  return 0;
}

static void format_reals(const double *v, int n, char *buf, size_t size) {
  size_t len = 0;
  buf[0] = '\0';
  for (int i = 0; i < n && len + 1 < size; i++) {
    if (i) buf[len++] = ',';
    cli_format_real(v[i], buf + len, size - len);
    len += strlen(buf + len);
  }
}

static void format_voxel_size(const void *value, char *buf, size_t size) {
  const double *h = value;
  format_reals(h, h[0] == h[1] && h[1] == h[2] ? 1 : 3, buf, size);
}

/* The origin; settings.origin_given follows it (a mesh places its own grid). */
static int parse_point(const char *what, const char *text, void *value) {
  cli_range any = {-INFINITY, INFINITY, 0, 0};
  int status = cli_parse_real_list(what, "X,Y,Z", text, ',', 3, any, value);
  if (!status)
    *(int *)((char *)value + offsetof(settings, origin_given) - offsetof(settings, origin)) = 1;
  return status;
}

static int parse_fill(const char *what, const char *text, void *value) {
  if (vox_fill_rule_parse(text, value) != 0) {
    cli_error("%s: expected auto, parity or vote, got '%s'", what, text);
    return -1;
  }
  return 0;
}

static void format_fill(const void *value, char *buf, size_t size) {
  snprintf(buf, size, "%s", vox_fill_rule_name(*(const vox_fill_rule *)value));
}

static int parse_device(const char *what, const char *text, void *value) {
  if (vox_device_parse(text, value) != 0) {
    cli_error("%s: expected cpu, cuda or auto, got '%s'", what, text);
    return -1;
  }
  return 0;
}

static void format_device(const void *value, char *buf, size_t size) {
  vox_device d = *(const vox_device *)value;
  snprintf(buf, size, "%s", d == VOX_DEVICE_CPU ? "cpu" : d == VOX_DEVICE_CUDA ? "cuda" : "auto");
}

static void format_point(const void *value, char *buf, size_t size) {
  format_reals(value, 3, buf, size);
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

    {.kind = CLI_HEADING, .help = "Grid:"},
    {.name = "voxel-size", .arg = "H", .kind = CLI_CUSTOM, .offset = AT(voxel_size),
     .flags = CLI_RECORD | CLI_NO_DEFAULT,
     .help = "voxel edge length in mm: H, or HX,HY,HZ (needed with --box; with --mesh, this "
             "or --resolution)",
     .parse = parse_voxel_size, .format = format_voxel_size},
    {.name = "origin", .arg = "X,Y,Z", .kind = CLI_CUSTOM, .offset = AT(origin),
     .flags = CLI_RECORD, .help = "coordinates of the grid's first corner, mm (--box only)",
     .parse = parse_point, .format = format_point},
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
     .parse = parse_device, .format = format_device},

    {.kind = CLI_HEADING, .help = "Problem and output:"},
    {.name = "problem", .key = 'p', .arg = "FILE", .kind = CLI_STRING, .offset = AT(problem),
     .flags = CLI_REQUIRED,
     .help = "problem file (YAML): material, supports, loads, passive regions"},
    {.name = "output", .key = 'o', .arg = "FILE", .kind = CLI_STRING, .offset = AT(output),
     .flags = CLI_REQUIRED, .help = "model file to write (netCDF)"},
    {.kind = CLI_END},
};

static const cli_program program = {
    .name = "voxfe-voxelize",
    .args_doc = "--box NXxNYxNZ --voxel-size H -p FILE -o FILE\n"
                "--mesh FILE (--voxel-size H | --resolution N) -p FILE -o FILE",
    .doc = "Makes a voxfe model file: a voxel grid with the material, supports and loads "
           "of a problem file.\n\n"
           "  voxfe-voxelize --box 48x24x24 --voxel-size 1 -p cantilever.yaml -o model.nc\n"
           "  voxfe-voxelize --mesh bracket.stl --resolution 200 -p bracket.yaml -o model.nc",
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
    cli_error("--box needs --voxel-size H");
    return CLI_EXIT_USAGE;
  }
  vox_grid grid = {.nx = s->box[0], .ny = s->box[1], .nz = s->box[2]};
  for (int a = 0; a < 3; a++) {
    grid.voxel_size[a] = s->voxel_size[a];
    grid.origin[a] = s->origin[a];
  }
  vox_status vs = vox_model_init(ctx, model, &grid);
  if (vs != VOX_OK) return cli_fail(ctx, vs, CLI_RUNNING);
  memset(model->label, 1, (size_t)vox_grid_elements(&grid));
  return 0;
}

static int mesh_given(const settings *s) { return s->mesh != NULL; }

static const char *mesh_file(const settings *s) { return s->mesh; }

/* Largest mesh grid: the labels and one scratch byte per voxel. */
#define MESH_MAX_ELEMENTS ((int64_t)1 << 34)

static int mesh_build(vox_context *ctx, const settings *s, vox_model *model) {
  if (s->origin_given) {
    cli_error("--origin is for --box; a mesh's grid lies on the mesh's own coordinates");
    return CLI_EXIT_USAGE;
  }
  if (isnan(s->voxel_size[0]) == !s->resolution) {
    cli_error("--mesh needs one of --voxel-size H and --resolution N");
    return CLI_EXIT_USAGE;
  }
  vox_mesh_inputs in = {.design = s->mesh, .solid = s->solid_mesh, .empty = s->void_mesh,
                        .resolution = s->resolution, .padding = s->padding,
                        .max_elements = MESH_MAX_ELEMENTS, .rule = s->fill,
                        .device = s->device};
  memcpy(in.voxel_size, s->voxel_size, sizeof in.voxel_size);
  vox_mesh_fill_info info[3] = {{0}};
  vox_status vs = vox_model_from_meshes(ctx, &in, model, info);
  if (vs != VOX_OK) return cli_fail(ctx, vs, CLI_READING);
  /* A mesh with holes is filled all the same, but its owner should know:
   * one note per such mesh, on stderr. */
  const char *paths[3] = {s->mesh, s->solid_mesh, s->void_mesh};
  for (int i = 0; i < 3; i++)
    if (paths[i] && info[i].open_edges)
      fprintf(stderr, "%s: note: %s is not closed (%lld edges with an odd number of "
                      "triangles); filled by %s\n",
              cli_program_name(), paths[i], (long long)info[i].open_edges,
              info[i].rule == VOX_FILL_VOTE ? "the vote of six rays"
                                            : "ray parity, as asked: holes may leak");
  return 0;
}

static const source sources[] = {
    {"--box", box_given, box_file, box_build},
    {"--mesh", mesh_given, mesh_file, mesh_build},
};
#define N_SOURCES (sizeof sources / sizeof sources[0])

/* The one source given, or NULL after a usage message. */
static const source *pick_source(const settings *s) {
  const source *picked = NULL;
  for (size_t i = 0; i < N_SOURCES; i++) {
    if (!sources[i].given(s)) continue;
    if (picked) {
      cli_error("give only one of %s and %s", picked->option, sources[i].option);
      return NULL;
    }
    picked = &sources[i];
  }
  if (!picked) cli_error("missing the geometry: give --box NXxNYxNZ or --mesh FILE");
  return picked;
}

/* --- the run --------------------------------------------------------------- */

static int run(vox_context *ctx, const settings *s, const source *src, int argc, char **argv) {
  vox_problem problem = {0};
  vox_model model = {0};
  char *history = NULL;
  /* The problem first: a bad problem file fails before a large grid is
   * allocated. */
  vox_status vs = vox_problem_read(ctx, s->problem, &problem);
  int status = vs == VOX_OK ? 0 : cli_fail(ctx, vs, CLI_READING);
  if (status || (status = src->build(ctx, s, &model))) goto done;

  /* A problem that does not fit this grid (a region that selects nothing)
   * is bad input. */
  vs = vox_problem_rasterize(ctx, &problem, &model);
  if (vs != VOX_OK) {
    status = cli_fail(ctx, vs, CLI_READING);
    goto done;
  }
  history = cli_history_line(&program, s, argc, argv);
  status = cli_write_model(ctx, s->output, &model, history);
done:
  free(history);
  vox_model_free(&model);
  vox_problem_free(&problem);
  return status;
}

int main(int argc, char **argv) {
  settings s = {.voxel_size = {NAN, NAN, NAN}};
  int status = cli_parse(&program, argc, argv, &s);
  if (status) return status;
  const source *src = pick_source(&s);
  if (!src) return CLI_EXIT_USAGE;
  if ((s.solid_mesh || s.void_mesh) && !s.mesh) {
    cli_error("--solid-mesh and --void-mesh go with --mesh");
    return CLI_EXIT_USAGE;
  }
  const char *inputs[] = {s.problem, src->input_file(&s), s.solid_mesh, s.void_mesh};
  if ((status = cli_check_output(s.output, inputs, 4))) return status;

  vox_context *ctx = cli_context();
  if (!ctx) return CLI_EXIT_FAILED;
  status = run(ctx, &s, src, argc, argv);
  vox_context_destroy(ctx);
  return status;
}
