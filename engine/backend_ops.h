/* SPDX-License-Identifier: BSD-3-Clause */
/* The backend interface: a table of operations that the solver and the
 * optimizer are written against (private to libvoxfe). A backend owns the
 * memory of its vectors (host memory for the CPU, device memory for CUDA);
 * only scalars (dot products, maxima) come back to the caller.
 *
 * Every operation returns a status; a failing one leaves a message on the
 * backend's context. */
#ifndef VOXFE_BACKEND_OPS_H
#define VOXFE_BACKEND_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "sparse_ops.h"
#include "vector.h"
#include "voxfe/backend.h"
#include "voxfe/model.h"
#include "voxfe/solver.h"
#include "voxfe/symmetry.h"

/* What a stiffness (or conductivity) operator needs: the grid, the one
 * element matrix of unit modulus and which dofs have identity rows. */
typedef struct vox_operator_desc {
  vox_grid grid;
  int dofs_per_node;          /* 3 for elasticity, 1 for heat conduction */
  const double *ke;           /* (8*dofs_per_node)^2, row-major, host */
  /* One per dof, host: 1 = Dirichlet or isolated. NULL: no flags are kept
   * (a byte per dof and per node), and the operator serves only what reads
   * none: op->set_moduli, op->element_energy and the strain energies (the
   * lean fem of the cell solver, fem.h); the other operations fail. */
  const uint8_t *dof_fixed;
  /* Springs to ground: K gains spring_k[i] on the diagonal of free dof
   * spring_dof[i] (distinct dofs, host arrays; none when n_springs = 0).
   * op->apply and op->diagonal include them; galerkin_operator leaves them out
   * (a coarse level without a few springs is still a fine preconditioner). */
  size_t n_springs;
  const size_t *spring_dof;
  const double *spring_k;
  /* 1: node layer z = 0 is shared with another operator (the MPI backend's
   * slab below) that holds the identity rows of its fixed dofs too, so
   * that galerkin_operator leaves them out here and R (I - D) P is counted
   * once when the two coarse operators are added. */
  int first_layer_shared;
} vox_operator_desc;

typedef struct vox_operator vox_operator; /* defined by each backend */
typedef struct vox_filter vox_filter;     /* defined by each backend */
typedef struct vox_stencil vox_stencil;   /* defined by each backend */
typedef struct vox_cell_ops vox_cell_ops; /* cell_ops.h */
typedef struct vox_efg_ops vox_efg_ops;   /* efg_ops.h */
typedef struct vox_mma_ops vox_mma_ops;   /* mma_ops.h */
typedef struct vox_peer_ops vox_peer_ops; /* peer_ops.h */

/* Multigrid grids are nested: the coarse grid of a grid of n elements along
 * an axis has ceil(n/2) elements of twice the size, and coarse node I sits on
 * fine node 2I (one past the fine grid when n is odd: it then interpolates
 * to the last fine node only). Prolongation P is trilinear interpolation,
 * restriction R = P^T. */
static inline vox_grid vox_grid_coarsen(const vox_grid *fine) {
  vox_grid c = *fine;
  c.nx = (fine->nx + 1) / 2, c.ny = (fine->ny + 1) / 2, c.nz = (fine->nz + 1) / 2;
  for (int a = 0; a < 3; a++) c.voxel_size[a] = 2 * fine->voxel_size[a];
  return c;
}

#ifdef __CUDACC__
#define VOX_HOST_DEVICE __host__ __device__
#else
#define VOX_HOST_DEVICE
#endif

/* Periodic grids (vox_grid.periodic). Every periodic axis has an even
 * number of elements on every multigrid level (vox_mg_levels_for stops
 * coarsening before an odd one), so the 8-colour element loops stay free
 * of conflicts across the wrap. Index arithmetic is done in unwrapped
 * coordinates (the infinite periodic lattice), and only memory addresses
 * wrap into the master range [0, n). */
VOX_HOST_DEVICE static inline int64_t vox_wrap(int64_t a, int64_t n) {
  a %= n;
  return a < 0 ? a + n : a;
}

/* Node (i, j, k) of a periodic grid is an image of a master node. */
VOX_HOST_DEVICE static inline int vox_is_image(int64_t nx, int64_t ny, int64_t nz, int64_t i,
                                               int64_t j, int64_t k) {
  return i == nx || j == ny || k == nz;
}

/* The node at (i, j, k) + offset t (t = (dk+1)*9 + (dj+1)*3 + di+1) in a
 * grid of nx x ny x nz elements, or -1 outside a non-periodic grid; on a
 * periodic grid, the wrapped master. */
VOX_HOST_DEVICE static inline int64_t vox_neighbour_node(int64_t nx, int64_t ny, int64_t nz,
                                                         int periodic, int64_t i, int64_t j,
                                                         int64_t k, int t) {
  int64_t ii = i + t % 3 - 1, jj = j + (t / 3) % 3 - 1, kk = k + t / 9 - 1;
  if (periodic) {
    ii = vox_wrap(ii, nx), jj = vox_wrap(jj, ny), kk = vox_wrap(kk, nz);
  } else if (ii < 0 || ii > nx || jj < 0 || jj > ny || kk < 0 || kk > nz) {
    return -1;
  }
  return (kk * (ny + 1) + jj) * (nx + 1) + ii;
}

/* A uniform number in [-0.5, 0.5) from a seed and an index (the splitmix64
 * finaliser of seed + index): a counter-based generator that needs no state,
 * so every thread of any backend computes its own entry. */
#ifdef __CUDACC__
__host__ __device__
#endif
static inline double vox_hash_uniform(uint64_t seed, uint64_t i) {
  uint64_t z = seed + i * 0x9e3779b97f4a7c15u;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  z ^= z >> 31;
  return (double)(z >> 11) / 9007199254740992.0 - 0.5;
}

/* Flags of op->apply:
 *   VOX_APPLY_FULL   the plain y = K x, fixed dofs not eliminated (used to
 *                    lift prescribed values);
 *   VOX_APPLY_SINGLE the backend may compute the product in single-precision
 *                    arithmetic (x, y and the moduli stay double in memory);
 *                    results agree with the double product to about 1e-6 of
 *                    max |y|. Only preconditioners ask for it (the multigrid
 *                    smoother of VOX_PRECISION_MIXED); a backend may ignore it
 *                    and compute in double. */
enum { VOX_APPLY_FULL = 1, VOX_APPLY_SINGLE = 2 };

/* The most steps stencil_lanczos takes in one call. */
enum { VOX_LANCZOS_MAX_STEPS = 64 };

/* Trial multipliers per pass of oc_volumes. */
enum { VOX_OC_LAMBDAS = 32 };

/* Vectors and their reductions: what a distributed backend would give
 * global reductions (dot, max_abs_diff, the CG steps' dots) and nothing
 * else. */
typedef struct vox_vector_ops {
  /* Vectors. vec->create gives a zeroed vector of n entries of the given
   * precision. The operations below take double vectors but where they say
   * otherwise. */
  vox_status (*create)(vox_backend *be, size_t n, vox_scalar scalar, vox_vec *v);
  void (*destroy)(vox_backend *be, vox_vec *v); /* any precision */
  /* From and to host memory holding the entries in the vector's own
   * precision (a double array for a double vector, binary16 bit patterns
   * for a half one): double and half vectors. */
  vox_status (*upload)(vox_backend *be, vox_vec *v, const void *host);
  vox_status (*download)(vox_backend *be, const vox_vec *v, void *host);
  /* Optional (NULL: v->n entries, download and upload): the entries of a
   * double vector that this process holds (an MPI rank's part, its halo
   * included), to host memory and back, for a vector that waits off the
   * backend for a while (optimizer.c's turns) without a gather. */
  size_t (*held_n)(vox_backend *be, const vox_vec *v);
  vox_status (*held_download)(vox_backend *be, const vox_vec *v, double *host);
  vox_status (*held_upload)(vox_backend *be, vox_vec *v, const double *host);
  /* Optional (NULL: download): a solve's answer for its caller, the whole
   * vector where results arrive (vox_backend_ops.results), nothing
   * elsewhere (host may be NULL there). */
  vox_status (*download_result)(vox_backend *be, const vox_vec *v, double *host);
  vox_status (*set)(vox_backend *be, vox_vec *v, double a); /* v = a */
  /* dst = src, of the same length, between double and half vectors in
   * either direction: to half, rounded to the nearest binary16 (ties to
   * even; beyond its range, infinity); to double, exact. */
  vox_status (*copy)(vox_backend *be, vox_vec *dst, const vox_vec *src);
  /* y += a x; also of double or half vectors in any mix, computed in double
   * from the entries widened exactly and rounded to y's precision as copy
   * rounds (a periodic cell's half fields: homogenize.c) */
  vox_status (*axpy)(vox_backend *be, vox_vec *y, double a, const vox_vec *x);
  vox_status (*xpay)(vox_backend *be, vox_vec *y, double a, const vox_vec *x); /* y = x + a y */
  /* w = x.*y;  y = a x + b y;  v = 1 ./ v */
  vox_status (*mult)(vox_backend *be, vox_vec *w, const vox_vec *x, const vox_vec *y);
  vox_status (*axpby)(vox_backend *be, vox_vec *y, double a, const vox_vec *x, double b);
  vox_status (*reciprocal)(vox_backend *be, vox_vec *v);
  /* v_i = vox_hash_uniform(seed, first + i): the same pseudo-random vector
   * on every backend, made where it lives (first: the global index of
   * entry 0, for a part of a longer vector). */
  vox_status (*random)(vox_backend *be, vox_vec *v, uint64_t seed, uint64_t first);
  /* One fused step of the multigrid smoothers (one pass over memory instead
   * of four): d = alpha inv_diag .* (b - ax) + beta d, then x += d. ax NULL
   * means a zero start: x = 0 is implied, so x is overwritten with d
   * without being read (it may hold anything, and needs no zeroing pass);
   * beta = 0 overwrites d (which may hold anything); d NULL (beta 0 only)
   * keeps no direction: a smoother of one step never reads it again. */
  vox_status (*smoother_step)(vox_backend *be, const vox_vec *b, const vox_vec *ax,
                              const vox_vec *inv_diag, double alpha, double beta, vox_vec *d,
                              vox_vec *x);
  vox_status (*dot)(vox_backend *be, const vox_vec *x, const vox_vec *y, double *out);
  /* Conjugate gradients' update after the step length, one pass instead of
   * three: x += alpha p, r -= alpha q, *rr = r.r of the new r. */
  vox_status (*cg_update)(vox_backend *be, vox_vec *x, vox_vec *r, double alpha,
                          const vox_vec *p, const vox_vec *q, double *rr);
  vox_status (*max_abs_diff)(vox_backend *be, const vox_vec *x, const vox_vec *y, double *out);
  /* Optional, all three or none (NULL: ksp.c keeps CG's scalars on the
   * host): conjugate gradients with its scalars kept where the vectors are,
   * so that an iteration waits for the host once, for its convergence test,
   * instead of after each of its three reductions; the same arithmetic as
   * ksp.c's loop, with the scalars in double.
   *   cg_begin:     p = z, and rz = r.z, kept and returned;
   *   cg_step:      pq = p.q; the step is sound while pq > 0 and rz > 0, and
   *                 then x += alpha p, r -= alpha q with alpha = rz / pq (x
   *                 and r stay otherwise); returns pq, the rz it used and
   *                 rr = r.r;
   *   cg_direction: rz' = r.z, p = z + (rz' / rz) p, and rz = rz' kept. */
  vox_status (*cg_begin)(vox_backend *be, const vox_vec *r, const vox_vec *z, vox_vec *p,
                         double *rz);
  vox_status (*cg_step)(vox_backend *be, vox_vec *x, vox_vec *r, const vox_vec *p,
                        const vox_vec *q, double *pq, double *rz, double *rr);
  vox_status (*cg_direction)(vox_backend *be, const vox_vec *r, const vox_vec *z, vox_vec *p);
  /* Optional, all four or none (NULL: the caller keeps the scalars on the
   * host): the Lanczos steps of a smoother's eigenvalue estimate, i.e.
   * preconditioned CG on A with any preconditioner M applied by the caller
   * between the calls, its scalars kept where the vectors are and read
   * back once, in the arithmetic of the host loop (v->dot, v->axpy,
   * v->xpay: the same sums, so the same estimates):
   *   lanczos_begin:     p = z (= M r), rz = r.z kept;
   *   lanczos_step:      step k's pq = p.q (q = A p) and alpha_k = rz / pq
   *                      where the steps so far and this one are sound (pq
   *                      > 0, rz > 0), then r -= alpha_k q;
   *   lanczos_direction: rz' = r.z (z = M r), beta_k = rz' / rz, rz = rz',
   *                      p = z + beta_k p;
   *   lanczos_read:      alpha_j and beta_j of the sound steps j < *done
   *                      (of at most `steps`, <= VOX_LANCZOS_MAX_STEPS). */
  vox_status (*lanczos_begin)(vox_backend *be, const vox_vec *r, const vox_vec *z, vox_vec *p);
  vox_status (*lanczos_step)(vox_backend *be, int k, const vox_vec *p, const vox_vec *q,
                             vox_vec *r);
  vox_status (*lanczos_direction)(vox_backend *be, int k, const vox_vec *r, const vox_vec *z,
                                  vox_vec *p);
  vox_status (*lanczos_read)(vox_backend *be, int steps, double *alpha, double *beta,
                             int *done);
} vox_vector_ops;

/* The structured matrix-free operator on the grid: what a distributed
 * backend would give its halo exchange (apply, smooth, residual). */
typedef struct vox_operator_ops {
  /* The matrix-free operator K = sum_e modulus_e * Ke over the grid. */
  vox_status (*create)(vox_backend *be, const vox_operator_desc *desc, vox_operator **op);
  void (*destroy)(vox_backend *be, vox_operator *op);
  /* Element moduli used by later applications (the vector is referenced). */
  vox_status (*set_moduli)(vox_backend *be, vox_operator *op, const vox_vec *moduli);
  /* y = K x with fixed dofs eliminated: y_f = K_ff x_f, y_c = x_c. `flags`
   * is a set of VOX_APPLY_* bits (0: the eliminated product in double). */
  vox_status (*apply)(vox_backend *be, vox_operator *op, const vox_vec *x, vox_vec *y, int flags);
  /* v = 0 on the fixed dofs (the operator's own flags: no mask vector). */
  vox_status (*zero_fixed)(vox_backend *be, vox_operator *op, vox_vec *v);
  /* d = diag(K) (1 on fixed dofs). */
  vox_status (*diagonal)(vox_backend *be, vox_operator *op, vox_vec *d);
  /* energy_e (+)= u_e' Ke u_e per element, unit modulus. */
  vox_status (*element_energy)(vox_backend *be, vox_operator *op, const vox_vec *u, vox_vec *energy,
                               int accumulate);
  /* The multigrid's steps on the fine level, each one pass instead of a
   * product and a vector operation (the product's result never goes to
   * memory).
   * With y = K x (eliminated; `flags` as for op->apply):
   *   op->smooth:   d = alpha inv_diag .* (b - y) + beta d, x_out = x + d
   *                (smoother_step with a product; beta = 0 overwrites d, and
   *                d NULL with beta 0 keeps none);
   *   op->residual: r = b - y.
   * The output must not alias x, whose neighbouring values the product
   * reads. */
  vox_status (*smooth)(vox_backend *be, vox_operator *op, const vox_vec *b, const vox_vec *x,
                       const vox_vec *inv_diag, double alpha, double beta, vox_vec *d,
                       vox_vec *x_out, int flags);
  vox_status (*residual)(vox_backend *be, vox_operator *op, const vox_vec *b, const vox_vec *x,
                         vox_vec *r, int flags);
  /* Optional (NULL: nothing to do): makes current what op's products read
   * besides their arguments (the CUDA backend's element matrix in constant
   * memory, which one operator's product loads over another's), before a
   * recording of its products replays without looking (multigrid.c). */
  vox_status (*prepare)(vox_backend *be, vox_operator *op);
  /* Homogenization of a periodic cell (Zhang, Zhai, Liu and Fu 2023, eq. 4-9); chi holds element
   * displacement vectors of unit macro strains (8 dofs_per_node values each,
   * in element-local coordinates, the same for every element), host memory.
   *   op->strain_load:   f = sum_e m_e Ke chi (scattered; 0 on fixed dofs)
   *   op->strain_energy: out_e = sum_fg w_fg (chi_f - u_f,e)' Ke (chi_g - u_g,e)
   *                     for n_fields <= 6 fields u (elasticity), unit modulus,
   *                     w n_fields x n_fields row-major, host memory;
   *   op->strain_energy_sums: sums_fg = sum_e m_e (chi_f - u_f,e)' Ke (chi_g - u_g,e)
   *                     with m the operator's moduli, every pair f, g < n_fields
   *                     (n_fields x n_fields row-major, both triangles), host
   *                     memory: C^H in the energy form (eq. 7) in one pass.
   * The fields u of the two energies are all double or all half vectors
   * (each half value widened to double as it is read; the same arithmetic). */
  vox_status (*strain_load)(vox_backend *be, vox_operator *op, const double *chi, vox_vec *f);
  vox_status (*strain_energy)(vox_backend *be, vox_operator *op, int n_fields, const vox_vec *u,
                              const double *chi, const double *w, vox_vec *out);
  vox_status (*strain_energy_sums)(vox_backend *be, vox_operator *op, int n_fields,
                                   const vox_vec *u, const double *chi, double *sums);
} vox_operator_ops;

/* Geometric multigrid levels: stencils, their Galerkin products, the
 * transfers between levels and the coarsest level's direct solve. */
typedef struct vox_multigrid_ops {
  /* The largest coarsest multigrid level the backend factors densely on
   * the device (its factor is in the memory plan); 0 for none. */
  size_t dense_coarse_dofs;
  /* The coarsest level's most unknowns where the options leave it to the
   * backend (vox_solver_options.mg_coarse_dofs 0); 0: multigrid.c's
   * VOX_MG_COARSE_DOFS. */
  size_t coarse_dofs;
  /* 1 where the ops of a cycle (these, the operator's smooth and residual,
   * the vector ops) launch onto what the backend's sparse record_begin
   * records, so that multigrid.c may record a cycle and replay it; 0 where
   * they do more (the MPI backend's exchanges) or cannot. */
  int records;
  /* Blocks of dofs_per_node^2 values a stencil stores per node: 27, or 14
   * where the backend keeps only those not implied by symmetry. */
  int stencil_blocks;
  /* Bytes per dof that a VOX_PRECISION_MIXED stencil on a grid like `grid`
   * allocates beside its values (the CUDA backend's FP16 scales,
   * cuda/README.md); NULL for none. */
  int (*stencil_mixed_dof_bytes)(const vox_backend *be, const vox_grid *grid);
  /* Geometric multigrid. A stencil is an assembled operator on a grid kept
   * per node as 27 blocks of dofs_per_node^2 (Martinez-Frutos et al. 2017 section 4.1): block t
   * = (dk+1)*9 + (dj+1)*3 + (di+1) couples the node with its neighbour at
   * offset (di, dj, dk). */
  vox_status (*stencil_create)(vox_backend *be, const vox_grid *grid, int dofs_per_node,
                               vox_precision precision, vox_stencil **st);
  void (*stencil_destroy)(vox_backend *be, vox_stencil *st);
  /* coarse = R A P (Galerkin) of the fine operator A in its eliminated form
   * (identity rows and columns on fixed dofs), at its current moduli... */
  vox_status (*galerkin_operator)(vox_backend *be, vox_operator *fine, vox_stencil *coarse);
  /* ... or of a fine stencil. */
  vox_status (*galerkin_stencil)(vox_backend *be, vox_stencil *fine, vox_stencil *coarse);
  /* Host copies of the values in the layout above, n_nodes * 27 * dpn^2
   * doubles (the coarsest level's direct solve, tests). The operators are
   * symmetric (block t of node n is the transpose of block 26 - t of its
   * neighbour): a backend may store only the blocks from the centre on
   * (stencil_blocks 14), so uploaded values must be symmetric too. */
  vox_status (*stencil_upload)(vox_backend *be, vox_stencil *st, const double *host);
  vox_status (*stencil_download)(vox_backend *be, const vox_stencil *st, double *host);
  /* Optional (NULL: none): the stored values themselves, a vector of the
   * backend (VOX_DOUBLE or VOX_FLOAT as the stencil stores them) in
   * stencil_value_runs runs (0 counts as 1), each run all the grid's nodes
   * in order with the same number of values a node on every grid (the CPU:
   * one run of whole nodes; CUDA: a run per stored block), to read or to
   * overwrite in place (the MPI backend sums the slabs' parts of a level
   * into the whole level where they live). A level kept below float
   * (FP16) is widened first; values written are the level's new operator. */
  vox_status (*stencil_values)(vox_backend *be, vox_stencil *st, vox_vec *values);
  int stencil_value_runs;
  vox_status (*stencil_apply)(vox_backend *be, vox_stencil *st, const vox_vec *x, vox_vec *y);
  /* The fused steps of op->smooth and op->residual with y = A x of the
   * stencil (the coarse levels' smoothing and residual). */
  vox_status (*stencil_smooth)(vox_backend *be, vox_stencil *st, const vox_vec *b,
                               const vox_vec *x, const vox_vec *inv_diag, double alpha,
                               double beta, vox_vec *d, vox_vec *x_out);
  vox_status (*stencil_residual)(vox_backend *be, vox_stencil *st, const vox_vec *b,
                                 const vox_vec *x, vox_vec *r);
  vox_status (*stencil_diagonal)(vox_backend *be, vox_stencil *st, vox_vec *d);
  /* Optional (NULL: no such storage): a MIXED stencil that a backend keeps
   * in a precision below float (the CUDA backend's FP16 levels) goes back
   * to float storage for good, and *was says whether it had the reduced
   * storage; its values stay those of the reduced storage until the next
   * Galerkin product. fem.c calls it when a solve breaks down. */
  vox_status (*stencil_full_storage)(vox_backend *be, vox_stencil *st, int *was);
  /* Optional (NULL: multigrid.c runs the steps through the operations
   * above): the Lanczos steps of the smoother's eigenvalue estimate on a
   * stencil, i.e. up to `steps` steps of Jacobi-preconditioned CG on A from
   * r = vec->random(seed), z = inv_diag .* r, p = z, in the same arithmetic
   * as multigrid.c's loop, with the scalars kept where the vectors are and
   * read back once. Gives CG's alpha[j] and beta[j] for j < *done, where
   * *done stops at the first step with p.q <= 0 or r.z <= 0 (steps <=
   * VOX_LANCZOS_MAX_STEPS). r, z, p and q are work vectors of the level. */
  vox_status (*stencil_lanczos)(vox_backend *be, vox_stencil *st, const vox_vec *inv_diag,
                                uint64_t seed, int steps, vox_vec *r, vox_vec *z, vox_vec *p,
                                vox_vec *q, double *alpha, double *beta, int *done);
  /* Direct solve of the coarsest level: factor after each Galerkin update,
   * then solve A x = b. */
  vox_status (*stencil_factor)(vox_backend *be, vox_stencil *st);
  vox_status (*stencil_solve)(vox_backend *be, vox_stencil *st, const vox_vec *b, vox_vec *x);
  /* coarse = R fine;  fine += P coarse  (grids of vox_grid_coarsen) */
  vox_status (*restrict_residual)(vox_backend *be, const vox_grid *fine, int dofs_per_node,
                                  const vox_vec *r_fine, vox_vec *r_coarse);
  vox_status (*prolong_add)(vox_backend *be, const vox_grid *fine, int dofs_per_node,
                            const vox_vec *x_coarse, vox_vec *x_fine);
} vox_multigrid_ops;

/* Design kernels: SIMP, the optimality-criteria update, filters and
 * symmetry, one value per element. */
typedef struct vox_design_ops {
  /* Element-granularity SIMP kernels (e_solid: modulus of the solid, 0 for
   * empty voxels):
   *   moduli_e = e_solid_e (emin + (1 - emin) rho_e^p)
   *   dc_e     = -p rho_e^(p-1) (1 - emin) e_solid_e energy_e        */
  vox_status (*simp_moduli)(vox_backend *be, const vox_vec *rho, const vox_vec *e_solid, double p,
                            double emin, vox_vec *moduli);
  vox_status (*simp_sensitivity)(vox_backend *be, const vox_vec *rho, const vox_vec *e_solid,
                                 const vox_vec *energy, double p, double emin, vox_vec *dc);
  /* Optimality-criteria update for one trial multiplier lambda (Martinez-Frutos et al. 2017
   * eq. 9, 10) on design elements (design_e = 1); other elements get
   * passive_e. B_e = max(0, -dc_e) / (lambda dv_e). Design densities stay in
   * [rho_min, 1]: with rho_min > 0 a density the update takes down never
   * sticks at 0, where x B^eta could not move it again. */
  vox_status (*oc_update)(vox_backend *be, const vox_vec *rho, const vox_vec *dc, const vox_vec *dv,
                          const vox_vec *design, const vox_vec *passive, double lambda, double move,
                          double eta, double q, double rho_min, vox_vec *rho_new);
  /* The volume sum_e dv_e rho_new_e(lambda_j) the update above gives for each
   * of n trial multipliers (n <= VOX_OC_LAMBDAS) in one pass, so that the
   * bisection for lambda narrows its bracket n + 1 times per round instead of
   * twice (Martinez-Frutos et al. 2017 algorithm 8). rho_new(lambda) is separable:
   * x B^eta = x (max(0, -dc) / dv)^eta lambda^-eta. The volume is linear in
   * rho, so its gradient dv is also its weight. */
  vox_status (*oc_volumes)(vox_backend *be, const vox_vec *rho, const vox_vec *dc,
                           const vox_vec *dv, const vox_vec *design, const vox_vec *passive,
                           const double *lambda, int n, double move, double eta, double q,
                           double rho_min, double *volume);
  /* Linear-hat filter of radius R (mm) over the non-empty elements:
   *   apply:       out = (H in) ./ Hs
   *   transpose:   out = H (in ./ Hs)
   *   sensitivity: out = (H (rho .* dc)) ./ (Hs .* max(gamma, rho))   (eq. 3) */
  vox_status (*filter_create)(vox_backend *be, const vox_grid *grid, double radius,
                              const uint8_t *active, vox_filter **filter);
  void (*filter_destroy)(vox_backend *be, vox_filter *filter);
  vox_status (*filter_apply)(vox_backend *be, vox_filter *f, const vox_vec *in, vox_vec *out);
  vox_status (*filter_transpose)(vox_backend *be, vox_filter *f, const vox_vec *in, vox_vec *out);
  vox_status (*filter_sensitivity)(vox_backend *be, vox_filter *f, const vox_vec *rho,
                                   const vox_vec *dc, double gamma, vox_vec *out);
  /* The same filter on a periodic cell (Zhang et al. 2023 section 6.5): taps that
   * reach past a face wrap around to the opposite one, as if the cell were
   * tiled; the taps are not cut at the grid's size. The other filter_*
   * operations work on it unchanged. */
  vox_status (*filter_create_periodic)(vox_backend *be, const vox_grid *grid, double radius,
                                       const uint8_t *active, vox_filter **filter);
  /* Symmetry enforcement (voxfe/symmetry.h) on a vector of one value per
   * element: each element becomes the mean of its orbit under the group, in
   * place, with the same bits on every backend. Fails for a symmetry the
   * grid cannot have (vox_symmetry_check). */
  vox_status (*symmetrize)(vox_backend *be, const vox_grid *grid, vox_symmetry symmetry,
                           vox_vec *v);
  /* Optional (NULL: not on this backend): dst = the node field src (3
   * values a node of the grid, images included; double or half, both the
   * same) turned `turns` times (1 or 2) about the cubic grid's diagonal
   * (symmetry_group.h: vox_turn_source); dst != src. Moves values only:
   * the same bits on every backend. */
  vox_status (*turn_field)(vox_backend *be, const vox_grid *grid, int turns, const vox_vec *src,
                           vox_vec *dst);
} vox_design_ops;

/* The device and the tables of its operations by concern. */
typedef struct vox_backend_ops {
  const char *name;
  void (*destroy)(vox_backend *be);
  /* Waits until every operation issued so far has finished (timing). */
  vox_status (*synchronize)(vox_backend *be);
  /* 1: the backend allocates from a device's fixed memory, so runs check
   * their need against `memory` before allocating (memory_plan.h). */
  int device_memory;
  /* Free and total bytes of the memory the backend allocates from. */
  vox_status (*memory)(vox_backend *be, size_t *free_bytes, size_t *total_bytes);
  /* Optional (NULL: the whole grid, device_memory above): a backend that
   * splits a grid over processes (the MPI backend) gives the part of
   * `grid` this process holds, and whether that part lives in a device's
   * fixed memory (which `memory` then describes), for the memory check. */
  int (*memory_part)(const vox_backend *be, const vox_grid *grid, vox_grid *part);
  /* Optional (NULL: one process, `value` itself): the largest `value` of
   * the processes a backend splits its grids over, for a choice every one
   * of them must make alike (memory_plan.c's by turns); each calls it. */
  int (*agree_max)(vox_backend *be, int value);
  /* Optional (NULL: VOX_RESULTS_EVERY_PROCESS): where a solve's results
   * arrive, vox_results_place (an MPI backend made to deliver them to rank
   * 0 alone, vox_mpi_options.results). */
  int (*results)(const vox_backend *be);
  /* Host memory for what waits off the backend and comes back (a phased
   * cell solve's parked vectors): page-locked on a GPU, whose copies from
   * and to it then run at the bus's speed. host_free takes NULL. */
  vox_status (*host_alloc)(vox_backend *be, size_t bytes, void **p);
  void (*host_free)(vox_backend *be, void *p);
  /* The tables by concern (above). */
  const vox_vector_ops *vec;
  const vox_operator_ops *op;
  const vox_multigrid_ops *mg;
  const vox_design_ops *design;
  /* The sparse (bone-only) system of analyses, sparse_ops.h; NULL where the
   * backend has none. */
  const vox_sparse_ops *sparse;
  /* The periodic cell solver's operations, cell_ops.h; NULL where the
   * backend has none. */
  const vox_cell_ops *cell;
  /* The element-free Galerkin loop's stages, efg_ops.h; NULL where the
   * backend has none. */
  const vox_efg_ops *efg;
  /* The method of moving asymptotes' per-variable work, mma_ops.h; NULL
   * where the backend has none. */
  const vox_mma_ops *mma;
  /* Device memory that ranks of one host write into each other's (the MPI
   * backend's exchanges), peer_ops.h; NULL where the backend has none. */
  const vox_peer_ops *peer;
} vox_backend_ops;

struct vox_backend {
  const vox_backend_ops *ops;
  vox_context *ctx;
  /* The device it runs on, set by its constructor: what the engine asks
   * instead of comparing backend names (vox_backend_device). */
  vox_device device;
  int device_index;
  int threads;   /* CPU threads (0 = OpenMP default) */
  vox_kernel kernel; /* K u variant of operators made from now on */
  vox_fp16_levels fp16_levels; /* vox_backend_options: multigrid levels in FP16 */
  vox_stencil_kernel stencil_kernel; /* vox_backend_options: coarse levels' products */
  void *impl;    /* backend-specific state */
};

/* Where a solve's results (displacements, temperatures) arrive. */
typedef enum vox_results_place {
  /* on every process: the caller's array there is the start and the answer */
  VOX_RESULTS_EVERY_PROCESS = 0,
  /* on this process alone: the answer is written there, the solve starts
   * from zero (the other processes hold no start) */
  VOX_RESULTS_HERE = 1,
  /* on another process: nothing is read or written here (the array may be
   * NULL); the solve starts from zero */
  VOX_RESULTS_ELSEWHERE = 2
} vox_results_place;

static inline vox_results_place vox_results(const vox_backend *be) {
  return be->ops->results ? (vox_results_place)be->ops->results(be) : VOX_RESULTS_EVERY_PROCESS;
}
/* A solve's answer to the host where it arrives (vox_vector_ops.download_result). */
static inline vox_status vox_vec_download_result(vox_backend *be, const vox_vec *v, double *host) {
  const vox_vector_ops *o = be->ops->vec;
  return o->download_result ? o->download_result(be, v, host) : o->download(be, v, host);
}

/* The held part of a double vector (vox_vector_ops.held_n and its copies),
 * the whole vector where the backend holds it whole. */
static inline size_t vox_vec_held_n(vox_backend *be, const vox_vec *v) {
  return be->ops->vec->held_n ? be->ops->vec->held_n(be, v) : v->n;
}
static inline vox_status vox_vec_held_download(vox_backend *be, const vox_vec *v, double *host) {
  const vox_vector_ops *o = be->ops->vec;
  return o->held_download ? o->held_download(be, v, host) : o->download(be, v, host);
}
static inline vox_status vox_vec_held_upload(vox_backend *be, vox_vec *v, const double *host) {
  const vox_vector_ops *o = be->ops->vec;
  return o->held_upload ? o->held_upload(be, v, host) : o->upload(be, v, host);
}

#ifdef __cplusplus
extern "C" {
#endif
/* Each backend's constructor, from checked options (NULL: the defaults;
 * their device is not looked at). CUDA makes device_index the calling
 * thread's current device first when it is 0 or more. */
vox_status vox_cpu_backend_create(vox_context *ctx, const vox_backend_options *options,
                                  vox_backend **out);
/* The arguments of design->turn_field checked (symmetry.c): the same
 * refusal on every backend. */
vox_status vox_turn_field_check(vox_backend *be, const vox_grid *grid, int turns,
                                const vox_vec *src, const vox_vec *dst);
#ifdef VOXFE_HAVE_CUDA
vox_status vox_cuda_backend_create(vox_context *ctx, const vox_backend_options *options,
                                   vox_backend **out);
int vox_cuda_device_count(void);
/* Starts the CUDA runtime and the primary context of device `index` modulo
 * the devices' count (-1: the current device), and loads the coarse
 * solve's library kernels (vox_device_warm_up_start's thread); errors are
 * cleared, not reported. */
void vox_cuda_warm_up(int index);
#endif
#ifdef __cplusplus
}
#endif

/* Propagates a failing status: `TRY(be->ops->vec->dot(...));` */
#define TRY(call)                                                                 \
  do {                                                                            \
    vox_status try_status_ = (call);                                              \
    if (try_status_ != VOX_OK) return try_status_;                                \
  } while (0)

#endif
