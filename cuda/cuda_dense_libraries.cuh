/* SPDX-License-Identifier: BSD-3-Clause */
/* cuBLAS's and cuSOLVER's entry points that the CUDA backend calls (the
 * dense factor and inverse of a coarsest multigrid level), loaded at run
 * time instead of linked. The two libraries and what they pull in
 * (cuBLASLt, cuSPARSE, nvJitLink) are about 1 GB of shared objects whose
 * relocations every start of a program linked with them paid, before
 * main, whether it used the GPU or not (0.06-0.16 s and 260 MB of memory
 * on the development machine): loaded here, a program pays only when a
 * device solve needs them, and the programs' device warm-up thread
 * (vox_cuda_warm_up) loads them while the model is read. */
#ifndef VOXFE_CUDA_DENSE_LIBRARIES_CUH
#define VOXFE_CUDA_DENSE_LIBRARIES_CUH

#include <cublas_v2.h>
#include <cusolverDn.h>

typedef struct vox_cuda_dense_api {
  decltype(&cusolverDnCreate) solver_create;
  decltype(&cusolverDnDestroy) solver_destroy;
  decltype(&cusolverDnSetStream) solver_set_stream;
  decltype(&cusolverDnDpotrf_bufferSize) potrf_buffer_size;
  decltype(&cusolverDnDpotrf) potrf;
  decltype(&cublasCreate) blas_create;
  decltype(&cublasDestroy) blas_destroy;
  decltype(&cublasSetStream) blas_set_stream;
  decltype(&cublasDtrsm) trsm;
  decltype(&cublasDtrmm) trmm;
  decltype(&cublasDsyrk) syrk;
} vox_cuda_dense_api;

/* The entry points, the libraries loaded by the first call of the process
 * (thread-safe); NULL if they could not be, and then *why (if not NULL)
 * says which library and the loader's reason. */
const vox_cuda_dense_api *vox_cuda_dense(const char **why);

#endif
