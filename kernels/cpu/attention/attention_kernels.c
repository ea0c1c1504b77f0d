/* attention_kernels.c - the CPU kernels of scaled_dot_product_attention and its backward: the
 * bodies (attention_*_impl.h) instantiated for float (float16, bfloat16 and float32 inputs) and
 * double (float64), the parallel loop over work units, the workspace queries and the
 * registrations.
 *
 * Work units: the forward's are (batch-head, query tile) pairs, the backward's key/value heads
 * (each with its group of query heads), or, with fewer key heads than threads, key tiles and
 * then query tiles (attention_backward_impl.h); the threads take them dynamically. Every unit
 * computes its outputs alone and in a fixed order, and both backward schedules add the same
 * terms in the same order, so results do not depend on the thread count. Each thread works in
 * its own workspace slot (attention_layout.h). */
#include <math.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "attention/attention_dropout.h"
#include "attention/attention_job.h"
#include "attention/attention_layout.h"
#include "cpu_register.h"
#include "math/vector_math.h"

static inline void ct_attn_ukernel_f32(const ct_gemm_ukernels* uk, int64_t kc, const float* a,
                                       const float* b, float* c, int64_t ldc, int accumulate) {
  uk->f32(kc, a, b, c, ldc, accumulate);
}

static inline void ct_attn_ukernel_f64(const ct_gemm_ukernels* uk, int64_t kc, const double* a,
                                       const double* b, double* c, int64_t ldc, int accumulate) {
  uk->f64(kc, a, b, c, ldc, accumulate);
}

#define CT_AT_T float
#define CT_AT_FLOAT
#define CT_AT_NAME(x) x##_f32
#include "attention/attention_tiles_impl.h"
#include "attention/attention_rows_impl.h"
#include "attention/attention_forward_impl.h"
#include "attention/attention_backward_impl.h"
#undef CT_AT_T
#undef CT_AT_FLOAT
#undef CT_AT_NAME

#define CT_AT_T double
#define CT_AT_NAME(x) x##_f64
#include "attention/attention_tiles_impl.h"
#include "attention/attention_rows_impl.h"
#include "attention/attention_forward_impl.h"
#include "attention/attention_backward_impl.h"
#undef CT_AT_T
#undef CT_AT_NAME

typedef void (*ct_attn_unit_fn)(const ct_attn_job* job, const ct_attn_layout* lay, char* slot,
                                int64_t unit);

static int ct_attn_run(const ct_kernel_call* call, bool backward) {
  ct_attn_job job;
  ct_attn_prepare(call, backward, &job);
  const int64_t q_units = job.q_rows_total * ((job.lq + job.bq - 1) / job.bq);
  const int64_t k_units = job.kv_heads_total * ((job.lk + job.bk - 1) / job.bk);
  if (job.q_rows_total <= 0 || (!backward && job.lq <= 0)) return CT_OK;
  int64_t threads = job.slot_bytes > 0 ? (int64_t)(call->workspace_size / job.slot_bytes) : 0;
  if (threads > job.threads) threads = job.threads;
  if (threads < 1) {
    return ct_set_error(CT_ERROR_WORKSPACE_TOO_SMALL,
                        "%s: workspace of %llu bytes too small: %llu needed", call->schema->name,
                        (unsigned long long)call->workspace_size,
                        (unsigned long long)job.slot_bytes);
  }
  if ((uintptr_t)call->workspace % CT_ATTN_ALIGN != 0) {
    return ct_set_error(CT_ERROR_WORKSPACE_TOO_SMALL, "%s: workspace not %d-byte aligned",
                        call->schema->name, CT_ATTN_ALIGN);
  }
  ct_attn_layout layout;
  ct_attn_layout_compute(&job, &layout);
  /* up to two passes: (body, units) each */
  ct_attn_unit_fn bodies[2] = {NULL, NULL};
  int64_t counts[2] = {0, 0};
  if (!backward) {
    bodies[0] = job.f64 ? ct_attn_forward_unit_f64 : ct_attn_forward_unit_f32;
    counts[0] = q_units;
  } else if (!job.split) {
    bodies[0] = job.f64 ? ct_attn_backward_unit_f64 : ct_attn_backward_unit_f32;
    counts[0] = job.kv_heads_total;
  } else {
    bodies[0] = job.f64 ? ct_attn_backward_kv_unit_f64 : ct_attn_backward_kv_unit_f32;
    counts[0] = k_units;
    bodies[1] = job.f64 ? ct_attn_backward_q_unit_f64 : ct_attn_backward_q_unit_f32;
    counts[1] = job.lq > 0 ? q_units : 0;
  }
  char* workspace = call->workspace;
  if (threads <= 1) {
    for (int pass = 0; pass < 2; ++pass) {
      for (int64_t u = 0; u < counts[pass]; ++u) bodies[pass](&job, &layout, workspace, u);
    }
    return CT_OK;
  }
#pragma omp parallel num_threads((int)threads)
  {
#ifdef _OPENMP
    char* slot = workspace + (size_t)omp_get_thread_num() * job.slot_bytes;
#else
    char* slot = workspace;
#endif
    for (int pass = 0; pass < 2; ++pass) {
#pragma omp for schedule(dynamic, 1)
      for (int64_t u = 0; u < counts[pass]; ++u) bodies[pass](&job, &layout, slot, u);
    }
  }
  return CT_OK;
}

static int ct_cpu_attention(const ct_kernel_call* call) {
  return ct_attn_run(call, false);
}

static int ct_cpu_attention_backward(const ct_kernel_call* call) {
  return ct_attn_run(call, true);
}

static int ct_attn_workspace(const ct_kernel_call* call, bool backward, uint64_t* bytes,
                             uint64_t* alignment) {
  ct_attn_job job;
  ct_attn_prepare(call, backward, &job);
  *bytes = ct_attn_workspace_bytes(&job);
  *alignment = CT_ATTN_ALIGN;
  if (*bytes > (uint64_t)INT64_MAX) { /* tiles of broadcast operands with huge extents */
    *bytes = 0;
    return ct_set_error(CT_ERROR_SIZE_OVERFLOW,
                        "%s: the tiles of one thread (sequence lengths %lld and %lld, head dims "
                        "%lld and %lld) overflow int64 bytes",
                        call->schema->name, (long long)job.lq, (long long)job.lk, (long long)job.e,
                        (long long)job.ev);
  }
  return CT_OK;
}

static int ct_cpu_attention_workspace(const ct_kernel_call* call, uint64_t* bytes,
                                      uint64_t* alignment) {
  return ct_attn_workspace(call, false, bytes, alignment);
}

static int ct_cpu_attention_backward_workspace(const ct_kernel_call* call, uint64_t* bytes,
                                               uint64_t* alignment) {
  return ct_attn_workspace(call, true, bytes, alignment);
}

/* Signatures: (query, key, value, attn_mask, out, logsumexp) and (grad_out, query, key, value,
 * attn_mask, out, logsumexp, grad_query, grad_key, grad_value); the mask is bool or the inputs'
 * dtype (an absent one matches either registration). */
static int ct_attn_register(const char* op, int32_t length, const ct_dtype* signature,
                            ct_kernel_run_fn run, ct_kernel_workspace_fn workspace) {
  const ct_kernel_def def = {
      sizeof(ct_kernel_def), op, "cpu", CT_DEVICE_CPU, length, signature, run, workspace, NULL};
  return ct_kernel_register(&def);
}

int ct_cpu_register_attention(void) {
  static const ct_dtype_id types[] = {CT_DT_F16, CT_DT_BF16, CT_DT_F32, CT_DT_F64};
  int status = CT_OK;
  for (size_t t = 0; t < sizeof types / sizeof types[0] && status == CT_OK; ++t) {
    const ct_dtype x = ct_dtype_from_id(types[t]);
    const ct_dtype lse = ct_dtype_from_id(types[t] == CT_DT_F64 ? CT_DT_F64 : CT_DT_F32);
    const ct_dtype masks[2] = {ct_dtype_from_id(CT_DT_BOOL), x};
    for (int k = 0; k < 2 && status == CT_OK; ++k) {
      const ct_dtype forward[6] = {x, x, x, masks[k], x, lse};
      status = ct_attn_register("scaled_dot_product_attention", 6, forward, ct_cpu_attention,
                                ct_cpu_attention_workspace);
      const ct_dtype backward[10] = {x, x, x, x, masks[k], x, lse, x, x, x};
      if (status == CT_OK) {
        status = ct_attn_register("scaled_dot_product_attention_backward", 10, backward,
                                  ct_cpu_attention_backward, ct_cpu_attention_backward_workspace);
      }
    }
  }
  return status;
}
