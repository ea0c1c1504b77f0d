/* conv2d_direct.h - the direct float32 convolution micro-kernel (AVX-512), for stride-1
 * convolutions whose output rows are as wide as the input rows (same padding: ResNet's 3 × 3).
 *
 * There, output position p (flattened over the output plane) reads, for kernel tap (i, j), the
 * input at flat position p + (i·dH - pH)·W + (j·dW - pW) of its channel: a tile of 32
 * consecutive output positions reads 32 consecutive input elements per tap, which the
 * micro-kernel loads straight from the input with masked loads (lanes in the padding, or past
 * the plane, are masked off: zeros, never read). No im2col panel is packed, which is what the
 * implicit GEMM spends up to 40 % of its time on when the output channels are few.
 *
 * One call computes a tile of up to 12 output channels × 32 positions over `channels` input
 * channels and `taps` taps. `a` is the weight of the 12 channels packed tap after tap:
 * a[(c · taps + t) · 12 + r] (rows past `rows` are zeros). The accumulators start from the
 * output (accumulate != 0), from bias[r] (bias != NULL), or from zero; only the first `rows`
 * rows and the lanes of out_mask are stored. */
#ifndef CTENSOR_CPU_CONV2D_DIRECT_H_
#define CTENSOR_CPU_CONV2D_DIRECT_H_

#include <stdint.h>

#include "internal.h"

/* Output channels and positions of one tile. */
#define CT_CONV2D_DIRECT_ROWS 12
#define CT_CONV2D_DIRECT_LANES 32

typedef struct ct_conv2d_direct_tile {
  const float* x;             /* the input at channel 0 and the tile's first position */
  int64_t x_channel_stride;   /* elements between input channels */
  int64_t channels;           /* input channels to reduce over */
  int32_t taps;               /* kernel taps per channel */
  const int64_t* tap_offset;  /* taps flat offsets, in elements, from the tile's position */
  const uint32_t* tap_mask;   /* taps lane masks (bit l: lane l reads the input) */
  const float* a;             /* packed weights: channels · taps · 12 */
  float* out;                 /* the output at the first row's channel and first position */
  int64_t out_channel_stride; /* elements between output channels */
  int32_t rows;               /* output channels stored (<= 12) */
  uint32_t out_mask;          /* lanes stored */
  const float* bias;          /* 12 starting values, or NULL */
  int accumulate;             /* start from the output (bias ignored) */
} ct_conv2d_direct_tile;

typedef void (*ct_conv2d_direct_fn)(const ct_conv2d_direct_tile* tile);

#ifdef CT_HAVE_GEMM_AVX512
CT_INTERNAL void ct_conv2d_direct_avx512_f32(const ct_conv2d_direct_tile* tile);
#endif

/* Taps (kH · kW) the direct path takes at most. */
#define CT_CONV2D_DIRECT_MAX_TAPS 25

/* A float32 convolution for the direct path (conv2d_direct.c): input (N, C, H, W) with unit
 * column stride and rows W apart, output (N, O, OH, W) likewise, stride 1. */
typedef struct ct_conv2d_direct_job {
  int64_t n, groups, cg, og; /* images, groups, input and output channels per group */
  int64_t h, w, oh;          /* input rows, row width (input and output), output rows */
  int64_t kh, kw, pad_h, pad_w, dil_h, dil_w;
  const float* x;
  int64_t x_image_stride, x_channel_stride;
  const float* weight; /* (O, C / groups, kH, kW) */
  int64_t weight_stride[4];
  const float* bias; /* (O,) or NULL */
  int64_t bias_stride;
  float* out;
  int64_t out_image_stride, out_channel_stride;
} ct_conv2d_direct_job;

/* The micro-kernel for this CPU (ct_cpu_isa()), or NULL where there is none. */
CT_INTERNAL ct_conv2d_direct_fn ct_conv2d_direct_kernel(void);

/* Workspace of the direct path: the weight and bias packed in tiles of 12 output channels. */
CT_INTERNAL uint64_t ct_conv2d_direct_workspace(const ct_conv2d_direct_job* job);

/* Runs the convolution with `kernel` in `workspace` (ct_conv2d_direct_workspace bytes, 64-byte
 * aligned), on the CPU backend's threads. */
CT_INTERNAL void ct_conv2d_direct_run(const ct_conv2d_direct_job* job, ct_conv2d_direct_fn kernel,
                                      void* workspace);

#endif /* CTENSOR_CPU_CONV2D_DIRECT_H_ */
