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
