/* attention_dropout.h - the dropout of the attention weights: weight i (row-major index in the
 * (lead..., L_q, L_k) weights) is kept iff the Philox-4x32-10 draw with counter (lo(i), hi(i),
 * lo(offset), hi(offset)) and key (lo(seed), hi(seed)) gives (x0 >> 8) * 2^-24 >=
 * (float)dropout_p, the rule of the dropout op, so attention's dropout equals
 * dropout(softmax(...), p, seed, offset). Kept weights are scaled by 1 / (1 - p). */
#ifndef CTENSOR_CPU_ATTENTION_DROPOUT_H_
#define CTENSOR_CPU_ATTENTION_DROPOUT_H_

#include <stdint.h>

#include "attention/attention_job.h"

/* x0 of Philox-4x32-10 (Salmon et al., Random123) for one counter and key. */
static inline uint32_t ct_attn_philox_x0(uint64_t index, uint64_t offset, uint64_t seed) {
  uint32_t c0 = (uint32_t)index, c1 = (uint32_t)(index >> 32);
  uint32_t c2 = (uint32_t)offset, c3 = (uint32_t)(offset >> 32);
  uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = (uint64_t)0xD2511F53u * c0, p1 = (uint64_t)0xCD9E8D57u * c2;
    const uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
    c1 = (uint32_t)p1;
    c3 = (uint32_t)p0;
    c0 = n0;
    c2 = n2;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return c0;
}

static inline bool ct_attn_dropout_keep(const ct_attn_job* job, uint64_t index) {
  const float u = (float)(ct_attn_philox_x0(index, job->offset, job->seed) >> 8) * 0x1p-24f;
  return u >= (float)job->dropout_p;
}

/* row[c] *= keep(index0 + c) / (1 - p) for c < n. */
#define CT_ATTN_DROPOUT_ROW(SFX, T)                                                       \
  static inline void ct_attn_dropout_row_##SFX(const ct_attn_job* job, T* row, int64_t n, \
                                               int64_t index0) {                          \
    const T kept = job->dropout_p < 1 ? (T)(1.0 / (1.0 - job->dropout_p)) : (T)0;         \
    for (int64_t c = 0; c < n; ++c) {                                                     \
      row[c] = ct_attn_dropout_keep(job, (uint64_t)(index0 + c)) ? row[c] * kept : (T)0;  \
    }                                                                                     \
  }
CT_ATTN_DROPOUT_ROW(f32, float)
CT_ATTN_DROPOUT_ROW(f64, double)
#undef CT_ATTN_DROPOUT_ROW

#endif /* CTENSOR_CPU_ATTENTION_DROPOUT_H_ */
