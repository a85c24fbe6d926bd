/* SPDX-License-Identifier: BSD-3-Clause */
/* MetaImage (.mhd header + data file, or .mha with the data after the
 * header): the "Key = value" header of ITK, parsed here because Debian has no
 * C library for it. Raw and zlib-compressed data, one channel, 2 or 3
 * dimensions. */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>

#include "image_internal.h"

#define HEADER_MAX (1 << 20) /* a header longer than this is not a header */

typedef struct meta_header {
  int ndims;
  int64_t dims[3];
  double spacing[3], origin[3];
  vox_raw_type type;
  int have_type, have_dims, have_spacing, big_endian, compressed, channels;
  int64_t header_size; /* -1: the data are the file's last bytes */
  uint64_t compressed_size;
  char data_file[4096];
  uint64_t data_offset; /* of LOCAL data: just after the ElementDataFile line */
} meta_header;

static const struct {
  const char *name;
  vox_raw_type type;
} meta_types[] = {
    {"MET_UCHAR", VOX_RAW_U8},  {"MET_CHAR", VOX_RAW_I8},    {"MET_USHORT", VOX_RAW_U16},
    {"MET_SHORT", VOX_RAW_I16}, {"MET_UINT", VOX_RAW_U32},   {"MET_INT", VOX_RAW_I32},
    {"MET_FLOAT", VOX_RAW_F32}, {"MET_DOUBLE", VOX_RAW_F64},
};

static char *trim(char *s) {
  while (isspace((unsigned char)*s)) s++;
  size_t n = strlen(s);
  while (n && isspace((unsigned char)s[n - 1])) s[--n] = '\0';
  return s;
}

/* Up to `max` numbers of a value; returns how many there were, -1 on junk. */
static int parse_numbers(const char *text, double *v, int max) {
  int n = 0;
  const char *p = text;
  while (*p) {
    char *end;
    double x = strtod(p, &end);
    if (end == p) return -1;
    if (n < max) v[n] = x;
    n++;
    p = end;
    while (isspace((unsigned char)*p)) p++;
  }
  return n;
}

static int parse_bool(const char *v) {
  return strcasecmp(v, "true") == 0 || strcasecmp(v, "1") == 0;
}

static vox_status bad(vox_context *ctx, const char *path, int line, const char *what) {
  return vox_error(ctx, VOX_ERR_FORMAT, "%s: line %d: %s", path, line, what);
}

/* Parses the header up to and including ElementDataFile (always its last key). */
static vox_status parse_header(vox_context *ctx, const char *path, FILE *f, meta_header *h) {
  char line[8192];
  int number = 0, done = 0;
  uint64_t consumed = 0;
  for (int a = 0; a < 3; a++) {
    h->spacing[a] = 1;
    h->dims[a] = 1;
  }
  h->header_size = 0;
  h->channels = 1;
  while (!done && fgets(line, sizeof line, f)) {
    number++;
    consumed += strlen(line);
    if (consumed > HEADER_MAX || (!strchr(line, '\n') && !feof(f)))
      return bad(ctx, path, number, "not a MetaImage header (line too long)");
    char *eq = strchr(line, '=');
    if (!eq) {
      if (*trim(line) == '\0') continue;
      return bad(ctx, path, number, "expected 'Key = value'");
    }
    *eq = '\0';
    char *key = trim(line), *value = trim(eq + 1);
    double v[4];
    if (!strcasecmp(key, "NDims")) {
      if (parse_numbers(value, v, 1) != 1 || (v[0] != 2 && v[0] != 3))
        return bad(ctx, path, number, "NDims must be 2 or 3");
      h->ndims = (int)v[0];
    } else if (!strcasecmp(key, "DimSize")) {
      if (!h->ndims) return bad(ctx, path, number, "DimSize before NDims");
      if (parse_numbers(value, v, 3) != h->ndims)
        return bad(ctx, path, number, "DimSize needs NDims sizes");
      for (int a = 0; a < h->ndims; a++) {
        if (!(v[a] >= 1 && v[a] <= 1e12 && v[a] == floor(v[a])))
          return bad(ctx, path, number, "DimSize must be positive integers");
        h->dims[a] = (int64_t)v[a];
      }
      h->have_dims = 1;
    } else if (!strcasecmp(key, "ElementSpacing") || !strcasecmp(key, "ElementSize")) {
      /* ElementSpacing wins: ElementSize is the physical voxel extent */
      int is_spacing = !strcasecmp(key, "ElementSpacing");
      if (!is_spacing && h->have_spacing) continue;
      if (!h->ndims || parse_numbers(value, v, 3) != h->ndims)
        return bad(ctx, path, number, "ElementSpacing needs NDims numbers");
      for (int a = 0; a < h->ndims; a++) {
        if (!(v[a] >= VOX_VOXEL_SIZE_MIN && v[a] <= VOX_VOXEL_SIZE_MAX))
          return bad(ctx, path, number, "ElementSpacing must be numbers in [1e-9, 1e6] mm");
        h->spacing[a] = v[a];
      }
      h->have_spacing |= is_spacing;
    } else if (!strcasecmp(key, "Offset") || !strcasecmp(key, "Origin") ||
               !strcasecmp(key, "Position")) {
      if (!h->ndims || parse_numbers(value, v, 3) != h->ndims)
        return bad(ctx, path, number, "Offset needs NDims numbers");
      for (int a = 0; a < h->ndims; a++) {
        if (!(fabs(v[a]) <= VOX_ORIGIN_MAX))
          return bad(ctx, path, number, "Offset must be finite numbers (mm)");
        h->origin[a] = v[a];
      }
    } else if (!strcasecmp(key, "ElementType")) {
      h->have_type = 0;
      for (size_t t = 0; t < sizeof meta_types / sizeof meta_types[0]; t++)
        if (!strcasecmp(value, meta_types[t].name)) {
          h->type = meta_types[t].type;
          h->have_type = 1;
        }
      if (!h->have_type) return bad(ctx, path, number, "unsupported ElementType");
    } else if (!strcasecmp(key, "ElementByteOrderMSB") ||
               !strcasecmp(key, "BinaryDataByteOrderMSB")) {
      h->big_endian = parse_bool(value);
    } else if (!strcasecmp(key, "CompressedData")) {
      h->compressed = parse_bool(value);
    } else if (!strcasecmp(key, "CompressedDataSize")) {
      if (parse_numbers(value, v, 1) != 1 || !(v[0] > 0 && v[0] < 1e18))
        return bad(ctx, path, number, "bad CompressedDataSize");
      h->compressed_size = (uint64_t)v[0];
    } else if (!strcasecmp(key, "ElementNumberOfChannels")) {
      if (parse_numbers(value, v, 1) != 1 || v[0] != 1)
        return bad(ctx, path, number, "only one channel (ElementNumberOfChannels = 1) is read");
    } else if (!strcasecmp(key, "HeaderSize")) {
      if (parse_numbers(value, v, 1) != 1 || v[0] < -1 || v[0] > 1e15 || v[0] != floor(v[0]))
        return bad(ctx, path, number, "bad HeaderSize");
      h->header_size = (int64_t)v[0];
    } else if (!strcasecmp(key, "ObjectType")) {
      if (strcasecmp(value, "Image")) return bad(ctx, path, number, "ObjectType is not Image");
    } else if (!strcasecmp(key, "ElementDataFile")) {
      if (!strcasecmp(value, "LIST") || strchr(value, '%'))
        return bad(ctx, path, number, "ElementDataFile LIST or a file pattern is not supported");
      snprintf(h->data_file, sizeof h->data_file, "%s", value);
      h->data_offset = consumed;
      done = 1;
    }
    /* other keys (TransformMatrix, AnatomicalOrientation, ...) do not change the voxels */
  }
  if (ferror(f)) return vox_error(ctx, VOX_ERR_IO, "%s: read error", path);
  if (!done) return vox_error(ctx, VOX_ERR_FORMAT, "%s: no ElementDataFile in the header", path);
  if (!h->ndims || h->have_dims == 0)
    return vox_error(ctx, VOX_ERR_FORMAT, "%s: no NDims or DimSize", path);
  if (!h->have_type) return vox_error(ctx, VOX_ERR_FORMAT, "%s: no ElementType", path);
  return VOX_OK;
}

/* The data file's path: LOCAL is the header itself, others are relative to
 * the header's folder. */
static char *data_path(const char *header, const char *name) {
  if (!strcasecmp(name, "LOCAL")) return strdup(header);
  if (name[0] == '/') return strdup(name);
  const char *slash = strrchr(header, '/');
  if (!slash) return strdup(name);
  char *folder = strndup(header, (size_t)(slash - header));
  char *p = folder ? image_join(folder, name) : NULL;
  free(folder);
  return p;
}

static vox_status read_compressed(vox_context *ctx, const char *path, uint64_t offset,
                                  const meta_header *h, vox_image *image) {
  uint64_t file_size;
  vox_status s = image_file_size(ctx, path, &file_size);
  if (s) return s;
  if (offset > file_size) return vox_error(ctx, VOX_ERR_FORMAT, "%s: truncated", path);
  uint64_t in_size = h->compressed_size ? h->compressed_size : file_size - offset;
  if (in_size > file_size - offset) return vox_error(ctx, VOX_ERR_FORMAT, "%s: truncated", path);
  size_t elem = (size_t)vox_image_raw_type_size(h->type), out_size;
  if ((s = image_checked_size(ctx, path, h->dims, elem, &out_size))) return s;
  unsigned char *in = malloc(in_size ? in_size : 1), *out = malloc(out_size);
  FILE *f = fopen(path, "rb");
  if (!in || !out || !f) {
    s = f ? vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory")
          : vox_error(ctx, VOX_ERR_IO, "%s: cannot open", path);
    goto done;
  }
  if ((s = image_read_at(ctx, path, f, offset, in, in_size))) goto done;
  z_stream z = {0};
  if (inflateInit(&z) != Z_OK) {
    s = vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
    goto done;
  }
  /* zlib counts in uInt: feed both buffers in pieces */
  size_t in_done = 0, out_done = 0;
  int err = Z_OK;
  while (err == Z_OK) {
    size_t in_left = in_size - in_done, out_left = out_size - out_done;
    z.next_in = in + in_done;
    z.avail_in = (uInt)(in_left > (1u << 30) ? (1u << 30) : in_left);
    z.next_out = out + out_done;
    z.avail_out = (uInt)(out_left > (1u << 30) ? (1u << 30) : out_left);
    uInt ai = z.avail_in, ao = z.avail_out;
    err = inflate(&z, Z_NO_FLUSH);
    in_done += ai - z.avail_in;
    out_done += ao - z.avail_out;
    if (err == Z_BUF_ERROR && (out_done == out_size || in_done == in_size)) break;
    if (err == Z_OK && ai == z.avail_in && ao == z.avail_out) break;
  }
  inflateEnd(&z);
  if ((err != Z_STREAM_END && err != Z_OK && err != Z_BUF_ERROR) || out_done != out_size)
    s = vox_error(ctx, VOX_ERR_FORMAT, "%s: the compressed data are corrupt or short", path);
  else
    image_decode(out, h->type, h->big_endian, out_size / elem, image->data);
done:
  if (f) fclose(f);
  free(in);
  free(out);
  return s;
}

vox_status vox_image_read_metaimage(vox_context *ctx, const char *path, vox_image *image) {
  memset(image, 0, sizeof *image);
  FILE *f = fopen(path, "rb");
  if (!f) return vox_error(ctx, VOX_ERR_IO, "%s: cannot open", path);
  meta_header h = {0};
  vox_status s = parse_header(ctx, path, f, &h);
  fclose(f);
  if (s) return s;
  char *data = data_path(path, h.data_file);
  if (!data) return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
  int local = !strcasecmp(h.data_file, "LOCAL");
  uint64_t size, offset = local ? h.data_offset : 0, bytes = 0;
  size_t voxel_bytes;
  if (!(s = image_file_size(ctx, data, &size)) &&
      !(s = image_checked_size(ctx, data, h.dims, (size_t)vox_image_raw_type_size(h.type),
                               &voxel_bytes))) {
    bytes = voxel_bytes;
    if (h.header_size > 0) offset += (uint64_t)h.header_size;
    if (h.header_size == -1 && !h.compressed) {
      if (size < bytes) s = vox_error(ctx, VOX_ERR_FORMAT, "%s: truncated", data);
      offset = size - bytes;
    }
    /* checked before the image is allocated; zlib expands at most 1032:1 */
    uint64_t room = offset > size ? 0 : size - offset;
    if (!s && (h.compressed ? (double)bytes > 1032.0 * (double)room + 64 : bytes > room))
      s = vox_error(ctx, VOX_ERR_FORMAT, "%s: truncated (%llu bytes of voxels, %llu in the file)",
                    data, (unsigned long long)bytes, (unsigned long long)room);
  }
  if (!s) s = vox_image_init(ctx, image, h.dims);
  if (!s)
    s = h.compressed ? read_compressed(ctx, data, offset, &h, image)
                     : image_read_typed(ctx, data, offset, h.type, h.big_endian, image);
  free(data);
  if (s) {
    vox_image_free(image);
    return s;
  }
  for (int a = 0; a < 3; a++) {
    image->spacing[a] = h.spacing[a];
    image->origin[a] = h.origin[a];
  }
  image->spacing_known = h.have_spacing;
  snprintf(image->format, sizeof image->format, "MetaImage");
  return VOX_OK;
}
