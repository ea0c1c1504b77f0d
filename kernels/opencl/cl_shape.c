/* cl_shape.c - permute_dims and concat, and their backward ops: strided copies of whole elements
 * (moved as 1-, 2-, 4- or 8-byte integers, so any dtype copies bit for bit) through one generated
 * copy kernel. */
#include "cl_layout.h"
#include "plugin_geometry.h"
#include "cl_types.h"

/* Copies layout operand 1 (source) into operand 0 (destination), element by element. */
static int ct_cl_copy(const ct_cl_exec* exec, ct_pl_layout* layout, int32_t size, cl_mem dst,
                      int64_t dst_offset, cl_mem src, int64_t src_offset) {
  const int32_t sizes[2] = {size, size};
  ct_pl_layout_collapse(layout, sizes);
  const int64_t n = layout->elements;
  if (n == 0) return CT_OK;
  const bool contiguous = layout->contiguous;
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
  if (ct_pl_tensor_elements(out) == 0) return CT_OK;
  ct_cl_exec exec;
  const int status = ct_cl_exec_for_call(call, &exec);
  if (status != CT_OK) return status;
  ct_pl_layout layout;
  ct_pl_permute_layout(call, &layout);
  return ct_cl_copy(&exec, &layout, (x->dtype.bits + 7) / 8, (cl_mem)out->data,
                    (int64_t)out->byte_offset, (cl_mem)x->data, (int64_t)x->byte_offset);
}

/* One input's slab of a concat (ct_pl_concat_each). */
typedef struct ct_cl_concat_target {
  const ct_cl_exec* exec;
  const ct_tensor* out;
} ct_cl_concat_target;

static int ct_cl_concat_copy(void* context, ct_pl_layout* layout, int64_t dst_offset,
                             const ct_tensor* x) {
  const ct_cl_concat_target* target = context;
  return ct_cl_copy(target->exec, layout, (x->dtype.bits + 7) / 8, (cl_mem)target->out->data,
                    (int64_t)target->out->byte_offset + dst_offset, (cl_mem)x->data,
                    (int64_t)x->byte_offset);
}

static int ct_cl_concat_run(const ct_kernel_call* call) {
  const ct_tensor* out = call->outputs[0];
  if (ct_pl_tensor_elements(out) == 0) return CT_OK;
  ct_cl_exec exec;
  const int status = ct_cl_exec_for_call(call, &exec);
  if (status != CT_OK) return status;
  ct_cl_concat_target target = {&exec, out};
  return ct_pl_concat_each(call, ct_cl_concat_copy, &target);
}

static int ct_cl_permute_dims_backward_run(const ct_kernel_call* call) {
  const ct_tensor* grad = call->inputs[0];
  const ct_tensor* out = call->outputs[0];
  if (ct_pl_tensor_elements(out) == 0) return CT_OK;
  ct_cl_exec exec;
  const int status = ct_cl_exec_for_call(call, &exec);
  if (status != CT_OK) return status;
  ct_pl_layout layout;
  ct_pl_permute_backward_layout(call, &layout);
  return ct_cl_copy(&exec, &layout, (out->dtype.bits + 7) / 8, (cl_mem)out->data,
                    (int64_t)out->byte_offset, (cl_mem)grad->data, (int64_t)grad->byte_offset);
}

/* One output's slab of grad_out (ct_pl_concat_backward_each). */
typedef struct ct_cl_slab_source {
  const ct_cl_exec* exec;
  const ct_tensor* grad;
} ct_cl_slab_source;

static int ct_cl_concat_backward_copy(void* context, ct_pl_layout* layout, int64_t src_offset,
                                      const ct_tensor* out) {
  const ct_cl_slab_source* source = context;
  return ct_cl_copy(source->exec, layout, (out->dtype.bits + 7) / 8, (cl_mem)out->data,
                    (int64_t)out->byte_offset, (cl_mem)source->grad->data,
                    (int64_t)source->grad->byte_offset + src_offset);
}

static int ct_cl_concat_backward_run(const ct_kernel_call* call) {
  if (ct_pl_tensor_elements(call->inputs[0]) == 0) return CT_OK;
  ct_cl_exec exec;
  const int status = ct_cl_exec_for_call(call, &exec);
  if (status != CT_OK) return status;
  ct_cl_slab_source source = {&exec, call->inputs[0]};
  return ct_pl_concat_backward_each(call, ct_cl_concat_backward_copy, &source);
}

int ct_cl_register_shape(void) {
  for (int t = 0; t < CT_PL_TYPE_COUNT; ++t) {
    const ct_pl_type signature[3] = {(ct_pl_type)t, (ct_pl_type)t, (ct_pl_type)t};
    int status = ct_cl_register("permute_dims", signature, 2, ct_cl_permute_dims_run, NULL, NULL);
    if (status == CT_OK) {
      status = ct_cl_register("concat", signature, 2, ct_cl_concat_run, NULL, NULL);
    }
    /* the backward ops: the float dtypes, as every gradient */
    const bool is_float = t == CT_PL_F16 || t == CT_PL_F32 || t == CT_PL_F64;
    if (status == CT_OK && is_float) {
      status = ct_cl_register("permute_dims_backward", signature, 2,
                              ct_cl_permute_dims_backward_run, NULL, NULL);
    }
    if (status == CT_OK && is_float) {
      status =
          ct_cl_register("concat_backward", signature, 3, ct_cl_concat_backward_run, NULL, NULL);
    }
    if (status != CT_OK) return status;
  }
  return CT_OK;
}
