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

/* Value types, named in the file as VTK names them. */
typedef enum vtkx_type { VTKX_UINT8, VTKX_INT64, VTKX_FLOAT32, VTKX_FLOAT64 } vtkx_type;

/* Writes values [first, first + count) of an array (value = one component of
 * one tuple) to dst, in the array's type and the host's byte order. It is
 * called from several threads at once for disjoint ranges, so it must only
 * read `source`. */
typedef void (*vtkx_fill_fn)(const void *source, uint64_t first, size_t count, void *dst);

typedef struct vtkx_array {
  const char *name;   /* the DataArray's Name */
  vtkx_type type;
  int components;     /* NumberOfComponents */
  uint64_t tuples;    /* number of points or cells */
  vtkx_fill_fn fill;
  const void *source; /* passed to fill */
  /* Set for computed floating-point fields (displacements): their low bits
   * are noise that no zlib level finds matches in, and zlib's run-length
   * strategy compresses them 4x faster for ~8% more bytes. Leave it 0 for
   * data with repeats (labels, 0/1 densities, grid coordinates, indices),
   * which the default strategy compresses far better. */
  int noisy;
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

/* <PointData Vectors=...> with arrays [0, first_cell) and <CellData
 * Scalars=...> with arrays [first_cell, end): the model's fields, laid out
 * the same in every file. `vectors` may be NULL (no displacement). */
void vtkx_point_and_cell_data(vtkx_doc *doc, const char *vectors, const char *scalars,
                              size_t first_cell, size_t end);

/* Closes the elements still open below <VTKFile>, writes the appended data,
 * and renames the file into place. On any failure so far (or now) it removes
 * the temporary file, leaves `path` as it was and returns the first error.
 * Always frees the document. */
vox_status vtkx_finish(vtkx_doc *doc);

/* Fill functions for the common cases: `source` is the first element of a
 * plain array. */
void vtkx_fill_uint8(const void *source, uint64_t first, size_t count, void *dst);
void vtkx_fill_float32_of_double(const void *source, uint64_t first, size_t count, void *dst);

/* A double as Float32. Outside float's range a plain cast is undefined
 * behaviour, so those values saturate to +-infinity (NaN stays NaN). */
float vtkx_float32(double value);

/* --- shared by the two model writers --------------------------------------- */

/* Checks what both writers read from the model: a grid VTK can index (extents
 * are C ints), labels, and load cases when there is a displacement. */
vox_status vtkx_check_model(vox_context *ctx, const char *path, const vox_model *model);

/* The point array name of load case `c`: "displacement_<case name>", where a
 * model without names gets "case<c+1>" as vox_model_set_load_cases does. */
#define VTKX_NAME_MAX (VOX_NAME_MAX + 16)
void vtkx_displacement_name(const vox_model *model, int c, char name[VTKX_NAME_MAX]);

#endif
