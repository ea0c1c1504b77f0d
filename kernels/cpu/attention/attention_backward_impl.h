/* attention_backward_impl.h - the backward of one work unit: one key/value head (of one batch
 * entry) and the query heads of its group, as flash attention 2: for each key tile, over every
 * query tile that can see it, the weights are recomputed as P = exp(scale Q K^T + mask -
 * logsumexp), then dP = dO V^T, dS = scale P (dP - D) with D = rowsum(dO O) (the dropout mask Z,
 * when dropout_p > 0, scales dP and P by Z / (1 - p) where the forward used them), and
 *   dV += P^T dO,  dK += dS^T Q  (the key tile's accumulators, stored when the tile is done)
 *   dQ += dS K                   (accumulators spanning the group's query rows)
 * so that no two units write the same output element and no atomics are needed. Included once
 * per compute type. */

static void CT_AT_NAME(ct_attn_backward_unit)(const ct_attn_job* job, const ct_attn_layout* lay,
                                              char* slot, int64_t unit) {
  const ct_gemm_ukernels* uk = ct_gemm_ukernels_get();
  const ct_vector_math* vm = ct_vector_math_get();
  const int32_t mr = job->mr, nr = job->nr;
  const int64_t e = job->e, ev = job->ev, bq = job->bq, bk = job->bk;
  const int64_t ep = job->e_pad, evp = job->ev_pad, group = job->group;
  const int64_t lq = job->lq, lk = job->lk, lq_pad = ct_attn_round_up(lq, bq);
  const CT_AT_T scale = (CT_AT_T)job->scale;
  CT_AT_T* qa = (CT_AT_T*)(slot + lay->qa);
  CT_AT_T* qb = (CT_AT_T*)(slot + lay->qb);
  CT_AT_T* doa = (CT_AT_T*)(slot + lay->doa);
  CT_AT_T* dob = (CT_AT_T*)(slot + lay->dob);
  CT_AT_T* ktb = (CT_AT_T*)(slot + lay->ktb);
  CT_AT_T* kb = (CT_AT_T*)(slot + lay->kb);
  CT_AT_T* vtb = (CT_AT_T*)(slot + lay->vtb);
  CT_AT_T* s = (CT_AT_T*)(slot + lay->s);
  CT_AT_T* dp = (CT_AT_T*)(slot + lay->dp);
  CT_AT_T* pack = (CT_AT_T*)(slot + lay->pack);
  CT_AT_T* dk = (CT_AT_T*)(slot + lay->dk);
  CT_AT_T* dv = (CT_AT_T*)(slot + lay->dv);
  CT_AT_T* lse = (CT_AT_T*)(slot + lay->lse);
  CT_AT_T* dq = (CT_AT_T*)(slot + lay->dq);
  CT_AT_T* dd = (CT_AT_T*)(slot + lay->dd);
  CT_AT_T* stage = (CT_AT_T*)(slot + lay->stage);
  const ct_attn_operand* ops = job->op;
  ct_attn_operand lse_column = ops[CT_ATTN_LSE];
  lse_column.cs = 0;
  /* query's lead index of the group's first head (the heads are the last lead dim) */
  const int64_t q0 = unit * group;

  /* dq = 0; dd = rowsum(dO * O) */
  memset(dq, 0, sizeof(CT_AT_T) * (size_t)(group * lq_pad * ep));
  for (int64_t g = 0; g < group; ++g) {
    const int64_t go_at = ct_attn_lead_offset(job, CT_ATTN_GRAD_OUT, q0 + g);
    const int64_t o_at = ct_attn_lead_offset(job, CT_ATTN_OUT, q0 + g);
    for (int64_t i0 = 0; i0 < lq; i0 += bq) {
      const int64_t rows = lq - i0 < bq ? lq - i0 : bq;
      CT_AT_NAME(ct_attn_load)(&ops[CT_ATTN_GRAD_OUT], go_at + i0 * ops[CT_ATTN_GRAD_OUT].rs, rows,
                               ev, stage, ev, 1);
      CT_AT_NAME(ct_attn_load)(&ops[CT_ATTN_OUT], o_at + i0 * ops[CT_ATTN_OUT].rs, rows, ev, dob,
                               ev, 1);
      for (int64_t i = 0; i < rows; ++i) {
        CT_AT_T sum = 0;
        for (int64_t c = 0; c < ev; ++c) sum += stage[i * ev + c] * dob[i * ev + c];
        dd[g * lq_pad + i0 + i] = sum;
      }
    }
  }

  const int64_t k_at = ct_attn_lead_offset(job, CT_ATTN_K, q0);
  const int64_t v_at = ct_attn_lead_offset(job, CT_ATTN_V, q0);
  const int64_t bkr = ct_attn_round_up(bk, mr);
  for (int64_t j0 = 0; j0 < lk; j0 += bk) {
    const int64_t cols = lk - j0 < bk ? lk - j0 : bk;
    CT_AT_NAME(ct_attn_load)(&ops[CT_ATTN_K], k_at + j0 * ops[CT_ATTN_K].rs, cols, e, stage, e, 1);
    CT_AT_NAME(ct_attn_pack_b_t)(stage, e, e, cols, nr, ktb);
    CT_AT_NAME(ct_attn_pack_b)(stage, e, cols, e, nr, kb);
    CT_AT_NAME(ct_attn_load)(&ops[CT_ATTN_V], v_at + j0 * ops[CT_ATTN_V].rs, cols, ev, stage, ev,
                             1);
    CT_AT_NAME(ct_attn_pack_b_t)(stage, ev, ev, cols, nr, vtb);
    memset(dk, 0, sizeof(CT_AT_T) * (size_t)(bkr * ep));
    memset(dv, 0, sizeof(CT_AT_T) * (size_t)(bkr * evp));
    /* causal: rows before j0 see none of these keys */
    const int64_t first = job->causal ? j0 / bq * bq : 0;
    for (int64_t g = 0; g < group; ++g) {
      const int64_t bh = q0 + g;
      const int64_t q_at = ct_attn_lead_offset(job, CT_ATTN_Q, bh);
      const int64_t go_at = ct_attn_lead_offset(job, CT_ATTN_GRAD_OUT, bh);
      const int64_t lse_at = ct_attn_lead_offset(job, CT_ATTN_LSE, bh);
      const int64_t mask_at =
          job->mask != CT_ATTN_MASK_NONE ? ct_attn_lead_offset(job, CT_ATTN_MASK, bh) : 0;
      for (int64_t i0 = first; i0 < lq; i0 += bq) {
        const int64_t rows = lq - i0 < bq ? lq - i0 : bq;
        CT_AT_NAME(ct_attn_load)(&ops[CT_ATTN_Q], q_at + i0 * ops[CT_ATTN_Q].rs, rows, e, stage, e,
                                 1);
        CT_AT_NAME(ct_attn_pack_a)(stage, e, rows, e, mr, qa);
        CT_AT_NAME(ct_attn_pack_b)(stage, e, rows, e, nr, qb);
        CT_AT_NAME(ct_attn_load)(&ops[CT_ATTN_GRAD_OUT], go_at + i0 * ops[CT_ATTN_GRAD_OUT].rs,
                                 rows, ev, stage, ev, 1);
        CT_AT_NAME(ct_attn_pack_a)(stage, ev, rows, ev, mr, doa);
        CT_AT_NAME(ct_attn_pack_b)(stage, ev, rows, ev, nr, dob);
        CT_AT_NAME(ct_attn_load)(&lse_column, lse_at + i0 * lse_column.rs, rows, 1, lse, 1, 1);
        CT_AT_NAME(ct_attn_gemm)(uk, qa, ktb, s, bk, rows, cols, e, mr, nr, 0);
        CT_AT_NAME(ct_attn_gemm)(uk, doa, vtb, dp, bk, rows, cols, ev, mr, nr, 0);
        const bool diagonal = job->causal && j0 + cols > i0 + 1;
        const CT_AT_T* d = dd + g * lq_pad + i0;
        for (int64_t i = 0; i < rows; ++i) {
          CT_AT_T* p = s + i * bk;
          CT_AT_T* dpi = dp + i * bk;
          for (int64_t c = 0; c < cols; ++c) p[c] *= scale;
          if (job->mask != CT_ATTN_MASK_NONE || diagonal) {
            const int64_t at =
                mask_at + (i0 + i) * ops[CT_ATTN_MASK].rs + j0 * ops[CT_ATTN_MASK].cs;
            CT_AT_NAME(ct_attn_mask_row)(job, p, cols, at, diagonal ? i0 + i + 1 - j0 : cols);
          }
          if (lse[i] == (CT_AT_T)-INFINITY) {
            memset(p, 0, sizeof(CT_AT_T) * (size_t)cols);
          } else {
            CT_AT_NAME(ct_attn_row_exp)(vm, p, cols, lse[i]);
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
        CT_AT_NAME(ct_attn_pack_a_t)(s, bk, cols, rows, mr, pack);
        CT_AT_NAME(ct_attn_gemm)(uk, pack, dob, dv, evp, cols, ev, rows, mr, nr, 1);
        CT_AT_NAME(ct_attn_pack_a_t)(dp, bk, cols, rows, mr, pack);
        CT_AT_NAME(ct_attn_gemm)(uk, pack, qb, dk, ep, cols, e, rows, mr, nr, 1);
        CT_AT_NAME(ct_attn_pack_a)(dp, bk, rows, cols, mr, pack);
        CT_AT_NAME(ct_attn_gemm)(uk, pack, kb, dq + (g * lq_pad + i0) * ep, ep, rows, e, cols, mr,
                                 nr, 1);
      }
    }
    const int64_t gk_at =
        ct_attn_lead_offset(job, CT_ATTN_GRAD_K, q0) + j0 * ops[CT_ATTN_GRAD_K].rs;
    const int64_t gv_at =
        ct_attn_lead_offset(job, CT_ATTN_GRAD_V, q0) + j0 * ops[CT_ATTN_GRAD_V].rs;
    CT_AT_NAME(ct_attn_store)(&ops[CT_ATTN_GRAD_K], gk_at, cols, e, dk, ep, 1);
    CT_AT_NAME(ct_attn_store)(&ops[CT_ATTN_GRAD_V], gv_at, cols, ev, dv, evp, 1);
  }
  for (int64_t g = 0; g < group; ++g) {
    const int64_t gq_at = ct_attn_lead_offset(job, CT_ATTN_GRAD_Q, q0 + g);
    CT_AT_NAME(ct_attn_store)(&ops[CT_ATTN_GRAD_Q], gq_at, lq, e, dq + g * lq_pad * ep, ep, 1);
  }
}
