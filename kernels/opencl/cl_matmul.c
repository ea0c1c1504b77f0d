/* cl_matmul.c - matmul with NumPy's rules (broadcast batch dims, 1-D operands as a row or a
 * column): one work item per output element, the contraction as a strided loop. float16
 * accumulates in float, integers wrap, bool is or-of-ands. */
#include "cl_layout.h"
#include "plugin_geometry.h"
#include "cl_types.h"

static int ct_cl_matmul_run(const ct_kernel_call* call) {
  const ct_tensor* a = call->inputs[0];
  const ct_tensor* b = call->inputs[1];
  const ct_tensor* out = call->outputs[0];
  const int64_t n = ct_pl_tensor_elements(out);
  if (n == 0) return CT_OK;
  ct_cl_exec exec;
  int status = ct_cl_exec_for_call(call, &exec);
  if (status != CT_OK) return status;

  const ct_pl_type type = (ct_pl_type)ct_pl_type_of(out->dtype);
  ct_pl_matmul plan;
  ct_pl_matmul_plan(call, &plan);
  const int64_t m = plan.m, k_extent = plan.k, cols = plan.n, a_k = plan.a_k, b_k = plan.b_k;
  const int32_t batch = plan.batch;

  /* Iteration space: out's batch dims, then (m, cols). */
  int64_t* shape = plan.batch_shape;
  int64_t (*strides)[CT_MAX_NDIM + 2] = plan.batch_strides;
  shape[batch] = m;
  shape[batch + 1] = cols;
  strides[0][batch] = plan.out_m;
  strides[0][batch + 1] = plan.out_n;
  strides[1][batch] = plan.a_m;
  strides[1][batch + 1] = 0;
  strides[2][batch] = 0;
  strides[2][batch + 1] = plan.b_n;
  ct_pl_layout layout;
  ct_pl_layout_begin(&layout, batch + 2, shape);
  for (int k = 0; k < 3; ++k) ct_pl_layout_add_strides(&layout, strides[k]);
  ct_pl_layout_collapse(&layout, NULL);

  const ct_cl_type_info* t = &ct_cl_types[type];
  /* Each block of 32 products sums into `part`; float blocks then add into `acc` with Kahan's
   * compensation, so a long inner dimension costs about one block's rounding error rather than
   * one rounding per product (integer and bool blocks combine exactly). */
  const bool is_float = ct_pl_type_is_float(type);
  const char* step = type == CT_PL_B8 ? "part |= (x & y);"
                     : is_float       ? "part += x * y;"
                                      : "part = (T)((U)part + (U)x * (U)y);";
  const char* add_block = type == CT_PL_B8 ? "acc |= part;"
                          : is_float       ? "{ const T y_ = part - comp; const T t_ = acc + y_; "
                                             "comp = (t_ - acc) - y_; acc = t_; }"
                                           : "acc = (T)((U)acc + (U)part);";
  ct_cl_source source;
  ct_cl_source_begin(&source, &exec);
  ct_cl_source_add(&source, "#define T %s\n#define U %s\n", t->compute, t->unsigned_type);
  ct_cl_source_add(&source,
                   "__kernel void ct_matmul(__global char* out, long off_out, __global const char* "
                   "a, long off_a, __global const char* b, long off_b, __global const long* meta, "
                   "int ndim, long n, long k_extent, long a_k, long b_k) {\n"
                   "  const long i = get_global_id(0);\n  if (i >= n) return;\n"
                   "  long off0 = off_out, off1 = off_a, off2 = off_b;\n");
  ct_cl_source_index_loop(&source, 3);
  ct_cl_source_add(&source,
                   "  T acc = 0, comp = 0;\n"
                   "  for (long k0 = 0; k0 < k_extent; k0 += 32) {\n"
                   "    const long k1 = k0 + 32 < k_extent ? k0 + 32 : k_extent;\n"
                   "    T part = 0;\n"
                   "    for (long k = k0; k < k1; ++k) {\n"
                   "      const T x = LD_%s(a, off1 + k * a_k), y = LD_%s(b, off2 + k * b_k);\n"
                   "      %s\n    }\n    %s\n  }\n  ST_%s(out, off0, acc);\n}\n",
                   t->tag, t->tag, step, add_block, t->tag);
  cl_mem meta = NULL;
  status = ct_cl_layout_meta(&exec, &layout, &meta);
  if (status != CT_OK) return status;
  CT_CL_TENSOR_ARGS(out_buffer, off_out, out);
  CT_CL_TENSOR_ARGS(a_buffer, off_a, a);
  CT_CL_TENSOR_ARGS(b_buffer, off_b, b);
  const cl_int ndim = layout.ndim;
  const ct_cl_arg args[] = {CT_CL_ARG(out_buffer), CT_CL_ARG(off_out),  CT_CL_ARG(a_buffer),
                            CT_CL_ARG(off_a),      CT_CL_ARG(b_buffer), CT_CL_ARG(off_b),
                            CT_CL_ARG(meta),       CT_CL_ARG(ndim),     CT_CL_ARG(n),
                            CT_CL_ARG(k_extent),   CT_CL_ARG(a_k),      CT_CL_ARG(b_k)};
  status =
      ct_cl_launch(&exec, &source, "ct_matmul", (size_t)n, args, (int)(sizeof args / sizeof *args));
  ct_cl.clReleaseMemObject(meta);
  return status;
}

int ct_cl_register_matmul(void) {
  for (int t = 0; t < CT_PL_TYPE_COUNT; ++t) {
    const ct_pl_type signature[3] = {(ct_pl_type)t, (ct_pl_type)t, (ct_pl_type)t};
    const int status = ct_cl_register("matmul", signature, 3, ct_cl_matmul_run, NULL, NULL);
    if (status != CT_OK) return status;
  }
  return CT_OK;
}
