/* SPDX-License-Identifier: BSD-3-Clause */
/* The backend operations of the periodic cell solver (private): what
 * cell_solver.c is written against, one table per backend, reached through
 * vox_backend_ops.cell. A backend's vox_cell holds the whole hierarchy in
 * float: conjugate gradients' direction p on level 0, per level the
 * iterate x and the right-hand side b, one buffer of a slab of residual
 * planes (restrict_residual), the fine moduli, the stencils of levels 2
 * and coarser, and the coarsest level's dense pseudo-inverse;
 * cell_kernels.h gives the layout and the arithmetic. */
#ifndef VOXFE_CELL_OPS_H
#define VOXFE_CELL_OPS_H

#include "cell_kernels.h"

enum { VOX_CELL_MAX_LEVELS = 16 };

typedef struct vox_cell vox_cell; /* defined by each backend */

typedef struct vox_cell_desc {
  int n_levels;                            /* 3 or more */
  vox_cell_dims dims[VOX_CELL_MAX_LEVELS]; /* level l: the fine dims / 2^l, all even */
  const double *ke;                        /* 24 x 24, the fine element of unit modulus */
  const double *g;                         /* 8 matrices G_c (cell_kernels.h), level 1 */
  const double *h;                         /* 64 matrices h_f (cell_kernels.h), level 2 */
  int slab; /* coarse planes of restrict_residual's slabs; 0: vox_cell_slab's default */
} vox_cell_desc;

typedef struct vox_cell_ops {
  vox_status (*create)(vox_backend *be, const vox_cell_desc *desc, vox_cell **out);
  void (*destroy)(vox_backend *be, vox_cell *c);
  /* release frees the hierarchy (every vector, stencil, the slab buffer and
   * the pseudo-inverse: all but the fine moduli and the element matrices,
   * vox_cell_kept_floats), hold makes it again (created held; its values
   * are undefined until set_moduli's successors remake them). */
  void (*release)(vox_backend *be, vox_cell *c);
  vox_status (*hold)(vox_backend *be, vox_cell *c);
  /* The fine moduli (one per element, element order = node order), kept in
   * float (held or not). */
  vox_status (*set_moduli)(vox_backend *be, vox_cell *c, const vox_vec *moduli);
  /* The stencil of level 2 from the fine moduli, of a level l >= 3 from
   * that of level l - 1 (Galerkin); the stored blocks only. */
  vox_status (*galerkin)(vox_backend *be, vox_cell *c, int level);
  /* Host copies: the stencil of a level (VOX_CELL_BLOCK floats per node,
   * the blocks t = 13..26: vox_cell_stencil_block reads the others);
   * the coarsest level's pseudo-inverse in, 3 nodes x 3 nodes doubles,
   * row-major (kept in double: at SIMP's contrasts its entries span the
   * contrast, beyond float's seven digits). */
  vox_status (*stencil_download)(vox_backend *be, vox_cell *c, int level, float *host);
  vox_status (*coarsest_upload)(vox_backend *be, vox_cell *c, const double *pinv);
  /* The unit strain solved next: kchi = Ke chi of unit modulus (24). */
  vox_status (*set_load)(vox_backend *be, vox_cell *c, const double kchi[24]);
  /* u = 0, u a half-precision field in the fem's layout (grid nodes with
   * their periodic images): the cell solver solves into the field itself. */
  vox_status (*zero_field)(vox_backend *be, vox_cell *c, vox_vec *u);
  /* |f|^2 of the load. */
  vox_status (*load_norm)(vox_backend *be, vox_cell *c, double *ff);
  /* Conjugate gradients on level 0 (cell_solver.c), in float with the
   * scalars in double: u the field (half precision, the fem's layout: CG
   * never reads it back, so it accumulates there directly and needs no
   * float copy), b the residual (the V-cycle's right-hand side), p the
   * direction, x the V-cycle's z and then q = A p.
   *   cg_residual:  b = f - A u (u widened into x first), *rr = b.b;
   *   cg_direction: z = x less its mean per component, *rz = b.z, then
   *                 p = z + (*rz / rz_old) p (p = z, p not read, when rz_old
   *                 is 0). The periodic operator does not see translations,
   *                 nor do CG's recurrences: what the V-cycle leaves of them
   *                 would add up in u unseen, and a field far from 0 keeps
   *                 little of its variation in half precision (a 128^3 cell
   *                 in its 30th design iteration: true residuals of 0.4
   *                 where CG's was 0.004). So z loses them (the null-space
   *                 projection of Zhang et al. 2023 section 4.2);
   *   cg_product:   x = A p, *pq = p.x;
   *   cg_update:    u += alpha p (images too, rounded to half), b -= alpha x,
   *                 *rr = b.b. */
  vox_status (*cg_residual)(vox_backend *be, vox_cell *c, const vox_vec *u, double *rr);
  vox_status (*cg_direction)(vox_backend *be, vox_cell *c, double rz_old, double *rz);
  vox_status (*cg_product)(vox_backend *be, vox_cell *c, double *pq);
  vox_status (*cg_update)(vox_backend *be, vox_cell *c, double alpha, vox_vec *u, double *rr);
  /* One Gauss-Seidel sweep over the nodes of level l, colour by colour
   * (colours 0..7, or 7..0 when backward): x += diag^-1 (b - A x) at each
   * node. */
  vox_status (*smooth)(vox_backend *be, vox_cell *c, int level, int backward);
  /* b of level l + 1 = R (b - A x) of level l, and x of level l + 1 = 0,
   * slab by slab, so that no level holds its whole residual (level 0's
   * would be a fourth fine vector): for coarse planes [K0, K1)
   * (vox_cell_slab of them) the residual of fine planes 2 K0 - 1 ..
   * 2 K1 - 1 (wrapped; vox_cell_slab_planes) into the slab buffer, then
   * their restriction from it. Each slab computes one fine plane again,
   * each node the same numbers as a whole residual would. clear: x of
   * level 0 = 0 (the V-cycle's start). */
  vox_status (*restrict_residual)(vox_backend *be, vox_cell *c, int level);
  vox_status (*clear)(vox_backend *be, vox_cell *c);
  /* x of level l += P x of level l + 1. */
  vox_status (*prolong_add)(vox_backend *be, vox_cell *c, int level);
  /* x = pseudo-inverse b on the coarsest level. */
  vox_status (*coarsest_solve)(vox_backend *be, vox_cell *c);
} vox_cell_ops;

/* r.z with z less its mean per component, from sums[0] = r.z, sums[1 + c]
 * the sum of component c of z and sums[4 + c] of r over `nodes` nodes; the
 * means into mean. */
static inline double vox_cell_projected_rz(const double sums[7], int64_t nodes, double mean[3]) {
  double rz = sums[0];
  for (int c = 0; c < 3; c++) {
    mean[c] = sums[1 + c] / (double)nodes;
    rz -= mean[c] * sums[4 + c];
  }
  return rz;
}
/* The coarse planes of a slab of restrict_residual from level l: desc's,
 * or 1/16 of the level's (the buffer about 1/16 of a residual vector; of
 * the 2 slab + 1 fine planes of each slab, one is computed twice); at
 * least 1, at most all. */
static inline int vox_cell_slab(const vox_cell_desc *desc, int l) {
  const int nz = desc->dims[l + 1].nz, s = desc->slab > 0 ? desc->slab : nz / 16;
  return s < 1 ? 1 : s > nz ? nz : s;
}
/* The fine planes of a slab of `coarse` coarse planes: 2 coarse + 1, or
 * all of the fine level's fine_nz where the slab is the whole level (its
 * two wrapped ends are one plane). */
static inline int vox_cell_slab_fine_planes(int coarse, int fine_nz) {
  const int p = 2 * coarse + 1;
  return p < fine_nz ? p : fine_nz;
}
/* The fine planes of such a slab's residual from level l. */
static inline int vox_cell_slab_planes(const vox_cell_desc *desc, int l) {
  return vox_cell_slab_fine_planes(vox_cell_slab(desc, l), desc->dims[l].nz);
}
/* The slab of restrict_residual from coarse plane k0 (of coarse_nz, slabs
 * of `slab` planes) over a fine level of dims fine: its end plane *k1 (the
 * last slab may be short), the fine plane *z0 its residual starts at
 * (wrapped), and the dims of that residual. */
static inline vox_cell_dims vox_cell_slab_at(vox_cell_dims fine, int coarse_nz, int slab, int k0,
                                             int *k1, int *z0) {
  *k1 = k0 + slab < coarse_nz ? k0 + slab : coarse_nz;
  *z0 = 2 * k0 - 1;
  const vox_cell_dims d = {fine.nx, fine.ny, vox_cell_slab_fine_planes(*k1 - k0, fine.nz)};
  return d;
}
/* The slab buffer's floats: the largest slab of the levels, which it
 * serves in turn. */
static inline double vox_cell_slab_floats(const vox_cell_desc *desc) {
  double most = 0;
  for (int l = 0; l + 1 < desc->n_levels; l++) {
    const double f = 3.0 * desc->dims[l].nx * desc->dims[l].ny * vox_cell_slab_planes(desc, l);
    most = f > most ? f : most;
  }
  return most;
}
/* Of those, the floats a released vox_cell keeps: the fine moduli. */
static inline double vox_cell_kept_floats(const vox_cell_desc *desc) {
  return (double)desc->dims[0].nx * desc->dims[0].ny * desc->dims[0].nz;
}
/* The floats a backend's vox_cell holds (both backends allocate exactly
 * these; the memory plan counts them): the fine moduli, CG's p; per
 * level x and b, the stencils of levels >= 2, and the coarsest
 * pseudo-inverse (in double: two floats an entry); the slab buffer. */
static inline double vox_cell_floats(const vox_cell_desc *desc) {
  const double fine = (double)desc->dims[0].nx * desc->dims[0].ny * desc->dims[0].nz;
  double floats = fine + 3 * fine + vox_cell_slab_floats(desc);
  for (int l = 0; l < desc->n_levels; l++) {
    const double n = (double)desc->dims[l].nx * desc->dims[l].ny * desc->dims[l].nz;
    floats += 3 * n * 2 + (l >= 2 ? VOX_CELL_BLOCK * n : 0);
    if (l == desc->n_levels - 1) floats += 2 * 9 * n * n; /* the pseudo-inverse in double */
  }
  return floats;
}

#ifdef __cplusplus
extern "C" {
#endif
extern const vox_cell_ops vox_cpu_cell_ops;
#ifdef VOXFE_HAVE_CUDA
extern const vox_cell_ops vox_cuda_cell_ops;
#endif
#ifdef __cplusplus
}
#endif

#endif
