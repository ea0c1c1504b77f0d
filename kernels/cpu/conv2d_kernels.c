/* conv2d_kernels.c - conv2d as im2col + GEMM per (image, group), in the caller's workspace.
 *
 * Workspace (compute type C: float for float16/bfloat16/float32, double for float64):
 *   col:    K × P, K = C_in/groups · kH · kW (+ 1 row of ones when there is a bias),
 *           P = H_out · W_out; rebuilt for every (image, group) from the strided input, zeros
 *           where the taps fall in the padding; padded to a multiple of 64 bytes;
 *   weight: C_out × K, the weight converted to C and made compact, with the bias as its last
 *           column, so that the GEMM adds the bias and every output element is stored once.
 * Output channels of group g of image n are then weight[g] (Og × K) · col (K × P), written
 * straight into the (possibly strided) output by the GEMM. Parallelism is inside each step
 * (im2col rows, GEMM tiles), so the workspace does not depend on the thread count. */
#include "cpu_register.h"
#include "gemm.h"
#include "ops/op_defs.h"
#include "strided_iter.h"

#define CT_CONV2D_ALIGNMENT 64

/* Everything about one call that does not depend on the dtype. */
typedef struct ct_conv2d_job {
  int64_t n, channels, h, w;    /* input (N, C, H, W) */
  int64_t out_channels, kh, kw; /* weight (O, C/groups, kH, kW) */
  int64_t oh, ow;               /* output spatial extents */
  int64_t stride[2], padding[2], dilation[2], groups;
  int64_t cg, og;    /* input and output channels per group */
  int64_t taps;      /* cg · kH · kW: the im2col rows read from the input */
  int64_t k;         /* GEMM depth: taps, + 1 with a bias */
  int64_t p;         /* output positions per image: oh · ow */
  int64_t col_bytes; /* K × P elements, rounded up to the alignment */
  int64_t weight_bytes;
  bool has_bias;
  int64_t xs[4], ws[4], bs, os[4]; /* element strides of input, weight, bias, output */
  const char *x, *weight, *bias;
  char* out;
  void* col;            /* workspace: K × P compute-type elements */
  void* packed;         /* workspace: O × K compute-type elements */
  int64_t image, group; /* the (image, group) im2col is working on */
} ct_conv2d_job;

static int ct_conv2d_prepare(const ct_kernel_call* call, int64_t compute_size, ct_conv2d_job* job) {
  const ct_tensor* x = call->inputs[0];
  const ct_tensor* weight = call->inputs[1];
  const ct_tensor* bias = call->inputs[2];
  const ct_tensor* out = call->outputs[0];
  int status =
      ct_conv2d_params(call->attrs, job->stride, job->padding, job->dilation, &job->groups);
  if (status != CT_OK) return status;
  job->n = x->shape[0];
  job->channels = x->shape[1];
  job->h = x->shape[2];
  job->w = x->shape[3];
  job->out_channels = weight->shape[0];
  job->kh = weight->shape[2];
  job->kw = weight->shape[3];
  job->oh = out->shape[2];
  job->ow = out->shape[3];
  job->cg = job->channels / job->groups;
  job->og = job->out_channels / job->groups;
  job->has_bias = bias != NULL;
  job->taps = job->cg * job->kh * job->kw; /* <= the weight's element count */
  job->k = job->taps + (job->has_bias ? 1 : 0);
  job->p = job->oh * job->ow; /* <= the output's element count */
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
  job->col = job->packed = NULL;
  job->image = job->group = 0;
  /* The ct_*_overflow_i64 helpers return false on overflow. */
  int64_t col_elements, weight_elements, col_bytes, weight_bytes, total;
  if (!ct_checked_mul_i64(job->k, job->p, &col_elements) ||
      !ct_checked_mul_i64(col_elements, compute_size, &col_bytes) ||
      !ct_checked_add_i64(col_bytes, CT_CONV2D_ALIGNMENT - 1, &col_bytes) ||
      !ct_checked_mul_i64(job->out_channels, job->k, &weight_elements) ||
      !ct_checked_mul_i64(weight_elements, compute_size, &weight_bytes) ||
      !ct_checked_add_i64(col_bytes, weight_bytes, &total)) {
    return ct_set_error(CT_ERROR_SIZE_OVERFLOW,
                        "conv2d: the im2col workspace (%lld x %lld elements) overflows int64",
                        (long long)job->k, (long long)job->p);
  }
  job->col_bytes = col_bytes / CT_CONV2D_ALIGNMENT * CT_CONV2D_ALIGNMENT;
  job->weight_bytes = weight_bytes;
  return CT_OK;
}

/* Nothing to compute: no image, no output channel or no output position. */
static bool ct_conv2d_empty(const ct_conv2d_job* job) {
  return job->n == 0 || job->out_channels == 0 || job->p == 0;
}

static int ct_conv2d_workspace(const ct_kernel_call* call, int64_t compute_size, uint64_t* bytes,
                               uint64_t* alignment) {
  ct_conv2d_job job;
  const int status = ct_conv2d_prepare(call, compute_size, &job);
  if (status != CT_OK) return status;
  *bytes = ct_conv2d_empty(&job) ? 0 : (uint64_t)(job.col_bytes + job.weight_bytes);
  *alignment = CT_CONV2D_ALIGNMENT;
  return CT_OK;
}

/* The GEMM of one (image, group): out[n, g·Og : (g+1)·Og, :, :] = packed[g] · col, through
 * `gemm` (the instance for this dtype; compute_size and out_size are the element sizes of the
 * workspace and of the output). When the output's (H, W) dims do not flatten into one stride,
 * one GEMM per output row. */
static void ct_conv2d_gemm(const ct_conv2d_job* job, void (*gemm)(const ct_gemm_desc*),
                           int64_t compute_size, int64_t out_size) {
  ct_gemm_desc d = {0};
  d.m = job->og;
  d.k = job->k;
  d.a = (const char*)job->packed + job->group * job->og * job->k * compute_size;
  d.a_rs = job->k;
  d.a_cs = 1;
  d.b_rs = job->p;
  d.b_cs = 1;
  d.c_rs = job->os[1];
  char* c = job->out + (job->image * job->os[0] + job->group * job->og * job->os[1]) * out_size;
  int64_t flat = 0;
  if (job->oh == 1) {
    flat = job->os[3];
  } else if (job->ow == 1) {
    flat = job->os[2];
  } else if (job->os[2] == job->ow * job->os[3]) {
    flat = job->os[3];
  }
  if (flat != 0) {
    d.n = job->p;
    d.b = job->col;
    d.c = c;
    d.c_cs = flat;
    gemm(&d);
    return;
  }
  d.n = job->ow;
  d.c_cs = job->os[3];
  for (int64_t row = 0; row < job->oh; ++row) {
    d.b = (const char*)job->col + row * job->ow * compute_size;
    d.c = c + row * job->os[2] * out_size;
    gemm(&d);
  }
}

/* ----- kernels per dtype: (SFX, T, C, ID, GEMM) = storage type, compute type, dtype id, and
 * the GEMM instance taking C panels into T ----- */

#define CT_CONV2D_DEFINE(SFX, T, C, ID, GEMM)                                                    \
  /* Weight rows [begin, end) to compact C, bias in the last column. */                          \
  static void ct_cpu_conv2d_pack_##SFX(int64_t begin, int64_t end, void* context) {              \
    const ct_conv2d_job* job = context;                                                          \
    C* packed = job->packed;                                                                     \
    for (int64_t o = begin; o < end; ++o) {                                                      \
      C* dst = packed + o * job->k;                                                              \
      const T* w = (const T*)job->weight + o * job->ws[0];                                       \
      for (int64_t c = 0; c < job->cg; ++c) {                                                    \
        for (int64_t i = 0; i < job->kh; ++i) {                                                  \
          const T* src = w + c * job->ws[1] + i * job->ws[2];                                    \
          for (int64_t j = 0; j < job->kw; ++j) *dst++ = ct_load_##SFX(src[j * job->ws[3]]);     \
        }                                                                                        \
      }                                                                                          \
      if (job->has_bias) *dst = ct_load_##SFX(((const T*)job->bias)[o * job->bs]);               \
    }                                                                                            \
  }                                                                                              \
                                                                                                 \
  /* im2col rows [begin, end) of (job->image, job->group); row r is tap (c, i, j). */            \
  static void ct_cpu_conv2d_im2col_##SFX(int64_t begin, int64_t end, void* context) {            \
    const ct_conv2d_job* job = context;                                                          \
    const T* x = (const T*)job->x + job->image * job->xs[0] + job->group * job->cg * job->xs[1]; \
    const int64_t sh = job->stride[0], sw = job->stride[1];                                      \
    for (int64_t r = begin; r < end; ++r) {                                                      \
      const int64_t c = r / (job->kh * job->kw), i = (r / job->kw) % job->kh, j = r % job->kw;   \
      /* Column ow reads input column ow·sw + shift; [lo, hi) stay inside the input. */          \
      const int64_t shift = j * job->dilation[1] - job->padding[1];                              \
      int64_t lo = shift >= 0 ? 0 : (sw - 1 - shift) / sw;                                       \
      int64_t hi = job->w - shift > 0 ? (job->w - shift + sw - 1) / sw : 0;                      \
      if (lo > job->ow) lo = job->ow;                                                            \
      if (hi > job->ow) hi = job->ow;                                                            \
      if (hi < lo) hi = lo;                                                                      \
      const T* xc = x + c * job->xs[1];                                                          \
      C* dst = (C*)job->col + r * job->p;                                                        \
      for (int64_t oh = 0; oh < job->oh; ++oh, dst += job->ow) {                                 \
        const int64_t ih = oh * sh + i * job->dilation[0] - job->padding[0];                     \
        if (ih < 0 || ih >= job->h) {                                                            \
          for (int64_t ow = 0; ow < job->ow; ++ow) dst[ow] = (C)0;                               \
          continue;                                                                              \
        }                                                                                        \
        const T* src = xc + ih * job->xs[2];                                                     \
        for (int64_t ow = 0; ow < lo; ++ow) dst[ow] = (C)0;                                      \
        if (sw * job->xs[3] == 1) {                                                              \
          const T* s = src + shift;                                                              \
          for (int64_t ow = lo; ow < hi; ++ow) dst[ow] = ct_load_##SFX(s[ow]);                   \
        } else {                                                                                 \
          const int64_t step = sw * job->xs[3];                                                  \
          const T* s = src + shift * job->xs[3];                                                 \
          for (int64_t ow = lo; ow < hi; ++ow) dst[ow] = ct_load_##SFX(s[ow * step]);            \
        }                                                                                        \
        for (int64_t ow = hi; ow < job->ow; ++ow) dst[ow] = (C)0;                                \
      }                                                                                          \
    }                                                                                            \
  }                                                                                              \
                                                                                                 \
  static int ct_cpu_conv2d_workspace_##SFX(const ct_kernel_call* call, uint64_t* bytes,          \
                                           uint64_t* alignment) {                                \
    return ct_conv2d_workspace(call, (int64_t)sizeof(C), bytes, alignment);                      \
  }                                                                                              \
                                                                                                 \
  static int ct_cpu_conv2d_##SFX(const ct_kernel_call* call) {                                   \
    ct_conv2d_job job;                                                                           \
    const int status = ct_conv2d_prepare(call, (int64_t)sizeof(C), &job);                        \
    if (status != CT_OK) return status;                                                          \
    if (ct_conv2d_empty(&job)) return CT_OK;                                                     \
    job.col = call->workspace;                                                                   \
    job.packed = (char*)call->workspace + job.col_bytes;                                         \
    if (job.k > 0) {                                                                             \
      ct_cpu_parallel_for(job.out_channels, job.k, ct_cpu_conv2d_pack_##SFX, &job);              \
    }                                                                                            \
    if (job.has_bias) {                                                                          \
      C* ones = (C*)job.col + job.taps * job.p;                                                  \
      for (int64_t q = 0; q < job.p; ++q) ones[q] = (C)1;                                        \
    }                                                                                            \
    for (job.image = 0; job.image < job.n; ++job.image) {                                        \
      for (job.group = 0; job.group < job.groups; ++job.group) {                                 \
        ct_cpu_parallel_for(job.taps, job.p, ct_cpu_conv2d_im2col_##SFX, &job);                  \
        ct_conv2d_gemm(&job, ct_gemm_##GEMM, (int64_t)sizeof(C), (int64_t)sizeof(T));            \
      }                                                                                          \
    }                                                                                            \
    return CT_OK;                                                                                \
  }

#define CT_CONV2D_REG(SFX, T, C, ID, GEMM) \
  {"conv2d", 4, {ID, ID, ID, ID}, ct_cpu_conv2d_##SFX, ct_cpu_conv2d_workspace_##SFX, NULL},

/* The kernel list. */
#define CT_CONV2D_TYPES(X)                       \
  X(f16, uint16_t, float, CT_DT_F16, f32_f16)    \
  X(bf16, uint16_t, float, CT_DT_BF16, f32_bf16) \
  X(f32, float, float, CT_DT_F32, f32)           \
  X(f64, double, double, CT_DT_F64, f64)

CT_CONV2D_TYPES(CT_CONV2D_DEFINE)

static const ct_cpu_kernel ct_cpu_conv2d_kernels[] = {CT_CONV2D_TYPES(CT_CONV2D_REG)};

int ct_cpu_register_conv2d(void) {
  return ct_cpu_register_all(ct_cpu_conv2d_kernels, CT_CPU_KERNEL_COUNT(ct_cpu_conv2d_kernels));
}
