/* SPDX-License-Identifier: BSD-3-Clause */
/* vox_write_vti: the whole voxel grid as VTK ImageData (.vti), with the
 * model's fields (vtkx_fields_init): cell data label and density, point data
 * displacement and force per load case, an element-free Galerkin design's
 * nodal density and the fixed components, field data
 * units and title; an analysis result's element fields and reactions
 * besides.
 *
 * The model's element and node numbering (x fastest, then y, then z) is
 * VTK's cell and point numbering of an image, so arrays go out unchanged.
 * density and displacement are written as Float32: the .vti is for viewing
 * (the netCDF file keeps the doubles), ParaView renders in float anyway, and
 * it halves the largest arrays of the file. */
#include <stdio.h>

#include "voxfe/vtk.h"
#include "vtk_xml.h"

vox_status vox_write_vti(vox_context *ctx, const char *path, const vox_model *model) {
  return vox_write_result_vti(ctx, path, model, NULL);
}

vox_status vox_write_result_vti(vox_context *ctx, const char *path, const vox_model *model,
                                const vox_result_data *result) {
  vox_status status = vtkx_check_model(ctx, path, model);
  if (status != VOX_OK) return status;
  const vox_grid *g = &model->grid;
  uint64_t n_cells = (uint64_t)vox_grid_elements(g), n_points = (uint64_t)vox_grid_nodes(g);
  vtkx_fields f;
  status = vtkx_fields_init(ctx, path, model, result, NULL, n_points, NULL, n_cells, 0, &f);
  vtkx_doc *doc;
  if (status == VOX_OK) status = vtkx_begin(ctx, &doc, path, "ImageData", f.arrays, f.n);
  if (status == VOX_OK) {
    char extent[96];
    snprintf(extent, sizeof extent, "0 %lld 0 %lld 0 %lld", (long long)g->nx, (long long)g->ny,
             (long long)g->nz);
    vtkx_start(doc, "ImageData");
    vtkx_attr(doc, "WholeExtent", "%s", extent);
    vtkx_attr_vector(doc, "Origin", g->origin);
    vtkx_attr_vector(doc, "Spacing", g->voxel_size);
    vtkx_fields_field_data(doc, &f);
    vtkx_start(doc, "Piece");
    vtkx_attr(doc, "Extent", "%s", extent);
    vtkx_fields_point_and_cell_data(doc, &f);
    status = vtkx_finish(doc); /* closes Piece and ImageData */
  }
  vtkx_fields_free(&f);
  return status;
}
