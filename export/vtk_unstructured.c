/* SPDX-License-Identifier: BSD-3-Clause */
/* vox_write_vtu: the voxels kept by a density threshold (or, without density,
 * by a non-zero label) as VTK_HEXAHEDRON cells of an UnstructuredGrid (.vtu),
 * with only the nodes they use, numbered compactly.
 *
 * Cells keep the grid's element order and points the grid's node order, so
 * the file is the same whatever the threads. Points are Float64 physical
 * coordinates; the fields (vtkx_fields_init) are the .vti's, restricted to
 * the kept cells and their points. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "voxfe/vtk.h"
#include "voxfe/element.h"
#include "vtk_xml.h"

enum { VTK_HEXAHEDRON = 12 };

typedef struct mesh {
  const vox_model *model;
  int64_t *cells;          /* grid element of each cell, ascending */
  int64_t n_cells;
  int64_t *node_of_point;  /* grid node of each point, ascending */
  int64_t n_points;
  int64_t *point_of_node;  /* grid node -> point, -1 where no kept cell uses it */
} mesh;

static void mesh_free(mesh *m) {
  free(m->cells);
  free(m->node_of_point);
  free(m->point_of_node);
}

static int kept(const vox_model *model, int64_t e, double threshold) {
  return model->density ? model->density[e] >= threshold : model->label[e] != 0;
}

static vox_status no_cell_kept(vox_context *ctx, const char *path, const vox_model *model,
                               double threshold) {
  if (!model->density)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "%s: no cell to write: every voxel has label 0", path);
  int64_t ne = vox_grid_elements(&model->grid);
  double highest = -INFINITY;
  for (int64_t e = 0; e < ne; e++)
    if (model->density[e] > highest) highest = model->density[e];
  return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                   "%s: no cell to write: no density reaches the threshold %g (the highest is %g)",
                   path, threshold, highest);
}

static vox_status build_mesh(vox_context *ctx, const char *path, const vox_model *model,
                             double threshold, mesh *m) {
  const vox_grid *g = &model->grid;
  int64_t ne = vox_grid_elements(g), nn = vox_grid_nodes(g);
  int64_t px = g->nx + 1, py = g->ny + 1;
  memset(m, 0, sizeof *m);
  m->model = model;
  for (int64_t e = 0; e < ne; e++) m->n_cells += kept(model, e, threshold);
  if (m->n_cells == 0) return no_cell_kept(ctx, path, model, threshold);

  m->cells = malloc((size_t)m->n_cells * sizeof *m->cells);
  m->point_of_node = malloc((size_t)nn * sizeof *m->point_of_node);
  if (!m->cells || !m->point_of_node) goto no_memory;
  for (int64_t n = 0; n < nn; n++) m->point_of_node[n] = -1;
  int64_t q = 0;
  for (int64_t e = 0; e < ne; e++) {
    if (!kept(model, e, threshold)) continue;
    m->cells[q++] = e;
    int64_t i = e % g->nx, j = (e / g->nx) % g->ny, k = e / (g->nx * g->ny);
    for (int a = 0; a < 8; a++)
      m->point_of_node[((k + vox_hex8_corner[a][2]) * py + j + vox_hex8_corner[a][1]) * px + i + vox_hex8_corner[a][0]] = 0;
  }
  /* Marked nodes get consecutive numbers in grid order. */
  for (int64_t n = 0; n < nn; n++)
    if (m->point_of_node[n] >= 0) m->point_of_node[n] = m->n_points++;
  m->node_of_point = malloc((size_t)m->n_points * sizeof *m->node_of_point);
  if (!m->node_of_point) goto no_memory;
  for (int64_t n = 0; n < nn; n++)
    if (m->point_of_node[n] >= 0) m->node_of_point[m->point_of_node[n]] = n;
  return VOX_OK;

no_memory:
  mesh_free(m);
  return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
}

/* --- fills: value v of an array of c components is component v % c of tuple v / c */

static void fill_points(const void *source, uint64_t first, size_t count, void *dst) {
  const mesh *m = source;
  const vox_grid *g = &m->model->grid;
  int64_t px = g->nx + 1, py = g->ny + 1;
  double *out = dst;
  for (size_t v = 0; v < count; v++) {
    int64_t n = m->node_of_point[(first + v) / 3];
    int c = (int)((first + v) % 3);
    int64_t index = c == 0 ? n % px : c == 1 ? (n / px) % py : n / (px * py);
    out[v] = g->origin[c] + (double)index * g->voxel_size[c];
  }
}

static void fill_connectivity(const void *source, uint64_t first, size_t count, void *dst) {
  const mesh *m = source;
  const vox_grid *g = &m->model->grid;
  int64_t px = g->nx + 1, py = g->ny + 1;
  int64_t *out = dst;
  for (size_t v = 0; v < count; v++) {
    int64_t e = m->cells[(first + v) / 8];
    const int *d = vox_hex8_corner[(first + v) % 8];
    int64_t i = e % g->nx, j = (e / g->nx) % g->ny, k = e / (g->nx * g->ny);
    out[v] = m->point_of_node[((k + d[2]) * py + j + d[1]) * px + i + d[0]];
  }
}

static void fill_offsets(const void *source, uint64_t first, size_t count, void *dst) {
  int64_t *out = dst;
  for (size_t v = 0; v < count; v++) out[v] = 8 * (int64_t)(first + v + 1); /* end of each cell */
}

static void fill_types(const void *source, uint64_t first, size_t count, void *dst) {
  memset(dst, VTK_HEXAHEDRON, count);
}

vox_status vox_write_vtu(vox_context *ctx, const char *path, const vox_model *model,
                         double threshold) {
  return vox_write_result_vtu(ctx, path, model, threshold, NULL);
}

vox_status vox_write_result_vtu(vox_context *ctx, const char *path, const vox_model *model,
                                double threshold, const vox_result_data *result) {
  vox_status status = vtkx_check_model(ctx, path, model);
  if (status != VOX_OK) return status;
  if (model->density && isnan(threshold))
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "%s: the density threshold is not a number",
                     path);
  mesh m;
  status = build_mesh(ctx, path, model, threshold, &m);
  if (status != VOX_OK) return status;

  vtkx_fields f;
  status = vtkx_fields_init(ctx, path, model, result, m.node_of_point, (uint64_t)m.n_points, m.cells,
                            (uint64_t)m.n_cells, 4, &f);
  if (status != VOX_OK) goto done;
  uint64_t n_points = (uint64_t)m.n_points, n_cells = (uint64_t)m.n_cells;
  /* After the fields, in the order they are declared, so the appended
   * section reads in order. */
  vtkx_array *arrays = f.arrays;
  size_t n = f.n;
  size_t points = n;
  arrays[n++] = (vtkx_array){.name = "Points", .type = VTKX_FLOAT64, .components = 3,
                             .tuples = n_points, .fill = fill_points, .source = &m};
  size_t cells = n;
  arrays[n++] = (vtkx_array){.name = "connectivity", .type = VTKX_INT64, .components = 1,
                             .tuples = 8 * n_cells, .fill = fill_connectivity, .source = &m};
  arrays[n++] = (vtkx_array){.name = "offsets", .type = VTKX_INT64, .components = 1,
                             .tuples = n_cells, .fill = fill_offsets, .source = &m};
  arrays[n++] = (vtkx_array){.name = "types", .type = VTKX_UINT8, .components = 1,
                             .tuples = n_cells, .fill = fill_types, .source = &m};

  vtkx_doc *doc;
  status = vtkx_begin(ctx, &doc, path, "UnstructuredGrid", arrays, n);
  if (status != VOX_OK) goto done;
  vtkx_start(doc, "UnstructuredGrid");
  vtkx_fields_field_data(doc, &f);
  vtkx_start(doc, "Piece");
  vtkx_attr(doc, "NumberOfPoints", "%lld", (long long)m.n_points);
  vtkx_attr(doc, "NumberOfCells", "%lld", (long long)m.n_cells);
  vtkx_fields_point_and_cell_data(doc, &f);
  vtkx_start(doc, "Points");
  vtkx_data_array(doc, points);
  vtkx_end(doc);
  vtkx_start(doc, "Cells");
  for (size_t i = cells; i < n; i++) vtkx_data_array(doc, i);
  vtkx_end(doc);
  status = vtkx_finish(doc); /* closes Piece and UnstructuredGrid */

done:
  vtkx_fields_free(&f);
  mesh_free(&m);
  return status;
}
