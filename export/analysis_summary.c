/* SPDX-License-Identifier: BSD-3-Clause */
/* JSON and CSV summaries of an analysis (voxfe/analysis_summary.h). */
#include "voxfe/analysis_summary.h"
#include "csv_field.h"
#include "temp_file.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* The shortest of %.15g..%.17g that reads back as the same double. */
static void format_double(char out[32], double value) {
  for (int digits = 15; digits <= 17; digits++) {
    snprintf(out, 32, "%.*g", digits, value);
    if (strtod(out, NULL) == value) return;
  }
}

static void json_string(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    const unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
    else if (c < 0x20 || c == 0x7f) fprintf(f, "\\u%04x", c);
    else fputc(c, f);
  }
  fputc('"', f);
}

static void json_value(FILE *f, const vox_summary_entry *e) {
  if (e->text) {
    json_string(f, e->text);
  } else if (!isfinite(e->value)) {
    fputs("null", f);
  } else {
    char text[32];
    format_double(text, e->value);
    fputs(text, f);
  }
}

/* The CSV appends go through this; errno texts name the file. */
static vox_status write_all(vox_context *ctx, const char *path, int fd, const char *data,
                            size_t size) {
  const int err = vox_write_all(fd, data, size);
  return err ? vox_error(ctx, VOX_ERR_IO, "%s: cannot write: %s", path, strerror(err)) : VOX_OK;
}

vox_status vox_write_analysis_json(vox_context *ctx, const char *path,
                                   const vox_summary_entry *entries, size_t n) {
  char *text = NULL;
  size_t size = 0;
  FILE *f = open_memstream(&text, &size);
  if (!f) return vox_error(ctx, VOX_ERR_NO_MEMORY, "%s: out of memory", path);
  fputs("{\n", f);
  for (size_t i = 0; i < n; i++) {
    fputs("  ", f);
    json_string(f, entries[i].name);
    fputs(": ", f);
    json_value(f, &entries[i]);
    fputs(",\n", f);
  }
  fputs("  \"units\": {", f);
  int first = 1;
  for (size_t i = 0; i < n; i++) {
    if (!entries[i].units) continue;
    fputs(first ? "\n    " : ",\n    ", f);
    json_string(f, entries[i].name);
    fputs(": ", f);
    json_string(f, entries[i].units);
    first = 0;
  }
  fputs(first ? "}\n}\n" : "\n  }\n}\n", f);
  if (fclose(f) != 0 || !text) {
    free(text);
    return vox_error(ctx, VOX_ERR_NO_MEMORY, "%s: out of memory", path);
  }
  char *tmp = NULL;
  int fd = vox_open_temp(path, &tmp);
  if (fd < 0) {
    free(text);
    return vox_error(ctx, VOX_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
  }
  const int err = vox_commit_temp(fd, tmp, path, vox_write_all(fd, text, size));
  free(text);
  if (err) return vox_error(ctx, VOX_ERR_IO, "%s: cannot write: %s", path, strerror(err));
  return VOX_OK;
}

/* The header row of these entries (malloc'd, with its size), or NULL. */
static char *csv_header(const vox_summary_entry *entries, size_t n, size_t *size) {
  char *header = NULL;
  FILE *h = open_memstream(&header, size);
  if (!h) return NULL;
  for (size_t i = 0; i < n; i++) vox_csv_field(h, entries[i].name, i + 1 == n);
  if (fclose(h) != 0) {
    free(header);
    return NULL;
  }
  return header;
}

/* The refusal of a table whose header is not `header`: names the first
 * column that differs, read from the table's first line. */
static vox_status wrong_header(vox_context *ctx, const char *path, const char *first,
                               size_t first_size, const vox_summary_entry *entries, size_t n) {
  size_t line = 0;
  while (line < first_size && first[line] != '\n' && first[line] != '\r') line++;
  /* column by column, the names as plain text (ours need no quoting) */
  size_t column = 0, at = 0;
  while (column < n) {
    size_t end = at;
    while (end < line && first[end] != ',') end++;
    const size_t len = strlen(entries[column].name);
    if (at >= line || end - at != len || memcmp(first + at, entries[column].name, len)) break;
    at = end + 1;
    column++;
  }
  if (column == n || at >= line)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "%s: the table's header has %s columns than the %zu of this summary row; "
                     "not appended (write to another table)",
                     path, column == n ? "more" : "fewer", n);
  return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                   "%s: the table's header is not that of this summary row: column %zu is "
                   "'%.*s' where this row has '%s'; not appended (write to another table)",
                   path, column + 1, (int)strcspn(first + at, ",\r\n"), first + at,
                   entries[column].name);
}

vox_status vox_check_analysis_csv(vox_context *ctx, const char *path,
                                  const vox_summary_entry *entries, size_t n) {
  size_t header_size = 0;
  char *header = csv_header(entries, n, &header_size);
  if (!header) return vox_error(ctx, VOX_ERR_NO_MEMORY, "%s: out of memory", path);
  vox_status s = VOX_OK;
  FILE *f = fopen(path, "rb");
  if (!f && errno != ENOENT)
    s = vox_error(ctx, VOX_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  if (f) {
    char *first = malloc(header_size + 1);
    size_t got = first ? fread(first, 1, header_size, f) : 0;
    if (!first)
      s = vox_error(ctx, VOX_ERR_NO_MEMORY, "%s: out of memory", path);
    else if (got > 0 && (got != header_size || memcmp(first, header, header_size) != 0)) {
      first[got] = '\0';
      s = wrong_header(ctx, path, first, got, entries, n);
    }
    free(first);
    fclose(f);
  }
  free(header);
  return s;
}

vox_status vox_append_analysis_csv(vox_context *ctx, const char *path,
                                   const vox_summary_entry *entries, size_t n) {
  char *header = NULL, *row = NULL;
  size_t header_size = 0, row_size = 0;
  FILE *h = open_memstream(&header, &header_size), *r = open_memstream(&row, &row_size);
  if (h && r)
    for (size_t i = 0; i < n; i++) {
      const vox_summary_entry *e = &entries[i];
      char text[32] = "";
      if (!e->text && isfinite(e->value)) format_double(text, e->value);
      vox_csv_field(h, e->name, i + 1 == n);
      vox_csv_field(r, e->text ? e->text : text, i + 1 == n);
    }
  int failed = !h || !r;
  if (h && fclose(h)) failed = 1;
  if (r && fclose(r)) failed = 1;
  if (failed || !header || !row) {
    free(header);
    free(row);
    return vox_error(ctx, VOX_ERR_NO_MEMORY, "%s: out of memory", path);
  }
  vox_status s = VOX_OK;
  int fd = open(path, O_RDWR | O_CREAT | O_APPEND, 0666);
  if (fd < 0) s = vox_error(ctx, VOX_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  if (!s && flock(fd, LOCK_EX) != 0)
    s = vox_error(ctx, VOX_ERR_IO, "%s: cannot lock: %s", path, strerror(errno));
  struct stat st;
  if (!s && fstat(fd, &st) != 0)
    s = vox_error(ctx, VOX_ERR_IO, "%s: cannot read: %s", path, strerror(errno));
  if (!s && st.st_size == 0) {
    s = write_all(ctx, path, fd, header, header_size);
  } else if (!s) {
    /* the table must be one of ours: the same columns */
    char *first = malloc(header_size + 1);
    ssize_t got = first ? pread(fd, first, header_size, 0) : -1;
    if (!first)
      s = vox_error(ctx, VOX_ERR_NO_MEMORY, "%s: out of memory", path);
    else if (got != (ssize_t)header_size || memcmp(first, header, header_size) != 0)
      s = vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                    "%s: the table's header is not that of an analysis summary row; "
                    "not appended", path);
    free(first);
  }
  if (!s) s = write_all(ctx, path, fd, row, row_size);
  if (!s && fsync(fd) != 0)
    s = vox_error(ctx, VOX_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
  if (fd >= 0) close(fd); /* releases the lock */
  free(header);
  free(row);
  return s;
}
