/* SPDX-License-Identifier: BSD-3-Clause */
/* Backend vectors of any precision from and to host doubles, through a
 * double vector and vec->copy (the tests' inputs and results are doubles;
 * vec->upload and download move a vector's own entries). */
#ifndef VOXFE_TEST_VECTOR_DOUBLES_H
#define VOXFE_TEST_VECTOR_DOUBLES_H

#include "backend_ops.h"

static inline vox_status upload_doubles(vox_backend *be, vox_vec *v, const double *host) {
  if (v->scalar == VOX_DOUBLE) return be->ops->vec->upload(be, v, host);
  vox_vec d;
  TRY(be->ops->vec->create(be, v->n, VOX_DOUBLE, &d));
  vox_status s = be->ops->vec->upload(be, &d, host);
  if (s == VOX_OK) s = be->ops->vec->copy(be, v, &d);
  be->ops->vec->destroy(be, &d);
  return s;
}

static inline vox_status download_doubles(vox_backend *be, const vox_vec *v, double *host) {
  if (v->scalar == VOX_DOUBLE) return be->ops->vec->download(be, v, host);
  vox_vec d;
  TRY(be->ops->vec->create(be, v->n, VOX_DOUBLE, &d));
  vox_status s = be->ops->vec->copy(be, &d, v);
  if (s == VOX_OK) s = be->ops->vec->download(be, &d, host);
  be->ops->vec->destroy(be, &d);
  return s;
}

#endif
