/* vector_math_avx512.c - the AVX-512 vector_math set (compiled with -mavx512f -mfma; chosen
 * only where the CPU has AVX-512 F, BW, DQ and VL): 16 floats a vector. */
#include <immintrin.h>

#define CT_VM_NAME ct_vector_math_avx512
#define CT_VM_ISA "avx512"
#define CT_VM_BYTES 64
#define CT_VM_FMA(a, b, c) _mm512_fmadd_ps((a), (b), (c))
#define CT_VM_MAX(a, b) _mm512_max_ps((a), (b))
#define CT_VM_MIN(a, b) _mm512_min_ps((a), (b))
/* y · 2^n for a vector n of whole numbers (vscalefps: one instruction, one rounding) */
#define CT_VM_SCALE_BY_POW2(y, n) _mm512_scalef_ps((y), (n))
#define CT_VM_STREAM(p, v) _mm512_stream_ps((p), (v))
#define CT_VM_MASK_LOAD(p, count, live) \
  _mm512_maskz_loadu_ps((__mmask16)((1u << (count)) - 1u), (p))
#define CT_VM_MASK_STORE(p, count, live, v) \
  _mm512_mask_storeu_ps((p), (__mmask16)((1u << (count)) - 1u), (v))
#define CT_VM_WIDEN_LOW(v) _mm512_cvtps_pd(_mm512_castps512_ps256(v))
#define CT_VM_WIDEN_HIGH(v) \
  _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)))
#include "math/vector_math_impl.h"
