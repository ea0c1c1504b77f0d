/* index_plan.h - the geometry of the gathers and scatters by index tuples (put_along_axis,
 * gather_nd, scatter_nd, index_select, index_add and their backward ops), planned on the host the
 * same way by every device: the CPU backend, the OpenCL and the CUDA plugins include this header
 * (plain C, valid C++; no symbols: everything is static inline).
 *
 * Each op walks a space W of positions w (row-major): for a gather W is the output's shape, for a
 * scatter the shape of the values it scatters. Position w addresses the element c(w) of x (or of
 * any array of x's shape): a W dim either addresses one x dim directly (w_xdim[u] = that dim) or is
 * "reduced" (w_xdim[u] = -1: an index dim, or a dim along which x has extent 1 and W more), and
 * `components` index values read at w (at byte offset w_strides[0] . w, then component_stride
 * apart) give the coordinates of the x dims comp_xdim[m] (negative ones counting from the end).
 * The other x dims (extent 1) have coordinate 0.
 *
 * So the positions that land on one element e of x are those whose direct dims equal e's
 * coordinates, found by a loop over the reduced dims in row-major order: this is the order in
 * which every device applies a scatter's updates to one element, hence the same (deterministic)
 * result on every device and thread count: the last update wins for reduction "none", sums and
 * products accumulate in this order. */
#ifndef CTENSOR_INDEX_PLAN_H_
#define CTENSOR_INDEX_PLAN_H_

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ctensor_backend.h"

/* Arrays of x's shape and of W's shape whose strides a plan carries. */
#define CT_IP_X_OPERANDS 4
#define CT_IP_W_OPERANDS 3

/* What the op's indices mean. */
typedef enum ct_index_kind {
  CT_IP_ALONG_AXIS = 0, /* put_along_axis: indices of x's ndim, broadcast with x off the axis */
  CT_IP_ND = 1,         /* gather_nd / scatter_nd: index tuples in the last dim of indices */
  CT_IP_SELECT = 2      /* index_select / index_add: a 0-d or 1-d index list along an axis */
} ct_index_kind;

/* Reductions of the scatters, in the order of their attribute's names (ct_index_reduction). */
typedef enum ct_index_reduction {
  CT_IP_NONE = 0,
  CT_IP_ADD = 1,
  CT_IP_MULTIPLY = 2,
  CT_IP_MAX = 3,
  CT_IP_MIN = 4
} ct_index_reduction;

/* Every field is an int64 so that the struct is a flat int64 array (the OpenCL kernels read it
 * from a buffer by the offsets of ct_index_plan_offsets; the CUDA kernels take it by value). */
typedef struct ct_index_plan {
  int64_t xnd, wnd, components, component_stride; /* component_stride in bytes */
  int64_t x_shape[CT_MAX_NDIM];
  int64_t x_strides[CT_IP_X_OPERANDS][CT_MAX_NDIM]; /* bytes */
  int64_t w_shape[CT_MAX_NDIM];
  int64_t w_xdim[CT_MAX_NDIM];
  int64_t w_strides[CT_IP_W_OPERANDS][CT_MAX_NDIM]; /* bytes; operand 0: the indices */
  int64_t extent[CT_MAX_NDIM];                      /* per component: its x dim's extent */
  int64_t comp_xdim[CT_MAX_NDIM];                   /* per component: the x dim it indexes */
} ct_index_plan;

/* The reduction named `name`, or -1. */
static inline int ct_index_reduction_of(const char* name) {
  static const char* const names[] = {"none", "add", "multiply", "max", "min"};
  for (int r = 0; r < 5; ++r) {
    if (name && strcmp(name, names[r]) == 0) return r;
  }
  return -1;
}

/* Byte strides of `t` (compact row-major when t->strides is NULL). */
static inline void ct_index_byte_strides(const ct_tensor* t, int64_t* strides) {
  const int64_t size = ((int64_t)t->dtype.bits * t->dtype.lanes + 7) / 8;
  int64_t step = size;
  for (int32_t k = t->ndim - 1; k >= 0; --k) {
    strides[k] = t->strides ? t->strides[k] * size : step;
    step *= t->shape[k];
  }
}

static inline int64_t ct_index_numel(int64_t ndim, const int64_t* shape) {
  int64_t n = 1;
  for (int64_t k = 0; k < ndim; ++k) n *= shape[k];
  return n;
}

/* Plans an op of `kind` on x and its indices (validated by the op's infer). `param` is the axis
 * (normalised or not) for CT_IP_ALONG_AXIS and CT_IP_SELECT, batch_dims for CT_IP_ND. Sets the
 * indices as W operand 0; no other operand. */
static inline void ct_index_plan_begin(ct_index_plan* p, ct_index_kind kind, const ct_tensor* x,
                                       const ct_tensor* indices, int64_t param) {
  memset(p, 0, sizeof *p);
  int64_t is[CT_MAX_NDIM];
  ct_index_byte_strides(indices, is);
  p->xnd = x->ndim;
  for (int32_t k = 0; k < x->ndim; ++k) p->x_shape[k] = x->shape[k];
  if (kind == CT_IP_ND) {
    const int64_t b = param, q = indices->ndim, K = indices->shape[q - 1];
    p->components = K;
    p->component_stride = is[q - 1];
    p->wnd = q - 1 + x->ndim - b - K;
    for (int64_t u = 0; u < q - 1; ++u) {
      p->w_shape[u] = indices->shape[u];
      p->w_xdim[u] = u < b ? u : -1;
      p->w_strides[0][u] = is[u];
    }
    for (int64_t u = q - 1; u < p->wnd; ++u) {
      p->w_xdim[u] = b + K + (u - (q - 1));
      p->w_shape[u] = x->shape[p->w_xdim[u]];
    }
    for (int64_t m = 0; m < K; ++m) {
      p->comp_xdim[m] = b + m;
      p->extent[m] = x->shape[b + m];
    }
    return;
  }
  const int64_t axis = param < 0 ? param + x->ndim : param;
  p->components = 1;
  p->comp_xdim[0] = axis;
  p->extent[0] = x->shape[axis];
  p->wnd = x->ndim;
  for (int32_t u = 0; u < x->ndim; ++u) {
    if (kind == CT_IP_SELECT) {
      p->w_shape[u] = u == axis ? ct_index_numel(indices->ndim, indices->shape) : x->shape[u];
      p->w_xdim[u] = u == axis ? -1 : u;
      p->w_strides[0][u] = u == axis && indices->ndim == 1 ? is[0] : 0;
      continue;
    }
    /* along an axis: W is x's shape (the axis at extent 1) broadcast with the indices' */
    const int64_t xe = u == axis ? 1 : x->shape[u], ie = indices->shape[u];
    p->w_shape[u] = xe == 1 ? ie : xe;
    p->w_xdim[u] = u != axis && x->shape[u] == p->w_shape[u] ? u : -1;
    p->w_strides[0][u] = ie == 1 ? 0 : is[u];
  }
}

/* Array `t` of x's shape as X operand `o`. */
static inline void ct_index_plan_x(ct_index_plan* p, int o, const ct_tensor* t) {
  ct_index_byte_strides(t, p->x_strides[o]);
}

/* Array `t`, broadcast (right-aligned) to W, as W operand `o`. */
static inline void ct_index_plan_w(ct_index_plan* p, int o, const ct_tensor* t) {
  int64_t s[CT_MAX_NDIM];
  ct_index_byte_strides(t, s);
  for (int64_t u = 0; u < p->wnd; ++u) {
    const int64_t k = u - (p->wnd - t->ndim);
    p->w_strides[o][u] = k < 0 || t->shape[k] == 1 ? 0 : s[k];
  }
}

/* The index check, made before anything is written: every index value v of component m must lie
 * in [-extent[m], extent[m]). The indices' elements in row-major order have component
 * (position % components) for CT_IP_ND (the last dim holds the tuples), 0 otherwise. */
static inline int64_t ct_index_check_components(const ct_index_plan* p, ct_index_kind kind) {
  return kind == CT_IP_ND ? p->components : 1;
}

/* Byte offsets of the flat int64 fields, for the OpenCL kernels' source. */
#define CT_INDEX_PLAN_OFFSET(field) ((int64_t)(offsetof(ct_index_plan, field) / sizeof(int64_t)))

#endif /* CTENSOR_INDEX_PLAN_H_ */
