/* SPDX-License-Identifier: BSD-3-Clause */
/* Reads a triangle mesh through assimp's C API: STL (ASCII and binary), OBJ,
 * PLY, OFF, 3MF, glTF and the other formats assimp knows. Every mesh of the
 * scene is taken, with its node transforms applied, into one vox_mesh. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <assimp/cimport.h>
#include <assimp/postprocess.h>
#include <assimp/scene.h>

#include "voxfe/mesh.h"

/* Post-processing asked of assimp:
 * - ValidateDataStructure, which runs before the other steps: a loader's
 *   broken scene (a face without indices, an index past the vertices) is
 *   refused with a message instead of reaching Triangulate, whose assertion
 *   aborts the process (assimp 5.2 on an OFF file with a control character
 *   in a line; found by tests/fuzz/fuzz_mesh.c);
 * - PreTransformVertices: the node transforms (OBJ groups, 3MF build items,
 *   glTF scenes) put into the coordinates, as the part was drawn;
 * - Triangulate: quads and polygons (OBJ, PLY, OFF) become triangles;
 * - SortByPType: points and lines in meshes of their own, skipped below;
 * - DropNormals + JoinIdenticalVertices: the STL soup (three vertices per
 *   triangle) welded into shared vertices; without dropping the facet normals
 *   first, vertices of different facets would differ by their normals and
 *   never join. The join runs after the check for coordinates that are not
 *   finite: it would merge a NaN vertex into another one. */
static const unsigned int import_flags =
    aiProcess_ValidateDataStructure | aiProcess_PreTransformVertices | aiProcess_Triangulate |
    aiProcess_DropNormals | aiProcess_SortByPType;
static const unsigned int join_flags = aiProcess_JoinIdenticalVertices;

/* The first vertex with a coordinate that is not finite, as a message. */
static vox_status check_finite(vox_context *ctx, const char *path, const struct aiScene *scene) {
  for (unsigned m = 0; m < scene->mNumMeshes; m++) {
    const struct aiMesh *am = scene->mMeshes[m];
    for (unsigned v = 0; v < am->mNumVertices; v++) {
      const double p[3] = {am->mVertices[v].x, am->mVertices[v].y, am->mVertices[v].z};
      if (!isfinite(p[0]) || !isfinite(p[1]) || !isfinite(p[2]))
        return vox_error(ctx, VOX_ERR_FORMAT,
                         "%s: vertex %u of mesh %u has a coordinate that is not a finite "
                         "number (%g, %g, %g)",
                         path, v, m, p[0], p[1], p[2]);
    }
  }
  return VOX_OK;
}

/* The counts an OFF or PLY header claims, checked against the file's size
 * before assimp sees it: assimp reserves memory for the claim first, so a
 * 60-byte OFF file claiming 3e8 faces took 4.9 GB before failing. Each
 * vertex takes at least 3 bytes (binary PLY of 1-byte coordinates; text
 * "0 0 0\n" takes 6) and each face at least 4 (a count and three 1-byte
 * indices; text "3 0 1 2\n" takes 8). */
#define MESH_VERTEX_BYTES_MIN 3
#define MESH_FACE_BYTES_MIN 4

/* Reads the claimed vertex and face counts of an OFF or PLY header from
 * `text`; 0 when it is neither (or claims nothing). */
static int claimed_counts(const char *text, double *vertices, double *faces) {
  *vertices = *faces = 0;
  const char *p = text;
  while (*p == '#' || *p == ' ' || *p == '\t' || *p == '\r' || *p == '\n') {
    if (*p == '#') p += strcspn(p, "\n"); /* a comment line */
    else p++;
  }
  size_t word = strcspn(p, " \t\r\n");
  if (word >= 3 && word <= 8 && !strncmp(p + word - 3, "OFF", 3)) {
    p += word;
    for (;;) { /* comments may stand between the keyword and the counts */
      p += strspn(p, " \t\r\n");
      if (*p != '#') break;
      p += strcspn(p, "\n");
    }
    char *end;
    *vertices = strtod(p, &end);
    if (end == p) return 0;
    p = end;
    *faces = strtod(p, &end);
    return end != p;
  }
  if (strncmp(p, "ply", 3)) return 0;
  const char *header_end = strstr(p, "end_header");
  for (const char *line = p; line && (!header_end || line < header_end);) {
    double n;
    char kind[32];
    if (sscanf(line, "element %31s %lf", kind, &n) == 2) {
      if (!strcmp(kind, "vertex")) *vertices += n;
      else if (!strcmp(kind, "face")) *faces += n;
    }
    line = strchr(line, '\n');
    if (line) line++;
  }
  return 1;
}

static vox_status check_claims(vox_context *ctx, const char *path, double size) {
  FILE *f = fopen(path, "rb");
  if (!f) return vox_error(ctx, VOX_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  char head[8192];
  size_t got = fread(head, 1, sizeof head - 1, f);
  fclose(f);
  head[got] = '\0';
  /* assimp takes a file with "ply" and a "format" line for PLY, and its
   * reader loops for good on some damaged headers (fuzzed files hung it: a
   * header that never ends, a line that is no keyword): such a header must
   * be well formed, line by line, up to end_header in its first 8 KB. */
  const char *ply = strstr(head, "ply");
  if (ply && ply - head < 16 && strstr(head, "\nformat ")) {
    int line = 0, ended = 0;
    for (const char *l = head; l && *l && !ended; line++) {
      const size_t n = strcspn(l, "\r\n");
      static const char *const words[] = {"format ", "comment", "obj_info", "element ",
                                          "property "};
      int ok = line == 0 ? n == 3 && !strncmp(l, "ply", 3) : 0;
      ended = line > 0 && n == 10 && !strncmp(l, "end_header", 10);
      for (size_t w = 0; line > 0 && !ok && !ended && w < sizeof words / sizeof words[0]; w++)
        ok = !strncmp(l, words[w], strlen(words[w]));
      if (!ok && !ended)
        return vox_error(ctx, VOX_ERR_FORMAT,
                         "%s: line %d of its PLY header is not a PLY header line (damaged)", path,
                         line + 1);
      l = strchr(l, '\n');
      if (l) l++;
    }
    if (!ended)
      return vox_error(ctx, VOX_ERR_FORMAT,
                       "%s: a PLY header without end_header in its first %zu bytes (truncated "
                       "or damaged)",
                       path, sizeof head - 1);
  }
  double vertices, faces;
  if (!claimed_counts(head, &vertices, &faces)) return VOX_OK;
  if (!(vertices >= 0 && faces >= 0) ||
      vertices * MESH_VERTEX_BYTES_MIN + faces * MESH_FACE_BYTES_MIN > size)
    return vox_error(ctx, VOX_ERR_FORMAT,
                     "%s: its header claims %.0f vertices and %.0f faces, more than its %.0f "
                     "bytes can hold (truncated or damaged)",
                     path, vertices, faces, size);
  return VOX_OK;
}

/* assimp's messages end with a newline or a period now and then; the
 * programs print one line. */
static void one_line(char *text) {
  for (char *c = text; *c; c++)
    if (*c == '\n' || *c == '\r') *c = ' ';
  size_t n = strlen(text);
  while (n && (text[n - 1] == ' ' || text[n - 1] == '.')) text[--n] = '\0';
}

vox_status vox_mesh_read(vox_context *ctx, const char *path, vox_mesh *mesh) {
  memset(mesh, 0, sizeof *mesh);
  /* assimp says "Unable to open file" for a missing file and a folder alike;
   * the system's reason is clearer, and a folder must not be parsed. */
  struct stat st;
  if (stat(path, &st) != 0)
    return vox_error(ctx, VOX_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  if (!S_ISREG(st.st_mode)) return vox_error(ctx, VOX_ERR_IO, "%s: not a regular file", path);
  if (st.st_size == 0) return vox_error(ctx, VOX_ERR_FORMAT, "%s: empty file, no mesh", path);
  vox_status claims = check_claims(ctx, path, (double)st.st_size);
  if (claims) return claims;

  const struct aiScene *scene = aiImportFile(path, import_flags);
  vox_status status = VOX_OK;
  if (scene && (status = check_finite(ctx, path, scene))) {
    aiReleaseImport(scene);
    return status;
  }
  if (scene) scene = aiApplyPostProcessing(scene, join_flags);
  if (!scene) {
    char why[512];
    snprintf(why, sizeof why, "%s", aiGetErrorString());
    one_line(why);
    return vox_error(ctx, VOX_ERR_FORMAT, "%s: not a mesh assimp can read: %s", path,
                     why[0] ? why : "unknown format");
  }

  int64_t nv = 0, nt = 0;
  for (unsigned m = 0; m < scene->mNumMeshes; m++) {
    const struct aiMesh *am = scene->mMeshes[m];
    if (!(am->mPrimitiveTypes & aiPrimitiveType_TRIANGLE)) continue;
    nv += am->mNumVertices;
    nt += am->mNumFaces;
  }
  if (nt == 0 || nv == 0) {
    status = vox_error(ctx, VOX_ERR_FORMAT, "%s: holds no triangle", path);
    goto done;
  }
  if (nv > UINT32_MAX) {
    status = vox_error(ctx, VOX_ERR_FORMAT, "%s: more than %u vertices", path, UINT32_MAX);
    goto done;
  }
  mesh->vertex = malloc((size_t)nv * 3 * sizeof *mesh->vertex);
  mesh->triangle = malloc((size_t)nt * 3 * sizeof *mesh->triangle);
  if (!mesh->vertex || !mesh->triangle) {
    status = vox_error(ctx, VOX_ERR_NO_MEMORY, "%s: out of memory for %lld triangles", path,
                       (long long)nt);
    goto done;
  }
  for (unsigned m = 0; m < scene->mNumMeshes; m++) {
    const struct aiMesh *am = scene->mMeshes[m];
    if (!(am->mPrimitiveTypes & aiPrimitiveType_TRIANGLE)) continue;
    uint32_t base = (uint32_t)mesh->n_vertices;
    for (unsigned v = 0; v < am->mNumVertices; v++) {
      const double p[3] = {am->mVertices[v].x, am->mVertices[v].y, am->mVertices[v].z};
      memcpy(&mesh->vertex[3 * mesh->n_vertices++], p, sizeof p);
    }
    for (unsigned f = 0; f < am->mNumFaces; f++) {
      const struct aiFace *face = &am->mFaces[f];
      if (face->mNumIndices != 3) continue; /* SortByPType leaves none in a triangle mesh */
      for (int c = 0; c < 3; c++)
        if (face->mIndices[c] >= am->mNumVertices) { /* validated above; never trusted */
          status = vox_error(ctx, VOX_ERR_FORMAT,
                             "%s: face %u of mesh %u refers to vertex %u of %u", path, f, m,
                             face->mIndices[c], am->mNumVertices);
          goto done;
        }
      uint32_t *t = &mesh->triangle[3 * mesh->n_triangles++];
      for (int c = 0; c < 3; c++) t[c] = base + face->mIndices[c];
    }
  }
  if (mesh->n_triangles == 0) status = vox_error(ctx, VOX_ERR_FORMAT, "%s: holds no triangle", path);
done:
  aiReleaseImport(scene);
  if (status) vox_mesh_free(mesh);
  return status;
}

void vox_mesh_free(vox_mesh *mesh) {
  if (!mesh) return;
  free(mesh->vertex);
  free(mesh->triangle);
  memset(mesh, 0, sizeof *mesh);
}

void vox_mesh_bounds(const vox_mesh *mesh, double min[3], double max[3]) {
  for (int a = 0; a < 3; a++) min[a] = INFINITY, max[a] = -INFINITY;
  for (int64_t t = 0; t < 3 * mesh->n_triangles; t++) {
    const double *p = &mesh->vertex[3 * (size_t)mesh->triangle[t]];
    for (int a = 0; a < 3; a++) {
      if (p[a] < min[a]) min[a] = p[a];
      if (p[a] > max[a]) max[a] = p[a];
    }
  }
}
