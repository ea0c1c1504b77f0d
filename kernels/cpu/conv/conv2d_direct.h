/* conv2d_direct.h - the direct float32 convolution (AVX2, AVX-512), for stride-1 convolutions whose
 * output rows are as wide as the input rows (same padding: ResNet's 3 × 3).
 *
 * There, output position p (flattened over the output plane) reads, for kernel tap (i, j), the
 * input at flat position p + (i·dH - pH)·W + (j·dW - pW) of its channel: a tile of consecutive
 * output positions reads as many consecutive input elements per tap, which the micro-kernel
 * loads straight from the input with masked loads (lanes in the padding, or past the plane, are
 * masked off: zeros, never read). No im2col panel is packed, which is what the implicit GEMM
 * spends much of its time on when the output channels are few.
 *
 * A micro-kernel computes a tile of `rows` output channels × `lanes` positions (a shape, below)
 * over `channels` input channels and `taps` taps. `a` is the weight of the tile's channels
 * packed channel after channel for each tap: a[(t · channels + c) · rows + r] (rows past the
 * tile's `rows` are zeros).
 * The accumulators start from the output (accumulate != 0), from bias[r] (bias != NULL), or
 * from zero; only the first `rows` rows and the lanes of out_mask are stored. */
#ifndef CTENSOR_CPU_CONV2D_DIRECT_H_
#define CTENSOR_CPU_CONV2D_DIRECT_H_

#include <stdint.h>

#include "conv/conv2d_operands.h"
#include "internal.h"

/* The widest tile (positions) and the most taps (kH · kW) the direct path takes. */
#define CT_CONV2D_DIRECT_MAX_LANES 64
#define CT_CONV2D_DIRECT_MAX_TAPS 25 /* at most 32: tap_inside is a bit per tap */

/* The lane mask of the first `lanes` lanes (at most CT_CONV2D_DIRECT_MAX_LANES). */
static inline uint64_t ct_conv2d_direct_first_lanes(int64_t lanes) {
  return lanes >= CT_CONV2D_DIRECT_MAX_LANES ? ~(uint64_t)0 : ((uint64_t)1 << lanes) - 1;
}

typedef struct ct_conv2d_direct_tile {
  const float* x;             /* the input at channel 0 and the tile's first position */
  int64_t x_channel_stride;   /* elements between input channels */
  int64_t channels;           /* input channels to reduce over */
  int32_t taps;               /* kernel taps per channel */
  const int64_t* tap_offset;  /* taps flat offsets, in elements, from the tile's position */
  const uint64_t* tap_mask;   /* taps lane masks (bit l: lane l reads the input) */
  uint32_t tap_inside;        /* bit t: all lanes of tap t, masked or not, lie in the channel's
                                 plane, so a plain load there is safe (and then masked) */
  const float* a;             /* packed weights: taps · channels · the shape's rows */
  float* out;                 /* the output at the first row's channel and first position */
  int64_t out_channel_stride; /* elements between output channels */
  int32_t rows;               /* output channels stored (at most the shape's rows) */
  uint64_t out_mask;          /* lanes stored */
  const float* bias;          /* the shape's rows starting values, or NULL */
  int accumulate;             /* start from the output (bias ignored) */
} ct_conv2d_direct_tile;

typedef void (*ct_conv2d_direct_fn)(const ct_conv2d_direct_tile* tile);

/* A micro-kernel and its tile. */
typedef struct ct_conv2d_direct_shape {
  int32_t rows, lanes;
  ct_conv2d_direct_fn run;
} ct_conv2d_direct_shape;

/* AVX-512: 12 × 32 (the GEMM micro-kernel's shape) and 8 × 48 (no rows wasted on channel counts
 * that are multiples of 8; fewer broadcasts per multiply-add). */
#define CT_CONV2D_DIRECT_AVX512_SHAPES 2
#ifdef CT_HAVE_GEMM_AVX512
CT_INTERNAL extern const ct_conv2d_direct_shape
    ct_conv2d_direct_avx512_shapes[CT_CONV2D_DIRECT_AVX512_SHAPES];
#endif
/* AVX2: 6 × 16 (the GEMM micro-kernel's shape) and 4 × 24 (no rows wasted on channel counts that
 * are multiples of 4; fewer broadcasts per multiply-add). */
#define CT_CONV2D_DIRECT_AVX2_SHAPES 2
#ifdef CT_HAVE_GEMM_AVX2
CT_INTERNAL extern const ct_conv2d_direct_shape
    ct_conv2d_direct_avx2_shapes[CT_CONV2D_DIRECT_AVX2_SHAPES];
#endif

/* A float32 convolution for the direct path (conv2d_direct.c): input (N, C, H, W) with unit
 * column stride and rows W apart, output (N, O, OH, W) likewise, stride 1. */
typedef struct ct_conv2d_direct_job {
  int64_t n, groups, cg, og; /* images, groups, input and output channels per group */
  int64_t h, w, oh;          /* input rows, row width (input and output), output rows */
  int64_t kh, kw, pad_h, pad_w, dil_h, dil_w;
  ct_conv2d_f32_operands f; /* the input's and output's H and W strides are W and 1 */
} ct_conv2d_direct_job;

/* The micro-kernel for this CPU (ct_cpu_isa()) whose tiles waste the fewest rows and positions
 * on `job`, or NULL where there is none or where every shape's last tile of positions would
 * waste more than 1/16 of the tiles' lanes (14 × 14 = 196 = 6 · 32 + 4: the implicit GEMM,
 * folding the images together, wastes less). */
CT_INTERNAL const ct_conv2d_direct_shape* ct_conv2d_direct_shape_for(
    const ct_conv2d_direct_job* job);

/* Workspace of the direct path: the weight and bias packed in tiles of the shape's rows. */
CT_INTERNAL uint64_t ct_conv2d_direct_workspace(const ct_conv2d_direct_job* job,
                                                const ct_conv2d_direct_shape* shape);

/* Runs the convolution with `shape` in `workspace` (ct_conv2d_direct_workspace bytes, 64-byte
 * aligned), on the CPU backend's threads. */
CT_INTERNAL void ct_conv2d_direct_run(const ct_conv2d_direct_job* job,
                                      const ct_conv2d_direct_shape* shape, void* workspace);

#endif /* CTENSOR_CPU_CONV2D_DIRECT_H_ */
