/* unique_kernels.c - unique_values(x): the distinct values of x, sorted ascending, 1-D.
 *
 * Every value maps to an unsigned sort key whose order is the value order: integers flip their
 * sign bit; floats flip all bits when negative and the sign bit otherwise, after -0.0 becomes
 * +0.0 and every NaN becomes the all-ones key (one NaN, last, as NumPy 2 with equal_nan).
 *  - 1- and 2-byte dtypes mark the keys they see in a 256- or 65536-entry presence table
 *    (workspace) and read the table out in order: no sort, O(n).
 *  - 4- and 8-byte dtypes copy their keys into the workspace (compact, through the iteration
 *    engine) and sort them there with an in-place MSD radix sort (American flag sort, one byte a
 *    level, insertion sort below a small size; buckets sort in parallel as OpenMP tasks),
 *    then count the distinct keys, allocate, and write them back as values.
 * Broadcast (zero-stride) dimensions are looked at once: they repeat the same memory. */
#include <string.h>

#include "engine/cpu_dtypes.h"
#include "cpu_register.h"
#include "engine/dynamic_output.h"
#include "engine/cpu_threads.h"
#include "engine/strided_iter.h"

#ifdef _OPENMP
#include <omp.h>
#endif

#include "sort/sort_keys.h"

/* ----- the caller's allocator ----- */

static int ct_uq_allocate(const ct_kernel_call* call, const ct_tensor* x, int64_t count,
                          void** data) {
  ct_tensor_info info;
  info.dtype = x->dtype;
  info.ndim = 1;
  info.shape[0] = count;
  return ct_cpu_allocate_output(call, 0, &info, data);
}

/* ----- the elements to look at ----- */

/* x's shape and byte strides with every zero-stride (broadcast) dimension cut to one element:
 * repeats of the same memory add no distinct value. Returns the element count of that view. */
static int64_t ct_uq_distinct_view(const ct_tensor* x, int64_t itemsize, int64_t* shape,
                                   int64_t* strides) {
  int64_t numel = 1;
  for (int32_t k = 0; k < x->ndim; ++k) {
    const int64_t stride = ct_tensor_stride(x, k);
    shape[k] = stride == 0 && x->shape[k] > 1 ? 1 : x->shape[k];
    strides[k] = stride * itemsize;
    numel *= shape[k];
  }
  return numel;
}

/* ----- 1- and 2-byte dtypes: a presence table ----- */

/* Marks table[key] = 1. Threads may mark the same entry: relaxed atomic byte stores, read first
 * so that entries already set are not written again. */
static inline void ct_uq_mark(uint8_t* table, uint32_t key) {
  if (!__atomic_load_n(&table[key], __ATOMIC_RELAXED)) {
    __atomic_store_n(&table[key], (uint8_t)1, __ATOMIC_RELAXED);
  }
}

#define CT_UQ_TABLE_X(A, SFX, T, C, U, ID)                                                         \
  static void ct_cpu_unique_mark_##SFX(char** data, const int64_t* steps, int64_t n,               \
                                       const void* extra) {                                        \
    uint8_t* table = (uint8_t*)extra;                                                              \
    const char* p = data[0];                                                                       \
    const int64_t step = steps[0];                                                                 \
    for (int64_t i = 0; i < n; ++i) ct_uq_mark(table, ct_uq_key_##SFX(*(const T*)(p + i * step))); \
  }                                                                                                \
  static int ct_cpu_unique_values_##SFX(const ct_kernel_call* call) {                              \
    const ct_tensor* x = call->inputs[0];                                                          \
    const uint32_t size = (uint32_t)1 << (8 * sizeof(T));                                          \
    uint8_t* table = call->workspace;                                                              \
    memset(table, 0, size);                                                                        \
    int64_t shape[CT_MAX_NDIM], strides[CT_MAX_NDIM];                                              \
    ct_uq_distinct_view(x, (int64_t)sizeof(T), shape, strides);                                    \
    char* base = ct_tensor_base(x);                                                                \
    ct_cpu_iterate_raw(1, &base, strides, x->ndim, shape, ct_cpu_unique_mark_##SFX, table);        \
    int64_t count = 0;                                                                             \
    for (uint32_t key = 0; key < size; ++key) count += table[key];                                 \
    void* data;                                                                                    \
    const int status = ct_uq_allocate(call, x, count, &data);                                      \
    if (status != CT_OK) return status;                                                            \
    T* out = data;                                                                                 \
    int64_t at = 0;                                                                                \
    for (uint32_t key = 0; key < size; ++key) {                                                    \
      if (table[key]) out[at++] = ct_uq_value_##SFX((U)key);                                       \
    }                                                                                              \
    return CT_OK;                                                                                  \
  }

CT_SORT_KEY_SMALL_TYPES(CT_UQ_TABLE_X, _)

/* ----- 4- and 8-byte dtypes: MSD radix sort of the keys in the workspace ----- */

/* Below this many keys a bucket is insertion-sorted. */
#define CT_UQ_INSERTION 48
/* From this many keys the sort runs on several threads, in tasks of at least CT_UQ_TASK keys. */
#define CT_UQ_PARALLEL (1 << 16)
#define CT_UQ_TASK (1 << 14)

/* ct_uq_sort_<K> and its helpers for 32- and 64-bit keys. */
#define CT_UQ_K uint32_t
#include "ops/unique_radix_impl.h"
#define CT_UQ_K uint64_t
#include "ops/unique_radix_impl.h"

#define CT_UQ_WIDE_X(A, SFX, T, C, U, ID)                                                    \
  static void ct_cpu_unique_keys_##SFX(char** data, const int64_t* steps, int64_t n,         \
                                       const void* extra) {                                  \
    (void)extra;                                                                             \
    const char* p = data[0];                                                                 \
    U* keys = (U*)data[1];                                                                   \
    const int64_t step = steps[0];                                                           \
    if (step == (int64_t)sizeof(T)) {                                                        \
      const T* v = (const T*)p;                                                              \
      for (int64_t i = 0; i < n; ++i) keys[i] = ct_uq_key_##SFX(v[i]);                       \
    } else {                                                                                 \
      for (int64_t i = 0; i < n; ++i) keys[i] = ct_uq_key_##SFX(*(const T*)(p + i * step));  \
    }                                                                                        \
  }                                                                                          \
  static int ct_cpu_unique_values_##SFX(const ct_kernel_call* call) {                        \
    const ct_tensor* x = call->inputs[0];                                                    \
    int64_t shape[CT_MAX_NDIM] = {0}, strides[2 * CT_MAX_NDIM] = {0};                        \
    const int64_t n = ct_uq_distinct_view(x, (int64_t)sizeof(T), shape, strides);            \
    U* keys = call->workspace;                                                               \
    if (n > 0) {                                                                             \
      /* keys[flat row-major index] = key(x[...]): operand 1 is the compact workspace */     \
      int64_t stride = (int64_t)sizeof(U);                                                   \
      for (int32_t k = x->ndim - 1; k >= 0; --k) {                                           \
        strides[x->ndim + k] = stride;                                                       \
        stride *= shape[k];                                                                  \
      }                                                                                      \
      char* bases[2] = {ct_tensor_base(x), (char*)keys};                                     \
      ct_cpu_iterate_raw(2, bases, strides, x->ndim, shape, ct_cpu_unique_keys_##SFX, NULL); \
      ct_uq_sort_all_##U(keys, n);                                                           \
    }                                                                                        \
    int64_t count = n > 0 ? 1 : 0;                                                           \
    for (int64_t i = 1; i < n; ++i) count += keys[i] != keys[i - 1];                         \
    void* data;                                                                              \
    const int status = ct_uq_allocate(call, x, count, &data);                                \
    if (status != CT_OK) return status;                                                      \
    T* out = data;                                                                           \
    int64_t at = 0;                                                                          \
    for (int64_t i = 0; i < n; ++i) {                                                        \
      if (i == 0 || keys[i] != keys[i - 1]) out[at++] = ct_uq_value_##SFX(keys[i]);          \
    }                                                                                        \
    return CT_OK;                                                                            \
  }

CT_SORT_KEY_WIDE_TYPES(CT_UQ_WIDE_X, _)

/* ----- workspace: the presence table, or one key per element ----- */

static int ct_cpu_unique_values_workspace(const ct_kernel_call* call, uint64_t* bytes,
                                          uint64_t* alignment) {
  const ct_tensor* x = call->inputs[0];
  const int64_t itemsize = ct_dtype_size(x->dtype);
  *alignment = 64;
  if (itemsize <= 2) {
    *bytes = (uint64_t)1 << (8 * itemsize);
  } else {
    int64_t shape[CT_MAX_NDIM], strides[CT_MAX_NDIM];
    const int64_t n = ct_uq_distinct_view(x, itemsize, shape, strides); /* <= numel: fits */
    *bytes = (uint64_t)n * (uint64_t)itemsize;
  }
  return CT_OK;
}

#define CT_UQ_REG_X(A, SFX, T, C, U, ID) \
  {"unique_values", 2, {ID, ID}, ct_cpu_unique_values_##SFX, ct_cpu_unique_values_workspace, NULL},

static const ct_cpu_kernel ct_cpu_unique_kernels[] = {CT_SORT_KEY_SMALL_TYPES(CT_UQ_REG_X, _)
                                                          CT_SORT_KEY_WIDE_TYPES(CT_UQ_REG_X, _)};

int ct_cpu_register_unique(void) {
  return ct_cpu_register_all(ct_cpu_unique_kernels, CT_CPU_KERNEL_COUNT(ct_cpu_unique_kernels));
}
