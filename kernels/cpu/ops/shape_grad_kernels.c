/* shape_grad_kernels.c - the backward ops that add cotangents up: tile, repeat, pad, take,
 * take_along_axis (one scatter-add), embedding (a gather of rows by a counting sort) and clip
 * (element-wise). The copies (permute_dims, roll, concat, stack, slice) are in shape_kernels.c.
 *
 * The scatter-add: every forward here reads element i of x for output position o, where i's
 * index along each x axis is a function of o's index along one output axis (a table per output
 * axis holding the accumulator offset, -1 for positions that read no element: pad's constant
 * border), plus, for take and take_along_axis, an index read from the indices at o. The kernel
 * walks grad_out in row-major order, adding each element into a compact accumulator of x's shape
 * in the compute type (float for float16/bfloat16), then stores it into grad_x. One thread, one
 * fixed order: the sums are deterministic. Accumulator and tables live in the workspace; an
 * out-of-range index is reported before grad_x is written. */
#include <string.h>

#include "cpu_register.h"
#include "engine/cpu_dtypes.h"
#include "engine/strided_iter.h"
#include "ops/op_defs.h"
#include "ops/shape_params.h"

/* The walk: grad_out's dims, byte strides, offset tables; the optional index operand. */
typedef struct ct_scatter_plan {
  int32_t ndim;
  const int64_t* shape;
  const char* grad;
  int64_t grad_strides[CT_MAX_NDIM];
  const int64_t* map[CT_MAX_NDIM]; /* accumulator element offset per position, -1: none */
  const char* index;               /* NULL: no index operand */
  int64_t index_strides[CT_MAX_NDIM];
  bool index64;
  int64_t index_extent; /* indices lie in [-extent, extent) */
  int64_t index_scale;  /* accumulator elements per index step */
  int64_t bad_index;    /* set when an index is out of range */
  bool bad;
} ct_scatter_plan;

/* Accumulator element offset of the index at p, or -1 (and plan->bad) when out of range. */
static inline int64_t ct_scatter_index(ct_scatter_plan* plan, const char* p) {
  int64_t j = plan->index64 ? *(const int64_t*)p : (int64_t)*(const int32_t*)p;
  const int64_t n = plan->index_extent;
  if (j < -n || j >= n) {
    plan->bad = true;
    plan->bad_index = j;
    return -1;
  }
  if (j < 0) j += n;
  return j * plan->index_scale;
}

/* Per dtype: the walk (recursive over dims, an inner loop over the last) and the store of the
 * compact accumulator into grad_x. */
#define CT_SCATTER_X(A, SFX, T, C, U, ID)                                                          \
  static void ct_scatter_dims_##SFX(ct_scatter_plan* plan, int32_t k, const char* grad,            \
                                    const char* index, int64_t offset, C* acc) {                   \
    const int64_t* map = plan->map[k];                                                             \
    const int64_t n = plan->shape[k], gs = plan->grad_strides[k];                                  \
    const int64_t is = plan->index ? plan->index_strides[k] : 0;                                   \
    if (k + 1 < plan->ndim) {                                                                      \
      for (int64_t o = 0; o < n && !plan->bad; ++o) {                                              \
        if (map[o] >= 0) {                                                                         \
          ct_scatter_dims_##SFX(plan, k + 1, grad + o * gs, index + o * is, offset + map[o], acc); \
        }                                                                                          \
      }                                                                                            \
      return;                                                                                      \
    }                                                                                              \
    if (!plan->index) {                                                                            \
      for (int64_t o = 0; o < n; ++o) {                                                            \
        if (map[o] >= 0) acc[offset + map[o]] += ct_load_##SFX(*(const T*)(grad + o * gs));        \
      }                                                                                            \
      return;                                                                                      \
    }                                                                                              \
    for (int64_t o = 0; o < n; ++o) {                                                              \
      if (map[o] < 0) continue;                                                                    \
      const int64_t j = ct_scatter_index(plan, index + o * is);                                    \
      if (j < 0) return;                                                                           \
      acc[offset + map[o] + j] += ct_load_##SFX(*(const T*)(grad + o * gs));                       \
    }                                                                                              \
  }                                                                                                \
  static void ct_scatter_walk_##SFX(ct_scatter_plan* plan, void* acc) {                            \
    if (plan->ndim == 0) { /* one element: 0-d grad_out */                                         \
      int64_t j = 0;                                                                               \
      if (plan->index) j = ct_scatter_index(plan, plan->index);                                    \
      if (j >= 0) ((C*)acc)[j] += ct_load_##SFX(*(const T*)plan->grad);                            \
      return;                                                                                      \
    }                                                                                              \
    ct_scatter_dims_##SFX(plan, 0, plan->grad, plan->index, 0, (C*)acc);                           \
  }                                                                                                \
  static void ct_scatter_store_##SFX(const void* acc_data, const ct_tensor* out) {                 \
    const C* acc = acc_data;                                                                       \
    const int32_t nd = out->ndim;                                                                  \
    const int64_t numel = ct_tensor_numel(out);                                                    \
    const int64_t itemsize = (int64_t)sizeof(T);                                                   \
    if (nd == 0) {                                                                                 \
      if (numel) *(T*)ct_tensor_base(out) = ct_store_##SFX(acc[0]);                                \
      return;                                                                                      \
    }                                                                                              \
    const int64_t inner = out->shape[nd - 1], step = ct_tensor_stride(out, nd - 1) * itemsize;     \
    int64_t index[CT_MAX_NDIM] = {0};                                                              \
    for (int64_t done = 0; done < numel; done += inner) {                                          \
      char* dst = ct_tensor_base(out);                                                             \
      for (int32_t k = 0; k < nd - 1; ++k) dst += index[k] * ct_tensor_stride(out, k) * itemsize;  \
      for (int64_t i = 0; i < inner; ++i) *(T*)(dst + i * step) = ct_store_##SFX(acc[done + i]);   \
      for (int32_t k = nd - 2; k >= 0 && ++index[k] == out->shape[k]; --k) index[k] = 0;           \
    }                                                                                              \
  }
CT_CPU_FLOAT_TYPES(CT_SCATTER_X, _)

typedef struct ct_scatter_kernel {
  void (*walk)(ct_scatter_plan* plan, void* acc);
  void (*store)(const void* acc, const ct_tensor* out);
  int64_t acc_size; /* bytes per accumulator element */
} ct_scatter_kernel;

#define CT_SCATTER_DATA_X(A, SFX, T, C, U, ID)               \
  static const ct_scatter_kernel ct_scatter_kernel_##SFX = { \
      ct_scatter_walk_##SFX, ct_scatter_store_##SFX, (int64_t)sizeof(C)};
CT_CPU_FLOAT_TYPES(CT_SCATTER_DATA_X, _)

/* bytes rounded up to a multiple of 64 (bytes is the accumulator's size: the workspace query
 * checked that it and the rounding fit). */
static int64_t ct_align64(int64_t bytes) {
  return ct_size_round_up(bytes, 64);
}

/* Workspace: the accumulator (x's elements), then one table entry per grad_out position of each
 * axis. */
static int ct_scatter_workspace(const ct_kernel_call* call, uint64_t* bytes, uint64_t* alignment) {
  const ct_scatter_kernel* kernel = call->kernel_data;
  const ct_tensor* grad = call->inputs[0];
  int64_t tables = 1;
  for (int32_t k = 0; k < grad->ndim; ++k) tables = ct_size_add(tables, grad->shape[k]);
  const int64_t total =
      ct_size_add(ct_align64(ct_size_mul(ct_tensor_numel(call->outputs[0]), kernel->acc_size)),
                  ct_size_mul(tables, (int64_t)sizeof(int64_t)));
  *alignment = 64;
  if (total == CT_SIZE_TOO_LARGE) {
    *bytes = 0;
    return ct_set_error(CT_ERROR_SIZE_OVERFLOW,
                        "%s: the accumulator (%lld elements of %lld bytes) and the index tables "
                        "overflow int64",
                        call->schema->name, (long long)ct_tensor_numel(call->outputs[0]),
                        (long long)kernel->acc_size);
  }
  *bytes = (uint64_t)total;
  return CT_OK;
}

/* Compact element strides of the accumulator (x's shape). */
static void ct_acc_strides(const ct_tensor* x, int64_t* strides) {
  ct_compact_strides(x->ndim, x->shape, strides);
}

/* Fills the plan's walk over grad_out; the tables are laid out after the accumulator, and the
 * caller fills them. */
static int64_t* ct_scatter_begin(const ct_kernel_call* call, ct_scatter_plan* plan, void** acc) {
  const ct_scatter_kernel* kernel = call->kernel_data;
  const ct_tensor *grad = call->inputs[0], *out = call->outputs[0];
  memset(plan, 0, sizeof *plan);
  plan->ndim = grad->ndim;
  plan->shape = grad->shape;
  const int64_t itemsize = ct_dtype_size(grad->dtype);
  for (int32_t k = 0; k < grad->ndim; ++k) {
    plan->grad_strides[k] = ct_tensor_stride(grad, k) * itemsize;
  }
  const int64_t acc_bytes = ct_tensor_numel(out) * kernel->acc_size;
  *acc = call->workspace;
  memset(call->workspace, 0, (size_t)acc_bytes);
  int64_t* tables = (int64_t*)((char*)call->workspace + ct_align64(acc_bytes));
  int64_t* next = tables;
  for (int32_t k = 0; k < grad->ndim; ++k) {
    plan->map[k] = next;
    next += grad->shape[k];
  }
  plan->grad = ct_tensor_base(grad);
  return tables;
}

/* Walks, reports a bad index, or stores. */
static int ct_scatter_finish(const ct_kernel_call* call, ct_scatter_plan* plan, void* acc,
                             const char* op) {
  const ct_scatter_kernel* kernel = call->kernel_data;
  for (int32_t k = 0; k < plan->ndim; ++k) {
    if (plan->shape[k] == 0) {
      kernel->store(acc, call->outputs[0]);
      return CT_OK;
    }
  }
  kernel->walk(plan, acc);
  if (plan->bad) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT, "%s: index %lld is out of range [%lld, %lld)",
                        op, (long long)plan->bad_index, (long long)-plan->index_extent,
                        (long long)plan->index_extent);
  }
  kernel->store(acc, call->outputs[0]);
  return CT_OK;
}

static void ct_scatter_set_index(ct_scatter_plan* plan, const ct_tensor* indices,
                                 const int64_t* byte_strides, int64_t extent, int64_t scale) {
  plan->index = ct_tensor_base(indices);
  plan->index64 = indices->dtype.bits == 64;
  for (int32_t k = 0; k < plan->ndim; ++k) plan->index_strides[k] = byte_strides[k];
  plan->index_extent = extent;
  plan->index_scale = scale;
}

/* ----- tile ----- */

static int ct_cpu_tile_backward_run(const ct_kernel_call* call) {
  const ct_tensor *grad = call->inputs[0], *x = call->outputs[0];
  int64_t reps[CT_MAX_NDIM];
  int32_t ndim = 0;
  const int status = ct_tile_params(&call->attrs[0], x->ndim, &ndim, reps);
  if (status != CT_OK) return status;
  ct_scatter_plan plan;
  void* acc;
  ct_scatter_begin(call, &plan, &acc);
  int64_t ax[CT_MAX_NDIM];
  ct_acc_strides(x, ax);
  for (int32_t k = 0; k < grad->ndim; ++k) {
    const int32_t j = k - (ndim - x->ndim);
    int64_t* map = (int64_t*)plan.map[k];
    for (int64_t o = 0; o < grad->shape[k]; ++o) map[o] = j >= 0 ? (o % x->shape[j]) * ax[j] : 0;
  }
  return ct_scatter_finish(call, &plan, acc, "tile_backward");
}

/* ----- repeat ----- */

/* Position o of the repeated axis -> source index times scale: repeats r (one or per index). */
static void ct_repeat_table(const ct_attr_value* repeats, int64_t n, int64_t scale, int64_t* map,
                            int64_t length) {
  const int64_t* r = repeats->value.ints;
  if (repeats->count == 1) {
    for (int64_t o = 0; o < length; ++o) map[o] = (o / r[0]) * scale;
    return;
  }
  int64_t o = 0;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t c = 0; c < r[i]; ++c) map[o++] = i * scale;
  }
}

static int ct_cpu_repeat_backward_run(const ct_kernel_call* call) {
  const ct_tensor *grad = call->inputs[0], *x = call->outputs[0];
  ct_scatter_plan plan;
  void* acc;
  ct_scatter_begin(call, &plan, &acc);
  if (call->attrs[1].type == CT_ATTR_NONE) { /* x flattened: the accumulator's flat order */
    ct_repeat_table(&call->attrs[0], ct_tensor_numel(x), 1, (int64_t*)plan.map[0], grad->shape[0]);
    return ct_scatter_finish(call, &plan, acc, "repeat_backward");
  }
  int32_t axis;
  const int status = ct_normalize_axis("repeat_backward", call->attrs[1].value.i, x->ndim, &axis);
  if (status != CT_OK) return status;
  int64_t ax[CT_MAX_NDIM];
  ct_acc_strides(x, ax);
  for (int32_t k = 0; k < grad->ndim; ++k) {
    int64_t* map = (int64_t*)plan.map[k];
    if (k == axis) {
      ct_repeat_table(&call->attrs[0], x->shape[k], ax[k], map, grad->shape[k]);
    } else {
      for (int64_t o = 0; o < grad->shape[k]; ++o) map[o] = o * ax[k];
    }
  }
  return ct_scatter_finish(call, &plan, acc, "repeat_backward");
}

/* ----- pad ----- */

/* Source position (in [0, n)) of position i (relative to the array's start) for reflect, as the
 * forward (shape_kernels.c). */
static int64_t ct_reflect_index(int64_t i, int64_t n) {
  if (n == 1) return 0;
  const int64_t period = 2 * (n - 1);
  int64_t m = i % period;
  if (m < 0) m += period;
  return m < n ? m : period - m;
}

static int ct_cpu_pad_backward_run(const ct_kernel_call* call) {
  const ct_tensor* x = call->outputs[0];
  int64_t before[CT_MAX_NDIM], after[CT_MAX_NDIM];
  int mode = 0;
  const int status = ct_pad_params(call->attrs, x->ndim, x->shape, before, after, &mode);
  if (status != CT_OK) return status;
  ct_scatter_plan plan;
  void* acc;
  ct_scatter_begin(call, &plan, &acc);
  int64_t ax[CT_MAX_NDIM];
  ct_acc_strides(x, ax);
  for (int32_t k = 0; k < x->ndim; ++k) {
    int64_t* map = (int64_t*)plan.map[k];
    const int64_t n = x->shape[k];
    for (int64_t o = 0; o < n + before[k] + after[k]; ++o) {
      const int64_t i = o - before[k];
      if (mode == 0) {
        map[o] = i >= 0 && i < n ? i * ax[k] : -1;
      } else if (mode == 2) {
        map[o] = (i < 0 ? 0 : i >= n ? n - 1 : i) * ax[k];
      } else {
        map[o] = ct_reflect_index(i, n) * ax[k];
      }
    }
  }
  return ct_scatter_finish(call, &plan, acc, "pad_backward");
}

/* ----- take, take_along_axis ----- */

static int ct_cpu_take_backward_run(const ct_kernel_call* call) {
  const ct_tensor *grad = call->inputs[0], *idx = call->inputs[2], *x = call->outputs[0];
  ct_scatter_plan plan;
  void* acc;
  ct_scatter_begin(call, &plan, &acc);
  const int64_t isize = ct_dtype_size(idx->dtype);
  int64_t is[CT_MAX_NDIM];
  if (call->attrs[0].type == CT_ATTR_NONE) { /* grad_out has idx's shape; x flattened */
    for (int32_t k = 0; k < grad->ndim; ++k) {
      int64_t* map = (int64_t*)plan.map[k];
      for (int64_t o = 0; o < grad->shape[k]; ++o) map[o] = 0;
      is[k] = ct_tensor_stride(idx, k) * isize;
    }
    ct_scatter_set_index(&plan, idx, is, ct_tensor_numel(x), 1);
    return ct_scatter_finish(call, &plan, acc, "take_backward");
  }
  int32_t axis;
  const int status = ct_normalize_axis("take_backward", call->attrs[0].value.i, x->ndim, &axis);
  if (status != CT_OK) return status;
  int64_t ax[CT_MAX_NDIM];
  ct_acc_strides(x, ax);
  /* grad_out's dims: x's before axis, idx's, x's after axis */
  for (int32_t k = 0; k < grad->ndim; ++k) {
    int64_t* map = (int64_t*)plan.map[k];
    const bool of_idx = k >= axis && k < axis + idx->ndim;
    const int64_t scale = of_idx ? 0 : ax[k < axis ? k : k - idx->ndim + 1];
    for (int64_t o = 0; o < grad->shape[k]; ++o) map[o] = o * scale;
    is[k] = of_idx ? ct_tensor_stride(idx, k - axis) * isize : 0;
  }
  ct_scatter_set_index(&plan, idx, is, x->shape[axis], ax[axis]);
  return ct_scatter_finish(call, &plan, acc, "take_backward");
}

static int ct_cpu_take_along_axis_backward_run(const ct_kernel_call* call) {
  const ct_tensor *grad = call->inputs[0], *idx = call->inputs[2], *x = call->outputs[0];
  int32_t axis;
  const int status =
      ct_normalize_axis("take_along_axis_backward", call->attrs[0].value.i, x->ndim, &axis);
  if (status != CT_OK) return status;
  ct_scatter_plan plan;
  void* acc;
  ct_scatter_begin(call, &plan, &acc);
  int64_t ax[CT_MAX_NDIM], is[CT_MAX_NDIM];
  ct_acc_strides(x, ax);
  ct_cpu_broadcast_strides(idx, grad->ndim, grad->shape, is);
  for (int32_t k = 0; k < grad->ndim; ++k) {
    int64_t* map = (int64_t*)plan.map[k];
    const int64_t scale = k == axis || x->shape[k] == 1 ? 0 : ax[k];
    for (int64_t o = 0; o < grad->shape[k]; ++o) map[o] = o * scale;
  }
  ct_scatter_set_index(&plan, idx, is, x->shape[axis], ax[axis]);
  return ct_scatter_finish(call, &plan, acc, "take_along_axis_backward");
}

/* ----- embedding: rows gathered by a counting sort of the indices ----- */

/* Per dtype: rows [begin, end) of grad_weight, each the sum of its grad_out rows in index order
 * (zero when none), accumulated in the compute type in chunks. */
typedef struct ct_embedding_job {
  const ct_tensor* out;
  const char* grad;
  int64_t grad_step; /* bytes between elements of a grad_out row */
  const int64_t* start;
  const int64_t* rows; /* byte offsets of grad_out rows, grouped by index */
} ct_embedding_job;

#define CT_EMBEDDING_CHUNK 256
#define CT_EMBEDDING_X(A, SFX, T, C, U, ID)                                                     \
  static void ct_embedding_rows_##SFX(int64_t begin, int64_t end, void* context) {              \
    const ct_embedding_job* job = context;                                                      \
    const ct_tensor* out = job->out;                                                            \
    const int64_t dim = out->shape[1], itemsize = (int64_t)sizeof(T);                           \
    const int64_t os0 = ct_tensor_stride(out, 0) * itemsize;                                    \
    const int64_t os1 = ct_tensor_stride(out, 1) * itemsize, gs = job->grad_step;               \
    const bool contiguous = os1 == itemsize && gs == itemsize;                                  \
    C acc[CT_EMBEDDING_CHUNK];                                                                  \
    for (int64_t r = begin; r < end; ++r) {                                                     \
      char* dst = ct_tensor_base(out) + r * os0;                                                \
      const int64_t first = job->start[r], last = job->start[r + 1];                            \
      if (first == last) {                                                                      \
        if (os1 == itemsize) {                                                                  \
          memset(dst, 0, (size_t)(dim * itemsize));                                             \
        } else {                                                                                \
          for (int64_t c = 0; c < dim; ++c) *(T*)(dst + c * os1) = ct_store_##SFX((C)0);        \
        }                                                                                       \
        continue;                                                                               \
      }                                                                                         \
      for (int64_t c0 = 0; c0 < dim; c0 += CT_EMBEDDING_CHUNK) {                                \
        const int64_t w = dim - c0 < CT_EMBEDDING_CHUNK ? dim - c0 : CT_EMBEDDING_CHUNK;        \
        for (int64_t e = first; e < last; ++e) {                                                \
          const char* src = job->grad + job->rows[e] + c0 * gs;                                 \
          if (contiguous) {                                                                     \
            const T* s = (const T*)src;                                                         \
            if (e == first) {                                                                   \
              for (int64_t c = 0; c < w; ++c) acc[c] = ct_load_##SFX(s[c]);                     \
            } else {                                                                            \
              for (int64_t c = 0; c < w; ++c) acc[c] += ct_load_##SFX(s[c]);                    \
            }                                                                                   \
          } else {                                                                              \
            for (int64_t c = 0; c < w; ++c) {                                                   \
              const C v = ct_load_##SFX(*(const T*)(src + c * gs));                             \
              acc[c] = e == first ? v : acc[c] + v;                                             \
            }                                                                                   \
          }                                                                                     \
        }                                                                                       \
        if (os1 == itemsize) {                                                                  \
          T* d = (T*)(dst + c0 * itemsize);                                                     \
          for (int64_t c = 0; c < w; ++c) d[c] = ct_store_##SFX(acc[c]);                        \
        } else {                                                                                \
          for (int64_t c = 0; c < w; ++c) *(T*)(dst + (c0 + c) * os1) = ct_store_##SFX(acc[c]); \
        }                                                                                       \
      }                                                                                         \
    }                                                                                           \
  }
CT_CPU_FLOAT_TYPES(CT_EMBEDDING_X, _)

typedef struct ct_embedding_kernel {
  ct_cpu_range_body rows;
} ct_embedding_kernel;
#define CT_EMBEDDING_DATA_X(A, SFX, T, C, U, ID) \
  static const ct_embedding_kernel ct_embedding_kernel_##SFX = {ct_embedding_rows_##SFX};
CT_CPU_FLOAT_TYPES(CT_EMBEDDING_DATA_X, _)

/* Workspace: start offsets (rows + 1) and the grouped grad_out row offsets (one per index). */
static int ct_embedding_backward_workspace(const ct_kernel_call* call, uint64_t* bytes,
                                           uint64_t* alignment) {
  const int64_t rows = call->outputs[0]->shape[0], count = ct_tensor_numel(call->inputs[1]);
  const int64_t total = ct_size_mul(ct_size_add(ct_size_add(rows, 1), count), sizeof(int64_t));
  *alignment = 64;
  if (total == CT_SIZE_TOO_LARGE) {
    *bytes = 0;
    return ct_set_error(CT_ERROR_SIZE_OVERFLOW,
                        "embedding_backward: the row offsets of %lld rows and %lld indices "
                        "overflow int64",
                        (long long)rows, (long long)count);
  }
  *bytes = (uint64_t)total;
  return CT_OK;
}

static int ct_cpu_embedding_backward_run(const ct_kernel_call* call) {
  const ct_tensor *grad = call->inputs[0], *idx = call->inputs[1], *out = call->outputs[0];
  const int64_t rows = out->shape[0], count = ct_tensor_numel(idx);
  int64_t* start = call->workspace;
  int64_t* grouped = start + rows + 1;
  memset(start, 0, (size_t)(rows + 1) * sizeof(int64_t));
  const int64_t isize = ct_dtype_size(idx->dtype), gsize = ct_dtype_size(grad->dtype);
  const bool wide = idx->dtype.bits == 64;
  const int32_t nd = idx->ndim;
  /* pass 1: check and count, walking the indices in row-major order */
  int64_t index[CT_MAX_NDIM] = {0};
  for (int64_t j = 0; j < count; ++j) {
    const char* p = ct_tensor_base(idx);
    for (int32_t k = 0; k < nd; ++k) p += index[k] * ct_tensor_stride(idx, k) * isize;
    const int64_t v = wide ? *(const int64_t*)p : (int64_t)*(const int32_t*)p;
    if (v < 0 || v >= rows) {
      return ct_set_error(CT_ERROR_INVALID_ARGUMENT,
                          "embedding_backward: index %lld is out of range [0, %lld)", (long long)v,
                          (long long)rows);
    }
    ++start[v + 1];
    for (int32_t k = nd - 1; k >= 0 && ++index[k] == idx->shape[k]; --k) index[k] = 0;
  }
  for (int64_t r = 0; r < rows; ++r) start[r + 1] += start[r];
  /* pass 2: place each grad_out row's offset at its index's cursor (start[v] moves to its end) */
  memset(index, 0, sizeof index);
  for (int64_t j = 0; j < count; ++j) {
    const char* p = ct_tensor_base(idx);
    int64_t g = 0;
    for (int32_t k = 0; k < nd; ++k) {
      p += index[k] * ct_tensor_stride(idx, k) * isize;
      g += index[k] * ct_tensor_stride(grad, k) * gsize;
    }
    const int64_t v = wide ? *(const int64_t*)p : (int64_t)*(const int32_t*)p;
    grouped[start[v]++] = g;
    for (int32_t k = nd - 1; k >= 0 && ++index[k] == idx->shape[k]; --k) index[k] = 0;
  }
  for (int64_t r = rows; r > 0; --r) start[r] = start[r - 1];
  start[0] = 0;
  const ct_embedding_job job = {out, ct_tensor_base(grad), ct_tensor_stride(grad, nd) * gsize,
                                start, grouped};
  const ct_embedding_kernel* kernel = call->kernel_data;
  ct_cpu_parallel_for(rows, ct_size_add(out->shape[1], 1), kernel->rows, (void*)&job);
  return CT_OK;
}

/* ----- clip: grad_out where the input was the one selected (torch.clamp's rules) ----- */

typedef struct ct_clip_backward_extra {
  int which; /* 0 x, 1 min, 2 max */
  bool has_min, has_max;
} ct_clip_backward_extra;

#define CT_CLIP_BACKWARD_X(A, SFX, T, C, U, ID)                                                 \
  static void ct_clip_backward_loop_##SFX(char** data, const int64_t* steps, int64_t n,         \
                                          const void* extra) {                                  \
    const ct_clip_backward_extra* e = extra;                                                    \
    const int lo_at = e->has_min ? 2 : 0, hi_at = e->has_max ? 2 + e->has_min : 0;              \
    const int out_at = 2 + e->has_min + e->has_max;                                             \
    for (int64_t i = 0; i < n; ++i) {                                                           \
      const C x = ct_load_##SFX(*(const T*)(data[1] + i * steps[1]));                           \
      const C lo = e->has_min ? ct_load_##SFX(*(const T*)(data[lo_at] + i * steps[lo_at])) : 0; \
      const C hi = e->has_max ? ct_load_##SFX(*(const T*)(data[hi_at] + i * steps[hi_at])) : 0; \
      bool pass;                                                                                \
      if (e->which == 0) {                                                                      \
        pass = (!e->has_min || x >= lo) && (!e->has_max || x <= hi);                            \
      } else if (e->which == 1) {                                                               \
        pass = x < lo && (!e->has_max || lo < hi);                                              \
      } else {                                                                                  \
        pass = x > hi || (e->has_min && hi < lo);                                               \
      }                                                                                         \
      const C g = ct_load_##SFX(*(const T*)(data[0] + i * steps[0]));                           \
      *(T*)(data[out_at] + i * steps[out_at]) = ct_store_##SFX(pass ? g : (C)0);                \
    }                                                                                           \
  }
CT_CPU_FLOAT_TYPES(CT_CLIP_BACKWARD_X, _)
#define CT_CLIP_BACKWARD_DATA_X(A, SFX, T, C, U, ID) \
  static const ct_cpu_loop_entry ct_clip_backward_entry_##SFX = {ct_clip_backward_loop_##SFX, 0};
CT_CPU_FLOAT_TYPES(CT_CLIP_BACKWARD_DATA_X, _)

static int ct_cpu_clip_backward_run(const ct_kernel_call* call) {
  const char* wrt = call->attrs[0].value.s;
  ct_clip_backward_extra extra = {strcmp(wrt, "x") == 0     ? 0
                                  : strcmp(wrt, "min") == 0 ? 1
                                                            : 2,
                                  call->inputs[2] != NULL,
                                  call->num_inputs > 3 && call->inputs[3] != NULL};
  const ct_tensor* operands[5];
  int32_t n = 0;
  for (int32_t i = 0; i < call->num_inputs; ++i) {
    if (call->inputs[i]) operands[n++] = call->inputs[i];
  }
  operands[n++] = call->outputs[0];
  const ct_cpu_loop_entry* entry = call->kernel_data;
  ct_cpu_iterate(n, operands, entry->loop, &extra);
  return CT_OK;
}

/* ----- registration ----- */

#define CT_SHAPE_GRAD_REG_X(A, SFX, T, C, U, ID)                                                   \
  {"tile_backward",         3, {ID, ID, ID}, ct_cpu_tile_backward_run, ct_scatter_workspace,       \
   &ct_scatter_kernel_##SFX},                                                                      \
      {"repeat_backward",       3, {ID, ID, ID}, ct_cpu_repeat_backward_run, ct_scatter_workspace, \
       &ct_scatter_kernel_##SFX},                                                                  \
      {"pad_backward",          3, {ID, ID, ID}, ct_cpu_pad_backward_run, ct_scatter_workspace,    \
       &ct_scatter_kernel_##SFX},                                                                  \
      {"take_backward",         4,                                                                 \
       {ID, ID, CT_DT_I32, ID}, ct_cpu_take_backward_run,                                          \
       ct_scatter_workspace,    &ct_scatter_kernel_##SFX},                                         \
      {"take_backward",         4,                                                                 \
       {ID, ID, CT_DT_I64, ID}, ct_cpu_take_backward_run,                                          \
       ct_scatter_workspace,    &ct_scatter_kernel_##SFX},                                         \
      {"take_along_axis_backward", 4,                                                              \
       {ID, ID, CT_DT_I32, ID},    ct_cpu_take_along_axis_backward_run,                            \
       ct_scatter_workspace,       &ct_scatter_kernel_##SFX},                                      \
      {"take_along_axis_backward", 4,                                                              \
       {ID, ID, CT_DT_I64, ID},    ct_cpu_take_along_axis_backward_run,                            \
       ct_scatter_workspace,       &ct_scatter_kernel_##SFX},                                      \
      {"embedding_backward",                                                                       \
       4,                                                                                          \
       {ID, CT_DT_I32, ID, ID},                                                                    \
       ct_cpu_embedding_backward_run,                                                              \
       ct_embedding_backward_workspace,                                                            \
       &ct_embedding_kernel_##SFX},                                                                \
      {"embedding_backward",                                                                       \
       4,                                                                                          \
       {ID, CT_DT_I64, ID, ID},                                                                    \
       ct_cpu_embedding_backward_run,                                                              \
       ct_embedding_backward_workspace,                                                            \
       &ct_embedding_kernel_##SFX},                                                                \
      {"clip_backward",          5,    {ID, ID, ID, ID, ID},                                       \
       ct_cpu_clip_backward_run, NULL, &ct_clip_backward_entry_##SFX},

static const ct_cpu_kernel ct_cpu_shape_grad_kernels[] = {
    CT_CPU_FLOAT_TYPES(CT_SHAPE_GRAD_REG_X, _)};

int ct_cpu_register_shape_grad(void) {
  return ct_cpu_register_all(ct_cpu_shape_grad_kernels,
                             CT_CPU_KERNEL_COUNT(ct_cpu_shape_grad_kernels));
}
