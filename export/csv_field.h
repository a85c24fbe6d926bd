/* SPDX-License-Identifier: BSD-3-Clause */
/* One CSV field as the summaries write it (private; export/summary.c):
 * valid UTF-8, quoted when RFC 4180 needs it or for leading or trailing
 * blanks, then a comma, or a line break after the `last` field of a row. */
#ifndef VOXFE_CSV_FIELD_H
#define VOXFE_CSV_FIELD_H

#include <stdio.h>

void vox_csv_field(FILE *f, const char *text, int last);

#endif
