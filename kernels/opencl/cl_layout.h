/* cl_layout.h - index arithmetic for strided kernels: operands broadcast to one iteration shape,
 * strides in bytes, dims of extent 1 dropped and neighbouring dims merged where every operand
 * allows it, so most calls become one or two dims (or a contiguous run). */
#ifndef CTENSOR_CL_LAYOUT_H_
#define CTENSOR_CL_LAYOUT_H_

#include "cl_exec.h"

#define CT_CL_MAX_OPERANDS 4

typedef struct ct_cl_layout {
  int32_t ndim;
  int32_t count; /* operands; operand 0 is the output where there is one */
  int64_t shape[CT_MAX_NDIM];
  int64_t strides[CT_CL_MAX_OPERANDS][CT_MAX_NDIM]; /* bytes */
  int64_t elements;
} ct_cl_layout;

/* Starts a layout over `shape` (ndim dims). */
void ct_cl_layout_begin(ct_cl_layout* layout, int32_t ndim, const int64_t* shape);

/* Adds an operand: tensor `t` broadcast (right-aligned, NumPy rules) to the layout's shape. */
void ct_cl_layout_add(ct_cl_layout* layout, const ct_tensor* t);

/* Adds an operand with explicit byte strides per layout dim. */
void ct_cl_layout_add_strides(ct_cl_layout* layout, const int64_t* byte_strides);

/* Drops extent-1 dims and merges dims that every operand walks as one. */
void ct_cl_layout_collapse(ct_cl_layout* layout);

/* Whether, after collapsing, every operand is a contiguous run of `sizes[k]`-byte elements. */
bool ct_cl_layout_contiguous(const ct_cl_layout* layout, const int32_t* sizes);

/* The kernel parameter buffer: shape, then each operand's strides (ndim each). */
int ct_cl_layout_meta(const ct_cl_exec* exec, const ct_cl_layout* layout, cl_mem* meta);

/* Element strides of `t` (compact row-major when t->strides is NULL) into `strides`. */
void ct_cl_tensor_strides(const ct_tensor* t, int64_t* strides);

/* Number of elements of `t`. */
int64_t ct_cl_tensor_elements(const ct_tensor* t);

/* OpenCL source of the index loop: given `long i` (linear index over the layout) and
 * `__global const long* meta` with `int ndim`, adds each operand's byte offset to `off0`..`offN`
 * (declared by the caller). */
void ct_cl_source_index_loop(ct_cl_source* source, int32_t operands);

#endif /* CTENSOR_CL_LAYOUT_H_ */
