/* SPDX-License-Identifier: BSD-3-Clause */
/* io: writes the full sample model to the path given, for the Python check
 * of the file's CF metadata (check_cf.py); with --deflate-fields, its
 * floating-point fields deflated. */
#include <stdio.h>
#include <string.h>

#include "sample_model.h"
#include "voxfe/io.h"

int main(int argc, char **argv) {
  const int deflate = argc == 3 && strcmp(argv[2], "--deflate-fields") == 0;
  if (argc != 2 && !deflate) {
    fprintf(stderr, "usage: %s OUTPUT.nc [--deflate-fields]\n", argv[0]);
    return 2;
  }
  vox_write_options options;
  vox_write_options_default(&options);
  options.deflate_fields = deflate;
  vox_context *ctx;
  vox_model m;
  if (vox_context_create(&ctx)) return 1;
  vox_status s = sample_full_model(ctx, &m);
  if (!s) s = vox_model_write_with(ctx, argv[1], &m, &options);
  if (s) fprintf(stderr, "%s: %s\n", vox_status_string(s), vox_context_message(ctx));
  vox_model_free(&m);
  vox_context_destroy(ctx);
  return s ? 1 : 0;
}
