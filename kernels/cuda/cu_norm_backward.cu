/* cu_norm_backward.cu - softmax_backward, log_softmax_backward and layer_norm_backward, the
 * backward ops of the forwards of cu_softmax.cu and cu_norm.cu, computed as the CPU and OpenCL
 * backends do: sums in double, element-wise steps in float for float16/float32 and double for
 * float64.
 *
 * softmax: a warp per lane (a block for lanes longer than 1024): the sum, then the outputs.
 * layer_norm: a warp (or block) per row recomputes the row's statistics, writes grad_input and
 * keeps the row's mean and rstd in the call's workspace; then one thread per element
 * of normalized_shape sums grad_weight and grad_bias over the rows, in row order. */
#include <math.h>

#include <type_traits>

#include "cu_call.h"
#include "cu_group_reduce.cuh"
#include "cu_layout.h"
#include "cu_types.cuh"

namespace {

constexpr int ct_cu_threads = 256;
constexpr int64_t ct_cu_warp_row = 1024; /* the longest row or lane a warp handles alone */

template <class C>
__device__ __forceinline__ C ct_cu_nb_exp(C v) {
  if constexpr (std::is_same_v<C, float>) {
    return expf(v);
  } else {
    return exp(v);
  }
}

struct ct_cu_nb_softmax_args {
  int64_t lanes, extent;
  int64_t gx_step, g_step, y_step; /* bytes between neighbours along the axis */
};

/* Operands of `layout`: (gx, g, y). */
template <ct_pl_type Tag, int Width, bool Log>
__global__ void __launch_bounds__(ct_cu_group_block(Width))
    ct_cu_softmax_backward_kernel(const ct_pl_layout layout, const ct_cu_nb_softmax_args p,
                                  char* gx, const char* g, const char* y) {
  using C = ct_cu_compute_t<Tag>;
  constexpr int groups = ct_cu_group_block(Width) / Width;
  const int t = threadIdx.x % Width;
  for (int64_t lane = (int64_t)blockIdx.x * groups + threadIdx.x / Width; lane < p.lanes;
       lane += (int64_t)gridDim.x * groups) {
    int64_t off[3];
    ct_cu_offsets<3>(layout, lane, off);
    char* o = gx + off[0];
    const char* gl = g + off[1];
    const char* yl = y + off[2];
    double total = 0;
    for (int64_t k = t; k < p.extent; k += Width) {
      const double gv = (double)ct_cu_load<Tag>(gl + k * p.g_step);
      total += Log ? gv : gv * (double)ct_cu_load<Tag>(yl + k * p.y_step);
    }
    const C s = (C)ct_cu_group_reduce<Width>(total, ct_cu_sum_op());
    for (int64_t k = t; k < p.extent; k += Width) {
      const C gv = ct_cu_load<Tag>(gl + k * p.g_step);
      const C yv = ct_cu_load<Tag>(yl + k * p.y_step);
      ct_cu_store<Tag>(o + k * p.gx_step, Log ? gv - ct_cu_nb_exp(yv) * s : yv * (gv - s));
    }
  }
}

template <ct_pl_type Tag, bool Log>
int ct_cu_softmax_backward_launch(const ct_cu_exec& exec, const ct_pl_layout& layout,
                                  const ct_cu_nb_softmax_args& p, char* gx, const char* g,
                                  const char* y) {
  if (p.extent <= ct_cu_warp_row) {
    ct_cu_softmax_backward_kernel<Tag, 32, Log>
        <<<ct_cu_grid(exec, p.lanes * 32, ct_cu_threads), ct_cu_threads, 0, exec.stream>>>(
            layout, p, gx, g, y);
  } else {
    ct_cu_softmax_backward_kernel<Tag, ct_cu_threads, Log>
        <<<ct_cu_grid(exec, p.lanes * ct_cu_threads, ct_cu_threads), ct_cu_threads, 0,
           exec.stream>>>(layout, p, gx, g, y);
  }
  return ct_cu_launch_status(Log ? "log_softmax_backward" : "softmax_backward");
}

struct ct_cu_nb_softmax_entry {
  int (*launch)(const ct_cu_exec& exec, const ct_pl_layout& layout, const ct_cu_nb_softmax_args& p,
                char* gx, const char* g, const char* y);
};

int ct_cu_softmax_backward_run(const ct_kernel_call* call) {
  const auto* entry = static_cast<const ct_cu_nb_softmax_entry*>(call->kernel_data);
  const ct_tensor* g = call->inputs[0];
  const ct_tensor* y = call->inputs[1];
  const ct_tensor* gx = call->outputs[0];
  if (ct_pl_tensor_elements(gx) == 0) return CT_OK;
  ct_cu_exec exec;
  const int status = ct_cu_exec_for_call(call, &exec);
  if (status != CT_OK) return status;
  int64_t axis = y->ndim ? call->attrs[0].value.i : 0;
  if (axis < 0) axis += y->ndim;
  ct_cu_nb_softmax_args p;
  p.extent = y->ndim ? y->shape[axis] : 1;
  p.gx_step = ct_pl_byte_stride(gx, (int32_t)axis);
  p.g_step = ct_pl_byte_stride(g, (int32_t)axis);
  p.y_step = ct_pl_byte_stride(y, (int32_t)axis);
  ct_pl_layout layout;
  ct_pl_lane_layout(&layout, y, (int32_t)axis);
  ct_pl_layout_add(&layout, gx);
  ct_pl_layout_add(&layout, g);
  ct_pl_layout_add(&layout, y);
  ct_pl_layout_collapse(&layout, nullptr);
  p.lanes = layout.elements;
  return entry->launch(exec, layout, p, ct_cu_tensor_bytes(gx), ct_cu_tensor_bytes(g),
                       ct_cu_tensor_bytes(y));
}

/* ----- layer_norm_backward ----- */

struct ct_cu_nb_norm_args {
  const char* x;
  const char* g;
  const char* w;
  char* gx;
  char* gw;
  char* gb;
  double* stats; /* mean, rstd per row */
  double eps;
};

/* `rows`: operands (gx, x, g) over the leading dims; `row`: (gx, x, g, w) over the normalised
 * dims (stride 0 for an absent weight). */
template <ct_pl_type Tag, int Width>
__global__ void __launch_bounds__(ct_cu_group_block(Width))
    ct_cu_layer_norm_backward_rows(const ct_pl_layout rows, const ct_pl_layout row,
                                   const ct_cu_nb_norm_args a) {
  using C = ct_cu_compute_t<Tag>;
  constexpr int groups = ct_cu_group_block(Width) / Width;
  const int t = threadIdx.x % Width;
  const int64_t count = row.elements;
  for (int64_t r = (int64_t)blockIdx.x * groups + threadIdx.x / Width; r < rows.elements;
       r += (int64_t)gridDim.x * groups) {
    int64_t base[3];
    ct_cu_offsets<3>(rows, r, base);
    double total = 0;
    for (int64_t j = t; j < count; j += Width) {
      int64_t e[2];
      ct_cu_offsets<2>(row, j, e);
      total += (double)ct_cu_load<Tag>(a.x + base[1] + e[1]);
    }
    const double mean = ct_cu_group_reduce<Width>(total, ct_cu_sum_op()) / (double)count;
    double squares = 0, sa = 0, sb = 0;
    for (int64_t j = t; j < count; j += Width) {
      int64_t e[4];
      ct_cu_offsets<4>(row, j, e);
      const double d = (double)ct_cu_load<Tag>(a.x + base[1] + e[1]) - mean;
      double gw = (double)ct_cu_load<Tag>(a.g + base[2] + e[2]);
      if (a.w) gw *= (double)ct_cu_load<Tag>(a.w + e[3]);
      squares += d * d;
      sa += gw;
      sb += gw * d;
    }
    squares = ct_cu_group_reduce<Width>(squares, ct_cu_sum_op());
    sa = ct_cu_group_reduce<Width>(sa, ct_cu_sum_op());
    sb = ct_cu_group_reduce<Width>(sb, ct_cu_sum_op());
    const double rstd = 1 / sqrt(squares / (double)count + a.eps);
    const double mb = rstd * sb / (double)count;
    const C m = (C)mean, rs = (C)rstd, c1 = (C)(-rstd * mb), c0 = (C)(-rstd * sa / (double)count);
    if (t == 0) {
      a.stats[2 * r] = mean;
      a.stats[2 * r + 1] = rstd;
    }
    for (int64_t j = t; j < count; j += Width) {
      int64_t e[4];
      ct_cu_offsets<4>(row, j, e);
      const C gv = ct_cu_load<Tag>(a.g + base[2] + e[2]);
      const C xhat = (ct_cu_load<Tag>(a.x + base[1] + e[1]) - m) * rs;
      const C gwv = a.w ? gv * ct_cu_load<Tag>(a.w + e[3]) : gv;
      ct_cu_store<Tag>(a.gx + base[0] + e[0], rs * gwv + (c1 * xhat + c0));
    }
  }
}

/* One thread per element of normalized_shape: `params` has operands (gw, gb, x, g). */
template <ct_pl_type Tag>
__global__ void __launch_bounds__(ct_cu_threads)
    ct_cu_layer_norm_backward_params(const ct_pl_layout rows, const ct_pl_layout params,
                                     const ct_cu_nb_norm_args a) {
  using C = ct_cu_compute_t<Tag>;
  for (int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; j < params.elements;
       j += (int64_t)gridDim.x * blockDim.x) {
    int64_t p[4];
    ct_cu_offsets<4>(params, j, p);
    double sw = 0, sg = 0;
    for (int64_t r = 0; r < rows.elements; ++r) {
      int64_t base[3];
      ct_cu_offsets<3>(rows, r, base);
      const C m = (C)a.stats[2 * r], rs = (C)a.stats[2 * r + 1];
      const C gv = ct_cu_load<Tag>(a.g + base[2] + p[3]);
      const C xhat = (ct_cu_load<Tag>(a.x + base[1] + p[2]) - m) * rs;
      sw += (double)(gv * xhat);
      sg += (double)gv;
    }
    ct_cu_store<Tag>(a.gw + p[0], (C)sw);
    ct_cu_store<Tag>(a.gb + p[1], (C)sg);
  }
}

template <ct_pl_type Tag>
int ct_cu_layer_norm_backward_launch(const ct_cu_exec& exec, const ct_pl_layout& rows,
                                     const ct_pl_layout& row, const ct_pl_layout& params,
                                     const ct_cu_nb_norm_args& a) {
  if (rows.elements > 0) {
    if (row.elements <= ct_cu_warp_row) {
      ct_cu_layer_norm_backward_rows<Tag, 32>
          <<<ct_cu_grid(exec, rows.elements * 32, ct_cu_threads), ct_cu_threads, 0, exec.stream>>>(
              rows, row, a);
    } else {
      ct_cu_layer_norm_backward_rows<Tag, ct_cu_threads>
          <<<ct_cu_grid(exec, rows.elements * ct_cu_threads, ct_cu_threads), ct_cu_threads, 0,
             exec.stream>>>(rows, row, a);
    }
  }
  ct_cu_layer_norm_backward_params<Tag>
      <<<ct_cu_grid(exec, params.elements, ct_cu_threads), ct_cu_threads, 0, exec.stream>>>(
          rows, params, a);
  return ct_cu_launch_status("layer_norm_backward");
}

struct ct_cu_nb_norm_entry {
  int (*launch)(const ct_cu_exec& exec, const ct_pl_layout& rows, const ct_pl_layout& row,
                const ct_pl_layout& params, const ct_cu_nb_norm_args& a);
};

/* Byte strides of the trailing `inner` dims of t (zero for an absent t). */
void ct_cu_trailing_strides(const ct_tensor* t, int32_t inner, int64_t* strides) {
  for (int32_t d = 0; d < inner; ++d) strides[d] = 0;
  if (!t) return;
  int64_t all[CT_MAX_NDIM];
  ct_pl_tensor_strides(t, all);
  for (int32_t d = 0; d < inner; ++d) {
    strides[d] = all[t->ndim - inner + d] * ((t->dtype.bits + 7) / 8);
  }
}

/* Bytes of the rows' statistics (mean and rstd, doubles) a layer_norm_backward call keeps: one
 * pair per row of x (at least one); 0 when grad_weight is empty and the call does nothing. */
uint64_t ct_cu_layer_norm_stats_bytes(const ct_kernel_call* call) {
  if (ct_pl_tensor_elements(call->outputs[1]) == 0) return 0;
  const ct_tensor* x = call->inputs[1];
  const int32_t outer_ndim = x->ndim - (int32_t)call->attrs[0].count;
  int64_t rows = 1;
  for (int32_t d = 0; d < outer_ndim; ++d) rows *= x->shape[d];
  return (uint64_t)(rows > 0 ? rows : 1) * 2 * sizeof(double);
}

int ct_cu_layer_norm_backward_workspace(const ct_kernel_call* call, uint64_t* bytes,
                                        uint64_t* alignment) {
  *bytes = ct_cu_layer_norm_stats_bytes(call);
  *alignment = 256;
  return CT_OK;
}

int ct_cu_layer_norm_backward_run(const ct_kernel_call* call) {
  const auto* entry = static_cast<const ct_cu_nb_norm_entry*>(call->kernel_data);
  const ct_tensor* g = call->inputs[0];
  const ct_tensor* x = call->inputs[1];
  const ct_tensor* weight = call->inputs[2];
  const ct_tensor* gx = call->outputs[0];
  const ct_tensor* gw = call->outputs[1];
  const ct_tensor* gb = call->outputs[2];
  if (ct_pl_tensor_elements(gw) == 0) return CT_OK;
  ct_cu_exec exec;
  int status = ct_cu_exec_for_call(call, &exec);
  if (status != CT_OK) return status;
  const int32_t inner_ndim = (int32_t)call->attrs[0].count;
  const int32_t outer_ndim = x->ndim - inner_ndim;

  int64_t shape[CT_MAX_NDIM];
  for (int32_t d = 0; d < x->ndim; ++d) shape[d] = d < outer_ndim ? x->shape[d] : 1;
  ct_pl_layout rows, row, params;
  ct_pl_layout_begin(&rows, x->ndim, shape);
  ct_pl_layout_add(&rows, gx);
  ct_pl_layout_add(&rows, x);
  ct_pl_layout_add(&rows, g);
  ct_pl_layout_collapse(&rows, nullptr);
  ct_pl_layout_begin(&row, inner_ndim, x->shape + outer_ndim);
  ct_pl_layout_begin(&params, inner_ndim, x->shape + outer_ndim);
  const ct_tensor* row_operands[4] = {gx, x, g, weight};
  const ct_tensor* param_operands[4] = {gw, gb, x, g};
  for (int k = 0; k < 4; ++k) {
    int64_t strides[CT_MAX_NDIM];
    ct_cu_trailing_strides(row_operands[k], inner_ndim, strides);
    ct_pl_layout_add_strides(&row, strides);
    ct_cu_trailing_strides(param_operands[k], inner_ndim, strides);
    ct_pl_layout_add_strides(&params, strides);
  }
  ct_pl_layout_collapse(&row, nullptr);
  ct_pl_layout_collapse(&params, nullptr);

  ct_cu_nb_norm_args a;
  a.x = ct_cu_tensor_bytes(x);
  a.g = ct_cu_tensor_bytes(g);
  a.w = weight ? ct_cu_tensor_bytes(weight) : nullptr;
  a.gx = ct_cu_tensor_bytes(gx);
  a.gw = ct_cu_tensor_bytes(gw);
  a.gb = ct_cu_tensor_bytes(gb);
  a.eps = call->attrs[1].value.f;
  /* The statistics live in the call's workspace (ct_cu_layer_norm_backward_workspace asked for
   * them). */
  void* stats = nullptr;
  status =
      ct_cu_workspace(call->workspace, call->workspace_size, ct_cu_layer_norm_stats_bytes(call),
                      alignof(double), "layer_norm_backward", &stats);
  if (status != CT_OK) return status;
  a.stats = static_cast<double*>(stats);
  return entry->launch(exec, rows, row, params, a);
}

template <ct_pl_type Tag>
int ct_cu_register_norm_backward_type() {
  static const ct_cu_nb_softmax_entry softmax = {&ct_cu_softmax_backward_launch<Tag, false>};
  static const ct_cu_nb_softmax_entry log_softmax = {&ct_cu_softmax_backward_launch<Tag, true>};
  static const ct_cu_nb_norm_entry layer = {&ct_cu_layer_norm_backward_launch<Tag>};
  const ct_pl_type three[3] = {Tag, Tag, Tag};
  const ct_pl_type six[6] = {Tag, Tag, Tag, Tag, Tag, Tag};
  int status =
      ct_cu_register("softmax_backward", three, 3, ct_cu_softmax_backward_run, nullptr, &softmax);
  if (status == CT_OK) {
    status = ct_cu_register("log_softmax_backward", three, 3, ct_cu_softmax_backward_run, nullptr,
                            &log_softmax);
  }
  if (status == CT_OK) {
    status = ct_cu_register("layer_norm_backward", six, 6, ct_cu_layer_norm_backward_run,
                            ct_cu_layer_norm_backward_workspace, &layer);
  }
  return status;
}

}  // namespace

int ct_cu_register_norm_backward(void) {
  return ct_cu_for_each_tag(ct_cu_float_tags{}, [](auto tag) {
    return ct_cu_register_norm_backward_type<decltype(tag)::value>();
  });
}
