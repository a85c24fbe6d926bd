/* SPDX-License-Identifier: BSD-3-Clause */
/* How CG's tolerance changes inverse homogenization: C^H in the
 * dot-product and the energy form, the sensitivities, and the design after
 * a number of iterations, each against a reference.
 *
 *   bench_cell_rtol N DEVICE ITERATIONS RTOL_REF RTOL...
 *
 * The problem is bench_cell's at V = 0.3 (cell_problem.h; --start=zhang2023
 * for Zhang et al. 2023's start and symmetry), mixed precision.
 *  1. One optimization per tolerance, ITERATIONS iterations (the first at
 *     RTOL_REF is the reference trajectory, every design of it kept): time,
 *     CG iterations, the final design against the reference's final design
 *     (max and mean |d rho|), and each final design's bulk modulus solved to
 *     1e-10, grey and binarized at 0.5.
 *  2. Along the reference trajectory (designs 2..ITERATIONS), the six fields
 *     solved at each RTOL warm-started design after design, as the
 *     optimizer does; at four checkpoints C^H in both forms and the bulk
 *     modulus's sensitivities against fields solved to 1e-10: the relative
 *     error of the bulk modulus, max |dC| / max |C|, and max |d df| / max
 *     |df|. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend_ops.h"
#include "bench_common.h"
#include "cell_problem.h"
#include "homogenize.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double bulk_of(const double c[36]) {
  return (c[0] + c[7] + c[14] + 2 * (c[1] + c[2] + c[8])) / 9;
}

static double max_rel(const double *a, const double *b, size_t n) {
  double d = 0, m = 0;
  for (size_t i = 0; i < n; i++) d = fmax(d, fabs(a[i] - b[i])), m = fmax(m, fabs(b[i]));
  return m > 0 ? d / m : d;
}

/* One homogenization state that follows a sequence of designs. */
typedef struct follower {
  vox_homog *h;
  vox_vec rho, ones, energy, df;
  double *df_host;
} follower;

static vox_status follower_make(vox_context *ctx, vox_backend *be, const vox_model *m,
                                follower *f) {
  memset(f, 0, sizeof *f);
  TRY(vox_homog_create(ctx, be, m, &f->h));
  const size_t ne = f->h->fem->n_elements;
  TRY(be->ops->vec->create(be, ne, VOX_DOUBLE, &f->rho));
  TRY(be->ops->vec->create(be, ne, VOX_DOUBLE, &f->ones));
  TRY(be->ops->vec->create(be, ne, VOX_DOUBLE, &f->energy));
  TRY(be->ops->vec->create(be, ne, VOX_DOUBLE, &f->df));
  TRY(be->ops->vec->set(be, &f->ones, 1));
  f->df_host = malloc(ne * sizeof *f->df_host);
  return f->df_host ? VOX_OK : vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
}

static void follower_free(vox_backend *be, follower *f) {
  vox_vec *v[] = {&f->rho, &f->ones, &f->energy, &f->df};
  for (int i = 0; i < 4; i++)
    if (v[i]->data) be->ops->vec->destroy(be, v[i]);
  vox_homog_destroy(f->h);
  free(f->df_host);
}

/* The six fields at `density` (warm-started from the last), C^H in both
 * forms and the bulk modulus's sensitivities (df_host). */
static vox_status follow(vox_backend *be, follower *f, const double *density, double p,
                         double emin, const vox_solver_options *o, double c_dot[36],
                         double c_energy[36], int *cg) {
  const vox_backend_ops *ops = be->ops;
  vox_fem *fem = f->h->fem;
  TRY(ops->vec->upload(be, &f->rho, density));
  TRY(ops->design->simp_moduli(be, &f->rho, &fem->e_solid, p, emin, &fem->moduli));
  TRY(vox_fem_update(fem));
  vox_solve_result failed;
  f->h->dot_form = 1;
  TRY(vox_homog_solve(f->h, o, &f->ones, c_dot, cg, &failed));
  TRY(vox_homog_energy_tensor(f->h, c_energy));
  double g[36] = {0};
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) g[i * 6 + j] = -1.0 / 9;
  TRY(vox_homog_gradient(f->h, g, 0, &f->rho, p, emin, &f->energy, &f->df));
  return ops->vec->download(be, &f->df, f->df_host);
}

int main(int argc, char **argv) {
  static const char *const settings[] = {"start", NULL};
  bench_options_take(&argc, argv, settings);
  if (argc < 6) {
    fprintf(stderr, "usage: %s N DEVICE ITERATIONS RTOL_REF RTOL... [--start=KIND]\n", argv[0]);
    return 2;
  }
  const int n = atoi(argv[1]), iterations = atoi(argv[3]), n_tol = argc - 4;
  double tol[16];
  vox_context *ctx;
  vox_backend *be;
  vox_device device;
  if (vox_context_create(&ctx)) return 1;
  if (n < 4 || n % 4 || vox_device_parse(argv[2], &device) != 0 || iterations < 5 ||
      n_tol > 16) {
    fprintf(stderr, "%s: N a multiple of 4, DEVICE cpu|cuda|auto, ITERATIONS >= 5, at most "
            "16 tolerances\n", argv[0]);
    return 2;
  }
  for (int t = 0; t < n_tol; t++) tol[t] = atof(argv[4 + t]);
  const char *start = bench_option("start");
  cell_problem problem;
  if (cell_problem_make(ctx, n, 0.3, start ? start : "cosine", &problem) != 0) return 2;
  if (vox_backend_create(ctx, device, &be)) {
    fprintf(stderr, "%s: %s\n", argv[0], vox_context_message(ctx));
    return 1;
  }
  const size_t ne = (size_t)n * n * n;
  vox_optimizer_options opt = problem.opt;
  opt.max_iterations = iterations;
  printf("cell %d^3, backend %s, start %s, %d iterations\n", n, vox_backend_name(be),
         start ? start : "cosine", iterations);

  /* 1. the runs */
  vox_model runs[16];
  printf("%-8s %8s %8s %10s %10s %10s %10s %10s %8s\n", "rtol", "s/it", "CG/field",
         "B(run)", "max|drho|", "mean|drho|", "B grey", "B binary", "vf bin");
  for (int t = 0; t < n_tol; t++) {
    if (vox_model_copy(ctx, &runs[t], &problem.model) != VOX_OK) return 1;
    vox_optimizer_options o = opt;
    o.solver.rtol = tol[t];
    o.snapshot_every = t == 0; /* the reference trajectory */
    vox_optimize_result r;
    const double t0 = now();
    if (vox_optimize(ctx, be, &runs[t], &o, &r) != VOX_OK) {
      fprintf(stderr, "%s: %s\n", argv[0], vox_context_message(ctx));
      return 1;
    }
    const double seconds = (now() - t0) / r.iterations;
    double dmax = 0, dmean = 0;
    for (size_t e = 0; e < ne; e++) {
      const double d = fabs(runs[t].density[e] - runs[0].density[e]);
      dmax = fmax(dmax, d), dmean += d / (double)ne;
    }
    vox_cell_moduli grey, bin;
    double vf;
    if (cell_grey_moduli(ctx, be, &runs[t], runs[t].density, o.penalty, o.emin_ratio, &grey) ||
        cell_binary_moduli(ctx, be, &runs[t], runs[t].density, o.penalty, o.emin_ratio, &bin,
                           &vf)) {
      fprintf(stderr, "%s: %s\n", argv[0], vox_context_message(ctx));
      return 1;
    }
    printf("%-8g %8.3f %8.1f %10.6f %10.2e %10.2e %10.6f %10.6f %8.4f%s\n", tol[t], seconds,
           r.total_cg_iterations / 6.0 / r.iterations, r.moduli.bulk, dmax, dmean, grey.bulk,
           bin.bulk, vf, r.reason == VOX_STOP_SOLVER_FAILED ? "  (a solve failed)" : "");
    fflush(stdout);
  }

  /* 2. the forms along the reference trajectory (snapshot k is the design
   * of iteration k + 1) */
  const vox_model *ref = &runs[0];
  const int designs = (int)ref->n_snapshots;
  const int check[4] = {designs / 4, designs / 2, 3 * designs / 4, designs};
  follower exact, fol;
  vox_solver_options tight = opt.solver;
  tight.rtol = 1e-10;
  if (follower_make(ctx, be, &problem.model, &exact) != VOX_OK) {
    fprintf(stderr, "%s: %s\n", argv[0], vox_context_message(ctx));
    return 1;
  }
  double c_ref[4][36], df_ref_max[4];
  double *df_ref = malloc(4 * ne * sizeof *df_ref);
  for (int c = 0; c < 4; c++) {
    double c_dot[36];
    int cg;
    if (follow(be, &exact, ref->snapshot_density + (size_t)(check[c] - 1) * ne, opt.penalty,
               opt.emin_ratio, &tight, c_dot, c_ref[c], &cg) != VOX_OK) {
      fprintf(stderr, "%s: %s\n", argv[0], vox_context_message(ctx));
      return 1;
    }
    memcpy(df_ref + c * ne, exact.df_host, ne * sizeof *df_ref);
    df_ref_max[c] = max_rel(c_dot, c_ref[c], 36);
  }
  follower_free(be, &exact);
  printf("reference fields to 1e-10: the two forms agree to max |dC| / max |C| = %.1e, %.1e, "
         "%.1e, %.1e at designs %d, %d, %d, %d\n", df_ref_max[0], df_ref_max[1], df_ref_max[2],
         df_ref_max[3], check[0] + 1, check[1] + 1, check[2] + 1, check[3] + 1);
  printf("%-8s %6s %8s %11s %11s %11s %11s %11s\n", "rtol", "design", "CG/field", "dB/B dot",
         "dB/B energy", "dC dot", "dC energy", "d df");
  for (int t = 1; t < n_tol; t++) {
    vox_solver_options o = opt.solver;
    o.rtol = tol[t];
    if (follower_make(ctx, be, &problem.model, &fol) != VOX_OK) return 1;
    for (int k = 1, c = 0, cg_sum = 0; k <= designs; k++) {
      double c_dot[36], c_en[36];
      int cg;
      if (follow(be, &fol, ref->snapshot_density + (size_t)(k - 1) * ne, opt.penalty,
                 opt.emin_ratio, &o, c_dot, c_en, &cg) != VOX_OK) {
        fprintf(stderr, "%s: %s\n", argv[0], vox_context_message(ctx));
        return 1;
      }
      cg_sum += cg;
      if (k != check[c]) continue;
      const double b = bulk_of(c_ref[c]);
      printf("%-8g %6d %8.1f %11.2e %11.2e %11.2e %11.2e %11.2e\n", tol[t], k + 1,
             cg_sum / 6.0 / k, fabs(bulk_of(c_dot) - b) / b, fabs(bulk_of(c_en) - b) / b,
             max_rel(c_dot, c_ref[c], 36), max_rel(c_en, c_ref[c], 36),
             max_rel(fol.df_host, df_ref + c * ne, ne));
      fflush(stdout);
      c++;
    }
    follower_free(be, &fol);
  }
  free(df_ref);
  for (int t = 0; t < n_tol; t++) vox_model_free(&runs[t]);
  cell_problem_free(&problem);
  vox_backend_destroy(be);
  vox_context_destroy(ctx);
  return 0;
}
