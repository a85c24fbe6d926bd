/* SPDX-License-Identifier: BSD-3-Clause */
/* A shaded picture of a surface (voxfe/surface.h) as PNG, for reports and
 * batch review: an orthographic view of the closed mesh, fitted to its
 * bounding box, rasterised with a z-buffer (back faces culled), Gouraud
 * shaded (Lambert + ambient on area-weighted vertex normals, the light from
 * the camera's upper left plus a weak fill from the camera), anti-aliased by
 * 2x2 supersampling, on white,
 * with an axis triad (x red, y green, z blue) and a scale bar in mm drawn
 * over it with cairo. */
#ifndef VOXFE_RENDER_H
#define VOXFE_RENDER_H

#include "voxfe/surface.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Limits of the picture size, in pixels. Rendering takes about 32 bytes a
 * pixel (depth and shade of four samples) besides the mesh. */
#define VOX_RENDER_MIN_SIZE 64
#define VOX_RENDER_MAX_SIZE 8192

/* The projection of the mesh's bounding box fills the picture less a margin
 * of this fraction of the smaller side all round, centred; the scale (pixels
 * per mm) is the same in x and y. */
#define VOX_RENDER_MARGIN 0.08

/* Where the camera is, seen from the mesh. A named axis view puts the camera
 * on that side looking back along the axis (VOX_VIEW_X: from +x, so the +x
 * face is seen, y to the right and z up); views along z have y up, all the
 * others z up. VOX_VIEW_ISO is from (1, -1, 1): the +x, -y and +z faces. */
typedef enum vox_view {
  VOX_VIEW_ISO = 0,
  VOX_VIEW_X,
  VOX_VIEW_Y,
  VOX_VIEW_Z,
  VOX_VIEW_MINUS_X,
  VOX_VIEW_MINUS_Y,
  VOX_VIEW_MINUS_Z,
  VOX_VIEW_ANGLES /* from azimuth and elevation */
} vox_view;

typedef struct vox_render_options {
  int width, height; /* pixels; 0 for 1200 x 1000 */
  vox_view view;
  /* VOX_VIEW_ANGLES: the camera's direction from the mesh, in degrees:
   * azimuth from +x towards +y, elevation from the xy plane towards +z. */
  double azimuth, elevation;
  /* The surface colour (0..1 each); all zero for a light grey-blue. */
  double color[3];
  int no_annotations; /* non-zero: no axis triad and scale bar */
} vox_render_options;

/* The view named "iso", "x", "y", "z", "-x", "-y" or "-z" (as --view takes
 * it); -1 for any other text. */
int vox_view_from_name(const char *name, vox_view *out);

/* Writes the picture of `surface` (RGB PNG). `options` may be NULL for the
 * defaults. Fails with VOX_ERR_INVALID_ARGUMENT for a surface without
 * triangles, with a vertex index out of range or a non-finite coordinate,
 * or a size outside [VOX_RENDER_MIN_SIZE, VOX_RENDER_MAX_SIZE]. The output
 * replaces `path` atomically (a temporary file renamed into place) and is
 * left untouched on failure. Single-threaded and deterministic. */
vox_status vox_render_surface_png(vox_context *ctx, const char *path, const vox_surface *surface,
                                  const vox_render_options *options);

#ifdef __cplusplus
}
#endif
#endif
