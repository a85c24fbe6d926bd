/* SPDX-License-Identifier: BSD-3-Clause */
/* Operations on a segmented image: the largest connected component, majority
 * downsampling, cropping to the labelled voxels, and the move into a model. */
#include <stdlib.h>
#include <string.h>

#include "image_internal.h"
#include "voxfe/components.h"

void vox_labels_free(vox_labels *labels) {
  free(labels->label);
  free(labels->intensity);
  memset(labels, 0, sizeof *labels);
}

vox_status vox_labels_keep_largest(vox_context *ctx, vox_labels *l, int64_t *kept) {
  vox_component_counts counts;
  vox_status s = vox_keep_largest_labels(ctx, l->label, l->n, 6, &counts);
  if (!s) *kept = (int64_t)counts.kept;
  return s;
}

vox_status vox_labels_downsample_majority(vox_context *ctx, vox_labels *l, int f) {
  if (f < 1) return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "downsampling factor must be >= 1");
  if (f == 1) return VOX_OK;
  int64_t n[3], *m = l->n;
  for (int a = 0; a < 3; a++) n[a] = (m[a] + f - 1) / f;
  size_t count = (size_t)(n[0] * n[1] * n[2]);
  uint8_t *out = malloc(count);
  float *values = l->intensity ? malloc(count * sizeof *values) : NULL;
  if (!out || (l->intensity && !values)) {
    free(out);
    free(values);
    return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
  }
#pragma omp parallel for schedule(static)
  for (int64_t K = 0; K < n[2]; K++) {
    int64_t votes[256];
    for (int64_t J = 0; J < n[1]; J++)
      for (int64_t I = 0; I < n[0]; I++) {
        memset(votes, 0, sizeof votes);
        double sum = 0;
        int64_t cells = 0;
        for (int64_t k = K * f; k < (K + 1) * f && k < m[2]; k++)
          for (int64_t j = J * f; j < (J + 1) * f && j < m[1]; j++)
            for (int64_t i = I * f; i < (I + 1) * f && i < m[0]; i++) {
              int64_t v = (k * m[1] + j) * m[0] + i;
              votes[l->label[v]]++;
              if (l->intensity) sum += l->intensity[v];
              cells++;
            }
        /* the most votes; ties to material over empty, then to the lower label */
        int winner = 0;
        for (int c = 1; c < 256; c++)
          if (votes[c] > votes[winner] || (votes[c] == votes[winner] && winner == 0 && votes[c]))
            winner = c;
        int64_t out_v = (K * n[1] + J) * n[0] + I;
        out[out_v] = (uint8_t)winner;
        if (values) values[out_v] = (float)(sum / (double)cells);
      }
  }
  free(l->label);
  free(l->intensity);
  l->label = out;
  l->intensity = values;
  for (int a = 0; a < 3; a++) {
    l->origin[a] += 0.5 * (f - 1) * l->spacing[a];
    l->spacing[a] *= f;
    l->n[a] = n[a];
  }
  return VOX_OK;
}

vox_status vox_labels_crop_to_content(vox_context *ctx, vox_labels *l, int64_t margin) {
  int64_t lo[3] = {l->n[0], l->n[1], l->n[2]}, hi[3] = {-1, -1, -1};
  for (int64_t k = 0; k < l->n[2]; k++)
    for (int64_t j = 0; j < l->n[1]; j++)
      for (int64_t i = 0; i < l->n[0]; i++) {
        if (!l->label[(k * l->n[1] + j) * l->n[0] + i]) continue;
        int64_t ijk[3] = {i, j, k};
        for (int a = 0; a < 3; a++) {
          if (ijk[a] < lo[a]) lo[a] = ijk[a];
          if (ijk[a] > hi[a]) hi[a] = ijk[a];
        }
      }
  if (hi[0] < 0) return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "no voxel is labelled");
  int64_t n[3];
  for (int a = 0; a < 3; a++) {
    lo[a] = lo[a] - margin < 0 ? 0 : lo[a] - margin;
    hi[a] = hi[a] + 1 + margin > l->n[a] ? l->n[a] : hi[a] + 1 + margin;
    n[a] = hi[a] - lo[a];
  }
  for (int64_t k = 0; k < n[2]; k++)
    for (int64_t j = 0; j < n[1]; j++) {
      int64_t from = ((k + lo[2]) * l->n[1] + j + lo[1]) * l->n[0] + lo[0];
      int64_t to = (k * n[1] + j) * n[0];
      memmove(l->label + to, l->label + from, (size_t)n[0]);
      if (l->intensity)
        memmove(l->intensity + to, l->intensity + from, (size_t)n[0] * sizeof(float));
    }
  for (int a = 0; a < 3; a++) {
    l->origin[a] += (double)lo[a] * l->spacing[a];
    l->n[a] = n[a];
  }
  return VOX_OK;
}

vox_status vox_labels_to_model(vox_context *ctx, vox_labels *l, const char *intensity_units,
                               vox_model *model) {
  vox_grid grid = {.nx = l->n[0], .ny = l->n[1], .nz = l->n[2]};
  for (int a = 0; a < 3; a++) {
    grid.voxel_size[a] = l->spacing[a];
    grid.origin[a] = l->origin[a] - 0.5 * l->spacing[a]; /* voxel centre to the grid's corner */
  }
  /* vox_model_init checks the grid; its zeroed labels are replaced */
  vox_status s = vox_model_init(ctx, model, &grid);
  if (s) return s;
  free(model->label);
  model->label = l->label;
  model->intensity = l->intensity;
  if (l->intensity)
    snprintf(model->intensity_units, sizeof model->intensity_units, "%s",
             intensity_units ? intensity_units : "1");
  l->label = NULL;
  l->intensity = NULL;
  return VOX_OK;
}
