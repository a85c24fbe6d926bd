/* libFuzzer harness of one image reader (chosen at compile time by
 * FUZZ_READER: aim, metaimage, tiff, nifti, dicom_check): the input becomes
 * a file, which the reader must accept or refuse with a message, never
 * crash on, overrun, or leak. Built with clang -fsanitize=fuzzer,address,
 * undefined by tests/fuzz/CMakeLists.txt and run for a few seconds per
 * reader in the test suite (run_fuzzer.sh). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dicom_check.h"
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
#ifdef FUZZ_DICOM_CHECK
  const char *error = NULL;
  if (dicom_check_buffer(data, size, &error, NULL) && !error) abort(); /* a refusal names its cause */
  return 0;
#else
  const char *path = input_path();
  FILE *f = fopen(path, "wb");
  if (!f) return 0;
  fwrite(data, 1, size, f);
  fclose(f);
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
