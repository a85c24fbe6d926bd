/* SPDX-License-Identifier: BSD-3-Clause */
/* Parsing numbers from the command line, with range checks and messages that
 * name the option, the accepted range and the text given:
 *   --volume-fraction: expected a number in (0, 1], got 'abc'
 * Each parser prints its one-line message (cli_error) and returns -1 on bad
 * text, or returns 0 and stores the value. */
#ifndef VOXFE_CLI_NUMBERS_H
#define VOXFE_CLI_NUMBERS_H

#include <stddef.h>

/* Accepted values: min <= v <= max, with strict ends where asked. Infinite
 * ends mean no bound. */
typedef struct cli_range {
  double min, max;
  int min_open, max_open; /* non-zero: the end itself is excluded */
} cli_range;

/* Writes "a number in (0, 1]", "a number > 0", "an integer >= 1", ... */
void cli_range_describe(cli_range range, int integer, char *buf, size_t size);

int cli_parse_real(const char *what, const char *text, cli_range range, double *out);
/* "auto" (stored as auto_value) or a number in `range`, for options whose
 * default the library resolves. */
int cli_parse_auto_real(const char *what, const char *text, cli_range range, double auto_value,
                        double *out);
int cli_parse_integer(const char *what, const char *text, cli_range range, long long *out);

/* A list of exactly `count` values separated by `sep` ("1.5,2,0.5" or
 * "48x24x24"); `form` names the expected shape in messages ("X,Y,Z"). */
int cli_parse_real_list(const char *what, const char *form, const char *text, char sep,
                        int count, cli_range range, double *out);
int cli_parse_integer_list(const char *what, const char *form, const char *text, char sep,
                           int count, cli_range range, long long *out);

/* The shortest text that reads back as `value` ("0.3", not
 * "0.29999999999999999"), for --help defaults and the history. */
void cli_format_real(double value, char *buf, size_t size);
/* "auto" for auto_value, else the value to 17 significant digits. */
void cli_format_auto_real(double value, double auto_value, char *buf, size_t size);

/* `n` values so, separated by commas ("1,0.5,2"). */
void cli_format_real_list(const double *v, int n, char *buf, size_t size);

/* How many fields `text` has when split at `sep` (for lists that accept more
 * than one length, such as one voxel size or three). */
int cli_count_fields(const char *text, char sep);

#endif
