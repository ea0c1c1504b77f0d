/* Philox-4x32-10, the counter-based generator of Random123 (Salmon, Moraes, Dror, Shaw: "Parallel
 * random numbers: as easy as 1, 2, 3", SC 2011), as cuRAND and JAX use it, and ctensor's one
 * random-number stream.
 *
 * This one header is compiled as C (the CPU backend), as OpenCL C (its text is embedded in the
 * OpenCL program source at build time) and as CUDA C++ (host and device). Every function is a
 * pure function of its arguments, so a result never depends on the device, the thread count or
 * the order in which elements are computed.
 *
 * The generator: a 128-bit counter (4 words) and a 64-bit key (2 words) give 4 words. Ten rounds;
 * each multiplies words 0 and 2 by 0xD2511F53 and 0xCD9E8D57 (the high and low halves of the
 * 64-bit products are kept), and the key is bumped by the Weyl constants 0x9E3779B9 and
 * 0xBB67AE85 between rounds. tests/test_random.py checks it against Random123's published
 * known-answer vectors.
 *
 * The stream (every random op, and attention's dropout, uses this rule):
 *   key     = (lo32(seed), hi32(seed))
 *   counter = (lo32(i), hi32(i), lo32(offset), hi32(offset))
 * where i is the row-major linear index of the output element (whatever the output's strides)
 * and seed, offset are the op's uint64 attributes. The element gets the 4 words x0..x3. Two
 * calls whose offsets differ use disjoint counters for every element; a caller that draws
 * several tensors from one seed gives each its own offset.
 */
#ifndef CT_PHILOX_H
#define CT_PHILOX_H

#if defined(__OPENCL_VERSION__)
#pragma OPENCL FP_CONTRACT OFF
typedef ushort ct_philox_u16;
typedef uint ct_philox_u32;
typedef ulong ct_philox_u64;
#define CT_PHILOX_FN static inline
#if defined(cl_khr_fp64)
#define CT_PHILOX_HAS_F64 1
#endif
#elif defined(__CUDACC__)
typedef unsigned short ct_philox_u16;
typedef unsigned int ct_philox_u32;
typedef unsigned long long ct_philox_u64;
#define CT_PHILOX_FN static __host__ __device__ __forceinline__
#define CT_PHILOX_HAS_F64 1
#else
#include <math.h>
#include <stdint.h>
typedef uint16_t ct_philox_u16;
typedef uint32_t ct_philox_u32;
typedef uint64_t ct_philox_u64;
#define CT_PHILOX_FN static inline
#define CT_PHILOX_HAS_F64 1
#endif

/* Floating-point arithmetic of the distributions: every operation is one exactly rounded IEEE
 * operation (round to nearest even), never contracted into a fused multiply-add, so that every
 * device rounds every step the same way. nvcc contracts a * b + c unless told not to: its
 * intrinsics say so; C files including this header are compiled with -ffp-contract=off and the
 * OpenCL text carries FP_CONTRACT OFF. Float division and square root are not exactly rounded
 * on every OpenCL device, so the float32 paths use neither; float64 uses both (exactly rounded
 * for double in C, CUDA and OpenCL alike). */
#if defined(__CUDA_ARCH__)
#define CT_PHILOX_MULF(a, b) __fmul_rn((a), (b))
#define CT_PHILOX_ADDF(a, b) __fadd_rn((a), (b))
#define CT_PHILOX_SUBF(a, b) __fsub_rn((a), (b))
#define CT_PHILOX_MULD(a, b) __dmul_rn((a), (b))
#define CT_PHILOX_ADDD(a, b) __dadd_rn((a), (b))
#define CT_PHILOX_SUBD(a, b) __dsub_rn((a), (b))
#define CT_PHILOX_DIVD(a, b) __ddiv_rn((a), (b))
#define CT_PHILOX_SQRTD(a) __dsqrt_rn((a))
#else
#define CT_PHILOX_MULF(a, b) ((a) * (b))
#define CT_PHILOX_ADDF(a, b) ((a) + (b))
#define CT_PHILOX_SUBF(a, b) ((a) - (b))
#define CT_PHILOX_MULD(a, b) ((a) * (b))
#define CT_PHILOX_ADDD(a, b) ((a) + (b))
#define CT_PHILOX_SUBD(a, b) ((a) - (b))
#define CT_PHILOX_DIVD(a, b) ((a) / (b))
#define CT_PHILOX_SQRTD(a) sqrt((a))
#endif

#define CT_PHILOX_M0 0xD2511F53u
#define CT_PHILOX_M1 0xCD9E8D57u
#define CT_PHILOX_W0 0x9E3779B9u
#define CT_PHILOX_W1 0xBB67AE85u

/* The 4 words of one Philox call. */
typedef struct ct_philox4 {
  ct_philox_u32 x[4];
} ct_philox4;

/* Philox-4x32 with `rounds` rounds on counter c0..c3 and key k0, k1 (Random123's
 * philox4x32_R). */
CT_PHILOX_FN ct_philox4 ct_philox4x32_rounds(ct_philox_u32 c0, ct_philox_u32 c1, ct_philox_u32 c2,
                                             ct_philox_u32 c3, ct_philox_u32 k0, ct_philox_u32 k1,
                                             int rounds) {
  for (int r = 0; r < rounds; ++r) {
    if (r > 0) {
      k0 += CT_PHILOX_W0;
      k1 += CT_PHILOX_W1;
    }
    const ct_philox_u64 p0 = (ct_philox_u64)CT_PHILOX_M0 * (ct_philox_u64)c0;
    const ct_philox_u64 p1 = (ct_philox_u64)CT_PHILOX_M1 * (ct_philox_u64)c2;
    const ct_philox_u32 hi0 = (ct_philox_u32)(p0 >> 32), lo0 = (ct_philox_u32)p0;
    const ct_philox_u32 hi1 = (ct_philox_u32)(p1 >> 32), lo1 = (ct_philox_u32)p1;
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
  }
  ct_philox4 out;
  out.x[0] = c0;
  out.x[1] = c1;
  out.x[2] = c2;
  out.x[3] = c3;
  return out;
}

/* Philox-4x32-10. */
CT_PHILOX_FN ct_philox4 ct_philox4x32_10(ct_philox_u32 c0, ct_philox_u32 c1, ct_philox_u32 c2,
                                         ct_philox_u32 c3, ct_philox_u32 k0, ct_philox_u32 k1) {
  return ct_philox4x32_rounds(c0, c1, c2, c3, k0, k1, 10);
}

/* The 4 words of element `index` of the stream (seed, offset): the rule above. */
CT_PHILOX_FN ct_philox4 ct_philox_element(ct_philox_u64 seed, ct_philox_u64 offset,
                                          ct_philox_u64 index) {
  return ct_philox4x32_10((ct_philox_u32)index, (ct_philox_u32)(index >> 32), (ct_philox_u32)offset,
                          (ct_philox_u32)(offset >> 32), (ct_philox_u32)seed,
                          (ct_philox_u32)(seed >> 32));
}

/* ----- bit casts and the 16-bit float formats ----- */

typedef union ct_philox_f32_bits {
  float f;
  ct_philox_u32 u;
} ct_philox_f32_bits;

CT_PHILOX_FN ct_philox_u32 ct_philox_f32_to_bits(float f) {
  ct_philox_f32_bits b;
  b.f = f;
  return b.u;
}

CT_PHILOX_FN float ct_philox_bits_to_f32(ct_philox_u32 u) {
  ct_philox_f32_bits b;
  b.u = u;
  return b.f;
}

/* float32 to float16 bits, rounding to nearest even (overflow to inf, nan stays nan). */
CT_PHILOX_FN ct_philox_u16 ct_philox_f32_to_f16(float f) {
  const ct_philox_u32 b = ct_philox_f32_to_bits(f);
  const ct_philox_u32 sign = (b >> 16) & 0x8000u, a = b & 0x7fffffffu;
  if (a > 0x7f800000u) return (ct_philox_u16)(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
  if (a >= 0x477ff000u) return (ct_philox_u16)(sign | 0x7c00u); /* 65520 and up: inf */
  if (a >= 0x38800000u) {                                       /* normal: 2^-14 and up */
    const ct_philox_u32 r = a - 0x38000000u;
    return (ct_philox_u16)(sign | ((r + 0xfffu + ((r >> 13) & 1u)) >> 13));
  }
  if (a < 0x33000000u) return (ct_philox_u16)sign; /* below 2^-25: zero */
  /* subnormal: the significand in units of 2^-24, rounded to nearest even */
  const ct_philox_u32 shift = 126u - (a >> 23), m = (a & 0x7fffffu) | 0x800000u;
  ct_philox_u32 q = m >> shift;
  const ct_philox_u32 rest = m & ((1u << shift) - 1u), halfway = 1u << (shift - 1u);
  if (rest > halfway || (rest == halfway && (q & 1u))) ++q;
  return (ct_philox_u16)(sign | q);
}

/* float16 bits to float32 (exact). */
CT_PHILOX_FN float ct_philox_f16_to_f32(ct_philox_u16 h) {
  const ct_philox_u32 sign = (ct_philox_u32)(h & 0x8000u) << 16;
  const ct_philox_u32 e = ((ct_philox_u32)h >> 10) & 0x1fu, m = (ct_philox_u32)h & 0x3ffu;
  if (e == 0) {
    return ct_philox_bits_to_f32(ct_philox_f32_to_bits((float)m * 5.9604644775390625e-08f) | sign);
  }
  if (e == 31) return ct_philox_bits_to_f32(sign | 0x7f800000u | (m << 13));
  return ct_philox_bits_to_f32(sign | ((e + 112u) << 23) | (m << 13));
}

/* float32 to bfloat16 bits, rounding to nearest even (nan stays nan). */
CT_PHILOX_FN ct_philox_u16 ct_philox_f32_to_bf16(float f) {
  const ct_philox_u32 b = ct_philox_f32_to_bits(f);
  if ((b & 0x7fffffffu) > 0x7f800000u) return (ct_philox_u16)((b >> 16) | 0x40u);
  return (ct_philox_u16)((b + 0x7fffu + ((b >> 16) & 1u)) >> 16);
}

CT_PHILOX_FN float ct_philox_bf16_to_f32(ct_philox_u16 h) {
  return ct_philox_bits_to_f32((ct_philox_u32)h << 16);
}

/* The largest value below x of a format, from x's bits (x finite): the next representable value
 * toward -inf. `sign` is the format's sign bit. */
CT_PHILOX_FN ct_philox_u32 ct_philox_bits_below(ct_philox_u32 bits, ct_philox_u32 sign) {
  if ((bits & ~sign) == 0) return sign | 1u; /* +-0: the smallest negative subnormal */
  return (bits & sign) ? bits + 1u : bits - 1u;
}

/* ----- uniform on [0, 1): a multiple of 2^-p with the top p bits of the words ----- */

/* float32: (x0 >> 8) * 2^-24 */
CT_PHILOX_FN float ct_philox_uniform_f32(ct_philox_u32 x0) {
  return (float)(x0 >> 8) * 5.9604644775390625e-08f;
}

/* float16: (x0 >> 21) * 2^-11, as a float32 (exact in float16). */
CT_PHILOX_FN float ct_philox_uniform_f16(ct_philox_u32 x0) {
  return (float)(x0 >> 21) * 0.00048828125f;
}

/* bfloat16: (x0 >> 24) * 2^-8, as a float32 (exact in bfloat16). */
CT_PHILOX_FN float ct_philox_uniform_bf16(ct_philox_u32 x0) {
  return (float)(x0 >> 24) * 0.00390625f;
}

/* low + (high - low) * u in float32, as two rounded operations; never high: a result that
 * rounds up to high becomes the largest float32 below it. low < high, both finite. */
CT_PHILOX_FN float ct_philox_uniform_range_f32(ct_philox_u32 x0, float low, float high) {
  const float r =
      CT_PHILOX_ADDF(low, CT_PHILOX_MULF(CT_PHILOX_SUBF(high, low), ct_philox_uniform_f32(x0)));
  if (r < high) return r;
  return ct_philox_bits_to_f32(ct_philox_bits_below(ct_philox_f32_to_bits(high), 0x80000000u));
}

/* The same in float16 (low and high are float16 values held in float32): computed in float32,
 * rounded to float16, and kept below high. Returns the float16 bits. */
CT_PHILOX_FN ct_philox_u16 ct_philox_uniform_range_f16(ct_philox_u32 x0, float low, float high) {
  const float r =
      CT_PHILOX_ADDF(low, CT_PHILOX_MULF(CT_PHILOX_SUBF(high, low), ct_philox_uniform_f16(x0)));
  const ct_philox_u16 h = ct_philox_f32_to_f16(r);
  if (ct_philox_f16_to_f32(h) < high) return h;
  return (ct_philox_u16)ct_philox_bits_below(ct_philox_f32_to_f16(high), 0x8000u);
}

/* The same in bfloat16. Returns the bfloat16 bits. */
CT_PHILOX_FN ct_philox_u16 ct_philox_uniform_range_bf16(ct_philox_u32 x0, float low, float high) {
  const float r =
      CT_PHILOX_ADDF(low, CT_PHILOX_MULF(CT_PHILOX_SUBF(high, low), ct_philox_uniform_bf16(x0)));
  const ct_philox_u16 h = ct_philox_f32_to_bf16(r);
  if (ct_philox_bf16_to_f32(h) < high) return h;
  return (ct_philox_u16)ct_philox_bits_below(ct_philox_f32_to_bf16(high), 0x8000u);
}

/* ----- float32 log, sqrt and cos(2 pi u) from exactly rounded multiplications and additions --- */

/* log(x) for a normal float32 x in (0, 1]: x = m 2^e with m in [sqrt(1/2), sqrt(2)), then
 * e log(2) (split in two parts, the first exact times e) + log1p(m - 1), whose polynomial
 * log1p(f) = f + f^2 g(f) was fitted on [sqrt(1/2) - 1, sqrt(2) - 1] (under 1 ulp there). */
CT_PHILOX_FN float ct_philox_log_f32(float x) {
  const ct_philox_u32 b = ct_philox_f32_to_bits(x);
  int e = (int)(b >> 23) - 127;
  float m = ct_philox_bits_to_f32((b & 0x7fffffu) | 0x3f800000u);
  if (m > 1.41421353816986083984375f) {
    m = CT_PHILOX_MULF(m, 0.5f);
    e += 1;
  }
  const float f = CT_PHILOX_SUBF(m, 1.0f);
  float g = -0.074732959270477294921875f;
  g = CT_PHILOX_ADDF(CT_PHILOX_MULF(g, f), 0.128196656703948974609375f);
  g = CT_PHILOX_ADDF(CT_PHILOX_MULF(g, f), -0.132620394229888916015625f);
  g = CT_PHILOX_ADDF(CT_PHILOX_MULF(g, f), 0.14196668565273284912109375f);
  g = CT_PHILOX_ADDF(CT_PHILOX_MULF(g, f), -0.16608588397502899169921875f);
  g = CT_PHILOX_ADDF(CT_PHILOX_MULF(g, f), 0.20001174509525299072265625f);
  g = CT_PHILOX_ADDF(CT_PHILOX_MULF(g, f), -0.2500157654285430908203125f);
  g = CT_PHILOX_ADDF(CT_PHILOX_MULF(g, f), 0.33333337306976318359375f);
  g = CT_PHILOX_ADDF(CT_PHILOX_MULF(g, f), -0.49999988079071044921875f);
  const float log1p_f = CT_PHILOX_ADDF(f, CT_PHILOX_MULF(CT_PHILOX_MULF(f, f), g));
  const float ef = (float)e;
  return CT_PHILOX_ADDF(
      CT_PHILOX_MULF(ef, 0.693145751953125f),
      CT_PHILOX_ADDF(log1p_f, CT_PHILOX_MULF(ef, 0.000001428606765330187045037746429443359375f)));
}

/* sqrt(y) for a float32 y >= 0: three Newton steps on 1/sqrt(y) from the classic bit-level first
 * guess, then y / sqrt(y) (within 2 ulp). */
CT_PHILOX_FN float ct_philox_sqrt_f32(float y) {
  if (y == 0.0f) return 0.0f;
  float g = ct_philox_bits_to_f32(0x5f375a86u - (ct_philox_f32_to_bits(y) >> 1));
  const float h = CT_PHILOX_MULF(0.5f, y);
  for (int k = 0; k < 3; ++k) {
    g = CT_PHILOX_MULF(g, CT_PHILOX_SUBF(1.5f, CT_PHILOX_MULF(h, CT_PHILOX_MULF(g, g))));
  }
  return CT_PHILOX_MULF(y, g);
}

/* sin(pi w / 2) and cos(pi w / 2) for w in [0, 1/2] (angles up to pi/4): Taylor polynomials,
 * truncated below 2^-30. */
CT_PHILOX_FN float ct_philox_sin_half_pi_f32(float w) {
  const float t = CT_PHILOX_MULF(w, w);
  float p = -0.000003598843250074423849582672119140625f;
  p = CT_PHILOX_ADDF(CT_PHILOX_MULF(p, t), 0.00016044118092395365238189697265625f);
  p = CT_PHILOX_ADDF(CT_PHILOX_MULF(p, t), -0.004681753925979137420654296875f);
  p = CT_PHILOX_ADDF(CT_PHILOX_MULF(p, t), 0.079692624509334564208984375f);
  p = CT_PHILOX_ADDF(CT_PHILOX_MULF(p, t), -0.645964086055755615234375f);
  p = CT_PHILOX_ADDF(CT_PHILOX_MULF(p, t), 1.57079637050628662109375f);
  return CT_PHILOX_MULF(w, p);
}

CT_PHILOX_FN float ct_philox_cos_half_pi_f32(float w) {
  const float t = CT_PHILOX_MULF(w, w);
  float p = 0.000000471087474807063699699938297271728515625f;
  p = CT_PHILOX_ADDF(CT_PHILOX_MULF(p, t), -0.000025202041797456331551074981689453125f);
  p = CT_PHILOX_ADDF(CT_PHILOX_MULF(p, t), 0.0009192602592520415782928466796875f);
  p = CT_PHILOX_ADDF(CT_PHILOX_MULF(p, t), -0.020863480865955352783203125f);
  p = CT_PHILOX_ADDF(CT_PHILOX_MULF(p, t), 0.2536695003509521484375f);
  p = CT_PHILOX_ADDF(CT_PHILOX_MULF(p, t), -1.2337005138397216796875f);
  return CT_PHILOX_ADDF(CT_PHILOX_MULF(p, t), 1.0f);
}

/* cos(2 pi u) for u = (x >> 8) 2^-24: the top 2 bits pick the quadrant, the next 22 give
 * v in [0, 1) within it (angle pi v / 2); v > 1/2 uses the complementary function of 1 - v
 * (exact), so the polynomials only see angles up to pi/4. */
CT_PHILOX_FN float ct_philox_cos_2pi_f32(ct_philox_u32 x) {
  const ct_philox_u32 quadrant = x >> 30, v = (x >> 8) & 0x3fffffu;
  const int flip = v > 0x200000u;
  const float w = (float)(flip ? 0x400000u - v : v) * 2.384185791015625e-07f; /* 2^-22 */
  /* cos(q pi/2 + a): cos a, -sin a, -cos a, sin a for q = 0..3 */
  const int use_sin = (int)(quadrant & 1u) ^ flip;
  const float c = use_sin ? ct_philox_sin_half_pi_f32(w) : ct_philox_cos_half_pi_f32(w);
  return (quadrant == 1u || quadrant == 2u) ? -c : c;
}

/* ----- normal (Box-Muller) ----- */

/* float32: u1 = ((x0 >> 8) + 1) 2^-24 in (0, 1], u2 = (x1 >> 8) 2^-24;
 * sqrt(-2 log u1) cos(2 pi u2). */
CT_PHILOX_FN float ct_philox_normal_f32(ct_philox_u32 x0, ct_philox_u32 x1) {
  const float u1 = (float)((x0 >> 8) + 1u) * 5.9604644775390625e-08f;
  const float radius = ct_philox_sqrt_f32(CT_PHILOX_MULF(-2.0f, ct_philox_log_f32(u1)));
  return CT_PHILOX_MULF(radius, ct_philox_cos_2pi_f32(x1));
}

/* mean + std z in float32 (two rounded operations). */
CT_PHILOX_FN float ct_philox_normal_range_f32(ct_philox_u32 x0, ct_philox_u32 x1, float mean,
                                              float std) {
  return CT_PHILOX_ADDF(mean, CT_PHILOX_MULF(std, ct_philox_normal_f32(x0, x1)));
}

#if defined(CT_PHILOX_HAS_F64)

typedef union ct_philox_f64_bits {
  double f;
  ct_philox_u64 u;
} ct_philox_f64_bits;

CT_PHILOX_FN ct_philox_u64 ct_philox_f64_to_bits(double f) {
  ct_philox_f64_bits b;
  b.f = f;
  return b.u;
}

CT_PHILOX_FN double ct_philox_bits_to_f64(ct_philox_u64 u) {
  ct_philox_f64_bits b;
  b.u = u;
  return b.f;
}

/* The 53-bit integer of words (hi, lo): ((hi << 32 | lo) >> 11). */
CT_PHILOX_FN ct_philox_u64 ct_philox_top53(ct_philox_u32 hi, ct_philox_u32 lo) {
  return (((ct_philox_u64)hi << 32) | (ct_philox_u64)lo) >> 11;
}

/* float64: ((x0 << 32 | x1) >> 11) * 2^-53 */
CT_PHILOX_FN double ct_philox_uniform_f64(ct_philox_u32 x0, ct_philox_u32 x1) {
  return (double)ct_philox_top53(x0, x1) * 1.1102230246251565404236316680908203125e-16;
}

CT_PHILOX_FN double ct_philox_uniform_range_f64(ct_philox_u32 x0, ct_philox_u32 x1, double low,
                                                double high) {
  const double r =
      CT_PHILOX_ADDD(low, CT_PHILOX_MULD(CT_PHILOX_SUBD(high, low), ct_philox_uniform_f64(x0, x1)));
  if (r < high) return r;
  const ct_philox_u64 b = ct_philox_f64_to_bits(high), sign = (ct_philox_u64)1 << 63;
  if ((b & ~sign) == 0) return ct_philox_bits_to_f64(sign | 1u);
  return ct_philox_bits_to_f64((b & sign) ? b + 1u : b - 1u);
}

/* log(x) for a normal float64 x in (0, 1]: x = m 2^e with m in [sqrt(1/2), sqrt(2)),
 * log1p(f) = 2 atanh(s) with s = f / (2 + f), |s| < 0.172, by its series to s^23 (exactly
 * rounded division is available in float64 on every device). */
CT_PHILOX_FN double ct_philox_log_f64(double x) {
  const ct_philox_u64 b = ct_philox_f64_to_bits(x);
  int e = (int)(b >> 52) - 1023;
  double m = ct_philox_bits_to_f64((b & 0xfffffffffffffull) | 0x3ff0000000000000ull);
  if (m > 1.4142135623730951) {
    m = CT_PHILOX_MULD(m, 0.5);
    e += 1;
  }
  const double f = CT_PHILOX_SUBD(m, 1.0);
  const double s = CT_PHILOX_DIVD(f, CT_PHILOX_ADDD(2.0, f));
  const double t = CT_PHILOX_MULD(s, s);
  /* 2 atanh(s) = 2s + s t (2/3 + t (2/5 + ...)), the coefficients 2/(2k+1) rounded */
  double p = 0.08695652173913043;
  p = CT_PHILOX_ADDD(CT_PHILOX_MULD(p, t), 0.09523809523809523);
  p = CT_PHILOX_ADDD(CT_PHILOX_MULD(p, t), 0.10526315789473684);
  p = CT_PHILOX_ADDD(CT_PHILOX_MULD(p, t), 0.11764705882352941);
  p = CT_PHILOX_ADDD(CT_PHILOX_MULD(p, t), 0.13333333333333333);
  p = CT_PHILOX_ADDD(CT_PHILOX_MULD(p, t), 0.15384615384615385);
  p = CT_PHILOX_ADDD(CT_PHILOX_MULD(p, t), 0.18181818181818182);
  p = CT_PHILOX_ADDD(CT_PHILOX_MULD(p, t), 0.2222222222222222);
  p = CT_PHILOX_ADDD(CT_PHILOX_MULD(p, t), 0.2857142857142857);
  p = CT_PHILOX_ADDD(CT_PHILOX_MULD(p, t), 0.4);
  p = CT_PHILOX_ADDD(CT_PHILOX_MULD(p, t), 0.6666666666666666);
  const double log1p_f =
      CT_PHILOX_ADDD(CT_PHILOX_MULD(2.0, s), CT_PHILOX_MULD(CT_PHILOX_MULD(s, t), p));
  const double ed = (double)e;
  return CT_PHILOX_ADDD(CT_PHILOX_MULD(ed, 0.6931471526622772),
                        CT_PHILOX_ADDD(log1p_f, CT_PHILOX_MULD(ed, 2.7897668087737545e-08)));
}

CT_PHILOX_FN double ct_philox_sin_half_pi_f64(double w) {
  const double t = CT_PHILOX_MULD(w, w);
  double p = -4.377065467313742e-14;
  p = CT_PHILOX_ADDD(CT_PHILOX_MULD(p, t), 6.0669357311061955e-12);
  p = CT_PHILOX_ADDD(CT_PHILOX_MULD(p, t), -6.688035109811468e-10);
  p = CT_PHILOX_ADDD(CT_PHILOX_MULD(p, t), 5.692172921967927e-08);
  p = CT_PHILOX_ADDD(CT_PHILOX_MULD(p, t), -3.598843235212085e-06);
  p = CT_PHILOX_ADDD(CT_PHILOX_MULD(p, t), 0.00016044118478735983);
  p = CT_PHILOX_ADDD(CT_PHILOX_MULD(p, t), -0.004681754135318688);
  p = CT_PHILOX_ADDD(CT_PHILOX_MULD(p, t), 0.07969262624616705);
  p = CT_PHILOX_ADDD(CT_PHILOX_MULD(p, t), -0.6459640975062463);
  p = CT_PHILOX_ADDD(CT_PHILOX_MULD(p, t), 1.5707963267948966);
  return CT_PHILOX_MULD(w, p);
}

CT_PHILOX_FN double ct_philox_cos_half_pi_f64(double w) {
  const double t = CT_PHILOX_MULD(w, w);
  double p = -5.294400200734623e-13;
  p = CT_PHILOX_ADDD(CT_PHILOX_MULD(p, t), 6.565963114979473e-11);
  p = CT_PHILOX_ADDD(CT_PHILOX_MULD(p, t), -6.386603083791852e-09);
  p = CT_PHILOX_ADDD(CT_PHILOX_MULD(p, t), 4.710874778818172e-07);
  p = CT_PHILOX_ADDD(CT_PHILOX_MULD(p, t), -2.5202042373060607e-05);
  p = CT_PHILOX_ADDD(CT_PHILOX_MULD(p, t), 0.0009192602748394266);
  p = CT_PHILOX_ADDD(CT_PHILOX_MULD(p, t), -0.02086348076335296);
  p = CT_PHILOX_ADDD(CT_PHILOX_MULD(p, t), 0.25366950790104803);
  p = CT_PHILOX_ADDD(CT_PHILOX_MULD(p, t), -1.2337005501361697);
  return CT_PHILOX_ADDD(CT_PHILOX_MULD(p, t), 1.0);
}

/* cos(2 pi u) for the 53-bit u of words (hi, lo): quadrant from the top 2 bits, v from the
 * next 51, as the float32 version. */
CT_PHILOX_FN double ct_philox_cos_2pi_f64(ct_philox_u32 hi, ct_philox_u32 lo) {
  const ct_philox_u64 u = ct_philox_top53(hi, lo);
  const ct_philox_u64 quadrant = u >> 51, v = u & 0x7ffffffffffffull, halfway = 0x4000000000000ull;
  const int flip = v > halfway;
  const double w = (double)(flip ? 2 * halfway - v : v) * 4.44089209850062616169452667236328125e-16;
  const int use_sin = (int)(quadrant & 1u) ^ flip;
  const double c = use_sin ? ct_philox_sin_half_pi_f64(w) : ct_philox_cos_half_pi_f64(w);
  return (quadrant == 1u || quadrant == 2u) ? -c : c;
}

/* float64: u1 = (((x0 << 32 | x1) >> 11) + 1) 2^-53 in (0, 1], u2 from (x2, x3) likewise
 * without the + 1; sqrt(-2 log u1) cos(2 pi u2). */
CT_PHILOX_FN double ct_philox_normal_f64(ct_philox_u32 x0, ct_philox_u32 x1, ct_philox_u32 x2,
                                         ct_philox_u32 x3) {
  const double u1 =
      (double)(ct_philox_top53(x0, x1) + 1u) * 1.1102230246251565404236316680908203125e-16;
  const double radius = CT_PHILOX_SQRTD(CT_PHILOX_MULD(-2.0, ct_philox_log_f64(u1)));
  return CT_PHILOX_MULD(radius, ct_philox_cos_2pi_f64(x2, x3));
}

CT_PHILOX_FN double ct_philox_normal_range_f64(ct_philox_u32 x0, ct_philox_u32 x1, ct_philox_u32 x2,
                                               ct_philox_u32 x3, double mean, double std) {
  return CT_PHILOX_ADDD(mean, CT_PHILOX_MULD(std, ct_philox_normal_f64(x0, x1, x2, x3)));
}

#endif /* CT_PHILOX_HAS_F64 */

#endif /* CT_PHILOX_H */
