/* conv2d_direct_avx512.c - the direct float32 convolution micro-kernel (contract in
 * conv2d_direct.h), compiled with -mavx512f -mfma and run only where the CPU has AVX-512F.
 * 24 accumulators (12 rows × 2 vectors of 16 positions), 2 masked input loads and 12 weight
 * broadcasts per tap: the GEMM micro-kernel's shape, reading its B operand from the input. */
#include <immintrin.h>

#include "conv2d_direct.h"

/* The input at `p` + `offset` elements; masked-off lanes are never accessed, so the address may
 * lie outside the input (the padding): computed on integers, not as a pointer. */
static inline __m512 ct_conv2d_direct_load(const float* p, int64_t offset, __mmask16 mask) {
  const float* at = (const float*)((uintptr_t)p + (uintptr_t)(offset * (int64_t)sizeof(float)));
  return _mm512_maskz_loadu_ps(mask, at);
}

void ct_conv2d_direct_avx512_f32(const ct_conv2d_direct_tile* tile) {
  __m512 acc[CT_CONV2D_DIRECT_ROWS][2];
  const __mmask16 out_lo = (__mmask16)(tile->out_mask & 0xffff);
  const __mmask16 out_hi = (__mmask16)(tile->out_mask >> 16);
#pragma GCC unroll 12
  for (int r = 0; r < CT_CONV2D_DIRECT_ROWS; ++r) {
    if (tile->accumulate && r < tile->rows) {
      const float* o = tile->out + r * tile->out_channel_stride;
      acc[r][0] = _mm512_maskz_loadu_ps(out_lo, o);
      acc[r][1] = _mm512_maskz_loadu_ps(out_hi, o + 16);
    } else {
      const __m512 start =
          tile->bias && !tile->accumulate ? _mm512_set1_ps(tile->bias[r]) : _mm512_setzero_ps();
      acc[r][0] = acc[r][1] = start;
    }
  }
  const float* a = tile->a;
  const int32_t taps = tile->taps;
  for (int64_t c = 0; c < tile->channels; ++c) {
    const float* xc = tile->x + c * tile->x_channel_stride;
    for (int32_t t = 0; t < taps; ++t) {
      const int64_t offset = tile->tap_offset[t];
      const uint32_t mask = tile->tap_mask[t];
      __m512 b0, b1;
      if (mask == 0xffffffffu) { /* most taps: plain loads, which cost less than masked ones */
        b0 = _mm512_loadu_ps(xc + offset);
        b1 = _mm512_loadu_ps(xc + offset + 16);
      } else {
        b0 = ct_conv2d_direct_load(xc, offset, (__mmask16)(mask & 0xffff));
        b1 = ct_conv2d_direct_load(xc, offset + 16, (__mmask16)(mask >> 16));
      }
#pragma GCC unroll 12
      for (int r = 0; r < CT_CONV2D_DIRECT_ROWS; ++r) {
        const __m512 w = _mm512_set1_ps(a[r]);
        acc[r][0] = _mm512_fmadd_ps(w, b0, acc[r][0]);
        acc[r][1] = _mm512_fmadd_ps(w, b1, acc[r][1]);
      }
      a += CT_CONV2D_DIRECT_ROWS;
    }
  }
#pragma GCC unroll 12
  for (int r = 0; r < CT_CONV2D_DIRECT_ROWS; ++r) {
    if (r < tile->rows) {
      float* o = tile->out + r * tile->out_channel_stride;
      _mm512_mask_storeu_ps(o, out_lo, acc[r][0]);
      _mm512_mask_storeu_ps(o + 16, out_hi, acc[r][1]);
    }
  }
}
