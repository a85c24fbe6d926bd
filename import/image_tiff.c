/* SPDX-License-Identifier: BSD-3-Clause */
/* TIFF through libtiff: a multi-page file (one page a slice) or a folder of
 * files in natural name order (their pages one after the other); 8, 16, 32
 * and 64-bit grey values, integer or floating point, strips or tiles, any
 * compression libtiff decodes.
 *
 * The pixel size comes from ImageJ's description (unit=, spacing= for the
 * slices) or from the resolution tags in centimetres or inches; 72 dots per
 * inch, the default of writers that know no size, counts as unknown. The
 * slice spacing, when no file gives it, is the pixel width (micro-CT stacks
 * are isotropic). */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <tiffio.h>

#include "image_internal.h"

/* libtiff reports through global handlers: the last error is kept for the
 * one-line message, warnings (unknown tags and the like) are dropped. */
static _Thread_local char tiff_message[256];

static void on_error(const char *module, const char *fmt, va_list ap) {
  vsnprintf(tiff_message, sizeof tiff_message, fmt, ap);
}

static void on_warning(const char *module, const char *fmt, va_list ap) {}

typedef struct page_format {
  uint32_t width, height;
  uint16_t bits, format;
} page_format;

typedef struct stack_info {
  double pixel_mm[2], slice_mm; /* 0 when unknown */
} stack_info;

static vox_status tiff_fail(vox_context *ctx, vox_status status, const char *path,
                            const char *what) {
  if (tiff_message[0]) return vox_error(ctx, status, "%s: %s (%s)", path, what, tiff_message);
  return vox_error(ctx, status, "%s: %s", path, what);
}

static vox_status page_of(vox_context *ctx, const char *path, TIFF *tif, page_format *p) {
  uint16_t spp = 1;
  p->format = SAMPLEFORMAT_UINT;
  p->bits = 1;
  if (!TIFFGetField(tif, TIFFTAG_IMAGEWIDTH, &p->width) ||
      !TIFFGetField(tif, TIFFTAG_IMAGELENGTH, &p->height))
    return tiff_fail(ctx, VOX_ERR_FORMAT, path, "a page without width or height");
  TIFFGetFieldDefaulted(tif, TIFFTAG_BITSPERSAMPLE, &p->bits);
  TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLESPERPIXEL, &spp);
  TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLEFORMAT, &p->format);
  if (spp != 1)
    return vox_error(ctx, VOX_ERR_UNSUPPORTED,
                     "%s: %u samples per pixel; voxfe reads grey-value images", path, spp);
  int ok = (p->format == SAMPLEFORMAT_UINT || p->format == SAMPLEFORMAT_INT)
               ? (p->bits == 8 || p->bits == 16 || p->bits == 32)
               : p->format == SAMPLEFORMAT_IEEEFP && (p->bits == 32 || p->bits == 64);
  if (!ok)
    return vox_error(ctx, VOX_ERR_UNSUPPORTED, "%s: %u-bit samples of format %u are not read", path,
                     p->bits, p->format);
  if (p->width == 0 || p->height == 0)
    return vox_error(ctx, VOX_ERR_FORMAT, "%s: an empty page", path);
  return VOX_OK;
}

static vox_raw_type type_of(const page_format *p) {
  if (p->format == SAMPLEFORMAT_IEEEFP) return p->bits == 32 ? VOX_RAW_F32 : VOX_RAW_F64;
  int s = p->format == SAMPLEFORMAT_INT;
  return p->bits == 8    ? (s ? VOX_RAW_I8 : VOX_RAW_U8)
         : p->bits == 16 ? (s ? VOX_RAW_I16 : VOX_RAW_U16)
                         : (s ? VOX_RAW_I32 : VOX_RAW_U32);
}

/* mm per unit of ImageJ's "unit=" */
static double imagej_unit(const char *u) {
  if (!strcasecmp(u, "mm")) return 1;
  if (!strcasecmp(u, "cm")) return 10;
  if (!strcasecmp(u, "m")) return 1000;
  if (!strcasecmp(u, "micron") || !strcasecmp(u, "um") || !strcmp(u, "\xc2\xb5m") ||
      !strcasecmp(u, "\\u00B5m"))
    return 1e-3;
  if (!strcasecmp(u, "nm")) return 1e-6;
  return 0;
}

/* The pixel size and slice spacing of the first page. */
static void sizes_of(TIFF *tif, stack_info *info) {
  float xres = 0, yres = 0;
  uint16_t unit = RESUNIT_INCH;
  double ij_unit = 0, ij_spacing = 0;
  char *desc = NULL;
  if (TIFFGetField(tif, TIFFTAG_IMAGEDESCRIPTION, &desc) && desc && !strncmp(desc, "ImageJ=", 7)) {
    for (const char *line = desc; line && *line;
         line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
      char value[64];
      size_t len = strcspn(line, "\n");
      if (!strncmp(line, "unit=", 5) && len - 5 < sizeof value) {
        memcpy(value, line + 5, len - 5);
        value[len - 5] = '\0';
        ij_unit = imagej_unit(value);
      } else if (!strncmp(line, "spacing=", 8)) {
        ij_spacing = strtod(line + 8, NULL);
      }
    }
  }
  TIFFGetField(tif, TIFFTAG_XRESOLUTION, &xres);
  TIFFGetField(tif, TIFFTAG_YRESOLUTION, &yres);
  TIFFGetFieldDefaulted(tif, TIFFTAG_RESOLUTIONUNIT, &unit);
  double per_unit = unit == RESUNIT_CENTIMETER ? 10 : unit == RESUNIT_INCH ? 25.4 : 0;
  if (ij_unit > 0)
    per_unit = ij_unit; /* ImageJ stores pixels per its unit, tag unit NONE */
  else if (unit == RESUNIT_INCH && (xres == 72 || xres == 96))
    per_unit = 0;
  if (per_unit > 0 && xres > 0 && yres > 0) {
    info->pixel_mm[0] = per_unit / xres;
    info->pixel_mm[1] = per_unit / yres;
  }
  if (ij_unit > 0 && ij_spacing > 0) info->slice_mm = ij_spacing * ij_unit;
}

/* Reads the current page into `dst` (width x height floats). */
static vox_status read_page(vox_context *ctx, const char *path, TIFF *tif, const page_format *p,
                            float *dst, unsigned char *buf) {
  vox_raw_type type = type_of(p);
  int host = image_host_big_endian();
  if (!TIFFIsTiled(tif)) {
    for (uint32_t row = 0; row < p->height; row++) {
      if (TIFFReadScanline(tif, buf, row, 0) < 0)
        return tiff_fail(ctx, VOX_ERR_FORMAT, path, "a corrupt or truncated strip");
      image_decode(buf, type, host, p->width, dst + (size_t)row * p->width);
    }
    return VOX_OK;
  }
  uint32_t tw = 0, th = 0;
  TIFFGetField(tif, TIFFTAG_TILEWIDTH, &tw);
  TIFFGetField(tif, TIFFTAG_TILELENGTH, &th);
  if (tw == 0 || th == 0) return tiff_fail(ctx, VOX_ERR_FORMAT, path, "tiles without a size");
  size_t elem = (size_t)p->bits / 8;
  float *line = malloc((size_t)tw * sizeof *line);
  if (!line) return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
  vox_status s = VOX_OK;
  for (uint32_t y = 0; y < p->height && !s; y += th)
    for (uint32_t x = 0; x < p->width && !s; x += tw) {
      if (TIFFReadTile(tif, buf, x, y, 0, 0) < 0) {
        s = tiff_fail(ctx, VOX_ERR_FORMAT, path, "a corrupt or truncated tile");
        break;
      }
      uint32_t w = p->width - x < tw ? p->width - x : tw,
               h = p->height - y < th ? p->height - y : th;
      for (uint32_t r = 0; r < h; r++) {
        image_decode(buf + (size_t)r * tw * elem, type, host, w, line);
        memcpy(dst + (size_t)(y + r) * p->width + x, line, w * sizeof *line);
      }
    }
  free(line);
  return s;
}

static TIFF *open_tiff(vox_context *ctx, const char *path, vox_status *s) {
  TIFFSetErrorHandler(on_error);
  TIFFSetWarningHandler(on_warning);
  tiff_message[0] = '\0';
  /* no single buffer beyond 512 MiB (a strip or tile of a real scan is far
   * smaller): a corrupt directory must not make libtiff ask for gigabytes */
  TIFFOpenOptions *options = TIFFOpenOptionsAlloc();
  if (!options) {
    *s = vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
    return NULL;
  }
  TIFFOpenOptionsSetMaxSingleMemAlloc(options, (tmsize_t)512 << 20);
  TIFF *tif = TIFFOpenExt(path, "r", options);
  TIFFOpenOptionsFree(options);
  if (!tif) *s = tiff_fail(ctx, VOX_ERR_FORMAT, path, "not a readable TIFF file");
  return tif;
}

/* Counts the pages of a file, checking each has the format of the first. */
static vox_status count_pages(vox_context *ctx, const char *path, page_format *first,
                              int have_first, int64_t *pages, stack_info *info) {
  vox_status s = VOX_OK;
  TIFF *tif = open_tiff(ctx, path, &s);
  if (!tif) return s;
  int64_t n = 0;
  do {
    page_format p;
    if ((s = page_of(ctx, path, tif, &p))) break;
    if (!have_first) {
      *first = p;
      have_first = 1;
      sizes_of(tif, info);
    } else if (p.width != first->width || p.height != first->height || p.bits != first->bits ||
               p.format != first->format) {
      s = vox_error(ctx, VOX_ERR_FORMAT,
                    "%s: page %lld is %ux%u of %u bits, unlike the first (%ux%u of %u bits)", path,
                    (long long)n + 1, p.width, p.height, p.bits, first->width, first->height,
                    first->bits);
      break;
    }
    n++;
  } while (TIFFReadDirectory(tif));
  if (!s && tiff_message[0]) s = tiff_fail(ctx, VOX_ERR_FORMAT, path, "a corrupt page directory");
  TIFFClose(tif);
  *pages = n;
  return s;
}

static vox_status read_pages(vox_context *ctx, const char *path, const page_format *p, float *dst,
                             int64_t max_pages, int64_t *done) {
  vox_status s = VOX_OK;
  TIFF *tif = open_tiff(ctx, path, &s);
  if (!tif) return s;
  tmsize_t size = TIFFIsTiled(tif) ? TIFFTileSize(tif) : TIFFScanlineSize(tif);
  /* the limit libtiff itself keeps to (open_tiff) */
  unsigned char *buf = size > 0 && size <= ((tmsize_t)512 << 20) ? malloc((size_t)size) : NULL;
  if (!buf)
    s = size > 0 && size <= ((tmsize_t)512 << 20)
            ? vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory")
            : tiff_fail(ctx, VOX_ERR_FORMAT, path, "a corrupt tile or strip size");
  size_t slice = (size_t)p->width * p->height;
  int64_t k = 0;
  for (; !s && k < max_pages; k++) {
    page_format q;
    if ((s = page_of(ctx, path, tif, &q))) break;
    tmsize_t qsize = TIFFIsTiled(tif) ? TIFFTileSize(tif) : TIFFScanlineSize(tif);
    if (qsize > size) {
      s = tiff_fail(ctx, VOX_ERR_FORMAT, path, "a page larger than the first");
      break;
    }
    if ((s = read_page(ctx, path, tif, p, dst + (size_t)k * slice, buf))) break;
    if (k + 1 < max_pages && !TIFFReadDirectory(tif)) {
      k++;
      break;
    }
  }
  free(buf);
  TIFFClose(tif);
  *done = k;
  return s;
}

/* A Bruker SkyScan reconstruction log: "Pixel Size (um)=..." (the
 * reconstructed slices are isotropic); 0 when the file does not say. */
static double skyscan_pixel_mm(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  char line[512];
  double mm = 0;
  while (fgets(line, sizeof line, f)) {
    const char *eq = strchr(line, '=');
    if (!eq || strncmp(line, "Pixel Size (um)", 15)) continue;
    double um = strtod(eq + 1, NULL);
    if (um > 0 && um < 1e6) mm = um * 1e-3;
  }
  fclose(f);
  return mm;
}

vox_status vox_image_read_tiff(vox_context *ctx, const char *path, vox_image *image) {
  memset(image, 0, sizeof *image);
  char **names = NULL, *single[1] = {(char *)path};
  double skyscan_mm = 0;
  size_t count = 1;
  int folder = 0;
  uint64_t size;
  if (image_file_size(ctx, path, &size)) {
    vox_status s = image_list_folder(ctx, path, &names, &count);
    if (s) return s;
    folder = 1;
    /* other files (a scanner's .log, notes) are not slices; a SkyScan
     * .log gives the pixel size */
    size_t kept = 0;
    for (size_t i = 0; i < count; i++) {
      if (image_has_suffix(names[i], ".tif") || image_has_suffix(names[i], ".tiff")) {
        names[kept++] = names[i];
        continue;
      }
      if (image_has_suffix(names[i], ".log") && !(skyscan_mm > 0)) {
        char *log = image_join(path, names[i]);
        if (log) skyscan_mm = skyscan_pixel_mm(log);
        free(log);
      }
      free(names[i]);
    }
    count = kept;
    if (count == 0) {
      free(names);
      return vox_error(ctx, VOX_ERR_FORMAT, "%s: no .tif or .tiff files", path);
    }
  }
  char **files = folder ? names : single;
  page_format first = {0};
  stack_info info = {{0, 0}, 0};
  int64_t total = 0, *pages = calloc(count, sizeof *pages);
  vox_status s = pages ? VOX_OK : vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
  char **full = calloc(count, sizeof *full);
  if (!full && !s) s = vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
  for (size_t i = 0; i < count && !s; i++) {
    full[i] = folder ? image_join(path, files[i]) : strdup(path);
    if (!full[i])
      s = vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
    else
      s = count_pages(ctx, full[i], &first, i > 0, &pages[i], &info);
    total += pages[i];
  }
  /* a corrupt directory must not ask for terabytes: no compression TIFF
   * offers packs grey values 4096 times (deflate at most about 1032) */
  uint64_t file_bytes = 0;
  for (size_t i = 0; i < count && !s; i++) {
    uint64_t one;
    if (!image_file_size(ctx, full[i], &one)) file_bytes += one;
  }
  if (!s && (double)first.width * first.height * (double)total * (first.bits / 8) >
                4096.0 * (double)file_bytes)
    s = vox_error(ctx, VOX_ERR_FORMAT, "%s: %ux%u pixels by %lld pages cannot be in %llu bytes",
                  path, first.width, first.height, (long long)total,
                  (unsigned long long)file_bytes);
  if (!s) {
    int64_t n[3] = {first.width, first.height, total};
    s = vox_image_init(ctx, image, n);
  }
  int64_t z = 0;
  for (size_t i = 0; i < count && !s; i++) {
    int64_t done = 0;
    s = read_pages(ctx, full[i], &first, image->data + (size_t)z * first.width * first.height,
                   pages[i], &done);
    if (!s && done != pages[i]) s = vox_error(ctx, VOX_ERR_FORMAT, "%s: lost pages", full[i]);
    z += done;
  }
  if (full)
    for (size_t i = 0; i < count; i++) free(full[i]);
  free(full);
  free(pages);
  if (folder) image_free_list(names, count);
  if (s) {
    vox_image_free(image);
    return s;
  }
  if (skyscan_mm > 0) { /* the scanner's word over the TIFF tags (often 72 dpi) */
    for (int a = 0; a < 3; a++) image->spacing[a] = skyscan_mm;
    image->spacing_known = 1;
  } else if (info.pixel_mm[0] > 0) {
    image->spacing[0] = info.pixel_mm[0];
    image->spacing[1] = info.pixel_mm[1];
    image->spacing[2] = info.slice_mm > 0 ? info.slice_mm : info.pixel_mm[0];
    image->spacing_known = 1;
  }
  /* a stack says nothing of its position: its corner at 0, so voxel
   * (0,0,0)'s centre half a voxel in */
  for (int a = 0; a < 3; a++) image->origin[a] = 0.5 * image->spacing[a];
  snprintf(image->format, sizeof image->format, "TIFF");
  return VOX_OK;
}
