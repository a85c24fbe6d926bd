/* SPDX-License-Identifier: BSD-3-Clause */
/* io: reading bad input fails with the right status and a one-line message
 * that names the file and the cause, and leaves the model zeroed. Covers a
 * missing or unreadable file, a folder, text, an empty and a truncated file,
 * foreign netCDF files, a newer schema, missing or misshapen variables and
 * content that vox_model_validate refuses. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <netcdf.h>

#include "../check.h"
#include "sample_model.h"
#include "voxfe/io.h"

static char dir[] = "io_bad_input.XXXXXX";
static char base[256]; /* a valid file the cases start from */

static const char *in_dir(char *buf, size_t size, const char *name) {
  snprintf(buf, size, "%s/%s", dir, name);
  return buf;
}

static void expect_failure(vox_context *ctx, const char *path, vox_status want,
                           const char *needle) {
  vox_model m;
  memset(&m, 0xab, sizeof m); /* the reader must zero it */
  vox_status got = vox_model_read(ctx, path, &m);
  const char *msg = vox_context_message(ctx);
  const char *slash = strrchr(path, '/');
  printf("  %-24s %-16s %s\n", slash ? slash + 1 : path, vox_status_string(got), msg);
  CHECK(got == want);
  CHECK(strstr(msg, path) != NULL);
  CHECK(strchr(msg, '\n') == NULL);
  if (needle && !strstr(msg, needle)) {
    fprintf(stderr, "message lacks '%s'\n", needle);
    CHECK(strstr(msg, needle) != NULL);
  }
  vox_model zero;
  memset(&zero, 0, sizeof zero);
  CHECK(!memcmp(&m, &zero, sizeof m));
  if (got == VOX_OK) vox_model_free(&m);
}

static int write_bytes(const char *path, const void *data, size_t size) {
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  size_t n = fwrite(data, 1, size, f);
  return fclose(f) || n != size ? -1 : 0;
}

/* Copies the first `size` bytes of `from` (all when size is SIZE_MAX). */
static void copy_file(const char *from, const char *to, size_t size) {
  FILE *f = fopen(from, "rb");
  CHECK(f != NULL);
  if (!f) return;
  char *data = malloc(1 << 20);
  size_t n = fread(data, 1, 1 << 20, f);
  fclose(f);
  CHECK(n < (1 << 20));
  CHECK(write_bytes(to, data, n < size ? n : size) == 0);
  free(data);
}

static size_t file_size(const char *path) {
  struct stat st;
  return stat(path, &st) ? 0 : (size_t)st.st_size;
}

/* A copy of the valid file, opened for changes. */
static int open_copy(const char *path) {
  int ncid = -1;
  copy_file(base, path, SIZE_MAX);
  CHECK(nc_open(path, NC_WRITE, &ncid) == NC_NOERR);
  return ncid;
}

/* A netCDF-4 file with voxfe's global attributes and grid dimensions and
 * whatever `label` the caller defines. */
static int create_skeleton(const char *path, int *dims) {
  int ncid, version = VOX_SCHEMA_VERSION;
  double one[3] = {1, 1, 1};
  CHECK(nc_create(path, NC_CLOBBER | NC_NETCDF4, &ncid) == NC_NOERR);
  nc_put_att_text(ncid, NC_GLOBAL, "Conventions", 14, "CF-1.8 voxfe-1");
  nc_put_att_int(ncid, NC_GLOBAL, "voxfe_schema_version", NC_INT, 1, &version);
  nc_put_att_text(ncid, NC_GLOBAL, "stage", 5, "model");
  nc_put_att_double(ncid, NC_GLOBAL, "voxel_size", NC_DOUBLE, 3, one);
  nc_put_att_double(ncid, NC_GLOBAL, "origin", NC_DOUBLE, 3, one);
  CHECK(nc_def_dim(ncid, "z", 2, &dims[0]) == NC_NOERR);
  CHECK(nc_def_dim(ncid, "y", 3, &dims[1]) == NC_NOERR);
  CHECK(nc_def_dim(ncid, "x", 4, &dims[2]) == NC_NOERR);
  return ncid;
}

static void test_not_a_model_file(vox_context *ctx) {
  char path[512];
  expect_failure(ctx, in_dir(path, sizeof path, "missing.nc"), VOX_ERR_IO,
                 "No such file or directory");
  expect_failure(ctx, dir, VOX_ERR_IO, "Is a directory");

  in_dir(path, sizeof path, "text.nc");
  const char text[] = "netcdf model {\ndimensions:\n  x = 5 ;\n}\n";
  CHECK(write_bytes(path, text, sizeof text - 1) == 0);
  expect_failure(ctx, path, VOX_ERR_FORMAT, "not a netCDF file or truncated");

  in_dir(path, sizeof path, "empty.nc");
  CHECK(write_bytes(path, "", 0) == 0);
  expect_failure(ctx, path, VOX_ERR_FORMAT, "not a netCDF file or truncated");

  in_dir(path, sizeof path, "truncated.nc");
  copy_file(base, path, file_size(base) / 2);
  expect_failure(ctx, path, VOX_ERR_FORMAT, NULL);

  /* Foreign netCDF files, version 4 and classic. */
  int ncid, dim, varid;
  double values[3] = {1, 2, 3};
  in_dir(path, sizeof path, "foreign4.nc");
  CHECK(nc_create(path, NC_CLOBBER | NC_NETCDF4, &ncid) == NC_NOERR);
  CHECK(nc_def_dim(ncid, "time", 3, &dim) == NC_NOERR);
  CHECK(nc_def_var(ncid, "temperature", NC_DOUBLE, 1, &dim, &varid) == NC_NOERR);
  CHECK(nc_put_var_double(ncid, varid, values) == NC_NOERR);
  CHECK(nc_close(ncid) == NC_NOERR);
  expect_failure(ctx, path, VOX_ERR_FORMAT, "not a voxfe model file");

  in_dir(path, sizeof path, "foreign3.nc");
  CHECK(nc_create(path, NC_CLOBBER, &ncid) == NC_NOERR);
  nc_put_att_text(ncid, NC_GLOBAL, "Conventions", 6, "CF-1.8");
  CHECK(nc_def_dim(ncid, "x", 3, &dim) == NC_NOERR);
  CHECK(nc_close(ncid) == NC_NOERR);
  expect_failure(ctx, path, VOX_ERR_FORMAT, "not a voxfe model file");

  if (geteuid() != 0) { /* root reads anything */
    in_dir(path, sizeof path, "unreadable.nc");
    copy_file(base, path, SIZE_MAX);
    CHECK(chmod(path, 0) == 0);
    expect_failure(ctx, path, VOX_ERR_IO, "Permission denied");
  }
}

static void test_bad_schema(vox_context *ctx) {
  char path[512];
  int ncid, varid, dims[3];

  int newer = VOX_SCHEMA_VERSION_NEWEST + 1;
  ncid = open_copy(in_dir(path, sizeof path, "newer.nc"));
  CHECK(nc_redef(ncid) == NC_NOERR);
  CHECK(nc_put_att_int(ncid, NC_GLOBAL, "voxfe_schema_version", NC_INT, 1, &newer) == NC_NOERR);
  CHECK(nc_close(ncid) == NC_NOERR);
  expect_failure(ctx, path, VOX_ERR_FORMAT, "newer");

  /* heat models come with schema version 2; a version-1 file claiming heat
   * was not written by voxfe */
  ncid = open_copy(in_dir(path, sizeof path, "heat_v1.nc"));
  CHECK(nc_redef(ncid) == NC_NOERR);
  CHECK(nc_put_att_text(ncid, NC_GLOBAL, "physics", 4, "heat") == NC_NOERR);
  CHECK(nc_close(ncid) == NC_NOERR);
  expect_failure(ctx, path, VOX_ERR_FORMAT, "physics 'heat' needs voxfe_schema_version 2");

  /* a mechanism's objective comes with schema version 3: a version-1 file
   * that claims it was not written by voxfe */
  ncid = open_copy(in_dir(path, sizeof path, "objective_v1.nc"));
  CHECK(nc_redef(ncid) == NC_NOERR);
  CHECK(nc_put_att_text(ncid, NC_GLOBAL, "objective", 19, "output_displacement") == NC_NOERR);
  CHECK(nc_close(ncid) == NC_NOERR);
  expect_failure(ctx, path, VOX_ERR_FORMAT,
                 "objective 'output_displacement' needs voxfe_schema_version 3");

  ncid = open_copy(in_dir(path, sizeof path, "physics.nc"));
  CHECK(nc_redef(ncid) == NC_NOERR);
  CHECK(nc_put_att_text(ncid, NC_GLOBAL, "physics", 5, "sound") == NC_NOERR);
  CHECK(nc_close(ncid) == NC_NOERR);
  expect_failure(ctx, path, VOX_ERR_FORMAT, "unknown physics 'sound'");

  ncid = open_copy(in_dir(path, sizeof path, "no_label.nc"));
  CHECK(nc_redef(ncid) == NC_NOERR);
  CHECK(nc_inq_varid(ncid, "label", &varid) == NC_NOERR);
  CHECK(nc_rename_var(ncid, varid, "old_label") == NC_NOERR);
  CHECK(nc_close(ncid) == NC_NOERR);
  expect_failure(ctx, path, VOX_ERR_FORMAT, "'label'");

  ncid = open_copy(in_dir(path, sizeof path, "no_voxel_size.nc"));
  CHECK(nc_redef(ncid) == NC_NOERR);
  CHECK(nc_del_att(ncid, NC_GLOBAL, "voxel_size") == NC_NOERR);
  CHECK(nc_close(ncid) == NC_NOERR);
  expect_failure(ctx, path, VOX_ERR_FORMAT, "'voxel_size'");

  ncid = open_copy(in_dir(path, sizeof path, "no_constraint_value.nc"));
  CHECK(nc_redef(ncid) == NC_NOERR);
  CHECK(nc_inq_varid(ncid, "constraint_value", &varid) == NC_NOERR);
  CHECK(nc_rename_var(ncid, varid, "constraint_values") == NC_NOERR);
  CHECK(nc_close(ncid) == NC_NOERR);
  expect_failure(ctx, path, VOX_ERR_FORMAT, "'constraint_value'");

  ncid = create_skeleton(in_dir(path, sizeof path, "label_2d.nc"), dims);
  CHECK(nc_def_var(ncid, "label", NC_UBYTE, 2, dims + 1, &varid) == NC_NOERR);
  CHECK(nc_close(ncid) == NC_NOERR);
  expect_failure(ctx, path, VOX_ERR_FORMAT, "'label' has 2 dimension(s), expected 3");

  ncid = create_skeleton(in_dir(path, sizeof path, "label_xyz.nc"), dims);
  CHECK(nc_def_var(ncid, "label", NC_UBYTE, 3, (int[3]){dims[2], dims[1], dims[0]}, &varid) ==
        NC_NOERR);
  CHECK(nc_close(ncid) == NC_NOERR);
  expect_failure(ctx, path, VOX_ERR_FORMAT, "'label' has dimensions (x,y,z), expected (z,y,x)");

  ncid = create_skeleton(in_dir(path, sizeof path, "label_float.nc"), dims);
  CHECK(nc_def_var(ncid, "label", NC_FLOAT, 3, dims, &varid) == NC_NOERR);
  CHECK(nc_close(ncid) == NC_NOERR);
  expect_failure(ctx, path, VOX_ERR_FORMAT, "'label' should hold an integer");

  /* An integer label of another type is fine while its values fit. */
  ncid = create_skeleton(in_dir(path, sizeof path, "label_int.nc"), dims);
  int labels[24] = {0};
  CHECK(nc_def_var(ncid, "label", NC_INT, 3, dims, &varid) == NC_NOERR);
  CHECK(nc_put_var_int(ncid, varid, labels) == NC_NOERR);
  CHECK(nc_close(ncid) == NC_NOERR);
  vox_model m;
  CHECK_OK(ctx, vox_model_read(ctx, path, &m));
  CHECK(m.grid.nx == 4 && m.grid.ny == 3 && m.grid.nz == 2);
  vox_model_free(&m);
  labels[5] = 300;
  ncid = create_skeleton(in_dir(path, sizeof path, "label_range.nc"), dims);
  CHECK(nc_def_var(ncid, "label", NC_INT, 3, dims, &varid) == NC_NOERR);
  CHECK(nc_put_var_int(ncid, varid, labels) == NC_NOERR);
  CHECK(nc_close(ncid) == NC_NOERR);
  expect_failure(ctx, path, VOX_ERR_FORMAT, "'label'");
}

/* Files that follow the schema but hold a model vox_model_validate refuses. */
static void test_bad_content(vox_context *ctx) {
  char path[512];
  int ncid, varid;
  size_t zero = 0;

  ncid = open_copy(in_dir(path, sizeof path, "unknown_label.nc"));
  unsigned char nine = 9;
  CHECK(nc_inq_varid(ncid, "label", &varid) == NC_NOERR);
  CHECK(nc_put_var1_uchar(ncid, varid, (size_t[3]){0, 0, 0}, &nine) == NC_NOERR);
  CHECK(nc_close(ncid) == NC_NOERR);
  expect_failure(ctx, path, VOX_ERR_FORMAT, "label 9 is used but has no material");

  ncid = open_copy(in_dir(path, sizeof path, "bad_role.nc"));
  unsigned char role = 7;
  CHECK(nc_inq_varid(ncid, "material_role", &varid) == NC_NOERR);
  CHECK(nc_put_var1_uchar(ncid, varid, &zero, &role) == NC_NOERR);
  CHECK(nc_close(ncid) == NC_NOERR);
  expect_failure(ctx, path, VOX_ERR_FORMAT, "unknown role");

  ncid = open_copy(in_dir(path, sizeof path, "twice_label.nc"));
  unsigned char two = 2;
  CHECK(nc_inq_varid(ncid, "material_label", &varid) == NC_NOERR);
  CHECK(nc_put_var1_uchar(ncid, varid, &zero, &two) == NC_NOERR);
  CHECK(nc_close(ncid) == NC_NOERR);
  expect_failure(ctx, path, VOX_ERR_FORMAT, "defined twice");

  ncid = open_copy(in_dir(path, sizeof path, "bad_node.nc"));
  long long node = 1000000;
  CHECK(nc_inq_varid(ncid, "constraint_node", &varid) == NC_NOERR);
  CHECK(nc_put_var1_longlong(ncid, varid, &zero, &node) == NC_NOERR);
  CHECK(nc_close(ncid) == NC_NOERR);
  expect_failure(ctx, path, VOX_ERR_FORMAT, "out of range");

  ncid = open_copy(in_dir(path, sizeof path, "bad_case.nc"));
  int load_case = 2;
  CHECK(nc_inq_varid(ncid, "load_case_index", &varid) == NC_NOERR);
  CHECK(nc_put_var1_int(ncid, varid, &zero, &load_case) == NC_NOERR);
  CHECK(nc_close(ncid) == NC_NOERR);
  expect_failure(ctx, path, VOX_ERR_FORMAT, "load case 2 out of range");

  ncid = open_copy(in_dir(path, sizeof path, "long_name.nc"));
  const char *name = "a material name that is far longer than the sixty-three bytes allowed";
  CHECK(nc_inq_varid(ncid, "material_name", &varid) == NC_NOERR);
  CHECK(nc_put_var1_string(ncid, varid, &zero, &name) == NC_NOERR);
  CHECK(nc_close(ncid) == NC_NOERR);
  expect_failure(ctx, path, VOX_ERR_FORMAT, "material_name 0 is longer than 63 bytes");

  ncid = open_copy(in_dir(path, sizeof path, "bad_stage.nc"));
  CHECK(nc_redef(ncid) == NC_NOERR);
  CHECK(nc_put_att_text(ncid, NC_GLOBAL, "stage", 6, "result") == NC_NOERR);
  CHECK(nc_close(ncid) == NC_NOERR);
  expect_failure(ctx, path, VOX_ERR_FORMAT, "unknown stage");

  /* a periodic cell's design settings, edited by hand */
  const struct {
    const char *file, *attribute, *value, *message;
  } cell[] = {
      {"bad_cell_objective.nc", "cell_objective", "compliance", "unknown cell_objective"},
      {"bad_cell_symmetry.nc", "cell_symmetry", "mirror", "unknown cell_symmetry 'mirror'"},
      {"custom_no_formula.nc", "cell_objective", "custom", "without a cell_expression"},
      {"bad_cell_expression.nc", "cell_expression", "C11 +", "cell_expression: expression"},
  };
  for (size_t i = 0; i < sizeof cell / sizeof *cell; i++) {
    ncid = open_copy(in_dir(path, sizeof path, cell[i].file));
    CHECK(nc_redef(ncid) == NC_NOERR);
    CHECK(nc_put_att_text(ncid, NC_GLOBAL, cell[i].attribute, strlen(cell[i].value),
                          cell[i].value) == NC_NOERR);
    CHECK(nc_close(ncid) == NC_NOERR);
    expect_failure(ctx, path, VOX_ERR_FORMAT, cell[i].message);
  }
}

static void remove_dir(void) {
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

int main(void) {
  vox_context *ctx;
  if (vox_context_create(&ctx)) return 1;
  CHECK(mkdtemp(dir) != NULL);
  vox_model m;
  CHECK_OK(ctx, sample_full_model(ctx, &m));
  CHECK_OK(ctx, vox_model_write(ctx, in_dir(base, sizeof base, "valid.nc"), &m));
  vox_model_free(&m);
  CHECK_OK(ctx, vox_model_read(ctx, base, &m));
  vox_model_free(&m);

  test_not_a_model_file(ctx);
  test_bad_schema(ctx);
  test_bad_content(ctx);
  remove_dir();
  vox_context_destroy(ctx);
  CHECK_DONE();
}
