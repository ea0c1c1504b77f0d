/* cl_norm_backward.c - softmax_backward, log_softmax_backward and layer_norm_backward, the
 * backward ops of the forwards of cl_softmax.c and cl_norm.c, computed as the CPU backend does:
 * sums in double where the device has it, element-wise steps in float for float16/float32 and
 * double for float64.
 *
 * softmax: one work item per lane (the sum, then the outputs). layer_norm: one work item per
 * row recomputes the row's statistics, writes grad_input and keeps the row's mean and rstd in a
 * scratch buffer; then one work item per element of normalized_shape sums grad_weight and
 * grad_bias over the rows, in row order. */
#include "cl_layout.h"
#include "cl_types.h"

static int ct_cl_softmax_backward_run(const ct_kernel_call* call) {
  const bool log_form = call->kernel_data != NULL;
  const ct_tensor* g = call->inputs[0];
  const ct_tensor* y = call->inputs[1];
  const ct_tensor* gx = call->outputs[0];
  if (ct_pl_tensor_elements(gx) == 0) return CT_OK;
  ct_cl_exec exec;
  int status = ct_cl_exec_for_call(call, &exec);
  if (status != CT_OK) return status;
  int64_t axis = y->ndim ? call->attrs[0].value.i : 0;
  if (axis < 0) axis += y->ndim;
  const int64_t extent = y->ndim ? y->shape[axis] : 1;
  const int64_t gx_step = ct_pl_byte_stride(gx, (int32_t)axis);
  const int64_t g_step = ct_pl_byte_stride(g, (int32_t)axis);
  const int64_t y_step = ct_pl_byte_stride(y, (int32_t)axis);
  ct_pl_layout layout;
  ct_pl_lane_layout(&layout, y, (int32_t)axis);
  ct_pl_layout_add(&layout, gx);
  ct_pl_layout_add(&layout, g);
  ct_pl_layout_add(&layout, y);
  ct_pl_layout_collapse(&layout, NULL);
  const int64_t lanes = layout.elements;

  const ct_cl_type_info* t = &ct_cl_types[ct_pl_type_of(y->dtype)];
  ct_cl_source source;
  ct_cl_source_begin(&source, &exec);
  ct_cl_source_add(&source, "#define T %s\n#define TAG %s\n#define ACC %s\n", t->compute, t->tag,
                   exec.device->has_fp64 ? "double" : "float");
  ct_cl_source_add(&source,
                   "__kernel void ct_softmax_backward(__global char* gx, long off_gx, "
                   "__global const char* g, long off_g, __global const char* y, long off_y, "
                   "__global const long* meta, int ndim, long n, long extent, long gx_step, "
                   "long g_step, long y_step) {\n"
                   "  const long i = get_global_id(0);\n  if (i >= n) return;\n"
                   "  long off0 = off_gx, off1 = off_g, off2 = off_y;\n");
  ct_cl_source_index_loop(&source, 3);
  ct_cl_source_add(&source,
                   "  ACC total = 0;\n"
                   "  for (long k = 0; k < extent; ++k) {\n"
                   "    const ACC gv = (ACC)CAT(LD_, TAG)(g, off1 + k * g_step);\n"
                   "    total += %s;\n  }\n"
                   "  const T s = (T)total;\n"
                   "  for (long k = 0; k < extent; ++k) {\n"
                   "    const T gv = CAT(LD_, TAG)(g, off1 + k * g_step);\n"
                   "    const T yv = CAT(LD_, TAG)(y, off2 + k * y_step);\n"
                   "    CAT(ST_, TAG)(gx, off0 + k * gx_step, %s);\n  }\n}\n",
                   log_form ? "gv" : "gv * (ACC)CAT(LD_, TAG)(y, off2 + k * y_step)",
                   log_form ? "gv - exp(yv) * s" : "yv * (gv - s)");
  cl_mem meta = NULL;
  status = ct_cl_layout_meta(&exec, &layout, &meta);
  if (status != CT_OK) return status;
  CT_CL_TENSOR_ARGS(gx_buffer, off_gx, gx);
  CT_CL_TENSOR_ARGS(g_buffer, off_g, g);
  CT_CL_TENSOR_ARGS(y_buffer, off_y, y);
  const cl_int ndim = layout.ndim;
  const ct_cl_arg args[] = {CT_CL_ARG(gx_buffer), CT_CL_ARG(off_gx),   CT_CL_ARG(g_buffer),
                            CT_CL_ARG(off_g),     CT_CL_ARG(y_buffer), CT_CL_ARG(off_y),
                            CT_CL_ARG(meta),      CT_CL_ARG(ndim),     CT_CL_ARG(lanes),
                            CT_CL_ARG(extent),    CT_CL_ARG(gx_step),  CT_CL_ARG(g_step),
                            CT_CL_ARG(y_step)};
  status = ct_cl_launch(&exec, &source, "ct_softmax_backward", (size_t)lanes, args,
                        (int)(sizeof args / sizeof *args));
  ct_cl.clReleaseMemObject(meta);
  return status;
}

/* Byte strides of the trailing `inner` dims of t (zero for an absent t). */
static void ct_cl_trailing_strides(const ct_tensor* t, int32_t inner, int64_t* strides) {
  for (int32_t d = 0; d < inner; ++d) strides[d] = 0;
  if (!t) return;
  int64_t all[CT_MAX_NDIM];
  ct_pl_tensor_strides(t, all);
  for (int32_t d = 0; d < inner; ++d) {
    strides[d] = all[t->ndim - inner + d] * ((t->dtype.bits + 7) / 8);
  }
}

static int ct_cl_layer_norm_backward_run(const ct_kernel_call* call) {
  const ct_tensor* g = call->inputs[0];
  const ct_tensor* x = call->inputs[1];
  const ct_tensor* weight = call->inputs[2];
  const ct_tensor* gx = call->outputs[0];
  const ct_tensor* gw = call->outputs[1];
  const ct_tensor* gb = call->outputs[2];
  const int64_t count = ct_pl_tensor_elements(gw);
  if (count == 0) return CT_OK;
  ct_cl_exec exec;
  int status = ct_cl_exec_for_call(call, &exec);
  if (status != CT_OK) return status;
  const int32_t inner_ndim = (int32_t)call->attrs[0].count;
  const int32_t outer_ndim = x->ndim - inner_ndim;
  const double eps = call->attrs[1].value.f;

  /* Rows: the leading dims of (gx, x, g), not collapsed away from the row index order. Row
   * elements: the trailing dims of (gx, x, g, w); params: the same dims of (gw, gb). */
  ct_pl_layout rows, row, params;
  ct_pl_layout_begin(&rows, x->ndim, x->shape);
  for (int32_t d = outer_ndim; d < x->ndim; ++d) rows.shape[d] = 1;
  ct_pl_layout_add(&rows, gx);
  ct_pl_layout_add(&rows, x);
  ct_pl_layout_add(&rows, g);
  rows.elements = 1;
  for (int32_t d = 0; d < outer_ndim; ++d) rows.elements *= x->shape[d];
  ct_pl_layout_collapse(&rows, NULL);
  const int64_t n_rows = rows.elements;
  ct_pl_layout_begin(&row, inner_ndim, x->shape + outer_ndim);
  ct_pl_layout_begin(&params, inner_ndim, x->shape + outer_ndim);
  const ct_tensor* row_operands[4] = {gx, x, g, weight};
  const ct_tensor* param_operands[4] = {gw, gb, x, g};
  for (int k = 0; k < 4; ++k) {
    int64_t strides[CT_MAX_NDIM];
    ct_cl_trailing_strides(row_operands[k], inner_ndim, strides);
    ct_pl_layout_add_strides(&row, strides);
    ct_cl_trailing_strides(param_operands[k], inner_ndim, strides);
    ct_pl_layout_add_strides(&params, strides);
  }
  ct_pl_layout_collapse(&row, NULL);
  ct_pl_layout_collapse(&params, NULL);

  const ct_cl_type_info* t = &ct_cl_types[ct_pl_type_of(x->dtype)];
  const char* acc = exec.device->has_fp64 ? "double" : "float";
  ct_cl_source source;
  ct_cl_source_begin(&source, &exec);
  ct_cl_source_add(&source, "#define T %s\n#define TAG %s\n#define ACC %s\n", t->compute, t->tag,
                   acc);
  /* Kernel 1: per row. */
  ct_cl_source_add(&source,
                   "__kernel void ct_layer_norm_backward_rows(__global char* gx, long off_gx, "
                   "__global const char* x, long off_x, __global const char* g, long off_g, "
                   "__global const char* w, long off_w, int has_w, __global ACC* stats, "
                   "__global const long* meta, int ndim, __global const long* rmeta, int rdim, "
                   "long n, long count, ACC eps) {\n"
                   "  const long i = get_global_id(0);\n  if (i >= n) return;\n"
                   "  long off0 = off_gx, off1 = off_x, off2 = off_g;\n");
  ct_cl_source_index_loop(&source, 3);
  static const char element_offsets[] = "    long e0 = off0, e1 = off1, e2 = off2, e3 = off_w;\n";
  ct_cl_source_add(&source, "  ACC total = 0;\n  for (long j = 0; j < count; ++j) {\n%s",
                   element_offsets);
  ct_cl_source_index_loop_named(&source, "j", "rmeta", "rdim", "e", 4);
  ct_cl_source_add(&source,
                   "    total += (ACC)CAT(LD_, TAG)(x, e1);\n  }\n"
                   "  const ACC mean = total / (ACC)count;\n"
                   "  ACC squares = 0, sa = 0, sb = 0;\n"
                   "  for (long j = 0; j < count; ++j) {\n%s",
                   element_offsets);
  ct_cl_source_index_loop_named(&source, "j", "rmeta", "rdim", "e", 4);
  ct_cl_source_add(&source,
                   "    const ACC d = (ACC)CAT(LD_, TAG)(x, e1) - mean;\n"
                   "    ACC gw = (ACC)CAT(LD_, TAG)(g, e2);\n"
                   "    if (has_w) gw *= (ACC)CAT(LD_, TAG)(w, e3);\n"
                   "    squares += d * d;\n    sa += gw;\n    sb += gw * d;\n  }\n"
                   "  const ACC rstd = 1 / sqrt(squares / (ACC)count + eps);\n"
                   "  const ACC mb = rstd * sb / (ACC)count;\n"
                   "  const T m = (T)mean, r = (T)rstd, c1 = (T)(-rstd * mb),\n"
                   "          c0 = (T)(-rstd * sa / (ACC)count);\n"
                   "  stats[2 * i] = mean;\n  stats[2 * i + 1] = rstd;\n"
                   "  for (long j = 0; j < count; ++j) {\n%s",
                   element_offsets);
  ct_cl_source_index_loop_named(&source, "j", "rmeta", "rdim", "e", 4);
  ct_cl_source_add(&source,
                   "    const T gv = CAT(LD_, TAG)(g, e2);\n"
                   "    const T xhat = (CAT(LD_, TAG)(x, e1) - m) * r;\n"
                   "    const T gwv = has_w ? gv * CAT(LD_, TAG)(w, e3) : gv;\n"
                   "    CAT(ST_, TAG)(gx, e0, r * gwv + (c1 * xhat + c0));\n  }\n}\n");
  /* Kernel 2: per element of normalized_shape, over the rows in order. */
  ct_cl_source_add(&source,
                   "__kernel void ct_layer_norm_backward_params(__global char* gw, long off_gw, "
                   "__global char* gb, long off_gb, __global const char* x, long off_x, "
                   "__global const char* g, long off_g, __global const ACC* stats, "
                   "__global const long* meta, int ndim, __global const long* pmeta, int pdim, "
                   "long n, long count) {\n"
                   "  const long j = get_global_id(0);\n  if (j >= count) return;\n"
                   "  long p0 = off_gw, p1 = off_gb, p2 = off_x, p3 = off_g;\n");
  ct_cl_source_index_loop_named(&source, "j", "pmeta", "pdim", "p", 4);
  ct_cl_source_add(&source,
                   "  ACC sw = 0, sg = 0;\n"
                   "  for (long i = 0; i < n; ++i) {\n"
                   "    long off0 = 0, off1 = p2, off2 = p3;\n");
  ct_cl_source_index_loop(&source, 3);
  ct_cl_source_add(&source,
                   "    const T m = (T)stats[2 * i], r = (T)stats[2 * i + 1];\n"
                   "    const T gv = CAT(LD_, TAG)(g, off2);\n"
                   "    const T xhat = (CAT(LD_, TAG)(x, off1) - m) * r;\n"
                   "    sw += (ACC)(gv * xhat);\n    sg += (ACC)gv;\n  }\n"
                   "  CAT(ST_, TAG)(gw, p0, (T)sw);\n  CAT(ST_, TAG)(gb, p1, (T)sg);\n}\n");

  cl_mem meta = NULL, rmeta = NULL, pmeta = NULL, stats = NULL;
  const size_t acc_size = exec.device->has_fp64 ? sizeof(double) : sizeof(float);
  status = ct_cl_layout_meta(&exec, &rows, &meta);
  if (status == CT_OK) status = ct_cl_layout_meta(&exec, &row, &rmeta);
  if (status == CT_OK) status = ct_cl_layout_meta(&exec, &params, &pmeta);
  if (status == CT_OK) {
    status = ct_cl_scratch_array(&exec, n_rows > 0 ? n_rows : 1, 2 * acc_size, &stats);
  }
  if (status == CT_OK) {
    CT_CL_TENSOR_ARGS(gx_buffer, off_gx, gx);
    CT_CL_TENSOR_ARGS(x_buffer, off_x, x);
    CT_CL_TENSOR_ARGS(g_buffer, off_g, g);
    CT_CL_TENSOR_ARGS(gw_buffer, off_gw, gw);
    CT_CL_TENSOR_ARGS(gb_buffer, off_gb, gb);
    /* An absent weight passes x's buffer, never read (has_w is 0). */
    cl_mem w_buffer = weight ? (cl_mem)weight->data : x_buffer;
    const int64_t off_w = weight ? (int64_t)weight->byte_offset : 0;
    const cl_int has_w = weight != NULL;
    const cl_int ndim = rows.ndim, rdim = row.ndim, pdim = params.ndim;
    const double eps_d = eps;
    const float eps_f = (float)eps;
    if (n_rows > 0) {
      const ct_cl_arg args[] = {CT_CL_ARG(gx_buffer),
                                CT_CL_ARG(off_gx),
                                CT_CL_ARG(x_buffer),
                                CT_CL_ARG(off_x),
                                CT_CL_ARG(g_buffer),
                                CT_CL_ARG(off_g),
                                CT_CL_ARG(w_buffer),
                                CT_CL_ARG(off_w),
                                CT_CL_ARG(has_w),
                                CT_CL_ARG(stats),
                                CT_CL_ARG(meta),
                                CT_CL_ARG(ndim),
                                CT_CL_ARG(rmeta),
                                CT_CL_ARG(rdim),
                                CT_CL_ARG(n_rows),
                                CT_CL_ARG(count),
                                exec.device->has_fp64 ? CT_CL_ARG(eps_d) : CT_CL_ARG(eps_f)};
      status = ct_cl_launch(&exec, &source, "ct_layer_norm_backward_rows", (size_t)n_rows, args,
                            (int)(sizeof args / sizeof *args));
    }
    if (status == CT_OK) {
      const ct_cl_arg args[] = {CT_CL_ARG(gw_buffer), CT_CL_ARG(off_gw),   CT_CL_ARG(gb_buffer),
                                CT_CL_ARG(off_gb),    CT_CL_ARG(x_buffer), CT_CL_ARG(off_x),
                                CT_CL_ARG(g_buffer),  CT_CL_ARG(off_g),    CT_CL_ARG(stats),
                                CT_CL_ARG(meta),      CT_CL_ARG(ndim),     CT_CL_ARG(pmeta),
                                CT_CL_ARG(pdim),      CT_CL_ARG(n_rows),   CT_CL_ARG(count)};
      status = ct_cl_launch(&exec, &source, "ct_layer_norm_backward_params", (size_t)count, args,
                            (int)(sizeof args / sizeof *args));
    }
  }
  if (meta) ct_cl.clReleaseMemObject(meta);
  if (rmeta) ct_cl.clReleaseMemObject(rmeta);
  if (pmeta) ct_cl.clReleaseMemObject(pmeta);
  if (stats) ct_cl.clReleaseMemObject(stats);
  return status;
}

int ct_cl_register_norm_backward(void) {
  static const int log_marker = 1;
  const ct_pl_type floats[] = {CT_PL_F16, CT_PL_F32, CT_PL_F64};
  for (int t = 0; t < 3; ++t) {
    const ct_pl_type f = floats[t];
    const ct_pl_type three[3] = {f, f, f};
    const ct_pl_type six[6] = {f, f, f, f, f, f};
    int status =
        ct_cl_register("softmax_backward", three, 3, ct_cl_softmax_backward_run, NULL, NULL);
    if (status == CT_OK) {
      status = ct_cl_register("log_softmax_backward", three, 3, ct_cl_softmax_backward_run, NULL,
                              &log_marker);
    }
    if (status == CT_OK) {
      status =
          ct_cl_register("layer_norm_backward", six, 6, ct_cl_layer_norm_backward_run, NULL, NULL);
    }
    if (status != CT_OK) return status;
  }
  return CT_OK;
}
