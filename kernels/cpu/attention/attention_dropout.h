/* attention_dropout.h - the dropout of the attention weights: weight i (row-major index in the
 * (lead..., L_q, L_k) weights) is kept iff the Philox-4x32-10 draw with counter (lo(i), hi(i),
 * lo(offset), hi(offset)) and key (lo(seed), hi(seed)) gives (x0 >> 8) * 2^-24 >=
 * (float)dropout_p (kernels/common/philox.h), the rule of the dropout op, so attention's dropout
 * equals dropout(softmax(...), p, seed, offset). Kept weights are scaled by 1 / (1 - p). */
#ifndef CTENSOR_CPU_ATTENTION_DROPOUT_H_
#define CTENSOR_CPU_ATTENTION_DROPOUT_H_

#include <stdint.h>

#include "../../common/philox.h"
#include "attention/attention_job.h"

static inline bool ct_attn_dropout_keep(const ct_attn_job* job, uint64_t index) {
  const ct_philox4 w = ct_philox_element(job->seed, job->offset, index);
  const float u = (float)(w.x[0] >> 8) * 0x1p-24f;
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
