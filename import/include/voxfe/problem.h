/* SPDX-License-Identifier: BSD-3-Clause */
/* Problem files: loads, supports and passive regions written by people in a
 * small YAML file (docs/problem-file.md), rasterised onto a voxel model. */
#ifndef VOXFE_PROBLEM_H
#define VOXFE_PROBLEM_H

#include "voxfe/model.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum vox_region_kind {
  VOX_REGION_FACE,    /* one of the six faces of the grid's bounding box */
  VOX_REGION_EDGE,    /* the intersection of two faces */
  VOX_REGION_POINT,   /* the node nearest to a point */
  VOX_REGION_BOX,     /* axis-aligned box [min, max] */
  VOX_REGION_SPHERE,  /* centre and radius */
  VOX_REGION_LABEL,   /* nodes / elements of one label */
  VOX_REGION_MESH     /* inside the solid a closed surface mesh bounds */
} vox_region_kind;

#define VOX_PATH_MAX 4096

/* Faces are numbered 2*axis + side: 0 = x-, 1 = x+, 2 = y-, 3 = y+, 4 = z-, 5 = z+. */
typedef struct vox_region {
  vox_region_kind kind;
  int face[2];            /* FACE: face[0]; EDGE: face[0] and face[1] */
  double point[3];        /* POINT, SPHERE centre, BOX min */
  double point2[3];       /* BOX max */
  double radius;          /* SPHERE */
  int label;              /* LABEL */
  char mesh[VOX_PATH_MAX];/* MESH: the mesh file (a problem file's relative
                             paths are resolved from its folder) */
} vox_region;

typedef struct vox_support {
  char name[VOX_NAME_MAX];
  vox_region region;
  int fixed[3];           /* component c is prescribed when fixed[c] */
  double value[3];        /* its displacement, mm (0 for a plain support);
                             heat: component 0 only, the temperature, K */
} vox_support;

typedef enum vox_load_kind {
  VOX_LOAD_FORCE = 0,       /* elasticity: `force`, spread over the region's nodes */
  VOX_LOAD_HEAT = 1,        /* heat: `heat`, a total heat flow (W) spread like a force */
  VOX_LOAD_HEAT_SOURCE = 2  /* heat: `heat_source`, W/mm^3 generated in the region's
                               elements (consistent nodal loads, 1/8 of each element's) */
} vox_load_kind;

typedef struct vox_force {
  char name[VOX_NAME_MAX];
  vox_region region;
  int whole_model;        /* HEAT_SOURCE without a region: every element with material */
  vox_load_kind kind;
  double force[3];        /* FORCE: total force on the region, N, spread over its nodes;
                             HEAT: force[0], W; HEAT_SOURCE: force[0], W/mm^3 */
  int load_case;          /* 0-based index into load case names */
} vox_force;

typedef struct vox_passive {
  char name[VOX_NAME_MAX];
  vox_region region;      /* elements whose centre lies inside */
  vox_material_role role; /* VOX_ROLE_SOLID or VOX_ROLE_VOID */
} vox_passive;

typedef struct vox_problem {
  char title[256];        /* free text for people; "" when absent */
  vox_physics physics;    /* `physics:`, elasticity when absent */
  int cell;               /* `cell: true` (or a `cell:` mapping): a periodic unit cell
                             (homogenization), which takes no supports or loads */
  /* The `cell:` mapping's settings for voxfe-optimize (its options take
   * precedence); "" / NULL when absent: */
  char cell_objective[16]; /* bulk, shear, poisson, poisson-log or custom */
  char cell_symmetry[16];  /* none, reflect3, reflect6 or rotate3 */
  char *cell_expression;   /* the formula of `objective: custom` (parsed, so valid) */
  vox_material material;  /* of the design domain (label 1) */
  int n_load_cases;
  char (*load_case_names)[VOX_NAME_MAX];
  int n_supports;
  vox_support *supports;
  int n_forces;
  vox_force *forces;
  int n_passive;
  vox_passive *passive;
  /* Compliant mechanisms and weighted load cases (elasticity only): */
  vox_objective objective;    /* `objective:`, compliance when absent */
  double *load_case_weights;  /* `load_case_weights:`, n_load_cases; NULL: all 1 */
  int n_springs;              /* `springs:` springs to ground; force[] holds the total */
  vox_force *springs;         /*   stiffness per component, N/mm, spread over the region's
                                   nodes as a force is (springs in parallel) */
  int n_outputs;              /* `outputs:` the output vector l; force[] holds the direction, */
  vox_force *outputs;         /*   spread over the region's nodes as a force is, so that
                                   l.u is the region's mean displacement along it */
  /* `constraints:` the design constraints of the optimization (the model's
   * design_constraints, copied by rasterising; a volume's label must be a
   * design material the model uses then) */
  int n_design_constraints;
  vox_design_constraint *design_constraints;
} vox_problem;

/* Parses a problem file. Errors (VOX_ERR_IO, VOX_ERR_FORMAT) name the file,
 * and the line where the YAML says it. */
vox_status vox_problem_read(vox_context *ctx, const char *path, vox_problem *problem);
void vox_problem_free(vox_problem *problem);

/* Fills `model` (already holding its grid and labels) from the problem:
 * the title (when the model has none),
 * materials (label 1 design, 2 passive solid, 3 passive void, as used),
 * passive regions relabelled, constraints and loads as node lists, load case
 * names. Fails if a region selects nothing. */
vox_status vox_problem_rasterize(vox_context *ctx, const vox_problem *problem, vox_model *model);

/* The materials alone, for a model without a problem file (a scan that
 * voxfe-analyze's standard tests will hold and load): `material` for the
 * labels the model uses, as vox_problem_rasterize gives the problem's
 * (label 1 under its name, labels from 4 as phase<L>; 2 and 3 the passive
 * solid and void), one load case "case1", no supports and no loads. */
vox_status vox_problem_materials(vox_context *ctx, const vox_material *material,
                                 vox_model *model);

#ifdef __cplusplus
}
#endif
#endif
