/* SPDX-License-Identifier: BSD-3-Clause */
/* io: a model written and read back is identical (doubles bit for bit; an
 * analysis's displacement on the bone nodes too), large
 * variables are chunked and compressed, and a failed write leaves nothing
 * behind: no file in a missing folder, an existing file untouched, no
 * temporary files. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <netcdf.h>

#include "../check.h"
#include "sample_model.h"
#include "voxfe/io.h"

static int same_bits(double a, double b) { return memcmp(&a, &b, sizeof a) == 0; }

static int same_text(const char *a, const char *b) {
  return (!a && !b) || (a && b && !strcmp(a, b));
}

/* Every field of b equals a's; doubles compare by their bits. */
static void check_same(const vox_model *a, const vox_model *b) {
  CHECK(a->stage == b->stage);
  CHECK(a->grid.nx == b->grid.nx && a->grid.ny == b->grid.ny && a->grid.nz == b->grid.nz);
  if (a->grid.nx != b->grid.nx || a->grid.ny != b->grid.ny || a->grid.nz != b->grid.nz) return;
  for (int i = 0; i < 3; i++) {
    CHECK(same_bits(a->grid.voxel_size[i], b->grid.voxel_size[i]));
    CHECK(same_bits(a->grid.origin[i], b->grid.origin[i]));
  }
  size_t ne = (size_t)vox_grid_elements(&a->grid), nn = (size_t)vox_grid_nodes(&a->grid);
  CHECK(b->label && !memcmp(a->label, b->label, ne));

  CHECK(a->n_materials == b->n_materials);
  for (int i = 0; i < a->n_materials && i < b->n_materials; i++) {
    const vox_material *x = &a->materials[i], *y = &b->materials[i];
    CHECK(x->label == y->label);
    CHECK(!strcmp(x->name, y->name));
    CHECK(x->role == y->role);
    CHECK(same_bits(x->youngs_modulus, y->youngs_modulus));
    CHECK(same_bits(x->poisson_ratio, y->poisson_ratio));
    CHECK(same_bits(x->conductivity, y->conductivity));
  }
  CHECK(a->n_constraints == b->n_constraints);
  for (size_t i = 0; i < a->n_constraints && i < b->n_constraints; i++) {
    const vox_constraint *x = &a->constraints[i], *y = &b->constraints[i];
    CHECK(x->node == y->node && x->component == y->component && same_bits(x->value, y->value));
  }
  CHECK(a->n_load_cases == b->n_load_cases);
  for (int i = 0; i < a->n_load_cases && i < b->n_load_cases; i++)
    CHECK(!strcmp(a->load_case_names[i], b->load_case_names[i]));
  CHECK(a->n_loads == b->n_loads);
  for (size_t i = 0; i < a->n_loads && i < b->n_loads; i++) {
    const vox_load *x = &a->loads[i], *y = &b->loads[i];
    CHECK(x->node == y->node && x->component == y->component && x->load_case == y->load_case &&
          same_bits(x->value, y->value));
  }

  CHECK(a->objective == b->objective);
  CHECK(!a->load_case_weights == !b->load_case_weights);
  for (int i = 0; a->load_case_weights && b->load_case_weights && i < a->n_load_cases; i++)
    CHECK(same_bits(a->load_case_weights[i], b->load_case_weights[i]));
  CHECK(a->n_springs == b->n_springs);
  for (size_t i = 0; i < a->n_springs && i < b->n_springs; i++) {
    const vox_spring *x = &a->springs[i], *y = &b->springs[i];
    CHECK(x->node == y->node && x->component == y->component &&
          same_bits(x->stiffness, y->stiffness));
  }
  CHECK(a->n_outputs == b->n_outputs);
  for (size_t i = 0; i < a->n_outputs && i < b->n_outputs; i++) {
    const vox_output *x = &a->outputs[i], *y = &b->outputs[i];
    CHECK(x->node == y->node && x->component == y->component && same_bits(x->weight, y->weight));
  }

  CHECK(!a->intensity == !b->intensity);
  if (a->intensity && b->intensity) {
    CHECK(!memcmp(a->intensity, b->intensity, ne * sizeof(float)));
    CHECK(!strcmp(a->intensity_units, b->intensity_units));
  }
  CHECK(!a->density == !b->density);
  if (a->density && b->density) CHECK(!memcmp(a->density, b->density, ne * sizeof(double)));
  CHECK(!a->displacement == !b->displacement);
  if (a->displacement && b->displacement && a->n_load_cases == b->n_load_cases)
    CHECK(!memcmp(a->displacement, b->displacement,
                  (size_t)a->n_load_cases * nn * 3 * sizeof(double)));
  CHECK(a->n_history == b->n_history);
  for (size_t i = 0; i < a->n_history && i < b->n_history; i++) {
    const vox_history_row *x = &a->history[i], *y = &b->history[i];
    CHECK(x->iteration == y->iteration && x->cg_iterations == y->cg_iterations);
    CHECK(same_bits(x->objective, y->objective) &&
          same_bits(x->volume_fraction, y->volume_fraction) && same_bits(x->change, y->change) &&
          same_bits(x->non_discreteness, y->non_discreteness) &&
          same_bits(x->penalty, y->penalty) && same_bits(x->q, y->q) &&
          same_bits(x->seconds, y->seconds));
  }
  CHECK(same_text(a->history_text, b->history_text));
  CHECK(same_text(a->title, b->title));
  CHECK(same_text(a->cell_objective, b->cell_objective));
  CHECK(same_text(a->cell_expression, b->cell_expression));
  CHECK(same_text(a->cell_symmetry, b->cell_symmetry));
  CHECK(a->n_snapshots == b->n_snapshots);
  if (a->n_snapshots == b->n_snapshots && a->n_snapshots) {
    CHECK(!memcmp(a->snapshot_iteration, b->snapshot_iteration,
                  a->n_snapshots * sizeof *a->snapshot_iteration));
    CHECK(!memcmp(a->snapshot_density, b->snapshot_density,
                  a->n_snapshots * ne * sizeof *a->snapshot_density));
  }
}

static void roundtrip_with(vox_context *ctx, const vox_model *model, const char *path,
                           const vox_write_options *options) {
  vox_model back;
  CHECK_OK(ctx, vox_model_write_with(ctx, path, model, options));
  CHECK_OK(ctx, vox_model_read(ctx, path, &back));
  check_same(model, &back);
  vox_model_free(&back);
}

static void roundtrip(vox_context *ctx, const vox_model *model, const char *path) {
  roundtrip_with(ctx, model, path, NULL);
}

static char *file_bytes(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  *size = (size_t)ftell(f);
  rewind(f);
  char *data = malloc(*size + 1);
  if (data && fread(data, 1, *size, f) != *size) {
    free(data);
    data = NULL;
  }
  fclose(f);
  return data;
}

static int count_temp_files(const char *dir) {
  int n = 0;
  DIR *d = opendir(dir);
  if (!d) return -1;
  for (struct dirent *e; (e = readdir(d));) n += strstr(e->d_name, ".tmp.") != NULL;
  closedir(d);
  return n;
}

static void remove_dir(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return;
  char path[4096];
  for (struct dirent *e; (e = readdir(d));) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    unlink(path);
  }
  closedir(d);
  rmdir(dir);
}

static void check_error_message(vox_context *ctx, const char *path) {
  const char *msg = vox_context_message(ctx);
  CHECK(strstr(msg, path) != NULL);
  CHECK(strchr(msg, '\n') == NULL);
  printf("  expected failure: %s\n", msg);
}

/* The full sample, the bare model, and a model with load cases but no loads
 * and empty (not absent) text. */
static void test_roundtrips(vox_context *ctx, const char *dir) {
  char path[512];
  vox_model m;
  snprintf(path, sizeof path, "%s/full.nc", dir);
  CHECK_OK(ctx, sample_full_model(ctx, &m));
  roundtrip(ctx, &m, path);
  roundtrip(ctx, &m, path); /* over an existing file */
  /* the fields written in slabs of every kind (the displacement's 2 cases
   * of 4 x 5 x 6 nodes: one value, one node, runs of nodes, runs of rows,
   * one layer, one case at a time); the same values back */
  const size_t slabs[] = {1, 24, 100, 480, 1000, 4000};
  for (size_t i = 0; i < sizeof slabs / sizeof slabs[0]; i++) {
    vox_write_options slabbed;
    vox_write_options_default(&slabbed);
    slabbed.slab_bytes = slabs[i];
    roundtrip_with(ctx, &m, path, &slabbed);
  }

  /* The file mode follows the umask, not mkstemp's 0600. */
  mode_t mask = umask(0);
  umask(mask);
  struct stat st;
  CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == (0666 & ~mask));

  /* By default the displacement is stored as it is; with deflate_fields the
   * small variables are chunked as the schema says: whole grid, one load
   * case per displacement chunk, shuffle and deflate. */
  int ncid, varid, storage, shuffle, deflate, level;
  size_t chunk[5];
  CHECK(nc_open(path, NC_NOWRITE, &ncid) == NC_NOERR);
  CHECK(nc_inq_varid(ncid, "displacement", &varid) == NC_NOERR);
  CHECK(nc_inq_var_deflate(ncid, varid, &shuffle, &deflate, &level) == NC_NOERR);
  CHECK(!shuffle && !deflate);
  nc_close(ncid);
  vox_write_options deflated;
  vox_write_options_default(&deflated);
  deflated.deflate_fields = 1;
  CHECK_OK(ctx, vox_model_write_with(ctx, path, &m, &deflated));
  CHECK(nc_open(path, NC_NOWRITE, &ncid) == NC_NOERR);
  CHECK(nc_inq_varid(ncid, "displacement", &varid) == NC_NOERR);
  CHECK(nc_inq_var_chunking(ncid, varid, &storage, chunk) == NC_NOERR);
  CHECK(storage == NC_CHUNKED && chunk[0] == 1 && chunk[1] == 4 && chunk[2] == 5 && chunk[3] == 6 &&
        chunk[4] == 3);
  CHECK(nc_inq_var_deflate(ncid, varid, &shuffle, &deflate, &level) == NC_NOERR);
  CHECK(shuffle && deflate && level >= 1 && level <= 4);
  int version;
  CHECK(nc_get_att_int(ncid, NC_GLOBAL, "voxfe_schema_version", &version) == NC_NOERR &&
        version == VOX_SCHEMA_VERSION);
  nc_close(ncid);

  /* a compliant mechanism with weighted load cases: springs, outputs,
   * objective and weights come back, in a file of schema version 3 */
  snprintf(path, sizeof path, "%s/mechanism.nc", dir);
  CHECK_OK(ctx, vox_model_add_spring(ctx, &m, 7, 0, 1000.5));
  CHECK_OK(ctx, vox_model_add_spring(ctx, &m, 9, 2, 3e-3));
  CHECK_OK(ctx, vox_model_add_output(ctx, &m, 11, 2, -0.25));
  m.objective = VOX_OBJECTIVE_OUTPUT_DISPLACEMENT;
  CHECK_OK(ctx, vox_model_set_load_cases(ctx, &m, 1)); /* a mechanism has one case */
  for (size_t i = 0; i < m.n_loads; i++) m.loads[i].load_case = 0;
  free(m.displacement);
  m.displacement = NULL;
  roundtrip(ctx, &m, path);
  CHECK(nc_open(path, NC_NOWRITE, &ncid) == NC_NOERR);
  CHECK(nc_get_att_int(ncid, NC_GLOBAL, "voxfe_schema_version", &version) == NC_NOERR &&
        version == VOX_SCHEMA_VERSION_OBJECTIVE);
  nc_close(ncid);
  vox_model_free(&m);

  snprintf(path, sizeof path, "%s/weights.nc", dir);
  CHECK_OK(ctx, sample_full_model(ctx, &m));
  const double weights[2] = {0.75, 2.5};
  CHECK(m.n_load_cases == 2);
  CHECK_OK(ctx, vox_model_set_load_case_weights(ctx, &m, weights));
  roundtrip(ctx, &m, path);
  vox_model_free(&m);

  /* a periodic cell's design settings (a problem file's `cell:`) */
  snprintf(path, sizeof path, "%s/cell.nc", dir);
  CHECK_OK(ctx, sample_bare_model(ctx, &m));
  m.cell_objective = strdup("custom");
  m.cell_expression = strdup("-(C11 + C22 + C33 + 2*(C12 + C13 + C23)) / 9");
  m.cell_symmetry = strdup("rotate3");
  roundtrip(ctx, &m, path);
  vox_model_free(&m);

  snprintf(path, sizeof path, "%s/bare.nc", dir);
  CHECK_OK(ctx, sample_bare_model(ctx, &m));
  roundtrip(ctx, &m, path);
  vox_model back;
  CHECK_OK(ctx, vox_model_read(ctx, path, &back));
  CHECK(back.n_materials == 0 && !back.materials && back.n_constraints == 0 && !back.constraints &&
        back.n_load_cases == 0 && !back.load_case_names && back.n_loads == 0 && !back.loads &&
        !back.intensity && !back.density && !back.displacement && back.n_history == 0 && !back.history &&
        !back.history_text && !back.title && back.stage == VOX_STAGE_MODEL);
  vox_model_free(&back);

  CHECK_OK(ctx, vox_model_set_load_cases(ctx, &m, 3));
  m.title = strdup("");
  m.history_text = strdup("");
  snprintf(path, sizeof path, "%s/cases.nc", dir);
  roundtrip(ctx, &m, path);
  vox_model_free(&m);
}

/* Zeroes the displacement at the nodes of no non-empty voxel (as the
 * solver leaves them); returns the number of the other (bone) nodes. */
static size_t zero_off_bone(vox_model *m) {
  const vox_grid *g = &m->grid;
  const int64_t nn = vox_grid_nodes(g);
  uint8_t *bone = calloc((size_t)nn, 1);
  for (int64_t k = 0; k < g->nz; k++)
    for (int64_t j = 0; j < g->ny; j++)
      for (int64_t i = 0; i < g->nx; i++)
        if (m->label[(k * g->ny + j) * g->nx + i])
          for (int c = 0; c < 8; c++)
            bone[((k + c / 4) * (g->ny + 1) + j + c / 2 % 2) * (g->nx + 1) + i + c % 2] = 1;
  size_t count = 0;
  for (int64_t n = 0; n < nn; n++) {
    count += bone[n];
    for (int l = 0; l < m->n_load_cases; l++)
      for (int c = 0; c < 3 && !bone[n]; c++) m->displacement[(l * nn + n) * 3 + c] = 0;
  }
  free(bone);
  return count;
}

/* Analysis results (stage analysis): the displacement on the bone nodes
 * (schema version 4) reads back bit for bit; an older analysis file (its
 * displacement on the whole node grid) still reads; a bone_node_index that
 * is not increasing, or a version-4 layout under an older version, is
 * refused. */
static void test_analysis_layout(vox_context *ctx, const char *dir) {
  char path[512];
  vox_model m;
  CHECK_OK(ctx, sample_full_model(ctx, &m));
  free(m.density); /* an analysis has no density */
  m.density = NULL;
  m.stage = VOX_STAGE_ANALYSIS;
  const size_t bone = zero_off_bone(&m);
  CHECK(bone > 0 && bone < (size_t)vox_grid_nodes(&m.grid));
  snprintf(path, sizeof path, "%s/analysis.nc", dir);
  roundtrip(ctx, &m, path);
  int ncid, dim, varid, version;
  size_t len;
  CHECK(nc_open(path, NC_NOWRITE, &ncid) == NC_NOERR);
  CHECK(nc_get_att_int(ncid, NC_GLOBAL, "voxfe_schema_version", &version) == NC_NOERR &&
        version == VOX_SCHEMA_VERSION_BONE_NODES);
  CHECK(nc_inq_dimid(ncid, "bone_node", &dim) == NC_NOERR);
  CHECK(nc_inq_dimlen(ncid, dim, &len) == NC_NOERR && len == bone);
  nc_close(ncid);

  /* the bad index, then the version too old for the layout */
  CHECK(nc_open(path, NC_WRITE, &ncid) == NC_NOERR);
  CHECK(nc_inq_varid(ncid, "bone_node_index", &varid) == NC_NOERR);
  long long first;
  const size_t one = 1;
  CHECK(nc_get_var1_longlong(ncid, varid, (size_t[]){0}, &first) == NC_NOERR);
  CHECK(nc_put_var1_longlong(ncid, varid, &one, &first) == NC_NOERR);
  nc_close(ncid);
  vox_model back;
  CHECK(vox_model_read(ctx, path, &back) == VOX_ERR_FORMAT);
  CHECK(strstr(vox_context_message(ctx), "bone_node_index[1]") != NULL);
  check_error_message(ctx, path);
  roundtrip(ctx, &m, path);
  CHECK(nc_open(path, NC_WRITE, &ncid) == NC_NOERR);
  version = VOX_SCHEMA_VERSION;
  CHECK(nc_put_att_int(ncid, NC_GLOBAL, "voxfe_schema_version", NC_INT, 1, &version) == NC_NOERR);
  nc_close(ncid);
  CHECK(vox_model_read(ctx, path, &back) == VOX_ERR_FORMAT);
  CHECK(strstr(vox_context_message(ctx), "needs voxfe_schema_version 4") != NULL);
  check_error_message(ctx, path);

  /* an analysis file of the old layout: written as a model, stage renamed */
  m.stage = VOX_STAGE_MODEL;
  snprintf(path, sizeof path, "%s/analysis_v1.nc", dir);
  CHECK_OK(ctx, vox_model_write(ctx, path, &m));
  CHECK(nc_open(path, NC_WRITE, &ncid) == NC_NOERR);
  CHECK(nc_redef(ncid) == NC_NOERR);
  CHECK(nc_put_att_text(ncid, NC_GLOBAL, "stage", 8, "analysis") == NC_NOERR);
  nc_close(ncid);
  m.stage = VOX_STAGE_ANALYSIS;
  CHECK_OK(ctx, vox_model_read(ctx, path, &back));
  check_same(&m, &back);
  vox_model_free(&back);
  vox_model_free(&m);
}

/* A model large enough for several chunks and compressed lists. */
static void test_chunked(vox_context *ctx, const char *dir) {
  char path[512];
  snprintf(path, sizeof path, "%s/large.nc", dir);
  vox_grid g = {.nx = 160, .ny = 128, .nz = 64, .voxel_size = {0.05, 0.05, 0.05}};
  vox_model m;
  CHECK_OK(ctx, vox_model_init(ctx, &m, &g));
  vox_material mat = {.label = 1, .name = "bone", .youngs_modulus = 1e4, .poisson_ratio = 0.3};
  CHECK_OK(ctx, vox_model_add_material(ctx, &m, &mat));
  int64_t ne = vox_grid_elements(&g);
  m.density = malloc((size_t)ne * sizeof(double));
  CHECK(m.density != NULL);
  if (!m.density) return;
  for (int64_t e = 0; e < ne; e++) {
    m.label[e] = (uint8_t)(e % 3 == 0);
    m.density[e] = 0.5 + 0.5 * sin(1e-3 * (double)e);
  }
  for (int64_t n = 0; n < (g.nx + 1) * (g.ny + 1); n++)
    for (int c = 0; c < 3; c++) CHECK_OK(ctx, vox_model_add_constraint(ctx, &m, n, c, 0));
  m.stage = VOX_STAGE_DESIGN;
  roundtrip(ctx, &m, path);

  int ncid, varid, storage, shuffle, deflate, level;
  size_t chunk[3];
  /* the density as it is by default, deflated in chunks when asked */
  CHECK(nc_open(path, NC_NOWRITE, &ncid) == NC_NOERR);
  CHECK(nc_inq_varid(ncid, "density", &varid) == NC_NOERR);
  CHECK(nc_inq_var_deflate(ncid, varid, &shuffle, &deflate, &level) == NC_NOERR);
  CHECK(!shuffle && !deflate);
  nc_close(ncid);
  vox_write_options deflated;
  vox_write_options_default(&deflated);
  deflated.deflate_fields = 1;
  CHECK_OK(ctx, vox_model_write_with(ctx, path, &m, &deflated));
  CHECK(nc_open(path, NC_NOWRITE, &ncid) == NC_NOERR);
  CHECK(nc_inq_varid(ncid, "label", &varid) == NC_NOERR);
  CHECK(nc_inq_var_chunking(ncid, varid, &storage, chunk) == NC_NOERR);
  CHECK(storage == NC_CHUNKED && chunk[0] == 64 && chunk[1] == 128 && chunk[2] == 160);
  /* 4 MiB holds 25 slabs of 160x128 doubles: three chunks, spread evenly. */
  CHECK(nc_inq_varid(ncid, "density", &varid) == NC_NOERR);
  CHECK(nc_inq_var_chunking(ncid, varid, &storage, chunk) == NC_NOERR);
  CHECK(storage == NC_CHUNKED && chunk[0] == 22 && chunk[1] == 128 && chunk[2] == 160);
  CHECK(nc_inq_var_deflate(ncid, varid, &shuffle, &deflate, &level) == NC_NOERR);
  CHECK(shuffle && deflate);
  CHECK(nc_inq_varid(ncid, "constraint_node", &varid) == NC_NOERR);
  CHECK(nc_inq_var_deflate(ncid, varid, &shuffle, &deflate, &level) == NC_NOERR);
  CHECK(shuffle && deflate);
  nc_close(ncid);
  vox_model_free(&m);
}

static void test_failed_writes(vox_context *ctx, const char *dir) {
  char path[512], missing[512];
  vox_model m;
  CHECK_OK(ctx, sample_full_model(ctx, &m));

  snprintf(missing, sizeof missing, "%s/no/such/folder/model.nc", dir);
  CHECK(vox_model_write(ctx, missing, &m) == VOX_ERR_IO);
  check_error_message(ctx, missing);
  CHECK(access(missing, F_OK) != 0);

  /* An invalid model (a label without material) leaves the old file as it was. */
  snprintf(path, sizeof path, "%s/keep.nc", dir);
  CHECK_OK(ctx, vox_model_write(ctx, path, &m));
  size_t size_before = 0, size_after = 0;
  char *before = file_bytes(path, &size_before);
  m.label[0] = 99;
  CHECK(vox_model_write(ctx, path, &m) == VOX_ERR_INVALID_ARGUMENT);
  check_error_message(ctx, path);
  m.label[0] = 1;
  char *after = file_bytes(path, &size_after);
  CHECK(before && after && size_before == size_after && !memcmp(before, after, size_before));
  free(after);

  /* A folder that refuses the temporary file: the write fails as I/O, the old
   * file stays. Root ignores the permission, so only others run this. */
  if (geteuid() != 0) {
    CHECK(chmod(dir, 0555) == 0);
    CHECK(vox_model_write(ctx, path, &m) == VOX_ERR_IO);
    check_error_message(ctx, path);
    CHECK(chmod(dir, 0755) == 0);
    after = file_bytes(path, &size_after);
    CHECK(before && after && size_before == size_after && !memcmp(before, after, size_before));
    free(after);
  }
  free(before);
  CHECK(count_temp_files(dir) == 0);
  vox_model_free(&m);
}

int main(void) {
  vox_context *ctx;
  if (vox_context_create(&ctx)) return 1;
  char dir[] = "io_roundtrip.XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  test_roundtrips(ctx, dir);
  test_analysis_layout(ctx, dir);
  test_chunked(ctx, dir);
  test_failed_writes(ctx, dir);
  remove_dir(dir);
  vox_context_destroy(ctx);
  CHECK_DONE();
}
