/* conv2d_direct_impl.h - the body of a direct convolution micro-kernel (contract in
 * conv2d_direct.h), included by conv2d_direct_<isa>.c once per tile shape with these macros:
 *   CT_DK_NAME   function name
 *   CT_DK_ROWS   output channels of the tile; CT_DK_VECS vectors of CT_DK_LANES positions per row
 * and, defined once by the including file for its instruction set:
 *   CT_DK_V, CT_DK_LANES        the float vector type and its lanes
 *   CT_DK_SET1(f), CT_DK_ZERO() broadcast, zeros
 *   CT_DK_LOADU(p), CT_DK_STOREU(p, v), CT_DK_FMA(a, b, c)
 *   CT_DK_LOAD_LANES(p, offset, bits)  the lanes in `bits` of p + offset (elements), zeros in
 *                                      the others, which are never accessed (the address may lie
 *                                      outside the input: computed on integers)
 *   CT_DK_LOAD_INSIDE(p, bits)         the same where every lane's address is inside the input
 *   CT_DK_STORE_LANES(p, bits, v)      v's lanes in `bits` to p
 * ROWS · VECS accumulators, VECS input loads and ROWS weight broadcasts per tap. A tap whose
 * lanes all read the input loads plainly (masked loads cost more); the others mask, through
 * CT_DK_LOAD_INSIDE where the tap's lanes all lie in the channel's plane. Whole vectors of the
 * output are loaded and stored plainly too. */

/* The lanes of vector v (of CT_DK_LANES) in a tile's lane mask. */
#define CT_DK_VEC_BITS(mask, v) \
  (((mask) >> (CT_DK_LANES * (v))) & ct_conv2d_direct_first_lanes(CT_DK_LANES))

static void CT_DK_NAME(const ct_conv2d_direct_tile* tile) {
  const uint64_t vec_bits = ct_conv2d_direct_first_lanes(CT_DK_LANES);
  CT_DK_V acc[CT_DK_ROWS][CT_DK_VECS];
#pragma GCC unroll 16
  for (int r = 0; r < CT_DK_ROWS; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < CT_DK_VECS; ++v) {
      const uint64_t lanes = CT_DK_VEC_BITS(tile->out_mask, v);
      if (tile->accumulate && r < tile->rows) {
        const float* o = tile->out + r * tile->out_channel_stride;
        acc[r][v] = lanes == vec_bits ? CT_DK_LOADU(o + CT_DK_LANES * v)
                                      : CT_DK_LOAD_LANES(o, CT_DK_LANES * v, lanes);
      } else {
        acc[r][v] = tile->bias && !tile->accumulate ? CT_DK_SET1(tile->bias[r]) : CT_DK_ZERO();
      }
    }
  }
  /* Taps outside, channels inside: a tap's offset and lanes hold for every channel, so the inner
   * loop is loads and multiply-adds only. */
  const uint64_t full = ct_conv2d_direct_first_lanes(CT_DK_LANES * CT_DK_VECS);
  const int64_t channels = tile->channels, x_step = tile->x_channel_stride;
/* The multiply-adds of channel c, whose input vectors LOAD(v) gives. */
#define CT_DK_CHANNEL(LOAD)                                                     \
  do {                                                                          \
    CT_DK_V b[CT_DK_VECS];                                                      \
    _Pragma("GCC unroll 4") for (int v = 0; v < CT_DK_VECS; ++v) b[v] = (LOAD); \
    _Pragma("GCC unroll 16") for (int r = 0; r < CT_DK_ROWS; ++r) {             \
      const CT_DK_V w = CT_DK_SET1(a[c * CT_DK_ROWS + r]);                      \
      _Pragma("GCC unroll 4") for (int v = 0; v < CT_DK_VECS; ++v) {            \
        acc[r][v] = CT_DK_FMA(w, b[v], acc[r][v]);                              \
      }                                                                         \
    }                                                                           \
  } while (0)
  for (int32_t t = 0; t < tile->taps; ++t) {
    const int64_t offset = tile->tap_offset[t];
    const uint64_t mask = tile->tap_mask[t];
    const float* a = tile->a + t * channels * CT_DK_ROWS;
    if (mask == full) {
      const float* xt = tile->x + offset;
      for (int64_t c = 0; c < channels; ++c) {
        CT_DK_CHANNEL(CT_DK_LOADU(xt + c * x_step + CT_DK_LANES * v));
      }
    } else if (tile->tap_inside >> t & 1) {
      const float* xt = tile->x + offset;
      for (int64_t c = 0; c < channels; ++c) {
        CT_DK_CHANNEL(
            CT_DK_LOAD_INSIDE(xt + c * x_step + CT_DK_LANES * v, CT_DK_VEC_BITS(mask, v)));
      }
    } else {
      for (int64_t c = 0; c < channels; ++c) {
        CT_DK_CHANNEL(CT_DK_LOAD_LANES(tile->x + c * x_step, offset + CT_DK_LANES * v,
                                       CT_DK_VEC_BITS(mask, v)));
      }
    }
  }
#undef CT_DK_CHANNEL
#pragma GCC unroll 16
  for (int r = 0; r < CT_DK_ROWS; ++r) {
    if (r < tile->rows) {
      float* o = tile->out + r * tile->out_channel_stride;
#pragma GCC unroll 4
      for (int v = 0; v < CT_DK_VECS; ++v) {
        const uint64_t lanes = CT_DK_VEC_BITS(tile->out_mask, v);
        if (lanes == vec_bits) {
          CT_DK_STOREU(o + CT_DK_LANES * v, acc[r][v]);
        } else if (lanes != 0) {
          CT_DK_STORE_LANES(o + CT_DK_LANES * v, lanes, acc[r][v]);
        }
      }
    }
  }
}

#undef CT_DK_VEC_BITS
#undef CT_DK_NAME
#undef CT_DK_ROWS
#undef CT_DK_VECS
