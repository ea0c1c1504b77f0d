/* cl_layout.h - strided layouts (plugin_layout.h, shared with the CUDA plugin) in OpenCL terms:
 * the kernel parameter buffer of a layout and the OpenCL C source of its index loop. */
#ifndef CTENSOR_CL_LAYOUT_H_
#define CTENSOR_CL_LAYOUT_H_

#include <stdbool.h>

#include "cl_exec.h"
#include "plugin_layout.h"

/* The kernel parameter buffer: shape, then each operand's strides (ndim each). */
int ct_cl_layout_meta(const ct_cl_exec* exec, const ct_pl_layout* layout, cl_mem* meta);

/* OpenCL source of the index loop: given `long i` (linear index over the layout) and
 * `__global const long* meta` with `int ndim`, adds each operand's byte offset to `off0`..`offN`
 * (declared by the caller). */
void ct_cl_source_index_loop(ct_cl_source* source, int32_t operands);

/* The same loop with other names: linear index `index`, parameter buffer `meta` with `ndim`
 * dims, offsets `<prefix>0`..`<prefix>N`. */
void ct_cl_source_index_loop_named(ct_cl_source* source, const char* index, const char* meta,
                                   const char* ndim, const char* prefix, int32_t operands);

/* The first cl_mem of a tensor and its byte offset, as kernel arguments. */
/* Scans an int32/int64 index tensor on the device for a value outside [lo, hi): `*found` is
 * set when one is, and `*value` is one such value. Index-taking ops run it before writing. */
int ct_cl_find_index_outside(const ct_cl_exec* exec, const ct_tensor* indices, int64_t lo,
                             int64_t hi, bool* found, int64_t* value);

#define CT_CL_TENSOR_ARGS(buffer, offset, t) \
  cl_mem buffer = (cl_mem)(t)->data;         \
  const int64_t offset = (int64_t)(t)->byte_offset

#endif /* CTENSOR_CL_LAYOUT_H_ */
