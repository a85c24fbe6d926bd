/* SPDX-License-Identifier: BSD-3-Clause */
/* The checks of a netCDF file's first bytes before nc_open (netcdf_guard.h).
 * The HDF5 superblock layout and its checksum (Bob Jenkins' lookup3
 * "hashlittle", initial value 0) are those of the HDF5 file format
 * specification, version 3.0, section II.A. */
#include "netcdf_guard.h"

#include <stdint.h>
#include <string.h>

static const unsigned char hdf5_signature[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};

#define ROT(x, k) (((x) << (k)) | ((x) >> (32 - (k))))

/* lookup3's hashlittle over `length` bytes, byte by byte (the HDF5
 * library's H5_checksum_lookup3). */
static uint32_t lookup3(const unsigned char *k, size_t length) {
  uint32_t a, b, c;
  a = b = c = 0xdeadbeef + (uint32_t)length;
  while (length > 12) {
    a += k[0] + ((uint32_t)k[1] << 8) + ((uint32_t)k[2] << 16) + ((uint32_t)k[3] << 24);
    b += k[4] + ((uint32_t)k[5] << 8) + ((uint32_t)k[6] << 16) + ((uint32_t)k[7] << 24);
    c += k[8] + ((uint32_t)k[9] << 8) + ((uint32_t)k[10] << 16) + ((uint32_t)k[11] << 24);
    a -= c; a ^= ROT(c, 4); c += b;
    b -= a; b ^= ROT(a, 6); a += c;
    c -= b; c ^= ROT(b, 8); b += a;
    a -= c; a ^= ROT(c, 16); c += b;
    b -= a; b ^= ROT(a, 19); a += c;
    c -= b; c ^= ROT(b, 4); b += a;
    length -= 12;
    k += 12;
  }
  switch (length) { /* the last bytes; every case falls through */
  case 12: c += (uint32_t)k[11] << 24; /* fall through */
  case 11: c += (uint32_t)k[10] << 16; /* fall through */
  case 10: c += (uint32_t)k[9] << 8; /* fall through */
  case 9: c += k[8]; /* fall through */
  case 8: b += (uint32_t)k[7] << 24; /* fall through */
  case 7: b += (uint32_t)k[6] << 16; /* fall through */
  case 6: b += (uint32_t)k[5] << 8; /* fall through */
  case 5: b += k[4]; /* fall through */
  case 4: a += (uint32_t)k[3] << 24; /* fall through */
  case 3: a += (uint32_t)k[2] << 16; /* fall through */
  case 2: a += (uint32_t)k[1] << 8; /* fall through */
  case 1: a += k[0]; break;
  case 0: return c;
  }
  c ^= b; c -= ROT(b, 14);
  a ^= c; a -= ROT(c, 11);
  b ^= a; b -= ROT(a, 25);
  c ^= b; c -= ROT(b, 16);
  a ^= c; a -= ROT(c, 4);
  b ^= a; b -= ROT(a, 14);
  c ^= b; c -= ROT(b, 24);
  return c;
}

/* A little-endian unsigned integer of `size` bytes (at most 8 counted;
 * "undefined" addresses are all ones). */
static uint64_t le(const unsigned char *p, int size) {
  uint64_t v = 0;
  for (int i = size < 8 ? size - 1 : 7; i >= 0; i--) v = v << 8 | p[i];
  return v;
}

static int valid_size(int s) { return s == 2 || s == 4 || s == 8 || s == 16 || s == 32; }

/* The superblock at `sb` (read into `b`, `n` bytes of it there). */
static const char *check_superblock(const unsigned char *b, size_t n, long long sb,
                                    long long size) {
  const int version = b[8];
  if (version > 3) return "an HDF5 superblock of an unknown version (damaged)";
  int so, sl;
  size_t at;
  if (version >= 2) {
    so = b[9], sl = b[10];
    at = 12;
  } else {
    so = b[13], sl = b[14];
    at = version == 0 ? 24 : 28;
  }
  if (!valid_size(so) || !valid_size(sl) || so > 8)
    return "an HDF5 superblock with impossible sizes of addresses (damaged)";
  /* base, (v0/1: free space | v2/3: extension), end of file, (v0/1:
   * driver | v2/3: root object header) */
  const size_t end = at + 4 * (size_t)so + (version >= 2 ? 4 : 0);
  if (end > n) return "truncated in its HDF5 superblock";
  const uint64_t base = le(b + at, so), eof = le(b + at + 2 * (size_t)so, so);
  /* addresses count from the base, the superblock's own place as a rule */
  if (base > (uint64_t)sb) return "an HDF5 superblock whose base address is wrong (damaged)";
  /* The library truncates a file to its end of file when it closes it: a
   * shorter file lost bytes, a longer one gained some, and either shifts
   * the structures the superblock points to (libhdf5 1.10 freed an
   * invalid pointer in nc_open on a file with one byte inserted). */
  if (eof != (uint64_t)size - base || eof < end)
    return "an HDF5 superblock whose end of file does not match the file's size (truncated, "
           "or bytes lost or inserted)";
  if (version >= 2) {
    const uint64_t root = le(b + at + 3 * (size_t)so, so);
    if (root < end || root >= eof)
      return "an HDF5 superblock whose root group lies outside the file";
    const uint32_t stored = (uint32_t)le(b + end - 4, 4);
    if (lookup3(b, end - 4) != stored)
      return "an HDF5 superblock whose checksum is wrong (damaged)";
  } else {
    /* the root group's symbol table entry: link name offset, then the
     * object header address */
    const size_t entry = at + 4 * (size_t)so;
    if (entry + 2 * (size_t)so > n) return "truncated in its HDF5 superblock";
    const uint64_t root = le(b + entry + so, so);
    if (root >= eof) return "an HDF5 superblock whose root group lies outside the file";
  }
  return NULL;
}

const char *vox_netcdf_header_problem(FILE *file, long long size) {
  unsigned char b[256];
  if (size < 8) return "not a netCDF file or truncated (too short)";
  if (fseek(file, 0, SEEK_SET) != 0) return NULL; /* not seekable: left to nc_open */
  size_t n = fread(b, 1, sizeof b, file);
  if (n >= 4 && !memcmp(b, "CDF", 3) && (b[3] == 1 || b[3] == 2 || b[3] == 5)) return NULL;
  /* HDF5 looks for its signature at 0, 512, 1024, 2048, ... (a user block
   * may come first) */
  for (long long sb = 0; sb + 8 <= size; sb = sb ? 2 * sb : 512) {
    if (sb && (fseek(file, (long)sb, SEEK_SET) != 0 || (n = fread(b, 1, sizeof b, file)) < 8))
      break;
    if (!memcmp(b, hdf5_signature, 8)) return check_superblock(b, n, sb, size);
  }
  return "not a netCDF file or truncated (neither netCDF-4/HDF5 nor classic netCDF)";
}
