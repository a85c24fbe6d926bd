/* SPDX-License-Identifier: BSD-3-Clause */
/* Scanco AIM, the HR-pQCT and micro-CT format, versions 020 and 030
 * (../shared/docs/FORMATS.md has the layout; written from that description).
 *
 *   v020: pre-header of five little-endian int32 (its own length 20, the
 *         struct's length 140, the log's, the data's, the associated data's),
 *         the struct (six int32: version, log, data, id, reference, type;
 *         seven int32 triplets: position, dimension, offset, sup-dimension,
 *         sup-position, sub-dimension, test-offset; the element size as three
 *         VAX F-floats), the processing log, the data.
 *   v030: the text "AIMDATA_V030   " and a NUL, then the same with int64
 *         pre-header fields and triplets (version, id, reference, type stay
 *         int32) and the element size as an int64 times 1e-6 mm. (The offsets of
 *         the v030 struct: version, id, reference, type as int32 at 0-15,
 *         then the int64 triplets from 16, the element size at 184.)
 *
 * The processing log's "key  value" lines give the calibration: Mu_Scaling,
 * "HU: mu water", "Density: slope", "Density: intercept", "Density: unit".
 * Run-length binary, run-length char and 2x2x2 bit-packed data are decoded. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "image_internal.h"

enum {
  AIM_CHAR = 0x00010001,
  AIM_SHORT = 0x00020002,
  AIM_INT = 0x00030004,
  AIM_FLOAT = 0x001a0004,
  AIM_USHORT = 0x00170002,
  AIM_UCHAR = 0x00160001,
  AIM_UCHAR_OLD = 0x000d0001,
  AIM_BINARY_RLE = 0x00150001,
  AIM_CHAR_RLE = 0x00080002,
  AIM_BITS_PACKED = 0x00060001
};

#define V030_MAGIC "AIMDATA_V030   "
#define LOG_MAX (16u << 20) /* a processing log is a few kilobytes */

typedef struct aim_header {
  int v030;
  uint64_t data_offset, data_bytes, log_offset, log_bytes;
  uint32_t type;
  int64_t position[3], dim[3];
  double element_mm[3];
} aim_header;

static uint32_t u32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t u64(const unsigned char *p) { return u32(p) | (uint64_t)u32(p + 4) << 32; }

/* A VAX F-float: the 16-bit halves swapped, and an exponent bias that makes
 * the IEEE reading four times too large. */
static double vax_float(const unsigned char *p) {
  uint32_t w = (uint32_t)p[0] << 16 | (uint32_t)p[1] << 24 | p[2] | (uint32_t)p[3] << 8;
  float f;
  memcpy(&f, &w, sizeof f);
  return 0.25 * f;
}

static vox_status corrupt(vox_context *ctx, const char *path, const char *what) {
  return vox_error(ctx, VOX_ERR_FORMAT, "%s: not a valid AIM file (%s)", path, what);
}

static vox_status read_header(vox_context *ctx, const char *path, FILE *f, uint64_t file_size,
                              aim_header *h) {
  unsigned char pre[56], st[512];
  vox_status s =
      image_read_at(ctx, path, f, 0, pre, file_size < sizeof pre ? (size_t)file_size : sizeof pre);
  if (s) return s;
  if (file_size < 20) return corrupt(ctx, path, "shorter than its header");
  h->v030 = file_size >= 56 && memcmp(pre, V030_MAGIC, 15) == 0;
  uint64_t field[5];
  uint64_t start = h->v030 ? 16 : 0;
  for (int i = 0; i < 5; i++) field[i] = h->v030 ? u64(pre + 16 + 8 * i) : u32(pre + 4 * i);
  uint64_t pre_len = field[0], struct_len = field[1];
  h->log_bytes = field[2];
  h->data_bytes = field[3];
  if (!h->v030 && (pre_len != 20 || struct_len != 140))
    return corrupt(ctx, path, "the pre-header does not give the v020 sizes 20 and 140");
  if (h->v030 && (pre_len != 40 || struct_len < 208 || struct_len > sizeof st))
    return corrupt(ctx, path, "the pre-header does not give the v030 sizes");
  if (pre_len + struct_len > file_size - start || h->log_bytes > file_size ||
      h->data_bytes > file_size)
    return vox_error(ctx, VOX_ERR_FORMAT,
                     "%s: truncated (the header announces more than the "
                     "file holds)",
                     path);
  h->log_offset = start + pre_len + struct_len;
  h->data_offset = h->log_offset + h->log_bytes;
  if (h->data_offset > file_size || h->data_bytes > file_size - h->data_offset)
    return vox_error(
        ctx, VOX_ERR_FORMAT, "%s: truncated (%llu bytes of data announced, %llu left)", path,
        (unsigned long long)h->data_bytes,
        (unsigned long long)(h->data_offset > file_size ? 0 : file_size - h->data_offset));
  if ((s = image_read_at(ctx, path, f, start + pre_len, st, (size_t)struct_len))) return s;
  if (!h->v030) {
    h->type = u32(st + 20);
    for (int a = 0; a < 3; a++) {
      h->position[a] = (int32_t)u32(st + 24 + 4 * a);
      h->dim[a] = (int32_t)u32(st + 36 + 4 * a);
      h->element_mm[a] = vax_float(st + 108 + 4 * a);
    }
  } else {
    h->type = u32(st + 12);
    for (int a = 0; a < 3; a++) {
      h->position[a] = (int64_t)u64(st + 16 + 8 * a);
      h->dim[a] = (int64_t)u64(st + 40 + 8 * a);
      h->element_mm[a] = (double)(int64_t)u64(st + 184 + 8 * a) * 1e-6;
    }
  }
  for (int a = 0; a < 3; a++) {
    if (h->dim[a] < 1) return corrupt(ctx, path, "a dimension is not positive");
    if (!(h->element_mm[a] > 0 && h->element_mm[a] < 1e6))
      return corrupt(ctx, path, "the element size is not positive");
    if (h->position[a] < -((int64_t)1 << 40) || h->position[a] > ((int64_t)1 << 40))
      return corrupt(ctx, path, "the position is out of range");
  }
  return VOX_OK;
}

/* The calibration of the processing log. */
static void parse_log(char *log, size_t n, vox_image *image) {
  double mu_scaling = 0, mu_water = 0, slope = NAN, intercept = NAN;
  char unit[VOX_UNITS_MAX] = "";
  log[n] = '\0';
  for (char *line = log; line && *line;) {
    char *end = strchr(line, '\n');
    if (end) *end = '\0';
    if (*line != '!') {
      char *gap = strstr(line, "  "); /* key and value are separated by two or more spaces */
      if (gap) {
        *gap = '\0';
        char *value = gap + 2;
        while (*value == ' ') value++;
        if (!strcmp(line, "Mu_Scaling"))
          mu_scaling = strtod(value, NULL);
        else if (!strcmp(line, "HU: mu water"))
          mu_water = strtod(value, NULL);
        else if (!strcmp(line, "Density: slope"))
          slope = strtod(value, NULL);
        else if (!strcmp(line, "Density: intercept"))
          intercept = strtod(value, NULL);
        else if (!strcmp(line, "Density: unit")) {
          snprintf(unit, sizeof unit, "%s", value);
          size_t l = strlen(unit);
          while (l && (unit[l - 1] == ' ' || unit[l - 1] == '\r')) unit[--l] = '\0';
        }
      }
    }
    line = end ? end + 1 : NULL;
  }
  if (mu_scaling > 0 && mu_water > 0)
    image->to_hu = (vox_linear){1, 1000 / (mu_water * mu_scaling), -1000};
  if (mu_scaling > 0 && isfinite(slope) && isfinite(intercept))
    image->to_density = (vox_linear){1, slope / mu_scaling, intercept};
  snprintf(image->units, sizeof image->units, "1");
  (void)unit; /* the density's unit: see vox_image_convert_units */
}

static vox_status decode_binary_rle(vox_context *ctx, const char *path, const unsigned char *in,
                                    size_t n_in, int word, float *out, size_t n_out) {
  if (n_in < (size_t)word + 2) return corrupt(ctx, path, "run-length data too short");
  const unsigned char value[2] = {in[word], in[word + 1]};
  size_t o = 0;
  int flip = 0;
  for (size_t i = (size_t)word + 2; i < n_in && o < n_out; i++) {
    unsigned run = in[i];
    int stay = run == 255;
    if (stay) run = 254;
    if (run > n_out - o) return corrupt(ctx, path, "run lengths exceed the image");
    for (unsigned r = 0; r < run; r++) out[o++] = value[flip];
    if (!stay) flip ^= 1;
  }
  if (o != n_out) return corrupt(ctx, path, "run lengths cover less than the image");
  return VOX_OK;
}

static vox_status decode_char_rle(vox_context *ctx, const char *path, const unsigned char *in,
                                  size_t n_in, int word, float *out, size_t n_out) {
  size_t o = 0;
  for (size_t i = (size_t)word; i + 1 < n_in && o < n_out; i += 2) {
    unsigned run = in[i];
    if (run > n_out - o) return corrupt(ctx, path, "run lengths exceed the image");
    for (unsigned r = 0; r < run; r++) out[o++] = (float)(int8_t)in[i + 1];
  }
  if (o != n_out) return corrupt(ctx, path, "run lengths cover less than the image");
  return VOX_OK;
}

static vox_status decode_bits(vox_context *ctx, const char *path, const unsigned char *in,
                              size_t n_in, const int64_t *n, float *out) {
  size_t bx = (size_t)(n[0] + 1) / 2, by = (size_t)(n[1] + 1) / 2, bz = (size_t)(n[2] + 1) / 2;
  if (n_in < bx * by * bz + 1) return corrupt(ctx, path, "bit-packed data too short");
  float v = in[bx * by * bz] ? in[bx * by * bz] : 127; /* the value of set bits */
  for (int64_t k = 0; k < n[2]; k++)
    for (int64_t j = 0; j < n[1]; j++)
      for (int64_t i = 0; i < n[0]; i++) {
        unsigned char byte = in[((size_t)(k / 2) * by + (size_t)(j / 2)) * bx + (size_t)(i / 2)];
        int bit = (int)(i & 1) | (int)(j & 1) << 1 | (int)(k & 1) << 2;
        out[(k * n[1] + j) * n[0] + i] = (byte >> bit & 1) ? v : 0;
      }
  return VOX_OK;
}

static int plain_type(uint32_t code, vox_raw_type *type) {
  switch (code) {
  case AIM_CHAR: *type = VOX_RAW_I8; return 1;
  case AIM_UCHAR:
  case AIM_UCHAR_OLD: *type = VOX_RAW_U8; return 1;
  case AIM_SHORT: *type = VOX_RAW_I16; return 1;
  case AIM_USHORT: *type = VOX_RAW_U16; return 1;
  case AIM_INT: *type = VOX_RAW_I32; return 1;
  case AIM_FLOAT: *type = VOX_RAW_F32; return 1;
  default: return 0;
  }
}

/* The data must be able to hold the image before the image is allocated:
 * a corrupt header must not ask for terabytes. Run-length bytes give at
 * most 254 voxels (binary) or 255 per pair (char), a packed byte 8. */
static vox_status check_data_size(vox_context *ctx, const char *path, const aim_header *h) {
  vox_raw_type type;
  size_t bytes;
  vox_status s = image_checked_size(ctx, path, h->dim, 1, &bytes);
  if (s) return s;
  double n = (double)bytes, have = (double)h->data_bytes;
  double most = plain_type(h->type, &type)   ? have / vox_image_raw_type_size(type)
                : h->type == AIM_BINARY_RLE  ? 254 * have
                : h->type == AIM_CHAR_RLE    ? 128 * have
                : h->type == AIM_BITS_PACKED ? 8 * have
                                             : -1;
  if (most < 0)
    return vox_error(ctx, VOX_ERR_UNSUPPORTED, "%s: AIM data type 0x%08x is not read", path,
                     (unsigned)h->type);
  if (n > most)
    return vox_error(ctx, VOX_ERR_FORMAT,
                     "%s: truncated (%llu bytes of data cannot hold %lldx%lldx%lld voxels)", path,
                     (unsigned long long)h->data_bytes, (long long)h->dim[0], (long long)h->dim[1],
                     (long long)h->dim[2]);
  return VOX_OK;
}

static vox_status read_data(vox_context *ctx, const char *path, FILE *f, const aim_header *h,
                            vox_image *image) {
  vox_raw_type type;
  size_t n = (size_t)vox_image_voxels(image);
  if (plain_type(h->type, &type)) {
    if (h->data_bytes < n * (size_t)vox_image_raw_type_size(type))
      return vox_error(ctx, VOX_ERR_FORMAT, "%s: truncated (%llu bytes of data for %zu voxels)",
                       path, (unsigned long long)h->data_bytes, n);
    return image_read_typed(ctx, path, h->data_offset, type, 0, image);
  }
  if (h->type != AIM_BINARY_RLE && h->type != AIM_CHAR_RLE && h->type != AIM_BITS_PACKED)
    return vox_error(ctx, VOX_ERR_UNSUPPORTED, "%s: AIM data type 0x%08x is not read", path,
                     (unsigned)h->type);
  unsigned char *in = malloc(h->data_bytes ? (size_t)h->data_bytes : 1);
  if (!in) return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
  vox_status s = image_read_at(ctx, path, f, h->data_offset, in, (size_t)h->data_bytes);
  /* the run-length data start with a size word (4 or 8 bytes) whose byte
   * order differs between writers: it is skipped, data_bytes is the size */
  int word = h->v030 ? 8 : 4;
  if (!s) {
    if (h->type == AIM_BINARY_RLE)
      s = decode_binary_rle(ctx, path, in, (size_t)h->data_bytes, word, image->data, n);
    else if (h->type == AIM_CHAR_RLE)
      s = decode_char_rle(ctx, path, in, (size_t)h->data_bytes, word, image->data, n);
    else
      s = decode_bits(ctx, path, in, (size_t)h->data_bytes, image->n, image->data);
  }
  free(in);
  return s;
}

vox_status vox_image_read_aim(vox_context *ctx, const char *path, vox_image *image) {
  memset(image, 0, sizeof *image);
  uint64_t size;
  vox_status s = image_file_size(ctx, path, &size);
  if (s) return s;
  FILE *f = fopen(path, "rb");
  if (!f) return vox_error(ctx, VOX_ERR_IO, "%s: cannot open", path);
  aim_header h = {0};
  char *log = NULL;
  s = read_header(ctx, path, f, size, &h);
  if (!s && h.log_bytes > LOG_MAX) s = corrupt(ctx, path, "a processing log of many megabytes");
  if (!s && !(log = malloc((size_t)h.log_bytes + 1)))
    s = vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
  if (!s) s = image_read_at(ctx, path, f, h.log_offset, log, (size_t)h.log_bytes);
  if (!s) s = check_data_size(ctx, path, &h);
  if (!s) s = vox_image_init(ctx, image, h.dim);
  if (!s) s = read_data(ctx, path, f, &h, image);
  fclose(f);
  if (!s) {
    parse_log(log, (size_t)h.log_bytes, image);
    for (int a = 0; a < 3; a++) {
      image->spacing[a] = h.element_mm[a];
      /* position x element size is the corner of voxel (0,0,0), as
       * n88modelgenerator and vtkbone's AIM reader place it (and as a NIfTI
       * of the same scan does); the image's origin is that voxel's centre */
      image->origin[a] = ((double)h.position[a] + 0.5) * h.element_mm[a];
    }
    image->spacing_known = 1;
    snprintf(image->format, sizeof image->format, "AIM");
  } else {
    vox_image_free(image);
  }
  free(log);
  return s;
}
