/* arg_search.c - one-pass argmax and argmin over a contiguous run (see arg_search.h).
 *
 * The AVX2 loop keeps four vectors of (value, index) pairs: 32-bit indices beside 32-bit values
 * (such runs are shorter than CT_ARG_SEARCH_LONG), 64-bit beside 64-bit. A step reads four vectors
 * and, lane by lane, takes the new element where it is strictly better. The last step overlaps the
 * one before it where the run is not a whole number of steps: an element seen twice carries its own
 * index both times, so the result does not change. */
#include "ops/arg_search.h"

#include "engine/cpu_isa.h"

#if defined(__GNUC__) && defined(__x86_64__) && !defined(CT_NO_ISA_VARIANTS)
#include <immintrin.h>
#define CT_ARG_SEARCH_AVX2 1
#endif

/* The searches: (op, type suffix, type, lanes per vector, longest run searched). float32 and
 * int32 runs of CT_ARG_SEARCH_LONG elements or more are left to the callers' block loops: AVX2
 * takes their extremum in one instruction a vector (against a compare, a max and a blend here),
 * and searching one block for it afterwards costs little on such runs. 64-bit types have no AVX2
 * max and are searched at any length. */
#define CT_ARG_SEARCH_LONG 4096
#define CT_ARG_SEARCH_ALL(X)                     \
  X(argmax, f32, float, 8, CT_ARG_SEARCH_LONG)   \
  X(argmin, f32, float, 8, CT_ARG_SEARCH_LONG)   \
  X(argmax, f64, double, 4, INT64_MAX)           \
  X(argmin, f64, double, 4, INT64_MAX)           \
  X(argmax, i32, int32_t, 8, CT_ARG_SEARCH_LONG) \
  X(argmin, i32, int32_t, 8, CT_ARG_SEARCH_LONG) \
  X(argmax, i64, int64_t, 4, INT64_MAX)          \
  X(argmin, i64, int64_t, 4, INT64_MAX)

/* 32-bit indices number every run searched in 8 lanes. */
_Static_assert(CT_ARG_SEARCH_LONG < INT32_MAX, "runs searched with 32-bit indices");

#ifdef CT_ARG_SEARCH_AVX2

/* Registers of W lanes, W = 8 (32-bit elements and indices) or 4 (64-bit): values and indices
 * are both held in float vectors (indices as their bit patterns), so that one blendv (on each
 * lane's sign bit, which compare masks set whole) selects either. */
#define CT_V_8 __m256
#define CT_V_4 __m256d
#define CT_LOAD_8(p) _mm256_loadu_ps((const float*)(p))
#define CT_LOAD_4(p) _mm256_loadu_pd((const double*)(p))
#define CT_BLEND_8(a, b, mask) _mm256_blendv_ps(a, b, mask)
#define CT_BLEND_4(a, b, mask) _mm256_blendv_pd(a, b, mask)
#define CT_OR_8(a, b) _mm256_or_ps(a, b)
#define CT_OR_4(a, b) _mm256_or_pd(a, b)
#define CT_AND_8(a, b) _mm256_and_ps(a, b)
#define CT_AND_4(a, b) _mm256_and_pd(a, b)
#define CT_ZERO_8() _mm256_setzero_ps()
#define CT_ZERO_4() _mm256_setzero_pd()
#define CT_ANY_8(m) (_mm256_movemask_ps(m) != 0)
#define CT_ANY_4(m) (_mm256_movemask_pd(m) != 0)
#define CT_STORE_8(p, v) _mm256_storeu_ps((float*)(p), v)
#define CT_STORE_4(p, v) _mm256_storeu_pd((double*)(p), v)
/* Index vectors: all lanes k, and lanes (k + l) for l < W. */
#define CT_IDX_SET1_8(k) _mm256_castsi256_ps(_mm256_set1_epi32((int32_t)(k)))
#define CT_IDX_SET1_4(k) _mm256_castsi256_pd(_mm256_set1_epi64x(k))
#define CT_IDX_LANES_8(k)                                                         \
  _mm256_castsi256_ps(_mm256_add_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), \
                                       _mm256_set1_epi32((int32_t)(k))))
#define CT_IDX_LANES_4(k) \
  _mm256_castsi256_pd(_mm256_add_epi64(_mm256_setr_epi64x(0, 1, 2, 3), _mm256_set1_epi64x(k)))
#define CT_IDX_ADD_8(a, b) \
  _mm256_castsi256_ps(_mm256_add_epi32(_mm256_castps_si256(a), _mm256_castps_si256(b)))
#define CT_IDX_ADD_4(a, b) \
  _mm256_castsi256_pd(_mm256_add_epi64(_mm256_castpd_si256(a), _mm256_castpd_si256(b)))
#define CT_IDX_GT_8(a, b) \
  _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_castps_si256(a), _mm256_castps_si256(b)))
#define CT_IDX_GT_4(a, b) \
  _mm256_castsi256_pd(_mm256_cmpgt_epi64(_mm256_castpd_si256(a), _mm256_castpd_si256(b)))

/* Masks of a > b, a == b and "a or b is a nan", per element type. */
#define CT_GT_f32(a, b) _mm256_cmp_ps(a, b, _CMP_GT_OQ)
#define CT_EQ_f32(a, b) _mm256_cmp_ps(a, b, _CMP_EQ_OQ)
#define CT_NAN_f32(a, b) _mm256_cmp_ps(a, b, _CMP_UNORD_Q)
#define CT_GT_f64(a, b) _mm256_cmp_pd(a, b, _CMP_GT_OQ)
#define CT_EQ_f64(a, b) _mm256_cmp_pd(a, b, _CMP_EQ_OQ)
#define CT_NAN_f64(a, b) _mm256_cmp_pd(a, b, _CMP_UNORD_Q)
#define CT_GT_i32(a, b) CT_IDX_GT_8(a, b)
#define CT_EQ_i32(a, b) \
  _mm256_castsi256_ps(_mm256_cmpeq_epi32(_mm256_castps_si256(a), _mm256_castps_si256(b)))
#define CT_NAN_i32(a, b) _mm256_setzero_ps()
#define CT_GT_i64(a, b) CT_IDX_GT_4(a, b)
#define CT_EQ_i64(a, b) \
  _mm256_castsi256_pd(_mm256_cmpeq_epi64(_mm256_castpd_si256(a), _mm256_castpd_si256(b)))
#define CT_NAN_i64(a, b) _mm256_setzero_pd()

/* Argmax takes a > b, argmin b > a. */
#define CT_BETTER_argmax(TS, v, best) CT_GT_##TS(v, best)
#define CT_BETTER_argmin(TS, v, best) CT_GT_##TS(best, v)

/* A compare mask passed through an empty asm, so that GCC (12) emits blendv on it as it is:
 * otherwise it re-derives the sign bits with one more compare before each blend. */
#define CT_MASK(W, m)          \
  __extension__({              \
    CT_V_##W mask_ = (m);      \
    __asm__("" : "+x"(mask_)); \
    mask_;                     \
  })

/* The better of v and best lane by lane, given the mask of lanes where v is: max or min where
 * AVX2 has it for the type (one instruction, not bound to the mask), else a blend. */
#define CT_KEEP_argmax_f32(v, best, mask) _mm256_max_ps(v, best)
#define CT_KEEP_argmin_f32(v, best, mask) _mm256_min_ps(v, best)
#define CT_KEEP_argmax_f64(v, best, mask) _mm256_max_pd(v, best)
#define CT_KEEP_argmin_f64(v, best, mask) _mm256_min_pd(v, best)
#define CT_KEEP_argmax_i32(v, best, mask) \
  _mm256_castsi256_ps(_mm256_max_epi32(_mm256_castps_si256(v), _mm256_castps_si256(best)))
#define CT_KEEP_argmin_i32(v, best, mask) \
  _mm256_castsi256_ps(_mm256_min_epi32(_mm256_castps_si256(v), _mm256_castps_si256(best)))
#define CT_KEEP_argmax_i64(v, best, mask) _mm256_blendv_pd(best, v, mask)
#define CT_KEEP_argmin_i64(v, best, mask) _mm256_blendv_pd(best, v, mask)

/* One vector of a step: lane by lane, the element where it is strictly better (max and min
 * keep the earlier of equal values' value, which is the same value; the index blend keeps the
 * earlier index). */
#define CT_ARG_STEP(OP, TS, W, k)                                        \
  do {                                                                   \
    const CT_V_##W better = CT_MASK(W, CT_BETTER_##OP(TS, v##k, bv##k)); \
    bv##k = CT_KEEP_##OP##_##TS(v##k, bv##k, better);                    \
    bi##k = CT_BLEND_##W(bi##k, start, better);                          \
  } while (0)
/* (bv_a, bi_a) merged with (bv_b, bi_b): the better value, between equal ones the earlier
 * index. */
#define CT_ARG_MERGE(OP, TS, W, a, b)                                                             \
  do {                                                                                            \
    const CT_V_##W take =                                                                         \
        CT_MASK(W, CT_OR_##W(CT_BETTER_##OP(TS, bv##b, bv##a),                                    \
                             CT_AND_##W(CT_EQ_##TS(bv##b, bv##a), CT_IDX_GT_##W(bi##a, bi##b)))); \
    bv##a = CT_BLEND_##W(bv##a, bv##b, take);                                                     \
    bi##a = CT_BLEND_##W(bi##a, bi##b, take);                                                     \
  } while (0)

/* The lanes of (bv0, bi0) folded by CT_ARG_MERGE against a shuffled copy, until every lane holds
 * the best (halves, then pairs, then neighbours), without a branch; lane 0's index. */
#define CT_SWAP_HALVES_8(a) _mm256_permute2f128_ps(a, a, 1)
#define CT_SWAP_PAIRS_8(a) _mm256_permute_ps(a, 0x4E)
#define CT_SWAP_NEIGHBOURS_8(a) _mm256_permute_ps(a, 0xB1)
#define CT_SWAP_HALVES_4(a) _mm256_permute2f128_pd(a, a, 1)
#define CT_SWAP_NEIGHBOURS_4(a) _mm256_permute_pd(a, 0x5)
#define CT_ARG_FOLD(OP, TS, W, SHUFFLE) \
  do {                                  \
    bv1 = SHUFFLE(bv0);                 \
    bi1 = SHUFFLE(bi0);                 \
    CT_ARG_MERGE(OP, TS, W, 0, 1);      \
  } while (0)
#define CT_ARG_FOLDS_8(OP, TS)              \
  CT_ARG_FOLD(OP, TS, 8, CT_SWAP_HALVES_8); \
  CT_ARG_FOLD(OP, TS, 8, CT_SWAP_PAIRS_8);  \
  CT_ARG_FOLD(OP, TS, 8, CT_SWAP_NEIGHBOURS_8)
#define CT_ARG_FOLDS_4(OP, TS)              \
  CT_ARG_FOLD(OP, TS, 4, CT_SWAP_HALVES_4); \
  CT_ARG_FOLD(OP, TS, 4, CT_SWAP_NEIGHBOURS_4)
#define CT_FIRST_INDEX_8(v) ((int64_t)_mm256_cvtsi256_si32(_mm256_castps_si256(v)))
#define CT_FIRST_INDEX_4(v) _mm_cvtsi128_si64(_mm256_castsi256_si128(_mm256_castpd_si256(v)))

/* The end of a search: with a nan seen, the first nan; else the lanes of (bv0, bi0), bi0 holding
 * whole indices, folded to the best. */
#define CT_ARG_FINISH(OP, TS, W)                         \
  if (CT_ANY_##W(nan)) {                                 \
    for (int64_t j = 0;; ++j) { /* the first nan wins */ \
      if (x[j] != x[j]) {                                \
        *value = x[j];                                   \
        return j;                                        \
      }                                                  \
    }                                                    \
  }                                                      \
  CT_ARG_FOLDS_##W(OP, TS);                              \
  const int64_t at = CT_FIRST_INDEX_##W(bi0);            \
  *value = x[at];                                        \
  return at;

/* NAME_short(x, n, value): the search over W <= n < 4 · W elements, one vector a step (the last
 * overlapping), without the merge of four vectors. */
#define CT_ARG_SEARCH_SHORT_AVX2(NAME, OP, TS, T, W)                                \
  CT_CPU_TARGET_AVX2 static int64_t NAME##_short(const T* x, int64_t n, T* value) { \
    CT_V_##W bv0 = CT_LOAD_##W(x), bi0 = CT_ZERO_##W(), bv1, bi1;                   \
    CT_V_##W nan = CT_NAN_##TS(bv0, bv0);                                           \
    for (int64_t i = W; i < n; i += W) {                                            \
      if (i + W > n) i = n - W;                                                     \
      const CT_V_##W start = CT_IDX_SET1_##W(i), v0 = CT_LOAD_##W(x + i);           \
      CT_ARG_STEP(OP, TS, W, 0);                                                    \
      nan = CT_OR_##W(nan, CT_NAN_##TS(v0, v0));                                    \
    }                                                                               \
    bi0 = CT_IDX_ADD_##W(bi0, CT_IDX_LANES_##W(0));                                 \
    CT_ARG_FINISH(OP, TS, W)                                                        \
  }

/* NAME_wide(x, n, value): the search over n >= 4 · W elements, four vectors a step. Lane l of
 * vector k holds the best of the elements at k · W + l of the steps so far and the start of its
 * step (the index less k · W + l), so that a step blends in one index vector; 4 values, 4
 * indices and a step's vectors fit the 16 registers. */
#define CT_ARG_SEARCH_WIDE_AVX2(NAME, OP, TS, T, W)                                              \
  CT_CPU_TARGET_AVX2 static int64_t NAME##_wide(const T* x, int64_t n, T* value) {               \
    CT_V_##W bv0 = CT_LOAD_##W(x), bv1 = CT_LOAD_##W(x + W);                                     \
    CT_V_##W bv2 = CT_LOAD_##W(x + 2 * W), bv3 = CT_LOAD_##W(x + 3 * W);                         \
    CT_V_##W bi0 = CT_ZERO_##W(), bi1 = CT_ZERO_##W(), bi2 = CT_ZERO_##W(), bi3 = CT_ZERO_##W(); \
    CT_V_##W nan = CT_OR_##W(CT_NAN_##TS(bv0, bv1), CT_NAN_##TS(bv2, bv3));                      \
    for (int64_t i = 4 * W; i < n; i += 4 * W) {                                                 \
      if (i + 4 * W > n) i = n - 4 * W; /* the overlapping last step */                          \
      const CT_V_##W start = CT_IDX_SET1_##W(i);                                                 \
      const CT_V_##W v0 = CT_LOAD_##W(x + i), v1 = CT_LOAD_##W(x + i + W);                       \
      const CT_V_##W v2 = CT_LOAD_##W(x + i + 2 * W), v3 = CT_LOAD_##W(x + i + 3 * W);           \
      CT_ARG_STEP(OP, TS, W, 0);                                                                 \
      CT_ARG_STEP(OP, TS, W, 1);                                                                 \
      CT_ARG_STEP(OP, TS, W, 2);                                                                 \
      CT_ARG_STEP(OP, TS, W, 3);                                                                 \
      nan = CT_OR_##W(nan, CT_OR_##W(CT_NAN_##TS(v0, v1), CT_NAN_##TS(v2, v3)));                 \
    }                                                                                            \
    bi0 = CT_IDX_ADD_##W(bi0, CT_IDX_LANES_##W(0));                                              \
    bi1 = CT_IDX_ADD_##W(bi1, CT_IDX_LANES_##W(W));                                              \
    bi2 = CT_IDX_ADD_##W(bi2, CT_IDX_LANES_##W(2 * W));                                          \
    bi3 = CT_IDX_ADD_##W(bi3, CT_IDX_LANES_##W(3 * W));                                          \
    CT_ARG_MERGE(OP, TS, W, 0, 2);                                                               \
    CT_ARG_MERGE(OP, TS, W, 1, 3);                                                               \
    CT_ARG_MERGE(OP, TS, W, 0, 1);                                                               \
    CT_ARG_FINISH(OP, TS, W)                                                                     \
  }

#define CT_ARG_SEARCH_DEF_LOOPS(OP, TS, T, W, LONGEST)          \
  CT_ARG_SEARCH_SHORT_AVX2(ct_##OP##_search_##TS, OP, TS, T, W) \
  CT_ARG_SEARCH_WIDE_AVX2(ct_##OP##_search_##TS, OP, TS, T, W)
CT_ARG_SEARCH_ALL(CT_ARG_SEARCH_DEF_LOOPS)
#undef CT_ARG_SEARCH_DEF_LOOPS

/* The public function: one vector a step up to four, then four; runs shorter than a vector are
 * left to the caller's element-by-element loop. */
#define CT_ARG_SEARCH_DEFINE(OP, TS, T, W, LONGEST)                         \
  int64_t ct_cpu_##OP##_search_##TS(const T* x, int64_t n, T* value) {      \
    if (n < W || n >= LONGEST || ct_cpu_isa() < CT_CPU_ISA_AVX2) return -1; \
    return n >= 4 * W ? ct_##OP##_search_##TS##_wide(x, n, value)           \
                      : ct_##OP##_search_##TS##_short(x, n, value);         \
  }
CT_ARG_SEARCH_ALL(CT_ARG_SEARCH_DEFINE)
#undef CT_ARG_SEARCH_DEFINE

#else /* no AVX2 copies: the callers' loops run */

#define CT_ARG_SEARCH_NONE(OP, TS, T, W, LONGEST)                      \
  int64_t ct_cpu_##OP##_search_##TS(const T* x, int64_t n, T* value) { \
    (void)x;                                                           \
    (void)n;                                                           \
    (void)value;                                                       \
    return -1;                                                         \
  }
CT_ARG_SEARCH_ALL(CT_ARG_SEARCH_NONE)
#undef CT_ARG_SEARCH_NONE

#endif
