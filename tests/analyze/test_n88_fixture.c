/* SPDX-License-Identifier: BSD-3-Clause */
/* voxfe's element fields on Faim's solution (the fixtures' solved n88model):
 * the model read by vox_n88model_read, Faim's displacements put on its grid
 * by their nodes' coordinates, then vox_analysis_fields. The strain and the
 * strain-energy density at the element centre (VOX_SED_CENTRE) must equal
 * what n88derivedfields stored, to the rounding of its single-precision
 * arithmetic (1e-5 of the largest value); the element-mean SED must not (it
 * is another definition). Usage: test_n88_fixture FIXTURES_DIR; exit 77
 * without the fixtures. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <netcdf.h>

#include "../check.h"
#include "voxfe/n88model.h"
#include "voxfe/voxfe.h"

static double *read_doubles(int ncid, const char *group, const char *name, size_t count) {
  int grp, v;
  double *out = malloc(count * sizeof *out);
  CHECK(out && nc_inq_grp_full_ncid(ncid, group, &grp) == 0 && nc_inq_varid(grp, name, &v) == 0 &&
        nc_get_var_double(grp, v, out) == 0);
  return out;
}

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  char path[4096];
  snprintf(path, sizeof path, "%s/n88/test25a_uniaxial_solved.n88model", argv[1]);
  if (access(path, R_OK) != 0) {
    printf("no fixture %s: skipped\n", path);
    return 77;
  }
  vox_context *ctx;
  if (vox_context_create(&ctx) != VOX_OK) return 1;
  vox_model m = {0};
  CHECK_OK(ctx, vox_n88model_read(ctx, path, &m));
  const vox_grid *g = &m.grid;
  CHECK(g->nx == 25 && g->ny == 25 && g->nz == 25);
  CHECK_CLOSE(g->voxel_size[2], 0.034, 1e-6);
  CHECK_CLOSE(g->origin[0], 6.63, 1e-5); /* the AIM's position x element size */

  int ncid, grp, dim;
  size_t nn = 0, ne = 0;
  CHECK(nc_open(path, NC_NOWRITE, &ncid) == 0);
  CHECK(nc_inq_grp_full_ncid(ncid, "/Parts/Part1", &grp) == 0 &&
        nc_inq_dimid(grp, "NumberOfNodes", &dim) == 0 && nc_inq_dimlen(grp, dim, &nn) == 0);
  CHECK(nc_inq_grp_full_ncid(ncid, "/Parts/Part1/Elements/Hexahedrons", &grp) == 0 &&
        nc_inq_dimid(grp, "NumberOfElements", &dim) == 0 && nc_inq_dimlen(grp, dim, &ne) == 0);
  CHECK(nn == 9938 && ne == 7087);
  if (check_failures) return 1;
  double *xyz = read_doubles(ncid, "/Parts/Part1", "NodeCoordinates", 3 * nn);
  double *conn = read_doubles(ncid, "/Parts/Part1/Elements/Hexahedrons", "NodeNumbers", 8 * ne);
  double *u_faim = read_doubles(ncid, "/Solutions/Solution1/NodeValues", "Displacement", 3 * nn);
  double *sed_faim =
      read_doubles(ncid, "/Solutions/Solution1/ElementValues", "StrainEnergyDensity", ne);
  double *strain_faim = read_doubles(ncid, "/Solutions/Solution1/ElementValues", "Strain", 6 * ne);
  nc_close(ncid);

  /* Faim's displacements on the grid's nodes, by coordinates */
  const size_t grid_nodes = (size_t)vox_grid_nodes(g), grid_elements = (size_t)vox_grid_elements(g);
  double *u = calloc(3 * grid_nodes, sizeof *u);
  for (size_t n = 0; n < nn; n++) {
    int64_t ijk[3];
    for (int a = 0; a < 3; a++)
      ijk[a] = (int64_t)llround((xyz[3 * n + a] - g->origin[a]) / g->voxel_size[a]);
    const int64_t at = (ijk[2] * (g->ny + 1) + ijk[1]) * (g->nx + 1) + ijk[0];
    for (int c = 0; c < 3; c++) u[3 * at + c] = u_faim[3 * n + c];
  }
  double *strain = malloc(6 * grid_elements * sizeof *strain);
  double *sed = malloc(grid_elements * sizeof *sed), *mean = malloc(grid_elements * sizeof *mean);
  vox_element_fields centre = {.strain = strain, .sed = sed, .sed_point = VOX_SED_CENTRE};
  vox_element_fields element_mean = {.sed = mean, .sed_point = VOX_SED_ELEMENT_MEAN};
  CHECK_OK(ctx, vox_analysis_fields(ctx, &m, NULL, u, NULL, &centre, NULL, 0, NULL));
  CHECK_OK(ctx, vox_analysis_fields(ctx, &m, NULL, u, NULL, &element_mean, NULL, 0, NULL));

  double sed_max = 0, strain_max = 0, sed_err = 0, strain_err = 0, mean_err = 0;
  for (size_t e = 0; e < ne; e++) {
    sed_max = fmax(sed_max, sed_faim[e]);
    for (int c = 0; c < 6; c++) strain_max = fmax(strain_max, fabs(strain_faim[6 * e + c]));
  }
  for (size_t e = 0; e < ne; e++) {
    /* the element's grid place: its corner 0, the lowest */
    const size_t n0 = (size_t)conn[8 * e] - 1;
    int64_t ijk[3];
    for (int a = 0; a < 3; a++)
      ijk[a] = (int64_t)llround((xyz[3 * n0 + a] - g->origin[a]) / g->voxel_size[a]);
    const int64_t ge = (ijk[2] * g->ny + ijk[1]) * g->nx + ijk[0];
    sed_err = fmax(sed_err, fabs(sed[ge] - sed_faim[e]));
    mean_err = fmax(mean_err, fabs(mean[ge] - sed_faim[e]));
    for (int c = 0; c < 6; c++)
      strain_err = fmax(strain_err, fabs(strain[6 * ge + c] - strain_faim[6 * e + c]));
  }
  printf("centre SED: %.3g of the largest off n88derivedfields'; element mean: %.3g; strain "
         "%.3g\n", sed_err / sed_max, mean_err / sed_max, strain_err / strain_max);
  CHECK(sed_err <= 1e-5 * sed_max);
  CHECK(strain_err <= 1e-5 * strain_max);
  CHECK(mean_err > 1e-3 * sed_max); /* the other definition: told apart */

  free(xyz), free(conn), free(u_faim), free(sed_faim), free(strain_faim);
  free(u), free(strain), free(sed), free(mean);
  vox_model_free(&m);
  vox_context_destroy(ctx);
  if (check_failures) fprintf(stderr, "%d checks failed\n", check_failures);
  return check_failures ? 1 : 0;
}
