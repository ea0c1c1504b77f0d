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
  const int64_t keys = (n * keysize + 63) / 64 * 64;
  int64_t bytes = 2 * keys + 2 * ((n * 8 + 63) / 64 * 64) + CT_RADIX_HIST_BYTES;
  if (n >= CT_BUCKET_MIN_LANE && keysize >= 4) {
    const int64_t bucket =
        2 * keys + CT_BUCKET_SHARED_BYTES + (int64_t)threads * CT_BUCKET_THREAD_BYTES;
    if (bucket > bytes) bytes = bucket;
  }
  return bytes;
}

/* Keys (xor flip) of the count values at x (step bytes apart) into k (every dtype), and values of
 * keys into out (4- and 8-byte dtypes): loops the compiler vectorises where the values are
 * contiguous (a copy per instruction set). */
#define CT_SORT_KEYS_X(A, SFX, T, C, K, ID)                                                    \
  static CT_CPU_ISA_BODY void ct_keys_##SFX##_body(const char* x, int64_t step, int64_t count, \
                                                   K flip, K* k) {                             \
    if (step == (int64_t)sizeof(T)) {                                                          \
      for (int64_t i = 0; i < count; ++i) {                                                    \
        T v;                                                                                   \
        memcpy(&v, x + i * (int64_t)sizeof(T), sizeof v);                                      \
        k[i] = (K)(ct_uq_key_##SFX(v) ^ flip);                                                 \
      }                                                                                        \
      return;                                                                                  \
    }                                                                                          \
    for (int64_t i = 0; i < count; ++i) {                                                      \
      T v;                                                                                     \
      memcpy(&v, x + i * step, sizeof v);                                                      \
      k[i] = (K)(ct_uq_key_##SFX(v) ^ flip);                                                   \
    }                                                                                          \
  }                                                                                            \
  CT_CPU_ISA_LOOP(ct_keys_##SFX, (const char* x, int64_t step, int64_t count, K flip, K* k),   \
                  (x, step, count, flip, k))
CT_SORT_KEY_TYPES(CT_SORT_KEYS_X, _)

#define CT_SORT_VALUES_LOOP_X(A, SFX, T, C, K, ID)                                                 \
  static CT_CPU_ISA_BODY void ct_values_##SFX##_body(const K* k, int64_t count, K flip, char* out, \
                                                     int64_t step) {                               \
    if (step == (int64_t)sizeof(T)) {                                                              \
      for (int64_t i = 0; i < count; ++i) {                                                        \
        const T v = ct_uq_value_##SFX((K)(k[i] ^ flip));                                           \
        memcpy(out + i * (int64_t)sizeof(T), &v, sizeof v);                                        \
      }                                                                                            \
      return;                                                                                      \
    }                                                                                              \
    for (int64_t i = 0; i < count; ++i) {                                                          \
      const T v = ct_uq_value_##SFX((K)(k[i] ^ flip));                                             \
      memcpy(out + i * step, &v, sizeof v);                                                        \
    }                                                                                              \
  }                                                                                                \
  CT_CPU_ISA_LOOP(ct_values_##SFX, (const K* k, int64_t count, K flip, char* out, int64_t step),   \
                  (k, count, flip, out, step))
CT_SORT_KEY_WIDE_TYPES(CT_SORT_VALUES_LOOP_X, _)

#define CT_SORT_LANE_X(A, SFX, T, C, K, ID)                                                  \
  static int64_t* ct_sort_lane_##SFX(const char* x, int64_t step, int64_t n, int descending, \
                                     void* slot) {                                           \
    const int64_t kb = (n * (int64_t)sizeof(K) + 63) / 64 * 64;                              \
    K* keys = (K*)slot;                                                                      \
    K* keys2 = (K*)((char*)slot + kb);                                                       \
    int64_t* idx = (int64_t*)((char*)slot + 2 * kb);                                         \
    int64_t* idx2 = idx + (n * 8 + 63) / 64 * 8;                                             \
    const K flip = descending ? (K) ~(K)0 : (K)0;                                            \
    if (sizeof(K) == 4 && n > 1 && n <= CT_SORT_PAIRED_MAX && ct_sort_vector_available()) {  \
      /* each key above its index: sorted, ties keep their order */                          \
      uint64_t* both = (uint64_t*)(void*)idx;                                                \
      ct_keys_##SFX(x, step, n, flip, keys);                                                 \
      for (int64_t i = 0; i < n; ++i) both[i] = (uint64_t)keys[i] << 32 | (uint64_t)i;       \
      ct_sort_vector_u64(both, (uint64_t*)(void*)idx2, n);                                   \
      for (int64_t i = 0; i < n; ++i) idx[i] = (int64_t)(both[i] & UINT32_MAX);              \
      return idx;                                                                            \
    }                                                                                        \
    for (int64_t i = 0; i < n; ++i) {                                                        \
      T v;                                                                                   \
      memcpy(&v, x + i * step, sizeof v);                                                    \
      keys[i] = (K)(ct_uq_key_##SFX(v) ^ flip);                                              \
      idx[i] = i;                                                                            \
    }                                                                                        \
    return ct_sort_pairs_##K(keys, idx, keys2, idx2, n);                                     \
  }
CT_SORT_KEY_TYPES(CT_SORT_LANE_X, _)

/* sort of one lane of a 4- or 8-byte dtype into out (step out_step): the keys alone are sorted,
 * then mapped back to values. Keys that stand for several bit patterns (a float's -0.0 and 0.0,
 * its NaNs) are written back from x in their order there, which a stable sort keeps; for
 * integers every key is one value. */
typedef void (*ct_sort_values_fn)(const char* x, int64_t step, int64_t n, int descending,
                                  void* slot, char* out, int64_t out_step, int threads);

/* The values of x[begin, end) (step bytes apart) whose keys (xor flip) are the zero key or the
 * NaN key, copied to out from positions *at_zero and *at_nan on, in input order: the keys make
 * -0.0 and 0.0 one key and every NaN another, so a sorted run of them takes its bits from x. */
#define CT_SORT_PUT_ALIKE_X(A, SFX, T, C, K, ID)                                               \
  static void ct_sort_put_alike_##SFX(const char* x, int64_t step, int64_t begin, int64_t end, \
                                      K flip, char* out, int64_t out_step, int64_t* at_zero,   \
                                      int64_t* at_nan) {                                       \
    const K zero = (K)(ct_uq_key_##SFX((T)0) ^ flip), nan = (K)(~(K)0 ^ flip);                 \
    for (int64_t i = begin; i < end; ++i) {                                                    \
      T v;                                                                                     \
      memcpy(&v, x + i * step, sizeof v);                                                      \
      const K k = (K)(ct_uq_key_##SFX(v) ^ flip);                                              \
      if (k == zero) memcpy(out + ((*at_zero)++) * out_step, &v, sizeof v);                    \
      if (k == nan) memcpy(out + ((*at_nan)++) * out_step, &v, sizeof v);                      \
    }                                                                                          \
  }
CT_SORT_KEY_WIDE_TYPES(CT_SORT_PUT_ALIKE_X, _)

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

/* The bucket sort of a lane of n >= CT_BUCKET_MIN_LANE values (see there). The buckets go to
 * out itself where it is contiguous, aligned and apart from x (no workspace pages to touch),
 * else to keys; a bucket sorts in its thread's second buffer, or where larger than that (many
 * keys of one digit) in keys2 at its own place. The first pass's tallies place -0.0/0.0 and the
 * NaNs for their rewrite from x, each thread its own part of x. */
#define CT_SORT_BUCKETS_X(A, SFX, T, C, K, ID)                                                     \
  static void ct_sort_buckets_##SFX(const char* x, int64_t step, int64_t n, int descending,        \
                                    void* slot, char* out, int64_t out_step, int threads) {        \
    const int64_t kb = (n * (int64_t)sizeof(K) + 63) / 64 * 64;                                    \
    char* shared = (char*)slot + 2 * kb;                                                           \
    uint16_t* bucket_of = (uint16_t*)shared;                                                       \
    int64_t* start = (int64_t*)(shared + CT_BUCKET_BINS * 2);                                      \
    char* per_thread = shared + CT_BUCKET_SHARED_BYTES;                                            \
    const uintptr_t x_lo = (uintptr_t)(step < 0 ? x + (n - 1) * step : x);                         \
    const uintptr_t x_hi = (uintptr_t)(step < 0 ? x : x + (n - 1) * step) + sizeof(T);             \
    K* keys = (K*)slot;                                                                            \
    if (out_step == (int64_t)sizeof(K) && (uintptr_t)out % sizeof(K) == 0 &&                       \
        ((uintptr_t)out + (uintptr_t)n * sizeof(K) <= x_lo || (uintptr_t)out >= x_hi)) {           \
      keys = (K*)out;                                                                              \
    }                                                                                              \
    K* keys2 = (K*)((char*)slot + kb);                                                             \
    const K flip = descending ? (K) ~(K)0 : (K)0;                                                  \
    const bool is_float = (T)0.5 != (T)0;                                                          \
    const K zero = (K)(ct_uq_key_##SFX((T)0) ^ flip), nan = (K)(~(K)0 ^ flip);                     \
    T v0;                                                                                          \
    memcpy(&v0, x, sizeof v0);                                                                     \
    const K k0 = (K)(ct_uq_key_##SFX(v0) ^ flip);                                                  \
    const int top = 8 * (int)sizeof(K) - CT_BUCKET_PREFIX;                                         \
    K diff = 0;                                                                                    \
    int64_t zeros = 0, nans = 0, below = 0, buckets = 0, cap = CT_BUCKET_BYTES / sizeof(K);        \
    int shift = top;                                                                               \
    _Pragma("omp parallel num_threads(threads)") {                                                 \
      int t = 0, nt = 1;                                                                           \
      CT_SORT_THREAD_ID(t, nt);                                                                    \
      const int64_t begin = n * t / nt, end = n * (t + 1) / nt;                                    \
      char* mine = ct_bucket_thread(per_thread, t);                                                \
      int64_t* hist = (int64_t*)mine;                                                              \
      int64_t* pos = (int64_t*)(mine + CT_BUCKET_POS_AT);                                          \
      int64_t* counts = (int64_t*)(mine + CT_BUCKET_COUNTS_AT);                                    \
      K* tmp = (K*)(mine + CT_BUCKET_TMP_AT);                                                      \
      int64_t* tally = (int64_t*)(mine + CT_BUCKET_TALLY_AT);                                      \
      K block[CT_BUCKET_BLOCK];                                                                    \
      memset(hist, 0, CT_BUCKET_BINS * sizeof(int64_t));                                           \
      K d = 0;                                                                                     \
      int64_t z = 0, q = 0, lt = 0;                                                                \
      for (int64_t i = begin; i < end; i += CT_BUCKET_BLOCK) {                                     \
        const int64_t len = end - i < CT_BUCKET_BLOCK ? end - i : CT_BUCKET_BLOCK;                 \
        ct_keys_##SFX(x + i * step, step, len, flip, block);                                       \
        for (int64_t j = 0; j < len; ++j) ++hist[block[j] >> top];                                 \
        for (int64_t j = 0; j < len; ++j) d |= block[j] ^ k0;                                      \
        if (is_float) {                                                                            \
          for (int64_t j = 0; j < len; ++j) {                                                      \
            z += block[j] == zero;                                                                 \
            q += block[j] == nan;                                                                  \
            lt += block[j] < zero;                                                                 \
          }                                                                                        \
        }                                                                                          \
      }                                                                                            \
      memcpy(tally, &d, sizeof d);                                                                 \
      tally[1] = z;                                                                                \
      tally[2] = q;                                                                                \
      tally[3] = lt;                                                                               \
      _Pragma("omp barrier") _Pragma("omp single") {                                               \
        for (int u = 0; u < nt; ++u) {                                                             \
          const int64_t* tu = ct_bucket_tally(per_thread, u);                                      \
          K du;                                                                                    \
          memcpy(&du, tu, sizeof du);                                                              \
          diff |= du;                                                                              \
          zeros += tu[1];                                                                          \
          nans += tu[2];                                                                           \
          below += tu[3];                                                                          \
        }                                                                                          \
        /* keys alike in their top bits: split on the bits where they differ instead */            \
        if (diff != 0 && CT_KEY_BITS(diff) <= top + CT_BUCKET_PREFIX - 4) {                        \
          shift = CT_KEY_BITS(diff) > CT_BUCKET_PREFIX ? CT_KEY_BITS(diff) - CT_BUCKET_PREFIX : 0; \
        }                                                                                          \
      }                                                                                            \
      if (diff == 0) { /* all keys equal */                                                        \
        const T v = ct_uq_value_##SFX((K)(k0 ^ flip));                                             \
        _Pragma("omp for schedule(static)") for (int64_t i = 0; i < n; ++i) {                      \
          memcpy(out + i * out_step, &v, sizeof v);                                                \
        }                                                                                          \
      } else {                                                                                     \
        if (shift != top) {                                                                        \
          memset(hist, 0, CT_BUCKET_BINS * sizeof(int64_t));                                       \
          for (int64_t i = begin; i < end; i += CT_BUCKET_BLOCK) {                                 \
            const int64_t len = end - i < CT_BUCKET_BLOCK ? end - i : CT_BUCKET_BLOCK;             \
            ct_keys_##SFX(x + i * step, step, len, flip, block);                                   \
            for (int64_t j = 0; j < len; ++j) ++hist[(block[j] >> shift) & (CT_BUCKET_BINS - 1)];  \
          }                                                                                        \
          _Pragma("omp barrier")                                                                   \
        }                                                                                          \
        _Pragma("omp single") buckets =                                                            \
            ct_bucket_layout(per_thread, nt, n, bucket_of, start, &cap);                           \
        for (int64_t i = begin; i < end; i += CT_BUCKET_BLOCK) {                                   \
          const int64_t len = end - i < CT_BUCKET_BLOCK ? end - i : CT_BUCKET_BLOCK;               \
          ct_keys_##SFX(x + i * step, step, len, flip, block);                                     \
          for (int64_t j = 0; j < len; ++j) {                                                      \
            const K k = block[j];                                                                  \
            keys[pos[bucket_of[(k >> shift) & (CT_BUCKET_BINS - 1)]]++] = k;                       \
          }                                                                                        \
        }                                                                                          \
        _Pragma("omp barrier");                                                                    \
        _Pragma("omp for schedule(dynamic, 1)") for (int64_t b = 0; b < buckets; ++b) {            \
          const int64_t s = start[b], m = start[b + 1] - s;                                        \
          const K* sorted = ct_sort_bucket_##K(                                                    \
              keys + s, m <= (int64_t)(CT_BUCKET_BYTES / sizeof(K)) ? tmp : keys2 + s, m, counts); \
          ct_values_##SFX(sorted, m, flip, out + s * out_step, out_step);                          \
        }                                                                                          \
      }                                                                                            \
      if (is_float && (zeros > 0 || nans > 0)) {                                                   \
        int64_t at_zero = below, at_nan = descending ? 0 : n - nans;                               \
        for (int u = 0; u < t; ++u) {                                                              \
          const int64_t* tu = ct_bucket_tally(per_thread, u);                                      \
          at_zero += tu[1];                                                                        \
          at_nan += tu[2];                                                                         \
        }                                                                                          \
        ct_sort_put_alike_##SFX(x, step, begin, end, flip, out, out_step, &at_zero, &at_nan);      \
      }                                                                                            \
    }                                                                                              \
  }
CT_SORT_KEY_WIDE_TYPES(CT_SORT_BUCKETS_X, _)

#define CT_SORT_VALUES_X(A, SFX, T, C, K, ID)                                                   \
  static void ct_sort_values_##SFX(const char* x, int64_t step, int64_t n, int descending,      \
                                   void* slot, char* out, int64_t out_step, int threads) {      \
    if (n >= CT_BUCKET_MIN_LANE) {                                                              \
      ct_sort_buckets_##SFX(x, step, n, descending, slot, out, out_step, threads);              \
      return;                                                                                   \
    }                                                                                           \
    const int64_t kb = (n * (int64_t)sizeof(K) + 63) / 64 * 64;                                 \
    K* keys = (K*)slot;                                                                         \
    K* keys2 = (K*)((char*)slot + kb);                                                          \
    int64_t* hist = (int64_t*)((char*)slot + 2 * kb);                                           \
    const K flip = descending ? (K) ~(K)0 : (K)0;                                               \
    const K* sorted = keys;                                                                     \
    if (ct_sort_values_by_vector((int64_t)sizeof(K), n)) {                                      \
      ct_keys_##SFX(x, step, n, flip, keys);                                                    \
      if (sizeof(K) == 4) {                                                                     \
        ct_sort_vector_u32((uint32_t*)(void*)keys, (uint32_t*)(void*)keys2, n);                 \
      } else {                                                                                  \
        ct_sort_vector_u64((uint64_t*)(void*)keys, (uint64_t*)(void*)keys2, n);                 \
      }                                                                                         \
    } else {                                                                                    \
      const int passes = (int)((8 * sizeof(K) + CT_RADIX_BITS - 1) / CT_RADIX_BITS);            \
      memset(hist, 0, (size_t)passes * CT_RADIX_BINS * sizeof(int64_t));                        \
      for (int64_t i = 0; i < n; ++i) {                                                         \
        T v;                                                                                    \
        memcpy(&v, x + i * step, sizeof v);                                                     \
        const K k = (K)(ct_uq_key_##SFX(v) ^ flip);                                             \
        keys[i] = k;                                                                            \
        for (int pass = 0; pass < passes; ++pass) {                                             \
          ++hist[pass * CT_RADIX_BINS + ((k >> (pass * CT_RADIX_BITS)) & (CT_RADIX_BINS - 1))]; \
        }                                                                                       \
      }                                                                                         \
      sorted = ct_sort_keys_##K(keys, keys2, n, hist);                                          \
    }                                                                                           \
    ct_values_##SFX(sorted, n, flip, out, out_step);                                            \
    if ((T)0.5 == (T)0) return; /* an integer dtype */                                          \
    const K zero = (K)(ct_uq_key_##SFX((T)0) ^ flip), nan = (K)(~(K)0 ^ flip);                  \
    int64_t at_zero = ct_sort_lower_bound_##K(sorted, n, zero);                                 \
    int64_t at_nan = ct_sort_lower_bound_##K(sorted, n, nan);                                   \
    const bool zeros = at_zero < n && sorted[at_zero] == zero;                                  \
    const bool nans = at_nan < n && sorted[at_nan] == nan;                                      \
    if (!zeros && !nans) return;                                                                \
    ct_sort_put_alike_##SFX(x, step, 0, n, flip, out, out_step, &at_zero, &at_nan);             \
  }
CT_SORT_KEY_WIDE_TYPES(CT_SORT_VALUES_X, _)
/* The values-only sort of each dtype: 1- and 2-byte dtypes have none. */
#define CT_SORT_VALUES_WIDE_X(A, SFX, T, C, K, ID) \
  static const ct_sort_values_fn ct_sort_values_fn_##SFX = ct_sort_values_##SFX;
#define CT_SORT_VALUES_SMALL_X(A, SFX, T, C, K, ID) \
  static const ct_sort_values_fn ct_sort_values_fn_##SFX = NULL;
CT_SORT_KEY_WIDE_TYPES(CT_SORT_VALUES_WIDE_X, _)
CT_SORT_KEY_SMALL_TYPES(CT_SORT_VALUES_SMALL_X, _)

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
  return (cap * keysize + 63) / 64 * 64 + cap * 8;
}

/* Slot bytes the one-pass topk needs: every thread's candidates, then all threads' k candidates
 * together (keys, indices) and a second buffer of k of each for the final sort. */
static int64_t ct_topk_bytes(int64_t k, int64_t keysize, int threads) {
  const int64_t merged = (threads * k * keysize + 63) / 64 * 64 + threads * k * 8;
  const int64_t second = (k * keysize + 63) / 64 * 64 + k * 8;
  return threads * ct_topk_thread_bytes(k, keysize) + merged + second;
}

/* ct_topk_find_<SFX>: the first i in [i, end) whose key (xor flip) is above tau, else end. */
#define CT_TOPK_X(A, SFX, T, C, K, ID)                                                             \
  static CT_CPU_ISA_BODY int64_t ct_topk_find_##SFX##_body(const char* x, int64_t step, int64_t i, \
                                                           int64_t end, K tau, K flip) {           \
    if (step == (int64_t)sizeof(T)) {                                                              \
      for (; i + CT_TOPK_BLOCK <= end; i += CT_TOPK_BLOCK) {                                       \
        int hit = 0;                                                                               \
        for (int j = 0; j < CT_TOPK_BLOCK; ++j) {                                                  \
          T v;                                                                                     \
          memcpy(&v, x + (i + j) * (int64_t)sizeof(T), sizeof v);                                  \
          hit |= (K)(ct_uq_key_##SFX(v) ^ flip) > tau;                                             \
        }                                                                                          \
        if (hit) break;                                                                            \
      }                                                                                            \
    }                                                                                              \
    for (; i < end; ++i) {                                                                         \
      T v;                                                                                         \
      memcpy(&v, x + i * step, sizeof v);                                                          \
      if ((K)(ct_uq_key_##SFX(v) ^ flip) > tau) return i;                                          \
    }                                                                                              \
    return end;                                                                                    \
  }                                                                                                \
  CT_CPU_ISA_VARIANTS(int64_t, ct_topk_find_##SFX,                                                 \
                      (const char* x, int64_t step, int64_t i, int64_t end, K tau, K flip),        \
                      (x, step, i, end, tau, flip))                                                \
  static void ct_topk_lane_##SFX(const char* x, int64_t step, int64_t n, int64_t k, int largest,   \
                                 void* slot, char* values, int64_t v_step, char* indices,          \
                                 int64_t i_step, int threads) {                                    \
    const K flip = largest ? (K)0 : (K) ~(K)0;                                                     \
    const int64_t cap = ct_topk_cap(k), tb = ct_topk_thread_bytes(k, sizeof(K));                   \
    /* bytes of cap keys, of threads * k keys, of k keys (rounded as in ct_topk_bytes) */          \
    const int64_t cap_kb = (cap * (int64_t)sizeof(K) + 63) / 64 * 64;                              \
    const int64_t all_kb = (threads * k * (int64_t)sizeof(K) + 63) / 64 * 64;                      \
    const int64_t k_kb = (k * (int64_t)sizeof(K) + 63) / 64 * 64;                                  \
    K* merged = (K*)((char*)slot + threads * tb);                                                  \
    int64_t* merged_idx = (int64_t*)((char*)merged + all_kb);                                      \
    K* second = (K*)(merged_idx + threads * k);                                                    \
    int64_t* second_idx = (int64_t*)((char*)second + k_kb);                                        \
    int64_t kept[CT_SORT_MAX_THREADS];                                                             \
    _Pragma("omp parallel num_threads(threads)") {                                                 \
      int t = 0, nt = 1;                                                                           \
      CT_SORT_THREAD_ID(t, nt);                                                                    \
      const int64_t begin = n * t / nt, end = n * (t + 1) / nt;                                    \
      K* s = (K*)((char*)slot + t * tb);                                                           \
      int64_t* idx = (int64_t*)((char*)s + cap_kb);                                                \
      int64_t m = 0, i = begin;                                                                    \
      K tau = 0;                                                                                   \
      /* the first cap keys all enter; after the first cut only keys above the k-th kept do (an    \
       * equal key comes after the k kept, so it loses the tie) */                                 \
      for (; i < end && m < cap; ++i) {                                                            \
        T v;                                                                                       \
        memcpy(&v, x + i * step, sizeof v);                                                        \
        s[m] = (K)(ct_uq_key_##SFX(v) ^ flip);                                                     \
        idx[m++] = i;                                                                              \
      }                                                                                            \
      if (m == cap) {                                                                              \
        tau = ct_topk_compact_##K(s, idx, m, k);                                                   \
        m = k;                                                                                     \
      }                                                                                            \
      for (;;) {                                                                                   \
        i = ct_topk_find_##SFX(x, step, i, end, tau, flip);                                        \
        if (i >= end) break;                                                                       \
        T v;                                                                                       \
        memcpy(&v, x + i * step, sizeof v);                                                        \
        s[m] = (K)(ct_uq_key_##SFX(v) ^ flip);                                                     \
        idx[m++] = i++;                                                                            \
        if (m == cap) {                                                                            \
          tau = ct_topk_compact_##K(s, idx, m, k);                                                 \
          m = k;                                                                                   \
        }                                                                                          \
      }                                                                                            \
      if (m > k) {                                                                                 \
        ct_topk_compact_##K(s, idx, m, k);                                                         \
        m = k;                                                                                     \
      }                                                                                            \
      kept[t] = m;                                                                                 \
      _Pragma("omp barrier");                                                                      \
      /* thread 0: the threads' candidates in index order, cut to k, sorted */                     \
      if (t == 0) {                                                                                \
        int64_t total = 0;                                                                         \
        for (int u = 0; u < nt; ++u) {                                                             \
          const K* su = (const K*)((char*)slot + u * tb);                                          \
          const int64_t* iu = (const int64_t*)((const char*)su + cap_kb);                          \
          memcpy(merged + total, su, (size_t)kept[u] * sizeof(K));                                 \
          memcpy(merged_idx + total, iu, (size_t)kept[u] * sizeof(int64_t));                       \
          total += kept[u];                                                                        \
        }                                                                                          \
        if (total > k) ct_topk_compact_##K(merged, merged_idx, total, k);                          \
        /* ascending complements: the largest first, equal keys in index order (stable) */         \
        for (int64_t j = 0; j < k; ++j) merged[j] = (K)~merged[j];                                 \
        const int64_t* order = ct_sort_pairs_##K(merged, merged_idx, second, second_idx, k);       \
        for (int64_t j = 0; j < k; ++j) {                                                          \
          memcpy(values + j * v_step, x + order[j] * step, sizeof(T));                             \
          memcpy(indices + j * i_step, &order[j], sizeof(int64_t));                                \
        }                                                                                          \
      }                                                                                            \
    }                                                                                              \
  }
CT_SORT_KEY_TYPES(CT_TOPK_X, _)

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
  return (k * keysize + 63) / 64 * 64;
}

typedef void (*ct_topk_small_fn)(const char* x, int64_t step, int64_t n, int64_t k, int largest,
                                 void* slot, char* values, int64_t v_step, char* indices,
                                 int64_t i_step);

#define CT_TOPK_SMALL_X(A, SFX, T, C, K, ID)                                                      \
  static void ct_topk_small_##SFX(const char* x, int64_t step, int64_t n, int64_t k, int largest, \
                                  void* slot, char* values, int64_t v_step, char* indices,        \
                                  int64_t i_step) {                                               \
    const K flip = largest ? (K)0 : (K) ~(K)0;                                                    \
    K* best = (K*)slot; /* descending; equal keys in index order */                               \
    int64_t* at = (int64_t*)((char*)slot + ct_topk_small_keys_bytes(k, (int64_t)sizeof(K)));      \
    int64_t kept = 0;                                                                             \
    for (int64_t i = 0;;) {                                                                       \
      if (kept == k) {                                                                            \
        i = ct_topk_find_##SFX(x, step, i, n, best[k - 1], flip);                                 \
        if (i >= n) break;                                                                        \
      } else if (i >= n) {                                                                        \
        break;                                                                                    \
      }                                                                                           \
      T v;                                                                                        \
      memcpy(&v, x + i * step, sizeof v);                                                         \
      const K key = (K)(ct_uq_key_##SFX(v) ^ flip);                                               \
      /* after every kept key not below it (those came first) */                                  \
      int64_t j = kept < k ? kept++ : k - 1;                                                      \
      for (; j > 0 && best[j - 1] < key; --j) {                                                   \
        best[j] = best[j - 1];                                                                    \
        at[j] = at[j - 1];                                                                        \
      }                                                                                           \
      best[j] = key;                                                                              \
      at[j] = i++;                                                                                \
    }                                                                                             \
    for (int64_t j = 0; j < k; ++j) {                                                             \
      memcpy(values + j * v_step, x + at[j] * step, sizeof(T));                                   \
      memcpy(indices + j * i_step, &at[j], sizeof(int64_t));                                      \
    }                                                                                             \
  }
CT_SORT_KEY_TYPES(CT_TOPK_SMALL_X, _)

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
      ct_topk_small_keys_bytes(k, job.itemsize) + k * 8 <= job.slot_bytes) {
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
    *bytes = (uint64_t)ct_sort_slots(lanes, n) *
             (uint64_t)ct_sort_slot_bytes(n, ct_dtype_size(x->dtype), threads);
  }
  return CT_OK;
}

#define CT_SORT_RUN_X(A, SFX, T, C, K, ID)                                                 \
  static int ct_cpu_sort_##SFX(const ct_kernel_call* call) {                               \
    const ct_tensor* x = call->inputs[0];                                                  \
    const int32_t axis = (int32_t)call->attrs[0].value.i;                                  \
    const int64_t n = x->shape[axis < 0 ? axis + x->ndim : axis];                          \
    return ct_sort_run(call, axis, (int)call->attrs[1].value.b, n, call->outputs[0], NULL, \
                       ct_sort_lane_##SFX, ct_sort_values_fn_##SFX, NULL, NULL);           \
  }                                                                                        \
  static int ct_cpu_argsort_##SFX(const ct_kernel_call* call) {                            \
    const ct_tensor* x = call->inputs[0];                                                  \
    const int32_t axis = (int32_t)call->attrs[0].value.i;                                  \
    const int64_t n = x->shape[axis < 0 ? axis + x->ndim : axis];                          \
    return ct_sort_run(call, axis, (int)call->attrs[1].value.b, n, NULL, call->outputs[0], \
                       ct_sort_lane_##SFX, NULL, NULL, NULL);                              \
  }                                                                                        \
  static int ct_cpu_topk_##SFX(const ct_kernel_call* call) {                               \
    return ct_sort_run(call, (int32_t)call->attrs[1].value.i, (int)call->attrs[2].value.b, \
                       call->attrs[0].value.i, call->outputs[0], call->outputs[1],         \
                       ct_sort_lane_##SFX, NULL, ct_topk_lane_##SFX, ct_topk_small_##SFX); \
  }
CT_SORT_KEY_TYPES(CT_SORT_RUN_X, _)

/* ----- searchsorted ----- */

typedef struct ct_search_extra {
  const char* x1;
  int64_t step, n;
  int right;
} ct_search_extra;

#define CT_SEARCH_X(A, SFX, T, C, K, ID)                                                       \
  static void ct_cpu_searchsorted_loop_##SFX(char** data, const int64_t* steps, int64_t count, \
                                             const void* extra) {                              \
    const ct_search_extra* e = extra;                                                          \
    for (int64_t j = 0; j < count; ++j) {                                                      \
      T v;                                                                                     \
      memcpy(&v, data[0] + j * steps[0], sizeof v);                                            \
      const K key = ct_uq_key_##SFX(v);                                                        \
      int64_t lo = 0, hi = e->n;                                                               \
      while (lo < hi) {                                                                        \
        const int64_t mid = lo + (hi - lo) / 2;                                                \
        T m;                                                                                   \
        memcpy(&m, e->x1 + mid * e->step, sizeof m);                                           \
        const K mk = ct_uq_key_##SFX(m);                                                       \
        if (e->right ? mk <= key : mk < key) {                                                 \
          lo = mid + 1;                                                                        \
        } else {                                                                               \
          hi = mid;                                                                            \
        }                                                                                      \
      }                                                                                        \
      memcpy(data[1] + j * steps[1], &lo, sizeof lo);                                          \
    }                                                                                          \
  }                                                                                            \
  static int ct_cpu_searchsorted_##SFX(const ct_kernel_call* call) {                           \
    const ct_tensor* x1 = call->inputs[0];                                                     \
    ct_search_extra e = {ct_tensor_base(x1), ct_tensor_stride(x1, 0) * (int64_t)sizeof(T),     \
                         x1->shape[0], strcmp(call->attrs[0].value.s, "right") == 0};          \
    const ct_tensor* operands[2] = {call->inputs[1], call->outputs[0]};                        \
    ct_cpu_iterate(2, operands, ct_cpu_searchsorted_loop_##SFX, &e);                           \
    return CT_OK;                                                                              \
  }
CT_SORT_KEY_TYPES(CT_SEARCH_X, _)

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

#define CT_UQM_X(A, SFX, T, C, K, ID)                                                              \
  static void ct_uqm_keys_##SFX(char** data, const int64_t* steps, int64_t n, const void* extra) { \
    (void)extra;                                                                                   \
    for (int64_t i = 0; i < n; ++i) {                                                              \
      T v;                                                                                         \
      memcpy(&v, data[0] + i * steps[0], sizeof v);                                                \
      const K key = ct_uq_key_##SFX(v);                                                            \
      memcpy(data[1] + i * steps[1], &key, sizeof key);                                            \
    }                                                                                              \
  }                                                                                                \
  static int ct_cpu_unique_multi_##SFX(const ct_kernel_call* call) {                               \
    const ct_tensor* x = call->inputs[0];                                                          \
    const int64_t n = ct_tensor_numel(x);                                                          \
    const int64_t kb = (n * (int64_t)sizeof(K) + 63) / 64 * 64;                                    \
    K* keys = (K*)call->workspace;                                                                 \
    K* keys2 = (K*)((char*)call->workspace + kb);                                                  \
    int64_t* idx = (int64_t*)((char*)call->workspace + 2 * kb);                                    \
    int64_t* idx2 = idx + (n * 8 + 63) / 64 * 8;                                                   \
    const int64_t* order = idx;                                                                    \
    const K* sorted = keys;                                                                        \
    if (n > 0) {                                                                                   \
      if (x->ndim == 0) {                                                                          \
        T v;                                                                                       \
        memcpy(&v, ct_tensor_base(x), sizeof v);                                                   \
        keys[0] = ct_uq_key_##SFX(v);                                                              \
      } else { /* keys in row-major order: operand 1 is the compact workspace */                   \
        int64_t strides[2 * CT_MAX_NDIM];                                                          \
        int64_t stride = (int64_t)sizeof(K);                                                       \
        for (int32_t d = x->ndim - 1; d >= 0; --d) {                                               \
          strides[d] = ct_tensor_stride(x, d) * (int64_t)sizeof(T);                                \
          strides[x->ndim + d] = stride;                                                           \
          stride *= x->shape[d];                                                                   \
        }                                                                                          \
        char* bases[2] = {ct_tensor_base(x), (char*)keys};                                         \
        ct_cpu_iterate_raw(2, bases, strides, x->ndim, x->shape, ct_uqm_keys_##SFX, NULL);         \
      }                                                                                            \
      for (int64_t i = 0; i < n; ++i) idx[i] = i;                                                  \
      order = ct_sort_pairs_##K(keys, idx, keys2, idx2, n);                                        \
      sorted = order == idx ? keys : keys2;                                                        \
    }                                                                                              \
    int64_t groups = n > 0 ? 1 : 0;                                                                \
    for (int64_t i = 1; i < n; ++i) groups += sorted[i] != sorted[i - 1];                          \
    void* data;                                                                                    \
    int64_t *first, *inverse, *counts;                                                             \
    const int status = ct_uqm_outputs(call, groups, &data, &first, &inverse, &counts);             \
    if (status != CT_OK) return status;                                                            \
    T* values = data;                                                                              \
    int64_t g = -1;                                                                                \
    for (int64_t i = 0; i < n; ++i) {                                                              \
      if (i == 0 || sorted[i] != sorted[i - 1]) { /* a new value: its first occurrence */          \
        ++g;                                                                                       \
        values[g] = ct_uq_value_##SFX(sorted[i]);                                                  \
        if (first) first[g] = order[i];                                                            \
        if (counts) counts[g] = 0;                                                                 \
      }                                                                                            \
      if (counts) ++counts[g];                                                                     \
      if (inverse) inverse[order[i]] = g;                                                          \
    }                                                                                              \
    return CT_OK;                                                                                  \
  }
CT_SORT_KEY_TYPES(CT_UQM_X, _)

static int ct_uqm_workspace(const ct_kernel_call* call, uint64_t* bytes, uint64_t* alignment) {
  const ct_tensor* x = call->inputs[0];
  *alignment = 64;
  *bytes = 64 + (uint64_t)ct_sort_slot_bytes(ct_tensor_numel(x), ct_dtype_size(x->dtype), 1);
  return CT_OK;
}

/* ----- registration ----- */

#define CT_SORT_REG_X(A, SFX, T, C, K, ID)                                                           \
  {"sort", 2, {ID, ID}, ct_cpu_sort_##SFX, ct_sort_workspace, NULL},                                 \
      {"argsort", 2, {ID, CT_DT_I64}, ct_cpu_argsort_##SFX, ct_sort_workspace, NULL},                \
      {"topk", 3, {ID, ID, CT_DT_I64}, ct_cpu_topk_##SFX, ct_sort_workspace, NULL},                  \
      {"searchsorted", 3, {ID, ID, CT_DT_I64}, ct_cpu_searchsorted_##SFX, NULL, NULL},               \
      {"unique_counts", 3, {ID, ID, CT_DT_I64}, ct_cpu_unique_multi_##SFX, ct_uqm_workspace, NULL},  \
      {"unique_inverse", 3, {ID, ID, CT_DT_I64}, ct_cpu_unique_multi_##SFX, ct_uqm_workspace, NULL}, \
      {"unique_all",     5,   {ID, ID, CT_DT_I64, CT_DT_I64, CT_DT_I64}, ct_cpu_unique_multi_##SFX,  \
       ct_uqm_workspace, NULL},

static const ct_cpu_kernel ct_cpu_sort_kernels[] = {CT_SORT_KEY_TYPES(CT_SORT_REG_X, _)};

int ct_cpu_register_sort(void) {
  return ct_cpu_register_all(ct_cpu_sort_kernels, CT_CPU_KERNEL_COUNT(ct_cpu_sort_kernels));
}
