/* conv2d_direct_avx2.c - the direct float32 convolution micro-kernels (contract in
 * conv2d_direct.h), compiled with -mavx2 -mfma and run only where the CPU has both: the AVX2 GEMM
 * micro-kernel's register tiling (12 accumulators in 16 ymm registers), reading its B operand
 * from the input. */
#include <immintrin.h>

#include "conv/conv2d_direct.h"

/* The lanes `bits` (8 bits) as a lane mask: lane l all ones where bit l is set, else zeros (bit
 * l shifted to the sign, then spread over the lane). Loop-invariant in the kernel's channel loops,
 * which is where it is used. */
static inline __m256i ct_conv2d_direct_lane_mask(uint64_t bits) {
  const __m256i to_sign = _mm256_setr_epi32(31, 30, 29, 28, 27, 26, 25, 24);
  return _mm256_srai_epi32(_mm256_sllv_epi32(_mm256_set1_epi32((int)bits), to_sign), 31);
}

/* The lanes `bits` of the input at `p` + `offset` elements; masked-off lanes are never accessed
 * (vmaskmovps does not fault on them), so the address may lie outside the input (the padding):
 * computed on integers, not as a pointer. */
static inline __m256 ct_conv2d_direct_load(const float* p, int64_t offset, uint64_t bits) {
  const float* at = (const float*)((uintptr_t)p + (uintptr_t)(offset * (int64_t)sizeof(float)));
  return _mm256_maskload_ps(at, ct_conv2d_direct_lane_mask(bits));
}

#define CT_DK_V __m256
#define CT_DK_LANES 8
#define CT_DK_SET1(f) _mm256_set1_ps(f)
#define CT_DK_ZERO() _mm256_setzero_ps()
#define CT_DK_LOADU(p) _mm256_loadu_ps(p)
#define CT_DK_STOREU(p, v) _mm256_storeu_ps(p, v)
#define CT_DK_FMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define CT_DK_LOAD_LANES(p, offset, bits) ct_conv2d_direct_load(p, offset, bits)
/* (a plain load with the lanes outside `bits` zeroed: vmaskmovps costs more) */
#define CT_DK_LOAD_INSIDE(p, bits) \
  _mm256_and_ps(_mm256_loadu_ps(p), _mm256_castsi256_ps(ct_conv2d_direct_lane_mask(bits)))
#define CT_DK_STORE_LANES(p, bits, v) _mm256_maskstore_ps(p, ct_conv2d_direct_lane_mask(bits), v)

#define CT_DK_NAME ct_conv2d_direct_avx2_6x16
#define CT_DK_ROWS 6
#define CT_DK_VECS 2
#include "conv/conv2d_direct_impl.h"

#define CT_DK_NAME ct_conv2d_direct_avx2_4x24
#define CT_DK_ROWS 4
#define CT_DK_VECS 3
#include "conv/conv2d_direct_impl.h"

const ct_conv2d_direct_shape ct_conv2d_direct_avx2_shapes[CT_CONV2D_DIRECT_AVX2_SHAPES] = {
    {.rows = 6, .lanes = 16, .run = ct_conv2d_direct_avx2_6x16},
    {.rows = 4, .lanes = 24, .run = ct_conv2d_direct_avx2_4x24},
};
