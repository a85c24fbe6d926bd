/* SPDX-License-Identifier: BSD-3-Clause */
/* n88model round trip: a voxel model with two materials, an irregular bone
 * layout, supports with prescribed values and nodal forces goes to an
 * n88model and back; grid, labels, materials, constraints and loads must come
 * back exactly (as dense per-dof tables, since the n88model lists its nodes
 * in its own numbering). Also: the solution written with an analysis, and
 * files that are not n88models or not voxel meshes are refused. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <netcdf.h>

#include "../check.h"
#include "voxfe/voxfe.h"
#include "voxfe/n88model.h"

static void add_material(vox_context *ctx, vox_model *m, int label, const char *name, double E,
                         double nu) {
  vox_material mat = {.label = (uint8_t)label, .role = VOX_ROLE_SOLID, .youngs_modulus = E,
                      .poisson_ratio = nu, .conductivity = 1};
  snprintf(mat.name, sizeof mat.name, "%s", name);
  CHECK_OK(ctx, vox_model_add_material(ctx, m, &mat));
}

static void sample(vox_context *ctx, vox_model *m) {
  /* voxel sizes and an origin that are not exact in binary */
  vox_grid g = {5, 4, 3, {0.1, 0.25, 1.0 / 3}, {-1.7, 0.3, 2.2}, 0};
  CHECK_OK(ctx, vox_model_init(ctx, m, &g));
  const int64_t ne = vox_grid_elements(&g);
  for (int64_t e = 0; e < ne; e++) m->label[e] = (uint8_t)((e * 7) % 5 == 0 ? 0 : 1 + e % 2);
  m->label[ne - 1] = 1; /* the corner element, for the nodes below */
  add_material(ctx, m, 1, "bone", 6829, 0.3);
  add_material(ctx, m, 2, "marrow/fat", 15.5, 0.3); /* '/' is not a group name */
  const int64_t nn = vox_grid_nodes(&g);
  CHECK_OK(ctx, vox_model_add_constraint(ctx, m, 1, 0, 0));
  CHECK_OK(ctx, vox_model_add_constraint(ctx, m, 1, 2, 0));
  CHECK_OK(ctx, vox_model_add_constraint(ctx, m, nn - 1, 2, -0.013 / 3));
  CHECK_OK(ctx, vox_model_set_load_cases(ctx, m, 1));
  CHECK_OK(ctx, vox_model_add_load(ctx, m, nn - 2, 1, 0, 1.1 / 7));
}

/* Per-dof tables: NaN where nothing is given (values as float: the
 * n88model stores them so). */
static double *dof_table(const vox_model *m, int loads) {
  const size_t nd = 3 * (size_t)vox_grid_nodes(&m->grid);
  double *t = malloc(nd * sizeof *t);
  for (size_t d = 0; d < nd; d++) t[d] = NAN;
  if (loads)
    for (size_t i = 0; i < m->n_loads; i++)
      t[3 * m->loads[i].node + m->loads[i].component] = (float)m->loads[i].value;
  else
    for (size_t i = 0; i < m->n_constraints; i++)
      t[3 * m->constraints[i].node + m->constraints[i].component] =
          (float)m->constraints[i].value;
  return t;
}

static int same_table(const vox_model *a, const vox_model *b, int loads) {
  double *x = dof_table(a, loads), *y = dof_table(b, loads);
  const size_t nd = 3 * (size_t)vox_grid_nodes(&a->grid);
  int same = 1;
  for (size_t d = 0; d < nd; d++) same &= (isnan(x[d]) && isnan(y[d])) || x[d] == y[d];
  free(x);
  free(y);
  return same;
}

int main(void) {
  vox_context *ctx;
  if (vox_context_create(&ctx) != VOX_OK) return 1;
  char path[] = "/tmp/voxfe-n88-XXXXXX";
  if (!mkdtemp(path)) return 1;
  char file[128], other[128];
  snprintf(file, sizeof file, "%s/model.n88model", path);
  snprintf(other, sizeof other, "%s/other.n88model", path);

  vox_model m = {0}, back = {0};
  sample(ctx, &m);
  CHECK_OK(ctx, vox_n88model_write(ctx, file, &m, NULL, NULL));
  CHECK_OK(ctx, vox_n88model_read(ctx, file, &back));
  CHECK(back.grid.nx == 5 && back.grid.ny == 4 && back.grid.nz == 3);
  for (int a = 0; a < 3; a++) {
    CHECK_CLOSE(back.grid.voxel_size[a], m.grid.voxel_size[a], 1e-14);
    CHECK_CLOSE(back.grid.origin[a], m.grid.origin[a], 1e-14);
  }
  CHECK(back.label && memcmp(back.label, m.label, 60) == 0);
  CHECK(back.n_materials == 2);
  const vox_material *b1 = vox_model_material(&back, 1), *b2 = vox_model_material(&back, 2);
  CHECK(b1 && !strcmp(b1->name, "bone") && b1->youngs_modulus == 6829 && b1->poisson_ratio == 0.3);
  CHECK(b2 && !strcmp(b2->name, "label2") && b2->youngs_modulus == 15.5);
  CHECK(back.n_constraints == 3 && same_table(&m, &back, 0));
  CHECK(back.n_load_cases == 1 && back.n_loads == 1 && same_table(&m, &back, 1));

  /* with a solution: the values of the elements and nodes of the mesh */
  const size_t ne = 60, nn = (size_t)vox_grid_nodes(&m.grid);
  double *u = malloc(3 * nn * sizeof *u), *r = malloc(3 * nn * sizeof *r);
  double *six = malloc(6 * ne * sizeof *six), *one = malloc(ne * sizeof *one);
  for (size_t i = 0; i < 3 * nn; i++) u[i] = sin((double)i), r[i] = cos((double)i);
  for (size_t i = 0; i < 6 * ne; i++) six[i] = (double)i;
  for (size_t i = 0; i < ne; i++) one[i] = 0.5 * (double)i;
  m.displacement = u;
  vox_analysis_output out = {.reaction = r, .fields = {six, six, one, one, one}};
  const vox_n88model_layout test_z = {.axis = 2, .test = VOX_TEST_UNIAXIAL};
  CHECK_OK(ctx, vox_n88model_write(ctx, other, &m, &out, &test_z));
  int ncid, grp, v;
  CHECK(nc_open(other, NC_NOWRITE, &ncid) == 0);
  CHECK(nc_inq_grp_full_ncid(ncid, "/Solutions/Solution1/NodeValues", &grp) == 0);
  CHECK(nc_inq_varid(grp, "Displacement", &v) == 0);
  /* n88 node 1 is the first used grid node; compare it */
  size_t n_used = 0;
  int64_t first = -1;
  {
    vox_model *mm = &m;
    uint8_t *used = calloc(nn, 1);
    for (int64_t k = 0; k < 3; k++)
      for (int64_t j = 0; j < 4; j++)
        for (int64_t i = 0; i < 5; i++)
          if (mm->label[(k * 4 + j) * 5 + i])
            for (int a = 0; a < 8; a++)
              used[((k + vox_hex8_corner[a][2]) * 5 + j + vox_hex8_corner[a][1]) * 6 + i +
                   vox_hex8_corner[a][0]] = 1;
    for (size_t n = 0; n < nn; n++)
      if (used[n]) n_used++, first = first < 0 ? (int64_t)n : first;
    free(used);
  }
  double u0[3];
  size_t start[2] = {0, 0}, count[2] = {1, 3};
  CHECK(nc_get_vara_double(grp, v, start, count, u0) == 0);
  for (int c = 0; c < 3; c++) CHECK(u0[c] == u[3 * first + c]);
  size_t len;
  int dim;
  CHECK(nc_inq_dimid(grp, "NumberOfNodes", &dim) == 0 && nc_inq_dimlen(grp, dim, &len) == 0 &&
        len == n_used);
  CHECK(nc_inq_grp_full_ncid(ncid, "/Sets/NodeSets/face_z1", &grp) == 0);
  /* the corners of element 1 in VTK_VOXEL order, as vtkbone reads them:
   * (0,0,0) (1,0,0) (0,1,0) (1,1,0) (0,0,1) (1,0,1) (0,1,1) (1,1,1) */
  {
    static const int voxel[8][3] = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {1, 1, 0},
                                    {0, 0, 1}, {1, 0, 1}, {0, 1, 1}, {1, 1, 1}};
    int part, hexa, v_xyz, v_conn;
    unsigned c8[8];
    size_t at8[2] = {0, 0}, n8[2] = {1, 8};
    CHECK(nc_inq_grp_full_ncid(ncid, "/Parts/Part1", &part) == 0 &&
          nc_inq_varid(part, "NodeCoordinates", &v_xyz) == 0);
    CHECK(nc_inq_grp_full_ncid(ncid, "/Parts/Part1/Elements/Hexahedrons", &hexa) == 0 &&
          nc_inq_varid(hexa, "NodeNumbers", &v_conn) == 0 &&
          nc_get_vara_uint(hexa, v_conn, at8, n8, c8) == 0);
    nc_type xyz_type;
    CHECK(nc_inq_vartype(part, v_xyz, &xyz_type) == 0 && xyz_type == NC_FLOAT);
    double p0[3];
    for (int k = 0; k < 8; k++) {
      double p[3];
      size_t at[2] = {c8[k] - 1, 0}, n3[2] = {1, 3};
      CHECK(nc_get_vara_double(part, v_xyz, at, n3, p) == 0);
      if (k == 0) memcpy(p0, p, sizeof p);
      for (int a = 0; a < 3; a++)
        CHECK(fabs(p[a] - p0[a] - voxel[k][a] * m.grid.voxel_size[a]) < 1e-6);
    }
  }
  nc_close(ncid);
  m.displacement = NULL;
  free(u), free(r), free(six), free(one);

  /* refused: a voxfe file, a mesh that is not a voxel mesh */
  vox_model bad = {0};
  CHECK(nc_create(other, NC_NETCDF4 | NC_CLOBBER, &ncid) == 0);
  nc_put_att_text(ncid, NC_GLOBAL, "Conventions", 14, "CF-1.8 voxfe-1");
  nc_close(ncid);
  CHECK(vox_n88model_read(ctx, other, &bad) == VOX_ERR_FORMAT);
  CHECK(strstr(vox_context_message(ctx), "not an n88model") != NULL);
  CHECK(nc_open(file, NC_WRITE, &ncid) == 0);
  CHECK(nc_inq_grp_full_ncid(ncid, "/Parts/Part1", &grp) == 0);
  CHECK(nc_inq_varid(grp, "NodeCoordinates", &v) == 0);
  const double moved = 1e-3;
  size_t at[2] = {1, 0};
  CHECK(nc_put_var1_double(grp, v, at, &moved) == 0); /* node 2 off its grid point */
  nc_close(ncid);
  CHECK(vox_n88model_read(ctx, file, &bad) == VOX_ERR_UNSUPPORTED);
  CHECK(strstr(vox_context_message(ctx), "not a voxel mesh") != NULL);
  CHECK(bad.label == NULL);
  /* a node 2e-5 of a voxel off its grid point, as float32 coordinates are:
   * still a voxel mesh; 1e-3 of a voxel is not */
  for (int trial = 0; trial < 2; trial++) {
    CHECK_OK(ctx, vox_n88model_write(ctx, file, &m, NULL, NULL));
    CHECK(nc_open(file, NC_WRITE, &ncid) == 0);
    CHECK(nc_inq_grp_full_ncid(ncid, "/Parts/Part1", &grp) == 0);
    CHECK(nc_inq_varid(grp, "NodeCoordinates", &v) == 0);
    double x;
    CHECK(nc_get_var1_double(grp, v, at, &x) == 0);
    x += m.grid.voxel_size[0] * (trial ? 1e-3 : 2e-5);
    CHECK(nc_put_var1_double(grp, v, at, &x) == 0);
    nc_close(ncid);
    const vox_status got = vox_n88model_read(ctx, file, &bad);
    CHECK(got == (trial ? VOX_ERR_UNSUPPORTED : VOX_OK));
    vox_model_free(&bad);
  }

  vox_model_free(&m);
  vox_model_free(&back);
  unlink(file);
  unlink(other);
  rmdir(path);
  vox_context_destroy(ctx);
  if (check_failures) fprintf(stderr, "%d checks failed\n", check_failures);
  return check_failures ? 1 : 0;
}
