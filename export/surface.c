/* SPDX-License-Identifier: BSD-3-Clause */
/* Isosurfaces of voxel fields (marching cubes with a case table that is
 * manifold by construction, export/cube_cases.c), Taubin smoothing, and STL
 * output.
 *
 * Why this table and not the classic one: Lorensen and Cline's table
 * resolves an ambiguous face (inside corners on one diagonal, outside ones
 * on the other) differently in the two cubes that share it, which leaves
 * holes. Here the segments on each face depend only on that face's corners,
 * with one fixed rule for ambiguous faces (the inside corners are cut off
 * separately), so neighbouring cubes draw the same segments with opposite
 * orientations; each cube's segments close into loops, and each loop is
 * triangulated as a disk without inner diagonals on a cube face. Every mesh
 * edge is then shared by exactly two triangles, and the triangles around a
 * vertex on a grid edge make one fan through the four cubes around it: the
 * surface is a closed, oriented 2-manifold (tested on all 256 corner
 * configurations). Samples exactly at the threshold count as inside
 * (>= threshold) and vertices are kept a little away from the samples
 * (parameter in [EDGE_EPS, 1 - EDGE_EPS]), so no triangle is degenerate and
 * no two vertices coincide.
 *
 * The sample grid is the voxel centres padded by one layer of 0, point
 * (a, b, c) = voxel (a-1, b-1, c-1). The mesh vertices lie on the grid
 * edges from a point p along axis k (0 x, 1 y, 2 z): edge (p, k) is crossed
 * where p and its neighbour along k differ. The work goes by rows of points
 * along x (b, c fixed), in three passes, as flying edges does (Schroeder et
 * al., 2015):
 *   1. per row, its bits: point a inside (value >= threshold) is bit a;
 *   2. per row: the number of vertices (its crossed edges) and of triangles
 *      (of the cases of the cubes whose lowest corner is in the row); prefix
 *      sums over the rows give each row's first vertex and first triangle,
 *      so the output is the same for any number of threads;
 *   3. per row: its vertices, in order of x then axis, and its cubes'
 *      triangles. A cube's edges start at four rows of points, whose vertex
 *      numbers are counted along with the cubes. */
#include "voxfe/surface.h"
#include "cube_cases.h"
#include "voxfe/device/isosurface.h"
#include "temp_file.h"

#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <unistd.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif
#ifdef _OPENMP
#include <omp.h>
#endif

#define EDGE_EPS VOX_ISO_EDGE_EPS /* voxfe/device/isosurface.h says why */

/* malloc for the large arrays of the extraction: aligned to 2 MiB and
 * marked for transparent huge pages where the kernel has them on request
 * (madvise), so that their first touch costs one page fault per 2 MiB
 * instead of one per 4 KiB (a tenth of the extraction's time otherwise).
 * free() releases it. */
static void *big_alloc(size_t size) {
  const size_t huge = (size_t)2 << 20;
  if (size < 2 * huge) return malloc(size);
  void *p = NULL;
  size_t rounded = (size + huge - 1) / huge * huge;
  if (posix_memalign(&p, huge, rounded) != 0) return NULL;
#ifdef MADV_HUGEPAGE
  madvise(p, rounded, MADV_HUGEPAGE); /* advice only: no huge pages is fine */
#endif
  return p;
}

void vox_surface_free(vox_surface *surface) {
  if (!surface) return;
  free(surface->vertex);
  free(surface->triangle);
  memset(surface, 0, sizeof *surface);
}

static int thread_count(const vox_context *ctx) {
  int threads = vox_context_threads(ctx);
#ifdef _OPENMP
  if (threads <= 0) threads = omp_get_max_threads();
#endif
  return threads > 0 ? threads : 1;
}

/* --- the field ---------------------------------------------------------------------- */

typedef vox_iso_field field; /* voxfe/device/isosurface.h: shared with the GPU extraction */

/* The value of voxel e (NaN as 0). */
static inline double voxel_value(const field *f, size_t e) {
  switch (f->kind) {
  case VOX_ISO_DENSITY: {
    double v = f->density[e];
    return v == v ? v : 0.0;
  }
  case VOX_ISO_NONZERO: return f->label[e] != 0;
  default: return f->label[e] == f->which;
  }
}

/* The value at padded point (a, b, c): 0 on the padding. */
static inline double point_value(const field *f, int64_t a, int64_t b, int64_t c) {
  if (a < 1 || b < 1 || c < 1 || a > f->nx || b > f->ny || c > f->nz) return 0.0;
  return voxel_value(f, (size_t)(((c - 1) * f->ny + (b - 1)) * f->nx + (a - 1)));
}

/* --- extraction -------------------------------------------------------------------- */

/* Every pass works on bit rows: bit a of a row of points (b, c) is 1 where
 * point a is inside, 64 points a word. The crossed x edges of a row are
 * then the row XOR itself shifted by one point, its y and z edges the row
 * XOR the next row in y or z, and the cubes with a corner on each side those
 * where any of the 8 corner rows (the 4 rows and the 4 shifted) differ from
 * the first: 64 points per operation, and only the crossed edges and the
 * cubes they bound are visited one by one. Flying edges trims each row to
 * where it is crossed; bits make the untouched rest of a row cost a few
 * word operations instead of a byte per point. */

/* The hot loops of passes 2 and 3 (bit operations, population counts; no
 * floating point, so the mesh does not depend on the clone) are also built
 * for x86-64-v3, whose popcnt instruction the baseline lacks (its library
 * call is several times slower), and the best clone is picked at load time,
 * as engine/cpu/cpu_operator.c does. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(__SANITIZE_ADDRESS__)
#define SURFACE_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define SURFACE_CLONES
#endif

/* Pass 1 reads the whole field once, which is most of its memory traffic:
 * the comparisons go 2 doubles (4 with AVX2, where the processor has it) or
 * 16 labels at a time into bit masks (SSE2, part of every x86-64; a plain
 * loop elsewhere). */

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>
#define HAVE_AVX2_PATH 1
/* 64 comparisons d[k] >= t into one word, 4 at a time. Only called where
 * the processor has AVX2 (have_avx2). */
__attribute__((target("avx2"))) static void density_bits_avx2(const double *d, int64_t nx,
                                                              double t, uint64_t *bits) {
  const __m256d tv = _mm256_set1_pd(t);
  for (int64_t i = 0; i + 64 <= nx; i += 64) {
    uint64_t w = 0;
    for (int k = 0; k < 64; k += 4) /* ordered: NaN >= t is false, NaN counts as 0 */
      w |= (uint64_t)_mm256_movemask_pd(
               _mm256_cmp_pd(_mm256_loadu_pd(d + i + k), tv, _CMP_GE_OQ))
           << k;
    bits[i / 64] = w;
  }
}
static int have_avx2; /* set with the case table, once per process */
#endif

/* bits[w] bit i = point 64 w + i of the row is inside, for the nx voxels of
 * the row starting at voxel e0; the bits past nx are 0. */
static void inside_bits(const field *f, size_t e0, int64_t nx, uint64_t *bits) {
  const int64_t words = (nx + 63) / 64;
  switch (f->kind) {
  case VOX_ISO_DENSITY: {
    const double *d = f->density + e0;
    const double t = f->threshold;
    int64_t i = 0;
#ifdef HAVE_AVX2_PATH
    if (have_avx2) {
      density_bits_avx2(d, nx, t, bits);
      i = nx / 64 * 64;
    }
#endif
#ifdef __SSE2__
    const __m128d tv = _mm_set1_pd(t);
    for (; i + 64 <= nx; i += 64) {
      uint64_t w = 0;
      for (int k = 0; k < 64; k += 2) /* NaN >= t is false: NaN counts as 0 */
        w |= (uint64_t)_mm_movemask_pd(_mm_cmpge_pd(_mm_loadu_pd(d + i + k), tv)) << k;
      bits[i / 64] = w;
    }
#endif
    for (int64_t w = i / 64; w < words; w++) {
      uint64_t m = 0;
      const int64_t end = 64 * w + 64 < nx ? 64 * w + 64 : nx;
      for (int64_t k = 64 * w; k < end; k++) m |= (uint64_t)(d[k] >= t) << (k - 64 * w);
      bits[w] = m;
    }
    break;
  }
  default: {
    const uint8_t *l = f->label + e0;
    /* VOX_ISO_NONZERO: inside where the label is not 0; VOX_ISO_LABEL: where it is `which` */
    const int nonzero = f->kind == VOX_ISO_NONZERO;
    const uint8_t which = nonzero ? 0 : f->which;
    int64_t i = 0;
#ifdef __SSE2__
    const __m128i wv = _mm_set1_epi8((char)which);
    for (; i + 64 <= nx; i += 64) {
      uint64_t w = 0;
      for (int k = 0; k < 64; k += 16) {
        unsigned eq = (unsigned)_mm_movemask_epi8(
            _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(l + i + k)), wv));
        w |= (uint64_t)(nonzero ? ~eq & 0xFFFFu : eq) << k;
      }
      bits[i / 64] = w;
    }
#endif
    for (int64_t w = i / 64; w < words; w++) {
      uint64_t m = 0;
      const int64_t end = 64 * w + 64 < nx ? 64 * w + 64 : nx;
      for (int64_t k = 64 * w; k < end; k++)
        m |= (uint64_t)(nonzero ? l[k] != 0 : l[k] == which) << (k - 64 * w);
      bits[w] = m;
    }
    break;
  }
  }
}

/* The bits set in w (no popcount instruction in the portable build; the
 * hot loops below use __builtin_popcountll in their x86-64-v3 clone). */
static inline int64_t popcount64(uint64_t w) {
  w -= (w >> 1) & 0x5555555555555555ull;
  w = (w & 0x3333333333333333ull) + ((w >> 2) & 0x3333333333333333ull);
  w = (w + (w >> 4)) & 0x0F0F0F0F0F0F0F0Full;
  return (int64_t)((w * 0x0101010101010101ull) >> 56);
}

typedef struct bit_rows {
  int64_t px, py, pz;   /* padded point counts */
  int64_t words;        /* words of points per row, (px + 63) / 64; each row is followed
                           by a zero word, so a row shifted by one point is two loads */
  const uint64_t *bits; /* (words + 1) per row, rows (b, c) in order c * py + b */
  const uint8_t *live;  /* per row: 1 if a point of it is inside */
  const uint64_t *zero; /* words + 1 zeros, for the rows past the grid */
} bit_rows;

/* Pass 1 for row (b, c): its bits into `row` (words + 1 words, the last 0);
 * returns its number of inside points. `vbits`: (nx + 63) / 64 words of
 * scratch. Points are voxels + 1: the padding's bits are 0. */
static int64_t fill_bit_row(const field *f, int64_t b, int64_t c, int64_t words,
                            uint64_t *row, uint64_t *vbits) {
  if (b < 1 || c < 1 || b > f->ny || c > f->nz) {
    memset(row, 0, (size_t)(words + 1) * sizeof *row);
    return 0;
  }
  const int64_t nx = f->nx, vwords = (nx + 63) / 64;
  inside_bits(f, (size_t)(((c - 1) * f->ny + (b - 1)) * nx), nx, vbits);
  int64_t n = 0;
  uint64_t carry = 0;
  for (int64_t w = 0; w < vwords; w++) {
    if (vbits[w]) n += popcount64(vbits[w]);
    row[w] = vbits[w] << 1 | carry;
    carry = vbits[w] >> 63;
  }
  /* words is vwords or vwords + 1; a carry out of the last voxel word
   * (nx a multiple of 64) lands in the extra word */
  for (int64_t w = vwords; w <= words; w++) row[w] = w == vwords ? carry : 0;
  return n;
}

static inline const uint64_t *bit_row(const bit_rows *g, int64_t b, int64_t c) {
  if (b >= g->py || c >= g->pz) return g->zero;
  return g->bits + (size_t)((c * g->py + b) * (g->words + 1));
}

static inline int row_live(const bit_rows *g, int64_t b, int64_t c) {
  return b < g->py && c < g->pz && g->live[c * g->py + b];
}

/* Word w of row r shifted down by one point: bit a is point a + 1. */
static inline uint64_t shifted(const uint64_t *r, int64_t w) { return r[w] >> 1 | r[w + 1] << 63; }

/* The case of cube i of a word: the inside bits of its corners (a, a + 1)
 * of the rows r0 (b, c), r1 (b + 1, c), r2 (b, c + 1), r3 (b + 1, c + 1),
 * given as words and shifted words. */
static inline unsigned cube_case(const uint64_t q[8], int i) {
  unsigned cfg = 0;
  for (int k = 0; k < 8; k++) cfg |= (unsigned)(q[k] >> i & 1) << k;
  return cfg;
}

/* The corner words of the cubes of word w: rows 0..3 at a and at a + 1, in
 * the order of the case bits. Returns the cubes with corners on both sides. */
static inline uint64_t cube_words(const uint64_t *const r[4], int64_t w, uint64_t q[8]) {
  for (int k = 0; k < 4; k++) q[2 * k] = r[k][w], q[2 * k + 1] = shifted(r[k], w);
  uint64_t differ = 0;
  for (int k = 1; k < 8; k++) differ |= q[k] ^ q[0];
  return differ;
}

/* Pass 2 for row (b, c): the numbers of vertices (crossed edges from its
 * points) and of triangles (of its cubes). */
SURFACE_CLONES static void count_row(const bit_rows *g, const vox_cube_cases *cc, int64_t b,
                                     int64_t c, int64_t *n_vertices, int64_t *n_triangles) {
  int64_t nv = 0, nt = 0;
  const int live[4] = {row_live(g, b, c), row_live(g, b + 1, c), row_live(g, b, c + 1),
                       row_live(g, b + 1, c + 1)};
  const uint64_t *const r[4] = {bit_row(g, b, c), bit_row(g, b + 1, c), bit_row(g, b, c + 1),
                                bit_row(g, b + 1, c + 1)};
  if (live[0] || live[1] || live[2]) /* else no edge of the row crosses */
    for (int64_t w = 0; w < g->words; w++) {
      const uint64_t a0 = r[0][w];
      nv += __builtin_popcountll(a0 ^ shifted(r[0], w)) + __builtin_popcountll(a0 ^ r[1][w]) +
            __builtin_popcountll(a0 ^ r[2][w]);
    }
  if ((live[0] || live[1] || live[2] || live[3]) && b + 1 < g->py && c + 1 < g->pz)
    for (int64_t w = 0; w < g->words; w++) {
      uint64_t q[8];
      for (uint64_t mixed = cube_words(r, w, q); mixed; mixed &= mixed - 1)
        nt += cc->count[cube_case(q, __builtin_ctzll(mixed))];
    }
  *n_vertices = nv;
  *n_triangles = nt;
}

typedef struct extract_job {
  const field *f;
  const bit_rows *g;
  const vox_cube_cases *cc;
  const double *origin, *h;
  const int64_t *vertex_first, *triangle_first; /* per row */
  double *vertex;
  int64_t *triangle;
} extract_job;

/* Pass 3, vertices of row (b, c), in order of a then axis (x, y, z). No
 * clones here: the clone for x86-64-v3 could fuse the multiply-add, and
 * the vertices must be the GPU's bit for bit. */
static void emit_vertices(const extract_job *j, int64_t b, int64_t c) {
  const bit_rows *g = j->g;
  const field *f = j->f;
  const uint64_t *r0 = bit_row(g, b, c), *r1 = bit_row(g, b + 1, c), *r2 = bit_row(g, b, c + 1);
  double *v = j->vertex + 3 * (size_t)j->vertex_first[c * g->py + b];
  const double t = f->threshold;
  const double y = j->origin[1] + ((double)b - 0.5) * j->h[1];
  const double z = j->origin[2] + ((double)c - 0.5) * j->h[2];
  for (int64_t w = 0; w < g->words; w++) {
    const uint64_t cross[3] = {r0[w] ^ shifted(r0, w), r0[w] ^ r1[w], r0[w] ^ r2[w]};
    for (uint64_t any = cross[0] | cross[1] | cross[2]; any; any &= any - 1) {
      const int i = __builtin_ctzll(any);
      const int64_t a = 64 * w + i;
      const double f0 = point_value(f, a, b, c);
      const double x = j->origin[0] + ((double)a - 0.5) * j->h[0];
      for (int k = 0; k < 3; k++) {
        if (!(cross[k] >> i & 1)) continue;
        double f1 = point_value(f, a + (k == 0), b + (k == 1), c + (k == 2));
        double s = (t - f0) / (f1 - f0);
        if (!(s >= EDGE_EPS)) s = EDGE_EPS; /* also NaN */
        if (s > 1 - EDGE_EPS) s = 1 - EDGE_EPS;
        v[0] = x, v[1] = y, v[2] = z;
        v[k] += s * j->h[k];
        v += 3;
      }
    }
  }
}

/* A hint to load p's cache line. GCC drops a function made only of
 * __builtin_prefetch calls as having no effect, hence the asm on x86. */
static inline void prefetch(const void *p) {
#if defined(__x86_64__) && defined(__GNUC__)
  __asm__ volatile("prefetcht0 %0" : : "m"(*(const char *)p));
#else
  __builtin_prefetch(p);
#endif
}

/* Pass 3: the density at the vertices of row (b, c), asked for ahead of
 * emit_vertices. The field was read long before (pass 1), so these are
 * cache misses; asked for together, and while the row's triangles are
 * made, they overlap instead of each stalling the loop. */
static void prefetch_vertices(const extract_job *j, int64_t b, int64_t c) {
  const bit_rows *g = j->g;
  const field *f = j->f;
  if (f->kind != VOX_ISO_DENSITY || b < 1 || c < 1 || b > f->ny || c > f->nz) return;
  const uint64_t *r0 = bit_row(g, b, c), *r1 = bit_row(g, b + 1, c), *r2 = bit_row(g, b, c + 1);
  const int64_t nx = f->nx, ny = f->ny;
  const double *d = f->density + (size_t)(((c - 1) * ny + (b - 1)) * nx) - 1; /* point a */
  const int64_t dy = b < ny ? nx : 0, dz = c < f->nz ? nx * ny : 0; /* the next rows, if any */
  for (int64_t w = 0; w < g->words; w++) {
    const uint64_t x = r0[w] ^ shifted(r0, w), y = r0[w] ^ r1[w], z = r0[w] ^ r2[w];
    for (uint64_t any = x | y | z; any; any &= any - 1) {
      const int i = __builtin_ctzll(any);
      int64_t a = 64 * w + i;
      a = a < 1 ? 1 : a > nx ? nx : a; /* the padding reads no field */
      prefetch(d + a);
      if (y >> i & 1) prefetch(d + a + dy);
      if (z >> i & 1) prefetch(d + a + dz);
    }
  }
}

/* The number of crossed edges in a mask (3 bits). */
static const uint8_t bits3[8] = {0, 1, 1, 2, 1, 2, 2, 3};

/* Pass 3, triangles of the cubes of row (b, c). A cube's corner on edge
 * (point a of row r, axis k) is vertex vertex_first[r] + the crossed edges
 * of row r's points before a + those of point a on axes below k; the rows
 * r are (b, c), (b + 1, c), (b, c + 1), (b + 1, c + 1). `scratch`: 16
 * (words + 1) words. */
SURFACE_CLONES static void emit_triangles(const extract_job *j, int64_t b, int64_t c,
                                          uint64_t *scratch) {
  const bit_rows *g = j->g;
  const int64_t words = g->words, stride = words + 1, row = c * g->py + b;
  const uint64_t *const r[4] = {bit_row(g, b, c), bit_row(g, b + 1, c), bit_row(g, b, c + 1),
                                bit_row(g, b + 1, c + 1)};
  /* the crossed edges of the four rows by axis (cross[3 k + axis], a zero
   * word after each) and the vertices of each row before each word */
  uint64_t *cross[12];
  int64_t *before[4];
  int64_t first[4];
  for (int k = 0; k < 4; k++) {
    const int64_t bk = b + (k & 1), ck = c + (k >> 1);
    const uint64_t *rk = r[k], *ry = bit_row(g, bk + 1, ck), *rz = bit_row(g, bk, ck + 1);
    uint64_t *cx = scratch + (3 * k) * stride, *cy = cx + stride, *cz = cy + stride;
    before[k] = (int64_t *)(scratch + (12 + k) * stride);
    int64_t n = 0;
    for (int64_t w = 0; w < words; w++) {
      cx[w] = rk[w] ^ shifted(rk, w), cy[w] = rk[w] ^ ry[w], cz[w] = rk[w] ^ rz[w];
      before[k][w] = n;
      n += __builtin_popcountll(cx[w]) + __builtin_popcountll(cy[w]) +
           __builtin_popcountll(cz[w]);
    }
    cx[words] = cy[words] = cz[words] = 0;
    cross[3 * k] = cx, cross[3 * k + 1] = cy, cross[3 * k + 2] = cz;
    first[k] = j->vertex_first[ck * g->py + bk];
  }
  int64_t *tri = j->triangle + 3 * (size_t)j->triangle_first[row];
  const vox_cube_cases *cc = j->cc;
  /* a run of mixed cubes (a surface along x) carries its corners at a + 1
   * over to the next cube's corners at a */
  int64_t run_a = -1, run_at[4] = {0, 0, 0, 0};
  unsigned run_m[4] = {0, 0, 0, 0};
  for (int64_t w = 0; w < words; w++) {
    uint64_t q[8];
    uint64_t mixed = cube_words(r, w, q);
    if (!mixed) continue;
    /* the crossed edges of the word's points (p0) and of the next points (p1) */
    uint64_t p0[4][3], p1[4][3];
    int64_t base[4];
    for (int k = 0; k < 4; k++) {
      for (int axis = 0; axis < 3; axis++)
        p0[k][axis] = cross[3 * k + axis][w], p1[k][axis] = shifted(cross[3 * k + axis], w);
      base[k] = first[k] + before[k][w];
    }
    for (; mixed; mixed &= mixed - 1) {
      const int i = __builtin_ctzll(mixed);
      const int64_t a = 64 * w + i;
      const unsigned config = cube_case(q, i);
      /* the vertex of each of the cube's twelve edges, by code (u << 2 | axis) */
      int64_t id[32];
      for (int k = 0; k < 4; k++) {
        unsigned m0;
        int64_t at0;
        if (a == run_a) {
          m0 = run_m[k], at0 = run_at[k];
        } else {
          const uint64_t below = (1ull << i) - 1;
          m0 = (unsigned)(p0[k][0] >> i & 1) | (unsigned)(p0[k][1] >> i & 1) << 1 |
               (unsigned)(p0[k][2] >> i & 1) << 2;
          at0 = base[k] + __builtin_popcountll(p0[k][0] & below) +
                __builtin_popcountll(p0[k][1] & below) + __builtin_popcountll(p0[k][2] & below);
        }
        const unsigned m1 = (unsigned)(p1[k][0] >> i & 1) | (unsigned)(p1[k][1] >> i & 1) << 1 |
                            (unsigned)(p1[k][2] >> i & 1) << 2;
        const int64_t at1 = at0 + bits3[m0];
        const int u0 = 2 * k, u1 = 2 * k + 1; /* corners dx = 0, 1 of row k */
        id[u0 << 2 | 0] = at0;
        id[u0 << 2 | 1] = at0 + (m0 & 1);
        id[u0 << 2 | 2] = at0 + bits3[m0 & 3];
        id[u1 << 2 | 1] = at1 + (m1 & 1);
        id[u1 << 2 | 2] = at1 + bits3[m1 & 3];
        run_m[k] = m1, run_at[k] = at1;
      }
      run_a = a + 1;
      const int n = cc->count[config];
      const uint8_t(*e)[3] = cc->edge[config];
      for (int t = 0; t < n; t++, tri += 3)
        tri[0] = id[e[t][0]], tri[1] = id[e[t][1]], tri[2] = id[e[t][2]];
    }
  }
}

/* The case table, derived once per process (it takes milliseconds, as long
 * as the whole extraction of a small design) and then only read. */
static vox_cube_cases case_table;
static int case_table_status;
static pthread_once_t case_table_once = PTHREAD_ONCE_INIT;

static void build_case_table(void) {
  case_table_status = vox_cube_cases_build(&case_table);
#ifdef HAVE_AVX2_PATH
  have_avx2 = __builtin_cpu_supports("avx2");
#endif
}

static vox_status check_grid(vox_context *ctx, const vox_model *m, const char *what) {
  if (!m) return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "%s: no model given", what);
  const vox_grid *g = &m->grid;
  if (g->nx < 1 || g->ny < 1 || g->nz < 1)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "%s: grid size %lldx%lldx%lld is empty", what,
                     (long long)g->nx, (long long)g->ny, (long long)g->nz);
  /* padded points, and 3 doubles per vertex, must be countable */
  const int64_t limit = (int64_t)1 << 40;
  if (g->nx > limit || g->ny > limit || g->nz > limit ||
      (double)(g->nx + 2) * (double)(g->ny + 2) * (double)(g->nz + 2) > (double)limit)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "%s: grid size %lldx%lldx%lld is too large",
                     what, (long long)g->nx, (long long)g->ny, (long long)g->nz);
  for (int k = 0; k < 3; k++)
    if (!(g->voxel_size[k] > 0) || !isfinite(g->voxel_size[k]) || !isfinite(g->origin[k]))
      return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                       "%s: voxel size and origin must be finite, the size positive", what);
  return VOX_OK;
}

/* The error for a field with no point inside. */
static vox_status no_surface(vox_context *ctx, const field *f, const char *what) {
  if (f->kind == VOX_ISO_LABEL)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "%s: no voxel has label %d", what, f->which);
  if (f->kind == VOX_ISO_NONZERO)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "%s: every voxel is empty (label 0), there is no surface", what);
  return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                   "%s: no voxel has density >= %g, there is no surface", what, f->threshold);
}

static vox_status extract(vox_context *ctx, const vox_model *m, const field *f, const char *what,
                          vox_surface *out) {
  const vox_grid *gr = &m->grid;
  const int threads = thread_count(ctx);
  bit_rows g = {.px = gr->nx + 2, .py = gr->ny + 2, .pz = gr->nz + 2};
  g.words = (g.px + 63) / 64;
  const int64_t n_rows = g.py * g.pz, stride = g.words + 1;
  uint64_t *bits = big_alloc((size_t)(n_rows * stride) * sizeof *bits);
  uint64_t *zero = calloc((size_t)stride, sizeof *zero);
  uint8_t *live = malloc((size_t)n_rows);
  int64_t *vertex_first = malloc(((size_t)n_rows + 1) * sizeof *vertex_first);
  int64_t *triangle_first = malloc(((size_t)n_rows + 1) * sizeof *triangle_first);
  vox_status status = VOX_OK;
  if (!bits || !zero || !live || !vertex_first || !triangle_first) {
    status = vox_error(ctx, VOX_ERR_NO_MEMORY, "%s: out of memory", what);
    goto done;
  }
  pthread_once(&case_table_once, build_case_table);
  const vox_cube_cases *cc = &case_table;
  if (case_table_status != 0) {
    status = vox_error(ctx, VOX_ERR_UNSUPPORTED,
                       "%s: internal error: the marching-cubes table is inconsistent", what);
    goto done;
  }
  g.bits = bits, g.live = live, g.zero = zero;

  /* One parallel region for the three passes, with a barrier between them,
   * and rows handed out in small chunks as threads come free: on a machine
   * shared with other work a thread that loses its core for a while then
   * leaves its rows to the others instead of holding all of them up at the
   * next barrier (static halves made the wall time several times the CPU
   * time there). Every row's result depends only on the row, so the output
   * is the same whatever thread does what. */
  int64_t n_inside = 0, n_vertices = 0, n_triangles = 0;
  int failed = 0;     /* 1 out of scratch memory, 2 out of memory for the mesh */
  extract_job job = {.f = f, .g = &g, .cc = cc, .origin = gr->origin, .h = gr->voxel_size,
                     .vertex_first = vertex_first, .triangle_first = triangle_first};
#pragma omp parallel num_threads(threads)
  {
    /* pass 1's voxel bits, then pass 3's crossed edges and counts */
    const size_t scratch_words = (size_t)(16 * stride) > ((size_t)gr->nx + 63) / 64
                                     ? (size_t)(16 * stride)
                                     : ((size_t)gr->nx + 63) / 64;
    uint64_t *scratch = malloc(scratch_words * sizeof *scratch);
    if (!scratch) {
#pragma omp atomic write
      failed = 1;
    }
    /* 1. inside bits */
    int64_t mine = 0;
#pragma omp for schedule(dynamic, 64)
    for (int64_t row = 0; row < n_rows; row++)
      if (scratch) {
        const int64_t n = fill_bit_row(f, row % g.py, row / g.py, g.words,
                                       bits + (size_t)(row * stride), scratch);
        live[row] = n > 0;
        mine += n;
      }
#pragma omp atomic
    n_inside += mine;
#pragma omp barrier
    /* 2. counts (row counts first, then prefix sums in place) */
    int stop;
#pragma omp atomic read
    stop = failed;
    if (!stop && n_inside > 0) { /* the same for every thread, after the barrier */
#pragma omp for schedule(dynamic, 64)
      for (int64_t row = 0; row < n_rows; row++)
        count_row(&g, cc, row % g.py, row / g.py, &vertex_first[row + 1],
                  &triangle_first[row + 1]);
#pragma omp single
      {
        vertex_first[0] = triangle_first[0] = 0;
        for (int64_t row = 0; row < n_rows; row++) {
          vertex_first[row + 1] += vertex_first[row];
          triangle_first[row + 1] += triangle_first[row];
        }
        n_vertices = vertex_first[n_rows], n_triangles = triangle_first[n_rows];
        if ((uint64_t)n_vertices <= SIZE_MAX / (3 * sizeof(double)) &&
            (uint64_t)n_triangles <= SIZE_MAX / (3 * sizeof(int64_t))) {
          out->vertex = big_alloc((size_t)n_vertices * 3 * sizeof *out->vertex);
          out->triangle = big_alloc((size_t)n_triangles * 3 * sizeof *out->triangle);
        }
        if (!out->vertex || !out->triangle) failed = 2;
        job.vertex = out->vertex, job.triangle = out->triangle;
      } /* (the single's barrier) */
      /* 3. vertices and triangles */
      if (!failed) {
#pragma omp for schedule(dynamic, 16)
        for (int64_t row = 0; row < n_rows; row++) {
          const int vertices = vertex_first[row + 1] != vertex_first[row];
          if (vertices) prefetch_vertices(&job, row % g.py, row / g.py);
          if (triangle_first[row + 1] != triangle_first[row])
            emit_triangles(&job, row % g.py, row / g.py, scratch);
          if (vertices) emit_vertices(&job, row % g.py, row / g.py);
        }
      }
    }
    free(scratch);
  }
  if (failed) {
    vox_surface_free(out);
    status = failed == 2 ? vox_error(ctx, VOX_ERR_NO_MEMORY,
                                     "%s: out of memory for %lld vertices and %lld triangles",
                                     what, (long long)n_vertices, (long long)n_triangles)
                         : vox_error(ctx, VOX_ERR_NO_MEMORY, "%s: out of memory", what);
    goto done;
  }
  if (n_inside == 0) {
    status = no_surface(ctx, f, what);
    goto done;
  }
  out->n_vertices = (size_t)n_vertices;
  out->n_triangles = (size_t)n_triangles;

done:
  free(bits);
  free(zero);
  free(live);
  free(vertex_first);
  free(triangle_first);
  return status;
}

/* The extraction on `device` (surface.h says how AUTO decides). */
static vox_status extract_on(vox_context *ctx, const vox_model *m, const field *f,
                             const char *what, vox_device device, vox_surface *out,
                             vox_isosurface_info *info) {
  vox_isosurface_info local;
  if (!info) info = &local;
  memset(info, 0, sizeof *info);
  info->device = VOX_DEVICE_CPU;
  if (device != VOX_DEVICE_AUTO && device != VOX_DEVICE_CPU && device != VOX_DEVICE_CUDA)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "%s: unknown device %d", what, (int)device);
  /* AUTO stays on the CPU: with the field in host memory, its transfer to
   * the device and the mesh's back take longer than the whole extraction on
   * a multi-core host, even through pinned staging (docs/benchmarks.md) */
  if (device == VOX_DEVICE_CUDA) {
    pthread_once(&case_table_once, build_case_table);
    if (case_table_status != 0)
      return vox_error(ctx, VOX_ERR_UNSUPPORTED,
                       "%s: internal error: the marching-cubes table is inconsistent", what);
    vox_status status = vox_gpu_isosurface(ctx, f, &case_table, m->grid.origin,
                                           m->grid.voxel_size, &out->vertex, &out->n_vertices,
                                           &out->triangle, &out->n_triangles,
                                           &info->seconds_device);
    if (status == VOX_OK) {
      info->device = VOX_DEVICE_CUDA;
      if (out->n_vertices > 0) return VOX_OK;
      vox_surface_free(out);
      return no_surface(ctx, f, what);
    }
    vox_surface_free(out);
    info->seconds_device = 0;
    /* AUTO on a machine without a usable device goes on on the CPU */
    return status;
  }
  return extract(ctx, m, f, what, out);
}

vox_status vox_isosurface_density(vox_context *ctx, const vox_model *model, double threshold,
                                  vox_surface *out) {
  return vox_isosurface_density_on(ctx, model, threshold, VOX_DEVICE_CPU, out, NULL);
}

vox_status vox_isosurface_label(vox_context *ctx, const vox_model *model, int label,
                                vox_surface *out) {
  return vox_isosurface_label_on(ctx, model, label, VOX_DEVICE_CPU, out, NULL);
}

vox_status vox_isosurface_density_on(vox_context *ctx, const vox_model *model, double threshold,
                                     vox_device device, vox_surface *out,
                                     vox_isosurface_info *info) {
  const char *what = "isosurface";
  if (!out) return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "%s: no output surface given", what);
  memset(out, 0, sizeof *out);
  vox_status s = check_grid(ctx, model, what);
  if (s != VOX_OK) return s;
  const vox_grid *g = &model->grid;
  field f = {.nx = g->nx, .ny = g->ny, .nz = g->nz};
  if (model->density) {
    if (!(threshold > 0) || !isfinite(threshold))
      return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                       "%s: the density threshold must be a number > 0, not %g", what, threshold);
    f.kind = VOX_ISO_DENSITY, f.density = model->density, f.threshold = threshold;
  } else {
    if (!model->label)
      return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "%s: the model has no labels", what);
    f.kind = VOX_ISO_NONZERO, f.label = model->label, f.threshold = 0.5;
  }
  return extract_on(ctx, model, &f, what, device, out, info);
}

vox_status vox_isosurface_label_on(vox_context *ctx, const vox_model *model, int label,
                                   vox_device device, vox_surface *out,
                                   vox_isosurface_info *info) {
  const char *what = "label surface";
  if (!out) return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "%s: no output surface given", what);
  memset(out, 0, sizeof *out);
  vox_status s = check_grid(ctx, model, what);
  if (s != VOX_OK) return s;
  if (label < 0 || label > 255)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "%s: label %d is not in 0..255", what, label);
  if (!model->label)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "%s: the model has no labels", what);
  const vox_grid *g = &model->grid;
  field f = {.kind = VOX_ISO_LABEL, .label = model->label, .which = (uint8_t)label,
             .threshold = 0.5, .nx = g->nx, .ny = g->ny, .nz = g->nz};
  return extract_on(ctx, model, &f, what, device, out, info);
}

/* --- smoothing ------------------------------------------------------------------- */

/* Every triangle's indices in range; `what` names the caller. */
static vox_status check_surface(vox_context *ctx, const vox_surface *s, const char *what) {
  if (!s) return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "%s: no surface given", what);
  if ((s->n_vertices && !s->vertex) || (s->n_triangles && !s->triangle))
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "%s: the surface has no arrays", what);
  const int64_t nv = (int64_t)s->n_vertices;
  const size_t n = 3 * s->n_triangles;
  const int64_t *t = s->triangle;
  int bad = 0;
#pragma omp parallel for num_threads(thread_count(ctx)) schedule(static) reduction(| : bad)
  for (size_t i = 0; i < n; i++) bad |= t[i] < 0 || t[i] >= nv;
  if (bad)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "%s: a triangle has a vertex index outside 0..%lld", what,
                     (long long)nv - 1);
  return VOX_OK;
}

vox_status vox_surface_smooth(vox_context *ctx, vox_surface *s, int iterations) {
  const char *what = "smoothing";
  vox_status status = check_surface(ctx, s, what);
  if (status != VOX_OK) return status;
  if (iterations < 0)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "%s: %d iterations (must be >= 0)", what,
                     iterations);
  if (iterations == 0 || s->n_vertices == 0 || s->n_triangles == 0) return VOX_OK;
  const size_t nv = s->n_vertices, nh = 3 * s->n_triangles;
  const int threads = thread_count(ctx);
  /* neighbours: the ends of the half-edges from each vertex; in a closed
   * 2-manifold each edge has one half-edge each way, so every neighbour is
   * listed once */
  size_t *first = calloc(nv + 1, sizeof *first);
  int64_t *next = malloc(nh * sizeof *next);
  double *other = malloc(3 * nv * sizeof *other);
  size_t *cursor = malloc(nv * sizeof *cursor);
  if (!first || !next || !other || !cursor) {
    free(cursor);
    free(first);
    free(next);
    free(other);
    return vox_error(ctx, VOX_ERR_NO_MEMORY, "%s: out of memory", what);
  }
  const int64_t *t = s->triangle;
  for (size_t i = 0; i < nh; i++) first[t[i] + 1]++;
  for (size_t v = 0; v < nv; v++) first[v + 1] += first[v];
  /* fill in triangle order, so the result does not depend on threads */
  for (size_t v = 0; v < nv; v++) cursor[v] = first[v];
  for (size_t i = 0; i < nh; i++) {
    size_t from = i, to = i % 3 == 2 ? i - 2 : i + 1;
    next[cursor[t[from]]++] = t[to];
  }
  free(cursor);

  double *x = s->vertex, *y = other;
  static const double factor[2] = {0.5, -0.53};
  for (int it = 0; it < 2 * iterations; it++) {
    const double lambda = factor[it & 1];
#pragma omp parallel for num_threads(threads) schedule(static)
    for (size_t v = 0; v < nv; v++) {
      double sum[3] = {0, 0, 0};
      size_t n = first[v + 1] - first[v];
      for (size_t k = first[v]; k < first[v + 1]; k++)
        for (int c = 0; c < 3; c++) sum[c] += x[3 * next[k] + c];
      for (int c = 0; c < 3; c++)
        y[3 * v + c] = n ? x[3 * v + c] + lambda * (sum[c] / (double)n - x[3 * v + c])
                         : x[3 * v + c];
    }
    double *swap = x;
    x = y;
    y = swap;
  }
  /* an even number of steps: the result is back in s->vertex */
  free(first);
  free(next);
  free(other);
  return VOX_OK;
}

/* --- STL ----------------------------------------------------------------------------- */

/* 0 or the errno of the failure. */
static void put_u32(unsigned char *p, uint32_t u) {
  p[0] = (unsigned char)u, p[1] = (unsigned char)(u >> 8), p[2] = (unsigned char)(u >> 16),
  p[3] = (unsigned char)(u >> 24);
}

static float to_float(double v) {
  if (v > (double)FLT_MAX) return INFINITY; /* a plain cast would be undefined */
  if (v < -(double)FLT_MAX) return -INFINITY;
  return (float)v;
}

/* The triangle's corners as floats and its unit right-hand normal, computed
 * from those floats (their differences are exact in double), so that readers
 * that check the normals against the corners (admesh) find them right even
 * for small triangles. */
static void facet(const vox_surface *s, size_t i, float n[3], float p[3][3]) {
  const int64_t *t = s->triangle + 3 * i;
  for (int k = 0; k < 3; k++)
    for (int c = 0; c < 3; c++) p[k][c] = to_float(s->vertex[3 * t[k] + c]);
  double u[3], v[3];
  for (int c = 0; c < 3; c++)
    u[c] = (double)p[1][c] - (double)p[0][c], v[c] = (double)p[2][c] - (double)p[0][c];
  double m[3] = {u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0]};
  double len = sqrt(m[0] * m[0] + m[1] * m[1] + m[2] * m[2]);
  for (int c = 0; c < 3; c++) n[c] = len > 0 ? (float)(m[c] / len) : 0.0f;
}

#define STL_BLOCK 16384                 /* triangles formatted by one task */
#define STL_ASCII_MAX 480               /* bytes of one ASCII facet, at most */

/* Formats triangles [first, first + count) into dst; returns the bytes. */
static size_t format_block(const vox_surface *s, size_t first, size_t count, int binary,
                           char *dst) {
  char *p = dst;
  for (size_t i = first; i < first + count; i++) {
    float n[3], v[3][3];
    facet(s, i, n, v);
    if (binary) {
      unsigned char *b = (unsigned char *)p;
      const float *all[4] = {n, v[0], v[1], v[2]};
      for (int k = 0; k < 4; k++)
        for (int c = 0; c < 3; c++) {
          uint32_t u;
          memcpy(&u, &all[k][c], 4);
          put_u32(b + 12 * k + 4 * c, u);
        }
      b[48] = b[49] = 0;
      p += 50;
    } else {
      p += snprintf(p, STL_ASCII_MAX,
                    "  facet normal %.8e %.8e %.8e\n    outer loop\n"
                    "      vertex %.8e %.8e %.8e\n      vertex %.8e %.8e %.8e\n"
                    "      vertex %.8e %.8e %.8e\n    endloop\n  endfacet\n",
                    n[0], n[1], n[2], v[0][0], v[0][1], v[0][2], v[1][0], v[1][1], v[1][2],
                    v[2][0], v[2][1], v[2][2]);
    }
  }
  return (size_t)(p - dst);
}

vox_status vox_write_stl(vox_context *ctx, const char *path, const vox_surface *s, int binary) {
  if (!path || !*path) return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "no output path given");
  vox_status status = check_surface(ctx, s, path);
  if (status != VOX_OK) return status;
  if (s->n_triangles == 0)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "%s: the surface has no triangles", path);
  if (binary && s->n_triangles > UINT32_MAX)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "%s: %zu triangles are more than binary STL can count", path,
                     s->n_triangles);

  const int threads = thread_count(ctx);
  const size_t per_round = 2 * (size_t)threads;
  const size_t block_bytes = STL_BLOCK * (size_t)(binary ? 50 : STL_ASCII_MAX);
  char *buffer = malloc(per_round * block_bytes);
  size_t *used = malloc(per_round * sizeof *used);
  if (!buffer || !used) {
    free(buffer);
    free(used);
    return vox_error(ctx, VOX_ERR_NO_MEMORY, "%s: out of memory", path);
  }
  char *tmp = NULL;
  int fd = vox_open_temp(path, &tmp);
  int err = fd < 0 ? errno : 0;

  if (!err) {
    char head[128];
    size_t head_size;
    if (binary) {
      unsigned char bin[84] = {0};
      snprintf((char *)bin, 80, "voxfe %s binary STL, units mm", vox_version());
      put_u32(bin + 80, (uint32_t)s->n_triangles);
      memcpy(head, bin, 84);
      head_size = 84;
    } else {
      head_size = (size_t)snprintf(head, sizeof head, "solid voxfe\n");
    }
    err = vox_write_all(fd, head, head_size);
  }
  const size_t n_blocks = (s->n_triangles + STL_BLOCK - 1) / STL_BLOCK;
  for (size_t round = 0; !err && round < n_blocks; round += per_round) {
    size_t count = n_blocks - round < per_round ? n_blocks - round : per_round;
#pragma omp parallel for num_threads(threads) schedule(dynamic) if (count > 1)
    for (size_t k = 0; k < count; k++) {
      size_t first = (round + k) * STL_BLOCK;
      size_t n = s->n_triangles - first < STL_BLOCK ? s->n_triangles - first : STL_BLOCK;
      used[k] = format_block(s, first, n, binary, buffer + k * block_bytes);
    }
    for (size_t k = 0; !err && k < count; k++) err = vox_write_all(fd, buffer + k * block_bytes, used[k]);
  }
  if (!err && !binary) err = vox_write_all(fd, "endsolid voxfe\n", strlen("endsolid voxfe\n"));
  free(buffer);
  free(used);

  if (fd >= 0) err = vox_commit_temp(fd, tmp, path, err);
  else free(tmp);
  if (err) return vox_error(ctx, VOX_ERR_IO, "%s: cannot write: %s", path, strerror(err));
  return VOX_OK;
}
