/* SPDX-License-Identifier: BSD-3-Clause */
/* From an image to a model, in the order that keeps each step honest: the
 * region of interest first (less to convert), values to the threshold's
 * units, averaging before thresholds (it acts on values), majority votes
 * after them (they act on labels), the largest component, the crop to what
 * is left, the move into the model. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "image_internal.h"
#include "import_progress.h"

uint8_t vox_segmentation_default_label(int class_index) {
  return (uint8_t)(class_index == 0 ? 1 : class_index + 3);
}

static void value_range(const vox_image *image, double *lo, double *hi) {
  *lo = INFINITY;
  *hi = -INFINITY;
  for (int64_t v = 0; v < vox_image_voxels(image); v++) {
    if (image->data[v] < *lo) *lo = image->data[v];
    if (image->data[v] > *hi) *hi = image->data[v];
  }
}

static vox_status segment(vox_context *ctx, const char *path, vox_image *image,
                          const vox_segmentation *seg, vox_model *model,
                          vox_segmentation_report *report, vox_labels *l) {
  vox_status s;
  if (seg->roi_given && (s = vox_image_crop(ctx, image, seg->roi_lo, seg->roi_hi))) return s;
  if ((s = vox_image_convert_units(ctx, path, image, seg->units, &seg->calibration))) return s;
  int f = seg->downsample < 1 ? 1 : seg->downsample;
  if (seg->downsample_mode == VOX_DOWNSAMPLE_MEAN && (s = vox_image_downsample_mean(ctx, image, f)))
    return s;

  int n_t = seg->otsu ? 1 : seg->n_thresholds;
  if (n_t < 1 || n_t > VOX_MAX_THRESHOLDS)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "give 1 to %d thresholds", VOX_MAX_THRESHOLDS);
  double t[VOX_MAX_THRESHOLDS];
  uint8_t labels[VOX_MAX_THRESHOLDS];
  for (int c = 0; c < n_t; c++) {
    t[c] = seg->otsu ? vox_image_otsu(image) : seg->thresholds[c];
    labels[c] = seg->labels[c] ? seg->labels[c] : vox_segmentation_default_label(c);
    if (c && !(t[c] > t[c - 1]))
      return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "thresholds must increase");
    report->thresholds[c] = t[c];
  }
  report->n_thresholds = n_t;
  snprintf(report->units, sizeof report->units, "%s", image->units);

  size_t n = (size_t)vox_image_voxels(image);
  if (!(l->label = malloc(n))) return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
  image_huge_pages(l->label, n);
  report->labelled = vox_image_threshold(image, t, labels, n_t, l->label);
  if (report->labelled == 0) {
    double lo, hi;
    value_range(image, &lo, &hi);
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "%s: the threshold %g %s leaves no voxel (the values range from %g to %g)",
                     path, t[0], image->units, lo, hi);
  }
  for (int a = 0; a < 3; a++) {
    l->n[a] = image->n[a];
    l->spacing[a] = image->spacing[a];
    l->origin[a] = image->origin[a];
  }
  if (seg->keep_intensity) {
    l->intensity = image->data; /* the image's values move into the labels */
    image->data = NULL;
  }
  if (seg->downsample_mode == VOX_DOWNSAMPLE_MAJORITY &&
      (s = vox_labels_downsample_majority(ctx, l, f)))
    return s;
  report->kept = report->labelled;
  if (seg->keep_largest && (s = vox_labels_keep_largest(ctx, l, &report->kept))) return s;
  if (seg->crop && (s = vox_labels_crop_to_content(ctx, l, seg->crop_margin))) {
    if (s == VOX_ERR_INVALID_ARGUMENT) /* nothing left after the downsampling vote */
      return vox_error(ctx, s, "%s: no voxel is left after downsampling", path);
    return s;
  }
  return vox_labels_to_model(ctx, l, image->units, model);
}

vox_status vox_image_segment(vox_context *ctx, const char *path, vox_image *image,
                             const vox_segmentation *seg, vox_model *model,
                             vox_segmentation_report *report) {
  vox_labels l;
  memset(&l, 0, sizeof l);
  memset(model, 0, sizeof *model);
  memset(report, 0, sizeof *report);
  const double t0 = import_clock();
  vox_status s = segment(ctx, path, image, seg, model, report, &l);
  vox_labels_free(&l);
  vox_image_free(image);
  if (!s)
    s = import_stage(ctx, t0, "segmented %s: %lld voxels kept, model %lldx%lldx%lld",
                     import_short_name(path),
                     (long long)report->kept, (long long)model->grid.nx,
                     (long long)model->grid.ny, (long long)model->grid.nz);
  if (s) vox_model_free(model);
  return s;
}
