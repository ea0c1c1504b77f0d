/* cu_elementwise.cu - every element-wise op (capi/ops/elementwise_table.h) and astype: per (op,
 * dtypes) a dense kernel (cu_elementwise_fast.cuh: dense runs, broadcast rows or columns and
 * single values, 16-byte vectors) and a strided one (a grid-stride loop over the broadcast,
 * collapsed layout) for every other layout. */
#include <string.h>

#include <type_traits>

#include "cu_call.h"
#include "cu_elementwise_fast.cuh"
#include "cu_elementwise_math.cuh"
#include "cu_layout.h"
#include "cu_types.cuh"
#include "ops/elementwise_table.h"

namespace {

/* Launches one (op, dtypes) kernel over `layout` (operand 0 the output, then the inputs). */
using ct_cu_elementwise_launch_fn = int (*)(const ct_cu_exec& exec, const ct_pl_layout& layout,
                                            char* out, const char* const* in, double p0, double p1);

/* What a registered kernel hands its run function. */
struct ct_cu_elementwise_entry {
  const char* name;
  ct_elementwise_params params;
  bool integer_pow; /* scan the exponents for negative values first */
  ct_cu_elementwise_launch_fn launch;
};

constexpr bool ct_cu_is_na(const char* text) {
  const char* na = "CT_NA";
  while (*text && *text == *na) ++text, ++na;
  return *text == '\0' && *na == '\0';
}

/* The unsigned type of a compute type's width (floats included, for uniform expressions). */
template <class T>
struct ct_cu_unsigned {
  using type = std::conditional_t<sizeof(T) == 8, unsigned long long, unsigned>;
};

enum { CT_CU_CLASS_FLOAT = 0, CT_CU_CLASS_INT = 1, CT_CU_CLASS_BOOL = 2 };

template <ct_pl_type V>
inline constexpr int ct_cu_class_of = ct_cu_is_float_v<V> ? CT_CU_CLASS_FLOAT
                                      : V == CT_PL_B8     ? CT_CU_CLASS_BOOL
                                                          : CT_CU_CLASS_INT;

#define CT_NA T(0)
#define CT_CU_OP_STRUCT(NAME, ARITY, SCHEMA, OUT, PARAMS, FEXPR, IEXPR, BEXPR, DOC) \
  struct ct_cu_op_##NAME {                                                          \
    static constexpr const char* name = #NAME;                                      \
    static constexpr int arity = ARITY;                                             \
    static constexpr ct_elementwise_out_rule out = CT_ELEMENTWISE_OUT_##OUT;        \
    static constexpr ct_elementwise_params params = CT_ELEMENTWISE_PARAMS_##PARAMS; \
    static constexpr bool has_float = !ct_cu_is_na(#FEXPR);                         \
    static constexpr bool has_int = !ct_cu_is_na(#IEXPR);                           \
    static constexpr bool has_bool = !ct_cu_is_na(#BEXPR);                          \
    template <int Class, class T, class A, class B, class C>                        \
    __device__ static __forceinline__ auto apply(A a, B b, C c, T P0, T P1) {       \
      using U = typename ct_cu_unsigned<T>::type;                                   \
      (void)b, (void)c, (void)P0, (void)P1;                                         \
      if constexpr (Class == CT_CU_CLASS_FLOAT) {                                   \
        return FEXPR;                                                               \
      } else if constexpr (Class == CT_CU_CLASS_INT) {                              \
        return IEXPR;                                                               \
      } else {                                                                      \
        return BEXPR;                                                               \
      }                                                                             \
    }                                                                               \
  };
CT_ELEMENTWISE_OPS(CT_CU_OP_STRUCT)
#undef CT_CU_OP_STRUCT
#undef CT_NA

/* The strided kernel: one element a thread per step of a grid-stride loop, its operands' offsets
 * found from the collapsed layout. Dense layouts (cu_elementwise_fast.cuh) never come here. */
template <class Op, ct_pl_type V, ct_pl_type O>
__global__ void __launch_bounds__(256)
    ct_cu_elementwise_kernel(const ct_pl_layout layout, char* out, const char* in0, const char* in1,
                             const char* in2, double p0, double p1) {
  constexpr ct_pl_type A = Op::out == CT_ELEMENTWISE_OUT_WHERE ? CT_PL_B8 : V;
  using T = ct_cu_compute_t<V>;
  const T P0 = (T)p0, P1 = (T)p1;
  const int64_t n = layout.elements;
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
    int64_t off[Op::arity + 1];
    ct_cu_offsets<Op::arity + 1>(layout, i, off);
    const auto a = ct_cu_load<A>(in0 + off[1]);
    T b = T(0), c = T(0);
    if constexpr (Op::arity > 1) b = ct_cu_load<V>(in1 + off[2]);
    if constexpr (Op::arity > 2) c = ct_cu_load<V>(in2 + off[3]);
    ct_cu_store<O>(out + off[0], Op::template apply<ct_cu_class_of<V>, T>(a, b, c, P0, P1));
  }
}

/* An op's formula with its scalar parameters, for the dense kernel. */
template <class Op, ct_pl_type V>
struct ct_cu_op_functor {
  using T = ct_cu_compute_t<V>;
  T p0, p1;
  template <class A, class B, class C>
  __device__ __forceinline__ auto operator()(A a, B b, C c) const {
    return Op::template apply<ct_cu_class_of<V>, T>(a, b, c, p0, p1);
  }
};

/* astype's formula: the value itself (the store converts it). */
struct ct_cu_identity_functor {
  template <class A, class B, class C>
  __device__ __forceinline__ A operator()(A a, B, C) const {
    return a;
  }
};

constexpr int ct_cu_threads = 256;

/* Launches the dense kernel and returns true when the layout allows; false: nothing launched. */
template <int Arity, ct_pl_type O, ct_pl_type I0, ct_pl_type I1, ct_pl_type I2, class F>
bool ct_cu_dense_launch(const ct_cu_exec& exec, const ct_pl_layout& layout, char* out,
                        const char* const* in, const F& f) {
  constexpr int N = ct_cu_vector_elements<O, I0, I1, I2>();
  const int32_t sizes[4] = {
      (int32_t)sizeof(ct_cu_storage_t<O>), (int32_t)sizeof(ct_cu_storage_t<I0>),
      (int32_t)sizeof(ct_cu_storage_t<I1>), (int32_t)sizeof(ct_cu_storage_t<I2>)};
  ct_cu_dense_args p;
  if (!ct_cu_dense_plan(layout, sizes, Arity, N, out, in, &p)) return false;
  /* A block per 256 vectors, up to 256 blocks an SM: with equal work per block, a grid of a few
   * rounds of resident blocks would leave part of the last round idle; with dozens, little. */
  const int64_t items = p.vector ? p.n / N + p.n % N : p.n;
  const int64_t needed = (items + ct_cu_threads - 1) / ct_cu_threads;
  const int64_t most = (int64_t)ct_cu_multiprocessors(exec.device_id) * 256;
  const unsigned grid = (unsigned)(needed < most ? needed : most > 0 ? most : 1);
  ct_cu_dense_kernel<Arity, O, I0, I1, I2><<<grid, ct_cu_threads, 0, exec.stream>>>(p, f);
  return true;
}

template <class Op, ct_pl_type V, ct_pl_type O>
int ct_cu_elementwise_launch(const ct_cu_exec& exec, const ct_pl_layout& layout, char* out,
                             const char* const* in, double p0, double p1) {
  constexpr ct_pl_type A = Op::out == CT_ELEMENTWISE_OUT_WHERE ? CT_PL_B8 : V;
  using T = ct_cu_compute_t<V>;
  const ct_cu_op_functor<Op, V> f = {(T)p0, (T)p1};
  if (!ct_cu_dense_launch<Op::arity, O, A, V, V>(exec, layout, out, in, f)) {
    ct_cu_elementwise_kernel<Op, V, O>
        <<<ct_cu_grid(exec, layout.elements, ct_cu_threads), ct_cu_threads, 0, exec.stream>>>(
            layout, out, in[0], in[1], in[2], p0, p1);
  }
  return ct_cu_launch_status(Op::name);
}

template <ct_pl_type From, ct_pl_type To>
__global__ void __launch_bounds__(256)
    ct_cu_astype_kernel(const ct_pl_layout layout, char* out, const char* in) {
  const int64_t n = layout.elements;
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
    int64_t off[2];
    ct_cu_offsets<2>(layout, i, off);
    ct_cu_store<To>(out + off[0], ct_cu_load<From>(in + off[1]));
  }
}

template <ct_pl_type From, ct_pl_type To>
int ct_cu_astype_launch(const ct_cu_exec& exec, const ct_pl_layout& layout, char* out,
                        const char* const* in, double, double) {
  if (!ct_cu_dense_launch<1, To, From, From, From>(exec, layout, out, in,
                                                   ct_cu_identity_functor{})) {
    ct_cu_astype_kernel<From, To>
        <<<ct_cu_grid(exec, layout.elements, ct_cu_threads), ct_cu_threads, 0, exec.stream>>>(
            layout, out, in[0]);
  }
  return ct_cu_launch_status("astype");
}

/* Integer pow refuses negative exponents (as NumPy and the CPU backend): the exponents are
 * scanned on the device before anything is written. */
template <ct_pl_type V>
__global__ void ct_cu_negative_scan_kernel(const ct_pl_layout layout, const char* x, int* found) {
  const int64_t n = layout.elements;
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
    int64_t off[1];
    ct_cu_offsets<1>(layout, i, off);
    if (ct_cu_load<V>(x + off[0]) < 0) *found = 1;
  }
}

int ct_cu_check_exponents(const ct_cu_exec& exec, const ct_tensor* x2) {
  ct_pl_layout layout;
  ct_pl_layout_begin(&layout, x2->ndim, x2->shape);
  ct_pl_layout_add(&layout, x2);
  const int32_t sizes[1] = {(x2->dtype.bits + 7) / 8};
  ct_pl_layout_collapse(&layout, sizes);
  int* found = nullptr;
  int status =
      ct_cu_check(cudaMallocAsync(reinterpret_cast<void**>(&found), sizeof(int), exec.stream),
                  "cudaMallocAsync");
  if (status != CT_OK) return status;
  int flag = 0;
  status = ct_cu_check(cudaMemsetAsync(found, 0, sizeof(int), exec.stream), "cudaMemsetAsync");
  if (status == CT_OK) {
    const unsigned grid = ct_cu_grid(exec, layout.elements, ct_cu_threads);
    if (x2->dtype.bits == 32) {
      ct_cu_negative_scan_kernel<CT_PL_I32>
          <<<grid, ct_cu_threads, 0, exec.stream>>>(layout, ct_cu_tensor_bytes(x2), found);
    } else {
      ct_cu_negative_scan_kernel<CT_PL_I64>
          <<<grid, ct_cu_threads, 0, exec.stream>>>(layout, ct_cu_tensor_bytes(x2), found);
    }
    status = ct_cu_launch_status("pow (exponent scan)");
  }
  if (status == CT_OK) {
    status =
        ct_cu_check(cudaMemcpyAsync(&flag, found, sizeof flag, cudaMemcpyDeviceToHost, exec.stream),
                    "cudaMemcpyAsync");
  }
  cudaFreeAsync(found, exec.stream);
  if (status == CT_OK) status = ct_cu_check(cudaStreamSynchronize(exec.stream), "pow");
  if (status == CT_OK && flag) {
    status = ct_cu_error(CT_ERROR_INVALID_ARGUMENT,
                         "pow: integers to negative integer powers are not allowed");
  }
  return status;
}

int ct_cu_elementwise_params(const ct_kernel_call* call, const ct_cu_elementwise_entry* entry,
                             double params[2]) {
  params[0] = params[1] = 0;
  if (entry->params == CT_ELEMENTWISE_PARAMS_FLOATS) {
    for (int32_t k = 0; k < call->schema->num_attrs && k < 2; ++k) {
      const ct_attr_value* v = &call->attrs[k];
      params[k] = v->type == CT_ATTR_INT ? (double)v->value.i : v->value.f;
    }
  } else if (entry->params == CT_ELEMENTWISE_PARAMS_GELU) {
    const char* mode = call->attrs[0].value.s;
    if (strcmp(mode, "tanh") == 0) {
      params[0] = 1;
    } else if (strcmp(mode, "none") != 0) {
      return ct_cu_error(CT_ERROR_INVALID_ARGUMENT,
                         "gelu: approximate must be 'none' or 'tanh', not '%s'", mode);
    }
  }
  return CT_OK;
}

int ct_cu_elementwise_run(const ct_kernel_call* call) {
  const auto* entry = static_cast<const ct_cu_elementwise_entry*>(call->kernel_data);
  const ct_tensor* out = call->outputs[0];
  double params[2];
  int status = ct_cu_elementwise_params(call, entry, params);
  if (status != CT_OK || ct_pl_tensor_elements(out) == 0) return status;
  ct_cu_exec exec;
  status = ct_cu_exec_for_call(call, &exec);
  if (status == CT_OK && entry->integer_pow) status = ct_cu_check_exponents(exec, call->inputs[1]);
  if (status != CT_OK) return status;

  ct_pl_layout layout;
  int32_t sizes[CT_PL_MAX_OPERANDS] = {(out->dtype.bits + 7) / 8};
  ct_pl_layout_begin(&layout, out->ndim, out->shape);
  ct_pl_layout_add(&layout, out);
  const char* in[3] = {nullptr, nullptr, nullptr};
  for (int32_t k = 0; k < call->num_inputs; ++k) {
    sizes[k + 1] = (call->inputs[k]->dtype.bits + 7) / 8;
    ct_pl_layout_add(&layout, call->inputs[k]);
    in[k] = ct_cu_tensor_bytes(call->inputs[k]);
  }
  ct_pl_layout_collapse(&layout, sizes);
  return entry->launch(exec, layout, ct_cu_tensor_bytes(out), in, params[0], params[1]);
}

template <class Op, ct_pl_type V>
constexpr ct_pl_type ct_cu_output_type() {
  if constexpr (Op::out == CT_ELEMENTWISE_OUT_BOOL) return CT_PL_B8;
  if constexpr (Op::out == CT_ELEMENTWISE_OUT_F64_FOR_INTS && !ct_cu_is_float_v<V>)
    return CT_PL_F64;
  if constexpr (Op::out == CT_ELEMENTWISE_OUT_F16_FOR_BOOL && V == CT_PL_B8) return CT_PL_F16;
  return V;
}

template <class Op, ct_pl_type V>
int ct_cu_register_value() {
  constexpr ct_pl_type O = ct_cu_output_type<Op, V>();
  static const ct_cu_elementwise_entry entry = {
      Op::name, Op::params, strcmp(Op::name, "pow") == 0 && !ct_cu_is_float_v<V>,
      &ct_cu_elementwise_launch<Op, V, O>};
  ct_pl_type signature[4];
  int32_t length = 0;
  if (Op::out == CT_ELEMENTWISE_OUT_WHERE) signature[length++] = CT_PL_B8;
  const int values = Op::out == CT_ELEMENTWISE_OUT_WHERE ? 2 : Op::arity;
  for (int k = 0; k < values; ++k) signature[length++] = V;
  signature[length++] = O;
  return ct_cu_register(Op::name, signature, length, ct_cu_elementwise_run, nullptr, &entry);
}

template <class Op>
int ct_cu_register_op() {
  const auto add = [](auto tag) { return ct_cu_register_value<Op, decltype(tag)::value>(); };
  int status = CT_OK;
  if constexpr (Op::has_float) status = ct_cu_for_each_tag(ct_cu_float_tags{}, add);
  if constexpr (Op::has_int) {
    if (status == CT_OK) status = ct_cu_for_each_tag(ct_cu_int_tags{}, add);
  }
  if constexpr (Op::has_bool) {
    if (status == CT_OK) status = ct_cu_for_each_tag(ct_cu_tags<CT_PL_B8>{}, add);
  }
  return status;
}

template <ct_pl_type From, ct_pl_type To>
int ct_cu_register_astype_pair() {
  static const ct_cu_elementwise_entry entry = {"astype", CT_ELEMENTWISE_PARAMS_NONE, false,
                                                &ct_cu_astype_launch<From, To>};
  const ct_pl_type signature[2] = {From, To};
  return ct_cu_register("astype", signature, 2, ct_cu_elementwise_run, nullptr, &entry);
}

template <ct_pl_type From>
int ct_cu_register_astype_from() {
  return ct_cu_for_each_tag(ct_cu_all_tags{}, [](auto tag) {
    return ct_cu_register_astype_pair<From, decltype(tag)::value>();
  });
}

}  // namespace

int ct_cu_register_elementwise(void) {
  int status = CT_OK;
#define CT_CU_REGISTER_ROW(NAME, ...) \
  if (status == CT_OK) status = ct_cu_register_op<ct_cu_op_##NAME>();
  CT_ELEMENTWISE_OPS(CT_CU_REGISTER_ROW)
#undef CT_CU_REGISTER_ROW
  if (status != CT_OK) return status;
  return ct_cu_for_each_tag(ct_cu_all_tags{}, [](auto from) {
    return ct_cu_register_astype_from<decltype(from)::value>();
  });
}
