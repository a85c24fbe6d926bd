/* SPDX-License-Identifier: BSD-3-Clause */
/* CT and micro-CT images: one volume type that every reader fills (DICOM,
 * TIFF, NIfTI, MetaImage, raw, Scanco AIM), and the segmentation that turns
 * a volume into the labels of a voxel model (docs/images.md).
 *
 * Indexing is that of the model: voxel (i,j,k) at data[(k*ny + j)*nx + i],
 * x fastest. Positions follow the convention of ITK and of the image formats
 * themselves: `origin` is the centre of voxel (0,0,0), so voxel (i,j,k) is
 * centred at origin + (i,j,k)*spacing. Direction cosines are not applied:
 * the model lies in the image's own index frame. */
#ifndef VOXFE_IMAGE_H
#define VOXFE_IMAGE_H

#include <stdint.h>

#include "voxfe/model.h"

#ifdef __cplusplus
extern "C" {
#endif

#define VOX_UNITS_MAX 32

/* A linear map value -> a * value + b, for example stored value -> HU. */
typedef struct vox_linear {
  int known; /* 0: the file does not say */
  double slope, intercept;
} vox_linear;

typedef struct vox_image {
  int64_t n[3];              /* voxels along x, y, z */
  double spacing[3];         /* mm */
  double origin[3];          /* centre of voxel (0,0,0), mm */
  int spacing_known;         /* 0: the file does not say (raw, a TIFF without units) */
  float *data;               /* n[0]*n[1]*n[2] values, in `units` */
  char units[VOX_UNITS_MAX]; /* of the values: "HU", "1" when unknown, ... */
  vox_linear to_hu;          /* values -> Hounsfield units, when the file says */
  vox_linear to_density;     /* values -> density (mg HA/ccm), when the file says */
  char format[16];           /* "DICOM", "TIFF", ...: for messages */
} vox_image;

/* The element type of a raw volume (also those of MetaImage and AIM). */
typedef enum vox_raw_type {
  VOX_RAW_U8,
  VOX_RAW_I8,
  VOX_RAW_U16,
  VOX_RAW_I16,
  VOX_RAW_U32,
  VOX_RAW_I32,
  VOX_RAW_F32,
  VOX_RAW_F64
} vox_raw_type;

/* A raw volume's layout, given by the user (there is no header). */
typedef struct vox_raw_layout {
  int64_t n[3];
  vox_raw_type type;
  int big_endian;
  uint64_t header_bytes; /* skipped at the start of the file */
} vox_raw_layout;

static inline int64_t vox_image_voxels(const vox_image *im) {
  return im->n[0] * im->n[1] * im->n[2];
}

/* Allocates `data` for n voxels (all 0), spacing 1, origin 0, units "1". */
vox_status vox_image_init(vox_context *ctx, vox_image *image, const int64_t n[3]);
void vox_image_free(vox_image *image);

/* Reads an image, choosing the reader by what `path` is: a folder of DICOM
 * files (one series) or of TIFF slices; a file by its content or name
 * (.dcm or the DICOM preamble, .tif/.tiff, .nii/.nii.gz, .mhd/.mha, .aim).
 * Errors name the file and the problem: VOX_ERR_IO, VOX_ERR_FORMAT (corrupt,
 * truncated, irregular slice gap), VOX_ERR_UNSUPPORTED (a DICOM transfer
 * syntax or a pixel type this build cannot decode). */
vox_status vox_image_read(vox_context *ctx, const char *path, vox_image *image);

/* The readers themselves. */
vox_status vox_image_read_dicom(vox_context *ctx, const char *path, vox_image *image);
vox_status vox_image_read_tiff(vox_context *ctx, const char *path, vox_image *image);
vox_status vox_image_read_nifti(vox_context *ctx, const char *path, vox_image *image);
vox_status vox_image_read_metaimage(vox_context *ctx, const char *path, vox_image *image);
vox_status vox_image_read_aim(vox_context *ctx, const char *path, vox_image *image);
vox_status vox_image_read_raw(vox_context *ctx, const char *path, const vox_raw_layout *layout,
                              vox_image *image);
/* "uint8", "int16", "float32", ...: the names of vox_image_raw_type_name. */
int vox_image_parse_raw_type(const char *name, vox_raw_type *type);
const char *vox_image_raw_type_name(vox_raw_type type);
int vox_image_raw_type_size(vox_raw_type type);

/* --- segmentation ---------------------------------------------------------- */

/* The units that thresholds are given in. */
typedef enum vox_value_units {
  VOX_UNITS_FILE = 0, /* as stored in the file (DICOM: after rescale slope/intercept) */
  VOX_UNITS_HU,       /* Hounsfield units: needs the file's to_hu */
  VOX_UNITS_DENSITY   /* through a calibration: the user's or the file's to_density */
} vox_value_units;

/* Converts the image's values in place to `units` (slope/intercept of the
 * calibration when given, else the file's); an image without the map fails
 * with VOX_ERR_INVALID_ARGUMENT naming `path`. */
vox_status vox_image_convert_units(vox_context *ctx, const char *path, vox_image *image,
                                   vox_value_units units, const vox_linear *calibration);

/* Keeps the box of voxels [lo, hi) (indices, clamped to the image). */
vox_status vox_image_crop(vox_context *ctx, vox_image *image, const int64_t lo[3],
                          const int64_t hi[3]);
/* Averages blocks of f x f x f voxels (partial blocks at the far faces
 * average the voxels they have); spacing times f. */
vox_status vox_image_downsample_mean(vox_context *ctx, vox_image *image, int f);

/* Otsu's threshold over a 256-bin histogram between the image's minimum and
 * maximum: the bin edge that maximises the between-class variance. */
double vox_image_otsu(const vox_image *image);

/* Labels from thresholds t[0] < t[1] < ...: voxels with t[c] <= value <
 * t[c+1] get labels[c]; below t[0] label 0. `out` holds n voxels. Returns
 * the number of voxels that got a label. */
int64_t vox_image_threshold(const vox_image *image, const double *t, const uint8_t *labels,
                            int n_thresholds, uint8_t *out);

/* A label volume with the geometry of an image. */
typedef struct vox_labels {
  int64_t n[3];
  double spacing[3], origin[3]; /* as in vox_image: origin is a voxel centre */
  uint8_t *label;
  float *intensity; /* the same voxels' values, or NULL */
} vox_labels;

void vox_labels_free(vox_labels *labels);
/* Keeps the largest face-connected (6-neighbour) component of the voxels
 * with a label; the rest become 0. Returns the number of voxels kept. */
vox_status vox_labels_keep_largest(vox_context *ctx, vox_labels *labels, int64_t *kept);
/* Majority vote over f x f x f blocks (ties: material over empty, then the
 * lower label); intensities are averaged. */
vox_status vox_labels_downsample_majority(vox_context *ctx, vox_labels *labels, int f);
/* Crops to the bounding box of the labelled voxels, grown by `margin`
 * voxels on every side (clamped to the volume); fails when nothing is
 * labelled. */
vox_status vox_labels_crop_to_content(vox_context *ctx, vox_labels *labels, int64_t margin);
/* Moves the labels (and intensities, with their units) into a new model:
 * the model's origin is the first voxel's corner. */
vox_status vox_labels_to_model(vox_context *ctx, vox_labels *labels, const char *intensity_units,
                               vox_model *model);

/* --- the whole path from an image to a model -------------------------------- */

#define VOX_MAX_THRESHOLDS 16

typedef enum vox_downsample_mode {
  VOX_DOWNSAMPLE_MAJORITY = 0, /* vote over the labels after segmentation */
  VOX_DOWNSAMPLE_MEAN = 1      /* average the values before segmentation */
} vox_downsample_mode;

typedef struct vox_segmentation {
  vox_value_units units;                 /* of the thresholds and the kept intensities */
  vox_linear calibration;                /* value -> density; known = 0: the file's */
  int otsu;                              /* 1: one threshold by Otsu's method */
  int n_thresholds;                      /* 1.. VOX_MAX_THRESHOLDS when !otsu */
  double thresholds[VOX_MAX_THRESHOLDS]; /* increasing */
  uint8_t labels[VOX_MAX_THRESHOLDS];    /* label of each class; 0: default */
  int roi_given;                         /* crop the image to [roi_lo, roi_hi) first */
  int64_t roi_lo[3], roi_hi[3];
  int downsample; /* factor >= 1 */
  vox_downsample_mode downsample_mode;
  int keep_largest;    /* largest face-connected component only */
  int crop;            /* crop to the labelled voxels ... */
  int64_t crop_margin; /* ... plus this many voxels */
  int keep_intensity;  /* store the values in model->intensity */
} vox_segmentation;

/* What the segmentation did, for the user. */
typedef struct vox_segmentation_report {
  double thresholds[VOX_MAX_THRESHOLDS]; /* as used (Otsu's computed) */
  int n_thresholds;
  char units[VOX_UNITS_MAX]; /* of the thresholds */
  int64_t labelled;          /* voxels over the first threshold */
  int64_t kept;              /* after the largest component */
} vox_segmentation_report;

/* The default labels of the classes: 1 (the design material) for the first,
 * then 4, 5, ... (2 and 3 are the problem file's passive solid and void). */
uint8_t vox_segmentation_default_label(int class_index);

/* Segments `image` (consumed: freed on return, success or not) into a new
 * model with its grid, labels and, when asked, intensities. A segmentation
 * that labels nothing fails with VOX_ERR_INVALID_ARGUMENT naming `path`. */
vox_status vox_image_segment(vox_context *ctx, const char *path, vox_image *image,
                             const vox_segmentation *seg, vox_model *model,
                             vox_segmentation_report *report);

#ifdef __cplusplus
}
#endif
#endif
