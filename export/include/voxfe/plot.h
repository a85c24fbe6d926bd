/* Pictures of a design for reports and batch review, drawn with cairo. */
#ifndef VOXFE_PLOT_H
#define VOXFE_PLOT_H

#include "voxfe/model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Limits of the picture size, in pixels. */
#define VOX_PLOT_MIN_WIDTH 240
#define VOX_PLOT_MIN_HEIGHT 320
#define VOX_PLOT_MAX_SIZE 16384

/* A PNG (RGB, white background) of the optimization history: four panels
 * stacked over a shared iteration axis: objective (compliance, N mm; on a
 * log scale when its values span more than two decades), volume fraction,
 * largest density change, and non-discreteness (%), each with its axes, tick
 * labels and title, under the model's title (or "optimization history")
 * and a line with the final values. NaN values (fields that did not apply
 * in an iteration) leave gaps in the lines.
 *
 * Fails with VOX_ERR_INVALID_ARGUMENT for a model without history or a size
 * outside [VOX_PLOT_MIN_WIDTH, VOX_PLOT_MAX_SIZE] x [VOX_PLOT_MIN_HEIGHT,
 * VOX_PLOT_MAX_SIZE]. The output replaces `path` atomically (a temporary file
 * renamed into place) and leaves it untouched on failure. */
vox_status vox_write_history_png(vox_context *ctx, const char *path, const vox_model *m, int width,
                                 int height);

#ifdef __cplusplus
}
#endif
#endif
