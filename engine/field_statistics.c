/* SPDX-License-Identifier: BSD-3-Clause */
/* Statistics of element fields and the Pistoia failure load
 * (voxfe/analysis.h): mean, standard deviation, extremes and percentiles of
 * a clinical sample's 3 M values each, on all threads.
 *
 * Order statistics by radix selection: a pass over the values counts them
 * in 65 536 buckets of the top 16 bits of an order-preserving integer key
 * (sign, exponent and 4 bits of mantissa); the buckets that hold the wanted
 * ranks are copied out (usually a small part of the values) and the ranks
 * selected there exactly. The values themselves are never copied or
 * reordered. Sums go by fixed chunks in chunk order, so every result is the
 * same on any number of threads; threads take the chunks as they come
 * free (a writer thread may share a core meanwhile). Few values (below RADIX_MIN) take the
 * serial selection on a copy. */
#include "voxfe/analysis.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

enum {
  RADIX_BITS = 16,
  RADIX_BUCKETS = 1 << RADIX_BITS,
  CHUNK = 1 << 14,       /* values per chunk of the parallel passes */
  RADIX_MIN = 1 << 15,   /* fewer values: serial selection on a copy */
  MAX_RANKS = 2 * VOX_STAT_PERCENTILES
};

static vox_status out_of_memory(vox_context *ctx) {
  return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
}

/* Rearranges x[0..n) so that x[k] is the value a full ascending sort would
 * put there, smaller or equal values before it and larger or equal after
 * (Hoare's selection with a median-of-three pivot: O(n) on average). NaNs
 * are not expected: the callers pass bone values. */
static void select_kth(double *x, size_t n, size_t k) {
  size_t lo = 0, hi = n - 1;
  while (hi > lo) {
    const size_t mid = lo + (hi - lo) / 2;
    double a = x[lo], b = x[mid], c = x[hi];
    const double pivot = a < b ? (b < c ? b : (a < c ? c : a)) : (a < c ? a : (b < c ? c : b));
    size_t i = lo, j = hi;
    while (i <= j) {
      while (x[i] < pivot) i++;
      while (x[j] > pivot) j--;
      if (i <= j) {
        const double t = x[i];
        x[i] = x[j], x[j] = t;
        i++;
        if (j == 0) break;
        j--;
      }
    }
    if (k <= j)
      hi = j;
    else if (k >= i)
      lo = i;
    else
      return; /* between j and i: equal to the pivot */
  }
}

/* The values a request names: values[i * stride + offset] where active[i]
 * (NULL: all) for i in [0, n). */
typedef struct field {
  const double *values;
  size_t n, stride, offset;
  const uint8_t *active;
} field;

static inline int has(const field *f, size_t i) { return !f->active || f->active[i]; }
/* The end of chunk c of [0, n). */
static inline size_t chunk_end(ptrdiff_t c, size_t n) {
  const size_t end = (size_t)(c + 1) * CHUNK;
  return end < n ? end : n;
}
static inline double value(const field *f, size_t i) {
  return f->values[i * f->stride + f->offset];
}

/* A key whose unsigned order is the doubles' order (-0 before +0). */
static inline uint64_t order_key(double v) {
  uint64_t u;
  memcpy(&u, &v, sizeof u);
  return u >> 63 ? ~u : u | (uint64_t)1 << 63;
}
static inline unsigned bucket_of(double v) {
  return (unsigned)(order_key(v) >> (64 - RADIX_BITS));
}

/* Sorts ranks[0..n) ascending (n is at most MAX_RANKS). */
static void sort_ranks(size_t *r, int n) {
  for (int a = 1; a < n; a++)
    for (int b = a; b > 0 && r[b] < r[b - 1]; b--) {
      const size_t t = r[b];
      r[b] = r[b - 1], r[b - 1] = t;
    }
}

/* out[i] = the ranks[i]-th smallest (0-based, < m) of the field's m values,
 * ranks ascending, by radix selection (above). */
static vox_status radix_select(vox_context *ctx, const field *f, const size_t *ranks, int n_ranks,
                               double *out) {
  const int threads = omp_get_max_threads();
  uint32_t *hist = calloc((size_t)threads * RADIX_BUCKETS, sizeof *hist);
  size_t *total = calloc(RADIX_BUCKETS + 1, sizeof *total);
  if (!hist || !total) {
    free(hist), free(total);
    return out_of_memory(ctx);
  }
  const ptrdiff_t chunks = (ptrdiff_t)((f->n + CHUNK - 1) / CHUNK);
#pragma omp parallel num_threads(threads)
  {
    uint32_t *h = hist + (size_t)omp_get_thread_num() * RADIX_BUCKETS;
#pragma omp for schedule(dynamic, 1)
    for (ptrdiff_t c = 0; c < chunks; c++) {
      const size_t end = chunk_end(c, f->n);
      for (size_t i = (size_t)c * CHUNK; i < end; i++)
        if (has(f, i)) h[bucket_of(value(f, i))]++;
    }
  }
#pragma omp parallel for schedule(static)
  for (ptrdiff_t b = 0; b < RADIX_BUCKETS; b++) {
    size_t s = 0;
    for (int t = 0; t < threads; t++) s += hist[(size_t)t * RADIX_BUCKETS + (size_t)b];
    total[b + 1] = s;
  }
  free(hist);
  for (size_t b = 0; b < RADIX_BUCKETS; b++) total[b + 1] += total[b]; /* b's first rank */
  /* the buckets of the ranks (ascending, so the buckets are too) */
  unsigned bucket[MAX_RANKS];
  int n_buckets = 0, slot_of_rank[MAX_RANKS];
  for (int r = 0; r < n_ranks; r++) {
    size_t lo = 0, hi = RADIX_BUCKETS; /* the bucket b with total[b] <= rank < total[b + 1] */
    while (hi - lo > 1) {
      const size_t mid = (lo + hi) / 2;
      if (total[mid] <= ranks[r])
        lo = mid;
      else
        hi = mid;
    }
    if (n_buckets == 0 || bucket[n_buckets - 1] != (unsigned)lo)
      bucket[n_buckets++] = (unsigned)lo;
    slot_of_rank[r] = n_buckets - 1;
  }
  /* the buckets' values copied out: each chunk counts its own, reserves
   * its places with one atomic add a bucket, then copies (its values are
   * still in cache) */
  double *buf[MAX_RANKS] = {NULL};
  size_t fill[MAX_RANKS] = {0};
  int failed = 0;
  for (int q = 0; q < n_buckets; q++)
    failed |= !(buf[q] = malloc((total[bucket[q] + 1] - total[bucket[q]]) * sizeof *buf[q]));
  if (!failed) {
#pragma omp parallel for schedule(dynamic, 1)
    for (ptrdiff_t c = 0; c < chunks; c++) {
      const size_t end = chunk_end(c, f->n);
      size_t count[MAX_RANKS] = {0}, at[MAX_RANKS] = {0};
      for (size_t i = (size_t)c * CHUNK; i < end; i++)
        if (has(f, i)) {
          const unsigned b = bucket_of(value(f, i));
          for (int q = 0; q < n_buckets; q++) count[q] += b == bucket[q];
        }
      for (int q = 0; q < n_buckets; q++)
        if (count[q]) at[q] = __atomic_fetch_add(&fill[q], count[q], __ATOMIC_RELAXED);
      for (size_t i = (size_t)c * CHUNK; i < end; i++)
        if (has(f, i)) {
          const double v = value(f, i);
          const unsigned b = bucket_of(v);
          for (int q = 0; q < n_buckets; q++)
            if (b == bucket[q]) buf[q][at[q]++] = v;
        }
    }
    /* each rank within its bucket, in increasing order so that a selection
     * works on the part above the previous one of the same bucket */
    size_t from[MAX_RANKS] = {0};
    for (int r = 0; r < n_ranks; r++) {
      const int q = slot_of_rank[r];
      const size_t k = ranks[r] - total[bucket[q]], n = fill[q];
      select_kth(buf[q] + from[q], n - from[q], k - from[q]);
      out[r] = buf[q][k];
      from[q] = k;
    }
  }
  for (int q = 0; q < n_buckets; q++) free(buf[q]);
  free(total);
  return failed ? out_of_memory(ctx) : VOX_OK;
}

/* The same by serial selection on a copy of the m values. */
static vox_status copy_select(vox_context *ctx, const field *f, size_t m, const size_t *ranks,
                              int n_ranks, double *out) {
  double *x = malloc(m * sizeof *x);
  if (!x) return out_of_memory(ctx);
  size_t k = 0;
  for (size_t i = 0; i < f->n; i++)
    if (has(f, i)) x[k++] = value(f, i);
  size_t from = 0;
  for (int r = 0; r < n_ranks; r++) {
    select_kth(x + from, m - from, ranks[r] - from);
    out[r] = x[ranks[r]];
    from = ranks[r];
  }
  free(x);
  return VOX_OK;
}

/* out[i] = the ranks[i]-th smallest of the field's m values (ranks < m). */
static vox_status select_ranks(vox_context *ctx, const field *f, size_t m, size_t *ranks,
                               int n_ranks, double *out) {
  size_t order[MAX_RANKS];
  int index[MAX_RANKS];
  for (int r = 0; r < n_ranks; r++) order[r] = ranks[r];
  sort_ranks(order, n_ranks);
  double sorted_out[MAX_RANKS] = {0};
  vox_status s = m < RADIX_MIN ? copy_select(ctx, f, m, order, n_ranks, sorted_out)
                               : radix_select(ctx, f, order, n_ranks, sorted_out);
  if (s) return s;
  for (int r = 0; r < n_ranks; r++) {
    index[r] = 0;
    while (order[index[r]] != ranks[r]) index[r]++;
    out[r] = sorted_out[index[r]];
  }
  return VOX_OK;
}

double vox_pistoia_failure_load(const double *effective_strain, size_t n, double load,
                                double critical_strain, double critical_volume) {
  if (n == 0 || !(critical_volume > 0 && critical_volume <= 1)) return NAN;
  /* ceil with a guard against 0.02 * 1000 = 20.000000000000004 */
  size_t k = (size_t)ceil(critical_volume * (double)n - 1e-9);
  if (k < 1) k = 1;
  if (k > n) k = n;
  /* the k-th largest is the (n - k)-th smallest, counting from 0 */
  const field f = {effective_strain, n, 1, 0, NULL};
  size_t rank = n - k;
  double strain;
  if (select_ranks(NULL, &f, n, &rank, 1, &strain)) return NAN;
  return strain > 0 ? load * critical_strain / strain : NAN;
}

const double vox_stat_percentiles[VOX_STAT_PERCENTILES] = {5, 25, 50, 75, 95};

vox_status vox_field_statistics(vox_context *ctx, const double *values, size_t n, size_t stride,
                                size_t offset, const uint8_t *active, vox_field_stats *stats) {
  const field f = {values, n, stride, offset, active};
  stats->mean = stats->sd = stats->min = stats->max = NAN;
  for (int p = 0; p < VOX_STAT_PERCENTILES; p++) stats->percentile[p] = NAN;
  /* per chunk: the count, sum, extremes; then the squares about the mean
   * (two passes: no cancellation); the chunks' parts added in order */
  const ptrdiff_t chunks = (ptrdiff_t)((n + CHUNK - 1) / CHUNK);
  double *part = malloc(((size_t)chunks + 1) * 4 * sizeof *part);
  if (!part) return out_of_memory(ctx);
#pragma omp parallel for schedule(dynamic, 1)
  for (ptrdiff_t c = 0; c < chunks; c++) {
    const size_t end = chunk_end(c, n);
    double count = 0, sum = 0, lo = INFINITY, hi = -INFINITY;
    for (size_t i = (size_t)c * CHUNK; i < end; i++)
      if (has(&f, i)) {
        const double v = value(&f, i);
        count++, sum += v;
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
      }
    part[4 * c] = count, part[4 * c + 1] = sum, part[4 * c + 2] = lo, part[4 * c + 3] = hi;
  }
  double count = 0, sum = 0;
  for (ptrdiff_t c = 0; c < chunks; c++) {
    count += part[4 * c], sum += part[4 * c + 1];
    if (part[4 * c] > 0) {
      stats->min = !(part[4 * c + 2] >= stats->min) ? part[4 * c + 2] : stats->min;
      stats->max = !(part[4 * c + 3] <= stats->max) ? part[4 * c + 3] : stats->max;
    }
  }
  const size_t m = (size_t)count;
  if (m == 0) {
    free(part);
    stats->min = stats->max = NAN;
    return VOX_OK;
  }
  const double mean = sum / (double)m;
#pragma omp parallel for schedule(dynamic, 1)
  for (ptrdiff_t c = 0; c < chunks; c++) {
    const size_t end = chunk_end(c, n);
    double ss = 0;
    for (size_t i = (size_t)c * CHUNK; i < end; i++)
      if (has(&f, i)) ss += (value(&f, i) - mean) * (value(&f, i) - mean);
    part[4 * c] = ss;
  }
  double ss = 0;
  for (ptrdiff_t c = 0; c < chunks; c++) ss += part[4 * c];
  free(part);
  stats->mean = mean;
  stats->sd = sqrt(ss / (double)m);
  /* the percentiles (linear interpolation between order statistics, as
   * numpy's default): the ranks at and just above each position */
  size_t ranks[MAX_RANKS];
  double pos[VOX_STAT_PERCENTILES], at[MAX_RANKS];
  for (int p = 0; p < VOX_STAT_PERCENTILES; p++) {
    pos[p] = vox_stat_percentiles[p] / 100 * (double)(m - 1);
    const size_t lo = (size_t)floor(pos[p]);
    ranks[2 * p] = lo;
    ranks[2 * p + 1] = lo + 1 < m ? lo + 1 : lo;
  }
  vox_status s = select_ranks(ctx, &f, m, ranks, MAX_RANKS, at);
  if (s) return s;
  for (int p = 0; p < VOX_STAT_PERCENTILES; p++)
    stats->percentile[p] =
        at[2 * p] + (pos[p] - (double)ranks[2 * p]) * (at[2 * p + 1] - at[2 * p]);
  return VOX_OK;
}

vox_status vox_field_statistics_many(vox_context *ctx, const vox_stats_request *requests,
                                     size_t count, vox_field_stats *stats) {
  /* one after another, each on all threads */
  for (size_t i = 0; i < count; i++) {
    const vox_stats_request *r = &requests[i];
    vox_status s = vox_field_statistics(ctx, r->values, r->n, r->stride, r->offset, r->active,
                                        &stats[i]);
    if (s) return s;
  }
  return VOX_OK;
}
