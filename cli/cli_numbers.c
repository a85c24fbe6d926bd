/* SPDX-License-Identifier: BSD-3-Clause */
/* Number and number-list parsing with range checks and clear messages. */
#include "cli_numbers.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_common.h"

/* The longest list item we look at; longer text is not a number anyway. */
#define FIELD_MAX 128
/* The longest list we parse (coordinates, grid sizes). */
#define LIST_MAX 8

static int in_range(double v, cli_range r) {
  if (r.min_open ? !(v > r.min) : !(v >= r.min)) return 0;
  if (r.max_open ? !(v < r.max) : !(v <= r.max)) return 0;
  return 1;
}

void cli_range_describe(cli_range r, int integer, char *buf, size_t size) {
  const char *noun = integer ? "an integer" : "a number";
  /* An integer range up to INT_MAX is bounded only by the type: say so as
   * ">= 1" rather than with a ten-digit number. */
  int has_min = isfinite(r.min) && !(integer && r.min <= INT_MIN);
  int has_max = isfinite(r.max) && !(integer && r.max >= INT_MAX);
  if (has_min && has_max)
    snprintf(buf, size, "%s in %c%.15g, %.15g%c", noun, r.min_open ? '(' : '[', r.min, r.max,
             r.max_open ? ')' : ']');
  else if (has_min)
    snprintf(buf, size, "%s %s %.15g", noun, r.min_open ? ">" : ">=", r.min);
  else if (has_max)
    snprintf(buf, size, "%s %s %.15g", noun, r.max_open ? "<" : "<=", r.max);
  else
    snprintf(buf, size, "%s", noun);
}

/* The parsers without messages: 1 if `text` is exactly one finite number. */
static int scan_real(const char *text, double *out) {
  char *end;
  errno = 0;
  double v = strtod(text, &end);
  if (end == text || *end != '\0' || !isfinite(v)) return 0;
  /* strtod sets ERANGE on underflow too; a value that rounds to 0 or a
   * denormal is still the number meant, so only overflow is refused. */
  if (errno == ERANGE && fabs(v) == HUGE_VAL) return 0;
  *out = v;
  return 1;
}

static int scan_integer(const char *text, long long *out) {
  char *end;
  errno = 0;
  long long v = strtoll(text, &end, 10);
  if (end == text || *end != '\0' || errno == ERANGE) return 0;
  *out = v;
  return 1;
}

static void report(const char *what, const char *expected, const char *text) {
  cli_error("%s: expected %s, got '%s'", what, expected, text);
}

int cli_parse_real(const char *what, const char *text, cli_range range, double *out) {
  double v;
  if (!scan_real(text, &v) || !in_range(v, range)) {
    char expected[128];
    cli_range_describe(range, 0, expected, sizeof expected);
    report(what, expected, text);
    return -1;
  }
  *out = v;
  return 0;
}

int cli_parse_auto_real(const char *what, const char *text, cli_range range, double auto_value,
                        double *out) {
  double v;
  if (strcmp(text, "auto") == 0) {
    *out = auto_value;
    return 0;
  }
  if (!scan_real(text, &v) || !in_range(v, range)) {
    char expected[128] = "auto or ";
    cli_range_describe(range, 0, expected + strlen(expected), sizeof expected - strlen(expected));
    report(what, expected, text);
    return -1;
  }
  *out = v;
  return 0;
}

int cli_parse_integer(const char *what, const char *text, cli_range range, long long *out) {
  long long v;
  if (!scan_integer(text, &v) || !in_range((double)v, range)) {
    char expected[128];
    cli_range_describe(range, 1, expected, sizeof expected);
    report(what, expected, text);
    return -1;
  }
  *out = v;
  return 0;
}

void cli_format_real(double value, char *buf, size_t size) {
  for (int digits = 6; digits <= 17; digits++) {
    snprintf(buf, size, "%.*g", digits, value);
    if (strtod(buf, NULL) == value) return;
  }
}

void cli_format_auto_real(double value, double auto_value, char *buf, size_t size) {
  if (value == auto_value)
    snprintf(buf, size, "auto");
  else
    snprintf(buf, size, "%.17g", value);
}

void cli_format_real_list(const double *v, int n, char *buf, size_t size) {
  size_t len = 0;
  buf[0] = '\0';
  for (int i = 0; i < n && len + 1 < size; i++) {
    if (i) buf[len++] = ',';
    cli_format_real(v[i], buf + len, size - len);
    len += strlen(buf + len);
  }
}

int cli_count_fields(const char *text, char sep) {
  int n = 1;
  for (const char *c = text; *c; c++) n += *c == sep;
  return n;
}

/* Copies field `index` of `text` (split at `sep`) into `field`; 0 if the
 * field is too long to be a number. */
static int get_field(const char *text, char sep, int index, char field[FIELD_MAX]) {
  for (int i = 0; i < index; i++) text = strchr(text, sep) + 1;
  const char *stop = strchr(text, sep);
  size_t len = stop ? (size_t)(stop - text) : strlen(text);
  if (len >= FIELD_MAX) return 0;
  memcpy(field, text, len);
  field[len] = '\0';
  return 1;
}

/* Both list parsers: scan each field as a real or an integer. */
static int parse_list(const char *what, const char *form, const char *text, char sep,
                      int count, cli_range range, int integer, double *reals,
                      long long *integers) {
  /* Parse into temporaries so that a bad list leaves the defaults alone. */
  double r[LIST_MAX];
  long long n[LIST_MAX];
  int ok = count <= LIST_MAX && cli_count_fields(text, sep) == count;
  for (int i = 0; ok && i < count; i++) {
    char field[FIELD_MAX];
    if (!get_field(text, sep, i, field))
      ok = 0;
    else if (integer)
      ok = scan_integer(field, &n[i]) && in_range((double)n[i], range);
    else
      ok = scan_real(field, &r[i]) && in_range(r[i], range);
  }
  if (!ok) {
    char each[128], expected[256];
    cli_range_describe(range, integer, each, sizeof each);
    snprintf(expected, sizeof expected, "%s with each value %s", form, each);
    report(what, expected, text);
    return -1;
  }
  for (int i = 0; i < count; i++) {
    if (integer)
      integers[i] = n[i];
    else
      reals[i] = r[i];
  }
  return 0;
}

int cli_parse_real_list(const char *what, const char *form, const char *text, char sep,
                        int count, cli_range range, double *out) {
  return parse_list(what, form, text, sep, count, range, 0, out, NULL);
}

int cli_parse_integer_list(const char *what, const char *form, const char *text, char sep,
                           int count, cli_range range, long long *out) {
  return parse_list(what, form, text, sep, count, range, 1, NULL, out);
}
