/* conv2d_direct_avx512.c - the direct float32 convolution micro-kernels (contract in
 * conv2d_direct.h), compiled with -mavx512f -mfma and run only where the CPU has AVX-512F: the
 * GEMM micro-kernel's register tiling, reading its B operand from the input. */
#include <immintrin.h>

#include "conv2d_direct.h"

/* The input at `p` + `offset` elements; masked-off lanes are never accessed, so the address may
 * lie outside the input (the padding): computed on integers, not as a pointer. */
static inline __m512 ct_conv2d_direct_load(const float* p, int64_t offset, __mmask16 mask) {
  const float* at = (const float*)((uintptr_t)p + (uintptr_t)(offset * (int64_t)sizeof(float)));
  return _mm512_maskz_loadu_ps(mask, at);
}

#define CT_DK_NAME ct_conv2d_direct_avx512_12x32
#define CT_DK_ROWS 12
#define CT_DK_VECS 2
#include "conv2d_direct_impl.h"

#define CT_DK_NAME ct_conv2d_direct_avx512_8x48
#define CT_DK_ROWS 8
#define CT_DK_VECS 3
#include "conv2d_direct_impl.h"

const ct_conv2d_direct_shape ct_conv2d_direct_avx512_shapes[CT_CONV2D_DIRECT_AVX512_SHAPES] = {
    {.rows = 12, .lanes = 32, .run = ct_conv2d_direct_avx512_12x32},
    {.rows = 8, .lanes = 48, .run = ct_conv2d_direct_avx512_8x48},
};
