/* SPDX-License-Identifier: BSD-3-Clause */
/* Summaries: the numbers of a model or design file, as JSON (one document
 * per file) or as a CSV row (rows of many files concatenate for batch
 * review).
 *
 * What is summarised: the title, the stage, the grid (nx, ny, nz, voxel
 * size, origin, number of voxels), the voxels of each label present, the
 * materials (label, name, role, E, nu), the number of prescribed
 * displacements and of distinct constrained nodes, the number of loads and
 * load cases, the total applied force of each load case (the sum of its load
 * vectors, N), and what a design adds: why the optimization stopped
 * (stop_reason: converged, iteration_limit, continuation_unfinished or
 * interrupted; null for files without it), the objective (compliance in
 * N mm), volume fraction and non-discreteness (percent) of the final design
 * (the density in the file, evaluated after the last update: the numbers
 * voxfe-optimize's last line reports; files without the run's end record
 * give the last history row's, the design before the last update), the last
 * row's largest change, p and q, the number of history rows, the CG
 * iterations summed over the rows and the final evaluation (voxfe-optimize's
 * count for a file of one run), the seconds summed over the rows, and the
 * smallest and largest density; the maxima of the displacement and, for an
 * analysis result, of its element fields (von Mises stress, strain-energy
 * density, effective strain).
 *
 * Numbers are written in the shortest form that reads back as the same
 * double (at most 17 significant digits); NaN and infinities, and what the
 * model does not have, are null in JSON and an empty field in CSV. Text is
 * UTF-8: bytes that are not become U+FFFD.
 *
 * Both writers replace `path` atomically (a temporary file beside it,
 * renamed into place) and leave it untouched on failure, with a one-line
 * message on the context that starts with the path. */
#ifndef VOXFE_SUMMARY_H
#define VOXFE_SUMMARY_H

#include "voxfe/model.h"
#include "voxfe/result_file.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One JSON object:
 *   {"title": str|null, "stage": "model"|"design", "history": [str...]|null,
 *    "grid": {"nx","ny","nz","voxel_size":[3],"origin":[3],"voxels"},
 *    "voxels_per_label": [{"label","material": str|null,"voxels"}...] (labels present),
 *    "materials": [{"label","name","role","youngs_modulus","poisson_ratio","voxels"}...],
 *    "n_constraints","constrained_nodes","n_loads","n_load_cases",
 *    "load_cases": [{"name","n_loads","total_force":[fx,fy,fz]}...],
 *    "design": null | {"iterations","stop_reason","objective","volume_fraction","change",
 *                      "non_discreteness","penalty","q","cg_iterations",
 *                      "seconds","density_min","density_max"},
 *    "maxima": {"displacement","von_mises","strain_energy_density",
 *               "effective_strain","units": {name: units...}},
 *    "results": null | {name: number|str..., "units": {name: units...}}}
 * "design" is an object when the model is a design or has a history or a
 * density; its fields are null where that part is missing. "maxima" are the
 * largest displacement magnitude (mm, over the nodes and load cases; null
 * without a displacement or for heat) and, for an analysis result, the
 * largest von Mises stress (MPa), strain-energy density (MPa) and effective
 * strain (1) over its elements (null otherwise). "results" is an analysis
 * result's own summary, the group `results` of its file, as voxfe-analyze
 * --summary writes it (null otherwise). */
vox_status vox_write_summary_json(vox_context *ctx, const char *path, const vox_model *m);

/* One CSV row, after a header line when `header` is non-zero. Fields are
 * quoted as RFC 4180 says (those holding a comma, quote, CR or LF, or
 * leading or trailing blanks; quotes doubled); lines end in LF. The columns
 * are VOX_SUMMARY_CSV_COLUMNS, always all of them, so that rows of models and
 * designs line up. Lists are packed into one field each:
 *   voxels_per_label  "0:6 1:9 2:9"                        (label:voxels)
 *   materials         "1 steel (E 210000, nu 0.3); 2 soft (E 1000, nu 0.4)"
 *   total_force       "case1 (0 0 -100); case2 (10 0 0)"   (fx fy fz per case) */
vox_status vox_write_summary_csv(vox_context *ctx, const char *path, const vox_model *m,
                                 int header);

/* The same two for an analysis result: `result` (vox_result_read of the
 * model's file; NULL: none) gives the maxima of its element fields and its
 * "results". The CSV row has the same columns (the maxima's). */
vox_status vox_write_result_summary_json(vox_context *ctx, const char *path, const vox_model *m,
                                         const vox_result_data *result);
vox_status vox_write_result_summary_csv(vox_context *ctx, const char *path, const vox_model *m,
                                        const vox_result_data *result, int header);

#define VOX_SUMMARY_CSV_COLUMNS                                                          \
  "title,stage,nx,ny,nz,voxel_size_x,voxel_size_y,voxel_size_z,origin_x,origin_y,"      \
  "origin_z,voxels,voxels_per_label,n_materials,materials,n_constraints,"               \
  "constrained_nodes,n_loads,n_load_cases,total_force,iterations,objective,"            \
  "volume_fraction,change,non_discreteness,penalty,q,cg_iterations,seconds,"            \
  "density_min,density_max,stop_reason,max_displacement,max_von_mises,"                  \
  "max_strain_energy_density,max_effective_strain,design_constraints"

#ifdef __cplusplus
}
#endif
#endif
