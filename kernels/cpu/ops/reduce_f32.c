/* reduce_f32.c - float32 sum, max and min loops of the reduction engine and argmax's search (see
 * reduce_f32.h). */
#include "ops/reduce_f32.h"

#include "engine/cpu_isa.h"
#include "engine/reduce_layout.h"

#if defined(__GNUC__) && defined(__x86_64__) && !defined(CT_NO_ISA_VARIANTS)
#include <immintrin.h>
#define CT_REDUCE_F32_AVX2 1
/* The AVX2 sums (AVX2 level: FMA too, cpu_isa.h); -ffp-contract=off keeps every other
 * operation as written. */
#define CT_SUM_F32_TARGET __attribute__((target("avx2,fma,f16c")))
#endif

/* Lanes of the contiguous sum: lane k adds the elements at k, k + 32, k + 64, ... */
#define CT_SUM_F32_LANES 32

/* The sum of 32 lanes: lane l of each group of four is added pairwise across the eight groups,
 * then the four results pairwise (the AVX2 copy's order: eight vectors of four lanes). */
static inline double ct_sum_f32_fold(const double* r) {
  double v[4];
  for (int l = 0; l < 4; ++l) {
    v[l] = ((r[l] + r[4 + l]) + (r[8 + l] + r[12 + l])) +
           ((r[16 + l] + r[20 + l]) + (r[24 + l] + r[28 + l]));
  }
  return (v[0] + v[1]) + (v[2] + v[3]);
}

/* The sum of x[0..n), n a multiple of CT_SUM_F32_LANES, over 32 lanes. */
static double ct_sum_f32_lanes_generic(const float* x, int64_t n) {
  double r[CT_SUM_F32_LANES] = {0.0};
  for (int64_t i = 0; i < n; i += CT_SUM_F32_LANES) {
    for (int k = 0; k < CT_SUM_F32_LANES; ++k) r[k] += (double)x[i + k];
  }
  return ct_sum_f32_fold(r);
}

static void ct_sum_rows_f32_generic(const char* x, int64_t row_step, int64_t rows, int64_t step,
                                    int64_t n, double* acc) {
  if (step == (int64_t)sizeof(float)) {
    /* 8 columns at a time down the rows: one accumulator load and store per group of rows */
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) {
      double a[8];
      for (int k = 0; k < 8; ++k) a[k] = acc[j + k];
      for (int64_t r = 0; r < rows; ++r) {
        const float* p = (const float*)(x + r * row_step) + j;
        for (int k = 0; k < 8; ++k) a[k] += (double)p[k];
      }
      for (int k = 0; k < 8; ++k) acc[j + k] = a[k];
    }
    x += j * step;
    acc += j;
    n -= j;
  }
  for (int64_t r = 0; r < rows; ++r) {
    const char* row = x + r * row_step;
    if (step == (int64_t)sizeof(float)) {
      const float* p = (const float*)row;
      for (int64_t j = 0; j < n; ++j) acc[j] += (double)p[j];
    } else {
      for (int64_t j = 0; j < n; ++j) acc[j] += (double)*(const float*)(row + j * step);
    }
  }
}

#ifdef CT_REDUCE_F32_AVX2
/* Four floats at p widened and added to a. The addition runs as a multiply-add by one (bitwise the
 * same sum: x * 1 is exact, and the one rounding is the addition's), which executes on the FMA
 * pipes: on AMD Zen the conversions and plain vector additions share the other two pipes, which
 * would otherwise limit the loops below. */
CT_SUM_F32_TARGET __attribute__((always_inline)) static inline __m256d ct_sum_f32_add4(
    __m256d a, const float* p) {
  return _mm256_fmadd_pd(_mm256_cvtps_pd(_mm_loadu_ps(p)), _mm256_set1_pd(1.0), a);
}

CT_SUM_F32_TARGET static double ct_sum_f32_lanes_avx2(const float* x, int64_t n) {
  __m256d a0 = _mm256_setzero_pd(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
  for (int64_t i = 0; i < n; i += CT_SUM_F32_LANES) {
    const float* p = x + i;
    a0 = ct_sum_f32_add4(a0, p);
    a1 = ct_sum_f32_add4(a1, p + 4);
    a2 = ct_sum_f32_add4(a2, p + 8);
    a3 = ct_sum_f32_add4(a3, p + 12);
    a4 = ct_sum_f32_add4(a4, p + 16);
    a5 = ct_sum_f32_add4(a5, p + 20);
    a6 = ct_sum_f32_add4(a6, p + 24);
    a7 = ct_sum_f32_add4(a7, p + 28);
  }
  const __m256d v = _mm256_add_pd(_mm256_add_pd(_mm256_add_pd(a0, a1), _mm256_add_pd(a2, a3)),
                                  _mm256_add_pd(_mm256_add_pd(a4, a5), _mm256_add_pd(a6, a7)));
  double r[4];
  _mm256_storeu_pd(r, v);
  return (r[0] + r[1]) + (r[2] + r[3]);
}

/* a[k] += the four floats at p + 4k, widened (k < 4): one 16-column step of both row loops. */
CT_SUM_F32_TARGET __attribute__((always_inline)) static inline void ct_sum_f32_add16(
    __m256d* a, const float* p) {
  for (int k = 0; k < 4; ++k) a[k] = ct_sum_f32_add4(a[k], p + 4 * k);
}

/* Four column vectors (16 columns) at a time: independent addition chains. */
CT_SUM_F32_TARGET static void ct_sum_rows_f32_avx2(const char* x, int64_t row_step, int64_t rows,
                                                   int64_t step, int64_t n, double* acc) {
  if (step != (int64_t)sizeof(float)) {
    ct_sum_rows_f32_generic(x, row_step, rows, step, n, acc);
    return;
  }
  const int64_t row_bytes = n * (int64_t)sizeof(float);
  if ((row_step < CT_SUM_F32_SEQUENTIAL_STEP && row_step > -CT_SUM_F32_SEQUENTIAL_STEP) ||
      (row_step == row_bytes && row_bytes <= CT_SUM_F32_SEQUENTIAL_STEP)) {
    /* Short rows: one after another (each lane still adds its rows in order). Four vectors at a
     * time, all loaded before any is stored, so that no load of x waits on the store to acc
     * before it. */
    const int64_t wide = n - n % 16, vectorised = n - n % 4;
    for (int64_t r = 0; r < rows; ++r) {
      const float* p = (const float*)(x + r * row_step);
      int64_t j = 0;
      for (; j < wide; j += 16) {
        __m256d a[4];
        for (int k = 0; k < 4; ++k) a[k] = _mm256_loadu_pd(acc + j + 4 * k);
        ct_sum_f32_add16(a, p + j);
        for (int k = 0; k < 4; ++k) _mm256_storeu_pd(acc + j + 4 * k, a[k]);
      }
      for (; j < vectorised; j += 4) {
        _mm256_storeu_pd(acc + j, ct_sum_f32_add4(_mm256_loadu_pd(acc + j), p + j));
      }
    }
    if (vectorised < n) {
      ct_sum_rows_f32_generic(x + vectorised * step, row_step, rows, step, n - vectorised,
                              acc + vectorised);
    }
    return;
  }
  int64_t j = 0;
  for (; j + 16 <= n; j += 16) {
    __m256d a[4];
    for (int k = 0; k < 4; ++k) a[k] = _mm256_loadu_pd(acc + j + 4 * k);
    for (int64_t r = 0; r < rows; ++r) ct_sum_f32_add16(a, (const float*)(x + r * row_step) + j);
    for (int k = 0; k < 4; ++k) _mm256_storeu_pd(acc + j + 4 * k, a[k]);
  }
  for (; j + 4 <= n; j += 4) {
    __m256d a = _mm256_loadu_pd(acc + j);
    for (int64_t r = 0; r < rows; ++r) {
      a = ct_sum_f32_add4(a, (const float*)(x + r * row_step) + j);
    }
    _mm256_storeu_pd(acc + j, a);
  }
  if (j < n) {
    ct_sum_rows_f32_generic(x + j * step, row_step, rows, step, n - j, acc + j);
  }
}

/* One contiguous max (IS_MAX 1) or min (0) run, CT_NANPICK_LOOP's lanes and order: vector j of a
 * 32-element block holds lanes 8j .. 8j + 7, MAXPS/MINPS are CT_LANE_MAX/MIN, and a nan is
 * remembered for whole pairs of vectors (one unordered compare per two vectors), which keeps the
 * loop to three instructions per vector: few enough for the core to keep the memory stream busy. */
#define CT_PICK_F32_AVX2(NAME, VPICK, HPICK, PICK)                                                \
  CT_CPU_TARGET_AVX2 static float NAME(const float* x, int64_t n, float m) {                      \
    int64_t b = 0;                                                                                \
    if (n >= 2 * CT_NANMAX_WIDTH) {                                                               \
      __m256 r0 = _mm256_loadu_ps(x), r1 = _mm256_loadu_ps(x + 8);                                \
      __m256 r2 = _mm256_loadu_ps(x + 16), r3 = _mm256_loadu_ps(x + 24);                          \
      __m256 nan =                                                                                \
          _mm256_or_ps(_mm256_cmp_ps(r0, r1, _CMP_UNORD_Q), _mm256_cmp_ps(r2, r3, _CMP_UNORD_Q)); \
      for (b = CT_NANMAX_WIDTH; b + CT_NANMAX_WIDTH <= n; b += CT_NANMAX_WIDTH) {                 \
        const __m256 v0 = _mm256_loadu_ps(x + b), v1 = _mm256_loadu_ps(x + b + 8);                \
        const __m256 v2 = _mm256_loadu_ps(x + b + 16), v3 = _mm256_loadu_ps(x + b + 24);          \
        r0 = VPICK(r0, v0);                                                                       \
        r1 = VPICK(r1, v1);                                                                       \
        r2 = VPICK(r2, v2);                                                                       \
        r3 = VPICK(r3, v3);                                                                       \
        nan = _mm256_or_ps(nan, _mm256_or_ps(_mm256_cmp_ps(v0, v1, _CMP_UNORD_Q),                 \
                                             _mm256_cmp_ps(v2, v3, _CMP_UNORD_Q)));               \
      }                                                                                           \
      /* The lanes in any order: the same value as lane by lane in order, except which zero       \
       * wins between -0 and +0 (a nan in a lane is dealt with below). A zero result takes the    \
       * lanes in order; branching on each lane there cost half the time of 4 KB rows. */         \
      const __m256 t = VPICK(VPICK(r0, r1), VPICK(r2, r3));                                       \
      __m128 h = HPICK(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1));                   \
      h = HPICK(h, _mm_movehl_ps(h, h));                                                          \
      h = HPICK(h, _mm_movehdup_ps(h));                                                           \
      const float top = _mm_cvtss_f32(h);                                                         \
      if (top != 0.0f) {                                                                          \
        m = PICK(m, top);                                                                         \
      } else {                                                                                    \
        float r[CT_NANMAX_WIDTH];                                                                 \
        _mm256_storeu_ps(r, r0);                                                                  \
        _mm256_storeu_ps(r + 8, r1);                                                              \
        _mm256_storeu_ps(r + 16, r2);                                                             \
        _mm256_storeu_ps(r + 24, r3);                                                             \
        for (int k = 0; k < CT_NANMAX_WIDTH; ++k) m = PICK(m, r[k]);                              \
      }                                                                                           \
      for (int64_t i = 0; _mm256_movemask_ps(nan) && i < b; ++i) {                                \
        if (x[i] != x[i]) {                                                                       \
          m = PICK(m, x[i]);                                                                      \
          break;                                                                                  \
        }                                                                                         \
      }                                                                                           \
    }                                                                                             \
    for (int64_t i = b; i < n; ++i) m = PICK(m, x[i]);                                            \
    return m;                                                                                     \
  }
CT_PICK_F32_AVX2(ct_max_f32_avx2, _mm256_max_ps, _mm_max_ps, CT_NAN_MAX)
CT_PICK_F32_AVX2(ct_min_f32_avx2, _mm256_min_ps, _mm_min_ps, CT_NAN_MIN)
#undef CT_PICK_F32_AVX2

/* ct_cpu_find_f32, 32 elements a step: one compare per vector (equal, or unordered when looking
 * for a nan), one mask test per step. */
CT_CPU_TARGET_AVX2 __attribute__((always_inline)) static inline int64_t ct_find_f32_avx2_loop(
    const float* x, int64_t n, float value, const int nan) {
  const __m256 v = _mm256_set1_ps(value);
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    __m256 hit[4];
    for (int k = 0; k < 4; ++k) {
      const __m256 e = _mm256_loadu_ps(x + i + 8 * k);
      hit[k] = nan ? _mm256_cmp_ps(e, e, _CMP_UNORD_Q) : _mm256_cmp_ps(e, v, _CMP_EQ_OQ);
    }
    const __m256 any = _mm256_or_ps(_mm256_or_ps(hit[0], hit[1]), _mm256_or_ps(hit[2], hit[3]));
    if (_mm256_movemask_ps(any)) {
      for (int k = 0; k < 4; ++k) {
        const int mask = _mm256_movemask_ps(hit[k]);
        if (mask) return i + 8 * k + __builtin_ctz((unsigned)mask);
      }
    }
  }
  for (; i < n; ++i) {
    if (nan ? x[i] != x[i] : x[i] == value) return i;
  }
  return n;
}
CT_CPU_TARGET_AVX2 static int64_t ct_find_f32_avx2(const float* x, int64_t n, float value) {
  return value != value ? ct_find_f32_avx2_loop(x, n, value, 1)
                        : ct_find_f32_avx2_loop(x, n, value, 0);
}
#endif

static int ct_reduce_f32_use_avx2(void) {
#ifdef CT_REDUCE_F32_AVX2
  return ct_cpu_isa() >= CT_CPU_ISA_AVX2;
#else
  return 0;
#endif
}

double ct_cpu_sum_f32(const float* x, int64_t n) {
  double (*lanes)(const float*, int64_t) = ct_sum_f32_lanes_generic;
#ifdef CT_REDUCE_F32_AVX2
  if (ct_reduce_f32_use_avx2()) lanes = ct_sum_f32_lanes_avx2;
#endif
  const int64_t vectorised = n - n % CT_SUM_F32_LANES;
  double total = 0.0;
  for (int64_t i = 0; i < vectorised; i += CT_SUM_F32_BLOCK) {
    const int64_t m = vectorised - i < CT_SUM_F32_BLOCK ? vectorised - i : CT_SUM_F32_BLOCK;
    total += lanes(x + i, m);
  }
  for (int64_t i = vectorised; i < n; ++i) total += (double)x[i];
  return total;
}

void ct_cpu_sum_rows_f32(const char* x, int64_t row_step, int64_t rows, int64_t step, int64_t n,
                         double* acc) {
#ifdef CT_REDUCE_F32_AVX2
  if (ct_reduce_f32_use_avx2()) {
    ct_sum_rows_f32_avx2(x, row_step, rows, step, n, acc);
    return;
  }
#endif
  ct_sum_rows_f32_generic(x, row_step, rows, step, n, acc);
}

/* ct_cpu_max_f32 / ct_cpu_min_f32: the AVX2 loop where the CPU has it, else the generic one. */
#ifdef CT_REDUCE_F32_AVX2
#define CT_PICK_F32_AVX2_FIRST(AVX2_NAME) \
  if (ct_reduce_f32_use_avx2()) return AVX2_NAME(x, n, m);
#else
#define CT_PICK_F32_AVX2_FIRST(AVX2_NAME)
#endif
#define CT_PICK_F32_DEFINE(NAME, AVX2_NAME, LOOP)  \
  float NAME(const float* x, int64_t n, float m) { \
    CT_PICK_F32_AVX2_FIRST(AVX2_NAME)              \
    LOOP(float, n, x[ct_i], m);                    \
    return m;                                      \
  }
CT_PICK_F32_DEFINE(ct_cpu_max_f32, ct_max_f32_avx2, CT_NANMAX_LOOP)
CT_PICK_F32_DEFINE(ct_cpu_min_f32, ct_min_f32_avx2, CT_NANMIN_LOOP)

int64_t ct_cpu_find_f32(const float* x, int64_t n, float value) {
#ifdef CT_REDUCE_F32_AVX2
  if (ct_reduce_f32_use_avx2()) return ct_find_f32_avx2(x, n, value);
#endif
  const int nan = value != value;
  for (int64_t i = 0; i < n; ++i) {
    if (x[i] == value || (nan && x[i] != x[i])) return i;
  }
  return n;
}
