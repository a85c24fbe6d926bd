/* SPDX-License-Identifier: BSD-3-Clause */
/* vox_write_inp: a CalculiX / Abaqus input deck of the kept voxels as C3D8
 * bricks, with materials, supports, and one static step per load case.
 *
 * What is kept is what vox_write_vtu keeps: density >= threshold, or, without
 * density, a non-zero label (and never label 0, which has no material). Each
 * kept element gets its material's FULL Young's modulus, not a SIMP-scaled
 * one: a thresholded design is analysed as solid/void. This is the honest
 * reading of a thresholded design (what would be manufactured); a grey
 * design's compliance in voxfe and in the deck therefore differ. Without
 * density the deck is the problem vox_solve_elasticity solves with
 * use_density = 0, up to the solvers' precision.
 *
 * Node order: C3D8's local nodes 1-8 are (-1,-1,-1) (1,-1,-1) (1,1,-1)
 * (-1,1,-1) (-1,-1,1) (1,-1,1) (1,1,1) (-1,1,1) in the element's (xi, eta,
 * zeta), which is VTK_HEXAHEDRON's order and so voxfe's vox_hex8_corner with
 * xi, eta, zeta along x, y, z: the corners are written in that table's order.
 *
 * Numbering: nodes 1.. in grid node order (only those of kept elements),
 * elements 1.. grouped by label (ascending), grid element order within a
 * label, so the file does not depend on threads or on the material table's
 * order. The file is written to "<path>.tmp.XXXXXX" beside it and renamed
 * over `path` once complete and fsync'ed; on failure the temporary file is
 * removed and `path` is untouched. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "voxfe/output_target.h"
#include "voxfe/element.h"
#include "voxfe/inp.h"
#include "temp_file.h"
#include "voxfe/temp_files.h"

enum { IDS_PER_LINE = 8 }; /* node set data lines: well under the 132 columns CalculiX reads */
enum { DECK_NAME = 81 };   /* CalculiX takes names of up to 80 characters */

typedef char deck_name[DECK_NAME];

typedef struct deck {
  const vox_model *model;
  double threshold;
  int64_t n_voxels_kept_by_rule; /* density/label rule, label 0 included */
  int64_t n_elements;
  int64_t *elements;        /* grid element of each written element, grouped by label */
  int64_t count_of_label[256];
  int64_t n_nodes;
  int64_t *id_of_node;      /* grid node -> 1-based deck node id, 0 where not used */
  size_t n_constraints_dropped;
  size_t n_loads_dropped;
  vox_load *loads;          /* kept loads sorted by (case, node, component), summed */
  size_t n_loads;
  /* The names in the deck: of each label's element set and material (the
   * material's own name, else LABEL_<l> and MAT_<l>), and of the node set of
   * each named support and load of the problem file. */
  deck_name elset[256], material[256];
  deck_name *support_set;   /* model->n_support_names */
  deck_name *load_set;      /* model->n_load_names */
  deck_name *used;          /* every name given so far, to keep them distinct */
  size_t n_used;
} deck;

static void deck_free(deck *d) {
  free(d->elements);
  free(d->id_of_node);
  free(d->loads);
  free(d->support_set);
  free(d->load_set);
  free(d->used);
}

static int name_used(const deck *d, const char *name) {
  for (size_t i = 0; i < d->n_used; i++)
    if (strcasecmp(d->used[i], name) == 0) return 1;
  return 0;
}

/* `user` (a name from the problem file) as a name CalculiX and Abaqus read
 * as it is: letters, digits and _ (others become _), starting with a letter
 * (else `prefix` goes first), at most 80 characters, and distinct (case
 * aside, as both readers ignore case) from the names given so far (else
 * _2, _3, ... goes after it). Names are compared case-blind, so that a
 * support "top" and a load "TOP" get two sets. */
static void make_name(deck *d, const char *user, const char *prefix, deck_name out) {
  char base[DECK_NAME - 12]; /* room for _<k> */
  size_t n = 0;
  if (!((user[0] >= 'a' && user[0] <= 'z') || (user[0] >= 'A' && user[0] <= 'Z')))
    n = (size_t)snprintf(base, sizeof base, "%s", prefix);
  for (const unsigned char *c = (const unsigned char *)user; *c && n + 1 < sizeof base; c++)
    base[n++] = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9')
                    ? (char)*c
                    : '_';
  base[n] = '\0';
  snprintf(out, DECK_NAME, "%s", base);
  for (int k = 2; name_used(d, out); k++) snprintf(out, DECK_NAME, "%s_%d", base, k);
  memcpy(d->used[d->n_used++], out, DECK_NAME);
}

/* The deck's names: the fixed ones first (NALL, SUPPORTS, LOADED_<case>),
 * then the materials' in label order, then the supports' and loads'. */
static vox_status make_names(vox_context *ctx, deck *d) {
  const vox_model *m = d->model;
  const size_t most = 2 + (size_t)(m->n_load_cases > 0 ? m->n_load_cases : 0) + 2 * 255 +
                      (size_t)m->n_support_names + (size_t)m->n_load_names;
  d->used = malloc(most * sizeof *d->used);
  d->support_set = malloc(((size_t)m->n_support_names + 1) * sizeof *d->support_set);
  d->load_set = malloc(((size_t)m->n_load_names + 1) * sizeof *d->load_set);
  if (!d->used || !d->support_set || !d->load_set)
    return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
  deck_name fixed;
  make_name(d, "NALL", "", fixed);
  make_name(d, "SUPPORTS", "", fixed);
  for (int c = 0; c < m->n_load_cases; c++) {
    snprintf(fixed, sizeof fixed, "LOADED_%d", c + 1);
    make_name(d, fixed, "", fixed);
  }
  for (int l = 1; l < 256; l++) {
    if (!d->count_of_label[l]) continue;
    const vox_material *mat = vox_model_material(m, (uint8_t)l);
    char name[VOX_NAME_MAX + 1] = "";
    if (mat) snprintf(name, sizeof name, "%.*s", VOX_NAME_MAX, mat->name);
    if (name[0]) {
      make_name(d, name, "M_", d->elset[l]);
      memcpy(d->material[l], d->elset[l], DECK_NAME); /* materials have names of their own */
    } else {
      snprintf(name, sizeof name, "LABEL_%d", l);
      make_name(d, name, "", d->elset[l]);
      snprintf(d->material[l], DECK_NAME, "MAT_%d", l);
    }
  }
  for (int i = 0; i < m->n_support_names; i++) {
    char name[VOX_NAME_MAX + 1];
    snprintf(name, sizeof name, "%.*s", VOX_NAME_MAX, m->support_names[i]);
    make_name(d, name, "S_", d->support_set[i]);
  }
  for (int i = 0; i < m->n_load_names; i++) {
    char name[VOX_NAME_MAX + 1];
    snprintf(name, sizeof name, "%.*s", VOX_NAME_MAX, m->load_names[i]);
    make_name(d, name, "L_", d->load_set[i]);
  }
  return VOX_OK;
}

static int kept(const vox_model *model, int64_t e, double threshold) {
  return model->density ? model->density[e] >= threshold : model->label[e] != 0;
}

static int compare_loads(const void *pa, const void *pb) {
  const vox_load *a = pa, *b = pb;
  if (a->load_case != b->load_case) return a->load_case < b->load_case ? -1 : 1;
  if (a->node != b->node) return a->node < b->node ? -1 : 1;
  return (a->component > b->component) - (a->component < b->component);
}

static vox_status no_element_kept(vox_context *ctx, const char *path, const deck *d) {
  const vox_model *model = d->model;
  if (!model->density)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "%s: no element to write: every voxel has label 0", path);
  if (d->n_voxels_kept_by_rule > 0)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "%s: no element to write: the voxels whose density reaches the threshold %g "
                     "all have label 0 (no material)",
                     path, d->threshold);
  int64_t ne = vox_grid_elements(&model->grid);
  double highest = -INFINITY;
  for (int64_t e = 0; e < ne; e++)
    if (model->density[e] > highest) highest = model->density[e];
  return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                   "%s: no element to write: no density reaches the threshold %g (the highest is %g)",
                   path, d->threshold, highest);
}

static vox_status build_deck(vox_context *ctx, const char *path, const vox_model *model,
                             double threshold, deck *d) {
  const vox_grid *g = &model->grid;
  const int64_t ne = vox_grid_elements(g), nn = vox_grid_nodes(g);
  const int64_t px = g->nx + 1, py = g->ny + 1;
  memset(d, 0, sizeof *d);
  /* The deck is a static stress analysis: its *BOUNDARY and *CLOAD would
   * read a heat model's temperatures and heat flows as displacements and
   * forces. */
  if (model->physics == VOX_PHYSICS_HEAT)
    return vox_error(ctx, VOX_ERR_UNSUPPORTED,
                     "%s: the model is a heat-conduction model; .inp export writes "
                     "elasticity decks only",
                     path);
  d->model = model;
  d->threshold = threshold;
  for (int64_t e = 0; e < ne; e++) {
    if (!kept(model, e, threshold)) continue;
    d->n_voxels_kept_by_rule++;
    if (model->label[e]) d->count_of_label[model->label[e]]++;
  }
  for (int l = 1; l < 256; l++) d->n_elements += d->count_of_label[l];
  if (d->n_elements == 0) return no_element_kept(ctx, path, d);
  if (d->n_elements > INT32_MAX)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "%s: %lld elements are more than CalculiX numbers (2^31 - 1)", path,
                     (long long)d->n_elements);

  d->elements = malloc((size_t)d->n_elements * sizeof *d->elements);
  d->id_of_node = calloc((size_t)nn, sizeof *d->id_of_node);
  if (!d->elements || !d->id_of_node) goto no_memory;
  /* A counting sort by label keeps grid order within each label. */
  int64_t next[256];
  next[0] = 0;
  for (int l = 1; l < 256; l++) next[l] = l == 1 ? 0 : next[l - 1] + d->count_of_label[l - 1];
  for (int64_t e = 0; e < ne; e++) {
    if (!model->label[e] || !kept(model, e, threshold)) continue;
    d->elements[next[model->label[e]]++] = e;
    int64_t i = e % g->nx, j = (e / g->nx) % g->ny, k = e / (g->nx * g->ny);
    for (int a = 0; a < 8; a++)
      d->id_of_node[((k + vox_hex8_corner[a][2]) * py + j + vox_hex8_corner[a][1]) * px + i +
                    vox_hex8_corner[a][0]] = 1;
  }
  for (int64_t n = 0; n < nn; n++)
    if (d->id_of_node[n]) d->id_of_node[n] = ++d->n_nodes;
  if (d->n_nodes > INT32_MAX) {
    deck_free(d);
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "%s: %lld nodes are more than CalculiX numbers (2^31 - 1)", path,
                     (long long)d->n_nodes);
  }

  for (size_t c = 0; c < model->n_constraints; c++)
    d->n_constraints_dropped += d->id_of_node[model->constraints[c].node] == 0;
  if (model->n_loads) {
    d->loads = malloc(model->n_loads * sizeof *d->loads);
    if (!d->loads) goto no_memory;
  }
  size_t n = 0;
  for (size_t q = 0; q < model->n_loads; q++) {
    if (d->id_of_node[model->loads[q].node] == 0)
      d->n_loads_dropped++;
    else
      d->loads[n++] = model->loads[q];
  }
  if (n > 1) qsort(d->loads, n, sizeof *d->loads, compare_loads);
  /* Sum the forces on the same node, component and case: *CLOAD would keep
   * only the last one. */
  d->n_loads = 0;
  for (size_t q = 0; q < n; q++) {
    if (d->n_loads > 0 && compare_loads(&d->loads[d->n_loads - 1], &d->loads[q]) == 0)
      d->loads[d->n_loads - 1].value += d->loads[q].value;
    else
      d->loads[d->n_loads++] = d->loads[q];
  }
  vox_status status = make_names(ctx, d);
  if (status != VOX_OK) deck_free(d);
  return status;

no_memory:
  deck_free(d);
  return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
}

/* --- the temporary file ----------------------------------------------------- */

/* --- the deck ----------------------------------------------------------------- */

/* Text for a one-line comment: control characters (a newline would end the
 * comment and start a keyword line) become spaces. */
static void put_comment_text(FILE *f, const char *text) {
  for (const unsigned char *s = (const unsigned char *)text; *s; s++)
    fputc(*s < 0x20 || *s == 0x7f ? ' ' : *s, f);
}

static void put_node_set(FILE *f, const char *name, const int64_t *ids, size_t n) {
  fprintf(f, "*NSET, NSET=%s\n", name);
  for (size_t q = 0; q < n; q++)
    fprintf(f, "%lld%s", (long long)ids[q], q + 1 == n || (q + 1) % IDS_PER_LINE == 0 ? "\n" : ", ");
}

static int compare_ids(const void *pa, const void *pb) {
  int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;
  return (a > b) - (a < b);
}

/* Sorts the n ids and drops repeats; returns how many are left. */
static size_t unique_ids(int64_t *ids, size_t n) {
  qsort(ids, n, sizeof *ids, compare_ids);
  size_t unique = 0;
  for (size_t q = 0; q < n; q++)
    if (unique == 0 || ids[unique - 1] != ids[q]) ids[unique++] = ids[q];
  return unique;
}

static void write_deck(FILE *f, const deck *d, int64_t *scratch) {
  const vox_model *model = d->model;
  const vox_grid *g = &model->grid;
  const int64_t nn = vox_grid_nodes(g), ne = vox_grid_elements(g);
  const int64_t px = g->nx + 1, py = g->ny + 1;

  fputs("*HEADING\n", f);
  if (model->title && *model->title) {
    /* One data line: not starting with '*' (a keyword or comment) and short
     * of the 132 columns CalculiX reads. */
    char heading[121];
    snprintf(heading, sizeof heading, "%s%s", model->title[0] == '*' ? " " : "", model->title);
    put_comment_text(f, heading);
  } else {
    fputs("voxfe model", f);
  }
  fprintf(f, "\n** Written by voxfe %s. Units: mm, N, MPa.\n", vox_version());
  fprintf(f, "** Grid %lldx%lldx%lld voxels of %.17g x %.17g x %.17g mm, origin (%.17g, %.17g, %.17g).\n",
          (long long)g->nx, (long long)g->ny, (long long)g->nz, g->voxel_size[0], g->voxel_size[1],
          g->voxel_size[2], g->origin[0], g->origin[1], g->origin[2]);
  if (model->density)
    fprintf(f, "** Kept: %lld of %lld voxels, those whose density is >= %.17g and whose label is not 0.\n"
               "** Each kept element has its material's full Young's modulus, whatever its density:\n"
               "** the thresholded design is analysed as solid/void, not with SIMP-scaled moduli.\n",
            (long long)d->n_elements, (long long)ne, d->threshold);
  else
    fprintf(f, "** Kept: %lld of %lld voxels, those whose label is not 0, each with its material's\n"
               "** full Young's modulus.\n",
            (long long)d->n_elements, (long long)ne);
  if (d->n_voxels_kept_by_rule > d->n_elements)
    fprintf(f, "** %lld voxels reach the threshold but have label 0 (no material) and are left out.\n",
            (long long)(d->n_voxels_kept_by_rule - d->n_elements));
  fputs("** C3D8: exact trilinear bricks (2x2x2 Gauss points), as in voxfe.\n", f);

  fprintf(f, "*NODE, NSET=NALL\n");
  for (int64_t n = 0; n < nn; n++) {
    if (!d->id_of_node[n]) continue;
    int64_t i = n % px, j = (n / px) % py, k = n / (px * py);
    fprintf(f, "%lld, %.17g, %.17g, %.17g\n", (long long)d->id_of_node[n],
            g->origin[0] + (double)i * g->voxel_size[0], g->origin[1] + (double)j * g->voxel_size[1],
            g->origin[2] + (double)k * g->voxel_size[2]);
  }

  int64_t id = 0;
  for (int l = 1; l < 256; l++) {
    if (!d->count_of_label[l]) continue;
    const vox_material *mat = vox_model_material(model, (uint8_t)l);
    fprintf(f, "** Material of label %d: ", l);
    put_comment_text(f, mat->name);
    fprintf(f, "\n*ELEMENT, TYPE=C3D8, ELSET=%s\n", d->elset[l]);
    for (int64_t q = id; q < id + d->count_of_label[l]; q++) {
      int64_t e = d->elements[q];
      int64_t i = e % g->nx, j = (e / g->nx) % g->ny, k = e / (g->nx * g->ny);
      fprintf(f, "%lld", (long long)(q + 1));
      for (int a = 0; a < 8; a++) {
        const int *c = vox_hex8_corner[a];
        fprintf(f, ", %lld", (long long)d->id_of_node[((k + c[2]) * py + j + c[1]) * px + i + c[0]]);
      }
      fputc('\n', f);
    }
    id += d->count_of_label[l];
  }
  for (int l = 1; l < 256; l++) {
    if (!d->count_of_label[l]) continue;
    const vox_material *mat = vox_model_material(model, (uint8_t)l);
    fprintf(f, "*MATERIAL, NAME=%s\n*ELASTIC\n%.17g, %.17g\n", d->material[l],
            mat->youngs_modulus, mat->poisson_ratio);
    fprintf(f, "*SOLID SECTION, ELSET=%s, MATERIAL=%s\n", d->elset[l], d->material[l]);
  }

  /* Supports: the node set for the reaction output, then the constraints. */
  size_t n_supports = 0;
  for (size_t c = 0; c < model->n_constraints; c++) {
    int64_t node = d->id_of_node[model->constraints[c].node];
    if (node) scratch[n_supports++] = node;
  }
  if (d->n_constraints_dropped)
    fprintf(f, "** %zu of %zu constraints are on nodes of no kept element and are left out.\n",
            d->n_constraints_dropped, model->n_constraints);
  if (n_supports) {
    /* Ascending and unique, whatever the order of the constraint list. */
    size_t unique = 0;
    qsort(scratch, n_supports, sizeof *scratch, compare_ids);
    for (size_t q = 0; q < n_supports; q++)
      if (unique == 0 || scratch[unique - 1] != scratch[q]) scratch[unique++] = scratch[q];
    put_node_set(f, "SUPPORTS", scratch, unique);
    /* each named support's nodes, and its constraints under its name */
    for (int k = 1; k <= model->n_support_names; k++) {
      size_t n = 0;
      for (size_t c = 0; c < model->n_constraints; c++)
        if (model->constraints[c].name_index == k && d->id_of_node[model->constraints[c].node])
          scratch[n++] = d->id_of_node[model->constraints[c].node];
      if (n) put_node_set(f, d->support_set[k - 1], scratch, unique_ids(scratch, n));
    }
    for (int k = 0; k <= model->n_support_names; k++) {
      int started = 0;
      for (size_t c = 0; c < model->n_constraints; c++) {
        const vox_constraint *bc = &model->constraints[c];
        int64_t node = d->id_of_node[bc->node];
        if (!node || bc->name_index != k) continue;
        if (!started && k > 0) {
          fputs("** Support ", f);
          put_comment_text(f, model->support_names[k - 1]);
          fputc('\n', f);
        }
        if (!started) fputs("*BOUNDARY\n", f);
        started = 1;
        fprintf(f, "%lld, %d, %d, %.17g\n", (long long)node, bc->component + 1, bc->component + 1,
                bc->value);
      }
    }
  }
  /* each named load's nodes (the forces themselves go out summed per node
   * and component, in the steps) */
  for (int k = 1; k <= model->n_load_names; k++) {
    size_t n = 0;
    int load_case = 0;
    for (size_t q = 0; q < model->n_loads; q++)
      if (model->loads[q].name_index == k && d->id_of_node[model->loads[q].node]) {
        scratch[n++] = d->id_of_node[model->loads[q].node];
        load_case = model->loads[q].load_case;
      }
    if (!n) continue;
    fputs("** Load ", f);
    put_comment_text(f, model->load_names[k - 1]);
    fprintf(f, " (load case %d)\n", load_case + 1);
    put_node_set(f, d->load_set[k - 1], scratch, unique_ids(scratch, n));
  }

  if (d->n_loads_dropped)
    fprintf(f, "** %zu of %zu nodal forces are on nodes of no kept element and are left out.\n",
            d->n_loads_dropped, model->n_loads);
  size_t first = 0;
  for (int lc = 0; lc < model->n_load_cases; lc++) {
    size_t end = first;
    while (end < d->n_loads && d->loads[end].load_case == lc) end++;
    fprintf(f, "** Load case %d: ", lc + 1);
    put_comment_text(f, model->load_case_names[lc]);
    fputc('\n', f);
    size_t n_loaded = 0;
    for (size_t q = first; q < end; q++) {
      int64_t node = d->id_of_node[d->loads[q].node];
      if (n_loaded == 0 || scratch[n_loaded - 1] != node) scratch[n_loaded++] = node;
    }
    char name[32];
    snprintf(name, sizeof name, "LOADED_%d", lc + 1);
    if (n_loaded) put_node_set(f, name, scratch, n_loaded);
    fputs("*STEP\n*STATIC\n", f);
    /* OP=NEW: forces of the earlier steps would carry over otherwise. */
    if (end > first || lc > 0) {
      fputs("*CLOAD, OP=NEW\n", f);
      for (size_t q = first; q < end; q++)
        fprintf(f, "%lld, %d, %.17g\n", (long long)d->id_of_node[d->loads[q].node],
                d->loads[q].component + 1, d->loads[q].value);
    }
    fputs("*NODE FILE\nU\n*EL FILE\nS\n", f);
    if (n_loaded) fprintf(f, "*NODE PRINT, NSET=%s\nU\n", name);
    if (n_supports) fputs("*NODE PRINT, NSET=SUPPORTS, TOTALS=ONLY\nRF\n", f);
    fputs("*END STEP\n", f);
    first = end;
  }
}

static vox_status check_model(vox_context *ctx, const char *path, const vox_model *model,
                              double threshold) {
  if (!path || !*path) return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "no output path given");
  if (!model || !model->label)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "%s: the model has no labels", path);
  vox_status status = vox_model_validate(ctx, model);
  if (status != VOX_OK) {
    /* Put the path in front of the validator's message. */
    char message[512];
    snprintf(message, sizeof message, "%s", vox_context_message(ctx));
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "%s: %s", path, message);
  }
  for (int a = 0; a < 3; a++)
    if (!(model->grid.voxel_size[a] > 0) || !isfinite(model->grid.voxel_size[a]) ||
        !isfinite(model->grid.origin[a]))
      return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                       "%s: voxel size must be positive and the origin finite", path);
  if (model->n_load_cases > 0 && !model->load_case_names)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "%s: the load cases have no names", path);
  if (model->density && isnan(threshold))
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "%s: the density threshold is not a number",
                     path);
  return VOX_OK;
}

vox_status vox_write_inp(vox_context *ctx, const char *path, const vox_model *model,
                         double threshold) {
  vox_status status = check_model(ctx, path, model, threshold);
  if (status != VOX_OK) return status;
  deck d;
  status = build_deck(ctx, path, model, threshold, &d);
  if (status != VOX_OK) return status;

  /* ids of constraints' nodes, or of loads' (summed or not) */
  size_t scratch_size = model->n_constraints > model->n_loads ? model->n_constraints : model->n_loads;
  int64_t *scratch = malloc((scratch_size ? scratch_size : 1) * sizeof *scratch);
  if (!scratch) {
    deck_free(&d);
    return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
  }

  char *tmp = NULL;
  int fd = vox_open_temp(path, &tmp);
  if (fd < 0) {
    status = vox_error(ctx, VOX_ERR_IO, "%s: cannot create a temporary file beside it: %s", path,
                       strerror(errno));
    goto done;
  }
  FILE *f = fdopen(fd, "w");
  if (!f) {
    status = vox_error(ctx, VOX_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
    close(fd);
    unlink(tmp);
    goto done;
  }
  setvbuf(f, NULL, _IOFBF, 1 << 20);
  errno = 0;
  write_deck(f, &d, scratch);
  /* stdio keeps the first error in ferror; fflush reports late ones, fsync
   * those of the file system (NFS, quota) and makes the rename safe. */
  int failed = fflush(f) != 0 || ferror(f);
  int saved = errno ? errno : EIO;
  if (!failed && fsync(fileno(f)) != 0) failed = 1, saved = errno;
  if (fclose(f) != 0 && !failed) failed = 1, saved = errno;
  if (!failed && (saved = vox_output_place(tmp, path)) != 0) failed = 1;
  if (failed) {
    unlink(tmp); /* nothing more to do if this fails */
    status = vox_error(ctx, VOX_ERR_IO, "%s: cannot write: %s", path, strerror(saved));
  }

done:
  if (tmp) vox_temp_unregister(tmp);
  free(tmp);
  free(scratch);
  deck_free(&d);
  return status;
}
