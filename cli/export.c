/* voxfe-export: writes a model or design file in a format other programs
 * open (ParaView's VTK XML for now), chosen by the extension of -o. */
#include <stddef.h>
#include <strings.h>

#include "cli_common.h"
#include "cli_files.h"
#include "cli_options.h"
#include "voxfe/vtk.h"

typedef struct settings {
  const char *input;
  const char *output;
  double threshold;
} settings;

#define AT(member) offsetof(settings, member)

static const cli_option options[] = {
    {.name = "output", .key = 'o', .arg = "FILE", .kind = CLI_STRING, .offset = AT(output),
     .flags = CLI_REQUIRED,
     .help = "file to write; its extension picks the format: .vti (the whole grid) or .vtu "
             "(the kept voxels as hexahedra)"},
    {.name = "threshold", .arg = "T", .kind = CLI_REAL, .offset = AT(threshold),
     .range = {0, 1, 0, 0},
     .help = ".vtu only: keep the voxels whose density is at least T"},
    {.kind = CLI_END},
};

static const cli_program program = {
    .name = "voxfe-export",
    .args_doc = "INPUT.nc -o OUTPUT.vti|OUTPUT.vtu",
    .doc = "Writes a voxfe model or design file as VTK XML for ParaView.",
    .options = options,
    .input = "INPUT.nc",
    .input_offset = AT(input),
};

/* --- the formats ------------------------------------------------------------ */

typedef struct format {
  const char *extension;
  vox_status (*write)(vox_context *ctx, const settings *s, const vox_model *model);
} format;

static vox_status write_vti(vox_context *ctx, const settings *s, const vox_model *model) {
  return vox_write_vti(ctx, s->output, model);
}

static vox_status write_vtu(vox_context *ctx, const settings *s, const vox_model *model) {
  return vox_write_vtu(ctx, s->output, model, s->threshold);
}

static const format formats[] = {
    {".vti", write_vti},
    {".vtu", write_vtu},
};
#define N_FORMATS (sizeof formats / sizeof formats[0])

/* The format named by the output's extension, or NULL after a message. */
static const format *pick_format(const char *output) {
  const char *ext = cli_extension(output);
  for (size_t i = 0; i < N_FORMATS; i++)
    if (strcasecmp(ext, formats[i].extension) == 0) return &formats[i];
  cli_error("-o %s: unknown extension '%s'; expected .vti or .vtu", output, ext);
  return NULL;
}

int main(int argc, char **argv) {
  settings s = {.threshold = 0.5};
  int status = cli_parse(&program, argc, argv, &s);
  if (status) return status;
  const format *fmt = pick_format(s.output);
  if (!fmt) return CLI_EXIT_USAGE;
  const char *inputs[] = {s.input};
  if ((status = cli_check_output(s.output, inputs, 1))) return status;

  vox_context *ctx = cli_context();
  if (!ctx) return CLI_EXIT_FAILED;
  vox_model model = {0};
  status = cli_read_model(ctx, s.input, &model);
  if (!status) {
    vox_status vs = fmt->write(ctx, &s, &model);
    /* The writers convert and write in one call: a refusal (no voxel at or
     * above the threshold) is bad input like a running computation's, an
     * I/O error is a failed run. */
    if (vs != VOX_OK) status = cli_fail(ctx, vs, CLI_RUNNING);
  }
  vox_model_free(&model);
  vox_context_destroy(ctx);
  return status;
}
