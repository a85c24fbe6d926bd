/* Compute backends. The solver and the optimizer are written once against the
 * backend interface (engine/backend_ops.h); the CPU backend (OpenMP) and the
 * CUDA backend implement it and must agree within rounding. */
#ifndef VOXFE_BACKEND_H
#define VOXFE_BACKEND_H

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

vox_status vox_backend_create(vox_context *ctx, vox_device device, vox_backend **out);
void vox_backend_destroy(vox_backend *backend);
/* "cpu" or "cuda". */
const char *vox_backend_name(const vox_backend *backend);
/* Parses "cpu", "cuda" or "auto"; returns -1 for anything else. */
int vox_device_parse(const char *text, vox_device *device);

#ifdef __cplusplus
}
#endif
#endif
