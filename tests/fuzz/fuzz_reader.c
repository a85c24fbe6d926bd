/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer harness of one image reader (chosen at compile time by
 * FUZZ_READ, or FUZZ_DICOM_SCAN for the DICOM walk): the input becomes
 * a file, which the reader must accept or refuse with a message, never
 * crash on, overrun, or leak. Built with clang -fsanitize=fuzzer,address,
 * undefined by tests/fuzz/CMakeLists.txt and run for a few seconds per
 * reader in the test suite (run_fuzzer.sh). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dicom_scan.h"
#include "voxfe/image.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define STR2(x) #x
#define STR(x) STR2(x)

/* The readers choose by name as much as by content: one file of the right
 * extension per process, rewritten for every input. */
static const char *input_path(void) {
  static char path[256];
  if (!path[0]) {
    const char *dir = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/voxfe-fuzz-%d%s", dir ? dir : "/tmp", (int)getpid(),
             FUZZ_SUFFIX);
  }
  return path;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *path = input_path();
  FILE *f = fopen(path, "wb");
  if (!f) return 0;
  fwrite(data, 1, size, f);
  fclose(f);
#ifdef FUZZ_DICOM_SCAN
  /* the walk, the header fields, and the uncompressed pixels it locates */
  const char *error = NULL;
  dicom_header h;
  dicom_pixels px;
  if (dicom_scan_file(path, &h, &px, &error)) {
    if (!error) abort(); /* a refusal names its cause */
  } else if (px.native && h.rows > 0 && h.columns > 0 && h.frames > 0 &&
             (size_t)h.rows * h.columns * h.frames <= ((size_t)16 << 20)) {
    size_t count = (size_t)h.rows * h.columns * h.frames;
    float *out = malloc(count * sizeof *out);
    if (out && dicom_read_native(path, &h, &px, out, count, &error) && !error) abort();
    free(out);
  }
  unlink(path);
  return 0;
#else
  vox_context *ctx = NULL;
  if (vox_context_create(&ctx) != VOX_OK) return 0;
  vox_image image;
  vox_status s = FUZZ_READ(ctx, path, &image);
  if (s == VOX_OK) {
    /* a volume that was read is whole: touch every voxel */
    volatile float sum = 0;
    for (int64_t v = 0; v < vox_image_voxels(&image); v++) sum += image.data[v];
    (void)sum;
    vox_image_free(&image);
  } else if (!vox_context_message(ctx)[0]) {
    abort(); /* every failure leaves a message */
  }
  vox_context_destroy(ctx);
  unlink(path);
  return 0;
#endif
}
