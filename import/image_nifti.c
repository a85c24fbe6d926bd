/* SPDX-License-Identifier: BSD-3-Clause */
/* NIfTI-1 and NIfTI-2 (.nii, .nii.gz, .hdr/.img) through nifticlib, which
 * reads both versions, either byte order and gzip. Spacing and origin come
 * from pixdim and the sform (else the qform), in the file's xyz units; the
 * scaling slope and intercept are applied. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <nifti2_io.h>
#include <zlib.h>

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

static uint64_t load_le(const unsigned char *p, int size, int swap) {
  uint64_t v = 0;
  for (int i = 0; i < size; i++) v |= (uint64_t)p[swap ? size - 1 - i : i] << (8 * i);
  return v;
}

/* nifticlib trusts dim[0] as an index into its arrays: a corrupt header with
 * dim[0] beyond 7 makes it write out of bounds. The header is checked here
 * first (gzread reads plain and gzip files alike). */
static vox_status check_header(vox_context *ctx, const char *path) {
  unsigned char h[544]; /* a NIfTI-2 header and its extension flag */
  gzFile z = gzopen(path, "rb");
  if (!z) return vox_error(ctx, VOX_ERR_IO, "%s: cannot open", path);
  int got = gzread(z, h, sizeof h);
  gzclose(z);
  if (got < 348) return vox_error(ctx, VOX_ERR_FORMAT, "%s: truncated (in the NIfTI header)", path);
  uint32_t size_le = (uint32_t)load_le(h, 4, 0), size_be = (uint32_t)load_le(h, 4, 1);
  int two = size_le == 540 || size_be == 540, swap = size_le != 348 && size_le != 540;
  if (!two && size_le != 348 && size_be != 348)
    return vox_error(ctx, VOX_ERR_FORMAT, "%s: not a NIfTI file (header size %u)", path, size_le);
  if (two && got < 540)
    return vox_error(ctx, VOX_ERR_FORMAT, "%s: truncated (in the NIfTI-2 header)", path);
  int64_t ndim = two ? (int64_t)load_le(h + 16, 8, swap) : (int16_t)load_le(h + 40, 2, swap);
  if (ndim < 1 || ndim > 7)
    return vox_error(ctx, VOX_ERR_FORMAT, "%s: not a valid NIfTI header (dim[0] = %lld)", path,
                     (long long)ndim);
  for (int d = 1; d <= ndim; d++) {
    int64_t n =
        two ? (int64_t)load_le(h + 16 + 8 * d, 8, swap) : (int16_t)load_le(h + 40 + 2 * d, 2, swap);
    if (n < 1)
      return vox_error(ctx, VOX_ERR_FORMAT, "%s: not a valid NIfTI header (dim[%d] = %lld)", path,
                       d, (long long)n);
  }
  /* the extensions between the header and the voxels: nifticlib allocates
   * what each says its size is, so each must fit before vox_offset */
  uint32_t bits = (uint32_t)load_le(h + 108, 4, swap);
  float offset_f;
  memcpy(&offset_f, &bits, sizeof offset_f);
  double vox_offset = two ? (double)(int64_t)load_le(h + 168, 8, swap) : offset_f;
  size_t header = two ? 540 : 348;
  if (!(vox_offset >= 0 && vox_offset < 1e12))
    return vox_error(ctx, VOX_ERR_FORMAT, "%s: not a valid NIfTI header (vox_offset)", path);
  if ((size_t)got < header + 4 || h[header] == 0 || vox_offset < (double)header + 4) return VOX_OK;
  z = gzopen(path, "rb");
  if (!z) return vox_error(ctx, VOX_ERR_IO, "%s: cannot open", path);
  vox_status status = VOX_OK;
  double at = (double)header + 4;
  while (at + 8 <= vox_offset) {
    unsigned char e[8];
    if (gzseek(z, (z_off_t)at, SEEK_SET) < 0 || gzread(z, e, 8) != 8) break; /* nifticlib stops */
    int32_t esize = (int32_t)load_le(e, 4, swap);
    if (esize < 16 || esize % 16 || at + esize > vox_offset) {
      status =
          vox_error(ctx, VOX_ERR_FORMAT, "%s: a corrupt NIfTI extension (size %d)", path, esize);
      break;
    }
    /* and in the file: a vox_offset far past its end otherwise lets a
     * small file ask nifticlib for gigabytes (found by the fuzzer) */
    unsigned char last;
    if (gzseek(z, (z_off_t)(at + esize - 1), SEEK_SET) < 0 || gzread(z, &last, 1) != 1) {
      status = vox_error(ctx, VOX_ERR_FORMAT,
                         "%s: truncated (a NIfTI extension of %d bytes past the end)", path, esize);
      break;
    }
    at += esize;
  }
  gzclose(z);
  return status;
}

vox_status vox_image_read_nifti(vox_context *ctx, const char *path, vox_image *image) {
  memset(image, 0, sizeof *image);
  uint64_t size;
  vox_status s = image_file_size(ctx, path, &size);
  if (!s) s = check_header(ctx, path);
  if (s) return s;
  /* nifticlib prints its complaints even at debug level 0; voxfe reports
   * one line of its own */
  nifti_set_debug_level(0);
  int quiet = image_quiet_begin();
  nifti_image *nim = nifti_image_read(path, 0);
  image_quiet_end(quiet);
  if (!nim)
    return vox_error(ctx, VOX_ERR_FORMAT, "%s: not a readable NIfTI-1 or NIfTI-2 header", path);
  vox_raw_type type = VOX_RAW_U8;
  int64_t n[3] = {nim->nx, nim->ny, nim->nz};
  if (!raw_type_of(nim->datatype, &type)) {
    s = vox_error(ctx, VOX_ERR_UNSUPPORTED, "%s: NIfTI datatype %d (%s) is not read", path,
                  nim->datatype, nifti_datatype_string(nim->datatype));
  } else if (nim->nt > 1 || nim->nu > 1 || nim->nv > 1 || nim->nw > 1) {
    s = vox_error(ctx, VOX_ERR_FORMAT, "%s: a %lld-dimensional image; voxfe reads 3D volumes", path,
                  (long long)nim->ndim);
  } else {
    size_t bytes;
    s = image_checked_size(ctx, path, n, (size_t)vox_image_raw_type_size(type), &bytes);
    /* an uncompressed data file (the .nii itself, or the .img of a pair)
     * must hold what nifti_image_load will allocate and read, nvox * nbyper
     * bytes at iname_offset: checked before a huge allocation that a
     * corrupt header would ask for (found by the fuzzer) */
    const uint64_t need = (uint64_t)nim->nvox * (uint64_t)(nim->nbyper > 0 ? nim->nbyper : 0);
    uint64_t data_size = size;
    if (!s && nim->iname && strcmp(nim->iname, path) != 0 && !image_has_suffix(nim->iname, ".gz"))
      s = image_file_size(ctx, nim->iname, &data_size);
    if (!s && nim->iname && !image_has_suffix(nim->iname, ".gz") &&
        (nim->iname_offset < 0 || need < bytes ||
         (uint64_t)nim->iname_offset + need > data_size))
      s = vox_error(ctx, VOX_ERR_FORMAT,
                    "%s: truncated (%llu bytes of voxels at offset %lld, the "
                    "data file has %llu)",
                    path, (unsigned long long)need, (long long)nim->iname_offset,
                    (unsigned long long)data_size);
    if (!s) {
      quiet = image_quiet_begin();
      int failed = nifti_image_load(nim) != 0;
      image_quiet_end(quiet);
      if (failed)
        s = vox_error(ctx, VOX_ERR_FORMAT, "%s: the voxel data are truncated or unreadable", path);
    }
  }
  if (!s) s = vox_image_init(ctx, image, n);
  if (!s) {
    image_decode(nim->data, type, image_host_big_endian(), (size_t)vox_image_voxels(image),
                 image->data);
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
