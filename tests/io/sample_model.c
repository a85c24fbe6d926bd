/* SPDX-License-Identifier: BSD-3-Clause */
/* Builds the models the io tests write and read (sample_model.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sample_model.h"

static vox_status add_material(vox_context *ctx, vox_model *m, int label, const char *name,
                               vox_material_role role, double e, double nu, double k) {
  vox_material mat;
  memset(&mat, 0, sizeof mat);
  mat.label = (uint8_t)label;
  strcpy(mat.name, name);
  mat.role = role;
  mat.youngs_modulus = e;
  mat.poisson_ratio = nu;
  mat.conductivity = k;
  return vox_model_add_material(ctx, m, &mat);
}

vox_status sample_full_model(vox_context *ctx, vox_model *m) {
  /* Sizes and values that are not exact in decimal, so that any rounding on
   * the way through the file shows up in the bit-exact comparison. */
  vox_grid g = {
      .nx = 5, .ny = 4, .nz = 3, .voxel_size = {0.1, 0.25, 1.0 / 3}, .origin = {-1.7, 0, 2.2}};
  vox_status s = vox_model_init(ctx, m, &g);
  if (s) return s;
  m->stage = VOX_STAGE_DESIGN;
  int64_t ne = vox_grid_elements(&g), nn = vox_grid_nodes(&g);
  static const uint8_t cycle[] = {1, 1, 0, 2, 1, 200, 1};
  for (int64_t e = 0; e < ne; e++) m->label[e] = cycle[e % 7];
  if ((s = add_material(ctx, m, 1, "design domain", VOX_ROLE_DESIGN, 2000.5, 0.3, 0.21)) ||
      (s = add_material(ctx, m, 2, "steel (S235)", VOX_ROLE_SOLID, 210000, 0.29, 0.05)) ||
      (s = add_material(ctx, m, 200, "keep-out", VOX_ROLE_VOID, 1e-9, -0.5, 0)))
    return s;
  /* Face z = 0 fixed; one node pushed. */
  for (int64_t n = 0; n < (g.nx + 1) * (g.ny + 1); n++)
    for (int c = 0; c < 3; c++)
      if ((s = vox_model_add_constraint(ctx, m, n, c, 0))) return s;
  if ((s = vox_model_add_constraint(ctx, m, nn - 1, 2, -0.013))) return s;
  if ((s = vox_model_set_load_cases(ctx, m, 2))) return s;
  strcpy(m->load_case_names[0], "bending");
  strcpy(m->load_case_names[1], "torsion ±");
  if ((s = vox_model_add_load(ctx, m, nn - 2, 0, 0, 1.1)) ||
      (s = vox_model_add_load(ctx, m, nn - 3, 1, 1, -2.5e-3)) ||
      (s = vox_model_add_load(ctx, m, nn - 4, 2, 1, 1e300)))
    return s;
  m->density = malloc((size_t)ne * sizeof *m->density);
  m->intensity = malloc((size_t)ne * sizeof *m->intensity);
  if (!m->intensity) return VOX_ERR_NO_MEMORY;
  for (int64_t e = 0; e < ne; e++) m->intensity[e] = (float)(e * 7 % 3000) - 1024.5f;
  strcpy(m->intensity_units, "HU");
  m->displacement = malloc((size_t)(2 * nn * 3) * sizeof *m->displacement);
  m->history = calloc(4, sizeof *m->history);
  if (!m->density || !m->displacement || !m->history) return VOX_ERR_NO_MEMORY;
  for (int64_t e = 0; e < ne; e++) m->density[e] = fmod(0.37 * (double)e, 1.0) + 1e-3 / 7;
  m->density[0] = 4.9e-324; /* subnormal */
  for (int64_t i = 0; i < 2 * nn * 3; i++) m->displacement[i] = sin(0.1 * (double)i) / 3;
  m->n_history = 3;
  for (int i = 0; i < 3; i++)
    m->history[i] = (vox_history_row){.iteration = i + 1,
                                      .objective = 10.0 / (i + 1),
                                      .volume_fraction = 0.3,
                                      .change = 0.2 / (i + 1),
                                      .non_discreteness = 40.0 - i,
                                      .penalty = 3,
                                      .q = 1 + 0.1 * i,
                                      .cg_iterations = 17 * (i + 1),
                                      .seconds = 0.01 * (i + 1)};
  m->history[2].q = NAN;
  m->history[2].cg_iterations = -1;
  /* density snapshots of iterations 1 and 2 (--snapshot-every 1 that stopped
   * short of the final one, so a .pvd adds the final design) */
  double *snap = malloc((size_t)ne * sizeof *snap);
  if (!snap) return VOX_ERR_NO_MEMORY;
  for (int k = 1; k <= 2 && !s; k++) {
    for (int64_t e = 0; e < ne; e++) snap[e] = fmod(0.11 * k * (double)e, 1.0);
    s = vox_model_add_snapshot(ctx, m, k, snap);
  }
  free(snap);
  if (s) return s;
  if ((s = vox_model_append_history(ctx, m, "voxfe-voxelize in.yaml -o model.nc")) ||
      (s = vox_model_append_history(ctx, m, "voxfe-optimize model.nc -o design.nc")))
    return s;
  m->title = strdup("io test model, ümlaut");
  return m->title ? VOX_OK : VOX_ERR_NO_MEMORY;
}

vox_status sample_bare_model(vox_context *ctx, vox_model *m) {
  vox_grid g = {.nx = 2, .ny = 1, .nz = 3, .voxel_size = {1, 1, 1}, .origin = {0, 0, 0}};
  return vox_model_init(ctx, m, &g);
}
