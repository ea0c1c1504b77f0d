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
