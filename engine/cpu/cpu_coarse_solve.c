/* SPDX-License-Identifier: BSD-3-Clause */
/* The direct solve of the coarsest multigrid level on the CPU: the stencil's
 * matrix is put in compressed-column form and factored by sparse Cholesky,
 * A = L L', then each V-cycle solves with the factor.
 *
 * Why CHOLMOD: it is a well-kept, widely used sparse Cholesky (fill-reducing
 * orderings, supernodal kernels on BLAS, refactorisation on a fixed
 * pattern). The coarse stencil is sparse, at most 27 * dofs_per_node (81 for
 * elasticity) nonzeros per row, so a dense factorisation, n^3/3 flops and
 * n^2 doubles, would throw that away.
 *
 * The nonzero pattern depends on the grid only; the values change after each
 * Galerkin update (each design iteration). So the first factorisation builds
 * the matrix and its symbolic analysis (ordering, elimination tree) once, and
 * later ones refill the values and redo the numeric factorisation only. The
 * long-index interface (cholmod_l_*) is used, so nothing overflows on large
 * coarse levels (the factor's nonzeros can pass 2^31 long before its dofs
 * do). CHOLMOD never prints here: Common->print is 0, there is no error
 * handler, and its status is turned into a message on the context. */
#include <stdlib.h>
#include <string.h>

#include <cholmod.h>

#include "cpu.h"

typedef SuiteSparse_long sslong;

/* What hangs off vox_stencil.factor. */
typedef struct coarse_factor {
  cholmod_common cm;       /* CHOLMOD's options, workspace and status */
  cholmod_sparse *a;       /* upper triangle of A (stype 1), fixed pattern */
  cholmod_factor *l;       /* symbolic analysis, then the numeric factor */
  int factored;            /* l holds a factor of the current values */
  cholmod_dense *x, *y, *e; /* cholmod_l_solve2's result and workspace, kept */
} coarse_factor;

/* Walks the upper triangle of A in compressed columns. A is symmetric, so
 * column I of A is row I of the stencil: the column of dof (n, r) holds
 * A(m*dpn + c, n*dpn + r) = A(n*dpn + r, m*dpn + c) = block t of node n,
 * entry (r, c), for the neighbours m <= n (offsets t <= 13; t = 13 is the
 * node itself, whose block contributes its entries c <= r). Row indices come
 * out increasing, as t orders the neighbours by node index. Neighbours
 * outside the grid are skipped. Writes the column pointers and row indices
 * when ap is given, the values when ax is (float values of a
 * VOX_PRECISION_MIXED stencil widened: the factor is double either way);
 * returns the number of entries. */
static size_t walk(const vox_stencil *st, sslong *ap, sslong *ai, double *ax) {
  const int64_t nx = st->grid.nx, ny = st->grid.ny, nz = st->grid.nz;
  const int dpn = st->dpn, periodic = st->grid.periodic;
  size_t p = 0;
  for (int64_t k = 0; k <= nz; k++)
    for (int64_t j = 0; j <= ny; j++)
      for (int64_t i = 0; i <= nx; i++) {
        const int64_t n = (k * (ny + 1) + j) * (nx + 1) + i;
        const int image = periodic && vox_is_image(nx, ny, nz, i, j, k);
        for (int r = 0; r < dpn; r++) {
          if (ap) ap[n * dpn + r] = (sslong)p;
          /* periodic: every neighbour (wrapped) with a lower index; the
           * column is then not sorted (factor_setup says so) */
          for (int t = 0; t < (periodic ? 27 : 14); t++) {
            if (image && t != 13) continue;
            const int64_t m = image ? n : vox_neighbour_node(nx, ny, nz, periodic, i, j, k, t);
            if (m < 0 || m > n) continue;
            /* on a periodic axis of 2 elements two offsets reach the same
             * node: the first of them gets the sum of their blocks */
            int first = 1;
            for (int u = 0; u < t && periodic && !image; u++)
              first &= vox_neighbour_node(nx, ny, nz, 1, i, j, k, u) != m;
            if (!first) continue;
            const int c_end = m == n ? r + 1 : dpn;
            for (int c = 0; c < c_end; c++, p++) {
              double v = vox_cpu_stencil_value(st, ((size_t)(n * 27 + t) * dpn + r) * dpn + c);
              for (int u = t + 1; u < 27 && periodic && !image; u++)
                if (vox_neighbour_node(nx, ny, nz, 1, i, j, k, u) == m)
                  v += vox_cpu_stencil_value(st, ((size_t)(n * 27 + u) * dpn + r) * dpn + c);
              if (ai) ai[p] = (sslong)(m * dpn + c);
              if (ax) ax[p] = v;
            }
          }
        }
      }
  if (ap) ap[st->n_dofs] = (sslong)p;
  return p;
}

/* The context's message for a failed CHOLMOD call. */
static vox_status cholmod_failure(vox_backend *be, const coarse_factor *f, const char *what) {
  switch (f->cm.status) {
  case CHOLMOD_OUT_OF_MEMORY:
    return vox_error(be->ctx, VOX_ERR_NO_MEMORY, "coarse-level Cholesky: out of memory (%s)",
                     what);
  case CHOLMOD_TOO_LARGE:
    return vox_error(be->ctx, VOX_ERR_NO_MEMORY, "coarse-level Cholesky: problem too large (%s)",
                     what);
  case CHOLMOD_NOT_INSTALLED:
    return vox_error(be->ctx, VOX_ERR_UNSUPPORTED,
                     "coarse-level Cholesky: %s not available in this CHOLMOD", what);
  default:
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT,
                     "coarse-level Cholesky: %s failed (CHOLMOD status %d)", what, f->cm.status);
  }
}

void vox_cpu_stencil_factor_free(vox_stencil *st) {
  coarse_factor *f = st ? st->factor : NULL;
  if (!f) return;
  cholmod_l_free_dense(&f->x, &f->cm);
  cholmod_l_free_dense(&f->y, &f->cm);
  cholmod_l_free_dense(&f->e, &f->cm);
  cholmod_l_free_factor(&f->l, &f->cm);
  cholmod_l_free_sparse(&f->a, &f->cm);
  cholmod_l_finish(&f->cm);
  free(f);
  st->factor = NULL;
}

/* The matrix and its symbolic analysis, once per stencil. */
static vox_status factor_setup(vox_backend *be, vox_stencil *st) {
  coarse_factor *f = calloc(1, sizeof *f);
  if (!f) return vox_error(be->ctx, VOX_ERR_NO_MEMORY, "coarse-level Cholesky: out of memory");
  cholmod_l_start(&f->cm);
  st->factor = f; /* from here on, vox_cpu_stencil_factor_free cleans up */
  f->cm.print = 0;            /* the library never prints */
  f->cm.error_handler = NULL;
  f->cm.useGPU = 0;
  /* LL' also in the simplicial case: a simplicial LDL' (CHOLMOD's default
   * there) goes through negative pivots, so an indefinite matrix would not
   * be reported. */
  f->cm.final_ll = 1;
  /* Simplicial: the coarsest level is small (multigrid keeps it to a few
   * thousand unknowns), and the supernodal path would run on BLAS and on
   * CHOLMOD's own OpenMP threads, which contend with ours for the cores
   * (several times slower when measured). */
  f->cm.supernodal = CHOLMOD_SIMPLICIAL;
  f->cm.quick_return_if_not_posdef = 1;
  /* nmethods = 0 (the default) tries AMD only, and METIS as well when AMD's
   * fill is large: cheap, and the analysis is paid once. */
  f->cm.nmethods = 0;

  const size_t n = st->n_dofs, nnz = walk(st, NULL, NULL, NULL);
  f->a = cholmod_l_allocate_sparse(n, n, nnz, !st->grid.periodic /* sorted */, 1 /* packed */,
                                   1 /* upper triangle */, CHOLMOD_REAL, &f->cm);
  if (!f->a) return cholmod_failure(be, f, "matrix");
  walk(st, f->a->p, f->a->i, f->a->x);
  f->l = cholmod_l_analyze(f->a, &f->cm);
  if (!f->l) return cholmod_failure(be, f, "symbolic analysis");
  return VOX_OK;
}

vox_status vox_cpu_stencil_factor(vox_backend *be, vox_stencil *st) {
  coarse_factor *f = st->factor;
  if (f && f->a->nrow != st->n_dofs) { /* not the stencil it was built for */
    vox_cpu_stencil_factor_free(st);
    f = NULL;
  }
  if (!f) {
    vox_status s = factor_setup(be, st);
    if (s != VOX_OK) {
      vox_cpu_stencil_factor_free(st);
      return s;
    }
    f = st->factor;
  } else {
    walk(st, NULL, NULL, f->a->x);
  }

  f->factored = 0;
  const int ok = cholmod_l_factorize(f->a, f->l, &f->cm);
  if (f->cm.status == CHOLMOD_NOT_POSDEF || (ok && f->l->minor < f->l->n)) {
    /* minor: the column, in the factor's (permuted) order, that failed */
    const size_t col = f->l->minor, n = f->l->n;
    const sslong *perm = f->l->Perm;
    const size_t dof = perm && col < n ? (size_t)perm[col] : col;
    const size_t dpn = (size_t)st->dpn;
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT,
                     "coarse-level Cholesky: matrix not positive definite (column %zu of %zu: "
                     "dof %zu of coarse node %zu)",
                     col, n, dof % dpn, dof / dpn);
  }
  if (!ok || f->cm.status < CHOLMOD_OK) return cholmod_failure(be, f, "factorization");
  f->factored = 1;
  return VOX_OK;
}

vox_status vox_cpu_stencil_solve(vox_backend *be, vox_stencil *st, const vox_vec *b,
                                 vox_vec *x) {
  coarse_factor *f = st->factor;
  if (!f || !f->factored)
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT,
                     "coarse-level solve: the stencil has no valid factorization");
  const size_t n = st->n_dofs;
  if (b->n != n || x->n != n)
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT,
                     "coarse-level solve: vectors of %zu and %zu entries for %zu dofs", b->n,
                     x->n, n);
  /* b seen as a dense n x 1 matrix; CHOLMOD only reads it. */
  cholmod_dense bd = {.nrow = n, .ncol = 1, .nzmax = n, .d = n, .x = b->data, .z = NULL,
                      .xtype = CHOLMOD_REAL, .dtype = CHOLMOD_DOUBLE};
  /* f->x, f->y, f->e are allocated by the first call and reused after. */
  if (!cholmod_l_solve2(CHOLMOD_A, f->l, &bd, NULL, &f->x, NULL, &f->y, &f->e, &f->cm))
    return cholmod_failure(be, f, "solve");
  memcpy(x->data, f->x->x, n * sizeof *x->data); /* b and x may be the same vector */
  return VOX_OK;
}
