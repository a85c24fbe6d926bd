/* SPDX-License-Identifier: BSD-3-Clause */
/* The CUDA backend against the CPU backend, operation by operation, on the
 * same random input: vectors and reductions (CG's steps with their scalars
 * on the device too), the matrix-free operator in every K u variant
 * (elasticity and conduction, odd grid sizes, zero and 1e-9 moduli, random
 * fixed dofs, springs) and the multigrid's fused fine-level steps built on
 * it, SIMP and OC kernels, the filters (plain and periodic), the symmetry
 * orbit means, and the multigrid pieces (Galerkin stencils in double and
 * mixed precision, stencil products, the smoother bound's Lanczos steps,
 * transfers, coarse factor and solve).
 *
 * Every check prints one line with the measured difference
 *   max |cuda - cpu| / max |cpu|
 * (the absolute difference where the CPU result is all zero), so that the
 * log says how close each operation is, not only whether it passed.
 *
 *   test_cuda_backend [vectors|operator|simp|filter|symmetry|multigrid]...
 *
 * runs only the named sections (all by default). Exit 77 (skipped) when this
 * build has no CUDA or the machine no device. */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_pair.h"

/* Relative difference allowed in double precision, and between the
 * single-precision (mixed) Galerkin stencils and the double ones. */
static const double TOL = 1e-12, TOL_MIXED = 1e-6;
/* op->apply with VOX_APPLY_SINGLE (float arithmetic on the CUDA backend)
 * against the CPU backend's double product, relative to max |y|. */
static const double TOL_SINGLE = 1e-5;
static int64_t node_index(const vox_grid *g, int64_t i, int64_t j, int64_t k) {
  return (k * (g->ny + 1) + j) * (g->nx + 1) + i;
}

static const char *grid_text(const vox_grid *g) {
  static char buf[64];
  snprintf(buf, sizeof buf, "%lldx%lldx%lld", (long long)g->nx, (long long)g->ny,
           (long long)g->nz);
  return buf;
}


/* ---- vectors and reductions -------------------------------------------------- */

static void test_vectors(size_t n) {
  snprintf(where, sizeof where, "n=%zu", n);
  const vox_backend_ops *c = cpu->ops, *g = gpu->ops;
  uint64_t seed = 1000 + n;
  pvec x, y, w;
  if (!pv_create(&x, n) || !pv_create(&y, n) || !pv_create(&w, n)) goto done;

  if (pv_poison(&w) && BOTH("vec_set", c->vec->set(cpu, &w.c, -2.5), g->vec->set(gpu, &w.g, -2.5)))
    pv_check("vec_set", &w, TOL);
  pv_random(&x, &seed, -1, 1);
  if (pv_poison(&w) &&
      BOTH("vec_copy", c->vec->copy(cpu, &w.c, &x.c), g->vec->copy(gpu, &w.g, &x.g)))
    pv_check("vec_copy", &w, TOL);
  pv_random(&y, &seed, -1, 1);
  if (BOTH("vec_axpy", c->vec->axpy(cpu, &y.c, 0.7, &x.c), g->vec->axpy(gpu, &y.g, 0.7, &x.g)))
    pv_check("vec_axpy", &y, TOL);
  pv_random(&y, &seed, -1, 1);
  if (BOTH("vec_xpay", c->vec->xpay(cpu, &y.c, -1.3, &x.c), g->vec->xpay(gpu, &y.g, -1.3, &x.g)))
    pv_check("vec_xpay", &y, TOL);
  pv_random(&y, &seed, -1, 1);
  if (BOTH("vec_axpby", c->vec->axpby(cpu, &y.c, 0.3, &x.c, 1.7),
           g->vec->axpby(gpu, &y.g, 0.3, &x.g, 1.7)))
    pv_check("vec_axpby", &y, TOL);
  pv_random(&y, &seed, -1, 1);
  if (pv_poison(&w) &&
      BOTH("vec_mult", c->vec->mult(cpu, &w.c, &x.c, &y.c), g->vec->mult(gpu, &w.g, &x.g, &y.g)))
    pv_check("vec_mult", &w, TOL);
  /* w = w .* y: the output may alias an input */
  if (BOTH("vec_mult aliased", c->vec->mult(cpu, &w.c, &w.c, &y.c),
           g->vec->mult(gpu, &w.g, &w.g, &y.g)))
    pv_check("vec_mult aliased (w = w.*y)", &w, TOL);
  /* the fused smoother step: d = a w.*(b - ax) + beta d, x += d, with and
   * without a product and with beta = 0 overwriting whatever d holds; the
   * zero start (no product) overwrites whatever x holds (poisoned on the
   * GPU only, so reading it would show) */
  {
    pvec b = {0}, d = {0};
    if (pv_create(&b, n) && pv_create(&d, n)) {
      pv_random(&b, &seed, -1, 1);
      pv_random(&d, &seed, -1, 1);
      pv_random(&w, &seed, 0.5, 2);
      if (BOTH("smoother_step", c->vec->smoother_step(cpu, &b.c, &y.c, &w.c, 0.8, 0.3, &d.c, &x.c),
               g->vec->smoother_step(gpu, &b.g, &y.g, &w.g, 0.8, 0.3, &d.g, &x.g))) {
        pv_check("smoother_step d", &d, TOL);
        pv_check("smoother_step x", &x, TOL);
      }
      if (pv_poison(&d) && pv_poison(&x) &&
          BOTH("smoother_step zero start",
               c->vec->smoother_step(cpu, &b.c, NULL, &w.c, 1.1, 0, &d.c, &x.c),
               g->vec->smoother_step(gpu, &b.g, NULL, &w.g, 1.1, 0, &d.g, &x.g))) {
        pv_check("smoother_step zero start d", &d, TOL);
        pv_check("smoother_step zero start x", &x, TOL);
      }
    }
    pv_destroy(&b);
    pv_destroy(&d);
  }
  for (size_t i = 0; i < n; i++) /* away from zero, both signs */
    w.hc[i] = (uniform(&seed) < 0.5 ? -1 : 1) * (0.25 + 4 * uniform(&seed));
  pv_upload(&w, w.hc);
  if (BOTH("vec_reciprocal", c->vec->reciprocal(cpu, &w.c), g->vec->reciprocal(gpu, &w.g)))
    pv_check("vec_reciprocal", &w, TOL);

  /* Reductions: the sum order differs between backends, so each is
   * compared on its natural scale (positive terms, or ||x|| ||y||). */
  double a, b, xx, yy;
  /* CG's fused update: x += alpha p, r -= alpha q, and r.r (here y, w as
   * p, q and x, a fresh r) */
  {
    pvec r = {0};
    if (pv_create(&r, n) && pv_random(&r, &seed, -1, 1) && pv_random(&y, &seed, -1, 1) &&
        pv_random(&w, &seed, -1, 1) &&
        BOTH("cg_update", c->vec->cg_update(cpu, &x.c, &r.c, 0.37, &y.c, &w.c, &b),
             g->vec->cg_update(gpu, &x.g, &r.g, 0.37, &y.g, &w.g, &a))) {
      pv_check("cg_update x", &x, TOL);
      pv_check("cg_update r", &r, TOL);
      report_scalar("cg_update r.r", a, b, fabs(b), TOL);
    }
    pv_destroy(&r);
  }
  /* CG with its scalars on the device (cg_begin, cg_step, cg_direction)
   * against ksp.c's host loop on the CPU: p = z and r.z; the step x +=
   * alpha p, r -= alpha q with alpha = r.z / p.q, and r.r; the direction p
   * = z + (r.z' / r.z) p; then a step with p.q < 0, which must leave x and
   * r as they are. z = r .* w and q = p .* w with w > 0 make r.z and p.q
   * positive. Not with one entry: there alpha = 1 / w^2 takes r to zero,
   * and what is left of r (and so r.r, r.z' and p) is either backend's
   * rounding (seen on the H100: 6.6e-17 against 1.1e-16). */
  if (g->vec->cg_begin && g->vec->cg_step && g->vec->cg_direction && n > 1) {
    pvec r = {0}, z = {0}, p = {0}, q = {0};
    double rz_c = 0, rz_g = 0, pq_c = 0, pq_g = 0, rr_c = 0, rr_g = 0, rz2_c = 0;
    if (pv_create(&r, n) && pv_create(&z, n) && pv_create(&p, n) && pv_create(&q, n) &&
        pv_random(&r, &seed, -1, 1) && pv_random(&x, &seed, -1, 1) &&
        pv_random(&w, &seed, 0.5, 2) &&
        BOTH("cg z", c->vec->mult(cpu, &z.c, &r.c, &w.c), g->vec->mult(gpu, &z.g, &r.g, &w.g)) &&
        pv_poison(&p) && C_OK("cg_begin", c->vec->copy(cpu, &p.c, &z.c)) &&
        C_OK("cg_begin", c->vec->dot(cpu, &r.c, &z.c, &rz_c)) &&
        G_OK("cg_begin", g->vec->cg_begin(gpu, &r.g, &z.g, &p.g, &rz_g))) {
      pv_check("cg_begin p", &p, TOL);
      report_scalar("cg_begin r.z", rz_g, rz_c, fabs(rz_c), TOL);
      if (BOTH("cg q", c->vec->mult(cpu, &q.c, &p.c, &w.c), g->vec->mult(gpu, &q.g, &p.g, &w.g)) &&
          C_OK("cg_step", c->vec->dot(cpu, &p.c, &q.c, &pq_c)) &&
          C_OK("cg_step", c->vec->cg_update(cpu, &x.c, &r.c, rz_c / pq_c, &p.c, &q.c, &rr_c)) &&
          G_OK("cg_step", g->vec->cg_step(gpu, &x.g, &r.g, &p.g, &q.g, &pq_g, &rz_g, &rr_g))) {
        pv_check("cg_step x", &x, TOL);
        pv_check("cg_step r", &r, TOL);
        report_scalar("cg_step p.q", pq_g, pq_c, fabs(pq_c), TOL);
        report_scalar("cg_step r.z it used", rz_g, rz_c, fabs(rz_c), TOL);
        report_scalar("cg_step r.r", rr_g, rr_c, fabs(rr_c), TOL);
      }
      if (BOTH("cg z", c->vec->mult(cpu, &z.c, &r.c, &w.c), g->vec->mult(gpu, &z.g, &r.g, &w.g)) &&
          C_OK("cg_direction", c->vec->dot(cpu, &r.c, &z.c, &rz2_c)) &&
          C_OK("cg_direction", c->vec->xpay(cpu, &p.c, rz2_c / rz_c, &z.c)) &&
          G_OK("cg_direction", g->vec->cg_direction(gpu, &r.g, &z.g, &p.g)))
        pv_check("cg_direction p", &p, TOL);
      if (BOTH("cg q = -p", c->vec->axpby(cpu, &q.c, -1, &p.c, 0),
               g->vec->axpby(gpu, &q.g, -1, &p.g, 0)) &&
          G_OK("cg_step p.q < 0",
               g->vec->cg_step(gpu, &x.g, &r.g, &p.g, &q.g, &pq_g, &rz_g, &rr_g))) {
        pv_check("cg_step p.q < 0 leaves x", &x, TOL);
        pv_check("cg_step p.q < 0 leaves r", &r, TOL);
        if (pq_g < 0)
          ok_line("cg_step p.q < 0 returns it", 0, 0);
        else
          fail_line("cg_step p.q < 0 returns it", "p.q %.17g", pq_g);
        report_scalar("cg_step p.q < 0: the r.z of cg_direction", rz_g, rz2_c, fabs(rz2_c), TOL);
      }
    }
    pv_destroy(&r), pv_destroy(&z), pv_destroy(&p), pv_destroy(&q);
  }
  if (BOTH("vec_dot x.x", c->vec->dot(cpu, &x.c, &x.c, &b), g->vec->dot(gpu, &x.g, &x.g, &a)))
    report_scalar("vec_dot x.x", a, b, fabs(b), TOL);
  xx = b;
  c->vec->dot(cpu, &y.c, &y.c, &yy);
  if (BOTH("vec_dot x.y", c->vec->dot(cpu, &x.c, &y.c, &b), g->vec->dot(gpu, &x.g, &y.g, &a)))
    report_scalar("vec_dot x.y (of ||x|| ||y||)", a, b, sqrt(xx * yy), TOL);
  pv_random(&w, &seed, 0.5, 1.5);
  if (BOTH("vec_dot positive", c->vec->dot(cpu, &w.c, &w.c, &b), g->vec->dot(gpu, &w.g, &w.g, &a)))
    report_scalar("vec_dot w.w", a, b, fabs(b), TOL);
  if (BOTH("vec_max_abs_diff", c->vec->max_abs_diff(cpu, &x.c, &y.c, &b),
           g->vec->max_abs_diff(gpu, &x.g, &y.g, &a)))
    report_scalar("vec_max_abs_diff", a, b, fabs(b), TOL);
  /* the largest difference in the last element (a reduction that misses
   * the tail of the grid-stride loop shows here) */
  C_OK("vec_download", c->vec->download(cpu, &x.c, y.hc)); /* y = x except at the end */
  y.hc[n - 1] += 10;
  pv_upload(&y, y.hc);
  if (BOTH("vec_max_abs_diff tail", c->vec->max_abs_diff(cpu, &x.c, &y.c, &b),
           g->vec->max_abs_diff(gpu, &x.g, &y.g, &a)))
    report_scalar("vec_max_abs_diff (max at the last index)", a, b, fabs(b), TOL);
done:
  pv_destroy(&x), pv_destroy(&y), pv_destroy(&w);
}

/* ---- the operator ---------------------------------------------------------------- */

/* An operator problem: grid, element matrix, fixed dofs, moduli. */
typedef struct problem {
  vox_grid grid;
  int dpn;
  size_t n_dofs, n_elements;
  double ke[24 * 24];
  uint8_t *fixed;
  double *moduli;
} problem;

/* Random moduli (with `zeros`: some exactly 0; always some 1e-9) and fixed
 * dofs: the x- face and a random few. */
static int problem_make(problem *p, const vox_grid *g, int dpn, int zeros, uint64_t seed) {
  memset(p, 0, sizeof *p);
  p->grid = *g;
  p->dpn = dpn;
  p->n_dofs = (size_t)dpn * (size_t)vox_grid_nodes(g);
  p->n_elements = (size_t)vox_grid_elements(g);
  p->fixed = calloc(p->n_dofs, 1);
  p->moduli = malloc(p->n_elements * sizeof *p->moduli);
  if (!unit_element_matrix(g, dpn, p->ke)) return 0;
  if (!p->fixed || !p->moduli) {
    fail_line("setup", "host memory");
    return 0;
  }
  for (size_t e = 0; e < p->n_elements; e++) {
    const double r = uniform(&seed);
    p->moduli[e] = zeros && r < 0.1 ? 0 : r < 0.25 ? 1e-9 : 0.1 + uniform(&seed);
  }
  for (int64_t k = 0; k <= g->nz; k++)
    for (int64_t j = 0; j <= g->ny; j++)
      for (int c = 0; c < dpn; c++) p->fixed[node_index(g, 0, j, k) * dpn + c] = 1;
  for (size_t d = 0; d < p->n_dofs; d++)
    if (uniform(&seed) < 0.05) p->fixed[d] = 1;
  return 1;
}

static void problem_free(problem *p) {
  free(p->fixed), free(p->moduli);
  memset(p, 0, sizeof *p);
}

static vox_operator_desc problem_desc(const problem *p) {
  return (vox_operator_desc){
      .grid = p->grid, .dofs_per_node = p->dpn, .ke = p->ke, .dof_fixed = p->fixed};
}

/* With `springs`, three free dofs get springs to ground (a mechanism's
 * input and output): every product, the diagonal and the fused multigrid
 * steps must include them. */
static void test_operator(const vox_grid *grid, int dpn, uint64_t seed, int springs) {
  snprintf(where, sizeof where, "%s dpn=%d%s", grid_text(grid), dpn, springs ? " springs" : "");
  const vox_backend_ops *c = cpu->ops, *g = gpu->ops;
  problem p;
  pvec mod, mod2, x, x2, y, d, en, sw, sd;
  vox_operator *cop = NULL;
  memset(&mod, 0, sizeof mod), memset(&mod2, 0, sizeof mod2), memset(&x, 0, sizeof x);
  memset(&x2, 0, sizeof x2), memset(&y, 0, sizeof y), memset(&d, 0, sizeof d);
  memset(&en, 0, sizeof en), memset(&sw, 0, sizeof sw), memset(&sd, 0, sizeof sd);
  if (!problem_make(&p, grid, dpn, 1, seed)) goto done;
  vox_operator_desc desc = problem_desc(&p);
  size_t spring_dof[3];
  double spring_k[3];
  if (springs) {
    size_t k = 0;
    for (size_t dof = p.n_dofs / 2; dof < p.n_dofs && k < 3; dof += 7)
      if (!p.fixed[dof]) spring_dof[k] = dof, spring_k[k] = 0.5 + (double)k, k++;
    desc.n_springs = k, desc.spring_dof = spring_dof, desc.spring_k = spring_k;
  }
  if (!pv_create(&mod, p.n_elements) || !pv_create(&mod2, p.n_elements) ||
      !pv_create(&x, p.n_dofs) || !pv_create(&x2, p.n_dofs) || !pv_create(&y, p.n_dofs) ||
      !pv_create(&d, p.n_dofs) || !pv_create(&en, p.n_elements) || !pv_create(&sw, p.n_dofs) ||
      !pv_create(&sd, p.n_dofs))
    goto done;
  pv_upload(&mod, p.moduli);
  pv_random(&x, &seed, -0.5, 0.5); /* non-zero on fixed dofs too */
  pv_random(&x2, &seed, -0.5, 0.5);
  for (size_t e = 0; e < p.n_elements; e++) mod2.hc[e] = 0.5 + uniform(&seed);
  if (!C_OK("op_create", c->op->create(cpu, &desc, &cop)) ||
      !C_OK("op_set_moduli", c->op->set_moduli(cpu, cop, &mod.c)))
    goto done;

  const vox_kernel kernels[] = {VOX_KERNEL_AUTO, VOX_KERNEL_DBD, VOX_KERNEL_NBN, VOX_KERNEL_EBE,
                                VOX_KERNEL_MODES};
  for (size_t kv = 0; kv < sizeof kernels / sizeof kernels[0]; kv++) {
    const char *kn = vox_kernel_name(kernels[kv]);
    char check[96];
    vox_operator *gop = NULL;
    vox_backend_set_kernel(gpu, kernels[kv]);
    snprintf(check, sizeof check, "op_create %s", kn);
    if (!G_OK(check, g->op->create(gpu, &desc, &gop))) continue;
    if (!G_OK(check, g->op->set_moduli(gpu, gop, &mod.g))) goto next;
    for (int full = 0; full <= 1; full++) {
      snprintf(check, sizeof check, "op_apply %s full=%d", kn, full);
      const int flags = full ? VOX_APPLY_FULL : 0;
      if (pv_poison(&y) && BOTH(check, c->op->apply(cpu, cop, &x.c, &y.c, flags),
                                g->op->apply(gpu, gop, &x.g, &y.g, flags)))
        pv_check(check, &y, TOL);
    }
    /* The single-precision product (dbd, nbn; ebe may compute in double)
     * against the CPU's double one, which ignores the flag. */
    for (int full = 0; full <= 1; full++) {
      const int flags = VOX_APPLY_SINGLE | (full ? VOX_APPLY_FULL : 0);
      snprintf(check, sizeof check, "op_apply %s single full=%d", kn, full);
      if (pv_poison(&y) && BOTH(check, c->op->apply(cpu, cop, &x.c, &y.c, flags & VOX_APPLY_FULL),
                                g->op->apply(gpu, gop, &x.g, &y.g, flags)))
        pv_check(check, &y, TOL_SINGLE);
    }
    snprintf(check, sizeof check, "op_diagonal %s", kn);
    if (pv_poison(&d) &&
        BOTH(check, c->op->diagonal(cpu, cop, &d.c), g->op->diagonal(gpu, gop, &d.g)))
      pv_check(check, &d, TOL);
    /* zeroes the fixed dofs of the product above, keeps the others */
    snprintf(check, sizeof check, "op_zero_fixed %s", kn);
    if (BOTH(check, c->op->zero_fixed(cpu, cop, &y.c), g->op->zero_fixed(gpu, gop, &y.g)))
      pv_check(check, &y, TOL_SINGLE);
    /* The multigrid's fused fine-level steps (nbn computes them in one
     * kernel, the others in two) against the CPU's product-then-update, in
     * double and in single precision; b = x2, the iterate x. */
    for (int single = 0; single <= 1; single++) {
      const int flags = single ? VOX_APPLY_SINGLE : 0;
      const double tol = single ? TOL_SINGLE : TOL;
      pv_random(&sw, &seed, 0.5, 2); /* an inverse diagonal */
      pv_random(&sd, &seed, -1, 1);  /* a direction carried over (beta != 0) */
      snprintf(check, sizeof check, "op_smooth %s single=%d", kn, single);
      if (pv_poison(&y) &&
          BOTH(check, c->op->smooth(cpu, cop, &x2.c, &x.c, &sw.c, 0.8, 0.3, &sd.c, &y.c, flags),
               g->op->smooth(gpu, gop, &x2.g, &x.g, &sw.g, 0.8, 0.3, &sd.g, &y.g, flags))) {
        pv_check(check, &y, tol);
        snprintf(check, sizeof check, "op_smooth %s single=%d d", kn, single);
        pv_check(check, &sd, tol);
      }
      snprintf(check, sizeof check, "op_smooth %s single=%d beta=0", kn, single);
      if (pv_poison(&y) && pv_poison(&sd) &&
          BOTH(check, c->op->smooth(cpu, cop, &x2.c, &x.c, &sw.c, 1.1, 0, &sd.c, &y.c, flags),
               g->op->smooth(gpu, gop, &x2.g, &x.g, &sw.g, 1.1, 0, &sd.g, &y.g, flags))) {
        pv_check(check, &y, tol);
        snprintf(check, sizeof check, "op_smooth %s single=%d beta=0 d", kn, single);
        pv_check(check, &sd, tol);
      }
      snprintf(check, sizeof check, "op_residual %s single=%d", kn, single);
      if (pv_poison(&y) && BOTH(check, c->op->residual(cpu, cop, &x2.c, &x.c, &y.c, flags),
                                g->op->residual(gpu, gop, &x2.g, &x.g, &y.g, flags)))
        pv_check(check, &y, tol);
    }
    snprintf(check, sizeof check, "op_element_energy %s accumulate=0", kn);
    if (pv_poison(&en) && BOTH(check, c->op->element_energy(cpu, cop, &x.c, &en.c, 0),
                               g->op->element_energy(gpu, gop, &x.g, &en.g, 0)))
      pv_check(check, &en, TOL);
    snprintf(check, sizeof check, "op_element_energy %s accumulate=1", kn);
    if (BOTH(check, c->op->element_energy(cpu, cop, &x2.c, &en.c, 1),
             g->op->element_energy(gpu, gop, &x2.g, &en.g, 1)))
      pv_check(check, &en, TOL);
    /* The moduli vector is referenced: new values in it are used by the
     * next product without another op->set_moduli. */
    snprintf(check, sizeof check, "op_apply %s after the moduli changed", kn);
    if (pv_upload(&mod, mod2.hc) && pv_poison(&y) &&
        BOTH(check, c->op->apply(cpu, cop, &x.c, &y.c, 0), g->op->apply(gpu, gop, &x.g, &y.g, 0)))
      pv_check(check, &y, TOL);
    /* ... and another vector after op->set_moduli */
    snprintf(check, sizeof check, "op_apply %s after op_set_moduli", kn);
    pv_upload(&mod2, p.moduli);
    if (BOTH(check, c->op->set_moduli(cpu, cop, &mod2.c), g->op->set_moduli(gpu, gop, &mod2.g)) &&
        pv_poison(&y) &&
        BOTH(check, c->op->apply(cpu, cop, &x2.c, &y.c, 0), g->op->apply(gpu, gop, &x2.g, &y.g, 0)))
      pv_check(check, &y, TOL);
    /* back to the first vector and values for the next variant */
    pv_upload(&mod, p.moduli);
    C_OK("op_set_moduli", c->op->set_moduli(cpu, cop, &mod.c));
    for (size_t e = 0; e < p.n_elements; e++) mod2.hc[e] = 0.5 + uniform(&seed);
  next:
    g->op->destroy(gpu, gop);
  }
  vox_backend_set_kernel(gpu, VOX_KERNEL_AUTO);
done:
  if (cop) c->op->destroy(cpu, cop);
  pv_destroy(&mod), pv_destroy(&mod2), pv_destroy(&x), pv_destroy(&x2), pv_destroy(&y);
  pv_destroy(&d), pv_destroy(&en), pv_destroy(&sw), pv_destroy(&sd);
  problem_free(&p);
}

/* Two operators alive at once (elasticity and conduction, different element
 * matrices), applied in turn: each product must use its own matrix. */
static void test_two_operators(const vox_grid *grid, uint64_t seed) {
  snprintf(where, sizeof where, "%s", grid_text(grid));
  const vox_backend_ops *c = cpu->ops, *g = gpu->ops;
  problem p[2];
  pvec mod, x[2], y[2];
  vox_operator *cop[2] = {NULL, NULL}, *gop[2] = {NULL, NULL};
  memset(&mod, 0, sizeof mod), memset(x, 0, sizeof x), memset(y, 0, sizeof y);
  memset(p, 0, sizeof p);
  if (!problem_make(&p[0], grid, 3, 1, seed) || !problem_make(&p[1], grid, 1, 1, seed + 1) ||
      !pv_create(&mod, p[0].n_elements))
    goto done;
  pv_upload(&mod, p[0].moduli);
  for (int i = 0; i < 2; i++) {
    const vox_operator_desc desc = problem_desc(&p[i]);
    if (!pv_create(&x[i], p[i].n_dofs) || !pv_create(&y[i], p[i].n_dofs) ||
        !C_OK("op_create", c->op->create(cpu, &desc, &cop[i])) ||
        !G_OK("op_create", g->op->create(gpu, &desc, &gop[i])) ||
        !C_OK("op_set_moduli", c->op->set_moduli(cpu, cop[i], &mod.c)) ||
        !G_OK("op_set_moduli", g->op->set_moduli(gpu, gop[i], &mod.g)))
      goto done;
    pv_random(&x[i], &seed, -0.5, 0.5);
  }
  for (int round = 0; round < 3; round++) {
    const int i = round % 2;
    char check[96];
    snprintf(check, sizeof check, "two operators alive: op_apply dpn=%d (turn %d)", i ? 1 : 3,
             round + 1);
    if (pv_poison(&y[i]) && BOTH(check, c->op->apply(cpu, cop[i], &x[i].c, &y[i].c, 0),
                                 g->op->apply(gpu, gop[i], &x[i].g, &y[i].g, 0)))
      pv_check(check, &y[i], TOL);
  }
done:
  for (int i = 0; i < 2; i++) {
    if (cop[i]) c->op->destroy(cpu, cop[i]);
    if (gop[i]) g->op->destroy(gpu, gop[i]);
    pv_destroy(&x[i]), pv_destroy(&y[i]);
    problem_free(&p[i]);
  }
  pv_destroy(&mod);
}

/* ---- SIMP and OC --------------------------------------------------------------- */

static void test_simp(size_t n) {
  snprintf(where, sizeof where, "n=%zu", n);
  const vox_backend_ops *c = cpu->ops, *g = gpu->ops;
  uint64_t seed = 77 + n;
  pvec rho, es, en, out, dc, dv, design, passive;
  pvec *all[] = {&rho, &es, &en, &out, &dc, &dv, &design, &passive};
  int ok = 1;
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) memset(all[i], 0, sizeof *all[i]);
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) ok = ok && pv_create(all[i], n);
  if (!ok) goto done;
  for (size_t e = 0; e < n; e++) { /* densities with exact 0 and 1 */
    const double r = uniform(&seed);
    rho.hc[e] = r < 0.05 ? 0 : r < 0.1 ? 1 : uniform(&seed);
    es.hc[e] = uniform(&seed) < 0.1 ? 0 : 0.5 + 1.5 * uniform(&seed);
    dc.hc[e] = -2 + 2.1 * uniform(&seed); /* mostly negative, some positive */
    design.hc[e] = uniform(&seed) < 0.8 ? 1 : 0;
    passive.hc[e] = uniform(&seed) < 0.5 ? 1 : 0;
  }
  pv_upload(&rho, rho.hc), pv_upload(&es, es.hc), pv_upload(&dc, dc.hc);
  pv_upload(&design, design.hc), pv_upload(&passive, passive.hc);
  pv_random(&en, &seed, 0, 3);
  pv_random(&dv, &seed, 0.5, 1.5);

  const double params[][2] = {{3, 1e-9}, {1, 1e-9}, {2.7, 1e-3}};
  for (size_t i = 0; i < sizeof params / sizeof params[0]; i++) {
    const double pp = params[i][0], emin = params[i][1];
    char check[96];
    snprintf(check, sizeof check, "simp_moduli p=%g emin=%g", pp, emin);
    if (pv_poison(&out) && BOTH(check, c->design->simp_moduli(cpu, &rho.c, &es.c, pp, emin, &out.c),
                                g->design->simp_moduli(gpu, &rho.g, &es.g, pp, emin, &out.g)))
      pv_check(check, &out, TOL);
    snprintf(check, sizeof check, "simp_sensitivity p=%g emin=%g", pp, emin);
    if (pv_poison(&out) &&
        BOTH(check, c->design->simp_sensitivity(cpu, &rho.c, &es.c, &en.c, pp, emin, &out.c),
             g->design->simp_sensitivity(gpu, &rho.g, &es.g, &en.g, pp, emin, &out.g)))
      pv_check(check, &out, TOL);
  }
  const double lambdas[] = {0.3, 1.0, 7.0}, qs[] = {1, 2};
  for (size_t i = 0; i < 3; i++)
    for (size_t j = 0; j < 2; j++) {
      char check[96];
      snprintf(check, sizeof check, "oc_update lambda=%g q=%g", lambdas[i], qs[j]);
      if (pv_poison(&out) &&
          BOTH(check,
               c->design->oc_update(cpu, &rho.c, &dc.c, &dv.c, &design.c, &passive.c, lambdas[i],
                                    0.2, 0.5, qs[j], 0, &out.c),
               g->design->oc_update(gpu, &rho.g, &dc.g, &dv.g, &design.g, &passive.g, lambdas[i],
                                    0.2, 0.5, qs[j], 0, &out.g)))
        pv_check(check, &out, TOL);
    }
  /* the volumes of 32 multipliers in one pass, against each other and
   * against the update at each multiplier followed by its weighted sum */
  for (size_t j = 0; j < 2; j++) {
    double lambda[VOX_OC_LAMBDAS], vc[VOX_OC_LAMBDAS], vg[VOX_OC_LAMBDAS];
    for (int k = 0; k < VOX_OC_LAMBDAS; k++) lambda[k] = 0.01 * pow(1e4, k / (VOX_OC_LAMBDAS - 1.0));
    char check[96];
    snprintf(check, sizeof check, "oc_volumes q=%g", qs[j]);
    if (!BOTH(check,
              c->design->oc_volumes(cpu, &rho.c, &dc.c, &dv.c, &design.c, &passive.c, lambda,
                                    VOX_OC_LAMBDAS, 0.2, 0.5, qs[j], 0, vc),
              g->design->oc_volumes(gpu, &rho.g, &dc.g, &dv.g, &design.g, &passive.g, lambda,
                                    VOX_OC_LAMBDAS, 0.2, 0.5, qs[j], 0, vg)))
      continue;
    for (int k = 0; k < VOX_OC_LAMBDAS; k += 7) {
      double direct;
      if (!C_OK(check, c->design->oc_update(cpu, &rho.c, &dc.c, &dv.c, &design.c, &passive.c,
                                            lambda[k], 0.2, 0.5, qs[j], 0, &out.c)) ||
          !C_OK(check, c->vec->dot(cpu, &out.c, &dv.c, &direct)))
        break;
      snprintf(check, sizeof check, "oc_volumes q=%g lambda=%.3g cuda vs cpu", qs[j], lambda[k]);
      report_scalar(check, vg[k], vc[k], fabs(vc[k]), TOL);
      snprintf(check, sizeof check, "oc_volumes q=%g lambda=%.3g vs oc_update", qs[j], lambda[k]);
      report_scalar(check, vc[k], direct, fabs(direct), TOL);
    }
  }
done:
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) pv_destroy(all[i]);
}

/* ---- symmetry ----------------------------------------------------------------- */

/* The orbit means of a random field, in place on both backends: the same
 * code adds the same values in the same order, so the same bits (tol 0). */
static void test_symmetry(const vox_grid *grid, vox_symmetry sym, uint64_t seed) {
  snprintf(where, sizeof where, "%s %s", grid_text(grid), vox_symmetry_name(sym));
  const size_t ne = (size_t)vox_grid_elements(grid);
  pvec v;
  memset(&v, 0, sizeof v);
  if (pv_create(&v, ne) && pv_random(&v, &seed, -1, 1) &&
      BOTH("symmetrize", cpu->ops->design->symmetrize(cpu, grid, sym, &v.c),
           gpu->ops->design->symmetrize(gpu, grid, sym, &v.g)))
    pv_check("symmetrize", &v, 0);
  pv_destroy(&v);
}

/* ---- filters ------------------------------------------------------------------ */

static void test_filter(const vox_grid *grid, double radius_voxels, uint64_t seed, int periodic) {
  const double radius = radius_voxels * grid->voxel_size[0];
  snprintf(where, sizeof where, "%s R=%g mm%s", grid_text(grid), radius,
           periodic ? " periodic" : "");
  const vox_backend_ops *c = cpu->ops, *g = gpu->ops;
  const size_t ne = (size_t)vox_grid_elements(grid);
  uint8_t *active = malloc(ne);
  pvec in, out, rho, dc;
  vox_filter *cf = NULL, *gf = NULL;
  memset(&in, 0, sizeof in), memset(&out, 0, sizeof out);
  memset(&rho, 0, sizeof rho), memset(&dc, 0, sizeof dc);
  if (!active || !pv_create(&in, ne) || !pv_create(&out, ne) || !pv_create(&rho, ne) ||
      !pv_create(&dc, ne))
    goto done;
  size_t n_inactive = 0;
  for (size_t e = 0; e < ne; e++) {
    active[e] = uniform(&seed) < 0.85;
    n_inactive += !active[e];
  }
  if (ne > 1 && n_inactive == 0) active[ne / 2] = 0, n_inactive = 1;
  printf("        %s: %zu of %zu elements inactive\n", where, n_inactive, ne);
  pv_random(&in, &seed, 0, 1);
  for (size_t e = 0; e < ne; e++) rho.hc[e] = uniform(&seed) < 0.1 ? 1e-4 : uniform(&seed);
  pv_upload(&rho, rho.hc);
  pv_random(&dc, &seed, -3, 0);
  if (periodic
          ? !C_OK("filter_create_periodic",
                  c->design->filter_create_periodic(cpu, grid, radius, active, &cf)) ||
                !G_OK("filter_create_periodic",
                      g->design->filter_create_periodic(gpu, grid, radius, active, &gf))
          : !C_OK("filter_create", c->design->filter_create(cpu, grid, radius, active, &cf)) ||
                !G_OK("filter_create", g->design->filter_create(gpu, grid, radius, active, &gf)))
    goto done;
  if (pv_poison(&out) && BOTH("filter_apply", c->design->filter_apply(cpu, cf, &in.c, &out.c),
                              g->design->filter_apply(gpu, gf, &in.g, &out.g)))
    pv_check("filter_apply", &out, TOL);
  if (pv_poison(&out) &&
      BOTH("filter_transpose", c->design->filter_transpose(cpu, cf, &in.c, &out.c),
           g->design->filter_transpose(gpu, gf, &in.g, &out.g)))
    pv_check("filter_transpose", &out, TOL);
  if (pv_poison(&out) && BOTH("filter_sensitivity",
                              c->design->filter_sensitivity(cpu, cf, &rho.c, &dc.c, 1e-3, &out.c),
                              g->design->filter_sensitivity(gpu, gf, &rho.g, &dc.g, 1e-3, &out.g)))
    pv_check("filter_sensitivity", &out, TOL);
done:
  if (cf) c->design->filter_destroy(cpu, cf);
  if (gf) g->design->filter_destroy(gpu, gf);
  pv_destroy(&in), pv_destroy(&out), pv_destroy(&rho), pv_destroy(&dc);
  free(active);
}

/* ---- multigrid ---------------------------------------------------------------- */

/* A stencil on both backends, with a host buffer of its values. */
typedef struct pstencil {
  vox_stencil *c, *g;
  size_t n_values;
  double *hc, *hg;
} pstencil;

static int ps_create(pstencil *s, const vox_grid *grid, int dpn, vox_precision gpu_precision) {
  memset(s, 0, sizeof *s);
  s->n_values = (size_t)vox_grid_nodes(grid) * 27 * (size_t)(dpn * dpn);
  s->hc = malloc(s->n_values * sizeof(double));
  s->hg = malloc(s->n_values * sizeof(double));
  if (!s->hc || !s->hg) {
    fail_line("setup", "out of host memory");
    return 0;
  }
  return C_OK("stencil_create",
              cpu->ops->mg->stencil_create(cpu, grid, dpn, VOX_PRECISION_DOUBLE, &s->c)) &&
         G_OK("stencil_create", gpu->ops->mg->stencil_create(gpu, grid, dpn, gpu_precision, &s->g));
}

static void ps_destroy(pstencil *s) {
  if (s->c) cpu->ops->mg->stencil_destroy(cpu, s->c);
  if (s->g) gpu->ops->mg->stencil_destroy(gpu, s->g);
  free(s->hc), free(s->hg);
  memset(s, 0, sizeof *s);
}

static void ps_check(const char *check, pstencil *s, double tol) {
  if (C_OK(check, cpu->ops->mg->stencil_download(cpu, s->c, s->hc)) &&
      G_OK(check, gpu->ops->mg->stencil_download(gpu, s->g, s->hg)))
    report(check, s->hg, s->hc, s->n_values, tol);
}

/* The CPU stencil's values into the CUDA one: the same input for the next check. */
static int ps_same(const char *check, pstencil *s) {
  return C_OK(check, cpu->ops->mg->stencil_download(cpu, s->c, s->hc)) &&
         G_OK(check, gpu->ops->mg->stencil_upload(gpu, s->g, s->hc));
}

/* The fused smoothing step and residual of a stencil (stencil_smooth,
 * stencil_residual: one kernel on CUDA) against the CPU's product followed
 * by the update, within tol of the stencil's precision. */
static void stencil_fused(const char *level, pstencil *s, size_t n, uint64_t *seed, double tol) {
  const vox_backend_ops *c = cpu->ops, *g = gpu->ops;
  char check[96];
  pvec x, b, w, d, out;
  memset(&x, 0, sizeof x), memset(&b, 0, sizeof b), memset(&w, 0, sizeof w);
  memset(&d, 0, sizeof d), memset(&out, 0, sizeof out);
  if (pv_create(&x, n) && pv_create(&b, n) && pv_create(&w, n) && pv_create(&d, n) &&
      pv_create(&out, n)) {
    pv_random(&x, seed, -0.5, 0.5);
    pv_random(&b, seed, -1, 1);
    pv_random(&w, seed, 0.5, 2);
    pv_random(&d, seed, -1, 1);
    snprintf(check, sizeof check, "%s stencil_smooth", level);
    if (pv_poison(&out) &&
        BOTH(check, c->mg->stencil_smooth(cpu, s->c, &b.c, &x.c, &w.c, 0.8, 0.3, &d.c, &out.c),
             g->mg->stencil_smooth(gpu, s->g, &b.g, &x.g, &w.g, 0.8, 0.3, &d.g, &out.g))) {
      pv_check(check, &out, tol);
      snprintf(check, sizeof check, "%s stencil_smooth d", level);
      pv_check(check, &d, tol);
    }
    snprintf(check, sizeof check, "%s stencil_smooth beta=0", level);
    if (pv_poison(&out) && pv_poison(&d) &&
        BOTH(check, c->mg->stencil_smooth(cpu, s->c, &b.c, &x.c, &w.c, 1.1, 0, &d.c, &out.c),
             g->mg->stencil_smooth(gpu, s->g, &b.g, &x.g, &w.g, 1.1, 0, &d.g, &out.g))) {
      pv_check(check, &out, tol);
      snprintf(check, sizeof check, "%s stencil_smooth beta=0 d", level);
      pv_check(check, &d, tol);
    }
    snprintf(check, sizeof check, "%s stencil_residual", level);
    if (pv_poison(&out) && BOTH(check, c->mg->stencil_residual(cpu, s->c, &b.c, &x.c, &out.c),
                                g->mg->stencil_residual(gpu, s->g, &b.g, &x.g, &out.g)))
      pv_check(check, &out, tol);
  }
  pv_destroy(&x), pv_destroy(&b), pv_destroy(&w), pv_destroy(&d), pv_destroy(&out);
}

/* multigrid.c's Lanczos loop through the backend's vector operations:
 * alpha and beta of up to `steps` steps of Jacobi-preconditioned CG on the
 * stencil (inverse diagonal w) from r = vec->random(seed); returns the
 * steps taken. */
static int lanczos_loop(vox_backend *be, vox_stencil *st, const vox_vec *w, uint64_t seed,
                        int steps, vox_vec *r, vox_vec *z, vox_vec *p, vox_vec *q, double *alpha,
                        double *beta) {
  const vox_backend_ops *o = be->ops;
  double rz, pq, rz_new;
  if (o->vec->random(be, r, seed, 0) || o->vec->mult(be, z, r, w) || o->vec->copy(be, p, z) ||
      o->vec->dot(be, r, z, &rz))
    return -1;
  int k = 0;
  while (k < steps) {
    if (o->mg->stencil_apply(be, st, p, q) || o->vec->dot(be, p, q, &pq)) return -1;
    if (!(pq > 0) || !(rz > 0)) break;
    alpha[k] = rz / pq;
    if (o->vec->axpy(be, r, -alpha[k], q) || o->vec->mult(be, z, r, w) ||
        o->vec->dot(be, r, z, &rz_new))
      return -1;
    beta[k] = rz_new / rz;
    if (o->vec->xpay(be, p, beta[k], z)) return -1;
    rz = rz_new;
    k++;
  }
  return k;
}

/* stencil_lanczos (the scalars on the device) against the same loop
 * through the CUDA backend's own vector operations, whose sums it shares
 * (to rounding: only nvcc's contractions may differ), and against the loop
 * on the CPU (the CG recurrence carries the sums' different rounding
 * along, hence the looser tolerance). */
static void stencil_lanczos_check(const char *level, pstencil *s, size_t n) {
  enum { STEPS = 12 };
  const vox_backend_ops *c = cpu->ops, *g = gpu->ops;
  const uint64_t seed = 0x9e3779b97f4a7c15u;
  char check[96];
  pvec w, r, z, p, q;
  memset(&w, 0, sizeof w), memset(&r, 0, sizeof r), memset(&z, 0, sizeof z);
  memset(&p, 0, sizeof p), memset(&q, 0, sizeof q);
  double ac[STEPS], bc[STEPS], al[STEPS], bl[STEPS], ag[STEPS], bg[STEPS];
  int kg = -1;
  snprintf(check, sizeof check, "%s stencil_lanczos", level);
  if (!pv_create(&w, n) || !pv_create(&r, n) || !pv_create(&z, n) || !pv_create(&p, n) ||
      !pv_create(&q, n) ||
      !BOTH(check, c->mg->stencil_diagonal(cpu, s->c, &w.c),
            g->mg->stencil_diagonal(gpu, s->g, &w.g)) ||
      !BOTH(check, c->vec->reciprocal(cpu, &w.c), g->vec->reciprocal(gpu, &w.g)))
    goto done;
  const int kc = lanczos_loop(cpu, s->c, &w.c, seed, STEPS, &r.c, &z.c, &p.c, &q.c, ac, bc);
  const int kl = lanczos_loop(gpu, s->g, &w.g, seed, STEPS, &r.g, &z.g, &p.g, &q.g, al, bl);
  if (!G_OK(check, g->mg->stencil_lanczos(gpu, s->g, &w.g, seed, STEPS, &r.g, &z.g, &p.g, &q.g, ag,
                                          bg, &kg)))
    goto done;
  /* A small level's CG converges within its few distinct eigenvalues, and
   * past a drop of r.z by 1e-12 (the product of the betas) its steps are
   * rounding noise, where a loop may also stop (p.q <= 0 at rounding
   * level): only the steps before that are compared, and against the CPU,
   * whose sums round differently, only the first four. */
  if (kc < 1 || kl < 1) {
    fail_line(check, "the loops took %d (cpu) and %d (cuda) steps", kc, kl);
    goto done;
  }
  const int common = kc < kl ? kc : kl;
  int sound = 0;
  for (double drop = 1; sound < common && drop > 1e-12; sound++) drop *= bc[sound];
  if (kg < sound) {
    fail_line(check, "stopped after %d steps where the loops took %d sound ones", kg, sound);
    goto done;
  }
  snprintf(check, sizeof check, "%s stencil_lanczos alpha (cuda loop)", level);
  report(check, ag, al, (size_t)sound, 1e-10);
  snprintf(check, sizeof check, "%s stencil_lanczos beta (cuda loop)", level);
  report(check, bg, bl, (size_t)sound, 1e-10);
  const size_t first = sound < 4 ? (size_t)sound : 4;
  snprintf(check, sizeof check, "%s stencil_lanczos alpha (cpu loop)", level);
  report(check, ag, ac, first, 1e-6);
  snprintf(check, sizeof check, "%s stencil_lanczos beta (cpu loop)", level);
  report(check, bg, bc, first, 1e-6);
done:
  pv_destroy(&w), pv_destroy(&r), pv_destroy(&z), pv_destroy(&p), pv_destroy(&q);
}

/* Products, diagonal and direct solve of one stencil level on the same values. */
static void stencil_level(const char *level, pstencil *s, const vox_grid *grid, int dpn,
                          uint64_t *seed, int solve) {
  const vox_backend_ops *c = cpu->ops, *g = gpu->ops;
  const size_t n = (size_t)vox_grid_nodes(grid) * (size_t)dpn;
  char check[96];
  pvec x, y, b;
  memset(&x, 0, sizeof x), memset(&y, 0, sizeof y), memset(&b, 0, sizeof b);
  /* the CUDA backend keeps the blocks from the centre on and gives back the
   * others as their neighbours' transposes, which the CPU's Galerkin sums
   * match to rounding (the stencils are symmetric) */
  snprintf(check, sizeof check, "%s stencil_upload+download", level);
  if (!ps_same(check, s)) return;
  ps_check(check, s, 1e-15);
  if (!pv_create(&x, n) || !pv_create(&y, n) || !pv_create(&b, n)) goto done;
  pv_random(&x, seed, -0.5, 0.5);
  snprintf(check, sizeof check, "%s stencil_apply", level);
  if (pv_poison(&y) && BOTH(check, c->mg->stencil_apply(cpu, s->c, &x.c, &y.c),
                            g->mg->stencil_apply(gpu, s->g, &x.g, &y.g)))
    pv_check(check, &y, TOL);
  snprintf(check, sizeof check, "%s stencil_diagonal", level);
  if (pv_poison(&y) && BOTH(check, c->mg->stencil_diagonal(cpu, s->c, &y.c),
                            g->mg->stencil_diagonal(gpu, s->g, &y.g)))
    pv_check(check, &y, TOL);
  stencil_fused(level, s, n, seed, TOL);
  if (g->mg->stencil_lanczos) stencil_lanczos_check(level, s, n);
  if (!solve) goto done;

  /* factor + solve, then a refactorisation after new values (as after each
   * Galerkin update): both with the CPU's values. The solution of a system
   * with a 1e-9 modulus contrast is ill-conditioned, so besides the
   * difference the backward error of the CUDA solution is checked:
   * ||b - A x||_inf / (||A||_inf ||x||_inf), with A applied on the CPU. */
  for (int round = 0; round < 2; round++) {
    if (round == 1) {
      for (size_t i = 0; i < s->n_values; i++) s->hc[i] *= 2.5;
      if (!C_OK("stencil_upload", c->mg->stencil_upload(cpu, s->c, s->hc)) ||
          !G_OK("stencil_upload", g->mg->stencil_upload(gpu, s->g, s->hc)))
        break;
    }
    pv_random(&b, seed, -1, 1);
    snprintf(check, sizeof check, "%s stencil_factor+solve%s", level, round ? " (refactored)" : "");
    if (!BOTH(check, c->mg->stencil_factor(cpu, s->c), g->mg->stencil_factor(gpu, s->g))) break;
    if (!pv_poison(&x) || !BOTH(check, c->mg->stencil_solve(cpu, s->c, &b.c, &x.c),
                                g->mg->stencil_solve(gpu, s->g, &b.g, &x.g)))
      break;
    pv_check(check, &x, 1e-9);
    /* backward error: A x_cuda on the CPU */
    double norm_a = 0, norm_x = 0, norm_r = 0;
    for (size_t row = 0; row < n; row++) { /* ||A||_inf from the values */
      double sum = 0;
      const size_t node = row / (size_t)dpn, r = row % (size_t)dpn;
      for (int t = 0; t < 27; t++)
        for (int col = 0; col < dpn; col++)
          sum += fabs(s->hc[((node * 27 + (size_t)t) * (size_t)dpn + r) * (size_t)dpn + (size_t)col]);
      if (sum > norm_a) norm_a = sum;
    }
    if (!C_OK(check, c->vec->upload(cpu, &y.c, x.hg)) ||
        !C_OK(check, c->mg->stencil_apply(cpu, s->c, &y.c, &x.c)) ||
        !C_OK(check, c->vec->download(cpu, &x.c, x.hc)) ||
        !C_OK(check, c->vec->download(cpu, &b.c, b.hc)))
      break;
    for (size_t i = 0; i < n; i++) {
      norm_x = fmax(norm_x, fabs(x.hg[i]));
      norm_r = fmax(norm_r, fabs(b.hc[i] - x.hc[i]));
    }
    snprintf(check, sizeof check, "%s stencil_solve backward error%s", level,
             round ? " (refactored)" : "");
    const double backward = norm_r / (norm_a * norm_x > 0 ? norm_a * norm_x : 1);
    if (backward <= 1e-12)
      ok_line(check, backward, 1e-12);
    else
      fail_line(check, "backward error %.3e > tol 1e-12 (||b - A x||_inf %.3e, ||A||_inf %.3e, "
                "||x||_inf %.3e)", backward, norm_r, norm_a, norm_x);
  }
  {
    /* The dense factorisation runs on a side stream and reports its status
     * at the next solve: new values uploaded while it may still run (the
     * upload waits for it) and negated, so indefinite, must fail at the
     * latest in the solve (a larger level's CHOLMOD factor likewise); the
     * original values, refactored at once, then solve again as on the CPU. */
    for (size_t i = 0; i < s->n_values; i++) s->hc[i] = -s->hc[i];
    snprintf(check, sizeof check, "%s indefinite stencil_factor+solve", level);
    if (!G_OK(check, g->mg->stencil_factor(gpu, s->g)) ||
        !G_OK(check, g->mg->stencil_upload(gpu, s->g, s->hc)))
      goto done;
    vox_status f = g->mg->stencil_factor(gpu, s->g);
    if (f == VOX_OK) f = g->mg->stencil_solve(gpu, s->g, &b.g, &x.g);
    if (f == VOX_ERR_INVALID_ARGUMENT)
      ok_line(check, 0, 0);
    else
      fail_line(check, "an indefinite matrix gave status %d, not %d", (int)f,
                (int)VOX_ERR_INVALID_ARGUMENT);
    for (size_t i = 0; i < s->n_values; i++) s->hc[i] = -s->hc[i];
    snprintf(check, sizeof check, "%s stencil_factor+solve after a failure", level);
    if (BOTH(check, c->mg->stencil_upload(cpu, s->c, s->hc),
             g->mg->stencil_upload(gpu, s->g, s->hc)) &&
        BOTH(check, c->mg->stencil_factor(cpu, s->c), g->mg->stencil_factor(gpu, s->g)) &&
        pv_poison(&x) &&
        BOTH(check, c->mg->stencil_solve(cpu, s->c, &b.c, &x.c),
             g->mg->stencil_solve(gpu, s->g, &b.g, &x.g)))
      pv_check(check, &x, 1e-9);
  }
done:
  pv_destroy(&x), pv_destroy(&y), pv_destroy(&b);
}

static void test_multigrid(const vox_grid *grid, int dpn, uint64_t seed) {
  snprintf(where, sizeof where, "%s dpn=%d", grid_text(grid), dpn);
  const vox_backend_ops *c = cpu->ops, *g = gpu->ops;
  const vox_grid g0 = *grid, g1 = vox_grid_coarsen(&g0), g2 = vox_grid_coarsen(&g1);
  const size_t n0 = (size_t)vox_grid_nodes(&g0) * (size_t)dpn,
               n1 = (size_t)vox_grid_nodes(&g1) * (size_t)dpn,
               n2 = (size_t)vox_grid_nodes(&g2) * (size_t)dpn;
  problem p;
  pvec mod, r0, r1, r2;
  pstencil s1, s2, u2, m1, m2;
  vox_operator *cop = NULL, *gop = NULL;
  memset(&mod, 0, sizeof mod), memset(&r0, 0, sizeof r0), memset(&r1, 0, sizeof r1);
  memset(&r2, 0, sizeof r2);
  memset(&s1, 0, sizeof s1), memset(&s2, 0, sizeof s2), memset(&u2, 0, sizeof u2);
  memset(&m1, 0, sizeof m1), memset(&m2, 0, sizeof m2);
  /* no zero moduli: the coarse levels must be positive definite to factor */
  if (!problem_make(&p, grid, dpn, 0, seed)) goto done;
  const vox_operator_desc desc = problem_desc(&p);
  printf("        %s: levels %s", where, grid_text(&g0));
  printf(" -> %s", grid_text(&g1));
  printf(" -> %s\n", grid_text(&g2));
  if (!pv_create(&mod, p.n_elements) || !pv_create(&r0, n0) || !pv_create(&r1, n1) ||
      !pv_create(&r2, n2))
    goto done;
  pv_upload(&mod, p.moduli);
  vox_backend_set_kernel(gpu, VOX_KERNEL_AUTO);
  if (!C_OK("op_create", c->op->create(cpu, &desc, &cop)) ||
      !G_OK("op_create", g->op->create(gpu, &desc, &gop)) ||
      !C_OK("op_set_moduli", c->op->set_moduli(cpu, cop, &mod.c)) ||
      !G_OK("op_set_moduli", g->op->set_moduli(gpu, gop, &mod.g)))
    goto done;

  /* transfers: coarse = R fine; fine += P coarse (into a non-zero fine vector) */
  pv_random(&r0, &seed, -1, 1);
  if (pv_poison(&r1) &&
      BOTH("restrict_residual 0->1", c->mg->restrict_residual(cpu, &g0, dpn, &r0.c, &r1.c),
           g->mg->restrict_residual(gpu, &g0, dpn, &r0.g, &r1.g)))
    pv_check("restrict_residual level 0->1", &r1, TOL);
  if (pv_poison(&r2) &&
      BOTH("restrict_residual 1->2", c->mg->restrict_residual(cpu, &g1, dpn, &r1.c, &r2.c),
           g->mg->restrict_residual(gpu, &g1, dpn, &r1.g, &r2.g)))
    pv_check("restrict_residual level 1->2", &r2, TOL);
  pv_random(&r1, &seed, -1, 1);
  if (BOTH("prolong_add 1->0", c->mg->prolong_add(cpu, &g0, dpn, &r1.c, &r0.c),
           g->mg->prolong_add(gpu, &g0, dpn, &r1.g, &r0.g)))
    pv_check("prolong_add level 1->0", &r0, TOL);
  pv_random(&r2, &seed, -1, 1);
  if (BOTH("prolong_add 2->1", c->mg->prolong_add(cpu, &g1, dpn, &r2.c, &r1.c),
           g->mg->prolong_add(gpu, &g1, dpn, &r2.g, &r1.g)))
    pv_check("prolong_add level 2->1", &r1, TOL);

  /* Galerkin operators in double */
  if (!ps_create(&s1, &g1, dpn, VOX_PRECISION_DOUBLE) ||
      !ps_create(&s2, &g2, dpn, VOX_PRECISION_DOUBLE) ||
      !ps_create(&u2, &g2, dpn, VOX_PRECISION_DOUBLE))
    goto done;
  if (BOTH("galerkin_operator", c->mg->galerkin_operator(cpu, cop, s1.c),
           g->mg->galerkin_operator(gpu, gop, s1.g)))
    ps_check("galerkin_operator level 1", &s1, TOL);
  if (BOTH("galerkin_stencil", c->mg->galerkin_stencil(cpu, s1.c, s2.c),
           g->mg->galerkin_stencil(gpu, s1.g, s2.g)))
    ps_check("galerkin_stencil level 2 (from cuda's level 1)", &s2, TOL);
  /* the same level-1 values on both: galerkin_stencil alone */
  if (ps_same("galerkin_stencil", &s1) &&
      BOTH("galerkin_stencil", c->mg->galerkin_stencil(cpu, s1.c, u2.c),
           g->mg->galerkin_stencil(gpu, s1.g, u2.g)))
    ps_check("galerkin_stencil level 2 (same level 1)", &u2, TOL);
  stencil_level("level 1", &s1, &g1, dpn, &seed, 0);
  stencil_level("level 2", &u2, &g2, dpn, &seed, 1);

  /* mixed precision: single-precision stencils on the CUDA backend (float
   * storage; FP16 storage has its own test, test_cuda_fp16.c) */
  gpu->fp16_levels = VOX_FP16_LEVELS_OFF;
  const int float_made = ps_create(&m1, &g1, dpn, VOX_PRECISION_MIXED) &&
                         ps_create(&m2, &g2, dpn, VOX_PRECISION_MIXED);
  gpu->fp16_levels = VOX_FP16_LEVELS_AUTO;
  if (!float_made) goto done;
  if (BOTH("galerkin_operator mixed", c->mg->galerkin_operator(cpu, cop, m1.c),
           g->mg->galerkin_operator(gpu, gop, m1.g)))
    ps_check("mixed galerkin_operator level 1", &m1, TOL_MIXED);
  if (BOTH("galerkin_stencil mixed", c->mg->galerkin_stencil(cpu, m1.c, m2.c),
           g->mg->galerkin_stencil(gpu, m1.g, m2.g)))
    ps_check("mixed galerkin_stencil level 2", &m2, TOL_MIXED);
  {
    /* products of the single-precision stencil (its own values, against
     * the CPU's double ones): within float rounding of the values */
    pvec x1, y1;
    memset(&x1, 0, sizeof x1), memset(&y1, 0, sizeof y1);
    if (pv_create(&x1, n1) && pv_create(&y1, n1)) {
      pv_random(&x1, &seed, -0.5, 0.5);
      if (pv_poison(&y1) &&
          BOTH("stencil_apply mixed", c->mg->stencil_apply(cpu, m1.c, &x1.c, &y1.c),
               g->mg->stencil_apply(gpu, m1.g, &x1.g, &y1.g)))
        pv_check("mixed stencil_apply level 1", &y1, 1e-5);
      if (pv_poison(&y1) &&
          BOTH("stencil_diagonal mixed", c->mg->stencil_diagonal(cpu, m1.c, &y1.c),
               g->mg->stencil_diagonal(gpu, m1.g, &y1.g)))
        pv_check("mixed stencil_diagonal level 1", &y1, TOL_MIXED);
      stencil_fused("mixed level 1", &m1, n1, &seed, 1e-5);
    }
    pv_destroy(&x1), pv_destroy(&y1);
  }
  {
    /* the coarsest solve of a single-precision level keeps its inverse
     * factor in float too: against the CPU's double factor of the double
     * values, the solution differs by float rounding amplified by the
     * level's conditioning (the 1e-9 contrast) */
    pvec b2, x2;
    memset(&b2, 0, sizeof b2), memset(&x2, 0, sizeof x2);
    if (pv_create(&b2, n2) && pv_create(&x2, n2)) {
      pv_random(&b2, &seed, -1, 1);
      if (BOTH("stencil_factor mixed", c->mg->stencil_factor(cpu, m2.c),
               g->mg->stencil_factor(gpu, m2.g)) &&
          pv_poison(&x2) &&
          BOTH("stencil_solve mixed", c->mg->stencil_solve(cpu, m2.c, &b2.c, &x2.c),
               g->mg->stencil_solve(gpu, m2.g, &b2.g, &x2.g)))
        pv_check("mixed stencil_factor+solve level 2", &x2, 1e-5);
    }
    pv_destroy(&b2), pv_destroy(&x2);
  }
done:
  if (cop) c->op->destroy(cpu, cop);
  if (gop) g->op->destroy(gpu, gop);
  pv_destroy(&mod), pv_destroy(&r0), pv_destroy(&r1), pv_destroy(&r2);
  ps_destroy(&s1), ps_destroy(&s2), ps_destroy(&u2), ps_destroy(&m1), ps_destroy(&m2);
  problem_free(&p);
}

/* ---- main ------------------------------------------------------------------------ */

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0); /* lines in order with stderr, up to a crash */
  static const char *const sections[] = {"vectors", "operator", "simp",
                                         "filter",  "symmetry", "multigrid"};
  for (int i = 1; i < argc; i++) {
    int known = 0;
    for (size_t s = 0; s < sizeof sections / sizeof sections[0]; s++)
      known |= strcmp(argv[i], sections[s]) == 0;
    if (!known) {
      fprintf(stderr, "usage: %s [vectors|operator|simp|filter|symmetry|multigrid]...\n",
              argv[0]);
      return 2;
    }
  }
  vox_context *cctx, *gctx;
  if (vox_context_create(&cctx) || vox_context_create(&gctx)) return 1;
  if (vox_backend_create(gctx, test_device(), &gpu) != VOX_OK) {
    printf("SKIP: %s\n", vox_context_message(gctx));
    vox_context_destroy(cctx), vox_context_destroy(gctx);
    return SKIP;
  }
  CHECK_OK(cctx, vox_backend_create(cctx, VOX_DEVICE_CPU, &cpu));
  if (!cpu) return 1;
  size_t free_bytes = 0, total = 0;
  if (gpu->ops->memory(gpu, &free_bytes, &total) == VOX_OK)
    printf("%s backend: %.1f of %.1f GiB device memory free\n", vox_backend_name(gpu),
           (double)free_bytes / 1073741824.0, (double)total / 1073741824.0);
  printf("check: max |cuda - cpu| / max |cpu| (tol)\n");

  const vox_grid grids[] = {
      {.nx = 13, .ny = 10, .nz = 7, .voxel_size = {1.0, 0.7, 1.3}},
      {.nx = 1, .ny = 3, .nz = 2, .voxel_size = {1, 1, 1}},
      {.nx = 37, .ny = 21, .nz = 18, .voxel_size = {1, 1, 1}}, /* many blocks and tiles */
  };
  const size_t n_grids = sizeof grids / sizeof grids[0];

  if (check_wanted(argc, argv, "vectors")) {
    printf("vectors\n");
    /* 3000017 > 4096 blocks of 256 threads: the grid-stride loops go round */
    const size_t sizes[] = {1, 7, 1000, 3000017};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) test_vectors(sizes[i]);
  }
  if (check_wanted(argc, argv, "operator")) {
    printf("operator (K u variants, diagonal, element energy)\n");
    for (size_t i = 0; i < n_grids; i++)
      for (int dpn = 3; dpn >= 1; dpn -= 2)
        test_operator(&grids[i], dpn, 31 * i + (uint64_t)dpn, 0);
    test_operator(&grids[0], 3, 77, 1); /* springs: nbn's fused steps must not skip them */
    test_two_operators(&grids[0], 99);
  }
  if (check_wanted(argc, argv, "simp")) {
    printf("SIMP and OC\n");
    test_simp(1);
    test_simp(910);
    test_simp(1500007);
  }
  if (check_wanted(argc, argv, "filter")) {
    printf("filters\n");
    const vox_grid aniso = {.nx = 11, .ny = 9, .nz = 8, .voxel_size = {1, 0.5, 2}};
    for (size_t i = 0; i < n_grids; i++) {
      vox_grid cube = grids[i];
      cube.voxel_size[0] = cube.voxel_size[1] = cube.voxel_size[2] = 1;
      test_filter(&cube, 1.5, 5 + i, 0);
      test_filter(&cube, 2.5, 7 + i, 0);
      /* periodic (Zhang et al. 2023 section 6.5): taps wrap around the faces; 4.5
       * voxels reach across the 1 x 3 x 2 grid several times and, with 401
       * taps, past constant memory */
      test_filter(&cube, 1.5, 15 + i, 1);
      test_filter(&cube, 4.5, 17 + i, 1);
    }
    test_filter(&aniso, 1.5, 11, 0);
    test_filter(&aniso, 2.5, 13, 0);
    test_filter(&aniso, 2.5, 19, 1);
  }
  if (check_wanted(argc, argv, "symmetry")) {
    printf("symmetry (orbit means of reflect3, reflect6, rotate3)\n");
    const vox_grid box = {.nx = 13, .ny = 10, .nz = 7, .voxel_size = {1, 1, 1}};
    const vox_grid cubes[] = {{.nx = 8, .ny = 8, .nz = 8, .voxel_size = {1, 1, 1}},
                              {.nx = 33, .ny = 33, .nz = 33, .voxel_size = {1, 1, 1}},
                              {.nx = 160, .ny = 160, .nz = 160, .voxel_size = {1, 1, 1}}};
    test_symmetry(&box, VOX_SYMMETRY_REFLECT3, 21);
    for (size_t i = 0; i < sizeof cubes / sizeof cubes[0]; i++)
      for (int sym = VOX_SYMMETRY_REFLECT3; sym <= VOX_SYMMETRY_ROTATE3; sym++)
        test_symmetry(&cubes[i], (vox_symmetry)sym, 23 + 3 * i + (uint64_t)sym);
  }
  if (check_wanted(argc, argv, "multigrid")) {
    printf("multigrid (Galerkin stencils, products, transfers, coarse solve; mixed precision)\n");
    /* the stencils' products both ways: a thread a row and a warp a node */
    for (int kernel = VOX_STENCIL_KERNEL_ROW; kernel <= VOX_STENCIL_KERNEL_WARP; kernel++) {
      gpu->stencil_kernel = (vox_stencil_kernel)kernel;
      printf("  stencil products: %s\n", vox_stencil_kernel_name(gpu->stencil_kernel));
      for (size_t i = 0; i < n_grids; i++)
        for (int dpn = 3; dpn >= 1; dpn -= 2)
          test_multigrid(&grids[i], dpn, 57 * i + (uint64_t)dpn);
    }
    gpu->stencil_kernel = VOX_STENCIL_KERNEL_AUTO;
  }

  vox_backend_destroy(gpu);
  vox_backend_destroy(cpu);
  vox_context_destroy(cctx), vox_context_destroy(gctx);
  if (check_failures) printf("%d check(s) failed (lines with FAIL above)\n", check_failures);
  else printf("all checks passed\n");
  CHECK_DONE();
}
