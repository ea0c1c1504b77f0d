/* conv2d_direct_impl.h - the body of a direct convolution micro-kernel (contract in
 * conv2d_direct.h), included by conv2d_direct_avx512.c once per tile shape with these macros:
 *   CT_DK_NAME  function name
 *   CT_DK_ROWS  output channels of the tile; CT_DK_VECS vectors of 16 positions per row
 * ROWS · VECS accumulators, VECS input loads and ROWS weight broadcasts per tap. A tap whose
 * lanes all read the input loads plainly (masked loads cost more); the others mask. */

static void CT_DK_NAME(const ct_conv2d_direct_tile* tile) {
  __m512 acc[CT_DK_ROWS][CT_DK_VECS];
#pragma GCC unroll 16
  for (int r = 0; r < CT_DK_ROWS; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < CT_DK_VECS; ++v) {
      const __mmask16 lanes = (__mmask16)(tile->out_mask >> (16 * v));
      if (tile->accumulate && r < tile->rows) {
        acc[r][v] = _mm512_maskz_loadu_ps(lanes, tile->out + r * tile->out_channel_stride + 16 * v);
      } else {
        acc[r][v] =
            tile->bias && !tile->accumulate ? _mm512_set1_ps(tile->bias[r]) : _mm512_setzero_ps();
      }
    }
  }
  const uint64_t full = ct_conv2d_direct_first_lanes(16 * CT_DK_VECS);
  const float* a = tile->a;
  for (int64_t c = 0; c < tile->channels; ++c) {
    const float* xc = tile->x + c * tile->x_channel_stride;
    for (int32_t t = 0; t < tile->taps; ++t) {
      const int64_t offset = tile->tap_offset[t];
      const uint64_t mask = tile->tap_mask[t];
      __m512 b[CT_DK_VECS];
      if (mask == full) {
#pragma GCC unroll 4
        for (int v = 0; v < CT_DK_VECS; ++v) b[v] = _mm512_loadu_ps(xc + offset + 16 * v);
      } else {
#pragma GCC unroll 4
        for (int v = 0; v < CT_DK_VECS; ++v) {
          b[v] = ct_conv2d_direct_load(xc, offset + 16 * v, (__mmask16)(mask >> (16 * v)));
        }
      }
#pragma GCC unroll 16
      for (int r = 0; r < CT_DK_ROWS; ++r) {
        const __m512 w = _mm512_set1_ps(a[r]);
#pragma GCC unroll 4
        for (int v = 0; v < CT_DK_VECS; ++v) acc[r][v] = _mm512_fmadd_ps(w, b[v], acc[r][v]);
      }
      a += CT_DK_ROWS;
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < CT_DK_ROWS; ++r) {
    if (r < tile->rows) {
      float* o = tile->out + r * tile->out_channel_stride;
#pragma GCC unroll 4
      for (int v = 0; v < CT_DK_VECS; ++v) {
        _mm512_mask_storeu_ps(o + 16 * v, (__mmask16)(tile->out_mask >> (16 * v)), acc[r][v]);
      }
    }
  }
}

#undef CT_DK_NAME
#undef CT_DK_ROWS
#undef CT_DK_VECS
