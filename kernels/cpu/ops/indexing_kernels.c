/* indexing_kernels.c - take, take_along_axis, embedding and one_hot: gathers by an int32 or int64
 * index array. Every index is checked before anything is written (an out-of-range index is
 * CT_ERROR_INVALID_ARGUMENT and leaves the output untouched). The gathers run through the
 * iteration engine with three operands (x at the current position with the gathered axis' stride
 * 0, the index, the output); the loop adds index * the axis' byte stride to x. One gather loop per
 * (element size, index dtype), registered for every dtype of that size. */
#include <string.h>

#include "engine/copy_loops.h"
#include "engine/cpu_dtypes.h"
#include "cpu_register.h"
#include "ops/op_defs.h"
#include "engine/strided_iter.h"

/* What a gather loop needs besides its operands. */
typedef struct ct_gather_extra {
  int64_t stride; /* byte stride of the gathered axis */
  int64_t n;      /* extent of the gathered axis: negative indices add it */
  /* take with axis None on a non-compact x of 2+ dims: unravel the flat index */
  int32_t ndim;
  const int64_t* shape;
  const int64_t* strides; /* bytes */
} ct_gather_extra;

/* Index checks: indices outside [lo, hi) set `bad` (relaxed atomics: threads may race). */
typedef struct ct_index_check {
  int64_t lo, hi;
  int32_t bad;
  int64_t value;
} ct_index_check;

static inline int64_t ct_gather_offset(const ct_gather_extra* e, int64_t j) {
  if (j < 0) j += e->n;
  if (e->ndim == 0) return j * e->stride;
  int64_t offset = 0;
  for (int32_t k = e->ndim - 1; k >= 0; --k) {
    offset += (j % e->shape[k]) * e->strides[k];
    j /= e->shape[k];
  }
  return offset;
}

#define CT_GATHER_LOOP(BITS, WORD, ISFX, IT)                                              \
  static void ct_cpu_gather_##BITS##_##ISFX(char** data, const int64_t* steps, int64_t n, \
                                            const void* extra) {                          \
    typedef WORD word;                                                                    \
    const ct_gather_extra* e = extra;                                                     \
    for (int64_t i = 0; i < n; ++i) {                                                     \
      const int64_t j = (int64_t)*(const IT*)(data[1] + i * steps[1]);                    \
      *(word*)(data[2] + i * steps[2]) =                                                  \
          *(const word*)(data[0] + i * steps[0] + ct_gather_offset(e, j));                \
    }                                                                                     \
  }

#define CT_CHECK_LOOP(ISFX, IT)                                                               \
  static void ct_cpu_check_##ISFX(char** data, const int64_t* steps, int64_t n,               \
                                  const void* extra) {                                        \
    ct_index_check* c = (ct_index_check*)extra;                                               \
    for (int64_t i = 0; i < n; ++i) {                                                         \
      const int64_t j = (int64_t)*(const IT*)(data[0] + i * steps[0]);                        \
      if (j < c->lo || j >= c->hi) {                                                          \
        __atomic_store_n(&c->value, j, __ATOMIC_RELAXED);                                     \
        __atomic_store_n(&c->bad, 1, __ATOMIC_RELAXED);                                       \
      }                                                                                       \
    }                                                                                         \
  }                                                                                           \
  /* one_hot: data[0] the index, data[1] the start of its output row; extra: classes, step */ \
  static void ct_cpu_one_hot_##ISFX(char** data, const int64_t* steps, int64_t n,             \
                                    const void* extra) {                                      \
    const int64_t* e = extra;                                                                 \
    for (int64_t i = 0; i < n; ++i) {                                                         \
      const int64_t j = (int64_t)*(const IT*)(data[0] + i * steps[0]);                        \
      char* row = data[1] + i * steps[1];                                                     \
      for (int64_t c = 0; c < e[0]; ++c) *(int64_t*)(row + c * e[1]) = c == j;                \
    }                                                                                         \
  }

CT_CHECK_LOOP(i32, int32_t)
CT_CHECK_LOOP(i64, int64_t)

#define CT_GATHER_LOOPS(BITS, WORD) \
  CT_GATHER_LOOP(BITS, WORD, i32, int32_t) CT_GATHER_LOOP(BITS, WORD, i64, int64_t)
CT_GATHER_LOOPS(8, uint8_t)
CT_GATHER_LOOPS(16, uint16_t)
CT_GATHER_LOOPS(32, uint32_t)
CT_GATHER_LOOPS(64, uint64_t)
CT_GATHER_LOOPS(128, ct_cpu_word128)

/* Kernel data: the gather loop for the element size and index dtype, and the index checks. */
typedef struct ct_gather_kernel {
  ct_cpu_strided_loop gather;
  ct_cpu_strided_loop check;
  ct_cpu_strided_loop one_hot;
} ct_gather_kernel;

#define CT_GATHER_DATA(BITS, ISFX, ID)                      \
  static const ct_gather_kernel ct_gather_##BITS##_##ID = { \
      ct_cpu_gather_##BITS##_##ISFX, ct_cpu_check_##ISFX, ct_cpu_one_hot_##ISFX};
#define CT_GATHER_DATAS(BITS) CT_GATHER_DATA(BITS, i32, I32) CT_GATHER_DATA(BITS, i64, I64)
CT_GATHER_DATAS(8)
CT_GATHER_DATAS(16)
CT_GATHER_DATAS(32)
CT_GATHER_DATAS(64)
CT_GATHER_DATAS(128)

static void ct_byte_strides(const ct_tensor* t, int64_t* strides) {
  const int64_t itemsize = ct_dtype_size(t->dtype);
  for (int32_t k = 0; k < t->ndim; ++k) strides[k] = ct_tensor_stride(t, k) * itemsize;
}

/* Checks every index in [lo, hi); reports the op's error. */
static int ct_check_indices(const char* op, const ct_gather_kernel* kernel, const ct_tensor* idx,
                            int64_t lo, int64_t hi) {
  for (int32_t k = 0; k < idx->ndim; ++k) {
    if (idx->shape[k] == 0) return CT_OK;
  }
  int64_t strides[CT_MAX_NDIM];
  ct_byte_strides(idx, strides);
  ct_index_check check = {lo, hi, 0, 0};
  char* const bases[1] = {ct_tensor_base(idx)};
  ct_cpu_iterate_raw(1, bases, strides, idx->ndim, idx->shape, kernel->check, &check);
  if (check.bad) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT, "%s: index %lld is out of range [%lld, %lld)",
                        op, (long long)check.value, (long long)lo, (long long)hi);
  }
  return CT_OK;
}

/* Runs the gather: x, idx, out strides per output dim (bytes). */
static void ct_gather(const ct_gather_kernel* kernel, const ct_tensor* x, const int64_t* xs,
                      const ct_tensor* idx, const int64_t* is, const ct_tensor* out,
                      const ct_gather_extra* extra) {
  const int32_t nd = out->ndim;
  for (int32_t k = 0; k < nd; ++k) {
    if (out->shape[k] == 0) return;
  }
  int64_t strides[3 * CT_MAX_NDIM];
  int64_t os[CT_MAX_NDIM];
  ct_byte_strides(out, os);
  for (int32_t k = 0; k < nd; ++k) {
    strides[k] = xs[k];
    strides[nd + k] = is[k];
    strides[2 * nd + k] = os[k];
  }
  char* const bases[3] = {ct_tensor_base(x), ct_tensor_base(idx), ct_tensor_base(out)};
  ct_cpu_iterate_raw(3, bases, strides, nd, out->shape, kernel->gather, extra);
}

static int ct_cpu_take_run(const ct_kernel_call* call) {
  const ct_tensor *x = call->inputs[0], *idx = call->inputs[1], *out = call->outputs[0];
  const ct_gather_kernel* kernel = call->kernel_data;
  int64_t x_strides[CT_MAX_NDIM], idx_strides[CT_MAX_NDIM];
  ct_byte_strides(x, x_strides);
  ct_byte_strides(idx, idx_strides);
  int64_t xs[CT_MAX_NDIM], is[CT_MAX_NDIM];
  ct_gather_extra extra = {0, 0, 0, NULL, NULL};
  if (call->attrs[0].type == CT_ATTR_NONE) {
    extra.n = ct_tensor_numel(x);
    if (x->ndim == 1) {
      extra.stride = x_strides[0];
    } else if (x->ndim > 1) {
      extra.ndim = x->ndim, extra.shape = x->shape, extra.strides = x_strides;
    }
    for (int32_t k = 0; k < out->ndim; ++k) xs[k] = 0, is[k] = idx_strides[k];
  } else {
    int32_t axis;
    const int status = ct_normalize_axis("take", call->attrs[0].value.i, x->ndim, &axis);
    if (status != CT_OK) return status;
    extra.n = x->shape[axis];
    extra.stride = x_strides[axis];
    int32_t n = 0;
    for (int32_t k = 0; k < axis; ++k, ++n) xs[n] = x_strides[k], is[n] = 0;
    for (int32_t k = 0; k < idx->ndim; ++k, ++n) xs[n] = 0, is[n] = idx_strides[k];
    for (int32_t k = axis + 1; k < x->ndim; ++k, ++n) xs[n] = x_strides[k], is[n] = 0;
  }
  const int status = ct_check_indices("take", kernel, idx, -extra.n, extra.n);
  if (status != CT_OK) return status;
  ct_gather(kernel, x, xs, idx, is, out, &extra);
  return CT_OK;
}

static int ct_cpu_take_along_axis_run(const ct_kernel_call* call) {
  const ct_tensor *x = call->inputs[0], *idx = call->inputs[1], *out = call->outputs[0];
  const ct_gather_kernel* kernel = call->kernel_data;
  int32_t axis;
  int status = ct_normalize_axis("take_along_axis", call->attrs[0].value.i, x->ndim, &axis);
  if (status != CT_OK) return status;
  int64_t xs[CT_MAX_NDIM], is[CT_MAX_NDIM];
  ct_cpu_broadcast_strides(x, out->ndim, out->shape, xs);
  ct_cpu_broadcast_strides(idx, out->ndim, out->shape, is);
  xs[axis] = 0;
  const ct_gather_extra extra = {ct_tensor_stride(x, axis) * ct_dtype_size(x->dtype),
                                 x->shape[axis], 0, NULL, NULL};
  status = ct_check_indices("take_along_axis", kernel, idx, -extra.n, extra.n);
  if (status != CT_OK) return status;
  ct_gather(kernel, x, xs, idx, is, out, &extra);
  return CT_OK;
}

static int ct_cpu_embedding_run(const ct_kernel_call* call) {
  const ct_tensor *idx = call->inputs[0], *w = call->inputs[1], *out = call->outputs[0];
  const ct_gather_kernel* kernel = call->kernel_data;
  int64_t w_strides[2], xs[CT_MAX_NDIM], is[CT_MAX_NDIM];
  ct_byte_strides(w, w_strides);
  ct_byte_strides(idx, is);
  for (int32_t k = 0; k < idx->ndim; ++k) xs[k] = 0;
  xs[idx->ndim] = w_strides[1];
  is[idx->ndim] = 0;
  const ct_gather_extra extra = {w_strides[0], w->shape[0], 0, NULL, NULL};
  const int status = ct_check_indices("embedding", kernel, idx, 0, w->shape[0]);
  if (status != CT_OK) return status;
  ct_gather(kernel, w, xs, idx, is, out, &extra);
  return CT_OK;
}

static int ct_cpu_one_hot_run(const ct_kernel_call* call) {
  const ct_tensor *idx = call->inputs[0], *out = call->outputs[0];
  const ct_gather_kernel* kernel = call->kernel_data;
  const int64_t classes = call->attrs[0].value.i;
  int status = ct_check_indices("one_hot", kernel, idx, 0, classes);
  if (status != CT_OK) return status;
  for (int32_t k = 0; k < idx->ndim; ++k) {
    if (idx->shape[k] == 0) return CT_OK;
  }
  int64_t strides[2 * CT_MAX_NDIM], os[CT_MAX_NDIM];
  const int32_t nd = idx->ndim;
  ct_byte_strides(idx, strides);
  ct_byte_strides(out, os);
  for (int32_t k = 0; k < nd; ++k) strides[nd + k] = os[k];
  const int64_t extra[2] = {classes, os[nd]};
  char* const bases[2] = {ct_tensor_base(idx), ct_tensor_base(out)};
  ct_cpu_iterate_raw(2, bases, strides, nd, idx->shape, kernel->one_hot, extra);
  return CT_OK;
}

#define CT_GATHER_FOR(T, ISFX)             \
  (sizeof(T) == 1   ? &ct_gather_8_##ISFX  \
   : sizeof(T) == 2 ? &ct_gather_16_##ISFX \
   : sizeof(T) == 4 ? &ct_gather_32_##ISFX \
   : sizeof(T) == 8 ? &ct_gather_64_##ISFX \
                    : &ct_gather_128_##ISFX)
#define CT_TAKE_REG_X(A, SFX, T, C, U, ID)                                      \
  {"take", 3, {ID, CT_DT_##A, ID}, ct_cpu_take_run, NULL, CT_GATHER_FOR(T, A)}, \
      {"take_along_axis",          3,    {ID, CT_DT_##A, ID},                   \
       ct_cpu_take_along_axis_run, NULL, CT_GATHER_FOR(T, A)},                  \
      {"embedding", 3, {CT_DT_##A, ID, ID}, ct_cpu_embedding_run, NULL, CT_GATHER_FOR(T, A)},

/* Complex: take and take_along_axis (embedding is a deep-learning op on real weights). */
#define CT_TAKE_COMPLEX_REG_X(A, SFX, T, C, U, ID)                              \
  {"take", 3, {ID, CT_DT_##A, ID}, ct_cpu_take_run, NULL, CT_GATHER_FOR(T, A)}, \
      {"take_along_axis",          3,    {ID, CT_DT_##A, ID},                   \
       ct_cpu_take_along_axis_run, NULL, CT_GATHER_FOR(T, A)},

static const ct_cpu_kernel ct_cpu_indexing_kernels[] = {
    CT_CPU_COMPLEX_TYPES(CT_TAKE_COMPLEX_REG_X, I32)
        CT_CPU_COMPLEX_TYPES(CT_TAKE_COMPLEX_REG_X, I64) CT_CPU_ALL_TYPES(CT_TAKE_REG_X, I32)
            CT_CPU_ALL_TYPES(CT_TAKE_REG_X, I64){
                "one_hot", 2, {CT_DT_I32, CT_DT_I64}, ct_cpu_one_hot_run, NULL, &ct_gather_8_I32},
    {"one_hot", 2, {CT_DT_I64, CT_DT_I64}, ct_cpu_one_hot_run, NULL, &ct_gather_8_I64}};

int ct_cpu_register_indexing(void) {
  return ct_cpu_register_all(ct_cpu_indexing_kernels, CT_CPU_KERNEL_COUNT(ct_cpu_indexing_kernels));
}
