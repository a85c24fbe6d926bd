/* SPDX-License-Identifier: BSD-3-Clause */
/* Private to export/: the VTK XML file writer that the .vti and .vtu writers
 * share. It writes every array in appended raw binary, zlib-compressed in
 * VTK's block layout with UInt64 headers, and replaces the output file
 * atomically.
 *
 * Use:
 *   vtkx_doc *doc;
 *   if ((s = vtkx_begin(ctx, &doc, path, "ImageData", arrays, n))) return s;
 *   vtkx_start(doc, "ImageData"); vtkx_attr(doc, "Spacing", "%g %g %g", ...);
 *   ... vtkx_data_array(doc, i) for each array, in any order ...
 *   vtkx_end(doc); ...
 *   return vtkx_finish(doc);
 * vtkx_begin compresses all arrays first, because the XML header must give
 * each array's offset in the appended section before the data follows.
 * vtkx_start/attr/end/data_array record the first failure in the document
 * instead of returning it, so that building the XML reads as a plain list;
 * vtkx_finish reports it, removes the temporary file and frees everything. */
#ifndef VOXFE_EXPORT_VTK_XML_H
#define VOXFE_EXPORT_VTK_XML_H

#include <stddef.h>
#include <stdint.h>

#include "voxfe/model.h"
#include "voxfe/result_file.h"

/* Value types, named in the file as VTK names them. A String array's values
 * are its bytes: the strings one after another, each ending in a NUL. */
typedef enum vtkx_type {
  VTKX_UINT8,
  VTKX_INT64,
  VTKX_FLOAT32,
  VTKX_FLOAT64,
  VTKX_STRING
} vtkx_type;

/* Writes values [first, first + count) of an array (value = one component of
 * one tuple) to dst, in the array's type and the host's byte order. It is
 * called from several threads at once for disjoint ranges, so it must only
 * read `source`. */
typedef void (*vtkx_fill_fn)(const void *source, uint64_t first, size_t count, void *dst);

typedef struct vtkx_array {
  const char *name;   /* the DataArray's Name */
  vtkx_type type;
  int components;     /* NumberOfComponents */
  uint64_t tuples;    /* number of points or cells; for a String, of bytes */
  uint64_t strings;   /* for a String: the number of strings (NumberOfTuples) */
  vtkx_fill_fn fill;
  const void *source; /* passed to fill */
  /* Set for computed floating-point fields (displacements): their low bits
   * are noise that no zlib level finds matches in, and zlib's run-length
   * strategy compresses them 4x faster for ~8% more bytes. Leave it 0 for
   * data with repeats (labels, 0/1 densities, grid coordinates, indices),
   * which the default strategy compresses far better. */
  int noisy;
  /* NULL, or one name per component (ComponentName0, ...: ParaView lists
   * them in its component menus) */
  const char *const *component_names;
} vtkx_array;

typedef struct vtkx_doc vtkx_doc;

/* Compresses the arrays (kept by pointer: they must outlive the document),
 * opens a temporary file beside `path` and writes the root element
 * <VTKFile type="`type`" ...>. On failure nothing is left on disk. */
vox_status vtkx_begin(vox_context *ctx, vtkx_doc **out, const char *path, const char *type,
                      const vtkx_array *arrays, size_t n_arrays);

/* Start an element, add an attribute to the element just started, end the
 * innermost open element. */
void vtkx_start(vtkx_doc *doc, const char *element);
void vtkx_attr(vtkx_doc *doc, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void vtkx_end(vtkx_doc *doc);
/* An attribute of three numbers, each in the shortest form that reads back as
 * the same double ("0.1", not "0.10000000000000001"). */
void vtkx_attr_vector(vtkx_doc *doc, const char *name, const double value[3]);

/* <DataArray type=... Name=... NumberOfComponents=... format="appended" offset=.../>
 * for arrays[index] of vtkx_begin. */
void vtkx_data_array(vtkx_doc *doc, size_t index);

/* <FieldData> with an <Array .../> for each of arrays [first, end) of
 * vtkx_begin: it goes first inside the dataset element (<ImageData>...). */
void vtkx_field_data(vtkx_doc *doc, size_t first, size_t end);

/* Closes the elements still open below <VTKFile>, writes the appended data,
 * and renames the file into place. On any failure so far (or now) it removes
 * the temporary file, leaves `path` as it was and returns the first error.
 * Always frees the document. */
vox_status vtkx_finish(vtkx_doc *doc);

/* Fill functions for the common cases: `source` is the first element of a
 * plain array (of doubles for float32_of_double, of bytes for the others). */
void vtkx_fill_uint8(const void *source, uint64_t first, size_t count, void *dst);
void vtkx_fill_bytes(const void *source, uint64_t first, size_t count, void *dst);
void vtkx_fill_float32_of_double(const void *source, uint64_t first, size_t count, void *dst);

/* --- String arrays of field data ---------------------------------------------- */

/* A growing list of strings, kept as a String array's bytes. */
typedef struct vtkx_strings {
  char *data;
  size_t size, capacity;
  uint64_t count;
} vtkx_strings;

/* Appends one string; -1 when out of memory (the list is then unchanged). */
int vtkx_strings_add(vtkx_strings *list, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void vtkx_strings_free(vtkx_strings *list);
/* The String array `name` of the list (kept by pointer). */
vtkx_array vtkx_string_array(const char *name, const vtkx_strings *list);

/* A double as Float32. Outside float's range a plain cast is undefined
 * behaviour, so those values saturate to +-infinity (NaN stays NaN). */
float vtkx_float32(double value);

/* --- shared by the writers ---------------------------------------------------- */

/* Checks what both model writers read from the model: a grid VTK can index
 * (extents are C ints), labels, load cases when there is a displacement, and
 * names (of load cases, the title) that are UTF-8 and distinct. */
vox_status vtkx_check_model(vox_context *ctx, const char *path, const vox_model *model);

/* The model's fields as the .vti and .vtu write them, over a set of points
 * and cells of the grid: `node_of_point` maps each point to its grid node,
 * `cell_of` each cell to its grid element, in ascending order (NULL: every
 * node or element, in grid order). The arrays, in the order of the file:
 *   field data  [0, first_point):          `units`, `title` (when the model
 *                                           has one)
 *   point data  [first_point, first_cell): displacement_<case> (mm),
 *                                           force_<case> (N), fixed,
 *                                           reaction (N; an analysis result)
 *   cell data   [first_cell, n):           label, density, and an analysis
 *                                           result's strain, stress,
 *                                           von_mises, strain_energy_density,
 *                                           effective_strain
 * and `extra` free slots from `n` on for the caller's own arrays (points,
 * cells). `units` names the unit of each array and of the coordinates. */
typedef struct vtkx_fields {
  vtkx_array *arrays;
  size_t n, first_point, first_cell;
  const char *vectors; /* the active point vectors, or NULL */
  const char *scalars; /* the active cell scalars */
  /* private */
  struct vtkx_fields_data *data;
} vtkx_fields;

/* Builds the arrays (the model is checked by vtkx_check_model first: the
 * node and component of every constraint and load, and the load cases of
 * loads, are checked here). `result` (NULL: none) adds an analysis
 * result's fields (vox_result_read of the model's file). Free with
 * vtkx_fields_free either way. */
vox_status vtkx_fields_init(vox_context *ctx, const char *path, const vox_model *model,
                            const vox_result_data *result,
                            const int64_t *node_of_point, uint64_t n_points,
                            const int64_t *cell_of, uint64_t n_cells, size_t extra,
                            vtkx_fields *fields);
void vtkx_fields_free(vtkx_fields *fields);

/* <FieldData>, to write right after the dataset element starts, and
 * <PointData> and <CellData>, inside the <Piece>. */
void vtkx_fields_field_data(vtkx_doc *doc, const vtkx_fields *fields);
void vtkx_fields_point_and_cell_data(vtkx_doc *doc, const vtkx_fields *fields);

#endif
