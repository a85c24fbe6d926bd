/* SPDX-License-Identifier: BSD-3-Clause */
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

/* The panels of the history plot, top to bottom. */
enum {
  VOX_PANEL_OBJECTIVE,
  VOX_PANEL_VOLUME,
  VOX_PANEL_CHANGE,
  VOX_PANEL_NON_DISCRETENESS,
  VOX_PANEL_CONTINUATION,
  VOX_PANEL_CONSTRAINTS, /* drawn only for a model with design constraints */
  VOX_HISTORY_PANELS
};
/* The most lines of one panel (the design constraints beyond it are not
 * drawn; the summary lists them all). */
#define VOX_PLOT_MAX_SERIES 8

/* What one panel draws: its series (a column of the history each, by name:
 * "objective", "volume_fraction", "change", "non_discreteness", "penalty",
 * "q") over the iteration, on the value axis [lo, hi] (log10 of the values
 * when `log`), and a horizontal reference line at `reference` (NaN: none). */
typedef struct vox_history_panel {
  const char *title;
  int n_series;
  const char *series[VOX_PLOT_MAX_SERIES];
  int log;
  int has_data; /* some value of a series is finite (and positive for log) */
  double lo, hi;
  double reference;
} vox_history_panel;

/* The panels vox_write_history_png draws for the history of `m` (which must
 * have one). The volume fraction's panel shows the optimization's target
 * (m->target_volume_fraction, when known) as its reference line, centred,
 * with room above and below for the largest deviation from it and at least
 * a tenth of the target (none below 0): a design held at its target draws
 * as a flat line in the middle, not as rounding noise blown up to the
 * panel's height. */
void vox_history_panels(const vox_model *m, vox_history_panel panels[VOX_HISTORY_PANELS]);

/* A PNG (RGB, white background) of the optimization history: five panels
 * stacked over a shared iteration axis: objective (compliance, N mm; on a
 * log scale when its values span more than two decades), volume fraction
 * with its target (a dashed line, when the design file knows it), largest
 * density change, non-discreteness (%), and the continuation's exponents p
 * (SIMP penalty) and q; a sixth for a model with design constraints: each
 * constraint's value over its limit, one line per constraint (its name in
 * the legend), with the limit 1 dashed. Each with its axes, tick labels,
 * title (and legend where a panel has several lines), under the model's title (or "optimization
 * history") and a line with the final values. NaN values (fields that did
 * not apply in an iteration) leave gaps in the lines.
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
