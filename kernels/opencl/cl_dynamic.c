/* cl_dynamic.c - the ops whose output size depends on the data: nonzero, boolean_mask and
 * unique_values. Each counts on the device, reads the count back (a synchronisation), asks the
 * caller's allocator for OpenCL outputs, then fills them. nonzero and boolean_mask walk the
 * input in row-major order in one work item (linear work, no parallelism); unique_values marks
 * first occurrences and places them by rank in parallel (quadratic work). Their small counters
 * and flags are device buffers of the plugin's own. */
#include "cl_layout.h"
#include "plugin_geometry.h"
#include "cl_types.h"

/* Runs `kernel` of `source` in one work item with the arguments given, then reads the int64
 * the kernel stored at counter[0]. */
static int ct_cl_count(const ct_cl_exec* exec, const ct_cl_source* source, const char* kernel,
                       ct_cl_arg* args, int count, cl_mem counter, int64_t* result) {
  int status = ct_cl_launch(exec, source, kernel, 1, args, count);
  if (status == CT_OK) status = ct_cl_read(exec, counter, 0, result, sizeof *result);
  return status;
}

static int ct_cl_nonzero_run(const ct_kernel_call* call) {
  const ct_tensor* x = call->inputs[0];
  ct_cl_exec exec;
  int status = ct_cl_exec_for_call(call, &exec);
  if (status != CT_OK) return status;
  const ct_cl_type_info* t = &ct_cl_types[ct_pl_type_of(x->dtype)];
  ct_pl_layout layout;
  ct_pl_layout_begin(&layout, x->ndim, x->shape);
  ct_pl_layout_add(&layout, x);
  /* not collapsed: the kernel needs the index along every dim */
  const int64_t total = layout.elements;
  ct_cl_source source;
  ct_cl_source_begin(&source, &exec);
  ct_cl_source_add(&source,
                   "__kernel void ct_nonzero(__global const char* x, long off_x, __global const "
                   "long* meta, int ndim, long total, __global long* counter, int fill");
  for (int32_t k = 0; k < x->ndim; ++k) ct_cl_source_add(&source, ", __global char* o%d", k);
  ct_cl_source_add(&source,
                   ") {\n  long count = 0;\n  for (long i = 0; i < total; ++i) {\n"
                   "    long off0 = off_x;\n");
  ct_cl_source_index_loop(&source, 1);
  ct_cl_source_add(&source, "    if (LD_%s(x, off0) == 0) continue;\n    if (fill) {\n", t->tag);
  ct_cl_source_add(&source, "      long rem = i;\n");
  for (int32_t k = x->ndim - 1; k >= 0; --k) {
    ct_cl_source_add(&source,
                     "      ST_i64(o%d, count * 8, rem %% meta[%d]);\n      rem /= meta[%d];\n", k,
                     k, k);
  }
  ct_cl_source_add(&source, "    }\n    ++count;\n  }\n  counter[0] = count;\n}\n");

  cl_mem meta = NULL, counter = NULL;
  status = ct_cl_layout_meta(&exec, &layout, &meta);
  if (status == CT_OK) status = ct_cl_scratch_buffer(&exec, sizeof(int64_t), &counter);
  void* outputs[CT_MAX_NDIM] = {NULL};
  if (status == CT_OK) {
    CT_CL_TENSOR_ARGS(x_buffer, off_x, x);
    const cl_int ndim = x->ndim;
    cl_int fill = 0;
    ct_cl_arg args[6 + CT_MAX_NDIM] = {CT_CL_ARG(x_buffer), CT_CL_ARG(off_x), CT_CL_ARG(meta),
                                       CT_CL_ARG(ndim),     CT_CL_ARG(total), CT_CL_ARG(counter),
                                       CT_CL_ARG(fill)};
    /* Counting pass: the outputs are not written (fill = 0); pass the counter in their place. */
    for (int32_t k = 0; k < x->ndim; ++k) args[7 + k] = CT_CL_ARG(counter);
    int64_t count = 0;
    if (total > 0) {
      status = ct_cl_count(&exec, &source, "ct_nonzero", args, 7 + x->ndim, counter, &count);
    }
    ct_tensor_info info = {{CT_DTYPE_INT, 64, 1}, 1, {count}};
    for (int32_t k = 0; k < x->ndim && status == CT_OK; ++k) {
      status = ct_pl_allocate_output(ct_cl_host, call, k, &info, CT_DEVICE_OPENCL,
                                     x->device.device_id, &outputs[k]);
      args[7 + k] = CT_CL_ARG(outputs[k]);
    }
    if (status == CT_OK && count > 0) {
      fill = 1;
      status = ct_cl_launch(&exec, &source, "ct_nonzero", 1, args, 7 + x->ndim);
    }
  }
  if (meta) ct_cl.clReleaseMemObject(meta);
  if (counter) ct_cl.clReleaseMemObject(counter);
  return status;
}

static int ct_cl_boolean_mask_run(const ct_kernel_call* call) {
  const ct_tensor* x = call->inputs[0];
  const ct_tensor* mask = call->inputs[1];
  ct_cl_exec exec;
  int status = ct_cl_exec_for_call(call, &exec);
  if (status != CT_OK) return status;
  const int32_t lead = mask->ndim, tail = x->ndim - mask->ndim;
  const int32_t x_size = ct_pl_type_size(ct_pl_type_of(x->dtype));
  int64_t x_strides[CT_MAX_NDIM], tail_strides[CT_MAX_NDIM];
  ct_pl_tensor_strides(x, x_strides);
  /* Lead layout: (mask, x) over mask's shape; tail layout: (out row, x) over the rest. */
  ct_pl_layout lead_layout, tail_layout;
  ct_pl_layout_begin(&lead_layout, lead, mask->shape);
  ct_pl_layout_add(&lead_layout, mask);
  int64_t x_lead[CT_MAX_NDIM];
  for (int32_t d = 0; d < lead; ++d) x_lead[d] = x_strides[d] * x_size;
  ct_pl_layout_add_strides(&lead_layout, x_lead);
  ct_pl_layout_begin(&tail_layout, tail, x->shape + lead);
  int64_t step = x_size, x_tail[CT_MAX_NDIM];
  for (int32_t d = tail - 1; d >= 0; --d) {
    tail_strides[d] = step;
    step *= x->shape[lead + d];
    x_tail[d] = x_strides[lead + d] * x_size;
  }
  ct_pl_layout_add_strides(&tail_layout, tail_strides);
  ct_pl_layout_add_strides(&tail_layout, x_tail);
  const int64_t lead_total = lead_layout.elements, row = tail_layout.elements;
  ct_pl_layout_collapse(&lead_layout, NULL);
  ct_pl_layout_collapse(&tail_layout, NULL);

  ct_cl_source source;
  ct_cl_source_begin(&source, &exec);
  ct_cl_source_add(&source,
                   "__kernel void ct_boolean_mask(__global const char* x, long off_x, __global "
                   "const char* m, long off_m, __global char* out, long off_out, __global const "
                   "long* meta, int ndim, __global const long* tmeta, int tdim, long total, long "
                   "row, __global long* counter, int fill) {\n"
                   "  long count = 0;\n  for (long i = 0; i < total; ++i) {\n"
                   "    long off0 = off_m, off1 = off_x;\n");
  ct_cl_source_index_loop(&source, 2);
  ct_cl_source_add(&source,
                   "    if (LD_b8(m, off0) == 0) continue;\n"
                   "    if (fill) {\n      for (long j = 0; j < row; ++j) {\n"
                   "        long t0 = off_out + count * row * %d, t1 = off1;\n",
                   x_size);
  ct_cl_source_index_loop_named(&source, "j", "tmeta", "tdim", "t", 2);
  ct_cl_source_add(&source,
                   "        *AT(%s, out, t0) = *AT(const %s, x, t1);\n      }\n    }\n"
                   "    ++count;\n  }\n  counter[0] = count;\n}\n",
                   x_size == 1   ? "uchar"
                   : x_size == 2 ? "ushort"
                   : x_size == 4 ? "uint"
                                 : "ulong",
                   x_size == 1   ? "uchar"
                   : x_size == 2 ? "ushort"
                   : x_size == 4 ? "uint"
                                 : "ulong");
  cl_mem meta = NULL, tmeta = NULL, counter = NULL;
  status = ct_cl_layout_meta(&exec, &lead_layout, &meta);
  if (status == CT_OK) status = ct_cl_layout_meta(&exec, &tail_layout, &tmeta);
  if (status == CT_OK) status = ct_cl_scratch_buffer(&exec, sizeof(int64_t), &counter);
  if (status == CT_OK) {
    CT_CL_TENSOR_ARGS(x_buffer, off_x, x);
    CT_CL_TENSOR_ARGS(m_buffer, off_m, mask);
    void* out_data = NULL;
    int64_t off_out = 0;
    const cl_int ndim = lead_layout.ndim, tdim = tail_layout.ndim;
    cl_int fill = 0;
    ct_cl_arg args[] = {CT_CL_ARG(x_buffer), CT_CL_ARG(off_x),      CT_CL_ARG(m_buffer),
                        CT_CL_ARG(off_m),    CT_CL_ARG(counter),    CT_CL_ARG(off_out),
                        CT_CL_ARG(meta),     CT_CL_ARG(ndim),       CT_CL_ARG(tmeta),
                        CT_CL_ARG(tdim),     CT_CL_ARG(lead_total), CT_CL_ARG(row),
                        CT_CL_ARG(counter),  CT_CL_ARG(fill)};
    const int count_args = (int)(sizeof args / sizeof *args);
    int64_t count = 0;
    if (lead_total > 0) {
      status = ct_cl_count(&exec, &source, "ct_boolean_mask", args, count_args, counter, &count);
    }
    ct_tensor_info info;
    info.dtype = x->dtype;
    info.ndim = 1 + tail;
    info.shape[0] = count;
    for (int32_t d = 0; d < tail; ++d) info.shape[1 + d] = x->shape[lead + d];
    if (status == CT_OK) {
      status = ct_pl_allocate_output(ct_cl_host, call, 0, &info, CT_DEVICE_OPENCL,
                                     x->device.device_id, &out_data);
    }
    if (status == CT_OK && count > 0 && row > 0) {
      fill = 1;
      args[4] = CT_CL_ARG(out_data);
      status = ct_cl_launch(&exec, &source, "ct_boolean_mask", 1, args, count_args);
    }
  }
  if (meta) ct_cl.clReleaseMemObject(meta);
  if (tmeta) ct_cl.clReleaseMemObject(tmeta);
  if (counter) ct_cl.clReleaseMemObject(counter);
  return status;
}

/* unique_values: pass 1 marks each element that has no equal element before it (nan equals
 * nan) and counts the marks; pass 2 writes each marked value at its rank among the marked. */
static const char ct_cl_unique_source[] =
    "inline int ct_less(T a, T b) { return a < b || (b != b && a == a); }\n"
    "inline int ct_same(T a, T b) { return a == b || (a != a && b != b); }\n"
    "inline long ct_offset(__global const long* meta, int ndim, long k) {\n"
    "  long off = 0;\n"
    "  for (int d = ndim - 1; d >= 0; --d) { off += (k % meta[d]) * meta[ndim + d]; k /= meta[d]; "
    "}\n"
    "  return off;\n}\n"
    "#define X(k) CAT(LD_, TAG)(x, off_x + ct_offset(meta, ndim, (k)))\n"
    "__kernel void ct_unique_mark(__global const char* x, long off_x, __global const long* meta, "
    "int ndim, long n, __global uchar* first, __global volatile uint* counter) {\n"
    "  const long i = get_global_id(0);\n  if (i >= n) return;\n"
    "  const T v = X(i);\n  int seen = 0;\n"
    "  for (long j = 0; j < i && !seen; ++j) seen = ct_same(X(j), v);\n"
    "  first[i] = !seen;\n  if (!seen) atomic_inc(counter);\n}\n"
    "__kernel void ct_unique_place(__global const char* x, long off_x, __global const long* meta, "
    "int ndim, long n, __global const uchar* first, __global char* out) {\n"
    "  const long i = get_global_id(0);\n  if (i >= n || !first[i]) return;\n"
    "  const T v = X(i);\n  long rank = 0;\n"
    "  for (long j = 0; j < n; ++j) rank += first[j] && ct_less(X(j), v);\n"
    "  CAT(ST_, TAG)(out, rank * SZ, v);\n}\n";

static int ct_cl_unique_values_run(const ct_kernel_call* call) {
  const ct_tensor* x = call->inputs[0];
  ct_cl_exec exec;
  int status = ct_cl_exec_for_call(call, &exec);
  if (status != CT_OK) return status;
  const ct_cl_type_info* t = &ct_cl_types[ct_pl_type_of(x->dtype)];
  const int32_t x_size = ct_pl_type_size(ct_pl_type_of(x->dtype));
  const int64_t n = ct_pl_tensor_elements(x);
  ct_pl_layout layout;
  ct_pl_layout_begin(&layout, x->ndim, x->shape);
  ct_pl_layout_add(&layout, x);
  ct_pl_layout_collapse(&layout, NULL);
  ct_cl_source source;
  ct_cl_source_begin(&source, &exec);
  ct_cl_source_add(&source, "#define T %s\n#define TAG %s\n#define SZ %d\n%s", t->compute, t->tag,
                   x_size, ct_cl_unique_source);
  int64_t count = 0;
  void* out_data = NULL;
  cl_mem first = NULL, counter = NULL, meta = NULL;
  if (n > 0) {
    status = ct_cl_scratch_buffer(&exec, (size_t)n, &first);
    if (status == CT_OK) status = ct_cl_scratch_buffer(&exec, sizeof(cl_uint), &counter);
    if (status == CT_OK) status = ct_cl_layout_meta(&exec, &layout, &meta);
    if (status == CT_OK) {
      const cl_uint zero = 0;
      status = ct_cl_check(ct_cl.clEnqueueWriteBuffer(exec.queue, counter, CL_TRUE, 0, sizeof zero,
                                                      &zero, 0, NULL, NULL),
                           "clEnqueueWriteBuffer");
    }
  }
  CT_CL_TENSOR_ARGS(x_buffer, off_x, x);
  const cl_int ndim = layout.ndim;
  if (status == CT_OK && n > 0) {
    const ct_cl_arg args[] = {CT_CL_ARG(x_buffer), CT_CL_ARG(off_x), CT_CL_ARG(meta),
                              CT_CL_ARG(ndim),     CT_CL_ARG(n),     CT_CL_ARG(first),
                              CT_CL_ARG(counter)};
    status = ct_cl_launch(&exec, &source, "ct_unique_mark", (size_t)n, args, 7);
    cl_uint distinct = 0;
    if (status == CT_OK) status = ct_cl_read(&exec, counter, 0, &distinct, sizeof distinct);
    count = distinct;
  }
  ct_tensor_info info = {x->dtype, 1, {count}};
  if (status == CT_OK) {
    status = ct_pl_allocate_output(ct_cl_host, call, 0, &info, CT_DEVICE_OPENCL,
                                   x->device.device_id, &out_data);
  }
  if (status == CT_OK && count > 0) {
    const ct_cl_arg args[] = {CT_CL_ARG(x_buffer), CT_CL_ARG(off_x), CT_CL_ARG(meta),
                              CT_CL_ARG(ndim),     CT_CL_ARG(n),     CT_CL_ARG(first),
                              CT_CL_ARG(out_data)};
    status = ct_cl_launch(&exec, &source, "ct_unique_place", (size_t)n, args, 7);
  }
  if (first) ct_cl.clReleaseMemObject(first);
  if (counter) ct_cl.clReleaseMemObject(counter);
  if (meta) ct_cl.clReleaseMemObject(meta);
  return status;
}

int ct_cl_register_dynamic(void) {
  for (int t = 0; t < CT_PL_TYPE_COUNT; ++t) {
    const ct_pl_type type = (ct_pl_type)t;
    const ct_pl_type nonzero[2] = {type, CT_PL_I64};
    const ct_pl_type mask[3] = {type, CT_PL_B8, type};
    const ct_pl_type unique[2] = {type, type};
    int status = ct_cl_register("nonzero", nonzero, 2, ct_cl_nonzero_run, NULL, NULL);
    if (status == CT_OK) {
      status = ct_cl_register("boolean_mask", mask, 3, ct_cl_boolean_mask_run, NULL, NULL);
    }
    if (status == CT_OK) {
      status = ct_cl_register("unique_values", unique, 2, ct_cl_unique_values_run, NULL, NULL);
    }
    if (status != CT_OK) return status;
  }
  return CT_OK;
}
