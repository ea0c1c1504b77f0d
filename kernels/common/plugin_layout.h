/* plugin_layout.h - index arithmetic that every device plugin plans on the host: operands
 * broadcast to one iteration shape, strides in bytes, dims of extent 1 dropped and neighbouring
 * dims merged where every operand allows it, so most calls become one or two dims (or one dense
 * run). Compiled into each plugin (hidden symbols); plain C, so CUDA kernels take a layout by
 * value. */
#ifndef CTENSOR_PLUGIN_LAYOUT_H_
#define CTENSOR_PLUGIN_LAYOUT_H_

#include <stdbool.h>
#include <stdint.h>

#include "ctensor_backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Operands a layout holds: an output and up to three inputs. */
#define CT_PL_MAX_OPERANDS 4

typedef struct ct_pl_layout {
  int32_t ndim;
  int32_t count;   /* operands; operand 0 is the output where there is one */
  bool contiguous; /* set by ct_pl_layout_collapse: every operand is one dense run */
  int64_t elements;
  int64_t shape[CT_MAX_NDIM];
  int64_t strides[CT_PL_MAX_OPERANDS][CT_MAX_NDIM]; /* bytes */
} ct_pl_layout;

/* Starts a layout over `shape` (ndim dims). */
void ct_pl_layout_begin(ct_pl_layout* layout, int32_t ndim, const int64_t* shape);

/* Adds an operand: tensor `t` broadcast (right-aligned, NumPy rules) to the layout's shape. */
void ct_pl_layout_add(ct_pl_layout* layout, const ct_tensor* t);

/* Adds an operand with explicit byte strides per layout dim. */
void ct_pl_layout_add_strides(ct_pl_layout* layout, const int64_t* byte_strides);

/* Drops extent-1 dims and merges dims that every operand walks as one. With `sizes` (bytes per
 * element of each operand), sets `contiguous` when every operand is then one dense run; a single
 * element becomes a run of one. Without, `contiguous` is false. */
void ct_pl_layout_collapse(ct_pl_layout* layout, const int32_t* sizes);

/* A layout over `t`'s shape with dim `axis` set to extent 1 (the lanes of an op along an axis). */
void ct_pl_lane_layout(ct_pl_layout* layout, const ct_tensor* t, int32_t axis);

/* Element strides of `t` (compact row-major when t->strides is NULL). */
void ct_pl_tensor_strides(const ct_tensor* t, int64_t* strides);

/* Number of elements of `t`. */
int64_t ct_pl_tensor_elements(const ct_tensor* t);

/* Byte stride of dim `axis` of `t` (0 for a 0-d tensor). */
int64_t ct_pl_byte_stride(const ct_tensor* t, int32_t axis);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* CTENSOR_PLUGIN_LAYOUT_H_ */
