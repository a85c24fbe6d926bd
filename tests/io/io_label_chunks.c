/* SPDX-License-Identifier: BSD-3-Clause */
/* io: the labels' chunks inflated in parallel (io/chunk_inflate.c) give
 * what netCDF reads, and every storage the fast path does not take is
 * left to netCDF: files written here through netCDF-C, with chunks that
 * cut the box on every axis, one chunk of the whole box, and the
 * storages it declines (contiguous, shuffle before deflate, Fletcher-32,
 * a wider type, a chunk never written, a damaged stream). */
#include <hdf5.h>
#include <netcdf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../check.h"
#include "chunk_inflate.h"

enum { NZ = 23, NY = 29, NX = 37, N = NZ * NY * NX };

typedef enum { DEFLATE, CONTIGUOUS, SHUFFLE, FLETCHER, WIDE, PARTIAL } storage;

/* A file with variable "label" (z, y, x) of pattern `v`, stored as asked. */
static void write_file(const char *path, storage how, const size_t chunk[3], const uint8_t *v) {
  int ncid, dims[3], varid;
  CHECK(nc_create(path, NC_NETCDF4 | NC_CLOBBER, &ncid) == NC_NOERR);
  CHECK(nc_def_dim(ncid, "z", NZ, &dims[0]) == NC_NOERR);
  CHECK(nc_def_dim(ncid, "y", NY, &dims[1]) == NC_NOERR);
  CHECK(nc_def_dim(ncid, "x", NX, &dims[2]) == NC_NOERR);
  CHECK(nc_def_var(ncid, "label", how == WIDE ? NC_SHORT : NC_UBYTE, 3, dims, &varid) ==
        NC_NOERR);
  if (how == CONTIGUOUS) {
    CHECK(nc_def_var_chunking(ncid, varid, NC_CONTIGUOUS, NULL) == NC_NOERR);
  } else {
    CHECK(nc_def_var_chunking(ncid, varid, NC_CHUNKED, chunk) == NC_NOERR);
    CHECK(nc_def_var_deflate(ncid, varid, how == SHUFFLE, 1, 1) == NC_NOERR);
    if (how == FLETCHER) CHECK(nc_def_var_fletcher32(ncid, varid, NC_FLETCHER32) == NC_NOERR);
  }
  CHECK(nc_enddef(ncid) == NC_NOERR);
  if (how == PARTIAL) { /* the first layers only: the chunks past them never written */
    const size_t start[3] = {0, 0, 0}, count[3] = {chunk[0], NY, NX};
    CHECK(nc_put_vara_uchar(ncid, varid, start, count, v) == NC_NOERR);
  } else {
    CHECK(nc_put_var_uchar(ncid, varid, v) == NC_NOERR);
  }
  CHECK(nc_close(ncid) == NC_NOERR);
}

static void read_netcdf(const char *path, uint8_t *out) {
  int ncid, varid;
  CHECK(nc_open(path, NC_NOWRITE, &ncid) == NC_NOERR);
  CHECK(nc_inq_varid(ncid, "label", &varid) == NC_NOERR);
  CHECK(nc_get_var_uchar(ncid, varid, out) == NC_NOERR);
  nc_close(ncid);
}

static const size_t shape[3] = {NZ, NY, NX};

/* Read by the fast path while netCDF holds the file open, as the model
 * reader does: taken, and equal to netCDF's reading. */
static void check_taken(const char *path, const uint8_t *v) {
  static uint8_t fast[N], slow[N];
  int ncid;
  CHECK(nc_open(path, NC_NOWRITE, &ncid) == NC_NOERR);
  memset(fast, 0xee, sizeof fast);
  CHECK(vox_read_deflated_bytes(path, "label", 3, shape, fast) == 1);
  nc_close(ncid);
  read_netcdf(path, slow);
  CHECK(memcmp(fast, slow, N) == 0);
  CHECK(memcmp(fast, v, N) == 0);
}

static void check_declined(const char *path) {
  static uint8_t out[N];
  CHECK(vox_read_deflated_bytes(path, "label", 3, shape, out) == 0);
}

/* One byte in the middle of the first chunk's stream flipped: declined
 * (zlib's checksum), and netCDF fails on it too. */
static void check_damaged(const char *path) {
  hid_t file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  hid_t dset = H5Dopen2(file, "label", H5P_DEFAULT), space = H5Dget_space(dset);
  hsize_t offset[3];
  unsigned mask;
  haddr_t address = 0;
  hsize_t size = 0;
  CHECK(H5Dget_chunk_info(dset, space, 0, offset, &mask, &address, &size) >= 0);
  H5Sclose(space), H5Dclose(dset), H5Fclose(file);
  CHECK(size > 8);
  FILE *f = fopen(path, "r+b");
  CHECK(f != NULL);
  if (!f) return;
  const long at = (long)(address + size / 2);
  CHECK(fseek(f, at, SEEK_SET) == 0);
  const int byte = fgetc(f);
  CHECK(fseek(f, at, SEEK_SET) == 0);
  fputc(byte ^ 0x5a, f);
  fclose(f);
  check_declined(path);
  static uint8_t out[N];
  int ncid, varid;
  CHECK(nc_open(path, NC_NOWRITE, &ncid) == NC_NOERR);
  CHECK(nc_inq_varid(ncid, "label", &varid) == NC_NOERR);
  CHECK(nc_get_var_uchar(ncid, varid, out) != NC_NOERR);
  nc_close(ncid);
}

int main(void) {
  static uint8_t v[N];
  for (int i = 0; i < N; i++) v[i] = (uint8_t)((i * 7919u) >> 5 & 3) * (i % 11 != 0);
  char dir[] = "io_label_chunks.XXXXXX", path[64];
  CHECK(mkdtemp(dir) != NULL);
  snprintf(path, sizeof path, "%s/labels.nc", dir);

  const size_t cut[3] = {5, 7, 9}; /* 5 x 5 x 5 chunks, the last on each axis partial */
  const size_t whole[3] = {NZ, NY, NX}; /* one chunk, the box */
  write_file(path, DEFLATE, cut, v);
  check_taken(path, v);
  write_file(path, DEFLATE, whole, v);
  check_taken(path, v);
  const storage declined[] = {CONTIGUOUS, SHUFFLE, FLETCHER, WIDE, PARTIAL};
  for (size_t i = 0; i < sizeof declined / sizeof *declined; i++) {
    write_file(path, declined[i], cut, v);
    check_declined(path);
  }
  /* not a variable of the file, not an HDF5 file */
  write_file(path, DEFLATE, cut, v);
  static uint8_t out[N];
  CHECK(vox_read_deflated_bytes(path, "missing", 3, shape, out) == 0);
  const size_t other[3] = {NZ, NY, NX + 1};
  CHECK(vox_read_deflated_bytes(path, "label", 3, other, out) == 0);
  check_damaged(path);
  FILE *f = fopen(path, "wb");
  if (f) fputs("CDF\001 not an HDF5 file", f), fclose(f);
  check_declined(path);
  unlink(path);
  rmdir(dir);
  CHECK_DONE();
}
