/* SPDX-License-Identifier: BSD-3-Clause */
/* vox_write_vtp: a triangle surface as VTK PolyData (.vtp): Float64 points
 * in mm, the triangles as polys, point data `normals` (the active Normals),
 * field data `units`; through the same writer as the .vti and .vtu.
 *
 * A vertex normal is the sum of the right-hand normals of the triangles that
 * meet there, each as long as twice its triangle's area (the cross product of
 * two edges), normalised: area-weighted, so that slivers count for little.
 * Triangles run counter-clockwise seen from outside, so the normals point
 * outwards. A vertex whose triangles cancel out (or that no triangle uses)
 * gets (0, 0, 0). */
#include <math.h>
#include <stdlib.h>

#include "voxfe/vtk.h"
#include "vtk_xml.h"

static void fill_offsets(const void *source, uint64_t first, size_t count, void *dst) {
  (void)source;
  int64_t *out = dst;
  for (size_t v = 0; v < count; v++) out[v] = 3 * (int64_t)(first + v + 1); /* end of each poly */
}

static void fill_float32(const void *source, uint64_t first, size_t count, void *dst) {
  const float *in = (const float *)source + first;
  float *out = dst;
  for (size_t v = 0; v < count; v++) out[v] = in[v];
}

static void fill_float64(const void *source, uint64_t first, size_t count, void *dst) {
  const double *in = (const double *)source + first;
  double *out = dst;
  for (size_t v = 0; v < count; v++) out[v] = in[v];
}

static void fill_int64(const void *source, uint64_t first, size_t count, void *dst) {
  const int64_t *in = (const int64_t *)source + first;
  int64_t *out = dst;
  for (size_t v = 0; v < count; v++) out[v] = in[v];
}

/* Area-weighted unit vertex normals, 3 floats per vertex. Summed in double
 * and in triangle order, so the result does not depend on the threads. */
static float *vertex_normals(const vox_surface *s) {
  double *sum = calloc(3 * s->n_vertices + 1, sizeof *sum);
  float *normal = malloc((3 * s->n_vertices + 1) * sizeof *normal);
  if (!sum || !normal) {
    free(sum);
    free(normal);
    return NULL;
  }
  for (size_t t = 0; t < s->n_triangles; t++) {
    const int64_t *v = s->triangle + 3 * t;
    const double *a = s->vertex + 3 * v[0], *b = s->vertex + 3 * v[1], *c = s->vertex + 3 * v[2];
    double u[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]};
    double w[3] = {c[0] - a[0], c[1] - a[1], c[2] - a[2]};
    double n[3] = {u[1] * w[2] - u[2] * w[1], u[2] * w[0] - u[0] * w[2],
                   u[0] * w[1] - u[1] * w[0]};
    for (int k = 0; k < 3; k++)
      for (int d = 0; d < 3; d++) sum[3 * v[k] + d] += n[d];
  }
  for (size_t i = 0; i < s->n_vertices; i++) {
    const double *n = sum + 3 * i;
    double length = sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
    for (int d = 0; d < 3; d++)
      normal[3 * i + d] = length > 0 && isfinite(length) ? (float)(n[d] / length) : 0.0f;
  }
  free(sum);
  return normal;
}

vox_status vox_write_vtp(vox_context *ctx, const char *path, const vox_surface *s) {
  if (!path || !*path) return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "no output path given");
  if (!s || s->n_triangles == 0 || !s->vertex || !s->triangle)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "%s: the surface has no triangles", path);
  if (s->n_vertices > (size_t)INT64_MAX / 3 || s->n_triangles > (size_t)INT64_MAX / 3)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "%s: the surface is too large", path);
  for (size_t i = 0; i < 3 * s->n_triangles; i++)
    if (s->triangle[i] < 0 || (uint64_t)s->triangle[i] >= s->n_vertices)
      return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                       "%s: triangle %zu refers to vertex %lld of %zu", path, i / 3 + 1,
                       (long long)s->triangle[i], s->n_vertices);

  vtkx_strings units = {0};
  float *normals = vertex_normals(s);
  if (!normals || vtkx_strings_add(&units, "coordinates: mm") ||
      vtkx_strings_add(&units, "normals: -")) {
    free(normals);
    vtkx_strings_free(&units);
    return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
  }
  /* In the order they are declared, so the appended section reads in order. */
  const vtkx_array arrays[] = {
      vtkx_string_array("units", &units),
      {.name = "normals", .type = VTKX_FLOAT32, .components = 3, .tuples = s->n_vertices,
       .fill = fill_float32, .source = normals, .noisy = 1},
      {.name = "Points", .type = VTKX_FLOAT64, .components = 3, .tuples = s->n_vertices,
       .fill = fill_float64, .source = s->vertex},
      {.name = "connectivity", .type = VTKX_INT64, .components = 1, .tuples = 3 * s->n_triangles,
       .fill = fill_int64, .source = s->triangle},
      {.name = "offsets", .type = VTKX_INT64, .components = 1, .tuples = s->n_triangles,
       .fill = fill_offsets, .source = NULL},
  };
  vtkx_doc *doc;
  vox_status status =
      vtkx_begin(ctx, &doc, path, "PolyData", arrays, sizeof arrays / sizeof arrays[0]);
  if (status == VOX_OK) {
    vtkx_start(doc, "PolyData");
    vtkx_field_data(doc, 0, 1);
    vtkx_start(doc, "Piece");
    vtkx_attr(doc, "NumberOfPoints", "%zu", s->n_vertices);
    vtkx_attr(doc, "NumberOfVerts", "0");
    vtkx_attr(doc, "NumberOfLines", "0");
    vtkx_attr(doc, "NumberOfStrips", "0");
    vtkx_attr(doc, "NumberOfPolys", "%zu", s->n_triangles);
    vtkx_start(doc, "PointData");
    vtkx_attr(doc, "Normals", "normals");
    vtkx_data_array(doc, 1);
    vtkx_end(doc);
    vtkx_start(doc, "Points");
    vtkx_data_array(doc, 2);
    vtkx_end(doc);
    vtkx_start(doc, "Polys");
    vtkx_data_array(doc, 3);
    vtkx_data_array(doc, 4);
    vtkx_end(doc);
    status = vtkx_finish(doc); /* closes Piece and PolyData */
  }
  free(normals);
  vtkx_strings_free(&units);
  return status;
}
