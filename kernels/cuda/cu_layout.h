/* cu_layout.h - strided layouts (plugin_layout.h, shared with the OpenCL plugin) on the
 * device: a kernel takes a ct_pl_layout by value (it fits the kernel parameter space, so a
 * launch needs no upload) and finds each operand's byte offset of an element with
 * ct_cu_offsets. */
#ifndef CTENSOR_CU_LAYOUT_H_
#define CTENSOR_CU_LAYOUT_H_

#include "cu_plugin.h"
#include "plugin_layout.h"

/* Byte offsets of element `i` (row-major over the layout) for operands 0..Operands-1. */
template <int Operands>
__device__ __forceinline__ void ct_cu_offsets(const ct_pl_layout& layout, int64_t i,
                                              int64_t* offsets) {
  for (int k = 0; k < Operands; ++k) offsets[k] = 0;
  if (layout.contiguous) {
    for (int k = 0; k < Operands; ++k) offsets[k] = i * layout.strides[k][0];
    return;
  }
  int64_t rest = i;
  for (int d = layout.ndim - 1; d >= 0; --d) {
    const int64_t extent = layout.shape[d];
    const int64_t index = rest % extent;
    rest /= extent;
    for (int k = 0; k < Operands; ++k) offsets[k] += index * layout.strides[k][d];
  }
}

#endif /* CTENSOR_CU_LAYOUT_H_ */
