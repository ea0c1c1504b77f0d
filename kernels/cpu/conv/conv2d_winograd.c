/* conv2d_winograd.c - F(2 × 2, 3 × 3) Winograd convolution (see conv2d_winograd.h).
 *
 * The matrices (Lavin and Gray, "Fast Algorithms for Convolutional Neural Networks", 2016):
 *   Bᵀ = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]
 *   G  = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1]
 *   Aᵀ = [1 1 1 0; 0 1 -1 -1]
 * Layouts, per chunk of T tiles (tile t: image t / (TH · TW), tile row, tile column):
 *   U[ξ][c][k], V[ξ][t][c], M[ξ][t][k] = Σ_c V[ξ][t][c] · U[ξ][c][k]   (ξ = 4 · i + j)
 * so that the 16 products are tiles × C times C × K, batched over ξ: K, a multiple of the
 * micro-kernel's 32 columns in the shapes that pay, wastes no columns. M is row-major; U and V
 * are written in the GEMM's packed layouts of B and A (depth blocks of micro-panels of output
 * channels, of tiles: ct_winograd_u_layout, ct_winograd_v_layout), which the GEMM then reads in
 * place, instead of packing them again.
 * The transforms loop over channels innermost (contiguous in U and M; V's channels are a
 * micro-panel's rows apart, written a panel at a time), compiled per instruction set. */
#include "conv/conv2d_winograd.h"

#include <string.h>

#include "engine/cpu_isa.h"
#include "engine/cpu_threads.h"
#include "gemm/gemm.h"
#include "engine/int_div.h"
#include "engine/stream_store.h"
#include "engine/strided_iter.h"

#define CT_WINOGRAD_MAX_CHANNELS ((int64_t)1 << 24)
#define CT_WINOGRAD_ALIGN 64
/* Bytes of V and M together per chunk of tiles (the products' operands stay in L3). */
#define CT_WINOGRAD_CHUNK_BYTES ((int64_t)24 << 20)
/* Fewest tiles a chunk has (when there are that many). */
#define CT_WINOGRAD_MIN_CHUNK 96
/* Fused mode (ct_winograd_fused_chunks), where U is at most CT_WINOGRAD_FUSED_U_BYTES (64 and 128
 * channels): chunks of about CT_WINOGRAD_FUSED_CHUNK_BYTES of V and M, and at least
 * CT_WINOGRAD_FUSED_MIN_TILES tiles (a product's rows), where the batch has
 * CT_WINOGRAD_FUSED_MIN_CHUNKS of them. The choice depends on shapes alone, not on the thread
 * count, so the workspace asked for always fits the plan made when running. Fusing pays while U
 * stays small: a larger U, read again for every chunk, no longer fits in cache. */
#define CT_WINOGRAD_FUSED_U_BYTES ((int64_t)1 << 20)
#define CT_WINOGRAD_FUSED_CHUNK_BYTES ((int64_t)640 << 10)
#define CT_WINOGRAD_FUSED_MIN_CHUNKS 8
#define CT_WINOGRAD_FUSED_MIN_TILES 64
/* The Winograd path pays from this many input and output channels and tiles per image on
 * (tests/test_ops_matmul_conv.py's Winograd cases sit at these bounds: raising them would send
 * those cases to the direct paths). With AVX-512 it beats the direct kernel from 64 channels;
 * with AVX2 the direct kernel still wins at 64. */
#define CT_WINOGRAD_MIN_CHANNELS 128
#define CT_WINOGRAD_MIN_CHANNELS_AVX512 64
#define CT_WINOGRAD_MIN_TILES 9
/* The most tiles of a micro-panel of V that the input transform handles (the GEMM's mr is 12, 6
 * or 4 in the kernel sets). */
#define CT_WINOGRAD_X_TILES 16

/* Where U[ξ][c][k] lies: the weight transform writes U as the GEMM's prepacked B
 * (ct_gemm_prepacked_b_layout_f32): per ξ, depth blocks of kc input channels, each holding the
 * output channels as micro-panels of nr, padded with zeros to `cols`. */
typedef struct ct_winograd_u_layout {
  int64_t kc, nr, cols;
} ct_winograd_u_layout;

/* Where V[ξ][t][c] lies: the input transform writes V as the GEMM's prepacked A
 * (ct_gemm_prepacked_a_layout_f32): per ξ (`plane` floats apart), depth blocks of kc input
 * channels, each holding the chunk's tiles as micro-panels of mr, padded with zero rows to the
 * chunk's tile count rounded up to mr. */
typedef struct ct_winograd_v_layout {
  int64_t kc, mr, plane;
} ct_winograd_v_layout;

/* Tiles per image (th rows of tw), all tiles, and the chunk (tiles per product). */
typedef struct ct_winograd_schedule {
  int64_t th, tw, tiles, chunk;
  bool fused; /* each thread runs whole chunks (ct_winograd_fused_chunks) */
  ct_winograd_u_layout u;
  ct_winograd_v_layout v;
  int64_t u_bytes, v_bytes, m_bytes;
} ct_winograd_schedule;

static void ct_winograd_make_schedule(const ct_conv2d_winograd_job* job,
                                      ct_winograd_schedule* plan) {
  plan->th = ct_div_up(job->oh, 2);
  plan->tw = ct_div_up(job->ow, 2);
  plan->tiles = job->n * plan->th * plan->tw;
  const int64_t per_tile = 16 * (job->c + job->k) * (int64_t)sizeof(float);
  const int64_t u_size = 16 * job->c * job->k * (int64_t)sizeof(float);
  int64_t fused_tiles = CT_WINOGRAD_FUSED_CHUNK_BYTES / per_tile;
  if (fused_tiles < CT_WINOGRAD_FUSED_MIN_TILES) fused_tiles = CT_WINOGRAD_FUSED_MIN_TILES;
  plan->fused =
      u_size <= CT_WINOGRAD_FUSED_U_BYTES &&
      job->n * plan->th >= CT_WINOGRAD_FUSED_MIN_CHUNKS * ct_div_up(fused_tiles, plan->tw);
  int64_t chunk = plan->fused ? fused_tiles : CT_WINOGRAD_CHUNK_BYTES / per_tile;
  if (!plan->fused && chunk < CT_WINOGRAD_MIN_CHUNK) chunk = CT_WINOGRAD_MIN_CHUNK;
  /* whole tile rows, in near-equal chunks */
  const int64_t tile_rows = job->n * plan->th;
  int64_t rows = ct_div_up(chunk, plan->tw);
  if (rows > tile_rows) rows = tile_rows;
  if (rows < 1) rows = 1;
  const int64_t chunks = ct_div_up(tile_rows, rows);
  plan->chunk = ct_div_up(tile_rows, chunks) * plan->tw;
  const int64_t f = (int64_t)sizeof(float);
  ct_gemm_prepacked_b_layout_f32(job->c, &plan->u.kc, &plan->u.nr);
  plan->u.cols = ct_round_up(job->k, plan->u.nr);
  plan->u_bytes = ct_round_up(16 * plan->u.cols * job->c * f, CT_WINOGRAD_ALIGN);
  ct_gemm_prepacked_a_layout_f32(job->c, &plan->v.kc, &plan->v.mr);
  plan->v.plane = ct_round_up(plan->chunk, plan->v.mr) * job->c;
  plan->v_bytes = ct_round_up(16 * plan->v.plane * f, CT_WINOGRAD_ALIGN);
  plan->m_bytes = ct_round_up(16 * plan->chunk * job->k * f, CT_WINOGRAD_ALIGN);
}

/* The 16 batched products M[ξ] = V[ξ] · U[ξ] of a chunk of `tiles` tiles. */
static void ct_winograd_gemm_desc(const ct_conv2d_winograd_job* job,
                                  const ct_winograd_schedule* plan, int64_t tiles, const float* u,
                                  const float* v, float* m, int64_t* batch, ct_gemm_desc* d) {
  batch[0] = 16;
  batch[1] = plan->v.plane;         /* V */
  batch[2] = job->c * plan->u.cols; /* U */
  batch[3] = plan->chunk * job->k;  /* M */
  *d = (ct_gemm_desc){
      .m = tiles,
      .n = job->k,
      .k = job->c,
      .a = v,
      .a_prepacked = true,
      .b = u,
      .b_prepacked = true,
      .c = m,
      .c_rs = job->k,
      .c_cs = 1,
      .batch_ndim = 1,
      .batch_shape = &batch[0],
      .a_bs = &batch[1],
      .b_bs = &batch[2],
      .c_bs = &batch[3],
  };
}

bool ct_conv2d_winograd_pays(const ct_conv2d_winograd_job* job) {
  const int64_t channels = ct_cpu_isa() >= CT_CPU_ISA_AVX512 ? CT_WINOGRAD_MIN_CHANNELS_AVX512
                                                             : CT_WINOGRAD_MIN_CHANNELS;
  int64_t kc, mr; /* the input transform writes micro-panels of at most 16 tiles */
  ct_gemm_prepacked_a_layout_f32(job->c, &kc, &mr);
  /* Channel counts up to CT_WINOGRAD_MAX_CHANNELS keep the schedule's byte counts (16 · C · K
   * floats and the like) far inside int64; beyond (broadcast operands), the implicit GEMM. */
  return mr <= CT_WINOGRAD_X_TILES && job->c >= channels && job->k >= channels &&
         job->c <= CT_WINOGRAD_MAX_CHANNELS && job->k <= CT_WINOGRAD_MAX_CHANNELS &&
         ct_div_up(job->oh, 2) * ct_div_up(job->ow, 2) >= CT_WINOGRAD_MIN_TILES;
}

/* Bytes of V, M and the GEMM's buffers for one chunk (in fused mode: one thread's), a multiple of
 * CT_WINOGRAD_ALIGN. */
static uint64_t ct_winograd_slot_bytes(const ct_conv2d_winograd_job* job,
                                       const ct_winograd_schedule* plan) {
  int64_t batch[4];
  ct_gemm_desc d;
  ct_winograd_gemm_desc(job, plan, plan->chunk, NULL, NULL, NULL, batch, &d);
  const int64_t gemm = (int64_t)ct_gemm_workspace_f32(&d) + CT_GEMM_WORKSPACE_ALIGNMENT;
  return (uint64_t)(plan->v_bytes + plan->m_bytes + ct_round_up(gemm, CT_WINOGRAD_ALIGN));
}

uint64_t ct_conv2d_winograd_workspace(const ct_conv2d_winograd_job* job) {
  ct_winograd_schedule plan;
  ct_winograd_make_schedule(job, &plan);
  const uint64_t slots = plan.fused ? (uint64_t)ct_cpu_num_threads() : 1;
  return (uint64_t)plan.u_bytes + slots * ct_winograd_slot_bytes(job, &plan);
}

/* ----- weight: U[ξ][c][k] = (G g Gᵀ)[i][j] for g = weight[k][c] ----- */

typedef struct ct_winograd_context {
  const ct_conv2d_winograd_job* job;
  const ct_winograd_schedule* plan;
  float* u;
  float* v;
  float* m;
  int64_t first;  /* the chunk's first tile */
  int64_t tiles;  /* the chunk's tiles */
  int64_t v_rows; /* the chunk's tiles rounded up to the micro-panels (V's rows) */
  int stream;     /* how the input transform writes V (stream_store.h) */
  int nonfinite;  /* set (by any thread) when an infinity or a NaN was met */
} ct_winograd_context;

/* G's rows applied to (a, b, c): a, (a + b + c) / 2, (a - b + c) / 2, c. */
#define CT_WINOGRAD_G(a, b, c, r0, r1, r2, r3) \
  do {                                         \
    const float s_ = 0.5f * ((a) + (c));       \
    (r0) = (a);                                \
    (r1) = s_ + 0.5f * (b);                    \
    (r2) = s_ - 0.5f * (b);                    \
    (r3) = (c);                                \
  } while (0)

/* Non-finite tallies of the transforms, lane by lane: check[l] += v - v adds 0 for a finite v and
 * NaN for an infinity or a NaN (a sum that vectorises, where a comparison per value does not), so
 * a lane ends NaN if any of its values was not finite. Whether any of the n lanes did. */
static CT_CPU_ISA_BODY int ct_winograd_nonfinite(const float* check, int n) {
  int bad = 0;
  for (int l = 0; l < n; ++l) bad |= check[l] != check[l];
  return bad;
}

/* Weights transformed together: a task takes CT_WINOGRAD_O_BLOCK output channels (columns of U)
 * and runs over the input channels CT_WINOGRAD_C_BLOCK at a time, gathering their weights
 * channel-major (g[c][tap][o], output channels innermost) so that the transform runs on whole
 * vectors; it then writes its part of the rows U[ξ][c] into the GEMM's micro-panels (a whole
 * cache line per ξ and channel where the panels are 16 or 32 columns wide), zeros in the columns
 * past the last channel. A task reads each of its output channels' weights from start to end,
 * and where those are compact ((c, i, j) contiguous), whole 16 × 16 blocks at a time through
 * vector transposes instead of a float at a time (a scalar gather would dominate the
 * transform). */
#define CT_WINOGRAD_O_BLOCK 16
#define CT_WINOGRAD_C_BLOCK 16

/* Writes out[ξ][0 : span) as U[ξ][c][o0 : o0 + span) (span <= CT_WINOGRAD_O_BLOCK), in runs that
 * stay inside one micro-panel. Whole cache lines go out with non-temporal stores of the width
 * `stream` gives (stream_store.h; the caller fences them): U is larger than the weight by 16/9,
 * and streaming it skips reading every line for ownership before writing it. */
static CT_CPU_ISA_BODY void ct_winograd_weight_store(const ct_winograd_u_layout* layout,
                                                     int64_t channels, float* u, int64_t c,
                                                     int64_t o0, int64_t span, int stream,
                                                     float out[16][CT_WINOGRAD_O_BLOCK]) {
  const int64_t nr = layout->nr, plane = channels * layout->cols;
  const int64_t pc = c / layout->kc * layout->kc;
  const int64_t depth = channels - pc < layout->kc ? channels - pc : layout->kc;
  float* row = u + pc * layout->cols + (c - pc) * nr;
  for (int64_t o = 0; o < span;) {
    const int64_t j = o0 + o;
    const int64_t run = span - o < nr - j % nr ? span - o : nr - j % nr;
    float* dst = row + j / nr * depth * nr + j % nr;
    if (run == CT_WINOGRAD_O_BLOCK) { /* whole lines, copied as vectors */
      for (int x = 0; x < 16; ++x) {
        ct_stream_copy(dst + x * plane, out[x], CT_WINOGRAD_O_BLOCK * sizeof(float), stream);
      }
    } else {
      for (int x = 0; x < 16; ++x) {
        for (int64_t r = 0; r < run; ++r) dst[x * plane + r] = out[x][o + r];
      }
    }
    o += run;
  }
}

/* Sixteen floats, for the transposes below (generic vectors: each instruction-set copy compiles
 * them to its own registers). */
typedef float ct_winograd_v16 __attribute__((vector_size(16 * sizeof(float))));
#define CT_WINOGRAD_ZIP_LO(a, b) \
  __builtin_shufflevector(a, b, 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23)
#define CT_WINOGRAD_ZIP_HI(a, b) \
  __builtin_shufflevector(a, b, 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31)

/* dst[i][r] = src[r · stride + i] for r, i < 16 (dst rows 16 floats apart): four rounds of
 * interleaving row r with row r + 8 transpose a 16 × 16 block. */
static CT_CPU_ISA_BODY void ct_winograd_transpose16(const float* src, int64_t stride, float* dst) {
  ct_winograd_v16 r[16], n[16];
  _Pragma("GCC unroll 16") for (int i = 0; i < 16; ++i)
      memcpy(&r[i], src + i * stride, sizeof r[i]);
  _Pragma("GCC unroll 4") for (int round = 0; round < 4; ++round) {
    _Pragma("GCC unroll 8") for (int i = 0; i < 8; ++i) {
      n[2 * i] = CT_WINOGRAD_ZIP_LO(r[i], r[i + 8]);
      n[2 * i + 1] = CT_WINOGRAD_ZIP_HI(r[i], r[i + 8]);
    }
    _Pragma("GCC unroll 16") for (int i = 0; i < 16; ++i) r[i] = n[i];
  }
  _Pragma("GCC unroll 16") for (int i = 0; i < 16; ++i) memcpy(dst + 16 * i, &r[i], sizeof r[i]);
}

static CT_CPU_ISA_BODY int ct_winograd_weight_block_body(const ct_conv2d_winograd_job* job,
                                                         const ct_winograd_u_layout* layout,
                                                         float* u, int64_t o0) {
  const int64_t k = job->k;
  const int64_t s0 = job->f.ws[0], s1 = job->f.ws[1], s2 = job->f.ws[2], s3 = job->f.ws[3];
  /* channels [o0, o0 + width) are the weight's, [width, span) padding */
  const int64_t width = k - o0 < 0                     ? 0
                        : k - o0 < CT_WINOGRAD_O_BLOCK ? k - o0
                                                       : CT_WINOGRAD_O_BLOCK;
  const int64_t span =
      layout->cols - o0 < CT_WINOGRAD_O_BLOCK ? layout->cols - o0 : CT_WINOGRAD_O_BLOCK;
  const bool compact = s1 == 9 && s2 == 3 && s3 == 1; /* (c, i, j) of an output channel */
  _Alignas(64) float g[CT_WINOGRAD_C_BLOCK][9][CT_WINOGRAD_O_BLOCK];
  float check[CT_WINOGRAD_O_BLOCK] = {0.0f}; /* ct_winograd_nonfinite */
  const int stream = ct_stream_mode(ct_cpu_isa() >= CT_CPU_ISA_AVX2);
  for (int64_t c0 = 0; c0 < job->c; c0 += CT_WINOGRAD_C_BLOCK) {
    const int64_t cn = job->c - c0 < CT_WINOGRAD_C_BLOCK ? job->c - c0 : CT_WINOGRAD_C_BLOCK;
    if (compact && cn == CT_WINOGRAD_C_BLOCK && width == CT_WINOGRAD_O_BLOCK) {
      /* each output channel's 16 · 9 weights are contiguous: nine 16 × 16 transposes */
      const float* go = job->f.weight + o0 * s0 + c0 * s1;
      for (int q = 0; q < 9; ++q) ct_winograd_transpose16(go + 16 * q, s0, &g[0][0][0] + 256 * q);
    } else {
      for (int64_t o = 0; o < CT_WINOGRAD_O_BLOCK; ++o) {
        const float* go = job->f.weight + (o < width ? o0 + o : 0) * s0 + c0 * s1;
        for (int64_t c = 0; c < cn; ++c) {
          for (int i = 0; i < 3; ++i) {
            for (int j = 0; j < 3; ++j) g[c][3 * i + j][o] = go[c * s1 + i * s2 + j * s3];
          }
        }
      }
    }
    for (int64_t c = 0; c < cn; ++c) {
      _Alignas(64) float out[16][CT_WINOGRAD_O_BLOCK];
      for (int o = 0; o < CT_WINOGRAD_O_BLOCK; ++o) {
        float t[4][3]; /* G g: 4 rows of 3 */
        for (int col = 0; col < 3; ++col) {
          CT_WINOGRAD_G(g[c][col][o], g[c][3 + col][o], g[c][6 + col][o], t[0][col], t[1][col],
                        t[2][col], t[3][col]);
        }
        for (int i = 0; i < 4; ++i) {
          CT_WINOGRAD_G(t[i][0], t[i][1], t[i][2], out[4 * i][o], out[4 * i + 1][o],
                        out[4 * i + 2][o], out[4 * i + 3][o]);
        }
      }
      if (width < CT_WINOGRAD_O_BLOCK) {
        for (int x = 0; x < 16; ++x) {
          for (int64_t o = width; o < CT_WINOGRAD_O_BLOCK; ++o) out[x][o] = 0.0f;
        }
      }
      for (int x = 0; x < 16; ++x) {
        for (int o = 0; o < CT_WINOGRAD_O_BLOCK; ++o) check[o] += out[x][o] - out[x][o];
      }
      ct_winograd_weight_store(layout, job->c, u, c0 + c, o0, span, stream, out);
    }
  }
  return ct_winograd_nonfinite(check, CT_WINOGRAD_O_BLOCK);
}
CT_CPU_ISA_VARIANTS(int, ct_winograd_weight_block,
                    (const ct_conv2d_winograd_job* job, const ct_winograd_u_layout* layout,
                     float* u, int64_t o0),
                    (job, layout, u, o0))

/* Records that a task met a value that is not finite (v - v != 0: an infinity or a NaN). */
static void ct_winograd_flag(ct_winograd_context* ctx, int bad) {
  if (bad) __atomic_store_n(&ctx->nonfinite, 1, __ATOMIC_RELAXED);
}

static void ct_winograd_weight(int64_t begin, int64_t end, void* context) {
  ct_winograd_context* ctx = context;
  int bad = 0;
  for (int64_t b = begin; b < end; ++b) {
    bad |= ct_winograd_weight_block(ctx->job, &ctx->plan->u, ctx->u, b * CT_WINOGRAD_O_BLOCK);
  }
  ct_stream_fence(); /* the stores of U, before the GEMM on other threads reads it */
  ct_winograd_flag(ctx, bad);
}

/* ----- input: V[ξ][t][c] = (Bᵀ d B)[i][j] for the 4 × 4 patch d under tile t ----- */

/* Bᵀ applied to (a, b, c, d): a - c, b + c, c - b, b - d. */
#define CT_WINOGRAD_BT(a, b, c, d, r0, r1, r2, r3) \
  do {                                             \
    (r0) = (a) - (c);                              \
    (r1) = (b) + (c);                              \
    (r2) = (c) - (b);                              \
    (r3) = (b) - (d);                              \
  } while (0)

/* Tiles and channels transformed together: a work item is one micro-panel of V (the chunk's tiles
 * [p · mr, p · mr + mr), ct_winograd_v_layout) for CT_WINOGRAD_X_CHANNELS channels. The four
 * input rows under each piece of the panel that lies in one tile row are copied, zero-padded,
 * with the channels innermost (16 columns of 16 channels at a time through a vector transpose
 * where the columns are contiguous), so that each tile's transform runs on whole vectors of
 * channels. The panel's values are kept (ξ, tile, channel), turned to (channel, tile), and
 * written to V as the panel's rows of those channels: where the channels lie in one depth block,
 * one contiguous block of 16 · mr floats per ξ, packed in a buffer and streamed to memory when V
 * is too large to stay in cache (ct_stream_worth), else stored as whole vectors that overlap the
 * next channel's row (written after it), rather than in segments cut where panels begin (many
 * partial stores a tile, each reading its line for ownership). */
#define CT_WINOGRAD_X_CHANNELS 16

/* dst[0 : n) = src[0 : n) for n <= 16, in at most five moves of fixed size: a memcpy of a
 * variable size this short compiles to `rep movsq`, whose start-up costs more than the copy. */
static CT_CPU_ISA_BODY void ct_winograd_copy16(float* dst, const float* src, int64_t n) {
  if (n & 16) memcpy(dst, src, 16 * sizeof(float));
  if (n & 8) memcpy(dst + (n & 16), src + (n & 16), 8 * sizeof(float));
  if (n & 4) memcpy(dst + (n & 24), src + (n & 24), 4 * sizeof(float));
  if (n & 2) memcpy(dst + (n & 28), src + (n & 28), 2 * sizeof(float));
  if (n & 1) dst[n & 30] = src[n & 30];
}

/* Where tile t writes: its image, first output row and column. */
static void ct_winograd_tile(const ct_winograd_schedule* plan, int64_t t, int64_t* image,
                             int64_t* oy, int64_t* ox) {
  const int64_t per_image = plan->th * plan->tw;
  *image = t / per_image;
  const int64_t r = t % per_image;
  *oy = 2 * (r / plan->tw);
  *ox = 2 * (r % plan->tw);
}

/* Where channel c of V starts in its depth block (*channel, for rows of `rows`) and that
 * block's depth (*depth), in ct_winograd_v_layout. */
static void ct_winograd_v_channel(const ct_conv2d_winograd_job* job,
                                  const ct_winograd_schedule* plan, int64_t rows, int64_t c,
                                  int64_t* channel, int64_t* depth) {
  const int64_t pc = c / plan->v.kc * plan->v.kc;
  *depth = job->c - pc < plan->v.kc ? job->c - pc : plan->v.kc;
  *channel = pc * rows + (c - pc) * plan->v.mr;
}

/* Tiles [0, count) of one tile row (count <= CT_WINOGRAD_X_TILES), whose patches start at input
 * row y0 and column x0 of `x` (one image), for channels [c0, c0 + cn): done[ξ][at + t][c] =
 * (Bᵀ d B)[ξ] of tile t, channel c0 + c (channels past cn: zeros). */
static CT_CPU_ISA_BODY void ct_winograd_input_piece(
    const ct_conv2d_winograd_job* job, const float* x, int64_t y0, int64_t x0, int64_t count,
    int64_t c0, int64_t cn, int64_t at,
    float done[16][CT_WINOGRAD_X_TILES][CT_WINOGRAD_X_CHANNELS]) {
  enum { CH = CT_WINOGRAD_X_CHANNELS };
  _Alignas(64) float rows[4][2 * CT_WINOGRAD_X_TILES + 2][CH];
  const int64_t span = 2 * count + 2;
  /* columns [q0, q1) of the span lie in the input; the others are padding */
  const int64_t q0 = x0 < 0 ? -x0 : 0;
  const int64_t q1 = job->w - x0 < span ? job->w - x0 : span;
  const int64_t xs1 = job->f.xs[1], xs3 = job->f.xs[3];
  for (int r = 0; r < 4; ++r) {
    const int64_t y = y0 + r;
    if (y < 0 || y >= job->h || q0 >= q1) {
      memset(rows[r], 0, (size_t)span * sizeof rows[r][0]);
      continue;
    }
    if (q0 > 0) memset(rows[r], 0, (size_t)q0 * sizeof rows[r][0]);
    if (q1 < span) memset(rows[r][q1], 0, (size_t)(span - q1) * sizeof rows[r][0]);
    const float* src = x + c0 * xs1 + y * job->f.xs[2] + (x0 + q0) * xs3;
    if (xs3 == 1 && cn == CH && q1 - q0 >= 16) {
      /* 16 columns of the 16 channels at a time (the last group overlapping the one before) */
      for (int64_t q = q0;; q += 16) {
        if (q > q1 - 16) q = q1 - 16;
        ct_winograd_transpose16(src + (q - q0), xs1, &rows[r][q][0]);
        if (q == q1 - 16) break;
      }
      continue;
    }
    for (int64_t q = q0; q < q1; ++q) {
      for (int64_t c = 0; c < CH; ++c)
        rows[r][q][c] = c < cn ? src[c * xs1 + (q - q0) * xs3] : 0.0f;
    }
  }
  for (int64_t t = 0; t < count; ++t) {
    float tt[4][4][CH]; /* Bᵀ d */
    for (int col = 0; col < 4; ++col) {
      const int64_t q = 2 * t + col;
      for (int c = 0; c < CH; ++c) {
        CT_WINOGRAD_BT(rows[0][q][c], rows[1][q][c], rows[2][q][c], rows[3][q][c], tt[0][col][c],
                       tt[1][col][c], tt[2][col][c], tt[3][col][c]);
      }
    }
    for (int i = 0; i < 4; ++i) {
      for (int c = 0; c < CH; ++c) {
        CT_WINOGRAD_BT(tt[i][0][c], tt[i][1][c], tt[i][2][c], tt[i][3][c], done[4 * i][at + t][c],
                       done[4 * i + 1][at + t][c], done[4 * i + 2][at + t][c],
                       done[4 * i + 3][at + t][c]);
      }
    }
  }
}

/* Panel `panel` of the chunk (ctx), channels [c0, c0 + cn) (cn <= CT_WINOGRAD_X_CHANNELS), into
 * V; the panel's rows past the chunk's tiles get zeros (the GEMM discards their products, but
 * reads them). Values that are not finite are not looked for here: each V value enters the
 * product of every output channel, and Aᵀ M A adds all 16 products of a tile into its outputs
 * with nonzero coefficients, so an infinity or a NaN in V makes every output of its tile not
 * finite, which the output transform checks. */
static CT_CPU_ISA_BODY void ct_winograd_input_panel_body(const ct_winograd_context* ctx,
                                                         int64_t panel, int64_t c0, int64_t cn) {
  enum { CH = CT_WINOGRAD_X_CHANNELS };
  const ct_conv2d_winograd_job* job = ctx->job;
  const ct_winograd_schedule* plan = ctx->plan;
  const int64_t mr = plan->v.mr, first = panel * mr;
  const int64_t end = ctx->tiles - first < mr ? ctx->tiles : first + mr;
  _Alignas(64) float done[16][CT_WINOGRAD_X_TILES][CH]; /* Bᵀ d B: [ξ][tile][channel] */
  for (int64_t t = first; t < end;) { /* the panel's pieces in one tile row each */
    int64_t image, oy, ox;
    ct_winograd_tile(plan, ctx->first + t, &image, &oy, &ox);
    const int64_t count = plan->tw - ox / 2 < end - t ? plan->tw - ox / 2 : end - t;
    ct_winograd_input_piece(job, job->f.x + image * job->f.xs[0], oy - job->pad_h, ox - job->pad_w,
                            count, c0, cn, t - first, done);
    t += count;
  }
  for (int xi = 0; xi < 16; ++xi) { /* rows past the tiles (and past mr: turned, never stored) */
    memset(done[xi][end - first], 0,
           (size_t)(CT_WINOGRAD_X_TILES - (end - first)) * sizeof done[xi][0]);
  }
  /* where each channel's row of the panel starts; whether they follow each other mr apart */
  int64_t at[CH];
  bool together = true;
  for (int64_t c = 0; c < cn; ++c) {
    int64_t channel, depth;
    ct_winograd_v_channel(job, plan, ctx->v_rows, c0 + c, &channel, &depth);
    at[c] = channel + first * depth;
    together = together && (c == 0 || at[c] == at[c - 1] + mr);
  }
  /* channels whose whole-vector store stays inside the block (the others: exactly mr floats) */
  const int64_t whole = together && cn * mr >= 16 ? (cn * mr - 16) / mr + 1 : 0;
  const int64_t block = cn * mr * (int64_t)sizeof(float);
  const bool stream = ctx->stream != CT_STREAM_OFF && together &&
                      block % CT_STREAM_LINE_BYTES == 0 &&
                      ((uintptr_t)(ctx->v + at[0]) % CT_STREAM_LINE_BYTES) == 0;
  for (int xi = 0; xi < 16; ++xi) {
    _Alignas(64) float turned[CH][16]; /* [channel][tile of the panel] */
    ct_winograd_transpose16(&done[xi][0][0], CH, &turned[0][0]);
    float* plane = ctx->v + xi * plan->v.plane;
    if (stream) {
      _Alignas(64) float packed[CH * CT_WINOGRAD_X_TILES + 16];
      for (int64_t c = 0; c < cn; ++c) memcpy(packed + c * mr, turned[c], sizeof turned[c]);
      ct_stream_copy(plane + at[0], packed, block, ctx->stream);
      continue;
    }
    for (int64_t c = 0; c < cn; ++c) {
      if (c < whole) {
        memcpy(plane + at[c], turned[c], sizeof turned[c]);
      } else {
        ct_winograd_copy16(plane + at[c], turned[c], mr);
      }
    }
  }
}
CT_CPU_ISA_LOOP(ct_winograd_input_panel,
                (const ct_winograd_context* ctx, int64_t panel, int64_t c0, int64_t cn),
                (ctx, panel, c0, cn))

/* Work items of the input transform: (micro-panel of V, channel block), channel blocks inside. */
static int64_t ct_winograd_channel_blocks(const ct_conv2d_winograd_job* job) {
  return ct_div_up(job->c, CT_WINOGRAD_X_CHANNELS);
}

static void ct_winograd_input(int64_t begin, int64_t end, void* context) {
  const ct_winograd_context* ctx = context;
  const int64_t blocks = ct_winograd_channel_blocks(ctx->job);
  for (int64_t item = begin; item < end; ++item) {
    const int64_t c0 = item % blocks * CT_WINOGRAD_X_CHANNELS;
    const int64_t cn =
        ctx->job->c - c0 < CT_WINOGRAD_X_CHANNELS ? ctx->job->c - c0 : CT_WINOGRAD_X_CHANNELS;
    ct_winograd_input_panel(ctx, item / blocks, c0, cn);
  }
  if (ctx->stream != CT_STREAM_OFF) ct_stream_fence(); /* V, before the GEMM's threads read it */
}

/* ----- output: Y = Aᵀ M A (+ bias) per tile and output channel ----- */

/* Output channels transformed together, and tiles of one tile row transformed together: the
 * run's outputs are kept (position, tile, channel), turned 16 tiles at a time to (channel,
 * tile), and each channel's two output rows under the run are stored as whole rows (the two
 * columns of every tile interleaved), rather than storing each output where it lies, a float at
 * a time. */
#define CT_WINOGRAD_Y_CHANNELS 16
#define CT_WINOGRAD_Y_TILES 16

/* Tiles [t0, t0 + count) of the chunk (count <= CT_WINOGRAD_Y_TILES, one tile row: output rows
 * oy, oy + 1 and columns from ox on, of one image, at `out`) from M (`plane` floats per ξ, K
 * per tile). Returns whether an output was not finite. */
static CT_CPU_ISA_BODY int ct_winograd_output_run_body(const ct_conv2d_winograd_job* job,
                                                       const float* m, int64_t plane, int64_t t0,
                                                       int64_t count, float* out, int64_t oy,
                                                       int64_t ox) {
  enum { CH = CT_WINOGRAD_Y_CHANNELS };
  const int64_t ks = job->f.os[1], ys = job->f.os[2], xs = job->f.os[3];
  const int64_t width = 2 * count < job->ow - ox ? 2 * count : job->ow - ox; /* columns */
  float check[CH] = {0.0f};                         /* ct_winograd_nonfinite */
  _Alignas(64) float y[4][CT_WINOGRAD_Y_TILES][CH]; /* [position][tile][channel] */
  memset(y, 0, sizeof y); /* tiles past the run: zeros, turned but never stored */
  for (int64_t o0 = 0; o0 < job->k; o0 += CH) {
    const int64_t on = job->k - o0 < CH ? job->k - o0 : CH;
    float b[CH];
    for (int o = 0; o < CH; ++o) {
      b[o] = job->f.bias && o < on ? job->f.bias[(o0 + o) * job->f.bs] : 0.0f;
    }
    for (int64_t t = 0; t < count; ++t) {
      const float* mt = m + (t0 + t) * job->k + o0;
      float e[16][CH];
      if (on == CH) {
        for (int q = 0; q < 16; ++q) {
          for (int o = 0; o < CH; ++o) e[q][o] = mt[q * plane + o];
        }
      } else {
        memset(e, 0, sizeof e);
        for (int q = 0; q < 16; ++q) {
          for (int64_t o = 0; o < on; ++o) e[q][o] = mt[q * plane + o];
        }
      }
      for (int o = 0; o < CH; ++o) {
        float r[2][4]; /* Aᵀ M: rows 0 + 1 + 2 and 1 - 2 - 3 */
        for (int s = 0; s < 4; ++s) {
          r[0][s] = e[s][o] + e[4 + s][o] + e[8 + s][o];
          r[1][s] = e[4 + s][o] - e[8 + s][o] - e[12 + s][o];
        }
        for (int i = 0; i < 2; ++i) {
          y[2 * i][t][o] = r[i][0] + r[i][1] + r[i][2] + b[o];
          y[2 * i + 1][t][o] = r[i][1] - r[i][2] - r[i][3] + b[o];
        }
      }
      for (int q = 0; q < 4; ++q) {
        for (int o = 0; o < CH; ++o) check[o] += y[q][t][o] - y[q][t][o];
      }
    }
    for (int dy = 0; dy < 2 && oy + dy < job->oh; ++dy) {
      _Alignas(64) float left[CH][16], right[CH][16]; /* [channel][tile]: columns 2t, 2t + 1 */
      ct_winograd_transpose16(&y[2 * dy][0][0], CH, &left[0][0]);
      ct_winograd_transpose16(&y[2 * dy + 1][0][0], CH, &right[0][0]);
      for (int64_t o = 0; o < on; ++o) {
        ct_winograd_v16 l, r;
        memcpy(&l, left[o], sizeof l);
        memcpy(&r, right[o], sizeof r);
        _Alignas(64) float row[2 * CT_WINOGRAD_Y_TILES];
        const ct_winograd_v16 lo = CT_WINOGRAD_ZIP_LO(l, r), hi = CT_WINOGRAD_ZIP_HI(l, r);
        memcpy(row, &lo, sizeof lo);
        memcpy(row + 16, &hi, sizeof hi);
        float* dst = out + (o0 + o) * ks + (oy + dy) * ys + ox * xs;
        if (xs == 1) {
          ct_winograd_copy16(dst, row, width < 16 ? width : 16);
          if (width > 16) ct_winograd_copy16(dst + 16, row + 16, width - 16);
        } else {
          for (int64_t c = 0; c < width; ++c) dst[c * xs] = row[c];
        }
      }
    }
  }
  return ct_winograd_nonfinite(check, CH);
}
CT_CPU_ISA_VARIANTS(int, ct_winograd_output_run,
                    (const ct_conv2d_winograd_job* job, const float* m, int64_t plane, int64_t t0,
                     int64_t count, float* out, int64_t oy, int64_t ox),
                    (job, m, plane, t0, count, out, oy, ox))

/* Work items of the output transform: runs of at most CT_WINOGRAD_Y_TILES tiles of one tile
 * row, in tile order (chunks are whole tile rows). */
static void ct_winograd_output(int64_t begin, int64_t end, void* context) {
  ct_winograd_context* ctx = context;
  const ct_conv2d_winograd_job* job = ctx->job;
  const ct_winograd_schedule* plan = ctx->plan;
  const int64_t plane = plan->chunk * job->k;
  const int64_t runs = ct_div_up(plan->tw, CT_WINOGRAD_Y_TILES);
  int bad = 0;
  for (int64_t item = begin; item < end; ++item) {
    const int64_t row = item / runs, tx0 = item % runs * CT_WINOGRAD_Y_TILES;
    const int64_t count =
        plan->tw - tx0 < CT_WINOGRAD_Y_TILES ? plan->tw - tx0 : CT_WINOGRAD_Y_TILES;
    const int64_t t0 = row * plan->tw + tx0; /* in the chunk */
    int64_t image, oy, ox;
    ct_winograd_tile(plan, ctx->first + t0, &image, &oy, &ox);
    bad |= ct_winograd_output_run(job, ctx->m, plane, t0, count, job->f.out + image * job->f.os[0],
                                  oy, ox);
  }
  ct_winograd_flag(ctx, bad);
}

/* The 16 products of the chunk at ctx->first, with the GEMM's buffers in `workspace`. */
static void ct_winograd_products(const ct_winograd_context* ctx, void* workspace,
                                 uint64_t workspace_size) {
  int64_t batch[4];
  ct_gemm_desc d;
  ct_winograd_gemm_desc(ctx->job, ctx->plan, ctx->tiles, ctx->u, ctx->v, ctx->m, batch, &d);
  d.workspace = workspace;
  d.workspace_size = workspace_size;
  ct_gemm_f32(&d);
}

/* Points ctx at the chunk whose first tile is `first` (chunks are whole tile rows). */
static void ct_winograd_set_chunk(ct_winograd_context* ctx, int64_t first) {
  const ct_winograd_schedule* plan = ctx->plan;
  ctx->first = first;
  ctx->tiles = plan->tiles - first < plan->chunk ? plan->tiles - first : plan->chunk;
  ctx->v_rows = ct_round_up(ctx->tiles, plan->v.mr);
}

/* Work items of the chunk's input transform (ct_winograd_input) and output transform
 * (ct_winograd_output). */
static int64_t ct_winograd_input_items(const ct_winograd_context* ctx) {
  return ctx->v_rows / ctx->plan->v.mr * ct_winograd_channel_blocks(ctx->job);
}
static int64_t ct_winograd_output_items(const ct_winograd_context* ctx) {
  return ctx->tiles / ctx->plan->tw * ct_div_up(ctx->plan->tw, CT_WINOGRAD_Y_TILES);
}

/* Fused mode: chunks small enough that a thread's V and M stay in its L2 cache, each run whole by
 * one thread (input transform, the 16 products on that thread alone, output transform), the
 * threads taking the next chunk as they finish. This saves writing V and M to memory and reading
 * them back, and the threads wait for each other once a call instead of three times a chunk; the
 * weight transform's U, shared, is small enough to stay in L3 (CT_WINOGRAD_FUSED_U_BYTES). */
typedef struct ct_winograd_fused {
  ct_winograd_context* shared;
  char* slots; /* per thread: V, M, the GEMM's workspace */
  uint64_t slot_bytes;
  int64_t chunks;
  int64_t next; /* the next chunk to take */
} ct_winograd_fused;

/* Parallel body: slots [begin, end), one per thread, each taking chunks until none is left. */
static void ct_winograd_fused_chunks(int64_t begin, int64_t end, void* context) {
  ct_winograd_fused* f = context;
  const ct_winograd_schedule* plan = f->shared->plan;
  for (int64_t slot = begin; slot < end; ++slot) {
    ct_winograd_context ctx = *f->shared;
    char* base = f->slots + (uint64_t)slot * f->slot_bytes;
    ctx.v = (float*)(void*)base;
    ctx.m = (float*)(void*)(base + plan->v_bytes);
    ctx.stream = CT_STREAM_OFF; /* V stays in this thread's cache */
    char* gemm = base + plan->v_bytes + plan->m_bytes;
    const uint64_t gemm_bytes = f->slot_bytes - (uint64_t)(plan->v_bytes + plan->m_bytes);
    for (;;) {
      const int64_t i = __atomic_fetch_add(&f->next, 1, __ATOMIC_RELAXED);
      if (i >= f->chunks || __atomic_load_n(&f->shared->nonfinite, __ATOMIC_RELAXED)) break;
      ct_winograd_set_chunk(&ctx, i * plan->chunk);
      ct_winograd_input(0, ct_winograd_input_items(&ctx), &ctx);
      ct_winograd_products(&ctx, gemm, gemm_bytes);
      ct_winograd_output(0, ct_winograd_output_items(&ctx), &ctx);
      ct_winograd_flag(f->shared, ctx.nonfinite);
    }
  }
}

bool ct_conv2d_winograd_run(const ct_conv2d_winograd_job* job, void* workspace,
                            uint64_t workspace_size) {
  ct_winograd_schedule plan;
  ct_winograd_make_schedule(job, &plan);
  char* base = workspace;
  ct_winograd_context ctx = {
      .job = job,
      .plan = &plan,
      .u = (float*)(void*)base,
      .v = (float*)(void*)(base + plan.u_bytes),
      .m = (float*)(void*)(base + plan.u_bytes + plan.v_bytes),
  };
  ct_cpu_parallel_for(ct_div_up(plan.u.cols, CT_WINOGRAD_O_BLOCK),
                      64 * CT_WINOGRAD_O_BLOCK * job->c, ct_winograd_weight, &ctx);
  if (ctx.nonfinite) return false;
  if (plan.fused) {
    /* one slot a thread, as many threads as the workspace has slots for (fewer than the thread
     * count where that grew since the workspace was asked for) */
    const uint64_t slot = ct_winograd_slot_bytes(job, &plan);
    const int64_t slots = workspace_size > (uint64_t)plan.u_bytes
                              ? (int64_t)((workspace_size - (uint64_t)plan.u_bytes) / slot)
                              : 0;
    if (slots < 1) return false; /* a workspace smaller than asked for: the direct methods */
    ct_winograd_fused f = {&ctx, base + plan.u_bytes, slot, ct_div_up(plan.tiles, plan.chunk), 0};
    /* each slot's item costs the whole call: every thread takes one */
    ct_cpu_parallel_for(slots, plan.tiles * job->c * job->k, ct_winograd_fused_chunks, &f);
    return !ctx.nonfinite;
  }
  /* Shared chunks: V, when too large to stay in cache until the products read it, is streamed
   * to memory (whole lines only: its planes must start on one). */
  ctx.stream = ct_stream_worth(plan.v_bytes) &&
                       (plan.v.plane * (int64_t)sizeof(float)) % CT_STREAM_LINE_BYTES == 0
                   ? ct_stream_mode(ct_cpu_isa() >= CT_CPU_ISA_AVX2)
                   : CT_STREAM_OFF;
  const int64_t used = plan.u_bytes + plan.v_bytes + plan.m_bytes;
  for (int64_t first = 0; first < plan.tiles; first += plan.chunk) {
    ct_winograd_set_chunk(&ctx, first);
    ct_cpu_parallel_for(ct_winograd_input_items(&ctx), 64 * CT_WINOGRAD_X_CHANNELS * plan.v.mr,
                        ct_winograd_input, &ctx);
    ct_winograd_products(&ctx, base + used, workspace_size - (uint64_t)used);
    ct_cpu_parallel_for(ct_winograd_output_items(&ctx), 48 * job->k * CT_WINOGRAD_Y_TILES,
                        ct_winograd_output, &ctx);
    if (ctx.nonfinite) return false;
  }
  return true;
}
