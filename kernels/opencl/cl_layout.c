/* cl_layout.c - parameter buffers and index-loop source for strided OpenCL kernels. */
#include "cl_layout.h"

#include <string.h>

#include "cl_types.h"

int ct_cl_layout_meta(const ct_cl_exec* exec, const ct_pl_layout* layout, cl_mem* meta) {
  int64_t values[CT_MAX_NDIM * (CT_PL_MAX_OPERANDS + 1)];
  const int32_t n = layout->ndim;
  memcpy(values, layout->shape, sizeof(int64_t) * (size_t)n);
  for (int32_t k = 0; k < layout->count; ++k) {
    memcpy(values + (size_t)(k + 1) * n, layout->strides[k], sizeof(int64_t) * (size_t)n);
  }
  return ct_cl_meta_buffer(exec, values, (size_t)n * (size_t)(layout->count + 1), meta);
}

void ct_cl_source_index_loop_named(ct_cl_source* source, const char* index, const char* meta,
                                   const char* ndim, const char* prefix, int32_t operands) {
  ct_cl_source_add(source,
                   "  { long rem = %s;\n    for (int d = %s - 1; d >= 0; --d) {\n"
                   "      const long extent = %s[d];\n"
                   "      const long index = rem %% extent;\n      rem /= extent;\n",
                   index, ndim, meta);
  for (int32_t k = 0; k < operands; ++k) {
    ct_cl_source_add(source, "      %s%d += index * %s[%d * %s + d];\n", prefix, k, meta, k + 1,
                     ndim);
  }
  ct_cl_source_add(source, "    } }\n");
}

void ct_cl_source_index_loop(ct_cl_source* source, int32_t operands) {
  ct_cl_source_index_loop_named(source, "i", "meta", "ndim", "off", operands);
}

int ct_cl_find_index_outside(const ct_cl_exec* exec, const ct_tensor* indices, int64_t lo,
                             int64_t hi, bool* found, int64_t* value) {
  *found = false;
  ct_pl_layout layout;
  ct_pl_layout_begin(&layout, indices->ndim, indices->shape);
  ct_pl_layout_add(&layout, indices);
  ct_pl_layout_collapse(&layout, NULL);
  const int64_t n = layout.elements;
  if (n == 0) return CT_OK;
  ct_cl_source source;
  ct_cl_source_begin(&source, exec);
  ct_cl_source_add(&source,
                   "__kernel void ct_index_outside(__global const char* idx, long off_idx, "
                   "__global const long* meta, int ndim, long n, long lo, long hi, __global long* "
                   "found) {\n  const long i = get_global_id(0);\n  if (i >= n) return;\n"
                   "  long off0 = off_idx;\n");
  ct_cl_source_index_loop(&source, 1);
  ct_cl_source_add(&source,
                   "  const long j = LD_%s(idx, off0);\n"
                   "  if (j < lo || j >= hi) { found[0] = 1; found[1] = j; }\n}\n",
                   indices->dtype.bits == 64 ? "i64" : "i32");
  cl_mem meta = NULL, found_buffer = NULL;
  int64_t result[2] = {0, 0};
  int status = ct_cl_layout_meta(exec, &layout, &meta);
  if (status == CT_OK) status = ct_cl_scratch_buffer(exec, sizeof result, &found_buffer);
  if (status == CT_OK) {
    status = ct_cl_check(ct_cl.clEnqueueWriteBuffer(exec->queue, found_buffer, CL_TRUE, 0,
                                                    sizeof result, result, 0, NULL, NULL),
                         "clEnqueueWriteBuffer");
  }
  if (status == CT_OK) {
    CT_CL_TENSOR_ARGS(idx_buffer, off_idx, indices);
    const cl_int ndim = layout.ndim;
    const ct_cl_arg args[] = {CT_CL_ARG(idx_buffer), CT_CL_ARG(off_idx),     CT_CL_ARG(meta),
                              CT_CL_ARG(ndim),       CT_CL_ARG(n),           CT_CL_ARG(lo),
                              CT_CL_ARG(hi),         CT_CL_ARG(found_buffer)};
    status = ct_cl_launch(exec, &source, "ct_index_outside", (size_t)n, args,
                          (int)(sizeof args / sizeof *args));
  }
  if (status == CT_OK) status = ct_cl_read(exec, found_buffer, 0, result, sizeof result);
  if (meta) ct_cl.clReleaseMemObject(meta);
  if (found_buffer) ct_cl.clReleaseMemObject(found_buffer);
  if (status == CT_OK) {
    *found = result[0] != 0;
    *value = result[1];
  }
  return status;
}
