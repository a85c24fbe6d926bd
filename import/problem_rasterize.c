/* SPDX-License-Identifier: BSD-3-Clause */
/* Rasterises a problem onto a voxel model: turns the regions of supports,
 * loads and passive parts into element labels and node lists on the model's
 * grid, spreads each total force over its nodes, and adds the materials. The
 * rules (tolerances, weights, which support wins) are those of
 * docs/problem-file.md; this file is where they are kept. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "voxfe/mesh.h"
#include "voxfe/problem.h"

/* Label numbers of the design domain and the passive parts. */
enum { LABEL_DESIGN = 1, LABEL_SOLID = 2, LABEL_VOID = 3 };

static const char component_names[3] = {'x', 'y', 'z'};

/* The grid and the labels a region is looked up in. */
typedef struct raster {
  const vox_grid *grid;
  const uint8_t *label; /* the labels after passive parts were applied */
  int64_t n[3];         /* elements along x, y, z */
  double tol;           /* 1e-6 of the smallest voxel edge: a coordinate that
                           lands on a node up to rounding still selects it */
} raster;

static vox_status out_of_memory(vox_context *ctx) {
  return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
}

static int64_t node_index(const raster *r, const int64_t ijk[3]) {
  return (ijk[2] * (r->n[1] + 1) + ijk[1]) * (r->n[0] + 1) + ijk[0];
}

static void node_ijk(const raster *r, int64_t node, int64_t ijk[3]) {
  ijk[0] = node % (r->n[0] + 1);
  node /= r->n[0] + 1;
  ijk[1] = node % (r->n[1] + 1);
  ijk[2] = node / (r->n[1] + 1);
}

/* Coordinate along axis `a` of node `i` (offset 0) or of element centre `i`
 * (offset 0.5). */
static double coord(const raster *r, int a, int64_t i, double offset) {
  return r->grid->origin[a] + ((double)i + offset) * r->grid->voxel_size[a];
}

/* The elements around node ijk that hold material (label != 0), or that
 * hold `label` when it is not 0. For a node on a face of the grid these are
 * the face quads touching it, on an edge the edge segments: the count is the
 * node's tributary weight. */
static int adjacent_elements(const raster *r, const int64_t ijk[3], int label) {
  int count = 0;
  for (int64_t k = ijk[2] - 1; k <= ijk[2]; k++) {
    if (k < 0 || k >= r->n[2]) continue;
    for (int64_t j = ijk[1] - 1; j <= ijk[1]; j++) {
      if (j < 0 || j >= r->n[1]) continue;
      for (int64_t i = ijk[0] - 1; i <= ijk[0]; i++) {
        if (i < 0 || i >= r->n[0]) continue;
        uint8_t l = r->label[(k * r->n[1] + j) * r->n[0] + i];
        count += label ? l == label : l != 0;
      }
    }
  }
  return count;
}

/* The index range [lo, hi] along each axis of the nodes (offset 0) or
 * element centres (offset 0.5) that may lie in [min - tol, max + tol]; one
 * wider on each side, as the caller tests each coordinate exactly. Returns 0
 * when the range is empty. Clamping happens in double, as the bounds may be
 * infinite. */
static int index_range(const raster *r, const double min[3], const double max[3], double offset,
                       int64_t lo[3], int64_t hi[3]) {
  for (int a = 0; a < 3; a++) {
    double h = r->grid->voxel_size[a], o = r->grid->origin[a];
    double top = (double)r->n[a] - (offset > 0 ? 1 : 0);
    double first = ceil((min[a] - r->tol - o) / h - offset) - 1;
    double last = floor((max[a] + r->tol - o) / h - offset) + 1;
    first = first < 0 ? 0 : first > top ? top : first;
    last = last < 0 ? 0 : last > top ? top : last;
    if (first > last) return 0;
    lo[a] = (int64_t)first;
    hi[a] = (int64_t)last;
  }
  return 1;
}

/* Whether a point lies in the grid's bounding box (with the tolerance). */
static int inside_grid(const raster *r, const double p[3]) {
  for (int a = 0; a < 3; a++)
    if (!(p[a] >= coord(r, a, 0, 0) - r->tol && p[a] <= coord(r, a, r->n[a], 0) + r->tol))
      return 0;
  return 1;
}

static vox_status outside_grid(vox_context *ctx, const raster *r, const char *what,
                               const char *name, const double p[3]) {
  return vox_error(ctx, VOX_ERR_FORMAT,
                   "%s '%s': point (%g, %g, %g) lies outside the grid, which spans (%g, %g, %g) "
                   "to (%g, %g, %g) mm",
                   what, name, p[0], p[1], p[2], coord(r, 0, 0, 0), coord(r, 1, 0, 0),
                   coord(r, 2, 0, 0), coord(r, 0, r->n[0], 0), coord(r, 1, r->n[1], 0),
                   coord(r, 2, r->n[2], 0));
}

/* ---- mesh regions ---------------------------------------------------------- */

/* The solid of a mesh region on the grid: mask[e] = 1 for the elements whose
 * centres are inside (nodes = 0), or, on the grid of the nodes (nodes = 1:
 * one more along each axis, shifted by half a voxel, so that its element
 * centres are the model's nodes), for the nodes inside. Errors name the
 * item and the file. */
static vox_status mesh_mask(vox_context *ctx, const raster *r, const vox_region *rg,
                            const char *what, const char *name, int nodes, uint8_t **out) {
  vox_grid g = *r->grid;
  if (nodes) {
    g.nx++, g.ny++, g.nz++;
    for (int a = 0; a < 3; a++) g.origin[a] -= 0.5 * g.voxel_size[a];
  }
  vox_mesh mesh;
  vox_status status = vox_mesh_read(ctx, rg->mesh, &mesh);
  uint8_t *mask = status ? NULL : malloc((size_t)vox_grid_elements(&g));
  if (!status && !mask) status = out_of_memory(ctx);
  if (!status)
    status = vox_mesh_fill(ctx, &mesh, &g, VOX_FILL_AUTO, VOX_DEVICE_AUTO, mask, NULL);
  vox_mesh_free(&mesh);
  *out = mask;
  if (!status) return VOX_OK;
  free(mask);
  *out = NULL;
  char why[1024];
  snprintf(why, sizeof why, "%s", vox_context_message(ctx));
  return vox_error(ctx, status, "%s '%s': %s", what, name, why);
}

/* ---- node selection (supports and loads) ---------------------------------- */

typedef struct selection {
  int64_t *node;
  double *weight;
  size_t n, capacity;
} selection;

static vox_status select_add(vox_context *ctx, selection *s, int64_t node, double weight) {
  if (s->n == s->capacity) {
    size_t capacity = s->capacity ? 2 * s->capacity : 64;
    int64_t *nodes = realloc(s->node, capacity * sizeof *nodes);
    if (!nodes) return out_of_memory(ctx);
    s->node = nodes;
    double *weights = realloc(s->weight, capacity * sizeof *weights);
    if (!weights) return out_of_memory(ctx);
    s->weight = weights;
    s->capacity = capacity;
  }
  s->node[s->n] = node;
  s->weight[s->n++] = weight;
  return VOX_OK;
}

static void selection_free(selection *s) {
  free(s->node);
  free(s->weight);
  memset(s, 0, sizeof *s);
}

/* Pins the range of a face's axis to that face. */
static void pin_face(int face, int64_t lo[3], int64_t hi[3], int64_t last[3]) {
  int a = face / 2;
  lo[a] = hi[a] = face % 2 ? last[a] : 0;
}

/* The node nearest to p among those touching material; ties go to the lower
 * node index. Returns -1 when no node touches material. */
static int64_t nearest_node(const raster *r, const double p[3]) {
  int64_t ijk[3];
  for (int a = 0; a < 3; a++) {
    /* Halfway rounds down, to the lower index, as the scan below does. */
    double i = ceil((p[a] - r->grid->origin[a]) / r->grid->voxel_size[a] - 0.5);
    ijk[a] = i < 0 ? 0 : i > (double)r->n[a] ? r->n[a] : (int64_t)i;
  }
  /* The nearest grid node is the answer whenever it touches material. */
  if (adjacent_elements(r, ijk, 0)) return node_index(r, ijk);
  int64_t best = -1;
  double best_d2 = INFINITY;
  for (ijk[2] = 0; ijk[2] <= r->n[2]; ijk[2]++)
    for (ijk[1] = 0; ijk[1] <= r->n[1]; ijk[1]++)
      for (ijk[0] = 0; ijk[0] <= r->n[0]; ijk[0]++) {
        double d2 = 0;
        for (int a = 0; a < 3; a++) {
          double d = coord(r, a, ijk[a], 0) - p[a];
          d2 += d * d;
        }
        if (d2 < best_d2 && adjacent_elements(r, ijk, 0)) {
          best_d2 = d2;
          best = node_index(r, ijk);
        }
      }
  return best;
}

/* The index range [lo, hi] that a face, edge, box, sphere or label region
 * can hold, for nodes (offset 0, last = n) or element centres (offset 0.5,
 * last = n - 1). Returns 0 when the region misses the grid. Points are the
 * callers' own: a node and an element find theirs differently. */
static int region_range(const raster *r, const vox_region *rg, double offset,
                        const int64_t last[3], int64_t lo[3], int64_t hi[3]) {
  int64_t end[3];
  memcpy(end, last, sizeof end);
  for (int a = 0; a < 3; a++) lo[a] = 0, hi[a] = last[a];
  switch (rg->kind) {
  case VOX_REGION_EDGE: /* two faces */
    pin_face(rg->face[0], lo, hi, end);
    pin_face(rg->face[1], lo, hi, end);
    return 1;
  case VOX_REGION_FACE:
    pin_face(rg->face[0], lo, hi, end);
    return 1;
  case VOX_REGION_BOX:
    return index_range(r, rg->point, rg->point2, offset, lo, hi);
  case VOX_REGION_SPHERE: {
    double min[3], max[3];
    for (int a = 0; a < 3; a++) {
      min[a] = rg->point[a] - rg->radius;
      max[a] = rg->point[a] + rg->radius;
    }
    return index_range(r, min, max, offset, lo, hi);
  }
  case VOX_REGION_POINT:
  case VOX_REGION_LABEL:
  case VOX_REGION_MESH:
    return 1;
  }
  return 1;
}

/* Whether the node or element centre (offset as above) at ijk lies in a box
 * or sphere region; the range of the other kinds is exact. */
static int region_contains(const raster *r, const vox_region *rg, const int64_t ijk[3],
                           double offset) {
  if (rg->kind != VOX_REGION_BOX && rg->kind != VOX_REGION_SPHERE) return 1;
  double d2 = 0;
  for (int a = 0; a < 3; a++) {
    const double x = coord(r, a, ijk[a], offset);
    if (rg->kind == VOX_REGION_BOX) {
      if (x < rg->point[a] - r->tol || x > rg->point2[a] + r->tol) return 0;
    } else {
      d2 += (x - rg->point[a]) * (x - rg->point[a]);
    }
  }
  const double reach = rg->radius + r->tol;
  return rg->kind == VOX_REGION_BOX || d2 <= reach * reach;
}

/* The nodes of a region that touch material, in node order, with their
 * weights: tributary area on a face, tributary length on an edge, 1
 * elsewhere. */
static vox_status select_nodes(vox_context *ctx, const raster *r, const vox_region *rg,
                               const char *what, const char *name, selection *s) {
  if (rg->kind == VOX_REGION_POINT) {
    if (!inside_grid(r, rg->point)) return outside_grid(ctx, r, what, name, rg->point);
    int64_t node = nearest_node(r, rg->point);
    return node < 0 ? VOX_OK : select_add(ctx, s, node, 1);
  }
  const int64_t last[3] = {r->n[0], r->n[1], r->n[2]};
  int64_t lo[3], hi[3], ijk[3];
  if (rg->kind == VOX_REGION_MESH) {
    uint8_t *mask;
    vox_status status = mesh_mask(ctx, r, rg, what, name, 1, &mask);
    if (status) return status;
    int64_t node = 0;
    for (ijk[2] = 0; ijk[2] <= r->n[2]; ijk[2]++)
      for (ijk[1] = 0; ijk[1] <= r->n[1]; ijk[1]++)
        for (ijk[0] = 0; ijk[0] <= r->n[0] && !status; ijk[0]++, node++)
          if (mask[node] && adjacent_elements(r, ijk, 0)) status = select_add(ctx, s, node, 1);
    free(mask);
    return status;
  }
  if (!region_range(r, rg, 0, last, lo, hi)) return VOX_OK;
  int weighted = rg->kind == VOX_REGION_FACE || rg->kind == VOX_REGION_EDGE;
  int label = rg->kind == VOX_REGION_LABEL ? rg->label : 0;
  for (ijk[2] = lo[2]; ijk[2] <= hi[2]; ijk[2]++)
    for (ijk[1] = lo[1]; ijk[1] <= hi[1]; ijk[1]++)
      for (ijk[0] = lo[0]; ijk[0] <= hi[0]; ijk[0]++) {
        if (!region_contains(r, rg, ijk, 0)) continue;
        int count = adjacent_elements(r, ijk, label);
        if (!count) continue;
        vox_status status = select_add(ctx, s, node_index(r, ijk), weighted ? count : 1);
        if (status) return status;
      }
  return VOX_OK;
}

/* ---- passive parts (elements) --------------------------------------------- */

/* Marks in `mask` (zeroed by the caller) the elements of a region that hold
 * material, chosen by their centres (a LABEL region: those of its label);
 * *hits counts them. */
static vox_status region_elements(vox_context *ctx, const raster *r, const vox_region *rg,
                                  const char *what, const char *name, uint8_t *mask,
                                  int64_t *hits) {
  const uint8_t *label = r->label;
  const int64_t last[3] = {r->n[0] - 1, r->n[1] - 1, r->n[2] - 1};
  int64_t lo[3], hi[3], ijk[3];
  *hits = 0;
  if (rg->kind == VOX_REGION_MESH) {
    uint8_t *inside;
    vox_status status = mesh_mask(ctx, r, rg, what, name, 0, &inside);
    if (status) return status;
    const int64_t ne = r->n[0] * r->n[1] * r->n[2];
    for (int64_t e = 0; e < ne; e++) {
      if (!inside[e] || label[e] == 0) continue;
      ++*hits;
      mask[e] = 1;
    }
    free(inside);
    return VOX_OK;
  }
  if (rg->kind == VOX_REGION_POINT) {
    /* The element that holds the point; on a shared face the upper one. */
    if (!inside_grid(r, rg->point)) return outside_grid(ctx, r, what, name, rg->point);
    for (int a = 0; a < 3; a++) {
      double i = floor((rg->point[a] - r->grid->origin[a]) / r->grid->voxel_size[a]);
      lo[a] = hi[a] = i < 0 ? 0 : i > (double)last[a] ? last[a] : (int64_t)i;
    }
  } else if (!region_range(r, rg, 0.5, last, lo, hi)) {
    return VOX_OK;
  }
  for (ijk[2] = lo[2]; ijk[2] <= hi[2]; ijk[2]++)
    for (ijk[1] = lo[1]; ijk[1] <= hi[1]; ijk[1]++)
      for (ijk[0] = lo[0]; ijk[0] <= hi[0]; ijk[0]++) {
        if (!region_contains(r, rg, ijk, 0.5)) continue;
        const int64_t e = (ijk[2] * r->n[1] + ijk[1]) * r->n[0] + ijk[0];
        if (label[e] == 0 || (rg->kind == VOX_REGION_LABEL && label[e] != rg->label)) continue;
        ++*hits;
        mask[e] = 1;
      }
  return VOX_OK;
}

/* Relabels the design elements of a region, chosen by their centres, to
 * `to`. *hits counts the region's elements that hold material at all, so that
 * a region missing the model is told apart from one already taken by an
 * earlier passive part. */
static vox_status relabel(vox_context *ctx, const raster *r, uint8_t *label, const vox_passive *pa,
                          uint8_t to, int64_t *hits) {
  const size_t ne = (size_t)(r->n[0] * r->n[1] * r->n[2]);
  uint8_t *mask = calloc(ne, 1);
  if (!mask) return out_of_memory(ctx);
  vox_status status = region_elements(ctx, r, &pa->region, "passive", pa->name, mask, hits);
  for (size_t e = 0; e < ne && !status; e++)
    if (mask[e] && label[e] == LABEL_DESIGN) label[e] = to;
  free(mask);
  return status;
}

/* ---- checks of a problem built by hand ------------------------------------ */

/* vox_problem_read checks all of this; a caller that fills a vox_problem
 * itself gets the same guarantees here. */
static vox_status check_region(vox_context *ctx, const vox_region *rg, const char *what,
                               const char *name) {
  int ok = 1;
  switch (rg->kind) {
  case VOX_REGION_EDGE:
    ok = rg->face[1] >= 0 && rg->face[1] < 6 && rg->face[0] / 2 != rg->face[1] / 2;
    /* fall through */
  case VOX_REGION_FACE:
    ok = ok && rg->face[0] >= 0 && rg->face[0] < 6;
    break;
  case VOX_REGION_POINT:
    ok = isfinite(rg->point[0]) && isfinite(rg->point[1]) && isfinite(rg->point[2]);
    break;
  case VOX_REGION_BOX:
    for (int a = 0; a < 3; a++) ok = ok && rg->point[a] <= rg->point2[a];
    break;
  case VOX_REGION_SPHERE:
    ok = isfinite(rg->point[0]) && isfinite(rg->point[1]) && isfinite(rg->point[2]) &&
         rg->radius >= 0 && isfinite(rg->radius);
    break;
  case VOX_REGION_LABEL:
    ok = rg->label >= 1 && rg->label <= 255;
    break;
  case VOX_REGION_MESH:
    ok = rg->mesh[0] != '\0' && memchr(rg->mesh, '\0', sizeof rg->mesh) != NULL;
    break;
  default:
    ok = 0;
  }
  return ok ? VOX_OK
            : vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "%s '%s': the region is malformed", what,
                        name);
}

static vox_status check_problem(vox_context *ctx, const vox_problem *p) {
  const vox_material *m = &p->material;
  if (!(m->youngs_modulus > 0) || !(m->poisson_ratio > -1 && m->poisson_ratio < 0.5))
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "material '%s' needs E > 0 and -1 < nu < 0.5", m->name);
  if (p->n_load_cases < 0 || (p->n_load_cases > 0 && !p->load_case_names) ||
      p->n_supports < 0 || (p->n_supports > 0 && !p->supports) || p->n_forces < 0 ||
      (p->n_forces > 0 && !p->forces) || p->n_passive < 0 || (p->n_passive > 0 && !p->passive))
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "the problem's lists are inconsistent");
  vox_status status;
  for (int i = 0; i < p->n_supports; i++) {
    const vox_support *s = &p->supports[i];
    if ((status = check_region(ctx, &s->region, "support", s->name))) return status;
    if (!s->fixed[0] && !s->fixed[1] && !s->fixed[2])
      return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "support '%s' holds no component",
                       s->name);
    for (int c = 0; c < 3; c++)
      if (s->fixed[c] && !isfinite(s->value[c]))
        return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "support '%s': value is not finite",
                         s->name);
  }
  const int heat = p->physics == VOX_PHYSICS_HEAT;
  if (p->physics != VOX_PHYSICS_ELASTICITY && !heat)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "unknown physics %d", (int)p->physics);
  if (heat && !(m->conductivity > 0))
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "material '%s' needs a conductivity > 0",
                     m->name);
  for (int i = 0; heat && i < p->n_supports; i++)
    if (p->supports[i].fixed[1] || p->supports[i].fixed[2])
      return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                       "support '%s': a heat problem holds only the temperature (component 0)",
                       p->supports[i].name);
  int cases = p->n_load_cases > 0 ? p->n_load_cases : 1;
  for (int i = 0; i < p->n_forces; i++) {
    const vox_force *f = &p->forces[i];
    const int heat_load = f->kind == VOX_LOAD_HEAT || f->kind == VOX_LOAD_HEAT_SOURCE;
    if (heat_load != heat || (unsigned)f->kind > VOX_LOAD_HEAT_SOURCE)
      return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "load '%s': a %s load in a %s problem",
                       f->name, heat_load ? "heat" : "force", heat ? "heat" : "elasticity");
    if (heat_load && (f->force[1] != 0 || f->force[2] != 0))
      return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "load '%s': a heat load has one value",
                       f->name);
    if (!f->whole_model && (status = check_region(ctx, &f->region, "load", f->name)))
      return status;
    if (f->load_case < 0 || f->load_case >= cases)
      return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "load '%s': load case %d out of range",
                       f->name, f->load_case);
    if (!isfinite(f->force[0]) || !isfinite(f->force[1]) || !isfinite(f->force[2]))
      return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "load '%s': force is not finite", f->name);
  }
  if ((p->n_springs > 0 && !p->springs) || (p->n_outputs > 0 && !p->outputs) ||
      p->n_springs < 0 || p->n_outputs < 0 ||
      (unsigned)p->objective > VOX_OBJECTIVE_VOLUME || p->n_design_constraints < 0 ||
      p->n_design_constraints > VOX_MAX_DESIGN_CONSTRAINTS ||
      (p->n_design_constraints > 0 && !p->design_constraints))
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "the problem's lists are inconsistent");
  if (heat && (p->n_springs || p->n_outputs || p->objective || p->load_case_weights))
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "springs, outputs, objectives and load case weights are for elasticity");
  if (p->objective == VOX_OBJECTIVE_OUTPUT_DISPLACEMENT && (p->n_outputs == 0 || cases > 1))
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "the output-displacement objective needs outputs and one load case");
  for (int i = 0; i < p->n_design_constraints; i++) {
    const vox_design_constraint *c = &p->design_constraints[i];
    const int volume = c->kind == VOX_CONSTRAINT_VOLUME;
    if (c->kind > VOX_CONSTRAINT_COMPLIANCE || !memchr(c->name, '\0', VOX_NAME_MAX) ||
        (volume ? !(c->limit > 0 && c->limit <= 1) || c->equal > 1
                : !(c->limit > 0) || !isfinite(c->limit) || c->equal || c->label ||
                      c->load_case < 0 || c->load_case >= cases))
      return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "design constraint %d is malformed", i);
  }
  for (int c = 0; p->load_case_weights && c < cases; c++)
    if (!(p->load_case_weights[c] >= 0) || !isfinite(p->load_case_weights[c]))
      return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "load case %d: weight %g", c,
                       p->load_case_weights[c]);
  for (int list = 0; list < 2; list++)
    for (int i = 0; i < (list ? p->n_outputs : p->n_springs); i++) {
      const vox_force *f = list ? &p->outputs[i] : &p->springs[i];
      const char *kind = list ? "output" : "spring";
      if ((status = check_region(ctx, &f->region, kind, f->name))) return status;
      for (int c = 0; c < 3; c++)
        if (!isfinite(f->force[c]) || (!list && f->force[c] < 0))
          return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "%s '%s': value %g", kind, f->name,
                           f->force[c]);
    }
  for (int i = 0; i < p->n_passive; i++) {
    const vox_passive *pa = &p->passive[i];
    if ((status = check_region(ctx, &pa->region, "passive", pa->name))) return status;
    if (pa->role != VOX_ROLE_SOLID && pa->role != VOX_ROLE_VOID)
      return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "passive '%s': role must be solid or void",
                       pa->name);
  }
  return VOX_OK;
}

/* ---- constraints and loads ------------------------------------------------ */

typedef struct pending_constraint {
  int64_t node;
  int component;
  int support; /* index into problem->supports, for messages */
  double value;
} pending_constraint;

typedef struct pending_load {
  int64_t node;
  int component;
  int load_case;
  double value;
  int source; /* index into problem->forces: the load whose name it carries */
} pending_load;

/* A growing array of `size`-byte items; one helper for both kinds. */
static vox_status push(vox_context *ctx, void **items, size_t *n, size_t *capacity, size_t size,
                       const void *item) {
  if (*n == *capacity) {
    size_t grown = *capacity ? 2 * *capacity : 256;
    void *p = realloc(*items, grown * size);
    if (!p) return out_of_memory(ctx);
    *items = p;
    *capacity = grown;
  }
  memcpy((char *)*items + *n * size, item, size);
  ++*n;
  return VOX_OK;
}

static int compare_constraints(const void *pa, const void *pb) {
  const pending_constraint *a = pa, *b = pb;
  if (a->node != b->node) return a->node < b->node ? -1 : 1;
  if (a->component != b->component) return a->component - b->component;
  return a->support - b->support;
}

static int compare_loads(const void *pa, const void *pb) {
  const pending_load *a = pa, *b = pb;
  if (a->load_case != b->load_case) return a->load_case - b->load_case;
  if (a->node != b->node) return a->node < b->node ? -1 : 1;
  return a->component - b->component;
}

/* The same order, the loads of one degree of freedom by their source: the
 * merged entry keeps the name of the first load in the file. */
static int compare_loads_and_sources(const void *pa, const void *pb) {
  int order = compare_loads(pa, pb);
  if (order) return order;
  return ((const pending_load *)pa)->source - ((const pending_load *)pb)->source;
}

/* Sorts the constraints by node and component and drops repeats. Where two
 * supports prescribe the same component of a node, the values must agree:
 * the last one silently winning would hide a mistake in the file. */
static vox_status merge_constraints(vox_context *ctx, const raster *r, const vox_problem *p,
                                    pending_constraint *c, size_t *n) {
  if (*n == 0) return VOX_OK;
  qsort(c, *n, sizeof *c, compare_constraints);
  size_t kept = 0;
  for (size_t i = 0; i < *n; i++) {
    if (kept && c[kept - 1].node == c[i].node && c[kept - 1].component == c[i].component) {
      if (c[kept - 1].value != c[i].value) {
        int64_t ijk[3];
        node_ijk(r, c[i].node, ijk);
        if (p->physics == VOX_PHYSICS_HEAT)
          return vox_error(ctx, VOX_ERR_FORMAT,
                           "supports '%s' and '%s' prescribe different temperatures (%g and %g "
                           "K) at node (%lld, %lld, %lld), at (%g, %g, %g) mm",
                           p->supports[c[kept - 1].support].name, p->supports[c[i].support].name,
                           c[kept - 1].value, c[i].value, (long long)ijk[0], (long long)ijk[1],
                           (long long)ijk[2], coord(r, 0, ijk[0], 0), coord(r, 1, ijk[1], 0),
                           coord(r, 2, ijk[2], 0));
        return vox_error(ctx, VOX_ERR_FORMAT,
                         "supports '%s' and '%s' prescribe different %c displacements (%g and "
                         "%g mm) at node (%lld, %lld, %lld), at (%g, %g, %g) mm",
                         p->supports[c[kept - 1].support].name, p->supports[c[i].support].name,
                         component_names[c[i].component], c[kept - 1].value, c[i].value,
                         (long long)ijk[0], (long long)ijk[1], (long long)ijk[2],
                         coord(r, 0, ijk[0], 0), coord(r, 1, ijk[1], 0), coord(r, 2, ijk[2], 0));
      }
      continue;
    }
    c[kept++] = c[i];
  }
  *n = kept;
  return VOX_OK;
}

/* Sorts the nodal forces by case, node and component and adds up those that
 * fall on the same degree of freedom (two loads sharing an edge node), so
 * that the model holds one entry per loaded degree of freedom. */
static void merge_loads(pending_load *l, size_t *n) {
  if (*n == 0) return;
  qsort(l, *n, sizeof *l, compare_loads_and_sources);
  size_t kept = 0;
  for (size_t i = 0; i < *n; i++) {
    if (kept && compare_loads(&l[kept - 1], &l[i]) == 0) {
      l[kept - 1].value += l[i].value;
      continue;
    }
    l[kept++] = l[i];
  }
  *n = kept;
}

/* Spreads a total force over the selected nodes in proportion to their
 * weights. The node of largest weight takes the rounding remainder, so that
 * the nodal forces add up to the total to the last bit or so. */
static vox_status spread_force(vox_context *ctx, const vox_force *f, const selection *s,
                               pending_load **loads, size_t *n, size_t *capacity) {
  double total_weight = 0;
  size_t heaviest = 0;
  for (size_t i = 0; i < s->n; i++) {
    total_weight += s->weight[i];
    if (s->weight[i] > s->weight[heaviest]) heaviest = i;
  }
  for (int c = 0; c < 3; c++) {
    if (f->force[c] == 0) continue;
    double sum = 0;
    for (size_t i = 0; i < s->n; i++) sum += f->force[c] * (s->weight[i] / total_weight);
    double remainder = f->force[c] - sum;
    for (size_t i = 0; i < s->n; i++) {
      pending_load l = {.node = s->node[i], .component = c, .load_case = f->load_case,
                        .value = f->force[c] * (s->weight[i] / total_weight)};
      if (i == heaviest) l.value += remainder;
      vox_status status = push(ctx, (void **)loads, n, capacity, sizeof l, &l);
      if (status) return status;
    }
  }
  return VOX_OK;
}

/* A heat source of q W/mm^3 in the elements of a region: each element
 * generates q times its volume, and the consistent nodal loads of trilinear
 * elements under a uniform source give each of its 8 nodes one eighth. The
 * loads are summed per node first, so that the list holds one entry a node. */
static vox_status spread_heat_source(vox_context *ctx, const raster *r, const vox_force *f,
                                     pending_load **loads, size_t *n, size_t *capacity) {
  const size_t ne = (size_t)(r->n[0] * r->n[1] * r->n[2]);
  const int64_t sy = r->n[0] + 1, sz = sy * (r->n[1] + 1);
  const size_t nn = (size_t)(sz * (r->n[2] + 1));
  uint8_t *mask = calloc(ne, 1);
  double *node_heat = calloc(nn, sizeof *node_heat);
  vox_status status = mask && node_heat ? VOX_OK : out_of_memory(ctx);
  int64_t hits = 0;
  if (!status && f->whole_model) {
    for (size_t e = 0; e < ne; e++) mask[e] = r->label[e] != 0;
    hits = 1;
  } else if (!status) {
    status = region_elements(ctx, r, &f->region, "load", f->name, mask, &hits);
  }
  if (!status && hits == 0)
    status = vox_error(ctx, VOX_ERR_FORMAT, "load '%s': region selects no element", f->name);
  const double *h = r->grid->voxel_size;
  const double share = f->force[0] * h[0] * h[1] * h[2] / 8;
  int64_t ijk[3];
  size_t e = 0;
  for (ijk[2] = 0; ijk[2] < r->n[2] && !status; ijk[2]++)
    for (ijk[1] = 0; ijk[1] < r->n[1]; ijk[1]++)
      for (ijk[0] = 0; ijk[0] < r->n[0]; ijk[0]++, e++) {
        if (!mask[e]) continue;
        const int64_t n0 = ijk[2] * sz + ijk[1] * sy + ijk[0];
        for (int c = 0; c < 8; c++)
          node_heat[n0 + (c & 1) + ((c >> 1) & 1) * sy + (c >> 2) * sz] += share;
      }
  for (size_t node = 0; node < nn && !status; node++) {
    if (node_heat[node] == 0) continue;
    pending_load l = {.node = (int64_t)node, .component = 0, .load_case = f->load_case,
                      .value = node_heat[node]};
    status = push(ctx, (void **)loads, n, capacity, sizeof l, &l);
  }
  free(mask);
  free(node_heat);
  return status;
}

/* ---- the whole problem ---------------------------------------------------- */

/* The materials of the labels the model uses and lacks; materials the
 * caller defined already are kept. Labels 1-3 are the design domain and the
 * passive parts; labels above 3 (the further classes of a segmented image,
 * docs/images.md) get the design material too, named phase<L>. */
static vox_status add_materials(vox_context *ctx, const vox_problem *p, vox_model *model) {
  int used[256] = {0};
  int64_t ne = vox_grid_elements(&model->grid);
  for (int64_t e = 0; e < ne; e++) used[model->label[e]] = 1;
  static const char *const passive_names[] = {"", "", "passive_solid", "passive_void"};
  for (int l = LABEL_DESIGN; l <= 255; l++) {
    if (!used[l] || vox_model_material(model, (uint8_t)l)) continue;
    vox_material m = p->material;
    m.label = (uint8_t)l;
    m.role = l == LABEL_SOLID  ? VOX_ROLE_SOLID
             : l == LABEL_VOID ? VOX_ROLE_VOID
                               : VOX_ROLE_DESIGN;
    if (l == LABEL_SOLID || l == LABEL_VOID)
      snprintf(m.name, sizeof m.name, "%s", passive_names[l]);
    if (l > LABEL_VOID) snprintf(m.name, sizeof m.name, "phase%d", l);
    vox_status status = vox_model_add_material(ctx, model, &m);
    if (status) return status;
  }
  return VOX_OK;
}

vox_status vox_problem_materials(vox_context *ctx, const vox_material *material,
                                 vox_model *model) {
  if (!material || !model || !model->label)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "the materials need a model with labels");
  if (!(material->youngs_modulus > 0) || !(material->poisson_ratio > -1 &&
                                           material->poisson_ratio < 0.5))
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "material '%s' needs E > 0 and -1 < nu < 0.5", material->name);
  vox_problem p = {.material = *material};
  vox_status status = add_materials(ctx, &p, model);
  if (!status && model->n_load_cases == 0) status = vox_model_set_load_cases(ctx, model, 1);
  return status;
}

vox_status vox_problem_rasterize(vox_context *ctx, const vox_problem *problem, vox_model *model) {
  if (!problem || !model || !model->label)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "rasterize needs a problem and a model with labels");
  const vox_grid *g = &model->grid;
  if (g->nx < 1 || g->ny < 1 || g->nz < 1 ||
      !(g->voxel_size[0] > 0 && g->voxel_size[1] > 0 && g->voxel_size[2] > 0))
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "the model's grid is empty");
  vox_status status = check_problem(ctx, problem);
  if (status) return status;
  if (problem->n_supports == 0 && !problem->cell)
    return vox_error(ctx, VOX_ERR_FORMAT,
                     problem->physics == VOX_PHYSICS_HEAT
                         ? "the problem fixes no temperature, so the temperature is undetermined; "
                           "add an entry with 'temperature' under 'supports'"
                         : "the problem has no support, so the structure is free to move; "
                           "add an entry under 'supports'");

  /* Everything is worked out on the side first, so that a region selecting
   * nothing leaves the model as it was. */
  size_t ne = (size_t)vox_grid_elements(g);
  uint8_t *label = malloc(ne);
  pending_constraint *constraints = NULL;
  pending_load *loads = NULL;
  size_t n_constraints = 0, constraints_capacity = 0, n_loads = 0, loads_capacity = 0;
  selection s = {0};
  if (!label) return out_of_memory(ctx);
  memcpy(label, model->label, ne);
  raster r = {.grid = g, .label = label, .n = {g->nx, g->ny, g->nz}};
  double h_min = fmin(g->voxel_size[0], fmin(g->voxel_size[1], g->voxel_size[2]));
  r.tol = 1e-6 * h_min;

  for (int i = 0; i < problem->n_passive && !status; i++) {
    const vox_passive *pa = &problem->passive[i];
    int64_t hits;
    status = relabel(ctx, &r, label, pa, pa->role == VOX_ROLE_SOLID ? LABEL_SOLID : LABEL_VOID,
                     &hits);
    if (!status && hits == 0)
      status = vox_error(ctx, VOX_ERR_FORMAT, "passive '%s': region selects no element", pa->name);
  }

  for (int i = 0; i < problem->n_supports && !status; i++) {
    const vox_support *sup = &problem->supports[i];
    s.n = 0;
    status = select_nodes(ctx, &r, &sup->region, "support", sup->name, &s);
    if (!status && s.n == 0)
      status = vox_error(ctx, VOX_ERR_FORMAT,
                         "support '%s': region selects no node (of the model's material)",
                         sup->name);
    for (size_t k = 0; k < s.n && !status; k++)
      for (int c = 0; c < 3 && !status; c++) {
        if (!sup->fixed[c]) continue;
        pending_constraint pc = {s.node[k], c, i, sup->value[c]};
        status = push(ctx, (void **)&constraints, &n_constraints, &constraints_capacity,
                      sizeof pc, &pc);
      }
  }
  if (!status) status = merge_constraints(ctx, &r, problem, constraints, &n_constraints);

  for (int i = 0; i < problem->n_forces && !status; i++) {
    const vox_force *f = &problem->forces[i];
    const size_t first = n_loads;
    if (f->kind == VOX_LOAD_HEAT_SOURCE) {
      status = spread_heat_source(ctx, &r, f, &loads, &n_loads, &loads_capacity);
    } else {
      s.n = 0;
      status = select_nodes(ctx, &r, &f->region, "load", f->name, &s);
      if (!status && s.n == 0)
        status = vox_error(ctx, VOX_ERR_FORMAT,
                           "load '%s': region selects no node (of the model's material)",
                           f->name);
      if (!status) status = spread_force(ctx, f, &s, &loads, &n_loads, &loads_capacity);
    }
    for (size_t k = first; k < n_loads; k++) loads[k].source = i;
  }
  if (!status) merge_loads(loads, &n_loads);

  /* springs and outputs: spread as forces are (one list each, merged per
   * node and component) */
  pending_load *spread[2] = {NULL, NULL};
  size_t n_spread[2] = {0, 0}, spread_capacity[2] = {0, 0};
  for (int list = 0; list < 2 && !status; list++)
    for (int i = 0; i < (list ? problem->n_outputs : problem->n_springs) && !status; i++) {
      vox_force f = list ? problem->outputs[i] : problem->springs[i];
      const char *kind = list ? "output" : "spring";
      f.load_case = 0;
      s.n = 0;
      status = select_nodes(ctx, &r, &f.region, kind, f.name, &s);
      if (!status && s.n == 0)
        status = vox_error(ctx, VOX_ERR_FORMAT,
                           "%s '%s': region selects no node (of the model's material)", kind,
                           f.name);
      if (!status)
        status = spread_force(ctx, &f, &s, &spread[list], &n_spread[list], &spread_capacity[list]);
      if (!status) merge_loads(spread[list], &n_spread[list]);
    }

  /* A volume constraint's label: a design material of the model after the
   * passive parts, with voxels. */
  for (int i = 0; i < problem->n_design_constraints && !status; i++) {
    const vox_design_constraint *c = &problem->design_constraints[i];
    if (c->kind != VOX_CONSTRAINT_VOLUME || c->label == 0) continue;
    const vox_material *own = vox_model_material(model, c->label);
    size_t voxels = 0;
    for (size_t e = 0; e < ne; e++) voxels += label[e] == c->label;
    if (c->label == 2 || c->label == 3 || (own && own->role != VOX_ROLE_DESIGN))
      status = vox_error(ctx, VOX_ERR_FORMAT,
                         "constraint '%s': label %d is not a design material (2 and 3 are the "
                         "passive parts)", c->name, c->label);
    else if (voxels == 0)
      status = vox_error(ctx, VOX_ERR_FORMAT,
                         "constraint '%s': no voxel of the model has label %d (after the passive "
                         "parts)", c->name, c->label);
  }

  /* Commit. Only running out of memory can fail from here on. */
  if (!status) {
    memcpy(model->label, label, ne);
    model->physics = problem->physics;
    status = add_materials(ctx, problem, model);
  }
  /* the supports' and loads' names, for the exports that keep them (a
   * degree of freedom that two of them share carries the first's name) */
  uint16_t *support_name = calloc((size_t)problem->n_supports + 1, sizeof *support_name);
  uint16_t *load_name = calloc((size_t)problem->n_forces + 1, sizeof *load_name);
  if (!status && (!support_name || !load_name)) status = out_of_memory(ctx);
  for (int i = 0; i < problem->n_supports && !status; i++)
    if (problem->supports[i].name[0])
      status = vox_model_add_condition_name(ctx, model, 0, problem->supports[i].name,
                                            &support_name[i]);
  for (int i = 0; i < problem->n_forces && !status; i++)
    if (problem->forces[i].name[0])
      status = vox_model_add_condition_name(ctx, model, 1, problem->forces[i].name, &load_name[i]);
  for (size_t i = 0; i < n_constraints && !status; i++) {
    status = vox_model_add_constraint(ctx, model, constraints[i].node, constraints[i].component,
                                      constraints[i].value);
    if (!status)
      model->constraints[model->n_constraints - 1].name_index =
          support_name[constraints[i].support];
  }
  for (size_t i = 0; i < n_loads && !status; i++) {
    status = vox_model_add_load(ctx, model, loads[i].node, loads[i].component,
                                loads[i].load_case, loads[i].value);
    if (!status) model->loads[model->n_loads - 1].name_index = load_name[loads[i].source];
  }
  free(support_name);
  free(load_name);
  if (!status) {
    int cases = problem->n_load_cases > 0 ? problem->n_load_cases : 1;
    status = vox_model_set_load_cases(ctx, model, cases);
    for (int c = 0; c < problem->n_load_cases && !status; c++)
      snprintf(model->load_case_names[c], VOX_NAME_MAX, "%s", problem->load_case_names[c]);
  }
  for (size_t i = 0; i < n_spread[0] && !status; i++)
    status = vox_model_add_spring(ctx, model, spread[0][i].node, spread[0][i].component,
                                  spread[0][i].value);
  for (size_t i = 0; i < n_spread[1] && !status; i++)
    status = vox_model_add_output(ctx, model, spread[1][i].node, spread[1][i].component,
                                  spread[1][i].value);
  if (!status) {
    model->objective = problem->objective;
    status = vox_model_set_load_case_weights(ctx, model, problem->load_case_weights);
  }
  if (!status) {
    free(model->design_constraints);
    model->design_constraints = NULL;
    model->n_design_constraints = 0;
  }
  for (int i = 0; i < problem->n_design_constraints && !status; i++)
    status = vox_model_add_design_constraint(ctx, model, &problem->design_constraints[i]);
  if (!status && problem->title[0] && !model->title && !(model->title = strdup(problem->title)))
    status = out_of_memory(ctx);
  /* a cell's design settings travel in the model file to voxfe-optimize */
  const char *cell_text[3] = {problem->cell_objective, problem->cell_expression,
                              problem->cell_symmetry};
  char **cell_field[3] = {&model->cell_objective, &model->cell_expression, &model->cell_symmetry};
  for (int i = 0; i < 3 && !status; i++)
    if (cell_text[i] && cell_text[i][0]) {
      free(*cell_field[i]);
      if (!(*cell_field[i] = strdup(cell_text[i]))) status = out_of_memory(ctx);
    }
  free(spread[0]);
  free(spread[1]);

  selection_free(&s);
  free(loads);
  free(constraints);
  free(label);
  return status;
}
