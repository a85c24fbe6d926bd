/* Backend selection: cpu, cuda, or auto (CUDA when built and a device is
 * present, else the CPU). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "backend_ops.h"

struct vox_device_warm_up {
  pthread_t thread;
};

#ifdef VOXFE_HAVE_CUDA
static void *warm_up_main(void *unused) {
  (void)unused;
  vox_cuda_warm_up();
  return NULL;
}
#endif

vox_device_warm_up *vox_device_warm_up_start(vox_device device) {
#ifdef VOXFE_HAVE_CUDA
  const char *env = getenv("VOXFE_DEVICE_WARM_UP");
  if (device == VOX_DEVICE_CPU || (env && strcmp(env, "0") == 0)) return NULL;
  vox_device_warm_up *w = malloc(sizeof *w);
  if (w && pthread_create(&w->thread, NULL, warm_up_main, NULL) != 0) {
    free(w); /* no thread: vox_backend_create starts the device itself */
    w = NULL;
  }
  return w;
#else
  (void)device;
  return NULL;
#endif
}

void vox_device_warm_up_finish(vox_device_warm_up *warm_up) {
  if (!warm_up) return;
  pthread_join(warm_up->thread, NULL);
  free(warm_up);
}

vox_status vox_backend_create(vox_context *ctx, vox_device device, vox_backend **out) {
  *out = NULL;
  switch (device) {
  case VOX_DEVICE_CPU:
    return vox_cpu_backend_create(ctx, out);
  case VOX_DEVICE_CUDA:
#ifdef VOXFE_HAVE_CUDA
    return vox_cuda_backend_create(ctx, out);
#else
    return vox_error(ctx, VOX_ERR_UNSUPPORTED,
                     "this voxfe was built without CUDA (configure with -DVOXFE_CUDA=ON)");
#endif
  case VOX_DEVICE_AUTO:
#ifdef VOXFE_HAVE_CUDA
    if (vox_cuda_backend_create(ctx, out) == VOX_OK) return VOX_OK;
    vox_context_clear_error(ctx);
#endif
    return vox_cpu_backend_create(ctx, out);
  }
  return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "unknown device %d", (int)device);
}

vox_status vox_backend_create_on(vox_context *ctx, vox_device device, int index,
                                 vox_backend **out) {
  *out = NULL;
  if (index < 0 || index >= vox_device_count(device))
    return vox_error(ctx, VOX_ERR_DEVICE, "no %s device %d (%d present)",
                     device == VOX_DEVICE_CPU ? "CPU" : "CUDA", index, vox_device_count(device));
#ifdef VOXFE_HAVE_CUDA
  if (device == VOX_DEVICE_CUDA) return vox_cuda_backend_create_on(ctx, index, out);
#endif
  return vox_cpu_backend_create(ctx, out);
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

static const char *const kernel_names[] = {"auto", "dbd", "nbn", "ebe"};

const char *vox_kernel_name(vox_kernel kernel) {
  return (unsigned)kernel < 4 ? kernel_names[kernel] : "unknown";
}

int vox_kernel_parse(const char *text, vox_kernel *kernel) {
  for (int i = 0; i < 4; i++)
    if (strcmp(text, kernel_names[i]) == 0) {
      *kernel = (vox_kernel)i;
      return 0;
    }
  return -1;
}

vox_status vox_backend_memory(vox_backend *backend, size_t *free_bytes, size_t *total_bytes) {
  return backend->ops->memory(backend, free_bytes, total_bytes);
}
