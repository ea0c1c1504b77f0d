/* plugin_geometry.h - what device plugins read from an op's attributes and shapes the same way
 * on every device: (H, W) attribute pairs, 4-D views, reduced-axis masks, and the copies that
 * permute_dims and concat make. Compiled into each plugin (hidden symbols). */
#ifndef CTENSOR_PLUGIN_GEOMETRY_H_
#define CTENSOR_PLUGIN_GEOMETRY_H_

#include <stdbool.h>
#include <stdint.h>

#include "ctensor_plugin.h"
#include "plugin_layout.h"

#ifdef __cplusplus
extern "C" {
#endif

/* An (H, W) attribute pair: one value serves both, an absent or empty list takes `fallback`. */
void ct_pl_attr_pair(const ct_attr_value* value, const int64_t* fallback, int64_t out[2]);

/* Shape and element strides of a 4-D view of `t` (a 3-D one gets a leading dim of 1). */
void ct_pl_nchw(const ct_tensor* t, int64_t shape[4], int64_t strides[4]);

/* Which of `ndim` dims the axis attribute reduces: None all of them, an int or (when `single`,
 * as argmax takes) the first of a list one, a list each listed one; negative axes count from
 * the end. */
void ct_pl_reduced_axes(const ct_attr_value* axis, bool single, int32_t ndim, bool* mask);

/* Splits the input's dims of a reduction (the axis attribute, then keepdims) into `kept`, over
 * the output's elements with operands (output, input), and `reduced`, over one lane with the
 * input's strides; byte strides, collapsed (a run of one where nothing is left). With
 * `innermost_densest` the reduced dims are ordered by |stride| descending (for coalesced or
 * streaming reads); without, they keep their logical order (the flat index of argmax). `single`
 * as in ct_pl_reduced_axes. Returns the lane length. */
int64_t ct_pl_reduce_layouts(const ct_kernel_call* call, bool single, bool innermost_densest,
                             ct_pl_layout* kept, ct_pl_layout* reduced);

/* The window of max_pool2d (mode 0), avg_pool2d (1) and adaptive_avg_pool2d (2), and of their
 * backward ops, whose schemas share the attribute order: kernel_size, stride (kernel_size when
 * absent), padding, then dilation (max) or count_include_pad and divisor_override (avg).
 * Adaptive pooling has no window attributes: kernel, stride and padding are 0. Eleven int64s in
 * this order, as the OpenCL kernels read them from their parameter block. */
typedef struct ct_pl_pool_window {
  int64_t kernel[2], stride[2], padding[2], dilation[2];
  int64_t count_include_pad, has_divisor, divisor;
} ct_pl_pool_window;

enum { CT_PL_POOL_MAX = 0, CT_PL_POOL_AVG = 1, CT_PL_POOL_ADAPTIVE = 2 };

void ct_pl_pool_window_read(const ct_attr_value* attrs, int32_t mode, ct_pl_pool_window* window);

/* sum_to_shape(x, like) as a call of the sum kernel: the output viewed with x's ndim (extent 1
 * on the dims summed, which broadcasting added), attributes {axis: those dims, keepdims: true}.
 * `call` points into the struct: fill it in place and do not copy it. */
typedef struct ct_pl_sum_to_shape {
  ct_kernel_call call;
  ct_tensor view;
  const ct_tensor* outputs[1];
  ct_attr_value attrs[2];
  int64_t axes[CT_MAX_NDIM], shape[CT_MAX_NDIM], strides[CT_MAX_NDIM];
} ct_pl_sum_to_shape;

void ct_pl_sum_to_shape_call(const ct_kernel_call* call, ct_pl_sum_to_shape* sum);

/* The geometry of matmul under NumPy's rules (1-D operands as a row or a column, broadcast
 * batch dims): extents, byte strides of the matrix dims (0 for a vector's missing one), and the
 * batch dims of the output with each operand's byte strides (out, a, b), not collapsed; the
 * arrays have room for two more dims. */
typedef struct ct_pl_matmul {
  int64_t m, k, n;
  int64_t a_m, a_k, b_k, b_n, out_m, out_n;
  int32_t batch;
  int64_t batch_shape[CT_MAX_NDIM + 2];
  int64_t batch_strides[3][CT_MAX_NDIM + 2];
} ct_pl_matmul;

void ct_pl_matmul_plan(const ct_kernel_call* call, ct_pl_matmul* plan);

/* The copy permute_dims makes: a layout over the output's shape, operand 0 the output, operand
 * 1 the input walked in the order of the axes attribute (None: reversed). */
void ct_pl_permute_layout(const ct_kernel_call* call, ct_pl_layout* layout);

/* Copies layout operand 1 (elements of `x`, from its first byte) into operand 0 (the output,
 * from `dst_offset` bytes past its first byte). */
typedef int (*ct_pl_copy_fn)(void* context, ct_pl_layout* layout, int64_t dst_offset,
                             const ct_tensor* x);

/* concat: calls `copy` for each non-empty input, in order, with the layout and destination of
 * its slab of the output along the axis attribute (None: its run of the flat output). Stops at
 * the first status other than CT_OK and returns it. */
int ct_pl_concat_each(const ct_kernel_call* call, ct_pl_copy_fn copy, void* context);

/* permute_dims_backward: a layout over grad_out's shape, operand 0 the output walked with
 * grad_out's dim d sent to its dim axes[d], operand 1 grad_out. */
void ct_pl_permute_backward_layout(const ct_kernel_call* call, ct_pl_layout* layout);

/* Copies layout operand 1 (elements of the op's first input, from `src_offset` bytes past its
 * first byte) into operand 0 (`out`, from its first byte). */
typedef int (*ct_pl_slab_fn)(void* context, ct_pl_layout* layout, int64_t src_offset,
                             const ct_tensor* out);

/* concat_backward: calls `copy` for each non-empty output, in order, with the layout and source
 * offset of its slab of grad_out (inputs[0]) along the axis attribute (None: its run of the flat
 * grad_out). Stops at the first status other than CT_OK and returns it. */
int ct_pl_concat_backward_each(const ct_kernel_call* call, ct_pl_slab_fn copy, void* context);

/* A dynamic op's output `index` from the caller's allocator (call->allocator) on the given
 * device. A failed allocation, or none for a non-empty output, is CT_ERROR_OUT_OF_MEMORY (or the
 * allocator's own negative status) with a message recorded through `host`. */
int ct_pl_allocate_output(const ct_host_api* host, const ct_kernel_call* call, int32_t index,
                          const ct_tensor_info* info, int32_t device_type, int32_t device_id,
                          void** data);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* CTENSOR_PLUGIN_GEOMETRY_H_ */
