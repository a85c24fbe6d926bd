/* SPDX-License-Identifier: BSD-3-Clause */
/* File helpers of the image readers: exact reads with messages that name
 * the file, sizes, and folder listings in natural order. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "image_internal.h"

vox_status image_read_at(vox_context *ctx, const char *path, FILE *f, uint64_t offset, void *buf,
                         size_t bytes) {
  if (fseeko(f, (off_t)offset, SEEK_SET))
    return vox_error(ctx, VOX_ERR_IO, "%s: %s", path, strerror(errno));
  size_t got = fread(buf, 1, bytes, f);
  if (got == bytes) return VOX_OK;
  if (ferror(f)) return vox_error(ctx, VOX_ERR_IO, "%s: %s", path, strerror(errno));
  return vox_error(ctx, VOX_ERR_FORMAT,
                   "%s: truncated (%llu bytes wanted at offset %llu, the file ends after %llu)",
                   path, (unsigned long long)bytes, (unsigned long long)offset,
                   (unsigned long long)(offset + got));
}

vox_status image_file_size(vox_context *ctx, const char *path, uint64_t *size) {
  struct stat st;
  if (stat(path, &st)) return vox_error(ctx, VOX_ERR_IO, "%s: %s", path, strerror(errno));
  if (!S_ISREG(st.st_mode)) return vox_error(ctx, VOX_ERR_IO, "%s: not a regular file", path);
  *size = (uint64_t)st.st_size;
  return VOX_OK;
}

vox_status image_checked_size(vox_context *ctx, const char *path, const int64_t n[3], size_t elem,
                              size_t *bytes) {
  /* 2^40 voxels is far beyond any scanner; the count is checked before
   * each product, since two axes of up to 2^40 each can wrap 64 bits (to 0:
   * an empty allocation for a huge image) */
  const uint64_t limit = (uint64_t)1 << 40;
  for (int a = 0; a < 3; a++)
    if (n[a] < 1 || (uint64_t)n[a] > limit)
      return vox_error(ctx, VOX_ERR_FORMAT, "%s: image size %lldx%lldx%lld is invalid", path,
                       (long long)n[0], (long long)n[1], (long long)n[2]);
  uint64_t count = 1;
  int a = 0;
  while (a < 3 && (uint64_t)n[a] <= limit / count) count *= (uint64_t)n[a++];
  if (a < 3 || count > SIZE_MAX / elem)
    return vox_error(ctx, VOX_ERR_FORMAT, "%s: image size %lldx%lldx%lld is too large", path,
                     (long long)n[0], (long long)n[1], (long long)n[2]);
  *bytes = (size_t)count * elem;
  return VOX_OK;
}

/* Name order with digit runs as numbers: "im2" < "im10". */
static int natural_compare(const void *pa, const void *pb) {
  const char *a = *(const char *const *)pa, *b = *(const char *const *)pb;
  while (*a && *b) {
    if (isdigit((unsigned char)*a) && isdigit((unsigned char)*b)) {
      while (*a == '0') a++;
      while (*b == '0') b++;
      size_t la = strspn(a, "0123456789"), lb = strspn(b, "0123456789");
      if (la != lb) return la < lb ? -1 : 1;
      int c = strncmp(a, b, la);
      if (c) return c;
      a += la;
      b += lb;
    } else {
      if (*a != *b) return (unsigned char)*a < (unsigned char)*b ? -1 : 1;
      a++;
      b++;
    }
  }
  return (unsigned char)*a - (unsigned char)*b;
}

char *image_join(const char *folder, const char *name) {
  size_t lf = strlen(folder), ln = strlen(name);
  char *p = malloc(lf + ln + 2);
  if (!p) return NULL;
  memcpy(p, folder, lf);
  p[lf] = '/';
  memcpy(p + lf + 1, name, ln + 1);
  return p;
}

void image_free_list(char **names, size_t count) {
  for (size_t i = 0; i < count; i++) free(names[i]);
  free(names);
}

vox_status image_list_folder(vox_context *ctx, const char *path, char ***names, size_t *count) {
  *names = NULL;
  *count = 0;
  DIR *d = opendir(path);
  if (!d) return vox_error(ctx, VOX_ERR_IO, "%s: %s", path, strerror(errno));
  size_t n = 0, capacity = 0;
  char **list = NULL;
  struct dirent *e;
  vox_status s = VOX_OK;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    char *full = image_join(path, e->d_name);
    struct stat st;
    int regular = full && stat(full, &st) == 0 && S_ISREG(st.st_mode);
    free(full);
    if (!regular) continue;
    if (n == capacity) {
      capacity = capacity ? 2 * capacity : 64;
      char **grown = realloc(list, capacity * sizeof *list);
      if (!grown) {
        s = vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
        break;
      }
      list = grown;
    }
    if (!(list[n] = strdup(e->d_name))) {
      s = vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
      break;
    }
    n++;
  }
  closedir(d);
  if (!s && n == 0) s = vox_error(ctx, VOX_ERR_FORMAT, "%s: the folder holds no files", path);
  if (s) {
    image_free_list(list, n);
    return s;
  }
  qsort(list, n, sizeof *list, natural_compare);
  *names = list;
  *count = n;
  return VOX_OK;
}

int image_has_suffix(const char *path, const char *suffix) {
  size_t lp = strlen(path), ls = strlen(suffix);
  return lp >= ls && strcasecmp(path + lp - ls, suffix) == 0;
}

int image_quiet_begin(void) {
#ifdef VOXFE_FUZZING
  return -1; /* the fuzzer reports through stderr, even from inside the libraries */
#endif
  fflush(stderr);
  int null = open("/dev/null", O_WRONLY);
  if (null < 0) return -1;
  int saved = dup(2);
  if (saved >= 0) dup2(null, 2);
  close(null);
  return saved;
}

void image_quiet_end(int saved) {
  if (saved < 0) return;
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
}

void image_huge_pages(void *p, size_t bytes) {
#ifdef MADV_HUGEPAGE
  const uintptr_t huge = (uintptr_t)2 << 20;
  if (!p || bytes < 8 * huge) return;
  uintptr_t start = ((uintptr_t)p + huge - 1) & ~(huge - 1);
  uintptr_t end = ((uintptr_t)p + bytes) & ~(huge - 1);
  if (end > start) madvise((void *)start, end - start, MADV_HUGEPAGE);
#else
  (void)p;
  (void)bytes;
#endif
}
