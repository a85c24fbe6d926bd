/* SPDX-License-Identifier: BSD-3-Clause */
/* Where the time of a multigrid cycle goes, part by part, on any backend:
 * bench_cuda's `vcycle` mode on one device, bench_mpi's over MPI ranks.
 * Include after backend_ops.h, bench_common.h, fem.h and multigrid.h. */
#ifndef VOXFE_BENCH_VCYCLE_PARTS_H
#define VOXFE_BENCH_VCYCLE_PARTS_H

#include <stdio.h>
#include <stdlib.h>

/* Called after the backend's synchronize around each clock reading where
 * set (bench_mpi: a barrier, so that rank 0's clock covers every rank). */
static void (*bench_wait_all)(void);

static inline void bench_synchronize(vox_backend *be) {
  be->ops->synchronize(be);
  if (bench_wait_all) bench_wait_all();
}

/* Seconds per call of `body` (reps calls after one warm-up call). */
#define TIME_PER_CALL(be, reps, body)                                               \
  ({                                                                                \
    body;                                                                           \
    bench_synchronize(be);                                                          \
    const double t0_ = bench_now();                                                 \
    for (int r_ = 0; r_ < (reps); r_++) body;                                       \
    bench_synchronize(be);                                                          \
    (bench_now() - t0_) / (reps);                                                   \
  })

/* The solver's options that --smoothing-steps=N, --fine-smoothing-steps=N,
 * --mg-cycle=C, --mg-levels=N, --mg-coarse-dofs=N, --start-history=N,
 * --mg-bound-refresh=N and --host-scalars=1 set (bench_options_take must
 * have taken them). */
static void bench_solver_alternatives(vox_backend *be, vox_solver_options *so) {
  const char *degree = bench_option("smoothing-steps");
  if (degree && atoi(degree) > 0) so->smoothing_steps = atoi(degree);
  const char *fine_degree = bench_option("fine-smoothing-steps");
  if (fine_degree) so->fine_smoothing_steps = atoi(fine_degree);
  const char *cycle = bench_option("mg-cycle");
  if (cycle && vox_mg_cycle_parse(cycle, &so->mg_cycle) != 0) {
    fprintf(stderr, "--mg-cycle: expected v or w, got '%s'\n", cycle);
    exit(2);
  }
  const char *levels = bench_option("mg-levels");
  if (levels) so->mg_levels = atoi(levels);
  const char *coarse = bench_option("mg-coarse-dofs");
  if (coarse) so->mg_coarse_dofs = atoi(coarse);
  const char *history = bench_option("start-history");
  if (history) so->start_history = atoi(history);
  const char *refresh = bench_option("mg-bound-refresh");
  if (refresh) so->mg_bound_refresh = atoi(refresh);
  const char *host = bench_option("host-scalars");
  if (host && atoi(host) > 0) {
    static vox_backend_ops ops;
    static vox_vector_ops vec;
    static vox_multigrid_ops mg;
    ops = *be->ops, vec = *be->ops->vec, mg = *be->ops->mg;
    vec.cg_begin = NULL, vec.cg_step = NULL, vec.cg_direction = NULL;
    mg.stencil_lanczos = NULL;
    ops.vec = &vec, ops.mg = &mg;
    be->ops = &ops;
  }
}

/* The parts of a cycle of the cantilever `model` on `be`: its FE system at
 * random SIMP densities (rho uniform in [0, 1], p = 3), the multigrid set
 * up as a solve would, then each part timed on its own; printed where
 * `print`. Returns 0, or the name of what failed. */
static const char *bench_vcycle_parts(vox_context *ctx, vox_backend *be, vox_model *model,
                                      const vox_solver_options *options, int print) {
  const vox_backend_ops *o = be->ops;
  vox_fem *fem;
  if (vox_fem_create(ctx, be, model, &fem)) return "FE system";
  vox_vec rho, half; /* rho = uniform in [-0.5, 0.5) + 0.5 */
  if (o->vec->create(be, fem->n_elements, VOX_DOUBLE, &rho) ||
      o->vec->create(be, fem->n_elements, VOX_DOUBLE, &half) || o->vec->random(be, &rho, 7, 0) ||
      o->vec->set(be, &half, 0.5) || o->vec->axpy(be, &rho, 1, &half) ||
      o->design->simp_moduli(be, &rho, &fem->e_solid, 3, 1e-9, &fem->moduli) ||
      vox_fem_update(fem))
    return "densities";
  vox_solver_options so = *options;
  vox_multigrid *mg;
  if (vox_mg_create(be, fem->op, &fem->grid, 3, fem->jacobi_bound, &so, &mg)) return "multigrid";
  vox_vec *r = &fem->pcg.r, *z = &fem->pcg.z;
  vox_vec *const work[4] = {r, z, &fem->pcg.p, &fem->pcg.q};
  vox_status st = VOX_OK;
  const vox_grid *g = &fem->grid;
  if (print)
    printf("%s-cycle of the cantilever %lldx%lldx%lld, random densities, %d levels, %s "
           "precision, Chebyshev degree %d\n",
           vox_mg_cycle_name(so.mg_cycle), (long long)g->nx, (long long)g->ny, (long long)g->nz,
           mg->n_levels, vox_precision_name(so.precision), so.smoothing_steps);
  const double setup = TIME_PER_CALL(be, 3, st |= vox_mg_setup(mg, &fem->inv_diag, work));
  /* its parts, recomputed from the same moduli (the same values again) */
  const int last = mg->n_levels - 1;
  const double galerkin1 =
      TIME_PER_CALL(be, 3, st |= o->mg->galerkin_operator(be, fem->op, mg->level[1].stencil));
  double galerkin_deeper = 0;
  for (int l = 2; l < mg->n_levels; l++)
    galerkin_deeper += TIME_PER_CALL(
        be, 3, st |= o->mg->galerkin_stencil(be, mg->level[l - 1].stencil, mg->level[l].stencil));
  const double factor =
      TIME_PER_CALL(be, 3, st |= o->mg->stencil_factor(be, mg->level[last].stencil));
  if (o->vec->random(be, r, 3, 0) || o->op->zero_fixed(be, fem->op, r)) return "vectors";
  const double vc = TIME_PER_CALL(be, 20, st |= vox_mg_apply(mg, r, z));
  const double ku = TIME_PER_CALL(be, 50, st |= o->op->apply(be, fem->op, r, z, 0));
  const double axpby = TIME_PER_CALL(be, 50, st |= o->vec->axpby(be, z, 0.5, r, 0.5));
  double dotv;
  const double dot = TIME_PER_CALL(be, 50, st |= o->vec->dot(be, r, z, &dotv));
  if (print)
    printf("  setup %.2f ms, cycle %.3f ms; level 0: K u %.3f ms, axpby %.3f ms, dot %.3f ms\n"
           "  setup: Galerkin level 1 %.2f ms, deeper levels %.2f ms, coarsest factor %.2f ms, "
           "the rest (diagonals, Lanczos bounds) %.2f ms\n",
           1e3 * setup, 1e3 * vc, 1e3 * ku, 1e3 * axpby, 1e3 * dot, 1e3 * galerkin1,
           1e3 * galerkin_deeper, 1e3 * factor,
           1e3 * (setup - galerkin1 - galerkin_deeper - factor));
  /* one smoothing step of the fine level, fused (op->smooth) and as the
   * smoother's product followed by its update (a convergent damping, so
   * that the repeated steps keep finite values) */
  const int flags = so.precision == VOX_PRECISION_MIXED ? VOX_APPLY_SINGLE : 0;
  vox_vec *p = &fem->pcg.p, *q = &fem->pcg.q;
  const double fused = TIME_PER_CALL(
      be, 50, st |= o->op->smooth(be, fem->op, r, z, &fem->inv_diag, 0.2, 0.1, p, q, flags));
  const double apart = TIME_PER_CALL(be, 50, {
    st |= o->op->apply(be, fem->op, z, q, flags);
    st |= o->vec->smoother_step(be, r, q, &fem->inv_diag, 0.2, 0.1, p, z);
  });
  const double resid = TIME_PER_CALL(be, 50, st |= o->op->residual(be, fem->op, r, z, q, flags));
  if (print)
    printf("  level 0 smoothing step: fused %.3f ms, product and update %.3f ms; fused "
           "residual %.3f ms\n",
           1e3 * fused, 1e3 * apart, 1e3 * resid);
  for (int l = 1; l < mg->n_levels; l++) {
    vox_mg_level *lv = &mg->level[l], *fine = &mg->level[l - 1];
    const double ap =
        TIME_PER_CALL(be, 20, st |= o->mg->stencil_apply(be, lv->stencil, &lv->x, &lv->b));
    /* a smoothing step where the level smooths (the coarsest solves) */
    const double sm =
        l == last ? 0
                  : TIME_PER_CALL(be, 20,
                                  st |= o->mg->stencil_smooth(be, lv->stencil, &lv->b, &lv->x,
                                                              &lv->inv_diag, 0.2, 0.1, &lv->d,
                                                              &lv->r));
    const double re = TIME_PER_CALL(
        be, 20, st |= o->mg->restrict_residual(be, &fine->grid, 3, l == 1 ? r : &fine->r, &lv->b));
    const double pr = TIME_PER_CALL(
        be, 20, st |= o->mg->prolong_add(be, &fine->grid, 3, &lv->x, l == 1 ? z : &fine->x));
    const double cs =
        l == last
            ? TIME_PER_CALL(be, 20, st |= o->mg->stencil_solve(be, lv->stencil, &lv->b, &lv->x))
            : 0;
    if (print)
      printf("  level %d (%lldx%lldx%lld): stencil apply %.3f ms, smoothing step %.3f ms, "
             "restrict %.3f ms, prolong %.3f ms%s",
             l, (long long)lv->grid.nx, (long long)lv->grid.ny, (long long)lv->grid.nz, 1e3 * ap,
             1e3 * sm, 1e3 * re, 1e3 * pr, cs > 0 ? "" : "\n");
    if (print && cs > 0) printf(", coarse solve %.3f ms\n", 1e3 * cs);
  }
  vox_mg_destroy(mg);
  /* a whole solve as a design iteration runs it: the update after new
   * moduli (vox_fem_update; the hierarchy is set up in the solve) and PCG
   * from zero to the options' tolerance, the three timed apart */
  vox_vec u;
  if (o->vec->create(be, fem->n_dofs, VOX_DOUBLE, &u)) return "vectors";
  vox_solve_result res = {0};
  const double update = TIME_PER_CALL(be, 3, st |= vox_fem_update(fem));
  const double whole = TIME_PER_CALL(be, 3, {
    st |= o->vec->set(be, &u, 0);
    st |= vox_fem_update(fem);
    st |= vox_fem_solve(fem, 0, &u, &so, &res);
  });
  if (print)
    printf("  solve from zero to %.0e: %d CG in %.2f ms, of which the update %.2f ms and the "
           "multigrid's setup about %.2f ms (above): %.3f ms a CG iteration besides\n",
           so.rtol, res.iterations, 1e3 * whole, 1e3 * update, 1e3 * setup,
           res.iterations > 0 ? 1e3 * (whole - update - setup) / res.iterations : 0);
  o->vec->destroy(be, &u);
  o->vec->destroy(be, &rho);
  o->vec->destroy(be, &half);
  vox_fem_destroy(fem);
  return st ? "timing" : NULL;
}

#endif
