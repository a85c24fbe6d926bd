/* SPDX-License-Identifier: BSD-3-Clause */
/* The method of moving asymptotes on the CUDA backend against the CPU
 * backend (mma_ops.h, engine/mma.c):
 *
 *   subproblem  random problems (n 7 and 20011, m 1, 3 and 6: the dual
 *               system's sums in one pass, in two and in five), four outer
 *               iterations, each from the same inputs on both backends:
 *               the asymptotes equal to the bit (each variable's arithmetic
 *               is the CPU's), the new x within 1e-9 of the range, the
 *               multipliers within 1e-8, the KKT residual at the end; the
 *               GPU's run repeated gives the same bits, and a GPU run
 *               resumed from a checkpoint after two iterations too; and
 *               again with the move-limit box as the bounds and Aage's
 *               convexity terms (bounds = move, convexity = aage);
 *   dual        the same with the subproblems solved by the dual method
 *               (VOX_MMA_DUAL; n 7 and 20011, m 1, 3 and 6), and the dual method's
 *               passes themselves at the same inputs: the sums at three
 *               points within 1e-12, x and the bounds' multipliers at a
 *               point to the bit; the 24x12x12 optimization below by the
 *               dual method too;
 *   gather      the design elements gathered (scaled, clamped) and
 *               scattered back, exactly;
 *   optimize    the 24x12x12 cantilever (two load cases, a passive solid
 *               element, density filter, p = 3, multigrid PCG in double at
 *               a tight tolerance) with MMA for 8 iterations: the
 *               compliance history and the final densities within 1e-9,
 *               with the default bounds and with the move-limit box;
 *   resume      that optimization on the GPU stopped after 4 iterations
 *               and resumed from its checkpoint (MMA's state downloaded and
 *               uploaded again): the uninterrupted run's history and
 *               densities to the bit;
 *   kkt         the 12x6x6 cantilever for 100 iterations on the GPU ends
 *               with a KKT residual under 1e-4 at its volume, and the CPU's
 *               within 1% of it.
 *
 * Exit 77 (skipped) when this build has no CUDA or the machine no device;
 * VOXFE_GPU_TEST_DEVICE=cpu runs it with the CPU backend in the GPU's place
 * (backend_pair.h). */
#include "backend_pair.h"
#include "mma_backend.h"

enum { ITERATIONS = 4 };

/* One random problem: bounds, a start, and per iteration the gradients and
 * the constraints' values (Svanberg-like scales, as tests/engine/
 * mma_subproblem.py makes them). */
typedef struct problem {
  size_t n;
  int m;
  double *xmin, *xmax, *x0;
  double *df0[ITERATIONS], *fval[ITERATIONS], *dfdx[ITERATIONS];
} problem;

static double normal(uint64_t *s) {
  const double u = fmax(uniform(s), 1e-300), v = uniform(s);
  return sqrt(-2 * log(u)) * cos(6.283185307179586 * v);
}

static void problem_make(problem *p, size_t n, int m, uint64_t seed) {
  memset(p, 0, sizeof *p);
  p->n = n, p->m = m;
  p->xmin = malloc(n * sizeof(double)), p->xmax = malloc(n * sizeof(double));
  p->x0 = malloc(n * sizeof(double));
  for (size_t j = 0; j < n; j++) {
    p->xmin[j] = seed % 2 ? 0.001 : -uniform(&seed);
    p->xmax[j] = p->xmin[j] + 0.5 + 1.5 * uniform(&seed);
    p->x0[j] = p->xmin[j] + (0.1 + 0.8 * uniform(&seed)) * (p->xmax[j] - p->xmin[j]);
  }
  for (int k = 0; k < ITERATIONS; k++) {
    p->df0[k] = malloc(n * sizeof(double));
    p->fval[k] = malloc((size_t)m * sizeof(double));
    p->dfdx[k] = malloc((size_t)m * n * sizeof(double));
    const double scale = 0.1 + 9.9 * uniform(&seed);
    for (size_t j = 0; j < n; j++) p->df0[k][j] = scale * normal(&seed);
    for (int i = 0; i < m; i++) {
      p->fval[k][i] = 0.6 * uniform(&seed) - 0.3;
      const double offset = 2 * uniform(&seed) - 0.5;
      for (size_t j = 0; j < n; j++)
        p->dfdx[k][(size_t)i * n + j] = (normal(&seed) + offset) / (double)n;
    }
  }
}

static void problem_free(problem *p) {
  free(p->xmin), free(p->xmax), free(p->x0);
  for (int k = 0; k < ITERATIONS; k++) free(p->df0[k]), free(p->fval[k]), free(p->dfdx[k]);
}

/* Outer iteration k on `be` from xval: the inputs into the method's
 * vectors, the step, the new x into xnew (host). */
static int mma_iteration(vox_backend *be, vox_mma *mma, const problem *p, int k,
                         const double *xval, double *xnew) {
  vox_mma_vectors *v = vox_mma_vectors_of(mma);
  const vox_vector_ops *vec = be->ops->vec;
  return call_ok(vec->upload(be, &v->xval, xval), be, "mma", "upload xval") &&
         call_ok(vec->upload(be, &v->xmin, p->xmin), be, "mma", "upload xmin") &&
         call_ok(vec->upload(be, &v->xmax, p->xmax), be, "mma", "upload xmax") &&
         call_ok(vec->upload(be, &v->df0dx, p->df0[k]), be, "mma", "upload df0dx") &&
         call_ok(vec->upload(be, &v->dfdx, p->dfdx[k]), be, "mma", "upload dfdx") &&
         call_ok(vox_mma_step(mma, p->fval[k]), be, "mma", "vox_mma_step") &&
         call_ok(vec->download(be, &v->x, xnew), be, "mma", "download x");
}

static int download(vox_backend *be, const vox_vec *v, double *host) {
  return call_ok(be->ops->vec->download(be, v, host), be, "mma", "download");
}

/* The problem on the GPU from the CPU's iterates, `count` iterations from
 * `from` (x: the iterate to start from, the CPU's sequence in xs), into
 * out (count rows of n). */
static int gpu_run(vox_mma *g, const problem *p, int from, int count, double *const *xs,
                   double *out) {
  for (int k = from; k < from + count; k++)
    if (!mma_iteration(gpu, g, p, k, xs[k], out + (size_t)(k - from) * p->n)) return 0;
  return 1;
}

/* The dual method's passes (mma_ops.h) on both backends at the inputs the
 * last iteration left in c's and g's vectors (the same bits: each
 * variable's arithmetic of approximate is the CPU's): the sums at three
 * points, and x, xsi, eta at one. */
static void test_dual_passes(vox_mma *c, vox_mma *g, size_t n, int m) {
  vox_mma_vectors *vc = vox_mma_vectors_of(c), *vg = vox_mma_vectors_of(g);
  vox_mma_work *wc = NULL, *wg = NULL;
  const int S = m + m * (m + 1) / 2;
  double *lam = malloc(3 * (size_t)m * sizeof(double)), *sc = malloc(3 * (size_t)S * sizeof(double)),
         *sg = malloc(3 * (size_t)S * sizeof(double)), *hc = malloc(n * sizeof(double)),
         *hg = malloc(n * sizeof(double));
  for (int k = 0; k < 3; k++)
    for (int i = 0; i < m; i++)
      lam[k * m + i] = (k == 0 ? 1 : k == 1 ? 0.5 : 2) * fmax(vox_mma_lambda(c)[i], 1e-3);
  if (!C_OK("work", cpu->ops->mma->work_create(cpu, n, m, &wc)) ||
      !G_OK("work", gpu->ops->mma->work_create(gpu, n, m, &wg)))
    goto done;
  if (BOTH("dual_sums", cpu->ops->mma->dual_sums(cpu, wc, vc, 3, lam, sc),
           gpu->ops->mma->dual_sums(gpu, wg, vg, 3, lam, sg)))
    report("dual passes: the sums at three points", sg, sc, 3 * (size_t)S, 1e-12);
  if (BOTH("dual_solution", cpu->ops->mma->dual_solution(cpu, wc, vc, lam),
           gpu->ops->mma->dual_solution(gpu, wg, vg, lam))) {
    if (download(cpu, &vc->x, hc) && download(gpu, &vg->x, hg))
      report("dual passes: x at a point", hg, hc, n, 0);
    if (download(cpu, &vc->xsi, hc) && download(gpu, &vg->xsi, hg))
      report("dual passes: xsi at a point", hg, hc, n, 0);
    if (download(cpu, &vc->eta, hc) && download(gpu, &vg->eta, hg))
      report("dual passes: eta at a point", hg, hc, n, 0);
  }
done:
  if (wc) cpu->ops->mma->work_destroy(cpu, wc);
  if (wg) gpu->ops->mma->work_destroy(gpu, wg);
  free(lam), free(sc), free(sg), free(hc), free(hg);
}

static void test_subproblem(size_t n, int m, uint64_t seed, vox_mma_subproblem method, int box) {
  snprintf(where, sizeof where, "n %zu m %d %s%s", n, m, vox_mma_subproblem_name(method),
           box ? " box aage" : "");
  problem p;
  problem_make(&p, n, m, seed);
  vox_mma_options o;
  vox_mma_options_default(&o);
  o.subproblem = method;
  if (box) {
    o.bounds = VOX_MMA_BOUNDS_MOVE, o.convexity = VOX_MMA_CONVEXITY_AAGE;
    o.move = 0.2, o.raa0 = 1e-6;
  }
  vox_mma *c = NULL, *g = NULL, *g2 = NULL, *g3 = NULL;
  double *xs[ITERATIONS + 1], *xg = malloc(n * sizeof(double)), *hc = malloc(n * sizeof(double)),
         *hg = malloc(n * sizeof(double));
  double *again = malloc(ITERATIONS * n * sizeof(double)),
         *first = malloc(ITERATIONS * n * sizeof(double));
  for (int k = 0; k <= ITERATIONS; k++) xs[k] = malloc(n * sizeof(double));
  memcpy(xs[0], p.x0, n * sizeof(double));
  vox_checkpoint ck = {0};
  if (!C_OK("create", vox_mma_create_on(cpu, n, m, &o, &c)) ||
      !G_OK("create", vox_mma_create_on(gpu, n, m, &o, &g)))
    goto done;
  double range = 0;
  for (size_t j = 0; j < n; j++) range = fmax(range, p.xmax[j] - p.xmin[j]);
  for (int k = 0; k < ITERATIONS; k++) {
    /* both from the CPU's iterate */
    if (!mma_iteration(cpu, c, &p, k, xs[k], xs[k + 1]) ||
        !mma_iteration(gpu, g, &p, k, xs[k], xg))
      goto done;
    memcpy(first + (size_t)k * n, xg, n * sizeof(double));
    char check[64];
    vox_mma_vectors *vc = vox_mma_vectors_of(c), *vg = vox_mma_vectors_of(g);
    snprintf(check, sizeof check, "iteration %d lower asymptotes", k + 1);
    if (download(cpu, &vc->low, hc) && download(gpu, &vg->low, hg)) report(check, hg, hc, n, 0);
    snprintf(check, sizeof check, "iteration %d upper asymptotes", k + 1);
    if (download(cpu, &vc->upp, hc) && download(gpu, &vg->upp, hg)) report(check, hg, hc, n, 0);
    double dx = 0;
    for (size_t j = 0; j < n; j++) dx = fmax(dx, fabs(xg[j] - xs[k + 1][j]));
    snprintf(check, sizeof check, "iteration %d new x, max |cuda - cpu| / range", k + 1);
    report_scalar(check, dx / range, 0, 1, 1e-9);
    snprintf(check, sizeof check, "iteration %d multipliers", k + 1);
    report(check, vox_mma_lambda(g), vox_mma_lambda(c), (size_t)m, 1e-8);
    if (k == 1 && !G_OK("save", vox_mma_save(g, "mma", &ck))) goto done;
  }
  /* the KKT residual at the last iterate with the last gradients */
  {
    const int k = ITERATIONS - 1;
    double nc, mc, ng, mg;
    vox_mma_vectors *vc = vox_mma_vectors_of(c), *vg = vox_mma_vectors_of(g);
    const int ok =
        C_OK("kkt", cpu->ops->vec->upload(cpu, &vc->xval, xs[ITERATIONS])) &&
        C_OK("kkt", cpu->ops->vec->upload(cpu, &vc->xmin, p.xmin)) &&
        C_OK("kkt", cpu->ops->vec->upload(cpu, &vc->xmax, p.xmax)) &&
        C_OK("kkt", cpu->ops->vec->upload(cpu, &vc->df0dx, p.df0[k])) &&
        C_OK("kkt", cpu->ops->vec->upload(cpu, &vc->dfdx, p.dfdx[k])) &&
        G_OK("kkt", gpu->ops->vec->upload(gpu, &vg->xval, xs[ITERATIONS])) &&
        G_OK("kkt", gpu->ops->vec->upload(gpu, &vg->xmin, p.xmin)) &&
        G_OK("kkt", gpu->ops->vec->upload(gpu, &vg->xmax, p.xmax)) &&
        G_OK("kkt", gpu->ops->vec->upload(gpu, &vg->df0dx, p.df0[k])) &&
        G_OK("kkt", gpu->ops->vec->upload(gpu, &vg->dfdx, p.dfdx[k])) &&
        C_OK("kkt", vox_mma_kkt_at(c, p.fval[k], &nc, &mc)) &&
        G_OK("kkt", vox_mma_kkt_at(g, p.fval[k], &ng, &mg));
    if (ok) {
      report_scalar("KKT residual's norm", ng, nc, fabs(nc), 1e-8);
      report_scalar("KKT residual's largest entry", mg, mc, fabs(mc), 1e-8);
    }
  }
  if (method == VOX_MMA_DUAL) test_dual_passes(c, g, n, m);
  /* the same on the GPU again: the same bits */
  if (!G_OK("create", vox_mma_create_on(gpu, n, m, &o, &g2)) ||
      !gpu_run(g2, &p, 0, ITERATIONS, xs, again))
    goto done;
  if (memcmp(again, first, ITERATIONS * n * sizeof(double)) == 0)
    ok_line("the GPU's run repeated: the same bits", 0, 0);
  else
    fail_line("repeat", "the GPU's second run differs from its first");
  /* resumed from the checkpoint after iteration 2: the same bits */
  if (!G_OK("create", vox_mma_create_on(gpu, n, m, &o, &g3)) ||
      !G_OK("restore", vox_mma_restore(g3, "mma", &ck)) ||
      !gpu_run(g3, &p, 2, ITERATIONS - 2, xs, again))
    goto done;
  if (memcmp(again, first + 2 * n, (ITERATIONS - 2) * n * sizeof(double)) == 0)
    ok_line("the GPU's run resumed after 2 iterations: the same bits", 0, 0);
  else
    fail_line("resume", "the GPU's resumed run differs from the uninterrupted one");
done:
  vox_checkpoint_free(&ck);
  vox_mma_destroy(c), vox_mma_destroy(g), vox_mma_destroy(g2), vox_mma_destroy(g3);
  for (int k = 0; k <= ITERATIONS; k++) free(xs[k]);
  free(xg), free(hc), free(hg), free(again), free(first);
  problem_free(&p);
}

/* The design elements' map (a share `design` of ne elements, at random)
 * and its gather and scatter, GPU against CPU: the same elements in the
 * same order, over several of the compaction's tiles. */
static void test_gather(size_t ne, double design) {
  snprintf(where, sizeof where, "%zu elements", ne);
  uint64_t seed = 11;
  pvec mask, in, out, lo, hi, compact;
  memset(&mask, 0, sizeof mask), memset(&in, 0, sizeof in), memset(&out, 0, sizeof out);
  memset(&lo, 0, sizeof lo), memset(&hi, 0, sizeof hi), memset(&compact, 0, sizeof compact);
  if (!pv_create(&mask, ne) || !pv_create(&in, ne) || !pv_create(&out, ne)) return;
  for (size_t e = 0; e < ne; e++) mask.hc[e] = uniform(&seed) < design ? 1 : 0;
  vox_index_map *mc = NULL, *mg = NULL;
  size_t nc = 0, ng = 0;
  if (!pv_upload(&mask, mask.hc) || !pv_random(&in, &seed, -0.5, 1.5) ||
      !pv_random(&out, &seed, 5, 6) ||
      !C_OK("map_create", cpu->ops->mma->map_create(cpu, &mask.c, &mc, &nc)) ||
      !G_OK("map_create", gpu->ops->mma->map_create(gpu, &mask.g, &mg, &ng)))
    goto done;
  CHECK(nc == ng);
  if (design == 0) CHECK(nc == 0);
  if (nc == 0 || nc != ng) goto done;
  if (!pv_create(&lo, nc) || !pv_create(&hi, nc) || !pv_create(&compact, nc)) goto done;
  for (size_t j = 0; j < nc; j++) lo.hc[j] = 0.001, hi.hc[j] = 1;
  if (!pv_upload(&lo, lo.hc) || !pv_upload(&hi, hi.hc)) goto done;
  if (BOTH("gather", cpu->ops->mma->gather(cpu, mc, &in.c, -2.5, NULL, NULL, &compact.c),
           gpu->ops->mma->gather(gpu, mg, &in.g, -2.5, NULL, NULL, &compact.g)))
    pv_check("gather, scaled", &compact, 0);
  if (BOTH("gather", cpu->ops->mma->gather(cpu, mc, &in.c, 1, &lo.c, &hi.c, &compact.c),
           gpu->ops->mma->gather(gpu, mg, &in.g, 1, &lo.g, &hi.g, &compact.g)))
    pv_check("gather, clamped", &compact, 0);
  if (BOTH("scatter", cpu->ops->mma->scatter(cpu, mc, &compact.c, &out.c),
           gpu->ops->mma->scatter(gpu, mg, &compact.g, &out.g)))
    pv_check("scatter (the other elements kept)", &out, 0);
done:
  if (mc) cpu->ops->mma->map_destroy(cpu, mc);
  if (mg) gpu->ops->mma->map_destroy(gpu, mg);
  pv_destroy(&mask), pv_destroy(&in), pv_destroy(&out), pv_destroy(&lo), pv_destroy(&hi);
  pv_destroy(&compact);
}

/* ---- whole optimizations ------------------------------------------------------ */

/* nx x nx/2 x nx/2 cantilever clamped at x = 0, a downward line load at the
 * bottom of the free end; with `two`, a sideways point load at the top
 * corner as a second case and one passive solid element. */
static void make_cantilever(vox_context *ctx, vox_model *m, int nx, int two) {
  vox_grid g = {.nx = nx, .ny = nx / 2, .nz = nx / 2, .voxel_size = {1, 1, 1}};
  CHECK_OK(ctx, vox_model_init(ctx, m, &g));
  memset(m->label, 1, (size_t)vox_grid_elements(&g));
  vox_material design = {.label = 1, .youngs_modulus = 1, .poisson_ratio = 0.3, .name = "design"};
  CHECK_OK(ctx, vox_model_add_material(ctx, m, &design));
  if (two) {
    m->label[nx - 1] = 2;
    vox_material solid = design;
    solid.label = 2, solid.role = VOX_ROLE_SOLID;
    snprintf(solid.name, sizeof solid.name, "solid");
    CHECK_OK(ctx, vox_model_add_material(ctx, m, &solid));
  }
  for (int64_t k = 0; k <= g.nz; k++)
    for (int64_t j = 0; j <= g.ny; j++)
      for (int c = 0; c < 3; c++)
        CHECK_OK(ctx, vox_model_add_constraint(ctx, m, node_of(&g, 0, j, k), c, 0));
  CHECK_OK(ctx, vox_model_set_load_cases(ctx, m, two ? 2 : 1));
  for (int64_t j = 0; j <= g.ny; j++)
    CHECK_OK(ctx, vox_model_add_load(ctx, m, node_of(&g, g.nx, j, 0), 2, 0,
                                     -1.0 / (double)(g.ny + 1)));
  if (two) CHECK_OK(ctx, vox_model_add_load(ctx, m, node_of(&g, g.nx, g.ny, g.nz), 1, 1, 0.5));
}

static int optimize(vox_backend *be, const vox_model *base, const vox_optimizer_options *opt,
                    vox_model *out, vox_optimize_result *r) {
  if (!call_ok(vox_model_copy(be->ctx, out, base), be, "optimize", "vox_model_copy")) return 0;
  if (!call_ok(vox_optimize(be->ctx, be, out, opt, r), be, "optimize", "vox_optimize")) return 0;
  printf("  %s: %d iterations, compliance %.15g, volume %.6g, KKT residual %.3e, %.2f s in the "
         "updates\n",
         vox_backend_name(be), r->iterations, r->objective, r->volume_fraction, r->kkt_residual,
         r->seconds_update);
  return 1;
}

static double rel(double a, double b) { return fabs(a - b) / fmax(fabs(b), 1e-300); }

/* The options of the 24x12x12 runs. */
static void optimize_options(vox_optimizer_options *opt) {
  vox_optimizer_options_default(opt);
  opt->update = VOX_UPDATE_MMA;
  opt->volume_fraction = 0.3;
  opt->max_iterations = 8;
  opt->continuation = 0;
  opt->change_tolerance = 0;
  opt->objective_tolerance = 0;
  opt->filter = VOX_FILTER_DENSITY;
  opt->solver.preconditioner = VOX_PC_MULTIGRID;
  opt->solver.precision = VOX_PRECISION_DOUBLE;
  opt->solver.rtol = 1e-11; /* the states as good as the rounding: the updates compared */
}

static void test_optimize(vox_mma_subproblem method, int box) {
  snprintf(where, sizeof where, "24x12x12 MMA %s%s", vox_mma_subproblem_name(method),
           box ? " box" : "");
  printf("optimization: cantilever 24x12x12, two load cases, a passive element, MMA (%s)%s, 8 "
         "iterations\n", vox_mma_subproblem_name(method),
         box ? " with the move-limit box as its bounds" : "");
  vox_model base, mc, mg;
  memset(&mc, 0, sizeof mc), memset(&mg, 0, sizeof mg);
  make_cantilever(cpu->ctx, &base, 24, 1);
  vox_optimizer_options opt;
  optimize_options(&opt);
  opt.mma.subproblem = method;
  if (box) opt.mma.bounds = VOX_MMA_BOUNDS_MOVE, opt.mma.convexity = VOX_MMA_CONVEXITY_AAGE;
  vox_optimize_result rc, rg;
  if (optimize(cpu, &base, &opt, &mc, &rc) && optimize(gpu, &base, &opt, &mg, &rg)) {
    CHECK(rc.iterations == 8 && rg.iterations == 8 && mc.n_history == mg.n_history);
    double worst = 0;
    for (size_t i = 0; i < mc.n_history && i < mg.n_history; i++) {
      const double d = rel(mg.history[i].objective, mc.history[i].objective);
      worst = isnan(d) || d > worst ? d : worst;
      printf("    %2d  compliance cpu %.15g  cuda %.15g  %9.2e\n", (int)mc.history[i].iteration,
             mc.history[i].objective, mg.history[i].objective, d);
    }
    report_scalar("compliance history", worst, 0, 1, 1e-9);
    report_scalar("final compliance", rg.objective, rc.objective, rc.objective, 1e-9);
    report_scalar("final volume fraction", rg.volume_fraction, rc.volume_fraction, 1, 1e-9);
    report_scalar("KKT residual", rg.kkt_residual, rc.kkt_residual, rc.kkt_residual, 1e-6);
    const size_t ne = (size_t)vox_grid_elements(&base.grid);
    report("final densities", mg.density, mc.density, ne, 1e-9);
    CHECK(mg.density[23] == 1); /* the passive solid element */
  }
  vox_model_free(&mc), vox_model_free(&mg), vox_model_free(&base);
}

/* The checkpoint a run hands over after iteration 4: the model then and a
 * copy of the state. */
typedef struct saved {
  int taken;
  vox_model model;
  vox_checkpoint state;
} saved;

static vox_status keep_checkpoint(void *self, const vox_model *model, const vox_checkpoint *state) {
  saved *s = self;
  if (s->taken++) return VOX_OK;
  TRY(vox_model_copy(gpu->ctx, &s->model, model));
  for (size_t i = 0; i < state->n_arrays; i++)
    TRY(vox_checkpoint_add(gpu->ctx, &s->state, state->arrays[i].name, state->arrays[i].length,
                           state->arrays[i].values));
  return VOX_OK;
}

static void test_resume(void) {
  snprintf(where, sizeof where, "24x12x12 MMA resumed");
  printf("optimization on the GPU: 8 iterations, and stopped after 4 and resumed\n");
  vox_model base, full, resumed;
  memset(&full, 0, sizeof full), memset(&resumed, 0, sizeof resumed);
  saved s;
  memset(&s, 0, sizeof s);
  make_cantilever(cpu->ctx, &base, 24, 1);
  vox_optimizer_options opt;
  optimize_options(&opt);
  opt.checkpoint_every = 4;
  opt.checkpoint = keep_checkpoint;
  opt.checkpoint_self = &s;
  vox_optimize_result rf, rr;
  if (optimize(gpu, &base, &opt, &full, &rf) && s.taken) {
    opt.checkpoint_every = 0;
    opt.checkpoint = NULL;
    opt.resume = &s.state;
    if (optimize(gpu, &s.model, &opt, &resumed, &rr)) {
      int same = full.n_history == resumed.n_history && rf.objective == rr.objective;
      for (size_t i = 0; same && i < full.n_history; i++)
        same = full.history[i].objective == resumed.history[i].objective;
      const size_t ne = (size_t)vox_grid_elements(&base.grid);
      same = same && memcmp(full.density, resumed.density, ne * sizeof *full.density) == 0;
      if (same)
        ok_line("history and densities of the resumed run: the same bits", 0, 0);
      else
        fail_line("resume", "the resumed run differs from the uninterrupted one: final compliance "
                  "%.17g against %.17g", rr.objective, rf.objective);
    }
  } else if (!s.taken) {
    fail_line("resume", "the run handed over no checkpoint");
  }
  vox_checkpoint_free(&s.state);
  if (s.taken) vox_model_free(&s.model);
  vox_model_free(&full), vox_model_free(&resumed), vox_model_free(&base);
}

static void test_kkt(void) {
  snprintf(where, sizeof where, "12x6x6 MMA");
  printf("optimization: cantilever 12x6x6, MMA, 100 iterations\n");
  vox_model base, mc, mg;
  memset(&mc, 0, sizeof mc), memset(&mg, 0, sizeof mg);
  make_cantilever(cpu->ctx, &base, 12, 0);
  vox_optimizer_options opt;
  vox_optimizer_options_default(&opt);
  opt.update = VOX_UPDATE_MMA;
  opt.max_iterations = 100;
  opt.continuation = 0;
  opt.change_tolerance = 0;
  opt.filter = VOX_FILTER_DENSITY;
  opt.solver.rtol = 1e-10; /* the two backends' runs close over 100 iterations */
  vox_optimize_result rc, rg;
  if (optimize(gpu, &base, &opt, &mg, &rg)) {
    report_scalar("the GPU's KKT residual after 100 iterations", rg.kkt_residual, 0, 1, 1e-4);
    CHECK(rg.kkt_residual >= 0);
    report_scalar("the GPU's volume fraction", rg.volume_fraction, 0.3, 1, 1e-3);
    if (optimize(cpu, &base, &opt, &mc, &rc))
      report_scalar("KKT residual, cuda vs cpu", rg.kkt_residual, rc.kkt_residual,
                    rc.kkt_residual, 1e-2);
  }
  vox_model_free(&mc), vox_model_free(&mg), vox_model_free(&base);
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  vox_context *cctx, *gctx;
  if (vox_context_create(&cctx) || vox_context_create(&gctx)) return 1;
  if (vox_backend_create(gctx, test_device(), &gpu) != VOX_OK) {
    printf("SKIP: %s\n", vox_context_message(gctx));
    vox_context_destroy(cctx), vox_context_destroy(gctx);
    return SKIP;
  }
  CHECK_OK(cctx, vox_backend_create(cctx, VOX_DEVICE_CPU, &cpu));
  if (!cpu) return 1;
  if (!gpu->ops->mma || !cpu->ops->mma) {
    printf("FAIL: the %s backend has no MMA operations\n", gpu->ops->mma ? "cpu" : "cuda");
    return 1;
  }
  printf("check: max |cuda - cpu| / max |cpu| (tol)\n");
  if (check_wanted(argc, argv, "subproblem")) {
    test_subproblem(7, 1, 1, VOX_MMA_PRIMAL_DUAL, 0);
    test_subproblem(20011, 1, 2, VOX_MMA_PRIMAL_DUAL, 0);
    test_subproblem(20011, 3, 3, VOX_MMA_PRIMAL_DUAL, 0);
    test_subproblem(20011, 6, 4, VOX_MMA_PRIMAL_DUAL, 0);
    test_subproblem(20011, 3, 5, VOX_MMA_PRIMAL_DUAL, 1);
  }
  if (check_wanted(argc, argv, "dual")) {
    test_subproblem(7, 1, 5, VOX_MMA_DUAL, 0);
    test_subproblem(20011, 1, 6, VOX_MMA_DUAL, 0);
    test_subproblem(20011, 3, 7, VOX_MMA_DUAL, 0);
    test_subproblem(20011, 6, 8, VOX_MMA_DUAL, 0);
    test_subproblem(20011, 3, 9, VOX_MMA_DUAL, 1);
    test_optimize(VOX_MMA_DUAL, 0);
  }
  if (check_wanted(argc, argv, "gather")) {
    test_gather(5003, 0.7);
    test_gather(1000003, 0.7);
    test_gather(17, 0); /* no design element */
  }
  if (check_wanted(argc, argv, "optimize"))
    test_optimize(VOX_MMA_PRIMAL_DUAL, 0), test_optimize(VOX_MMA_PRIMAL_DUAL, 1);
  if (check_wanted(argc, argv, "resume")) test_resume();
  if (check_wanted(argc, argv, "kkt")) test_kkt();
  vox_backend_destroy(gpu), vox_backend_destroy(cpu);
  vox_context_destroy(cctx), vox_context_destroy(gctx);
  if (check_failures) printf("%d check(s) failed (lines with FAIL above)\n", check_failures);
  else printf("all checks passed\n");
  CHECK_DONE();
}
