/* SPDX-License-Identifier: BSD-3-Clause */
/* The backend's one vector type (private): entries in the backend's memory
 * (host memory for the CPU, device memory for CUDA) in the precision the
 * vector carries. Box solves work in double; the multigrid levels of the
 * bone and the cell keep float; a periodic cell's stored fields are half
 * precision; the bone smoother's inverse blocks may be bfloat16. */
#ifndef VOXFE_VECTOR_H
#define VOXFE_VECTOR_H

#include <stddef.h>
#include <stdint.h>

/* The precision of a vector's entries in memory. */
typedef enum vox_scalar {
  VOX_DOUBLE = 0,
  VOX_FLOAT = 1,
  /* bfloat16 (8 bits of mantissa, float's range): the bone smoother's
   * inverse blocks in mixed precision (sparse_ops.h) */
  VOX_BF16 = 2,
  /* float with a node's three entries in 16 bytes, a fourth (zero) padding
   * them: entry i at float 4 (i / 3) + i % 3 (the bone's V-cycle products
   * on a backend that adds a node's three as one 16-byte atomic) */
  VOX_FLOAT_NODE4 = 3,
  /* IEEE binary16 bit patterns: fields that are only stored between uses
   * (a periodic cell's displacement fields, homogenize.c) */
  VOX_HALF = 4,
} vox_scalar;

typedef struct vox_vec {
  union {
    double *data; /* the entries of a VOX_DOUBLE vector */
    void *raw;    /* those of any precision */
  };
  size_t n;
  vox_scalar scalar;
} vox_vec;

/* The bytes of one entry, and of a vector of n entries. */
static inline size_t vox_scalar_bytes(vox_scalar s) {
  return s == VOX_DOUBLE ? 8 : s == VOX_BF16 || s == VOX_HALF ? 2 : 4;
}
static inline size_t vox_vec_bytes(size_t n, vox_scalar s) {
  return s == VOX_FLOAT_NODE4 ? (n + 2) / 3 * 4 * sizeof(float) : n * vox_scalar_bytes(s);
}

#endif
