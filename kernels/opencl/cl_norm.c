/* cl_norm.c - layer_norm: one work item per normalised row (the trailing normalized_shape dims),
 * statistics in double where the device has it, float16 computed in float; optional weight and
 * bias broadcast over the rows. */
#include "cl_layout.h"
#include "cl_types.h"

static int ct_cl_layer_norm_run(const ct_kernel_call* call) {
  const ct_tensor* x = call->inputs[0];
  const ct_tensor* weight = call->inputs[1];
  const ct_tensor* bias = call->num_inputs > 2 ? call->inputs[2] : NULL;
  const ct_tensor* out = call->outputs[0];
  if (ct_pl_tensor_elements(out) == 0) return CT_OK;
  ct_cl_exec exec;
  int status = ct_cl_exec_for_call(call, &exec);
  if (status != CT_OK) return status;
  const int32_t inner_ndim = (int32_t)call->attrs[0].count;
  const int32_t outer_ndim = x->ndim - inner_ndim;
  const double eps = call->attrs[1].value.f;

  /* Rows: the leading dims of (out, x). Row elements: the trailing dims of (out, x, w, b). */
  ct_pl_layout rows, row;
  ct_pl_layout_begin(&rows, x->ndim, x->shape);
  for (int32_t d = outer_ndim; d < x->ndim; ++d) rows.shape[d] = 1;
  ct_pl_layout_add(&rows, out);
  ct_pl_layout_add(&rows, x);
  rows.elements = 1;
  for (int32_t d = 0; d < outer_ndim; ++d) rows.elements *= x->shape[d];
  ct_pl_layout_collapse(&rows, NULL);
  ct_pl_layout_begin(&row, inner_ndim, x->shape + outer_ndim);
  const ct_tensor* row_operands[4] = {out, x, weight, bias};
  for (int k = 0; k < 4; ++k) {
    int64_t strides[CT_MAX_NDIM] = {0};
    const ct_tensor* t = row_operands[k];
    if (t) {
      int64_t all[CT_MAX_NDIM];
      ct_pl_tensor_strides(t, all);
      for (int32_t d = 0; d < inner_ndim; ++d) {
        strides[d] = all[t->ndim - inner_ndim + d] * ((t->dtype.bits + 7) / 8);
      }
    }
    ct_pl_layout_add_strides(&row, strides);
  }
  ct_pl_layout_collapse(&row, NULL);
  const int64_t count = row.elements;

  const ct_cl_type_info* t = &ct_cl_types[ct_pl_type_of(x->dtype)];
  ct_cl_source source;
  ct_cl_source_begin(&source, &exec);
  ct_cl_source_add(&source, "#define T %s\n#define TAG %s\n#define ACC %s\n", t->compute, t->tag,
                   exec.device->has_fp64 ? "double" : "float");
  ct_cl_source_add(&source,
                   "__kernel void ct_layer_norm(__global char* out, long off_out, __global const "
                   "char* x, long off_x, __global const char* w, long off_w, int has_w, "
                   "__global const char* b, long off_b, int has_b, __global const long* meta, "
                   "int ndim, __global const long* rmeta, int rdim, long n, long count, ACC eps) "
                   "{\n  const long i = get_global_id(0);\n  if (i >= n) return;\n"
                   "  long off0 = off_out, off1 = off_x;\n");
  ct_cl_source_index_loop(&source, 2);
  static const char element_offsets[] = "    long e0 = off0, e1 = off1, e2 = off_w, e3 = off_b;\n";
  ct_cl_source_add(&source, "  ACC total = 0;\n  for (long j = 0; j < count; ++j) {\n%s",
                   element_offsets);
  ct_cl_source_index_loop_named(&source, "j", "rmeta", "rdim", "e", 4);
  ct_cl_source_add(&source,
                   "    total += (ACC)CAT(LD_, TAG)(x, e1);\n  }\n"
                   "  const ACC mean = total / (ACC)count;\n  ACC squares = 0;\n"
                   "  for (long j = 0; j < count; ++j) {\n%s",
                   element_offsets);
  ct_cl_source_index_loop_named(&source, "j", "rmeta", "rdim", "e", 4);
  ct_cl_source_add(&source,
                   "    const ACC d = (ACC)CAT(LD_, TAG)(x, e1) - mean;\n    squares += d * d;\n"
                   "  }\n  const T m = (T)mean;\n"
                   "  const T rstd = (T)(1 / sqrt(squares / (ACC)count + eps));\n"
                   "  for (long j = 0; j < count; ++j) {\n%s",
                   element_offsets);
  ct_cl_source_index_loop_named(&source, "j", "rmeta", "rdim", "e", 4);
  ct_cl_source_add(&source,
                   "    T y = (CAT(LD_, TAG)(x, e1) - m) * rstd;\n"
                   "    if (has_w) y *= CAT(LD_, TAG)(w, e2);\n"
                   "    if (has_b) y += CAT(LD_, TAG)(b, e3);\n"
                   "    CAT(ST_, TAG)(out, e0, y);\n  }\n}\n");

  cl_mem meta = NULL, rmeta = NULL;
  status = ct_cl_layout_meta(&exec, &rows, &meta);
  if (status == CT_OK) status = ct_cl_layout_meta(&exec, &row, &rmeta);
  if (status == CT_OK) {
    CT_CL_TENSOR_ARGS(out_buffer, off_out, out);
    CT_CL_TENSOR_ARGS(x_buffer, off_x, x);
    /* An absent operand passes x's buffer, never read (has_w / has_b are 0). */
    cl_mem w_buffer = weight ? (cl_mem)weight->data : x_buffer;
    cl_mem b_buffer = bias ? (cl_mem)bias->data : x_buffer;
    const int64_t off_w = weight ? (int64_t)weight->byte_offset : 0;
    const int64_t off_b = bias ? (int64_t)bias->byte_offset : 0;
    const cl_int has_w = weight != NULL, has_b = bias != NULL;
    const cl_int ndim = rows.ndim, rdim = row.ndim;
    const int64_t n = rows.elements;
    const double eps_d = eps;
    const float eps_f = (float)eps;
    const ct_cl_arg args[] = {CT_CL_ARG(out_buffer),
                              CT_CL_ARG(off_out),
                              CT_CL_ARG(x_buffer),
                              CT_CL_ARG(off_x),
                              CT_CL_ARG(w_buffer),
                              CT_CL_ARG(off_w),
                              CT_CL_ARG(has_w),
                              CT_CL_ARG(b_buffer),
                              CT_CL_ARG(off_b),
                              CT_CL_ARG(has_b),
                              CT_CL_ARG(meta),
                              CT_CL_ARG(ndim),
                              CT_CL_ARG(rmeta),
                              CT_CL_ARG(rdim),
                              CT_CL_ARG(n),
                              CT_CL_ARG(count),
                              exec.device->has_fp64 ? CT_CL_ARG(eps_d) : CT_CL_ARG(eps_f)};
    status = ct_cl_launch(&exec, &source, "ct_layer_norm", (size_t)n, args,
                          (int)(sizeof args / sizeof *args));
  }
  if (meta) ct_cl.clReleaseMemObject(meta);
  if (rmeta) ct_cl.clReleaseMemObject(rmeta);
  return status;
}

int ct_cl_register_norm(void) {
  const ct_pl_type floats[] = {CT_PL_F16, CT_PL_F32, CT_PL_F64};
  for (int t = 0; t < 3; ++t) {
    const ct_pl_type signature[4] = {floats[t], floats[t], floats[t], floats[t]};
    const int status = ct_cl_register("layer_norm", signature, 4, ct_cl_layer_norm_run, NULL, NULL);
    if (status != CT_OK) return status;
  }
  return CT_OK;
}
