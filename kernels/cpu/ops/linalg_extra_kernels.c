/* linalg_extra_kernels.c - vecdot, linear and einsum on the strided batched GEMM (gemm.h).
 *  - vecdot: a batch of 1×k by k×1 products; the batch is the broadcast shape without the
 *    contracted axis (zero strides where an operand broadcasts).
 *  - linear: x (batch..., m, k) times weight viewed as k×n through its strides (no transpose
 *    copy); with a bias, the output is first filled with the broadcast bias and the GEMM
 *    accumulates onto it (one rounding for float16/bfloat16).
 *  - einsum: see ct_einsum_describe.
 * linear and einsum are workspace-requesting: the packed GEMM's panels come from the caller's
 * workspace (ct_gemm_workspace_<dtype>). vecdot is a batch of dot products, which the GEMM's
 * simple path serves without one. */
#include <math.h>
#include <string.h>

#include "engine/cpu_dtypes.h"
#include "cpu_register.h"
#include "gemm/gemm.h"
#include "ops/einsum_chain.h"
#include "engine/strided_iter.h"

/* ----- vecdot ----- */

typedef struct ct_vecdot_layout {
  ct_gemm_desc d;
  int64_t shape[CT_MAX_NDIM], a[CT_MAX_NDIM], b[CT_MAX_NDIM], c[CT_MAX_NDIM];
} ct_vecdot_layout;

/* Element stride of t along dim q of an ndim-dim broadcast shape (0 where t broadcasts). */
static int64_t ct_vd_stride(const ct_tensor* t, int32_t ndim, int32_t q) {
  const int32_t k = q - (ndim - t->ndim);
  if (k < 0 || t->shape[k] == 1) return 0;
  return ct_tensor_stride(t, k);
}

static void ct_vecdot_describe(const ct_kernel_call* call, ct_vecdot_layout* p) {
  const ct_tensor* x1 = call->inputs[0];
  const ct_tensor* x2 = call->inputs[1];
  const ct_tensor* out = call->outputs[0];
  const int32_t ndim = out->ndim + 1;
  int32_t axis = (int32_t)call->attrs[0].value.i;
  if (axis < 0) axis += ndim;
  memset(&p->d, 0, sizeof p->d);
  p->d.m = 1;
  p->d.n = 1;
  p->d.k = x1->shape[axis - (ndim - x1->ndim)];
  p->d.a = ct_tensor_base(x1);
  p->d.a_cs = ct_tensor_stride(x1, axis - (ndim - x1->ndim));
  p->d.b = ct_tensor_base(x2);
  p->d.b_rs = ct_tensor_stride(x2, axis - (ndim - x2->ndim));
  p->d.c = ct_tensor_base(out);
  int32_t o = 0;
  for (int32_t q = 0; q < ndim; ++q) {
    if (q == axis) continue;
    p->shape[o] = out->shape[o];
    p->a[o] = ct_vd_stride(x1, ndim, q);
    p->b[o] = ct_vd_stride(x2, ndim, q);
    p->c[o] = ct_tensor_stride(out, o);
    ++o;
  }
  p->d.batch_ndim = o;
  p->d.batch_shape = p->shape;
  p->d.a_bs = p->a;
  p->d.b_bs = p->b;
  p->d.c_bs = p->c;
}

#define CT_VECDOT_X(A, SFX, T, C, U, ID)                       \
  static int ct_cpu_vecdot_##SFX(const ct_kernel_call* call) { \
    if (ct_tensor_numel(call->outputs[0]) == 0) return CT_OK;  \
    ct_vecdot_layout plan;                                     \
    ct_vecdot_describe(call, &plan);                           \
    ct_gemm_##SFX(&plan.d);                                    \
    return CT_OK;                                              \
  }
CT_CPU_BOOL_TYPE(CT_VECDOT_X, _)
CT_CPU_INT_TYPES(CT_VECDOT_X, _)

/* Float vecdot: each dot product summed in double with Neumaier's compensation (products of
 * float16/bfloat16/float32 values are exact in double; float64 products are rounded once), so
 * that long contractions meet the conformance suite's accumulation bound (a running sum in the
 * element type drifts over long lanes). A non-finite partial sum drops the compensation, so
 * infinities and NaN propagate as in a plain sum. */
#define CT_VECDOT_FLOAT_X(A, SFX, T, C, U, ID)                                                 \
  static int ct_cpu_vecdot_##SFX(const ct_kernel_call* call) {                                 \
    const int64_t total = ct_tensor_numel(call->outputs[0]);                                   \
    if (total == 0) return CT_OK;                                                              \
    ct_vecdot_layout plan;                                                                     \
    ct_vecdot_describe(call, &plan);                                                           \
    const ct_gemm_desc* d = &plan.d;                                                           \
    int64_t index[CT_MAX_NDIM] = {0};                                                          \
    for (int64_t e = 0; e < total; ++e) {                                                      \
      int64_t ao = 0, bo = 0, co = 0;                                                          \
      for (int32_t q = 0; q < d->batch_ndim; ++q) {                                            \
        ao += index[q] * plan.a[q];                                                            \
        bo += index[q] * plan.b[q];                                                            \
        co += index[q] * plan.c[q];                                                            \
      }                                                                                        \
      const T* a = (const T*)d->a + ao;                                                        \
      const T* b = (const T*)d->b + bo;                                                        \
      double sum = 0.0, compensation = 0.0;                                                    \
      for (int64_t i = 0; i < d->k; ++i) {                                                     \
        const double p =                                                                       \
            (double)ct_load_##SFX(a[i * d->a_cs]) * (double)ct_load_##SFX(b[i * d->b_rs]);     \
        const double t = sum + p;                                                              \
        if (isfinite(t)) compensation += fabs(sum) >= fabs(p) ? (sum - t) + p : (p - t) + sum; \
        sum = t;                                                                               \
      }                                                                                        \
      ((T*)d->c)[co] = ct_store_##SFX((C)(isfinite(sum) ? sum + compensation : sum));          \
      for (int32_t q = d->batch_ndim - 1; q >= 0; --q) {                                       \
        if (++index[q] < plan.shape[q]) break;                                                 \
        index[q] = 0;                                                                          \
      }                                                                                        \
    }                                                                                          \
    return CT_OK;                                                                              \
  }
CT_CPU_FLOAT_TYPES(CT_VECDOT_FLOAT_X, _)

/* Complex: the array API's vecdot conjugates x1 (sum of conj(x1) * x2), as numpy.vecdot. */
#define CT_VECDOT_COMPLEX_X(A, SFX, T, C, U, ID)               \
  static int ct_cpu_vecdot_##SFX(const ct_kernel_call* call) { \
    if (ct_tensor_numel(call->outputs[0]) == 0) return CT_OK;  \
    ct_vecdot_layout plan;                                     \
    ct_vecdot_describe(call, &plan);                           \
    ct_gemm_##SFX##_conj(&plan.d);                             \
    return CT_OK;                                              \
  }
CT_CPU_COMPLEX_TYPES(CT_VECDOT_COMPLEX_X, _)

/* ----- linear ----- */

/* Copies the bias (broadcast along every output row) into the output. */
#define CT_BIAS_COPY_X(A, SFX, T, C, U, ID)                                          \
  static void ct_cpu_linear_bias_##SFX(char** data, const int64_t* steps, int64_t n, \
                                       const void* extra) {                          \
    (void)extra;                                                                     \
    for (int64_t i = 0; i < n; ++i) {                                                \
      memcpy(data[1] + i * steps[1], data[0] + i * steps[0], sizeof(T));             \
    }                                                                                \
  }
CT_CPU_FLOAT_TYPES(CT_BIAS_COPY_X, _)

typedef struct ct_linear_layout {
  ct_gemm_desc d;
  int64_t shape[CT_MAX_NDIM], a[CT_MAX_NDIM], b[CT_MAX_NDIM], c[CT_MAX_NDIM];
} ct_linear_layout;

static void ct_linear_describe(const ct_kernel_call* call, ct_linear_layout* p) {
  const ct_tensor* x = call->inputs[0];
  const ct_tensor* w = call->inputs[1];
  const ct_tensor* out = call->outputs[0];
  const int32_t nd = x->ndim;
  memset(&p->d, 0, sizeof p->d);
  p->d.m = nd > 1 ? x->shape[nd - 2] : 1;
  p->d.k = x->shape[nd - 1];
  p->d.n = w->shape[0];
  p->d.a = ct_tensor_base(x);
  p->d.a_rs = nd > 1 ? ct_tensor_stride(x, nd - 2) : 0;
  p->d.a_cs = ct_tensor_stride(x, nd - 1);
  p->d.b = ct_tensor_base(w); /* B = weight.T: B[k, n] = weight[n, k] */
  p->d.b_rs = ct_tensor_stride(w, 1);
  p->d.b_cs = ct_tensor_stride(w, 0);
  p->d.c = ct_tensor_base(out);
  p->d.c_rs = nd > 1 ? ct_tensor_stride(out, nd - 2) : 0;
  p->d.c_cs = ct_tensor_stride(out, nd - 1);
  p->d.batch_ndim = nd > 2 ? nd - 2 : 0;
  for (int32_t q = 0; q < p->d.batch_ndim; ++q) {
    p->shape[q] = x->shape[q];
    p->a[q] = ct_tensor_stride(x, q);
    p->b[q] = 0;
    p->c[q] = ct_tensor_stride(out, q);
  }
  p->d.batch_shape = p->shape;
  p->d.a_bs = p->a;
  p->d.b_bs = p->b;
  p->d.c_bs = p->c;
}

#define CT_LINEAR_X(A, SFX, T, C, U, ID)                                                    \
  static int ct_cpu_linear_workspace_##SFX(const ct_kernel_call* call, uint64_t* bytes,     \
                                           uint64_t* alignment) {                           \
    ct_linear_layout plan;                                                                  \
    ct_linear_describe(call, &plan);                                                        \
    *bytes = ct_tensor_numel(call->outputs[0]) == 0 ? 0 : ct_gemm_workspace_##SFX(&plan.d); \
    *alignment = CT_GEMM_WORKSPACE_ALIGNMENT;                                               \
    return CT_OK;                                                                           \
  }                                                                                         \
  static int ct_cpu_linear_##SFX(const ct_kernel_call* call) {                              \
    const ct_tensor* out = call->outputs[0];                                                \
    if (ct_tensor_numel(out) == 0) return CT_OK;                                            \
    const ct_tensor* bias = call->num_inputs > 2 ? call->inputs[2] : NULL;                  \
    ct_linear_layout plan;                                                                  \
    ct_linear_describe(call, &plan);                                                        \
    plan.d.workspace = call->workspace;                                                     \
    plan.d.workspace_size = call->workspace_size;                                           \
    if (bias) {                                                                             \
      const ct_tensor* operands[2] = {bias, out};                                           \
      ct_cpu_iterate(2, operands, ct_cpu_linear_bias_##SFX, NULL);                          \
      plan.d.accumulate = true;                                                             \
    }                                                                                       \
    ct_gemm_##SFX(&plan.d);                                                                 \
    return CT_OK;                                                                           \
  }
CT_CPU_FLOAT_TYPES(CT_LINEAR_X, _)

/* ----- einsum ----- */

#define CT_EINSUM_X(A, SFX, T, C, U, ID)                                                          \
  static int ct_cpu_einsum_workspace_##SFX(const ct_kernel_call* call, uint64_t* bytes,           \
                                           uint64_t* alignment) {                                 \
    *bytes = 0;                                                                                   \
    *alignment = CT_GEMM_WORKSPACE_ALIGNMENT;                                                     \
    if (ct_tensor_numel(call->outputs[0]) == 0) return CT_OK;                                     \
    ct_einsum_spec plan;                                                                          \
    const int status =                                                                            \
        ct_einsum_parse(call->attrs[0].value.s, call->inputs, call->num_inputs, &plan);           \
    if (status != CT_OK) return status;                                                           \
    const T one = ct_store_##SFX((C)1);                                                           \
    const ct_einsum_kit kit = {ct_gemm_##SFX, ct_gemm_workspace_##SFX, (int64_t)sizeof(T), &one}; \
    return ct_einsum_chain(plan.expanded, call->inputs, call->num_inputs, call->outputs[0], &kit, \
                           NULL, 0, bytes);                                                       \
  }                                                                                               \
  static int ct_cpu_einsum_##SFX(const ct_kernel_call* call) {                                    \
    if (ct_tensor_numel(call->outputs[0]) == 0) return CT_OK;                                     \
    ct_einsum_spec plan;                                                                          \
    const int status =                                                                            \
        ct_einsum_parse(call->attrs[0].value.s, call->inputs, call->num_inputs, &plan);           \
    if (status != CT_OK) return status;                                                           \
    const T one = ct_store_##SFX((C)1);                                                           \
    const ct_einsum_kit kit = {ct_gemm_##SFX, ct_gemm_workspace_##SFX, (int64_t)sizeof(T), &one}; \
    return ct_einsum_chain(plan.expanded, call->inputs, call->num_inputs, call->outputs[0], &kit, \
                           call->workspace, call->workspace_size, NULL);                          \
  }
CT_CPU_ALL_TYPES(CT_EINSUM_X, _)
CT_CPU_COMPLEX_TYPES(CT_EINSUM_X, _)

/* ----- registration ----- */

#define CT_VECDOT_REG(A, SFX, T, C, U, ID) \
  {"vecdot", 3, {ID, ID, ID}, ct_cpu_vecdot_##SFX, NULL, NULL},
#define CT_EINSUM_REG(A, SFX, T, C, U, ID) \
  {"einsum", 2, {ID, ID}, ct_cpu_einsum_##SFX, ct_cpu_einsum_workspace_##SFX, NULL},
#define CT_LINEAR_REG(A, SFX, T, C, U, ID) \
  {"linear", 4, {ID, ID, ID, ID}, ct_cpu_linear_##SFX, ct_cpu_linear_workspace_##SFX, NULL},

static const ct_cpu_kernel ct_cpu_linalg_extra_kernels[] = {
    CT_CPU_ALL_TYPES(CT_VECDOT_REG, _) CT_CPU_FLOAT_TYPES(CT_LINEAR_REG, _)
        CT_CPU_ALL_TYPES(CT_EINSUM_REG, _) CT_CPU_COMPLEX_TYPES(CT_VECDOT_REG, _)
            CT_CPU_COMPLEX_TYPES(CT_EINSUM_REG, _)};

int ct_cpu_register_linalg_extra(void) {
  return ct_cpu_register_all(ct_cpu_linalg_extra_kernels,
                             CT_CPU_KERNEL_COUNT(ct_cpu_linalg_extra_kernels));
}
