/* plugin_layout.c - broadcasting and dim merging for the device plugins' strided kernels. */
#include "plugin_layout.h"

#include <string.h>

void ct_pl_tensor_strides(const ct_tensor* t, int64_t* strides) {
  int64_t step = 1;
  for (int32_t d = t->ndim - 1; d >= 0; --d) {
    strides[d] = t->strides ? t->strides[d] : step;
    step *= t->shape[d];
  }
}

int64_t ct_pl_tensor_elements(const ct_tensor* t) {
  int64_t count = 1;
  for (int32_t d = 0; d < t->ndim; ++d) count *= t->shape[d];
  return count;
}

void ct_pl_layout_begin(ct_pl_layout* layout, int32_t ndim, const int64_t* shape) {
  layout->ndim = ndim;
  layout->count = 0;
  layout->contiguous = false;
  layout->elements = 1;
  for (int32_t d = 0; d < ndim; ++d) {
    layout->shape[d] = shape[d];
    layout->elements *= shape[d];
  }
}

void ct_pl_layout_add(ct_pl_layout* layout, const ct_tensor* t) {
  int64_t strides[CT_MAX_NDIM];
  ct_pl_tensor_strides(t, strides);
  const int32_t size = (t->dtype.bits + 7) / 8;
  int64_t* out = layout->strides[layout->count++];
  const int32_t lead = layout->ndim - t->ndim;
  for (int32_t d = 0; d < layout->ndim; ++d) {
    const int32_t k = d - lead;
    out[d] = (k < 0 || t->shape[k] == 1) ? 0 : strides[k] * size;
  }
}

void ct_pl_layout_add_strides(ct_pl_layout* layout, const int64_t* byte_strides) {
  memcpy(layout->strides[layout->count++], byte_strides, sizeof(int64_t) * (size_t)layout->ndim);
}

void ct_pl_layout_collapse(ct_pl_layout* layout, const int32_t* sizes) {
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
  layout->contiguous = false;
  if (!sizes) return;
  if (kept == 0) { /* a single element: one dense run of length 1 */
    layout->ndim = 1;
    layout->shape[0] = 1;
    for (int32_t k = 0; k < layout->count; ++k) layout->strides[k][0] = sizes[k];
  }
  layout->contiguous = layout->ndim == 1;
  for (int32_t k = 0; k < layout->count && layout->contiguous; ++k) {
    layout->contiguous = layout->strides[k][0] == sizes[k];
  }
}

void ct_pl_lane_layout(ct_pl_layout* layout, const ct_tensor* t, int32_t axis) {
  int64_t shape[CT_MAX_NDIM];
  for (int32_t d = 0; d < t->ndim; ++d) shape[d] = d == axis ? 1 : t->shape[d];
  ct_pl_layout_begin(layout, t->ndim, shape);
}

int64_t ct_pl_byte_stride(const ct_tensor* t, int32_t axis) {
  if (t->ndim == 0) return 0;
  int64_t strides[CT_MAX_NDIM];
  ct_pl_tensor_strides(t, strides);
  return strides[axis] * ((t->dtype.bits + 7) / 8);
}
