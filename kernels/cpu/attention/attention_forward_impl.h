/* attention_forward_impl.h - the forward of one work unit: BQ query rows of one (batch, head),
 * over every key tile with an online softmax (flash attention): per tile S = (scale Q) K^T by the
 * micro-kernels, the mask, the running row maximum m and sum l, the output accumulator O
 * rescaled by exp(m_old - m_new), then O += P V. At the end out = O / l and logsumexp = m +
 * log(l); a row that saw no key (l == 0) gives zeros and -inf. Included once per compute type. */

static void CT_AT_NAME(ct_attn_forward_unit)(const ct_attn_job* job, const ct_attn_layout* lay,
                                             char* slot, int64_t unit) {
  const ct_gemm_ukernels* uk = ct_gemm_ukernels_get();
  const ct_vector_math* vm = ct_vector_math_get();
  const int32_t mr = job->mr, nr = job->nr;
  const int64_t tiles = (job->lq + job->bq - 1) / job->bq;
  const int64_t bh = unit / tiles, i0 = (unit % tiles) * job->bq;
  const int64_t rows = job->lq - i0 < job->bq ? job->lq - i0 : job->bq;
  const int64_t e = job->e, ev = job->ev, bk = job->bk, evp = job->ev_pad;
  CT_AT_T* qa = (CT_AT_T*)(slot + lay->qa);
  CT_AT_T* kb = (CT_AT_T*)(slot + lay->kb);
  CT_AT_T* vb = (CT_AT_T*)(slot + lay->vb);
  CT_AT_T* s = (CT_AT_T*)(slot + lay->s);
  CT_AT_T* pa = (CT_AT_T*)(slot + lay->pa);
  CT_AT_T* o = (CT_AT_T*)(slot + lay->o);
  CT_AT_T* m = (CT_AT_T*)(slot + lay->m);
  CT_AT_T* l = (CT_AT_T*)(slot + lay->l);
  CT_AT_T* stage = (CT_AT_T*)(slot + lay->stage);
  const ct_attn_operand* ops = job->op;

  const int64_t q_at = ct_attn_lead_offset(job, CT_ATTN_Q, bh) + i0 * ops[CT_ATTN_Q].rs;
  const int64_t k_at = ct_attn_lead_offset(job, CT_ATTN_K, bh);
  const int64_t v_at = ct_attn_lead_offset(job, CT_ATTN_V, bh);
  const int64_t mask_at =
      job->mask != CT_ATTN_MASK_NONE
          ? ct_attn_lead_offset(job, CT_ATTN_MASK, bh) + i0 * ops[CT_ATTN_MASK].rs
          : 0;
  CT_AT_NAME(ct_attn_load)(&ops[CT_ATTN_Q], q_at, rows, e, stage, e, (CT_AT_T)job->scale);
  CT_AT_NAME(ct_attn_pack_a)(stage, e, rows, e, mr, qa);
  memset(o, 0, sizeof(CT_AT_T) * (size_t)(job->bq * evp));
  for (int64_t i = 0; i < rows; ++i) {
    m[i] = (CT_AT_T)-INFINITY;
    l[i] = 0;
  }
  const int64_t kend = job->causal ? (job->lk < i0 + rows ? job->lk : i0 + rows) : job->lk;
  for (int64_t j0 = 0; j0 < kend; j0 += bk) {
    const int64_t cols = kend - j0 < bk ? kend - j0 : bk;
    CT_AT_NAME(ct_attn_load)(&ops[CT_ATTN_K], k_at + j0 * ops[CT_ATTN_K].rs, cols, e, stage, e, 1);
    CT_AT_NAME(ct_attn_pack_b_t)(stage, e, e, cols, nr, kb);
    CT_AT_NAME(ct_attn_gemm)(uk, qa, kb, s, bk, rows, cols, e, mr, nr, 0);
    CT_AT_NAME(ct_attn_load)(&ops[CT_ATTN_V], v_at + j0 * ops[CT_ATTN_V].rs, cols, ev, stage, ev,
                             1);
    CT_AT_NAME(ct_attn_pack_b)(stage, ev, cols, ev, nr, vb);
    /* keys past row i's diagonal (causal) start at column i0 + i + 1 - j0 */
    const bool diagonal = job->causal && j0 + cols > i0 + 1;
    for (int64_t i = 0; i < rows; ++i) {
      CT_AT_T* row = s + i * bk;
      if (job->mask != CT_ATTN_MASK_NONE || diagonal) {
        const int64_t at = mask_at + i * ops[CT_ATTN_MASK].rs + j0 * ops[CT_ATTN_MASK].cs;
        CT_AT_NAME(ct_attn_mask_row)(job, row, cols, at, diagonal ? i0 + i + 1 - j0 : cols);
      }
      const CT_AT_T top = CT_AT_NAME(ct_attn_row_max)(vm, row, cols);
      const CT_AT_T m_new = top > m[i] ? top : m[i];
      if (m_new == (CT_AT_T)-INFINITY) {
        memset(row, 0, sizeof(CT_AT_T) * (size_t)cols);
        continue;
      }
      const CT_AT_T sum = CT_AT_NAME(ct_attn_row_exp)(vm, row, cols, m_new);
      if (m_new != m[i]) {
        const CT_AT_T alpha = m[i] == (CT_AT_T)-INFINITY ? 0 : (CT_AT_T)exp(m[i] - m_new);
        CT_AT_T* orow = o + i * evp;
        for (int64_t c = 0; c < ev; ++c) orow[c] *= alpha;
        l[i] *= alpha;
        m[i] = m_new;
      }
      l[i] += sum;
      if (job->dropout_p > 0) {
        CT_AT_NAME(ct_attn_dropout_row)(job, row, cols, (bh * job->lq + i0 + i) * job->lk + j0);
      }
    }
    CT_AT_NAME(ct_attn_pack_a)(s, bk, rows, cols, mr, pa);
    CT_AT_NAME(ct_attn_gemm)(uk, pa, vb, o, evp, rows, ev, cols, mr, nr, 1);
  }
  /* out = O / l; logsumexp = m + log(l) */
  for (int64_t i = 0; i < rows; ++i) {
    const CT_AT_T inv = l[i] > 0 ? (CT_AT_T)1 / l[i] : 0;
    CT_AT_T* orow = o + i * evp;
    for (int64_t c = 0; c < ev; ++c) orow[c] *= inv;
    m[i] = l[i] > 0 ? m[i] + (CT_AT_T)log(l[i]) : (CT_AT_T)-INFINITY;
  }
  const int64_t out_at = ct_attn_lead_offset(job, CT_ATTN_OUT, bh) + i0 * ops[CT_ATTN_OUT].rs;
  CT_AT_NAME(ct_attn_store)(&ops[CT_ATTN_OUT], out_at, rows, ev, o, evp, 1);
  /* logsumexp as a column: rows of one element */
  ct_attn_operand lse = ops[CT_ATTN_LSE];
  lse.cs = 0;
  const int64_t lse_at = ct_attn_lead_offset(job, CT_ATTN_LSE, bh) + i0 * lse.rs;
  CT_AT_NAME(ct_attn_store)(&lse, lse_at, rows, 1, m, 1, 1);
}
