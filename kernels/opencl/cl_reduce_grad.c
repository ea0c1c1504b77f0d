/* cl_reduce_grad.c - backward operators of the OpenCL forwards sum, mean, prod, max, min and
 * matmul.
 *
 * Reductions: one work item per group (an element of grad_out), as the forward reductions have
 * one per output: a first pass over the group gathers what the formula needs (ties of the
 * maximum, the zeros and the product of the other elements), a second writes grad_x; the same
 * formulas as the CPU kernels (reduce_grad_kernels.c), accumulated in double where the device
 * has it. matmul_backward: one work item per element of each cotangent, a strided dot product
 * over the contracted dim and the batch dims its operand was broadcast along
 * (plugin_grad_geometry.h). */
#include <math.h>
#include <string.h>

#include "cl_layout.h"
#include "cl_types.h"
#include "plugin_grad_geometry.h"

/* One reduction's backward: pass 1 over the group (reads xv; updates cnt, zeros, prod), then the
 * value stored for each element (reads xv, gv, ov, cnt, zeros, prod, count). */
typedef struct ct_cl_rgrad {
  const char* name;
  bool has_out;
  const char* pass1; /* NULL: no first pass */
  const char* value;
} ct_cl_rgrad;

static const ct_cl_rgrad ct_cl_rgrads[] = {
    {"sum_backward", false, NULL, "gv"},
    {"mean_backward", false, NULL, "gv / (ACCF)count"},
    {"prod_backward", false, "if (xv == 0) ++zeros; else prod *= xv;",
     "zeros == 0 ? gv * (prod / xv) : (zeros == 1 && xv == 0 ? gv * prod : (ACCF)0)"},
    {"max_backward", true, "cnt += (ov != ov) ? (xv != xv) : (xv == ov);",
     "((ov != ov) ? (xv != xv) : (xv == ov)) ? gv / (ACCF)cnt : (ACCF)0"},
    {"min_backward", true, "cnt += (ov != ov) ? (xv != xv) : (xv == ov);",
     "((ov != ov) ? (xv != xv) : (xv == ov)) ? gv / (ACCF)cnt : (ACCF)0"},
    /* P is the ord (a #define of the program): torch's linalg_vector_norm_backward, as the CPU
     * kernel (reduce_grad_impl.h); cnt counts ord +-inf's ties */
    {"vector_norm_backward", true, "if (isinf((ACCF)P)) cnt += fabs(xv) == ov || xv != xv;",
     "P == 0 ? (ACCF)0"
     " : P == 1 ? SGN(xv) * gv"
     " : P == 2 ? (ov == 0 ? (ACCF)0 : gv * (xv / ov))"
     " : isinf((ACCF)P) ? (fabs(xv) == ov || xv != xv ? SGN(xv) * (gv / (ACCF)cnt) : (ACCF)0)"
     " : P < 1 ? (xv == 0 ? (ACCF)0 : SGN(xv) * pow(fabs(xv), (ACCF)P - 1))"
     " * (gv * pow(ov, 1 - (ACCF)P))"
     " : P < 2 ? SGN(xv) * pow(fabs(xv), (ACCF)P - 1) * (ov == 0 ? (ACCF)0 : gv / pow(ov, (ACCF)P "
     "- 1))"
     " : xv * pow(fabs(xv), (ACCF)P - 2) * (ov == 0 ? (ACCF)0 : gv / pow(ov, (ACCF)P - 1))"},
};

/* OpenCL source: the offsets of element j of the group (reduced layout rmeta, operands x and
 * grad_x) into xo and go. */
static void ct_cl_rgrad_offsets(ct_cl_source* source) {
  ct_cl_source_add(source,
                   "    long rem = j, xo = off2, go = off0;\n"
                   "    for (int d = rdim - 1; d >= 0; --d) {\n"
                   "      const long extent = rmeta[d], r = rem %% extent;\n"
                   "      xo += r * rmeta[rdim + d];\n      go += r * rmeta[2 * rdim + d];\n"
                   "      rem /= extent;\n    }\n");
}

static int ct_cl_rgrad_run(const ct_kernel_call* call) {
  const ct_cl_rgrad* r = call->kernel_data;
  const ct_tensor* g = call->inputs[0];
  const ct_tensor* x = call->inputs[1];
  const ct_tensor* out = r->has_out ? call->inputs[2] : NULL;
  const ct_tensor* gx = call->outputs[0];
  if (ct_pl_tensor_elements(gx) == 0) return CT_OK;
  ct_cl_exec exec;
  int status = ct_cl_exec_for_call(call, &exec);
  if (status != CT_OK) return status;
  ct_pl_layout kept, reduced;
  const int64_t count = ct_pl_reduce_grad_layouts(call, &kept, &reduced);
  const int64_t n = kept.elements;

  const ct_pl_type type = (ct_pl_type)ct_pl_type_of(x->dtype);
  const ct_cl_type_info* t = &ct_cl_types[type];
  ct_cl_source source;
  ct_cl_source_begin(&source, &exec);
  ct_cl_source_add(&source, "#define ACCF %s\n", exec.device->has_fp64 ? "double" : "float");
  if (strcmp(r->name, "vector_norm_backward") == 0) {
    const double ord = call->attrs[2].value.f;
    if (isinf(ord)) {
      ct_cl_source_add(&source, "#define P (%sINFINITY)\n", ord < 0 ? "-" : "");
    } else {
      ct_cl_source_add(&source, "#define P (%.17g)\n", ord);
    }
    ct_cl_source_add(&source,
                     "#define SGN(v) ((v) > 0 ? (ACCF)1 : (v) < 0 ? (ACCF)-1 : (ACCF)0)\n");
  }
  ct_cl_source_add(&source,
                   "__kernel void ct_rgrad(__global char* gx, long off_gx, __global const char* g, "
                   "long off_g, __global const char* x, long off_x, __global const char* o, long "
                   "off_o, __global const long* meta, int ndim, __global const long* rmeta, int "
                   "rdim, long n, long count) {\n"
                   "  const long i = get_global_id(0);\n  if (i >= n) return;\n"
                   "  long off0 = off_gx, off1 = off_g, off2 = off_x, off3 = off_o;\n");
  ct_cl_source_index_loop(&source, 4);
  ct_cl_source_add(&source, "  const ACCF gv = (ACCF)LD_%s(g, off1);\n", t->tag);
  if (r->has_out) {
    ct_cl_source_add(&source, "  const ACCF ov = (ACCF)LD_%s(o, off3);\n", t->tag);
  } else {
    ct_cl_source_add(&source, "  const ACCF ov = 0;\n");
  }
  ct_cl_source_add(&source, "  long cnt = 0, zeros = 0;\n  ACCF prod = 1;\n  (void)ov;\n");
  if (r->pass1) {
    ct_cl_source_add(&source, "  for (long j = 0; j < count; ++j) {\n");
    ct_cl_rgrad_offsets(&source);
    ct_cl_source_add(&source,
                     "    const ACCF xv = (ACCF)LD_%s(x, xo);\n    (void)go;\n    %s\n  }\n",
                     t->tag, r->pass1);
  }
  ct_cl_source_add(&source, "  for (long j = 0; j < count; ++j) {\n");
  ct_cl_rgrad_offsets(&source);
  const char* cast = type == CT_PL_F16 ? "(float)" : "(ACCF)";
  ct_cl_source_add(&source,
                   "    const ACCF xv = (ACCF)LD_%s(x, xo);\n    (void)xv;\n"
                   "    ST_%s(gx, go, %s(%s));\n  }\n}\n",
                   t->tag, t->tag, cast, r->value);

  cl_mem meta = NULL, rmeta = NULL;
  status = ct_cl_layout_meta(&exec, &kept, &meta);
  if (status == CT_OK) status = ct_cl_layout_meta(&exec, &reduced, &rmeta);
  if (status == CT_OK) {
    CT_CL_TENSOR_ARGS(gx_buffer, off_gx, gx);
    CT_CL_TENSOR_ARGS(g_buffer, off_g, g);
    CT_CL_TENSOR_ARGS(x_buffer, off_x, x);
    cl_mem o_buffer = out ? (cl_mem)out->data : (cl_mem)x->data;
    const int64_t off_o = out ? (int64_t)out->byte_offset : 0;
    const cl_int ndim = kept.ndim, rdim = reduced.ndim;
    const ct_cl_arg args[] = {CT_CL_ARG(gx_buffer), CT_CL_ARG(off_gx),   CT_CL_ARG(g_buffer),
                              CT_CL_ARG(off_g),     CT_CL_ARG(x_buffer), CT_CL_ARG(off_x),
                              CT_CL_ARG(o_buffer),  CT_CL_ARG(off_o),    CT_CL_ARG(meta),
                              CT_CL_ARG(ndim),      CT_CL_ARG(rmeta),    CT_CL_ARG(rdim),
                              CT_CL_ARG(n),         CT_CL_ARG(count)};
    status = ct_cl_launch(&exec, &source, "ct_rgrad", (size_t)n, args,
                          (int)(sizeof args / sizeof *args));
  }
  if (meta) ct_cl.clReleaseMemObject(meta);
  if (rmeta) ct_cl.clReleaseMemObject(rmeta);
  return status;
}

/* ----- matmul_backward ----- */

static int ct_cl_matmul_grad_one(const ct_kernel_call* call, ct_cl_exec* exec, int which) {
  const ct_tensor* gx = call->outputs[which];
  ct_pl_layout kept, reduced;
  ct_pl_matmul_grad_layouts(call, which, &kept, &reduced);
  const int64_t n = kept.elements, count = reduced.elements;
  if (n == 0) return CT_OK;
  const ct_pl_type type = (ct_pl_type)ct_pl_type_of(gx->dtype);
  const ct_cl_type_info* t = &ct_cl_types[type];
  ct_cl_source source;
  ct_cl_source_begin(&source, exec);
  ct_cl_source_add(&source, "#define T %s\n", t->compute);
  ct_cl_source_add(&source,
                   "__kernel void ct_mmgrad(__global char* out, long off_out, __global const char* "
                   "a, long off_a, __global const char* b, long off_b, __global const long* meta, "
                   "int ndim, __global const long* rmeta, int rdim, long n, long count) {\n"
                   "  const long i = get_global_id(0);\n  if (i >= n) return;\n"
                   "  long off0 = off_out, off1 = off_a, off2 = off_b;\n");
  ct_cl_source_index_loop(&source, 3);
  ct_cl_source_add(&source,
                   "  T acc = 0;\n  for (long j = 0; j < count; ++j) {\n"
                   "    long rem = j, ao = off1, bo = off2;\n"
                   "    for (int d = rdim - 1; d >= 0; --d) {\n"
                   "      const long extent = rmeta[d], r = rem %% extent;\n"
                   "      ao += r * rmeta[rdim + d];\n      bo += r * rmeta[2 * rdim + d];\n"
                   "      rem /= extent;\n    }\n"
                   "    acc += LD_%s(a, ao) * LD_%s(b, bo);\n  }\n  ST_%s(out, off0, acc);\n}\n",
                   t->tag, t->tag, t->tag);
  cl_mem meta = NULL, rmeta = NULL;
  int status = ct_cl_layout_meta(exec, &kept, &meta);
  if (status == CT_OK) status = ct_cl_layout_meta(exec, &reduced, &rmeta);
  if (status == CT_OK) {
    const ct_tensor* g = call->inputs[0];
    const ct_tensor* a = which == 0 ? g : call->inputs[1];
    const ct_tensor* b = which == 0 ? call->inputs[2] : g;
    CT_CL_TENSOR_ARGS(out_buffer, off_out, gx);
    CT_CL_TENSOR_ARGS(a_buffer, off_a, a);
    CT_CL_TENSOR_ARGS(b_buffer, off_b, b);
    const cl_int ndim = kept.ndim, rdim = reduced.ndim;
    const ct_cl_arg args[] = {CT_CL_ARG(out_buffer), CT_CL_ARG(off_out),  CT_CL_ARG(a_buffer),
                              CT_CL_ARG(off_a),      CT_CL_ARG(b_buffer), CT_CL_ARG(off_b),
                              CT_CL_ARG(meta),       CT_CL_ARG(ndim),     CT_CL_ARG(rmeta),
                              CT_CL_ARG(rdim),       CT_CL_ARG(n),        CT_CL_ARG(count)};
    status = ct_cl_launch(exec, &source, "ct_mmgrad", (size_t)n, args,
                          (int)(sizeof args / sizeof *args));
  }
  if (meta) ct_cl.clReleaseMemObject(meta);
  if (rmeta) ct_cl.clReleaseMemObject(rmeta);
  return status;
}

static int ct_cl_matmul_backward_run(const ct_kernel_call* call) {
  ct_cl_exec exec;
  int status = ct_cl_exec_for_call(call, &exec);
  for (int which = 0; which < 2 && status == CT_OK; ++which) {
    status = ct_cl_matmul_grad_one(call, &exec, which);
  }
  return status;
}

int ct_cl_register_reduce_grad(void) {
  static const ct_pl_type floats[] = {CT_PL_F16, CT_PL_F32, CT_PL_F64};
  for (int k = 0; k < 3; ++k) {
    const ct_pl_type t = floats[k];
    for (size_t r = 0; r < sizeof ct_cl_rgrads / sizeof *ct_cl_rgrads; ++r) {
      const ct_pl_type signature[4] = {t, t, t, t};
      const int length = ct_cl_rgrads[r].has_out ? 4 : 3;
      const int status = ct_cl_register(ct_cl_rgrads[r].name, signature, length, ct_cl_rgrad_run,
                                        NULL, &ct_cl_rgrads[r]);
      if (status != CT_OK) return status;
    }
    const ct_pl_type signature[5] = {t, t, t, t, t};
    const int status =
        ct_cl_register("matmul_backward", signature, 5, ct_cl_matmul_backward_run, NULL, NULL);
    if (status != CT_OK) return status;
  }
  return CT_OK;
}
