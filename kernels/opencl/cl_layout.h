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

/* The same loop with other names: linear index `index`, parameter buffer `meta` with `ndim`
 * dims, offsets `<prefix>0`..`<prefix>N`. */
void ct_cl_source_index_loop_named(ct_cl_source* source, const char* index, const char* meta,
                                   const char* ndim, const char* prefix, int32_t operands);

/* A layout over `t`'s shape with dim `axis` dropped (the lanes of an op along an axis). */
void ct_cl_lane_layout(ct_cl_layout* layout, const ct_tensor* t, int32_t axis);

/* Byte stride of dim `axis` of `t` (0 for a 0-d tensor). */
int64_t ct_cl_byte_stride(const ct_tensor* t, int32_t axis);

/* The first cl_mem of a tensor and its byte offset, as kernel arguments. */
#define CT_CL_TENSOR_ARGS(buffer, offset, t) \
  cl_mem buffer = (cl_mem)(t)->data;         \
  const int64_t offset = (int64_t)(t)->byte_offset

#endif /* CTENSOR_CL_LAYOUT_H_ */
