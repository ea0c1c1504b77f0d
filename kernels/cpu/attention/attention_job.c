/* attention_job.c - reads a scaled_dot_product_attention(_backward) call into a ct_attn_job. */
#include "attention/attention_job.h"

#include <math.h>
#include <string.h>

#include "attention/attention_layout.h"

/* Tile extents before rounding to the micro-kernel: BQ query rows, BK keys (multiples of every
 * set's MR and NR). Larger tiles rescale the output less often and call the row steps on longer
 * rows; these were the fastest at L = 4096, E = 64 on an AVX-512 machine with 1 MB of L2 per
 * core, where one thread's forward tiles take about 1 MB and the backward's 1.3 MB. */
#define CT_ATTN_FORWARD_BQ 192
#define CT_ATTN_FORWARD_BK 384
#define CT_ATTN_BACKWARD_BQ 96
#define CT_ATTN_BACKWARD_BK 512

static void ct_attn_operand_from(const ct_tensor* t, int32_t lead_nd, ct_attn_operand* op) {
  memset(op, 0, sizeof *op);
  if (!t) return;
  op->base = ct_tensor_base(t);
  op->dtype = ct_dtype_to_id(t->dtype);
  for (int32_t d = 0; d < lead_nd && d < t->ndim; ++d) op->lead[d] = ct_tensor_stride(t, d);
  if (t->ndim >= lead_nd + 1) op->rs = ct_tensor_stride(t, lead_nd);
  if (t->ndim >= lead_nd + 2) op->cs = ct_tensor_stride(t, lead_nd + 1);
}

/* The mask broadcast to (lead..., L_q, L_k): stride 0 where it has no dim or extent 1. */
static void ct_attn_mask_from(const ct_tensor* t, int32_t lead_nd, ct_attn_operand* op) {
  memset(op, 0, sizeof *op);
  if (!t) return;
  op->base = ct_tensor_base(t);
  op->dtype = ct_dtype_to_id(t->dtype);
  const int32_t nd = lead_nd + 2, shift = nd - t->ndim;
  int64_t strides[CT_MAX_NDIM + 2] = {0};
  for (int32_t d = 0; d < t->ndim; ++d) {
    strides[d + shift] = t->shape[d] == 1 ? 0 : ct_tensor_stride(t, d);
  }
  for (int32_t d = 0; d < lead_nd; ++d) op->lead[d] = strides[d];
  op->rs = strides[lead_nd];
  op->cs = strides[lead_nd + 1];
}

void ct_attn_prepare(const ct_kernel_call* call, bool backward, ct_attn_job* job) {
  memset(job, 0, sizeof *job);
  const int32_t first = backward ? 1 : 0;
  const ct_tensor* q = call->inputs[first];
  const ct_tensor* k = call->inputs[first + 1];
  const ct_tensor* v = call->inputs[first + 2];
  const ct_tensor* mask = call->inputs[first + 3];
  const int32_t nd = q->ndim, lead_nd = nd - 2;
  job->backward = backward;
  job->f64 = ct_dtype_to_id(q->dtype) == CT_DT_F64;
  job->lead_nd = lead_nd;
  job->q_rows_total = 1;
  for (int32_t d = 0; d < lead_nd; ++d) {
    job->lead_shape[d] = q->shape[d];
    job->q_rows_total *= q->shape[d];
  }
  job->lq = q->shape[nd - 2];
  job->lk = k->shape[nd - 2];
  job->e = q->shape[nd - 1];
  job->ev = v->shape[nd - 1];
  job->causal = call->attrs[0].value.b != 0;
  job->scale = call->attrs[1].type == CT_ATTR_FLOAT ? call->attrs[1].value.f
               : job->e > 0                         ? 1.0 / sqrt((double)job->e)
                                                    : 1.0;
  const bool gqa = call->attrs[2].value.b != 0;
  job->head_dim = gqa ? lead_nd - 1 : -1;
  job->group = 1;
  if (gqa && k->shape[nd - 3] > 0) job->group = q->shape[nd - 3] / k->shape[nd - 3];
  job->kv_heads_total = job->q_rows_total / (job->group > 0 ? job->group : 1);
  job->dropout_p = call->attrs[3].value.f;
  job->seed = (uint64_t)call->attrs[4].value.i;
  job->offset = (uint64_t)call->attrs[5].value.i;

  ct_attn_operand_from(q, lead_nd, &job->op[CT_ATTN_Q]);
  ct_attn_operand_from(k, lead_nd, &job->op[CT_ATTN_K]);
  ct_attn_operand_from(v, lead_nd, &job->op[CT_ATTN_V]);
  ct_attn_mask_from(mask, lead_nd, &job->op[CT_ATTN_MASK]);
  job->mask = !mask                           ? CT_ATTN_MASK_NONE
              : ct_dtype_is_bool(mask->dtype) ? CT_ATTN_MASK_BOOL
                                              : CT_ATTN_MASK_ADD;
  const bool outs = call->outputs && call->num_outputs > 0;
  if (backward) {
    ct_attn_operand_from(call->inputs[0], lead_nd, &job->op[CT_ATTN_GRAD_OUT]);
    ct_attn_operand_from(call->inputs[5], lead_nd, &job->op[CT_ATTN_OUT]);
    ct_attn_operand_from(call->inputs[6], lead_nd, &job->op[CT_ATTN_LSE]);
    if (outs) {
      ct_attn_operand_from(call->outputs[0], lead_nd, &job->op[CT_ATTN_GRAD_Q]);
      ct_attn_operand_from(call->outputs[1], lead_nd, &job->op[CT_ATTN_GRAD_K]);
      ct_attn_operand_from(call->outputs[2], lead_nd, &job->op[CT_ATTN_GRAD_V]);
    }
  } else if (outs) {
    ct_attn_operand_from(call->outputs[0], lead_nd, &job->op[CT_ATTN_OUT]);
    ct_attn_operand_from(call->outputs[1], lead_nd, &job->op[CT_ATTN_LSE]);
  }

  const ct_gemm_ukernels* uk = ct_gemm_ukernels_get();
  const ct_gemm_blocking* blocking = job->f64 ? &uk->f64_blocking : &uk->f32_blocking;
  job->mr = blocking->mr;
  job->nr = blocking->nr;
  const int64_t bq = backward ? CT_ATTN_BACKWARD_BQ : CT_ATTN_FORWARD_BQ;
  const int64_t bk = backward ? CT_ATTN_BACKWARD_BK : CT_ATTN_FORWARD_BK;
  job->bq = ct_attn_round_up(job->lq < bq ? (job->lq > 0 ? job->lq : 1) : bq, job->mr);
  job->bk = ct_attn_round_up(job->lk < bk ? (job->lk > 0 ? job->lk : 1) : bk, job->nr);
  job->e_pad = ct_attn_round_up(job->e > 0 ? job->e : 1, job->nr);
  job->ev_pad = ct_attn_round_up(job->ev > 0 ? job->ev : 1, job->nr);

  int64_t threads = ct_cpu_num_threads();
  const int64_t q_tiles = job->q_rows_total * ((job->lq + job->bq - 1) / job->bq);
  int64_t units = q_tiles;
  if (backward) {
    /* fewer key heads than threads: split the work by key tiles, then by query tiles */
    const int64_t k_tiles = job->kv_heads_total * ((job->lk + job->bk - 1) / job->bk);
    job->split = job->kv_heads_total < threads;
    units = job->split ? (k_tiles > q_tiles ? k_tiles : q_tiles) : job->kv_heads_total;
  }
  ct_attn_layout layout;
  ct_attn_layout_compute(job, &layout);
  job->slot_bytes = layout.bytes;
  if (threads > units) threads = units;
  job->threads = (int32_t)(threads > 0 ? threads : 0);
}

int64_t ct_attn_lead_offset(const ct_attn_job* job, int32_t which, int64_t flat) {
  const bool kv = which == CT_ATTN_K || which == CT_ATTN_V || which == CT_ATTN_GRAD_K ||
                  which == CT_ATTN_GRAD_V;
  const int64_t* strides = job->op[which].lead;
  int64_t offset = 0;
  for (int32_t d = job->lead_nd - 1; d >= 0; --d) {
    const int64_t extent = job->lead_shape[d];
    int64_t index = flat % extent;
    flat /= extent;
    if (kv && d == job->head_dim) index /= job->group;
    offset += index * strides[d];
  }
  return offset;
}
