/* scan_kernels.c - cumulative_sum, cumulative_prod along one axis.
 *
 * Every lane (the elements along the axis at one position of the other dimensions) is scanned
 * sequentially left to right through its strides, in the accumulator type of its dtype class:
 * bool and signed ints in uint64 (wrapping, stored as int64), unsigned ints in uint64,
 * float16/bfloat16 in float (each output rounded), float32/float64 in double, complex in
 * complex128 (products with NumPy's plain formula, complex_math.h). Lanes run in
 * parallel through ct_cpu_parallel_for. A 0-d x scans as one lane of length 1. */
#include <string.h>

#include "math/complex_math.h"
#include "engine/cpu_dtypes.h"
#include "cpu_register.h"
#include "engine/strided_iter.h"

/* Dtype classes, passed as A through the dtype lists: accumulator, output type, output id, and
 * how an input value enters the accumulator and the accumulator leaves as an output. */
#define CT_SCAN_ACC_SINT uint64_t
#define CT_SCAN_OUT_SINT(T) int64_t
#define CT_SCAN_OID_SINT(ID) CT_DT_I64
#define CT_SCAN_LOAD_SINT(SFX, v) ((uint64_t)(int64_t)ct_load_##SFX(v))
#define CT_SCAN_STORE_SINT(SFX, a) ((int64_t)(a))

#define CT_SCAN_ACC_UINT uint64_t
#define CT_SCAN_OUT_UINT(T) uint64_t
#define CT_SCAN_OID_UINT(ID) CT_DT_U64
#define CT_SCAN_LOAD_UINT(SFX, v) ((uint64_t)ct_load_##SFX(v))
#define CT_SCAN_STORE_UINT(SFX, a) (a)

#define CT_SCAN_ACC_LOWP float
#define CT_SCAN_OUT_LOWP(T) T
#define CT_SCAN_OID_LOWP(ID) ID
#define CT_SCAN_LOAD_LOWP(SFX, v) ct_load_##SFX(v)
#define CT_SCAN_STORE_LOWP(SFX, a) ct_store_##SFX(a)

#define CT_SCAN_ACC_FULLP double
#define CT_SCAN_OUT_FULLP(T) T
#define CT_SCAN_OID_FULLP(ID) ID
#define CT_SCAN_LOAD_FULLP(SFX, v) ((double)ct_load_##SFX(v))
#define CT_SCAN_STORE_FULLP(SFX, a) ct_store_##SFX(a)

#define CT_SCAN_ACC_CPLX ct_complex128
#define CT_SCAN_OUT_CPLX(T) T
#define CT_SCAN_OID_CPLX(ID) ID
#define CT_SCAN_LOAD_CPLX(SFX, v) ((ct_complex128)ct_load_##SFX(v))
#define CT_SCAN_STORE_CPLX(SFX, a) ct_store_##SFX(a)

/* Every dtype with its class. */
#define CT_SCAN_TYPES(X)         \
  CT_CPU_BOOL_TYPE(X, SINT)      \
  CT_CPU_SIGNED_TYPES(X, SINT)   \
  CT_CPU_UNSIGNED_TYPES(X, UINT) \
  CT_CPU_LOWP_TYPES(X, LOWP)     \
  CT_CPU_FULLP_TYPES(X, FULLP)   \
  CT_CPU_COMPLEX_TYPES(X, CPLX)

/* The ops: identity and combine. */
#define CT_SCAN_IDENTITY_cumulative_sum 0
#define CT_SCAN_COMBINE_cumulative_sum(a, b) ((a) + (b))
#define CT_SCAN_IDENTITY_cumulative_prod 1
/* Complex accumulators multiply with NumPy's plain product, not C's Annex G operator. */
#define CT_SCAN_COMBINE_cumulative_prod(a, b) \
  _Generic((a), ct_complex128: ct_cmul_ct_complex128((a), (b)), default: (a) * (b))

typedef void (*ct_scan_lane_fn)(const char* x, int64_t x_step, char* y, int64_t y_step, int64_t n,
                                int include_initial);

/* One lane of OP for one dtype, written once. */
#define CT_SCAN_LANE(OP, A, SFX, T, C, U, ID)                                              \
  static void ct_scan_##OP##_##SFX(const char* x, int64_t x_step, char* y, int64_t y_step, \
                                   int64_t n, int include_initial) {                       \
    typedef CT_SCAN_ACC_##A acc_t;                                                         \
    typedef CT_SCAN_OUT_##A(T) out_t;                                                      \
    acc_t acc = (acc_t)CT_SCAN_IDENTITY_##OP;                                              \
    if (include_initial) {                                                                 \
      const out_t o = CT_SCAN_STORE_##A(SFX, acc);                                         \
      memcpy(y, &o, sizeof o);                                                             \
      y += y_step;                                                                         \
    }                                                                                      \
    for (int64_t i = 0; i < n; ++i) {                                                      \
      T v;                                                                                 \
      memcpy(&v, x + i * x_step, sizeof v);                                                \
      acc = CT_SCAN_COMBINE_##OP(acc, (acc_t)CT_SCAN_LOAD_##A(SFX, v));                    \
      const out_t o = CT_SCAN_STORE_##A(SFX, acc);                                         \
      memcpy(y + i * y_step, &o, sizeof o);                                                \
    }                                                                                      \
  }
#define CT_SCAN_LANES_X(A, SFX, T, C, U, ID)        \
  CT_SCAN_LANE(cumulative_sum, A, SFX, T, C, U, ID) \
  CT_SCAN_LANE(cumulative_prod, A, SFX, T, C, U, ID)
CT_SCAN_TYPES(CT_SCAN_LANES_X)

/* ----- the driver: lanes along an axis ----- */

typedef struct ct_scan_job {
  ct_scan_lane_fn lane;
  int32_t outer_ndim;
  int64_t outer_shape[CT_MAX_NDIM];
  int64_t x_strides[CT_MAX_NDIM]; /* bytes, over the outer dims */
  int64_t y_strides[CT_MAX_NDIM];
  const char* x;
  char* y;
  int64_t x_step, y_step, n;
  int include_initial;
} ct_scan_job;

static void ct_scan_do_lanes(int64_t begin, int64_t end, void* context) {
  const ct_scan_job* job = context;
  for (int64_t lane = begin; lane < end; ++lane) {
    int64_t rest = lane, xo = 0, yo = 0;
    for (int32_t d = job->outer_ndim - 1; d >= 0; --d) {
      const int64_t i = rest % job->outer_shape[d];
      rest /= job->outer_shape[d];
      xo += i * job->x_strides[d];
      yo += i * job->y_strides[d];
    }
    job->lane(job->x + xo, job->x_step, job->y + yo, job->y_step, job->n, job->include_initial);
  }
}

static int ct_scan_run(const ct_kernel_call* call, ct_scan_lane_fn lane) {
  const ct_tensor* x = call->inputs[0];
  const ct_tensor* y = call->outputs[0];
  ct_scan_job job;
  memset(&job, 0, sizeof job);
  job.lane = lane;
  job.include_initial = call->attrs[1].value.b;
  job.x = ct_tensor_base(x);
  job.y = ct_tensor_base(y);
  const int64_t xsize = ct_dtype_size(x->dtype);
  const int64_t ysize = ct_dtype_size(y->dtype);
  int64_t lanes = 1;
  if (x->ndim == 0) {
    job.n = 1;
    job.x_step = 0;
    job.y_step = ct_tensor_stride(y, 0) * ysize;
  } else {
    int64_t axis = call->attrs[0].type == CT_ATTR_NONE ? 0 : call->attrs[0].value.i;
    if (axis < 0) axis += x->ndim;
    job.n = x->shape[axis];
    for (int32_t d = 0, o = 0; d < x->ndim; ++d) {
      if (d == axis) {
        job.x_step = ct_tensor_stride(x, d) * xsize;
        job.y_step = ct_tensor_stride(y, d) * ysize;
        continue;
      }
      job.outer_shape[o] = x->shape[d];
      job.x_strides[o] = ct_tensor_stride(x, d) * xsize;
      job.y_strides[o] = ct_tensor_stride(y, d) * ysize;
      lanes *= x->shape[d];
      ++o;
    }
    job.outer_ndim = x->ndim - 1;
  }
  if (lanes == 0 || (job.n == 0 && !job.include_initial)) return CT_OK;
  ct_cpu_parallel_for(lanes, ct_size_add(job.n, 1), ct_scan_do_lanes, &job);
  return CT_OK;
}

#define CT_SCAN_RUN_X(A, SFX, T, C, U, ID)                              \
  static int ct_cpu_cumulative_sum_##SFX(const ct_kernel_call* call) {  \
    return ct_scan_run(call, ct_scan_cumulative_sum_##SFX);             \
  }                                                                     \
  static int ct_cpu_cumulative_prod_##SFX(const ct_kernel_call* call) { \
    return ct_scan_run(call, ct_scan_cumulative_prod_##SFX);            \
  }
CT_SCAN_TYPES(CT_SCAN_RUN_X)

/* ----- registration ----- */

#define CT_SCAN_REG_X(A, SFX, T, C, U, ID)                                                   \
  {"cumulative_sum", 2, {ID, CT_SCAN_OID_##A(ID)}, ct_cpu_cumulative_sum_##SFX, NULL, NULL}, \
      {"cumulative_prod", 2, {ID, CT_SCAN_OID_##A(ID)}, ct_cpu_cumulative_prod_##SFX, NULL, NULL},

static const ct_cpu_kernel ct_cpu_scan_kernels[] = {CT_SCAN_TYPES(CT_SCAN_REG_X)};

int ct_cpu_register_scan(void) {
  return ct_cpu_register_all(ct_cpu_scan_kernels, CT_CPU_KERNEL_COUNT(ct_cpu_scan_kernels));
}
