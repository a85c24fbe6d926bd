/* SPDX-License-Identifier: BSD-3-Clause */
/* Image values to labels: unit conversion (Hounsfield units, calibrated
 * density), cropping to a region of interest, averaging blocks of voxels,
 * Otsu's threshold and thresholds to labels. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "image_internal.h"

vox_status vox_image_convert_units(vox_context *ctx, const char *path, vox_image *image,
                                   vox_value_units units, const vox_linear *calibration) {
  vox_linear map = {0, 1, 0};
  char file_units[VOX_UNITS_MAX];
  snprintf(file_units, sizeof file_units, "%s", image->units);
  const char *name = file_units;
  if (units == VOX_UNITS_HU) {
    if (!image->to_hu.known)
      return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                       "%s: the file does not give Hounsfield units (a CT DICOM series, or an AIM "
                       "file with 'HU: mu water' in its log, does); give the threshold in file "
                       "units or through a calibration",
                       path);
    map = image->to_hu;
    name = "HU";
  } else if (units == VOX_UNITS_DENSITY) {
    if (calibration && calibration->known)
      map = *calibration;
    else if (image->to_density.known)
      map = image->to_density;
    else
      return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                       "%s: the file gives no density calibration: give --calibration "
                       "SLOPE,INTERCEPT",
                       path);
    name = "mg HA/ccm";
  }
  if (map.known && (map.slope != 1 || map.intercept != 0)) {
    float a = (float)map.slope, b = (float)map.intercept;
    int64_t n = vox_image_voxels(image);
    for (int64_t v = 0; v < n; v++) image->data[v] = a * image->data[v] + b;
  }
  snprintf(image->units, sizeof image->units, "%s", name);
  return VOX_OK;
}

vox_status vox_image_crop(vox_context *ctx, vox_image *image, const int64_t lo_in[3],
                          const int64_t hi_in[3]) {
  int64_t lo[3], hi[3], n[3];
  for (int a = 0; a < 3; a++) {
    lo[a] = lo_in[a] < 0 ? 0 : lo_in[a];
    hi[a] = hi_in[a] > image->n[a] ? image->n[a] : hi_in[a];
    n[a] = hi[a] - lo[a];
    if (n[a] < 1)
      return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                       "the region of interest lies outside the %lldx%lldx%lld image",
                       (long long)image->n[0], (long long)image->n[1], (long long)image->n[2]);
  }
  /* rows move towards the front, never overlapping a row still to be read */
  for (int64_t k = 0; k < n[2]; k++)
    for (int64_t j = 0; j < n[1]; j++)
      memmove(image->data + (k * n[1] + j) * n[0],
              image->data + ((k + lo[2]) * image->n[1] + j + lo[1]) * image->n[0] + lo[0],
              (size_t)n[0] * sizeof(float));
  for (int a = 0; a < 3; a++) {
    image->origin[a] += (double)lo[a] * image->spacing[a];
    image->n[a] = n[a];
  }
  float *shrunk = realloc(image->data, (size_t)vox_image_voxels(image) * sizeof(float));
  if (shrunk) image->data = shrunk;
  return VOX_OK;
}

vox_status vox_image_downsample_mean(vox_context *ctx, vox_image *image, int f) {
  if (f < 1) return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "downsampling factor must be >= 1");
  if (f == 1) return VOX_OK;
  int64_t n[3];
  for (int a = 0; a < 3; a++) n[a] = (image->n[a] + f - 1) / f;
  float *out = malloc((size_t)(n[0] * n[1] * n[2]) * sizeof(float));
  if (!out) return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
  const int64_t *m = image->n;
#pragma omp parallel for schedule(static)
  for (int64_t K = 0; K < n[2]; K++)
    for (int64_t J = 0; J < n[1]; J++)
      for (int64_t I = 0; I < n[0]; I++) {
        double sum = 0;
        int64_t count = 0;
        for (int64_t k = K * f; k < (K + 1) * f && k < m[2]; k++)
          for (int64_t j = J * f; j < (J + 1) * f && j < m[1]; j++)
            for (int64_t i = I * f; i < (I + 1) * f && i < m[0]; i++) {
              sum += image->data[(k * m[1] + j) * m[0] + i];
              count++;
            }
        out[(K * n[1] + J) * n[0] + I] = (float)(sum / (double)count);
      }
  free(image->data);
  image->data = out;
  for (int a = 0; a < 3; a++) {
    /* the first corner stays where it was */
    image->origin[a] += 0.5 * (f - 1) * image->spacing[a];
    image->spacing[a] *= f;
    image->n[a] = n[a];
  }
  return VOX_OK;
}

#define OTSU_BINS 256

double vox_image_otsu(const vox_image *image) {
  int64_t n = vox_image_voxels(image);
  double lo = INFINITY, hi = -INFINITY;
  /* NaN and infinite values (a reader's "no data") take no part */
  for (int64_t v = 0; v < n; v++) {
    double x = image->data[v];
    if (!isfinite(x)) continue;
    if (x < lo) lo = x;
    if (x > hi) hi = x;
  }
  if (!(hi > lo)) return isfinite(lo) ? lo : 0;
  double count[OTSU_BINS] = {0}, width = (hi - lo) / OTSU_BINS;
  for (int64_t v = 0; v < n; v++) {
    if (!isfinite(image->data[v])) continue;
    int b = (int)((image->data[v] - lo) / width);
    count[b < 0 ? 0 : b >= OTSU_BINS ? OTSU_BINS - 1 : b]++;
  }
  /* between-class variance w0 w1 (mu0 - mu1)^2 for the split before bin t,
   * the classes' means over the bin centres */
  double total = 0, total_sum = 0;
  for (int b = 0; b < OTSU_BINS; b++) {
    total += count[b];
    total_sum += count[b] * (b + 0.5);
  }
  double w0 = 0, sum0 = 0, best = -1;
  int best_t = 1;
  for (int t = 1; t < OTSU_BINS; t++) {
    w0 += count[t - 1];
    sum0 += count[t - 1] * (t - 0.5);
    double w1 = total - w0;
    if (w0 == 0 || w1 == 0) continue;
    double d = sum0 / w0 - (total_sum - sum0) / w1, var = w0 * w1 * d * d;
    if (var > best) {
      best = var;
      best_t = t;
    }
  }
  return lo + best_t * width;
}

int64_t vox_image_threshold(const vox_image *image, const double *t, const uint8_t *labels,
                            int n_thresholds, uint8_t *out) {
  int64_t n = vox_image_voxels(image), hits = 0;
  if (n_thresholds == 1) { /* the common case, in a loop the compiler vectorizes */
    const double t0 = t[0];
    const uint8_t l0 = labels[0];
#pragma omp parallel for reduction(+ : hits) schedule(static)
    for (int64_t v = 0; v < n; v++) {
      int on = (double)image->data[v] >= t0;
      out[v] = on ? l0 : 0;
      hits += on;
    }
    return hits;
  }
#pragma omp parallel for reduction(+ : hits) schedule(static)
  for (int64_t v = 0; v < n; v++) {
    double x = image->data[v];
    int c = 0;
    while (c < n_thresholds && x >= t[c]) c++; /* NaN stays below every threshold */
    out[v] = c ? labels[c - 1] : 0;
    hits += c > 0;
  }
  return hits;
}
