/* SPDX-License-Identifier: BSD-3-Clause */
/* The optimizer's periodic-cell design options (voxfe/optimizer.h, Zhang et al. 2023
 * section 6): symmetry enforcement keeps a symmetric design symmetric to the
 * bit under every group while the same start without it drifts away;
 * initial designs start on the design voxels only, at the volume fraction,
 * with the passive ones kept; a custom objective written as the bulk
 * modulus takes the built-in objective's iterates; a custom objective's
 * design sensitivities against central differences of the formula at C^H;
 * and the refusals (a symmetry the grid or the design domain cannot have, a
 * formula not defined at C^H); a shifted start gives the shifted design;
 * each objective solves only the unit strains its entries of C^H need, with
 * the iterates of all six solved, and reports the whole C^H at the end;
 * the symmetry checks on the generators of each group and the mirror
 * groups' orbit representatives by their coordinates; a cell of large
 * voxels converges with either cycle in either precision;
 * fields turned about the diagonal, and the symmetric cells that solve one
 * strain of each orbit and turn its field for the others; the final
 * evaluation's zz started from the hydrostatic field.
 * 4^3 to 16^3 cells, a few iterations: a few seconds (under a minute
 * under ASan). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "homogenize.h"
#include "symmetry_group.h"
#include "voxfe/voxfe.h"

/* An n^3 cell of edge 1, one design material (E = 1, nu = 0.3). */
static void make_cell(vox_context *ctx, vox_model *m, int n) {
  vox_grid g = {.nx = n, .ny = n, .nz = n, .voxel_size = {1.0 / n, 1.0 / n, 1.0 / n}};
  CHECK_OK(ctx, vox_model_init(ctx, m, &g));
  memset(m->label, 1, (size_t)vox_grid_elements(&g));
  vox_material a = {.label = 1, .youngs_modulus = 1, .poisson_ratio = 0.3, .name = "solid"};
  CHECK_OK(ctx, vox_model_add_material(ctx, m, &a));
}

static void cell_options(vox_optimizer_options *o, int n, int iterations) {
  vox_optimizer_options_default(o);
  o->cell_objective = VOX_CELL_BULK;
  o->continuation = 0;
  o->filter_radius = 1.5 / n;
  o->max_iterations = iterations;
  o->change_tolerance = 0; /* run every iteration */
  o->solver.precision = VOX_PRECISION_DOUBLE;
}

/* max |f(g e) - f(e)| over the elements e and the maps g of the group: 0
 * for a field with the symmetry, to the bit. */
static double asymmetry(const vox_grid *g, vox_symmetry sym, const double *f) {
  vox_symmetry_group group;
  vox_symmetry_group_make(sym, &group);
  double worst = 0;
  for (int64_t k = 0; k < g->nz; k++)
    for (int64_t j = 0; j < g->ny; j++)
      for (int64_t i = 0; i < g->nx; i++)
        for (int m = 0; m < group.n; m++) {
          const int64_t image = vox_symmetry_image(&group.map[m], g->nx, g->ny, g->nz, i, j, k);
          worst = fmax(worst, fabs(f[image] - f[(k * g->ny + j) * g->nx + i]));
        }
  return worst;
}

/* A trigonometric start under each symmetry, three iterations on a 4^3
 * cell with enforcement: the design is symmetric to the bit (Zhang et al. 2023
 * section 6.1; without the averages in the loop, rounding leaves 1e-16 to
 * 1e-10 of asymmetry, which this test catches).
 * The same start with no symmetry given is not made symmetric: its design
 * is far from its own orbit means. */
static void test_symmetry(vox_context *ctx, vox_backend *be) {
  const int n = 4, it = 3;
  const vox_symmetry groups[] = {VOX_SYMMETRY_REFLECT3, VOX_SYMMETRY_REFLECT6,
                                 VOX_SYMMETRY_ROTATE3};
  vox_initial_design init;
  vox_initial_design_defaults(&init);
  init.kind = VOX_INITIAL_TRIGONOMETRIC;
  init.seed = 11;
  for (int i = 0; i < 3; i++) {
    vox_model m;
    make_cell(ctx, &m, n);
    vox_optimizer_options o;
    cell_options(&o, n, it);
    o.initial = &init;
    o.symmetry = groups[i];
    vox_optimize_result r;
    CHECK_OK(ctx, vox_optimize(ctx, be, &m, &o, &r));
    CHECK(r.iterations == it);
    const double enforced = asymmetry(&m.grid, groups[i], m.density);
    CHECK(enforced == 0);
    CHECK_CLOSE(r.volume_fraction, 0.3, 1e-6);
    /* the symmetric C^H of a cubic design: C00 = C11 = C22 (reflect6 and
     * rotate3 permute the axes) */
    if (groups[i] != VOX_SYMMETRY_REFLECT3) {
      CHECK_CLOSE(r.tensor[7], r.tensor[0], 1e-9);
      CHECK_CLOSE(r.tensor[14], r.tensor[0], 1e-9);
    }
    double *with = m.density;
    m.density = NULL;
    vox_model_free(&m);

    make_cell(ctx, &m, n);
    o.symmetry = VOX_SYMMETRY_NONE;
    CHECK_OK(ctx, vox_optimize(ctx, be, &m, &o, &r));
    const double free_design = asymmetry(&m.grid, groups[i], m.density);
    double differs = 0;
    for (int e = 0; e < n * n * n; e++) differs = fmax(differs, fabs(with[e] - m.density[e]));
    fprintf(stderr, "%s: asymmetry %g with enforcement, %g without; designs differ by %g\n",
            vox_symmetry_name(groups[i]), enforced, free_design, differs);
    CHECK(free_design > 0.05);
    CHECK(differs > 0.05);
    free(with);
    vox_model_free(&m);
  }
}

/* A symmetric start given as the model's density stays symmetric with
 * enforcement; a symmetric design on a grid or a design domain that cannot
 * have the symmetry is refused, naming why. */
static void test_symmetry_refused(vox_context *ctx, vox_backend *be) {
  vox_model m;
  vox_grid box = {.nx = 8, .ny = 8, .nz = 4, .voxel_size = {0.125, 0.125, 0.25}};
  CHECK_OK(ctx, vox_model_init(ctx, &m, &box));
  memset(m.label, 1, 256);
  vox_material a = {.label = 1, .youngs_modulus = 1, .poisson_ratio = 0.3, .name = "solid"};
  CHECK_OK(ctx, vox_model_add_material(ctx, &m, &a));
  vox_optimizer_options o;
  cell_options(&o, 8, 1);
  o.symmetry = VOX_SYMMETRY_ROTATE3;
  vox_optimize_result r;
  CHECK(vox_optimize(ctx, be, &m, &o, &r) == VOX_ERR_INVALID_ARGUMENT);
  CHECK(strstr(vox_context_message(ctx), "needs a cubic cell") != NULL);
  /* reflect3 suits the box, but not a passive voxel in one corner */
  vox_material p = a;
  p.label = 2, p.role = VOX_ROLE_SOLID;
  CHECK_OK(ctx, vox_model_add_material(ctx, &m, &p));
  m.label[0] = 2;
  o.symmetry = VOX_SYMMETRY_REFLECT3;
  CHECK(vox_optimize(ctx, be, &m, &o, &r) == VOX_ERR_INVALID_ARGUMENT);
  CHECK(strstr(vox_context_message(ctx), "symmetry reflect3: the model's design voxels are not "
                                         "symmetric") != NULL);
  vox_model_free(&m);
}

/* Random and trigonometric starts on a model with a passive solid layer:
 * with a move limit of 1e-9 and no filter the one-iteration design is the
 * start to 1e-9, whose mean over the design voxels is the volume fraction,
 * whose passive voxels are solid, and which is not uniform. */
static void test_initial(vox_context *ctx, vox_backend *be) {
  const vox_initial_kind kinds[] = {VOX_INITIAL_RANDOM, VOX_INITIAL_TRIGONOMETRIC};
  for (int i = 0; i < 2; i++) {
    vox_model m;
    const int n = 4;
    make_cell(ctx, &m, n);
    vox_material p = m.materials[0];
    p.label = 2, p.role = VOX_ROLE_SOLID;
    CHECK_OK(ctx, vox_model_add_material(ctx, &m, &p));
    memset(m.label, 2, n * n); /* the bottom layer */
    vox_initial_design init;
    vox_initial_design_defaults(&init);
    init.kind = kinds[i];
    init.seed = 4;
    vox_optimizer_options o;
    cell_options(&o, n, 1);
    o.volume_fraction = 0.25;
    o.initial = &init;
    o.filter = VOX_FILTER_NONE;
    o.move_limit = 1e-9;
    vox_optimize_result r;
    CHECK_OK(ctx, vox_optimize(ctx, be, &m, &o, &r));
    double sum = 0, sum_sq = 0, passive = 1;
    int count = 0;
    for (int e = 0; e < n * n * n; e++) {
      if (m.label[e] == 2) {
        passive = fmin(passive, m.density[e]);
        continue;
      }
      sum += m.density[e], sum_sq += m.density[e] * m.density[e], count++;
    }
    const double mean = sum / count, sd = sqrt(sum_sq / count - mean * mean);
    fprintf(stderr, "%s start: mean %.9f, standard deviation %.3f\n", vox_initial_name(kinds[i]),
            mean, sd);
    CHECK(count == n * n * (n - 1));
    CHECK_CLOSE(mean, 0.25, 1e-8);
    CHECK(passive == 1);
    CHECK(sd > 0.1);
    vox_model_free(&m);
  }
}

/* The engine's defaults for a cell (vox_optimize with options as
 * vox_optimizer_options_default leaves them): no design and no start given
 * starts from Zhang et al. 2023's trigonometric family with seed 1 (the same iterates
 * as asking for it; a uniform start would be a stationary point), and the
 * CG tolerance is VOX_CELL_RTOL (1e-6 for a bounded model; a given one
 * stays). */
static void test_cell_defaults(vox_context *ctx, vox_backend *be) {
  vox_optimizer_options o;
  vox_optimizer_options_default(&o);
  CHECK(o.solver.rtol == VOX_RTOL_AUTO);
  CHECK(vox_optimizer_rtol(&o) == 1e-6);
  o.cell_objective = VOX_CELL_BULK;
  CHECK(vox_optimizer_rtol(&o) == VOX_CELL_RTOL);
  o.solver.rtol = 1e-9;
  CHECK(vox_optimizer_rtol(&o) == 1e-9);
  const int n = 8;
  vox_model m[2];
  vox_optimize_result r[2];
  vox_initial_design trig;
  vox_initial_design_defaults(&trig);
  trig.kind = VOX_INITIAL_TRIGONOMETRIC;
  for (int run = 0; run < 2; run++) {
    make_cell(ctx, &m[run], n);
    cell_options(&o, n, 3);
    o.solver.rtol = VOX_RTOL_AUTO;
    o.initial = run ? &trig : NULL;
    CHECK_OK(ctx, vox_optimize(ctx, be, &m[run], &o, &r[run]));
  }
  fprintf(stderr, "cell defaults: objective %.12g (no start given), %.12g (trigonometric, seed "
          "1), CG iterations %d and %d\n", r[0].objective, r[1].objective,
          r[0].total_cg_iterations, r[1].total_cg_iterations);
  CHECK(r[0].objective == r[1].objective);
  CHECK(r[0].total_cg_iterations == r[1].total_cg_iterations);
  /* not uniform: from a uniform start every element's sensitivity is the
   * same and the design would stay uniform */
  double lo = 1, hi = 0;
  for (int e = 0; e < n * n * n; e++)
    lo = fmin(lo, m[0].density[e]), hi = fmax(hi, m[0].density[e]);
  CHECK(hi - lo > 0.1);
  for (int run = 0; run < 2; run++) vox_model_free(&m[run]);
}

/* Custom objectives through vox_expression: the bulk modulus of eq. 19 as a
 * formula (upper-triangle entries doubled, three solves) gives the built-in
 * objective's values and designs (one hydrostatic solve), iteration by
 * iteration, with both solved tightly (the two sets of fields agree to the
 * solver's tolerance, not to rounding). */
static void test_custom_bulk(vox_context *ctx, vox_backend *be) {
  const int n = 4;
  vox_initial_design init;
  vox_initial_design_defaults(&init);
  init.kind = VOX_INITIAL_TRIGONOMETRIC;
  init.seed = 2;
  vox_model m[2];
  vox_optimize_result r[2];
  vox_expression *e;
  CHECK_OK(ctx, vox_expression_parse(ctx, "-(C11 + C22 + C33 + 2*(C12 + C13 + C23)) / 9", &e));
  for (int run = 0; run < 2; run++) {
    make_cell(ctx, &m[run], n);
    vox_optimizer_options o;
    cell_options(&o, n, 3);
    o.initial = &init;
    o.solver.rtol = 1e-12;
    if (run == 1) o.cell_objective = VOX_CELL_CUSTOM, o.expression = e;
    CHECK_OK(ctx, vox_optimize(ctx, be, &m[run], &o, &r[run]));
  }
  CHECK(m[0].n_history == 3 && m[1].n_history == 3);
  for (size_t k = 0; k < m[0].n_history && k < m[1].n_history; k++)
    CHECK_CLOSE(m[1].history[k].objective, m[0].history[k].objective, 1e-11);
  CHECK_CLOSE(r[1].objective, r[0].objective, 1e-11);
  CHECK_CLOSE(-r[1].objective, r[1].moduli.bulk, 1e-12);
  CHECK_CLOSE(-r[0].objective, r[0].moduli.bulk, 1e-11);
  double diff = 0;
  for (int i = 0; i < n * n * n; i++) diff = fmax(diff, fabs(m[0].density[i] - m[1].density[i]));
  fprintf(stderr, "custom bulk: largest density difference %g\n", diff);
  CHECK(diff <= 1e-10);
  vox_expression_free(e);
  vox_model_free(&m[0]);
  vox_model_free(&m[1]);
}

/* The design sensitivities of a custom formula, as the optimizer forms
 * them (the formula's gradient in C^H through vox_homog_gradient), against
 * central differences of the formula at C^H of the perturbed design. The
 * formula mixes normal, shear and coupling entries, so an entry named in
 * the wrong place shows. */
static void test_custom_gradient(vox_context *ctx, vox_backend *be) {
  const int n = 4;
  const size_t ne = (size_t)n * n * n;
  vox_model m;
  make_cell(ctx, &m, n);
  m.density = malloc(ne * sizeof *m.density);
  uint64_t state = 7;
  for (size_t i = 0; i < ne; i++) {
    state = state * 6364136223846793005u + 1442695040888963407u;
    m.density[i] = 0.2 + 0.8 * (double)(state >> 11) / 9007199254740992.0;
  }
  const char *text = "log(1 + 0.6*(C12 + C23 + C31)/(C11 + C22 + C33)) - sqrt(C44*C55)"
                     " + 50*C45*C46 + C16^2*iter";
  vox_expression *expr;
  CHECK_OK(ctx, vox_expression_parse(ctx, text, &expr));
  vox_solver_options so;
  vox_solver_options_default(&so);
  so.rtol = 1e-12;
  so.precision = VOX_PRECISION_DOUBLE;
  vox_homog *h;
  CHECK_OK(ctx, vox_homog_create(ctx, be, &m, &h));
  const vox_backend_ops *op = be->ops;
  vox_vec rho, ones, energy, df;
  op->vec->create(be, ne, VOX_DOUBLE, &rho), op->vec->create(be, ne, VOX_DOUBLE, &ones);
  op->vec->create(be, ne, VOX_DOUBLE, &energy), op->vec->create(be, ne, VOX_DOUBLE, &df);
  op->vec->set(be, &ones, 1);
  const double p = 3, emin = 1e-9;
  const int iteration = 2;
  double c[36], g[36], f;
  /* f at a density, the formula's gradient in C^H left in g */
  double *work = malloc(ne * sizeof *work);
#define F_AT(density)                                                                              \
  do {                                                                                             \
    int cg_;                                                                                       \
    vox_solve_result failed_;                                                                      \
    op->vec->upload(be, &rho, density);                                                            \
    CHECK_OK(ctx, op->design->simp_moduli(be, &rho, &h->fem->e_solid, p, emin, &h->fem->moduli));  \
    CHECK_OK(ctx, vox_fem_update(h->fem));                                                         \
    CHECK_OK(ctx, vox_homog_solve(h, &so, &ones, c, &cg_, &failed_));                              \
    CHECK(failed_.reason > 0);                                                                     \
    CHECK_OK(ctx, vox_expression_evaluate(ctx, expr, c, iteration, &f, g));                        \
  } while (0)
  F_AT(m.density);
  CHECK(fabs(c[3 * 6 + 4]) > 1e-6 && fabs(c[0 * 6 + 5]) > 1e-6); /* the couplings are there */
  double *grad = malloc(ne * sizeof *grad);
  CHECK_OK(ctx, vox_homog_gradient(h, g, 0, &rho, p, emin, &energy, &df));
  op->vec->download(be, &df, grad);
  const int elements[3] = {0, 27, 63};
  const double step = 1e-5;
  for (int a = 0; a < 3; a++) {
    double fp, fm;
    memcpy(work, m.density, ne * sizeof *work);
    work[elements[a]] += step;
    F_AT(work);
    fp = f;
    work[elements[a]] -= 2 * step;
    F_AT(work);
    fm = f;
    const double fd = (fp - fm) / (2 * step);
    fprintf(stderr, "element %d: gradient %.10g, differences %.10g\n", elements[a],
            grad[elements[a]], fd);
    CHECK(fabs(grad[elements[a]] - fd) <= 1e-5 * fabs(fd) + 1e-9);
  }
#undef F_AT
  free(work), free(grad);
  op->vec->destroy(be, &rho), op->vec->destroy(be, &ones);
  op->vec->destroy(be, &energy), op->vec->destroy(be, &df);
  vox_homog_destroy(h);
  vox_expression_free(expr);
  vox_model_free(&m);
}

/* A formula not defined at an iteration's C^H fails the run with the
 * iteration and the formula's character in the message. */
static void test_custom_undefined(vox_context *ctx, vox_backend *be) {
  vox_model m;
  make_cell(ctx, &m, 4);
  vox_expression *e;
  CHECK_OK(ctx, vox_expression_parse(ctx, "-C11 + log(C12 - C11)", &e));
  vox_optimizer_options o;
  cell_options(&o, 4, 2);
  o.cell_objective = VOX_CELL_CUSTOM;
  o.expression = e;
  vox_optimize_result r;
  CHECK(vox_optimize(ctx, be, &m, &o, &r) == VOX_ERR_INVALID_ARGUMENT);
  const char *msg = vox_context_message(ctx);
  fprintf(stderr, "%s\n", msg);
  CHECK(strstr(msg, "design iteration 1") != NULL);
  CHECK(strstr(msg, "log at character 8") != NULL);
  o.expression = NULL;
  CHECK(vox_optimize(ctx, be, &m, &o, &r) == VOX_ERR_INVALID_ARGUMENT);
  vox_expression_free(e);
  vox_model_free(&m);
}

/* A cell is a period of an infinite material, so the optimizer cannot tell
 * where its faces are: a start shifted cyclically by two voxels along x
 * gives the shifted design (to rounding) and the same objective. This
 * needs every step to wrap, the filter's taps too (Zhang et al. 2023 section 6.5):
 * with the plain filter, cut at the faces, the two designs differed by
 * 0.018 after three iterations. */
static void test_shift(vox_context *ctx, vox_backend *be) {
  const int n = 8, it = 3, shift = 2;
  const size_t ne = (size_t)n * n * n;
  vox_model a, b;
  make_cell(ctx, &a, n);
  make_cell(ctx, &b, n);
  a.density = malloc(ne * sizeof *a.density);
  b.density = malloc(ne * sizeof *b.density);
  CHECK(a.density && b.density);
  srand(5);
  for (size_t e = 0; e < ne; e++) a.density[e] = 0.1 + 0.4 * rand() / (double)RAND_MAX;
  for (size_t e = 0; e < ne; e++) {
    const size_t i = e % n, row = e - i;
    b.density[row + (i + shift) % n] = a.density[e];
  }
  vox_optimizer_options o;
  cell_options(&o, n, it);
  o.filter_radius = 2.5 / n; /* taps two voxels out: across the faces */
  vox_optimize_result ra, rb;
  CHECK_OK(ctx, vox_optimize(ctx, be, &a, &o, &ra));
  CHECK_OK(ctx, vox_optimize(ctx, be, &b, &o, &rb));
  double worst = 0;
  for (size_t e = 0; e < ne; e++) {
    const size_t i = e % n, row = e - i;
    worst = fmax(worst, fabs(b.density[row + (i + shift) % n] - a.density[e]));
  }
  printf("shifted start: designs differ by %.3g after %d iterations, objectives %.15g %.15g\n",
         worst, it, ra.objective, rb.objective);
  CHECK(worst <= 1e-9);
  CHECK(fabs(ra.objective - rb.objective) <= 1e-9 * fabs(ra.objective));
  vox_model_free(&a);
  vox_model_free(&b);
}

/* The bulk modulus as a C function, which does not say which entries it
 * reads: the optimizer solves all six strains for it. */
static int bulk_function(void *self, const double c[36], int iteration, double *f, double g[36]) {
  (void)self, (void)iteration;
  *f = -(c[0] + c[7] + c[14] + 2 * (c[1] + c[2] + c[8])) / 9;
  for (int i = 0; i < 36; i++) g[i] = i / 6 < 3 && i % 6 < 3 ? -1.0 / 9 : 0;
  return 0;
}

/* What the progress reports say each design iteration solved. */
typedef struct solve_log {
  int solves[8], cg[8], n;
} solve_log;

static int log_solves(const vox_progress *p, void *user) {
  solve_log *l = user;
  if (l->n < 8) l->solves[l->n] = p->solves, l->cg[l->n] = p->cg_iterations, l->n++;
  return 0;
}

/* The strains each objective solves per design iteration: the normal ones
 * for the bulk modulus and the Poisson objectives, the shear ones for the
 * shear modulus, those of the entries an expression names, all six for a
 * function; an expression that names none is refused. */
static void test_strain_sets(vox_context *ctx, vox_backend *be) {
  vox_optimizer_options o;
  vox_optimizer_options_default(&o);
  const struct {
    vox_cell_objective objective;
    unsigned strains;
  } builtin[] = {{VOX_CELL_NONE, 0},        {VOX_CELL_BULK, 0x40},         {VOX_CELL_SHEAR, 0x38},
                 {VOX_CELL_POISSON, 0x07}, {VOX_CELL_POISSON_LOG, 0x07}};
  for (size_t i = 0; i < sizeof builtin / sizeof builtin[0]; i++) {
    o.cell_objective = builtin[i].objective;
    CHECK(vox_cell_objective_strains(&o) == builtin[i].strains);
  }
  o.cell_objective = VOX_CELL_CUSTOM;
  o.custom = bulk_function;
  CHECK(vox_cell_objective_strains(&o) == 0x3f);
  o.custom = NULL;
  const struct {
    const char *text;
    unsigned strains;
    const char *names;
  } formulas[] = {{"-(C44 + C55 + C66)/3", 0x38, "xy yz zx"},
                  {"C14 + log(C22)", 0x0b, "xx yy xy"},
                  {"iter * C66 - pi", 0x20, "zx"},
                  {"-(C11 + C22 + C33 + 2*(C12 + C13 + C23)) / 9", 0x07, "xx yy zz"},
                  {"C31 + C65^2", 0x35, "xx zz yz zx"},
                  {"iter + pi", 0, ""}};
  for (size_t i = 0; i < sizeof formulas / sizeof formulas[0]; i++) {
    vox_expression *e;
    CHECK_OK(ctx, vox_expression_parse(ctx, formulas[i].text, &e));
    o.expression = e;
    char names[24];
    const unsigned strains = vox_cell_objective_strains(&o);
    CHECK(strains == formulas[i].strains);
    CHECK(strcmp(vox_strains_text(strains, names, sizeof names), formulas[i].names) == 0);
    vox_expression_free(e);
  }
  /* a formula of no entry does not depend on the design */
  vox_expression *e;
  CHECK_OK(ctx, vox_expression_parse(ctx, "iter + pi", &e));
  vox_model m;
  make_cell(ctx, &m, 4);
  cell_options(&o, 4, 1);
  o.cell_objective = VOX_CELL_CUSTOM, o.expression = e;
  vox_optimize_result r;
  CHECK(vox_optimize(ctx, be, &m, &o, &r) == VOX_ERR_INVALID_ARGUMENT);
  CHECK(strstr(vox_context_message(ctx), "names no entry of C^H") != NULL);
  vox_expression_free(e);
  vox_model_free(&m);
}

/* The bulk objective solves the hydrostatic strain alone per design
 * iteration and takes the iterates of the same objective with all six
 * solved (a C function: the optimizer before it solved only what it
 * needed), objective by objective and design by design (to the solves'
 * tolerance), in fewer CG iterations; the shear formula solves the three
 * shear strains. The final C^H is the whole
 * tensor: all 36 entries against vox_homogenize's six solves on the final
 * design. */
static void test_needed_strains(vox_context *ctx, vox_backend *be) {
  const int n = 4, it = 3;
  vox_initial_design init;
  vox_initial_design_defaults(&init);
  init.kind = VOX_INITIAL_TRIGONOMETRIC;
  init.seed = 3;
  vox_expression *shear;
  CHECK_OK(ctx, vox_expression_parse(ctx, "-(C44 + C55 + C66)/3", &shear));
  vox_model m[3];
  vox_optimize_result r[3];
  solve_log logs[3] = {{{0}, {0}, 0}};
  for (int run = 0; run < 3; run++) {
    make_cell(ctx, &m[run], n);
    vox_optimizer_options o;
    cell_options(&o, n, it);
    o.initial = &init;
    o.solver.rtol = 1e-10; /* the final C^H against vox_homogenize's to 1e-8 */
    if (run == 1) o.cell_objective = VOX_CELL_CUSTOM, o.custom = bulk_function;
    if (run == 2) o.cell_objective = VOX_CELL_CUSTOM, o.expression = shear;
    vox_context_set_progress(ctx, log_solves, &logs[run]);
    CHECK_OK(ctx, vox_optimize(ctx, be, &m[run], &o, &r[run]));
    vox_context_set_progress(ctx, NULL, NULL);
  }
  CHECK(logs[0].n == it && logs[1].n == it && logs[2].n == it);
  int cg[2] = {0, 0};
  for (int k = 0; k < it; k++) {
    CHECK(logs[0].solves[k] == 1 && logs[1].solves[k] == 6 && logs[2].solves[k] == 3);
    CHECK_CLOSE(m[0].history[k].objective, m[1].history[k].objective, 1e-9);
    cg[0] += logs[0].cg[k], cg[1] += logs[1].cg[k];
  }
  fprintf(stderr,
          "needed strains: bulk %d CG iterations (1 solve per design iteration), "
          "all six %d\n",
          cg[0], cg[1]);
  CHECK(cg[0] > 0 && 3 * cg[0] < cg[1]);
  double diff = 0;
  for (int i = 0; i < n * n * n; i++) diff = fmax(diff, fabs(m[0].density[i] - m[1].density[i]));
  fprintf(stderr, "needed strains: bulk's design against six solves' to %g\n", diff);
  CHECK(diff <= 1e-8);
  /* each run's final C^H, whole, against six solves on its final design */
  for (int run = 0; run < 3; run++) {
    CHECK(r[run].has_tensor);
    vox_solver_options so;
    vox_solver_options_default(&so);
    so.rtol = 1e-12;
    vox_optimizer_options o;
    cell_options(&o, n, it);
    double c[36], scale = 0, worst = 0;
    CHECK_OK(ctx, vox_homogenize(ctx, be, &m[run], 1, o.penalty, o.emin_ratio, &so, c, NULL,
                                 NULL));
    for (int i = 0; i < 36; i++) scale = fmax(scale, fabs(c[i]));
    for (int i = 0; i < 36; i++) worst = fmax(worst, fabs(r[run].tensor[i] - c[i]));
    fprintf(stderr, "needed strains: run %d final C^H against six solves: %.2g of the largest "
            "entry\n", run, worst / scale);
    CHECK(worst <= 1e-8 * scale);
    CHECK(fabs(r[run].tensor[21]) > 1e-3 * scale && fabs(r[run].tensor[0]) > 1e-3 * scale);
  }
  vox_expression_free(shear);
  for (int run = 0; run < 3; run++) vox_model_free(&m[run]);
}

/* vox_symmetry_holds and its mask form, on random fields made symmetric
 * under each group H and checked under each group G: they hold exactly
 * where G is part of H (reflect3 and rotate3 of reflect6). */
static void test_symmetry_holds(vox_context *ctx) {
  const int n = 12; /* the masks' orbits many enough not to be symmetric by chance */
  const vox_grid g = {.nx = n, .ny = n, .nz = n, .voxel_size = {1, 1, 1}};
  const size_t ne = (size_t)n * n * n;
  double *f = malloc(ne * sizeof *f);
  uint8_t *mask = malloc(ne);
  const vox_symmetry all[] = {VOX_SYMMETRY_NONE, VOX_SYMMETRY_REFLECT3, VOX_SYMMETRY_REFLECT6,
                              VOX_SYMMETRY_ROTATE3};
  for (int h = 0; h < 4; h++) {
    for (size_t e = 0; e < ne; e++) f[e] = (double)((e * 2654435761u) % 1000);
    CHECK_OK(ctx, vox_symmetrize(ctx, &g, all[h], f));
    for (size_t e = 0; e < ne; e++) mask[e] = f[e] > 500;
    for (int gi = 1; gi < 4; gi++) {
      const int part = gi == h || (all[h] == VOX_SYMMETRY_REFLECT6 && gi != 0);
      CHECK(vox_symmetry_holds(&g, all[gi], f, 2) == part);
      CHECK(vox_symmetry_holds_mask(&g, all[gi], mask, 2) == part);
    }
  }
  free(f), free(mask);
}

/* The mirror groups' lowest orbit members told from their coordinates
 * (vox_symmetry_is_lowest) are those that no image undercuts, on boxes
 * and cubes of odd and even sizes. */
static void test_symmetry_lowest(void) {
  const int64_t sizes[][3] = {{6, 6, 6}, {7, 7, 7}, {5, 8, 3}, {4, 7, 6}};
  const vox_symmetry groups[] = {VOX_SYMMETRY_REFLECT3, VOX_SYMMETRY_REFLECT6};
  for (int gi = 0; gi < 2; gi++)
    for (int si = 0; si < 4; si++) {
      const int64_t nx = sizes[si][0], ny = sizes[si][1], nz = sizes[si][2];
      if (groups[gi] == VOX_SYMMETRY_REFLECT6 && !(nx == ny && ny == nz)) continue;
      vox_symmetry_group g, every;
      vox_symmetry_group_make(groups[gi], &g);
      every = g;
      every.symmetry = VOX_SYMMETRY_ROTATE3; /* any group that looks at every image */
      int differ = 0, lowest = 0;
      for (int64_t k = 0; k < nz; k++)
        for (int64_t j = 0; j < ny; j++)
          for (int64_t i = 0; i < nx; i++) {
            const int fast = vox_symmetry_is_lowest(&g, nx, ny, nz, i, j, k);
            differ += fast != vox_symmetry_is_lowest(&every, nx, ny, nz, i, j, k);
            lowest += fast;
          }
      CHECK(differ == 0 && lowest > 0);
    }
}

/* design->turn_field on the CPU: an affine field of the strain xx turned
 * once is the field of yy, twice the field of zz; a random field turned
 * once and then twice is itself, in double and in half precision (the bits
 * moved); a grid that is not cubic is refused. */
static void test_turn_field(vox_context *ctx, vox_backend *be) {
  const int n = 5; /* elements a side: 6^3 nodes */
  const vox_grid g = {.nx = n, .ny = n, .nz = n, .voxel_size = {1, 1, 1}};
  const size_t nodes = (size_t)(n + 1) * (n + 1) * (n + 1), dofs = 3 * nodes;
  double *u = malloc(dofs * sizeof *u), *t = malloc(dofs * sizeof *t);
  vox_vec a, b;
  CHECK_OK(ctx, be->ops->vec->create(be, dofs, VOX_DOUBLE, &a));
  CHECK_OK(ctx, be->ops->vec->create(be, dofs, VOX_DOUBLE, &b));
  for (size_t q = 0; q < nodes; q++) { /* u = (x, 0, 0), x the node's i */
    u[3 * q] = (double)(q % (size_t)(n + 1));
    u[3 * q + 1] = u[3 * q + 2] = 0;
  }
  CHECK_OK(ctx, be->ops->vec->upload(be, &a, u));
  for (int turns = 1; turns <= 2; turns++) {
    CHECK_OK(ctx, be->ops->design->turn_field(be, &g, turns, &a, &b));
    CHECK_OK(ctx, be->ops->vec->download(be, &b, t));
    double worst = 0; /* turned once: (0, y, 0); twice: (0, 0, z) */
    for (size_t q = 0; q < nodes; q++) {
      const size_t ijk[3] = {q % (n + 1), q / (n + 1) % (n + 1), q / (n + 1) / (n + 1)};
      for (int c = 0; c < 3; c++)
        worst = fmax(worst, fabs(t[3 * q + c] - (c == turns ? (double)ijk[c] : 0)));
    }
    CHECK(worst == 0);
  }
  for (size_t i = 0; i < dofs; i++) u[i] = sin(0.7 * (double)i);
  CHECK_OK(ctx, be->ops->vec->upload(be, &a, u));
  CHECK_OK(ctx, be->ops->design->turn_field(be, &g, 1, &a, &b));
  CHECK_OK(ctx, be->ops->design->turn_field(be, &g, 2, &b, &a));
  CHECK_OK(ctx, be->ops->vec->download(be, &a, t));
  CHECK(memcmp(u, t, dofs * sizeof *u) == 0);
  vox_vec ha, hb;
  uint16_t *hu = malloc(dofs * sizeof *hu), *ht = malloc(dofs * sizeof *ht);
  for (size_t i = 0; i < dofs; i++) hu[i] = (uint16_t)(i * 2654435761u >> 7);
  CHECK_OK(ctx, be->ops->vec->create(be, dofs, VOX_HALF, &ha));
  CHECK_OK(ctx, be->ops->vec->create(be, dofs, VOX_HALF, &hb));
  CHECK_OK(ctx, be->ops->vec->upload(be, &ha, hu));
  CHECK_OK(ctx, be->ops->design->turn_field(be, &g, 2, &ha, &hb));
  CHECK_OK(ctx, be->ops->design->turn_field(be, &g, 1, &hb, &ha));
  CHECK_OK(ctx, be->ops->vec->download(be, &ha, ht));
  CHECK(memcmp(hu, ht, dofs * sizeof *hu) == 0);
  const vox_grid flat = {.nx = n, .ny = n, .nz = n - 1, .voxel_size = {1, 1, 1}};
  CHECK(be->ops->design->turn_field(be, &flat, 1, &a, &b) == VOX_ERR_INVALID_ARGUMENT);
  CHECK(strstr(vox_context_message(ctx), "turn_field") != NULL);
  CHECK(be->ops->design->turn_field(be, &g, 1, &a, &ha) == VOX_ERR_INVALID_ARGUMENT);
  be->ops->vec->destroy(be, &a), be->ops->vec->destroy(be, &b);
  be->ops->vec->destroy(be, &ha), be->ops->vec->destroy(be, &hb);
  free(u), free(t), free(hu), free(ht);
}

/* Cells of symmetry reflect6 and rotate3 take the fields of yy, zz, yz and
 * zx as those of xx and xy turned (cell_turned_fields): the objective that
 * reads all six strains solves two a design iteration, the shear formula
 * one, and each run's objectives, design and final C^H are those of the
 * same run solving every strain (to the solves' tolerance), in fewer CG
 * iterations. reflect3 does not permute the axes: nothing is turned. */
static void test_turned_fields(vox_context *ctx, vox_backend *be) {
  const int n = 8, it = 3;
  vox_initial_design init;
  vox_initial_design_defaults(&init);
  init.kind = VOX_INITIAL_TRIGONOMETRIC;
  init.seed = 5;
  vox_expression *shear;
  CHECK_OK(ctx, vox_expression_parse(ctx, "-(C44 + C55 + C66)/3", &shear));
  const vox_symmetry groups[] = {VOX_SYMMETRY_REFLECT6, VOX_SYMMETRY_ROTATE3,
                                 VOX_SYMMETRY_REFLECT3};
  for (int gi = 0; gi < 3; gi++)
    for (int objective = 0; objective < 2; objective++) {
      vox_model m[2];
      vox_optimize_result r[2];
      solve_log logs[2] = {{{0}, {0}, 0}, {{0}, {0}, 0}};
      for (int turned = 0; turned < 2; turned++) {
        make_cell(ctx, &m[turned], n);
        vox_optimizer_options o;
        cell_options(&o, n, it);
        o.initial = &init;
        o.symmetry = groups[gi];
        o.solver.rtol = 1e-10;
        o.cell_objective = VOX_CELL_CUSTOM;
        if (objective == 0) o.custom = bulk_function;
        else o.expression = shear;
        o.cell_turned_fields = turned;
        vox_context_set_progress(ctx, log_solves, &logs[turned]);
        CHECK_OK(ctx, vox_optimize(ctx, be, &m[turned], &o, &r[turned]));
        vox_context_set_progress(ctx, NULL, NULL);
      }
      const int turns = groups[gi] != VOX_SYMMETRY_REFLECT3;
      CHECK(r[0].cell_turned == 0 && r[1].cell_turned == turns);
      CHECK(logs[0].n == it && logs[1].n == it);
      const int all = objective == 0 ? 6 : 3, fewer = objective == 0 ? 2 : 1;
      int cg[2] = {0, 0};
      for (int k = 0; k < it; k++) {
        CHECK(logs[0].solves[k] == all && logs[1].solves[k] == (turns ? fewer : all));
        CHECK_CLOSE(m[0].history[k].objective, m[1].history[k].objective, 1e-9);
        cg[0] += logs[0].cg[k], cg[1] += logs[1].cg[k];
      }
      double diff = 0, scale = 0, worst = 0;
      for (int i = 0; i < n * n * n; i++)
        diff = fmax(diff, fabs(m[0].density[i] - m[1].density[i]));
      for (int i = 0; i < 36; i++) scale = fmax(scale, fabs(r[0].tensor[i]));
      for (int i = 0; i < 36; i++) worst = fmax(worst, fabs(r[0].tensor[i] - r[1].tensor[i]));
      fprintf(stderr,
              "turned fields, %s, %s: CG %d against %d solving every strain; designs %.2g "
              "apart, final C^H %.2g of its largest entry; C22 - C11 %.2g\n",
              vox_symmetry_name(groups[gi]), objective == 0 ? "all six" : "shear", cg[1], cg[0],
              diff, worst / scale, r[1].tensor[7] - r[1].tensor[0]);
      CHECK(diff <= 1e-8);
      CHECK(worst <= 1e-9 * scale);
      CHECK(turns ? cg[1] < cg[0] : cg[1] == cg[0]);
      CHECK(r[1].final_cg_iterations > 0);
      if (turns) CHECK(r[1].final_cg_iterations * 2 < r[0].final_cg_iterations);
      vox_model_free(&m[0]);
      vox_model_free(&m[1]);
    }
  vox_expression_free(shear);
}

/* The bulk objective's final evaluation with zz started from the
 * hydrostatic field (cell_zz_from_hydrostatic, the default) against zz from
 * rest, on a 16^3 cell from the trigonometric start at a fixed penalty, in
 * double and in mixed precision (half fields): the same design iterations
 * to the bit, C^H and its moduli within the solves' tolerance of each
 * other, and fewer CG iterations in the final evaluation; the summary says
 * which way zz started. */
static void test_zz_from_hydrostatic(vox_context *ctx, vox_backend *be) {
  const int n = 16, it = 30;
  vox_initial_design init;
  vox_initial_design_defaults(&init);
  init.kind = VOX_INITIAL_TRIGONOMETRIC;
  init.seed = 3;
  for (int precision = 0; precision < 2; precision++) {
    vox_model m[2];
    vox_optimize_result r[2];
    for (int from = 0; from < 2; from++) {
      make_cell(ctx, &m[from], n);
      vox_optimizer_options o;
      cell_options(&o, n, it);
      o.initial = &init;
      o.penalty = 3;
      o.solver.rtol = 1e-8;
      if (precision) o.solver.precision = VOX_PRECISION_MIXED;
      o.solver.cell_solver = VOX_CELL_SOLVER_OFF;
      CHECK(o.cell_zz_from_hydrostatic == 1); /* the default */
      o.cell_zz_from_hydrostatic = from;
      CHECK_OK(ctx, vox_optimize(ctx, be, &m[from], &o, &r[from]));
      CHECK(r[from].has_tensor && r[from].iterations == it);
    }
    double scale = 0, worst = 0;
    for (int i = 0; i < 36; i++) scale = fmax(scale, fabs(r[0].tensor[i]));
    for (int i = 0; i < 36; i++) worst = fmax(worst, fabs(r[1].tensor[i] - r[0].tensor[i]));
    fprintf(stderr,
            "zz from the hydrostatic field, %s: final evaluation %d CG against %d from rest, "
            "C^H %.2e of its largest entry apart, bulk %.10g against %.10g\n",
            precision ? "mixed" : "double", r[1].final_cg_iterations, r[0].final_cg_iterations,
            worst / scale, r[1].moduli.bulk, r[0].moduli.bulk);
    CHECK(r[0].cell_zz_derived == 0 && r[1].cell_zz_derived == 1);
    CHECK(memcmp(m[0].density, m[1].density, (size_t)n * n * n * sizeof *m[0].density) == 0);
    CHECK(worst <= (precision ? 1e-6 : 1e-8) * scale);
    CHECK_CLOSE(r[1].moduli.bulk, r[0].moduli.bulk, precision ? 1e-6 : 1e-8);
    CHECK(r[1].final_cg_iterations < r[0].final_cg_iterations);
    CHECK(r[1].total_cg_iterations - r[1].final_cg_iterations ==
          r[0].total_cg_iterations - r[0].final_cg_iterations);
    vox_model_free(&m[0]);
    vox_model_free(&m[1]);
  }
}

/* A 16^3 cell of 8 mm voxels from the trigonometric start, four levels,
 * in double and in mixed precision, with the W-cycle and the V-cycle:
 * every solve converges. The coarsest solve gave back the residual on the
 * held node (its identity rows), a spike that grows with the stiffness's
 * scale (the voxel size): it made the W-cycle indefinite in the first solve
 * here, as on a 64^3 cell of 1 mm voxels (r.z <= 0 after one CG
 * iteration), and cost that cell's V-cycle a sixth more CG iterations. */
static void test_cell_cycles(vox_context *ctx, vox_backend *be) {
  const int n = 16;
  int cg[2][2];
  for (int precision = 0; precision < 2; precision++)
    for (int w = 0; w < 2; w++) {
      vox_model m;
      vox_grid g = {.nx = n, .ny = n, .nz = n, .voxel_size = {8, 8, 8}};
      CHECK_OK(ctx, vox_model_init(ctx, &m, &g));
      memset(m.label, 1, (size_t)vox_grid_elements(&g));
      vox_material a = {.label = 1, .youngs_modulus = 1, .poisson_ratio = 0.3, .name = "solid"};
      CHECK_OK(ctx, vox_model_add_material(ctx, &m, &a));
      vox_optimizer_options o; /* voxfe-optimize's defaults */
      vox_optimizer_options_default(&o);
      o.cell_objective = VOX_CELL_BULK;
      o.max_iterations = 1;
      o.filter_radius = 12; /* 1.5 voxels */
      o.solver.mg_levels = 4; /* down to 2^3 elements */
      o.solver.precision = precision ? VOX_PRECISION_MIXED : VOX_PRECISION_DOUBLE;
      o.solver.mg_cycle = w ? VOX_MG_CYCLE_W : VOX_MG_CYCLE_V;
      vox_optimize_result r;
      CHECK_OK(ctx, vox_optimize(ctx, be, &m, &o, &r));
      CHECK(r.reason != VOX_STOP_SOLVER_FAILED && r.iterations == 1 && r.has_tensor);
      cg[precision][w] = r.total_cg_iterations;
      vox_model_free(&m);
    }
  fprintf(stderr, "16^3 cell of 8 mm voxels: CG iterations in double V %d, W %d; mixed V %d, W %d\n",
          cg[0][0], cg[0][1], cg[1][0], cg[1][1]);
  for (int precision = 0; precision < 2; precision++)
    CHECK(cg[precision][1] <= cg[precision][0] + 2); /* W no worse than V */
}

int main(int argc, char **argv) {
  vox_context *ctx;
  vox_backend *be;
  vox_context_create(&ctx);
  CHECK_OK(ctx, vox_backend_create(ctx, VOX_DEVICE_CPU, &be));
  if (check_wanted(argc, argv, "symmetry")) test_symmetry(ctx, be);
  if (check_wanted(argc, argv, "refused")) test_symmetry_refused(ctx, be);
  if (check_wanted(argc, argv, "initial")) test_initial(ctx, be);
  if (check_wanted(argc, argv, "defaults")) test_cell_defaults(ctx, be);
  if (check_wanted(argc, argv, "bulk")) test_custom_bulk(ctx, be);
  if (check_wanted(argc, argv, "gradient")) test_custom_gradient(ctx, be);
  if (check_wanted(argc, argv, "undefined")) test_custom_undefined(ctx, be);
  if (check_wanted(argc, argv, "shift")) test_shift(ctx, be);
  if (check_wanted(argc, argv, "strains")) test_strain_sets(ctx, be);
  if (check_wanted(argc, argv, "needed")) test_needed_strains(ctx, be);
  if (check_wanted(argc, argv, "holds")) test_symmetry_holds(ctx);
  if (check_wanted(argc, argv, "lowest")) test_symmetry_lowest();
  if (check_wanted(argc, argv, "cycles")) test_cell_cycles(ctx, be);
  if (check_wanted(argc, argv, "turn")) test_turn_field(ctx, be);
  if (check_wanted(argc, argv, "turned")) test_turned_fields(ctx, be);
  if (check_wanted(argc, argv, "zz")) test_zz_from_hydrostatic(ctx, be);
  vox_backend_destroy(be);
  vox_context_destroy(ctx);
  CHECK_DONE();
}
