/* cpu_dtypes.h - the dtypes of the CPU backend as X-macro lists, and their load/store helpers.
 *
 * A list is called as LIST(X, A) and expands to X(A, SFX, T, C, U, ID) per dtype; A is passed
 * through untouched (usually an op name), so one list of (op, dtypes) lines can produce both the
 * loops and their registrations. SFX names the dtype in function names (ct_cpu_add_f32), T is the
 * storage type, C the compute type (float for float16/bfloat16; ct_bool8 for bool, a distinct
 * name so that bool gets its own operator functions), U the type in which + - * wrap without
 * undefined behaviour (unsigned for integers), ID the ct_dtype_id. ct_load_<SFX> turns a T into a
 * C and ct_store_<SFX> a C into a T. Operator functions are named per compute type:
 * ct_op_<name>_<C> (ct_op_add_float serves float16, bfloat16 and float32). */
#ifndef CTENSOR_CPU_DTYPES_H_
#define CTENSOR_CPU_DTYPES_H_

#include <stdint.h>

#include "engine/half.h"
#include "internal.h"

typedef uint8_t ct_bool8;

#define CT_CPU_SIGNED_TYPES(X, A)                  \
  X(A, i8, int8_t, int8_t, uint8_t, CT_DT_I8)      \
  X(A, i16, int16_t, int16_t, uint16_t, CT_DT_I16) \
  X(A, i32, int32_t, int32_t, uint32_t, CT_DT_I32) \
  X(A, i64, int64_t, int64_t, uint64_t, CT_DT_I64)

#define CT_CPU_UNSIGNED_TYPES(X, A)                  \
  X(A, u8, uint8_t, uint8_t, uint8_t, CT_DT_U8)      \
  X(A, u16, uint16_t, uint16_t, uint16_t, CT_DT_U16) \
  X(A, u32, uint32_t, uint32_t, uint32_t, CT_DT_U32) \
  X(A, u64, uint64_t, uint64_t, uint64_t, CT_DT_U64)

#define CT_CPU_INT_TYPES(X, A) CT_CPU_SIGNED_TYPES(X, A) CT_CPU_UNSIGNED_TYPES(X, A)

#define CT_CPU_LOWP_TYPES(X, A)                \
  X(A, f16, uint16_t, float, float, CT_DT_F16) \
  X(A, bf16, uint16_t, float, float, CT_DT_BF16)

#define CT_CPU_FULLP_TYPES(X, A)            \
  X(A, f32, float, float, float, CT_DT_F32) \
  X(A, f64, double, double, double, CT_DT_F64)

#define CT_CPU_FLOAT_TYPES(X, A) CT_CPU_LOWP_TYPES(X, A) CT_CPU_FULLP_TYPES(X, A)
/* The floating-point dtypes but float32: for operators whose float32 kernel has its own loop. */
#define CT_CPU_FLOAT_TYPES_BUT_F32(X, A) \
  CT_CPU_LOWP_TYPES(X, A)                \
  X(A, f64, double, double, double, CT_DT_F64)

#define CT_CPU_BOOL_TYPE(X, A) X(A, b8, uint8_t, ct_bool8, uint8_t, CT_DT_BOOL)

/* Complex dtypes: C99 complex storage (real part first, as DLPack and NumPy lay them out). They
 * are in none of the lists above: a family opts in with CT_CPU_COMPLEX_TYPES, and writes its
 * arithmetic explicitly (complex_math.h) where C's operators differ from NumPy's. */
typedef float _Complex ct_complex64;
typedef double _Complex ct_complex128;
#define CT_CPU_COMPLEX_TYPES(X, A)                               \
  X(A, c64, ct_complex64, ct_complex64, ct_complex64, CT_DT_C64) \
  X(A, c128, ct_complex128, ct_complex128, ct_complex128, CT_DT_C128)

#define CT_CPU_NUMERIC_TYPES(X, A) CT_CPU_INT_TYPES(X, A) CT_CPU_FLOAT_TYPES(X, A)
#define CT_CPU_ALL_TYPES(X, A) CT_CPU_BOOL_TYPE(X, A) CT_CPU_NUMERIC_TYPES(X, A)
/* Types whose compute type is distinct: define ct_op_<name>_<C> functions over these. */
#define CT_CPU_COMPUTE_TYPES(X, A) CT_CPU_INT_TYPES(X, A) CT_CPU_FULLP_TYPES(X, A)

/* Loads and stores. */
#define CT_DEFINE_IDENTITY_LOAD_STORE(A, SFX, T, C, U, ID) \
  static inline C ct_load_##SFX(T v) {                     \
    return (C)v;                                           \
  }                                                        \
  static inline T ct_store_##SFX(C v) {                    \
    return (T)v;                                           \
  }
CT_CPU_COMPUTE_TYPES(CT_DEFINE_IDENTITY_LOAD_STORE, _)
CT_CPU_COMPLEX_TYPES(CT_DEFINE_IDENTITY_LOAD_STORE, _)
#undef CT_DEFINE_IDENTITY_LOAD_STORE

static inline ct_bool8 ct_load_b8(uint8_t v) {
  return v != 0;
}
static inline uint8_t ct_store_b8(ct_bool8 v) {
  return v != 0;
}
static inline float ct_load_f16(uint16_t v) {
  return ct_half_to_float(v);
}
static inline uint16_t ct_store_f16(float v) {
  return ct_float_to_half(v);
}
static inline float ct_load_bf16(uint16_t v) {
  return ct_bfloat16_to_float(v);
}
static inline uint16_t ct_store_bf16(float v) {
  return ct_float_to_bfloat16(v);
}

#endif /* CTENSOR_CPU_DTYPES_H_ */
