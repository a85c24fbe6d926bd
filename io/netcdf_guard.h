/* SPDX-License-Identifier: BSD-3-Clause */
/* What can be checked of a netCDF file before nc_open (private): a damaged
 * HDF5 superblock made libhdf5 1.10 free an invalid pointer inside nc_open
 * (found by mutating a model file). The netCDF and HDF5 libraries are not
 * ours to harden; the first bytes, which say where everything else lies,
 * are checked here so that such a file is refused with a message instead. */
#ifndef VOXFE_NETCDF_GUARD_H
#define VOXFE_NETCDF_GUARD_H

#include <stdio.h>

/* NULL when the file starts as a netCDF file should (classic "CDF" 1, 2 or
 * 5, or an HDF5 superblock of version 0 to 3 whose sizes, addresses and,
 * for versions 2 and 3, checksum are consistent with the file's `size`
 * bytes); otherwise what is wrong, for a message after the file's name. */
const char *vox_netcdf_header_problem(FILE *file, long long size);

#endif
