/* conv2d_direct.c - the direct float32 convolution's driver (micro-kernels and conditions in
 * conv2d_direct.h): picks a tile shape, packs the weight in tiles of its rows, then shares out
 * work items of (image, group, a few position tiles) to the threads. An item computes its
 * positions for every output channel, in blocks of input channels: the input it reads (a block
 * of channels around its positions) stays in L2 while the weight tiles of the block pass over
 * it, and each weight tile stays in L1 over the item's position tiles. */
#include "conv/conv2d_direct.h"

#include "engine/cpu_isa.h"
#include "engine/cpu_threads.h"

#ifdef _OPENMP
#include <omp.h>
#endif

/* Position tiles per work item, and input channels per block. */
#define CT_CONV2D_DIRECT_ITEM_TILES 4
#define CT_CONV2D_DIRECT_CHANNEL_BLOCK 32

static int64_t ct_conv2d_direct_round_up(int64_t a, int64_t b) {
  return (a + b - 1) / b * b;
}

const ct_conv2d_direct_shape* ct_conv2d_direct_shape_for(const ct_conv2d_direct_job* job) {
  const ct_conv2d_direct_shape* shapes = NULL;
  int count = 0;
#ifdef CT_HAVE_GEMM_AVX512
  if (ct_cpu_isa() == CT_CPU_ISA_AVX512) {
    shapes = ct_conv2d_direct_avx512_shapes;
    count = CT_CONV2D_DIRECT_AVX512_SHAPES;
  }
#endif
#ifdef CT_HAVE_GEMM_AVX2
  if (ct_cpu_isa() == CT_CPU_ISA_AVX2) {
    shapes = ct_conv2d_direct_avx2_shapes;
    count = CT_CONV2D_DIRECT_AVX2_SHAPES;
  }
#endif
  const int64_t positions = job->oh * job->w;
  const ct_conv2d_direct_shape* best = NULL;
  double best_used = 0.0;
  for (int i = 0; i < count; ++i) {
    const int64_t lanes = ct_conv2d_direct_round_up(positions, shapes[i].lanes);
    if ((lanes - positions) * 16 > lanes) continue;
    const double used = (double)positions / (double)lanes * (double)job->og /
                        (double)ct_conv2d_direct_round_up(job->og, shapes[i].rows);
    if (used > best_used) {
      best = &shapes[i];
      best_used = used;
    }
  }
  return best;
}

/* Input channels in the block starting at channel c0: the packed weight and the work items cut
 * the channels into the same blocks. */
static int64_t ct_conv2d_direct_block_channels(const ct_conv2d_direct_job* job, int64_t c0) {
  return job->cg - c0 < CT_CONV2D_DIRECT_CHANNEL_BLOCK ? job->cg - c0
                                                       : CT_CONV2D_DIRECT_CHANNEL_BLOCK;
}

static int64_t ct_conv2d_direct_row_tiles(const ct_conv2d_direct_job* job,
                                          const ct_conv2d_direct_shape* shape) {
  return (job->og + shape->rows - 1) / shape->rows;
}

/* Floats of one packed weight tile. */
static int64_t ct_conv2d_direct_tile_floats(const ct_conv2d_direct_job* job,
                                            const ct_conv2d_direct_shape* shape) {
  return ct_size_mul(job->cg * job->kh * job->kw, shape->rows);
}

uint64_t ct_conv2d_direct_workspace(const ct_conv2d_direct_job* job,
                                    const ct_conv2d_direct_shape* shape) {
  /* Saturating (CT_SIZE_TOO_LARGE): the packed weight of a broadcast weight of huge extent
   * may pass int64 bytes once rounded up to whole tiles. */
  const int64_t tiles = job->groups * ct_conv2d_direct_row_tiles(job, shape);
  const int64_t floats =
      ct_size_mul(tiles, ct_size_add(ct_conv2d_direct_tile_floats(job, shape), shape->rows));
  return (uint64_t)ct_size_round_up(ct_size_mul(floats, (int64_t)sizeof(float)), 64);
}

/* Weight tile `tile` (over groups × row tiles), in blocks of CT_CONV2D_DIRECT_CHANNEL_BLOCK input
 * channels: block[(t · channels + c) · rows + r] for the block's channels, zero rows past the
 * group's channels; its bias values (zeros without a bias) go to bias_packed. */
static void ct_conv2d_direct_pack(const ct_conv2d_direct_job* job,
                                  const ct_conv2d_direct_shape* shape, int64_t tile, float* packed,
                                  float* bias_packed) {
  const int64_t rows = shape->rows, row_tiles = ct_conv2d_direct_row_tiles(job, shape);
  const int64_t group = tile / row_tiles, first = (tile % row_tiles) * rows;
  const int64_t* ws = job->f.ws;
  float* dst = packed + tile * ct_conv2d_direct_tile_floats(job, shape);
  for (int64_t c0 = 0; c0 < job->cg; c0 += CT_CONV2D_DIRECT_CHANNEL_BLOCK) {
    const int64_t channels = ct_conv2d_direct_block_channels(job, c0);
    for (int64_t i = 0; i < job->kh; ++i) {
      for (int64_t j = 0; j < job->kw; ++j) {
        for (int64_t c = c0; c < c0 + channels; ++c) {
          const float* tap = job->f.weight + c * ws[1] + i * ws[2] + j * ws[3];
          for (int64_t r = 0; r < rows; ++r) {
            const int64_t o = first + r;
            *dst++ = o < job->og ? tap[(group * job->og + o) * ws[0]] : 0.0f;
          }
        }
      }
    }
  }
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t o = first + r;
    bias_packed[tile * rows + r] =
        job->f.bias && o < job->og ? job->f.bias[(group * job->og + o) * job->f.bs] : 0.0f;
  }
}

/* Lanes of the tile at flat output position p0 that read the input for tap (i, j): inside the
 * output plane, and not in the padding. */
static uint64_t ct_conv2d_direct_mask(const ct_conv2d_direct_job* job, int64_t lanes, int64_t p0,
                                      int64_t i, int64_t j) {
  const int64_t positions = job->oh * job->w;
  const int64_t dy = i * job->dil_h - job->pad_h, dx = j * job->dil_w - job->pad_w;
  uint64_t mask = 0;
  int64_t row = p0 / job->w, col = p0 % job->w;
  for (int64_t l = 0; l < lanes && p0 + l < positions; ++l) {
    const int64_t ih = row + dy, iw = col + dx;
    if (ih >= 0 && ih < job->h && iw >= 0 && iw < job->w) mask |= (uint64_t)1 << l;
    if (++col == job->w) {
      col = 0;
      ++row;
    }
  }
  return mask;
}

/* Work item `item`: image, group and its position tiles [t0, t0 + ITEM_TILES). */
static void ct_conv2d_direct_item(const ct_conv2d_direct_job* job,
                                  const ct_conv2d_direct_shape* shape, const float* packed,
                                  const float* bias_packed, const int64_t* tap_offset,
                                  int64_t item) {
  const int64_t lanes = shape->lanes, rows = shape->rows;
  const int64_t positions = job->oh * job->w;
  const int64_t tiles = (positions + lanes - 1) / lanes;
  const int64_t chunks = (tiles + CT_CONV2D_DIRECT_ITEM_TILES - 1) / CT_CONV2D_DIRECT_ITEM_TILES;
  const int64_t chunk = item % chunks, group = item / chunks % job->groups;
  const int64_t image = item / chunks / job->groups;
  const int64_t t0 = chunk * CT_CONV2D_DIRECT_ITEM_TILES;
  const int64_t count =
      tiles - t0 < CT_CONV2D_DIRECT_ITEM_TILES ? tiles - t0 : CT_CONV2D_DIRECT_ITEM_TILES;
  const int32_t taps = (int32_t)(job->kh * job->kw);
  uint64_t masks[CT_CONV2D_DIRECT_ITEM_TILES][CT_CONV2D_DIRECT_MAX_TAPS];
  uint64_t out_masks[CT_CONV2D_DIRECT_ITEM_TILES];
  uint32_t inside[CT_CONV2D_DIRECT_ITEM_TILES];
  for (int64_t u = 0; u < count; ++u) {
    const int64_t p0 = (t0 + u) * lanes;
    const int64_t used = positions - p0 < lanes ? positions - p0 : lanes;
    out_masks[u] = ct_conv2d_direct_first_lanes(used);
    inside[u] = 0;
    for (int32_t t = 0; t < taps; ++t) {
      masks[u][t] = ct_conv2d_direct_mask(job, lanes, p0, t / job->kw, t % job->kw);
      const int64_t start = p0 + tap_offset[t]; /* the tap's first lane, in the channel's plane */
      if (start >= 0 && start + lanes <= job->h * job->w) inside[u] |= (uint32_t)1 << t;
    }
  }
  const int64_t row_tiles = ct_conv2d_direct_row_tiles(job, shape);
  const int64_t tile_floats = ct_conv2d_direct_tile_floats(job, shape);
  const float* x = job->f.x + image * job->f.xs[0] + group * job->cg * job->f.xs[1];
  float* out = job->f.out + image * job->f.os[0] + group * job->og * job->f.os[1];
  for (int64_t c0 = 0; c0 < job->cg; c0 += CT_CONV2D_DIRECT_CHANNEL_BLOCK) {
    const int64_t channels = ct_conv2d_direct_block_channels(job, c0);
    for (int64_t rt = 0; rt < row_tiles; ++rt) {
      const int64_t tile = group * row_tiles + rt;
      const int64_t first = rt * rows;
      for (int64_t u = 0; u < count; ++u) {
        const int64_t p0 = (t0 + u) * lanes;
        const ct_conv2d_direct_tile call = {
            .x = x + c0 * job->f.xs[1] + p0,
            .x_channel_stride = job->f.xs[1],
            .channels = channels,
            .taps = taps,
            .tap_offset = tap_offset,
            .tap_mask = masks[u],
            .tap_inside = inside[u],
            .a = packed + tile * tile_floats + c0 * taps * rows,
            .out = out + first * job->f.os[1] + p0,
            .out_channel_stride = job->f.os[1],
            .rows = (int32_t)(job->og - first < rows ? job->og - first : rows),
            .out_mask = out_masks[u],
            .bias = bias_packed + tile * rows,
            .accumulate = c0 > 0,
        };
        shape->run(&call);
      }
    }
  }
}

void ct_conv2d_direct_run(const ct_conv2d_direct_job* job, const ct_conv2d_direct_shape* shape,
                          void* workspace) {
  const int64_t weight_tiles = job->groups * ct_conv2d_direct_row_tiles(job, shape);
  float* packed = workspace;
  float* bias_packed = packed + weight_tiles * ct_conv2d_direct_tile_floats(job, shape);
  int64_t tap_offset[CT_CONV2D_DIRECT_MAX_TAPS];
  for (int64_t i = 0; i < job->kh; ++i) {
    for (int64_t j = 0; j < job->kw; ++j) {
      tap_offset[i * job->kw + j] =
          (i * job->dil_h - job->pad_h) * job->w + (j * job->dil_w - job->pad_w);
    }
  }
  const int64_t positions = job->oh * job->w;
  const int64_t tiles = (positions + shape->lanes - 1) / shape->lanes;
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
      ct_conv2d_direct_pack(job, shape, t, packed, bias_packed);
    }
#pragma omp for schedule(dynamic, 1)
    for (int64_t item = 0; item < items; ++item) {
      ct_conv2d_direct_item(job, shape, packed, bias_packed, tap_offset, item);
    }
  }
}
