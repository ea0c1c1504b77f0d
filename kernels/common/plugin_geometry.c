/* plugin_geometry.c - attribute pairs, 4-D views, reduced axes and copy plans for the device
 * plugins. */
#include "plugin_geometry.h"

void ct_pl_attr_pair(const ct_attr_value* value, const int64_t* fallback, int64_t out[2]) {
  if (value->type != CT_ATTR_INT_LIST || value->count == 0) {
    out[0] = fallback[0];
    out[1] = fallback[1];
  } else {
    out[0] = value->value.ints[0];
    out[1] = value->value.ints[value->count - 1];
  }
}

void ct_pl_nchw(const ct_tensor* t, int64_t shape[4], int64_t strides[4]) {
  int64_t all[CT_MAX_NDIM];
  ct_pl_tensor_strides(t, all);
  const int32_t lead = 4 - t->ndim;
  for (int32_t d = 0; d < 4; ++d) {
    shape[d] = d < lead ? 1 : t->shape[d - lead];
    strides[d] = d < lead ? 0 : all[d - lead];
  }
}

void ct_pl_reduced_axes(const ct_attr_value* axis, bool single, int32_t ndim, bool* mask) {
  for (int32_t d = 0; d < ndim; ++d) mask[d] = axis->type == CT_ATTR_NONE;
  if (axis->type == CT_ATTR_NONE) return;
  if (single || axis->type == CT_ATTR_INT) {
    const int64_t a = axis->type == CT_ATTR_INT ? axis->value.i : axis->value.ints[0];
    mask[a < 0 ? a + ndim : a] = true;
    return;
  }
  for (int64_t k = 0; k < axis->count; ++k) {
    const int64_t a = axis->value.ints[k];
    mask[a < 0 ? a + ndim : a] = true;
  }
}

void ct_pl_permute_layout(const ct_kernel_call* call, ct_pl_layout* layout) {
  const ct_tensor* x = call->inputs[0];
  const ct_tensor* out = call->outputs[0];
  const int32_t size = (x->dtype.bits + 7) / 8;
  int64_t x_strides[CT_MAX_NDIM], permuted[CT_MAX_NDIM];
  ct_pl_tensor_strides(x, x_strides);
  const ct_attr_value* axes = &call->attrs[0];
  for (int32_t d = 0; d < out->ndim; ++d) {
    int64_t a = axes->type == CT_ATTR_INT_LIST ? axes->value.ints[d] : out->ndim - 1 - d;
    if (a < 0) a += x->ndim;
    permuted[d] = out->shape[d] == 1 ? 0 : x_strides[a] * size;
  }
  ct_pl_layout_begin(layout, out->ndim, out->shape);
  ct_pl_layout_add(layout, out);
  ct_pl_layout_add_strides(layout, permuted);
}

int ct_pl_concat_each(const ct_kernel_call* call, ct_pl_copy_fn copy, void* context) {
  const ct_tensor* out = call->outputs[0];
  const int32_t size = (out->dtype.bits + 7) / 8;
  int64_t out_strides[CT_MAX_NDIM];
  ct_pl_tensor_strides(out, out_strides);
  const bool flat = call->attrs[0].type == CT_ATTR_NONE;
  int64_t axis = flat ? 0 : call->attrs[0].value.i;
  if (axis < 0) axis += out->ndim;
  int64_t position = 0;
  int status = CT_OK;
  for (int32_t k = 0; k < call->num_inputs && status == CT_OK; ++k) {
    const ct_tensor* x = call->inputs[k];
    const int64_t elements = ct_pl_tensor_elements(x);
    if (elements == 0) continue;
    int64_t dst_strides[CT_MAX_NDIM];
    if (flat) {
      int64_t step = out_strides[0] * size;
      for (int32_t d = x->ndim - 1; d >= 0; --d) {
        dst_strides[d] = step;
        step *= x->shape[d];
      }
    } else {
      for (int32_t d = 0; d < x->ndim; ++d) dst_strides[d] = out_strides[d] * size;
    }
    ct_pl_layout layout;
    ct_pl_layout_begin(&layout, x->ndim, x->shape);
    ct_pl_layout_add_strides(&layout, dst_strides);
    ct_pl_layout_add(&layout, x);
    status = copy(context, &layout, position * out_strides[flat ? 0 : axis] * size, x);
    position += flat ? elements : x->shape[axis];
  }
  return status;
}

int ct_pl_allocate_output(const ct_host_api* host, const ct_kernel_call* call, int32_t index,
                          const ct_tensor_info* info, int32_t device_type, int32_t device_id,
                          void** data) {
  *data = NULL;
  int status = call->allocator->allocate(call->allocator->user_data, index, info, device_type,
                                         device_id, data);
  int64_t numel = 1;
  for (int32_t k = 0; k < info->ndim; ++k) numel *= info->shape[k];
  if (status == CT_OK && !*data && numel > 0) status = CT_ERROR_OUT_OF_MEMORY;
  if (status == CT_OK) return CT_OK;
  if (status > 0) status = CT_ERROR_OUT_OF_MEMORY;
  return host->set_error(status, "%s: the caller's allocator failed for output %d (%lld elements)",
                         call->schema->name, index, (long long)numel);
}
