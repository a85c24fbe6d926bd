/* SPDX-License-Identifier: BSD-3-Clause */
/* The image volume's memory. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image_internal.h"

vox_status vox_image_init(vox_context *ctx, vox_image *image, const int64_t n[3]) {
  memset(image, 0, sizeof *image);
  size_t bytes;
  vox_status s = image_checked_size(ctx, "image", n, sizeof(float), &bytes);
  if (s) return s;
  image->data = calloc(1, bytes);
  image_huge_pages(image->data, bytes);
  if (!image->data)
    return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory for a %lldx%lldx%lld image",
                     (long long)n[0], (long long)n[1], (long long)n[2]);
  for (int a = 0; a < 3; a++) {
    image->n[a] = n[a];
    image->spacing[a] = 1;
  }
  snprintf(image->units, sizeof image->units, "1");
  return VOX_OK;
}

void vox_image_free(vox_image *image) {
  free(image->data);
  memset(image, 0, sizeof *image);
}
