/* SPDX-License-Identifier: BSD-3-Clause */
/* Design constraints beyond one volume (voxfe/model.h vox_design_constraint)
 * with the method of moving asymptotes, on small cantilevers on the CPU:
 *
 *   minvolume  the volume objective under a compliance limit 1.2 times the
 *              compliance OC reaches at volume 0.3: the final design meets
 *              the limit to the constraint tolerance (its compliance
 *              evaluated again on its own), the limit is active, and the
 *              volume is below 0.3 (OC's design is feasible with slack);
 *   regions    two labelled regions of the design domain, one volume at
 *              most 0.4, the other exactly 0.2: each met, measured on the
 *              final density;
 *   cases      two load cases (tip down, tip sideways) each with its own
 *              compliance limit, the volume objective: both met;
 *   oc         the optimality-criteria update refuses what it cannot meet
 *              before any solve (no history, the model untouched), and meets
 *              a model's single volume constraint of the design domain;
 *   history    every design iteration's constraint values are in the
 *              history, and a design file holds them (written and read). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../check.h"
#include "voxfe/io.h"
#include "voxfe/voxfe.h"

static int64_t node(const vox_grid *g, int64_t i, int64_t j, int64_t k) {
  return (k * (g->ny + 1) + j) * (g->nx + 1) + i;
}

/* nx x nx/2 x nx/2 cantilever clamped at x = 0; case 0 a downward line load
 * at the bottom edge of the free end, with `sideways` a case 1 pulling the
 * side edge (y = 0) of the middle cross-section along -y. */
static void make_cantilever(vox_context *ctx, vox_model *m, int nx, int sideways) {
  vox_grid g = {.nx = nx, .ny = nx / 2, .nz = nx / 2, .voxel_size = {1, 1, 1}};
  CHECK_OK(ctx, vox_model_init(ctx, m, &g));
  memset(m->label, 1, (size_t)vox_grid_elements(&g));
  vox_material design = {.label = 1, .youngs_modulus = 1, .poisson_ratio = 0.3, .name = "design"};
  CHECK_OK(ctx, vox_model_add_material(ctx, m, &design));
  for (int64_t k = 0; k <= g.nz; k++)
    for (int64_t j = 0; j <= g.ny; j++)
      for (int c = 0; c < 3; c++)
        CHECK_OK(ctx, vox_model_add_constraint(ctx, m, node(&g, 0, j, k), c, 0));
  CHECK_OK(ctx, vox_model_set_load_cases(ctx, m, sideways ? 2 : 1));
  for (int64_t j = 0; j <= g.ny; j++)
    CHECK_OK(ctx, vox_model_add_load(ctx, m, node(&g, g.nx, j, 0), 2, 0, -1.0 / (g.ny + 1)));
  for (int64_t k = 0; sideways && k <= g.nz; k++)
    CHECK_OK(ctx, vox_model_add_load(ctx, m, node(&g, g.nx / 2, 0, k), 1, 1, -1.0 / (g.nz + 1)));
}

/* MMA with the density filter (whose gradients are those of the function
 * MMA approximates), p = 3 from the start. */
static void mma_options(vox_optimizer_options *o, int iterations) {
  vox_optimizer_options_default(o);
  o->update = VOX_UPDATE_MMA;
  o->filter = VOX_FILTER_DENSITY;
  o->continuation = 0;
  o->max_iterations = iterations;
}

static void add_constraint(vox_context *ctx, vox_model *m, const char *name, int kind,
                           int equal, int label, int load_case, double limit) {
  vox_design_constraint c = {.kind = (uint8_t)kind, .equal = (uint8_t)equal,
                             .label = (uint8_t)label, .load_case = load_case, .limit = limit};
  snprintf(c.name, sizeof c.name, "%s", name);
  CHECK_OK(ctx, vox_model_add_design_constraint(ctx, m, &c));
}

/* Compliance of each load case of the model's final design, evaluated from
 * its density alone (max_iterations 0), on a copy without constraints. */
static void evaluate(vox_context *ctx, vox_backend *be, const vox_model *design, int cases,
                     double *compliance) {
  for (int c = 0; c < cases; c++) {
    vox_model m = {0};
    make_cantilever(ctx, &m, (int)design->grid.nx, cases > 1);
    const size_t ne = (size_t)vox_grid_elements(&m.grid);
    m.density = malloc(ne * sizeof *m.density);
    memcpy(m.density, design->density, ne * sizeof *m.density);
    double w[2] = {c == 0, c == 1};
    if (cases > 1) CHECK_OK(ctx, vox_model_set_load_case_weights(ctx, &m, w));
    vox_optimizer_options o;
    vox_optimizer_options_default(&o);
    o.max_iterations = 0;
    vox_optimize_result r;
    CHECK_OK(ctx, vox_optimize(ctx, be, &m, &o, &r));
    compliance[c] = r.objective;
    vox_model_free(&m);
  }
}

static double region_volume(const vox_model *m, int label) {
  double sum = 0, n = 0;
  for (int64_t e = 0; e < vox_grid_elements(&m->grid); e++)
    if (m->label[e] == label) sum += m->density[e], n++;
  return sum / n;
}

static void report(const char *what, const vox_model *m, const vox_optimize_result *r) {
  fprintf(stderr, "%s: %d iterations (%s), objective %.6g, volume %.6g, constraints", what,
          r->iterations, vox_stop_reason_name(r->reason), r->objective, r->volume_fraction);
  for (int i = 0; i < m->n_design_constraints; i++)
    fprintf(stderr, " %s %.6g (limit %.6g)", m->design_constraints[i].name,
            m->final_constraint ? m->final_constraint[i] : NAN, m->design_constraints[i].limit);
  fprintf(stderr, "\n");
}

static void test_minvolume(vox_context *ctx, vox_backend *be) {
  /* the reference: OC's compliance at volume 0.3 */
  vox_model ref = {0};
  make_cantilever(ctx, &ref, 12, 0);
  vox_optimizer_options o;
  vox_optimizer_options_default(&o);
  o.filter = VOX_FILTER_DENSITY;
  o.continuation = 0;
  o.max_iterations = 60;
  vox_optimize_result r;
  CHECK_OK(ctx, vox_optimize(ctx, be, &ref, &o, &r));
  const double limit = 1.2 * r.objective;
  vox_model_free(&ref);

  vox_model m = {0};
  make_cantilever(ctx, &m, 12, 0);
  m.objective = VOX_OBJECTIVE_VOLUME;
  add_constraint(ctx, &m, "stiffness", VOX_CONSTRAINT_COMPLIANCE, 0, 0, 0, limit);
  mma_options(&o, 80);
  CHECK_OK(ctx, vox_optimize(ctx, be, &m, &o, &r));
  report("minimum volume", &m, &r);
  double c;
  evaluate(ctx, be, &m, 1, &c);
  CHECK(m.final_constraint != NULL);
  if (m.final_constraint) CHECK_CLOSE(m.final_constraint[0], c, 1e-6);
  CHECK(c <= limit * (1 + o.constraint_tolerance));
  CHECK(c >= 0.98 * limit);         /* the limit is what holds the volume up */
  CHECK(r.volume_fraction < 0.3);   /* OC's design at 0.3 is feasible with slack */
  CHECK_CLOSE(r.objective, r.volume_fraction, 1e-12);
  vox_model_free(&m);
}

static void test_regions(vox_context *ctx, vox_backend *be) {
  vox_model m = {0};
  make_cantilever(ctx, &m, 12, 0);
  /* the free half (x >= 6) is a second design material, label 4 */
  for (int64_t e = 0; e < vox_grid_elements(&m.grid); e++)
    if (e % m.grid.nx >= 6) m.label[e] = 4;
  vox_material tip = {.label = 4, .youngs_modulus = 1, .poisson_ratio = 0.3, .name = "tip"};
  CHECK_OK(ctx, vox_model_add_material(ctx, &m, &tip));
  add_constraint(ctx, &m, "root", VOX_CONSTRAINT_VOLUME, 0, 1, 0, 0.4);
  add_constraint(ctx, &m, "tip", VOX_CONSTRAINT_VOLUME, 1, 4, 0, 0.2);
  vox_optimizer_options o;
  mma_options(&o, 60);
  vox_optimize_result r;
  CHECK_OK(ctx, vox_optimize(ctx, be, &m, &o, &r));
  report("two regions", &m, &r);
  const double root = region_volume(&m, 1), tip_volume = region_volume(&m, 4);
  CHECK(root <= 0.4 * (1 + o.constraint_tolerance));
  CHECK(root >= 0.4 * 0.99); /* more material is stiffer: the bound is active */
  CHECK(fabs(tip_volume / 0.2 - 1) <= o.constraint_tolerance);
  if (m.final_constraint) {
    CHECK_CLOSE(m.final_constraint[0], root, 1e-12);
    CHECK_CLOSE(m.final_constraint[1], tip_volume, 1e-12);
  }
  vox_model_free(&m);
}

static void test_cases(vox_context *ctx, vox_backend *be) {
  /* the references: each case's compliance of OC's design for both cases at 0.3 */
  vox_model ref = {0};
  make_cantilever(ctx, &ref, 12, 1);
  vox_optimizer_options o;
  vox_optimizer_options_default(&o);
  o.filter = VOX_FILTER_DENSITY;
  o.continuation = 0;
  o.max_iterations = 60;
  vox_optimize_result r;
  CHECK_OK(ctx, vox_optimize(ctx, be, &ref, &o, &r));
  double c_ref[2];
  evaluate(ctx, be, &ref, 2, c_ref);
  vox_model_free(&ref);

  vox_model m = {0};
  make_cantilever(ctx, &m, 12, 1);
  m.objective = VOX_OBJECTIVE_VOLUME;
  const double limit[2] = {1.2 * c_ref[0], 1.2 * c_ref[1]};
  add_constraint(ctx, &m, "down", VOX_CONSTRAINT_COMPLIANCE, 0, 0, 0, limit[0]);
  add_constraint(ctx, &m, "sideways", VOX_CONSTRAINT_COMPLIANCE, 0, 0, 1, limit[1]);
  mma_options(&o, 80);
  CHECK_OK(ctx, vox_optimize(ctx, be, &m, &o, &r));
  report("two load cases", &m, &r);
  double c[2];
  evaluate(ctx, be, &m, 2, c);
  int active = 0;
  for (int k = 0; k < 2; k++) {
    CHECK(c[k] <= limit[k] * (1 + o.constraint_tolerance));
    active += c[k] >= 0.98 * limit[k];
    if (m.final_constraint) CHECK_CLOSE(m.final_constraint[k], c[k], 1e-6);
  }
  CHECK(active >= 1);
  CHECK(r.volume_fraction < 0.3);
  vox_model_free(&m);
}

static void test_oc(vox_context *ctx, vox_backend *be) {
  vox_optimizer_options o;
  vox_optimizer_options_default(&o);
  o.max_iterations = 5;
  vox_optimize_result r;
  /* a compliance limit, two volumes, a region's volume, the volume objective */
  for (int problem = 0; problem < 4; problem++) {
    vox_model m = {0};
    make_cantilever(ctx, &m, 8, 0);
    if (problem == 0) add_constraint(ctx, &m, "c", VOX_CONSTRAINT_COMPLIANCE, 0, 0, 0, 10);
    if (problem == 1) {
      add_constraint(ctx, &m, "a", VOX_CONSTRAINT_VOLUME, 0, 0, 0, 0.3);
      add_constraint(ctx, &m, "b", VOX_CONSTRAINT_VOLUME, 0, 1, 0, 0.3);
    }
    if (problem == 2) add_constraint(ctx, &m, "r", VOX_CONSTRAINT_VOLUME, 0, 1, 0, 0.3);
    if (problem == 3) {
      m.objective = VOX_OBJECTIVE_VOLUME;
      add_constraint(ctx, &m, "c", VOX_CONSTRAINT_COMPLIANCE, 0, 0, 0, 10);
    }
    CHECK(vox_optimize(ctx, be, &m, &o, &r) == VOX_ERR_INVALID_ARGUMENT);
    CHECK(strstr(vox_context_message(ctx), "optimizer mma") != NULL);
    CHECK(m.n_history == 0 && m.stage == VOX_STAGE_MODEL && !m.density);
    vox_model_free(&m);
  }
  /* one volume of the design domain: OC meets it, whatever --volume-fraction says */
  vox_model m = {0};
  make_cantilever(ctx, &m, 8, 0);
  add_constraint(ctx, &m, "budget", VOX_CONSTRAINT_VOLUME, 0, 0, 0, 0.25);
  o.max_iterations = 20;
  CHECK_OK(ctx, vox_optimize(ctx, be, &m, &o, &r));
  CHECK(fabs(r.volume_fraction - 0.25) < 1e-3);
  CHECK(m.history_constraint && m.n_history == 20);
  if (m.history_constraint) CHECK_CLOSE(m.history_constraint[19], m.history[19].volume_fraction, 1e-12);
  vox_model_free(&m);
}

static void test_history(vox_context *ctx, vox_backend *be) {
  vox_model m = {0};
  make_cantilever(ctx, &m, 8, 1);
  m.objective = VOX_OBJECTIVE_VOLUME;
  add_constraint(ctx, &m, "down", VOX_CONSTRAINT_COMPLIANCE, 0, 0, 0, 40);
  add_constraint(ctx, &m, "budget", VOX_CONSTRAINT_VOLUME, 0, 0, 0, 0.5);
  add_constraint(ctx, &m, "sideways", VOX_CONSTRAINT_COMPLIANCE, 0, 0, 1, 80);
  vox_optimizer_options o;
  mma_options(&o, 6);
  o.change_tolerance = 0;
  vox_optimize_result r;
  CHECK_OK(ctx, vox_optimize(ctx, be, &m, &o, &r));
  CHECK(m.n_history == 6 && m.history_constraint != NULL);
  if (!m.history_constraint) return;
  /* the volume constraint of the design domain is the row's volume; the
   * first row's compliances are those of the uniform start, evaluated alone */
  for (size_t k = 0; k < m.n_history; k++)
    CHECK_CLOSE(m.history_constraint[3 * k + 1], m.history[k].volume_fraction, 1e-12);
  vox_model start = {0};
  make_cantilever(ctx, &start, 8, 1);
  const size_t ne = (size_t)vox_grid_elements(&start.grid);
  start.density = malloc(ne * sizeof *start.density);
  for (size_t e = 0; e < ne; e++) start.density[e] = o.volume_fraction;
  double c[2];
  evaluate(ctx, be, &start, 2, c);
  vox_model_free(&start);
  CHECK_CLOSE(m.history_constraint[0], c[0], 1e-6);
  CHECK_CLOSE(m.history_constraint[2], c[1], 1e-6);
  /* through a design file and back */
  char path[] = "/tmp/voxfe_design_constraints_XXXXXX.nc";
  int fd = mkstemps(path, 3);
  CHECK(fd >= 0);
  if (fd >= 0) close(fd);
  CHECK_OK(ctx, vox_model_write(ctx, path, &m));
  vox_model back = {0};
  CHECK_OK(ctx, vox_model_read(ctx, path, &back));
  unlink(path);
  CHECK(back.n_design_constraints == 3 && back.objective == VOX_OBJECTIVE_VOLUME);
  if (back.n_design_constraints == 3)
    CHECK(memcmp(back.design_constraints, m.design_constraints,
                 3 * sizeof *m.design_constraints) == 0);
  CHECK(back.history_constraint && back.final_constraint);
  if (back.history_constraint)
    CHECK(memcmp(back.history_constraint, m.history_constraint, 18 * sizeof(double)) == 0);
  if (back.final_constraint)
    CHECK(memcmp(back.final_constraint, m.final_constraint, 3 * sizeof(double)) == 0);
  vox_model_free(&back);
  vox_model_free(&m);
}

int main(int argc, char **argv) {
  vox_context *ctx;
  vox_context_create(&ctx);
  vox_backend *be;
  CHECK_OK(ctx, vox_backend_create(ctx, VOX_DEVICE_CPU, &be));
  if (check_wanted(argc, argv, "minvolume")) test_minvolume(ctx, be);
  if (check_wanted(argc, argv, "regions")) test_regions(ctx, be);
  if (check_wanted(argc, argv, "cases")) test_cases(ctx, be);
  if (check_wanted(argc, argv, "oc")) test_oc(ctx, be);
  if (check_wanted(argc, argv, "history")) test_history(ctx, be);
  vox_backend_destroy(be);
  vox_context_destroy(ctx);
  CHECK_DONE();
}
