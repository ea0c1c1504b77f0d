/* attention_backward_impl.h - the backward as flash attention 2: for a (query tile, key tile)
 * pair the weights are recomputed as P = exp(scale Q K^T + mask - logsumexp), then dP = dO V^T,
 * dS = scale P (dP - D) with D = rowsum(dO O) (the dropout mask Z, when dropout_p > 0, scales dP
 * and P by Z / (1 - p) where the forward used them), and
 *   dV += P^T dO,  dK += dS^T Q  (the key tile's accumulators)
 *   dQ += dS K                   (the query tile's accumulators)
 * Two schedules, which add the same terms in the same order (so the results are bitwise the
 * same, whichever runs):
 *   - by key head (ct_attn_backward_unit): a unit is one key/value head with its group of query
 *     heads; key tile after key tile, over every query tile that sees it, with dQ accumulated
 *     over the group's L_q rows. No two units write one output element.
 *   - split, when there are fewer key heads than threads: units of one key tile compute dK and
 *     dV (ct_attn_backward_kv_unit), then units of one query tile compute dQ over the key tiles
 *     (ct_attn_backward_q_unit); the weights are computed twice.
 * Included once per compute type. */

typedef struct CT_AT_NAME(ct_attn_bwd_tiles) {
  CT_AT_T *qa, *qb, *doa, *dob, *ktb, *kb, *vtb, *s, *dp, *pack, *dk, *dv, *lse, *d, *dq, *ot;
  CT_AT_T* stage;
} CT_AT_NAME(ct_attn_bwd_tiles);

static CT_AT_NAME(ct_attn_bwd_tiles)
    CT_AT_NAME(ct_attn_bwd_tiles_at)(const ct_attn_layout* lay, char* slot) {
  CT_AT_NAME(ct_attn_bwd_tiles) t;
  t.qa = (CT_AT_T*)(slot + lay->qa);
  t.qb = (CT_AT_T*)(slot + lay->qb);
  t.doa = (CT_AT_T*)(slot + lay->doa);
  t.dob = (CT_AT_T*)(slot + lay->dob);
  t.ktb = (CT_AT_T*)(slot + lay->ktb);
  t.kb = (CT_AT_T*)(slot + lay->kb);
  t.vtb = (CT_AT_T*)(slot + lay->vtb);
  t.s = (CT_AT_T*)(slot + lay->s);
  t.dp = (CT_AT_T*)(slot + lay->dp);
  t.pack = (CT_AT_T*)(slot + lay->pack);
  t.dk = (CT_AT_T*)(slot + lay->dk);
  t.dv = (CT_AT_T*)(slot + lay->dv);
  t.lse = (CT_AT_T*)(slot + lay->lse);
  t.d = (CT_AT_T*)(slot + lay->d);
  t.dq = (CT_AT_T*)(slot + lay->dq);
  t.ot = (CT_AT_T*)(slot + lay->ot);
  t.stage = (CT_AT_T*)(slot + lay->stage);
  return t;
}

/* Key tile [j0, j0 + cols) of the key/value head that query head bh reads: K^T and K panels,
 * V^T panels. */
static void CT_AT_NAME(ct_attn_bwd_key_tile)(const ct_attn_job* job,
                                             const CT_AT_NAME(ct_attn_bwd_tiles) * t, int64_t bh,
                                             int64_t j0, int64_t cols) {
  const ct_attn_operand* ops = job->op;
  const int64_t e = job->e, ev = job->ev;
  const int64_t k_at = ct_attn_lead_offset(job, CT_ATTN_K, bh) + j0 * ops[CT_ATTN_K].rs;
  const int64_t v_at = ct_attn_lead_offset(job, CT_ATTN_V, bh) + j0 * ops[CT_ATTN_V].rs;
  CT_AT_NAME(ct_attn_load)(&ops[CT_ATTN_K], k_at, cols, e, t->stage, e, 1);
  CT_AT_NAME(ct_attn_pack_b_t)(t->stage, e, e, cols, job->nr, t->ktb);
  CT_AT_NAME(ct_attn_pack_b)(t->stage, e, cols, e, job->nr, t->kb);
  CT_AT_NAME(ct_attn_load)(&ops[CT_ATTN_V], v_at, cols, ev, t->stage, ev, 1);
  CT_AT_NAME(ct_attn_pack_b_t)(t->stage, ev, ev, cols, job->nr, t->vtb);
}

/* Query tile [i0, i0 + rows) of query head bh: Q and dO as A and B panels, logsumexp, and D. */
static void CT_AT_NAME(ct_attn_bwd_query_tile)(const ct_attn_job* job,
                                               const CT_AT_NAME(ct_attn_bwd_tiles) * t, int64_t bh,
                                               int64_t i0, int64_t rows) {
  const ct_attn_operand* ops = job->op;
  const int64_t e = job->e, ev = job->ev;
  const int32_t mr = job->mr, nr = job->nr;
  const int64_t q_at = ct_attn_lead_offset(job, CT_ATTN_Q, bh) + i0 * ops[CT_ATTN_Q].rs;
  const int64_t go_at =
      ct_attn_lead_offset(job, CT_ATTN_GRAD_OUT, bh) + i0 * ops[CT_ATTN_GRAD_OUT].rs;
  const int64_t o_at = ct_attn_lead_offset(job, CT_ATTN_OUT, bh) + i0 * ops[CT_ATTN_OUT].rs;
  ct_attn_operand lse_column = ops[CT_ATTN_LSE];
  lse_column.cs = 0;
  const int64_t lse_at = ct_attn_lead_offset(job, CT_ATTN_LSE, bh) + i0 * lse_column.rs;
  CT_AT_NAME(ct_attn_load)(&ops[CT_ATTN_Q], q_at, rows, e, t->stage, e, 1);
  CT_AT_NAME(ct_attn_pack_a)(t->stage, e, rows, e, mr, t->qa);
  CT_AT_NAME(ct_attn_pack_b)(t->stage, e, rows, e, nr, t->qb);
  CT_AT_NAME(ct_attn_load)(&ops[CT_ATTN_GRAD_OUT], go_at, rows, ev, t->stage, ev, 1);
  CT_AT_NAME(ct_attn_pack_a)(t->stage, ev, rows, ev, mr, t->doa);
  CT_AT_NAME(ct_attn_pack_b)(t->stage, ev, rows, ev, nr, t->dob);
  CT_AT_NAME(ct_attn_load)(&lse_column, lse_at, rows, 1, t->lse, 1, 1);
  CT_AT_NAME(ct_attn_load)(&ops[CT_ATTN_OUT], o_at, rows, ev, t->ot, ev, 1);
  for (int64_t i = 0; i < rows; ++i) {
    CT_AT_T sum = 0;
    for (int64_t c = 0; c < ev; ++c) sum += t->stage[i * ev + c] * t->ot[i * ev + c];
    t->d[i] = sum;
  }
}

/* Whether the pair (query tile at i0 of `rows`, key tile at j0) has a term: with is_causal,
 * queries i see keys j <= i only. Both schedules skip the same pairs. */
static inline bool CT_AT_NAME(ct_attn_bwd_pair_live)(const ct_attn_job* job, int64_t i0,
                                                     int64_t rows, int64_t j0) {
  return !job->causal || j0 < i0 + rows;
}

/* One pair: the weights and dS, then dV and dK (with_kv) and dQ (dq not NULL: row stride
 * e_pad) accumulated. */
static void CT_AT_NAME(ct_attn_bwd_pair)(const ct_attn_job* job,
                                         const CT_AT_NAME(ct_attn_bwd_tiles) * t, int64_t bh,
                                         int64_t i0, int64_t rows, int64_t j0, int64_t cols,
                                         bool with_kv, CT_AT_T* dq) {
  const ct_gemm_ukernels* uk = ct_gemm_ukernels_get();
  const ct_vector_math* vm = ct_vector_math_get();
  const ct_attn_operand* ops = job->op;
  const int32_t mr = job->mr, nr = job->nr;
  const int64_t e = job->e, ev = job->ev, bk = job->bk, lq = job->lq, lk = job->lk;
  const CT_AT_T scale = (CT_AT_T)job->scale;
  CT_AT_T* s = t->s;
  CT_AT_T* dp = t->dp;
  CT_AT_NAME(ct_attn_gemm)(uk, t->qa, t->ktb, s, bk, rows, cols, e, mr, nr, 0);
  CT_AT_NAME(ct_attn_gemm)(uk, t->doa, t->vtb, dp, bk, rows, cols, ev, mr, nr, 0);
  const bool diagonal = job->causal && j0 + cols > i0 + 1;
  const int64_t mask_at = job->mask != CT_ATTN_MASK_NONE
                              ? ct_attn_lead_offset(job, CT_ATTN_MASK, bh) +
                                    i0 * ops[CT_ATTN_MASK].rs + j0 * ops[CT_ATTN_MASK].cs
                              : 0;
  const CT_AT_T* d = t->d;
  for (int64_t i = 0; i < rows; ++i) {
    CT_AT_T* p = s + i * bk;
    CT_AT_T* dpi = dp + i * bk;
    for (int64_t c = 0; c < cols; ++c) p[c] *= scale;
    if (job->mask != CT_ATTN_MASK_NONE || diagonal) {
      CT_AT_NAME(ct_attn_mask_row)(job, p, cols, mask_at + i * ops[CT_ATTN_MASK].rs,
                                   diagonal ? i0 + i + 1 - j0 : cols);
    }
    if (t->lse[i] == (CT_AT_T)-INFINITY) {
      memset(p, 0, sizeof(CT_AT_T) * (size_t)cols);
    } else {
      CT_AT_NAME(ct_attn_row_exp)(vm, p, cols, t->lse[i]);
    }
    if (job->dropout_p > 0) {
      /* dS = P (Z dP - D), then P becomes Z P for dV */
      CT_AT_NAME(ct_attn_dropout_row)(job, dpi, cols, (bh * lq + i0 + i) * lk + j0);
      for (int64_t c = 0; c < cols; ++c) dpi[c] = p[c] * (dpi[c] - d[i]) * scale;
      CT_AT_NAME(ct_attn_dropout_row)(job, p, cols, (bh * lq + i0 + i) * lk + j0);
    } else {
      for (int64_t c = 0; c < cols; ++c) dpi[c] = p[c] * (dpi[c] - d[i]) * scale;
    }
  }
  if (with_kv) {
    CT_AT_NAME(ct_attn_pack_a_t)(s, bk, cols, rows, mr, t->pack);
    CT_AT_NAME(ct_attn_gemm)(uk, t->pack, t->dob, t->dv, job->ev_pad, cols, ev, rows, mr, nr, 1);
    CT_AT_NAME(ct_attn_pack_a_t)(dp, bk, cols, rows, mr, t->pack);
    CT_AT_NAME(ct_attn_gemm)(uk, t->pack, t->qb, t->dk, job->e_pad, cols, e, rows, mr, nr, 1);
  }
  if (dq) {
    CT_AT_NAME(ct_attn_pack_a)(dp, bk, rows, cols, mr, t->pack);
    CT_AT_NAME(ct_attn_gemm)(uk, t->pack, t->kb, dq, job->e_pad, rows, e, cols, mr, nr, 1);
  }
}

/* dK and dV of key tile [j0, j0 + cols) of key head `unit`, over its group's query tiles; with
 * dq, dQ accumulated too (rows of the group's heads, lq_pad apart). */
static void CT_AT_NAME(ct_attn_bwd_key_pass)(const ct_attn_job* job,
                                             const CT_AT_NAME(ct_attn_bwd_tiles) * t, int64_t unit,
                                             int64_t j0, int64_t cols, CT_AT_T* dq) {
  const ct_attn_operand* ops = job->op;
  const int64_t bq = job->bq, lq = job->lq, group = job->group, ep = job->e_pad;
  const int64_t lq_pad = ct_attn_round_up(lq, bq), bkr = ct_attn_round_up(job->bk, job->mr);
  const int64_t q0 = unit * group; /* the heads are query's last lead dim */
  CT_AT_NAME(ct_attn_bwd_key_tile)(job, t, q0, j0, cols);
  memset(t->dk, 0, sizeof(CT_AT_T) * (size_t)(bkr * ep));
  memset(t->dv, 0, sizeof(CT_AT_T) * (size_t)(bkr * job->ev_pad));
  for (int64_t g = 0; g < group; ++g) {
    for (int64_t i0 = 0; i0 < lq; i0 += bq) {
      const int64_t rows = lq - i0 < bq ? lq - i0 : bq;
      if (!CT_AT_NAME(ct_attn_bwd_pair_live)(job, i0, rows, j0)) continue;
      CT_AT_NAME(ct_attn_bwd_query_tile)(job, t, q0 + g, i0, rows);
      CT_AT_NAME(ct_attn_bwd_pair)(job, t, q0 + g, i0, rows, j0, cols, true,
                                   dq ? dq + (g * lq_pad + i0) * ep : NULL);
    }
  }
  const int64_t gk_at = ct_attn_lead_offset(job, CT_ATTN_GRAD_K, q0) + j0 * ops[CT_ATTN_GRAD_K].rs;
  const int64_t gv_at = ct_attn_lead_offset(job, CT_ATTN_GRAD_V, q0) + j0 * ops[CT_ATTN_GRAD_V].rs;
  CT_AT_NAME(ct_attn_store)(&ops[CT_ATTN_GRAD_K], gk_at, cols, job->e, t->dk, ep, 1);
  CT_AT_NAME(ct_attn_store)(&ops[CT_ATTN_GRAD_V], gv_at, cols, job->ev, t->dv, job->ev_pad, 1);
}

/* By key head: unit = a key/value head; dQ of its group kept over L_q in the slot. */
static void CT_AT_NAME(ct_attn_backward_unit)(const ct_attn_job* job, const ct_attn_layout* lay,
                                              char* slot, int64_t unit) {
  const CT_AT_NAME(ct_attn_bwd_tiles) t = CT_AT_NAME(ct_attn_bwd_tiles_at)(lay, slot);
  const int64_t lq_pad = ct_attn_round_up(job->lq, job->bq), ep = job->e_pad;
  memset(t.dq, 0, sizeof(CT_AT_T) * (size_t)(job->group * lq_pad * ep));
  for (int64_t j0 = 0; j0 < job->lk; j0 += job->bk) {
    const int64_t cols = job->lk - j0 < job->bk ? job->lk - j0 : job->bk;
    CT_AT_NAME(ct_attn_bwd_key_pass)(job, &t, unit, j0, cols, t.dq);
  }
  for (int64_t g = 0; g < job->group; ++g) {
    const int64_t gq_at = ct_attn_lead_offset(job, CT_ATTN_GRAD_Q, unit * job->group + g);
    CT_AT_NAME(ct_attn_store)(&job->op[CT_ATTN_GRAD_Q], gq_at, job->lq, job->e,
                              t.dq + g * lq_pad * ep, ep, 1);
  }
}

/* Split, first part: unit = (key head, key tile): dK and dV only. */
static void CT_AT_NAME(ct_attn_backward_kv_unit)(const ct_attn_job* job, const ct_attn_layout* lay,
                                                 char* slot, int64_t unit) {
  const CT_AT_NAME(ct_attn_bwd_tiles) t = CT_AT_NAME(ct_attn_bwd_tiles_at)(lay, slot);
  const int64_t tiles = (job->lk + job->bk - 1) / job->bk;
  const int64_t j0 = (unit % tiles) * job->bk;
  const int64_t cols = job->lk - j0 < job->bk ? job->lk - j0 : job->bk;
  CT_AT_NAME(ct_attn_bwd_key_pass)(job, &t, unit / tiles, j0, cols, NULL);
}

/* Split, second part: unit = (query head, query tile): dQ over the key tiles it sees, in the
 * order the by-key-head schedule adds them. */
static void CT_AT_NAME(ct_attn_backward_q_unit)(const ct_attn_job* job, const ct_attn_layout* lay,
                                                char* slot, int64_t unit) {
  const CT_AT_NAME(ct_attn_bwd_tiles) t = CT_AT_NAME(ct_attn_bwd_tiles_at)(lay, slot);
  const int64_t tiles = (job->lq + job->bq - 1) / job->bq;
  const int64_t bh = unit / tiles, i0 = (unit % tiles) * job->bq;
  const int64_t rows = job->lq - i0 < job->bq ? job->lq - i0 : job->bq;
  memset(t.dq, 0, sizeof(CT_AT_T) * (size_t)(job->bq * job->e_pad));
  bool loaded = false;
  for (int64_t j0 = 0; j0 < job->lk; j0 += job->bk) {
    if (!CT_AT_NAME(ct_attn_bwd_pair_live)(job, i0, rows, j0)) break;
    const int64_t cols = job->lk - j0 < job->bk ? job->lk - j0 : job->bk;
    if (!loaded) {
      CT_AT_NAME(ct_attn_bwd_query_tile)(job, &t, bh, i0, rows);
      loaded = true;
    }
    CT_AT_NAME(ct_attn_bwd_key_tile)(job, &t, bh, j0, cols);
    CT_AT_NAME(ct_attn_bwd_pair)(job, &t, bh, i0, rows, j0, cols, false, t.dq);
  }
  const int64_t gq_at =
      ct_attn_lead_offset(job, CT_ATTN_GRAD_Q, bh) + i0 * job->op[CT_ATTN_GRAD_Q].rs;
  CT_AT_NAME(ct_attn_store)(&job->op[CT_ATTN_GRAD_Q], gq_at, rows, job->e, t.dq, job->e_pad, 1);
}
