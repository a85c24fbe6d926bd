/* SPDX-License-Identifier: BSD-3-Clause */
/* voxfe-analyze: one linear-elastic micro-FE analysis of a voxel model, the
 * standard bone compression tests or the model's own supports and loads;
 * writes the result file (displacement, reactions, element fields, summary)
 * and, on request, the summary as JSON or as a CSV row. Nothing is written
 * unless the run succeeds. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli_common.h"
#include "cli_device_lock.h"
#include "cli_files.h"
#include "cli_mpi.h"
#include "cli_options.h"
#include "cli_progress.h"
#include "cli_solver_options.h"
#include "voxfe/analysis_summary.h"
#include "voxfe/io.h"
#include "voxfe/n88model.h"
#include "voxfe/result_file.h"
#include "voxfe/voxfe.h"

/* --test: a standard compression test, or the model's own conditions. */
#define TEST_MODEL (-1)

typedef struct summary_paths {
  const char *json, *csv;
} summary_paths;

/* --density-calibration: given, or the default of the intensity's units. */
typedef struct calibration {
  int given;
  double slope, intercept;
} calibration;

typedef struct settings {
  const char *input;
  const char *output;
  summary_paths summary;
  int test;              /* vox_compression_test or TEST_MODEL */
  int axis;
  double strain;
  double youngs_modulus; /* NaN: the materials' own */
  double poisson_ratio;  /* NaN: the materials' own */
  int connectivity;
  int modulus_from_intensity;
  calibration density_calibration;
  double density_modulus[2]; /* a, b of E = a rho^b */
  double min_modulus;
  double critical_strain, critical_volume;
  vox_sed_point sed_point;
  int pin; /* --test model: hold the rigid motions the supports leave free */
  vox_solver_options solver;
  vox_backend_options backend; /* --device, --kernel, --fp16-levels */
  int threads;
  int quiet;
  int timings;
  const char *device_lock; /* --device-lock: a batch's solves take turns on the GPU */
  int mpi;      /* --mpi */
  int mpi_exchange; /* vox_mpi_exchange (voxfe/mpi.h, in MPI builds) */
  int mpi_gather_nodes; /* vox_mpi_options.gather_nodes, -1 auto */
  int mpi_hierarchy;    /* vox_mpi_hierarchy (voxfe/mpi.h, in MPI builds) */
  int mpi_overlap;      /* vox_mpi_overlap (voxfe/mpi.h, in MPI builds): 0 auto */
} settings;

/* --storage: auto, full or sparse (vox_storage). */
static int parse_storage(const char *what, const char *text, void *value) {
  if (vox_storage_parse(text, value) == 0) return 0;
  cli_error("%s: expected auto, full or sparse, got '%s'", what, text);
  return -1;
}

static void format_storage(const void *value, char *buf, size_t size) {
  snprintf(buf, size, "%s", vox_storage_name(*(const vox_storage *)value));
}

static int parse_test(const char *what, const char *text, void *value) {
  vox_compression_test t;
  if (strcmp(text, "model") == 0) {
    *(int *)value = TEST_MODEL;
  } else if (vox_compression_test_parse(text, &t) == 0) {
    *(int *)value = (int)t;
  } else {
    cli_error("%s: expected uniaxial, friction, confined or model, got '%s'", what, text);
    return -1;
  }
  return 0;
}

static void format_test(const void *value, char *buf, size_t size) {
  int t = *(const int *)value;
  snprintf(buf, size, "%s", t == TEST_MODEL ? "model" : vox_compression_test_name(t));
}

static const char *const axis_names[3] = {"x", "y", "z"};

static int parse_axis(const char *what, const char *text, void *value) {
  for (int a = 0; a < 3; a++)
    if (strcmp(text, axis_names[a]) == 0) {
      *(int *)value = a;
      return 0;
    }
  cli_error("%s: expected x, y or z, got '%s'", what, text);
  return -1;
}

static void format_axis(const void *value, char *buf, size_t size) {
  snprintf(buf, size, "%s", axis_names[*(const int *)value]);
}

static int parse_sed_point(const char *what, const char *text, void *value) {
  if (vox_sed_point_parse(text, value)) {
    cli_error("%s: expected centre or element-mean, got '%s'", what, text);
    return -1;
  }
  return 0;
}

static void format_sed_point(const void *value, char *buf, size_t size) {
  snprintf(buf, size, "%s", vox_sed_point_name(*(const vox_sed_point *)value));
}

/* A strain in [-0.5, 0.5], not 0: no strain loads nothing, and the modulus
 * is then 0 / 0. */
static int parse_strain(const char *what, const char *text, void *value) {
  const cli_range range = {-0.5, 0.5, 0, 0};
  double strain;
  if (cli_parse_real(what, text, range, &strain)) return -1;
  if (strain == 0) {
    cli_error("%s: expected a non-zero number in [-0.5, 0.5], got '%s'", what, text);
    return -1;
  }
  *(double *)value = strain;
  return 0;
}

static void format_strain(const void *value, char *buf, size_t size) {
  cli_format_real(*(const double *)value, buf, size);
}

static int parse_connectivity(const char *what, const char *text, void *value) {
  if (strcmp(text, "6") && strcmp(text, "26")) {
    cli_error("%s: expected 6 or 26, got '%s'", what, text);
    return -1;
  }
  *(int *)value = atoi(text);
  return 0;
}

static void format_connectivity(const void *value, char *buf, size_t size) {
  snprintf(buf, size, "%d", *(const int *)value);
}

static int parse_calibration(const char *what, const char *text, void *value) {
  calibration *c = value;
  const cli_range any = {-INFINITY, INFINITY, 0, 0};
  double v[2];
  if (cli_parse_real_list(what, "SLOPE,INTERCEPT", text, ',', 2, any, v)) return -1;
  *c = (calibration){1, v[0], v[1]};
  return 0;
}

static void format_calibration(const void *value, char *buf, size_t size) {
  const calibration *c = value;
  if (c->given)
    cli_format_real_list(&c->slope, 2, buf, size);
  else
    buf[0] = '\0'; /* the default of the intensity's units */
}

static int parse_power_law(const char *what, const char *text, void *value) {
  const cli_range any = {-INFINITY, INFINITY, 0, 0};
  double *v = value;
  if (cli_parse_real_list(what, "A,B", text, ',', 2, any, v)) return -1;
  if (!(v[0] > 0)) {
    cli_error("%s: the factor A must be positive, got '%s'", what, text);
    return -1;
  }
  return 0;
}

static void format_power_law(const void *value, char *buf, size_t size) {
  cli_format_real_list(value, 2, buf, size);
}

/* --summary FILE.json or FILE.csv, once each. */
static int parse_summary(const char *what, const char *text, void *value) {
  summary_paths *p = value;
  const char *ext = cli_extension(text);
  const char **slot = !strcmp(ext, ".json") ? &p->json : !strcmp(ext, ".csv") ? &p->csv : NULL;
  if (!slot) {
    cli_error("%s: expected a file name ending in .json or .csv, got '%s'", what, text);
    return -1;
  }
  *slot = text;
  return 0;
}

static void format_summary(const void *value, char *buf, size_t size) {
  const summary_paths *p = value;
  snprintf(buf, size, "%s%s%s", p->json ? p->json : "", p->json && p->csv ? " " : "",
           p->csv ? p->csv : "");
}

#define AT(member) offsetof(settings, member)
#define POSITIVE {0, INFINITY, 1, 0}
#define FRACTION {0, 1, 1, 0}

static const cli_option options[] = {
    {.kind = CLI_HEADING, .help = "Output:"},
    {.name = "output", .key = 'o', .arg = "FILE", .kind = CLI_STRING, .offset = AT(output),
     .flags = CLI_REQUIRED,
     .help = "result file to write: voxfe netCDF (.nc), or Numerics88 n88model (.n88model); "
             "written only when the run succeeds"},
    {.name = "summary", .arg = "FILE", .kind = CLI_CUSTOM, .offset = AT(summary),
     .flags = CLI_NO_DEFAULT,
     .help = "also write the summary: FILE.json (replaced) or FILE.csv (one row appended, the "
             "header written once); may be given once for each",
     .parse = parse_summary, .format = format_summary},
    {.name = "timings", .kind = CLI_ENABLE, .offset = AT(timings),
     .help = "print the seconds of each stage on stderr: reading, connectivity, setup, solve "
             "(with the solver's own setup), fields, writing (a .nc result is written beside "
             "the solve and the fields: what is left of it after them)"},

    {.kind = CLI_HEADING, .help = "Test:"},
    {.name = "test", .arg = "KIND", .kind = CLI_CUSTOM, .offset = AT(test), .flags = CLI_RECORD,
     .help = "uniaxial (plates fixed along the axis only), friction (plates fixed laterally), "
             "confined (lateral faces held too), or model (the supports and loads of the "
             "model file)",
     .parse = parse_test, .format = format_test},
    {.name = "no-pin", .kind = CLI_DISABLE, .offset = AT(pin), .flags = CLI_RECORD,
     .help = "with --test model, leave free the rigid motions the model's supports do not "
             "hold (n88modelgenerator's models fix their plates along the axis only; the "
             "multigrid solver does not converge on such a model); by default they are held "
             "by zero-displacement constraints on supported nodes (group pinned_nodes of an "
             ".n88model), which changes no reaction or strain"},
    {.name = "axis", .arg = "A", .kind = CLI_CUSTOM, .offset = AT(axis), .flags = CLI_RECORD,
     .help = "compression axis: x, y or z", .parse = parse_axis, .format = format_axis},
    {.name = "strain", .arg = "S", .kind = CLI_CUSTOM, .offset = AT(strain),
     .flags = CLI_RECORD, .help = "applied strain in [-0.5, 0.5], not 0 (negative: compression)",
     .parse = parse_strain, .format = format_strain},
    {.name = "youngs-modulus", .arg = "E", .kind = CLI_REAL, .offset = AT(youngs_modulus),
     .range = POSITIVE, /* not recorded when not given: NaN would not parse; the
                           * command line and the materials in the file say it */
     .help = "Young's modulus of every material, MPa (HR-pQCT tissue: 6829 first, 8748 second "
             "generation)",
     .default_text = "each material's own"},
    {.name = "poisson-ratio", .arg = "NU", .kind = CLI_REAL, .offset = AT(poisson_ratio),
     .range = {-1, 0.5, 1, 1}, .help = "Poisson ratio of every material",
     .default_text = "each material's own"},
    {.name = "connectivity", .arg = "N", .kind = CLI_CUSTOM, .offset = AT(connectivity),
     .flags = CLI_RECORD,
     .help = "keep the largest component of bone connected through faces (6) or faces, edges "
             "and corners (26)",
     .parse = parse_connectivity, .format = format_connectivity},
    {.kind = CLI_HEADING, .help = "Modulus from CT intensity (the model's 'intensity', "
                                  "voxfe-voxelize --keep-intensity):"},
    {.name = "modulus-from-intensity", .kind = CLI_ENABLE,
     .offset = AT(modulus_from_intensity), .flags = CLI_RECORD,
     .help = "each bone element's Young's modulus from its intensity: density rho = SLOPE * "
             "intensity + INTERCEPT (g/cm3), E = A * rho^B (MPa); the Poisson ratio stays the "
             "materials'"},
    {.name = "density-calibration", .arg = "SLOPE,INTERCEPT", .kind = CLI_CUSTOM,
     .offset = AT(density_calibration), .flags = CLI_RECORD,
     .help = "intensity to density in g/cm3 (needed unless the intensity is in mg HA/ccm)",
     .default_text = "0.001,0 for intensity in mg HA/ccm",
     .parse = parse_calibration, .format = format_calibration},
    {.name = "density-modulus", .arg = "A,B", .kind = CLI_CUSTOM,
     .offset = AT(density_modulus), .flags = CLI_RECORD,
     .help = "E = A * rho^B, MPa (Morgan et al. 2003, pooled sites)",
     .parse = parse_power_law, .format = format_power_law},
    {.name = "min-modulus", .arg = "E", .kind = CLI_REAL, .offset = AT(min_modulus),
     .range = POSITIVE, .flags = CLI_RECORD,
     .help = "smallest modulus from intensity, MPa (lower ones, and densities <= 0, are "
             "raised to it)"},

    {.kind = CLI_HEADING, .help = "Failure load:"},
    {.name = "critical-strain", .arg = "S", .kind = CLI_REAL, .offset = AT(critical_strain),
     .range = POSITIVE, .flags = CLI_RECORD,
     .help = "Pistoia failure criterion: critical effective strain"},
    {.name = "critical-volume", .arg = "F", .kind = CLI_REAL, .offset = AT(critical_volume),
     .range = FRACTION, .flags = CLI_RECORD,
     .help = "Pistoia failure criterion: fraction of the bone above the critical strain"},
    {.name = "sed-point", .arg = "WHERE", .kind = CLI_CUSTOM, .offset = AT(sed_point),
     .flags = CLI_RECORD,
     .help = "where the strain-energy density, and so the effective strain of the failure "
             "criterion, is taken: centre (the element centre's strain and stress, as "
             "Numerics88's n88derivedfields and n88pistoia) or element-mean (the element's "
             "exact energy over its volume; a failure load about 1 % smaller in bone)",
     .parse = parse_sed_point, .format = format_sed_point},

    CLI_SOLVER_OPTIONS_DEFAULT(settings, solver,
                               "relative residual at which the solve has converged",
                               "1e-6; 1e-10, a backstop, where --cg-reaction-tol "
                               "watches prescribed displacements",
                               "1e-5 unless --cg-tol is given"),
    {.name = "storage", .arg = "S", .kind = CLI_CUSTOM, .offset = AT(solver.storage),
     .flags = CLI_RECORD,
     .help = "the system's storage: sparse (the bone's nodes and elements only, with its own "
             "multigrid hierarchy), full (the whole box matrix-free, the empty voxels "
             "without stiffness) or auto (sparse for a model whose bone fills less than half "
             "the box)",
     .parse = parse_storage, .format = format_storage},
    CLI_SPARSE_OPTIONS(settings, solver),
    CLI_EXECUTION_OPTIONS(settings, backend, threads, quiet),
    {.name = "device-lock", .arg = "FILE", .kind = CLI_STRING, .offset = AT(device_lock),
     .flags = CLI_RECORD | CLI_NO_DEFAULT,
     .help = "on a GPU, without --mpi: hold a lock on FILE (made empty where missing, never "
             "written) through the solve, so that the jobs of a batch that name the same FILE "
             "solve one at a time while the others read, prepare, compute fields and write "
             "(workflows/bone does so)"},
#ifdef VOXFE_HAVE_MPI
    {.name = "mpi", .kind = CLI_ENABLE, .offset = AT(mpi), .flags = CLI_RECORD,
     .help = "split the model over the MPI ranks the program runs on (mpirun -np N "
             "voxfe-analyze --mpi ...): slabs of element layers along z, one a rank, on its CPU "
             "cores or (--device cuda or auto) on a GPU of its own, in full or (with --precision "
             "double) sparse storage; every rank reads the model, rank 0 writes the result; the "
             "same result as one process, to rounding"},
    CLI_MPI_EXCHANGE_OPTION(settings, mpi_exchange),
    CLI_MPI_GATHER_OPTION(settings, mpi_gather_nodes),
    CLI_MPI_HIERARCHY_OPTION(settings, mpi_hierarchy),
    CLI_MPI_OVERLAP_OPTION(settings, mpi_overlap),
#endif
    {.kind = CLI_END},
};

static const cli_program program = {
    .name = "voxfe-analyze",
    .args_doc = "MODEL -o RESULT",
    .doc = "Linear-elastic micro-FE analysis of a voxel model (voxfe .nc or Numerics88 "
           ".n88model): a standard compression test or the model's own supports and loads; "
           "writes displacements, reaction forces, element strain, stress, strain-energy "
           "density, von Mises stress, effective strain, and a summary with stiffness, "
           "apparent modulus and the Pistoia failure load.",
    .epilogue = "Only the largest connected component of bone is analysed; a standard test "
                "refuses a model whose bone does not connect the plates (exit status 2). "
                "A one-line summary goes to stdout.",
    .options = options,
    .input = "MODEL",
    .input_offset = AT(input),
};

/* n88model files go by their extension; everything else is voxfe's. */
static int is_n88model(const char *path) { return !strcmp(cli_extension(path), ".n88model"); }


/* --youngs-modulus and --poisson-ratio replace every material's value. */
static void override_materials(const settings *s, vox_model *m) {
  for (int i = 0; i < m->n_materials; i++) {
    if (!isnan(s->youngs_modulus)) m->materials[i].youngs_modulus = s->youngs_modulus;
    if (!isnan(s->poisson_ratio)) m->materials[i].poisson_ratio = s->poisson_ratio;
  }
}

/* The summary, gathered as the run goes. */
#define SUMMARY_MAX 128
typedef struct summary {
  vox_summary_entry e[SUMMARY_MAX];
  size_t n;
} summary;

static void add_number(summary *s, const char *name, double value, const char *units) {
  if (s->n == SUMMARY_MAX) return;
  vox_summary_entry *e = &s->e[s->n++];
  snprintf(e->name, sizeof e->name, "%s", name);
  e->text = NULL, e->value = value, e->units = units;
}

static void add_text(summary *s, const char *name, const char *text) {
  if (s->n == SUMMARY_MAX) return;
  vox_summary_entry *e = &s->e[s->n++];
  snprintf(e->name, sizeof e->name, "%s", name);
  e->text = text, e->value = NAN, e->units = NULL;
}

/* The summary's statistics of one field: <field>_mean, _sd, _p05 .. _p95. */
typedef struct stats_entry {
  const char *field, *units;
  vox_stats_request request;
} stats_entry;

static void add_stats(summary *s, const char *field, const vox_field_stats *st,
                      const char *units) {
  char name[VOX_NAME_MAX];
  snprintf(name, sizeof name, "%s_mean", field), add_number(s, name, st->mean, units);
  snprintf(name, sizeof name, "%s_sd", field), add_number(s, name, st->sd, units);
  for (int p = 0; p < VOX_STAT_PERCENTILES; p++) {
    snprintf(name, sizeof name, "%s_p%02d", field, (int)vox_stat_percentiles[p]);
    add_number(s, name, st->percentile[p], units);
  }
}

/* The base name of the input without its extension: the sample's name. */
static void sample_name(const char *path, char *out, size_t size) {
  const char *slash = strrchr(path, '/');
  snprintf(out, size, "%s", slash ? slash + 1 : path);
  char *dot = strrchr(out, '.');
  if (dot && dot != out) *dot = '\0';
}

typedef struct run_state {
  vox_model model;
  vox_backend *backend;
  double *u, *reaction;
  /* the element fields, one entry (or 6) per bone element */
  double *strain, *stress, *sed, *vm, *eff;
  double *moduli; /* per grid element, with --modulus-from-intensity */
  uint8_t *bone;
  int64_t *bone_elements; /* the non-empty voxels, in element order */
  int64_t *plate_dofs;
  char *history;
  char sample[256];
  struct timespec start;
  double read_done, prepare_done; /* seconds since start */
  vox_device_warm_up *warm_up;    /* the device starting while the model is read */
  vox_solve_plan *plan;           /* the solve's hierarchy, built while it starts */
  vox_result_writer *writer;      /* the result file, written beside the fields */
  vox_n88model_writer *n88;       /* or the .n88model file, likewise */
  vox_n88model_extras *extras;    /* an n88model input's names and sets, for --test model */
  int lock;                       /* --device-lock's file, -1 for none */
  double lock_wait;               /* seconds waited for it, -1 where not taken */
} run_state;

/* How an .n88model result names its groups and sets: the input's with
 * --test model (when it was an n88model), else the test's. */
static vox_n88model_layout n88_layout(const settings *s, const run_state *r) {
  return (vox_n88model_layout){.axis = s->test == TEST_MODEL ? -1 : s->axis,
                               .test = s->test == TEST_MODEL ? 0 : s->test,
                               .extras = s->test == TEST_MODEL ? r->extras : NULL};
}

/* The output file's writer thread, of either format. */
static vox_status start_writer(vox_context *ctx, const settings *s, const vox_model *m,
                               run_state *r, size_t bone) {
  if (is_n88model(s->output)) {
    const vox_n88model_layout layout = n88_layout(s, r);
    return vox_n88model_writer_start(ctx, s->output, m, &layout, &r->n88);
  }
  return vox_result_writer_start(ctx, s->output, m, r->bone_elements, bone, &r->writer);
}

/* The solve's progress: once it iterates on the device, the writer does
 * its own host work (nothing is printed; the solve's time is, after it). */
static int on_solve_progress(const vox_progress *p, void *user) {
  run_state *r = user;
  if (p->stage && strcmp(p->stage, "solve: iterating") == 0) {
    if (r->writer) vox_result_writer_solving(r->writer);
    if (r->n88) vox_n88model_writer_solving(r->n88);
  }
  return 0;
}

static void free_state(run_state *r) {
  vox_result_writer_cancel(r->writer); /* first: they read the model and the fields */
  vox_n88model_writer_cancel(r->n88);
  vox_device_warm_up_finish(r->warm_up); /* no exit while the device is starting */
  vox_solve_plan_free(r->plan);
  if (r->backend) vox_backend_destroy(r->backend);
  /* r->u once the solve is set up, freed below; until then the file's
   * (a design or a result refused before it is dropped) */
  if (r->model.displacement == r->u) r->model.displacement = NULL;
  vox_model_free(&r->model);
  free(r->u), free(r->reaction), free(r->strain), free(r->stress), free(r->sed), free(r->vm);
  free(r->eff), free(r->bone_elements), free(r->bone), free(r->plate_dofs), free(r->history);
  if (r->lock >= 0) close(r->lock); /* and with it the lock, where still held */
  free(r->moduli);
  vox_n88model_extras_free(r->extras);
}

/* Whether bone lies on both end layers along `axis`: for one connected
 * component (the largest, once kept), the same as reaching from plate to
 * plate, without another flood fill. */
static int on_both_plates(const vox_model *m, int axis) {
  const vox_grid *g = &m->grid;
  const int64_t n[3] = {g->nx, g->ny, g->nz}, stride[3] = {1, g->nx, g->nx * g->ny};
  const int a1 = axis == 0 ? 1 : 0, a2 = axis == 2 ? 1 : 2;
  int bottom = 0, top = 0;
  for (int64_t p = 0; p < n[a1]; p++)
    for (int64_t q = 0; q < n[a2]; q++) {
      const int64_t e = p * stride[a1] + q * stride[a2];
      bottom |= m->label[e] != 0;
      top |= m->label[e + (n[axis] - 1) * stride[axis]] != 0;
    }
  return bottom && top;
}

/* The CG's stop (docs/benchmarks.md, "Defaults and why"). By default a
 * solve whose supports prescribe displacements, as every standard test
 * does, stops when the reactions' work on them has changed by at most
 * REACTION_TOL of itself over the last --cg-window steps: what the test
 * reports, the force and the failure load, is then as close to a tight
 * solve's as at a residual of 1e-6 along a bone, after a third of its CG
 * iterations, and closer across a long bone, where that residual leaves
 * the small force percent-level off. The residual test stays as a
 * backstop at 1e-10; without prescribed displacements (a model of loads
 * alone) it decides at 1e-6. A --cg-tol given is the stop asked for: the
 * reaction test is then off unless given too. */
#define REACTION_TOL 1e-5
#define REACTION_TOL_AUTO (-1.0) /* not given: resolve_cg_stop() */

static void resolve_cg_stop(settings *s, const vox_model *m) {
  const int residual_given = s->solver.rtol != VOX_RTOL_AUTO;
  if (s->solver.reaction_tol == REACTION_TOL_AUTO)
    s->solver.reaction_tol = residual_given ? 0 : REACTION_TOL;
  if (residual_given) return;
  s->solver.rtol = vox_model_prescribes_motion(m) && s->solver.reaction_tol > 0 ? 1e-10 : 1e-6;
}

/* Reads the input, keeps the largest component and checks the plates; one
 * line and exit status 2 for anything wrong with the input. */
static int prepare(vox_context *ctx, settings *s, run_state *r, summary *sum) {
  vox_model *m = &r->model;
  int status;
  if (is_n88model(s->input)) {
    vox_status vs = s->test == TEST_MODEL && is_n88model(s->output)
                        ? vox_n88model_read_extras(ctx, s->input, m, &r->extras)
                        : vox_n88model_read(ctx, s->input, m);
    if (vs) return cli_fail(ctx, vs, CLI_READING); /* the reader names the file */
  } else if ((status = cli_read_model(ctx, s->input, m))) {
    return status;
  }
  r->read_done = cli_seconds_since(&r->start);
  if (m->physics != VOX_PHYSICS_ELASTICITY) {
    cli_error("%s: a %s model (physics = %s); voxfe-analyze solves linear elasticity only",
              s->input, m->physics == VOX_PHYSICS_HEAT ? "heat-conduction" : "non-elastic",
              vox_physics_name(m->physics));
    return CLI_EXIT_USAGE;
  }
  if (m->stage == VOX_STAGE_DESIGN) {
    /* its labels are the design domain, not the optimized structure */
    cli_error("%s: a design file (voxfe-optimize output); voxfe-analyze analyses the labelled "
              "voxels of a model, and a design's labels are its whole design domain",
              s->input);
    return CLI_EXIT_USAGE;
  }
  /* a result file's displacements are of an earlier analysis: this one
   * writes its own */
  free(m->displacement);
  m->displacement = NULL;
  override_materials(s, m);
  vox_status vs = vox_model_validate(ctx, m);
  if (vs) {
    cli_error("%s: %s", s->input, vox_context_message(ctx));
    return CLI_EXIT_USAGE;
  }
  if (s->modulus_from_intensity && !m->intensity) {
    cli_error("%s: --modulus-from-intensity: the model has no intensity (voxfe-voxelize "
              "--keep-intensity keeps it)",
              s->input);
    return CLI_EXIT_USAGE;
  }
  if (s->modulus_from_intensity && !s->density_calibration.given &&
      strcmp(m->intensity_units, "mg HA/ccm")) {
    cli_error("%s: --modulus-from-intensity: the intensity is in '%s', not mg HA/ccm; give "
              "--density-calibration SLOPE,INTERCEPT (g/cm3)",
              s->input, m->intensity_units);
    return CLI_EXIT_USAGE;
  }
  /* passive-void voxels are empty space to an optimizer (stiffness Emin):
   * not bone */
  uint8_t is_void[256] = {0}; /* by label: a table, not a search per voxel */
  for (int i = 0; i < m->n_materials; i++)
    is_void[m->materials[i].label] = m->materials[i].role == VOX_ROLE_VOID;
  size_t void_voxels = 0;
  const ptrdiff_t n_voxels = (ptrdiff_t)vox_grid_elements(&m->grid);
#pragma omp parallel for schedule(static) reduction(+ : void_voxels)
  for (ptrdiff_t e = 0; e < n_voxels; e++)
    if (is_void[m->label[e]]) m->label[e] = 0, void_voxels++;
  add_number(sum, "void_voxels", (double)void_voxels, NULL);
  /* The largest component first; only when it misses a plate is the whole
   * bone (a copy of the labels) flooded again, to say why: no bone at a
   * plate, none connecting the plates, or the largest not among those that
   * do. A flood fill less for every model that is fine. */
  const size_t n_elements = (size_t)vox_grid_elements(&m->grid);
  uint8_t *whole = s->test != TEST_MODEL ? malloc(n_elements) : NULL;
  if (s->test != TEST_MODEL && !whole) {
    cli_error("out of memory");
    return CLI_EXIT_FAILED;
  }
  if (whole) memcpy(whole, m->label, n_elements);
  size_t removed = 0, components = 0;
  vs = vox_keep_largest_component(ctx, m, s->connectivity, &removed, &components);
  if (vs) {
    free(whole);
    return cli_fail(ctx, vs, CLI_RUNNING);
  }
  if (components == 0) {
    free(whole);
    cli_error("%s: the model has no bone (no voxel with a non-zero label)", s->input);
    return CLI_EXIT_USAGE;
  }
  if (whole && !on_both_plates(m, s->axis)) {
    uint8_t *kept = m->label;
    m->label = whole;
    vs = vox_check_plate_contact(ctx, m, s->axis, s->connectivity);
    m->label = kept;
    free(whole);
    if (vs)
      cli_error("%s: %s", s->input, vox_context_message(ctx));
    else
      cli_error("%s: the largest connected component of the bone (%d-connectivity) does not "
                "reach from plate to plate along %s",
                s->input, s->connectivity, axis_names[s->axis]);
    return CLI_EXIT_USAGE;
  }
  free(whole);
  r->prepare_done = cli_seconds_since(&r->start);
  add_number(sum, "components", (double)components, NULL);
  add_number(sum, "removed_voxels", (double)removed, NULL);
  if (removed && !s->quiet)
    fprintf(stderr, "%s: kept the largest of %zu components; removed %zu voxels\n", s->input,
            components, removed);
  /* what the analysis does differently from what the file says */
  if (void_voxels && !s->quiet)
    fprintf(stderr, "%s: %zu voxels of passive-void materials are left out (empty)\n", s->input,
            void_voxels);
  if (s->test != TEST_MODEL && (m->n_constraints || m->n_loads) && !s->quiet)
    fprintf(stderr,
            "%s: the model's %zu supports and %zu loads are replaced by the %s test (--test "
            "model uses them)\n",
            s->input, m->n_constraints, m->n_loads, vox_compression_test_name(s->test));
  return 0;
}

/* What a finished run reports in its summary, after the entries of the
 * input; before the solve, all NaN and empty (the columns are the same,
 * which is what the check of a --summary table needs). */
typedef struct run_numbers {
  const char *device;
  size_t bone;
  const vox_analysis_summary *result; /* NULL before the solve */
  const double *sed, *vm, *eff, *strain, *stress, *moduli;
  const uint8_t *bone_mask;
  vox_solve_result solve;
  double relative, read_seconds, components_seconds, solve_seconds, fields_seconds;
} run_numbers;

static vox_status add_results(vox_context *ctx, summary *sum, const settings *s,
                              const vox_model *m, const run_numbers *x) {
  const vox_grid *g = &m->grid;
  const size_t ne = (size_t)vox_grid_elements(g), nn = (size_t)vox_grid_nodes(g), bone = x->bone;
  const double volume = g->voxel_size[0] * g->voxel_size[1] * g->voxel_size[2];
  const vox_analysis_summary *y = x->result;
  add_text(sum, "device", x->device);
  add_number(sum, "bone_elements", (double)bone, NULL);
  add_number(sum, "bone_volume", (double)bone * volume, "mm3");
  add_number(sum, "bone_volume_fraction", (double)bone / (double)ne, "1");
  add_number(sum, "dofs", (double)(3 * nn), NULL);
  add_number(sum, "applied_strain", s->test == TEST_MODEL ? NAN : s->strain, "1");
  add_number(sum, "applied_displacement", y ? y->applied_displacement : NAN, "mm");
  add_number(sum, "reaction_force", y ? y->reaction_force : NAN, "N");
  add_number(sum, "stiffness", y ? y->stiffness : NAN, "N/mm");
  add_number(sum, "apparent_modulus", y ? y->apparent_modulus : NAN, "MPa");
  add_number(sum, "failure_load", y ? y->failure_load : NAN, "N");
  add_number(sum, "critical_strain", s->critical_strain, "1");
  add_number(sum, "critical_volume", s->critical_volume, "1");
  add_text(sum, "sed_point", vox_sed_point_name(s->sed_point));
  add_number(sum, "support_reaction_x", y ? y->support_reaction[0] : NAN, "N");
  add_number(sum, "support_reaction_y", y ? y->support_reaction[1] : NAN, "N");
  add_number(sum, "support_reaction_z", y ? y->support_reaction[2] : NAN, "N");
  add_number(sum, "compliance", y ? y->compliance : NAN, "N mm");
  add_number(sum, "box_length", y ? y->box_length : NAN, "mm");
  add_number(sum, "box_area", y ? y->box_area : NAN, "mm2");
  /* every material of the model, used or not, so that the columns of a
   * batch table depend only on the material table */
  for (int i = 0; i < m->n_materials; i++) {
    char name[VOX_NAME_MAX];
    const int label = m->materials[i].label;
    snprintf(name, sizeof name, "load_share_label%d", label);
    add_number(sum, name, y ? y->load_share[label] : NAN, "1");
  }
  /* "axial", not xx/yy/zz: the columns of a batch table stay the same
   * whatever the axis (NaN without a compression test); the modulus NaN
   * when the materials give E (their table says it) */
  const size_t n_axial = s->test == TEST_MODEL ? 0 : bone, axis = (size_t)s->axis;
  const size_t n_moduli = x->moduli && bone ? ne : 0;
  const stats_entry stats[] = {
      {"sed", "MPa", {x->sed, bone, 1, 0, NULL}},
      {"von_mises", "MPa", {x->vm, bone, 1, 0, NULL}},
      {"effective_strain", "1", {x->eff, bone, 1, 0, NULL}},
      {"strain_axial", "1", {x->strain, n_axial, 6, axis, NULL}},
      {"stress_axial", "MPa", {x->stress, n_axial, 6, axis, NULL}},
      {"youngs_modulus", "MPa", {x->moduli, n_moduli, 1, 0, x->bone_mask}}};
  enum { N_STATS = sizeof stats / sizeof stats[0] };
  vox_stats_request requests[N_STATS];
  vox_field_stats st[N_STATS];
  for (int i = 0; i < N_STATS; i++) requests[i] = stats[i].request;
  vox_status vs = vox_field_statistics_many(ctx, requests, N_STATS, st);
  if (vs) return vs;
  for (int i = 0; i < N_STATS; i++) add_stats(sum, stats[i].field, &st[i], stats[i].units);
  const vox_solve_result *solve = &x->solve;
  add_number(sum, "cg_iterations", solve->iterations, NULL);
  add_number(sum, "relative_residual", x->relative, "1");
  add_text(sum, "solver_storage", vox_storage_name(solve->storage));
  add_number(sum, "solver_levels", solve->levels ? solve->levels : NAN, NULL);
  add_number(sum, "read_seconds", x->read_seconds, "s");
  add_number(sum, "components_seconds", x->components_seconds, "s");
  add_number(sum, "solve_seconds", x->solve_seconds, "s");
  add_number(sum, "solver_setup_seconds",
             solve->storage == VOX_STORAGE_SPARSE ? solve->setup_seconds : NAN, "s");
  add_number(sum, "fields_seconds", x->fields_seconds, "s");
  return VOX_OK;
}

/* A --summary table that would refuse this run's row, refused before the
 * solve: its columns are known once the model is read (the materials). */
static int check_summary_table(vox_context *ctx, const settings *s, const vox_model *m,
                               const summary *sum) {
  if (!s->summary.csv) return 0;
  summary *columns = malloc(sizeof *columns);
  if (!columns) {
    cli_error("out of memory");
    return CLI_EXIT_FAILED;
  }
  *columns = *sum;
  const run_numbers none = {.device = "", .relative = NAN, .read_seconds = NAN,
                            .components_seconds = NAN, .solve_seconds = NAN,
                            .fields_seconds = NAN};
  vox_status vs = add_results(ctx, columns, s, m, &none);
  if (!vs) vs = vox_check_analysis_csv(ctx, s->summary.csv, columns->e, columns->n);
  free(columns);
  return vs ? cli_fail(ctx, vs, CLI_READING) : 0;
}

/* "cpu" or "cuda": the device of the backend, or of an MPI backend's ranks. */
static const char *device_name(const vox_backend *backend) {
  return vox_backend_device(backend) == VOX_DEVICE_CUDA ? "cuda" : "cpu";
}

static int run(vox_context *ctx, settings *s, int argc, char **argv) {
  run_state r = {.lock = -1, .lock_wait = -1};
  summary sum = {0};
  vox_model *m = &r.model;
#ifdef VOXFE_HAVE_MPI
  const int root = !s->mpi || cli_mpi_rank() == 0;
#else
  const int root = 1;
#endif
  if (!root) s->quiet = 1; /* rank 0 reports */
  clock_gettime(CLOCK_MONOTONIC, &r.start);
  const struct timespec t0 = r.start;
  sample_name(s->input, r.sample, sizeof r.sample);
  add_text(&sum, "sample", r.sample);
  add_text(&sum, "test", s->test == TEST_MODEL ? "model" : vox_compression_test_name(s->test));
  add_text(&sum, "axis", s->test == TEST_MODEL ? "" : axis_names[s->axis]);
  add_number(&sum, "connectivity", s->connectivity, NULL);
  /* (ranks start the GPU they will take, not the thread's current one) */
  r.warm_up = vox_device_warm_up_start(s->backend.device,
                                       cli_warm_up_device(s->mpi, s->backend.device_index));
  int status = prepare(ctx, s, &r, &sum);
  /* the lock file made once the input has passed its checks */
  if (!status && s->device_lock && !s->mpi && s->backend.device != VOX_DEVICE_CPU &&
      (r.lock = cli_device_lock_open(s->device_lock, s->input, s->output)) < 0)
    status = CLI_EXIT_USAGE;
  if (status) goto done;
  vox_context_set_threads(ctx, s->threads);

  const vox_grid *g = &m->grid;
  const size_t ne = (size_t)vox_grid_elements(g), nn = (size_t)vox_grid_nodes(g);
  double applied = NAN;
  vox_status vs = VOX_OK;
  if (s->test != TEST_MODEL)
    vs = vox_add_compression_test(ctx, m, (vox_compression_test)s->test, s->axis, s->strain,
                                  &applied);
  else if (m->n_constraints == 0) {
    cli_error("%s: --test model needs the model's supports, and it has none", s->input);
    status = CLI_EXIT_USAGE;
    goto done;
  } else if (m->n_load_cases < 1) {
    vs = vox_model_set_load_cases(ctx, m, 1);
  } else {
    /* a load off the bone kept (on a passive void, or on a piece removed
     * with the smaller components) would be dropped by the solve */
    uint8_t bone_label[256];
    memset(bone_label, 1, sizeof bone_label);
    bone_label[0] = 0;
    if ((vs = vox_model_check_loads_carried(ctx, m, bone_label, "the bone analysed")) ||
        (vs = vox_model_check_held(ctx, m))) {
      cli_error("%s: %s", s->input, vox_context_message(ctx));
      status = CLI_EXIT_USAGE;
      goto done;
    }
  }
  if (vs) {
    status = cli_fail(ctx, vs, CLI_RUNNING);
    goto done;
  }
  if (m->n_load_cases > 1) {
    cli_error("%s: %d load cases; voxfe-analyze solves models with one", s->input,
              m->n_load_cases);
    status = CLI_EXIT_USAGE;
    goto done;
  }
  resolve_cg_stop(s, m);
  s->solver.zero_start = 1; /* r.u, allocated below, is not cleared */
  size_t pinned = 0;
  if (s->test == TEST_MODEL && s->pin && (vs = vox_hold_rigid_motions(ctx, m, &pinned))) {
    status = cli_fail(ctx, vs, CLI_RUNNING);
    goto done;
  }
  add_number(&sum, "pinned_dofs", (double)pinned, NULL);
  if (pinned && !s->quiet)
    fprintf(stderr, "%s: the supports leave %zu rigid motions free: held at %zu supported dofs "
            "(--no-pin leaves them)\n", s->input, pinned, pinned);

  /* the tissue moduli from the intensity, after the component is kept */
  size_t floored = 0;
  if (s->modulus_from_intensity) {
    vox_density_modulus law;
    vox_density_modulus_default(&law);
    if (s->density_calibration.given)
      law.slope = s->density_calibration.slope, law.intercept = s->density_calibration.intercept;
    law.a = s->density_modulus[0], law.b = s->density_modulus[1];
    law.min_modulus = s->min_modulus;
    r.moduli = malloc(ne * sizeof *r.moduli);
    if (!r.moduli) {
      cli_error("out of memory");
      status = CLI_EXIT_FAILED;
      goto done;
    }
    vs = vox_intensity_moduli(ctx, m, &law, r.moduli, &floored);
    if (vs) {
      cli_error("%s: %s", s->input, vox_context_message(ctx));
      status = CLI_EXIT_USAGE;
      goto done;
    }
  }
  add_text(&sum, "modulus_source", s->modulus_from_intensity ? "intensity" : "materials");
  add_number(&sum, "modulus_floored_elements", s->modulus_from_intensity ? (double)floored : NAN,
             NULL);

  size_t bone = 0;
  vs = vox_bone_elements(ctx, m, &r.bone_elements, &bone);
  if (vs) {
    status = cli_fail(ctx, vs, CLI_RUNNING);
    goto done;
  }
  /* (the results are rank 0's alone: the other ranks of --mpi take part
   * in the solve and hold none of them) */
  if (root) {
    /* the box's displacement (340 MB on a clinical sample) left as it is
     * allocated, not cleared on the setup's path: the solve starts from
     * zero without reading it (zero_start), and the sparse storage's solve
     * clears it beside its iterations */
    r.u = vox_alloc_buffer(3 * nn * sizeof *r.u);
    r.reaction = vox_alloc_buffer(3 * nn * sizeof *r.reaction);
    r.strain = vox_alloc_buffer(6 * bone * sizeof *r.strain);
    r.stress = vox_alloc_buffer(6 * bone * sizeof *r.stress);
    r.sed = vox_alloc_buffer(bone * sizeof *r.sed);
    r.vm = vox_alloc_buffer(bone * sizeof *r.vm);
    r.eff = vox_alloc_buffer(bone * sizeof *r.eff);
  }
  r.bone = malloc(ne);
  r.plate_dofs = malloc((m->n_constraints + 1) * sizeof *r.plate_dofs);
  if ((root && (!r.u || !r.reaction || !r.strain || !r.stress || !r.sed || !r.vm || !r.eff)) ||
      !r.bone || !r.plate_dofs) {
    cli_error("out of memory");
    status = CLI_EXIT_FAILED;
    goto done;
  }

  if ((status = check_summary_table(ctx, s, m, &sum))) goto done;
#ifdef VOXFE_HAVE_MPI
  /* every rank has read and prepared the same model: a failure that one
   * rank alone met (its memory) ends them all */
  if (s->mpi && (status = cli_mpi_agree(status, NULL, NULL))) goto done;
#endif

  /* The result file (voxfe .nc) starts now, in a thread of its own: the
   * model (labels, supports, bone nodes and elements: a tenth of the
   * bytes, the labels deflated) while the solver runs, the displacement
   * while the fields are computed, then the fields and the summary once
   * they are ready. The model stays as it is from here on. */
  r.history = cli_history_line(&program, s, argc, argv);
  if (!r.history || vox_model_append_history(ctx, m, r.history)) {
    cli_error("out of memory");
    status = CLI_EXIT_FAILED;
    goto done;
  }
  m->displacement = r.u; /* filled by the solve */
  m->stage = VOX_STAGE_ANALYSIS;
  if (root && (vs = start_writer(ctx, s, m, &r, bone))) {
    status = cli_fail(ctx, vs, CLI_WRITING);
    goto done;
  }

  /* the solve's hierarchy built while the device's context still starts
   * (the warm-up thread's 0.2 s on the H100; the hierarchy 0.2 s); under
   * --mpi rank 0 builds it for every rank, on the node's threads, while
   * the others wait (--mpi-hierarchy root), or every rank its own */
  int plans_here = 1;
#ifdef VOXFE_HAVE_MPI
  const int hierarchy_root = s->mpi && s->mpi_hierarchy == VOX_MPI_HIERARCHY_ROOT;
  plans_here = !hierarchy_root || root;
  if (hierarchy_root) cli_mpi_root_alone();
#endif
  if (plans_here && (vs = vox_solve_plan_create(ctx, m, r.moduli, &s->solver, &r.plan)))
    status = cli_fail_input(ctx, vs, CLI_RUNNING, s->input);
#ifdef VOXFE_HAVE_MPI
  if (hierarchy_root) { /* rank 0's plan: all go on, or none */
    status = cli_mpi_agree(status, NULL, NULL);
    cli_mpi_ranks_together();
  }
#endif
  if (status) goto done;
  /* the backend made while the warm-up may still load libraries (joined
   * after the solve) */
#ifdef VOXFE_HAVE_MPI
  if (s->mpi) {
    /* the sparse storage's work is in its bone: the slabs split that
     * evenly (the box's automatic slabs split the layers, and a bone's
     * levels need no nesting) */
    int64_t *first = NULL;
    const vox_storage storage =
        r.plan ? vox_solve_plan_storage(r.plan) : vox_solve_storage_choice(m, &s->solver);
    if (storage == VOX_STORAGE_SPARSE) {
      first = malloc(((size_t)cli_mpi_size() + 1) * sizeof *first);
      /* where it cannot split (fewer layers than ranks), the backend says so */
      if (first && vox_mpi_slabs_of_bone(m, cli_mpi_size(), first) != 0) free(first), first = NULL;
    }
    /* rank 0 alone writes: the displacements go to it alone */
    vs = cli_mpi_backend(ctx, g, 3, &s->backend, (vox_mpi_exchange)s->mpi_exchange,
                         s->mpi_gather_nodes, first, VOX_MPI_RESULTS_ROOT,
                         (vox_mpi_hierarchy)s->mpi_hierarchy,
                         (vox_mpi_overlap)s->mpi_overlap, &r.backend);
    free(first);
  } else
#endif
    vs = vox_backend_create_with(ctx, &s->backend, &r.backend);
  if (vs) {
    status = cli_fail(ctx, vs, CLI_RUNNING);
    goto done;
  }
  s->backend.device = vox_backend_device(r.backend); /* record the device that ran */
#ifdef VOXFE_HAVE_MPI
  if (s->mpi) cli_mpi_say_ranks(s->input, r.backend, s->quiet);
#endif

  cli_progress progress;
  cli_progress_init(&progress, stderr, s->quiet, 0);
  const ptrdiff_t n_box = (ptrdiff_t)ne;
#pragma omp parallel for schedule(static)
  for (ptrdiff_t e = 0; e < n_box; e++) r.bone[e] = m->label[e] != 0;
  if (!s->quiet && progress.mode != CLI_PROGRESS_QUIET)
    fprintf(stderr, "%s: solving %zu elements, %zu dofs on %s\n", s->input, bone, 3 * nn,
            device_name(r.backend));
  /* the device taken in turns from here to the solve's end (--device-lock) */
  if (r.lock >= 0 && vox_backend_device(r.backend) == VOX_DEVICE_CUDA &&
      (r.lock_wait = cli_device_lock_take(r.lock)) < 0)
    cli_error("%s: no lock on this file system (%s); solving without taking turns",
              s->device_lock, strerror(errno));
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  vox_context_set_progress(ctx, on_solve_progress, &r);
  vox_solve_result solve = {0};
  vs = vox_solve_elasticity_planned(ctx, r.backend, m, r.moduli, r.plan, &s->solver, r.u, &solve);
  if (r.lock_wait >= 0) cli_device_lock_give(r.lock);
  vox_solve_plan_free(r.plan);
  r.plan = NULL;
  vox_context_set_progress(ctx, NULL, NULL);
  vox_device_warm_up_finish(r.warm_up);
  r.warm_up = NULL;
  const double solve_seconds = cli_seconds_since(&ts), solve_done = cli_seconds_since(&t0);
  vox_progress report = {.stage = "solve", .iteration = -1, .seconds = solve_seconds};
  cli_progress_report(&report, &progress);
  cli_progress_finish(&progress);
#ifdef VOXFE_HAVE_MPI
  if (s->mpi) { /* a failure of every rank (rank 0 says it), or of one rank alone (it says it,
                 * and ends the run when the others wait in the solve) */
    status = cli_mpi_agree_running(ctx, vs, s->input);
    if (status) goto done;
  }
#endif
  if (vs) {
    status = cli_fail_input(ctx, vs, CLI_RUNNING, s->input);
    goto done;
  }
  /* the other ranks' part ends with the solve: rank 0 writes */
  if (!root) goto done;
#ifdef VOXFE_HAVE_MPI
  if (s->mpi) cli_mpi_root_alone();
#endif
  const double relative = solve.rhs_norm > 0 ? solve.residual_norm / solve.rhs_norm : 0;
  if (solve.reason < 0) {
    char reaction[64] = "";
    if (s->solver.reaction_tol > 0)
      snprintf(reaction, sizeof reaction, ", --cg-reaction-tol %g", s->solver.reaction_tol);
    cli_error("%s: %s after %d CG iterations, relative residual %.3g (--cg-tol %g%s, "
              "--cg-max-iterations %d); %s not written",
              s->input, vox_convergence_string(solve.reason), solve.iterations, relative,
              s->solver.rtol, reaction, s->solver.max_iterations, s->output);
    status = CLI_EXIT_FAILED;
    goto done;
  }

  if (r.writer) vox_result_writer_put_displacement(r.writer);
  if (r.n88) vox_n88model_writer_put_displacement(r.n88);

  /* the loaded face: the top plate's dofs along the axis */
  vox_analysis_options analysis;
  vox_analysis_options_default(&analysis);
  analysis.compression = s->test != TEST_MODEL;
  analysis.axis = s->axis, analysis.strain = s->strain;
  analysis.critical_strain = s->critical_strain, analysis.critical_volume = s->critical_volume;
  analysis.sed_point = s->sed_point;
  size_t n_plate = 0;
  if (analysis.compression) vox_loaded_face_dofs(m, s->axis, r.plate_dofs, &n_plate);
  double share[256];
  vox_element_fields fields = {r.strain, r.stress, r.sed, r.vm, r.eff, r.bone_elements, bone,
                               s->sed_point};
  vs = vox_analysis_fields(ctx, m, r.moduli, r.u, r.reaction, &fields, r.plate_dofs, n_plate, share);
  if (vs) {
    status = cli_fail(ctx, vs, CLI_RUNNING);
    goto done;
  }
  if ((r.writer && (vs = vox_result_writer_put_fields(ctx, r.writer, r.reaction, &fields))) ||
      (r.n88 && (vs = vox_n88model_writer_put_fields(ctx, r.n88, r.reaction, &fields)))) {
    status = cli_fail(ctx, vs, CLI_WRITING);
    goto done;
  }

  vox_analysis_summary result;
  vs = vox_analysis_summarize(ctx, m, &analysis, r.u, r.reaction, r.plate_dofs, n_plate, r.eff,
                              bone, share, &result);
  if (vs) {
    status = cli_fail(ctx, vs, CLI_RUNNING);
    goto done;
  }
  const double force = result.reaction_force, failure = result.failure_load;
  const double *support = result.support_reaction;

  const double fields_done = cli_seconds_since(&t0);
  const run_numbers numbers = {
      .device = device_name(r.backend), .bone = bone, .result = &result,
      .sed = r.sed, .vm = r.vm, .eff = r.eff, .strain = r.strain, .stress = r.stress,
      .moduli = r.moduli, .bone_mask = r.bone, .solve = solve, .relative = relative,
      .read_seconds = r.read_done, .components_seconds = r.prepare_done - r.read_done,
      .solve_seconds = solve_seconds, .fields_seconds = fields_done - solve_done};
  if ((vs = add_results(ctx, &sum, s, m, &numbers))) {
    status = cli_fail(ctx, vs, CLI_RUNNING);
    goto done;
  }

  if (r.writer) {
    vs = vox_result_writer_finish(ctx, r.writer, sum.e, sum.n);
    r.writer = NULL; /* ended, whatever the outcome */
  } else {
    vs = vox_n88model_writer_finish(ctx, r.n88, NULL); /* the solution handed over above */
    r.n88 = NULL;
  }
  if (!vs && s->summary.json) vs = vox_write_analysis_json(ctx, s->summary.json, sum.e, sum.n);
  if (!vs && s->summary.csv) vs = vox_append_analysis_csv(ctx, s->summary.csv, sum.e, sum.n);
  if (vs) {
    status = cli_fail(ctx, vs, CLI_WRITING);
    goto done;
  }
  if (s->timings) {
    fprintf(stderr,
            "%s: seconds: read %.3f, connectivity %.3f, setup %.3f, solve %.3f, fields %.3f, "
            "write %.3f, total %.3f\n",
            s->input, r.read_done, r.prepare_done - r.read_done,
            solve_done - solve_seconds - r.prepare_done, solve_seconds,
            fields_done - solve_done, cli_seconds_since(&t0) - fields_done, cli_seconds_since(&t0));
    if (r.lock_wait >= 0)
      fprintf(stderr, "%s: waited %.3f s of the setup for the device lock %s\n", s->input,
              r.lock_wait, s->device_lock);
    if (solve.storage == VOX_STORAGE_SPARSE)
      fprintf(stderr, "%s: solver: sparse storage, %d levels, setup %.3f s, %d CG iterations\n",
              s->input, solve.levels, solve.setup_seconds, solve.iterations);
    else
      fprintf(stderr, "%s: solver: full-box storage, %d CG iterations\n", s->input,
              solve.iterations);
  }
  if (!s->quiet && s->test == TEST_MODEL)
    printf("%s: the model's supports and loads, %zu bone elements: support reaction (%.6g, %.6g, "
           "%.6g) N, compliance %.6g N mm; %d CG iterations, %.2f s\n",
           s->output, bone, support[0], support[1], support[2], result.compliance, solve.iterations,
           cli_seconds_since(&t0));
  else if (!s->quiet)
    printf("%s: %s %s, %zu bone elements: F %.6g N, stiffness %.6g N/mm, apparent modulus "
           "%.6g MPa, failure load %.6g N; %d CG iterations, %.2f s\n",
           s->output, sum.e[1].text, sum.e[2].text, bone, force, result.stiffness,
           result.apparent_modulus, failure, solve.iterations, cli_seconds_since(&t0));
done:
  free_state(&r);
  return status;
}

int main(int argc, char **argv) {
  settings s = {.test = VOX_TEST_UNIAXIAL,
                .axis = 2,
                .strain = -0.01,
                .youngs_modulus = NAN,
                .poisson_ratio = NAN,
                .connectivity = 26,
                .density_modulus = {8920, 1.83}, /* Morgan et al. 2003, pooled */
                .min_modulus = 1,
                .critical_strain = 0.007,
                .critical_volume = 0.02,
                .sed_point = VOX_SED_CENTRE,
                .pin = 1,
                .mpi_gather_nodes = -1}; /* auto */
  vox_solver_options_default(&s.solver);
  vox_backend_options_default(&s.backend);
  s.solver.rtol = VOX_RTOL_AUTO; /* not given: resolve_cg_stop() once the test is set */
  s.solver.reaction_tol = REACTION_TOL_AUTO;
  int status = cli_parse(&program, argc, argv, &s);
  if (status) return status;
  const char *inputs[] = {s.input};
  if ((status = cli_check_output(s.output, inputs, 1))) return status;
  if (s.summary.json && (status = cli_check_output(s.summary.json, inputs, 1))) return status;
  if (s.summary.csv) {
    /* a table to append to is an input of sorts: only its folder is checked */
    const char *outs[] = {s.input, s.output};
    if ((status = cli_check_output(s.summary.csv, outs, 2))) return status;
  }
  if (!strcmp(s.output, s.summary.json ? s.summary.json : "") ||
      !strcmp(s.output, s.summary.csv ? s.summary.csv : "")) {
    cli_error("--summary names the result file %s", s.output);
    return CLI_EXIT_USAGE;
  }

  if (s.modulus_from_intensity && !isnan(s.youngs_modulus)) {
    cli_error("--youngs-modulus and --modulus-from-intensity both set the moduli: give one");
    return CLI_EXIT_USAGE;
  }
  if (s.modulus_from_intensity && is_n88model(s.output)) {
    /* its material table has one modulus per label */
    cli_error("--modulus-from-intensity: the moduli of each element do not fit an n88model "
              "material table; write a voxfe result (.nc)");
    return CLI_EXIT_USAGE;
  }

#ifdef VOXFE_HAVE_MPI
  if (s.mpi && (status = cli_mpi_start(&argc, &argv))) return status;
#endif
  vox_context *ctx = cli_context();
  if (!ctx) return CLI_EXIT_FAILED;
  status = run(ctx, &s, argc, argv);
  vox_context_destroy(ctx);
#ifdef VOXFE_HAVE_MPI
  if (s.mpi) { /* every rank exits with rank 0's status, once it has written */
    status = cli_mpi_from_root(status);
    cli_mpi_finish();
  }
#endif
  return status;
}
