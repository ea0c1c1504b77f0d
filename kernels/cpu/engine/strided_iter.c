/* strided_iter.c - broadcasting, dimension ordering and merging, threading of inner loops. */
#include "engine/strided_iter.h"

#include <string.h>

#include "engine/copy_loops.h"
#include "engine/cpu_isa.h"
#include "engine/cpu_threads.h"
#include "engine/stream_store.h"

#ifdef _OPENMP
#include <omp.h>
#endif

_Thread_local int ct_cpu_stream_output = 0;

/* Inner runs at least this long whose output is contiguous, with one strided input (its elements
 * at most a cache line apart) and every other input broadcast, gather that input into a buffer
 * on the thread's stack, CT_ITER_STAGE_BYTES at a time, with the copy loop of its element size
 * (copy_loops.h), so that the loop runs its contiguous (vectorised) path. Where another input is
 * read contiguously or is strided too, the loop's own strided path keeps more memory streams in
 * flight, so those are left as they are. */
#define CT_ITER_STAGE_MIN_RUN 64
#define CT_ITER_STAGE_MAX_STEP 64
#define CT_ITER_STAGE_BYTES 4096

typedef struct ct_iter_layout {
  int32_t num_operands;
  int32_t ndim;
  int64_t shape[CT_MAX_NDIM];
  int64_t strides[CT_CPU_MAX_OPERANDS][CT_MAX_NDIM];
  char* bases[CT_CPU_MAX_OPERANDS];
  /* bytes per element of each operand, where the loop is element-wise and may be handed
   * gathered inputs (ct_cpu_elementwise_run); 0: run the loop on the operands as they are */
  int64_t itemsizes[CT_CPU_MAX_OPERANDS];
} ct_iter_layout;

/* The input that runs of `run` elements with these steps gather (see CT_ITER_STAGE_BYTES), or
 * -1 for none. */
static int32_t ct_iter_gathered_input(const ct_iter_layout* p, const int64_t* steps, int64_t run) {
  const int32_t out = p->num_operands - 1;
  if (run < CT_ITER_STAGE_MIN_RUN || p->itemsizes[out] <= 0 || steps[out] != p->itemsizes[out]) {
    return -1;
  }
  int32_t gathered = -1;
  for (int32_t i = 0; i < out; ++i) {
    if (steps[i] == 0) continue;
    const int64_t step = steps[i] < 0 ? -steps[i] : steps[i];
    if (gathered >= 0 || step == p->itemsizes[i] || step > CT_ITER_STAGE_MAX_STEP ||
        !ct_cpu_copy_entry_of_size(p->itemsizes[i])) {
      return -1;
    }
    gathered = i;
  }
  return gathered;
}

/* loop over n elements at data/steps, input g gathered into a contiguous buffer chunk by chunk
 * (by the engine's copy loop for its element size). */
static void ct_iter_staged_call(const ct_iter_layout* p, char* const* data, const int64_t* steps,
                                int64_t n, int32_t g, ct_cpu_strided_loop loop, const void* extra) {
  const ct_cpu_strided_loop copy = ct_cpu_copy_entry_of_size(p->itemsizes[g])->loop;
  const int64_t copy_steps[2] = {steps[g], p->itemsizes[g]};
  char* copy_data[2];
  _Alignas(64) char buffer[CT_ITER_STAGE_BYTES];
  char* chunk_data[CT_CPU_MAX_OPERANDS];
  int64_t chunk_steps[CT_CPU_MAX_OPERANDS];
  for (int32_t i = 0; i < p->num_operands; ++i) chunk_steps[i] = steps[i];
  chunk_steps[g] = p->itemsizes[g];
  const int64_t chunk = CT_ITER_STAGE_BYTES / p->itemsizes[g];
  for (int64_t done = 0; done < n; done += chunk) {
    const int64_t count = n - done < chunk ? n - done : chunk;
    for (int32_t i = 0; i < p->num_operands; ++i) chunk_data[i] = data[i] + done * steps[i];
    copy_data[0] = chunk_data[g];
    copy_data[1] = buffer;
    copy(copy_data, copy_steps, count, NULL);
    chunk_data[g] = buffer;
    loop(chunk_data, chunk_steps, count, extra);
  }
}

void ct_cpu_broadcast_strides(const ct_tensor* t, int32_t ndim, const int64_t* shape,
                              int64_t* byte_strides) {
  const int64_t itemsize = ct_dtype_size(t->dtype);
  const int32_t shift = ndim - t->ndim;
  for (int32_t k = 0; k < ndim; ++k) {
    if (k < shift || t->shape[k - shift] != shape[k] || shape[k] == 1) {
      byte_strides[k] = 0;
    } else {
      byte_strides[k] = ct_tensor_stride(t, k - shift) * itemsize;
    }
  }
}

/* Drops unit dims, orders dims by the last operand's |stride| (largest outermost) and merges
 * dims that are contiguous for all operands. Returns false when there are no elements. */
static bool ct_iter_simplify(ct_iter_layout* p) {
  int32_t n = 0;
  for (int32_t k = 0; k < p->ndim; ++k) {
    if (p->shape[k] == 0) return false;
    if (p->shape[k] == 1) continue;
    p->shape[n] = p->shape[k];
    for (int32_t i = 0; i < p->num_operands; ++i) p->strides[i][n] = p->strides[i][k];
    ++n;
  }
  p->ndim = n;
  /* Stable insertion sort on the output's |stride|, descending. */
  const int32_t out = p->num_operands - 1;
  for (int32_t k = 1; k < n; ++k) {
    for (int32_t j = k; j > 0; --j) {
      const int64_t a = p->strides[out][j - 1], b = p->strides[out][j];
      if ((a < 0 ? -a : a) >= (b < 0 ? -b : b)) break;
      int64_t t = p->shape[j];
      p->shape[j] = p->shape[j - 1];
      p->shape[j - 1] = t;
      for (int32_t i = 0; i < p->num_operands; ++i) {
        t = p->strides[i][j];
        p->strides[i][j] = p->strides[i][j - 1];
        p->strides[i][j - 1] = t;
      }
    }
  }
  /* Merge dim k-1 into k when every operand steps over k's whole extent to reach k-1. */
  int32_t m = 0;
  for (int32_t k = 1; k < n; ++k) {
    bool mergeable = true;
    for (int32_t i = 0; i < p->num_operands && mergeable; ++i) {
      int64_t span; /* may overflow for a huge stride: such dims never merge */
      mergeable =
          !__builtin_mul_overflow(p->strides[i][k], p->shape[k], &span) && p->strides[i][m] == span;
    }
    if (mergeable) {
      p->shape[m] *= p->shape[k];
      for (int32_t i = 0; i < p->num_operands; ++i) p->strides[i][m] = p->strides[i][k];
    } else {
      ++m;
      p->shape[m] = p->shape[k];
      for (int32_t i = 0; i < p->num_operands; ++i) p->strides[i][m] = p->strides[i][k];
    }
  }
  p->ndim = n > 0 ? m + 1 : 0;
  return true;
}

/* Runs flat element range [begin, end) of the plan. */
static void ct_iter_run_range(const ct_iter_layout* p, int64_t begin, int64_t end,
                              ct_cpu_strided_loop loop, const void* extra) {
  const int32_t nop = p->num_operands;
  if (p->ndim == 0) {
    char* data[CT_CPU_MAX_OPERANDS];
    int64_t steps[CT_CPU_MAX_OPERANDS] = {0};
    for (int32_t i = 0; i < nop; ++i) data[i] = p->bases[i];
    loop(data, steps, 1, extra);
    return;
  }
  const int32_t inner = p->ndim - 1;
  const int64_t run = p->shape[inner];
  int64_t index[CT_MAX_NDIM];
  int64_t row = begin / run, offset = begin % run;
  for (int32_t k = inner - 1; k >= 0; --k) {
    index[k] = row % p->shape[k];
    row /= p->shape[k];
  }
  char* data[CT_CPU_MAX_OPERANDS];
  int64_t steps[CT_CPU_MAX_OPERANDS];
  char* rows[CT_CPU_MAX_OPERANDS];
  for (int32_t i = 0; i < nop; ++i) {
    char* ptr = p->bases[i];
    for (int32_t k = 0; k < inner; ++k) ptr += index[k] * p->strides[i][k];
    rows[i] = ptr;
    steps[i] = p->strides[i][inner];
  }
  const int64_t out_step = steps[nop - 1] < 0 ? -steps[nop - 1] : steps[nop - 1];
  ct_cpu_stream_output = ct_stream_worth(ct_size_mul(end - begin, out_step)) &&
                                 ct_size_mul(run, out_step) >= CT_STREAM_MIN_RUN_BYTES
                             ? ct_stream_mode(ct_cpu_isa() >= CT_CPU_ISA_AVX2)
                             : CT_STREAM_OFF;
  const int32_t gathered = ct_iter_gathered_input(p, steps, run);
  int64_t position = begin;
  while (position < end) {
    const int64_t count = (run - offset < end - position) ? run - offset : end - position;
    for (int32_t i = 0; i < nop; ++i) data[i] = rows[i] + offset * steps[i];
    if (gathered >= 0) {
      ct_iter_staged_call(p, data, steps, count, gathered, loop, extra);
    } else {
      loop(data, steps, count, extra);
    }
    position += count;
    offset = 0;
    /* advance the outer odometer */
    for (int32_t k = inner - 1; k >= 0; --k) {
      if (++index[k] < p->shape[k]) {
        for (int32_t i = 0; i < nop; ++i) rows[i] += p->strides[i][k];
        break;
      }
      /* back to index 0 of dim k without stepping past its last element (stride x extent may
       * leave the address space where stride x (extent - 1) does not) */
      for (int32_t i = 0; i < nop; ++i) rows[i] -= p->strides[i][k] * (p->shape[k] - 1);
      index[k] = 0;
    }
  }
  if (ct_cpu_stream_output) {
    ct_stream_fence(); /* the loops' non-temporal stores, before whatever the caller does next */
    ct_cpu_stream_output = 0;
  }
}

/* ct_cpu_iterate_raw, with the operands' element sizes where the loop is element-wise (NULL: the
 * loop sees the operands as they are). */
static void ct_iterate(int32_t num_operands, char* const* bases, const int64_t* byte_strides,
                       int32_t ndim, const int64_t* shape, const int64_t* itemsizes,
                       ct_cpu_strided_loop loop, const void* extra) {
  ct_iter_layout plan;
  plan.num_operands = num_operands;
  for (int32_t i = 0; i < num_operands; ++i) plan.itemsizes[i] = itemsizes ? itemsizes[i] : 0;
  plan.ndim = ndim;
  int64_t total = 1;
  for (int32_t k = 0; k < ndim; ++k) {
    plan.shape[k] = shape[k];
    total *= shape[k];
  }
  for (int32_t i = 0; i < num_operands; ++i) {
    plan.bases[i] = bases[i];
    for (int32_t k = 0; k < ndim; ++k) plan.strides[i][k] = byte_strides[i * ndim + k];
  }
  if (!ct_iter_simplify(&plan)) return;
  const int threads = total >= CT_CPU_PARALLEL_GRAIN ? ct_cpu_num_threads() : 1;
  if (threads <= 1) {
    ct_iter_run_range(&plan, 0, total, loop, extra);
    return;
  }
#pragma omp parallel num_threads(threads)
  {
#ifdef _OPENMP
    const int64_t t = omp_get_thread_num(), count = omp_get_num_threads();
#else
    const int64_t t = 0, count = 1;
#endif
    const int64_t share = total / count, extra_items = total % count;
    const int64_t begin = t * share + (t < extra_items ? t : extra_items);
    const int64_t end = begin + share + (t < extra_items ? 1 : 0);
    if (begin < end) ct_iter_run_range(&plan, begin, end, loop, extra);
  }
}

void ct_cpu_iterate_raw(int32_t num_operands, char* const* bases, const int64_t* byte_strides,
                        int32_t ndim, const int64_t* shape, ct_cpu_strided_loop loop,
                        const void* extra) {
  ct_iterate(num_operands, bases, byte_strides, ndim, shape, NULL, loop, extra);
}

/* ct_cpu_iterate; `elementwise`: the loop computes each output element from the inputs' elements
 * at the same position only, so it may be handed gathered copies of strided inputs. */
static void ct_iterate_tensors(int32_t num_operands, const ct_tensor* const* operands,
                               bool elementwise, ct_cpu_strided_loop loop, const void* extra) {
  const ct_tensor* out = operands[num_operands - 1];
  char* bases[CT_CPU_MAX_OPERANDS];
  int64_t strides[CT_CPU_MAX_OPERANDS * CT_MAX_NDIM];
  int64_t itemsizes[CT_CPU_MAX_OPERANDS];
  for (int32_t i = 0; i < num_operands; ++i) {
    bases[i] = ct_tensor_base(operands[i]);
    itemsizes[i] = ct_dtype_size(operands[i]->dtype);
    ct_cpu_broadcast_strides(operands[i], out->ndim, out->shape, &strides[i * out->ndim]);
  }
  ct_iterate(num_operands, bases, strides, out->ndim, out->shape, elementwise ? itemsizes : NULL,
             loop, extra);
}

void ct_cpu_iterate(int32_t num_operands, const ct_tensor* const* operands,
                    ct_cpu_strided_loop loop, const void* extra) {
  ct_iterate_tensors(num_operands, operands, false, loop, extra);
}

int ct_cpu_elementwise_run(const ct_kernel_call* call) {
  const ct_tensor* operands[CT_CPU_MAX_OPERANDS];
  int32_t n = 0;
  for (int32_t i = 0; i < call->num_inputs && n < CT_CPU_MAX_OPERANDS; ++i) {
    if (call->inputs[i]) operands[n++] = call->inputs[i];
  }
  for (int32_t i = 0; i < call->num_outputs && n < CT_CPU_MAX_OPERANDS; ++i) {
    operands[n++] = call->outputs[i];
  }
  const ct_cpu_loop_entry* entry = call->kernel_data;
  /* Copy loops read strided inputs themselves (gathering first would copy twice); with several
   * outputs, the operands before the last are not all inputs. */
  ct_iterate_tensors(n, operands, entry->copy_itemsize == 0 && call->num_outputs == 1, entry->loop,
                     NULL);
  return CT_OK;
}

void ct_cpu_parallel_for(int64_t count, int64_t cost_per_item, ct_cpu_range_body body,
                         void* context) {
  if (count <= 0) return;
  const int64_t cost = cost_per_item > 0 ? cost_per_item : 1;
  int threads = (count > 1 && count >= CT_CPU_PARALLEL_GRAIN / cost) ? ct_cpu_num_threads() : 1;
  if (threads > count) threads = (int)count;
  if (threads <= 1) {
    body(0, count, context);
    return;
  }
#pragma omp parallel num_threads(threads)
  {
#ifdef _OPENMP
    const int64_t t = omp_get_thread_num(), n = omp_get_num_threads();
#else
    const int64_t t = 0, n = 1;
#endif
    const int64_t share = count / n, rest = count % n;
    const int64_t begin = t * share + (t < rest ? t : rest);
    const int64_t end = begin + share + (t < rest ? 1 : 0);
    if (begin < end) body(begin, end, context);
  }
}
