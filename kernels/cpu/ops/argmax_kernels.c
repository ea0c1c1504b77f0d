/* argmax_kernels.c - argmax and argmin along one axis or over the flattened array, on the reduction
 * engine (reduce_layout.h) in ordered mode, so reduced flat indices are NumPy's row-major indices.
 *
 * The accumulator is (best value, its index; -1 before the first element). The first maximum
 * (minimum) wins (later equal values never replace it) and the first nan counts as the best.
 * Contiguous runs take one vectorisable pass of block maxima (stopping at the first nan), then look
 * for the first match inside the block that holds the winner. */
#include <math.h>
#include <stdint.h>

#include "ops/arg_search.h"
#include "engine/cpu_dtypes.h"
#include "cpu_register.h"
#include "ops/reduce_f32.h"
#include "engine/reduce_layout.h"

/* nan test per compute type (integers and bool have none). */
#define CT_DEF(A, SFX, T, C, U, ID)     \
  static inline int ct_isnan_##C(C v) { \
    return 0;                           \
  }
CT_CPU_INT_TYPES(CT_DEF, _)
#undef CT_DEF
static inline int ct_isnan_ct_bool8(ct_bool8 v) {
  return 0;
}
static inline int ct_isnan_float(float v) {
  return v != v;
}
static inline int ct_isnan_double(double v) {
  return v != v;
}

/* Contiguous runs are scanned in blocks of this many elements (see run below). */
#define CT_ARGMAX_BLOCK 1024

/* Does v replace best (whose index is earlier)? Larger (argmax) or smaller (argmin), or the
 * first nan. */
#define CT_ARGMAX_BETTER(C, v, best) ((v) > (best) || (ct_isnan_##C(v) && !ct_isnan_##C(best)))
#define CT_ARGMIN_BETTER(C, v, best) ((v) < (best) || (ct_isnan_##C(v) && !ct_isnan_##C(best)))

/* The block extremum and the search inside the winning block: float32 takes reduce_f32.h's
 * vector loops (bitwise the same results), other types the families' own. */
#define CT_ARG_PICK_F32_argmax ct_cpu_max_f32
#define CT_ARG_PICK_F32_argmin ct_cpu_min_f32
#define CT_ARG_BLOCK_PICK(OP, SFX, T) \
  _Generic((T*)0, float*: CT_ARG_PICK_F32_##OP, default: ct_##OP##_##SFX##_pick)
#define CT_ARG_FIND(OP, SFX, T) \
  _Generic((T*)0, float*: ct_cpu_find_f32, default: ct_##OP##_##SFX##_find)

/* The one-pass search of a contiguous run (arg_search.h) where there is one for the type; the
 * others (and machines without AVX2) get -1 and take the block loop. */
static inline int64_t ct_arg_no_search(const void* x, int64_t n, void* value) {
  return -1;
}
#define CT_ARG_SEARCH(OP, T)              \
  _Generic((T*)0,                         \
      float*: ct_cpu_##OP##_search_f32,   \
      double*: ct_cpu_##OP##_search_f64,  \
      int32_t*: ct_cpu_##OP##_search_i32, \
      int64_t*: ct_cpu_##OP##_search_i64, \
      default: ct_arg_no_search)

#define CT_ARG_FAMILY(OP, SFX, T, C, BETTER, LOOP)                                                \
  typedef struct ct_##OP##_##SFX##_acc {                                                          \
    C value;                                                                                      \
    int64_t index;                                                                                \
  } ct_##OP##_##SFX##_acc;                                                                        \
  static void ct_##OP##_##SFX##_init(void* acc, int64_t n) {                                      \
    ct_##OP##_##SFX##_acc* a = acc;                                                               \
    for (int64_t j = 0; j < n; ++j) {                                                             \
      a[j].value = (C)0;                                                                          \
      a[j].index = -1;                                                                            \
    }                                                                                             \
  }                                                                                               \
  /* m merged with the best of q[0..len) (a nan wins) */                                          \
  CT_CPU_HOT static C ct_##OP##_##SFX##_pick(const T* q, int64_t len, C m) {                      \
    LOOP(C, len, ct_load_##SFX(q[ct_i]), m);                                                      \
    return m;                                                                                     \
  }                                                                                               \
  /* the first i < len with q[i] == best (a nan best: the first nan); one is there */             \
  CT_CPU_HOT static int64_t ct_##OP##_##SFX##_find(const T* q, int64_t len, C best) {             \
    const int best_nan = ct_isnan_##C(best);                                                      \
    int64_t at = 0;                                                                               \
    for (; at + CT_NANMAX_WIDTH <= len; at += CT_NANMAX_WIDTH) {                                  \
      int hit = 0;                                                                                \
      for (int k = 0; k < CT_NANMAX_WIDTH; ++k) {                                                 \
        const C v = ct_load_##SFX(q[at + k]);                                                     \
        hit |= (v == best) | (ct_isnan_##C(v) & best_nan);                                        \
      }                                                                                           \
      if (hit) break;                                                                             \
    }                                                                                             \
    for (;; ++at) {                                                                               \
      const C v = ct_load_##SFX(q[at]);                                                           \
      if ((v == best) | (ct_isnan_##C(v) & best_nan)) return at;                                  \
    }                                                                                             \
  }                                                                                               \
  CT_CPU_HOT static void ct_##OP##_##SFX##_run(const char* x, int64_t step, int64_t n,            \
                                               int64_t index, void* acc) {                        \
    ct_##OP##_##SFX##_acc* a = acc;                                                               \
    if (n <= 0 || (a->index >= 0 && ct_isnan_##C(a->value))) return;                              \
    if (step == (int64_t)sizeof(T)) {                                                             \
      C found;                                                                                    \
      const int64_t at = CT_ARG_SEARCH(OP, T)((const T*)x, n, &found);                            \
      if (at >= 0) {                                                                              \
        if (a->index < 0 || BETTER(C, found, a->value)) {                                         \
          a->value = found;                                                                       \
          a->index = index + at;                                                                  \
        }                                                                                         \
        return;                                                                                   \
      }                                                                                           \
    }                                                                                             \
    if (step == (int64_t)sizeof(T) && n >= 2 * CT_NANMAX_WIDTH) {                                 \
      /* one pass of vectorised block maxima; then the first match inside the winning block */    \
      const T* p = (const T*)x;                                                                   \
      C best = a->value;                                                                          \
      int64_t block = -1;                                                                         \
      for (int64_t b = 0; b < n && !ct_isnan_##C(best); b += CT_ARGMAX_BLOCK) {                   \
        const int64_t len = n - b < CT_ARGMAX_BLOCK ? n - b : CT_ARGMAX_BLOCK;                    \
        const T* q = p + b;                                                                       \
        const C m = CT_ARG_BLOCK_PICK(OP, SFX, T)(q, len, ct_load_##SFX(q[0]));                   \
        if ((a->index < 0 && block < 0) || BETTER(C, m, best)) {                                  \
          best = m;                                                                               \
          block = b;                                                                              \
        }                                                                                         \
      }                                                                                           \
      if (block < 0) return;                                                                      \
      const int64_t end = n - block < CT_ARGMAX_BLOCK ? n : block + CT_ARGMAX_BLOCK;              \
      const int64_t at = block + CT_ARG_FIND(OP, SFX, T)(p + block, end - block, best);           \
      a->value = best;                                                                            \
      a->index = index + at;                                                                      \
      return;                                                                                     \
    }                                                                                             \
    C best = a->value;                                                                            \
    int64_t best_index = a->index, i = 0;                                                         \
    if (best_index < 0) {                                                                         \
      best = ct_load_##SFX(CT_REDUCE_AT(T, x, 0, step));                                          \
      best_index = index;                                                                         \
      i = 1;                                                                                      \
    }                                                                                             \
    for (; i < n && !ct_isnan_##C(best); ++i) {                                                   \
      const C v = ct_load_##SFX(CT_REDUCE_AT(T, x, i, step));                                     \
      if (BETTER(C, v, best)) {                                                                   \
        best = v;                                                                                 \
        best_index = index + i;                                                                   \
      }                                                                                           \
    }                                                                                             \
    a->value = best;                                                                              \
    a->index = best_index;                                                                        \
  }                                                                                               \
  CT_CPU_HOT static void ct_##OP##_##SFX##_rows(const char* x, int64_t step, int64_t n,           \
                                                int64_t index, void* acc) {                       \
    ct_##OP##_##SFX##_acc* a = acc;                                                               \
    for (int64_t j = 0; j < n; ++j) {                                                             \
      const C v = ct_load_##SFX(CT_REDUCE_AT(T, x, j, step));                                     \
      if (a[j].index < 0 || BETTER(C, v, a[j].value)) {                                           \
        a[j].value = v;                                                                           \
        a[j].index = index;                                                                       \
      }                                                                                           \
    }                                                                                             \
  }                                                                                               \
  static void ct_##OP##_##SFX##_combine(void* acc, const void* later, int64_t n) {                \
    ct_##OP##_##SFX##_acc* a = acc;                                                               \
    const ct_##OP##_##SFX##_acc* b = later;                                                       \
    for (int64_t j = 0; j < n; ++j) {                                                             \
      if (b[j].index >= 0 && (a[j].index < 0 || BETTER(C, b[j].value, a[j].value))) a[j] = b[j];  \
    }                                                                                             \
  }                                                                                               \
  static void ct_##OP##_##SFX##_finalize(const void* acc, int64_t n, char* out, int64_t out_step, \
                                         int64_t count, double param) {                           \
    const ct_##OP##_##SFX##_acc* a = acc;                                                         \
    for (int64_t j = 0; j < n; ++j) *(int64_t*)(out + j * out_step) = a[j].index;                 \
  }                                                                                               \
  CT_REDUCE_VTABLE(OP, SFX, sizeof(ct_##OP##_##SFX##_acc), true, false)

/* Kernel run function: attrs (axis: int or None, keepdims), kernel_data the vtable. */
static int ct_cpu_argmax_run(const ct_kernel_call* call) {
  const ct_tensor* x = call->inputs[0];
  const ct_attr_value* axis = &call->attrs[0];
  bool mask[CT_MAX_NDIM];
  for (int32_t k = 0; k < x->ndim; ++k) mask[k] = axis->type == CT_ATTR_NONE;
  if (axis->type != CT_ATTR_NONE) {
    const int64_t k = axis->value.i < 0 ? axis->value.i + x->ndim : axis->value.i;
    if (k < 0 || k >= x->ndim) {
      return ct_set_error(CT_ERROR_INVALID_ARGUMENT, "%s: axis %lld is out of range",
                          call->schema->name, (long long)axis->value.i);
    }
    mask[k] = true;
  }
  return ct_cpu_reduce(x, call->outputs[0], mask, call->attrs[1].value.b != 0, call->kernel_data,
                       0.0);
}

/* ----- the kernel list: (op, dtypes), the only place to edit ----- */

#define CT_ARGMAX_KERNELS(K)  \
  K(argmax, CT_CPU_ALL_TYPES) \
  K(argmin, CT_CPU_ALL_TYPES)

/* Per op: which candidate wins, and the vectorised extremum loop. */
#define CT_ARG_BETTER_argmax CT_ARGMAX_BETTER
#define CT_ARG_LOOP_argmax CT_NANMAX_LOOP
#define CT_ARG_BETTER_argmin CT_ARGMIN_BETTER
#define CT_ARG_LOOP_argmin CT_NANMIN_LOOP

#define CT_ARGMAX_DEF_X(A, SFX, T, C, U, ID) \
  CT_ARG_FAMILY(A, SFX, T, C, CT_ARG_BETTER_##A, CT_ARG_LOOP_##A)
#define CT_ARGMAX_REG_X(A, SFX, T, C, U, ID) \
  {#A, 2, {ID, CT_DT_I64}, ct_cpu_argmax_run, NULL, &ct_##A##_##SFX##_vt},

#define K(OP, TYPES) TYPES(CT_ARGMAX_DEF_X, OP)
CT_ARGMAX_KERNELS(K)
#undef K

static const ct_cpu_kernel ct_cpu_argmax_kernels[] = {
#define K(OP, TYPES) TYPES(CT_ARGMAX_REG_X, OP)
    CT_ARGMAX_KERNELS(K)
#undef K
};

int ct_cpu_register_argmax(void) {
  return ct_cpu_register_all(ct_cpu_argmax_kernels, CT_CPU_KERNEL_COUNT(ct_cpu_argmax_kernels));
}
