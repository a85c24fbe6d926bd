/* SPDX-License-Identifier: BSD-3-Clause */
/* A synthetic clinical-size bone model for the voxfe-analyze benchmark
 * (docs/benchmarks.md): a section of distal tibia as a first-
 * generation HR-pQCT scanner sees it (XtremeCT: 82 um voxels, 110 slices,
 * 9.02 mm), about 3 M bone elements in a 394 x 321 x 110 box.
 *
 *   bench_clinical_model OUT.nc [SEED] [--intensity]
 *
 * The bone: an elliptic cortical shell (32 x 26 mm outside, 1.2 mm thick,
 * the radius and the thickness wavy along the circumference and the slices)
 * around trabecular bone made like Arbenz et al. 2014's "perlin" meshes: the union of
 * two bands |n_i| < w around the zero sets of two coherent (Perlin gradient)
 * noise fields of about 1 mm period -- plate-like sheets that join into one
 * network -- with w chosen from a histogram so that the trabecular bone
 * volume fraction is 0.15. Label 1 is the cortex, label 2 the trabecular
 * bone, both E 6829 MPa (first-generation HR-pQCT tissue), nu 0.3. With
 * --intensity the model also carries an 'intensity' in mg HA/ccm: about
 * 1000 in the cortex and 750 in trabeculae, with a noise of +-50.
 *
 * Prints the grid, the bone elements of each label and the time taken. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "voxfe/io.h"
#include "voxfe/voxfe.h"

enum { NX = 394, NY = 321, NZ = 110, BINS = 4096 };
static const double voxel = 0.082;                 /* mm */
static const double outer_a = 16.0, outer_b = 13.0; /* mm, semi-axes */
static const double cortex = 1.2;                   /* mm */
static const double trabecular_bvtv = 0.15;
static const double period = 1.0; /* mm, of the noise */

static uint32_t hash(uint32_t x) {
  x ^= x >> 16, x *= 0x7feb352du, x ^= x >> 15, x *= 0x846ca68bu, x ^= x >> 16;
  return x;
}

/* The gradient of lattice point (i, j, k) of field `seed`: one of the 12
 * edge directions of a cube (Perlin's improved noise). */
static double grad_dot(uint32_t seed, int i, int j, int k, double x, double y, double z) {
  const uint32_t h =
      hash(seed ^ hash((uint32_t)i * 73856093u ^ (uint32_t)j * 19349663u ^ (uint32_t)k * 83492791u)) %
      12;
  const double u = h < 8 ? x : y, v = h < 4 ? y : z;
  return ((h & 1) ? -u : u) + ((h & 2) ? -v : v);
}

static double fade(double t) { return t * t * t * (t * (t * 6 - 15) + 10); }

/* Perlin gradient noise at (x, y, z) in lattice units; about -1 .. 1. */
static double noise(uint32_t seed, double x, double y, double z) {
  const int i = (int)floor(x), j = (int)floor(y), k = (int)floor(z);
  const double fx = x - i, fy = y - j, fz = z - k, u = fade(fx), v = fade(fy), w = fade(fz);
  double c[2][2][2];
  for (int a = 0; a < 2; a++)
    for (int b = 0; b < 2; b++)
      for (int d = 0; d < 2; d++)
        c[a][b][d] = grad_dot(seed, i + a, j + b, k + d, fx - a, fy - b, fz - d);
  double x00 = c[0][0][0] + u * (c[1][0][0] - c[0][0][0]);
  double x10 = c[0][1][0] + u * (c[1][1][0] - c[0][1][0]);
  double x01 = c[0][0][1] + u * (c[1][0][1] - c[0][0][1]);
  double x11 = c[0][1][1] + u * (c[1][1][1] - c[0][1][1]);
  double y0 = x00 + v * (x10 - x00), y1 = x01 + v * (x11 - x01);
  return y0 + w * (y1 - y0);
}

/* Two octaves: the bands of one octave alone are too regular. */
static double field(uint32_t seed, double x, double y, double z) {
  const double s = 1.0 / period;
  return noise(seed, x * s, y * s, z * s) + 0.35 * noise(seed + 7, 2 * x * s, 2 * y * s, 2 * z * s);
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char **argv) {
  if (argc < 2 || argc > 4) {
    fprintf(stderr, "usage: %s OUT.nc [SEED] [--intensity]\n", argv[0]);
    return 2;
  }
  const double t0 = now();
  uint32_t seed = 1;
  int with_intensity = 0;
  for (int a = 2; a < argc; a++) {
    if (!strcmp(argv[a], "--intensity"))
      with_intensity = 1;
    else
      seed = (uint32_t)strtoul(argv[a], NULL, 10);
  }
  vox_context *ctx;
  if (vox_context_create(&ctx)) return 1;
  vox_model m;
  const vox_grid grid = {.nx = NX, .ny = NY, .nz = NZ, .voxel_size = {voxel, voxel, voxel}};
  if (vox_model_init(ctx, &m, &grid)) goto fail;
  const size_t ne = (size_t)NX * NY * NZ;
  /* per voxel: 0 outside, 1 cortex, 2 marrow space; n: min(|n1|, |n2|) */
  float *band = malloc(ne * sizeof *band);
  if (with_intensity) m.intensity = malloc(ne * sizeof *m.intensity);
  if (!band || (with_intensity && !m.intensity)) {
    fprintf(stderr, "out of memory\n");
    return 1;
  }
  const double cx = 0.5 * NX * voxel, cy = 0.5 * NY * voxel;
#pragma omp parallel for schedule(dynamic)
  for (int k = 0; k < NZ; k++)
    for (int j = 0; j < NY; j++)
      for (int i = 0; i < NX; i++) {
        const size_t e = ((size_t)k * NY + j) * NX + i;
        const double x = (i + 0.5) * voxel, y = (j + 0.5) * voxel, z = (k + 0.5) * voxel;
        const double dx = x - cx, dy = y - cy, theta = atan2(dy / outer_b, dx / outer_a);
        /* the outline and the thickness wave around the bone and along it */
        const double wave = 1 + 0.04 * sin(3 * theta + 0.4 * z) + 0.02 * cos(5 * theta + seed);
        const double thick = cortex * (1 + 0.35 * sin(2 * theta + 0.3 * z + seed));
        const double r = sqrt((dx / outer_a) * (dx / outer_a) + (dy / outer_b) * (dy / outer_b));
        const double mean_axis = 0.5 * (outer_a + outer_b);
        const double depth = (wave - r) * mean_axis; /* mm inside the outline, roughly */
        band[e] = INFINITY;
        if (depth < 0) continue;
        if (depth < thick) {
          m.label[e] = 1;
          continue;
        }
        m.label[e] = 2; /* marrow space for now */
        const double n1 = field(2 * seed, x, y, z), n2 = field(2 * seed + 1, x + 17.3, y, z);
        band[e] = (float)fmin(fabs(n1), fabs(n2));
      }
  /* w: the quantile of the band values in the marrow space */
  size_t hist[BINS] = {0}, marrow = 0;
  const double top = 1.0;
  for (size_t e = 0; e < ne; e++)
    if (m.label[e] == 2) {
      const int b = band[e] >= top ? BINS - 1 : (int)(band[e] / top * BINS);
      hist[b]++, marrow++;
    }
  size_t below = 0;
  int cut = 0;
  while (cut < BINS && (double)(below + hist[cut]) <= trabecular_bvtv * (double)marrow)
    below += hist[cut++];
  const float w = (float)(cut * top / BINS);
  size_t count[3] = {0, 0, 0};
  for (size_t e = 0; e < ne; e++) {
    if (m.label[e] == 2 && !(band[e] < w)) m.label[e] = 0;
    count[m.label[e]]++;
    if (m.intensity) {
      const double jitter = 100.0 * ((double)(hash((uint32_t)e ^ seed) & 0xffff) / 65535.0 - 0.5);
      m.intensity[e] = (float)(m.label[e] == 1 ? 1000 + jitter : m.label[e] == 2 ? 750 + jitter
                                                                                  : 50 + jitter);
    }
  }
  free(band);
  if (m.intensity) snprintf(m.intensity_units, sizeof m.intensity_units, "mg HA/ccm");
  const vox_material cort = {.label = 1, .name = "cortical", .role = VOX_ROLE_SOLID,
                             .youngs_modulus = 6829, .poisson_ratio = 0.3, .conductivity = 1};
  vox_material trab = cort;
  trab.label = 2;
  snprintf(trab.name, sizeof trab.name, "trabecular");
  if (vox_model_add_material(ctx, &m, &cort) || vox_model_add_material(ctx, &m, &trab)) goto fail;
  char title[128];
  snprintf(title, sizeof title, "synthetic distal tibia, HR-pQCT-like, seed %u", (unsigned)seed);
  m.title = strdup(title);
  if (vox_model_write(ctx, argv[1], &m)) goto fail;
  printf("%s: %d x %d x %d voxels of %g mm, %zu bone elements (cortical %zu, trabecular %zu, "
         "trabecular BV/TV %.3f)%s, %.2f s\n",
         argv[1], NX, NY, NZ, voxel, count[1] + count[2], count[1], count[2],
         (double)count[2] / (double)marrow, m.intensity ? ", with intensity" : "", now() - t0);
  vox_model_free(&m);
  vox_context_destroy(ctx);
  return 0;
fail:
  fprintf(stderr, "%s: %s\n", argv[0], vox_context_message(ctx));
  return 1;
}
