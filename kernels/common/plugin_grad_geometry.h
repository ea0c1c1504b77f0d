/* plugin_grad_geometry.h - the geometry of the reduction and matmul backward operators, planned
 * on the host the same way by every device plugin. Compiled into each plugin (hidden symbols). */
#ifndef CTENSOR_PLUGIN_GRAD_GEOMETRY_H_
#define CTENSOR_PLUGIN_GRAD_GEOMETRY_H_

#include <stdint.h>

#include "ctensor_plugin.h"
#include "plugin_layout.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A reduction's backward op (inputs grad_out, x[, out]; attributes axis, keepdims; output
 * grad_x): `kept` over the groups (one per element of grad_out) with operands (grad_x,
 * grad_out, x, out), out's strides 0 when there is no out; `reduced` over one group with
 * operands (x, grad_x). Byte strides, collapsed. Returns the group size. */
int64_t ct_pl_reduce_grad_layouts(const ct_kernel_call* call, ct_pl_layout* kept,
                                  ct_pl_layout* reduced);

/* One cotangent of matmul_backward (which 0: grad_x1 = grad_out x2^T, 1: grad_x2 = x1^T
 * grad_out) as a contraction grad[i] = sum_j A[i, j] B[i, j]: `kept` over the cotangent's
 * elements with operands (grad, A, B), `reduced` over the summed dims (the contracted one and
 * the batch dims the operand was broadcast along) with operands (A, B). Byte strides. */
void ct_pl_matmul_grad_layouts(const ct_kernel_call* call, int which, ct_pl_layout* kept,
                               ct_pl_layout* reduced);

/* take_along_axis_backward (inputs grad_out, x, indices; attribute axis; output grad_x): `lanes`
 * over grad_x's lanes along the axis (grad_x's shape with the axis at extent 1) with operands
 * (grad_x, grad_out, indices broadcast to grad_out); `reduced` over the grad_out entries that can
 * land in one lane (the axis, and the dims where x has extent 1 and grad_out more), row-major,
 * with operands (grad_out, indices). Byte strides, collapsed. Returns the axis. */
int32_t ct_pl_take_along_grad_layouts(const ct_kernel_call* call, ct_pl_layout* lanes,
                                      ct_pl_layout* reduced);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* CTENSOR_PLUGIN_GRAD_GEOMETRY_H_ */
