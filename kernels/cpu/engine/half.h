/* half.h - float16 and bfloat16 conversions (round to nearest even), written once for every
 * kernel: low-precision dtypes load to float, compute in float, store back. */
#ifndef CTENSOR_CPU_HALF_H_
#define CTENSOR_CPU_HALF_H_

#include <stdint.h>
#include <string.h>

static inline uint32_t ct_float_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static inline float ct_bits_float(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* Branch-free, so that loops over float16 vectorise: subnormals go through an exact
 * int -> float product, the right case is selected by masks. */
static inline float ct_half_to_float(uint16_t h) {
  const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  const uint32_t exponent = ((uint32_t)h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
  const uint32_t normal = ((exponent + 112u) << 23) | (mantissa << 13);
  const uint32_t special = 0x7f800000u | (mantissa << 13);
  const uint32_t tiny = ct_float_bits((float)(int32_t)mantissa * 5.9604644775390625e-08f);
  const uint32_t is_tiny = 0u - (uint32_t)(exponent == 0),
                 is_special = 0u - (uint32_t)(exponent == 31);
  const uint32_t magnitude =
      (tiny & is_tiny) | (special & is_special) | (normal & ~(is_tiny | is_special));
  return ct_bits_float(sign | magnitude);
}

/* Branch-free: every case (nan, inf and overflow, subnormal, normal) is computed and the right
 * one selected. Subnormals: adding 0.5 puts the value's bits at float's ulp 2^-24, so the FPU's
 * own round-to-nearest-even does the rounding; normals rebias and round 13 bits to even. */
static inline uint16_t ct_float_to_half(float f) {
  const uint32_t bits = ct_float_bits(f);
  const uint32_t sign = (bits >> 16) & 0x8000u;
  const uint32_t magnitude = bits & 0x7fffffffu;
  /* nan: quiet, payload top bits kept; inf and overflow: inf */
  const uint32_t nan = 0x7c00u | 0x200u | ((magnitude >> 13) & 0x3ffu);
  /* below 2^-14: the FPU rounds at float's ulp 2^-24 after adding 0.5 */
  const uint32_t tiny = ct_float_bits(ct_bits_float(magnitude & 0x3fffffffu) + 0.5f) - 0x3f000000u;
  const uint32_t normal = (magnitude + 0xc8000fffu + ((magnitude >> 13) & 1u)) >> 13;
  const uint32_t is_nan = 0u - (uint32_t)(magnitude > 0x7f800000u);
  const uint32_t is_inf = 0u - (uint32_t)(magnitude >= 0x477ff000u);
  const uint32_t is_tiny = 0u - (uint32_t)(magnitude < 0x38800000u);
  uint32_t r = (normal & ~is_tiny) | (tiny & is_tiny);
  r = (r & ~is_inf) | (0x7c00u & is_inf);
  r = (r & ~is_nan) | (nan & is_nan);
  return (uint16_t)(sign | r);
}

static inline float ct_bfloat16_to_float(uint16_t h) {
  return ct_bits_float((uint32_t)h << 16);
}

/* Round to nearest even; nan stays a quiet nan. Branch-free. */
static inline uint16_t ct_float_to_bfloat16(float f) {
  const uint32_t bits = ct_float_bits(f);
  const uint32_t is_nan = 0u - (uint32_t)((bits & 0x7fffffffu) > 0x7f800000u);
  const uint32_t rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
  const uint32_t quiet = (bits >> 16) | 0x40u;
  return (uint16_t)((rounded & ~is_nan) | (quiet & is_nan));
}

/* double -> float rounding to odd, so that a second rounding to half/bfloat16 (11 or 8 bits,
 * at least 2 fewer than float's 24) gives the correctly rounded result of the double. */
static inline float ct_double_to_float_round_odd(double d) {
  float f = (float)d;
  const double back = (double)f;
  if (back != d && d == d) {
    uint32_t bits = ct_float_bits(f);
    if ((back < 0 ? -back : back) > (d < 0 ? -d : d)) bits -= 1; /* step toward zero */
    f = ct_bits_float(bits | 1u);
  }
  return f;
}

/* 64-bit integer magnitude -> float rounding to odd: keep the top 24 significant bits and fold
 * every dropped bit into the last kept one (a double would round once already at 53 bits). */
static inline float ct_u64_to_float_round_odd(uint64_t u) {
  if (u < (1ull << 24)) return (float)u;
  const int shift = 40 - __builtin_clzll(u); /* bits to drop so that 24 remain */
  const uint64_t kept = (u >> shift) | ((u & ((1ull << shift) - 1)) != 0);
  return (float)kept * ct_bits_float((uint32_t)(127 + shift) << 23); /* exact: times 2^shift */
}

static inline float ct_i64_to_float_round_odd(int64_t v) {
  const uint64_t magnitude = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
  const float f = ct_u64_to_float_round_odd(magnitude);
  return v < 0 ? -f : f;
}

static inline uint16_t ct_double_to_half(double d) {
  return ct_float_to_half(ct_double_to_float_round_odd(d));
}

static inline uint16_t ct_double_to_bfloat16(double d) {
  return ct_float_to_bfloat16(ct_double_to_float_round_odd(d));
}

#endif /* CTENSOR_CPU_HALF_H_ */
