/* cl_layout.c - broadcasting, dim merging and parameter buffers for strided kernels. */
#include "cl_layout.h"

#include <string.h>

#include "cl_types.h"

void ct_cl_tensor_strides(const ct_tensor* t, int64_t* strides) {
  int64_t step = 1;
  for (int32_t d = t->ndim - 1; d >= 0; --d) {
    strides[d] = t->strides ? t->strides[d] : step;
    step *= t->shape[d];
  }
}

int64_t ct_cl_tensor_elements(const ct_tensor* t) {
  int64_t count = 1;
  for (int32_t d = 0; d < t->ndim; ++d) count *= t->shape[d];
  return count;
}

void ct_cl_layout_begin(ct_cl_layout* layout, int32_t ndim, const int64_t* shape) {
  layout->ndim = ndim;
  layout->count = 0;
  layout->elements = 1;
  for (int32_t d = 0; d < ndim; ++d) {
    layout->shape[d] = shape[d];
    layout->elements *= shape[d];
  }
}

void ct_cl_layout_add(ct_cl_layout* layout, const ct_tensor* t) {
  int64_t strides[CT_MAX_NDIM];
  ct_cl_tensor_strides(t, strides);
  const int32_t size = (t->dtype.bits + 7) / 8;
  int64_t* out = layout->strides[layout->count++];
  const int32_t lead = layout->ndim - t->ndim;
  for (int32_t d = 0; d < layout->ndim; ++d) {
    const int32_t k = d - lead;
    out[d] = (k < 0 || t->shape[k] == 1) ? 0 : strides[k] * size;
  }
}

void ct_cl_layout_add_strides(ct_cl_layout* layout, const int64_t* byte_strides) {
  memcpy(layout->strides[layout->count++], byte_strides, sizeof(int64_t) * (size_t)layout->ndim);
}

void ct_cl_layout_collapse(ct_cl_layout* layout) {
  int32_t kept = 0;
  for (int32_t d = 0; d < layout->ndim; ++d) {
    if (layout->shape[d] == 1) continue;
    bool merge = kept > 0;
    for (int32_t k = 0; k < layout->count && merge; ++k) {
      merge = layout->strides[k][kept - 1] == layout->strides[k][d] * layout->shape[d];
    }
    if (merge) {
      layout->shape[kept - 1] *= layout->shape[d];
      for (int32_t k = 0; k < layout->count; ++k) {
        layout->strides[k][kept - 1] = layout->strides[k][d];
      }
    } else {
      layout->shape[kept] = layout->shape[d];
      for (int32_t k = 0; k < layout->count; ++k) layout->strides[k][kept] = layout->strides[k][d];
      ++kept;
    }
  }
  layout->ndim = kept;
}

bool ct_cl_layout_contiguous(const ct_cl_layout* layout, const int32_t* sizes) {
  if (layout->ndim > 1) return false;
  for (int32_t k = 0; k < layout->count && layout->ndim == 1; ++k) {
    if (layout->strides[k][0] != sizes[k]) return false;
  }
  return true;
}

int ct_cl_layout_meta(const ct_cl_exec* exec, const ct_cl_layout* layout, cl_mem* meta) {
  int64_t values[CT_MAX_NDIM * (CT_CL_MAX_OPERANDS + 1)];
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

void ct_cl_lane_layout(ct_cl_layout* layout, const ct_tensor* t, int32_t axis) {
  int64_t shape[CT_MAX_NDIM];
  for (int32_t d = 0; d < t->ndim; ++d) shape[d] = d == axis ? 1 : t->shape[d];
  ct_cl_layout_begin(layout, t->ndim, shape);
}

int64_t ct_cl_byte_stride(const ct_tensor* t, int32_t axis) {
  if (t->ndim == 0) return 0;
  int64_t strides[CT_MAX_NDIM];
  ct_cl_tensor_strides(t, strides);
  return strides[axis] * ((t->dtype.bits + 7) / 8);
}
