/* pool_kernels.c - max_pool2d (float and integer), avg_pool2d, adaptive_avg_pool2d over
 * (N, C, H, W) or (C, H, W).
 *
 * Each output element is computed on its own with torch's window arithmetic (so that edge
 * windows, ceil_mode and the avg_pool2d divisor match torch exactly); (image, channel) planes
 * run in parallel. Sums accumulate in the compute type (float for float16/bfloat16/float32,
 * double for float64), in row-major window order, as torch's CPU kernels. max_pool2d has a
 * vectorised path for the interior of rows (CT_POOL_BLOCK). */
#include <math.h>

#include "engine/cpu_dtypes.h"
#include "engine/cpu_isa.h"
#include "cpu_register.h"
#include "engine/reduce_layout.h"
#include "engine/strided_iter.h"
#include "ops/pool_window.h"

/* max_pool2d on planes with unit W strides: the output columns whose windows lie inside the
 * input are computed CT_POOL_BLOCK at a time, window element by window element in the same
 * row-major order as the per-element loop (so the same result, nan and signed zeros
 * included), in a loop the compiler vectorises (compiled per ISA, cpu_isa.h). */
#define CT_POOL_BLOCK 256
/* Rows with fewer output columns inside the input than this take the per-element loop (or the
 * 2 x 2 one): the vectorised call costs more than it saves on a few columns. */
#define CT_POOL_MIN_VECTOR 16

typedef struct ct_pool_job {
  ct_pool_mode mode;
  int64_t channels, h, w, oh, ow;
  int64_t xs[4], os[4]; /* (N, C, H, W) element strides; N stride 0 for 3-D */
  ct_pool_window window;
  const char* x;
  char* out;
} ct_pool_job;

static void ct_pool_prepare(const ct_kernel_call* call, ct_pool_mode mode, ct_pool_job* job) {
  const ct_tensor* x = call->inputs[0];
  const ct_tensor* out = call->outputs[0];
  const int32_t lead = x->ndim - 3; /* 1 for (N, C, H, W), 0 for (C, H, W) */
  job->mode = mode;
  job->channels = x->shape[lead];
  job->h = x->shape[lead + 1];
  job->w = x->shape[lead + 2];
  job->oh = out->shape[lead + 1];
  job->ow = out->shape[lead + 2];
  job->xs[0] = lead ? ct_tensor_stride(x, 0) : 0;
  job->os[0] = lead ? ct_tensor_stride(out, 0) : 0;
  for (int32_t k = 1; k < 4; ++k) {
    job->xs[k] = ct_tensor_stride(x, lead + k - 1);
    job->os[k] = ct_tensor_stride(out, lead + k - 1);
  }
  job->x = ct_tensor_base(x);
  job->out = ct_tensor_base(out);
  ct_pool_read_window(call->attrs, mode, &job->window);
}

/* r[j] = max(r[j], p[j * step]) for j < len, nan propagating, for each of the kw window
 * columns p = row + k * dw. */
#define CT_POOL_MAX_ROW(SFX, T, C)                                                                 \
  static CT_CPU_ISA_BODY void ct_pool_max_row_##SFX##_body(const T* row, int64_t step, int64_t dw, \
                                                           int64_t kw, int64_t len, C* r) {        \
    for (int64_t k = 0; k < kw; ++k) {                                                             \
      const T* p = row + k * dw;                                                                   \
      if (step == 2) {                                                                             \
        for (int64_t j = 0; j < len; ++j) {                                                        \
          const C v = ct_load_##SFX(p[2 * j]);                                                     \
          r[j] = CT_NAN_MAX(r[j], v);                                                              \
        }                                                                                          \
      } else {                                                                                     \
        for (int64_t j = 0; j < len; ++j) {                                                        \
          const C v = ct_load_##SFX(p[j * step]);                                                  \
          r[j] = CT_NAN_MAX(r[j], v);                                                              \
        }                                                                                          \
      }                                                                                            \
    }                                                                                              \
  }                                                                                                \
  CT_CPU_ISA_LOOP(ct_pool_max_row_##SFX,                                                           \
                  (const T* row, int64_t step, int64_t dw, int64_t kw, int64_t len, C* r),         \
                  (row, step, dw, kw, len, r))

/* max_pool2d with 2 x 2 windows at stride 2, no padding or dilation, every window inside the
 * input, on narrow rows (the shapes of small CNNs). */
static bool ct_pool_is_small_2x2(const ct_pool_job* job) {
  const ct_pool_window* win = &job->window;
  return job->mode == CT_POOL_MAX && job->ow < CT_POOL_MIN_VECTOR && win->kernel[0] == 2 &&
         win->kernel[1] == 2 && win->stride[0] == 2 && win->stride[1] == 2 &&
         win->padding[0] == 0 && win->padding[1] == 0 && win->dilation[0] == 1 &&
         win->dilation[1] == 1 && 2 * job->oh <= job->h && 2 * job->ow <= job->w;
}

/* ct_pool_is_small_2x2's case, planes [begin, end): each window's four taps in row-major order,
 * as the per-element loop takes them (the same result, nan and signed zeros included). */
#define CT_POOL_MAX_2X2(SFX, T, C)                                                        \
  static void ct_pool_max_2x2_##SFX(const ct_pool_job* job, int64_t begin, int64_t end) { \
    const int64_t xw = job->xs[3], yw = job->os[3];                                       \
    for (int64_t plane = begin; plane < end; ++plane) {                                   \
      const int64_t n = plane / job->channels, c = plane % job->channels;                 \
      const T* x = (const T*)job->x + n * job->xs[0] + c * job->xs[1];                    \
      T* y = (T*)job->out + n * job->os[0] + c * job->os[1];                              \
      for (int64_t oh = 0; oh < job->oh; ++oh) {                                          \
        const T* top = x + 2 * oh * job->xs[2];                                           \
        const T* bottom = top + job->xs[2];                                               \
        T* yr = y + oh * job->os[2];                                                      \
        for (int64_t ow = 0; ow < job->ow; ++ow) {                                        \
          C r = ct_load_##SFX(top[2 * ow * xw]);                                          \
          r = CT_NAN_MAX(r, ct_load_##SFX(top[(2 * ow + 1) * xw]));                       \
          r = CT_NAN_MAX(r, ct_load_##SFX(bottom[2 * ow * xw]));                          \
          r = CT_NAN_MAX(r, ct_load_##SFX(bottom[(2 * ow + 1) * xw]));                    \
          yr[ow * yw] = ct_store_##SFX(r);                                                \
        }                                                                                 \
      }                                                                                   \
    }                                                                                     \
  }

#define CT_POOL_DEFINE(SFX, T, C, ID)                                                              \
  CT_POOL_MAX_ROW(SFX, T, C)                                                                       \
  CT_POOL_MAX_2X2(SFX, T, C)                                                                       \
  /* Output columns [*first, *last) of max_pool2d whose windows lie inside the input's width. */   \
  static void ct_pool_inner_columns_##SFX(const ct_pool_job* job, int64_t* first, int64_t* last) { \
    const int64_t sw = job->window.stride[1], pw = job->window.padding[1];                         \
    const int64_t reach = (job->window.kernel[1] - 1) * job->window.dilation[1] + 1;               \
    int64_t a = pw / sw + (pw % sw != 0);                                                          \
    int64_t b = job->w + pw >= reach ? (job->w + pw - reach) / sw + 1 : 0;                         \
    if (b > job->ow) b = job->ow;                                                                  \
    if (a > b) a = b;                                                                              \
    *first = a;                                                                                    \
    *last = b;                                                                                     \
  }                                                                                                \
  static void ct_cpu_pool_planes_##SFX(int64_t begin, int64_t end, void* context) {                \
    const ct_pool_job* job = context;                                                              \
    int64_t inner_first = 0, inner_last = 0;                                                       \
    if (job->mode == CT_POOL_MAX && job->xs[3] == 1 && job->os[3] == 1) {                          \
      ct_pool_inner_columns_##SFX(job, &inner_first, &inner_last);                                 \
      if (inner_last - inner_first < CT_POOL_MIN_VECTOR) inner_first = inner_last = 0;             \
    }                                                                                              \
    if (ct_pool_is_small_2x2(job)) {                                                               \
      ct_pool_max_2x2_##SFX(job, begin, end);                                                      \
      return;                                                                                      \
    }                                                                                              \
    for (int64_t plane = begin; plane < end; ++plane) {                                            \
      const int64_t n = plane / job->channels, c = plane % job->channels;                          \
      const T* x = (const T*)job->x + n * job->xs[0] + c * job->xs[1];                             \
      T* y = (T*)job->out + n * job->os[0] + c * job->os[1];                                       \
      for (int64_t oh = 0; oh < job->oh; ++oh) {                                                   \
        if (inner_first < inner_last) {                                                            \
          const int64_t dh = job->window.dilation[0];                                              \
          int64_t h0 = oh * job->window.stride[0] - job->window.padding[0];                        \
          const int64_t reach = h0 + (job->window.kernel[0] - 1) * dh + 1;                         \
          const int64_t h1 = reach < job->h ? reach : job->h;                                      \
          h0 = ct_pool_first_tap(h0, dh);                                                          \
          for (int64_t b0 = inner_first; b0 < inner_last; b0 += CT_POOL_BLOCK) {                   \
            const int64_t len = inner_last - b0 < CT_POOL_BLOCK ? inner_last - b0 : CT_POOL_BLOCK; \
            C r[CT_POOL_BLOCK];                                                                    \
            for (int64_t j = 0; j < len; ++j) r[j] = (C) - INFINITY;                               \
            for (int64_t ih = h0; ih < h1; ih = ct_pool_next_tap(ih, dh, h1)) {                    \
              ct_pool_max_row_##SFX(                                                               \
                  x + ih * job->xs[2] + b0 * job->window.stride[1] - job->window.padding[1],       \
                  job->window.stride[1], job->window.dilation[1], job->window.kernel[1], len, r);  \
            }                                                                                      \
            T* yr = y + oh * job->os[2] + b0;                                                      \
            for (int64_t j = 0; j < len; ++j) yr[j] = ct_store_##SFX(r[j]);                        \
          }                                                                                        \
        }                                                                                          \
        for (int64_t ow = 0; ow < job->ow; ++ow) {                                                 \
          if (ow == inner_first && inner_first < inner_last) {                                     \
            ow = inner_last - 1;                                                                   \
            continue;                                                                              \
          }                                                                                        \
          C result;                                                                                \
          if (job->mode == CT_POOL_MAX) {                                                          \
            const int64_t dh = job->window.dilation[0], dw = job->window.dilation[1];              \
            int64_t h0 = oh * job->window.stride[0] - job->window.padding[0];                      \
            int64_t w0 = ow * job->window.stride[1] - job->window.padding[1];                      \
            const int64_t h1 = h0 + (job->window.kernel[0] - 1) * dh + 1 < job->h                  \
                                   ? h0 + (job->window.kernel[0] - 1) * dh + 1                     \
                                   : job->h;                                                       \
            const int64_t w1 = w0 + (job->window.kernel[1] - 1) * dw + 1 < job->w                  \
                                   ? w0 + (job->window.kernel[1] - 1) * dw + 1                     \
                                   : job->w;                                                       \
            h0 = ct_pool_first_tap(h0, dh);                                                        \
            w0 = ct_pool_first_tap(w0, dw);                                                        \
            result = (C) - INFINITY;                                                               \
            for (int64_t ih = h0; ih < h1; ih = ct_pool_next_tap(ih, dh, h1)) {                    \
              for (int64_t iw = w0; iw < w1; iw = ct_pool_next_tap(iw, dw, w1)) {                  \
                const C v = ct_load_##SFX(x[ih * job->xs[2] + iw * job->xs[3]]);                   \
                if (v > result || isnan(v)) result = v;                                            \
              }                                                                                    \
            }                                                                                      \
          } else {                                                                                 \
            int64_t h0, h1, w0, w1;                                                                \
            C divide;                                                                              \
            if (job->mode == CT_POOL_ADAPTIVE) {                                                   \
              ct_pool_adaptive_window(oh, job->h, job->oh, &h0, &h1);                              \
              ct_pool_adaptive_window(ow, job->w, job->ow, &w0, &w1);                              \
              divide = (C)((h1 - h0) * (w1 - w0));                                                 \
            } else {                                                                               \
              h0 = oh * job->window.stride[0] - job->window.padding[0];                            \
              w0 = ow * job->window.stride[1] - job->window.padding[1];                            \
              h1 = h0 + job->window.kernel[0] < job->h + job->window.padding[0]                    \
                       ? h0 + job->window.kernel[0]                                                \
                       : job->h + job->window.padding[0];                                          \
              w1 = w0 + job->window.kernel[1] < job->w + job->window.padding[1]                    \
                       ? w0 + job->window.kernel[1]                                                \
                       : job->w + job->window.padding[1];                                          \
              /* the window with its padding, (h1 - h0) x (w1 - w0): its product may overflow */   \
              const C pool_size = CT_POOL_WINDOW_SIZE(C, h1 - h0, w1 - w0);                        \
              if (h0 < 0) h0 = 0;                                                                  \
              if (w0 < 0) w0 = 0;                                                                  \
              if (h1 > job->h) h1 = job->h;                                                        \
              if (w1 > job->w) w1 = job->w;                                                        \
              divide = job->window.has_divisor         ? (C)job->window.divisor                    \
                       : job->window.count_include_pad ? pool_size                                 \
                                                       : (C)((h1 - h0) * (w1 - w0));               \
            }                                                                                      \
            C sum = (C)0;                                                                          \
            for (int64_t ih = h0; ih < h1; ++ih) {                                                 \
              for (int64_t iw = w0; iw < w1; ++iw) {                                               \
                sum += ct_load_##SFX(x[ih * job->xs[2] + iw * job->xs[3]]);                        \
              }                                                                                    \
            }                                                                                      \
            result = h0 >= h1 || w0 >= w1 ? (C)0 : sum / divide;                                   \
          }                                                                                        \
          y[oh * job->os[2] + ow * job->os[3]] = ct_store_##SFX(result);                           \
        }                                                                                          \
      }                                                                                            \
    }                                                                                              \
  }                                                                                                \
                                                                                                   \
  static int ct_cpu_pool_run_##SFX(const ct_kernel_call* call, ct_pool_mode mode) {                \
    ct_pool_job job;                                                                               \
    ct_pool_prepare(call, mode, &job);                                                             \
    const int64_t n = call->inputs[0]->ndim == 4 ? call->inputs[0]->shape[0] : 1;                  \
    const int64_t planes = n * job.channels, per_plane = job.oh * job.ow;                          \
    if (planes == 0 || per_plane == 0) return CT_OK;                                               \
    /* The cost per plane, a threading hint: saturating, kernels may be as large as int64. */      \
    const int64_t window = mode == CT_POOL_ADAPTIVE                                                \
                               ? (job.h / job.oh + 1) * (job.w / job.ow + 1)                       \
                               : ct_size_mul(job.window.kernel[0], job.window.kernel[1]);          \
    ct_cpu_parallel_for(planes, ct_size_mul(per_plane, window), ct_cpu_pool_planes_##SFX, &job);   \
    return CT_OK;                                                                                  \
  }                                                                                                \
  static int ct_cpu_max_pool2d_##SFX(const ct_kernel_call* call) {                                 \
    return ct_cpu_pool_run_##SFX(call, CT_POOL_MAX);                                               \
  }                                                                                                \
  static int ct_cpu_avg_pool2d_##SFX(const ct_kernel_call* call) {                                 \
    return ct_cpu_pool_run_##SFX(call, CT_POOL_AVG);                                               \
  }                                                                                                \
  static int ct_cpu_adaptive_avg_pool2d_##SFX(const ct_kernel_call* call) {                        \
    return ct_cpu_pool_run_##SFX(call, CT_POOL_ADAPTIVE);                                          \
  }

#define CT_POOL_REG(SFX, T, C, ID)                                      \
  {"max_pool2d", 2, {ID, ID}, ct_cpu_max_pool2d_##SFX, NULL, NULL},     \
      {"avg_pool2d", 2, {ID, ID}, ct_cpu_avg_pool2d_##SFX, NULL, NULL}, \
      {"adaptive_avg_pool2d", 2, {ID, ID}, ct_cpu_adaptive_avg_pool2d_##SFX, NULL, NULL},

#define CT_POOL_TYPES(X)               \
  X(f16, uint16_t, float, CT_DT_F16)   \
  X(bf16, uint16_t, float, CT_DT_BF16) \
  X(f32, float, float, CT_DT_F32)      \
  X(f64, double, double, CT_DT_F64)

CT_POOL_TYPES(CT_POOL_DEFINE)

/* Integer max_pool2d: each output the largest tap of its window inside the input, the dtype's
 * minimum for a window entirely in the padding (the padding value). */
#define CT_POOL_INT_DEFINE(A, SFX, T, C, U, ID)                                                    \
  static void ct_cpu_int_pool_planes_##SFX(int64_t begin, int64_t end, void* context) {            \
    const ct_pool_job* job = context;                                                              \
    const ct_pool_window* win = &job->window;                                                      \
    const T lowest = (T)(-1) < (T)0 ? (T)((U)1 << (sizeof(T) * 8 - 1)) : (T)0;                     \
    for (int64_t plane = begin; plane < end; ++plane) {                                            \
      const int64_t n = plane / job->channels, c = plane % job->channels;                          \
      const T* x = (const T*)job->x + n * job->xs[0] + c * job->xs[1];                             \
      T* y = (T*)job->out + n * job->os[0] + c * job->os[1];                                       \
      for (int64_t oh = 0; oh < job->oh; ++oh) {                                                   \
        const int64_t dh = win->dilation[0], dw = win->dilation[1];                                \
        int64_t h0 = oh * win->stride[0] - win->padding[0];                                        \
        const int64_t reach_h = h0 + (win->kernel[0] - 1) * dh + 1;                                \
        const int64_t h1 = reach_h < job->h ? reach_h : job->h;                                    \
        h0 = ct_pool_first_tap(h0, dh);                                                            \
        for (int64_t ow = 0; ow < job->ow; ++ow) {                                                 \
          int64_t w0 = ow * win->stride[1] - win->padding[1];                                      \
          const int64_t reach_w = w0 + (win->kernel[1] - 1) * dw + 1;                              \
          const int64_t w1 = reach_w < job->w ? reach_w : job->w;                                  \
          w0 = ct_pool_first_tap(w0, dw);                                                          \
          T result = lowest;                                                                       \
          for (int64_t ih = h0; ih < h1; ih = ct_pool_next_tap(ih, dh, h1)) {                      \
            for (int64_t iw = w0; iw < w1; iw = ct_pool_next_tap(iw, dw, w1)) {                    \
              const T v = x[ih * job->xs[2] + iw * job->xs[3]];                                    \
              result = v > result ? v : result;                                                    \
            }                                                                                      \
          }                                                                                        \
          y[oh * job->os[2] + ow * job->os[3]] = result;                                           \
        }                                                                                          \
      }                                                                                            \
    }                                                                                              \
  }                                                                                                \
  static int ct_cpu_int_max_pool2d_##SFX(const ct_kernel_call* call) {                             \
    ct_pool_job job;                                                                               \
    ct_pool_prepare(call, CT_POOL_MAX, &job);                                                      \
    const int64_t n = call->inputs[0]->ndim == 4 ? call->inputs[0]->shape[0] : 1;                  \
    const int64_t planes = n * job.channels, per_plane = job.oh * job.ow;                          \
    if (planes == 0 || per_plane == 0) return CT_OK;                                               \
    const int64_t taps = ct_size_mul(job.window.kernel[0], job.window.kernel[1]);                  \
    ct_cpu_parallel_for(planes, ct_size_mul(per_plane, taps), ct_cpu_int_pool_planes_##SFX, &job); \
    return CT_OK;                                                                                  \
  }
CT_CPU_INT_TYPES(CT_POOL_INT_DEFINE, _)
#undef CT_POOL_INT_DEFINE

#define CT_POOL_INT_REG(A, SFX, T, C, U, ID) \
  {"max_pool2d", 2, {ID, ID}, ct_cpu_int_max_pool2d_##SFX, NULL, NULL},

static const ct_cpu_kernel ct_cpu_pool_kernels[] = {CT_POOL_TYPES(CT_POOL_REG)
                                                        CT_CPU_INT_TYPES(CT_POOL_INT_REG, _)};

int ct_cpu_register_pool(void) {
  return ct_cpu_register_all(ct_cpu_pool_kernels, CT_CPU_KERNEL_COUNT(ct_cpu_pool_kernels));
}
