/* SPDX-License-Identifier: BSD-3-Clause */
/* A walk over a DICOM file's data elements, before and often instead of
 * GDCM:
 * - a structural check: every element's length must fit in the file,
 *   sequences and items must close. GDCM as Debian builds it keeps its
 *   assertions, and a file cut short inside an element would make it abort
 *   the whole program; the walk turns such files into one line of error.
 * - the header fields a series needs (the top-level elements of
 *   dicom_header), read from the walk instead of a second parse by GDCM;
 * - where the pixel data lie, so that uncompressed pixels (the native
 *   transfer syntaxes) are read straight from the file at the speed of
 *   reading it; compressed ones go to GDCM's codecs. */
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dicom_scan.h"

/* A top-level element the walk keeps: where its value is. */
typedef struct kept {
  uint16_t group, element;
  size_t offset;
  uint32_t length; /* 0xffffffff: undefined (encapsulated pixel data) */
  int present;
} kept;

enum {
  F_ROWS,
  F_COLUMNS,
  F_FRAMES,
  F_SAMPLES,
  F_BITS_ALLOCATED,
  F_BITS_STORED,
  F_PIXEL_REP,
  F_POSITION,
  F_ORIENTATION,
  F_PIXEL_SPACING,
  F_THICKNESS,
  F_SPACING_BETWEEN,
  F_INTERCEPT,
  F_SLOPE,
  F_RESCALE_TYPE,
  F_MODALITY,
  F_SERIES,
  F_PIXEL_DATA,
  F_COUNT
};

static const uint16_t wanted[F_COUNT][2] = {
    [F_ROWS] = {0x0028, 0x0010},           [F_COLUMNS] = {0x0028, 0x0011},
    [F_FRAMES] = {0x0028, 0x0008},         [F_SAMPLES] = {0x0028, 0x0002},
    [F_BITS_ALLOCATED] = {0x0028, 0x0100}, [F_BITS_STORED] = {0x0028, 0x0101},
    [F_PIXEL_REP] = {0x0028, 0x0103},      [F_POSITION] = {0x0020, 0x0032},
    [F_ORIENTATION] = {0x0020, 0x0037},    [F_PIXEL_SPACING] = {0x0028, 0x0030},
    [F_THICKNESS] = {0x0018, 0x0050},      [F_SPACING_BETWEEN] = {0x0018, 0x0088},
    [F_INTERCEPT] = {0x0028, 0x1052},      [F_SLOPE] = {0x0028, 0x1053},
    [F_RESCALE_TYPE] = {0x0028, 0x1054},   [F_MODALITY] = {0x0008, 0x0060},
    [F_SERIES] = {0x0020, 0x000e},         [F_PIXEL_DATA] = {0x7fe0, 0x0010},
};

typedef struct walker {
  const unsigned char *p;
  size_t n;
  int explicit_vr, big_endian;
  const char *error;
  kept *found; /* F_COUNT entries, or NULL */
} walker;

#define UNDEFINED 0xffffffffu
#define MAX_DEPTH 64

static uint16_t u16(const walker *w, size_t at) {
  const unsigned char *b = w->p + at;
  return w->big_endian ? (uint16_t)(b[0] << 8 | b[1]) : (uint16_t)(b[1] << 8 | b[0]);
}

static uint32_t u32(const walker *w, size_t at) {
  const unsigned char *b = w->p + at;
  return w->big_endian ? (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3]
                       : (uint32_t)b[3] << 24 | (uint32_t)b[2] << 16 | (uint32_t)b[1] << 8 | b[0];
}

/* VRs with a 2-byte reserved field and a 4-byte length in explicit VR. */
static int long_vr(const unsigned char *vr) {
  static const char *const vrs[] = {"OB", "OW", "OF", "SQ", "UT", "UN", "OD",
                                    "OL", "OV", "UC", "UR", "SV", "UV"};
  for (size_t i = 0; i < sizeof vrs / sizeof vrs[0]; i++)
    if (vr[0] == vrs[i][0] && vr[1] == vrs[i][1]) return 1;
  return 0;
}

static int is_vr(const unsigned char *vr) {
  return vr[0] >= 'A' && vr[0] <= 'Z' && vr[1] >= 'A' && vr[1] <= 'Z';
}

static int walk_dataset(walker *w, size_t *at, size_t end, int depth, int in_item);

/* The items of a sequence (or of encapsulated pixel data) of undefined
 * length, up to its delimiter. */
static int walk_items(walker *w, size_t *at, size_t end, int depth) {
  while (*at + 8 <= end) {
    uint16_t g = u16(w, *at), e = u16(w, *at + 2);
    uint32_t len = u32(w, *at + 4);
    *at += 8;
    if (g != 0xfffe) return (w->error = "a sequence holds something other than items"), -1;
    if (e == 0xe0dd) return 0; /* sequence delimiter */
    if (e != 0xe000) return (w->error = "a malformed sequence item"), -1;
    if (len == UNDEFINED) {
      if (walk_dataset(w, at, end, depth + 1, 1)) return -1;
    } else {
      if (len > end - *at) return (w->error = "truncated (an item runs past the end)"), -1;
      *at += len;
    }
  }
  return (w->error = "truncated (a sequence is not closed)"), -1;
}

static int walk_dataset(walker *w, size_t *at, size_t end, int depth, int in_item) {
  if (depth > MAX_DEPTH) return (w->error = "sequences nested too deeply"), -1;
  while (*at < end) {
    if (end - *at < 8) return (w->error = "truncated (in an element's header)"), -1;
    uint16_t g = u16(w, *at), e = u16(w, *at + 2);
    if (g == 0xfffe) { /* item delimiter ends the item we are in */
      *at += 8;
      if (e == 0xe00d && in_item) return 0;
      return (w->error = "an item delimiter out of place"), -1;
    }
    uint32_t len;
    int sequence = 0;
    /* group 0002 is always explicit little endian */
    int explicit_vr = g == 0x0002 ? 1 : w->explicit_vr;
    if (explicit_vr) {
      const unsigned char *vr = w->p + *at + 4;
      if (!is_vr(vr)) return (w->error = "an element without a valid VR"), -1;
      if (long_vr(vr)) {
        if (end - *at < 12) return (w->error = "truncated (in an element's header)"), -1;
        len = u32(w, *at + 8);
        *at += 12;
      } else {
        len = u16(w, *at + 6);
        *at += 8;
      }
      sequence = vr[0] == 'S' && vr[1] == 'Q';
    } else {
      len = u32(w, *at + 4);
      *at += 8;
    }
    if (w->found && depth == 0 && !in_item)
      for (int f = 0; f < F_COUNT; f++)
        if (wanted[f][0] == g && wanted[f][1] == e) {
          w->found[f] = (kept){g, e, *at, len, 1};
          break;
        }
    if (len == UNDEFINED) {
      /* a sequence, encapsulated pixel data, or UN of undefined length */
      if (walk_items(w, at, end, depth + 1)) return -1;
      continue;
    }
    if (len > end - *at) return (w->error = "truncated (an element runs past the end)"), -1;
    (void)sequence; /* a sequence of defined length is skipped whole */
    *at += len;
  }
  if (in_item) return (w->error = "truncated (an item is not closed)"), -1;
  return 0;
}

static int walk_file(const unsigned char *data, size_t size, const char **error, char *syntax_out,
                     kept *found, int *big_endian) {
  walker w = {data, size, 1, 0, NULL, found};
  size_t at = 0;
  char syntax[65] = "";
  if (syntax_out) syntax_out[0] = '\0';
  if (size >= 132 && memcmp(data + 128, "DICM", 4) == 0) {
    at = 132;
    /* the meta group: explicit little endian, ends where group 0002 does */
    while (at + 8 <= size && u16(&w, at) == 0x0002) {
      uint16_t e = u16(&w, at + 2);
      const unsigned char *vr = data + at + 4;
      if (!is_vr(vr)) {
        *error = "a malformed file meta group";
        return -1;
      }
      uint32_t len;
      size_t head = long_vr(vr) ? 12 : 8;
      if (size - at < head) break;
      len = head == 12 ? u32(&w, at + 8) : u16(&w, at + 6);
      if (len > size - at - head) {
        *error = "truncated (in the file meta group)";
        return -1;
      }
      if (e == 0x0010) {
        size_t l = len < sizeof syntax - 1 ? len : sizeof syntax - 1;
        memcpy(syntax, data + at + head, l);
        syntax[l] = '\0';
        while (l && (syntax[l - 1] == '\0' || syntax[l - 1] == ' ')) syntax[--l] = '\0';
      }
      at += head + len;
    }
    if (syntax_out) memcpy(syntax_out, syntax, sizeof syntax);
    if (!strcmp(syntax, "1.2.840.10008.1.2")) w.explicit_vr = 0;
    if (!strcmp(syntax, "1.2.840.10008.1.2.2")) w.big_endian = 1;
    /* deflated data sets cannot be walked without inflating them */
    if (!strcmp(syntax, "1.2.840.10008.1.2.1.99")) return 0;
  } else {
    /* no preamble: explicit or implicit VR, told by the first element */
    if (size < 8) {
      *error = "not a DICOM file (too short)";
      return -1;
    }
    w.explicit_vr = is_vr(data + 4);
  }
  if (big_endian) *big_endian = w.big_endian;
  if (walk_dataset(&w, &at, size, 0, 0)) {
    *error = w.error;
    return -1;
  }
  return 0;
}

/* --- the header fields ---------------------------------------------------- */

static const unsigned char *value_of(const unsigned char *data, const kept *f, size_t *len) {
  *len = f->present && f->length != UNDEFINED ? f->length : 0;
  return data + f->offset;
}

/* An ASCII value (DS, IS, CS, UI, LO) without its padding. */
static void text_of(const unsigned char *data, const kept *f, char *out, size_t size) {
  size_t len;
  const unsigned char *v = value_of(data, f, &len);
  while (len && (v[len - 1] == ' ' || v[len - 1] == '\0')) len--;
  while (len && *v == ' ') {
    v++;
    len--;
  }
  if (len >= size) len = size - 1;
  memcpy(out, v, len);
  out[len] = '\0';
}

/* Up to `max` backslash-separated numbers of a DS or IS value. */
static int numbers_of(const unsigned char *data, const kept *f, double *out, int max) {
  char text[256];
  text_of(data, f, text, sizeof text);
  int n = 0;
  char *p = text;
  while (*p && n < max) {
    char *end;
    double v = strtod(p, &end);
    if (end == p || !isfinite(v)) break;
    out[n++] = v;
    p = end;
    while (*p == ' ') p++;
    if (*p == '\\') p++;
  }
  return n;
}

/* A US value (two bytes in the data set's byte order); `fallback` when absent. */
static int us_of(const unsigned char *data, const kept *f, int big_endian, int fallback) {
  size_t len;
  const unsigned char *v = value_of(data, f, &len);
  if (len < 2) return fallback;
  return big_endian ? v[0] << 8 | v[1] : v[1] << 8 | v[0];
}

static void fill_header(const unsigned char *data, const kept *f, int big_endian, dicom_header *h,
                        dicom_pixels *px) {
  double v[6];
  memset(h, 0, sizeof *h);
  h->rows = us_of(data, &f[F_ROWS], big_endian, 0);
  h->columns = us_of(data, &f[F_COLUMNS], big_endian, 0);
  h->frames = numbers_of(data, &f[F_FRAMES], v, 1) ? (int)fmin(fmax(v[0], 0), 1e9) : 1;
  h->samples_per_pixel = us_of(data, &f[F_SAMPLES], big_endian, 1);
  h->bits_allocated = us_of(data, &f[F_BITS_ALLOCATED], big_endian, 0);
  h->has_position = numbers_of(data, &f[F_POSITION], h->position, 3) == 3;
  h->has_orientation = numbers_of(data, &f[F_ORIENTATION], h->orientation, 6) == 6;
  h->has_pixel_spacing = numbers_of(data, &f[F_PIXEL_SPACING], h->pixel_spacing, 2) == 2;
  if (numbers_of(data, &f[F_THICKNESS], v, 1)) h->slice_thickness = v[0];
  if (numbers_of(data, &f[F_SPACING_BETWEEN], v, 1)) h->spacing_between_slices = v[0];
  h->slope = numbers_of(data, &f[F_SLOPE], v, 1) ? v[0] : 1;
  h->intercept = numbers_of(data, &f[F_INTERCEPT], v, 1) ? v[0] : 0;
  text_of(data, &f[F_RESCALE_TYPE], h->rescale_type, sizeof h->rescale_type);
  text_of(data, &f[F_MODALITY], h->modality, sizeof h->modality);
  text_of(data, &f[F_SERIES], h->series_uid, sizeof h->series_uid);
  px->bits_stored = us_of(data, &f[F_BITS_STORED], big_endian, h->bits_allocated);
  px->signed_pixels = us_of(data, &f[F_PIXEL_REP], big_endian, 0) == 1;
  px->big_endian = big_endian;
  px->present = f[F_PIXEL_DATA].present;
  px->offset = f[F_PIXEL_DATA].offset;
  px->length = f[F_PIXEL_DATA].length == UNDEFINED ? 0 : f[F_PIXEL_DATA].length;
}

static int is_native(const char *syntax) {
  return !strcmp(syntax, "1.2.840.10008.1.2") || !strcmp(syntax, "1.2.840.10008.1.2.1") ||
         !strcmp(syntax, "1.2.840.10008.1.2.2") || syntax[0] == '\0';
}

int dicom_scan_file(const char *path, dicom_header *h, dicom_pixels *px, const char **error) {
  memset(px, 0, sizeof *px);
  int fd = open(path, O_RDONLY);
  if (fd < 0) {
    *error = "cannot open";
    return -1;
  }
  struct stat st;
  if (fstat(fd, &st) || st.st_size <= 0) {
    close(fd);
    *error = "not a DICOM file (empty)";
    return -1;
  }
  size_t size = (size_t)st.st_size;
  /* mapped, not read: the walk touches the element headers only */
  const unsigned char *data = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (data == MAP_FAILED) {
    *error = "cannot map the file";
    return -1;
  }
  kept f[F_COUNT];
  memset(f, 0, sizeof f);
  int big_endian = 0;
  int status = walk_file(data, size, error, px->syntax, f, &big_endian);
  if (!status) {
    fill_header(data, f, big_endian, h, px);
    /* deflated data sets are not walked: GDCM reads them */
    px->walked = strcmp(px->syntax, "1.2.840.10008.1.2.1.99") != 0;
    snprintf(h->transfer_syntax, sizeof h->transfer_syntax, "%s", px->syntax);
    px->native = px->walked && is_native(px->syntax) && px->present && px->length > 0;
  }
  munmap((void *)data, size);
  return status;
}

/* --- native pixels ------------------------------------------------------------ */

/* Stored values to rescaled floats. Only BitsStored bits are the value (the
 * rest may hold overlays), sign-extended when the pixels are signed: the
 * shifts up and back down do both. One loop per width and byte order, with
 * no branch inside, so that the compiler vectorizes it: this loop is most of
 * the time of reading an uncompressed series. */
static void convert(const unsigned char *raw, int bytes, const dicom_pixels *px, double a, double b,
                    float *out, size_t count) {
  const int shift = 32 - px->bits_stored, sign = px->signed_pixels;
  if (bytes == 2 && !px->big_endian) {
    /* float arithmetic here: exact for 16-bit values with the usual integer
     * slopes and intercepts, within one rounding of the double otherwise */
    const float af = (float)a, bf = (float)b;
    /* blocks copied out first: the raw bytes share the output's memory */
    uint16_t in[4096];
    for (size_t at = 0; at < count; at += 4096) {
      size_t n = count - at < 4096 ? count - at : 4096;
      memcpy(in, raw + 2 * at, 2 * n);
      float *o = out + at;
      if (sign)
        for (size_t i = 0; i < n; i++)
          o[i] = af * (float)((int32_t)((uint32_t)in[i] << shift) >> shift) + bf;
      else
        for (size_t i = 0; i < n; i++)
          o[i] = af * (float)(int32_t)(((uint32_t)in[i] << shift) >> shift) + bf;
    }
    return;
  }
  for (size_t i = 0; i < count; i++) {
    const unsigned char *p = raw + i * (size_t)bytes;
    uint32_t u;
    if (bytes == 1)
      u = p[0];
    else if (bytes == 2)
      u = px->big_endian ? (uint32_t)(p[0] << 8 | p[1]) : (uint32_t)(p[1] << 8 | p[0]);
    else
      u = px->big_endian ? (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]
                         : (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
    uint32_t w = shift < 32 ? u << shift : 0;
    double v = sign ? (double)((int32_t)w >> shift) : (double)(w >> shift);
    out[i] = (float)(a * v + b);
  }
}

int dicom_read_native(const char *path, const dicom_header *h, const dicom_pixels *px, float *out,
                      size_t count, const char **error) {
  int bytes = h->bits_allocated / 8;
  if (h->samples_per_pixel != 1 || (bytes != 1 && bytes != 2 && bytes != 4) ||
      px->bits_stored < 1 || px->bits_stored > h->bits_allocated) {
    *error = "a pixel format of uncompressed data that voxfe does not read";
    return -1;
  }
  size_t need = count * (size_t)bytes;
  if (px->length < need) {
    *error = "truncated (the pixel data are shorter than the image)";
    return -1;
  }
  int fd = open(path, O_RDONLY);
  if (fd < 0) {
    *error = "cannot open";
    return -1;
  }
  /* the raw bytes land in the output's own memory, its last quarter or
   * half, and are widened to floats from the front */
  unsigned char *raw = (unsigned char *)out + count * sizeof(float) - need;
  size_t done = 0;
  while (done < need) {
    ssize_t got = pread(fd, raw + done, need - done, (off_t)(px->offset + done));
    if (got <= 0) break;
    done += (size_t)got;
  }
  close(fd);
  if (done < need) {
    *error = "truncated (the pixel data end early)";
    return -1;
  }
  convert(raw, bytes, px, h->slope, h->intercept, out, count);
  return 0;
}
