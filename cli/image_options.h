/* SPDX-License-Identifier: BSD-3-Clause */
/* The values of voxfe-voxelize's image options: each parser prints its one
 * line (cli_error) and returns -1 on bad text; each formatter writes the
 * value as the option takes it, or nothing for a value not given (the
 * history then leaves the option out). */
#ifndef VOXFE_CLI_IMAGE_OPTIONS_H
#define VOXFE_CLI_IMAGE_OPTIONS_H

#include <stddef.h>

#include "voxfe/image.h"

int image_parse_raw_type(const char *what, const char *text, void *value);
void image_format_raw_type(const void *value, char *buf, size_t size);
int image_parse_thresholds(const char *what, const char *text, void *value);
void image_format_thresholds(const void *value, char *buf, size_t size);
int image_parse_units(const char *what, const char *text, void *value);
void image_format_units(const void *value, char *buf, size_t size);
int image_parse_calibration(const char *what, const char *text, void *value);
void image_format_calibration(const void *value, char *buf, size_t size);
int image_parse_labels(const char *what, const char *text, void *value);
void image_format_labels(const void *value, char *buf, size_t size);
int image_parse_roi(const char *what, const char *text, void *value);
void image_format_roi(const void *value, char *buf, size_t size);
int image_parse_downsample_mode(const char *what, const char *text, void *value);
void image_format_downsample_mode(const void *value, char *buf, size_t size);

#endif
