/* SPDX-License-Identifier: BSD-3-Clause */
/* Output-path checks, reading the input model, writing the output model. */
#include "cli_files.h"

#include <errno.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_common.h"
#include "voxfe/io.h"

int cli_same_file(const char *a, const char *b) {
  struct stat sa, sb;
  return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

int cli_check_output(const char *output, const char *const *inputs, int n_inputs) {
  for (int i = 0; i < n_inputs; i++) {
    if (inputs[i] && (strcmp(output, inputs[i]) == 0 || cli_same_file(output, inputs[i]))) {
      cli_error("-o %s: is the input file %s; refusing to overwrite an input", output,
                inputs[i]);
      return CLI_EXIT_USAGE;
    }
  }
  struct stat st;
  if (stat(output, &st) == 0 && S_ISDIR(st.st_mode)) {
    cli_error("-o %s: is a folder, not a file name", output);
    return CLI_EXIT_USAGE;
  }
  /* The final rename would replace a link, a pipe or a device node itself
   * (as root, /dev/null); a character device is written through. */
  const char *refusal = vox_output_refusal(output);
  if (refusal) {
    cli_error("-o %s: is %s, not a regular file; refusing to replace it%s", output, refusal,
              strcmp(refusal, "a symbolic link") ? "" : " (name the file it points to)");
    return CLI_EXIT_USAGE;
  }
  if (lstat(output, &st) == 0 && S_ISCHR(st.st_mode)) {
    if (access(output, W_OK) != 0) {
      cli_error("-o %s: cannot write to the device: %s", output, strerror(errno));
      return CLI_EXIT_USAGE;
    }
    return 0; /* its temporary file goes to the system's temporary folder */
  }
  /* The library writes to a temporary file beside the output and renames
   * it, so the folder must take new files. */
  char *copy = strdup(output);
  if (!copy) {
    cli_error("out of memory");
    return CLI_EXIT_FAILED;
  }
  const char *folder = dirname(copy);
  int status = 0;
  if (stat(folder, &st) != 0 || !S_ISDIR(st.st_mode)) {
    cli_error("-o %s: the folder %s does not exist", output, folder);
    status = CLI_EXIT_USAGE;
  } else if (access(folder, W_OK | X_OK) != 0) {
    cli_error("-o %s: cannot write to the folder %s: %s", output, folder, strerror(errno));
    status = CLI_EXIT_USAGE;
  }
  free(copy);
  return status;
}

const char *cli_extension(const char *path) {
  const char *slash = strrchr(path, '/');
  const char *name = slash ? slash + 1 : path;
  const char *dot = strrchr(name, '.');
  /* ".hidden" is a name, not an extension */
  return dot && dot != name ? dot : "";
}

int cli_read_model(vox_context *ctx, const char *path, vox_model *model) {
  vox_status s = vox_model_read(ctx, path, model);
  if (s != VOX_OK) return cli_fail(ctx, s, CLI_READING); /* the reader names the file */
  s = vox_model_validate(ctx, model);
  if (s != VOX_OK) {
    cli_error("%s: %s", path, vox_context_message(ctx));
    return cli_exit_status(s, CLI_READING);
  }
  return 0;
}

int cli_write_model(vox_context *ctx, const char *path, vox_model *model, const char *history,
                    const vox_write_options *options) {
  vox_status s = history ? vox_model_append_history(ctx, model, history) : VOX_ERR_NO_MEMORY;
  if (s == VOX_OK) s = vox_model_write_with(ctx, path, model, options);
  return s == VOX_OK ? 0 : cli_fail(ctx, s, CLI_WRITING);
}
