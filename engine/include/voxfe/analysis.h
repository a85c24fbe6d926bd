/* SPDX-License-Identifier: BSD-3-Clause */
/* Bone-strength analysis of a voxel model (the engine side of voxfe-analyze):
 * the standard compression tests as boundary conditions, the largest
 * connected component of bone, the fields an analysis reports per element
 * (strain, stress, strain-energy density, von Mises stress, effective strain),
 * nodal reaction forces, the failure load by the Pistoia criterion and field
 * statistics. No file formats here: io/ and export/ write what this computes.
 *
 * Conventions: tensors in Voigt order xx, yy, zz, yz, zx, xy with engineering
 * shear strains (gamma = 2 eps), as vox_isotropic_elasticity_matrix. Units mm,
 * N, MPa. A compression test along axis a has its bottom plate on the grid's
 * face at coordinate index 0 along a and its top plate on the opposite face. */
#ifndef VOXFE_ANALYSIS_H
#define VOXFE_ANALYSIS_H

#include <stddef.h>
#include <stdint.h>

#include "voxfe/model.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum vox_compression_test {
  /* bottom plate nodes fixed along the axis, top plate nodes displaced
   * along it, lateral motion free except one bottom node pinned in all
   * directions and a second bottom node held in one lateral direction (the
   * pin alone leaves the rotation about the axis free) */
  VOX_TEST_UNIAXIAL = 0,
  /* plates fixed laterally as well: axial compression with full friction */
  VOX_TEST_FRICTION = 1,
  /* uniaxial plates, and every node on the four lateral faces of the box
   * held in the face's normal direction: confined compression */
  VOX_TEST_CONFINED = 2
} vox_compression_test;

/* "uniaxial", "friction", "confined"; the parser returns -1 for anything else. */
const char *vox_compression_test_name(vox_compression_test test);
int vox_compression_test_parse(const char *text, vox_compression_test *test);

/* Keeps the largest connected component of the non-empty voxels (6: face
 * neighbours, 26: face, edge and corner neighbours) and empties the rest.
 * `removed` gets the number of voxels emptied, `components` the number of
 * components found (0 for an empty model). Ties keep the component found
 * first in element order. */
vox_status vox_keep_largest_component(vox_context *ctx, vox_model *model, int connectivity,
                                      size_t *removed, size_t *components);

/* Checks that bone reaches both plates of `axis` (0 = x, 1 = y, 2 = z) and
 * that the bone touching one plate is connected to the bone touching the
 * other (with the given connectivity). Fails with VOX_ERR_INVALID_ARGUMENT and
 * a message that says which: no bone, no bone at the bottom or top plate, or
 * not connected from plate to plate. */
vox_status vox_check_plate_contact(vox_context *ctx, const vox_model *model, int axis,
                                   int connectivity);

/* Replaces the model's constraints and loads by those of a compression test
 * along `axis` with applied strain `strain` (negative for compression): the
 * top plate moves by strain * L, L the box length along the axis. Only nodes
 * of non-empty voxels are constrained. Sets one load case named
 * "compression" (no forces). `applied` gets the top plate's displacement. */
vox_status vox_add_compression_test(vox_context *ctx, vox_model *model, vox_compression_test test,
                                    int axis, double strain, double *applied);

/* Where the strain-energy density (and so the effective strain) is taken:
 * at the element centre, 1/2 sigma(c) . eps(c) with the strain and stress
 * of the centre, as Numerics88's n88derivedfields and the Pistoia criterion
 * of n88pistoia take it (the default); or the element's mean, its exact
 * energy 1/2 u_e' K_e u_e over its volume. The two agree in a uniform strain;
 * in trabecular bone the mean is larger (bending within an element adds
 * energy the centre does not see), and the failure load it gives is about
 * 1 % smaller. */
typedef enum vox_sed_point {
  VOX_SED_CENTRE = 0,
  VOX_SED_ELEMENT_MEAN = 1
} vox_sed_point;

/* "centre", "element-mean"; the parser returns -1 for anything else. */
const char *vox_sed_point_name(vox_sed_point point);
int vox_sed_point_parse(const char *text, vox_sed_point *point);

/* Holds the rigid motions that the model's supports leave free (a
 * translation, a rotation) by zero-displacement constraints on nodes
 * already supported, chosen greedily, at most six: a model such as
 * n88modelgenerator makes (its "pin" off) fixes its plates along the axis
 * only, a consistent but singular system that Faim's solver tolerates and
 * voxfe's multigrid does not. The supports' reactions and the strains do
 * not change (the motions held carry no load when the loads balance); the
 * displacements lose an arbitrary rigid part. `added` gets the number of
 * constraints added (0: the supports hold every rigid motion already). */
vox_status vox_hold_rigid_motions(vox_context *ctx, vox_model *model, size_t *added);

/* Per-element results; arrays the caller allocates (NULL: not wanted).
 * Without `elements`: one entry (or 6) per grid element in element order,
 * NaN for empty voxels. With `elements` (vox_bone_elements): one entry per
 * bone element, entry k for grid element elements[k] -- the compact layout
 * of the result file, without the empty voxels of the box (on a clinical
 * model, 78 % of it).
 * Strain and stress are at the element centre; the strain-energy density is
 * taken where `sed_point` says; the effective strain is sqrt(2 SED / E_e)
 * and von Mises stress is computed from the centre stress. */
typedef struct vox_element_fields {
  double *strain;           /* 6 per element */
  double *stress;           /* 6 per element, MPa */
  double *sed;              /* MPa (mJ/mm^3) */
  double *von_mises;        /* MPa */
  double *effective_strain; /* 1 */
  /* NULL, or the non-empty voxels in element order (all of them) */
  const int64_t *elements;
  size_t n_elements;
  vox_sed_point sed_point; /* the SED's (and effective strain's) definition */
} vox_element_fields;

/* The non-empty voxels of the model in element order: *elements gets a
 * malloc'ed list of *n entries (NULL when there are none). */
vox_status vox_bone_elements(vox_context *ctx, const vox_model *model, int64_t **elements,
                             size_t *n);

/* mask[n] (one byte per grid node) = 1 for the corners of the non-empty
 * voxels (the nodes the solver solves for), 0 for the others; parallel. */
vox_status vox_bone_node_mask(vox_context *ctx, const vox_model *model, uint8_t *mask);

/* Computes the element fields of displacement `u` (3 per node), and the
 * internal nodal forces K u (3 per node) into `reaction` when it is not NULL:
 * on a constrained dof that is the reaction force of the support; elsewhere
 * it is the applied load plus the solver's residual, and is set to 0.
 * `moduli` gives each element's Young's modulus (NULL: its material's E);
 * the Poisson ratio is that of the materials in use (one for all).
 *
 * With fields->elements, that list must be the model's non-empty voxels
 * (vox_bone_elements); anything else is refused (VOX_ERR_INVALID_ARGUMENT).
 *
 * `share_dofs` (n_share entries, dof indices 3 n + c) names the dofs of a
 * loaded face: `share` (256 entries, by label, may be NULL) then gets the part
 * of their summed reaction that each material's elements carry; the parts add
 * up to the face's total reaction. */
vox_status vox_analysis_fields(vox_context *ctx, const vox_model *model, const double *moduli,
                               const double *u, double *reaction, vox_element_fields *fields,
                               const int64_t *share_dofs, size_t n_share, double *share);

/* The failure load by the Pistoia criterion (Pistoia et al. 2002): the load
 * at which `critical_volume` (a fraction, 0.02) of the bone exceeds the
 * critical effective strain `critical_strain` (0.007), scaling the linear
 * solution. With the n bone values `effective_strain` (equal volumes)
 * sorted in descending order, s is the k-th largest, k = ceil(critical_volume
 * * n) (in ascending order the value at index floor((1 - critical_volume) n),
 * as n88pistoia takes it): then the failure load is load * critical_strain /
 * s, with the sign of `load` (negative in compression, like the reaction
 * force it scales, as n88pistoia reports it). Returns NaN when n is 0 or s
 * is 0. Does not change the array. */
double vox_pistoia_failure_load(const double *effective_strain, size_t n, double load,
                                double critical_strain, double critical_volume);

/* The summary of one analysis: what voxfe-analyze reports, for programs
 * that embed the engine. */
typedef struct vox_analysis_options {
  /* 1: a standard compression test along `axis` (vox_add_compression_test),
   * loaded at its top plate; 0: the model's own supports and loads (no
   * loaded face: the test's numbers are NaN) */
  int compression;
  int axis;               /* 0 = x, 1 = y, 2 = z */
  double strain;          /* the applied strain (negative: compression) */
  double critical_strain; /* Pistoia criterion: 0.007 */
  double critical_volume; /* Pistoia criterion: 0.02 */
  vox_sed_point sed_point; /* the SED of the fields, and so of the criterion */
} vox_analysis_options;

/* A uniaxial compression test along z at 1 % strain, Pistoia's criterion at
 * 0.7 % and 2 %, the SED at the element centre. */
void vox_analysis_options_default(vox_analysis_options *options);

typedef struct vox_analysis_summary {
  double applied_displacement; /* the top plate's, mm (NaN without a test) */
  /* the sum of the reactions on the top plate's dofs along the axis, N:
   * negative in compression */
  double reaction_force;
  double stiffness;        /* reaction_force / applied_displacement, N/mm */
  double apparent_modulus; /* (reaction_force / box_area) / strain, MPa */
  /* Pistoia failure load, N, of the effective strains handed over: the sign
   * of the reaction force (negative in compression), as n88pistoia reports */
  double failure_load;
  double box_length, box_area;  /* along the axis, mm; across it, mm2 */
  double support_reaction[3];   /* the reactions summed over every support, N */
  double compliance;            /* sum of load . displacement, N mm */
  double load_share[256];       /* by label: share of reaction_force (NaN if 0) */
} vox_analysis_summary;

/* The dofs of the top plate along the axis that carry the compression
 * test's displacement (the model's constraints on the grid's last node
 * layer along `axis`, in that component): `dofs` (n_constraints entries,
 * 3 node + component) gets them, *n their number. vox_analysis_fields takes
 * them as its share dofs. */
void vox_loaded_face_dofs(const vox_model *model, int axis, int64_t *dofs, size_t *n);

/* The summary of displacement `u` and the reactions `reaction` of
 * vox_analysis_fields (3 per grid node); `effective_strain` the n_bone
 * values of the bone elements (NULL with n_bone 0: no failure load);
 * `share` the load shares by label of vox_analysis_fields (NULL: NaN);
 * `face_dofs` the loaded face (vox_loaded_face_dofs). Fails only when out of
 * memory or for options out of range. */
vox_status vox_analysis_summarize(vox_context *ctx, const vox_model *model,
                                  const vox_analysis_options *options, const double *u,
                                  const double *reaction, const int64_t *face_dofs,
                                  size_t n_face, const double *effective_strain, size_t n_bone,
                                  const double *share, vox_analysis_summary *summary);

/* Mean, standard deviation (population) and percentiles (linear
 * interpolation between order statistics, numpy's default) of n values. */
#define VOX_STAT_PERCENTILES 5
extern const double vox_stat_percentiles[VOX_STAT_PERCENTILES]; /* 5 25 50 75 95 */
typedef struct vox_field_stats {
  double mean, sd, min, max;
  double percentile[VOX_STAT_PERCENTILES];
} vox_field_stats;

/* Statistics of values[i * stride + offset] over the elements with active[i]
 * set (NULL: all n). Fails only when out of memory; NaN fields when none. */
vox_status vox_field_statistics(vox_context *ctx, const double *values, size_t n, size_t stride,
                                size_t offset, const uint8_t *active, vox_field_stats *stats);

/* Several statistics at once, one thread each (the selections of one are
 * serial): stats[i] of requests[i], as vox_field_statistics would give. */
typedef struct vox_stats_request {
  const double *values;
  size_t n, stride, offset;
  const uint8_t *active; /* NULL: all */
} vox_stats_request;
vox_status vox_field_statistics_many(vox_context *ctx, const vox_stats_request *requests,
                                     size_t count, vox_field_stats *stats);

/* Young's modulus from calibrated CT intensity, element by element: the
 * density rho = slope * intensity + intercept (g/cm^3, the calibration of
 * the scanner's phantom), then the power law E = a * rho^b (MPa), as in the
 * density-modulus relations of trabecular bone (Morgan, Bayraktar & Keaveny
 * 2003, J Biomech 36:897-904, pooled sites: a = 8920, b = 1.83 for the
 * apparent density) and the grey-value voxel conversion of Homminga et al.
 * 2001 (J Biomech 34:513-517: E = E_max (rho / rho_max)^1.7). A modulus below
 * `min_modulus` (a density at or below zero included) is raised to it, so
 * that partial-volume voxels at the bone's surface keep a stiffness. */
typedef struct vox_density_modulus {
  double slope, intercept; /* intensity -> density, g/cm^3 */
  double a, b;             /* E = a rho^b, MPa */
  double min_modulus;      /* MPa, > 0 */
} vox_density_modulus;

/* Morgan et al. 2003, pooled: a 8920, b 1.83, min_modulus 1; the
 * calibration of intensity in mg HA/cm^3 (slope 0.001, intercept 0). */
void vox_density_modulus_default(vox_density_modulus *law);

/* Fills moduli[e] (nx*ny*nz entries) from model->intensity through `law`
 * for every non-empty voxel, 0 for empty ones; `floored` (may be NULL) gets
 * the number of elements raised to the minimum. Fails when the model has no
 * intensity, when a bone voxel's intensity is not finite, or when the law
 * is not one (a, min_modulus not positive, slope or b not finite). */
vox_status vox_intensity_moduli(vox_context *ctx, const vox_model *model,
                                const vox_density_modulus *law, double *moduli, size_t *floored);

#ifdef __cplusplus
}
#endif
#endif
