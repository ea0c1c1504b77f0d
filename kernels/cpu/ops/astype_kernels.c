/* astype_kernels.c - conversions between every pair of the 15 dtypes (225 loops).
 *
 * A source value widens losslessly to int64 (signed), uint64 (unsigned, bool) or double
 * (floats), then narrows to the target with one rounding: integers wrap (NumPy), floats to
 * integers truncate with nan -> 0 and saturation (defined here; NumPy leaves it undefined), and
 * doubles and 64-bit integers to float16/bfloat16 round once to nearest even (via a
 * round-to-odd float, which has enough extra bits for the second rounding to be exact).
 * Complex sources widen to complex128; to a real dtype they keep the real part (as NumPy, whose
 * ComplexWarning is a Python warning the binding does not raise), to bool they are true where
 * either part is non-zero. Real sources become complex with a zero imaginary part. */
#include <complex.h>
#include <stdint.h>

#include "cpu_register.h"
#include "engine/elementwise_loops.h"

/* Storage type and dtype id by suffix, for targets. */
typedef uint8_t ct_storage_b8;
typedef int8_t ct_storage_i8;
typedef int16_t ct_storage_i16;
typedef int32_t ct_storage_i32;
typedef int64_t ct_storage_i64;
typedef uint8_t ct_storage_u8;
typedef uint16_t ct_storage_u16;
typedef uint32_t ct_storage_u32;
typedef uint64_t ct_storage_u64;
typedef uint16_t ct_storage_f16;
typedef uint16_t ct_storage_bf16;
typedef float ct_storage_f32;
typedef double ct_storage_f64;
typedef ct_complex64 ct_storage_c64;
typedef ct_complex128 ct_storage_c128;

/* ----- narrowing from the three wide kinds ----- */

#define CT_INT_TARGET(SFX, T, MIN, MAX)                \
  static inline T ct_to_##SFX##_from_i64(int64_t v) {  \
    return (T)v;                                       \
  }                                                    \
  static inline T ct_to_##SFX##_from_u64(uint64_t v) { \
    return (T)v;                                       \
  }                                                    \
  static inline T ct_to_##SFX##_from_f64(double v) {   \
    if (v != v) return 0;                              \
    if (v <= (double)(MIN)) return (MIN);              \
    if (v >= (double)(MAX)) return (MAX);              \
    return (T)v;                                       \
  }
CT_INT_TARGET(i8, int8_t, INT8_MIN, INT8_MAX)
CT_INT_TARGET(i16, int16_t, INT16_MIN, INT16_MAX)
CT_INT_TARGET(i32, int32_t, INT32_MIN, INT32_MAX)
CT_INT_TARGET(i64, int64_t, INT64_MIN, INT64_MAX)
CT_INT_TARGET(u8, uint8_t, 0, UINT8_MAX)
CT_INT_TARGET(u16, uint16_t, 0, UINT16_MAX)
CT_INT_TARGET(u32, uint32_t, 0, UINT32_MAX)
CT_INT_TARGET(u64, uint64_t, 0, UINT64_MAX)

static inline uint8_t ct_to_b8_from_i64(int64_t v) {
  return v != 0;
}
static inline uint8_t ct_to_b8_from_u64(uint64_t v) {
  return v != 0;
}
static inline uint8_t ct_to_b8_from_f64(double v) {
  return v != 0;
}

static inline float ct_to_f32_from_i64(int64_t v) {
  return (float)v;
}
static inline float ct_to_f32_from_u64(uint64_t v) {
  return (float)v;
}
static inline float ct_to_f32_from_f64(double v) {
  return (float)v;
}
static inline double ct_to_f64_from_i64(int64_t v) {
  return (double)v;
}
static inline double ct_to_f64_from_u64(uint64_t v) {
  return (double)v;
}
static inline double ct_to_f64_from_f64(double v) {
  return v;
}
static inline uint16_t ct_to_f16_from_i64(int64_t v) {
  return ct_float_to_half(ct_i64_to_float_round_odd(v));
}
static inline uint16_t ct_to_f16_from_u64(uint64_t v) {
  return ct_float_to_half(ct_u64_to_float_round_odd(v));
}
static inline uint16_t ct_to_f16_from_f64(double v) {
  return ct_double_to_half(v);
}
static inline uint16_t ct_to_bf16_from_i64(int64_t v) {
  return ct_float_to_bfloat16(ct_i64_to_float_round_odd(v));
}
static inline uint16_t ct_to_bf16_from_u64(uint64_t v) {
  return ct_float_to_bfloat16(ct_u64_to_float_round_odd(v));
}
static inline uint16_t ct_to_bf16_from_f64(double v) {
  return ct_double_to_bfloat16(v);
}

/* Complex targets, from each wide kind (one rounding per part). */
#define CT_COMPLEX_TARGET(SFX, CT, R)                         \
  static inline CT ct_to_##SFX##_from_i64(int64_t v) {        \
    return (CT)(R)v;                                          \
  }                                                           \
  static inline CT ct_to_##SFX##_from_u64(uint64_t v) {       \
    return (CT)(R)v;                                          \
  }                                                           \
  static inline CT ct_to_##SFX##_from_f64(double v) {         \
    return (CT)(R)v;                                          \
  }                                                           \
  static inline CT ct_to_##SFX##_from_c128(ct_complex128 v) { \
    return (CT)v;                                             \
  }
CT_COMPLEX_TARGET(c64, ct_complex64, float)
CT_COMPLEX_TARGET(c128, ct_complex128, double)

/* Real targets from complex: the real part (bool: either part non-zero). */
#define CT_FROM_COMPLEX_WIDE(TO, TO_ID)                                   \
  static inline ct_storage_##TO ct_to_##TO##_from_c128(ct_complex128 v) { \
    return ct_to_##TO##_from_f64(creal(v));                               \
  }
CT_FROM_COMPLEX_WIDE(i8, _)
CT_FROM_COMPLEX_WIDE(i16, _)
CT_FROM_COMPLEX_WIDE(i32, _)
CT_FROM_COMPLEX_WIDE(i64, _)
CT_FROM_COMPLEX_WIDE(u8, _)
CT_FROM_COMPLEX_WIDE(u16, _)
CT_FROM_COMPLEX_WIDE(u32, _)
CT_FROM_COMPLEX_WIDE(u64, _)
CT_FROM_COMPLEX_WIDE(f16, _)
CT_FROM_COMPLEX_WIDE(bf16, _)
CT_FROM_COMPLEX_WIDE(f32, _)
CT_FROM_COMPLEX_WIDE(f64, _)
static inline uint8_t ct_to_b8_from_c128(ct_complex128 v) {
  return creal(v) != 0 || cimag(v) != 0;
}

/* ----- loops: ct_cpu_astype_<from>_to_<to> ----- */

#define CT_ASTYPE_LOOP(TO, SFX, T, WIDE, KIND)                                                    \
  static CT_CPU_ISA_BODY void ct_cpu_astype_##SFX##_to_##TO##_body(                               \
      char** data, const int64_t* steps, int64_t n, const void* extra) {                          \
    (void)extra;                                                                                  \
    typedef ct_storage_##TO out_t;                                                                \
    const int64_t ss = steps[0], ds = steps[1];                                                   \
    if (ss == (int64_t)sizeof(T) && ds == (int64_t)sizeof(out_t)) {                               \
      const T* s = (const T*)data[0];                                                             \
      out_t* d = (out_t*)data[1];                                                                 \
      for (int64_t i = 0; i < n; ++i) d[i] = ct_to_##TO##_from_##KIND((WIDE)ct_load_##SFX(s[i])); \
    } else {                                                                                      \
      for (int64_t i = 0; i < n; ++i)                                                             \
        CT_AT(out_t, data[1], i, ds) =                                                            \
            ct_to_##TO##_from_##KIND((WIDE)ct_load_##SFX(CT_AT(T, data[0], i, ss)));              \
    }                                                                                             \
  }                                                                                               \
  CT_CPU_ISA_LOOP(ct_cpu_astype_##SFX##_to_##TO, CT_CPU_LOOP_PARAMS, CT_CPU_LOOP_ARGS)            \
  static const ct_cpu_loop_entry ct_cpu_astype_##SFX##_to_##TO##_entry = {                        \
      ct_cpu_astype_##SFX##_to_##TO};

#define CT_FROM_SIGNED_X(TO, SFX, T, C, U, ID) CT_ASTYPE_LOOP(TO, SFX, T, int64_t, i64)
#define CT_FROM_UNSIGNED_X(TO, SFX, T, C, U, ID) CT_ASTYPE_LOOP(TO, SFX, T, uint64_t, u64)
#define CT_FROM_FLOAT_X(TO, SFX, T, C, U, ID) CT_ASTYPE_LOOP(TO, SFX, T, double, f64)
#define CT_FROM_COMPLEX_X(TO, SFX, T, C, U, ID) CT_ASTYPE_LOOP(TO, SFX, T, ct_complex128, c128)

#define CT_ASTYPE_LOOPS_TO(TO)                  \
  CT_CPU_SIGNED_TYPES(CT_FROM_SIGNED_X, TO)     \
  CT_CPU_UNSIGNED_TYPES(CT_FROM_UNSIGNED_X, TO) \
  CT_CPU_BOOL_TYPE(CT_FROM_UNSIGNED_X, TO)      \
  CT_CPU_FLOAT_TYPES(CT_FROM_FLOAT_X, TO)       \
  CT_CPU_COMPLEX_TYPES(CT_FROM_COMPLEX_X, TO)

/* Targets, with their dtype ids. */
#define CT_ASTYPE_TARGETS(K) \
  K(b8, CT_DT_BOOL)          \
  K(i8, CT_DT_I8)            \
  K(i16, CT_DT_I16)          \
  K(i32, CT_DT_I32)          \
  K(i64, CT_DT_I64)          \
  K(u8, CT_DT_U8)            \
  K(u16, CT_DT_U16)          \
  K(u32, CT_DT_U32)          \
  K(u64, CT_DT_U64)          \
  K(f16, CT_DT_F16)          \
  K(bf16, CT_DT_BF16)        \
  K(f32, CT_DT_F32)          \
  K(f64, CT_DT_F64)          \
  K(c64, CT_DT_C64)          \
  K(c128, CT_DT_C128)

#define K(TO, TO_ID) CT_ASTYPE_LOOPS_TO(TO)
CT_ASTYPE_TARGETS(K)
#undef K

/* Registration: the target suffix picks the entry name, so each target has an adapter. */
#define CT_ASTYPE_REG(TO, TO_ID, SFX, ID) \
  {"astype", 2, {ID, TO_ID}, ct_cpu_elementwise_run, NULL, &ct_cpu_astype_##SFX##_to_##TO##_entry},
#define CT_REG_FROM_b8(TO_ID, SFX, T, C, U, ID) CT_ASTYPE_REG(b8, TO_ID, SFX, ID)
#define CT_REG_FROM_i8(TO_ID, SFX, T, C, U, ID) CT_ASTYPE_REG(i8, TO_ID, SFX, ID)
#define CT_REG_FROM_i16(TO_ID, SFX, T, C, U, ID) CT_ASTYPE_REG(i16, TO_ID, SFX, ID)
#define CT_REG_FROM_i32(TO_ID, SFX, T, C, U, ID) CT_ASTYPE_REG(i32, TO_ID, SFX, ID)
#define CT_REG_FROM_i64(TO_ID, SFX, T, C, U, ID) CT_ASTYPE_REG(i64, TO_ID, SFX, ID)
#define CT_REG_FROM_u8(TO_ID, SFX, T, C, U, ID) CT_ASTYPE_REG(u8, TO_ID, SFX, ID)
#define CT_REG_FROM_u16(TO_ID, SFX, T, C, U, ID) CT_ASTYPE_REG(u16, TO_ID, SFX, ID)
#define CT_REG_FROM_u32(TO_ID, SFX, T, C, U, ID) CT_ASTYPE_REG(u32, TO_ID, SFX, ID)
#define CT_REG_FROM_u64(TO_ID, SFX, T, C, U, ID) CT_ASTYPE_REG(u64, TO_ID, SFX, ID)
#define CT_REG_FROM_f16(TO_ID, SFX, T, C, U, ID) CT_ASTYPE_REG(f16, TO_ID, SFX, ID)
#define CT_REG_FROM_bf16(TO_ID, SFX, T, C, U, ID) CT_ASTYPE_REG(bf16, TO_ID, SFX, ID)
#define CT_REG_FROM_f32(TO_ID, SFX, T, C, U, ID) CT_ASTYPE_REG(f32, TO_ID, SFX, ID)
#define CT_REG_FROM_f64(TO_ID, SFX, T, C, U, ID) CT_ASTYPE_REG(f64, TO_ID, SFX, ID)
#define CT_REG_FROM_c64(TO_ID, SFX, T, C, U, ID) CT_ASTYPE_REG(c64, TO_ID, SFX, ID)
#define CT_REG_FROM_c128(TO_ID, SFX, T, C, U, ID) CT_ASTYPE_REG(c128, TO_ID, SFX, ID)

static const ct_cpu_kernel ct_cpu_astype_kernels[] = {
#define K(TO, TO_ID) \
  CT_CPU_ALL_TYPES(CT_REG_FROM_##TO, TO_ID) CT_CPU_COMPLEX_TYPES(CT_REG_FROM_##TO, TO_ID)
    CT_ASTYPE_TARGETS(K)
#undef K
};

int ct_cpu_register_astype(void) {
  return ct_cpu_register_all(ct_cpu_astype_kernels, CT_CPU_KERNEL_COUNT(ct_cpu_astype_kernels));
}
