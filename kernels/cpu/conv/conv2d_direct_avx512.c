/* conv2d_direct_avx512.c - the direct float32 convolution micro-kernels (contract in
 * conv2d_direct.h), compiled with -mavx512f -mfma and run only where the CPU has AVX-512F: the
 * GEMM micro-kernel's register tiling, reading its B operand from the input. */
#include <immintrin.h>

#include "conv/conv2d_direct.h"

/* The lanes `bits` of the input at `p` + `offset` elements; masked-off lanes are never accessed,
 * so the address may lie outside the input (the padding): computed on integers, not as a
 * pointer. */
static inline __m512 ct_conv2d_direct_load(const float* p, int64_t offset, uint64_t bits) {
  const float* at = (const float*)((uintptr_t)p + (uintptr_t)(offset * (int64_t)sizeof(float)));
  return _mm512_maskz_loadu_ps((__mmask16)bits, at);
}

#define CT_DK_V __m512
#define CT_DK_LANES 16
#define CT_DK_SET1(f) _mm512_set1_ps(f)
#define CT_DK_ZERO() _mm512_setzero_ps()
#define CT_DK_LOADU(p) _mm512_loadu_ps(p)
#define CT_DK_STOREU(p, v) _mm512_storeu_ps(p, v)
#define CT_DK_FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define CT_DK_LOAD_LANES(p, offset, bits) ct_conv2d_direct_load(p, offset, bits)
#define CT_DK_LOAD_INSIDE(p, bits) _mm512_maskz_loadu_ps((__mmask16)(bits), p)
#define CT_DK_STORE_LANES(p, bits, v) _mm512_mask_storeu_ps(p, (__mmask16)(bits), v)

#define CT_DK_NAME ct_conv2d_direct_avx512_12x32
#define CT_DK_ROWS 12
#define CT_DK_VECS 2
#include "conv/conv2d_direct_impl.h"

#define CT_DK_NAME ct_conv2d_direct_avx512_8x48
#define CT_DK_ROWS 8
#define CT_DK_VECS 3
#include "conv/conv2d_direct_impl.h"

const ct_conv2d_direct_shape ct_conv2d_direct_avx512_shapes[CT_CONV2D_DIRECT_AVX512_SHAPES] = {
    {.rows = 12, .lanes = 32, .run = ct_conv2d_direct_avx512_12x32},
    {.rows = 8, .lanes = 48, .run = ct_conv2d_direct_avx512_8x48},
};
