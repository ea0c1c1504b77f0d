/* nonzero_kernels.c - nonzero(x): one int64 index array per dimension of x, row-major order;
 * argwhere(x): the same indices as the columns of one (count, ndim) array.
 *
 * Two passes over x in row-major order: count, allocate through the caller's allocator, fill.
 * Large inputs are cut into chunks of the flat row-major range; each chunk is counted on its own,
 * a prefix sum over the chunk counts gives each chunk its first output position, and the chunks
 * fill in parallel. Each dtype has its own row functions (count and fill one run of the last
 * dimension), handed to the shared driver as kernel_data. */
#include "engine/int_div.h"
#include "engine/cpu_dtypes.h"
#include "cpu_register.h"
#include "engine/dynamic_output.h"
#include "engine/cpu_threads.h"
#include "engine/strided_iter.h"

/* Most chunks one call is cut into (their counts live on the stack). */
#define CT_NZ_MAX_CHUNKS 256

/* "non-zero" per dtype, on the stored value: NaN counts, -0.0 does not. */
static inline int ct_nz_test_b8(uint8_t v) {
  return v != 0;
}
static inline int ct_nz_test_f16(uint16_t v) {
  return (v & 0x7fffu) != 0;
}
static inline int ct_nz_test_bf16(uint16_t v) {
  return (v & 0x7fffu) != 0;
}
static inline int ct_nz_test_f32(float v) {
  return v != 0.0f;
}
static inline int ct_nz_test_f64(double v) {
  return v != 0.0;
}
#define CT_NZ_TEST_INT(A, SFX, T, C, U, ID) \
  static inline int ct_nz_test_##SFX(T v) { \
    return v != 0;                          \
  }
CT_CPU_INT_TYPES(CT_NZ_TEST_INT, _)
#undef CT_NZ_TEST_INT

/* The per-dtype row functions. count_row: non-zeros among n elements from p, byte step `step`.
 * fill_row: writes first + i for each non-zero element i into out (in order), returns how many;
 * `room` is how many non-zeros are left to find in the caller's range (it may write out[count]
 * before knowing whether element i is one, so it never writes past out[room - 1]). */
typedef int64_t (*ct_nz_count_row_fn)(const char* p, int64_t step, int64_t n);
typedef int64_t (*ct_nz_fill_row_fn)(const char* p, int64_t step, int64_t n, int64_t first,
                                     int64_t* out, int64_t out_step, int64_t room);
typedef struct ct_nz_rows {
  ct_nz_count_row_fn count;
  ct_nz_fill_row_fn fill;
} ct_nz_rows;

#define CT_NZ_ROWS(A, SFX, T, C, U, ID)                                                           \
  static int64_t ct_cpu_nonzero_count_##SFX(const char* p, int64_t step, int64_t n) {             \
    int64_t count = 0;                                                                            \
    if (step == (int64_t)sizeof(T)) {                                                             \
      const T* v = (const T*)p;                                                                   \
      for (int64_t i = 0; i < n; ++i) count += ct_nz_test_##SFX(v[i]);                            \
    } else {                                                                                      \
      for (int64_t i = 0; i < n; ++i) count += ct_nz_test_##SFX(*(const T*)(p + i * step));       \
    }                                                                                             \
    return count;                                                                                 \
  }                                                                                               \
  static int64_t ct_cpu_nonzero_fill_##SFX(const char* p, int64_t step, int64_t n, int64_t first, \
                                           int64_t* out, int64_t out_step, int64_t room) {        \
    int64_t count = 0; /* branch-free: out[count] is in room while count < room */                \
    for (int64_t i = 0; i < n && count < room; ++i) {                                             \
      out[count * out_step] = first + i;                                                          \
      count += ct_nz_test_##SFX(*(const T*)(p + i * step));                                       \
    }                                                                                             \
    return count;                                                                                 \
  }                                                                                               \
  static const ct_nz_rows ct_cpu_nonzero_##SFX##_rows = {ct_cpu_nonzero_count_##SFX,              \
                                                         ct_cpu_nonzero_fill_##SFX};
CT_CPU_ALL_TYPES(CT_NZ_ROWS, _)
#undef CT_NZ_ROWS

/* One call: x's layout, the chunking and, for the fill, the outputs. */
typedef struct ct_nz_job {
  const ct_nz_rows* rows;
  int32_t ndim;
  const int64_t* shape;
  int64_t strides[CT_MAX_NDIM]; /* bytes */
  const char* base;
  int64_t total;
  int64_t chunk;                        /* elements per chunk (the last may be shorter) */
  int64_t counts[CT_NZ_MAX_CHUNKS + 1]; /* per chunk, then (after the scan) first positions */
  int64_t* outs[CT_MAX_NDIM];
  int64_t out_step; /* elements between consecutive indices of one output column */
} ct_nz_job;

/* Walks the flat row-major range [begin, end) of x, one run of the last dimension at a time.
 * With outs NULL it counts; otherwise it writes indices from position `at` and returns the
 * count written. */
static int64_t ct_nz_walk(const ct_nz_job* job, int64_t begin, int64_t end, int64_t* const* outs,
                          int64_t at, int64_t room) {
  const int32_t last = job->ndim - 1;
  const int64_t run = job->shape[last], step = job->strides[last];
  int64_t index[CT_MAX_NDIM];
  int64_t rest = begin;
  const char* p = job->base;
  for (int32_t k = last; k >= 0; --k) {
    index[k] = rest % job->shape[k];
    rest /= job->shape[k];
    p += index[k] * job->strides[k];
  }
  int64_t found = 0, position = begin;
  while (position < end) {
    const int64_t j = index[last];
    const int64_t n = run - j < end - position ? run - j : end - position;
    if (!outs) {
      found += job->rows->count(p, step, n);
    } else {
      const int64_t os = job->out_step;
      const int64_t got =
          job->rows->fill(p, step, n, j, outs[last] + (at + found) * os, os, room - found);
      for (int32_t k = 0; k < last; ++k) {
        int64_t* column = outs[k] + (at + found) * os;
        const int64_t value = index[k];
        for (int64_t i = 0; i < got; ++i) column[i * os] = value;
      }
      found += got;
    }
    position += n;
    if (position >= end || (outs && found == room)) break;
    /* next run: the last index wraps to 0, carry into the outer dimensions */
    p -= j * step;
    index[last] = 0;
    for (int32_t k = last - 1; k >= 0; --k) {
      p += job->strides[k];
      if (++index[k] < job->shape[k]) break;
      p -= job->strides[k] * job->shape[k];
      index[k] = 0;
    }
  }
  return found;
}

static void ct_nz_count_chunks(int64_t begin, int64_t end, void* context) {
  ct_nz_job* job = context;
  for (int64_t c = begin; c < end; ++c) {
    const int64_t first = c * job->chunk;
    const int64_t last = first + job->chunk < job->total ? first + job->chunk : job->total;
    job->counts[c] = ct_nz_walk(job, first, last, NULL, 0, 0);
  }
}

static void ct_nz_fill_chunks(int64_t begin, int64_t end, void* context) {
  ct_nz_job* job = context;
  for (int64_t c = begin; c < end; ++c) {
    const int64_t first = c * job->chunk;
    const int64_t last = first + job->chunk < job->total ? first + job->chunk : job->total;
    const int64_t room = job->counts[c + 1] - job->counts[c];
    if (room > 0) ct_nz_walk(job, first, last, job->outs, job->counts[c], room);
  }
}

/* Sets up the job for x and counts its non-zeros (chunk counts become first positions). */
static int64_t ct_nz_count(const ct_kernel_call* call, ct_nz_job* job, int64_t* chunks_out) {
  const ct_tensor* x = call->inputs[0];
  job->rows = call->kernel_data;
  job->ndim = x->ndim;
  job->shape = x->shape;
  job->base = ct_tensor_base(x);
  job->total = ct_tensor_numel(x);
  job->out_step = 1;
  const int64_t itemsize = ct_dtype_size(x->dtype);
  for (int32_t k = 0; k < x->ndim; ++k) job->strides[k] = ct_tensor_stride(x, k) * itemsize;

  /* Chunks: one below the grain, else a few per thread. */
  int64_t chunks = 1;
  const int threads = ct_cpu_num_threads();
  if (threads > 1 && job->total >= 2 * CT_CPU_PARALLEL_GRAIN) {
    chunks = job->total / CT_CPU_PARALLEL_GRAIN;
    if (chunks > 4 * (int64_t)threads) chunks = 4 * (int64_t)threads;
    if (chunks > CT_NZ_MAX_CHUNKS) chunks = CT_NZ_MAX_CHUNKS;
  }
  job->chunk = job->total > 0 ? ct_div_up(job->total, chunks) : 0;
  if (job->chunk > 0) chunks = ct_div_up(job->total, job->chunk);
  int64_t count = 0;
  if (job->total > 0) {
    ct_cpu_parallel_for(chunks, job->chunk, ct_nz_count_chunks, job);
    /* exclusive scan: counts[c] becomes chunk c's first output position */
    for (int64_t c = 0; c < chunks; ++c) {
      const int64_t n = job->counts[c];
      job->counts[c] = count;
      count += n;
    }
    job->counts[chunks] = count;
  }
  *chunks_out = chunks;
  return count;
}

static int ct_cpu_nonzero_run(const ct_kernel_call* call) {
  const ct_tensor* x = call->inputs[0];
  ct_nz_job job;
  int64_t chunks;
  const int64_t count = ct_nz_count(call, &job, &chunks);
  ct_tensor_info info;
  info.dtype = CT_DTYPE_I64_V;
  info.ndim = 1;
  info.shape[0] = count;
  for (int32_t k = 0; k < x->ndim; ++k) {
    void* data;
    const int status = ct_cpu_allocate_output(call, k, &info, &data);
    if (status != CT_OK) return status;
    job.outs[k] = data;
  }
  if (count > 0) ct_cpu_parallel_for(chunks, job.chunk, ct_nz_fill_chunks, &job);
  return CT_OK;
}

/* argwhere: one (count, ndim) int64 array; column k is nonzero's output k, with row stride ndim.
 * A 0-d x gives (1, 0) or (0, 0), as numpy.argwhere. */
static int ct_cpu_argwhere_run(const ct_kernel_call* call) {
  const ct_tensor* x = call->inputs[0];
  ct_nz_job job;
  int64_t chunks = 0, count;
  if (x->ndim == 0) {
    const ct_nz_rows* rows = call->kernel_data;
    count = rows->count(ct_tensor_base(x), 0, 1);
  } else {
    count = ct_nz_count(call, &job, &chunks);
  }
  ct_tensor_info info;
  info.dtype = CT_DTYPE_I64_V;
  info.ndim = 2;
  info.shape[0] = count;
  info.shape[1] = x->ndim;
  void* data;
  const int status = ct_cpu_allocate_output(call, 0, &info, &data);
  if (status != CT_OK) return status;
  if (x->ndim == 0 || count == 0) return CT_OK;
  for (int32_t k = 0; k < x->ndim; ++k) job.outs[k] = (int64_t*)data + k;
  job.out_step = x->ndim;
  ct_cpu_parallel_for(chunks, job.chunk, ct_nz_fill_chunks, &job);
  return CT_OK;
}

#define CT_NZ_REG_X(A, SFX, T, C, U, ID)                                                   \
  {"nonzero", 2, {ID, CT_DT_I64}, ct_cpu_nonzero_run, NULL, &ct_cpu_nonzero_##SFX##_rows}, \
      {"argwhere", 2, {ID, CT_DT_I64}, ct_cpu_argwhere_run, NULL, &ct_cpu_nonzero_##SFX##_rows},

static const ct_cpu_kernel ct_cpu_nonzero_kernels[] = {CT_CPU_ALL_TYPES(CT_NZ_REG_X, _)};

int ct_cpu_register_nonzero(void) {
  return ct_cpu_register_all(ct_cpu_nonzero_kernels, CT_CPU_KERNEL_COUNT(ct_cpu_nonzero_kernels));
}
