/* cu_elementwise_grad.cu - the element-wise backward operators (capi/ops/elementwise_grad_table.h):
 * the table's formulas and helpers compiled as CUDA C++. Per (op, dtype, output) a dense kernel
 * (cu_elementwise_fast.cuh: dense runs, single values, broadcast rows or columns, 16-byte
 * vectors) and a grid-stride loop over the broadcast, collapsed layout of that output and the
 * inputs (an output and up to three inputs fit one layout) for every other layout. */
#include <string.h>

#include "cu_call.h"
#include "cu_elementwise_fast.cuh"
#include "cu_layout.h"
#include "cu_types.cuh"
#include "ops/elementwise_grad_table.h"
#include "ops/elementwise_table.h"

namespace {

/* The table's helpers as device templates over the compute type T. */
#define CT_CU_EWG_HELPER(NAME, PARAMS, ...)  \
  template <class T>                         \
  __device__ __forceinline__ T NAME PARAMS { \
    __VA_ARGS__                              \
  }
CT_ELEMENTWISE_GRAD_HELPERS(CT_CU_EWG_HELPER)
#undef CT_CU_EWG_HELPER

#define CT_CU_EWG_INPUTS_FROM_X 2
#define CT_CU_EWG_INPUTS_FROM_OUT 2
#define CT_CU_EWG_INPUTS_FROM_X1_X2 3
#define CT_CU_EWG_INPUTS_FROM_CONDITION 2
#define CT_CU_EWG_OUTPUTS_GRAD_X 1
#define CT_CU_EWG_OUTPUTS_GRAD_X1 1
#define CT_CU_EWG_OUTPUTS_GRAD_X1_X2 2
#define CT_CU_EWG_CONDITION_FROM_X false
#define CT_CU_EWG_CONDITION_FROM_OUT false
#define CT_CU_EWG_CONDITION_FROM_X1_X2 false
#define CT_CU_EWG_CONDITION_FROM_CONDITION true

/* One row: its shape and apply<K>(g, a, b, P0, P1), output K's formula. */
#define CT_NA T(0)
#define CT_CU_EWG_STRUCT(NAME, INPUTS, OUTPUTS, PARAMS, GRAD0, GRAD1, DOC)          \
  struct ct_cu_ewg_##NAME {                                                         \
    static constexpr const char* name = #NAME;                                      \
    static constexpr int inputs = CT_CU_EWG_INPUTS_##INPUTS;                        \
    static constexpr int outputs = CT_CU_EWG_OUTPUTS_##OUTPUTS;                     \
    static constexpr bool condition = CT_CU_EWG_CONDITION_##INPUTS;                 \
    static constexpr ct_elementwise_params params = CT_ELEMENTWISE_PARAMS_##PARAMS; \
    template <int K, class T, class A>                                              \
    __device__ static __forceinline__ T apply(T g, A a, T b, T P0, T P1) {          \
      (void)a, (void)b, (void)P0, (void)P1;                                         \
      if constexpr (K == 0) {                                                       \
        return GRAD0;                                                               \
      } else {                                                                      \
        return GRAD1;                                                               \
      }                                                                             \
    }                                                                               \
  };
CT_ELEMENTWISE_GRAD_OPS(CT_CU_EWG_STRUCT)
#undef CT_CU_EWG_STRUCT
#undef CT_NA

template <class Op, int K, ct_pl_type V>
__global__ void __launch_bounds__(256)
    ct_cu_elementwise_grad_kernel(const ct_pl_layout layout, char* out, const char* in0,
                                  const char* in1, const char* in2, double p0, double p1) {
  constexpr ct_pl_type A = Op::condition ? CT_PL_B8 : V;
  using T = ct_cu_compute_t<V>;
  const T P0 = (T)p0, P1 = (T)p1;
  const int64_t n = layout.elements;
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
    int64_t off[Op::inputs + 1];
    ct_cu_offsets<Op::inputs + 1>(layout, i, off);
    const T g = ct_cu_load<V>(in0 + off[1]);
    const auto a = ct_cu_load<A>(in1 + off[2]);
    T b = T(0);
    if constexpr (Op::inputs > 2) b = ct_cu_load<V>(in2 + off[3]);
    ct_cu_store<V>(out + off[0], Op::template apply<K, T>(g, a, b, P0, P1));
  }
}

constexpr int ct_cu_threads = 256;

/* Output K's formula with its scalar parameters, for the dense kernel (inputs g, a, b). */
template <class Op, int K, ct_pl_type V>
struct ct_cu_ewg_functor {
  using T = ct_cu_compute_t<V>;
  T p0, p1;
  template <class G, class A, class B>
  __device__ __forceinline__ T operator()(G g, A a, B b) const {
    return Op::template apply<K, T>(g, a, b, p0, p1);
  }
};

/* Output K over dense operands (cu_elementwise_fast.cuh) when the layout allows, else the
 * strided kernel. */
template <class Op, int K, ct_pl_type V>
void ct_cu_elementwise_grad_output(const ct_cu_exec& exec, const ct_pl_layout& layout,
                                   const int32_t* sizes, char* out, const char* const* in,
                                   double p0, double p1) {
  constexpr ct_pl_type A = Op::condition ? CT_PL_B8 : V;
  constexpr int N = ct_cu_vector_elements<V, V, A, V>();
  using T = ct_cu_compute_t<V>;
  ct_cu_dense_args p;
  if (ct_cu_dense_plan(layout, sizes, Op::inputs, N, out, in, &p)) {
    const int64_t items = p.vector ? p.n / N + p.n % N : p.n;
    const int64_t needed = (items + ct_cu_threads - 1) / ct_cu_threads;
    const int64_t most = (int64_t)ct_cu_multiprocessors(exec.device_id) * 256;
    const unsigned grid = (unsigned)(needed < most ? needed : most > 0 ? most : 1);
    const ct_cu_ewg_functor<Op, K, V> f = {(T)p0, (T)p1};
    ct_cu_dense_kernel<Op::inputs, V, V, A, V><<<grid, ct_cu_threads, 0, exec.stream>>>(p, f);
  } else {
    ct_cu_elementwise_grad_kernel<Op, K, V>
        <<<ct_cu_grid(exec, layout.elements, ct_cu_threads), ct_cu_threads, 0, exec.stream>>>(
            layout, out, in[0], in[1], in[2], p0, p1);
  }
}

struct ct_cu_elementwise_grad_entry {
  const char* name;
  ct_elementwise_params params;
  int outputs;
  int (*launch)(const ct_cu_exec& exec, const ct_kernel_call* call, int k, double p0, double p1);
};

template <class Op, ct_pl_type V>
int ct_cu_elementwise_grad_launch(const ct_cu_exec& exec, const ct_kernel_call* call, int k,
                                  double p0, double p1) {
  const ct_tensor* out = call->outputs[k];
  ct_pl_layout layout;
  int32_t sizes[CT_PL_MAX_OPERANDS] = {(out->dtype.bits + 7) / 8};
  ct_pl_layout_begin(&layout, out->ndim, out->shape);
  ct_pl_layout_add(&layout, out);
  const char* in[3] = {nullptr, nullptr, nullptr};
  for (int32_t i = 0; i < Op::inputs; ++i) {
    sizes[i + 1] = (call->inputs[i]->dtype.bits + 7) / 8;
    ct_pl_layout_add(&layout, call->inputs[i]);
    in[i] = ct_cu_tensor_bytes(call->inputs[i]);
  }
  ct_pl_layout_collapse(&layout, sizes);
  if (k == 0) {
    ct_cu_elementwise_grad_output<Op, 0, V>(exec, layout, sizes, ct_cu_tensor_bytes(out), in, p0,
                                            p1);
  } else if constexpr (Op::outputs > 1) {
    ct_cu_elementwise_grad_output<Op, 1, V>(exec, layout, sizes, ct_cu_tensor_bytes(out), in, p0,
                                            p1);
  }
  return ct_cu_launch_status(Op::name);
}

int ct_cu_elementwise_grad_run(const ct_kernel_call* call) {
  const auto* entry = static_cast<const ct_cu_elementwise_grad_entry*>(call->kernel_data);
  double params[2] = {0, 0};
  if (entry->params == CT_ELEMENTWISE_PARAMS_FLOATS) {
    for (int32_t k = 0; k < call->schema->num_attrs && k < 2; ++k) {
      const ct_attr_value* v = &call->attrs[k];
      params[k] = v->type == CT_ATTR_INT ? (double)v->value.i : v->value.f;
    }
  } else if (entry->params == CT_ELEMENTWISE_PARAMS_GELU) {
    const char* mode = call->attrs[0].value.s;
    if (mode && strcmp(mode, "tanh") == 0) {
      params[0] = 1;
    } else if (!mode || strcmp(mode, "none") != 0) {
      return ct_cu_error(CT_ERROR_INVALID_ARGUMENT,
                         "%s: approximate must be 'none' or 'tanh', not '%s'", entry->name,
                         mode ? mode : "(null)");
    }
  }
  if (ct_pl_tensor_elements(call->outputs[0]) == 0) return CT_OK;
  ct_cu_exec exec;
  int status = ct_cu_exec_for_call(call, &exec);
  for (int k = 0; k < entry->outputs && status == CT_OK; ++k) {
    status = entry->launch(exec, call, k, params[0], params[1]);
  }
  return status;
}

template <class Op, ct_pl_type V>
int ct_cu_register_grad_value() {
  static const ct_cu_elementwise_grad_entry entry = {Op::name, Op::params, Op::outputs,
                                                     &ct_cu_elementwise_grad_launch<Op, V>};
  ct_pl_type signature[5];
  int32_t length = 0;
  for (int k = 0; k < Op::inputs; ++k) signature[length++] = k == 1 && Op::condition ? CT_PL_B8 : V;
  for (int k = 0; k < Op::outputs; ++k) signature[length++] = V;
  return ct_cu_register(Op::name, signature, length, ct_cu_elementwise_grad_run, nullptr, &entry);
}

template <class Op>
int ct_cu_register_grad_op() {
  return ct_cu_for_each_tag(ct_cu_float_tags{}, [](auto tag) {
    return ct_cu_register_grad_value<Op, decltype(tag)::value>();
  });
}

}  // namespace

int ct_cu_register_elementwise_grad(void) {
  int status = CT_OK;
#define CT_CU_REGISTER_ROW(NAME, ...) \
  if (status == CT_OK) status = ct_cu_register_grad_op<ct_cu_ewg_##NAME>();
  CT_ELEMENTWISE_GRAD_OPS(CT_CU_REGISTER_ROW)
#undef CT_CU_REGISTER_ROW
  return status;
}
