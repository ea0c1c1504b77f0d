/* sort_keys.h - order-preserving unsigned keys per dtype, shared by unique, sort, argsort, topk
 * and searchsorted: ct_uq_key_<SFX>(T) -> K (same width, unsigned) whose unsigned order is
 * NumPy's value order: integers flip their sign bit; floats flip all bits when negative and the
 * sign bit otherwise, after -0.0 becomes +0.0 and every NaN becomes the all-ones key (NaN last,
 * all NaNs equal). ct_uq_value_<SFX>(K) -> T maps a key back to a value. */
#ifndef CTENSOR_CPU_SORT_KEYS_H_
#define CTENSOR_CPU_SORT_KEYS_H_

#include <stdint.h>
#include <string.h>

/* ----- keys per dtype: ct_uq_key_<SFX>(T) -> K and ct_uq_value_<SFX>(K) -> T ----- */

static inline uint8_t ct_uq_key_b8(uint8_t v) {
  return v != 0;
}
static inline uint8_t ct_uq_value_b8(uint8_t k) {
  return k;
}
static inline uint8_t ct_uq_key_u8(uint8_t v) {
  return v;
}
static inline uint8_t ct_uq_value_u8(uint8_t k) {
  return k;
}
static inline uint16_t ct_uq_key_u16(uint16_t v) {
  return v;
}
static inline uint16_t ct_uq_value_u16(uint16_t k) {
  return k;
}
static inline uint32_t ct_uq_key_u32(uint32_t v) {
  return v;
}
static inline uint32_t ct_uq_value_u32(uint32_t k) {
  return k;
}
static inline uint64_t ct_uq_key_u64(uint64_t v) {
  return v;
}
static inline uint64_t ct_uq_value_u64(uint64_t k) {
  return k;
}

#define CT_UQ_SIGNED_KEYS(BITS)                                       \
  static inline uint##BITS##_t ct_uq_key_i##BITS(int##BITS##_t v) {   \
    return (uint##BITS##_t)v ^ ((uint##BITS##_t)1 << (BITS - 1));     \
  }                                                                   \
  static inline int##BITS##_t ct_uq_value_i##BITS(uint##BITS##_t k) { \
    const uint##BITS##_t u = k ^ ((uint##BITS##_t)1 << (BITS - 1));   \
    int##BITS##_t v;                                                  \
    memcpy(&v, &u, sizeof v);                                         \
    return v;                                                         \
  }
CT_UQ_SIGNED_KEYS(8)
CT_UQ_SIGNED_KEYS(16)
CT_UQ_SIGNED_KEYS(32)
CT_UQ_SIGNED_KEYS(64)

/* Float keys on the bits: EXP is the exponent mask, NAN the value written back for the NaN key. */
#define CT_UQ_FLOAT_KEYS(SFX, T, UT, EXP, NAN)                                                \
  static inline UT ct_uq_key_##SFX(T v) {                                                     \
    UT bits;                                                                                  \
    memcpy(&bits, &v, sizeof bits);                                                           \
    const UT sign = (UT)((UT)1 << (sizeof(UT) * 8 - 1));                                      \
    const UT magnitude = (UT)(bits & (UT)~sign);                                              \
    if (magnitude > (UT)(EXP)) return (UT) ~(UT)0; /* NaN */                                  \
    if (magnitude == 0) return sign;               /* -0.0 is 0.0 */                          \
    return (bits & sign) ? (UT)~bits : (UT)(bits | sign);                                     \
  }                                                                                           \
  static inline T ct_uq_value_##SFX(UT k) {                                                   \
    const UT sign = (UT)((UT)1 << (sizeof(UT) * 8 - 1));                                      \
    const UT bits = k == (UT) ~(UT)0 ? (UT)(NAN) : (k & sign) ? (UT)(k & (UT)~sign) : (UT)~k; \
    T v;                                                                                      \
    memcpy(&v, &bits, sizeof v);                                                              \
    return v;                                                                                 \
  }
CT_UQ_FLOAT_KEYS(f16, uint16_t, uint16_t, 0x7c00u, 0x7e00u)
CT_UQ_FLOAT_KEYS(bf16, uint16_t, uint16_t, 0x7f80u, 0x7fc0u)
CT_UQ_FLOAT_KEYS(f32, float, uint32_t, 0x7f800000u, 0x7fc00000u)
CT_UQ_FLOAT_KEYS(f64, double, uint64_t, 0x7ff0000000000000ull, 0x7ff8000000000000ull)

/* The bits in which keys a[1..n) differ from a[0] (0: all alike), per key type: the radix
 * sorts skip the digits none of them differ in. */
#define CT_KEY_DIFF(K)                                        \
  static inline K ct_key_diff_##K(const K* a, int64_t n) {    \
    K diff = 0;                                               \
    for (int64_t i = 1; i < n; ++i) diff |= (K)(a[i] ^ a[0]); \
    return diff;                                              \
  }
CT_KEY_DIFF(uint8_t)
CT_KEY_DIFF(uint16_t)
CT_KEY_DIFF(uint32_t)
CT_KEY_DIFF(uint64_t)
#undef CT_KEY_DIFF

/* ----- the dtypes with their key types: X(A, SFX, T, C, K, ID), K in the U slot ----- */

/* 1- and 2-byte dtypes (few distinct keys: tables instead of sorts where that pays). */
#define CT_SORT_KEY_SMALL_TYPES(X, A)                \
  X(A, b8, uint8_t, ct_bool8, uint8_t, CT_DT_BOOL)   \
  X(A, i8, int8_t, int8_t, uint8_t, CT_DT_I8)        \
  X(A, u8, uint8_t, uint8_t, uint8_t, CT_DT_U8)      \
  X(A, i16, int16_t, int16_t, uint16_t, CT_DT_I16)   \
  X(A, u16, uint16_t, uint16_t, uint16_t, CT_DT_U16) \
  X(A, f16, uint16_t, float, uint16_t, CT_DT_F16)    \
  X(A, bf16, uint16_t, float, uint16_t, CT_DT_BF16)

/* 4- and 8-byte dtypes. */
#define CT_SORT_KEY_WIDE_TYPES(X, A)                 \
  X(A, i32, int32_t, int32_t, uint32_t, CT_DT_I32)   \
  X(A, u32, uint32_t, uint32_t, uint32_t, CT_DT_U32) \
  X(A, f32, float, float, uint32_t, CT_DT_F32)       \
  X(A, i64, int64_t, int64_t, uint64_t, CT_DT_I64)   \
  X(A, u64, uint64_t, uint64_t, uint64_t, CT_DT_U64) \
  X(A, f64, double, double, uint64_t, CT_DT_F64)

#define CT_SORT_KEY_TYPES(X, A) CT_SORT_KEY_SMALL_TYPES(X, A) CT_SORT_KEY_WIDE_TYPES(X, A)

#endif /* CTENSOR_CPU_SORT_KEYS_H_ */
