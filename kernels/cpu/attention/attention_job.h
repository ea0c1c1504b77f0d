/* attention_job.h - scaled_dot_product_attention and its backward on the CPU: the call read into
 * one job (shapes, element strides, attributes, tile sizes), shared by the forward and backward
 * bodies (attention_forward_impl.h, attention_backward_impl.h).
 *
 * Every operand is (lead..., L, D): `lead` are the batch dims and the heads (q's shape without
 * its last two dims); key and value have H_kv heads, and with enable_gqa lead index h of query
 * reads key/value head h / group. The mask has broadcast strides (0 where it broadcasts) over
 * query's lead dims, its rows (queries) and columns (keys).
 *
 * Tiles: BQ query rows by BK keys, the scores of one tile computed by the GEMM micro-kernels
 * (gemm_ukernel.h) from packed panels, so BQ is a multiple of the micro-kernel's MR and BK of its
 * NR. Each thread owns one slot of the workspace, `slot_bytes` long, holding its tiles: no buffer
 * grows with L_q * L_k (the backward by key head also keeps grad_query's accumulators of its
 * group's query rows, group x L_q x E). */
#ifndef CTENSOR_CPU_ATTENTION_JOB_H_
#define CTENSOR_CPU_ATTENTION_JOB_H_

#include <stdbool.h>
#include <stdint.h>

#include "engine/cpu_dtypes.h"
#include "gemm/gemm_ukernel.h"

/* One tensor operand: base address, element strides of the lead dims, of the rows and columns. */
typedef struct ct_attn_operand {
  char* base;
  int64_t lead[CT_MAX_NDIM];
  int64_t rs, cs;
  ct_dtype_id dtype;
} ct_attn_operand;

typedef enum ct_attn_mask_kind {
  CT_ATTN_MASK_NONE,
  CT_ATTN_MASK_BOOL,
  CT_ATTN_MASK_ADD
} ct_attn_mask_kind;

enum {
  CT_ATTN_Q,
  CT_ATTN_K,
  CT_ATTN_V,
  CT_ATTN_MASK,
  CT_ATTN_OUT,
  CT_ATTN_LSE,
  CT_ATTN_GRAD_OUT,
  CT_ATTN_GRAD_Q,
  CT_ATTN_GRAD_K,
  CT_ATTN_GRAD_V,
  CT_ATTN_OPERANDS
};

typedef struct ct_attn_job {
  ct_attn_operand op[CT_ATTN_OPERANDS]; /* base NULL for an absent one */
  ct_attn_mask_kind mask;
  bool causal;
  bool backward;
  bool split; /* backward: the split schedule (fewer key heads than threads) */
  bool f64;   /* computes in double (float64 inputs), else in float */
  double scale;
  double dropout_p;
  uint64_t seed, offset;
  int64_t lq, lk, e, ev;
  int32_t lead_nd;
  int64_t lead_shape[CT_MAX_NDIM]; /* query's */
  int32_t head_dim;                /* the heads' lead dim (enable_gqa), or -1 */
  int64_t group;                   /* query heads per key/value head (1 without enable_gqa) */
  int64_t q_rows_total;            /* product of the lead dims: (batch, head) pairs of query */
  int64_t kv_heads_total;          /* q_rows_total / group */
  /* tiles (elements) */
  int32_t mr, nr;
  int64_t bq, bk;        /* BQ a multiple of MR, BK of NR */
  int64_t e_pad, ev_pad; /* E and E_v rounded up to NR */
  uint64_t slot_bytes;   /* one thread's scratch */
  int32_t threads;       /* slots in the workspace query's answer */
} ct_attn_job;

/* Reads the call (forward when !backward) into job; outputs may be absent (workspace queries). */
CT_INTERNAL void ct_attn_prepare(const ct_kernel_call* call, bool backward, ct_attn_job* job);

/* Element offset of operand `which` for the lead index `flat` of query (0 <= flat <
 * q_rows_total): key/value operands map query's head to theirs. */
CT_INTERNAL int64_t ct_attn_lead_offset(const ct_attn_job* job, int32_t which, int64_t flat);

/* The workspace the job needs: one slot per thread. */
static inline uint64_t ct_attn_workspace_bytes(const ct_attn_job* job) {
  uint64_t bytes = 0;
  return __builtin_mul_overflow(job->slot_bytes, (uint64_t)job->threads, &bytes) ? UINT64_MAX
                                                                                 : bytes;
}

#define CT_ATTN_ALIGN 64

static inline int64_t ct_attn_round_up(int64_t n, int64_t m) {
  return (n + m - 1) / m * m;
}

#endif /* CTENSOR_CPU_ATTENTION_JOB_H_ */
