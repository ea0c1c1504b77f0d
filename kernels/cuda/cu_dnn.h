/* cu_dnn.h - cuDNN behind the CUDA plugin's convolutions: a cuDNN handle per (thread, device),
 * descriptors built from ctensor views, and algorithms chosen by cuDNN's heuristics (never by
 * running them), cached per problem. The op logic (which op maps to which cuDNN call, and when
 * the plugin's own kernels run instead) stays in cu_conv_pool.cu.
 *
 * Every convolution is described as cuDNN's forward one: x (N, C, H, W) the input-space tensor,
 * w (K, C / groups, kH, kW) the filter and y (N, K, Ho, Wo) the output-space tensor, with Ho and
 * Wo exactly cuDNN's forward output extents. The three directions read and write:
 *   forward:         y = conv(x, w)            (conv2d)
 *   backward data:   x = conv^T(y, w)          (conv2d_backward_input, conv_transpose2d)
 *   backward filter: w = the filter gradient of (x, y) (conv2d_backward_weight)
 * x and y take any positive element strides (cudnnSetTensorNdDescriptor); the filter must be
 * packed OIHW, since a cuDNN filter descriptor has no strides. */
#ifndef CTENSOR_CU_DNN_H_
#define CTENSOR_CU_DNN_H_

#include "cu_call.h"
#include "cu_vendor.h"

enum ct_cu_dnn_direction {
  CT_CU_DNN_FORWARD = 0,
  CT_CU_DNN_BACKWARD_DATA = 1,
  CT_CU_DNN_BACKWARD_FILTER = 2,
};

/* One convolution as cuDNN sees it; also the key of the algorithm cache, so every field is an
 * int32 (no padding bytes) and the struct is zeroed before it is filled. */
struct ct_cu_dnn_conv_problem {
  int32_t direction; /* ct_cu_dnn_direction */
  int32_t dtype;     /* ct_pl_type: CT_PL_F16, CT_PL_F32 or CT_PL_F64 */
  int32_t device_id;
  int32_t x_dims[4], x_strides[4]; /* element strides, size-1 dims' normalised */
  int32_t w_dims[4];
  int32_t y_dims[4], y_strides[4];
  int32_t padding[2], stride[2], dilation[2];
  int32_t groups;
};

/* Fills `problem` for the views x, w, y (4-D, on `device_id`) and the geometry. False when cuDNN
 * cannot take the problem and the caller's own kernel must run: a dtype other than float16,
 * float32 or float64, an empty dim, a stride that is not positive (a broadcast view), a filter
 * that is not packed OIHW, a value past int32 (cuDNN's descriptors are int), a tensor of 2^31
 * elements or more, or y's (Ho, Wo) not cuDNN's forward output extents (conv2d_backward_weight's
 * partial grad_out, conv_transpose2d's output_padding of a stride or more). Strides of NULL-data
 * views (a workspace query's described outputs) are read as the compact ones, as ct_tensor
 * promises. */
bool ct_cu_dnn_conv_describe(ct_cu_dnn_direction direction, int32_t dtype, int32_t device_id,
                             const ct_tensor* x, const ct_tensor* w, const ct_tensor* y,
                             const int64_t stride[2], const int64_t padding[2],
                             const int64_t dilation[2], int64_t groups,
                             ct_cu_dnn_conv_problem* problem);

/* The workspace the problem's preferred algorithm needs, in bytes (cudnnGet*WorkspaceSize of the
 * heuristics' first usable choice): what the kernels' workspace functions ask for. `*usable` is
 * false (and `*bytes` 0) when cuDNN proposes no usable algorithm, so that the caller's kernel
 * will run. A problem seen before is answered from the cache; a new one enters the problem's
 * device (a workspace function runs outside a call's device guard) to ask cuDNN. */
int ct_cu_dnn_conv_workspace(const ct_cu_dnn_conv_problem& problem, uint64_t* bytes, bool* usable);

/* The alignment asked for the workspace: cuDNN's algorithms read it with vector loads. */
constexpr uint64_t ct_cu_dnn_workspace_alignment = 256;

/* Runs the problem on exec's device and stream, with the best algorithm whose workspace fits in
 * `workspace_size` bytes at `workspace`. `x`, `w`, `y` point at the first element of each view
 * (the written one is y, x or w by direction; the others are only read). Sets `*declined` (and
 * writes nothing) when cuDNN cannot run it after all (no algorithm fits, or cuDNN reports the
 * configuration unsupported), so that the caller runs its own kernel; else CT_OK or an error.
 * Never allocates device memory or synchronises. */
int ct_cu_dnn_conv_run(const ct_cu_dnn_conv_problem& problem, const ct_cu_exec& exec, void* x,
                       void* w, void* y, void* workspace, uint64_t workspace_size, bool* declined);

#endif /* CTENSOR_CU_DNN_H_ */
