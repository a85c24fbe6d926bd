/* SPDX-License-Identifier: BSD-3-Clause */
/* VTK XML writers (appended binary, zlib-compressed, UInt64 headers), written
 * with libxml2: what ParaView opens.
 *
 * The model files (.vti, .vtu) hold every field of the model:
 *   cell data   label       UInt8, the material label (0 = empty)
 *               density     Float32, when the model has one (the active Scalars,
 *                           else label)
 *   point data  displacement_<case>  Float32 x 3 (mm), per load case, when the
 *                           model has a displacement (the first case's is the
 *                           active Vectors)
 *               force_<case>  Float32 x 3 (N), per load case, when the model
 *                           has loads: the nodal forces of the case, summed
 *                           per node, 0 elsewhere (the active Vectors when
 *                           there is no displacement)
 *               fixed       UInt8, when the model has constraints: a bit mask
 *                           of the constrained components of each node, 1 x,
 *                           2 y, 4 z (7: fully fixed; 0: free). A non-zero
 *                           prescribed value shows only as a constrained bit.
 * <case> is the load case's name, or case<N> for a model without names.
 * An analysis result (voxfe-analyze's file; vox_write_result_vti/vtu) adds
 *   cell data   strain      Float32 x 6 (1), stress Float32 x 6 (MPa): at the
 *                           element centre, as VTK's symmetric tensors order
 *                           them (components XX, YY, ZZ, XY, YZ, XZ, named so
 *                           in the file), the strain's shear components as
 *                           tensor components (half the engineering shear
 *                           strains that the result file stores)
 *               von_mises   Float32 (MPa, the active Scalars)
 *               strain_energy_density  Float32 (MPa = mJ/mm^3)
 *               effective_strain  Float32 (1)
 *                           each NaN on the cells that are not bone (the
 *                           result has fields over the non-empty voxels only)
 *   point data  reaction    Float32 x 3 (N): the support's reaction force at
 *                           the constrained nodes, 0 elsewhere
 *
 * Units: VTK XML has no attribute for them, so every file carries field data
 * (a <FieldData> of the dataset, which ParaView lists in the Information
 * panel and the spreadsheet view's Field Data):
 *   units       String array, one "name: unit" per array of the file plus
 *               "coordinates: mm" (points, origin and spacing); units as in
 *               docs/file-format.md: "mm", "N", "1" (a fraction: density),
 *               "-" (a code or direction: label, fixed, normals), e.g.
 *               "coordinates: mm", "displacement_lift: mm", "force_lift: N",
 *               "fixed: -", "label: -", "density: 1", "stress: MPa"
 *   title       String array of one string, the model's title, when it has one
 *               (.vti and .vtu)
 * Read them in Python as
 *   f = reader.GetOutput().GetFieldData().GetAbstractArray("units")
 *   [f.GetValue(i) for i in range(f.GetNumberOfValues())]
 *
 * Density, displacement, force and normals are written as Float32 (viewing
 * precision; the netCDF file keeps the doubles). The output replaces `path`
 * atomically (a temporary file renamed into place) and leaves it untouched on
 * failure. Compression runs on the context's threads. */
#ifndef VOXFE_VTK_H
#define VOXFE_VTK_H

#include "voxfe/model.h"
#include "voxfe/result_file.h"
#include "voxfe/surface.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ImageData (.vti) of the whole grid with every field above. Fails on an
 * invalid model (a constraint or load outside the grid, names that are not
 * UTF-8 or that clash). */
vox_status vox_write_vti(vox_context *ctx, const char *path, const vox_model *model);

/* UnstructuredGrid (.vtu) of the hexahedra (VTK_HEXAHEDRON) whose density is
 * >= threshold (or, without density, whose label is non-zero: the threshold
 * is then ignored), with the same
 * cell, point and field arrays as the .vti, restricted to the kept cells and
 * their nodes; points are Float64. Fails if no cell is kept. */
vox_status vox_write_vtu(vox_context *ctx, const char *path, const vox_model *model,
                         double threshold);

/* The same two with an analysis result's fields and reactions (`result`
 * from vox_result_read of the model's file; NULL: none, as the two
 * above). */
vox_status vox_write_result_vti(vox_context *ctx, const char *path, const vox_model *model,
                                const vox_result_data *result);
vox_status vox_write_result_vtu(vox_context *ctx, const char *path, const vox_model *model,
                                double threshold, const vox_result_data *result);

/* A collection (.pvd) of the density snapshots that voxfe-optimize saved
 * (model->n_snapshots, --snapshot-every N), for ParaView's time controls:
 * one ImageData per snapshot beside `path`, named <stem>_<iteration>.vti
 * (iteration zero-padded to 4 digits; <stem> is `path` less ".pvd"), with
 * the .vti's fields except the displacements (which belong to the final
 * design only) and the snapshot's density; the collection's timestep is the
 * design iteration. When the final design (model->density, after the last
 * history row) is not the last snapshot, it is added as the last frame.
 * Fails (VOX_ERR_INVALID_ARGUMENT) without snapshots or with a path not
 * ending in .pvd. Each file is written atomically, the .pvd last; on failure
 * the .vti files written by this call are removed again. */
vox_status vox_write_pvd(vox_context *ctx, const char *path, const vox_model *model);

/* PolyData (.vtp) of a triangle surface (see surface.h): Float64 points (mm),
 * the triangles as polys (Int64 connectivity and offsets), point data
 * `normals` (Float32 x 3, the active Normals): area-weighted vertex normals,
 * of unit length, pointing outwards for an outward-oriented surface (0 where
 * the triangles around a vertex cancel out); field data `units`
 * ("coordinates: mm", "normals: -"). Fails on a surface without triangles or
 * with a vertex index out of range. */
vox_status vox_write_vtp(vox_context *ctx, const char *path, const vox_surface *surface);

#ifdef __cplusplus
}
#endif
#endif
