/* SPDX-License-Identifier: BSD-3-Clause */
/* Backend selection: cpu, cuda, or auto (CUDA when built and a device is
 * present, else the CPU). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "backend_ops.h"
#include "name_table.h"

struct vox_device_warm_up {
  pthread_t thread;
  int device_index;
};

#ifdef VOXFE_HAVE_CUDA
static void *warm_up_main(void *self) {
  vox_cuda_warm_up(((const vox_device_warm_up *)self)->device_index);
  return NULL;
}
#endif

vox_device_warm_up *vox_device_warm_up_start(vox_device device, int device_index) {
#ifdef VOXFE_HAVE_CUDA
  if (device == VOX_DEVICE_CPU) return NULL;
  vox_device_warm_up *w = malloc(sizeof *w);
  if (w) w->device_index = device_index;
  if (w && pthread_create(&w->thread, NULL, warm_up_main, w) != 0) {
    free(w); /* no thread: vox_backend_create starts the device itself */
    w = NULL;
  }
  return w;
#else
  (void)device, (void)device_index;
  return NULL;
#endif
}

void vox_device_warm_up_finish(vox_device_warm_up *warm_up) {
  if (!warm_up) return;
  pthread_join(warm_up->thread, NULL);
  free(warm_up);
}

void vox_backend_options_default(vox_backend_options *options) {
  *options = (vox_backend_options){.device = VOX_DEVICE_AUTO,
                                   .device_index = -1,
                                   .kernel = VOX_KERNEL_AUTO,
                                   .fp16_levels = VOX_FP16_LEVELS_AUTO,
                                   .stencil_kernel = VOX_STENCIL_KERNEL_AUTO};
}

vox_status vox_backend_create_with(vox_context *ctx, const vox_backend_options *options,
                                   vox_backend **out) {
  *out = NULL;
  vox_backend_options o;
  if (options)
    o = *options;
  else
    vox_backend_options_default(&o);
  if ((unsigned)o.fp16_levels > VOX_FP16_LEVELS_ON || (unsigned)o.kernel > VOX_KERNEL_MODES)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "backend options: unknown %s %d",
                     (unsigned)o.kernel > VOX_KERNEL_MODES ? "kernel" : "fp16_levels",
                     (unsigned)o.kernel > VOX_KERNEL_MODES ? (int)o.kernel : (int)o.fp16_levels);
  if ((unsigned)o.stencil_kernel > VOX_STENCIL_KERNEL_WARP)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "backend options: unknown stencil_kernel %d",
                     (int)o.stencil_kernel);
  if (o.device_index >= 0 && o.device_index >= vox_device_count(o.device))
    return vox_error(ctx, VOX_ERR_DEVICE, "no %s device %d (%d present)",
                     o.device == VOX_DEVICE_CPU ? "CPU" : "CUDA", o.device_index,
                     vox_device_count(o.device));
  switch (o.device) {
  case VOX_DEVICE_CPU:
    return vox_cpu_backend_create(ctx, &o, out);
  case VOX_DEVICE_CUDA:
#ifdef VOXFE_HAVE_CUDA
    return vox_cuda_backend_create(ctx, &o, out);
#else
    return vox_error(ctx, VOX_ERR_UNSUPPORTED,
                     "this voxfe was built without CUDA (configure with -DVOXFE_CUDA=ON)");
#endif
  case VOX_DEVICE_AUTO:
#ifdef VOXFE_HAVE_CUDA
    if (vox_cuda_backend_create(ctx, &o, out) == VOX_OK) return VOX_OK;
    vox_context_clear_error(ctx);
#endif
    return vox_cpu_backend_create(ctx, &o, out);
  }
  return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "unknown device %d", (int)o.device);
}

vox_status vox_backend_create(vox_context *ctx, vox_device device, vox_backend **out) {
  vox_backend_options o;
  vox_backend_options_default(&o);
  o.device = device;
  return vox_backend_create_with(ctx, &o, out);
}

vox_status vox_backend_create_on(vox_context *ctx, vox_device device, int index,
                                 vox_backend **out) {
  *out = NULL;
  if (index < 0) /* the options' -1 means the current device; here it is no device */
    return vox_error(ctx, VOX_ERR_DEVICE, "no %s device %d",
                     device == VOX_DEVICE_CPU ? "CPU" : "CUDA", index);
  vox_backend_options o;
  vox_backend_options_default(&o);
  o.device = device;
  o.device_index = index;
  return vox_backend_create_with(ctx, &o, out);
}

void vox_backend_options_get(const vox_backend *backend, vox_backend_options *options) {
  vox_backend_options_default(options);
  options->device = backend->device;
  options->device_index = vox_backend_device_index(backend);
  options->kernel = backend->kernel;
  options->fp16_levels = backend->fp16_levels;
  options->stencil_kernel = backend->stencil_kernel;
}

static const char *const fp16_levels_names[] = {"auto", "off", "on"};

const char *vox_fp16_levels_name(vox_fp16_levels use) {
  return (unsigned)use <= VOX_FP16_LEVELS_ON ? fp16_levels_names[use] : "unknown";
}

int vox_fp16_levels_parse(const char *text, vox_fp16_levels *use) {
  const int i = vox_name_index(text, fp16_levels_names, VOX_FP16_LEVELS_ON + 1);
  if (i >= 0) *use = (vox_fp16_levels)i;
  return i >= 0 ? 0 : -1;
}

static const char *const stencil_kernel_names[] = {"auto", "row", "warp"};

const char *vox_stencil_kernel_name(vox_stencil_kernel kernel) {
  return (unsigned)kernel <= VOX_STENCIL_KERNEL_WARP ? stencil_kernel_names[kernel] : "unknown";
}

int vox_stencil_kernel_parse(const char *text, vox_stencil_kernel *kernel) {
  const int i = vox_name_index(text, stencil_kernel_names, VOX_STENCIL_KERNEL_WARP + 1);
  if (i >= 0) *kernel = (vox_stencil_kernel)i;
  return i >= 0 ? 0 : -1;
}

int vox_device_count(vox_device device) {
  if (device == VOX_DEVICE_CPU) return 1;
#ifdef VOXFE_HAVE_CUDA
  if (device == VOX_DEVICE_CUDA) return vox_cuda_device_count();
#endif
  return 0;
}

int vox_backend_device_index(const vox_backend *backend) { return backend->device_index; }

vox_device vox_backend_device(const vox_backend *backend) { return backend->device; }

void vox_backend_destroy(vox_backend *backend) {
  if (backend) backend->ops->destroy(backend);
}

const char *vox_backend_name(const vox_backend *backend) { return backend->ops->name; }

int vox_device_parse(const char *text, vox_device *device) {
  static const struct { const char *name; vox_device device; } names[] = {
      {"auto", VOX_DEVICE_AUTO}, {"cpu", VOX_DEVICE_CPU}, {"cuda", VOX_DEVICE_CUDA}};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strcmp(text, names[i].name) == 0) {
      *device = names[i].device;
      return 0;
    }
  return -1;
}

void vox_backend_set_kernel(vox_backend *backend, vox_kernel kernel) { backend->kernel = kernel; }

vox_kernel vox_backend_kernel(const vox_backend *backend) { return backend->kernel; }

static const char *const kernel_names[] = {"auto", "dbd", "nbn", "ebe", "modes"};

const char *vox_kernel_name(vox_kernel kernel) {
  return (unsigned)kernel <= VOX_KERNEL_MODES ? kernel_names[kernel] : "unknown";
}

int vox_kernel_parse(const char *text, vox_kernel *kernel) {
  for (int i = 0; i <= VOX_KERNEL_MODES; i++)
    if (strcmp(text, kernel_names[i]) == 0) {
      *kernel = (vox_kernel)i;
      return 0;
    }
  return -1;
}

vox_status vox_backend_memory(vox_backend *backend, size_t *free_bytes, size_t *total_bytes) {
  return backend->ops->memory(backend, free_bytes, total_bytes);
}
