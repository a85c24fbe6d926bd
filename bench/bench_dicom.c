/* SPDX-License-Identifier: BSD-3-Clause */
/* The DICOM series benchmark of docs/benchmarks.md: how long voxfe takes to
 * read a series (the walk of each file, ordering, the pixels rescaled to
 * float) against plain fread of the same files' bytes and against GDCM's
 * decoding alone (file by file into one slice), then the segmentation and
 * the model file write; the files are read once before timing, so every
 * figure is from the page cache.
 *   bench_dicom FOLDER THRESHOLD_HU MODEL.nc */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"
#include "dicom_gdcm.h"
#include "voxfe/image.h"
#include "voxfe/io.h"

/* Reads every file of the folder with fread into one buffer; returns bytes. */
static double read_all(const char *folder, char **names, int n, char *buf, size_t size) {
  double bytes = 0;
  for (int i = 0; i < n; i++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", folder, names[i]);
    FILE *f = fopen(path, "rb");
    if (!f) continue;
    size_t got;
    while ((got = fread(buf, 1, size, f)) > 0) bytes += (double)got;
    fclose(f);
  }
  return bytes;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s FOLDER THRESHOLD_HU MODEL.nc\n", argv[0]);
    return 2;
  }
  const char *folder = argv[1];
  DIR *d = opendir(folder);
  if (!d) {
    perror(folder);
    return 1;
  }
  char **names = NULL;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)))
    if (e->d_name[0] != '.') {
      names = realloc(names, (size_t)(n + 1) * sizeof *names);
      names[n++] = strdup(e->d_name);
    }
  closedir(d);
  size_t size = 1 << 20;
  char *buf = malloc(size);
  read_all(folder, names, n, buf, size); /* into the page cache */

  double t0 = bench_now();
  double bytes = read_all(folder, names, n, buf, size);
  double t_fread = bench_now() - t0;

  /* the files' bytes into one new buffer of the whole series, as a reader
   * that keeps the volume must: fread plus the first touch of that memory */
  t0 = bench_now();
  char *all = malloc((size_t)bytes);
  size_t at = 0;
  for (int i = 0; i < n && all; i++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", folder, names[i]);
    FILE *f = fopen(path, "rb");
    if (!f) continue;
    size_t got;
    while (at < (size_t)bytes && (got = fread(all + at, 1, (size_t)bytes - at, f)) > 0) at += got;
    fclose(f);
  }
  double t_fread_all = bench_now() - t0;
  free(all);

  /* GDCM's decoding alone, each file into one slice of floats */
  vox_context *ctx;
  vox_context_create(&ctx);
  vox_image image;
  t0 = bench_now();
  vox_status s = vox_image_read(ctx, folder, &image);
  double t_read = bench_now() - t0;
  if (s) {
    fprintf(stderr, "%s\n", vox_context_message(ctx));
    return 1;
  }
  size_t slice = (size_t)(image.n[0] * image.n[1]);
  float *one = malloc(slice * sizeof *one);
  char message[256];
  t0 = bench_now();
  for (int i = 0; i < n; i++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", folder, names[i]);
    dicom_read_pixels(path, one, slice, message, sizeof message);
  }
  double t_gdcm = bench_now() - t0;

  double mb = bytes / 1e6;
  printf("series: %d files, %.1f MB, image %lldx%lldx%lld, voxels %.4gx%.4gx%.4g mm\n", n, mb,
         (long long)image.n[0], (long long)image.n[1], (long long)image.n[2], image.spacing[0],
         image.spacing[1], image.spacing[2]);
  printf("fread, one 1 MB buffer:          %7.3f s  %7.0f MB/s\n", t_fread, mb / t_fread);
  printf("fread into one new series buffer: %6.3f s  %7.0f MB/s\n", t_fread_all, mb / t_fread_all);
  printf("GDCM decoding alone (per file):  %7.3f s  %7.0f MB/s\n", t_gdcm, mb / t_gdcm);
  printf("vox_image_read (the series):     %7.3f s  %7.0f MB/s  (%.2fx the series fread, %.2fx "
         "GDCM)\n",
         t_read, mb / t_read, t_read / t_fread_all, t_read / t_gdcm);

  vox_segmentation seg = {.units = VOX_UNITS_HU, .n_thresholds = 1, .downsample = 1};
  seg.thresholds[0] = atof(argv[2]);
  vox_model model;
  vox_segmentation_report report;
  t0 = bench_now();
  s = vox_image_segment(ctx, folder, &image, &seg, &model, &report);
  double t_seg = bench_now() - t0;
  if (s) {
    fprintf(stderr, "%s\n", vox_context_message(ctx));
    return 1;
  }
  vox_material m = {.label = 1, .youngs_modulus = 1, .poisson_ratio = 0.3};
  snprintf(m.name, sizeof m.name, "bone");
  vox_model_add_material(ctx, &model, &m);
  t0 = bench_now();
  s = vox_model_write(ctx, argv[3], &model);
  double t_write = bench_now() - t0;
  if (s) {
    fprintf(stderr, "%s\n", vox_context_message(ctx));
    return 1;
  }
  printf("threshold %g HU:                 %7.3f s  (%lld voxels labelled)\n", seg.thresholds[0],
         t_seg, (long long)report.labelled);
  printf("model file write:                %7.3f s\n", t_write);
  vox_model_free(&model);
  vox_context_destroy(ctx);
  for (int i = 0; i < n; i++) free(names[i]);
  free(names);
  free(buf);
  free(one);
  return 0;
}
