/* where_kernels.c - where(condition, x1, x2): a select by element size. */
#include "cpu_register.h"
#include "engine/elementwise_loops.h"

/* One loop per element size: where never looks at the values it moves. */
#define CT_WHERE_LOOP(BITS)                                                     \
  static void ct_cpu_where_##BITS(char** data, const int64_t* steps, int64_t n, \
                                  const void* extra) {                          \
    (void)extra;                                                                \
    typedef uint##BITS##_t word;                                                \
    const int64_t sc = steps[0], sa = steps[1], sb = steps[2], so = steps[3];   \
    const int64_t w = (int64_t)sizeof(word);                                    \
    if (sc == 1 && sa == w && sb == w && so == w) {                             \
      const uint8_t* c = (const uint8_t*)data[0];                               \
      const word *a = (const word*)data[1], *b = (const word*)data[2];          \
      word* o = (word*)data[3];                                                 \
      for (int64_t i = 0; i < n; ++i) o[i] = c[i] ? a[i] : b[i];                \
    } else {                                                                    \
      for (int64_t i = 0; i < n; ++i) {                                         \
        CT_AT(word, data[3], i, so) = CT_AT(uint8_t, data[0], i, sc)            \
                                          ? CT_AT(word, data[1], i, sa)         \
                                          : CT_AT(word, data[2], i, sb);        \
      }                                                                         \
    }                                                                           \
  }                                                                             \
  static const ct_cpu_loop_entry ct_cpu_where_##BITS##_entry = {ct_cpu_where_##BITS};

CT_WHERE_LOOP(8)
CT_WHERE_LOOP(16)
CT_WHERE_LOOP(32)
CT_WHERE_LOOP(64)

#define CT_WHERE_REG_X(A, SFX, T, C, U, ID)  \
  {"where",                                  \
   4,                                        \
   {CT_DT_BOOL, ID, ID, ID},                 \
   ct_cpu_elementwise_run,                   \
   NULL,                                     \
   sizeof(T) == 1   ? &ct_cpu_where_8_entry  \
   : sizeof(T) == 2 ? &ct_cpu_where_16_entry \
   : sizeof(T) == 4 ? &ct_cpu_where_32_entry \
                    : &ct_cpu_where_64_entry},

static const ct_cpu_kernel ct_cpu_where_kernels[] = {CT_CPU_ALL_TYPES(CT_WHERE_REG_X, _)};

int ct_cpu_register_where(void) {
  return ct_cpu_register_all(ct_cpu_where_kernels, CT_CPU_KERNEL_COUNT(ct_cpu_where_kernels));
}
