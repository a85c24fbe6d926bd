/* SPDX-License-Identifier: BSD-3-Clause */
/* Picking the image reader for a path by what it is: a folder, a file's
 * first bytes, its name. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "image_internal.h"
#include "import_progress.h"

/* The first bytes of a file, for telling formats apart; fewer when short. */
static size_t read_magic(const char *path, unsigned char *buf, size_t size) {
  FILE *f = fopen(path, "rb");
  if (!f) return 0;
  size_t got = fread(buf, 1, size, f);
  fclose(f);
  return got;
}

static int is_tiff_magic(const unsigned char *m, size_t n) {
  return n >= 4 && ((m[0] == 'I' && m[1] == 'I' && (m[2] == 42 || m[2] == 43) && m[3] == 0) ||
                    (m[0] == 'M' && m[1] == 'M' && m[2] == 0 && (m[3] == 42 || m[3] == 43)));
}

static int is_dicom_magic(const unsigned char *m, size_t n) {
  return n >= 132 && memcmp(m + 128, "DICM", 4) == 0;
}

static int is_aim_magic(const unsigned char *m, size_t n) {
  if (n >= 12 && memcmp(m, "AIMDATA_V030", 12) == 0) return 1;
  /* v020: a pre-header of five int32 starting with its own length, 20 */
  return n >= 8 && m[0] == 20 && m[1] == 0 && m[2] == 0 && m[3] == 0 && m[4] == 140 && m[5] == 0 &&
         m[6] == 0 && m[7] == 0;
}

/* A folder holds a DICOM series or a TIFF stack: a TIFF stack when it has
 * .tif/.tiff files that are TIFF (beside them a scanner may leave a .log). */
static vox_status read_folder(vox_context *ctx, const char *path, vox_image *image) {
  char **names;
  size_t count;
  vox_status s = image_list_folder(ctx, path, &names, &count);
  if (s) return s;
  int tiff = 0;
  for (size_t i = 0; i < count; i++) {
    if (!image_has_suffix(names[i], ".tif") && !image_has_suffix(names[i], ".tiff")) continue;
    char *file = image_join(path, names[i]);
    unsigned char m[8];
    tiff = file && is_tiff_magic(m, read_magic(file, m, sizeof m));
    free(file);
    break; /* the first TIFF name decides */
  }
  image_free_list(names, count);
  return tiff ? vox_image_read_tiff(ctx, path, image) : vox_image_read_dicom(ctx, path, image);
}

static vox_status read_any(vox_context *ctx, const char *path, vox_image *image) {
  struct stat st;
  if (stat(path, &st)) return vox_error(ctx, VOX_ERR_IO, "%s: %s", path, strerror(errno));
  if (S_ISDIR(st.st_mode)) return read_folder(ctx, path, image);
  if (image_has_suffix(path, ".nii") || image_has_suffix(path, ".nii.gz"))
    return vox_image_read_nifti(ctx, path, image);
  if (image_has_suffix(path, ".mhd") || image_has_suffix(path, ".mha"))
    return vox_image_read_metaimage(ctx, path, image);
  unsigned char m[132];
  size_t n = read_magic(path, m, sizeof m);
  /* DICOM first: its 128-byte preamble may itself be a TIFF header (files
   * that are both) */
  if (is_dicom_magic(m, n)) return vox_image_read_dicom(ctx, path, image);
  if (is_tiff_magic(m, n)) return vox_image_read_tiff(ctx, path, image);
  if (is_aim_magic(m, n) || image_has_suffix(path, ".aim") || strstr(path, ".AIM;") ||
      image_has_suffix(path, ".aim;1"))
    return vox_image_read_aim(ctx, path, image);
  if (image_has_suffix(path, ".dcm")) return vox_image_read_dicom(ctx, path, image);
  if (image_has_suffix(path, ".tif") || image_has_suffix(path, ".tiff"))
    return vox_image_read_tiff(ctx, path, image);
  return vox_error(ctx, VOX_ERR_FORMAT,
                   "%s: not an image voxfe reads (DICOM, TIFF, NIfTI .nii, MetaImage .mhd, "
                   "Scanco .aim; a raw volume needs --raw-size and --raw-type)",
                   path);
}

/* Whatever the format, the geometry the file gives must make a grid: a NaN
 * origin or a 1e308 mm voxel would otherwise reach the model file (and an
 * STL of NaN points) without a word. */
static vox_status check_geometry(vox_context *ctx, const char *path, const vox_image *image) {
  static const char axis[3] = {'x', 'y', 'z'};
  for (int a = 0; a < 3; a++) {
    const double h = image->spacing[a], o = image->origin[a];
    if (image->spacing_known && !(h >= VOX_VOXEL_SIZE_MIN && h <= VOX_VOXEL_SIZE_MAX))
      return vox_error(ctx, VOX_ERR_FORMAT,
                       "%s: the voxel size along %c is %g mm, not a number in [%g, %g] mm",
                       path, axis[a], h, VOX_VOXEL_SIZE_MIN, VOX_VOXEL_SIZE_MAX);
    if (!(fabs(o) <= VOX_ORIGIN_MAX))
      return vox_error(ctx, VOX_ERR_FORMAT,
                       "%s: the origin along %c is %g mm, not a finite number", path, axis[a], o);
  }
  return VOX_OK;
}

vox_status vox_image_read(vox_context *ctx, const char *path, vox_image *image) {
  memset(image, 0, sizeof *image);
  const double t0 = import_clock();
  vox_status status = read_any(ctx, path, image);
  if (status == VOX_OK && (status = check_geometry(ctx, path, image))) vox_image_free(image);
  if (status == VOX_OK &&
      (status = import_stage(ctx, t0, "read %s: %lldx%lldx%lld %s", import_short_name(path),
                             (long long)image->n[0], (long long)image->n[1],
                             (long long)image->n[2], image->format)))
    vox_image_free(image);
  return status;
}
