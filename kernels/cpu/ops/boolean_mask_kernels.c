/* boolean_mask_kernels.c - boolean_mask(x, mask) = x[mask] as NumPy.
 *
 * mask covers x's leading dimensions; every true mask element selects the sub-array of x's
 * trailing dimensions at that position (a single element when there are none). Two passes in
 * the mask's row-major order: count the true elements, allocate (count,) + trailing shape
 * through the caller's allocator, then copy the selected sub-arrays. Large masks are cut into
 * chunks of the flat row-major range; a prefix sum over per-chunk counts gives each chunk its
 * first output row, so chunks count and copy in parallel. The copy never looks at values: one
 * set of row functions per element size, registered for every dtype of that size. */
#include <string.h>

#include "engine/int_div.h"
#include "engine/cpu_dtypes.h"
#include "cpu_register.h"
#include "engine/dynamic_output.h"
#include "engine/cpu_threads.h"
#include "engine/strided_iter.h"

/* Most chunks one call is cut into (their counts live on the stack). */
#define CT_BM_MAX_CHUNKS 256

/* Row functions for one element size.
 * gather: out[c] = x[i] for each i < n with mask[i] true, in order, at most `room` of them;
 *         returns how many (writes out[c] before testing mask[i], never past out[room - 1]).
 * copy: out[i] = x[i] for i < n (x with byte step `step`, out compact). */
typedef int64_t (*ct_bm_gather_fn)(const char* mask, int64_t mask_step, const char* x,
                                   int64_t x_step, int64_t n, char* out, int64_t room);
typedef void (*ct_bm_copy_fn)(const char* x, int64_t step, int64_t n, char* out);
typedef struct ct_bm_rows {
  ct_bm_gather_fn gather;
  ct_bm_copy_fn copy;
} ct_bm_rows;

#define CT_BM_ROWS(BITS)                                                                           \
  static int64_t ct_cpu_boolean_mask_gather_##BITS(const char* mask, int64_t mask_step,            \
                                                   const char* x, int64_t x_step, int64_t n,       \
                                                   char* out, int64_t room) {                      \
    typedef uint##BITS##_t word;                                                                   \
    word* o = (word*)out;                                                                          \
    int64_t count = 0;                                                                             \
    if (mask_step == 1 && x_step == (int64_t)sizeof(word)) {                                       \
      const uint8_t* m = (const uint8_t*)mask;                                                     \
      const word* v = (const word*)x;                                                              \
      for (int64_t i = 0; i < n && count < room; ++i) {                                            \
        o[count] = v[i];                                                                           \
        count += m[i] != 0;                                                                        \
      }                                                                                            \
    } else {                                                                                       \
      for (int64_t i = 0; i < n && count < room; ++i) {                                            \
        o[count] = *(const word*)(x + i * x_step);                                                 \
        count += *(const uint8_t*)(mask + i * mask_step) != 0;                                     \
      }                                                                                            \
    }                                                                                              \
    return count;                                                                                  \
  }                                                                                                \
  static void ct_cpu_boolean_mask_copy_##BITS(const char* x, int64_t step, int64_t n, char* out) { \
    typedef uint##BITS##_t word;                                                                   \
    if (step == (int64_t)sizeof(word)) {                                                           \
      memcpy(out, x, (size_t)n * sizeof(word));                                                    \
    } else {                                                                                       \
      word* o = (word*)out;                                                                        \
      for (int64_t i = 0; i < n; ++i) o[i] = *(const word*)(x + i * step);                         \
    }                                                                                              \
  }                                                                                                \
  static const ct_bm_rows ct_cpu_boolean_mask_##BITS##_rows = {ct_cpu_boolean_mask_gather_##BITS,  \
                                                               ct_cpu_boolean_mask_copy_##BITS};

CT_BM_ROWS(8)
CT_BM_ROWS(16)
CT_BM_ROWS(32)
CT_BM_ROWS(64)

/* One call. The mask's dimensions ("lead") and x's trailing ones ("tail") are simplified: unit
 * dimensions dropped, neighbours merged where the layout allows (row-major order is kept). */
typedef struct ct_bm_job {
  const ct_bm_rows* rows;
  int64_t itemsize;
  int32_t lead_ndim; /* >= 1 */
  int64_t lead_shape[CT_MAX_NDIM];
  int64_t mask_strides[CT_MAX_NDIM]; /* bytes */
  int64_t x_strides[CT_MAX_NDIM];    /* bytes, x's leading dimensions */
  int32_t tail_ndim;                 /* 0: one element per mask element */
  int64_t tail_shape[CT_MAX_NDIM];
  int64_t tail_strides[CT_MAX_NDIM]; /* bytes */
  int64_t row_bytes;                 /* bytes of one output row */
  const char* mask_base;
  const char* x_base;
  char* out;
  int64_t total;                        /* mask elements */
  int64_t chunk;                        /* mask elements per chunk (the last may be shorter) */
  int64_t counts[CT_BM_MAX_CHUNKS + 1]; /* per chunk, then (after the scan) first output rows */
} ct_bm_job;

/* True mask elements among n from p (byte step). */
static int64_t ct_bm_count_row(const char* p, int64_t step, int64_t n) {
  int64_t count = 0;
  if (step == 1) {
    const uint8_t* m = (const uint8_t*)p;
    for (int64_t i = 0; i < n; ++i) count += m[i] != 0;
  } else {
    for (int64_t i = 0; i < n; ++i) count += *(const uint8_t*)(p + i * step) != 0;
  }
  return count;
}

/* Copies the sub-array of x at `x` (tail dims) into compact `out`. */
static void ct_bm_copy_block(const ct_bm_job* job, const char* x, char* out) {
  const int32_t last = job->tail_ndim - 1;
  const int64_t run = job->tail_shape[last], step = job->tail_strides[last];
  const int64_t run_bytes = run * job->itemsize;
  if (last == 0) {
    job->rows->copy(x, step, run, out);
    return;
  }
  int64_t index[CT_MAX_NDIM] = {0};
  for (;;) {
    job->rows->copy(x, step, run, out);
    out += run_bytes;
    int32_t k = last - 1;
    for (; k >= 0; --k) {
      x += job->tail_strides[k];
      if (++index[k] < job->tail_shape[k]) break;
      x -= job->tail_strides[k] * job->tail_shape[k];
      index[k] = 0;
    }
    if (k < 0) return;
  }
}

/* Walks mask elements [begin, end) in row-major order. With fill false it counts the true ones;
 * otherwise it copies the selected rows of x to output rows from `at` on, at most `room`. */
static int64_t ct_bm_walk(const ct_bm_job* job, int64_t begin, int64_t end, int fill, int64_t at,
                          int64_t room) {
  const int32_t last = job->lead_ndim - 1;
  const int64_t run = job->lead_shape[last];
  const int64_t ms = job->mask_strides[last], xs = job->x_strides[last];
  int64_t index[CT_MAX_NDIM];
  int64_t rest = begin;
  const char* m = job->mask_base;
  const char* x = job->x_base;
  for (int32_t k = last; k >= 0; --k) {
    index[k] = rest % job->lead_shape[k];
    rest /= job->lead_shape[k];
    m += index[k] * job->mask_strides[k];
    x += index[k] * job->x_strides[k];
  }
  int64_t found = 0, position = begin;
  while (position < end) {
    const int64_t j = index[last];
    const int64_t n = run - j < end - position ? run - j : end - position;
    if (!fill) {
      found += ct_bm_count_row(m, ms, n);
    } else if (job->tail_ndim == 0) {
      found += job->rows->gather(m, ms, x, xs, n, job->out + (at + found) * job->row_bytes,
                                 room - found);
    } else {
      for (int64_t i = 0; i < n && found < room; ++i) {
        if (*(const uint8_t*)(m + i * ms)) {
          ct_bm_copy_block(job, x + i * xs, job->out + (at + found) * job->row_bytes);
          ++found;
        }
      }
    }
    position += n;
    if (position >= end || (fill && found == room)) break;
    m -= j * ms;
    x -= j * xs;
    index[last] = 0;
    for (int32_t k = last - 1; k >= 0; --k) {
      m += job->mask_strides[k];
      x += job->x_strides[k];
      if (++index[k] < job->lead_shape[k]) break;
      m -= job->mask_strides[k] * job->lead_shape[k];
      x -= job->x_strides[k] * job->lead_shape[k];
      index[k] = 0;
    }
  }
  return found;
}

static void ct_bm_count_chunks(int64_t begin, int64_t end, void* context) {
  ct_bm_job* job = context;
  for (int64_t c = begin; c < end; ++c) {
    const int64_t first = c * job->chunk;
    const int64_t last = first + job->chunk < job->total ? first + job->chunk : job->total;
    job->counts[c] = ct_bm_walk(job, first, last, 0, 0, 0);
  }
}

static void ct_bm_fill_chunks(int64_t begin, int64_t end, void* context) {
  ct_bm_job* job = context;
  for (int64_t c = begin; c < end; ++c) {
    const int64_t first = c * job->chunk;
    const int64_t last = first + job->chunk < job->total ? first + job->chunk : job->total;
    const int64_t room = job->counts[c + 1] - job->counts[c];
    if (room > 0) ct_bm_walk(job, first, last, 1, job->counts[c], room);
  }
}

/* Drops unit dims and merges neighbours contiguous in every stride array given (order kept).
 * Returns the new ndim; strides_b may be NULL. */
static int32_t ct_bm_simplify(int32_t ndim, int64_t* shape, int64_t* strides_a,
                              int64_t* strides_b) {
  int32_t n = 0;
  for (int32_t k = 0; k < ndim; ++k) {
    if (shape[k] == 1) continue;
    if (n > 0 && strides_a[n - 1] == strides_a[k] * shape[k] &&
        (!strides_b || strides_b[n - 1] == strides_b[k] * shape[k])) {
      shape[n - 1] *= shape[k];
      strides_a[n - 1] = strides_a[k];
      if (strides_b) strides_b[n - 1] = strides_b[k];
      continue;
    }
    shape[n] = shape[k];
    strides_a[n] = strides_a[k];
    if (strides_b) strides_b[n] = strides_b[k];
    ++n;
  }
  return n;
}

static int ct_cpu_boolean_mask_run(const ct_kernel_call* call) {
  const ct_tensor* x = call->inputs[0];
  const ct_tensor* mask = call->inputs[1];
  const int32_t lead = mask->ndim, tail = x->ndim - mask->ndim;
  if (1 + tail > CT_MAX_NDIM) {
    return ct_set_error(CT_ERROR_INVALID_SHAPE,
                        "boolean_mask: the result would have %d dimensions (at most %d)", 1 + tail,
                        CT_MAX_NDIM);
  }
  ct_bm_job job;
  job.rows = call->kernel_data;
  job.itemsize = ct_dtype_size(x->dtype);
  job.mask_base = ct_tensor_base(mask);
  job.x_base = ct_tensor_base(x);
  job.out = NULL;
  job.lead_ndim = job.tail_ndim = 0;

  job.total = 1;
  for (int32_t k = 0; k < lead; ++k) {
    job.total *= mask->shape[k];
    job.lead_shape[k] = mask->shape[k];
    job.mask_strides[k] = ct_tensor_stride(mask, k);
    job.x_strides[k] = ct_tensor_stride(x, k) * job.itemsize;
  }
  int64_t row_elements = 1;
  for (int32_t k = 0; k < tail; ++k) {
    row_elements *= x->shape[lead + k];
    job.tail_shape[k] = x->shape[lead + k];
    job.tail_strides[k] = ct_tensor_stride(x, lead + k) * job.itemsize;
  }
  job.row_bytes = row_elements * job.itemsize;
  if (job.total > 0) {
    job.lead_ndim = ct_bm_simplify(lead, job.lead_shape, job.mask_strides, job.x_strides);
    if (job.lead_ndim == 0) { /* a 0-d mask, or only unit dims: one mask element */
      job.lead_ndim = 1;
      job.lead_shape[0] = 1;
      job.mask_strides[0] = job.x_strides[0] = 0;
    }
  }
  if (row_elements > 0)
    job.tail_ndim = ct_bm_simplify(tail, job.tail_shape, job.tail_strides, NULL);

  /* Chunks: one below the grain, else a few per thread, by the bytes to move. */
  int64_t chunks = 1;
  const int threads = ct_cpu_num_threads();
  const int64_t work = job.total * (row_elements > 1 ? row_elements : 1);
  if (threads > 1 && work >= 2 * CT_CPU_PARALLEL_GRAIN && job.total > 1) {
    chunks = work / CT_CPU_PARALLEL_GRAIN;
    if (chunks > 4 * (int64_t)threads) chunks = 4 * (int64_t)threads;
    if (chunks > CT_BM_MAX_CHUNKS) chunks = CT_BM_MAX_CHUNKS;
    if (chunks > job.total) chunks = job.total;
  }
  job.chunk = job.total > 0 ? ct_div_up(job.total, chunks) : 0;
  if (job.chunk > 0) chunks = ct_div_up(job.total, job.chunk);
  int64_t count = 0;
  if (job.total > 0) {
    ct_cpu_parallel_for(chunks, job.chunk, ct_bm_count_chunks, &job);
    for (int64_t c = 0; c < chunks; ++c) { /* exclusive scan: first output row per chunk */
      const int64_t n = job.counts[c];
      job.counts[c] = count;
      count += n;
    }
    job.counts[chunks] = count;
  }

  ct_tensor_info info;
  info.dtype = x->dtype;
  info.ndim = 1 + tail;
  info.shape[0] = count;
  for (int32_t k = 0; k < tail; ++k) info.shape[1 + k] = x->shape[lead + k];
  void* data = NULL;
  const int status = ct_cpu_allocate_output(call, 0, &info, &data);
  if (status != CT_OK) return status;
  job.out = data;
  if (count > 0 && row_elements > 0) {
    ct_cpu_parallel_for(chunks, job.chunk * (row_elements > 1 ? row_elements : 1),
                        ct_bm_fill_chunks, &job);
  }
  return CT_OK;
}

#define CT_BM_REG_X(A, SFX, T, C, U, ID)           \
  {"boolean_mask",                                 \
   3,                                              \
   {ID, CT_DT_BOOL, ID},                           \
   ct_cpu_boolean_mask_run,                        \
   NULL,                                           \
   sizeof(T) == 1   ? &ct_cpu_boolean_mask_8_rows  \
   : sizeof(T) == 2 ? &ct_cpu_boolean_mask_16_rows \
   : sizeof(T) == 4 ? &ct_cpu_boolean_mask_32_rows \
                    : &ct_cpu_boolean_mask_64_rows},

static const ct_cpu_kernel ct_cpu_boolean_mask_kernels[] = {CT_CPU_ALL_TYPES(CT_BM_REG_X, _)};

int ct_cpu_register_boolean_mask(void) {
  return ct_cpu_register_all(ct_cpu_boolean_mask_kernels,
                             CT_CPU_KERNEL_COUNT(ct_cpu_boolean_mask_kernels));
}
