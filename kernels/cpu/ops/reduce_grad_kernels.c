/* reduce_grad_kernels.c - the backward operators of the reductions (sum, mean, prod, max, min,
 * logsumexp, var, std, vector_norm) and of the scans (cumulative_sum, cumulative_prod).
 *
 * Reductions: x's dimensions split into kept ("outer") and reduced ("inner") ones. Each group
 * (one element of grad_out) is handled by one task: a first pass over the group's elements
 * gathers what the formula needs (the mean, the count of ties, the product of the non-zero
 * elements and the number of zeros), a second writes grad_x. grad_out's element of a group is
 * found through its strides over the kept dimensions, so keepdims, negative axes and tuples of
 * axes are only a different split. Everything is computed in double and rounded once.
 *
 * Scans: one lane per position of the other dimensions, walked backwards (scan_kernels.c's
 * layout). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/int_div.h"
#include "cpu_register.h"
#include "engine/cpu_dtypes.h"
#include "engine/strided_iter.h"

/* Groups walked together at most (reduce_grad_impl.h's ct_rgrad_block). */
#define CT_RGRAD_BLOCK 64

typedef enum ct_rgrad_kind {
  CT_RGRAD_SUM,
  CT_RGRAD_MEAN,
  CT_RGRAD_PROD,
  CT_RGRAD_MAX, /* also min: the tie test is x == out either way */
  CT_RGRAD_LOGSUMEXP,
  CT_RGRAD_VAR,
  CT_RGRAD_STD,
  CT_RGRAD_VECTOR_NORM
} ct_rgrad_kind;

/* One call, in byte strides. */
typedef struct ct_rgrad_job {
  ct_rgrad_kind kind;
  int32_t n_outer, n_inner;
  int64_t outer_shape[CT_MAX_NDIM], inner_shape[CT_MAX_NDIM];
  int64_t x_outer[CT_MAX_NDIM], x_inner[CT_MAX_NDIM];
  int64_t gx_outer[CT_MAX_NDIM], gx_inner[CT_MAX_NDIM];
  int64_t g_outer[CT_MAX_NDIM], o_outer[CT_MAX_NDIM];
  int64_t group_size;
  double correction; /* var, std; vector_norm: its ord */
  bool full;         /* axis None */
  int64_t block;     /* groups a task walks together (ct_rgrad_block) */
  const char *g, *x, *out;
  char* gx;
  /* The element-wise path (kinds without group statistics): every dim of x in order, grad_out
   * and out with stride 0 along the reduced ones. */
  int32_t ndim;
  int64_t shape[CT_MAX_NDIM], xs[CT_MAX_NDIM], gxs[CT_MAX_NDIM], gs[CT_MAX_NDIM], os[CT_MAX_NDIM];
} ct_rgrad_job;

/* Walks the inner (reduced) elements of one group: BODY sees xp (x's element) and gp (grad_x's
 * element). */
#define CT_RGRAD_FOR_GROUP(job, x0, gx0, BODY)               \
  do {                                                       \
    int64_t idx_[CT_MAX_NDIM] = {0};                         \
    const char* xp = (x0);                                   \
    char* gp = (gx0);                                        \
    for (int64_t e_ = 0; e_ < (job)->group_size; ++e_) {     \
      BODY;                                                  \
      for (int32_t d_ = (job)->n_inner - 1; d_ >= 0; --d_) { \
        xp += (job)->x_inner[d_];                            \
        gp += (job)->gx_inner[d_];                           \
        if (++idx_[d_] < (job)->inner_shape[d_]) break;      \
        xp -= (job)->x_inner[d_] * (job)->inner_shape[d_];   \
        gp -= (job)->gx_inner[d_] * (job)->inner_shape[d_];  \
        idx_[d_] = 0;                                        \
      }                                                      \
    }                                                        \
  } while (0)

/* Element access per dtype, in double. */
#define CT_RGRAD_ACCESS_X(A, SFX, T, C, U, ID)          \
  static double ct_rgrad_load_##SFX(const char* p) {    \
    T v;                                                \
    memcpy(&v, p, sizeof v);                            \
    return (double)ct_load_##SFX(v);                    \
  }                                                     \
  static void ct_rgrad_store_##SFX(char* p, double v) { \
    const T t = ct_store_##SFX((C)v);                   \
    memcpy(p, &t, sizeof t);                            \
  }
CT_CPU_FLOAT_TYPES(CT_RGRAD_ACCESS_X, _)

typedef struct ct_sgrad_job {
  bool prod;
  int32_t outer_ndim;
  int64_t outer_shape[CT_MAX_NDIM];
  int64_t g_strides[CT_MAX_NDIM], x_strides[CT_MAX_NDIM], o_strides[CT_MAX_NDIM],
      gx_strides[CT_MAX_NDIM];
  const char *g, *x, *out;
  char* gx;
  int64_t g_step, x_step, o_step, gx_step, n;
  int include_initial;
} ct_sgrad_job;

/* The loops, once per dtype. */
#define CT_RG_SFX f16
#include "reduce_grad_impl.h"
#define CT_RG_SFX bf16
#include "reduce_grad_impl.h"
#define CT_RG_SFX f32
#include "reduce_grad_impl.h"
#define CT_RG_SFX f64
#include "reduce_grad_impl.h"

/* Splits x's dims into kept and reduced ones (inputs: grad_out, x[, out]). */
static int ct_rgrad_run(const ct_kernel_call* call, ct_rgrad_kind kind, ct_cpu_range_body rows,
                        ct_cpu_range_body groups_body) {
  const ct_tensor* g = call->inputs[0];
  const ct_tensor* x = call->inputs[1];
  const ct_tensor* out = call->num_inputs > 2 ? call->inputs[2] : NULL;
  const ct_tensor* gx = call->outputs[0];
  const int64_t size = ct_dtype_size(x->dtype);
  ct_rgrad_job job;
  memset(&job, 0, sizeof job);
  job.kind = kind;
  job.g = ct_tensor_base(g);
  job.x = ct_tensor_base(x);
  job.out = out ? ct_tensor_base(out) : NULL;
  job.gx = ct_tensor_base(gx);
  job.group_size = 1;
  if (kind == CT_RGRAD_VAR || kind == CT_RGRAD_STD || kind == CT_RGRAD_VECTOR_NORM) {
    job.correction = call->attrs[2].value.f;
  }
  bool mask[CT_MAX_NDIM];
  const ct_attr_value* axis = &call->attrs[0];
  job.full = axis->type == CT_ATTR_NONE;
  for (int32_t k = 0; k < x->ndim; ++k) mask[k] = axis->type == CT_ATTR_NONE;
  if (axis->type != CT_ATTR_NONE) {
    const int64_t count = axis->type == CT_ATTR_INT_LIST ? axis->count : 1;
    for (int64_t j = 0; j < count; ++j) {
      int64_t a = axis->type == CT_ATTR_INT_LIST ? axis->value.ints[j] : axis->value.i;
      if (a < 0) a += x->ndim;
      mask[a] = true;
    }
  }
  const bool keepdims = call->attrs[1].value.b != 0;
  int64_t groups = 1;
  for (int32_t k = 0, r = 0; k < x->ndim; ++k) {
    job.shape[k] = x->shape[k];
    job.xs[k] = ct_tensor_stride(x, k) * size;
    job.gxs[k] = ct_tensor_stride(gx, k) * size;
    job.gs[k] = mask[k] || x->shape[k] == 1 ? 0 : ct_tensor_stride(g, r) * size;
    job.os[k] = mask[k] || x->shape[k] == 1 || !out ? 0 : ct_tensor_stride(out, r) * size;
    if (mask[k]) {
      if (x->shape[k] == 1) { /* an extent-1 reduced dim adds nothing to the group */
        if (keepdims) ++r;
        continue;
      }
      job.inner_shape[job.n_inner] = x->shape[k];
      job.x_inner[job.n_inner] = ct_tensor_stride(x, k) * size;
      job.gx_inner[job.n_inner] = ct_tensor_stride(gx, k) * size;
      job.group_size *= x->shape[k];
      ++job.n_inner;
      if (keepdims) ++r;
      continue;
    }
    job.outer_shape[job.n_outer] = x->shape[k];
    job.x_outer[job.n_outer] = ct_tensor_stride(x, k) * size;
    job.gx_outer[job.n_outer] = ct_tensor_stride(gx, k) * size;
    job.g_outer[job.n_outer] = ct_tensor_stride(g, r) * size;
    job.o_outer[job.n_outer] = out ? ct_tensor_stride(out, r) * size : 0;
    groups *= x->shape[k];
    ++job.n_outer;
    ++r;
  }
  for (int32_t k = 0; k < x->ndim; ++k) {
    if (x->shape[k] == 0) return CT_OK; /* nothing to write */
  }
  job.ndim = x->ndim;
  if (kind == CT_RGRAD_SUM || kind == CT_RGRAD_MEAN || kind == CT_RGRAD_LOGSUMEXP) {
    if (x->ndim == 0) {
      job.ndim = 1;
      job.shape[0] = 1;
    }
    const int64_t n = job.shape[job.ndim - 1];
    ct_cpu_parallel_for(ct_tensor_numel(x) / n, n, rows, &job);
    return CT_OK;
  }
  /* Blocks of neighbouring groups where the last kept dim is denser than the innermost reduced
   * one (say, a reduction over axis 0 of a matrix), one group a task otherwise. */
  job.block = 1;
  if (job.n_outer > 0 && job.n_inner > 0 &&
      llabs(job.x_outer[job.n_outer - 1]) < llabs(job.x_inner[job.n_inner - 1])) {
    job.block = CT_RGRAD_BLOCK;
  }
  const int64_t last = job.n_outer > 0 ? job.outer_shape[job.n_outer - 1] : 1;
  const int64_t units = groups / last * ct_div_up(last, job.block);
  ct_cpu_parallel_for(units, ct_size_add(ct_size_mul(job.group_size, 2 * job.block), 1),
                      groups_body, &job);
  return CT_OK;
}

/* ----- scans ----- */

static int ct_sgrad_run(const ct_kernel_call* call, bool prod, ct_cpu_range_body lanes_body) {
  const ct_tensor* g = call->inputs[0];
  const ct_tensor* x = call->inputs[1];
  const ct_tensor* out = call->num_inputs > 2 ? call->inputs[2] : NULL;
  const ct_tensor* gx = call->outputs[0];
  const int64_t size = ct_dtype_size(x->dtype);
  ct_sgrad_job job;
  memset(&job, 0, sizeof job);
  job.prod = prod;
  job.include_initial = call->attrs[1].value.b;
  job.g = ct_tensor_base(g);
  job.x = ct_tensor_base(x);
  job.out = out ? ct_tensor_base(out) : NULL;
  job.gx = ct_tensor_base(gx);
  int64_t lanes = 1;
  if (x->ndim == 0) {
    job.n = 1;
    job.g_step = ct_tensor_stride(g, 0) * size;
    job.o_step = out ? ct_tensor_stride(out, 0) * size : 0;
  } else {
    int64_t axis = call->attrs[0].type == CT_ATTR_NONE ? 0 : call->attrs[0].value.i;
    if (axis < 0) axis += x->ndim;
    job.n = x->shape[axis];
    for (int32_t d = 0, o = 0; d < x->ndim; ++d) {
      if (d == axis) {
        job.g_step = ct_tensor_stride(g, d) * size;
        job.x_step = ct_tensor_stride(x, d) * size;
        job.o_step = out ? ct_tensor_stride(out, d) * size : 0;
        job.gx_step = ct_tensor_stride(gx, d) * size;
        continue;
      }
      job.outer_shape[o] = x->shape[d];
      job.g_strides[o] = ct_tensor_stride(g, d) * size;
      job.x_strides[o] = ct_tensor_stride(x, d) * size;
      job.o_strides[o] = out ? ct_tensor_stride(out, d) * size : 0;
      job.gx_strides[o] = ct_tensor_stride(gx, d) * size;
      lanes *= x->shape[d];
      ++o;
    }
    job.outer_ndim = x->ndim - 1;
  }
  if (lanes == 0 || job.n == 0) return CT_OK;
  ct_cpu_parallel_for(lanes, ct_size_add(job.n, 1), lanes_body, &job);
  return CT_OK;
}

/* ----- kernels: one named function per op and dtype ----- */

#define CT_RGRAD_KERNELS_X(A, SFX, T, C, U, ID)                                                 \
  static int ct_cpu_sum_backward_##SFX(const ct_kernel_call* call) {                            \
    return ct_rgrad_run(call, CT_RGRAD_SUM, ct_rgrad_do_rows_##SFX, ct_rgrad_do_groups_##SFX);  \
  }                                                                                             \
  static int ct_cpu_mean_backward_##SFX(const ct_kernel_call* call) {                           \
    return ct_rgrad_run(call, CT_RGRAD_MEAN, ct_rgrad_do_rows_##SFX, ct_rgrad_do_groups_##SFX); \
  }                                                                                             \
  static int ct_cpu_prod_backward_##SFX(const ct_kernel_call* call) {                           \
    return ct_rgrad_run(call, CT_RGRAD_PROD, ct_rgrad_do_rows_##SFX, ct_rgrad_do_groups_##SFX); \
  }                                                                                             \
  static int ct_cpu_max_backward_##SFX(const ct_kernel_call* call) {                            \
    return ct_rgrad_run(call, CT_RGRAD_MAX, ct_rgrad_do_rows_##SFX, ct_rgrad_do_groups_##SFX);  \
  }                                                                                             \
  static int ct_cpu_logsumexp_backward_##SFX(const ct_kernel_call* call) {                      \
    return ct_rgrad_run(call, CT_RGRAD_LOGSUMEXP, ct_rgrad_do_rows_##SFX,                       \
                        ct_rgrad_do_groups_##SFX);                                              \
  }                                                                                             \
  static int ct_cpu_var_backward_##SFX(const ct_kernel_call* call) {                            \
    return ct_rgrad_run(call, CT_RGRAD_VAR, ct_rgrad_do_rows_##SFX, ct_rgrad_do_groups_##SFX);  \
  }                                                                                             \
  static int ct_cpu_std_backward_##SFX(const ct_kernel_call* call) {                            \
    return ct_rgrad_run(call, CT_RGRAD_STD, ct_rgrad_do_rows_##SFX, ct_rgrad_do_groups_##SFX);  \
  }                                                                                             \
  static int ct_cpu_vector_norm_backward_##SFX(const ct_kernel_call* call) {                    \
    return ct_rgrad_run(call, CT_RGRAD_VECTOR_NORM, ct_rgrad_do_rows_##SFX,                     \
                        ct_rgrad_do_groups_##SFX);                                              \
  }                                                                                             \
  static int ct_cpu_cumulative_sum_backward_##SFX(const ct_kernel_call* call) {                 \
    return ct_sgrad_run(call, false, ct_sgrad_do_lanes_##SFX);                                  \
  }                                                                                             \
  static int ct_cpu_cumulative_prod_backward_##SFX(const ct_kernel_call* call) {                \
    return ct_sgrad_run(call, true, ct_sgrad_do_lanes_##SFX);                                   \
  }
CT_CPU_FLOAT_TYPES(CT_RGRAD_KERNELS_X, _)

/* ----- registration ----- */

#define CT_RGRAD_REG2(NAME, SFX, ID) {#NAME, 3, {ID, ID, ID}, ct_cpu_##NAME##_##SFX, NULL, NULL},
#define CT_RGRAD_REG3(NAME, SFX, ID) \
  {#NAME, 4, {ID, ID, ID, ID}, ct_cpu_##NAME##_##SFX, NULL, NULL},
#define CT_RGRAD_REG_X(A, SFX, T, C, U, ID)                                                    \
  CT_RGRAD_REG2(sum_backward, SFX, ID)                                                         \
  CT_RGRAD_REG2(mean_backward, SFX, ID)                                                        \
  CT_RGRAD_REG2(prod_backward, SFX, ID)                                                        \
  CT_RGRAD_REG3(max_backward, SFX, ID){                                                        \
      "min_backward", 4, {ID, ID, ID, ID}, ct_cpu_max_backward_##SFX, NULL, NULL},             \
      CT_RGRAD_REG3(logsumexp_backward, SFX, ID) CT_RGRAD_REG2(var_backward, SFX, ID)          \
          CT_RGRAD_REG3(std_backward, SFX, ID) CT_RGRAD_REG2(cumulative_sum_backward, SFX, ID) \
              CT_RGRAD_REG3(cumulative_prod_backward, SFX, ID)                                 \
                  CT_RGRAD_REG3(vector_norm_backward, SFX, ID)

static const ct_cpu_kernel ct_cpu_reduce_grad_kernels[] = {CT_CPU_FLOAT_TYPES(CT_RGRAD_REG_X, _)};

int ct_cpu_register_reduce_grad(void) {
  return ct_cpu_register_all(ct_cpu_reduce_grad_kernels,
                             CT_CPU_KERNEL_COUNT(ct_cpu_reduce_grad_kernels));
}
