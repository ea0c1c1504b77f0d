/* cu_conv_pool.cu - conv2d (NCHW input, OIHW weight, stride/padding/dilation/groups, optional
 * bias), its backward operators, conv_transpose2d and its input cotangent, and max_pool2d /
 * avg_pool2d / adaptive_avg_pool2d over (N, C, H, W) or (C, H, W), with windows and divisors
 * exactly as the CPU backend (torch's).
 *
 * The convolutions run through cuDNN (cu_dnn.h) for float16, float32 (never TF32) and float64
 * views it takes: any positive non-overlapping strides for the activations, a packed OIHW weight
 * (a cuDNN filter has no strides), int32 sizes. conv2d and conv_transpose2d_backward_input are
 * cuDNN's forward convolution, conv2d_backward_input and conv_transpose2d its backward-data,
 * conv2d_backward_weight its backward-filter; a bias is added by a kernel of this file after.
 * Their workspace functions ask for the workspace of the algorithm cuDNN's heuristics choose.
 *
 * The plugin's own kernels run every case cuDNN does not take (a strided weight, a broadcast
 * view, conv2d_backward_weight's partial grad_out, conv_transpose2d's output_padding of a stride
 * or more, an empty dim, an unaligned view cuDNN refuses): conv2d is an implicit GEMM per group
 * (output channels x output positions, contracting over input channels x kernel taps) in
 * shared-memory tiles, or a direct kernel (one thread per output) when a group has few output
 * channels (depthwise convolutions); the backward operators are one thread per element of the
 * cotangent they write, each gathering its sum (no atomics); none needs a workspace. float16
 * computes and accumulates in float, float32 in float, float64 in double.
 *
 * Pooling is one thread per output (see the note above the pooling kernels on why not cuDNN's
 * pooling). */
#include <math.h>

#include "cu_call.h"
#include "cu_dnn.h"
#include "cu_layout.h"
#include "plugin_geometry.h"
#include "cu_types.cuh"

namespace {

constexpr int ct_cu_threads = 256;

/* A 4-D view of a tensor (a 3-D one gets a leading dim of 1): shape and byte strides. */
struct ct_cu_nchw {
  int64_t shape[4];
  int64_t strides[4];
};

ct_cu_nchw ct_cu_nchw_of(const ct_tensor* t) {
  ct_cu_nchw view;
  ct_pl_nchw(t, view.shape, view.strides);
  for (int64_t& stride : view.strides) stride *= (t->dtype.bits + 7) / 8;
  return view;
}

/* ----- conv2d ----- */

struct ct_cu_conv_params {
  ct_cu_nchw out, x, w;
  int64_t bias_stride; /* bytes */
  int64_t stride[2], padding[2], dilation[2];
  int64_t groups;
};

/* A convolution's stride, padding and dilation (H, W) and groups, read from the call. */
struct ct_cu_conv_geometry {
  int64_t stride[2], padding[2], dilation[2];
  int64_t groups;
};

/* The input value at (b, ic, ih, iw), or 0 in the padding. Padding zeros still multiply the
 * weight (0 * nan is nan, as im2col and torch). */
template <ct_pl_type Tag>
__device__ __forceinline__ ct_cu_compute_t<Tag> ct_cu_conv_input(const ct_cu_conv_params& p,
                                                                 const char* x, int64_t base,
                                                                 int64_t ih, int64_t iw) {
  using T = ct_cu_compute_t<Tag>;
  const bool inside = ih >= 0 && ih < p.x.shape[2] && iw >= 0 && iw < p.x.shape[3];
  return inside ? ct_cu_load<Tag>(x + base + ih * p.x.strides[2] + iw * p.x.strides[3]) : T(0);
}

/* One thread per output element; for groups with few output channels. */
template <ct_pl_type Tag>
__global__ void __launch_bounds__(256)
    ct_cu_conv2d_direct_kernel(const ct_cu_conv_params p, char* out, const char* x, const char* w,
                               const char* bias) {
  using T = ct_cu_compute_t<Tag>;
  const int64_t ow_n = p.out.shape[3], oh_n = p.out.shape[2], oc_n = p.out.shape[1];
  const int64_t n = p.out.shape[0] * oc_n * oh_n * ow_n;
  const int64_t cin = p.w.shape[1], kh_n = p.w.shape[2], kw_n = p.w.shape[3];
  const int64_t oc_per_group = oc_n / p.groups;
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
    const int64_t ow = i % ow_n, oh = (i / ow_n) % oh_n, oc = (i / (ow_n * oh_n)) % oc_n;
    const int64_t b = i / (ow_n * oh_n * oc_n), g = oc / oc_per_group;
    T acc = 0;
    for (int64_t c = 0; c < cin; ++c) {
      const int64_t base = b * p.x.strides[0] + (g * cin + c) * p.x.strides[1];
      const char* wc = w + oc * p.w.strides[0] + c * p.w.strides[1];
      for (int64_t kh = 0; kh < kh_n; ++kh) {
        const int64_t ih = oh * p.stride[0] - p.padding[0] + kh * p.dilation[0];
        for (int64_t kw = 0; kw < kw_n; ++kw) {
          const int64_t iw = ow * p.stride[1] - p.padding[1] + kw * p.dilation[1];
          acc += ct_cu_conv_input<Tag>(p, x, base, ih, iw) *
                 ct_cu_load<Tag>(wc + kh * p.w.strides[2] + kw * p.w.strides[3]);
        }
      }
    }
    if (bias) acc += ct_cu_load<Tag>(bias + oc * p.bias_stride);
    ct_cu_store<Tag>(out + b * p.out.strides[0] + oc * p.out.strides[1] + oh * p.out.strides[2] +
                         ow * p.out.strides[3],
                     acc);
  }
}

/* Implicit GEMM tiles: a block computes TM output channels x TN output positions of one group,
 * contracting TK taps (input channel, kh, kw) at a time through shared memory; each of its
 * 16 x 16 threads owns a 4 x 4 grid of outputs spaced 16 apart. */
constexpr int ct_cu_tm = 64, ct_cu_tn = 64, ct_cu_tk = 16;

template <ct_pl_type Tag>
__global__ void __launch_bounds__(256)
    ct_cu_conv2d_tiled_kernel(const ct_cu_conv_params p, char* out, const char* x, const char* w,
                              const char* bias) {
  using T = ct_cu_compute_t<Tag>;
  __shared__ T ws[ct_cu_tk][ct_cu_tm + 2]; /* padded: the stores below go to distinct banks */
  __shared__ T xs[ct_cu_tk][ct_cu_tn];
  const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
  const int64_t ow_n = p.out.shape[3], oh_n = p.out.shape[2];
  const int64_t positions = p.out.shape[0] * oh_n * ow_n;
  const int64_t cin = p.w.shape[1], kh_n = p.w.shape[2], kw_n = p.w.shape[3];
  const int64_t taps = kh_n * kw_n, depth = cin * taps;
  const int64_t oc_per_group = p.out.shape[1] / p.groups;
  const int64_t tiles_m = (oc_per_group + ct_cu_tm - 1) / ct_cu_tm;
  const int64_t tiles_n = (positions + ct_cu_tn - 1) / ct_cu_tn;
  const int64_t tiles = p.groups * tiles_m * tiles_n;
  for (int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const int64_t g = tile / (tiles_m * tiles_n);
    const int64_t m0 = (tile / tiles_n) % tiles_m * ct_cu_tm, n0 = tile % tiles_n * ct_cu_tn;
    /* This thread loads weight rows ty + 16 r at tap column tx, and input taps tid / 64 + 4 r
     * at position column tid % 64. */
    const int wk = tx, xn = tid % ct_cu_tn, xk = tid / ct_cu_tn;
    const int64_t position = n0 + xn;
    const bool position_ok = position < positions;
    int64_t x_base = 0, ih0 = 0, iw0 = 0;
    if (position_ok) {
      const int64_t ow = position % ow_n, oh = position / ow_n % oh_n, b = position / ow_n / oh_n;
      x_base = b * p.x.strides[0] + g * cin * p.x.strides[1];
      ih0 = oh * p.stride[0] - p.padding[0];
      iw0 = ow * p.stride[1] - p.padding[1];
    }
    const char* w_group = w + g * oc_per_group * p.w.strides[0];
    T acc[4][4] = {};
    for (int64_t k0 = 0; k0 < depth; k0 += ct_cu_tk) {
      {
        /* Taps past the depth load 0 on both sides, so they add 0 (never 0 * garbage). */
        const int64_t k = k0 + wk;
        int64_t w_off = 0;
        if (k < depth) {
          const int64_t c = k / taps, kh = k % taps / kw_n, kw = k % kw_n;
          w_off = c * p.w.strides[1] + kh * p.w.strides[2] + kw * p.w.strides[3];
        }
        for (int r = 0; r < 4; ++r) {
          const int64_t m = m0 + ty + 16 * r;
          ws[wk][ty + 16 * r] = k < depth && m < oc_per_group
                                    ? ct_cu_load<Tag>(w_group + m * p.w.strides[0] + w_off)
                                    : T(0);
        }
      }
      for (int r = 0; r < 4; ++r) {
        const int64_t k = k0 + xk + 4 * r;
        T v = 0;
        if (k < depth && position_ok) {
          const int64_t c = k / taps, kh = k % taps / kw_n, kw = k % kw_n;
          v = ct_cu_conv_input<Tag>(p, x, x_base + c * p.x.strides[1], ih0 + kh * p.dilation[0],
                                    iw0 + kw * p.dilation[1]);
        }
        xs[xk + 4 * r][xn] = v;
      }
      __syncthreads();
#pragma unroll
      for (int kk = 0; kk < ct_cu_tk; ++kk) {
        T a[4], bv[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) a[i] = ws[kk][ty + 16 * i];
#pragma unroll
        for (int j = 0; j < 4; ++j) bv[j] = xs[kk][tx + 16 * j];
#pragma unroll
        for (int i = 0; i < 4; ++i) {
#pragma unroll
          for (int j = 0; j < 4; ++j) acc[i][j] += a[i] * bv[j];
        }
      }
      __syncthreads();
    }
    for (int j = 0; j < 4; ++j) {
      const int64_t pos = n0 + tx + 16 * j;
      if (pos >= positions) break;
      const int64_t ow = pos % ow_n, oh = pos / ow_n % oh_n, b = pos / ow_n / oh_n;
      const int64_t out_base = b * p.out.strides[0] + oh * p.out.strides[2] + ow * p.out.strides[3];
      for (int i = 0; i < 4; ++i) {
        const int64_t m = m0 + ty + 16 * i;
        if (m >= oc_per_group) break;
        const int64_t oc = g * oc_per_group + m;
        T v = acc[i][j];
        if (bias) v += ct_cu_load<Tag>(bias + oc * p.bias_stride);
        ct_cu_store<Tag>(out + out_base + oc * p.out.strides[1], v);
      }
    }
  }
}

/* Groups with at least this many output channels use the tiled kernel. */
constexpr int64_t ct_cu_tiled_min_channels = 16;

/* The plugin's forward convolution: out = conv(x, w) (+ bias), over out's extent (which may be
 * smaller than the forward's: conv_transpose2d_backward_input with a large output_padding). */
template <ct_pl_type Tag>
int ct_cu_conv2d_launch(const ct_cu_exec& exec, const ct_tensor* out, const ct_tensor* x,
                        const ct_tensor* weight, const ct_tensor* bias,
                        const ct_cu_conv_geometry& geometry, const char* what) {
  ct_cu_conv_params p;
  p.out = ct_cu_nchw_of(out);
  p.x = ct_cu_nchw_of(x);
  p.w = ct_cu_nchw_of(weight);
  p.bias_stride = bias ? ct_pl_byte_stride(bias, 0) : 0;
  for (int k = 0; k < 2; ++k) {
    p.stride[k] = geometry.stride[k];
    p.padding[k] = geometry.padding[k];
    p.dilation[k] = geometry.dilation[k];
  }
  p.groups = geometry.groups;
  const char* b = bias ? ct_cu_tensor_bytes(bias) : nullptr;
  const int64_t oc_per_group = p.out.shape[1] / p.groups;
  if (oc_per_group >= ct_cu_tiled_min_channels) {
    const int64_t positions = p.out.shape[0] * p.out.shape[2] * p.out.shape[3];
    const int64_t tiles = p.groups * ((oc_per_group + ct_cu_tm - 1) / ct_cu_tm) *
                          ((positions + ct_cu_tn - 1) / ct_cu_tn);
    ct_cu_conv2d_tiled_kernel<Tag><<<ct_cu_grid(exec, tiles, 1), ct_cu_threads, 0, exec.stream>>>(
        p, ct_cu_tensor_bytes(out), ct_cu_tensor_bytes(x), ct_cu_tensor_bytes(weight), b);
  } else {
    const int64_t n = ct_pl_tensor_elements(out);
    ct_cu_conv2d_direct_kernel<Tag>
        <<<ct_cu_grid(exec, n, ct_cu_threads), ct_cu_threads, 0, exec.stream>>>(
            p, ct_cu_tensor_bytes(out), ct_cu_tensor_bytes(x), ct_cu_tensor_bytes(weight), b);
  }
  return ct_cu_launch_status(what);
}

/* out[b, c, h, w] += bias[c], in the compute type: the bias of a convolution cuDNN computed. */
template <ct_pl_type Tag>
__global__ void __launch_bounds__(256)
    ct_cu_bias_add_kernel(const ct_cu_nchw o, int64_t bias_stride, char* out, const char* bias) {
  const int64_t n = o.shape[0] * o.shape[1] * o.shape[2] * o.shape[3];
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
    const int64_t w = i % o.shape[3], h = (i / o.shape[3]) % o.shape[2];
    const int64_t c = (i / (o.shape[3] * o.shape[2])) % o.shape[1];
    const int64_t b = i / (o.shape[3] * o.shape[2] * o.shape[1]);
    char* at = out + b * o.strides[0] + c * o.strides[1] + h * o.strides[2] + w * o.strides[3];
    ct_cu_store<Tag>(at, ct_cu_load<Tag>(at) + ct_cu_load<Tag>(bias + c * bias_stride));
  }
}

template <ct_pl_type Tag>
int ct_cu_bias_add(const ct_cu_exec& exec, const ct_tensor* out, const ct_tensor* bias,
                   const char* what) {
  if (!bias) return CT_OK;
  const int64_t n = ct_pl_tensor_elements(out);
  ct_cu_bias_add_kernel<Tag><<<ct_cu_grid(exec, n, ct_cu_threads), ct_cu_threads, 0, exec.stream>>>(
      ct_cu_nchw_of(out), ct_pl_byte_stride(bias, 0), ct_cu_tensor_bytes(out),
      ct_cu_tensor_bytes(bias));
  return ct_cu_launch_status(what);
}

/* ----- cuDNN for the convolution operators ----- */

/* The five convolution operators this file registers. */
enum ct_cu_conv_op {
  CT_CU_CONV2D = 0,
  CT_CU_CONV2D_BACKWARD_INPUT,
  CT_CU_CONV2D_BACKWARD_WEIGHT,
  CT_CU_CONV_TRANSPOSE2D,
  CT_CU_CONV_TRANSPOSE2D_BACKWARD_INPUT,
};

constexpr const char* ct_cu_conv_op_name(int op) {
  return op == CT_CU_CONV2D                   ? "conv2d"
         : op == CT_CU_CONV2D_BACKWARD_INPUT  ? "conv2d_backward_input"
         : op == CT_CU_CONV2D_BACKWARD_WEIGHT ? "conv2d_backward_weight"
         : op == CT_CU_CONV_TRANSPOSE2D       ? "conv_transpose2d"
                                              : "conv_transpose2d_backward_input";
}

/* The call's geometry. conv2d and its backward operators: (stride, padding, dilation, groups);
 * conv_transpose2d's: (stride, padding, output_padding, groups, dilation). */
ct_cu_conv_geometry ct_cu_conv_geometry_of(const ct_kernel_call* call, int op) {
  static const int64_t ones[2] = {1, 1}, zeros[2] = {0, 0};
  const bool transposed =
      op == CT_CU_CONV_TRANSPOSE2D || op == CT_CU_CONV_TRANSPOSE2D_BACKWARD_INPUT;
  ct_cu_conv_geometry g;
  ct_pl_attr_pair(&call->attrs[0], ones, g.stride);
  ct_pl_attr_pair(&call->attrs[1], zeros, g.padding);
  ct_pl_attr_pair(&call->attrs[transposed ? 4 : 2], ones, g.dilation);
  g.groups = call->attrs[3].value.i;
  return g;
}

/* The op as cuDNN's convolution (cu_dnn.h): x the input-space view, w the filter, y the
 * output-space view, and which of them is written. */
struct ct_cu_conv_operands {
  ct_cu_dnn_direction direction;
  const ct_tensor* x;
  const ct_tensor* w;
  const ct_tensor* y;
};

ct_cu_conv_operands ct_cu_conv_operands_of(const ct_kernel_call* call, int op) {
  const ct_tensor* const* in = call->inputs;
  const ct_tensor* out = call->outputs[0];
  switch (op) {
    case CT_CU_CONV2D: /* out = conv(input, weight) */
      return {CT_CU_DNN_FORWARD, in[0], in[1], out};
    case CT_CU_CONV2D_BACKWARD_INPUT: /* (grad_out, input, weight) -> grad_input */
      return {CT_CU_DNN_BACKWARD_DATA, out, in[2], in[0]};
    case CT_CU_CONV2D_BACKWARD_WEIGHT: /* (grad_out, input, weight) -> grad_weight */
      return {CT_CU_DNN_BACKWARD_FILTER, in[1], out, in[0]};
    case CT_CU_CONV_TRANSPOSE2D:
      /* conv2d's backward-data of a convolution from out's space to input's, whose filter is
       * the (C_in, C_out / groups, kH, kW) weight as it is */
      return {CT_CU_DNN_BACKWARD_DATA, out, in[1], in[0]};
    default: /* conv_transpose2d_backward_input: conv2d(grad_out, weight) over input's extent */
      return {CT_CU_DNN_FORWARD, in[0], in[2], out};
  }
}

/* Describes the call for cuDNN; false when cuDNN does not take it (cu_dnn.h says when). */
template <ct_pl_type Tag, int Op>
bool ct_cu_conv_problem(const ct_kernel_call* call, ct_cu_dnn_conv_problem* problem) {
  const ct_cu_conv_operands o = ct_cu_conv_operands_of(call, Op);
  const ct_cu_conv_geometry g = ct_cu_conv_geometry_of(call, Op);
  return ct_cu_dnn_conv_describe(o.direction, Tag, call->inputs[0]->device.device_id, o.x, o.w, o.y,
                                 g.stride, g.padding, g.dilation, g.groups, problem);
}

/* The workspace function of every convolution operator: what cuDNN's chosen algorithm needs,
 * aligned to 256 bytes, or nothing (alignment 1) when the plugin's own kernel will run. */
template <ct_pl_type Tag, int Op>
int ct_cu_conv_workspace(const ct_kernel_call* call, uint64_t* bytes, uint64_t* alignment) {
  *bytes = 0;
  *alignment = 1;
  if (ct_pl_tensor_elements(call->outputs[0]) == 0) return CT_OK;
  ct_cu_dnn_conv_problem problem;
  if (!ct_cu_conv_problem<Tag, Op>(call, &problem)) return CT_OK;
  bool usable = false;
  const int status = ct_cu_dnn_conv_workspace(problem, bytes, &usable);
  if (status == CT_OK && usable) *alignment = ct_cu_dnn_workspace_alignment;
  return status;
}

/* Runs the call through cuDNN when it takes it; `*done` false when the caller's kernel must run
 * instead (nothing was written). */
template <ct_pl_type Tag, int Op>
int ct_cu_conv_try_dnn(const ct_kernel_call* call, const ct_cu_exec& exec, bool* done) {
  *done = false;
  ct_cu_dnn_conv_problem problem;
  if (!ct_cu_conv_problem<Tag, Op>(call, &problem)) return CT_OK;
  const ct_cu_conv_operands o = ct_cu_conv_operands_of(call, Op);
  bool declined = true;
  const int status =
      ct_cu_dnn_conv_run(problem, exec, ct_cu_tensor_bytes(o.x), ct_cu_tensor_bytes(o.w),
                         ct_cu_tensor_bytes(o.y), call->workspace, call->workspace_size, &declined);
  *done = !declined;
  return status;
}

/* conv2d (Op CT_CU_CONV2D: input, weight, bias?) and conv_transpose2d_backward_input (grad_out,
 * input, weight: conv2d of grad_out and weight over input's extent). */
template <ct_pl_type Tag, int Op>
int ct_cu_conv2d_run(const ct_kernel_call* call) {
  const ct_tensor* out = call->outputs[0];
  if (ct_pl_tensor_elements(out) == 0) return CT_OK;
  ct_cu_exec exec;
  int status = ct_cu_exec_for_call(call, &exec);
  if (status != CT_OK) return status;
  const bool forward = Op == CT_CU_CONV2D;
  const ct_tensor* x = call->inputs[0];
  const ct_tensor* weight = forward ? call->inputs[1] : call->inputs[2];
  const ct_tensor* bias = forward && call->num_inputs > 2 ? call->inputs[2] : nullptr;
  bool done = false;
  status = ct_cu_conv_try_dnn<Tag, Op>(call, exec, &done);
  if (status != CT_OK) return status;
  if (done) return ct_cu_bias_add<Tag>(exec, out, bias, ct_cu_conv_op_name(Op));
  return ct_cu_conv2d_launch<Tag>(exec, out, x, weight, bias, ct_cu_conv_geometry_of(call, Op),
                                  ct_cu_conv_op_name(Op));
}

/* ----- pooling -----
 * cuDNN's pooling is not used: its semantics are not exactly these ops'. Its max pooling does
 * not say which of tied elements its backward pass credits (these credit the first maximum in
 * row-major order, or the last NaN, as torch); it has no dilation, no ceil_mode (its output
 * extent is the floor formula), no divisor_override, no integer max pooling, and its average
 * with padding counts the whole padded window, where torch clips the window to the input plus
 * its padding (different under ceil_mode). torch, too, pools with its own CUDA kernels. */

enum ct_cu_pool_mode { CT_CU_POOL_MAX = 0, CT_CU_POOL_AVG, CT_CU_POOL_ADAPTIVE };

struct ct_cu_pool_params {
  ct_cu_nchw out, x;
  int64_t kernel[2], stride[2], padding[2], dilation[2];
  bool count_include_pad;
  bool has_divisor;
  int64_t divisor;
};

/* The call's window (plugin_geometry.h), read the same way as the OpenCL kernels read it. */
void ct_cu_pool_read_window(const ct_kernel_call* call, int32_t mode, ct_cu_pool_params* p) {
  ct_pl_pool_window window;
  ct_pl_pool_window_read(call->attrs, mode, &window);
  for (int k = 0; k < 2; ++k) {
    p->kernel[k] = window.kernel[k];
    p->stride[k] = window.stride[k];
    p->padding[k] = window.padding[k];
    p->dilation[k] = window.dilation[k];
  }
  p->count_include_pad = window.count_include_pad != 0;
  p->has_divisor = window.has_divisor != 0;
  p->divisor = window.divisor;
}

/* One thread per output element. max: the largest value of the window's taps inside the input
 * (padding is -inf), NaN as soon as any tap is NaN. avg: the sum of the window clipped to the
 * input over divisor_override, the window counted with its padding (clipped to input + padding,
 * for ceil_mode) or without. adaptive: the window [floor(i H / Ho), ceil((i + 1) H / Ho)). */
template <ct_pl_type Tag, int Mode>
__global__ void __launch_bounds__(256)
    ct_cu_pool_kernel(const ct_cu_pool_params p, char* out, const char* x) {
  using T = ct_cu_compute_t<Tag>;
  const int64_t ow_n = p.out.shape[3], oh_n = p.out.shape[2], c_n = p.out.shape[1];
  const int64_t n = p.out.shape[0] * c_n * oh_n * ow_n;
  const int64_t h = p.x.shape[2], w = p.x.shape[3];
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
    const int64_t ow = i % ow_n, oh = (i / ow_n) % oh_n, c = (i / (ow_n * oh_n)) % c_n;
    const int64_t b = i / (ow_n * oh_n * c_n);
    const char* plane = x + b * p.x.strides[0] + c * p.x.strides[1];
    T result;
    if constexpr (Mode == CT_CU_POOL_MAX) {
      const int64_t dh = p.dilation[0], dw = p.dilation[1];
      int64_t h0 = oh * p.stride[0] - p.padding[0], w0 = ow * p.stride[1] - p.padding[1];
      const int64_t h1 = min(h0 + (p.kernel[0] - 1) * dh + 1, h);
      const int64_t w1 = min(w0 + (p.kernel[1] - 1) * dw + 1, w);
      if (h0 < 0) h0 += (dh - 1 - h0) / dh * dh;
      if (w0 < 0) w0 += (dw - 1 - w0) / dw * dw;
      /* the padding value: -inf, or an integer dtype's minimum */
      if constexpr (ct_cu_is_float_v<Tag>) {
        result = -INFINITY;
      } else {
        result = (T)(1ULL << (sizeof(T) * 8 - 1)); /* int32 and int64: the minimum */
      }
      for (int64_t ih = h0; ih < h1; ih += dh) {
        for (int64_t iw = w0; iw < w1; iw += dw) {
          const T v = ct_cu_load<Tag>(plane + ih * p.x.strides[2] + iw * p.x.strides[3]);
          if (v > result || v != v) result = v; /* v != v: nan */
        }
      }
    } else {
      int64_t h0, h1, w0, w1, divide;
      if constexpr (Mode == CT_CU_POOL_ADAPTIVE) {
        h0 = oh * h / oh_n;
        h1 = ((oh + 1) * h + oh_n - 1) / oh_n;
        w0 = ow * w / ow_n;
        w1 = ((ow + 1) * w + ow_n - 1) / ow_n;
        divide = (h1 - h0) * (w1 - w0);
      } else {
        h0 = oh * p.stride[0] - p.padding[0];
        w0 = ow * p.stride[1] - p.padding[1];
        h1 = min(h0 + p.kernel[0], h + p.padding[0]);
        w1 = min(w0 + p.kernel[1], w + p.padding[1]);
        const int64_t pool_size = (h1 - h0) * (w1 - w0);
        h0 = max(h0, (int64_t)0);
        w0 = max(w0, (int64_t)0);
        h1 = min(h1, h);
        w1 = min(w1, w);
        divide = p.has_divisor         ? p.divisor
                 : p.count_include_pad ? pool_size
                                       : (h1 - h0) * (w1 - w0);
      }
      T sum = 0;
      for (int64_t ih = h0; ih < h1; ++ih) {
        for (int64_t iw = w0; iw < w1; ++iw) {
          sum += ct_cu_load<Tag>(plane + ih * p.x.strides[2] + iw * p.x.strides[3]);
        }
      }
      result = (h0 >= h1 || w0 >= w1) ? T(0) : sum / (T)divide;
    }
    ct_cu_store<Tag>(out + b * p.out.strides[0] + c * p.out.strides[1] + oh * p.out.strides[2] +
                         ow * p.out.strides[3],
                     result);
  }
}

template <ct_pl_type Tag, int Mode>
int ct_cu_pool_run(const ct_kernel_call* call) {
  const ct_tensor* x = call->inputs[0];
  const ct_tensor* out = call->outputs[0];
  const int64_t n = ct_pl_tensor_elements(out);
  if (n == 0) return CT_OK;
  ct_cu_exec exec;
  int status = ct_cu_exec_for_call(call, &exec);
  if (status != CT_OK) return status;
  ct_cu_pool_params p = {};
  p.out = ct_cu_nchw_of(out);
  p.x = ct_cu_nchw_of(x);
  ct_cu_pool_read_window(call, Mode, &p);
  ct_cu_pool_kernel<Tag, Mode>
      <<<ct_cu_grid(exec, n, ct_cu_threads), ct_cu_threads, 0, exec.stream>>>(
          p, ct_cu_tensor_bytes(out), ct_cu_tensor_bytes(x));
  return ct_cu_launch_status(Mode == CT_CU_POOL_MAX   ? "max_pool2d"
                             : Mode == CT_CU_POOL_AVG ? "avg_pool2d"
                                                      : "adaptive_avg_pool2d");
}

/* ----- backward operators: one thread per element of the cotangent written, gathering (no
 * atomics, no workspace), in the compute type ----- */

struct ct_cu_conv_bwd_params {
  ct_cu_nchw out, g, v; /* v: the weight (input cotangent) or the input (weight cotangent) */
  int64_t stride[2], padding[2], dilation[2];
  int64_t groups;
};

/* conv2d_backward_input (Weight false): grad_input[b, c, h, w] = sum over the output channels
 * of c's group and the taps (i, j) with (h + pH - i·dH) a multiple of sH (and likewise w) of
 * grad_out[b, oc, oh, ow] · weight[oc, c % cg, i, j]. conv2d_backward_weight (Weight true):
 * grad_weight[oc, c, i, j] = sum over (b, oh, ow) of grad_out[b, oc, oh, ow] ·
 * input[b, group · cg + c, oh·sH - pH + i·dH, ow·sW - pW + j·dW]. */
template <ct_pl_type Tag, bool Weight>
__global__ void __launch_bounds__(256)
    ct_cu_conv2d_backward_kernel(const ct_cu_conv_bwd_params p, char* out, const char* g,
                                 const char* v) {
  using T = ct_cu_compute_t<Tag>;
  const int64_t n3 = p.out.shape[3], n2 = p.out.shape[2], n1 = p.out.shape[1];
  const int64_t n = p.out.shape[0] * n1 * n2 * n3;
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
    const int64_t a3 = i % n3, a2 = (i / n3) % n2, a1 = (i / (n3 * n2)) % n1;
    const int64_t a0 = i / (n3 * n2 * n1);
    T acc = 0;
    if constexpr (Weight) {
      const int64_t og = p.out.shape[0] / p.groups, c = (a0 / og) * n1 + a1;
      for (int64_t b = 0; b < p.g.shape[0]; ++b) {
        for (int64_t oh = 0; oh < p.g.shape[2]; ++oh) {
          const int64_t ih = oh * p.stride[0] - p.padding[0] + a2 * p.dilation[0];
          if (ih < 0 || ih >= p.v.shape[2]) continue;
          for (int64_t ow = 0; ow < p.g.shape[3]; ++ow) {
            const int64_t iw = ow * p.stride[1] - p.padding[1] + a3 * p.dilation[1];
            if (iw < 0 || iw >= p.v.shape[3]) continue;
            acc += ct_cu_load<Tag>(g + b * p.g.strides[0] + a0 * p.g.strides[1] +
                                   oh * p.g.strides[2] + ow * p.g.strides[3]) *
                   ct_cu_load<Tag>(v + b * p.v.strides[0] + c * p.v.strides[1] +
                                   ih * p.v.strides[2] + iw * p.v.strides[3]);
          }
        }
      }
    } else {
      const int64_t cg = n1 / p.groups, og = p.v.shape[0] / p.groups;
      const int64_t grp = a1 / cg, cl = a1 - grp * cg;
      for (int64_t o = 0; o < og; ++o) {
        const int64_t oc = grp * og + o;
        for (int64_t ki = 0; ki < p.v.shape[2]; ++ki) {
          const int64_t t = a2 + p.padding[0] - ki * p.dilation[0];
          if (t < 0 || t % p.stride[0] != 0 || t / p.stride[0] >= p.g.shape[2]) continue;
          for (int64_t kj = 0; kj < p.v.shape[3]; ++kj) {
            const int64_t u = a3 + p.padding[1] - kj * p.dilation[1];
            if (u < 0 || u % p.stride[1] != 0 || u / p.stride[1] >= p.g.shape[3]) continue;
            acc += ct_cu_load<Tag>(g + a0 * p.g.strides[0] + oc * p.g.strides[1] +
                                   (t / p.stride[0]) * p.g.strides[2] +
                                   (u / p.stride[1]) * p.g.strides[3]) *
                   ct_cu_load<Tag>(v + oc * p.v.strides[0] + cl * p.v.strides[1] +
                                   ki * p.v.strides[2] + kj * p.v.strides[3]);
          }
        }
      }
    }
    ct_cu_store<Tag>(out + a0 * p.out.strides[0] + a1 * p.out.strides[1] + a2 * p.out.strides[2] +
                         a3 * p.out.strides[3],
                     acc);
  }
}

/* conv2d_backward_input (grad_out, input, weight), conv2d_backward_weight (grad_out, input,
 * weight) and conv_transpose2d (input, weight, bias?: conv2d's input cotangent of the input as
 * grad_out, over the output's extent, plus the bias). */
template <ct_pl_type Tag, int Op>
int ct_cu_conv2d_backward_run(const ct_kernel_call* call) {
  constexpr bool weight = Op == CT_CU_CONV2D_BACKWARD_WEIGHT;
  constexpr bool transposed = Op == CT_CU_CONV_TRANSPOSE2D;
  const ct_tensor* out = call->outputs[0];
  if (ct_pl_tensor_elements(out) == 0) return CT_OK;
  ct_cu_exec exec;
  int status = ct_cu_exec_for_call(call, &exec);
  if (status != CT_OK) return status;
  const ct_tensor* bias = transposed && call->num_inputs > 2 ? call->inputs[2] : nullptr;
  bool done = false;
  status = ct_cu_conv_try_dnn<Tag, Op>(call, exec, &done);
  if (status != CT_OK) return status;
  if (!done) {
    const ct_tensor* grad = call->inputs[0];
    const ct_tensor* other = weight || transposed ? call->inputs[1] : call->inputs[2];
    const ct_cu_conv_geometry g = ct_cu_conv_geometry_of(call, Op);
    ct_cu_conv_bwd_params p;
    p.out = ct_cu_nchw_of(out);
    p.g = ct_cu_nchw_of(grad);
    p.v = ct_cu_nchw_of(other);
    for (int k = 0; k < 2; ++k) {
      p.stride[k] = g.stride[k];
      p.padding[k] = g.padding[k];
      p.dilation[k] = g.dilation[k];
    }
    p.groups = g.groups;
    const int64_t n = ct_pl_tensor_elements(out);
    ct_cu_conv2d_backward_kernel<Tag, weight>
        <<<ct_cu_grid(exec, n, ct_cu_threads), ct_cu_threads, 0, exec.stream>>>(
            p, ct_cu_tensor_bytes(out), ct_cu_tensor_bytes(grad), ct_cu_tensor_bytes(other));
    status = ct_cu_launch_status(ct_cu_conv_op_name(Op));
    if (status != CT_OK) return status;
  }
  return ct_cu_bias_add<Tag>(exec, out, bias, ct_cu_conv_op_name(Op));
}

/* <pool>_backward: grad_input[b, c, h, w] gathers grad_out over the windows that hold (h, w):
 * max where the window's maximum (the forward's rule: first maximum, a later NaN replacing it)
 * is (h, w); avg divided by the window's divisor; adaptive divided by its height and width. */
template <ct_pl_type Tag, int Mode>
__global__ void __launch_bounds__(256)
    ct_cu_pool_backward_kernel(const ct_cu_pool_params p, ct_cu_nchw g, char* out, const char* grad,
                               const char* x) {
  using T = ct_cu_compute_t<Tag>;
  const int64_t w_n = p.out.shape[3], h_n = p.out.shape[2], c_n = p.out.shape[1];
  const int64_t n = p.out.shape[0] * c_n * h_n * w_n;
  const int64_t oh_n = g.shape[2], ow_n = g.shape[3];
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
    const int64_t wi = i % w_n, hi = (i / w_n) % h_n, c = (i / (w_n * h_n)) % c_n;
    const int64_t b = i / (w_n * h_n * c_n);
    const char* gplane = grad + b * g.strides[0] + c * g.strides[1];
    T acc = 0;
    if constexpr (Mode == CT_CU_POOL_ADAPTIVE) {
      const int64_t oh_end = min(oh_n, (hi + 1) * oh_n / h_n + 2);
      const int64_t ow_end = min(ow_n, (wi + 1) * ow_n / w_n + 2);
      for (int64_t oh = max((int64_t)0, hi * oh_n / h_n - 1); oh < oh_end; ++oh) {
        const int64_t h0 = oh * h_n / oh_n, h1 = ((oh + 1) * h_n + oh_n - 1) / oh_n;
        if (hi < h0 || hi >= h1) continue;
        for (int64_t ow = max((int64_t)0, wi * ow_n / w_n - 1); ow < ow_end; ++ow) {
          const int64_t w0 = ow * w_n / ow_n, w1 = ((ow + 1) * w_n + ow_n - 1) / ow_n;
          if (wi < w0 || wi >= w1) continue;
          acc += ct_cu_load<Tag>(gplane + oh * g.strides[2] + ow * g.strides[3]) / (T)(h1 - h0) /
                 (T)(w1 - w0);
        }
      }
    } else {
      const int64_t kh = p.kernel[0], kw = p.kernel[1], sh = p.stride[0], sw = p.stride[1];
      const int64_t ph = p.padding[0], pw = p.padding[1], dh = p.dilation[0], dw = p.dilation[1];
      const int64_t lo_h = hi + ph - (kh - 1) * dh, lo_w = wi + pw - (kw - 1) * dw;
      const int64_t oh_lo = lo_h > 0 ? (lo_h + sh - 1) / sh : 0;
      const int64_t ow_lo = lo_w > 0 ? (lo_w + sw - 1) / sw : 0;
      const int64_t oh_hi = min(oh_n - 1, (hi + ph) / sh), ow_hi = min(ow_n - 1, (wi + pw) / sw);
      for (int64_t oh = oh_lo; oh <= oh_hi; ++oh) {
        if ((hi + ph - oh * sh) % dh != 0) continue;
        for (int64_t ow = ow_lo; ow <= ow_hi; ++ow) {
          if ((wi + pw - ow * sw) % dw != 0) continue;
          const T gv = ct_cu_load<Tag>(gplane + oh * g.strides[2] + ow * g.strides[3]);
          int64_t h0 = oh * sh - ph, w0 = ow * sw - pw;
          if constexpr (Mode == CT_CU_POOL_MAX) {
            const char* plane = x + b * p.x.strides[0] + c * p.x.strides[1];
            const int64_t h1 = min(h0 + (kh - 1) * dh + 1, h_n);
            const int64_t w1 = min(w0 + (kw - 1) * dw + 1, w_n);
            if (h0 < 0) h0 += (dh - 1 - h0) / dh * dh;
            if (w0 < 0) w0 += (dw - 1 - w0) / dw * dw;
            T best = -INFINITY;
            int64_t bh = h0, bw = w0;
            for (int64_t ih = h0; ih < h1; ih += dh) {
              for (int64_t iw = w0; iw < w1; iw += dw) {
                const T v = ct_cu_load<Tag>(plane + ih * p.x.strides[2] + iw * p.x.strides[3]);
                if (v > best || isnan(v)) {
                  best = v;
                  bh = ih;
                  bw = iw;
                }
              }
            }
            if (bh == hi && bw == wi) acc += gv;
          } else {
            int64_t h1 = min(h0 + kh, h_n + ph), w1 = min(w0 + kw, w_n + pw);
            const int64_t pool_size = (h1 - h0) * (w1 - w0);
            h0 = max(h0, (int64_t)0);
            w0 = max(w0, (int64_t)0);
            h1 = min(h1, h_n);
            w1 = min(w1, w_n);
            const int64_t divide = p.has_divisor         ? p.divisor
                                   : p.count_include_pad ? pool_size
                                                         : (h1 - h0) * (w1 - w0);
            acc += gv / (T)divide;
          }
        }
      }
    }
    ct_cu_store<Tag>(out + b * p.out.strides[0] + c * p.out.strides[1] + hi * p.out.strides[2] +
                         wi * p.out.strides[3],
                     acc);
  }
}

template <ct_pl_type Tag, int Mode>
int ct_cu_pool_backward_run(const ct_kernel_call* call) {
  const ct_tensor* grad = call->inputs[0];
  const ct_tensor* x = call->inputs[1];
  const ct_tensor* out = call->outputs[0];
  const int64_t n = ct_pl_tensor_elements(out);
  if (n == 0) return CT_OK;
  ct_cu_exec exec;
  int status = ct_cu_exec_for_call(call, &exec);
  if (status != CT_OK) return status;
  ct_cu_pool_params p = {};
  p.out = ct_cu_nchw_of(out);
  p.x = ct_cu_nchw_of(x);
  const ct_cu_nchw g = ct_cu_nchw_of(grad);
  ct_cu_pool_read_window(call, Mode, &p);
  ct_cu_pool_backward_kernel<Tag, Mode>
      <<<ct_cu_grid(exec, n, ct_cu_threads), ct_cu_threads, 0, exec.stream>>>(
          p, g, ct_cu_tensor_bytes(out), ct_cu_tensor_bytes(grad), ct_cu_tensor_bytes(x));
  return ct_cu_launch_status(Mode == CT_CU_POOL_MAX   ? "max_pool2d_backward"
                             : Mode == CT_CU_POOL_AVG ? "avg_pool2d_backward"
                                                      : "adaptive_avg_pool2d_backward");
}

template <ct_pl_type Tag>
int ct_cu_register_conv_pool_type() {
  const ct_pl_type signature[4] = {Tag, Tag, Tag, Tag};
  int status = ct_cu_register("conv2d", signature, 4, ct_cu_conv2d_run<Tag, CT_CU_CONV2D>,
                              ct_cu_conv_workspace<Tag, CT_CU_CONV2D>, nullptr);
  if (status == CT_OK) {
    status =
        ct_cu_register("conv_transpose2d_backward_input", signature, 4,
                       ct_cu_conv2d_run<Tag, CT_CU_CONV_TRANSPOSE2D_BACKWARD_INPUT>,
                       ct_cu_conv_workspace<Tag, CT_CU_CONV_TRANSPOSE2D_BACKWARD_INPUT>, nullptr);
  }
  if (status == CT_OK) {
    status = ct_cu_register("conv_transpose2d", signature, 4,
                            ct_cu_conv2d_backward_run<Tag, CT_CU_CONV_TRANSPOSE2D>,
                            ct_cu_conv_workspace<Tag, CT_CU_CONV_TRANSPOSE2D>, nullptr);
  }
  if (status == CT_OK) {
    status = ct_cu_register("max_pool2d", signature, 2, ct_cu_pool_run<Tag, CT_CU_POOL_MAX>,
                            nullptr, nullptr);
  }
  if (status == CT_OK) {
    status = ct_cu_register("avg_pool2d", signature, 2, ct_cu_pool_run<Tag, CT_CU_POOL_AVG>,
                            nullptr, nullptr);
  }
  if (status == CT_OK) {
    status = ct_cu_register("adaptive_avg_pool2d", signature, 2,
                            ct_cu_pool_run<Tag, CT_CU_POOL_ADAPTIVE>, nullptr, nullptr);
  }
  if (status == CT_OK) {
    status = ct_cu_register("conv2d_backward_input", signature, 4,
                            ct_cu_conv2d_backward_run<Tag, CT_CU_CONV2D_BACKWARD_INPUT>,
                            ct_cu_conv_workspace<Tag, CT_CU_CONV2D_BACKWARD_INPUT>, nullptr);
  }
  if (status == CT_OK) {
    status = ct_cu_register("conv2d_backward_weight", signature, 4,
                            ct_cu_conv2d_backward_run<Tag, CT_CU_CONV2D_BACKWARD_WEIGHT>,
                            ct_cu_conv_workspace<Tag, CT_CU_CONV2D_BACKWARD_WEIGHT>, nullptr);
  }
  if (status == CT_OK) {
    status = ct_cu_register("max_pool2d_backward", signature, 3,
                            ct_cu_pool_backward_run<Tag, CT_CU_POOL_MAX>, nullptr, nullptr);
  }
  if (status == CT_OK) {
    status = ct_cu_register("avg_pool2d_backward", signature, 3,
                            ct_cu_pool_backward_run<Tag, CT_CU_POOL_AVG>, nullptr, nullptr);
  }
  if (status == CT_OK) {
    status = ct_cu_register("adaptive_avg_pool2d_backward", signature, 3,
                            ct_cu_pool_backward_run<Tag, CT_CU_POOL_ADAPTIVE>, nullptr, nullptr);
  }
  return status;
}

}  // namespace

int ct_cu_register_conv_pool(void) {
  int status = ct_cu_for_each_tag(ct_cu_float_tags{}, [](auto tag) {
    return ct_cu_register_conv_pool_type<decltype(tag)::value>();
  });
  /* integer max pooling (the integer dtypes this plugin has) */
  const ct_pl_type i32[2] = {CT_PL_I32, CT_PL_I32}, i64[2] = {CT_PL_I64, CT_PL_I64};
  if (status == CT_OK) {
    status = ct_cu_register("max_pool2d", i32, 2, ct_cu_pool_run<CT_PL_I32, CT_CU_POOL_MAX>,
                            nullptr, nullptr);
  }
  if (status == CT_OK) {
    status = ct_cu_register("max_pool2d", i64, 2, ct_cu_pool_run<CT_PL_I64, CT_CU_POOL_MAX>,
                            nullptr, nullptr);
  }
  return status;
}
