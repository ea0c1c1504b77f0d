/* cl_softmax.c - softmax and log_softmax along an axis: one work item per lane (max, then the
 * sum of exp(x - max), then the outputs), computed in float for float16/float32, double for
 * float64; the sum accumulates in double where the device has it (as the CPU backend). */
#include "cl_layout.h"
#include "cl_types.h"

static int ct_cl_softmax_run(const ct_kernel_call* call) {
  const bool log_form = call->kernel_data != NULL;
  const ct_tensor* x = call->inputs[0];
  const ct_tensor* out = call->outputs[0];
  if (ct_pl_tensor_elements(out) == 0) return CT_OK;
  ct_cl_exec exec;
  int status = ct_cl_exec_for_call(call, &exec);
  if (status != CT_OK) return status;
  int64_t axis = x->ndim ? call->attrs[0].value.i : 0;
  if (axis < 0) axis += x->ndim;
  const int64_t extent = x->ndim ? x->shape[axis] : 1;
  const int64_t out_step = ct_pl_byte_stride(out, (int32_t)axis);
  const int64_t x_step = ct_pl_byte_stride(x, (int32_t)axis);
  ct_pl_layout layout;
  ct_pl_lane_layout(&layout, x, (int32_t)axis);
  ct_pl_layout_add(&layout, out);
  ct_pl_layout_add(&layout, x);
  ct_pl_layout_collapse(&layout, NULL);
  const int64_t lanes = layout.elements;

  const ct_cl_type_info* t = &ct_cl_types[ct_pl_type_of(x->dtype)];
  ct_cl_source source;
  ct_cl_source_begin(&source, &exec);
  ct_cl_source_add(&source, "#define T %s\n#define TAG %s\n#define ACC %s\n", t->compute, t->tag,
                   exec.device->has_fp64 ? "double" : "float");
  ct_cl_source_add(
      &source,
      "__kernel void ct_softmax(__global char* out, long off_out, __global const char* x, "
      "long off_x, __global const long* meta, int ndim, long n, long extent, long out_step, "
      "long x_step) {\n"
      "  const long i = get_global_id(0);\n  if (i >= n) return;\n"
      "  long off0 = off_out, off1 = off_x;\n");
  ct_cl_source_index_loop(&source, 2);
  ct_cl_source_add(
      &source,
      "  T high = -INFINITY;\n"
      "  for (long k = 0; k < extent; ++k) {\n"
      "    const T v = CAT(LD_, TAG)(x, off1 + k * x_step);\n"
      "    if (v > high || v != v) high = v;\n    if (high != high) break;\n  }\n"
      "  ACC total = 0;\n"
      "  for (long k = 0; k < extent; ++k) total += (ACC)exp(CAT(LD_, TAG)(x, off1 + k * x_step) - "
      "high);\n"
      "  for (long k = 0; k < extent; ++k) {\n"
      "    const T v = CAT(LD_, TAG)(x, off1 + k * x_step) - high;\n"
      "    CAT(ST_, TAG)(out, off0 + k * out_step, %s);\n  }\n}\n",
      log_form ? "v - (T)log(total)" : "exp(v) / (T)total");
  cl_mem meta = NULL;
  status = ct_cl_layout_meta(&exec, &layout, &meta);
  if (status != CT_OK) return status;
  CT_CL_TENSOR_ARGS(out_buffer, off_out, out);
  CT_CL_TENSOR_ARGS(x_buffer, off_x, x);
  const cl_int ndim = layout.ndim;
  const ct_cl_arg args[] = {CT_CL_ARG(out_buffer), CT_CL_ARG(off_out), CT_CL_ARG(x_buffer),
                            CT_CL_ARG(off_x),      CT_CL_ARG(meta),    CT_CL_ARG(ndim),
                            CT_CL_ARG(lanes),      CT_CL_ARG(extent),  CT_CL_ARG(out_step),
                            CT_CL_ARG(x_step)};
  status = ct_cl_launch(&exec, &source, "ct_softmax", (size_t)lanes, args,
                        (int)(sizeof args / sizeof *args));
  ct_cl.clReleaseMemObject(meta);
  return status;
}

int ct_cl_register_softmax(void) {
  static const int log_marker = 1;
  const ct_pl_type floats[] = {CT_PL_F16, CT_PL_F32, CT_PL_F64};
  for (int t = 0; t < 3; ++t) {
    const ct_pl_type signature[2] = {floats[t], floats[t]};
    int status = ct_cl_register("softmax", signature, 2, ct_cl_softmax_run, NULL, NULL);
    if (status == CT_OK) {
      status = ct_cl_register("log_softmax", signature, 2, ct_cl_softmax_run, NULL, &log_marker);
    }
    if (status != CT_OK) return status;
  }
  return CT_OK;
}
