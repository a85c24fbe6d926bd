/* The direct solve of the coarsest multigrid level through the CPU backend
 * (CHOLMOD, engine/cpu/cpu_coarse_solve.c).
 *
 * Why on the host: the coarsest level is kept to a few thousand dofs, where
 * a sparse Cholesky factorisation is cheap on the CPU and a GPU one would be
 * dominated by launch latency. The factor is made once per Galerkin update
 * (a download of the level's stencil), and each V-cycle pays one round trip
 * of a few thousand doubles: b down, x up.
 *
 * The CPU stencil and its two vectors hang off the device stencil (st->host,
 * st->host_b, st->host_x), made by the first factorisation and kept, so the
 * CPU backend's symbolic analysis is reused by later factorisations. */
#include <stdlib.h>

#include "cuda_backend.cuh"

void vox_cuda_stencil_factor_free(vox_backend *be, vox_stencil *st) {
  if (!st) return;
  vox_backend *host = vox_cuda(be)->host;
  if (st->host) host->ops->stencil_destroy(host, st->host);
  if (st->host_b.data) host->ops->vec_destroy(host, &st->host_b);
  if (st->host_x.data) host->ops->vec_destroy(host, &st->host_x);
  st->host = NULL;
}

/* The CPU stencil and vectors, once per stencil. */
static vox_status host_setup(vox_backend *be, vox_stencil *st) {
  vox_backend *host = vox_cuda(be)->host;
  /* always a double stencil: a MIXED level is widened by the download */
  vox_status s = host->ops->stencil_create(host, &st->grid, st->dpn, VOX_PRECISION_DOUBLE,
                                           &st->host);
  if (s == VOX_OK) s = host->ops->vec_create(host, st->n_dofs, &st->host_b);
  if (s == VOX_OK) s = host->ops->vec_create(host, st->n_dofs, &st->host_x);
  if (s != VOX_OK) vox_cuda_stencil_factor_free(be, st);
  return s;
}

vox_status vox_cuda_stencil_factor(vox_backend *be, vox_stencil *st) {
  vox_backend *host = vox_cuda(be)->host;
  if (!st->host) TRY(host_setup(be, st));
  const size_t n = st->n_nodes * 27 * (size_t)(st->dpn * st->dpn);
  double *values = (double *)malloc((n ? n : 1) * sizeof *values);
  if (!values)
    return vox_error(be->ctx, VOX_ERR_NO_MEMORY,
                     "out of memory for the coarsest multigrid level (%zu values)", n);
  /* the download waits for the Galerkin kernels that computed the values */
  vox_status s = vox_cuda_stencil_download(be, st, values);
  if (s == VOX_OK) s = host->ops->stencil_upload(host, st->host, values);
  free(values);
  /* a failed factorisation stays recorded in the CPU stencil, whose solve
   * then reports it */
  if (s == VOX_OK) s = host->ops->stencil_factor(host, st->host);
  return s;
}

vox_status vox_cuda_stencil_solve(vox_backend *be, vox_stencil *st, const vox_vec *b,
                                  vox_vec *x) {
  if (!st->host)
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT,
                     "coarse-level solve: the stencil has not been factored");
  const size_t n = st->n_dofs;
  if (b->n != n || x->n != n)
    return vox_error(be->ctx, VOX_ERR_INVALID_ARGUMENT,
                     "coarse-level solve: vectors of %zu and %zu entries for %zu dofs", b->n,
                     x->n, n);
  vox_backend *host = vox_cuda(be)->host;
  /* cudaMemcpy on the legacy stream waits for the restriction that made b */
  CUDA_TRY(be, cudaMemcpy(st->host_b.data, b->data, n * sizeof *b->data, cudaMemcpyDeviceToHost),
           "reading the coarsest level's right-hand side");
  TRY(host->ops->stencil_solve(host, st->host, &st->host_b, &st->host_x));
  CUDA_TRY(be, cudaMemcpy(x->data, st->host_x.data, n * sizeof *x->data, cudaMemcpyHostToDevice),
           "writing the coarsest level's solution");
  return VOX_OK;
}
