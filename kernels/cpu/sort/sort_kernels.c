/* sort_kernels.c - sort, argsort, topk along one axis, searchsorted, and unique_counts,
 * unique_inverse, unique_all (one stable sort of all of x: groups of equal keys).
 *
 * Every lane (the elements along the axis at one position of the other dimensions) maps its
 * values to the order-preserving unsigned keys of sort_keys.h (complemented for a descending
 * order, which puts nan first) and sorts (key, index) pairs with a stable LSD radix sort in the
 * workspace: one counting pass per key byte in which the keys differ, insertion sort for short
 * lanes. Where the CPU has AVX2, lanes of 32-bit keys up to CT_SORT_PAIRED_MAX long instead sort
 * each key above its index as one 64-bit key in the vector sort (sort_vector.c), which keeps ties
 * in order too. The sorted indices then gather the values (sort, topk values: the original bits,
 * so -0.0 stays -0.0) or are written out (argsort, topk indices). Lanes run in parallel, each
 * thread on its own slot of the workspace.
 *
 * sort (values only) of 4- and 8-byte dtypes moves the keys alone and maps them back to values,
 * rewriting the keys that stand for several bit patterns (-0.0 and 0.0, NaNs) from x in their
 * stable order. The keys go through the vector sort where the CPU has AVX2 (32-bit keys of lanes
 * shorter than CT_BUCKET_MIN_LANE, 64-bit keys of lanes up to CT_SORT_VECTOR64_MAX), through
 * 11-bit LSD passes on other lanes of at least CT_RADIX_MIN_LANE elements, and from
 * CT_BUCKET_MIN_LANE on (all threads on a single long lane) through one MSD split into buckets
 * that each sort in cache. topk of long lanes with a small k makes one pass over x against a
 * rising threshold instead of sorting (CT_TOPK_MIN_LANE).
 * searchsorted binary-searches the same keys. */
#include <string.h>

#include "engine/cpu_dtypes.h"
#include "engine/cpu_isa.h"
#include "cpu_register.h"
#include "engine/dynamic_output.h"
#include "engine/cpu_threads.h"
#include "sort/sort_keys.h"
#include "sort/sort_vector.h"
#include "engine/strided_iter.h"

#ifdef _OPENMP
#include <omp.h>
/* t, nt = this thread's number and the team's size. */
#define CT_SORT_THREAD_ID(t, nt)  \
  do {                            \
    (t) = omp_get_thread_num();   \
    (nt) = omp_get_num_threads(); \
  } while (0)
#else
#define CT_SORT_THREAD_ID(t, nt) \
  do {                           \
  } while (0)
#endif

/* Lanes shorter than this are insertion-sorted. */
#define CT_SORT_INSERTION 24
/* Longest lane whose (32-bit key, index) pairs sort as single 64-bit keys in the vector sort,
 * where the CPU has it; longer lanes go through the radix passes below, which win there. */
#define CT_SORT_PAIRED_MAX 256
/* Longest lane whose 64-bit keys the values-only sort gives the vector sort (longer lanes go
 * through the radix passes, which win there). 32-bit keys go there up to CT_BUCKET_MIN_LANE. */
#define CT_SORT_VECTOR64_MAX 8192

/* Whether the values-only sort of a lane of n keys of keysize bytes runs the vector sort: the one
 * place that decides it, for the driver (which lanes take the values path) and the lane itself. */
static inline bool ct_sort_values_by_vector(int64_t keysize, int64_t n) {
  return ct_sort_vector_available() &&
         (keysize == 4 || (keysize == 8 && n <= CT_SORT_VECTOR64_MAX));
}
/* sort (values only) of 4- and 8-byte dtypes on lanes this long moves keys alone (32-bit keys at
 * any length, where the vector sort runs); lanes shorter than CT_BUCKET_MIN_LANE go through radix
 * passes of CT_RADIX_BITS-bit digits (3 passes for 32-bit keys, 6 for 64-bit), all histograms
 * counted in the pass that makes the keys, or through the vector sort. */
#define CT_RADIX_MIN_LANE 2048
#define CT_RADIX_BITS 11
#define CT_RADIX_BINS (1 << CT_RADIX_BITS)
#define CT_RADIX_MAX_PASSES 6
#define CT_RADIX_HIST_BYTES (CT_RADIX_MAX_PASSES * CT_RADIX_BINS * 8)
/* Longer lanes: all threads (at most CT_SORT_MAX_THREADS) on one lane. A first pass counts the
 * keys' top CT_BUCKET_PREFIX bits (or those of the bit range where the keys differ), a second
 * scatters the keys into buckets of consecutive digits of about CT_BUCKET_BYTES each (at most
 * CT_BUCKET_MAX buckets, larger ones for very long lanes), and each bucket is then radix-sorted
 * in cache (L2) by one thread, the threads taking buckets as they finish: the passes out of
 * cache drop from three to two reads and one scatter. */
#define CT_BUCKET_MIN_LANE 262144
#define CT_BUCKET_PREFIX 16
#define CT_BUCKET_BINS (1 << CT_BUCKET_PREFIX)
#define CT_BUCKET_BYTES (512 * 1024)
#define CT_BUCKET_MAX 4096
/* Widest digit of a bucket's radix passes. */
#define CT_BUCKET_DIGIT 11
/* Keys made at a time (on the stack) in the passes over x. */
#define CT_BUCKET_BLOCK 512
#define CT_SORT_MAX_THREADS 16

/* Exchanges a and b (of type T): a radix pass's source and destination buffers. */
#define CT_SORT_SWAP(T, a, b) \
  do {                        \
    T ct_swap_ = (a);         \
    (a) = (b);                \
    (b) = ct_swap_;           \
  } while (0)

/* Turns digit counts into each digit's first position (an exclusive prefix sum). */
static inline void ct_radix_starts(int64_t* count, int64_t bins) {
  int64_t sum = 0;
  for (int64_t b = 0; b < bins; ++b) {
    const int64_t c = count[b];
    count[b] = sum;
    sum += c;
  }
}

/* ----- stable sort of (key, index) pairs, per key width ----- */

/* Bit length of a nonzero key. */
#define CT_KEY_BITS(k) (64 - __builtin_clzll((unsigned long long)(k)))

/* The radix sorts per key width: ct_sort_pairs_<K> (stable sort of (key, index) pairs) for
 * every key type; ct_radix_pass_<K>, ct_radix_passes_<K>, ct_sort_keys_<K> (keys alone),
 * ct_sort_lower_bound_<K> and ct_sort_bucket_<K> for 32- and 64-bit keys; ct_topk_compact_<K>
 * (topk's radix select) for every key type. */
#define CT_SR_K uint8_t
#define CT_SR_PAIRS_ONLY
#include "sort/sort_radix_impl.h"
#define CT_SR_K uint16_t
#define CT_SR_PAIRS_ONLY
#include "sort/sort_radix_impl.h"
#define CT_SR_K uint32_t
#include "sort/sort_radix_impl.h"
#define CT_SR_K uint64_t
#include "sort/sort_radix_impl.h"

/* ----- one lane per dtype: keys, sort, sorted indices ----- */

typedef int64_t* (*ct_sort_lane_fn)(const char* x, int64_t step, int64_t n, int descending,
                                    void* slot);

/* Bytes one thread of the bucket sort uses: its counts of the split digit (CT_BUCKET_BINS), its
 * write positions per bucket (CT_BUCKET_MAX), the digit counts of a bucket's radix passes, the
 * second buffer of buckets up to CT_BUCKET_BYTES, and its tallies (64 bytes). */
#define CT_BUCKET_THREAD_BYTES \
  (CT_BUCKET_BINS * 8 + CT_BUCKET_MAX * 8 + CT_RADIX_HIST_BYTES + CT_BUCKET_BYTES + 64)
/* Shared: the bucket of each digit (uint16) and each bucket's start (rounded to 64 bytes). */
#define CT_BUCKET_SHARED_BYTES (CT_BUCKET_BINS * 2 + (CT_BUCKET_MAX + 8) * 8)

/* A slot holds keys, keys2 (n keys each, rounded to 64 bytes), idx, idx2 (n int64 each), and
 * the digit histograms of the keys-only sort (CT_RADIX_HIST_BYTES); where the lane is sorted by
 * buckets (n >= CT_BUCKET_MIN_LANE, 4- and 8-byte keys) at least keys, keys2 and the bucket
 * sort's bytes for `threads` threads. */
static int64_t ct_sort_slot_bytes(int64_t n, int64_t keysize, int threads) {
  /* Saturating (CT_SIZE_TOO_LARGE): a lane too long to sort yields a size no workspace has. */
  const int64_t keys = ct_size_round_up(ct_size_mul(n, keysize), 64);
  const int64_t idx = ct_size_round_up(ct_size_mul(n, 8), 64);
  int64_t bytes =
      ct_size_add(ct_size_add(ct_size_mul(2, keys), ct_size_mul(2, idx)), CT_RADIX_HIST_BYTES);
  if (n >= CT_BUCKET_MIN_LANE && keysize >= 4) {
    const int64_t bucket = ct_size_add(ct_size_add(ct_size_mul(2, keys), CT_BUCKET_SHARED_BYTES),
                                       (int64_t)threads * CT_BUCKET_THREAD_BYTES);
    if (bucket > bytes) bytes = bucket;
  }
  return bytes;
}

/* The workspace of `slots` slots of `slot_bytes`, or CT_ERROR_SIZE_OVERFLOW. */
static int ct_sort_workspace_bytes(const ct_kernel_call* call, int64_t slots, int64_t slot_bytes,
                                   uint64_t* bytes) {
  const int64_t total = ct_size_mul(slots, slot_bytes);
  if (total == CT_SIZE_TOO_LARGE) {
    return ct_set_error(CT_ERROR_SIZE_OVERFLOW,
                        "%s: the scratch space to sort %lld elements does not fit in int64 bytes",
                        call->schema->name, (long long)ct_tensor_numel(call->inputs[0]));
  }
  *bytes = (uint64_t)total;
  return CT_OK;
}

/* sort of one lane of a 4- or 8-byte dtype into out (step out_step): the keys alone are sorted,
 * then mapped back to values. Keys that stand for several bit patterns (a float's -0.0 and 0.0,
 * its NaNs) are written back from x in their order there, which a stable sort keeps; for
 * integers every key is one value. */
typedef void (*ct_sort_values_fn)(const char* x, int64_t step, int64_t n, int descending,
                                  void* slot, char* out, int64_t out_step, int threads);

/* A thread's bytes in the bucket sort, at these offsets: digit counts, write positions, radix
 * counts, second buffer, tallies (key bits that differ from the first key, zeros, NaNs, keys
 * below zero). */
#define CT_BUCKET_POS_AT (CT_BUCKET_BINS * 8)
#define CT_BUCKET_COUNTS_AT (CT_BUCKET_POS_AT + CT_BUCKET_MAX * 8)
#define CT_BUCKET_TMP_AT (CT_BUCKET_COUNTS_AT + CT_RADIX_HIST_BYTES)
#define CT_BUCKET_TALLY_AT (CT_BUCKET_TMP_AT + CT_BUCKET_BYTES)

/* Thread u's bytes in the bucket sort. */
static inline char* ct_bucket_thread(char* per_thread, int u) {
  return per_thread + (int64_t)u * CT_BUCKET_THREAD_BYTES;
}

/* Thread u's tallies. */
static inline const int64_t* ct_bucket_tally(char* per_thread, int u) {
  return (const int64_t*)(ct_bucket_thread(per_thread, u) + CT_BUCKET_TALLY_AT);
}

/* Groups the CT_BUCKET_BINS digits, counted per thread, into buckets of consecutive digits: a
 * digit joins the current bucket while that stays within *cap keys (one digit alone may exceed
 * it), *cap doubling until at most CT_BUCKET_MAX buckets result. Fills bucket_of, start
 * (buckets + 1 entries) and each thread's write positions (its keys of a bucket after those of
 * the threads before it); returns the count of buckets. */
static int64_t ct_bucket_layout(char* per_thread, int nt, int64_t n, uint16_t* bucket_of,
                                int64_t* start, int64_t* cap) {
  int64_t buckets;
  for (;;) {
    int64_t fill = 0, at = 0;
    buckets = 0;
    for (int64_t d = 0; d < CT_BUCKET_BINS && buckets <= CT_BUCKET_MAX; ++d) {
      int64_t c = 0;
      for (int u = 0; u < nt; ++u) c += ((const int64_t*)ct_bucket_thread(per_thread, u))[d];
      if (c > 0 && (buckets == 0 || fill + c > *cap)) {
        if (buckets < CT_BUCKET_MAX) start[buckets] = at;
        ++buckets;
        fill = 0;
      }
      fill += c;
      at += c;
      bucket_of[d] = (uint16_t)(buckets > 0 ? buckets - 1 : 0);
    }
    if (buckets <= CT_BUCKET_MAX) break;
    *cap *= 2;
  }
  start[buckets] = n;
  for (int u = 0; u < nt; ++u) {
    memset(ct_bucket_thread(per_thread, u) + CT_BUCKET_POS_AT, 0, (size_t)buckets * 8);
  }
  for (int64_t d = 0; d < CT_BUCKET_BINS; ++d) {
    for (int u = 0; u < nt; ++u) {
      char* mine = ct_bucket_thread(per_thread, u);
      ((int64_t*)(mine + CT_BUCKET_POS_AT))[bucket_of[d]] += ((const int64_t*)mine)[d];
    }
  }
  for (int64_t b = 0; b < buckets; ++b) {
    int64_t at = start[b];
    for (int u = 0; u < nt; ++u) {
      int64_t* pos = (int64_t*)(ct_bucket_thread(per_thread, u) + CT_BUCKET_POS_AT);
      const int64_t c = pos[b];
      pos[b] = at;
      at += c;
    }
  }
  return buckets;
}

/* ----- topk of long lanes: one pass against a rising threshold ----- */

/* topk on lanes this long with k <= n / CT_TOPK_FRACTION: each thread streams its part of the
 * lane, testing CT_TOPK_BLOCK keys at a time (vectorised, per instruction set) against the k-th
 * largest key it has kept so far; the few keys above it join its candidates, which a radix
 * select cuts back to k whenever they reach ct_topk_cap(k). The threads' k candidates each are
 * then cut to k and sorted. Keys are complemented for the k smallest (nan smallest then). */
#define CT_TOPK_MIN_LANE 16384
#define CT_TOPK_FRACTION 64
#define CT_TOPK_BLOCK 64

typedef void (*ct_topk_fn)(const char* x, int64_t step, int64_t n, int64_t k, int largest,
                           void* slot, char* values, int64_t v_step, char* indices, int64_t i_step,
                           int threads);

/* Candidates a thread holds at most, and the bytes of its candidates (keys, then indices). */
static int64_t ct_topk_cap(int64_t k) {
  return 2 * k + 64;
}
static int64_t ct_topk_thread_bytes(int64_t k, int64_t keysize) {
  const int64_t cap = ct_topk_cap(k);
  return ct_size_add(ct_size_round_up(ct_size_mul(cap, keysize), 64), ct_size_mul(cap, 8));
}

/* Slot bytes the one-pass topk needs: every thread's candidates, then all threads' k candidates
 * together (keys, indices) and a second buffer of k of each for the final sort. */
static int64_t ct_topk_bytes(int64_t k, int64_t keysize, int threads) {
  /* Saturating: too large a k yields a size above any slot, so the one-pass topk is not used. */
  const int64_t tk = ct_size_mul(threads, k);
  const int64_t merged =
      ct_size_add(ct_size_round_up(ct_size_mul(tk, keysize), 64), ct_size_mul(tk, 8));
  const int64_t second =
      ct_size_add(ct_size_round_up(ct_size_mul(k, keysize), 64), ct_size_mul(k, 8));
  return ct_size_add(ct_size_add(ct_size_mul(threads, ct_topk_thread_bytes(k, keysize)), merged),
                     second);
}

/* ----- topk of short lanes with a small k: the k best kept in order ----- */

/* topk with k up to CT_TOPK_SMALL_K and at most n / CT_TOPK_SMALL_FRACTION, on lanes that each
 * run on one thread, keeps the k best keys in order (an insertion for each key above the k-th
 * best, found CT_TOPK_BLOCK keys at a time by ct_topk_find) instead of sorting the lane: for
 * random data only about k · ln(n / k) keys are inserted. With fewer than 32 keys a kept one,
 * sorting the lane is as fast. */
#define CT_TOPK_SMALL_K 64
#define CT_TOPK_SMALL_FRACTION 32

/* The small topk's slot: the k best keys (rounded to 64 bytes), then their indices. */
static inline int64_t ct_topk_small_keys_bytes(int64_t k, int64_t keysize) {
  return ct_size_round_up(ct_size_mul(k, keysize), 64);
}

typedef void (*ct_topk_small_fn)(const char* x, int64_t step, int64_t n, int64_t k, int largest,
                                 void* slot, char* values, int64_t v_step, char* indices,
                                 int64_t i_step);

/* ----- the driver: lanes along an axis ----- */

typedef struct ct_sort_job {
  ct_sort_lane_fn lane;
  ct_sort_values_fn values_lane; /* sort of whole long lanes (NULL: through `lane`) */
  ct_topk_fn topk_lane;          /* topk of long lanes, small k (NULL: through `lane`) */
  ct_topk_small_fn topk_small;   /* topk of short lanes, small k (NULL: through `lane`) */
  int32_t outer_ndim;
  int64_t outer_shape[CT_MAX_NDIM];
  int64_t x_strides[CT_MAX_NDIM]; /* bytes, over the outer dims */
  int64_t v_strides[CT_MAX_NDIM]; /* values output (or NULL data) */
  int64_t i_strides[CT_MAX_NDIM]; /* indices output */
  const char* x;
  char* values;
  char* indices;
  int64_t x_step, v_step, i_step, n, k, itemsize, slot_bytes, lanes;
  int descending;
  int lane_threads; /* threads one values_lane call may use */
  char* workspace;
} ct_sort_job;

static void ct_sort_do_lanes(const ct_sort_job* job, int64_t begin, int64_t end, void* slot) {
  for (int64_t lane = begin; lane < end; ++lane) {
    int64_t rest = lane, xo = 0, vo = 0, io = 0;
    for (int32_t d = job->outer_ndim - 1; d >= 0; --d) {
      const int64_t i = rest % job->outer_shape[d];
      rest /= job->outer_shape[d];
      xo += i * job->x_strides[d];
      vo += i * job->v_strides[d];
      io += i * job->i_strides[d];
    }
    const char* x = job->x + xo;
    if (job->topk_small) {
      job->topk_small(x, job->x_step, job->n, job->k, job->descending, slot, job->values + vo,
                      job->v_step, job->indices + io, job->i_step);
      continue;
    }
    if (job->topk_lane) {
      job->topk_lane(x, job->x_step, job->n, job->k, job->descending, slot, job->values + vo,
                     job->v_step, job->indices + io, job->i_step, job->lane_threads);
      continue;
    }
    if (job->values_lane) {
      job->values_lane(x, job->x_step, job->n, job->descending, slot, job->values + vo, job->v_step,
                       job->lane_threads);
      continue;
    }
    const int64_t* order = job->lane(x, job->x_step, job->n, job->descending, slot);
    if (job->values) {
      char* v = job->values + vo;
      for (int64_t i = 0; i < job->k; ++i) {
        memcpy(v + i * job->v_step, x + order[i] * job->x_step, (size_t)job->itemsize);
      }
    }
    if (job->indices) {
      char* p = job->indices + io;
      for (int64_t i = 0; i < job->k; ++i) memcpy(p + i * job->i_step, &order[i], 8);
    }
  }
}

/* Fills the geometry of x along axis, and an output's strides over the outer dims. */
static void ct_sort_outer(const ct_tensor* t, int32_t axis, int64_t itemsize, int64_t* strides,
                          int64_t* step) {
  int32_t o = 0;
  for (int32_t d = 0; d < t->ndim; ++d) {
    if (d == axis) {
      *step = ct_tensor_stride(t, d) * itemsize;
    } else {
      strides[o++] = ct_tensor_stride(t, d) * itemsize;
    }
  }
}

static int ct_sort_slots(int64_t lanes, int64_t n) {
  int64_t slots = lanes * n >= CT_CPU_PARALLEL_GRAIN ? ct_cpu_num_threads() : 1;
  if (slots > lanes) slots = lanes;
  return slots < 1 ? 1 : (int)slots;
}

/* Threads that sort one lane: all of them (at most CT_SORT_MAX_THREADS) where one slot serves
 * every lane, else 1. */
static int ct_sort_lane_threads(int64_t lanes, int64_t n) {
  if (ct_sort_slots(lanes, n) > 1) return 1;
  const int threads = ct_cpu_num_threads();
  return threads < 1 ? 1 : threads > CT_SORT_MAX_THREADS ? CT_SORT_MAX_THREADS : threads;
}

static int ct_sort_run(const ct_kernel_call* call, int32_t axis_attr, int descending, int64_t k,
                       const ct_tensor* values, const ct_tensor* indices, ct_sort_lane_fn lane,
                       ct_sort_values_fn values_lane, ct_topk_fn topk_lane,
                       ct_topk_small_fn topk_small) {
  const ct_tensor* x = call->inputs[0];
  ct_sort_job job;
  memset(&job, 0, sizeof job);
  int32_t axis = axis_attr < 0 ? axis_attr + x->ndim : axis_attr;
  job.lane = lane;
  job.itemsize = ct_dtype_size(x->dtype);
  job.n = x->shape[axis];
  job.k = k;
  job.descending = descending;
  job.lane_threads = 1;
  job.lanes = 1;
  for (int32_t d = 0, o = 0; d < x->ndim; ++d) {
    if (d == axis) continue;
    job.outer_shape[o++] = x->shape[d];
    job.lanes *= x->shape[d];
  }
  job.outer_ndim = x->ndim - 1;
  job.x = ct_tensor_base(x);
  ct_sort_outer(x, axis, job.itemsize, job.x_strides, &job.x_step);
  if (values) {
    job.values = ct_tensor_base(values);
    ct_sort_outer(values, axis, job.itemsize, job.v_strides, &job.v_step);
  }
  if (indices) {
    job.indices = ct_tensor_base(indices);
    ct_sort_outer(indices, axis, 8, job.i_strides, &job.i_step);
  }
  if (job.lanes == 0 || job.n == 0 || k == 0) return CT_OK;
  if (values && !indices && k == job.n &&
      (job.n >= CT_RADIX_MIN_LANE || ct_sort_values_by_vector(job.itemsize, job.n))) {
    job.values_lane = values_lane;
  }
  int64_t slots = ct_sort_slots(job.lanes, job.n);
  job.lane_threads = ct_sort_lane_threads(job.lanes, job.n);
  /* fewer threads on the lane where the workspace was sized for fewer (the count changed) */
  while (job.lane_threads > 1 &&
         (uint64_t)ct_sort_slot_bytes(job.n, job.itemsize, job.lane_threads) >
             call->workspace_size) {
    --job.lane_threads;
  }
  job.slot_bytes = ct_sort_slot_bytes(job.n, job.itemsize, job.lane_threads);
  if (topk_lane && values && indices && k < job.n && job.n >= CT_TOPK_MIN_LANE &&
      k <= job.n / CT_TOPK_FRACTION &&
      ct_topk_bytes(k, job.itemsize, job.lane_threads) <= job.slot_bytes) {
    job.topk_lane = topk_lane;
  }
  if (topk_small && !job.topk_lane && values && indices && k < job.n && k <= CT_TOPK_SMALL_K &&
      k <= job.n / CT_TOPK_SMALL_FRACTION &&
      ct_size_add(ct_topk_small_keys_bytes(k, job.itemsize), ct_size_mul(k, 8)) <= job.slot_bytes) {
    job.topk_small = topk_small;
  }
  const int64_t room = (int64_t)(call->workspace_size / (uint64_t)job.slot_bytes);
  if (slots > room) slots = room;
  if (slots < 1) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT, "%s: the workspace is too small",
                        call->schema->name);
  }
  char* ws = call->workspace;
  if (slots == 1) {
    ct_sort_do_lanes(&job, 0, job.lanes, ws);
    return CT_OK;
  }
#pragma omp parallel for num_threads((int)slots) schedule(static)
  for (int64_t s = 0; s < slots; ++s) {
    ct_sort_do_lanes(&job, job.lanes * s / slots, job.lanes * (s + 1) / slots,
                     ws + s * job.slot_bytes);
  }
  return CT_OK;
}

static int ct_sort_workspace(const ct_kernel_call* call, uint64_t* bytes, uint64_t* alignment) {
  const ct_tensor* x = call->inputs[0];
  const bool topk = strcmp(call->schema->name, "topk") == 0;
  int64_t axis = call->attrs[topk ? 1 : 0].value.i;
  if (axis < 0) axis += x->ndim;
  const int64_t n = x->shape[axis];
  const int64_t numel = ct_tensor_numel(x);
  const int64_t lanes = n > 0 ? numel / n : 0;
  *alignment = 64;
  *bytes = 64;
  if (lanes > 0) {
    const int threads = ct_sort_lane_threads(lanes, n);
    return ct_sort_workspace_bytes(call, ct_sort_slots(lanes, n),
                                   ct_sort_slot_bytes(n, ct_dtype_size(x->dtype), threads), bytes);
  }
  return CT_OK;
}

/* ----- searchsorted ----- */

typedef struct ct_search_extra {
  const char* x1;
  int64_t step, n;
  int right;
} ct_search_extra;

/* ----- unique_counts, unique_inverse, unique_all ----- */

/* The outputs of each op: 'v' values, 'f' first indices, 'i' inverse, 'c' counts. */
static const char* ct_uqm_roles(const ct_kernel_call* call) {
  const char* name = call->schema->name;
  if (strcmp(name, "unique_counts") == 0) return "vc";
  if (strcmp(name, "unique_inverse") == 0) return "vi";
  return "vfic";
}

/* Allocates the outputs for `groups` distinct values; data[role] gets each one's memory. */
static int ct_uqm_outputs(const ct_kernel_call* call, int64_t groups, void** values,
                          int64_t** first, int64_t** inverse, int64_t** counts) {
  const ct_tensor* x = call->inputs[0];
  const char* roles = ct_uqm_roles(call);
  *values = NULL;
  *first = *inverse = *counts = NULL;
  for (int32_t k = 0; roles[k]; ++k) {
    ct_tensor_info info;
    info.dtype = roles[k] == 'v' ? x->dtype : CT_DTYPE_I64_V;
    info.ndim = 1;
    info.shape[0] = groups;
    if (roles[k] == 'i') {
      info.ndim = x->ndim;
      for (int32_t d = 0; d < x->ndim; ++d) info.shape[d] = x->shape[d];
    }
    void* data;
    const int status = ct_cpu_allocate_output(call, k, &info, &data);
    if (status != CT_OK) return status;
    if (roles[k] == 'v') *values = data;
    if (roles[k] == 'f') *first = data;
    if (roles[k] == 'i') *inverse = data;
    if (roles[k] == 'c') *counts = data;
  }
  return CT_OK;
}

/* ----- the kernels of each dtype (sort_dtype_impl.h), in CT_SORT_KEY_TYPES order ----- */

#define CT_SD_SFX b8
#define CT_SD_T uint8_t
#define CT_SD_K uint8_t
#include "sort/sort_dtype_impl.h"
#define CT_SD_SFX i8
#define CT_SD_T int8_t
#define CT_SD_K uint8_t
#include "sort/sort_dtype_impl.h"
#define CT_SD_SFX u8
#define CT_SD_T uint8_t
#define CT_SD_K uint8_t
#include "sort/sort_dtype_impl.h"
#define CT_SD_SFX i16
#define CT_SD_T int16_t
#define CT_SD_K uint16_t
#include "sort/sort_dtype_impl.h"
#define CT_SD_SFX u16
#define CT_SD_T uint16_t
#define CT_SD_K uint16_t
#include "sort/sort_dtype_impl.h"
#define CT_SD_SFX f16
#define CT_SD_T uint16_t
#define CT_SD_K uint16_t
#include "sort/sort_dtype_impl.h"
#define CT_SD_SFX bf16
#define CT_SD_T uint16_t
#define CT_SD_K uint16_t
#include "sort/sort_dtype_impl.h"
#define CT_SD_SFX i32
#define CT_SD_T int32_t
#define CT_SD_K uint32_t
#define CT_SD_WIDE
#include "sort/sort_dtype_impl.h"
#define CT_SD_SFX u32
#define CT_SD_T uint32_t
#define CT_SD_K uint32_t
#define CT_SD_WIDE
#include "sort/sort_dtype_impl.h"
#define CT_SD_SFX f32
#define CT_SD_T float
#define CT_SD_K uint32_t
#define CT_SD_WIDE
#include "sort/sort_dtype_impl.h"
#define CT_SD_SFX i64
#define CT_SD_T int64_t
#define CT_SD_K uint64_t
#define CT_SD_WIDE
#include "sort/sort_dtype_impl.h"
#define CT_SD_SFX u64
#define CT_SD_T uint64_t
#define CT_SD_K uint64_t
#define CT_SD_WIDE
#include "sort/sort_dtype_impl.h"
#define CT_SD_SFX f64
#define CT_SD_T double
#define CT_SD_K uint64_t
#define CT_SD_WIDE
#include "sort/sort_dtype_impl.h"

static int ct_uqm_workspace(const ct_kernel_call* call, uint64_t* bytes, uint64_t* alignment) {
  const ct_tensor* x = call->inputs[0];
  *alignment = 64;
  return ct_sort_workspace_bytes(
      call, 1, ct_size_add(64, ct_sort_slot_bytes(ct_tensor_numel(x), ct_dtype_size(x->dtype), 1)),
      bytes);
}

/* ----- argpartition: the stable ascending argsort, a valid partition for every kth ----- */

/* The argsort call of an argpartition call: its axis (attrs[0], at the same place as
 * argsort's), ascending. `attrs` holds the two attributes the argsort kernel reads. */
static ct_kernel_call ct_argpartition_as_argsort(const ct_kernel_call* call,
                                                 ct_attr_value attrs[2]) {
  ct_kernel_call argsort = *call;
  attrs[0] = call->attrs[0];
  memset(&attrs[1], 0, sizeof attrs[1]);
  attrs[1].type = CT_ATTR_BOOL;
  attrs[1].value.b = 0;
  argsort.attrs = attrs;
  return argsort;
}

#define CT_ARGPARTITION_DEF_X(A, SFX, T, C, K, ID)                          \
  static int ct_cpu_argpartition_##SFX(const ct_kernel_call* call) {        \
    ct_attr_value attrs[2];                                                 \
    const ct_kernel_call argsort = ct_argpartition_as_argsort(call, attrs); \
    return ct_cpu_argsort_##SFX(&argsort);                                  \
  }
CT_SORT_KEY_TYPES(CT_ARGPARTITION_DEF_X, _)
#undef CT_ARGPARTITION_DEF_X

/* ----- registration ----- */

#define CT_SORT_REG_X(A, SFX, T, C, K, ID)                                                           \
  {"sort", 2, {ID, ID}, ct_cpu_sort_##SFX, ct_sort_workspace, NULL},                                 \
      {"argsort", 2, {ID, CT_DT_I64}, ct_cpu_argsort_##SFX, ct_sort_workspace, NULL},                \
      {"topk", 3, {ID, ID, CT_DT_I64}, ct_cpu_topk_##SFX, ct_sort_workspace, NULL},                  \
      {"argpartition", 2, {ID, CT_DT_I64}, ct_cpu_argpartition_##SFX, ct_sort_workspace, NULL},      \
      {"searchsorted", 3, {ID, ID, CT_DT_I64}, ct_cpu_searchsorted_##SFX, NULL, NULL},               \
      {"unique_counts", 3, {ID, ID, CT_DT_I64}, ct_cpu_unique_multi_##SFX, ct_uqm_workspace, NULL},  \
      {"unique_inverse", 3, {ID, ID, CT_DT_I64}, ct_cpu_unique_multi_##SFX, ct_uqm_workspace, NULL}, \
      {"unique_all",     5,   {ID, ID, CT_DT_I64, CT_DT_I64, CT_DT_I64}, ct_cpu_unique_multi_##SFX,  \
       ct_uqm_workspace, NULL},

static const ct_cpu_kernel ct_cpu_sort_kernels[] = {CT_SORT_KEY_TYPES(CT_SORT_REG_X, _)};

int ct_cpu_register_sort(void) {
  return ct_cpu_register_all(ct_cpu_sort_kernels, CT_CPU_KERNEL_COUNT(ct_cpu_sort_kernels));
}
