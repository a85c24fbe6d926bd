/* SPDX-License-Identifier: BSD-3-Clause */
/* Numerics88's n88model files (netCDF-4, Conventions
 * "Numerics88/Finite_Element_Model-1.0"), as vtkbone and n88tools describe
 * them: so that voxfe solves models that n88modelgenerator wrote, and
 * n88tools (n88postfaim) post-processes voxfe's results.
 *
 * The file is an unstructured hexahedral mesh: Parts/Part1 holds
 * NodeCoordinates (NumberOfNodes x 3) and Elements/Hexahedrons with
 * NodeNumbers (NumberOfElements x 8, VTK_VOXEL order, 1-based) and
 * MaterialID; MaterialDefinitions/<name> hold the materials (Type, E, nu)
 * and Parts/Part1/MaterialTable maps IDs to names; Constraints/<name> are
 * node lists (NodeNumber 1-based, Sense 1 = x, 2 = y, 3 = z, Value) of Type
 * NodeAxisDisplacement or NodeAxisForce; Problems/Problem1 names its Part and
 * Constraints; Sets hold node and element sets; Solutions/Solution1 holds
 * NodeValues (Displacement, ReactionForce) and ElementValues (Strain, Stress
 * in the order xx, yy, zz, yz, zx, xy with engineering shear strains,
 * StrainEnergyDensity, VonMisesStress). */
#ifndef VOXFE_N88MODEL_H
#define VOXFE_N88MODEL_H

#include "voxfe/model.h"
#include "voxfe/result_file.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Reads an n88model into a zeroed voxfe model: the mesh must be a voxel
 * mesh (every element an axis-aligned box of one size on one grid, its
 * corners in VTK_VOXEL order; coordinates within 1e-4 of a voxel of the
 * grid, as float32 coordinates are), the materials LinearIsotropic with IDs
 * 1..255; the active problem's displacement constraints become constraints
 * and its force constraints the loads of one load case. Solutions are not
 * read. Errors name the file and the problem: VOX_ERR_IO, VOX_ERR_FORMAT,
 * VOX_ERR_UNSUPPORTED. */
vox_status vox_n88model_read(vox_context *ctx, const char *path, vox_model *model);

/* What an n88model says beyond a voxel model: the names and types of the
 * problem's constraint groups, its convergence set, its node and element
 * sets, its post-processing lists and its Log. Read with the model, so that
 * a result written for the same model keeps them (the sets on the grid's
 * nodes and elements: renumbered with the mesh written). */
typedef struct vox_n88model_extras vox_n88model_extras;

/* vox_n88model_read, and the extras into *extras (free with
 * vox_n88model_extras_free; NULL is freed as nothing). */
vox_status vox_n88model_read_extras(vox_context *ctx, const char *path, vox_model *model,
                                    vox_n88model_extras **extras);
void vox_n88model_extras_free(vox_n88model_extras *extras);

/* How the file written names its constraints and sets, as Faim's tools
 * (n88modelgenerator, n88solver, n88postfaim) do:
 * - `extras` (an input's, whose constraints and loads the model still holds
 *   unchanged, in the order read, constraints added after them in a group
 *   pinned_nodes): its groups, convergence set, sets and lists, under their
 *   names;
 * - otherwise a compression test along `axis` (0..2) of kind `test`
 *   (vox_compression_test): groups bottom_fixed, top_fixed,
 *   top_displacement, pinned_nodes and face_<a><0|1>_fixed as vtkbone's
 *   compression test names them, the convergence set (the top plate's
 *   displaced dofs, "convergence_set"), node and element sets face_x0 ...
 *   face_z1 (the nodes on each face of the grid's box, the elements in the
 *   layer at it), the test's two faces listed for post-processing;
 * - otherwise (axis -1) the groups "displacements" and "loads".
 * NULL: the last. */
typedef struct vox_n88model_layout {
  int axis;
  int test;
  const vox_n88model_extras *extras;
} vox_n88model_layout;

/* Writes `model` as an n88model: its non-empty voxels as hexahedra (nodes
 * and elements numbered in grid order over those used, corners in VTK_VOXEL
 * order, coordinates float32 as n88modelgenerator writes them, the exact
 * grid in attributes voxfe_grid_size, voxfe_grid_origin and
 * voxfe_voxel_size), a LinearIsotropic material per label, its constraints
 * and loads of load case 0 (named as `layout` says), History and Log, and,
 * when `output` is not NULL, the solution (model->displacement in double,
 * the output's reactions and fields in float, as Faim stores them). The
 * file replaces `path` atomically. */
vox_status vox_n88model_write(vox_context *ctx, const char *path, const vox_model *model,
                              const vox_analysis_output *output,
                              const vox_n88model_layout *layout);

/* The same file with a solution, written beside the analysis by a thread
 * of its own: vox_n88model_writer_start writes the mesh, materials,
 * constraints, sets and problem at once (the model and the layout's extras
 * must not change until the writer ends); the displacement once
 * vox_n88model_writer_put_displacement says model->displacement holds the
 * solution; the reactions and fields once vox_n88model_writer_put_fields
 * hands them over (the caller may go on with its statistics meanwhile), or
 * vox_n88model_writer_finish does (`output` NULL after put_fields), which
 * then waits for the file to be in place and returns the writing's status.
 * put_fields refuses missing fields or fields over other elements (nothing
 * handed over: cancel the writer). vox_n88model_writer_cancel stops it
 * instead: no file. Finish or cancel ends the writer. */
typedef struct vox_n88model_writer vox_n88model_writer;
vox_status vox_n88model_writer_start(vox_context *ctx, const char *path, const vox_model *model,
                                     const vox_n88model_layout *layout,
                                     vox_n88model_writer **writer);
/* The solver iterates (the host mostly idle): the writer deflates the mesh
 * then. Optional. */
void vox_n88model_writer_solving(vox_n88model_writer *writer);
void vox_n88model_writer_put_displacement(vox_n88model_writer *writer);
vox_status vox_n88model_writer_put_fields(vox_context *ctx, vox_n88model_writer *writer,
                                          const double *reaction,
                                          const vox_element_fields *fields);
vox_status vox_n88model_writer_finish(vox_context *ctx, vox_n88model_writer *writer,
                                      const vox_analysis_output *output);
void vox_n88model_writer_cancel(vox_n88model_writer *writer);

#ifdef __cplusplus
}
#endif
#endif
