/* SPDX-License-Identifier: BSD-3-Clause */
/* A deflated byte variable read by inflating its chunks in parallel
 * (chunk_inflate.h). The raw chunks come from HDF5 1.10.5's chunk queries
 * (H5Dget_num_chunks, H5Dget_chunk_info, H5Dread_chunk) on the calling
 * thread; zlib inflates them on OpenMP's threads, each into a buffer of its
 * own, then copies the chunk's part of the variable into place. */
#include "chunk_inflate.h"

#include <hdf5.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

enum { MAX_RANK = 8 };

typedef struct raw_chunk {
  hsize_t offset[MAX_RANK];
  unsigned char *bytes;
  hsize_t size;
  unsigned filter_mask; /* bit 0 set: deflate skipped, the chunk stored as is */
} raw_chunk;

/* The chunk's part of the variable copied from `chunk` (cdims, C order)
 * into `out` (shape), row by row along the last dimension. */
static void place_chunk(int rank, const size_t *shape, const hsize_t *cdims,
                        const hsize_t *offset, const unsigned char *chunk, uint8_t *out) {
  size_t extent[MAX_RANK], at[MAX_RANK] = {0};
  for (int d = 0; d < rank; d++) {
    const size_t left = shape[d] - (size_t)offset[d];
    extent[d] = left < cdims[d] ? left : (size_t)cdims[d];
  }
  const int last = rank - 1;
  for (;;) {
    size_t src = 0, dst = 0;
    for (int d = 0; d < rank; d++) {
      src = src * (size_t)cdims[d] + (d < last ? at[d] : 0);
      dst = dst * shape[d] + (size_t)offset[d] + (d < last ? at[d] : 0);
    }
    memcpy(out + dst, chunk + src, extent[last]);
    int d = last - 1; /* the next row: an odometer over the dimensions before the last */
    while (d >= 0 && ++at[d] == extent[d]) at[d--] = 0;
    if (d < 0) return;
  }
}

/* The dataset's chunks read raw into `chunks` (n of them, every chunk of
 * the shape exactly once). Returns 1 on success. */
static int read_raw_chunks(hid_t dset, hid_t space, int rank, const size_t *shape, const hsize_t *cdims,
                           size_t chunk_bytes, raw_chunk *chunks, size_t n) {
  size_t grid[MAX_RANK];
  for (int d = 0; d < rank; d++) grid[d] = (shape[d] + cdims[d] - 1) / cdims[d];
  unsigned char *seen = calloc(n, 1);
  int ok = seen != NULL;
  for (size_t i = 0; ok && i < n; i++) {
    raw_chunk *c = &chunks[i];
    haddr_t address;
    ok = H5Dget_chunk_info(dset, space, (hsize_t)i, c->offset, &c->filter_mask, &address,
                           &c->size) >= 0 &&
         c->size > 0 && (c->filter_mask == 0 || c->filter_mask == 1);
    /* a stored chunk is no larger than its bytes plus zlib's bound */
    if (ok) ok = c->size <= compressBound((uLong)chunk_bytes);
    if (ok && c->filter_mask == 1) ok = c->size == chunk_bytes;
    size_t index = 0;
    for (int d = 0; ok && d < rank; d++) {
      ok = c->offset[d] % cdims[d] == 0 && c->offset[d] < shape[d];
      index = index * grid[d] + (size_t)(c->offset[d] / cdims[d]);
    }
    if (ok) ok = !seen[index]; /* each chunk once */
    if (ok) seen[index] = 1;
    if (ok) ok = (c->bytes = malloc((size_t)c->size)) != NULL;
    uint32_t mask = 0;
    if (ok) ok = H5Dread_chunk(dset, H5P_DEFAULT, c->offset, &mask, c->bytes) >= 0;
    if (ok) ok = mask == c->filter_mask;
  }
  free(seen);
  return ok;
}

/* Whether the dataset is what this reader takes: unsigned bytes of the
 * given shape in chunks with deflate alone. Sets cdims. */
static int plain_deflated_bytes(hid_t dset, int rank, const size_t *shape, hsize_t *cdims) {
  int ok = 0;
  hid_t type = H5Dget_type(dset), space = H5Dget_space(dset), dcpl = H5Dget_create_plist(dset);
  if (type >= 0 && space >= 0 && dcpl >= 0) {
    hsize_t dims[MAX_RANK];
    ok = H5Tget_class(type) == H5T_INTEGER && H5Tget_size(type) == 1 &&
         H5Tget_sign(type) == H5T_SGN_NONE && H5Sget_simple_extent_ndims(space) == rank &&
         H5Sget_simple_extent_dims(space, dims, NULL) == rank &&
         H5Pget_layout(dcpl) == H5D_CHUNKED && H5Pget_chunk(dcpl, rank, cdims) == rank &&
         H5Pget_nfilters(dcpl) == 1;
    for (int d = 0; ok && d < rank; d++) ok = dims[d] == shape[d] && cdims[d] > 0;
    if (ok) {
      unsigned flags, config;
      unsigned values[8];
      size_t n_values = 8;
      ok = H5Pget_filter2(dcpl, 0, &flags, &n_values, values, 0, NULL, &config) ==
           H5Z_FILTER_DEFLATE;
    }
  }
  if (dcpl >= 0) H5Pclose(dcpl);
  if (space >= 0) H5Sclose(space);
  if (type >= 0) H5Tclose(type);
  return ok;
}

/* Inflates every chunk (or takes it as stored) into place; 1 when all did
 * to exactly a chunk's bytes. */
static int inflate_chunks(const raw_chunk *chunks, size_t n, int rank, const size_t *shape,
                          const hsize_t *cdims, size_t chunk_bytes, uint8_t *out) {
  int bad = 0;
  const ptrdiff_t count = (ptrdiff_t)n;
#pragma omp parallel reduction(| : bad)
  {
    unsigned char *buffer = malloc(chunk_bytes);
    bad |= buffer == NULL;
#pragma omp for schedule(dynamic, 1)
    for (ptrdiff_t i = 0; i < count; i++) {
      const raw_chunk *c = &chunks[i];
      if (!buffer) continue;
      const unsigned char *chunk = c->bytes;
      if (c->filter_mask == 0) {
        uLongf length = (uLongf)chunk_bytes;
        if (uncompress(buffer, &length, c->bytes, (uLong)c->size) != Z_OK ||
            length != chunk_bytes) {
          bad = 1;
          continue;
        }
        chunk = buffer;
      }
      place_chunk(rank, shape, cdims, c->offset, chunk, out);
    }
    free(buffer);
  }
  return !bad;
}

int vox_read_deflated_bytes(const char *path, const char *name, int rank, const size_t *shape,
                            uint8_t *out) {
  if (rank < 1 || rank > MAX_RANK) return 0;
  /* HDF5 prints its error stack unless told not to (this thread's) */
  H5E_auto2_t report;
  void *report_data;
  H5Eget_auto2(H5E_DEFAULT, &report, &report_data);
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  int done = 0;
  raw_chunk *chunks = NULL;
  hsize_t n = 0;
  hid_t dset = -1;
  /* netCDF holds the file open already: HDF5 opens it again only with the
   * same closing degree, netCDF-C 4.9's being the library's default (weak);
   * where it is not, the open fails and netCDF reads the variable */
  const hid_t file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  if (file >= 0) dset = H5Dopen2(file, name, H5P_DEFAULT);
  hsize_t cdims[MAX_RANK];
  size_t chunk_bytes = 1, expected = 1;
  int ok = dset >= 0 && plain_deflated_bytes(dset, rank, shape, cdims);
  for (int d = 0; ok && d < rank; d++) {
    const size_t along = (shape[d] + cdims[d] - 1) / cdims[d];
    /* (HDF5 keeps a chunk under 4 GiB; the product stays far from overflow) */
    ok = cdims[d] <= ((size_t)1 << 32) && chunk_bytes <= ((size_t)1 << 32) / cdims[d];
    chunk_bytes *= ok ? (size_t)cdims[d] : 1;
    expected *= along;
  }
  /* (HDF5 1.10 takes no H5S_ALL in the chunk queries) */
  const hid_t space = ok ? H5Dget_space(dset) : -1;
  if (ok) ok = space >= 0 && H5Dget_num_chunks(dset, space, &n) >= 0 && n == expected && n > 0;
  if (ok) ok = (chunks = calloc((size_t)n, sizeof *chunks)) != NULL;
  if (ok) ok = read_raw_chunks(dset, space, rank, shape, cdims, chunk_bytes, chunks, (size_t)n);
  if (ok) done = inflate_chunks(chunks, (size_t)n, rank, shape, cdims, chunk_bytes, out);
  for (hsize_t i = 0; chunks && i < n; i++) free(chunks[i].bytes);
  free(chunks);
  if (space >= 0) H5Sclose(space);
  if (dset >= 0) H5Dclose(dset);
  if (file >= 0) H5Fclose(file);
  H5Eset_auto2(H5E_DEFAULT, report, report_data);
  return done;
}
