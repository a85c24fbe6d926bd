/* SPDX-License-Identifier: BSD-3-Clause */
/* Periodic unit cells on the CUDA backend against the CPU backend,
 * on random moduli and vectors:
 *   - the operator of a periodic grid: K u (eliminated, full, single
 *     precision), diagonal, fused smoothing step and residual, element
 *     energies, the loads of unit macro strains (op->strain_load) and the
 *     weighted strain energies of six fields (op->strain_energy) and their
 *     sums over the elements (op->strain_energy_sums), of the fields in
 *     double and stored in half precision (vec->half_store, vec->half_load), with the
 *     images held and, in a second case, random master dofs held too;
 *   - the multigrid pieces of a periodic hierarchy: Galerkin stencils from
 *     the operator and from a stencil (double and mixed), their products,
 *     fused steps and diagonals, restriction and prolongation, and whole
 *     V-cycles (hold the coarsest corner, remove the translations, dense
 *     coarse factor);
 *   - C^H of a random cell (vox_homogenize) and of a short bulk-modulus
 *     optimization of a 16^3 cell;
 *   - the single-precision cell solver: its stencils and C^H;
 *   - the clear refusals: the dbd and ebe kernels, and a Galerkin product of
 *     a periodic grid with held masters.
 * Every check prints max |cuda - cpu| / max |cpu|. Exit 77 (skipped) when
 * this build has no CUDA or the machine no device. */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_pair.h"
#include "homogenize.h"
#include "multigrid.h"
#include "symmetry_group.h"

/* double against double; single-precision products and float stencils;
 * solves to a relative residual (C^H of converged solves) */
static const double TOL = 1e-12, TOL_SINGLE = 1e-5, TOL_MIXED = 1e-6, TOL_SOLVE = 1e-7;

/* ---- a periodic problem ------------------------------------------------------ */

typedef struct problem {
  vox_grid grid;
  int dpn;
  size_t n_dofs, n_elements;
  double ke[24 * 24];
  uint8_t *fixed;
  pvec moduli;
  vox_operator *cop, *gop;
} problem;

/* Random moduli in [0.1, 1.1) with a few 1e-9 (a cell has material
 * everywhere); the images held, and with held_masters a few masters too. */
static int problem_make(problem *p, int64_t nx, int64_t ny, int64_t nz, int dpn, int held_masters,
                        uint64_t seed) {
  memset(p, 0, sizeof *p);
  p->grid = (vox_grid){.nx = nx, .ny = ny, .nz = nz, .voxel_size = {1, 1.25, 0.8}, .periodic = 1};
  snprintf(where, sizeof where, "%lldx%lldx%lld dpn=%d%s kernel %s", (long long)nx,
           (long long)ny, (long long)nz, dpn, held_masters ? " held" : "",
           vox_kernel_name(vox_backend_kernel(gpu)));
  p->dpn = dpn;
  p->n_dofs = (size_t)vox_grid_nodes(&p->grid) * (size_t)dpn;
  p->n_elements = (size_t)vox_grid_elements(&p->grid);
  p->fixed = calloc(p->n_dofs, 1);
  if (!unit_element_matrix(&p->grid, dpn, p->ke) || !p->fixed ||
      !pv_create(&p->moduli, p->n_elements))
    return 0;
  for (size_t e = 0; e < p->n_elements; e++)
    p->moduli.hc[e] = uniform(&seed) < 0.1 ? 1e-9 : 0.1 + uniform(&seed);
  for (int64_t k = 0; k <= nz; k++)
    for (int64_t j = 0; j <= ny; j++)
      for (int64_t i = 0; i <= nx; i++)
        for (int c = 0; c < dpn; c++)
          p->fixed[node_of(&p->grid, i, j, k) * dpn + c] =
              vox_is_image(nx, ny, nz, i, j, k) || (held_masters && uniform(&seed) < 0.05);
  return op_pair_create(&p->grid, dpn, p->ke, p->fixed, &p->moduli, &p->cop, &p->gop);
}

static void problem_free(problem *p) {
  op_pair_destroy(&p->cop, &p->gop);
  pv_destroy(&p->moduli);
  free(p->fixed);
  memset(p, 0, sizeof *p);
}

/* ---- the operator ------------------------------------------------------------ */

static void test_operator(int64_t nx, int64_t ny, int64_t nz, int dpn, int held, uint64_t seed) {
  const vox_backend_ops *c = cpu->ops, *g = gpu->ops;
  problem p;
  pvec x, b, y, d, w, e, u[6];
  memset(u, 0, sizeof u);
  memset(&x, 0, sizeof x), memset(&b, 0, sizeof b), memset(&y, 0, sizeof y);
  memset(&d, 0, sizeof d), memset(&w, 0, sizeof w), memset(&e, 0, sizeof e);
  if (!problem_make(&p, nx, ny, nz, dpn, held, seed)) goto done;
  if (!pv_create(&x, p.n_dofs) || !pv_create(&b, p.n_dofs) || !pv_create(&y, p.n_dofs) ||
      !pv_create(&d, p.n_dofs) || !pv_create(&w, p.n_dofs) || !pv_create(&e, p.n_elements))
    goto done;
  pv_random(&x, &seed, -0.5, 0.5); /* images too: the eliminated product must not read them */
  pv_random(&b, &seed, -0.5, 0.5);
  for (int full = 0; full <= 1; full++)
    for (int single = 0; single <= 1; single++) {
      char check[64];
      const int flags = (full ? VOX_APPLY_FULL : 0) | (single ? VOX_APPLY_SINGLE : 0);
      snprintf(check, sizeof check, "op_apply full=%d single=%d", full, single);
      if (pv_poison(&y) && BOTH(check, c->op->apply(cpu, p.cop, &x.c, &y.c, flags),
                                g->op->apply(gpu, p.gop, &x.g, &y.g, flags)))
        pv_check(check, &y, single ? TOL_SINGLE : TOL);
    }
  if (pv_poison(&d) &&
      BOTH("op_diagonal", c->op->diagonal(cpu, p.cop, &d.c), g->op->diagonal(gpu, p.gop, &d.g)))
    pv_check("op_diagonal", &d, TOL);
  for (int single = 0; single <= 1; single++) {
    char check[64];
    const int flags = single ? VOX_APPLY_SINGLE : 0;
    pv_random(&w, &seed, 0.5, 2);
    pv_random(&d, &seed, -1, 1);
    snprintf(check, sizeof check, "op_smooth single=%d", single);
    if (pv_poison(&y) &&
        BOTH(check, c->op->smooth(cpu, p.cop, &b.c, &x.c, &w.c, 0.8, 0.3, &d.c, &y.c, flags),
             g->op->smooth(gpu, p.gop, &b.g, &x.g, &w.g, 0.8, 0.3, &d.g, &y.g, flags))) {
      pv_check(check, &y, single ? TOL_SINGLE : TOL);
      strncat(check, " d", sizeof check - strlen(check) - 1);
      pv_check(check, &d, single ? TOL_SINGLE : TOL);
    }
    snprintf(check, sizeof check, "op_residual single=%d", single);
    if (pv_poison(&y) && BOTH(check, c->op->residual(cpu, p.cop, &b.c, &x.c, &y.c, flags),
                              g->op->residual(gpu, p.gop, &b.g, &x.g, &y.g, flags)))
      pv_check(check, &y, single ? TOL_SINGLE : TOL);
  }
  if (pv_poison(&e) && BOTH("op_element_energy", c->op->element_energy(cpu, p.cop, &x.c, &e.c, 0),
                            g->op->element_energy(gpu, p.gop, &x.g, &e.g, 0)))
    pv_check("op_element_energy", &e, TOL);
  if (BOTH("op_element_energy accumulate", c->op->element_energy(cpu, p.cop, &b.c, &e.c, 1),
           g->op->element_energy(gpu, p.gop, &b.g, &e.g, 1)))
    pv_check("op_element_energy accumulate", &e, TOL);

  /* strain loads and energies: random chi (the operations take any) */
  const int nloc = 8 * dpn;
  double chi[6 * 24], wts[36];
  for (int i = 0; i < 6 * 24; i++) chi[i] = uniform(&seed) - 0.5;
  for (int s = 0; s < 6 && dpn == 3; s++) {
    char check[64];
    snprintf(check, sizeof check, "op_strain_load %d", s);
    if (pv_poison(&y) && BOTH(check, c->op->strain_load(cpu, p.cop, chi + nloc * s, &y.c),
                              g->op->strain_load(gpu, p.gop, chi + nloc * s, &y.g)))
      pv_check(check, &y, TOL);
  }
  if (dpn == 1 && pv_poison(&y) &&
      BOTH("op_strain_load", c->op->strain_load(cpu, p.cop, chi, &y.c),
           g->op->strain_load(gpu, p.gop, chi, &y.g)))
    pv_check("op_strain_load", &y, TOL);
  if (dpn == 3) {
    vox_vec uc[6], ug[6];
    for (int f = 0; f < 6; f++) {
      if (!pv_create(&u[f], p.n_dofs)) goto done;
      pv_random(&u[f], &seed, -0.5, 0.5);
      uc[f] = u[f].c, ug[f] = u[f].g;
    }
    for (int n = 1; n <= 6; n += 5) { /* one field; six with a full weight matrix */
      char check[64];
      for (int i = 0; i < n * n; i++) wts[i] = uniform(&seed) - 0.3;
      snprintf(check, sizeof check, "op_strain_energy %d fields", n);
      if (pv_poison(&e) && BOTH(check, c->op->strain_energy(cpu, p.cop, n, uc, chi, wts, &e.c),
                                g->op->strain_energy(gpu, p.gop, n, ug, chi, wts, &e.g)))
        pv_check(check, &e, TOL);
    }
    /* the bulk modulus's weights: a 3 x 3 block of ones, zero elsewhere */
    for (int i = 0; i < 36; i++) wts[i] = i / 6 < 3 && i % 6 < 3 ? 1.0 / 9 : 0;
    if (pv_poison(&e) && BOTH("op_strain_energy bulk weights",
                              c->op->strain_energy(cpu, p.cop, 6, uc, chi, wts, &e.c),
                              g->op->strain_energy(gpu, p.gop, 6, ug, chi, wts, &e.g)))
      pv_check("op_strain_energy bulk weights", &e, TOL);
    /* C^H's energy form: the sums over the elements, weighted by the moduli */
    for (int n = 1; n <= 6; n += 5) {
      char check[64];
      double sc[36], sg[36];
      snprintf(check, sizeof check, "op_strain_energy_sums %d fields", n);
      if (BOTH(check, c->op->strain_energy_sums(cpu, p.cop, n, uc, chi, sc),
               g->op->strain_energy_sums(gpu, p.gop, n, ug, chi, sg)))
        report(check, sg, sc, (size_t)n * n, TOL);
    }
    /* the fields in half precision: stored alike to the bit (checked
     * through exact loads), and the half energies and their sums */
    vox_vec hc[6] = {0}, hg[6] = {0};
    int stored = 1;
    for (int f = 0; f < 6 && stored; f++) {
      stored = BOTH("vec_create half", c->vec->create(cpu, p.n_dofs, VOX_HALF, &hc[f]),
                    g->vec->create(gpu, p.n_dofs, VOX_HALF, &hg[f])) &&
               BOTH("vec_copy to half", c->vec->copy(cpu, &hc[f], &uc[f]),
                    g->vec->copy(gpu, &hg[f], &ug[f]));
      if (stored && pv_poison(&y) &&
          BOTH("vec_copy from half", c->vec->copy(cpu, &y.c, &hc[f]),
               g->vec->copy(gpu, &y.g, &hg[f])))
        pv_check("vec_copy to half and back (exact)", &y, 0);
    }
    if (stored) {
      for (int i = 0; i < 36; i++) wts[i] = uniform(&seed) - 0.3;
      if (pv_poison(&e) && BOTH("op_strain_energy_half",
                                c->op->strain_energy(cpu, p.cop, 6, hc, chi, wts, &e.c),
                                g->op->strain_energy(gpu, p.gop, 6, hg, chi, wts, &e.g)))
        pv_check("op_strain_energy_half 6 fields", &e, TOL);
      double sc[36], sg[36];
      if (BOTH("op_strain_energy_sums_half",
               c->op->strain_energy_sums(cpu, p.cop, 6, hc, chi, sc),
               g->op->strain_energy_sums(gpu, p.gop, 6, hg, chi, sg)))
        report("op_strain_energy_sums_half 6 fields", sg, sc, 36, TOL);
    }
    for (int f = 0; f < 6; f++) {
      if (hc[f].data) c->vec->destroy(cpu, &hc[f]);
      if (hg[f].data) g->vec->destroy(gpu, &hg[f]);
    }
  }
done:
  for (int f = 0; f < 6; f++) pv_destroy(&u[f]);
  pv_destroy(&x), pv_destroy(&b), pv_destroy(&y), pv_destroy(&d), pv_destroy(&w), pv_destroy(&e);
  problem_free(&p);
}

/* The kernels that do not wrap refuse a periodic grid, as does the
 * Galerkin product with held masters; each with a message. */
static void test_refusals(void) {
  problem p;
  if (!problem_make(&p, 4, 4, 4, 3, 1, 7)) {
    problem_free(&p);
    return;
  }
  const vox_operator_desc desc = {
      .grid = p.grid, .dofs_per_node = 3, .ke = p.ke, .dof_fixed = p.fixed};
  const vox_kernel refused[] = {VOX_KERNEL_DBD, VOX_KERNEL_EBE};
  for (int i = 0; i < 2; i++) {
    vox_operator *op = NULL;
    vox_backend_set_kernel(gpu, refused[i]);
    const vox_status s = gpu->ops->op->create(gpu, &desc, &op);
    if (s == VOX_ERR_UNSUPPORTED && strstr(vox_context_message(gpu->ctx), "nbn"))
      printf("  ok    %s refuses the %s kernel: %s\n", where, vox_kernel_name(refused[i]),
             vox_context_message(gpu->ctx));
    else
      fail_line("refusal", "the %s kernel on a periodic grid gave %s", vox_kernel_name(refused[i]),
                vox_status_string(s));
    if (op) gpu->ops->op->destroy(gpu, op);
  }
  vox_backend_set_kernel(gpu, VOX_KERNEL_AUTO);
  const vox_grid cg = vox_grid_coarsen(&p.grid);
  vox_stencil *st = NULL;
  if (G_OK("stencil_create",
           gpu->ops->mg->stencil_create(gpu, &cg, 3, VOX_PRECISION_DOUBLE, &st))) {
    const vox_status s = gpu->ops->mg->galerkin_operator(gpu, p.gop, st);
    if (s == VOX_ERR_UNSUPPORTED)
      printf("  ok    %s refuses a Galerkin product with held masters: %s\n", where,
             vox_context_message(gpu->ctx));
    else
      fail_line("refusal", "Galerkin product with held masters gave %s", vox_status_string(s));
    gpu->ops->mg->stencil_destroy(gpu, st);
  }
  problem_free(&p);
}

/* ---- the multigrid pieces ------------------------------------------------------ */

/* Both backends' stencils of a level compared through their downloads. */
static void stencil_check(const char *check, vox_stencil *cs, vox_stencil *gs, size_t values,
                          double tol) {
  double *hc = malloc(values * sizeof *hc), *hg = malloc(values * sizeof *hg);
  if (hc && hg && C_OK(check, cpu->ops->mg->stencil_download(cpu, cs, hc)) &&
      G_OK(check, gpu->ops->mg->stencil_download(gpu, gs, hg)))
    report(check, hg, hc, values, tol);
  free(hc), free(hg);
}

/* Products, fused steps and diagonal of one stencil level. */
static void stencil_ops(const char *level, vox_stencil *cs, vox_stencil *gs, size_t n,
                        uint64_t *seed, double tol) {
  const vox_backend_ops *c = cpu->ops, *g = gpu->ops;
  pvec x, b, y, w, d;
  char check[96];
  if (pv_create(&x, n) && pv_create(&b, n) && pv_create(&y, n) && pv_create(&w, n) &&
      pv_create(&d, n)) {
    pv_random(&x, seed, -1, 1), pv_random(&b, seed, -1, 1), pv_random(&w, seed, 0.5, 2);
    pv_random(&d, seed, -1, 1);
    snprintf(check, sizeof check, "%s stencil_apply", level);
    if (pv_poison(&y) && BOTH(check, c->mg->stencil_apply(cpu, cs, &x.c, &y.c),
                              g->mg->stencil_apply(gpu, gs, &x.g, &y.g)))
      pv_check(check, &y, tol);
    snprintf(check, sizeof check, "%s stencil_smooth", level);
    if (pv_poison(&y) &&
        BOTH(check, c->mg->stencil_smooth(cpu, cs, &b.c, &x.c, &w.c, 0.7, 0.2, &d.c, &y.c),
             g->mg->stencil_smooth(gpu, gs, &b.g, &x.g, &w.g, 0.7, 0.2, &d.g, &y.g)))
      pv_check(check, &y, tol);
    snprintf(check, sizeof check, "%s stencil_residual", level);
    if (pv_poison(&y) && BOTH(check, c->mg->stencil_residual(cpu, cs, &b.c, &x.c, &y.c),
                              g->mg->stencil_residual(gpu, gs, &b.g, &x.g, &y.g)))
      pv_check(check, &y, tol);
    snprintf(check, sizeof check, "%s stencil_diagonal", level);
    if (pv_poison(&y) &&
        BOTH(check, c->mg->stencil_diagonal(cpu, cs, &y.c), g->mg->stencil_diagonal(gpu, gs, &y.g)))
      pv_check(check, &y, tol);
  }
  pv_destroy(&x), pv_destroy(&b), pv_destroy(&y), pv_destroy(&w), pv_destroy(&d);
}

/* Levels 1 and 2 of a periodic hierarchy from random moduli, and the
 * transfers between levels 0 and 1. */
static void test_stencils(int64_t nx, int64_t ny, int64_t nz, int dpn, vox_precision precision,
                          uint64_t seed) {
  const vox_backend_ops *c = cpu->ops, *g = gpu->ops;
  const double tol = precision == VOX_PRECISION_MIXED ? TOL_MIXED : TOL;
  problem p;
  vox_stencil *c1 = NULL, *g1 = NULL, *c2 = NULL, *g2 = NULL;
  pvec f, cr;
  memset(&f, 0, sizeof f), memset(&cr, 0, sizeof cr);
  if (!problem_make(&p, nx, ny, nz, dpn, 0, seed)) goto done;
  strncat(where, precision == VOX_PRECISION_MIXED ? " mixed" : " double",
          sizeof where - strlen(where) - 1);
  const vox_grid l1 = vox_grid_coarsen(&p.grid), l2 = vox_grid_coarsen(&l1);
  const size_t n1 = (size_t)vox_grid_nodes(&l1), n2 = (size_t)vox_grid_nodes(&l2);
  const size_t bs = (size_t)dpn * (size_t)dpn;
  /* float storage in mixed precision (FP16 storage: test_cuda_fp16.c) */
  gpu->fp16_levels = VOX_FP16_LEVELS_OFF;
  const int made =
      C_OK("stencil_create", c->mg->stencil_create(cpu, &l1, dpn, VOX_PRECISION_DOUBLE, &c1)) &&
      G_OK("stencil_create", g->mg->stencil_create(gpu, &l1, dpn, precision, &g1)) &&
      C_OK("stencil_create", c->mg->stencil_create(cpu, &l2, dpn, VOX_PRECISION_DOUBLE, &c2)) &&
      G_OK("stencil_create", g->mg->stencil_create(gpu, &l2, dpn, precision, &g2));
  gpu->fp16_levels = VOX_FP16_LEVELS_AUTO;
  if (!made) goto done;
  if (BOTH("galerkin_operator", c->mg->galerkin_operator(cpu, p.cop, c1),
           g->mg->galerkin_operator(gpu, p.gop, g1)))
    stencil_check("galerkin_operator", c1, g1, n1 * 27 * bs, tol);
  if (BOTH("galerkin_stencil", c->mg->galerkin_stencil(cpu, c1, c2),
           g->mg->galerkin_stencil(gpu, g1, g2)))
    stencil_check("galerkin_stencil", c2, g2, n2 * 27 * bs, tol);
  /* the products on the CPU's values (the same on both: a float level is
   * compared against its own rounding by uploading the CUDA values) */
  {
    double *v = malloc(n1 * 27 * bs * sizeof *v);
    if (v && G_OK("stencil_download", g->mg->stencil_download(gpu, g1, v)) &&
        C_OK("stencil_upload", c->mg->stencil_upload(cpu, c1, v)))
      stencil_ops("level 1", c1, g1, n1 * (size_t)dpn, &seed, TOL);
    free(v);
  }
  /* transfers */
  if (pv_create(&f, p.n_dofs) && pv_create(&cr, n1 * (size_t)dpn)) {
    pv_random(&f, &seed, -1, 1);
    if (pv_poison(&cr) &&
        BOTH("restrict_residual", c->mg->restrict_residual(cpu, &p.grid, dpn, &f.c, &cr.c),
             g->mg->restrict_residual(gpu, &p.grid, dpn, &f.g, &cr.g)))
      pv_check("restrict_residual", &cr, TOL);
    pv_random(&cr, &seed, -1, 1);
    if (BOTH("prolong_add", c->mg->prolong_add(cpu, &p.grid, dpn, &cr.c, &f.c),
             g->mg->prolong_add(gpu, &p.grid, dpn, &cr.g, &f.g)))
      pv_check("prolong_add", &f, TOL);
  }
done:
  if (c1) c->mg->stencil_destroy(cpu, c1);
  if (g1) g->mg->stencil_destroy(gpu, g1);
  if (c2) c->mg->stencil_destroy(cpu, c2);
  if (g2) g->mg->stencil_destroy(gpu, g2);
  pv_destroy(&f), pv_destroy(&cr);
  problem_free(&p);
}

/* Whole V-cycles of a periodic hierarchy on both backends (the coarsest
 * corner held, the translations removed, the dense factor on the device):
 * z = M r for a random r without translations. */
static void test_vcycle(int64_t nx, int64_t ny, int64_t nz, vox_precision precision,
                        uint64_t seed) {
  problem p;
  vox_multigrid *cmg = NULL, *gmg = NULL;
  pvec diag, r, z, work[4];
  memset(work, 0, sizeof work);
  memset(&diag, 0, sizeof diag), memset(&r, 0, sizeof r), memset(&z, 0, sizeof z);
  if (!problem_make(&p, nx, ny, nz, 3, 0, seed)) goto done;
  strncat(where, precision == VOX_PRECISION_MIXED ? " mixed" : " double",
          sizeof where - strlen(where) - 1);
  vox_solver_options opt;
  vox_solver_options_default(&opt);
  opt.mg_coarse_dofs = 6000; /* the CPU's and the GPU's levels alike */
  opt.precision = precision;
  /* the coarsest solves differ (a dense inverse factor against CHOLMOD) by
   * the rounding of an ill-conditioned level (1e-9 moduli); in mixed
   * precision the CUDA smoother and coarse level are float, the CPU's
   * double, so only the double cycle is compared entry by entry */
  const double tol = 1e-8;
  if (!pv_create(&diag, p.n_dofs) || !pv_create(&r, p.n_dofs) || !pv_create(&z, p.n_dofs))
    goto done;
  for (int i = 0; i < 4; i++)
    if (!pv_create(&work[i], p.n_dofs)) goto done;
  if (!BOTH("op_diagonal", cpu->ops->op->diagonal(cpu, p.cop, &diag.c),
            gpu->ops->op->diagonal(gpu, p.gop, &diag.g)) ||
      !BOTH("vec_reciprocal", cpu->ops->vec->reciprocal(cpu, &diag.c),
            gpu->ops->vec->reciprocal(gpu, &diag.g)))
    goto done;
  if (!C_OK("vox_mg_create", vox_mg_create(cpu, p.cop, &p.grid, 3, 0, &opt, &cmg)) ||
      !G_OK("vox_mg_create", vox_mg_create(gpu, p.gop, &p.grid, 3, 0, &opt, &gmg)))
    goto done;
  printf("        %s: %d levels\n", where, gmg->n_levels);
  vox_vec *const cw[4] = {&work[0].c, &work[1].c, &work[2].c, &work[3].c};
  vox_vec *const gw[4] = {&work[0].g, &work[1].g, &work[2].g, &work[3].g};
  if (!BOTH("vox_mg_setup", vox_mg_setup(cmg, &diag.c, cw), vox_mg_setup(gmg, &diag.g, gw)))
    goto done;
  pv_random(&r, &seed, -1, 1);
  for (size_t dof = 0; dof < p.n_dofs; dof++)
    if (p.fixed[dof]) r.hc[dof] = 0;
  pv_upload(&r, r.hc);
  if (!BOTH("remove_translations", vox_mg_remove_translations(cmg, &r.c),
            vox_mg_remove_translations(gmg, &r.g)))
    goto done;
  for (int rep = 0; rep < 2; rep++) { /* twice: a second cycle reuses the factor */
    if (pv_poison(&z) && BOTH("vox_mg_apply", vox_mg_apply(cmg, &r.c, &z.c),
                              vox_mg_apply(gmg, &r.g, &z.g)))
      pv_check(rep ? "V-cycle (again)" : "V-cycle", &z, tol);
  }
done:
  vox_mg_destroy(cmg), vox_mg_destroy(gmg);
  for (int i = 0; i < 4; i++) pv_destroy(&work[i]);
  pv_destroy(&diag), pv_destroy(&r), pv_destroy(&z);
  problem_free(&p);
}

/* ---- C^H ----------------------------------------------------------------------- */

static int cell_model(vox_context *ctx, vox_model *m, int n, uint64_t seed) {
  vox_grid g = {.nx = n, .ny = n, .nz = n, .voxel_size = {1.0 / n, 1.0 / n, 1.0 / n}};
  vox_material solid = {.label = 1, .youngs_modulus = 1, .poisson_ratio = 0.3,
                        .role = VOX_ROLE_DESIGN};
  if (vox_model_init(ctx, m, &g) || vox_model_add_material(ctx, m, &solid)) return 0;
  const size_t ne = (size_t)n * n * n;
  memset(m->label, 1, ne);
  m->density = malloc(ne * sizeof *m->density);
  if (!m->density) return 0;
  for (size_t e = 0; e < ne; e++) m->density[e] = 0.05 + 0.95 * uniform(&seed);
  return 1;
}

static void report_tensor(const char *check, const double *g, const double *c, double tol) {
  report(check, g, c, 36, tol);
}

static void test_homogenize(vox_context *ctx, int n, vox_precision precision) {
  snprintf(where, sizeof where, "%d^3 cell %s", n, vox_precision_name(precision));
  vox_model m;
  if (!cell_model(ctx, &m, n, 99)) {
    fail_line("setup", "model: %s", vox_context_message(ctx));
    return;
  }
  vox_solver_options opt;
  vox_solver_options_default(&opt);
  opt.mg_coarse_dofs = 6000; /* the CPU's and the GPU's levels alike */
  opt.rtol = 1e-10;
  opt.precision = precision;
  double cc[36], cg[36];
  if (C_OK("vox_homogenize", vox_homogenize(ctx, cpu, &m, 1, 3, 1e-9, &opt, cc, NULL, NULL)) &&
      G_OK("vox_homogenize", vox_homogenize(ctx, gpu, &m, 1, 3, 1e-9, &opt, cg, NULL, NULL)))
    report_tensor("C^H of random densities", cg, cc, TOL_SOLVE);
  vox_model_free(&m);
}

/* The single-precision cell solver (cell_solver.h) on both backends: the
 * same per-node arithmetic (cell_kernels.h), so the same stencils to float
 * rounding and the same C^H to the solves' tolerance. */
static int cell_solve(vox_context *ctx, vox_backend *be, const vox_model *m, int n, vox_homog **h,
                      double c[36], int *iterations) {
  vox_vec rho = {0};
  const vox_backend_ops *o = be->ops;
  vox_solver_options opt;
  vox_solver_options_default(&opt);
  opt.mg_coarse_dofs = 6000; /* the CPU's and the GPU's levels alike */
  opt.rtol = 1e-5;
  vox_solve_result failed;
  const int ok =
      call_ok(vox_homog_create_fields(ctx, be, m, VOX_HOMOG_CELL_SOLVER, VOX_ALL_STRAINS, h), be,
              "cell solver", "create") &&
      call_ok(o->vec->create(be, (size_t)n * n * n, VOX_DOUBLE, &rho), be, "cell solver", "rho") &&
      call_ok(o->vec->upload(be, &rho, m->density), be, "cell solver", "rho") &&
      call_ok(o->design->simp_moduli(be, &rho, &(*h)->fem->e_solid, 3, 1e-9, &(*h)->fem->moduli),
              be, "cell solver", "moduli") &&
      call_ok(vox_fem_update((*h)->fem), be, "cell solver", "update") &&
      call_ok(vox_homog_solve(*h, &opt, NULL, c, iterations, &failed), be, "cell solver", "solve");
  if (rho.data) o->vec->destroy(be, &rho);
  if (ok && failed.reason <= 0) fail_line("cell solver", "a solve did not converge");
  return ok && (*h)->cell;
}

static void test_cell_solver(vox_context *ctx, int n) {
  snprintf(where, sizeof where, "%d^3 cell solver", n);
  vox_model m;
  if (!cell_model(ctx, &m, n, 17)) {
    fail_line("setup", "model: %s", vox_context_message(ctx));
    return;
  }
  vox_homog *hc = NULL, *hg = NULL;
  double cc[36], cg[36];
  int vc = 0, vg = 0;
  if (cell_solve(ctx, cpu, &m, n, &hc, cc, &vc) && cell_solve(ctx, gpu, &m, n, &hg, cg, &vg)) {
    printf("        CG iterations of the six strains: cpu %d cuda %d\n", vc, vg);
    for (int l = 2; l < hc->cell->desc.n_levels; l++) {
      const vox_cell_dims d = hc->cell->desc.dims[l];
      const size_t values = (size_t)VOX_CELL_BLOCK * d.nx * d.ny * d.nz;
      float *fc = malloc(values * sizeof *fc), *fg = malloc(values * sizeof *fg);
      double *dc = malloc(values * sizeof *dc), *dg = malloc(values * sizeof *dg);
      if (fc && fg && dc && dg &&
          C_OK("stencil", cpu->ops->cell->stencil_download(cpu, hc->cell->cell, l, fc)) &&
          G_OK("stencil", gpu->ops->cell->stencil_download(gpu, hg->cell->cell, l, fg))) {
        for (size_t i = 0; i < values; i++) dc[i] = fc[i], dg[i] = fg[i];
        char check[64];
        snprintf(check, sizeof check, "level-%d stencil", l);
        report(check, dg, dc, values, TOL_SINGLE);
      }
      free(fc), free(fg), free(dc), free(dg);
    }
    report_tensor("C^H (rtol 1e-5)", cg, cc, 1e-4);
  }
  vox_homog_destroy(hc), vox_homog_destroy(hg);
  vox_model_free(&m);
}

/* The short cell optimizations below: every iteration run, solves to 1e-10. */
static void cell_options(vox_optimizer_options *opt, vox_cell_objective objective, int n,
                         int iterations) {
  vox_optimizer_options_default(opt);
  opt->solver.mg_coarse_dofs = 6000; /* the CPU's and the GPU's levels alike */
  opt->cell_objective = objective;
  opt->volume_fraction = 0.3;
  opt->filter_radius = 2.0 / n;
  opt->max_iterations = iterations;
  opt->change_tolerance = 0;
  opt->solver.rtol = 1e-10;
}

/* The same optimization of the same random n^3 cell on both backends: 1
 * when both ran, the models to be freed by the caller either way. */
static int optimize_both(vox_context *ctx, int n, uint64_t seed, const vox_optimizer_options *opt,
                         vox_model *mc, vox_model *mg, vox_optimize_result *rc,
                         vox_optimize_result *rg) {
  memset(mc, 0, sizeof *mc), memset(mg, 0, sizeof *mg);
  if (!cell_model(ctx, mc, n, seed) || !cell_model(ctx, mg, n, seed)) {
    fail_line("setup", "model: %s", vox_context_message(ctx));
    return 0;
  }
  return C_OK("vox_optimize", vox_optimize(ctx, cpu, mc, opt, rc)) &&
         G_OK("vox_optimize", vox_optimize(ctx, gpu, mg, opt, rg));
}

/* A short bulk-modulus optimization on both backends: the same designs
 * within the solves' tolerance, so the same C^H. */
static void test_optimize(vox_context *ctx, int n, int iterations) {
  snprintf(where, sizeof where, "%d^3 cell, %d iterations", n, iterations);
  vox_optimizer_options opt;
  cell_options(&opt, VOX_CELL_BULK, n, iterations);
  vox_model mc, mg;
  vox_optimize_result rc, rg;
  if (optimize_both(ctx, n, 5, &opt, &mc, &mg, &rc, &rg)) {
    printf("        bulk modulus cpu %.10f cuda %.10f; CG iterations cpu %d cuda %d\n",
           rc.moduli.bulk, rg.moduli.bulk, rc.total_cg_iterations, rg.total_cg_iterations);
    if (!rc.has_tensor || !rg.has_tensor)
      fail_line("C^H", "no tensor in the result");
    else
      report_tensor("C^H after the optimization", rg.tensor, rc.tensor, TOL_SOLVE);
    report("density after the optimization", mg.density, mc.density, (size_t)n * n * n,
           TOL_SOLVE);
  }
  vox_model_free(&mc), vox_model_free(&mg);
}

/* A reflect6 design on the device stays symmetric to the bit (the
 * backend's symmetrize in the loop, Zhang et al. 2023 section 6.1), and it is the
 * CPU's design within the solves' tolerance. */
static void test_symmetric_optimize(vox_context *ctx, int n, int iterations) {
  snprintf(where, sizeof where, "%d^3 cell, reflect6, %d iterations", n, iterations);
  vox_initial_design init;
  vox_initial_design_defaults(&init);
  init.kind = VOX_INITIAL_TRIGONOMETRIC;
  init.seed = 3;
  vox_optimizer_options opt;
  cell_options(&opt, VOX_CELL_SHEAR, n, iterations);
  opt.symmetry = VOX_SYMMETRY_REFLECT6;
  opt.initial = &init;
  vox_model mc, mg;
  vox_optimize_result rc, rg;
  if (optimize_both(ctx, n, 7, &opt, &mc, &mg, &rc, &rg)) {
    vox_symmetry_group group;
    vox_symmetry_group_make(VOX_SYMMETRY_REFLECT6, &group);
    double worst = 0;
    for (int64_t e = 0; e < (int64_t)n * n * n; e++) {
      const int64_t i = e % n, j = e / n % n, k = e / ((int64_t)n * n);
      for (int m = 0; m < group.n; m++)
        worst = fmax(worst,
                     fabs(mg.density[vox_symmetry_image(&group.map[m], n, n, n, i, j, k)] -
                          mg.density[e]));
    }
    if (worst == 0)
      ok_line("the design's asymmetry", worst, 0);
    else
      fail_line("the design's asymmetry", "%.3g (not symmetric to the bit)", worst);
    report("density after the optimization", mg.density, mc.density, (size_t)n * n * n,
           TOL_SOLVE);
  }
  vox_model_free(&mc), vox_model_free(&mg);
}

/* design->turn_field on the device: the CPU's bits, double and half, one
 * and two turns. */
static void test_turn_field(int n) {
  snprintf(where, sizeof where, "%d^3 grid, turned fields", n);
  const vox_grid g = {.nx = n, .ny = n, .nz = n, .voxel_size = {1, 1, 1}, .periodic = 1};
  const size_t dofs = 3 * (size_t)vox_grid_nodes(&g);
  double *u = malloc(dofs * sizeof *u), *tc = malloc(dofs * sizeof *tc),
         *tg = malloc(dofs * sizeof *tg);
  uint64_t seed = 17;
  for (size_t i = 0; i < dofs; i++) u[i] = uniform(&seed);
  const vox_scalar scalars[2] = {VOX_DOUBLE, VOX_HALF};
  for (int si = 0; si < 2; si++)
    for (int turns = 1; turns <= 2; turns++) {
      vox_vec ac, bc, ag, bg;
      if (si == 1) /* random bits, moved as they are */
        for (size_t i = 0; i < dofs; i++) ((uint16_t *)u)[i] = (uint16_t)(uniform(&seed) * 65535);
      const int ok =
          C_OK("create", cpu->ops->vec->create(cpu, dofs, scalars[si], &ac)) &&
          C_OK("create", cpu->ops->vec->create(cpu, dofs, scalars[si], &bc)) &&
          G_OK("create", gpu->ops->vec->create(gpu, dofs, scalars[si], &ag)) &&
          G_OK("create", gpu->ops->vec->create(gpu, dofs, scalars[si], &bg)) &&
          C_OK("upload", cpu->ops->vec->upload(cpu, &ac, u)) &&
          G_OK("upload", gpu->ops->vec->upload(gpu, &ag, u)) &&
          C_OK("turn_field", cpu->ops->design->turn_field(cpu, &g, turns, &ac, &bc)) &&
          G_OK("turn_field", gpu->ops->design->turn_field(gpu, &g, turns, &ag, &bg)) &&
          C_OK("download", cpu->ops->vec->download(cpu, &bc, tc)) &&
          G_OK("download", gpu->ops->vec->download(gpu, &bg, tg));
      if (ok) {
        const size_t bytes = dofs * (si ? sizeof(uint16_t) : sizeof(double));
        char check[64];
        snprintf(check, sizeof check, "turn_field %s, %d turns", si ? "half" : "double", turns);
        if (memcmp(tc, tg, bytes) == 0)
          ok_line(check, 0, 0);
        else
          fail_line(check, "not the CPU's bits");
      }
      cpu->ops->vec->destroy(cpu, &ac), cpu->ops->vec->destroy(cpu, &bc);
      gpu->ops->vec->destroy(gpu, &ag), gpu->ops->vec->destroy(gpu, &bg);
    }
  free(u), free(tc), free(tg);
}

/* A reflect6 cell whose objective reads the three shear strains, phased
 * (its fields parked in host memory between uses) in mixed precision: one
 * strain solved a design iteration and its field turned for the other two
 * on both backends, the same C^H to the mixed solves' tolerance, and under
 * half the CG iterations of the device's run solving all three (about a
 * third). */
static void test_turned_optimize(vox_context *ctx, int n, int iterations) {
  snprintf(where, sizeof where, "%d^3 cell, reflect6, turned fields, phased, %d iterations", n,
           iterations);
  vox_optimizer_options opt;
  cell_options(&opt, VOX_CELL_SHEAR, n, iterations);
  opt.symmetry = VOX_SYMMETRY_REFLECT6;
  opt.solver.precision = VOX_PRECISION_MIXED;
  opt.solver.rtol = 1e-3; /* the cell solver's */
  opt.solver.cell_solver = VOX_CELL_SOLVER_PHASED;
  vox_optimizer_options solved = opt;
  solved.cell_turned_fields = 0;
  vox_model mc, mg, ms;
  memset(&ms, 0, sizeof ms);
  vox_optimize_result rc, rg, rs;
  if (optimize_both(ctx, n, 13, &opt, &mc, &mg, &rc, &rg) && cell_model(ctx, &ms, n, 13) &&
      G_OK("vox_optimize", vox_optimize(ctx, gpu, &ms, &solved, &rs))) {
    printf("        shear modulus cpu %.10f cuda %.10f (every strain solved %.10f); CG "
           "iterations cpu %d cuda %d (every strain solved %d)\n",
           rc.moduli.shear, rg.moduli.shear, rs.moduli.shear, rc.total_cg_iterations,
           rg.total_cg_iterations, rs.total_cg_iterations);
    if (!rc.cell_turned || !rg.cell_turned || rs.cell_turned)
      fail_line("turned fields", "cpu %d cuda %d, solved %d", rc.cell_turned, rg.cell_turned,
                rs.cell_turned);
    if (!rg.cell_solver) fail_line("cell solver", "not used");
    report_tensor("C^H, turned, cuda against cpu", rg.tensor, rc.tensor, TOL_MIXED);
    if (2 * rg.total_cg_iterations >= rs.total_cg_iterations)
      fail_line("CG iterations", "%d turned against %d solved", rg.total_cg_iterations,
                rs.total_cg_iterations);
  }
  vox_model_free(&mc), vox_model_free(&mg), vox_model_free(&ms);
}

/* The phased cell solve (--cell-solver phased) on the device: the run of
 * the solver kept on it (the same kernels in the same order; the vectors
 * and fields only wait in host memory between them), and the CPU's phased
 * run within the cell solver's tolerance. */
static void test_phased_optimize(vox_context *ctx, int n, int iterations) {
  snprintf(where, sizeof where, "%d^3 cell, phased, %d iterations", n, iterations);
  vox_optimizer_options opt;
  cell_options(&opt, VOX_CELL_BULK, n, iterations);
  opt.solver.precision = VOX_PRECISION_MIXED;
  opt.solver.rtol = 1e-3; /* the cell solver's (at least VOX_CELL_SOLVER_RTOL_MIN) */
  opt.solver.cell_solver = VOX_CELL_SOLVER_PHASED;
  vox_model mc, mg, mk;
  memset(&mk, 0, sizeof mk);
  vox_optimize_result rc, rg, rk;
  vox_optimizer_options kept = opt;
  kept.solver.cell_solver = VOX_CELL_SOLVER_ON;
  if (optimize_both(ctx, n, 11, &opt, &mc, &mg, &rc, &rg) && cell_model(ctx, &mk, n, 11) &&
      G_OK("vox_optimize", vox_optimize(ctx, gpu, &mk, &kept, &rk))) {
    printf("        bulk modulus cpu %.10f cuda %.10f (kept %.10f); CG iterations cpu %d cuda %d "
           "(kept %d)\n",
           rc.moduli.bulk, rg.moduli.bulk, rk.moduli.bulk, rc.total_cg_iterations,
           rg.total_cg_iterations, rk.total_cg_iterations);
    if (!rg.cell_solver || !rk.cell_solver) fail_line("cell solver", "not used");
    report_tensor("C^H, phased against kept", rg.tensor, rk.tensor, TOL);
    report("density, phased against kept", mg.density, mk.density, (size_t)n * n * n, TOL);
    report_tensor("C^H, phased, cuda against cpu", rg.tensor, rc.tensor, TOL_MIXED);
  }
  vox_model_free(&mc), vox_model_free(&mg), vox_model_free(&mk);
}

/* The backend's axpy of half vectors (y half, x half or double, and y
 * double, x half; the cell's final evaluation makes zz's start so): the
 * CPU's bits. */
static void test_axpy_half(int n) {
  snprintf(where, sizeof where, "%d values, axpy of half vectors", n);
  const vox_scalar ys[3] = {VOX_HALF, VOX_HALF, VOX_DOUBLE},
                   xs[3] = {VOX_HALF, VOX_DOUBLE, VOX_HALF};
  double *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
  uint64_t yc[4096], yg[4096]; /* up to n doubles or halves */
  uint64_t seed = 23;
  for (int i = 0; i < n; i++) a[i] = 4 * (uniform(&seed) - 0.5), b[i] = 3 * (uniform(&seed) - 0.5);
  for (int t = 0; t < 3 && n <= 4096; t++) {
    vox_backend *be[2] = {cpu, gpu};
    int ok = 1;
    for (int k = 0; k < 2 && ok; k++) {
      const vox_backend_ops *o = be[k]->ops;
      vox_vec v[4]; /* a, b in double; y, x */
      memset(v, 0, sizeof v);
      ok = o->vec->create(be[k], n, VOX_DOUBLE, &v[0]) == VOX_OK &&
           o->vec->create(be[k], n, VOX_DOUBLE, &v[1]) == VOX_OK &&
           o->vec->create(be[k], n, ys[t], &v[2]) == VOX_OK &&
           o->vec->create(be[k], n, xs[t], &v[3]) == VOX_OK &&
           o->vec->upload(be[k], &v[0], a) == VOX_OK && o->vec->upload(be[k], &v[1], b) == VOX_OK &&
           o->vec->copy(be[k], &v[2], &v[0]) == VOX_OK &&
           o->vec->copy(be[k], &v[3], &v[1]) == VOX_OK &&
           o->vec->axpy(be[k], &v[2], -1, &v[3]) == VOX_OK &&
           o->vec->axpy(be[k], &v[2], 0.7, &v[3]) == VOX_OK &&
           o->vec->download(be[k], &v[2], k ? (void *)yg : (void *)yc) == VOX_OK;
      for (int i = 0; i < 4; i++)
        if (v[i].raw) o->vec->destroy(be[k], &v[i]);
    }
    char check[64];
    snprintf(check, sizeof check, "axpy, y %s, x %s", ys[t] == VOX_HALF ? "half" : "double",
             xs[t] == VOX_HALF ? "half" : "double");
    if (!ok)
      fail_line(check, "a vector operation failed");
    else if (memcmp(yc, yg, (size_t)n * (ys[t] == VOX_HALF ? 2 : 8)) == 0)
      ok_line(check, 0, 0);
    else
      fail_line(check, "not the CPU's bits");
  }
  free(a), free(b);
}

/* The final evaluation's zz started from the hydrostatic field
 * (cell_zz_from_hydrostatic) on the device, with fields in double, with
 * the cell solver and phased: the start taken on both backends, C^H the
 * CPU's and that of the device's run from rest to the solves' tolerance,
 * and fewer CG iterations in the final evaluation than from rest. */
static void test_zz_optimize(vox_context *ctx, int n, int iterations) {
  vox_initial_design init;
  vox_initial_design_defaults(&init);
  init.kind = VOX_INITIAL_TRIGONOMETRIC;
  init.seed = 3;
  static const char *names[] = {"double", "cell solver", "cell solver phased"};
  for (int fields = 0; fields < 3; fields++) {
    snprintf(where, sizeof where, "%d^3 cell, zz from the hydrostatic field, %s, %d iterations",
             n, names[fields], iterations);
    vox_optimizer_options opt;
    cell_options(&opt, VOX_CELL_BULK, n, iterations);
    opt.initial = &init;
    opt.continuation = 0;
    opt.move_limit = 0.002; /* a small last update, as near a run's end */
    if (fields) {
      opt.solver.precision = VOX_PRECISION_MIXED;
      opt.solver.rtol = 1e-3; /* the cell solver's */
      opt.solver.cell_solver = fields == 1 ? VOX_CELL_SOLVER_ON : VOX_CELL_SOLVER_PHASED;
    }
    vox_optimizer_options rest = opt;
    rest.cell_zz_from_hydrostatic = 0;
    vox_model mc, mg, mr;
    memset(&mr, 0, sizeof mr);
    vox_optimize_result rc, rg, rr;
    if (optimize_both(ctx, n, 19, &opt, &mc, &mg, &rc, &rg) && cell_model(ctx, &mr, n, 19) &&
        G_OK("vox_optimize", vox_optimize(ctx, gpu, &mr, &rest, &rr))) {
      printf("        final evaluation's CG iterations cpu %d cuda %d, from rest %d; bulk "
             "modulus cuda %.10f, from rest %.10f\n",
             rc.final_cg_iterations, rg.final_cg_iterations, rr.final_cg_iterations,
             rg.moduli.bulk, rr.moduli.bulk);
      if (!rc.cell_zz_derived || !rg.cell_zz_derived || rr.cell_zz_derived)
        fail_line("zz's start", "cpu %d cuda %d, from rest %d", rc.cell_zz_derived,
                  rg.cell_zz_derived, rr.cell_zz_derived);
      if (fields && (!rg.cell_solver || !rc.cell_solver)) fail_line("cell solver", "not used");
      const double tol = fields ? TOL_MIXED : TOL_SOLVE;
      report_tensor("C^H, cuda against cpu", rg.tensor, rc.tensor, tol);
      /* from rest, zz is another solution to the cell solver's 1e-3: C^H,
       * an energy, moves by about its square (1.2e-6 on an H100) */
      report_tensor("C^H, cuda against cuda from rest", rg.tensor, rr.tensor,
                    fields ? TOL_SINGLE : TOL_SOLVE);
      if (rg.final_cg_iterations >= rr.final_cg_iterations)
        fail_line("CG iterations", "%d with zz from the hydrostatic field against %d from rest",
                  rg.final_cg_iterations, rr.final_cg_iterations);
    }
    vox_model_free(&mc), vox_model_free(&mg), vox_model_free(&mr);
  }
}

int main(void) {
  vox_context *ctx;
  if (vox_context_create(&ctx) != VOX_OK) return 1;
  if (vox_backend_create(ctx, test_device(), &gpu) != VOX_OK) {
    printf("skipped: %s\n", vox_context_message(ctx));
    vox_context_destroy(ctx);
    return SKIP;
  }
  vox_context *cpu_ctx;
  if (vox_context_create(&cpu_ctx) != VOX_OK || vox_backend_create(cpu_ctx, VOX_DEVICE_CPU, &cpu))
    return 1;
  printf("periodic cells: %s against cpu\n", vox_backend_name(gpu));

  test_operator(8, 6, 4, 3, 0, 1);
  test_operator(10, 2, 6, 3, 0, 2); /* an axis of 2 elements: two offsets, one node */
  test_operator(8, 6, 4, 3, 1, 3);
  test_operator(8, 6, 4, 1, 0, 4);
  test_operator(40, 16, 34, 3, 1, 10); /* the modes kernel's blocks on every axis */
  vox_backend_set_kernel(gpu, VOX_KERNEL_NBN); /* auto takes modes for elasticity */
  test_operator(8, 6, 4, 3, 0, 1);
  test_operator(10, 2, 6, 3, 0, 2);
  test_operator(40, 16, 34, 3, 1, 10);
  vox_backend_set_kernel(gpu, VOX_KERNEL_AUTO);
  if (strcmp(vox_backend_name(gpu), "cpu") != 0) test_refusals();
  test_stencils(16, 8, 12, 3, VOX_PRECISION_DOUBLE, 5);
  test_stencils(16, 8, 12, 3, VOX_PRECISION_MIXED, 6);
  test_stencils(8, 4, 8, 1, VOX_PRECISION_DOUBLE, 7);
  test_stencils(8, 4, 8, 3, VOX_PRECISION_DOUBLE, 8); /* level 2 has axes of 1 element */
  test_vcycle(64, 32, 32, VOX_PRECISION_DOUBLE, 9);
  test_homogenize(ctx, 12, VOX_PRECISION_DOUBLE);
  test_homogenize(ctx, 12, VOX_PRECISION_MIXED);
  test_cell_solver(ctx, 32);
  test_optimize(ctx, 16, 4);
  test_symmetric_optimize(ctx, 8, 3);
  test_phased_optimize(ctx, 32, 3);
  test_turn_field(12);
  test_turned_optimize(ctx, 32, 3);
  test_axpy_half(4096);
  test_zz_optimize(ctx, 16, 10);

  vox_backend_destroy(cpu), vox_backend_destroy(gpu);
  vox_context_destroy(cpu_ctx), vox_context_destroy(ctx);
  printf("%s\n", check_failures ? "FAILED" : "all passed");
  return check_failures ? 1 : 0;
}
