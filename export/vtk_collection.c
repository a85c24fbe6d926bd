/* SPDX-License-Identifier: BSD-3-Clause */
/* vox_write_pvd: the optimization history as a VTK collection (.pvd) of one
 * ImageData per density snapshot, for ParaView's time controls. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "voxfe/vtk.h"
#include "vtk_xml.h"

typedef struct frame {
  int32_t iteration;
  const double *density;
  char *path; /* the .vti, as written */
} frame;

/* The final name of a frame's file, and the name the .pvd gives it (the
 * same without the folder). */
static char *frame_path(const char *stem, int32_t iteration) {
  size_t size = strlen(stem) + 32;
  char *p = malloc(size);
  if (p) snprintf(p, size, "%s_%04d.vti", stem, (int)iteration);
  return p;
}

static const char *base_name(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

vox_status vox_write_pvd(vox_context *ctx, const char *path, const vox_model *model) {
  if (!path || !model)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "pvd: no path or no model given");
  size_t len = strlen(path);
  if (len <= 4 || strcasecmp(path + len - 4, ".pvd") != 0)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "%s: a collection's name must end in .pvd",
                     path);
  if (model->n_snapshots == 0 || !model->snapshot_iteration || !model->snapshot_density)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "%s: the model has no density snapshots (voxfe-optimize --snapshot-every N "
                     "saves them)",
                     path);
  const size_t ne = (size_t)vox_grid_elements(&model->grid);
  const size_t n_snap = model->n_snapshots;
  /* the final design, unless the last snapshot is it */
  int32_t last = model->n_history ? model->history[model->n_history - 1].iteration : -1;
  int add_final = model->density && last >= 0 && model->snapshot_iteration[n_snap - 1] != last;
  const size_t n = n_snap + (size_t)add_final;

  char *stem = strndup(path, len - 4);
  frame *frames = calloc(n, sizeof *frames);
  if (!stem || !frames) {
    free(stem);
    free(frames);
    return vox_error(ctx, VOX_ERR_NO_MEMORY, "%s: out of memory", path);
  }
  for (size_t i = 0; i < n_snap; i++)
    frames[i] = (frame){model->snapshot_iteration[i], model->snapshot_density + i * ne, NULL};
  if (add_final) frames[n_snap] = (frame){last, model->density, NULL};

  vox_status status = VOX_OK;
  vox_model view = *model; /* shallow: the snapshot's density, no displacement */
  view.displacement = NULL;
  view.n_snapshots = 0, view.snapshot_iteration = NULL, view.snapshot_density = NULL;
  size_t written = 0;
  for (; written < n && status == VOX_OK; written++) {
    frames[written].path = frame_path(stem, frames[written].iteration);
    if (!frames[written].path) {
      status = vox_error(ctx, VOX_ERR_NO_MEMORY, "%s: out of memory", path);
      break;
    }
    view.density = (double *)frames[written].density;
    status = vox_write_vti(ctx, frames[written].path, &view);
    if (status != VOX_OK) break;
  }

  if (status == VOX_OK) {
    vtkx_doc *doc;
    status = vtkx_begin(ctx, &doc, path, "Collection", NULL, 0);
    if (status == VOX_OK) {
      vtkx_start(doc, "Collection");
      for (size_t i = 0; i < n; i++) {
        vtkx_start(doc, "DataSet");
        vtkx_attr(doc, "timestep", "%d", (int)frames[i].iteration);
        vtkx_attr(doc, "group", "%s", "");
        vtkx_attr(doc, "part", "0");
        vtkx_attr(doc, "file", "%s", base_name(frames[i].path));
        vtkx_end(doc);
      }
      status = vtkx_finish(doc);
    }
  }
  if (status != VOX_OK) /* no partial collection: take back the frames written */
    for (size_t i = 0; i < written; i++) unlink(frames[i].path);
  for (size_t i = 0; i < n; i++) free(frames[i].path);
  free(frames);
  free(stem);
  return status;
}
