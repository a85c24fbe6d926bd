/* The optimizer's periodic-cell design options (voxfe/optimizer.h, seed 003
 * section 6): symmetry enforcement keeps a symmetric design symmetric to the
 * bit under every group while the same start without it drifts away;
 * initial designs start on the design voxels only, at the volume fraction,
 * with the passive ones kept; a custom objective written as the bulk
 * modulus takes the built-in objective's iterates; a custom objective's
 * design sensitivities against central differences of the formula at C^H;
 * and the refusals (a symmetry the grid or the design domain cannot have, a
 * formula not defined at C^H); a shifted start gives the shifted design.
 * 4^3 and 8^3 cells, a few iterations: well under a
 * second (a few seconds under ASan). */
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
 * cell with enforcement: the design is symmetric to the bit (seed 003
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

/* Custom objectives through vox_expression: the bulk modulus of eq. 19 as a
 * formula (upper-triangle entries doubled) gives the built-in objective's
 * values and designs, iteration by iteration. */
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
    if (run == 1) o.cell_objective = VOX_CELL_CUSTOM, o.expression = e;
    CHECK_OK(ctx, vox_optimize(ctx, be, &m[run], &o, &r[run]));
  }
  CHECK(m[0].n_history == 3 && m[1].n_history == 3);
  for (size_t k = 0; k < m[0].n_history && k < m[1].n_history; k++)
    CHECK_CLOSE(m[1].history[k].objective, m[0].history[k].objective, 1e-12);
  CHECK_CLOSE(r[1].objective, r[0].objective, 1e-12);
  CHECK_CLOSE(-r[1].objective, r[1].moduli.bulk, 1e-12);
  double diff = 0;
  for (int i = 0; i < n * n * n; i++) diff = fmax(diff, fabs(m[0].density[i] - m[1].density[i]));
  fprintf(stderr, "custom bulk: largest density difference %g\n", diff);
  CHECK(diff <= 1e-12);
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
  op->vec_create(be, ne, &rho), op->vec_create(be, ne, &ones);
  op->vec_create(be, ne, &energy), op->vec_create(be, ne, &df);
  op->vec_set(be, &ones, 1);
  const double p = 3, emin = 1e-9;
  const int iteration = 2;
  double c[36], g[36], f;
  /* f at a density, the formula's gradient in C^H left in g */
  double *work = malloc(ne * sizeof *work);
#define F_AT(density)                                                                           \
  do {                                                                                          \
    int cg_;                                                                                    \
    vox_solve_result failed_;                                                                   \
    op->vec_upload(be, &rho, density);                                                          \
    CHECK_OK(ctx, op->simp_moduli(be, &rho, &h->fem->e_solid, p, emin, &h->fem->moduli));     \
    CHECK_OK(ctx, vox_fem_update(h->fem));                                                      \
    CHECK_OK(ctx, vox_homog_solve(h, &so, &ones, c, &cg_, &failed_));                          \
    CHECK(failed_.reason > 0);                                                                  \
    CHECK_OK(ctx, vox_expression_evaluate(ctx, expr, c, iteration, &f, g));                     \
  } while (0)
  F_AT(m.density);
  CHECK(fabs(c[3 * 6 + 4]) > 1e-6 && fabs(c[0 * 6 + 5]) > 1e-6); /* the couplings are there */
  double *grad = malloc(ne * sizeof *grad);
  CHECK_OK(ctx, vox_homog_gradient(h, g, &rho, p, emin, &energy, &df));
  op->vec_download(be, &df, grad);
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
  op->vec_destroy(be, &rho), op->vec_destroy(be, &ones);
  op->vec_destroy(be, &energy), op->vec_destroy(be, &df);
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
 * needs every step to wrap, the filter's taps too (seed 003 section 6.5):
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

int main(int argc, char **argv) {
  vox_context *ctx;
  vox_backend *be;
  vox_context_create(&ctx);
  CHECK_OK(ctx, vox_backend_create(ctx, VOX_DEVICE_CPU, &be));
  if (check_wanted(argc, argv, "symmetry")) test_symmetry(ctx, be);
  if (check_wanted(argc, argv, "refused")) test_symmetry_refused(ctx, be);
  if (check_wanted(argc, argv, "initial")) test_initial(ctx, be);
  if (check_wanted(argc, argv, "bulk")) test_custom_bulk(ctx, be);
  if (check_wanted(argc, argv, "gradient")) test_custom_gradient(ctx, be);
  if (check_wanted(argc, argv, "undefined")) test_custom_undefined(ctx, be);
  if (check_wanted(argc, argv, "shift")) test_shift(ctx, be);
  vox_backend_destroy(be);
  vox_context_destroy(ctx);
  CHECK_DONE();
}
