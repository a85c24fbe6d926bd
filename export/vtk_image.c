/* vox_write_vti: the whole voxel grid as VTK ImageData (.vti), cell data
 * label and density, point data one displacement per load case.
 *
 * The model's element and node numbering (x fastest, then y, then z) is
 * VTK's cell and point numbering of an image, so arrays go out unchanged.
 * density and displacement are written as Float32: the .vti is for viewing
 * (the netCDF file keeps the doubles), ParaView renders in float anyway, and
 * it halves the largest arrays of the file. */
#include <stdio.h>
#include <stdlib.h>

#include "voxfe/vtk.h"
#include "vtk_xml.h"

vox_status vox_write_vti(vox_context *ctx, const char *path, const vox_model *model) {
  vox_status status = vtkx_check_model(ctx, path, model);
  if (status != VOX_OK) return status;
  const vox_grid *g = &model->grid;
  uint64_t n_cells = (uint64_t)vox_grid_elements(g), n_points = (uint64_t)vox_grid_nodes(g);
  int n_cases = model->displacement ? model->n_load_cases : 0;

  char(*names)[VTKX_NAME_MAX] = calloc((size_t)n_cases + 1, sizeof *names);
  vtkx_array *arrays = calloc((size_t)n_cases + 2, sizeof *arrays);
  if (!names || !arrays) {
    free(names);
    free(arrays);
    return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
  }
  /* In the order they are declared, so the appended section reads in order. */
  size_t n = 0;
  for (int c = 0; c < n_cases; c++) {
    vtkx_displacement_name(model, c, names[c]);
    arrays[n++] = (vtkx_array){.name = names[c], .type = VTKX_FLOAT32, .components = 3,
                               .tuples = n_points, .fill = vtkx_fill_float32_of_double,
                               .source = model->displacement + (size_t)c * n_points * 3,
                               .noisy = 1};
  }
  size_t first_cell_array = n;
  arrays[n++] = (vtkx_array){.name = "label", .type = VTKX_UINT8, .components = 1,
                             .tuples = n_cells, .fill = vtkx_fill_uint8, .source = model->label};
  if (model->density)
    arrays[n++] = (vtkx_array){.name = "density", .type = VTKX_FLOAT32, .components = 1,
                               .tuples = n_cells, .fill = vtkx_fill_float32_of_double,
                               .source = model->density};

  vtkx_doc *doc;
  status = vtkx_begin(ctx, &doc, path, "ImageData", arrays, n);
  if (status == VOX_OK) {
    char extent[96];
    snprintf(extent, sizeof extent, "0 %lld 0 %lld 0 %lld", (long long)g->nx, (long long)g->ny,
             (long long)g->nz);
    vtkx_start(doc, "ImageData");
    vtkx_attr(doc, "WholeExtent", "%s", extent);
    vtkx_attr_vector(doc, "Origin", g->origin);
    vtkx_attr_vector(doc, "Spacing", g->voxel_size);
    vtkx_start(doc, "Piece");
    vtkx_attr(doc, "Extent", "%s", extent);
    vtkx_point_and_cell_data(doc, n_cases > 0 ? names[0] : NULL,
                             model->density ? "density" : "label", first_cell_array, n);
    status = vtkx_finish(doc); /* closes Piece and ImageData */
  }
  free(names);
  free(arrays);
  return status;
}
