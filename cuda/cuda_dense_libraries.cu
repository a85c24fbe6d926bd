/* SPDX-License-Identifier: BSD-3-Clause */
/* cuBLAS and cuSOLVER loaded at run time (cuda_dense_libraries.cuh). */
#include "cuda_dense_libraries.cuh"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

/* The libraries' sonames and the toolkit's folder, from the build's CUDA
 * toolkit (cuda/CMakeLists.txt): the loader's own search (LD_LIBRARY_PATH,
 * the system's cache, libvoxfe's run path) first, then that folder. */
#ifndef VOXFE_CUBLAS_SONAME
#error "VOXFE_CUBLAS_SONAME must name cuBLAS's soname"
#endif
#ifndef VOXFE_CUSOLVER_SONAME
#error "VOXFE_CUSOLVER_SONAME must name cuSOLVER's soname"
#endif

/* cublas_v2.h maps cublasCreate and the others to their _v2 symbols */
#define SYMBOL_NAME(f) SYMBOL_TEXT(f)
#define SYMBOL_TEXT(f) #f

static vox_cuda_dense_api api;
static int loaded;
static char failure[512];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void *open_library(const char *soname) {
  void *lib = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
#ifdef VOXFE_CUDA_LIBRARY_DIR
  if (!lib) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", VOXFE_CUDA_LIBRARY_DIR, soname);
    lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  }
#endif
  if (!lib) {
    const char *reason = dlerror();
    snprintf(failure, sizeof failure, "cannot load %s: %s", soname, reason ? reason : "not found");
  }
  return lib;
}

template <typename F>
static bool find(void *lib, const char *soname, const char *name, F *entry) {
  *entry = reinterpret_cast<F>(dlsym(lib, name));
  if (!*entry) snprintf(failure, sizeof failure, "%s has no %s", soname, name);
  return *entry != nullptr;
}

static void load(void) {
  /* the libraries stay loaded for the process */
  void *solver = open_library(VOXFE_CUSOLVER_SONAME);
  void *blas = solver ? open_library(VOXFE_CUBLAS_SONAME) : NULL;
  if (!solver || !blas) return;
  const char *s = VOXFE_CUSOLVER_SONAME, *b = VOXFE_CUBLAS_SONAME;
  loaded = find(solver, s, SYMBOL_NAME(cusolverDnCreate), &api.solver_create) &&
           find(solver, s, SYMBOL_NAME(cusolverDnDestroy), &api.solver_destroy) &&
           find(solver, s, SYMBOL_NAME(cusolverDnSetStream), &api.solver_set_stream) &&
           find(solver, s, SYMBOL_NAME(cusolverDnDpotrf_bufferSize), &api.potrf_buffer_size) &&
           find(solver, s, SYMBOL_NAME(cusolverDnDpotrf), &api.potrf) &&
           find(blas, b, SYMBOL_NAME(cublasCreate), &api.blas_create) &&
           find(blas, b, SYMBOL_NAME(cublasDestroy), &api.blas_destroy) &&
           find(blas, b, SYMBOL_NAME(cublasSetStream), &api.blas_set_stream) &&
           find(blas, b, SYMBOL_NAME(cublasDtrsm), &api.trsm) &&
           find(blas, b, SYMBOL_NAME(cublasDtrmm), &api.trmm) &&
           find(blas, b, SYMBOL_NAME(cublasDsyrk), &api.syrk);
}

const vox_cuda_dense_api *vox_cuda_dense(const char **why) {
  pthread_once(&once, load);
  if (!loaded && why) *why = failure;
  return loaded ? &api : NULL;
}
