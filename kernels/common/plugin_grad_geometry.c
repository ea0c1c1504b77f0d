/* plugin_grad_geometry.c - see plugin_grad_geometry.h. */
#include "plugin_grad_geometry.h"

#include "plugin_geometry.h"

int64_t ct_pl_reduce_grad_layouts(const ct_kernel_call* call, ct_pl_layout* kept_layout,
                                  ct_pl_layout* reduced_layout) {
  const ct_tensor* g = call->inputs[0];
  const ct_tensor* x = call->inputs[1];
  const ct_tensor* out = call->num_inputs > 2 ? call->inputs[2] : NULL;
  const ct_tensor* gx = call->outputs[0];
  bool mask[CT_MAX_NDIM];
  ct_pl_reduced_axes(&call->attrs[0], false, x->ndim, mask);
  const bool keepdims = call->attrs[1].value.b != 0;
  const int64_t size = (x->dtype.bits + 7) / 8;
  int64_t xs[CT_MAX_NDIM], gs[CT_MAX_NDIM], os[CT_MAX_NDIM] = {0}, gxs[CT_MAX_NDIM];
  ct_pl_tensor_strides(x, xs);
  ct_pl_tensor_strides(g, gs);
  if (out) ct_pl_tensor_strides(out, os);
  ct_pl_tensor_strides(gx, gxs);
  int64_t kept_shape[CT_MAX_NDIM], reduced_shape[CT_MAX_NDIM];
  int64_t kept_strides[4][CT_MAX_NDIM], reduced_strides[2][CT_MAX_NDIM];
  int32_t kept = 0, reduced = 0, g_dim = 0;
  int64_t count = 1;
  for (int32_t d = 0; d < x->ndim; ++d) {
    if (mask[d]) {
      reduced_shape[reduced] = x->shape[d];
      reduced_strides[0][reduced] = xs[d] * size;
      reduced_strides[1][reduced++] = gxs[d] * size;
      count *= x->shape[d];
      if (keepdims) ++g_dim;
    } else {
      kept_shape[kept] = x->shape[d];
      kept_strides[0][kept] = gxs[d] * size;
      kept_strides[1][kept] = gs[g_dim] * size;
      kept_strides[2][kept] = xs[d] * size;
      kept_strides[3][kept++] = os[g_dim] * size;
      ++g_dim;
    }
  }
  const int32_t sizes[4] = {(int32_t)size, (int32_t)size, (int32_t)size, (int32_t)size};
  ct_pl_layout_begin(kept_layout, kept, kept_shape);
  for (int k = 0; k < 4; ++k) ct_pl_layout_add_strides(kept_layout, kept_strides[k]);
  ct_pl_layout_collapse(kept_layout, sizes);
  ct_pl_layout_begin(reduced_layout, reduced, reduced_shape);
  ct_pl_layout_add_strides(reduced_layout, reduced_strides[0]);
  ct_pl_layout_add_strides(reduced_layout, reduced_strides[1]);
  ct_pl_layout_collapse(reduced_layout, NULL);
  return count;
}

void ct_pl_matmul_grad_layouts(const ct_kernel_call* call, int which, ct_pl_layout* kept_layout,
                               ct_pl_layout* reduced_layout) {
  const ct_tensor* g = call->inputs[0];
  const ct_tensor* x1 = call->inputs[1];
  const ct_tensor* x2 = call->inputs[2];
  const ct_tensor* self = which == 0 ? x1 : x2;
  const ct_tensor* other = which == 0 ? x2 : x1;
  const ct_tensor* gx = call->outputs[which];
  const int64_t size = (g->dtype.bits + 7) / 8;
  int64_t s1[CT_MAX_NDIM], s2[CT_MAX_NDIM], sg[CT_MAX_NDIM], sgx[CT_MAX_NDIM];
  ct_pl_tensor_strides(x1, s1);
  ct_pl_tensor_strides(x2, s2);
  ct_pl_tensor_strides(g, sg);
  ct_pl_tensor_strides(gx, sgx);
  const int64_t* s_self = which == 0 ? s1 : s2;
  const int64_t* s_other = which == 0 ? s2 : s1;
  const int32_t n1 = x1->ndim, n2 = x2->ndim, ng = g->ndim;
  const int64_t m = n1 > 1 ? x1->shape[n1 - 2] : 1;
  const int64_t n = n2 > 1 ? x2->shape[n2 - 1] : 1;
  int32_t tail = ng;
  const int64_t g_n = n2 > 1 ? sg[--tail] : 0;
  const int64_t g_m = n1 > 1 ? sg[--tail] : 0;
  /* x1 is (m, k) or (k); x2 (k, n) or (k). Element strides of each matrix dim (0: absent). */
  const int64_t x1_m = n1 > 1 ? s1[n1 - 2] : 0, x1_k = s1[n1 - 1];
  const int64_t x2_k = s2[n2 > 1 ? n2 - 2 : 0], x2_n = n2 > 1 ? s2[n2 - 1] : 0;
  const int32_t b_self = (which == 0 ? n1 : n2) > 2 ? (which == 0 ? n1 : n2) - 2 : 0;
  const int32_t b_other = (which == 0 ? n2 : n1) > 2 ? (which == 0 ? n2 : n1) - 2 : 0;
  int64_t kept_shape[CT_MAX_NDIM], reduced_shape[CT_MAX_NDIM];
  int64_t ks[3][CT_MAX_NDIM], rs[2][CT_MAX_NDIM];
  int32_t kept = 0, reduced = 0;
  /* A is grad_out for grad_x1 and x1 for grad_x2; B the other. */
  for (int32_t q = 0; q < tail; ++q) {
    const int64_t extent = g->shape[q];
    const int32_t ks_self = q - (tail - b_self), ks_other = q - (tail - b_other);
    const bool self_has = ks_self >= 0 && self->shape[ks_self] == extent;
    const int64_t other_stride =
        ks_other >= 0 && other->shape[ks_other] != 1 ? s_other[ks_other] : 0;
    const int64_t a = which == 0 ? sg[q] : other_stride;
    const int64_t b = which == 0 ? other_stride : sg[q];
    if (self_has) {
      kept_shape[kept] = extent;
      ks[0][kept] = sgx[ks_self] * size;
      ks[1][kept] = a * size;
      ks[2][kept++] = b * size;
    } else {
      reduced_shape[reduced] = extent;
      rs[0][reduced] = a * size;
      rs[1][reduced++] = b * size;
    }
  }
  (void)s_self;
  if (which == 0) { /* grad_x1 (m, k) = g (m, n) . x2^T (n, k) */
    if (n1 > 1) {
      kept_shape[kept] = m;
      ks[0][kept] = sgx[n1 - 2] * size;
      ks[1][kept] = g_m * size;
      ks[2][kept++] = 0;
    }
    kept_shape[kept] = x1->shape[n1 - 1];
    ks[0][kept] = sgx[n1 - 1] * size;
    ks[1][kept] = 0;
    ks[2][kept++] = x2_k * size;
    reduced_shape[reduced] = n;
    rs[0][reduced] = g_n * size;
    rs[1][reduced++] = x2_n * size;
  } else { /* grad_x2 (k, n) = x1^T (k, m) . g (m, n) */
    kept_shape[kept] = x2->shape[n2 > 1 ? n2 - 2 : 0];
    ks[0][kept] = sgx[n2 > 1 ? n2 - 2 : 0] * size;
    ks[1][kept] = x1_k * size;
    ks[2][kept++] = 0;
    if (n2 > 1) {
      kept_shape[kept] = n;
      ks[0][kept] = sgx[n2 - 1] * size;
      ks[1][kept] = 0;
      ks[2][kept++] = g_n * size;
    }
    reduced_shape[reduced] = m;
    rs[0][reduced] = x1_m * size;
    rs[1][reduced++] = g_m * size;
  }
  ct_pl_layout_begin(kept_layout, kept, kept_shape);
  for (int k = 0; k < 3; ++k) ct_pl_layout_add_strides(kept_layout, ks[k]);
  ct_pl_layout_collapse(kept_layout, NULL);
  ct_pl_layout_begin(reduced_layout, reduced, reduced_shape);
  ct_pl_layout_add_strides(reduced_layout, rs[0]);
  ct_pl_layout_add_strides(reduced_layout, rs[1]);
  ct_pl_layout_collapse(reduced_layout, NULL);
}

int32_t ct_pl_take_along_grad_layouts(const ct_kernel_call* call, ct_pl_layout* lanes,
                                      ct_pl_layout* reduced) {
  const ct_tensor* g = call->inputs[0];
  const ct_tensor* indices = call->inputs[2];
  const ct_tensor* gx = call->outputs[0];
  const int64_t attr_axis = call->attrs[0].value.i;
  const int32_t axis = (int32_t)(attr_axis < 0 ? attr_axis + gx->ndim : attr_axis);
  const int64_t g_size = (g->dtype.bits + 7) / 8, i_size = (indices->dtype.bits + 7) / 8;
  int64_t gs[CT_MAX_NDIM], is[CT_MAX_NDIM];
  ct_pl_tensor_strides(g, gs);
  ct_pl_tensor_strides(indices, is);
  int64_t lane_shape[CT_MAX_NDIM], reduced_shape[CT_MAX_NDIM];
  int64_t lane_strides[2][CT_MAX_NDIM], reduced_strides[2][CT_MAX_NDIM];
  int32_t count = 0;
  for (int32_t d = 0; d < gx->ndim; ++d) {
    const int64_t g_stride = gs[d] * g_size;
    const int64_t i_stride = indices->shape[d] == 1 ? 0 : is[d] * i_size;
    const bool summed = d == axis || (gx->shape[d] == 1 && g->shape[d] != 1);
    lane_shape[d] = summed ? 1 : gx->shape[d];
    lane_strides[0][d] = summed ? 0 : g_stride;
    lane_strides[1][d] = summed ? 0 : i_stride;
    if (summed) {
      reduced_shape[count] = g->shape[d];
      reduced_strides[0][count] = g_stride;
      reduced_strides[1][count++] = i_stride;
    }
  }
  ct_pl_layout_begin(lanes, gx->ndim, lane_shape);
  ct_pl_layout_add(lanes, gx);
  ct_pl_layout_add_strides(lanes, lane_strides[0]);
  ct_pl_layout_add_strides(lanes, lane_strides[1]);
  ct_pl_layout_collapse(lanes, NULL);
  ct_pl_layout_begin(reduced, count, reduced_shape);
  ct_pl_layout_add_strides(reduced, reduced_strides[0]);
  ct_pl_layout_add_strides(reduced, reduced_strides[1]);
  ct_pl_layout_collapse(reduced, NULL);
  return axis;
}
