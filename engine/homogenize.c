/* SPDX-License-Identifier: BSD-3-Clause */
/* Homogenization of a periodic unit cell (Zhang et al. 2023, section 3.2). For each
 * unit macro strain e^i the cell problem K u^i = f^i, f^i = sum_e m_e Ke
 * chi^i (eq. 4, 5), is solved on the periodic grid, and
 *   C^H_ij = 1/|cell| sum_e m_e (chi^i - u^i_e)' Ke (chi^j - u^j_e)   (eq. 7),
 * the energy form, one pass over the fields (op->strain_energy_sums).
 * With fields u = u* + e that solve only to a tolerance, its error is
 * e^i' K e^j: the first-order terms are the residual K u* - f = 0 against
 * e, so C^H is second order in the fields' error. Expanding the product
 * with K u^j = f^j instead gives the dot-product form
 *   C^H_ij = 1/|cell| (q_ij sum_e m_e - f^i . u^j),   q_ij = chi^i' Ke chi^j,
 * whose error f^i . e^j is first order (kept for comparison: h->dot_form;
 * docs/engine.md). The
 * sensitivities (eq. 9) need the element products themselves: one pass of
 * op->strain_energy over the fields with the weights of the objective's
 * gradient. chi is the strain applied to element-local corner coordinates
 * (Zhang et al. 2023 after eq. 12): Ke does not see translations, so every element
 * gets the same chi. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "homogenize.h"
#include "optimizer_checkpoint.h"
#include "voxfe/element.h"

/* Displacement of local corner a under the strain of case s (Zhang et al. 2023, eq.
 * 12): unit strain s, or the hydrostatic one (VOX_HYDROSTATIC). */
static void strain_displacement(int s, const double x[3], double u[3]) {
  u[0] = u[1] = u[2] = 0;
  switch (s) {
  case VOX_HYDROSTATIC:
    u[0] = x[0], u[1] = x[1], u[2] = x[2];
    break;
  case 0: u[0] = x[0]; break;
  case 1: u[1] = x[1]; break;
  case 2: u[2] = x[2]; break;
  case 3: u[0] = x[1] / 2, u[1] = x[0] / 2; break; /* xy */
  case 4: u[1] = x[2] / 2, u[2] = x[1] / 2; break; /* yz */
  default: u[0] = x[2] / 2, u[2] = x[0] / 2; break; /* zx */
  }
}

void vox_homog_destroy(vox_homog *h) {
  if (!h) return;
  for (int s = 0; s < VOX_CASES && h->fem; s++) {
    h->fem->be->ops->host_free(h->fem->be, h->parked[s]);
    if (h->u[s].data) h->fem->be->ops->vec->destroy(h->fem->be, &h->u[s]);
    if (h->uh[s].data) h->fem->be->ops->vec->destroy(h->fem->be, &h->uh[s]);
  }
  if (h->work.data && h->fem) h->fem->be->ops->vec->destroy(h->fem->be, &h->work);
  vox_cell_solver_destroy(h->cell);
  vox_fem_destroy(h->fem);
  free(h);
}

static vox_status check_cell(vox_context *ctx, const vox_model *model) {
  const vox_grid *g = &model->grid;
  if (model->physics != VOX_PHYSICS_ELASTICITY)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "homogenization needs elasticity");
  if (g->nx % 4 || g->ny % 4 || g->nz % 4 || g->nx < 4 || g->ny < 4 || g->nz < 4)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "a periodic cell needs multiples of 4 elements along every axis "
                     "(it has %lld x %lld x %lld)",
                     (long long)g->nx, (long long)g->ny, (long long)g->nz);
  const int64_t ne = vox_grid_elements(g);
  for (int64_t e = 0; e < ne; e++)
    if (!model->label[e])
      return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                       "a periodic cell needs a material in every voxel (voxel %lld is empty); "
                       "voids are low densities", (long long)e);
  if (model->n_constraints || model->n_loads)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "a periodic cell takes no constraints or loads: the six unit strains "
                     "are its load cases");
  return VOX_OK;
}

int vox_homog_fields_for(const vox_solver_options *solver) {
  if (!vox_homog_half_fields(solver)) return VOX_HOMOG_DOUBLE;
  if (solver->rtol < VOX_CELL_SOLVER_RTOL_MIN) return VOX_HOMOG_HALF;
  return solver->cell_solver == VOX_CELL_SOLVER_ON       ? VOX_HOMOG_CELL_SOLVER
         : solver->cell_solver == VOX_CELL_SOLVER_PHASED ? VOX_HOMOG_CELL_SOLVER_PHASED
                                                         : VOX_HOMOG_HALF;
}

vox_status vox_homog_create(vox_context *ctx, vox_backend *be, const vox_model *model,
                            vox_homog **out) {
  return vox_homog_create_fields(ctx, be, model, 0, VOX_ALL_STRAINS, out);
}

int vox_homog_strain_count(unsigned strains) {
  int n = 0;
  for (int s = 0; s < VOX_CASES; s++) n += (strains >> s) & 1;
  return n;
}

/* Whether the fields of `strains` wait in host memory (homogenize.h). */
static int parks_fields(const vox_homog *h, unsigned strains) {
  return h->phased && h->cell && vox_homog_strain_count(strains) > 1;
}

/* Field i back onto the backend where it is parked in host memory. */
static vox_status field_hold(vox_homog *h, int i) {
  vox_backend *be = h->fem->be;
  if (h->uh[i].data || !h->parked[i]) return VOX_OK;
  TRY(be->ops->vec->create(be, h->fem->n_dofs, VOX_HALF, &h->uh[i]));
  return be->ops->vec->upload(be, &h->uh[i], h->parked[i]);
}

/* Field i off the backend into host memory. */
static vox_status field_park(vox_homog *h, int i) {
  vox_backend *be = h->fem->be;
  if (!h->uh[i].data) return VOX_OK;
  if (!h->parked[i])
    TRY(be->ops->host_alloc(be, h->fem->n_dofs * sizeof *h->parked[i], (void **)&h->parked[i]));
  TRY(be->ops->vec->download(be, &h->uh[i], h->parked[i]));
  be->ops->vec->destroy(be, &h->uh[i]);
  return VOX_OK;
}

/* Every kept field on or off the backend. */
static vox_status fields_hold(vox_homog *h, int hold) {
  for (int i = 0; i < VOX_CASES; i++)
    if ((h->strains >> i) & 1) TRY(hold ? field_hold(h, i) : field_park(h, i));
  return VOX_OK;
}

vox_status vox_homog_park_fields(vox_homog *h) {
  return h->phased && h->cell ? fields_hold(h, 0) : VOX_OK;
}

vox_status vox_homog_add_strains(vox_homog *h, unsigned strains) {
  return vox_homog_add_strains_zz(h, strains, 0);
}

vox_status vox_homog_add_strains_zz(vox_homog *h, unsigned strains, int from_hydrostatic) {
  vox_backend *be = h->fem->be;
  const unsigned normal = 0x7, zz = 1u << 2;
  h->zz_derived = 0;
  if (from_hydrostatic && (h->solved & VOX_HYDROSTATIC_CASE) &&
      !(strains & VOX_HYDROSTATIC_CASE) && (strains & zz) && !(h->strains & zz) &&
      ((h->strains | strains) & normal) == normal && !h->turned && !h->dot_form) {
    /* the hydrostatic field's storage handed to zz (homogenize.h): nothing
     * allocated or copied; zz_start makes the start of it */
    const int st = VOX_HYDROSTATIC;
    h->u[2] = h->u[st], h->uh[2] = h->uh[st], h->parked[2] = h->parked[st];
    h->u[st] = h->uh[st] = (vox_vec){0};
    h->parked[st] = NULL;
    h->strains = (h->strains & ~(unsigned)VOX_HYDROSTATIC_CASE) | zz;
    h->solved &= ~(unsigned)VOX_HYDROSTATIC_CASE;
    h->zz_pending = 1;
  }
  if ((h->strains & VOX_HYDROSTATIC_CASE) && !(strains & VOX_HYDROSTATIC_CASE) &&
      ((h->strains | strains) & normal) == normal) {
    const int st = VOX_HYDROSTATIC;
    if (h->u[st].data) be->ops->vec->destroy(be, &h->u[st]);
    if (h->uh[st].data) be->ops->vec->destroy(be, &h->uh[st]);
    be->ops->host_free(be, h->parked[st]);
    h->parked[st] = NULL;
    h->strains &= ~(unsigned)VOX_HYDROSTATIC_CASE;
    h->solved &= ~(unsigned)VOX_HYDROSTATIC_CASE;
  }
  const int park = parks_fields(h, h->strains | strains);
  if (park) TRY(fields_hold(h, 0));
  for (int st = 0; st < VOX_CASES; st++) {
    if (!((strains >> st) & 1) || ((h->strains >> st) & 1)) continue;
    /* zero: the first solve starts from rest (in host memory when parked) */
    if (park) {
      TRY(be->ops->host_alloc(be, h->fem->n_dofs * sizeof *h->parked[st], (void **)&h->parked[st]));
      memset(h->parked[st], 0, h->fem->n_dofs * sizeof *h->parked[st]);
    }
    if (!park)
      TRY(h->half_fields ? be->ops->vec->create(be, h->fem->n_dofs, VOX_HALF, &h->uh[st])
                         : be->ops->vec->create(be, h->fem->n_dofs, VOX_DOUBLE, &h->u[st]));
    h->strains |= 1u << st;
  }
  return VOX_OK;
}

vox_status vox_homog_create_fields(vox_context *ctx, vox_backend *be, const vox_model *model,
                                   int fields, unsigned strains, vox_homog **out) {
  const int half_fields = fields != VOX_HOMOG_DOUBLE;
  *out = NULL;
  if (strains == 0 || (strains & ~(unsigned)(VOX_ALL_STRAINS | VOX_HYDROSTATIC_CASE)))
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "homogenization: case mask 0x%x is not a non-empty part of the six unit "
                     "strains and the hydrostatic one",
                     strains);
  TRY(vox_model_validate(ctx, model));
  TRY(check_cell(ctx, model));
  vox_homog *h = calloc(1, sizeof *h);
  if (!h) return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
  /* the cell as the FE system sees it: periodic, one force vector that
   * each strain overwrites in turn, no stored displacement */
  vox_model cell = *model;
  cell.grid.periodic = 1;
  cell.n_load_cases = 1;
  cell.displacement = NULL;
  const vox_grid *g = &cell.grid;
  const vox_material *mat = vox_model_material(model, model->label[0]);
  double ke[24 * 24], nu;
  vox_status s = vox_model_poisson_ratio(ctx, model, &nu); /* one for all materials */
  if (s == VOX_OK && vox_hex8_elasticity(1.0, nu, g->voxel_size, ke) != 0)
    s = vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "bad Poisson ratio");
  /* half fields are solved by the cell solver where it applies (NULL
   * otherwise): the fem then needs no solve state of its own */
  if (s == VOX_OK && fields >= VOX_HOMOG_CELL_SOLVER)
    s = vox_cell_solver_create(be, g, ke, &h->cell);
  h->phased = fields == VOX_HOMOG_CELL_SOLVER_PHASED;
  if (h->phased && h->cell) vox_cell_solver_release(h->cell); /* until the first solve */
  if (s == VOX_OK)
    s = h->cell ? vox_fem_create_lean(ctx, be, &cell, &h->fem)
                : vox_fem_create(ctx, be, &cell, &h->fem);
  if (s == VOX_OK) {
    h->e_solid = mat->youngs_modulus;
    h->volume = (double)vox_grid_elements(g) * g->voxel_size[0] * g->voxel_size[1] *
                g->voxel_size[2];
    for (int st = 0; st < VOX_CASES; st++)
      for (int a = 0; a < 8; a++) {
        const double x[3] = {vox_hex8_corner[a][0] * g->voxel_size[0],
                             vox_hex8_corner[a][1] * g->voxel_size[1],
                             vox_hex8_corner[a][2] * g->voxel_size[2]};
        strain_displacement(st, x, h->chi + st * 24 + 3 * a);
      }
    for (int i = 0; i < VOX_STRAINS; i++)
      for (int j = 0; j < VOX_STRAINS; j++) {
        double q = 0;
        for (int r = 0; r < 24; r++)
          for (int c = 0; c < 24; c++) q += h->chi[i * 24 + r] * ke[r * 24 + c] * h->chi[j * 24 + c];
        h->q[i * VOX_STRAINS + j] = q;
      }
    for (int i = 0; i < VOX_CASES; i++)
      for (int r = 0; r < 24; r++) {
        double t = 0;
        for (int c = 0; c < 24; c++) t += ke[r * 24 + c] * h->chi[i * 24 + c];
        h->kchi[i * 24 + r] = t;
      }
  }
  h->half_fields = half_fields;
  if (s == VOX_OK) s = vox_homog_add_strains(h, strains);
  if (s == VOX_OK && half_fields && !h->cell)
    s = be->ops->vec->create(be, h->fem->n_dofs, VOX_DOUBLE, &h->work);
  if (s != VOX_OK) {
    vox_homog_destroy(h);
    return s;
  }
  *out = h;
  return VOX_OK;
}

/* The load of unit strain i and its solve into h->u[i]. A uniform cell has
 * no load: each element's Ke chi cancels at the nodes it shares, and what is
 * left is rounding. CG would then chase that noise to a relative tolerance
 * (and a single-precision preconditioner does not stay consistent at that
 * level: seen as a CG breakdown on the GPU), so a load below ZERO_LOAD of
 * its scale, sqrt(8 sum_e m_e^2) |Ke chi_i| (no node has more than 8
 * elements), is taken as zero, with the exact solution u = 0. */
static const double ZERO_LOAD = 1e-12;

vox_status vox_homog_field(vox_homog *h, int i, vox_vec **u) {
  vox_backend *be = h->fem->be;
  if (!((h->strains >> i) & 1))
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT,
                     "homogenization: the field of strain %d is not kept", i);
  if (h->cell)
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT,
                     "homogenization: the cell solver keeps its fields in half precision only");
  if (!h->half_fields) {
    *u = &h->u[i];
    return VOX_OK;
  }
  *u = &h->work;
  return be->ops->vec->copy(be, &h->work, &h->uh[i]);
}

/* mm: sum_e m_e^2, the same for every case. guess: the field is a start
 * that may be farther from the solution than rest (zz's derived start),
 * which is then dropped for rest where its residual is no smaller than the
 * load's (h->zz_derived says which). */
static vox_status solve_case(vox_homog *h, int i, double mm, const vox_solver_options *options,
                             int guess, vox_solve_result *r) {
  vox_fem *fem = h->fem;
  vox_backend *be = fem->be;
  const vox_backend_ops *o = be->ops;
  double kchi2 = 0; /* |Ke chi_i|^2 */
  for (int q = 0; q < 24; q++) kchi2 += h->kchi[24 * i + q] * h->kchi[24 * i + q];
  const double scale2 = 8 * mm * kchi2;
  if (h->cell) {
    int from_rest = 1;
    TRY(vox_cell_solver_solve_guess(h->cell, h->kchi + 24 * i, scale2, options, &h->uh[i], r,
                                    guess ? &from_rest : NULL));
    if (guess) h->zz_derived = !from_rest;
    return VOX_OK;
  }
  const double zero_ff = ZERO_LOAD * ZERO_LOAD * scale2;
  double ff;
  vox_vec *u;
  TRY(vox_homog_field(h, i, &u)); /* the warm start */
  TRY(o->op->strain_load(be, fem->op, h->chi + 24 * i, &fem->force[0]));
  TRY(o->vec->dot(be, &fem->force[0], &fem->force[0], &ff));
  if (ff <= zero_ff) {
    *r = (vox_solve_result){.iterations = 0, .residual_norm = sqrt(ff), .rhs_norm = sqrt(ff),
                            .reason = VOX_CONVERGED_RTOL};
    TRY(o->vec->set(be, u, 0));
  } else {
    if (guess) { /* its residual into CG's r, which the solve overwrites: one product */
      vox_vec *res = &fem->pcg.r;
      double rr;
      TRY(o->op->apply(be, fem->op, u, res, 0));
      TRY(o->vec->xpay(be, res, -1, &fem->force[0]));
      TRY(o->vec->dot(be, res, res, &rr));
      h->zz_derived = rr < ff;
      if (!h->zz_derived) TRY(o->vec->set(be, u, 0));
    }
    TRY(vox_fem_solve(fem, 0, u, options, r));
  }
  return h->half_fields ? o->vec->copy(be, &h->uh[i], u) : VOX_OK;
}

int vox_homog_turn_fields(vox_homog *h, int turned) {
  h->turned = turned && !h->dot_form && h->fem->be->ops->design->turn_field;
  return h->turned;
}

/* The case whose field, turned, is case i's (h->turned): the first kept
 * case of i's orbit, x -> y -> z taking xx to yy to zz and xy to yz to zx
 * (cases 0, 1, 2 and 3, 4, 5); i itself where it is the first, or where
 * nothing is turned. */
static int turned_from(const vox_homog *h, int i) {
  if (!h->turned || i >= VOX_STRAINS) return i; /* the hydrostatic case is its own orbit */
  const int first = i < 3 ? 0 : 3;
  for (int a = first; a < i; a++)
    if ((h->strains >> a) & 1) return a;
  return i;
}

int vox_homog_solved_count(const vox_homog *h) {
  int n = 0;
  for (int i = 0; i < VOX_CASES; i++) n += ((h->strains >> i) & 1) && turned_from(h, i) == i;
  return n;
}

/* Case i's field as case a's (a < i, of the same orbit) turned i - a times. */
static vox_status turn_case(vox_homog *h, int a, int i) {
  vox_backend *be = h->fem->be;
  const int parked = parks_fields(h, h->strains);
  TRY(field_hold(h, a));
  if (h->half_fields && !h->uh[i].data) /* parked: made here, its old values not needed */
    TRY(be->ops->vec->create(be, h->fem->n_dofs, VOX_HALF, &h->uh[i]));
  const vox_vec *src = h->half_fields ? &h->uh[a] : &h->u[a];
  vox_vec *dst = h->half_fields ? &h->uh[i] : &h->u[i];
  TRY(be->ops->design->turn_field(be, &h->fem->grid, i - a, src, dst));
  if (!parked) return VOX_OK;
  TRY(field_park(h, i));
  be->ops->vec->destroy(be, &h->uh[a]); /* parked as it was solved, unchanged since */
  return VOX_OK;
}

/* z - x - y of half-precision bit patterns, rounded after each
 * difference as two axpys on the backend round (the same bits). */
static void half_zz_start(uint16_t *z, const uint16_t *x, const uint16_t *y, size_t n) {
#pragma omp parallel for schedule(static)
  for (ptrdiff_t i = 0; i < (ptrdiff_t)n; i++) {
    _Float16 a, b, c;
    memcpy(&a, z + i, sizeof a), memcpy(&b, x + i, sizeof b), memcpy(&c, y + i, sizeof c);
    a = (_Float16)((double)a - (double)b);
    a = (_Float16)((double)a - (double)c);
    memcpy(z + i, &a, sizeof a);
  }
}

/* zz's start where vox_homog_add_strains_zz left the hydrostatic field in
 * zz's storage, xx and yy solved: chi_h - chi_xx - chi_yy in its place.
 * chi_h is not solved again at the current moduli first: by linearity that
 * solve's residual would be zz's from this start less the residuals of xx
 * and yy, so it would take the iterations that zz's solve takes from here,
 * and zz's solve some more after it (docs/experiments.md). */
static vox_status zz_start(vox_homog *h) {
  vox_backend *be = h->fem->be;
  const int zz = 2;
  h->zz_pending = 0;
  if (parks_fields(h, h->strains)) {
    /* phased: the fields wait in host memory between solves, where the
     * start is made from their bit patterns; the device holds no second
     * field beside the cell solver (memory_plan.c counts one) */
    for (int j = 0; j <= zz; j++) TRY(field_park(h, j));
    half_zz_start(h->parked[zz], h->parked[0], h->parked[1], h->fem->n_dofs);
    return VOX_OK;
  }
  vox_vec *f = h->half_fields ? h->uh : h->u; /* the backend's axpy takes half vectors too */
  TRY(be->ops->vec->axpy(be, &f[zz], -1, &f[0]));
  return be->ops->vec->axpy(be, &f[zz], -1, &f[1]);
}

/* e_h' C^H e_h from the unit strains' entries: sum_ij C_ij over i, j < 3. */
static double normal_sum(const double c[36]) {
  double sum = 0;
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) sum += c[i * VOX_STRAINS + j];
  return sum;
}

vox_status vox_homog_prepare(vox_homog *h) {
  vox_fem *fem = h->fem;
  TRY(fem->be->ops->vec->dot(fem->be, &fem->moduli, &fem->moduli, &h->moduli_squared));
  if (h->cell && fem->mg_stale) { /* the moduli changed: the solves make the hierarchy */
    TRY(vox_cell_solver_set_moduli(h->cell, &fem->moduli));
    fem->mg_stale = 0;
  }
  h->prepared = 1;
  return VOX_OK;
}

vox_status vox_homog_solve(vox_homog *h, const vox_solver_options *options, const vox_vec *ones,
                           double c[36], int *cg_iterations, vox_solve_result *failed) {
  vox_fem *fem = h->fem;
  vox_backend *be = fem->be;
  const vox_backend_ops *o = be->ops;
  double sum_m = 0, fu[VOX_STRAINS][VOX_STRAINS];
  if (h->dot_form && (h->half_fields || !ones || !c || (h->strains & VOX_HYDROSTATIC_CASE)))
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT,
                     "C^H's dot-product form needs the unit strains' fields in double and a "
                     "vector of ones");
  if (h->dot_form) TRY(o->vec->dot(be, &fem->moduli, ones, &sum_m));
  if (!h->prepared) TRY(vox_homog_prepare(h));
  h->prepared = 0;
  const double mm = h->moduli_squared;
  *cg_iterations = 0;
  memset(failed, 0, sizeof *failed);
  failed->reason = VOX_CONVERGED_RTOL;
  for (int i = 0; i < VOX_CASES; i++) {
    if (!((h->strains >> i) & 1)) continue;
    vox_solve_result *r = &h->last[i];
    const int a = turned_from(h, i);
    if (a != i) { /* as solved as case a's field, without an iteration of its own */
      TRY(turn_case(h, a, i));
      *r = h->last[a];
      r->iterations = 0;
      h->solved |= 1u << i;
      continue;
    }
    const int guess = i == 2 && h->zz_pending;
    if (guess) TRY(zz_start(h));
    TRY(field_hold(h, i));
    TRY(solve_case(h, i, mm, options, guess, r));
    h->solved |= 1u << i;
    if (parks_fields(h, h->strains)) TRY(field_park(h, i));
    *cg_iterations += r->iterations;
    if (r->reason < 0 && failed->reason > 0) *failed = *r;
    /* the dot-product form (unit strains only) needs f^i while it is there */
    for (int j = 0; j <= i && i < VOX_STRAINS && h->dot_form; j++)
      if ((h->strains >> j) & 1) TRY(o->vec->dot(be, &fem->force[0], &h->u[j], &fu[i][j]));
  }
  if (h->phased && h->cell) vox_cell_solver_release(h->cell);
  if (!c) return VOX_OK;
  if (!h->dot_form) return vox_homog_energy_tensor(h, c);
  for (int i = 0; i < VOX_STRAINS; i++)
    for (int j = 0; j < VOX_STRAINS; j++)
      c[i * VOX_STRAINS + j] =
          !((h->strains >> i) & (h->strains >> j) & 1)
              ? NAN
              : (h->q[i * VOX_STRAINS + j] * sum_m - (i >= j ? fu[i][j] : fu[j][i])) / h->volume;
  h->hydrostatic = normal_sum(c);
  return VOX_OK;
}

/* The kept strains in order (their number returned), with their chi side by
 * side and their fields: the arguments of the backend's strain-energy
 * kernels, which take n fields in a row. */
typedef struct packed_strains {
  int n, strain[VOX_CASES];
  double chi[VOX_CASES * 24];
  vox_vec u[VOX_CASES];
  vox_vec uh[VOX_CASES];
} packed_strains;

/* (at most six: the hydrostatic case is dropped when the normal strains
 * come, vox_homog_add_strains) */
static void pack_strains(const vox_homog *h, packed_strains *p) {
  p->n = 0;
  for (int s = 0; s < VOX_CASES; s++) {
    if (!((h->strains >> s) & 1)) continue;
    p->strain[p->n] = s;
    memcpy(p->chi + 24 * p->n, h->chi + 24 * s, 24 * sizeof *h->chi);
    p->u[p->n] = h->u[s], p->uh[p->n] = h->uh[s];
    p->n++;
  }
}

/* The cases' tensor t (e_a' C^H e_b, VOX_CASES x VOX_CASES) from parked
 * fields, a pair on the backend at a time. */
static vox_status pairwise_tensor(vox_homog *h, double *t) {
  vox_backend *be = h->fem->be;
  for (int a = 0; a < VOX_CASES; a++) {
    if (!((h->strains >> a) & 1)) continue;
    TRY(field_hold(h, a));
    for (int b = a + 1; b < VOX_CASES; b++) {
      if (!((h->strains >> b) & 1)) continue;
      TRY(field_hold(h, b));
      const vox_vec u[2] = {h->uh[a], h->uh[b]};
      double chi[48], sums[4];
      memcpy(chi, h->chi + 24 * a, 24 * sizeof *chi);
      memcpy(chi + 24, h->chi + 24 * b, 24 * sizeof *chi);
      TRY(be->ops->op->strain_energy_sums(be, h->fem->op, 2, u, chi, sums));
      t[a * VOX_CASES + a] = sums[0] / h->volume, t[a * VOX_CASES + b] = sums[1] / h->volume;
      t[b * VOX_CASES + a] = sums[2] / h->volume, t[b * VOX_CASES + b] = sums[3] / h->volume;
      TRY(field_park(h, b));
    }
    TRY(field_park(h, a));
  }
  return VOX_OK;
}

vox_status vox_homog_energy_tensor(vox_homog *h, double c[36]) {
  vox_backend *be = h->fem->be;
  double t[VOX_CASES * VOX_CASES]; /* the cases' tensor, e_a' C^H e_b */
  for (int i = 0; i < VOX_CASES * VOX_CASES; i++) t[i] = NAN;
  if (parks_fields(h, h->strains)) {
    TRY(pairwise_tensor(h, t));
  } else {
    packed_strains p;
    pack_strains(h, &p);
    double sums[VOX_CASES * VOX_CASES];
    if (h->half_fields)
      TRY(be->ops->op->strain_energy_sums(be, h->fem->op, p.n, p.uh, p.chi, sums));
    else
      TRY(be->ops->op->strain_energy_sums(be, h->fem->op, p.n, p.u, p.chi, sums));
    for (int a = 0; a < p.n; a++)
      for (int b = 0; b < p.n; b++)
        t[p.strain[a] * VOX_CASES + p.strain[b]] = sums[a * p.n + b] / h->volume;
  }
  for (int i = 0; i < VOX_STRAINS; i++)
    for (int j = 0; j < VOX_STRAINS; j++) c[i * VOX_STRAINS + j] = t[i * VOX_CASES + j];
  h->hydrostatic = h->strains & VOX_HYDROSTATIC_CASE
                       ? t[VOX_HYDROSTATIC * VOX_CASES + VOX_HYDROSTATIC]
                       : normal_sum(c);
  return VOX_OK;
}

vox_status vox_homog_gradient(vox_homog *h, const double g[36], double g_hydrostatic,
                              const vox_vec *rho, double p, double emin, vox_vec *energy,
                              vox_vec *df) {
  vox_fem *fem = h->fem;
  vox_backend *be = fem->be;
  /* simp_sensitivity gives -p rho^(p-1) (1 - emin) E energy_e: the
   * weights carry the minus sign and 1/|cell| (symmetrised: C^H is) */
  for (int i = 0; i < VOX_STRAINS; i++)
    for (int j = 0; j < VOX_STRAINS; j++)
      if (g[i * VOX_STRAINS + j] != 0 && !((h->strains >> i) & (h->strains >> j) & 1))
        return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT,
                         "homogenization: the gradient weighs C%d%d, whose strains are not "
                         "all solved", i + 1, j + 1);
  if (g_hydrostatic != 0 && !(h->strains & VOX_HYDROSTATIC_CASE))
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT,
                     "homogenization: the gradient weighs the hydrostatic case, which is not "
                     "solved");
  const int parked = parks_fields(h, h->strains);
  if (parked) TRY(fields_hold(h, 1)); /* all of them, for the one pass */
  packed_strains ps;
  pack_strains(h, &ps);
  double w[VOX_CASES * VOX_CASES];
  for (int a = 0; a < ps.n; a++)
    for (int b = 0; b < ps.n; b++) {
      const int i = ps.strain[a], j = ps.strain[b];
      /* the hydrostatic case pairs with itself only */
      const double gij = i == VOX_HYDROSTATIC || j == VOX_HYDROSTATIC
                             ? (i == j ? g_hydrostatic : 0)
                             : 0.5 * (g[i * VOX_STRAINS + j] + g[j * VOX_STRAINS + i]);
      w[a * ps.n + b] = -gij / h->volume;
    }
  if (h->half_fields)
    TRY(be->ops->op->strain_energy(be, fem->op, ps.n, ps.uh, ps.chi, w, energy));
  else
    TRY(be->ops->op->strain_energy(be, fem->op, ps.n, ps.u, ps.chi, w, energy));
  if (parked) TRY(fields_hold(h, 0));
  return be->ops->design->simp_sensitivity(be, rho, &fem->e_solid, energy, p, emin, df);
}

/* ---- derived moduli ------------------------------------------------------- */

/* Inverse of the 6x6 a by Gauss-Jordan with partial pivoting; -1 if singular. */
static int invert6(const double a[36], double inv[36]) {
  double m[6][12];
  for (int i = 0; i < 6; i++)
    for (int j = 0; j < 12; j++) m[i][j] = j < 6 ? a[i * 6 + j] : (j - 6 == i);
  for (int col = 0; col < 6; col++) {
    int piv = col;
    for (int r = col + 1; r < 6; r++)
      if (fabs(m[r][col]) > fabs(m[piv][col])) piv = r;
    if (!(fabs(m[piv][col]) > 0)) return -1;
    if (piv != col)
      for (int j = 0; j < 12; j++) {
        const double t = m[col][j];
        m[col][j] = m[piv][j], m[piv][j] = t;
      }
    const double d = m[col][col];
    for (int j = 0; j < 12; j++) m[col][j] /= d;
    for (int r = 0; r < 6; r++) {
      if (r == col) continue;
      const double f = m[r][col];
      for (int j = 0; j < 12; j++) m[r][j] -= f * m[col][j];
    }
  }
  for (int i = 0; i < 6; i++)
    for (int j = 0; j < 6; j++) inv[i * 6 + j] = m[i][j + 6];
  return 0;
}

int vox_cell_moduli_of(const double c[36], vox_cell_moduli *m) {
  memset(m, 0, sizeof *m);
  m->bulk = (c[0] + c[7] + c[14] + 2 * (c[1] + c[2] + c[8])) / 9;
  m->shear = (c[21] + c[28] + c[35]) / 3;
  double s[36];
  const int singular = invert6(c, s) != 0;
  for (int i = 0; i < 3; i++) {
    m->young[i] = singular ? NAN : 1 / s[i * 7];
    m->shear_axis[i] = singular ? NAN : 1 / s[(i + 3) * 7];
    for (int j = 0; j < 3; j++)
      m->poisson[i][j] = i == j ? 0 : singular ? NAN : -s[i * 6 + j] / s[i * 7];
  }
  return singular ? -1 : 0;
}

/* ---- the public one-shot entry ---------------------------------------------- */

vox_status vox_homogenize(vox_context *ctx, vox_backend *be, const vox_model *model,
                          int use_density, double penalty, double emin_ratio,
                          const vox_solver_options *options, double c[36],
                          vox_solve_result results[6], double *displacement) {
  TRY(vox_solver_options_check(ctx, options));
  if (use_density && !model->density)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "the model has no density");
  vox_homog *h;
  TRY(vox_homog_create(ctx, be, model, &h));
  vox_fem *fem = h->fem;
  const vox_backend_ops *o = be->ops;
  vox_vec rho = {0}, ones = {0};
  vox_status s = o->vec->create(be, fem->n_elements, VOX_DOUBLE, &ones);
  if (s == VOX_OK) s = o->vec->set(be, &ones, 1);
  if (s == VOX_OK && use_density) {
    s = o->vec->create(be, fem->n_elements, VOX_DOUBLE, &rho);
    if (s == VOX_OK) s = o->vec->upload(be, &rho, model->density);
    if (s == VOX_OK)
      s = o->design->simp_moduli(be, &rho, &fem->e_solid, penalty, emin_ratio, &fem->moduli);
    if (s == VOX_OK) s = vox_fem_update(fem);
  }
  /* the six solves and C^H, each case's own result reported */
  int cg;
  vox_solve_result failed;
  if (s == VOX_OK) s = vox_homog_solve(h, options, &ones, c, &cg, &failed);
  for (int i = 0; i < VOX_STRAINS && s == VOX_OK && results; i++) results[i] = h->last[i];
  const vox_grid *g = &fem->grid;
  for (int i = 0; i < VOX_STRAINS && s == VOX_OK && displacement; i++) {
    double *u = displacement + (size_t)i * fem->n_dofs;
    s = o->vec->download(be, &h->u[i], u);
    /* the singular system leaves a translation free: the one with u = 0
     * at the corner */
    const double shift[3] = {u[0], u[1], u[2]};
    for (size_t d = 0; d < fem->n_dofs; d++) u[d] -= shift[d % 3];
    const int64_t px = g->nx + 1, py = g->ny + 1;
    for (int64_t k = 0; k <= g->nz && s == VOX_OK; k++)
      for (int64_t j = 0; j <= g->ny; j++)
        for (int64_t a = 0; a <= g->nx; a++) {
          if (!vox_is_image(g->nx, g->ny, g->nz, a, j, k)) continue;
          const int64_t twin = ((k % g->nz) * py + j % g->ny) * px + a % g->nx;
          memcpy(u + 3 * ((k * py + j) * px + a), u + 3 * twin, 3 * sizeof *u);
        }
  }
  if (rho.data) o->vec->destroy(be, &rho);
  if (ones.data) o->vec->destroy(be, &ones);
  vox_homog_destroy(h);
  return s;
}

/* ---- checkpoints (optimizer_checkpoint.h) ---- */

/* A case's field as doubles: the values of a double field, or the bit
 * patterns of a half one (exact in a double), from where the field is
 * (the device, or host memory when parked). */
static vox_status field_save(vox_homog *h, int st, double *out) {
  vox_backend *be = h->fem->be;
  const size_t nd = h->fem->n_dofs;
  if (!h->half_fields) return be->ops->vec->download(be, &h->u[st], out);
  uint16_t *bits = h->parked[st];
  if (!bits) {
    bits = malloc(nd * sizeof *bits);
    if (!bits) return vox_error(be->ctx, VOX_ERR_NO_MEMORY, "out of memory");
    vox_status s = be->ops->vec->download(be, &h->uh[st], bits);
    if (s != VOX_OK) {
      free(bits);
      return s;
    }
  }
  for (size_t i = 0; i < nd; i++) out[i] = bits[i];
  if (bits != h->parked[st]) free(bits);
  return VOX_OK;
}

static vox_status field_restore(vox_homog *h, int st, const double *in) {
  vox_backend *be = h->fem->be;
  const size_t nd = h->fem->n_dofs;
  if (!h->half_fields) return be->ops->vec->upload(be, &h->u[st], in);
  for (size_t i = 0; i < nd; i++)
    if (!(in[i] >= 0 && in[i] <= 0xffff && in[i] == floor(in[i])))
      return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT,
                       "the checkpoint's cell field %d holds %g, not a half-precision value", st,
                       in[i]);
  uint16_t *bits = h->parked[st] ? h->parked[st] : malloc(nd * sizeof *bits);
  if (!bits) return vox_error(be->ctx, VOX_ERR_NO_MEMORY, "out of memory");
  for (size_t i = 0; i < nd; i++) bits[i] = (uint16_t)in[i];
  vox_status s = VOX_OK;
  if (bits != h->parked[st]) {
    s = be->ops->vec->upload(be, &h->uh[st], bits);
    free(bits);
  }
  return s;
}

vox_status vox_homog_save(vox_homog *h, vox_checkpoint *out) {
  vox_context *ctx = h->fem->be->ctx;
  const size_t nd = h->fem->n_dofs;
  TRY(vox_checkpoint_add_scalar(ctx, out, "cell_cases", h->strains));
  TRY(vox_checkpoint_add_scalar(ctx, out, "cell_half_fields", h->half_fields));
  for (int st = 0; st < VOX_CASES; st++) {
    if (!((h->strains >> st) & 1)) continue;
    char name[32];
    snprintf(name, sizeof name, "cell_field_%d", st);
    TRY(vox_checkpoint_add(ctx, out, name, nd, NULL));
    TRY(field_save(h, st, vox_checkpoint_find(out, name)->values));
  }
  return VOX_OK;
}

vox_status vox_homog_restore(vox_homog *h, const vox_checkpoint *state) {
  vox_context *ctx = h->fem->be->ctx;
  const vox_checkpoint_array *cases = vox_checkpoint_find(state, "cell_cases"),
                             *half = vox_checkpoint_find(state, "cell_half_fields");
  if (!cases || !half || cases->values[0] != h->strains || half->values[0] != h->half_fields)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "the checkpoint's cell fields are not those of this run (cases %g, half %g; "
                     "this run: %u, %d)",
                     cases ? cases->values[0] : -1.0, half ? half->values[0] : -1.0, h->strains,
                     h->half_fields);
  for (int st = 0; st < VOX_CASES; st++) {
    if (!((h->strains >> st) & 1)) continue;
    char name[32];
    snprintf(name, sizeof name, "cell_field_%d", st);
    const vox_checkpoint_array *a = vox_checkpoint_find(state, name);
    if (!a || a->length != h->fem->n_dofs)
      return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                       "the checkpoint has no cell field %d of %zu values", st, h->fem->n_dofs);
    TRY(field_restore(h, st, a->values));
    h->solved |= 1u << st; /* a design iteration's solve */
  }
  return VOX_OK;
}
