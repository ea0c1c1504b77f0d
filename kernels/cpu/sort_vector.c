/* sort_vector.c - a bitonic sorting network and a quicksort over AVX2 vectors of unsigned 32-bit
 * keys (see sort_vector.h).
 *
 * Key i of the padded run sits in lane i % 8 of vector i / 8. The network is Batcher's bitonic
 * sort in the form whose every comparator puts the smaller key at the lower index: merging two
 * sorted blocks into one of k keys first compares key i with key i ^ (k - 1) (the second block
 * reversed against the first), then key i with key i ^ j for j = k / 4, ..., 2, 1. Comparators
 * between keys 8 or more apart join two whole vectors (a min and a max); those between keys of one
 * vector permute the vector against itself, take min and max and blend them so that the lower
 * lane of each pair keeps the min. */
#include "sort_vector.h"

#include <string.h>

#include "cpu_isa.h"

#if defined(__GNUC__) && defined(__x86_64__) && !defined(CT_NO_ISA_VARIANTS)
#include <immintrin.h>
#define CT_SORT_VECTOR_AVX2 1
#endif

#ifdef CT_SORT_VECTOR_AVX2

#define CT_NET_TARGET __attribute__((target("avx2")))

/* One comparator stage inside vector V: lane l meets lane PERM(V)'s l, and the lanes in UPPER
 * (a blend mask: the higher lane of each pair) keep the max. */
#define CT_NET_LANES(V, PERM, UPPER)                                                             \
  do {                                                                                           \
    const __m256i ct_p = PERM(V);                                                                \
    (V) = _mm256_blend_epi32(_mm256_min_epu32((V), ct_p), _mm256_max_epu32((V), ct_p), (UPPER)); \
  } while (0)
/* The partner lanes: l ^ 1, l ^ 2, l ^ 4, 3 - l within each half, 7 - l. */
#define CT_NET_XOR1(v) _mm256_shuffle_epi32((v), 0xb1)
#define CT_NET_XOR2(v) _mm256_shuffle_epi32((v), 0x4e)
#define CT_NET_XOR4(v) _mm256_permute2x128_si256((v), (v), 0x01)
#define CT_NET_FLIP3(v) _mm256_shuffle_epi32((v), 0x1b)
#define CT_NET_FLIP7(v) _mm256_permutevar8x32_epi32((v), _mm256_setr_epi32(7, 6, 5, 4, 3, 2, 1, 0))

/* The comparators inside one vector that end each merge of blocks of 8 or more keys: distances
 * 4, 2, 1. */
#define CT_NET_FINISH(V)                \
  do {                                  \
    CT_NET_LANES(V, CT_NET_XOR4, 0xf0); \
    CT_NET_LANES(V, CT_NET_XOR2, 0xcc); \
    CT_NET_LANES(V, CT_NET_XOR1, 0xaa); \
  } while (0)

/* Sorts the 8 keys of vector V: the merges of blocks of 2, 4 and 8 keys, inside the vector. */
#define CT_NET_SORT_LANES(V)             \
  do {                                   \
    CT_NET_LANES(V, CT_NET_XOR1, 0xaa);  \
    CT_NET_LANES(V, CT_NET_FLIP3, 0xcc); \
    CT_NET_LANES(V, CT_NET_XOR1, 0xaa);  \
    CT_NET_LANES(V, CT_NET_FLIP7, 0xf0); \
    CT_NET_LANES(V, CT_NET_XOR2, 0xcc);  \
    CT_NET_LANES(V, CT_NET_XOR1, 0xaa);  \
  } while (0)

/* The comparators that open the merge of two sorted halves of r[0..kv): the second half reversed
 * against the first (vector t against vector kv - 1 - t, lanes reversed). */
CT_NET_TARGET __attribute__((always_inline)) static inline void ct_net_flip(__m256i* r,
                                                                            const int kv) {
  _Pragma("GCC unroll 16") for (int t = 0; t < kv / 2; ++t) {
    const __m256i lo = r[t], hi = CT_NET_FLIP7(r[kv - 1 - t]);
    r[t] = _mm256_min_epu32(lo, hi);
    r[kv - 1 - t] = CT_NET_FLIP7(_mm256_max_epu32(lo, hi));
  }
}

/* The comparators between whole vectors dv apart, over r[0..nv). */
CT_NET_TARGET __attribute__((always_inline)) static inline void ct_net_apart(__m256i* r,
                                                                             const int nv,
                                                                             const int dv) {
  _Pragma("GCC unroll 32") for (int v = 0; v < nv; ++v) {
    if (v & dv) continue;
    const __m256i a = r[v], c = r[v + dv];
    r[v] = _mm256_min_epu32(a, c);
    r[v + dv] = _mm256_max_epu32(a, c);
  }
}

/* The rest of a merge over r[0..nv), nv <= 8 (so that it stays in registers): vectors nv / 2, ...,
 * 2, 1 apart, then inside each vector. */
CT_NET_TARGET __attribute__((always_inline)) static inline void ct_net_clean(__m256i* r,
                                                                             const int nv) {
  _Pragma("GCC unroll 4") for (int dv = nv / 2; dv >= 1; dv /= 2) ct_net_apart(r, nv, dv);
  _Pragma("GCC unroll 8") for (int v = 0; v < nv; ++v) {
    __m256i x = r[v];
    CT_NET_FINISH(x);
    r[v] = x;
  }
}

/* Sorts the 8 * nv keys of r[0..nv), nv a power of two; inlined with a constant nv, so that the
 * loops unroll. Blocks of up to 8 vectors are sorted one after another, in registers; the merges
 * of larger blocks take the comparators 8 or more vectors apart over the whole block, then finish
 * 8 vectors at a time. */
CT_NET_TARGET __attribute__((always_inline)) static inline void ct_sort_network_vectors(
    __m256i* r, const int nv) {
  const int block = nv < 8 ? nv : 8;
  _Pragma("GCC unroll 4") for (int b = 0; b < nv; b += block) {
    __m256i* s = r + b;
    _Pragma("GCC unroll 8") for (int v = 0; v < block; ++v) {
      __m256i x = s[v];
      CT_NET_SORT_LANES(x);
      s[v] = x;
    }
    _Pragma("GCC unroll 4") for (int kv = 2; kv <= block; kv *= 2) {
      _Pragma("GCC unroll 4") for (int h = 0; h < block; h += kv) {
        ct_net_flip(s + h, kv);
        ct_net_clean(s + h, kv / 2);
        ct_net_clean(s + h + kv / 2, kv / 2);
      }
    }
  }
  _Pragma("GCC unroll 4") for (int kv = 16; kv <= nv; kv *= 2) {
    _Pragma("GCC unroll 2") for (int h = 0; h < nv; h += kv) ct_net_flip(r + h, kv);
    _Pragma("GCC unroll 4") for (int dv = kv / 4; dv >= 8; dv /= 2) ct_net_apart(r, nv, dv);
    _Pragma("GCC unroll 4") for (int h = 0; h < nv; h += 8) ct_net_clean(r + h, 8);
  }
}

CT_NET_TARGET static void ct_sort_network_avx2(uint32_t* keys, int64_t n) {
  int nv = 1;
  while (8 * nv < n) nv *= 2;
  __m256i r[CT_SORT_NETWORK_MAX / 8];
  uint32_t* lanes = (uint32_t*)r;
  memcpy(lanes, keys, (size_t)n * sizeof *keys);
  for (int64_t i = n; i < 8 * nv; ++i) lanes[i] = UINT32_MAX;
  switch (nv) {
    case 1:
      ct_sort_network_vectors(r, 1);
      break;
    case 2:
      ct_sort_network_vectors(r, 2);
      break;
    case 4:
      ct_sort_network_vectors(r, 4);
      break;
    case 8:
      ct_sort_network_vectors(r, 8);
      break;
    case 16:
      ct_sort_network_vectors(r, 16);
      break;
    default:
      ct_sort_network_vectors(r, 32);
      break;
  }
  memcpy(keys, lanes, (size_t)n * sizeof *keys);
}

/* ----- quicksort ----- */

/* Bit b of an 8-bit mask m, the number of bits set in m's bits below b (b < 8), and in all 8. */
#define CT_BIT(m, b) (((m) >> (b)) & 1)
#define CT_BITS_BELOW(m, b)                                                \
  (CT_BIT((m) & ((1 << (b)) - 1), 0) + CT_BIT((m) & ((1 << (b)) - 1), 1) + \
   CT_BIT((m) & ((1 << (b)) - 1), 2) + CT_BIT((m) & ((1 << (b)) - 1), 3) + \
   CT_BIT((m) & ((1 << (b)) - 1), 4) + CT_BIT((m) & ((1 << (b)) - 1), 5) + \
   CT_BIT((m) & ((1 << (b)) - 1), 6))
#define CT_BITS_SET(m) (CT_BITS_BELOW(m, 7) + CT_BIT(m, 7))
/* Where lane l goes when the lanes in m (keys above the pivot) move after the others, each side
 * keeping its order. */
#define CT_DEST(m, l) \
  (CT_BIT(m, l) ? 8 - CT_BITS_SET(m) + CT_BITS_BELOW(m, l) : (l) - CT_BITS_BELOW(m, l))
/* The gather indices of that permutation, a byte per destination lane. */
#define CT_PERM(m)                                                               \
  (((uint64_t)1 << (8 * CT_DEST(m, 1))) | ((uint64_t)2 << (8 * CT_DEST(m, 2))) | \
   ((uint64_t)3 << (8 * CT_DEST(m, 3))) | ((uint64_t)4 << (8 * CT_DEST(m, 4))) | \
   ((uint64_t)5 << (8 * CT_DEST(m, 5))) | ((uint64_t)6 << (8 * CT_DEST(m, 6))) | \
   ((uint64_t)7 << (8 * CT_DEST(m, 7))))
#define CT_PERM4(m) CT_PERM(m), CT_PERM((m) + 1), CT_PERM((m) + 2), CT_PERM((m) + 3)
#define CT_PERM16(m) CT_PERM4(m), CT_PERM4((m) + 4), CT_PERM4((m) + 8), CT_PERM4((m) + 12)
#define CT_PERM64(m) CT_PERM16(m), CT_PERM16((m) + 16), CT_PERM16((m) + 32), CT_PERM16((m) + 48)
static const uint64_t ct_partition_perm[256] = {CT_PERM64(0), CT_PERM64(64), CT_PERM64(128),
                                                CT_PERM64(192)};

/* Moves src[0..n) to dst (not overlapping): the keys not above pivot to the front, the others to
 * the back, and returns how many are not above it. A vector's two stores (its permuted keys at the
 * front and at the back end) leave garbage only between the two ends, where later keys go, as
 * long as 16 or more keys remain; the last ones go one at a time. */
CT_NET_TARGET static int64_t ct_partition_avx2(const uint32_t* src, int64_t n, uint32_t pivot,
                                               uint32_t* dst) {
  const __m256i bias = _mm256_set1_epi32(INT32_MIN);
  const __m256i p = _mm256_xor_si256(_mm256_set1_epi32((int32_t)pivot), bias);
  int64_t left = 0, right = n, i = 0;
  for (; n - i >= 16; i += 8) {
    const __m256i v = _mm256_loadu_si256((const __m256i*)(src + i));
    const __m256i above = _mm256_cmpgt_epi32(_mm256_xor_si256(v, bias), p);
    const int mask = _mm256_movemask_ps(_mm256_castsi256_ps(above));
    const __m256i perm =
        _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i*)&ct_partition_perm[mask]));
    const __m256i w = _mm256_permutevar8x32_epi32(v, perm);
    const int high = __builtin_popcount((unsigned)mask);
    _mm256_storeu_si256((__m256i*)(dst + left), w);
    _mm256_storeu_si256((__m256i*)(dst + right - 8), w);
    left += 8 - high;
    right -= high;
  }
  for (; i < n; ++i) {
    const uint32_t k = src[i];
    if (k > pivot) {
      dst[--right] = k;
    } else {
      dst[left++] = k;
    }
  }
  return left;
}

/* The median of 8 keys spread evenly over keys[0..n) (n >= 8), sorted by the network. */
CT_NET_TARGET static uint32_t ct_pivot_u32(const uint32_t* keys, int64_t n) {
  uint32_t sample[8];
  for (int s = 0; s < 8; ++s) sample[s] = keys[(2 * s + 1) * n / 16];
  __m256i v = _mm256_loadu_si256((const __m256i*)sample);
  ct_sort_network_vectors(&v, 1);
  _mm256_storeu_si256((__m256i*)sample, v);
  return sample[3];
}

static void ct_heapsort_u32(uint32_t* keys, int64_t n) {
  for (int64_t end = n, start = n / 2;;) {
    if (start > 0) {
      --start;
    } else if (--end > 0) {
      const uint32_t t = keys[0];
      keys[0] = keys[end];
      keys[end] = t;
    } else {
      return;
    }
    int64_t root = start;
    const uint32_t k = keys[root];
    for (int64_t child; (child = 2 * root + 1) < end; root = child) {
      if (child + 1 < end && keys[child + 1] > keys[child]) ++child;
      if (keys[child] <= k) break;
      keys[root] = keys[child];
    }
    keys[root] = k;
  }
}

CT_NET_TARGET static void ct_quicksort_u32(uint32_t* keys, uint32_t* tmp, int64_t n, int depth) {
  while (n > CT_SORT_NETWORK_MAX) {
    if (depth-- == 0) {
      ct_heapsort_u32(keys, n);
      return;
    }
    const uint32_t pivot = ct_pivot_u32(keys, n);
    int64_t left = ct_partition_avx2(keys, n, pivot, tmp);
    if (left == n) {
      /* pivot is the largest key: the keys equal to it go last, and are done */
      if (pivot == 0) return; /* all keys are 0 */
      left = ct_partition_avx2(keys, n, pivot - 1, tmp);
      memcpy(keys, tmp, (size_t)n * sizeof *keys);
      n = left;
      continue;
    }
    memcpy(keys, tmp, (size_t)n * sizeof *keys);
    /* the smaller side first, by recursion; the larger one in this loop */
    if (left < n - left) {
      ct_quicksort_u32(keys, tmp, left, depth);
      keys += left;
      tmp += left;
      n -= left;
    } else {
      ct_quicksort_u32(keys + left, tmp + left, n - left, depth);
      n = left;
    }
  }
  ct_sort_network_avx2(keys, n);
}

#endif

bool ct_sort_vector_available(void) {
#ifdef CT_SORT_VECTOR_AVX2
  return ct_cpu_isa() >= CT_CPU_ISA_AVX2;
#else
  return false;
#endif
}

void ct_sort_vector_u32(uint32_t* keys, uint32_t* tmp, int64_t n) {
#ifdef CT_SORT_VECTOR_AVX2
  int bits = 0;
  while (bits < 62 && ((int64_t)1 << bits) < n) ++bits;
  ct_quicksort_u32(keys, tmp, n, 2 * bits);
#else
  (void)keys;
  (void)tmp;
  (void)n;
#endif
}
