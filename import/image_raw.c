/* SPDX-License-Identifier: BSD-3-Clause */
/* Raw volumes: voxels of one type back to back, x fastest, with the size and
 * type given by the user; and the decoding of typed voxels to float that the
 * MetaImage and AIM readers share. */
#include <stdlib.h>
#include <string.h>

#include "image_internal.h"

static const struct {
  const char *name;
  int size;
} raw_types[] = {
    [VOX_RAW_U8] = {"uint8", 1},    [VOX_RAW_I8] = {"int8", 1},     [VOX_RAW_U16] = {"uint16", 2},
    [VOX_RAW_I16] = {"int16", 2},   [VOX_RAW_U32] = {"uint32", 4},  [VOX_RAW_I32] = {"int32", 4},
    [VOX_RAW_F32] = {"float32", 4}, [VOX_RAW_F64] = {"float64", 8},
};

int vox_image_parse_raw_type(const char *name, vox_raw_type *type) {
  for (int t = 0; t < (int)(sizeof raw_types / sizeof raw_types[0]); t++)
    if (strcmp(name, raw_types[t].name) == 0) {
      *type = (vox_raw_type)t;
      return 0;
    }
  return -1;
}

const char *vox_image_raw_type_name(vox_raw_type type) { return raw_types[type].name; }

int vox_image_raw_type_size(vox_raw_type type) { return raw_types[type].size; }

int image_host_big_endian(void) {
  const uint16_t one = 1;
  return *(const uint8_t *)&one == 0;
}

/* Loads one value of `size` bytes, swapping when the orders differ; memcpy
 * because the source need not be aligned. */
static inline void load(const unsigned char *p, int size, int swap, void *out) {
  unsigned char b[8];
  if (swap)
    for (int i = 0; i < size; i++) b[i] = p[size - 1 - i];
  else
    memcpy(b, p, (size_t)size);
  memcpy(out, b, (size_t)size);
}

void image_decode(const void *src, vox_raw_type type, int big_endian, size_t n, float *dst) {
  const unsigned char *p = src;
  int size = raw_types[type].size, swap = size > 1 && big_endian != image_host_big_endian();
  switch (type) {
#define DECODE(ctype)                                                                              \
  for (size_t i = 0; i < n; i++) {                                                                 \
    ctype v;                                                                                       \
    load(p + i * sizeof(ctype), sizeof(ctype), swap, &v);                                          \
    dst[i] = (float)v;                                                                             \
  }                                                                                                \
  break;
  case VOX_RAW_U8: DECODE(uint8_t)
  case VOX_RAW_I8: DECODE(int8_t)
  case VOX_RAW_U16: DECODE(uint16_t)
  case VOX_RAW_I16: DECODE(int16_t)
  case VOX_RAW_U32: DECODE(uint32_t)
  case VOX_RAW_I32: DECODE(int32_t)
  case VOX_RAW_F32: DECODE(float)
  case VOX_RAW_F64: DECODE(double)
#undef DECODE
  }
}

/* Reads and decodes the voxels slice by slice, so that only one slice of
 * typed bytes is held beside the float volume. */
static vox_status read_voxels(vox_context *ctx, const char *path, FILE *f, uint64_t offset,
                              vox_raw_type type, int big_endian, vox_image *image) {
  int size = raw_types[type].size;
  size_t slice = (size_t)(image->n[0] * image->n[1]);
  unsigned char *buf = malloc(slice * (size_t)size);
  if (!buf) return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
  vox_status s = VOX_OK;
  for (int64_t k = 0; k < image->n[2] && !s; k++) {
    s = image_read_at(ctx, path, f, offset + (uint64_t)k * slice * (uint64_t)size, buf,
                      slice * (size_t)size);
    if (!s) image_decode(buf, type, big_endian, slice, image->data + (size_t)k * slice);
  }
  free(buf);
  return s;
}

vox_status vox_image_read_raw(vox_context *ctx, const char *path, const vox_raw_layout *layout,
                              vox_image *image) {
  memset(image, 0, sizeof *image);
  uint64_t file_size;
  size_t bytes;
  vox_status s = image_file_size(ctx, path, &file_size);
  if (!s)
    s = image_checked_size(ctx, path, layout->n, (size_t)raw_types[layout->type].size, &bytes);
  if (s) return s;
  if (file_size < layout->header_bytes || file_size - layout->header_bytes != bytes)
    return vox_error(ctx, VOX_ERR_FORMAT,
                     "%s: holds %llu bytes, but %lldx%lldx%lld %s voxels after a %llu-byte "
                     "header take %llu",
                     path, (unsigned long long)file_size, (long long)layout->n[0],
                     (long long)layout->n[1], (long long)layout->n[2], raw_types[layout->type].name,
                     (unsigned long long)layout->header_bytes,
                     (unsigned long long)(layout->header_bytes + bytes));
  FILE *f = fopen(path, "rb");
  if (!f) return vox_error(ctx, VOX_ERR_IO, "%s: cannot open", path);
  s = vox_image_init(ctx, image, layout->n);
  if (!s)
    s = read_voxels(ctx, path, f, layout->header_bytes, layout->type, layout->big_endian, image);
  fclose(f);
  if (s) {
    vox_image_free(image);
    return s;
  }
  snprintf(image->format, sizeof image->format, "raw");
  return VOX_OK;
}

vox_status image_read_typed(vox_context *ctx, const char *path, uint64_t offset, vox_raw_type type,
                            int big_endian, vox_image *image) {
  FILE *f = fopen(path, "rb");
  if (!f) return vox_error(ctx, VOX_ERR_IO, "%s: cannot open", path);
  vox_status s = read_voxels(ctx, path, f, offset, type, big_endian, image);
  fclose(f);
  return s;
}
