/* SPDX-License-Identifier: BSD-3-Clause */
/* Arrays of a periodic unit cell (voxfe/tile.h). */
#include "voxfe/tile.h"

#include <stdlib.h>
#include <string.h>

/* Copies one array of `size`-byte values per element, tiled: each row of the
 * cell along x is copied tiles[0] times into every row of the array that
 * repeats it. */
static void tile_array(const vox_grid *cell, const int tiles[3], size_t size, const void *in,
                       void *out) {
  const int64_t nx = cell->nx, ny = cell->ny, nz = cell->nz;
  const int64_t NX = nx * tiles[0], NY = ny * tiles[1], NZ = nz * tiles[2];
  const size_t row = (size_t)nx * size;
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t k = 0; k < NZ; k++)
    for (int64_t j = 0; j < NY; j++) {
      const char *src = (const char *)in + (size_t)(((k % nz) * ny + j % ny) * nx) * size;
      char *dst = (char *)out + (size_t)((k * NY + j) * NX) * size;
      for (int t = 0; t < tiles[0]; t++) memcpy(dst + (size_t)t * row, src, row);
    }
}

vox_status vox_model_tile(vox_context *ctx, const vox_model *cell, const int tiles[3],
                          vox_model *out) {
  memset(out, 0, sizeof *out);
  int64_t total = vox_grid_elements(&cell->grid);
  for (int a = 0; a < 3; a++) {
    if (tiles[a] < 1)
      return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "tile count %d along %c must be at least 1",
                       tiles[a], "xyz"[a]);
    if (total > VOX_TILE_MAX_ELEMENTS / tiles[a])
      return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                       "an array of %d x %d x %d cells of %lld x %lld x %lld elements is larger "
                       "than the %lld elements supported",
                       tiles[0], tiles[1], tiles[2], (long long)cell->grid.nx,
                       (long long)cell->grid.ny, (long long)cell->grid.nz,
                       (long long)VOX_TILE_MAX_ELEMENTS);
    total *= tiles[a];
  }
  vox_grid grid = cell->grid;
  grid.nx *= tiles[0], grid.ny *= tiles[1], grid.nz *= tiles[2];
  vox_status st = vox_model_init(ctx, out, &grid);
  const size_t n = (size_t)total;
  if (st == VOX_OK && cell->density && !(out->density = malloc(n * sizeof *out->density)))
    st = vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory for the tiled density");
  if (st == VOX_OK && cell->intensity && !(out->intensity = malloc(n * sizeof *out->intensity)))
    st = vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory for the tiled intensity");
  for (int m = 0; st == VOX_OK && m < cell->n_materials; m++)
    st = vox_model_add_material(ctx, out, &cell->materials[m]);
  if (st == VOX_OK && cell->title && !(out->title = strdup(cell->title)))
    st = vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
  if (st != VOX_OK) {
    vox_model_free(out);
    return st;
  }
  out->stage = cell->stage;
  out->physics = cell->physics;
  memcpy(out->intensity_units, cell->intensity_units, sizeof out->intensity_units);
  tile_array(&cell->grid, tiles, 1, cell->label, out->label);
  if (cell->density)
    tile_array(&cell->grid, tiles, sizeof *out->density, cell->density, out->density);
  if (cell->intensity)
    tile_array(&cell->grid, tiles, sizeof *out->intensity, cell->intensity, out->intensity);
  return VOX_OK;
}
