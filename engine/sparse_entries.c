/* SPDX-License-Identifier: BSD-3-Clause */
/* The prescribed values and loads as distinct system dofs (sparse_entries.h).
 * The lists come mostly in node order (the compression tests, files
 * written by node); what is out of order is sorted, the position in the
 * list breaking ties, so that merging keeps the order a vector written
 * entry by entry would show. */
#include "sparse_entries.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

typedef struct raw_entry {
  size_t dof, order;
  double value;
} raw_entry;

static int by_dof_then_order(const void *pa, const void *pb) {
  const raw_entry *a = pa, *b = pb;
  if (a->dof != b->dof) return a->dof < b->dof ? -1 : 1;
  return a->order < b->order ? -1 : a->order > b->order;
}

/* raw in dof order (then list order): the ordered prefix as it is, the
 * rest sorted and merged in (a compression test's pin comes after its two
 * plates, so most of a list is in order already and need not be sorted).
 * Returns raw or its sorted copy (raw then freed), NULL without memory. */
static raw_entry *sorted(raw_entry *raw, size_t n) {
  size_t prefix = n ? 1 : 0;
  while (prefix < n && by_dof_then_order(&raw[prefix - 1], &raw[prefix]) < 0) prefix++;
  if (prefix == n) return raw;
  qsort(raw + prefix, n - prefix, sizeof *raw, by_dof_then_order);
  raw_entry *merged = malloc(n * sizeof *merged);
  if (!merged) {
    free(raw);
    return NULL;
  }
  for (size_t i = 0, j = prefix, k = 0; k < n; k++)
    merged[k] = j == n || (i < prefix && by_dof_then_order(&raw[i], &raw[j]) < 0) ? raw[i++]
                                                                                  : raw[j++];
  free(raw);
  return merged;
}

static vox_status no_memory(vox_context *ctx, size_t n) {
  return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory (%zu entries)", n);
}

/* `raw` (n entries, in list order) into out: merged by dof, the later
 * value replacing (sum 0) or added to (sum 1) the earlier. Frees raw. */
static vox_status finish(vox_context *ctx, raw_entry *raw, size_t n, int sum,
                         vox_sparse_entries *out) {
  raw = sorted(raw, n);
  if (!raw) return no_memory(ctx, n);
  out->index = malloc((n ? n : 1) * sizeof *out->index);
  out->value = malloc((n ? n : 1) * sizeof *out->value);
  if (!out->index || !out->value) {
    free(raw);
    vox_sparse_entries_free(out);
    return no_memory(ctx, n);
  }
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    if (k > 0 && out->index[k - 1] == raw[i].dof) {
      out->value[k - 1] = sum ? out->value[k - 1] + raw[i].value : raw[i].value;
      continue;
    }
    out->index[k] = raw[i].dof;
    out->value[k++] = raw[i].value;
  }
  out->n = k;
  free(raw);
  return VOX_OK;
}

/* Leaves out the entries whose node is outside the system (marked by
 * dof SIZE_MAX), in order; returns how many are kept. */
static size_t kept(raw_entry *raw, size_t n) {
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (raw[i].dof != SIZE_MAX) raw[k++] = raw[i];
  return k;
}

/* The lists' nodes are found in parallel: on an MPI rank that was sent the
 * hierarchy each is a search in level 0's nodes (a compression test holds
 * the dofs of two faces of the bone: millions on a billion-node bone). */
vox_status vox_sparse_prescribed_entries(vox_context *ctx, const vox_model *model,
                                         const vox_sparse_hierarchy *h, vox_sparse_entries *out) {
  *out = (vox_sparse_entries){0};
  const size_t n = model->n_constraints;
  raw_entry *raw = malloc((n ? n : 1) * sizeof *raw);
  if (!raw) return no_memory(ctx, n);
  const ptrdiff_t count = (ptrdiff_t)n;
#pragma omp parallel for schedule(static)
  for (ptrdiff_t i = 0; i < count; i++) {
    const vox_constraint *c = &model->constraints[i];
    const int32_t m = vox_sparse_node_at(h, c->node);
    raw[i] = (raw_entry){m >= 0 ? 3 * (size_t)m + c->component : SIZE_MAX, (size_t)i, c->value};
  }
  return finish(ctx, raw, kept(raw, n), 0, out);
}

vox_status vox_sparse_load_entries(vox_context *ctx, const vox_model *model,
                                   const vox_sparse_hierarchy *h, int load_case,
                                   vox_sparse_entries *out) {
  *out = (vox_sparse_entries){0};
  const size_t n = model->n_loads;
  raw_entry *raw = malloc((n ? n : 1) * sizeof *raw);
  if (!raw) return no_memory(ctx, n);
  const ptrdiff_t count = (ptrdiff_t)n;
#pragma omp parallel for schedule(static)
  for (ptrdiff_t i = 0; i < count; i++) {
    const vox_load *l = &model->loads[i];
    const int32_t m = l->load_case == load_case ? vox_sparse_node_at(h, l->node) : -1;
    raw[i] = (raw_entry){m >= 0 ? 3 * (size_t)m + l->component : SIZE_MAX, (size_t)i, l->value};
  }
  return finish(ctx, raw, kept(raw, n), 1, out);
}

void vox_sparse_entries_free(vox_sparse_entries *e) {
  free(e->index);
  free(e->value);
  *e = (vox_sparse_entries){0};
}
