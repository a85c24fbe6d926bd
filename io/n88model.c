/* n88model files (voxfe/n88model.h): the voxel model as Numerics88's
 * unstructured hexahedral mesh and back. Written from the format's public
 * description (vtkbone's n88model reader and writer, n88tools' postfaim);
 * the code is voxfe's own. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <netcdf.h>

#include "model_writer.h"
#include "stage_gate.h"
#include "temp_registry.h"
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

static int64_t node_index(const vox_grid *g, int64_t i, int64_t j, int64_t k) {
  return (k * (g->ny + 1) + j) * (g->nx + 1) + i;
}

/* ---------------------------------------------------------------------------
 * Writing.
 * ------------------------------------------------------------------------- */

/* A variable written whole (so without fill): the large ones of integers
 * (node numbers, sets: they shrink several times, shuffled first) and the
 * reactions (zero off the supports; not shuffled: 1.6 times faster and
 * smaller on zeros) deflated, the floating-point ones not: coordinates and
 * a solution's values shrink by about 20 %, and netCDF deflates on one
 * thread at about 100 MB/s (docs/benchmarks.md, issue 6). */
static int def_var(int ncid, const char *name, nc_type type, int ndims, const int *dims,
                   size_t rows, int *varid) {
  int err = nc_def_var(ncid, name, type, ndims, dims, varid);
  const int floating = type == NC_FLOAT || type == NC_DOUBLE;
  if (!err) err = nc_def_var_fill(ncid, *varid, NC_NOFILL, NULL);
  if (!err && rows > 4096 && (!floating || !strcmp(name, "ReactionForce")))
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
  /* double rather than the reference writer's float: prescribed values
   * keep their digits; netCDF converts for readers that ask for float */
  W_TRY(f, def_var(grp, "Value", NC_DOUBLE, 1, &dim, n, &v), "Value");
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

static vox_status make_mesh(n88_file *f, const vox_model *m, mesh *me) {
  const vox_grid *g = &m->grid;
  const int64_t nn = vox_grid_nodes(g), ne = vox_grid_elements(g);
  me->node_number = calloc((size_t)nn, sizeof *me->node_number);
  if (!me->node_number) return vox_error(f->ctx, VOX_ERR_NO_MEMORY, "%s: out of memory", f->path);
  for (int64_t k = 0; k < g->nz; k++)
    for (int64_t j = 0; j < g->ny; j++)
      for (int64_t i = 0; i < g->nx; i++) {
        if (!m->label[(k * g->ny + j) * g->nx + i]) continue;
        me->n_elements++;
        for (int a = 0; a < 8; a++)
          me->node_number[node_index(g, i + vox_hex8_corner[a][0], j + vox_hex8_corner[a][1],
                                     k + vox_hex8_corner[a][2])] = 1;
      }
  me->node_of = malloc((size_t)nn * sizeof *me->node_of);
  me->element_of = malloc((me->n_elements + 1) * sizeof *me->element_of);
  if (!me->node_of || !me->element_of)
    return vox_error(f->ctx, VOX_ERR_NO_MEMORY, "%s: out of memory", f->path);
  for (int64_t n = 0; n < nn; n++)
    if (me->node_number[n]) {
      me->node_of[me->n_nodes] = n;
      me->node_number[n] = (int64_t)++me->n_nodes;
    }
  size_t c = 0;
  for (int64_t e = 0; e < ne; e++)
    if (m->label[e]) me->element_of[c++] = e;
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
  W_TRY(f, def_var(part, "NodeCoordinates", NC_DOUBLE, 2, d, me->n_nodes, &v), "NodeCoordinates");
  double *xyz = malloc(3 * me->n_nodes * sizeof *xyz);
  unsigned *ids = malloc(8 * (me->n_elements + 1) * sizeof *ids);
  if (!xyz || !ids) {
    free(xyz);
    free(ids);
    return vox_error(f->ctx, VOX_ERR_NO_MEMORY, "%s: out of memory", f->path);
  }
  for (size_t n = 0; n < me->n_nodes; n++) {
    const int64_t gn = me->node_of[n];
    const int64_t ijk[3] = {gn % (g->nx + 1), (gn / (g->nx + 1)) % (g->ny + 1),
                            gn / ((g->nx + 1) * (g->ny + 1))};
    for (int a = 0; a < 3; a++) xyz[3 * n + a] = g->origin[a] + (double)ijk[a] * g->voxel_size[a];
  }
  int err = nc_put_var_double(part, v, xyz);
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
  for (size_t e = 0; !s && e < me->n_elements; e++) ids[e] = (unsigned)(e + 1);
  S_TRY(def_var(hexa, "ElementNumber", NC_UINT, 1, d, me->n_elements, &v), "ElementNumber");
  S_TRY(nc_put_var_uint(hexa, v, ids), "ElementNumber");
  for (size_t e = 0; !s && e < me->n_elements; e++) {
    const int64_t ge = me->element_of[e];
    const int64_t i = ge % g->nx, j = (ge / g->nx) % g->ny, k = ge / (g->nx * g->ny);
    for (int a = 0; a < 8; a++)
      ids[8 * e + a] = (unsigned)me->node_number[node_index(
          g, i + vox_hex8_corner[a][0], j + vox_hex8_corner[a][1], k + vox_hex8_corner[a][2])];
  }
  S_TRY(def_var(hexa, "NodeNumbers", NC_UINT, 2, d, me->n_elements, &v), "NodeNumbers");
  S_TRY(nc_put_var_uint(hexa, v, ids), "NodeNumbers");
  for (size_t e = 0; !s && e < me->n_elements; e++) ids[e] = m->label[me->element_of[e]];
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

/* Constraints and loads of case 0, on nodes of the mesh; returns the
 * Problem's Constraints list in `list`. */
static vox_status write_constraints(n88_file *f, const vox_model *m, const mesh *me, char *list,
                                    size_t size) {
  size_t n = m->n_constraints > m->n_loads ? m->n_constraints : m->n_loads;
  list[0] = '\0';
  if (!n) return VOX_OK;
  unsigned *node = malloc(n * sizeof *node);
  signed char *sense = malloc(n);
  double *value = malloc(n * sizeof *value);
  vox_status s = VOX_OK;
  int grp = -1, err;
  if (!node || !sense || !value)
    s = vox_error(f->ctx, VOX_ERR_NO_MEMORY, "%s: out of memory", f->path);
  else if ((err = nc_def_grp(f->ncid, "Constraints", &grp)))
    s = nc_fail(f, VOX_ERR_IO, err, "cannot write group Constraints");
  size_t c = 0;
  for (size_t i = 0; !s && i < m->n_constraints; i++) {
    const vox_constraint *k = &m->constraints[i];
    if (!me->node_number[k->node]) continue; /* no element uses it */
    node[c] = (unsigned)me->node_number[k->node], sense[c] = (signed char)(k->component + 1);
    value[c++] = k->value;
  }
  if (!s && c) {
    s = put_constraint_group(f, grp, "displacements", "NodeAxisDisplacement", c, node, sense,
                             value);
    snprintf(list, size, "displacements");
  }
  c = 0;
  for (size_t i = 0; !s && i < m->n_loads; i++) {
    const vox_load *l = &m->loads[i];
    if (l->load_case != 0 || !me->node_number[l->node]) continue;
    node[c] = (unsigned)me->node_number[l->node], sense[c] = (signed char)(l->component + 1);
    value[c++] = l->value;
  }
  if (!s && c) {
    s = put_constraint_group(f, grp, "loads", "NodeAxisForce", c, node, sense, value);
    snprintf(list + strlen(list), size - strlen(list), "%sloads", list[0] ? "," : "");
  }
  free(node);
  free(sense);
  free(value);
  return s;
}

/* Node and element sets "bottom" and "top" of a compression axis. */
static vox_status write_sets(n88_file *f, const vox_model *m, const mesh *me, int axis) {
  const vox_grid *g = &m->grid;
  const int64_t n_axis[3] = {g->nx, g->ny, g->nz};
  unsigned *nodes = malloc((me->n_nodes + 1) * sizeof *nodes);
  unsigned *elems = malloc((me->n_elements + 1) * sizeof *elems);
  vox_status s = VOX_OK;
  int sets, node_sets, elem_sets, err;
  if (!nodes || !elems) s = vox_error(f->ctx, VOX_ERR_NO_MEMORY, "%s: out of memory", f->path);
  else if ((err = nc_def_grp(f->ncid, "Sets", &sets)) ||
           (err = nc_def_grp(sets, "NodeSets", &node_sets)) ||
           (err = nc_def_grp(sets, "ElementSets", &elem_sets)))
    s = nc_fail(f, VOX_ERR_IO, err, "cannot write group Sets");
  for (int top = 0; !s && top < 2; top++) {
    const int64_t plane = top ? n_axis[axis] : 0, layer = top ? n_axis[axis] - 1 : 0;
    size_t nn = 0, ne = 0;
    for (size_t n = 0; n < me->n_nodes; n++) {
      const int64_t gn = me->node_of[n];
      const int64_t ijk[3] = {gn % (g->nx + 1), (gn / (g->nx + 1)) % (g->ny + 1),
                              gn / ((g->nx + 1) * (g->ny + 1))};
      if (ijk[axis] == plane) nodes[nn++] = (unsigned)(n + 1);
    }
    for (size_t e = 0; e < me->n_elements; e++) {
      const int64_t ge = me->element_of[e];
      const int64_t ijk[3] = {ge % g->nx, (ge / g->nx) % g->ny, ge / (g->nx * g->ny)};
      if (ijk[axis] == layer) elems[ne++] = (unsigned)(e + 1);
    }
    const char *name = top ? "top" : "bottom";
    s = put_set(f, node_sets, name, "NumberOfNodes", "NodeNumber", nn, nodes);
    if (!s) s = put_set(f, elem_sets, name, "NumberOfElements", "ElementNumber", ne, elems);
  }
  free(nodes);
  free(elems);
  return s;
}

/* Node or element values of the mesh, gathered from a grid array of
 * `width` values per node or element (`of`: the grid index of each; NULL:
 * the array is in the mesh's order already). */
static vox_status put_values(n88_file *f, int grp, const char *name, nc_type type, int ndims,
                             const int *dims, const double *grid_values, const int64_t *of,
                             size_t n, int width) {
  /* gathered (and made float) on the writer's threads: netCDF's own
   * conversion is one-threaded (a clinical sample's fields: 0.4-0.5 s) */
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
  int axis, with_solution;
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
  s = wait_for(f, w, HAS_DISPLACEMENT);
  if (s) return s;
  int sols, sol, nodes, elems, d_nodes[2], d_elems[2];
  if ((err = nc_def_grp(f->ncid, "Solutions", &sols)) ||
      (err = nc_def_grp(sols, "Solution1", &sol)) ||
      (err = put_text(sol, "Problem", "Problem1")) ||
      (err = nc_def_grp(sol, "NodeValues", &nodes)) ||
      (err = nc_def_dim(nodes, "NumberOfNodes", me->n_nodes, &d_nodes[0])) ||
      (err = nc_def_dim(nodes, "Components3", 3, &d_nodes[1])) ||
      (err = nc_def_grp(sol, "ElementValues", &elems)) ||
      (err = nc_def_dim(elems, "NumberOfElements", me->n_elements, &d_elems[0])) ||
      (err = nc_def_dim(elems, "Components6", 6, &d_elems[1])))
    return nc_fail(f, VOX_ERR_IO, err, "cannot write group Solutions");
  s = put_values(f, nodes, "Displacement", NC_DOUBLE, 2, d_nodes, m->displacement, me->node_of,
                 me->n_nodes, 3);
  if (!s) vox_start_writeback(f->ncid); /* while the caller computes the fields */
  if (!s) s = wait_for(f, w, HAS_OUTPUT);
  const vox_analysis_output *out = &w->out;
  if (!s)
    s = put_values(f, nodes, "ReactionForce", NC_DOUBLE, 2, d_nodes, out->reaction, me->node_of,
                   me->n_nodes, 3);
  const struct {
    const char *name;
    const double *data;
    int width;
  } ev[] = {{"Strain", out->fields.strain, 6},
            {"Stress", out->fields.stress, 6},
            {"StrainEnergyDensity", out->fields.sed, 1},
            {"VonMisesStress", out->fields.von_mises, 1},
            {"EffectiveStrain", out->fields.effective_strain, 1}};
  /* compact fields (one entry per bone element) are already in the mesh's
   * element order: the non-empty voxels in grid order */
  const int64_t *of = out->fields.elements ? NULL : me->element_of;
  for (size_t i = 0; !s && i < sizeof ev / sizeof ev[0]; i++)
    s = put_values(f, elems, ev[i].name, NC_FLOAT, ev[i].width > 1 ? 2 : 1, d_elems, ev[i].data,
                   of, me->n_elements, ev[i].width);
  return s;
}

static vox_status write_all(n88_file *f, n88_writer *w) {
  const vox_model *m = w->model;
  const int axis = w->axis;
  mesh me = {0};
  vox_status s = make_mesh(f, m, &me);
  int dim3, problems, problem, err = 0;
  char list[64];
  if (!s && ((err = put_text(f->ncid, "Conventions", N88_CONVENTIONS)) ||
             (err = put_text(f->ncid, "ActiveProblem", "Problem1")) ||
             (w->with_solution && (err = put_text(f->ncid, "ActiveSolution", "Solution1"))) ||
             (m->history_text && (err = put_text(f->ncid, "History", m->history_text))) ||
             (err = nc_put_att_longlong(f->ncid, NC_GLOBAL, "voxfe_grid_size", NC_INT64, 3,
                                        (const long long[3]){m->grid.nx, m->grid.ny,
                                                             m->grid.nz})) ||
             (err = nc_put_att_double(f->ncid, NC_GLOBAL, "voxfe_grid_origin", NC_DOUBLE, 3,
                                      m->grid.origin)) ||
             (err = nc_def_dim(f->ncid, "Dimensionality", 3, &dim3))))
    s = nc_fail(f, VOX_ERR_IO, err, "cannot write the header");
  if (!s) s = write_part(f, m, &me, dim3);
  if (!s) s = write_constraints(f, m, &me, list, sizeof list);
  if (!s && axis >= 0 && axis <= 2) s = write_sets(f, m, &me, axis);
  if (!s && ((err = nc_def_grp(f->ncid, "Problems", &problems)) ||
             (err = nc_def_grp(problems, "Problem1", &problem)) ||
             (err = put_text(problem, "Part", "Part1")) ||
             (list[0] && (err = put_text(problem, "Constraints", list))) ||
             (axis >= 0 && axis <= 2 &&
              ((err = put_text(problem, "PostProcessingNodeSets", "top,bottom")) ||
               (err = put_text(problem, "PostProcessingElementSets", "top,bottom"))))))
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
  if (!s && rename(tmp, path) != 0)
    s = vox_error(ctx, VOX_ERR_IO, "%s: cannot move the written file into place: %s", path,
                  strerror(errno));
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

vox_status vox_n88model_write(vox_context *ctx, const char *path, const vox_model *model,
                              const vox_analysis_output *output, int axis) {
  vox_status s = vox_model_validate(ctx, model);
  if (!s && output) s = check_output(ctx, path, model, count_bone(model), output);
  if (s) return s;
  n88_writer w = {.ctx = ctx, .path = (char *)path, .model = model, .axis = axis,
                  .with_solution = output != NULL};
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
                                     int axis, vox_n88model_writer **writer) {
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
  w->ctx = own, w->path = copy, w->model = model, w->axis = axis, w->with_solution = 1;
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
} n88_mesh;

static void n88_mesh_free(n88_mesh *me) {
  free(me->xyz);
  free(me->conn);
  free(me->material);
  free(me->grid_node);
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

/* The voxel grid the mesh lies on, the labels, and each node's grid index. */
static vox_status mesh_to_grid(n88_file *f, n88_mesh *me, vox_model *m) {
  if (me->n_elements == 0) return bad(f, VOX_ERR_FORMAT, "the model has no elements");
  const long long *c0 = me->conn;
  double h[3], lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
  /* VTK order: corner 1 is +x of corner 0, corner 3 +y, corner 4 +z */
  const int step[3] = {1, 3, 4};
  for (int a = 0; a < 3; a++)
    h[a] = me->xyz[3 * (c0[step[a]] - 1) + a] - me->xyz[3 * (c0[0] - 1) + a];
  if (!(h[0] > 0 && h[1] > 0 && h[2] > 0))
    return bad(f, VOX_ERR_UNSUPPORTED, "element 1 is not a box in VTK node order: not a voxel mesh");
  for (size_t e = 0; e < me->n_elements; e++)
    for (int a = 0; a < 3; a++) {
      const double x = me->xyz[3 * (me->conn[8 * e] - 1) + a];
      lo[a] = fmin(lo[a], x), hi[a] = fmax(hi[a], x + h[a]);
    }
  vox_grid g = {0};
  int64_t *n[3] = {&g.nx, &g.ny, &g.nz};
  for (int a = 0; a < 3; a++) {
    g.voxel_size[a] = h[a], g.origin[a] = lo[a];
    *n[a] = (int64_t)llround((hi[a] - lo[a]) / h[a]);
  }
  /* A file voxfe wrote keeps its grid (the box can be larger than the
   * bone's), so that plates and indices survive the round trip. */
  long long size[3];
  double origin[3];
  if (!nc_get_att_longlong(f->ncid, NC_GLOBAL, "voxfe_grid_size", size) &&
      !nc_get_att_double(f->ncid, NC_GLOBAL, "voxfe_grid_origin", origin)) {
    int fits = 1;
    for (int a = 0; a < 3; a++) {
      const double first = (lo[a] - origin[a]) / h[a], last = (hi[a] - origin[a]) / h[a];
      fits &= size[a] >= 1 && fabs(first - llround(first)) < 1e-6 && first > -1e-6 &&
              last < (double)size[a] + 1e-6;
    }
    for (int a = 0; fits && a < 3; a++) lo[a] = origin[a], g.origin[a] = origin[a], *n[a] = size[a];
  }
  vox_status s = vox_model_init(f->ctx, m, &g);
  if (s) return s;
  me->grid_node = malloc((me->n_nodes + 1) * sizeof *me->grid_node);
  if (!me->grid_node) return bad(f, VOX_ERR_NO_MEMORY, "out of memory");
  for (size_t i = 0; i < me->n_nodes; i++) me->grid_node[i] = -1;
  for (size_t e = 0; e < me->n_elements; e++) {
    const long long *c = me->conn + 8 * e;
    int64_t ijk[3];
    for (int a = 0; a < 3; a++) {
      const double t = (me->xyz[3 * (c[0] - 1) + a] - lo[a]) / h[a];
      ijk[a] = (int64_t)llround(t);
      if (fabs(t - (double)ijk[a]) > 1e-6)
        return bad(f, VOX_ERR_UNSUPPORTED, "element %zu is off the voxel grid: not a voxel mesh",
                   e + 1);
    }
    for (int k = 0; k < 8; k++) {
      const int64_t gi[3] = {ijk[0] + vox_hex8_corner[k][0], ijk[1] + vox_hex8_corner[k][1],
                             ijk[2] + vox_hex8_corner[k][2]};
      for (int a = 0; a < 3; a++) {
        const double want = lo[a] + (double)gi[a] * h[a];
        if (fabs(me->xyz[3 * (c[k] - 1) + a] - want) > 1e-6 * h[a])
          return bad(f, VOX_ERR_UNSUPPORTED,
                     "element %zu is not a box of %g x %g x %g in VTK node order: not a voxel "
                     "mesh", e + 1, h[0], h[1], h[2]);
      }
      const int64_t gn = node_index(&g, gi[0], gi[1], gi[2]);
      me->grid_node[c[k] - 1] = gn;
    }
    const int64_t ge = (ijk[2] * g.ny + ijk[1]) * g.nx + ijk[0];
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

/* The problem's constraints: displacements and forces on nodes. */
static vox_status read_constraints(n88_file *f, int problem, const n88_mesh *me, vox_model *m) {
  char list[4096];
  int cons;
  if (!get_text(problem, "Constraints", list, sizeof list) || !list[0]) return VOX_OK;
  vox_status s = group(f, f->ncid, "Constraints", &cons);
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
    free(node);
    free(sense);
    free(value);
  }
  return s;
}

vox_status vox_n88model_read(vox_context *ctx, const char *path, vox_model *model) {
  memset(model, 0, sizeof *model);
  n88_file f = {ctx, path, -1};
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
  if (!s) s = read_constraints(&f, problem, &me, model);
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
  if (s) vox_model_free(model);
  return s;
}
