/* norm_kernels.c - layer_norm, rms_norm, group_norm and batch_norm (inference).
 *
 * All four are one loop over "rows": a row is the set of elements sharing one mean and one
 * variance (layer/rms: one index of the leading dims; group: one (sample, group); batch: one
 * (sample, channel)). The input is seen as outer dims (the rows) × inner dims (the elements of a
 * row); every operand (input, output, weight, bias, running mean and variance) gets one element
 * stride per outer and per inner dim, zero where it does not vary, so that weight and bias
 * follow the channel (group/batch) or the inner index (layer/rms). Row statistics accumulate in
 * double (two passes: mean, then the sum of squared deviations); the normalisation itself is
 * computed in the compute type (float for float16/bfloat16/float32, double for float64). Rows
 * run in parallel; each row is computed by one thread, so results do not depend on the thread
 * count. Rows that are contiguous for every operand (layer_norm and rms_norm over C-contiguous
 * data) take a vectorised path: float32 the explicit vector loops of vector_math.h, the other
 * dtypes a loop compiled per ISA (cpu_isa.h) with CT_NORM_LANES independent double accumulators
 * per statistic, added pairwise at the end. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "engine/cpu_dtypes.h"
#include "engine/cpu_isa.h"
#include "engine/row_walk.h"
#include "cpu_register.h"
#include "engine/stream_store.h"
#include "engine/strided_iter.h"
#include "math/vector_math.h"

enum { CT_NORM_X, CT_NORM_OUT, CT_NORM_W, CT_NORM_B, CT_NORM_MEAN, CT_NORM_VAR, CT_NORM_OPERANDS };
typedef enum ct_norm_mode { CT_NORM_LAYER, CT_NORM_RMS, CT_NORM_GROUP, CT_NORM_BATCH } ct_norm_mode;

typedef struct ct_norm_job {
  ct_norm_mode mode;
  int32_t outer_nd, inner_nd; /* inner_nd >= 1 */
  int64_t outer_shape[CT_MAX_NDIM], inner_shape[CT_MAX_NDIM];
  int64_t rows, inner; /* products of the outer and inner extents */
  int64_t outer_strides[CT_NORM_OPERANDS][CT_MAX_NDIM];
  int64_t inner_strides[CT_NORM_OPERANDS][CT_MAX_NDIM];
  const char* base[CT_NORM_OPERANDS]; /* NULL for an absent operand */
  double eps;
} ct_norm_job;

/* Element offset of flat index `flat` (row-major over shape) under strides. */
static inline int64_t ct_norm_offset(int64_t flat, int32_t nd, const int64_t* shape,
                                     const int64_t* strides) {
  int64_t offset = 0;
  for (int32_t k = nd - 1; k >= 0; --k) {
    offset += (flat % shape[k]) * strides[k];
    flat /= shape[k];
  }
  return offset;
}

/* Fills the job from the call; the infer function validated shapes and attributes. */
static void ct_norm_prepare(const ct_kernel_call* call, ct_norm_mode mode, double default_eps,
                            ct_norm_job* job) {
  const ct_tensor* x = call->inputs[0];
  const ct_tensor* out = call->outputs[0];
  const ct_tensor* ops[CT_NORM_OPERANDS] = {x, out, NULL, NULL, NULL, NULL};
  memset(job, 0, sizeof(*job));
  job->mode = mode;
  switch (mode) {
    case CT_NORM_LAYER:
    case CT_NORM_RMS: {
      ops[CT_NORM_W] = call->inputs[1];
      if (mode == CT_NORM_LAYER) ops[CT_NORM_B] = call->inputs[2];
      const int32_t lead = x->ndim - (int32_t)call->attrs[0].count;
      job->outer_nd = lead;
      job->inner_nd = x->ndim - lead;
      for (int32_t k = 0; k < x->ndim; ++k) {
        for (int32_t i = 0; i < CT_NORM_OPERANDS; ++i) {
          if (!ops[i]) continue;
          const bool param = i >= CT_NORM_W;
          if (k < lead) {
            job->outer_strides[i][k] = param ? 0 : ct_tensor_stride(ops[i], k);
          } else {
            job->inner_strides[i][k - lead] = ct_tensor_stride(ops[i], param ? k - lead : k);
          }
        }
        if (k < lead) {
          job->outer_shape[k] = x->shape[k];
        } else {
          job->inner_shape[k - lead] = x->shape[k];
        }
      }
      job->eps = call->attrs[1].type == CT_ATTR_FLOAT ? call->attrs[1].value.f : default_eps;
      break;
    }
    case CT_NORM_GROUP: {
      ops[CT_NORM_W] = call->inputs[1];
      ops[CT_NORM_B] = call->inputs[2];
      const int64_t groups = call->attrs[0].value.i, cg = x->shape[1] / groups;
      job->outer_nd = 2;
      job->outer_shape[0] = x->shape[0];
      job->outer_shape[1] = groups;
      job->inner_nd = x->ndim - 1;
      job->inner_shape[0] = cg;
      for (int32_t k = 2; k < x->ndim; ++k) job->inner_shape[k - 1] = x->shape[k];
      for (int32_t i = 0; i < CT_NORM_OPERANDS; ++i) {
        if (!ops[i]) continue;
        if (i >= CT_NORM_W) {
          job->outer_strides[i][1] = cg * ct_tensor_stride(ops[i], 0);
          job->inner_strides[i][0] = ct_tensor_stride(ops[i], 0);
          continue;
        }
        job->outer_strides[i][0] = ct_tensor_stride(ops[i], 0);
        job->outer_strides[i][1] = cg * ct_tensor_stride(ops[i], 1);
        for (int32_t k = 1; k < x->ndim; ++k) {
          job->inner_strides[i][k - 1] = ct_tensor_stride(ops[i], k);
        }
      }
      job->eps = call->attrs[1].value.f;
      break;
    }
    case CT_NORM_BATCH: {
      ops[CT_NORM_MEAN] = call->inputs[1];
      ops[CT_NORM_VAR] = call->inputs[2];
      ops[CT_NORM_W] = call->inputs[3];
      ops[CT_NORM_B] = call->inputs[4];
      job->outer_nd = 2;
      job->outer_shape[0] = x->shape[0];
      job->outer_shape[1] = x->shape[1];
      job->inner_nd = x->ndim - 2;
      for (int32_t k = 2; k < x->ndim; ++k) job->inner_shape[k - 2] = x->shape[k];
      for (int32_t i = 0; i < CT_NORM_OPERANDS; ++i) {
        if (!ops[i]) continue;
        if (i >= CT_NORM_W) {
          job->outer_strides[i][1] = ct_tensor_stride(ops[i], 0);
          continue;
        }
        job->outer_strides[i][0] = ct_tensor_stride(ops[i], 0);
        job->outer_strides[i][1] = ct_tensor_stride(ops[i], 1);
        for (int32_t k = 2; k < x->ndim; ++k) {
          job->inner_strides[i][k - 2] = ct_tensor_stride(ops[i], k);
        }
      }
      job->eps = call->attrs[0].value.f;
      break;
    }
  }
  if (job->inner_nd == 0) { /* one element per row; strides stay 0 */
    job->inner_nd = 1;
    job->inner_shape[0] = 1;
  }
  job->rows = 1;
  for (int32_t k = 0; k < job->outer_nd; ++k) job->rows *= job->outer_shape[k];
  job->inner = 1;
  for (int32_t k = 0; k < job->inner_nd; ++k) job->inner *= job->inner_shape[k];
  for (int32_t i = 0; i < CT_NORM_OPERANDS; ++i) {
    job->base[i] = ops[i] ? ct_tensor_base(ops[i]) : NULL;
  }
}

/* Loops over the elements of one row: BODY sees `x` (element offset of the input) and, with
 * ALL, `y`, `w`, `b` (offsets of output, weight, bias). The last inner dim is the inner loop. */
#define CT_NORM_FOR_ROW(job, row_off, ALL, BODY)                                                \
  do {                                                                                          \
    const int32_t nd_ = (job)->inner_nd - 1;                                                    \
    const int64_t last_ = (job)->inner_shape[nd_], rest_ = (job)->inner / last_;                \
    const int64_t sx_ = (job)->inner_strides[CT_NORM_X][nd_];                                   \
    const int64_t sy_ = (job)->inner_strides[CT_NORM_OUT][nd_];                                 \
    const int64_t sw_ = (job)->inner_strides[CT_NORM_W][nd_];                                   \
    const int64_t sb_ = (job)->inner_strides[CT_NORM_B][nd_];                                   \
    for (int64_t j_ = 0; j_ < rest_; ++j_) {                                                    \
      int64_t x = (row_off)[CT_NORM_X] +                                                        \
                  ct_norm_offset(j_, nd_, (job)->inner_shape, (job)->inner_strides[CT_NORM_X]); \
      int64_t y = 0, w = 0, b = 0;                                                              \
      if (ALL) {                                                                                \
        y = (row_off)[CT_NORM_OUT] +                                                            \
            ct_norm_offset(j_, nd_, (job)->inner_shape, (job)->inner_strides[CT_NORM_OUT]);     \
        w = (row_off)[CT_NORM_W] +                                                              \
            ct_norm_offset(j_, nd_, (job)->inner_shape, (job)->inner_strides[CT_NORM_W]);       \
        b = (row_off)[CT_NORM_B] +                                                              \
            ct_norm_offset(j_, nd_, (job)->inner_shape, (job)->inner_strides[CT_NORM_B]);       \
      }                                                                                         \
      for (int64_t t_ = 0; t_ < last_; ++t_, x += sx_, y += sy_, w += sw_, b += sb_) {          \
        BODY                                                                                    \
      }                                                                                         \
    }                                                                                           \
  } while (0)

/* Independent accumulators of the contiguous path (a multiple of every vector width). */
#define CT_NORM_LANES 16

/* The contiguous path's row statistics and output, per dtype: ct_norm_row_<SFX>(x, y, w, b, n,
 * center, eps): center 0 for rms_norm (no mean subtracted); w, b may be NULL. */
#define CT_NORM_ROW_DEFINE(SFX, T, C, ID)                                                        \
  static CT_CPU_ISA_BODY double ct_norm_lanes_sum_##SFX(const double* r) {                       \
    double h[CT_NORM_LANES];                                                                     \
    for (int k = 0; k < CT_NORM_LANES; ++k) h[k] = r[k];                                         \
    for (int width = CT_NORM_LANES / 2; width > 0; width /= 2) {                                 \
      for (int k = 0; k < width; ++k) h[k] += h[k + width];                                      \
    }                                                                                            \
    return h[0];                                                                                 \
  }                                                                                              \
  static CT_CPU_ISA_BODY void ct_norm_row_##SFX##_body(const T* x, T* y, const T* w, const T* b, \
                                                       int64_t n, int center, double eps) {      \
    const int64_t whole = n - n % CT_NORM_LANES;                                                 \
    double r[CT_NORM_LANES];                                                                     \
    double mean = 0.0;                                                                           \
    if (center) {                                                                                \
      for (int k = 0; k < CT_NORM_LANES; ++k) r[k] = 0.0;                                        \
      for (int64_t i = 0; i < whole; i += CT_NORM_LANES) {                                       \
        for (int k = 0; k < CT_NORM_LANES; ++k) r[k] += (double)ct_load_##SFX(x[i + k]);         \
      }                                                                                          \
      double sum = ct_norm_lanes_sum_##SFX(r);                                                   \
      for (int64_t i = whole; i < n; ++i) sum += (double)ct_load_##SFX(x[i]);                    \
      mean = sum / (double)n;                                                                    \
    }                                                                                            \
    for (int k = 0; k < CT_NORM_LANES; ++k) r[k] = 0.0;                                          \
    for (int64_t i = 0; i < whole; i += CT_NORM_LANES) {                                         \
      for (int k = 0; k < CT_NORM_LANES; ++k) {                                                  \
        const double d = (double)ct_load_##SFX(x[i + k]) - mean;                                 \
        r[k] += d * d;                                                                           \
      }                                                                                          \
    }                                                                                            \
    double squares = ct_norm_lanes_sum_##SFX(r);                                                 \
    for (int64_t i = whole; i < n; ++i) {                                                        \
      const double d = (double)ct_load_##SFX(x[i]) - mean;                                       \
      squares += d * d;                                                                          \
    }                                                                                            \
    const C m = (C)mean, rstd = (C)(1.0 / sqrt(squares / (double)n + eps));                      \
    if (w && b) {                                                                                \
      for (int64_t i = 0; i < n; ++i)                                                            \
        y[i] = ct_store_##SFX((ct_load_##SFX(x[i]) - m) * rstd * ct_load_##SFX(w[i]) +           \
                              ct_load_##SFX(b[i]));                                              \
    } else if (w) {                                                                              \
      for (int64_t i = 0; i < n; ++i)                                                            \
        y[i] = ct_store_##SFX((ct_load_##SFX(x[i]) - m) * rstd * ct_load_##SFX(w[i]));           \
    } else if (b) {                                                                              \
      for (int64_t i = 0; i < n; ++i)                                                            \
        y[i] = ct_store_##SFX((ct_load_##SFX(x[i]) - m) * rstd + ct_load_##SFX(b[i]));           \
    } else {                                                                                     \
      for (int64_t i = 0; i < n; ++i) y[i] = ct_store_##SFX((ct_load_##SFX(x[i]) - m) * rstd);   \
    }                                                                                            \
  }                                                                                              \
  CT_CPU_ISA_LOOP(ct_norm_row_##SFX,                                                             \
                  (const T* x, T* y, const T* w, const T* b, int64_t n, int center, double eps), \
                  (x, y, w, b, n, center, eps))

/* Whether every row of the job is one contiguous run (row-major over the inner dims) for each
 * operand present. */
static bool ct_norm_rows_contiguous(const ct_norm_job* job) {
  if (job->mode != CT_NORM_LAYER && job->mode != CT_NORM_RMS) return false;
  for (int32_t i = CT_NORM_X; i <= CT_NORM_B; ++i) {
    if (!job->base[i]) continue;
    int64_t expected = 1;
    for (int32_t k = job->inner_nd - 1; k >= 0; --k) {
      if (job->inner_shape[k] > 1 && job->inner_strides[i][k] != expected) return false;
      expected *= job->inner_shape[k];
    }
  }
  return true;
}

/* Whether a dtype's contiguous rows take vector_math's norm row (float32 only). */
#define CT_NORM_VECTOR_f16 0
#define CT_NORM_VECTOR_bf16 0
#define CT_NORM_VECTOR_f32 1
#define CT_NORM_VECTOR_f64 0

/* The multi-index of row `row` over the outer dims and every operand's offset there. */
static void ct_norm_row_start(const ct_norm_job* job, int64_t row, int64_t* index, int64_t* off) {
  ct_row_walk_start(job->outer_nd, job->outer_shape, CT_NORM_OPERANDS, job->outer_strides, row,
                    index, off);
}

/* Steps index and offsets to the next row (an odometer: no divisions per row). */
static inline void ct_norm_row_next(const ct_norm_job* job, int64_t* index, int64_t* off) {
  ct_row_walk_next(job->outer_nd, job->outer_shape, CT_NORM_OPERANDS, job->outer_strides, index,
                   off);
}

#define CT_NORM_DEFINE(SFX, T, C, ID)                                                          \
  CT_NORM_ROW_DEFINE(SFX, T, C, ID)                                                            \
  static void ct_cpu_norm_rows_##SFX(int64_t begin, int64_t end, void* context) {              \
    const ct_norm_job* job = context;                                                          \
    const T* xs = (const T*)job->base[CT_NORM_X];                                              \
    T* ys = (T*)job->base[CT_NORM_OUT];                                                        \
    const T* ws = (const T*)job->base[CT_NORM_W];                                              \
    const T* bs = (const T*)job->base[CT_NORM_B];                                              \
    const bool contiguous = ct_norm_rows_contiguous(job);                                      \
    /* a huge share of the output skips the caches (stream_store.h) */                         \
    const int stream = ct_stream_worth((end - begin) * job->inner * (int64_t)sizeof(T));       \
    int64_t index[CT_MAX_NDIM], off[CT_NORM_OPERANDS];                                         \
    ct_norm_row_start(job, begin, index, off);                                                 \
    for (int64_t r = begin; r < end; ++r, ct_norm_row_next(job, index, off)) {                 \
      if (contiguous && CT_NORM_VECTOR_##SFX) {                                                \
        ct_vector_math_get()->norm_row_f32(                                                    \
            (const float*)(xs + off[CT_NORM_X]), (float*)(ys + off[CT_NORM_OUT]),              \
            ws ? (const float*)(ws + off[CT_NORM_W]) : NULL,                                   \
            bs ? (const float*)(bs + off[CT_NORM_B]) : NULL, job->inner,                       \
            job->mode == CT_NORM_LAYER, job->eps, stream);                                     \
        continue;                                                                              \
      }                                                                                        \
      if (contiguous) {                                                                        \
        ct_norm_row_##SFX(xs + off[CT_NORM_X], ys + off[CT_NORM_OUT],                          \
                          ws ? ws + off[CT_NORM_W] : NULL, bs ? bs + off[CT_NORM_B] : NULL,    \
                          job->inner, job->mode == CT_NORM_LAYER, job->eps);                   \
        continue;                                                                              \
      }                                                                                        \
      double mean = 0.0, var = 0.0;                                                            \
      if (job->mode == CT_NORM_BATCH) {                                                        \
        mean = (double)ct_load_##SFX(((const T*)job->base[CT_NORM_MEAN])[off[CT_NORM_MEAN]]);  \
        var = (double)ct_load_##SFX(((const T*)job->base[CT_NORM_VAR])[off[CT_NORM_VAR]]);     \
      } else {                                                                                 \
        if (job->mode != CT_NORM_RMS) {                                                        \
          double sum = 0.0;                                                                    \
          CT_NORM_FOR_ROW(job, off, false, sum += (double)ct_load_##SFX(xs[x]););              \
          mean = sum / (double)job->inner;                                                     \
        }                                                                                      \
        double squares = 0.0;                                                                  \
        CT_NORM_FOR_ROW(job, off, false, {                                                     \
          const double d = (double)ct_load_##SFX(xs[x]) - mean;                                \
          squares += d * d;                                                                    \
        });                                                                                    \
        var = squares / (double)job->inner;                                                    \
      }                                                                                        \
      const C m = (C)mean, rstd = (C)(1.0 / sqrt(var + job->eps));                             \
      CT_NORM_FOR_ROW(job, off, true, {                                                        \
        C v = (ct_load_##SFX(xs[x]) - m) * rstd;                                               \
        if (ws) v *= ct_load_##SFX(ws[w]);                                                     \
        if (bs) v += ct_load_##SFX(bs[b]);                                                     \
        ys[y] = ct_store_##SFX(v);                                                             \
      });                                                                                      \
    }                                                                                          \
    if (stream) ct_stream_fence(); /* the rows' non-temporal stores, once */                   \
  }                                                                                            \
                                                                                               \
  static int ct_cpu_norm_run_##SFX(const ct_kernel_call* call, ct_norm_mode mode) {            \
    ct_norm_job job;                                                                           \
    ct_norm_prepare(call, mode, sizeof(C) == sizeof(float) ? FLT_EPSILON : DBL_EPSILON, &job); \
    if (job.rows == 0 || job.inner == 0) return CT_OK;                                         \
    ct_cpu_parallel_for(job.rows, ct_size_mul(3, job.inner), ct_cpu_norm_rows_##SFX, &job);    \
    return CT_OK;                                                                              \
  }                                                                                            \
  static int ct_cpu_layer_norm_##SFX(const ct_kernel_call* call) {                             \
    return ct_cpu_norm_run_##SFX(call, CT_NORM_LAYER);                                         \
  }                                                                                            \
  static int ct_cpu_rms_norm_##SFX(const ct_kernel_call* call) {                               \
    return ct_cpu_norm_run_##SFX(call, CT_NORM_RMS);                                           \
  }                                                                                            \
  static int ct_cpu_group_norm_##SFX(const ct_kernel_call* call) {                             \
    return ct_cpu_norm_run_##SFX(call, CT_NORM_GROUP);                                         \
  }                                                                                            \
  static int ct_cpu_batch_norm_##SFX(const ct_kernel_call* call) {                             \
    return ct_cpu_norm_run_##SFX(call, CT_NORM_BATCH);                                         \
  }

#define CT_NORM_REG(SFX, T, C, ID)                                              \
  {"layer_norm", 4, {ID, ID, ID, ID}, ct_cpu_layer_norm_##SFX, NULL, NULL},     \
      {"rms_norm", 3, {ID, ID, ID}, ct_cpu_rms_norm_##SFX, NULL, NULL},         \
      {"group_norm", 4, {ID, ID, ID, ID}, ct_cpu_group_norm_##SFX, NULL, NULL}, \
      {"batch_norm", 6, {ID, ID, ID, ID, ID, ID}, ct_cpu_batch_norm_##SFX, NULL, NULL},

#define CT_NORM_TYPES(X)               \
  X(f16, uint16_t, float, CT_DT_F16)   \
  X(bf16, uint16_t, float, CT_DT_BF16) \
  X(f32, float, float, CT_DT_F32)      \
  X(f64, double, double, CT_DT_F64)

CT_NORM_TYPES(CT_NORM_DEFINE)

static const ct_cpu_kernel ct_cpu_norm_kernels[] = {CT_NORM_TYPES(CT_NORM_REG)};

int ct_cpu_register_norm(void) {
  return ct_cpu_register_all(ct_cpu_norm_kernels, CT_CPU_KERNEL_COUNT(ct_cpu_norm_kernels));
}
