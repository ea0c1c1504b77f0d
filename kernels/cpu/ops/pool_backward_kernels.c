/* pool_backward_kernels.c - max_pool2d_backward, avg_pool2d_backward,
 * adaptive_avg_pool2d_backward over (N, C, H, W) or (C, H, W), as torch's CPU kernels.
 *
 * Each (image, channel) plane runs on its own (planes in parallel): the plane of grad_input is
 * zeroed, then every output position adds its grad_out to the input positions of its window
 * (the window's maximum for max_pool2d, found with the forward's rule: the first maximum in
 * row-major order, a later NaN replacing it; every position, times 1 / divisor, for the
 * averages). The sums accumulate in the compute type: float32 and float64 in grad_input itself,
 * float16 and bfloat16 in a float32 copy of grad_input in the workspace, rounded once at the
 * end. max_pool2d with windows that do not overlap (stride >= the dilated kernel) writes each
 * row of grad_input once instead: zeros, and grad_out at each window's maximum. */
#include <math.h>
#include <string.h>

#include "cpu_register.h"
#include "engine/cpu_dtypes.h"
#include "engine/cpu_isa.h"
#include "engine/strided_iter.h"
#include "ops/pool_window.h"

typedef struct ct_pool_bw_job {
  ct_pool_mode mode;
  int64_t channels, h, w, oh, ow;
  int64_t xs[4], gs[4], is[4]; /* input, grad_out, grad_input (N, C, H, W); N stride 0 for 3-D */
  ct_pool_window window;
  const char *x, *grad;
  char* out;
  float* acc; /* float16/bfloat16: the float32 grad_input planes (H · W each) */
} ct_pool_bw_job;

static void ct_pool_bw_prepare(const ct_kernel_call* call, ct_pool_mode mode, ct_pool_bw_job* job) {
  const ct_tensor* grad = call->inputs[0];
  const ct_tensor* x = call->inputs[1];
  const ct_tensor* out = call->outputs[0];
  const int32_t lead = x->ndim - 3;
  job->mode = mode;
  job->channels = x->shape[lead];
  job->h = x->shape[lead + 1];
  job->w = x->shape[lead + 2];
  job->oh = grad->shape[lead + 1];
  job->ow = grad->shape[lead + 2];
  job->xs[0] = lead ? ct_tensor_stride(x, 0) : 0;
  job->gs[0] = lead ? ct_tensor_stride(grad, 0) : 0;
  job->is[0] = lead ? ct_tensor_stride(out, 0) : 0;
  for (int32_t k = 1; k < 4; ++k) {
    job->xs[k] = ct_tensor_stride(x, lead + k - 1);
    job->gs[k] = ct_tensor_stride(grad, lead + k - 1);
    job->is[k] = ct_tensor_stride(out, lead + k - 1);
  }
  job->x = ct_tensor_base(x);
  job->grad = ct_tensor_base(grad);
  job->out = ct_tensor_base(out);
  job->acc = NULL;
  ct_pool_read_window(call->attrs, mode, &job->window);
}

static int64_t ct_pool_bw_planes(const ct_kernel_call* call, const ct_pool_bw_job* job) {
  const ct_tensor* x = call->inputs[1];
  return (x->ndim == 4 ? x->shape[0] : 1) * job->channels;
}

/* Windows that do not overlap, in both dims: each input position is in at most one window. */
static bool ct_pool_bw_disjoint(const ct_pool_bw_job* job) {
  return job->window.stride[0] >= (job->window.kernel[0] - 1) * job->window.dilation[0] + 1 &&
         job->window.stride[1] >= (job->window.kernel[1] - 1) * job->window.dilation[1] + 1;
}

/* Window [h0, h1) x [w0, w1) of avg_pool2d or adaptive_avg_pool2d output (oh, ow), clipped to the
 * input, and its divisor, as the forward. */
static void ct_pool_bw_avg_window(const ct_pool_bw_job* job, int64_t oh, int64_t ow, int64_t* h0,
                                  int64_t* h1, int64_t* w0, int64_t* w1, int64_t* divide_h,
                                  int64_t* divide_w, double* divide) {
  if (job->mode == CT_POOL_ADAPTIVE) {
    ct_pool_adaptive_window(oh, job->h, job->oh, h0, h1);
    ct_pool_adaptive_window(ow, job->w, job->ow, w0, w1);
    *divide_h = *h1 - *h0;
    *divide_w = *w1 - *w0;
    *divide = 0;
    return;
  }
  *h0 = oh * job->window.stride[0] - job->window.padding[0];
  *w0 = ow * job->window.stride[1] - job->window.padding[1];
  *h1 = *h0 + job->window.kernel[0] < job->h + job->window.padding[0]
            ? *h0 + job->window.kernel[0]
            : job->h + job->window.padding[0];
  *w1 = *w0 + job->window.kernel[1] < job->w + job->window.padding[1]
            ? *w0 + job->window.kernel[1]
            : job->w + job->window.padding[1];
  /* the window with its padding: its product may overflow int64 */
  const double pool_size = CT_POOL_WINDOW_SIZE(double, *h1 - *h0, *w1 - *w0);
  if (*h0 < 0) *h0 = 0;
  if (*w0 < 0) *w0 = 0;
  if (*h1 > job->h) *h1 = job->h;
  if (*w1 > job->w) *w1 = job->w;
  *divide = job->window.has_divisor         ? (double)job->window.divisor
            : job->window.count_include_pad ? pool_size
                                            : (double)((*h1 - *h0) * (*w1 - *w0));
  *divide_h = *divide_w = 0;
}

/* The flat offset (ih · W + iw) of the maximum of max_pool2d's window of output (oh, ow), as the
 * forward finds it; -1 for a window of padding only (dilation or ceil_mode can make one): its
 * output is -inf whatever the input, so its cotangent goes nowhere (torch reads past the window
 * there). */
#define CT_POOL_BW_ARGMAX(SFX, T, C)                                                               \
  static inline int64_t ct_pool_bw_argmax_##SFX(const ct_pool_bw_job* job, const T* x, int64_t oh, \
                                                int64_t ow) {                                      \
    const int64_t dh = job->window.dilation[0], dw = job->window.dilation[1];                      \
    int64_t h0 = oh * job->window.stride[0] - job->window.padding[0];                              \
    int64_t w0 = ow * job->window.stride[1] - job->window.padding[1];                              \
    const int64_t h1 = h0 + (job->window.kernel[0] - 1) * dh + 1 < job->h                          \
                           ? h0 + (job->window.kernel[0] - 1) * dh + 1                             \
                           : job->h;                                                               \
    const int64_t w1 = w0 + (job->window.kernel[1] - 1) * dw + 1 < job->w                          \
                           ? w0 + (job->window.kernel[1] - 1) * dw + 1                             \
                           : job->w;                                                               \
    h0 = ct_pool_first_tap(h0, dh);                                                                \
    w0 = ct_pool_first_tap(w0, dw);                                                                \
    if (h0 >= h1 || w0 >= w1) return -1; /* only padding: the output is -inf, a constant */        \
    int64_t best = h0 * job->w + w0;                                                               \
    C result = (C) - INFINITY;                                                                     \
    for (int64_t ih = h0; ih < h1; ih = ct_pool_next_tap(ih, dh, h1)) {                            \
      const T* row = x + ih * job->xs[2];                                                          \
      for (int64_t iw = w0; iw < w1; iw = ct_pool_next_tap(iw, dw, w1)) {                          \
        const C v = ct_load_##SFX(row[iw * job->xs[3]]);                                           \
        if (v > result || isnan(v)) {                                                              \
          result = v;                                                                              \
          best = ih * job->w + iw;                                                                 \
        }                                                                                          \
      }                                                                                            \
    }                                                                                              \
    return best;                                                                                   \
  }

#if defined(__GNUC__) && defined(__x86_64__) && !defined(CT_NO_ISA_VARIANTS)
#include <immintrin.h>
/* max_pool2d_backward's 2 x 2, stride 2 row for float32, eight windows at a time with AVX2: the
 * windows' (a, b) and (c, d) pairs de-interleaved (in the lane order 0 1 4 5 2 3 6 7, which
 * grad_out is permuted to and the stores undo), the forward's rule as masks (a later value wins
 * when greater or NaN), grad_out where a mask holds and +0 elsewhere. Returns the windows done
 * (a multiple of 8); the caller finishes the row. */
__attribute__((target("avx2"), always_inline)) static inline int64_t ct_pool_bw_max_2x2_avx_f32(
    const float* x0, const float* x1, const float* g, float* r0, float* r1, int64_t count) {
  int64_t j = 0;
  for (; j + 8 <= count; j += 8) {
    const __m256 p0 = _mm256_loadu_ps(x0 + 2 * j), q0 = _mm256_loadu_ps(x0 + 2 * j + 8);
    const __m256 p1 = _mm256_loadu_ps(x1 + 2 * j), q1 = _mm256_loadu_ps(x1 + 2 * j + 8);
    const __m256 a = _mm256_shuffle_ps(p0, q0, 0x88), b = _mm256_shuffle_ps(p0, q0, 0xDD);
    const __m256 c = _mm256_shuffle_ps(p1, q1, 0x88), d = _mm256_shuffle_ps(p1, q1, 0xDD);
    const __m256 c1 =
        _mm256_or_ps(_mm256_cmp_ps(b, a, _CMP_GT_OQ), _mm256_cmp_ps(b, b, _CMP_UNORD_Q));
    const __m256 m1 = _mm256_blendv_ps(a, b, c1);
    const __m256 c2 =
        _mm256_or_ps(_mm256_cmp_ps(c, m1, _CMP_GT_OQ), _mm256_cmp_ps(c, c, _CMP_UNORD_Q));
    const __m256 m2 = _mm256_blendv_ps(m1, c, c2);
    const __m256 c3 =
        _mm256_or_ps(_mm256_cmp_ps(d, m2, _CMP_GT_OQ), _mm256_cmp_ps(d, d, _CMP_UNORD_Q));
    const __m256 gv =
        _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_loadu_ps(g + j)), 0xD8));
    const __m256 later = _mm256_or_ps(c2, c3);
    const __m256 w0 = _mm256_andnot_ps(_mm256_or_ps(c1, later), gv);
    const __m256 w1 = _mm256_and_ps(_mm256_andnot_ps(later, c1), gv);
    const __m256 w2 = _mm256_and_ps(_mm256_andnot_ps(c3, c2), gv);
    const __m256 w3 = _mm256_and_ps(c3, gv);
    _mm256_storeu_ps(r0 + 2 * j, _mm256_unpacklo_ps(w0, w1));
    _mm256_storeu_ps(r0 + 2 * j + 8, _mm256_unpackhi_ps(w0, w1));
    _mm256_storeu_ps(r1 + 2 * j, _mm256_unpacklo_ps(w2, w3));
    _mm256_storeu_ps(r1 + 2 * j + 8, _mm256_unpackhi_ps(w2, w3));
  }
  return j;
}

/* One block of sixteen windows of max_pool2d_backward's 2 x 2, stride 2 float32 AVX-512 path:
 * the windows' (a, b) and (c, d) pairs de-interleaved and the results interleaved by two-source
 * permutes, the forward's rule in mask registers; LOAD*, STORE* plain or masked (the row's last
 * windows). */
#define CT_POOL_BW_512_BLOCK(LOADP, LOADQ, LOADG, STOREP, STOREQ)                       \
  do {                                                                                  \
    const __m512 p0 = LOADP(x0 + 2 * j), q0 = LOADQ(x0 + 2 * j + 16);                   \
    const __m512 p1 = LOADP(x1 + 2 * j), q1 = LOADQ(x1 + 2 * j + 16);                   \
    const __m512 a = _mm512_permutex2var_ps(p0, even, q0);                              \
    const __m512 b = _mm512_permutex2var_ps(p0, odd, q0);                               \
    const __m512 c = _mm512_permutex2var_ps(p1, even, q1);                              \
    const __m512 d = _mm512_permutex2var_ps(p1, odd, q1);                               \
    const __mmask16 c1 =                                                                \
        _mm512_cmp_ps_mask(b, a, _CMP_GT_OQ) | _mm512_cmp_ps_mask(b, b, _CMP_UNORD_Q);  \
    const __m512 m1 = _mm512_mask_blend_ps(c1, a, b);                                   \
    const __mmask16 c2 =                                                                \
        _mm512_cmp_ps_mask(c, m1, _CMP_GT_OQ) | _mm512_cmp_ps_mask(c, c, _CMP_UNORD_Q); \
    const __m512 m2 = _mm512_mask_blend_ps(c2, m1, c);                                  \
    const __mmask16 c3 =                                                                \
        _mm512_cmp_ps_mask(d, m2, _CMP_GT_OQ) | _mm512_cmp_ps_mask(d, d, _CMP_UNORD_Q); \
    const __m512 gv = LOADG(gr + j);                                                    \
    const __mmask16 later = c2 | c3;                                                    \
    const __m512 w0 = _mm512_maskz_mov_ps((__mmask16) ~(c1 | later), gv);               \
    const __m512 w1 = _mm512_maskz_mov_ps(c1 & (__mmask16)~later, gv);                  \
    const __m512 w2 = _mm512_maskz_mov_ps(c2 & (__mmask16)~c3, gv);                     \
    const __m512 w3 = _mm512_maskz_mov_ps(c3, gv);                                      \
    STOREP(r0 + 2 * j, _mm512_permutex2var_ps(w0, lo, w1));                             \
    STOREQ(r0 + 2 * j + 16, _mm512_permutex2var_ps(w0, hi, w1));                        \
    STOREP(r1 + 2 * j, _mm512_permutex2var_ps(w2, lo, w3));                             \
    STOREQ(r1 + 2 * j + 16, _mm512_permutex2var_ps(w2, hi, w3));                        \
  } while (0)
#define CT_POOL_BW_512_LOAD(ptr) _mm512_loadu_ps(ptr)
#define CT_POOL_BW_512_STORE(ptr, v) _mm512_storeu_ps(ptr, v)
#define CT_POOL_BW_512_LOADP(ptr) _mm512_maskz_loadu_ps(mp, ptr)
#define CT_POOL_BW_512_LOADQ(ptr) _mm512_maskz_loadu_ps(mq, ptr)
#define CT_POOL_BW_512_LOADG(ptr) _mm512_maskz_loadu_ps(mg, ptr)
#define CT_POOL_BW_512_STOREP(ptr, v) _mm512_mask_storeu_ps(ptr, mp, v)
#define CT_POOL_BW_512_STOREQ(ptr, v) _mm512_mask_storeu_ps(ptr, mq, v)

/* The same with AVX-512 for a whole plane: `rows` output rows of `count` windows (input rows at
 * x + 2 · oh · xs and the next, grad_out rows g + oh · gs, grad_input rows gi + 2 · oh · is and
 * the next, all of unit column stride), sixteen windows at a time and each row's last ones under
 * masks computed once (one call per plane: a call per row cost as much as the row's work). */
__attribute__((target("avx512f"))) static void ct_pool_bw_max_2x2_plane_avx512_f32(
    const float* x, const float* g, float* gi, int64_t rows, int64_t count, int64_t xs, int64_t gs,
    int64_t is) {
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  const __m512i lo = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  const __m512i hi =
      _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
  const int64_t full = count & ~(int64_t)15, rest = count - full;
  const __mmask16 mp = rest >= 8 ? (__mmask16)0xFFFF : (__mmask16)((1u << (2 * rest)) - 1);
  const __mmask16 mq = rest > 8 ? (__mmask16)((1u << (2 * (rest - 8))) - 1) : (__mmask16)0;
  const __mmask16 mg = (__mmask16)((1u << rest) - 1);
  for (int64_t oh = 0; oh < rows; ++oh) {
    const float* x0 = x + 2 * oh * xs;
    const float* x1 = x0 + xs;
    const float* gr = g + oh * gs;
    float* r0 = gi + 2 * oh * is;
    float* r1 = r0 + is;
    int64_t j = 0;
    for (; j < full; j += 16) {
      CT_POOL_BW_512_BLOCK(CT_POOL_BW_512_LOAD, CT_POOL_BW_512_LOAD, CT_POOL_BW_512_LOAD,
                           CT_POOL_BW_512_STORE, CT_POOL_BW_512_STORE);
    }
    if (rest) {
      CT_POOL_BW_512_BLOCK(CT_POOL_BW_512_LOADP, CT_POOL_BW_512_LOADQ, CT_POOL_BW_512_LOADG,
                           CT_POOL_BW_512_STOREP, CT_POOL_BW_512_STOREQ);
    }
  }
}
#define CT_POOL_BW_AVX512_OK 1
#else
static inline int64_t ct_pool_bw_max_2x2_avx_f32(const float* x0, const float* x1, const float* g,
                                                 float* r0, float* r1, int64_t count) {
  (void)x0, (void)x1, (void)g, (void)r0, (void)r1, (void)count;
  return 0;
}
static inline void ct_pool_bw_max_2x2_plane_avx512_f32(const float* x, const float* g, float* gi,
                                                       int64_t rows, int64_t count, int64_t xs,
                                                       int64_t gs, int64_t is) {
  (void)x, (void)g, (void)gi, (void)rows, (void)count, (void)xs, (void)gs, (void)is;
}
#define CT_POOL_BW_AVX512_OK 0
#endif

#define CT_POOL_BW_DEFINE(SFX, T, C, ID)                                                           \
  CT_POOL_BW_ARGMAX(SFX, T, C)                                                                     \
                                                                                                   \
  /* max_pool2d, disjoint windows, grad_input of the storage type written directly: each input     \
   * row once, zeros except at its windows' maxima. */                                             \
  static void ct_pool_bw_max_disjoint_##SFX(const ct_pool_bw_job* job, const T* x, const T* g,     \
                                            T* gi) {                                               \
    const T zero = ct_store_##SFX((C)0);                                                           \
    for (int64_t ih = 0; ih < job->h; ++ih) {                                                      \
      T* row = gi + ih * job->is[2];                                                               \
      for (int64_t iw = 0; iw < job->w; ++iw) row[iw * job->is[3]] = zero;                         \
    }                                                                                              \
    for (int64_t oh = 0; oh < job->oh; ++oh) {                                                     \
      const T* grow = g + oh * job->gs[2];                                                         \
      for (int64_t ow = 0; ow < job->ow; ++ow) {                                                   \
        const int64_t best = ct_pool_bw_argmax_##SFX(job, x, oh, ow);                              \
        if (best < 0) continue;                                                                    \
        const int64_t ih = best / job->w, iw = best % job->w;                                      \
        gi[ih * job->is[2] + iw * job->is[3]] = grow[ow * job->gs[3]];                             \
      }                                                                                            \
    }                                                                                              \
  }                                                                                                \
                                                                                                   \
  /* Windows [begin, end) of one output row of max_pool2d with 2 x 2 windows at stride 2: input    \
   * rows x0, x1 (unit column stride), grad_out row g, grad_input rows r0, r1 written once. */     \
  static CT_CPU_ISA_BODY void ct_pool_bw_max_2x2_tail_##SFX(const T* x0, const T* x1, const T* g,  \
                                                            int64_t gs, T* r0, T* r1,              \
                                                            int64_t begin, int64_t end) {          \
    const T zero = ct_store_##SFX((C)0);                                                           \
    for (int64_t j = begin; j < end; ++j) {                                                        \
      const C a = ct_load_##SFX(x0[2 * j]), b = ct_load_##SFX(x0[2 * j + 1]);                      \
      const C c = ct_load_##SFX(x1[2 * j]), d = ct_load_##SFX(x1[2 * j + 1]);                      \
      int which = 0;                                                                               \
      C best = a;                                                                                  \
      if (b > best || isnan(b)) {                                                                  \
        best = b;                                                                                  \
        which = 1;                                                                                 \
      }                                                                                            \
      if (c > best || isnan(c)) {                                                                  \
        best = c;                                                                                  \
        which = 2;                                                                                 \
      }                                                                                            \
      if (d > best || isnan(d)) which = 3;                                                         \
      const T gv = g[j * gs];                                                                      \
      r0[2 * j] = which == 0 ? gv : zero;                                                          \
      r0[2 * j + 1] = which == 1 ? gv : zero;                                                      \
      r1[2 * j] = which == 2 ? gv : zero;                                                          \
      r1[2 * j + 1] = which == 3 ? gv : zero;                                                      \
    }                                                                                              \
  }                                                                                                \
                                                                                                   \
  /* The same for a whole row, float32 eight windows at a time with AVX2 in the AVX2 and           \
   * AVX-512 copies, the rest one at a time. */                                                    \
  static CT_CPU_ISA_BODY void ct_pool_bw_max_2x2_row_##SFX##_body(                                 \
      const T* x0, const T* x1, const T* g, int64_t gs, T* r0, T* r1, int64_t count) {             \
    ct_pool_bw_max_2x2_tail_##SFX(x0, x1, g, gs, r0, r1, 0, count);                                \
  }                                                                                                \
  CT_CPU_TARGET_AVX2 static CT_CPU_ISA_BODY void ct_pool_bw_max_2x2_row_##SFX##_wide_body(         \
      const T* x0, const T* x1, const T* g, int64_t gs, T* r0, T* r1, int64_t count) {             \
    int64_t done = 0;                                                                              \
    if ((ID) == CT_DT_F32 && gs == 1) {                                                            \
      const float* f0 = (const float*)(const void*)x0;                                             \
      const float* f1 = (const float*)(const void*)x1;                                             \
      const float* fg = (const float*)(const void*)g;                                              \
      float* o0 = (float*)(void*)r0;                                                               \
      float* o1 = (float*)(void*)r1;                                                               \
      done += ct_pool_bw_max_2x2_avx_f32(f0 + 2 * done, f1 + 2 * done, fg + done, o0 + 2 * done,   \
                                         o1 + 2 * done, count - done);                             \
    }                                                                                              \
    ct_pool_bw_max_2x2_tail_##SFX(x0, x1, g, gs, r0, r1, done, count);                             \
  }                                                                                                \
  CT_CPU_ISA_LOOP_WIDE(                                                                            \
      ct_pool_bw_max_2x2_row_##SFX,                                                                \
      (const T* x0, const T* x1, const T* g, int64_t gs, T* r0, T* r1, int64_t count),             \
      (x0, x1, g, gs, r0, r1, count))                                                              \
                                                                                                   \
  /* max_pool2d, 2 x 2 windows with stride 2, no padding, dilation 1, unit column strides, the     \
   * windows inside the input: two input rows per output row, written once. */                     \
  static void ct_pool_bw_max_2x2_##SFX(const ct_pool_bw_job* job, const T* x, const T* g, T* gi) { \
    const T zero = ct_store_##SFX((C)0);                                                           \
    const bool plane512 = CT_POOL_BW_AVX512_OK && (ID) == CT_DT_F32 && job->gs[3] == 1 &&          \
                          ct_cpu_isa() == CT_CPU_ISA_AVX512;                                       \
    if (plane512) {                                                                                \
      ct_pool_bw_max_2x2_plane_avx512_f32((const float*)(const void*)x,                            \
                                          (const float*)(const void*)g, (float*)(void*)gi,         \
                                          job->oh, job->ow, job->xs[2], job->gs[2], job->is[2]);   \
    }                                                                                              \
    for (int64_t oh = 0; oh < job->oh; ++oh) {                                                     \
      const T* x0 = x + 2 * oh * job->xs[2];                                                       \
      T* r0 = gi + 2 * oh * job->is[2];                                                            \
      T* r1 = r0 + job->is[2];                                                                     \
      if (!plane512)                                                                               \
        ct_pool_bw_max_2x2_row_##SFX(x0, x0 + job->xs[2], g + oh * job->gs[2], job->gs[3], r0, r1, \
                                     job->ow);                                                     \
      for (int64_t iw = 2 * job->ow; iw < job->w; ++iw) r0[iw] = r1[iw] = zero;                    \
    }                                                                                              \
    for (int64_t ih = 2 * job->oh; ih < job->h; ++ih) {                                            \
      T* row = gi + ih * job->is[2];                                                               \
      for (int64_t iw = 0; iw < job->w; ++iw) row[iw] = zero;                                      \
    }                                                                                              \
  }                                                                                                \
                                                                                                   \
  static void ct_cpu_pool_bw_planes_##SFX(int64_t begin, int64_t end, void* context) {             \
    const ct_pool_bw_job* job = context;                                                           \
    const bool direct = sizeof(T) == sizeof(C); /* accumulate in grad_input itself */              \
    for (int64_t plane = begin; plane < end; ++plane) {                                            \
      const int64_t n = plane / job->channels, c = plane % job->channels;                          \
      const T* x = (const T*)job->x + n * job->xs[0] + c * job->xs[1];                             \
      const T* g = (const T*)job->grad + n * job->gs[0] + c * job->gs[1];                          \
      T* gi = (T*)job->out + n * job->is[0] + c * job->is[1];                                      \
      if (job->mode == CT_POOL_MAX && ct_pool_bw_disjoint(job)) {                                  \
        if (job->window.kernel[0] == 2 && job->window.kernel[1] == 2 &&                            \
            job->window.stride[0] == 2 && job->window.stride[1] == 2 &&                            \
            job->window.padding[0] == 0 && job->window.padding[1] == 0 &&                          \
            job->window.dilation[0] == 1 && job->window.dilation[1] == 1 && job->xs[3] == 1 &&     \
            job->is[3] == 1 && 2 * job->oh <= job->h && 2 * job->ow <= job->w) {                   \
          ct_pool_bw_max_2x2_##SFX(job, x, g, gi);                                                 \
        } else {                                                                                   \
          ct_pool_bw_max_disjoint_##SFX(job, x, g, gi);                                            \
        }                                                                                          \
        continue;                                                                                  \
      }                                                                                            \
      /* acc[ih · a2 + iw · a3]: grad_input itself, or its float32 plane */                        \
      C* acc = direct ? (C*)(void*)gi : (C*)(void*)(job->acc + plane * job->h * job->w);           \
      const int64_t a2 = direct ? job->is[2] : job->w, a3 = direct ? job->is[3] : 1;               \
      for (int64_t ih = 0; ih < job->h; ++ih) {                                                    \
        for (int64_t iw = 0; iw < job->w; ++iw) acc[ih * a2 + iw * a3] = (C)0;                     \
      }                                                                                            \
      for (int64_t oh = 0; oh < job->oh; ++oh) {                                                   \
        for (int64_t ow = 0; ow < job->ow; ++ow) {                                                 \
          const C gv = ct_load_##SFX(g[oh * job->gs[2] + ow * job->gs[3]]);                        \
          if (job->mode == CT_POOL_MAX) {                                                          \
            const int64_t best = ct_pool_bw_argmax_##SFX(job, x, oh, ow);                          \
            if (best >= 0) acc[best / job->w * a2 + best % job->w * a3] += gv;                     \
            continue;                                                                              \
          }                                                                                        \
          int64_t h0, h1, w0, w1, dh, dw;                                                          \
          double divide;                                                                           \
          ct_pool_bw_avg_window(job, oh, ow, &h0, &h1, &w0, &w1, &dh, &dw, &divide);               \
          const C delta = job->mode == CT_POOL_ADAPTIVE ? gv / (C)dh / (C)dw : gv / (C)divide;     \
          for (int64_t ih = h0; ih < h1; ++ih) {                                                   \
            for (int64_t iw = w0; iw < w1; ++iw) acc[ih * a2 + iw * a3] += delta;                  \
          }                                                                                        \
        }                                                                                          \
      }                                                                                            \
      if (!direct) {                                                                               \
        for (int64_t ih = 0; ih < job->h; ++ih) {                                                  \
          for (int64_t iw = 0; iw < job->w; ++iw) {                                                \
            gi[ih * job->is[2] + iw * job->is[3]] = ct_store_##SFX(acc[ih * a2 + iw * a3]);        \
          }                                                                                        \
        }                                                                                          \
      }                                                                                            \
    }                                                                                              \
  }                                                                                                \
                                                                                                   \
  static int ct_cpu_pool_bw_workspace_##SFX(const ct_kernel_call* call, uint64_t* bytes,           \
                                            uint64_t* alignment) {                                 \
    *alignment = 64;                                                                               \
    *bytes = 0;                                                                                    \
    if (sizeof(T) != sizeof(C)) {                                                                  \
      const ct_tensor* x = call->inputs[1];                                                        \
      int64_t elements = 1;                                                                        \
      for (int32_t k = 0; k < x->ndim; ++k) {                                                      \
        if (!ct_checked_mul_i64(elements, x->shape[k], &elements)) {                               \
          return ct_set_error(CT_ERROR_SIZE_OVERFLOW, "%s: the workspace overflows int64",         \
                              call->schema->name);                                                 \
        }                                                                                          \
      }                                                                                            \
      if (!ct_checked_mul_i64(elements, (int64_t)sizeof(float), &elements)) {                      \
        return ct_set_error(CT_ERROR_SIZE_OVERFLOW, "%s: the workspace overflows int64",           \
                            call->schema->name);                                                   \
      }                                                                                            \
      *bytes = (uint64_t)elements;                                                                 \
    }                                                                                              \
    return CT_OK;                                                                                  \
  }                                                                                                \
                                                                                                   \
  static int ct_cpu_pool_bw_run_##SFX(const ct_kernel_call* call, ct_pool_mode mode) {             \
    ct_pool_bw_job job;                                                                            \
    ct_pool_bw_prepare(call, mode, &job);                                                          \
    const int64_t planes = ct_pool_bw_planes(call, &job);                                          \
    if (planes == 0 || job.h * job.w == 0) return CT_OK;                                           \
    job.acc = call->workspace;                                                                     \
    /* An empty grad_out (output size 0) leaves grad_input all zeros: no window to divide by. */   \
    const int64_t window = mode != CT_POOL_ADAPTIVE                                                \
                               ? ct_size_mul(job.window.kernel[0], job.window.kernel[1])           \
                           : job.oh * job.ow == 0 ? 0                                              \
                                                  : (job.h / job.oh + 1) * (job.w / job.ow + 1);   \
    ct_cpu_parallel_for(planes, ct_size_add(ct_size_mul(job.oh * job.ow, window), job.h * job.w),  \
                        ct_cpu_pool_bw_planes_##SFX, &job);                                        \
    return CT_OK;                                                                                  \
  }                                                                                                \
  static int ct_cpu_max_pool2d_backward_##SFX(const ct_kernel_call* call) {                        \
    return ct_cpu_pool_bw_run_##SFX(call, CT_POOL_MAX);                                            \
  }                                                                                                \
  static int ct_cpu_avg_pool2d_backward_##SFX(const ct_kernel_call* call) {                        \
    return ct_cpu_pool_bw_run_##SFX(call, CT_POOL_AVG);                                            \
  }                                                                                                \
  static int ct_cpu_adaptive_avg_pool2d_backward_##SFX(const ct_kernel_call* call) {               \
    return ct_cpu_pool_bw_run_##SFX(call, CT_POOL_ADAPTIVE);                                       \
  }

#define CT_POOL_BW_REG(SFX, T, C, ID)                                                                \
  {"max_pool2d_backward",          3,   {ID, ID, ID}, ct_cpu_max_pool2d_backward_##SFX,              \
   ct_cpu_pool_bw_workspace_##SFX, NULL},                                                            \
      {"avg_pool2d_backward",          3,   {ID, ID, ID}, ct_cpu_avg_pool2d_backward_##SFX,          \
       ct_cpu_pool_bw_workspace_##SFX, NULL},                                                        \
      {"adaptive_avg_pool2d_backward", 3,   {ID, ID, ID}, ct_cpu_adaptive_avg_pool2d_backward_##SFX, \
       ct_cpu_pool_bw_workspace_##SFX, NULL},

#define CT_POOL_BW_TYPES(X)            \
  X(f16, uint16_t, float, CT_DT_F16)   \
  X(bf16, uint16_t, float, CT_DT_BF16) \
  X(f32, float, float, CT_DT_F32)      \
  X(f64, double, double, CT_DT_F64)

CT_POOL_BW_TYPES(CT_POOL_BW_DEFINE)

static const ct_cpu_kernel ct_cpu_pool_backward_kernels[] = {CT_POOL_BW_TYPES(CT_POOL_BW_REG)};

int ct_cpu_register_pool_backward(void) {
  return ct_cpu_register_all(ct_cpu_pool_backward_kernels,
                             CT_CPU_KERNEL_COUNT(ct_cpu_pool_backward_kernels));
}
