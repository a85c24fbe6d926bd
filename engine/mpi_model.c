/* SPDX-License-Identifier: BSD-3-Clause */
/* A model from one rank to every rank (voxfe/mpi.h): the struct, then each
 * of its arrays, in the sizes (and the list capacities) of vox_model_copy. */
#include <stdlib.h>
#include <string.h>

#include "mpi_halo.h"
#include "voxfe/mpi.h"

/* *field (count items of size bytes, on the root) on every rank; a list
 * grown by vox_model_add_* gets the capacity of the next power of two. */
static int broadcast_array(MPI_Comm comm, int root, int is_root, void *field, size_t count,
                           size_t size, int list) {
  void **p = field;
  int present = is_root && *p && count > 0;
  MPI_Bcast(&present, 1, MPI_INT, root, comm);
  if (!is_root) *p = NULL;
  if (!present) return 0;
  size_t capacity = count;
  if (list)
    for (capacity = 1; capacity < count; capacity *= 2) continue;
  int failed = 0;
  if (!is_root && !(*p = malloc(capacity * size))) failed = 1;
  int any = 0;
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, comm);
  if (any) return 1;
  vox_mpi_broadcast_bytes(comm, root, *p, count * size);
  return 0;
}

static int broadcast_text(MPI_Comm comm, int root, int is_root, char **text) {
  size_t n = is_root && *text ? strlen(*text) + 1 : 0;
  MPI_Bcast(&n, sizeof n, MPI_BYTE, root, comm);
  if (!is_root) *text = NULL;
  if (n == 0) return 0;
  return broadcast_array(comm, root, is_root, text, n, 1, 0);
}

vox_status vox_mpi_model_broadcast(vox_context *ctx, MPI_Comm comm, int root, vox_model *model) {
  int rank;
  MPI_Comm_rank(comm, &rank);
  const int is_root = rank == root;
  vox_mpi_broadcast_bytes(comm, root, model, sizeof *model); /* the sizes; the pointers follow */
  const size_t ne = (size_t)vox_grid_elements(&model->grid);
  const size_t nn = (size_t)vox_grid_nodes(&model->grid);
  const size_t cases = (size_t)model->n_load_cases;
  int failed = 0;
  vox_model *m = model;
  failed |= broadcast_array(comm, root, is_root, &m->label, ne, 1, 0);
  failed |= broadcast_array(comm, root, is_root, &m->intensity, ne, sizeof(float), 0);
  failed |= broadcast_array(comm, root, is_root, &m->materials, (size_t)m->n_materials,
                            sizeof *m->materials, 1);
  failed |= broadcast_array(comm, root, is_root, &m->constraints, m->n_constraints,
                            sizeof *m->constraints, 1);
  failed |= broadcast_array(comm, root, is_root, &m->load_case_names, cases,
                            sizeof *m->load_case_names, 0);
  failed |= broadcast_array(comm, root, is_root, &m->loads, m->n_loads, sizeof *m->loads, 1);
  failed |= broadcast_array(comm, root, is_root, &m->support_names, (size_t)m->n_support_names,
                            sizeof *m->support_names, 0);
  failed |= broadcast_array(comm, root, is_root, &m->load_names, (size_t)m->n_load_names,
                            sizeof *m->load_names, 0);
  failed |= broadcast_array(comm, root, is_root, &m->load_case_weights, cases, sizeof(double), 0);
  failed |= broadcast_array(comm, root, is_root, &m->springs, m->n_springs, sizeof *m->springs, 1);
  failed |= broadcast_array(comm, root, is_root, &m->outputs, m->n_outputs, sizeof *m->outputs, 1);
  failed |= broadcast_array(comm, root, is_root, &m->density, ne, sizeof(double), 0);
  failed |= broadcast_array(comm, root, is_root, &m->displacement, cases * nn * 3, sizeof(double),
                            0);
  failed |= broadcast_array(comm, root, is_root, &m->history, m->n_history, sizeof *m->history, 0);
  failed |= broadcast_array(comm, root, is_root, &m->cell_tensor, 36, sizeof(double), 0);
  failed |= broadcast_text(comm, root, is_root, &m->cell_objective);
  failed |= broadcast_text(comm, root, is_root, &m->cell_expression);
  failed |= broadcast_text(comm, root, is_root, &m->cell_symmetry);
  failed |= broadcast_text(comm, root, is_root, &m->history_text);
  failed |= broadcast_text(comm, root, is_root, &m->title);
  failed |= broadcast_array(comm, root, is_root, &m->snapshot_iteration, m->n_snapshots,
                            sizeof *m->snapshot_iteration, 0);
  failed |= broadcast_array(comm, root, is_root, &m->snapshot_density, m->n_snapshots * ne,
                            sizeof(double), 0);
  failed |= broadcast_array(comm, root, is_root, &m->nodal_density, nn, sizeof(double), 0);
  if (failed) {
    if (!is_root) vox_model_free(model);
    return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory for the model on a rank");
  }
  return VOX_OK;
}
