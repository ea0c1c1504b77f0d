/* cu_loss.cu - the losses and their backward operators (capi/ops/loss_ops.c): cross_entropy and
 * nll_loss along a class axis, binary_cross_entropy_with_logits, mse_loss and smooth_l1_loss
 * element-wise, as the OpenCL backend computes them (cl_loss.c): float16/float32 compute in
 * float, float64 in double, sums in double.
 *
 * Class-axis losses: one thread first walks the targets, checking every class index (an index
 * out of range is reported before any output is written) and summing the mean's denominator;
 * then one thread per sample. Reductions: the samples' losses go to the call's workspace, which
 * ct_cu_loss_blocks threads sum in fixed contiguous blocks and one thread then adds in order, so
 * the result does not depend on scheduling. The samples are walked by two layouts over the same
 * shape (a layout holds four operands), each collapsed on its own. */
#include <math.h>
#include <string.h>

#include "cu_call.h"
#include "cu_layout.h"
#include "cu_types.cuh"

namespace {

constexpr int ct_cu_loss_threads = 256;
constexpr int64_t ct_cu_loss_blocks = 256;

int ct_cu_loss_mode(const ct_attr_value* value) {
  const char* s = value->value.s;
  return strcmp(s, "none") == 0 ? 0 : strcmp(s, "sum") == 0 ? 2 : 1;
}

/* Layout a: operands 0..3, layout b: 4..7 (offsets of sample i in `off`). */
__device__ __forceinline__ void ct_cu_loss_offsets(const ct_pl_layout& a, const ct_pl_layout& b,
                                                   int64_t i, int64_t* off) {
  ct_cu_offsets<4>(a, i, off);
  ct_cu_offsets<4>(b, i, off + 4);
}

__global__ void ct_cu_loss_blocks_kernel(const double* values, int64_t count, int64_t blocks,
                                         double* partial) {
  for (int64_t b = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; b < blocks;
       b += (int64_t)gridDim.x * blockDim.x) {
    const int64_t first = b * count / blocks, last = (b + 1) * count / blocks;
    double total = 0;
    for (int64_t i = first; i < last; ++i) total += values[i];
    partial[b] = total;
  }
}

template <ct_pl_type Tag>
__global__ void ct_cu_loss_finish_kernel(const double* partial, int64_t blocks, char* out,
                                         const double* den, double scale) {
  double total = 0;
  for (int64_t b = 0; b < blocks; ++b) total += partial[b];
  total = den ? total / den[0] : total * scale;
  ct_cu_store<Tag>(out, total);
}

/* Where a reduced loss over `count` values keeps its scratch: the values (at least one), then,
 * from a 256-byte boundary, one partial sum per block of ct_cu_loss_blocks_kernel. The workspace
 * functions ask for `bytes`; the run functions lay the scratch out the same way. */
struct ct_cu_loss_scratch {
  int64_t blocks;
  uint64_t partial; /* byte offset of the partial sums */
  uint64_t bytes;
};

constexpr uint64_t ct_cu_loss_alignment = 256;

ct_cu_loss_scratch ct_cu_loss_plan(int64_t count) {
  ct_cu_loss_scratch s;
  s.blocks = count < ct_cu_loss_blocks ? count : ct_cu_loss_blocks;
  if (s.blocks < 1) s.blocks = 1;
  const uint64_t kept = count > 0 ? (uint64_t)count : 1;
  s.partial = (kept * sizeof(double) + ct_cu_loss_alignment - 1) / ct_cu_loss_alignment *
              ct_cu_loss_alignment;
  s.bytes = s.partial + (uint64_t)s.blocks * sizeof(double);
  return s;
}

/* The scratch of `plan`: the call's workspace (the workspace function asked for it). */
int ct_cu_loss_scratch_of(const ct_kernel_call* call, const ct_cu_loss_scratch& plan,
                          char** scratch) {
  void* memory = nullptr;
  const int status = ct_cu_workspace(call->workspace, call->workspace_size, plan.bytes,
                                     alignof(double), call->schema->name, &memory);
  *scratch = static_cast<char*>(memory);
  return status;
}

/* Sums `count` values (device scratch) into out: divided by den[0] when den, else scaled.
 * `partial` holds plan.blocks doubles (ct_cu_loss_plan(count)). */
template <ct_pl_type Tag>
int ct_cu_loss_total(const ct_cu_exec& exec, const double* values, int64_t count,
                     const ct_cu_loss_scratch& plan, double* partial, char* out, const double* den,
                     double scale) {
  ct_cu_loss_blocks_kernel<<<1, ct_cu_loss_threads, 0, exec.stream>>>(values, count, plan.blocks,
                                                                      partial);
  ct_cu_loss_finish_kernel<Tag><<<1, 1, 0, exec.stream>>>(partial, plan.blocks, out, den, scale);
  return ct_cu_launch_status("loss reduction");
}

/* ----- class-axis losses ----- */

struct ct_cu_class_args {
  int64_t rows, n, sx, st, sgx, sgt, w_step, ignore;
  bool has_ignore, has_w;
  double smoothing;
  int mode;
};

template <ct_pl_type Tag>
__device__ __forceinline__ double ct_cu_w(const ct_cu_class_args& p, const char* w, int64_t c) {
  return p.has_w ? (double)ct_cu_load<Tag>(w + c * p.w_step) : 1.0;
}

template <ct_pl_type Tag>
__device__ double ct_cu_lse(const ct_cu_class_args& p, const char* x) {
  using C = ct_cu_compute_t<Tag>;
  C high = (C)-INFINITY;
  for (int64_t k = 0; k < p.n; ++k) {
    const C v = ct_cu_load<Tag>(x + k * p.sx);
    if (v > high || v != v) high = v;
  }
  double total = 0;
  for (int64_t k = 0; k < p.n; ++k) total += (double)exp(ct_cu_load<Tag>(x + k * p.sx) - high);
  return (double)high + log(total);
}

/* One sample's loss (y: its class index; -1 for a probability target row t). */
template <ct_pl_type Tag, bool Nll>
__device__ double ct_cu_sample_loss(const ct_cu_class_args& p, const char* x, const char* t,
                                    const char* w, int64_t y) {
  if (Nll) return -ct_cu_w<Tag>(p, w, y) * (double)ct_cu_load<Tag>(x + y * p.sx);
  const double lse = ct_cu_lse<Tag>(p, x);
  const double keep = 1 - p.smoothing, flat = p.smoothing / (double)p.n;
  if (y < 0) {
    double total = 0;
    for (int64_t c = 0; c < p.n; ++c) {
      const double q = keep * (double)ct_cu_load<Tag>(t + c * p.st) + flat;
      total += ct_cu_w<Tag>(p, w, c) * q * (lse - (double)ct_cu_load<Tag>(x + c * p.sx));
    }
    return total;
  }
  double loss = keep * ct_cu_w<Tag>(p, w, y) * (lse - (double)ct_cu_load<Tag>(x + y * p.sx));
  if (p.smoothing > 0) {
    double spread = 0;
    for (int64_t c = 0; c < p.n; ++c) {
      spread += ct_cu_w<Tag>(p, w, c) * (lse - (double)ct_cu_load<Tag>(x + c * p.sx));
    }
    loss += flat * spread;
  }
  return loss;
}

/* Class indices in range (found[0] set, found[1] the index otherwise) and den[0] the mean's
 * denominator. One thread. */
template <ct_pl_type Tag, ct_pl_type Y>
__global__ void ct_cu_class_check_kernel(const ct_pl_layout a, const ct_pl_layout b,
                                         const ct_cu_class_args p, const char* t, const char* w,
                                         long long* found, double* den) {
  double total = 0;
  for (int64_t r = 0; r < p.rows; ++r) {
    if (Y == Tag) {
      total += 1;
      continue;
    }
    int64_t off[8];
    ct_cu_loss_offsets(a, b, r, off);
    const int64_t y = (int64_t)ct_cu_load<Y>(t + off[1]);
    if (p.has_ignore && y == p.ignore) continue;
    if (y < 0 || y >= p.n) {
      found[0] = 1;
      found[1] = y;
      return;
    }
    total += ct_cu_w<Tag>(p, w, y);
  }
  den[0] = total;
}

template <ct_pl_type Tag, ct_pl_type Y, bool Nll>
__global__ void __launch_bounds__(ct_cu_loss_threads)
    ct_cu_class_rows_kernel(const ct_pl_layout a, const ct_pl_layout b, const ct_cu_class_args p,
                            const char* x, const char* t, const char* w, char* s, double* values) {
  for (int64_t r = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; r < p.rows;
       r += (int64_t)gridDim.x * blockDim.x) {
    int64_t off[8];
    ct_cu_loss_offsets(a, b, r, off);
    const int64_t y = Y == Tag ? -1 : (int64_t)ct_cu_load<Y>(t + off[1]);
    double loss = 0;
    if (!(Y != Tag && p.has_ignore && y == p.ignore)) {
      loss = ct_cu_sample_loss<Tag, Nll>(p, x + off[0], t + off[1], w, y);
    }
    if (values) {
      values[r] = loss;
    } else {
      ct_cu_store<Tag>(s + off[2], loss);
    }
  }
}

template <ct_pl_type Tag, ct_pl_type Y, bool Nll>
__global__ void __launch_bounds__(ct_cu_loss_threads)
    ct_cu_class_backward_kernel(const ct_pl_layout a, const ct_pl_layout b,
                                const ct_cu_class_args p, const char* x, const char* t,
                                const char* w, const char* s, const double* den, char* gx,
                                char* gt) {
  using C = ct_cu_compute_t<Tag>;
  for (int64_t r = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; r < p.rows;
       r += (int64_t)gridDim.x * blockDim.x) {
    int64_t off[8];
    ct_cu_loss_offsets(a, b, r, off);
    const char* xr = x + off[0];
    const char* tr = t + off[1];
    char* gxr = gx + off[3];
    double g = (double)ct_cu_load<Tag>(s + off[2]);
    if (p.mode == 1) g /= den[0];
    const double keep = 1 - p.smoothing, flat = p.smoothing / (double)p.n;
    if (Y == Tag) {
      const double lse = ct_cu_lse<Tag>(p, xr);
      double a_sum = 0;
      for (int64_t c = 0; c < p.n; ++c) {
        a_sum += ct_cu_w<Tag>(p, w, c) * (keep * (double)ct_cu_load<Tag>(tr + c * p.st) + flat);
      }
      for (int64_t c = 0; c < p.n; ++c) {
        const double xc = (double)ct_cu_load<Tag>(xr + c * p.sx), wc = ct_cu_w<Tag>(p, w, c);
        const double q = keep * (double)ct_cu_load<Tag>(tr + c * p.st) + flat;
        const double pc = (double)exp((C)(xc - lse));
        ct_cu_store<Tag>(gxr + c * p.sgx, (C)(g * (pc * a_sum - wc * q)));
        ct_cu_store<Tag>(gt + off[4] + c * p.sgt, (C)(g * keep * wc * (lse - xc)));
      }
      continue;
    }
    if (gt) ct_cu_store<Tag>(gt + off[4], (C)0);
    const int64_t y = (int64_t)ct_cu_load<Y>(tr);
    if (p.has_ignore && y == p.ignore) {
      for (int64_t c = 0; c < p.n; ++c) ct_cu_store<Tag>(gxr + c * p.sgx, (C)0);
      continue;
    }
    const double wy = ct_cu_w<Tag>(p, w, y);
    if (Nll) {
      for (int64_t c = 0; c < p.n; ++c) ct_cu_store<Tag>(gxr + c * p.sgx, (C)0);
      ct_cu_store<Tag>(gxr + y * p.sgx, (C)(-g * wy));
      continue;
    }
    const double lse = ct_cu_lse<Tag>(p, xr);
    double total_w = 0;
    for (int64_t c = 0; c < p.n; ++c) total_w += ct_cu_w<Tag>(p, w, c);
    const double scale = keep * wy + flat * total_w;
    for (int64_t c = 0; c < p.n; ++c) {
      const double pc = (double)exp((C)((double)ct_cu_load<Tag>(xr + c * p.sx) - lse));
      double v = pc * scale - flat * ct_cu_w<Tag>(p, w, c);
      if (c == y) v -= keep * wy;
      ct_cu_store<Tag>(gxr + c * p.sgx, (C)(g * v));
    }
  }
}

/* Row strides of t over the dims but `axis` (all of t's when axis < 0; zeros for an absent or
 * 0-d t) and its byte step along the axis. */
void ct_cu_row_strides(const ct_tensor* t, int32_t axis, int32_t ndim, int64_t* strides,
                       int64_t* step) {
  for (int32_t d = 0; d < CT_MAX_NDIM; ++d) strides[d] = 0;
  *step = 0;
  if (!t) return;
  int32_t d = 0;
  for (int32_t k = 0; k < t->ndim; ++k) {
    const int64_t s = ct_pl_byte_stride(t, k);
    if (k == axis) {
      *step = s;
    } else if (d < ndim) {
      strides[d++] = s;
    }
  }
}

bool ct_cu_loss_backward(const ct_kernel_call* call) {
  return strstr(call->schema->name, "_backward") != nullptr;
}

/* The class axis of a class-axis loss's input x. */
int32_t ct_cu_class_axis(const ct_kernel_call* call, const ct_tensor* x) {
  const int64_t axis_attr = call->attrs[0].value.i;
  return x->ndim == 1 ? 0 : (int32_t)(axis_attr < 0 ? axis_attr + x->ndim : axis_attr);
}

/* The scratch of a class-axis loss call: its samples' losses and their partial sums, for a
 * reduced forward (bytes 0 otherwise). */
ct_cu_loss_scratch ct_cu_class_scratch(const ct_kernel_call* call) {
  ct_cu_loss_scratch s = {0, 0, 0};
  if (ct_cu_loss_backward(call) || ct_cu_loss_mode(&call->attrs[1]) == 0) return s;
  const ct_tensor* x = call->inputs[0];
  const int32_t axis = ct_cu_class_axis(call, x);
  int64_t rows = 1;
  for (int32_t k = 0; k < x->ndim; ++k) {
    if (k != axis) rows *= x->shape[k];
  }
  return ct_cu_loss_plan(rows);
}

int ct_cu_class_loss_workspace(const ct_kernel_call* call, uint64_t* bytes, uint64_t* alignment) {
  *bytes = ct_cu_class_scratch(call).bytes;
  *alignment = ct_cu_loss_alignment;
  return CT_OK;
}

template <ct_pl_type Tag, ct_pl_type Y, bool Nll>
int ct_cu_class_loss_run(const ct_kernel_call* call) {
  const bool backward = ct_cu_loss_backward(call);
  const int32_t first = backward ? 1 : 0;
  const ct_tensor* x = call->inputs[first];
  const ct_tensor* target = call->inputs[first + 1];
  const ct_tensor* weight = call->inputs[first + 2];
  const ct_tensor* sample = backward ? call->inputs[0] : call->outputs[0];
  const ct_tensor* gx = backward ? call->outputs[0] : nullptr;
  const ct_tensor* gt = backward && call->num_outputs > 1 ? call->outputs[1] : nullptr;
  constexpr bool prob = Y == Tag;
  ct_cu_class_args p;
  p.mode = ct_cu_loss_mode(&call->attrs[1]);
  p.has_ignore = call->attrs[2].type != CT_ATTR_NONE;
  p.ignore = p.has_ignore ? call->attrs[2].value.i : 0;
  p.smoothing = call->schema->num_attrs > 3 ? call->attrs[3].value.f : 0.0;
  const int32_t axis = ct_cu_class_axis(call, x);
  p.n = x->shape[axis];
  int64_t shape[CT_MAX_NDIM];
  int32_t ndim = 0;
  p.rows = 1;
  for (int32_t k = 0; k < x->ndim; ++k) {
    if (k != axis) p.rows *= (shape[ndim++] = x->shape[k]);
  }
  if (backward && p.rows == 0) return CT_OK;
  ct_cu_exec exec;
  int status = ct_cu_exec_for_call(call, &exec);
  if (status != CT_OK) return status;
  int64_t strides[5][CT_MAX_NDIM];
  int64_t steps[5];
  ct_cu_row_strides(x, axis, ndim, strides[0], &steps[0]);
  ct_cu_row_strides(target, prob ? axis : -1, ndim, strides[1], &steps[1]);
  ct_cu_row_strides(sample, -1, ndim, strides[2], &steps[2]);
  ct_cu_row_strides(gx, axis, ndim, strides[3], &steps[3]);
  ct_cu_row_strides(gt, prob ? axis : -1, ndim, strides[4], &steps[4]);
  p.sx = steps[0];
  p.st = steps[1];
  p.sgx = steps[3];
  p.sgt = steps[4];
  p.has_w = weight != nullptr;
  p.w_step = weight ? ct_pl_byte_stride(weight, 0) : 0;
  ct_pl_layout la, lb;
  ct_pl_layout_begin(&la, ndim, shape);
  ct_pl_layout_begin(&lb, ndim, shape);
  for (int k = 0; k < 4; ++k) ct_pl_layout_add_strides(&la, strides[k]);
  ct_pl_layout_add_strides(&lb, strides[4]);
  ct_pl_layout_collapse(&la, nullptr);
  ct_pl_layout_collapse(&lb, nullptr);
  const char* xb = ct_cu_tensor_bytes(x);
  const char* tb = ct_cu_tensor_bytes(target);
  const char* wb = weight ? ct_cu_tensor_bytes(weight) : nullptr;
  char* sb = ct_cu_tensor_bytes(sample);

  /* the check and the denominator: found (2 long long) then den (1 double) */
  char* scratch = nullptr;
  status = ct_cu_check(cudaMallocAsync(reinterpret_cast<void**>(&scratch), 3 * 8, exec.stream),
                       "cudaMallocAsync");
  if (status != CT_OK) return status;
  long long* found = reinterpret_cast<long long*>(scratch);
  double* den = reinterpret_cast<double*>(scratch + 16);
  long long result[2] = {0, 0};
  status = ct_cu_check(cudaMemsetAsync(found, 0, sizeof result, exec.stream), "cudaMemsetAsync");
  if (status == CT_OK) {
    ct_cu_class_check_kernel<Tag, Y><<<1, 1, 0, exec.stream>>>(la, lb, p, tb, wb, found, den);
    status = ct_cu_launch_status(call->schema->name);
  }
  if (status == CT_OK) {
    status = ct_cu_check(
        cudaMemcpyAsync(result, found, sizeof result, cudaMemcpyDeviceToHost, exec.stream),
        "cudaMemcpyAsync");
  }
  if (status == CT_OK) status = ct_cu_check(cudaStreamSynchronize(exec.stream), "loss check");
  if (status == CT_OK && result[0]) {
    status = ct_cu_error(CT_ERROR_INVALID_ARGUMENT,
                         "%s: target class index %lld is out of range [0, %lld)%s",
                         call->schema->name, result[0] ? result[1] : 0LL, (long long)p.n,
                         p.has_ignore ? " and is not ignore_index" : "");
  }
  const unsigned grid = ct_cu_grid(exec, p.rows, ct_cu_loss_threads);
  if (status == CT_OK && !backward) {
    /* the samples' losses and their partial sums: from the workspace (ct_cu_class_scratch) */
    const ct_cu_loss_scratch plan = ct_cu_class_scratch(call);
    char* memory = nullptr;
    if (p.mode != 0) status = ct_cu_loss_scratch_of(call, plan, &memory);
    double* values = reinterpret_cast<double*>(memory);
    if (status == CT_OK && p.rows > 0) {
      ct_cu_class_rows_kernel<Tag, Y, Nll>
          <<<grid, ct_cu_loss_threads, 0, exec.stream>>>(la, lb, p, xb, tb, wb, sb, values);
      status = ct_cu_launch_status(call->schema->name);
    }
    if (status == CT_OK && p.mode != 0) {
      status = ct_cu_loss_total<Tag>(exec, values, p.rows, plan,
                                     reinterpret_cast<double*>(memory + plan.partial), sb,
                                     p.mode == 1 ? den : nullptr, 1.0);
    }
  } else if (status == CT_OK) {
    ct_cu_class_backward_kernel<Tag, Y, Nll><<<grid, ct_cu_loss_threads, 0, exec.stream>>>(
        la, lb, p, xb, tb, wb, sb, den, ct_cu_tensor_bytes(gx),
        gt ? ct_cu_tensor_bytes(gt) : nullptr);
    status = ct_cu_launch_status(call->schema->name);
  }
  cudaFreeAsync(scratch, exec.stream);
  return status;
}

/* ----- element-wise losses ----- */

enum { ct_cu_bce = 0, ct_cu_mse = 1, ct_cu_smooth_l1 = 2 };

struct ct_cu_point_args {
  int64_t count;
  double beta, scale;
  bool has_w, has_pw;
};

template <class C>
__device__ __forceinline__ C ct_cu_log_sigmoid(C v) {
  return (v < 0 ? v : (C)0) - log1p(exp(-fabs(v)));
}

/* Layout a: (sample, x, target, weight); b: (pos_weight, grad_x, grad_target). */
template <ct_pl_type Tag, int Kind>
__global__ void __launch_bounds__(ct_cu_loss_threads)
    ct_cu_point_kernel(const ct_pl_layout a, const ct_pl_layout b, const ct_cu_point_args p,
                       char* s, const char* x, const char* t, const char* w, const char* pw,
                       double* values) {
  using C = ct_cu_compute_t<Tag>;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < p.count;
       i += (int64_t)gridDim.x * blockDim.x) {
    int64_t off[8];
    ct_cu_loss_offsets(a, b, i, off);
    const C xv = ct_cu_load<Tag>(x + off[1]), tv = ct_cu_load<Tag>(t + off[2]);
    C loss;
    if (Kind == ct_cu_mse) {
      const C d = xv - tv;
      loss = d * d;
    } else if (Kind == ct_cu_smooth_l1) {
      const C d = fabs(xv - tv), beta = (C)p.beta;
      loss = d < beta ? (C)0.5 * d * d / beta : d - (C)0.5 * beta;
    } else {
      const C wv = p.has_w ? ct_cu_load<Tag>(w + off[3]) : (C)1;
      const C lw = p.has_pw ? (C)1 + (ct_cu_load<Tag>(pw + off[4]) - (C)1) * tv : (C)1;
      loss = wv * (((C)1 - tv) * xv - lw * ct_cu_log_sigmoid(xv));
    }
    if (values) {
      values[i] = (double)loss;
    } else {
      ct_cu_store<Tag>(s + off[0], loss);
    }
  }
}

template <ct_pl_type Tag, int Kind>
__global__ void __launch_bounds__(ct_cu_loss_threads)
    ct_cu_point_backward_kernel(const ct_pl_layout a, const ct_pl_layout b,
                                const ct_cu_point_args p, const char* s, const char* x,
                                const char* t, const char* w, const char* pw, char* gx, char* gt) {
  using C = ct_cu_compute_t<Tag>;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < p.count;
       i += (int64_t)gridDim.x * blockDim.x) {
    int64_t off[8];
    ct_cu_loss_offsets(a, b, i, off);
    const C xv = ct_cu_load<Tag>(x + off[1]), tv = ct_cu_load<Tag>(t + off[2]);
    const C g = (C)((double)ct_cu_load<Tag>(s + off[0]) * p.scale);
    if (Kind == ct_cu_mse) {
      ct_cu_store<Tag>(gx + off[5], (C)2 * (xv - tv) * g);
    } else if (Kind == ct_cu_smooth_l1) {
      const C d = xv - tv, beta = (C)p.beta;
      const C slope = fabs(d) < beta ? d / beta : d > 0 ? (C)1 : d < 0 ? (C)-1 : (C)0;
      ct_cu_store<Tag>(gx + off[5], slope * g);
    } else {
      const C wv = p.has_w ? ct_cu_load<Tag>(w + off[3]) : (C)1;
      const C pv = p.has_pw ? ct_cu_load<Tag>(pw + off[4]) : (C)1;
      const C lw = (C)1 + (pv - (C)1) * tv;
      const C sig = (C)1 / ((C)1 + exp(-xv));
      ct_cu_store<Tag>(gx + off[5], g * wv * (lw * sig - pv * tv));
      ct_cu_store<Tag>(gt + off[6], g * wv * (-xv - (pv - (C)1) * ct_cu_log_sigmoid(xv)));
    }
  }
}

/* The broadcast shape of an element-wise loss's x and target (`*ndim` dims); returns its
 * element count. */
int64_t ct_cu_point_shape(const ct_tensor* x, const ct_tensor* target, int64_t* shape,
                          int32_t* ndim) {
  const ct_tensor* pair[2] = {x, target};
  *ndim = x->ndim > target->ndim ? x->ndim : target->ndim;
  for (int32_t d = 0; d < *ndim; ++d) shape[d] = 1;
  for (int k = 0; k < 2; ++k) {
    for (int32_t d = 0; d < pair[k]->ndim; ++d) {
      if (pair[k]->shape[d] != 1) shape[*ndim - pair[k]->ndim + d] = pair[k]->shape[d];
    }
  }
  int64_t count = 1;
  for (int32_t d = 0; d < *ndim; ++d) count *= shape[d];
  return count;
}

/* The scratch of an element-wise loss call: its elements' losses and their partial sums, for a
 * reduced forward (bytes 0 otherwise). */
ct_cu_loss_scratch ct_cu_point_scratch(const ct_kernel_call* call) {
  ct_cu_loss_scratch s = {0, 0, 0};
  if (ct_cu_loss_backward(call) || ct_cu_loss_mode(&call->attrs[0]) == 0) return s;
  int64_t shape[CT_MAX_NDIM];
  int32_t ndim;
  return ct_cu_loss_plan(ct_cu_point_shape(call->inputs[0], call->inputs[1], shape, &ndim));
}

int ct_cu_point_loss_workspace(const ct_kernel_call* call, uint64_t* bytes, uint64_t* alignment) {
  *bytes = ct_cu_point_scratch(call).bytes;
  *alignment = ct_cu_loss_alignment;
  return CT_OK;
}

template <ct_pl_type Tag, int Kind>
int ct_cu_point_loss_run(const ct_kernel_call* call) {
  const bool backward = ct_cu_loss_backward(call);
  const int32_t first = backward ? 1 : 0;
  const int mode = ct_cu_loss_mode(&call->attrs[0]);
  ct_cu_point_args p;
  p.beta = Kind == ct_cu_smooth_l1 ? call->attrs[1].value.f : 0.0;
  const ct_tensor* x = call->inputs[first];
  const ct_tensor* target = call->inputs[first + 1];
  const ct_tensor* weight = Kind == ct_cu_bce ? call->inputs[first + 2] : nullptr;
  const ct_tensor* pos_weight = Kind == ct_cu_bce ? call->inputs[first + 3] : nullptr;
  const ct_tensor* sample = backward ? call->inputs[0] : call->outputs[0];
  const ct_tensor* gx = backward ? call->outputs[0] : nullptr;
  const ct_tensor* gt = backward && call->num_outputs > 1 ? call->outputs[1] : nullptr;
  int64_t shape[CT_MAX_NDIM];
  int32_t ndim;
  p.count = ct_cu_point_shape(x, target, shape, &ndim);
  if (backward && p.count == 0) return CT_OK;
  p.has_w = weight != nullptr;
  p.has_pw = pos_weight != nullptr;
  p.scale = mode == 1 ? 1.0 / (double)p.count : 1.0;
  ct_cu_exec exec;
  int status = ct_cu_exec_for_call(call, &exec);
  if (status != CT_OK) return status;
  const ct_tensor* a_ops[4] = {sample, x, target, weight};
  const ct_tensor* b_ops[3] = {pos_weight, gx, gt};
  static const int64_t zeros[CT_MAX_NDIM] = {0};
  ct_pl_layout la, lb;
  ct_pl_layout_begin(&la, ndim, shape);
  ct_pl_layout_begin(&lb, ndim, shape);
  for (int k = 0; k < 4; ++k) {
    if (a_ops[k] && a_ops[k]->ndim > 0) {
      ct_pl_layout_add(&la, a_ops[k]);
    } else {
      ct_pl_layout_add_strides(&la, zeros);
    }
  }
  for (int k = 0; k < 3; ++k) {
    if (b_ops[k] && b_ops[k]->ndim > 0) {
      ct_pl_layout_add(&lb, b_ops[k]);
    } else {
      ct_pl_layout_add_strides(&lb, zeros);
    }
  }
  ct_pl_layout_collapse(&la, nullptr);
  ct_pl_layout_collapse(&lb, nullptr);
  const char* xb = ct_cu_tensor_bytes(x);
  const char* tb = ct_cu_tensor_bytes(target);
  const char* wb = weight ? ct_cu_tensor_bytes(weight) : nullptr;
  const char* pwb = pos_weight ? ct_cu_tensor_bytes(pos_weight) : nullptr;
  char* sb = ct_cu_tensor_bytes(sample);
  const unsigned grid = ct_cu_grid(exec, p.count, ct_cu_loss_threads);
  if (backward) {
    ct_cu_point_backward_kernel<Tag, Kind><<<grid, ct_cu_loss_threads, 0, exec.stream>>>(
        la, lb, p, sb, xb, tb, wb, pwb, ct_cu_tensor_bytes(gx),
        gt ? ct_cu_tensor_bytes(gt) : nullptr);
    return ct_cu_launch_status(call->schema->name);
  }
  /* the elements' losses and their partial sums: from the workspace (ct_cu_point_scratch) */
  const ct_cu_loss_scratch plan = ct_cu_point_scratch(call);
  char* memory = nullptr;
  if (mode != 0) {
    status = ct_cu_loss_scratch_of(call, plan, &memory);
    if (status != CT_OK) return status;
  }
  double* values = reinterpret_cast<double*>(memory);
  if (p.count > 0) {
    ct_cu_point_kernel<Tag, Kind>
        <<<grid, ct_cu_loss_threads, 0, exec.stream>>>(la, lb, p, sb, xb, tb, wb, pwb, values);
    status = ct_cu_launch_status(call->schema->name);
  }
  if (status == CT_OK && mode != 0) {
    status = ct_cu_loss_total<Tag>(exec, values, p.count, plan,
                                   reinterpret_cast<double*>(memory + plan.partial), sb, nullptr,
                                   p.scale);
  }
  return status;
}

template <ct_pl_type Tag>
int ct_cu_register_loss_type() {
  int status = CT_OK;
  const ct_pl_type f = Tag;
  {
    const ct_pl_type fw[4] = {f, CT_PL_I64, f, f}, bw[6] = {f, f, CT_PL_I64, f, f, f};
    status = ct_cu_register("cross_entropy", fw, 4, ct_cu_class_loss_run<Tag, CT_PL_I64, false>,
                            ct_cu_class_loss_workspace, nullptr);
    if (status == CT_OK) {
      status = ct_cu_register("cross_entropy_backward", bw, 6,
                              ct_cu_class_loss_run<Tag, CT_PL_I64, false>,
                              ct_cu_class_loss_workspace, nullptr);
    }
    if (status == CT_OK) {
      status = ct_cu_register("nll_loss", fw, 4, ct_cu_class_loss_run<Tag, CT_PL_I64, true>,
                              ct_cu_class_loss_workspace, nullptr);
    }
    if (status == CT_OK) {
      status =
          ct_cu_register("nll_loss_backward", bw, 5, ct_cu_class_loss_run<Tag, CT_PL_I64, true>,
                         ct_cu_class_loss_workspace, nullptr);
    }
  }
  if (status == CT_OK) {
    const ct_pl_type fw[4] = {f, CT_PL_I32, f, f}, bw[6] = {f, f, CT_PL_I32, f, f, f};
    status = ct_cu_register("cross_entropy", fw, 4, ct_cu_class_loss_run<Tag, CT_PL_I32, false>,
                            ct_cu_class_loss_workspace, nullptr);
    if (status == CT_OK) {
      status = ct_cu_register("cross_entropy_backward", bw, 6,
                              ct_cu_class_loss_run<Tag, CT_PL_I32, false>,
                              ct_cu_class_loss_workspace, nullptr);
    }
    if (status == CT_OK) {
      status = ct_cu_register("nll_loss", fw, 4, ct_cu_class_loss_run<Tag, CT_PL_I32, true>,
                              ct_cu_class_loss_workspace, nullptr);
    }
    if (status == CT_OK) {
      status =
          ct_cu_register("nll_loss_backward", bw, 5, ct_cu_class_loss_run<Tag, CT_PL_I32, true>,
                         ct_cu_class_loss_workspace, nullptr);
    }
  }
  const ct_pl_type same[7] = {f, f, f, f, f, f, f};
  if (status == CT_OK) {
    status = ct_cu_register("cross_entropy", same, 4, ct_cu_class_loss_run<Tag, Tag, false>,
                            ct_cu_class_loss_workspace, nullptr);
  }
  if (status == CT_OK) {
    status =
        ct_cu_register("cross_entropy_backward", same, 6, ct_cu_class_loss_run<Tag, Tag, false>,
                       ct_cu_class_loss_workspace, nullptr);
  }
  if (status == CT_OK) {
    status =
        ct_cu_register("binary_cross_entropy_with_logits", same, 5,
                       ct_cu_point_loss_run<Tag, ct_cu_bce>, ct_cu_point_loss_workspace, nullptr);
  }
  if (status == CT_OK) {
    status =
        ct_cu_register("binary_cross_entropy_with_logits_backward", same, 7,
                       ct_cu_point_loss_run<Tag, ct_cu_bce>, ct_cu_point_loss_workspace, nullptr);
  }
  if (status == CT_OK) {
    status = ct_cu_register("mse_loss", same, 3, ct_cu_point_loss_run<Tag, ct_cu_mse>,
                            ct_cu_point_loss_workspace, nullptr);
  }
  if (status == CT_OK) {
    status = ct_cu_register("mse_loss_backward", same, 4, ct_cu_point_loss_run<Tag, ct_cu_mse>,
                            ct_cu_point_loss_workspace, nullptr);
  }
  if (status == CT_OK) {
    status = ct_cu_register("smooth_l1_loss", same, 3, ct_cu_point_loss_run<Tag, ct_cu_smooth_l1>,
                            ct_cu_point_loss_workspace, nullptr);
  }
  if (status == CT_OK) {
    status = ct_cu_register("smooth_l1_loss_backward", same, 4,
                            ct_cu_point_loss_run<Tag, ct_cu_smooth_l1>, ct_cu_point_loss_workspace,
                            nullptr);
  }
  return status;
}

}  // namespace

int ct_cu_register_loss(void) {
  return ct_cu_for_each_tag(ct_cu_float_tags{}, [](auto tag) {
    return ct_cu_register_loss_type<decltype(tag)::value>();
  });
}
