/* SPDX-License-Identifier: BSD-3-Clause */
/* What the export tests share (included by each test program, like
 * ../check.h): the output folder named on the command line, paths in it,
 * and checks of the files the writers leave there. */
#ifndef VOXFE_TESTS_EXPORT_OUTPUT_DIR_H
#define VOXFE_TESTS_EXPORT_OUTPUT_DIR_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"

#define TEST_UNUSED __attribute__((unused))

static char out_dir[4096];

/* char var[] = "<out_dir>/<name>" */
#define OUT_PATH(var, name)                                                      \
  char var[sizeof out_dir + 64];                                                 \
  snprintf(var, sizeof var, "%s/%s", out_dir, name)

TEST_UNUSED static int file_exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

TEST_UNUSED static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  CHECK(f != NULL);
  if (!f) return;
  CHECK(fputs(text, f) >= 0);
  CHECK(fclose(f) == 0);
}

/* The whole of a (small) file, NUL-terminated; NULL if it cannot be read. */
TEST_UNUSED static char *read_all(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *data = NULL;
  size_t n = 0, cap = 0;
  for (;;) {
    if (cap - n < 65536) {
      cap = cap ? 2 * cap : 65536;
      char *grown = realloc(data, cap + 1);
      if (!grown) break;
      data = grown;
    }
    size_t got = fread(data + n, 1, cap - n, f);
    n += got;
    if (got == 0) break;
  }
  fclose(f);
  if (data) data[n] = '\0';
  if (size) *size = n;
  return data;
}

TEST_UNUSED static int file_is(const char *path, const char *text) {
  char *data = read_all(path, NULL);
  int same = data && strcmp(data, text) == 0;
  free(data);
  return same;
}

/* The "<name>.tmp.XXXXXX" files left in the output folder (0 after any
 * write, failed or not); -1 if the folder cannot be read. */
TEST_UNUSED static int count_temporaries(void) {
  DIR *d = opendir(out_dir);
  if (!d) return -1;
  int n = 0;
  struct dirent *entry;
  while ((entry = readdir(d)))
    if (strstr(entry->d_name, ".tmp.")) {
      fprintf(stderr, "temporary file left: %s\n", entry->d_name);
      n++;
    }
  closedir(d);
  return n;
}

#endif
