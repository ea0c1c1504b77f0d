/* cu_layout.h - index arithmetic for strided kernels: operands broadcast to one iteration shape,
 * strides in bytes, dims of extent 1 dropped and neighbouring dims merged where every operand
 * allows it, so most calls become one or two dims (or one contiguous run). A layout is passed to
 * kernels by value (it fits the kernel parameter space), so a launch needs no upload. */
#ifndef CTENSOR_CU_LAYOUT_H_
#define CTENSOR_CU_LAYOUT_H_

#include "cu_plugin.h"

#define CT_CU_MAX_OPERANDS 4

struct ct_cu_layout {
  int32_t ndim;
  int32_t count;   /* operands; operand 0 is the output where there is one */
  bool contiguous; /* after collapsing, every operand is one dense run (set by collapse) */
  int64_t elements;
  int64_t shape[CT_MAX_NDIM];
  int64_t strides[CT_CU_MAX_OPERANDS][CT_MAX_NDIM]; /* bytes */
};

/* Starts a layout over `shape` (ndim dims). */
void ct_cu_layout_begin(ct_cu_layout* layout, int32_t ndim, const int64_t* shape);

/* Adds an operand: tensor `t` broadcast (right-aligned, NumPy rules) to the layout's shape. */
void ct_cu_layout_add(ct_cu_layout* layout, const ct_tensor* t);

/* Adds an operand with explicit byte strides per layout dim. */
void ct_cu_layout_add_strides(ct_cu_layout* layout, const int64_t* byte_strides);

/* Drops extent-1 dims, merges dims that every operand walks as one, and sets `contiguous`
 * when every operand k is then a dense run of sizes[k]-byte elements. */
void ct_cu_layout_collapse(ct_cu_layout* layout, const int32_t* sizes);

/* A layout over `t`'s shape with dim `axis` set to extent 1 (the lanes of an op along an axis). */
void ct_cu_lane_layout(ct_cu_layout* layout, const ct_tensor* t, int32_t axis);

/* Element strides of `t` (compact row-major when t->strides is NULL). */
void ct_cu_tensor_strides(const ct_tensor* t, int64_t* strides);

/* Byte stride of dim `axis` of `t` (0 for a 0-d tensor). */
int64_t ct_cu_byte_stride(const ct_tensor* t, int32_t axis);

#ifdef __CUDACC__
/* Byte offsets of element `i` (row-major over the layout) for operands 0..Operands-1. */
template <int Operands>
__device__ __forceinline__ void ct_cu_offsets(const ct_cu_layout& layout, int64_t i,
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
#endif

#endif /* CTENSOR_CU_LAYOUT_H_ */
