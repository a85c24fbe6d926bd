/* SPDX-License-Identifier: BSD-3-Clause */
/* A synthetic trabecular bone as in Arbenz et al. 2014 ("perlin" meshes): the
 * intersection of two thresholded coherent-noise fields. Each field is a
 * fractal sum of Ken Perlin's improved gradient noise (2002) over the unit
 * cube; a voxel is bone where both fields lie near zero, |n1| < t and
 * |n2| < t: each band is a thick random sheet around a zero surface, and two
 * sheets meet along rods and plates, the two kinds of trabeculae. The same
 * fields sampled on a finer grid give the same bone at a higher resolution,
 * as the seed's perlin1 ... perlin256 series. Header-only so that the
 * benchmark and the tests share it. */
#ifndef VOXFE_BENCH_PERLIN_BONE_H
#define VOXFE_BENCH_PERLIN_BONE_H

#include <math.h>
#include <stdint.h>

typedef struct perlin_field {
  uint8_t perm[512];
} perlin_field;

/* A permutation of 0..255 from a seed (xorshift64 and Fisher-Yates). */
static inline void perlin_init(perlin_field *f, uint64_t seed) {
  uint64_t s = seed * 0x9e3779b97f4a7c15u + 1;
  for (int i = 0; i < 256; i++) f->perm[i] = (uint8_t)i;
  for (int i = 255; i > 0; i--) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    const int j = (int)(s % (uint64_t)(i + 1));
    const uint8_t t = f->perm[i];
    f->perm[i] = f->perm[j], f->perm[j] = t;
  }
  for (int i = 0; i < 256; i++) f->perm[256 + i] = f->perm[i];
}

static inline double perlin_fade(double t) { return t * t * t * (t * (t * 6 - 15) + 10); }
static inline double perlin_lerp(double t, double a, double b) { return a + t * (b - a); }
static inline double perlin_grad(int hash, double x, double y, double z) {
  const int h = hash & 15;
  const double u = h < 8 ? x : y, v = h < 4 ? y : (h == 12 || h == 14 ? x : z);
  return ((h & 1) ? -u : u) + ((h & 2) ? -v : v);
}

/* Improved Perlin noise at (x, y, z), in about [-1, 1], period 256. */
static inline double perlin_noise(const perlin_field *f, double x, double y, double z) {
  const double fx = floor(x), fy = floor(y), fz = floor(z);
  const int X = (int)fx & 255, Y = (int)fy & 255, Z = (int)fz & 255;
  x -= fx, y -= fy, z -= fz;
  const double u = perlin_fade(x), v = perlin_fade(y), w = perlin_fade(z);
  const uint8_t *p = f->perm;
  const int A = p[X] + Y, AA = p[A] + Z, AB = p[A + 1] + Z;
  const int B = p[X + 1] + Y, BA = p[B] + Z, BB = p[B + 1] + Z;
  return perlin_lerp(
      w,
      perlin_lerp(v, perlin_lerp(u, perlin_grad(p[AA], x, y, z), perlin_grad(p[BA], x - 1, y, z)),
                  perlin_lerp(u, perlin_grad(p[AB], x, y - 1, z),
                              perlin_grad(p[BB], x - 1, y - 1, z))),
      perlin_lerp(v,
                  perlin_lerp(u, perlin_grad(p[AA + 1], x, y, z - 1),
                              perlin_grad(p[BA + 1], x - 1, y, z - 1)),
                  perlin_lerp(u, perlin_grad(p[AB + 1], x, y - 1, z - 1),
                              perlin_grad(p[BB + 1], x - 1, y - 1, z - 1))));
}

/* Fractal sum (libnoise's Perlin module): `octaves` octaves from
 * `frequency` (cycles per unit), each twice the frequency at half the
 * amplitude. */
static inline double perlin_fractal(const perlin_field *f, double x, double y, double z,
                                    double frequency, int octaves) {
  double sum = 0, amplitude = 1;
  for (int o = 0; o < octaves; o++) {
    sum += amplitude * perlin_noise(f, x * frequency, y * frequency, z * frequency);
    frequency *= 2, amplitude *= 0.5;
  }
  return sum;
}

/* The bone's parameters: frequency 6 and 3 octaves give trabeculae of about
 * a twentieth of the box; the band half-width 0.178 makes about 18% bone
 * (Arbenz et al. 2014's perlin1: 30 M elements in 550^3). */
typedef struct perlin_bone {
  perlin_field a, b;
  double frequency;
  int octaves;
  double band;
} perlin_bone;

static inline void perlin_bone_init(perlin_bone *bone, uint64_t seed) {
  perlin_init(&bone->a, 2 * seed + 1);
  perlin_init(&bone->b, 2 * seed + 2);
  bone->frequency = 6;
  bone->octaves = 3;
  bone->band = 0.178;
}

/* 1 where voxel (i, j, k) of an n^3 box over the unit cube is bone. */
static inline int perlin_bone_voxel(const perlin_bone *bone, int64_t n, int64_t i, int64_t j,
                                    int64_t k) {
  const double x = (i + 0.5) / (double)n, y = (j + 0.5) / (double)n, z = (k + 0.5) / (double)n;
  /* the second field is offset so that its zero sheets do not follow the first's */
  return fabs(perlin_fractal(&bone->a, x, y, z, bone->frequency, bone->octaves)) < bone->band &&
         fabs(perlin_fractal(&bone->b, x + 17.31, y + 5.77, z + 11.13, bone->frequency,
                             bone->octaves)) < bone->band;
}

#endif
