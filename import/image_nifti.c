/* NIfTI-1 and NIfTI-2 (.nii, .nii.gz, .hdr/.img) through nifticlib, which
 * reads both versions, either byte order and gzip. Spacing and origin come
 * from pixdim and the sform (else the qform), in the file's xyz units; the
 * scaling slope and intercept are applied. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <nifti2_io.h>

#include "image_internal.h"

/* The NIfTI datatypes voxfe reads, and their raw types. */
static int raw_type_of(int datatype, vox_raw_type *type) {
  switch (datatype) {
  case DT_UINT8: *type = VOX_RAW_U8; return 1;
  case DT_INT8: *type = VOX_RAW_I8; return 1;
  case DT_UINT16: *type = VOX_RAW_U16; return 1;
  case DT_INT16: *type = VOX_RAW_I16; return 1;
  case DT_UINT32: *type = VOX_RAW_U32; return 1;
  case DT_INT32: *type = VOX_RAW_I32; return 1;
  case DT_FLOAT32: *type = VOX_RAW_F32; return 1;
  case DT_FLOAT64: *type = VOX_RAW_F64; return 1;
  default: return 0;
  }
}

/* mm per unit of the file's xyz_units (0 = unknown: taken as mm, as most
 * tools do). */
static double mm_per_unit(int units) {
  switch (units) {
  case NIFTI_UNITS_METER: return 1000;
  case NIFTI_UNITS_MICRON: return 1e-3;
  default: return 1;
  }
}

vox_status vox_image_read_nifti(vox_context *ctx, const char *path, vox_image *image) {
  memset(image, 0, sizeof *image);
  uint64_t size;
  vox_status s = image_file_size(ctx, path, &size);
  if (s) return s;
  /* nifticlib prints its complaints; voxfe reports one line of its own */
  nifti_set_debug_level(0);
  nifti_image *nim = nifti_image_read(path, 0);
  if (!nim)
    return vox_error(ctx, VOX_ERR_FORMAT, "%s: not a readable NIfTI-1 or NIfTI-2 header", path);
  vox_raw_type type = VOX_RAW_U8;
  int64_t n[3] = {nim->nx, nim->ny, nim->nz};
  if (!raw_type_of(nim->datatype, &type)) {
    s = vox_error(ctx, VOX_ERR_UNSUPPORTED, "%s: NIfTI datatype %d (%s) is not read", path,
                  nim->datatype, nifti_datatype_string(nim->datatype));
  } else if (nim->ndim > 3 && nim->nvox != nim->nx * nim->ny * nim->nz) {
    s = vox_error(ctx, VOX_ERR_FORMAT, "%s: a %lld-dimensional image; voxfe reads 3D volumes",
                  path, (long long)nim->ndim);
  } else {
    size_t bytes;
    s = image_checked_size(ctx, path, n, (size_t)vox_image_raw_type_size(type), &bytes);
    /* an uncompressed file must hold the voxels: checked before a huge
     * allocation that a corrupt header would ask for */
    if (!s && !image_has_suffix(path, ".gz") && nim->nifti_type != NIFTI_FTYPE_NIFTI1_2 &&
        nim->nifti_type != NIFTI_FTYPE_NIFTI2_2 && nim->iname_offset >= 0 &&
        (uint64_t)nim->iname_offset + bytes > size)
      s = vox_error(ctx, VOX_ERR_FORMAT, "%s: truncated (%llu bytes of voxels at offset %lld, the "
                    "file has %llu)", path, (unsigned long long)bytes,
                    (long long)nim->iname_offset, (unsigned long long)size);
    if (!s && nifti_image_load(nim) != 0)
      s = vox_error(ctx, VOX_ERR_FORMAT, "%s: the voxel data are truncated or unreadable", path);
  }
  if (!s) s = vox_image_init(ctx, image, n);
  if (!s) {
    image_decode(nim->data, type, image_host_big_endian(), (size_t)vox_image_voxels(image), image->data);
    double unit = mm_per_unit(nim->xyz_units);
    double d[3] = {nim->dx, nim->dy, nim->dz};
    const nifti_dmat44 *m = nim->sform_code > 0 ? &nim->sto_xyz : &nim->qto_xyz;
    for (int a = 0; a < 3; a++) {
      image->spacing[a] = (d[a] > 0 ? d[a] : 1) * unit;
      image->origin[a] = (nim->sform_code > 0 || nim->qform_code > 0 ? m->m[a][3] : 0) * unit;
    }
    /* slope 0 means "not scaled" */
    if (nim->scl_slope != 0 && isfinite(nim->scl_slope) && isfinite(nim->scl_inter) &&
        (nim->scl_slope != 1 || nim->scl_inter != 0)) {
      float a = (float)nim->scl_slope, b = (float)nim->scl_inter;
      for (int64_t v = 0; v < vox_image_voxels(image); v++) image->data[v] = a * image->data[v] + b;
    }
    image->spacing_known = 1;
    snprintf(image->format, sizeof image->format, "NIfTI");
  }
  nifti_image_free(nim);
  if (s) vox_image_free(image);
  return s;
}
