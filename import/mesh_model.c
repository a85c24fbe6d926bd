/* SPDX-License-Identifier: BSD-3-Clause */
/* A voxel model's grid and labels from surface meshes: the design domain,
 * and optionally a passive solid and a passive void mesh (voxfe-voxelize
 * --mesh, --solid-mesh, --void-mesh). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import_progress.h"
#include "voxfe/mesh.h"

enum { LABEL_DESIGN = 1, LABEL_SOLID = 2, LABEL_VOID = 3 };

/* Puts the file's name in front of a message that lacks it. */
static vox_status name_file(vox_context *ctx, vox_status status, const char *path) {
  const char *message = vox_context_message(ctx);
  size_t len = strlen(path);
  if (!strncmp(message, path, len) && message[len] == ':') return status;
  char copy[1024];
  snprintf(copy, sizeof copy, "%s", message);
  return vox_error(ctx, status, "%s: %s", path, copy);
}

/* Fills the mesh at `path` into `inside` and applies it to the labels:
 * label[e] = to where inside and label[e] is one of `from` (0 = any). */
static vox_status apply(vox_context *ctx, const vox_mesh_inputs *in, const vox_mesh *mesh,
                        const char *path, vox_model *model, uint8_t *inside, int from, int to,
                        vox_mesh_fill_info *info) {
  vox_mesh_fill_info local;
  if (!info) info = &local;
  const double t0 = import_clock();
  vox_status status =
      vox_mesh_fill(ctx, mesh, &model->grid, in->rule, in->device, inside, info);
  if (status) return name_file(ctx, status, path);
  if ((status = import_stage(ctx, t0, "filled %s: %lld voxels inside (%s, %s)",
                             import_short_name(path),
                             (long long)info->inside, vox_fill_rule_name(info->rule),
                             info->device == VOX_DEVICE_CUDA ? "GPU" : "CPU")))
    return status;
  const int64_t ne = vox_grid_elements(&model->grid);
  int64_t hits = 0;
#pragma omp parallel for reduction(+ : hits) schedule(static)
  for (int64_t e = 0; e < ne; e++) {
    if (!inside[e] || (from && model->label[e] != from)) continue;
    model->label[e] = (uint8_t)to;
    hits++;
  }
  if (hits == 0)
    return vox_error(ctx, VOX_ERR_FORMAT,
                     to == LABEL_VOID
                         ? "%s: the passive void mesh holds no voxel centre of the design domain"
                         : "%s: no voxel centre lies inside the mesh (an open or flat surface, "
                           "or voxels too large for it)",
                     path);
  return VOX_OK;
}

vox_status vox_model_from_meshes(vox_context *ctx, const vox_mesh_inputs *in, vox_model *model,
                                 vox_mesh_fill_info info[3]) {
  if (!in || !in->design || !model)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "meshes to a model needs a design mesh");
  const char *paths[3] = {in->design, in->solid, in->empty};
  vox_mesh mesh[3] = {{0}};
  uint8_t *inside = NULL;
  vox_status status = VOX_OK;
  /* All files are read first: a bad one fails before a large grid is
   * allocated. */
  for (int i = 0; i < 3 && !status; i++) {
    if (!paths[i]) continue;
    const double t0 = import_clock();
    if (!(status = vox_mesh_read(ctx, paths[i], &mesh[i])))
      status = import_stage(ctx, t0, "read %s: %lld triangles", import_short_name(paths[i]),
                            (long long)mesh[i].n_triangles);
  }
  if (status) goto done;

  double min[3], max[3];
  vox_mesh_bounds(&mesh[0], min, max);
  if (paths[1]) {
    double smin[3], smax[3];
    vox_mesh_bounds(&mesh[1], smin, smax);
    for (int a = 0; a < 3; a++) {
      min[a] = fmin(min[a], smin[a]);
      max[a] = fmax(max[a], smax[a]);
    }
  }
  vox_grid grid;
  status = vox_grid_around(ctx, min, max, in->voxel_size, in->resolution, in->padding,
                           in->max_elements, &grid);
  if (status) {
    name_file(ctx, status, in->design);
    goto done;
  }
  if ((status = vox_model_init(ctx, model, &grid))) goto done;
  inside = malloc((size_t)vox_grid_elements(&grid));
  if (!inside) {
    status = vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory for %lld voxels",
                       (long long)vox_grid_elements(&grid));
    goto done;
  }
  static const int from[3] = {0, 0, LABEL_DESIGN}, to[3] = {LABEL_DESIGN, LABEL_SOLID, LABEL_VOID};
  for (int i = 0; i < 3 && !status; i++)
    if (paths[i])
      status = apply(ctx, in, &mesh[i], paths[i], model, inside, from[i], to[i],
                     info ? &info[i] : NULL);
done:
  free(inside);
  for (int i = 0; i < 3; i++) vox_mesh_free(&mesh[i]);
  if (status) vox_model_free(model);
  return status;
}
