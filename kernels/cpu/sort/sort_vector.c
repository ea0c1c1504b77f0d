/* sort_vector.c - a bitonic sorting network and a quicksort over AVX2 vectors of unsigned 32- and
 * 64-bit keys (see sort_vector.h); sort_vector_impl.h holds both, per key width.
 *
 * Key i of the padded run sits in lane i % W of vector i / W (W = 8 or 4 keys a vector). The
 * network is Batcher's bitonic
 * sort in the form whose every comparator puts the smaller key at the lower index: merging two
 * sorted blocks into one of k keys first compares key i with key i ^ (k - 1) (the second block
 * reversed against the first), then key i with key i ^ j for j = k / 4, ..., 2, 1. Comparators
 * between keys W or more apart join two whole vectors (a min and a max); those between keys of one
 * vector permute the vector against itself, take min and max and blend them so that the lower
 * lane of each pair keeps the min. */
#include "sort/sort_vector.h"

#include <string.h>

#include "engine/cpu_isa.h"

#if defined(__GNUC__) && defined(__x86_64__) && !defined(CT_NO_ISA_VARIANTS)
#include <immintrin.h>
#define CT_SORT_VECTOR_AVX2 1
#endif

#ifdef CT_SORT_VECTOR_AVX2

#define CT_NET_TARGET __attribute__((target("avx2")))

/* One comparator stage inside vector V: lane l meets lane PERM(V)'s l, and the lanes in UPPER
 * (a blend mask over 32-bit lanes: the higher key of each pair) keep the larger key. */
#define CT_NET_LANES(V, PERM, UPPER, MINMAX)         \
  do {                                               \
    __m256i ct_lo, ct_hi;                            \
    MINMAX((V), PERM(V), ct_lo, ct_hi);              \
    (V) = _mm256_blend_epi32(ct_lo, ct_hi, (UPPER)); \
  } while (0)

/* Bit b of an 8-bit mask m, the number of bits set in m's bits below b (b < 8), and in all 8. */
#define CT_BIT(m, b) (((m) >> (b)) & 1)
#define CT_BITS_BELOW(m, b)                                                \
  (CT_BIT((m) & ((1 << (b)) - 1), 0) + CT_BIT((m) & ((1 << (b)) - 1), 1) + \
   CT_BIT((m) & ((1 << (b)) - 1), 2) + CT_BIT((m) & ((1 << (b)) - 1), 3) + \
   CT_BIT((m) & ((1 << (b)) - 1), 4) + CT_BIT((m) & ((1 << (b)) - 1), 5) + \
   CT_BIT((m) & ((1 << (b)) - 1), 6))
#define CT_BITS_SET(m) (CT_BITS_BELOW(m, 7) + CT_BIT(m, 7))
/* Where lane l of W goes when the lanes in m (keys above the pivot) move after the others, each
 * side keeping its order. */
#define CT_DEST(m, l, W) \
  (CT_BIT(m, l) ? (W) - CT_BITS_SET(m) + CT_BITS_BELOW(m, l) : (l) - CT_BITS_BELOW(m, l))
/* The gather indices of that permutation, a byte per 32-bit destination lane: 8 lanes of 32 bits,
 * or 4 of 64 (two 32-bit halves each). */
#define CT_PERM8(m)                                                                    \
  (((uint64_t)1 << (8 * CT_DEST(m, 1, 8))) | ((uint64_t)2 << (8 * CT_DEST(m, 2, 8))) | \
   ((uint64_t)3 << (8 * CT_DEST(m, 3, 8))) | ((uint64_t)4 << (8 * CT_DEST(m, 4, 8))) | \
   ((uint64_t)5 << (8 * CT_DEST(m, 5, 8))) | ((uint64_t)6 << (8 * CT_DEST(m, 6, 8))) | \
   ((uint64_t)7 << (8 * CT_DEST(m, 7, 8))))
#define CT_PERM_HALVES(l, d) \
  (((uint64_t)(2 * (l)) << (16 * (d))) | ((uint64_t)(2 * (l) + 1) << (16 * (d) + 8)))
#define CT_PERM4(m)                                                            \
  (CT_PERM_HALVES(0, CT_DEST(m, 0, 4)) | CT_PERM_HALVES(1, CT_DEST(m, 1, 4)) | \
   CT_PERM_HALVES(2, CT_DEST(m, 2, 4)) | CT_PERM_HALVES(3, CT_DEST(m, 3, 4)))
#define CT_REPEAT4(X, m) X(m), X((m) + 1), X((m) + 2), X((m) + 3)
#define CT_REPEAT16(X, m) \
  CT_REPEAT4(X, m), CT_REPEAT4(X, (m) + 4), CT_REPEAT4(X, (m) + 8), CT_REPEAT4(X, (m) + 12)
#define CT_REPEAT64(X, m) \
  CT_REPEAT16(X, m), CT_REPEAT16(X, (m) + 16), CT_REPEAT16(X, (m) + 32), CT_REPEAT16(X, (m) + 48)
static const uint64_t ct_partition_perm_u32[256] = {
    CT_REPEAT64(CT_PERM8, 0), CT_REPEAT64(CT_PERM8, 64), CT_REPEAT64(CT_PERM8, 128),
    CT_REPEAT64(CT_PERM8, 192)};
static const uint64_t ct_partition_perm_u64[16] = {CT_REPEAT16(CT_PERM4, 0)};

/* ----- 32-bit keys: 8 a vector, unsigned min and max ----- */

#define CT_U32_MINMAX(a, b, lo, hi) \
  ((lo) = _mm256_min_epu32((a), (b)), (hi) = _mm256_max_epu32((a), (b)))
#define CT_U32_XOR1(v) _mm256_shuffle_epi32((v), 0xb1)
#define CT_U32_XOR2(v) _mm256_shuffle_epi32((v), 0x4e)
#define CT_U32_XOR4(v) _mm256_permute2x128_si256((v), (v), 0x01)
#define CT_U32_FLIP3(v) _mm256_shuffle_epi32((v), 0x1b)
#define CT_U32_FLIP7(v) _mm256_permutevar8x32_epi32((v), _mm256_setr_epi32(7, 6, 5, 4, 3, 2, 1, 0))
#define CT_U32_LANES(V, PERM, UPPER) CT_NET_LANES(V, PERM, UPPER, CT_U32_MINMAX)

#define CT_SV_K uint32_t
#define CT_SV_SFX u32
#define CT_SV_W 8
#define CT_SV_NETWORK_MAX 256
#define CT_SV_IN(v) (v)
#define CT_SV_OUT(v) (v)
#define CT_SV_MINMAX CT_U32_MINMAX
#define CT_SV_PIVOT(k) _mm256_set1_epi32((int32_t)((k) ^ 0x80000000u))
#define CT_SV_ABOVE(v, p)                 \
  _mm256_movemask_ps(_mm256_castsi256_ps( \
      _mm256_cmpgt_epi32(_mm256_xor_si256((v), _mm256_set1_epi32(INT32_MIN)), (p))))
#define CT_SV_SORT_LANES(V)              \
  do {                                   \
    CT_U32_LANES(V, CT_U32_XOR1, 0xaa);  \
    CT_U32_LANES(V, CT_U32_FLIP3, 0xcc); \
    CT_U32_LANES(V, CT_U32_XOR1, 0xaa);  \
    CT_U32_LANES(V, CT_U32_FLIP7, 0xf0); \
    CT_U32_LANES(V, CT_U32_XOR2, 0xcc);  \
    CT_U32_LANES(V, CT_U32_XOR1, 0xaa);  \
  } while (0)
#define CT_SV_FINISH(V)                 \
  do {                                  \
    CT_U32_LANES(V, CT_U32_XOR4, 0xf0); \
    CT_U32_LANES(V, CT_U32_XOR2, 0xcc); \
    CT_U32_LANES(V, CT_U32_XOR1, 0xaa); \
  } while (0)
#define CT_SV_REVERSE CT_U32_FLIP7
#define CT_SV_PERM ct_partition_perm_u32
#include "sort/sort_vector_impl.h"
#undef CT_SV_K
#undef CT_SV_SFX
#undef CT_SV_W
#undef CT_SV_NETWORK_MAX
#undef CT_SV_IN
#undef CT_SV_OUT
#undef CT_SV_MINMAX
#undef CT_SV_PIVOT
#undef CT_SV_ABOVE
#undef CT_SV_SORT_LANES
#undef CT_SV_FINISH
#undef CT_SV_REVERSE
#undef CT_SV_PERM

/* ----- 64-bit keys: 4 a vector, held with the sign bit flipped so that AVX2's signed compare
 * orders them; min and max by compare and blend ----- */

#define CT_U64_BIAS() _mm256_set1_epi64x(INT64_MIN)
#define CT_U64_MINMAX(a, b, lo, hi)                                                     \
  do {                                                                                  \
    const __m256i ct_a = (a), ct_b = (b);                                               \
    const __m256d ct_gt = _mm256_castsi256_pd(_mm256_cmpgt_epi64(ct_a, ct_b));          \
    (lo) = _mm256_castpd_si256(                                                         \
        _mm256_blendv_pd(_mm256_castsi256_pd(ct_a), _mm256_castsi256_pd(ct_b), ct_gt)); \
    (hi) = _mm256_castpd_si256(                                                         \
        _mm256_blendv_pd(_mm256_castsi256_pd(ct_b), _mm256_castsi256_pd(ct_a), ct_gt)); \
  } while (0)
#define CT_U64_XOR1(v) _mm256_shuffle_epi32((v), 0x4e)
#define CT_U64_XOR2(v) _mm256_permute2x128_si256((v), (v), 0x01)
#define CT_U64_FLIP3(v) _mm256_permute4x64_epi64((v), 0x1b)
#define CT_U64_LANES(V, PERM, UPPER) CT_NET_LANES(V, PERM, UPPER, CT_U64_MINMAX)

#define CT_SV_K uint64_t
#define CT_SV_SFX u64
#define CT_SV_W 4
#define CT_SV_NETWORK_MAX 256
#define CT_SV_IN(v) _mm256_xor_si256((v), CT_U64_BIAS())
#define CT_SV_OUT(v) _mm256_xor_si256((v), CT_U64_BIAS())
#define CT_SV_MINMAX CT_U64_MINMAX
#define CT_SV_PIVOT(k) _mm256_set1_epi64x((int64_t)((k) ^ 0x8000000000000000u))
#define CT_SV_ABOVE(v, p) \
  _mm256_movemask_pd(     \
      _mm256_castsi256_pd(_mm256_cmpgt_epi64(_mm256_xor_si256((v), CT_U64_BIAS()), (p))))
#define CT_SV_SORT_LANES(V)              \
  do {                                   \
    CT_U64_LANES(V, CT_U64_XOR1, 0xcc);  \
    CT_U64_LANES(V, CT_U64_FLIP3, 0xf0); \
    CT_U64_LANES(V, CT_U64_XOR1, 0xcc);  \
  } while (0)
#define CT_SV_FINISH(V)                 \
  do {                                  \
    CT_U64_LANES(V, CT_U64_XOR2, 0xf0); \
    CT_U64_LANES(V, CT_U64_XOR1, 0xcc); \
  } while (0)
#define CT_SV_REVERSE CT_U64_FLIP3
#define CT_SV_PERM ct_partition_perm_u64
#include "sort/sort_vector_impl.h"

#endif

bool ct_sort_vector_available(void) {
#ifdef CT_SORT_VECTOR_AVX2
  return ct_cpu_isa() >= CT_CPU_ISA_AVX2;
#else
  return false;
#endif
}

/* Twice the bit length of n: the quicksort's depth before it heapsorts. */
static int ct_sort_vector_depth(int64_t n) {
  int bits = 0;
  while (bits < 62 && ((int64_t)1 << bits) < n) ++bits;
  return 2 * bits;
}

void ct_sort_vector_u32(uint32_t* keys, uint32_t* tmp, int64_t n) {
#ifdef CT_SORT_VECTOR_AVX2
  ct_quicksort_u32(keys, tmp, n, ct_sort_vector_depth(n));
#else
  (void)keys;
  (void)tmp;
  (void)n;
#endif
}

void ct_sort_vector_u64(uint64_t* keys, uint64_t* tmp, int64_t n) {
#ifdef CT_SORT_VECTOR_AVX2
  ct_quicksort_u64(keys, tmp, n, ct_sort_vector_depth(n));
#else
  (void)keys;
  (void)tmp;
  (void)n;
#endif
}
