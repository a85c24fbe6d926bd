/* SPDX-License-Identifier: BSD-3-Clause */
/* Where the sparse solve's time goes, on any backend: its V-cycle's parts
 * timed alone (--parts=1) and its profile printed (--profile=1), for
 * bench_sparse on one device and bench_mpi_sparse over MPI ranks. */
#ifndef VOXFE_BENCH_SPARSE_PARTS_H
#define VOXFE_BENCH_SPARSE_PARTS_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "backend_ops.h"
#include "bench_common.h"
#include "sparse_hierarchy.h"
#include "sparse_ops.h"
#include "sparse_solve.h"

typedef vox_status (*sparse_step)(vox_backend *be, void *arg);

typedef struct step_args {
  vox_sparse_level *fine, *coarse;
  vox_vec *x, *y;
  int flags;
} step_args;

static vox_status step_apply(vox_backend *be, void *p) {
  step_args *a = p;
  return be->ops->sparse->apply(be, a->fine, a->x, a->y, a->flags);
}
static vox_status step_restrict(vox_backend *be, void *p) {
  step_args *a = p;
  return be->ops->sparse->restrict_residual(be, a->fine, a->coarse, NULL, a->x, a->y);
}
static vox_status step_prolong(vox_backend *be, void *p) {
  step_args *a = p;
  return be->ops->sparse->prolong_add(be, a->fine, a->coarse, a->x, a->y);
}
static vox_status step_smooth(vox_backend *be, void *p) {
  step_args *a = p; /* d = w (b - A x) + d, x += d with b = x, A x = y, w = d */
  return be->ops->sparse->smoother_step(be, a->x, a->y, a->y, 0.5, 0.5, a->y, a->x);
}
static vox_status step_dot(vox_backend *be, void *p) {
  step_args *a = p;
  double d;
  return be->ops->sparse->vec_dot(be, a->x, a->y, &d);
}

/* Mean seconds of one call, 20 calls after 3 warm-ups (NAN where a call
 * failed); every rank waited for where bench_sparse_wait_all is set. */
static void (*bench_sparse_wait_all)(void);
static double time_step(vox_backend *be, sparse_step f, step_args *a) {
  for (int i = 0; i < 3; i++)
    if (f(be, a)) return NAN;
  be->ops->synchronize(be);
  if (bench_sparse_wait_all) bench_sparse_wait_all();
  const double t0 = bench_now();
  for (int i = 0; i < 20; i++)
    if (f(be, a)) return NAN;
  be->ops->synchronize(be);
  if (bench_sparse_wait_all) bench_sparse_wait_all();
  return (bench_now() - t0) / 20;
}

static void report(int print, const char *kind, const char *what, double seconds, double bytes) {
  if (print)
    printf("  %-6s %-44s %8.3f ms  %6.0f GB/s of the least %.3f GB\n", kind, what,
           1e3 * seconds, bytes / seconds / 1e9, bytes / 1e9);
}

/* The V-cycle's parts alone (the solver's mixed precision: level 0's
 * products from a double or a float vector into a double one, level 1's in
 * float), printed where `print`; NULL, or what failed. */
static const char *bench_sparse_parts(vox_context *ctx, vox_backend *be, const vox_model *m,
                                      const char *kind, int print) {
  const vox_sparse_ops *o = be->ops->sparse;
  vox_sparse_hierarchy h;
  if (vox_sparse_hierarchy_build(ctx, m, 0.3, 0, 0, &h)) return "hierarchy";
  vox_sparse_level *lv[2];
  for (int l = 0; l < 2; l++) {
    const vox_sparse_level_desc d = vox_sparse_level_describe(&h, l);
    if (o->level_create(be, &d, &lv[l])) return "level";
  }
  const size_t n0 = 3 * h.level[0].n_nodes, n1 = 3 * h.level[1].n_nodes;
  const size_t e0 = h.level[0].n_elements, e1 = h.level[1].n_elements;
  vox_vec xd, xf, yd, yf, x1, y1;
  if (be->ops->vec->create(be, n0, VOX_DOUBLE, &xd) || be->ops->vec->create(be, n0, VOX_FLOAT, &xf) ||
      be->ops->vec->create(be, n0, VOX_DOUBLE, &yd) || be->ops->vec->create(be, n0, VOX_FLOAT, &yf) ||
      be->ops->vec->create(be, n1, VOX_FLOAT, &x1) || be->ops->vec->create(be, n1, VOX_FLOAT, &y1))
    return "vectors";
  double *host = malloc(n0 * sizeof *host);
  if (!host) return "host vector";
  for (size_t i = 0; i < n0; i++) host[i] = 1e-3 * (double)(i % 7) - 2e-3;
  /* x in float by the backend's rounding copy; the coarse x constant */
  if (be->ops->vec->upload(be, &xd, host) || be->ops->vec->copy(be, &xf, &xd) ||
      be->ops->vec->set(be, &x1, 1e-3))
    return "upload";
  free(host);
  /* least bytes of a product: x read, y written, once; the elements' nodes
   * and moduli and the nodes' fixed bits read once */
  const double el0 = (double)e0 * 17 + (double)n0 / 3, el1 = (double)e1 * 20 + (double)n1 / 3;
  step_args a = {lv[0], lv[1], &xd, &yd, 0};
  report(print, kind, "level 0 K x, double x -> double y (CG)", time_step(be, step_apply, &a),
         (double)n0 * 16 + el0);
  a = (step_args){lv[0], lv[1], &xf, &yd, VOX_APPLY_SINGLE};
  report(print, kind, "level 0 K x, float x -> double y (V-cycle)", time_step(be, step_apply, &a),
         (double)n0 * 12 + el0);
  a = (step_args){lv[0], lv[1], &xf, &yf, VOX_APPLY_SINGLE};
  report(print, kind, "level 0 K x, float x -> float y", time_step(be, step_apply, &a),
         (double)n0 * 8 + el0);
  a = (step_args){lv[1], NULL, &x1, &y1, VOX_APPLY_SINGLE};
  report(print, kind, "level 1 K x, float (V-cycle)", time_step(be, step_apply, &a),
         (double)n1 * 8 + el1);
  /* transfers: the fine vector and the parent words read, the coarse one
   * written (restriction) or read (prolongation, and the fine one updated) */
  a = (step_args){lv[0], lv[1], &yd, &x1, 0};
  report(print, kind, "restriction 0 -> 1 (double -> float)", time_step(be, step_restrict, &a),
         (double)n0 * 8 + (double)n0 / 3 * 5 + (double)n1 * 4);
  a = (step_args){lv[0], lv[1], &x1, &xf, 0};
  report(print, kind, "prolongation 1 -> 0 (float, added)", time_step(be, step_prolong, &a),
         (double)n0 * 8 + (double)n0 / 3 * 5 + (double)n1 * 4);
  a = (step_args){NULL, NULL, &xf, &yf, 0};
  report(print, kind, "level 0 smoothing step (float)", time_step(be, step_smooth, &a),
         (double)n0 * 4 * 5);
  a = (step_args){NULL, NULL, &xd, &yd, 0};
  report(print, kind, "level 0 dot product (double)", time_step(be, step_dot, &a),
         (double)n0 * 16);
  if (print)
    printf("  %-6s level 0: %zu elements, %zu dofs, %.3f GB on the device; level 1: %zu elements, "
         "%zu dofs\n",
         kind, e0, n0, (double)o->level_bytes(lv[0]) / 1e9, e1, n1);
  vox_vec *v[] = {&xd, &xf, &yd, &yf, &x1, &y1};
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) be->ops->vec->destroy(be, v[i]);
  for (int l = 0; l < 2; l++) o->level_destroy(be, lv[l]);
  vox_sparse_hierarchy_free(&h);
  return NULL;
}


/* Where the setup and the time outside the iterations went (always), then
 * the profile's milliseconds per CG iteration (vox_sparse_pc_options.profile),
 * where the solve took one. */
static void bench_sparse_print_profile(const vox_sparse_stats *st, int iterations) {
  printf("setup (s): hierarchy %.2f, sent %.2f, bounds %.2f, levels on the backend %.2f; "
         "outside the iterations: right-hand side and start %.2f, the result's return %.2f\n",
         st->build_seconds, st->share_seconds, st->bounds_seconds, st->system_seconds,
         st->rhs_seconds, st->return_seconds);
  if (!(st->cg_seconds > 0)) return;
  const double per = 1e3 / (iterations > 0 ? iterations : 1);
  printf("profile (ms per CG iteration): CG %.2f, V-cycle levels", st->cg_seconds * per);
  for (int l = 0; l < st->n_levels && l < 16; l++) printf(" %.2f", st->level_seconds[l] * per);
  printf("\n");
}

#endif
