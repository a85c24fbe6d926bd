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
 * So each input is first opened, read through and closed in a child
 * process, and one that crashes or hangs the child is skipped (rejected from the corpus): the fuzzer
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

#include "probe_child.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *input_path(void) {
  static char path[256];
  if (!path[0]) {
    const char *dir = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/voxfe-fuzz-%d.nc", dir ? dir : "/tmp", (int)getpid());
  }
  return path;
}

/* The child's reads: every attribute and variable of every group, inquired
 * and (up to a size that a damaged header cannot inflate) read, since
 * libhdf5 reads a variable's metadata and data lazily, past nc_open: a
 * damaged global heap made H5HG_read copy a length it never checked while
 * nc_inq_vartype loaded a variable's dimension scales. */
enum { PROBE_MAX_BYTES = 16 << 20 };

static void probe_attributes(int ncid, int varid, void *buffer) {
  int natts = 0;
  if (varid == NC_GLOBAL ? nc_inq_natts(ncid, &natts) : nc_inq_varnatts(ncid, varid, &natts))
    return;
  for (int a = 0; a < natts; a++) {
    char name[NC_MAX_NAME + 1];
    nc_type type;
    size_t len, size;
    if (nc_inq_attname(ncid, varid, a, name) || nc_inq_att(ncid, varid, name, &type, &len) ||
        type > NC_MAX_ATOMIC_TYPE || nc_inq_type(ncid, type, NULL, &size) || size == 0 ||
        len > PROBE_MAX_BYTES / size)
      continue;
    if (nc_get_att(ncid, varid, name, buffer) == NC_NOERR && type == NC_STRING)
      nc_free_string(len, buffer);
  }
}

static void probe_group(int ncid, void *buffer, int depth) {
  probe_attributes(ncid, NC_GLOBAL, buffer);
  int nvars = 0;
  if (nc_inq_varids(ncid, &nvars, NULL) == NC_NOERR && nvars > 0) {
    int *varids = malloc((size_t)nvars * sizeof *varids);
    if (varids && nc_inq_varids(ncid, &nvars, varids) == NC_NOERR) {
      for (int v = 0; v < nvars; v++) {
        int ndims;
        nc_type type;
        size_t size, count = 1;
        int dimids[NC_MAX_VAR_DIMS];
        probe_attributes(ncid, varids[v], buffer);
        if (nc_inq_var(ncid, varids[v], NULL, &type, &ndims, dimids, NULL) ||
            type > NC_MAX_ATOMIC_TYPE || nc_inq_type(ncid, type, NULL, &size) || size == 0)
          continue;
        for (int d = 0; d < ndims && count; d++) {
          size_t len;
          if (nc_inq_dimlen(ncid, dimids[d], &len)) count = 0;
          else count = len && count > PROBE_MAX_BYTES / size / len ? 0 : count * len;
        }
        if (count == 0) continue;
        if (nc_get_var(ncid, varids[v], buffer) == NC_NOERR && type == NC_STRING)
          nc_free_string(count, buffer);
      }
    }
    free(varids);
  }
  int ngroups = 0;
  if (depth < 8 && nc_inq_grps(ncid, &ngroups, NULL) == NC_NOERR && ngroups > 0) {
    int *groups = malloc((size_t)ngroups * sizeof *groups);
    if (groups && nc_inq_grps(ncid, &ngroups, groups) == NC_NOERR)
      for (int g = 0; g < ngroups; g++) probe_group(groups[g], buffer, depth + 1);
    free(groups);
  }
}

/* 1 when opening, reading through and closing the file survive in a child
 * process within 10 seconds. */
static int library_survives(const char *path) {
  static int probe = -1;
  if (probe < 0) probe = !(getenv("FUZZ_HDF5") && getenv("FUZZ_HDF5")[0] == '1');
  if (!probe) return 1;
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) return 1;
  if (pid == 0) {
    fuzz_probe_child_start(10);
    int ncid;
    void *buffer = malloc(PROBE_MAX_BYTES);
    if (buffer && nc_open(path, NC_NOWRITE, &ncid) == NC_NOERR) {
      probe_group(ncid, buffer, 0);
      nc_close(ncid);
    }
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
