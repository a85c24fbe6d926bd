/* SPDX-License-Identifier: BSD-3-Clause */
/* A walk over DICOM files (dicom_scan.c): a structural check before GDCM
 * sees them, the header fields of a series, and the reading of uncompressed
 * pixels without GDCM. Not installed. */
#ifndef VOXFE_DICOM_SCAN_H
#define VOXFE_DICOM_SCAN_H

#include <stddef.h>
#include <stdint.h>

#include "dicom_gdcm.h"

/* Where a file's pixels are and how they are stored. */
typedef struct dicom_pixels {
  char syntax[65]; /* transfer syntax UID; "" without a meta group */
  int walked;      /* 0: deflated, the header fields must come from GDCM */
  int native;      /* uncompressed pixel data of defined length */
  int present;     /* the file has Pixel Data */
  int big_endian, signed_pixels, bits_stored;
  size_t offset; /* of the pixel data's value in the file */
  uint32_t length;
} dicom_pixels;

/* Walks a file: 0 when every element fits in it, with the header and the
 * pixels' place (pixels->syntax: the transfer syntax UID of the file meta
 * group, "" when there is none); or -1 and *error says what is wrong. */
int dicom_scan_file(const char *path, dicom_header *header, dicom_pixels *pixels,
                    const char **error);

/* Reads `count` uncompressed pixels (pixels->native) as floats, rescaled. */
int dicom_read_native(const char *path, const dicom_header *header, const dicom_pixels *pixels,
                      float *out, size_t count, const char **error);

#endif
