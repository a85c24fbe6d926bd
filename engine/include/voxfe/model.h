/* SPDX-License-Identifier: BSD-3-Clause */
/* The voxel model: a regular grid of box voxels (elements), labels that map
 * voxels to materials, and boundary conditions as sparse node lists. After
 * optimization it also carries the density, displacements and history.
 *
 * Indexing (the same everywhere in voxfe, and in the netCDF file):
 *   element (i,j,k), 0 <= i < nx:   e = (k*ny + j)*nx + i        (x fastest)
 *   node    (i,j,k), 0 <= i <= nx:  n = (k*(ny+1) + j)*(nx+1) + i
 *   degree of freedom of node n, component c (0=x, 1=y, 2=z): 3*n + c
 *   (heat conduction: one dof per node, the temperature, dof n, component 0)
 * Element (i,j,k) spans [origin + (i,j,k)*h, origin + (i+1,j+1,k+1)*h].
 * Units: mm, N, MPa; for heat conduction W, K (or degrees C), W/(mm K). */
#ifndef VOXFE_MODEL_H
#define VOXFE_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "voxfe/context.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What a label means to the optimizer. */
typedef enum vox_material_role {
  VOX_ROLE_DESIGN = 0, /* density is a design variable */
  VOX_ROLE_SOLID = 1,  /* passive solid: density fixed at 1 */
  VOX_ROLE_VOID = 2    /* passive void: density fixed at 0 (stiffness Emin) */
} vox_material_role;

#define VOX_NAME_MAX 64

/* What the model's finite element system describes. The physics sets the
 * dofs per node, what constraints and loads mean and which material
 * property scales the element matrix. */
typedef enum vox_physics {
  VOX_PHYSICS_ELASTICITY = 0, /* 3 dofs per node: displacements (mm), forces (N), E */
  VOX_PHYSICS_HEAT = 1        /* 1 dof per node: temperature (K), heat flows (W),
                                 conductivity; the objective is the thermal compliance */
} vox_physics;

typedef struct vox_material {
  uint8_t label;                /* 1..255; label 0 is "no material" */
  char name[VOX_NAME_MAX];
  vox_material_role role;
  double youngs_modulus;        /* E of the solid, MPa */
  double poisson_ratio;         /* nu */
  double conductivity;          /* W/(mm K), for heat conduction */
} vox_material;

typedef struct vox_grid {
  int64_t nx, ny, nz;           /* elements along x, y, z */
  double voxel_size[3];         /* element edge lengths along x, y, z, mm */
  double origin[3];             /* coordinates of node (0,0,0), mm */
  /* 1: a periodic unit cell (homogenization): the grid wraps around along
   * every axis, so node nx is node 0 again (and so for y, z). Nodes keep
   * the (nx+1)(ny+1)(nz+1) layout: those with i = nx, j = ny or k = nz are
   * images of their periodic twins, carry no unknowns of their own (the
   * solver treats them like fixed dofs) and hold copies of the twins'
   * values only in results written to files. Not stored in model files:
   * set by the program that sets up the cell problem. */
  int periodic;
} vox_grid;

/* A prescribed displacement: dof `component` of `node` is `value` (mm);
 * for heat, a prescribed temperature (component 0, K). */
typedef struct vox_constraint {
  int64_t node;
  uint8_t component;
  /* the support that made it: 1-based into model->support_names; 0 for none */
  uint16_t name_index;
  double value;
} vox_constraint;

/* A nodal force (N) in load case `load_case` (0-based); for heat, a nodal
 * heat flow into the body (component 0, W). */
typedef struct vox_load {
  int64_t node;
  uint8_t component;
  /* the load that made it: 1-based into model->load_names; 0 for none */
  uint16_t name_index;
  int32_t load_case;
  double value;
} vox_load;

/* A linear spring to ground on one dof: it adds `stiffness` (N/mm) to the
 * dof's diagonal of K whatever the density (the input actuator and the
 * output workpiece of a compliant mechanism, Martinez-Frutos et al. 2017 section 5). */
typedef struct vox_spring {
  int64_t node;
  uint8_t component;
  double stiffness;
} vox_spring;

/* One entry of the output vector l of a compliant mechanism: the output
 * displacement is u_out = l^T u = sum weight * u(node, component) (mm when
 * the weights add up to one). */
typedef struct vox_output {
  int64_t node;
  uint8_t component;
  double weight;
} vox_output;

/* What the optimizer minimises (Martinez-Frutos et al. 2017 eq. 5 and 6). */
typedef enum vox_objective {
  VOX_OBJECTIVE_COMPLIANCE = 0,         /* sum_c w_c f_c^T u_c (self-adjoint) */
  VOX_OBJECTIVE_OUTPUT_DISPLACEMENT = 1, /* -l^T u of the one load case: maximises the
                                           output displacement (adjoint solve K v = l) */
  VOX_OBJECTIVE_VOLUME = 2              /* the volume fraction of the design domain, under
                                           the model's design constraints (a compliance
                                           limit at least): minimum weight */
} vox_objective;

/* What a design constraint bounds (the model's design_constraints; the
 * method of moving asymptotes takes any number of them, the
 * optimality-criteria update one volume of the design domain). */
typedef enum vox_design_constraint_kind {
  VOX_CONSTRAINT_VOLUME = 0,    /* volume fraction of the design elements of a label (or of
                                   the whole design domain), measured on the physical density */
  VOX_CONSTRAINT_COMPLIANCE = 1 /* f_c.u_c of one load case, N mm (heat: thermal compliance) */
} vox_design_constraint_kind;

/* The most design constraints a model carries (each is a multiplier of
 * MMA's dual problem and a gradient vector per element). */
#define VOX_MAX_DESIGN_CONSTRAINTS 64

typedef struct vox_design_constraint {
  char name[VOX_NAME_MAX];
  uint8_t kind;       /* a vox_design_constraint_kind */
  uint8_t equal;      /* 1: value = limit (volume only); 0: value <= limit */
  uint8_t label;      /* volume: 0 the whole design domain, else the design elements of
                         this label */
  int32_t load_case;  /* compliance: the 0-based load case */
  double limit;       /* volume: a fraction in (0, 1]; compliance: N mm, > 0 */
} vox_design_constraint;

/* One row of the optimization history. */
typedef struct vox_history_row {
  int32_t iteration;
  double objective;
  double volume_fraction;
  double change;
  double non_discreteness;
  double penalty;
  double q;
  int32_t cg_iterations;
  double seconds;
} vox_history_row;

/* How the optimization that made a design ended (voxfe-optimize; the
 * attributes of the file's group `optimization`): the numbers of the final
 * design, the density the file holds, evaluated after the last update (a
 * history row is the design its iteration evaluated, before that
 * iteration's update). */
typedef struct vox_optimization_end {
  int stop_reason;         /* a vox_stop_reason (voxfe/optimizer.h); 0: not recorded */
  double objective;        /* of the final design, as the history's objective */
  double volume_fraction;  /* of the final design's design domain */
  double non_discreteness; /* M_nd of the final design, percent */
  int64_t cg_iterations;   /* of the final evaluation's solves (the rows count the others) */
} vox_optimization_end;

typedef enum vox_stage {
  VOX_STAGE_MODEL = 0,  /* voxelize output: grid, labels, materials, BCs */
  VOX_STAGE_DESIGN = 1, /* optimize output: + density, displacement, history */
  VOX_STAGE_ANALYSIS = 2 /* analyze output: + displacement, and the analysis results
                          * that io/result_file.c adds (not read into the model) */
} vox_stage;

typedef struct vox_model {
  vox_stage stage;
  vox_physics physics;          /* elasticity unless a problem says heat */
  vox_grid grid;
  uint8_t *label;               /* nx*ny*nz, 0 = empty */
  /* The image values a model was segmented from (voxfe-voxelize --image
   * --keep-intensity), for intensity-to-modulus maps; NULL when absent. */
  float *intensity;             /* nx*ny*nz */
  char intensity_units[32];     /* "HU", "mg HA/ccm", "1", ... */

  int n_materials;
  vox_material *materials;      /* at most one per label */

  size_t n_constraints;
  vox_constraint *constraints;

  int n_load_cases;             /* >= 1 when there are loads */
  char (*load_case_names)[VOX_NAME_MAX]; /* n_load_cases names */
  size_t n_loads;
  vox_load *loads;
  /* The names a problem file gave its supports and loads, which the
   * constraints' and loads' name_index point at: carried for the exports
   * that show them (the CalculiX deck's node sets). 0 / NULL when absent. */
  int n_support_names;
  char (*support_names)[VOX_NAME_MAX];
  int n_load_names;
  char (*load_names)[VOX_NAME_MAX];
  /* Weights of the load cases in the compliance objective, n_load_cases;
   * NULL: every case weighs 1. */
  double *load_case_weights;

  vox_objective objective;      /* compliance unless a problem says otherwise */
  size_t n_springs;             /* springs to ground, sorted by node and component */
  vox_spring *springs;
  size_t n_outputs;             /* the output vector l (VOX_OBJECTIVE_OUTPUT_DISPLACEMENT) */
  vox_output *outputs;
  /* Design constraints of the optimization (problem file `constraints:`);
   * none: one volume of the design domain, voxfe-optimize's
   * --volume-fraction. */
  int n_design_constraints;
  vox_design_constraint *design_constraints;

  /* Stage outputs; NULL / 0 when absent. */
  double *density;              /* nx*ny*nz, physical (filtered) density */
  double *displacement;         /* n_load_cases * n_nodes * dofs per node, case-major:
                                   displacements, or temperatures for heat */
  size_t n_history;
  vox_history_row *history;
  /* Each history row's value of each design constraint (the volume
   * fraction of its region, or its load case's compliance), row-major:
   * n_history * n_design_constraints; NULL without design constraints. */
  double *history_constraint;
  /* The final design's value of each design constraint (n_design_constraints;
   * NULL where no run recorded them). */
  double *final_constraint;
  /* The volume fraction the optimization held the design to
   * (voxfe-optimize --volume-fraction); 0 when unknown. */
  double target_volume_fraction;
  vox_optimization_end optimization_end; /* stop_reason 0 where no run recorded it */
  /* The homogenized stiffness C^H of a periodic-cell design (voxfe-optimize
   * --objective bulk|shear|...): 36 values, 6x6 row-major in the Voigt
   * order of voxfe/homogenize.h; NULL when absent. */
  double *cell_tensor;
  /* A periodic cell's design settings from its problem file (`cell:` as a
   * mapping), carried in the model file for voxfe-optimize, whose options
   * take precedence; NULL when absent: the name of a cell objective
   * (vox_cell_objective_name: "bulk" ... "custom"), the formula of "custom"
   * (voxfe/expression.h), a symmetry name (vox_symmetry_name). */
  char *cell_objective;
  char *cell_expression;
  char *cell_symmetry;

  /* Text attributes carried from stage to stage. */
  char *history_text;           /* netCDF `history`: one line per program run */
  char *title;                  /* free text, may be NULL */

  /* Density snapshots saved during optimization (voxfe-optimize
   * --snapshot-every N), in the order taken; 0 / NULL when none. */
  size_t n_snapshots;
  int32_t *snapshot_iteration;  /* n_snapshots: the design iteration of each */
  double *snapshot_density;     /* n_snapshots * nx*ny*nz, physical density */

  /* The design variables of an element-free Galerkin design (voxfe-optimize
   * --discretization efg): one density per grid node, (nx+1)*(ny+1)*(nz+1),
   * 0 at the nodes that touch no material; NULL when absent. `density` holds
   * the voxel density made from them. */
  double *nodal_density;
} vox_model;

/* Degrees of freedom per node of a physics: 3, or 1 for heat conduction. */
static inline int vox_physics_dofs_per_node(vox_physics physics) {
  return physics == VOX_PHYSICS_HEAT ? 1 : 3;
}
/* "elasticity" or "heat"; vox_physics_parse returns -1 for other words. */
const char *vox_physics_name(vox_physics physics);
int vox_physics_parse(const char *text, vox_physics *physics);

static inline int64_t vox_grid_elements(const vox_grid *g) { return g->nx * g->ny * g->nz; }
static inline int64_t vox_grid_nodes(const vox_grid *g) {
  return (g->nx + 1) * (g->ny + 1) * (g->nz + 1);
}

/* The most support or load names a model carries (name_index is 16 bits). */
#define VOX_MAX_CONDITION_NAMES 65535

/* Appends `name` to the support names (`load` 0) or the load names (`load`
 * non-zero) and gives its name_index (1-based) in *index. */
vox_status vox_model_add_condition_name(vox_context *ctx, vox_model *model, int load,
                                        const char *name, uint16_t *index);

/* The lists (materials, constraints, loads) are grown by the vox_model_add_*
 * functions with a capacity of the next power of two of their length; code
 * that allocates them itself must keep to that.
 *
 * Allocates a model with an all-zero label array of the given grid, after
 * vox_grid_check and a check that VOX_MODEL_BYTES_PER_VOXEL per voxel fit in
 * the memory available (VOX_ERR_NO_MEMORY naming the bytes otherwise). */
vox_status vox_model_init(vox_context *ctx, vox_model *model, const vox_grid *grid);
/* Frees every array and resets the struct to zero. */
void vox_model_free(vox_model *model);
/* Deep copy. */
vox_status vox_model_copy(vox_context *ctx, vox_model *dst, const vox_model *src);

/* Appends a material; fails if the label is taken or zero. */
vox_status vox_model_add_material(vox_context *ctx, vox_model *model, const vox_material *m);
/* The material of a label, or NULL. */
const vox_material *vox_model_material(const vox_model *model, uint8_t label);
/* used[l] = 1 for each label l that a voxel has, 0 for the others: one pass
 * over the box, in parallel (14 M voxels of a clinical model). */
void vox_model_labels_used(const vox_model *model, uint8_t used[256]);
/* The one Poisson ratio of the materials the voxels use (the solvers take
 * one element matrix scaled by each modulus): VOX_ERR_UNSUPPORTED for two
 * different ones, VOX_ERR_INVALID_ARGUMENT for a label without a material
 * or a model without material voxels. */
vox_status vox_model_poisson_ratio(vox_context *ctx, const vox_model *model, double *nu);
vox_status vox_model_add_constraint(vox_context *ctx, vox_model *model, int64_t node,
                                    int component, double value);
vox_status vox_model_add_load(vox_context *ctx, vox_model *model, int64_t node, int component,
                              int load_case, double value);
vox_status vox_model_add_spring(vox_context *ctx, vox_model *model, int64_t node, int component,
                                double stiffness);
vox_status vox_model_add_output(vox_context *ctx, vox_model *model, int64_t node, int component,
                                double weight);
/* The weight of load case c (1 without a weight list). */
static inline double vox_model_load_case_weight(const vox_model *model, int c) {
  return model->load_case_weights ? model->load_case_weights[c] : 1.0;
}
/* Sets the weights of the n_load_cases cases (copied; NULL: all 1). */
vox_status vox_model_set_load_case_weights(vox_context *ctx, vox_model *model,
                                           const double *weights);
/* "compliance", "output_displacement" or "volume"; the parser returns -1 for other words. */
const char *vox_objective_name(vox_objective objective);
int vox_objective_parse(const char *text, vox_objective *objective);
/* "volume" or "compliance"; the parser returns -1 for other words. */
const char *vox_design_constraint_kind_name(int kind);
/* Appends a design constraint (copied; checked by vox_model_validate). */
vox_status vox_model_add_design_constraint(vox_context *ctx, vox_model *model,
                                           const vox_design_constraint *constraint);
/* Sets the number of load cases, naming the new ones "case<N>". */
vox_status vox_model_set_load_cases(vox_context *ctx, vox_model *model, int n);
/* Appends a copy of `density` (nx*ny*nz) as the snapshot of `iteration`. */
vox_status vox_model_add_snapshot(vox_context *ctx, vox_model *model, int32_t iteration,
                                  const double *density);
/* Appends one line ("<time> <text>") to history_text. */
vox_status vox_model_append_history(vox_context *ctx, vox_model *model, const char *line);

/* "model", "design" or "analysis" (the file's `stage` attribute). */
const char *vox_stage_name(vox_stage stage);

/* The voxel sizes and origins a grid may have, mm. Outside them the
 * element matrices and coordinates lose their meaning long before a solve
 * fails: a 1e-320 mm voxel is denormal, 1e308 mm overflows its volume, and a
 * NaN or infinite origin gives an STL of NaN points. 1 nm to 1 km is wider
 * than any scan or part. */
#define VOX_VOXEL_SIZE_MIN 1e-9
#define VOX_VOXEL_SIZE_MAX 1e6
#define VOX_ORIGIN_MAX 1e12

/* The host memory a model takes per voxel at least, where the check of
 * vox_model_init counts: its label and one scratch byte (a mesh's fill, a
 * problem's regions). */
#define VOX_MODEL_BYTES_PER_VOXEL 2.0

/* The memory the system can give this process now, bytes (/proc/meminfo's
 * MemAvailable; INFINITY when unknown). */
double vox_host_memory_available(void);

/* VOX_ERR_NO_MEMORY, saying that `what` needs `bytes` and how many are
 * available, when `bytes` exceed vox_host_memory_available(). */
vox_status vox_host_memory_check(vox_context *ctx, double bytes, const char *what);

/* Checks a grid's sizes, voxel sizes and origin against the bounds above;
 * the message says which value is wrong and why (the caller names where it
 * came from). */
vox_status vox_grid_check(vox_context *ctx, const vox_grid *grid);

/* Checks the model is consistent: the grid (vox_grid_check), every used
 * label has a material of finite E, node indices and components in range,
 * finite loads and prescribed displacements, load cases in range. The
 * message names the first problem found. */
vox_status vox_model_validate(vox_context *ctx, const vox_model *model);

/* Whether a support prescribes a non-zero value (a compression test's
 * plate displacement): the solve then has a lift to carry and reactions
 * whose work the CG's reaction test watches. */
int vox_model_prescribes_motion(const vox_model *model);

/* Checks that the supports (prescribed dofs and springs) hold the structure
 * against the six rigid motions, before a solve: otherwise the stiffness
 * matrix is singular and the solver fails deep inside with a message about
 * a factorization. The message names the free translations and rotations.
 * Elasticity only looks at the dofs held, not at the material between them;
 * heat needs one prescribed temperature. A periodic grid passes. */
vox_status vox_model_check_held(vox_context *ctx, const vox_model *model);

/* Checks that every non-zero load sits on a node of at least one element
 * whose label `carries` (a table by label), for a load on a passive void or
 * off the bone is carried by nothing; `what` names those elements in the
 * message ("a material that is not a passive void"). */
vox_status vox_model_check_loads_carried(vox_context *ctx, const vox_model *model,
                                         const uint8_t carries[256], const char *what);

/* Checks that every load case has a non-zero force: a case of zero forces
 * optimizes to nothing (volume fraction 0) without a word. */
vox_status vox_model_check_cases_loaded(vox_context *ctx, const vox_model *model);

#ifdef __cplusplus
}
#endif
#endif
