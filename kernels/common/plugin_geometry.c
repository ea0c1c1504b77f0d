/* plugin_geometry.c - attribute pairs, 4-D views, reduced axes and copy plans for the device
 * plugins. */
#include "plugin_geometry.h"

#include <stdlib.h>
#include <string.h>

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

int64_t ct_pl_reduce_layouts(const ct_kernel_call* call, bool single, bool innermost_densest,
                             ct_pl_layout* kept_layout, ct_pl_layout* reduced_layout) {
  const ct_tensor* x = call->inputs[0];
  const ct_tensor* out = call->outputs[0];
  bool mask[CT_MAX_NDIM];
  ct_pl_reduced_axes(&call->attrs[0], single, x->ndim, mask);
  const bool keepdims = call->attrs[1].value.b != 0;
  const int32_t in_size = (x->dtype.bits + 7) / 8, out_size = (out->dtype.bits + 7) / 8;
  int64_t x_strides[CT_MAX_NDIM], out_strides[CT_MAX_NDIM];
  ct_pl_tensor_strides(x, x_strides);
  ct_pl_tensor_strides(out, out_strides);

  int64_t kept_shape[CT_MAX_NDIM], reduced_shape[CT_MAX_NDIM];
  int64_t kept_strides[2][CT_MAX_NDIM], reduced_strides[CT_MAX_NDIM];
  int32_t kept = 0, reduced = 0, out_dim = 0;
  int64_t count = 1;
  for (int32_t d = 0; d < x->ndim; ++d) {
    const int64_t x_step = x_strides[d] * in_size;
    if (mask[d]) {
      reduced_shape[reduced] = x->shape[d];
      reduced_strides[reduced++] = x_step;
      count *= x->shape[d];
      if (keepdims) ++out_dim;
    } else {
      kept_shape[kept] = x->shape[d];
      kept_strides[0][kept] = out_strides[out_dim++] * out_size;
      kept_strides[1][kept++] = x_step;
    }
  }
  for (int32_t d = 1; d < reduced && innermost_densest; ++d) { /* insertion sort */
    const int64_t shape = reduced_shape[d], stride = reduced_strides[d];
    int32_t k = d;
    for (; k > 0 && llabs(reduced_strides[k - 1]) < llabs(stride); --k) {
      reduced_shape[k] = reduced_shape[k - 1];
      reduced_strides[k] = reduced_strides[k - 1];
    }
    reduced_shape[k] = shape;
    reduced_strides[k] = stride;
  }
  const int32_t kept_sizes[2] = {out_size, in_size};
  ct_pl_layout_begin(kept_layout, kept, kept_shape);
  ct_pl_layout_add_strides(kept_layout, kept_strides[0]);
  ct_pl_layout_add_strides(kept_layout, kept_strides[1]);
  ct_pl_layout_collapse(kept_layout, kept_sizes);
  ct_pl_layout_begin(reduced_layout, reduced, reduced_shape);
  ct_pl_layout_add_strides(reduced_layout, reduced_strides);
  ct_pl_layout_collapse(reduced_layout, &in_size);
  return count;
}

void ct_pl_matmul_plan(const ct_kernel_call* call, ct_pl_matmul* plan) {
  const ct_tensor* a = call->inputs[0];
  const ct_tensor* b = call->inputs[1];
  const ct_tensor* out = call->outputs[0];
  const int64_t size = (out->dtype.bits + 7) / 8;
  int64_t as[CT_MAX_NDIM], bs[CT_MAX_NDIM], os[CT_MAX_NDIM];
  ct_pl_tensor_strides(a, as);
  ct_pl_tensor_strides(b, bs);
  ct_pl_tensor_strides(out, os);
  const bool a_vector = a->ndim == 1, b_vector = b->ndim == 1;
  const int32_t batch = out->ndim - (a_vector ? 0 : 1) - (b_vector ? 0 : 1);
  plan->m = a_vector ? 1 : a->shape[a->ndim - 2];
  plan->k = a->shape[a->ndim - 1];
  plan->n = b_vector ? 1 : b->shape[b->ndim - 1];
  plan->a_m = a_vector ? 0 : as[a->ndim - 2] * size;
  plan->a_k = as[a->ndim - 1] * size;
  plan->b_k = (b_vector ? bs[0] : bs[b->ndim - 2]) * size;
  plan->b_n = b_vector ? 0 : bs[b->ndim - 1] * size;
  plan->out_m = a_vector ? 0 : os[batch] * size;
  plan->out_n = b_vector ? 0 : os[out->ndim - 1] * size;
  plan->batch = batch;
  for (int32_t d = 0; d < batch; ++d) {
    plan->batch_shape[d] = out->shape[d];
    plan->batch_strides[0][d] = os[d] * size;
    const int32_t ka = d - (batch - (a->ndim - 2)), kb = d - (batch - (b->ndim - 2));
    plan->batch_strides[1][d] = (a_vector || ka < 0 || a->shape[ka] == 1) ? 0 : as[ka] * size;
    plan->batch_strides[2][d] = (b_vector || kb < 0 || b->shape[kb] == 1) ? 0 : bs[kb] * size;
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

void ct_pl_permute_backward_layout(const ct_kernel_call* call, ct_pl_layout* layout) {
  const ct_tensor* grad = call->inputs[0];
  const ct_tensor* out = call->outputs[0];
  const int32_t size = (out->dtype.bits + 7) / 8;
  int64_t out_strides[CT_MAX_NDIM], moved[CT_MAX_NDIM];
  ct_pl_tensor_strides(out, out_strides);
  const ct_attr_value* axes = &call->attrs[0];
  for (int32_t d = 0; d < grad->ndim; ++d) {
    int64_t a = axes->value.ints[d];
    if (a < 0) a += out->ndim;
    moved[d] = grad->shape[d] == 1 ? 0 : out_strides[a] * size;
  }
  ct_pl_layout_begin(layout, grad->ndim, grad->shape);
  ct_pl_layout_add_strides(layout, moved);
  ct_pl_layout_add(layout, grad);
}

int ct_pl_concat_backward_each(const ct_kernel_call* call, ct_pl_slab_fn copy, void* context) {
  const ct_tensor* grad = call->inputs[0];
  const int32_t size = (grad->dtype.bits + 7) / 8;
  int64_t grad_strides[CT_MAX_NDIM];
  ct_pl_tensor_strides(grad, grad_strides);
  const bool flat = call->attrs[0].type == CT_ATTR_NONE;
  int64_t axis = flat ? 0 : call->attrs[0].value.i;
  if (axis < 0) axis += grad->ndim;
  int64_t position = 0;
  int status = CT_OK;
  for (int32_t k = 0; k < call->num_outputs && status == CT_OK; ++k) {
    const ct_tensor* out = call->outputs[k];
    const int64_t elements = ct_pl_tensor_elements(out);
    if (elements == 0) continue;
    int64_t src_strides[CT_MAX_NDIM];
    if (flat) {
      int64_t step = grad_strides[0] * size;
      for (int32_t d = out->ndim - 1; d >= 0; --d) {
        src_strides[d] = step;
        step *= out->shape[d];
      }
    } else {
      for (int32_t d = 0; d < out->ndim; ++d) src_strides[d] = grad_strides[d] * size;
    }
    ct_pl_layout layout;
    ct_pl_layout_begin(&layout, out->ndim, out->shape);
    ct_pl_layout_add(&layout, out);
    ct_pl_layout_add_strides(&layout, src_strides);
    status = copy(context, &layout, position * grad_strides[flat ? 0 : axis] * size, out);
    position += flat ? elements : out->shape[axis];
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

void ct_pl_sum_to_shape_call(const ct_kernel_call* call, ct_pl_sum_to_shape* sum) {
  const ct_tensor* x = call->inputs[0];
  const ct_tensor* out = call->outputs[0];
  int64_t out_strides[CT_MAX_NDIM];
  ct_pl_tensor_strides(out, out_strides);
  const int32_t lead = x->ndim - out->ndim;
  int64_t count = 0;
  for (int32_t k = 0; k < x->ndim; ++k) {
    const int32_t j = k - lead;
    sum->shape[k] = j < 0 ? 1 : out->shape[j];
    sum->strides[k] = j < 0 ? 0 : out_strides[j];
    if (j < 0 || (out->shape[j] == 1 && x->shape[k] != 1)) sum->axes[count++] = k;
  }
  sum->view = *out;
  sum->view.ndim = x->ndim;
  sum->view.shape = sum->shape;
  sum->view.strides = sum->strides;
  sum->outputs[0] = &sum->view;
  memset(sum->attrs, 0, sizeof sum->attrs);
  sum->attrs[0].type = CT_ATTR_INT_LIST;
  sum->attrs[0].count = count;
  sum->attrs[0].value.ints = sum->axes;
  sum->attrs[1].type = CT_ATTR_BOOL;
  sum->attrs[1].value.b = 1;
  sum->call = *call;
  sum->call.num_inputs = 1;
  sum->call.outputs = sum->outputs;
  sum->call.attrs = sum->attrs;
}

_Static_assert(sizeof(ct_pl_pool_window) == 11 * sizeof(int64_t),
               "ct_pl_pool_window is eleven int64s, the OpenCL kernels' parameter layout");

void ct_pl_pool_window_read(const ct_attr_value* attrs, int32_t mode, ct_pl_pool_window* window) {
  static const int64_t ones[2] = {1, 1}, zeros[2] = {0, 0};
  memset(window, 0, sizeof *window);
  window->dilation[0] = window->dilation[1] = 1;
  window->count_include_pad = 1;
  if (mode == CT_PL_POOL_ADAPTIVE) return;
  ct_pl_attr_pair(&attrs[0], ones, window->kernel);
  ct_pl_attr_pair(&attrs[1], window->kernel, window->stride);
  ct_pl_attr_pair(&attrs[2], zeros, window->padding);
  if (mode == CT_PL_POOL_MAX) {
    ct_pl_attr_pair(&attrs[3], ones, window->dilation);
  } else {
    window->count_include_pad = attrs[4].value.b != 0;
    window->has_divisor = attrs[5].type == CT_ATTR_INT;
    window->divisor = window->has_divisor ? attrs[5].value.i : 0;
  }
}
