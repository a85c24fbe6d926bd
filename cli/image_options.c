/* SPDX-License-Identifier: BSD-3-Clause */
/* The values of voxfe-voxelize's image options (--threshold, --roi, ...):
 * parsers and formatters for the option table of voxelize.c. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli_common.h"
#include "cli_numbers.h"
#include "image_options.h"

int image_parse_raw_type(const char *what, const char *text, void *value) {
  if (vox_image_parse_raw_type(text, value) == 0) return 0;
  cli_error("%s: expected uint8, int8, uint16, int16, uint32, int32, float32 or float64, got '%s'",
            what, text);
  return -1;
}

void image_format_raw_type(const void *value, char *buf, size_t size) {
  snprintf(buf, size, "%s", vox_image_raw_type_name(*(const vox_raw_type *)value));
}

/* "otsu", or increasing numbers separated by commas. */
int image_parse_thresholds(const char *what, const char *text, void *value) {
  vox_segmentation *seg = value;
  if (strcmp(text, "otsu") == 0) {
    seg->otsu = 1;
    seg->n_thresholds = 1;
    return 0;
  }
  int n = cli_count_fields(text, ',');
  cli_range any = {-INFINITY, INFINITY, 0, 0};
  if (n < 1 || n > VOX_MAX_THRESHOLDS) {
    cli_error("%s: expected otsu or 1 to %d numbers T1,T2,..., got '%s'", what, VOX_MAX_THRESHOLDS,
              text);
    return -1;
  }
  if (cli_parse_real_list(what, "otsu or T1,T2,...", text, ',', n, any, seg->thresholds)) return -1;
  for (int i = 1; i < n; i++)
    if (!(seg->thresholds[i] > seg->thresholds[i - 1])) {
      cli_error("%s: thresholds must increase, got '%s'", what, text);
      return -1;
    }
  seg->otsu = 0;
  seg->n_thresholds = n;
  return 0;
}

void image_format_thresholds(const void *value, char *buf, size_t size) {
  const vox_segmentation *seg = value;
  if (seg->otsu)
    snprintf(buf, size, "otsu");
  else if (isnan(seg->thresholds[0]))
    buf[0] = '\0'; /* not given */
  else
    cli_format_real_list(seg->thresholds, seg->n_thresholds, buf, size);
}

int image_parse_units(const char *what, const char *text, void *value) {
  static const char *const names[] = {"file", "hu", "density"};
  for (int i = 0; i < 3; i++)
    if (strcmp(text, names[i]) == 0) {
      *(vox_value_units *)value = (vox_value_units)i;
      return 0;
    }
  cli_error("%s: expected file, hu or density, got '%s'", what, text);
  return -1;
}

void image_format_units(const void *value, char *buf, size_t size) {
  static const char *const names[] = {"file", "hu", "density"};
  snprintf(buf, size, "%s", names[*(const vox_value_units *)value]);
}

int image_parse_calibration(const char *what, const char *text, void *value) {
  vox_linear *c = value;
  cli_range any = {-INFINITY, INFINITY, 0, 0};
  double v[2];
  if (cli_parse_real_list(what, "SLOPE,INTERCEPT", text, ',', 2, any, v)) return -1;
  *c = (vox_linear){1, v[0], v[1]};
  return 0;
}

void image_format_calibration(const void *value, char *buf, size_t size) {
  const vox_linear *c = value;
  if (!c->known)
    buf[0] = '\0'; /* the file's, if any */
  else
    cli_format_real_list(&c->slope, 2, buf, size);
}

int image_parse_labels(const char *what, const char *text, void *value) {
  uint8_t *labels = value;
  int n = cli_count_fields(text, ',');
  long long v[VOX_MAX_THRESHOLDS];
  cli_range range = {1, 255, 0, 0};
  if (n < 1 || n > VOX_MAX_THRESHOLDS) {
    cli_error("%s: expected 1 to %d labels L1,L2,..., got '%s'", what, VOX_MAX_THRESHOLDS, text);
    return -1;
  }
  if (cli_parse_integer_list(what, "L1,L2,...", text, ',', n, range, v)) return -1;
  memset(labels, 0, VOX_MAX_THRESHOLDS);
  for (int i = 0; i < n; i++) labels[i] = (uint8_t)v[i];
  return 0;
}

void image_format_labels(const void *value, char *buf, size_t size) {
  const uint8_t *labels = value;
  size_t len = 0;
  buf[0] = '\0';
  for (int i = 0; i < VOX_MAX_THRESHOLDS && labels[i] && len + 5 < size; i++)
    len += (size_t)snprintf(buf + len, size - len, "%s%d", i ? "," : "", labels[i]);
  /* nothing when not given: the default 1,4,5,... */
}

/* X0:X1,Y0:Y1,Z0:Z1 in voxel indices of the image, end excluded. */
int image_parse_roi(const char *what, const char *text, void *value) {
  int64_t *lo = value, *hi = lo + 3;
  long long a[6];
  int used = 0;
  if (sscanf(text, "%lld:%lld,%lld:%lld,%lld:%lld%n", &a[0], &a[1], &a[2], &a[3], &a[4], &a[5],
             &used) != 6 ||
      text[used] != '\0' || a[0] < 0 || a[2] < 0 || a[4] < 0 || a[1] <= a[0] || a[3] <= a[2] ||
      a[5] <= a[4]) {
    cli_error("%s: expected X0:X1,Y0:Y1,Z0:Z1 (voxel indices, 0 <= start < end), got '%s'", what,
              text);
    return -1;
  }
  for (int i = 0; i < 3; i++) {
    lo[i] = a[2 * i];
    hi[i] = a[2 * i + 1];
  }
  return 0;
}

void image_format_roi(const void *value, char *buf, size_t size) {
  const int64_t *lo = value, *hi = lo + 3;
  if (hi[0] == 0)
    buf[0] = '\0'; /* the whole image */
  else
    snprintf(buf, size, "%lld:%lld,%lld:%lld,%lld:%lld", (long long)lo[0], (long long)hi[0],
             (long long)lo[1], (long long)hi[1], (long long)lo[2], (long long)hi[2]);
}

int image_parse_downsample_mode(const char *what, const char *text, void *value) {
  if (strcmp(text, "majority") == 0 || strcmp(text, "mean") == 0) {
    *(vox_downsample_mode *)value = text[1] == 'a' ? VOX_DOWNSAMPLE_MAJORITY : VOX_DOWNSAMPLE_MEAN;
    return 0;
  }
  cli_error("%s: expected majority or mean, got '%s'", what, text);
  return -1;
}

void image_format_downsample_mode(const void *value, char *buf, size_t size) {
  snprintf(buf, size, "%s",
           *(const vox_downsample_mode *)value == VOX_DOWNSAMPLE_MEAN ? "mean" : "majority");
}
