/* SPDX-License-Identifier: BSD-3-Clause */
/* DICOM: one file (a slice, or the frames of a multi-frame image) or a
 * folder holding one series. Slices are ordered by their position along the
 * slice normal (ImagePositionPatient on the cross product of the
 * ImageOrientationPatient directions), never by file name or instance
 * number; the spacing between them must be uniform, and a gap is reported
 * as an error that names the two files. Values are rescaled (slope and
 * intercept), so CT images come out in Hounsfield units. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "dicom_gdcm.h"
#include "dicom_scan.h"
#include "image_internal.h"

/* Slices more than this fraction of the mean spacing off are a gap. */
#define GAP_TOLERANCE 0.01
/* Pixel spacings of two slices that differ by more than this fraction are
 * different voxel sizes; below it, rounding of the decimal strings. */
#define PIXEL_SPACING_TOLERANCE 1e-4

typedef struct slice {
  char *path;
  dicom_header h;
  dicom_pixels px;
  double distance;     /* along the slice normal, mm */
  const char *problem; /* the walk's complaint, or NULL */
} slice;

static vox_status header_error(vox_context *ctx, const char *path, int code, const char *message) {
  return vox_error(ctx, code == DICOM_UNSUPPORTED ? VOX_ERR_UNSUPPORTED : VOX_ERR_FORMAT, "%s: %s",
                   path, message);
}

/* The context's thread count (vox_context_set_threads), else OpenMP's. */
static int threads_of(const vox_context *ctx) {
  int n = vox_context_threads(ctx);
  return n > 0 ? n : omp_get_max_threads();
}

static const char *base_name(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

static int by_distance(const void *pa, const void *pb) {
  const slice *a = pa, *b = pb;
  return a->distance < b->distance ? -1 : a->distance > b->distance;
}

static void normal_of(const double *o, double *n) {
  n[0] = o[1] * o[5] - o[2] * o[4];
  n[1] = o[2] * o[3] - o[0] * o[5];
  n[2] = o[0] * o[4] - o[1] * o[3];
}

/* Every slice must be of the first's series, size and orientation. */
static vox_status check_alike(vox_context *ctx, const slice *first, const slice *s) {
  const dicom_header *a = &first->h, *b = &s->h;
  if (strcmp(a->series_uid, b->series_uid))
    return vox_error(ctx, VOX_ERR_FORMAT,
                     "%s: belongs to another series than %s (the folder must hold one series)",
                     s->path, first->path);
  if (a->rows != b->rows || a->columns != b->columns || b->frames != 1)
    return vox_error(ctx, VOX_ERR_FORMAT, "%s: a %dx%d image, unlike %s (%dx%d)", s->path,
                     b->columns, b->rows, first->path, a->columns, a->rows);
  if (!b->has_position || !b->has_orientation)
    return vox_error(
        ctx, VOX_ERR_FORMAT,
        "%s: no ImagePositionPatient or ImageOrientationPatient to order the slices by", s->path);
  for (int i = 0; i < 6; i++)
    if (fabs(a->orientation[i] - b->orientation[i]) > 1e-4)
      return vox_error(ctx, VOX_ERR_FORMAT, "%s: the slice is oriented unlike %s", s->path,
                       first->path);
  /* one volume has one voxel size: the first slice's would be wrong for
   * the others */
  int same = a->has_pixel_spacing == b->has_pixel_spacing;
  for (int i = 0; i < 2 && same && a->has_pixel_spacing; i++)
    same = fabs(a->pixel_spacing[i] - b->pixel_spacing[i]) <=
           PIXEL_SPACING_TOLERANCE * fmax(fabs(a->pixel_spacing[i]), fabs(b->pixel_spacing[i]));
  if (!same) {
    char sa[64] = "none", sb[64] = "none";
    if (a->has_pixel_spacing)
      snprintf(sa, sizeof sa, "%g x %g mm", a->pixel_spacing[0], a->pixel_spacing[1]);
    if (b->has_pixel_spacing)
      snprintf(sb, sizeof sb, "%g x %g mm", b->pixel_spacing[0], b->pixel_spacing[1]);
    return vox_error(ctx, VOX_ERR_FORMAT,
                     "%s: pixel spacing %s, unlike %s (%s): the slices of one series must have "
                     "one pixel spacing",
                     s->path, sb, first->path, sa);
  }
  return VOX_OK;
}

/* Orders the slices and finds their spacing; reports gaps and repeats. */
static vox_status order_slices(vox_context *ctx, const char *folder, slice *s, size_t n,
                               double *spacing) {
  double normal[3];
  normal_of(s[0].h.orientation, normal);
  for (size_t i = 0; i < n; i++)
    s[i].distance = s[i].h.position[0] * normal[0] + s[i].h.position[1] * normal[1] +
                    s[i].h.position[2] * normal[2];
  qsort(s, n, sizeof *s, by_distance);
  double mean = (s[n - 1].distance - s[0].distance) / (double)(n - 1);
  for (size_t i = 0; i + 1 < n; i++) {
    double d = s[i + 1].distance - s[i].distance;
    if (d < 1e-6)
      return vox_error(ctx, VOX_ERR_FORMAT, "%s: slices %s and %s lie at the same position", folder,
                       base_name(s[i].path), base_name(s[i + 1].path));
    if (fabs(d - mean) > GAP_TOLERANCE * mean)
      return vox_error(ctx, VOX_ERR_FORMAT,
                       "%s: irregular slice spacing: %g mm between slices %s and %s, %g mm on "
                       "average (missing slices?)",
                       folder, d, base_name(s[i].path), base_name(s[i + 1].path), mean);
  }
  *spacing = mean;
  return VOX_OK;
}

static void set_units(vox_image *image, const dicom_header *h) {
  const char *units = h->rescale_type[0]               ? h->rescale_type
                      : !strcasecmp(h->modality, "CT") ? "HU"
                                                       : "1";
  snprintf(image->units, sizeof image->units, "%s", units);
  if (!strcasecmp(units, "HU")) image->to_hu = (vox_linear){1, 1, 0};
}

/* One file's header: the walk of dicom_scan.c, GDCM for what it cannot walk
 * (deflated data sets). */
static vox_status header_of(vox_context *ctx, slice *sl) {
  if (sl->problem)
    return vox_error(ctx, VOX_ERR_FORMAT, "%s: not a valid DICOM file: %s", sl->path, sl->problem);
  if (sl->px.syntax[0] && !dicom_syntax_known(sl->px.syntax))
    return vox_error(ctx, VOX_ERR_UNSUPPORTED, "%s: unknown transfer syntax %s", sl->path,
                     sl->px.syntax);
  if (!sl->px.walked) {
    char message[256];
    int code = dicom_read_header(sl->path, &sl->h, message, sizeof message);
    if (code) return header_error(ctx, sl->path, code, message);
  }
  if (sl->h.rows <= 0 || sl->h.columns <= 0)
    return vox_error(ctx, VOX_ERR_FORMAT, "%s: no image (Rows and Columns missing)", sl->path);
  /* uncompressed pixels must be all there: known before the volume is
   * allocated, which a corrupt header could make huge */
  double need = (double)sl->h.rows * sl->h.columns * (sl->h.frames > 0 ? sl->h.frames : 1) *
                (sl->h.bits_allocated / 8);
  if (sl->px.native && (double)sl->px.length < need)
    return vox_error(ctx, VOX_ERR_FORMAT,
                     "%s: truncated (the pixel data hold %u bytes, the image needs %.0f)", sl->path,
                     sl->px.length, need);
  return VOX_OK;
}

static vox_status read_headers(vox_context *ctx, const char *path, slice **out, size_t *count) {
  char **names = NULL;
  size_t n_names = 1;
  uint64_t size;
  int folder = image_file_size(ctx, path, &size) != VOX_OK;
  if (folder) {
    vox_status s = image_list_folder(ctx, path, &names, &n_names);
    if (s) return s;
  }
  slice *s = calloc(n_names, sizeof *s);
  size_t n = 0;
  vox_status status = s ? VOX_OK : vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
  for (size_t i = 0; i < n_names && !status; i++) {
    if (folder && !strcasecmp(names[i], "DICOMDIR")) continue; /* an index, not a slice */
    if (!(s[n].path = folder ? image_join(path, names[i]) : strdup(path)))
      status = vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
    n++;
  }
  if (folder) image_free_list(names, n_names);
  /* the walks are independent: the files in parallel */
  if (!status) {
#pragma omp parallel for schedule(dynamic, 8) num_threads(threads_of(ctx))
    for (size_t i = 0; i < n; i++) dicom_scan_file(s[i].path, &s[i].h, &s[i].px, &s[i].problem);
    for (size_t i = 0; i < n && !status; i++) status = header_of(ctx, &s[i]);
  }
  if (!status && n == 0) status = vox_error(ctx, VOX_ERR_FORMAT, "%s: no DICOM files", path);
  *out = s;
  *count = n;
  return status;
}

/* The pixels of every file into its place in z: uncompressed ones straight
 * from the file, in parallel; compressed ones through GDCM, one at a time
 * (its guard in dicom_gdcm.cpp is process-wide). */
static vox_status read_pixels(vox_context *ctx, slice *s, size_t n, size_t per_file,
                              vox_image *image) {
  const char **problem = calloc(n, sizeof *problem);
  if (!problem) return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
#pragma omp parallel for schedule(dynamic, 4) num_threads(threads_of(ctx))
  for (size_t i = 0; i < n; i++)
    if (s[i].px.native)
      dicom_read_native(s[i].path, &s[i].h, &s[i].px, image->data + i * per_file, per_file,
                        &problem[i]);
  vox_status status = VOX_OK;
  for (size_t i = 0; i < n && !status; i++) {
    if (s[i].px.native) {
      if (problem[i]) status = vox_error(ctx, VOX_ERR_FORMAT, "%s: %s", s[i].path, problem[i]);
      continue;
    }
    char message[256];
    int code =
        dicom_read_pixels(s[i].path, image->data + i * per_file, per_file, message, sizeof message);
    if (code) status = header_error(ctx, s[i].path, code, message);
  }
  free(problem);
  return status;
}

static void free_slices(slice *s, size_t n) {
  if (!s) return;
  for (size_t i = 0; i < n; i++) free(s[i].path);
  free(s);
}

vox_status vox_image_read_dicom(vox_context *ctx, const char *path, vox_image *image) {
  memset(image, 0, sizeof *image);
  slice *s = NULL;
  size_t n = 0;
  vox_status status = read_headers(ctx, path, &s, &n);
  double dz = 0;
  const dicom_header *h = n ? &s[0].h : NULL;
  if (!status && h->samples_per_pixel != 1)
    status =
        vox_error(ctx, VOX_ERR_UNSUPPORTED, "%s: colour images (%d samples per pixel) are not read",
                  s[0].path, h->samples_per_pixel);
  if (!status && (h->bits_allocated % 8 || h->bits_allocated > 64))
    status = vox_error(ctx, VOX_ERR_UNSUPPORTED, "%s: %d-bit pixels are not read", s[0].path,
                       h->bits_allocated);
  if (!status && n > 1) {
    for (size_t i = 1; i < n && !status; i++) status = check_alike(ctx, &s[0], &s[i]);
    if (!status && (!h->has_position || !h->has_orientation))
      status = vox_error(ctx, VOX_ERR_FORMAT,
                         "%s: no ImagePositionPatient or ImageOrientationPatient to order the "
                         "slices by",
                         s[0].path);
    if (!status) status = order_slices(ctx, path, s, n, &dz);
    h = &s[0].h;
  } else if (!status) {
    dz = h->spacing_between_slices > 0 ? h->spacing_between_slices
         : h->slice_thickness > 0      ? h->slice_thickness
                                       : 1;
  }
  if (!status && (h->frames < 1 || (n > 1 && h->frames != 1)))
    status = vox_error(ctx, VOX_ERR_FORMAT, "%s: %d frames", s[0].path, h->frames);
  if (!status) {
    int64_t dims[3] = {h->columns, h->rows, n > 1 ? (int64_t)n : h->frames};
    status = vox_image_init(ctx, image, dims);
  }
  if (!status) {
    size_t per_file = (size_t)(image->n[0] * image->n[1]) * (n > 1 ? 1 : (size_t)h->frames);
    status = read_pixels(ctx, s, n, per_file, image);
  }
  if (!status) {
    image->spacing[0] = h->has_pixel_spacing ? h->pixel_spacing[1] : 1;
    image->spacing[1] = h->has_pixel_spacing ? h->pixel_spacing[0] : 1;
    image->spacing[2] = dz;
    image->spacing_known = h->has_pixel_spacing;
    for (int a = 0; a < 3; a++) image->origin[a] = h->has_position ? h->position[a] : 0;
    set_units(image, h);
    snprintf(image->format, sizeof image->format, "DICOM");
  } else {
    vox_image_free(image);
  }
  free_slices(s, n);
  return status;
}
