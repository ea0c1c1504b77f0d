/* stream_store.h - non-temporal stores for outputs too large to stay in cache.
 *
 * A thread whose share of an op's output is at least CT_STREAM_STORE_BYTES (far larger than a
 * core's L2 and a good part of a shared L3) writes it with non-temporal stores: the lines would
 * not stay in cache for the next op anyway, and streaming them saves the read for ownership of
 * every line (a third of the traffic of a one-input map, a quarter of a two-input one). */
#ifndef CTENSOR_CPU_STREAM_STORE_H_
#define CTENSOR_CPU_STREAM_STORE_H_

#include <stdint.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#define CT_STREAM_STORES 1
#endif

#define CT_STREAM_STORE_BYTES ((int64_t)8 << 20)
/* Element-wise loops stream only runs (one loop call's output) of at least this many bytes, such
 * as the 16 KB rows of a (4096, 4096) + (4096,) add. Each run's first and last partial lines are
 * written with plain stores (CT_STREAM_LINE_BYTES), so the line two runs share is never half
 * streamed. */
#define CT_STREAM_MIN_RUN_BYTES ((int64_t)4 << 10)

/* Whether a thread writing output_bytes of one op should stream them. */
static inline int ct_stream_worth(int64_t output_bytes) {
  return output_bytes >= CT_STREAM_STORE_BYTES;
}

/* Streamed loops write whole cache lines only: a line written partly by non-temporal stores
 * and partly by plain ones (or by two calls) costs a partial write and a read. */
#define CT_STREAM_LINE_BYTES 64

/* Bytes a streamed loop computes at a time into a buffer in L1 before writing them out, in the
 * generic copies of the loops and with 16-byte stores; the AVX2 and AVX-512 copies stream a line
 * at a time from registers (ct_stream_line_wide). */
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

/* How a thread streams its output (ct_cpu_stream_output): not at all, 16 bytes a store (SSE2),
 * or 32 bytes a store (AVX: more bandwidth than 16-byte stores when the stores alternate with
 * computing the next block). */
enum { CT_STREAM_OFF = 0, CT_STREAM_NARROW = 1, CT_STREAM_WIDE = 2 };

#if defined(CT_STREAM_STORES) && defined(__GNUC__) && defined(__x86_64__) && \
    !defined(CT_NO_ISA_VARIANTS)
#include <immintrin.h>
#define CT_STREAM_WIDE_STORES 1
/* One 64-byte line from src (64-byte aligned) to dst (on a line boundary), 32 bytes a store.
 * Inlined into the AVX2 and AVX-512 copies of a loop (CT_CPU_ISA_LOOP_WIDE), where GCC keeps a
 * line computed into a local buffer in registers and stores it from there. */
__attribute__((target("avx"), always_inline)) static inline void ct_stream_line_wide(
    void* dst, const void* src) {
  _mm256_stream_ps((float*)dst, _mm256_load_ps((const float*)src));
  _mm256_stream_ps((float*)dst + 8, _mm256_load_ps((const float*)src + 8));
}
/* ct_stream_copy's 32-byte stores, called only where the CPU has AVX2 (CT_STREAM_WIDE), line by
 * line. GCC keeps it out of line (the loops that call it are compiled for several targets): one
 * call per block of CT_STREAM_BLOCK_BYTES. */
__attribute__((target("avx"))) static inline void ct_stream_copy_wide(void* dst, const void* src,
                                                                      int64_t bytes) {
  for (int64_t b = 0; b < bytes; b += CT_STREAM_LINE_BYTES) {
    ct_stream_line_wide((char*)dst + b, (const char*)src + b);
  }
}
#endif

/* The widest streaming this build and CPU (ct_cpu_isa()) support. */
static inline int ct_stream_mode(int cpu_has_avx2) {
#ifdef CT_STREAM_WIDE_STORES
  if (cpu_has_avx2) return CT_STREAM_WIDE;
#else
  (void)cpu_has_avx2;
#endif
#ifdef CT_STREAM_STORES
  return CT_STREAM_NARROW;
#else
  return CT_STREAM_OFF;
#endif
}

/* Copies `bytes` (a multiple of CT_STREAM_LINE_BYTES) from src (CT_STREAM_LINE_BYTES-aligned)
 * to dst (on a cache-line boundary) with non-temporal stores of the width `mode` gives;
 * ct_stream_fence orders them before the stores that follow. */
static inline void ct_stream_copy(void* dst, const void* src, int64_t bytes, int mode) {
#ifdef CT_STREAM_WIDE_STORES
  if (mode == CT_STREAM_WIDE) {
    ct_stream_copy_wide(dst, src, bytes);
    return;
  }
#endif
#ifdef CT_STREAM_STORES
  (void)mode;
  for (int64_t b = 0; b < bytes; b += 16) {
    __m128i v;
    memcpy(&v, (const char*)src + b, sizeof v);
    _mm_stream_si128((__m128i*)(void*)((char*)dst + b), v);
  }
#else
  (void)mode;
  memcpy(dst, src, (size_t)bytes);
#endif
}
static inline void ct_stream_fence(void) {
#ifdef CT_STREAM_STORES
  _mm_sfence();
#endif
}

#endif /* CTENSOR_CPU_STREAM_STORE_H_ */
