/* vector_math_avx2.c - the AVX2 + FMA vector_math set (compiled with -mavx2 -mfma; chosen only
 * where the CPU has both): 8 floats a vector. */
#include <immintrin.h>

#define CT_VM_NAME ct_vector_math_avx2
#define CT_VM_ISA "avx2"
#define CT_VM_BYTES 32
#define CT_VM_FMA(a, b, c) _mm256_fmadd_ps((a), (b), (c))
#define CT_VM_MAX(a, b) _mm256_max_ps((a), (b))
#define CT_VM_MIN(a, b) _mm256_min_ps((a), (b))
#define CT_VM_STREAM(p, v) _mm256_stream_ps((p), (v))
/* Whether any lane of an integer vector has its sign bit set. */
#define CT_VM_ANY_SIGN(v) _mm256_movemask_ps((__m256)(v))
#define CT_VM_MASK_LOAD(p, count, live) _mm256_maskload_ps((p), (__m256i)(live))
#define CT_VM_MASK_STORE(p, count, live, v) _mm256_maskstore_ps((p), (__m256i)(live), (v))
#define CT_VM_WIDEN_LOW(v) _mm256_cvtps_pd(_mm256_castps256_ps128(v))
#define CT_VM_WIDEN_HIGH(v) _mm256_cvtps_pd(_mm256_extractf128_ps((v), 1))
#include "math/vector_math_impl.h"
