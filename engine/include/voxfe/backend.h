/* SPDX-License-Identifier: BSD-3-Clause */
/* Compute backends. The solver and the optimizer are written once against the
 * backend interface (engine/backend_ops.h); the CPU backend (OpenMP) and the
 * CUDA backend implement it and must agree within rounding. */
#ifndef VOXFE_BACKEND_H
#define VOXFE_BACKEND_H

#include <stddef.h>

#include "voxfe/context.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum vox_device {
  VOX_DEVICE_AUTO = 0, /* the GPU when this build has CUDA and a device is present */
  VOX_DEVICE_CPU = 1,
  VOX_DEVICE_CUDA = 2
} vox_device;

typedef struct vox_backend vox_backend;

/* The fine-level matrix-free K u of the CUDA backend (Martinez-Frutos et
 * al. 2017, Ratnakar et al. 2021, Arbenz et al. 2014): one thread per
 * degree of freedom with the element data staged in shared memory (dbd),
 * one thread per node (nbn), one thread per element with the element
 * product scattered in 8 colours (ebe), or one thread per column of
 * elements with the element products by the brick's reflection modes,
 * summed into the nodes (modes; elasticity on a brick's Ke, any other
 * operator takes nbn). AUTO is the fastest for the dofs per node
 * (docs/benchmarks.md). The CPU backend has one element-by-element kernel
 * and takes any value. */
typedef enum vox_kernel {
  VOX_KERNEL_AUTO = 0,
  VOX_KERNEL_DBD = 1,
  VOX_KERNEL_NBN = 2,
  VOX_KERNEL_EBE = 3,
  VOX_KERNEL_MODES = 4
} vox_kernel;

/* FP16 storage of the smoothed coarse multigrid levels in MIXED precision
 * (the CUDA backend; cuda/README.md): each level held as S A S with A in
 * FP16 and the diagonal scaling S in float, stochastically rounded, for a
 * third less time in a level's product. AUTO is on for a grid that is not
 * periodic (the 256 x 128 x 128 cantilever: 0.095 against 0.100 s per
 * design iteration on an H100) and off for a periodic cell (a 128^3 cell
 * needs 22 against 12.5 CG iterations per field with it). A solve that
 * breaks down with FP16 levels is redone with float ones, which stay. The
 * CPU backend stores its levels in double and takes any value. */
typedef enum vox_fp16_levels {
  VOX_FP16_LEVELS_AUTO = 0,
  VOX_FP16_LEVELS_OFF = 1,
  VOX_FP16_LEVELS_ON = 2
} vox_fp16_levels;

/* The product of a coarse multigrid level's assembled stencil (the CUDA
 * backend; cuda/README.md): a thread per row (ROW), whose 27 neighbour
 * blocks follow one another, or a warp per node (WARP), lane t on
 * neighbour block t and the rows summed across the warp: ten times the
 * threads, for the levels too small to fill the device a thread a row
 * (their products then wait on the chain of loads). AUTO takes WARP for
 * the small levels (cuda/README.md says from which size). The two sum in
 * other orders (other rounding). The CPU backend has one product and takes
 * any value. */
typedef enum vox_stencil_kernel {
  VOX_STENCIL_KERNEL_AUTO = 0,
  VOX_STENCIL_KERNEL_ROW = 1,
  VOX_STENCIL_KERNEL_WARP = 2
} vox_stencil_kernel;

/* What a backend is made with; vox_backend_options_default fills it. */
typedef struct vox_backend_options {
  vox_device device;
  int device_index;            /* -1: the calling thread's current device (0 unless set) */
  vox_kernel kernel;           /* the K u variant of its operators */
  vox_fp16_levels fp16_levels; /* its multigrid levels in FP16 */
  vox_stencil_kernel stencil_kernel; /* its coarse levels' products */
} vox_backend_options;

void vox_backend_options_default(vox_backend_options *options);
/* A backend made from `options` (NULL: the defaults). With a device_index
 * of 0 or more, CUDA makes that device the calling thread's current one:
 * use such a backend from the thread that made it. */
vox_status vox_backend_create_with(vox_context *ctx, const vox_backend_options *options,
                                   vox_backend **out);
/* The options the backend runs with: the device it took (CPU or CUDA, not
 * AUTO), its device's index, the kernel last set. */
void vox_backend_options_get(const vox_backend *backend, vox_backend_options *options);
/* "auto" / "off" / "on"; the parser returns -1 for anything else. */
const char *vox_fp16_levels_name(vox_fp16_levels use);
int vox_fp16_levels_parse(const char *text, vox_fp16_levels *use);
/* "auto" / "row" / "warp"; the parser returns -1 for anything else. */
const char *vox_stencil_kernel_name(vox_stencil_kernel kernel);
int vox_stencil_kernel_parse(const char *text, vox_stencil_kernel *kernel);

/* vox_backend_create_with the defaults on `device`. */
vox_status vox_backend_create(vox_context *ctx, vox_device device, vox_backend **out);
/* The same on device `index` of its kind (CUDA: the index of
 * cudaSetDevice; the CPU has the one device 0). */
vox_status vox_backend_create_on(vox_context *ctx, vox_device device, int index,
                                 vox_backend **out);
/* Starting a device's driver and context ahead of vox_backend_create, in a
 * thread of its own, so that a program overlaps it with its other work
 * (voxfe-analyze: with reading the model and its connectivity; voxfe-optimize:
 * with reading the model), since the
 * CUDA runtime's start takes a few tenths of a second. For CUDA and
 * AUTO in a CUDA build it starts the runtime on CUDA device `device_index`
 * modulo the devices' count (the GPU that an MPI rank of that rank on its
 * node takes), or on the thread's current device (0 unless set) for -1,
 * then loads the kernels of the libraries that
 * factor a multigrid's coarsest level (cuSOLVER, cuBLAS: slow at their
 * first use); nothing otherwise; a failure there is left for
 * vox_backend_create to report. The backend may be created while the
 * thread runs (the CUDA runtime waits for the context it is making);
 * finish (it waits for the thread) before the program ends; NULL is a
 * warm-up that did nothing. */
typedef struct vox_device_warm_up vox_device_warm_up;
vox_device_warm_up *vox_device_warm_up_start(vox_device device, int device_index);
void vox_device_warm_up_finish(vox_device_warm_up *warm_up);
/* Devices of a kind this build can use: CUDA devices (0 without CUDA), 1
 * for the CPU. */
int vox_device_count(vox_device device);
/* The kind of device the backend runs on (VOX_DEVICE_CPU or
 * VOX_DEVICE_CUDA, never AUTO), and its index among the devices of that
 * kind (0 for the CPU). */
vox_device vox_backend_device(const vox_backend *backend);
int vox_backend_device_index(const vox_backend *backend);
void vox_backend_destroy(vox_backend *backend);
/* "cpu" or "cuda". */
const char *vox_backend_name(const vox_backend *backend);
/* Parses "cpu", "cuda" or "auto"; returns -1 for anything else. */
int vox_device_parse(const char *text, vox_device *device);

/* The K u variant for operators made after the call. */
void vox_backend_set_kernel(vox_backend *backend, vox_kernel kernel);
vox_kernel vox_backend_kernel(const vox_backend *backend);
/* "auto", "dbd", "nbn", "ebe"; the parser returns -1 for anything else. */
const char *vox_kernel_name(vox_kernel kernel);
int vox_kernel_parse(const char *text, vox_kernel *kernel);

/* Device memory: free and total bytes (the CPU backend reports physical
 * memory). */
vox_status vox_backend_memory(vox_backend *backend, size_t *free_bytes, size_t *total_bytes);

#ifdef __cplusplus
}
#endif
#endif
