/* conv2d_operands.h - the float32 operands of one conv2d call as the float32-only paths (direct,
 * Winograd) read them: data pointers and element strides, filled once by conv2d_kernels.c. */
#ifndef CTENSOR_CPU_CONV2D_OPERANDS_H_
#define CTENSOR_CPU_CONV2D_OPERANDS_H_

#include <stdint.h>

typedef struct ct_conv2d_f32_operands {
  const float* x; /* input (N, C, H, W) */
  int64_t xs[4];
  const float* weight; /* (O, C / groups, kH, kW) */
  int64_t ws[4];
  const float* bias; /* (O,) or NULL */
  int64_t bs;
  float* out; /* (N, O, OH, OW) */
  int64_t os[4];
} ct_conv2d_f32_operands;

#endif /* CTENSOR_CPU_CONV2D_OPERANDS_H_ */
