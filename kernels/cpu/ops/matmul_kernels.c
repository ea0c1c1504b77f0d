/* matmul_kernels.c - matmul with NumPy's rules, on the GEMM of gemm.h.
 *
 * The kernel only describes the call to the GEMM: a 1-D x1 is a row (m = 1) and a 1-D x2 a
 * column (n = 1), whose missing output dimension gets stride 0; batch dimensions broadcast
 * right-aligned through zero strides. Every stride is read from the views as they are
 * (transposed, negative or zero), so no operand is copied.
 *
 * matmul is workspace-requesting: the packed GEMM's panels (per thread, a few MB at most) live
 * in the caller's workspace, because kernels never allocate and fixed stack buffers would be too
 * small for L2/L3-sized blocks and risky on OpenMP threads' stacks. The size depends on the
 * thread count, so ct_set_num_threads between the workspace query and the run can make the run
 * ask for more. */
#include "cpu_register.h"
#include "gemm/gemm.h"

/* Batch extents and strides of one call, in elements. */
typedef struct ct_matmul_batch {
  int64_t shape[CT_MAX_NDIM];
  int64_t a[CT_MAX_NDIM];
  int64_t b[CT_MAX_NDIM];
  int64_t c[CT_MAX_NDIM];
} ct_matmul_batch;

/* Stride of the operand dim aligned with batch dim q of the output (0 where it broadcasts). */
static int64_t ct_matmul_batch_stride(const ct_tensor* t, int32_t t_batch_ndim,
                                      int32_t out_batch_ndim, int32_t q) {
  const int32_t k = q - (out_batch_ndim - t_batch_ndim);
  if (k < 0 || t->shape[k] == 1) return 0;
  return ct_tensor_stride(t, k);
}

static void ct_matmul_describe(const ct_kernel_call* call, ct_gemm_desc* d,
                               ct_matmul_batch* batch) {
  const ct_tensor* x1 = call->inputs[0];
  const ct_tensor* x2 = call->inputs[1];
  const ct_tensor* out = call->outputs[0];
  const int32_t n1 = x1->ndim, n2 = x2->ndim, no = out->ndim;
  d->m = n1 > 1 ? x1->shape[n1 - 2] : 1;
  d->k = x1->shape[n1 - 1];
  d->n = n2 > 1 ? x2->shape[n2 - 1] : 1;
  d->a = ct_tensor_base(x1);
  d->a_rs = n1 > 1 ? ct_tensor_stride(x1, n1 - 2) : 0;
  d->a_cs = ct_tensor_stride(x1, n1 - 1);
  d->b = ct_tensor_base(x2);
  d->b_rs = ct_tensor_stride(x2, n2 > 1 ? n2 - 2 : 0);
  d->b_cs = n2 > 1 ? ct_tensor_stride(x2, n2 - 1) : 0;
  d->c = ct_tensor_base(out);
  /* The output's trailing dims are (m, n), (n), (m) or none. */
  int32_t tail = no;
  d->c_cs = n2 > 1 ? ct_tensor_stride(out, --tail) : 0;
  d->c_rs = n1 > 1 ? ct_tensor_stride(out, --tail) : 0;
  d->accumulate = false;
  d->batch_ndim = tail;
  const int32_t b1 = n1 > 2 ? n1 - 2 : 0, b2 = n2 > 2 ? n2 - 2 : 0;
  for (int32_t q = 0; q < tail; ++q) {
    batch->shape[q] = out->shape[q];
    batch->a[q] = ct_matmul_batch_stride(x1, b1, tail, q);
    batch->b[q] = ct_matmul_batch_stride(x2, b2, tail, q);
    batch->c[q] = ct_tensor_stride(out, q);
  }
  d->batch_shape = batch->shape;
  d->a_bs = batch->a;
  d->b_bs = batch->b;
  d->c_bs = batch->c;
}

/* ----- kernels: one named function per dtype, from the kernel list ----- */

#define CT_MATMUL_DEFINE(NAME, SFX, T, C, U, ID)                                          \
  static int ct_cpu_##NAME##_workspace_##SFX(const ct_kernel_call* call, uint64_t* bytes, \
                                             uint64_t* alignment) {                       \
    ct_gemm_desc desc = {0};                                                              \
    ct_matmul_batch batch;                                                                \
    ct_matmul_describe(call, &desc, &batch);                                              \
    *bytes = ct_gemm_workspace_##SFX(&desc);                                              \
    *alignment = CT_GEMM_WORKSPACE_ALIGNMENT;                                             \
    return CT_OK;                                                                         \
  }                                                                                       \
  static int ct_cpu_##NAME##_##SFX(const ct_kernel_call* call) {                          \
    ct_gemm_desc desc = {0};                                                              \
    ct_matmul_batch batch;                                                                \
    ct_matmul_describe(call, &desc, &batch);                                              \
    desc.workspace = call->workspace;                                                     \
    desc.workspace_size = call->workspace_size;                                           \
    ct_gemm_##SFX(&desc);                                                                 \
    return CT_OK;                                                                         \
  }
#define CT_MATMUL_REG(NAME, SFX, T, C, U, ID) \
  {#NAME, 3, {ID, ID, ID}, ct_cpu_##NAME##_##SFX, ct_cpu_##NAME##_workspace_##SFX, NULL},

/* The kernel list: (op, dtypes). */
#define CT_MATMUL_KERNELS(K)  \
  K(matmul, CT_CPU_ALL_TYPES) \
  K(matmul, CT_CPU_COMPLEX_TYPES)

#define K(NAME, TYPES) TYPES(CT_MATMUL_DEFINE, NAME)
CT_MATMUL_KERNELS(K)
#undef K

static const ct_cpu_kernel ct_cpu_matmul_kernels[] = {
#define K(NAME, TYPES) TYPES(CT_MATMUL_REG, NAME)
    CT_MATMUL_KERNELS(K)
#undef K
};

int ct_cpu_register_matmul(void) {
  return ct_cpu_register_all(ct_cpu_matmul_kernels, CT_CPU_KERNEL_COUNT(ct_cpu_matmul_kernels));
}
