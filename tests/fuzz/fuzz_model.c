/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer harness of the model-file readers (io/): the input becomes a
 * file that vox_checkpoint_read reads (vox_model_read, the model and
 * design file with its history and end record, then the checkpoint's
 * group), or with FUZZ_N88 vox_n88model_read (Numerics88's n88model). A
 * reader must accept the file or refuse it with a message naming it, never
 * crash on, overrun or leak; a model it accepts is valid. The readers are
 * compiled with the sanitizers; netCDF and HDF5 are the system's (not
 * instrumented, but ASan still sees their frees), the rest of libvoxfe is
 * linked as built. Run by run_fuzzer.sh like the image readers'.
 *
 * libhdf5 1.10 itself crashes inside nc_open on some damaged files (frees
 * a pointer it never allocated, in its link tables), which no reader of
 * the file can prevent; such an input would end every run here at once.
 * So each input is first opened and closed in a child process, and one
 * that crashes the child is skipped (rejected from the corpus): the fuzzer
 * then explores the readers. FUZZ_HDF5=1 in the environment skips the
 * probe, for a campaign that hunts the library's crashes. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <netcdf.h>

#include "voxfe/checkpoint_file.h"
#include "voxfe/io.h"
#include "voxfe/n88model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *input_path(void) {
  static char path[256];
  if (!path[0]) {
    const char *dir = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/voxfe-fuzz-%d.nc", dir ? dir : "/tmp", (int)getpid());
  }
  return path;
}

/* 1 when nc_open and nc_close of the file survive in a child process. */
static int library_survives(const char *path) {
  static int probe = -1;
  if (probe < 0) probe = !(getenv("FUZZ_HDF5") && getenv("FUZZ_HDF5")[0] == '1');
  if (!probe) return 1;
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) return 1;
  if (pid == 0) {
    /* the library's own report is not this harness's finding */
    if (!freopen("/dev/null", "w", stderr)) _exit(0);
    int ncid;
    if (nc_open(path, NC_NOWRITE, &ncid) == NC_NOERR) nc_close(ncid);
    _exit(0);
  }
  int status;
  if (waitpid(pid, &status, 0) != pid) return 1;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *path = input_path();
  FILE *f = fopen(path, "wb");
  if (!f) return 0;
  fwrite(data, 1, size, f);
  fclose(f);
  if (!library_survives(path)) {
    unlink(path);
    return -1; /* not kept in the corpus */
  }
  vox_context *ctx = NULL;
  if (vox_context_create(&ctx) != VOX_OK) return 0;
  vox_model model;
#ifdef FUZZ_N88
  vox_status s = vox_n88model_read(ctx, path, &model);
#else
  vox_checkpoint state;
  vox_status s = vox_checkpoint_read(ctx, path, &model, &state);
  if (s == VOX_OK) vox_checkpoint_free(&state);
#endif
  if (s == VOX_OK) {
    if (vox_model_validate(ctx, &model) != VOX_OK) abort();
    vox_model_free(&model);
  } else if (!strstr(vox_context_message(ctx), path)) {
    abort(); /* a refusal names the file */
  }
  vox_context_destroy(ctx);
  unlink(path);
  return 0;
}
