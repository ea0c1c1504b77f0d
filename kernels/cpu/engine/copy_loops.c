/* copy_loops.c - the engine's copy loops: dst = src per element size (8 to 128 bits), which
 * every op that only moves elements registers for each dtype of that size (copy_loops.h). */
#include <string.h>

#include "engine/copy_loops.h"
#include "engine/elementwise_loops.h" /* CT_AT */

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
    } else if (ds == w && ss == 2 * w) { /* a constant step, which compilers vectorise */      \
      word* d = (word*)dst;                                                                    \
      for (int64_t i = 0; i < n; ++i) d[i] = ((const word*)src)[2 * i];                        \
    } else if (ds == w) {                                                                      \
      word* d = (word*)dst;                                                                    \
      for (int64_t i = 0; i < n; ++i) d[i] = CT_AT(const word, src, i, ss);                    \
    } else {                                                                                   \
      for (int64_t i = 0; i < n; ++i) CT_AT(word, dst, i, ds) = CT_AT(const word, src, i, ss); \
    }                                                                                          \
  }                                                                                            \
  const ct_cpu_loop_entry ct_cpu_copy_##BITS##_entry = {ct_cpu_copy_##BITS, (BITS) / 8};

CT_COPY_LOOP(8, uint8_t)
CT_COPY_LOOP(16, uint16_t)
CT_COPY_LOOP(32, uint32_t)
CT_COPY_LOOP(64, uint64_t)
CT_COPY_LOOP(128, ct_cpu_word128)

const ct_cpu_loop_entry* ct_cpu_copy_entry_of_size(int64_t itemsize) {
  switch (itemsize) {
    case 1:
      return &ct_cpu_copy_8_entry;
    case 2:
      return &ct_cpu_copy_16_entry;
    case 4:
      return &ct_cpu_copy_32_entry;
    case 8:
      return &ct_cpu_copy_64_entry;
    case 16:
      return &ct_cpu_copy_128_entry;
    default:
      return NULL;
  }
}

const uint64_t ct_cpu_zero_word[2] = {0, 0};
