/* sleef_math_avx512.c - SLEEF's AVX-512F functions over strided runs (see sleef_math.h; the loops
 * are sleef_math_impl.h's). Compiled with -mavx512f -mfma, in the AVX-512 instruction-set library,
 * and only where the build found SLEEF; sleef_math.c calls it on CPUs at the AVX-512 level. Only
 * AVX-512F instructions: the bitwise operations on floats go through the integer ones. */
#include <immintrin.h>
#include <math.h>
#include <sleef.h>

#include "math/sleef_math.h"

/* Masks are mask registers, one bit a lane. */
#define CT_SM_ISA avx512

#define CT_SM_T float
#define CT_SM_SFX f32
#define CT_SM_V __m512
#define CT_SM_M __mmask16
#define CT_SM_LANES 16
#define CT_SM_LOADU _mm512_loadu_ps
#define CT_SM_STOREU _mm512_storeu_ps
#define CT_SM_SET1 _mm512_set1_ps
#define CT_SM_ADD _mm512_add_ps
#define CT_SM_SUB _mm512_sub_ps
#define CT_SM_DIV _mm512_div_ps
#define CT_SM_SIGN_AND(v, s) \
  _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(v), _mm512_castps_si512(s)))
#define CT_SM_ABS(v) _mm512_abs_ps(v)
#define CT_SM_FLOOR(v) _mm512_roundscale_ps(v, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC)
#define CT_SM_CMP(a, b, P) _mm512_cmp_ps_mask(a, b, P)
#define CT_SM_BLEND(m, a, b) _mm512_mask_blend_ps(m, a, b)
#define CT_SM_MAND(m, n) ((__mmask16)((m) & (n)))
#define CT_SM_MXOR(m, n) ((__mmask16)((m) ^ (n)))
#define CT_SM_BITS(m) ((int)(m))
#define CT_SM_UNARY_FN(NAME) Sleef_##NAME##f16_u10avx512f
#define CT_SM_LIBM(NAME) NAME##f
#define CT_SM_LIMIT(F32, F64) F32
#define CT_SM_BINARY_FN(NAME, ACCURACY) Sleef_##NAME##f16##ACCURACY##avx512f
#define CT_SM_FMOD Sleef_fmodf16_avx512f
#include "math/sleef_math_impl.h"

#define CT_SM_T double
#define CT_SM_SFX f64
#define CT_SM_V __m512d
#define CT_SM_M __mmask8
#define CT_SM_LANES 8
#define CT_SM_LOADU _mm512_loadu_pd
#define CT_SM_STOREU _mm512_storeu_pd
#define CT_SM_SET1 _mm512_set1_pd
#define CT_SM_ADD _mm512_add_pd
#define CT_SM_SUB _mm512_sub_pd
#define CT_SM_DIV _mm512_div_pd
#define CT_SM_SIGN_AND(v, s) \
  _mm512_castsi512_pd(_mm512_and_si512(_mm512_castpd_si512(v), _mm512_castpd_si512(s)))
#define CT_SM_ABS(v) _mm512_abs_pd(v)
#define CT_SM_FLOOR(v) _mm512_roundscale_pd(v, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC)
#define CT_SM_CMP(a, b, P) _mm512_cmp_pd_mask(a, b, P)
#define CT_SM_BLEND(m, a, b) _mm512_mask_blend_pd(m, a, b)
#define CT_SM_MAND(m, n) ((__mmask8)((m) & (n)))
#define CT_SM_MXOR(m, n) ((__mmask8)((m) ^ (n)))
#define CT_SM_BITS(m) ((int)(m))
#define CT_SM_UNARY_FN(NAME) Sleef_##NAME##d8_u10avx512f
#define CT_SM_LIBM(NAME) NAME
#define CT_SM_LIMIT(F32, F64) F64
#define CT_SM_BINARY_FN(NAME, ACCURACY) Sleef_##NAME##d8##ACCURACY##avx512f
#define CT_SM_FMOD Sleef_fmodd8_avx512f
#include "math/sleef_math_impl.h"
