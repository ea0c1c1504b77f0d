/* cu_shape.cu - permute_dims and concat: strided copies of whole elements, moved as 1-, 2-, 4- or
 * 8-byte integers so that any dtype copies bit for bit. A copy that collapses to one dense run on
 * both sides is a cudaMemcpyAsync; any other is a grid-stride kernel over the collapsed layout,
 * walking the destination in order. */
#include "cu_call.h"
#include "cu_layout.h"

namespace {

constexpr int ct_cu_threads = 256;

/* Copies layout operand 1 (source) into operand 0 (destination), one E per element. */
template <class E>
__global__ void __launch_bounds__(256)
    ct_cu_copy_kernel(const ct_cu_layout layout, char* dst, const char* src) {
  const int64_t n = layout.elements;
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
    int64_t off[2];
    ct_cu_offsets<2>(layout, i, off);
    *reinterpret_cast<E*>(dst + off[0]) = *reinterpret_cast<const E*>(src + off[1]);
  }
}

template <class E>
int ct_cu_copy_launch(const ct_cu_exec& exec, const ct_cu_layout& layout, char* dst,
                      const char* src, const char* what) {
  ct_cu_copy_kernel<E>
      <<<ct_cu_grid(exec, layout.elements, ct_cu_threads), ct_cu_threads, 0, exec.stream>>>(
          layout, dst, src);
  return ct_cu_launch_status(what);
}

/* Collapses `layout` (operand 0 the destination, 1 the source) and copies its elements of
 * `size` bytes. */
int ct_cu_copy(const ct_cu_exec& exec, ct_cu_layout* layout, int32_t size, char* dst,
               const char* src, const char* what) {
  const int32_t sizes[2] = {size, size};
  ct_cu_layout_collapse(layout, sizes);
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
  if (ct_cu_tensor_elements(out) == 0) return CT_OK;
  ct_cu_exec exec;
  int status = ct_cu_exec_for_call(call, &exec);
  if (status != CT_OK) return status;
  const int32_t size = (x->dtype.bits + 7) / 8;
  int64_t x_strides[CT_MAX_NDIM], permuted[CT_MAX_NDIM];
  ct_cu_tensor_strides(x, x_strides);
  const ct_attr_value* axes = &call->attrs[0];
  for (int32_t d = 0; d < out->ndim; ++d) {
    int64_t a = axes->type == CT_ATTR_INT_LIST ? axes->value.ints[d] : out->ndim - 1 - d;
    if (a < 0) a += x->ndim;
    permuted[d] = out->shape[d] == 1 ? 0 : x_strides[a] * size;
  }
  ct_cu_layout layout;
  ct_cu_layout_begin(&layout, out->ndim, out->shape);
  ct_cu_layout_add(&layout, out);
  ct_cu_layout_add_strides(&layout, permuted);
  return ct_cu_copy(exec, &layout, size, ct_cu_tensor_bytes(out), ct_cu_tensor_bytes(x),
                    "permute_dims");
}

/* Each input is copied into its slab of the output along `axis`, or (axis None) into its run
 * of the flat output. */
int ct_cu_concat_run(const ct_kernel_call* call) {
  const ct_tensor* out = call->outputs[0];
  if (ct_cu_tensor_elements(out) == 0) return CT_OK;
  ct_cu_exec exec;
  int status = ct_cu_exec_for_call(call, &exec);
  if (status != CT_OK) return status;
  const int32_t size = (out->dtype.bits + 7) / 8;
  int64_t out_strides[CT_MAX_NDIM];
  ct_cu_tensor_strides(out, out_strides);
  const bool flat = call->attrs[0].type == CT_ATTR_NONE;
  int64_t axis = flat ? 0 : call->attrs[0].value.i;
  if (axis < 0) axis += out->ndim;
  int64_t position = 0;
  for (int32_t k = 0; k < call->num_inputs && status == CT_OK; ++k) {
    const ct_tensor* x = call->inputs[k];
    const int64_t elements = ct_cu_tensor_elements(x);
    if (elements == 0) continue;
    int64_t dst_strides[CT_MAX_NDIM];
    if (flat) {
      int64_t step = out_strides[0] * size;
      for (int32_t d = x->ndim - 1; d >= 0; --d) {
        dst_strides[d] = step;
        step *= x->shape[d];
      }
    } else {
      for (int32_t d = 0; d < x->ndim; ++d) dst_strides[d] = out_strides[d] * size;
    }
    ct_cu_layout layout;
    ct_cu_layout_begin(&layout, x->ndim, x->shape);
    ct_cu_layout_add_strides(&layout, dst_strides);
    ct_cu_layout_add(&layout, x);
    char* dst = ct_cu_tensor_bytes(out) + position * out_strides[flat ? 0 : axis] * size;
    status = ct_cu_copy(exec, &layout, size, dst, ct_cu_tensor_bytes(x), "concat");
    position += flat ? elements : x->shape[axis];
  }
  return status;
}

}  // namespace

int ct_cu_register_shape(void) {
  for (int t = 0; t < CT_CU_TYPE_COUNT; ++t) {
    const ct_cu_type signature[2] = {(ct_cu_type)t, (ct_cu_type)t};
    int status =
        ct_cu_register("permute_dims", signature, 2, ct_cu_permute_dims_run, nullptr, nullptr);
    if (status == CT_OK) {
      status = ct_cu_register("concat", signature, 2, ct_cu_concat_run, nullptr, nullptr);
    }
    if (status != CT_OK) return status;
  }
  return CT_OK;
}
