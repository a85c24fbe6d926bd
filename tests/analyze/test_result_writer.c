/* SPDX-License-Identifier: BSD-3-Clause */
/* The result file written beside the analysis (vox_result_writer_*): begun
 * before the displacement is filled in, the fields and the summary handed
 * over later, it must be the file that vox_result_write makes in one go,
 * variable for variable and byte for byte; cancelled at any stage, or
 * refused, it must leave no file and no temporary one behind. The same for
 * the n88model writer (vox_n88model_writer_*) against vox_n88model_write. */
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <netcdf.h>

#include "../check.h"
#include "voxfe/n88model.h"
#include "voxfe/result_file.h"
#include "voxfe/voxfe.h"

enum { NX = 5, NY = 4, NZ = 6 };

/* A porous block: every voxel but a few holes, labels 1 and 2, a uniaxial
 * compression test along z. */
static void porous_model(vox_context *ctx, vox_model *m) {
  vox_grid g = {NX, NY, NZ, {0.1, 0.1, 0.1}, {0, 0, 0}, 0};
  CHECK_OK(ctx, vox_model_init(ctx, m, &g));
  for (int64_t e = 0; e < NX * NY * NZ; e++) m->label[e] = (e % 7 == 3) ? 0 : 1 + (e % 3 == 0);
  for (int l = 1; l <= 2; l++) {
    vox_material mat = {.label = (uint8_t)l, .role = VOX_ROLE_SOLID,
                        .youngs_modulus = 1000.0 * l, .poisson_ratio = 0.3, .conductivity = 1};
    snprintf(mat.name, sizeof mat.name, "material%d", l);
    CHECK_OK(ctx, vox_model_add_material(ctx, m, &mat));
  }
  double applied;
  CHECK_OK(ctx, vox_add_compression_test(ctx, m, VOX_TEST_UNIAXIAL, 2, -0.01, &applied));
}

/* Every variable and attribute of the two files, groups included, equal
 * byte for byte (names looked up, so the order of definition may differ). */
static int same_group(int a, int b) {
  int same = 1, nv, nvb, na, nab, ng, ngb, grps[16];
  CHECK(nc_inq_nvars(a, &nv) == 0 && nc_inq_nvars(b, &nvb) == 0);
  same &= nv == nvb;
  for (int v = -1; v < nv; v++) { /* -1: the group's own attributes */
    char name[NC_MAX_NAME + 1] = "";
    int vb = NC_GLOBAL;
    if (v >= 0) {
      nc_inq_varname(a, v, name);
      if (nc_inq_varid(b, name, &vb)) return 0;
      nc_type t, tb;
      int nd, ndb, dims[NC_MAX_VAR_DIMS];
      nc_inq_var(a, v, NULL, &t, &nd, dims, NULL);
      nc_inq_var(b, vb, NULL, &tb, &ndb, NULL, NULL);
      if (t != tb || nd != ndb) return 0;
      size_t n = 1, size = 0, len;
      for (int d = 0; d < nd; d++) nc_inq_dimlen(a, dims[d], &len), n *= len;
      if (t != NC_STRING) {
        nc_inq_type(a, t, NULL, &size);
        char *x = malloc(n * size + 1), *y = malloc(n * size + 1);
        same &= nc_get_var(a, v, x) == 0 && nc_get_var(b, vb, y) == 0 && !memcmp(x, y, n * size);
        free(x), free(y);
      }
    }
    nc_inq_varnatts(a, v < 0 ? NC_GLOBAL : v, &na);
    nc_inq_varnatts(b, vb, &nab);
    same &= na == nab;
    for (int i = 0; i < na; i++) {
      char att[NC_MAX_NAME + 1];
      nc_type t, tb;
      size_t len, lenb, size;
      nc_inq_attname(a, v < 0 ? NC_GLOBAL : v, i, att);
      nc_inq_att(a, v < 0 ? NC_GLOBAL : v, att, &t, &len);
      if (nc_inq_att(b, vb, att, &tb, &lenb) || t != tb || len != lenb) return 0;
      if (t == NC_STRING) continue;
      nc_inq_type(a, t, NULL, &size);
      char *x = malloc(len * size + 1), *y = malloc(len * size + 1);
      same &= nc_get_att(a, v < 0 ? NC_GLOBAL : v, att, x) == 0 &&
              nc_get_att(b, vb, att, y) == 0 && !memcmp(x, y, len * size);
      free(x), free(y);
    }
  }
  nc_inq_grps(a, &ng, grps);
  nc_inq_grps(b, &ngb, NULL);
  same &= ng == ngb;
  for (int i = 0; i < ng && same; i++) {
    char name[NC_MAX_NAME + 1];
    int gb;
    nc_inq_grpname(grps[i], name);
    same &= nc_inq_grp_ncid(b, name, &gb) == 0 && same_group(grps[i], gb);
  }
  return same;
}

static int same_files(const char *x, const char *y) {
  int a, b;
  if (nc_open(x, NC_NOWRITE, &a)) return 0;
  if (nc_open(y, NC_NOWRITE, &b)) return nc_close(a), 0;
  const int same = same_group(a, b);
  nc_close(a), nc_close(b);
  return same;
}

/* How many entries the folder holds besides . and .. */
static int entries(const char *dir) {
  DIR *d = opendir(dir);
  int n = 0;
  for (struct dirent *e; d && (e = readdir(d));)
    n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
  if (d) closedir(d);
  return n;
}

int main(void) {
  vox_context *ctx;
  if (vox_context_create(&ctx) != VOX_OK) return 1;
  char dir[] = "/tmp/voxfe-writer-XXXXXX";
  if (!mkdtemp(dir)) return 1;
  char once[128], beside[128], cancelled[128];
  snprintf(once, sizeof once, "%s/once.nc", dir);
  snprintf(beside, sizeof beside, "%s/beside.nc", dir);
  snprintf(cancelled, sizeof cancelled, "%s/cancelled.nc", dir);

  vox_model m = {0};
  porous_model(ctx, &m);
  CHECK_OK(ctx, vox_model_append_history(ctx, &m, "test_result_writer"));
  int64_t *elements = NULL;
  size_t nb = 0;
  CHECK_OK(ctx, vox_bone_elements(ctx, &m, &elements, &nb));
  CHECK(nb > 0 && nb < (size_t)(NX * NY * NZ));
  const size_t nn = (size_t)vox_grid_nodes(&m.grid);
  double *u = calloc(3 * nn, sizeof *u), *reaction = malloc(3 * nn * sizeof *reaction);
  double *strain = malloc(6 * nb * sizeof *strain), *stress = malloc(6 * nb * sizeof *stress);
  double *sed = malloc(nb * sizeof *sed), *vm = malloc(nb * sizeof *vm);
  double *eff = malloc(nb * sizeof *eff);
  vox_element_fields f = {strain, stress, sed, vm, eff, elements, nb, VOX_SED_CENTRE};
  vox_summary_entry summary[2] = {{"stiffness", NULL, 123.5, "N/mm"},
                                  {"test", "uniaxial", NAN, NULL}};
  m.displacement = u;
  m.stage = VOX_STAGE_ANALYSIS;

  /* begun before the solve: the displacement filled in later */
  vox_result_writer *w = NULL;
  CHECK_OK(ctx, vox_result_writer_start(ctx, beside, &m, elements, nb, &w));
  vox_backend *be;
  CHECK_OK(ctx, vox_backend_create(ctx, VOX_DEVICE_CPU, &be));
  vox_solver_options opt;
  vox_solver_options_default(&opt);
  opt.rtol = 1e-10;
  vox_solve_result res;
  CHECK_OK(ctx, vox_solve_elasticity(ctx, be, &m, 0, 1, 0, &opt, u, &res));
  CHECK(res.reason > 0);
  vox_result_writer_solving(w); /* its compressed chunks flushed here, early */
  vox_result_writer_put_displacement(w);
  CHECK_OK(ctx, vox_analysis_fields(ctx, &m, NULL, u, reaction, &f, NULL, 0, NULL));
  CHECK_OK(ctx, vox_result_writer_put_fields(ctx, w, reaction, &f));
  CHECK_OK(ctx, vox_result_writer_finish(ctx, w, summary, 2));

  /* the same file as in one go */
  vox_analysis_output out = {.reaction = reaction, .fields = f, .summary = summary, .n_summary = 2};
  CHECK_OK(ctx, vox_result_write(ctx, once, &m, &out));
  CHECK(same_files(once, beside));
  /* and the comparison can fail: another summary value */
  summary[0].value = 124;
  CHECK_OK(ctx, vox_result_write(ctx, once, &m, &out));
  CHECK(!same_files(once, beside));
  CHECK(entries(dir) == 2);

  /* cancelled while waiting for the solve, for the displacement, for the
   * fields, for the summary: no file, no temporary one */
  for (int stage = 0; stage < 4; stage++) {
    CHECK_OK(ctx, vox_result_writer_start(ctx, cancelled, &m, elements, nb, &w));
    if (stage >= 1) vox_result_writer_solving(w);
    if (stage >= 2) vox_result_writer_put_displacement(w);
    if (stage >= 3) CHECK_OK(ctx, vox_result_writer_put_fields(ctx, w, reaction, &f));
    vox_result_writer_cancel(w);
    CHECK(access(cancelled, F_OK) != 0);
    CHECK(entries(dir) == 2);
  }
  vox_result_writer_cancel(NULL);

  /* refused: fields over other elements (then cancelled); finish without
   * the fields; a start with a wrong element list starts nothing */
  CHECK_OK(ctx, vox_result_writer_start(ctx, cancelled, &m, elements, nb, &w));
  vox_element_fields fewer = f;
  fewer.n_elements = nb - 1;
  CHECK(vox_result_writer_put_fields(ctx, w, reaction, &fewer) == VOX_ERR_INVALID_ARGUMENT);
  CHECK(vox_result_writer_put_fields(ctx, w, NULL, &f) == VOX_ERR_INVALID_ARGUMENT);
  vox_result_writer_cancel(w);
  CHECK_OK(ctx, vox_result_writer_start(ctx, cancelled, &m, elements, nb, &w));
  CHECK(vox_result_writer_finish(ctx, w, summary, 2) == VOX_ERR_INVALID_ARGUMENT);
  w = NULL;
  CHECK(vox_result_writer_start(ctx, cancelled, &m, elements, nb - 1, &w) ==
            VOX_ERR_INVALID_ARGUMENT &&
        w == NULL);
  CHECK(access(cancelled, F_OK) != 0);
  CHECK(entries(dir) == 2);

  /* a failure of the writing itself comes from finish, the path named */
  char missing[160];
  snprintf(missing, sizeof missing, "%s/no-such-folder/r.nc", dir);
  CHECK_OK(ctx, vox_result_writer_start(ctx, missing, &m, elements, nb, &w));
  CHECK_OK(ctx, vox_result_writer_put_fields(ctx, w, reaction, &f));
  CHECK(vox_result_writer_finish(ctx, w, summary, 2) == VOX_ERR_IO);
  CHECK(strstr(vox_context_message(ctx), "no-such-folder") != NULL);

  /* the n88model writer: begun before the displacement, the fields handed
   * over at the end, the file of vox_n88model_write */
  char once88[128], beside88[128];
  snprintf(once88, sizeof once88, "%s/once.n88model", dir);
  snprintf(beside88, sizeof beside88, "%s/beside.n88model", dir);
  vox_n88model_writer *w88 = NULL;
  const vox_n88model_layout z_test = {.axis = 2, .test = VOX_TEST_UNIAXIAL};
  const vox_n88model_layout x_test = {.axis = 0, .test = VOX_TEST_UNIAXIAL};
  CHECK_OK(ctx, vox_n88model_writer_start(ctx, beside88, &m, &z_test, &w88));
  vox_n88model_writer_put_displacement(w88);
  CHECK_OK(ctx, vox_n88model_writer_finish(ctx, w88, &out));
  CHECK_OK(ctx, vox_n88model_write(ctx, once88, &m, &out, &z_test));
  CHECK(same_files(once88, beside88));
  CHECK_OK(ctx, vox_n88model_write(ctx, once88, &m, &out, &x_test)); /* other sets: can fail */
  CHECK(!same_files(once88, beside88));
  CHECK(entries(dir) == 4);
  /* the solution handed over before finish (put_fields): the same file */
  unlink(beside88);
  CHECK_OK(ctx, vox_n88model_writer_start(ctx, beside88, &m, &z_test, &w88));
  vox_n88model_writer_solving(w88);
  vox_n88model_writer_put_displacement(w88);
  CHECK_OK(ctx, vox_n88model_writer_put_fields(ctx, w88, reaction, &out.fields));
  CHECK_OK(ctx, vox_n88model_writer_finish(ctx, w88, NULL));
  CHECK_OK(ctx, vox_n88model_write(ctx, once88, &m, &out, &z_test));
  CHECK(same_files(once88, beside88));
  CHECK(entries(dir) == 4);
  /* cancelled before the displacement, before the fields; refused output;
   * a writing that fails: no file, no temporary one, the path named */
  for (int stage = 0; stage < 2; stage++) {
    CHECK_OK(ctx, vox_n88model_writer_start(ctx, cancelled, &m, &z_test, &w88));
    if (stage >= 1) vox_n88model_writer_put_displacement(w88);
    vox_n88model_writer_cancel(w88);
    CHECK(entries(dir) == 4);
  }
  vox_n88model_writer_cancel(NULL);
  vox_analysis_output fewer_out = out;
  fewer_out.fields.n_elements = nb - 1;
  CHECK_OK(ctx, vox_n88model_writer_start(ctx, cancelled, &m, &z_test, &w88));
  CHECK(vox_n88model_writer_finish(ctx, w88, &fewer_out) == VOX_ERR_INVALID_ARGUMENT);
  CHECK_OK(ctx, vox_n88model_writer_start(ctx, cancelled, &m, &z_test, &w88));
  CHECK(vox_n88model_writer_finish(ctx, w88, NULL) == VOX_ERR_INVALID_ARGUMENT);
  CHECK(entries(dir) == 4);
  /* put_fields refuses fields over other elements (then the caller cancels) */
  CHECK_OK(ctx, vox_n88model_writer_start(ctx, cancelled, &m, &z_test, &w88));
  CHECK(vox_n88model_writer_put_fields(ctx, w88, reaction, &fewer_out.fields) ==
        VOX_ERR_INVALID_ARGUMENT);
  vox_n88model_writer_cancel(w88);
  CHECK(entries(dir) == 4);
  snprintf(missing, sizeof missing, "%s/no-such-folder/r.n88model", dir);
  CHECK_OK(ctx, vox_n88model_writer_start(ctx, missing, &m, &z_test, &w88));
  vox_n88model_writer_put_displacement(w88);
  CHECK(vox_n88model_writer_finish(ctx, w88, &out) == VOX_ERR_IO);
  CHECK(strstr(vox_context_message(ctx), "no-such-folder") != NULL);
  CHECK(entries(dir) == 4);

  unlink(once), unlink(beside), unlink(once88), unlink(beside88), rmdir(dir);
  m.displacement = NULL;
  vox_model_free(&m);
  vox_backend_destroy(be);
  free(u), free(reaction), free(strain), free(stress), free(sed), free(vm), free(eff);
  free(elements);
  vox_context_destroy(ctx);
  CHECK_DONE();
}
