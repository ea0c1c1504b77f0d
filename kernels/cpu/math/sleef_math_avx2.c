/* sleef_math_avx2.c - SLEEF's AVX2 functions over strided runs (see sleef_math.h; the loops are
 * sleef_math_impl.h's). Compiled with -mavx2 -mfma, in the AVX2 instruction-set library, and only
 * where the build found SLEEF; sleef_math.c calls it on CPUs with AVX2 but not AVX-512. */
#include <immintrin.h>
#include <math.h>
#include <sleef.h>

#include "math/sleef_math.h"

/* Masks are vectors of all-ones lanes. */
#define CT_SM_ISA avx2

#define CT_SM_T float
#define CT_SM_SFX f32
#define CT_SM_V __m256
#define CT_SM_M __m256
#define CT_SM_LANES 8
#define CT_SM_LOADU _mm256_loadu_ps
#define CT_SM_STOREU _mm256_storeu_ps
#define CT_SM_SET1 _mm256_set1_ps
#define CT_SM_ADD _mm256_add_ps
#define CT_SM_SUB _mm256_sub_ps
#define CT_SM_DIV _mm256_div_ps
#define CT_SM_SIGN_AND(v, s) _mm256_and_ps(v, s)
#define CT_SM_ABS(v) _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v)
#define CT_SM_FLOOR(v) _mm256_round_ps(v, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC)
#define CT_SM_CMP(a, b, P) _mm256_cmp_ps(a, b, P)
#define CT_SM_BLEND(m, a, b) _mm256_blendv_ps(a, b, m)
#define CT_SM_MAND _mm256_and_ps
#define CT_SM_MXOR _mm256_xor_ps
#define CT_SM_BITS _mm256_movemask_ps
#define CT_SM_UNARY_FN(NAME) Sleef_##NAME##f8_u10avx2
#define CT_SM_LIBM(NAME) NAME##f
#define CT_SM_LIMIT(F32, F64) F32
#define CT_SM_BINARY_FN(NAME, ACCURACY) Sleef_##NAME##f8##ACCURACY##avx2
#define CT_SM_FMOD Sleef_fmodf8_avx2
#include "math/sleef_math_impl.h"

#define CT_SM_T double
#define CT_SM_SFX f64
#define CT_SM_V __m256d
#define CT_SM_M __m256d
#define CT_SM_LANES 4
#define CT_SM_LOADU _mm256_loadu_pd
#define CT_SM_STOREU _mm256_storeu_pd
#define CT_SM_SET1 _mm256_set1_pd
#define CT_SM_ADD _mm256_add_pd
#define CT_SM_SUB _mm256_sub_pd
#define CT_SM_DIV _mm256_div_pd
#define CT_SM_SIGN_AND(v, s) _mm256_and_pd(v, s)
#define CT_SM_ABS(v) _mm256_andnot_pd(_mm256_set1_pd(-0.0), v)
#define CT_SM_FLOOR(v) _mm256_round_pd(v, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC)
#define CT_SM_CMP(a, b, P) _mm256_cmp_pd(a, b, P)
#define CT_SM_BLEND(m, a, b) _mm256_blendv_pd(a, b, m)
#define CT_SM_MAND _mm256_and_pd
#define CT_SM_MXOR _mm256_xor_pd
#define CT_SM_BITS _mm256_movemask_pd
#define CT_SM_UNARY_FN(NAME) Sleef_##NAME##d4_u10avx2
#define CT_SM_LIBM(NAME) NAME
#define CT_SM_LIMIT(F32, F64) F64
#define CT_SM_BINARY_FN(NAME, ACCURACY) Sleef_##NAME##d4##ACCURACY##avx2
#define CT_SM_FMOD Sleef_fmodd4_avx2
#include "math/sleef_math_impl.h"
