/* A structural check of DICOM files, run before GDCM sees them
 * (dicom_check.c says why). Not installed. */
#ifndef VOXFE_DICOM_CHECK_H
#define VOXFE_DICOM_CHECK_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* 0 when every element fits in the file; else -1 and *error says what.
 * `syntax` (65 bytes, or NULL) receives the transfer syntax UID of the file
 * meta group, "" when there is none. */
int dicom_check_buffer(const unsigned char *data, size_t size, const char **error, char *syntax);
int dicom_check_file(const char *path, const char **error, char *syntax);

#endif
