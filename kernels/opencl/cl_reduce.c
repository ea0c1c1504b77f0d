/* cl_reduce.c - reductions (sum, prod, mean, max, min, any, all, argmax, argmin, vector_norm): one
 * work item
 * per output element walks its reduced sub-space in logical row-major order (so argmax's index
 * is NumPy's flattened index), and sum_to_shape through the sum kernel. Float sums and means
 * accumulate in double where the device has it (float otherwise), with Kahan's compensation;
 * integer sums and products wrap in 64 bits. */
#include <math.h>
#include <string.h>

#include "cl_layout.h"
#include "plugin_geometry.h"
#include "cl_types.h"

/* One reduction: accumulator type per input class ("V" = the input's compute type, "ACCF" =
 * the float accumulator), initial value, step (reads v, j; updates acc and idx) and result. */
typedef struct ct_cl_reduction {
  const char* name;
  const char* float_acc;
  const char* int_acc;
  const char* init;
  const char* step;
  const char* result;
  bool index_attr; /* the axis attribute is one int (argmax), not a list */
} ct_cl_reduction;

static const ct_cl_reduction ct_cl_reductions[] = {
    {"sum", "ACCF", "long", "0", "ACC_SUM(v);", "acc", false},
    {"prod", "ACCF", "long", "1", "acc = ACC_MUL(acc, v);", "acc", false},
    {"mean", "ACCF", "ACCF", "0", "KAHAN_ADD(v);", "acc / (ACCF)count", false},
    {"max", "V", "V", "0", "if (j == 0 || (acc == acc && (v > acc || v != v))) acc = v;", "acc",
     false},
    {"min", "V", "V", "0", "if (j == 0 || (acc == acc && (v < acc || v != v))) acc = v;", "acc",
     false},
    {"any", "int", "int", "0", "acc |= (v != 0);", "acc", false},
    {"all", "int", "int", "1", "acc &= (v != 0);", "acc", false},
    {"argmax", "V", "V", "0",
     "if (j == 0 || (acc == acc && (v > acc || v != v))) { acc = v; idx = j; }", "idx", true},
    {"argmin", "V", "V", "0",
     "if (j == 0 || (acc == acc && (v < acc || v != v))) { acc = v; idx = j; }", "idx", true},
};

static int ct_cl_reduce_run(const ct_kernel_call* call) {
  const ct_cl_reduction* r = call->kernel_data;
  const ct_tensor* x = call->inputs[0];
  const ct_tensor* out = call->outputs[0];
  const int64_t n = ct_pl_tensor_elements(out);
  if (n == 0) return CT_OK;
  ct_cl_exec exec;
  int status = ct_cl_exec_for_call(call, &exec);
  if (status != CT_OK) return status;

  const ct_pl_type in_type = (ct_pl_type)ct_pl_type_of(x->dtype);
  const ct_pl_type out_type = (ct_pl_type)ct_pl_type_of(out->dtype);
  ct_pl_layout kept_layout, reduced_layout;
  const int64_t count =
      ct_pl_reduce_layouts(call, r->index_attr, false, &kept_layout, &reduced_layout);

  const ct_cl_type_info* in = &ct_cl_types[in_type];
  const char* acc_float = exec.device->has_fp64 ? "double" : "float";
  ct_cl_source source;
  ct_cl_source_begin(&source, &exec);
  ct_cl_source_add(&source, "#define V %s\n#define ACCF %s\n", in->compute, acc_float);
  ct_cl_source_add(&source, "#define ACC_ADD(a, v) %s\n#define ACC_MUL(a, v) %s\n",
                   ct_pl_type_is_float(in_type) ? "((a) + (ACCF)(v))"
                                                : "((long)((ulong)(a) + (ulong)(long)(v)))",
                   ct_pl_type_is_float(in_type) ? "((a) * (ACCF)(v))"
                                                : "((long)((ulong)(a) * (ulong)(long)(v)))");
  /* Float sums and means add with Kahan's compensation (comp carries the low-order bits each
   * addition lost), so a long lane's error stays near one rounding instead of growing with its
   * length; integer sums wrap. */
  ct_cl_source_add(&source,
                   "#define KAHAN_ADD(v) { const ACCF y_ = (ACCF)(v) - comp; const ACCF t_ = acc "
                   "+ y_; comp = (t_ - acc) - y_; acc = t_; }\n#define ACC_SUM(v) %s\n",
                   ct_pl_type_is_float(in_type) ? "KAHAN_ADD(v)" : "acc = ACC_ADD(acc, v)");
  ct_cl_source_add(&source,
                   "__kernel void ct_reduce(__global char* out, long off_out, __global const char* "
                   "in, long off_in, __global const long* meta, int ndim, __global const long* "
                   "rmeta, int rdim, long n, long count) {\n"
                   "  const long i = get_global_id(0);\n  if (i >= n) return;\n"
                   "  long off0 = off_out, off1 = off_in;\n");
  ct_cl_source_index_loop(&source, 2);
  const char* acc_type = ct_pl_type_is_float(in_type) ? r->float_acc : r->int_acc;
  ct_cl_source_add(&source,
                   "  %s acc = %s;\n  ACCF comp = 0;\n  long idx = 0;\n"
                   "  for (long j = 0; j < count; ++j) {\n"
                   "    long rem = j, o = off1;\n"
                   "    for (int d = rdim - 1; d >= 0; --d) {\n"
                   "      const long extent = rmeta[d];\n"
                   "      o += (rem %% extent) * rmeta[rdim + d];\n      rem /= extent;\n    }\n"
                   "    const V v = LD_%s(in, o);\n    %s\n  }\n",
                   acc_type, r->init, in->tag, r->step);
  const char* cast = out_type == CT_PL_F16 ? "(float)" : "";
  ct_cl_source_add(&source, "  ST_%s(out, off0, %s(%s));\n}\n", ct_cl_types[out_type].tag, cast,
                   r->result);

  cl_mem meta = NULL, rmeta = NULL;
  status = ct_cl_layout_meta(&exec, &kept_layout, &meta);
  if (status == CT_OK) status = ct_cl_layout_meta(&exec, &reduced_layout, &rmeta);
  if (status == CT_OK) {
    cl_mem out_buffer = (cl_mem)out->data, in_buffer = (cl_mem)x->data;
    const int64_t off_out = (int64_t)out->byte_offset, off_in = (int64_t)x->byte_offset;
    const cl_int ndim = kept_layout.ndim, rdim = reduced_layout.ndim;
    const ct_cl_arg args[] = {CT_CL_ARG(out_buffer), CT_CL_ARG(off_out), CT_CL_ARG(in_buffer),
                              CT_CL_ARG(off_in),     CT_CL_ARG(meta),    CT_CL_ARG(ndim),
                              CT_CL_ARG(rmeta),      CT_CL_ARG(rdim),    CT_CL_ARG(n),
                              CT_CL_ARG(count)};
    status = ct_cl_launch(&exec, &source, "ct_reduce", (size_t)n, args,
                          (int)(sizeof args / sizeof *args));
  }
  if (meta) ct_cl.clReleaseMemObject(meta);
  if (rmeta) ct_cl.clReleaseMemObject(rmeta);
  return status;
}

/* vector_norm: one work item per output walks its lane in order, as ct_cl_reduce_run, with the
 * CPU kernel's state (vector_norm_kernels.c): the moduli's maximum or minimum, their count or
 * sum, or for other orders p a running maximum m and s = sum (a / m)^p (p > 0), s = sum a^p
 * (p < 0); once m is nan it stays (no later modulus compares above it). P is the order, a
 * constant of the program. In double where the device has it. */
static const char ct_cl_vector_norm_source[] =
    "  ACCF m = P == -INFINITY ? (ACCF)INFINITY : (ACCF)0, s = 0;\n"
    "  for (long j = 0; j < count; ++j) {\n"
    "    long rem = j, o = off1;\n"
    "    for (int d = rdim - 1; d >= 0; --d) {\n"
    "      const long extent = rmeta[d];\n"
    "      o += (rem %% extent) * rmeta[rdim + d];\n      rem /= extent;\n    }\n"
    "    const ACCF a = fabs((ACCF)LD_%s(in, o));\n"
    "    if (P == INFINITY) { if ((a > m || a != a) && m == m) m = a; }\n"
    "    else if (P == -INFINITY) { if ((a < m || a != a) && m == m) m = a; }\n"
    "    else if (P == 0) s += a != 0;\n"
    "    else if (P == 1) s += a;\n"
    "    else if (P < 0) s += pow(a, (ACCF)P);\n"
    "    else if (m == m && !(a <= m)) { const ACCF r = m / a;\n"
    "      s = 1 + s * (P == 2 ? r * r : pow(r, (ACCF)P)); m = a; }\n"
    "    else if (a == m) s += 1;\n"
    "    else { const ACCF r = a / m; s += P == 2 ? r * r : pow(r, (ACCF)P); }\n"
    "  }\n"
    "  ACCF result;\n"
    "  if (P == INFINITY || P == -INFINITY) result = m;\n"
    "  else if (P == 0 || P == 1) result = s;\n"
    "  else if (P < 0) result = pow(s, (ACCF)1 / (ACCF)P);\n"
    "  else if (m == 0) result = 0;\n"
    "  else result = m * (P == 2 ? sqrt(s) : pow(s, (ACCF)1 / (ACCF)P));\n";

static int ct_cl_vector_norm_run(const ct_kernel_call* call) {
  const ct_tensor* x = call->inputs[0];
  const ct_tensor* out = call->outputs[0];
  const int64_t n = ct_pl_tensor_elements(out);
  if (n == 0) return CT_OK;
  ct_cl_exec exec;
  int status = ct_cl_exec_for_call(call, &exec);
  if (status != CT_OK) return status;
  ct_pl_layout kept_layout, reduced_layout;
  const int64_t count = ct_pl_reduce_layouts(call, false, false, &kept_layout, &reduced_layout);
  const ct_pl_type type = (ct_pl_type)ct_pl_type_of(x->dtype);
  const ct_cl_type_info* t = &ct_cl_types[type];
  const double ord = call->attrs[2].value.f;
  ct_cl_source source;
  ct_cl_source_begin(&source, &exec);
  ct_cl_source_add(&source, "#define ACCF %s\n", exec.device->has_fp64 ? "double" : "float");
  if (ord == (double)INFINITY || ord == -(double)INFINITY) {
    ct_cl_source_add(&source, "#define P (%sINFINITY)\n", ord < 0 ? "-" : "");
  } else {
    ct_cl_source_add(&source, "#define P (%.17g)\n", ord);
  }
  ct_cl_source_add(&source,
                   "__kernel void ct_vector_norm(__global char* out, long off_out, __global const "
                   "char* in, long off_in, __global const long* meta, int ndim, __global const "
                   "long* rmeta, int rdim, long n, long count) {\n"
                   "  const long i = get_global_id(0);\n  if (i >= n) return;\n"
                   "  long off0 = off_out, off1 = off_in;\n");
  ct_cl_source_index_loop(&source, 2);
  ct_cl_source_add(&source, ct_cl_vector_norm_source, t->tag);
  ct_cl_source_add(&source, "  ST_%s(out, off0, %s(result));\n}\n", t->tag,
                   type == CT_PL_F16 ? "(float)" : "");
  cl_mem meta = NULL, rmeta = NULL;
  status = ct_cl_layout_meta(&exec, &kept_layout, &meta);
  if (status == CT_OK) status = ct_cl_layout_meta(&exec, &reduced_layout, &rmeta);
  if (status == CT_OK) {
    cl_mem out_buffer = (cl_mem)out->data, in_buffer = (cl_mem)x->data;
    const int64_t off_out = (int64_t)out->byte_offset, off_in = (int64_t)x->byte_offset;
    const cl_int ndim = kept_layout.ndim, rdim = reduced_layout.ndim;
    const ct_cl_arg args[] = {CT_CL_ARG(out_buffer), CT_CL_ARG(off_out), CT_CL_ARG(in_buffer),
                              CT_CL_ARG(off_in),     CT_CL_ARG(meta),    CT_CL_ARG(ndim),
                              CT_CL_ARG(rmeta),      CT_CL_ARG(rdim),    CT_CL_ARG(n),
                              CT_CL_ARG(count)};
    status = ct_cl_launch(&exec, &source, "ct_vector_norm", (size_t)n, args,
                          (int)(sizeof args / sizeof *args));
  }
  if (meta) ct_cl.clReleaseMemObject(meta);
  if (rmeta) ct_cl.clReleaseMemObject(rmeta);
  return status;
}

/* sum_to_shape: the sum kernel over the dims broadcasting added (plugin_geometry.h). */
static int ct_cl_sum_to_shape_run(const ct_kernel_call* call) {
  ct_pl_sum_to_shape sum;
  ct_pl_sum_to_shape_call(call, &sum);
  sum.call.kernel_data = (void*)&ct_cl_reductions[0];
  return ct_cl_reduce_run(&sum.call);
}

int ct_cl_register_reduce(void) {
  static const ct_pl_type all[] = {CT_PL_B8, CT_PL_I32, CT_PL_I64, CT_PL_F16, CT_PL_F32, CT_PL_F64};
  for (size_t k = 0; k < sizeof ct_cl_reductions / sizeof *ct_cl_reductions; ++k) {
    const ct_cl_reduction* r = &ct_cl_reductions[k];
    for (int t = 0; t < 6; ++t) {
      const ct_pl_type in = all[t];
      const bool is_float = ct_pl_type_is_float(in);
      ct_pl_type out = in;
      if (strcmp(r->name, "sum") == 0 || strcmp(r->name, "prod") == 0) {
        out = is_float ? in : CT_PL_I64;
      } else if (strcmp(r->name, "mean") == 0) {
        out = is_float ? in : CT_PL_F64;
      } else if (strcmp(r->name, "any") == 0 || strcmp(r->name, "all") == 0) {
        out = CT_PL_B8;
      } else if (r->index_attr) {
        out = CT_PL_I64;
      }
      const ct_pl_type signature[2] = {in, out};
      const int status = ct_cl_register(r->name, signature, 2, ct_cl_reduce_run, NULL, r);
      if (status != CT_OK) return status;
    }
  }
  static const ct_pl_type floats[] = {CT_PL_F16, CT_PL_F32, CT_PL_F64};
  for (int t = 0; t < 3; ++t) {
    const ct_pl_type signature[3] = {floats[t], floats[t], floats[t]};
    int status = ct_cl_register("sum_to_shape", signature, 3, ct_cl_sum_to_shape_run, NULL, NULL);
    if (status == CT_OK) {
      status = ct_cl_register("vector_norm", signature, 2, ct_cl_vector_norm_run, NULL, NULL);
    }
    if (status != CT_OK) return status;
  }
  return CT_OK;
}
