/* SPDX-License-Identifier: BSD-3-Clause */
/* A deflated byte variable of a netCDF-4 file read by inflating its chunks
 * in parallel.
 *
 * netCDF-C and HDF5 inflate a variable's chunks one after another on the
 * calling thread: on a clinical sample's labels that is most of reading the
 * model. The chunks are independent zlib streams, so the raw chunks are
 * read through HDF5 (H5Dread_chunk, one thread) and inflated by zlib on all
 * threads. Only the plain case is taken: an unsigned 8-bit dataset whose
 * filters are deflate alone, every chunk present, each inflating to exactly
 * a chunk; anything else (another filter, a missing chunk, a damaged
 * stream) is left to netCDF, whose reading says what is wrong. */
#ifndef VOXFE_CHUNK_INFLATE_H
#define VOXFE_CHUNK_INFLATE_H

#include <stddef.h>
#include <stdint.h>

/* Reads root-group variable `name` of file `path`, of the given shape
 * (slowest first), into `out` in netCDF's order. Returns 1 when read, 0
 * when not taken (the caller reads it through netCDF; `out` may then have
 * been partly written). */
int vox_read_deflated_bytes(const char *path, const char *name, int ndims, const size_t *shape,
                            uint8_t *out);

#endif
