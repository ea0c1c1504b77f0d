/* cu_shape.cu - permute_dims and concat, and their backward ops: strided copies of whole
 * elements, moved as 1-, 2-, 4- or 8-byte integers so that any dtype copies bit for bit. A copy
 * that collapses to one dense run on both sides is a cudaMemcpyAsync; any other is a grid-stride
 * kernel over the collapsed layout, walking the destination in order. */
#include "cu_call.h"
#include "cu_layout.h"
#include "plugin_geometry.h"

namespace {

constexpr int ct_cu_threads = 256;

/* Copies layout operand 1 (source) into operand 0 (destination), one E per element. */
template <class E>
__global__ void __launch_bounds__(256)
    ct_cu_copy_kernel(const ct_pl_layout layout, char* dst, const char* src) {
  const int64_t n = layout.elements;
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
    int64_t off[2];
    ct_cu_offsets<2>(layout, i, off);
    *reinterpret_cast<E*>(dst + off[0]) = *reinterpret_cast<const E*>(src + off[1]);
  }
}

template <class E>
int ct_cu_copy_launch(const ct_cu_exec& exec, const ct_pl_layout& layout, char* dst,
                      const char* src, const char* what) {
  ct_cu_copy_kernel<E>
      <<<ct_cu_grid(exec, layout.elements, ct_cu_threads), ct_cu_threads, 0, exec.stream>>>(
          layout, dst, src);
  return ct_cu_launch_status(what);
}

/* Collapses `layout` (operand 0 the destination, 1 the source) and copies its elements of
 * `size` bytes. */
int ct_cu_copy(const ct_cu_exec& exec, ct_pl_layout* layout, int32_t size, char* dst,
               const char* src, const char* what) {
  const int32_t sizes[2] = {size, size};
  ct_pl_layout_collapse(layout, sizes);
  if (layout->elements == 0) return CT_OK;
  if (layout->contiguous) {
    return ct_cu_check(cudaMemcpyAsync(dst, src, (size_t)(layout->elements * size),
                                       cudaMemcpyDefault, exec.stream),
                       what);
  }
  switch (size) {
    case 1:
      return ct_cu_copy_launch<uint8_t>(exec, *layout, dst, src, what);
    case 2:
      return ct_cu_copy_launch<uint16_t>(exec, *layout, dst, src, what);
    case 4:
      return ct_cu_copy_launch<uint32_t>(exec, *layout, dst, src, what);
    default:
      return ct_cu_copy_launch<unsigned long long>(exec, *layout, dst, src, what);
  }
}

int ct_cu_permute_dims_run(const ct_kernel_call* call) {
  const ct_tensor* x = call->inputs[0];
  const ct_tensor* out = call->outputs[0];
  if (ct_pl_tensor_elements(out) == 0) return CT_OK;
  ct_cu_exec exec;
  const int status = ct_cu_exec_for_call(call, &exec);
  if (status != CT_OK) return status;
  ct_pl_layout layout;
  ct_pl_permute_layout(call, &layout);
  return ct_cu_copy(exec, &layout, (x->dtype.bits + 7) / 8, ct_cu_tensor_bytes(out),
                    ct_cu_tensor_bytes(x), "permute_dims");
}

/* One input's slab of a concat (ct_pl_concat_each). */
struct ct_cu_concat_target {
  const ct_cu_exec* exec;
  char* out;
};

int ct_cu_concat_copy(void* context, ct_pl_layout* layout, int64_t dst_offset, const ct_tensor* x) {
  const auto* target = static_cast<const ct_cu_concat_target*>(context);
  return ct_cu_copy(*target->exec, layout, (x->dtype.bits + 7) / 8, target->out + dst_offset,
                    ct_cu_tensor_bytes(x), "concat");
}

/* Each input is copied into its slab of the output along `axis`, or (axis None) into its run
 * of the flat output. */
int ct_cu_concat_run(const ct_kernel_call* call) {
  const ct_tensor* out = call->outputs[0];
  if (ct_pl_tensor_elements(out) == 0) return CT_OK;
  ct_cu_exec exec;
  const int status = ct_cu_exec_for_call(call, &exec);
  if (status != CT_OK) return status;
  ct_cu_concat_target target = {&exec, ct_cu_tensor_bytes(out)};
  return ct_pl_concat_each(call, ct_cu_concat_copy, &target);
}

/* grad_out copied back through the inverse permutation. */
int ct_cu_permute_dims_backward_run(const ct_kernel_call* call) {
  const ct_tensor* grad = call->inputs[0];
  const ct_tensor* out = call->outputs[0];
  if (ct_pl_tensor_elements(out) == 0) return CT_OK;
  ct_cu_exec exec;
  const int status = ct_cu_exec_for_call(call, &exec);
  if (status != CT_OK) return status;
  ct_pl_layout layout;
  ct_pl_permute_backward_layout(call, &layout);
  return ct_cu_copy(exec, &layout, (out->dtype.bits + 7) / 8, ct_cu_tensor_bytes(out),
                    ct_cu_tensor_bytes(grad), "permute_dims_backward");
}

/* One output's slab of grad_out (ct_pl_concat_backward_each). */
struct ct_cu_slab_source {
  const ct_cu_exec* exec;
  char* grad;
};

int ct_cu_concat_backward_copy(void* context, ct_pl_layout* layout, int64_t src_offset,
                               const ct_tensor* out) {
  const auto* source = static_cast<const ct_cu_slab_source*>(context);
  return ct_cu_copy(*source->exec, layout, (out->dtype.bits + 7) / 8, ct_cu_tensor_bytes(out),
                    source->grad + src_offset, "concat_backward");
}

/* Each output gets its slab of grad_out along `axis`, or (axis None) its run of the flat
 * grad_out. */
int ct_cu_concat_backward_run(const ct_kernel_call* call) {
  const ct_tensor* grad = call->inputs[0];
  if (ct_pl_tensor_elements(grad) == 0) return CT_OK;
  ct_cu_exec exec;
  const int status = ct_cu_exec_for_call(call, &exec);
  if (status != CT_OK) return status;
  ct_cu_slab_source source = {&exec, ct_cu_tensor_bytes(grad)};
  return ct_pl_concat_backward_each(call, ct_cu_concat_backward_copy, &source);
}

}  // namespace

int ct_cu_register_shape(void) {
  for (int t = 0; t < CT_PL_TYPE_COUNT; ++t) {
    const ct_pl_type signature[3] = {(ct_pl_type)t, (ct_pl_type)t, (ct_pl_type)t};
    int status =
        ct_cu_register("permute_dims", signature, 2, ct_cu_permute_dims_run, nullptr, nullptr);
    if (status == CT_OK) {
      status = ct_cu_register("concat", signature, 2, ct_cu_concat_run, nullptr, nullptr);
    }
    // the backward ops: the float dtypes, as every gradient
    const bool is_float = t == CT_PL_F16 || t == CT_PL_F32 || t == CT_PL_F64;
    if (status == CT_OK && is_float) {
      status = ct_cu_register("permute_dims_backward", signature, 2,
                              ct_cu_permute_dims_backward_run, nullptr, nullptr);
    }
    if (status == CT_OK && is_float) {
      status = ct_cu_register("concat_backward", signature, 3, ct_cu_concat_backward_run, nullptr,
                              nullptr);
    }
    if (status != CT_OK) return status;
  }
  return CT_OK;
}
