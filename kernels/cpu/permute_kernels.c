/* permute_kernels.c - permute_dims: a copy through the iteration engine with the input's strides
 * permuted into the output's order. It never looks at the values, so there is one copy loop per
 * element size (copy_loops.h, used by the other copy ops too), registered for every dtype of that
 * size. */
#include <string.h>

#include "copy_loops.h"
#include "cpu_register.h"
#include "elementwise_loops.h"

/* dst = src on a 1-D run. Runs contiguous on both sides are one memcpy; a broadcast source is a
 * fill; otherwise a plain strided loop (the engine already made the output the inner order). */
#define CT_COPY_LOOP(BITS, WORD)                                                               \
  static void ct_cpu_copy_##BITS(char** data, const int64_t* steps, int64_t n,                 \
                                 const void* extra) {                                          \
    (void)extra;                                                                               \
    typedef WORD word;                                                                         \
    const int64_t w = (int64_t)sizeof(word), ss = steps[0], ds = steps[1];                     \
    const char* src = data[0];                                                                 \
    char* dst = data[1];                                                                       \
    if (ss == w && ds == w) {                                                                  \
      memcpy(dst, src, (size_t)(n * w));                                                       \
    } else if (ds == w && ss == 0) {                                                           \
      const word v = *(const word*)src;                                                        \
      word* d = (word*)dst;                                                                    \
      for (int64_t i = 0; i < n; ++i) d[i] = v;                                                \
    } else if (ds == w) {                                                                      \
      word* d = (word*)dst;                                                                    \
      for (int64_t i = 0; i < n; ++i) d[i] = CT_AT(const word, src, i, ss);                    \
    } else {                                                                                   \
      for (int64_t i = 0; i < n; ++i) CT_AT(word, dst, i, ds) = CT_AT(const word, src, i, ss); \
    }                                                                                          \
  }                                                                                            \
  const ct_cpu_loop_entry ct_cpu_copy_##BITS##_entry = {ct_cpu_copy_##BITS};

CT_COPY_LOOP(8, uint8_t)
CT_COPY_LOOP(16, uint16_t)
CT_COPY_LOOP(32, uint32_t)
CT_COPY_LOOP(64, uint64_t)
CT_COPY_LOOP(128, ct_cpu_word128)

const uint64_t ct_cpu_zero_word[2] = {0, 0};

/* out[i0, ..., in-1] = x[j...] with j[axes[k]] = ik: output dim k walks input dim axes[k]. */
static int ct_cpu_permute_dims_run(const ct_kernel_call* call) {
  const ct_tensor* x = call->inputs[0];
  const ct_tensor* out = call->outputs[0];
  const ct_attr_value* axes = &call->attrs[0];
  const int32_t ndim = out->ndim;
  const int64_t itemsize = ct_dtype_size(x->dtype);
  int64_t strides[2 * CT_MAX_NDIM];
  for (int32_t k = 0; k < ndim; ++k) {
    int64_t axis = axes->value.ints[k];
    if (axis < 0) axis += ndim;
    if (axis < 0 || axis >= ndim) { /* infer rejects these; never index out of x's dims */
      return ct_set_error(CT_ERROR_INVALID_ARGUMENT, "permute_dims: axis %lld is out of range",
                          (long long)axes->value.ints[k]);
    }
    strides[k] = ct_tensor_stride(x, (int32_t)axis) * itemsize;
    strides[ndim + k] = ct_tensor_stride(out, k) * itemsize;
  }
  char* const bases[2] = {ct_tensor_base(x), ct_tensor_base(out)};
  const ct_cpu_loop_entry* entry = call->kernel_data;
  ct_cpu_iterate_raw(2, bases, strides, ndim, out->shape, entry->loop, NULL);
  return CT_OK;
}

#define CT_PERMUTE_REG_X(A, SFX, T, C, U, ID) \
  {"permute_dims", 2, {ID, ID}, ct_cpu_permute_dims_run, NULL, CT_CPU_COPY_ENTRY(T)},

static const ct_cpu_kernel ct_cpu_permute_kernels[] = {
    CT_CPU_ALL_TYPES(CT_PERMUTE_REG_X, _) CT_CPU_COMPLEX_TYPES(CT_PERMUTE_REG_X, _)};

int ct_cpu_register_permute(void) {
  return ct_cpu_register_all(ct_cpu_permute_kernels, CT_CPU_KERNEL_COUNT(ct_cpu_permute_kernels));
}
