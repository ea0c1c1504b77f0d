/* row_walk.h - walking the rows of an op that works row by row (the norms and their backward
 * ops): an odometer over the outer dims that keeps each operand's element offset, so that
 * stepping to the next row costs no division. Inline, so the operand count a caller passes as
 * a constant stays one. */
#ifndef CTENSOR_CPU_ROW_WALK_H_
#define CTENSOR_CPU_ROW_WALK_H_

#include <stdint.h>

#include "ctensor.h"

/* The multi-index of row `row` over the `nd` outer dims of `shape`, and each of `operands`
 * operands' offset there (strides[i][k]: operand i's element stride along outer dim k). */
static inline void ct_row_walk_start(int32_t nd, const int64_t* shape, int32_t operands,
                                     const int64_t (*strides)[CT_MAX_NDIM], int64_t row,
                                     int64_t* index, int64_t* off) {
  for (int32_t i = 0; i < operands; ++i) off[i] = 0;
  for (int32_t k = nd - 1; k >= 0; --k) {
    index[k] = row % shape[k];
    row /= shape[k];
    for (int32_t i = 0; i < operands; ++i) off[i] += index[k] * strides[i][k];
  }
}

/* Steps index and offsets to the next row. */
static inline void ct_row_walk_next(int32_t nd, const int64_t* shape, int32_t operands,
                                    const int64_t (*strides)[CT_MAX_NDIM], int64_t* index,
                                    int64_t* off) {
  for (int32_t k = nd - 1; k >= 0; --k) {
    for (int32_t i = 0; i < operands; ++i) off[i] += strides[i][k];
    if (++index[k] < shape[k]) return;
    for (int32_t i = 0; i < operands; ++i) off[i] -= strides[i][k] * shape[k];
    index[k] = 0;
  }
}

#endif /* CTENSOR_CPU_ROW_WALK_H_ */
