/* SPDX-License-Identifier: BSD-3-Clause */
/* The method of moving asymptotes on a backend's vectors (private): the
 * state of voxfe/mma.h's vox_mma made on any backend with MMA operations
 * (mma_ops.h), whose inputs the caller puts straight into the method's
 * vectors (the optimizer gathers them from its vectors per element on the
 * device) instead of passing host arrays. The public functions of
 * voxfe/mma.h are these on a CPU backend of the method's own. */
#ifndef VOXFE_MMA_BACKEND_H
#define VOXFE_MMA_BACKEND_H

#include "layout.h"
#include "mma_ops.h"
#include "voxfe/mma.h"

/* The method's vectors for n variables and m constraints (layout.h): v
 * NULL counts them only (the memory plan). */
void vox_mma_layout(size_t n, int m, vox_mma_vectors *v, vox_layout *l);

/* The method on `be` (VOX_ERR_UNSUPPORTED where the backend has no MMA
 * operations). vox_mma_lower, vox_mma_upper and vox_mma_update are the host
 * API's: not for this one. */
vox_status vox_mma_create_on(vox_backend *be, size_t n, int m, const vox_mma_options *options,
                             vox_mma **out);

/* Its vectors: the inputs (xval, xmin, xmax, df0dx, dfdx) to fill before
 * vox_mma_step or vox_mma_kkt_at, and after vox_mma_step the new x in x.
 * (The pointer stays valid; the vectors' roles may move between buffers.) */
vox_mma_vectors *vox_mma_vectors_of(vox_mma *mma);

/* One outer iteration from the inputs in the vectors and the constraints'
 * values fval (m, host): the new x in the vectors' x. The inputs are spent
 * (xval becomes the history's; fill them all again for the next one). */
vox_status vox_mma_step(vox_mma *mma, const double *fval);

/* vox_mma_kkt at the inputs in the vectors. */
vox_status vox_mma_kkt_at(vox_mma *mma, const double *fval, double *norm, double *max);

#endif
