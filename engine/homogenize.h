/* SPDX-License-Identifier: BSD-3-Clause */
/* The cell problems of a periodic unit cell (up to six unit strains) on a
 * backend (private), for vox_homogenize and the optimizer's homogenization
 * objectives (Zhang et al. 2023, eq. 4-9). */
#ifndef VOXFE_HOMOGENIZE_PRIVATE_H
#define VOXFE_HOMOGENIZE_PRIVATE_H

#include "cell_solver.h"
#include "fem.h"
#include "voxfe/homogenize.h"

/* The load cases of a cell: the six unit strains (Voigt order xx yy zz xy
 * yz zx) and the hydrostatic strain e_h = (1, 1, 1, 0, 0, 0), whose one
 * field gives e_h' C^H e_h = 9 B (the bulk modulus of Zhang et al. 2023, eq. 19) and
 * its sensitivities: by linearity its field is the sum of the first three,
 * and sum_ij dC_ij/drho over i, j < 3 is the SIMP derivative of its element
 * energy, so the bulk objective solves one case instead of three. */
enum {
  VOX_STRAINS = 6,
  VOX_ALL_STRAINS = (1u << VOX_STRAINS) - 1,
  VOX_HYDROSTATIC = 6,
  VOX_HYDROSTATIC_CASE = 1u << VOX_HYDROSTATIC,
  VOX_CASES = 7
};

typedef struct vox_homog {
  vox_fem *fem;              /* periodic grid, one force vector */
  /* The cases solved and kept (bit s for case s: the unit strains, and
   * VOX_HYDROSTATIC_CASE): an objective that reads only some entries of C^H
   * solves only the cases they need (vox_cell_objective_strains); the
   * fields of the others are not allocated, and their entries of C^H come
   * out NaN. */
  unsigned strains;
  /* periodic fluctuations, the warm starts of the next solves: in double
   * (u), or in half precision (uh, with one double vector `work` that each
   * solve loads its field into and stores back from); only those of
   * `strains` are allocated */
  int half_fields;
  vox_vec u[VOX_CASES];
  vox_vec uh[VOX_CASES];
  vox_vec work;
  /* the single-precision cell solver (cell_solver.h) that solves the half
   * fields where the backend and the grid allow (then fem is lean and there
   * is no work vector), NULL otherwise */
  vox_cell_solver *cell;
  int phased; /* the cell solver's memory is released after each vox_homog_solve */
  /* phased with more than one case kept: the fields wait in host memory
   * between uses (their bit patterns; NULL: on the device), and C^H is
   * summed pair by pair, so that the device holds one field while a solve
   * runs and two while C^H is summed (all of them for the gradient) */
  uint16_t *parked[VOX_CASES];
  double kchi[VOX_CASES * 24];         /* Ke chi_i, unit modulus: the loads' element vectors */
  double chi[VOX_CASES * 24];          /* element displacements of the cases' strains */
  double q[VOX_STRAINS * VOX_STRAINS]; /* chi_i' Ke chi_j, unit modulus */
  vox_solve_result last[VOX_CASES];    /* each case's solve in the last vox_homog_solve */
  /* e_h' C^H e_h after the last vox_homog_energy_tensor: from the
   * hydrostatic field where it is kept, else the sum of C_ij over i, j < 3
   * (NaN where those are not all solved) */
  double hydrostatic;
  /* vox_homog_prepare's: sum_e m_e^2 of the moduli (the loads' scale) and
   * whether it ran since the last vox_homog_solve */
  double moduli_squared;
  int prepared;
  double volume;             /* of the cell */
  double e_solid;            /* the material's E */
  int dot_form;              /* C^H in the dot-product form (first order in the fields'
                              * error) instead of the energy form (second order; 0, the
                              * default): homogenize.c */
  /* The cell and its moduli are unchanged by a turn about the diagonal, x
   * -> y -> z (a design of symmetry reflect6 or rotate3): of the kept
   * strains of each orbit {xx, yy, zz} and {xy, yz, zx}, the first is
   * solved and the others' fields are its field turned (design->turn_field),
   * the exact solutions of their problems where its field is one of its own.
   * Set by the caller (vox_homog_turn_fields); 0 solves every case. */
  int turned;
  /* The cases whose fields hold a solve (vox_homog_solve's, or a
   * checkpoint's), not the zero start that vox_homog_add_strains gives. */
  unsigned solved;
  /* vox_homog_add_strains_zz left the hydrostatic field in zz's storage,
   * for the next vox_homog_solve to make zz's start of it; and how that
   * solve started zz: 1 from chi_h - chi_xx - chi_yy, 0 from rest (not
   * derived, or the derived start no nearer than rest). */
  int zz_pending;
  int zz_derived;
} vox_homog;

/* Checks the cell and builds the system: model's labels and material, its
 * grid taken as periodic; all six strains, their fields in double. */
vox_status vox_homog_create(vox_context *ctx, vox_backend *be, const vox_model *model,
                            vox_homog **out);
/* How the fields are kept and solved (vox_homog_fields_for): in double
 * with fem.c's CG; in half precision with fem.c's CG (through a double work
 * vector); in half precision with the single-precision cell solver
 * (cell_solver.h) where the backend and the grid allow, else as
 * VOX_HOMOG_HALF. */
enum {
  VOX_HOMOG_DOUBLE = 0,
  VOX_HOMOG_HALF = 1,
  VOX_HOMOG_CELL_SOLVER = 2,
  VOX_HOMOG_CELL_SOLVER_PHASED = 3 /* its backend memory released after each vox_homog_solve */
};
/* The same for the cases `strains` (a non-empty mask of VOX_ALL_STRAINS |
 * VOX_HYDROSTATIC_CASE), their fields kept as `fields` says. */
vox_status vox_homog_create_fields(vox_context *ctx, vox_backend *be, const vox_model *model,
                                   int fields, unsigned strains, vox_homog **out);
/* Adds the cases of `strains` not yet kept, their fields zero (the next
 * solve starts them from rest): the optimizer's final evaluation, which
 * reports the whole C^H. Once the three normal strains are kept, the
 * hydrostatic case is dropped (unless `strains` asks for it): its energy
 * is then theirs, and its field is freed before theirs are made. */
vox_status vox_homog_add_strains(vox_homog *h, unsigned strains);
/* The same, with zz's field started from the hydrostatic one where
 * `from_hydrostatic` asks and it applies: the hydrostatic case kept and
 * solved (h->solved: the last design iteration's field, of the design
 * before the last update), zz not kept and `strains` bringing it and the
 * other normal strains, no turned fields (zz is then xx turned and solves
 * nothing) nor the dot-product form (double fields of unit strains only).
 * The hydrostatic field's storage then becomes zz's (never a seventh
 * field), the others come from rest, and the next vox_homog_solve, once xx
 * and yy are solved, makes zz's start in place: by linearity (f_h = f_xx +
 * f_yy + f_zz) chi_h - chi_xx - chi_yy, whose error is the three fields'
 * and the design's last change. zz starts from rest instead where that
 * start's residual is no smaller than the load's (h->zz_derived 0): after
 * an update that changed the moduli much (each one while continuation
 * raises the penalty), it is not. */
vox_status vox_homog_add_strains_zz(vox_homog *h, unsigned strains, int from_hydrostatic);
/* Whether the kept strains of each orbit under the turn about the
 * diagonal take the first one's field turned (h->turned): only where the
 * caller knows the design to be unchanged by the turn, and where the
 * backend turns fields and C^H is in the energy form; returns whether it
 * does. */
int vox_homog_turn_fields(vox_homog *h, int turned);
/* The cases that vox_homog_solve solves, the turned ones not counted. */
int vox_homog_solved_count(const vox_homog *h);
/* The number of cases in a mask. */
int vox_homog_strain_count(unsigned strains);
/* Whether the optimizer stores a cell's fields in half precision: in
 * mixed precision (Zhang et al. 2023's FP32/FP16: the rounding is far below a cell's
 * CG tolerance, docs/engine.md); the memory plan counts them so. */
static inline int vox_homog_half_fields(const vox_solver_options *solver) {
  return solver->precision == VOX_PRECISION_MIXED;
}
/* The tolerance the single-precision cell solver reaches on every cell (its
 * floor grows with the grid: CG to 1e-5 stalled at 128^3), tighter ones
 * solve with fem.c's CG. */
#define VOX_CELL_SOLVER_RTOL_MIN 1e-4
/* The optimizer's fields: half in mixed precision, else double; solved by
 * the cell solver (12 bytes a fine dof against CG's 64) where
 * solver->cell_solver is VOX_CELL_SOLVER_ON (vox_optimize resolves AUTO:
 * memory_plan.h) at a tolerance it reaches. */
int vox_homog_fields_for(const vox_solver_options *solver);
/* Field i (one of h->strains) in double: h->u[i], or h->work loaded from
 * h->uh[i]. */
vox_status vox_homog_field(vox_homog *h, int i, vox_vec **u);
void vox_homog_destroy(vox_homog *h);
/* What the solves take from the fem's current moduli (after
 * vox_fem_update): their scale, and the cell solver's hierarchy (its
 * backend memory held again where phased). vox_homog_solve does it first
 * unless the caller has: a phased caller, so that it may free the fem's
 * moduli while the cell solver runs (vox_homog_solve with c NULL, and
 * vox_homog_energy_tensor once the moduli are back). */
vox_status vox_homog_prepare(vox_homog *h);
/* At the fem's current moduli (after vox_fem_update): the loads and the
 * solves (warm-started) of h->strains (zz's from its derived start where
 * vox_homog_add_strains_zz left one), and C^H (energy form unless
 * h->dot_form, which needs double fields; `ones`, 1 per element, serves the
 * dot-product form; NULL will do for the energy form; c NULL: no C^H, the
 * fem's moduli not read after vox_homog_prepare): the entries C_ij
 * with both i and j solved, NaN in the others. cg_iterations sums the
 * solves; failed gets the first solve that did not converge (reason > 0 if
 * none). */
vox_status vox_homog_solve(vox_homog *h, const vox_solver_options *options, const vox_vec *ones,
                           double c[36],
                           int *cg_iterations, vox_solve_result *failed);
/* Phased: every kept field into host memory (page-locked) until the next
 * solve holds it again; nothing otherwise. */
vox_status vox_homog_park_fields(vox_homog *h);
/* C^H in the energy form (Zhang et al. 2023, eq. 7) from the fields of h->strains,
 * at the fem's current moduli: one pass over the elements; NaN in the
 * entries of strains not solved. */
vox_status vox_homog_energy_tensor(vox_homog *h, double c[36]);
/* d f / d rho_e = sum_ij g_ij d C^H_ij / d rho_e + g_hydrostatic d (e_h'
 * C^H e_h) / d rho_e (eq. 8, 9) for the moduli E (emin + (1 - emin)
 * rho^p): energy is work (elements). g must be 0 on the entries of strains
 * not solved, g_hydrostatic 0 unless the hydrostatic case is
 * (VOX_ERR_INVALID_ARGUMENT). */
vox_status vox_homog_gradient(vox_homog *h, const double g[36], double g_hydrostatic,
                              const vox_vec *rho, double p, double emin, vox_vec *energy,
                              vox_vec *df);

#endif
