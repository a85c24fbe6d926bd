/* SPDX-License-Identifier: BSD-3-Clause */
/* The CPU (OpenMP) backend's pieces, one file each (private). */
#ifndef VOXFE_CPU_H
#define VOXFE_CPU_H

#include <string.h>

#include "../backend_ops.h"
#include "mode_product.h"
#include "../mma_ops.h"
#include "voxfe/element.h"

/* The matrix-free operator (cpu_operator.c; read by cpu_galerkin.c). */
struct vox_operator {
  vox_grid grid;
  int dpn;                 /* dofs per node */
  int nloc;                /* 8 * dpn */
  double *ke;              /* nloc x nloc, unit modulus */
  float *ke32;             /* ke rounded to float: the VOX_APPLY_SINGLE product */
  vox_element_modes modes; /* elasticity's Ke by the brick's reflections (element_modes.h) */
  uint8_t *fixed;          /* per dof */
  size_t n_dofs;
  const double *moduli;    /* per element, set by op->set_moduli */
  ptrdiff_t corner[8];     /* node offset of each local corner */
  size_t n_springs;        /* springs to ground on free dofs (vox_operator_desc) */
  int first_layer_shared;  /* vox_operator_desc */
  size_t *spring_dof;
  double *spring_k;
};

/* An assembled operator as 27 blocks per node (backend_ops.h):
 *   value[((n * 27 + t) * dpn + r) * dpn + c]
 * couples dof r of node n with dof c of the neighbour at offset t; blocks
 * that reach outside the grid are zero. The values are double, or float for
 * a VOX_PRECISION_MIXED stencil (half the bytes its products read; they
 * multiply in float, and what they write stays double): exactly one of
 * `value` and `value32` is allocated. The direct solver's state of the
 * coarsest level hangs off `factor` (cpu_coarse_solve.c). */
struct vox_stencil {
  vox_grid grid;           /* elements; the stencil lives on its nodes */
  int dpn;
  size_t n_nodes, n_dofs;
  double *value;           /* n_nodes * 27 * dpn * dpn, or NULL */
  float *value32;          /* the same in float, or NULL */
  void *factor;            /* NULL until stencil_factor */
};

/* Value i of a stencil in either storage, as a double. */
static inline double vox_cpu_stencil_value(const vox_stencil *st, size_t i) {
  return st->value ? st->value[i] : (double)st->value32[i];
}

/* The coarse nodes that interpolate fine node index a along one axis, with
 * their weights (grids of vox_grid_coarsen): an even a sits on coarse node
 * a/2, an odd one halfway between (a-1)/2 and (a+1)/2. */
static inline int vox_cpu_parents(int64_t a, int64_t J[2], double w[2]) {
  if (!(a & 1)) {
    J[0] = a / 2, w[0] = 1;
    return 1;
  }
  J[0] = (a - 1) / 2, J[1] = (a + 1) / 2, w[0] = w[1] = 0.5;
  return 2;
}

/* The coarse nodes (wrapped) that interpolate fine master node a of a
 * periodic axis of 2 nc elements: as vox_cpu_parents, with node nc being
 * node 0 again. */
static inline int vox_cpu_parents_periodic(int64_t a, int64_t nc, int64_t J[2], double w[2]) {
  const int n = vox_cpu_parents(a, J, w);
  if (n == 2 && J[1] == nc) J[1] = 0;
  return n;
}

/* HOT_CLONES (target_clones.h): the dense element product runs about twice
 * as fast as with the baseline SSE2. */
#include "../target_clones.h"

/* Threads for an OpenMP region of this backend. */
int vox_cpu_threads(const vox_backend *be);

/* The sparse system's assembled matrices (cpu_sparse_matrix.c; sparse_ops.h). */
typedef struct vox_bsr vox_bsr;
typedef struct vox_vec vox_vec;
typedef struct vox_sparse_matrix vox_sparse_matrix;
vox_status vox_cpu_matrix_create(vox_backend *be, const vox_bsr *h, int single,
                                 vox_sparse_matrix **out);
void vox_cpu_matrix_destroy(vox_backend *be, vox_sparse_matrix *m);
size_t vox_cpu_matrix_bytes(const vox_sparse_matrix *m);
vox_status vox_cpu_matrix_apply(vox_backend *be, const vox_sparse_matrix *m, const vox_vec *x,
                                vox_vec *y, int add);
vox_status vox_cpu_matrix_smoother_step(vox_backend *be, const vox_sparse_matrix *m,
                                        const vox_vec *b, const vox_vec *ax, double alpha,
                                        double beta, vox_vec *d, vox_vec *x);

/* cpu_operator.c */
vox_status vox_cpu_op_create(vox_backend *be, const vox_operator_desc *desc, vox_operator **op);
void vox_cpu_op_destroy(vox_backend *be, vox_operator *op);
vox_status vox_cpu_op_set_moduli(vox_backend *be, vox_operator *op, const vox_vec *moduli);
vox_status vox_cpu_op_check_fixed(vox_backend *be, const vox_operator *op, const char *what);
vox_status vox_cpu_op_apply(vox_backend *be, vox_operator *op, const vox_vec *x, vox_vec *y,
                            int flags);
vox_status vox_cpu_op_zero_fixed(vox_backend *be, vox_operator *op, vox_vec *v);
vox_status vox_cpu_op_diagonal(vox_backend *be, vox_operator *op, vox_vec *d);
vox_status vox_cpu_op_element_energy(vox_backend *be, vox_operator *op, const vox_vec *u,
                                     vox_vec *energy, int accumulate);
vox_status vox_cpu_op_strain_load(vox_backend *be, vox_operator *op, const double *chi,
                                  vox_vec *f);
vox_status vox_cpu_op_strain_energy(vox_backend *be, vox_operator *op, int n_fields,
                                    const vox_vec *u, const double *chi, const double *w,
                                    vox_vec *energy);
vox_status vox_cpu_op_strain_energy_sums(vox_backend *be, vox_operator *op, int n_fields,
                                         const vox_vec *u, const double *chi, double *sums);
/* A half-precision value widened to double, exactly, from its bits: GCC
 * makes (double) of a _Float16 a library call (__extendhfdf2) even in the
 * AVX2 clones, about 4 % of a periodic cell's run on the CPU. */
static inline double vox_cpu_half_to_double(_Float16 h) {
  uint16_t b;
  memcpy(&b, &h, sizeof b);
  const unsigned e = (b >> 10) & 0x1fu;
  const uint64_t m = b & 0x3ffu;
  double v;
  if (e == 0) { /* zero or subnormal: m 2^-24 */
    v = (double)m * 0x1p-24;
  } else { /* the exponent rebiased (infinity and NaN to 2047), the mantissa shifted */
    const uint64_t bits = (e == 31 ? 0x7ffull : (uint64_t)(e - 15 + 1023)) << 52 | m << 42;
    memcpy(&v, &bits, sizeof v);
  }
  return b >> 15 ? -v : v;
}

/* The nodes of element (i, j, k) in local corner order (wrapped on a
 * periodic grid); inline, for the element loops that call it per element. */
static inline void vox_cpu_element_nodes(const vox_operator *op, int64_t i, int64_t j, int64_t k,
                                         ptrdiff_t nodes[8]) {
  const vox_grid *g = &op->grid;
  const ptrdiff_t sy = g->nx + 1, sz = sy * (g->ny + 1);
  for (int a = 0; a < 8; a++) {
    int64_t ii = i + vox_hex8_corner[a][0], jj = j + vox_hex8_corner[a][1],
            kk = k + vox_hex8_corner[a][2];
    if (g->periodic) {
      ii = ii == g->nx ? 0 : ii, jj = jj == g->ny ? 0 : jj, kk = kk == g->nz ? 0 : kk;
    }
    nodes[a] = kk * sz + jj * sy + ii;
  }
}

/* cpu_simp.c */
vox_status vox_cpu_simp_moduli(vox_backend *be, const vox_vec *rho, const vox_vec *e_solid,
                               double p, double emin, vox_vec *moduli);
vox_status vox_cpu_simp_sensitivity(vox_backend *be, const vox_vec *rho, const vox_vec *e_solid,
                                    const vox_vec *energy, double p, double emin, vox_vec *dc);
vox_status vox_cpu_oc_update(vox_backend *be, const vox_vec *rho, const vox_vec *dc,
                             const vox_vec *dv, const vox_vec *design, const vox_vec *passive,
                             double lambda, double move, double eta, double q, double rho_min,
                             vox_vec *rho_new);

vox_status vox_cpu_oc_volumes(vox_backend *be, const vox_vec *rho, const vox_vec *dc,
                              const vox_vec *dv, const vox_vec *design, const vox_vec *passive,
                              const double *lambda, int n, double move, double eta,
                              double q, double rho_min, double *volume);

/* cpu_stencil.c: stencils, their products and the grid transfers */
vox_status vox_cpu_stencil_create(vox_backend *be, const vox_grid *grid, int dpn,
                                  vox_precision precision, vox_stencil **st);
void vox_cpu_stencil_destroy(vox_backend *be, vox_stencil *st);
vox_status vox_cpu_stencil_upload(vox_backend *be, vox_stencil *st, const double *host);
vox_status vox_cpu_stencil_download(vox_backend *be, const vox_stencil *st, double *host);
vox_status vox_cpu_stencil_values(vox_backend *be, vox_stencil *st, vox_vec *values);
vox_status vox_cpu_stencil_apply(vox_backend *be, vox_stencil *st, const vox_vec *x, vox_vec *y);
/* The product fused with what follows it, in one pass (backend_ops.h's
 * stencil_smooth and stencil_residual). */
vox_status vox_cpu_stencil_smooth(vox_backend *be, vox_stencil *st, const vox_vec *b,
                                  const vox_vec *x, const vox_vec *inv_diag, double alpha,
                                  double beta, vox_vec *d, vox_vec *x_out);
vox_status vox_cpu_stencil_residual(vox_backend *be, vox_stencil *st, const vox_vec *b,
                                    const vox_vec *x, vox_vec *r);
vox_status vox_cpu_stencil_diagonal(vox_backend *be, vox_stencil *st, vox_vec *d);
vox_status vox_cpu_restrict_residual(vox_backend *be, const vox_grid *fine, int dpn,
                                     const vox_vec *r_fine, vox_vec *r_coarse);
vox_status vox_cpu_prolong_add(vox_backend *be, const vox_grid *fine, int dpn,
                               const vox_vec *x_coarse, vox_vec *x_fine);

/* cpu_galerkin.c */
vox_status vox_cpu_galerkin_operator(vox_backend *be, vox_operator *fine, vox_stencil *coarse);
vox_status vox_cpu_galerkin_stencil(vox_backend *be, vox_stencil *fine, vox_stencil *coarse);


/* cpu_coarse_solve.c: CHOLMOD on the coarsest level */
vox_status vox_cpu_stencil_factor(vox_backend *be, vox_stencil *st);
vox_status vox_cpu_stencil_solve(vox_backend *be, vox_stencil *st, const vox_vec *b, vox_vec *x);
/* Frees st->factor (called by vox_cpu_stencil_destroy). */
void vox_cpu_stencil_factor_free(vox_stencil *st);

/* cpu_symmetry.c (the loop is shared with vox_symmetrize on host arrays) */
struct vox_symmetry_group;
void vox_cpu_symmetrize_field(const struct vox_symmetry_group *g, const vox_grid *grid,
                              double *field, int threads);
vox_status vox_cpu_symmetrize(vox_backend *be, const vox_grid *grid, vox_symmetry symmetry,
                              vox_vec *v);
vox_status vox_cpu_turn_field(vox_backend *be, const vox_grid *grid, int turns, const vox_vec *src,
                              vox_vec *dst);

/* cpu_filter.c */
vox_status vox_cpu_filter_create_periodic(vox_backend *be, const vox_grid *grid, double radius,
                                          const uint8_t *active, vox_filter **filter);
vox_status vox_cpu_filter_create(vox_backend *be, const vox_grid *grid, double radius,
                                 const uint8_t *active, vox_filter **filter);
void vox_cpu_filter_destroy(vox_backend *be, vox_filter *filter);
vox_status vox_cpu_filter_apply(vox_backend *be, vox_filter *f, const vox_vec *in, vox_vec *out);
vox_status vox_cpu_filter_transpose(vox_backend *be, vox_filter *f, const vox_vec *in,
                                    vox_vec *out);
vox_status vox_cpu_filter_sensitivity(vox_backend *be, vox_filter *f, const vox_vec *rho,
                                      const vox_vec *dc, double gamma, vox_vec *out);

/* The dual method's passes of the method of moving asymptotes
 * (cpu_mma_dual.c; mma_ops.h's dual_sums and dual_solution). */
vox_status vox_cpu_mma_dual_sums(vox_backend *be, vox_mma_work *w, const vox_mma_vectors *v,
                                 int points, const double *lam, double *sums);
vox_status vox_cpu_mma_dual_solution(vox_backend *be, vox_mma_work *w, const vox_mma_vectors *v,
                                     const double *lam);

#endif
