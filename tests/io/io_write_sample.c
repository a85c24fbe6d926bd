/* SPDX-License-Identifier: BSD-3-Clause */
/* io: writes the full sample model to the path given, for the Python check
 * of the file's CF metadata (check_cf.py). */
#include <stdio.h>

#include "sample_model.h"
#include "voxfe/io.h"

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s OUTPUT.nc\n", argv[0]);
    return 2;
  }
  vox_context *ctx;
  vox_model m;
  if (vox_context_create(&ctx)) return 1;
  vox_status s = sample_full_model(ctx, &m);
  if (!s) s = vox_model_write(ctx, argv[1], &m);
  if (s) fprintf(stderr, "%s: %s\n", vox_status_string(s), vox_context_message(ctx));
  vox_model_free(&m);
  vox_context_destroy(ctx);
  return s ? 1 : 0;
}
