/* SPDX-License-Identifier: BSD-3-Clause */
/* The cell benchmarks' problem and binarized moduli (cell_problem.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cell_problem.h"

int cell_problem_make(vox_context *ctx, int n, double v, const char *start, cell_problem *p) {
  memset(p, 0, sizeof *p);
  if (strcmp(start, "cosine") != 0 && strcmp(start, "zhang2023") != 0) {
    fprintf(stderr, "cell start %s: cosine or zhang2023\n", start);
    return -1;
  }
  p->zhang2023 = strcmp(start, "zhang2023") == 0;
  vox_grid g = {.nx = n, .ny = n, .nz = n, .voxel_size = {1.0 / n, 1.0 / n, 1.0 / n}};
  vox_material solid = {.label = 1, .youngs_modulus = 1, .poisson_ratio = 0.3,
                        .role = VOX_ROLE_DESIGN};
  if (vox_model_init(ctx, &p->model, &g) || vox_model_add_material(ctx, &p->model, &solid)) {
    fprintf(stderr, "cell problem: %s\n", vox_context_message(ctx));
    return -1;
  }
  const size_t ne = (size_t)n * n * n;
  memset(p->model.label, 1, ne);
  vox_optimizer_options *opt = &p->opt;
  vox_optimizer_options_default(opt);
  opt->cell_objective = VOX_CELL_BULK;
  opt->volume_fraction = v;
  opt->continuation = 0;
  opt->filter_radius = 2.0 / n;
  opt->move_limit = 0.05;
  opt->damping = 0.5;
  opt->emin_ratio = 1e-9;
  opt->change_tolerance = 0; /* run every iteration */
  if (p->zhang2023) {
    vox_initial_design_defaults(&p->initial);
    p->initial.kind = VOX_INITIAL_TRIGONOMETRIC;
    p->initial.volume_fraction = v;
    p->initial.seed = 1;
    p->initial.symmetry = VOX_SYMMETRY_REFLECT6;
    opt->initial = &p->initial;
    opt->symmetry = VOX_SYMMETRY_REFLECT6;
    return 0;
  }
  p->model.density = malloc(ne * sizeof *p->model.density);
  if (!p->model.density) return -1;
  for (int k = 0; k < n; k++)
    for (int j = 0; j < n; j++)
      for (int i = 0; i < n; i++) {
        const double x = 2 * M_PI * (i + 0.5) / n, y = 2 * M_PI * (j + 0.5) / n,
                     z = 2 * M_PI * (k + 0.5) / n;
        p->model.density[((size_t)k * n + j) * n + i] =
            fmin(1, fmax(0.001, v + 0.5 * v * (cos(x) + cos(y) + cos(z))));
      }
  return 0;
}

void cell_problem_free(cell_problem *p) { vox_model_free(&p->model); }

/* binary: rho >= threshold solid, the rest void; else the grey design */
static int moduli_of(vox_context *ctx, vox_backend *be, const vox_model *model,
                     const double *density, int binary, double threshold, double penalty,
                     double emin, vox_cell_moduli *moduli, double *volume_fraction) {
  vox_model cell;
  if (vox_model_copy(ctx, &cell, model) != VOX_OK) return -1;
  const size_t ne = (size_t)vox_grid_elements(&model->grid);
  double *d = realloc(cell.density, ne * sizeof *d);
  if (!d) {
    vox_model_free(&cell);
    return -1;
  }
  cell.density = d;
  double solid = 0;
  for (size_t e = 0; e < ne; e++) {
    d[e] = binary ? (density[e] >= threshold) : density[e];
    solid += d[e];
  }
  if (volume_fraction) *volume_fraction = solid / (double)ne;
  vox_solver_options o;
  vox_solver_options_default(&o);
  o.rtol = 1e-10;
  double c[36];
  const vox_status s = vox_homogenize(ctx, be, &cell, 1, penalty, emin, &o, c, NULL, NULL);
  vox_model_free(&cell);
  if (s != VOX_OK) return -1;
  vox_cell_moduli_of(c, moduli);
  return 0;
}

int cell_binary_moduli(vox_context *ctx, vox_backend *be, const vox_model *model,
                       const double *density, double penalty, double emin,
                       vox_cell_moduli *moduli, double *volume_fraction) {
  return moduli_of(ctx, be, model, density, 1, 0.5, penalty, emin, moduli, volume_fraction);
}

static int descending(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x < y) - (x > y);
}

int cell_binary_moduli_at_volume(vox_context *ctx, vox_backend *be, const vox_model *model,
                                 const double *density, double target, double penalty,
                                 double emin, vox_cell_moduli *moduli, double *threshold,
                                 double *volume_fraction) {
  const size_t ne = (size_t)vox_grid_elements(&model->grid);
  double *sorted = malloc(ne * sizeof *sorted);
  if (!sorted) return -1;
  memcpy(sorted, density, ne * sizeof *sorted);
  qsort(sorted, ne, sizeof *sorted, descending);
  size_t k = (size_t)llround(target * (double)ne);
  if (k < 1) k = 1;
  if (k > ne) k = ne;
  *threshold = sorted[k - 1]; /* the k-th largest: ties at it go solid too */
  free(sorted);
  return moduli_of(ctx, be, model, density, 1, *threshold, penalty, emin, moduli,
                   volume_fraction);
}

int cell_grey_moduli(vox_context *ctx, vox_backend *be, const vox_model *model,
                     const double *density, double penalty, double emin, vox_cell_moduli *moduli) {
  return moduli_of(ctx, be, model, density, 0, 0, penalty, emin, moduli, NULL);
}
