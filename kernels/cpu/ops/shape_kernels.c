/* shape_kernels.c - concat, stack, flip, roll, matrix_transpose, broadcast_to, tile, repeat,
 * slice, pad, tril, triu, and the backward ops that are copies too (roll, permute_dims, concat,
 * stack, slice). All of them only move elements: each is one or a few strided copies
 * through the iteration engine with computed base pointers and byte strides, using the copy loop
 * of the dtype's element size (copy_loops.h). pad's constant fill also stores the fill value in
 * the dtype, so its kernel data carries a per-dtype store function. */
#include <math.h>
#include <string.h>

#include "engine/copy_loops.h"
#include "engine/cpu_dtypes.h"
#include "cpu_register.h"
#include "ops/op_defs.h"
#include "ops/shape_params.h"

/* Copies src to dst over `shape`: byte strides of each side, one iterate_raw call. */
static void ct_copy_raw(const ct_cpu_loop_entry* entry, int32_t ndim, const int64_t* shape,
                        const char* src, const int64_t* src_strides, char* dst,
                        const int64_t* dst_strides) {
  for (int32_t k = 0; k < ndim; ++k) {
    if (shape[k] == 0) return;
  }
  if (ct_transpose_copy(src, dst, ndim, shape, src_strides, dst_strides, entry->copy_itemsize)) {
    return;
  }
  int64_t strides[2 * CT_MAX_NDIM];
  for (int32_t k = 0; k < ndim; ++k) {
    strides[k] = src_strides[k];
    strides[ndim + k] = dst_strides[k];
  }
  char* const bases[2] = {(char*)src, dst};
  ct_cpu_iterate_raw(2, bases, strides, ndim, shape, entry->loop, NULL);
}

static void ct_byte_strides(const ct_tensor* t, int64_t* strides) {
  const int64_t itemsize = ct_dtype_size(t->dtype);
  for (int32_t k = 0; k < t->ndim; ++k) strides[k] = ct_tensor_stride(t, k) * itemsize;
}

/* ----- concat / stack ----- */

static int ct_cpu_concat_run(const ct_kernel_call* call) {
  const ct_tensor* out = call->outputs[0];
  const ct_cpu_loop_entry* entry = call->kernel_data;
  int64_t xs[CT_MAX_NDIM], os[CT_MAX_NDIM];
  ct_byte_strides(out, os);
  int64_t offset = 0;
  if (call->attrs[0].type == CT_ATTR_NONE) { /* flattened: out is 1-D */
    for (int32_t i = 0; i < call->num_inputs; ++i) {
      const ct_tensor* x = call->inputs[i];
      int64_t compact[CT_MAX_NDIM];
      ct_compact_strides(x->ndim, x->shape, compact);
      for (int32_t k = 0; k < x->ndim; ++k) compact[k] *= os[0];
      ct_byte_strides(x, xs);
      ct_copy_raw(entry, x->ndim, x->shape, ct_tensor_base(x), xs,
                  ct_tensor_base(out) + offset * os[0], compact);
      offset += ct_tensor_numel(x);
    }
    return CT_OK;
  }
  int32_t axis;
  const int status = ct_normalize_axis("concat", call->attrs[0].value.i, out->ndim, &axis);
  if (status != CT_OK) return status;
  for (int32_t i = 0; i < call->num_inputs; ++i) {
    const ct_tensor* x = call->inputs[i];
    ct_byte_strides(x, xs);
    ct_copy_raw(entry, x->ndim, x->shape, ct_tensor_base(x), xs,
                ct_tensor_base(out) + offset * os[axis], os);
    offset += x->shape[axis];
  }
  return CT_OK;
}

static int ct_cpu_stack_run(const ct_kernel_call* call) {
  const ct_tensor* out = call->outputs[0];
  const ct_cpu_loop_entry* entry = call->kernel_data;
  int32_t axis;
  const int status = ct_normalize_axis("stack", call->attrs[0].value.i, out->ndim, &axis);
  if (status != CT_OK) return status;
  int64_t os[CT_MAX_NDIM], rest[CT_MAX_NDIM], xs[CT_MAX_NDIM];
  ct_byte_strides(out, os);
  for (int32_t k = 0, j = 0; k < out->ndim; ++k) {
    if (k != axis) rest[j++] = os[k];
  }
  for (int32_t i = 0; i < call->num_inputs; ++i) {
    const ct_tensor* x = call->inputs[i];
    ct_byte_strides(x, xs);
    ct_copy_raw(entry, x->ndim, x->shape, ct_tensor_base(x), xs,
                ct_tensor_base(out) + (int64_t)i * os[axis], rest);
  }
  return CT_OK;
}

/* ----- flip, matrix_transpose, broadcast_to, slice: one copy with rewritten input strides ----- */

static int ct_cpu_flip_run(const ct_kernel_call* call) {
  const ct_tensor *x = call->inputs[0], *out = call->outputs[0];
  bool mask[CT_MAX_NDIM];
  const int status = ct_axes_to_mask("flip", &call->attrs[0], x->ndim, mask);
  if (status != CT_OK) return status;
  int64_t xs[CT_MAX_NDIM], os[CT_MAX_NDIM];
  ct_byte_strides(x, xs);
  ct_byte_strides(out, os);
  const char* base = ct_tensor_base(x);
  for (int32_t k = 0; k < x->ndim; ++k) {
    if (!mask[k] || x->shape[k] == 0) continue;
    base += (x->shape[k] - 1) * xs[k];
    xs[k] = -xs[k];
  }
  ct_copy_raw(call->kernel_data, x->ndim, x->shape, base, xs, ct_tensor_base(out), os);
  return CT_OK;
}

static int ct_cpu_matrix_transpose_run(const ct_kernel_call* call) {
  const ct_tensor *x = call->inputs[0], *out = call->outputs[0];
  int64_t xs[CT_MAX_NDIM], os[CT_MAX_NDIM];
  ct_byte_strides(x, xs);
  ct_byte_strides(out, os);
  const int32_t n = x->ndim;
  const int64_t t = xs[n - 1];
  xs[n - 1] = xs[n - 2];
  xs[n - 2] = t;
  ct_copy_raw(call->kernel_data, n, out->shape, ct_tensor_base(x), xs, ct_tensor_base(out), os);
  return CT_OK;
}

static int ct_cpu_broadcast_to_run(const ct_kernel_call* call) {
  const ct_tensor *x = call->inputs[0], *out = call->outputs[0];
  int64_t xs[CT_MAX_NDIM], os[CT_MAX_NDIM];
  ct_cpu_broadcast_strides(x, out->ndim, out->shape, xs);
  ct_byte_strides(out, os);
  ct_copy_raw(call->kernel_data, out->ndim, out->shape, ct_tensor_base(x), xs, ct_tensor_base(out),
              os);
  return CT_OK;
}

static int ct_cpu_slice_run(const ct_kernel_call* call) {
  const ct_tensor *x = call->inputs[0], *out = call->outputs[0];
  int64_t first[CT_MAX_NDIM], steps[CT_MAX_NDIM], lengths[CT_MAX_NDIM];
  const int status = ct_slice_params(call->attrs, x->ndim, x->shape, first, steps, lengths);
  if (status != CT_OK) return status;
  int64_t xs[CT_MAX_NDIM], os[CT_MAX_NDIM];
  ct_byte_strides(x, xs);
  ct_byte_strides(out, os);
  const char* base = ct_tensor_base(x);
  for (int32_t k = 0; k < x->ndim; ++k) {
    if (lengths[k] == 0) return CT_OK;
    base += first[k] * xs[k];
    /* One element: its step is never taken (and may be any int64, whose product with the byte
     * stride could overflow). More: |step| < extent, so the product fits as the view did. */
    xs[k] = lengths[k] > 1 ? xs[k] * steps[k] : 0;
  }
  ct_copy_raw(call->kernel_data, x->ndim, out->shape, base, xs, ct_tensor_base(out), os);
  return CT_OK;
}

/* ----- tile, repeat ----- */

static int ct_cpu_tile_run(const ct_kernel_call* call) {
  const ct_tensor *x = call->inputs[0], *out = call->outputs[0];
  int64_t reps[CT_MAX_NDIM];
  int32_t ndim = 0;
  const int status = ct_tile_params(&call->attrs[0], x->ndim, &ndim, reps);
  if (status != CT_OK) return status;
  int64_t xs[CT_MAX_NDIM], os[CT_MAX_NDIM];
  ct_byte_strides(x, xs);
  ct_byte_strides(out, os);
  /* Dim k of the output is (reps[k], x extent) when both exceed 1: two engine dims. */
  int64_t shape[CT_MAX_NDIM], src[CT_MAX_NDIM], dst[CT_MAX_NDIM];
  int32_t n = 0;
  for (int32_t k = 0; k < ndim; ++k) {
    const int32_t j = k - (ndim - x->ndim);
    const int64_t extent = j >= 0 ? x->shape[j] : 1, stride = j >= 0 ? xs[j] : 0;
    if (extent == 0 || reps[k] == 0) return CT_OK;
    if (n + 2 > CT_MAX_NDIM) {
      return ct_set_error(CT_ERROR_INVALID_ARGUMENT, "tile: too many dimensions to iterate");
    }
    if (reps[k] > 1 && extent > 1) {
      shape[n] = reps[k], src[n] = 0, dst[n] = extent * os[k], ++n;
    }
    shape[n] = extent * (extent > 1 ? 1 : reps[k]);
    src[n] = extent > 1 ? stride : 0;
    dst[n] = os[k];
    ++n;
  }
  ct_copy_raw(call->kernel_data, n, shape, ct_tensor_base(x), src, ct_tensor_base(out), dst);
  return CT_OK;
}

static int ct_cpu_repeat_run(const ct_kernel_call* call) {
  const ct_tensor *x = call->inputs[0], *out = call->outputs[0];
  const ct_cpu_loop_entry* entry = call->kernel_data;
  const ct_attr_value* repeats = &call->attrs[0];
  int64_t xs[CT_MAX_NDIM], os[CT_MAX_NDIM];
  ct_byte_strides(x, xs);
  ct_byte_strides(out, os);
  const bool uniform = repeats->count == 1;
  const int64_t* r = repeats->value.ints;
  if (call->attrs[1].type == CT_ATTR_NONE) {
    if (uniform) { /* out viewed as x.shape + (r,) in row-major order */
      if (x->ndim + 1 > CT_MAX_NDIM) {
        return ct_set_error(CT_ERROR_INVALID_ARGUMENT, "repeat: too many dimensions");
      }
      int64_t shape[CT_MAX_NDIM], dst[CT_MAX_NDIM];
      for (int32_t k = 0; k < x->ndim; ++k) shape[k] = x->shape[k];
      shape[x->ndim] = r[0];
      ct_compact_strides(x->ndim + 1, shape, dst);
      for (int32_t k = 0; k <= x->ndim; ++k) dst[k] *= os[0];
      xs[x->ndim] = 0;
      ct_copy_raw(entry, x->ndim + 1, shape, ct_tensor_base(x), xs, ct_tensor_base(out), dst);
      return CT_OK;
    }
    /* One count per element of the flattened x: walk x in row-major order. */
    int64_t index[CT_MAX_NDIM] = {0};
    const int64_t numel = ct_tensor_numel(x);
    const char* src = ct_tensor_base(x);
    char* dst = ct_tensor_base(out);
    for (int64_t f = 0; f < numel; ++f) {
      if (r[f] > 0) {
        char* data[2] = {(char*)src, dst};
        const int64_t steps[2] = {0, os[0]};
        entry->loop(data, steps, r[f], NULL);
        dst += r[f] * os[0];
      }
      for (int32_t k = x->ndim - 1; k >= 0; --k) {
        src += xs[k];
        if (++index[k] < x->shape[k]) break;
        src -= x->shape[k] * xs[k];
        index[k] = 0;
      }
    }
    return CT_OK;
  }
  int32_t axis;
  const int status = ct_normalize_axis("repeat", call->attrs[1].value.i, x->ndim, &axis);
  if (status != CT_OK) return status;
  if (uniform) { /* axis split into (n, r): input stride on r is 0 */
    if (x->ndim + 1 > CT_MAX_NDIM) {
      return ct_set_error(CT_ERROR_INVALID_ARGUMENT, "repeat: too many dimensions");
    }
    int64_t shape[CT_MAX_NDIM], src[CT_MAX_NDIM], dst[CT_MAX_NDIM];
    int32_t n = 0;
    for (int32_t k = 0; k < x->ndim; ++k) {
      shape[n] = x->shape[k], src[n] = xs[k];
      dst[n] = k == axis ? r[0] * os[k] : os[k];
      ++n;
      if (k == axis) shape[n] = r[0], src[n] = 0, dst[n] = os[k], ++n;
    }
    ct_copy_raw(entry, n, shape, ct_tensor_base(x), src, ct_tensor_base(out), dst);
    return CT_OK;
  }
  /* One count per index along axis: one slab copy per index. */
  int64_t shape[CT_MAX_NDIM], src[CT_MAX_NDIM];
  for (int32_t k = 0; k < x->ndim; ++k) shape[k] = x->shape[k], src[k] = xs[k];
  src[axis] = 0;
  int64_t offset = 0;
  for (int64_t i = 0; i < x->shape[axis]; ++i) {
    shape[axis] = r[i];
    ct_copy_raw(entry, x->ndim, shape, ct_tensor_base(x) + i * xs[axis], src,
                ct_tensor_base(out) + offset * os[axis], os);
    offset += r[i];
  }
  return CT_OK;
}

/* ----- roll ----- */

/* Copies `count` elements in row-major order from flat position a of x to flat position b of
 * out (same shape), a run of the innermost dimension at a time. */
static void ct_copy_flat(const ct_cpu_loop_entry* entry, const ct_tensor* x, const int64_t* xs,
                         int64_t a, const ct_tensor* out, const int64_t* os, int64_t b,
                         int64_t count) {
  const int32_t ndim = x->ndim;
  if (ndim == 0) {
    char* data[2] = {ct_tensor_base(x), ct_tensor_base(out)};
    const int64_t steps[2] = {0, 0};
    if (count > 0) entry->loop(data, steps, 1, NULL);
    return;
  }
  int64_t si[CT_MAX_NDIM], di[CT_MAX_NDIM];
  for (int32_t k = ndim - 1; k >= 0; --k) {
    si[k] = a % x->shape[k], a /= x->shape[k];
    di[k] = b % x->shape[k], b /= x->shape[k];
  }
  const int64_t inner = x->shape[ndim - 1];
  while (count > 0) {
    int64_t n = inner - (si[ndim - 1] > di[ndim - 1] ? si[ndim - 1] : di[ndim - 1]);
    if (n > count) n = count;
    char* src = ct_tensor_base(x);
    char* dst = ct_tensor_base(out);
    for (int32_t k = 0; k < ndim; ++k) src += si[k] * xs[k], dst += di[k] * os[k];
    char* data[2] = {src, dst};
    const int64_t steps[2] = {xs[ndim - 1], os[ndim - 1]};
    entry->loop(data, steps, n, NULL);
    count -= n;
    int64_t* both[2] = {si, di};
    for (int w = 0; w < 2; ++w) {
      int64_t* idx = both[w];
      idx[ndim - 1] += n;
      for (int32_t k = ndim - 1; k > 0 && idx[k] >= x->shape[k]; --k) {
        idx[k] -= x->shape[k];
        ++idx[k - 1];
      }
    }
  }
}

/* roll, or with `back` its inverse (roll_backward: every shift s becomes n - s). */
static int ct_cpu_roll_impl(const ct_kernel_call* call, bool back) {
  const ct_tensor *x = call->inputs[0], *out = call->outputs[0];
  const ct_cpu_loop_entry* entry = call->kernel_data;
  const int64_t numel = ct_tensor_numel(x);
  int64_t shift[CT_MAX_NDIM];
  const int status =
      ct_roll_params(&call->attrs[0], &call->attrs[1], x->ndim, x->shape, numel, shift);
  if (status != CT_OK) return status;
  if (back && numel > 0) {
    const bool flat = call->attrs[1].type == CT_ATTR_NONE;
    for (int32_t k = 0; k < (flat ? 1 : x->ndim); ++k) {
      const int64_t n = flat ? numel : x->shape[k];
      shift[k] = (n - shift[k]) % n;
    }
  }
  int64_t xs[CT_MAX_NDIM], os[CT_MAX_NDIM];
  ct_byte_strides(x, xs);
  ct_byte_strides(out, os);
  if (numel == 0) return CT_OK;
  if (call->attrs[1].type == CT_ATTR_NONE) {
    const int64_t s = shift[0];
    ct_copy_flat(entry, x, xs, 0, out, os, s, numel - s);
    ct_copy_flat(entry, x, xs, numel - s, out, os, 0, s);
    return CT_OK;
  }
  /* Each rolled axis splits into two pieces: 2^m block copies (m rolled axes; each piece is
   * non-empty, so 2^m <= numel). */
  int32_t rolled[CT_MAX_NDIM], m = 0;
  for (int32_t k = 0; k < x->ndim; ++k) {
    if (shift[k] != 0) rolled[m++] = k;
  }
  int64_t shape[CT_MAX_NDIM];
  for (uint64_t piece = 0; piece < ((uint64_t)1 << m); ++piece) {
    const char* src = ct_tensor_base(x);
    char* dst = ct_tensor_base(out);
    for (int32_t k = 0; k < x->ndim; ++k) shape[k] = x->shape[k];
    for (int32_t i = 0; i < m; ++i) {
      const int32_t k = rolled[i];
      const int64_t n = x->shape[k], s = shift[k];
      if (piece >> i & 1) { /* x[n-s:] -> out[:s] */
        src += (n - s) * xs[k];
        shape[k] = s;
      } else { /* x[:n-s] -> out[s:] */
        dst += s * os[k];
        shape[k] = n - s;
      }
    }
    ct_copy_raw(entry, x->ndim, shape, src, xs, dst, os);
  }
  return CT_OK;
}

static int ct_cpu_roll_run(const ct_kernel_call* call) {
  return ct_cpu_roll_impl(call, false);
}

/* ----- tril / triu: per row, a copied part and a zeroed part ----- */

typedef struct ct_tri_context {
  const ct_tensor* x;
  const ct_tensor* out;
  const ct_cpu_loop_entry* entry;
  int64_t k;
  bool lower;
} ct_tri_context;

static void ct_tri_rows(int64_t begin, int64_t end, void* context) {
  const ct_tri_context* c = context;
  const ct_tensor *x = c->x, *out = c->out;
  const int32_t nd = x->ndim;
  const int64_t itemsize = ct_dtype_size(x->dtype), cols = x->shape[nd - 1];
  const int64_t xc = ct_tensor_stride(x, nd - 1) * itemsize;
  const int64_t oc = ct_tensor_stride(out, nd - 1) * itemsize;
  for (int64_t row = begin; row < end; ++row) {
    char* src = ct_tensor_base(x);
    char* dst = ct_tensor_base(out);
    int64_t rest = row, i = 0;
    for (int32_t k = nd - 2; k >= 0; --k) {
      const int64_t index = rest % x->shape[k];
      rest /= x->shape[k];
      if (k == nd - 2) i = index;
      src += index * ct_tensor_stride(x, k) * itemsize;
      dst += index * ct_tensor_stride(out, k) * itemsize;
    }
    /* tril keeps columns j <= i + k; triu keeps j >= i + k. i + k saturates: any k beyond
     * the matrix keeps or zeroes whole rows, as NumPy does for every int64 k. */
    int64_t edge;
    if (__builtin_add_overflow(i, c->k, &edge)) edge = c->k > 0 ? INT64_MAX : INT64_MIN;
    if (c->lower && edge < INT64_MAX) ++edge;
    if (edge < 0) edge = 0;
    if (edge > cols) edge = cols;
    const int64_t keep_begin = c->lower ? 0 : edge, keep_end = c->lower ? edge : cols;
    const int64_t zero_begin = c->lower ? edge : 0, zero_end = c->lower ? cols : edge;
    if (keep_end > keep_begin) {
      char* data[2] = {src + keep_begin * xc, dst + keep_begin * oc};
      const int64_t steps[2] = {xc, oc};
      c->entry->loop(data, steps, keep_end - keep_begin, NULL);
    }
    if (zero_end > zero_begin) {
      char* data[2] = {(char*)&ct_cpu_zero_word, dst + zero_begin * oc};
      const int64_t steps[2] = {0, oc};
      c->entry->loop(data, steps, zero_end - zero_begin, NULL);
    }
  }
}

static int ct_cpu_tri_run(const ct_kernel_call* call, bool lower) {
  const ct_tensor* x = call->inputs[0];
  ct_tri_context c = {x, call->outputs[0], call->kernel_data, call->attrs[0].value.i, lower};
  const int64_t cols = x->shape[x->ndim - 1];
  if (cols == 0) return CT_OK;
  ct_cpu_parallel_for(ct_tensor_numel(x) / cols, cols, ct_tri_rows, &c);
  return CT_OK;
}

static int ct_cpu_tril_run(const ct_kernel_call* call) {
  return ct_cpu_tri_run(call, true);
}

static int ct_cpu_triu_run(const ct_kernel_call* call) {
  return ct_cpu_tri_run(call, false);
}

/* ----- pad ----- */

typedef int (*ct_pad_store_fn)(double value, void* dst);
typedef struct ct_pad_kernel {
  const ct_cpu_loop_entry* copy;
  ct_pad_store_fn store;
} ct_pad_kernel;

#define CT_PAD_STORE_INT(A, SFX, T, C, U, ID)                                             \
  static int ct_pad_store_##SFX(double v, void* dst) {                                    \
    const bool is_unsigned = (T) ~(T)0 > (T)0;                                            \
    const T hi = is_unsigned ? (T) ~(T)0 : (T)(((uint64_t)1 << (sizeof(T) * 8 - 1)) - 1); \
    const T lo = is_unsigned ? (T)0 : (T)(-hi - 1);                                       \
    if (!(v >= (double)lo && v < (double)hi + 1.0)) {                                     \
      return ct_set_error(CT_ERROR_INVALID_ARGUMENT,                                      \
                          "pad: value %g does not fit in the array's integer dtype", v);  \
    }                                                                                     \
    *(T*)dst = (is_unsigned && v >= 0x1p63) ? (T)(uint64_t)v : (T)(int64_t)v;             \
    return CT_OK;                                                                         \
  }
#define CT_PAD_STORE_FLOAT(A, SFX, T, C, U, ID)        \
  static int ct_pad_store_##SFX(double v, void* dst) { \
    *(T*)dst = ct_store_##SFX((C)v);                   \
    return CT_OK;                                      \
  }
CT_CPU_INT_TYPES(CT_PAD_STORE_INT, _)
CT_CPU_FLOAT_TYPES(CT_PAD_STORE_FLOAT, _)
static int ct_pad_store_b8(double v, void* dst) {
  *(uint8_t*)dst = v != 0;
  return CT_OK;
}

#define CT_PAD_DATA(A, SFX, T, C, U, ID) \
  static const ct_pad_kernel ct_pad_kernel_##SFX = {CT_CPU_COPY_ENTRY(T), ct_pad_store_##SFX};
CT_CPU_ALL_TYPES(CT_PAD_DATA, _)

/* Source position (in [0, n)) of position i (relative to the array's start) for reflect. */
static int64_t ct_reflect_index(int64_t i, int64_t n) {
  if (n == 1) return 0;
  const int64_t period = 2 * (n - 1);
  int64_t m = i % period;
  if (m < 0) m += period;
  return m < n ? m : period - m;
}

static int ct_cpu_pad_run(const ct_kernel_call* call) {
  const ct_tensor *x = call->inputs[0], *out = call->outputs[0];
  const ct_pad_kernel* kernel = call->kernel_data;
  const ct_cpu_loop_entry* entry = kernel->copy;
  const int32_t nd = x->ndim;
  int64_t before[CT_MAX_NDIM], after[CT_MAX_NDIM];
  int mode = 0;
  int status = ct_pad_params(call->attrs, nd, x->shape, before, after, &mode);
  if (status != CT_OK) return status;
  uint64_t value = 0;
  if (mode == 0) {
    status = kernel->store(call->attrs[2].value.f, &value);
    if (status != CT_OK) return status;
  }
  int64_t xs[CT_MAX_NDIM], os[CT_MAX_NDIM], zeros[CT_MAX_NDIM] = {0};
  ct_byte_strides(x, xs);
  ct_byte_strides(out, os);
  char* interior = ct_tensor_base(out);
  for (int32_t k = 0; k < nd; ++k) interior += before[k] * os[k];
  ct_copy_raw(entry, nd, x->shape, ct_tensor_base(x), xs, interior, os);
  /* Axis by axis: the region of axis k spans the full output along earlier axes (already
   * padded) and the interior along later ones; its source is the output itself. */
  int64_t shape[CT_MAX_NDIM], src_strides[CT_MAX_NDIM];
  for (int32_t k = 0; k < nd; ++k) {
    const int64_t n = x->shape[k];
    char* origin = ct_tensor_base(out); /* position 0 along k of the region */
    for (int32_t j = 0; j < nd; ++j) {
      shape[j] = j < k ? out->shape[j] : x->shape[j];
      if (j > k) origin += before[j] * os[j];
    }
    for (int side = 0; side < 2; ++side) {
      const int64_t width = side == 0 ? before[k] : after[k];
      if (width == 0) continue;
      const int64_t start = side == 0 ? 0 : before[k] + n; /* output position along k */
      if (mode == 0 || mode == 2) {
        shape[k] = width;
        const char* src = (const char*)&value;
        const int64_t* strides = zeros;
        if (mode == 2) {
          for (int32_t j = 0; j < nd; ++j) src_strides[j] = j == k ? 0 : os[j];
          src = origin + (side == 0 ? before[k] : before[k] + n - 1) * os[k];
          strides = src_strides;
        }
        ct_copy_raw(entry, nd, shape, src, strides, origin + start * os[k], os);
        continue;
      }
      shape[k] = 1;
      for (int64_t p = start; p < start + width; ++p) {
        const int64_t from = before[k] + ct_reflect_index(p - before[k], n);
        ct_copy_raw(entry, nd, shape, origin + from * os[k], os, origin + p * os[k], os);
      }
    }
  }
  return CT_OK;
}

/* ----- backward ops that only move elements (their schemas: capi/ops/shape_grad_ops.c) ----- */

static int ct_cpu_roll_backward_run(const ct_kernel_call* call) {
  return ct_cpu_roll_impl(call, true);
}

/* grad_x = grad_out with its dims sent back: grad_out's dim i is grad_x's dim axes[i]. */
static int ct_cpu_permute_dims_backward_run(const ct_kernel_call* call) {
  const ct_tensor *grad = call->inputs[0], *out = call->outputs[0];
  int64_t gs[CT_MAX_NDIM], os[CT_MAX_NDIM], moved[CT_MAX_NDIM];
  ct_byte_strides(grad, gs);
  ct_byte_strides(out, os);
  for (int32_t i = 0; i < grad->ndim; ++i) {
    const int64_t a = call->attrs[0].value.ints[i];
    moved[i] = os[a < 0 ? a + grad->ndim : a];
  }
  ct_copy_raw(call->kernel_data, grad->ndim, grad->shape, ct_tensor_base(grad), gs,
              ct_tensor_base(out), moved);
  return CT_OK;
}

/* Output i is the slab of grad_out that array i (inputs[1 + i]) filled. */
static int ct_cpu_concat_backward_run(const ct_kernel_call* call) {
  const ct_tensor* grad = call->inputs[0];
  const ct_cpu_loop_entry* entry = call->kernel_data;
  int64_t gs[CT_MAX_NDIM], os[CT_MAX_NDIM];
  ct_byte_strides(grad, gs);
  int64_t offset = 0;
  const bool flat = call->attrs[0].type == CT_ATTR_NONE;
  int32_t axis = 0;
  if (!flat) {
    const int status =
        ct_normalize_axis("concat_backward", call->attrs[0].value.i, grad->ndim, &axis);
    if (status != CT_OK) return status;
  }
  for (int32_t i = 0; i < call->num_outputs; ++i) {
    const ct_tensor* out = call->outputs[i];
    ct_byte_strides(out, os);
    if (flat) { /* grad_out is 1-D: out's elements in row-major order from offset */
      int64_t compact[CT_MAX_NDIM];
      ct_compact_strides(out->ndim, out->shape, compact);
      for (int32_t k = 0; k < out->ndim; ++k) compact[k] *= gs[0];
      ct_copy_raw(entry, out->ndim, out->shape, ct_tensor_base(grad) + offset * gs[0], compact,
                  ct_tensor_base(out), os);
      offset += ct_tensor_numel(out);
    } else {
      ct_copy_raw(entry, out->ndim, out->shape, ct_tensor_base(grad) + offset * gs[axis], gs,
                  ct_tensor_base(out), os);
      offset += out->shape[axis];
    }
  }
  return CT_OK;
}

/* Output i is grad_out[..., i, ...] along axis. */
static int ct_cpu_stack_backward_run(const ct_kernel_call* call) {
  const ct_tensor* grad = call->inputs[0];
  int32_t axis;
  const int status = ct_normalize_axis("stack_backward", call->attrs[0].value.i, grad->ndim, &axis);
  if (status != CT_OK) return status;
  int64_t gs[CT_MAX_NDIM], rest[CT_MAX_NDIM], os[CT_MAX_NDIM];
  ct_byte_strides(grad, gs);
  for (int32_t k = 0, j = 0; k < grad->ndim; ++k) {
    if (k != axis) rest[j++] = gs[k];
  }
  for (int32_t i = 0; i < call->num_outputs; ++i) {
    const ct_tensor* out = call->outputs[i];
    ct_byte_strides(out, os);
    ct_copy_raw(call->kernel_data, out->ndim, out->shape,
                ct_tensor_base(grad) + (int64_t)i * gs[axis], rest, ct_tensor_base(out), os);
  }
  return CT_OK;
}

/* Zeros, then grad_out copied into the sliced positions of grad_x. */
static int ct_cpu_slice_backward_run(const ct_kernel_call* call) {
  const ct_tensor *grad = call->inputs[0], *out = call->outputs[0];
  const ct_cpu_loop_entry* entry = call->kernel_data;
  int64_t first[CT_MAX_NDIM], steps[CT_MAX_NDIM], lengths[CT_MAX_NDIM];
  const int status = ct_slice_params(call->attrs, out->ndim, out->shape, first, steps, lengths);
  if (status != CT_OK) return status;
  int64_t gs[CT_MAX_NDIM], os[CT_MAX_NDIM], zeros[CT_MAX_NDIM] = {0};
  ct_byte_strides(grad, gs);
  ct_byte_strides(out, os);
  ct_copy_raw(entry, out->ndim, out->shape, (const char*)&ct_cpu_zero_word, zeros,
              ct_tensor_base(out), os);
  char* base = ct_tensor_base(out);
  for (int32_t k = 0; k < out->ndim; ++k) {
    if (lengths[k] == 0) return CT_OK;
    base += first[k] * os[k];
    /* as slice: a step taken once only is never taken (and may be any int64) */
    os[k] = lengths[k] > 1 ? os[k] * steps[k] : 0;
  }
  ct_copy_raw(entry, out->ndim, grad->shape, ct_tensor_base(grad), gs, base, os);
  return CT_OK;
}

/* ----- registration ----- */

#define CT_SHAPE_REG_X(A, SFX, T, C, U, ID) \
  {#A, 2, {ID, ID}, ct_cpu_##A##_run, NULL, CT_CPU_COPY_ENTRY(T)},
/* (grad_out, arrays or x) -> output: three slots. */
#define CT_SHAPE_BACKWARD_REG_X(A, SFX, T, C, U, ID) \
  {#A, 3, {ID, ID, ID}, ct_cpu_##A##_run, NULL, CT_CPU_COPY_ENTRY(T)},
#define CT_PAD_REG_X(A, SFX, T, C, U, ID) \
  {"pad", 2, {ID, ID}, ct_cpu_pad_run, NULL, &ct_pad_kernel_##SFX},

static const ct_cpu_kernel ct_cpu_shape_kernels[] = {
    CT_CPU_ALL_TYPES(CT_SHAPE_REG_X, concat) CT_CPU_ALL_TYPES(CT_SHAPE_REG_X, stack)
        CT_CPU_ALL_TYPES(CT_SHAPE_REG_X, flip) CT_CPU_ALL_TYPES(CT_SHAPE_REG_X, roll)
            CT_CPU_ALL_TYPES(CT_SHAPE_REG_X, matrix_transpose) CT_CPU_ALL_TYPES(
                CT_SHAPE_REG_X, broadcast_to) CT_CPU_ALL_TYPES(CT_SHAPE_REG_X, tile)
                CT_CPU_ALL_TYPES(CT_SHAPE_REG_X, repeat) CT_CPU_ALL_TYPES(CT_SHAPE_REG_X, slice)
                    CT_CPU_ALL_TYPES(CT_SHAPE_REG_X, tril) CT_CPU_ALL_TYPES(CT_SHAPE_REG_X, triu)
                        CT_CPU_ALL_TYPES(CT_PAD_REG_X, _)
    /* complex: every copy op (pad's constant is a real number: no complex pad) */
    CT_CPU_COMPLEX_TYPES(CT_SHAPE_REG_X, concat) CT_CPU_COMPLEX_TYPES(CT_SHAPE_REG_X, stack)
        CT_CPU_COMPLEX_TYPES(CT_SHAPE_REG_X, flip) CT_CPU_COMPLEX_TYPES(CT_SHAPE_REG_X, roll)
            CT_CPU_COMPLEX_TYPES(CT_SHAPE_REG_X, matrix_transpose) CT_CPU_COMPLEX_TYPES(
                CT_SHAPE_REG_X, broadcast_to) CT_CPU_COMPLEX_TYPES(CT_SHAPE_REG_X, tile)
                CT_CPU_COMPLEX_TYPES(CT_SHAPE_REG_X, repeat) CT_CPU_COMPLEX_TYPES(
                    CT_SHAPE_REG_X, slice) CT_CPU_COMPLEX_TYPES(CT_SHAPE_REG_X, tril)
                    CT_CPU_COMPLEX_TYPES(CT_SHAPE_REG_X, triu)
    /* backward ops: the float dtypes, as every gradient */
    CT_CPU_FLOAT_TYPES(CT_SHAPE_REG_X, roll_backward)
        CT_CPU_FLOAT_TYPES(CT_SHAPE_REG_X, permute_dims_backward)
            CT_CPU_FLOAT_TYPES(CT_SHAPE_BACKWARD_REG_X, concat_backward)
                CT_CPU_FLOAT_TYPES(CT_SHAPE_BACKWARD_REG_X, stack_backward)
                    CT_CPU_FLOAT_TYPES(CT_SHAPE_BACKWARD_REG_X, slice_backward)};

int ct_cpu_register_shape(void) {
  return ct_cpu_register_all(ct_cpu_shape_kernels, CT_CPU_KERNEL_COUNT(ct_cpu_shape_kernels));
}
