/* reduce_kernels.c - sum, mean, logsumexp, prod, max, min, any, all, var, std over axes, on the
 * reduction engine (reduce_layout.h).
 *
 * Accumulator families, each written once for every dtype:
 *   isum  integer and bool sums, wrapping in uint64 (NumPy's int64/uint64 results);
 *   fsum  float sums and every mean: a double accumulator, pairwise over runs (NumPy's
 *         pairwise_sum: 8 accumulators per 128-element block) and two-level over rows;
 *         float32 runs and rows go through the vectorised loops of reduce_f32.h;
 *   iprod integer and bool products, wrapping in uint64 (NumPy's int64/uint64 results);
 *   fprod float products: a double accumulator, one rounding at the end;
 *   lse   logsumexp: a streaming (maximum, rescaled sum of exponentials) pair in double;
 *   max, min  extremum in the compute type; nan propagates;
 *   any, all  logical or / and of x != 0 (nan is true), bool results;
 *   csum, cmean, cprod  complex64/complex128 (complex_reduce_families.h). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "ops/complex_reduce_families.h"
#include "engine/cpu_dtypes.h"
#include "cpu_register.h"
#include "ops/reduce_f32.h"
#include "engine/reduce_layout.h"

/* ----- stores from a double result ----- */

static inline uint16_t ct_dstore_f16(double v) {
  return ct_double_to_half(v);
}
static inline uint16_t ct_dstore_bf16(double v) {
  return ct_double_to_bfloat16(v);
}
static inline float ct_dstore_f32(double v) {
  return (float)v;
}
static inline double ct_dstore_f64(double v) {
  return v;
}

/* ----- lowest values per compute type (max's identity) ----- */

#define CT_DEF(A, SFX, T, C, U, ID)                                  \
  static inline C ct_lowest_##C(void) {                              \
    return (C)(-1) < (C)0 ? (C)((U)1 << (sizeof(C) * 8 - 1)) : (C)0; \
  }
CT_CPU_INT_TYPES(CT_DEF, _)
#undef CT_DEF
static inline ct_bool8 ct_lowest_ct_bool8(void) {
  return 0;
}
static inline float ct_lowest_float(void) {
  return -INFINITY;
}
static inline double ct_lowest_double(void) {
  return -INFINITY;
}

/* ----- highest values per compute type (min's identity) ----- */

#define CT_DEF(A, SFX, T, C, U, ID)                                                 \
  static inline C ct_highest_##C(void) {                                            \
    return (C)(-1) < (C)0 ? (C)(((U)1 << (sizeof(C) * 8 - 1)) - 1) : (C)(U)(~(U)0); \
  }
CT_CPU_INT_TYPES(CT_DEF, _)
#undef CT_DEF
static inline ct_bool8 ct_highest_ct_bool8(void) {
  return 1;
}
static inline float ct_highest_float(void) {
  return INFINITY;
}
static inline double ct_highest_double(void) {
  return INFINITY;
}

/* ----- isum: uint64 accumulator, wraps like NumPy's int64/uint64 sums ----- */

#define CT_FAMILY_isum(OP, SFX, T, C, OSFX, OT)                                                   \
  static void ct_##OP##_##SFX##_init(void* acc, int64_t n) {                                      \
    memset(acc, 0, (size_t)n * sizeof(uint64_t));                                                 \
  }                                                                                               \
  CT_CPU_HOT static void ct_##OP##_##SFX##_run(const char* x, int64_t step, int64_t n,            \
                                               int64_t index, void* acc) {                        \
    uint64_t s = 0;                                                                               \
    if (step == (int64_t)sizeof(T)) {                                                             \
      const T* p = (const T*)x;                                                                   \
      for (int64_t i = 0; i < n; ++i) s += (uint64_t)ct_load_##SFX(p[i]);                         \
    } else {                                                                                      \
      for (int64_t i = 0; i < n; ++i) s += (uint64_t)ct_load_##SFX(CT_REDUCE_AT(T, x, i, step));  \
    }                                                                                             \
    *(uint64_t*)acc += s;                                                                         \
  }                                                                                               \
  CT_CPU_HOT static void ct_##OP##_##SFX##_rows(const char* x, int64_t step, int64_t n,           \
                                                int64_t index, void* acc) {                       \
    uint64_t* a = acc;                                                                            \
    if (step == (int64_t)sizeof(T)) {                                                             \
      const T* p = (const T*)x;                                                                   \
      for (int64_t j = 0; j < n; ++j) a[j] += (uint64_t)ct_load_##SFX(p[j]);                      \
    } else {                                                                                      \
      for (int64_t j = 0; j < n; ++j)                                                             \
        a[j] += (uint64_t)ct_load_##SFX(CT_REDUCE_AT(T, x, j, step));                             \
    }                                                                                             \
  }                                                                                               \
  static void ct_##OP##_##SFX##_combine(void* acc, const void* later, int64_t n) {                \
    uint64_t* a = acc;                                                                            \
    const uint64_t* b = later;                                                                    \
    for (int64_t j = 0; j < n; ++j) a[j] += b[j];                                                 \
  }                                                                                               \
  static void ct_##OP##_##SFX##_finalize(const void* acc, int64_t n, char* out, int64_t out_step, \
                                         int64_t count, double param) {                           \
    const uint64_t* a = acc;                                                                      \
    for (int64_t j = 0; j < n; ++j) *(OT*)(out + j * out_step) = (OT)a[j];                        \
  }                                                                                               \
  CT_REDUCE_VTABLE(OP, SFX, sizeof(uint64_t), false, false)

/* ----- fsum / fmean: double accumulator, pairwise over runs, two-level over rows ----- */

/* The body of NumPy's pairwise_sum over n elements: LOAD is an expression of i; LEFT and RIGHT
 * recurse on the first `half` elements and on the rest. */
#define CT_PAIRWISE_STEPS(LOAD, LEFT, RIGHT)                                      \
  if (n < 8) {                                                                    \
    double s = 0.0;                                                               \
    for (int64_t i = 0; i < n; ++i) s += LOAD;                                    \
    return s;                                                                     \
  }                                                                               \
  if (n <= 128) {                                                                 \
    double r[8];                                                                  \
    for (int64_t i = 0; i < 8; ++i) r[i] = LOAD;                                  \
    int64_t b;                                                                    \
    for (b = 8; b < n - (n % 8); b += 8) {                                        \
      for (int64_t k = 0; k < 8; ++k) {                                           \
        const int64_t i = b + k;                                                  \
        r[k] += LOAD;                                                             \
      }                                                                           \
    }                                                                             \
    double s = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7])); \
    for (int64_t i = b; i < n; ++i) s += LOAD;                                    \
    return s;                                                                     \
  }                                                                               \
  const int64_t half = n / 2 - (n / 2) % 8;                                       \
  return LEFT + RIGHT;

/* float32 runs and rows take the loops of reduce_f32.h (double accumulators as here, blocked
 * instead of pairwise: its double lanes make the pairwise tree unnecessary for accuracy). */
#define CT_IS_F32(T) _Generic((T)0, float: 1, default: 0)
static void ct_fsum_rows_many_f32(const char* x, int64_t row_step, int64_t rows, int64_t step,
                                  int64_t n, void* acc) {
  ct_cpu_sum_rows_f32(x, row_step, rows, step, n, acc);
}
#define CT_FSUM_ROWS_MANY(T) \
  _Generic((T)0, float: ct_fsum_rows_many_f32, default: (ct_reduce_rows_many_fn)NULL)

/* DIVIDE: 1 for mean (result / count), 0 for sum. */
#define CT_FLOAT_SUM_FAMILY(OP, SFX, T, C, OSFX, OT, DIVIDE)                                       \
  CT_CPU_HOT static double ct_##OP##_##SFX##_pw_contig(const T* p, int64_t n){                     \
      CT_PAIRWISE_STEPS((double)ct_load_##SFX(p[i]), ct_##OP##_##SFX##_pw_contig(p, half),         \
                        ct_##OP##_##SFX##_pw_contig(p + half, n - half))} CT_CPU_HOT static double \
      ct_##OP##_##SFX##_pw_strided(const char* x, int64_t step, int64_t n) {                       \
    CT_PAIRWISE_STEPS((double)ct_load_##SFX(CT_REDUCE_AT(T, x, i, step)),                          \
                      ct_##OP##_##SFX##_pw_strided(x, step, half),                                 \
                      ct_##OP##_##SFX##_pw_strided(x + half * step, step, n - half))               \
  }                                                                                                \
  static void ct_##OP##_##SFX##_init(void* acc, int64_t n) {                                       \
    double* a = acc;                                                                               \
    for (int64_t j = 0; j < n; ++j) a[j] = 0.0;                                                    \
  }                                                                                                \
  CT_CPU_HOT static void ct_##OP##_##SFX##_run(const char* x, int64_t step, int64_t n,             \
                                               int64_t index, void* acc) {                         \
    if (CT_IS_F32(T) && step == (int64_t)sizeof(T)) {                                              \
      *(double*)acc += ct_cpu_sum_f32((const float*)x, n);                                         \
      return;                                                                                      \
    }                                                                                              \
    *(double*)acc += step == (int64_t)sizeof(T) ? ct_##OP##_##SFX##_pw_contig((const T*)x, n)      \
                                                : ct_##OP##_##SFX##_pw_strided(x, step, n);        \
  }                                                                                                \
  CT_CPU_HOT static void ct_##OP##_##SFX##_rows(const char* x, int64_t step, int64_t n,            \
                                                int64_t index, void* acc) {                        \
    double* a = acc;                                                                               \
    if (step == (int64_t)sizeof(T)) {                                                              \
      const T* p = (const T*)x;                                                                    \
      for (int64_t j = 0; j < n; ++j) a[j] += (double)ct_load_##SFX(p[j]);                         \
    } else {                                                                                       \
      for (int64_t j = 0; j < n; ++j) a[j] += (double)ct_load_##SFX(CT_REDUCE_AT(T, x, j, step));  \
    }                                                                                              \
  }                                                                                                \
  static void ct_##OP##_##SFX##_combine(void* acc, const void* later, int64_t n) {                 \
    double* a = acc;                                                                               \
    const double* b = later;                                                                       \
    for (int64_t j = 0; j < n; ++j) a[j] += b[j];                                                  \
  }                                                                                                \
  static void ct_##OP##_##SFX##_finalize(const void* acc, int64_t n, char* out, int64_t out_step,  \
                                         int64_t count, double param) {                            \
    const double* a = acc;                                                                         \
    for (int64_t j = 0; j < n; ++j) {                                                              \
      *(OT*)(out + j * out_step) = ct_dstore_##OSFX(DIVIDE ? a[j] / (double)count : a[j]);         \
    }                                                                                              \
  }                                                                                                \
  CT_REDUCE_VTABLE_MANY(OP, SFX, sizeof(double), false, true, CT_FSUM_ROWS_MANY(T))

#define CT_FAMILY_fsum(OP, SFX, T, C, OSFX, OT) CT_FLOAT_SUM_FAMILY(OP, SFX, T, C, OSFX, OT, 0)
#define CT_FAMILY_fmean(OP, SFX, T, C, OSFX, OT) CT_FLOAT_SUM_FAMILY(OP, SFX, T, C, OSFX, OT, 1)

/* ----- max, min: compute-type accumulator, nan propagates ----- */

/* Contiguous float32 runs take the loops of reduce_f32.h (bitwise CT_NANPICK_LOOP's result). */
#define CT_PICK_F32_CT_NAN_MAX ct_cpu_max_f32
#define CT_PICK_F32_CT_NAN_MIN ct_cpu_min_f32
#define CT_PICK_F32(PICK) CT_PICK_F32_##PICK

#define CT_PICK_FAMILY(OP, SFX, T, C, OSFX, OT, IDENTITY, PICK, LANE)                             \
  static void ct_##OP##_##SFX##_init(void* acc, int64_t n) {                                      \
    C* a = acc;                                                                                   \
    for (int64_t j = 0; j < n; ++j) a[j] = IDENTITY##C();                                         \
  }                                                                                               \
  CT_CPU_HOT static void ct_##OP##_##SFX##_run(const char* x, int64_t step, int64_t n,            \
                                               int64_t index, void* acc) {                        \
    C m = *(C*)acc;                                                                               \
    if (CT_IS_F32(T) && step == (int64_t)sizeof(T)) {                                             \
      m = CT_PICK_F32(PICK)((const float*)x, n, m);                                               \
    } else if (step == (int64_t)sizeof(T)) {                                                      \
      const T* p = (const T*)x;                                                                   \
      CT_NANPICK_LOOP(C, n, ct_load_##SFX(p[ct_i]), m, PICK, LANE);                               \
    } else {                                                                                      \
      CT_NANPICK_LOOP(C, n, ct_load_##SFX(CT_REDUCE_AT(T, x, ct_i, step)), m, PICK, LANE);        \
    }                                                                                             \
    *(C*)acc = m;                                                                                 \
  }                                                                                               \
  CT_CPU_HOT static void ct_##OP##_##SFX##_rows(const char* x, int64_t step, int64_t n,           \
                                                int64_t index, void* acc) {                       \
    C* a = acc;                                                                                   \
    if (step == (int64_t)sizeof(T)) {                                                             \
      const T* p = (const T*)x;                                                                   \
      for (int64_t j = 0; j < n; ++j) {                                                           \
        const C v = ct_load_##SFX(p[j]);                                                          \
        a[j] = PICK(a[j], v);                                                                     \
      }                                                                                           \
    } else {                                                                                      \
      for (int64_t j = 0; j < n; ++j) {                                                           \
        const C v = ct_load_##SFX(CT_REDUCE_AT(T, x, j, step));                                   \
        a[j] = PICK(a[j], v);                                                                     \
      }                                                                                           \
    }                                                                                             \
  }                                                                                               \
  static void ct_##OP##_##SFX##_combine(void* acc, const void* later, int64_t n) {                \
    C* a = acc;                                                                                   \
    const C* b = later;                                                                           \
    for (int64_t j = 0; j < n; ++j) a[j] = PICK(a[j], b[j]);                                      \
  }                                                                                               \
  static void ct_##OP##_##SFX##_finalize(const void* acc, int64_t n, char* out, int64_t out_step, \
                                         int64_t count, double param) {                           \
    const C* a = acc;                                                                             \
    for (int64_t j = 0; j < n; ++j) *(OT*)(out + j * out_step) = ct_store_##OSFX(a[j]);           \
  }                                                                                               \
  CT_REDUCE_VTABLE(OP, SFX, sizeof(C), false, false)

#define CT_FAMILY_max(OP, SFX, T, C, OSFX, OT) \
  CT_PICK_FAMILY(OP, SFX, T, C, OSFX, OT, ct_lowest_, CT_NAN_MAX, CT_LANE_MAX)
#define CT_FAMILY_min(OP, SFX, T, C, OSFX, OT) \
  CT_PICK_FAMILY(OP, SFX, T, C, OSFX, OT, ct_highest_, CT_NAN_MIN, CT_LANE_MIN)

/* ----- iprod / fprod: uint64 (wrapping) or double accumulator, identity 1 ----- */

/* ACC the accumulator type, LOADACC(v) a loaded value as ACC, STORE(a) the result as OT. */
#define CT_PROD_FAMILY(OP, SFX, T, C, OSFX, OT, ACC, STORE)                                       \
  static void ct_##OP##_##SFX##_init(void* acc, int64_t n) {                                      \
    ACC* a = acc;                                                                                 \
    for (int64_t j = 0; j < n; ++j) a[j] = (ACC)1;                                                \
  }                                                                                               \
  CT_CPU_HOT static void ct_##OP##_##SFX##_run(const char* x, int64_t step, int64_t n,            \
                                               int64_t index, void* acc) {                        \
    ACC r = *(ACC*)acc;                                                                           \
    if (step == (int64_t)sizeof(T)) {                                                             \
      const T* p = (const T*)x;                                                                   \
      for (int64_t i = 0; i < n; ++i) r *= (ACC)ct_load_##SFX(p[i]);                              \
    } else {                                                                                      \
      for (int64_t i = 0; i < n; ++i) r *= (ACC)ct_load_##SFX(CT_REDUCE_AT(T, x, i, step));       \
    }                                                                                             \
    *(ACC*)acc = r;                                                                               \
  }                                                                                               \
  CT_CPU_HOT static void ct_##OP##_##SFX##_rows(const char* x, int64_t step, int64_t n,           \
                                                int64_t index, void* acc) {                       \
    ACC* a = acc;                                                                                 \
    if (step == (int64_t)sizeof(T)) {                                                             \
      const T* p = (const T*)x;                                                                   \
      for (int64_t j = 0; j < n; ++j) a[j] *= (ACC)ct_load_##SFX(p[j]);                           \
    } else {                                                                                      \
      for (int64_t j = 0; j < n; ++j) a[j] *= (ACC)ct_load_##SFX(CT_REDUCE_AT(T, x, j, step));    \
    }                                                                                             \
  }                                                                                               \
  static void ct_##OP##_##SFX##_combine(void* acc, const void* later, int64_t n) {                \
    ACC* a = acc;                                                                                 \
    const ACC* b = later;                                                                         \
    for (int64_t j = 0; j < n; ++j) a[j] *= b[j];                                                 \
  }                                                                                               \
  static void ct_##OP##_##SFX##_finalize(const void* acc, int64_t n, char* out, int64_t out_step, \
                                         int64_t count, double param) {                           \
    const ACC* a = acc;                                                                           \
    for (int64_t j = 0; j < n; ++j) *(OT*)(out + j * out_step) = STORE(a[j]);                     \
  }                                                                                               \
  CT_REDUCE_VTABLE(OP, SFX, sizeof(ACC), false, false)

#define CT_FAMILY_iprod(OP, SFX, T, C, OSFX, OT) \
  CT_PROD_FAMILY(OP, SFX, T, C, OSFX, OT, uint64_t, (OT))
#define CT_FAMILY_fprod(OP, SFX, T, C, OSFX, OT) \
  CT_PROD_FAMILY(OP, SFX, T, C, OSFX, OT, double, ct_dstore_##OSFX)

/* ----- any / all: uint8 accumulator of x != 0, combined with | or & ----- */

#define CT_LOGIC_FAMILY(OP, SFX, T, C, OSFX, OT, IDENTITY, OPER)                                  \
  static void ct_##OP##_##SFX##_init(void* acc, int64_t n) {                                      \
    memset(acc, IDENTITY, (size_t)n);                                                             \
  }                                                                                               \
  CT_CPU_HOT static void ct_##OP##_##SFX##_run(const char* x, int64_t step, int64_t n,            \
                                               int64_t index, void* acc) {                        \
    uint8_t r = *(uint8_t*)acc;                                                                   \
    if (step == (int64_t)sizeof(T)) {                                                             \
      const T* p = (const T*)x;                                                                   \
      for (int64_t i = 0; i < n; ++i) r = r OPER(uint8_t)(ct_load_##SFX(p[i]) != (C)0);           \
    } else {                                                                                      \
      for (int64_t i = 0; i < n; ++i)                                                             \
        r = r OPER(uint8_t)(ct_load_##SFX(CT_REDUCE_AT(T, x, i, step)) != (C)0);                  \
    }                                                                                             \
    *(uint8_t*)acc = r;                                                                           \
  }                                                                                               \
  CT_CPU_HOT static void ct_##OP##_##SFX##_rows(const char* x, int64_t step, int64_t n,           \
                                                int64_t index, void* acc) {                       \
    uint8_t* a = acc;                                                                             \
    if (step == (int64_t)sizeof(T)) {                                                             \
      const T* p = (const T*)x;                                                                   \
      for (int64_t j = 0; j < n; ++j) a[j] = a[j] OPER(uint8_t)(ct_load_##SFX(p[j]) != (C)0);     \
    } else {                                                                                      \
      for (int64_t j = 0; j < n; ++j)                                                             \
        a[j] = a[j] OPER(uint8_t)(ct_load_##SFX(CT_REDUCE_AT(T, x, j, step)) != (C)0);            \
    }                                                                                             \
  }                                                                                               \
  static void ct_##OP##_##SFX##_combine(void* acc, const void* later, int64_t n) {                \
    uint8_t* a = acc;                                                                             \
    const uint8_t* b = later;                                                                     \
    for (int64_t j = 0; j < n; ++j) a[j] = a[j] OPER b[j];                                        \
  }                                                                                               \
  static void ct_##OP##_##SFX##_finalize(const void* acc, int64_t n, char* out, int64_t out_step, \
                                         int64_t count, double param) {                           \
    const uint8_t* a = acc;                                                                       \
    for (int64_t j = 0; j < n; ++j) *(OT*)(out + j * out_step) = (OT)a[j];                        \
  }                                                                                               \
  CT_REDUCE_VTABLE(OP, SFX, 1, false, false)

#define CT_FAMILY_any(OP, SFX, T, C, OSFX, OT) CT_LOGIC_FAMILY(OP, SFX, T, C, OSFX, OT, 0, |)
#define CT_FAMILY_all(OP, SFX, T, C, OSFX, OT) CT_LOGIC_FAMILY(OP, SFX, T, C, OSFX, OT, 1, &)

/* ----- var / std: (count, mean, m2) per output, merged as Chan et al.; runs take two passes ---
 * The result is m2 / max(count - correction, 0) (NumPy: nan for an empty reduction, inf or nan
 * when the correction leaves no degrees of freedom); std its square root. */

typedef struct ct_moments {
  double n, mean, m2;
} ct_moments;

/* a = a merged with b (b covers later elements). */
static inline void ct_moments_merge(ct_moments* a, const ct_moments* b) {
  if (b->n == 0) return;
  if (a->n == 0) {
    *a = *b;
    return;
  }
  const double n = a->n + b->n, delta = b->mean - a->mean;
  a->mean += delta * (b->n / n);
  a->m2 += b->m2 + delta * delta * (a->n * b->n / n);
  a->n = n;
}

static inline double ct_moments_result(const ct_moments* a, int64_t count, double correction,
                                       int root) {
  const double dof = (double)count - correction;
  const double v = a->m2 / (dof > 0 ? dof : 0.0);
  return root ? sqrt(v) : v;
}

static const ct_moments ct_moments_start = {0.0, 0.0, 0.0};

/* Welford's update: one more element. */
static inline void ct_moments_push(ct_moments* a, double v) {
  a->n += 1.0;
  const double d = v - a->mean;
  a->mean += d / a->n;
  a->m2 += d * (v - a->mean);
}

static inline double ct_var_result(const ct_moments* a, int64_t count, double correction) {
  return ct_moments_result(a, count, correction, 0);
}

static inline double ct_std_result(const ct_moments* a, int64_t count, double correction) {
  return ct_moments_result(a, count, correction, 1);
}

/* ----- logsumexp: a streaming (running maximum m, sum s of exp(x - m)) pair in double -----
 * A new maximum rescales the sum; partial pairs merge by rescaling to the larger maximum.
 * -inf elements add nothing; a +inf or nan maximum decides the result (nan wins over +inf), so
 * all -inf (and an empty reduction) gives -inf, any +inf gives +inf, as torch.logsumexp. */

typedef struct ct_lse {
  double m, s;
} ct_lse;

static const ct_lse ct_lse_start = {-INFINITY, 0.0};

static inline void ct_lse_push(ct_lse* a, double v) {
  if (v > a->m || v != v) {
    a->s = a->s * exp(a->m - v) + 1.0; /* meaningless once m is +inf or nan: never read */
    a->m = v;
  } else if (v != -INFINITY) {
    a->s += exp(v - a->m);
  }
}

static inline void ct_lse_merge(ct_lse* a, const ct_lse* b) {
  const double m = CT_NAN_MAX(a->m, b->m);
  if (isfinite(m)) {
    a->s = a->s * exp(a->m - m) + b->s * exp(b->m - m);
  }
  a->m = m;
}

static inline double ct_lse_result(const ct_lse* a, int64_t count, double param) {
  (void)count;
  (void)param;
  return isfinite(a->m) ? a->m + log(a->s) : a->m;
}

/* ----- families whose accumulator is a small state struct in double -----
 * STATE is the struct, START a constant holding its initial value, PUSH(state*, double) adds one
 * element, MERGE(state*, const state*) appends a later partial, RESULT(const state*, count, param)
 * gives the output value. The family supplies init, rows, combine, finalize and the vtable; RUN is
 * the run function (the generic one pushes each element; var/std use two passes), MANY names the
 * family's rows_many or none (CT_STATE_ROWS_MANY, CT_STATE_NO_ROWS_MANY). */
#define CT_STATE_FAMILY(OP, SFX, T, OSFX, OT, STATE, START, PUSH, MERGE, RESULT, RUN, MANY)       \
  static void ct_##OP##_##SFX##_init(void* acc, int64_t n) {                                      \
    STATE* a = acc;                                                                               \
    for (int64_t j = 0; j < n; ++j) a[j] = START;                                                 \
  }                                                                                               \
  RUN(OP, SFX, T, STATE, PUSH, MERGE)                                                             \
  CT_CPU_HOT static void ct_##OP##_##SFX##_rows(const char* x, int64_t step, int64_t n,           \
                                                int64_t index, void* acc) {                       \
    STATE* a = acc;                                                                               \
    for (int64_t j = 0; j < n; ++j)                                                               \
      PUSH(&a[j], (double)ct_load_##SFX(CT_REDUCE_AT(T, x, j, step)));                            \
  }                                                                                               \
  static void ct_##OP##_##SFX##_combine(void* acc, const void* later, int64_t n) {                \
    STATE* a = acc;                                                                               \
    const STATE* b = later;                                                                       \
    for (int64_t j = 0; j < n; ++j) MERGE(&a[j], &b[j]);                                          \
  }                                                                                               \
  static void ct_##OP##_##SFX##_finalize(const void* acc, int64_t n, char* out, int64_t out_step, \
                                         int64_t count, double param) {                           \
    const STATE* a = acc;                                                                         \
    for (int64_t j = 0; j < n; ++j) {                                                             \
      *(OT*)(out + j * out_step) = ct_dstore_##OSFX(RESULT(&a[j], count, param));                 \
    }                                                                                             \
  }                                                                                               \
  CT_REDUCE_VTABLE_MANY(OP, SFX, sizeof(STATE), false, false, MANY(OP, SFX))

/* The MANY argument of CT_STATE_FAMILY: the family's rows_many, or none. */
#define CT_STATE_NO_ROWS_MANY(OP, SFX) NULL
#define CT_STATE_ROWS_MANY(OP, SFX) ct_##OP##_##SFX##_rows_many

/* Run: push every element of the run in order. */
#define CT_STATE_RUN_PUSH(OP, SFX, T, STATE, PUSH, MERGE)                                         \
  CT_CPU_HOT static void ct_##OP##_##SFX##_run(const char* x, int64_t step, int64_t n,            \
                                               int64_t index, void* acc) {                        \
    STATE a = *(STATE*)acc;                                                                       \
    for (int64_t i = 0; i < n; ++i) PUSH(&a, (double)ct_load_##SFX(CT_REDUCE_AT(T, x, i, step))); \
    *(STATE*)acc = a;                                                                             \
  }

/* Run for var/std: the run's moments in two passes (mean, then squared deviations), merged.
 * Contiguous runs add into CT_MOMENT_LANES independent sums, combined pairwise at the end, so
 * that the additions are not one dependency chain (one element per add latency) and
 * vectorise. */
#define CT_MOMENT_LANES 8
static inline double ct_moment_lanes_total(const double* s) {
  return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}
#define CT_STATE_RUN_MOMENTS(OP, SFX, T, STATE, PUSH, MERGE)                                   \
  CT_CPU_HOT static void ct_##OP##_##SFX##_run(const char* x, int64_t step, int64_t n,         \
                                               int64_t index, void* acc) {                     \
    if (n <= 0) return;                                                                        \
    double lanes[CT_MOMENT_LANES] = {0.0};                                                     \
    int64_t i = 0;                                                                             \
    if (step == (int64_t)sizeof(T)) {                                                          \
      const T* p = (const T*)x;                                                                \
      for (; i + CT_MOMENT_LANES <= n; i += CT_MOMENT_LANES) {                                 \
        for (int k = 0; k < CT_MOMENT_LANES; ++k) lanes[k] += (double)ct_load_##SFX(p[i + k]); \
      }                                                                                        \
    }                                                                                          \
    double sum = ct_moment_lanes_total(lanes);                                                 \
    for (; i < n; ++i) sum += (double)ct_load_##SFX(CT_REDUCE_AT(T, x, i, step));              \
    ct_moments b = {(double)n, sum / (double)n, 0.0};                                          \
    for (int k = 0; k < CT_MOMENT_LANES; ++k) lanes[k] = 0.0;                                  \
    i = 0;                                                                                     \
    if (step == (int64_t)sizeof(T)) {                                                          \
      const T* p = (const T*)x;                                                                \
      for (; i + CT_MOMENT_LANES <= n; i += CT_MOMENT_LANES) {                                 \
        for (int k = 0; k < CT_MOMENT_LANES; ++k) {                                            \
          const double d = (double)ct_load_##SFX(p[i + k]) - b.mean;                           \
          lanes[k] += d * d;                                                                   \
        }                                                                                      \
      }                                                                                        \
    }                                                                                          \
    b.m2 = ct_moment_lanes_total(lanes);                                                       \
    for (; i < n; ++i) {                                                                       \
      const double d = (double)ct_load_##SFX(CT_REDUCE_AT(T, x, i, step)) - b.mean;            \
      b.m2 += d * d;                                                                           \
    }                                                                                          \
    ct_moments_merge(acc, &b);                                                                 \
  }

/* rows_many for var/std: blocks of CT_MOMENT_BLOCK lanes are copied into an array per field
 * (count, mean, m2), take Welford's update for each of the rows there, and are copied back: the
 * same operations in the same order as ct_moments_push row by row, but over contiguous arrays,
 * which the compiler vectorises (4 divisions an instruction with AVX2) where the array-of-structs
 * accumulators kept it to one element at a time. */
#define CT_MOMENT_BLOCK 64
#define CT_MOMENTS_ROWS_MANY(OP, SFX, T)                                                   \
  CT_CPU_HOT static void ct_##OP##_##SFX##_rows_many(                                      \
      const char* x, int64_t row_step, int64_t rows, int64_t step, int64_t n, void* acc) { \
    ct_moments* a = acc;                                                                   \
    for (int64_t j0 = 0; j0 < n; j0 += CT_MOMENT_BLOCK) {                                  \
      const int64_t m = n - j0 < CT_MOMENT_BLOCK ? n - j0 : CT_MOMENT_BLOCK;               \
      double count[CT_MOMENT_BLOCK], mean[CT_MOMENT_BLOCK], m2[CT_MOMENT_BLOCK];           \
      for (int64_t j = 0; j < m; ++j) {                                                    \
        count[j] = a[j0 + j].n;                                                            \
        mean[j] = a[j0 + j].mean;                                                          \
        m2[j] = a[j0 + j].m2;                                                              \
      }                                                                                    \
      for (int64_t r = 0; r < rows; ++r) {                                                 \
        const char* row = x + r * row_step + j0 * step;                                    \
        for (int64_t j = 0; j < m; ++j) {                                                  \
          const double v = (double)ct_load_##SFX(CT_REDUCE_AT(T, row, j, step));           \
          count[j] += 1.0;                                                                 \
          const double d = v - mean[j];                                                    \
          mean[j] += d / count[j];                                                         \
          m2[j] += d * (v - mean[j]);                                                      \
        }                                                                                  \
      }                                                                                    \
      for (int64_t j = 0; j < m; ++j) {                                                    \
        a[j0 + j].n = count[j];                                                            \
        a[j0 + j].mean = mean[j];                                                          \
        a[j0 + j].m2 = m2[j];                                                              \
      }                                                                                    \
    }                                                                                      \
  }

#define CT_FAMILY_var(OP, SFX, T, C, OSFX, OT)                                         \
  CT_MOMENTS_ROWS_MANY(OP, SFX, T)                                                     \
  CT_STATE_FAMILY(OP, SFX, T, OSFX, OT, ct_moments, ct_moments_start, ct_moments_push, \
                  ct_moments_merge, ct_var_result, CT_STATE_RUN_MOMENTS, CT_STATE_ROWS_MANY)
#define CT_FAMILY_std(OP, SFX, T, C, OSFX, OT)                                         \
  CT_MOMENTS_ROWS_MANY(OP, SFX, T)                                                     \
  CT_STATE_FAMILY(OP, SFX, T, OSFX, OT, ct_moments, ct_moments_start, ct_moments_push, \
                  ct_moments_merge, ct_std_result, CT_STATE_RUN_MOMENTS, CT_STATE_ROWS_MANY)
#define CT_FAMILY_lse(OP, SFX, T, C, OSFX, OT)                                           \
  CT_STATE_FAMILY(OP, SFX, T, OSFX, OT, ct_lse, ct_lse_start, ct_lse_push, ct_lse_merge, \
                  ct_lse_result, CT_STATE_RUN_PUSH, CT_STATE_NO_ROWS_MANY)

/* ----- the kernel list: (op, family, input dtypes, output dtype), the only place to edit -----
 * The output is a dtype suffix (i64, u64, f64) or `same` (the input's dtype). */

#define CT_REDUCE_KERNELS(K)                  \
  K(sum, isum, CT_CPU_BOOL_TYPE, i64)         \
  K(sum, isum, CT_CPU_SIGNED_TYPES, i64)      \
  K(sum, isum, CT_CPU_UNSIGNED_TYPES, u64)    \
  K(sum, fsum, CT_CPU_FLOAT_TYPES, same)      \
  K(sum, csum, CT_CPU_COMPLEX_TYPES, same)    \
  K(mean, fmean, CT_CPU_BOOL_TYPE, f64)       \
  K(mean, fmean, CT_CPU_INT_TYPES, f64)       \
  K(mean, fmean, CT_CPU_FLOAT_TYPES, same)    \
  K(mean, cmean, CT_CPU_COMPLEX_TYPES, same)  \
  K(logsumexp, lse, CT_CPU_FLOAT_TYPES, same) \
  K(max, max, CT_CPU_ALL_TYPES, same)         \
  K(min, min, CT_CPU_ALL_TYPES, same)         \
  K(prod, iprod, CT_CPU_BOOL_TYPE, i64)       \
  K(prod, iprod, CT_CPU_SIGNED_TYPES, i64)    \
  K(prod, iprod, CT_CPU_UNSIGNED_TYPES, u64)  \
  K(prod, fprod, CT_CPU_FLOAT_TYPES, same)    \
  K(prod, cprod, CT_CPU_COMPLEX_TYPES, same)  \
  K(any, any, CT_CPU_ALL_TYPES, b8)           \
  K(any, any, CT_CPU_COMPLEX_TYPES, b8)       \
  K(all, all, CT_CPU_ALL_TYPES, b8)           \
  K(all, all, CT_CPU_COMPLEX_TYPES, b8)       \
  K(var, var, CT_CPU_BOOL_TYPE, f64)          \
  K(var, var, CT_CPU_INT_TYPES, f64)          \
  K(var, var, CT_CPU_FLOAT_TYPES, same)       \
  K(std, std, CT_CPU_BOOL_TYPE, f64)          \
  K(std, std, CT_CPU_INT_TYPES, f64)          \
  K(std, std, CT_CPU_FLOAT_TYPES, same)

/* Output dtype of a list line: suffix, storage type, dtype id. */
#define CT_OUT_SFX_same(SFX, T, ID) SFX
#define CT_OUT_T_same(SFX, T, ID) T
#define CT_OUT_ID_same(SFX, T, ID) ID
#define CT_OUT_SFX_i64(SFX, T, ID) i64
#define CT_OUT_T_i64(SFX, T, ID) int64_t
#define CT_OUT_ID_i64(SFX, T, ID) CT_DT_I64
#define CT_OUT_SFX_u64(SFX, T, ID) u64
#define CT_OUT_T_u64(SFX, T, ID) uint64_t
#define CT_OUT_ID_u64(SFX, T, ID) CT_DT_U64
#define CT_OUT_SFX_f64(SFX, T, ID) f64
#define CT_OUT_T_f64(SFX, T, ID) double
#define CT_OUT_ID_f64(SFX, T, ID) CT_DT_F64
#define CT_OUT_SFX_b8(SFX, T, ID) b8
#define CT_OUT_T_b8(SFX, T, ID) uint8_t
#define CT_OUT_ID_b8(SFX, T, ID) CT_DT_BOOL

/* The list's (op, family, out) travels through the dtype X-macros as one parenthesised
 * argument; CT_CALL expands it into separate arguments. */
#define CT_EXPAND(...) __VA_ARGS__
#define CT_CALL(M, ...) M(__VA_ARGS__)
#define CT_CALL_INNER(M, ...) M(__VA_ARGS__) /* a second name: CT_CALL cannot nest in itself */

#define CT_REDUCE_DEF(OP, FAM, OUT, SFX, T, C, U, ID)                         \
  CT_CALL_INNER(CT_FAMILY_##FAM, OP, SFX, T, C, CT_OUT_SFX_##OUT(SFX, T, ID), \
                CT_OUT_T_##OUT(SFX, T, ID))
#define CT_REDUCE_DEF_X(A, SFX, T, C, U, ID) CT_CALL(CT_REDUCE_DEF, CT_EXPAND A, SFX, T, C, U, ID)

#define CT_REDUCE_REG(OP, FAM, OUT, SFX, T, C, U, ID) \
  {#OP, 2, {ID, CT_OUT_ID_##OUT(SFX, T, ID)}, ct_cpu_reduce_run, NULL, &ct_##OP##_##SFX##_vt},
#define CT_REDUCE_REG_X(A, SFX, T, C, U, ID) CT_CALL(CT_REDUCE_REG, CT_EXPAND A, SFX, T, C, U, ID)

#define K(OP, FAM, TYPES, OUT) TYPES(CT_REDUCE_DEF_X, (OP, FAM, OUT))
CT_REDUCE_KERNELS(K)
#undef K

/* Kernel run function of every reduction here: attrs (axis, keepdims), kernel_data the vtable. */
static int ct_cpu_reduce_run(const ct_kernel_call* call) {
  const ct_tensor* x = call->inputs[0];
  const ct_attr_value* axis = &call->attrs[0];
  bool mask[CT_MAX_NDIM];
  for (int32_t k = 0; k < x->ndim; ++k) mask[k] = axis->type == CT_ATTR_NONE;
  if (axis->type != CT_ATTR_NONE) {
    const int64_t count = axis->type == CT_ATTR_INT_LIST ? axis->count : 1;
    for (int64_t j = 0; j < count; ++j) {
      int64_t k = axis->type == CT_ATTR_INT_LIST ? axis->value.ints[j] : axis->value.i;
      if (k < 0) k += x->ndim;
      if (k < 0 || k >= x->ndim) {
        return ct_set_error(CT_ERROR_INVALID_ARGUMENT, "%s: axis %lld is out of range",
                            call->schema->name, (long long)k);
      }
      mask[k] = true;
    }
  }
  /* var/std: attrs[2] is the correction */
  const double param = call->schema->num_attrs > 2 ? call->attrs[2].value.f : 0.0;
  return ct_cpu_reduce(x, call->outputs[0], mask, call->attrs[1].value.b != 0, call->kernel_data,
                       param);
}

static const ct_cpu_kernel ct_cpu_reduce_kernels[] = {
#define K(OP, FAM, TYPES, OUT) TYPES(CT_REDUCE_REG_X, (OP, FAM, OUT))
    CT_REDUCE_KERNELS(K)
#undef K
};

int ct_cpu_register_reduce(void) {
  return ct_cpu_register_all(ct_cpu_reduce_kernels, CT_CPU_KERNEL_COUNT(ct_cpu_reduce_kernels));
}
