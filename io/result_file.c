/* The analysis result file: the model file that vox_model_write makes, then
 * reopened to add the analysis variables and the `results` group, all under
 * a temporary name that is renamed over the output only when complete. */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#include <netcdf.h>

#include "voxfe/io.h"
#include "voxfe/result_file.h"

/* Chunks of about 4 MiB, as the model file's grid variables. */
#define CHUNK_BYTES (4u << 20)

typedef struct result_writer {
  vox_context *ctx;
  const char *path;
  int ncid;
} result_writer;

static vox_status nc_fail(result_writer *w, int err, const char *what) {
  return vox_error(w->ctx, VOX_ERR_IO, "%s: cannot write %s: %s", w->path, what, nc_strerror(err));
}

#define R_TRY(w, call, what)                                                      \
  do {                                                                            \
    int r_err_ = (call);                                                          \
    if (r_err_) return nc_fail(w, r_err_, what);                                  \
  } while (0)

static int put_text(int ncid, int varid, const char *name, const char *text) {
  return nc_put_att_text(ncid, varid, name, strlen(text), text);
}

/* A chunked, shuffled, deflated variable over (z, y, x[, inner]) or nodes;
 * chunks hold whole x-y slabs. */
static int def_grid_var(int ncid, const char *name, nc_type type, int ndims, const int *dims,
                        const size_t *shape, size_t elem, int *varid) {
  int err = nc_def_var(ncid, name, type, ndims, dims, varid);
  size_t chunk[5], slab = elem;
  for (int d = 1; d < ndims; d++) chunk[d] = shape[d], slab *= shape[d];
  chunk[0] = slab >= CHUNK_BYTES ? 1 : CHUNK_BYTES / slab;
  if (chunk[0] > shape[0]) chunk[0] = shape[0];
  if (!err) err = nc_def_var_chunking(ncid, *varid, NC_CHUNKED, chunk);
  if (!err) err = nc_def_var_deflate(ncid, *varid, 1, 1, 1);
  return err;
}

static int var_atts(int ncid, int varid, const char *long_name, const char *units,
                    const char *comment) {
  int err = put_text(ncid, varid, "long_name", long_name);
  if (!err) err = put_text(ncid, varid, "units", units);
  if (!err && comment) err = put_text(ncid, varid, "comment", comment);
  return err;
}

/* Doubles to floats for the element fields (single precision: 7 digits,
 * half the file). */
static float *to_float(const double *x, size_t n) {
  float *f = malloc(n * sizeof *f);
  if (f) {
    const ptrdiff_t m = (ptrdiff_t)n;
#pragma omp parallel for schedule(static)
    for (ptrdiff_t i = 0; i < m; i++) f[i] = (float)x[i];
  }
  return f;
}

static const char voigt_comment[] =
    "Voigt order xx, yy, zz, yz, zx, xy (strain_component 0..5); shear strains are "
    "engineering strains (2 eps_ij); at the element centre; NaN for empty voxels";

static vox_status add_analysis(result_writer *w, const vox_model *m,
                               const vox_analysis_output *out) {
  const int ncid = w->ncid;
  const vox_grid *g = &m->grid;
  int z, y, x, nz_, ny_, nx_, comp, voigt, results;
  R_TRY(w, nc_redef(ncid), "the header");
  R_TRY(w, nc_inq_dimid(ncid, "z", &z), "dimension z");
  R_TRY(w, nc_inq_dimid(ncid, "y", &y), "dimension y");
  R_TRY(w, nc_inq_dimid(ncid, "x", &x), "dimension x");
  R_TRY(w, nc_inq_dimid(ncid, "node_z", &nz_), "dimension node_z");
  R_TRY(w, nc_inq_dimid(ncid, "node_y", &ny_), "dimension node_y");
  R_TRY(w, nc_inq_dimid(ncid, "node_x", &nx_), "dimension node_x");
  R_TRY(w, nc_inq_dimid(ncid, "component", &comp), "dimension component");
  R_TRY(w, nc_def_dim(ncid, "strain_component", 6, &voigt), "dimension strain_component");

  const size_t ne = (size_t)vox_grid_elements(g);
  const size_t cell[4] = {(size_t)g->nz, (size_t)g->ny, (size_t)g->nx, 6};
  const size_t node[4] = {(size_t)g->nz + 1, (size_t)g->ny + 1, (size_t)g->nx + 1, 3};
  const int cell_dims[4] = {z, y, x, voigt}, node_dims[4] = {nz_, ny_, nx_, comp};
  int v_reaction, v_strain, v_stress, v_sed, v_vm, v_eff;
  R_TRY(w, def_grid_var(ncid, "reaction_force", NC_DOUBLE, 4, node_dims, node, 8, &v_reaction),
        "reaction_force");
  R_TRY(w,
        var_atts(ncid, v_reaction, "nodal reaction force of the supports", "N",
                 "K u on constrained degrees of freedom, 0 elsewhere; component 0 = x, 1 = y, "
                 "2 = z"),
        "reaction_force");
  R_TRY(w, def_grid_var(ncid, "strain", NC_FLOAT, 4, cell_dims, cell, 4, &v_strain), "strain");
  R_TRY(w, var_atts(ncid, v_strain, "element strain", "1", voigt_comment), "strain");
  R_TRY(w, def_grid_var(ncid, "stress", NC_FLOAT, 4, cell_dims, cell, 4, &v_stress), "stress");
  R_TRY(w, var_atts(ncid, v_stress, "element stress", "MPa", voigt_comment), "stress");
  R_TRY(w, def_grid_var(ncid, "strain_energy_density", NC_FLOAT, 3, cell_dims, cell, 4, &v_sed),
        "strain_energy_density");
  R_TRY(w,
        var_atts(ncid, v_sed, "element strain-energy density", "MPa",
                 "element strain energy 1/2 u'Ke u over the element volume (mJ/mm^3); NaN "
                 "for empty voxels"),
        "strain_energy_density");
  R_TRY(w, def_grid_var(ncid, "von_mises", NC_FLOAT, 3, cell_dims, cell, 4, &v_vm), "von_mises");
  R_TRY(w, var_atts(ncid, v_vm, "von Mises stress at the element centre", "MPa", NULL),
        "von_mises");
  R_TRY(w, def_grid_var(ncid, "effective_strain", NC_FLOAT, 3, cell_dims, cell, 4, &v_eff),
        "effective_strain");
  R_TRY(w,
        var_atts(ncid, v_eff, "effective strain sqrt(2 SED / E)", "1",
                 "E the element's Young's modulus (Pistoia et al. 2002)"),
        "effective_strain");
  const float nanf_ = NAN;
  const int fvars[] = {v_strain, v_stress, v_sed, v_vm, v_eff};
  for (size_t i = 0; i < sizeof fvars / sizeof fvars[0]; i++)
    R_TRY(w, nc_put_att_float(ncid, fvars[i], "_FillValue", NC_FLOAT, 1, &nanf_), "_FillValue");

  R_TRY(w, nc_def_grp(ncid, "results", &results), "group results");
  R_TRY(w, put_text(results, NC_GLOBAL, "comment", "summary of the analysis; <name>_units "
                                                   "gives a value's units"),
        "group results");
  for (size_t i = 0; i < out->n_summary; i++) {
    const vox_summary_entry *e = &out->summary[i];
    if (e->text)
      R_TRY(w, put_text(results, NC_GLOBAL, e->name, e->text), e->name);
    else
      R_TRY(w, nc_put_att_double(results, NC_GLOBAL, e->name, NC_DOUBLE, 1, &e->value), e->name);
    if (e->units) {
      char units_name[VOX_NAME_MAX + 8];
      snprintf(units_name, sizeof units_name, "%s_units", e->name);
      R_TRY(w, put_text(results, NC_GLOBAL, units_name, e->units), e->name);
    }
  }
  R_TRY(w, nc_enddef(ncid), "the header");

  R_TRY(w, nc_put_var_double(ncid, v_reaction, out->reaction), "reaction_force");
  const struct {
    int varid;
    const double *data;
    size_t n;
    const char *name;
  } fields[] = {{v_strain, out->fields.strain, 6 * ne, "strain"},
                {v_stress, out->fields.stress, 6 * ne, "stress"},
                {v_sed, out->fields.sed, ne, "strain_energy_density"},
                {v_vm, out->fields.von_mises, ne, "von_mises"},
                {v_eff, out->fields.effective_strain, ne, "effective_strain"}};
  for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
    float *f = to_float(fields[i].data, fields[i].n);
    if (!f) return vox_error(w->ctx, VOX_ERR_NO_MEMORY, "%s: out of memory", w->path);
    int err = nc_put_var_float(ncid, fields[i].varid, f);
    free(f);
    if (err) return nc_fail(w, err, fields[i].name);
  }
  return VOX_OK;
}

vox_status vox_result_write(vox_context *ctx, const char *path, const vox_model *model,
                            const vox_analysis_output *output) {
  if (!model->displacement || model->stage != VOX_STAGE_ANALYSIS || !output->reaction ||
      !output->fields.strain || !output->fields.stress || !output->fields.sed ||
      !output->fields.von_mises || !output->fields.effective_strain)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "%s: an analysis result needs the displacement and every field", path);
  /* the model file goes to a name of our own beside the output (the model
   * writer is atomic itself), gets the analysis added, and is renamed */
  const size_t size = strlen(path) + 48;
  char *tmp = malloc(size);
  if (!tmp) return vox_error(ctx, VOX_ERR_NO_MEMORY, "%s: out of memory", path);
  snprintf(tmp, size, "%s.analysis.%ld.tmp", path, (long)getpid());
  vox_status s = vox_model_write(ctx, tmp, model);
  if (s) {
    /* the message names the temporary file: name the output instead */
    char why[512];
    snprintf(why, sizeof why, "%s", vox_context_message(ctx));
    vox_error(ctx, s, "%s: cannot write the result: %s", path, why);
    free(tmp);
    return s;
  }
  result_writer w = {ctx, path, -1};
  int err = nc_open(tmp, NC_WRITE, &w.ncid);
  if (err) {
    s = nc_fail(&w, err, "the file");
  } else {
    s = add_analysis(&w, model, output);
    err = nc_close(w.ncid);
    if (!s && err) s = nc_fail(&w, err, "the file");
  }
  if (!s) {
    int fd = open(tmp, O_RDONLY);
    if (fd < 0 || fsync(fd))
      s = vox_error(ctx, VOX_ERR_IO, "%s: cannot write the file: %s", path, strerror(errno));
    if (fd >= 0) close(fd);
  }
  if (!s && rename(tmp, path))
    s = vox_error(ctx, VOX_ERR_IO, "%s: cannot move the written file into place: %s", path,
                  strerror(errno));
  if (s) unlink(tmp);
  free(tmp);
  return s;
}
