/* SPDX-License-Identifier: BSD-3-Clause */
/* Bone-strength analysis on the host: standard compression tests, connected
 * components, element fields, reactions, the Pistoia failure load and field
 * statistics (voxfe/analysis.h). These run once per analysis, after the
 * solve, in one pass over the elements each. */
#include "voxfe/analysis.h"

#include <math.h>
#include <omp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "voxfe/components.h"
#include "voxfe/element.h"

static const char *const test_names[] = {"uniaxial", "friction", "confined"};

const char *vox_compression_test_name(vox_compression_test test) {
  return (unsigned)test < 3 ? test_names[test] : "unknown";
}

int vox_compression_test_parse(const char *text, vox_compression_test *test) {
  for (int i = 0; i < 3; i++)
    if (strcmp(text, test_names[i]) == 0) {
      *test = (vox_compression_test)i;
      return 0;
    }
  return -1;
}

static const char *const sed_point_names[] = {"centre", "element-mean"};

const char *vox_sed_point_name(vox_sed_point point) {
  return (unsigned)point < 2 ? sed_point_names[point] : "unknown";
}

int vox_sed_point_parse(const char *text, vox_sed_point *point) {
  for (int i = 0; i < 2; i++)
    if (strcmp(text, sed_point_names[i]) == 0) {
      *point = (vox_sed_point)i;
      return 0;
    }
  return -1;
}

static vox_status out_of_memory(vox_context *ctx) {
  return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
}

vox_status vox_keep_largest_component(vox_context *ctx, vox_model *model, int connectivity,
                                      size_t *removed, size_t *components) {
  const int64_t n[3] = {model->grid.nx, model->grid.ny, model->grid.nz};
  vox_component_counts counts;
  vox_status s = vox_keep_largest_labels(ctx, model->label, n, connectivity, &counts);
  if (s) return s;
  *removed = counts.removed;
  *components = counts.components;
  return VOX_OK;
}

/* Element index of (p, q) on layer `layer` perpendicular to `axis`, where p
 * and q run along the other two axes in increasing order. */
static int64_t layer_element(const vox_grid *g, int axis, int64_t layer, int64_t p, int64_t q) {
  int64_t ijk[3];
  const int a1 = axis == 0 ? 1 : 0, a2 = axis == 2 ? 1 : 2;
  ijk[axis] = layer, ijk[a1] = p, ijk[a2] = q;
  return (ijk[2] * g->ny + ijk[1]) * g->nx + ijk[0];
}

static const char *const axis_name[3] = {"x", "y", "z"};

vox_status vox_check_plate_contact(vox_context *ctx, const vox_model *model, int axis,
                                   int connectivity) {
  if (connectivity != 6 && connectivity != 26)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "connectivity %d is not 6 or 26",
                     connectivity);
  if (axis < 0 || axis > 2) return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "axis %d", axis);
  const vox_grid *g = &model->grid;
  const int64_t ne = vox_grid_elements(g), n[3] = {g->nx, g->ny, g->nz};
  const int a1 = axis == 0 ? 1 : 0, a2 = axis == 2 ? 1 : 2;
  size_t bone = 0, at_bottom = 0, at_top = 0;
  for (int64_t e = 0; e < ne; e++) bone += model->label[e] != 0;
  if (!bone) return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "the model has no bone (no voxel with a non-zero label)");
  for (int64_t p = 0; p < n[a1]; p++)
    for (int64_t q = 0; q < n[a2]; q++) {
      at_bottom += model->label[layer_element(g, axis, 0, p, q)] != 0;
      at_top += model->label[layer_element(g, axis, n[axis] - 1, p, q)] != 0;
    }
  if (!at_bottom || !at_top)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "no bone at the %s plate (the %s face at %s = %s): nothing to compress",
                     at_bottom ? "top" : "bottom", at_bottom ? "last" : "first", axis_name[axis],
                     at_bottom ? "max" : "min");
  int connected = 0;
  vox_status s = vox_layers_connected(ctx, model->label, n, axis, connectivity, &connected);
  if (s) return s;
  if (!connected)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "the bone is not connected from plate to plate along %s (%d-connectivity)",
                     axis_name[axis], connectivity);
  return VOX_OK;
}

static int64_t node_index(const vox_grid *g, int64_t i, int64_t j, int64_t k) {
  return (k * (g->ny + 1) + j) * (g->nx + 1) + i;
}

/* The node row (j, k) of the mask: the OR of the up to four element rows
 * around it (`any`, nx bytes of scratch), then of each node's two elements
 * along x; byte loops the compiler vectorises. */
static void bone_node_row(const vox_model *m, int64_t j, int64_t k, uint8_t *any, uint8_t *out) {
  const int64_t nx = m->grid.nx, ny = m->grid.ny, nz = m->grid.nz;
  memset(any, 0, (size_t)nx);
  for (int64_t c = k > 0 ? k - 1 : 0; c <= k && c < nz; c++)
    for (int64_t b = j > 0 ? j - 1 : 0; b <= j && b < ny; b++) {
      const uint8_t *l = m->label + (c * ny + b) * nx;
      for (int64_t i = 0; i < nx; i++) any[i] |= l[i];
    }
  out[0] = any[0] != 0;
  for (int64_t i = 1; i < nx; i++) out[i] = (any[i - 1] | any[i]) != 0;
  out[nx] = any[nx - 1] != 0;
}

vox_status vox_bone_node_mask(vox_context *ctx, const vox_model *model, uint8_t *mask) {
  const int64_t nx = model->grid.nx, ny = model->grid.ny, layers = model->grid.nz + 1;
  const int threads = omp_get_max_threads();
  uint8_t *scratch = malloc((size_t)threads * (size_t)nx);
  if (!scratch) return out_of_memory(ctx);
#pragma omp parallel num_threads(threads)
  {
    uint8_t *any = scratch + (size_t)omp_get_thread_num() * (size_t)nx;
#pragma omp for schedule(dynamic, 1)
    for (int64_t k = 0; k < layers; k++)
      for (int64_t j = 0; j <= ny; j++)
        bone_node_row(model, j, k, any, mask + (k * (ny + 1) + j) * (nx + 1));
  }
  free(scratch);
  return VOX_OK;
}

/* 1 for each node of a non-empty voxel. */
static uint8_t *bone_nodes(const vox_model *m) {
  uint8_t *used = malloc((size_t)vox_grid_nodes(&m->grid));
  if (used && vox_bone_node_mask(NULL, m, used)) {
    free(used);
    return NULL;
  }
  return used;
}

vox_status vox_add_compression_test(vox_context *ctx, vox_model *model, vox_compression_test test,
                                    int axis, double strain, double *applied) {
  if (axis < 0 || axis > 2 || (unsigned)test > VOX_TEST_CONFINED || !isfinite(strain))
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "bad compression test (axis %d, test %d)",
                     axis, (int)test);
  const vox_grid *g = &model->grid;
  const int64_t n[3] = {g->nx, g->ny, g->nz};
  const double delta = strain * (double)n[axis] * g->voxel_size[axis];
  uint8_t *used = bone_nodes(model);
  if (!used) return out_of_memory(ctx);
  model->n_constraints = 0;
  model->n_loads = 0;
  vox_status s = vox_model_set_load_cases(ctx, model, 1);
  if (!s) snprintf(model->load_case_names[0], VOX_NAME_MAX, "compression");

  int64_t pin = -1, pin_q = -1; /* the pinned node and its lateral partner */
  const int a1 = axis == 0 ? 1 : 0, a2 = axis == 2 ? 1 : 2;
  int64_t ijk[3];
  /* in node order; the uniaxial and friction tests constrain the two end
   * layers along the axis only, so the loop along the axis visits those
   * two and skips the rest of the box (14 M nodes of a clinical model) */
  int64_t step[3] = {1, 1, 1};
  if (test != VOX_TEST_CONFINED && n[axis] > 0) step[axis] = n[axis];
  for (int64_t k = 0; k <= g->nz && !s; k += step[2])
    for (int64_t j = 0; j <= g->ny && !s; j += step[1])
      for (int64_t i = 0; i <= g->nx && !s; i += step[0]) {
        const int64_t node = node_index(g, i, j, k);
        if (!used[node]) continue;
        ijk[0] = i, ijk[1] = j, ijk[2] = k;
        const int bottom = ijk[axis] == 0, top = ijk[axis] == n[axis];
        if (bottom || top) {
          s = vox_model_add_constraint(ctx, model, node, axis, top ? delta : 0);
          if (!s && test == VOX_TEST_FRICTION) {
            s = vox_model_add_constraint(ctx, model, node, a1, 0);
            if (!s) s = vox_model_add_constraint(ctx, model, node, a2, 0);
          }
          if (bottom && test != VOX_TEST_FRICTION) {
            /* the pin: the first bottom node in node order; its partner: a
             * later bottom node off the pin's line along a2 (it is held
             * along a2, so it stops the rotation about the axis) */
            if (pin < 0)
              pin = node;
            else if (pin_q < 0) {
              int64_t pijk[3] = {pin % (g->nx + 1), (pin / (g->nx + 1)) % (g->ny + 1),
                                 pin / ((g->nx + 1) * (g->ny + 1))};
              if (pijk[a1] != ijk[a1]) pin_q = node;
            }
          }
        }
        if (test == VOX_TEST_CONFINED)
          for (int a = 0; a < 3 && !s; a++)
            if (a != axis && (ijk[a] == 0 || ijk[a] == n[a]))
              s = vox_model_add_constraint(ctx, model, node, a, 0);
      }
  free(used);
  /* confined: the lateral faces hold the body already (unless the bone
   * does not reach them, where the pin does the job) */
  if (!s && test != VOX_TEST_FRICTION && pin >= 0) {
    s = vox_model_add_constraint(ctx, model, pin, a1, 0);
    if (!s) s = vox_model_add_constraint(ctx, model, pin, a2, 0);
    if (!s && pin_q >= 0) s = vox_model_add_constraint(ctx, model, pin_q, a2, 0);
  }
  if (!s && applied) *applied = delta;
  return s;
}

/* Eigenvalues (ascending) and eigenvectors (columns of v) of a symmetric
 * 6x6 matrix by cyclic Jacobi rotations. */
static void eigen6(const double a_in[36], double w[6], double v[36]) {
  double a[36];
  memcpy(a, a_in, sizeof a);
  for (int i = 0; i < 36; i++) v[i] = i % 7 == 0;
  for (int sweep = 0; sweep < 50; sweep++) {
    double off = 0;
    for (int p = 0; p < 6; p++)
      for (int q = p + 1; q < 6; q++) off += a[6 * p + q] * a[6 * p + q];
    if (off < 1e-30) break;
    for (int p = 0; p < 6; p++)
      for (int q = p + 1; q < 6; q++) {
        if (a[6 * p + q] == 0) continue;
        const double theta = (a[6 * q + q] - a[6 * p + p]) / (2 * a[6 * p + q]);
        const double t = (theta >= 0 ? 1 : -1) / (fabs(theta) + sqrt(theta * theta + 1));
        const double c = 1 / sqrt(t * t + 1), sn = t * c;
        for (int k = 0; k < 6; k++) { /* columns p, q */
          const double akp = a[6 * k + p], akq = a[6 * k + q];
          a[6 * k + p] = c * akp - sn * akq, a[6 * k + q] = sn * akp + c * akq;
        }
        for (int k = 0; k < 6; k++) { /* rows p, q */
          const double apk = a[6 * p + k], aqk = a[6 * q + k];
          a[6 * p + k] = c * apk - sn * aqk, a[6 * q + k] = sn * apk + c * aqk;
        }
        for (int k = 0; k < 6; k++) {
          const double vkp = v[6 * k + p], vkq = v[6 * k + q];
          v[6 * k + p] = c * vkp - sn * vkq, v[6 * k + q] = sn * vkp + c * vkq;
        }
      }
  }
  for (int i = 0; i < 6; i++) w[i] = a[7 * i];
  for (int i = 0; i < 6; i++) /* ascending: selection sort of the pairs */
    for (int j = i + 1; j < 6; j++)
      if (w[j] < w[i]) {
        const double t = w[i];
        w[i] = w[j], w[j] = t;
        for (int k = 0; k < 6; k++) {
          const double x = v[6 * k + i];
          v[6 * k + i] = v[6 * k + j], v[6 * k + j] = x;
        }
      }
}

/* The six rigid motions' values on dof `component` of grid node `node`:
 * translations x, y, z, then rotations about x, y, z through the box's
 * centre, in units of the box's size (so that the six weigh alike). */
static void rigid_row(const vox_grid *g, int64_t node, int component, double row[6]) {
  const int64_t ijk[3] = {node % (g->nx + 1), (node / (g->nx + 1)) % (g->ny + 1),
                          node / ((g->nx + 1) * (g->ny + 1))};
  const int64_t n[3] = {g->nx, g->ny, g->nz};
  double p[3], size = 0;
  for (int a = 0; a < 3; a++) size = fmax(size, (double)n[a] * g->voxel_size[a]);
  for (int a = 0; a < 3; a++)
    p[a] = ((double)ijk[a] - 0.5 * (double)n[a]) * g->voxel_size[a] / size;
  const double rot[3][3] = {{0, -p[2], p[1]}, {p[2], 0, -p[0]}, {-p[1], p[0], 0}};
  for (int k = 0; k < 3; k++) row[k] = k == component;
  for (int k = 0; k < 3; k++) row[3 + k] = rot[k][component];
}

vox_status vox_hold_rigid_motions(vox_context *ctx, vox_model *model, size_t *added) {
  const vox_grid *g = &model->grid;
  const size_t n0 = model->n_constraints;
  double gram[36] = {0}, row[6];
  *added = 0;
  for (size_t i = 0; i < n0; i++) {
    rigid_row(g, model->constraints[i].node, model->constraints[i].component, row);
    for (int r = 0; r < 6; r++)
      for (int c = 0; c < 6; c++) gram[6 * r + c] += row[r] * row[c];
  }
  /* a motion is held when the supports' rows reach it: the Gram matrix's
   * eigenvalues over 1e-9 of the largest; the free ones span the rest */
  for (int step = 0; step < 6; step++) {
    double w[6], v[36];
    eigen6(gram, w, v);
    const double floor = 1e-9 * fmax(w[5], 1);
    int free_modes = 0;
    while (free_modes < 6 && w[free_modes] <= floor) free_modes++;
    if (!free_modes) return VOX_OK;
    /* the supported dof (any component) that reaches furthest into the free
     * motions: its row's projection onto them */
    double best = 0;
    int64_t best_node = -1;
    int best_component = 0;
    for (size_t i = 0; i < n0; i++)
      for (int c = 0; c < 3; c++) {
        rigid_row(g, model->constraints[i].node, c, row);
        double reach = 0;
        for (int f = 0; f < free_modes; f++) {
          double dot = 0;
          for (int r = 0; r < 6; r++) dot += row[r] * v[6 * r + f];
          reach += dot * dot;
        }
        if (reach > best * (1 + 1e-12)) best = reach, best_node = model->constraints[i].node,
                                         best_component = c;
      }
    if (best_node < 0 || best < 1e-12) return VOX_OK; /* no supported node reaches them */
    vox_status s = vox_model_add_constraint(ctx, model, best_node, best_component, 0);
    if (s) return s;
    ++*added;
    rigid_row(g, best_node, best_component, row);
    for (int r = 0; r < 6; r++)
      for (int c = 0; c < 6; c++) gram[6 * r + c] += row[r] * row[c];
  }
  return VOX_OK;
}

static void set_nan(double *a, size_t n) {
  if (a)
    for (size_t i = 0; i < n; i++) a[i] = NAN;
}

vox_status vox_bone_elements(vox_context *ctx, const vox_model *model, int64_t **elements,
                             size_t *n) {
  const vox_grid *g = &model->grid;
  const int64_t per_layer = g->nx * g->ny, layers = g->nz;
  *elements = NULL;
  *n = 0;
  /* counted per layer, then listed from each layer's offset, both in
   * parallel over the layers: the same list as one pass in element order */
  size_t *start = calloc((size_t)layers + 1, sizeof *start);
  if (!start) return out_of_memory(ctx);
#pragma omp parallel for schedule(static)
  for (int64_t k = 0; k < layers; k++) {
    size_t count = 0;
    for (int64_t e = k * per_layer; e < (k + 1) * per_layer; e++) count += model->label[e] != 0;
    start[k + 1] = count;
  }
  for (int64_t k = 0; k < layers; k++) start[k + 1] += start[k];
  const size_t count = start[layers];
  int64_t *list = count ? malloc(count * sizeof *list) : NULL;
  if (count && !list) {
    free(start);
    return out_of_memory(ctx);
  }
#pragma omp parallel for schedule(static)
  for (int64_t k = 0; k < layers; k++) { /* no voxel to list when count is 0 */
    size_t at = start[k];
    for (int64_t e = k * per_layer; e < (k + 1) * per_layer; e++)
      if (model->label[e]) list[at++] = e;
  }
  free(start);
  *elements = list;
  *n = count;
  return VOX_OK;
}

/* Whether `elements` (n entries) is the model's non-empty voxels in
 * element order: increasing, each non-empty, as many as there are. */
static int is_bone_list(const vox_model *m, const int64_t *elements, size_t n) {
  const int64_t ne = vox_grid_elements(&m->grid), count_n = (int64_t)n;
  int64_t count = 0, bad = 0;
  /* both in parallel: n increasing non-empty voxels, as many as there are,
   * are those voxels */
#pragma omp parallel for schedule(static) reduction(+ : count)
  for (int64_t e = 0; e < ne; e++) count += m->label[e] != 0;
  if (count != count_n) return 0;
#pragma omp parallel for schedule(static) reduction(| : bad)
  for (int64_t k = 0; k < count_n; k++)
    bad |= elements[k] < (k ? elements[k - 1] + 1 : 0) || elements[k] >= ne ||
           !m->label[elements[k]];
  return !bad;
}

vox_status vox_analysis_fields(vox_context *ctx, const vox_model *model, const double *moduli,
                               const double *u, double *reaction, vox_element_fields *fields,
                               const int64_t *share_dofs, size_t n_share, double *share) {
  const vox_grid *g = &model->grid;
  const int64_t ne = vox_grid_elements(g), nn = vox_grid_nodes(g);
  double nu = 0, ke[24 * 24], d[36], b[6 * 24];
  vox_status s = vox_model_poisson_ratio(ctx, model, &nu);
  if (s) return s;
  if (vox_hex8_elasticity(1.0, nu, g->voxel_size, ke) || vox_isotropic_elasticity_matrix(1.0, nu, d))
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "Poisson ratio %g out of (-1, 0.5)", nu);
  vox_hex8_strain_at_centre(g->voxel_size, b);
  /* transposed: the products below run along their columns */
  double ke_t[24 * 24], b_t[24 * 6];
  for (int r = 0; r < 24; r++)
    for (int c = 0; c < 24; c++) ke_t[c * 24 + r] = ke[r * 24 + c];
  for (int v = 0; v < 6; v++)
    for (int c = 0; c < 24; c++) b_t[c * 6 + v] = b[v * 24 + c];
  double modulus[256] = {0};
  for (int i = 0; i < model->n_materials; i++)
    modulus[model->materials[i].label] = model->materials[i].youngs_modulus;
  const double volume = g->voxel_size[0] * g->voxel_size[1] * g->voxel_size[2];

  /* which dofs are constrained, and which belong to the loaded face (2) */
  uint8_t *flag = calloc((size_t)(3 * nn), 1);
  if (!flag) return out_of_memory(ctx);
  for (size_t i = 0; i < model->n_constraints; i++)
    flag[3 * model->constraints[i].node + model->constraints[i].component] |= 1;
  for (size_t i = 0; i < n_share; i++)
    if (share_dofs[i] >= 0 && share_dofs[i] < 3 * nn) flag[share_dofs[i]] |= 2;
  if (reaction) {
    /* zeroed in parallel: 340 MB on a clinical model, first touched here */
    const int64_t n_dofs = 3 * nn;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n_dofs; i++) reaction[i] = 0;
  }
  vox_element_fields *f = fields;
  if (f && (unsigned)f->sed_point > VOX_SED_ELEMENT_MEAN) {
    free(flag);
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "unknown strain-energy density point %d",
                     (int)f->sed_point);
  }
  const int64_t *list = f ? f->elements : NULL;
  if (list && !is_bone_list(model, list, f->n_elements)) {
    free(flag);
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "the element list of the fields is not the model's non-empty voxels");
  }
  const int64_t n_loop = list ? (int64_t)f->n_elements : ne;

  /* One pass over the elements (or the listed bone elements), in parallel:
   * each element writes its own fields (entry t); the reactions are summed
   * into the constrained dofs only (the plates: few, so atomic adds cost
   * little), the shares per thread. In chunks taken as threads come free:
   * voxfe-analyze's writer thread shares a core meanwhile, and a static
   * slab on that core held the whole pass back. */
  double share_sum[256] = {0};
  const int threads = vox_context_threads(ctx);
#pragma omp parallel for num_threads(threads > 0 ? threads : omp_get_max_threads()) \
    schedule(dynamic, 4096) reduction(+ : share_sum[:256])
  for (int64_t t = 0; t < n_loop; t++) {
    const int64_t e = list ? list[t] : t;
    const int64_t i = e % g->nx, j = (e / g->nx) % g->ny, k = e / (g->nx * g->ny);
    const uint8_t label = model->label[e];
    if (!label) {
      /* the NaNs of empty voxels here, in parallel: a separate pass over
       * the box took longer than the bone's own fields */
      if (f) {
        set_nan(f->strain ? f->strain + 6 * t : NULL, 6);
        set_nan(f->stress ? f->stress + 6 * t : NULL, 6);
        set_nan(f->sed ? f->sed + t : NULL, 1);
        set_nan(f->von_mises ? f->von_mises + t : NULL, 1);
        set_nan(f->effective_strain ? f->effective_strain + t : NULL, 1);
      }
      continue;
    }
    const double E = moduli ? moduli[e] : modulus[label];
    int64_t dof[24];
    double ue[24], fe[24];
    for (int a = 0; a < 8; a++) {
      const int64_t n = node_index(g, i + vox_hex8_corner[a][0], j + vox_hex8_corner[a][1],
                                   k + vox_hex8_corner[a][2]);
      for (int c = 0; c < 3; c++) dof[3 * a + c] = 3 * n + c, ue[3 * a + c] = u[3 * n + c];
    }
    /* K_e u_e (three quarters of an element's arithmetic) only where it
     * is used: on the elements at a constrained or loaded-face dof (the
     * reactions, the shares), and for the element-mean SED; the centre's
     * SED needs only the strain and stress */
    uint8_t flagged = 0;
    for (int r = 0; r < 24; r++) flagged |= flag[dof[r]];
    const int mean_sed = f && f->sed_point == VOX_SED_ELEMENT_MEAN;
    double energy = 0;
    if (flagged || mean_sed) {
      /* column by column, all 24 rows at once (vector code), each row's
       * sum still in the order c = 0..23: the same numbers as row by row,
       * in a third of the time */
      double ku[24] = {0};
      for (int c = 0; c < 24; c++)
        for (int r = 0; r < 24; r++) ku[r] += ke_t[c * 24 + r] * ue[c];
      for (int r = 0; r < 24; r++) {
        fe[r] = E * ku[r];
        energy += ue[r] * fe[r];
      }
      for (int r = 0; flagged && r < 24; r++) {
        const uint8_t fl = flag[dof[r]];
        if (reaction && (fl & 1)) {
#pragma omp atomic
          reaction[dof[r]] += fe[r];
        }
        if (fl & 2) share_sum[label] += fe[r];
      }
    }
    if (!f) continue;
    double eps[6] = {0}, sig[6];
    for (int c = 0; c < 24; c++) /* as above: each sum in the order c = 0..23 */
      for (int v = 0; v < 6; v++) eps[v] += b_t[c * 6 + v] * ue[c];
    for (int v = 0; v < 6; v++) {
      double sum = 0;
      for (int w = 0; w < 6; w++) sum += d[v * 6 + w] * eps[w];
      sig[v] = E * sum;
    }
    double sed = 0.5 * energy / volume;
    if (f->sed_point == VOX_SED_CENTRE) {
      sed = 0;
      for (int v = 0; v < 6; v++) sed += sig[v] * eps[v];
      sed *= 0.5;
    }
    if (f->strain) memcpy(f->strain + 6 * t, eps, sizeof eps);
    if (f->stress) memcpy(f->stress + 6 * t, sig, sizeof sig);
    if (f->sed) f->sed[t] = sed;
    if (f->von_mises) {
      const double dxy = sig[0] - sig[1], dyz = sig[1] - sig[2], dzx = sig[2] - sig[0];
      f->von_mises[t] = sqrt(0.5 * (dxy * dxy + dyz * dyz + dzx * dzx) +
                             3 * (sig[3] * sig[3] + sig[4] * sig[4] + sig[5] * sig[5]));
    }
    if (f->effective_strain) f->effective_strain[t] = sqrt(2 * fmax(sed, 0) / E);
  }
  if (share) memcpy(share, share_sum, sizeof share_sum);
  free(flag);
  return VOX_OK;
}

void vox_analysis_options_default(vox_analysis_options *o) {
  *o = (vox_analysis_options){.compression = 1, .axis = 2, .strain = -0.01,
                              .critical_strain = 0.007, .critical_volume = 0.02,
                              .sed_point = VOX_SED_CENTRE};
}

void vox_loaded_face_dofs(const vox_model *model, int axis, int64_t *dofs, size_t *n) {
  const vox_grid *g = &model->grid;
  const int64_t n_axis[3] = {g->nx, g->ny, g->nz};
  *n = 0;
  if (axis < 0 || axis > 2) return;
  for (size_t i = 0; i < model->n_constraints; i++) {
    const vox_constraint *c = &model->constraints[i];
    const int64_t ijk[3] = {c->node % (g->nx + 1), (c->node / (g->nx + 1)) % (g->ny + 1),
                            c->node / ((g->nx + 1) * (g->ny + 1))};
    if (c->component == axis && ijk[axis] == n_axis[axis]) dofs[(*n)++] = 3 * c->node + axis;
  }
}

vox_status vox_analysis_summarize(vox_context *ctx, const vox_model *model,
                                  const vox_analysis_options *o, const double *u,
                                  const double *reaction, const int64_t *face_dofs,
                                  size_t n_face, const double *effective_strain, size_t n_bone,
                                  const double *share, vox_analysis_summary *out) {
  const vox_grid *g = &model->grid;
  if (o->compression && (o->axis < 0 || o->axis > 2 || !isfinite(o->strain)))
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "bad compression test (axis %d, strain %g)",
                     o->axis, o->strain);
  out->compliance = 0;
  for (size_t i = 0; i < model->n_loads; i++)
    out->compliance +=
        model->loads[i].value * u[3 * model->loads[i].node + model->loads[i].component];
  /* the reactions are zero off the constrained dofs: their sum over each
   * constrained dof once (a byte per dof, touched only there) */
  for (int c = 0; c < 3; c++) out->support_reaction[c] = 0;
  uint8_t *seen = calloc((size_t)(3 * vox_grid_nodes(g)), 1);
  if (!seen) return out_of_memory(ctx);
  for (size_t i = 0; i < model->n_constraints; i++) {
    const size_t dof = 3 * (size_t)model->constraints[i].node + model->constraints[i].component;
    if (!seen[dof]) out->support_reaction[dof % 3] += reaction[dof];
    seen[dof] = 1;
  }
  free(seen);
  double force = 0;
  for (size_t i = 0; i < n_face; i++) force += reaction[face_dofs[i]];
  out->applied_displacement = out->reaction_force = out->stiffness = NAN;
  out->apparent_modulus = out->failure_load = out->box_length = out->box_area = NAN;
  for (int l = 0; l < 256; l++) out->load_share[l] = NAN;
  if (!o->compression) return VOX_OK;
  const int64_t n_axis[3] = {g->nx, g->ny, g->nz};
  const int a = o->axis, a1 = a == 0 ? 1 : 0, a2 = a == 2 ? 1 : 2;
  out->box_area = (double)n_axis[a1] * g->voxel_size[a1] * (double)n_axis[a2] * g->voxel_size[a2];
  out->box_length = (double)n_axis[a] * g->voxel_size[a];
  out->applied_displacement = o->strain * out->box_length;
  out->reaction_force = force;
  out->stiffness = force / out->applied_displacement;
  out->apparent_modulus = (force / out->box_area) / o->strain;
  if (effective_strain && n_bone)
    out->failure_load = vox_pistoia_failure_load(effective_strain, n_bone, force,
                                                 o->critical_strain, o->critical_volume);
  if (share && force != 0)
    for (int l = 0; l < 256; l++) out->load_share[l] = share[l] / force;
  return VOX_OK;
}
