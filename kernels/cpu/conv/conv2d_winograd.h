/* conv2d_winograd.h - float32 3 × 3 convolutions (stride 1, dilation 1, one group) by Winograd's
 * minimal filtering F(2 × 2, 3 × 3), for wide channel counts, where it does 2.25 times fewer
 * multiply-adds than the direct convolution (as cuDNN's and oneDNN's Winograd algorithms do).
 *
 * Each 2 × 2 block of output positions (a "tile") is computed from the 4 × 4 input patch under
 * it: V = Bᵀ d B per input channel, U = G g Gᵀ per (output, input) channel pair, then for each
 * of the 16 positions ξ of the 4 × 4 transformed tile an ordinary product over the input
 * channels, M[ξ] = V[ξ] · U[ξ] (tiles × C times C × K: the packed GEMM of gemm.h, batched over
 * ξ), and finally Y = Aᵀ M A (+ bias) per tile and output channel. The transforms only add,
 * subtract and halve (G's 1/2), so the results stay within a few units in the last place of the
 * direct sum's rounding error. Tiles run in chunks, so that the transformed input and the
 * products stay bounded (CT_WINOGRAD_CHUNK_BYTES) whatever the image size.
 *
 * Workspace: U (16 · C · K floats, K rounded up to the GEMM's micro-panel width), then V (16 ·
 * tiles of a chunk · C, the tiles rounded up likewise; U and V both written as the GEMM reads them
 * so that they are never packed again), M (16 · tiles of a chunk · K) and the GEMM's buffers: once,
 * for chunks the threads share, or once per thread for the small chunks of 64 and 128 channels,
 * which each thread runs whole while they stay in its cache. Calls whose values are not all finite
 * are left to the direct methods (ct_conv2d_winograd_run). */
#ifndef CTENSOR_CPU_CONV2D_WINOGRAD_H_
#define CTENSOR_CPU_CONV2D_WINOGRAD_H_

#include <stdbool.h>
#include <stdint.h>

#include "conv/conv2d_operands.h"
#include "internal.h"

/* One convolution: input (N, C, H, W), weight (K, C, 3, 3), output (N, K, OH, OW) with
 * OH = H + 2 · pad_h - 2 and OW = W + 2 · pad_w - 2; element strides of every operand. */
typedef struct ct_conv2d_winograd_job {
  int64_t n, c, k, h, w, oh, ow, pad_h, pad_w;
  ct_conv2d_f32_operands f;
} ct_conv2d_winograd_job;

/* Whether the Winograd path should run this convolution (it is correct for any, but pays only
 * with enough channels and positions). */
CT_INTERNAL bool ct_conv2d_winograd_pays(const ct_conv2d_winograd_job* job);

/* Workspace bytes for ct_conv2d_winograd_run (64-byte aligned), for the thread count now set. */
CT_INTERNAL uint64_t ct_conv2d_winograd_workspace(const ct_conv2d_winograd_job* job);

/* Runs the convolution in `workspace` (ct_conv2d_winograd_workspace bytes, 64-byte aligned).
 * Returns false, with the output partly written, where an input, weight, transformed value or
 * result is not finite: the transforms mix neighbouring positions (an infinity minus another
 * makes NaN where the direct sum keeps the infinity), so such calls must be computed again by a
 * direct method, which gives IEEE's answer position by position. Also returns false, with nothing
 * written, when the workspace is smaller than ct_conv2d_winograd_workspace asked for. */
CT_INTERNAL bool ct_conv2d_winograd_run(const ct_conv2d_winograd_job* job, void* workspace,
                                        uint64_t workspace_size);

#endif /* CTENSOR_CPU_CONV2D_WINOGRAD_H_ */
