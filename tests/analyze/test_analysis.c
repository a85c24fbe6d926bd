/* SPDX-License-Identifier: BSD-3-Clause */
/* The analysis engine against analytic values: a homogeneous cube under the
 * uniaxial and the confined compression test (strain-energy density, strain,
 * stress, von Mises stress, effective strain, reaction force E A eps), the
 * load shares of two columns in parallel, the compact (bone-only) layout of
 * the fields against the full box, the Pistoia failure load on a
 * constructed strain distribution, the field
 * statistics on a hand-computed sample, connected components and the
 * plate-contact checks. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "voxfe/voxfe.h"

static void cube_model(vox_context *ctx, vox_model *m, int n, double h, double E, double nu) {
  vox_grid g = {n, n, n, {h, h, h}, {0, 0, 0}, 0};
  CHECK_OK(ctx, vox_model_init(ctx, m, &g));
  memset(m->label, 1, (size_t)n * n * n);
  vox_material mat = {.label = 1, .role = VOX_ROLE_SOLID, .youngs_modulus = E,
                      .poisson_ratio = nu, .conductivity = 1};
  strcpy(mat.name, "bone");
  CHECK_OK(ctx, vox_model_add_material(ctx, m, &mat));
}

/* Solves the cube under `test` along `axis` and checks every element
 * against the uniform analytic state; returns the top plate's force. */
static void check_cube(vox_context *ctx, vox_backend *be, vox_compression_test test, int axis) {
  const int n = 4;
  const double h = 0.5, E = 1000, nu = 0.3, eps = -0.01;
  vox_model m = {0};
  cube_model(ctx, &m, n, h, E, nu);
  double applied = 0;
  CHECK_OK(ctx, vox_add_compression_test(ctx, &m, test, axis, eps, &applied));
  CHECK_CLOSE(applied, eps * n * h, 1e-15);
  const size_t ne = (size_t)n * n * n, nn = (size_t)(n + 1) * (n + 1) * (n + 1);
  double *u = calloc(3 * nn, sizeof *u), *reaction = malloc(3 * nn * sizeof *reaction);
  double *strain = malloc(6 * ne * sizeof *strain), *stress = malloc(6 * ne * sizeof *stress);
  double *sed = malloc(ne * sizeof *sed), *vm = malloc(ne * sizeof *vm);
  double *eff = malloc(ne * sizeof *eff);
  vox_solver_options opt;
  vox_solver_options_default(&opt);
  opt.rtol = 1e-12;
  opt.precision = VOX_PRECISION_DOUBLE;
  vox_solve_result res;
  CHECK_OK(ctx, vox_solve_elasticity(ctx, be, &m, 0, 1, 0, &opt, u, &res));
  CHECK(res.reason > 0);

  /* the top plate's dofs along the axis */
  int64_t *plate = malloc(m.n_constraints * sizeof *plate);
  size_t n_plate = 0;
  for (size_t i = 0; i < m.n_constraints; i++)
    if (m.constraints[i].component == axis && m.constraints[i].value != 0)
      plate[n_plate++] = 3 * m.constraints[i].node + axis;
  CHECK(n_plate == (size_t)(n + 1) * (n + 1));
  double share[256];
  vox_element_fields f = {strain, stress, sed, vm, eff, NULL, 0, VOX_SED_CENTRE};
  CHECK_OK(ctx, vox_analysis_fields(ctx, &m, NULL, u, reaction, &f, plate, n_plate, share));

  const double lambda = E * nu / ((1 + nu) * (1 - 2 * nu)), mu = E / (2 * (1 + nu));
  const double area = n * h * n * h;
  double want_sed, want_stress, want_lateral_strain, want_vm;
  if (test == VOX_TEST_CONFINED) {
    want_sed = 0.5 * (lambda + 2 * mu) * eps * eps;
    want_stress = (lambda + 2 * mu) * eps;
    want_lateral_strain = 0;
    want_vm = fabs(want_stress - lambda * eps); /* sigma_axis - sigma_lateral */
  } else {
    want_sed = 0.5 * E * eps * eps;
    want_stress = E * eps;
    want_lateral_strain = -nu * eps;
    want_vm = fabs(E * eps);
  }
  double force = 0;
  for (size_t i = 0; i < n_plate; i++) force += reaction[plate[i]];
  CHECK_CLOSE(force / (want_stress * area), 1, 1e-9);
  if (test == VOX_TEST_UNIAXIAL) CHECK_CLOSE(force / (E * area * eps), 1, 1e-9);
  CHECK_CLOSE(share[1] / force, 1, 1e-12);
  for (size_t e = 0; e < ne; e++) {
    CHECK_CLOSE(sed[e] / want_sed, 1, 1e-6);
    CHECK_CLOSE(strain[6 * e + axis] / eps, 1, 1e-6);
    CHECK_CLOSE(strain[6 * e + (axis + 1) % 3] / eps, want_lateral_strain / eps, 1e-6);
    CHECK_CLOSE(stress[6 * e + axis] / want_stress, 1, 1e-6);
    CHECK_CLOSE(vm[e] / want_vm, 1, 1e-6);
    CHECK_CLOSE(eff[e] / sqrt(2 * want_sed / E), 1, 1e-6);
    for (int c = 3; c < 6; c++) CHECK(fabs(strain[6 * e + c]) < 1e-9);
  }
  /* the engine's summary: the loaded face is the plate found above; in a
   * uniform strain every element is at |eps|, so the failure load is
   * F 0.007 / |eps|, negative like F */
  int64_t *face = malloc(m.n_constraints * sizeof *face);
  size_t n_face = 0;
  vox_loaded_face_dofs(&m, axis, face, &n_face);
  CHECK(n_face == n_plate);
  vox_analysis_options ao;
  vox_analysis_options_default(&ao);
  ao.axis = axis;
  vox_analysis_summary sum;
  CHECK_OK(ctx, vox_analysis_summarize(ctx, &m, &ao, u, reaction, face, n_face, eff, ne, share,
                                       &sum));
  CHECK_CLOSE(sum.reaction_force, force, 1e-12);
  CHECK_CLOSE(sum.applied_displacement, applied, 1e-15);
  CHECK_CLOSE(sum.stiffness, force / applied, 1e-12);
  CHECK_CLOSE(sum.apparent_modulus, want_stress / eps, 1e-9);
  CHECK_CLOSE(sum.box_area, area, 1e-15);
  CHECK_CLOSE(sum.box_length, n * h, 1e-15);
  CHECK_CLOSE(sum.failure_load / (force * 0.007 / sqrt(2 * want_sed / E)), 1, 1e-6);
  CHECK(sum.failure_load < 0);
  CHECK_CLOSE(sum.load_share[1], 1, 1e-12);
  CHECK(fabs(sum.support_reaction[axis]) < 1e-9 * fabs(force)); /* equilibrium */
  ao.compression = 0; /* the model's own conditions: no loaded face */
  CHECK_OK(ctx, vox_analysis_summarize(ctx, &m, &ao, u, reaction, NULL, 0, eff, ne, share, &sum));
  CHECK(isnan(sum.reaction_force) && isnan(sum.failure_load) && isnan(sum.load_share[1]));
  CHECK(sum.compliance == 0);
  free(face);
  free(u), free(reaction), free(strain), free(stress), free(sed), free(vm), free(eff), free(plate);
  vox_model_free(&m);
}

/* Load share: two columns side by side along the loading axis, E 1000 and
 * 500 MPa, nu = 0, uniaxial compression: every element at the same axial
 * strain and no lateral stress, so the columns carry E_i A_i eps each and the
 * shares are 2/3 and 1/3. */
static void check_load_share(vox_context *ctx, vox_backend *be) {
  vox_model m = {0};
  cube_model(ctx, &m, 4, 0.5, 1000, 0);
  vox_material soft = {.label = 2, .role = VOX_ROLE_SOLID, .youngs_modulus = 500,
                       .poisson_ratio = 0, .conductivity = 1};
  strcpy(soft.name, "soft");
  CHECK_OK(ctx, vox_model_add_material(ctx, &m, &soft));
  for (int e = 0; e < 64; e++) m.label[e] = e % 4 < 2 ? 1 : 2; /* x < 2: stiff */
  CHECK_OK(ctx, vox_add_compression_test(ctx, &m, VOX_TEST_UNIAXIAL, 2, -0.01, NULL));
  const size_t nn = 125;
  double *u = calloc(3 * nn, sizeof *u), *reaction = malloc(3 * nn * sizeof *reaction);
  vox_solver_options opt;
  vox_solver_options_default(&opt);
  opt.rtol = 1e-12;
  opt.precision = VOX_PRECISION_DOUBLE;
  vox_solve_result res;
  CHECK_OK(ctx, vox_solve_elasticity(ctx, be, &m, 0, 1, 0, &opt, u, &res));
  int64_t plate[25];
  size_t n_plate = 0;
  for (size_t i = 0; i < m.n_constraints; i++)
    if (m.constraints[i].component == 2 && m.constraints[i].value != 0)
      plate[n_plate++] = 3 * m.constraints[i].node + 2;
  double share[256], force = 0;
  CHECK_OK(ctx, vox_analysis_fields(ctx, &m, NULL, u, reaction, NULL, plate, n_plate, share));
  for (size_t i = 0; i < n_plate; i++) force += reaction[plate[i]];
  CHECK_CLOSE(force / (-0.01 * (1000 + 500) * 2 * 0.5 * 2), 1, 1e-9); /* sum E_i A_i eps */
  CHECK_CLOSE(share[1] / force, 2.0 / 3, 1e-9);
  CHECK_CLOSE(share[2] / force, 1.0 / 3, 1e-9);
  free(u), free(reaction);
  vox_model_free(&m);
}

/* The compact layout (one entry per bone element, vox_bone_elements)
 * against the full-box one on a porous model: the same values, entry k for
 * grid element elements[k], the same reactions; a list that is not the
 * non-empty voxels is refused. */
static void check_compact_fields(vox_context *ctx, vox_backend *be) {
  vox_model m = {0};
  cube_model(ctx, &m, 8, 0.5, 1000, 0.3);
  /* walls at x = 0, 4 and y = 0, 4: 44 % of the box, a porous model */
  for (int e = 0; e < 512; e++)
    if (e % 8 % 4 != 0 && e / 8 % 8 % 4 != 0) m.label[e] = 0;
  CHECK_OK(ctx, vox_add_compression_test(ctx, &m, VOX_TEST_UNIAXIAL, 2, -0.01, NULL));
  const size_t ne = 512, nn = 729;
  double *u = calloc(3 * nn, sizeof *u), *r1 = malloc(3 * nn * sizeof *r1);
  double *r2 = malloc(3 * nn * sizeof *r2), *full = malloc(15 * ne * sizeof *full);
  vox_solver_options opt;
  vox_solver_options_default(&opt);
  opt.rtol = 1e-10;
  vox_solve_result res;
  CHECK_OK(ctx, vox_solve_elasticity(ctx, be, &m, 0, 1, 0, &opt, u, &res));
  int64_t *list = NULL;
  size_t nb = 0;
  CHECK_OK(ctx, vox_bone_elements(ctx, &m, &list, &nb));
  size_t want_nb = 0;
  for (size_t e = 0; e < ne; e++) want_nb += m.label[e] != 0;
  CHECK(nb == want_nb && nb < ne && nb > 0);
  double *compact = malloc(15 * nb * sizeof *compact);
  vox_element_fields f1 = {full, full + 6 * ne, full + 12 * ne, full + 13 * ne, full + 14 * ne,
                           NULL, 0, VOX_SED_CENTRE};
  vox_element_fields f2 = {compact, compact + 6 * nb, compact + 12 * nb, compact + 13 * nb,
                           compact + 14 * nb, list, nb, VOX_SED_CENTRE};
  CHECK_OK(ctx, vox_analysis_fields(ctx, &m, NULL, u, r1, &f1, NULL, 0, NULL));
  CHECK_OK(ctx, vox_analysis_fields(ctx, &m, NULL, u, r2, &f2, NULL, 0, NULL));
  CHECK(memcmp(r1, r2, 3 * nn * sizeof *r1) == 0);
  size_t k = 0;
  for (size_t e = 0; e < ne; e++) {
    if (!m.label[e]) {
      CHECK(isnan(full[12 * ne + e]));
      continue;
    }
    CHECK(list[k] == (int64_t)e);
    CHECK(memcmp(&compact[6 * k], &full[6 * e], 6 * sizeof *full) == 0);
    CHECK(memcmp(&compact[6 * nb + 6 * k], &full[6 * ne + 6 * e], 6 * sizeof *full) == 0);
    for (int s = 0; s < 3; s++) CHECK(compact[(12 + s) * nb + k] == full[(12 + s) * ne + e]);
    k++;
  }
  /* per-element moduli on this porous model (AUTO takes the sparse
   * storage, which holds them in float: these are exact there): the same
   * displacement as the full box's with those moduli, not the materials';
   * a modulus that is not positive is refused by either storage */
  double *moduli = malloc(ne * sizeof *moduli), *u2 = calloc(3 * nn, sizeof *u2);
  double *u3 = calloc(3 * nn, sizeof *u3);
  for (size_t e = 0; e < ne; e++) moduli[e] = e / 64 < 4 ? 500 : 3000; /* in series */
  CHECK_OK(ctx, vox_solve_elasticity_moduli(ctx, be, &m, moduli, &opt, u2, &res));
  CHECK(res.storage == VOX_STORAGE_SPARSE);
  opt.storage = VOX_STORAGE_FULL_BOX;
  CHECK_OK(ctx, vox_solve_elasticity_moduli(ctx, be, &m, moduli, &opt, u3, &res));
  CHECK(res.storage == VOX_STORAGE_FULL_BOX);
  double diff = 0, diff_materials = 0, top = 0;
  for (size_t d = 0; d < 3 * nn; d++) {
    diff = fmax(diff, fabs(u2[d] - u3[d]));
    diff_materials = fmax(diff_materials, fabs(u[d] - u3[d]));
    top = fmax(top, fabs(u3[d]));
  }
  CHECK(diff < 1e-8 * top && diff_materials > 1e-3 * top);
  for (int storage = 0; storage < 2; storage++) {
    opt.storage = storage ? VOX_STORAGE_SPARSE : VOX_STORAGE_FULL_BOX;
    const double keep = moduli[list[3]];
    moduli[list[3]] = -1;
    CHECK(vox_solve_elasticity_moduli(ctx, be, &m, moduli, &opt, u2, &res) ==
          VOX_ERR_INVALID_ARGUMENT);
    char want[64];
    snprintf(want, sizeof want, "element %lld: modulus -1 ", (long long)list[3]);
    CHECK(strstr(vox_context_message(ctx), want) != NULL);
    moduli[list[3]] = keep;
  }
  free(moduli), free(u2), free(u3);
  list[1] = list[0]; /* not increasing */
  CHECK(vox_analysis_fields(ctx, &m, NULL, u, r2, &f2, NULL, 0, NULL) ==
        VOX_ERR_INVALID_ARGUMENT);
  f2.n_elements = nb - 1; /* too short */
  list[1] = list[2] - 1;
  CHECK(vox_analysis_fields(ctx, &m, NULL, u, r2, &f2, NULL, 0, NULL) ==
        VOX_ERR_INVALID_ARGUMENT);
  free(u), free(r1), free(r2), free(full), free(compact), free(list);
  vox_model_free(&m);
}

static void check_pistoia(void) {
  /* 1000 elements with effective strains 1e-5 .. 1e-2, shuffled: the 20th
   * largest (2 %) is 981e-5, so the load scales by 0.007 / 0.00981 */
  enum { N = 1000 };
  double eff[N];
  for (int i = 0; i < N; i++) eff[i] = (double)((i * 389) % N + 1) * 1e-5;
  /* the sign of the load: negative in compression, as n88pistoia reports */
  const double load = -1234.5;
  CHECK_CLOSE(vox_pistoia_failure_load(eff, N, load, 0.007, 0.02), -1234.5 * 0.007 / 981e-5, 1e-12);
  /* 5 %: the 50th largest, 951e-5; 1 %: the 10th, 991e-5 */
  CHECK_CLOSE(vox_pistoia_failure_load(eff, N, load, 0.007, 0.05), -1234.5 * 0.007 / 951e-5, 1e-12);
  CHECK_CLOSE(vox_pistoia_failure_load(eff, N, load, 0.01, 0.01), -1234.5 * 0.01 / 991e-5, 1e-12);
  CHECK_CLOSE(vox_pistoia_failure_load(eff, N, -load, 0.01, 0.01), 1234.5 * 0.01 / 991e-5, 1e-12);
  /* scaled to the failure load, exactly 2 % of the elements reach 0.7 % */
  double factor = vox_pistoia_failure_load(eff, N, 1, 0.007, 0.02);
  int above = 0;
  for (int i = 0; i < N; i++) above += eff[i] * factor >= 0.007 * (1 - 1e-12);
  CHECK(above == 20);
  CHECK(isnan(vox_pistoia_failure_load(eff, 0, load, 0.007, 0.02)));
}

static void check_statistics(vox_context *ctx) {
  const double x[6] = {5, 1, 4, 99, 2, 3};
  const uint8_t active[6] = {1, 1, 1, 0, 1, 1};
  vox_field_stats st;
  CHECK_OK(ctx, vox_field_statistics(ctx, x, 6, 1, 0, active, &st));
  CHECK_CLOSE(st.mean, 3, 1e-15);
  CHECK_CLOSE(st.sd, sqrt(2), 1e-15);
  CHECK_CLOSE(st.min, 1, 0);
  CHECK_CLOSE(st.max, 5, 0);
  const double want[VOX_STAT_PERCENTILES] = {1.2, 2, 3, 4, 4.8}; /* numpy.percentile */
  for (int p = 0; p < VOX_STAT_PERCENTILES; p++) CHECK_CLOSE(st.percentile[p], want[p], 1e-14);
}

static void check_components(vox_context *ctx) {
  vox_model m = {0};
  cube_model(ctx, &m, 4, 1, 1000, 0.3);
  memset(m.label, 0, 64);
  /* a 2x2x4 column (16), a voxel touching it by an edge only, and a lone voxel */
  for (int k = 0; k < 4; k++)
    for (int j = 0; j < 2; j++)
      for (int i = 0; i < 2; i++) m.label[(k * 4 + j) * 4 + i] = 1;
  m.label[(1 * 4 + 2) * 4 + 2] = 1; /* edge neighbour of (1,1,1) */
  m.label[(3 * 4 + 3) * 4 + 3] = 1; /* corner (3,3,3): 26-neighbour of nothing */
  vox_model c = {0};
  size_t removed, comps;
  CHECK_OK(ctx, vox_model_copy(ctx, &c, &m));
  CHECK_OK(ctx, vox_keep_largest_component(ctx, &c, 26, &removed, &comps));
  CHECK(comps == 2 && removed == 1 && c.label[(1 * 4 + 2) * 4 + 2] == 1);
  vox_model_free(&c);
  CHECK_OK(ctx, vox_model_copy(ctx, &c, &m));
  CHECK_OK(ctx, vox_keep_largest_component(ctx, &c, 6, &removed, &comps));
  CHECK(comps == 3 && removed == 2 && c.label[(1 * 4 + 2) * 4 + 2] == 0 && c.label[0] == 1);
  vox_model_free(&c);
  CHECK(vox_check_plate_contact(ctx, &m, 2, 6) == VOX_OK);
  CHECK(vox_check_plate_contact(ctx, &m, 0, 26) != VOX_OK); /* x = max only the lone voxel */
  CHECK(strstr(vox_context_message(ctx), "not connected from plate to plate") != NULL);
  m.label[(3 * 4 + 3) * 4 + 3] = 0;
  CHECK(vox_check_plate_contact(ctx, &m, 0, 26) != VOX_OK);
  CHECK(strstr(vox_context_message(ctx), "no bone at the top plate") != NULL);
  memset(m.label, 0, 64);
  CHECK(vox_check_plate_contact(ctx, &m, 2, 26) != VOX_OK);
  CHECK(strstr(vox_context_message(ctx), "no bone") != NULL);
  vox_model_free(&m);
}

/* The density-modulus map element by element: rho = slope I + intercept,
 * E = a rho^b, raised to the minimum; empty voxels 0; the refusals. */
static void check_intensity_moduli(vox_context *ctx) {
  vox_model m = {0};
  cube_model(ctx, &m, 2, 1, 1000, 0.3);
  double E[8];
  vox_density_modulus law;
  vox_density_modulus_default(&law);
  CHECK(law.a == 8920 && law.b == 1.83 && law.slope == 0.001 && law.intercept == 0);
  CHECK(vox_intensity_moduli(ctx, &m, &law, E, NULL) == VOX_ERR_INVALID_ARGUMENT);
  CHECK(strstr(vox_context_message(ctx), "no intensity") != NULL);
  m.intensity = malloc(8 * sizeof *m.intensity);
  const float values[8] = {1000, 500, 250, 0, -100, 1200, 800, 700};
  memcpy(m.intensity, values, sizeof values);
  m.label[7] = 0;
  law = (vox_density_modulus){.slope = 0.002, .intercept = 0.1, .a = 3000, .b = 2.5,
                              .min_modulus = 200};
  size_t floored = 99;
  CHECK_OK(ctx, vox_intensity_moduli(ctx, &m, &law, E, &floored));
  for (int e = 0; e < 7; e++) {
    const double rho = 0.002 * values[e] + 0.1;
    const double want = rho > 0 ? fmax(3000 * pow(rho, 2.5), 200) : 200;
    CHECK_CLOSE(E[e], want, 1e-14);
  }
  CHECK(E[7] == 0);
  /* rho 0.1 (E 9.5) and -0.1 are raised */
  CHECK(floored == 2);
  m.intensity[2] = NAN;
  CHECK(vox_intensity_moduli(ctx, &m, &law, E, NULL) == VOX_ERR_INVALID_ARGUMENT);
  CHECK(strstr(vox_context_message(ctx), "element 2") != NULL);
  m.intensity[7] = NAN; /* an empty voxel's intensity does not matter */
  m.intensity[2] = 1;
  CHECK_OK(ctx, vox_intensity_moduli(ctx, &m, &law, E, NULL));
  law.min_modulus = 0;
  CHECK(vox_intensity_moduli(ctx, &m, &law, E, NULL) == VOX_ERR_INVALID_ARGUMENT);
  vox_model_free(&m);
}

/* Several statistics at once, in parallel: each the same as alone. */
static void check_statistics_many(vox_context *ctx) {
  enum { N = 5000 };
  double *x = malloc(6 * N * sizeof *x);
  uint8_t *active = malloc(N);
  for (int i = 0; i < 6 * N; i++) x[i] = (double)rand() / RAND_MAX - 0.5;
  for (int i = 0; i < N; i++) active[i] = rand() % 3 != 0;
  const vox_stats_request req[4] = {
      {x, N, 1, 0, NULL}, {x, N, 6, 2, NULL}, {x, N, 6, 5, active}, {x, 0, 1, 0, NULL}};
  vox_field_stats many[4], one;
  CHECK_OK(ctx, vox_field_statistics_many(ctx, req, 4, many));
  for (int i = 0; i < 4; i++) {
    CHECK_OK(ctx, vox_field_statistics(ctx, req[i].values, req[i].n, req[i].stride,
                                       req[i].offset, req[i].active, &one));
    CHECK(memcmp(&one, &many[i], sizeof one) == 0); /* NaNs of the empty one too */
  }
  CHECK(isnan(many[3].mean));
  free(x), free(active);
}

static int ascending(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The statistics and the failure load by selection against a full sort,
 * on values with many ties and on distinct ones. */
static void check_selection(vox_context *ctx) {
  for (int trial = 0; trial < 40; trial++) {
    const size_t n = 1 + (size_t)(rand() % 3000);
    double *x = malloc(n * sizeof *x), *sorted = malloc(n * sizeof *sorted);
    for (size_t i = 0; i < n; i++)
      x[i] = trial % 2 ? (double)(rand() % 7) : (double)rand() / RAND_MAX - 0.3;
    memcpy(sorted, x, n * sizeof *x);
    qsort(sorted, n, sizeof *sorted, ascending);
    vox_field_stats st;
    CHECK_OK(ctx, vox_field_statistics(ctx, x, n, 1, 0, NULL, &st));
    CHECK(st.min == sorted[0] && st.max == sorted[n - 1]);
    for (int p = 0; p < VOX_STAT_PERCENTILES; p++) {
      const double pos = vox_stat_percentiles[p] / 100 * (double)(n - 1);
      const size_t lo = (size_t)floor(pos), hi = lo + 1 < n ? lo + 1 : lo;
      CHECK_CLOSE(st.percentile[p], sorted[lo] + (pos - (double)lo) * (sorted[hi] - sorted[lo]),
                  1e-15);
    }
    const double volume = 0.02 + 0.1 * (trial % 5);
    size_t k = (size_t)ceil(volume * (double)n - 1e-9);
    k = k < 1 ? 1 : k > n ? n : k;
    const double want = sorted[n - k] > 0 ? -10 * 0.007 / sorted[n - k] : NAN;
    const double got = vox_pistoia_failure_load(x, n, -10, 0.007, volume);
    CHECK((isnan(want) && isnan(got)) || fabs(got - want) <= 1e-15 * fabs(want));
    free(x), free(sorted);
  }
}

/* The same on enough values for the radix selection (engine/field_statistics.c):
 * wide and narrow ranges, negative values and -0, many ties (every value in
 * one bucket), a stride and a mask; against a full sort, and the same
 * numbers, bit for bit, on one thread and on all. */
static void check_radix_selection(vox_context *ctx) {
  enum { N = 200003 };
  double *x = malloc(3 * (size_t)N * sizeof *x), *sorted = malloc(N * sizeof *sorted);
  double *vals = malloc(N * sizeof *vals); /* the active values in their order */
  uint8_t *active = malloc(N);
  for (int trial = 0; trial < 4; trial++) {
    size_t m = 0;
    for (size_t i = 0; i < N; i++) {
      const double u = (double)rand() / RAND_MAX;
      x[3 * i + 1] = trial == 0   ? (u - 0.3) * pow(10, rand() % 12 - 6) /* wide, both signs */
                     : trial == 1 ? 1 + 1e-3 * (double)(rand() % 5)       /* one bucket, ties */
                     : trial == 2 ? (rand() % 3 == 0 ? -0.0 : u - 0.5)
                                  : 1e-3 * u;
      active[i] = trial < 2 || rand() % 4 != 0;
      if (active[i]) vals[m++] = x[3 * i + 1];
    }
    memcpy(sorted, vals, m * sizeof *vals);
    qsort(sorted, m, sizeof *sorted, ascending);
    vox_field_stats st, st1;
    CHECK_OK(ctx, vox_field_statistics(ctx, x, N, 3, 1, trial < 2 ? NULL : active, &st));
    CHECK(st.min == sorted[0] && st.max == sorted[m - 1]);
    for (int p = 0; p < VOX_STAT_PERCENTILES; p++) {
      const double pos = vox_stat_percentiles[p] / 100 * (double)(m - 1);
      const size_t lo = (size_t)floor(pos), hi = lo + 1 < m ? lo + 1 : lo;
      CHECK_CLOSE(st.percentile[p], sorted[lo] + (pos - (double)lo) * (sorted[hi] - sorted[lo]),
                  1e-15);
    }
    double mean = 0;
    for (size_t i = 0; i < m; i++) mean += sorted[i];
    mean /= (double)m;
    CHECK_CLOSE(st.mean, mean, 1e-10); /* two orders of summing 2e5 values */
    const int threads = omp_get_max_threads();
    omp_set_num_threads(1);
    CHECK_OK(ctx, vox_field_statistics(ctx, x, N, 3, 1, trial < 2 ? NULL : active, &st1));
    omp_set_num_threads(threads);
    CHECK(memcmp(&st, &st1, sizeof st) == 0);
    if (trial == 0) { /* the failure load's selection takes the same path */
      const double volume = 0.02;
      const size_t k = (size_t)ceil(volume * (double)m - 1e-9);
      const double want = sorted[m - k] > 0 ? -10 * 0.007 / sorted[m - k] : NAN;
      CHECK_CLOSE(vox_pistoia_failure_load(vals, m, -10, 0.007, volume), want, 1e-15);
    }
  }
  free(x), free(sorted), free(vals), free(active);
}

/* The strain-energy density's two definitions on one element in the
 * bending mode u_x = k (y - yc)(z - zc): no strain at the centre, so the
 * centre's SED is 0, while the mean over the element is, by hand,
 * (1/V) int 1/2 [(lambda + 2 mu) 0 + mu (gamma_xy^2 + gamma_zx^2)] dV with
 * gamma_xy = k (z - zc), gamma_zx = k (y - yc): mu k^2 h^2 / 12 for a cube of
 * edge h (the mean of (z - zc)^2 is h^2 / 12). And a uniform strain: the
 * same SED both ways, 1/2 sigma . eps. */
static void check_sed_point(vox_context *ctx) {
  const double h = 0.5, E = 1000, nu = 0.25, k = 0.02;
  vox_model m = {0};
  cube_model(ctx, &m, 1, h, E, nu);
  double u[24] = {0}, sed, eff;
  for (int n = 0; n < 8; n++) {
    const double y = (n / 2) % 2 * h, z = n / 4 * h;
    u[3 * n] = k * (y - h / 2) * (z - h / 2);
  }
  vox_element_fields f = {.sed = &sed, .effective_strain = &eff, .sed_point = VOX_SED_CENTRE};
  CHECK_OK(ctx, vox_analysis_fields(ctx, &m, NULL, u, NULL, &f, NULL, 0, NULL));
  CHECK(fabs(sed) < 1e-18 && fabs(eff) < 1e-9);
  f.sed_point = VOX_SED_ELEMENT_MEAN;
  CHECK_OK(ctx, vox_analysis_fields(ctx, &m, NULL, u, NULL, &f, NULL, 0, NULL));
  const double mu = E / (2 * (1 + nu));
  CHECK_CLOSE(sed / (mu * k * k * h * h / 12), 1, 1e-12);
  /* a uniform strain, eps_xx = 1e-3, eps_yz (engineering) = 2e-3 */
  for (int n = 0; n < 8; n++) {
    const double x = n % 2 * h, y = (n / 2) % 2 * h, z = n / 4 * h;
    u[3 * n] = 1e-3 * x, u[3 * n + 1] = 1e-3 * z, u[3 * n + 2] = 1e-3 * y;
  }
  const double lambda = E * nu / ((1 + nu) * (1 - 2 * nu));
  const double want = 0.5 * ((lambda + 2 * mu) * 1e-6 + mu * 4e-6);
  for (int point = 0; point < 2; point++) {
    f.sed_point = (vox_sed_point)point;
    CHECK_OK(ctx, vox_analysis_fields(ctx, &m, NULL, u, NULL, &f, NULL, 0, NULL));
    CHECK_CLOSE(sed / want, 1, 1e-12);
  }
  f.sed_point = (vox_sed_point)7;
  CHECK(vox_analysis_fields(ctx, &m, NULL, u, NULL, &f, NULL, 0, NULL) ==
        VOX_ERR_INVALID_ARGUMENT);
  vox_sed_point parsed;
  CHECK(vox_sed_point_parse("element-mean", &parsed) == 0 && parsed == VOX_SED_ELEMENT_MEAN);
  CHECK(vox_sed_point_parse("centre", &parsed) == 0 && parsed == VOX_SED_CENTRE);
  CHECK(vox_sed_point_parse("center", &parsed) == -1);
  vox_model_free(&m);
}

/* Plates held along z only (as n88modelgenerator makes them): three rigid
 * motions free (x, y, rotation about z), held by three constraints; the
 * solve then gives E A eps on the top plate, and nothing on the pins. A
 * standard test's supports hold every motion already. */
static void check_hold_rigid_motions(vox_context *ctx, vox_backend *be) {
  const int n = 4;
  const double h = 0.5, E = 1000, eps = -0.01;
  vox_model m = {0};
  cube_model(ctx, &m, n, h, E, 0.3);
  for (int j = 0; j <= n; j++)
    for (int i = 0; i <= n; i++) {
      CHECK_OK(ctx, vox_model_add_constraint(ctx, &m, j * (n + 1) + i, 2, 0));
      CHECK_OK(ctx, vox_model_add_constraint(ctx, &m, (n * (n + 1) + j) * (n + 1) + i, 2,
                                             eps * n * h));
    }
  const size_t before = m.n_constraints;
  size_t added = 99;
  CHECK_OK(ctx, vox_hold_rigid_motions(ctx, &m, &added));
  CHECK(added == 3 && m.n_constraints == before + 3);
  int lateral = 0;
  for (size_t i = before; i < m.n_constraints; i++)
    lateral += m.constraints[i].component != 2 && m.constraints[i].value == 0;
  CHECK(lateral == 3);
  CHECK_OK(ctx, vox_hold_rigid_motions(ctx, &m, &added)); /* held now */
  CHECK(added == 0);
  CHECK_OK(ctx, vox_model_set_load_cases(ctx, &m, 1));
  const size_t nn = (size_t)(n + 1) * (n + 1) * (n + 1);
  double *u = calloc(3 * nn, sizeof *u), *reaction = malloc(3 * nn * sizeof *reaction);
  vox_solver_options opt;
  vox_solver_options_default(&opt);
  opt.rtol = 1e-12;
  opt.precision = VOX_PRECISION_DOUBLE;
  vox_solve_result res;
  CHECK_OK(ctx, vox_solve_elasticity(ctx, be, &m, 0, 1, 0, &opt, u, &res));
  CHECK(res.reason > 0);
  CHECK_OK(ctx, vox_analysis_fields(ctx, &m, NULL, u, reaction, NULL, NULL, 0, NULL));
  double force = 0;
  for (size_t i = 0; i < before; i++)
    if (m.constraints[i].value != 0) force += reaction[3 * m.constraints[i].node + 2];
  CHECK_CLOSE(force / (E * n * h * n * h * eps), 1, 1e-9);
  for (size_t i = before; i < m.n_constraints; i++)
    CHECK(fabs(reaction[3 * m.constraints[i].node + m.constraints[i].component]) <
          1e-9 * fabs(force));
  free(u), free(reaction);
  vox_model_free(&m);
  for (int test = 0; test < 3; test++) {
    vox_model t = {0};
    cube_model(ctx, &t, n, h, E, 0.3);
    CHECK_OK(ctx, vox_add_compression_test(ctx, &t, (vox_compression_test)test, 2, eps, NULL));
    CHECK_OK(ctx, vox_hold_rigid_motions(ctx, &t, &added));
    CHECK(added == 0);
    vox_model_free(&t);
  }
}

int main(void) {
  vox_context *ctx;
  if (vox_context_create(&ctx) != VOX_OK) return 1;
  vox_backend *be;
  CHECK_OK(ctx, vox_backend_create(ctx, VOX_DEVICE_CPU, &be));
  for (int axis = 0; axis < 3; axis++) {
    check_cube(ctx, be, VOX_TEST_UNIAXIAL, axis);
    check_cube(ctx, be, VOX_TEST_CONFINED, axis);
  }
  check_load_share(ctx, be);
  check_hold_rigid_motions(ctx, be);
  check_compact_fields(ctx, be);
  check_pistoia();
  check_sed_point(ctx);
  check_statistics(ctx);
  check_statistics_many(ctx);
  check_components(ctx);
  check_intensity_moduli(ctx);
  check_selection(ctx);
  check_radix_selection(ctx);
  vox_backend_destroy(be);
  vox_context_destroy(ctx);
  if (check_failures) fprintf(stderr, "%d checks failed\n", check_failures);
  return check_failures ? 1 : 0;
}
