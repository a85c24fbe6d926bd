/* Numerics88's n88model files (netCDF-4, Conventions
 * "Numerics88/Finite_Element_Model-1.0"), as vtkbone and n88tools describe
 * them: so that voxfe solves models that n88modelgenerator wrote, and
 * n88tools (n88postfaim) post-processes voxfe's results.
 *
 * The file is an unstructured hexahedral mesh: Parts/Part1 holds
 * NodeCoordinates (NumberOfNodes x 3) and Elements/Hexahedrons with
 * NodeNumbers (NumberOfElements x 8, VTK_HEXAHEDRON order, 1-based) and
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
 * mesh (every element an axis-aligned box of one size on one grid), the
 * materials LinearIsotropic with IDs 1..255; the active problem's
 * displacement constraints become constraints and its force constraints the
 * loads of one load case. Solutions are not read. Errors name the file and
 * the problem: VOX_ERR_IO, VOX_ERR_FORMAT, VOX_ERR_UNSUPPORTED. */
vox_status vox_n88model_read(vox_context *ctx, const char *path, vox_model *model);

/* Writes `model` as an n88model: its non-empty voxels as hexahedra (nodes
 * and elements numbered in grid order over those used), a LinearIsotropic
 * material per label, its constraints (group "displacements") and loads of
 * load case 0 (group "loads"), and, when `output` is not NULL, the solution
 * (model->displacement and the output's reactions and fields). When `axis`
 * is 0..2, node and element sets "bottom" and "top" (the nodes on the faces
 * at the two ends of the grid along the axis and the elements that touch
 * them) are written and named for post-processing. The file replaces
 * `path` atomically. */
vox_status vox_n88model_write(vox_context *ctx, const char *path, const vox_model *model,
                              const vox_analysis_output *output, int axis);

/* The same file with a solution, written beside the analysis by a thread
 * of its own: vox_n88model_writer_start writes the mesh, materials,
 * constraints, sets and problem at once (the model must not change until
 * the writer ends); the displacement once
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
                                     int axis, vox_n88model_writer **writer);
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
