/* cl_shape.c - permute_dims and concat: strided copies of whole elements (moved as 1-, 2-, 4- or
 * 8-byte integers, so any dtype copies bit for bit) through one generated copy kernel. */
#include "cl_layout.h"
#include "cl_types.h"

/* Copies layout operand 1 (source) into operand 0 (destination), element by element. */
static int ct_cl_copy(const ct_cl_exec* exec, ct_cl_layout* layout, int32_t size, cl_mem dst,
                      int64_t dst_offset, cl_mem src, int64_t src_offset) {
  ct_cl_layout_collapse(layout);
  const int64_t n = layout->elements;
  if (n == 0) return CT_OK;
  const int32_t sizes[2] = {size, size};
  const bool contiguous = ct_cl_layout_contiguous(layout, sizes);
  const char* element = size == 1 ? "uchar" : size == 2 ? "ushort" : size == 4 ? "uint" : "ulong";
  ct_cl_source source;
  ct_cl_source_begin(&source, exec);
  ct_cl_source_add(&source,
                   "__kernel void ct_copy(__global char* dst, long off_dst, __global const char* "
                   "src, long off_src, __global const long* meta, int ndim, long n) {\n"
                   "  const long i = get_global_id(0);\n  if (i >= n) return;\n"
                   "  long off0 = off_dst, off1 = off_src;\n");
  if (contiguous) {
    ct_cl_source_add(&source, "  off0 += i * %d;\n  off1 += i * %d;\n", size, size);
  } else {
    ct_cl_source_index_loop(&source, 2);
  }
  ct_cl_source_add(&source, "  *AT(%s, dst, off0) = *AT(const %s, src, off1);\n}\n", element,
                   element);
  cl_mem meta = NULL;
  int status = ct_cl_layout_meta(exec, layout, &meta);
  if (status != CT_OK) return status;
  const cl_int ndim = layout->ndim;
  const ct_cl_arg args[] = {CT_CL_ARG(dst),        CT_CL_ARG(dst_offset), CT_CL_ARG(src),
                            CT_CL_ARG(src_offset), CT_CL_ARG(meta),       CT_CL_ARG(ndim),
                            CT_CL_ARG(n)};
  status =
      ct_cl_launch(exec, &source, "ct_copy", (size_t)n, args, (int)(sizeof args / sizeof *args));
  ct_cl.clReleaseMemObject(meta);
  return status;
}

static int ct_cl_permute_dims_run(const ct_kernel_call* call) {
  const ct_tensor* x = call->inputs[0];
  const ct_tensor* out = call->outputs[0];
  if (ct_cl_tensor_elements(out) == 0) return CT_OK;
  ct_cl_exec exec;
  int status = ct_cl_exec_for_call(call, &exec);
  if (status != CT_OK) return status;
  const int32_t size = (x->dtype.bits + 7) / 8;
  int64_t x_strides[CT_MAX_NDIM], permuted[CT_MAX_NDIM];
  ct_cl_tensor_strides(x, x_strides);
  const ct_attr_value* axes = &call->attrs[0];
  for (int32_t d = 0; d < out->ndim; ++d) {
    int64_t a = axes->type == CT_ATTR_INT_LIST ? axes->value.ints[d] : out->ndim - 1 - d;
    if (a < 0) a += x->ndim;
    permuted[d] = out->shape[d] == 1 ? 0 : x_strides[a] * size;
  }
  ct_cl_layout layout;
  ct_cl_layout_begin(&layout, out->ndim, out->shape);
  ct_cl_layout_add(&layout, out);
  ct_cl_layout_add_strides(&layout, permuted);
  return ct_cl_copy(&exec, &layout, size, (cl_mem)out->data, (int64_t)out->byte_offset,
                    (cl_mem)x->data, (int64_t)x->byte_offset);
}

static int ct_cl_concat_run(const ct_kernel_call* call) {
  const ct_tensor* out = call->outputs[0];
  if (ct_cl_tensor_elements(out) == 0) return CT_OK;
  ct_cl_exec exec;
  int status = ct_cl_exec_for_call(call, &exec);
  if (status != CT_OK) return status;
  const int32_t size = (out->dtype.bits + 7) / 8;
  int64_t out_strides[CT_MAX_NDIM];
  ct_cl_tensor_strides(out, out_strides);
  const bool flat = call->attrs[0].type == CT_ATTR_NONE;
  int64_t axis = flat ? 0 : call->attrs[0].value.i;
  if (axis < 0) axis += out->ndim;
  int64_t position = 0;
  for (int32_t k = 0; k < call->num_inputs && status == CT_OK; ++k) {
    const ct_tensor* x = call->inputs[k];
    const int64_t elements = ct_cl_tensor_elements(x);
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
    ct_cl_layout layout;
    ct_cl_layout_begin(&layout, x->ndim, x->shape);
    ct_cl_layout_add_strides(&layout, dst_strides);
    ct_cl_layout_add(&layout, x);
    const int64_t dst_offset =
        (int64_t)out->byte_offset + position * out_strides[flat ? 0 : axis] * size;
    status = ct_cl_copy(&exec, &layout, size, (cl_mem)out->data, dst_offset, (cl_mem)x->data,
                        (int64_t)x->byte_offset);
    position += flat ? elements : x->shape[axis];
  }
  return status;
}

int ct_cl_register_shape(void) {
  for (int t = 0; t < CT_CL_TYPE_COUNT; ++t) {
    const ct_cl_type signature[2] = {(ct_cl_type)t, (ct_cl_type)t};
    int status = ct_cl_register("permute_dims", signature, 2, ct_cl_permute_dims_run, NULL, NULL);
    if (status == CT_OK) {
      status = ct_cl_register("concat", signature, 2, ct_cl_concat_run, NULL, NULL);
    }
    if (status != CT_OK) return status;
  }
  return CT_OK;
}
