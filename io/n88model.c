/* SPDX-License-Identifier: BSD-3-Clause */
/* n88model files (voxfe/n88model.h): the voxel model as Numerics88's
 * unstructured hexahedral mesh and back. Written from the format's public
 * description (vtkbone's n88model reader and writer, n88tools' postfaim);
 * the code is voxfe's own. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <netcdf.h>

#include "netcdf_guard.h"
#include "voxfe/output_target.h"
#include "model_writer.h"
#include "stage_gate.h"
#include "voxfe/temp_files.h"
#include "voxfe/element.h"
#include "voxfe/io.h"
#include "voxfe/n88model.h"

#define N88_CONVENTIONS "Numerics88/Finite_Element_Model-1.0"

typedef struct n88_file {
  vox_context *ctx;
  const char *path; /* the user's path, for messages */
  int ncid;
} n88_file;

static vox_status nc_fail(n88_file *f, vox_status status, int err, const char *what) {
  return vox_error(f->ctx, status, "%s: %s: %s", f->path, what, nc_strerror(err));
}

#define W_TRY(f, call, what)                                                      \
  do {                                                                            \
    int w_err_ = (call);                                                          \
    if (w_err_) return nc_fail(f, VOX_ERR_IO, w_err_, "cannot write " what);      \
  } while (0)

static int put_text(int ncid, const char *name, const char *text) {
  return nc_put_att_text(ncid, NC_GLOBAL, name, strlen(text), text);
}

/* Element corners in VTK_VOXEL order, as n88modelgenerator writes them and
 * vtkbone reads them (x fastest; not VTK_HEXAHEDRON's order, whose corners
 * 2 and 3, 6 and 7 are swapped). */
static const int n88_voxel_corner[8][3] = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {1, 1, 0},
                                           {0, 0, 1}, {1, 0, 1}, {0, 1, 1}, {1, 1, 1}};

static int64_t node_index(const vox_grid *g, int64_t i, int64_t j, int64_t k) {
  return (k * (g->ny + 1) + j) * (g->nx + 1) + i;
}

/* ---------------------------------------------------------------------------
 * Writing.
 * ------------------------------------------------------------------------- */

/* A variable written whole (so without fill): the large ones of integers
 * (element numbers, materials, sets: they shrink to almost nothing,
 * shuffled first) and the reactions (zero off the supports; not shuffled:
 * faster and smaller on zeros) deflated; the floating-point ones not
 * (coordinates and a solution's values shrink by about 20 %), nor the
 * elements' node numbers: 4.7 times smaller, but netCDF deflates on one
 * thread, 0.9 s for a clinical sample's 96 MB, longer than the solve it
 * runs beside (docs/experiments.md). Numerics88's own files deflate
 * nothing. */
static int def_var(int ncid, const char *name, nc_type type, int ndims, const int *dims,
                   size_t rows, int *varid) {
  int err = nc_def_var(ncid, name, type, ndims, dims, varid);
  const int floating = type == NC_FLOAT || type == NC_DOUBLE;
  if (!err) err = nc_def_var_fill(ncid, *varid, NC_NOFILL, NULL);
  if (!err && rows > 4096 && strcmp(name, "NodeNumbers") &&
      (!floating || !strcmp(name, "ReactionForce")))
    err = nc_def_var_deflate(ncid, *varid, !floating, 1, 1);
  return err;
}

/* The material's group name: its name when that is usable and unique,
 * otherwise "label<N>". */
static void material_group_name(const vox_model *m, int index, char *out, size_t size) {
  const vox_material *mat = &m->materials[index];
  int usable = mat->name[0] && !strchr(mat->name, '/') && memchr(mat->name, 0, VOX_NAME_MAX);
  for (int i = 0; usable && i < index; i++)
    usable = strncmp(m->materials[i].name, mat->name, VOX_NAME_MAX) != 0;
  if (usable)
    snprintf(out, size, "%s", mat->name);
  else
    snprintf(out, size, "label%d", mat->label);
}

/* A node list constraint group (NodeNumber, Sense, Value). */
static vox_status put_constraint_group(n88_file *f, int parent, const char *name,
                                       const char *type, size_t n, const unsigned *node,
                                       const signed char *sense, const double *value) {
  int grp, dim, v;
  W_TRY(f, nc_def_grp(parent, name, &grp), "a constraint group");
  W_TRY(f, put_text(grp, "Part", "Part1"), "a constraint group");
  W_TRY(f, put_text(grp, "Type", type), "a constraint group");
  W_TRY(f, nc_def_dim(grp, "NumberOfValues", n, &dim), "a constraint group");
  W_TRY(f, def_var(grp, "NodeNumber", NC_UINT, 1, &dim, n, &v), "NodeNumber");
  W_TRY(f, nc_put_var_uint(grp, v, node), "NodeNumber");
  W_TRY(f, def_var(grp, "Sense", NC_BYTE, 1, &dim, n, &v), "Sense");
  W_TRY(f, nc_put_var_schar(grp, v, sense), "Sense");
  /* float, as Faim's tools write and read it */
  W_TRY(f, def_var(grp, "Value", NC_FLOAT, 1, &dim, n, &v), "Value");
  W_TRY(f, nc_put_var_double(grp, v, value), "Value");
  return VOX_OK;
}

/* A node or element set group. */
static vox_status put_set(n88_file *f, int parent, const char *name, const char *dim_name,
                          const char *var_name, size_t n, const unsigned *ids) {
  int grp, dim, v;
  W_TRY(f, nc_def_grp(parent, name, &grp), "a set");
  W_TRY(f, put_text(grp, "Part", "Part1"), "a set");
  W_TRY(f, nc_def_dim(grp, dim_name, n, &dim), "a set");
  W_TRY(f, def_var(grp, var_name, NC_UINT, 1, &dim, n, &v), "a set");
  if (n) W_TRY(f, nc_put_var_uint(grp, v, ids), "a set");
  return VOX_OK;
}

typedef struct mesh {
  size_t n_nodes, n_elements;
  int64_t *node_number;  /* per grid node: 1-based n88 number, 0 unused */
  int64_t *node_of;      /* per n88 node (0-based): grid node */
  int64_t *element_of;   /* per n88 element (0-based): grid element */
} mesh;

static void mesh_free(mesh *me) {
  free(me->node_number);
  free(me->node_of);
  free(me->element_of);
}

/* Whether grid node (i, j, k) is a corner of a non-empty voxel. */
static int node_used(const vox_grid *g, const uint8_t *label, int64_t i, int64_t j, int64_t k) {
  for (int64_t c = k > 0 ? k - 1 : 0; c <= k && c < g->nz; c++)
    for (int64_t b = j > 0 ? j - 1 : 0; b <= j && b < g->ny; b++)
      for (int64_t a = i > 0 ? i - 1 : 0; a <= i && a < g->nx; a++)
        if (label[(c * g->ny + b) * g->nx + a]) return 1;
  return 0;
}

/* The mesh's nodes and elements in grid order, numbered layer by layer on
 * the threads: each z layer's count, the layers' starts by a prefix sum,
 * then each layer's numbers from its start (the writer's critical path
 * beside a clinical sample's solve: 0.3-0.4 s on one thread). */
static vox_status make_mesh(n88_file *f, const vox_model *m, mesh *me) {
  const vox_grid *g = &m->grid;
  const int64_t nn = vox_grid_nodes(g), node_layer = (g->nx + 1) * (g->ny + 1),
                element_layer = g->nx * g->ny;
  me->node_number = malloc((size_t)nn * sizeof *me->node_number);
  int64_t *start = malloc((size_t)(2 * (g->nz + 2)) * sizeof *start);
  if (!me->node_number || !start) {
    free(start);
    return vox_error(f->ctx, VOX_ERR_NO_MEMORY, "%s: out of memory", f->path);
  }
  int64_t *elem_start = start + g->nz + 2; /* [k]: elements before layer k */
  const uint8_t *label = m->label;
  /* node layers 0..nz, element layers 0..nz-1: used nodes and elements counted */
#pragma omp parallel for schedule(static)
  for (int64_t k = 0; k <= g->nz; k++) {
    int64_t used = 0, bone = 0;
    for (int64_t j = 0; j <= g->ny; j++)
      for (int64_t i = 0; i <= g->nx; i++) {
        const int u = node_used(g, label, i, j, k);
        me->node_number[k * node_layer + j * (g->nx + 1) + i] = u;
        used += u;
      }
    if (k < g->nz)
      for (int64_t e = k * element_layer; e < (k + 1) * element_layer; e++) bone += label[e] != 0;
    start[k + 1] = used, elem_start[k + 1] = bone;
  }
  start[0] = elem_start[0] = 0;
  for (int64_t k = 0; k <= g->nz; k++) start[k + 1] += start[k];
  for (int64_t k = 0; k < g->nz; k++) elem_start[k + 1] += elem_start[k];
  me->n_nodes = (size_t)start[g->nz + 1];
  me->n_elements = (size_t)elem_start[g->nz];
  me->node_of = malloc((me->n_nodes + 1) * sizeof *me->node_of);
  me->element_of = malloc((me->n_elements + 1) * sizeof *me->element_of);
  if (!me->node_of || !me->element_of) {
    free(start);
    return vox_error(f->ctx, VOX_ERR_NO_MEMORY, "%s: out of memory", f->path);
  }
#pragma omp parallel for schedule(static)
  for (int64_t k = 0; k <= g->nz; k++) {
    int64_t next = start[k];
    for (int64_t n = k * node_layer; n < (k + 1) * node_layer; n++)
      if (me->node_number[n]) {
        me->node_of[next] = n;
        me->node_number[n] = ++next; /* 1-based */
      }
    if (k < g->nz) {
      int64_t c = elem_start[k];
      for (int64_t e = k * element_layer; e < (k + 1) * element_layer; e++)
        if (label[e]) me->element_of[c++] = e;
    }
  }
  free(start);
  if (me->n_nodes > UINT32_MAX || me->n_elements > UINT32_MAX)
    return vox_error(f->ctx, VOX_ERR_UNSUPPORTED,
                     "%s: more than 2^32 nodes, which n88model numbers cannot hold", f->path);
  return VOX_OK;
}

static vox_status write_part(n88_file *f, const vox_model *m, const mesh *me, int dim3) {
  const vox_grid *g = &m->grid;
  int parts, part, elements, hexa, materials, table, d[2], v;
  W_TRY(f, nc_def_grp(f->ncid, "Parts", &parts), "group Parts");
  W_TRY(f, nc_def_grp(parts, "Part1", &part), "group Part1");
  W_TRY(f, nc_def_dim(part, "NumberOfNodes", me->n_nodes, &d[0]), "NumberOfNodes");
  d[1] = dim3;
  /* float, as n88modelgenerator writes them; voxfe's own reading takes the
   * exact grid from the voxfe_grid_* attributes */
  W_TRY(f, def_var(part, "NodeCoordinates", NC_FLOAT, 2, d, me->n_nodes, &v), "NodeCoordinates");
  float *xyz = malloc((3 * me->n_nodes + 1) * sizeof *xyz);
  unsigned *ids = malloc(8 * (me->n_elements + 1) * sizeof *ids);
  if (!xyz || !ids) {
    free(xyz);
    free(ids);
    return vox_error(f->ctx, VOX_ERR_NO_MEMORY, "%s: out of memory", f->path);
  }
  /* here and below the arrays made on the threads (netCDF's conversion
   * from double runs on one) */
  const ptrdiff_t n_nodes = (ptrdiff_t)me->n_nodes, n_elements = (ptrdiff_t)me->n_elements;
#pragma omp parallel for schedule(static)
  for (ptrdiff_t n = 0; n < n_nodes; n++) {
    const int64_t gn = me->node_of[n];
    const int64_t ijk[3] = {gn % (g->nx + 1), (gn / (g->nx + 1)) % (g->ny + 1),
                            gn / ((g->nx + 1) * (g->ny + 1))};
    for (int a = 0; a < 3; a++)
      xyz[3 * n + a] = (float)(g->origin[a] + (double)ijk[a] * g->voxel_size[a]);
  }
  int err = nc_put_var_float(part, v, xyz);
  free(xyz);
  if (err) {
    free(ids);
    return nc_fail(f, VOX_ERR_IO, err, "cannot write NodeCoordinates");
  }

  vox_status s = VOX_OK;
#define S_TRY(call, what)                                                         \
  if (!s && (err = (call))) s = nc_fail(f, VOX_ERR_IO, err, "cannot write " what)
  S_TRY(nc_def_grp(part, "Elements", &elements), "group Elements");
  S_TRY(nc_def_grp(elements, "Hexahedrons", &hexa), "group Hexahedrons");
  S_TRY(nc_def_dim(hexa, "NumberOfElements", me->n_elements, &d[0]), "NumberOfElements");
  S_TRY(nc_def_dim(hexa, "NumberOfNodesPerElement", 8, &d[1]), "NumberOfNodesPerElement");
#pragma omp parallel for schedule(static)
  for (ptrdiff_t e = 0; e < n_elements; e++) ids[e] = (unsigned)(e + 1);
  S_TRY(def_var(hexa, "ElementNumber", NC_UINT, 1, d, me->n_elements, &v), "ElementNumber");
  S_TRY(nc_put_var_uint(hexa, v, ids), "ElementNumber");
#pragma omp parallel for schedule(static)
  for (ptrdiff_t e = 0; e < n_elements; e++) {
    const int64_t ge = me->element_of[e];
    const int64_t i = ge % g->nx, j = (ge / g->nx) % g->ny, k = ge / (g->nx * g->ny);
    for (int a = 0; a < 8; a++)
      ids[8 * e + a] = (unsigned)me->node_number[node_index(
          g, i + n88_voxel_corner[a][0], j + n88_voxel_corner[a][1], k + n88_voxel_corner[a][2])];
  }
  S_TRY(def_var(hexa, "NodeNumbers", NC_UINT, 2, d, me->n_elements, &v), "NodeNumbers");
  S_TRY(nc_put_var_uint(hexa, v, ids), "NodeNumbers");
#pragma omp parallel for schedule(static)
  for (ptrdiff_t e = 0; e < n_elements; e++) ids[e] = m->label[me->element_of[e]];
  S_TRY(def_var(hexa, "MaterialID", NC_UINT, 1, d, me->n_elements, &v), "MaterialID");
  S_TRY(nc_put_var_uint(hexa, v, ids), "MaterialID");
  free(ids);

  /* the materials: definitions at the root, the ID table in the part */
  S_TRY(nc_def_grp(f->ncid, "MaterialDefinitions", &materials), "group MaterialDefinitions");
  S_TRY(nc_def_grp(part, "MaterialTable", &table), "group MaterialTable");
  S_TRY(nc_def_dim(table, "Size", (size_t)m->n_materials, &d[0]), "MaterialTable");
  int v_id = -1, v_name = -1;
  S_TRY(nc_def_var(table, "ID", NC_UINT, 1, d, &v_id), "MaterialTable");
  S_TRY(nc_def_var(table, "MaterialName", NC_STRING, 1, d, &v_name), "MaterialTable");
  for (int i = 0; !s && i < m->n_materials; i++) {
    char name[VOX_NAME_MAX + 16];
    material_group_name(m, i, name, sizeof name);
    int grp;
    const vox_material *mat = &m->materials[i];
    S_TRY(nc_def_grp(materials, name, &grp), "a material");
    S_TRY(put_text(grp, "Type", "LinearIsotropic"), "a material");
    S_TRY(nc_put_att_double(grp, NC_GLOBAL, "E", NC_DOUBLE, 1, &mat->youngs_modulus), "E");
    S_TRY(nc_put_att_double(grp, NC_GLOBAL, "nu", NC_DOUBLE, 1, &mat->poisson_ratio), "nu");
    const size_t at = (size_t)i;
    const unsigned id = mat->label;
    const char *text = name;
    S_TRY(nc_put_var1_uint(table, v_id, &at, &id), "MaterialTable");
    S_TRY(nc_put_var1_string(table, v_name, &at, &text), "MaterialTable");
  }
#undef S_TRY
  return s;
}

/* The extras of an input (vox_n88model_read_extras): its problem's
 * constraint groups, each a run of the model's constraints (or loads, for
 * force groups) in the order read; its convergence set and sets on grid
 * nodes and elements; its lists and Log. */
typedef struct n88_group {
  char name[NC_MAX_NAME + 1];
  int force;            /* NodeAxisForce: a run of loads; else of constraints */
  size_t start, count;
} n88_group;

typedef struct n88_set {
  char name[NC_MAX_NAME + 1];
  int elements;  /* element set (grid elements), else node set (grid nodes) */
  size_t n;
  int64_t *ids;
} n88_set;

struct vox_n88model_extras {
  n88_group *groups;
  size_t n_groups, n_constraints, n_loads;
  /* the convergence set: a constraint group of its own, not in the list */
  char convergence_name[NC_MAX_NAME + 1], convergence_type[64];
  size_t n_convergence;
  int64_t *convergence_node;
  uint8_t *convergence_sense;
  double *convergence_value;
  n88_set *sets;
  size_t n_sets;
  char *node_lists, *element_lists, *log;
};

void vox_n88model_extras_free(vox_n88model_extras *x) {
  if (!x) return;
  for (size_t i = 0; i < x->n_sets; i++) free(x->sets[i].ids);
  free(x->sets), free(x->groups), free(x->convergence_node), free(x->convergence_sense);
  free(x->convergence_value), free(x->node_lists), free(x->element_lists), free(x->log);
  free(x);
}

/* The groups a compression test's constraints go to, as vtkbone's
 * compression test names them. */
enum {
  G_BOTTOM_FIXED, G_TOP_FIXED, G_TOP_DISPLACEMENT, G_PINNED, G_FACE_X0, /* .. G_FACE_Z1 */
  G_LOADS = G_FACE_X0 + 6, N_TEST_GROUPS
};
static const char *const test_group_names[N_TEST_GROUPS] = {
    "bottom_fixed", "top_fixed", "top_displacement", "pinned_nodes", "face_x0_fixed",
    "face_x1_fixed", "face_y0_fixed", "face_y1_fixed", "face_z0_fixed", "face_z1_fixed", "loads"};

static void grid_ijk(const vox_grid *g, int64_t node, int64_t ijk[3]) {
  ijk[0] = node % (g->nx + 1), ijk[1] = (node / (g->nx + 1)) % (g->ny + 1);
  ijk[2] = node / ((g->nx + 1) * (g->ny + 1));
}

/* The group of a compression test's constraint: the axial dofs of the two
 * plates, the plates' lateral dofs (fixed with friction; otherwise the pin,
 * or the confining faces'), the lateral faces' normal dofs. */
static int test_group(const vox_grid *g, int axis, int test, const vox_constraint *c) {
  const int64_t n[3] = {g->nx, g->ny, g->nz};
  int64_t ijk[3];
  grid_ijk(g, c->node, ijk);
  const int a = c->component, bottom = ijk[axis] == 0, top = ijk[axis] == n[axis];
  if (a == axis && bottom) return G_BOTTOM_FIXED;
  if (a == axis && top) return G_TOP_DISPLACEMENT;
  if (test == VOX_TEST_FRICTION && (bottom || top)) return bottom ? G_BOTTOM_FIXED : G_TOP_FIXED;
  if (test == VOX_TEST_CONFINED && a != axis && (ijk[a] == 0 || ijk[a] == n[a]))
    return G_FACE_X0 + 2 * a + (ijk[a] == n[a]);
  return G_PINNED;
}

/* Whether the model's constraints and loads are still the runs of the
 * extras' groups (the groups' runs tile those read; constraints after them
 * are the analysis' own: vox_hold_rigid_motions). */
static int extras_fit(const vox_model *m, const vox_n88model_extras *x) {
  if (!x || x->n_constraints > m->n_constraints || x->n_loads != m->n_loads) return 0;
  size_t next[2] = {0, 0};
  for (size_t i = 0; i < x->n_groups; i++) {
    if (x->groups[i].start != next[x->groups[i].force]) return 0;
    next[x->groups[i].force] += x->groups[i].count;
  }
  return next[0] == x->n_constraints && next[1] == m->n_loads;
}

/* One constraint group of node entries on the mesh (entries of nodes no
 * element uses are left out); nothing when none is left. Appends its name
 * to the Problem's list `list` (when not NULL). */
typedef struct entries {
  unsigned *node;
  signed char *sense;
  double *value;
  size_t n;
} entries;

static vox_status flush_group(n88_file *f, int parent, const char *name, int force, entries *e,
                              char *list, size_t size) {
  vox_status s = VOX_OK;
  if (e->n) {
    s = put_constraint_group(f, parent, name, force ? "NodeAxisForce" : "NodeAxisDisplacement",
                             e->n, e->node, e->sense, e->value);
    if (!s && list)
      snprintf(list + strlen(list), size - strlen(list), "%s%s", list[0] ? "," : "", name);
  }
  e->n = 0;
  return s;
}

static void add_entry(entries *e, const mesh *me, int64_t node, int component, double value) {
  if (!me->node_number[node]) return; /* no element uses it */
  e->node[e->n] = (unsigned)me->node_number[node];
  e->sense[e->n] = (signed char)(component + 1);
  e->value[e->n++] = value;
}

/* Constraints and loads of case 0, on nodes of the mesh, in groups as
 * `layout` names them, and the convergence set; returns the Problem's
 * Constraints list in `list` and the convergence set's name in
 * `convergence` ("" for none). */
static vox_status write_constraints(n88_file *f, const vox_model *m, const mesh *me,
                                    const vox_n88model_layout *layout, char *list, size_t size,
                                    char *convergence, size_t convergence_size) {
  const vox_n88model_extras *x = layout && extras_fit(m, layout->extras) ? layout->extras : NULL;
  const int test = !x && layout && layout->axis >= 0 && layout->axis <= 2;
  size_t n = m->n_constraints > m->n_loads ? m->n_constraints : m->n_loads;
  if (x && x->n_convergence > n) n = x->n_convergence;
  list[0] = convergence[0] = '\0';
  if (!n) return VOX_OK;
  entries e = {malloc(n * sizeof *e.node), malloc(n), malloc(n * sizeof *e.value), 0};
  vox_status s = VOX_OK;
  int grp = -1, err;
  if (!e.node || !e.sense || !e.value)
    s = vox_error(f->ctx, VOX_ERR_NO_MEMORY, "%s: out of memory", f->path);
  else if ((err = nc_def_grp(f->ncid, "Constraints", &grp)))
    s = nc_fail(f, VOX_ERR_IO, err, "cannot write group Constraints");
  if (x) { /* the input's groups, in its order */
    for (size_t i = 0; !s && i < x->n_groups; i++) {
      const n88_group *gr = &x->groups[i];
      for (size_t j = gr->start; j < gr->start + gr->count; j++)
        if (gr->force)
          add_entry(&e, me, m->loads[j].node, m->loads[j].component, m->loads[j].value);
        else
          add_entry(&e, me, m->constraints[j].node, m->constraints[j].component,
                    m->constraints[j].value);
      s = flush_group(f, grp, gr->name, gr->force, &e, list, size);
    }
    /* the constraints the analysis added (the motions the input left free) */
    for (size_t j = x->n_constraints; j < m->n_constraints; j++)
      add_entry(&e, me, m->constraints[j].node, m->constraints[j].component,
                m->constraints[j].value);
    if (!s) s = flush_group(f, grp, "pinned_nodes", 0, &e, list, size);
    for (size_t j = 0; !s && j < x->n_convergence; j++)
      add_entry(&e, me, x->convergence_node[j], x->convergence_sense[j], x->convergence_value[j]);
    if (!s && e.n) snprintf(convergence, convergence_size, "%s", x->convergence_name);
    if (!s) s = flush_group(f, grp, x->convergence_name,
                            !strcmp(x->convergence_type, "NodeAxisForce"), &e, NULL, 0);
  } else if (test) {
    for (int gr = 0; !s && gr < G_LOADS; gr++) {
      for (size_t i = 0; i < m->n_constraints; i++)
        if (test_group(&m->grid, layout->axis, layout->test, &m->constraints[i]) == gr)
          add_entry(&e, me, m->constraints[i].node, m->constraints[i].component,
                    m->constraints[i].value);
      s = flush_group(f, grp, test_group_names[gr], 0, &e, list, size);
    }
    /* the convergence set, as n88modelgenerator writes it: the top plate's
     * displaced dofs, a force group (the reactions summed over it) */
    for (size_t i = 0; !s && i < m->n_constraints; i++)
      if (test_group(&m->grid, layout->axis, layout->test, &m->constraints[i]) ==
          G_TOP_DISPLACEMENT)
        add_entry(&e, me, m->constraints[i].node, m->constraints[i].component,
                  m->constraints[i].value);
    if (!s && e.n) snprintf(convergence, convergence_size, "convergence_set");
    if (!s) s = flush_group(f, grp, "convergence_set", 1, &e, NULL, 0);
  } else {
    for (size_t i = 0; i < m->n_constraints; i++)
      add_entry(&e, me, m->constraints[i].node, m->constraints[i].component,
                m->constraints[i].value);
    if (!s) s = flush_group(f, grp, "displacements", 0, &e, list, size);
  }
  if (!x) {
    for (size_t i = 0; i < m->n_loads; i++)
      if (m->loads[i].load_case == 0)
        add_entry(&e, me, m->loads[i].node, m->loads[i].component, m->loads[i].value);
    if (!s) s = flush_group(f, grp, "loads", 1, &e, list, size);
  }
  free(e.node);
  free(e.sense);
  free(e.value);
  return s;
}

/* A set on the mesh: grid nodes or elements renumbered, those the mesh
 * lacks left out. */
static vox_status put_mesh_set(n88_file *f, int parent, const mesh *me, const n88_set *set,
                               unsigned *buf) {
  size_t c = 0;
  if (set->elements) {
    /* element_of is increasing: a binary search per element */
    for (size_t i = 0; i < set->n; i++) {
      size_t lo = 0, hi = me->n_elements;
      while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        if (me->element_of[mid] < set->ids[i]) lo = mid + 1;
        else hi = mid;
      }
      if (lo < me->n_elements && me->element_of[lo] == set->ids[i]) buf[c++] = (unsigned)(lo + 1);
    }
    return put_set(f, parent, set->name, "NumberOfElements", "ElementNumber", c, buf);
  }
  for (size_t i = 0; i < set->n; i++)
    if (me->node_number[set->ids[i]]) buf[c++] = (unsigned)me->node_number[set->ids[i]];
  return put_set(f, parent, set->name, "NumberOfNodes", "NodeNumber", c, buf);
}

/* The 1-based numbers, in order, of the mesh's nodes or elements whose
 * grid index (`of`, in a grid of nx x ny along x and y) has coordinate
 * `plane` along axis a, into `out`; returns their count. On the threads:
 * each block's count, then each block's numbers from its start. */
static size_t select_on_plane(const int64_t *of, size_t n, int64_t nx, int64_t ny, int a,
                              int64_t plane, unsigned *out) {
  enum { BLOCKS = 256 };
  size_t start[BLOCKS + 1];
  start[0] = 0;
#pragma omp parallel for schedule(static)
  for (int b = 0; b < BLOCKS; b++) {
    size_t c = 0;
    for (size_t i = n * (size_t)b / BLOCKS; i < n * (size_t)(b + 1) / BLOCKS; i++) {
      const int64_t q = of[i], x = a == 0 ? q % nx : a == 1 ? q / nx % ny : q / (nx * ny);
      c += x == plane;
    }
    start[b + 1] = c;
  }
  for (int b = 0; b < BLOCKS; b++) start[b + 1] += start[b];
#pragma omp parallel for schedule(static)
  for (int b = 0; b < BLOCKS; b++) {
    size_t c = start[b];
    for (size_t i = n * (size_t)b / BLOCKS; i < n * (size_t)(b + 1) / BLOCKS; i++) {
      const int64_t q = of[i], x = a == 0 ? q % nx : a == 1 ? q / nx % ny : q / (nx * ny);
      if (x == plane) out[c++] = (unsigned)(i + 1);
    }
  }
  return start[BLOCKS];
}

/* The sets: the extras' (kept), or face_x0 ... face_z1 of the grid's box
 * with the test's axis first (as n88modelgenerator orders them), or none;
 * `node_lists` and `element_lists` get the Problem's post-processing lists. */
static vox_status write_sets(n88_file *f, const vox_model *m, const mesh *me,
                             const vox_n88model_layout *layout, char *node_lists,
                             char *element_lists, size_t size) {
  const vox_n88model_extras *x = layout ? layout->extras : NULL;
  const int faces = !x && layout && layout->axis >= 0 && layout->axis <= 2;
  node_lists[0] = element_lists[0] = '\0';
  if (!faces && !(x && x->n_sets)) return VOX_OK;
  if (x) {
    snprintf(node_lists, size, "%s", x->node_lists ? x->node_lists : "");
    snprintf(element_lists, size, "%s", x->element_lists ? x->element_lists : "");
  }
  const vox_grid *g = &m->grid;
  const int64_t n_axis[3] = {g->nx, g->ny, g->nz};
  unsigned *buf = malloc((me->n_nodes + me->n_elements + 1) * sizeof *buf);
  vox_status s = VOX_OK;
  int sets, node_sets, elem_sets, err;
  if (!buf) s = vox_error(f->ctx, VOX_ERR_NO_MEMORY, "%s: out of memory", f->path);
  else if ((err = nc_def_grp(f->ncid, "Sets", &sets)) ||
           (err = nc_def_grp(sets, "NodeSets", &node_sets)) ||
           (err = nc_def_grp(sets, "ElementSets", &elem_sets)))
    s = nc_fail(f, VOX_ERR_IO, err, "cannot write group Sets");
  for (size_t i = 0; !s && x && i < x->n_sets; i++)
    s = put_mesh_set(f, x->sets[i].elements ? elem_sets : node_sets, me, &x->sets[i], buf);
  for (int pass = 0; !s && faces && pass < 2; pass++)
    for (int q = 0; !s && q < 3; q++) {
      const int order[3] = {layout->axis, layout->axis == 0 ? 1 : 0, layout->axis == 2 ? 1 : 2};
      const int a = order[q];
      for (int end = 0; !s && end < 2; end++) {
        char name[24]; /* "face_x0" .. "face_z1"; room for any int, which -O1 cannot rule out */
        snprintf(name, sizeof name, "face_%c%d", "xyz"[a], end);
        size_t c;
        if (pass == 0) {
          c = select_on_plane(me->node_of, me->n_nodes, g->nx + 1, g->ny + 1, a,
                              end ? n_axis[a] : 0, buf);
          s = put_set(f, node_sets, name, "NumberOfNodes", "NodeNumber", c, buf);
        } else {
          c = select_on_plane(me->element_of, me->n_elements, g->nx, g->ny, a,
                              end ? n_axis[a] - 1 : 0, buf);
          s = put_set(f, elem_sets, name, "NumberOfElements", "ElementNumber", c, buf);
        }
      }
    }
  if (faces) {
    const char axis_letter = "xyz"[layout->axis];
    snprintf(node_lists, size, "face_%c1,face_%c0", axis_letter, axis_letter);
    snprintf(element_lists, size, "face_%c1,face_%c0", axis_letter, axis_letter);
  }
  free(buf);
  return s;
}

/* Node or element values of the mesh, gathered from a grid array of
 * `width` values per node or element (`of`: the grid index of each; NULL:
 * the array is in the mesh's order already). */
static vox_status put_values(n88_file *f, int grp, const char *name, nc_type type, int ndims,
                             const int *dims, const double *grid_values, const int64_t *of,
                             size_t n, int width) {
  /* gathered (and made float) on the writer's threads: netCDF's own
   * conversion is one-threaded */
  const int single = type == NC_FLOAT;
  void *v = vox_alloc_buffer(n * (size_t)width * (single ? sizeof(float) : sizeof(double)));
  if (!v) return vox_error(f->ctx, VOX_ERR_NO_MEMORY, "%s: out of memory", f->path);
  const ptrdiff_t count = (ptrdiff_t)n;
#pragma omp parallel for schedule(static)
  for (ptrdiff_t i = 0; i < count; i++) {
    const double *g = grid_values + (size_t)width * (of ? (size_t)of[i] : (size_t)i);
    for (int c = 0; c < width; c++) {
      if (single)
        ((float *)v)[(size_t)width * (size_t)i + c] = (float)g[c];
      else
        ((double *)v)[(size_t)width * (size_t)i + c] = g[c];
    }
  }
  int varid, err = def_var(grp, name, type, ndims, dims, n, &varid);
  if (!err) err = single ? nc_put_var_float(grp, varid, v) : nc_put_var_double(grp, varid, v);
  free(v);
  return err ? nc_fail(f, VOX_ERR_IO, err, "cannot write a solution variable") : VOX_OK;
}

/* One file's writing: by vox_n88model_write in the calling thread with
 * everything at hand, or by a thread of its own that vox_n88model_writer_*
 * feed: the model's parts while the caller solves, the displacement while
 * it computes the fields, then the rest. */
struct vox_n88model_writer {
  vox_context *ctx; /* the writer's own when it runs in a thread */
  char *path;
  const vox_model *model;
  vox_n88model_layout layout; /* its axis -1 when none was given */
  int with_solution;
  size_t n_bone;           /* the model's non-empty voxels (check_output) */
  vox_analysis_output out; /* handed over at stage HAS_OUTPUT */
  vox_stage_gate gate;
  vox_writer_thread thread;
};
typedef struct vox_n88model_writer n88_writer;

/* What the caller has handed over: the gate's stages (SOLVING: the solver
 * iterates on the device, the host mostly idle). */
enum { SOLVING = 1, HAS_DISPLACEMENT, HAS_OUTPUT };

static vox_status wait_for(n88_file *f, n88_writer *w, int stage) {
  return vox_gate_wait(&w->gate, stage)
             ? VOX_OK
             : vox_error(f->ctx, VOX_ERR_INVALID_ARGUMENT, "%s: cancelled", f->path);
}

/* Solution1: the displacement once the solve is done, the reactions and
 * the element fields once the caller has them. */
static vox_status write_solution(n88_file *f, n88_writer *w, const mesh *me) {
  const vox_model *m = w->model;
  /* The deflated variables' chunks (node numbers, sets) stay in HDF5's
   * chunk cache until flushed; deflated (one-threaded) while the solver
   * iterates rather than in nc_close after the fields (as result_file.c) */
  vox_status s = wait_for(f, w, SOLVING);
  if (s) return s;
  int err = nc_sync(f->ncid);
  if (err) return nc_fail(f, VOX_ERR_IO, err, "cannot write the mesh");
  vox_start_writeback(f->ncid); /* the mesh to the disk while the solver iterates */
  s = wait_for(f, w, HAS_DISPLACEMENT);
  if (s) return s;
  int sols, sol, nodes, elems, d_nodes[2], d_elems[2];
  if ((err = nc_def_grp(f->ncid, "Solutions", &sols)) ||
      (err = nc_def_grp(sols, "Solution1", &sol)) ||
      (err = put_text(sol, "Problem", "Problem1")) ||
      (err = nc_def_grp(sol, "NodeValues", &nodes)) ||
      (err = nc_def_dim(nodes, "NumberOfNodes", me->n_nodes, &d_nodes[0])) ||
      (err = nc_inq_dimid(f->ncid, "Dimensionality", &d_nodes[1])) ||
      (err = nc_def_grp(sol, "ElementValues", &elems)) ||
      (err = nc_def_dim(elems, "NumberOfElements", me->n_elements, &d_elems[0])) ||
      (err = nc_def_dim(elems, "NumberOfStressStrainComponents", 6, &d_elems[1])))
    return nc_fail(f, VOX_ERR_IO, err, "cannot write group Solutions");
  s = put_values(f, nodes, "Displacement", NC_DOUBLE, 2, d_nodes, m->displacement, me->node_of,
                 me->n_nodes, 3);
  if (!s) vox_start_writeback(f->ncid); /* while the caller computes the fields */
  if (!s) s = wait_for(f, w, HAS_OUTPUT);
  const vox_analysis_output *out = &w->out;
  if (!s)
    s = put_values(f, nodes, "ReactionForce", NC_FLOAT, 2, d_nodes, out->reaction, me->node_of,
                   me->n_nodes, 3);
  const struct {
    const char *name;
    const double *data;
    int width;
  } ev[] = {{"Strain", out->fields.strain, 6},
            {"Stress", out->fields.stress, 6},
            {"StrainEnergyDensity", out->fields.sed, 1},
            {"VonMisesStress", out->fields.von_mises, 1}};
  /* compact fields (one entry per bone element) are already in the mesh's
   * element order: the non-empty voxels in grid order */
  const int64_t *of = out->fields.elements ? NULL : me->element_of;
  for (size_t i = 0; !s && i < sizeof ev / sizeof ev[0]; i++) {
    s = put_values(f, elems, ev[i].name, NC_FLOAT, ev[i].width > 1 ? 2 : 1, d_elems, ev[i].data,
                   of, me->n_elements, ev[i].width);
    if (!s) vox_start_writeback(f->ncid); /* to the disk while the next is made */
  }
  return s;
}

/* The Log: the input's, then this run's line of the history (the last). */
static char *make_log(const vox_model *m, const vox_n88model_extras *x) {
  const char *history = m->history_text ? m->history_text : "";
  size_t len = strlen(history);
  while (len && history[len - 1] == '\n') len--;
  size_t start = len;
  while (start && history[start - 1] != '\n') start--;
  const char *input = x && x->log ? x->log : "";
  const size_t n_input = strlen(input);
  char *log = malloc(n_input + (len - start) + 3);
  if (!log) return NULL;
  snprintf(log, n_input + (len - start) + 3, "%s%s%.*s\n", input,
           n_input && input[n_input - 1] != '\n' ? "\n" : "", (int)(len - start), history + start);
  return log;
}

static vox_status write_all(n88_file *f, n88_writer *w) {
  const vox_model *m = w->model;
  const vox_n88model_layout *layout = &w->layout;
  mesh me = {0};
  vox_status s = make_mesh(f, m, &me);
  int dim3, problems, problem, err = 0;
  char list[4096], convergence[NC_MAX_NAME + 1], node_lists[4096], element_lists[4096];
  char *log = s ? NULL : make_log(m, layout->extras);
  if (!s && !log) s = vox_error(f->ctx, VOX_ERR_NO_MEMORY, "%s: out of memory", f->path);
  if (!s && ((err = put_text(f->ncid, "Conventions", N88_CONVENTIONS)) ||
             (err = put_text(f->ncid, "ActiveProblem", "Problem1")) ||
             (w->with_solution && (err = put_text(f->ncid, "ActiveSolution", "Solution1"))) ||
             (m->history_text && (err = put_text(f->ncid, "History", m->history_text))) ||
             (err = put_text(f->ncid, "Log", log)) ||
             (err = nc_put_att_longlong(f->ncid, NC_GLOBAL, "voxfe_grid_size", NC_INT64, 3,
                                        (const long long[3]){m->grid.nx, m->grid.ny,
                                                             m->grid.nz})) ||
             (err = nc_put_att_double(f->ncid, NC_GLOBAL, "voxfe_grid_origin", NC_DOUBLE, 3,
                                      m->grid.origin)) ||
             (err = nc_put_att_double(f->ncid, NC_GLOBAL, "voxfe_voxel_size", NC_DOUBLE, 3,
                                      m->grid.voxel_size)) ||
             (err = nc_def_dim(f->ncid, "Dimensionality", 3, &dim3))))
    s = nc_fail(f, VOX_ERR_IO, err, "cannot write the header");
  free(log);
  if (!s) s = write_part(f, m, &me, dim3);
  if (!s)
    s = write_constraints(f, m, &me, layout, list, sizeof list, convergence, sizeof convergence);
  if (!s) s = write_sets(f, m, &me, layout, node_lists, element_lists, sizeof node_lists);
  if (!s && ((err = nc_def_grp(f->ncid, "Problems", &problems)) ||
             (err = nc_def_grp(problems, "Problem1", &problem)) ||
             (err = put_text(problem, "Part", "Part1")) ||
             (list[0] && (err = put_text(problem, "Constraints", list))) ||
             (convergence[0] && (err = put_text(problem, "ConvergenceSet", convergence))) ||
             (node_lists[0] && (err = put_text(problem, "PostProcessingNodeSets", node_lists))) ||
             (element_lists[0] &&
              (err = put_text(problem, "PostProcessingElementSets", element_lists)))))
    s = nc_fail(f, VOX_ERR_IO, err, "cannot write group Problems");
  if (!s && w->with_solution) s = write_solution(f, w, &me);
  mesh_free(&me);
  return s;
}

/* The file under a temporary name, synced, then renamed into place (or
 * removed on failure). */
static vox_status write_file(n88_writer *w) {
  const char *path = w->path;
  vox_context *ctx = w->ctx;
  char *tmp = NULL;
  vox_status s = vox_create_temp(ctx, path, &tmp);
  if (s) return s;
  n88_file f = {ctx, path, -1};
  int err = nc_create(tmp, NC_NETCDF4 | NC_CLOBBER, &f.ncid);
  if (err) {
    s = nc_fail(&f, VOX_ERR_IO, err, "cannot create the file");
  } else {
    s = write_all(&f, w);
    err = nc_close(f.ncid);
    if (!s && err) s = nc_fail(&f, VOX_ERR_IO, err, "cannot write the file");
  }
  if (!s && (err = vox_sync_file(tmp)))
    s = vox_error(ctx, VOX_ERR_IO, "%s: cannot write the file: %s", path, strerror(err));
  if (!s && (err = vox_output_place(tmp, path)))
    s = vox_error(ctx, VOX_ERR_IO, "%s: cannot move the written file into place: %s", path,
                  strerror(err));
  if (s) unlink(tmp);
  vox_temp_unregister(tmp);
  free(tmp);
  return s;
}

static size_t count_bone(const vox_model *model) {
  size_t bone = 0;
  const int64_t ne = vox_grid_elements(&model->grid);
  for (int64_t e = 0; e < ne; e++) bone += model->label[e] != 0;
  return bone;
}

/* A solution needs the displacement and every field, the compact fields
 * one value per non-empty voxel (`bone` of them: counted once, before the
 * solve where a writer runs beside it). */
static vox_status check_output(vox_context *ctx, const char *path, const vox_model *model,
                               size_t bone, const vox_analysis_output *output) {
  if (!model->displacement || !output->reaction || !output->fields.strain ||
      !output->fields.stress || !output->fields.sed || !output->fields.von_mises ||
      !output->fields.effective_strain)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "%s: a solution needs the displacement and every field", path);
  if (output->fields.elements && bone != output->fields.n_elements)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "%s: %zu element values for %zu bone elements",
                     path, output->fields.n_elements, bone);
  return VOX_OK;
}

static vox_n88model_layout layout_or_none(const vox_n88model_layout *layout) {
  return layout ? *layout : (vox_n88model_layout){.axis = -1, .test = 0, .extras = NULL};
}

vox_status vox_n88model_write(vox_context *ctx, const char *path, const vox_model *model,
                              const vox_analysis_output *output,
                              const vox_n88model_layout *layout) {
  vox_status s = vox_model_validate(ctx, model);
  if (!s && output) s = check_output(ctx, path, model, count_bone(model), output);
  if (s) return s;
  n88_writer w = {.ctx = ctx, .path = (char *)path, .model = model,
                  .layout = layout_or_none(layout), .with_solution = output != NULL};
  if (output) w.out = *output;
  vox_gate_init(&w.gate, HAS_OUTPUT); /* everything at hand */
  s = write_file(&w);
  vox_gate_destroy(&w.gate);
  return s;
}

static vox_status write_in_thread(void *w) { return write_file(w); }

static void free_writer(n88_writer *w) {
  vox_gate_destroy(&w->gate);
  vox_context_destroy(w->ctx);
  free(w->path);
  free(w);
}

vox_status vox_n88model_writer_start(vox_context *ctx, const char *path, const vox_model *model,
                                     const vox_n88model_layout *layout,
                                     vox_n88model_writer **writer) {
  *writer = NULL;
  vox_status s = vox_model_validate(ctx, model);
  if (s) return s;
  n88_writer *w = calloc(1, sizeof *w);
  char *copy = strdup(path);
  vox_context *own = NULL;
  if (!w || !copy || vox_context_create(&own)) {
    free(w), free(copy), vox_context_destroy(own);
    return vox_error(ctx, VOX_ERR_NO_MEMORY, "%s: out of memory", path);
  }
  w->ctx = own, w->path = copy, w->model = model, w->layout = layout_or_none(layout);
  w->with_solution = 1;
  w->n_bone = count_bone(model);
  vox_gate_init(&w->gate, 0);
  if (vox_writer_start(&w->thread, write_in_thread, w)) {
    free_writer(w);
    return vox_error(ctx, VOX_ERR_NO_MEMORY, "%s: cannot start the writing thread", path);
  }
  *writer = w;
  return VOX_OK;
}

void vox_n88model_writer_solving(vox_n88model_writer *w) { vox_gate_raise(&w->gate, SOLVING); }

void vox_n88model_writer_put_displacement(vox_n88model_writer *w) {
  vox_gate_raise(&w->gate, HAS_DISPLACEMENT);
}

vox_status vox_n88model_writer_put_fields(vox_context *ctx, vox_n88model_writer *w,
                                          const double *reaction,
                                          const vox_element_fields *fields) {
  const vox_analysis_output out = {.reaction = reaction, .fields = *fields};
  const vox_status s = check_output(ctx, w->path, w->model, w->n_bone, &out);
  if (s) return s;
  w->out = out;
  vox_gate_raise(&w->gate, HAS_OUTPUT);
  return VOX_OK;
}

vox_status vox_n88model_writer_finish(vox_context *ctx, vox_n88model_writer *w,
                                      const vox_analysis_output *output) {
  vox_status s = VOX_OK;
  if (w->gate.stage < HAS_OUTPUT) { /* the caller's own writes: no lock */
    s = output ? vox_n88model_writer_put_fields(ctx, w, output->reaction, &output->fields)
               : vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                           "%s: no solution handed over; nothing written", w->path);
    if (s) {
      vox_n88model_writer_cancel(w);
      return s;
    }
  }
  s = vox_writer_join(&w->thread);
  if (s) vox_error(ctx, s, "%s", vox_context_message(w->ctx));
  free_writer(w);
  return s;
}

void vox_n88model_writer_cancel(vox_n88model_writer *w) {
  if (!w) return;
  vox_gate_cancel(&w->gate);
  vox_writer_join(&w->thread);
  free_writer(w);
}

/* ---------------------------------------------------------------------------
 * Reading.
 * ------------------------------------------------------------------------- */

static vox_status bad(n88_file *f, vox_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static vox_status bad(n88_file *f, vox_status status, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return vox_error(f->ctx, status, "%s: %s", f->path, msg);
}

/* A text attribute (NC_CHAR or one NC_STRING), malloc'ed; NULL if absent. */
static char *get_text_alloc(int ncid, const char *name) {
  nc_type t;
  size_t len;
  if (nc_inq_att(ncid, NC_GLOBAL, name, &t, &len)) return NULL;
  if (t == NC_CHAR) {
    char *buf = malloc(len + 1);
    if (!buf || nc_get_att_text(ncid, NC_GLOBAL, name, buf)) {
      free(buf);
      return NULL;
    }
    buf[len] = '\0';
    return buf;
  }
  if (t == NC_STRING && len == 1) {
    char *s = NULL, *copy;
    if (nc_get_att_string(ncid, NC_GLOBAL, name, &s)) return NULL;
    copy = strdup(s ? s : "");
    nc_free_string(1, &s);
    return copy;
  }
  return NULL;
}

/* The same into `out` (cut to its size); 0 if absent. */
static int get_text(int ncid, const char *name, char *out, size_t size) {
  char *text = get_text_alloc(ncid, name);
  out[0] = '\0';
  if (!text) return 0;
  snprintf(out, size, "%s", text);
  free(text);
  return 1;
}

static vox_status group(n88_file *f, int parent, const char *name, int *out) {
  if (nc_inq_ncid(parent, name, out))
    return bad(f, VOX_ERR_FORMAT, "not an n88model: group '%s' is missing", name);
  return VOX_OK;
}

/* The length of a variable's dimension `d`. */
static vox_status var_shape(n88_file *f, int ncid, const char *name, int ndims, size_t *len,
                            int *varid) {
  int nd, dims[NC_MAX_VAR_DIMS];
  if (nc_inq_varid(ncid, name, varid))
    return bad(f, VOX_ERR_FORMAT, "not an n88model: variable '%s' is missing", name);
  if (nc_inq_varndims(ncid, *varid, &nd) || nd != ndims ||
      nc_inq_vardimid(ncid, *varid, dims))
    return bad(f, VOX_ERR_FORMAT, "variable '%s' should have %d dimensions", name, ndims);
  for (int i = 0; i < nd; i++)
    if (nc_inq_dimlen(ncid, dims[i], &len[i]))
      return bad(f, VOX_ERR_FORMAT, "variable '%s': unreadable dimension", name);
  return VOX_OK;
}

typedef struct n88_mesh {
  size_t n_nodes, n_elements;
  double *xyz;           /* 3 per node */
  long long *conn;       /* 8 per element, 1-based */
  long long *material;   /* per element */
  int64_t *grid_node;    /* per node: grid node index, -1 unused */
  int64_t *grid_element; /* per element: grid element index */
} n88_mesh;

static void n88_mesh_free(n88_mesh *me) {
  free(me->xyz);
  free(me->conn);
  free(me->material);
  free(me->grid_node);
  free(me->grid_element);
}

static vox_status read_mesh(n88_file *f, int part, n88_mesh *me) {
  int elements, hexa, v;
  size_t len[2];
  vox_status s = var_shape(f, part, "NodeCoordinates", 2, len, &v);
  if (s) return s;
  if (len[1] != 3) return bad(f, VOX_ERR_FORMAT, "NodeCoordinates is not N x 3");
  me->n_nodes = len[0];
  me->xyz = malloc((3 * me->n_nodes + 1) * sizeof *me->xyz);
  if (!me->xyz) return bad(f, VOX_ERR_NO_MEMORY, "out of memory");
  if (me->n_nodes && nc_get_var_double(part, v, me->xyz))
    return bad(f, VOX_ERR_FORMAT, "cannot read NodeCoordinates");
  if ((s = group(f, part, "Elements", &elements)) || (s = group(f, elements, "Hexahedrons", &hexa)))
    return s;
  if ((s = var_shape(f, hexa, "NodeNumbers", 2, len, &v))) return s;
  if (len[1] != 8) return bad(f, VOX_ERR_FORMAT, "NodeNumbers is not N x 8");
  me->n_elements = len[0];
  me->conn = malloc((8 * me->n_elements + 1) * sizeof *me->conn);
  me->material = malloc((me->n_elements + 1) * sizeof *me->material);
  if (!me->conn || !me->material) return bad(f, VOX_ERR_NO_MEMORY, "out of memory");
  if (me->n_elements && nc_get_var_longlong(hexa, v, me->conn))
    return bad(f, VOX_ERR_FORMAT, "cannot read NodeNumbers");
  if ((s = var_shape(f, hexa, "MaterialID", 1, len, &v))) return s;
  if (len[0] != me->n_elements)
    return bad(f, VOX_ERR_FORMAT, "MaterialID and NodeNumbers differ in length");
  if (me->n_elements && nc_get_var_longlong(hexa, v, me->material))
    return bad(f, VOX_ERR_FORMAT, "cannot read MaterialID");
  for (size_t i = 0; i < 8 * me->n_elements; i++)
    if (me->conn[i] < 1 || (size_t)me->conn[i] > me->n_nodes)
      return bad(f, VOX_ERR_FORMAT, "element %zu: node number %lld out of 1..%zu", i / 8 + 1,
                 me->conn[i], me->n_nodes);
  return VOX_OK;
}

/* How far a node may sit off its grid point, in voxels: n88modelgenerator
 * stores coordinates as float32, which puts them up to about 1e-5 of a voxel
 * off (a few units in the last place of coordinates some hundred voxels from
 * zero); a mesh that is not a voxel mesh is off by a good part of a voxel. */
#define GRID_TOLERANCE 1e-4

/* The voxel grid the mesh lies on, the labels, and each node's grid index.
 * The voxel size is first estimated from element 1, then taken from the
 * whole extent of the mesh (its length over the number of voxels along it):
 * one element's edge in float32 is too coarse for a grid of hundreds of
 * voxels. */
static vox_status mesh_to_grid(n88_file *f, n88_mesh *me, vox_model *m) {
  if (me->n_elements == 0) return bad(f, VOX_ERR_FORMAT, "the model has no elements");
  const long long *c0 = me->conn;
  double h[3], lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
  /* VTK_VOXEL order: corner 1 is +x of corner 0, corner 2 +y, corner 4 +z,
   * corner 7 the opposite one */
  const int step[3] = {1, 2, 4};
  for (int a = 0; a < 3; a++)
    h[a] = me->xyz[3 * (c0[step[a]] - 1) + a] - me->xyz[3 * (c0[0] - 1) + a];
  if (!(h[0] > 0 && h[1] > 0 && h[2] > 0))
    return bad(f, VOX_ERR_UNSUPPORTED,
               "element 1 is not a box with its corners in VTK_VOXEL order: not a voxel mesh");
  for (size_t e = 0; e < me->n_elements; e++)
    for (int a = 0; a < 3; a++) {
      lo[a] = fmin(lo[a], me->xyz[3 * (me->conn[8 * e] - 1) + a]);
      hi[a] = fmax(hi[a], me->xyz[3 * (me->conn[8 * e + 7] - 1) + a]);
    }
  vox_grid g = {0};
  int64_t *n[3] = {&g.nx, &g.ny, &g.nz};
  for (int a = 0; a < 3; a++) {
    const double voxels = (hi[a] - lo[a]) / h[a];
    *n[a] = (int64_t)llround(voxels);
    if (*n[a] < 1 || !(fabs(voxels - (double)*n[a]) < 0.5))
      return bad(f, VOX_ERR_UNSUPPORTED, "the elements do not tile a voxel grid: not a voxel mesh");
    h[a] = (hi[a] - lo[a]) / (double)*n[a];
    g.voxel_size[a] = h[a], g.origin[a] = lo[a];
  }
  /* A file voxfe wrote keeps its grid (the box can be larger than the
   * bone's, and the coordinates are float32), so that plates and indices
   * survive the round trip. */
  long long size[3];
  double origin[3], voxel[3];
  if (!nc_get_att_longlong(f->ncid, NC_GLOBAL, "voxfe_grid_size", size) &&
      !nc_get_att_double(f->ncid, NC_GLOBAL, "voxfe_grid_origin", origin)) {
    const int has_voxel = !nc_get_att_double(f->ncid, NC_GLOBAL, "voxfe_voxel_size", voxel);
    int fits = 1;
    for (int a = 0; a < 3; a++) {
      if (has_voxel) fits &= fabs(voxel[a] - h[a]) < GRID_TOLERANCE * h[a];
      const double hh = has_voxel ? voxel[a] : h[a];
      const double first = (lo[a] - origin[a]) / hh, last = (hi[a] - origin[a]) / hh;
      fits &= size[a] >= 1 && fabs(first - (double)llround(first)) < GRID_TOLERANCE &&
              first > -GRID_TOLERANCE && last < (double)size[a] + GRID_TOLERANCE;
    }
    for (int a = 0; fits && a < 3; a++) {
      if (has_voxel) h[a] = voxel[a], g.voxel_size[a] = voxel[a];
      lo[a] = origin[a], g.origin[a] = origin[a], *n[a] = size[a];
    }
  }
  vox_status s = vox_model_init(f->ctx, m, &g);
  if (s) return s;
  me->grid_node = malloc((me->n_nodes + 1) * sizeof *me->grid_node);
  me->grid_element = malloc((me->n_elements + 1) * sizeof *me->grid_element);
  if (!me->grid_node || !me->grid_element) return bad(f, VOX_ERR_NO_MEMORY, "out of memory");
  for (size_t i = 0; i < me->n_nodes; i++) me->grid_node[i] = -1;
  for (size_t e = 0; e < me->n_elements; e++) {
    const long long *c = me->conn + 8 * e;
    int64_t ijk[3];
    for (int a = 0; a < 3; a++) {
      const double t = (me->xyz[3 * (c[0] - 1) + a] - lo[a]) / h[a];
      ijk[a] = (int64_t)llround(t);
      if (fabs(t - (double)ijk[a]) > GRID_TOLERANCE || ijk[a] < 0 || ijk[a] >= *n[a])
        return bad(f, VOX_ERR_UNSUPPORTED, "element %zu is off the voxel grid: not a voxel mesh",
                   e + 1);
    }
    for (int k = 0; k < 8; k++) {
      const int64_t gi[3] = {ijk[0] + n88_voxel_corner[k][0], ijk[1] + n88_voxel_corner[k][1],
                             ijk[2] + n88_voxel_corner[k][2]};
      for (int a = 0; a < 3; a++) {
        const double want = lo[a] + (double)gi[a] * h[a];
        if (fabs(me->xyz[3 * (c[k] - 1) + a] - want) > GRID_TOLERANCE * h[a])
          return bad(f, VOX_ERR_UNSUPPORTED,
                     "element %zu is not a box of %g x %g x %g with its corners in VTK_VOXEL "
                     "order: not a voxel mesh", e + 1, h[0], h[1], h[2]);
      }
      const int64_t gn = node_index(&g, gi[0], gi[1], gi[2]);
      if (me->grid_node[c[k] - 1] >= 0 && me->grid_node[c[k] - 1] != gn)
        return bad(f, VOX_ERR_FORMAT, "node %lld is a corner of elements at different places",
                   c[k]);
      me->grid_node[c[k] - 1] = gn;
    }
    const int64_t ge = (ijk[2] * g.ny + ijk[1]) * g.nx + ijk[0];
    me->grid_element[e] = ge;
    if (me->material[e] < 1 || me->material[e] > 255)
      return bad(f, VOX_ERR_UNSUPPORTED, "element %zu: MaterialID %lld is not in 1..255 (voxfe "
                 "labels)", e + 1, me->material[e]);
    if (m->label[ge])
      return bad(f, VOX_ERR_FORMAT, "elements overlap at voxel (%lld, %lld, %lld)",
                 (long long)ijk[0], (long long)ijk[1], (long long)ijk[2]);
    m->label[ge] = (uint8_t)me->material[e];
  }
  return VOX_OK;
}

static vox_status read_materials(n88_file *f, int part, const n88_mesh *me, vox_model *m) {
  int table, defs, v_id, v_name;
  size_t len;
  vox_status s;
  if ((s = group(f, part, "MaterialTable", &table)) ||
      (s = group(f, f->ncid, "MaterialDefinitions", &defs)) ||
      (s = var_shape(f, table, "ID", 1, &len, &v_id)))
    return s;
  size_t len2;
  if ((s = var_shape(f, table, "MaterialName", 1, &len2, &v_name))) return s;
  int used[256] = {0};
  for (size_t e = 0; e < me->n_elements; e++) used[me->material[e]] = 1;
  for (size_t i = 0; i < len && !s; i++) {
    long long id;
    char *name = NULL;
    if (nc_get_var1_longlong(table, v_id, &i, &id) ||
        nc_get_var1_string(table, v_name, &i, &name))
      return bad(f, VOX_ERR_FORMAT, "cannot read the MaterialTable");
    if (id < 1 || id > 255 || !used[id]) {
      nc_free_string(1, &name);
      continue; /* an ID no element uses */
    }
    int grp, nvars = 0;
    char type[64];
    vox_material mat = {.label = (uint8_t)id, .role = VOX_ROLE_SOLID, .conductivity = 1};
    snprintf(mat.name, sizeof mat.name, "%s", name ? name : "");
    if (nc_inq_ncid(defs, name ? name : "", &grp))
      s = bad(f, VOX_ERR_FORMAT, "material '%s' has no MaterialDefinitions group", mat.name);
    else if (!get_text(grp, "Type", type, sizeof type) || nc_inq_nvars(grp, &nvars) ||
             strcmp(type, "LinearIsotropic") || nvars > 0)
      s = bad(f, VOX_ERR_UNSUPPORTED,
              "material '%s' is of type '%s'%s: voxfe takes LinearIsotropic materials", mat.name,
              type, nvars > 0 ? " (an array)" : "");
    else if (nc_get_att_double(grp, NC_GLOBAL, "E", &mat.youngs_modulus) ||
             nc_get_att_double(grp, NC_GLOBAL, "nu", &mat.poisson_ratio))
      s = bad(f, VOX_ERR_FORMAT, "material '%s' lacks E or nu", mat.name);
    else if (!vox_model_material(m, mat.label))
      s = vox_model_add_material(f->ctx, m, &mat);
    nc_free_string(1, &name);
  }
  return s;
}

/* The problem's constraints: displacements and forces on nodes; each
 * group's run of them recorded in `x` (when not NULL). */
static vox_status read_constraints(n88_file *f, int problem, const n88_mesh *me, vox_model *m,
                                   vox_n88model_extras *x) {
  char list[4096];
  int cons;
  if (!get_text(problem, "Constraints", list, sizeof list) || !list[0]) return VOX_OK;
  vox_status s = group(f, f->ncid, "Constraints", &cons);
  size_t n_names = 1;
  for (const char *c = list; *c; c++) n_names += *c == ',' || *c == ';';
  if (!s && x && !(x->groups = calloc(n_names, sizeof *x->groups)))
    s = bad(f, VOX_ERR_NO_MEMORY, "out of memory");
  int have_loads = 0;
  for (char *save = NULL, *name = strtok_r(list, ",;", &save); name && !s;
       name = strtok_r(NULL, ",;", &save)) {
    int grp, v_node, v_sense, v_value;
    char type[64];
    size_t n, n2, n3;
    if (nc_inq_ncid(cons, name, &grp))
      return bad(f, VOX_ERR_FORMAT, "constraint '%s' of the problem is missing", name);
    if (!get_text(grp, "Type", type, sizeof type))
      return bad(f, VOX_ERR_FORMAT, "constraint '%s' has no Type", name);
    const int force = !strcmp(type, "NodeAxisForce");
    if (!force && strcmp(type, "NodeAxisDisplacement"))
      return bad(f, VOX_ERR_UNSUPPORTED, "constraint '%s' is of type '%s'", name, type);
    if ((s = var_shape(f, grp, "NodeNumber", 1, &n, &v_node)) ||
        (s = var_shape(f, grp, "Sense", 1, &n2, &v_sense)) ||
        (s = var_shape(f, grp, "Value", 1, &n3, &v_value)))
      return s;
    if (n2 != n || n3 != n) return bad(f, VOX_ERR_FORMAT, "constraint '%s': lengths differ", name);
    long long *node = malloc((n + 1) * sizeof *node), *sense = malloc((n + 1) * sizeof *sense);
    double *value = malloc((n + 1) * sizeof *value);
    if (!node || !sense || !value)
      s = bad(f, VOX_ERR_NO_MEMORY, "out of memory");
    else if (n && (nc_get_var_longlong(grp, v_node, node) ||
                   nc_get_var_longlong(grp, v_sense, sense) ||
                   nc_get_var_double(grp, v_value, value)))
      s = bad(f, VOX_ERR_FORMAT, "cannot read constraint '%s'", name);
    if (!s && force && !have_loads) {
      s = vox_model_set_load_cases(f->ctx, m, 1);
      have_loads = 1;
    }
    n88_group *gr = x && x->n_groups < n_names ? &x->groups[x->n_groups++] : NULL;
    if (gr) {
      snprintf(gr->name, sizeof gr->name, "%s", name);
      gr->force = force, gr->start = force ? m->n_loads : m->n_constraints;
    }
    for (size_t i = 0; i < n && !s; i++) {
      if (node[i] < 1 || (size_t)node[i] > me->n_nodes || sense[i] < 1 || sense[i] > 3)
        s = bad(f, VOX_ERR_FORMAT, "constraint '%s': node %lld sense %lld out of range", name,
                node[i], sense[i]);
      else if (me->grid_node[node[i] - 1] < 0)
        continue; /* a node of no element: nothing to hold */
      else if (force)
        s = vox_model_add_load(f->ctx, m, me->grid_node[node[i] - 1], (int)sense[i] - 1, 0,
                               value[i]);
      else
        s = vox_model_add_constraint(f->ctx, m, me->grid_node[node[i] - 1], (int)sense[i] - 1,
                                     value[i]);
    }
    if (gr) gr->count = (force ? m->n_loads : m->n_constraints) - gr->start;
    free(node);
    free(sense);
    free(value);
  }
  if (x) x->n_constraints = m->n_constraints, x->n_loads = m->n_loads;
  return s;
}

/* A variable of n integers into a malloc'ed array of long long. */
static vox_status read_ints(n88_file *f, int ncid, const char *name, size_t *n, long long **out) {
  int v;
  vox_status s = var_shape(f, ncid, name, 1, n, &v);
  if (s) return s;
  *out = malloc((*n + 1) * sizeof **out);
  if (!*out) return bad(f, VOX_ERR_NO_MEMORY, "out of memory");
  if (*n && nc_get_var_longlong(ncid, v, *out))
    return bad(f, VOX_ERR_FORMAT, "cannot read %s", name);
  return VOX_OK;
}

/* The convergence set (a node list of its own, on grid nodes). */
static vox_status read_convergence(n88_file *f, int problem, const n88_mesh *me,
                                   vox_n88model_extras *x) {
  char name[NC_MAX_NAME + 1];
  int cons, grp, v;
  if (!get_text(problem, "ConvergenceSet", name, sizeof name) || !name[0]) return VOX_OK;
  if (nc_inq_ncid(f->ncid, "Constraints", &cons) || nc_inq_ncid(cons, name, &grp))
    return bad(f, VOX_ERR_FORMAT, "the convergence set '%s' is missing", name);
  snprintf(x->convergence_name, sizeof x->convergence_name, "%s", name);
  get_text(grp, "Type", x->convergence_type, sizeof x->convergence_type);
  long long *node = NULL, *sense = NULL;
  size_t n = 0, n2 = 0, n3 = 0;
  vox_status s = read_ints(f, grp, "NodeNumber", &n, &node);
  if (!s) s = read_ints(f, grp, "Sense", &n2, &sense);
  if (!s) s = var_shape(f, grp, "Value", 1, &n3, &v);
  if (!s && (n2 != n || n3 != n))
    s = bad(f, VOX_ERR_FORMAT, "convergence set '%s': lengths differ", name);
  if (!s && (!(x->convergence_node = malloc((n + 1) * sizeof *x->convergence_node)) ||
             !(x->convergence_sense = malloc(n + 1)) ||
             !(x->convergence_value = malloc((n + 1) * sizeof *x->convergence_value))))
    s = bad(f, VOX_ERR_NO_MEMORY, "out of memory");
  if (!s && n && nc_get_var_double(grp, v, x->convergence_value))
    s = bad(f, VOX_ERR_FORMAT, "cannot read convergence set '%s'", name);
  for (size_t i = 0; !s && i < n; i++) {
    if (node[i] < 1 || (size_t)node[i] > me->n_nodes || sense[i] < 1 || sense[i] > 3)
      s = bad(f, VOX_ERR_FORMAT, "convergence set '%s': node %lld sense %lld out of range", name,
              node[i], sense[i]);
    else if (me->grid_node[node[i] - 1] >= 0) {
      x->convergence_node[x->n_convergence] = me->grid_node[node[i] - 1];
      x->convergence_sense[x->n_convergence] = (uint8_t)(sense[i] - 1);
      x->convergence_value[x->n_convergence++] = x->convergence_value[i];
    }
  }
  free(node);
  free(sense);
  return s;
}

/* The node and element sets, on grid nodes and elements. */
static vox_status read_sets(n88_file *f, const n88_mesh *me, const int64_t *grid_element,
                            vox_n88model_extras *x) {
  int sets;
  if (nc_inq_ncid(f->ncid, "Sets", &sets)) return VOX_OK;
  vox_status s = VOX_OK;
  for (int kind = 0; kind < 2 && !s; kind++) {
    int parent, n_groups = 0;
    if (nc_inq_ncid(sets, kind ? "ElementSets" : "NodeSets", &parent) ||
        nc_inq_grps(parent, &n_groups, NULL) || n_groups <= 0)
      continue;
    int *ids = malloc((size_t)n_groups * sizeof *ids);
    n88_set *grown = realloc(x->sets, (x->n_sets + (size_t)n_groups) * sizeof *grown);
    if (grown) x->sets = grown;
    if (!ids || !grown || nc_inq_grps(parent, NULL, ids)) {
      free(ids);
      return bad(f, VOX_ERR_NO_MEMORY, "out of memory");
    }
    for (int i = 0; i < n_groups && !s; i++) {
      n88_set *set = &x->sets[x->n_sets];
      memset(set, 0, sizeof *set);
      set->elements = kind;
      nc_inq_grpname(ids[i], set->name);
      long long *list = NULL;
      size_t n = 0;
      s = read_ints(f, ids[i], kind ? "ElementNumber" : "NodeNumber", &n, &list);
      if (!s && !(set->ids = malloc((n + 1) * sizeof *set->ids)))
        s = bad(f, VOX_ERR_NO_MEMORY, "out of memory");
      for (size_t j = 0; !s && j < n; j++) {
        const size_t limit = kind ? me->n_elements : me->n_nodes;
        if (list[j] < 1 || (size_t)list[j] > limit)
          s = bad(f, VOX_ERR_FORMAT, "set '%s': number %lld out of 1..%zu", set->name, list[j],
                  limit);
        else if (kind)
          set->ids[set->n++] = grid_element[list[j] - 1];
        else if (me->grid_node[list[j] - 1] >= 0)
          set->ids[set->n++] = me->grid_node[list[j] - 1];
      }
      free(list);
      if (!s) x->n_sets++;
      else free(set->ids);
    }
    free(ids);
  }
  return s;
}

vox_status vox_n88model_read(vox_context *ctx, const char *path, vox_model *model) {
  return vox_n88model_read_extras(ctx, path, model, NULL);
}

vox_status vox_n88model_read_extras(vox_context *ctx, const char *path, vox_model *model,
                                    vox_n88model_extras **extras) {
  memset(model, 0, sizeof *model);
  vox_n88model_extras *x = NULL;
  if (extras) {
    *extras = NULL;
    if (!(x = calloc(1, sizeof *x))) return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
  }
  n88_file f = {ctx, path, -1};
  FILE *file = fopen(path, "rb");
  struct stat st;
  if (file && fstat(fileno(file), &st) == 0 && S_ISREG(st.st_mode)) {
    const char *problem = vox_netcdf_header_problem(file, (long long)st.st_size);
    if (problem) {
      fclose(file);
      return vox_error(ctx, VOX_ERR_FORMAT, "%s: %s", path, problem);
    }
  }
  if (file) fclose(file);
  int err = nc_open(path, NC_NOWRITE, &f.ncid);
  if (err)
    return err == ENOENT || err == EACCES
               ? vox_error(ctx, VOX_ERR_IO, "%s: %s", path, strerror(err))
               : nc_fail(&f, VOX_ERR_FORMAT, err, "cannot open as netCDF");
  char text[256];
  vox_status s = VOX_OK;
  n88_mesh me = {0};
  int problems, problem = -1, parts, part = -1;
  if (!get_text(f.ncid, "Conventions", text, sizeof text) ||
      strncmp(text, "Numerics88/Finite_Element_Model", 31) != 0)
    s = bad(&f, VOX_ERR_FORMAT, "not an n88model (Conventions is not %s)", N88_CONVENTIONS);
  if (!s && !get_text(f.ncid, "ActiveProblem", text, sizeof text)) snprintf(text, sizeof text, "Problem1");
  if (!s && !(s = group(&f, f.ncid, "Problems", &problems)) && nc_inq_ncid(problems, text, &problem))
    s = bad(&f, VOX_ERR_FORMAT, "the active problem '%s' is missing", text);
  if (!s && !get_text(problem, "Part", text, sizeof text)) snprintf(text, sizeof text, "Part1");
  if (!s && !(s = group(&f, f.ncid, "Parts", &parts)) && nc_inq_ncid(parts, text, &part))
    s = bad(&f, VOX_ERR_FORMAT, "the problem's part '%s' is missing", text);
  if (!s) s = read_mesh(&f, part, &me);
  if (!s) s = mesh_to_grid(&f, &me, model);
  if (!s) s = read_materials(&f, part, &me, model);
  if (!s) s = read_constraints(&f, problem, &me, model, x);
  if (!s && x) s = read_convergence(&f, problem, &me, x);
  if (!s && x) s = read_sets(&f, &me, me.grid_element, x);
  if (!s && x) {
    x->log = get_text_alloc(f.ncid, "Log");
    x->node_lists = get_text_alloc(problem, "PostProcessingNodeSets");
    x->element_lists = get_text_alloc(problem, "PostProcessingElementSets");
  }
  char *history = s ? NULL : get_text_alloc(f.ncid, "History");
  if (history && history[0]) { /* voxfe's history ends each line with a newline */
    const size_t len = strlen(history);
    model->history_text = malloc(len + 2);
    if (model->history_text)
      snprintf(model->history_text, len + 2, "%s%s", history, history[len - 1] == '\n' ? "" : "\n");
  }
  free(history);
  if (!s && vox_model_validate(ctx, model)) {
    char why[400];
    snprintf(why, sizeof why, "%s", vox_context_message(ctx));
    s = bad(&f, VOX_ERR_FORMAT, "%s", why);
  }
  nc_close(f.ncid);
  n88_mesh_free(&me);
  if (s) {
    vox_model_free(model);
    vox_n88model_extras_free(x);
  } else if (extras) {
    *extras = x;
  }
  return s;
}
