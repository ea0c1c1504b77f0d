/* conv2d_backward_kernels.c - conv2d_backward_input, conv2d_backward_weight and
 * conv_transpose2d_backward_input.
 *
 * conv2d_backward_input (cuDNN's backward-data) is a transposed convolution of grad_out with the
 * weight. With stride 1 and padding <= dilation · (kernel - 1) it is a plain conv2d of grad_out
 * with the weight flipped in (kH, kW) and its two channel dims swapped per group, and padding
 * dilation · (kernel - 1) - padding: the forward conv2d kernel runs it (Winograd, direct or the
 * implicit GEMM), the flipped weight built in the workspace. Otherwise the conv_transpose2d
 * kernel runs it (GEMM then col2im), its output extent being the input's.
 *
 * conv_transpose2d_backward_input is conv2d(grad_out, weight) over the input's extent: the
 * conv2d kernel computes that many output rows and columns.
 *
 * conv2d_backward_weight (backward-filter): per group, grad_weight (O/groups × K) =
 * grad_out (O/groups × N·P) · colᵀ (N·P × K), K = C_in/groups · kH · kW and P = H_out · W_out,
 * with col the im2col matrix of the images side by side: one packed GEMM, the groups its batch,
 * its depth every position of every image, colᵀ never built: the GEMM's B packer reads the
 * input into its micro-panels (as conv2d's forward reads col).
 * Workspace (compute type C: float for float16/bfloat16/float32, double for float64), each part
 * padded to 64 bytes:
 *   gout: C_out × N·P (rounded up to the chunks): grad_out, compact, of type C (the GEMM's A);
 *   acc:  chunks × C_out × K: each chunk's sums, added up and stored into grad_weight at the
 *         end (rounding once);
 *   gemm: the packed GEMM's panels (ct_gemm_workspace_<instance>). */
#include <string.h>

#include "conv/conv_entry.h"
#include "cpu_register.h"
#include "engine/cpu_isa.h"
#include "engine/strided_iter.h"
#include "gemm/gemm.h"
#include "ops/op_defs.h"

#define CT_C2BW_ALIGNMENT 64
/* Positions the B packer of conv2d_backward_weight writes at once: that many rows of each
 * micro-panel (64 × 32 floats = 8 KB) stay in L1 while every tap writes its column. */
#define CT_C2BW_PACK_ROWS 64
/* conv2d_backward_weight cuts its depth into at most this many chunks of at least
 * CT_C2BW_MIN_CHUNK positions, their sums together at most CT_C2BW_CHUNK_SUMS_BYTES. */
#define CT_C2BW_MAX_CHUNKS 8
#define CT_C2BW_MIN_CHUNK 512
/* 1.25 MB: small grad_weights (64 x 64 x 3 x 3: 147 KB) are cut into 8 chunks, 128 x 128 x 3 x 3
 * (590 KB) into 2; from 256 x 256 x 3 x 3 on one product over the whole depth, the threads
 * sharing its output tiles, ran 10-20% faster than 3 chunks of 523 positions and a final pass
 * adding their sums (8 MB before). */
#define CT_C2BW_CHUNK_SUMS_BYTES ((int64_t)5 << 18)

static int64_t ct_c2bw_align(int64_t bytes) {
  return (bytes + CT_C2BW_ALIGNMENT - 1) / CT_C2BW_ALIGNMENT * CT_C2BW_ALIGNMENT;
}

/* ----- conv2d_backward_input and conv_transpose2d_backward_input: other kernels on views ----- */

/* A conv2d (or conv_transpose2d) call on other operands, with the attribute storage it points
 * into. */
typedef struct ct_c2bw_inner {
  ct_kernel_call call;
  const ct_tensor* inputs[3];
  const ct_tensor* outputs[1];
  ct_attr_value attrs[5];
  int64_t padding[2];
  ct_tensor weight; /* the flipped weight (flip path) */
  int64_t weight_shape[4];
  bool flip; /* conv2d with the flipped weight; else conv_transpose2d */
  int64_t weight_bytes;
} ct_c2bw_inner;

/* Sets up the inner call of conv2d_backward_input: the flip path where it applies. */
static int ct_c2bw_input_inner(const ct_kernel_call* call, int64_t elem_size,
                               ct_c2bw_inner* inner) {
  int64_t stride[2], padding[2], dilation[2], groups;
  const int status = ct_conv2d_params(call->attrs, stride, padding, dilation, &groups);
  if (status != CT_OK) return status;
  const ct_tensor* grad_out = call->inputs[0];
  const ct_tensor* weight = call->inputs[2];
  inner->call = *call;
  inner->outputs[0] = call->outputs[0];
  inner->call.outputs = inner->outputs;
  inner->call.num_outputs = 1;
  inner->call.inputs = inner->inputs;
  inner->call.num_inputs = 3;
  inner->inputs[0] = grad_out;
  inner->inputs[2] = NULL;
  inner->flip = stride[0] == 1 && stride[1] == 1;
  for (int k = 0; k < 2; ++k) {
    inner->padding[k] = dilation[k] * (weight->shape[2 + k] - 1) - padding[k];
    if (inner->padding[k] < 0) inner->flip = false;
  }
  inner->weight_bytes = 0;
  if (inner->flip) {
    const int64_t og = weight->shape[0] / groups;
    inner->weight_shape[0] = weight->shape[1] * groups;
    inner->weight_shape[1] = og;
    inner->weight_shape[2] = weight->shape[2];
    inner->weight_shape[3] = weight->shape[3];
    inner->weight =
        (ct_tensor){NULL, weight->device, 4, weight->dtype, inner->weight_shape, NULL, 0};
    inner->weight_bytes = ct_c2bw_align(ct_tensor_numel(weight) * elem_size);
    inner->inputs[1] = &inner->weight;
    inner->attrs[0] = call->attrs[0];
    inner->attrs[1] = (ct_attr_value){CT_ATTR_INT_LIST, 0, 2, {.ints = inner->padding}};
    inner->attrs[2] = call->attrs[2];
    inner->attrs[3] = call->attrs[3];
  } else { /* conv_transpose2d's attributes: stride, padding, output_padding, groups, dilation */
    inner->inputs[1] = weight;
    inner->attrs[0] = call->attrs[0];
    inner->attrs[1] = call->attrs[1];
    inner->attrs[2] = call->attrs[1]; /* output_padding: not read, the output has its extent */
    inner->attrs[3] = call->attrs[3];
    inner->attrs[4] = call->attrs[2];
  }
  inner->call.attrs = inner->attrs;
  return CT_OK;
}

/* The flip path's weight: wt[g·cg + c, o, i, j] = weight[g·og + o, c, kH-1-i, kW-1-j], compact,
 * of the weight's own type (a permutation: nothing is rounded). */
typedef struct ct_c2bw_flip {
  const ct_tensor* weight;
  int64_t groups, og;
  void* dst;
} ct_c2bw_flip;

/* In tiles of CT_C2BW_FLIP_ROWS rows by 16 of o, o outer: per o one run of CT_C2BW_FLIP_ROWS ·
 * kH · kW weight elements read in order, and each row's 16 · kH · kW elements of the tile written
 * in order. Reading the weight down its O axis (a row at a time) went to a new cache line at every
 * o: with 512 channels (a 9.4 MB weight, from memory) the flip took 0.65 ms, 15% of the call. */
#ifndef CT_C2BW_FLIP_ROWS
#define CT_C2BW_FLIP_ROWS 64
#endif
#define CT_C2BW_FLIP_LOOP(T)                                                              \
  for (int64_t r0 = begin; r0 < end; r0 += CT_C2BW_FLIP_ROWS) {                           \
    const int64_t r1 = r0 + CT_C2BW_FLIP_ROWS < end ? r0 + CT_C2BW_FLIP_ROWS : end;       \
    for (int64_t o0 = 0; o0 < f->og; o0 += 16) {                                          \
      const int64_t o1 = o0 + 16 < f->og ? o0 + 16 : f->og;                               \
      for (int64_t o = o0; o < o1; ++o) {                                                 \
        for (int64_t r = r0; r < r1; ++r) {                                               \
          const int64_t g = r / cg, c = r % cg;                                           \
          T* dst = (T*)f->dst + (r * f->og + o) * taps;                                   \
          const T* src = (const T*)(const void*)base + (g * f->og + o) * s[0] + c * s[1]; \
          if (compact) { /* the taps reversed: the element kh · kw - 1 - t */             \
            for (int64_t t = taps - 1; t >= 0; --t) *dst++ = src[t];                      \
            continue;                                                                     \
          }                                                                               \
          for (int64_t i = 0; i < kh; ++i) {                                              \
            for (int64_t j = 0; j < kw; ++j) {                                            \
              *dst++ = src[(kh - 1 - i) * s[2] + (kw - 1 - j) * s[3]];                    \
            }                                                                             \
          }                                                                               \
        }                                                                                 \
      }                                                                                   \
    }                                                                                     \
  }

/* Rows (g · cg + c) [begin, end) of the flipped weight. */
static void ct_c2bw_flip_rows(int64_t begin, int64_t end, void* context) {
  const ct_c2bw_flip* f = context;
  const ct_tensor* w = f->weight;
  const int64_t cg = w->shape[1], kh = w->shape[2], kw = w->shape[3];
  const int64_t s[4] = {ct_tensor_stride(w, 0), ct_tensor_stride(w, 1), ct_tensor_stride(w, 2),
                        ct_tensor_stride(w, 3)};
  const char* base = ct_tensor_base(w);
  const int64_t taps = kh * kw;
  const bool compact = s[3] == 1 && s[2] == kw;
  switch ((w->dtype.bits + 7) / 8) {
    case 2:
      CT_C2BW_FLIP_LOOP(uint16_t)
      break;
    case 4:
      CT_C2BW_FLIP_LOOP(uint32_t)
      break;
    default:
      CT_C2BW_FLIP_LOOP(uint64_t)
  }
}

/* conv_transpose2d_backward_input: conv2d(grad_out, weight), attributes reordered. */
static void ct_c2bw_transpose_inner(const ct_kernel_call* call, ct_c2bw_inner* inner) {
  inner->call = *call;
  inner->inputs[0] = call->inputs[0];
  inner->inputs[1] = call->inputs[2];
  inner->inputs[2] = NULL;
  inner->outputs[0] = call->outputs[0];
  inner->call.inputs = inner->inputs;
  inner->call.num_inputs = 3;
  inner->call.outputs = inner->outputs;
  inner->call.num_outputs = 1;
  inner->attrs[0] = call->attrs[0]; /* stride */
  inner->attrs[1] = call->attrs[1]; /* padding */
  inner->attrs[2] = call->attrs[4]; /* dilation */
  inner->attrs[3] = call->attrs[3]; /* groups */
  inner->call.attrs = inner->attrs;
  inner->flip = false;
  inner->weight_bytes = 0;
}

/* ----- conv2d_backward_weight ----- */

typedef struct ct_c2bw_job {
  int64_t n, channels, h, w;    /* input (N, C, H, W) */
  int64_t out_channels, kh, kw; /* weight (O, C/groups, kH, kW) */
  int64_t oh, ow;               /* grad_out's spatial extents */
  int64_t stride[2], padding[2], dilation[2], groups;
  int64_t cg, og, kg, p; /* C/groups, O/groups, cg · kH · kW, oh · ow */
  int64_t depth;         /* n · p: every position of every image */
  int64_t chunks, chunk; /* the depth as `chunks` GEMM batch entries of `chunk` positions */
  int64_t padded;        /* chunks · chunk >= depth (grad_out's copy is zero past depth) */
  int64_t gout_bytes, acc_bytes;
  int64_t xs[4], gs[4], ws[4];
  const char *x, *grad;
  char* out;
  void *gout, *acc;
  ct_gemm_desc gemm;
  int64_t batch_shape[2], a_bs[2], b_bs[2], c_bs[2];
} ct_c2bw_job;

static int ct_c2bw_weight_prepare(const ct_kernel_call* call, int64_t csize, ct_c2bw_job* job) {
  const ct_tensor* grad = call->inputs[0];
  const ct_tensor* x = call->inputs[1];
  const ct_tensor* out = call->outputs[0];
  int status =
      ct_conv2d_params(call->attrs, job->stride, job->padding, job->dilation, &job->groups);
  if (status != CT_OK) return status;
  job->n = x->shape[0];
  job->channels = x->shape[1];
  job->h = x->shape[2];
  job->w = x->shape[3];
  job->out_channels = out->shape[0];
  job->kh = out->shape[2];
  job->kw = out->shape[3];
  job->oh = grad->shape[2];
  job->ow = grad->shape[3];
  job->cg = job->channels / job->groups;
  job->og = job->out_channels / job->groups;
  job->kg = job->cg * job->kh * job->kw;
  job->p = job->oh * job->ow;
  job->depth = job->n * job->p;
  for (int32_t k = 0; k < 4; ++k) {
    job->xs[k] = ct_tensor_stride(x, k);
    job->gs[k] = ct_tensor_stride(grad, k);
    job->ws[k] = ct_tensor_stride(out, k);
  }
  job->x = ct_tensor_base(x);
  job->grad = ct_tensor_base(grad);
  job->out = ct_tensor_base(out);
  job->gout = job->acc = NULL;
  /* grad_out's and grad_weight's element counts, times the compute type's size: no overflow
   * (a view's bytes fit in int64, and the compute type is at most twice the storage type). */
  /* Chunks of the depth, each a batch entry of the GEMM with its own sums (added up when
   * grad_weight is stored): whole products for the threads to share, rather than every thread
   * on every depth block of one product. As many as fit CT_C2BW_CHUNK_SUMS_BYTES of sums, up
   * to CT_C2BW_MAX_CHUNKS (a constant, not the thread count, so that the workspace asked for
   * fits any call), of at least CT_C2BW_MIN_CHUNK positions. */
  const int64_t sums = job->out_channels * job->kg * csize;
  job->chunks = sums > 0 ? CT_C2BW_CHUNK_SUMS_BYTES / sums : 1;
  if (job->chunks > CT_C2BW_MAX_CHUNKS) job->chunks = CT_C2BW_MAX_CHUNKS;
  if (job->chunks > job->depth / CT_C2BW_MIN_CHUNK) job->chunks = job->depth / CT_C2BW_MIN_CHUNK;
  /* fewer than 4 chunks: one product over the whole depth, written into grad_weight directly
   * (128 channels: 2 chunks and their sums' pass were no faster) */
  if (job->chunks < 4) job->chunks = 1;
  job->chunk = (job->depth + job->chunks - 1) / job->chunks;
  job->padded = job->chunks * job->chunk;
  job->gout_bytes = ct_c2bw_align(job->out_channels * job->padded * csize);
  job->acc_bytes = ct_c2bw_align(job->chunks * job->out_channels * job->kg * csize);
  ct_gemm_desc* d = &job->gemm;
  *d = (ct_gemm_desc){0};
  d->m = job->og;
  d->n = job->kg;
  d->k = job->chunk;
  d->a_rs = job->padded;
  d->a_cs = 1;
  d->c_rs = job->kg;
  d->c_cs = 1;
  job->batch_shape[0] = job->chunks;
  job->batch_shape[1] = job->groups;
  job->a_bs[0] = job->chunk;
  job->a_bs[1] = job->og * job->padded;
  job->b_bs[0] = job->b_bs[1] = 0; /* the packer finds its own place */
  job->c_bs[0] = job->out_channels * job->kg;
  job->c_bs[1] = job->og * job->kg;
  d->batch_ndim = 2;
  d->batch_shape = job->batch_shape;
  d->a_bs = job->a_bs;
  d->b_bs = job->b_bs;
  d->c_bs = job->c_bs;
  d->pack_b_context = job;
  return CT_OK;
}

/* Eight taps of conv2d_backward_weight's col (float32, unit column steps): per tap, the input
 * row offset and the output columns whose reads lie inside the input. */
typedef struct ct_c2bw_taps8 {
  const float* xc[8]; /* the tap's channel, shifted by its column offset */
  int64_t ih_base[8], lo[8], hi[8];
} ct_c2bw_taps8;

static void ct_c2bw_taps8_of(const ct_c2bw_job* job, int64_t group, int64_t t0,
                             ct_c2bw_taps8* taps8) {
  const int64_t taps = job->kh * job->kw;
  for (int k = 0; k < 8; ++k) {
    const int64_t t = t0 + k;
    const int64_t c = group * job->cg + t / taps, i = (t % taps) / job->kw, j = t % job->kw;
    const int64_t shift = j * job->dilation[1] - job->padding[1];
    taps8->xc[k] = (const float*)(const void*)job->x + c * job->xs[1] + shift;
    taps8->ih_base[k] = i * job->dilation[0] - job->padding[0];
    taps8->lo[k] = shift >= 0 ? 0 : -shift;
    taps8->hi[k] = job->w - shift; /* stride 1: output column ow reads input column ow + shift */
  }
}

/* Whether all eight taps read inside the input at output columns [ow, ow + 8) of row oh of
 * `image`; their eight source rows when they do. */
static bool ct_c2bw_taps8_inside(const ct_c2bw_job* job, const ct_c2bw_taps8* taps8, int64_t image,
                                 int64_t oh, int64_t ow, const float* src[8]) {
  if (image >= job->n) return false;
  for (int k = 0; k < 8; ++k) {
    const int64_t ih = oh * job->stride[0] + taps8->ih_base[k];
    if (ih < 0 || ih >= job->h || ow < taps8->lo[k] || ow + 8 > taps8->hi[k]) return false;
    src[k] = taps8->xc[k] + image * job->xs[0] + ih * job->xs[2] + ow;
  }
  return true;
}

/* The eight taps at `count` (at most 8) output columns from ow on, in row oh of `image`, one
 * element at a time: the input value, or zero outside the input. */
static void ct_c2bw_taps8_scalar(const ct_c2bw_job* job, const ct_c2bw_taps8* taps8, int64_t image,
                                 int64_t oh, int64_t ow, int64_t count, float* d, int64_t nr) {
  for (int k = 0; k < 8; ++k) {
    const int64_t ih = oh * job->stride[0] + taps8->ih_base[k];
    const bool row = image < job->n && ih >= 0 && ih < job->h;
    const float* src = row ? taps8->xc[k] + image * job->xs[0] + ih * job->xs[2] : NULL;
    for (int64_t m = 0; m < count; ++m) {
      const int64_t col = ow + m;
      d[m * nr + k] = row && col >= taps8->lo[k] && col < taps8->hi[k] ? src[col] : 0.0f;
    }
  }
}

#if defined(__GNUC__) && defined(__x86_64__) && !defined(CT_NO_ISA_VARIANTS)
#include <immintrin.h>
/* Eight rows of eight floats (one per tap) transposed into eight panel rows (one per position)
 * at d, d + nr, ...: the micro-panels' layout. AVX2; called only when the CPU has it. */
__attribute__((target("avx2"))) static void ct_c2bw_tile_8x8(const float* const src[8], float* d,
                                                             int64_t nr) {
  const __m256 r0 = _mm256_loadu_ps(src[0]), r1 = _mm256_loadu_ps(src[1]);
  const __m256 r2 = _mm256_loadu_ps(src[2]), r3 = _mm256_loadu_ps(src[3]);
  const __m256 r4 = _mm256_loadu_ps(src[4]), r5 = _mm256_loadu_ps(src[5]);
  const __m256 r6 = _mm256_loadu_ps(src[6]), r7 = _mm256_loadu_ps(src[7]);
  const __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
  const __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
  const __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
  const __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
  const __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xEE);
  const __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xEE);
  const __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xEE);
  const __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  _mm256_storeu_ps(d + 0 * nr, _mm256_permute2f128_ps(s0, s4, 0x20));
  _mm256_storeu_ps(d + 1 * nr, _mm256_permute2f128_ps(s1, s5, 0x20));
  _mm256_storeu_ps(d + 2 * nr, _mm256_permute2f128_ps(s2, s6, 0x20));
  _mm256_storeu_ps(d + 3 * nr, _mm256_permute2f128_ps(s3, s7, 0x20));
  _mm256_storeu_ps(d + 4 * nr, _mm256_permute2f128_ps(s0, s4, 0x31));
  _mm256_storeu_ps(d + 5 * nr, _mm256_permute2f128_ps(s1, s5, 0x31));
  _mm256_storeu_ps(d + 6 * nr, _mm256_permute2f128_ps(s2, s6, 0x31));
  _mm256_storeu_ps(d + 7 * nr, _mm256_permute2f128_ps(s3, s7, 0x31));
}

/* The 8 x 8 transpose of ct_c2bw_tile_8x8 on registers, its first `count` rows stored. */
__attribute__((target("avx512f,avx512vl"), always_inline)) static inline void ct_c2bw_transpose8(
    const __m256 r[8], float* d, int64_t nr, int64_t count) {
  const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
  const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
  const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
  const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
  const __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xEE);
  const __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xEE);
  const __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xEE);
  const __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  if (count == 8) {
    _mm256_storeu_ps(d + 0 * nr, _mm256_permute2f128_ps(s0, s4, 0x20));
    _mm256_storeu_ps(d + 1 * nr, _mm256_permute2f128_ps(s1, s5, 0x20));
    _mm256_storeu_ps(d + 2 * nr, _mm256_permute2f128_ps(s2, s6, 0x20));
    _mm256_storeu_ps(d + 3 * nr, _mm256_permute2f128_ps(s3, s7, 0x20));
    _mm256_storeu_ps(d + 4 * nr, _mm256_permute2f128_ps(s0, s4, 0x31));
    _mm256_storeu_ps(d + 5 * nr, _mm256_permute2f128_ps(s1, s5, 0x31));
    _mm256_storeu_ps(d + 6 * nr, _mm256_permute2f128_ps(s2, s6, 0x31));
    _mm256_storeu_ps(d + 7 * nr, _mm256_permute2f128_ps(s3, s7, 0x31));
    return;
  }
  const __m256 o[8] = {_mm256_permute2f128_ps(s0, s4, 0x20), _mm256_permute2f128_ps(s1, s5, 0x20),
                       _mm256_permute2f128_ps(s2, s6, 0x20), _mm256_permute2f128_ps(s3, s7, 0x20),
                       _mm256_permute2f128_ps(s0, s4, 0x31), _mm256_permute2f128_ps(s1, s5, 0x31),
                       _mm256_permute2f128_ps(s2, s6, 0x31), _mm256_permute2f128_ps(s3, s7, 0x31)};
  for (int64_t m = 0; m < count; ++m) _mm256_storeu_ps(d + m * nr, o[m]);
}

/* Eight taps at the `seg` positions from (image, oh, ow) on, in one output row, into panel rows
 * d, d + nr, ...: each tap's source row found once, then 8 positions at a time, plain loads where
 * all eight taps read inside the input, else each tap's row read under a mask of the columns
 * inside (zero in the padding rows and past the last image), transposed in registers. AVX-512VL;
 * called only when the CPU has it. The border tiles and rows shorter than 8 (7 x 7 images) went
 * element by element before. */
#define CT_C2BW_HAS_MASKED_TILE 1
__attribute__((target("avx512f,avx512vl"))) static void ct_c2bw_tile_row_masked(
    const ct_c2bw_job* job, const ct_c2bw_taps8* taps8, int64_t image, int64_t oh, int64_t ow,
    int64_t seg, float* d, int64_t nr) {
  const float* row[8];
  int64_t lo = 0, hi = ow + seg;
  bool all_rows = image < job->n;
  for (int k = 0; k < 8; ++k) {
    const int64_t ih = oh * job->stride[0] + taps8->ih_base[k];
    const bool in = image < job->n && ih >= 0 && ih < job->h;
    row[k] = in ? taps8->xc[k] + image * job->xs[0] + ih * job->xs[2] : NULL;
    all_rows = all_rows && in;
    if (taps8->lo[k] > lo) lo = taps8->lo[k];
    if (taps8->hi[k] < hi) hi = taps8->hi[k];
  }
  for (int64_t u = 0; u < seg; u += 8) {
    const int64_t col = ow + u, count = seg - u < 8 ? seg - u : 8;
    __m256 r[8];
    if (all_rows && count == 8 && col >= lo && col + 8 <= hi) {
      for (int k = 0; k < 8; ++k) r[k] = _mm256_loadu_ps(row[k] + col);
    } else {
      for (int k = 0; k < 8; ++k) {
        int64_t a = taps8->lo[k] - col, b = taps8->hi[k] - col;
        if (a < 0) a = 0;
        if (b > count) b = count;
        if (!row[k] || b <= a) {
          r[k] = _mm256_setzero_ps();
          continue;
        }
        /* the first lane read is column col + a: the pointer stays inside the row */
        r[k] = _mm256_maskz_loadu_ps((__mmask8)((1u << (b - a)) - 1), row[k] + col + a);
        if (a) {
          const __m256i shift = _mm256_sub_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
                                                 _mm256_set1_epi32((int)a));
          r[k] = _mm256_maskz_permutexvar_ps((__mmask8)(0xFFu << a), shift, r[k]);
        }
      }
    }
    ct_c2bw_transpose8(r, d + u * nr, nr, count);
  }
}
#else
static void ct_c2bw_tile_8x8(const float* const src[8], float* d, int64_t nr) {
  for (int m = 0; m < 8; ++m) {
    for (int k = 0; k < 8; ++k) d[m * nr + k] = src[k][m];
  }
}
#define CT_C2BW_HAS_MASKED_TILE 0
static void ct_c2bw_tile_row_masked(const ct_c2bw_job* job, const ct_c2bw_taps8* taps8,
                                    int64_t image, int64_t oh, int64_t ow, int64_t seg, float* d,
                                    int64_t nr) {
  ct_c2bw_taps8_scalar(job, taps8, image, oh, ow, seg, d, nr);
}
#endif

static bool ct_c2bw_weight_empty(const ct_c2bw_job* job) {
  return job->out_channels == 0 || job->kg == 0;
}

static uint64_t ct_c2bw_weight_fixed(const ct_c2bw_job* job) {
  return (uint64_t)(job->gout_bytes + job->acc_bytes);
}

/* (SFX, T, C, GEMM): storage type, compute type, the GEMM instance over C. */
#define CT_C2BW_DEFINE(SFX, T, C, GEMM)                                                            \
  /* Tap t (of group `group`) at `count` positions from (image, oh, ow) on, into d[u · nr]: the   \
   * input value, or zero in the padding and past the last image. */                               \
  static void ct_c2bw_pack_tap_##SFX(const ct_c2bw_job* job, int64_t group, int64_t t,             \
                                     int64_t image, int64_t oh, int64_t ow, int64_t count, C* d,   \
                                     int64_t nr) {                                                 \
    const int64_t taps = job->kh * job->kw, sw = job->stride[1];                                   \
    const int64_t step = sw * job->xs[3];                                                          \
    const int64_t c = group * job->cg + t / taps, i = (t % taps) / job->kw, j = t % job->kw;       \
    const int64_t shift = j * job->dilation[1] - job->padding[1];                                  \
    int64_t lo, hi;                                                                                \
    ct_conv_valid_range(shift, sw, job->w, job->ow, &lo, &hi);                                     \
    const T* xc = (const T*)job->x + c * job->xs[1] + shift * job->xs[3];                          \
    const int64_t ih_base = i * job->dilation[0] - job->padding[0];                                \
    for (int64_t p = 0; p < count;) {                                                              \
      const int64_t seg = count - p < job->ow - ow ? count - p : job->ow - ow;                     \
      C* ds = d + p * nr;                                                                          \
      const int64_t ih = oh * job->stride[0] + ih_base;                                            \
      if (ih < 0 || ih >= job->h || image >= job->n) { /* padding, or past the last image */       \
        for (int64_t u = 0; u < seg; ++u) ds[u * nr] = (C)0;                                       \
      } else {                                                                                     \
        int64_t a = lo - ow, b = hi - ow;                                                          \
        a = a < 0 ? 0 : (a > seg ? seg : a);                                                       \
        b = b < a ? a : (b > seg ? seg : b);                                                       \
        const T* src = xc + image * job->xs[0] + ih * job->xs[2] + ow * step;                      \
        for (int64_t u = 0; u < a; ++u) ds[u * nr] = (C)0;                                         \
        if (step == 1) {                                                                           \
          for (int64_t u = a; u < b; ++u) ds[u * nr] = ct_load_##SFX(src[u]);                      \
        } else {                                                                                   \
          for (int64_t u = a; u < b; ++u) ds[u * nr] = ct_load_##SFX(src[u * step]);               \
        }                                                                                          \
        for (int64_t u = b; u < seg; ++u) ds[u * nr] = (C)0;                                       \
      }                                                                                            \
      p += seg;                                                                                    \
      ow += seg;                                                                                   \
      if (ow == job->ow) {                                                                         \
        ow = 0;                                                                                    \
        if (++oh == job->oh) {                                                                     \
          oh = 0;                                                                                  \
          ++image;                                                                                 \
        }                                                                                          \
      }                                                                                            \
    }                                                                                              \
  }                                                                                                \
                                                                                                   \
  /* The GEMM's B packer (ct_gemm_pack_b_fn): B = colᵀ of group `batch`, rows [k0, k0 + kc) the  \
   * positions (image, oh, ow) of all images, columns [j0, j0 + nb) the taps (c, i, j). In         \
   * blocks of CT_C2BW_PACK_ROWS positions, whose rows of the micro-panels stay in L1: float32     \
   * with unit column steps 8 taps x 8 positions at a time where all 64 lie inside the input       \
   * (ct_c2bw_tile_8x8: 8 row loads, a transpose, 8 panel-row stores), the rest tap by tap, each   \
   * reading its input rows in order and writing its column of the micro-panel. */                 \
  static void ct_c2bw_pack_col_##SFX(const void* context, int64_t batch, int64_t k0, int64_t kc,   \
                                     int64_t j0, int64_t nb, int64_t nr, void* dst_void) {         \
    const ct_c2bw_job* job = context;                                                              \
    C* dst = dst_void;                                                                             \
    const int64_t group = batch % job->groups;                                                     \
    k0 += batch / job->groups * job->chunk; /* the chunk's first position */                       \
    const bool tiles = sizeof(T) == sizeof(float) && sizeof(C) == sizeof(float) &&                 \
                       job->stride[1] == 1 && job->xs[3] == 1 && nr % 8 == 0 &&                    \
                       ct_cpu_isa() >= CT_CPU_ISA_AVX2;                                            \
    const bool masked = tiles && CT_C2BW_HAS_MASKED_TILE && ct_cpu_isa() == CT_CPU_ISA_AVX512;     \
    for (int64_t pb = 0; pb < kc; pb += CT_C2BW_PACK_ROWS) {                                       \
      const int64_t rows = kc - pb < CT_C2BW_PACK_ROWS ? kc - pb : CT_C2BW_PACK_ROWS;              \
      const int64_t q0 = k0 + pb;                                                                  \
      const int64_t first_image = q0 / job->p, first_oh = (q0 % job->p) / job->ow;                 \
      const int64_t first_ow = q0 % job->ow;                                                       \
      int64_t jj = 0;                                                                              \
      for (; tiles && jj + 8 <= nb; jj += 8) { /* 8 taps of one micro-panel */                     \
        C* d = dst + (jj / nr) * kc * nr + pb * nr + jj % nr;                                      \
        ct_c2bw_taps8 taps8;                                                                       \
        ct_c2bw_taps8_of(job, group, j0 + jj, &taps8);                                             \
        int64_t image = first_image, oh = first_oh, ow = first_ow;                                 \
        for (int64_t p = 0; p < rows;) {                                                           \
          const int64_t seg = rows - p < job->ow - ow ? rows - p : job->ow - ow;                   \
          int64_t u = 0;                                                                           \
          if (masked) {                                                                            \
            ct_c2bw_tile_row_masked(job, &taps8, image, oh, ow, seg, (float*)(void*)(d + p * nr),  \
                                    nr);                                                           \
            u = seg;                                                                               \
          }                                                                                        \
          for (; u + 8 <= seg; u += 8) {                                                           \
            const float* src[8];                                                                   \
            if (ct_c2bw_taps8_inside(job, &taps8, image, oh, ow + u, src)) {                       \
              ct_c2bw_tile_8x8(src, (float*)(void*)(d + (p + u) * nr), nr);                        \
            } else {                                                                               \
              ct_c2bw_taps8_scalar(job, &taps8, image, oh, ow + u, 8,                              \
                                   (float*)(void*)(d + (p + u) * nr), nr);                         \
            }                                                                                      \
          }                                                                                        \
          if (u < seg) {                                                                           \
            ct_c2bw_taps8_scalar(job, &taps8, image, oh, ow + u, seg - u,                          \
                                 (float*)(void*)(d + (p + u) * nr), nr);                           \
          }                                                                                        \
          p += seg;                                                                                \
          ow += seg;                                                                               \
          if (ow == job->ow) {                                                                     \
            ow = 0;                                                                                \
            if (++oh == job->oh) {                                                                 \
              oh = 0;                                                                              \
              ++image;                                                                             \
            }                                                                                      \
          }                                                                                        \
        }                                                                                          \
      }                                                                                            \
      for (; jj < nb; ++jj) {                                                                      \
        ct_c2bw_pack_tap_##SFX(job, group, j0 + jj, first_image, first_oh, first_ow, rows,         \
                               dst + (jj / nr) * kc * nr + pb * nr + jj % nr, nr);                 \
      }                                                                                            \
    }                                                                                              \
    const int64_t tail = (nb + nr - 1) / nr * nr;                                                  \
    for (int64_t jj = nb; jj < tail; ++jj) {                                                       \
      C* d = dst + (jj / nr) * kc * nr + jj % nr;                                                  \
      for (int64_t p = 0; p < kc; ++p) d[p * nr] = (C)0;                                           \
    }                                                                                              \
  }                                                                                                \
                                                                                                   \
  /* grad_out channels [begin, end), all images side by side, compact, of type C. */               \
  static void ct_c2bw_pack_grad_##SFX(int64_t begin, int64_t end, void* context) {                 \
    const ct_c2bw_job* job = context;                                                              \
    for (int64_t o = begin; o < end; ++o) {                                                        \
      C* dst = (C*)job->gout + o * job->padded;                                                    \
      for (int64_t image = 0; image < job->n; ++image) {                                           \
        const T* g = (const T*)job->grad + image * job->gs[0] + o * job->gs[1];                    \
        for (int64_t oh = 0; oh < job->oh; ++oh) {                                                 \
          const T* src = g + oh * job->gs[2];                                                      \
          if (job->gs[3] == 1) {                                                                   \
            for (int64_t ow = 0; ow < job->ow; ++ow) dst[ow] = ct_load_##SFX(src[ow]);             \
          } else {                                                                                 \
            for (int64_t ow = 0; ow < job->ow; ++ow)                                               \
              dst[ow] = ct_load_##SFX(src[ow * job->gs[3]]);                                       \
          }                                                                                        \
          dst += job->ow;                                                                          \
        }                                                                                          \
      }                                                                                            \
      for (int64_t q = job->depth; q < job->padded; ++q) *dst++ = (C)0;                            \
    }                                                                                              \
  }                                                                                                \
                                                                                                   \
  /* grad_weight rows (output channels) [begin, end) from acc (zeros when the depth is 0). */      \
  static void ct_c2bw_store_##SFX(int64_t begin, int64_t end, void* context) {                     \
    const ct_c2bw_job* job = context;                                                              \
    for (int64_t o = begin; o < end; ++o) {                                                        \
      const C* src = job->depth > 0 ? (const C*)job->acc + o * job->kg : NULL;                     \
      const int64_t chunk_stride = job->out_channels * job->kg;                                    \
      T* w = (T*)job->out + o * job->ws[0];                                                        \
      for (int64_t c = 0; c < job->cg; ++c) {                                                      \
        for (int64_t i = 0; i < job->kh; ++i) {                                                    \
          T* dst = w + c * job->ws[1] + i * job->ws[2];                                            \
          for (int64_t j = 0; j < job->kw; ++j, src = src ? src + 1 : NULL) {                      \
            C sum = (C)0;                                                                          \
            for (int64_t k = 0; src && k < job->chunks; ++k) sum += src[k * chunk_stride];         \
            dst[j * job->ws[3]] = ct_store_##SFX(sum);                                             \
          }                                                                                        \
        }                                                                                          \
      }                                                                                            \
    }                                                                                              \
  }                                                                                                \
                                                                                                   \
  static int ct_cpu_conv2d_backward_weight_workspace_##SFX(const ct_kernel_call* call,             \
                                                           uint64_t* bytes, uint64_t* alignment) { \
    ct_c2bw_job job;                                                                               \
    const int status = ct_c2bw_weight_prepare(call, (int64_t)sizeof(C), &job);                     \
    if (status != CT_OK) return status;                                                            \
    *alignment = CT_C2BW_ALIGNMENT;                                                                \
    job.gemm.pack_b = ct_c2bw_pack_col_##SFX;                                                      \
    *bytes = ct_c2bw_weight_empty(&job) || job.depth == 0                                          \
                 ? 0                                                                               \
                 : ct_c2bw_weight_fixed(&job) + ct_gemm_workspace_##GEMM(&job.gemm);               \
    return CT_OK;                                                                                  \
  }                                                                                                \
                                                                                                   \
  static int ct_cpu_conv2d_backward_weight_##SFX(const ct_kernel_call* call) {                     \
    ct_c2bw_job job;                                                                               \
    const int status = ct_c2bw_weight_prepare(call, (int64_t)sizeof(C), &job);                     \
    if (status != CT_OK) return status;                                                            \
    if (ct_c2bw_weight_empty(&job)) return CT_OK;                                                  \
    /* grad_weight's rows (c, i, j) compact: no pass adding up chunks and storing */               \
    const bool direct = job.depth > 0 && job.chunks == 1 && sizeof(T) == sizeof(C) &&              \
                        job.ws[3] == 1 && job.ws[2] == job.kw && job.ws[1] == job.kh * job.kw;     \
    if (job.depth > 0) {                                                                           \
      char* ws = call->workspace;                                                                  \
      job.gout = ws;                                                                               \
      job.acc = ws + job.gout_bytes;                                                               \
      ct_gemm_desc* d = &job.gemm;                                                                 \
      d->a = job.gout;                                                                             \
      d->c = job.acc;                                                                              \
      if (direct) { /* one chunk of float32/float64 sums: the GEMM writes grad_weight */           \
        d->c = job.out;                                                                            \
        d->c_rs = job.ws[0];                                                                       \
        job.c_bs[0] = 0;                                                                           \
        job.c_bs[1] = job.og * job.ws[0];                                                          \
      }                                                                                            \
      d->pack_b = ct_c2bw_pack_col_##SFX;                                                          \
      d->pack_b_context = &job;                                                                    \
      d->workspace = ws + ct_c2bw_weight_fixed(&job);                                              \
      d->workspace_size = call->workspace_size - ct_c2bw_weight_fixed(&job);                       \
      ct_cpu_parallel_for(job.out_channels, job.padded, ct_c2bw_pack_grad_##SFX, &job);            \
      ct_gemm_##GEMM(d);                                                                           \
    }                                                                                              \
    if (!direct) {                                                                                 \
      ct_cpu_parallel_for(job.out_channels, job.kg * job.chunks, ct_c2bw_store_##SFX, &job);       \
    }                                                                                              \
    return CT_OK;                                                                                  \
  }                                                                                                \
                                                                                                   \
  /* conv2d_backward_input */                                                                      \
  static int ct_cpu_conv2d_backward_input_workspace_##SFX(const ct_kernel_call* call,              \
                                                          uint64_t* bytes, uint64_t* alignment) {  \
    ct_c2bw_inner inner;                                                                           \
    int status = ct_c2bw_input_inner(call, (int64_t)sizeof(T), &inner);                            \
    if (status != CT_OK) return status;                                                            \
    status = inner.flip ? ct_cpu_conv2d_workspace_##SFX(&inner.call, bytes, alignment)             \
                        : ct_cpu_ct2d_workspace_##SFX(&inner.call, bytes, alignment);              \
    if (status != CT_OK) return status;                                                            \
    *bytes += (uint64_t)inner.weight_bytes;                                                        \
    if (*alignment < CT_C2BW_ALIGNMENT) *alignment = CT_C2BW_ALIGNMENT;                            \
    return CT_OK;                                                                                  \
  }                                                                                                \
                                                                                                   \
  static int ct_cpu_conv2d_backward_input_##SFX(const ct_kernel_call* call) {                      \
    ct_c2bw_inner inner;                                                                           \
    const int status = ct_c2bw_input_inner(call, (int64_t)sizeof(T), &inner);                      \
    if (status != CT_OK) return status;                                                            \
    if (!inner.flip) return ct_cpu_conv_transpose2d_##SFX(&inner.call);                            \
    ct_c2bw_flip flip = {call->inputs[2], call->attrs[3].value.i, inner.weight_shape[1],           \
                         call->workspace};                                                         \
    const ct_tensor* weight = call->inputs[2];                                                     \
    ct_cpu_parallel_for(weight->shape[1] * flip.groups,                                            \
                        flip.og * weight->shape[2] * weight->shape[3], ct_c2bw_flip_rows, &flip);  \
    T* wt = call->workspace;                                                                       \
    inner.weight.data = wt;                                                                        \
    inner.call.workspace = (char*)call->workspace + inner.weight_bytes;                            \
    inner.call.workspace_size = call->workspace_size - (uint64_t)inner.weight_bytes;               \
    return ct_cpu_conv2d_##SFX(&inner.call);                                                       \
  }                                                                                                \
                                                                                                   \
  /* conv_transpose2d_backward_input */                                                            \
  static int ct_cpu_ct2d_backward_input_workspace_##SFX(const ct_kernel_call* call,                \
                                                        uint64_t* bytes, uint64_t* alignment) {    \
    ct_c2bw_inner inner;                                                                           \
    ct_c2bw_transpose_inner(call, &inner);                                                         \
    return ct_cpu_conv2d_workspace_##SFX(&inner.call, bytes, alignment);                           \
  }                                                                                                \
                                                                                                   \
  static int ct_cpu_ct2d_backward_input_##SFX(const ct_kernel_call* call) {                        \
    ct_c2bw_inner inner;                                                                           \
    ct_c2bw_transpose_inner(call, &inner);                                                         \
    return ct_cpu_conv2d_##SFX(&inner.call);                                                       \
  }

#define CT_C2BW_REG(SFX, T, C, GEMM, ID)              \
  {"conv2d_backward_input",                           \
   4,                                                 \
   {ID, ID, ID, ID},                                  \
   ct_cpu_conv2d_backward_input_##SFX,                \
   ct_cpu_conv2d_backward_input_workspace_##SFX,      \
   NULL},                                             \
      {"conv2d_backward_weight",                      \
       4,                                             \
       {ID, ID, ID, ID},                              \
       ct_cpu_conv2d_backward_weight_##SFX,           \
       ct_cpu_conv2d_backward_weight_workspace_##SFX, \
       NULL},                                         \
      {"conv_transpose2d_backward_input",             \
       4,                                             \
       {ID, ID, ID, ID},                              \
       ct_cpu_ct2d_backward_input_##SFX,              \
       ct_cpu_ct2d_backward_input_workspace_##SFX,    \
       NULL},

#define CT_C2BW_TYPES(X)                    \
  X(f16, uint16_t, float, f32, CT_DT_F16)   \
  X(bf16, uint16_t, float, f32, CT_DT_BF16) \
  X(f32, float, float, f32, CT_DT_F32)      \
  X(f64, double, double, f64, CT_DT_F64)

#define CT_C2BW_DEFINE_5(SFX, T, C, GEMM, ID) CT_C2BW_DEFINE(SFX, T, C, GEMM)
CT_C2BW_TYPES(CT_C2BW_DEFINE_5)

static const ct_cpu_kernel ct_cpu_conv2d_backward_kernels[] = {CT_C2BW_TYPES(CT_C2BW_REG)};

int ct_cpu_register_conv2d_backward(void) {
  return ct_cpu_register_all(ct_cpu_conv2d_backward_kernels,
                             CT_CPU_KERNEL_COUNT(ct_cpu_conv2d_backward_kernels));
}
