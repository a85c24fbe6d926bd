/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer harness of the mesh path: the input's first byte picks the file
 * type (STL, OBJ, PLY, OFF: assimp chooses its parser by extension as much
 * as by content), the rest becomes the file; voxfe reads it through assimp,
 * prepares it (weld, clean, open edges) and fills it into a small grid on the
 * CPU with both rules. A bad file must be refused with a message, never
 * crash, overrun, or leak. Built with clang -fsanitize=fuzzer,address,
 * undefined by tests/fuzz/CMakeLists.txt and run for a few seconds in the
 * test suite (run_fuzzer.sh). assimp itself is the system's library, not
 * instrumented: ASan sees its heap, not its stack. assimp has bugs of its
 * own on damaged files (endless loops in its PLY reader, aborts in its
 * post-processing): each input is first imported by assimp alone in a child
 * process, with a time limit, and one that kills or hangs it is skipped, so
 * that the harness explores voxfe's code. FUZZ_ASSIMP=1 in the environment
 * skips the probe, for a campaign that hunts assimp's own failures. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <assimp/cimport.h>
#include <assimp/postprocess.h>

#include <omp.h>

#include "voxfe/mesh.h"

#include "probe_child.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const suffixes[] = {".stl", ".obj", ".ply", ".off"};

static const char *input_path(unsigned type) {
  static char path[4][256];
  if (!path[type][0]) {
    const char *dir = getenv("TMPDIR");
    snprintf(path[type], sizeof path[type], "%s/voxfe-fuzz-%d%s", dir ? dir : "/tmp",
             (int)getpid(), suffixes[type]);
  }
  return path[type];
}

/* 1 when assimp alone imports the file (with voxfe's flags) in a child
 * process without dying or taking more than 5 s. */
static int assimp_survives(const char *path) {
  static int probe = -1;
  if (probe < 0) probe = !(getenv("FUZZ_ASSIMP") && getenv("FUZZ_ASSIMP")[0] == '1');
  if (!probe) return 1;
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) return 1;
  if (pid == 0) {
    fuzz_probe_child_start(5);
    const struct aiScene *scene =
        aiImportFile(path, aiProcess_ValidateDataStructure | aiProcess_PreTransformVertices |
                               aiProcess_Triangulate | aiProcess_DropNormals |
                               aiProcess_SortByPType);
    if (scene) scene = aiApplyPostProcessing(scene, aiProcess_JoinIdenticalVertices);
    if (scene) aiReleaseImport(scene);
    _exit(0);
  }
  int status;
  if (waitpid(pid, &status, 0) != pid) return 1;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  omp_set_num_threads(1); /* one input at a time, reproducibly */
  const char *path = input_path(data[0] & 3);
  FILE *f = fopen(path, "wb");
  if (!f) return 0;
  fwrite(data + 1, 1, size - 1, f);
  fclose(f);
  if (!assimp_survives(path)) return 0;
  vox_context *ctx = NULL;
  if (vox_context_create(&ctx) != VOX_OK) return 0;
  vox_mesh mesh;
  vox_status s = vox_mesh_read(ctx, path, &mesh);
  if (s == VOX_OK) {
    double lo[3], hi[3];
    vox_mesh_bounds(&mesh, lo, hi);
    const double nan3[3] = {NAN, NAN, NAN};
    vox_grid grid;
    /* 12 voxels along the longest side, 1 of padding: flat and degenerate
     * meshes are refused here with a message */
    if (vox_grid_around(ctx, lo, hi, nan3, 12, 1, 1 << 16, &grid) == VOX_OK) {
      uint8_t *inside = malloc((size_t)vox_grid_elements(&grid));
      for (int rule = VOX_FILL_PARITY; inside && rule <= VOX_FILL_VOTE; rule++) {
        vox_mesh_fill_info info;
        if (vox_mesh_fill(ctx, &mesh, &grid, (vox_fill_rule)rule, VOX_DEVICE_CPU, inside,
                          &info) == VOX_OK) {
          int64_t count = 0;
          for (int64_t e = 0; e < vox_grid_elements(&grid); e++) count += inside[e];
          if (count != info.inside) abort(); /* the count is of the voxels returned */
        } else if (!vox_context_message(ctx)[0]) {
          abort();
        }
      }
      free(inside);
    } else if (!vox_context_message(ctx)[0]) {
      abort();
    }
    vox_mesh_free(&mesh);
  } else if (!vox_context_message(ctx)[0]) {
    abort(); /* every failure leaves a message */
  }
  vox_context_destroy(ctx);
  unlink(path);
  return 0;
}
