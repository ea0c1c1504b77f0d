/* conv2d_direct.c - the direct float32 convolution's driver (micro-kernel and conditions in
 * conv2d_direct.h): packs the weight in tiles of 12 output channels, then shares out work items
 * of (image, group, a few tiles of 32 positions) to the threads. An item computes its positions
 * for every output channel, in blocks of input channels: the input it reads (a block of channels
 * around its positions) stays in L2 while the weight tiles of the block pass over it, and each
 * weight tile stays in L1 over the item's position tiles. */
#include "conv2d_direct.h"

#include "cpu_isa.h"
#include "cpu_threads.h"

#ifdef _OPENMP
#include <omp.h>
#endif

/* Position tiles per work item, and input channels per block. */
#define CT_CONV2D_DIRECT_ITEM_TILES 4
#define CT_CONV2D_DIRECT_CHANNEL_BLOCK 32

ct_conv2d_direct_fn ct_conv2d_direct_kernel(void) {
#ifdef CT_HAVE_GEMM_AVX512
  if (ct_cpu_isa() == CT_CPU_ISA_AVX512) return ct_conv2d_direct_avx512_f32;
#endif
  return NULL;
}

static int64_t ct_conv2d_direct_row_tiles(const ct_conv2d_direct_job* job) {
  return (job->og + CT_CONV2D_DIRECT_ROWS - 1) / CT_CONV2D_DIRECT_ROWS;
}

/* Floats of one group's packed weight, and of one tile of it. */
static int64_t ct_conv2d_direct_tile_floats(const ct_conv2d_direct_job* job) {
  return job->cg * job->kh * job->kw * CT_CONV2D_DIRECT_ROWS;
}

uint64_t ct_conv2d_direct_workspace(const ct_conv2d_direct_job* job) {
  const int64_t tiles = job->groups * ct_conv2d_direct_row_tiles(job);
  const int64_t floats = tiles * (ct_conv2d_direct_tile_floats(job) + CT_CONV2D_DIRECT_ROWS);
  return (uint64_t)(floats * (int64_t)sizeof(float) + 63) / 64 * 64;
}

/* Weight tile `tile` (over groups × row tiles): packed[(c · taps + t) · 12 + r], zero rows past
 * the group's channels; its 12 bias values (zeros without a bias) go to bias_packed. */
static void ct_conv2d_direct_pack(const ct_conv2d_direct_job* job, int64_t tile, float* packed,
                                  float* bias_packed) {
  const int64_t row_tiles = ct_conv2d_direct_row_tiles(job);
  const int64_t group = tile / row_tiles, first = (tile % row_tiles) * CT_CONV2D_DIRECT_ROWS;
  const int64_t* ws = job->weight_stride;
  float* dst = packed + tile * ct_conv2d_direct_tile_floats(job);
  for (int64_t c = 0; c < job->cg; ++c) {
    for (int64_t i = 0; i < job->kh; ++i) {
      for (int64_t j = 0; j < job->kw; ++j) {
        for (int64_t r = 0; r < CT_CONV2D_DIRECT_ROWS; ++r) {
          const int64_t o = first + r;
          *dst++ =
              o < job->og
                  ? job->weight[(group * job->og + o) * ws[0] + c * ws[1] + i * ws[2] + j * ws[3]]
                  : 0.0f;
        }
      }
    }
  }
  for (int64_t r = 0; r < CT_CONV2D_DIRECT_ROWS; ++r) {
    const int64_t o = first + r;
    bias_packed[tile * CT_CONV2D_DIRECT_ROWS + r] =
        job->bias && o < job->og ? job->bias[(group * job->og + o) * job->bias_stride] : 0.0f;
  }
}

/* Lanes of the tile at flat output position p0 that read the input for tap (i, j): inside the
 * output plane, and not in the padding. */
static uint32_t ct_conv2d_direct_mask(const ct_conv2d_direct_job* job, int64_t p0, int64_t i,
                                      int64_t j) {
  const int64_t positions = job->oh * job->w;
  const int64_t dy = i * job->dil_h - job->pad_h, dx = j * job->dil_w - job->pad_w;
  uint32_t mask = 0;
  int64_t row = p0 / job->w, col = p0 % job->w;
  for (int64_t l = 0; l < CT_CONV2D_DIRECT_LANES && p0 + l < positions; ++l) {
    const int64_t ih = row + dy, iw = col + dx;
    if (ih >= 0 && ih < job->h && iw >= 0 && iw < job->w) mask |= (uint32_t)1 << l;
    if (++col == job->w) {
      col = 0;
      ++row;
    }
  }
  return mask;
}

/* Work item `item`: image, group and its position tiles [t0, t0 + ITEM_TILES). */
static void ct_conv2d_direct_item(const ct_conv2d_direct_job* job, ct_conv2d_direct_fn kernel,
                                  const float* packed, const float* bias_packed,
                                  const int64_t* tap_offset, int64_t item) {
  const int64_t positions = job->oh * job->w;
  const int64_t tiles = (positions + CT_CONV2D_DIRECT_LANES - 1) / CT_CONV2D_DIRECT_LANES;
  const int64_t chunks = (tiles + CT_CONV2D_DIRECT_ITEM_TILES - 1) / CT_CONV2D_DIRECT_ITEM_TILES;
  const int64_t chunk = item % chunks, group = item / chunks % job->groups;
  const int64_t image = item / chunks / job->groups;
  const int64_t t0 = chunk * CT_CONV2D_DIRECT_ITEM_TILES;
  const int64_t count =
      tiles - t0 < CT_CONV2D_DIRECT_ITEM_TILES ? tiles - t0 : CT_CONV2D_DIRECT_ITEM_TILES;
  const int32_t taps = (int32_t)(job->kh * job->kw);
  uint32_t masks[CT_CONV2D_DIRECT_ITEM_TILES][CT_CONV2D_DIRECT_MAX_TAPS];
  uint32_t out_masks[CT_CONV2D_DIRECT_ITEM_TILES];
  for (int64_t u = 0; u < count; ++u) {
    const int64_t p0 = (t0 + u) * CT_CONV2D_DIRECT_LANES;
    const int64_t lanes =
        positions - p0 < CT_CONV2D_DIRECT_LANES ? positions - p0 : CT_CONV2D_DIRECT_LANES;
    out_masks[u] = lanes == 32 ? 0xffffffffu : ((uint32_t)1 << lanes) - 1;
    for (int32_t t = 0; t < taps; ++t) {
      masks[u][t] = ct_conv2d_direct_mask(job, p0, t / job->kw, t % job->kw);
    }
  }
  const int64_t row_tiles = ct_conv2d_direct_row_tiles(job);
  const int64_t tile_floats = ct_conv2d_direct_tile_floats(job);
  const float* x = job->x + image * job->x_image_stride + group * job->cg * job->x_channel_stride;
  float* out = job->out + image * job->out_image_stride + group * job->og * job->out_channel_stride;
  for (int64_t c0 = 0; c0 < job->cg; c0 += CT_CONV2D_DIRECT_CHANNEL_BLOCK) {
    const int64_t channels = job->cg - c0 < CT_CONV2D_DIRECT_CHANNEL_BLOCK
                                 ? job->cg - c0
                                 : CT_CONV2D_DIRECT_CHANNEL_BLOCK;
    for (int64_t rt = 0; rt < row_tiles; ++rt) {
      const int64_t tile = group * row_tiles + rt;
      const int64_t first = rt * CT_CONV2D_DIRECT_ROWS;
      for (int64_t u = 0; u < count; ++u) {
        const int64_t p0 = (t0 + u) * CT_CONV2D_DIRECT_LANES;
        const ct_conv2d_direct_tile call = {
            .x = x + c0 * job->x_channel_stride + p0,
            .x_channel_stride = job->x_channel_stride,
            .channels = channels,
            .taps = taps,
            .tap_offset = tap_offset,
            .tap_mask = masks[u],
            .a = packed + tile * tile_floats + c0 * taps * CT_CONV2D_DIRECT_ROWS,
            .out = out + first * job->out_channel_stride + p0,
            .out_channel_stride = job->out_channel_stride,
            .rows = (int32_t)(job->og - first < CT_CONV2D_DIRECT_ROWS ? job->og - first
                                                                      : CT_CONV2D_DIRECT_ROWS),
            .out_mask = out_masks[u],
            .bias = bias_packed + tile * CT_CONV2D_DIRECT_ROWS,
            .accumulate = c0 > 0,
        };
        kernel(&call);
      }
    }
  }
}

void ct_conv2d_direct_run(const ct_conv2d_direct_job* job, ct_conv2d_direct_fn kernel,
                          void* workspace) {
  const int64_t weight_tiles = job->groups * ct_conv2d_direct_row_tiles(job);
  float* packed = workspace;
  float* bias_packed = packed + weight_tiles * ct_conv2d_direct_tile_floats(job);
  int64_t tap_offset[CT_CONV2D_DIRECT_MAX_TAPS];
  for (int64_t i = 0; i < job->kh; ++i) {
    for (int64_t j = 0; j < job->kw; ++j) {
      tap_offset[i * job->kw + j] =
          (i * job->dil_h - job->pad_h) * job->w + (j * job->dil_w - job->pad_w);
    }
  }
  const int64_t positions = job->oh * job->w;
  const int64_t tiles = (positions + CT_CONV2D_DIRECT_LANES - 1) / CT_CONV2D_DIRECT_LANES;
  const int64_t chunks = (tiles + CT_CONV2D_DIRECT_ITEM_TILES - 1) / CT_CONV2D_DIRECT_ITEM_TILES;
  const int64_t items = job->n * job->groups * chunks;
  const double fmas = (double)job->n * (double)job->groups * (double)job->og * (double)job->cg *
                      (double)(job->kh * job->kw) * (double)positions;
  int threads = fmas >= (double)(1 << 20) ? ct_cpu_num_threads() : 1;
  if (threads > items) threads = (int)items;
  (void)threads;
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
#pragma omp for schedule(static)
    for (int64_t t = 0; t < weight_tiles; ++t) {
      ct_conv2d_direct_pack(job, t, packed, bias_packed);
    }
#pragma omp for schedule(dynamic, 1)
    for (int64_t item = 0; item < items; ++item) {
      ct_conv2d_direct_item(job, kernel, packed, bias_packed, tap_offset, item);
    }
  }
}
