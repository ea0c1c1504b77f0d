/* conv_transpose2d_kernels.c - conv_transpose2d as GEMM + col2im per (image, group), in the
 * caller's workspace.
 *
 * Workspace (compute type C: float for float16/bfloat16/float32, double for float64), each part
 * padded to a multiple of 64 bytes:
 *   weight: C_in × K, K = C_out/groups · kH · kW, the weight converted to C and made compact;
 *   input:  C_in/groups × P, P = H · W, the (image, group) input converted to C;
 *   col:    K × P, col = weight[g]ᵀ · input (one GEMM): row (o, i, j), column (h, w) is the
 *           contribution of input pixel (h, w) to output pixel (h·sH - pH + i·dH,
 *           w·sW - pW + j·dW) of output channel o;
 *   acc:    C_out/groups × H_out × W_out, starts at the bias; col2im adds the col rows into it
 *           (one output channel per task, so no two tasks touch one element), then it is stored
 *           into the (possibly strided) output, rounding once;
 *   gemm:   the packed GEMM's panels (ct_gemm_workspace_<instance>).
 * Parallelism is inside each step. */
#include <string.h>

#include "conv/conv_entry.h"
#include "cpu_register.h"
#include "gemm/gemm.h"
#include "engine/strided_iter.h"

#define CT_CT2D_ALIGNMENT 64

typedef struct ct_ct2d_job {
  int64_t n, channels, h, w;    /* input (N, C_in, H, W) */
  int64_t out_channels, kh, kw; /* C_out and the kernel extents */
  int64_t oh, ow;               /* output spatial extents */
  int64_t stride[2], padding[2], dilation[2], groups;
  int64_t cg, og; /* input and output channels per group */
  int64_t k, p;   /* og · kH · kW, H · W */
  int64_t weight_bytes, input_bytes, col_bytes, acc_bytes;
  int64_t xs[4], ws[4], bs, os[4];
  const char *x, *weight, *bias;
  char* out;
  void *wpack, *xpack, *col, *acc;
  int64_t image, group;
} ct_ct2d_job;

static void ct_ct2d_pair(const ct_attr_value* value, int64_t out[2]) {
  out[0] = value->value.ints[0];
  out[1] = value->value.ints[value->count - 1];
}

/* bytes of count elements of size, rounded up to the alignment; false on overflow. */
static bool ct_ct2d_bytes(int64_t a, int64_t b, int64_t size, int64_t* bytes) {
  int64_t elements, raw;
  if (!ct_checked_mul_i64(a, b, &elements) || !ct_checked_mul_i64(elements, size, &raw) ||
      !ct_checked_add_i64(raw, CT_CT2D_ALIGNMENT - 1, &raw)) {
    return false;
  }
  *bytes = raw / CT_CT2D_ALIGNMENT * CT_CT2D_ALIGNMENT;
  return true;
}

static int ct_ct2d_prepare(const ct_kernel_call* call, int64_t compute_size, ct_ct2d_job* job) {
  const ct_tensor* x = call->inputs[0];
  const ct_tensor* weight = call->inputs[1];
  const ct_tensor* bias = call->inputs[2];
  const ct_tensor* out = call->outputs[0];
  ct_ct2d_pair(&call->attrs[0], job->stride);
  ct_ct2d_pair(&call->attrs[1], job->padding);
  ct_ct2d_pair(&call->attrs[4], job->dilation);
  job->groups = call->attrs[3].value.i;
  job->n = x->shape[0];
  job->channels = x->shape[1];
  job->h = x->shape[2];
  job->w = x->shape[3];
  job->kh = weight->shape[2];
  job->kw = weight->shape[3];
  job->out_channels = out->shape[1];
  job->oh = out->shape[2];
  job->ow = out->shape[3];
  job->cg = job->channels / job->groups;
  job->og = job->out_channels / job->groups;
  job->k = job->og * job->kh * job->kw; /* <= the weight's element count */
  job->p = job->h * job->w;             /* <= the input's element count */
  for (int32_t q = 0; q < 4; ++q) {
    job->xs[q] = ct_tensor_stride(x, q);
    job->ws[q] = ct_tensor_stride(weight, q);
    job->os[q] = ct_tensor_stride(out, q);
  }
  job->bs = bias ? ct_tensor_stride(bias, 0) : 0;
  job->x = ct_tensor_base(x);
  job->weight = ct_tensor_base(weight);
  job->bias = bias ? ct_tensor_base(bias) : NULL;
  job->out = ct_tensor_base(out);
  job->wpack = job->xpack = job->col = job->acc = NULL;
  job->image = job->group = 0;
  int64_t total;
  if (!ct_ct2d_bytes(job->channels, job->k, compute_size, &job->weight_bytes) ||
      !ct_ct2d_bytes(job->cg, job->p, compute_size, &job->input_bytes) ||
      !ct_ct2d_bytes(job->k, job->p, compute_size, &job->col_bytes) ||
      !ct_ct2d_bytes(job->og * job->oh, job->ow, compute_size, &job->acc_bytes) ||
      !ct_checked_add_i64(job->weight_bytes, job->input_bytes, &total) ||
      !ct_checked_add_i64(total, job->col_bytes, &total) ||
      !ct_checked_add_i64(total, job->acc_bytes, &total)) {
    return ct_set_error(CT_ERROR_SIZE_OVERFLOW,
                        "conv_transpose2d: the workspace (%lld x %lld columns) overflows int64",
                        (long long)job->k, (long long)job->p);
  }
  return CT_OK;
}

static bool ct_ct2d_empty(const ct_ct2d_job* job) {
  return job->n == 0 || job->out_channels == 0;
}

/* The GEMM of one (image, group): col (K × P) = weight[g]ᵀ (K × C_in/groups) · input (C_in/groups
 * × P), over the compact workspace buffers; a and workspace are set per call. */
static ct_gemm_desc ct_ct2d_gemm_desc(const ct_ct2d_job* job) {
  ct_gemm_desc d = {0};
  d.m = job->k;
  d.n = job->p;
  d.k = job->cg;
  d.a_rs = 1;
  d.a_cs = job->k;
  d.b = job->xpack;
  d.b_rs = job->p;
  d.b_cs = 1;
  d.c = job->col;
  d.c_rs = job->p;
  d.c_cs = 1;
  return d;
}

/* Bytes before the GEMM's part of the workspace. */
static uint64_t ct_ct2d_fixed_bytes(const ct_ct2d_job* job) {
  return (uint64_t)(job->weight_bytes + job->input_bytes + job->col_bytes + job->acc_bytes);
}

static int ct_ct2d_workspace(const ct_kernel_call* call, int64_t compute_size,
                             uint64_t (*gemm_workspace)(const ct_gemm_desc*), uint64_t* bytes,
                             uint64_t* alignment) {
  ct_ct2d_job job;
  const int status = ct_ct2d_prepare(call, compute_size, &job);
  if (status != CT_OK) return status;
  if (ct_ct2d_empty(&job)) {
    *bytes = 0;
  } else {
    const ct_gemm_desc d = ct_ct2d_gemm_desc(&job);
    *bytes = ct_ct2d_fixed_bytes(&job) + gemm_workspace(&d);
  }
  *alignment = CT_CT2D_ALIGNMENT;
  return CT_OK;
}

/* (SFX, T, C, ID, GEMM): storage type, compute type, dtype id, GEMM instance over C. */
#define CT_CT2D_DEFINE(SFX, T, C, ID, GEMM)                                                       \
  /* Weight rows (input channels) [begin, end) to compact C. */                                   \
  static void ct_cpu_ct2d_pack_weight_##SFX(int64_t begin, int64_t end, void* context) {          \
    const ct_ct2d_job* job = context;                                                             \
    for (int64_t c = begin; c < end; ++c) {                                                       \
      C* dst = (C*)job->wpack + c * job->k;                                                       \
      const T* w = (const T*)job->weight + c * job->ws[0];                                        \
      for (int64_t o = 0; o < job->og; ++o) {                                                     \
        for (int64_t i = 0; i < job->kh; ++i) {                                                   \
          const T* src = w + o * job->ws[1] + i * job->ws[2];                                     \
          for (int64_t j = 0; j < job->kw; ++j) *dst++ = ct_load_##SFX(src[j * job->ws[3]]);      \
        }                                                                                         \
      }                                                                                           \
    }                                                                                             \
  }                                                                                               \
                                                                                                  \
  /* Input channels [begin, end) of (image, group) to compact C. */                               \
  static void ct_cpu_ct2d_pack_input_##SFX(int64_t begin, int64_t end, void* context) {           \
    const ct_ct2d_job* job = context;                                                             \
    const T* x = (const T*)job->x + job->image * job->xs[0] + job->group * job->cg * job->xs[1];  \
    for (int64_t c = begin; c < end; ++c) {                                                       \
      C* dst = (C*)job->xpack + c * job->p;                                                       \
      for (int64_t h = 0; h < job->h; ++h) {                                                      \
        const T* src = x + c * job->xs[1] + h * job->xs[2];                                       \
        for (int64_t w = 0; w < job->w; ++w) *dst++ = ct_load_##SFX(src[w * job->xs[3]]);         \
      }                                                                                           \
    }                                                                                             \
  }                                                                                               \
                                                                                                  \
  /* Output channels [begin, end) of the group: bias, col2im, store. */                           \
  static void ct_cpu_ct2d_col2im_##SFX(int64_t begin, int64_t end, void* context) {               \
    const ct_ct2d_job* job = context;                                                             \
    const int64_t plane = job->oh * job->ow, taps = job->kh * job->kw;                            \
    for (int64_t o = begin; o < end; ++o) {                                                       \
      const int64_t channel = job->group * job->og + o;                                           \
      C* acc = (C*)job->acc + o * plane;                                                          \
      const C start = job->bias ? ct_load_##SFX(((const T*)job->bias)[channel * job->bs]) : (C)0; \
      for (int64_t q = 0; q < plane; ++q) acc[q] = start;                                         \
      for (int64_t t = 0; t < taps; ++t) {                                                        \
        const int64_t i = t / job->kw, j = t % job->kw;                                           \
        const C* col = (const C*)job->col + (o * taps + t) * job->p;                              \
        for (int64_t h = 0; h < job->h; ++h) {                                                    \
          const int64_t y = h * job->stride[0] - job->padding[0] + i * job->dilation[0];          \
          if (y < 0 || y >= job->oh) continue;                                                    \
          C* row = acc + y * job->ow;                                                             \
          const C* src = col + h * job->w;                                                        \
          const int64_t shift = j * job->dilation[1] - job->padding[1], sw = job->stride[1];      \
          for (int64_t w = 0; w < job->w; ++w) {                                                  \
            const int64_t x = w * sw + shift;                                                     \
            if (x >= 0 && x < job->ow) row[x] += src[w];                                          \
          }                                                                                       \
        }                                                                                         \
      }                                                                                           \
      T* out = (T*)job->out + job->image * job->os[0] + channel * job->os[1];                     \
      for (int64_t y = 0; y < job->oh; ++y) {                                                     \
        for (int64_t x = 0; x < job->ow; ++x) {                                                   \
          out[y * job->os[2] + x * job->os[3]] = ct_store_##SFX(acc[y * job->ow + x]);            \
        }                                                                                         \
      }                                                                                           \
    }                                                                                             \
  }                                                                                               \
                                                                                                  \
  int ct_cpu_ct2d_workspace_##SFX(const ct_kernel_call* call, uint64_t* bytes,                    \
                                  uint64_t* alignment) {                                          \
    return ct_ct2d_workspace(call, (int64_t)sizeof(C), ct_gemm_workspace_##GEMM, bytes,           \
                             alignment);                                                          \
  }                                                                                               \
                                                                                                  \
  int ct_cpu_conv_transpose2d_##SFX(const ct_kernel_call* call) {                                 \
    ct_ct2d_job job;                                                                              \
    const int status = ct_ct2d_prepare(call, (int64_t)sizeof(C), &job);                           \
    if (status != CT_OK) return status;                                                           \
    if (ct_ct2d_empty(&job)) return CT_OK;                                                        \
    char* ws = call->workspace;                                                                   \
    job.wpack = ws;                                                                               \
    job.xpack = ws + job.weight_bytes;                                                            \
    job.col = ws + job.weight_bytes + job.input_bytes;                                            \
    job.acc = ws + job.weight_bytes + job.input_bytes + job.col_bytes;                            \
    if (job.k > 0) {                                                                              \
      ct_cpu_parallel_for(job.channels, job.k, ct_cpu_ct2d_pack_weight_##SFX, &job);              \
    }                                                                                             \
    ct_gemm_desc d = ct_ct2d_gemm_desc(&job);                                                     \
    d.workspace = ws + ct_ct2d_fixed_bytes(&job);                                                 \
    d.workspace_size = call->workspace_size - ct_ct2d_fixed_bytes(&job);                          \
    for (job.image = 0; job.image < job.n; ++job.image) {                                         \
      for (job.group = 0; job.group < job.groups; ++job.group) {                                  \
        if (job.cg > 0 && job.p > 0) {                                                            \
          ct_cpu_parallel_for(job.cg, job.p, ct_cpu_ct2d_pack_input_##SFX, &job);                 \
        }                                                                                         \
        if (job.k > 0 && job.p > 0) {                                                             \
          d.a = (const C*)job.wpack + job.group * job.cg * job.k;                                 \
          ct_gemm_##GEMM(&d);                                                                     \
        }                                                                                         \
        ct_cpu_parallel_for(job.og, job.k * job.p + job.oh * job.ow, ct_cpu_ct2d_col2im_##SFX,    \
                            &job);                                                                \
      }                                                                                           \
    }                                                                                             \
    return CT_OK;                                                                                 \
  }

#define CT_CT2D_REG(SFX, T, C, ID, GEMM)                                              \
  {"conv_transpose2d",          4,   {ID, ID, ID, ID}, ct_cpu_conv_transpose2d_##SFX, \
   ct_cpu_ct2d_workspace_##SFX, NULL},

#define CT_CT2D_TYPES(X)                    \
  X(f16, uint16_t, float, CT_DT_F16, f32)   \
  X(bf16, uint16_t, float, CT_DT_BF16, f32) \
  X(f32, float, float, CT_DT_F32, f32)      \
  X(f64, double, double, CT_DT_F64, f64)

CT_CT2D_TYPES(CT_CT2D_DEFINE)

static const ct_cpu_kernel ct_cpu_conv_transpose2d_kernels[] = {CT_CT2D_TYPES(CT_CT2D_REG)};

int ct_cpu_register_conv_transpose2d(void) {
  return ct_cpu_register_all(ct_cpu_conv_transpose2d_kernels,
                             CT_CPU_KERNEL_COUNT(ct_cpu_conv_transpose2d_kernels));
}
