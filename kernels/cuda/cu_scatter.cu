/* cu_scatter.cu - put_along_axis, gather_nd, scatter_nd, index_select, index_add and their
 * backward ops, on the geometry of capi/ops/index_plan.h (the plan is a kernel argument, passed
 * by value). The algorithms are the OpenCL plugin's (cl_scatter.c):
 * - every call first scans the indices (a bad one sets a flag the host reads; the error names the
 *   op, the index and the bound, and nothing is written);
 * - gathers: one thread per output element;
 * - scatters (and the backward ops that add into zeros): one thread per element of x walks the
 *   positions that land on it in row-major order (a loop over the plan's reduced dims) and
 *   applies them in that order, in the compute type: no atomics, the CPU's order, so the last
 *   value wins for "none" and sums and products are deterministic. The work is x's elements
 *   times the reduced extent;
 * - the backward ops of the reductions walk the same positions for torch's group statistics. */
#include <climits>

#include "cu_call.h"
#include "cu_types.cuh"
#include "ops/index_plan.h"

namespace {

constexpr int ct_cu_threads = 256;

using plan_t = ct_index_plan;

__device__ __forceinline__ void ix_unravel(const int64_t* shape, int64_t n, int64_t i, int64_t* c) {
  for (int64_t k = n - 1; k >= 0; --k) {
    c[k] = i % shape[k];
    i /= shape[k];
  }
}

__device__ __forceinline__ int64_t ix_xoff(const plan_t& p, const int64_t* xc, int o) {
  int64_t s = 0;
  for (int64_t k = 0; k < p.xnd; ++k) s += xc[k] * p.x_strides[o][k];
  return s;
}

__device__ __forceinline__ int64_t ix_woff(const plan_t& p, const int64_t* wc, int o) {
  int64_t s = 0;
  for (int64_t u = 0; u < p.wnd; ++u) s += wc[u] * p.w_strides[o][u];
  return s;
}

/* The element of x that position wc lands on. */
template <ct_pl_type Index>
__device__ void ix_target(const plan_t& p, const char* idx, const int64_t* wc, int64_t* xc) {
  for (int64_t k = 0; k < p.xnd; ++k) xc[k] = 0;
  for (int64_t u = 0; u < p.wnd; ++u) {
    if (p.w_xdim[u] >= 0) xc[p.w_xdim[u]] = wc[u];
  }
  const char* at = idx + ix_woff(p, wc, 0);
  for (int64_t m = 0; m < p.components; ++m) {
    int64_t j = ct_cu_load<Index>(at + m * p.component_stride);
    if (j < 0) j += p.extent[m];
    xc[p.comp_xdim[m]] = j;
  }
}

/* The walk over the positions landing on xc: direct dims of wc set, the reduced count. */
__device__ int64_t ix_walk_begin(const plan_t& p, const int64_t* xc, int64_t* wc) {
  int64_t total = 1;
  for (int64_t u = 0; u < p.wnd; ++u) {
    if (p.w_xdim[u] >= 0) {
      wc[u] = xc[p.w_xdim[u]];
    } else {
      wc[u] = 0;
      total *= p.w_shape[u];
    }
  }
  return total;
}

/* The first reduced position >= t landing on xc (its coordinates in wc), or -1. */
template <ct_pl_type Index>
__device__ int64_t ix_walk_next(const plan_t& p, const char* idx, const int64_t* xc, int64_t* wc,
                                int64_t total, int64_t t) {
  for (; t < total; ++t) {
    int64_t r = t;
    for (int64_t u = p.wnd - 1; u >= 0; --u) {
      if (p.w_xdim[u] < 0) {
        wc[u] = r % p.w_shape[u];
        r /= p.w_shape[u];
      }
    }
    const char* at = idx + ix_woff(p, wc, 0);
    bool lands = true;
    for (int64_t m = 0; m < p.components && lands; ++m) {
      int64_t j = ct_cu_load<Index>(at + m * p.component_stride);
      if (j < 0) j += p.extent[m];
      lands = j == xc[p.comp_xdim[m]];
    }
    if (lands) return t;
  }
  return -1;
}

/* Reductions as the CPU's: a nan value wins max and min; ties keep the element; integers wrap. */
template <ct_pl_type Tag, int Red>
__device__ __forceinline__ ct_cu_compute_t<Tag> ix_combine(ct_cu_compute_t<Tag> r,
                                                           ct_cu_compute_t<Tag> v,
                                                           ct_cu_compute_t<Tag> alpha) {
  using T = ct_cu_compute_t<Tag>;
  using U = typename ct_cu_traits<Tag>::unsigned_type;
  if constexpr (Red == CT_IP_NONE) {
    return v;
  } else if constexpr (Red == CT_IP_ADD) {
    if constexpr (ct_cu_is_float_v<Tag>) {
      return r + alpha * v;
    } else {
      return static_cast<T>(static_cast<U>(r) + static_cast<U>(alpha) * static_cast<U>(v));
    }
  } else if constexpr (Red == CT_IP_MULTIPLY) {
    if constexpr (ct_cu_is_float_v<Tag>) {
      return r * v;
    } else {
      return static_cast<T>(static_cast<U>(r) * static_cast<U>(v));
    }
  } else if constexpr (Red == CT_IP_MAX) {
    return v != v ? v : r < v ? v : r;
  } else {
    return v != v ? v : v < r ? v : r;
  }
}

/* ----- kernels ----- */

/* Index check: the component of index i is i % comps. */
template <ct_pl_type Index>
__global__ void __launch_bounds__(ct_cu_threads)
    ix_scan_kernel(const ct_pl_layout layout, const char* idx, int64_t comps, const plan_t p,
                   long long* found) {
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < layout.elements; i += step) {
    int64_t off[1];
    int64_t rest = i, o = 0;
    for (int d = layout.ndim - 1; d >= 0; --d) {
      o += (rest % layout.shape[d]) * layout.strides[0][d];
      rest /= layout.shape[d];
    }
    off[0] = o;
    const int64_t j = ct_cu_load<Index>(idx + off[0]), m = i % comps, e = p.extent[m];
    if (j < -e || j >= e) {
      found[0] = 1;
      found[1] = j;
      found[2] = m;
    }
  }
}

/* Gathers: W operand 1 (out) = X operand 0 (x) at each position, times alpha when Scale. */
template <ct_pl_type Tag, ct_pl_type Index, bool Scale>
__global__ void __launch_bounds__(ct_cu_threads)
    ix_gather_kernel(const plan_t p, const char* idx, const char* x, char* out, int64_t n,
                     ct_cu_compute_t<Tag> alpha) {
  using S = typename ct_cu_traits<Tag>::storage;
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
    int64_t wc[CT_MAX_NDIM], xc[CT_MAX_NDIM];
    ix_unravel(p.w_shape, p.wnd, i, wc);
    ix_target<Index>(p, idx, wc, xc);
    const char* src = x + ix_xoff(p, xc, 0);
    char* dst = out + ix_woff(p, wc, 1);
    if constexpr (Scale) {
      ct_cu_store<Tag>(dst, alpha * ct_cu_load<Tag>(src));
    } else {
      *reinterpret_cast<S*>(dst) = *reinterpret_cast<const S*>(src);
    }
  }
}

/* Scatters: X operand 0 (out) = X operand 1 (x; zeros when null) with the values (W operand 1)
 * applied. */
template <ct_pl_type Tag, ct_pl_type Index, int Red>
__global__ void __launch_bounds__(ct_cu_threads)
    ix_scatter_kernel(const plan_t p, const char* idx, const char* v, const char* x, char* out,
                      int64_t n, ct_cu_compute_t<Tag> alpha) {
  using T = ct_cu_compute_t<Tag>;
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
    int64_t wc[CT_MAX_NDIM], xc[CT_MAX_NDIM];
    ix_unravel(p.x_shape, p.xnd, i, xc);
    T r = x ? ct_cu_load<Tag>(x + ix_xoff(p, xc, 1)) : T(0);
    const int64_t total = ix_walk_begin(p, xc, wc);
    for (int64_t t = ix_walk_next<Index>(p, idx, xc, wc, total, 0); t >= 0;
         t = ix_walk_next<Index>(p, idx, xc, wc, total, t + 1)) {
      r = ix_combine<Tag, Red>(r, ct_cu_load<Tag>(v + ix_woff(p, wc, 1)), alpha);
    }
    ct_cu_store<Tag>(out + ix_xoff(p, xc, 0), r);
  }
}

/* Group statistics of the positions landing on xc. */
template <class T>
struct ix_group {
  int64_t count = 0, matches = 0, zeros = 0;
  T product = T(1);
  bool later = false;
};

template <ct_pl_type Tag, ct_pl_type Index>
__device__ ix_group<ct_cu_compute_t<Tag>> ix_group_of(const plan_t& p, const char* idx,
                                                      const char* v, const int64_t* xc,
                                                      ct_cu_compute_t<Tag> match, int64_t skip,
                                                      int64_t after) {
  using T = ct_cu_compute_t<Tag>;
  ix_group<T> g;
  int64_t wc[CT_MAX_NDIM];
  const int64_t total = ix_walk_begin(p, xc, wc);
  for (int64_t t = ix_walk_next<Index>(p, idx, xc, wc, total, 0); t >= 0;
       t = ix_walk_next<Index>(p, idx, xc, wc, total, t + 1)) {
    const T s = ct_cu_load<Tag>(v + ix_woff(p, wc, 1));
    ++g.count;
    g.matches += s == match;
    g.zeros += s == T(0);
    if (t != skip) g.product *= s;
    if (t > after) g.later = true;
  }
  return g;
}

__device__ int64_t ix_reduced_index(const plan_t& p, const int64_t* wc) {
  int64_t t = 0;
  for (int64_t u = 0; u < p.wnd; ++u) {
    if (p.w_xdim[u] < 0) t = t * p.w_shape[u] + wc[u];
  }
  return t;
}

/* grad_x: X operands 0 grad_x, 1 grad_out, 2 x, 3 out; W operand 1 the values. */
template <ct_pl_type Tag, ct_pl_type Index, int Red>
__global__ void __launch_bounds__(ct_cu_threads)
    ix_grad_x_kernel(const plan_t p, const char* idx, const char* v, char* gx, const char* g,
                     const char* x, const char* out, int64_t n) {
  using T = ct_cu_compute_t<Tag>;
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
    int64_t xc[CT_MAX_NDIM];
    ix_unravel(p.x_shape, p.xnd, i, xc);
    const T gv = ct_cu_load<Tag>(g + ix_xoff(p, xc, 1));
    T r = gv;
    if constexpr (Red != CT_IP_ADD) {
      const T xv = ct_cu_load<Tag>(x + ix_xoff(p, xc, 2));
      const T ov = ct_cu_load<Tag>(out + ix_xoff(p, xc, 3));
      const auto group = ix_group_of<Tag, Index>(p, idx, v, xc, ov, -1, LLONG_MAX);
      if constexpr (Red == CT_IP_NONE) {
        r = group.count ? T(0) : gv;
      } else if constexpr (Red == CT_IP_MULTIPLY) {
        r = xv != T(0) ? gv * ov / xv : gv * group.product;
      } else {
        r = xv == ov ? gv / T(1 + group.matches) : T(0);
      }
    }
    ct_cu_store<Tag>(gx + ix_xoff(p, xc, 0), r);
  }
}

/* grad_values: W operand 2. */
template <ct_pl_type Tag, ct_pl_type Index, int Red>
__global__ void __launch_bounds__(ct_cu_threads)
    ix_grad_values_kernel(const plan_t p, const char* idx, const char* v, char* gvalues,
                          const char* g, const char* x, const char* out, int64_t n) {
  using T = ct_cu_compute_t<Tag>;
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
    int64_t wc[CT_MAX_NDIM], xc[CT_MAX_NDIM];
    ix_unravel(p.w_shape, p.wnd, i, wc);
    ix_target<Index>(p, idx, wc, xc);
    const T gd = ct_cu_load<Tag>(g + ix_xoff(p, xc, 1));
    T r = gd;
    if constexpr (Red != CT_IP_ADD) {
      const T s = ct_cu_load<Tag>(v + ix_woff(p, wc, 1));
      const T xv = ct_cu_load<Tag>(x + ix_xoff(p, xc, 2));
      const T ov = ct_cu_load<Tag>(out + ix_xoff(p, xc, 3));
      const int64_t t = ix_reduced_index(p, wc);
      const auto group = ix_group_of<Tag, Index>(p, idx, v, xc, ov, t, t);
      if constexpr (Red == CT_IP_NONE) {
        r = group.later ? T(0) : gd;
      } else if constexpr (Red == CT_IP_MULTIPLY) {
        r = s != T(0) ? gd * ov / s : group.zeros == 1 ? gd * xv * group.product : T(0);
      } else {
        r = s == ov ? gd / T((xv == ov) + group.matches) : T(0);
      }
    }
    ct_cu_store<Tag>(gvalues + ix_woff(p, wc, 2), r);
  }
}

/* ----- host side ----- */

/* Scans the indices before anything is written. */
int ix_check(const ct_cu_exec& exec, const char* op, const plan_t& p, ct_index_kind kind,
             const ct_tensor* indices) {
  ct_pl_layout layout;
  ct_pl_layout_begin(&layout, indices->ndim, indices->shape);
  ct_pl_layout_add(&layout, indices);
  ct_pl_layout_collapse(&layout, nullptr);
  if (layout.elements == 0) return CT_OK;
  long long* found = nullptr;
  int status = ct_cu_check(
      cudaMallocAsync(reinterpret_cast<void**>(&found), 3 * sizeof(long long), exec.stream),
      "cudaMallocAsync");
  if (status != CT_OK) return status;
  long long result[3] = {0, 0, 0};
  status = ct_cu_check(cudaMemsetAsync(found, 0, sizeof result, exec.stream), "cudaMemsetAsync");
  if (status == CT_OK) {
    const unsigned grid = ct_cu_grid(exec, layout.elements, ct_cu_threads);
    const int64_t comps = ct_index_check_components(&p, kind);
    if (indices->dtype.bits == 64) {
      ix_scan_kernel<CT_PL_I64><<<grid, ct_cu_threads, 0, exec.stream>>>(
          layout, ct_cu_tensor_bytes(indices), comps, p, found);
    } else {
      ix_scan_kernel<CT_PL_I32><<<grid, ct_cu_threads, 0, exec.stream>>>(
          layout, ct_cu_tensor_bytes(indices), comps, p, found);
    }
    status = ct_cu_launch_status(op);
  }
  if (status == CT_OK) {
    status = ct_cu_check(
        cudaMemcpyAsync(result, found, sizeof result, cudaMemcpyDeviceToHost, exec.stream),
        "cudaMemcpyAsync");
  }
  cudaFreeAsync(found, exec.stream);
  if (status == CT_OK) status = ct_cu_check(cudaStreamSynchronize(exec.stream), op);
  if (status == CT_OK && result[0]) {
    const int64_t e = p.extent[result[2]];
    status = ct_cu_error(CT_ERROR_INVALID_ARGUMENT,
                         "%s: index %lld is out of range [%lld, %lld) for dimension %lld of x", op,
                         result[1], (long long)-e, (long long)e, (long long)p.comp_xdim[result[2]]);
  }
  return status;
}

/* Starts a call: exec and plan. */
int ix_begin(const ct_kernel_call* call, ct_cu_exec& exec, plan_t& p, ct_index_kind kind,
             int64_t param, const ct_tensor* x, const ct_tensor* indices) {
  const int status = ct_cu_exec_for_call(call, &exec);
  if (status != CT_OK) return status;
  ct_index_plan_begin(&p, kind, x, indices, param);
  return CT_OK;
}

template <ct_pl_type Tag, ct_pl_type Index>
int ix_gather(const ct_cu_exec& exec, const plan_t& p, const ct_tensor* indices, const ct_tensor* x,
              const ct_tensor* out, double alpha, const char* op) {
  const int64_t n = ct_pl_tensor_elements(out);
  if (n == 0) return CT_OK;
  using T = ct_cu_compute_t<Tag>;
  const unsigned grid = ct_cu_grid(exec, n, ct_cu_threads);
  if (alpha != 1.0) {
    if constexpr (ct_cu_is_float_v<Tag>) {
      ix_gather_kernel<Tag, Index, true><<<grid, ct_cu_threads, 0, exec.stream>>>(
          p, ct_cu_tensor_bytes(indices), ct_cu_tensor_bytes(x), ct_cu_tensor_bytes(out), n,
          static_cast<T>(alpha));
      return ct_cu_launch_status(op);
    }
  }
  ix_gather_kernel<Tag, Index, false><<<grid, ct_cu_threads, 0, exec.stream>>>(
      p, ct_cu_tensor_bytes(indices), ct_cu_tensor_bytes(x), ct_cu_tensor_bytes(out), n, T(1));
  return ct_cu_launch_status(op);
}

template <ct_pl_type Tag, ct_pl_type Index>
int ix_scatter(const ct_cu_exec& exec, const plan_t& p, const ct_tensor* indices,
               const ct_tensor* values, const ct_tensor* x, const ct_tensor* out, int reduction,
               double alpha, const char* op) {
  const int64_t n = ct_pl_tensor_elements(out);
  if (n == 0) return CT_OK;
  using T = ct_cu_compute_t<Tag>;
  const unsigned grid = ct_cu_grid(exec, n, ct_cu_threads);
  const char *idx = ct_cu_tensor_bytes(indices), *v = ct_cu_tensor_bytes(values);
  const char* xb = x ? ct_cu_tensor_bytes(x) : nullptr;
  char* ob = ct_cu_tensor_bytes(out);
  const T a = static_cast<T>(alpha);
  switch (reduction) {
    case CT_IP_NONE:
      ix_scatter_kernel<Tag, Index, CT_IP_NONE>
          <<<grid, ct_cu_threads, 0, exec.stream>>>(p, idx, v, xb, ob, n, a);
      break;
    case CT_IP_ADD:
      ix_scatter_kernel<Tag, Index, CT_IP_ADD>
          <<<grid, ct_cu_threads, 0, exec.stream>>>(p, idx, v, xb, ob, n, a);
      break;
    case CT_IP_MULTIPLY:
      ix_scatter_kernel<Tag, Index, CT_IP_MULTIPLY>
          <<<grid, ct_cu_threads, 0, exec.stream>>>(p, idx, v, xb, ob, n, a);
      break;
    case CT_IP_MAX:
      ix_scatter_kernel<Tag, Index, CT_IP_MAX>
          <<<grid, ct_cu_threads, 0, exec.stream>>>(p, idx, v, xb, ob, n, a);
      break;
    default:
      ix_scatter_kernel<Tag, Index, CT_IP_MIN>
          <<<grid, ct_cu_threads, 0, exec.stream>>>(p, idx, v, xb, ob, n, a);
      break;
  }
  return ct_cu_launch_status(op);
}

template <ct_pl_type Tag, ct_pl_type Index, int Red>
int ix_grads_of(const ct_cu_exec& exec, const plan_t& p, const ct_tensor* indices,
                const ct_tensor* values, const ct_tensor* const xs[4], const ct_tensor* grad_values,
                const char* op) {
  const char *idx = ct_cu_tensor_bytes(indices), *v = ct_cu_tensor_bytes(values);
  const int64_t nx = ct_pl_tensor_elements(xs[0]);
  if (nx > 0) {
    ix_grad_x_kernel<Tag, Index, Red>
        <<<ct_cu_grid(exec, nx, ct_cu_threads), ct_cu_threads, 0, exec.stream>>>(
            p, idx, v, ct_cu_tensor_bytes(xs[0]), ct_cu_tensor_bytes(xs[1]),
            ct_cu_tensor_bytes(xs[2]), ct_cu_tensor_bytes(xs[3]), nx);
    const int status = ct_cu_launch_status(op);
    if (status != CT_OK) return status;
  }
  const int64_t nw = grad_values ? ct_pl_tensor_elements(grad_values) : 0;
  if (nw > 0) {
    ix_grad_values_kernel<Tag, Index, Red>
        <<<ct_cu_grid(exec, nw, ct_cu_threads), ct_cu_threads, 0, exec.stream>>>(
            p, idx, v, ct_cu_tensor_bytes(grad_values), ct_cu_tensor_bytes(xs[1]),
            ct_cu_tensor_bytes(xs[2]), ct_cu_tensor_bytes(xs[3]), nw);
    return ct_cu_launch_status(op);
  }
  return CT_OK;
}

template <ct_pl_type Tag, ct_pl_type Index>
int ix_grads(const ct_cu_exec& exec, const plan_t& p, const ct_tensor* indices,
             const ct_tensor* values, const ct_tensor* const xs[4], const ct_tensor* grad_values,
             int reduction, const char* op) {
  switch (reduction) {
    case CT_IP_NONE:
      return ix_grads_of<Tag, Index, CT_IP_NONE>(exec, p, indices, values, xs, grad_values, op);
    case CT_IP_ADD:
      return ix_grads_of<Tag, Index, CT_IP_ADD>(exec, p, indices, values, xs, grad_values, op);
    case CT_IP_MULTIPLY:
      return ix_grads_of<Tag, Index, CT_IP_MULTIPLY>(exec, p, indices, values, xs, grad_values, op);
    case CT_IP_MAX:
      return ix_grads_of<Tag, Index, CT_IP_MAX>(exec, p, indices, values, xs, grad_values, op);
    default:
      return ix_grads_of<Tag, Index, CT_IP_MIN>(exec, p, indices, values, xs, grad_values, op);
  }
}

/* ----- run functions ----- */

template <ct_pl_type Tag, ct_pl_type Index>
int ix_scatter_run(const ct_kernel_call* call, ct_index_kind kind, int64_t param, int reduction,
                   double alpha) {
  const ct_tensor *x = call->inputs[0], *indices = call->inputs[1], *values = call->inputs[2];
  const ct_tensor* out = call->outputs[0];
  const char* op = call->schema->name;
  ct_cu_exec exec;
  plan_t p;
  int status = ix_begin(call, exec, p, kind, param, x, indices);
  if (status != CT_OK) return status;
  ct_index_plan_x(&p, 0, out);
  ct_index_plan_x(&p, 1, x);
  ct_index_plan_w(&p, 1, values);
  status = ix_check(exec, op, p, kind, indices);
  if (status != CT_OK) return status;
  return ix_scatter<Tag, Index>(exec, p, indices, values, x, out, reduction, alpha, op);
}

template <ct_pl_type Tag, ct_pl_type Index>
int put_along_axis_run(const ct_kernel_call* call) {
  return ix_scatter_run<Tag, Index>(call, CT_IP_ALONG_AXIS, call->attrs[0].value.i,
                                    ct_index_reduction_of(call->attrs[1].value.s), 1.0);
}

template <ct_pl_type Tag, ct_pl_type Index>
int scatter_nd_run(const ct_kernel_call* call) {
  return ix_scatter_run<Tag, Index>(call, CT_IP_ND, 0,
                                    ct_index_reduction_of(call->attrs[0].value.s), 1.0);
}

template <ct_pl_type Tag, ct_pl_type Index>
int index_add_run(const ct_kernel_call* call) {
  return ix_scatter_run<Tag, Index>(call, CT_IP_SELECT, call->attrs[0].value.i, CT_IP_ADD,
                                    call->attrs[1].value.f);
}

template <ct_pl_type Tag, ct_pl_type Index>
int ix_gather_run(const ct_kernel_call* call, ct_index_kind kind, int64_t param) {
  const ct_tensor *x = call->inputs[0], *indices = call->inputs[1], *out = call->outputs[0];
  const char* op = call->schema->name;
  ct_cu_exec exec;
  plan_t p;
  int status = ix_begin(call, exec, p, kind, param, x, indices);
  if (status != CT_OK) return status;
  ct_index_plan_x(&p, 0, x);
  ct_index_plan_w(&p, 1, out);
  status = ix_check(exec, op, p, kind, indices);
  if (status != CT_OK) return status;
  return ix_gather<Tag, Index>(exec, p, indices, x, out, 1.0, op);
}

template <ct_pl_type Tag, ct_pl_type Index>
int gather_nd_run(const ct_kernel_call* call) {
  return ix_gather_run<Tag, Index>(call, CT_IP_ND, call->attrs[0].value.i);
}

template <ct_pl_type Tag, ct_pl_type Index>
int index_select_run(const ct_kernel_call* call) {
  return ix_gather_run<Tag, Index>(call, CT_IP_SELECT, call->attrs[0].value.i);
}

/* gather_nd_backward, index_select_backward: grad_out added into zeros. */
template <ct_pl_type Tag, ct_pl_type Index>
int ix_gather_backward_run(const ct_kernel_call* call, ct_index_kind kind, int64_t param) {
  const ct_tensor *grad = call->inputs[0], *x = call->inputs[1], *indices = call->inputs[2];
  const ct_tensor* grad_x = call->outputs[0];
  const char* op = call->schema->name;
  ct_cu_exec exec;
  plan_t p;
  int status = ix_begin(call, exec, p, kind, param, x, indices);
  if (status != CT_OK) return status;
  ct_index_plan_x(&p, 0, grad_x);
  ct_index_plan_w(&p, 1, grad);
  status = ix_check(exec, op, p, kind, indices);
  if (status != CT_OK) return status;
  return ix_scatter<Tag, Index>(exec, p, indices, grad, nullptr, grad_x, CT_IP_ADD, 1.0, op);
}

template <ct_pl_type Tag, ct_pl_type Index>
int gather_nd_backward_run(const ct_kernel_call* call) {
  return ix_gather_backward_run<Tag, Index>(call, CT_IP_ND, call->attrs[0].value.i);
}

template <ct_pl_type Tag, ct_pl_type Index>
int index_select_backward_run(const ct_kernel_call* call) {
  return ix_gather_backward_run<Tag, Index>(call, CT_IP_SELECT, call->attrs[0].value.i);
}

/* put_along_axis_backward, scatter_nd_backward: inputs grad_out, x, indices, values, out. */
template <ct_pl_type Tag, ct_pl_type Index>
int ix_scatter_backward_run(const ct_kernel_call* call, ct_index_kind kind, int64_t param,
                            int reduction) {
  const ct_tensor *grad = call->inputs[0], *x = call->inputs[1], *indices = call->inputs[2];
  const ct_tensor* values = call->inputs[3];
  const ct_tensor* const xs[4] = {call->outputs[0], grad, x, call->inputs[4]};
  const char* op = call->schema->name;
  ct_cu_exec exec;
  plan_t p;
  int status = ix_begin(call, exec, p, kind, param, x, indices);
  if (status != CT_OK) return status;
  for (int o = 0; o < 4; ++o) ct_index_plan_x(&p, o, xs[o]);
  ct_index_plan_w(&p, 1, values);
  ct_index_plan_w(&p, 2, call->outputs[1]);
  status = ix_check(exec, op, p, kind, indices);
  if (status != CT_OK) return status;
  return ix_grads<Tag, Index>(exec, p, indices, values, xs, call->outputs[1], reduction, op);
}

template <ct_pl_type Tag, ct_pl_type Index>
int put_along_axis_backward_run(const ct_kernel_call* call) {
  return ix_scatter_backward_run<Tag, Index>(call, CT_IP_ALONG_AXIS, call->attrs[0].value.i,
                                             ct_index_reduction_of(call->attrs[1].value.s));
}

template <ct_pl_type Tag, ct_pl_type Index>
int scatter_nd_backward_run(const ct_kernel_call* call) {
  return ix_scatter_backward_run<Tag, Index>(call, CT_IP_ND, 0,
                                             ct_index_reduction_of(call->attrs[0].value.s));
}

/* index_add_backward: grad_source = alpha * grad_out at the indices (X operand 0 = grad_out),
 * then grad_x = grad_out (the "add" grad_x kernel on a plan whose X operand 0 is grad_x). */
template <ct_pl_type Tag, ct_pl_type Index>
int index_add_backward_run(const ct_kernel_call* call) {
  const ct_tensor *grad = call->inputs[0], *x = call->inputs[1], *indices = call->inputs[2];
  const ct_tensor* grad_source = call->outputs[1];
  const ct_tensor* const xs[4] = {call->outputs[0], grad, grad, grad};
  const char* op = call->schema->name;
  ct_cu_exec exec;
  plan_t p;
  int status = ix_begin(call, exec, p, CT_IP_SELECT, call->attrs[0].value.i, x, indices);
  if (status != CT_OK) return status;
  ct_index_plan_x(&p, 0, grad);
  ct_index_plan_w(&p, 1, grad_source);
  status = ix_check(exec, op, p, CT_IP_SELECT, indices);
  if (status == CT_OK) {
    status = ix_gather<Tag, Index>(exec, p, indices, grad, grad_source, call->attrs[1].value.f, op);
  }
  if (status != CT_OK) return status;
  for (int o = 0; o < 4; ++o) ct_index_plan_x(&p, o, xs[o]);
  return ix_grads_of<Tag, Index, CT_IP_ADD>(exec, p, indices, grad_source, xs, nullptr, op);
}

template <ct_pl_type Tag, ct_pl_type Index>
int register_type() {
  const ct_pl_type scatter[4] = {Tag, Index, Tag, Tag}, gather[3] = {Tag, Index, Tag};
  int status = ct_cu_register("put_along_axis", scatter, 4, put_along_axis_run<Tag, Index>, nullptr,
                              nullptr);
  if (status == CT_OK) {
    status = ct_cu_register("scatter_nd", scatter, 4, scatter_nd_run<Tag, Index>, nullptr, nullptr);
  }
  if (status == CT_OK) {
    status = ct_cu_register("gather_nd", gather, 3, gather_nd_run<Tag, Index>, nullptr, nullptr);
  }
  if (status == CT_OK) {
    status =
        ct_cu_register("index_select", gather, 3, index_select_run<Tag, Index>, nullptr, nullptr);
  }
  if constexpr (Tag != CT_PL_B8) {
    if (status == CT_OK) {
      status = ct_cu_register("index_add", scatter, 4, index_add_run<Tag, Index>, nullptr, nullptr);
    }
  }
  if constexpr (ct_cu_is_float_v<Tag>) {
    const ct_pl_type backward[7] = {Tag, Tag, Index, Tag, Tag, Tag, Tag};
    const ct_pl_type gather_backward[4] = {Tag, Tag, Index, Tag};
    const ct_pl_type add_backward[6] = {Tag, Tag, Index, Tag, Tag, Tag};
    if (status == CT_OK) {
      status = ct_cu_register("put_along_axis_backward", backward, 7,
                              put_along_axis_backward_run<Tag, Index>, nullptr, nullptr);
    }
    if (status == CT_OK) {
      status = ct_cu_register("scatter_nd_backward", backward, 7,
                              scatter_nd_backward_run<Tag, Index>, nullptr, nullptr);
    }
    if (status == CT_OK) {
      status = ct_cu_register("gather_nd_backward", gather_backward, 4,
                              gather_nd_backward_run<Tag, Index>, nullptr, nullptr);
    }
    if (status == CT_OK) {
      status = ct_cu_register("index_select_backward", gather_backward, 4,
                              index_select_backward_run<Tag, Index>, nullptr, nullptr);
    }
    if (status == CT_OK) {
      status = ct_cu_register("index_add_backward", add_backward, 6,
                              index_add_backward_run<Tag, Index>, nullptr, nullptr);
    }
  }
  return status;
}

}  // namespace

int ct_cu_register_scatter(void) {
  return ct_cu_for_each_tag(ct_cu_all_tags{}, [](auto tag) {
    constexpr ct_pl_type Tag = decltype(tag)::value;
    const int status = register_type<Tag, CT_PL_I32>();
    return status == CT_OK ? register_type<Tag, CT_PL_I64>() : status;
  });
}
