/* SPDX-License-Identifier: BSD-3-Clause */
/* MLS shape functions on the nodes of a voxel grid (efg_mls.h). */
#include "efg_mls.h"

#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

double vox_efg_weight(double r, double *dw_over_r) {
  double w, d;
  if (r <= 0.5) {
    w = 2.0 / 3.0 - 4.0 * r * r + 4.0 * r * r * r;
    d = -8.0 + 12.0 * r;
  } else if (r < 1.0) {
    w = 4.0 / 3.0 - 4.0 * r + 4.0 * r * r - 4.0 / 3.0 * r * r * r;
    d = (-4.0 + 8.0 * r - 4.0 * r * r) / r;
  } else {
    w = 0.0;
    d = 0.0;
  }
  if (dw_over_r) *dw_over_r = d;
  return w;
}

void vox_efg_nodes_free(vox_efg_nodes *nodes) {
  free(nodes->grid_node);
  free(nodes->field);
  free(nodes->coord);
  memset(nodes, 0, sizeof *nodes);
}

vox_status vox_efg_nodes_init(vox_context *ctx, const vox_grid *grid, const uint8_t *in_domain,
                              double support_scale, vox_efg_nodes *nodes) {
  memset(nodes, 0, sizeof *nodes);
  if (grid->periodic)
    return vox_error(ctx, VOX_ERR_UNSUPPORTED, "element-free Galerkin: periodic grids are not "
                                               "supported");
  if (!(support_scale >= 1.0) || !isfinite(support_scale))
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "element-free Galerkin: the support scale d_max must be at least 1 (got %g)",
                     support_scale);
  const int64_t nx = grid->nx, ny = grid->ny, nz = grid->nz;
  const int64_t nn = vox_grid_nodes(grid);
  if (nn > INT32_MAX)
    return vox_error(ctx, VOX_ERR_UNSUPPORTED,
                     "element-free Galerkin: %lld grid nodes, more than 2^31", (long long)nn);
  nodes->grid = *grid;
  nodes->field = malloc((size_t)nn * sizeof *nodes->field);
  if (!nodes->field)
    return vox_error(ctx, VOX_ERR_NO_MEMORY, "element-free Galerkin: out of memory (nodes)");
  /* A node is a field node when one of its (up to) 8 voxels is in the
   * domain; marked by the node, so each entry has one writer. */
#pragma omp parallel for schedule(static)
  for (int64_t k = 0; k <= nz; k++)
    for (int64_t j = 0; j <= ny; j++)
      for (int64_t i = 0; i <= nx; i++) {
        int in = 0;
        for (int c = 0; c < 8 && !in; c++) {
          const int64_t ei = i - (c & 1), ej = j - ((c >> 1) & 1), ek = k - (c >> 2);
          if (ei < 0 || ej < 0 || ek < 0 || ei >= nx || ej >= ny || ek >= nz) continue;
          in = in_domain[(ek * ny + ej) * nx + ei] != 0;
        }
        nodes->field[(k * (ny + 1) + j) * (nx + 1) + i] = in ? 0 : -1;
      }
  size_t n = 0;
  for (int64_t g = 0; g < nn; g++)
    if (nodes->field[g] >= 0) nodes->field[g] = (int32_t)n++;
  if (n == 0) {
    vox_efg_nodes_free(nodes);
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "element-free Galerkin: the model has no voxels with material");
  }
  nodes->n = n;
  nodes->grid_node = malloc(n * sizeof *nodes->grid_node);
  nodes->coord = malloc(3 * n * sizeof *nodes->coord);
  if (!nodes->grid_node || !nodes->coord) {
    vox_efg_nodes_free(nodes);
    return vox_error(ctx, VOX_ERR_NO_MEMORY, "element-free Galerkin: out of memory (nodes)");
  }
  for (int64_t g = 0; g < nn; g++)
    if (nodes->field[g] >= 0) {
      const int32_t f = nodes->field[g];
      nodes->grid_node[f] = g;
      nodes->coord[3 * f + 0] = (int32_t)(g % (nx + 1));
      nodes->coord[3 * f + 1] = (int32_t)((g / (nx + 1)) % (ny + 1));
      nodes->coord[3 * f + 2] = (int32_t)(g / ((nx + 1) * (ny + 1)));
    }

  const double *h = grid->voxel_size;
  const double c = fmin(h[0], fmin(h[1], h[2]));
  nodes->radius = support_scale * c;
  nodes->max_support = 1;
  for (int a = 0; a < 3; a++) {
    nodes->reach[a] = (int)floor(2.0 * nodes->radius / h[a]);
    /* the lines within (x - R, x + R): at most floor(2R/h) + 1 */
    nodes->max_support *= (size_t)nodes->reach[a] + 1;
  }
  return VOX_OK;
}

void vox_efg_node_position(const vox_efg_nodes *nodes, int32_t i, double x[3]) {
  const vox_grid *g = &nodes->grid;
  for (int a = 0; a < 3; a++)
    x[a] = g->origin[a] + (double)nodes->coord[3 * (size_t)i + a] * g->voxel_size[a];
}

/* Solves A y = b for the symmetric 4x4 A by Cholesky, b overwritten with y;
 * l gets the factor. Returns -1 when a pivot falls under 1e-12 of A's
 * largest diagonal entry (singular or nearly so). */
static int cholesky4(const double a[16], double l[16]) {
  double dmax = 0;
  for (int i = 0; i < 4; i++) dmax = fmax(dmax, a[5 * i]);
  memset(l, 0, 16 * sizeof *l);
  for (int j = 0; j < 4; j++) {
    double d = a[5 * j];
    for (int k = 0; k < j; k++) d -= l[4 * j + k] * l[4 * j + k];
    if (!(d > 1e-12 * dmax)) return -1;
    l[5 * j] = sqrt(d);
    for (int i = j + 1; i < 4; i++) {
      double s = a[4 * i + j];
      for (int k = 0; k < j; k++) s -= l[4 * i + k] * l[4 * j + k];
      l[4 * i + j] = s / l[5 * j];
    }
  }
  return 0;
}

static void cholesky4_solve(const double l[16], double b[4]) {
  for (int i = 0; i < 4; i++) {
    double s = b[i];
    for (int k = 0; k < i; k++) s -= l[4 * i + k] * b[k];
    b[i] = s / l[5 * i];
  }
  for (int i = 3; i >= 0; i--) {
    double s = b[i];
    for (int k = i + 1; k < 4; k++) s -= l[4 * k + i] * b[k];
    b[i] = s / l[5 * i];
  }
}

/* The box of grid nodes that may lie within the radius of x. */
static void support_box(const vox_efg_nodes *nodes, const double x[3], int64_t lo[3],
                        int64_t hi[3]) {
  const vox_grid *g = &nodes->grid;
  const double R = nodes->radius, *h = g->voxel_size;
  const int64_t dims[3] = {g->nx + 1, g->ny + 1, g->nz + 1};
  for (int a = 0; a < 3; a++) {
    const double t = (x[a] - g->origin[a]) / h[a];
    lo[a] = (int64_t)ceil(t - R / h[a]);
    hi[a] = (int64_t)floor(t + R / h[a]);
    if (lo[a] < 0) lo[a] = 0;
    if (hi[a] > dims[a] - 1) hi[a] = dims[a] - 1;
  }
}

/* x - the position of grid node (i, j, k), and its length: how
 * vox_efg_shape_at and support_count decide alike whether the node is in
 * the support. */
static inline double offset_to(const vox_grid *g, const double x[3], int64_t i, int64_t j,
                               int64_t k, double d[3]) {
  d[0] = x[0] - (g->origin[0] + (double)i * g->voxel_size[0]);
  d[1] = x[1] - (g->origin[1] + (double)j * g->voxel_size[1]);
  d[2] = x[2] - (g->origin[2] + (double)k * g->voxel_size[2]);
  return sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
}

/* The number of field nodes within the radius of x: vox_efg_shape_at's
 * count, without its moments. */
static int support_count(const vox_efg_nodes *nodes, const double x[3]) {
  const vox_grid *g = &nodes->grid;
  const int64_t dims[3] = {g->nx + 1, g->ny + 1, g->nz + 1};
  int64_t lo[3], hi[3];
  support_box(nodes, x, lo, hi);
  int n = 0;
  for (int64_t k = lo[2]; k <= hi[2]; k++)
    for (int64_t j = lo[1]; j <= hi[1]; j++)
      for (int64_t i = lo[0]; i <= hi[0]; i++) {
        double d[3];
        n += nodes->field[(k * dims[1] + j) * dims[0] + i] >= 0 &&
             offset_to(g, x, i, j, k, d) < nodes->radius;
      }
  return n;
}

int vox_efg_shape_at(const vox_efg_nodes *nodes, const double x[3], int32_t *node, double *phi,
                     double *dphi) {
  const vox_grid *g = &nodes->grid;
  const double R = nodes->radius;
  const int64_t dims[3] = {g->nx + 1, g->ny + 1, g->nz + 1};
  int64_t lo[3], hi[3];
  support_box(nodes, x, lo, hi);
  /* The nodes within the radius, ascending grid index (so ascending field
   * index), with their weights; phi[] holds w until the end, and dphi the
   * weight's gradient. */
  int n = 0;
  double pj[4];
  double A[16] = {0}, dA[3][16] = {{0}};
  for (int64_t k = lo[2]; k <= hi[2]; k++)
    for (int64_t j = lo[1]; j <= hi[1]; j++)
      for (int64_t i = lo[0]; i <= hi[0]; i++) {
        const int32_t f = nodes->field[(k * dims[1] + j) * dims[0] + i];
        if (f < 0) continue;
        double d[3];
        const double dist = offset_to(g, x, i, j, k, d);
        if (dist >= R) continue;
        double dwr;
        const double w = vox_efg_weight(dist / R, &dwr);
        node[n] = f;
        phi[n] = w;
        /* p(x_j) in the basis centred at x and scaled by R */
        pj[0] = 1, pj[1] = -d[0] / R, pj[2] = -d[1] / R, pj[3] = -d[2] / R;
        for (int r = 0; r < 4; r++)
          for (int c = 0; c < 4; c++) A[4 * r + c] += w * pj[r] * pj[c];
        if (dphi)
          for (int a = 0; a < 3; a++) {
            const double dw = dwr * d[a] / (R * R);
            dphi[3 * n + a] = dw;
            for (int r = 0; r < 4; r++)
              for (int c = 0; c < 4; c++) dA[a][4 * r + c] += dw * pj[r] * pj[c];
          }
        n++;
      }
  double L[16];
  if (n < 4 || cholesky4(A, L) != 0) return -1;
  /* gamma = A^-1 p(x), p(x) = e0 in the shifted basis; phi_j = w_j gamma.p_j */
  double gam[4] = {1, 0, 0, 0};
  cholesky4_solve(L, gam);
  /* d gamma / d x_a = A^-1 (dp/dx_a - dA/dx_a gamma), dp/dx_a = e_(a+1) / R:
   * the basis centre is held fixed while x moves, so p(x_j) does not move. */
  double dgam[3][4];
  if (dphi)
    for (int a = 0; a < 3; a++) {
      for (int r = 0; r < 4; r++) {
        double s = r == a + 1 ? 1.0 / R : 0.0;
        for (int c = 0; c < 4; c++) s -= dA[a][4 * r + c] * gam[c];
        dgam[a][r] = s;
      }
      cholesky4_solve(L, dgam[a]);
    }
  for (int m = 0; m < n; m++) {
    double xm[3];
    vox_efg_node_position(nodes, node[m], xm);
    pj[0] = 1, pj[1] = (xm[0] - x[0]) / R, pj[2] = (xm[1] - x[1]) / R, pj[3] = (xm[2] - x[2]) / R;
    const double gp = gam[0] * pj[0] + gam[1] * pj[1] + gam[2] * pj[2] + gam[3] * pj[3];
    const double w = phi[m];
    phi[m] = w * gp;
    if (dphi)
      for (int a = 0; a < 3; a++) {
        const double dgp =
            dgam[a][0] * pj[0] + dgam[a][1] * pj[1] + dgam[a][2] * pj[2] + dgam[a][3] * pj[3];
        dphi[3 * m + a] = dphi[3 * m + a] * gp + w * dgp;
      }
  }
  return n;
}

void vox_efg_shapes_free(vox_efg_shapes *s) {
  free(s->start);
  free(s->node);
  free(s->phi);
  free(s->dphi);
  memset(s, 0, sizeof *s);
}

vox_status vox_efg_shapes_build(vox_context *ctx, const vox_efg_nodes *nodes, size_t n_points,
                                const double *x, int derivatives, const char *what,
                                vox_efg_shapes *out) {
  memset(out, 0, sizeof *out);
  out->n_points = n_points;
  out->start = calloc(n_points + 1, sizeof *out->start);
  if (!out->start) goto no_memory;
  /* Two passes, the counts and then the values, so that the table is
   * compact and each point's entries are written by one thread; a point
   * whose moment matrix is singular is found by the second. */
#pragma omp parallel for schedule(static)
  for (ptrdiff_t p = 0; p < (ptrdiff_t)n_points; p++)
    out->start[p + 1] = (size_t)support_count(nodes, x + 3 * p);
  for (size_t p = 0; p < n_points; p++) out->start[p + 1] += out->start[p];
  const size_t ne = out->start[n_points];
  out->node = malloc((ne ? ne : 1) * sizeof *out->node);
  out->phi = malloc((ne ? ne : 1) * sizeof *out->phi);
  if (derivatives) out->dphi = malloc((ne ? 3 * ne : 1) * sizeof *out->dphi);
  if (!out->node || !out->phi || (derivatives && !out->dphi)) goto no_memory;
  ptrdiff_t bad = -1;
#pragma omp parallel for schedule(static) reduction(max : bad)
  for (ptrdiff_t p = 0; p < (ptrdiff_t)n_points; p++) {
    const size_t s = out->start[p];
    const int n = vox_efg_shape_at(nodes, x + 3 * p, out->node + s, out->phi + s,
                                   derivatives ? out->dphi + 3 * s : NULL);
    if (n < 0 || (size_t)n != out->start[p + 1] - s) bad = bad > p ? bad : p;
  }
  if (bad >= 0) {
    const double *xb = x + 3 * bad;
    vox_efg_shapes_free(out);
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "element-free Galerkin: too few nodes around %s %td at (%g, %g, %g) mm for "
                     "the linear basis (raise the support scale d_max for voxels of this shape)",
                     what, bad, xb[0], xb[1], xb[2]);
  }
  return VOX_OK;
no_memory:
  vox_efg_shapes_free(out);
  return vox_error(ctx, VOX_ERR_NO_MEMORY, "element-free Galerkin: out of memory (shape "
                                           "functions of the %ss)",
                   what);
}

void vox_efg_node_points_free(vox_efg_node_points *np) {
  free(np->start);
  free(np->entry);
  free(np->point);
  memset(np, 0, sizeof *np);
}

vox_status vox_efg_node_points_build(vox_context *ctx, const vox_efg_shapes *s, size_t n_nodes,
                                     vox_efg_node_points *out) {
  memset(out, 0, sizeof *out);
  const size_t ne = s->start[s->n_points];
  out->start = calloc(n_nodes + 1, sizeof *out->start);
  out->entry = malloc((ne ? ne : 1) * sizeof *out->entry);
  out->point = malloc((ne ? ne : 1) * sizeof *out->point);
  if (!out->start || !out->entry || !out->point) {
    vox_efg_node_points_free(out);
    return vox_error(ctx, VOX_ERR_NO_MEMORY, "element-free Galerkin: out of memory (node lists)");
  }
  /* A counting sort by node, so that each node's list comes out in the
   * order of the points whatever the threads (the sums over it are then
   * reproducible): each thread counts the nodes of a contiguous range of
   * points, a node's list gives each thread its place after the threads of
   * earlier ranges, and each thread then fills its places in point order. */
  const size_t np = s->n_points;
  const int threads = np >= 65536 ? omp_get_max_threads() : 1;
  uint32_t *count = calloc((size_t)threads * (n_nodes ? n_nodes : 1), sizeof *count);
  if (!count) {
    vox_efg_node_points_free(out);
    return vox_error(ctx, VOX_ERR_NO_MEMORY, "element-free Galerkin: out of memory (node lists)");
  }
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num(), nt = omp_get_num_threads();
    const size_t p0 = np * (size_t)t / (size_t)nt, p1 = np * (size_t)(t + 1) / (size_t)nt;
    uint32_t *mine = count + (size_t)t * n_nodes;
    for (size_t e = s->start[p0]; e < s->start[p1]; e++) mine[s->node[e]]++;
#pragma omp barrier
#pragma omp single
    {
      for (size_t i = 0; i < n_nodes; i++) {
        size_t k = out->start[i];
        for (int u = 0; u < nt; u++) {
          const uint32_t c = count[(size_t)u * n_nodes + i];
          count[(size_t)u * n_nodes + i] = (uint32_t)(k - out->start[i]); /* its offset */
          k += c;
        }
        out->start[i + 1] = k;
      }
    }
    for (size_t p = p0; p < p1; p++)
      for (size_t e = s->start[p]; e < s->start[p + 1]; e++) {
        const size_t node = (size_t)s->node[e], k = out->start[node] + mine[node]++;
        out->entry[k] = e;
        out->point[k] = p;
      }
  }
  free(count);
  return VOX_OK;
}
