/* attention_layout.h - where each tile lives in one thread's workspace slot (byte offsets, each
 * 64-byte aligned as the micro-kernels' packed panels must be). The forward and the backward
 * use different sets; the sizes are in compute-type elements (float, or double for float64).
 *
 * Forward:  qa  Q tile as MR-row panels (BQ x E, pre-scaled)   kb  K^T as NR-column panels
 *           vb  V as NR-column panels (BK x E_v pad)           s   scores / weights (BQ x BK)
 *           pa  weights as MR-row panels                       o   output accumulator
 *           m, l  running max and sum per row                  stage  one tile converted
 * Backward: qa (scaled Q, MR panels), qb (Q, NR panels), doa, dob (grad_out, both ways), ktb
 *           (K^T), kb (K), vtb (V^T), s (weights), dp (grad of the weights), pack (a transposed
 *           tile as MR panels), dk, dv (accumulators of one key tile), stage, ot (out's tile),
 *           lse and d (per query row of the tile), and dq: grad_query's accumulators of one
 *           query tile (the split schedule) or of the L_q rows of a key head's group of query
 *           heads (by key head). */
#ifndef CTENSOR_CPU_ATTENTION_LAYOUT_H_
#define CTENSOR_CPU_ATTENTION_LAYOUT_H_

#include "attention/attention_job.h"

typedef struct ct_attn_layout {
  uint64_t qa, kb, vb, s, pa, o, m, l, stage;
  uint64_t qb, doa, dob, ktb, vtb, dp, pack, dk, dv, lse, d, ot, dq;
  uint64_t bytes;
} ct_attn_layout;

/* Takes rows x cols elements of `size` bytes at *at. Broadcast (stride-0) inputs can have head
 * dims or sequences whose tiles overflow 64 bits: then *at sticks at UINT64_MAX, which no
 * workspace reaches (the kernels report it too small). */
static inline uint64_t ct_attn_layout_take(uint64_t* at, int64_t rows, int64_t cols, int64_t size) {
  const uint64_t here = *at;
  uint64_t bytes = 0;
  if (__builtin_mul_overflow((uint64_t)rows, (uint64_t)cols, &bytes) ||
      __builtin_mul_overflow(bytes, (uint64_t)size, &bytes) ||
      __builtin_add_overflow(bytes, (uint64_t)(CT_ATTN_ALIGN - 1), &bytes) ||
      __builtin_add_overflow(*at, bytes / CT_ATTN_ALIGN * CT_ATTN_ALIGN, at)) {
    *at = UINT64_MAX;
  }
  return here;
}

static inline void ct_attn_layout_compute(const ct_attn_job* job, ct_attn_layout* layout) {
  const int64_t size = job->f64 ? 8 : 4;
  const int64_t bq = job->bq, bk = job->bk, bkr = ct_attn_round_up(bk, job->mr);
  const int64_t e = job->e > 0 ? job->e : 1, ev = job->ev > 0 ? job->ev : 1;
  const int64_t wide = bq > bkr ? bq : bkr;
  const int64_t depth = e > ev ? e : ev;
  uint64_t at = 0;
  *layout = (ct_attn_layout){0};
  layout->qa = ct_attn_layout_take(&at, bq, e, size);
  layout->s = ct_attn_layout_take(&at, bq, bk, size);
  layout->stage = ct_attn_layout_take(&at, wide, depth, size);
  if (!job->backward) {
    layout->kb = ct_attn_layout_take(&at, bk, e, size);
    layout->vb = ct_attn_layout_take(&at, bk, job->ev_pad, size);
    layout->pa = ct_attn_layout_take(&at, bq, bk, size);
    layout->o = ct_attn_layout_take(&at, bq, job->ev_pad, size);
    layout->m = ct_attn_layout_take(&at, bq, 1, size);
    layout->l = ct_attn_layout_take(&at, bq, 1, size);
  } else {
    layout->qb = ct_attn_layout_take(&at, bq, job->e_pad, size);
    layout->doa = ct_attn_layout_take(&at, bq, ev, size);
    layout->dob = ct_attn_layout_take(&at, bq, job->ev_pad, size);
    layout->ktb = ct_attn_layout_take(&at, e, bk, size);
    layout->kb = ct_attn_layout_take(&at, bk, job->e_pad, size);
    layout->vtb = ct_attn_layout_take(&at, ev, bk, size);
    layout->dp = ct_attn_layout_take(&at, bq, bk, size);
    layout->pack = ct_attn_layout_take(&at, bq, bkr, size);
    layout->dk = ct_attn_layout_take(&at, bkr, job->e_pad, size);
    layout->dv = ct_attn_layout_take(&at, bkr, job->ev_pad, size);
    layout->lse = ct_attn_layout_take(&at, bq, 1, size);
    layout->d = ct_attn_layout_take(&at, bq, 1, size);
    layout->ot = ct_attn_layout_take(&at, bq, ev, size);
    /* dq: one query tile (split), or the group's L_q rows (padded to whole tiles) */
    const int64_t dq_rows = job->split ? bq : job->group * ct_attn_round_up(job->lq, bq);
    layout->dq = ct_attn_layout_take(&at, dq_rows, job->e_pad, size);
  }
  layout->bytes = at;
}

#endif /* CTENSOR_CPU_ATTENTION_LAYOUT_H_ */
