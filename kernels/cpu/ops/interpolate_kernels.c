/* interpolate_kernels.c - interpolate over NCHW input: "nearest" and "bilinear".
 *
 * The source indices and weights repeat torch's CPU arithmetic (UpSample.h,
 * UpSampleKernel.cpp), in torch's opmath type (float for float16/bfloat16/float32, double for
 * float64), so that indices agree exactly:
 *   scale   = align_corners ? (in - 1) / (out - 1) (0 when out == 1)
 *           : scale_factor given ? (opmath)(1.0 / scale_factor) : (opmath)in / out;
 *   nearest (torch's nearest_idx, float arithmetic for every dtype): out == in copies,
 *           out == 2·in takes dst / 2, else src = min((int64)floorf(dst · (float)scale), in - 1);
 *   bilinear: out == in copies; else real = align_corners ? scale · dst
 *           : max(scale · (dst + 0.5) - 0.5, 0), i0 = min((int64)floorf(real), in - 1),
 *           i1 = i0 + (i0 < in - 1), l1 = clamp(real - i0, 0, 1), l0 = 1 - l1, the weights
 *           rounded to the storage type; the result is
 *           (x[h0, w0]·lw0 + x[h0, w1]·lw1)·lh0 + (x[h1, w0]·lw0 + x[h1, w1]·lw1)·lh1.
 * (image, channel) planes run in parallel. */
#include <math.h>
#include <string.h>

#include "engine/cpu_dtypes.h"
#include "cpu_register.h"
#include "engine/strided_iter.h"

typedef struct ct_interp_job {
  bool bilinear, align_corners;
  bool has_scale[2];
  double scale_factor[2];
  int64_t channels, in[2], out[2];
  int64_t xs[4], os[4];
  const char* x;
  char* y;
  void* acc; /* interpolate_backward, float16/bfloat16: the float32 grad_input */
} ct_interp_job;

static void ct_interp_prepare(const ct_kernel_call* call, ct_interp_job* job) {
  const ct_tensor* x = call->inputs[0];
  const ct_tensor* out = call->outputs[0];
  const ct_attr_value* scale = &call->attrs[1];
  job->bilinear = strcmp(call->attrs[2].value.s, "bilinear") == 0;
  job->align_corners = call->attrs[3].type == CT_ATTR_BOOL && call->attrs[3].value.b != 0;
  for (int k = 0; k < 2; ++k) {
    job->has_scale[k] = scale->type == CT_ATTR_FLOAT_LIST;
    job->scale_factor[k] = job->has_scale[k] ? scale->value.floats[k < scale->count ? k : 0] : 0;
    job->in[k] = x->shape[2 + k];
    job->out[k] = out->shape[2 + k];
  }
  job->channels = x->shape[1];
  for (int32_t k = 0; k < 4; ++k) {
    job->xs[k] = ct_tensor_stride(x, k);
    job->os[k] = ct_tensor_stride(out, k);
  }
  job->x = ct_tensor_base(x);
  job->y = ct_tensor_base(out);
}

/* torch's nearest_idx: copies when out == in, halves when out == 2·in, else float arithmetic
 * (for every dtype, float64 included). */
static int64_t ct_interp_nearest(const ct_interp_job* job, int k, int64_t dst) {
  const int64_t in = job->in[k], out = job->out[k];
  if (out == in) return dst;
  if (out == 2 * in) return dst >> 1;
  const float scale = job->has_scale[k] && job->scale_factor[k] > 0
                          ? (float)(1.0 / job->scale_factor[k])
                          : (float)in / (float)out;
  const int64_t src = (int64_t)floorf((float)dst * scale);
  return src < in - 1 ? src : in - 1;
}

/* (SFX, T, C): storage type, opmath type. */
#define CT_INTERP_DEFINE(SFX, T, C, ID)                                                        \
  static C ct_interp_scale_##SFX(const ct_interp_job* job, int k) {                            \
    if (job->bilinear && job->align_corners) {                                                 \
      return job->out[k] > 1 ? (C)(job->in[k] - 1) / (C)(job->out[k] - 1) : (C)0;              \
    }                                                                                          \
    if (job->has_scale[k] && job->scale_factor[k] > 0) return (C)(1.0 / job->scale_factor[k]); \
    return (C)job->in[k] / (C)job->out[k];                                                     \
  }                                                                                            \
                                                                                               \
  /* One dimension's bilinear taps of an output index: source indices i0, i1 and weights l0,   \
   * l1 (already rounded to T). */                                                             \
  typedef struct ct_interp_taps_##SFX {                                                        \
    int64_t i0, i1;                                                                            \
    C l0, l1;                                                                                  \
  } ct_interp_taps_##SFX;                                                                      \
                                                                                               \
  static ct_interp_taps_##SFX ct_interp_linear_##SFX(const ct_interp_job* job, int k, C scale, \
                                                     int64_t dst) {                            \
    const int64_t in = job->in[k];                                                             \
    if (job->out[k] == in) return (ct_interp_taps_##SFX){dst, dst, (C)1, (C)0};                \
    C real;                                                                                    \
    if (job->align_corners) {                                                                  \
      real = scale * (C)dst;                                                                   \
    } else {                                                                                   \
      real = scale * ((C)dst + (C)0.5) - (C)0.5;                                               \
      if (real < (C)0) real = (C)0;                                                            \
    }                                                                                          \
    int64_t index = (int64_t)floorf((float)real);                                              \
    if (index > in - 1) index = in - 1;                                                        \
    C lambda = real - (C)index;                                                                \
    if (lambda < (C)0) lambda = (C)0;                                                          \
    if (lambda > (C)1) lambda = (C)1;                                                          \
    const C l1 = ct_load_##SFX(ct_store_##SFX(lambda));                                        \
    const C l0 = ct_load_##SFX(ct_store_##SFX((C)1 - l1));                                     \
    return (ct_interp_taps_##SFX){index, index + (index < in - 1 ? 1 : 0), l0, l1};            \
  }                                                                                            \
                                                                                               \
  static void ct_cpu_interp_planes_##SFX(int64_t begin, int64_t end, void* context) {          \
    const ct_interp_job* job = context;                                                        \
    const C sh = ct_interp_scale_##SFX(job, 0), sw = ct_interp_scale_##SFX(job, 1);            \
    for (int64_t plane = begin; plane < end; ++plane) {                                        \
      const int64_t n = plane / job->channels, c = plane % job->channels;                      \
      const T* x = (const T*)job->x + n * job->xs[0] + c * job->xs[1];                         \
      T* y = (T*)job->y + n * job->os[0] + c * job->os[1];                                     \
      for (int64_t oh = 0; oh < job->out[0]; ++oh) {                                           \
        T* row = y + oh * job->os[2];                                                          \
        if (!job->bilinear) {                                                                  \
          const int64_t ih = ct_interp_nearest(job, 0, oh);                                    \
          const T* src = x + ih * job->xs[2];                                                  \
          for (int64_t ow = 0; ow < job->out[1]; ++ow) {                                       \
            row[ow * job->os[3]] = src[ct_interp_nearest(job, 1, ow) * job->xs[3]];            \
          }                                                                                    \
          continue;                                                                            \
        }                                                                                      \
        const ct_interp_taps_##SFX h = ct_interp_linear_##SFX(job, 0, sh, oh);                 \
        const T* r0 = x + h.i0 * job->xs[2];                                                   \
        const T* r1 = x + h.i1 * job->xs[2];                                                   \
        for (int64_t ow = 0; ow < job->out[1]; ++ow) {                                         \
          const ct_interp_taps_##SFX w = ct_interp_linear_##SFX(job, 1, sw, ow);               \
          const int64_t a = w.i0 * job->xs[3], b = w.i1 * job->xs[3];                          \
          const C t0 = ct_load_##SFX(r0[a]) * w.l0 + ct_load_##SFX(r0[b]) * w.l1;              \
          const C t1 = ct_load_##SFX(r1[a]) * w.l0 + ct_load_##SFX(r1[b]) * w.l1;              \
          row[ow * job->os[3]] = ct_store_##SFX(t0 * h.l0 + t1 * h.l1);                        \
        }                                                                                      \
      }                                                                                        \
    }                                                                                          \
  }                                                                                            \
                                                                                               \
  static int ct_cpu_interpolate_##SFX(const ct_kernel_call* call) {                            \
    ct_interp_job job;                                                                         \
    ct_interp_prepare(call, &job);                                                             \
    const int64_t planes = call->inputs[0]->shape[0] * job.channels;                           \
    if (planes == 0) return CT_OK;                                                             \
    ct_cpu_parallel_for(planes, ct_size_mul(4, ct_size_mul(job.out[0], job.out[1])),           \
                        ct_cpu_interp_planes_##SFX, &job);                                     \
    return CT_OK;                                                                              \
  }

/* interpolate_backward: each output element's grad_out added to its source pixels, times the
 * forward's weights (lh · lw for bilinear), into each plane of grad_input zeroed first: in
 * grad_input itself for float32/float64, in a float32 copy in the workspace for
 * float16/bfloat16 (rounded once at the end). grad_out is inputs[0], input (shape only)
 * inputs[1]. */
#define CT_INTERP_BACKWARD_DEFINE(SFX, T, C, ID)                                                  \
  static void ct_cpu_interp_bw_planes_##SFX(int64_t begin, int64_t end, void* context) {          \
    const ct_interp_job* job = context;                                                           \
    const C sh = ct_interp_scale_##SFX(job, 0), sw = ct_interp_scale_##SFX(job, 1);               \
    const bool direct = sizeof(T) == sizeof(C);                                                   \
    const int64_t plane_size = job->in[0] * job->in[1];                                           \
    for (int64_t plane = begin; plane < end; ++plane) {                                           \
      const int64_t n = plane / job->channels, c = plane % job->channels;                         \
      const T* g = (const T*)job->x + n * job->xs[0] + c * job->xs[1];                            \
      T* gi = (T*)job->y + n * job->os[0] + c * job->os[1];                                       \
      C* acc = direct ? (C*)(void*)gi : (C*)(void*)((float*)job->acc + plane * plane_size);       \
      const int64_t a2 = direct ? job->os[2] : job->in[1], a3 = direct ? job->os[3] : 1;          \
      for (int64_t ih = 0; ih < job->in[0]; ++ih) {                                               \
        for (int64_t iw = 0; iw < job->in[1]; ++iw) acc[ih * a2 + iw * a3] = (C)0;                \
      }                                                                                           \
      for (int64_t oh = 0; oh < job->out[0]; ++oh) {                                              \
        const T* row = g + oh * job->xs[2];                                                       \
        if (!job->bilinear) {                                                                     \
          C* dst = acc + ct_interp_nearest(job, 0, oh) * a2;                                      \
          for (int64_t ow = 0; ow < job->out[1]; ++ow) {                                          \
            dst[ct_interp_nearest(job, 1, ow) * a3] += ct_load_##SFX(row[ow * job->xs[3]]);       \
          }                                                                                       \
          continue;                                                                               \
        }                                                                                         \
        const ct_interp_taps_##SFX h = ct_interp_linear_##SFX(job, 0, sh, oh);                    \
        C* r0 = acc + h.i0 * a2;                                                                  \
        C* r1 = acc + h.i1 * a2;                                                                  \
        for (int64_t ow = 0; ow < job->out[1]; ++ow) {                                            \
          const ct_interp_taps_##SFX w = ct_interp_linear_##SFX(job, 1, sw, ow);                  \
          const C v = ct_load_##SFX(row[ow * job->xs[3]]);                                        \
          r0[w.i0 * a3] += v * (h.l0 * w.l0);                                                     \
          r0[w.i1 * a3] += v * (h.l0 * w.l1);                                                     \
          r1[w.i0 * a3] += v * (h.l1 * w.l0);                                                     \
          r1[w.i1 * a3] += v * (h.l1 * w.l1);                                                     \
        }                                                                                         \
      }                                                                                           \
      if (!direct) {                                                                              \
        for (int64_t ih = 0; ih < job->in[0]; ++ih) {                                             \
          for (int64_t iw = 0; iw < job->in[1]; ++iw) {                                           \
            gi[ih * job->os[2] + iw * job->os[3]] = ct_store_##SFX(acc[ih * a2 + iw * a3]);       \
          }                                                                                       \
        }                                                                                         \
      }                                                                                           \
    }                                                                                             \
  }                                                                                               \
                                                                                                  \
  static int ct_cpu_interp_bw_workspace_##SFX(const ct_kernel_call* call, uint64_t* bytes,        \
                                              uint64_t* alignment) {                              \
    const ct_tensor* x = call->inputs[1];                                                         \
    *alignment = 64;                                                                              \
    *bytes = 0;                                                                                   \
    int64_t elements = 1;                                                                         \
    for (int32_t k = 0; k < x->ndim; ++k) {                                                       \
      if (!ct_checked_mul_i64(elements, x->shape[k], &elements)) {                                \
        return ct_set_error(CT_ERROR_SIZE_OVERFLOW,                                               \
                            "interpolate_backward: the workspace overflows int64");               \
      }                                                                                           \
    }                                                                                             \
    if (sizeof(T) == sizeof(C)) return CT_OK;                                                     \
    if (!ct_checked_mul_i64(elements, (int64_t)sizeof(float), &elements)) {                       \
      return ct_set_error(CT_ERROR_SIZE_OVERFLOW,                                                 \
                          "interpolate_backward: the float32 copy of grad_input (%lld bytes per " \
                          "element) overflows int64",                                             \
                          (long long)sizeof(float));                                              \
    }                                                                                             \
    *bytes = (uint64_t)elements;                                                                  \
    return CT_OK;                                                                                 \
  }                                                                                               \
                                                                                                  \
  static int ct_cpu_interpolate_backward_##SFX(const ct_kernel_call* call) {                      \
    /* The forward's job with the roles swapped: x is grad_out (the forward's output extent), y   \
     * is grad_input (the forward's input extent). */                                             \
    ct_interp_job job;                                                                            \
    const ct_tensor* swapped_inputs[1] = {call->inputs[0]};                                       \
    const ct_tensor* swapped_outputs[1] = {call->outputs[0]};                                     \
    ct_kernel_call swapped = *call;                                                               \
    swapped.inputs = swapped_inputs;                                                              \
    swapped.outputs = swapped_outputs;                                                            \
    ct_interp_prepare(&swapped, &job);                                                            \
    for (int k = 0; k < 2; ++k) {                                                                 \
      const int64_t in = job.out[k];                                                              \
      job.out[k] = job.in[k];                                                                     \
      job.in[k] = in;                                                                             \
    }                                                                                             \
    job.acc = call->workspace;                                                                    \
    const int64_t planes = call->inputs[0]->shape[0] * job.channels;                              \
    if (planes == 0) return CT_OK;                                                                \
    const int64_t cost =                                                                          \
        ct_size_add(ct_size_mul(4, ct_size_mul(job.out[0], job.out[1])), job.in[0] * job.in[1]);  \
    ct_cpu_parallel_for(planes, cost, ct_cpu_interp_bw_planes_##SFX, &job);                       \
    return CT_OK;                                                                                 \
  }

#define CT_INTERP_REG(SFX, T, C, ID)                                                           \
  {"interpolate", 2, {ID, ID}, ct_cpu_interpolate_##SFX, NULL, NULL},                          \
      {"interpolate_backward",           3,   {ID, ID, ID}, ct_cpu_interpolate_backward_##SFX, \
       ct_cpu_interp_bw_workspace_##SFX, NULL},

#define CT_INTERP_TYPES(X)             \
  X(f16, uint16_t, float, CT_DT_F16)   \
  X(bf16, uint16_t, float, CT_DT_BF16) \
  X(f32, float, float, CT_DT_F32)      \
  X(f64, double, double, CT_DT_F64)

CT_INTERP_TYPES(CT_INTERP_DEFINE)
CT_INTERP_TYPES(CT_INTERP_BACKWARD_DEFINE)

static const ct_cpu_kernel ct_cpu_interpolate_kernels[] = {CT_INTERP_TYPES(CT_INTERP_REG)};

int ct_cpu_register_interpolate(void) {
  return ct_cpu_register_all(ct_cpu_interpolate_kernels,
                             CT_CPU_KERNEL_COUNT(ct_cpu_interpolate_kernels));
}
