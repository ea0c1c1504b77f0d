/* cl_sort.c - sort, argsort and topk along an axis: every element finds its rank in its lane by
 * counting the elements ordered before it (ties by index, so the result is stable), one work
 * item per element and no scratch memory. The work is quadratic in the lane length: fine for
 * the lanes of typical tensors, slow for lanes of hundreds of thousands of elements. Orders as
 * the CPU backend: ascending puts nan last, descending (and topk largest) puts nan first;
 * -0.0 == 0.0.
 *
 * Also take_along_axis_backward, the scatter-add that the gradients of sort and topk run: one
 * work item per element of grad_x sums the grad_out entries whose index points at it, in
 * grad_out's row-major order (the CPU kernel's order, so no atomics and the same sums). */
#include "cl_layout.h"
#include "cl_types.h"
#include "plugin_grad_geometry.h"

/* ct_less: the ascending order (nan after everything). BEFORE(a, b): a comes first. */
static const char ct_cl_order_source[] =
    "inline int ct_less(T a, T b) { return a < b || (b != b && a == a); }\n"
    "#if DESCENDING\n#define BEFORE(a, b) ct_less(b, a)\n#else\n#define BEFORE(a, b) ct_less(a, "
    "b)\n"
    "#endif\n";

static const char ct_cl_rank_source[] =
    "  const long lane = i / extent, k = i %% extent;\n"
    "  long off0 = off_a, off1 = off_b, off2 = off_x;\n"
    "%s"
    "  const T v = CAT(LD_, TAG)(x, off2 + k * x_step);\n"
    "  long rank = 0;\n"
    "  for (long j = 0; j < extent; ++j) {\n"
    "    const T u = CAT(LD_, TAG)(x, off2 + j * x_step);\n"
    "    rank += BEFORE(u, v) || (!BEFORE(v, u) && j < k);\n  }\n";

/* Generates and runs the rank kernel; `store` writes element v (index k) at its rank. */
static int ct_cl_rank_run(const ct_kernel_call* call, const ct_tensor* a, const ct_tensor* b,
                          int64_t axis, bool descending, int64_t limit, const char* store) {
  const ct_tensor* x = call->inputs[0];
  const int64_t extent = x->ndim ? x->shape[axis] : 1;
  if (ct_pl_tensor_elements(x) == 0 || limit == 0) return CT_OK;
  ct_cl_exec exec;
  int status = ct_cl_exec_for_call(call, &exec);
  if (status != CT_OK) return status;
  ct_pl_layout layout;
  ct_pl_lane_layout(&layout, x, (int32_t)axis);
  ct_pl_layout_add(&layout, a);
  ct_pl_layout_add(&layout, b ? b : a);
  ct_pl_layout_add(&layout, x);
  ct_pl_layout_collapse(&layout, NULL);
  const int64_t n = layout.elements * extent;
  const int64_t a_step = ct_pl_byte_stride(a, (int32_t)axis);
  const int64_t b_step = b ? ct_pl_byte_stride(b, (int32_t)axis) : 0;
  const int64_t x_step = ct_pl_byte_stride(x, (int32_t)axis);

  const ct_cl_type_info* t = &ct_cl_types[ct_pl_type_of(x->dtype)];
  ct_cl_source loop, source;
  ct_cl_source_begin(&loop, &exec);
  loop.length = 0;
  loop.text[0] = '\0';
  ct_cl_source_index_loop_named(&loop, "lane", "meta", "ndim", "off", 3);
  ct_cl_source_begin(&source, &exec);
  ct_cl_source_add(&source, "#define T %s\n#define TAG %s\n#define DESCENDING %d\n%s", t->compute,
                   t->tag, descending ? 1 : 0, ct_cl_order_source);
  ct_cl_source_add(&source,
                   "__kernel void ct_rank(__global char* a, long off_a, __global char* b, long "
                   "off_b, __global const char* x, long off_x, __global const long* meta, int "
                   "ndim, long n, long extent, long a_step, long b_step, long x_step, long limit) "
                   "{\n  const long i = get_global_id(0);\n  if (i >= n) return;\n");
  ct_cl_source_add(&source, ct_cl_rank_source, loop.text);
  ct_cl_source_add(&source, "  if (rank < limit) { %s }\n}\n", store);
  cl_mem meta = NULL;
  status = ct_cl_layout_meta(&exec, &layout, &meta);
  if (status != CT_OK) return status;
  CT_CL_TENSOR_ARGS(a_buffer, off_a, a);
  cl_mem b_buffer = b ? (cl_mem)b->data : a_buffer;
  const int64_t off_b = b ? (int64_t)b->byte_offset : 0;
  CT_CL_TENSOR_ARGS(x_buffer, off_x, x);
  const cl_int ndim = layout.ndim;
  const ct_cl_arg args[] = {CT_CL_ARG(a_buffer), CT_CL_ARG(off_a),    CT_CL_ARG(b_buffer),
                            CT_CL_ARG(off_b),    CT_CL_ARG(x_buffer), CT_CL_ARG(off_x),
                            CT_CL_ARG(meta),     CT_CL_ARG(ndim),     CT_CL_ARG(n),
                            CT_CL_ARG(extent),   CT_CL_ARG(a_step),   CT_CL_ARG(b_step),
                            CT_CL_ARG(x_step),   CT_CL_ARG(limit)};
  status =
      ct_cl_launch(&exec, &source, "ct_rank", (size_t)n, args, (int)(sizeof args / sizeof *args));
  ct_cl.clReleaseMemObject(meta);
  return status;
}

static int64_t ct_cl_axis(const ct_tensor* x, int64_t axis) {
  return x->ndim == 0 ? 0 : axis < 0 ? axis + x->ndim : axis;
}

static int ct_cl_sort_run(const ct_kernel_call* call) {
  const ct_tensor* x = call->inputs[0];
  const int64_t axis = ct_cl_axis(x, call->attrs[0].value.i);
  const bool descending = call->attrs[1].value.b != 0;
  return ct_cl_rank_run(call, call->outputs[0], NULL, axis, descending, INT64_MAX,
                        "CAT(ST_, TAG)(a, off0 + rank * a_step, v);");
}

static int ct_cl_argsort_run(const ct_kernel_call* call) {
  const ct_tensor* x = call->inputs[0];
  const int64_t axis = ct_cl_axis(x, call->attrs[0].value.i);
  const bool descending = call->attrs[1].value.b != 0;
  return ct_cl_rank_run(call, call->outputs[0], NULL, axis, descending, INT64_MAX,
                        "ST_i64(a, off0 + rank * a_step, k);");
}

/* argpartition: the stable ascending argsort, a valid partition for every kth (attrs[0] is the
 * axis, as argsort's). */
static int ct_cl_argpartition_run(const ct_kernel_call* call) {
  const ct_tensor* x = call->inputs[0];
  const int64_t axis = ct_cl_axis(x, call->attrs[0].value.i);
  return ct_cl_rank_run(call, call->outputs[0], NULL, axis, false, INT64_MAX,
                        "ST_i64(a, off0 + rank * a_step, k);");
}

static int ct_cl_topk_run(const ct_kernel_call* call) {
  const ct_tensor* x = call->inputs[0];
  const int64_t k = call->attrs[0].value.i;
  const int64_t axis = ct_cl_axis(x, call->attrs[1].value.i);
  const bool largest = call->attrs[2].value.b != 0;
  return ct_cl_rank_run(call, call->outputs[0], call->outputs[1], axis, largest, k,
                        "CAT(ST_, TAG)(a, off0 + rank * a_step, v); "
                        "ST_i64(b, off1 + rank * b_step, k);");
}

/* ----- take_along_axis_backward ----- */

/* Indices must lie in [-extent, extent), as on the CPU: they are scanned before grad_x is
 * written. */
static int ct_cl_check_indices(const ct_cl_exec* exec, const ct_tensor* indices, int64_t extent) {
  bool found = false;
  int64_t bad = 0;
  int status = ct_cl_find_index_outside(exec, indices, -extent, extent, &found, &bad);
  if (status == CT_OK && found) {
    status = ct_cl_error(CT_ERROR_INVALID_ARGUMENT,
                         "take_along_axis_backward: index %lld is out of range [%lld, %lld)",
                         (long long)bad, (long long)-extent, (long long)extent);
  }
  return status;
}

/* Element k of a grad_x lane sums, in row-major order, the grad_out entries of its reduced
 * sub-space (ct_pl_take_along_grad_layouts: `meta` the lanes, `rmeta` the reduced dims) whose
 * index (negative ones counting from the end) is k. */
static const char ct_cl_take_along_source[] =
    "__kernel void ct_take_along_backward(__global char* gx, long off_gx, __global const char* "
    "g, long off_g, __global const char* idx, long off_idx, __global const long* meta, int ndim, "
    "__global const long* rmeta, int rdim, long n, long extent, long gx_step, long rtotal) {\n"
    "  const long i = get_global_id(0);\n  if (i >= n) return;\n"
    "  const long lane = i / extent, k = i %% extent;\n"
    "  long off0 = off_gx, off1 = off_g, off2 = off_idx;\n"
    "%s"
    "  T acc = 0;\n"
    "  for (long t = 0; t < rtotal; ++t) {\n"
    "    long go = off1, io = off2, rem = t;\n"
    "    for (int d = rdim - 1; d >= 0; --d) {\n"
    "      const long e = rmeta[d], q = rem %% e;\n      rem /= e;\n"
    "      go += q * rmeta[rdim + d];\n      io += q * rmeta[2 * rdim + d];\n    }\n"
    "    long j = CAT(LD_, ITAG)(idx, io);\n    if (j < 0) j += extent;\n"
    "    if (j == k) acc += CAT(LD_, TAG)(g, go);\n  }\n"
    "  CAT(ST_, TAG)(gx, off0 + k * gx_step, acc);\n}\n";

static int ct_cl_take_along_axis_backward_run(const ct_kernel_call* call) {
  const ct_tensor *grad = call->inputs[0], *indices = call->inputs[2], *gx = call->outputs[0];
  ct_pl_layout lanes, reduced;
  const int32_t axis = ct_pl_take_along_grad_layouts(call, &lanes, &reduced);
  const int64_t extent = gx->shape[axis];
  ct_cl_exec exec;
  int status = ct_cl_exec_for_call(call, &exec);
  if (status != CT_OK) return status;
  if (ct_pl_tensor_elements(grad) > 0) {
    status = ct_cl_check_indices(&exec, indices, extent);
    if (status != CT_OK) return status;
  }
  const int64_t n = ct_pl_tensor_elements(gx);
  if (n == 0) return CT_OK;
  const int64_t gx_step = ct_pl_byte_stride(gx, axis);
  const int64_t rtotal = reduced.elements;

  const ct_cl_type_info* t = &ct_cl_types[ct_pl_type_of(gx->dtype)];
  ct_cl_source loop, source;
  ct_cl_source_begin(&loop, &exec);
  loop.length = 0;
  loop.text[0] = '\0';
  ct_cl_source_index_loop_named(&loop, "lane", "meta", "ndim", "off", 3);
  ct_cl_source_begin(&source, &exec);
  ct_cl_source_add(&source, "#define T %s\n#define TAG %s\n#define ITAG %s\n", t->compute, t->tag,
                   indices->dtype.bits == 64 ? "i64" : "i32");
  ct_cl_source_add(&source, ct_cl_take_along_source, loop.text);
  cl_mem meta = NULL, rmeta = NULL;
  status = ct_cl_layout_meta(&exec, &lanes, &meta);
  if (status == CT_OK) status = ct_cl_layout_meta(&exec, &reduced, &rmeta);
  if (status == CT_OK) {
    CT_CL_TENSOR_ARGS(gx_buffer, off_gx, gx);
    CT_CL_TENSOR_ARGS(g_buffer, off_g, grad);
    CT_CL_TENSOR_ARGS(idx_buffer, off_idx, indices);
    const cl_int ndim = lanes.ndim, rdim = reduced.ndim;
    const ct_cl_arg args[] = {CT_CL_ARG(gx_buffer), CT_CL_ARG(off_gx),     CT_CL_ARG(g_buffer),
                              CT_CL_ARG(off_g),     CT_CL_ARG(idx_buffer), CT_CL_ARG(off_idx),
                              CT_CL_ARG(meta),      CT_CL_ARG(ndim),       CT_CL_ARG(rmeta),
                              CT_CL_ARG(rdim),      CT_CL_ARG(n),          CT_CL_ARG(extent),
                              CT_CL_ARG(gx_step),   CT_CL_ARG(rtotal)};
    status = ct_cl_launch(&exec, &source, "ct_take_along_backward", (size_t)n, args,
                          (int)(sizeof args / sizeof *args));
  }
  if (meta) ct_cl.clReleaseMemObject(meta);
  if (rmeta) ct_cl.clReleaseMemObject(rmeta);
  return status;
}

int ct_cl_register_sort(void) {
  for (int t = 0; t < CT_PL_TYPE_COUNT; ++t) {
    const ct_pl_type sort_signature[2] = {(ct_pl_type)t, (ct_pl_type)t};
    const ct_pl_type argsort_signature[2] = {(ct_pl_type)t, CT_PL_I64};
    const ct_pl_type topk_signature[3] = {(ct_pl_type)t, (ct_pl_type)t, CT_PL_I64};
    int status = ct_cl_register("sort", sort_signature, 2, ct_cl_sort_run, NULL, NULL);
    if (status == CT_OK) {
      status = ct_cl_register("argsort", argsort_signature, 2, ct_cl_argsort_run, NULL, NULL);
    }
    if (status == CT_OK) {
      status = ct_cl_register("topk", topk_signature, 3, ct_cl_topk_run, NULL, NULL);
    }
    if (status == CT_OK) {
      status =
          ct_cl_register("argpartition", argsort_signature, 2, ct_cl_argpartition_run, NULL, NULL);
    }
    if (status != CT_OK) return status;
  }
  /* int64 indices: those argsort and topk give. int32 ones would come only from a
   * take_along_axis forward, which this backend lacks (the kernel reads either). */
  static const ct_pl_type floats[] = {CT_PL_F16, CT_PL_F32, CT_PL_F64};
  for (int f = 0; f < 3; ++f) {
    const ct_pl_type signature[4] = {floats[f], floats[f], CT_PL_I64, floats[f]};
    const int status = ct_cl_register("take_along_axis_backward", signature, 4,
                                      ct_cl_take_along_axis_backward_run, NULL, NULL);
    if (status != CT_OK) return status;
  }
  return CT_OK;
}
