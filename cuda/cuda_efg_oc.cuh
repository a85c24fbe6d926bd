/* SPDX-License-Identifier: BSD-3-Clause */
/* The EFG path's optimality-criteria update and measure of
 * non-discreteness on the GPU (efg_oc.h; private to cuda_efg.cu, whose
 * device holds the tables). */
#ifndef VOXFE_CUDA_EFG_OC_CUH
#define VOXFE_CUDA_EFG_OC_CUH

#include "cuda_backend.cuh"
#include "efg_model.h"
#include "efg_oc.h"

typedef struct vox_cuda_efg_oc {
  size_t n_nodes, n_cells;
  double *dv;            /* n_nodes: the volume sensitivities */
  uint8_t *design;       /* n_nodes: 1 on a design node */
  uint8_t *cell_design;  /* n_cells: 1 on a design cell */
  double *work;          /* 3 n_nodes: the nodes' bases and bounds */
  double *partial;       /* the blocks' partial sums and maxima */
  vox_efg_oc_result *result;
  unsigned blocks;       /* the update's blocks, all resident at once */
  size_t bytes;
} vox_cuda_efg_oc;

/* The tables from the model (its volume sensitivities, node and cell
 * roles); destroy frees what create made, also after a failure. */
vox_status vox_cuda_efg_oc_create(vox_backend *be, const vox_efg_model *efg, vox_cuda_efg_oc *t);
void vox_cuda_efg_oc_destroy(vox_cuda_efg_oc *t);

/* vox_efg_oc_update on device arrays of t->n_nodes doubles: one
 * cooperative kernel, the search's passes separated by grid-wide barriers,
 * every thread running the search alike on the same sums; one wait for the
 * host, for *res. */
vox_status vox_cuda_efg_oc_update(vox_backend *be, vox_cuda_efg_oc *t, const vox_efg_oc_options *o,
                                  const double *rho, const double *dc, double *rho_new,
                                  vox_efg_oc_result *res);

/* vox_efg_non_discreteness_sum of the Gauss points' densities (8 a cell). */
vox_status vox_cuda_efg_non_discreteness(vox_backend *be, vox_cuda_efg_oc *t,
                                         const double *rho_gauss, double *sum);

#endif
