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

/* ct_uq_sort_<K>(keys, n, shift): sorts keys whose bits above shift + 8 are all equal.
 * American flag sort: histogram of the byte at `shift`, in-place permutation into buckets by
 * cycles, then each bucket on the next byte. A byte every key shares is skipped without moving
 * anything. */
#define CT_UQ_RADIX(K)                                                                       \
  static void ct_uq_insertion_##K(K* a, int64_t n) {                                         \
    for (int64_t i = 1; i < n; ++i) {                                                        \
      const K v = a[i];                                                                      \
      int64_t j = i;                                                                         \
      while (j > 0 && a[j - 1] > v) {                                                        \
        a[j] = a[j - 1];                                                                     \
        --j;                                                                                 \
      }                                                                                      \
      a[j] = v;                                                                              \
    }                                                                                        \
  }                                                                                          \
  /* One level: buckets the keys by the byte at shift; fills end[] with each bucket's end.   \
   * Returns false when every key has the same byte there (nothing moved). */                \
  static int ct_uq_partition_##K(K* a, int64_t n, int shift, int64_t end[256]) {             \
    int64_t count[256] = {0};                                                                \
    for (int64_t i = 0; i < n; ++i) ++count[(a[i] >> shift) & 0xff];                         \
    if (count[(a[0] >> shift) & 0xff] == n) return 0;                                        \
    int64_t next[256];                                                                       \
    int64_t sum = 0;                                                                         \
    for (int b = 0; b < 256; ++b) {                                                          \
      next[b] = sum;                                                                         \
      sum += count[b];                                                                       \
      end[b] = sum;                                                                          \
    }                                                                                        \
    for (int b = 0; b < 256; ++b) {                                                          \
      while (next[b] < end[b]) {                                                             \
        K v = a[next[b]];                                                                    \
        int d = (int)((v >> shift) & 0xff);                                                  \
        while (d != b) {                                                                     \
          const K t = a[next[d]];                                                            \
          a[next[d]++] = v;                                                                  \
          v = t;                                                                             \
          d = (int)((v >> shift) & 0xff);                                                    \
        }                                                                                    \
        a[next[b]++] = v;                                                                    \
      }                                                                                      \
    }                                                                                        \
    return 1;                                                                                \
  }                                                                                          \
  static void ct_uq_sort_##K(K* a, int64_t n, int shift) {                                   \
    for (;;) {                                                                               \
      if (n <= CT_UQ_INSERTION) {                                                            \
        ct_uq_insertion_##K(a, n);                                                           \
        return;                                                                              \
      }                                                                                      \
      int64_t end[256];                                                                      \
      if (ct_uq_partition_##K(a, n, shift, end)) {                                           \
        if (shift == 0) return;                                                              \
        int64_t begin = 0;                                                                   \
        for (int b = 0; b < 256; ++b) {                                                      \
          if (end[b] - begin > 1) ct_uq_sort_##K(a + begin, end[b] - begin, shift - 8);      \
          begin = end[b];                                                                    \
        }                                                                                    \
        return;                                                                              \
      }                                                                                      \
      if (shift == 0) return; /* all keys equal */                                           \
      shift -= 8;                                                                            \
    }                                                                                        \
  }                                                                                          \
  /* As ct_uq_sort, inside an OpenMP parallel region: the buckets of one level go to tasks,  \
   * small neighbours batched together (a batch re-reads its byte, then moves nothing). */   \
  static void ct_uq_sort_tasks_##K(K* a, int64_t n, int shift) {                             \
    int64_t end[256];                                                                        \
    for (;;) {                                                                               \
      if (n < CT_UQ_TASK) {                                                                  \
        ct_uq_sort_##K(a, n, shift);                                                         \
        return;                                                                              \
      }                                                                                      \
      if (ct_uq_partition_##K(a, n, shift, end)) break;                                      \
      if (shift == 0) return; /* all keys equal */                                           \
      shift -= 8;                                                                            \
    }                                                                                        \
    if (shift == 0) return;                                                                  \
    int64_t batch = 0, begin = 0;                                                            \
    for (int b = 0; b < 256; ++b) {                                                          \
      const int64_t size = end[b] - begin;                                                   \
      if (size >= CT_UQ_TASK) {  /* a big bucket: its own task, splitting further */         \
        if (begin - batch > 1) { /* first the small buckets before it */                     \
          K* q = a + batch;                                                                  \
          const int64_t m = begin - batch;                                                   \
          _Pragma("omp task firstprivate(q, m, shift)") ct_uq_sort_##K(q, m, shift);         \
        }                                                                                    \
        K* p = a + begin;                                                                    \
        const int next = shift - 8;                                                          \
        _Pragma("omp task firstprivate(p, size, next)") ct_uq_sort_tasks_##K(p, size, next); \
        batch = end[b];                                                                      \
      } else if (end[b] - batch >= CT_UQ_TASK || (b == 255 && end[b] - batch > 1)) {         \
        K* p = a + batch; /* small buckets [batch, end[b]): one task */                      \
        const int64_t m = end[b] - batch;                                                    \
        _Pragma("omp task firstprivate(p, m, shift)") ct_uq_sort_##K(p, m, shift);           \
        batch = end[b];                                                                      \
      }                                                                                      \
      begin = end[b];                                                                        \
    }                                                                                        \
  }                                                                                          \
  /* The whole array: starts at the highest byte where keys differ; sorts with tasks on      \
   * several threads when there are many keys. */                                            \
  static void ct_uq_sort_all_##K(K* a, int64_t n) {                                          \
    if (n < 2) return;                                                                       \
    const K diff = ct_key_diff_##K(a, n);                                                    \
    if (diff == 0) return;                                                                   \
    int shift = (int)(sizeof(K) * 8) - 8;                                                    \
    while (shift > 0 && (diff >> shift) == 0) shift -= 8;                                    \
    const int threads = n >= CT_UQ_PARALLEL ? ct_cpu_num_threads() : 1;                      \
    if (threads <= 1) {                                                                      \
      ct_uq_sort_##K(a, n, shift);                                                           \
      return;                                                                                \
    }                                                                                        \
    _Pragma("omp parallel num_threads(threads)") {                                           \
      _Pragma("omp single nowait") ct_uq_sort_tasks_##K(a, n, shift);                        \
    }                                                                                        \
  }

CT_UQ_RADIX(uint32_t)
CT_UQ_RADIX(uint64_t)

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
