/* SPDX-License-Identifier: BSD-3-Clause */
/* A small C-callable shim around GDCM (C++): the header fields of one DICOM
 * file that a series needs, and its decoded, rescaled pixels. The series
 * logic (ordering, spacing, gaps) is C, in image_dicom.c. Not installed. */
#ifndef VOXFE_DICOM_GDCM_H
#define VOXFE_DICOM_GDCM_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct dicom_header {
  int rows, columns, frames, samples_per_pixel, bits_allocated;
  int has_position, has_orientation, has_pixel_spacing;
  double position[3];      /* ImagePositionPatient: centre of the first pixel, mm */
  double orientation[6];   /* ImageOrientationPatient: row then column direction */
  double pixel_spacing[2]; /* between rows, between columns, mm */
  double slice_thickness;  /* 0 when absent */
  double spacing_between_slices;
  double slope, intercept; /* rescale; 1 and 0 when absent */
  char rescale_type[17];   /* "HU", ... or "" */
  char modality[17];       /* "CT", ... */
  char series_uid[65];
  char transfer_syntax[96]; /* its name, or the UID GDCM does not know */
} dicom_header;

/* Outcomes of the calls: */
enum { DICOM_OK = 0, DICOM_BAD = 1, DICOM_UNSUPPORTED = 2 };

/* Reads the header of `path` (the pixel data are not read). On failure
 * `message` holds the cause, without the path. */
int dicom_read_header(const char *path, dicom_header *header, char *message, size_t size);

/* 1 when GDCM knows the transfer syntax `uid` (it may still lack a codec). */
int dicom_syntax_known(const char *uid);

/* Decodes the pixels of `path` (rows x columns x frames, x fastest), applies
 * the rescale slope and intercept and writes floats to `out`, which holds
 * `count` values; the image must have that many. */
int dicom_read_pixels(const char *path, float *out, size_t count, char *message, size_t size);

#ifdef __cplusplus
}
#endif
#endif
