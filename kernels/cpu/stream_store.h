/* stream_store.h - non-temporal stores for outputs too large to stay in cache.
 *
 * A thread whose share of an op's output is at least CT_STREAM_STORE_BYTES (far larger than a
 * core's L2 and a good part of a shared L3) writes it with non-temporal stores: the lines would
 * not stay in cache for the next op anyway, and streaming them saves the read for ownership of
 * every line (a third of the traffic of a one-input map, a quarter of a two-input one). Measured
 * on Zen 3: exp of 2^23 floats on one core 13.4 -> 15 GB/s. */
#ifndef CTENSOR_CPU_STREAM_STORE_H_
#define CTENSOR_CPU_STREAM_STORE_H_

#include <stdint.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#define CT_STREAM_STORES 1
#endif

#define CT_STREAM_STORE_BYTES ((int64_t)8 << 20)
/* Element-wise loops stream only runs (one loop call's output) of at least this many bytes: with
 * shorter ones, such as the 16 KB rows of a (4096, 4096) + (4096,) add, streaming measured slower
 * than plain stores on a 2-core Zen (0.66-0.77 of the STREAM copy against 0.85-0.90; the lines
 * that straddle two runs, written by two calls, are the likely cause). */
#define CT_STREAM_MIN_RUN_BYTES ((int64_t)64 << 10)

/* Whether a thread writing output_bytes of one op should stream them. */
static inline int ct_stream_worth(int64_t output_bytes) {
  return output_bytes >= CT_STREAM_STORE_BYTES;
}

/* Bytes a streamed loop computes at a time into a buffer in L1 before writing them out. */
#define CT_STREAM_BLOCK_BYTES 1024

/* Whether dst can take ct_stream_copy (a 16-byte boundary) on this target. */
static inline int ct_stream_aligned(const void* dst) {
#ifdef CT_STREAM_STORES
  return ((uintptr_t)dst & 15u) == 0;
#else
  (void)dst;
  return 0;
#endif
}

/* Copies `bytes` (a multiple of 16) from src to dst (16-byte aligned, ct_stream_aligned) with
 * non-temporal stores; ct_stream_fence orders them before the stores that follow. */
static inline void ct_stream_copy(void* dst, const void* src, int64_t bytes) {
#ifdef CT_STREAM_STORES
  for (int64_t b = 0; b < bytes; b += 16) {
    __m128i v;
    memcpy(&v, (const char*)src + b, sizeof v);
    _mm_stream_si128((__m128i*)(void*)((char*)dst + b), v);
  }
#else
  memcpy(dst, src, (size_t)bytes);
#endif
}
static inline void ct_stream_fence(void) {
#ifdef CT_STREAM_STORES
  _mm_sfence();
#endif
}

#endif /* CTENSOR_CPU_STREAM_STORE_H_ */
