/* rotary_kernels.c - rotary_embedding: a "row" is one vector x[..., :] of the last dim; rows run
 * in parallel (each row by one thread, so results do not depend on the thread count), walked
 * with an odometer over x.shape[:-1] that keeps the element offsets of out, x and position_ids
 * (stride 0 along its broadcast dims). Without position_ids a row's position is its index along
 * the seq axis (the odometer's last dim). Every position is checked against cos's rows before
 * anything is written. Each pair is read before either entry is written, so out may alias x.
 * float16/bfloat16 compute in float32, float64 in double. */
#include <string.h>

#include "cpu_register.h"
#include "engine/cpu_dtypes.h"
#include "engine/row_walk.h"
#include "engine/strided_iter.h"

enum { CT_ROPE_OUT, CT_ROPE_X, CT_ROPE_POS, CT_ROPE_OPERANDS };

typedef struct ct_rotary_job {
  int32_t nd; /* row dims: x.ndim - 1 */
  int64_t shape[CT_MAX_NDIM];
  int64_t strides[CT_ROPE_OPERANDS][CT_MAX_NDIM]; /* element strides over the row dims */
  int64_t rows, dim, half, max_pos;
  int64_t out_step, x_step;                   /* element strides of the last dim */
  int64_t cos_row, cos_col, sin_row, sin_col; /* element strides of cos and sin */
  char* out;
  const char *x, *cos, *sin, *pos; /* pos NULL: positions from the seq axis */
  int32_t pos_bits;
  bool interleaved;
  int32_t bad;     /* a position out of range was found (relaxed atomics) */
  int64_t bad_pos; /* one such position */
} ct_rotary_job;

static inline int64_t ct_rotary_position(const ct_rotary_job* job, const int64_t* index,
                                         const int64_t* off) {
  if (!job->pos) return index[job->nd - 1];
  return job->pos_bits == 64 ? ((const int64_t*)job->pos)[off[CT_ROPE_POS]]
                             : (int64_t)((const int32_t*)job->pos)[off[CT_ROPE_POS]];
}

static void ct_rotary_check_rows(int64_t begin, int64_t end, void* context) {
  ct_rotary_job* job = context;
  int64_t index[CT_MAX_NDIM], off[CT_ROPE_OPERANDS];
  ct_row_walk_start(job->nd, job->shape, CT_ROPE_OPERANDS, job->strides, begin, index, off);
  for (int64_t r = begin; r < end; ++r) {
    const int64_t p = ct_rotary_position(job, index, off);
    if (p < 0 || p >= job->max_pos) {
      __atomic_store_n(&job->bad_pos, p, __ATOMIC_RELAXED);
      __atomic_store_n(&job->bad, 1, __ATOMIC_RELAXED);
    }
    ct_row_walk_next(job->nd, job->shape, CT_ROPE_OPERANDS, job->strides, index, off);
  }
}

#define CT_ROTARY_DEFINE(A, SFX, T, C, U, ID)                                                     \
  static void ct_cpu_rotary_rows_##SFX(int64_t begin, int64_t end, void* context) {               \
    const ct_rotary_job* job = context;                                                           \
    const T* xs = (const T*)job->x;                                                               \
    T* ys = (T*)job->out;                                                                         \
    const T* cs = (const T*)job->cos;                                                             \
    const T* ss = (const T*)job->sin;                                                             \
    const int64_t half = job->half, xstep = job->x_step, ystep = job->out_step;                   \
    /* pair k's entries: a at k * pair_step, b at a + partner */                                  \
    const int64_t pair_step = job->interleaved ? 2 : 1, partner = job->interleaved ? 1 : half;    \
    int64_t index[CT_MAX_NDIM], off[CT_ROPE_OPERANDS];                                            \
    ct_row_walk_start(job->nd, job->shape, CT_ROPE_OPERANDS, job->strides, begin, index, off);    \
    for (int64_t r = begin; r < end; ++r) {                                                       \
      const int64_t p = ct_rotary_position(job, index, off);                                      \
      const T* x = xs + off[CT_ROPE_X];                                                           \
      T* y = ys + off[CT_ROPE_OUT];                                                               \
      const T* c = cs + p * job->cos_row;                                                         \
      const T* s = ss + p * job->sin_row;                                                         \
      for (int64_t k = 0; k < half; ++k) {                                                        \
        const int64_t ia = k * pair_step, ib = ia + partner;                                      \
        const C a = ct_load_##SFX(x[ia * xstep]), b = ct_load_##SFX(x[ib * xstep]);               \
        const C cv = ct_load_##SFX(c[k * job->cos_col]), sv = ct_load_##SFX(s[k * job->sin_col]); \
        y[ia * ystep] = ct_store_##SFX(a * cv - b * sv);                                          \
        y[ib * ystep] = ct_store_##SFX(b * cv + a * sv);                                          \
      }                                                                                           \
      if (y != x || ystep != xstep) {                                                             \
        for (int64_t j = 2 * half; j < job->dim; ++j) y[j * ystep] = x[j * xstep];                \
      }                                                                                           \
      ct_row_walk_next(job->nd, job->shape, CT_ROPE_OPERANDS, job->strides, index, off);          \
    }                                                                                             \
  }

CT_CPU_FLOAT_TYPES(CT_ROTARY_DEFINE, _)

typedef struct ct_rotary_kernel {
  ct_cpu_range_body rows;
} ct_rotary_kernel;

static int ct_cpu_rotary_run(const ct_kernel_call* call) {
  const ct_tensor *x = call->inputs[0], *cos = call->inputs[1], *sin = call->inputs[2];
  const ct_tensor* pos = call->num_inputs > 3 ? call->inputs[3] : NULL;
  const ct_tensor* out = call->outputs[0];
  const ct_rotary_kernel* kernel = call->kernel_data;
  ct_rotary_job job;
  memset(&job, 0, sizeof job);
  job.nd = x->ndim - 1;
  job.rows = 1;
  for (int32_t k = 0; k < job.nd; ++k) {
    job.shape[k] = x->shape[k];
    job.rows *= x->shape[k];
    job.strides[CT_ROPE_OUT][k] = ct_tensor_stride(out, k);
    job.strides[CT_ROPE_X][k] = ct_tensor_stride(x, k);
  }
  if (pos) { /* right-aligned broadcast of position_ids over x.shape[:-1] */
    const int32_t shift = job.nd - pos->ndim;
    for (int32_t k = 0; k < pos->ndim; ++k) {
      job.strides[CT_ROPE_POS][shift + k] = pos->shape[k] == 1 ? 0 : ct_tensor_stride(pos, k);
    }
    job.pos = ct_tensor_base(pos);
    job.pos_bits = pos->dtype.bits;
  }
  job.dim = x->shape[x->ndim - 1];
  job.half = cos->shape[1];
  job.max_pos = cos->shape[0];
  job.interleaved = call->attrs[0].value.b != 0;
  job.x_step = ct_tensor_stride(x, x->ndim - 1);
  job.out_step = ct_tensor_stride(out, out->ndim - 1);
  job.cos_row = ct_tensor_stride(cos, 0);
  job.cos_col = ct_tensor_stride(cos, 1);
  job.sin_row = ct_tensor_stride(sin, 0);
  job.sin_col = ct_tensor_stride(sin, 1);
  job.x = ct_tensor_base(x);
  job.out = ct_tensor_base(out);
  job.cos = ct_tensor_base(cos);
  job.sin = ct_tensor_base(sin);
  if (job.rows == 0 || job.dim == 0) return CT_OK;
  if (pos) {
    ct_cpu_parallel_for(job.rows, 1, ct_rotary_check_rows, &job);
    if (job.bad) {
      return ct_set_error(CT_ERROR_INVALID_ARGUMENT,
                          "rotary_embedding: position %lld is out of range [0, %lld) (the rows "
                          "of cos and sin)",
                          (long long)job.bad_pos, (long long)job.max_pos);
    }
  }
  ct_cpu_parallel_for(job.rows, ct_size_mul(2, job.dim), kernel->rows, &job);
  return CT_OK;
}

#define CT_ROTARY_DATA(A, SFX, T, C, U, ID) \
  static const ct_rotary_kernel ct_rotary_kernel_##SFX = {ct_cpu_rotary_rows_##SFX};
CT_CPU_FLOAT_TYPES(CT_ROTARY_DATA, _)

/* Signature: x, cos, sin, position_ids (int32 or int64; absent matches either), out. */
#define CT_ROTARY_REG(A, SFX, T, C, U, ID)                    \
  {"rotary_embedding", 5,    {ID, ID, ID, CT_DT_I64, ID},     \
   ct_cpu_rotary_run,  NULL, &ct_rotary_kernel_##SFX},        \
      {"rotary_embedding", 5,    {ID, ID, ID, CT_DT_I32, ID}, \
       ct_cpu_rotary_run,  NULL, &ct_rotary_kernel_##SFX},

static const ct_cpu_kernel ct_cpu_rotary_kernels[] = {CT_CPU_FLOAT_TYPES(CT_ROTARY_REG, _)};

int ct_cpu_register_rotary(void) {
  return ct_cpu_register_all(ct_cpu_rotary_kernels, CT_CPU_KERNEL_COUNT(ct_cpu_rotary_kernels));
}
